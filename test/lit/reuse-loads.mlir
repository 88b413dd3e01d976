// reuse-loads: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/reuse_loads_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --reuse-loads %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='reuse-loads{across-dots=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ACROSS
// RUN: normfuse-opt --split-input-file --pass-pipeline='reuse-loads{across-trips=true}' %s 2>%t.trips | FileCheck %s --check-prefix=TRIPS
// RUN: FileCheck %s --check-prefix=TRIPS-REMARK < %t.trips

// The tile's second load (its address spelled (X + rows * 16) + cols, the first
// X + (rows * 16 + cols)) reads what the first read: its users take the first load's value.
// CHECK-LABEL: tt.func public @twice
// CHECK: %[[A:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.reduce
// CHECK-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: arith.mulf %[[A]], %{{.+}} : tensor<16x16xf32>
// CHECK-NEXT: tt.store
// REMARK: applied: 1 load (of arg0) reuses an earlier load of the same addresses in the same block

module {
  tt.func public @twice(%X: !tt.ptr<f32>, %W: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %S: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %ptrs = arith.constant dense<16> : tensor<16xi32>
    %cst = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_1 = arith.muli %rows, %c16_i32 : i32
    %rows_2 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_3 = tt.splat %rows_1 : i32 -> tensor<16xi32>
    %rows_4 = arith.addi %rows_3, %rows_2 : tensor<16xi32>
    %rmask = tt.splat %n : i32 -> tensor<16xi32>
    %rmask_5 = arith.cmpi slt, %rows_4, %rmask : tensor<16xi32>
    %a = tt.expand_dims %rmask_5 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a_6 = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a_7 = arith.muli %a_6, %cst_0 : tensor<16x1xi32>
    %a_8 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a_9 = tt.addptr %a_8, %a_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a_10 = tt.expand_dims %rows_2 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a_11 = tt.broadcast %a_9 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a_12 = tt.broadcast %a_10 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a_13 = tt.addptr %a_11, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a_14 = tt.broadcast %a : tensor<16x1xi1> -> tensor<16x16xi1>
    %a_15 = tt.load %a_13, %a_14, %cst : tensor<16x16x!tt.ptr<f32>>
    %s = arith.mulf %a_15, %a_15 : tensor<16x16xf32>
    %s_16 = "tt.reduce"(%s) <{axis = 1 : i32}> ({
    ^bb0(%s_22: f32, %s_23: f32):
      %s_24 = arith.addf %s_22, %s_23 : f32
      tt.reduce.return %s_24 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %ptrs_17 = arith.muli %rows_4, %ptrs : tensor<16xi32>
    %ptrs_18 = tt.expand_dims %ptrs_17 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %ptrs_19 = tt.addptr %a_8, %ptrs_18 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %ptrs_20 = tt.broadcast %ptrs_19 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %ptrs_21 = tt.addptr %ptrs_20, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %b = tt.load %ptrs_21, %a_14, %cst : tensor<16x16x!tt.ptr<f32>>
    %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %1 = tt.addptr %0, %a_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %3 = tt.addptr %2, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %4 = tt.expand_dims %s_16 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
    %6 = arith.mulf %b, %5 : tensor<16x16xf32>
    tt.store %3, %6, %a_14 : tensor<16x16x!tt.ptr<f32>>
    %7 = tt.splat %S : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %8 = tt.addptr %7, %rows_4 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %8, %s_16, %rmask_5 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// The walk loads each block's tile twice, as the next block's in one trip and as its own in
// the next. Without across-trips both loads stay in the loop; with it the loop carries the
// next block's tile (started from the load before the loop), and its trip loads it once.
// CHECK-LABEL: tt.func public @walk
// CHECK: scf.for
// CHECK-COUNT-2: tt.load
// CHECK: scf.yield
// TRIPS-LABEL: tt.func public @walk
// TRIPS: %[[FIRST:.+]] = tt.load
// TRIPS: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[CUR:.+]] = %[[FIRST]])
// TRIPS: arith.mulf %[[CUR]]
// TRIPS: %[[NEXT:.+]] = tt.load
// TRIPS-NOT: tt.load
// TRIPS: scf.yield %{{.+}}, %[[NEXT]]
// REMARK: missed: no load reused: no two loads of the same addresses
// TRIPS-REMARK: applied: across-trips: 1 load (of arg0) takes what the previous trip of the loop computed from the same addresses

module {
  tt.func public @walk(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<16> : tensor<16xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %r0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %a0 = tt.splat %n : i32 -> tensor<16xi32>
    %a0_2 = arith.cmpi slt, %r0, %a0 : tensor<16xi32>
    %a0_3 = tt.expand_dims %a0_2 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a0_4 = tt.expand_dims %r0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a0_5 = arith.muli %a0_4, %cst_1 : tensor<16x1xi32>
    %a0_6 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a0_7 = tt.addptr %a0_6, %a0_5 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a0_8 = tt.expand_dims %r0 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a0_9 = tt.broadcast %a0_7 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a0_10 = tt.broadcast %a0_8 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a0_11 = tt.addptr %a0_9, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a0_12 = tt.broadcast %a0_3 : tensor<16x1xi1> -> tensor<16x16xi1>
    %a0_13 = tt.load %a0_11, %a0_12, %cst_0 : tensor<16x16x!tt.ptr<f32>>
    %s = "tt.reduce"(%a0_13) <{axis = 1 : i32}> ({
    ^bb0(%s_15: f32, %s_16: f32):
      %s_17 = arith.addf %s_15, %s_16 : f32
      tt.reduce.return %s_17 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %s_14 = scf.for %rb = %c0_i32 to %n step %c16_i32 iter_args(%s_15 = %s) -> (tensor<16xf32>)  : i32 {
      %rows = tt.splat %rb : i32 -> tensor<16xi32>
      %rows_16 = arith.addi %rows, %r0 : tensor<16xi32>
      %a = arith.cmpi slt, %rows_16, %a0 : tensor<16xi32>
      %a_17 = tt.expand_dims %a {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %a_18 = tt.expand_dims %rows_16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_19 = arith.muli %a_18, %cst_1 : tensor<16x1xi32>
      %a_20 = tt.addptr %a0_6, %a_19 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %a_21 = tt.broadcast %a_20 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %a_22 = tt.addptr %a_21, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %a_23 = tt.broadcast %a_17 : tensor<16x1xi1> -> tensor<16x16xi1>
      %a_24 = tt.load %a_22, %a_23, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %a_19 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %4 = tt.expand_dims %s_15 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
      %6 = arith.mulf %a_24, %5 : tensor<16x16xf32>
      tt.store %3, %6, %a_23 : tensor<16x16x!tt.ptr<f32>>
      %nxt = arith.addi %rows_16, %cst : tensor<16xi32>
      %b = arith.cmpi slt, %nxt, %a0 : tensor<16xi32>
      %b_25 = tt.expand_dims %b {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %b_26 = tt.expand_dims %nxt {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %b_27 = arith.muli %b_26, %cst_1 : tensor<16x1xi32>
      %b_28 = tt.addptr %a0_6, %b_27 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %b_29 = tt.broadcast %b_28 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %b_30 = tt.addptr %b_29, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %b_31 = tt.broadcast %b_25 : tensor<16x1xi1> -> tensor<16x16xi1>
      %b_32 = tt.load %b_30, %b_31, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %s_33 = "tt.reduce"(%b_32) <{axis = 1 : i32}> ({
      ^bb0(%s_34: f32, %s_35: f32):
        %s_36 = arith.addf %s_34, %s_35 : f32
        tt.reduce.return %s_36 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      scf.yield %s_33 : tensor<16xf32>
    }
    tt.return
  }
}

// -----

// The walk carries nothing, so its TTIR elides the loop's scf.yield: across-trips builds
// one for the carried tile (it raised an internal error).
// CHECK-LABEL: tt.func public @stream
// TRIPS-LABEL: tt.func public @stream
// TRIPS: %[[FIRST:.+]] = tt.load
// TRIPS: %{{.+}} = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[CUR:.+]] = %[[FIRST]]) -> (tensor<16x16xf32>)
// TRIPS: %[[NEXT:.+]] = tt.load
// TRIPS-NOT: tt.load
// TRIPS: arith.addf %[[CUR]], %[[NEXT]]
// TRIPS: scf.yield %[[NEXT]] : tensor<16x16xf32>
// REMARK: missed: no load reused: no two loads of the same addresses
// TRIPS-REMARK: applied: across-trips: 1 load (of arg0) takes what the previous trip of the loop computed from the same addresses

module {
  tt.func public @stream(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<16> : tensor<16xi32>
    %c4096_i32 = arith.constant 4096 : i32
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %r0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %a0 = tt.splat %n : i32 -> tensor<16xi32>
    %a0_2 = arith.cmpi slt, %r0, %a0 : tensor<16xi32>
    %a0_3 = tt.expand_dims %a0_2 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a0_4 = tt.expand_dims %r0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a0_5 = arith.muli %a0_4, %cst_1 : tensor<16x1xi32>
    %a0_6 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a0_7 = tt.addptr %a0_6, %a0_5 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a0_8 = tt.expand_dims %r0 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a0_9 = tt.broadcast %a0_7 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a0_10 = tt.broadcast %a0_8 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a0_11 = tt.addptr %a0_9, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a0_12 = tt.broadcast %a0_3 : tensor<16x1xi1> -> tensor<16x16xi1>
    %a0_13 = tt.load %a0_11, %a0_12, %cst_0 : tensor<16x16x!tt.ptr<f32>>
    %0 = tt.addptr %Y, %c4096_i32 : !tt.ptr<f32>, i32
    %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %2 = tt.addptr %1, %r0 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %3 = "tt.reduce"(%a0_13) <{axis = 0 : i32}> ({
    ^bb0(%arg3: f32, %arg4: f32):
      %4 = arith.addf %arg3, %arg4 : f32
      tt.reduce.return %4 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    tt.store %2, %3 : tensor<16x!tt.ptr<f32>>
    scf.for %rb = %c0_i32 to %n step %c16_i32  : i32 {
      %rows = tt.splat %rb : i32 -> tensor<16xi32>
      %rows_14 = arith.addi %rows, %r0 : tensor<16xi32>
      %a = arith.cmpi slt, %rows_14, %a0 : tensor<16xi32>
      %a_15 = tt.expand_dims %a {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %a_16 = tt.expand_dims %rows_14 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_17 = arith.muli %a_16, %cst_1 : tensor<16x1xi32>
      %a_18 = tt.addptr %a0_6, %a_17 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %a_19 = tt.broadcast %a_18 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %a_20 = tt.addptr %a_19, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %a_21 = tt.broadcast %a_15 : tensor<16x1xi1> -> tensor<16x16xi1>
      %a_22 = tt.load %a_20, %a_21, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %nxt = arith.addi %rows_14, %cst : tensor<16xi32>
      %b = arith.cmpi slt, %nxt, %a0 : tensor<16xi32>
      %b_23 = tt.expand_dims %b {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %b_24 = tt.expand_dims %nxt {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %b_25 = arith.muli %b_24, %cst_1 : tensor<16x1xi32>
      %b_26 = tt.addptr %a0_6, %b_25 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %b_27 = tt.broadcast %b_26 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %b_28 = tt.addptr %b_27, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %b_29 = tt.broadcast %b_23 : tensor<16x1xi1> -> tensor<16x16xi1>
      %b_30 = tt.load %b_28, %b_29, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %4 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %5 = tt.addptr %4, %a_17 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %6 = tt.broadcast %5 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %7 = tt.addptr %6, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %8 = arith.addf %a_22, %b_30 : tensor<16x16xf32>
      tt.store %7, %8, %a_21 : tensor<16x16x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// Another mask: other elements read, both loads stay.
// CHECK-LABEL: tt.func public @negative_mask
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// REMARK: missed: no load reused: no two loads of the same addresses

module {
  tt.func public @negative_mask(%X: !tt.ptr<f32>, %W: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %S: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %b = arith.constant dense<8> : tensor<1x16xi32>
    %ptrs = arith.constant dense<16> : tensor<16xi32>
    %cst = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_1 = arith.muli %rows, %c16_i32 : i32
    %rows_2 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_3 = tt.splat %rows_1 : i32 -> tensor<16xi32>
    %rows_4 = arith.addi %rows_3, %rows_2 : tensor<16xi32>
    %rmask = tt.splat %n : i32 -> tensor<16xi32>
    %rmask_5 = arith.cmpi slt, %rows_4, %rmask : tensor<16xi32>
    %a = tt.expand_dims %rmask_5 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a_6 = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a_7 = arith.muli %a_6, %cst_0 : tensor<16x1xi32>
    %a_8 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a_9 = tt.addptr %a_8, %a_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a_10 = tt.expand_dims %rows_2 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a_11 = tt.broadcast %a_9 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a_12 = tt.broadcast %a_10 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a_13 = tt.addptr %a_11, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a_14 = tt.broadcast %a : tensor<16x1xi1> -> tensor<16x16xi1>
    %a_15 = tt.load %a_13, %a_14, %cst : tensor<16x16x!tt.ptr<f32>>
    %s = arith.mulf %a_15, %a_15 : tensor<16x16xf32>
    %s_16 = "tt.reduce"(%s) <{axis = 1 : i32}> ({
    ^bb0(%s_26: f32, %s_27: f32):
      %s_28 = arith.addf %s_26, %s_27 : f32
      tt.reduce.return %s_28 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %ptrs_17 = arith.muli %rows_4, %ptrs : tensor<16xi32>
    %ptrs_18 = tt.expand_dims %ptrs_17 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %ptrs_19 = tt.addptr %a_8, %ptrs_18 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %ptrs_20 = tt.broadcast %ptrs_19 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %ptrs_21 = tt.addptr %ptrs_20, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %b_22 = arith.cmpi slt, %a_10, %b : tensor<1x16xi32>
    %b_23 = tt.broadcast %b_22 : tensor<1x16xi1> -> tensor<16x16xi1>
    %b_24 = arith.andi %a_14, %b_23 : tensor<16x16xi1>
    %b_25 = tt.load %ptrs_21, %b_24, %cst : tensor<16x16x!tt.ptr<f32>>
    %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %1 = tt.addptr %0, %a_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %3 = tt.addptr %2, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %4 = tt.expand_dims %s_16 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
    %6 = arith.mulf %b_25, %5 : tensor<16x16xf32>
    tt.store %3, %6, %a_14 : tensor<16x16x!tt.ptr<f32>>
    %7 = tt.splat %S : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %8 = tt.addptr %7, %rows_4 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %8, %s_16, %rmask_5 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// A dot between them: the tile would stay live across it, both loads stay.
// CHECK-LABEL: tt.func public @negative_dot
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// REMARK: missed: no load reused: 'tt.dot' between two loads of arg0 (the tile would stay live across it)
// With across-dots=true the dot does not stop it; the other cases answer as without the
// option (the remarks of all twelve chunks, in order):
// ACROSS: applied: 1 load (of arg0) reuses an earlier load
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: applied: 1 load (of arg0) reuses an earlier load
// ACROSS-NEXT: missed: no load reused: the kernel writes the memory of arg0
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: the kernel writes the memory of arg2
// ACROSS-NEXT: missed: no load reused: a value computed from 'tt.reduce'

module {
  tt.func public @negative_dot(%X: !tt.ptr<f32>, %W: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %S: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %ptrs = arith.constant dense<16> : tensor<16xi32>
    %cst = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_1 = arith.muli %rows, %c16_i32 : i32
    %rows_2 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_3 = tt.splat %rows_1 : i32 -> tensor<16xi32>
    %rows_4 = arith.addi %rows_3, %rows_2 : tensor<16xi32>
    %rmask = tt.splat %n : i32 -> tensor<16xi32>
    %rmask_5 = arith.cmpi slt, %rows_4, %rmask : tensor<16xi32>
    %a = tt.expand_dims %rmask_5 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a_6 = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a_7 = arith.muli %a_6, %cst_0 : tensor<16x1xi32>
    %a_8 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a_9 = tt.addptr %a_8, %a_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a_10 = tt.expand_dims %rows_2 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a_11 = tt.broadcast %a_9 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a_12 = tt.broadcast %a_10 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a_13 = tt.addptr %a_11, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a_14 = tt.broadcast %a : tensor<16x1xi1> -> tensor<16x16xi1>
    %a_15 = tt.load %a_13, %a_14, %cst : tensor<16x16x!tt.ptr<f32>>
    %s = arith.mulf %a_15, %a_15 : tensor<16x16xf32>
    %s_16 = "tt.reduce"(%s) <{axis = 1 : i32}> ({
    ^bb0(%s_31: f32, %s_32: f32):
      %s_33 = arith.addf %s_31, %s_32 : f32
      tt.reduce.return %s_33 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %w = tt.expand_dims %rows_2 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %w_17 = arith.muli %w, %cst_0 : tensor<16x1xi32>
    %w_18 = tt.splat %W : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %w_19 = tt.addptr %w_18, %w_17 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %w_20 = tt.broadcast %w_19 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %w_21 = tt.addptr %w_20, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %w_22 = tt.load %w_21 : tensor<16x16x!tt.ptr<f32>>
    %s_23 = tt.dot %a_15, %w_22, %cst, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>
    %s_24 = "tt.reduce"(%s_23) <{axis = 1 : i32}> ({
    ^bb0(%s_31: f32, %s_32: f32):
      %s_33 = arith.addf %s_31, %s_32 : f32
      tt.reduce.return %s_33 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %s_25 = arith.addf %s_16, %s_24 : tensor<16xf32>
    %ptrs_26 = arith.muli %rows_4, %ptrs : tensor<16xi32>
    %ptrs_27 = tt.expand_dims %ptrs_26 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %ptrs_28 = tt.addptr %a_8, %ptrs_27 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %ptrs_29 = tt.broadcast %ptrs_28 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %ptrs_30 = tt.addptr %ptrs_29, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %b = tt.load %ptrs_30, %a_14, %cst : tensor<16x16x!tt.ptr<f32>>
    %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %1 = tt.addptr %0, %a_7 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %3 = tt.addptr %2, %a_12 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %4 = tt.expand_dims %s_25 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
    %6 = arith.mulf %b, %5 : tensor<16x16xf32>
    tt.store %3, %6, %a_14 : tensor<16x16x!tt.ptr<f32>>
    %7 = tt.splat %S : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %8 = tt.addptr %7, %rows_4 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %8, %s_25, %rmask_5 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// The kernel stores into X between the loads: the second may read what was stored.
// CHECK-LABEL: tt.func public @negative_written
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// REMARK: missed: no load reused: the kernel writes the memory of arg0

module {
  tt.func public @negative_written(%X: !tt.ptr<f32>, %W: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %S: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_2 = arith.muli %rows, %c16_i32 : i32
    %rows_3 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_4 = tt.splat %rows_2 : i32 -> tensor<16xi32>
    %rows_5 = arith.addi %rows_4, %rows_3 : tensor<16xi32>
    %rmask = tt.splat %n : i32 -> tensor<16xi32>
    %rmask_6 = arith.cmpi slt, %rows_5, %rmask : tensor<16xi32>
    %a = tt.expand_dims %rmask_6 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a_7 = tt.expand_dims %rows_5 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a_8 = arith.muli %a_7, %cst_1 : tensor<16x1xi32>
    %a_9 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a_10 = tt.addptr %a_9, %a_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a_11 = tt.expand_dims %rows_3 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a_12 = tt.broadcast %a_10 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a_13 = tt.broadcast %a_11 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a_14 = tt.addptr %a_12, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a_15 = tt.broadcast %a : tensor<16x1xi1> -> tensor<16x16xi1>
    %a_16 = tt.load %a_14, %a_15, %cst_0 : tensor<16x16x!tt.ptr<f32>>
    %s = arith.mulf %a_16, %a_16 : tensor<16x16xf32>
    %s_17 = "tt.reduce"(%s) <{axis = 1 : i32}> ({
    ^bb0(%s_21: f32, %s_22: f32):
      %s_23 = arith.addf %s_21, %s_22 : f32
      tt.reduce.return %s_23 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %0 = arith.muli %rows_5, %cst : tensor<16xi32>
    %1 = tt.splat %X : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %2 = tt.addptr %1, %0 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %2, %s_17, %rmask_6 : tensor<16x!tt.ptr<f32>>
    %ptrs = tt.expand_dims %0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %ptrs_18 = tt.addptr %a_9, %ptrs : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %ptrs_19 = tt.broadcast %ptrs_18 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %ptrs_20 = tt.addptr %ptrs_19, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %b = tt.load %ptrs_20, %a_15, %cst_0 : tensor<16x16x!tt.ptr<f32>>
    %3 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %4 = tt.addptr %3, %a_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %5 = tt.broadcast %4 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %6 = tt.addptr %5, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %7 = tt.expand_dims %s_17 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %8 = tt.broadcast %7 : tensor<16x1xf32> -> tensor<16x16xf32>
    %9 = arith.mulf %b, %8 : tensor<16x16xf32>
    tt.store %6, %9, %a_15 : tensor<16x16x!tt.ptr<f32>>
    %10 = tt.splat %S : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %11 = tt.addptr %10, %rows_5 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %11, %s_17, %rmask_6 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// The second load reads W at the same offsets: other memory.
// CHECK-LABEL: tt.func public @negative_other_tensor
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// REMARK: missed: no load reused: no two loads of the same addresses

module {
  tt.func public @negative_other_tensor(%X: !tt.ptr<f32>, %W: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %S: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_2 = arith.muli %rows, %c16_i32 : i32
    %rows_3 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_4 = tt.splat %rows_2 : i32 -> tensor<16xi32>
    %rows_5 = arith.addi %rows_4, %rows_3 : tensor<16xi32>
    %rmask = tt.splat %n : i32 -> tensor<16xi32>
    %rmask_6 = arith.cmpi slt, %rows_5, %rmask : tensor<16xi32>
    %a = tt.expand_dims %rmask_6 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a_7 = tt.expand_dims %rows_5 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a_8 = arith.muli %a_7, %cst_1 : tensor<16x1xi32>
    %a_9 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a_10 = tt.addptr %a_9, %a_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a_11 = tt.expand_dims %rows_3 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a_12 = tt.broadcast %a_10 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a_13 = tt.broadcast %a_11 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a_14 = tt.addptr %a_12, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a_15 = tt.broadcast %a : tensor<16x1xi1> -> tensor<16x16xi1>
    %a_16 = tt.load %a_14, %a_15, %cst_0 : tensor<16x16x!tt.ptr<f32>>
    %s = arith.mulf %a_16, %a_16 : tensor<16x16xf32>
    %s_17 = "tt.reduce"(%s) <{axis = 1 : i32}> ({
    ^bb0(%s_24: f32, %s_25: f32):
      %s_26 = arith.addf %s_24, %s_25 : f32
      tt.reduce.return %s_26 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %b = arith.muli %rows_5, %cst : tensor<16xi32>
    %b_18 = tt.expand_dims %b {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %b_19 = tt.splat %W : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %b_20 = tt.addptr %b_19, %b_18 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %b_21 = tt.broadcast %b_20 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %b_22 = tt.addptr %b_21, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %b_23 = tt.load %b_22, %a_15, %cst_0 : tensor<16x16x!tt.ptr<f32>>
    %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %1 = tt.addptr %0, %a_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %3 = tt.addptr %2, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %4 = tt.expand_dims %s_17 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
    %6 = arith.mulf %b_23, %5 : tensor<16x16xf32>
    tt.store %3, %6, %a_15 : tensor<16x16x!tt.ptr<f32>>
    %7 = tt.splat %S : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %8 = tt.addptr %7, %rows_5 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %8, %s_17, %rmask_6 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// No load of the first block's tile before the walk: nothing to start the carry from.
// CHECK-LABEL: tt.func public @negative_walk_no_start
// TRIPS-LABEL: tt.func public @negative_walk_no_start
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: no twin of a value of arg0 before its loop

module {
  tt.func public @negative_walk_no_start(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %s = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<16> : tensor<16xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %r0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %s_2 = scf.for %rb = %c0_i32 to %n step %c16_i32 iter_args(%s_3 = %s) -> (tensor<16xf32>)  : i32 {
      %rows = tt.splat %rb : i32 -> tensor<16xi32>
      %rows_4 = arith.addi %rows, %r0 : tensor<16xi32>
      %a = tt.splat %n : i32 -> tensor<16xi32>
      %a_5 = arith.cmpi slt, %rows_4, %a : tensor<16xi32>
      %a_6 = tt.expand_dims %a_5 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %a_7 = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_8 = arith.muli %a_7, %cst_1 : tensor<16x1xi32>
      %a_9 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %a_10 = tt.addptr %a_9, %a_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %a_11 = tt.expand_dims %r0 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %a_12 = tt.broadcast %a_10 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %a_13 = tt.broadcast %a_11 : tensor<1x16xi32> -> tensor<16x16xi32>
      %a_14 = tt.addptr %a_12, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %a_15 = tt.broadcast %a_6 : tensor<16x1xi1> -> tensor<16x16xi1>
      %a_16 = tt.load %a_14, %a_15, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %a_8 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %4 = tt.expand_dims %s_3 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
      %6 = arith.mulf %a_16, %5 : tensor<16x16xf32>
      tt.store %3, %6, %a_15 : tensor<16x16x!tt.ptr<f32>>
      %nxt = arith.addi %rows_4, %cst : tensor<16xi32>
      %b = arith.cmpi slt, %nxt, %a : tensor<16xi32>
      %b_17 = tt.expand_dims %b {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %b_18 = tt.expand_dims %nxt {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %b_19 = arith.muli %b_18, %cst_1 : tensor<16x1xi32>
      %b_20 = tt.addptr %a_9, %b_19 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %b_21 = tt.broadcast %b_20 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %b_22 = tt.addptr %b_21, %a_13 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %b_23 = tt.broadcast %b_17 : tensor<16x1xi1> -> tensor<16x16xi1>
      %b_24 = tt.load %b_22, %b_23, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %s_25 = "tt.reduce"(%b_24) <{axis = 1 : i32}> ({
      ^bb0(%s_26: f32, %s_27: f32):
        %s_28 = arith.addf %s_26, %s_27 : f32
        tt.reduce.return %s_28 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      scf.yield %s_25 : tensor<16xf32>
    }
    tt.return
  }
}

// -----

// The walk stores into X: the next trip's load may read what this trip stored.
// CHECK-LABEL: tt.func public @negative_walk_written
// TRIPS-LABEL: tt.func public @negative_walk_written
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: a value computed from memory the kernel writes

module {
  tt.func public @negative_walk_written(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %n: i32) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<16> : tensor<16xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %r0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %a0 = tt.splat %n : i32 -> tensor<16xi32>
    %a0_2 = arith.cmpi slt, %r0, %a0 : tensor<16xi32>
    %a0_3 = tt.expand_dims %a0_2 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a0_4 = tt.expand_dims %r0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a0_5 = arith.muli %a0_4, %cst_1 : tensor<16x1xi32>
    %a0_6 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a0_7 = tt.addptr %a0_6, %a0_5 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a0_8 = tt.expand_dims %r0 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a0_9 = tt.broadcast %a0_7 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a0_10 = tt.broadcast %a0_8 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a0_11 = tt.addptr %a0_9, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a0_12 = tt.broadcast %a0_3 : tensor<16x1xi1> -> tensor<16x16xi1>
    %a0_13 = tt.load %a0_11, %a0_12, %cst_0 : tensor<16x16x!tt.ptr<f32>>
    %s = "tt.reduce"(%a0_13) <{axis = 1 : i32}> ({
    ^bb0(%s_15: f32, %s_16: f32):
      %s_17 = arith.addf %s_15, %s_16 : f32
      tt.reduce.return %s_17 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %s_14 = scf.for %rb = %c0_i32 to %n step %c16_i32 iter_args(%s_15 = %s) -> (tensor<16xf32>)  : i32 {
      %rows = tt.splat %rb : i32 -> tensor<16xi32>
      %rows_16 = arith.addi %rows, %r0 : tensor<16xi32>
      %a = arith.cmpi slt, %rows_16, %a0 : tensor<16xi32>
      %a_17 = tt.expand_dims %a {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %a_18 = tt.expand_dims %rows_16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_19 = arith.muli %a_18, %cst_1 : tensor<16x1xi32>
      %a_20 = tt.addptr %a0_6, %a_19 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %a_21 = tt.broadcast %a_20 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %a_22 = tt.addptr %a_21, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %a_23 = tt.broadcast %a_17 : tensor<16x1xi1> -> tensor<16x16xi1>
      %a_24 = tt.load %a_22, %a_23, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %a_19 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %4 = tt.expand_dims %s_15 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
      %6 = arith.mulf %a_24, %5 : tensor<16x16xf32>
      tt.store %3, %6, %a_23 : tensor<16x16x!tt.ptr<f32>>
      %nxt = arith.addi %rows_16, %cst : tensor<16xi32>
      %b = arith.cmpi slt, %nxt, %a0 : tensor<16xi32>
      %b_25 = tt.expand_dims %b {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %b_26 = tt.expand_dims %nxt {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %b_27 = arith.muli %b_26, %cst_1 : tensor<16x1xi32>
      %b_28 = tt.addptr %a0_6, %b_27 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %b_29 = tt.broadcast %b_28 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %b_30 = tt.addptr %b_29, %a0_10 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %b_31 = tt.broadcast %b_25 : tensor<16x1xi1> -> tensor<16x16xi1>
      %b_32 = tt.load %b_30, %b_31, %cst_0 : tensor<16x16x!tt.ptr<f32>>
      %s_33 = "tt.reduce"(%b_32) <{axis = 1 : i32}> ({
      ^bb0(%s_34: f32, %s_35: f32):
        %s_36 = arith.addf %s_34, %s_35 : f32
        tt.reduce.return %s_36 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %7 = arith.muli %rows_16, %cst : tensor<16xi32>
      %8 = tt.splat %X : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %9 = tt.addptr %8, %7 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %9, %s_33, %a : tensor<16x!tt.ptr<f32>>
      scf.yield %s_33 : tensor<16xf32>
    }
    tt.return
  }
}

// -----

// The first block's tile before the walk is masked by max(c), the walk's by sum(c): one form
// (a tt.reduce's combiner is in its region), two values. Not the carry's start.
// CHECK-LABEL: tt.func public @negative_walk_twin_reduce
// TRIPS-LABEL: tt.func public @negative_walk_twin_reduce
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: a value computed from 'tt.reduce' (its regions are not compared

module {
  tt.func public @negative_walk_twin_reduce(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %N: !tt.ptr<i32>) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<2.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16xi32>
    %c4096_i32 = arith.constant 4096 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_2 = arith.constant dense<16> : tensor<16x1xi32>
    %c = arith.constant 2048 : i32
    %r0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %c_3 = tt.addptr %X, %c : !tt.ptr<f32>, i32
    %c_4 = tt.splat %c_3 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %c_5 = tt.addptr %c_4, %r0 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %c_6 = tt.load %c_5 : tensor<16x!tt.ptr<f32>>
    %m = "tt.reduce"(%c_6) <{axis = 0 : i32}> ({
    ^bb0(%m_20: f32, %m_21: f32):
      %m_22 = arith.addf %m_20, %m_21 : f32
      tt.reduce.return %m_22 : f32
    }) : (tensor<16xf32>) -> f32
    %m0 = "tt.reduce"(%c_6) <{axis = 0 : i32}> ({
    ^bb0(%m0_20: f32, %m0_21: f32):
      %m0_22 = arith.maxnumf %m0_20, %m0_21 : f32
      tt.reduce.return %m0_22 : f32
    }) : (tensor<16xf32>) -> f32
    %a0 = arith.sitofp %r0 : tensor<16xi32> to tensor<16xf32>
    %a0_7 = tt.splat %m0 : f32 -> tensor<16xf32>
    %a0_8 = arith.cmpf olt, %a0, %a0_7 : tensor<16xf32>
    %a0_9 = tt.expand_dims %a0_8 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a0_10 = tt.expand_dims %r0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a0_11 = arith.muli %a0_10, %cst_2 : tensor<16x1xi32>
    %a0_12 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a0_13 = tt.addptr %a0_12, %a0_11 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a0_14 = tt.expand_dims %r0 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a0_15 = tt.broadcast %a0_13 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a0_16 = tt.broadcast %a0_14 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a0_17 = tt.addptr %a0_15, %a0_16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a0_18 = tt.broadcast %a0_9 : tensor<16x1xi1> -> tensor<16x16xi1>
    %a0_19 = tt.load %a0_17, %a0_18, %cst_1 : tensor<16x16x!tt.ptr<f32>>
    %0 = tt.addptr %Y, %c4096_i32 : !tt.ptr<f32>, i32
    %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %2 = tt.addptr %1, %a0_11 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %4 = tt.addptr %3, %a0_16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %4, %a0_19 : tensor<16x16x!tt.ptr<f32>>
    %acc = scf.for %rb = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_20 = %cst_1) -> (tensor<16x16xf32>)  : i32 {
      %rows = tt.splat %rb : i32 -> tensor<16xi32>
      %rows_21 = arith.addi %rows, %r0 : tensor<16xi32>
      %a = arith.sitofp %rows_21 : tensor<16xi32> to tensor<16xf32>
      %a_22 = tt.splat %m : f32 -> tensor<16xf32>
      %a_23 = arith.cmpf olt, %a, %a_22 : tensor<16xf32>
      %a_24 = tt.expand_dims %a_23 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %a_25 = tt.expand_dims %rows_21 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_26 = arith.muli %a_25, %cst_2 : tensor<16x1xi32>
      %a_27 = tt.addptr %a0_12, %a_26 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %a_28 = tt.broadcast %a_27 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %a_29 = tt.addptr %a_28, %a0_16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %a_30 = tt.broadcast %a_24 : tensor<16x1xi1> -> tensor<16x16xi1>
      %a_31 = tt.load %a_29, %a_30, %cst_1 : tensor<16x16x!tt.ptr<f32>>
      %nxt = arith.addi %rows_21, %cst_0 : tensor<16xi32>
      %b = arith.sitofp %nxt : tensor<16xi32> to tensor<16xf32>
      %b_32 = arith.cmpf olt, %b, %a_22 : tensor<16xf32>
      %b_33 = tt.expand_dims %b_32 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %b_34 = tt.expand_dims %nxt {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %b_35 = arith.muli %b_34, %cst_2 : tensor<16x1xi32>
      %b_36 = tt.addptr %a0_12, %b_35 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %b_37 = tt.broadcast %b_36 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %b_38 = tt.addptr %b_37, %a0_16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %b_39 = tt.broadcast %b_33 : tensor<16x1xi1> -> tensor<16x16xi1>
      %b_40 = tt.load %b_38, %b_39, %cst_1 : tensor<16x16x!tt.ptr<f32>>
      %acc_41 = arith.mulf %a_31, %cst : tensor<16x16xf32>
      %acc_42 = arith.subf %acc_41, %b_40 : tensor<16x16xf32>
      %acc_43 = arith.addf %acc_20, %acc_42 : tensor<16x16xf32>
      scf.yield %acc_43 : tensor<16x16xf32>
    }
    %5 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %6 = tt.addptr %5, %a0_11 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %7 = tt.broadcast %6 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %8 = tt.addptr %7, %a0_16 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %8, %acc : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// The first block's tile before the walk is masked by a bound loaded from N after the kernel
// stored to N, the walk's by one loaded before: one form, two values. Not the carry's start.
// CHECK-LABEL: tt.func public @negative_walk_twin_written
// TRIPS-LABEL: tt.func public @negative_walk_twin_written
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: a value computed from memory the kernel writes (arg2

module {
  tt.func public @negative_walk_twin_written(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %N: !tt.ptr<i32>) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %cst = arith.constant dense<2.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16xi32>
    %c4096_i32 = arith.constant 4096 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_2 = arith.constant dense<16> : tensor<16x1xi32>
    %c0_i32 = arith.constant 0 : i32
    %r0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %m = tt.load %N : !tt.ptr<i32>
    tt.store %N, %c0_i32 : !tt.ptr<i32>
    %m0 = tt.load %N : !tt.ptr<i32>
    %a0 = tt.splat %m0 : i32 -> tensor<16xi32>
    %a0_3 = arith.cmpi slt, %r0, %a0 : tensor<16xi32>
    %a0_4 = tt.expand_dims %a0_3 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %a0_5 = tt.expand_dims %r0 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %a0_6 = arith.muli %a0_5, %cst_2 : tensor<16x1xi32>
    %a0_7 = tt.splat %X : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %a0_8 = tt.addptr %a0_7, %a0_6 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %a0_9 = tt.expand_dims %r0 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %a0_10 = tt.broadcast %a0_8 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %a0_11 = tt.broadcast %a0_9 : tensor<1x16xi32> -> tensor<16x16xi32>
    %a0_12 = tt.addptr %a0_10, %a0_11 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    %a0_13 = tt.broadcast %a0_4 : tensor<16x1xi1> -> tensor<16x16xi1>
    %a0_14 = tt.load %a0_12, %a0_13, %cst_1 : tensor<16x16x!tt.ptr<f32>>
    %0 = tt.addptr %Y, %c4096_i32 : !tt.ptr<f32>, i32
    %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %2 = tt.addptr %1, %a0_6 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %4 = tt.addptr %3, %a0_11 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %4, %a0_14 : tensor<16x16x!tt.ptr<f32>>
    %acc = scf.for %rb = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_15 = %cst_1) -> (tensor<16x16xf32>)  : i32 {
      %rows = tt.splat %rb : i32 -> tensor<16xi32>
      %rows_16 = arith.addi %rows, %r0 : tensor<16xi32>
      %a = tt.splat %m : i32 -> tensor<16xi32>
      %a_17 = arith.cmpi slt, %rows_16, %a : tensor<16xi32>
      %a_18 = tt.expand_dims %a_17 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %a_19 = tt.expand_dims %rows_16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_20 = arith.muli %a_19, %cst_2 : tensor<16x1xi32>
      %a_21 = tt.addptr %a0_7, %a_20 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %a_22 = tt.broadcast %a_21 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %a_23 = tt.addptr %a_22, %a0_11 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %a_24 = tt.broadcast %a_18 : tensor<16x1xi1> -> tensor<16x16xi1>
      %a_25 = tt.load %a_23, %a_24, %cst_1 : tensor<16x16x!tt.ptr<f32>>
      %nxt = arith.addi %rows_16, %cst_0 : tensor<16xi32>
      %b = arith.cmpi slt, %nxt, %a : tensor<16xi32>
      %b_26 = tt.expand_dims %b {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %b_27 = tt.expand_dims %nxt {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %b_28 = arith.muli %b_27, %cst_2 : tensor<16x1xi32>
      %b_29 = tt.addptr %a0_7, %b_28 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %b_30 = tt.broadcast %b_29 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %b_31 = tt.addptr %b_30, %a0_11 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %b_32 = tt.broadcast %b_26 : tensor<16x1xi1> -> tensor<16x16xi1>
      %b_33 = tt.load %b_31, %b_32, %cst_1 : tensor<16x16x!tt.ptr<f32>>
      %acc_34 = arith.mulf %a_25, %cst : tensor<16x16xf32>
      %acc_35 = arith.subf %acc_34, %b_33 : tensor<16x16xf32>
      %acc_36 = arith.addf %acc_15, %acc_35 : tensor<16x16xf32>
      scf.yield %acc_36 : tensor<16x16xf32>
    }
    %5 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
    %6 = tt.addptr %5, %a0_6 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
    %7 = tt.broadcast %6 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
    %8 = tt.addptr %7, %a0_11 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
    tt.store %8, %acc : tensor<16x16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Two loads of X's first values masked by cols < sum(c) and cols < max(c): one form, two
// masks. Both loads stay.
// CHECK-LABEL: tt.func public @negative_bounds_reduce
// CHECK-COUNT-2: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load reused: a value computed from 'tt.reduce' (its regions are not compared

module {
  tt.func public @negative_bounds_reduce(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>) attributes {noinline = false} {
    %cst = arith.constant dense<2.000000e+00> : tensor<16xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c = arith.constant 16 : i32
    %cols = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %c_1 = tt.addptr %X, %c : !tt.ptr<f32>, i32
    %c_2 = tt.splat %c_1 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %c_3 = tt.addptr %c_2, %cols : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %c_4 = tt.load %c_3 : tensor<16x!tt.ptr<f32>>
    %a = "tt.reduce"(%c_4) <{axis = 0 : i32}> ({
    ^bb0(%a_14: f32, %a_15: f32):
      %a_16 = arith.addf %a_14, %a_15 : f32
      tt.reduce.return %a_16 : f32
    }) : (tensor<16xf32>) -> f32
    %a_5 = arith.sitofp %cols : tensor<16xi32> to tensor<16xf32>
    %a_6 = tt.splat %a : f32 -> tensor<16xf32>
    %a_7 = arith.cmpf olt, %a_5, %a_6 : tensor<16xf32>
    %a_8 = tt.splat %X : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %a_9 = tt.addptr %a_8, %cols : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %a_10 = tt.load %a_9, %a_7, %cst_0 : tensor<16x!tt.ptr<f32>>
    %b = "tt.reduce"(%c_4) <{axis = 0 : i32}> ({
    ^bb0(%b_14: f32, %b_15: f32):
      %b_16 = arith.maxnumf %b_14, %b_15 : f32
      tt.reduce.return %b_16 : f32
    }) : (tensor<16xf32>) -> f32
    %b_11 = tt.splat %b : f32 -> tensor<16xf32>
    %b_12 = arith.cmpf olt, %a_5, %b_11 : tensor<16xf32>
    %b_13 = tt.load %a_9, %b_12, %cst_0 : tensor<16x!tt.ptr<f32>>
    %0 = tt.splat %Y : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %1 = tt.addptr %0, %cols : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %2 = arith.mulf %a_10, %cst : tensor<16xf32>
    %3 = arith.addf %2, %b_13 : tensor<16xf32>
    tt.store %1, %3 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}
