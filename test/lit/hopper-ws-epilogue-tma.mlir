// hopper-ws{epilogue-tma=true} on the rowdot plan's dX kernel (kernels/backward.py, as
// ops.training.rowdot_backward launches it: g folded into W, 128 x 256 tiles): the epilogue's
// [BM, BN] tile of x, at the output tile's rows and columns, comes by TMA into the output's
// staging tile during the k-loop (a fourth descriptor; the loader issues it), instead of a
// pointer load in the hook. Without the option, and for a tile TMA cannot stage (another element
// type than the output's), x stays a pointer load. Inputs: TTIR from
// test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{epilogue-tma=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=DEFAULT

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [K, N]; no statistics; A straight from shared memory; epilogue translated from the IR ({{[0-9]+}} expression nodes in the hooks); the epilogue's tile of a second matrix loaded by TMA into the output's staging tile during the k-loop
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, {{.*}}; the epilogue's tile of a second matrix loaded by TMA into the output's staging tile during the k-loop
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}

// RMSNorm, g folded: a descriptor for x besides dY, W and dx (the residual's parameter of
// the template); the loader's TMA of x into the staging tile, no pointer load of it.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-SAME: !tt.tensordesc<tensor<128x256xbf16{{.*}}: !tt.tensordesc<tensor<128x256xbf16
// CHECK: ttg.warp_specialize
// CHECK-NOT: tt.load %{{.+}} : tensor<128x256x!tt.ptr<bf16>
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0

module {
  tt.func public @rowdot_rms_folded(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %S1: !tt.ptr<f32>, %S2: !tt.ptr<f32>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %x = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %cst = arith.constant dense<2048> : tensor<1x256xi32>
    %cst_0 = arith.constant dense<2048> : tensor<256xi32>
    %du = arith.constant 64 : i32
    %du_1 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %du_2 = arith.constant 0 : i32
    %du_3 = arith.constant 1 : i32
    %du_4 = arith.constant 63 : i32
    %dx = arith.constant dense<2.048000e+03> : tensor<128xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %offs_m = arith.muli %pid_m, %c128_i32 : i32
    %offs_m_6 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_9 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_10 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_11 = arith.addi %offs_n_10, %offs_n_9 : tensor<256xi32>
    %mmask = tt.splat %M : i32 -> tensor<128xi32>
    %mmask_12 = arith.cmpi slt, %offs_m_8, %mmask : tensor<128xi32>
    %nmask = arith.cmpi slt, %offs_n_11, %cst_0 : tensor<256xi32>
    %rows = arith.remsi %offs_m_8, %mmask : tensor<128xi32>
    %cols = arith.remsi %offs_n_11, %cst_0 : tensor<256xi32>
    %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %du_13 = arith.addi %R, %du_4 : i32
    %du_14 = arith.divsi %du_13, %du : i32
    %acc = scf.for %r = %du_2 to %du_14 step %du_3 iter_args(%acc_49 = %du_1) -> (tensor<128x256xf32>)  : i32 {
      %rr = arith.muli %r, %du : i32
      %rr_50 = tt.splat %rr : i32 -> tensor<64xi32>
      %rr_51 = arith.addi %rr_50, %offs_r : tensor<64xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_ptr_52 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
      %a_ptr_53 = arith.muli %a_ptr, %a_ptr_52 : tensor<128x1xi32>
      %a_ptr_54 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_ptr_55 = tt.addptr %a_ptr_54, %a_ptr_53 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_ptr_56 = tt.expand_dims %rr_51 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_ptr_57 = tt.broadcast %a_ptr_55 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_ptr_58 = tt.broadcast %a_ptr_56 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_ptr_59 = tt.addptr %a_ptr_57, %a_ptr_58 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %b_ptr = tt.expand_dims %rr_51 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_ptr_60 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
      %b_ptr_61 = arith.muli %b_ptr, %b_ptr_60 : tensor<64x1xi32>
      %b_ptr_62 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %b_ptr_63 = tt.addptr %b_ptr_62, %b_ptr_61 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %b_ptr_64 = tt.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_ptr_65 = tt.broadcast %b_ptr_63 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_ptr_66 = tt.broadcast %b_ptr_64 : tensor<1x256xi32> -> tensor<64x256xi32>
      %b_ptr_67 = tt.addptr %b_ptr_65, %b_ptr_66 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %a = tt.load %a_ptr_59 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.load %b_ptr_67 : tensor<64x256x!tt.ptr<bf16>>
      %acc_68 = tt.dot %a, %b, %acc_49, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_68 : tensor<128x256xf32>
    }
    %acc_15 = tt.expand_dims %mmask_12 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
    %acc_16 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<256xi1> -> tensor<1x256xi1>
    %acc_17 = tt.broadcast %acc_15 : tensor<128x1xi1> -> tensor<128x256xi1>
    %acc_18 = tt.broadcast %acc_16 : tensor<1x256xi1> -> tensor<128x256xi1>
    %acc_19 = arith.andi %acc_17, %acc_18 : tensor<128x256xi1>
    %acc_20 = arith.select %acc_19, %acc, %du_1 : tensor<128x256xi1>, tensor<128x256xf32>
    %msk = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %msk_21 = tt.splat %M : i32 -> tensor<128x1xi32>
    %msk_22 = arith.cmpi slt, %msk, %msk_21 : tensor<128x1xi32>
    %msk_23 = tt.expand_dims %offs_n_11 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %msk_24 = arith.cmpi slt, %msk_23, %cst : tensor<1x256xi32>
    %msk_25 = tt.broadcast %msk_22 : tensor<128x1xi1> -> tensor<128x256xi1>
    %msk_26 = tt.broadcast %msk_24 : tensor<1x256xi1> -> tensor<128x256xi1>
    %msk_27 = arith.andi %msk_25, %msk_26 : tensor<128x256xi1>
    %x_28 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_29 = arith.muli %msk, %x_28 : tensor<128x1xi32>
    %x_30 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %x_31 = tt.addptr %x_30, %x_29 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %x_32 = tt.broadcast %x_31 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %x_33 = tt.broadcast %msk_23 : tensor<1x256xi32> -> tensor<128x256xi32>
    %x_34 = tt.addptr %x_32, %x_33 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %x_35 = tt.load %x_34, %msk_27, %x : tensor<128x256x!tt.ptr<bf16>>
    %x_36 = arith.extf %x_35 : tensor<128x256xbf16> to tensor<128x256xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_37 = tt.addptr %rstd, %offs_m_8 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_38 = tt.load %rstd_37, %mmask_12, %cst_5 : tensor<128x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_38 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %xhat_39 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x256xf32>
    %xhat_40 = arith.mulf %x_36, %xhat_39 : tensor<128x256xf32>
    %s1 = tt.splat %S1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %s1_41 = tt.addptr %s1, %offs_m_8 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %s1_42 = tt.load %s1_41, %mmask_12, %cst_5 : tensor<128x!tt.ptr<f32>>
    %dx_43 = arith.divf %s1_42, %dx : tensor<128xf32>
    %dx_44 = tt.expand_dims %dx_43 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_45 = tt.broadcast %dx_44 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_46 = arith.mulf %xhat_40, %dx_45 : tensor<128x256xf32>
    %dx_47 = arith.subf %acc_20, %dx_46 : tensor<128x256xf32>
    %dx_48 = arith.mulf %dx_47, %xhat_39 : tensor<128x256xf32>
    %0 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
    %1 = arith.muli %msk, %0 : tensor<128x1xi32>
    %2 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_33 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %6 = arith.truncf %dx_48 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %5, %6, %msk_27 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// LayerNorm with g in the epilogue: the same staging of x.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK-NOT: tt.load %{{.+}} : tensor<128x256x!tt.ptr<bf16>
// CHECK: partition0

module {
  tt.func public @rowdot_ln_g(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %S1: !tt.ptr<f32>, %S2: !tt.ptr<f32>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %v = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %x = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %cst = arith.constant dense<2048> : tensor<1x256xi32>
    %cst_0 = arith.constant dense<2048> : tensor<256xi32>
    %du = arith.constant 64 : i32
    %du_1 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %du_2 = arith.constant 0 : i32
    %du_3 = arith.constant 1 : i32
    %du_4 = arith.constant 63 : i32
    %cst_5 = arith.constant dense<2.048000e+03> : tensor<128xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %offs_m = arith.muli %pid_m, %c128_i32 : i32
    %offs_m_7 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_8 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_10 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_11 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_12 = arith.addi %offs_n_11, %offs_n_10 : tensor<256xi32>
    %mmask = tt.splat %M : i32 -> tensor<128xi32>
    %mmask_13 = arith.cmpi slt, %offs_m_9, %mmask : tensor<128xi32>
    %nmask = arith.cmpi slt, %offs_n_12, %cst_0 : tensor<256xi32>
    %rows = arith.remsi %offs_m_9, %mmask : tensor<128xi32>
    %cols = arith.remsi %offs_n_12, %cst_0 : tensor<256xi32>
    %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %du_14 = arith.addi %R, %du_4 : i32
    %du_15 = arith.divsi %du_14, %du : i32
    %acc = scf.for %r = %du_2 to %du_15 step %du_3 iter_args(%acc_67 = %du_1) -> (tensor<128x256xf32>)  : i32 {
      %rr = arith.muli %r, %du : i32
      %rr_68 = tt.splat %rr : i32 -> tensor<64xi32>
      %rr_69 = arith.addi %rr_68, %offs_r : tensor<64xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_ptr_70 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
      %a_ptr_71 = arith.muli %a_ptr, %a_ptr_70 : tensor<128x1xi32>
      %a_ptr_72 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_ptr_73 = tt.addptr %a_ptr_72, %a_ptr_71 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_ptr_74 = tt.expand_dims %rr_69 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_ptr_75 = tt.broadcast %a_ptr_73 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_ptr_76 = tt.broadcast %a_ptr_74 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_ptr_77 = tt.addptr %a_ptr_75, %a_ptr_76 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %b_ptr = tt.expand_dims %rr_69 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_ptr_78 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
      %b_ptr_79 = arith.muli %b_ptr, %b_ptr_78 : tensor<64x1xi32>
      %b_ptr_80 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %b_ptr_81 = tt.addptr %b_ptr_80, %b_ptr_79 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %b_ptr_82 = tt.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_ptr_83 = tt.broadcast %b_ptr_81 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_ptr_84 = tt.broadcast %b_ptr_82 : tensor<1x256xi32> -> tensor<64x256xi32>
      %b_ptr_85 = tt.addptr %b_ptr_83, %b_ptr_84 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %a = tt.load %a_ptr_77 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.load %b_ptr_85 : tensor<64x256x!tt.ptr<bf16>>
      %acc_86 = tt.dot %a, %b, %acc_67, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_86 : tensor<128x256xf32>
    }
    %acc_16 = tt.expand_dims %mmask_13 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
    %acc_17 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<256xi1> -> tensor<1x256xi1>
    %acc_18 = tt.broadcast %acc_16 : tensor<128x1xi1> -> tensor<128x256xi1>
    %acc_19 = tt.broadcast %acc_17 : tensor<1x256xi1> -> tensor<128x256xi1>
    %acc_20 = arith.andi %acc_18, %acc_19 : tensor<128x256xi1>
    %acc_21 = arith.select %acc_20, %acc, %du_1 : tensor<128x256xi1>, tensor<128x256xf32>
    %msk = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %msk_22 = tt.splat %M : i32 -> tensor<128x1xi32>
    %msk_23 = arith.cmpi slt, %msk, %msk_22 : tensor<128x1xi32>
    %msk_24 = tt.expand_dims %offs_n_12 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %msk_25 = arith.cmpi slt, %msk_24, %cst : tensor<1x256xi32>
    %msk_26 = tt.broadcast %msk_23 : tensor<128x1xi1> -> tensor<128x256xi1>
    %msk_27 = tt.broadcast %msk_25 : tensor<1x256xi1> -> tensor<128x256xi1>
    %msk_28 = arith.andi %msk_26, %msk_27 : tensor<128x256xi1>
    %x_29 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_30 = arith.muli %msk, %x_29 : tensor<128x1xi32>
    %x_31 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %x_32 = tt.addptr %x_31, %x_30 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %x_33 = tt.broadcast %x_32 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %x_34 = tt.broadcast %msk_24 : tensor<1x256xi32> -> tensor<128x256xi32>
    %x_35 = tt.addptr %x_33, %x_34 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %x_36 = tt.load %x_35, %msk_28, %x : tensor<128x256x!tt.ptr<bf16>>
    %x_37 = arith.extf %x_36 : tensor<128x256xbf16> to tensor<128x256xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_38 = tt.addptr %rstd, %offs_m_9 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_39 = tt.load %rstd_38, %mmask_13, %cst_6 : tensor<128x!tt.ptr<f32>>
    %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %mean_40 = tt.addptr %mean, %offs_m_9 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %mean_41 = tt.load %mean_40, %mmask_13, %cst_6 : tensor<128x!tt.ptr<f32>>
    %x_42 = tt.expand_dims %mean_41 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %x_43 = tt.broadcast %x_42 : tensor<128x1xf32> -> tensor<128x256xf32>
    %x_44 = arith.subf %x_37, %x_43 : tensor<128x256xf32>
    %xhat = tt.expand_dims %rstd_39 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %xhat_45 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x256xf32>
    %xhat_46 = arith.mulf %x_44, %xhat_45 : tensor<128x256xf32>
    %v_47 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
    %v_48 = tt.addptr %v_47, %offs_n_12 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
    %v_49 = tt.load %v_48, %nmask, %v : tensor<256x!tt.ptr<bf16>>
    %v_50 = arith.extf %v_49 : tensor<256xbf16> to tensor<256xf32>
    %s1 = tt.splat %S1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %s1_51 = tt.addptr %s1, %offs_m_9 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %s1_52 = tt.load %s1_51, %mmask_13, %cst_6 : tensor<128x!tt.ptr<f32>>
    %dx = tt.expand_dims %v_50 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
    %dx_53 = tt.broadcast %dx : tensor<1x256xf32> -> tensor<128x256xf32>
    %dx_54 = arith.mulf %acc_21, %dx_53 : tensor<128x256xf32>
    %dx_55 = arith.divf %s1_52, %cst_5 : tensor<128xf32>
    %dx_56 = tt.expand_dims %dx_55 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_57 = tt.broadcast %dx_56 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_58 = arith.mulf %xhat_46, %dx_57 : tensor<128x256xf32>
    %dx_59 = arith.subf %dx_54, %dx_58 : tensor<128x256xf32>
    %s2 = tt.splat %S2 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %s2_60 = tt.addptr %s2, %offs_m_9 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %s2_61 = tt.load %s2_60, %mmask_13, %cst_6 : tensor<128x!tt.ptr<f32>>
    %dx_62 = arith.divf %s2_61, %cst_5 : tensor<128xf32>
    %dx_63 = tt.expand_dims %dx_62 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_64 = tt.broadcast %dx_63 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_65 = arith.subf %dx_59, %dx_64 : tensor<128x256xf32>
    %dx_66 = arith.mulf %dx_65, %xhat_45 : tensor<128x256xf32>
    %0 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
    %1 = arith.muli %msk, %0 : tensor<128x1xi32>
    %2 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_34 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %6 = arith.truncf %dx_66 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %5, %6, %msk_28 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// Near miss: x in fp32, the output bf16 (the tile is staged in the output's buffer): x stays
// a pointer load of the epilogue (and the remark says no staging).
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: tt.load %{{.+}} : tensor<128x256x!tt.ptr<f32>

module {
  tt.func public @rowdot_rms_fp32_x(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %S1: !tt.ptr<f32>, %S2: !tt.ptr<f32>, %X: !tt.ptr<f32>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<2048> : tensor<1x256xi32>
    %cst_0 = arith.constant dense<2048> : tensor<256xi32>
    %du = arith.constant 64 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %du_2 = arith.constant 0 : i32
    %du_3 = arith.constant 1 : i32
    %du_4 = arith.constant 63 : i32
    %dx = arith.constant dense<2.048000e+03> : tensor<128xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %offs_m = arith.muli %pid_m, %c128_i32 : i32
    %offs_m_6 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_9 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_10 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_11 = arith.addi %offs_n_10, %offs_n_9 : tensor<256xi32>
    %mmask = tt.splat %M : i32 -> tensor<128xi32>
    %mmask_12 = arith.cmpi slt, %offs_m_8, %mmask : tensor<128xi32>
    %nmask = arith.cmpi slt, %offs_n_11, %cst_0 : tensor<256xi32>
    %rows = arith.remsi %offs_m_8, %mmask : tensor<128xi32>
    %cols = arith.remsi %offs_n_11, %cst_0 : tensor<256xi32>
    %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %du_13 = arith.addi %R, %du_4 : i32
    %du_14 = arith.divsi %du_13, %du : i32
    %acc = scf.for %r = %du_2 to %du_14 step %du_3 iter_args(%acc_47 = %cst_1) -> (tensor<128x256xf32>)  : i32 {
      %rr = arith.muli %r, %du : i32
      %rr_48 = tt.splat %rr : i32 -> tensor<64xi32>
      %rr_49 = arith.addi %rr_48, %offs_r : tensor<64xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_ptr_50 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
      %a_ptr_51 = arith.muli %a_ptr, %a_ptr_50 : tensor<128x1xi32>
      %a_ptr_52 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_ptr_53 = tt.addptr %a_ptr_52, %a_ptr_51 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_ptr_54 = tt.expand_dims %rr_49 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_ptr_55 = tt.broadcast %a_ptr_53 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_ptr_56 = tt.broadcast %a_ptr_54 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_ptr_57 = tt.addptr %a_ptr_55, %a_ptr_56 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %b_ptr = tt.expand_dims %rr_49 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_ptr_58 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
      %b_ptr_59 = arith.muli %b_ptr, %b_ptr_58 : tensor<64x1xi32>
      %b_ptr_60 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %b_ptr_61 = tt.addptr %b_ptr_60, %b_ptr_59 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %b_ptr_62 = tt.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_ptr_63 = tt.broadcast %b_ptr_61 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_ptr_64 = tt.broadcast %b_ptr_62 : tensor<1x256xi32> -> tensor<64x256xi32>
      %b_ptr_65 = tt.addptr %b_ptr_63, %b_ptr_64 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %a = tt.load %a_ptr_57 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.load %b_ptr_65 : tensor<64x256x!tt.ptr<bf16>>
      %acc_66 = tt.dot %a, %b, %acc_47, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_66 : tensor<128x256xf32>
    }
    %acc_15 = tt.expand_dims %mmask_12 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
    %acc_16 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<256xi1> -> tensor<1x256xi1>
    %acc_17 = tt.broadcast %acc_15 : tensor<128x1xi1> -> tensor<128x256xi1>
    %acc_18 = tt.broadcast %acc_16 : tensor<1x256xi1> -> tensor<128x256xi1>
    %acc_19 = arith.andi %acc_17, %acc_18 : tensor<128x256xi1>
    %acc_20 = arith.select %acc_19, %acc, %cst_1 : tensor<128x256xi1>, tensor<128x256xf32>
    %msk = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %msk_21 = tt.splat %M : i32 -> tensor<128x1xi32>
    %msk_22 = arith.cmpi slt, %msk, %msk_21 : tensor<128x1xi32>
    %msk_23 = tt.expand_dims %offs_n_11 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %msk_24 = arith.cmpi slt, %msk_23, %cst : tensor<1x256xi32>
    %msk_25 = tt.broadcast %msk_22 : tensor<128x1xi1> -> tensor<128x256xi1>
    %msk_26 = tt.broadcast %msk_24 : tensor<1x256xi1> -> tensor<128x256xi1>
    %msk_27 = arith.andi %msk_25, %msk_26 : tensor<128x256xi1>
    %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_28 = arith.muli %msk, %x : tensor<128x1xi32>
    %x_29 = tt.splat %X : !tt.ptr<f32> -> tensor<128x1x!tt.ptr<f32>>
    %x_30 = tt.addptr %x_29, %x_28 : tensor<128x1x!tt.ptr<f32>>, tensor<128x1xi32>
    %x_31 = tt.broadcast %x_30 : tensor<128x1x!tt.ptr<f32>> -> tensor<128x256x!tt.ptr<f32>>
    %x_32 = tt.broadcast %msk_23 : tensor<1x256xi32> -> tensor<128x256xi32>
    %x_33 = tt.addptr %x_31, %x_32 : tensor<128x256x!tt.ptr<f32>>, tensor<128x256xi32>
    %x_34 = tt.load %x_33, %msk_27, %cst_1 : tensor<128x256x!tt.ptr<f32>>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_35 = tt.addptr %rstd, %offs_m_8 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_36 = tt.load %rstd_35, %mmask_12, %cst_5 : tensor<128x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_36 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %xhat_37 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x256xf32>
    %xhat_38 = arith.mulf %x_34, %xhat_37 : tensor<128x256xf32>
    %s1 = tt.splat %S1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %s1_39 = tt.addptr %s1, %offs_m_8 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %s1_40 = tt.load %s1_39, %mmask_12, %cst_5 : tensor<128x!tt.ptr<f32>>
    %dx_41 = arith.divf %s1_40, %dx : tensor<128xf32>
    %dx_42 = tt.expand_dims %dx_41 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_43 = tt.broadcast %dx_42 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_44 = arith.mulf %xhat_38, %dx_43 : tensor<128x256xf32>
    %dx_45 = arith.subf %acc_20, %dx_44 : tensor<128x256xf32>
    %dx_46 = arith.mulf %dx_45, %xhat_37 : tensor<128x256xf32>
    %0 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
    %1 = arith.muli %msk, %0 : tensor<128x1xi32>
    %2 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_32 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %6 = arith.truncf %dx_46 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %5, %6, %msk_27 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}
