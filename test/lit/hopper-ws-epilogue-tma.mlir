// hopper-ws{epilogue-tma=true} on the rowdot plan's dX kernel (kernels/backward.py, as
// ops.training.rowdot_backward launches it: g folded into W, 128 x 256 tiles): the epilogue's
// [BM, BN] tile of x, at the output tile's rows and columns, comes by TMA into the output's
// staging tile during the k-loop (a fourth descriptor; the loader issues it), instead of a
// pointer load in the hook. Without the option, and for a tile TMA cannot stage (another element
// type than the output's), x stays a pointer load. With staging-late the consumer hands the
// staging tile back inside the next tile's k-loop; where nothing is staged a note says why not.
// Inputs: TTIR from test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{epilogue-tma=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=DEFAULT
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{epilogue-tma=true,staging-late=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=LATE

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [K, N]; no statistics; A straight from shared memory; epilogue translated from the IR ({{[0-9]+}} expression nodes in the hooks); the epilogue's tile of a second matrix loaded by TMA into the output's staging tile during the k-loop
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, {{.*}}; the epilogue's tile of a second matrix loaded by TMA into the output's staging tile during the k-loop
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// LATE: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 staging-late, persistent{{.*}}staging tile during the k-loop{{$}}
// LATE: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 staging-late, persistent{{.*}}staging tile during the k-loop{{$}}
// LATE: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent{{.*}}staging-late not applied: no tile of a second matrix comes by TMA into the staging tile

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
    %cst = arith.constant dense<2048> : tensor<256xi32>
    %du = arith.constant 64 : i32
    %du_0 = arith.constant 0 : i32
    %du_1 = arith.constant 1 : i32
    %acc = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %du_2 = arith.constant 63 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %b = arith.constant dense<2.048000e+03> : tensor<128xf32>
    %x = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %msk = arith.constant dense<2048> : tensor<1x256xi32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %offs_m = arith.muli %pid_m, %c128_i32 : i32
    %offs_m_4 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_5 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_6 = arith.addi %offs_m_5, %offs_m_4 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_7 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_8 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_9 = arith.addi %offs_n_8, %offs_n_7 : tensor<256xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_10 = arith.remsi %offs_m_6, %rows : tensor<128xi32>
    %cols = arith.remsi %offs_n_9, %cst : tensor<256xi32>
    %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %du_11 = arith.addi %R, %du_2 : i32
    %du_12 = arith.divsi %du_11, %du : i32
    %acc_13 = scf.for %r = %du_0 to %du_12 step %du_1 iter_args(%acc_44 = %acc) -> (tensor<128x256xf32>)  : i32 {
      %rr = arith.muli %r, %du : i32
      %rr_45 = tt.splat %rr : i32 -> tensor<64xi32>
      %rr_46 = arith.addi %rr_45, %offs_r : tensor<64xi32>
      %a_ptr = tt.expand_dims %rows_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_ptr_47 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
      %a_ptr_48 = arith.muli %a_ptr, %a_ptr_47 : tensor<128x1xi32>
      %a_ptr_49 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_ptr_50 = tt.addptr %a_ptr_49, %a_ptr_48 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_ptr_51 = tt.expand_dims %rr_46 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_ptr_52 = tt.broadcast %a_ptr_50 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_ptr_53 = tt.broadcast %a_ptr_51 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_ptr_54 = tt.addptr %a_ptr_52, %a_ptr_53 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %b_ptr = tt.expand_dims %rr_46 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_ptr_55 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
      %b_ptr_56 = arith.muli %b_ptr, %b_ptr_55 : tensor<64x1xi32>
      %b_ptr_57 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %b_ptr_58 = tt.addptr %b_ptr_57, %b_ptr_56 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %b_ptr_59 = tt.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_ptr_60 = tt.broadcast %b_ptr_58 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_ptr_61 = tt.broadcast %b_ptr_59 : tensor<1x256xi32> -> tensor<64x256xi32>
      %b_ptr_62 = tt.addptr %b_ptr_60, %b_ptr_61 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %a = tt.load %a_ptr_54 : tensor<128x64x!tt.ptr<bf16>>
      %b_63 = tt.load %b_ptr_62 : tensor<64x256x!tt.ptr<bf16>>
      %acc_64 = tt.dot %a, %b_63, %acc_44, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_64 : tensor<128x256xf32>
    }
    %msk_14 = tt.expand_dims %offs_m_6 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %msk_15 = tt.splat %M : i32 -> tensor<128x1xi32>
    %msk_16 = arith.cmpi slt, %msk_14, %msk_15 : tensor<128x1xi32>
    %msk_17 = tt.expand_dims %offs_n_9 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %msk_18 = arith.cmpi slt, %msk_17, %msk : tensor<1x256xi32>
    %msk_19 = tt.broadcast %msk_16 : tensor<128x1xi1> -> tensor<128x256xi1>
    %msk_20 = tt.broadcast %msk_18 : tensor<1x256xi1> -> tensor<128x256xi1>
    %msk_21 = arith.andi %msk_19, %msk_20 : tensor<128x256xi1>
    %rmask = arith.cmpi slt, %offs_m_6, %rows : tensor<128xi32>
    %x_22 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_23 = arith.muli %msk_14, %x_22 : tensor<128x1xi32>
    %x_24 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %x_25 = tt.addptr %x_24, %x_23 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %x_26 = tt.broadcast %x_25 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %x_27 = tt.broadcast %msk_17 : tensor<1x256xi32> -> tensor<128x256xi32>
    %x_28 = tt.addptr %x_26, %x_27 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %x_29 = tt.load %x_28, %msk_21, %x : tensor<128x256x!tt.ptr<bf16>>
    %x_30 = arith.extf %x_29 : tensor<128x256xbf16> to tensor<128x256xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_31 = tt.addptr %rstd, %offs_m_6 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_32 = tt.load %rstd_31, %rmask, %cst_3 : tensor<128x!tt.ptr<f32>>
    %s1 = tt.splat %S1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %s1_33 = tt.addptr %s1, %offs_m_6 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %s1_34 = tt.load %s1_33, %rmask, %cst_3 : tensor<128x!tt.ptr<f32>>
    %b_35 = arith.mulf %rstd_32, %rstd_32 : tensor<128xf32>
    %b_36 = arith.subf %cst_3, %b_35 : tensor<128xf32>
    %b_37 = arith.divf %s1_34, %b : tensor<128xf32>
    %b_38 = arith.mulf %b_36, %b_37 : tensor<128xf32>
    %dx = tt.expand_dims %b_38 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_39 = tt.expand_dims %rstd_32 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_40 = tt.broadcast %dx_39 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_41 = arith.mulf %acc_13, %dx_40 : tensor<128x256xf32>
    %dx_42 = tt.broadcast %dx : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_43 = math.fma %x_30, %dx_42, %dx_41 : tensor<128x256xf32>
    %0 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
    %1 = arith.muli %msk_14, %0 : tensor<128x1xi32>
    %2 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_27 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %6 = arith.truncf %dx_43 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %5, %6, %msk_21 : tensor<128x256x!tt.ptr<bf16>>
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
    %cst = arith.constant dense<2048> : tensor<256xi32>
    %du = arith.constant 64 : i32
    %du_0 = arith.constant 0 : i32
    %du_1 = arith.constant 1 : i32
    %acc = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %du_2 = arith.constant 63 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_4 = arith.constant dense<2.048000e+03> : tensor<128xf32>
    %x = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %msk = arith.constant dense<2048> : tensor<1x256xi32>
    %v = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %offs_m = arith.muli %pid_m, %c128_i32 : i32
    %offs_m_5 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_6 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_8 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_9 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_10 = arith.addi %offs_n_9, %offs_n_8 : tensor<256xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_11 = arith.remsi %offs_m_7, %rows : tensor<128xi32>
    %cols = arith.remsi %offs_n_10, %cst : tensor<256xi32>
    %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %du_12 = arith.addi %R, %du_2 : i32
    %du_13 = arith.divsi %du_12, %du : i32
    %acc_14 = scf.for %r = %du_0 to %du_13 step %du_1 iter_args(%acc_65 = %acc) -> (tensor<128x256xf32>)  : i32 {
      %rr = arith.muli %r, %du : i32
      %rr_66 = tt.splat %rr : i32 -> tensor<64xi32>
      %rr_67 = arith.addi %rr_66, %offs_r : tensor<64xi32>
      %a_ptr = tt.expand_dims %rows_11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_ptr_68 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
      %a_ptr_69 = arith.muli %a_ptr, %a_ptr_68 : tensor<128x1xi32>
      %a_ptr_70 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_ptr_71 = tt.addptr %a_ptr_70, %a_ptr_69 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_ptr_72 = tt.expand_dims %rr_67 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_ptr_73 = tt.broadcast %a_ptr_71 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_ptr_74 = tt.broadcast %a_ptr_72 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_ptr_75 = tt.addptr %a_ptr_73, %a_ptr_74 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %b_ptr = tt.expand_dims %rr_67 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_ptr_76 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
      %b_ptr_77 = arith.muli %b_ptr, %b_ptr_76 : tensor<64x1xi32>
      %b_ptr_78 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %b_ptr_79 = tt.addptr %b_ptr_78, %b_ptr_77 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %b_ptr_80 = tt.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_ptr_81 = tt.broadcast %b_ptr_79 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_ptr_82 = tt.broadcast %b_ptr_80 : tensor<1x256xi32> -> tensor<64x256xi32>
      %b_ptr_83 = tt.addptr %b_ptr_81, %b_ptr_82 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %a = tt.load %a_ptr_75 : tensor<128x64x!tt.ptr<bf16>>
      %b_84 = tt.load %b_ptr_83 : tensor<64x256x!tt.ptr<bf16>>
      %acc_85 = tt.dot %a, %b_84, %acc_65, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_85 : tensor<128x256xf32>
    }
    %msk_15 = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %msk_16 = tt.splat %M : i32 -> tensor<128x1xi32>
    %msk_17 = arith.cmpi slt, %msk_15, %msk_16 : tensor<128x1xi32>
    %msk_18 = tt.expand_dims %offs_n_10 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %msk_19 = arith.cmpi slt, %msk_18, %msk : tensor<1x256xi32>
    %msk_20 = tt.broadcast %msk_17 : tensor<128x1xi1> -> tensor<128x256xi1>
    %msk_21 = tt.broadcast %msk_19 : tensor<1x256xi1> -> tensor<128x256xi1>
    %msk_22 = arith.andi %msk_20, %msk_21 : tensor<128x256xi1>
    %rmask = arith.cmpi slt, %offs_m_7, %rows : tensor<128xi32>
    %x_23 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_24 = arith.muli %msk_15, %x_23 : tensor<128x1xi32>
    %x_25 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %x_26 = tt.addptr %x_25, %x_24 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %x_27 = tt.broadcast %x_26 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %x_28 = tt.broadcast %msk_18 : tensor<1x256xi32> -> tensor<128x256xi32>
    %x_29 = tt.addptr %x_27, %x_28 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %x_30 = tt.load %x_29, %msk_22, %x : tensor<128x256x!tt.ptr<bf16>>
    %x_31 = arith.extf %x_30 : tensor<128x256xbf16> to tensor<128x256xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_32 = tt.addptr %rstd, %offs_m_7 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_33 = tt.load %rstd_32, %rmask, %cst_3 : tensor<128x!tt.ptr<f32>>
    %s1 = tt.splat %S1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %s1_34 = tt.addptr %s1, %offs_m_7 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %s1_35 = tt.load %s1_34, %rmask, %cst_3 : tensor<128x!tt.ptr<f32>>
    %x_36 = tt.splat %MEAN : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %x_37 = tt.addptr %x_36, %offs_m_7 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %x_38 = tt.load %x_37, %rmask, %cst_3 : tensor<128x!tt.ptr<f32>>
    %x_39 = tt.expand_dims %x_38 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %x_40 = tt.broadcast %x_39 : tensor<128x1xf32> -> tensor<128x256xf32>
    %x_41 = arith.subf %x_31, %x_40 : tensor<128x256xf32>
    %v_42 = arith.cmpi slt, %offs_n_10, %cst : tensor<256xi32>
    %v_43 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
    %v_44 = tt.addptr %v_43, %offs_n_10 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
    %v_45 = tt.load %v_44, %v_42, %v : tensor<256x!tt.ptr<bf16>>
    %v_46 = arith.extf %v_45 : tensor<256xbf16> to tensor<256xf32>
    %du_47 = tt.expand_dims %v_46 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
    %du_48 = tt.broadcast %du_47 : tensor<1x256xf32> -> tensor<128x256xf32>
    %du_49 = arith.mulf %acc_14, %du_48 : tensor<128x256xf32>
    %b = arith.mulf %rstd_33, %rstd_33 : tensor<128xf32>
    %b_50 = arith.subf %cst_3, %b : tensor<128xf32>
    %b_51 = arith.divf %s1_35, %cst_4 : tensor<128xf32>
    %b_52 = arith.mulf %b_50, %b_51 : tensor<128xf32>
    %c = arith.subf %cst_3, %rstd_33 : tensor<128xf32>
    %c_53 = tt.splat %S2 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %c_54 = tt.addptr %c_53, %offs_m_7 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %c_55 = tt.load %c_54, %rmask, %cst_3 : tensor<128x!tt.ptr<f32>>
    %c_56 = arith.divf %c_55, %cst_4 : tensor<128xf32>
    %c_57 = arith.mulf %c, %c_56 : tensor<128xf32>
    %dx = tt.expand_dims %b_52 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_58 = tt.expand_dims %rstd_33 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_59 = tt.expand_dims %c_57 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_60 = tt.broadcast %dx_58 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_61 = tt.broadcast %dx_59 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_62 = math.fma %du_49, %dx_60, %dx_61 : tensor<128x256xf32>
    %dx_63 = tt.broadcast %dx : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_64 = math.fma %x_41, %dx_63, %dx_62 : tensor<128x256xf32>
    %0 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
    %1 = arith.muli %msk_15, %0 : tensor<128x1xi32>
    %2 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_28 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %6 = arith.truncf %dx_64 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %5, %6, %msk_22 : tensor<128x256x!tt.ptr<bf16>>
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
    %cst = arith.constant dense<2048> : tensor<256xi32>
    %du = arith.constant 64 : i32
    %du_0 = arith.constant 0 : i32
    %du_1 = arith.constant 1 : i32
    %du_2 = arith.constant 63 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %b = arith.constant dense<2.048000e+03> : tensor<128xf32>
    %msk = arith.constant dense<2048> : tensor<1x256xi32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %offs_m = arith.muli %pid_m, %c128_i32 : i32
    %offs_m_5 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_6 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_8 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_9 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_10 = arith.addi %offs_n_9, %offs_n_8 : tensor<256xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_11 = arith.remsi %offs_m_7, %rows : tensor<128xi32>
    %cols = arith.remsi %offs_n_10, %cst : tensor<256xi32>
    %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %du_12 = arith.addi %R, %du_2 : i32
    %du_13 = arith.divsi %du_12, %du : i32
    %acc = scf.for %r = %du_0 to %du_13 step %du_1 iter_args(%acc_42 = %cst_3) -> (tensor<128x256xf32>)  : i32 {
      %rr = arith.muli %r, %du : i32
      %rr_43 = tt.splat %rr : i32 -> tensor<64xi32>
      %rr_44 = arith.addi %rr_43, %offs_r : tensor<64xi32>
      %a_ptr = tt.expand_dims %rows_11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_ptr_45 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
      %a_ptr_46 = arith.muli %a_ptr, %a_ptr_45 : tensor<128x1xi32>
      %a_ptr_47 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_ptr_48 = tt.addptr %a_ptr_47, %a_ptr_46 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_ptr_49 = tt.expand_dims %rr_44 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_ptr_50 = tt.broadcast %a_ptr_48 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_ptr_51 = tt.broadcast %a_ptr_49 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_ptr_52 = tt.addptr %a_ptr_50, %a_ptr_51 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %b_ptr = tt.expand_dims %rr_44 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_ptr_53 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
      %b_ptr_54 = arith.muli %b_ptr, %b_ptr_53 : tensor<64x1xi32>
      %b_ptr_55 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %b_ptr_56 = tt.addptr %b_ptr_55, %b_ptr_54 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %b_ptr_57 = tt.expand_dims %cols {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_ptr_58 = tt.broadcast %b_ptr_56 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_ptr_59 = tt.broadcast %b_ptr_57 : tensor<1x256xi32> -> tensor<64x256xi32>
      %b_ptr_60 = tt.addptr %b_ptr_58, %b_ptr_59 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %a = tt.load %a_ptr_52 : tensor<128x64x!tt.ptr<bf16>>
      %b_61 = tt.load %b_ptr_60 : tensor<64x256x!tt.ptr<bf16>>
      %acc_62 = tt.dot %a, %b_61, %acc_42, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_62 : tensor<128x256xf32>
    }
    %msk_14 = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %msk_15 = tt.splat %M : i32 -> tensor<128x1xi32>
    %msk_16 = arith.cmpi slt, %msk_14, %msk_15 : tensor<128x1xi32>
    %msk_17 = tt.expand_dims %offs_n_10 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %msk_18 = arith.cmpi slt, %msk_17, %msk : tensor<1x256xi32>
    %msk_19 = tt.broadcast %msk_16 : tensor<128x1xi1> -> tensor<128x256xi1>
    %msk_20 = tt.broadcast %msk_18 : tensor<1x256xi1> -> tensor<128x256xi1>
    %msk_21 = arith.andi %msk_19, %msk_20 : tensor<128x256xi1>
    %rmask = arith.cmpi slt, %offs_m_7, %rows : tensor<128xi32>
    %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_22 = arith.muli %msk_14, %x : tensor<128x1xi32>
    %x_23 = tt.splat %X : !tt.ptr<f32> -> tensor<128x1x!tt.ptr<f32>>
    %x_24 = tt.addptr %x_23, %x_22 : tensor<128x1x!tt.ptr<f32>>, tensor<128x1xi32>
    %x_25 = tt.broadcast %x_24 : tensor<128x1x!tt.ptr<f32>> -> tensor<128x256x!tt.ptr<f32>>
    %x_26 = tt.broadcast %msk_17 : tensor<1x256xi32> -> tensor<128x256xi32>
    %x_27 = tt.addptr %x_25, %x_26 : tensor<128x256x!tt.ptr<f32>>, tensor<128x256xi32>
    %x_28 = tt.load %x_27, %msk_21, %cst_3 : tensor<128x256x!tt.ptr<f32>>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_29 = tt.addptr %rstd, %offs_m_7 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_30 = tt.load %rstd_29, %rmask, %cst_4 : tensor<128x!tt.ptr<f32>>
    %s1 = tt.splat %S1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %s1_31 = tt.addptr %s1, %offs_m_7 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %s1_32 = tt.load %s1_31, %rmask, %cst_4 : tensor<128x!tt.ptr<f32>>
    %b_33 = arith.mulf %rstd_30, %rstd_30 : tensor<128xf32>
    %b_34 = arith.subf %cst_4, %b_33 : tensor<128xf32>
    %b_35 = arith.divf %s1_32, %b : tensor<128xf32>
    %b_36 = arith.mulf %b_34, %b_35 : tensor<128xf32>
    %dx = tt.expand_dims %b_36 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_37 = tt.expand_dims %rstd_30 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_38 = tt.broadcast %dx_37 : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_39 = arith.mulf %acc, %dx_38 : tensor<128x256xf32>
    %dx_40 = tt.broadcast %dx : tensor<128x1xf32> -> tensor<128x256xf32>
    %dx_41 = math.fma %x_28, %dx_40, %dx_39 : tensor<128x256xf32>
    %0 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
    %1 = arith.muli %msk_14, %0 : tensor<128x1xi32>
    %2 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_26 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %6 = arith.truncf %dx_41 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %5, %6, %msk_21 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}
