// epilogue-norm on the naive norm-backward kernel (kernels/backward.py): the dX GEMM's output
// row (du) is reduced (sum du*g*xhat; LayerNorm also sum du*g), stored, reloaded and finished as
// dx; with the row in one tile the store + reload go away. Positive cases first, then bail-outs.
// Inputs: TTIR from test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --epilogue-norm %s 2>/dev/null | FileCheck %s
// RUN: normfuse-opt --split-input-file --epilogue-norm %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// RMSNorm dX, one tile holds the row: dx from the fp32 accumulator, one store to DX (the dg
// partial's store stays, before it).
// CHECK-LABEL: tt.func public @rms_dx_one_tile
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.store
// CHECK: arith.mulf %[[DOT]], %{{.+}} : tensor<64x64xf32>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi1>
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @rms_dx_one_tile(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64xbf16>
    %cst_0 = arith.constant dense<64> : tensor<1x64xi32>
    %c32_i32 = arith.constant 32 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<32x64xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_7 = arith.constant dense<64> : tensor<64xi32>
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_8 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_9 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<64xi32>
    %mmask = tt.splat %M : i32 -> tensor<64xi32>
    %mmask_11 = arith.cmpi slt, %offs_m_10, %mmask : tensor<64xi32>
    %nmask = arith.cmpi slt, %offs_m_8, %cst_7 : tensor<64xi32>
    %offs_r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %du = arith.addi %R, %c31_i32 : i32
    %du_12 = arith.divsi %du, %c32_i32 : i32
    %acc = scf.for %r = %c0_i32 to %du_12 step %c1_i32 iter_args(%acc_56 = %cst_3) -> (tensor<64x64xf32>)  : i32 {
      %rr = arith.muli %r, %c32_i32 : i32
      %rr_57 = tt.splat %rr : i32 -> tensor<32xi32>
      %rr_58 = arith.addi %rr_57, %offs_r : tensor<32xi32>
      %a = tt.expand_dims %mmask_11 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %a_59 = tt.expand_dims %rr_58 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_60 = tt.splat %R : i32 -> tensor<1x32xi32>
      %a_61 = arith.cmpi slt, %a_59, %a_60 : tensor<1x32xi32>
      %a_62 = tt.broadcast %a : tensor<64x1xi1> -> tensor<64x32xi1>
      %a_63 = tt.broadcast %a_61 : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_64 = arith.andi %a_62, %a_63 : tensor<64x32xi1>
      %a_65 = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_66 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
      %a_67 = arith.muli %a_65, %a_66 : tensor<64x1xi32>
      %a_68 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_69 = tt.addptr %a_68, %a_67 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_70 = tt.broadcast %a_69 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_71 = tt.broadcast %a_59 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_72 = tt.addptr %a_70, %a_71 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %a_73 = tt.load %a_72, %a_64, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.expand_dims %rr_58 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_74 = tt.splat %R : i32 -> tensor<32x1xi32>
      %b_75 = arith.cmpi slt, %b, %b_74 : tensor<32x1xi32>
      %b_76 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
      %b_77 = tt.broadcast %b_75 : tensor<32x1xi1> -> tensor<32x64xi1>
      %b_78 = tt.broadcast %b_76 : tensor<1x64xi1> -> tensor<32x64xi1>
      %b_79 = arith.andi %b_77, %b_78 : tensor<32x64xi1>
      %b_80 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
      %b_81 = arith.muli %b, %b_80 : tensor<32x1xi32>
      %b_82 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
      %b_83 = tt.addptr %b_82, %b_81 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
      %b_84 = tt.expand_dims %offs_m_8 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %b_85 = tt.broadcast %b_83 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x64x!tt.ptr<bf16>>
      %b_86 = tt.broadcast %b_84 : tensor<1x64xi32> -> tensor<32x64xi32>
      %b_87 = tt.addptr %b_85, %b_86 : tensor<32x64x!tt.ptr<bf16>>, tensor<32x64xi32>
      %b_88 = tt.load %b_87, %b_79, %cst_2 : tensor<32x64x!tt.ptr<bf16>>
      %acc_89 = tt.dot %a_73, %b_88, %acc_56, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
      scf.yield %acc_89 : tensor<64x64xf32>
    }
    %msk = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %msk_13 = tt.splat %M : i32 -> tensor<64x1xi32>
    %msk_14 = arith.cmpi slt, %msk, %msk_13 : tensor<64x1xi32>
    %msk_15 = tt.expand_dims %offs_m_8 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %msk_16 = arith.cmpi slt, %msk_15, %cst_0 : tensor<1x64xi32>
    %msk_17 = tt.broadcast %msk_14 : tensor<64x1xi1> -> tensor<64x64xi1>
    %msk_18 = tt.broadcast %msk_16 : tensor<1x64xi1> -> tensor<64x64xi1>
    %msk_19 = arith.andi %msk_17, %msk_18 : tensor<64x64xi1>
    %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
    %x_20 = arith.muli %msk, %x : tensor<64x1xi32>
    %x_21 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %x_22 = tt.addptr %x_21, %x_20 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %x_23 = tt.broadcast %x_22 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %x_24 = tt.broadcast %msk_15 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x_25 = tt.addptr %x_23, %x_24 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %x_26 = tt.load %x_25, %msk_19, %cst_4 : tensor<64x64x!tt.ptr<bf16>>
    %x_27 = arith.extf %x_26 : tensor<64x64xbf16> to tensor<64x64xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_28 = tt.addptr %rstd, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_29 = tt.load %rstd_28, %mmask_11, %cst_6 : tensor<64x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_29 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_30 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_31 = arith.mulf %x_27, %xhat_30 : tensor<64x64xf32>
    %v = tt.splat %G : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
    %v_32 = tt.addptr %v, %offs_m_8 : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
    %v_33 = tt.load %v_32, %nmask, %cst : tensor<64x!tt.ptr<bf16>>
    %v_34 = arith.extf %v_33 : tensor<64xbf16> to tensor<64xf32>
    %0 = tt.addptr %DGP, %offs_m : !tt.ptr<f32>, i32
    %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %2 = tt.addptr %1, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %3 = arith.mulf %acc, %xhat_31 : tensor<64x64xf32>
    %4 = "tt.reduce"(%3) <{axis = 0 : i32}> ({
    ^bb0(%arg18: f32, %arg19: f32):
      %13 = arith.addf %arg18, %arg19 : f32
      tt.reduce.return %13 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    tt.store %2, %4, %nmask : tensor<64x!tt.ptr<f32>>
    %dn = tt.expand_dims %v_34 {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %dn_35 = tt.broadcast %dn : tensor<1x64xf32> -> tensor<64x64xf32>
    %dn_36 = arith.mulf %acc, %dn_35 : tensor<64x64xf32>
    %c2 = arith.mulf %dn_36, %xhat_31 : tensor<64x64xf32>
    %c2_37 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_56: f32, %c2_57: f32):
      %c2_58 = arith.addf %c2_56, %c2_57 : f32
      tt.reduce.return %c2_58 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    %c2_38 = arith.addf %c2_37, %cst_6 : tensor<64xf32>
    %5 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
    %6 = arith.muli %msk, %5 : tensor<64x1xi32>
    %7 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %8 = tt.addptr %7, %6 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %9 = tt.broadcast %8 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %10 = tt.addptr %9, %x_24 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %11 = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %10, %11, %msk_19 : tensor<64x64x!tt.ptr<bf16>>
    %rstd_39 = tt.load %rstd_28, %mmask_11, %cst_6 : tensor<64x!tt.ptr<f32>>
    %m2 = arith.divf %c2_38, %cst_5 : tensor<64xf32>
    %du_40 = tt.load %10, %msk_19, %cst_4 : tensor<64x64x!tt.ptr<bf16>>
    %du_41 = arith.extf %du_40 : tensor<64x64xbf16> to tensor<64x64xf32>
    %x_42 = tt.load %x_25, %msk_19, %cst_4 : tensor<64x64x!tt.ptr<bf16>>
    %x_43 = arith.extf %x_42 : tensor<64x64xbf16> to tensor<64x64xf32>
    %xhat_44 = tt.expand_dims %rstd_39 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_45 = tt.broadcast %xhat_44 : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_46 = arith.mulf %x_43, %xhat_45 : tensor<64x64xf32>
    %v_47 = tt.load %v_32, %nmask, %cst : tensor<64x!tt.ptr<bf16>>
    %v_48 = arith.extf %v_47 : tensor<64xbf16> to tensor<64xf32>
    %dx = tt.expand_dims %v_48 {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %dx_49 = tt.broadcast %dx : tensor<1x64xf32> -> tensor<64x64xf32>
    %dx_50 = arith.mulf %du_41, %dx_49 : tensor<64x64xf32>
    %dx_51 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_52 = tt.broadcast %dx_51 : tensor<64x1xf32> -> tensor<64x64xf32>
    %dx_53 = arith.mulf %xhat_46, %dx_52 : tensor<64x64xf32>
    %dx_54 = arith.subf %dx_50, %dx_53 : tensor<64x64xf32>
    %dx_55 = arith.mulf %dx_54, %xhat_45 : tensor<64x64xf32>
    %12 = arith.truncf %dx_55 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %10, %12, %msk_19 : tensor<64x64x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// The regrouped post-norm LayerNorm backward: du = (dY W) * SiLU'(n), two row sums, a residual
// gradient; one tile: du never goes to memory.
// CHECK-LABEL: tt.func public @ln_dx_silu_regrouped
// CHECK: scf.for
// CHECK: math.exp
// CHECK-COUNT-2: tt.store %{{.+}} : tensor<32x!tt.ptr<f32>>
// CHECK-NOT: tt.store
// CHECK: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @ln_dx_silu_regrouped(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_0 = arith.constant dense<32> : tensor<1x32xi32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<32x32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_5 = arith.constant dense<32> : tensor<32xi32>
    %cst_6 = arith.constant dense<1.000000e+00> : tensor<64x32xf32>
    %cst_7 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_8 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_9 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %mmask = tt.splat %M : i32 -> tensor<64xi32>
    %mmask_11 = arith.cmpi slt, %offs_m_10, %mmask : tensor<64xi32>
    %nmask = arith.cmpi slt, %offs_n, %cst_5 : tensor<32xi32>
    %du = arith.addi %R, %c31_i32 : i32
    %du_12 = arith.divsi %du, %c32_i32 : i32
    %acc = scf.for %r = %c0_i32 to %du_12 step %c1_i32 iter_args(%acc_93 = %cst_7) -> (tensor<64x32xf32>)  : i32 {
      %rr = arith.muli %r, %c32_i32 : i32
      %rr_94 = tt.splat %rr : i32 -> tensor<32xi32>
      %rr_95 = arith.addi %rr_94, %offs_n : tensor<32xi32>
      %a = tt.expand_dims %mmask_11 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %a_96 = tt.expand_dims %rr_95 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_97 = tt.splat %R : i32 -> tensor<1x32xi32>
      %a_98 = arith.cmpi slt, %a_96, %a_97 : tensor<1x32xi32>
      %a_99 = tt.broadcast %a : tensor<64x1xi1> -> tensor<64x32xi1>
      %a_100 = tt.broadcast %a_98 : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_101 = arith.andi %a_99, %a_100 : tensor<64x32xi1>
      %a_102 = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_103 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
      %a_104 = arith.muli %a_102, %a_103 : tensor<64x1xi32>
      %a_105 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_106 = tt.addptr %a_105, %a_104 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_107 = tt.broadcast %a_106 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_108 = tt.broadcast %a_96 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_109 = tt.addptr %a_107, %a_108 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %a_110 = tt.load %a_109, %a_101, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.expand_dims %rr_95 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_111 = tt.splat %R : i32 -> tensor<32x1xi32>
      %b_112 = arith.cmpi slt, %b, %b_111 : tensor<32x1xi32>
      %b_113 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
      %b_114 = tt.broadcast %b_112 : tensor<32x1xi1> -> tensor<32x32xi1>
      %b_115 = tt.broadcast %b_113 : tensor<1x32xi1> -> tensor<32x32xi1>
      %b_116 = arith.andi %b_114, %b_115 : tensor<32x32xi1>
      %b_117 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
      %b_118 = arith.muli %b, %b_117 : tensor<32x1xi32>
      %b_119 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
      %b_120 = tt.addptr %b_119, %b_118 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
      %b_121 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %b_122 = tt.broadcast %b_120 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %b_123 = tt.broadcast %b_121 : tensor<1x32xi32> -> tensor<32x32xi32>
      %b_124 = tt.addptr %b_122, %b_123 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %b_125 = tt.load %b_124, %b_116, %cst_1 : tensor<32x32x!tt.ptr<bf16>>
      %acc_126 = tt.dot %a_110, %b_125, %acc_93, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_126 : tensor<64x32xf32>
    }
    %msk = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %msk_13 = tt.splat %M : i32 -> tensor<64x1xi32>
    %msk_14 = arith.cmpi slt, %msk, %msk_13 : tensor<64x1xi32>
    %msk_15 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %msk_16 = arith.cmpi slt, %msk_15, %cst_0 : tensor<1x32xi32>
    %msk_17 = tt.broadcast %msk_14 : tensor<64x1xi1> -> tensor<64x32xi1>
    %msk_18 = tt.broadcast %msk_16 : tensor<1x32xi1> -> tensor<64x32xi1>
    %msk_19 = arith.andi %msk_17, %msk_18 : tensor<64x32xi1>
    %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
    %x_20 = arith.muli %msk, %x : tensor<64x1xi32>
    %x_21 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %x_22 = tt.addptr %x_21, %x_20 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %x_23 = tt.broadcast %x_22 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %x_24 = tt.broadcast %msk_15 : tensor<1x32xi32> -> tensor<64x32xi32>
    %x_25 = tt.addptr %x_23, %x_24 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %x_26 = tt.load %x_25, %msk_19, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
    %x_27 = arith.extf %x_26 : tensor<64x32xbf16> to tensor<64x32xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_28 = tt.addptr %rstd, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_29 = tt.load %rstd_28, %mmask_11, %cst_4 : tensor<64x!tt.ptr<f32>>
    %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %mean_30 = tt.addptr %mean, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %mean_31 = tt.load %mean_30, %mmask_11, %cst_4 : tensor<64x!tt.ptr<f32>>
    %x_32 = tt.expand_dims %mean_31 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %x_33 = tt.broadcast %x_32 : tensor<64x1xf32> -> tensor<64x32xf32>
    %x_34 = arith.subf %x_27, %x_33 : tensor<64x32xf32>
    %xhat = tt.expand_dims %rstd_29 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_35 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
    %xhat_36 = arith.mulf %x_34, %xhat_35 : tensor<64x32xf32>
    %v = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %v_37 = tt.addptr %v, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %v_38 = tt.load %v_37, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
    %v_39 = arith.extf %v_38 : tensor<32xbf16> to tensor<32xf32>
    %z = tt.expand_dims %v_39 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %z_40 = tt.broadcast %z : tensor<1x32xf32> -> tensor<64x32xf32>
    %z_41 = arith.mulf %xhat_36, %z_40 : tensor<64x32xf32>
    %v_42 = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %v_43 = tt.addptr %v_42, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %v_44 = tt.load %v_43, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
    %v_45 = arith.extf %v_44 : tensor<32xbf16> to tensor<32xf32>
    %z_46 = tt.expand_dims %v_45 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %z_47 = tt.broadcast %z_46 : tensor<1x32xf32> -> tensor<64x32xf32>
    %z_48 = arith.addf %z_41, %z_47 : tensor<64x32xf32>
    %s = arith.subf %cst_7, %z_48 : tensor<64x32xf32>
    %s_49 = math.exp %s : tensor<64x32xf32>
    %s_50 = arith.addf %s_49, %cst_6 : tensor<64x32xf32>
    %s_51 = arith.divf %cst_6, %s_50 : tensor<64x32xf32>
    %du_52 = arith.subf %cst_6, %s_51 : tensor<64x32xf32>
    %du_53 = arith.mulf %z_48, %du_52 : tensor<64x32xf32>
    %du_54 = arith.addf %du_53, %cst_6 : tensor<64x32xf32>
    %du_55 = arith.mulf %s_51, %du_54 : tensor<64x32xf32>
    %du_56 = arith.mulf %acc, %du_55 : tensor<64x32xf32>
    %0 = arith.muli %pid, %c32_i32 : i32
    %1 = tt.addptr %DGP, %0 : !tt.ptr<f32>, i32
    %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %3 = tt.addptr %2, %offs_n : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %4 = arith.mulf %du_56, %xhat_36 : tensor<64x32xf32>
    %5 = "tt.reduce"(%4) <{axis = 0 : i32}> ({
    ^bb0(%arg18: f32, %arg19: f32):
      %18 = arith.addf %arg18, %arg19 : f32
      tt.reduce.return %18 : f32
    }) : (tensor<64x32xf32>) -> tensor<32xf32>
    tt.store %3, %5, %nmask : tensor<32x!tt.ptr<f32>>
    %6 = tt.addptr %DBP, %0 : !tt.ptr<f32>, i32
    %7 = tt.splat %6 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %8 = tt.addptr %7, %offs_n : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %9 = "tt.reduce"(%du_56) <{axis = 0 : i32}> ({
    ^bb0(%arg18: f32, %arg19: f32):
      %18 = arith.addf %arg18, %arg19 : f32
      tt.reduce.return %18 : f32
    }) : (tensor<64x32xf32>) -> tensor<32xf32>
    tt.store %8, %9, %nmask : tensor<32x!tt.ptr<f32>>
    %dn = arith.mulf %du_56, %z_40 : tensor<64x32xf32>
    %c1 = "tt.reduce"(%dn) <{axis = 1 : i32}> ({
    ^bb0(%c1_93: f32, %c1_94: f32):
      %c1_95 = arith.addf %c1_93, %c1_94 : f32
      tt.reduce.return %c1_95 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %c1_57 = arith.addf %c1, %cst_4 : tensor<64xf32>
    %c2 = arith.mulf %dn, %xhat_36 : tensor<64x32xf32>
    %c2_58 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_93: f32, %c2_94: f32):
      %c2_95 = arith.addf %c2_93, %c2_94 : f32
      tt.reduce.return %c2_95 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %c2_59 = arith.addf %c2_58, %cst_4 : tensor<64xf32>
    %10 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
    %11 = arith.muli %msk, %10 : tensor<64x1xi32>
    %12 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %13 = tt.addptr %12, %11 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %14 = tt.broadcast %13 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %15 = tt.addptr %14, %x_24 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %16 = arith.truncf %du_56 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %16, %msk_19 : tensor<64x32x!tt.ptr<bf16>>
    %rstd_60 = tt.load %rstd_28, %mmask_11, %cst_4 : tensor<64x!tt.ptr<f32>>
    %m1 = arith.divf %c1_57, %cst_3 : tensor<64xf32>
    %m2 = arith.divf %c2_59, %cst_3 : tensor<64xf32>
    %du_61 = tt.load %15, %msk_19, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
    %du_62 = arith.extf %du_61 : tensor<64x32xbf16> to tensor<64x32xf32>
    %x_63 = tt.load %x_25, %msk_19, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
    %x_64 = arith.extf %x_63 : tensor<64x32xbf16> to tensor<64x32xf32>
    %mean_65 = tt.load %mean_30, %mmask_11, %cst_4 : tensor<64x!tt.ptr<f32>>
    %x_66 = tt.expand_dims %mean_65 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %x_67 = tt.broadcast %x_66 : tensor<64x1xf32> -> tensor<64x32xf32>
    %x_68 = arith.subf %x_64, %x_67 : tensor<64x32xf32>
    %xhat_69 = tt.expand_dims %rstd_60 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_70 = tt.broadcast %xhat_69 : tensor<64x1xf32> -> tensor<64x32xf32>
    %xhat_71 = arith.mulf %x_68, %xhat_70 : tensor<64x32xf32>
    %v_72 = tt.load %v_37, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
    %v_73 = arith.extf %v_72 : tensor<32xbf16> to tensor<32xf32>
    %dx = tt.expand_dims %v_73 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %dx_74 = tt.broadcast %dx : tensor<1x32xf32> -> tensor<64x32xf32>
    %dx_75 = arith.mulf %du_62, %dx_74 : tensor<64x32xf32>
    %dx_76 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_77 = tt.broadcast %dx_76 : tensor<64x1xf32> -> tensor<64x32xf32>
    %dx_78 = arith.mulf %xhat_71, %dx_77 : tensor<64x32xf32>
    %dx_79 = arith.subf %dx_75, %dx_78 : tensor<64x32xf32>
    %dx_80 = tt.expand_dims %m1 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_81 = tt.broadcast %dx_80 : tensor<64x1xf32> -> tensor<64x32xf32>
    %dx_82 = arith.subf %dx_79, %dx_81 : tensor<64x32xf32>
    %dx_83 = arith.mulf %dx_82, %xhat_70 : tensor<64x32xf32>
    %dx_84 = tt.splat %stride_drm : i32 -> tensor<64x1xi32>
    %dx_85 = arith.muli %msk, %dx_84 : tensor<64x1xi32>
    %dx_86 = tt.splat %DRES : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %dx_87 = tt.addptr %dx_86, %dx_85 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %dx_88 = tt.broadcast %dx_87 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %dx_89 = tt.addptr %dx_88, %x_24 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %dx_90 = tt.load %dx_89, %msk_19, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
    %dx_91 = arith.extf %dx_90 : tensor<64x32xbf16> to tensor<64x32xf32>
    %dx_92 = arith.addf %dx_83, %dx_91 : tensor<64x32xf32>
    %17 = arith.truncf %dx_92 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %17, %msk_19 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// Bail out: a column partial stored between du's store and its reload (could alias DX).
// CHECK-LABEL: tt.func public @negative_dg_after_store
// CHECK-COUNT-3: tt.store
// REMARK: missed: 'tt.store' between the unnormalized store and the final store

module {
  tt.func public @negative_dg_after_store(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %M: i32, %R: i32) attributes {noinline = false} {
    %cst = arith.constant dense<64> : tensor<1x64xi32>
    %nmask = arith.constant dense<64> : tensor<64xi32>
    %du = arith.constant 32 : i32
    %du_0 = arith.constant dense<64> : tensor<32x1xi32>
    %du_1 = arith.constant 0 : i32
    %du_2 = arith.constant 1 : i32
    %du_3 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %du_4 = arith.constant dense<0.000000e+00> : tensor<32x64xbf16>
    %acc = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %du_5 = arith.constant 31 : i32
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %dx = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_7 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_8 = arith.constant dense<64> : tensor<64x1xi32>
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_9 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_10 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_11 = tt.splat %offs_m_9 : i32 -> tensor<64xi32>
    %offs_m_12 = arith.addi %offs_m_11, %offs_m_10 : tensor<64xi32>
    %mmask = tt.splat %M : i32 -> tensor<64xi32>
    %mmask_13 = arith.cmpi slt, %offs_m_12, %mmask : tensor<64xi32>
    %nmask_14 = arith.cmpi slt, %offs_m_10, %nmask : tensor<64xi32>
    %offs_r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %du_15 = arith.addi %R, %du_5 : i32
    %du_16 = arith.divsi %du_15, %du : i32
    %acc_17 = scf.for %r = %du_1 to %du_16 step %du_2 iter_args(%acc_51 = %acc) -> (tensor<64x64xf32>)  : i32 {
      %rr = arith.muli %r, %du : i32
      %rr_52 = tt.splat %rr : i32 -> tensor<32xi32>
      %rr_53 = arith.addi %rr_52, %offs_r : tensor<32xi32>
      %a = tt.expand_dims %mmask_13 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %a_54 = tt.expand_dims %rr_53 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_55 = tt.splat %R : i32 -> tensor<1x32xi32>
      %a_56 = arith.cmpi slt, %a_54, %a_55 : tensor<1x32xi32>
      %a_57 = tt.broadcast %a : tensor<64x1xi1> -> tensor<64x32xi1>
      %a_58 = tt.broadcast %a_56 : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_59 = arith.andi %a_57, %a_58 : tensor<64x32xi1>
      %a_60 = tt.expand_dims %offs_m_12 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_61 = tt.splat %R : i32 -> tensor<64x1xi32>
      %a_62 = arith.muli %a_60, %a_61 : tensor<64x1xi32>
      %a_63 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_64 = tt.addptr %a_63, %a_62 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_65 = tt.broadcast %a_64 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_66 = tt.broadcast %a_54 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_67 = tt.addptr %a_65, %a_66 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %a_68 = tt.load %a_67, %a_59, %du_3 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.expand_dims %rr_53 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_69 = tt.splat %R : i32 -> tensor<32x1xi32>
      %b_70 = arith.cmpi slt, %b, %b_69 : tensor<32x1xi32>
      %b_71 = tt.expand_dims %nmask_14 {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
      %b_72 = tt.broadcast %b_70 : tensor<32x1xi1> -> tensor<32x64xi1>
      %b_73 = tt.broadcast %b_71 : tensor<1x64xi1> -> tensor<32x64xi1>
      %b_74 = arith.andi %b_72, %b_73 : tensor<32x64xi1>
      %b_75 = arith.muli %b, %du_0 : tensor<32x1xi32>
      %b_76 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
      %b_77 = tt.addptr %b_76, %b_75 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
      %b_78 = tt.expand_dims %offs_m_10 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %b_79 = tt.broadcast %b_77 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x64x!tt.ptr<bf16>>
      %b_80 = tt.broadcast %b_78 : tensor<1x64xi32> -> tensor<32x64xi32>
      %b_81 = tt.addptr %b_79, %b_80 : tensor<32x64x!tt.ptr<bf16>>, tensor<32x64xi32>
      %b_82 = tt.load %b_81, %b_74, %du_4 : tensor<32x64x!tt.ptr<bf16>>
      %acc_83 = tt.dot %a_68, %b_82, %acc_51, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
      scf.yield %acc_83 : tensor<64x64xf32>
    }
    %msk = tt.expand_dims %offs_m_12 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %msk_18 = tt.splat %M : i32 -> tensor<64x1xi32>
    %msk_19 = arith.cmpi slt, %msk, %msk_18 : tensor<64x1xi32>
    %msk_20 = tt.expand_dims %offs_m_10 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %msk_21 = arith.cmpi slt, %msk_20, %cst : tensor<1x64xi32>
    %msk_22 = tt.broadcast %msk_19 : tensor<64x1xi1> -> tensor<64x64xi1>
    %msk_23 = tt.broadcast %msk_21 : tensor<1x64xi1> -> tensor<64x64xi1>
    %msk_24 = arith.andi %msk_22, %msk_23 : tensor<64x64xi1>
    %x = arith.muli %msk, %cst_8 : tensor<64x1xi32>
    %x_25 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %x_26 = tt.addptr %x_25, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %x_27 = tt.broadcast %x_26 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %x_28 = tt.broadcast %msk_20 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x_29 = tt.addptr %x_27, %x_28 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %x_30 = tt.load %x_29, %msk_24, %cst_6 : tensor<64x64x!tt.ptr<bf16>>
    %x_31 = arith.extf %x_30 : tensor<64x64xbf16> to tensor<64x64xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_32 = tt.addptr %rstd, %offs_m_12 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_33 = tt.load %rstd_32, %mmask_13, %cst_7 : tensor<64x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_33 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_34 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_35 = arith.mulf %x_31, %xhat_34 : tensor<64x64xf32>
    %c2 = arith.mulf %acc_17, %xhat_35 : tensor<64x64xf32>
    %c2_36 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_51: f32, %c2_52: f32):
      %c2_53 = arith.addf %c2_51, %c2_52 : f32
      tt.reduce.return %c2_53 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    %p = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_37 = tt.addptr %p, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_38 = tt.broadcast %p_37 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %p_39 = tt.addptr %p_38, %x_28 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %0 = arith.truncf %acc_17 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %p_39, %0, %msk_24 : tensor<64x64x!tt.ptr<bf16>>
    %1 = tt.addptr %DGP, %offs_m_9 : !tt.ptr<f32>, i32
    %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %3 = tt.addptr %2, %offs_m_10 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %4 = "tt.reduce"(%c2) <{axis = 0 : i32}> ({
    ^bb0(%arg8: f32, %arg9: f32):
      %6 = arith.addf %arg8, %arg9 : f32
      tt.reduce.return %6 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    tt.store %3, %4 : tensor<64x!tt.ptr<f32>>
    %du_40 = tt.load %p_39, %msk_24, %cst_6 : tensor<64x64x!tt.ptr<bf16>>
    %du_41 = arith.extf %du_40 : tensor<64x64xbf16> to tensor<64x64xf32>
    %rstd_42 = tt.load %rstd_32, %mmask_13, %cst_7 : tensor<64x!tt.ptr<f32>>
    %dx_43 = arith.divf %c2_36, %dx : tensor<64xf32>
    %dx_44 = tt.expand_dims %dx_43 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_45 = tt.broadcast %dx_44 : tensor<64x1xf32> -> tensor<64x64xf32>
    %dx_46 = arith.mulf %xhat_35, %dx_45 : tensor<64x64xf32>
    %dx_47 = arith.subf %du_41, %dx_46 : tensor<64x64xf32>
    %dx_48 = tt.expand_dims %rstd_42 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_49 = tt.broadcast %dx_48 : tensor<64x1xf32> -> tensor<64x64xf32>
    %dx_50 = arith.mulf %dx_47, %dx_49 : tensor<64x64xf32>
    %5 = arith.truncf %dx_50 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %p_39, %5, %msk_24 : tensor<64x64x!tt.ptr<bf16>>
    tt.return
  }
}
