// cluster-reduce-chain: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/cluster_reduce_chain_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --cluster-reduce-chain %s >%t 2>%t.remark
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=FWD < %t
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{forward-reloads=false}' %s 2>/dev/null | FileCheck %s --check-prefix=NOFWD
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{cluster-size=2}' %s 2>/dev/null | FileCheck %s --check-prefix=TWO
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{cluster-size=17}' %s 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{scratch=arg11:arg13}' %s >%t.scratch 2>%t.scratch-remark
// RUN: FileCheck %s --check-prefix=SCRATCH < %t.scratch
// RUN: FileCheck %s --check-prefix=SCRATCH-REMARK < %t.scratch-remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{scratch=arg12:arg99}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=NOSCRATCH

// BADOPT: option cluster-reduce-chain{cluster-size} must be in 2..16, got 17

// Three loops over 4 heads -> a 4-CTA cluster, one head per CTA; two exchanges (1 sum, then 2)
// in alternating slot sets (2 x 128 B), an arrive after the last reads, the wait before the return.
// CHECK-LABEL: tt.func public @chain_three_loops
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK: %[[BLK:.+]] = arith.divsi %[[PID]], %[[C]] : i32
// CHECK-NOT: scf.for
// CHECK: %[[P1:.+]] = arith.addf %{{.+}} : tensor<16xf32>
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}} %[[ROWS:.+]], %[[P1]] :
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: %[[T1:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 3;{{.*}}" {{.*}} %[[ROWS]] : tensor<16xi32> -> tensor<16xf32>
// CHECK: arith.divf %[[T1]]
// CHECK: %[[SET1:.+]] = arith.addi %{{.+}}, %{{.+}} : tensor<16xi32>
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;{{.*}}" {{.*}} %[[SET1]], %{{.+}}, %{{.+}} :
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.elementwise_inline_asm "{{.*}}mapa{{.*}}" {{.*}} %[[SET1]] : tensor<16xi32> -> tensor<16xf32>, tensor<16xf32>
// CHECK: barrier.cluster.arrive.release; mov
// CHECK: tt.store
// CHECK: barrier.cluster.wait.acquire; mov
// CHECK-NEXT: tt.return
// REMARK: remark: [cluster-reduce-chain] applied: chain of 3 loops of 4 trips split over a 4-CTA cluster, one trip per CTA (the loops inlined, 2 reloads of this CTA's own stores forwarded through registers); 2 exchanges of 1, 2 row sum(s) through distributed shared memory (256 B per CTA, 2 slot sets)
// The reloads of Z and G read what this CTA stored: forwarded, only the load of X is left.
// FWD-LABEL: tt.func public @chain_three_loops
// FWD: tt.load
// FWD-NOT: tt.load
// FWD: tt.return
// NOFWD-LABEL: tt.func public @chain_three_loops
// NOFWD-COUNT-3: tt.load
// NOFWD-NOT: tt.load
// NOFWD: tt.return
// TWO-LABEL: tt.func public @chain_three_loops
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// TWO: scf.for %{{.+}} = %[[RANK:.+]] to %{{.+}} step %[[C2:.+]] iter_args
// TWO: scf.for %{{.+}} = %[[RANK]] to %{{.+}} step %[[C2]] iter_args
// TWO: scf.for %{{.+}} = %[[RANK]] to %{{.+}} step %[[C2]]  : i32


module {
  tt.func public @chain_three_loops(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %G: !tt.ptr<f32>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<4> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<1.000000e+00> : tensor<16x16xf32>
    %cst_3 = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %cst_4 = arith.constant dense<9.99999974E-6> : tensor<16xf32>
    %cst_5 = arith.constant dense<6.400000e+01> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_6 = arith.muli %rows, %c16_i32 : i32
    %rows_7 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_8 = tt.splat %rows_6 : i32 -> tensor<16xi32>
    %rows_9 = arith.addi %rows_8, %rows_7 : tensor<16xi32>
    %ss = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_18 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_19 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_20 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_21 = arith.addi %x_19, %x_20 : tensor<16x1xi32>
      %x_22 = arith.muli %x_21, %cst_0 : tensor<16x1xi32>
      %x_23 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_24 = tt.addptr %x_23, %x_22 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_25 = tt.expand_dims %rows_7 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_26 = tt.broadcast %x_24 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_27 = tt.broadcast %x_25 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_28 = tt.addptr %x_26, %x_27 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_29 = tt.load %x_28 : tensor<16x16x!tt.ptr<bf16>>
      %x_30 = arith.extf %x_29 : tensor<16x16xbf16> to tensor<16x16xf32>
      %0 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %x_22 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %x_27 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %3, %x_30 : tensor<16x16x!tt.ptr<f32>>
      %ss_31 = arith.mulf %x_30, %x_30 : tensor<16x16xf32>
      %ss_32 = "tt.reduce"(%ss_31) <{axis = 1 : i32}> ({
      ^bb0(%ss_34: f32, %ss_35: f32):
        %ss_36 = arith.addf %ss_34, %ss_35 : f32
        tt.reduce.return %ss_36 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_33 = arith.addf %ss_18, %ss_32 : tensor<16xf32>
      scf.yield %ss_33 : tensor<16xf32>
    }
    %r = arith.divf %ss, %cst_5 : tensor<16xf32>
    %r_10 = arith.addf %r, %cst_4 : tensor<16xf32>
    %r_11 = math.sqrt %r_10 : tensor<16xf32>
    %r_12 = arith.divf %cst_3, %r_11 : tensor<16xf32>
    %s2:2 = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%s1 = %cst_1, %s2_18 = %cst_1) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
      %y = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_19 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_20 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_21 = arith.addi %y_19, %y_20 : tensor<16x1xi32>
      %y_22 = arith.muli %y_21, %cst_0 : tensor<16x1xi32>
      %y_23 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_24 = tt.addptr %y_23, %y_22 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_25 = tt.expand_dims %rows_7 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_26 = tt.broadcast %y_24 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_27 = tt.broadcast %y_25 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_28 = tt.addptr %y_26, %y_27 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_29 = tt.load %y_28 : tensor<16x16x!tt.ptr<f32>>
      %y_30 = tt.expand_dims %r_12 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_31 = tt.broadcast %y_30 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_32 = arith.mulf %y_29, %y_31 : tensor<16x16xf32>
      %y_33 = arith.addf %y_32, %cst_2 : tensor<16x16xf32>
      %0 = tt.splat %G : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %y_22 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %y_27 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %3, %y_33 : tensor<16x16x!tt.ptr<f32>>
      %s1_34 = "tt.reduce"(%y_33) <{axis = 1 : i32}> ({
      ^bb0(%s1_39: f32, %s1_40: f32):
        %s1_41 = arith.addf %s1_39, %s1_40 : f32
        tt.reduce.return %s1_41 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s1_35 = arith.addf %s1, %s1_34 : tensor<16xf32>
      %s2_36 = arith.mulf %y_33, %y_33 : tensor<16x16xf32>
      %s2_37 = "tt.reduce"(%s2_36) <{axis = 1 : i32}> ({
      ^bb0(%s2_39: f32, %s2_40: f32):
        %s2_41 = arith.addf %s2_39, %s2_40 : f32
        tt.reduce.return %s2_41 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %s2_38 = arith.addf %s2_18, %s2_37 : tensor<16xf32>
      scf.yield %s1_35, %s2_38 : tensor<16xf32>, tensor<16xf32>
    }
    %mean = arith.divf %s2#0, %cst_5 : tensor<16xf32>
    %rstd = arith.divf %s2#1, %cst_5 : tensor<16xf32>
    %rstd_13 = arith.mulf %mean, %mean : tensor<16xf32>
    %rstd_14 = arith.subf %rstd, %rstd_13 : tensor<16xf32>
    %rstd_15 = arith.addf %rstd_14, %cst_4 : tensor<16xf32>
    %rstd_16 = math.sqrt %rstd_15 : tensor<16xf32>
    %rstd_17 = arith.divf %cst_3, %rstd_16 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %y = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_18 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_19 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_20 = arith.addi %y_18, %y_19 : tensor<16x1xi32>
      %y_21 = arith.muli %y_20, %cst_0 : tensor<16x1xi32>
      %y_22 = tt.splat %G : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_23 = tt.addptr %y_22, %y_21 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_24 = tt.expand_dims %rows_7 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_25 = tt.broadcast %y_23 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_26 = tt.broadcast %y_24 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_27 = tt.addptr %y_25, %y_26 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_28 = tt.load %y_27 : tensor<16x16x!tt.ptr<f32>>
      %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %1 = tt.addptr %0, %y_21 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %y_26 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %4 = tt.expand_dims %mean {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %5 = tt.broadcast %4 : tensor<16x1xf32> -> tensor<16x16xf32>
      %6 = arith.subf %y_28, %5 : tensor<16x16xf32>
      %7 = tt.expand_dims %rstd_17 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %8 = tt.broadcast %7 : tensor<16x1xf32> -> tensor<16x16xf32>
      %9 = arith.mulf %6, %8 : tensor<16x16xf32>
      %10 = arith.truncf %9 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %3, %10 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Two loops over 3 heads -> a 3-CTA cluster, one exchange, one slot set.
// CHECK-LABEL: tt.func public @chain_two_loops
// CHECK-SAME: normfuse.cluster_dims = 3 : i32, normfuse.cluster_smem = 64 : i32
// CHECK-NOT: scf.for
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 2;
// CHECK-NOT: mapa.shared::cluster.u32 %nfp, %nfa, 3;
// REMARK: remark: [cluster-reduce-chain] applied: chain of 2 loops of 3 trips split over a 3-CTA cluster, one trip per CTA (the loops inlined, 1 reload of this CTA's own stores forwarded through registers); 1 exchanges of 1 row sum(s) through distributed shared memory (64 B per CTA, 1 slot set)
// TWO-LABEL: tt.func public @chain_two_loops
// TWO-SAME: normfuse.cluster_dims = 2 : i32


module {
  tt.func public @chain_two_loops(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<3> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %ss = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c1_i32 = arith.constant 1 : i32
    %c3_i32 = arith.constant 3 : i32
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %r_1 = arith.constant dense<9.99999974E-6> : tensor<16xf32>
    %r_2 = arith.constant dense<4.800000e+01> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_3 = arith.muli %rows, %c16_i32 : i32
    %rows_4 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_5 = tt.splat %rows_3 : i32 -> tensor<16xi32>
    %rows_6 = arith.addi %rows_5, %rows_4 : tensor<16xi32>
    %ss_7 = scf.for %h = %c0_i32 to %c3_i32 step %c1_i32 iter_args(%ss_12 = %ss) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_13 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_14 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_15 = arith.addi %x_13, %x_14 : tensor<16x1xi32>
      %x_16 = arith.muli %x_15, %cst_0 : tensor<16x1xi32>
      %x_17 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_18 = tt.addptr %x_17, %x_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_19 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_20 = tt.broadcast %x_18 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_21 = tt.broadcast %x_19 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_22 = tt.addptr %x_20, %x_21 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_23 = tt.load %x_22 : tensor<16x16x!tt.ptr<bf16>>
      %x_24 = arith.extf %x_23 : tensor<16x16xbf16> to tensor<16x16xf32>
      %0 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %x_16 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %x_21 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %3, %x_24 : tensor<16x16x!tt.ptr<f32>>
      %ss_25 = arith.mulf %x_24, %x_24 : tensor<16x16xf32>
      %ss_26 = "tt.reduce"(%ss_25) <{axis = 1 : i32}> ({
      ^bb0(%ss_28: f32, %ss_29: f32):
        %ss_30 = arith.addf %ss_28, %ss_29 : f32
        tt.reduce.return %ss_30 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_27 = arith.addf %ss_12, %ss_26 : tensor<16xf32>
      scf.yield %ss_27 : tensor<16xf32>
    }
    %r_8 = arith.divf %ss_7, %r_2 : tensor<16xf32>
    %r_9 = arith.addf %r_8, %r_1 : tensor<16xf32>
    %r_10 = math.sqrt %r_9 : tensor<16xf32>
    %r_11 = arith.divf %r, %r_10 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c3_i32 step %c1_i32  : i32 {
      %y = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_12 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_13 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_14 = arith.addi %y_12, %y_13 : tensor<16x1xi32>
      %y_15 = arith.muli %y_14, %cst_0 : tensor<16x1xi32>
      %y_16 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_17 = tt.addptr %y_16, %y_15 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_18 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_19 = tt.broadcast %y_17 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_20 = tt.broadcast %y_18 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_21 = tt.addptr %y_19, %y_20 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_22 = tt.load %y_21 : tensor<16x16x!tt.ptr<f32>>
      %y_23 = tt.expand_dims %r_11 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_24 = tt.broadcast %y_23 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_25 = arith.mulf %y_22, %y_24 : tensor<16x16xf32>
      %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %1 = tt.addptr %0, %y_15 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %y_20 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %4 = arith.truncf %y_25 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %3, %4 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// The FlashNormAttention backward's rows kernel (H = 2): RMS backward sum, then the two LN
// backward sums, exchanged over a 2-CTA cluster; the attention backward's dots stay per CTA.
// CHECK-LABEL: tt.func public @fna_bwd_rows
// CHECK-SAME: normfuse.cluster_dims = 2 : i32
// CHECK-NOT: scf.for %{{.+}} = %c0_i32 to %c2_i32
// CHECK: tt.dot
// CHECK: st.shared.f32 [%nfa+0], $2;
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 1;
// CHECK: tt.dot
// CHECK: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 1;
// CHECK: barrier.cluster.arrive.release; mov
// CHECK: tt.store
// CHECK: barrier.cluster.wait.acquire; mov
// REMARK: remark: [cluster-reduce-chain] applied: chain of 3 loops of 2 trips split over a 2-CTA cluster
// With z (arg11, Z) and dlnq (arg13, DLNQ) declared scratch (the op allocates them for this
// kernel alone; TTIR without locations names its parameters by position), their stores go once
// every reload is forwarded: no fp32 [16, 16] tile store is left, dz's bf16 one (arg12, which
// the dK / dV kernel reads) stays.
// SCRATCH-LABEL: tt.func public @fna_bwd_rows
// SCRATCH-NOT: tt.store {{.*}} : tensor<16x16x!tt.ptr<f32>>
// SCRATCH: tt.store {{.*}} : tensor<16x16x!tt.ptr<bf16>>
// SCRATCH-NOT: tt.store {{.*}} : tensor<16x16x!tt.ptr<f32>>
// SCRATCH: tt.return
// SCRATCH-REMARK: remark: [cluster-reduce-chain] applied: chain of 3 loops of 2 trips split over a 2-CTA cluster, {{.*}}; the stores to scratch arg11, arg13 erased (every reload forwarded)
// A parameter the kernel never reloads is its caller's (dz), and a name that is no parameter is
// said so; both keep their stores.
// NOSCRATCH: remark: [cluster-reduce-chain] applied: chain of 3 loops of 2 trips split over a 2-CTA cluster, {{.*}}; scratch kept: 'arg12' (the kernel never reloads it: what it stores is its caller's); 'arg99' is not a pointer parameter of the kernel


module {
  tt.func public @fna_bwd_rows(%X: !tt.ptr<bf16>, %DOUT: !tt.ptr<bf16>, %K: !tt.ptr<bf16>, %V: !tt.ptr<bf16>, %MEAN: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %RRMS: !tt.ptr<f32>, %LNW: !tt.ptr<bf16>, %LNB: !tt.ptr<bf16>, %RMSW: !tt.ptr<bf16>, %ROWS: !tt.ptr<i32>, %Z: !tt.ptr<f32>, %DZ: !tt.ptr<bf16>, %DLNQ: !tt.ptr<f32>, %STAT: !tt.ptr<f32>, %DX: !tt.ptr<bf16>, %DW_PART: !tt.ptr<f32>, %L: i32, %stride_kb: i32, %stride_kl: i32, %qk_scale: f32) attributes {noinline = false} {
    %cst = arith.constant dense<1.59576917> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<1.341450e-01> : tensor<16x16xf32>
    %cst_1 = arith.constant dense<1.000000e+00> : tensor<16x16xf32>
    %cst_2 = arith.constant dense<-2.30220819> : tensor<16x16xf32>
    %cst_3 = arith.constant dense<-0.102943242> : tensor<16x16xf32>
    %c96_i32 = arith.constant 96 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<16x16xbf16>
    %c64_i32 = arith.constant 64 : i32
    %c32_i32 = arith.constant 32 : i32
    %cst_5 = arith.constant dense<3.125000e-02> : tensor<16xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_7 = arith.constant dense<16> : tensor<16x1xi32>
    %c16_i32 = arith.constant 16 : i32
    %cst_8 = arith.constant dense<2> : tensor<16x1xi32>
    %cst_9 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c0_i32 = arith.constant 0 : i32
    %c2_i32 = arith.constant 2 : i32
    %c1_i32 = arith.constant 1 : i32
    %c3_i32 = arith.constant 3 : i32
    %pid = tt.get_program_id x : i32
    %b = arith.muli %pid, %c3_i32 : i32
    %b_10 = tt.addptr %ROWS, %b : !tt.ptr<i32>, i32
    %b_11 = tt.load %b_10 : !tt.ptr<i32>
    %start = tt.addptr %b_10, %c1_i32 : !tt.ptr<i32>, i32
    %start_12 = tt.load %start : !tt.ptr<i32>
    %end = tt.addptr %b_10, %c2_i32 : !tt.ptr<i32>, i32
    %end_13 = tt.load %end : !tt.ptr<i32>
    %nkeys = arith.cmpi slt, %start_12, %end_13 : i32
    %nkeys_14 = arith.select %nkeys, %L, %c0_i32 : i32
    %rows = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_15 = tt.splat %start_12 : i32 -> tensor<16xi32>
    %rows_16 = arith.addi %rows_15, %rows : tensor<16xi32>
    %rmask = tt.splat %end_13 : i32 -> tensor<16xi32>
    %rmask_17 = arith.cmpi slt, %rows_16, %rmask : tensor<16xi32>
    %tmask = tt.expand_dims %rmask_17 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
    %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %mean_18 = tt.addptr %mean, %rows_16 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %mean_19 = tt.load %mean_18, %rmask_17, %cst_9 : tensor<16x!tt.ptr<f32>>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %rstd_20 = tt.addptr %rstd, %rows_16 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %rstd_21 = tt.load %rstd_20, %rmask_17, %cst_9 : tensor<16x!tt.ptr<f32>>
    %rrms = tt.splat %RRMS : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %rrms_22 = tt.addptr %rrms, %rows_16 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %rrms_23 = tt.load %rrms_22, %rmask_17, %cst_9 : tensor<16x!tt.ptr<f32>>
    %c = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c_27 = %cst_9) -> (tensor<16xf32>)  : i32 {
      %tile = tt.expand_dims %rows_16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %tile_28 = arith.muli %tile, %cst_8 : tensor<16x1xi32>
      %tile_29 = tt.splat %h : i32 -> tensor<16x1xi32>
      %tile_30 = arith.addi %tile_28, %tile_29 : tensor<16x1xi32>
      %tile_31 = arith.muli %tile_30, %cst_7 : tensor<16x1xi32>
      %tile_32 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %tile_33 = tt.broadcast %tile_31 : tensor<16x1xi32> -> tensor<16x16xi32>
      %tile_34 = tt.broadcast %tile_32 : tensor<1x16xi32> -> tensor<16x16xi32>
      %tile_35 = arith.addi %tile_33, %tile_34 : tensor<16x16xi32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_36 = tt.addptr %x, %tile_31 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_37 = tt.broadcast %x_36 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_38 = tt.addptr %x_37, %tile_34 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_39 = tt.broadcast %tmask : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_40 = tt.load %x_38, %x_39, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
      %x_41 = arith.extf %x_40 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xhat = tt.expand_dims %mean_19 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xhat_42 = tt.broadcast %xhat : tensor<16x1xf32> -> tensor<16x16xf32>
      %xhat_43 = arith.subf %x_41, %xhat_42 : tensor<16x16xf32>
      %xhat_44 = tt.expand_dims %rstd_21 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xhat_45 = tt.broadcast %xhat_44 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xhat_46 = arith.mulf %xhat_43, %xhat_45 : tensor<16x16xf32>
      %a = arith.muli %h, %c16_i32 : i32
      %a_47 = tt.addptr %LNW, %a : !tt.ptr<bf16>, i32
      %a_48 = tt.splat %a_47 : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %a_49 = tt.addptr %a_48, %rows : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
      %a_50 = tt.load %a_49 : tensor<16x!tt.ptr<bf16>>
      %a_51 = arith.extf %a_50 : tensor<16xbf16> to tensor<16xf32>
      %lnq = tt.expand_dims %a_51 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %lnq_52 = tt.broadcast %lnq : tensor<1x16xf32> -> tensor<16x16xf32>
      %lnq_53 = arith.mulf %xhat_46, %lnq_52 : tensor<16x16xf32>
      %lnq_54 = tt.addptr %LNB, %a : !tt.ptr<bf16>, i32
      %lnq_55 = tt.splat %lnq_54 : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %lnq_56 = tt.addptr %lnq_55, %rows : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
      %lnq_57 = tt.load %lnq_56 : tensor<16x!tt.ptr<bf16>>
      %lnq_58 = arith.extf %lnq_57 : tensor<16xbf16> to tensor<16xf32>
      %lnq_59 = tt.expand_dims %lnq_58 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %lnq_60 = tt.broadcast %lnq_59 : tensor<1x16xf32> -> tensor<16x16xf32>
      %lnq_61 = arith.addf %lnq_53, %lnq_60 : tensor<16x16xf32>
      %kvh = arith.divsi %h, %c2_i32 : i32
      %q = arith.truncf %lnq_61 : tensor<16x16xf32> to tensor<16x16xbf16>
      %z = scf.for %l0 = %c0_i32 to %nkeys_14 step %c16_i32 iter_args(%z_76 = %lnq_61) -> (tensor<16x16xf32>)  : i32 {
        %offs_l = tt.splat %l0 : i32 -> tensor<16xi32>
        %offs_l_77 = arith.addi %offs_l, %rows : tensor<16xi32>
        %k = tt.splat %L : i32 -> tensor<16xi32>
        %k_78 = arith.cmpi slt, %offs_l_77, %k : tensor<16xi32>
        %k_79 = tt.expand_dims %k_78 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %k_80 = arith.muli %b_11, %stride_kb : i32
        %k_81 = tt.addptr %K, %k_80 : !tt.ptr<bf16>, i32
        %k_82 = tt.expand_dims %offs_l_77 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %k_83 = tt.splat %stride_kl : i32 -> tensor<16x1xi32>
        %k_84 = arith.muli %k_82, %k_83 : tensor<16x1xi32>
        %k_85 = tt.splat %k_81 : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %k_86 = tt.addptr %k_85, %k_84 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %k_87 = arith.muli %kvh, %c16_i32 : i32
        %k_88 = tt.splat %k_87 : i32 -> tensor<16x1xi32>
        %k_89 = tt.addptr %k_86, %k_88 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %k_90 = tt.broadcast %k_89 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %k_91 = tt.addptr %k_90, %tile_34 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %k_92 = tt.broadcast %k_79 : tensor<16x1xi1> -> tensor<16x16xi1>
        %k_93 = tt.load %k_91, %k_92, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
        %v = tt.addptr %V, %k_80 : !tt.ptr<bf16>, i32
        %v_94 = tt.splat %v : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %v_95 = tt.addptr %v_94, %k_84 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %v_96 = tt.addptr %v_95, %k_88 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %v_97 = tt.broadcast %v_96 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %v_98 = tt.addptr %v_97, %tile_34 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %v_99 = tt.load %v_98, %k_92, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
        %p = tt.trans %k_93 {order = array<i32: 1, 0>} : tensor<16x16xbf16> -> tensor<16x16xbf16>
        %p_100 = tt.dot %q, %p, %cst_6, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %lmask = tt.expand_dims %k_78 {axis = 0 : i32} : tensor<16xi1> -> tensor<1x16xi1>
        %p_101 = arith.mulf %p_100, %p_100 : tensor<16x16xf32>
        %p_102 = math.fma %p_101, %cst_3, %cst_2 : tensor<16x16xf32>
        %p_103 = arith.mulf %p_100, %p_102 : tensor<16x16xf32>
        %p_104 = math.exp2 %p_103 : tensor<16x16xf32>
        %p_105 = arith.addf %p_104, %cst_1 : tensor<16x16xf32>
        %p_106 = tt.elementwise_inline_asm "div.approx.f32 $0, $1, $2;" {constraints = "=f,f,f", packed_element = 1 : i32, pure = true} %cst_1, %p_105 : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
        %p_107 = arith.mulf %p_100, %p_106 : tensor<16x16xf32>
        %p_108 = tt.splat %qk_scale : f32 -> tensor<16x16xf32>
        %p_109 = arith.mulf %p_107, %p_108 : tensor<16x16xf32>
        %p_110 = tt.broadcast %lmask : tensor<1x16xi1> -> tensor<16x16xi1>
        %p_111 = arith.select %p_110, %p_109, %cst_6 : tensor<16x16xi1>, tensor<16x16xf32>
        %z_112 = arith.truncf %p_111 : tensor<16x16xf32> to tensor<16x16xbf16>
        %z_113 = tt.dot %z_112, %v_99, %z_76, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        scf.yield %z_113 : tensor<16x16xf32>
      }
      %0 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
      %1 = tt.addptr %0, %tile_35 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %1, %z, %x_39 : tensor<16x16x!tt.ptr<f32>>
      %do = tt.splat %DOUT : !tt.ptr<bf16> -> tensor<16x16x!tt.ptr<bf16>>
      %do_62 = tt.addptr %do, %tile_35 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %do_63 = tt.load %do_62, %x_39, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
      %do_64 = arith.extf %do_63 : tensor<16x16xbf16> to tensor<16x16xf32>
      %do_65 = tt.addptr %RMSW, %a : !tt.ptr<bf16>, i32
      %do_66 = tt.splat %do_65 : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %do_67 = tt.addptr %do_66, %rows : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
      %do_68 = tt.load %do_67 : tensor<16x!tt.ptr<bf16>>
      %do_69 = arith.extf %do_68 : tensor<16xbf16> to tensor<16xf32>
      %do_70 = tt.expand_dims %do_69 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %do_71 = tt.broadcast %do_70 : tensor<1x16xf32> -> tensor<16x16xf32>
      %do_72 = arith.mulf %do_64, %do_71 : tensor<16x16xf32>
      %c_73 = arith.mulf %do_72, %z : tensor<16x16xf32>
      %c_74 = "tt.reduce"(%c_73) <{axis = 1 : i32}> ({
      ^bb0(%c_76: f32, %c_77: f32):
        %c_78 = arith.addf %c_76, %c_77 : f32
        tt.reduce.return %c_78 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %c_75 = arith.addf %c_27, %c_74 : tensor<16xf32>
      scf.yield %c_75 : tensor<16xf32>
    }
    %cz = arith.mulf %c, %rrms_23 : tensor<16xf32>
    %cz_24 = arith.mulf %cz, %rrms_23 : tensor<16xf32>
    %cz_25 = arith.mulf %cz_24, %cst_5 : tensor<16xf32>
    %c2:2 = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c1_27 = %cst_9, %c2_28 = %cst_9) -> (tensor<16xf32>, tensor<16xf32>)  : i32 {
      %kvh = arith.divsi %h, %c2_i32 : i32
      %tile = tt.expand_dims %rows_16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %tile_29 = arith.muli %tile, %cst_8 : tensor<16x1xi32>
      %tile_30 = tt.splat %h : i32 -> tensor<16x1xi32>
      %tile_31 = arith.addi %tile_29, %tile_30 : tensor<16x1xi32>
      %tile_32 = arith.muli %tile_31, %cst_7 : tensor<16x1xi32>
      %tile_33 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %tile_34 = tt.broadcast %tile_32 : tensor<16x1xi32> -> tensor<16x16xi32>
      %tile_35 = tt.broadcast %tile_33 : tensor<1x16xi32> -> tensor<16x16xi32>
      %tile_36 = arith.addi %tile_34, %tile_35 : tensor<16x16xi32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_37 = tt.addptr %x, %tile_32 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_38 = tt.broadcast %x_37 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_39 = tt.addptr %x_38, %tile_35 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_40 = tt.broadcast %tmask : tensor<16x1xi1> -> tensor<16x16xi1>
      %x_41 = tt.load %x_39, %x_40, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
      %x_42 = arith.extf %x_41 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xhat = tt.expand_dims %mean_19 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xhat_43 = tt.broadcast %xhat : tensor<16x1xf32> -> tensor<16x16xf32>
      %xhat_44 = arith.subf %x_42, %xhat_43 : tensor<16x16xf32>
      %xhat_45 = tt.expand_dims %rstd_21 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xhat_46 = tt.broadcast %xhat_45 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xhat_47 = arith.mulf %xhat_44, %xhat_46 : tensor<16x16xf32>
      %a = arith.muli %h, %c16_i32 : i32
      %a_48 = tt.addptr %LNW, %a : !tt.ptr<bf16>, i32
      %a_49 = tt.splat %a_48 : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %a_50 = tt.addptr %a_49, %rows : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
      %a_51 = tt.load %a_50 : tensor<16x!tt.ptr<bf16>>
      %a_52 = arith.extf %a_51 : tensor<16xbf16> to tensor<16xf32>
      %lnq = tt.expand_dims %a_52 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %lnq_53 = tt.broadcast %lnq : tensor<1x16xf32> -> tensor<16x16xf32>
      %lnq_54 = arith.mulf %xhat_47, %lnq_53 : tensor<16x16xf32>
      %lnq_55 = tt.addptr %LNB, %a : !tt.ptr<bf16>, i32
      %lnq_56 = tt.splat %lnq_55 : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %lnq_57 = tt.addptr %lnq_56, %rows : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
      %lnq_58 = tt.load %lnq_57 : tensor<16x!tt.ptr<bf16>>
      %lnq_59 = arith.extf %lnq_58 : tensor<16xbf16> to tensor<16xf32>
      %lnq_60 = tt.expand_dims %lnq_59 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %lnq_61 = tt.broadcast %lnq_60 : tensor<1x16xf32> -> tensor<16x16xf32>
      %lnq_62 = arith.addf %lnq_54, %lnq_61 : tensor<16x16xf32>
      %z = tt.splat %Z : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
      %z_63 = tt.addptr %z, %tile_36 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %z_64 = tt.load %z_63, %x_40, %cst_6 : tensor<16x16x!tt.ptr<f32>>
      %do = tt.splat %DOUT : !tt.ptr<bf16> -> tensor<16x16x!tt.ptr<bf16>>
      %do_65 = tt.addptr %do, %tile_36 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %do_66 = tt.load %do_65, %x_40, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
      %do_67 = arith.extf %do_66 : tensor<16x16xbf16> to tensor<16x16xf32>
      %dow = tt.addptr %RMSW, %a : !tt.ptr<bf16>, i32
      %dow_68 = tt.splat %dow : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %dow_69 = tt.addptr %dow_68, %rows : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
      %dow_70 = tt.load %dow_69 : tensor<16x!tt.ptr<bf16>>
      %dow_71 = arith.extf %dow_70 : tensor<16xbf16> to tensor<16xf32>
      %dow_72 = tt.expand_dims %dow_71 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %dow_73 = tt.broadcast %dow_72 : tensor<1x16xf32> -> tensor<16x16xf32>
      %dow_74 = arith.mulf %do_67, %dow_73 : tensor<16x16xf32>
      %0 = arith.muli %pid, %c96_i32 : i32
      %1 = tt.addptr %DW_PART, %0 : !tt.ptr<f32>, i32
      %2 = tt.addptr %1, %a : !tt.ptr<f32>, i32
      %3 = tt.splat %2 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %rows : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %5 = arith.mulf %do_67, %z_64 : tensor<16x16xf32>
      %6 = tt.expand_dims %rrms_23 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %7 = tt.broadcast %6 : tensor<16x1xf32> -> tensor<16x16xf32>
      %8 = arith.mulf %5, %7 : tensor<16x16xf32>
      %9 = "tt.reduce"(%8) <{axis = 0 : i32}> ({
      ^bb0(%arg24: f32, %arg25: f32):
        %15 = arith.addf %arg24, %arg25 : f32
        tt.reduce.return %15 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      tt.store %4, %9 : tensor<16x!tt.ptr<f32>>
      %dz = tt.expand_dims %cz_25 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %dz_75 = tt.broadcast %dz : tensor<16x1xf32> -> tensor<16x16xf32>
      %dz_76 = arith.mulf %z_64, %dz_75 : tensor<16x16xf32>
      %dz_77 = arith.subf %dow_74, %dz_76 : tensor<16x16xf32>
      %dz_78 = arith.mulf %7, %dz_77 : tensor<16x16xf32>
      %10 = tt.splat %DZ : !tt.ptr<bf16> -> tensor<16x16x!tt.ptr<bf16>>
      %11 = tt.addptr %10, %tile_36 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %12 = arith.truncf %dz_78 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %11, %12, %x_40 : tensor<16x16x!tt.ptr<bf16>>
      %q = arith.truncf %lnq_62 : tensor<16x16xf32> to tensor<16x16xbf16>
      %dlnq = scf.for %l0 = %c0_i32 to %nkeys_14 step %c16_i32 iter_args(%dlnq_84 = %dz_78) -> (tensor<16x16xf32>)  : i32 {
        %offs_l = tt.splat %l0 : i32 -> tensor<16xi32>
        %offs_l_85 = arith.addi %offs_l, %rows : tensor<16xi32>
        %k = tt.splat %L : i32 -> tensor<16xi32>
        %k_86 = arith.cmpi slt, %offs_l_85, %k : tensor<16xi32>
        %k_87 = tt.expand_dims %k_86 {axis = 1 : i32} : tensor<16xi1> -> tensor<16x1xi1>
        %k_88 = arith.muli %b_11, %stride_kb : i32
        %k_89 = tt.addptr %K, %k_88 : !tt.ptr<bf16>, i32
        %k_90 = tt.expand_dims %offs_l_85 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
        %k_91 = tt.splat %stride_kl : i32 -> tensor<16x1xi32>
        %k_92 = arith.muli %k_90, %k_91 : tensor<16x1xi32>
        %k_93 = tt.splat %k_89 : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %k_94 = tt.addptr %k_93, %k_92 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %k_95 = arith.muli %kvh, %c16_i32 : i32
        %k_96 = tt.splat %k_95 : i32 -> tensor<16x1xi32>
        %k_97 = tt.addptr %k_94, %k_96 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %k_98 = tt.broadcast %k_97 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %k_99 = tt.addptr %k_98, %tile_35 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %k_100 = tt.broadcast %k_87 : tensor<16x1xi1> -> tensor<16x16xi1>
        %k_101 = tt.load %k_99, %k_100, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
        %v = tt.addptr %V, %k_88 : !tt.ptr<bf16>, i32
        %v_102 = tt.splat %v : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
        %v_103 = tt.addptr %v_102, %k_92 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %v_104 = tt.addptr %v_103, %k_96 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
        %v_105 = tt.broadcast %v_104 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
        %v_106 = tt.addptr %v_105, %tile_35 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
        %v_107 = tt.load %v_106, %k_100, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
        %s = tt.trans %k_101 {order = array<i32: 1, 0>} : tensor<16x16xbf16> -> tensor<16x16xbf16>
        %s_108 = tt.dot %q, %s, %cst_6, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %dp = tt.trans %v_107 {order = array<i32: 1, 0>} : tensor<16x16xbf16> -> tensor<16x16xbf16>
        %dp_109 = tt.dot %12, %dp, %cst_6, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        %h_110 = arith.mulf %s_108, %s_108 : tensor<16x16xf32>
        %h_111 = math.fma %h_110, %cst_3, %cst_2 : tensor<16x16xf32>
        %h_112 = arith.mulf %s_108, %h_111 : tensor<16x16xf32>
        %h_113 = math.exp2 %h_112 : tensor<16x16xf32>
        %h_114 = arith.addf %h_113, %cst_1 : tensor<16x16xf32>
        %h_115 = tt.elementwise_inline_asm "div.approx.f32 $0, $1, $2;" {constraints = "=f,f,f", packed_element = 1 : i32, pure = true} %cst_1, %h_114 : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
        %ds = arith.mulf %s_108, %cst : tensor<16x16xf32>
        %ds_116 = arith.subf %cst_1, %h_115 : tensor<16x16xf32>
        %ds_117 = arith.mulf %ds, %ds_116 : tensor<16x16xf32>
        %ds_118 = arith.mulf %s_108, %cst_0 : tensor<16x16xf32>
        %ds_119 = arith.mulf %ds_118, %s_108 : tensor<16x16xf32>
        %ds_120 = arith.addf %ds_119, %cst_1 : tensor<16x16xf32>
        %ds_121 = arith.mulf %ds_117, %ds_120 : tensor<16x16xf32>
        %ds_122 = arith.addf %ds_121, %cst_1 : tensor<16x16xf32>
        %ds_123 = arith.mulf %h_115, %ds_122 : tensor<16x16xf32>
        %ds_124 = arith.mulf %ds_123, %dp_109 : tensor<16x16xf32>
        %ds_125 = tt.splat %qk_scale : f32 -> tensor<16x16xf32>
        %ds_126 = arith.mulf %ds_124, %ds_125 : tensor<16x16xf32>
        %ds_127 = tt.expand_dims %k_86 {axis = 0 : i32} : tensor<16xi1> -> tensor<1x16xi1>
        %ds_128 = tt.broadcast %ds_127 : tensor<1x16xi1> -> tensor<16x16xi1>
        %ds_129 = arith.select %ds_128, %ds_126, %cst_6 : tensor<16x16xi1>, tensor<16x16xf32>
        %dlnq_130 = arith.truncf %ds_129 : tensor<16x16xf32> to tensor<16x16xbf16>
        %dlnq_131 = tt.dot %dlnq_130, %k_101, %dlnq_84, inputPrecision = tf32 : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
        scf.yield %dlnq_131 : tensor<16x16xf32>
      }
      %13 = tt.splat %DLNQ : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
      %14 = tt.addptr %13, %tile_36 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %14, %dlnq, %x_40 : tensor<16x16x!tt.ptr<f32>>
      %ga = arith.mulf %dlnq, %lnq_53 : tensor<16x16xf32>
      %c1_79 = "tt.reduce"(%ga) <{axis = 1 : i32}> ({
      ^bb0(%c1_84: f32, %c1_85: f32):
        %c1_86 = arith.addf %c1_84, %c1_85 : f32
        tt.reduce.return %c1_86 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %c1_80 = arith.addf %c1_27, %c1_79 : tensor<16xf32>
      %c2_81 = arith.mulf %ga, %xhat_47 : tensor<16x16xf32>
      %c2_82 = "tt.reduce"(%c2_81) <{axis = 1 : i32}> ({
      ^bb0(%c2_84: f32, %c2_85: f32):
        %c2_86 = arith.addf %c2_84, %c2_85 : f32
        tt.reduce.return %c2_86 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %c2_83 = arith.addf %c2_28, %c2_82 : tensor<16xf32>
      scf.yield %c1_80, %c2_83 : tensor<16xf32>, tensor<16xf32>
    }
    %c1 = arith.mulf %c2#0, %cst_5 : tensor<16xf32>
    %c2_26 = arith.mulf %c2#1, %cst_5 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %tile = tt.expand_dims %rows_16 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %tile_27 = arith.muli %tile, %cst_8 : tensor<16x1xi32>
      %tile_28 = tt.splat %h : i32 -> tensor<16x1xi32>
      %tile_29 = arith.addi %tile_27, %tile_28 : tensor<16x1xi32>
      %tile_30 = arith.muli %tile_29, %cst_7 : tensor<16x1xi32>
      %tile_31 = tt.expand_dims %rows {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %tile_32 = tt.broadcast %tile_30 : tensor<16x1xi32> -> tensor<16x16xi32>
      %tile_33 = tt.broadcast %tile_31 : tensor<1x16xi32> -> tensor<16x16xi32>
      %tile_34 = arith.addi %tile_32, %tile_33 : tensor<16x16xi32>
      %dlnq = tt.splat %DLNQ : !tt.ptr<f32> -> tensor<16x16x!tt.ptr<f32>>
      %dlnq_35 = tt.addptr %dlnq, %tile_34 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %dlnq_36 = tt.broadcast %tmask : tensor<16x1xi1> -> tensor<16x16xi1>
      %dlnq_37 = tt.load %dlnq_35, %dlnq_36, %cst_6 : tensor<16x16x!tt.ptr<f32>>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_38 = tt.addptr %x, %tile_30 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_39 = tt.broadcast %x_38 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_40 = tt.addptr %x_39, %tile_33 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_41 = tt.load %x_40, %dlnq_36, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
      %x_42 = arith.extf %x_41 : tensor<16x16xbf16> to tensor<16x16xf32>
      %xhat = tt.expand_dims %mean_19 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xhat_43 = tt.broadcast %xhat : tensor<16x1xf32> -> tensor<16x16xf32>
      %xhat_44 = arith.subf %x_42, %xhat_43 : tensor<16x16xf32>
      %xhat_45 = tt.expand_dims %rstd_21 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %xhat_46 = tt.broadcast %xhat_45 : tensor<16x1xf32> -> tensor<16x16xf32>
      %xhat_47 = arith.mulf %xhat_44, %xhat_46 : tensor<16x16xf32>
      %a = arith.muli %h, %c16_i32 : i32
      %a_48 = tt.addptr %LNW, %a : !tt.ptr<bf16>, i32
      %a_49 = tt.splat %a_48 : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
      %a_50 = tt.addptr %a_49, %rows : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
      %a_51 = tt.load %a_50 : tensor<16x!tt.ptr<bf16>>
      %a_52 = arith.extf %a_51 : tensor<16xbf16> to tensor<16xf32>
      %do = tt.splat %DOUT : !tt.ptr<bf16> -> tensor<16x16x!tt.ptr<bf16>>
      %do_53 = tt.addptr %do, %tile_34 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %do_54 = tt.load %do_53, %dlnq_36, %cst_4 : tensor<16x16x!tt.ptr<bf16>>
      %do_55 = arith.extf %do_54 : tensor<16x16xbf16> to tensor<16x16xf32>
      %dx = tt.expand_dims %a_52 {axis = 0 : i32} : tensor<16xf32> -> tensor<1x16xf32>
      %dx_56 = tt.broadcast %dx : tensor<1x16xf32> -> tensor<16x16xf32>
      %dx_57 = arith.mulf %dlnq_37, %dx_56 : tensor<16x16xf32>
      %dx_58 = tt.expand_dims %c2_26 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %dx_59 = tt.expand_dims %c1 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %dx_60 = tt.broadcast %dx_58 : tensor<16x1xf32> -> tensor<16x16xf32>
      %dx_61 = tt.broadcast %dx_59 : tensor<16x1xf32> -> tensor<16x16xf32>
      %dx_62 = math.fma %xhat_47, %dx_60, %dx_61 : tensor<16x16xf32>
      %dx_63 = arith.subf %dx_57, %dx_62 : tensor<16x16xf32>
      %dx_64 = arith.mulf %xhat_46, %dx_63 : tensor<16x16xf32>
      %dx_65 = arith.addf %dx_64, %do_55 : tensor<16x16xf32>
      %0 = tt.splat %DX : !tt.ptr<bf16> -> tensor<16x16x!tt.ptr<bf16>>
      %1 = tt.addptr %0, %tile_34 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %2 = arith.truncf %dx_65 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %1, %2, %dlnq_36 : tensor<16x16x!tt.ptr<bf16>>
      %3 = arith.muli %pid, %c96_i32 : i32
      %4 = tt.addptr %DW_PART, %3 : !tt.ptr<f32>, i32
      %5 = tt.addptr %4, %c32_i32 : !tt.ptr<f32>, i32
      %6 = tt.addptr %5, %a : !tt.ptr<f32>, i32
      %7 = tt.splat %6 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %8 = tt.addptr %7, %rows : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %9 = arith.mulf %dlnq_37, %xhat_47 : tensor<16x16xf32>
      %10 = "tt.reduce"(%9) <{axis = 0 : i32}> ({
      ^bb0(%arg22: f32, %arg23: f32):
        %16 = arith.addf %arg22, %arg23 : f32
        tt.reduce.return %16 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      tt.store %8, %10 : tensor<16x!tt.ptr<f32>>
      %11 = tt.addptr %4, %c64_i32 : !tt.ptr<f32>, i32
      %12 = tt.addptr %11, %a : !tt.ptr<f32>, i32
      %13 = tt.splat %12 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
      %14 = tt.addptr %13, %rows : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
      %15 = "tt.reduce"(%dlnq_37) <{axis = 0 : i32}> ({
      ^bb0(%arg22: f32, %arg23: f32):
        %16 = arith.addf %arg22, %arg23 : f32
        tt.reduce.return %16 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      tt.store %14, %15 : tensor<16x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// The store of loop 1 runs under an scf.if: the heads are split, the reload stays a load.
// CHECK-LABEL: tt.func public @chain_conditional_store
// CHECK-SAME: normfuse.cluster_dims = 2 : i32
// CHECK: scf.if
// CHECK: tt.store
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.load
// REMARK: remark: [cluster-reduce-chain] applied: chain of 2 loops of 2 trips split over a 2-CTA cluster, one trip per CTA (the loops inlined); 1 exchanges


module {
  tt.func public @chain_conditional_store(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %Y: !tt.ptr<bf16>, %FLAG: i32) attributes {noinline = false} {
    %cst = arith.constant dense<2> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %ss = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c1_i32 = arith.constant 1 : i32
    %c2_i32 = arith.constant 2 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %r_1 = arith.constant dense<9.99999974E-6> : tensor<16xf32>
    %r_2 = arith.constant dense<3.200000e+01> : tensor<16xf32>
    %cst_3 = arith.constant dense<2.000000e+00> : tensor<16x16xf32>
    %c0_i32 = arith.constant 0 : i32
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_4 = arith.muli %rows, %c16_i32 : i32
    %rows_5 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_6 = tt.splat %rows_4 : i32 -> tensor<16xi32>
    %rows_7 = arith.addi %rows_6, %rows_5 : tensor<16xi32>
    %ss_8 = scf.for %h = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_13 = %ss) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_14 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_15 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_16 = arith.addi %x_14, %x_15 : tensor<16x1xi32>
      %x_17 = arith.muli %x_16, %cst_0 : tensor<16x1xi32>
      %x_18 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_19 = tt.addptr %x_18, %x_17 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_20 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_21 = tt.broadcast %x_19 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_22 = tt.broadcast %x_20 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_23 = tt.addptr %x_21, %x_22 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_24 = tt.load %x_23 : tensor<16x16x!tt.ptr<bf16>>
      %x_25 = arith.extf %x_24 : tensor<16x16xbf16> to tensor<16x16xf32>
      %0 = arith.cmpi ne, %FLAG, %c0_i32 : i32
      scf.if %0 {
        %1 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
        %2 = tt.addptr %1, %x_17 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
        %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
        %4 = tt.addptr %3, %x_22 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
        %5 = arith.mulf %x_25, %cst_3 : tensor<16x16xf32>
        tt.store %4, %5 : tensor<16x16x!tt.ptr<f32>>
      }
      %ss_26 = arith.mulf %x_25, %x_25 : tensor<16x16xf32>
      %ss_27 = "tt.reduce"(%ss_26) <{axis = 1 : i32}> ({
      ^bb0(%ss_29: f32, %ss_30: f32):
        %ss_31 = arith.addf %ss_29, %ss_30 : f32
        tt.reduce.return %ss_31 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_28 = arith.addf %ss_13, %ss_27 : tensor<16xf32>
      scf.yield %ss_28 : tensor<16xf32>
    }
    %r_9 = arith.divf %ss_8, %r_2 : tensor<16xf32>
    %r_10 = arith.addf %r_9, %r_1 : tensor<16xf32>
    %r_11 = math.sqrt %r_10 : tensor<16xf32>
    %r_12 = arith.divf %r, %r_11 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %y = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_13 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_14 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_15 = arith.addi %y_13, %y_14 : tensor<16x1xi32>
      %y_16 = arith.muli %y_15, %cst_0 : tensor<16x1xi32>
      %y_17 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_18 = tt.addptr %y_17, %y_16 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_19 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_20 = tt.broadcast %y_18 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_21 = tt.broadcast %y_19 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_22 = tt.addptr %y_20, %y_21 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_23 = tt.load %y_22 : tensor<16x16x!tt.ptr<f32>>
      %y_24 = tt.expand_dims %r_12 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_25 = tt.broadcast %y_24 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_26 = arith.mulf %y_23, %y_25 : tensor<16x16xf32>
      %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %1 = tt.addptr %0, %y_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %y_21 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %4 = arith.truncf %y_26 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %3, %4 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Loop 2 reads the next head's tile, which another CTA stores once the heads are dealt: bail out.
// CHECK-LABEL: tt.func public @negative_other_head
// CHECK-NOT: normfuse.cluster_dims
// CHECK-NOT: inline_asm
// REMARK: remark: [cluster-reduce-chain] missed: loop 2 of the chain reads memory loop 1 stores at addresses not proven to be the ones the same trip stored (another CTA's)


module {
  tt.func public @negative_other_head(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<4> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %ss = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %r_1 = arith.constant dense<9.99999974E-6> : tensor<16xf32>
    %r_2 = arith.constant dense<6.400000e+01> : tensor<16xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_3 = arith.muli %rows, %c16_i32 : i32
    %rows_4 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_5 = tt.splat %rows_3 : i32 -> tensor<16xi32>
    %rows_6 = arith.addi %rows_5, %rows_4 : tensor<16xi32>
    %ss_7 = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_12 = %ss) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_13 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_14 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_15 = arith.addi %x_13, %x_14 : tensor<16x1xi32>
      %x_16 = arith.muli %x_15, %cst_0 : tensor<16x1xi32>
      %x_17 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_18 = tt.addptr %x_17, %x_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_19 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_20 = tt.broadcast %x_18 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_21 = tt.broadcast %x_19 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_22 = tt.addptr %x_20, %x_21 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_23 = tt.load %x_22 : tensor<16x16x!tt.ptr<bf16>>
      %x_24 = arith.extf %x_23 : tensor<16x16xbf16> to tensor<16x16xf32>
      %0 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %x_16 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %x_21 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %3, %x_24 : tensor<16x16x!tt.ptr<f32>>
      %ss_25 = arith.mulf %x_24, %x_24 : tensor<16x16xf32>
      %ss_26 = "tt.reduce"(%ss_25) <{axis = 1 : i32}> ({
      ^bb0(%ss_28: f32, %ss_29: f32):
        %ss_30 = arith.addf %ss_28, %ss_29 : f32
        tt.reduce.return %ss_30 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_27 = arith.addf %ss_12, %ss_26 : tensor<16xf32>
      scf.yield %ss_27 : tensor<16xf32>
    }
    %r_8 = arith.divf %ss_7, %r_2 : tensor<16xf32>
    %r_9 = arith.addf %r_8, %r_1 : tensor<16xf32>
    %r_10 = math.sqrt %r_9 : tensor<16xf32>
    %r_11 = arith.divf %r, %r_10 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %y = arith.addi %h, %c1_i32 : i32
      %y_12 = arith.remsi %y, %c4_i32 : i32
      %y_13 = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_14 = arith.muli %y_13, %cst : tensor<16x1xi32>
      %y_15 = tt.splat %y_12 : i32 -> tensor<16x1xi32>
      %y_16 = arith.addi %y_14, %y_15 : tensor<16x1xi32>
      %y_17 = arith.muli %y_16, %cst_0 : tensor<16x1xi32>
      %y_18 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_19 = tt.addptr %y_18, %y_17 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_20 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_21 = tt.broadcast %y_19 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_22 = tt.broadcast %y_20 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_23 = tt.addptr %y_21, %y_22 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_24 = tt.load %y_23 : tensor<16x16x!tt.ptr<f32>>
      %y_25 = tt.expand_dims %r_11 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_26 = tt.broadcast %y_25 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_27 = arith.mulf %y_24, %y_26 : tensor<16x16xf32>
      %0 = tt.splat %h : i32 -> tensor<16x1xi32>
      %1 = arith.addi %y_14, %0 : tensor<16x1xi32>
      %2 = arith.muli %1, %cst_0 : tensor<16x1xi32>
      %3 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %4 = tt.addptr %3, %2 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %5 = tt.broadcast %4 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %6 = tt.addptr %5, %y_22 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %7 = arith.truncf %y_27 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %6, %7 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// A store before the loops would run in every CTA of the cluster: bail out.
// CHECK-LABEL: tt.func public @negative_store_outside
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: 'tt.store' with side effects outside the chain's loops (it would run in every CTA)


module {
  tt.func public @negative_store_outside(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<4> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %ss = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %r_2 = arith.constant dense<9.99999974E-6> : tensor<16xf32>
    %r_3 = arith.constant dense<6.400000e+01> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_4 = arith.muli %rows, %c16_i32 : i32
    %rows_5 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_6 = tt.splat %rows_4 : i32 -> tensor<16xi32>
    %rows_7 = arith.addi %rows_6, %rows_5 : tensor<16xi32>
    %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    tt.store %0, %cst_1 : tensor<16x!tt.ptr<bf16>>
    %ss_8 = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_13 = %ss) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_14 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_15 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_16 = arith.addi %x_14, %x_15 : tensor<16x1xi32>
      %x_17 = arith.muli %x_16, %cst_0 : tensor<16x1xi32>
      %x_18 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_19 = tt.addptr %x_18, %x_17 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_20 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_21 = tt.broadcast %x_19 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_22 = tt.broadcast %x_20 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_23 = tt.addptr %x_21, %x_22 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_24 = tt.load %x_23 : tensor<16x16x!tt.ptr<bf16>>
      %x_25 = arith.extf %x_24 : tensor<16x16xbf16> to tensor<16x16xf32>
      %1 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %2 = tt.addptr %1, %x_17 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %4 = tt.addptr %3, %x_22 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %4, %x_25 : tensor<16x16x!tt.ptr<f32>>
      %ss_26 = arith.mulf %x_25, %x_25 : tensor<16x16xf32>
      %ss_27 = "tt.reduce"(%ss_26) <{axis = 1 : i32}> ({
      ^bb0(%ss_29: f32, %ss_30: f32):
        %ss_31 = arith.addf %ss_29, %ss_30 : f32
        tt.reduce.return %ss_31 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_28 = arith.addf %ss_13, %ss_27 : tensor<16xf32>
      scf.yield %ss_28 : tensor<16xf32>
    }
    %r_9 = arith.divf %ss_8, %r_3 : tensor<16xf32>
    %r_10 = arith.addf %r_9, %r_2 : tensor<16xf32>
    %r_11 = math.sqrt %r_10 : tensor<16xf32>
    %r_12 = arith.divf %r, %r_11 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %y = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_13 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_14 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_15 = arith.addi %y_13, %y_14 : tensor<16x1xi32>
      %y_16 = arith.muli %y_15, %cst_0 : tensor<16x1xi32>
      %y_17 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_18 = tt.addptr %y_17, %y_16 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_19 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_20 = tt.broadcast %y_18 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_21 = tt.broadcast %y_19 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_22 = tt.addptr %y_20, %y_21 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_23 = tt.load %y_22 : tensor<16x16x!tt.ptr<f32>>
      %y_24 = tt.expand_dims %r_12 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_25 = tt.broadcast %y_24 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_26 = arith.mulf %y_23, %y_25 : tensor<16x16xf32>
      %1 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %2 = tt.addptr %1, %y_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %3 = tt.broadcast %2 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %4 = tt.addptr %3, %y_21 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %5 = arith.truncf %y_26 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %4, %5 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// A running max is not a sum: partials over CTAs cannot be added: bail out.
// CHECK-LABEL: tt.func public @negative_max_stat
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: row sum {{.+}} is not a sum over trips (%s + x)


module {
  tt.func public @negative_max_stat(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<4> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %mx = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_1 = arith.muli %rows, %c16_i32 : i32
    %rows_2 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_3 = tt.splat %rows_1 : i32 -> tensor<16xi32>
    %rows_4 = arith.addi %rows_3, %rows_2 : tensor<16xi32>
    %mx_5 = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%mx_6 = %mx) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_7 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_8 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_9 = arith.addi %x_7, %x_8 : tensor<16x1xi32>
      %x_10 = arith.muli %x_9, %cst_0 : tensor<16x1xi32>
      %x_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_12 = tt.addptr %x_11, %x_10 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_13 = tt.expand_dims %rows_2 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_14 = tt.broadcast %x_12 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_15 = tt.broadcast %x_13 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_16 = tt.addptr %x_14, %x_15 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_17 = tt.load %x_16 : tensor<16x16x!tt.ptr<bf16>>
      %x_18 = arith.extf %x_17 : tensor<16x16xbf16> to tensor<16x16xf32>
      %0 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %x_10 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %x_15 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %3, %x_18 : tensor<16x16x!tt.ptr<f32>>
      %mx_19 = math.absf %x_18 : tensor<16x16xf32>
      %mx_20 = "tt.reduce"(%mx_19) <{axis = 1 : i32}> ({
      ^bb0(%mx_22: f32, %mx_23: f32):
        %mx_24 = arith.maxnumf %mx_22, %mx_23 : f32
        tt.reduce.return %mx_24 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %mx_21 = arith.maxnumf %mx_6, %mx_20 : tensor<16xf32>
      scf.yield %mx_21 : tensor<16xf32>
    }
    scf.for %h = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %y = tt.expand_dims %rows_4 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_6 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_7 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_8 = arith.addi %y_6, %y_7 : tensor<16x1xi32>
      %y_9 = arith.muli %y_8, %cst_0 : tensor<16x1xi32>
      %y_10 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_11 = tt.addptr %y_10, %y_9 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_12 = tt.expand_dims %rows_2 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_13 = tt.broadcast %y_11 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_14 = tt.broadcast %y_12 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_15 = tt.addptr %y_13, %y_14 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_16 = tt.load %y_15 : tensor<16x16x!tt.ptr<f32>>
      %y_17 = tt.expand_dims %mx_5 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_18 = tt.broadcast %y_17 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_19 = arith.divf %y_16, %y_18 : tensor<16x16xf32>
      %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %1 = tt.addptr %0, %y_9 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %y_14 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %4 = arith.truncf %y_19 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %3, %4 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// The second loop runs one head fewer: no chain of equal loops: bail out.
// CHECK-LABEL: tt.func public @negative_different_trips
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: no two loops with the same constant bounds


module {
  tt.func public @negative_different_trips(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<4> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %ss = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c3_i32 = arith.constant 3 : i32
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %r_1 = arith.constant dense<9.99999974E-6> : tensor<16xf32>
    %r_2 = arith.constant dense<6.400000e+01> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_3 = arith.muli %rows, %c16_i32 : i32
    %rows_4 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_5 = tt.splat %rows_3 : i32 -> tensor<16xi32>
    %rows_6 = arith.addi %rows_5, %rows_4 : tensor<16xi32>
    %ss_7 = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_12 = %ss) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_13 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_14 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_15 = arith.addi %x_13, %x_14 : tensor<16x1xi32>
      %x_16 = arith.muli %x_15, %cst_0 : tensor<16x1xi32>
      %x_17 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_18 = tt.addptr %x_17, %x_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_19 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_20 = tt.broadcast %x_18 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_21 = tt.broadcast %x_19 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_22 = tt.addptr %x_20, %x_21 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_23 = tt.load %x_22 : tensor<16x16x!tt.ptr<bf16>>
      %x_24 = arith.extf %x_23 : tensor<16x16xbf16> to tensor<16x16xf32>
      %0 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %x_16 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %3 = tt.addptr %2, %x_21 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %3, %x_24 : tensor<16x16x!tt.ptr<f32>>
      %ss_25 = arith.mulf %x_24, %x_24 : tensor<16x16xf32>
      %ss_26 = "tt.reduce"(%ss_25) <{axis = 1 : i32}> ({
      ^bb0(%ss_28: f32, %ss_29: f32):
        %ss_30 = arith.addf %ss_28, %ss_29 : f32
        tt.reduce.return %ss_30 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_27 = arith.addf %ss_12, %ss_26 : tensor<16xf32>
      scf.yield %ss_27 : tensor<16xf32>
    }
    %r_8 = arith.divf %ss_7, %r_2 : tensor<16xf32>
    %r_9 = arith.addf %r_8, %r_1 : tensor<16xf32>
    %r_10 = math.sqrt %r_9 : tensor<16xf32>
    %r_11 = arith.divf %r, %r_10 : tensor<16xf32>
    scf.for %h = %c0_i32 to %c3_i32 step %c1_i32  : i32 {
      %y = tt.expand_dims %rows_6 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_12 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_13 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_14 = arith.addi %y_12, %y_13 : tensor<16x1xi32>
      %y_15 = arith.muli %y_14, %cst_0 : tensor<16x1xi32>
      %y_16 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_17 = tt.addptr %y_16, %y_15 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_18 = tt.expand_dims %rows_4 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_19 = tt.broadcast %y_17 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_20 = tt.broadcast %y_18 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_21 = tt.addptr %y_19, %y_20 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_22 = tt.load %y_21 : tensor<16x16x!tt.ptr<f32>>
      %y_23 = tt.expand_dims %r_11 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_24 = tt.broadcast %y_23 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_25 = arith.mulf %y_22, %y_24 : tensor<16x16xf32>
      %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %1 = tt.addptr %0, %y_15 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %2 = tt.broadcast %1 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %y_20 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %4 = arith.truncf %y_25 : tensor<16x16xf32> to tensor<16x16xbf16>
      tt.store %3, %4 : tensor<16x16x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// The last loop carries a value across heads: nothing would exchange it: bail out.
// CHECK-LABEL: tt.func public @negative_last_carries
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: the last loop of the chain carries values across trips


module {
  tt.func public @negative_last_carries(%X: !tt.ptr<bf16>, %Z: !tt.ptr<f32>, %Y: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<4> : tensor<16x1xi32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<16xf32>
    %r_2 = arith.constant dense<9.99999974E-6> : tensor<16xf32>
    %r_3 = arith.constant dense<6.400000e+01> : tensor<16xf32>
    %c16_i32 = arith.constant 16 : i32
    %rows = tt.get_program_id x : i32
    %rows_4 = arith.muli %rows, %c16_i32 : i32
    %rows_5 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %rows_6 = tt.splat %rows_4 : i32 -> tensor<16xi32>
    %rows_7 = arith.addi %rows_6, %rows_5 : tensor<16xi32>
    %ss = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_12 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %x = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %x_13 = arith.muli %x, %cst : tensor<16x1xi32>
      %x_14 = tt.splat %h : i32 -> tensor<16x1xi32>
      %x_15 = arith.addi %x_13, %x_14 : tensor<16x1xi32>
      %x_16 = arith.muli %x_15, %cst_0 : tensor<16x1xi32>
      %x_17 = tt.splat %X : !tt.ptr<bf16> -> tensor<16x1x!tt.ptr<bf16>>
      %x_18 = tt.addptr %x_17, %x_16 : tensor<16x1x!tt.ptr<bf16>>, tensor<16x1xi32>
      %x_19 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %x_20 = tt.broadcast %x_18 : tensor<16x1x!tt.ptr<bf16>> -> tensor<16x16x!tt.ptr<bf16>>
      %x_21 = tt.broadcast %x_19 : tensor<1x16xi32> -> tensor<16x16xi32>
      %x_22 = tt.addptr %x_20, %x_21 : tensor<16x16x!tt.ptr<bf16>>, tensor<16x16xi32>
      %x_23 = tt.load %x_22 : tensor<16x16x!tt.ptr<bf16>>
      %x_24 = arith.extf %x_23 : tensor<16x16xbf16> to tensor<16x16xf32>
      %3 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %4 = tt.addptr %3, %x_16 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %5 = tt.broadcast %4 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %6 = tt.addptr %5, %x_21 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      tt.store %6, %x_24 : tensor<16x16x!tt.ptr<f32>>
      %ss_25 = arith.mulf %x_24, %x_24 : tensor<16x16xf32>
      %ss_26 = "tt.reduce"(%ss_25) <{axis = 1 : i32}> ({
      ^bb0(%ss_28: f32, %ss_29: f32):
        %ss_30 = arith.addf %ss_28, %ss_29 : f32
        tt.reduce.return %ss_30 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %ss_27 = arith.addf %ss_12, %ss_26 : tensor<16xf32>
      scf.yield %ss_27 : tensor<16xf32>
    }
    %r_8 = arith.divf %ss, %r_3 : tensor<16xf32>
    %r_9 = arith.addf %r_8, %r_2 : tensor<16xf32>
    %r_10 = math.sqrt %r_9 : tensor<16xf32>
    %r_11 = arith.divf %r, %r_10 : tensor<16xf32>
    %t = scf.for %h = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%t_12 = %cst_1) -> (tensor<16xf32>)  : i32 {
      %y = tt.expand_dims %rows_7 {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
      %y_13 = arith.muli %y, %cst : tensor<16x1xi32>
      %y_14 = tt.splat %h : i32 -> tensor<16x1xi32>
      %y_15 = arith.addi %y_13, %y_14 : tensor<16x1xi32>
      %y_16 = arith.muli %y_15, %cst_0 : tensor<16x1xi32>
      %y_17 = tt.splat %Z : !tt.ptr<f32> -> tensor<16x1x!tt.ptr<f32>>
      %y_18 = tt.addptr %y_17, %y_16 : tensor<16x1x!tt.ptr<f32>>, tensor<16x1xi32>
      %y_19 = tt.expand_dims %rows_5 {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %y_20 = tt.broadcast %y_18 : tensor<16x1x!tt.ptr<f32>> -> tensor<16x16x!tt.ptr<f32>>
      %y_21 = tt.broadcast %y_19 : tensor<1x16xi32> -> tensor<16x16xi32>
      %y_22 = tt.addptr %y_20, %y_21 : tensor<16x16x!tt.ptr<f32>>, tensor<16x16xi32>
      %y_23 = tt.load %y_22 : tensor<16x16x!tt.ptr<f32>>
      %y_24 = tt.expand_dims %r_11 {axis = 1 : i32} : tensor<16xf32> -> tensor<16x1xf32>
      %y_25 = tt.broadcast %y_24 : tensor<16x1xf32> -> tensor<16x16xf32>
      %y_26 = arith.mulf %y_23, %y_25 : tensor<16x16xf32>
      %t_27 = "tt.reduce"(%y_26) <{axis = 1 : i32}> ({
      ^bb0(%t_29: f32, %t_30: f32):
        %t_31 = arith.addf %t_29, %t_30 : f32
        tt.reduce.return %t_31 : f32
      }) : (tensor<16x16xf32>) -> tensor<16xf32>
      %t_28 = arith.addf %t_12, %t_27 : tensor<16xf32>
      scf.yield %t_28 : tensor<16xf32>
    }
    %0 = tt.splat %Y : !tt.ptr<bf16> -> tensor<16x!tt.ptr<bf16>>
    %1 = tt.addptr %0, %rows_7 : tensor<16x!tt.ptr<bf16>>, tensor<16xi32>
    %2 = arith.truncf %t : tensor<16xf32> to tensor<16xbf16>
    tt.store %1, %2 : tensor<16x!tt.ptr<bf16>>
    tt.return
  }
}
