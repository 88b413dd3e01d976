// hoist-loads: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/hoist_loads_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --hoist-loads %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark

// K's vector, loaded in every trip from memory the kernel never writes, is loaded once before
// the loop, its mask joined with the loop's trip condition (a loop of no trips reads nothing).
// CHECK-LABEL: tt.func public @walk
// CHECK: %[[RUNS:.+]] = arith.cmpi slt, %arg3, %arg4 : i32
// CHECK: %[[SPLAT:.+]] = tt.splat %[[RUNS]] : i1 -> tensor<16xi1>
// CHECK: %[[MASK:.+]] = arith.andi %{{.+}}, %[[SPLAT]] : tensor<16xi1>
// CHECK: %[[K:.+]] = tt.load %{{.+}}, %[[MASK]], %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK: scf.for
// CHECK-NOT: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK: tt.expand_dims %[[K]]
// REMARK: applied: 1 loop-invariant load (of arg0) hoisted out of their loop, masked by its trip condition

module {
  tt.func public @walk(%K: !tt.ptr<f32>, %X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %lo: i32, %hi: i32, %n: i32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    scf.for %r = %lo to %hi step %c16_i32  : i32 {
      %k = tt.splat %n : i32 -> tensor<16xi32>
      %k_1 = arith.cmpi slt, %offs, %k : tensor<16xi32>
      %k_2 = tt.splat %K : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %k_3 = tt.addptr %k_2, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %k_4 = tt.load %k_3, %k_1, %cst_0 : tensor<16x!tt.ptr<f32>>
      %x = arith.muli %r, %c16_i32 : i32
      %x_5 = tt.addptr %X, %x : !tt.ptr<f32>, i32
      %x_6 = tt.expand_dims %offs {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_7 = arith.muli %x_6, %cst : tensor<16x1xi32>
      %x_8 = tt.splat %x_5 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %x_9 = tt.addptr %x_8, %x_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %x_10 = tt.expand_dims %offs {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_11 = tt.broadcast %x_9 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %x_12 = tt.broadcast %x_10 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_13 = tt.addptr %x_11, %x_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %x_14 = tt.load %x_13 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.addptr %Y, %x : !tt.ptr<f32>, i32
      %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %2 = tt.addptr %1, %x_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %x_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %5 = tt.expand_dims %k_4 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %6 = tt.broadcast %5 : tensor<1x16xf32> -> tensor<16x16xf32>
      %7 = arith.addf %x_14, %6 : tensor<16x16xf32>
      tt.store %4, %7 : tensor<16x16x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// K's address depends on the trip: it stays.
// CHECK-LABEL: tt.func public @negative_moves
// CHECK: scf.for
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load hoisted: its address or mask changes from trip to trip

module {
  tt.func public @negative_moves(%K: !tt.ptr<f32>, %X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %lo: i32, %hi: i32, %n: i32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    scf.for %r = %lo to %hi step %c16_i32  : i32 {
      %k = tt.splat %n : i32 -> tensor<16xi32>
      %k_1 = arith.cmpi slt, %offs, %k : tensor<16xi32>
      %k_2 = tt.addptr %K, %r : !tt.ptr<f32>, i32
      %k_3 = tt.splat %k_2 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %k_4 = tt.addptr %k_3, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %k_5 = tt.load %k_4, %k_1, %cst_0 : tensor<16x!tt.ptr<f32>>
      %x = arith.muli %r, %c16_i32 : i32
      %x_6 = tt.addptr %X, %x : !tt.ptr<f32>, i32
      %x_7 = tt.expand_dims %offs {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_8 = arith.muli %x_7, %cst : tensor<16x1xi32>
      %x_9 = tt.splat %x_6 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %x_10 = tt.addptr %x_9, %x_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %x_11 = tt.expand_dims %offs {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_12 = tt.broadcast %x_10 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %x_13 = tt.broadcast %x_11 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_14 = tt.addptr %x_12, %x_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %x_15 = tt.load %x_14 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.addptr %Y, %x : !tt.ptr<f32>, i32
      %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %2 = tt.addptr %1, %x_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %x_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %5 = tt.expand_dims %k_5 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %6 = tt.broadcast %5 : tensor<1x16xf32> -> tensor<16x16xf32>
      %7 = arith.addf %x_15, %6 : tensor<16x16xf32>
      tt.store %4, %7 : tensor<16x16x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// No mask to join the trip condition with: it stays.
// CHECK-LABEL: tt.func public @negative_unmasked
// CHECK: scf.for
// CHECK: tt.load %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load hoisted: a load without a mask and other

module {
  tt.func public @negative_unmasked(%K: !tt.ptr<f32>, %X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %lo: i32, %hi: i32, %n: i32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    scf.for %r = %lo to %hi step %c16_i32  : i32 {
      %k = tt.splat %K : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %k_0 = tt.addptr %k, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %k_1 = tt.load %k_0 : tensor<16x!tt.ptr<f32>>
      %x = arith.muli %r, %c16_i32 : i32
      %x_2 = tt.addptr %X, %x : !tt.ptr<f32>, i32
      %x_3 = tt.expand_dims %offs {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_4 = arith.muli %x_3, %cst : tensor<16x1xi32>
      %x_5 = tt.splat %x_2 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %x_6 = tt.addptr %x_5, %x_4 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %x_7 = tt.expand_dims %offs {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_8 = tt.broadcast %x_6 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %x_9 = tt.broadcast %x_7 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_10 = tt.addptr %x_8, %x_9 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %x_11 = tt.load %x_10 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.addptr %Y, %x : !tt.ptr<f32>, i32
      %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %2 = tt.addptr %1, %x_4 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %x_9 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %5 = tt.expand_dims %k_1 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %6 = tt.broadcast %5 : tensor<1x16xf32> -> tensor<16x16xf32>
      %7 = arith.addf %x_11, %6 : tensor<16x16xf32>
      tt.store %4, %7 : tensor<16x16x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// The vector is read from Y, which the loop stores to: a later trip may read what an earlier
// one wrote, so it stays.
// CHECK-LABEL: tt.func public @negative_written
// CHECK: scf.for
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load hoisted: the kernel writes the memory of

module {
  tt.func public @negative_written(%K: !tt.ptr<f32>, %X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %lo: i32, %hi: i32, %n: i32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %offs = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    scf.for %r = %lo to %hi step %c16_i32  : i32 {
      %k = tt.splat %n : i32 -> tensor<16xi32>
      %k_1 = arith.cmpi slt, %offs, %k : tensor<16xi32>
      %k_2 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %k_3 = tt.addptr %k_2, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %k_4 = tt.load %k_3, %k_1, %cst_0 : tensor<16x!tt.ptr<f32>>
      %x = arith.muli %r, %c16_i32 : i32
      %x_5 = tt.addptr %X, %x : !tt.ptr<f32>, i32
      %x_6 = tt.expand_dims %offs {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_7 = arith.muli %x_6, %cst : tensor<16x1xi32>
      %x_8 = tt.splat %x_5 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %x_9 = tt.addptr %x_8, %x_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %x_10 = tt.expand_dims %offs {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_11 = tt.broadcast %x_9 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %x_12 = tt.broadcast %x_10 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_13 = tt.addptr %x_11, %x_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %x_14 = tt.load %x_13 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.addptr %Y, %x : !tt.ptr<f32>, i32
      %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %2 = tt.addptr %1, %x_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %x_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %5 = tt.expand_dims %k_4 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %6 = tt.broadcast %5 : tensor<1x16xf32> -> tensor<16x16xf32>
      %7 = arith.addf %x_14, %6 : tensor<16x16xf32>
      tt.store %4, %7 : tensor<16x16x!tt.ptr<f32>>
    }
    tt.return
  }
}
