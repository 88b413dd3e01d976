// reuse-loads: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/reuse_loads_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --reuse-loads %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='reuse-loads{across-dots=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ACROSS

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
// option (the remarks of all five chunks, in order):
// ACROSS: applied: 1 load (of arg0) reuses an earlier load
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: applied: 1 load (of arg0) reuses an earlier load
// ACROSS-NEXT: missed: no load reused: the kernel writes the memory of arg0
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses

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
