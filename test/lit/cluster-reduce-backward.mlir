// cluster-reduce on the naive norm-backward kernel (kernels/backward.py): the row sums of the
// norm backward (sum du*g*xhat; LayerNorm also sum du*g) are sums over the row's tiles, so the
// tiles go to the CTAs of a cluster and the partial sums meet in DSMEM, as in forward.
// Positive cases first, then bail-outs. Inputs: test/lit/inputs/backward_kernels.py.
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce,epilogue-norm' %s 2>/dev/null | FileCheck %s --check-prefix=PIPE

// RMSNorm dX, a row of 4 tiles -> a 4-CTA cluster; one statistic (sum du*g*xhat) exchanged.
// CHECK-LABEL: tt.func public @rms_dx_four_tiles
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: %[[RANK:.+]] = arith.remsi %{{.+}}, %[[C:.+]] : i32
// CHECK: tt.dot
// CHECK: %[[PART:.+]] = arith.addf %{{.+}} : tensor<64xf32>
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}} %{{.+}}, %[[PART]] :
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster{{.*}}" {{.*}} -> tensor<64xf32>
// CHECK: arith.divf %[[TOT]]
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; 1 row statistic exchanged
// PIPE-LABEL: tt.func public @rms_dx_four_tiles
// PIPE-COUNT-1: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE: tt.return

module {
  tt.func public @rms_dx_four_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_0 = arith.constant dense<128> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %c4_i32 = arith.constant 4 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_5 = arith.constant dense<128> : tensor<32xi32>
    %c128_i32 = arith.constant 128 : i32
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %c2 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%c2_13 = %cst_4) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_14 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_15 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_16 = arith.addi %offs_n_15, %offs_n_14 : tensor<32xi32>
      %mmask = tt.splat %M : i32 -> tensor<64xi32>
      %mmask_17 = arith.cmpi slt, %offs_m_8, %mmask : tensor<64xi32>
      %nmask = arith.cmpi slt, %offs_n_16, %cst_5 : tensor<32xi32>
      %rows = arith.remsi %offs_m_8, %mmask : tensor<64xi32>
      %cols = arith.remsi %offs_n_16, %cst_5 : tensor<32xi32>
      %du = arith.addi %R, %c31_i32 : i32
      %du_18 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_18 step %c1_i32 iter_args(%acc_53 = %cst_1) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_54 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_55 = arith.addi %rr_54, %offs_n_14 : tensor<32xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_56 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
        %a_ptr_57 = arith.muli %a_ptr, %a_ptr_56 : tensor<64x1xi32>
        %a_ptr_58 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_59 = tt.addptr %a_ptr_58, %a_ptr_57 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_60 = tt.expand_dims %rr_55 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_61 = tt.broadcast %a_ptr_59 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_62 = tt.broadcast %a_ptr_60 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_63 = tt.addptr %a_ptr_61, %a_ptr_62 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %rr_55 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_64 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
        %b_ptr_65 = arith.muli %b_ptr, %b_ptr_64 : tensor<32x1xi32>
        %b_ptr_66 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_ptr_67 = tt.addptr %b_ptr_66, %b_ptr_65 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_ptr_68 = tt.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_69 = tt.broadcast %b_ptr_67 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_70 = tt.broadcast %b_ptr_68 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_ptr_71 = tt.addptr %b_ptr_69, %b_ptr_70 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.load %a_ptr_63 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_71 : tensor<32x32x!tt.ptr<bf16>>
        %acc_72 = tt.dot %a, %b, %acc_53, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_72 : tensor<64x32xf32>
      }
      %acc_19 = tt.expand_dims %mmask_17 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %acc_20 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_21 = tt.broadcast %acc_19 : tensor<64x1xi1> -> tensor<64x32xi1>
      %acc_22 = tt.broadcast %acc_20 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_23 = arith.andi %acc_21, %acc_22 : tensor<64x32xi1>
      %acc_24 = arith.select %acc_23, %acc, %cst_1 : tensor<64x32xi1>, tensor<64x32xf32>
      %msk = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %msk_25 = tt.splat %M : i32 -> tensor<64x1xi32>
      %msk_26 = arith.cmpi slt, %msk, %msk_25 : tensor<64x1xi32>
      %msk_27 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %msk_28 = arith.cmpi slt, %msk_27, %cst_0 : tensor<1x32xi32>
      %msk_29 = tt.broadcast %msk_26 : tensor<64x1xi1> -> tensor<64x32xi1>
      %msk_30 = tt.broadcast %msk_28 : tensor<1x32xi1> -> tensor<64x32xi1>
      %msk_31 = arith.andi %msk_29, %msk_30 : tensor<64x32xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_32 = arith.muli %msk, %x : tensor<64x1xi32>
      %x_33 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_34 = tt.addptr %x_33, %x_32 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_35 = tt.broadcast %x_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_36 = tt.broadcast %msk_27 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_37 = tt.addptr %x_35, %x_36 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_38 = tt.load %x_37, %msk_31, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_39 = arith.extf %x_38 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_40 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %rstd_41 = tt.addptr %rstd_40, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %rstd_42 = tt.load %rstd_41, %mmask_17, %cst_4 : tensor<64x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_42 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_43 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_44 = arith.mulf %x_39, %xhat_43 : tensor<64x32xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_45 = tt.addptr %v, %offs_n_16 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_46 = tt.load %v_45, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_47 = arith.extf %v_46 : tensor<32xbf16> to tensor<32xf32>
      %0 = arith.muli %pid, %c128_i32 : i32
      %1 = tt.addptr %DGP, %0 : !tt.ptr<f32>, i32
      %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %3 = tt.addptr %2, %offs_n_16 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %4 = arith.mulf %acc_24, %xhat_44 : tensor<64x32xf32>
      %5 = "tt.reduce"(%4) <{axis = 0 : i32}> ({
      ^bb0(%arg22: f32, %arg23: f32):
        %13 = arith.addf %arg22, %arg23 : f32
        tt.reduce.return %13 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %3, %5, %nmask : tensor<32x!tt.ptr<f32>>
      %dn = tt.expand_dims %v_47 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %dn_48 = tt.broadcast %dn : tensor<1x32xf32> -> tensor<64x32xf32>
      %dn_49 = arith.mulf %acc_24, %dn_48 : tensor<64x32xf32>
      %c2_50 = arith.mulf %dn_49, %xhat_44 : tensor<64x32xf32>
      %c2_51 = "tt.reduce"(%c2_50) <{axis = 1 : i32}> ({
      ^bb0(%c2_53: f32, %c2_54: f32):
        %c2_55 = arith.addf %c2_53, %c2_54 : f32
        tt.reduce.return %c2_55 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_52 = arith.addf %c2_13, %c2_51 : tensor<64xf32>
      %6 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %7 = arith.muli %msk, %6 : tensor<64x1xi32>
      %8 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %9 = tt.addptr %8, %7 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %10 = tt.broadcast %9 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %11 = tt.addptr %10, %x_36 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %12 = arith.truncf %acc_24 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %11, %12, %msk_31 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c2_52 : tensor<64xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<64xi32>
    %rstd_9 = arith.cmpi slt, %offs_m_8, %rstd : tensor<64xi32>
    %rstd_10 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_11 = tt.addptr %rstd_10, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_12 = tt.load %rstd_11, %rstd_9, %cst_4 : tensor<64x!tt.ptr<f32>>
    %m2 = arith.divf %c2, %cst_3 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_13 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_14 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_15 = arith.addi %offs_n_14, %offs_n_13 : tensor<32xi32>
      %du = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %du_16 = tt.splat %M : i32 -> tensor<64x1xi32>
      %du_17 = arith.cmpi slt, %du, %du_16 : tensor<64x1xi32>
      %du_18 = tt.expand_dims %offs_n_15 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %du_19 = arith.cmpi slt, %du_18, %cst_0 : tensor<1x32xi32>
      %du_20 = tt.broadcast %du_17 : tensor<64x1xi1> -> tensor<64x32xi1>
      %du_21 = tt.broadcast %du_19 : tensor<1x32xi1> -> tensor<64x32xi1>
      %du_22 = arith.andi %du_20, %du_21 : tensor<64x32xi1>
      %du_23 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %du_24 = arith.muli %du, %du_23 : tensor<64x1xi32>
      %du_25 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %du_26 = tt.addptr %du_25, %du_24 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %du_27 = tt.broadcast %du_26 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %du_28 = tt.broadcast %du_18 : tensor<1x32xi32> -> tensor<64x32xi32>
      %du_29 = tt.addptr %du_27, %du_28 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %du_30 = tt.load %du_29, %du_22, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %du_31 = arith.extf %du_30 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_32 = arith.muli %du, %x : tensor<64x1xi32>
      %x_33 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_34 = tt.addptr %x_33, %x_32 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_35 = tt.broadcast %x_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_36 = tt.addptr %x_35, %du_28 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_37 = tt.load %x_36, %du_22, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_38 = arith.extf %x_37 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_39 = tt.load %rstd_11, %rstd_9, %cst_4 : tensor<64x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_39 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_40 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_41 = arith.mulf %x_38, %xhat_40 : tensor<64x32xf32>
      %v = arith.cmpi slt, %offs_n_15, %cst_5 : tensor<32xi32>
      %v_42 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_43 = tt.addptr %v_42, %offs_n_15 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_44 = tt.load %v_43, %v, %cst : tensor<32x!tt.ptr<bf16>>
      %v_45 = arith.extf %v_44 : tensor<32xbf16> to tensor<32xf32>
      %dx = tt.expand_dims %v_45 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %dx_46 = tt.broadcast %dx : tensor<1x32xf32> -> tensor<64x32xf32>
      %dx_47 = arith.mulf %du_31, %dx_46 : tensor<64x32xf32>
      %dx_48 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_49 = tt.broadcast %dx_48 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_50 = arith.mulf %xhat_41, %dx_49 : tensor<64x32xf32>
      %dx_51 = arith.subf %dx_47, %dx_50 : tensor<64x32xf32>
      %dx_52 = tt.expand_dims %rstd_12 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_53 = tt.broadcast %dx_52 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_54 = arith.mulf %dx_51, %dx_53 : tensor<64x32xf32>
      %0 = arith.truncf %dx_54 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %du_29, %0, %du_22 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// The regrouped post-norm LayerNorm backward over 2 tiles: sum du*g and sum du*g*xhat in one exchange.
// CHECK-LABEL: tt.func public @ln_dx_silu_two_tiles
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+256], $3;
// CHECK: %[[TOT:.+]]:2 = tt.elementwise_inline_asm {{.*}} -> tensor<64xf32>, tensor<64xf32>
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 2 row statistics
// PIPE-LABEL: tt.func public @ln_dx_silu_two_tiles
// PIPE-COUNT-1: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE: tt.return

module {
  tt.func public @ln_dx_silu_two_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_0 = arith.constant dense<64> : tensor<1x32xi32>
    %c31_i32 = arith.constant 31 : i32
    %c2_i32 = arith.constant 2 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_4 = arith.constant dense<64> : tensor<32xi32>
    %cst_5 = arith.constant dense<1.000000e+00> : tensor<64x32xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_8 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<64xi32>
    %c2:2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c1 = %cst_3, %c2_14 = %cst_3) -> (tensor<64xf32>, tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<32xi32>
      %mmask = tt.splat %M : i32 -> tensor<64xi32>
      %mmask_18 = arith.cmpi slt, %offs_m_9, %mmask : tensor<64xi32>
      %nmask = arith.cmpi slt, %offs_n_17, %cst_4 : tensor<32xi32>
      %rows = arith.remsi %offs_m_9, %mmask : tensor<64xi32>
      %cols = arith.remsi %offs_n_17, %cst_4 : tensor<32xi32>
      %du = arith.addi %R, %c31_i32 : i32
      %du_19 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_19 step %c1_i32 iter_args(%acc_76 = %cst_6) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_77 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_78 = arith.addi %rr_77, %offs_n_15 : tensor<32xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_79 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
        %a_ptr_80 = arith.muli %a_ptr, %a_ptr_79 : tensor<64x1xi32>
        %a_ptr_81 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_82 = tt.addptr %a_ptr_81, %a_ptr_80 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_83 = tt.expand_dims %rr_78 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_84 = tt.broadcast %a_ptr_82 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_85 = tt.broadcast %a_ptr_83 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_86 = tt.addptr %a_ptr_84, %a_ptr_85 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %rr_78 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_87 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
        %b_ptr_88 = arith.muli %b_ptr, %b_ptr_87 : tensor<32x1xi32>
        %b_ptr_89 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_ptr_90 = tt.addptr %b_ptr_89, %b_ptr_88 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_ptr_91 = tt.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_92 = tt.broadcast %b_ptr_90 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_93 = tt.broadcast %b_ptr_91 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_ptr_94 = tt.addptr %b_ptr_92, %b_ptr_93 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.load %a_ptr_86 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_94 : tensor<32x32x!tt.ptr<bf16>>
        %acc_95 = tt.dot %a, %b, %acc_76, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_95 : tensor<64x32xf32>
      }
      %acc_20 = tt.expand_dims %mmask_18 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %acc_21 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_22 = tt.broadcast %acc_20 : tensor<64x1xi1> -> tensor<64x32xi1>
      %acc_23 = tt.broadcast %acc_21 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_24 = arith.andi %acc_22, %acc_23 : tensor<64x32xi1>
      %acc_25 = arith.select %acc_24, %acc, %cst_6 : tensor<64x32xi1>, tensor<64x32xf32>
      %msk = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %msk_26 = tt.splat %M : i32 -> tensor<64x1xi32>
      %msk_27 = arith.cmpi slt, %msk, %msk_26 : tensor<64x1xi32>
      %msk_28 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %msk_29 = arith.cmpi slt, %msk_28, %cst_0 : tensor<1x32xi32>
      %msk_30 = tt.broadcast %msk_27 : tensor<64x1xi1> -> tensor<64x32xi1>
      %msk_31 = tt.broadcast %msk_29 : tensor<1x32xi1> -> tensor<64x32xi1>
      %msk_32 = arith.andi %msk_30, %msk_31 : tensor<64x32xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_33 = arith.muli %msk, %x : tensor<64x1xi32>
      %x_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %x_33 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_36 = tt.broadcast %x_35 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_37 = tt.broadcast %msk_28 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_38 = tt.addptr %x_36, %x_37 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_39 = tt.load %x_38, %msk_32, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %x_40 = arith.extf %x_39 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_41 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %rstd_42 = tt.addptr %rstd_41, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %rstd_43 = tt.load %rstd_42, %mmask_18, %cst_3 : tensor<64x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %mean_44 = tt.addptr %mean, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %mean_45 = tt.load %mean_44, %mmask_18, %cst_3 : tensor<64x!tt.ptr<f32>>
      %x_46 = tt.expand_dims %mean_45 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %x_47 = tt.broadcast %x_46 : tensor<64x1xf32> -> tensor<64x32xf32>
      %x_48 = arith.subf %x_40, %x_47 : tensor<64x32xf32>
      %xhat = tt.expand_dims %rstd_43 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_49 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_50 = arith.mulf %x_48, %xhat_49 : tensor<64x32xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_51 = tt.addptr %v, %offs_n_17 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_52 = tt.load %v_51, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_53 = arith.extf %v_52 : tensor<32xbf16> to tensor<32xf32>
      %z = tt.expand_dims %v_53 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %z_54 = tt.broadcast %z : tensor<1x32xf32> -> tensor<64x32xf32>
      %z_55 = arith.mulf %xhat_50, %z_54 : tensor<64x32xf32>
      %v_56 = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_57 = tt.addptr %v_56, %offs_n_17 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_58 = tt.load %v_57, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_59 = arith.extf %v_58 : tensor<32xbf16> to tensor<32xf32>
      %z_60 = tt.expand_dims %v_59 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %z_61 = tt.broadcast %z_60 : tensor<1x32xf32> -> tensor<64x32xf32>
      %z_62 = arith.addf %z_55, %z_61 : tensor<64x32xf32>
      %s = arith.subf %cst_6, %z_62 : tensor<64x32xf32>
      %s_63 = math.exp %s : tensor<64x32xf32>
      %s_64 = arith.addf %s_63, %cst_5 : tensor<64x32xf32>
      %s_65 = arith.divf %cst_5, %s_64 : tensor<64x32xf32>
      %du_66 = arith.subf %cst_5, %s_65 : tensor<64x32xf32>
      %du_67 = arith.mulf %z_62, %du_66 : tensor<64x32xf32>
      %du_68 = arith.addf %du_67, %cst_5 : tensor<64x32xf32>
      %du_69 = arith.mulf %s_65, %du_68 : tensor<64x32xf32>
      %du_70 = arith.mulf %acc_25, %du_69 : tensor<64x32xf32>
      %0 = tt.addptr %DGP, %offs_m : !tt.ptr<f32>, i32
      %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %2 = tt.addptr %1, %offs_n_17 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %3 = arith.mulf %du_70, %xhat_50 : tensor<64x32xf32>
      %4 = "tt.reduce"(%3) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %16 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %16 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %2, %4, %nmask : tensor<32x!tt.ptr<f32>>
      %5 = tt.addptr %DBP, %offs_m : !tt.ptr<f32>, i32
      %6 = tt.splat %5 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %7 = tt.addptr %6, %offs_n_17 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %8 = "tt.reduce"(%du_70) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %16 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %16 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %7, %8, %nmask : tensor<32x!tt.ptr<f32>>
      %dn = arith.mulf %du_70, %z_54 : tensor<64x32xf32>
      %c1_71 = "tt.reduce"(%dn) <{axis = 1 : i32}> ({
      ^bb0(%c1_76: f32, %c1_77: f32):
        %c1_78 = arith.addf %c1_76, %c1_77 : f32
        tt.reduce.return %c1_78 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c1_72 = arith.addf %c1, %c1_71 : tensor<64xf32>
      %c2_73 = arith.mulf %dn, %xhat_50 : tensor<64x32xf32>
      %c2_74 = "tt.reduce"(%c2_73) <{axis = 1 : i32}> ({
      ^bb0(%c2_76: f32, %c2_77: f32):
        %c2_78 = arith.addf %c2_76, %c2_77 : f32
        tt.reduce.return %c2_78 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_75 = arith.addf %c2_14, %c2_74 : tensor<64xf32>
      %9 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %10 = arith.muli %msk, %9 : tensor<64x1xi32>
      %11 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %10 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %13 = tt.broadcast %12 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %14 = tt.addptr %13, %x_37 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %15 = arith.truncf %du_70 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %14, %15, %msk_32 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c1_72, %c2_75 : tensor<64xf32>, tensor<64xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<64xi32>
    %rstd_10 = arith.cmpi slt, %offs_m_9, %rstd : tensor<64xi32>
    %rstd_11 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_12 = tt.addptr %rstd_11, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_13 = tt.load %rstd_12, %rstd_10, %cst_3 : tensor<64x!tt.ptr<f32>>
    %m1 = arith.divf %c2#0, %cst_2 : tensor<64xf32>
    %m2 = arith.divf %c2#1, %cst_2 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_14 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_15 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_16 = arith.addi %offs_n_15, %offs_n_14 : tensor<32xi32>
      %du = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %du_17 = tt.splat %M : i32 -> tensor<64x1xi32>
      %du_18 = arith.cmpi slt, %du, %du_17 : tensor<64x1xi32>
      %du_19 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %du_20 = arith.cmpi slt, %du_19, %cst_0 : tensor<1x32xi32>
      %du_21 = tt.broadcast %du_18 : tensor<64x1xi1> -> tensor<64x32xi1>
      %du_22 = tt.broadcast %du_20 : tensor<1x32xi1> -> tensor<64x32xi1>
      %du_23 = arith.andi %du_21, %du_22 : tensor<64x32xi1>
      %du_24 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %du_25 = arith.muli %du, %du_24 : tensor<64x1xi32>
      %du_26 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %du_27 = tt.addptr %du_26, %du_25 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %du_28 = tt.broadcast %du_27 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %du_29 = tt.broadcast %du_19 : tensor<1x32xi32> -> tensor<64x32xi32>
      %du_30 = tt.addptr %du_28, %du_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %du_31 = tt.load %du_30, %du_23, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %du_32 = arith.extf %du_31 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_33 = arith.muli %du, %x : tensor<64x1xi32>
      %x_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %x_33 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_36 = tt.broadcast %x_35 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_37 = tt.addptr %x_36, %du_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_38 = tt.load %x_37, %du_23, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %x_39 = arith.extf %x_38 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_40 = tt.load %rstd_12, %rstd_10, %cst_3 : tensor<64x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %mean_41 = tt.addptr %mean, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %mean_42 = tt.load %mean_41, %rstd_10, %cst_3 : tensor<64x!tt.ptr<f32>>
      %x_43 = tt.expand_dims %mean_42 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %x_44 = tt.broadcast %x_43 : tensor<64x1xf32> -> tensor<64x32xf32>
      %x_45 = arith.subf %x_39, %x_44 : tensor<64x32xf32>
      %xhat = tt.expand_dims %rstd_40 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_46 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_47 = arith.mulf %x_45, %xhat_46 : tensor<64x32xf32>
      %v = arith.cmpi slt, %offs_n_16, %cst_4 : tensor<32xi32>
      %v_48 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_49 = tt.addptr %v_48, %offs_n_16 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_50 = tt.load %v_49, %v, %cst : tensor<32x!tt.ptr<bf16>>
      %v_51 = arith.extf %v_50 : tensor<32xbf16> to tensor<32xf32>
      %dx = tt.expand_dims %v_51 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %dx_52 = tt.broadcast %dx : tensor<1x32xf32> -> tensor<64x32xf32>
      %dx_53 = arith.mulf %du_32, %dx_52 : tensor<64x32xf32>
      %dx_54 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_55 = tt.broadcast %dx_54 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_56 = arith.mulf %xhat_47, %dx_55 : tensor<64x32xf32>
      %dx_57 = arith.subf %dx_53, %dx_56 : tensor<64x32xf32>
      %dx_58 = tt.expand_dims %m1 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_59 = tt.broadcast %dx_58 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_60 = arith.subf %dx_57, %dx_59 : tensor<64x32xf32>
      %dx_61 = tt.expand_dims %rstd_13 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_62 = tt.broadcast %dx_61 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_63 = arith.mulf %dx_60, %dx_62 : tensor<64x32xf32>
      %dx_64 = tt.splat %stride_drm : i32 -> tensor<64x1xi32>
      %dx_65 = arith.muli %du, %dx_64 : tensor<64x1xi32>
      %dx_66 = tt.splat %DRES : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %dx_67 = tt.addptr %dx_66, %dx_65 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %dx_68 = tt.broadcast %dx_67 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %dx_69 = tt.addptr %dx_68, %du_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %dx_70 = tt.load %dx_69, %du_23, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %dx_71 = arith.extf %dx_70 : tensor<64x32xbf16> to tensor<64x32xf32>
      %dx_72 = arith.addf %dx_63, %dx_71 : tensor<64x32xf32>
      %0 = arith.truncf %dx_72 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %du_30, %0, %du_23 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// The pre-norm LayerNorm dX writing n = xhat g + beta over 2 tiles: n's store is per tile,
// in the loop over the row's tiles, so each CTA of the cluster writes its own tile of n.
// CHECK-LABEL: tt.func public @ln_dx_xn_two_tiles
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: %[[TOT:.+]]:2 = tt.elementwise_inline_asm {{.*}} -> tensor<64xf32>, tensor<64xf32>
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 2 row statistics
// PIPE-LABEL: tt.func public @ln_dx_xn_two_tiles
// PIPE-COUNT-2: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE: tt.return

module {
  tt.func public @ln_dx_xn_two_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_0 = arith.constant dense<64> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %c2_i32 = arith.constant 2 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_5 = arith.constant dense<64> : tensor<32xi32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %c2:2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c1 = %cst_4, %c2_13 = %cst_4) -> (tensor<64xf32>, tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_14 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_15 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_16 = arith.addi %offs_n_15, %offs_n_14 : tensor<32xi32>
      %mmask = tt.splat %M : i32 -> tensor<64xi32>
      %mmask_17 = arith.cmpi slt, %offs_m_8, %mmask : tensor<64xi32>
      %nmask = arith.cmpi slt, %offs_n_16, %cst_5 : tensor<32xi32>
      %rows = arith.remsi %offs_m_8, %mmask : tensor<64xi32>
      %cols = arith.remsi %offs_n_16, %cst_5 : tensor<32xi32>
      %du = arith.addi %R, %c31_i32 : i32
      %du_18 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_18 step %c1_i32 iter_args(%acc_67 = %cst_1) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_68 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_69 = arith.addi %rr_68, %offs_n_14 : tensor<32xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_70 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
        %a_ptr_71 = arith.muli %a_ptr, %a_ptr_70 : tensor<64x1xi32>
        %a_ptr_72 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_73 = tt.addptr %a_ptr_72, %a_ptr_71 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_74 = tt.expand_dims %rr_69 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_75 = tt.broadcast %a_ptr_73 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_76 = tt.broadcast %a_ptr_74 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_77 = tt.addptr %a_ptr_75, %a_ptr_76 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %rr_69 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_78 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
        %b_ptr_79 = arith.muli %b_ptr, %b_ptr_78 : tensor<32x1xi32>
        %b_ptr_80 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_ptr_81 = tt.addptr %b_ptr_80, %b_ptr_79 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_ptr_82 = tt.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_83 = tt.broadcast %b_ptr_81 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_84 = tt.broadcast %b_ptr_82 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_ptr_85 = tt.addptr %b_ptr_83, %b_ptr_84 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.load %a_ptr_77 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_85 : tensor<32x32x!tt.ptr<bf16>>
        %acc_86 = tt.dot %a, %b, %acc_67, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_86 : tensor<64x32xf32>
      }
      %acc_19 = tt.expand_dims %mmask_17 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %acc_20 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_21 = tt.broadcast %acc_19 : tensor<64x1xi1> -> tensor<64x32xi1>
      %acc_22 = tt.broadcast %acc_20 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_23 = arith.andi %acc_21, %acc_22 : tensor<64x32xi1>
      %acc_24 = arith.select %acc_23, %acc, %cst_1 : tensor<64x32xi1>, tensor<64x32xf32>
      %msk = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %msk_25 = tt.splat %M : i32 -> tensor<64x1xi32>
      %msk_26 = arith.cmpi slt, %msk, %msk_25 : tensor<64x1xi32>
      %msk_27 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %msk_28 = arith.cmpi slt, %msk_27, %cst_0 : tensor<1x32xi32>
      %msk_29 = tt.broadcast %msk_26 : tensor<64x1xi1> -> tensor<64x32xi1>
      %msk_30 = tt.broadcast %msk_28 : tensor<1x32xi1> -> tensor<64x32xi1>
      %msk_31 = arith.andi %msk_29, %msk_30 : tensor<64x32xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_32 = arith.muli %msk, %x : tensor<64x1xi32>
      %x_33 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_34 = tt.addptr %x_33, %x_32 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_35 = tt.broadcast %x_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_36 = tt.broadcast %msk_27 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_37 = tt.addptr %x_35, %x_36 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_38 = tt.load %x_37, %msk_31, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_39 = arith.extf %x_38 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_40 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %rstd_41 = tt.addptr %rstd_40, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %rstd_42 = tt.load %rstd_41, %mmask_17, %cst_4 : tensor<64x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %mean_43 = tt.addptr %mean, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %mean_44 = tt.load %mean_43, %mmask_17, %cst_4 : tensor<64x!tt.ptr<f32>>
      %x_45 = tt.expand_dims %mean_44 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %x_46 = tt.broadcast %x_45 : tensor<64x1xf32> -> tensor<64x32xf32>
      %x_47 = arith.subf %x_39, %x_46 : tensor<64x32xf32>
      %xhat = tt.expand_dims %rstd_42 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_48 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_49 = arith.mulf %x_47, %xhat_48 : tensor<64x32xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_50 = tt.addptr %v, %offs_n_16 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_51 = tt.load %v_50, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_52 = arith.extf %v_51 : tensor<32xbf16> to tensor<32xf32>
      %xn = tt.expand_dims %v_52 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %xn_53 = tt.broadcast %xn : tensor<1x32xf32> -> tensor<64x32xf32>
      %xn_54 = arith.mulf %xhat_49, %xn_53 : tensor<64x32xf32>
      %v_55 = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_56 = tt.addptr %v_55, %offs_n_16 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_57 = tt.load %v_56, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_58 = arith.extf %v_57 : tensor<32xbf16> to tensor<32xf32>
      %xn_59 = tt.expand_dims %v_58 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %xn_60 = tt.broadcast %xn_59 : tensor<1x32xf32> -> tensor<64x32xf32>
      %xn_61 = arith.addf %xn_54, %xn_60 : tensor<64x32xf32>
      %0 = tt.splat %stride_xnm : i32 -> tensor<64x1xi32>
      %1 = arith.muli %msk, %0 : tensor<64x1xi32>
      %2 = tt.splat %XN : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %1 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %4 = tt.broadcast %3 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %5 = tt.addptr %4, %x_36 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %6 = arith.truncf %xn_61 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %5, %6, %msk_31 : tensor<64x32x!tt.ptr<bf16>>
      %7 = tt.addptr %DGP, %offs_m : !tt.ptr<f32>, i32
      %8 = tt.splat %7 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %9 = tt.addptr %8, %offs_n_16 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %10 = arith.mulf %acc_24, %xhat_49 : tensor<64x32xf32>
      %11 = "tt.reduce"(%10) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %23 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %23 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %9, %11, %nmask : tensor<32x!tt.ptr<f32>>
      %12 = tt.addptr %DBP, %offs_m : !tt.ptr<f32>, i32
      %13 = tt.splat %12 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %14 = tt.addptr %13, %offs_n_16 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %15 = "tt.reduce"(%acc_24) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %23 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %23 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %14, %15, %nmask : tensor<32x!tt.ptr<f32>>
      %dn = arith.mulf %acc_24, %xn_53 : tensor<64x32xf32>
      %c1_62 = "tt.reduce"(%dn) <{axis = 1 : i32}> ({
      ^bb0(%c1_67: f32, %c1_68: f32):
        %c1_69 = arith.addf %c1_67, %c1_68 : f32
        tt.reduce.return %c1_69 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c1_63 = arith.addf %c1, %c1_62 : tensor<64xf32>
      %c2_64 = arith.mulf %dn, %xhat_49 : tensor<64x32xf32>
      %c2_65 = "tt.reduce"(%c2_64) <{axis = 1 : i32}> ({
      ^bb0(%c2_67: f32, %c2_68: f32):
        %c2_69 = arith.addf %c2_67, %c2_68 : f32
        tt.reduce.return %c2_69 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_66 = arith.addf %c2_13, %c2_65 : tensor<64xf32>
      %16 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %17 = arith.muli %msk, %16 : tensor<64x1xi32>
      %18 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %19 = tt.addptr %18, %17 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %20 = tt.broadcast %19 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %21 = tt.addptr %20, %x_36 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %22 = arith.truncf %acc_24 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %21, %22, %msk_31 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c1_63, %c2_66 : tensor<64xf32>, tensor<64xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<64xi32>
    %rstd_9 = arith.cmpi slt, %offs_m_8, %rstd : tensor<64xi32>
    %rstd_10 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_11 = tt.addptr %rstd_10, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_12 = tt.load %rstd_11, %rstd_9, %cst_4 : tensor<64x!tt.ptr<f32>>
    %m1 = arith.divf %c2#0, %cst_3 : tensor<64xf32>
    %m2 = arith.divf %c2#1, %cst_3 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_13 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_14 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_15 = arith.addi %offs_n_14, %offs_n_13 : tensor<32xi32>
      %du = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %du_16 = tt.splat %M : i32 -> tensor<64x1xi32>
      %du_17 = arith.cmpi slt, %du, %du_16 : tensor<64x1xi32>
      %du_18 = tt.expand_dims %offs_n_15 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %du_19 = arith.cmpi slt, %du_18, %cst_0 : tensor<1x32xi32>
      %du_20 = tt.broadcast %du_17 : tensor<64x1xi1> -> tensor<64x32xi1>
      %du_21 = tt.broadcast %du_19 : tensor<1x32xi1> -> tensor<64x32xi1>
      %du_22 = arith.andi %du_20, %du_21 : tensor<64x32xi1>
      %du_23 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %du_24 = arith.muli %du, %du_23 : tensor<64x1xi32>
      %du_25 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %du_26 = tt.addptr %du_25, %du_24 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %du_27 = tt.broadcast %du_26 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %du_28 = tt.broadcast %du_18 : tensor<1x32xi32> -> tensor<64x32xi32>
      %du_29 = tt.addptr %du_27, %du_28 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %du_30 = tt.load %du_29, %du_22, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %du_31 = arith.extf %du_30 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_32 = arith.muli %du, %x : tensor<64x1xi32>
      %x_33 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_34 = tt.addptr %x_33, %x_32 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_35 = tt.broadcast %x_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_36 = tt.addptr %x_35, %du_28 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_37 = tt.load %x_36, %du_22, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_38 = arith.extf %x_37 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_39 = tt.load %rstd_11, %rstd_9, %cst_4 : tensor<64x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %mean_40 = tt.addptr %mean, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %mean_41 = tt.load %mean_40, %rstd_9, %cst_4 : tensor<64x!tt.ptr<f32>>
      %x_42 = tt.expand_dims %mean_41 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %x_43 = tt.broadcast %x_42 : tensor<64x1xf32> -> tensor<64x32xf32>
      %x_44 = arith.subf %x_38, %x_43 : tensor<64x32xf32>
      %xhat = tt.expand_dims %rstd_39 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_45 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_46 = arith.mulf %x_44, %xhat_45 : tensor<64x32xf32>
      %v = arith.cmpi slt, %offs_n_15, %cst_5 : tensor<32xi32>
      %v_47 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_48 = tt.addptr %v_47, %offs_n_15 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_49 = tt.load %v_48, %v, %cst : tensor<32x!tt.ptr<bf16>>
      %v_50 = arith.extf %v_49 : tensor<32xbf16> to tensor<32xf32>
      %dx = tt.expand_dims %v_50 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %dx_51 = tt.broadcast %dx : tensor<1x32xf32> -> tensor<64x32xf32>
      %dx_52 = arith.mulf %du_31, %dx_51 : tensor<64x32xf32>
      %dx_53 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_54 = tt.broadcast %dx_53 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_55 = arith.mulf %xhat_46, %dx_54 : tensor<64x32xf32>
      %dx_56 = arith.subf %dx_52, %dx_55 : tensor<64x32xf32>
      %dx_57 = tt.expand_dims %m1 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_58 = tt.broadcast %dx_57 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_59 = arith.subf %dx_56, %dx_58 : tensor<64x32xf32>
      %dx_60 = tt.expand_dims %rstd_12 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_61 = tt.broadcast %dx_60 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_62 = arith.mulf %dx_59, %dx_61 : tensor<64x32xf32>
      %0 = arith.truncf %dx_62 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %du_29, %0, %du_22 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: the row statistic is a max, not a sum over tiles.
// CHECK-LABEL: tt.func public @negative_row_max
// CHECK-NOT: normfuse.cluster_dims
// CHECK-NOT: barrier.cluster
// REMARK: missed: row statistic {{.+}} is not a sum over tiles (%s + x)
// PIPE-LABEL: tt.func public @negative_row_max
// PIPE-COUNT-2: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>

module {
  tt.func public @negative_row_max(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %M: i32, %R: i32) attributes {noinline = false} {
    %cst = arith.constant dense<128> : tensor<1x32xi32>
    %cst_0 = arith.constant dense<128> : tensor<32xi32>
    %cst_1 = arith.constant dense<128> : tensor<32x1xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_6 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %cst_7 = arith.constant dense<128> : tensor<64x1xi32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_8 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_9 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_10 = tt.splat %offs_m_8 : i32 -> tensor<64xi32>
    %offs_m_11 = arith.addi %offs_m_10, %offs_m_9 : tensor<64xi32>
    %c2 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%c2_16 = %cst_5) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_17 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_18 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_19 = arith.addi %offs_n_18, %offs_n_17 : tensor<32xi32>
      %mmask = tt.splat %M : i32 -> tensor<64xi32>
      %mmask_20 = arith.cmpi slt, %offs_m_11, %mmask : tensor<64xi32>
      %nmask = arith.cmpi slt, %offs_n_19, %cst_0 : tensor<32xi32>
      %rows = arith.remsi %offs_m_11, %mmask : tensor<64xi32>
      %cols = arith.remsi %offs_n_19, %cst_0 : tensor<32xi32>
      %du = arith.addi %R, %c31_i32 : i32
      %du_21 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_21 step %c1_i32 iter_args(%acc_31 = %cst_2) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_32 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_33 = arith.addi %rr_32, %offs_n_17 : tensor<32xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_34 = tt.splat %R : i32 -> tensor<64x1xi32>
        %a_ptr_35 = arith.muli %a_ptr, %a_ptr_34 : tensor<64x1xi32>
        %a_ptr_36 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_37 = tt.addptr %a_ptr_36, %a_ptr_35 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_38 = tt.expand_dims %rr_33 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_39 = tt.broadcast %a_ptr_37 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_40 = tt.broadcast %a_ptr_38 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_41 = tt.addptr %a_ptr_39, %a_ptr_40 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %rr_33 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_42 = arith.muli %b_ptr, %cst_1 : tensor<32x1xi32>
        %b_ptr_43 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_ptr_44 = tt.addptr %b_ptr_43, %b_ptr_42 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_ptr_45 = tt.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_46 = tt.broadcast %b_ptr_44 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_47 = tt.broadcast %b_ptr_45 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_ptr_48 = tt.addptr %b_ptr_46, %b_ptr_47 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.splat %R : i32 -> tensor<1x32xi32>
        %a_49 = arith.cmpi slt, %a_ptr_38, %a : tensor<1x32xi32>
        %a_50 = tt.broadcast %a_49 : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_51 = tt.load %a_ptr_41, %a_50, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.splat %R : i32 -> tensor<32x1xi32>
        %b_52 = arith.cmpi slt, %b_ptr, %b : tensor<32x1xi32>
        %b_53 = tt.broadcast %b_52 : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_54 = tt.load %b_ptr_48, %b_53, %cst_4 : tensor<32x32x!tt.ptr<bf16>>
        %acc_55 = tt.dot %a_51, %b_54, %acc_31, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_55 : tensor<64x32xf32>
      }
      %acc_22 = tt.expand_dims %mmask_20 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %acc_23 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_24 = tt.broadcast %acc_22 : tensor<64x1xi1> -> tensor<64x32xi1>
      %acc_25 = tt.broadcast %acc_23 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_26 = arith.andi %acc_24, %acc_25 : tensor<64x32xi1>
      %acc_27 = arith.select %acc_26, %acc, %cst_2 : tensor<64x32xi1>, tensor<64x32xf32>
      %c2_28 = math.absf %acc_27 : tensor<64x32xf32>
      %c2_29 = "tt.reduce"(%c2_28) <{axis = 1 : i32}> ({
      ^bb0(%c2_31: f32, %c2_32: f32):
        %c2_33 = arith.maxnumf %c2_31, %c2_32 : f32
        tt.reduce.return %c2_33 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_30 = arith.maxnumf %c2_16, %c2_29 : tensor<64xf32>
      %1 = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %2 = tt.splat %M : i32 -> tensor<64x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<64x1xi32>
      %4 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %5 = arith.cmpi slt, %4, %cst : tensor<1x32xi32>
      %6 = tt.broadcast %3 : tensor<64x1xi1> -> tensor<64x32xi1>
      %7 = tt.broadcast %5 : tensor<1x32xi1> -> tensor<64x32xi1>
      %8 = arith.andi %6, %7 : tensor<64x32xi1>
      %9 = arith.muli %1, %cst_7 : tensor<64x1xi32>
      %10 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %11 = tt.addptr %10, %9 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %12 = tt.broadcast %11 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %13 = tt.broadcast %4 : tensor<1x32xi32> -> tensor<64x32xi32>
      %14 = tt.addptr %12, %13 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %15 = arith.truncf %acc_27 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %14, %15, %8 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c2_30 : tensor<64xf32>
    }
    %0 = arith.divf %c2, %cst_6 : tensor<64xf32>
    %rstd = tt.splat %M : i32 -> tensor<64xi32>
    %rstd_12 = arith.cmpi slt, %offs_m_11, %rstd : tensor<64xi32>
    %rstd_13 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_14 = tt.addptr %rstd_13, %offs_m_11 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_15 = tt.load %rstd_14, %rstd_12, %cst_5 : tensor<64x!tt.ptr<f32>>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<32xi32>
      %p = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %p_19 = arith.muli %p, %cst_7 : tensor<64x1xi32>
      %p_20 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %p_21 = tt.addptr %p_20, %p_19 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_22 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %p_23 = tt.broadcast %p_21 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %p_24 = tt.broadcast %p_22 : tensor<1x32xi32> -> tensor<64x32xi32>
      %p_25 = tt.addptr %p_23, %p_24 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %du = tt.splat %M : i32 -> tensor<64x1xi32>
      %du_26 = arith.cmpi slt, %p, %du : tensor<64x1xi32>
      %du_27 = arith.cmpi slt, %p_22, %cst : tensor<1x32xi32>
      %du_28 = tt.broadcast %du_26 : tensor<64x1xi1> -> tensor<64x32xi1>
      %du_29 = tt.broadcast %du_27 : tensor<1x32xi1> -> tensor<64x32xi1>
      %du_30 = arith.andi %du_28, %du_29 : tensor<64x32xi1>
      %du_31 = tt.load %p_25, %du_30, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %du_32 = arith.extf %du_31 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_33 = tt.addptr %x, %p_19 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_34 = tt.broadcast %x_33 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %p_24 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_36 = tt.load %x_35, %du_30, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %x_37 = arith.extf %x_36 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_38 = tt.load %rstd_14, %rstd_12, %cst_5 : tensor<64x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_38 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_39 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_40 = arith.mulf %x_37, %xhat_39 : tensor<64x32xf32>
      %1 = tt.expand_dims %0 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %2 = tt.broadcast %1 : tensor<64x1xf32> -> tensor<64x32xf32>
      %3 = arith.mulf %xhat_40, %2 : tensor<64x32xf32>
      %4 = arith.subf %du_32, %3 : tensor<64x32xf32>
      %5 = tt.expand_dims %rstd_15 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %6 = tt.broadcast %5 : tensor<64x1xf32> -> tensor<64x32xf32>
      %7 = arith.mulf %4, %6 : tensor<64x32xf32>
      %8 = arith.truncf %7 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %p_25, %8, %du_30 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: the row sum is stored between the loops (one CTA would store only its partial).
// CHECK-LABEL: tt.func public @negative_row_sum_stored
// CHECK-NOT: normfuse.cluster_dims
// REMARK: missed: 'tt.store' with side effects between the two loops over N tiles
// PIPE-LABEL: tt.func public @negative_row_sum_stored
// PIPE-NOT: barrier.cluster

module {
  tt.func public @negative_row_sum_stored(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %M: i32, %R: i32) attributes {noinline = false} {
    %cst = arith.constant dense<128> : tensor<1x32xi32>
    %cst_0 = arith.constant dense<128> : tensor<32xi32>
    %cst_1 = arith.constant dense<128> : tensor<32x1xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c1_i32 = arith.constant 1 : i32
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_6 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %cst_7 = arith.constant dense<128> : tensor<64x1xi32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_8 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_9 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_10 = tt.splat %offs_m_8 : i32 -> tensor<64xi32>
    %offs_m_11 = arith.addi %offs_m_10, %offs_m_9 : tensor<64xi32>
    %c2 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%c2_14 = %cst_5) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<32xi32>
      %mmask = tt.splat %M : i32 -> tensor<64xi32>
      %mmask_18 = arith.cmpi slt, %offs_m_11, %mmask : tensor<64xi32>
      %nmask = arith.cmpi slt, %offs_n_17, %cst_0 : tensor<32xi32>
      %rows = arith.remsi %offs_m_11, %mmask : tensor<64xi32>
      %cols = arith.remsi %offs_n_17, %cst_0 : tensor<32xi32>
      %du = arith.addi %R, %c31_i32 : i32
      %du_19 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_19 step %c1_i32 iter_args(%acc_49 = %cst_2) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_50 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_51 = arith.addi %rr_50, %offs_n_15 : tensor<32xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_ptr_52 = tt.splat %R : i32 -> tensor<64x1xi32>
        %a_ptr_53 = arith.muli %a_ptr, %a_ptr_52 : tensor<64x1xi32>
        %a_ptr_54 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_ptr_55 = tt.addptr %a_ptr_54, %a_ptr_53 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_ptr_56 = tt.expand_dims %rr_51 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_ptr_57 = tt.broadcast %a_ptr_55 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_ptr_58 = tt.broadcast %a_ptr_56 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_ptr_59 = tt.addptr %a_ptr_57, %a_ptr_58 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %b_ptr = tt.expand_dims %rr_51 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_ptr_60 = arith.muli %b_ptr, %cst_1 : tensor<32x1xi32>
        %b_ptr_61 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_ptr_62 = tt.addptr %b_ptr_61, %b_ptr_60 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_ptr_63 = tt.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_ptr_64 = tt.broadcast %b_ptr_62 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_ptr_65 = tt.broadcast %b_ptr_63 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_ptr_66 = tt.addptr %b_ptr_64, %b_ptr_65 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %a = tt.splat %R : i32 -> tensor<1x32xi32>
        %a_67 = arith.cmpi slt, %a_ptr_56, %a : tensor<1x32xi32>
        %a_68 = tt.broadcast %a_67 : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_69 = tt.load %a_ptr_59, %a_68, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.splat %R : i32 -> tensor<32x1xi32>
        %b_70 = arith.cmpi slt, %b_ptr, %b : tensor<32x1xi32>
        %b_71 = tt.broadcast %b_70 : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_72 = tt.load %b_ptr_66, %b_71, %cst_4 : tensor<32x32x!tt.ptr<bf16>>
        %acc_73 = tt.dot %a_69, %b_72, %acc_49, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_73 : tensor<64x32xf32>
      }
      %acc_20 = tt.expand_dims %mmask_18 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %acc_21 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %acc_22 = tt.broadcast %acc_20 : tensor<64x1xi1> -> tensor<64x32xi1>
      %acc_23 = tt.broadcast %acc_21 : tensor<1x32xi1> -> tensor<64x32xi1>
      %acc_24 = arith.andi %acc_22, %acc_23 : tensor<64x32xi1>
      %acc_25 = arith.select %acc_24, %acc, %cst_2 : tensor<64x32xi1>, tensor<64x32xf32>
      %msk = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %msk_26 = tt.splat %M : i32 -> tensor<64x1xi32>
      %msk_27 = arith.cmpi slt, %msk, %msk_26 : tensor<64x1xi32>
      %msk_28 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %msk_29 = arith.cmpi slt, %msk_28, %cst : tensor<1x32xi32>
      %msk_30 = tt.broadcast %msk_27 : tensor<64x1xi1> -> tensor<64x32xi1>
      %msk_31 = tt.broadcast %msk_29 : tensor<1x32xi1> -> tensor<64x32xi1>
      %msk_32 = arith.andi %msk_30, %msk_31 : tensor<64x32xi1>
      %x = arith.muli %msk, %cst_7 : tensor<64x1xi32>
      %x_33 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_34 = tt.addptr %x_33, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_35 = tt.broadcast %x_34 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_36 = tt.broadcast %msk_28 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_37 = tt.addptr %x_35, %x_36 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_38 = tt.load %x_37, %msk_32, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %x_39 = arith.extf %x_38 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_40 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %rstd_41 = tt.addptr %rstd_40, %offs_m_11 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %rstd_42 = tt.load %rstd_41, %mmask_18, %cst_5 : tensor<64x!tt.ptr<f32>>
      %c2_43 = tt.expand_dims %rstd_42 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %c2_44 = tt.broadcast %c2_43 : tensor<64x1xf32> -> tensor<64x32xf32>
      %c2_45 = arith.mulf %x_39, %c2_44 : tensor<64x32xf32>
      %c2_46 = arith.mulf %acc_25, %c2_45 : tensor<64x32xf32>
      %c2_47 = "tt.reduce"(%c2_46) <{axis = 1 : i32}> ({
      ^bb0(%c2_49: f32, %c2_50: f32):
        %c2_51 = arith.addf %c2_49, %c2_50 : f32
        tt.reduce.return %c2_51 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_48 = arith.addf %c2_14, %c2_47 : tensor<64xf32>
      %5 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %6 = tt.addptr %5, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %7 = tt.broadcast %6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %8 = tt.addptr %7, %x_36 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %9 = arith.truncf %acc_25 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %8, %9, %msk_32 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c2_48 : tensor<64xf32>
    }
    %0 = tt.splat %M : i32 -> tensor<64xi32>
    %1 = arith.cmpi slt, %offs_m_11, %0 : tensor<64xi32>
    %2 = tt.splat %DGP : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %3 = tt.addptr %2, %offs_m_11 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %3, %c2, %1 : tensor<64x!tt.ptr<f32>>
    %4 = arith.divf %c2, %cst_6 : tensor<64xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_12 = tt.addptr %rstd, %offs_m_11 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_13 = tt.load %rstd_12, %1, %cst_5 : tensor<64x!tt.ptr<f32>>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_14 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_15 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_16 = arith.addi %offs_n_15, %offs_n_14 : tensor<32xi32>
      %p = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %p_17 = arith.muli %p, %cst_7 : tensor<64x1xi32>
      %p_18 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %p_19 = tt.addptr %p_18, %p_17 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %p_20 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %p_21 = tt.broadcast %p_19 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %p_22 = tt.broadcast %p_20 : tensor<1x32xi32> -> tensor<64x32xi32>
      %p_23 = tt.addptr %p_21, %p_22 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %du = tt.splat %M : i32 -> tensor<64x1xi32>
      %du_24 = arith.cmpi slt, %p, %du : tensor<64x1xi32>
      %du_25 = arith.cmpi slt, %p_20, %cst : tensor<1x32xi32>
      %du_26 = tt.broadcast %du_24 : tensor<64x1xi1> -> tensor<64x32xi1>
      %du_27 = tt.broadcast %du_25 : tensor<1x32xi1> -> tensor<64x32xi1>
      %du_28 = arith.andi %du_26, %du_27 : tensor<64x32xi1>
      %du_29 = tt.load %p_23, %du_28, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %du_30 = arith.extf %du_29 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_31 = tt.addptr %x, %p_17 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_32 = tt.broadcast %x_31 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_33 = tt.addptr %x_32, %p_22 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_34 = tt.load %x_33, %du_28, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %x_35 = arith.extf %x_34 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_36 = tt.load %rstd_12, %1, %cst_5 : tensor<64x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_36 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_37 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_38 = arith.mulf %x_35, %xhat_37 : tensor<64x32xf32>
      %5 = tt.expand_dims %4 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %6 = tt.broadcast %5 : tensor<64x1xf32> -> tensor<64x32xf32>
      %7 = arith.mulf %xhat_38, %6 : tensor<64x32xf32>
      %8 = arith.subf %du_30, %7 : tensor<64x32xf32>
      %9 = tt.expand_dims %rstd_13 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %10 = tt.broadcast %9 : tensor<64x1xf32> -> tensor<64x32xf32>
      %11 = arith.mulf %8, %10 : tensor<64x32xf32>
      %12 = arith.truncf %11 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %p_23, %12, %du_28 : tensor<64x32x!tt.ptr<bf16>>
    }
    tt.return
  }
}
