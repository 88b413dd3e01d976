// Single-CTA epilogue norm: positive cases first, then the bail-out cases (negative_*).
// Inputs: TTIR from test/lit/inputs/epilogue_norm_kernels.py (locations stripped).
// RUN: normfuse-opt --epilogue-norm %s 2>/dev/null | FileCheck %s
// RUN: normfuse-opt --epilogue-norm %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// REMARK: applied: output row normalized in registers before the single store
// REMARK: applied: output row normalized in registers before the single store
// REMARK: missed: the stored tile is reloaded in another loop over N tiles
// REMARK: missed: 'tt.store' between the unnormalized store and the final store
// REMARK: missed: the reloaded tile reaches 'tt.reduce'

module {

// One tile holds the row: one store, normalized from the fp32 accumulator.
// CHECK-LABEL: tt.func public @linear_rmsnorm_naive
// CHECK: %[[ACC:.+]] = scf.for
// CHECK-NOT: tt.store
// CHECK: arith.mulf %[[ACC]], %[[ACC]]
// CHECK-NOT: tt.store
// CHECK: %[[N:.+]] = arith.mulf %[[ACC]], %{{.+}} : tensor<64x32xf32>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store
// CHECK-NOT: tt.store
  tt.func public @linear_rmsnorm_naive(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<32> : tensor<32xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %rstd_4 = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %cst_5 = arith.constant dense<32> : tensor<1x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid_m = tt.get_program_id x : i32
    %offs_m = arith.muli %pid_m, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_9 = arith.remsi %offs_m_8, %rows : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %acc = arith.addi %K, %c31_i32 : i32
    %acc_10 = arith.divsi %acc, %c32_i32 : i32
    %acc_11 = scf.for %k = %c0_i32 to %acc_10 step %c1_i32 iter_args(%acc_37 = %cst_0) -> (tensor<64x32xf32>)  : i32 {
      %kmask = arith.muli %k, %c32_i32 : i32
      %kmask_38 = arith.subi %K, %kmask : i32
      %kmask_39 = tt.splat %kmask_38 : i32 -> tensor<32xi32>
      %kmask_40 = arith.cmpi slt, %offs_n, %kmask_39 : tensor<32xi32>
      %a = tt.expand_dims %kmask_40 {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %a_41 = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_42 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %a_43 = arith.muli %a_41, %a_42 : tensor<64x1xi32>
      %a_44 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_45 = tt.addptr %a_44, %a_43 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_46 = tt.splat %kmask : i32 -> tensor<64x1xi32>
      %a_47 = tt.addptr %a_45, %a_46 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_48 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_49 = tt.broadcast %a_47 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_50 = tt.broadcast %a_48 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_51 = tt.addptr %a_49, %a_50 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %a_52 = tt.broadcast %a : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_53 = tt.load %a_51, %a_52, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.expand_dims %kmask_40 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
      %b_54 = arith.cmpi slt, %a_48, %cst_5 : tensor<1x32xi32>
      %b_55 = tt.broadcast %b : tensor<32x1xi1> -> tensor<32x32xi1>
      %b_56 = tt.broadcast %b_54 : tensor<1x32xi1> -> tensor<32x32xi1>
      %b_57 = arith.andi %b_55, %b_56 : tensor<32x32xi1>
      %b_58 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
      %b_59 = arith.muli %a_48, %b_58 : tensor<1x32xi32>
      %b_60 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %b_61 = tt.addptr %b_60, %b_59 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_62 = tt.splat %kmask : i32 -> tensor<1x32xi32>
      %b_63 = tt.addptr %b_61, %b_62 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_64 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_65 = tt.broadcast %b_63 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %b_66 = tt.broadcast %b_64 : tensor<32x1xi32> -> tensor<32x32xi32>
      %b_67 = tt.addptr %b_65, %b_66 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %b_68 = tt.load %b_67, %b_57, %cst : tensor<32x32x!tt.ptr<bf16>>
      %acc_69 = tt.dot %a_53, %b_68, %acc_37, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_69 : tensor<64x32xf32>
    }
    %ss_12 = arith.mulf %acc_11, %acc_11 : tensor<64x32xf32>
    %ss_13 = "tt.reduce"(%ss_12) <{axis = 1 : i32}> ({
    ^bb0(%ss_37: f32, %ss_38: f32):
      %ss_39 = arith.addf %ss_37, %ss_38 : f32
      tt.reduce.return %ss_39 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %ss_14 = arith.addf %ss_13, %ss : tensor<64xf32>
    %ymask = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %ymask_15 = tt.splat %M : i32 -> tensor<64x1xi32>
    %ymask_16 = arith.cmpi slt, %ymask, %ymask_15 : tensor<64x1xi32>
    %ymask_17 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %ymask_18 = arith.cmpi slt, %ymask_17, %cst_5 : tensor<1x32xi32>
    %ymask_19 = tt.broadcast %ymask_16 : tensor<64x1xi1> -> tensor<64x32xi1>
    %ymask_20 = tt.broadcast %ymask_18 : tensor<1x32xi1> -> tensor<64x32xi1>
    %ymask_21 = arith.andi %ymask_19, %ymask_20 : tensor<64x32xi1>
    %0 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
    %1 = arith.muli %ymask, %0 : tensor<64x1xi32>
    %2 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %4 = tt.broadcast %3 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %5 = tt.broadcast %ymask_17 : tensor<1x32xi32> -> tensor<64x32xi32>
    %6 = tt.addptr %4, %5 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %7 = arith.truncf %acc_11 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %6, %7, %ymask_21 : tensor<64x32x!tt.ptr<bf16>>
    %rstd_22 = arith.divf %ss_14, %rstd_4 : tensor<64xf32>
    %rstd_23 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_24 = arith.addf %rstd_22, %rstd_23 : tensor<64xf32>
    %rstd_25 = math.sqrt %rstd_24 : tensor<64xf32>
    %rstd_26 = arith.divf %rstd, %rstd_25 : tensor<64xf32>
    %y = tt.load %6, %ymask_21, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
    %y_27 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
    %g = arith.cmpi slt, %offs_n, %cst_3 : tensor<32xi32>
    %g_28 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %g_29 = tt.addptr %g_28, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %g_30 = tt.load %g_29, %g, %cst_1 : tensor<32x!tt.ptr<bf16>>
    %g_31 = arith.extf %g_30 : tensor<32xbf16> to tensor<32xf32>
    %out = tt.expand_dims %rstd_26 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %out_32 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
    %out_33 = arith.mulf %y_27, %out_32 : tensor<64x32xf32>
    %out_34 = tt.expand_dims %g_31 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %out_35 = tt.broadcast %out_34 : tensor<1x32xf32> -> tensor<64x32xf32>
    %out_36 = arith.mulf %out_33, %out_35 : tensor<64x32xf32>
    %8 = arith.truncf %out_36 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %6, %8, %ymask_21 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }

// CHECK-LABEL: tt.func public @linear_layernorm_naive
// CHECK: %[[ACC:.+]] = scf.for
// CHECK-NOT: tt.store
// CHECK: arith.subf %[[ACC]], %{{.+}} : tensor<64x32xf32>
// CHECK: tt.store
// CHECK-NOT: tt.store
  tt.func public @linear_layernorm_naive(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<32> : tensor<32xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_5 = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %cst_6 = arith.constant dense<32> : tensor<1x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid_m = tt.get_program_id x : i32
    %offs_m = arith.muli %pid_m, %c64_i32 : i32
    %offs_m_7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_8 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_10 = arith.remsi %offs_m_9, %rows : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %acc = arith.addi %K, %c31_i32 : i32
    %acc_11 = arith.divsi %acc, %c32_i32 : i32
    %acc_12 = scf.for %k = %c0_i32 to %acc_11 step %c1_i32 iter_args(%acc_50 = %cst_0) -> (tensor<64x32xf32>)  : i32 {
      %kmask = arith.muli %k, %c32_i32 : i32
      %kmask_51 = arith.subi %K, %kmask : i32
      %kmask_52 = tt.splat %kmask_51 : i32 -> tensor<32xi32>
      %kmask_53 = arith.cmpi slt, %offs_n, %kmask_52 : tensor<32xi32>
      %a = tt.expand_dims %kmask_53 {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %a_54 = tt.expand_dims %rows_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_55 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %a_56 = arith.muli %a_54, %a_55 : tensor<64x1xi32>
      %a_57 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_58 = tt.addptr %a_57, %a_56 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_59 = tt.splat %kmask : i32 -> tensor<64x1xi32>
      %a_60 = tt.addptr %a_58, %a_59 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_61 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_62 = tt.broadcast %a_60 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_63 = tt.broadcast %a_61 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_64 = tt.addptr %a_62, %a_63 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %a_65 = tt.broadcast %a : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_66 = tt.load %a_64, %a_65, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.expand_dims %kmask_53 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
      %b_67 = arith.cmpi slt, %a_61, %cst_6 : tensor<1x32xi32>
      %b_68 = tt.broadcast %b : tensor<32x1xi1> -> tensor<32x32xi1>
      %b_69 = tt.broadcast %b_67 : tensor<1x32xi1> -> tensor<32x32xi1>
      %b_70 = arith.andi %b_68, %b_69 : tensor<32x32xi1>
      %b_71 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
      %b_72 = arith.muli %a_61, %b_71 : tensor<1x32xi32>
      %b_73 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %b_74 = tt.addptr %b_73, %b_72 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_75 = tt.splat %kmask : i32 -> tensor<1x32xi32>
      %b_76 = tt.addptr %b_74, %b_75 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_77 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_78 = tt.broadcast %b_76 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %b_79 = tt.broadcast %b_77 : tensor<32x1xi32> -> tensor<32x32xi32>
      %b_80 = tt.addptr %b_78, %b_79 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %b_81 = tt.load %b_80, %b_70, %cst : tensor<32x32x!tt.ptr<bf16>>
      %acc_82 = tt.dot %a_66, %b_81, %acc_50, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_82 : tensor<64x32xf32>
    }
    %s1 = "tt.reduce"(%acc_12) <{axis = 1 : i32}> ({
    ^bb0(%s1_50: f32, %s1_51: f32):
      %s1_52 = arith.addf %s1_50, %s1_51 : f32
      tt.reduce.return %s1_52 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %s1_13 = arith.addf %s1, %cst_4 : tensor<64xf32>
    %s2 = arith.mulf %acc_12, %acc_12 : tensor<64x32xf32>
    %s2_14 = "tt.reduce"(%s2) <{axis = 1 : i32}> ({
    ^bb0(%s2_50: f32, %s2_51: f32):
      %s2_52 = arith.addf %s2_50, %s2_51 : f32
      tt.reduce.return %s2_52 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %s2_15 = arith.addf %s2_14, %cst_4 : tensor<64xf32>
    %ymask = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %ymask_16 = tt.splat %M : i32 -> tensor<64x1xi32>
    %ymask_17 = arith.cmpi slt, %ymask, %ymask_16 : tensor<64x1xi32>
    %ymask_18 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %ymask_19 = arith.cmpi slt, %ymask_18, %cst_6 : tensor<1x32xi32>
    %ymask_20 = tt.broadcast %ymask_17 : tensor<64x1xi1> -> tensor<64x32xi1>
    %ymask_21 = tt.broadcast %ymask_19 : tensor<1x32xi1> -> tensor<64x32xi1>
    %ymask_22 = arith.andi %ymask_20, %ymask_21 : tensor<64x32xi1>
    %0 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
    %1 = arith.muli %ymask, %0 : tensor<64x1xi32>
    %2 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %4 = tt.broadcast %3 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %5 = tt.broadcast %ymask_18 : tensor<1x32xi32> -> tensor<64x32xi32>
    %6 = tt.addptr %4, %5 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %7 = arith.truncf %acc_12 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %6, %7, %ymask_22 : tensor<64x32x!tt.ptr<bf16>>
    %mean = arith.divf %s1_13, %cst_5 : tensor<64xf32>
    %rstd_23 = arith.divf %s2_15, %cst_5 : tensor<64xf32>
    %rstd_24 = arith.mulf %mean, %mean : tensor<64xf32>
    %rstd_25 = arith.subf %rstd_23, %rstd_24 : tensor<64xf32>
    %rstd_26 = arith.maxnumf %rstd_25, %cst_4 : tensor<64xf32>
    %rstd_27 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_28 = arith.addf %rstd_26, %rstd_27 : tensor<64xf32>
    %rstd_29 = math.sqrt %rstd_28 : tensor<64xf32>
    %rstd_30 = arith.divf %rstd, %rstd_29 : tensor<64xf32>
    %y = tt.load %6, %ymask_22, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
    %y_31 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
    %g = arith.cmpi slt, %offs_n, %cst_3 : tensor<32xi32>
    %g_32 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %g_33 = tt.addptr %g_32, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %g_34 = tt.load %g_33, %g, %cst_1 : tensor<32x!tt.ptr<bf16>>
    %g_35 = arith.extf %g_34 : tensor<32xbf16> to tensor<32xf32>
    %beta = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %beta_36 = tt.addptr %beta, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %beta_37 = tt.load %beta_36, %g, %cst_1 : tensor<32x!tt.ptr<bf16>>
    %beta_38 = arith.extf %beta_37 : tensor<32xbf16> to tensor<32xf32>
    %out = tt.expand_dims %mean {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %out_39 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
    %out_40 = arith.subf %y_31, %out_39 : tensor<64x32xf32>
    %out_41 = tt.expand_dims %rstd_30 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %out_42 = tt.broadcast %out_41 : tensor<64x1xf32> -> tensor<64x32xf32>
    %out_43 = arith.mulf %out_40, %out_42 : tensor<64x32xf32>
    %out_44 = tt.expand_dims %g_35 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %out_45 = tt.broadcast %out_44 : tensor<1x32xf32> -> tensor<64x32xf32>
    %out_46 = arith.mulf %out_43, %out_45 : tensor<64x32xf32>
    %out_47 = tt.expand_dims %beta_38 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %out_48 = tt.broadcast %out_47 : tensor<1x32xf32> -> tensor<64x32xf32>
    %out_49 = arith.addf %out_46, %out_48 : tensor<64x32xf32>
    %8 = arith.truncf %out_49 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %6, %8, %ymask_22 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }

// Bail out: N = 2 tiles, the row is stored and reloaded in two loops over N.
// CHECK-LABEL: tt.func public @negative_rows_span_tiles
// CHECK: scf.for
// CHECK: tt.store
// CHECK: scf.for
// CHECK: tt.load
// CHECK: tt.store
  tt.func public @negative_rows_span_tiles(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %c2_i32 = arith.constant 2 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<64> : tensor<32xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %rstd_4 = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_5 = arith.constant dense<64> : tensor<1x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid_m = tt.get_program_id x : i32
    %offs_m = arith.muli %pid_m, %c64_i32 : i32
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
      %acc = arith.addi %K, %c31_i32 : i32
      %acc_20 = arith.divsi %acc, %c32_i32 : i32
      %acc_21 = scf.for %k = %c0_i32 to %acc_20 step %c1_i32 iter_args(%acc_32 = %cst_0) -> (tensor<64x32xf32>)  : i32 {
        %kmask = arith.muli %k, %c32_i32 : i32
        %kmask_33 = arith.subi %K, %kmask : i32
        %kmask_34 = tt.splat %kmask_33 : i32 -> tensor<32xi32>
        %kmask_35 = arith.cmpi slt, %offs_n_17, %kmask_34 : tensor<32xi32>
        %a = tt.expand_dims %kmask_35 {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %a_36 = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_37 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
        %a_38 = arith.muli %a_36, %a_37 : tensor<64x1xi32>
        %a_39 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_40 = tt.addptr %a_39, %a_38 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_41 = tt.splat %kmask : i32 -> tensor<64x1xi32>
        %a_42 = tt.addptr %a_40, %a_41 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_43 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_44 = tt.broadcast %a_42 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_45 = tt.broadcast %a_43 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_46 = tt.addptr %a_44, %a_45 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %a_47 = tt.broadcast %a : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_48 = tt.load %a_46, %a_47, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.expand_dims %kmask_35 {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
        %b_49 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_50 = arith.cmpi slt, %b_49, %cst_5 : tensor<1x32xi32>
        %b_51 = tt.broadcast %b : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_52 = tt.broadcast %b_50 : tensor<1x32xi1> -> tensor<32x32xi1>
        %b_53 = arith.andi %b_51, %b_52 : tensor<32x32xi1>
        %b_54 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
        %b_55 = arith.muli %b_49, %b_54 : tensor<1x32xi32>
        %b_56 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
        %b_57 = tt.addptr %b_56, %b_55 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_58 = tt.splat %kmask : i32 -> tensor<1x32xi32>
        %b_59 = tt.addptr %b_57, %b_58 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_60 = tt.expand_dims %offs_n_17 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_61 = tt.broadcast %b_59 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_62 = tt.broadcast %b_60 : tensor<32x1xi32> -> tensor<32x32xi32>
        %b_63 = tt.addptr %b_61, %b_62 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %b_64 = tt.load %b_63, %b_53, %cst : tensor<32x32x!tt.ptr<bf16>>
        %acc_65 = tt.dot %a_48, %b_64, %acc_32, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_65 : tensor<64x32xf32>
      }
      %ss_22 = arith.mulf %acc_21, %acc_21 : tensor<64x32xf32>
      %ss_23 = "tt.reduce"(%ss_22) <{axis = 1 : i32}> ({
      ^bb0(%ss_32: f32, %ss_33: f32):
        %ss_34 = arith.addf %ss_32, %ss_33 : f32
        tt.reduce.return %ss_34 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_24 = arith.addf %ss_16, %ss_23 : tensor<64xf32>
      %ymask = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %ymask_25 = tt.splat %M : i32 -> tensor<64x1xi32>
      %ymask_26 = arith.cmpi slt, %ymask, %ymask_25 : tensor<64x1xi32>
      %ymask_27 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %ymask_28 = arith.cmpi slt, %ymask_27, %cst_5 : tensor<1x32xi32>
      %ymask_29 = tt.broadcast %ymask_26 : tensor<64x1xi1> -> tensor<64x32xi1>
      %ymask_30 = tt.broadcast %ymask_28 : tensor<1x32xi1> -> tensor<64x32xi1>
      %ymask_31 = arith.andi %ymask_29, %ymask_30 : tensor<64x32xi1>
      %0 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %1 = arith.muli %ymask, %0 : tensor<64x1xi32>
      %2 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %1 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %4 = tt.broadcast %3 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %5 = tt.broadcast %ymask_27 : tensor<1x32xi32> -> tensor<64x32xi32>
      %6 = tt.addptr %4, %5 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %7 = arith.truncf %acc_21 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %6, %7, %ymask_31 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %ss_24 : tensor<64xf32>
    }
    %rstd_11 = arith.divf %ss_10, %rstd_4 : tensor<64xf32>
    %rstd_12 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_13 = arith.addf %rstd_11, %rstd_12 : tensor<64xf32>
    %rstd_14 = math.sqrt %rstd_13 : tensor<64xf32>
    %rstd_15 = arith.divf %rstd, %rstd_14 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<32xi32>
      %ymask = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %ymask_19 = tt.splat %M : i32 -> tensor<64x1xi32>
      %ymask_20 = arith.cmpi slt, %ymask, %ymask_19 : tensor<64x1xi32>
      %ymask_21 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %ymask_22 = arith.cmpi slt, %ymask_21, %cst_5 : tensor<1x32xi32>
      %ymask_23 = tt.broadcast %ymask_20 : tensor<64x1xi1> -> tensor<64x32xi1>
      %ymask_24 = tt.broadcast %ymask_22 : tensor<1x32xi1> -> tensor<64x32xi1>
      %ymask_25 = arith.andi %ymask_23, %ymask_24 : tensor<64x32xi1>
      %y = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %y_26 = arith.muli %ymask, %y : tensor<64x1xi32>
      %y_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %y_28 = tt.addptr %y_27, %y_26 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %y_29 = tt.broadcast %y_28 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %y_30 = tt.broadcast %ymask_21 : tensor<1x32xi32> -> tensor<64x32xi32>
      %y_31 = tt.addptr %y_29, %y_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %y_32 = tt.load %y_31, %ymask_25, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %y_33 = arith.extf %y_32 : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = arith.cmpi slt, %offs_n_18, %cst_3 : tensor<32xi32>
      %g_34 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_35 = tt.addptr %g_34, %offs_n_18 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_36 = tt.load %g_35, %g, %cst_1 : tensor<32x!tt.ptr<bf16>>
      %g_37 = arith.extf %g_36 : tensor<32xbf16> to tensor<32xf32>
      %out = tt.expand_dims %rstd_15 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %out_38 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
      %out_39 = arith.mulf %y_33, %out_38 : tensor<64x32xf32>
      %out_40 = tt.expand_dims %g_37 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %out_41 = tt.broadcast %out_40 : tensor<1x32xf32> -> tensor<64x32xf32>
      %out_42 = arith.mulf %out_39, %out_41 : tensor<64x32xf32>
      %0 = arith.truncf %out_42 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %y_31, %0, %ymask_25 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }

// Bail out: another store between the two stores.
// CHECK-LABEL: tt.func public @negative_extra_store
// CHECK: tt.store
// CHECK: tt.store
// CHECK: tt.load
// CHECK: tt.store
  tt.func public @negative_extra_store(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %M: i32, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
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

// Bail out: the reloaded tile feeds a reduction, where masked-off lanes matter.
// CHECK-LABEL: tt.func public @negative_reload_reduced
// CHECK: tt.store
// CHECK: tt.load
// CHECK: "tt.reduce"
// CHECK: tt.store
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
