// cluster-reduce, prologue row statistics (FlashNormAttention's LayerNorm over the heads): a loop
// before the GEMM loop that only sums per-row values over the same tiles is dealt to the CTAs
// too, and its sums are exchanged over DSMEM in one round before the GEMM loop. One chunk per
// case, positive cases first, then the bail-outs (negative_*: the prologue stays whole in every
// CTA, which is correct, while the epilogue split still applies).
// Inputs: TTIR from test/lit/inputs/flash_norm_attention_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{cluster-size=2}' %s 2>/dev/null | FileCheck %s --check-prefix=TWO
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{exchange=global}' %s 2>/dev/null | FileCheck %s --check-prefix=GLOBAL
// RUN: normfuse-opt --split-input-file --pass-pipeline=cluster-reduce,epilogue-norm,residual-acc %s 2>/dev/null | FileCheck %s --check-prefix=PIPE

// Two heads -> a 2-CTA cluster, one head each. The LayerNorm's two sums (16 rows: slots at 0
// and 64 bytes) are exchanged before the attention, the RMSNorm's (slot at 128) after it.
// CHECK-LABEL: tt.func public @fna_two_heads
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 192 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK-NOT: scf.for
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: %[[LN:.+]]:2 = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+64]
// CHECK: arith.mulf %[[LN]]#0
// CHECK: tt.dot
// CHECK: tt.dot
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+128], $2;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+128]
// CHECK: barrier.cluster.arrive.release; mov
// CHECK: barrier.cluster.wait.acquire; mov
// CHECK-NEXT: tt.return
// REMARK: applied: 2 prologue row statistics (a sum over the same 2 tiles before the GEMM loop) split over the cluster too
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 1 row statistic exchanged through distributed shared memory (192 B per CTA)
// GLOBAL-LABEL: tt.func public @fna_two_heads
// GLOBAL: st.global.f32 [%nfa+0], $3; st.global.f32 [%nfa+64], $4;
// GLOBAL: st.global.f32 [%nfa+128], $3;
// Then epilogue-norm: the attention output is normalized in registers, one store of a head's
// output tile (and the three statistics' stores).
// PIPE-LABEL: tt.func public @fna_two_heads
// PIPE: tt.dot
// PIPE: tt.dot
// PIPE-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+128]
// PIPE: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: tt.return

module {
  tt.func public @fna_two_heads(%X: !tt.ptr<bf16>, %K: !tt.ptr<bf16>, %V: !tt.ptr<bf16>, %OFFS: !tt.ptr<i32>, %BLOCKS: !tt.ptr<i32>, %LNW: !tt.ptr<bf16>, %LNB: !tt.ptr<bf16>, %RMSW: !tt.ptr<bf16>, %OUT: !tt.ptr<bf16>, %MEAN: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %RRMS: !tt.ptr<f32>, %nbatch: i32, %qk_scale: f32, %eps: f32, %rms_eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<16xi64>
    %shift = arith.constant dense<0.000000e+00> : tensor<16xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_2 = arith.constant dense<32> : tensor<32xi32>
    %cst_3 = arith.constant dense<32> : tensor<32x1xi32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<32x16xbf16>
    %cst_6 = arith.constant dense<0.797884583> : tensor<16x32xf32>
    %cst_7 = arith.constant dense<0.0356774069> : tensor<16x32xf32>
    %cst_8 = arith.constant 5.000000e-01 : f32
    %cst_9 = arith.constant dense<3.125000e-02> : tensor<16xf32>
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
    %s2:2 = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s1 = %cst_1, %s2_54 = %cst_1) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rmask_33 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %x_55 = tt.expand_dims %xrow_36 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_56 = arith.muli %h, %c16_i32 : i32
      %x_57 = tt.splat %x_56 : i32 -> tensor<16x1xi32>
      %x_58 = tt.addptr %x_55, %x_57 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_59 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_60 = tt.broadcast %x_58 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_61 = tt.broadcast %x_59 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_62 = tt.addptr %x_60, %x_61 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_63 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_64 = tt.load %x_62, %x_63, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %xc = arith.extf %x_64 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xc_65 = tt.expand_dims %shift_38 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xc_66 = tt.broadcast %xc_65 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xc_67 = arith.subf %xc, %xc_66 : tensor<16x16xf32>
      %s1_68 = "tt.reduce"(%xc_67) <{axis = 1 : i32}> ({
      ^bb0(%s1_73: f32, %s1_74: f32):
        %s1_75 = arith.addf %s1_73, %s1_74 : f32
        tt.reduce.return %s1_75 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s1_69 = arith.addf %s1, %s1_68 : tensor<16xf32>
      %s2_70 = arith.mulf %xc_67, %xc_67 : tensor<16x16xf32>
      %s2_71 = "tt.reduce"(%s2_70) <{axis = 1 : i32}> ({
      ^bb0(%s2_73: f32, %s2_74: f32):
        %s2_75 = arith.addf %s2_73, %s2_74 : f32
        tt.reduce.return %s2_75 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s2_72 = arith.addf %s2_54, %s2_71 : tensor<16xf32>
      scf.yield %s1_69, %s2_72 : tensor<16xf32>, tensor<16xf32>
    }
    %orow = tt.splat %OUT : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %orow_39 = tt.addptr %orow, %xrow_34 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
    %kv_base_40 = arith.extsi %b_24 : i32 to i64
    %kv_base_41 = arith.muli %kv_base_40, %kv_base : i64
    %m1 = arith.mulf %s2#0, %cst_9 : tensor<16xf32>
    %mean = math.fma %s2#0, %cst_9, %shift_38 : tensor<16xf32>
    %rstd = arith.mulf %m1, %m1 : tensor<16xf32>
    %rstd_42 = arith.subf %cst_1, %rstd : tensor<16xf32>
    %rstd_43 = math.fma %s2#1, %cst_9, %rstd_42 : tensor<16xf32>
    %rstd_44 = arith.maxnumf %rstd_43, %cst_1 : tensor<16xf32>
    %rstd_45 = tt.splat %eps : f32 -> tensor<16xf32>
    %rstd_46 = arith.addf %rstd_44, %rstd_45 : tensor<16xf32>
    %rstd_47 = math.rsqrt %rstd_46 : tensor<16xf32>
    %rq = arith.cmpf ogt, %s2#1, %cst_1 : tensor<16xf32>
    %rq_48 = arith.cmpf une, %s2#0, %cst_1 : tensor<16xf32>
    %rq_49 = arith.ori %rq, %rq_48 : tensor<16xi1>
    %rq_50 = arith.select %rq_49, %rstd_47, %cst_1 : tensor<16xi1>, tensor<16xf32>
    %nmr = arith.mulf %mean, %rq_50 : tensor<16xf32>
    %nmr_51 = arith.subf %cst_1, %nmr : tensor<16xf32>
    %ss = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_54 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %cols = arith.muli %h, %c16_i32 : i32
      %cols_55 = tt.splat %cols : i32 -> tensor<16xi32>
      %cols_56 = arith.addi %cols_55, %rows : tensor<16xi32>
      %x = tt.expand_dims %rmask_33 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %x_57 = tt.expand_dims %xrow_36 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_58 = tt.expand_dims %cols_56 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_59 = tt.broadcast %x_57 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_60 = tt.broadcast %x_58 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_61 = tt.addptr %x_59, %x_60 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_62 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_63 = tt.load %x_61, %x_62, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %x_64 = arith.extf %x_63 : tensor<16x16xbf16> to tensor<16x16xf32>
      %q = tt.expand_dims %rq_50 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %q_65 = tt.expand_dims %nmr_51 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %q_66 = tt.broadcast %q : tensor<16x1xf32> -> tensor<16x16xf32>
      %q_67 = tt.broadcast %q_65 : tensor<16x1xf32> -> tensor<16x16xf32>
      %q_68 = math.fma %x_64, %q_66, %q_67 : tensor<16x16xf32>
      %qh = arith.truncf %q_68 : tensor<16x16xf32> to tensor<16x16xbf16>
      %kvh = arith.extsi %cols : i32 to i64
      %kvh_69 = arith.addi %kv_base_41, %kvh : i64
      %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %nmask = arith.cmpi slt, %offs_n, %cst_2 : tensor<32xi32>
      %kv_off = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %kv_off_70 = arith.muli %kv_off, %cst_3 : tensor<32x1xi32>
      %kv_off_71 = arith.extsi %kv_off_70 : tensor<32x1xi32> to tensor<32x1xi64>
      %kv_off_72 = tt.splat %kvh_69 : i64 -> tensor<32x1xi64>
      %kv_off_73 = arith.addi %kv_off_72, %kv_off_71 : tensor<32x1xi64>
      %kv_off_74 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kv_off_75 = arith.extsi %kv_off_74 : tensor<1x16xi32> to tensor<1x16xi64>
      %kv_off_76 = tt.broadcast %kv_off_73 : tensor<32x1xi64> -> tensor<32x16xi64>
      %kv_off_77 = tt.broadcast %kv_off_75 : tensor<1x16xi64> -> tensor<32x16xi64>
      %kv_off_78 = arith.addi %kv_off_76, %kv_off_77 : tensor<32x16xi64>
      %k = tt.expand_dims %nmask {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
      %k_79 = tt.splat %K : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
      %k_80 = tt.addptr %k_79, %kv_off_78 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
      %k_81 = tt.broadcast %k : tensor<32x1xi1> -> tensor<32x16xi1>
      %k_82 = tt.load %k_80, %k_81, %cst_5 : tensor<32x16x!tt.ptr<bf16>>
      %v = tt.splat %V : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
      %v_83 = tt.addptr %v, %kv_off_78 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
      %v_84 = tt.load %v_83, %k_81, %cst_5 : tensor<32x16x!tt.ptr<bf16>>
      %s = tt.trans %k_82 {order = array<i32: 1, 0>} : tensor<32x16xbf16> -> tensor<16x32xbf16>
      %s_85 = tt.dot %qh, %s, %cst_4, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x32xbf16> -> tensor<16x32xf32>
      %p = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %h_86 = arith.mulf %qk_scale, %cst_8 : f32
      %h_87 = tt.splat %h_86 : f32 -> tensor<16x32xf32>
      %h_88 = arith.mulf %s_85, %h_87 : tensor<16x32xf32>
      %p_89 = arith.mulf %s_85, %s_85 : tensor<16x32xf32>
      %p_90 = math.fma %p_89, %cst_7, %cst_6 : tensor<16x32xf32>
      %p_91 = arith.mulf %s_85, %p_90 : tensor<16x32xf32>
      %p_92 = tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %p_91 : tensor<16x32xf32> -> tensor<16x32xf32>
      %p_93 = math.fma %h_88, %p_92, %h_88 : tensor<16x32xf32>
      %p_94 = tt.broadcast %p : tensor<1x32xi1> -> tensor<16x32xi1>
      %p_95 = arith.select %p_94, %p_93, %cst_4 : tensor<16x32xi1>, tensor<16x32xf32>
      %acc = arith.truncf %p_95 : tensor<16x32xf32> to tensor<16x32xbf16>
      %acc_96 = tt.dot %acc, %v_84, %q_68, inputPrecision = tf32 : tensor<16x32xbf16> * tensor<32x16xbf16> -> tensor<16x16xf32>
      %ss_97 = arith.mulf %acc_96, %acc_96 : tensor<16x16xf32>
      %ss_98 = "tt.reduce"(%ss_97) <{axis = 1 : i32}> ({
      ^bb0(%ss_100: f32, %ss_101: f32):
        %ss_102 = arith.addf %ss_100, %ss_101 : f32
        tt.reduce.return %ss_102 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_99 = arith.addf %ss_54, %ss_98 : tensor<16xf32>
      %6 = tt.expand_dims %orow_39 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %7 = tt.broadcast %6 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %8 = tt.addptr %7, %x_60 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %9 = arith.truncf %acc_96 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %8, %9, %x_62 : tensor<16x16x!tt.ptr<bf16>>
      scf.yield %ss_99 : tensor<16xf32>
    }
    %rrms = tt.splat %rms_eps : f32 -> tensor<16xf32>
    %rrms_52 = math.fma %ss, %cst_9, %rrms : tensor<16xf32>
    %rrms_53 = math.rsqrt %rrms_52 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %cols = arith.muli %h, %c16_i32 : i32
      %cols_54 = tt.splat %cols : i32 -> tensor<16xi32>
      %cols_55 = arith.addi %cols_54, %rows : tensor<16xi32>
      %z = tt.expand_dims %rmask_33 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %z_56 = tt.expand_dims %orow_39 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %z_57 = tt.expand_dims %cols_55 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %z_58 = tt.broadcast %z_56 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %z_59 = tt.broadcast %z_57 : tensor<1x16xi32> -> tensor<16x16xi32>
      %z_60 = tt.addptr %z_58, %z_59 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %z_61 = tt.broadcast %z : tensor<16x1xi1> -> tensor<16x16xi1>
      %z_62 = tt.load %z_60, %z_61, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %z_63 = arith.extf %z_62 : tensor<16x16xbf16> to tensor<16x16xf32>
      %x = tt.expand_dims %xrow_36 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_64 = tt.broadcast %x : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_65 = tt.addptr %x_64, %z_59 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_66 = tt.load %x_65, %z_61, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %x_67 = arith.extf %x_66 : tensor<16x16xbf16> to tensor<16x16xf32>
      %y = tt.expand_dims %rrms_53 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_68 = tt.broadcast %y : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_69 = arith.mulf %z_63, %y_68 : tensor<16x16xf32>
      %6 = arith.addf %y_69, %x_67 : tensor<16x16xf32>
      %7 = arith.truncf %6 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %z_60, %7, %z_61 : tensor<16x16x!tt.ptr<bf16>>
    }
    %0 = tt.splat %MEAN : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %1 = tt.addptr %0, %rows_32 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %1, %mean, %rmask_33 : tensor<16x!tt.ptr<f32>>
    %2 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %3 = tt.addptr %2, %rows_32 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %3, %rstd_47, %rmask_33 : tensor<16x!tt.ptr<f32>>
    %4 = tt.splat %RRMS : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %5 = tt.addptr %4, %rows_32 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %5, %rrms_53, %rmask_33 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Persistent: both exchanges run once per row block, in the slot set of the block's parity
// (2 statistics x 16 rows x 4 B = 128 B per set, two sets).
// CHECK-LABEL: tt.func public @prologue_persistent
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: scf.for
// CHECK: arith.andi %{{.+}}, %c1_i32
// CHECK: st.shared.f32 [%nfa+0], $2;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.dot
// CHECK: st.shared.f32 [%nfa+64], $2;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: tt.return
// REMARK: applied: 1 prologue row statistic (a sum over the same 2 tiles before the GEMM loop)

module {
  tt.func public @prologue_persistent(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %S: !tt.ptr<f32>, %eps: f32) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %cst = arith.constant dense<32> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<3.200000e+01> : tensor<16xf32>
    %cst_1 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %c0_i32 = arith.constant 0 : i32
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_4 = arith.constant dense<16> : tensor<16x1xi32>
    %c4_i32 = arith.constant 4 : i32
    %0 = tt.get_program_id x : i32
    %1 = tt.get_num_programs x : i32
    scf.for %pid = %0 to %c4_i32 step %1  : i32 {
      %rows = arith.muli %pid, %c16_i32 : i32
      %rows_5 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
      %rows_6 = tt.splat %rows : i32 -> tensor<16xi32>
      %rows_7 = arith.addi %rows_6, %rows_5 : tensor<16xi32>
      %s = scf.for %t = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
        %x = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %x_10 = arith.muli %x, %cst : tensor<16x1xi32>
        %x_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %x_12 = tt.addptr %x_11, %x_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %x_13 = arith.muli %t, %c16_i32 : i32
        %x_14 = tt.splat %x_13 : i32 -> tensor<16x1xi32>
        %x_15 = tt.addptr %x_12, %x_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %x_16 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %x_17 = tt.broadcast %x_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %x_18 = tt.broadcast %x_16 : tensor<1x16xi32> -> tensor<16x16xi32>
        %x_19 = tt.addptr %x_17, %x_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %x_20 = tt.load %x_19 : tensor<16x16x!tt.ptr<bf16>>
        %x_21 = arith.extf %x_20 : tensor<16x16xbf16> to tensor<16x16xf32>
        %s_22 = "tt.reduce"(%x_21) <{axis = 1 : i32}> ({
        ^bb0(%s_24: f32, %s_25: f32):
          %s_26 = arith.addf %s_24, %s_25 : f32
          tt.reduce.return %s_26 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %s_23 = arith.addf %s_9, %s_22 : tensor<16xf32>
        scf.yield %s_23 : tensor<16xf32>
      }
      %ss = arith.divf %s, %cst_0 : tensor<16xf32>
      %ss_8 = scf.for %t = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
        %a = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %a_10 = arith.muli %a, %cst : tensor<16x1xi32>
        %a_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %a_12 = tt.addptr %a_11, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %a_13 = arith.muli %t, %c16_i32 : i32
        %a_14 = tt.splat %a_13 : i32 -> tensor<16x1xi32>
        %a_15 = tt.addptr %a_12, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %a_16 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %a_17 = tt.broadcast %a_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %a_18 = tt.broadcast %a_16 : tensor<1x16xi32> -> tensor<16x16xi32>
        %a_19 = tt.addptr %a_17, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %a_20 = tt.load %a_19 : tensor<16x16x!tt.ptr<bf16>>
        %acc = tt.expand_dims %rows_5 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %acc_21 = arith.muli %acc, %cst_4 : tensor<16x1xi32>
        %acc_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %acc_23 = tt.addptr %acc_22, %acc_21 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %acc_24 = tt.broadcast %acc_23 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %acc_25 = tt.addptr %acc_24, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %acc_26 = tt.load %acc_25 : tensor<16x16x!tt.ptr<bf16>>
        %acc_27 = tt.dot %a_20, %acc_26, %cst_3, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %acc_28 = tt.expand_dims %ss {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %acc_29 = tt.broadcast %acc_28 : tensor<16x1xf32> -> tensor<16x16xf32>
        %acc_30 = arith.subf %acc_27, %acc_29 : tensor<16x16xf32>
        %ss_31 = arith.mulf %acc_30, %acc_30 : tensor<16x16xf32>
        %ss_32 = "tt.reduce"(%ss_31) <{axis = 1 : i32}> ({
        ^bb0(%ss_40: f32, %ss_41: f32):
          %ss_42 = arith.addf %ss_40, %ss_41 : f32
          tt.reduce.return %ss_42 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %ss_33 = arith.addf %ss_9, %ss_32 : tensor<16xf32>
        %ss_34 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %ss_35 = tt.addptr %ss_34, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %ss_36 = tt.addptr %ss_35, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %ss_37 = tt.broadcast %ss_36 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %ss_38 = tt.addptr %ss_37, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %ss_39 = arith.truncf %acc_30 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %ss_38, %ss_39 : tensor<16x16x!tt.ptr<bf16>>
        scf.yield %ss_33 : tensor<16xf32>
      }
      %2 = arith.divf %ss_8, %cst_0 : tensor<16xf32>
      %3 = tt.splat %eps : f32 -> tensor<16xf32>
      %4 = arith.addf %2, %3 : tensor<16xf32>
      %5 = math.sqrt %4 : tensor<16xf32>
      %6 = arith.divf %cst_1, %5 : tensor<16xf32>
      scf.for %t = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
        %p = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %p_9 = arith.muli %p, %cst : tensor<16x1xi32>
        %p_10 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %p_11 = tt.addptr %p_10, %p_9 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %p_12 = arith.muli %t, %c16_i32 : i32
        %p_13 = tt.splat %p_12 : i32 -> tensor<16x1xi32>
        %p_14 = tt.addptr %p_11, %p_13 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %p_15 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %p_16 = tt.broadcast %p_14 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %p_17 = tt.broadcast %p_15 : tensor<1x16xi32> -> tensor<16x16xi32>
        %p_18 = tt.addptr %p_16, %p_17 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %7 = tt.load %p_18 : tensor<16x16x!tt.ptr<bf16>>
        %8 = arith.extf %7 : tensor<16x16xbf16> to tensor<16x16xf32>
        %9 = tt.expand_dims %6 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %10 = tt.broadcast %9 : tensor<16x1xf32> -> tensor<16x16xf32>
        %11 = arith.mulf %8, %10 : tensor<16x16xf32>
        %12 = arith.truncf %11 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %p_18, %12 : tensor<16x16x!tt.ptr<bf16>>
      }
    }
    tt.return
  }
}

// -----

// Four heads (softmax). With cluster-size=2 each CTA sums two heads of the prologue, stepping 2.
// CHECK-LABEL: tt.func public @fna_four_heads
// CHECK-SAME: normfuse.cluster_dims = 4
// TWO-LABEL: tt.func public @fna_four_heads
// TWO-SAME: normfuse.cluster_dims = 2
// TWO: %[[RANK:.+]] = arith.remsi
// TWO: scf.for %{{.+}} = %[[RANK]] to %c4_i32 step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<16xf32>, tensor<16xf32>)
// TWO: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// TWO: scf.for %{{.+}} = %[[RANK]] to %c4_i32 step
// TWO: tt.dot
// REMARK: applied: 2 prologue row statistics (a sum over the same 4 tiles

module {
  tt.func public @fna_four_heads(%X: !tt.ptr<bf16>, %K: !tt.ptr<bf16>, %V: !tt.ptr<bf16>, %OFFS: !tt.ptr<i32>, %BLOCKS: !tt.ptr<i32>, %LNW: !tt.ptr<bf16>, %LNB: !tt.ptr<bf16>, %RMSW: !tt.ptr<bf16>, %OUT: !tt.ptr<bf16>, %MEAN: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %RRMS: !tt.ptr<f32>, %nbatch: i32, %qk_scale: f32, %eps: f32, %rms_eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<64> : tensor<16xi64>
    %shift = arith.constant dense<0.000000e+00> : tensor<16xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_2 = arith.constant dense<0xFF800000> : tensor<16xf32>
    %cst_3 = arith.constant dense<32> : tensor<32xi32>
    %cst_4 = arith.constant dense<64> : tensor<32x1xi32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %cst_6 = arith.constant dense<0xFF800000> : tensor<16x32xf32>
    %cst_7 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %cst_8 = arith.constant dense<0.000000e+00> : tensor<32x16xbf16>
    %cst_9 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_10 = arith.constant 1.44269502 : f32
    %cst_11 = arith.constant dense<1.562500e-02> : tensor<16xf32>
    %kv_base = arith.constant 2048 : i64
    %c4_i32 = arith.constant 4 : i32
    %c16_i32 = arith.constant 16 : i32
    %c1_i32 = arith.constant 1 : i32
    %c2_i32 = arith.constant 2 : i32
    %c2147483647_i32 = arith.constant 2147483647 : i32
    %c0_i32 = arith.constant 0 : i32
    %pid = tt.get_program_id x : i32
    %first = arith.cmpi sgt, %nbatch, %c4_i32 : i32
    %first_12 = tt.addptr %BLOCKS, %c4_i32 : !tt.ptr<i32>, i32
    %first_13 = tt.load %first_12, %first, %c2147483647_i32 : !tt.ptr<i32>
    %b = arith.cmpi sle, %first_13, %pid : i32
    %b_14 = arith.select %b, %c4_i32, %c0_i32 : i32
    %cand = arith.addi %b_14, %c2_i32 : i32
    %first_15 = arith.cmpi slt, %cand, %nbatch : i32
    %first_16 = tt.addptr %BLOCKS, %cand : !tt.ptr<i32>, i32
    %first_17 = tt.load %first_16, %first_15, %c2147483647_i32 : !tt.ptr<i32>
    %b_18 = arith.cmpi sle, %first_17, %pid : i32
    %b_19 = arith.select %b_18, %cand, %b_14 : i32
    %cand_20 = arith.addi %b_19, %c1_i32 : i32
    %first_21 = arith.cmpi slt, %cand_20, %nbatch : i32
    %first_22 = tt.addptr %BLOCKS, %cand_20 : !tt.ptr<i32>, i32
    %first_23 = tt.load %first_22, %first_21, %c2147483647_i32 : !tt.ptr<i32>
    %b_24 = arith.cmpi sle, %first_23, %pid : i32
    %b_25 = arith.select %b_24, %cand_20, %b_19 : i32
    %start = tt.addptr %OFFS, %b_25 : !tt.ptr<i32>, i32
    %start_26 = tt.load %start : !tt.ptr<i32>
    %end = tt.addptr %start, %c1_i32 : !tt.ptr<i32>, i32
    %end_27 = tt.load %end : !tt.ptr<i32>
    %row0 = tt.addptr %BLOCKS, %b_25 : !tt.ptr<i32>, i32
    %row0_28 = tt.load %row0 : !tt.ptr<i32>
    %row0_29 = arith.subi %pid, %row0_28 : i32
    %row0_30 = arith.muli %row0_29, %c16_i32 : i32
    %row0_31 = arith.addi %start_26, %row0_30 : i32
    %rows = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_32 = tt.splat %row0_31 : i32 -> tensor<16xi32>
    %rows_33 = arith.addi %rows_32, %rows : tensor<16xi32>
    %rmask = tt.splat %end_27 : i32 -> tensor<16xi32>
    %rmask_34 = arith.cmpi slt, %rows_33, %rmask : tensor<16xi32>
    %xrow = arith.extsi %rows_33 : tensor<16xi32> to tensor<16xi64>
    %xrow_35 = arith.muli %xrow, %cst : tensor<16xi64>
    %xrow_36 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %xrow_37 = tt.addptr %xrow_36, %xrow_35 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
    %shift_38 = tt.load %xrow_37, %rmask_34, %shift : tensor<16x!tt.ptr<bf16>>
    %shift_39 = arith.extf %shift_38 : tensor<16xbf16> to tensor<16xf32>
    %s2:2 = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%s1 = %cst_1, %s2_58 = %cst_1) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rmask_34 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %x_59 = tt.expand_dims %xrow_37 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_60 = arith.muli %h, %c16_i32 : i32
      %x_61 = tt.splat %x_60 : i32 -> tensor<16x1xi32>
      %x_62 = tt.addptr %x_59, %x_61 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_63 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_64 = tt.broadcast %x_62 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_65 = tt.broadcast %x_63 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_66 = tt.addptr %x_64, %x_65 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_67 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_68 = tt.load %x_66, %x_67, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %xc = arith.extf %x_68 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xc_69 = tt.expand_dims %shift_39 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xc_70 = tt.broadcast %xc_69 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xc_71 = arith.subf %xc, %xc_70 : tensor<16x16xf32>
      %s1_72 = "tt.reduce"(%xc_71) <{axis = 1 : i32}> ({
      ^bb0(%s1_77: f32, %s1_78: f32):
        %s1_79 = arith.addf %s1_77, %s1_78 : f32
        tt.reduce.return %s1_79 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s1_73 = arith.addf %s1, %s1_72 : tensor<16xf32>
      %s2_74 = arith.mulf %xc_71, %xc_71 : tensor<16x16xf32>
      %s2_75 = "tt.reduce"(%s2_74) <{axis = 1 : i32}> ({
      ^bb0(%s2_77: f32, %s2_78: f32):
        %s2_79 = arith.addf %s2_77, %s2_78 : f32
        tt.reduce.return %s2_79 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s2_76 = arith.addf %s2_58, %s2_75 : tensor<16xf32>
      scf.yield %s1_73, %s2_76 : tensor<16xf32>, tensor<16xf32>
    }
    %orow = tt.splat %OUT : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %orow_40 = tt.addptr %orow, %xrow_35 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
    %kv_base_41 = arith.extsi %b_25 : i32 to i64
    %kv_base_42 = arith.muli %kv_base_41, %kv_base : i64
    %m1 = arith.mulf %s2#0, %cst_11 : tensor<16xf32>
    %mean = math.fma %s2#0, %cst_11, %shift_39 : tensor<16xf32>
    %rstd = arith.mulf %m1, %m1 : tensor<16xf32>
    %rstd_43 = arith.subf %cst_1, %rstd : tensor<16xf32>
    %rstd_44 = math.fma %s2#1, %cst_11, %rstd_43 : tensor<16xf32>
    %rstd_45 = arith.maxnumf %rstd_44, %cst_1 : tensor<16xf32>
    %rstd_46 = tt.splat %eps : f32 -> tensor<16xf32>
    %rstd_47 = arith.addf %rstd_45, %rstd_46 : tensor<16xf32>
    %rstd_48 = math.rsqrt %rstd_47 : tensor<16xf32>
    %rq = arith.cmpf ogt, %s2#1, %cst_1 : tensor<16xf32>
    %rq_49 = arith.cmpf une, %s2#0, %cst_1 : tensor<16xf32>
    %rq_50 = arith.ori %rq, %rq_49 : tensor<16xi1>
    %rq_51 = arith.select %rq_50, %rstd_48, %cst_1 : tensor<16xi1>, tensor<16xf32>
    %nmr = arith.mulf %mean, %rq_51 : tensor<16xf32>
    %nmr_52 = arith.subf %cst_1, %nmr : tensor<16xf32>
    %rqs = arith.mulf %qk_scale, %cst_10 : f32
    %rqs_53 = tt.splat %rqs : f32 -> tensor<16xf32>
    %rqs_54 = arith.mulf %rq_51, %rqs_53 : tensor<16xf32>
    %nmrs = arith.mulf %mean, %rqs_54 : tensor<16xf32>
    %nmrs_55 = arith.subf %cst_1, %nmrs : tensor<16xf32>
    %ss = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_58 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %cols = arith.muli %h, %c16_i32 : i32
      %cols_59 = tt.splat %cols : i32 -> tensor<16xi32>
      %cols_60 = arith.addi %cols_59, %rows : tensor<16xi32>
      %x = tt.expand_dims %rmask_34 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %x_61 = tt.expand_dims %xrow_37 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_62 = tt.expand_dims %cols_60 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_63 = tt.broadcast %x_61 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_64 = tt.broadcast %x_62 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_65 = tt.addptr %x_63, %x_64 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_66 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_67 = tt.load %x_65, %x_66, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %x_68 = arith.extf %x_67 : tensor<16x16xbf16> to tensor<16x16xf32>
      %q = tt.expand_dims %rq_51 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %q_69 = tt.expand_dims %nmr_52 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %q_70 = tt.broadcast %q : tensor<16x1xf32> -> tensor<16x16xf32>
      %q_71 = tt.broadcast %q_69 : tensor<16x1xf32> -> tensor<16x16xf32>
      %q_72 = math.fma %x_68, %q_70, %q_71 : tensor<16x16xf32>
      %qh = tt.expand_dims %rqs_54 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %qh_73 = tt.expand_dims %nmrs_55 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %qh_74 = tt.broadcast %qh : tensor<16x1xf32> -> tensor<16x16xf32>
      %qh_75 = tt.broadcast %qh_73 : tensor<16x1xf32> -> tensor<16x16xf32>
      %qh_76 = math.fma %x_68, %qh_74, %qh_75 : tensor<16x16xf32>
      %qh_77 = arith.truncf %qh_76 : tensor<16x16xf32> to tensor<16x16xbf16>
      %kvh = arith.extsi %cols : i32 to i64
      %kvh_78 = arith.addi %kv_base_42, %kvh : i64
      %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %nmask = arith.cmpi slt, %offs_n, %cst_3 : tensor<32xi32>
      %kv_off = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %kv_off_79 = arith.muli %kv_off, %cst_4 : tensor<32x1xi32>
      %kv_off_80 = arith.extsi %kv_off_79 : tensor<32x1xi32> to tensor<32x1xi64>
      %kv_off_81 = tt.splat %kvh_78 : i64 -> tensor<32x1xi64>
      %kv_off_82 = arith.addi %kv_off_81, %kv_off_80 : tensor<32x1xi64>
      %kv_off_83 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %kv_off_84 = arith.extsi %kv_off_83 : tensor<1x16xi32> to tensor<1x16xi64>
      %kv_off_85 = tt.broadcast %kv_off_82 : tensor<32x1xi64> -> tensor<32x16xi64>
      %kv_off_86 = tt.broadcast %kv_off_84 : tensor<1x16xi64> -> tensor<32x16xi64>
      %kv_off_87 = arith.addi %kv_off_85, %kv_off_86 : tensor<32x16xi64>
      %k = tt.expand_dims %nmask {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
      %k_88 = tt.splat %K : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
      %k_89 = tt.addptr %k_88, %kv_off_87 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
      %k_90 = tt.broadcast %k : tensor<32x1xi1> -> tensor<32x16xi1>
      %k_91 = tt.load %k_89, %k_90, %cst_8 : tensor<32x16x!tt.ptr<bf16>>
      %v = tt.splat %V : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
      %v_92 = tt.addptr %v, %kv_off_87 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
      %v_93 = tt.load %v_92, %k_90, %cst_8 : tensor<32x16x!tt.ptr<bf16>>
      %s = tt.trans %k_91 {order = array<i32: 1, 0>} : tensor<32x16xbf16> -> tensor<16x32xbf16>
      %s_94 = tt.dot %qh_77, %s, %cst_5, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x32xbf16> -> tensor<16x32xf32>
      %s_95 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %s_96 = tt.broadcast %s_95 : tensor<1x32xi1> -> tensor<16x32xi1>
      %s_97 = arith.select %s_96, %s_94, %cst_6 : tensor<16x32xi1>, tensor<16x32xf32>
      %m_new = "tt.reduce"(%s_97) <{axis = 1 : i32}> ({
      ^bb0(%m_new_110: f32, %m_new_111: f32):
        %m_new_112 = arith.maxnumf %m_new_110, %m_new_111 : f32
        tt.reduce.return %m_new_112 : f32
      }) : (tensor<16x32xf32>) -> tensor<16xf32>
      %m_new_98 = arith.maxnumf %m_new, %cst_2 : tensor<16xf32>
      %p = tt.expand_dims %m_new_98 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %p_99 = tt.broadcast %p : tensor<16x1xf32> -> tensor<16x32xf32>
      %p_100 = arith.subf %s_97, %p_99 : tensor<16x32xf32>
      %p_101 = math.exp2 %p_100 : tensor<16x32xf32>
      %l_i = "tt.reduce"(%p_101) <{axis = 1 : i32}> ({
      ^bb0(%l_i_110: f32, %l_i_111: f32):
        %l_i_112 = arith.addf %l_i_110, %l_i_111 : f32
        tt.reduce.return %l_i_112 : f32
      }) : (tensor<16x32xf32>) -> tensor<16xf32>
      %acc = arith.truncf %p_101 : tensor<16x32xf32> to tensor<16x32xbf16>
      %acc_102 = tt.dot %acc, %v_93, %cst_9, inputPrecision = tf32 : tensor<16x32xbf16> * tensor<32x16xbf16> -> tensor<16x16xf32>
      %acc_103 = arith.divf %cst_7, %l_i : tensor<16xf32>
      %acc_104 = tt.expand_dims %acc_103 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %acc_105 = tt.broadcast %acc_104 : tensor<16x1xf32> -> tensor<16x16xf32>
      %acc_106 = arith.mulf %acc_102, %acc_105 : tensor<16x16xf32>
      %z = arith.addf %acc_106, %q_72 : tensor<16x16xf32>
      %ss_107 = arith.mulf %z, %z : tensor<16x16xf32>
      %ss_108 = "tt.reduce"(%ss_107) <{axis = 1 : i32}> ({
      ^bb0(%ss_110: f32, %ss_111: f32):
        %ss_112 = arith.addf %ss_110, %ss_111 : f32
        tt.reduce.return %ss_112 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_109 = arith.addf %ss_58, %ss_108 : tensor<16xf32>
      %6 = tt.expand_dims %orow_40 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %7 = tt.broadcast %6 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %8 = tt.addptr %7, %x_64 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %9 = arith.truncf %z : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %8, %9, %x_66 : tensor<16x16x!tt.ptr<bf16>>
      scf.yield %ss_109 : tensor<16xf32>
    }
    %rrms = tt.splat %rms_eps : f32 -> tensor<16xf32>
    %rrms_56 = math.fma %ss, %cst_11, %rrms : tensor<16xf32>
    %rrms_57 = math.rsqrt %rrms_56 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %cols = arith.muli %h, %c16_i32 : i32
      %cols_58 = tt.splat %cols : i32 -> tensor<16xi32>
      %cols_59 = arith.addi %cols_58, %rows : tensor<16xi32>
      %z = tt.expand_dims %rmask_34 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %z_60 = tt.expand_dims %orow_40 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %z_61 = tt.expand_dims %cols_59 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %z_62 = tt.broadcast %z_60 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %z_63 = tt.broadcast %z_61 : tensor<1x16xi32> -> tensor<16x16xi32>
      %z_64 = tt.addptr %z_62, %z_63 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %z_65 = tt.broadcast %z : tensor<16x1xi1> -> tensor<16x16xi1>
      %z_66 = tt.load %z_64, %z_65, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %z_67 = arith.extf %z_66 : tensor<16x16xbf16> to tensor<16x16xf32>
      %x = tt.expand_dims %xrow_37 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_68 = tt.broadcast %x : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_69 = tt.addptr %x_68, %z_63 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_70 = tt.load %x_69, %z_65, %cst_0 : tensor<16x16x!tt.ptr<bf16>>
      %x_71 = arith.extf %x_70 : tensor<16x16xbf16> to tensor<16x16xf32>
      %y = tt.expand_dims %rrms_57 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_72 = tt.broadcast %y : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_73 = arith.mulf %z_67, %y_72 : tensor<16x16xf32>
      %6 = arith.addf %y_73, %x_71 : tensor<16x16xf32>
      %7 = arith.truncf %6 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %z_64, %7, %z_65 : tensor<16x16x!tt.ptr<bf16>>
    }
    %0 = tt.splat %MEAN : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %1 = tt.addptr %0, %rows_33 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %1, %mean, %rmask_34 : tensor<16x!tt.ptr<f32>>
    %2 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %3 = tt.addptr %2, %rows_33 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %3, %rstd_48, %rmask_34 : tensor<16x!tt.ptr<f32>>
    %4 = tt.splat %RRMS : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %5 = tt.addptr %4, %rows_33 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %5, %rrms_57, %rmask_34 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// A store in the prologue loop: it stays whole (every CTA sums all tiles); the epilogue splits.
// CHECK-LABEL: tt.func public @negative_prologue_store
// CHECK-SAME: normfuse.cluster_dims = 2
// CHECK: scf.for %{{.+}} = %c0_i32 to %c2_i32 step %c1_i32 iter_args
// CHECK: tt.store
// REMARK: missed: prologue row statistics not split: 'tt.store' with side effects in the loop
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster

module {
  tt.func public @negative_prologue_store(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %S: !tt.ptr<f32>, %eps: f32) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %cst = arith.constant dense<32> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<3.200000e+01> : tensor<16xf32>
    %cst_1 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %c0_i32 = arith.constant 0 : i32
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %ss_3 = arith.constant dense<16> : tensor<16x1xi32>
    %0 = tt.get_program_id x : i32
    %rows = arith.muli %0, %c16_i32 : i32
    %rows_4 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_5 = tt.splat %rows : i32 -> tensor<16xi32>
    %rows_6 = arith.addi %rows_5, %rows_4 : tensor<16xi32>
    %s = scf.for %t = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_10 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_12 = tt.addptr %x_11, %x_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_13 = arith.muli %t, %c16_i32 : i32
      %x_14 = tt.splat %x_13 : i32 -> tensor<16x1xi32>
      %x_15 = tt.addptr %x_12, %x_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_16 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_17 = tt.broadcast %x_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_18 = tt.broadcast %x_16 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_19 = tt.addptr %x_17, %x_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_20 = tt.load %x_19 : tensor<16x16x!tt.ptr<bf16>>
      %x_21 = arith.extf %x_20 : tensor<16x16xbf16> to tensor<16x16xf32>
      %s_22 = "tt.reduce"(%x_21) <{axis = 1 : i32}> ({
      ^bb0(%s_24: f32, %s_25: f32):
        %s_26 = arith.addf %s_24, %s_25 : f32
        tt.reduce.return %s_26 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s_23 = arith.addf %s_9, %s_22 : tensor<16xf32>
      %6 = tt.splat %S : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %7 = tt.addptr %6, %rows_6 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %7, %s_23 : tensor<16x!tt.ptr<f32>>
      scf.yield %s_23 : tensor<16xf32>
    }
    %ss_7 = arith.divf %s, %cst_0 : tensor<16xf32>
    %ss_8 = scf.for %t = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
      %a = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_10 = arith.muli %a, %cst : tensor<16x1xi32>
      %a_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_12 = tt.addptr %a_11, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_13 = arith.muli %t, %c16_i32 : i32
      %a_14 = tt.splat %a_13 : i32 -> tensor<16x1xi32>
      %a_15 = tt.addptr %a_12, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_16 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %a_17 = tt.broadcast %a_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_18 = tt.broadcast %a_16 : tensor<1x16xi32> -> tensor<16x16xi32>
      %a_19 = tt.addptr %a_17, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_20 = tt.load %a_19 : tensor<16x16x!tt.ptr<bf16>>
      %acc = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %acc_21 = arith.muli %acc, %ss_3 : tensor<16x1xi32>
      %acc_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %acc_23 = tt.addptr %acc_22, %acc_21 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %acc_24 = tt.broadcast %acc_23 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %acc_25 = tt.addptr %acc_24, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %acc_26 = tt.load %acc_25 : tensor<16x16x!tt.ptr<bf16>>
      %acc_27 = tt.dot %a_20, %acc_26, %ss, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      %acc_28 = tt.expand_dims %ss_7 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %acc_29 = tt.broadcast %acc_28 : tensor<16x1xf32> -> tensor<16x16xf32>
      %acc_30 = arith.subf %acc_27, %acc_29 : tensor<16x16xf32>
      %ss_31 = arith.mulf %acc_30, %acc_30 : tensor<16x16xf32>
      %ss_32 = "tt.reduce"(%ss_31) <{axis = 1 : i32}> ({
      ^bb0(%ss_40: f32, %ss_41: f32):
        %ss_42 = arith.addf %ss_40, %ss_41 : f32
        tt.reduce.return %ss_42 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_33 = arith.addf %ss_9, %ss_32 : tensor<16xf32>
      %ss_34 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %ss_35 = tt.addptr %ss_34, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %ss_36 = tt.addptr %ss_35, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %ss_37 = tt.broadcast %ss_36 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %ss_38 = tt.addptr %ss_37, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %ss_39 = arith.truncf %acc_30 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %ss_38, %ss_39 : tensor<16x16x!tt.ptr<bf16>>
      scf.yield %ss_33 : tensor<16xf32>
    }
    %1 = arith.divf %ss_8, %cst_0 : tensor<16xf32>
    %2 = tt.splat %eps : f32 -> tensor<16xf32>
    %3 = arith.addf %1, %2 : tensor<16xf32>
    %4 = math.sqrt %3 : tensor<16xf32>
    %5 = arith.divf %cst_1, %4 : tensor<16xf32>
    scf.for %t = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %p = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %p_9 = arith.muli %p, %cst : tensor<16x1xi32>
      %p_10 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %p_11 = tt.addptr %p_10, %p_9 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %p_12 = arith.muli %t, %c16_i32 : i32
      %p_13 = tt.splat %p_12 : i32 -> tensor<16x1xi32>
      %p_14 = tt.addptr %p_11, %p_13 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %p_15 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %p_16 = tt.broadcast %p_14 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %p_17 = tt.broadcast %p_15 : tensor<1x16xi32> -> tensor<16x16xi32>
      %p_18 = tt.addptr %p_16, %p_17 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %6 = tt.load %p_18 : tensor<16x16x!tt.ptr<bf16>>
      %7 = arith.extf %6 : tensor<16x16xbf16> to tensor<16x16xf32>
      %8 = tt.expand_dims %5 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %9 = tt.broadcast %8 : tensor<16x1xf32> -> tensor<16x16xf32>
      %10 = arith.mulf %7, %9 : tensor<16x16xf32>
      %11 = arith.truncf %10 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %p_18, %11 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// The prologue runs three trips, the GEMM loop two: not the same tiles.
// CHECK-LABEL: tt.func public @negative_prologue_trips
// CHECK: scf.for %{{.+}} = %c0_i32 to %c3_i32 step %c1_i32 iter_args
// REMARK: missed: prologue row statistics not split: its 3 trips differ from the GEMM loop's 2

module {
  tt.func public @negative_prologue_trips(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %S: !tt.ptr<f32>, %eps: f32) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %cst = arith.constant dense<32> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<3.200000e+01> : tensor<16xf32>
    %cst_1 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %c0_i32 = arith.constant 0 : i32
    %c3_i32 = arith.constant 3 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c2_i32 = arith.constant 2 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %ss_3 = arith.constant dense<16> : tensor<16x1xi32>
    %0 = tt.get_program_id x : i32
    %rows = arith.muli %0, %c16_i32 : i32
    %rows_4 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_5 = tt.splat %rows : i32 -> tensor<16xi32>
    %rows_6 = arith.addi %rows_5, %rows_4 : tensor<16xi32>
    %s = scf.for %t = %c0_i32 to %c3_i32 step %c1_i32 iter_args(%s_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_10 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_12 = tt.addptr %x_11, %x_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_13 = arith.muli %t, %c16_i32 : i32
      %x_14 = tt.splat %x_13 : i32 -> tensor<16x1xi32>
      %x_15 = tt.addptr %x_12, %x_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_16 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_17 = tt.broadcast %x_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_18 = tt.broadcast %x_16 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_19 = tt.addptr %x_17, %x_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_20 = tt.load %x_19 : tensor<16x16x!tt.ptr<bf16>>
      %x_21 = arith.extf %x_20 : tensor<16x16xbf16> to tensor<16x16xf32>
      %s_22 = "tt.reduce"(%x_21) <{axis = 1 : i32}> ({
      ^bb0(%s_24: f32, %s_25: f32):
        %s_26 = arith.addf %s_24, %s_25 : f32
        tt.reduce.return %s_26 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s_23 = arith.addf %s_9, %s_22 : tensor<16xf32>
      scf.yield %s_23 : tensor<16xf32>
    }
    %ss_7 = arith.divf %s, %cst_0 : tensor<16xf32>
    %ss_8 = scf.for %t = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
      %a = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_10 = arith.muli %a, %cst : tensor<16x1xi32>
      %a_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_12 = tt.addptr %a_11, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_13 = arith.muli %t, %c16_i32 : i32
      %a_14 = tt.splat %a_13 : i32 -> tensor<16x1xi32>
      %a_15 = tt.addptr %a_12, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_16 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %a_17 = tt.broadcast %a_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_18 = tt.broadcast %a_16 : tensor<1x16xi32> -> tensor<16x16xi32>
      %a_19 = tt.addptr %a_17, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_20 = tt.load %a_19 : tensor<16x16x!tt.ptr<bf16>>
      %acc = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %acc_21 = arith.muli %acc, %ss_3 : tensor<16x1xi32>
      %acc_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %acc_23 = tt.addptr %acc_22, %acc_21 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %acc_24 = tt.broadcast %acc_23 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %acc_25 = tt.addptr %acc_24, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %acc_26 = tt.load %acc_25 : tensor<16x16x!tt.ptr<bf16>>
      %acc_27 = tt.dot %a_20, %acc_26, %ss, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      %acc_28 = tt.expand_dims %ss_7 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %acc_29 = tt.broadcast %acc_28 : tensor<16x1xf32> -> tensor<16x16xf32>
      %acc_30 = arith.subf %acc_27, %acc_29 : tensor<16x16xf32>
      %ss_31 = arith.mulf %acc_30, %acc_30 : tensor<16x16xf32>
      %ss_32 = "tt.reduce"(%ss_31) <{axis = 1 : i32}> ({
      ^bb0(%ss_40: f32, %ss_41: f32):
        %ss_42 = arith.addf %ss_40, %ss_41 : f32
        tt.reduce.return %ss_42 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_33 = arith.addf %ss_9, %ss_32 : tensor<16xf32>
      %ss_34 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %ss_35 = tt.addptr %ss_34, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %ss_36 = tt.addptr %ss_35, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %ss_37 = tt.broadcast %ss_36 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %ss_38 = tt.addptr %ss_37, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %ss_39 = arith.truncf %acc_30 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %ss_38, %ss_39 : tensor<16x16x!tt.ptr<bf16>>
      scf.yield %ss_33 : tensor<16xf32>
    }
    %1 = arith.divf %ss_8, %cst_0 : tensor<16xf32>
    %2 = tt.splat %eps : f32 -> tensor<16xf32>
    %3 = arith.addf %1, %2 : tensor<16xf32>
    %4 = math.sqrt %3 : tensor<16xf32>
    %5 = arith.divf %cst_1, %4 : tensor<16xf32>
    scf.for %t = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %p = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %p_9 = arith.muli %p, %cst : tensor<16x1xi32>
      %p_10 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %p_11 = tt.addptr %p_10, %p_9 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %p_12 = arith.muli %t, %c16_i32 : i32
      %p_13 = tt.splat %p_12 : i32 -> tensor<16x1xi32>
      %p_14 = tt.addptr %p_11, %p_13 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %p_15 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %p_16 = tt.broadcast %p_14 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %p_17 = tt.broadcast %p_15 : tensor<1x16xi32> -> tensor<16x16xi32>
      %p_18 = tt.addptr %p_16, %p_17 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %6 = tt.load %p_18 : tensor<16x16x!tt.ptr<bf16>>
      %7 = arith.extf %6 : tensor<16x16xbf16> to tensor<16x16xf32>
      %8 = tt.expand_dims %5 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %9 = tt.broadcast %8 : tensor<16x1xf32> -> tensor<16x16xf32>
      %10 = arith.mulf %7, %9 : tensor<16x16xf32>
      %11 = arith.truncf %10 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %p_18, %11 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// A running max, not a sum: it does not split over the CTAs' partial sums.
// CHECK-LABEL: tt.func public @negative_prologue_max
// CHECK: scf.for %{{.+}} = %c0_i32 to %c2_i32 step %c1_i32 iter_args
// REMARK: missed: prologue row statistics not split: row statistic %{{.+}} is not a sum over tiles

module {
  tt.func public @negative_prologue_max(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %S: !tt.ptr<f32>, %eps: f32) attributes {noinline = false} {
    %c16_i32 = arith.constant 16 : i32
    %cst = arith.constant dense<32> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<3.200000e+01> : tensor<16xf32>
    %cst_1 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %c0_i32 = arith.constant 0 : i32
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %ss_3 = arith.constant dense<16> : tensor<16x1xi32>
    %0 = tt.get_program_id x : i32
    %rows = arith.muli %0, %c16_i32 : i32
    %rows_4 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_5 = tt.splat %rows : i32 -> tensor<16xi32>
    %rows_6 = arith.addi %rows_5, %rows_4 : tensor<16xi32>
    %s = scf.for %t = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_10 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_12 = tt.addptr %x_11, %x_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_13 = arith.muli %t, %c16_i32 : i32
      %x_14 = tt.splat %x_13 : i32 -> tensor<16x1xi32>
      %x_15 = tt.addptr %x_12, %x_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_16 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_17 = tt.broadcast %x_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_18 = tt.broadcast %x_16 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_19 = tt.addptr %x_17, %x_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_20 = tt.load %x_19 : tensor<16x16x!tt.ptr<bf16>>
      %x_21 = arith.extf %x_20 : tensor<16x16xbf16> to tensor<16x16xf32>
      %s_22 = "tt.reduce"(%x_21) <{axis = 1 : i32}> ({
      ^bb0(%s_24: f32, %s_25: f32):
        %s_26 = arith.maxnumf %s_24, %s_25 : f32
        tt.reduce.return %s_26 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s_23 = arith.maxnumf %s_9, %s_22 : tensor<16xf32>
      scf.yield %s_23 : tensor<16xf32>
    }
    %ss_7 = arith.divf %s, %cst_0 : tensor<16xf32>
    %ss_8 = scf.for %t = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_9 = %cst_2) -> (tensor<16xf32>)  : i32 {
      %a = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %a_10 = arith.muli %a, %cst : tensor<16x1xi32>
      %a_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %a_12 = tt.addptr %a_11, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_13 = arith.muli %t, %c16_i32 : i32
      %a_14 = tt.splat %a_13 : i32 -> tensor<16x1xi32>
      %a_15 = tt.addptr %a_12, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %a_16 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %a_17 = tt.broadcast %a_15 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %a_18 = tt.broadcast %a_16 : tensor<1x16xi32> -> tensor<16x16xi32>
      %a_19 = tt.addptr %a_17, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %a_20 = tt.load %a_19 : tensor<16x16x!tt.ptr<bf16>>
      %acc = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %acc_21 = arith.muli %acc, %ss_3 : tensor<16x1xi32>
      %acc_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %acc_23 = tt.addptr %acc_22, %acc_21 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %acc_24 = tt.broadcast %acc_23 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %acc_25 = tt.addptr %acc_24, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %acc_26 = tt.load %acc_25 : tensor<16x16x!tt.ptr<bf16>>
      %acc_27 = tt.dot %a_20, %acc_26, %ss, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      %acc_28 = tt.expand_dims %ss_7 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %acc_29 = tt.broadcast %acc_28 : tensor<16x1xf32> -> tensor<16x16xf32>
      %acc_30 = arith.subf %acc_27, %acc_29 : tensor<16x16xf32>
      %ss_31 = arith.mulf %acc_30, %acc_30 : tensor<16x16xf32>
      %ss_32 = "tt.reduce"(%ss_31) <{axis = 1 : i32}> ({
      ^bb0(%ss_40: f32, %ss_41: f32):
        %ss_42 = arith.addf %ss_40, %ss_41 : f32
        tt.reduce.return %ss_42 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_33 = arith.addf %ss_9, %ss_32 : tensor<16xf32>
      %ss_34 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %ss_35 = tt.addptr %ss_34, %a_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %ss_36 = tt.addptr %ss_35, %a_14 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %ss_37 = tt.broadcast %ss_36 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %ss_38 = tt.addptr %ss_37, %a_18 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %ss_39 = arith.truncf %acc_30 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %ss_38, %ss_39 : tensor<16x16x!tt.ptr<bf16>>
      scf.yield %ss_33 : tensor<16xf32>
    }
    %1 = arith.divf %ss_8, %cst_0 : tensor<16xf32>
    %2 = tt.splat %eps : f32 -> tensor<16xf32>
    %3 = arith.addf %1, %2 : tensor<16xf32>
    %4 = math.sqrt %3 : tensor<16xf32>
    %5 = arith.divf %cst_1, %4 : tensor<16xf32>
    scf.for %t = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %p = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %p_9 = arith.muli %p, %cst : tensor<16x1xi32>
      %p_10 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %p_11 = tt.addptr %p_10, %p_9 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %p_12 = arith.muli %t, %c16_i32 : i32
      %p_13 = tt.splat %p_12 : i32 -> tensor<16x1xi32>
      %p_14 = tt.addptr %p_11, %p_13 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %p_15 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %p_16 = tt.broadcast %p_14 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %p_17 = tt.broadcast %p_15 : tensor<1x16xi32> -> tensor<16x16xi32>
      %p_18 = tt.addptr %p_16, %p_17 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %6 = tt.load %p_18 : tensor<16x16x!tt.ptr<bf16>>
      %7 = arith.extf %6 : tensor<16x16xbf16> to tensor<16x16xf32>
      %8 = tt.expand_dims %5 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %9 = tt.broadcast %8 : tensor<16x1xf32> -> tensor<16x16xf32>
      %10 = arith.mulf %7, %9 : tensor<16x16xf32>
      %11 = arith.truncf %10 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %p_18, %11 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}
