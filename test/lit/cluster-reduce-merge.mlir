// cluster-reduce{merge=true}: one cluster exchange a row block in FlashNormAttention's walk. The
// kernel's STATS_AHEAD walk sums row block i + 1's LayerNorm statistics between block i's
// attention (the GEMM loop) and its normalizing loop, and carries them to the next trip; merge
// deals that loop like the GEMM loop and exchanges its partials with the GEMM loop's in one
// exchange (after it), and the loop before the walk (the first block's) in one exchange before
// it (slot set 1, row block -1's). One chunk per case, positive cases first, then the bail-outs.
// Inputs: TTIR from test/lit/inputs/flash_norm_attention_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{merge=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>&1 >/dev/null | FileCheck %s --check-prefix=NOMERGE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{merge=true,gather=once,early-loads=true},epilogue-norm' %s 2>/dev/null | FileCheck %s --check-prefix=PIPE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{merge=true},epilogue-norm,reuse-loads{across-dots=true,across-trips=values}' %s 2>%t.carry | FileCheck %s --check-prefix=CARRY
// RUN: FileCheck %s --check-prefix=CARRY-REMARK < %t.carry

// Two heads walking 32 rows in 16-row blocks. Three statistics a slot set (the RMSNorm's sum
// and the next block's two LayerNorm sums: 3 x 16 rows x 4 B = 192 B), two sets (384 B). The
// first block's LayerNorm sums exchange before the walk, in set 1 (rows + 48 words); in the walk
// one exchange a row block, after the attention's dots, carries all three (slots 0, 64, 128);
// the walk yields the next block's totals. The barrier after the walk keeps the slots alive.
// CHECK-LABEL: tt.func public @fna_ahead_two_heads
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 384 : i32
// CHECK: %[[RANK:.+]] = arith.remsi
// CHECK: %[[SET1:.+]] = arith.addi %{{.+}}, %cst{{.*}} : tensor<16xi32>
// CHECK-NEXT: tt.elementwise_inline_asm "{{.*}}sub.u32 %nfa, %nfa, 384;{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3; mov{{.*}}%[[SET1]]
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: %[[PRE:.+]]:2 = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}%[[SET1]]
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %[[PRE]]#0, %{{.+}} = %[[PRE]]#1) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK-NOT: barrier.cluster
// CHECK: tt.dot
// CHECK-NOT: barrier.cluster
// CHECK: tt.dot
// CHECK-NOT: barrier.cluster
// CHECK: arith.andi %{{.+}}, %c1_i32
// CHECK: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3; st.shared.f32 [%nfa+128], $4;
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: %[[TOT:.+]]:3 = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+128]
// CHECK-NOT: barrier.cluster
// CHECK: scf.yield %{{.+}}, %[[TOT]]#1, %[[TOT]]#2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: tt.return
// REMARK: applied: merge: 2 row statistics of 1 loop between the GEMM loop and the normalizing loop (sums over the same tiles: the next row block's in a software-pipelined walk) exchanged with the GEMM loop's 1 in one exchange; 2 of the loop before the walk exchanged once before it
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 1 row statistic exchanged through distributed shared memory (384 B per CTA)
// Without merge the walk's carried statistics are refused: the IR stays as it is.
// NOMERGE: missed: the loop over row blocks carries values across row blocks (merge=true takes a walk that carries its next row block's statistics)
// With the default pipeline's options: the exchange's barrier split (early-loads), the totals
// gathered once, and epilogue-norm forwarding z in registers across the next block's sums.
// PIPE-LABEL: tt.func public @fna_ahead_two_heads
// PIPE: scf.for
// PIPE: tt.dot
// PIPE: tt.dot
// PIPE-NOT: barrier.cluster.wait
// PIPE: barrier.cluster.arrive.release; mov
// PIPE-NOT: barrier.cluster.arrive
// PIPE: barrier.cluster.wait.acquire; mov
// PIPE-NOT: barrier.cluster
// PIPE: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: scf.yield

module {
  tt.func public @fna_ahead_two_heads(%X: !tt.ptr<bf16>, %K: !tt.ptr<bf16>, %V: !tt.ptr<bf16>, %OFFS: !tt.ptr<i32>, %BLOCKS: !tt.ptr<i32>, %LNW: !tt.ptr<bf16>, %LNB: !tt.ptr<bf16>, %RMSW: !tt.ptr<bf16>, %OUT: !tt.ptr<bf16>, %MEAN: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %RRMS: !tt.ptr<f32>, %nbatch: i32, %qk_scale: f32, %eps: f32, %rms_eps: f32) attributes {noinline = false} {
    %c1024_i64 = arith.constant 1024 : i64
    %cst = arith.constant dense<3.125000e-02> : tensor<16xf32>
    %cst_0 = arith.constant 5.000000e-01 : f32
    %cst_1 = arith.constant dense<0.0356774069> : tensor<16x32xf32>
    %cst_2 = arith.constant dense<0.797884583> : tensor<16x32xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32x16xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %cst_5 = arith.constant dense<32> : tensor<32x1xi32>
    %cst_6 = arith.constant dense<32> : tensor<32xi32>
    %cst_7 = arith.constant dense<32> : tensor<16xi64>
    %cst_8 = arith.constant dense<0.000000e+00> : tensor<16xbf16>
    %c0_i32 = arith.constant 0 : i32
    %cst_9 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %cst_10 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c32_i32 = arith.constant 32 : i32
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %c3_i32 = arith.constant 3 : i32
    %pid = tt.get_program_id x : i32
    %b = arith.muli %pid, %c3_i32 : i32
    %b_11 = tt.addptr %BLOCKS, %b : !tt.ptr<i32>, i32
    %b_12 = tt.load %b_11 : !tt.ptr<i32>
    %row0 = tt.addptr %b_11, %c1_i32 : !tt.ptr<i32>, i32
    %row0_13 = tt.load %row0 : !tt.ptr<i32>
    %end = tt.addptr %b_11, %c2_i32 : !tt.ptr<i32>, i32
    %end_14 = tt.load %end : !tt.ptr<i32>
    %stop = arith.addi %row0_13, %c32_i32 : i32
    %stop_15 = arith.minsi %end_14, %stop : i32
    %rows = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_16 = tt.splat %row0_13 : i32 -> tensor<16xi32>
    %rows_17 = arith.addi %rows_16, %rows : tensor<16xi32>
    %rmask = tt.splat %stop_15 : i32 -> tensor<16xi32>
    %rmask_18 = arith.cmpi slt, %rows_17, %rmask : tensor<16xi32>
    %xrow = arith.extsi %rows_17 : tensor<16xi32> to tensor<16xi64>
    %xrow_19 = arith.muli %xrow, %cst_7 : tensor<16xi64>
    %xrow_20 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %xrow_21 = tt.addptr %xrow_20, %xrow_19 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
    %shift = tt.load %xrow_21, %rmask_18, %cst_8 : tensor<16x!tt.ptr<bf16>>
    %shift_22 = arith.extf %shift : tensor<16xbf16> to tensor<16xf32>
    %s2:2 = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s1 = %cst_10, %s2_24 = %cst_10) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rmask_18 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %x_25 = tt.expand_dims %xrow_21 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_26 = arith.muli %h, %c16_i32 : i32
      %x_27 = tt.splat %x_26 : i32 -> tensor<16x1xi32>
      %x_28 = tt.addptr %x_25, %x_27 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_29 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_30 = tt.broadcast %x_28 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_31 = tt.broadcast %x_29 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_32 = tt.addptr %x_30, %x_31 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_33 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_34 = tt.load %x_32, %x_33, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
      %xc = arith.extf %x_34 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xc_35 = tt.expand_dims %shift_22 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xc_36 = tt.broadcast %xc_35 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xc_37 = arith.subf %xc, %xc_36 : tensor<16x16xf32>
      %s1_38 = "tt.reduce"(%xc_37) <{axis = 1 : i32}> ({
      ^bb0(%s1_43: f32, %s1_44: f32):
        %s1_45 = arith.addf %s1_43, %s1_44 : f32
        tt.reduce.return %s1_45 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s1_39 = arith.addf %s1, %s1_38 : tensor<16xf32>
      %s2_40 = arith.mulf %xc_37, %xc_37 : tensor<16x16xf32>
      %s2_41 = "tt.reduce"(%s2_40) <{axis = 1 : i32}> ({
      ^bb0(%s2_43: f32, %s2_44: f32):
        %s2_45 = arith.addf %s2_43, %s2_44 : f32
        tt.reduce.return %s2_45 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s2_42 = arith.addf %s2_24, %s2_41 : tensor<16xf32>
      scf.yield %s1_39, %s2_42 : tensor<16xf32>, tensor<16xf32>
    }
    %s2_23:3 = scf.for %row0_24 = %row0_13 to %stop_15 step %c16_i32 iter_args(%shift_25 = %shift_22, %s1 = %s2#0, %s2_26 = %s2#1) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)  : i32 {
      %rows_27 = tt.splat %row0_24 : i32 -> tensor<16xi32>
      %rows_28 = arith.addi %rows_27, %rows : tensor<16xi32>
      %rmask_29 = arith.cmpi slt, %rows_28, %rmask : tensor<16xi32>
      %xrow_30 = arith.extsi %rows_28 : tensor<16xi32> to tensor<16xi64>
      %xrow_31 = arith.muli %xrow_30, %cst_7 : tensor<16xi64>
      %xrow_32 = tt.addptr %xrow_20, %xrow_31 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
      %orow = tt.splat %OUT : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %orow_33 = tt.addptr %orow, %xrow_31 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
      %kv_base = arith.extsi %b_12 : i32 to i64
      %kv_base_34 = arith.muli %kv_base, %c1024_i64 : i64
      %m1 = arith.mulf %s1, %cst : tensor<16xf32>
      %mean = math.fma %s1, %cst, %shift_25 : tensor<16xf32>
      %rstd = arith.mulf %m1, %m1 : tensor<16xf32>
      %rstd_35 = arith.subf %cst_10, %rstd : tensor<16xf32>
      %rstd_36 = math.fma %s2_26, %cst, %rstd_35 : tensor<16xf32>
      %rstd_37 = arith.maxnumf %rstd_36, %cst_10 : tensor<16xf32>
      %rstd_38 = tt.splat %eps : f32 -> tensor<16xf32>
      %rstd_39 = arith.addf %rstd_37, %rstd_38 : tensor<16xf32>
      %rstd_40 = math.rsqrt %rstd_39 : tensor<16xf32>
      %rq = arith.cmpf ogt, %s2_26, %cst_10 : tensor<16xf32>
      %rq_41 = arith.cmpf une, %s1, %cst_10 : tensor<16xf32>
      %rq_42 = arith.ori %rq, %rq_41 : tensor<16xi1>
      %rq_43 = arith.select %rq_42, %rstd_40, %cst_10 : tensor<16xi1>, tensor<16xf32>
      %nmr = arith.mulf %mean, %rq_43 : tensor<16xf32>
      %nmr_44 = arith.subf %cst_10, %nmr : tensor<16xf32>
      %ss = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_56 = %cst_10) -> (tensor<16xf32>)  : i32 {
        %cols = arith.muli %h, %c16_i32 : i32
        %cols_57 = tt.splat %cols : i32 -> tensor<16xi32>
        %cols_58 = arith.addi %cols_57, %rows : tensor<16xi32>
        %x = tt.expand_dims %rmask_29 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %x_59 = tt.expand_dims %xrow_32 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %x_60 = tt.expand_dims %cols_58 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %x_61 = tt.broadcast %x_59 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %x_62 = tt.broadcast %x_60 : tensor<1x16xi32> -> tensor<16x16xi32>
        %x_63 = tt.addptr %x_61, %x_62 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %x_64 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
        %x_65 = tt.load %x_63, %x_64, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %x_66 = arith.extf %x_65 : tensor<16x16xbf16> to tensor<16x16xf32>
        %q = tt.expand_dims %rq_43 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %q_67 = tt.expand_dims %nmr_44 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %q_68 = tt.broadcast %q : tensor<16x1xf32> -> tensor<16x16xf32>
        %q_69 = tt.broadcast %q_67 : tensor<16x1xf32> -> tensor<16x16xf32>
        %q_70 = math.fma %x_66, %q_68, %q_69 : tensor<16x16xf32>
        %qh = arith.truncf %q_70 : tensor<16x16xf32> to tensor<16x16xbf16>
        %kvh = arith.extsi %cols : i32 to i64
        %kvh_71 = arith.addi %kv_base_34, %kvh : i64
        %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
        %nmask = arith.cmpi slt, %offs_n, %cst_6 : tensor<32xi32>
        %kv_off = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %kv_off_72 = arith.muli %kv_off, %cst_5 : tensor<32x1xi32>
        %kv_off_73 = arith.extsi %kv_off_72 : tensor<32x1xi32> to tensor<32x1xi64>
        %kv_off_74 = tt.splat %kvh_71 : i64 -> tensor<32x1xi64>
        %kv_off_75 = arith.addi %kv_off_74, %kv_off_73 : tensor<32x1xi64>
        %kv_off_76 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %kv_off_77 = arith.extsi %kv_off_76 : tensor<1x16xi32> to tensor<1x16xi64>
        %kv_off_78 = tt.broadcast %kv_off_75 : tensor<32x1xi64> -> tensor<32x16xi64>
        %kv_off_79 = tt.broadcast %kv_off_77 : tensor<1x16xi64> -> tensor<32x16xi64>
        %kv_off_80 = arith.addi %kv_off_78, %kv_off_79 : tensor<32x16xi64>
        %k = tt.expand_dims %nmask {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
        %k_81 = tt.splat %K : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
        %k_82 = tt.addptr %k_81, %kv_off_80 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
        %k_83 = tt.broadcast %k : tensor<32x1xi1> -> tensor<32x16xi1>
        %k_84 = tt.load %k_82, %k_83, %cst_3 : tensor<32x16x!tt.ptr<bf16>>
        %v = tt.splat %V : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
        %v_85 = tt.addptr %v, %kv_off_80 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
        %v_86 = tt.load %v_85, %k_83, %cst_3 : tensor<32x16x!tt.ptr<bf16>>
        %s = tt.trans %k_84 {order = array<i32: 1, 0>} : tensor<32x16xbf16> -> tensor<16x32xbf16>
        %s_87 = tt.dot %qh, %s, %cst_4, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x32xbf16> -> tensor<16x32xf32>
        %p = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %h_88 = arith.mulf %qk_scale, %cst_0 : f32
        %h_89 = tt.splat %h_88 : f32 -> tensor<16x32xf32>
        %h_90 = arith.mulf %s_87, %h_89 : tensor<16x32xf32>
        %p_91 = arith.mulf %s_87, %s_87 : tensor<16x32xf32>
        %p_92 = math.fma %p_91, %cst_1, %cst_2 : tensor<16x32xf32>
        %p_93 = arith.mulf %s_87, %p_92 : tensor<16x32xf32>
        %p_94 = tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %p_93 : tensor<16x32xf32> -> tensor<16x32xf32>
        %p_95 = math.fma %h_90, %p_94, %h_90 : tensor<16x32xf32>
        %p_96 = tt.broadcast %p : tensor<1x32xi1> -> tensor<16x32xi1>
        %p_97 = arith.select %p_96, %p_95, %cst_4 : tensor<16x32xi1>, tensor<16x32xf32>
        %acc = arith.truncf %p_97 : tensor<16x32xf32> to tensor<16x32xbf16>
        %acc_98 = tt.dot %acc, %v_86, %q_70, inputPrecision = tf32 : tensor<16x32xbf16> * tensor<32x16xbf16> -> tensor<16x16xf32>
        %ss_99 = arith.mulf %acc_98, %acc_98 : tensor<16x16xf32>
        %ss_100 = "tt.reduce"(%ss_99) <{axis = 1 : i32}> ({
        ^bb0(%ss_102: f32, %ss_103: f32):
          %ss_104 = arith.addf %ss_102, %ss_103 : f32
          tt.reduce.return %ss_104 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %ss_101 = arith.addf %ss_56, %ss_100 : tensor<16xf32>
        %7 = tt.expand_dims %orow_33 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %8 = tt.broadcast %7 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %9 = tt.addptr %8, %x_62 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %10 = arith.truncf %acc_98 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %9, %10, %x_64 : tensor<16x16x!tt.ptr<bf16>>
        scf.yield %ss_101 : tensor<16xf32>
      }
      %0 = arith.addi %row0_24, %c16_i32 : i32
      %rows_45 = tt.splat %0 : i32 -> tensor<16xi32>
      %rows_46 = arith.addi %rows_45, %rows : tensor<16xi32>
      %rmask_47 = arith.cmpi slt, %rows_46, %rmask : tensor<16xi32>
      %xrow_48 = arith.extsi %rows_46 : tensor<16xi32> to tensor<16xi64>
      %xrow_49 = arith.muli %xrow_48, %cst_7 : tensor<16xi64>
      %xrow_50 = tt.addptr %xrow_20, %xrow_49 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
      %shift_51 = tt.load %xrow_50, %rmask_47, %cst_8 : tensor<16x!tt.ptr<bf16>>
      %shift_52 = arith.extf %shift_51 : tensor<16xbf16> to tensor<16xf32>
      %s2_53:2 = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s1_56 = %cst_10, %s2_57 = %cst_10) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
        %x = tt.expand_dims %rmask_47 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %x_58 = tt.expand_dims %xrow_50 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %x_59 = arith.muli %h, %c16_i32 : i32
        %x_60 = tt.splat %x_59 : i32 -> tensor<16x1xi32>
        %x_61 = tt.addptr %x_58, %x_60 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %x_62 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %x_63 = tt.broadcast %x_61 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %x_64 = tt.broadcast %x_62 : tensor<1x16xi32> -> tensor<16x16xi32>
        %x_65 = tt.addptr %x_63, %x_64 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %x_66 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
        %x_67 = tt.load %x_65, %x_66, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %xc = arith.extf %x_67 : tensor<16x16xbf16> to tensor<16x16xf32>
        %xc_68 = tt.expand_dims %shift_52 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %xc_69 = tt.broadcast %xc_68 : tensor<16x1xf32> -> tensor<16x16xf32>
        %xc_70 = arith.subf %xc, %xc_69 : tensor<16x16xf32>
        %s1_71 = "tt.reduce"(%xc_70) <{axis = 1 : i32}> ({
        ^bb0(%s1_76: f32, %s1_77: f32):
          %s1_78 = arith.addf %s1_76, %s1_77 : f32
          tt.reduce.return %s1_78 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %s1_72 = arith.addf %s1_56, %s1_71 : tensor<16xf32>
        %s2_73 = arith.mulf %xc_70, %xc_70 : tensor<16x16xf32>
        %s2_74 = "tt.reduce"(%s2_73) <{axis = 1 : i32}> ({
        ^bb0(%s2_76: f32, %s2_77: f32):
          %s2_78 = arith.addf %s2_76, %s2_77 : f32
          tt.reduce.return %s2_78 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %s2_75 = arith.addf %s2_57, %s2_74 : tensor<16xf32>
        scf.yield %s1_72, %s2_75 : tensor<16xf32>, tensor<16xf32>
      }
      %rrms = tt.splat %rms_eps : f32 -> tensor<16xf32>
      %rrms_54 = math.fma %ss, %cst, %rrms : tensor<16xf32>
      %rrms_55 = math.rsqrt %rrms_54 : tensor<16xf32>
      scf.for %h = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
        %cols = arith.muli %h, %c16_i32 : i32
        %cols_56 = tt.splat %cols : i32 -> tensor<16xi32>
        %cols_57 = arith.addi %cols_56, %rows : tensor<16xi32>
        %z = tt.expand_dims %rmask_29 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %z_58 = tt.expand_dims %orow_33 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %z_59 = tt.expand_dims %cols_57 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %z_60 = tt.broadcast %z_58 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %z_61 = tt.broadcast %z_59 : tensor<1x16xi32> -> tensor<16x16xi32>
        %z_62 = tt.addptr %z_60, %z_61 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %z_63 = tt.broadcast %z : tensor<16x1xi1> -> tensor<16x16xi1>
        %z_64 = tt.load %z_62, %z_63, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %z_65 = arith.extf %z_64 : tensor<16x16xbf16> to tensor<16x16xf32>
        %x = tt.expand_dims %xrow_32 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %x_66 = tt.broadcast %x : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %x_67 = tt.addptr %x_66, %z_61 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %x_68 = tt.load %x_67, %z_63, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %x_69 = arith.extf %x_68 : tensor<16x16xbf16> to tensor<16x16xf32>
        %y = tt.expand_dims %rrms_55 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %y_70 = tt.broadcast %y : tensor<16x1xf32> -> tensor<16x16xf32>
        %y_71 = arith.mulf %z_65, %y_70 : tensor<16x16xf32>
        %7 = arith.addf %y_71, %x_69 : tensor<16x16xf32>
        %8 = arith.truncf %7 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %z_62, %8, %z_63 : tensor<16x16x!tt.ptr<bf16>>
      }
      %1 = tt.splat %MEAN : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %2 = tt.addptr %1, %rows_28 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %2, %mean, %rmask_29 : tensor<16x!tt.ptr<f32>>
      %3 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %rows_28 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %4, %rstd_40, %rmask_29 : tensor<16x!tt.ptr<f32>>
      %5 = tt.splat %RRMS : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %6 = tt.addptr %5, %rows_28 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %6, %rrms_55, %rmask_29 : tensor<16x!tt.ptr<f32>>
      scf.yield %shift_52, %s2_53#0, %s2_53#1 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
    }
    tt.return
  }
}

// -----

// The carry form (STATS_AHEAD = 2, the LayerNorm in the MMA layout): after merge, the walk's
// trip loads the next block's x tile for its sums and converts it (`_in_mma`: a dot of zeros
// onto it); the next trip loaded and converted the same tile again for q and the residuals.
// reuse-loads{across-trips=values} carries the converted tile (fp32) instead: its start is the
// first block's conversion before the walk, the trip yields the next block's, and the walk's
// body has one load of x's tile and one conversion.
// CARRY-LABEL: tt.func public @fna_carry_two_heads
// CARRY: %[[X0:.+]] = tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: %[[C0:.+]] = tt.dot %cst{{.*}}, %cst{{.*}}, %{{.+}} : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
// CARRY: scf.for %{{.+}} iter_args(%{{.+}}, %{{.+}}, %{{.+}}, %[[ARG:.+]] = %[[C0]]) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>)
// CARRY-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: math.fma %[[ARG]],
// CARRY: tt.dot
// CARRY: tt.dot
// CARRY: %[[XN:.+]] = tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: %[[CN:.+]] = tt.dot %cst{{.*}}, %cst{{.*}}, %{{.+}} : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
// CARRY-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: scf.yield %{{.+}}, %{{.+}}, %{{.+}}, %[[CN]] :
// CARRY-REMARK: applied: across-trips: 1 value (of {{.+}}) takes what the previous trip of the loop computed from the same addresses

module {
  tt.func public @fna_carry_two_heads(%X: !tt.ptr<bf16>, %K: !tt.ptr<bf16>, %V: !tt.ptr<bf16>, %OFFS: !tt.ptr<i32>, %BLOCKS: !tt.ptr<i32>, %LNW: !tt.ptr<bf16>, %LNB: !tt.ptr<bf16>, %RMSW: !tt.ptr<bf16>, %OUT: !tt.ptr<bf16>, %MEAN: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %RRMS: !tt.ptr<f32>, %nbatch: i32, %qk_scale: f32, %eps: f32, %rms_eps: f32) attributes {noinline = false} {
    %c1024_i64 = arith.constant 1024 : i64
    %cst = arith.constant dense<3.125000e-02> : tensor<16xf32>
    %cst_0 = arith.constant 5.000000e-01 : f32
    %cst_1 = arith.constant dense<0.0356774069> : tensor<16x32xf32>
    %cst_2 = arith.constant dense<0.797884583> : tensor<16x32xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32x16xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %cst_5 = arith.constant dense<32> : tensor<32x1xi32>
    %cst_6 = arith.constant dense<32> : tensor<32xi32>
    %cst_7 = arith.constant dense<32> : tensor<16xi64>
    %cst_8 = arith.constant dense<0.000000e+00> : tensor<16xbf16>
    %c0_i32 = arith.constant 0 : i32
    %cst_9 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %cst_10 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %c32_i32 = arith.constant 32 : i32
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %c3_i32 = arith.constant 3 : i32
    %pid = tt.get_program_id x : i32
    %b = arith.muli %pid, %c3_i32 : i32
    %b_11 = tt.addptr %BLOCKS, %b : !tt.ptr<i32>, i32
    %b_12 = tt.load %b_11 : !tt.ptr<i32>
    %row0 = tt.addptr %b_11, %c1_i32 : !tt.ptr<i32>, i32
    %row0_13 = tt.load %row0 : !tt.ptr<i32>
    %end = tt.addptr %b_11, %c2_i32 : !tt.ptr<i32>, i32
    %end_14 = tt.load %end : !tt.ptr<i32>
    %stop = arith.addi %row0_13, %c32_i32 : i32
    %stop_15 = arith.minsi %end_14, %stop : i32
    %rows = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_16 = tt.splat %row0_13 : i32 -> tensor<16xi32>
    %rows_17 = arith.addi %rows_16, %rows : tensor<16xi32>
    %rmask = tt.splat %stop_15 : i32 -> tensor<16xi32>
    %rmask_18 = arith.cmpi slt, %rows_17, %rmask : tensor<16xi32>
    %xrow = arith.extsi %rows_17 : tensor<16xi32> to tensor<16xi64>
    %xrow_19 = arith.muli %xrow, %cst_7 : tensor<16xi64>
    %xrow_20 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %xrow_21 = tt.addptr %xrow_20, %xrow_19 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
    %shift = tt.load %xrow_21, %rmask_18, %cst_8 : tensor<16x!tt.ptr<bf16>>
    %shift_22 = arith.extf %shift : tensor<16xbf16> to tensor<16xf32>
    %s2:2 = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s1 = %cst_10, %s2_24 = %cst_10) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rmask_18 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
      %x_25 = tt.expand_dims %xrow_21 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
      %x_26 = arith.muli %h, %c16_i32 : i32
      %x_27 = tt.splat %x_26 : i32 -> tensor<16x1xi32>
      %x_28 = tt.addptr %x_25, %x_27 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_29 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_30 = tt.broadcast %x_28 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_31 = tt.broadcast %x_29 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_32 = tt.addptr %x_30, %x_31 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_33 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_34 = tt.load %x_32, %x_33, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
      %xc = arith.extf %x_34 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xc_35 = tt.dot %cst_9, %cst_9, %xc, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
      %xc_36 = tt.expand_dims %shift_22 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xc_37 = tt.broadcast %xc_36 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xc_38 = arith.subf %xc_35, %xc_37 : tensor<16x16xf32>
      %s1_39 = "tt.reduce"(%xc_38) <{axis = 1 : i32}> ({
      ^bb0(%s1_44: f32, %s1_45: f32):
        %s1_46 = arith.addf %s1_44, %s1_45 : f32
        tt.reduce.return %s1_46 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s1_40 = arith.addf %s1, %s1_39 : tensor<16xf32>
      %s2_41 = arith.mulf %xc_38, %xc_38 : tensor<16x16xf32>
      %s2_42 = "tt.reduce"(%s2_41) <{axis = 1 : i32}> ({
      ^bb0(%s2_44: f32, %s2_45: f32):
        %s2_46 = arith.addf %s2_44, %s2_45 : f32
        tt.reduce.return %s2_46 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s2_43 = arith.addf %s2_24, %s2_42 : tensor<16xf32>
      scf.yield %s1_40, %s2_43 : tensor<16xf32>, tensor<16xf32>
    }
    %s2_23:3 = scf.for %row0_24 = %row0_13 to %stop_15 step %c16_i32 iter_args(%shift_25 = %shift_22, %s1 = %s2#0, %s2_26 = %s2#1) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)  : i32 {
      %rows_27 = tt.splat %row0_24 : i32 -> tensor<16xi32>
      %rows_28 = arith.addi %rows_27, %rows : tensor<16xi32>
      %rmask_29 = arith.cmpi slt, %rows_28, %rmask : tensor<16xi32>
      %xrow_30 = arith.extsi %rows_28 : tensor<16xi32> to tensor<16xi64>
      %xrow_31 = arith.muli %xrow_30, %cst_7 : tensor<16xi64>
      %xrow_32 = tt.addptr %xrow_20, %xrow_31 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
      %orow = tt.splat %OUT : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %orow_33 = tt.addptr %orow, %xrow_31 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
      %kv_base = arith.extsi %b_12 : i32 to i64
      %kv_base_34 = arith.muli %kv_base, %c1024_i64 : i64
      %m1 = arith.mulf %s1, %cst : tensor<16xf32>
      %mean = math.fma %s1, %cst, %shift_25 : tensor<16xf32>
      %rstd = arith.mulf %m1, %m1 : tensor<16xf32>
      %rstd_35 = arith.subf %cst_10, %rstd : tensor<16xf32>
      %rstd_36 = math.fma %s2_26, %cst, %rstd_35 : tensor<16xf32>
      %rstd_37 = arith.maxnumf %rstd_36, %cst_10 : tensor<16xf32>
      %rstd_38 = tt.splat %eps : f32 -> tensor<16xf32>
      %rstd_39 = arith.addf %rstd_37, %rstd_38 : tensor<16xf32>
      %rstd_40 = math.rsqrt %rstd_39 : tensor<16xf32>
      %rq = arith.cmpf ogt, %s2_26, %cst_10 : tensor<16xf32>
      %rq_41 = arith.cmpf une, %s1, %cst_10 : tensor<16xf32>
      %rq_42 = arith.ori %rq, %rq_41 : tensor<16xi1>
      %rq_43 = arith.select %rq_42, %rstd_40, %cst_10 : tensor<16xi1>, tensor<16xf32>
      %nmr = arith.mulf %mean, %rq_43 : tensor<16xf32>
      %nmr_44 = arith.subf %cst_10, %nmr : tensor<16xf32>
      %ss = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_56 = %cst_10) -> (tensor<16xf32>)  : i32 {
        %cols = arith.muli %h, %c16_i32 : i32
        %cols_57 = tt.splat %cols : i32 -> tensor<16xi32>
        %cols_58 = arith.addi %cols_57, %rows : tensor<16xi32>
        %xb = tt.expand_dims %rmask_29 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %xb_59 = tt.expand_dims %xrow_32 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %xb_60 = tt.expand_dims %cols_58 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %xb_61 = tt.broadcast %xb_59 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %xb_62 = tt.broadcast %xb_60 : tensor<1x16xi32> -> tensor<16x16xi32>
        %xb_63 = tt.addptr %xb_61, %xb_62 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %xb_64 = tt.broadcast %xb : tensor<16x1xi1> -> tensor<16x16xi1>
        %xb_65 = tt.load %xb_63, %xb_64, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %x = arith.extf %xb_65 : tensor<16x16xbf16> to tensor<16x16xf32>
        %x_66 = tt.dot %cst_9, %cst_9, %x, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %q = tt.expand_dims %rq_43 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %q_67 = tt.expand_dims %nmr_44 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %q_68 = tt.broadcast %q : tensor<16x1xf32> -> tensor<16x16xf32>
        %q_69 = tt.broadcast %q_67 : tensor<16x1xf32> -> tensor<16x16xf32>
        %q_70 = math.fma %x_66, %q_68, %q_69 : tensor<16x16xf32>
        %qh = arith.truncf %q_70 : tensor<16x16xf32> to tensor<16x16xbf16>
        %kvh = arith.extsi %cols : i32 to i64
        %kvh_71 = arith.addi %kv_base_34, %kvh : i64
        %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
        %nmask = arith.cmpi slt, %offs_n, %cst_6 : tensor<32xi32>
        %kv_off = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %kv_off_72 = arith.muli %kv_off, %cst_5 : tensor<32x1xi32>
        %kv_off_73 = arith.extsi %kv_off_72 : tensor<32x1xi32> to tensor<32x1xi64>
        %kv_off_74 = tt.splat %kvh_71 : i64 -> tensor<32x1xi64>
        %kv_off_75 = arith.addi %kv_off_74, %kv_off_73 : tensor<32x1xi64>
        %kv_off_76 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %kv_off_77 = arith.extsi %kv_off_76 : tensor<1x16xi32> to tensor<1x16xi64>
        %kv_off_78 = tt.broadcast %kv_off_75 : tensor<32x1xi64> -> tensor<32x16xi64>
        %kv_off_79 = tt.broadcast %kv_off_77 : tensor<1x16xi64> -> tensor<32x16xi64>
        %kv_off_80 = arith.addi %kv_off_78, %kv_off_79 : tensor<32x16xi64>
        %k = tt.expand_dims %nmask {axis = 1 : i32} : tensor<32xi1> -> tensor<32x1xi1>
        %k_81 = tt.splat %K : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
        %k_82 = tt.addptr %k_81, %kv_off_80 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
        %k_83 = tt.broadcast %k : tensor<32x1xi1> -> tensor<32x16xi1>
        %k_84 = tt.load %k_82, %k_83, %cst_3 : tensor<32x16x!tt.ptr<bf16>>
        %v = tt.splat %V : !tt.ptr<bf16> -> tensor<32x16x!tt.ptr<bf16>>
        %v_85 = tt.addptr %v, %kv_off_80 : tensor<32x16x!tt.ptr<bf16>>, tensor<32x16xi64>
        %v_86 = tt.load %v_85, %k_83, %cst_3 : tensor<32x16x!tt.ptr<bf16>>
        %s = tt.trans %k_84 {order = array<i32: 1, 0>} : tensor<32x16xbf16> -> tensor<16x32xbf16>
        %s_87 = tt.dot %qh, %s, %cst_4, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x32xbf16> -> tensor<16x32xf32>
        %p = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %h_88 = arith.mulf %qk_scale, %cst_0 : f32
        %h_89 = tt.splat %h_88 : f32 -> tensor<16x32xf32>
        %h_90 = arith.mulf %s_87, %h_89 : tensor<16x32xf32>
        %p_91 = arith.mulf %s_87, %s_87 : tensor<16x32xf32>
        %p_92 = math.fma %p_91, %cst_1, %cst_2 : tensor<16x32xf32>
        %p_93 = arith.mulf %s_87, %p_92 : tensor<16x32xf32>
        %p_94 = tt.elementwise_inline_asm "tanh.approx.f32 $0, $1;" {constraints = "=f,f", packed_element = 1 : i32, pure = true} %p_93 : tensor<16x32xf32> -> tensor<16x32xf32>
        %p_95 = math.fma %h_90, %p_94, %h_90 : tensor<16x32xf32>
        %p_96 = tt.broadcast %p : tensor<1x32xi1> -> tensor<16x32xi1>
        %p_97 = arith.select %p_96, %p_95, %cst_4 : tensor<16x32xi1>, tensor<16x32xf32>
        %acc = arith.truncf %p_97 : tensor<16x32xf32> to tensor<16x32xbf16>
        %acc_98 = tt.dot %acc, %v_86, %q_70, inputPrecision = tf32 : tensor<16x32xbf16> * tensor<32x16xbf16> -> tensor<16x16xf32>
        %ss_99 = arith.mulf %acc_98, %acc_98 : tensor<16x16xf32>
        %ss_100 = "tt.reduce"(%ss_99) <{axis = 1 : i32}> ({
        ^bb0(%ss_102: f32, %ss_103: f32):
          %ss_104 = arith.addf %ss_102, %ss_103 : f32
          tt.reduce.return %ss_104 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %ss_101 = arith.addf %ss_56, %ss_100 : tensor<16xf32>
        %7 = tt.expand_dims %orow_33 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %8 = tt.broadcast %7 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %9 = tt.addptr %8, %xb_62 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %10 = arith.truncf %acc_98 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %9, %10, %xb_64 : tensor<16x16x!tt.ptr<bf16>>
        scf.yield %ss_101 : tensor<16xf32>
      }
      %0 = arith.addi %row0_24, %c16_i32 : i32
      %rows_45 = tt.splat %0 : i32 -> tensor<16xi32>
      %rows_46 = arith.addi %rows_45, %rows : tensor<16xi32>
      %rmask_47 = arith.cmpi slt, %rows_46, %rmask : tensor<16xi32>
      %xrow_48 = arith.extsi %rows_46 : tensor<16xi32> to tensor<16xi64>
      %xrow_49 = arith.muli %xrow_48, %cst_7 : tensor<16xi64>
      %xrow_50 = tt.addptr %xrow_20, %xrow_49 : tensor<16x!tt.ptr<bf16>>, tensor<16xi64>
      %shift_51 = tt.load %xrow_50, %rmask_47, %cst_8 : tensor<16x!tt.ptr<bf16>>
      %shift_52 = arith.extf %shift_51 : tensor<16xbf16> to tensor<16xf32>
      %s2_53:2 = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s1_56 = %cst_10, %s2_57 = %cst_10) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
        %x = tt.expand_dims %rmask_47 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %x_58 = tt.expand_dims %xrow_50 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %x_59 = arith.muli %h, %c16_i32 : i32
        %x_60 = tt.splat %x_59 : i32 -> tensor<16x1xi32>
        %x_61 = tt.addptr %x_58, %x_60 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %x_62 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %x_63 = tt.broadcast %x_61 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %x_64 = tt.broadcast %x_62 : tensor<1x16xi32> -> tensor<16x16xi32>
        %x_65 = tt.addptr %x_63, %x_64 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %x_66 = tt.broadcast %x : tensor<16x1xi1> -> tensor<16x16xi1>
        %x_67 = tt.load %x_65, %x_66, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %xc = arith.extf %x_67 : tensor<16x16xbf16> to tensor<16x16xf32>
        %xc_68 = tt.dot %cst_9, %cst_9, %xc, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %xc_69 = tt.expand_dims %shift_52 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %xc_70 = tt.broadcast %xc_69 : tensor<16x1xf32> -> tensor<16x16xf32>
        %xc_71 = arith.subf %xc_68, %xc_70 : tensor<16x16xf32>
        %s1_72 = "tt.reduce"(%xc_71) <{axis = 1 : i32}> ({
        ^bb0(%s1_77: f32, %s1_78: f32):
          %s1_79 = arith.addf %s1_77, %s1_78 : f32
          tt.reduce.return %s1_79 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %s1_73 = arith.addf %s1_56, %s1_72 : tensor<16xf32>
        %s2_74 = arith.mulf %xc_71, %xc_71 : tensor<16x16xf32>
        %s2_75 = "tt.reduce"(%s2_74) <{axis = 1 : i32}> ({
        ^bb0(%s2_77: f32, %s2_78: f32):
          %s2_79 = arith.addf %s2_77, %s2_78 : f32
          tt.reduce.return %s2_79 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %s2_76 = arith.addf %s2_57, %s2_75 : tensor<16xf32>
        scf.yield %s1_73, %s2_76 : tensor<16xf32>, tensor<16xf32>
      }
      %rrms = tt.splat %rms_eps : f32 -> tensor<16xf32>
      %rrms_54 = math.fma %ss, %cst, %rrms : tensor<16xf32>
      %rrms_55 = math.rsqrt %rrms_54 : tensor<16xf32>
      scf.for %h = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
        %cols = arith.muli %h, %c16_i32 : i32
        %cols_56 = tt.splat %cols : i32 -> tensor<16xi32>
        %cols_57 = arith.addi %cols_56, %rows : tensor<16xi32>
        %z = tt.expand_dims %rmask_29 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %z_58 = tt.expand_dims %orow_33 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %z_59 = tt.expand_dims %cols_57 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %z_60 = tt.broadcast %z_58 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %z_61 = tt.broadcast %z_59 : tensor<1x16xi32> -> tensor<16x16xi32>
        %z_62 = tt.addptr %z_60, %z_61 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %z_63 = tt.broadcast %z : tensor<16x1xi1> -> tensor<16x16xi1>
        %z_64 = tt.load %z_62, %z_63, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %z_65 = arith.extf %z_64 : tensor<16x16xbf16> to tensor<16x16xf32>
        %x = tt.expand_dims %xrow_32 {axis = 1 : i32} : tensor<16x!tt.ptr<bf16>> -> tensor<16x1x!tt.ptr<bf16>>
        %x_66 = tt.broadcast %x : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %x_67 = tt.addptr %x_66, %z_61 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %x_68 = tt.load %x_67, %z_63, %cst_9 : tensor<16x16x!tt.ptr<bf16>>
        %x_69 = arith.extf %x_68 : tensor<16x16xbf16> to tensor<16x16xf32>
        %x_70 = tt.dot %cst_9, %cst_9, %x_69, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %y = tt.expand_dims %rrms_55 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %y_71 = tt.broadcast %y : tensor<16x1xf32> -> tensor<16x16xf32>
        %y_72 = arith.mulf %z_65, %y_71 : tensor<16x16xf32>
        %7 = arith.addf %y_72, %x_70 : tensor<16x16xf32>
        %8 = arith.truncf %7 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %z_62, %8, %z_63 : tensor<16x16x!tt.ptr<bf16>>
      }
      %1 = tt.splat %MEAN : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %2 = tt.addptr %1, %rows_28 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %2, %mean, %rmask_29 : tensor<16x!tt.ptr<f32>>
      %3 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %rows_28 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %4, %rstd_40, %rmask_29 : tensor<16x!tt.ptr<f32>>
      %5 = tt.splat %RRMS : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %6 = tt.addptr %5, %rows_28 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      tt.store %6, %rrms_55, %rmask_29 : tensor<16x!tt.ptr<f32>>
      scf.yield %shift_52, %s2_53#0, %s2_53#1 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
    }
    tt.return
  }
}

// -----

// The walk in small (one sum a row, carried): one exchange a row block, the next block's sum
// with the GEMM loop's in slots 0 and 64; the first block's before the walk, in set 1.
// CHECK-LABEL: tt.func public @ahead_small
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: st.shared.f32 [%nfa+0], $2; mov
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: scf.for
// CHECK: tt.dot
// CHECK-NOT: barrier.cluster
// CHECK: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NOT: barrier.cluster
// CHECK: scf.yield
// REMARK: applied: merge: 1 row statistic of 1 loop between the GEMM loop and the normalizing loop (sums over the same tiles: the next row block's in a software-pipelined walk) exchanged with the GEMM loop's 1 in one exchange; 1 of the loop before the walk exchanged once before it

module {
  tt.func public @ahead_small(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %c4_i32 = arith.constant 4 : i32
    %c1_i32 = arith.constant 1 : i32
    %c2_i32 = arith.constant 2 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %cst_4 = arith.constant dense<64> : tensor<16xi32>
    %cst_5 = arith.constant dense<3.200000e+01> : tensor<16xf32>
    %cst_6 = arith.constant dense<32> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %cols = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %first = tt.get_program_id x : i32
    %step = tt.get_num_programs x : i32
    %rows = arith.muli %first, %c16_i32 : i32
    %rows_7 = tt.splat %rows : i32 -> tensor<16xi32>
    %rows_8 = arith.addi %rows_7, %cols : tensor<16xi32>
    %s = scf.for %t_9 = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s_10 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %s_11 = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %s_12 = arith.muli %s_11, %cst_6 : tensor<16x1xi32>
      %s_13 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %s_14 = tt.addptr %s_13, %s_12 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %s_15 = arith.muli %t_9, %c16_i32 : i32
      %s_16 = tt.splat %s_15 : i32 -> tensor<16x1xi32>
      %s_17 = tt.addptr %s_14, %s_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %s_18 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %s_19 = tt.broadcast %s_17 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %s_20 = tt.broadcast %s_18 : tensor<1x16xi32> -> tensor<16x16xi32>
      %s_21 = tt.addptr %s_19, %s_20 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %s_22 = tt.load %s_21 : tensor<16x16x!tt.ptr<bf16>>
      %s_23 = arith.extf %s_22 : tensor<16x16xbf16> to tensor<16x16xf32>
      %s_24 = "tt.reduce"(%s_23) <{axis = 1 : i32}> ({
      ^bb0(%s_26: f32, %s_27: f32):
        %s_28 = arith.addf %s_26, %s_27 : f32
        tt.reduce.return %s_28 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s_25 = arith.addf %s_10, %s_24 : tensor<16xf32>
      scf.yield %s_25 : tensor<16xf32>
    }
    %t = scf.for %t_9 = %first to %c4_i32 step %step iter_args(%s_10 = %s) -> (tensor<16xf32>)  : i32 {
      %rows_11 = arith.muli %t_9, %c16_i32 : i32
      %rows_12 = tt.splat %rows_11 : i32 -> tensor<16xi32>
      %rows_13 = arith.addi %rows_12, %cols : tensor<16xi32>
      %ss = arith.divf %s_10, %cst_5 : tensor<16xf32>
      %ss_14 = scf.for %t_18 = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_19 = %cst_1) -> (tensor<16xf32>)  : i32 {
        %a = tt.expand_dims %rows_13 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %a_20 = arith.muli %a, %cst_6 : tensor<16x1xi32>
        %a_21 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %a_22 = tt.addptr %a_21, %a_20 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %a_23 = arith.muli %t_18, %c16_i32 : i32
        %a_24 = tt.splat %a_23 : i32 -> tensor<16x1xi32>
        %a_25 = tt.addptr %a_22, %a_24 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %a_26 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %a_27 = tt.broadcast %a_25 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %a_28 = tt.broadcast %a_26 : tensor<1x16xi32> -> tensor<16x16xi32>
        %a_29 = tt.addptr %a_27, %a_28 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %a_30 = tt.load %a_29 : tensor<16x16x!tt.ptr<bf16>>
        %acc = tt.expand_dims %cols {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %acc_31 = arith.muli %acc, %cst : tensor<16x1xi32>
        %acc_32 = tt.splat %W : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %acc_33 = tt.addptr %acc_32, %acc_31 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %acc_34 = tt.broadcast %acc_33 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %acc_35 = tt.addptr %acc_34, %a_28 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %acc_36 = tt.load %acc_35 : tensor<16x16x!tt.ptr<bf16>>
        %acc_37 = tt.dot %a_30, %acc_36, %cst_0, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %acc_38 = tt.expand_dims %ss {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %acc_39 = tt.broadcast %acc_38 : tensor<16x1xf32> -> tensor<16x16xf32>
        %acc_40 = arith.subf %acc_37, %acc_39 : tensor<16x16xf32>
        %ss_41 = arith.mulf %acc_40, %acc_40 : tensor<16x16xf32>
        %ss_42 = "tt.reduce"(%ss_41) <{axis = 1 : i32}> ({
        ^bb0(%ss_50: f32, %ss_51: f32):
          %ss_52 = arith.addf %ss_50, %ss_51 : f32
          tt.reduce.return %ss_52 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %ss_43 = arith.addf %ss_19, %ss_42 : tensor<16xf32>
        %ss_44 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %ss_45 = tt.addptr %ss_44, %a_20 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %ss_46 = tt.addptr %ss_45, %a_24 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %ss_47 = tt.broadcast %ss_46 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %ss_48 = tt.addptr %ss_47, %a_28 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %ss_49 = arith.truncf %acc_40 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %ss_48, %ss_49 : tensor<16x16x!tt.ptr<bf16>>
        scf.yield %ss_43 : tensor<16xf32>
      }
      %nxt = arith.addi %t_9, %step : i32
      %nxt_15 = arith.muli %nxt, %c16_i32 : i32
      %nxt_16 = tt.splat %nxt_15 : i32 -> tensor<16xi32>
      %nxt_17 = arith.addi %nxt_16, %cols : tensor<16xi32>
      %live = arith.cmpi slt, %nxt_17, %cst_4 : tensor<16xi32>
      %sn = scf.for %t_18 = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%sn_19 = %cst_1) -> (tensor<16xf32>)  : i32 {
        %sn_20 = tt.expand_dims %live {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %sn_21 = tt.expand_dims %nxt_17 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %sn_22 = arith.muli %sn_21, %cst_6 : tensor<16x1xi32>
        %sn_23 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %sn_24 = tt.addptr %sn_23, %sn_22 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %sn_25 = arith.muli %t_18, %c16_i32 : i32
        %sn_26 = tt.splat %sn_25 : i32 -> tensor<16x1xi32>
        %sn_27 = tt.addptr %sn_24, %sn_26 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %sn_28 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %sn_29 = tt.broadcast %sn_27 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %sn_30 = tt.broadcast %sn_28 : tensor<1x16xi32> -> tensor<16x16xi32>
        %sn_31 = tt.addptr %sn_29, %sn_30 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %sn_32 = tt.broadcast %sn_20 : tensor<16x1xi1> -> tensor<16x16xi1>
        %sn_33 = tt.load %sn_31, %sn_32, %cst_2 : tensor<16x16x!tt.ptr<bf16>>
        %sn_34 = arith.extf %sn_33 : tensor<16x16xbf16> to tensor<16x16xf32>
        %sn_35 = "tt.reduce"(%sn_34) <{axis = 1 : i32}> ({
        ^bb0(%sn_37: f32, %sn_38: f32):
          %sn_39 = arith.addf %sn_37, %sn_38 : f32
          tt.reduce.return %sn_39 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %sn_36 = arith.addf %sn_19, %sn_35 : tensor<16xf32>
        scf.yield %sn_36 : tensor<16xf32>
      }
      %0 = arith.divf %ss_14, %cst_5 : tensor<16xf32>
      %1 = tt.splat %eps : f32 -> tensor<16xf32>
      %2 = arith.addf %0, %1 : tensor<16xf32>
      %3 = math.sqrt %2 : tensor<16xf32>
      %4 = arith.divf %cst_3, %3 : tensor<16xf32>
      scf.for %t_18 = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
        %p = tt.expand_dims %rows_13 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %p_19 = arith.muli %p, %cst_6 : tensor<16x1xi32>
        %p_20 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %p_21 = tt.addptr %p_20, %p_19 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %p_22 = arith.muli %t_18, %c16_i32 : i32
        %p_23 = tt.splat %p_22 : i32 -> tensor<16x1xi32>
        %p_24 = tt.addptr %p_21, %p_23 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %p_25 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %p_26 = tt.broadcast %p_24 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %p_27 = tt.broadcast %p_25 : tensor<1x16xi32> -> tensor<16x16xi32>
        %p_28 = tt.addptr %p_26, %p_27 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %5 = tt.load %p_28 : tensor<16x16x!tt.ptr<bf16>>
        %6 = arith.extf %5 : tensor<16x16xbf16> to tensor<16x16xf32>
        %7 = tt.expand_dims %4 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %8 = tt.broadcast %7 : tensor<16x1xf32> -> tensor<16x16xf32>
        %9 = arith.mulf %6, %8 : tensor<16x16xf32>
        %10 = arith.truncf %9 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %p_28, %10 : tensor<16x16x!tt.ptr<bf16>>
      }
      scf.yield %sn : tensor<16xf32>
    }
    tt.return
  }
}

// -----

// One row block a program (no walk: STATS_AHEAD has nothing to pipeline): merge finds no
// statistics loop after the GEMM loop and the two exchanges are built as without it.
// CHECK-LABEL: tt.func public @negative_merge_flat
// CHECK-SAME: normfuse.cluster_smem = 192 : i32
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.dot
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// REMARK: missed: merge: no statistics loop (sums over the same tiles) between the GEMM loop and the normalizing loop
// REMARK: applied: 2 prologue row statistics

module {
  tt.func public @negative_merge_flat(%X: !tt.ptr<bf16>, %K: !tt.ptr<bf16>, %V: !tt.ptr<bf16>, %OFFS: !tt.ptr<i32>, %BLOCKS: !tt.ptr<i32>, %LNW: !tt.ptr<bf16>, %LNB: !tt.ptr<bf16>, %RMSW: !tt.ptr<bf16>, %OUT: !tt.ptr<bf16>, %MEAN: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %RRMS: !tt.ptr<f32>, %nbatch: i32, %qk_scale: f32, %eps: f32, %rms_eps: f32) attributes {noinline = false} {
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

// Two statistics loops before the walk, the second centred on the mean of the first's sums (a
// two-pass variance). Their one exchange, after the last of them, would leave the mean reading
// partial sums: merge refuses, every statistics loop stays whole, and the walk keeps the GEMM
// loop's exchange alone (one barrier pair a row block, none before the walk).
// CHECK-LABEL: tt.func public @negative_merge_centred_pre
// CHECK-SAME: normfuse.cluster_smem = 128 : i32
// CHECK-NOT: barrier.cluster
// CHECK: arith.divf
// CHECK-NOT: barrier.cluster
// CHECK: tt.dot
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NOT: barrier.cluster
// CHECK: scf.yield
// REMARK: missed: merge: 'arith.divf' reads the row sums of a statistics loop before the walk before their exchange (one, after the last such loop) would total them; the statistics loops before the walk, and those after the GEMM loop, are left whole
// REMARK-NOT: applied: merge:
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster

module {
  tt.func public @negative_merge_centred_pre(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<16> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %c4_i32 = arith.constant 4 : i32
    %c1_i32 = arith.constant 1 : i32
    %c2_i32 = arith.constant 2 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %cst_4 = arith.constant dense<64> : tensor<16xi32>
    %cst_5 = arith.constant dense<3.200000e+01> : tensor<16xf32>
    %cst_6 = arith.constant dense<32> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %cols = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %first = tt.get_program_id x : i32
    %step = tt.get_num_programs x : i32
    %rows = arith.muli %first, %c16_i32 : i32
    %rows_7 = tt.splat %rows : i32 -> tensor<16xi32>
    %rows_8 = arith.addi %rows_7, %cols : tensor<16xi32>
    %s = scf.for %t_9 = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s_10 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %s_11 = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %s_12 = arith.muli %s_11, %cst_6 : tensor<16x1xi32>
      %s_13 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %s_14 = tt.addptr %s_13, %s_12 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %s_15 = arith.muli %t_9, %c16_i32 : i32
      %s_16 = tt.splat %s_15 : i32 -> tensor<16x1xi32>
      %s_17 = tt.addptr %s_14, %s_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %s_18 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %s_19 = tt.broadcast %s_17 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %s_20 = tt.broadcast %s_18 : tensor<1x16xi32> -> tensor<16x16xi32>
      %s_21 = tt.addptr %s_19, %s_20 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %s_22 = tt.load %s_21 : tensor<16x16x!tt.ptr<bf16>>
      %s_23 = arith.extf %s_22 : tensor<16x16xbf16> to tensor<16x16xf32>
      %s_24 = "tt.reduce"(%s_23) <{axis = 1 : i32}> ({
      ^bb0(%s_26: f32, %s_27: f32):
        %s_28 = arith.addf %s_26, %s_27 : f32
        tt.reduce.return %s_28 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s_25 = arith.addf %s_10, %s_24 : tensor<16xf32>
      scf.yield %s_25 : tensor<16xf32>
    }
    %m = arith.divf %s, %cst_5 : tensor<16xf32>
    %q = scf.for %t_9 = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%q_10 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %xc = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %xc_11 = arith.muli %xc, %cst_6 : tensor<16x1xi32>
      %xc_12 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %xc_13 = tt.addptr %xc_12, %xc_11 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %xc_14 = arith.muli %t_9, %c16_i32 : i32
      %xc_15 = tt.splat %xc_14 : i32 -> tensor<16x1xi32>
      %xc_16 = tt.addptr %xc_13, %xc_15 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %xc_17 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %xc_18 = tt.broadcast %xc_16 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %xc_19 = tt.broadcast %xc_17 : tensor<1x16xi32> -> tensor<16x16xi32>
      %xc_20 = tt.addptr %xc_18, %xc_19 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %xc_21 = tt.load %xc_20 : tensor<16x16x!tt.ptr<bf16>>
      %xc_22 = arith.extf %xc_21 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xc_23 = tt.expand_dims %m {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xc_24 = tt.broadcast %xc_23 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xc_25 = arith.subf %xc_22, %xc_24 : tensor<16x16xf32>
      %q_26 = arith.mulf %xc_25, %xc_25 : tensor<16x16xf32>
      %q_27 = "tt.reduce"(%q_26) <{axis = 1 : i32}> ({
      ^bb0(%q_29: f32, %q_30: f32):
        %q_31 = arith.addf %q_29, %q_30 : f32
        tt.reduce.return %q_31 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %q_28 = arith.addf %q_10, %q_27 : tensor<16xf32>
      scf.yield %q_28 : tensor<16xf32>
    }
    %t = scf.for %t_9 = %first to %c4_i32 step %step iter_args(%q_10 = %q) -> (tensor<16xf32>)  : i32 {
      %rows_11 = arith.muli %t_9, %c16_i32 : i32
      %rows_12 = tt.splat %rows_11 : i32 -> tensor<16xi32>
      %rows_13 = arith.addi %rows_12, %cols : tensor<16xi32>
      %ss = arith.divf %q_10, %cst_5 : tensor<16xf32>
      %ss_14 = scf.for %t_18 = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_19 = %cst_1) -> (tensor<16xf32>)  : i32 {
        %a = tt.expand_dims %rows_13 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %a_20 = arith.muli %a, %cst_6 : tensor<16x1xi32>
        %a_21 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %a_22 = tt.addptr %a_21, %a_20 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %a_23 = arith.muli %t_18, %c16_i32 : i32
        %a_24 = tt.splat %a_23 : i32 -> tensor<16x1xi32>
        %a_25 = tt.addptr %a_22, %a_24 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %a_26 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %a_27 = tt.broadcast %a_25 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %a_28 = tt.broadcast %a_26 : tensor<1x16xi32> -> tensor<16x16xi32>
        %a_29 = tt.addptr %a_27, %a_28 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %a_30 = tt.load %a_29 : tensor<16x16x!tt.ptr<bf16>>
        %acc = tt.expand_dims %cols {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %acc_31 = arith.muli %acc, %cst : tensor<16x1xi32>
        %acc_32 = tt.splat %W : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %acc_33 = tt.addptr %acc_32, %acc_31 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %acc_34 = tt.broadcast %acc_33 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %acc_35 = tt.addptr %acc_34, %a_28 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %acc_36 = tt.load %acc_35 : tensor<16x16x!tt.ptr<bf16>>
        %acc_37 = tt.dot %a_30, %acc_36, %cst_0, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %acc_38 = tt.expand_dims %ss {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %acc_39 = tt.broadcast %acc_38 : tensor<16x1xf32> -> tensor<16x16xf32>
        %acc_40 = arith.subf %acc_37, %acc_39 : tensor<16x16xf32>
        %ss_41 = arith.mulf %acc_40, %acc_40 : tensor<16x16xf32>
        %ss_42 = "tt.reduce"(%ss_41) <{axis = 1 : i32}> ({
        ^bb0(%ss_50: f32, %ss_51: f32):
          %ss_52 = arith.addf %ss_50, %ss_51 : f32
          tt.reduce.return %ss_52 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %ss_43 = arith.addf %ss_19, %ss_42 : tensor<16xf32>
        %ss_44 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %ss_45 = tt.addptr %ss_44, %a_20 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %ss_46 = tt.addptr %ss_45, %a_24 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %ss_47 = tt.broadcast %ss_46 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %ss_48 = tt.addptr %ss_47, %a_28 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %ss_49 = arith.truncf %acc_40 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %ss_48, %ss_49 : tensor<16x16x!tt.ptr<bf16>>
        scf.yield %ss_43 : tensor<16xf32>
      }
      %nxt = arith.addi %t_9, %step : i32
      %nxt_15 = arith.muli %nxt, %c16_i32 : i32
      %nxt_16 = tt.splat %nxt_15 : i32 -> tensor<16xi32>
      %nxt_17 = arith.addi %nxt_16, %cols : tensor<16xi32>
      %live = arith.cmpi slt, %nxt_17, %cst_4 : tensor<16xi32>
      %sn = scf.for %t_18 = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%sn_19 = %cst_1) -> (tensor<16xf32>)  : i32 {
        %sn_20 = tt.expand_dims %live {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %sn_21 = tt.expand_dims %nxt_17 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %sn_22 = arith.muli %sn_21, %cst_6 : tensor<16x1xi32>
        %sn_23 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %sn_24 = tt.addptr %sn_23, %sn_22 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %sn_25 = arith.muli %t_18, %c16_i32 : i32
        %sn_26 = tt.splat %sn_25 : i32 -> tensor<16x1xi32>
        %sn_27 = tt.addptr %sn_24, %sn_26 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %sn_28 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %sn_29 = tt.broadcast %sn_27 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %sn_30 = tt.broadcast %sn_28 : tensor<1x16xi32> -> tensor<16x16xi32>
        %sn_31 = tt.addptr %sn_29, %sn_30 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %sn_32 = tt.broadcast %sn_20 : tensor<16x1xi1> -> tensor<16x16xi1>
        %sn_33 = tt.load %sn_31, %sn_32, %cst_2 : tensor<16x16x!tt.ptr<bf16>>
        %sn_34 = arith.extf %sn_33 : tensor<16x16xbf16> to tensor<16x16xf32>
        %sn_35 = "tt.reduce"(%sn_34) <{axis = 1 : i32}> ({
        ^bb0(%sn_37: f32, %sn_38: f32):
          %sn_39 = arith.addf %sn_37, %sn_38 : f32
          tt.reduce.return %sn_39 : f32
        }) : (tensor<16x16xf32>) -> tensor<16xf32>
        %sn_36 = arith.addf %sn_19, %sn_35 : tensor<16xf32>
        scf.yield %sn_36 : tensor<16xf32>
      }
      %0 = arith.divf %ss_14, %cst_5 : tensor<16xf32>
      %1 = tt.splat %eps : f32 -> tensor<16xf32>
      %2 = arith.addf %0, %1 : tensor<16xf32>
      %3 = math.sqrt %2 : tensor<16xf32>
      %4 = arith.divf %cst_3, %3 : tensor<16xf32>
      scf.for %t_18 = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
        %p = tt.expand_dims %rows_13 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %p_19 = arith.muli %p, %cst_6 : tensor<16x1xi32>
        %p_20 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %p_21 = tt.addptr %p_20, %p_19 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %p_22 = arith.muli %t_18, %c16_i32 : i32
        %p_23 = tt.splat %p_22 : i32 -> tensor<16x1xi32>
        %p_24 = tt.addptr %p_21, %p_23 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %p_25 = tt.expand_dims %cols {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
        %p_26 = tt.broadcast %p_24 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %p_27 = tt.broadcast %p_25 : tensor<1x16xi32> -> tensor<16x16xi32>
        %p_28 = tt.addptr %p_26, %p_27 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %5 = tt.load %p_28 : tensor<16x16x!tt.ptr<bf16>>
        %6 = arith.extf %5 : tensor<16x16xbf16> to tensor<16x16xf32>
        %7 = tt.expand_dims %4 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
        %8 = tt.broadcast %7 : tensor<16x1xf32> -> tensor<16x16xf32>
        %9 = arith.mulf %6, %8 : tensor<16x16xf32>
        %10 = arith.truncf %9 : tensor<16x16xf32> to tensor<16x16xbf16>
        tt.store %p_28, %10 : tensor<16x16x!tt.ptr<bf16>>
      }
      scf.yield %sn : tensor<16xf32>
    }
    tt.return
  }
}
