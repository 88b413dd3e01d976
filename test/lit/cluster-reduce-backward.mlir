// cluster-reduce on the naive norm-backward kernel (kernels/backward.py): the row sums of the
// norm backward (sum du*g*xhat; LayerNorm also sum du*g) are sums over the row's tiles, so the
// tiles go to the CTAs of a cluster and the partial sums meet in DSMEM, as in forward.
// Positive cases first, then bail-outs. Inputs: test/lit/inputs/backward_kernels.py.
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>/dev/null | FileCheck %s
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
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
  tt.func public @rms_dx_four_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_0 = arith.constant dense<128> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %c4_i32 = arith.constant 4 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_4 = arith.constant dense<1.280000e+02> : tensor<64xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_6 = arith.constant dense<128> : tensor<32xi32>
    %c128_i32 = arith.constant 128 : i32
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_8 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<64xi32>
    %c2 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%c2_14 = %cst_5) -> (tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<32xi32>
      %mmask = tt.splat %M : i32 -> tensor<64xi32>
      %mmask_18 = arith.cmpi slt, %offs_m_9, %mmask : tensor<64xi32>
      %nmask = arith.cmpi slt, %offs_n_17, %cst_6 : tensor<32xi32>
      %du = arith.addi %R, %c31_i32 : i32
      %du_19 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_19 step %c1_i32 iter_args(%acc_48 = %cst_2) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_49 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_50 = arith.addi %rr_49, %offs_n_15 : tensor<32xi32>
        %a = tt.expand_dims %mmask_18 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %a_51 = tt.expand_dims %rr_50 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_52 = tt.splat %R : i32 -> tensor<1x32xi32>
        %a_53 = arith.cmpi slt, %a_51, %a_52 : tensor<1x32xi32>
        %a_54 = tt.broadcast %a : tensor<64x1xi1> -> tensor<64x32xi1>
        %a_55 = tt.broadcast %a_53 : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_56 = arith.andi %a_54, %a_55 : tensor<64x32xi1>
        %a_57 = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_58 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
        %a_59 = arith.muli %a_57, %a_58 : tensor<64x1xi32>
        %a_60 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_61 = tt.addptr %a_60, %a_59 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_62 = tt.broadcast %a_61 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_63 = tt.broadcast %a_51 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_64 = tt.addptr %a_62, %a_63 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %a_65 = tt.load %a_64, %a_56, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.expand_dims %rr_50 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_66 = tt.splat %R : i32 -> tensor<32x1xi32>
        %b_67 = arith.cmpi slt, %b, %b_66 : tensor<32x1xi32>
        %b_68 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %b_69 = tt.broadcast %b_67 : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_70 = tt.broadcast %b_68 : tensor<1x32xi1> -> tensor<32x32xi1>
        %b_71 = arith.andi %b_69, %b_70 : tensor<32x32xi1>
        %b_72 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
        %b_73 = arith.muli %b, %b_72 : tensor<32x1xi32>
        %b_74 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_75 = tt.addptr %b_74, %b_73 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_76 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_77 = tt.broadcast %b_75 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_78 = tt.broadcast %b_76 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_79 = tt.addptr %b_77, %b_78 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %b_80 = tt.load %b_79, %b_71, %cst_1 : tensor<32x32x!tt.ptr<bf16>>
        %acc_81 = tt.dot %a_65, %b_80, %acc_48, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_81 : tensor<64x32xf32>
      }
      %msk = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %msk_20 = tt.splat %M : i32 -> tensor<64x1xi32>
      %msk_21 = arith.cmpi slt, %msk, %msk_20 : tensor<64x1xi32>
      %msk_22 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %msk_23 = arith.cmpi slt, %msk_22, %cst_0 : tensor<1x32xi32>
      %msk_24 = tt.broadcast %msk_21 : tensor<64x1xi1> -> tensor<64x32xi1>
      %msk_25 = tt.broadcast %msk_23 : tensor<1x32xi1> -> tensor<64x32xi1>
      %msk_26 = arith.andi %msk_24, %msk_25 : tensor<64x32xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_27 = arith.muli %msk, %x : tensor<64x1xi32>
      %x_28 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_29 = tt.addptr %x_28, %x_27 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_30 = tt.broadcast %x_29 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_31 = tt.broadcast %msk_22 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_32 = tt.addptr %x_30, %x_31 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_33 = tt.load %x_32, %msk_26, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %x_34 = arith.extf %x_33 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_35 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %rstd_36 = tt.addptr %rstd_35, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %rstd_37 = tt.load %rstd_36, %mmask_18, %cst_5 : tensor<64x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_37 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_38 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_39 = arith.mulf %x_34, %xhat_38 : tensor<64x32xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_40 = tt.addptr %v, %offs_n_17 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_41 = tt.load %v_40, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_42 = arith.extf %v_41 : tensor<32xbf16> to tensor<32xf32>
      %0 = arith.muli %pid, %c128_i32 : i32
      %1 = tt.addptr %DGP, %0 : !tt.ptr<f32>, i32
      %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %3 = tt.addptr %2, %offs_n_17 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %4 = arith.mulf %acc, %xhat_39 : tensor<64x32xf32>
      %5 = "tt.reduce"(%4) <{axis = 0 : i32}> ({
      ^bb0(%arg20: f32, %arg21: f32):
        %13 = arith.addf %arg20, %arg21 : f32
        tt.reduce.return %13 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %3, %5, %nmask : tensor<32x!tt.ptr<f32>>
      %dn = tt.expand_dims %v_42 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %dn_43 = tt.broadcast %dn : tensor<1x32xf32> -> tensor<64x32xf32>
      %dn_44 = arith.mulf %acc, %dn_43 : tensor<64x32xf32>
      %c2_45 = arith.mulf %dn_44, %xhat_39 : tensor<64x32xf32>
      %c2_46 = "tt.reduce"(%c2_45) <{axis = 1 : i32}> ({
      ^bb0(%c2_48: f32, %c2_49: f32):
        %c2_50 = arith.addf %c2_48, %c2_49 : f32
        tt.reduce.return %c2_50 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_47 = arith.addf %c2_14, %c2_46 : tensor<64xf32>
      %6 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %7 = arith.muli %msk, %6 : tensor<64x1xi32>
      %8 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %9 = tt.addptr %8, %7 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %10 = tt.broadcast %9 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %11 = tt.addptr %10, %x_31 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %12 = arith.truncf %acc : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %11, %12, %msk_26 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c2_47 : tensor<64xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<64xi32>
    %rstd_10 = arith.cmpi slt, %offs_m_9, %rstd : tensor<64xi32>
    %rstd_11 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_12 = tt.addptr %rstd_11, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_13 = tt.load %rstd_12, %rstd_10, %cst_5 : tensor<64x!tt.ptr<f32>>
    %m2 = arith.divf %c2, %cst_4 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
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
      %du_31 = tt.load %du_30, %du_23, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %du_32 = arith.extf %du_31 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_33 = arith.muli %du, %x : tensor<64x1xi32>
      %x_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %x_33 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_36 = tt.broadcast %x_35 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_37 = tt.addptr %x_36, %du_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_38 = tt.load %x_37, %du_23, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %x_39 = arith.extf %x_38 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_40 = tt.load %rstd_12, %rstd_10, %cst_5 : tensor<64x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_40 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_41 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_42 = arith.mulf %x_39, %xhat_41 : tensor<64x32xf32>
      %v = arith.cmpi slt, %offs_n_16, %cst_6 : tensor<32xi32>
      %v_43 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_44 = tt.addptr %v_43, %offs_n_16 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_45 = tt.load %v_44, %v, %cst : tensor<32x!tt.ptr<bf16>>
      %v_46 = arith.extf %v_45 : tensor<32xbf16> to tensor<32xf32>
      %dx = tt.expand_dims %v_46 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %dx_47 = tt.broadcast %dx : tensor<1x32xf32> -> tensor<64x32xf32>
      %dx_48 = arith.mulf %du_32, %dx_47 : tensor<64x32xf32>
      %dx_49 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_50 = tt.broadcast %dx_49 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_51 = arith.mulf %xhat_42, %dx_50 : tensor<64x32xf32>
      %dx_52 = arith.subf %dx_48, %dx_51 : tensor<64x32xf32>
      %dx_53 = tt.expand_dims %rstd_13 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_54 = tt.broadcast %dx_53 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_55 = arith.mulf %dx_52, %dx_54 : tensor<64x32xf32>
      %0 = arith.truncf %dx_55 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %du_30, %0, %du_23 : tensor<64x32x!tt.ptr<bf16>>
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
  tt.func public @ln_dx_silu_two_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_0 = arith.constant dense<64> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %c2_i32 = arith.constant 2 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_5 = arith.constant dense<64> : tensor<32xi32>
    %cst_6 = arith.constant dense<1.000000e+00> : tensor<64x32xf32>
    %cst_7 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_8 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_9 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<64xi32>
    %c2:2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c1 = %cst_4, %c2_15 = %cst_4) -> (tensor<64xf32>, tensor<64xf32>)  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_16 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<32xi32>
      %mmask = tt.splat %M : i32 -> tensor<64xi32>
      %mmask_19 = arith.cmpi slt, %offs_m_10, %mmask : tensor<64xi32>
      %nmask = arith.cmpi slt, %offs_n_18, %cst_5 : tensor<32xi32>
      %du = arith.addi %R, %c31_i32 : i32
      %du_20 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_20 step %c1_i32 iter_args(%acc_71 = %cst_7) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_72 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_73 = arith.addi %rr_72, %offs_n_16 : tensor<32xi32>
        %a = tt.expand_dims %mmask_19 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %a_74 = tt.expand_dims %rr_73 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_75 = tt.splat %R : i32 -> tensor<1x32xi32>
        %a_76 = arith.cmpi slt, %a_74, %a_75 : tensor<1x32xi32>
        %a_77 = tt.broadcast %a : tensor<64x1xi1> -> tensor<64x32xi1>
        %a_78 = tt.broadcast %a_76 : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_79 = arith.andi %a_77, %a_78 : tensor<64x32xi1>
        %a_80 = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_81 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
        %a_82 = arith.muli %a_80, %a_81 : tensor<64x1xi32>
        %a_83 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_84 = tt.addptr %a_83, %a_82 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_85 = tt.broadcast %a_84 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_86 = tt.broadcast %a_74 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_87 = tt.addptr %a_85, %a_86 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %a_88 = tt.load %a_87, %a_79, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.expand_dims %rr_73 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_89 = tt.splat %R : i32 -> tensor<32x1xi32>
        %b_90 = arith.cmpi slt, %b, %b_89 : tensor<32x1xi32>
        %b_91 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %b_92 = tt.broadcast %b_90 : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_93 = tt.broadcast %b_91 : tensor<1x32xi1> -> tensor<32x32xi1>
        %b_94 = arith.andi %b_92, %b_93 : tensor<32x32xi1>
        %b_95 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
        %b_96 = arith.muli %b, %b_95 : tensor<32x1xi32>
        %b_97 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_98 = tt.addptr %b_97, %b_96 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_99 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_100 = tt.broadcast %b_98 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_101 = tt.broadcast %b_99 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_102 = tt.addptr %b_100, %b_101 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %b_103 = tt.load %b_102, %b_94, %cst_1 : tensor<32x32x!tt.ptr<bf16>>
        %acc_104 = tt.dot %a_88, %b_103, %acc_71, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_104 : tensor<64x32xf32>
      }
      %msk = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %msk_21 = tt.splat %M : i32 -> tensor<64x1xi32>
      %msk_22 = arith.cmpi slt, %msk, %msk_21 : tensor<64x1xi32>
      %msk_23 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %msk_24 = arith.cmpi slt, %msk_23, %cst_0 : tensor<1x32xi32>
      %msk_25 = tt.broadcast %msk_22 : tensor<64x1xi1> -> tensor<64x32xi1>
      %msk_26 = tt.broadcast %msk_24 : tensor<1x32xi1> -> tensor<64x32xi1>
      %msk_27 = arith.andi %msk_25, %msk_26 : tensor<64x32xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_28 = arith.muli %msk, %x : tensor<64x1xi32>
      %x_29 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_30 = tt.addptr %x_29, %x_28 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_31 = tt.broadcast %x_30 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_32 = tt.broadcast %msk_23 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_33 = tt.addptr %x_31, %x_32 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_34 = tt.load %x_33, %msk_27, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_35 = arith.extf %x_34 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_36 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %rstd_37 = tt.addptr %rstd_36, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %rstd_38 = tt.load %rstd_37, %mmask_19, %cst_4 : tensor<64x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %mean_39 = tt.addptr %mean, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %mean_40 = tt.load %mean_39, %mmask_19, %cst_4 : tensor<64x!tt.ptr<f32>>
      %x_41 = tt.expand_dims %mean_40 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %x_42 = tt.broadcast %x_41 : tensor<64x1xf32> -> tensor<64x32xf32>
      %x_43 = arith.subf %x_35, %x_42 : tensor<64x32xf32>
      %xhat = tt.expand_dims %rstd_38 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_44 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_45 = arith.mulf %x_43, %xhat_44 : tensor<64x32xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_46 = tt.addptr %v, %offs_n_18 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_47 = tt.load %v_46, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_48 = arith.extf %v_47 : tensor<32xbf16> to tensor<32xf32>
      %z = tt.expand_dims %v_48 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %z_49 = tt.broadcast %z : tensor<1x32xf32> -> tensor<64x32xf32>
      %z_50 = arith.mulf %xhat_45, %z_49 : tensor<64x32xf32>
      %v_51 = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_52 = tt.addptr %v_51, %offs_n_18 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_53 = tt.load %v_52, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
      %v_54 = arith.extf %v_53 : tensor<32xbf16> to tensor<32xf32>
      %z_55 = tt.expand_dims %v_54 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %z_56 = tt.broadcast %z_55 : tensor<1x32xf32> -> tensor<64x32xf32>
      %z_57 = arith.addf %z_50, %z_56 : tensor<64x32xf32>
      %s = arith.subf %cst_7, %z_57 : tensor<64x32xf32>
      %s_58 = math.exp %s : tensor<64x32xf32>
      %s_59 = arith.addf %s_58, %cst_6 : tensor<64x32xf32>
      %s_60 = arith.divf %cst_6, %s_59 : tensor<64x32xf32>
      %du_61 = arith.subf %cst_6, %s_60 : tensor<64x32xf32>
      %du_62 = arith.mulf %z_57, %du_61 : tensor<64x32xf32>
      %du_63 = arith.addf %du_62, %cst_6 : tensor<64x32xf32>
      %du_64 = arith.mulf %s_60, %du_63 : tensor<64x32xf32>
      %du_65 = arith.mulf %acc, %du_64 : tensor<64x32xf32>
      %0 = tt.addptr %DGP, %offs_m : !tt.ptr<f32>, i32
      %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %2 = tt.addptr %1, %offs_n_18 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %3 = arith.mulf %du_65, %xhat_45 : tensor<64x32xf32>
      %4 = "tt.reduce"(%3) <{axis = 0 : i32}> ({
      ^bb0(%arg21: f32, %arg22: f32):
        %16 = arith.addf %arg21, %arg22 : f32
        tt.reduce.return %16 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %2, %4, %nmask : tensor<32x!tt.ptr<f32>>
      %5 = tt.addptr %DBP, %offs_m : !tt.ptr<f32>, i32
      %6 = tt.splat %5 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
      %7 = tt.addptr %6, %offs_n_18 : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
      %8 = "tt.reduce"(%du_65) <{axis = 0 : i32}> ({
      ^bb0(%arg21: f32, %arg22: f32):
        %16 = arith.addf %arg21, %arg22 : f32
        tt.reduce.return %16 : f32
      }) : (tensor<64x32xf32>) -> tensor<32xf32>
      tt.store %7, %8, %nmask : tensor<32x!tt.ptr<f32>>
      %dn = arith.mulf %du_65, %z_49 : tensor<64x32xf32>
      %c1_66 = "tt.reduce"(%dn) <{axis = 1 : i32}> ({
      ^bb0(%c1_71: f32, %c1_72: f32):
        %c1_73 = arith.addf %c1_71, %c1_72 : f32
        tt.reduce.return %c1_73 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c1_67 = arith.addf %c1, %c1_66 : tensor<64xf32>
      %c2_68 = arith.mulf %dn, %xhat_45 : tensor<64x32xf32>
      %c2_69 = "tt.reduce"(%c2_68) <{axis = 1 : i32}> ({
      ^bb0(%c2_71: f32, %c2_72: f32):
        %c2_73 = arith.addf %c2_71, %c2_72 : f32
        tt.reduce.return %c2_73 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_70 = arith.addf %c2_15, %c2_69 : tensor<64xf32>
      %9 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %10 = arith.muli %msk, %9 : tensor<64x1xi32>
      %11 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %10 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %13 = tt.broadcast %12 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %14 = tt.addptr %13, %x_32 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %15 = arith.truncf %du_65 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %14, %15, %msk_27 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c1_67, %c2_70 : tensor<64xf32>, tensor<64xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<64xi32>
    %rstd_11 = arith.cmpi slt, %offs_m_10, %rstd : tensor<64xi32>
    %rstd_12 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_13 = tt.addptr %rstd_12, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_14 = tt.load %rstd_13, %rstd_11, %cst_4 : tensor<64x!tt.ptr<f32>>
    %m1 = arith.divf %c2#0, %cst_3 : tensor<64xf32>
    %m2 = arith.divf %c2#1, %cst_3 : tensor<64xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_15 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<32xi32>
      %du = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %du_18 = tt.splat %M : i32 -> tensor<64x1xi32>
      %du_19 = arith.cmpi slt, %du, %du_18 : tensor<64x1xi32>
      %du_20 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %du_21 = arith.cmpi slt, %du_20, %cst_0 : tensor<1x32xi32>
      %du_22 = tt.broadcast %du_19 : tensor<64x1xi1> -> tensor<64x32xi1>
      %du_23 = tt.broadcast %du_21 : tensor<1x32xi1> -> tensor<64x32xi1>
      %du_24 = arith.andi %du_22, %du_23 : tensor<64x32xi1>
      %du_25 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
      %du_26 = arith.muli %du, %du_25 : tensor<64x1xi32>
      %du_27 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %du_28 = tt.addptr %du_27, %du_26 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %du_29 = tt.broadcast %du_28 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %du_30 = tt.broadcast %du_20 : tensor<1x32xi32> -> tensor<64x32xi32>
      %du_31 = tt.addptr %du_29, %du_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %du_32 = tt.load %du_31, %du_24, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %du_33 = arith.extf %du_32 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
      %x_34 = arith.muli %du, %x : tensor<64x1xi32>
      %x_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_36 = tt.addptr %x_35, %x_34 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_37 = tt.broadcast %x_36 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_38 = tt.addptr %x_37, %du_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_39 = tt.load %x_38, %du_24, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_40 = arith.extf %x_39 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_41 = tt.load %rstd_13, %rstd_11, %cst_4 : tensor<64x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %mean_42 = tt.addptr %mean, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %mean_43 = tt.load %mean_42, %rstd_11, %cst_4 : tensor<64x!tt.ptr<f32>>
      %x_44 = tt.expand_dims %mean_43 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %x_45 = tt.broadcast %x_44 : tensor<64x1xf32> -> tensor<64x32xf32>
      %x_46 = arith.subf %x_40, %x_45 : tensor<64x32xf32>
      %xhat = tt.expand_dims %rstd_41 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %xhat_47 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
      %xhat_48 = arith.mulf %x_46, %xhat_47 : tensor<64x32xf32>
      %v = arith.cmpi slt, %offs_n_17, %cst_5 : tensor<32xi32>
      %v_49 = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %v_50 = tt.addptr %v_49, %offs_n_17 : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %v_51 = tt.load %v_50, %v, %cst : tensor<32x!tt.ptr<bf16>>
      %v_52 = arith.extf %v_51 : tensor<32xbf16> to tensor<32xf32>
      %dx = tt.expand_dims %v_52 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %dx_53 = tt.broadcast %dx : tensor<1x32xf32> -> tensor<64x32xf32>
      %dx_54 = arith.mulf %du_33, %dx_53 : tensor<64x32xf32>
      %dx_55 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_56 = tt.broadcast %dx_55 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_57 = arith.mulf %xhat_48, %dx_56 : tensor<64x32xf32>
      %dx_58 = arith.subf %dx_54, %dx_57 : tensor<64x32xf32>
      %dx_59 = tt.expand_dims %m1 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_60 = tt.broadcast %dx_59 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_61 = arith.subf %dx_58, %dx_60 : tensor<64x32xf32>
      %dx_62 = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %dx_63 = tt.broadcast %dx_62 : tensor<64x1xf32> -> tensor<64x32xf32>
      %dx_64 = arith.mulf %dx_61, %dx_63 : tensor<64x32xf32>
      %dx_65 = tt.splat %stride_drm : i32 -> tensor<64x1xi32>
      %dx_66 = arith.muli %du, %dx_65 : tensor<64x1xi32>
      %dx_67 = tt.splat %DRES : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %dx_68 = tt.addptr %dx_67, %dx_66 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %dx_69 = tt.broadcast %dx_68 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %dx_70 = tt.addptr %dx_69, %du_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %dx_71 = tt.load %dx_70, %du_24, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %dx_72 = arith.extf %dx_71 : tensor<64x32xbf16> to tensor<64x32xf32>
      %dx_73 = arith.addf %dx_64, %dx_72 : tensor<64x32xf32>
      %0 = arith.truncf %dx_73 : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %du_31, %0, %du_24 : tensor<64x32x!tt.ptr<bf16>>
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
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
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
      %du = arith.addi %R, %c31_i32 : i32
      %du_21 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_21 step %c1_i32 iter_args(%acc_25 = %cst_4) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_26 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_27 = arith.addi %rr_26, %offs_n_17 : tensor<32xi32>
        %a = tt.expand_dims %mmask_20 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %a_28 = tt.expand_dims %rr_27 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_29 = tt.splat %R : i32 -> tensor<1x32xi32>
        %a_30 = arith.cmpi slt, %a_28, %a_29 : tensor<1x32xi32>
        %a_31 = tt.broadcast %a : tensor<64x1xi1> -> tensor<64x32xi1>
        %a_32 = tt.broadcast %a_30 : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_33 = arith.andi %a_31, %a_32 : tensor<64x32xi1>
        %a_34 = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_35 = tt.splat %R : i32 -> tensor<64x1xi32>
        %a_36 = arith.muli %a_34, %a_35 : tensor<64x1xi32>
        %a_37 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_38 = tt.addptr %a_37, %a_36 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_39 = tt.broadcast %a_38 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_40 = tt.broadcast %a_28 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_41 = tt.addptr %a_39, %a_40 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %a_42 = tt.load %a_41, %a_33, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.expand_dims %rr_27 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_43 = tt.splat %R : i32 -> tensor<32x1xi32>
        %b_44 = arith.cmpi slt, %b, %b_43 : tensor<32x1xi32>
        %b_45 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %b_46 = tt.broadcast %b_44 : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_47 = tt.broadcast %b_45 : tensor<1x32xi1> -> tensor<32x32xi1>
        %b_48 = arith.andi %b_46, %b_47 : tensor<32x32xi1>
        %b_49 = arith.muli %b, %cst_1 : tensor<32x1xi32>
        %b_50 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_51 = tt.addptr %b_50, %b_49 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_52 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_53 = tt.broadcast %b_51 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_54 = tt.broadcast %b_52 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_55 = tt.addptr %b_53, %b_54 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %b_56 = tt.load %b_55, %b_48, %cst_3 : tensor<32x32x!tt.ptr<bf16>>
        %acc_57 = tt.dot %a_42, %b_56, %acc_25, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_57 : tensor<64x32xf32>
      }
      %c2_22 = math.absf %acc : tensor<64x32xf32>
      %c2_23 = "tt.reduce"(%c2_22) <{axis = 1 : i32}> ({
      ^bb0(%c2_25: f32, %c2_26: f32):
        %c2_27 = arith.maxnumf %c2_25, %c2_26 : f32
        tt.reduce.return %c2_27 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_24 = arith.maxnumf %c2_16, %c2_23 : tensor<64xf32>
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
      %15 = arith.truncf %acc : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %14, %15, %8 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c2_24 : tensor<64xf32>
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
      %du_31 = tt.load %p_25, %du_30, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %du_32 = arith.extf %du_31 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_33 = tt.addptr %x, %p_19 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_34 = tt.broadcast %x_33 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %p_24 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_36 = tt.load %x_35, %du_30, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
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
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
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
      %du = arith.addi %R, %c31_i32 : i32
      %du_19 = arith.divsi %du, %c32_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_19 step %c1_i32 iter_args(%acc_43 = %cst_4) -> (tensor<64x32xf32>)  : i32 {
        %rr = arith.muli %r, %c32_i32 : i32
        %rr_44 = tt.splat %rr : i32 -> tensor<32xi32>
        %rr_45 = arith.addi %rr_44, %offs_n_15 : tensor<32xi32>
        %a = tt.expand_dims %mmask_18 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %a_46 = tt.expand_dims %rr_45 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %a_47 = tt.splat %R : i32 -> tensor<1x32xi32>
        %a_48 = arith.cmpi slt, %a_46, %a_47 : tensor<1x32xi32>
        %a_49 = tt.broadcast %a : tensor<64x1xi1> -> tensor<64x32xi1>
        %a_50 = tt.broadcast %a_48 : tensor<1x32xi1> -> tensor<64x32xi1>
        %a_51 = arith.andi %a_49, %a_50 : tensor<64x32xi1>
        %a_52 = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %a_53 = tt.splat %R : i32 -> tensor<64x1xi32>
        %a_54 = arith.muli %a_52, %a_53 : tensor<64x1xi32>
        %a_55 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %a_56 = tt.addptr %a_55, %a_54 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %a_57 = tt.broadcast %a_56 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
        %a_58 = tt.broadcast %a_46 : tensor<1x32xi32> -> tensor<64x32xi32>
        %a_59 = tt.addptr %a_57, %a_58 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %a_60 = tt.load %a_59, %a_51, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %b = tt.expand_dims %rr_45 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
        %b_61 = tt.splat %R : i32 -> tensor<32x1xi32>
        %b_62 = arith.cmpi slt, %b, %b_61 : tensor<32x1xi32>
        %b_63 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
        %b_64 = tt.broadcast %b_62 : tensor<32x1xi1> -> tensor<32x32xi1>
        %b_65 = tt.broadcast %b_63 : tensor<1x32xi1> -> tensor<32x32xi1>
        %b_66 = arith.andi %b_64, %b_65 : tensor<32x32xi1>
        %b_67 = arith.muli %b, %cst_1 : tensor<32x1xi32>
        %b_68 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
        %b_69 = tt.addptr %b_68, %b_67 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
        %b_70 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
        %b_71 = tt.broadcast %b_69 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
        %b_72 = tt.broadcast %b_70 : tensor<1x32xi32> -> tensor<32x32xi32>
        %b_73 = tt.addptr %b_71, %b_72 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        %b_74 = tt.load %b_73, %b_66, %cst_3 : tensor<32x32x!tt.ptr<bf16>>
        %acc_75 = tt.dot %a_60, %b_74, %acc_43, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        scf.yield %acc_75 : tensor<64x32xf32>
      }
      %msk = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %msk_20 = tt.splat %M : i32 -> tensor<64x1xi32>
      %msk_21 = arith.cmpi slt, %msk, %msk_20 : tensor<64x1xi32>
      %msk_22 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %msk_23 = arith.cmpi slt, %msk_22, %cst : tensor<1x32xi32>
      %msk_24 = tt.broadcast %msk_21 : tensor<64x1xi1> -> tensor<64x32xi1>
      %msk_25 = tt.broadcast %msk_23 : tensor<1x32xi1> -> tensor<64x32xi1>
      %msk_26 = arith.andi %msk_24, %msk_25 : tensor<64x32xi1>
      %x = arith.muli %msk, %cst_7 : tensor<64x1xi32>
      %x_27 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_28 = tt.addptr %x_27, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_29 = tt.broadcast %x_28 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_30 = tt.broadcast %msk_22 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_31 = tt.addptr %x_29, %x_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_32 = tt.load %x_31, %msk_26, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_33 = arith.extf %x_32 : tensor<64x32xbf16> to tensor<64x32xf32>
      %rstd_34 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %rstd_35 = tt.addptr %rstd_34, %offs_m_11 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %rstd_36 = tt.load %rstd_35, %mmask_18, %cst_5 : tensor<64x!tt.ptr<f32>>
      %c2_37 = tt.expand_dims %rstd_36 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %c2_38 = tt.broadcast %c2_37 : tensor<64x1xf32> -> tensor<64x32xf32>
      %c2_39 = arith.mulf %x_33, %c2_38 : tensor<64x32xf32>
      %c2_40 = arith.mulf %acc, %c2_39 : tensor<64x32xf32>
      %c2_41 = "tt.reduce"(%c2_40) <{axis = 1 : i32}> ({
      ^bb0(%c2_43: f32, %c2_44: f32):
        %c2_45 = arith.addf %c2_43, %c2_44 : f32
        tt.reduce.return %c2_45 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %c2_42 = arith.addf %c2_14, %c2_41 : tensor<64xf32>
      %5 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %6 = tt.addptr %5, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %7 = tt.broadcast %6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %8 = tt.addptr %7, %x_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %9 = arith.truncf %acc : tensor<64x32xf32> to tensor<64x32xbf16>
      tt.store %8, %9, %msk_26 : tensor<64x32x!tt.ptr<bf16>>
      scf.yield %c2_42 : tensor<64xf32>
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
      %du_29 = tt.load %p_23, %du_28, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %du_30 = arith.extf %du_29 : tensor<64x32xbf16> to tensor<64x32xf32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_31 = tt.addptr %x, %p_17 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_32 = tt.broadcast %x_31 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_33 = tt.addptr %x_32, %p_22 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_34 = tt.load %x_33, %du_28, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
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
