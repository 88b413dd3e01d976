// cluster-reduce: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/cluster_reduce_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{cluster-size=2}' %s 2>/dev/null | FileCheck %s --check-prefix=TWO
// RUN: normfuse-opt --split-input-file --pass-pipeline=cluster-reduce,epilogue-norm %s 2>/dev/null | FileCheck %s --check-prefix=PIPE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{exchange=global}' %s 2>/dev/null | FileCheck %s --check-prefix=GLOBAL
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{cluster-size=32}' %s 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{exchange=l2}' %s 2>&1 | FileCheck %s --check-prefix=BADEXCH
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{gather=once}' %s 2>/dev/null | FileCheck %s --check-prefix=ONCE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{early-loads=true}' %s 2>%t.early | FileCheck %s --check-prefix=EARLY
// RUN: FileCheck %s --check-prefix=EARLYREMARK < %t.early
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{early-loads=true,exchange=global}' %s 2>&1 | FileCheck %s --check-prefix=BADEARLY

// BADOPT: option cluster-reduce{cluster-size} must be in 2..16, got 32
// BADEXCH: option cluster-reduce{exchange} must be dsmem or global, got 'l2'
// BADEARLY: option cluster-reduce{early-loads} needs exchange=dsmem
// EARLYREMARK: applied: early-loads: 1 load (of arg4) independent of the exchange issued between the cluster barrier's arrive and wait
// EARLYREMARK: applied: early-loads: 2 loads (of arg4, arg5) independent of the exchange
// EARLYREMARK: missed: early-loads: no load after an exchange is independent of it
// EARLYREMARK: applied: early-loads: 1 load (of arg4) independent of the exchange
// EARLYREMARK: missed: early-loads: no load after an exchange is independent of it

// 4 tiles -> a 4-CTA cluster, one tile per CTA: the loops over N are gone.
// CHECK-LABEL: tt.func public @rms_four_tiles
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK: %[[BLK:.+]] = arith.divsi %[[PID]], %[[C]] : i32
// CHECK: arith.muli %[[BLK]], %{{.+}} : i32
// CHECK: arith.muli %[[RANK]], %{{.+}} : i32
// CHECK: tt.dot
// CHECK: %[[PART:.+]] = arith.addf %{{.+}} : tensor<64xf32>
// CHECK: tt.store
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}}pure = false} %[[ROWS:.+]], %[[PART]] :
// CHECK: tt.elementwise_inline_asm "{{.*}}barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 3;{{.*}}" {{.*}} %[[ROWS]] : tensor<64xi32> -> tensor<64xf32>
// CHECK: tt.elementwise_inline_asm "{{.*}}barrier.cluster.arrive.release; mov
// CHECK: arith.divf %[[TOT]]
// CHECK-NOT: scf.for %{{.+}} = %c0_i32 to %c4_i32
// CHECK: tt.store
// CHECK: tt.elementwise_inline_asm "{{.*}}barrier.cluster.wait.acquire; mov
// CHECK-NEXT: tt.return
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; 1 row statistic exchanged through distributed shared memory (256 B per CTA), one cluster barrier per row block; one tile per CTA
// With cluster-size=2 each CTA takes two tiles (stride 2).
// TWO-LABEL: tt.func public @rms_four_tiles
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// TWO: scf.for %{{.+}} = %{{.+}} to %c4_i32 step %{{.+}} iter_args
// Then epilogue-norm applies per CTA: one store left where a CTA holds one tile.
// PIPE-LABEL: tt.func public @rms_four_tiles
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return
// exchange=global: the partials go through this CTA's global scratch slice (no extra shared
// memory); the read walks the cluster's slices from rank 0's, S bytes apart (S, the scratch slice
// size, is filled in after Triton's allocation: NFSCRATCHBYTES in the TTIR).
// GLOBAL-LABEL: tt.func public @rms_four_tiles
// GLOBAL-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 0 : i32, normfuse.scratch_size_token = "NFSCRATCHBYTES"
// GLOBAL: %[[PID:.+]] = tt.get_program_id x
// GLOBAL: %[[S:.+]] = ttg.global_scratch_alloc {alignment = 16 : i32, nbytes = 256 : i32} : !tt.ptr<i8>
// GLOBAL: %[[A:.+]] = tt.ptr_to_int %[[S]] : !tt.ptr<i8> -> i64
// GLOBAL: %[[AS:.+]] = tt.splat %[[A]] : i64 -> tensor<64xi64>
// GLOBAL: tt.elementwise_inline_asm "{{.*}}st.global.f32 [%nfa+0], $3;{{.*}}" {{.*}} %{{.+}}, %[[AS]], %{{.+}} :
// GLOBAL: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// GLOBAL: tt.elementwise_inline_asm "{{.*}}mov.u32 %nfr, %cluster_ctarank; mul.wide.u32 %nfo, %nfr, NFSCRATCHBYTES;{{.*}}ld.global.cg.f32{{.*}}add.u64 %nfa, %nfa, NFSCRATCHBYTES;{{.*}}" {{.*}} %[[AS]] :
// GLOBAL-NOT: mapa
// gather=once: after the cluster barrier one asm per row sums the 4 ranks' partials into this
// CTA's own total slot (past the partials': the region doubles, 512 B), a CTA barrier, then the
// totals' read is a local load (what Triton copies into each layout its users want).
// ONCE-LABEL: tt.func public @rms_four_tiles
// ONCE-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 512 : i32
// ONCE: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}} %[[ROWS:.+]], %{{.+}} :
// ONCE: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// ONCE: tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 3;{{.*}}st.shared.f32 [%nfa+256], %nft0; mov.u32 $0, 0; }" {{.*}} %[[ROWS]] : tensor<64xi32> -> tensor<64xi32>
// ONCE-NEXT: tt.elementwise_inline_asm "{{.*}}bar.sync 0; mov.u32 $0, 0;"
// ONCE-NEXT: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}ld.shared.f32 $0, [%nfa+256]; }" {{.*}} %[[ROWS]] : tensor<64xi32> -> tensor<64xf32>
// ONCE-NOT: ld.shared::cluster
// ONCE: arith.divf %[[TOT]]

// early-loads: the barrier in its two halves; the load of G (arg4, never stored) moved between
// them with its address; the reload of the tile stored to Y stays after the read of the totals.
// EARLY-LABEL: tt.func public @rms_four_tiles
// EARLY: st.shared.f32 [%nfa+0], $2;
// EARLY-NEXT: "{{.*}}barrier.cluster.arrive.release; mov.u32 $0, 0;"
// EARLY: %[[G:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<32x!tt.ptr<bf16>>
// EARLY-NEXT: "{{.*}}barrier.cluster.wait.acquire; mov.u32 $0, 0;"
// EARLY-NEXT: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}ld.shared::cluster.f32
// EARLY: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// EARLY-NOT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// EARLY: tt.return

module {
  tt.func public @rms_four_tiles(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %rstd_0 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst = arith.constant dense<128> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c4_i32 = arith.constant 4 : i32
    %c31_i32 = arith.constant 31 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_4 = arith.constant dense<128> : tensor<1x32xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c64_i32 : i32
    %offs_m_5 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_6 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_8 = arith.remsi %offs_m_7, %rows : tensor<64xi32>
    %ss_9 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_15 = %ss) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<32xi32>
      %wrows = arith.remsi %offs_n_18, %cst : tensor<32xi32>
      %acc = arith.addi %K, %c31_i32 : i32
      %acc_19 = arith.divsi %acc, %c32_i32 : i32
      %acc_20 = scf.for %k = %c0_i32 to %acc_19 step %c1_i32 iter_args(%acc_27 = %cst_3) -> (tensor<64x32xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_28 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
        %a_ptr_29 = arith.muli %a_ptr, %a_ptr_28 : tensor<64x1xi32>
        %a_ptr_30 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_31 = tt.addptr %a_ptr_30, %a_ptr_29 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_32 = arith.muli %k, %c32_i32 : i32
        %a_ptr_33 = tt.splat %a_ptr_32 : i32 -> tensor<64x1xi32>
        %a_ptr_34 = tt.addptr %a_ptr_31, %a_ptr_33 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_35 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_36 = tt.broadcast %a_ptr_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_37 = tt.broadcast %a_ptr_35 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_38 = tt.addptr %a_ptr_36, %a_ptr_37 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_39 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
        %b_ptr_40 = arith.muli %b_ptr, %b_ptr_39 : tensor<1x32xi32>
        %b_ptr_41 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
        %b_ptr_42 = tt.addptr %b_ptr_41, %b_ptr_40 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_43 = tt.splat %a_ptr_32 : i32 -> tensor<1x32xi32>
        %b_ptr_44 = tt.addptr %b_ptr_42, %b_ptr_43 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_45 = tt.expand_dims %offs_n_16 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_46 = tt.broadcast %b_ptr_44 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_47 = tt.broadcast %b_ptr_45 : tensor<32x1xi32> -> tensor<32x32xi32>
        %b_ptr_48 = tt.addptr %b_ptr_46, %b_ptr_47 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.load %a_ptr_38 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_48 : tensor<32x32x!tt.ptr<bf16>>
        %acc_49 = tt.dot %a, %b, %acc_27, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_49 : tensor<64x32xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_18, %cst : tensor<32xi32>
      %acc_21 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_22 = tt.broadcast %acc_21 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_23 = arith.select %acc_22, %acc_20, %cst_3 : tensor<64x32xi1>, tensor<64x32xf32>
      %ss_24 = arith.mulf %acc_23, %acc_23 : tensor<64x32xf32>
      %ss_25 = "tt.reduce"(%ss_24) <{axis = 1 : i32}> ({
      ^bb0(%ss_27: f32, %ss_28: f32):
        %ss_29 = arith.addf %ss_27, %ss_28 : f32
        tt.reduce.return %ss_29 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_26 = arith.addf %ss_15, %ss_25 : tensor<64xf32>
      %1 = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %2 = tt.splat %M : i32 -> tensor<64x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
      %4 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %5 = arith.cmpi slt, %4, %cst_4 : tensor<1x32xi32>
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
      %16 = arith.truncf %acc_23 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %15, %16, %8 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %ss_26 : tensor<64xf32>
    }
    %rstd_10 = arith.divf %ss_9, %rstd : tensor<64xf32>
    %rstd_11 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_12 = arith.addf %rstd_10, %rstd_11 : tensor<64xf32>
    %rstd_13 = math.sqrt %rstd_12 : tensor<64xf32>
    %rstd_14 = arith.divf %rstd_0, %rstd_13 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<32xi32>
      %y = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %y_18 = tt.splat %M : i32 -> tensor<64x1xi32>
      %y_19 = arith.cmpi slt, %y, %y_18 : tensor<64x1xi32>
      %y_20 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %y_21 = arith.cmpi slt, %y_20, %cst_4 : tensor<1x32xi32>
      %y_22 = tt.broadcast %y_19 : tensor<64x1xi1> -> tensor<64x32xi1>
      %y_23 = tt.broadcast %y_21 : tensor<1x32xi1> -> tensor<64x32xi1>
      %y_24 = arith.andi %y_22, %y_23 : tensor<64x32xi1>
      %y_25 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %y_26 = arith.muli %y, %y_25 : tensor<64x1xi32>
      %y_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %y_28 = tt.addptr %y_27, %y_26 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %y_29 = tt.broadcast %y_28 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %y_30 = tt.broadcast %y_20 : tensor<1x32xi32> -> tensor<64x32xi32>
      %y_31 = tt.addptr %y_29, %y_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %y_32 = tt.load %y_31, %y_24, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %y_33 = arith.extf %y_32 : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = arith.cmpi slt, %offs_n_17, %cst : tensor<32xi32>
      %g_34 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_35 = tt.addptr %g_34, %offs_n_17 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_36 = tt.load %g_35, %g, %cst_2 : tensor<32x!tt.ptr<bf16>>
      %g_37 = arith.extf %g_36 : tensor<32xbf16> to tensor<32xf32>
      %out = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %out_38 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
      %out_39 = arith.mulf %y_33, %out_38 : tensor<64x32xf32>
      %out_40 = tt.expand_dims %g_37 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %out_41 = tt.broadcast %out_40 : tensor<1x32xf32> -> tensor<64x32xf32>
      %out_42 = arith.mulf %out_39, %out_41 : tensor<64x32xf32>
      %1 = arith.truncf %out_42 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %y_31, %1, %y_24 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// LayerNorm: sum and sum of squares in one exchange (two slots per row).
// CHECK-LABEL: tt.func public @ln_two_stats
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+256], $3;
// CHECK: %[[TOT:.+]]:2 = tt.elementwise_inline_asm {{.*}} -> tensor<64xf32>, tensor<64xf32>
// CHECK: arith.divf %[[TOT]]#0
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 2 row statistics
// TWO-LABEL: tt.func public @ln_two_stats
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// TWO-NOT: scf.for %{{.+}} = %{{.+}} to %c2_i32
// PIPE-LABEL: tt.func public @ln_two_stats
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return

module {
  tt.func public @ln_two_stats(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %cst = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_1 = arith.constant dense<64> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %c2_i32 = arith.constant 2 : i32
    %c31_i32 = arith.constant 31 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_5 = arith.constant dense<64> : tensor<1x32xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_9 = arith.remsi %offs_m_8, %rows : tensor<64xi32>
    %s2:2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%s1 = %cst_0, %s2_18 = %cst_0) -> (tensor<64xf32>, tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_19 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_20 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_21 = arith.addi %offs_n_20, %offs_n_19 : tensor<32xi32>
      %wrows = arith.remsi %offs_n_21, %cst_1 : tensor<32xi32>
      %acc = arith.addi %K, %c31_i32 : i32
      %acc_22 = arith.divsi %acc, %c32_i32 : i32
      %acc_23 = scf.for %k = %c0_i32 to %acc_22 step %c1_i32 iter_args(%acc_32 = %cst_4) -> (tensor<64x32xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_33 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
        %a_ptr_34 = arith.muli %a_ptr, %a_ptr_33 : tensor<64x1xi32>
        %a_ptr_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_36 = tt.addptr %a_ptr_35, %a_ptr_34 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_37 = arith.muli %k, %c32_i32 : i32
        %a_ptr_38 = tt.splat %a_ptr_37 : i32 -> tensor<64x1xi32>
        %a_ptr_39 = tt.addptr %a_ptr_36, %a_ptr_38 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_40 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
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
        %b_ptr_50 = tt.expand_dims %offs_n_19 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_51 = tt.broadcast %b_ptr_49 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_52 = tt.broadcast %b_ptr_50 : tensor<32x1xi32> -> tensor<32x32xi32>
        %b_ptr_53 = tt.addptr %b_ptr_51, %b_ptr_52 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.load %a_ptr_43 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_53 : tensor<32x32x!tt.ptr<bf16>>
        %acc_54 = tt.dot %a, %b, %acc_32, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_54 : tensor<64x32xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_21, %cst_1 : tensor<32xi32>
      %acc_24 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_25 = tt.broadcast %acc_24 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_26 = arith.select %acc_25, %acc_23, %cst_4 : tensor<64x32xi1>, tensor<64x32xf32>
      %s1_27 = "tt.reduce"(%acc_26) <{axis = 1 : i32}> ({
      ^bb0(%s1_32: f32, %s1_33: f32):
        %s1_34 = arith.addf %s1_32, %s1_33 : f32
        tt.reduce.return %s1_34 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %s1_28 = arith.addf %s1, %s1_27 : tensor<64xf32>
      %s2_29 = arith.mulf %acc_26, %acc_26 : tensor<64x32xf32>
      %s2_30 = "tt.reduce"(%s2_29) <{axis = 1 : i32}> ({
      ^bb0(%s2_32: f32, %s2_33: f32):
        %s2_34 = arith.addf %s2_32, %s2_33 : f32
        tt.reduce.return %s2_34 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %s2_31 = arith.addf %s2_18, %s2_30 : tensor<64xf32>
      %1 = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %2 = tt.splat %M : i32 -> tensor<64x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
      %4 = tt.expand_dims %offs_n_21 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
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
      %16 = arith.truncf %acc_26 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %15, %16, %8 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %s1_28, %s2_31 : tensor<64xf32>, tensor<64xf32>
    }
    %mean = arith.divf %s2#0, %cst : tensor<64xf32>
    %rstd_10 = arith.divf %s2#1, %cst : tensor<64xf32>
    %rstd_11 = arith.mulf %mean, %mean : tensor<64xf32>
    %rstd_12 = arith.subf %rstd_10, %rstd_11 : tensor<64xf32>
    %rstd_13 = arith.maxnumf %rstd_12, %cst_0 : tensor<64xf32>
    %rstd_14 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_15 = arith.addf %rstd_13, %rstd_14 : tensor<64xf32>
    %rstd_16 = math.sqrt %rstd_15 : tensor<64xf32>
    %rstd_17 = arith.divf %rstd, %rstd_16 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_18 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_19 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_20 = arith.addi %offs_n_19, %offs_n_18 : tensor<32xi32>
      %y = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %y_21 = tt.splat %M : i32 -> tensor<64x1xi32>
      %y_22 = arith.cmpi slt, %y, %y_21 : tensor<64x1xi32>
      %y_23 = tt.expand_dims %offs_n_20 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %y_24 = arith.cmpi slt, %y_23, %cst_5 : tensor<1x32xi32>
      %y_25 = tt.broadcast %y_22 : tensor<64x1xi1> -> tensor<64x32xi1>
      %y_26 = tt.broadcast %y_24 : tensor<1x32xi1> -> tensor<64x32xi1>
      %y_27 = arith.andi %y_25, %y_26 : tensor<64x32xi1>
      %y_28 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %y_29 = arith.muli %y, %y_28 : tensor<64x1xi32>
      %y_30 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %y_31 = tt.addptr %y_30, %y_29 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %y_32 = tt.broadcast %y_31 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %y_33 = tt.broadcast %y_23 : tensor<1x32xi32> -> tensor<64x32xi32>
      %y_34 = tt.addptr %y_32, %y_33 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %y_35 = tt.load %y_34, %y_27, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %y_36 = arith.extf %y_35 : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = arith.cmpi slt, %offs_n_20, %cst_1 : tensor<32xi32>
      %g_37 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_38 = tt.addptr %g_37, %offs_n_20 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_39 = tt.load %g_38, %g, %cst_3 : tensor<32x!tt.ptr<bf16>>
      %g_40 = arith.extf %g_39 : tensor<32xbf16> to tensor<32xf32>
      %beta = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %beta_41 = tt.addptr %beta, %offs_n_20 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %beta_42 = tt.load %beta_41, %g, %cst_3 : tensor<32x!tt.ptr<bf16>>
      %beta_43 = arith.extf %beta_42 : tensor<32xbf16> to tensor<32xf32>
      %out = tt.expand_dims %mean {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %out_44 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
      %out_45 = arith.subf %y_36, %out_44 : tensor<64x32xf32>
      %out_46 = tt.expand_dims %rstd_17 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %out_47 = tt.broadcast %out_46 : tensor<64x1xf32> -> tensor<64x32xf32>
      %out_48 = arith.mulf %out_45, %out_47 : tensor<64x32xf32>
      %out_49 = tt.expand_dims %g_40 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %out_50 = tt.broadcast %out_49 : tensor<1x32xf32> -> tensor<64x32xf32>
      %out_51 = arith.mulf %out_48, %out_50 : tensor<64x32xf32>
      %out_52 = tt.expand_dims %beta_43 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %out_53 = tt.broadcast %out_52 : tensor<1x32xf32> -> tensor<64x32xf32>
      %out_54 = arith.addf %out_51, %out_53 : tensor<64x32xf32>
      %1 = arith.truncf %out_54 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %y_34, %1, %y_27 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// 32 tiles > 16 CTAs: each CTA of a 16-CTA cluster loops over its 2 tiles (stride 16).
// CHECK-LABEL: tt.func public @rms_deferred
// CHECK-SAME: normfuse.cluster_dims = 16 : i32
// CHECK: %[[RANK:.+]] = arith.remsi %{{.+}}, %[[C:.+]] : i32
// CHECK: scf.for %{{.+}} = %[[RANK]] to %c32_i32 step %[[C]] iter_args
// CHECK: tt.store
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: scf.for %{{.+}} = %[[RANK]] to %c32_i32 step %[[C]]
// CHECK: tt.load
// CHECK: tt.store
// REMARK: applied: row of 32 N tiles split over a 16-CTA cluster (non-portable size); 1 row statistic {{.*}}; deferred: the row is longer than one cluster, so each CTA handles up to 2 tiles
// TWO-LABEL: tt.func public @rms_deferred
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// PIPE-LABEL: tt.func public @rms_deferred
// PIPE-COUNT-2: tt.store

module {
  tt.func public @rms_deferred(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<1.024000e+03> : tensor<64xf32>
    %rstd_0 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst = arith.constant dense<1024> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_4 = arith.constant dense<1024> : tensor<1x32xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c64_i32 : i32
    %offs_m_5 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_6 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_8 = arith.remsi %offs_m_7, %rows : tensor<64xi32>
    %ss_9 = scf.for %n = %c0_i32 to %c32_i32 step %c1_i32 iter_args(%ss_15 = %ss) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<32xi32>
      %wrows = arith.remsi %offs_n_18, %cst : tensor<32xi32>
      %acc = arith.addi %K, %c31_i32 : i32
      %acc_19 = arith.divsi %acc, %c32_i32 : i32
      %acc_20 = scf.for %k = %c0_i32 to %acc_19 step %c1_i32 iter_args(%acc_27 = %cst_3) -> (tensor<64x32xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_28 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
        %a_ptr_29 = arith.muli %a_ptr, %a_ptr_28 : tensor<64x1xi32>
        %a_ptr_30 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_31 = tt.addptr %a_ptr_30, %a_ptr_29 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_32 = arith.muli %k, %c32_i32 : i32
        %a_ptr_33 = tt.splat %a_ptr_32 : i32 -> tensor<64x1xi32>
        %a_ptr_34 = tt.addptr %a_ptr_31, %a_ptr_33 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_35 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_36 = tt.broadcast %a_ptr_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_37 = tt.broadcast %a_ptr_35 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_38 = tt.addptr %a_ptr_36, %a_ptr_37 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_39 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
        %b_ptr_40 = arith.muli %b_ptr, %b_ptr_39 : tensor<1x32xi32>
        %b_ptr_41 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
        %b_ptr_42 = tt.addptr %b_ptr_41, %b_ptr_40 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_43 = tt.splat %a_ptr_32 : i32 -> tensor<1x32xi32>
        %b_ptr_44 = tt.addptr %b_ptr_42, %b_ptr_43 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %b_ptr_45 = tt.expand_dims %offs_n_16 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_46 = tt.broadcast %b_ptr_44 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_47 = tt.broadcast %b_ptr_45 : tensor<32x1xi32> -> tensor<32x32xi32>
        %b_ptr_48 = tt.addptr %b_ptr_46, %b_ptr_47 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.load %a_ptr_38 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_48 : tensor<32x32x!tt.ptr<bf16>>
        %acc_49 = tt.dot %a, %b, %acc_27, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_49 : tensor<64x32xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_18, %cst : tensor<32xi32>
      %acc_21 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_22 = tt.broadcast %acc_21 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_23 = arith.select %acc_22, %acc_20, %cst_3 : tensor<64x32xi1>, tensor<64x32xf32>
      %ss_24 = arith.mulf %acc_23, %acc_23 : tensor<64x32xf32>
      %ss_25 = "tt.reduce"(%ss_24) <{axis = 1 : i32}> ({
      ^bb0(%ss_27: f32, %ss_28: f32):
        %ss_29 = arith.addf %ss_27, %ss_28 : f32
        tt.reduce.return %ss_29 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_26 = arith.addf %ss_15, %ss_25 : tensor<64xf32>
      %1 = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %2 = tt.splat %M : i32 -> tensor<64x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
      %4 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %5 = arith.cmpi slt, %4, %cst_4 : tensor<1x32xi32>
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
      %16 = arith.truncf %acc_23 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %15, %16, %8 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %ss_26 : tensor<64xf32>
    }
    %rstd_10 = arith.divf %ss_9, %rstd : tensor<64xf32>
    %rstd_11 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_12 = arith.addf %rstd_10, %rstd_11 : tensor<64xf32>
    %rstd_13 = math.sqrt %rstd_12 : tensor<64xf32>
    %rstd_14 = arith.divf %rstd_0, %rstd_13 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c32_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<32xi32>
      %y = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %y_18 = tt.splat %M : i32 -> tensor<64x1xi32>
      %y_19 = arith.cmpi slt, %y, %y_18 : tensor<64x1xi32>
      %y_20 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %y_21 = arith.cmpi slt, %y_20, %cst_4 : tensor<1x32xi32>
      %y_22 = tt.broadcast %y_19 : tensor<64x1xi1> -> tensor<64x32xi1>
      %y_23 = tt.broadcast %y_21 : tensor<1x32xi1> -> tensor<64x32xi1>
      %y_24 = arith.andi %y_22, %y_23 : tensor<64x32xi1>
      %y_25 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
      %y_26 = arith.muli %y, %y_25 : tensor<64x1xi32>
      %y_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %y_28 = tt.addptr %y_27, %y_26 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %y_29 = tt.broadcast %y_28 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %y_30 = tt.broadcast %y_20 : tensor<1x32xi32> -> tensor<64x32xi32>
      %y_31 = tt.addptr %y_29, %y_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %y_32 = tt.load %y_31, %y_24, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %y_33 = arith.extf %y_32 : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = arith.cmpi slt, %offs_n_17, %cst : tensor<32xi32>
      %g_34 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_35 = tt.addptr %g_34, %offs_n_17 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_36 = tt.load %g_35, %g, %cst_2 : tensor<32x!tt.ptr<bf16>>
      %g_37 = arith.extf %g_36 : tensor<32xbf16> to tensor<32xf32>
      %out = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %out_38 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
      %out_39 = arith.mulf %y_33, %out_38 : tensor<64x32xf32>
      %out_40 = tt.expand_dims %g_37 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %out_41 = tt.broadcast %out_40 : tensor<1x32xf32> -> tensor<64x32xf32>
      %out_42 = arith.mulf %out_39, %out_41 : tensor<64x32xf32>
      %1 = arith.truncf %out_42 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %y_31, %1, %y_24 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Persistent (the programs walk the row blocks): one exchange per row block, one barrier before exit.
// Program id and count are divided by C; the two slot sets alternate with the row block's parity.
// CHECK-LABEL: tt.func public @rms_persistent
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK: %[[BLK:.+]] = arith.divsi %[[PID]], %[[C]] : i32
// CHECK: %[[NP:.+]] = tt.get_num_programs x
// CHECK: %[[NCL:.+]] = arith.divsi %[[NP]], %[[C]] : i32
// CHECK: scf.for %[[RB:.+]] = %[[BLK]] to %{{.+}} step %[[NCL]] : i32 {
// CHECK: tt.dot
// CHECK: %[[OFF:.+]] = arith.subi %[[RB]], %[[BLK]] : i32
// CHECK: %[[IT:.+]] = arith.divsi %[[OFF]], %[[NCL]] : i32
// CHECK: %[[PAR:.+]] = arith.andi %[[IT]], %{{.+}} : i32
// CHECK: %[[WOFF:.+]] = arith.muli %[[PAR]], %{{.+}} : i32
// CHECK: %[[SPL:.+]] = tt.splat %[[WOFF]]
// CHECK: %[[IDX:.+]] = arith.addi %{{.+}}, %[[SPL]] : tensor<64xi32>
// CHECK: tt.elementwise_inline_asm "{{.*}}sub.u32 %nfa, %nfa, 512;{{.*}}st.shared.f32 {{.*}}" {{.*}} %[[IDX]],
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster{{.*}}" {{.*}} %[[IDX]] :
// CHECK-NOT: barrier.cluster
// CHECK: arith.divf %[[TOT]]
// CHECK: tt.store
// CHECK-NOT: barrier.cluster
// CHECK: }
// CHECK-NEXT: tt.elementwise_inline_asm "{{.*}}barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: tt.return
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; {{.*}} (512 B per CTA), {{.*}}; persistent: the clusters walk the row blocks, two exchange slot sets alternate
// PIPE-LABEL: tt.func public @rms_persistent
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return

module {
  tt.func public @rms_persistent(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c32_i32 = arith.constant 32 : i32
    %cst = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %cst_0 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_1 = arith.constant dense<128> : tensor<32xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c4_i32 = arith.constant 4 : i32
    %c31_i32 = arith.constant 31 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_6 = arith.constant dense<128> : tensor<1x32xi32>
    %c63_i32 = arith.constant 63 : i32
    %c64_i32 = arith.constant 64 : i32
    %0 = tt.get_program_id x : i32
    %1 = arith.addi %M, %c63_i32 : i32
    %2 = arith.divsi %1, %c64_i32 : i32
    %3 = tt.get_num_programs x : i32
    scf.for %pid_m = %0 to %2 step %3  : i32 {
      %offs_m = arith.muli %pid_m, %c64_i32 : i32
      %offs_m_7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %offs_m_8 = tt.splat %offs_m : i32 -> tensor<64xi32>
      %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<64xi32>
      %rows = tt.splat %M : i32 -> tensor<64xi32>
      %rows_10 = arith.remsi %offs_m_9, %rows : tensor<64xi32>
      %ss = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_15 = %cst_4) -> (tensor<64xf32>)  : i32 {
        %offs_n = arith.muli %n, %c32_i32 : i32
        %offs_n_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
        %offs_n_17 = tt.splat %offs_n : i32 -> tensor<32xi32>
        %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<32xi32>
        %wrows = arith.remsi %offs_n_18, %cst_1 : tensor<32xi32>
        %acc = arith.addi %K, %c31_i32 : i32
        %acc_19 = arith.divsi %acc, %c32_i32 : i32
        %acc_20 = scf.for %k = %c0_i32 to %acc_19 step %c1_i32 iter_args(%acc_27 = %cst_5) -> (tensor<64x32xf32>)  : i32 {
          %a_ptr = tt.expand_dims %rows_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
          %a_ptr_28 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
          %a_ptr_29 = arith.muli %a_ptr, %a_ptr_28 : tensor<64x1xi32>
          %a_ptr_30 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
          %a_ptr_31 = tt.addptr %a_ptr_30, %a_ptr_29 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
          %a_ptr_32 = arith.muli %k, %c32_i32 : i32
          %a_ptr_33 = tt.splat %a_ptr_32 : i32 -> tensor<64x1xi32>
          %a_ptr_34 = tt.addptr %a_ptr_31, %a_ptr_33 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
          %a_ptr_35 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
          %a_ptr_36 = tt.broadcast %a_ptr_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
          %a_ptr_37 = tt.broadcast %a_ptr_35 : tensor<1x32xi32> -> tensor<64x32xi32>
          %a_ptr_38 = tt.addptr %a_ptr_36, %a_ptr_37 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
          %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
          %b_ptr_39 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
          %b_ptr_40 = arith.muli %b_ptr, %b_ptr_39 : tensor<1x32xi32>
          %b_ptr_41 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
          %b_ptr_42 = tt.addptr %b_ptr_41, %b_ptr_40 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
          %b_ptr_43 = tt.splat %a_ptr_32 : i32 -> tensor<1x32xi32>
          %b_ptr_44 = tt.addptr %b_ptr_42, %b_ptr_43 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
          %b_ptr_45 = tt.expand_dims %offs_n_16 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
          %b_ptr_46 = tt.broadcast %b_ptr_44 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
          %b_ptr_47 = tt.broadcast %b_ptr_45 : tensor<32x1xi32> -> tensor<32x32xi32>
          %b_ptr_48 = tt.addptr %b_ptr_46, %b_ptr_47 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
          %a = tt.load %a_ptr_38 : tensor<64x32x!tt.ptr<bf16>>
          %b = tt.load %b_ptr_48 : tensor<32x32x!tt.ptr<bf16>>
          %acc_49 = tt.dot %a, %b, %acc_27, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
          scf.yield %acc_49 : tensor<64x32xf32>
        }
        %nmask = arith.cmpi slt, %offs_n_18, %cst_1 : tensor<32xi32>
        %acc_21 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %acc_22 = tt.broadcast %acc_21 : tensor<1x32xi1> -> tensor<64x32xi1>
        %acc_23 = arith.select %acc_22, %acc_20, %cst_5 : tensor<64x32xi1>, tensor<64x32xf32>
        %ss_24 = arith.mulf %acc_23, %acc_23 : tensor<64x32xf32>
        %ss_25 = "tt.reduce"(%ss_24) <{axis = 1 : i32}> ({
        ^bb0(%ss_27: f32, %ss_28: f32):
          %ss_29 = arith.addf %ss_27, %ss_28 : f32
          tt.reduce.return %ss_29 : f32
        }) : (tensor<64x32xf32>) -> tensor<64xf32>
        %ss_26 = arith.addf %ss_15, %ss_25 : tensor<64xf32>
        %4 = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %5 = tt.splat %M : i32 -> tensor<64x1xi32>
        %6 = arith.cmpi slt, %4, %5 : tensor<64x1xi32>
        %7 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %8 = arith.cmpi slt, %7, %cst_6 : tensor<1x32xi32>
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
        %19 = arith.truncf %acc_23 : tensor<64x32xf32> to tensor<64x32xbf16>
        tt.store %18, %19, %11 : tensor<64x32x!tt.ptr<bf16>>
        scf.yield %ss_26 : tensor<64xf32>
      }
      %rstd = arith.divf %ss, %cst : tensor<64xf32>
      %rstd_11 = tt.splat %eps : f32 -> tensor<64xf32>
      %rstd_12 = arith.addf %rstd, %rstd_11 : tensor<64xf32>
      %rstd_13 = math.sqrt %rstd_12 : tensor<64xf32>
      %rstd_14 = arith.divf %cst_0, %rstd_13 : tensor<64xf32>
      scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
        %offs_n = arith.muli %n, %c32_i32 : i32
        %offs_n_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
        %offs_n_16 = tt.splat %offs_n : i32 -> tensor<32xi32>
        %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<32xi32>
        %y = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %y_18 = tt.splat %M : i32 -> tensor<64x1xi32>
        %y_19 = arith.cmpi slt, %y, %y_18 : tensor<64x1xi32>
        %y_20 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %y_21 = arith.cmpi slt, %y_20, %cst_6 : tensor<1x32xi32>
        %y_22 = tt.broadcast %y_19 : tensor<64x1xi1> -> tensor<64x32xi1>
        %y_23 = tt.broadcast %y_21 : tensor<1x32xi1> -> tensor<64x32xi1>
        %y_24 = arith.andi %y_22, %y_23 : tensor<64x32xi1>
        %y_25 = tt.splat %stride_ym : i32 -> tensor<64x1xi32>
        %y_26 = arith.muli %y, %y_25 : tensor<64x1xi32>
        %y_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %y_28 = tt.addptr %y_27, %y_26 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %y_29 = tt.broadcast %y_28 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %y_30 = tt.broadcast %y_20 : tensor<1x32xi32> -> tensor<64x32xi32>
        %y_31 = tt.addptr %y_29, %y_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %y_32 = tt.load %y_31, %y_24, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %y_33 = arith.extf %y_32 : tensor<64x32xbf16> to tensor<64x32xf32>
        %g = arith.cmpi slt, %offs_n_17, %cst_1 : tensor<32xi32>
        %g_34 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
        %g_35 = tt.addptr %g_34, %offs_n_17 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
        %g_36 = tt.load %g_35, %g, %cst_3 : tensor<32x!tt.ptr<bf16>>
        %g_37 = arith.extf %g_36 : tensor<32xbf16> to tensor<32xf32>
        %out = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
        %out_38 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
        %out_39 = arith.mulf %y_33, %out_38 : tensor<64x32xf32>
        %out_40 = tt.expand_dims %g_37 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
        %out_41 = tt.broadcast %out_40 : tensor<1x32xf32> -> tensor<64x32xf32>
        %out_42 = arith.mulf %out_39, %out_41 : tensor<64x32xf32>
        %4 = arith.truncf %out_42 : tensor<64x32xf32> to tensor<64x32xbf16>
        tt.store %y_31, %4, %y_24 : tensor<64x32x!tt.ptr<bf16>>
      }
    } {tt.flatten}
    tt.return
  }
}

// -----

// Loops over column offsets (range(0, N, BN)): CTA r takes the columns r * BN, stepping C * BN.
// CHECK-LABEL: tt.func public @rms_offsets
// CHECK-SAME: normfuse.cluster_dims = 4 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %{{.+}} : i32
// CHECK: %[[COL:.+]] = arith.muli %[[RANK]], %c32_i32 : i32
// CHECK-NOT: scf.for
// CHECK: tt.dot
// CHECK: tt.splat %[[COL]]
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: tt.return
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; 1 row statistic
// With cluster-size=2 each CTA walks its two tiles: from rank * BN, stepping 2 * BN.
// TWO-LABEL: tt.func public @rms_offsets
// TWO: %[[COL:.+]] = arith.muli %{{.+}}, %c32_i32 : i32
// TWO: scf.for %{{.+}} = %[[COL]] to %c128_i32 step %c64_i32 iter_args
// PIPE-LABEL: tt.func public @rms_offsets
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return

module {
  tt.func public @rms_offsets(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c128_i32 = arith.constant 128 : i32
    %c0_i32 = arith.constant 0 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %rstd_2 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %cst_3 = arith.constant dense<128> : tensor<64x1xi32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_4 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_5 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_6 = tt.splat %offs_m_4 : i32 -> tensor<64xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<64xi32>
    %ss_8 = scf.for %n0 = %c0_i32 to %c128_i32 step %c32_i32 iter_args(%ss_12 = %ss) -> (tensor<64xf32>)  : i32 {
      %acc = arith.divsi %n0, %c32_i32 : i32
      %offs_n = arith.muli %acc, %c32_i32 : i32
      %offs_n_13 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_14 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_15 = arith.addi %offs_n_14, %offs_n_13 : tensor<32xi32>
      %acc_16 = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %acc_17 = arith.muli %acc_16, %cst : tensor<64x1xi32>
      %acc_18 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %acc_19 = tt.addptr %acc_18, %acc_17 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %acc_20 = tt.expand_dims %offs_n_13 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_21 = tt.broadcast %acc_19 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %acc_22 = tt.broadcast %acc_20 : tensor<1x32xi32> -> tensor<64x32xi32>
      %acc_23 = tt.addptr %acc_21, %acc_22 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %acc_24 = tt.load %acc_23 : tensor<64x32x!tt.ptr<bf16>>
      %acc_25 = tt.expand_dims %offs_n_15 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_26 = arith.muli %acc_25, %cst_0 : tensor<1x32xi32>
      %acc_27 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %acc_28 = tt.addptr %acc_27, %acc_26 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %acc_29 = tt.expand_dims %offs_n_13 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %acc_30 = tt.broadcast %acc_28 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %acc_31 = tt.broadcast %acc_29 : tensor<32x1xi32> -> tensor<32x32xi32>
      %acc_32 = tt.addptr %acc_30, %acc_31 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %acc_33 = tt.load %acc_32 : tensor<32x32x!tt.ptr<bf16>>
      %acc_34 = tt.dot %acc_24, %acc_33, %cst_1, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %ss_35 = arith.mulf %acc_34, %acc_34 : tensor<64x32xf32>
      %ss_36 = "tt.reduce"(%ss_35) <{axis = 1 : i32}> ({
      ^bb0(%ss_38: f32, %ss_39: f32):
        %ss_40 = arith.addf %ss_38, %ss_39 : f32
        tt.reduce.return %ss_40 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_37 = arith.addf %ss_12, %ss_36 : tensor<64xf32>
      %0 = arith.muli %acc_16, %cst_3 : tensor<64x1xi32>
      %1 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %2 = tt.addptr %1, %0 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %3 = tt.splat %n0 : i32 -> tensor<64x1xi32>
      %4 = tt.addptr %2, %3 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %5 = tt.broadcast %4 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %6 = tt.addptr %5, %acc_22 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %7 = arith.truncf %acc_34 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %6, %7 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %ss_37 : tensor<64xf32>
    }
    %rstd_9 = arith.divf %ss_8, %rstd_2 : tensor<64xf32>
    %rstd_10 = math.sqrt %rstd_9 : tensor<64xf32>
    %rstd_11 = arith.divf %rstd, %rstd_10 : tensor<64xf32>
    scf.for %n0 = %c0_i32 to %c128_i32 step %c32_i32  : i32 {
      %p = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %p_12 = arith.muli %p, %cst_3 : tensor<64x1xi32>
      %p_13 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %p_14 = tt.addptr %p_13, %p_12 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_15 = tt.splat %n0 : i32 -> tensor<64x1xi32>
      %p_16 = tt.addptr %p_14, %p_15 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_17 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %p_18 = tt.expand_dims %p_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %p_19 = tt.broadcast %p_16 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %p_20 = tt.broadcast %p_18 : tensor<1x32xi32> -> tensor<64x32xi32>
      %p_21 = tt.addptr %p_19, %p_20 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %0 = tt.load %p_21 : tensor<64x32x!tt.ptr<bf16>>
      %1 = arith.extf %0 : tensor<64x32xbf16> to tensor<64x32xf32>
      %2 = tt.expand_dims %rstd_11 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %3 = tt.broadcast %2 : tensor<64x1xf32> -> tensor<64x32xf32>
      %4 = arith.mulf %1, %3 : tensor<64x32xf32>
      %5 = arith.truncf %4 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %p_21, %5 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: the row is one tile (epilogue-norm's case).
// CHECK-LABEL: tt.func public @negative_one_tile
// CHECK-NOT: normfuse.cluster_dims
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: no loop over N tiles around the GEMM: the row is one tile (epilogue-norm's case)

module {
  tt.func public @negative_one_tile(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
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
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_4 = arith.constant dense<32> : tensor<1x32xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c64_i32 : i32
    %offs_m_5 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_6 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<64xi32>
    %rows = tt.splat %M : i32 -> tensor<64xi32>
    %rows_8 = arith.remsi %offs_m_7, %rows : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %wrows = arith.remsi %offs_n, %cst : tensor<32xi32>
    %acc = arith.addi %K, %c31_i32 : i32
    %acc_9 = arith.divsi %acc, %c32_i32 : i32
    %acc_10 = scf.for %k = %c0_i32 to %acc_9 step %c1_i32 iter_args(%acc_31 = %cst_3) -> (tensor<64x32xf32>)  : i32 {
      %a_ptr = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_ptr_32 = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %a_ptr_33 = arith.muli %a_ptr, %a_ptr_32 : tensor<64x1xi32>
      %a_ptr_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_ptr_35 = tt.addptr %a_ptr_34, %a_ptr_33 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_36 = arith.muli %k, %c32_i32 : i32
      %a_ptr_37 = tt.splat %a_ptr_36 : i32 -> tensor<64x1xi32>
      %a_ptr_38 = tt.addptr %a_ptr_35, %a_ptr_37 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_39 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_ptr_40 = tt.broadcast %a_ptr_38 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_ptr_41 = tt.broadcast %a_ptr_39 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_ptr_42 = tt.addptr %a_ptr_40, %a_ptr_41 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %b_ptr_43 = tt.splat %stride_wn : i32 -> tensor<1x32xi32>
      %b_ptr_44 = arith.muli %b_ptr, %b_ptr_43 : tensor<1x32xi32>
      %b_ptr_45 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %b_ptr_46 = tt.addptr %b_ptr_45, %b_ptr_44 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_ptr_47 = tt.splat %a_ptr_36 : i32 -> tensor<1x32xi32>
      %b_ptr_48 = tt.addptr %b_ptr_46, %b_ptr_47 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %b_ptr_49 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_ptr_50 = tt.broadcast %b_ptr_48 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %b_ptr_51 = tt.broadcast %b_ptr_49 : tensor<32x1xi32> -> tensor<32x32xi32>
      %b_ptr_52 = tt.addptr %b_ptr_50, %b_ptr_51 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %a = tt.load %a_ptr_42 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.load %b_ptr_52 : tensor<32x32x!tt.ptr<bf16>>
      %acc_53 = tt.dot %a, %b, %acc_31, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_53 : tensor<64x32xf32>
    }
    %nmask = arith.cmpi slt, %offs_n, %cst : tensor<32xi32>
    %acc_11 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
    %acc_12 = tt.broadcast %acc_11 : tensor<1x32xi1> -> tensor<64x32xi1>
    %acc_13 = arith.select %acc_12, %acc_10, %cst_3 : tensor<64x32xi1>, tensor<64x32xf32>
    %ss_14 = arith.mulf %acc_13, %acc_13 : tensor<64x32xf32>
    %ss_15 = "tt.reduce"(%ss_14) <{axis = 1 : i32}> ({
    ^bb0(%ss_31: f32, %ss_32: f32):
      %ss_33 = arith.addf %ss_31, %ss_32 : f32
      tt.reduce.return %ss_33 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %ss_16 = arith.addf %ss_15, %ss : tensor<64xf32>
    %1 = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %2 = tt.splat %M : i32 -> tensor<64x1xi32>
    %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
    %4 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %5 = arith.cmpi slt, %4, %cst_4 : tensor<1x32xi32>
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
    %16 = arith.truncf %acc_13 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %16, %8 : tensor<64x32x!tt.ptr<bf16>>
    %rstd_17 = arith.divf %ss_16, %rstd : tensor<64xf32>
    %rstd_18 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_19 = arith.addf %rstd_17, %rstd_18 : tensor<64xf32>
    %rstd_20 = math.sqrt %rstd_19 : tensor<64xf32>
    %rstd_21 = arith.divf %rstd_0, %rstd_20 : tensor<64xf32>
    %y = tt.load %15, %8, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
    %y_22 = arith.extf %y : tensor<64x32xbf16> to tensor<64x32xf32>
    %g = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %g_23 = tt.addptr %g, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %g_24 = tt.load %g_23, %nmask, %cst_2 : tensor<32x!tt.ptr<bf16>>
    %g_25 = arith.extf %g_24 : tensor<32xbf16> to tensor<32xf32>
    %out = tt.expand_dims %rstd_21 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %out_26 = tt.broadcast %out : tensor<64x1xf32> -> tensor<64x32xf32>
    %out_27 = arith.mulf %y_22, %out_26 : tensor<64x32xf32>
    %out_28 = tt.expand_dims %g_25 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %out_29 = tt.broadcast %out_28 : tensor<1x32xf32> -> tensor<64x32xf32>
    %out_30 = arith.mulf %out_27, %out_29 : tensor<64x32xf32>
    %17 = arith.truncf %out_30 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %17, %8 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// Bail out: the statistic is a max over tiles, not a sum.
// CHECK-LABEL: tt.func public @negative_max_over_tiles
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: row statistic {{.+}} is not a sum over tiles

module {
  tt.func public @negative_max_over_tiles(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %mx = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %cst_3 = arith.constant dense<128> : tensor<64x1xi32>
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_4 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_5 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_6 = tt.splat %offs_m_4 : i32 -> tensor<64xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<64xi32>
    %mx_8 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%mx_9 = %mx) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_10 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_11 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_12 = arith.addi %offs_n_11, %offs_n_10 : tensor<32xi32>
      %acc = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %acc_13 = arith.muli %acc, %cst : tensor<64x1xi32>
      %acc_14 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %acc_15 = tt.addptr %acc_14, %acc_13 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %acc_16 = tt.expand_dims %offs_n_10 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_17 = tt.broadcast %acc_15 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %acc_18 = tt.broadcast %acc_16 : tensor<1x32xi32> -> tensor<64x32xi32>
      %acc_19 = tt.addptr %acc_17, %acc_18 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %acc_20 = tt.load %acc_19 : tensor<64x32x!tt.ptr<bf16>>
      %acc_21 = tt.expand_dims %offs_n_12 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_22 = arith.muli %acc_21, %cst_0 : tensor<1x32xi32>
      %acc_23 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %acc_24 = tt.addptr %acc_23, %acc_22 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %acc_25 = tt.expand_dims %offs_n_10 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %acc_26 = tt.broadcast %acc_24 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %acc_27 = tt.broadcast %acc_25 : tensor<32x1xi32> -> tensor<32x32xi32>
      %acc_28 = tt.addptr %acc_26, %acc_27 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %acc_29 = tt.load %acc_28 : tensor<32x32x!tt.ptr<bf16>>
      %acc_30 = tt.dot %acc_20, %acc_29, %cst_1, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %mx_31 = math.absf %acc_30 : tensor<64x32xf32>
      %mx_32 = "tt.reduce"(%mx_31) <{axis = 1 : i32}> ({
      ^bb0(%mx_34: f32, %mx_35: f32):
        %mx_36 = arith.maxnumf %mx_34, %mx_35 : f32
        tt.reduce.return %mx_36 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %mx_33 = arith.maxnumf %mx_9, %mx_32 : tensor<64xf32>
      %1 = arith.muli %acc, %cst_3 : tensor<64x1xi32>
      %2 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %1 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %4 = tt.splat %offs_n : i32 -> tensor<64x1xi32>
      %5 = tt.addptr %3, %4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %6 = tt.broadcast %5 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %7 = tt.addptr %6, %acc_18 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %8 = arith.truncf %acc_30 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %7, %8 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %mx_33 : tensor<64xf32>
    }
    %0 = arith.divf %cst_2, %mx_8 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %p = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %p_9 = arith.muli %p, %cst_3 : tensor<64x1xi32>
      %p_10 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %p_11 = tt.addptr %p_10, %p_9 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_12 = arith.muli %n, %c32_i32 : i32
      %p_13 = tt.splat %p_12 : i32 -> tensor<64x1xi32>
      %p_14 = tt.addptr %p_11, %p_13 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %p_16 = tt.expand_dims %p_15 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %p_17 = tt.broadcast %p_14 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %p_18 = tt.broadcast %p_16 : tensor<1x32xi32> -> tensor<64x32xi32>
      %p_19 = tt.addptr %p_17, %p_18 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %1 = tt.load %p_19 : tensor<64x32x!tt.ptr<bf16>>
      %2 = arith.extf %1 : tensor<64x32xbf16> to tensor<64x32xf32>
      %3 = tt.expand_dims %0 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %4 = tt.broadcast %3 : tensor<64x1xf32> -> tensor<64x32xf32>
      %5 = arith.mulf %2, %4 : tensor<64x32xf32>
      %6 = arith.truncf %5 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %p_19, %6 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: the sum starts at 1.0, which every CTA would add.
// CHECK-LABEL: tt.func public @negative_nonzero_init
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: row statistic {{.+}} does not start at zero

module {
  tt.func public @negative_nonzero_init(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %cst_3 = arith.constant dense<128> : tensor<64x1xi32>
    %cst_4 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_5 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m_5 : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %ss = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_9 = %cst_4) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_10 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_11 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_12 = arith.addi %offs_n_11, %offs_n_10 : tensor<32xi32>
      %acc = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %acc_13 = arith.muli %acc, %cst : tensor<64x1xi32>
      %acc_14 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %acc_15 = tt.addptr %acc_14, %acc_13 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %acc_16 = tt.expand_dims %offs_n_10 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_17 = tt.broadcast %acc_15 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %acc_18 = tt.broadcast %acc_16 : tensor<1x32xi32> -> tensor<64x32xi32>
      %acc_19 = tt.addptr %acc_17, %acc_18 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %acc_20 = tt.load %acc_19 : tensor<64x32x!tt.ptr<bf16>>
      %acc_21 = tt.expand_dims %offs_n_12 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_22 = arith.muli %acc_21, %cst_0 : tensor<1x32xi32>
      %acc_23 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %acc_24 = tt.addptr %acc_23, %acc_22 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %acc_25 = tt.expand_dims %offs_n_10 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %acc_26 = tt.broadcast %acc_24 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %acc_27 = tt.broadcast %acc_25 : tensor<32x1xi32> -> tensor<32x32xi32>
      %acc_28 = tt.addptr %acc_26, %acc_27 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %acc_29 = tt.load %acc_28 : tensor<32x32x!tt.ptr<bf16>>
      %acc_30 = tt.dot %acc_20, %acc_29, %cst_1, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %ss_31 = arith.mulf %acc_30, %acc_30 : tensor<64x32xf32>
      %ss_32 = "tt.reduce"(%ss_31) <{axis = 1 : i32}> ({
      ^bb0(%ss_34: f32, %ss_35: f32):
        %ss_36 = arith.addf %ss_34, %ss_35 : f32
        tt.reduce.return %ss_36 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_33 = arith.addf %ss_9, %ss_32 : tensor<64xf32>
      %3 = arith.muli %acc, %cst_3 : tensor<64x1xi32>
      %4 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %5 = tt.addptr %4, %3 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %6 = tt.splat %offs_n : i32 -> tensor<64x1xi32>
      %7 = tt.addptr %5, %6 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %8 = tt.broadcast %7 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %9 = tt.addptr %8, %acc_18 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %10 = arith.truncf %acc_30 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %9, %10 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %ss_33 : tensor<64xf32>
    }
    %0 = arith.divf %ss, %cst_2 : tensor<64xf32>
    %1 = math.sqrt %0 : tensor<64xf32>
    %2 = arith.divf %cst_4, %1 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %p = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %p_9 = arith.muli %p, %cst_3 : tensor<64x1xi32>
      %p_10 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %p_11 = tt.addptr %p_10, %p_9 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_12 = arith.muli %n, %c32_i32 : i32
      %p_13 = tt.splat %p_12 : i32 -> tensor<64x1xi32>
      %p_14 = tt.addptr %p_11, %p_13 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %p_16 = tt.expand_dims %p_15 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %p_17 = tt.broadcast %p_14 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %p_18 = tt.broadcast %p_16 : tensor<1x32xi32> -> tensor<64x32xi32>
      %p_19 = tt.addptr %p_17, %p_18 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %3 = tt.load %p_19 : tensor<64x32x!tt.ptr<bf16>>
      %4 = arith.extf %3 : tensor<64x32xbf16> to tensor<64x32xf32>
      %5 = tt.expand_dims %2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %6 = tt.broadcast %5 : tensor<64x1xf32> -> tensor<64x32xf32>
      %7 = arith.mulf %4, %6 : tensor<64x32xf32>
      %8 = arith.truncf %7 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %p_19, %8 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: the loop over row blocks carries a value across row blocks.
// CHECK-LABEL: tt.func public @negative_outer_carried
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: the loop over row blocks carries values across row blocks

module {
  tt.func public @negative_outer_carried(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %Z: !tt.ptr<f32>) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_3 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %cst_4 = arith.constant dense<128> : tensor<64x1xi32>
    %c64_i32 = arith.constant 64 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %0 = tt.get_program_id x : i32
    %1 = tt.get_num_programs x : i32
    %total = scf.for %rb = %0 to %c64_i32 step %1 iter_args(%total_6 = %cst_5) -> (tensor<64xf32>)  : i32 {
      %offs_m = arith.muli %rb, %c64_i32 : i32
      %offs_m_7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %offs_m_8 = tt.splat %offs_m : i32 -> tensor<64xi32>
      %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<64xi32>
      %ss = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_11 = %cst_5) -> (tensor<64xf32>)  : i32 {
        %offs_n = arith.muli %n, %c32_i32 : i32
        %offs_n_12 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
        %offs_n_13 = tt.splat %offs_n : i32 -> tensor<32xi32>
        %offs_n_14 = arith.addi %offs_n_13, %offs_n_12 : tensor<32xi32>
        %acc = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %acc_15 = arith.muli %acc, %cst : tensor<64x1xi32>
        %acc_16 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %acc_17 = tt.addptr %acc_16, %acc_15 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %acc_18 = tt.expand_dims %offs_n_12 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %acc_19 = tt.broadcast %acc_17 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %acc_20 = tt.broadcast %acc_18 : tensor<1x32xi32> -> tensor<64x32xi32>
        %acc_21 = tt.addptr %acc_19, %acc_20 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %acc_22 = tt.load %acc_21 : tensor<64x32x!tt.ptr<bf16>>
        %acc_23 = tt.expand_dims %offs_n_14 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %acc_24 = arith.muli %acc_23, %cst_0 : tensor<1x32xi32>
        %acc_25 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
        %acc_26 = tt.addptr %acc_25, %acc_24 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
        %acc_27 = tt.expand_dims %offs_n_12 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %acc_28 = tt.broadcast %acc_26 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %acc_29 = tt.broadcast %acc_27 : tensor<32x1xi32> -> tensor<32x32xi32>
        %acc_30 = tt.addptr %acc_28, %acc_29 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %acc_31 = tt.load %acc_30 : tensor<32x32x!tt.ptr<bf16>>
        %acc_32 = tt.dot %acc_22, %acc_31, %cst_1, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        %ss_33 = arith.mulf %acc_32, %acc_32 : tensor<64x32xf32>
        %ss_34 = "tt.reduce"(%ss_33) <{axis = 1 : i32}> ({
        ^bb0(%ss_36: f32, %ss_37: f32):
          %ss_38 = arith.addf %ss_36, %ss_37 : f32
          tt.reduce.return %ss_38 : f32
        }) : (tensor<64x32xf32>) -> tensor<64xf32>
        %ss_35 = arith.addf %ss_11, %ss_34 : tensor<64xf32>
        %8 = arith.muli %acc, %cst_4 : tensor<64x1xi32>
        %9 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %10 = tt.addptr %9, %8 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %11 = tt.splat %offs_n : i32 -> tensor<64x1xi32>
        %12 = tt.addptr %10, %11 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %13 = tt.broadcast %12 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %14 = tt.addptr %13, %acc_20 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %15 = arith.truncf %acc_32 : tensor<64x32xf32> to tensor<64x32xbf16>
        tt.store %14, %15 : tensor<64x32x!tt.ptr<bf16>>
        scf.yield %ss_35 : tensor<64xf32>
      }
      %5 = arith.divf %ss, %cst_3 : tensor<64xf32>
      %6 = math.sqrt %5 : tensor<64xf32>
      %7 = arith.divf %cst_2, %6 : tensor<64xf32>
      scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
        %p = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %p_11 = arith.muli %p, %cst_4 : tensor<64x1xi32>
        %p_12 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %p_13 = tt.addptr %p_12, %p_11 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %p_14 = arith.muli %n, %c32_i32 : i32
        %p_15 = tt.splat %p_14 : i32 -> tensor<64x1xi32>
        %p_16 = tt.addptr %p_13, %p_15 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %p_17 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
        %p_18 = tt.expand_dims %p_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %p_19 = tt.broadcast %p_16 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %p_20 = tt.broadcast %p_18 : tensor<1x32xi32> -> tensor<64x32xi32>
        %p_21 = tt.addptr %p_19, %p_20 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %8 = tt.load %p_21 : tensor<64x32x!tt.ptr<bf16>>
        %9 = arith.extf %8 : tensor<64x32xbf16> to tensor<64x32xf32>
        %10 = tt.expand_dims %7 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
        %11 = tt.broadcast %10 : tensor<64x1xf32> -> tensor<64x32xf32>
        %12 = arith.mulf %9, %11 : tensor<64x32xf32>
        %13 = arith.truncf %12 : tensor<64x32xf32> to tensor<64x32xbf16>
        tt.store %p_21, %13 : tensor<64x32x!tt.ptr<bf16>>
      }
      %total_10 = arith.addf %total_6, %ss : tensor<64xf32>
      scf.yield %total_10 : tensor<64xf32>
    }
    %2 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %3 = tt.splat %Z : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %4 = tt.addptr %3, %2 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %4, %total : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out: a store of the partial statistic between the loops.
// CHECK-LABEL: tt.func public @negative_store_between
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: 'tt.store' with side effects between the two loops over N tiles

module {
  tt.func public @negative_store_between(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %Z: !tt.ptr<f32>) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_3 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %cst_4 = arith.constant dense<128> : tensor<64x1xi32>
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_5 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m_5 : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %ss_9 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_10 = %ss) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_11 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_12 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_13 = arith.addi %offs_n_12, %offs_n_11 : tensor<32xi32>
      %acc = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %acc_14 = arith.muli %acc, %cst : tensor<64x1xi32>
      %acc_15 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %acc_16 = tt.addptr %acc_15, %acc_14 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %acc_17 = tt.expand_dims %offs_n_11 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_18 = tt.broadcast %acc_16 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %acc_19 = tt.broadcast %acc_17 : tensor<1x32xi32> -> tensor<64x32xi32>
      %acc_20 = tt.addptr %acc_18, %acc_19 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %acc_21 = tt.load %acc_20 : tensor<64x32x!tt.ptr<bf16>>
      %acc_22 = tt.expand_dims %offs_n_13 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %acc_23 = arith.muli %acc_22, %cst_0 : tensor<1x32xi32>
      %acc_24 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %acc_25 = tt.addptr %acc_24, %acc_23 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %acc_26 = tt.expand_dims %offs_n_11 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %acc_27 = tt.broadcast %acc_25 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %acc_28 = tt.broadcast %acc_26 : tensor<32x1xi32> -> tensor<32x32xi32>
      %acc_29 = tt.addptr %acc_27, %acc_28 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %acc_30 = tt.load %acc_29 : tensor<32x32x!tt.ptr<bf16>>
      %acc_31 = tt.dot %acc_21, %acc_30, %cst_1, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %ss_32 = arith.mulf %acc_31, %acc_31 : tensor<64x32xf32>
      %ss_33 = "tt.reduce"(%ss_32) <{axis = 1 : i32}> ({
      ^bb0(%ss_35: f32, %ss_36: f32):
        %ss_37 = arith.addf %ss_35, %ss_36 : f32
        tt.reduce.return %ss_37 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_34 = arith.addf %ss_10, %ss_33 : tensor<64xf32>
      %5 = arith.muli %acc, %cst_4 : tensor<64x1xi32>
      %6 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %7 = tt.addptr %6, %5 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %8 = tt.splat %offs_n : i32 -> tensor<64x1xi32>
      %9 = tt.addptr %7, %8 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %10 = tt.broadcast %9 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %11 = tt.addptr %10, %acc_19 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %12 = arith.truncf %acc_31 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %11, %12 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %ss_34 : tensor<64xf32>
    }
    %0 = tt.splat %Z : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %1 = tt.addptr %0, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %1, %ss_9 : tensor<64x!tt.ptr<f32>>
    %2 = arith.divf %ss_9, %cst_3 : tensor<64xf32>
    %3 = math.sqrt %2 : tensor<64xf32>
    %4 = arith.divf %cst_2, %3 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %p = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %p_10 = arith.muli %p, %cst_4 : tensor<64x1xi32>
      %p_11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %p_12 = tt.addptr %p_11, %p_10 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_13 = arith.muli %n, %c32_i32 : i32
      %p_14 = tt.splat %p_13 : i32 -> tensor<64x1xi32>
      %p_15 = tt.addptr %p_12, %p_14 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %p_17 = tt.expand_dims %p_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %p_18 = tt.broadcast %p_15 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %p_19 = tt.broadcast %p_17 : tensor<1x32xi32> -> tensor<64x32xi32>
      %p_20 = tt.addptr %p_18, %p_19 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %5 = tt.load %p_20 : tensor<64x32x!tt.ptr<bf16>>
      %6 = arith.extf %5 : tensor<64x32xbf16> to tensor<64x32xf32>
      %7 = tt.expand_dims %4 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %8 = tt.broadcast %7 : tensor<64x1xf32> -> tensor<64x32xf32>
      %9 = arith.mulf %6, %8 : tensor<64x32xf32>
      %10 = arith.truncf %9 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %p_20, %10 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}
