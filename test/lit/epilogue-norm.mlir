// epilogue-norm: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/epilogue_norm_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --epilogue-norm %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark

// One tile holds the row: one store, normalized from the fp32 accumulator.
// CHECK-LABEL: tt.func public @linear_rmsnorm_naive
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[ACC:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x32xi1>, tensor<64x32xf32>
// CHECK-NOT: tt.store
// CHECK: arith.mulf %[[ACC]], %[[ACC]]
// CHECK-NOT: tt.store
// CHECK: %[[N:.+]] = arith.mulf %[[ACC]], %{{.+}} : tensor<64x32xf32>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @linear_rmsnorm_naive(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %rstd_0 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst = arith.constant dense<32> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_5 = arith.constant dense<32> : tensor<1x32xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_9 = arith.remsi %offs_m_8, %rows : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %wrows = arith.remsi %offs_n, %cst : tensor<32xi32>
    %acc = arith.addi %K, %c31_i32 : i32
    %acc_10 = arith.divsi %acc, %c32_i32 : i32
    %acc_11 = scf.for %k = %c0_i32 to %acc_10 step %c1_i32 iter_args(%acc_32 = %cst_4) -> (tensor<64x32xf32>)  : i32 {
      %a_ptr = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_ptr_33 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %a_ptr_34 = arith.muli %a_ptr, %a_ptr_33 : tensor<64x1xi32>
      %a_ptr_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_ptr_36 = tt.addptr %a_ptr_35, %a_ptr_34 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_37 = arith.muli %k, %c32_i32 : i32
      %a_ptr_38 = tt.splat %a_ptr_37 : i32 -> tensor<64x1xi32>
      %a_ptr_39 = tt.addptr %a_ptr_36, %a_ptr_38 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_40 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_ptr_41 = tt.broadcast %a_ptr_39 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_ptr_42 = tt.broadcast %a_ptr_40 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_ptr_43 = tt.addptr %a_ptr_41, %a_ptr_42 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %b_ptr_44 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
      %b_ptr_45 = arith.muli %b_ptr, %b_ptr_44 : tensor<1x32xi32>
      %b_ptr_46 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %b_ptr_47 = tt.addptr %b_ptr_46, %b_ptr_45 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_ptr_48 = tt.splat %a_ptr_37 : i32 -> tensor<1x32xi32>
      %b_ptr_49 = tt.addptr %b_ptr_47, %b_ptr_48 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_ptr_50 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_ptr_51 = tt.broadcast %b_ptr_49 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %b_ptr_52 = tt.broadcast %b_ptr_50 : tensor<32x1xi32> -> tensor<32x32xi32>
      %b_ptr_53 = tt.addptr %b_ptr_51, %b_ptr_52 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %kmask = arith.subi %K, %a_ptr_37 : i32
      %kmask_54 = tt.splat %kmask : i32 -> tensor<32xi32>
      %kmask_55 = arith.cmpi slt, %offs_n, %kmask_54 : tensor<32xi32>
      %a = tt.expand_dims %kmask_55 {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %a_56 = tt.broadcast %a : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_57 = tt.load %a_ptr_43, %a_56, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.expand_dims %kmask_55 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
      %b_58 = tt.broadcast %b : tensor<32x1xi1> -> tensor<32x32xi1>
      %b_59 = tt.load %b_ptr_53, %b_58, %cst_3 : tensor<32x32x!tt.ptr<bf16>>
      %acc_60 = tt.dot %a_57, %b_59, %acc_32, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_60 : tensor<64x32xf32>
    }
    %nmask = arith.cmpi slt, %offs_n, %cst : tensor<32xi32>
    %acc_12 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
    %acc_13 = tt.broadcast %acc_12 : tensor<1x32xi1> -> tensor<64x32xi1>
    %acc_14 = arith.select %acc_13, %acc_11, %cst_4 : tensor<64x32xi1>, tensor<64x32xf32>
    %ss_15 = arith.mulf %acc_14, %acc_14 : tensor<64x32xf32>
    %ss_16 = "tt.reduce"(%ss_15) <{axis = 1 : i32}> ({
    ^bb0(%ss_32: f32, %ss_33: f32):
      %ss_34 = arith.addf %ss_32, %ss_33 : f32
      tt.reduce.return %ss_34 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %ss_17 = arith.addf %ss_16, %ss : tensor<64xf32>
    %1 = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %2 = tt.splat %M : i32 -> tensor<64x1xi32>
    %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
    %4 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %5 = arith.cmpi slt, %4, %cst_5 : tensor<1x32xi32>
    %6 = tt.broadcast %3 : tensor<64x1xi1> -> tensor<64x32xi1>
    %7 = tt.broadcast %5 : tensor<1x32xi1> -> tensor<64x32xi1>
    %8 = arith.andi %6, %7 : tensor<64x32xi1>
    %9 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
    %10 = arith.muli %1, %9 : tensor<64x1xi32>
    %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %12 = tt.addptr %11, %10 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %13 = tt.broadcast %12 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %14 = tt.broadcast %4 : tensor<1x32xi32> -> tensor<64x32xi32>
    %15 = tt.addptr %13, %14 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %16 = arith.truncf %acc_14 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %16, %8 : tensor<64x32x!tt.ptr<bf16>>
    %rstd_18 = arith.divf %ss_17, %rstd : tensor<64xf32>
    %rstd_19 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_20 = arith.addf %rstd_18, %rstd_19 : tensor<64xf32>
    %rstd_21 = math.sqrt %rstd_20 : tensor<64xf32>
    %rstd_22 = arith.divf %rstd_0, %rstd_21 : tensor<64xf32>
    %y = tt.load %15, %8, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
    %y_23 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
    %g = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %g_24 = tt.addptr %g, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %g_25 = tt.load %g_24, %nmask, %cst_2 : tensor<32x!tt.ptr<bf16>>
    %g_26 = arith.extf %g_25 : tensor<32xbf16> to tensor<32xf32>
    %out = tt.expand_dims %rstd_22 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %out_27 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
    %out_28 = arith.mulf %y_23, %out_27 : tensor<64x32xf32>
    %out_29 = tt.expand_dims %g_26 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %out_30 = tt.broadcast %out_29 : tensor<1x32xf32> -> tensor<64x32xf32>
    %out_31 = arith.mulf %out_28, %out_30 : tensor<64x32xf32>
    %17 = arith.truncf %out_31 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %17, %8 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// LayerNorm, one tile holds the row: the centered row comes from the accumulator.
// CHECK-LABEL: tt.func public @linear_layernorm_naive
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[ACC:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x32xi1>, tensor<64x32xf32>
// CHECK-NOT: tt.store
// CHECK: arith.subf %[[ACC]], %{{.+}} : tensor<64x32xf32>
// CHECK: tt.store
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @linear_layernorm_naive(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %cst = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_1 = arith.constant dense<32> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_6 = arith.constant dense<32> : tensor<1x32xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c64_i32 : i32
    %offs_m_7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_8 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_10 = arith.remsi %offs_m_9, %rows : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %wrows = arith.remsi %offs_n, %cst_1 : tensor<32xi32>
    %acc = arith.addi %K, %c31_i32 : i32
    %acc_11 = arith.divsi %acc, %c32_i32 : i32
    %acc_12 = scf.for %k = %c0_i32 to %acc_11 step %c1_i32 iter_args(%acc_45 = %cst_5) -> (tensor<64x32xf32>)  : i32 {
      %a_ptr = tt.expand_dims %rows_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_ptr_46 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %a_ptr_47 = arith.muli %a_ptr, %a_ptr_46 : tensor<64x1xi32>
      %a_ptr_48 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_ptr_49 = tt.addptr %a_ptr_48, %a_ptr_47 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_50 = arith.muli %k, %c32_i32 : i32
      %a_ptr_51 = tt.splat %a_ptr_50 : i32 -> tensor<64x1xi32>
      %a_ptr_52 = tt.addptr %a_ptr_49, %a_ptr_51 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_53 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_ptr_54 = tt.broadcast %a_ptr_52 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_ptr_55 = tt.broadcast %a_ptr_53 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_ptr_56 = tt.addptr %a_ptr_54, %a_ptr_55 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %b_ptr_57 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
      %b_ptr_58 = arith.muli %b_ptr, %b_ptr_57 : tensor<1x32xi32>
      %b_ptr_59 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %b_ptr_60 = tt.addptr %b_ptr_59, %b_ptr_58 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_ptr_61 = tt.splat %a_ptr_50 : i32 -> tensor<1x32xi32>
      %b_ptr_62 = tt.addptr %b_ptr_60, %b_ptr_61 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_ptr_63 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_ptr_64 = tt.broadcast %b_ptr_62 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %b_ptr_65 = tt.broadcast %b_ptr_63 : tensor<32x1xi32> -> tensor<32x32xi32>
      %b_ptr_66 = tt.addptr %b_ptr_64, %b_ptr_65 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %kmask = arith.subi %K, %a_ptr_50 : i32
      %kmask_67 = tt.splat %kmask : i32 -> tensor<32xi32>
      %kmask_68 = arith.cmpi slt, %offs_n, %kmask_67 : tensor<32xi32>
      %a = tt.expand_dims %kmask_68 {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %a_69 = tt.broadcast %a : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_70 = tt.load %a_ptr_56, %a_69, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.expand_dims %kmask_68 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
      %b_71 = tt.broadcast %b : tensor<32x1xi1> -> tensor<32x32xi1>
      %b_72 = tt.load %b_ptr_66, %b_71, %cst_4 : tensor<32x32x!tt.ptr<bf16>>
      %acc_73 = tt.dot %a_70, %b_72, %acc_45, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_73 : tensor<64x32xf32>
    }
    %nmask = arith.cmpi slt, %offs_n, %cst_1 : tensor<32xi32>
    %acc_13 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
    %acc_14 = tt.broadcast %acc_13 : tensor<1x32xi1> -> tensor<64x32xi1>
    %acc_15 = arith.select %acc_14, %acc_12, %cst_5 : tensor<64x32xi1>, tensor<64x32xf32>
    %s1 = "tt.reduce"(%acc_15) <{axis = 1 : i32}> ({
    ^bb0(%s1_45: f32, %s1_46: f32):
      %s1_47 = arith.addf %s1_45, %s1_46 : f32
      tt.reduce.return %s1_47 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %s1_16 = arith.addf %s1, %cst_0 : tensor<64xf32>
    %s2 = arith.mulf %acc_15, %acc_15 : tensor<64x32xf32>
    %s2_17 = "tt.reduce"(%s2) <{axis = 1 : i32}> ({
    ^bb0(%s2_45: f32, %s2_46: f32):
      %s2_47 = arith.addf %s2_45, %s2_46 : f32
      tt.reduce.return %s2_47 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %s2_18 = arith.addf %s2_17, %cst_0 : tensor<64xf32>
    %1 = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %2 = tt.splat %M : i32 -> tensor<64x1xi32>
    %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
    %4 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %5 = arith.cmpi slt, %4, %cst_6 : tensor<1x32xi32>
    %6 = tt.broadcast %3 : tensor<64x1xi1> -> tensor<64x32xi1>
    %7 = tt.broadcast %5 : tensor<1x32xi1> -> tensor<64x32xi1>
    %8 = arith.andi %6, %7 : tensor<64x32xi1>
    %9 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
    %10 = arith.muli %1, %9 : tensor<64x1xi32>
    %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %12 = tt.addptr %11, %10 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %13 = tt.broadcast %12 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %14 = tt.broadcast %4 : tensor<1x32xi32> -> tensor<64x32xi32>
    %15 = tt.addptr %13, %14 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %16 = arith.truncf %acc_15 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %16, %8 : tensor<64x32x!tt.ptr<bf16>>
    %mean = arith.divf %s1_16, %cst : tensor<64xf32>
    %rstd_19 = arith.divf %s2_18, %cst : tensor<64xf32>
    %rstd_20 = arith.mulf %mean, %mean : tensor<64xf32>
    %rstd_21 = arith.subf %rstd_19, %rstd_20 : tensor<64xf32>
    %rstd_22 = arith.maxnumf %rstd_21, %cst_0 : tensor<64xf32>
    %rstd_23 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_24 = arith.addf %rstd_22, %rstd_23 : tensor<64xf32>
    %rstd_25 = math.sqrt %rstd_24 : tensor<64xf32>
    %rstd_26 = arith.divf %rstd, %rstd_25 : tensor<64xf32>
    %y = tt.load %15, %8, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
    %y_27 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
    %g = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %g_28 = tt.addptr %g, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %g_29 = tt.load %g_28, %nmask, %cst_3 : tensor<32x!tt.ptr<bf16>>
    %g_30 = arith.extf %g_29 : tensor<32xbf16> to tensor<32xf32>
    %beta = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %beta_31 = tt.addptr %beta, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %beta_32 = tt.load %beta_31, %nmask, %cst_3 : tensor<32x!tt.ptr<bf16>>
    %beta_33 = arith.extf %beta_32 : tensor<32xbf16> to tensor<32xf32>
    %out = tt.expand_dims %mean {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %out_34 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
    %out_35 = arith.subf %y_27, %out_34 : tensor<64x32xf32>
    %out_36 = tt.expand_dims %rstd_26 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %out_37 = tt.broadcast %out_36 : tensor<64x1xf32> -> tensor<64x32xf32>
    %out_38 = arith.mulf %out_35, %out_37 : tensor<64x32xf32>
    %out_39 = tt.expand_dims %g_30 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %out_40 = tt.broadcast %out_39 : tensor<1x32xf32> -> tensor<64x32xf32>
    %out_41 = arith.mulf %out_38, %out_40 : tensor<64x32xf32>
    %out_42 = tt.expand_dims %beta_33 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %out_43 = tt.broadcast %out_42 : tensor<1x32xf32> -> tensor<64x32xf32>
    %out_44 = arith.addf %out_41, %out_43 : tensor<64x32xf32>
    %17 = arith.truncf %out_44 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %17, %8 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// Persistent (the programs walk the row blocks): the same forwarding inside the row-block loop.
// CHECK-LABEL: tt.func public @rms_persistent
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} : i32 {
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[ACC:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x32xi1>, tensor<64x32xf32>
// CHECK-NOT: tt.store
// CHECK: arith.mulf %[[ACC]], %[[ACC]]
// CHECK-NOT: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store
// CHECK-NOT: tt.store
// CHECK: } {tt.flatten}
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @rms_persistent(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c32_i32 = arith.constant 32 : i32
    %cst = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %cst_0 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_1 = arith.constant dense<32> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_7 = arith.constant dense<32> : tensor<1x32xi32>
    %c63_i32 = arith.constant 63 : i32
    %c64_i32 = arith.constant 64 : i32
    %0 = tt.get_program_id x : i32
    %1 = arith.addi %M, %c63_i32 : i32
    %2 = arith.divsi %1, %c64_i32 : i32
    %3 = tt.get_num_programs x : i32
    scf.for %pid_m = %0 to %2 step %3  : i32 {
      %offs_m = arith.muli %pid_m, %c64_i32 : i32
      %offs_m_8 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %offs_m_9 = tt.splat %offs_m : i32 -> tensor<64xi32>
      %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<64xi32>
      %rows = tt.splat %M : i32 -> tensor<64xi32>
      %rows_11 = arith.remsi %offs_m_10, %rows : tensor<64xi32>
      %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %wrows = arith.remsi %offs_n, %cst_1 : tensor<32xi32>
      %acc = arith.addi %K, %c31_i32 : i32
      %acc_12 = arith.divsi %acc, %c32_i32 : i32
      %acc_13 = scf.for %k = %c0_i32 to %acc_12 step %c1_i32 iter_args(%acc_32 = %cst_6) -> (tensor<64x32xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_33 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
        %a_ptr_34 = arith.muli %a_ptr, %a_ptr_33 : tensor<64x1xi32>
        %a_ptr_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_36 = tt.addptr %a_ptr_35, %a_ptr_34 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_37 = arith.muli %k, %c32_i32 : i32
        %a_ptr_38 = tt.splat %a_ptr_37 : i32 -> tensor<64x1xi32>
        %a_ptr_39 = tt.addptr %a_ptr_36, %a_ptr_38 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_40 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_41 = tt.broadcast %a_ptr_39 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_42 = tt.broadcast %a_ptr_40 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_43 = tt.addptr %a_ptr_41, %a_ptr_42 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_44 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
        %b_ptr_45 = arith.muli %b_ptr, %b_ptr_44 : tensor<1x32xi32>
        %b_ptr_46 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
        %b_ptr_47 = tt.addptr %b_ptr_46, %b_ptr_45 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_48 = tt.splat %a_ptr_37 : i32 -> tensor<1x32xi32>
        %b_ptr_49 = tt.addptr %b_ptr_47, %b_ptr_48 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_50 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_51 = tt.broadcast %b_ptr_49 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_52 = tt.broadcast %b_ptr_50 : tensor<32x1xi32> -> tensor<32x32xi32>
        %b_ptr_53 = tt.addptr %b_ptr_51, %b_ptr_52 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %kmask = arith.subi %K, %a_ptr_37 : i32
        %kmask_54 = tt.splat %kmask : i32 -> tensor<32xi32>
        %kmask_55 = arith.cmpi slt, %offs_n, %kmask_54 : tensor<32xi32>
        %a = tt.expand_dims %kmask_55 {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %a_56 = tt.broadcast %a : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_57 = tt.load %a_ptr_43, %a_56, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.expand_dims %kmask_55 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
        %b_58 = tt.broadcast %b : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_59 = tt.load %b_ptr_53, %b_58, %cst_5 : tensor<32x32x!tt.ptr<bf16>>
        %acc_60 = tt.dot %a_57, %b_59, %acc_32, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_60 : tensor<64x32xf32>
      }
      %nmask = arith.cmpi slt, %offs_n, %cst_1 : tensor<32xi32>
      %acc_14 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_15 = tt.broadcast %acc_14 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_16 = arith.select %acc_15, %acc_13, %cst_6 : tensor<64x32xi1>, tensor<64x32xf32>
      %ss = arith.mulf %acc_16, %acc_16 : tensor<64x32xf32>
      %ss_17 = "tt.reduce"(%ss) <{axis = 1 : i32}> ({
      ^bb0(%ss_32: f32, %ss_33: f32):
        %ss_34 = arith.addf %ss_32, %ss_33 : f32
        tt.reduce.return %ss_34 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_18 = arith.addf %ss_17, %cst_4 : tensor<64xf32>
      %4 = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %5 = tt.splat %M : i32 -> tensor<64x1xi32>
      %6 = arith.cmpi slt, %4, %5 : tensor<64x1xi32>
      %7 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %8 = arith.cmpi slt, %7, %cst_7 : tensor<1x32xi32>
      %9 = tt.broadcast %6 : tensor<64x1xi1> -> tensor<64x32xi1>
      %10 = tt.broadcast %8 : tensor<1x32xi1> -> tensor<64x32xi1>
      %11 = arith.andi %9, %10 : tensor<64x32xi1>
      %12 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %13 = arith.muli %4, %12 : tensor<64x1xi32>
      %14 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %15 = tt.addptr %14, %13 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %16 = tt.broadcast %15 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %17 = tt.broadcast %7 : tensor<1x32xi32> -> tensor<64x32xi32>
      %18 = tt.addptr %16, %17 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %19 = arith.truncf %acc_16 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %18, %19, %11 : tensor<64x32x!tt.ptr<bf16>>
      %rstd = arith.divf %ss_18, %cst : tensor<64xf32>
      %rstd_19 = tt.splat %eps : f32 -> tensor<64xf32>
      %rstd_20 = arith.addf %rstd, %rstd_19 : tensor<64xf32>
      %rstd_21 = math.sqrt %rstd_20 : tensor<64xf32>
      %rstd_22 = arith.divf %cst_0, %rstd_21 : tensor<64xf32>
      %y = tt.load %18, %11, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %y_23 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_24 = tt.addptr %g, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_25 = tt.load %g_24, %nmask, %cst_3 : tensor<32x!tt.ptr<bf16>>
      %g_26 = arith.extf %g_25 : tensor<32xbf16> to tensor<32xf32>
      %out = tt.expand_dims %rstd_22 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %out_27 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
      %out_28 = arith.mulf %y_23, %out_27 : tensor<64x32xf32>
      %out_29 = tt.expand_dims %g_26 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %out_30 = tt.broadcast %out_29 : tensor<1x32xf32> -> tensor<64x32xf32>
      %out_31 = arith.mulf %out_28, %out_30 : tensor<64x32xf32>
      %20 = arith.truncf %out_31 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %18, %20, %11 : tensor<64x32x!tt.ptr<bf16>>
    } {tt.flatten}
    tt.return
  }
}

// -----

// A store to another argument between the two stores (a side output, as the FlashNormAttention
// training forward's saved z): left in place; the output is forwarded as without it.
// CHECK-LABEL: tt.func public @side_output_store
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @side_output_store(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %M: i32, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %p = arith.constant dense<32> : tensor<64x1xi32>
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %acc_0 = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %acc_1 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %acc_2 = arith.muli %acc_0, %acc_1 : tensor<64x1xi32>
    %acc_3 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %acc_4 = tt.addptr %acc_3, %acc_2 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %acc_5 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %acc_6 = tt.broadcast %acc_4 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %acc_7 = tt.broadcast %acc_5 : tensor<1x32xi32> -> tensor<64x32xi32>
    %acc_8 = tt.addptr %acc_6, %acc_7 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %acc_9 = tt.load %acc_8 : tensor<64x32x!tt.ptr<bf16>>
    %acc_10 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %acc_11 = tt.splat %stride : i32 -> tensor<32x1xi32>
    %acc_12 = arith.muli %acc_10, %acc_11 : tensor<32x1xi32>
    %acc_13 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
    %acc_14 = tt.addptr %acc_13, %acc_12 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
    %acc_15 = tt.broadcast %acc_14 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %acc_16 = tt.broadcast %acc_5 : tensor<1x32xi32> -> tensor<32x32xi32>
    %acc_17 = tt.addptr %acc_15, %acc_16 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_18 = tt.load %acc_17 : tensor<32x32x!tt.ptr<bf16>>
    %acc_19 = tt.dot %acc_9, %acc_18, %acc, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
    %ss = arith.mulf %acc_19, %acc_19 : tensor<64x32xf32>
    %ss_20 = "tt.reduce"(%ss) <{axis = 1 : i32}> ({
    ^bb0(%ss_27: f32, %ss_28: f32):
      %ss_29 = arith.addf %ss_27, %ss_28 : f32
      tt.reduce.return %ss_29 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %p_21 = arith.muli %acc_0, %p : tensor<64x1xi32>
    %p_22 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_23 = tt.addptr %p_22, %p_21 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_24 = tt.broadcast %p_23 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_25 = tt.addptr %p_24, %acc_7 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %0 = arith.truncf %acc_19 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %p_25, %0 : tensor<64x32x!tt.ptr<bf16>>
    %1 = tt.splat %Z : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %2 = tt.addptr %1, %offs_m : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %2, %ss_20 : tensor<64x!tt.ptr<f32>>
    %y = tt.load %p_25 : tensor<64x32x!tt.ptr<bf16>>
    %y_26 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
    %3 = arith.divf %ss_20, %cst : tensor<64xf32>
    %4 = tt.splat %eps : f32 -> tensor<64xf32>
    %5 = arith.addf %3, %4 : tensor<64xf32>
    %6 = math.sqrt %5 : tensor<64xf32>
    %7 = tt.expand_dims %6 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %8 = tt.broadcast %7 : tensor<64x1xf32> -> tensor<64x32xf32>
    %9 = arith.divf %y_26, %8 : tensor<64x32xf32>
    %10 = arith.truncf %9 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %p_25, %10 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// Bail out: N = 2 tiles, the row is stored and reloaded in two loops over N.
// CHECK-LABEL: tt.func public @negative_rows_span_tiles
// CHECK: scf.for
// CHECK: tt.store
// CHECK: scf.for
// CHECK: tt.load
// CHECK: tt.store
// REMARK: missed: the stored tile is reloaded in another loop over N tiles

module {
  tt.func public @negative_rows_span_tiles(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %rstd_0 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst = arith.constant dense<64> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c2_i32 = arith.constant 2 : i32
    %c31_i32 = arith.constant 31 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_5 = arith.constant dense<64> : tensor<1x32xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_9 = arith.remsi %offs_m_8, %rows : tensor<64xi32>
    %ss_10 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_16 = %ss) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_17 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_18 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_19 = arith.addi %offs_n_18, %offs_n_17 : tensor<32xi32>
      %wrows = arith.remsi %offs_n_19, %cst : tensor<32xi32>
      %acc = arith.addi %K, %c31_i32 : i32
      %acc_20 = arith.divsi %acc, %c32_i32 : i32
      %acc_21 = scf.for %k = %c0_i32 to %acc_20 step %c1_i32 iter_args(%acc_28 = %cst_4) -> (tensor<64x32xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_29 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
        %a_ptr_30 = arith.muli %a_ptr, %a_ptr_29 : tensor<64x1xi32>
        %a_ptr_31 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_32 = tt.addptr %a_ptr_31, %a_ptr_30 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_33 = arith.muli %k, %c32_i32 : i32
        %a_ptr_34 = tt.splat %a_ptr_33 : i32 -> tensor<64x1xi32>
        %a_ptr_35 = tt.addptr %a_ptr_32, %a_ptr_34 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_36 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_37 = tt.broadcast %a_ptr_35 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_38 = tt.broadcast %a_ptr_36 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_39 = tt.addptr %a_ptr_37, %a_ptr_38 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_40 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
        %b_ptr_41 = arith.muli %b_ptr, %b_ptr_40 : tensor<1x32xi32>
        %b_ptr_42 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
        %b_ptr_43 = tt.addptr %b_ptr_42, %b_ptr_41 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_44 = tt.splat %a_ptr_33 : i32 -> tensor<1x32xi32>
        %b_ptr_45 = tt.addptr %b_ptr_43, %b_ptr_44 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_46 = tt.expand_dims %offs_n_17 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_47 = tt.broadcast %b_ptr_45 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_48 = tt.broadcast %b_ptr_46 : tensor<32x1xi32> -> tensor<32x32xi32>
        %b_ptr_49 = tt.addptr %b_ptr_47, %b_ptr_48 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %kmask = arith.subi %K, %a_ptr_33 : i32
        %kmask_50 = tt.splat %kmask : i32 -> tensor<32xi32>
        %kmask_51 = arith.cmpi slt, %offs_n_17, %kmask_50 : tensor<32xi32>
        %a = tt.expand_dims %kmask_51 {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %a_52 = tt.broadcast %a : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_53 = tt.load %a_ptr_39, %a_52, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.expand_dims %kmask_51 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
        %b_54 = tt.broadcast %b : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_55 = tt.load %b_ptr_49, %b_54, %cst_3 : tensor<32x32x!tt.ptr<bf16>>
        %acc_56 = tt.dot %a_53, %b_55, %acc_28, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_56 : tensor<64x32xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_19, %cst : tensor<32xi32>
      %acc_22 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_23 = tt.broadcast %acc_22 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_24 = arith.select %acc_23, %acc_21, %cst_4 : tensor<64x32xi1>, tensor<64x32xf32>
      %ss_25 = arith.mulf %acc_24, %acc_24 : tensor<64x32xf32>
      %ss_26 = "tt.reduce"(%ss_25) <{axis = 1 : i32}> ({
      ^bb0(%ss_28: f32, %ss_29: f32):
        %ss_30 = arith.addf %ss_28, %ss_29 : f32
        tt.reduce.return %ss_30 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_27 = arith.addf %ss_16, %ss_26 : tensor<64xf32>
      %1 = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %2 = tt.splat %M : i32 -> tensor<64x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
      %4 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %5 = arith.cmpi slt, %4, %cst_5 : tensor<1x32xi32>
      %6 = tt.broadcast %3 : tensor<64x1xi1> -> tensor<64x32xi1>
      %7 = tt.broadcast %5 : tensor<1x32xi1> -> tensor<64x32xi1>
      %8 = arith.andi %6, %7 : tensor<64x32xi1>
      %9 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %10 = arith.muli %1, %9 : tensor<64x1xi32>
      %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %10 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %13 = tt.broadcast %12 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %14 = tt.broadcast %4 : tensor<1x32xi32> -> tensor<64x32xi32>
      %15 = tt.addptr %13, %14 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %16 = arith.truncf %acc_24 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %15, %16, %8 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %ss_27 : tensor<64xf32>
    }
    %rstd_11 = arith.divf %ss_10, %rstd : tensor<64xf32>
    %rstd_12 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_13 = arith.addf %rstd_11, %rstd_12 : tensor<64xf32>
    %rstd_14 = math.sqrt %rstd_13 : tensor<64xf32>
    %rstd_15 = arith.divf %rstd_0, %rstd_14 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<32xi32>
      %y = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %y_19 = tt.splat %M : i32 -> tensor<64x1xi32>
      %y_20 = arith.cmpi slt, %y, %y_19 : tensor<64x1xi32>
      %y_21 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %y_22 = arith.cmpi slt, %y_21, %cst_5 : tensor<1x32xi32>
      %y_23 = tt.broadcast %y_20 : tensor<64x1xi1> -> tensor<64x32xi1>
      %y_24 = tt.broadcast %y_22 : tensor<1x32xi1> -> tensor<64x32xi1>
      %y_25 = arith.andi %y_23, %y_24 : tensor<64x32xi1>
      %y_26 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %y_27 = arith.muli %y, %y_26 : tensor<64x1xi32>
      %y_28 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %y_29 = tt.addptr %y_28, %y_27 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %y_30 = tt.broadcast %y_29 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %y_31 = tt.broadcast %y_21 : tensor<1x32xi32> -> tensor<64x32xi32>
      %y_32 = tt.addptr %y_30, %y_31 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %y_33 = tt.load %y_32, %y_25, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %y_34 = arith.extf %y_33 : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = arith.cmpi slt, %offs_n_18, %cst : tensor<32xi32>
      %g_35 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_36 = tt.addptr %g_35, %offs_n_18 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_37 = tt.load %g_36, %g, %cst_2 : tensor<32x!tt.ptr<bf16>>
      %g_38 = arith.extf %g_37 : tensor<32xbf16> to tensor<32xf32>
      %out = tt.expand_dims %rstd_15 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %out_39 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
      %out_40 = arith.mulf %y_34, %out_39 : tensor<64x32xf32>
      %out_41 = tt.expand_dims %g_38 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %out_42 = tt.broadcast %out_41 : tensor<1x32xf32> -> tensor<64x32xf32>
      %out_43 = arith.mulf %out_40, %out_42 : tensor<64x32xf32>
      %1 = arith.truncf %out_43 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %y_32, %1, %y_25 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: another store to the output's memory between the two stores.
// CHECK-LABEL: tt.func public @negative_extra_store
// CHECK: tt.store
// CHECK: tt.store
// CHECK: tt.load
// CHECK: tt.store
// REMARK: missed: 'tt.store' between the unnormalized store and the final store

module {
  tt.func public @negative_extra_store(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %M: i32, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %c2048_i32 = arith.constant 2048 : i32
    %p = arith.constant dense<32> : tensor<64x1xi32>
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %acc_0 = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %acc_1 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %acc_2 = arith.muli %acc_0, %acc_1 : tensor<64x1xi32>
    %acc_3 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %acc_4 = tt.addptr %acc_3, %acc_2 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %acc_5 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %acc_6 = tt.broadcast %acc_4 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %acc_7 = tt.broadcast %acc_5 : tensor<1x32xi32> -> tensor<64x32xi32>
    %acc_8 = tt.addptr %acc_6, %acc_7 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %acc_9 = tt.load %acc_8 : tensor<64x32x!tt.ptr<bf16>>
    %acc_10 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %acc_11 = tt.splat %stride : i32 -> tensor<32x1xi32>
    %acc_12 = arith.muli %acc_10, %acc_11 : tensor<32x1xi32>
    %acc_13 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
    %acc_14 = tt.addptr %acc_13, %acc_12 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
    %acc_15 = tt.broadcast %acc_14 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %acc_16 = tt.broadcast %acc_5 : tensor<1x32xi32> -> tensor<32x32xi32>
    %acc_17 = tt.addptr %acc_15, %acc_16 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_18 = tt.load %acc_17 : tensor<32x32x!tt.ptr<bf16>>
    %acc_19 = tt.dot %acc_9, %acc_18, %acc, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
    %ss = arith.mulf %acc_19, %acc_19 : tensor<64x32xf32>
    %ss_20 = "tt.reduce"(%ss) <{axis = 1 : i32}> ({
    ^bb0(%ss_27: f32, %ss_28: f32):
      %ss_29 = arith.addf %ss_27, %ss_28 : f32
      tt.reduce.return %ss_29 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %p_21 = arith.muli %acc_0, %p : tensor<64x1xi32>
    %p_22 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_23 = tt.addptr %p_22, %p_21 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_24 = tt.broadcast %p_23 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_25 = tt.addptr %p_24, %acc_7 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %0 = arith.truncf %acc_19 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %p_25, %0 : tensor<64x32x!tt.ptr<bf16>>
    %1 = tt.addptr %Y, %c2048_i32 : !tt.ptr<bf16>, i32
    %2 = tt.splat %1 : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %offs_m : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
    %4 = arith.truncf %ss_20 : tensor<64xf32> to tensor<64xbf16>
    tt.store %3, %4 : tensor<64x!tt.ptr<bf16>>
    %y = tt.load %p_25 : tensor<64x32x!tt.ptr<bf16>>
    %y_26 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
    %5 = arith.divf %ss_20, %cst : tensor<64xf32>
    %6 = tt.splat %eps : f32 -> tensor<64xf32>
    %7 = arith.addf %5, %6 : tensor<64xf32>
    %8 = math.sqrt %7 : tensor<64xf32>
    %9 = tt.expand_dims %8 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %10 = tt.broadcast %9 : tensor<64x1xf32> -> tensor<64x32xf32>
    %11 = arith.divf %y_26, %10 : tensor<64x32xf32>
    %12 = arith.truncf %11 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %p_25, %12 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// Bail out: the reloaded tile feeds a reduction, where masked-off lanes matter.
// CHECK-LABEL: tt.func public @negative_reload_reduced
// CHECK: tt.store
// CHECK: tt.load
// CHECK: "tt.reduce"
// CHECK: tt.store
// REMARK: missed: the reloaded tile reaches 'tt.reduce'

module {
  tt.func public @negative_reload_reduced(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %M: i32, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %y = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %p = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %mask = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %mask_1 = tt.splat %M : i32 -> tensor<64x1xi32>
    %mask_2 = arith.cmpi slt, %mask, %mask_1 : tensor<64x1xi32>
    %mask_3 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %mask_4 = tt.splat %K : i32 -> tensor<1x32xi32>
    %mask_5 = arith.cmpi slt, %mask_3, %mask_4 : tensor<1x32xi32>
    %mask_6 = tt.broadcast %mask_2 : tensor<64x1xi1> -> tensor<64x32xi1>
    %mask_7 = tt.broadcast %mask_5 : tensor<1x32xi1> -> tensor<64x32xi1>
    %mask_8 = arith.andi %mask_6, %mask_7 : tensor<64x32xi1>
    %acc = tt.splat %stride : i32 -> tensor<64x1xi32>
    %acc_9 = arith.muli %mask, %acc : tensor<64x1xi32>
    %acc_10 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %acc_11 = tt.addptr %acc_10, %acc_9 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %acc_12 = tt.broadcast %acc_11 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %acc_13 = tt.broadcast %mask_3 : tensor<1x32xi32> -> tensor<64x32xi32>
    %acc_14 = tt.addptr %acc_12, %acc_13 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %acc_15 = tt.load %acc_14 : tensor<64x32x!tt.ptr<bf16>>
    %acc_16 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %acc_17 = tt.splat %stride : i32 -> tensor<32x1xi32>
    %acc_18 = arith.muli %acc_16, %acc_17 : tensor<32x1xi32>
    %acc_19 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
    %acc_20 = tt.addptr %acc_19, %acc_18 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
    %acc_21 = tt.broadcast %acc_20 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %acc_22 = tt.broadcast %mask_3 : tensor<1x32xi32> -> tensor<32x32xi32>
    %acc_23 = tt.addptr %acc_21, %acc_22 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_24 = tt.load %acc_23 : tensor<32x32x!tt.ptr<bf16>>
    %acc_25 = tt.dot %acc_15, %acc_24, %cst_0, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
    %p_26 = arith.muli %mask, %p : tensor<64x1xi32>
    %p_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_28 = tt.addptr %p_27, %p_26 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_29 = tt.broadcast %p_28 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_30 = tt.addptr %p_29, %acc_13 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %0 = arith.truncf %acc_25 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %p_30, %0, %mask_8 : tensor<64x32x!tt.ptr<bf16>>
    %y_31 = tt.load %p_30, %mask_8, %y : tensor<64x32x!tt.ptr<bf16>>
    %y_32 = arith.extf %y_31 : tensor<64x32xbf16> to tensor<64x32xf32>
    %ss = arith.mulf %y_32, %y_32 : tensor<64x32xf32>
    %ss_33 = "tt.reduce"(%ss) <{axis = 1 : i32}> ({
    ^bb0(%ss_34: f32, %ss_35: f32):
      %ss_36 = arith.addf %ss_34, %ss_35 : f32
      tt.reduce.return %ss_36 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %1 = arith.divf %ss_33, %cst : tensor<64xf32>
    %2 = tt.splat %eps : f32 -> tensor<64xf32>
    %3 = arith.addf %1, %2 : tensor<64xf32>
    %4 = math.sqrt %3 : tensor<64xf32>
    %5 = tt.expand_dims %4 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %6 = tt.broadcast %5 : tensor<64x1xf32> -> tensor<64x32xf32>
    %7 = arith.divf %y_32, %6 : tensor<64x32xf32>
    %8 = arith.truncf %7 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %p_30, %8, %mask_8 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}
