// residual-acc: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/flash_norm_attention_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --residual-acc %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark

// A residual loaded before the K loop and added after it starts the accumulator instead.
// CHECK-LABEL: tt.func public @residual_loop
// CHECK: %[[R:.+]] = arith.extf %{{.+}} : tensor<16x16xbf16> to tensor<16x16xf32>
// CHECK: %[[ACC:.+]] = scf.for %{{.+}} iter_args(%[[C:.+]] = %[[R]]) -> (tensor<16x16xf32>)
// CHECK: tt.dot %{{.+}}, %{{.+}}, %[[C]]
// CHECK-NOT: arith.addf
// CHECK: arith.truncf %[[ACC]]
// REMARK: applied: residual added into the initial value of the accumulator carried by the loop over K tiles

module {
  tt.func public @residual_loop(%A: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %R: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<64> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %offs_m = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r_1 = arith.muli %r, %cst_0 : tensor<16x1xi32>
    %r_2 = tt.splat %R : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %r_3 = tt.addptr %r_2, %r_1 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %r_4 = tt.expand_dims %offs_m {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %r_5 = tt.broadcast %r_3 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %r_6 = tt.broadcast %r_4 : tensor<1x16xi32> -> tensor<16x16xi32>
    %r_7 = tt.addptr %r_5, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %r_8 = tt.load %r_7 : tensor<16x16x!tt.ptr<bf16>>
    %r_9 = arith.extf %r_8 : tensor<16x16xbf16> to tensor<16x16xf32>
    %acc_10 = scf.for %k = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_11 = %acc) -> (tensor<16x16xf32>)  : i32 {
      %a = arith.muli %r, %cst : tensor<16x1xi32>
      %a_12 = tt.splat %A : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_13 = tt.addptr %a_12, %a : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_14 = tt.splat %k : i32 -> tensor<16x1xi32>
      %a_15 = tt.addptr %a_13, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_16 = tt.broadcast %a_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_17 = tt.addptr %a_16, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_18 = tt.load %a_17 : tensor<16x16x!tt.ptr<bf16>>
      %b = arith.addi %a_14, %r : tensor<16x1xi32>
      %b_19 = arith.muli %b, %cst_0 : tensor<16x1xi32>
      %b_20 = tt.splat %B : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %b_21 = tt.addptr %b_20, %b_19 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %b_22 = tt.broadcast %b_21 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %b_23 = tt.addptr %b_22, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %b_24 = tt.load %b_23 : tensor<16x16x!tt.ptr<bf16>>
      %acc_25 = tt.dot %a_18, %b_24, %acc_11, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      scf.yield %acc_25 : tensor<16x16xf32>
    }
    %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %1 = tt.addptr %0, %r_1 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %4 = arith.addf %acc_10, %r_9 : tensor<16x16xf32>
    %5 = arith.truncf %4 : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %3, %5 : tensor<16x16x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// FlashNormAttention, GDPA with two KV tiles: LN(x) (the inner residual) starts P V.
// CHECK-LABEL: tt.func public @fna_gdpa_kv_loop
// CHECK: arith.truncf %[[Q:[^ ]+]] : tensor<16x16xf32> to tensor<16x16xbf16>
// CHECK-NEXT: scf.for %{{.+}} iter_args(%[[C:.+]] = %[[Q]]) -> (tensor<16x16xf32>)
// CHECK: tt.dot %{{.+}}, %{{.+}}, %[[C]]
// REMARK: applied: residual added into the initial value of the accumulator carried by the loop over K tiles

module {
  tt.func public @fna_gdpa_kv_loop(%X: !tt.ptr<bf16>, %K: !tt.ptr<bf16>, %V: !tt.ptr<bf16>, %OFFS: !tt.ptr<i32>, %BLOCKS: !tt.ptr<i32>, %LNW: !tt.ptr<bf16>, %LNB: !tt.ptr<bf16>, %RMSW: !tt.ptr<bf16>, %OUT: !tt.ptr<bf16>, %MEAN: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %RRMS: !tt.ptr<f32>, %nbatch: i32, %qk_scale: f32, %eps: f32, %rms_eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16xi64>
    %shift = arith.constant dense<0.000000e+00> : tensor<16xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_2 = arith.constant dense<64> : tensor<32xi32>
    %cst_3 = arith.constant dense<16> : tensor<32x1xi32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<32x16xbf16>
    %acc = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_6 = arith.constant dense<0.797884583> : tensor<16x32xf32>
    %cst_7 = arith.constant dense<0.0356774069> : tensor<16x32xf32>
    %cst_8 = arith.constant 5.000000e-01 : f32
    %cst_9 = arith.constant dense<6.250000e-02> : tensor<16xf32>
    %kv_base = arith.constant 1024 : i64
    %cand = arith.constant 4 : i32
    %c16_i32 = arith.constant 16 : i32
    %c1_i32 = arith.constant 1 : i32
    %c2_i32 = arith.constant 2 : i32
    %c2147483647_i32 = arith.constant 2147483647 : i32
    %c0_i32 = arith.constant 0 : i32
    %pid = tt.get_program_id x : i32
    %first = arith.cmpi sgt, %nbatch, %cand : i32
    %first_10 = tt.addptr %BLOCKS, %cand : !tt.ptr<i32>, i32
    %first_11 = tt.load %first_10, %first, %c2147483647_i32 : !tt.ptr<i32>
    %b = arith.cmpi sle, %first_11, %pid : i32
    %b_12 = arith.select %b, %cand, %c0_i32 : i32
    %cand_13 = arith.addi %b_12, %c2_i32 : i32
    %first_14 = arith.cmpi slt, %cand_13, %nbatch : i32
    %first_15 = tt.addptr %BLOCKS, %cand_13 : !tt.ptr<i32>, i32
    %first_16 = tt.load %first_15, %first_14, %c2147483647_i32 : !tt.ptr<i32>
    %b_17 = arith.cmpi sle, %first_16, %pid : i32
    %b_18 = arith.select %b_17, %cand_13, %b_12 : i32
    %cand_19 = arith.addi %b_18, %c1_i32 : i32
    %first_20 = arith.cmpi slt, %cand_19, %nbatch : i32
    %first_21 = tt.addptr %BLOCKS, %cand_19 : !tt.ptr<i32>, i32
    %first_22 = tt.load %first_21, %first_20, %c2147483647_i32 : !tt.ptr<i32>
    %b_23 = arith.cmpi sle, %first_22, %pid : i32
    %b_24 = arith.select %b_23, %cand_19, %b_18 : i32
    %start = tt.addptr %OFFS, %b_24 : !tt.ptr<i32>, i32
    %start_25 = tt.load %start : !tt.ptr<i32>
    %end = tt.addptr %start, %c1_i32 : !tt.ptr<i32>, i32
    %end_26 = tt.load %end : !tt.ptr<i32>
    %row0 = tt.addptr %BLOCKS, %b_24 : !tt.ptr<i32>, i32
    %row0_27 = tt.load %row0 : !tt.ptr<i32>
    %row0_28 = arith.subi %pid, %row0_27 : i32
    %row0_29 = arith.muli %row0_28, %c16_i32 : i32
    %row0_30 = arith.addi %start_25, %row0_29 : i32
    %rows = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_31 = tt.splat %row0_30 : i32 -> tensor<16xi32>
    %rows_32 = arith.addi %rows_31, %rows : tensor<16xi32>
    %rmask = tt.splat %end_26 : i32 -> tensor<16xi32>
    %rmask_33 = arith.cmpi slt, %rows_32, %rmask : tensor<16xi32>
    %xrow = arith.extsi %rows_32 : tensor<16xi32> to tensor<16xi64>
    %xrow_34 = arith.muli %xrow, %cst : tensor<16xi64>
    %xrow_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %xrow_36 = tt.addptr %xrow_35, %xrow_34 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
    %shift_37 = tt.load %xrow_36, %rmask_33, %shift : tensor<16x!tt.ptr<bf16>>
    %shift_38 = arith.extf %shift_37 : tensor<16xbf16> to tensor<16xf32>
    %x = tt.expand_dims %rmask_33 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %x_39 = tt.expand_dims %xrow_36 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
    %x_40 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %x_41 = tt.broadcast %x_39 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %x_42 = tt.broadcast %x_40 : tensor<1x16xi32> -> tensor<16x16xi32>
    %x_43 = tt.addptr %x_41, %x_42 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %x_44 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
    %x_45 = tt.load %x_43, %x_44, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
    %xc = arith.extf %x_45 : tensor<16x16xbf16> to tensor<16x16xf32>
    %xc_46 = tt.expand_dims %shift_38 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %xc_47 = tt.broadcast %xc_46 : tensor<16x1xf32> -> tensor<16x16xf32>
    %xc_48 = arith.subf %xc, %xc_47 : tensor<16x16xf32>
    %s1 = "tt.reduce"(%xc_48) <{axis = 1 : i32}> ({
    ^bb0(%s1_80: f32, %s1_81: f32):
      %s1_82 = arith.addf %s1_80, %s1_81 : f32
      tt.reduce.return %s1_82 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %s1_49 = arith.addf %s1, %cst_1 : tensor<16xf32>
    %s2 = arith.mulf %xc_48, %xc_48 : tensor<16x16xf32>
    %s2_50 = "tt.reduce"(%s2) <{axis = 1 : i32}> ({
    ^bb0(%s2_80: f32, %s2_81: f32):
      %s2_82 = arith.addf %s2_80, %s2_81 : f32
      tt.reduce.return %s2_82 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %s2_51 = arith.addf %s2_50, %cst_1 : tensor<16xf32>
    %orow = tt.splat %OUT : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %orow_52 = tt.addptr %orow, %xrow_34 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
    %kv_base_53 = arith.extsi %b_24 : i32 to i64
    %kv_base_54 = arith.muli %kv_base_53, %kv_base : i64
    %m1 = arith.mulf %s1_49, %cst_9 : tensor<16xf32>
    %mean = math.fma %s1_49, %cst_9, %shift_38 : tensor<16xf32>
    %rstd = arith.mulf %m1, %m1 : tensor<16xf32>
    %rstd_55 = arith.subf %cst_1, %rstd : tensor<16xf32>
    %rstd_56 = math.fma %s2_51, %cst_9, %rstd_55 : tensor<16xf32>
    %rstd_57 = arith.maxnumf %rstd_56, %cst_1 : tensor<16xf32>
    %rstd_58 = tt.splat %eps : f32 -> tensor<16xf32>
    %rstd_59 = arith.addf %rstd_57, %rstd_58 : tensor<16xf32>
    %rstd_60 = math.rsqrt %rstd_59 : tensor<16xf32>
    %rq = arith.cmpf ogt, %s2_51, %cst_1 : tensor<16xf32>
    %rq_61 = arith.cmpf une, %s1_49, %cst_1 : tensor<16xf32>
    %rq_62 = arith.ori %rq, %rq_61 : tensor<16xi1>
    %rq_63 = arith.select %rq_62, %rstd_60, %cst_1 : tensor<16xi1>, tensor<16xf32>
    %nmr = arith.mulf %mean, %rq_63 : tensor<16xf32>
    %nmr_64 = arith.subf %cst_1, %nmr : tensor<16xf32>
    %q = tt.expand_dims %rq_63 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %q_65 = tt.expand_dims %nmr_64 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %q_66 = tt.broadcast %q : tensor<16x1xf32> -> tensor<16x16xf32>
    %q_67 = tt.broadcast %q_65 : tensor<16x1xf32> -> tensor<16x16xf32>
    %q_68 = math.fma %xc, %q_66, %q_67 : tensor<16x16xf32>
    %qh = arith.truncf %q_68 : tensor<16x16xf32> to tensor<16x16xbf16>
    %acc_69 = scf.for %n0 = %c0_i32 to %c64_i32 step %c32_i32 iter_args(%acc_80 = %acc) -> (tensor<16x16xf32>)  : i32 {
      %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_81 = tt.splat %n0 : i32 -> tensor<32xi32>
      %offs_n_82 = arith.addi %offs_n_81, %offs_n : tensor<32xi32>
      %nmask = arith.cmpi slt, %offs_n_82, %cst_2 : tensor<32xi32>
      %kv_off = tt.expand_dims %offs_n_82 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %kv_off_83 = arith.muli %kv_off, %cst_3 : tensor<32x1xi32>
      %kv_off_84 = arith.extsi %kv_off_83 : tensor<32x1xi32> to tensor<32x1xi64>
      %kv_off_85 = tt.splat %kv_base_54 : i64 -> tensor<32x1xi64>
      %kv_off_86 = arith.addi %kv_off_85, %kv_off_84 : tensor<32x1xi64>
      %kv_off_87 = arith.extsi %x_40 : tensor<1x16xi32> to tensor<1x16xi64>
      %kv_off_88 = tt.broadcast %kv_off_86 : tensor<32x1xi64> -> tensor<32x16xi64>
      %kv_off_89 = tt.broadcast %kv_off_87 : tensor<1x16xi64> -> tensor<32x16xi64>
      %kv_off_90 = arith.addi %kv_off_88, %kv_off_89 : tensor<32x16xi64>
      %k = tt.expand_dims %nmask {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
      %k_91 = tt.splat %K : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
      %k_92 = tt.addptr %k_91, %kv_off_90 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
      %k_93 = tt.broadcast %k : tensor<32x1xi1> -> tensor<32x16xi1>
      %k_94 = tt.load %k_92, %k_93, %cst_5 : tensor<32x16x!tt.ptr<bf16>>
      %v = tt.splat %V : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
      %v_95 = tt.addptr %v, %kv_off_90 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
      %v_96 = tt.load %v_95, %k_93, %cst_5 : tensor<32x16x!tt.ptr<bf16>>
      %s = tt.trans %k_94 {order = array<i32: 1, 0>} : tensor<32x16xbf16> -> tensor<16x32xbf16>
      %s_97 = tt.dot %qh, %s, %cst_4, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x32xbf16> -> tensor<16x32xf32>
      %p = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %h = arith.mulf %qk_scale, %cst_8 : f32
      %h_98 = tt.splat %h : f32 -> tensor<16x32xf32>
      %h_99 = arith.mulf %s_97, %h_98 : tensor<16x32xf32>
      %p_100 = arith.mulf %s_97, %s_97 : tensor<16x32xf32>
      %p_101 = math.fma %p_100, %cst_7, %cst_6 : tensor<16x32xf32>
      %p_102 = arith.mulf %s_97, %p_101 : tensor<16x32xf32>
      %p_103 = tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %p_102 : tensor<16x32xf32> -> tensor<16x32xf32>
      %p_104 = math.fma %h_99, %p_103, %h_99 : tensor<16x32xf32>
      %p_105 = tt.broadcast %p : tensor<1x32xi1> -> tensor<16x32xi1>
      %p_106 = arith.select %p_105, %p_104, %cst_4 : tensor<16x32xi1>, tensor<16x32xf32>
      %acc_107 = arith.truncf %p_106 : tensor<16x32xf32> to tensor<16x32xbf16>
      %acc_108 = tt.dot %acc_107, %v_96, %acc_80, inputPrecision = tf32 : tensor<16x32xbf16> * tensor<32x16xbf16> -> tensor<16x16xf32>
      scf.yield %acc_108 : tensor<16x16xf32>
    }
    %z = arith.addf %acc_69, %q_68 : tensor<16x16xf32>
    %ss = arith.mulf %z, %z : tensor<16x16xf32>
    %ss_70 = "tt.reduce"(%ss) <{axis = 1 : i32}> ({
    ^bb0(%ss_80: f32, %ss_81: f32):
      %ss_82 = arith.addf %ss_80, %ss_81 : f32
      tt.reduce.return %ss_82 : f32
    }) : (tensor<16x16xf32>) -> tensor<16xf32>
    %ss_71 = arith.addf %ss_70, %cst_1 : tensor<16xf32>
    %0 = tt.expand_dims %orow_52 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
    %1 = tt.broadcast %0 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %2 = tt.addptr %1, %x_42 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %3 = arith.truncf %z : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %2, %3, %x_44 : tensor<16x16x!tt.ptr<bf16>>
    %rrms = tt.splat %rms_eps : f32 -> tensor<16xf32>
    %rrms_72 = math.fma %ss_71, %cst_9, %rrms : tensor<16xf32>
    %rrms_73 = math.rsqrt %rrms_72 : tensor<16xf32>
    %z_74 = tt.load %2, %x_44, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
    %z_75 = arith.extf %z_74 : tensor<16x16xbf16> to tensor<16x16xf32>
    %x_76 = tt.load %x_43, %x_44, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
    %x_77 = arith.extf %x_76 : tensor<16x16xbf16> to tensor<16x16xf32>
    %y = tt.expand_dims %rrms_73 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %y_78 = tt.broadcast %y : tensor<16x1xf32> -> tensor<16x16xf32>
    %y_79 = arith.mulf %z_75, %y_78 : tensor<16x16xf32>
    %4 = arith.addf %y_79, %x_77 : tensor<16x16xf32>
    %5 = arith.truncf %4 : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %2, %5, %x_44 : tensor<16x16x!tt.ptr<bf16>>
    %6 = tt.splat %MEAN : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %7 = tt.addptr %6, %rows_32 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %7, %mean, %rmask_33 : tensor<16x!tt.ptr<f32>>
    %8 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %9 = tt.addptr %8, %rows_32 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %9, %rstd_60, %rmask_33 : tensor<16x!tt.ptr<f32>>
    %10 = tt.splat %RRMS : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %11 = tt.addptr %10, %rows_32 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %11, %rrms_73, %rmask_33 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// The residual is loaded after the loop: it cannot start the accumulator.
// CHECK-LABEL: tt.func public @negative_residual_after_loop
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %cst{{.*}}) -> (tensor<16x16xf32>)
// CHECK: arith.addf
// REMARK: missed: the residual is not defined before the accumulator starts

module {
  tt.func public @negative_residual_after_loop(%A: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %R: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<64> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %offs_m = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %acc_1 = scf.for %k = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_11 = %acc) -> (tensor<16x16xf32>)  : i32 {
      %a = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_12 = arith.muli %a, %cst : tensor<16x1xi32>
      %a_13 = tt.splat %A : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_14 = tt.addptr %a_13, %a_12 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_15 = tt.splat %k : i32 -> tensor<16x1xi32>
      %a_16 = tt.addptr %a_14, %a_15 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_17 = tt.expand_dims %offs_m {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %a_18 = tt.broadcast %a_16 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_19 = tt.broadcast %a_17 : tensor<1x16xi32> -> tensor<16x16xi32>
      %a_20 = tt.addptr %a_18, %a_19 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_21 = tt.load %a_20 : tensor<16x16x!tt.ptr<bf16>>
      %b = arith.addi %a_15, %a : tensor<16x1xi32>
      %b_22 = arith.muli %b, %cst_0 : tensor<16x1xi32>
      %b_23 = tt.splat %B : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %b_24 = tt.addptr %b_23, %b_22 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %b_25 = tt.broadcast %b_24 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %b_26 = tt.addptr %b_25, %a_19 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %b_27 = tt.load %b_26 : tensor<16x16x!tt.ptr<bf16>>
      %acc_28 = tt.dot %a_21, %b_27, %acc_11, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      scf.yield %acc_28 : tensor<16x16xf32>
    }
    %r = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r_2 = arith.muli %r, %cst_0 : tensor<16x1xi32>
    %r_3 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %r_4 = tt.addptr %r_3, %r_2 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %r_5 = tt.expand_dims %offs_m {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %r_6 = tt.broadcast %r_4 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %r_7 = tt.broadcast %r_5 : tensor<1x16xi32> -> tensor<16x16xi32>
    %r_8 = tt.addptr %r_6, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %r_9 = tt.load %r_8 : tensor<16x16x!tt.ptr<bf16>>
    %r_10 = arith.extf %r_9 : tensor<16x16xbf16> to tensor<16x16xf32>
    %0 = arith.addf %acc_1, %r_10 : tensor<16x16xf32>
    %1 = arith.truncf %0 : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %r_8, %1 : tensor<16x16x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// The accumulator is rescaled in the loop: not a plain sum of products.
// CHECK-LABEL: tt.func public @negative_rescaled
// CHECK: scf.for
// CHECK: arith.addf
// REMARK: missed: the accumulator is read in the loop by 'arith.mulf'

module {
  tt.func public @negative_rescaled(%A: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %R: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<5.000000e-01> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<64> : tensor<16x1xi32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %offs_m = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r_2 = arith.muli %r, %cst_1 : tensor<16x1xi32>
    %r_3 = tt.splat %R : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %r_4 = tt.addptr %r_3, %r_2 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %r_5 = tt.expand_dims %offs_m {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %r_6 = tt.broadcast %r_4 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %r_7 = tt.broadcast %r_5 : tensor<1x16xi32> -> tensor<16x16xi32>
    %r_8 = tt.addptr %r_6, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %r_9 = tt.load %r_8 : tensor<16x16x!tt.ptr<bf16>>
    %r_10 = arith.extf %r_9 : tensor<16x16xbf16> to tensor<16x16xf32>
    %acc_11 = scf.for %k = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_12 = %acc) -> (tensor<16x16xf32>)  : i32 {
      %a = arith.muli %r, %cst_0 : tensor<16x1xi32>
      %a_13 = tt.splat %A : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_14 = tt.addptr %a_13, %a : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_15 = tt.splat %k : i32 -> tensor<16x1xi32>
      %a_16 = tt.addptr %a_14, %a_15 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_17 = tt.broadcast %a_16 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_18 = tt.addptr %a_17, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_19 = tt.load %a_18 : tensor<16x16x!tt.ptr<bf16>>
      %b = arith.addi %a_15, %r : tensor<16x1xi32>
      %b_20 = arith.muli %b, %cst_1 : tensor<16x1xi32>
      %b_21 = tt.splat %B : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %b_22 = tt.addptr %b_21, %b_20 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %b_23 = tt.broadcast %b_22 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %b_24 = tt.addptr %b_23, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %b_25 = tt.load %b_24 : tensor<16x16x!tt.ptr<bf16>>
      %acc_26 = arith.mulf %acc_12, %cst : tensor<16x16xf32>
      %acc_27 = tt.dot %a_19, %b_25, %acc_26, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      scf.yield %acc_27 : tensor<16x16xf32>
    }
    %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %1 = tt.addptr %0, %r_2 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %4 = arith.addf %acc_11, %r_10 : tensor<16x16xf32>
    %5 = arith.truncf %4 : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %3, %5 : tensor<16x16x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// acc / l + r (online softmax's normalization): the residual cannot start the accumulator.
// CHECK-LABEL: tt.func public @negative_divided
// CHECK: arith.divf
// CHECK: arith.addf
// REMARK: missed: the product is transformed ('arith.divf')

module {
  tt.func public @negative_divided(%A: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %R: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %l_i = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %acc = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<64> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %offs_m = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r_1 = arith.muli %r, %cst_0 : tensor<16x1xi32>
    %r_2 = tt.splat %R : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %r_3 = tt.addptr %r_2, %r_1 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %r_4 = tt.expand_dims %offs_m {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %r_5 = tt.broadcast %r_3 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %r_6 = tt.broadcast %r_4 : tensor<1x16xi32> -> tensor<16x16xi32>
    %r_7 = tt.addptr %r_5, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %r_8 = tt.load %r_7 : tensor<16x16x!tt.ptr<bf16>>
    %r_9 = arith.extf %r_8 : tensor<16x16xbf16> to tensor<16x16xf32>
    %l_i_10:2 = scf.for %k = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_14 = %acc, %l_i_15 = %l_i) -> (tensor<16x16xf32>, tensor<16xf32>)  : i32 {
      %a = arith.muli %r, %cst : tensor<16x1xi32>
      %a_16 = tt.splat %A : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_17 = tt.addptr %a_16, %a : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_18 = tt.splat %k : i32 -> tensor<16x1xi32>
      %a_19 = tt.addptr %a_17, %a_18 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_20 = tt.broadcast %a_19 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_21 = tt.addptr %a_20, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_22 = tt.load %a_21 : tensor<16x16x!tt.ptr<bf16>>
      %b = arith.addi %a_18, %r : tensor<16x1xi32>
      %b_23 = arith.muli %b, %cst_0 : tensor<16x1xi32>
      %b_24 = tt.splat %B : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %b_25 = tt.addptr %b_24, %b_23 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %b_26 = tt.broadcast %b_25 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %b_27 = tt.addptr %b_26, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %b_28 = tt.load %b_27 : tensor<16x16x!tt.ptr<bf16>>
      %l_i_29 = arith.extf %a_22 : tensor<16x16xbf16> to tensor<16x16xf32>
      %l_i_30 = "tt.reduce"(%l_i_29) <{axis = 1 : i32}> ({
      ^bb0(%l_i_33: f32, %l_i_34: f32):
        %l_i_35 = arith.addf %l_i_33, %l_i_34 : f32
        tt.reduce.return %l_i_35 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %l_i_31 = arith.addf %l_i_15, %l_i_30 : tensor<16xf32>
      %acc_32 = tt.dot %a_22, %b_28, %acc_14, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      scf.yield %acc_32, %l_i_31 : tensor<16x16xf32>, tensor<16xf32>
    }
    %acc_11 = tt.expand_dims %l_i_10#1 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %acc_12 = tt.broadcast %acc_11 : tensor<16x1xf32> -> tensor<16x16xf32>
    %acc_13 = arith.divf %l_i_10#0, %acc_12 : tensor<16x16xf32>
    %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %1 = tt.addptr %0, %r_1 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %4 = arith.addf %acc_13, %r_9 : tensor<16x16xf32>
    %5 = arith.truncf %4 : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %3, %5 : tensor<16x16x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// acc * (1 / l) + r: the same, with the reciprocal.
// CHECK-LABEL: tt.func public @negative_multiplied
// CHECK: arith.mulf
// CHECK: arith.addf
// REMARK: missed: the product is transformed ('arith.mulf')

module {
  tt.func public @negative_multiplied(%A: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %R: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %l_i = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %acc = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %acc_0 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %cst = arith.constant dense<64> : tensor<16x1xi32>
    %cst_1 = arith.constant dense<16> : tensor<16x1xi32>
    %offs_m = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r_2 = arith.muli %r, %cst_1 : tensor<16x1xi32>
    %r_3 = tt.splat %R : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %r_4 = tt.addptr %r_3, %r_2 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %r_5 = tt.expand_dims %offs_m {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %r_6 = tt.broadcast %r_4 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %r_7 = tt.broadcast %r_5 : tensor<1x16xi32> -> tensor<16x16xi32>
    %r_8 = tt.addptr %r_6, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %r_9 = tt.load %r_8 : tensor<16x16x!tt.ptr<bf16>>
    %r_10 = arith.extf %r_9 : tensor<16x16xbf16> to tensor<16x16xf32>
    %l_i_11:2 = scf.for %k = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_16 = %acc, %l_i_17 = %l_i) -> (tensor<16x16xf32>, tensor<16xf32>)  : i32 {
      %a = arith.muli %r, %cst : tensor<16x1xi32>
      %a_18 = tt.splat %A : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_19 = tt.addptr %a_18, %a : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_20 = tt.splat %k : i32 -> tensor<16x1xi32>
      %a_21 = tt.addptr %a_19, %a_20 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_22 = tt.broadcast %a_21 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_23 = tt.addptr %a_22, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_24 = tt.load %a_23 : tensor<16x16x!tt.ptr<bf16>>
      %b = arith.addi %a_20, %r : tensor<16x1xi32>
      %b_25 = arith.muli %b, %cst_1 : tensor<16x1xi32>
      %b_26 = tt.splat %B : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %b_27 = tt.addptr %b_26, %b_25 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %b_28 = tt.broadcast %b_27 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %b_29 = tt.addptr %b_28, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %b_30 = tt.load %b_29 : tensor<16x16x!tt.ptr<bf16>>
      %l_i_31 = arith.extf %a_24 : tensor<16x16xbf16> to tensor<16x16xf32>
      %l_i_32 = "tt.reduce"(%l_i_31) <{axis = 1 : i32}> ({
      ^bb0(%l_i_35: f32, %l_i_36: f32):
        %l_i_37 = arith.addf %l_i_35, %l_i_36 : f32
        tt.reduce.return %l_i_37 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %l_i_33 = arith.addf %l_i_17, %l_i_32 : tensor<16xf32>
      %acc_34 = tt.dot %a_24, %b_30, %acc_16, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      scf.yield %acc_34, %l_i_33 : tensor<16x16xf32>, tensor<16xf32>
    }
    %acc_12 = arith.divf %acc_0, %l_i_11#1 : tensor<16xf32>
    %acc_13 = tt.expand_dims %acc_12 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
    %acc_14 = tt.broadcast %acc_13 : tensor<16x1xf32> -> tensor<16x16xf32>
    %acc_15 = arith.mulf %l_i_11#0, %acc_14 : tensor<16x16xf32>
    %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %1 = tt.addptr %0, %r_2 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %r_7 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %4 = arith.addf %acc_15, %r_10 : tensor<16x16xf32>
    %5 = arith.truncf %4 : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %3, %5 : tensor<16x16x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// The accumulator starts at one.
// CHECK-LABEL: tt.func public @negative_nonzero_start
// CHECK: arith.addf
// REMARK: missed: the loop's accumulator does not start at zero

module {
  tt.func public @negative_nonzero_start(%A: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %R: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<64> : tensor<16x1xi32>
    %acc = arith.constant dense<1.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %offs_m = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %r = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %r_1 = arith.muli %r, %cst_0 : tensor<16x1xi32>
    %r_2 = tt.splat %R : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %r_3 = tt.addptr %r_2, %r_1 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %r_4 = tt.expand_dims %offs_m {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %r_5 = tt.broadcast %r_3 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %r_6 = tt.broadcast %r_4 : tensor<1x16xi32> -> tensor<16x16xi32>
    %r_7 = tt.addptr %r_5, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %r_8 = tt.load %r_7 : tensor<16x16x!tt.ptr<bf16>>
    %r_9 = arith.extf %r_8 : tensor<16x16xbf16> to tensor<16x16xf32>
    %acc_10 = scf.for %k = %c0_i32 to %c64_i32 step %c16_i32 iter_args(%acc_11 = %acc) -> (tensor<16x16xf32>)  : i32 {
      %a = arith.muli %r, %cst : tensor<16x1xi32>
      %a_12 = tt.splat %A : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_13 = tt.addptr %a_12, %a : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_14 = tt.splat %k : i32 -> tensor<16x1xi32>
      %a_15 = tt.addptr %a_13, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_16 = tt.broadcast %a_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_17 = tt.addptr %a_16, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_18 = tt.load %a_17 : tensor<16x16x!tt.ptr<bf16>>
      %b = arith.addi %a_14, %r : tensor<16x1xi32>
      %b_19 = arith.muli %b, %cst_0 : tensor<16x1xi32>
      %b_20 = tt.splat %B : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %b_21 = tt.addptr %b_20, %b_19 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %b_22 = tt.broadcast %b_21 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %b_23 = tt.addptr %b_22, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %b_24 = tt.load %b_23 : tensor<16x16x!tt.ptr<bf16>>
      %acc_25 = tt.dot %a_18, %b_24, %acc_11, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      scf.yield %acc_25 : tensor<16x16xf32>
    }
    %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
    %1 = tt.addptr %0, %r_1 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
    %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %r_6 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
    %4 = arith.addf %acc_10, %r_9 : tensor<16x16xf32>
    %5 = arith.truncf %4 : tensor<16x16xf32> to tensor<16x16xbf16>
    tt.store %3, %5 : tensor<16x16x!tt.ptr<bf16>>
    tt.return
  }
}
