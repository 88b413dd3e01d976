// epilogue-norm on the naive norm-backward kernel (kernels/backward.py): the dX GEMM's output
// row (du) is reduced (sum du*g*xhat; LayerNorm also sum du*g), stored, reloaded and finished as
// dx; with the row in one tile the store + reload go away. Positive cases first, then bail-outs.
// Inputs: TTIR from test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --epilogue-norm %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark

// RMSNorm dX, one tile holds the row: dx from the fp32 accumulator, one store to DX (the dg
// partial's store stays, before it).
// CHECK-LABEL: tt.func public @rms_dx_one_tile
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[DU:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x64xi1>, tensor<64x64xf32>
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.store
// the second pass loads x again (for xhat) but not du: one [64, 64] bf16 load, then dx from DU
// CHECK: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: arith.mulf %[[DU]], %{{.+}} : tensor<64x64xf32>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @rms_dx_one_tile(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64xbf16>
    %cst_0 = arith.constant dense<64> : tensor<1x64xi32>
    %c32_i32 = arith.constant 32 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_5 = arith.constant dense<64> : tensor<64xi32>
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %mmask = tt.splat %M : i32 -> tensor<64xi32>
    %mmask_9 = arith.cmpi slt, %offs_m_8, %mmask : tensor<64xi32>
    %nmask = arith.cmpi slt, %offs_m_6, %cst_5 : tensor<64xi32>
    %rows = arith.remsi %offs_m_8, %mmask : tensor<64xi32>
    %cols = arith.remsi %offs_m_6, %cst_5 : tensor<64xi32>
    %offs_r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %du = arith.addi %R, %c31_i32 : i32
    %du_10 = arith.divsi %du, %c32_i32 : i32
    %acc = scf.for %r = %c0_i32 to %du_10 step %c1_i32 iter_args(%acc_60 = %cst_1) -> (tensor<64x64xf32>)  : i32 {
      %rr = arith.muli %r, %c32_i32 : i32
      %rr_61 = tt.splat %rr : i32 -> tensor<32xi32>
      %rr_62 = arith.addi %rr_61, %offs_r : tensor<32xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_ptr_63 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
      %a_ptr_64 = arith.muli %a_ptr, %a_ptr_63 : tensor<64x1xi32>
      %a_ptr_65 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_ptr_66 = tt.addptr %a_ptr_65, %a_ptr_64 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_67 = tt.expand_dims %rr_62 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_ptr_68 = tt.broadcast %a_ptr_66 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_ptr_69 = tt.broadcast %a_ptr_67 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_ptr_70 = tt.addptr %a_ptr_68, %a_ptr_69 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %b_ptr = tt.expand_dims %rr_62 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_ptr_71 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
      %b_ptr_72 = arith.muli %b_ptr, %b_ptr_71 : tensor<32x1xi32>
      %b_ptr_73 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
      %b_ptr_74 = tt.addptr %b_ptr_73, %b_ptr_72 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
      %b_ptr_75 = tt.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %b_ptr_76 = tt.broadcast %b_ptr_74 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x64x!tt.ptr<bf16>>
      %b_ptr_77 = tt.broadcast %b_ptr_75 : tensor<1x64xi32> -> tensor<32x64xi32>
      %b_ptr_78 = tt.addptr %b_ptr_76, %b_ptr_77 : tensor<32x64x!tt.ptr<bf16>>, tensor<32x64xi32>
      %a = tt.load %a_ptr_70 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.load %b_ptr_78 : tensor<32x64x!tt.ptr<bf16>>
      %acc_79 = tt.dot %a, %b, %acc_60, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
      scf.yield %acc_79 : tensor<64x64xf32>
    }
    %acc_11 = tt.expand_dims %mmask_9 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
    %acc_12 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
    %acc_13 = tt.broadcast %acc_11 : tensor<64x1xi1> -> tensor<64x64xi1>
    %acc_14 = tt.broadcast %acc_12 : tensor<1x64xi1> -> tensor<64x64xi1>
    %acc_15 = arith.andi %acc_13, %acc_14 : tensor<64x64xi1>
    %acc_16 = arith.select %acc_15, %acc, %cst_1 : tensor<64x64xi1>, tensor<64x64xf32>
    %msk = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %msk_17 = tt.splat %M : i32 -> tensor<64x1xi32>
    %msk_18 = arith.cmpi slt, %msk, %msk_17 : tensor<64x1xi32>
    %msk_19 = tt.expand_dims %offs_m_6 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %msk_20 = arith.cmpi slt, %msk_19, %cst_0 : tensor<1x64xi32>
    %msk_21 = tt.broadcast %msk_18 : tensor<64x1xi1> -> tensor<64x64xi1>
    %msk_22 = tt.broadcast %msk_20 : tensor<1x64xi1> -> tensor<64x64xi1>
    %msk_23 = arith.andi %msk_21, %msk_22 : tensor<64x64xi1>
    %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
    %x_24 = arith.muli %msk, %x : tensor<64x1xi32>
    %x_25 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %x_26 = tt.addptr %x_25, %x_24 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %x_27 = tt.broadcast %x_26 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %x_28 = tt.broadcast %msk_19 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x_29 = tt.addptr %x_27, %x_28 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %x_30 = tt.load %x_29, %msk_23, %cst_2 : tensor<64x64x!tt.ptr<bf16>>
    %x_31 = arith.extf %x_30 : tensor<64x64xbf16> to tensor<64x64xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_32 = tt.addptr %rstd, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_33 = tt.load %rstd_32, %mmask_9, %cst_4 : tensor<64x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_33 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_34 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_35 = arith.mulf %x_31, %xhat_34 : tensor<64x64xf32>
    %v = tt.splat %G : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
    %v_36 = tt.addptr %v, %offs_m_6 : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
    %v_37 = tt.load %v_36, %nmask, %cst : tensor<64x!tt.ptr<bf16>>
    %v_38 = arith.extf %v_37 : tensor<64xbf16> to tensor<64xf32>
    %0 = tt.addptr %DGP, %offs_m : !tt.ptr<f32>, i32
    %1 = tt.splat %0 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %2 = tt.addptr %1, %offs_m_6 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %3 = arith.mulf %acc_16, %xhat_35 : tensor<64x64xf32>
    %4 = "tt.reduce"(%3) <{axis = 0 : i32}> ({
    ^bb0(%arg20: f32, %arg21: f32):
      %13 = arith.addf %arg20, %arg21 : f32
      tt.reduce.return %13 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    tt.store %2, %4, %nmask : tensor<64x!tt.ptr<f32>>
    %dn = tt.expand_dims %v_38 {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %dn_39 = tt.broadcast %dn : tensor<1x64xf32> -> tensor<64x64xf32>
    %dn_40 = arith.mulf %acc_16, %dn_39 : tensor<64x64xf32>
    %c2 = arith.mulf %dn_40, %xhat_35 : tensor<64x64xf32>
    %c2_41 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_60: f32, %c2_61: f32):
      %c2_62 = arith.addf %c2_60, %c2_61 : f32
      tt.reduce.return %c2_62 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    %c2_42 = arith.addf %c2_41, %cst_4 : tensor<64xf32>
    %5 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
    %6 = arith.muli %msk, %5 : tensor<64x1xi32>
    %7 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %8 = tt.addptr %7, %6 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %9 = tt.broadcast %8 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %10 = tt.addptr %9, %x_28 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %11 = arith.truncf %acc_16 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %10, %11, %msk_23 : tensor<64x64x!tt.ptr<bf16>>
    %rstd_43 = tt.load %rstd_32, %mmask_9, %cst_4 : tensor<64x!tt.ptr<f32>>
    %m2 = arith.divf %c2_42, %cst_3 : tensor<64xf32>
    %du_44 = tt.load %10, %msk_23, %cst_2 : tensor<64x64x!tt.ptr<bf16>>
    %du_45 = arith.extf %du_44 : tensor<64x64xbf16> to tensor<64x64xf32>
    %x_46 = tt.load %x_29, %msk_23, %cst_2 : tensor<64x64x!tt.ptr<bf16>>
    %x_47 = arith.extf %x_46 : tensor<64x64xbf16> to tensor<64x64xf32>
    %xhat_48 = tt.expand_dims %rstd_43 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_49 = tt.broadcast %xhat_48 : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_50 = arith.mulf %x_47, %xhat_49 : tensor<64x64xf32>
    %v_51 = tt.load %v_36, %nmask, %cst : tensor<64x!tt.ptr<bf16>>
    %v_52 = arith.extf %v_51 : tensor<64xbf16> to tensor<64xf32>
    %dx = tt.expand_dims %v_52 {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %dx_53 = tt.broadcast %dx : tensor<1x64xf32> -> tensor<64x64xf32>
    %dx_54 = arith.mulf %du_45, %dx_53 : tensor<64x64xf32>
    %dx_55 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_56 = tt.broadcast %dx_55 : tensor<64x1xf32> -> tensor<64x64xf32>
    %dx_57 = arith.mulf %xhat_50, %dx_56 : tensor<64x64xf32>
    %dx_58 = arith.subf %dx_54, %dx_57 : tensor<64x64xf32>
    %dx_59 = arith.mulf %dx_58, %xhat_49 : tensor<64x64xf32>
    %12 = arith.truncf %dx_59 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %10, %12, %msk_23 : tensor<64x64x!tt.ptr<bf16>>
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
  tt.func public @ln_dx_silu_regrouped(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<32xbf16>
    %cst_0 = arith.constant dense<32> : tensor<1x32xi32>
    %c31_i32 = arith.constant 31 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_2 = arith.constant dense<3.200000e+01> : tensor<64xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_4 = arith.constant dense<32> : tensor<32xi32>
    %cst_5 = arith.constant dense<1.000000e+00> : tensor<64x32xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c32_i32 = arith.constant 32 : i32
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_7 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_8 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %mmask = tt.splat %M : i32 -> tensor<64xi32>
    %mmask_10 = arith.cmpi slt, %offs_m_9, %mmask : tensor<64xi32>
    %nmask = arith.cmpi slt, %offs_n, %cst_4 : tensor<32xi32>
    %rows = arith.remsi %offs_m_9, %mmask : tensor<64xi32>
    %cols = arith.remsi %offs_n, %cst_4 : tensor<32xi32>
    %du = arith.addi %R, %c31_i32 : i32
    %du_11 = arith.divsi %du, %c32_i32 : i32
    %acc = scf.for %r = %c0_i32 to %du_11 step %c1_i32 iter_args(%acc_98 = %cst_6) -> (tensor<64x32xf32>)  : i32 {
      %rr = arith.muli %r, %c32_i32 : i32
      %rr_99 = tt.splat %rr : i32 -> tensor<32xi32>
      %rr_100 = arith.addi %rr_99, %offs_n : tensor<32xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_ptr_101 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
      %a_ptr_102 = arith.muli %a_ptr, %a_ptr_101 : tensor<64x1xi32>
      %a_ptr_103 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_ptr_104 = tt.addptr %a_ptr_103, %a_ptr_102 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_105 = tt.expand_dims %rr_100 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_ptr_106 = tt.broadcast %a_ptr_104 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_ptr_107 = tt.broadcast %a_ptr_105 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_ptr_108 = tt.addptr %a_ptr_106, %a_ptr_107 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %b_ptr = tt.expand_dims %rr_100 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_ptr_109 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
      %b_ptr_110 = arith.muli %b_ptr, %b_ptr_109 : tensor<32x1xi32>
      %b_ptr_111 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
      %b_ptr_112 = tt.addptr %b_ptr_111, %b_ptr_110 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
      %b_ptr_113 = tt.expand_dims %cols {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %b_ptr_114 = tt.broadcast %b_ptr_112 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %b_ptr_115 = tt.broadcast %b_ptr_113 : tensor<1x32xi32> -> tensor<32x32xi32>
      %b_ptr_116 = tt.addptr %b_ptr_114, %b_ptr_115 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %a = tt.load %a_ptr_108 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.load %b_ptr_116 : tensor<32x32x!tt.ptr<bf16>>
      %acc_117 = tt.dot %a, %b, %acc_98, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_117 : tensor<64x32xf32>
    }
    %acc_12 = tt.expand_dims %mmask_10 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
    %acc_13 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<32xi1> -> tensor<1x32xi1>
    %acc_14 = tt.broadcast %acc_12 : tensor<64x1xi1> -> tensor<64x32xi1>
    %acc_15 = tt.broadcast %acc_13 : tensor<1x32xi1> -> tensor<64x32xi1>
    %acc_16 = arith.andi %acc_14, %acc_15 : tensor<64x32xi1>
    %acc_17 = arith.select %acc_16, %acc, %cst_6 : tensor<64x32xi1>, tensor<64x32xf32>
    %msk = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %msk_18 = tt.splat %M : i32 -> tensor<64x1xi32>
    %msk_19 = arith.cmpi slt, %msk, %msk_18 : tensor<64x1xi32>
    %msk_20 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %msk_21 = arith.cmpi slt, %msk_20, %cst_0 : tensor<1x32xi32>
    %msk_22 = tt.broadcast %msk_19 : tensor<64x1xi1> -> tensor<64x32xi1>
    %msk_23 = tt.broadcast %msk_21 : tensor<1x32xi1> -> tensor<64x32xi1>
    %msk_24 = arith.andi %msk_22, %msk_23 : tensor<64x32xi1>
    %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
    %x_25 = arith.muli %msk, %x : tensor<64x1xi32>
    %x_26 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %x_27 = tt.addptr %x_26, %x_25 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %x_28 = tt.broadcast %x_27 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %x_29 = tt.broadcast %msk_20 : tensor<1x32xi32> -> tensor<64x32xi32>
    %x_30 = tt.addptr %x_28, %x_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %x_31 = tt.load %x_30, %msk_24, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
    %x_32 = arith.extf %x_31 : tensor<64x32xbf16> to tensor<64x32xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_33 = tt.addptr %rstd, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_34 = tt.load %rstd_33, %mmask_10, %cst_3 : tensor<64x!tt.ptr<f32>>
    %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %mean_35 = tt.addptr %mean, %offs_m_9 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %mean_36 = tt.load %mean_35, %mmask_10, %cst_3 : tensor<64x!tt.ptr<f32>>
    %x_37 = tt.expand_dims %mean_36 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %x_38 = tt.broadcast %x_37 : tensor<64x1xf32> -> tensor<64x32xf32>
    %x_39 = arith.subf %x_32, %x_38 : tensor<64x32xf32>
    %xhat = tt.expand_dims %rstd_34 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_40 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x32xf32>
    %xhat_41 = arith.mulf %x_39, %xhat_40 : tensor<64x32xf32>
    %v = tt.splat %G : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %v_42 = tt.addptr %v, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %v_43 = tt.load %v_42, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
    %v_44 = arith.extf %v_43 : tensor<32xbf16> to tensor<32xf32>
    %z = tt.expand_dims %v_44 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %z_45 = tt.broadcast %z : tensor<1x32xf32> -> tensor<64x32xf32>
    %z_46 = arith.mulf %xhat_41, %z_45 : tensor<64x32xf32>
    %v_47 = tt.splat %B : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
    %v_48 = tt.addptr %v_47, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
    %v_49 = tt.load %v_48, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
    %v_50 = arith.extf %v_49 : tensor<32xbf16> to tensor<32xf32>
    %z_51 = tt.expand_dims %v_50 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %z_52 = tt.broadcast %z_51 : tensor<1x32xf32> -> tensor<64x32xf32>
    %z_53 = arith.addf %z_46, %z_52 : tensor<64x32xf32>
    %s = arith.subf %cst_6, %z_53 : tensor<64x32xf32>
    %s_54 = math.exp %s : tensor<64x32xf32>
    %s_55 = arith.addf %s_54, %cst_5 : tensor<64x32xf32>
    %s_56 = arith.divf %cst_5, %s_55 : tensor<64x32xf32>
    %du_57 = arith.subf %cst_5, %s_56 : tensor<64x32xf32>
    %du_58 = arith.mulf %z_53, %du_57 : tensor<64x32xf32>
    %du_59 = arith.addf %du_58, %cst_5 : tensor<64x32xf32>
    %du_60 = arith.mulf %s_56, %du_59 : tensor<64x32xf32>
    %du_61 = arith.mulf %acc_17, %du_60 : tensor<64x32xf32>
    %0 = arith.muli %pid, %c32_i32 : i32
    %1 = tt.addptr %DGP, %0 : !tt.ptr<f32>, i32
    %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %3 = tt.addptr %2, %offs_n : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %4 = arith.mulf %du_61, %xhat_41 : tensor<64x32xf32>
    %5 = "tt.reduce"(%4) <{axis = 0 : i32}> ({
    ^bb0(%arg20: f32, %arg21: f32):
      %18 = arith.addf %arg20, %arg21 : f32
      tt.reduce.return %18 : f32
    }) : (tensor<64x32xf32>) -> tensor<32xf32>
    tt.store %3, %5, %nmask : tensor<32x!tt.ptr<f32>>
    %6 = tt.addptr %DBP, %0 : !tt.ptr<f32>, i32
    %7 = tt.splat %6 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %8 = tt.addptr %7, %offs_n : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %9 = "tt.reduce"(%du_61) <{axis = 0 : i32}> ({
    ^bb0(%arg20: f32, %arg21: f32):
      %18 = arith.addf %arg20, %arg21 : f32
      tt.reduce.return %18 : f32
    }) : (tensor<64x32xf32>) -> tensor<32xf32>
    tt.store %8, %9, %nmask : tensor<32x!tt.ptr<f32>>
    %dn = arith.mulf %du_61, %z_45 : tensor<64x32xf32>
    %c1 = "tt.reduce"(%dn) <{axis = 1 : i32}> ({
    ^bb0(%c1_98: f32, %c1_99: f32):
      %c1_100 = arith.addf %c1_98, %c1_99 : f32
      tt.reduce.return %c1_100 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %c1_62 = arith.addf %c1, %cst_3 : tensor<64xf32>
    %c2 = arith.mulf %dn, %xhat_41 : tensor<64x32xf32>
    %c2_63 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_98: f32, %c2_99: f32):
      %c2_100 = arith.addf %c2_98, %c2_99 : f32
      tt.reduce.return %c2_100 : f32
    }) : (tensor<64x32xf32>) -> tensor<64xf32>
    %c2_64 = arith.addf %c2_63, %cst_3 : tensor<64xf32>
    %10 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
    %11 = arith.muli %msk, %10 : tensor<64x1xi32>
    %12 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %13 = tt.addptr %12, %11 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %14 = tt.broadcast %13 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %15 = tt.addptr %14, %x_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %16 = arith.truncf %du_61 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %16, %msk_24 : tensor<64x32x!tt.ptr<bf16>>
    %rstd_65 = tt.load %rstd_33, %mmask_10, %cst_3 : tensor<64x!tt.ptr<f32>>
    %m1 = arith.divf %c1_62, %cst_2 : tensor<64xf32>
    %m2 = arith.divf %c2_64, %cst_2 : tensor<64xf32>
    %du_66 = tt.load %15, %msk_24, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
    %du_67 = arith.extf %du_66 : tensor<64x32xbf16> to tensor<64x32xf32>
    %x_68 = tt.load %x_30, %msk_24, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
    %x_69 = arith.extf %x_68 : tensor<64x32xbf16> to tensor<64x32xf32>
    %mean_70 = tt.load %mean_35, %mmask_10, %cst_3 : tensor<64x!tt.ptr<f32>>
    %x_71 = tt.expand_dims %mean_70 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %x_72 = tt.broadcast %x_71 : tensor<64x1xf32> -> tensor<64x32xf32>
    %x_73 = arith.subf %x_69, %x_72 : tensor<64x32xf32>
    %xhat_74 = tt.expand_dims %rstd_65 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_75 = tt.broadcast %xhat_74 : tensor<64x1xf32> -> tensor<64x32xf32>
    %xhat_76 = arith.mulf %x_73, %xhat_75 : tensor<64x32xf32>
    %v_77 = tt.load %v_42, %nmask, %cst : tensor<32x!tt.ptr<bf16>>
    %v_78 = arith.extf %v_77 : tensor<32xbf16> to tensor<32xf32>
    %dx = tt.expand_dims %v_78 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %dx_79 = tt.broadcast %dx : tensor<1x32xf32> -> tensor<64x32xf32>
    %dx_80 = arith.mulf %du_67, %dx_79 : tensor<64x32xf32>
    %dx_81 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_82 = tt.broadcast %dx_81 : tensor<64x1xf32> -> tensor<64x32xf32>
    %dx_83 = arith.mulf %xhat_76, %dx_82 : tensor<64x32xf32>
    %dx_84 = arith.subf %dx_80, %dx_83 : tensor<64x32xf32>
    %dx_85 = tt.expand_dims %m1 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_86 = tt.broadcast %dx_85 : tensor<64x1xf32> -> tensor<64x32xf32>
    %dx_87 = arith.subf %dx_84, %dx_86 : tensor<64x32xf32>
    %dx_88 = arith.mulf %dx_87, %xhat_75 : tensor<64x32xf32>
    %dx_89 = tt.splat %stride_drm : i32 -> tensor<64x1xi32>
    %dx_90 = arith.muli %msk, %dx_89 : tensor<64x1xi32>
    %dx_91 = tt.splat %DRES : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %dx_92 = tt.addptr %dx_91, %dx_90 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %dx_93 = tt.broadcast %dx_92 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %dx_94 = tt.addptr %dx_93, %x_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %dx_95 = tt.load %dx_94, %msk_24, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
    %dx_96 = arith.extf %dx_95 : tensor<64x32xbf16> to tensor<64x32xf32>
    %dx_97 = arith.addf %dx_88, %dx_96 : tensor<64x32xf32>
    %17 = arith.truncf %dx_97 : tensor<64x32xf32> to tensor<64x32xbf16>
    tt.store %15, %17, %msk_24 : tensor<64x32x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// The pre-norm op's dX also writes the norm's output n (for dW = dY^T n): n's store comes
// before du's, like the dg partial's, so the row is still normalized in registers; three
// stores remain (dg partial, n, dx) and nothing is reloaded.
// CHECK-LABEL: tt.func public @rms_dx_xn_one_tile
// CHECK: scf.for
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @rms_dx_xn_one_tile(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<64xbf16>
    %cst_0 = arith.constant dense<64> : tensor<1x64xi32>
    %c32_i32 = arith.constant 32 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_5 = arith.constant dense<64> : tensor<64xi32>
    %c64_i32 = arith.constant 64 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c64_i32 : i32
    %offs_m_6 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<64xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<64xi32>
    %mmask = tt.splat %M : i32 -> tensor<64xi32>
    %mmask_9 = arith.cmpi slt, %offs_m_8, %mmask : tensor<64xi32>
    %nmask = arith.cmpi slt, %offs_m_6, %cst_5 : tensor<64xi32>
    %rows = arith.remsi %offs_m_8, %mmask : tensor<64xi32>
    %cols = arith.remsi %offs_m_6, %cst_5 : tensor<64xi32>
    %offs_r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %du = arith.addi %R, %c31_i32 : i32
    %du_10 = arith.divsi %du, %c32_i32 : i32
    %acc = scf.for %r = %c0_i32 to %du_10 step %c1_i32 iter_args(%acc_60 = %cst_1) -> (tensor<64x64xf32>)  : i32 {
      %rr = arith.muli %r, %c32_i32 : i32
      %rr_61 = tt.splat %rr : i32 -> tensor<32xi32>
      %rr_62 = arith.addi %rr_61, %offs_r : tensor<32xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_ptr_63 = tt.splat %stride_dym : i32 -> tensor<64x1xi32>
      %a_ptr_64 = arith.muli %a_ptr, %a_ptr_63 : tensor<64x1xi32>
      %a_ptr_65 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_ptr_66 = tt.addptr %a_ptr_65, %a_ptr_64 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_67 = tt.expand_dims %rr_62 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_ptr_68 = tt.broadcast %a_ptr_66 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_ptr_69 = tt.broadcast %a_ptr_67 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_ptr_70 = tt.addptr %a_ptr_68, %a_ptr_69 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %b_ptr = tt.expand_dims %rr_62 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_ptr_71 = tt.splat %stride_wr : i32 -> tensor<32x1xi32>
      %b_ptr_72 = arith.muli %b_ptr, %b_ptr_71 : tensor<32x1xi32>
      %b_ptr_73 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
      %b_ptr_74 = tt.addptr %b_ptr_73, %b_ptr_72 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
      %b_ptr_75 = tt.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %b_ptr_76 = tt.broadcast %b_ptr_74 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x64x!tt.ptr<bf16>>
      %b_ptr_77 = tt.broadcast %b_ptr_75 : tensor<1x64xi32> -> tensor<32x64xi32>
      %b_ptr_78 = tt.addptr %b_ptr_76, %b_ptr_77 : tensor<32x64x!tt.ptr<bf16>>, tensor<32x64xi32>
      %a = tt.load %a_ptr_70 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.load %b_ptr_78 : tensor<32x64x!tt.ptr<bf16>>
      %acc_79 = tt.dot %a, %b, %acc_60, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
      scf.yield %acc_79 : tensor<64x64xf32>
    }
    %acc_11 = tt.expand_dims %mmask_9 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
    %acc_12 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
    %acc_13 = tt.broadcast %acc_11 : tensor<64x1xi1> -> tensor<64x64xi1>
    %acc_14 = tt.broadcast %acc_12 : tensor<1x64xi1> -> tensor<64x64xi1>
    %acc_15 = arith.andi %acc_13, %acc_14 : tensor<64x64xi1>
    %acc_16 = arith.select %acc_15, %acc, %cst_1 : tensor<64x64xi1>, tensor<64x64xf32>
    %msk = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %msk_17 = tt.splat %M : i32 -> tensor<64x1xi32>
    %msk_18 = arith.cmpi slt, %msk, %msk_17 : tensor<64x1xi32>
    %msk_19 = tt.expand_dims %offs_m_6 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %msk_20 = arith.cmpi slt, %msk_19, %cst_0 : tensor<1x64xi32>
    %msk_21 = tt.broadcast %msk_18 : tensor<64x1xi1> -> tensor<64x64xi1>
    %msk_22 = tt.broadcast %msk_20 : tensor<1x64xi1> -> tensor<64x64xi1>
    %msk_23 = arith.andi %msk_21, %msk_22 : tensor<64x64xi1>
    %x = tt.splat %stride_xm : i32 -> tensor<64x1xi32>
    %x_24 = arith.muli %msk, %x : tensor<64x1xi32>
    %x_25 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %x_26 = tt.addptr %x_25, %x_24 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %x_27 = tt.broadcast %x_26 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %x_28 = tt.broadcast %msk_19 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x_29 = tt.addptr %x_27, %x_28 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %x_30 = tt.load %x_29, %msk_23, %cst_2 : tensor<64x64x!tt.ptr<bf16>>
    %x_31 = arith.extf %x_30 : tensor<64x64xbf16> to tensor<64x64xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_32 = tt.addptr %rstd, %offs_m_8 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_33 = tt.load %rstd_32, %mmask_9, %cst_4 : tensor<64x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_33 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_34 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_35 = arith.mulf %x_31, %xhat_34 : tensor<64x64xf32>
    %v = tt.splat %G : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
    %v_36 = tt.addptr %v, %offs_m_6 : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
    %v_37 = tt.load %v_36, %nmask, %cst : tensor<64x!tt.ptr<bf16>>
    %v_38 = arith.extf %v_37 : tensor<64xbf16> to tensor<64xf32>
    %xn = tt.expand_dims %v_38 {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %xn_39 = tt.broadcast %xn : tensor<1x64xf32> -> tensor<64x64xf32>
    %xn_40 = arith.mulf %xhat_35, %xn_39 : tensor<64x64xf32>
    %0 = tt.splat %stride_xnm : i32 -> tensor<64x1xi32>
    %1 = arith.muli %msk, %0 : tensor<64x1xi32>
    %2 = tt.splat %XN : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %4 = tt.broadcast %3 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_28 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %6 = arith.truncf %xn_40 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %5, %6, %msk_23 : tensor<64x64x!tt.ptr<bf16>>
    %7 = tt.addptr %DGP, %offs_m : !tt.ptr<f32>, i32
    %8 = tt.splat %7 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %9 = tt.addptr %8, %offs_m_6 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %10 = arith.mulf %acc_16, %xhat_35 : tensor<64x64xf32>
    %11 = "tt.reduce"(%10) <{axis = 0 : i32}> ({
    ^bb0(%arg20: f32, %arg21: f32):
      %20 = arith.addf %arg20, %arg21 : f32
      tt.reduce.return %20 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    tt.store %9, %11, %nmask : tensor<64x!tt.ptr<f32>>
    %dn = arith.mulf %acc_16, %xn_39 : tensor<64x64xf32>
    %c2 = arith.mulf %dn, %xhat_35 : tensor<64x64xf32>
    %c2_41 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_60: f32, %c2_61: f32):
      %c2_62 = arith.addf %c2_60, %c2_61 : f32
      tt.reduce.return %c2_62 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    %c2_42 = arith.addf %c2_41, %cst_4 : tensor<64xf32>
    %12 = tt.splat %stride_dxm : i32 -> tensor<64x1xi32>
    %13 = arith.muli %msk, %12 : tensor<64x1xi32>
    %14 = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %15 = tt.addptr %14, %13 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %16 = tt.broadcast %15 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %17 = tt.addptr %16, %x_28 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %18 = arith.truncf %acc_16 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %17, %18, %msk_23 : tensor<64x64x!tt.ptr<bf16>>
    %rstd_43 = tt.load %rstd_32, %mmask_9, %cst_4 : tensor<64x!tt.ptr<f32>>
    %m2 = arith.divf %c2_42, %cst_3 : tensor<64xf32>
    %du_44 = tt.load %17, %msk_23, %cst_2 : tensor<64x64x!tt.ptr<bf16>>
    %du_45 = arith.extf %du_44 : tensor<64x64xbf16> to tensor<64x64xf32>
    %x_46 = tt.load %x_29, %msk_23, %cst_2 : tensor<64x64x!tt.ptr<bf16>>
    %x_47 = arith.extf %x_46 : tensor<64x64xbf16> to tensor<64x64xf32>
    %xhat_48 = tt.expand_dims %rstd_43 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_49 = tt.broadcast %xhat_48 : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_50 = arith.mulf %x_47, %xhat_49 : tensor<64x64xf32>
    %v_51 = tt.load %v_36, %nmask, %cst : tensor<64x!tt.ptr<bf16>>
    %v_52 = arith.extf %v_51 : tensor<64xbf16> to tensor<64xf32>
    %dx = tt.expand_dims %v_52 {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
    %dx_53 = tt.broadcast %dx : tensor<1x64xf32> -> tensor<64x64xf32>
    %dx_54 = arith.mulf %du_45, %dx_53 : tensor<64x64xf32>
    %dx_55 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_56 = tt.broadcast %dx_55 : tensor<64x1xf32> -> tensor<64x64xf32>
    %dx_57 = arith.mulf %xhat_50, %dx_56 : tensor<64x64xf32>
    %dx_58 = arith.subf %dx_54, %dx_57 : tensor<64x64xf32>
    %dx_59 = arith.mulf %dx_58, %xhat_49 : tensor<64x64xf32>
    %19 = arith.truncf %dx_59 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %17, %19, %msk_23 : tensor<64x64x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// A column partial stored between du's store and its reload: another argument (distinct
// arguments do not alias, as for loads), left in place; du is forwarded as without it.
// CHECK-LABEL: tt.func public @dg_after_store
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store

module {
  tt.func public @dg_after_store(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %M: i32, %R: i32) attributes {noinline = false} {
    %cst = arith.constant dense<64> : tensor<1x64xi32>
    %du = arith.constant dense<64> : tensor<64xi32>
    %du_0 = arith.constant 32 : i32
    %du_1 = arith.constant dense<64> : tensor<32x1xi32>
    %du_2 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %du_3 = arith.constant 0 : i32
    %du_4 = arith.constant 1 : i32
    %du_5 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %du_6 = arith.constant dense<0.000000e+00> : tensor<32x64xbf16>
    %du_7 = arith.constant 31 : i32
    %cst_8 = arith.constant dense<0.000000e+00> : tensor<64x64xbf16>
    %dx = arith.constant dense<6.400000e+01> : tensor<64xf32>
    %cst_9 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_10 = arith.constant dense<64> : tensor<64x1xi32>
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_11 = arith.muli %offs_m, %c64_i32 : i32
    %offs_m_12 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_m_13 = tt.splat %offs_m_11 : i32 -> tensor<64xi32>
    %offs_m_14 = arith.addi %offs_m_13, %offs_m_12 : tensor<64xi32>
    %mmask = tt.splat %M : i32 -> tensor<64xi32>
    %mmask_15 = arith.cmpi slt, %offs_m_14, %mmask : tensor<64xi32>
    %nmask = arith.cmpi slt, %offs_m_12, %du : tensor<64xi32>
    %rows = arith.remsi %offs_m_14, %mmask : tensor<64xi32>
    %cols = arith.remsi %offs_m_12, %du : tensor<64xi32>
    %offs_r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %du_16 = arith.addi %R, %du_7 : i32
    %du_17 = arith.divsi %du_16, %du_0 : i32
    %acc = scf.for %r = %du_3 to %du_17 step %du_4 iter_args(%acc_57 = %du_2) -> (tensor<64x64xf32>)  : i32 {
      %rr = arith.muli %r, %du_0 : i32
      %rr_58 = tt.splat %rr : i32 -> tensor<32xi32>
      %rr_59 = arith.addi %rr_58, %offs_r : tensor<32xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %a_ptr_60 = tt.splat %R : i32 -> tensor<64x1xi32>
      %a_ptr_61 = arith.muli %a_ptr, %a_ptr_60 : tensor<64x1xi32>
      %a_ptr_62 = tt.splat %DY : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %a_ptr_63 = tt.addptr %a_ptr_62, %a_ptr_61 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %a_ptr_64 = tt.expand_dims %rr_59 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %a_ptr_65 = tt.broadcast %a_ptr_63 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %a_ptr_66 = tt.broadcast %a_ptr_64 : tensor<1x32xi32> -> tensor<64x32xi32>
      %a_ptr_67 = tt.addptr %a_ptr_65, %a_ptr_66 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %b_ptr = tt.expand_dims %rr_59 {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %b_ptr_68 = arith.muli %b_ptr, %du_1 : tensor<32x1xi32>
      %b_ptr_69 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x1x!tt.ptr<bf16>>
      %b_ptr_70 = tt.addptr %b_ptr_69, %b_ptr_68 : tensor<32x1x!tt.ptr<bf16>>, tensor<32x1xi32>
      %b_ptr_71 = tt.expand_dims %cols {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %b_ptr_72 = tt.broadcast %b_ptr_70 : tensor<32x1x!tt.ptr<bf16>> -> tensor<32x64x!tt.ptr<bf16>>
      %b_ptr_73 = tt.broadcast %b_ptr_71 : tensor<1x64xi32> -> tensor<32x64xi32>
      %b_ptr_74 = tt.addptr %b_ptr_72, %b_ptr_73 : tensor<32x64x!tt.ptr<bf16>>, tensor<32x64xi32>
      %a = tt.splat %R : i32 -> tensor<1x32xi32>
      %a_75 = arith.cmpi slt, %a_ptr_64, %a : tensor<1x32xi32>
      %a_76 = tt.broadcast %a_75 : tensor<1x32xi1> -> tensor<64x32xi1>
      %a_77 = tt.load %a_ptr_67, %a_76, %du_5 : tensor<64x32x!tt.ptr<bf16>>
      %b = tt.splat %R : i32 -> tensor<32x1xi32>
      %b_78 = arith.cmpi slt, %b_ptr, %b : tensor<32x1xi32>
      %b_79 = tt.broadcast %b_78 : tensor<32x1xi1> -> tensor<32x64xi1>
      %b_80 = tt.load %b_ptr_74, %b_79, %du_6 : tensor<32x64x!tt.ptr<bf16>>
      %acc_81 = tt.dot %a_77, %b_80, %acc_57, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x64xbf16> -> tensor<64x64xf32>
      scf.yield %acc_81 : tensor<64x64xf32>
    }
    %acc_18 = tt.expand_dims %mmask_15 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
    %acc_19 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
    %acc_20 = tt.broadcast %acc_18 : tensor<64x1xi1> -> tensor<64x64xi1>
    %acc_21 = tt.broadcast %acc_19 : tensor<1x64xi1> -> tensor<64x64xi1>
    %acc_22 = arith.andi %acc_20, %acc_21 : tensor<64x64xi1>
    %acc_23 = arith.select %acc_22, %acc, %du_2 : tensor<64x64xi1>, tensor<64x64xf32>
    %msk = tt.expand_dims %offs_m_14 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %msk_24 = tt.splat %M : i32 -> tensor<64x1xi32>
    %msk_25 = arith.cmpi slt, %msk, %msk_24 : tensor<64x1xi32>
    %msk_26 = tt.expand_dims %offs_m_12 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %msk_27 = arith.cmpi slt, %msk_26, %cst : tensor<1x64xi32>
    %msk_28 = tt.broadcast %msk_25 : tensor<64x1xi1> -> tensor<64x64xi1>
    %msk_29 = tt.broadcast %msk_27 : tensor<1x64xi1> -> tensor<64x64xi1>
    %msk_30 = arith.andi %msk_28, %msk_29 : tensor<64x64xi1>
    %x = arith.muli %msk, %cst_10 : tensor<64x1xi32>
    %x_31 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %x_32 = tt.addptr %x_31, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %x_33 = tt.broadcast %x_32 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %x_34 = tt.broadcast %msk_26 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x_35 = tt.addptr %x_33, %x_34 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %x_36 = tt.load %x_35, %msk_30, %cst_8 : tensor<64x64x!tt.ptr<bf16>>
    %x_37 = arith.extf %x_36 : tensor<64x64xbf16> to tensor<64x64xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_38 = tt.addptr %rstd, %offs_m_14 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_39 = tt.load %rstd_38, %mmask_15, %cst_9 : tensor<64x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_39 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %xhat_40 = tt.broadcast %xhat : tensor<64x1xf32> -> tensor<64x64xf32>
    %xhat_41 = arith.mulf %x_37, %xhat_40 : tensor<64x64xf32>
    %c2 = arith.mulf %acc_23, %xhat_41 : tensor<64x64xf32>
    %c2_42 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_57: f32, %c2_58: f32):
      %c2_59 = arith.addf %c2_57, %c2_58 : f32
      tt.reduce.return %c2_59 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    %p = tt.splat %DX : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_43 = tt.addptr %p, %x : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_44 = tt.broadcast %p_43 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x64x!tt.ptr<bf16>>
    %p_45 = tt.addptr %p_44, %x_34 : tensor<64x64x!tt.ptr<bf16>>, tensor<64x64xi32>
    %0 = arith.truncf %acc_23 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %p_45, %0, %msk_30 : tensor<64x64x!tt.ptr<bf16>>
    %1 = tt.addptr %DGP, %offs_m_11 : !tt.ptr<f32>, i32
    %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %3 = tt.addptr %2, %offs_m_12 : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %4 = "tt.reduce"(%c2) <{axis = 0 : i32}> ({
    ^bb0(%arg8: f32, %arg9: f32):
      %6 = arith.addf %arg8, %arg9 : f32
      tt.reduce.return %6 : f32
    }) : (tensor<64x64xf32>) -> tensor<64xf32>
    tt.store %3, %4 : tensor<64x!tt.ptr<f32>>
    %du_46 = tt.load %p_45, %msk_30, %cst_8 : tensor<64x64x!tt.ptr<bf16>>
    %du_47 = arith.extf %du_46 : tensor<64x64xbf16> to tensor<64x64xf32>
    %rstd_48 = tt.load %rstd_38, %mmask_15, %cst_9 : tensor<64x!tt.ptr<f32>>
    %dx_49 = arith.divf %c2_42, %dx : tensor<64xf32>
    %dx_50 = tt.expand_dims %dx_49 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_51 = tt.broadcast %dx_50 : tensor<64x1xf32> -> tensor<64x64xf32>
    %dx_52 = arith.mulf %xhat_41, %dx_51 : tensor<64x64xf32>
    %dx_53 = arith.subf %du_47, %dx_52 : tensor<64x64xf32>
    %dx_54 = tt.expand_dims %rstd_48 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
    %dx_55 = tt.broadcast %dx_54 : tensor<64x1xf32> -> tensor<64x64xf32>
    %dx_56 = arith.mulf %dx_53, %dx_55 : tensor<64x64xf32>
    %5 = arith.truncf %dx_56 : tensor<64x64xf32> to tensor<64x64xbf16>
    tt.store %p_45, %5, %msk_30 : tensor<64x64x!tt.ptr<bf16>>
    tt.return
  }
}
