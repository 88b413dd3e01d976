// hopper-ws{post-norm=true} on the naive norm-backward kernel (kernels/backward.py) as the
// pre-norm ops' training dX launches it: the dX GEMM, the norm backward's two passes over the row
// (the row sums exchanged between the row's N tiles), and the first pass's side outputs: n (a
// [BM, BN] tile at the output tile's place: a second TMA store) and the dg (dbeta) column
// partials (1-D stores per tile). x, read in both passes, comes by TMA; a residual gradient
// (the regrouped post-norm block's form, with SiLU'), read by the normalizing loop alone, is a
// pointer load in FIN. Positive cases first, then bail-outs. Inputs: TTIR from test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{post-norm=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=DEFAULT

// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(1), persistent, B [K, N]; no statistics; {{.*}}the input tile (read in both passes over the row) loaded by TMA into the output's staging tile during the k-loop; post-norm: the row's 2 N tiles on 2 CTAs of one wave, 1 partial row sum(s) exchanged through global memory (stamped words), the tile held across the exchange in the output's type (as the naive kernel reloads it) and normalized in the epilogue; side outputs of the row's first pass: a second output tile ({{.*}}) stored by TMA through the staging tile before the exchange; 1 column vector store(s) per tile
// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(2), {{.*}}; 2 column vector store(s) per tile
// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(1), {{.*}}post-norm: the row in one N tile (1 row sum(s), no exchange)
// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(2), {{.*}}the input tile (read in both passes over the row) loaded by TMA into the output's staging tile during the k-loop; 1 tile(s) read by the normalizing loop alone (a residual gradient added to dx) loaded with pointers in FIN; {{.*}}side outputs of the row's first pass: 2 column vector store(s) per tile
// REMARK: missed: a side output of the GEMM's loop is read back by the kernel; read side outputs in a later kernel
// REMARK: missed: side outputs of the row's first pass (a norm backward's) are lowered with the input tile read by TMA in both passes; here 3 tiles of other matrices
// DEFAULT: missed: a post-norm whose row spans 2 N tiles (two passes over the row); not lowered by default
// DEFAULT: missed: a post-norm whose row spans 2 N tiles
// DEFAULT: missed: a post-norm whose row spans 1 N tiles
// DEFAULT: missed: a post-norm whose row spans 2 N tiles
// DEFAULT: missed: a side output of the GEMM's loop is read back by the kernel

// RMSNorm dX, a row of 2 N tiles: the template with five descriptors (dY, W, dx, x, n), per
// tile the dg partial stored from registers, n by TMA, the stamped word of the row sum, dx by
// TMA; the loader reads x by TMA next to the ring's tiles.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-3: !tt.tensordesc<tensor<128x128xbf16
// CHECK: ttg.warp_specialize
// CHECK: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: st.relaxed.gpu.global.b64
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0
// CHECK-COUNT-3: ttng.async_tma_copy_global_to_local

module {
  tt.func public @rms_dx_xn_two_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128xbf16>
    %cst_0 = arith.constant dense<256> : tensor<1x128xi32>
    %c64_i32 = arith.constant 64 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %c63_i32 = arith.constant 63 : i32
    %c2_i32 = arith.constant 2 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<2.560000e+02> : tensor<128xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_7 = arith.constant dense<256> : tensor<128xi32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c128_i32 : i32
    %offs_m_8 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_9 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<128xi32>
    %c2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c2_15 = %cst_6) -> (tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_m_8 : tensor<128xi32>
      %mmask = tt.splat %M : i32 -> tensor<128xi32>
      %mmask_18 = arith.cmpi slt, %offs_m_10, %mmask : tensor<128xi32>
      %nmask = arith.cmpi slt, %offs_n_17, %cst_7 : tensor<128xi32>
      %rows = arith.remsi %offs_m_10, %mmask : tensor<128xi32>
      %cols = arith.remsi %offs_n_17, %cst_7 : tensor<128xi32>
      %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %du = arith.addi %R, %c63_i32 : i32
      %du_19 = arith.divsi %du, %c64_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_19 step %c1_i32 iter_args(%acc_54 = %cst_1) -> (tensor<128x128xf32>)  : i32 {
        %rr = arith.muli %r, %c64_i32 : i32
        %rr_55 = tt.splat %rr : i32 -> tensor<64xi32>
        %rr_56 = arith.addi %rr_55, %offs_r : tensor<64xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_57 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
        %a_ptr_58 = arith.muli %a_ptr, %a_ptr_57 : tensor<128x1xi32>
        %a_ptr_59 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_60 = tt.addptr %a_ptr_59, %a_ptr_58 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_61 = tt.expand_dims %rr_56 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_62 = tt.broadcast %a_ptr_60 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_63 = tt.broadcast %a_ptr_61 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_64 = tt.addptr %a_ptr_62, %a_ptr_63 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %rr_56 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_65 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
        %b_ptr_66 = arith.muli %b_ptr, %b_ptr_65 : tensor<64x1xi32>
        %b_ptr_67 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %b_ptr_68 = tt.addptr %b_ptr_67, %b_ptr_66 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %b_ptr_69 = tt.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
        %b_ptr_70 = tt.broadcast %b_ptr_68 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
        %b_ptr_71 = tt.broadcast %b_ptr_69 : tensor<1x128xi32> -> tensor<64x128xi32>
        %b_ptr_72 = tt.addptr %b_ptr_70, %b_ptr_71 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
        %a = tt.splat %R : i32 -> tensor<1x64xi32>
        %a_73 = arith.cmpi slt, %a_ptr_61, %a : tensor<1x64xi32>
        %a_74 = tt.broadcast %a_73 : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_75 = tt.load %a_ptr_64, %a_74, %cst_2 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.splat %R : i32 -> tensor<64x1xi32>
        %b_76 = arith.cmpi slt, %b_ptr, %b : tensor<64x1xi32>
        %b_77 = tt.broadcast %b_76 : tensor<64x1xi1> -> tensor<64x128xi1>
        %b_78 = tt.load %b_ptr_72, %b_77, %cst_3 : tensor<64x128x!tt.ptr<bf16>>
        %acc_79 = tt.dot %a_75, %b_78, %acc_54, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
        scf.yield %acc_79 : tensor<128x128xf32>
      }
      %acc_20 = tt.expand_dims %mmask_18 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %acc_21 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %acc_22 = tt.broadcast %acc_20 : tensor<128x1xi1> -> tensor<128x128xi1>
      %acc_23 = tt.broadcast %acc_21 : tensor<1x128xi1> -> tensor<128x128xi1>
      %acc_24 = arith.andi %acc_22, %acc_23 : tensor<128x128xi1>
      %acc_25 = arith.select %acc_24, %acc, %cst_1 : tensor<128x128xi1>, tensor<128x128xf32>
      %msk = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %msk_26 = tt.splat %M : i32 -> tensor<128x1xi32>
      %msk_27 = arith.cmpi slt, %msk, %msk_26 : tensor<128x1xi32>
      %msk_28 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %msk_29 = arith.cmpi slt, %msk_28, %cst_0 : tensor<1x128xi32>
      %msk_30 = tt.broadcast %msk_27 : tensor<128x1xi1> -> tensor<128x128xi1>
      %msk_31 = tt.broadcast %msk_29 : tensor<1x128xi1> -> tensor<128x128xi1>
      %msk_32 = arith.andi %msk_30, %msk_31 : tensor<128x128xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
      %x_33 = arith.muli %msk, %x : tensor<128x1xi32>
      %x_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %x_33 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_36 = tt.broadcast %x_35 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_37 = tt.broadcast %msk_28 : tensor<1x128xi32> -> tensor<128x128xi32>
      %x_38 = tt.addptr %x_36, %x_37 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_39 = tt.load %x_38, %msk_32, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %x_40 = arith.extf %x_39 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_41 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %rstd_42 = tt.addptr %rstd_41, %offs_m_10 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %rstd_43 = tt.load %rstd_42, %mmask_18, %cst_6 : tensor<128x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_43 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_44 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_45 = arith.mulf %x_40, %xhat_44 : tensor<128x128xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_46 = tt.addptr %v, %offs_n_17 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_47 = tt.load %v_46, %nmask, %cst : tensor<128x!tt.ptr<bf16>>
      %v_48 = arith.extf %v_47 : tensor<128xbf16> to tensor<128xf32>
      %xn = tt.expand_dims %v_48 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %xn_49 = tt.broadcast %xn : tensor<1x128xf32> -> tensor<128x128xf32>
      %xn_50 = arith.mulf %xhat_45, %xn_49 : tensor<128x128xf32>
      %0 = tt.splat %stride_xnm : i32 -> tensor<128x1xi32>
      %1 = arith.muli %msk, %0 : tensor<128x1xi32>
      %2 = tt.splat %XN : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %5 = tt.addptr %4, %x_37 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %6 = arith.truncf %xn_50 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %5, %6, %msk_32 : tensor<128x128x!tt.ptr<bf16>>
      %7 = arith.muli %pid, %c256_i32 : i32
      %8 = tt.addptr %DGP, %7 : !tt.ptr<f32>, i32
      %9 = tt.splat %8 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %10 = tt.addptr %9, %offs_n_17 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %11 = arith.mulf %acc_25, %xhat_45 : tensor<128x128xf32>
      %12 = "tt.reduce"(%11) <{axis = 0 : i32}> ({
      ^bb0(%arg22: f32, %arg23: f32):
        %20 = arith.addf %arg22, %arg23 : f32
        tt.reduce.return %20 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      tt.store %10, %12, %nmask : tensor<128x!tt.ptr<f32>>
      %dn = arith.mulf %acc_25, %xn_49 : tensor<128x128xf32>
      %c2_51 = arith.mulf %dn, %xhat_45 : tensor<128x128xf32>
      %c2_52 = "tt.reduce"(%c2_51) <{axis = 1 : i32}> ({
      ^bb0(%c2_54: f32, %c2_55: f32):
        %c2_56 = arith.addf %c2_54, %c2_55 : f32
        tt.reduce.return %c2_56 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %c2_53 = arith.addf %c2_15, %c2_52 : tensor<128xf32>
      %13 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
      %14 = arith.muli %msk, %13 : tensor<128x1xi32>
      %15 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %16 = tt.addptr %15, %14 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %17 = tt.broadcast %16 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %18 = tt.addptr %17, %x_37 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %19 = arith.truncf %acc_25 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %18, %19, %msk_32 : tensor<128x128x!tt.ptr<bf16>>
      scf.yield %c2_53 : tensor<128xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<128xi32>
    %rstd_11 = arith.cmpi slt, %offs_m_10, %rstd : tensor<128xi32>
    %rstd_12 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_13 = tt.addptr %rstd_12, %offs_m_10 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_14 = tt.load %rstd_13, %rstd_11, %cst_6 : tensor<128x!tt.ptr<f32>>
    %m2 = arith.divf %c2, %cst_5 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_15 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_16 = arith.addi %offs_n_15, %offs_m_8 : tensor<128xi32>
      %du = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %du_17 = tt.splat %M : i32 -> tensor<128x1xi32>
      %du_18 = arith.cmpi slt, %du, %du_17 : tensor<128x1xi32>
      %du_19 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %du_20 = arith.cmpi slt, %du_19, %cst_0 : tensor<1x128xi32>
      %du_21 = tt.broadcast %du_18 : tensor<128x1xi1> -> tensor<128x128xi1>
      %du_22 = tt.broadcast %du_20 : tensor<1x128xi1> -> tensor<128x128xi1>
      %du_23 = arith.andi %du_21, %du_22 : tensor<128x128xi1>
      %du_24 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
      %du_25 = arith.muli %du, %du_24 : tensor<128x1xi32>
      %du_26 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %du_27 = tt.addptr %du_26, %du_25 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %du_28 = tt.broadcast %du_27 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %du_29 = tt.broadcast %du_19 : tensor<1x128xi32> -> tensor<128x128xi32>
      %du_30 = tt.addptr %du_28, %du_29 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %du_31 = tt.load %du_30, %du_23, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %du_32 = arith.extf %du_31 : tensor<128x128xbf16> to tensor<128x128xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
      %x_33 = arith.muli %du, %x : tensor<128x1xi32>
      %x_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %x_33 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_36 = tt.broadcast %x_35 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_37 = tt.addptr %x_36, %du_29 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_38 = tt.load %x_37, %du_23, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %x_39 = arith.extf %x_38 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_40 = tt.load %rstd_13, %rstd_11, %cst_6 : tensor<128x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_40 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_41 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_42 = arith.mulf %x_39, %xhat_41 : tensor<128x128xf32>
      %v = arith.cmpi slt, %offs_n_16, %cst_7 : tensor<128xi32>
      %v_43 = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_44 = tt.addptr %v_43, %offs_n_16 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_45 = tt.load %v_44, %v, %cst : tensor<128x!tt.ptr<bf16>>
      %v_46 = arith.extf %v_45 : tensor<128xbf16> to tensor<128xf32>
      %dx = tt.expand_dims %v_46 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %dx_47 = tt.broadcast %dx : tensor<1x128xf32> -> tensor<128x128xf32>
      %dx_48 = arith.mulf %du_32, %dx_47 : tensor<128x128xf32>
      %dx_49 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_50 = tt.broadcast %dx_49 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_51 = arith.mulf %xhat_42, %dx_50 : tensor<128x128xf32>
      %dx_52 = arith.subf %dx_48, %dx_51 : tensor<128x128xf32>
      %dx_53 = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_54 = tt.broadcast %dx_53 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_55 = arith.mulf %dx_52, %dx_54 : tensor<128x128xf32>
      %0 = arith.truncf %dx_55 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %du_30, %0, %du_23 : tensor<128x128x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// LayerNorm dX: c1 and c2 exchanged, the dg and dbeta partials, n = xhat g + beta.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK-COUNT-2: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>

module {
  tt.func public @ln_dx_xn_two_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128xbf16>
    %cst_0 = arith.constant dense<256> : tensor<1x128xi32>
    %c64_i32 = arith.constant 64 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %c63_i32 = arith.constant 63 : i32
    %c2_i32 = arith.constant 2 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<2.560000e+02> : tensor<128xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_7 = arith.constant dense<256> : tensor<128xi32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c128_i32 : i32
    %offs_m_8 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_9 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<128xi32>
    %c2:2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c1 = %cst_6, %c2_15 = %cst_6) -> (tensor<128xf32>, tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_m_8 : tensor<128xi32>
      %mmask = tt.splat %M : i32 -> tensor<128xi32>
      %mmask_18 = arith.cmpi slt, %offs_m_10, %mmask : tensor<128xi32>
      %nmask = arith.cmpi slt, %offs_n_17, %cst_7 : tensor<128xi32>
      %rows = arith.remsi %offs_m_10, %mmask : tensor<128xi32>
      %cols = arith.remsi %offs_n_17, %cst_7 : tensor<128xi32>
      %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %du = arith.addi %R, %c63_i32 : i32
      %du_19 = arith.divsi %du, %c64_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_19 step %c1_i32 iter_args(%acc_68 = %cst_1) -> (tensor<128x128xf32>)  : i32 {
        %rr = arith.muli %r, %c64_i32 : i32
        %rr_69 = tt.splat %rr : i32 -> tensor<64xi32>
        %rr_70 = arith.addi %rr_69, %offs_r : tensor<64xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_71 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
        %a_ptr_72 = arith.muli %a_ptr, %a_ptr_71 : tensor<128x1xi32>
        %a_ptr_73 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_74 = tt.addptr %a_ptr_73, %a_ptr_72 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_75 = tt.expand_dims %rr_70 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_76 = tt.broadcast %a_ptr_74 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_77 = tt.broadcast %a_ptr_75 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_78 = tt.addptr %a_ptr_76, %a_ptr_77 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %rr_70 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_79 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
        %b_ptr_80 = arith.muli %b_ptr, %b_ptr_79 : tensor<64x1xi32>
        %b_ptr_81 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %b_ptr_82 = tt.addptr %b_ptr_81, %b_ptr_80 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %b_ptr_83 = tt.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
        %b_ptr_84 = tt.broadcast %b_ptr_82 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
        %b_ptr_85 = tt.broadcast %b_ptr_83 : tensor<1x128xi32> -> tensor<64x128xi32>
        %b_ptr_86 = tt.addptr %b_ptr_84, %b_ptr_85 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
        %a = tt.splat %R : i32 -> tensor<1x64xi32>
        %a_87 = arith.cmpi slt, %a_ptr_75, %a : tensor<1x64xi32>
        %a_88 = tt.broadcast %a_87 : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_89 = tt.load %a_ptr_78, %a_88, %cst_2 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.splat %R : i32 -> tensor<64x1xi32>
        %b_90 = arith.cmpi slt, %b_ptr, %b : tensor<64x1xi32>
        %b_91 = tt.broadcast %b_90 : tensor<64x1xi1> -> tensor<64x128xi1>
        %b_92 = tt.load %b_ptr_86, %b_91, %cst_3 : tensor<64x128x!tt.ptr<bf16>>
        %acc_93 = tt.dot %a_89, %b_92, %acc_68, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
        scf.yield %acc_93 : tensor<128x128xf32>
      }
      %acc_20 = tt.expand_dims %mmask_18 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %acc_21 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %acc_22 = tt.broadcast %acc_20 : tensor<128x1xi1> -> tensor<128x128xi1>
      %acc_23 = tt.broadcast %acc_21 : tensor<1x128xi1> -> tensor<128x128xi1>
      %acc_24 = arith.andi %acc_22, %acc_23 : tensor<128x128xi1>
      %acc_25 = arith.select %acc_24, %acc, %cst_1 : tensor<128x128xi1>, tensor<128x128xf32>
      %msk = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %msk_26 = tt.splat %M : i32 -> tensor<128x1xi32>
      %msk_27 = arith.cmpi slt, %msk, %msk_26 : tensor<128x1xi32>
      %msk_28 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %msk_29 = arith.cmpi slt, %msk_28, %cst_0 : tensor<1x128xi32>
      %msk_30 = tt.broadcast %msk_27 : tensor<128x1xi1> -> tensor<128x128xi1>
      %msk_31 = tt.broadcast %msk_29 : tensor<1x128xi1> -> tensor<128x128xi1>
      %msk_32 = arith.andi %msk_30, %msk_31 : tensor<128x128xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
      %x_33 = arith.muli %msk, %x : tensor<128x1xi32>
      %x_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %x_33 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_36 = tt.broadcast %x_35 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_37 = tt.broadcast %msk_28 : tensor<1x128xi32> -> tensor<128x128xi32>
      %x_38 = tt.addptr %x_36, %x_37 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_39 = tt.load %x_38, %msk_32, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %x_40 = arith.extf %x_39 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_41 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %rstd_42 = tt.addptr %rstd_41, %offs_m_10 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %rstd_43 = tt.load %rstd_42, %mmask_18, %cst_6 : tensor<128x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %mean_44 = tt.addptr %mean, %offs_m_10 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %mean_45 = tt.load %mean_44, %mmask_18, %cst_6 : tensor<128x!tt.ptr<f32>>
      %x_46 = tt.expand_dims %mean_45 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %x_47 = tt.broadcast %x_46 : tensor<128x1xf32> -> tensor<128x128xf32>
      %x_48 = arith.subf %x_40, %x_47 : tensor<128x128xf32>
      %xhat = tt.expand_dims %rstd_43 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_49 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_50 = arith.mulf %x_48, %xhat_49 : tensor<128x128xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_51 = tt.addptr %v, %offs_n_17 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_52 = tt.load %v_51, %nmask, %cst : tensor<128x!tt.ptr<bf16>>
      %v_53 = arith.extf %v_52 : tensor<128xbf16> to tensor<128xf32>
      %xn = tt.expand_dims %v_53 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %xn_54 = tt.broadcast %xn : tensor<1x128xf32> -> tensor<128x128xf32>
      %xn_55 = arith.mulf %xhat_50, %xn_54 : tensor<128x128xf32>
      %v_56 = tt.splat %B : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_57 = tt.addptr %v_56, %offs_n_17 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_58 = tt.load %v_57, %nmask, %cst : tensor<128x!tt.ptr<bf16>>
      %v_59 = arith.extf %v_58 : tensor<128xbf16> to tensor<128xf32>
      %xn_60 = tt.expand_dims %v_59 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %xn_61 = tt.broadcast %xn_60 : tensor<1x128xf32> -> tensor<128x128xf32>
      %xn_62 = arith.addf %xn_55, %xn_61 : tensor<128x128xf32>
      %0 = tt.splat %stride_xnm : i32 -> tensor<128x1xi32>
      %1 = arith.muli %msk, %0 : tensor<128x1xi32>
      %2 = tt.splat %XN : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %5 = tt.addptr %4, %x_37 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %6 = arith.truncf %xn_62 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %5, %6, %msk_32 : tensor<128x128x!tt.ptr<bf16>>
      %7 = arith.muli %pid, %c256_i32 : i32
      %8 = tt.addptr %DGP, %7 : !tt.ptr<f32>, i32
      %9 = tt.splat %8 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %10 = tt.addptr %9, %offs_n_17 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %11 = arith.mulf %acc_25, %xhat_50 : tensor<128x128xf32>
      %12 = "tt.reduce"(%11) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %24 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %24 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      tt.store %10, %12, %nmask : tensor<128x!tt.ptr<f32>>
      %13 = tt.addptr %DBP, %7 : !tt.ptr<f32>, i32
      %14 = tt.splat %13 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %15 = tt.addptr %14, %offs_n_17 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %16 = "tt.reduce"(%acc_25) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %24 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %24 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      tt.store %15, %16, %nmask : tensor<128x!tt.ptr<f32>>
      %dn = arith.mulf %acc_25, %xn_54 : tensor<128x128xf32>
      %c1_63 = "tt.reduce"(%dn) <{axis = 1 : i32}> ({
      ^bb0(%c1_68: f32, %c1_69: f32):
        %c1_70 = arith.addf %c1_68, %c1_69 : f32
        tt.reduce.return %c1_70 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %c1_64 = arith.addf %c1, %c1_63 : tensor<128xf32>
      %c2_65 = arith.mulf %dn, %xhat_50 : tensor<128x128xf32>
      %c2_66 = "tt.reduce"(%c2_65) <{axis = 1 : i32}> ({
      ^bb0(%c2_68: f32, %c2_69: f32):
        %c2_70 = arith.addf %c2_68, %c2_69 : f32
        tt.reduce.return %c2_70 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %c2_67 = arith.addf %c2_15, %c2_66 : tensor<128xf32>
      %17 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
      %18 = arith.muli %msk, %17 : tensor<128x1xi32>
      %19 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %20 = tt.addptr %19, %18 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %21 = tt.broadcast %20 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %22 = tt.addptr %21, %x_37 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %23 = arith.truncf %acc_25 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %22, %23, %msk_32 : tensor<128x128x!tt.ptr<bf16>>
      scf.yield %c1_64, %c2_67 : tensor<128xf32>, tensor<128xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<128xi32>
    %rstd_11 = arith.cmpi slt, %offs_m_10, %rstd : tensor<128xi32>
    %rstd_12 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_13 = tt.addptr %rstd_12, %offs_m_10 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_14 = tt.load %rstd_13, %rstd_11, %cst_6 : tensor<128x!tt.ptr<f32>>
    %m1 = arith.divf %c2#0, %cst_5 : tensor<128xf32>
    %m2 = arith.divf %c2#1, %cst_5 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_15 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_16 = arith.addi %offs_n_15, %offs_m_8 : tensor<128xi32>
      %du = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %du_17 = tt.splat %M : i32 -> tensor<128x1xi32>
      %du_18 = arith.cmpi slt, %du, %du_17 : tensor<128x1xi32>
      %du_19 = tt.expand_dims %offs_n_16 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %du_20 = arith.cmpi slt, %du_19, %cst_0 : tensor<1x128xi32>
      %du_21 = tt.broadcast %du_18 : tensor<128x1xi1> -> tensor<128x128xi1>
      %du_22 = tt.broadcast %du_20 : tensor<1x128xi1> -> tensor<128x128xi1>
      %du_23 = arith.andi %du_21, %du_22 : tensor<128x128xi1>
      %du_24 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
      %du_25 = arith.muli %du, %du_24 : tensor<128x1xi32>
      %du_26 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %du_27 = tt.addptr %du_26, %du_25 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %du_28 = tt.broadcast %du_27 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %du_29 = tt.broadcast %du_19 : tensor<1x128xi32> -> tensor<128x128xi32>
      %du_30 = tt.addptr %du_28, %du_29 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %du_31 = tt.load %du_30, %du_23, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %du_32 = arith.extf %du_31 : tensor<128x128xbf16> to tensor<128x128xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
      %x_33 = arith.muli %du, %x : tensor<128x1xi32>
      %x_34 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_35 = tt.addptr %x_34, %x_33 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_36 = tt.broadcast %x_35 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_37 = tt.addptr %x_36, %du_29 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_38 = tt.load %x_37, %du_23, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %x_39 = arith.extf %x_38 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_40 = tt.load %rstd_13, %rstd_11, %cst_6 : tensor<128x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %mean_41 = tt.addptr %mean, %offs_m_10 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %mean_42 = tt.load %mean_41, %rstd_11, %cst_6 : tensor<128x!tt.ptr<f32>>
      %x_43 = tt.expand_dims %mean_42 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %x_44 = tt.broadcast %x_43 : tensor<128x1xf32> -> tensor<128x128xf32>
      %x_45 = arith.subf %x_39, %x_44 : tensor<128x128xf32>
      %xhat = tt.expand_dims %rstd_40 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_46 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_47 = arith.mulf %x_45, %xhat_46 : tensor<128x128xf32>
      %v = arith.cmpi slt, %offs_n_16, %cst_7 : tensor<128xi32>
      %v_48 = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_49 = tt.addptr %v_48, %offs_n_16 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_50 = tt.load %v_49, %v, %cst : tensor<128x!tt.ptr<bf16>>
      %v_51 = arith.extf %v_50 : tensor<128xbf16> to tensor<128xf32>
      %dx = tt.expand_dims %v_51 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %dx_52 = tt.broadcast %dx : tensor<1x128xf32> -> tensor<128x128xf32>
      %dx_53 = arith.mulf %du_32, %dx_52 : tensor<128x128xf32>
      %dx_54 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_55 = tt.broadcast %dx_54 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_56 = arith.mulf %xhat_47, %dx_55 : tensor<128x128xf32>
      %dx_57 = arith.subf %dx_53, %dx_56 : tensor<128x128xf32>
      %dx_58 = tt.expand_dims %m1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_59 = tt.broadcast %dx_58 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_60 = arith.subf %dx_57, %dx_59 : tensor<128x128xf32>
      %dx_61 = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_62 = tt.broadcast %dx_61 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_63 = arith.mulf %dx_60, %dx_62 : tensor<128x128xf32>
      %0 = arith.truncf %dx_63 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %du_30, %0, %du_23 : tensor<128x128x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// RMSNorm dX, the row in one N tile: Triton folded the one-trip loops (du stored, reloaded
// and stored over in one block); the two passes with T = 1: no stamped words, no gather.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>
// CHECK: partition0

module {
  tt.func public @rms_dx_xn_one_tile(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128xbf16>
    %cst_0 = arith.constant dense<120> : tensor<1x128xi32>
    %c64_i32 = arith.constant 64 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %c63_i32 = arith.constant 63 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<1.200000e+02> : tensor<128xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_7 = arith.constant dense<120> : tensor<128xi32>
    %c120_i32 = arith.constant 120 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c128_i32 : i32
    %offs_m_8 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_9 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<128xi32>
    %mmask = tt.splat %M : i32 -> tensor<128xi32>
    %mmask_11 = arith.cmpi slt, %offs_m_10, %mmask : tensor<128xi32>
    %nmask = arith.cmpi slt, %offs_m_8, %cst_7 : tensor<128xi32>
    %rows = arith.remsi %offs_m_10, %mmask : tensor<128xi32>
    %cols = arith.remsi %offs_m_8, %cst_7 : tensor<128xi32>
    %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %du = arith.addi %R, %c63_i32 : i32
    %du_12 = arith.divsi %du, %c64_i32 : i32
    %acc = scf.for %r = %c0_i32 to %du_12 step %c1_i32 iter_args(%acc_62 = %cst_1) -> (tensor<128x128xf32>)  : i32 {
      %rr = arith.muli %r, %c64_i32 : i32
      %rr_63 = tt.splat %rr : i32 -> tensor<64xi32>
      %rr_64 = arith.addi %rr_63, %offs_r : tensor<64xi32>
      %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_ptr_65 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
      %a_ptr_66 = arith.muli %a_ptr, %a_ptr_65 : tensor<128x1xi32>
      %a_ptr_67 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_ptr_68 = tt.addptr %a_ptr_67, %a_ptr_66 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_ptr_69 = tt.expand_dims %rr_64 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_ptr_70 = tt.broadcast %a_ptr_68 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_ptr_71 = tt.broadcast %a_ptr_69 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_ptr_72 = tt.addptr %a_ptr_70, %a_ptr_71 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %b_ptr = tt.expand_dims %rr_64 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_ptr_73 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
      %b_ptr_74 = arith.muli %b_ptr, %b_ptr_73 : tensor<64x1xi32>
      %b_ptr_75 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %b_ptr_76 = tt.addptr %b_ptr_75, %b_ptr_74 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %b_ptr_77 = tt.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %b_ptr_78 = tt.broadcast %b_ptr_76 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
      %b_ptr_79 = tt.broadcast %b_ptr_77 : tensor<1x128xi32> -> tensor<64x128xi32>
      %b_ptr_80 = tt.addptr %b_ptr_78, %b_ptr_79 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
      %a = tt.splat %R : i32 -> tensor<1x64xi32>
      %a_81 = arith.cmpi slt, %a_ptr_69, %a : tensor<1x64xi32>
      %a_82 = tt.broadcast %a_81 : tensor<1x64xi1> -> tensor<128x64xi1>
      %a_83 = tt.load %a_ptr_72, %a_82, %cst_2 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.splat %R : i32 -> tensor<64x1xi32>
      %b_84 = arith.cmpi slt, %b_ptr, %b : tensor<64x1xi32>
      %b_85 = tt.broadcast %b_84 : tensor<64x1xi1> -> tensor<64x128xi1>
      %b_86 = tt.load %b_ptr_80, %b_85, %cst_3 : tensor<64x128x!tt.ptr<bf16>>
      %acc_87 = tt.dot %a_83, %b_86, %acc_62, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
      scf.yield %acc_87 : tensor<128x128xf32>
    }
    %acc_13 = tt.expand_dims %mmask_11 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
    %acc_14 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
    %acc_15 = tt.broadcast %acc_13 : tensor<128x1xi1> -> tensor<128x128xi1>
    %acc_16 = tt.broadcast %acc_14 : tensor<1x128xi1> -> tensor<128x128xi1>
    %acc_17 = arith.andi %acc_15, %acc_16 : tensor<128x128xi1>
    %acc_18 = arith.select %acc_17, %acc, %cst_1 : tensor<128x128xi1>, tensor<128x128xf32>
    %msk = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %msk_19 = tt.splat %M : i32 -> tensor<128x1xi32>
    %msk_20 = arith.cmpi slt, %msk, %msk_19 : tensor<128x1xi32>
    %msk_21 = tt.expand_dims %offs_m_8 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %msk_22 = arith.cmpi slt, %msk_21, %cst_0 : tensor<1x128xi32>
    %msk_23 = tt.broadcast %msk_20 : tensor<128x1xi1> -> tensor<128x128xi1>
    %msk_24 = tt.broadcast %msk_22 : tensor<1x128xi1> -> tensor<128x128xi1>
    %msk_25 = arith.andi %msk_23, %msk_24 : tensor<128x128xi1>
    %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_26 = arith.muli %msk, %x : tensor<128x1xi32>
    %x_27 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %x_28 = tt.addptr %x_27, %x_26 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %x_29 = tt.broadcast %x_28 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
    %x_30 = tt.broadcast %msk_21 : tensor<1x128xi32> -> tensor<128x128xi32>
    %x_31 = tt.addptr %x_29, %x_30 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
    %x_32 = tt.load %x_31, %msk_25, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
    %x_33 = arith.extf %x_32 : tensor<128x128xbf16> to tensor<128x128xf32>
    %rstd = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_34 = tt.addptr %rstd, %offs_m_10 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_35 = tt.load %rstd_34, %mmask_11, %cst_6 : tensor<128x!tt.ptr<f32>>
    %xhat = tt.expand_dims %rstd_35 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %xhat_36 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
    %xhat_37 = arith.mulf %x_33, %xhat_36 : tensor<128x128xf32>
    %v = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
    %v_38 = tt.addptr %v, %offs_m_8 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
    %v_39 = tt.load %v_38, %nmask, %cst : tensor<128x!tt.ptr<bf16>>
    %v_40 = arith.extf %v_39 : tensor<128xbf16> to tensor<128xf32>
    %xn = tt.expand_dims %v_40 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
    %xn_41 = tt.broadcast %xn : tensor<1x128xf32> -> tensor<128x128xf32>
    %xn_42 = arith.mulf %xhat_37, %xn_41 : tensor<128x128xf32>
    %0 = tt.splat %stride_xnm : i32 -> tensor<128x1xi32>
    %1 = arith.muli %msk, %0 : tensor<128x1xi32>
    %2 = tt.splat %XN : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %3 = tt.addptr %2, %1 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %4 = tt.broadcast %3 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %x_30 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
    %6 = arith.truncf %xn_42 : tensor<128x128xf32> to tensor<128x128xbf16>
    tt.store %5, %6, %msk_25 : tensor<128x128x!tt.ptr<bf16>>
    %7 = arith.muli %pid, %c120_i32 : i32
    %8 = tt.addptr %DGP, %7 : !tt.ptr<f32>, i32
    %9 = tt.splat %8 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %10 = tt.addptr %9, %offs_m_8 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %11 = arith.mulf %acc_18, %xhat_37 : tensor<128x128xf32>
    %12 = "tt.reduce"(%11) <{axis = 0 : i32}> ({
    ^bb0(%arg20: f32, %arg21: f32):
      %21 = arith.addf %arg20, %arg21 : f32
      tt.reduce.return %21 : f32
    }) : (tensor<128x128xf32>) -> tensor<128xf32>
    tt.store %10, %12, %nmask : tensor<128x!tt.ptr<f32>>
    %dn = arith.mulf %acc_18, %xn_41 : tensor<128x128xf32>
    %c2 = arith.mulf %dn, %xhat_37 : tensor<128x128xf32>
    %c2_43 = "tt.reduce"(%c2) <{axis = 1 : i32}> ({
    ^bb0(%c2_62: f32, %c2_63: f32):
      %c2_64 = arith.addf %c2_62, %c2_63 : f32
      tt.reduce.return %c2_64 : f32
    }) : (tensor<128x128xf32>) -> tensor<128xf32>
    %c2_44 = arith.addf %c2_43, %cst_6 : tensor<128xf32>
    %13 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
    %14 = arith.muli %msk, %13 : tensor<128x1xi32>
    %15 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %16 = tt.addptr %15, %14 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %17 = tt.broadcast %16 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
    %18 = tt.addptr %17, %x_30 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
    %19 = arith.truncf %acc_18 : tensor<128x128xf32> to tensor<128x128xbf16>
    tt.store %18, %19, %msk_25 : tensor<128x128x!tt.ptr<bf16>>
    %rstd_45 = tt.load %rstd_34, %mmask_11, %cst_6 : tensor<128x!tt.ptr<f32>>
    %m2 = arith.divf %c2_44, %cst_5 : tensor<128xf32>
    %du_46 = tt.load %18, %msk_25, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
    %du_47 = arith.extf %du_46 : tensor<128x128xbf16> to tensor<128x128xf32>
    %x_48 = tt.load %x_31, %msk_25, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
    %x_49 = arith.extf %x_48 : tensor<128x128xbf16> to tensor<128x128xf32>
    %xhat_50 = tt.expand_dims %rstd_45 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %xhat_51 = tt.broadcast %xhat_50 : tensor<128x1xf32> -> tensor<128x128xf32>
    %xhat_52 = arith.mulf %x_49, %xhat_51 : tensor<128x128xf32>
    %v_53 = tt.load %v_38, %nmask, %cst : tensor<128x!tt.ptr<bf16>>
    %v_54 = arith.extf %v_53 : tensor<128xbf16> to tensor<128xf32>
    %dx = tt.expand_dims %v_54 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
    %dx_55 = tt.broadcast %dx : tensor<1x128xf32> -> tensor<128x128xf32>
    %dx_56 = arith.mulf %du_47, %dx_55 : tensor<128x128xf32>
    %dx_57 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %dx_58 = tt.broadcast %dx_57 : tensor<128x1xf32> -> tensor<128x128xf32>
    %dx_59 = arith.mulf %xhat_52, %dx_58 : tensor<128x128xf32>
    %dx_60 = arith.subf %dx_56, %dx_59 : tensor<128x128xf32>
    %dx_61 = arith.mulf %dx_60, %xhat_51 : tensor<128x128xf32>
    %20 = arith.truncf %dx_61 : tensor<128x128xf32> to tensor<128x128xbf16>
    tt.store %18, %20, %msk_25 : tensor<128x128x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// The regrouped post-norm block's LayerNorm backward: SiLU' of n = xhat g + beta on du, and
// a residual gradient added to dx: four descriptors (dY, W, dx, x; no n), the dg and dbeta
// partials, the two stamped row sums, then FIN's pointer load of the residual gradient's
// [128, 128] tile before dx leaves by TMA.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-2: !tt.tensordesc<tensor<128x128xbf16
// CHECK-NOT: !tt.tensordesc<tensor<128x128xbf16
// CHECK: ttg.warp_specialize
// CHECK-COUNT-2: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>
// CHECK: st.relaxed.gpu.global.b64
// CHECK: st.relaxed.gpu.global.b64
// CHECK: tt.load %{{.+}} : tensor<128x128x!tt.ptr<bf16>
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0

module {
  tt.func public @ln_dx_act_dres_two_tiles(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %DRES: !tt.ptr<bf16>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %DBP: !tt.ptr<f32>, %XN: !tt.ptr<bf16>, %M: i32, %R: i32, %stride_dym: i32, %stride_wr: i32, %stride_xm: i32, %stride_drm: i32, %stride_dxm: i32, %stride_xnm: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128xbf16>
    %cst_0 = arith.constant dense<256> : tensor<1x128xi32>
    %c64_i32 = arith.constant 64 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %c63_i32 = arith.constant 63 : i32
    %c2_i32 = arith.constant 2 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_4 = arith.constant dense<2.560000e+02> : tensor<128xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_6 = arith.constant dense<256> : tensor<128xi32>
    %c256_i32 = arith.constant 256 : i32
    %cst_7 = arith.constant dense<1.000000e+00> : tensor<128x128xf32>
    %cst_8 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %c128_i32 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c128_i32 : i32
    %offs_m_9 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_10 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_11 = arith.addi %offs_m_10, %offs_m_9 : tensor<128xi32>
    %c2:2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c1 = %cst_5, %c2_16 = %cst_5) -> (tensor<128xf32>, tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_m_9 : tensor<128xi32>
      %mmask = tt.splat %M : i32 -> tensor<128xi32>
      %mmask_19 = arith.cmpi slt, %offs_m_11, %mmask : tensor<128xi32>
      %nmask = arith.cmpi slt, %offs_n_18, %cst_6 : tensor<128xi32>
      %rows = arith.remsi %offs_m_11, %mmask : tensor<128xi32>
      %cols = arith.remsi %offs_n_18, %cst_6 : tensor<128xi32>
      %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %du = arith.addi %R, %c63_i32 : i32
      %du_20 = arith.divsi %du, %c64_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_20 step %c1_i32 iter_args(%acc_77 = %cst_8) -> (tensor<128x128xf32>)  : i32 {
        %rr = arith.muli %r, %c64_i32 : i32
        %rr_78 = tt.splat %rr : i32 -> tensor<64xi32>
        %rr_79 = arith.addi %rr_78, %offs_r : tensor<64xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_80 = tt.splat %stride_dym : i32 -> tensor<128x1xi32>
        %a_ptr_81 = arith.muli %a_ptr, %a_ptr_80 : tensor<128x1xi32>
        %a_ptr_82 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_83 = tt.addptr %a_ptr_82, %a_ptr_81 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_84 = tt.expand_dims %rr_79 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_85 = tt.broadcast %a_ptr_83 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_86 = tt.broadcast %a_ptr_84 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_87 = tt.addptr %a_ptr_85, %a_ptr_86 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %rr_79 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_88 = tt.splat %stride_wr : i32 -> tensor<64x1xi32>
        %b_ptr_89 = arith.muli %b_ptr, %b_ptr_88 : tensor<64x1xi32>
        %b_ptr_90 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %b_ptr_91 = tt.addptr %b_ptr_90, %b_ptr_89 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %b_ptr_92 = tt.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
        %b_ptr_93 = tt.broadcast %b_ptr_91 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
        %b_ptr_94 = tt.broadcast %b_ptr_92 : tensor<1x128xi32> -> tensor<64x128xi32>
        %b_ptr_95 = tt.addptr %b_ptr_93, %b_ptr_94 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
        %a = tt.splat %R : i32 -> tensor<1x64xi32>
        %a_96 = arith.cmpi slt, %a_ptr_84, %a : tensor<1x64xi32>
        %a_97 = tt.broadcast %a_96 : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_98 = tt.load %a_ptr_87, %a_97, %cst_1 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.splat %R : i32 -> tensor<64x1xi32>
        %b_99 = arith.cmpi slt, %b_ptr, %b : tensor<64x1xi32>
        %b_100 = tt.broadcast %b_99 : tensor<64x1xi1> -> tensor<64x128xi1>
        %b_101 = tt.load %b_ptr_95, %b_100, %cst_2 : tensor<64x128x!tt.ptr<bf16>>
        %acc_102 = tt.dot %a_98, %b_101, %acc_77, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
        scf.yield %acc_102 : tensor<128x128xf32>
      }
      %acc_21 = tt.expand_dims %mmask_19 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %acc_22 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %acc_23 = tt.broadcast %acc_21 : tensor<128x1xi1> -> tensor<128x128xi1>
      %acc_24 = tt.broadcast %acc_22 : tensor<1x128xi1> -> tensor<128x128xi1>
      %acc_25 = arith.andi %acc_23, %acc_24 : tensor<128x128xi1>
      %acc_26 = arith.select %acc_25, %acc, %cst_8 : tensor<128x128xi1>, tensor<128x128xf32>
      %msk = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %msk_27 = tt.splat %M : i32 -> tensor<128x1xi32>
      %msk_28 = arith.cmpi slt, %msk, %msk_27 : tensor<128x1xi32>
      %msk_29 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %msk_30 = arith.cmpi slt, %msk_29, %cst_0 : tensor<1x128xi32>
      %msk_31 = tt.broadcast %msk_28 : tensor<128x1xi1> -> tensor<128x128xi1>
      %msk_32 = tt.broadcast %msk_30 : tensor<1x128xi1> -> tensor<128x128xi1>
      %msk_33 = arith.andi %msk_31, %msk_32 : tensor<128x128xi1>
      %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
      %x_34 = arith.muli %msk, %x : tensor<128x1xi32>
      %x_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_36 = tt.addptr %x_35, %x_34 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_37 = tt.broadcast %x_36 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_38 = tt.broadcast %msk_29 : tensor<1x128xi32> -> tensor<128x128xi32>
      %x_39 = tt.addptr %x_37, %x_38 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_40 = tt.load %x_39, %msk_33, %cst_3 : tensor<128x128x!tt.ptr<bf16>>
      %x_41 = arith.extf %x_40 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_42 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %rstd_43 = tt.addptr %rstd_42, %offs_m_11 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %rstd_44 = tt.load %rstd_43, %mmask_19, %cst_5 : tensor<128x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %mean_45 = tt.addptr %mean, %offs_m_11 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %mean_46 = tt.load %mean_45, %mmask_19, %cst_5 : tensor<128x!tt.ptr<f32>>
      %x_47 = tt.expand_dims %mean_46 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %x_48 = tt.broadcast %x_47 : tensor<128x1xf32> -> tensor<128x128xf32>
      %x_49 = arith.subf %x_41, %x_48 : tensor<128x128xf32>
      %xhat = tt.expand_dims %rstd_44 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_50 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_51 = arith.mulf %x_49, %xhat_50 : tensor<128x128xf32>
      %v = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_52 = tt.addptr %v, %offs_n_18 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_53 = tt.load %v_52, %nmask, %cst : tensor<128x!tt.ptr<bf16>>
      %v_54 = arith.extf %v_53 : tensor<128xbf16> to tensor<128xf32>
      %z = tt.expand_dims %v_54 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %z_55 = tt.broadcast %z : tensor<1x128xf32> -> tensor<128x128xf32>
      %z_56 = arith.mulf %xhat_51, %z_55 : tensor<128x128xf32>
      %v_57 = tt.splat %B : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_58 = tt.addptr %v_57, %offs_n_18 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_59 = tt.load %v_58, %nmask, %cst : tensor<128x!tt.ptr<bf16>>
      %v_60 = arith.extf %v_59 : tensor<128xbf16> to tensor<128xf32>
      %z_61 = tt.expand_dims %v_60 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %z_62 = tt.broadcast %z_61 : tensor<1x128xf32> -> tensor<128x128xf32>
      %z_63 = arith.addf %z_56, %z_62 : tensor<128x128xf32>
      %s = arith.subf %cst_8, %z_63 : tensor<128x128xf32>
      %s_64 = math.exp %s : tensor<128x128xf32>
      %s_65 = arith.addf %s_64, %cst_7 : tensor<128x128xf32>
      %s_66 = arith.divf %cst_7, %s_65 : tensor<128x128xf32>
      %du_67 = arith.subf %cst_7, %s_66 : tensor<128x128xf32>
      %du_68 = arith.mulf %z_63, %du_67 : tensor<128x128xf32>
      %du_69 = arith.addf %du_68, %cst_7 : tensor<128x128xf32>
      %du_70 = arith.mulf %s_66, %du_69 : tensor<128x128xf32>
      %du_71 = arith.mulf %acc_26, %du_70 : tensor<128x128xf32>
      %0 = arith.muli %pid, %c256_i32 : i32
      %1 = tt.addptr %DGP, %0 : !tt.ptr<f32>, i32
      %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %3 = tt.addptr %2, %offs_n_18 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %4 = arith.mulf %du_71, %xhat_51 : tensor<128x128xf32>
      %5 = "tt.reduce"(%4) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %17 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %17 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      tt.store %3, %5, %nmask : tensor<128x!tt.ptr<f32>>
      %6 = tt.addptr %DBP, %0 : !tt.ptr<f32>, i32
      %7 = tt.splat %6 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %8 = tt.addptr %7, %offs_n_18 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %9 = "tt.reduce"(%du_71) <{axis = 0 : i32}> ({
      ^bb0(%arg23: f32, %arg24: f32):
        %17 = arith.addf %arg23, %arg24 : f32
        tt.reduce.return %17 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      tt.store %8, %9, %nmask : tensor<128x!tt.ptr<f32>>
      %dn = arith.mulf %du_71, %z_55 : tensor<128x128xf32>
      %c1_72 = "tt.reduce"(%dn) <{axis = 1 : i32}> ({
      ^bb0(%c1_77: f32, %c1_78: f32):
        %c1_79 = arith.addf %c1_77, %c1_78 : f32
        tt.reduce.return %c1_79 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %c1_73 = arith.addf %c1, %c1_72 : tensor<128xf32>
      %c2_74 = arith.mulf %dn, %xhat_51 : tensor<128x128xf32>
      %c2_75 = "tt.reduce"(%c2_74) <{axis = 1 : i32}> ({
      ^bb0(%c2_77: f32, %c2_78: f32):
        %c2_79 = arith.addf %c2_77, %c2_78 : f32
        tt.reduce.return %c2_79 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %c2_76 = arith.addf %c2_16, %c2_75 : tensor<128xf32>
      %10 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
      %11 = arith.muli %msk, %10 : tensor<128x1xi32>
      %12 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %13 = tt.addptr %12, %11 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %14 = tt.broadcast %13 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %15 = tt.addptr %14, %x_38 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %16 = arith.truncf %du_71 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %15, %16, %msk_33 : tensor<128x128x!tt.ptr<bf16>>
      scf.yield %c1_73, %c2_76 : tensor<128xf32>, tensor<128xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<128xi32>
    %rstd_12 = arith.cmpi slt, %offs_m_11, %rstd : tensor<128xi32>
    %rstd_13 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_14 = tt.addptr %rstd_13, %offs_m_11 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_15 = tt.load %rstd_14, %rstd_12, %cst_5 : tensor<128x!tt.ptr<f32>>
    %m1 = arith.divf %c2#0, %cst_4 : tensor<128xf32>
    %m2 = arith.divf %c2#1, %cst_4 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_m_9 : tensor<128xi32>
      %du = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %du_18 = tt.splat %M : i32 -> tensor<128x1xi32>
      %du_19 = arith.cmpi slt, %du, %du_18 : tensor<128x1xi32>
      %du_20 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %du_21 = arith.cmpi slt, %du_20, %cst_0 : tensor<1x128xi32>
      %du_22 = tt.broadcast %du_19 : tensor<128x1xi1> -> tensor<128x128xi1>
      %du_23 = tt.broadcast %du_21 : tensor<1x128xi1> -> tensor<128x128xi1>
      %du_24 = arith.andi %du_22, %du_23 : tensor<128x128xi1>
      %du_25 = tt.splat %stride_dxm : i32 -> tensor<128x1xi32>
      %du_26 = arith.muli %du, %du_25 : tensor<128x1xi32>
      %du_27 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %du_28 = tt.addptr %du_27, %du_26 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %du_29 = tt.broadcast %du_28 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %du_30 = tt.broadcast %du_20 : tensor<1x128xi32> -> tensor<128x128xi32>
      %du_31 = tt.addptr %du_29, %du_30 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %du_32 = tt.load %du_31, %du_24, %cst_3 : tensor<128x128x!tt.ptr<bf16>>
      %du_33 = arith.extf %du_32 : tensor<128x128xbf16> to tensor<128x128xf32>
      %x = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
      %x_34 = arith.muli %du, %x : tensor<128x1xi32>
      %x_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_36 = tt.addptr %x_35, %x_34 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_37 = tt.broadcast %x_36 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_38 = tt.addptr %x_37, %du_30 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_39 = tt.load %x_38, %du_24, %cst_3 : tensor<128x128x!tt.ptr<bf16>>
      %x_40 = arith.extf %x_39 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_41 = tt.load %rstd_14, %rstd_12, %cst_5 : tensor<128x!tt.ptr<f32>>
      %mean = tt.splat %MEAN : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %mean_42 = tt.addptr %mean, %offs_m_11 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %mean_43 = tt.load %mean_42, %rstd_12, %cst_5 : tensor<128x!tt.ptr<f32>>
      %x_44 = tt.expand_dims %mean_43 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %x_45 = tt.broadcast %x_44 : tensor<128x1xf32> -> tensor<128x128xf32>
      %x_46 = arith.subf %x_40, %x_45 : tensor<128x128xf32>
      %xhat = tt.expand_dims %rstd_41 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_47 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_48 = arith.mulf %x_46, %xhat_47 : tensor<128x128xf32>
      %v = arith.cmpi slt, %offs_n_17, %cst_6 : tensor<128xi32>
      %v_49 = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %v_50 = tt.addptr %v_49, %offs_n_17 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %v_51 = tt.load %v_50, %v, %cst : tensor<128x!tt.ptr<bf16>>
      %v_52 = arith.extf %v_51 : tensor<128xbf16> to tensor<128xf32>
      %dx = tt.expand_dims %v_52 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %dx_53 = tt.broadcast %dx : tensor<1x128xf32> -> tensor<128x128xf32>
      %dx_54 = arith.mulf %du_33, %dx_53 : tensor<128x128xf32>
      %dx_55 = tt.expand_dims %m2 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_56 = tt.broadcast %dx_55 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_57 = arith.mulf %xhat_48, %dx_56 : tensor<128x128xf32>
      %dx_58 = arith.subf %dx_54, %dx_57 : tensor<128x128xf32>
      %dx_59 = tt.expand_dims %m1 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_60 = tt.broadcast %dx_59 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_61 = arith.subf %dx_58, %dx_60 : tensor<128x128xf32>
      %dx_62 = tt.expand_dims %rstd_15 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %dx_63 = tt.broadcast %dx_62 : tensor<128x1xf32> -> tensor<128x128xf32>
      %dx_64 = arith.mulf %dx_61, %dx_63 : tensor<128x128xf32>
      %dx_65 = tt.splat %stride_drm : i32 -> tensor<128x1xi32>
      %dx_66 = arith.muli %du, %dx_65 : tensor<128x1xi32>
      %dx_67 = tt.splat %DRES : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %dx_68 = tt.addptr %dx_67, %dx_66 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %dx_69 = tt.broadcast %dx_68 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %dx_70 = tt.addptr %dx_69, %du_30 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %dx_71 = tt.load %dx_70, %du_24, %cst_3 : tensor<128x128x!tt.ptr<bf16>>
      %dx_72 = arith.extf %dx_71 : tensor<128x128xbf16> to tensor<128x128xf32>
      %dx_73 = arith.addf %dx_64, %dx_72 : tensor<128x128xf32>
      %0 = arith.truncf %dx_73 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %du_31, %0, %du_24 : tensor<128x128x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: a side output read back by the normalizing loop.
// CHECK-LABEL: tt.func public @negative_side_read_back
// CHECK-NOT: ttg.warp_specialize

module {
  tt.func public @negative_side_read_back(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %M: i32, %R: i32) attributes {noinline = false} {
    %cst = arith.constant dense<256> : tensor<1x128xi32>
    %cst_0 = arith.constant dense<256> : tensor<128xi32>
    %c64_i32 = arith.constant 64 : i32
    %cst_1 = arith.constant dense<256> : tensor<64x1xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %c63_i32 = arith.constant 63 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c2_i32 = arith.constant 2 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_5 = arith.constant dense<2.560000e+02> : tensor<128xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_7 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_8 = arith.constant dense<256> : tensor<128x1xi32>
    %c128_i32 = arith.constant 128 : i32
    %offs_m = tt.get_program_id x : i32
    %offs_m_9 = arith.muli %offs_m, %c128_i32 : i32
    %offs_m_10 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_11 = tt.splat %offs_m_9 : i32 -> tensor<128xi32>
    %offs_m_12 = arith.addi %offs_m_11, %offs_m_10 : tensor<128xi32>
    %c2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c2_17 = %cst_7) -> (tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_18 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_19 = arith.addi %offs_n_18, %offs_m_10 : tensor<128xi32>
      %mmask = tt.splat %M : i32 -> tensor<128xi32>
      %mmask_20 = arith.cmpi slt, %offs_m_12, %mmask : tensor<128xi32>
      %nmask = arith.cmpi slt, %offs_n_19, %cst_0 : tensor<128xi32>
      %rows = arith.remsi %offs_m_12, %mmask : tensor<128xi32>
      %cols = arith.remsi %offs_n_19, %cst_0 : tensor<128xi32>
      %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %du = arith.addi %R, %c63_i32 : i32
      %du_21 = arith.divsi %du, %c64_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_21 step %c1_i32 iter_args(%acc_50 = %cst_6) -> (tensor<128x128xf32>)  : i32 {
        %rr = arith.muli %r, %c64_i32 : i32
        %rr_51 = tt.splat %rr : i32 -> tensor<64xi32>
        %rr_52 = arith.addi %rr_51, %offs_r : tensor<64xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_53 = tt.splat %R : i32 -> tensor<128x1xi32>
        %a_ptr_54 = arith.muli %a_ptr, %a_ptr_53 : tensor<128x1xi32>
        %a_ptr_55 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_56 = tt.addptr %a_ptr_55, %a_ptr_54 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_57 = tt.expand_dims %rr_52 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_58 = tt.broadcast %a_ptr_56 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_59 = tt.broadcast %a_ptr_57 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_60 = tt.addptr %a_ptr_58, %a_ptr_59 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %rr_52 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_61 = arith.muli %b_ptr, %cst_1 : tensor<64x1xi32>
        %b_ptr_62 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %b_ptr_63 = tt.addptr %b_ptr_62, %b_ptr_61 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %b_ptr_64 = tt.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
        %b_ptr_65 = tt.broadcast %b_ptr_63 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
        %b_ptr_66 = tt.broadcast %b_ptr_64 : tensor<1x128xi32> -> tensor<64x128xi32>
        %b_ptr_67 = tt.addptr %b_ptr_65, %b_ptr_66 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
        %a = tt.splat %R : i32 -> tensor<1x64xi32>
        %a_68 = arith.cmpi slt, %a_ptr_57, %a : tensor<1x64xi32>
        %a_69 = tt.broadcast %a_68 : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_70 = tt.load %a_ptr_60, %a_69, %cst_2 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.splat %R : i32 -> tensor<64x1xi32>
        %b_71 = arith.cmpi slt, %b_ptr, %b : tensor<64x1xi32>
        %b_72 = tt.broadcast %b_71 : tensor<64x1xi1> -> tensor<64x128xi1>
        %b_73 = tt.load %b_ptr_67, %b_72, %cst_3 : tensor<64x128x!tt.ptr<bf16>>
        %acc_74 = tt.dot %a_70, %b_73, %acc_50, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
        scf.yield %acc_74 : tensor<128x128xf32>
      }
      %acc_22 = tt.expand_dims %mmask_20 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %acc_23 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %acc_24 = tt.broadcast %acc_22 : tensor<128x1xi1> -> tensor<128x128xi1>
      %acc_25 = tt.broadcast %acc_23 : tensor<1x128xi1> -> tensor<128x128xi1>
      %acc_26 = arith.andi %acc_24, %acc_25 : tensor<128x128xi1>
      %acc_27 = arith.select %acc_26, %acc, %cst_6 : tensor<128x128xi1>, tensor<128x128xf32>
      %msk = tt.expand_dims %offs_m_12 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %msk_28 = tt.splat %M : i32 -> tensor<128x1xi32>
      %msk_29 = arith.cmpi slt, %msk, %msk_28 : tensor<128x1xi32>
      %msk_30 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %msk_31 = arith.cmpi slt, %msk_30, %cst : tensor<1x128xi32>
      %msk_32 = tt.broadcast %msk_29 : tensor<128x1xi1> -> tensor<128x128xi1>
      %msk_33 = tt.broadcast %msk_31 : tensor<1x128xi1> -> tensor<128x128xi1>
      %msk_34 = arith.andi %msk_32, %msk_33 : tensor<128x128xi1>
      %x = arith.muli %msk, %cst_8 : tensor<128x1xi32>
      %x_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_36 = tt.addptr %x_35, %x : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_37 = tt.broadcast %x_36 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_38 = tt.broadcast %msk_30 : tensor<1x128xi32> -> tensor<128x128xi32>
      %x_39 = tt.addptr %x_37, %x_38 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_40 = tt.load %x_39, %msk_34, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %x_41 = arith.extf %x_40 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_42 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %rstd_43 = tt.addptr %rstd_42, %offs_m_12 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %rstd_44 = tt.load %rstd_43, %mmask_20, %cst_7 : tensor<128x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_44 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_45 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_46 = arith.mulf %x_41, %xhat_45 : tensor<128x128xf32>
      %0 = tt.splat %DGP : !tt.ptr<f32> -> tensor<128x1x!tt.ptr<f32>>
      %1 = tt.addptr %0, %x : tensor<128x1x!tt.ptr<f32>>, tensor<128x1xi32>
      %2 = tt.broadcast %1 : tensor<128x1x!tt.ptr<f32>> -> tensor<128x128x!tt.ptr<f32>>
      %3 = tt.addptr %2, %x_38 : tensor<128x128x!tt.ptr<f32>>, tensor<128x128xi32>
      tt.store %3, %xhat_46, %msk_34 : tensor<128x128x!tt.ptr<f32>>
      %c2_47 = arith.mulf %acc_27, %xhat_46 : tensor<128x128xf32>
      %c2_48 = "tt.reduce"(%c2_47) <{axis = 1 : i32}> ({
      ^bb0(%c2_50: f32, %c2_51: f32):
        %c2_52 = arith.addf %c2_50, %c2_51 : f32
        tt.reduce.return %c2_52 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %c2_49 = arith.addf %c2_17, %c2_48 : tensor<128xf32>
      %4 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %5 = tt.addptr %4, %x : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %6 = tt.broadcast %5 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %7 = tt.addptr %6, %x_38 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %8 = arith.truncf %acc_27 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %7, %8, %msk_34 : tensor<128x128x!tt.ptr<bf16>>
      scf.yield %c2_49 : tensor<128xf32>
    }
    %rstd = tt.splat %M : i32 -> tensor<128xi32>
    %rstd_13 = arith.cmpi slt, %offs_m_12, %rstd : tensor<128xi32>
    %rstd_14 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_15 = tt.addptr %rstd_14, %offs_m_12 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_16 = tt.load %rstd_15, %rstd_13, %cst_7 : tensor<128x!tt.ptr<f32>>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_m_10 : tensor<128xi32>
      %p = tt.expand_dims %offs_m_12 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %p_19 = arith.muli %p, %cst_8 : tensor<128x1xi32>
      %p_20 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %p_21 = tt.addptr %p_20, %p_19 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %p_22 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %p_23 = tt.broadcast %p_21 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %p_24 = tt.broadcast %p_22 : tensor<1x128xi32> -> tensor<128x128xi32>
      %p_25 = tt.addptr %p_23, %p_24 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %du = tt.splat %M : i32 -> tensor<128x1xi32>
      %du_26 = arith.cmpi slt, %p, %du : tensor<128x1xi32>
      %du_27 = arith.cmpi slt, %p_22, %cst : tensor<1x128xi32>
      %du_28 = tt.broadcast %du_26 : tensor<128x1xi1> -> tensor<128x128xi1>
      %du_29 = tt.broadcast %du_27 : tensor<1x128xi1> -> tensor<128x128xi1>
      %du_30 = arith.andi %du_28, %du_29 : tensor<128x128xi1>
      %du_31 = tt.load %p_25, %du_30, %cst_4 : tensor<128x128x!tt.ptr<bf16>>
      %du_32 = arith.extf %du_31 : tensor<128x128xbf16> to tensor<128x128xf32>
      %xhat = tt.splat %DGP : !tt.ptr<f32> -> tensor<128x1x!tt.ptr<f32>>
      %xhat_33 = tt.addptr %xhat, %p_19 : tensor<128x1x!tt.ptr<f32>>, tensor<128x1xi32>
      %xhat_34 = tt.broadcast %xhat_33 : tensor<128x1x!tt.ptr<f32>> -> tensor<128x128x!tt.ptr<f32>>
      %xhat_35 = tt.addptr %xhat_34, %p_24 : tensor<128x128x!tt.ptr<f32>>, tensor<128x128xi32>
      %xhat_36 = tt.load %xhat_35, %du_30, %cst_6 : tensor<128x128x!tt.ptr<f32>>
      %0 = arith.divf %c2, %cst_5 : tensor<128xf32>
      %1 = tt.expand_dims %0 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %2 = tt.broadcast %1 : tensor<128x1xf32> -> tensor<128x128xf32>
      %3 = arith.mulf %xhat_36, %2 : tensor<128x128xf32>
      %4 = arith.subf %du_32, %3 : tensor<128x128xf32>
      %5 = tt.expand_dims %rstd_16 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %6 = tt.broadcast %5 : tensor<128x1xf32> -> tensor<128x128xf32>
      %7 = arith.mulf %4, %6 : tensor<128x128xf32>
      %8 = arith.truncf %7 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %p_25, %8, %du_30 : tensor<128x128x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: a residual gradient read by the first pass (into du before the row sums and
// the partials) is a second [BM, BN] tile besides x there: only x comes by TMA.
// CHECK-LABEL: tt.func public @negative_dres_in_first_pass
// CHECK-NOT: ttg.warp_specialize

module {
  tt.func public @negative_dres_in_first_pass(%DY: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %X: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %DX: !tt.ptr<bf16>, %DGP: !tt.ptr<f32>, %M: i32, %R: i32, %DRES: !tt.ptr<bf16>) attributes {noinline = false} {
    %cst = arith.constant dense<256> : tensor<1x128xi32>
    %cst_0 = arith.constant dense<256> : tensor<128xi32>
    %c64_i32 = arith.constant 64 : i32
    %cst_1 = arith.constant dense<256> : tensor<64x1xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %c63_i32 = arith.constant 63 : i32
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c2_i32 = arith.constant 2 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_7 = arith.constant dense<2.560000e+02> : tensor<128xf32>
    %cst_8 = arith.constant dense<256> : tensor<128x1xi32>
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid = tt.get_program_id x : i32
    %offs_m = arith.muli %pid, %c128_i32 : i32
    %offs_m_9 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_10 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_11 = arith.addi %offs_m_10, %offs_m_9 : tensor<128xi32>
    %c2 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%c2_16 = %cst_5) -> (tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_m_9 : tensor<128xi32>
      %mmask = tt.splat %M : i32 -> tensor<128xi32>
      %mmask_19 = arith.cmpi slt, %offs_m_11, %mmask : tensor<128xi32>
      %nmask = arith.cmpi slt, %offs_n_18, %cst_0 : tensor<128xi32>
      %rows = arith.remsi %offs_m_11, %mmask : tensor<128xi32>
      %cols = arith.remsi %offs_n_18, %cst_0 : tensor<128xi32>
      %offs_r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %du = arith.addi %R, %c63_i32 : i32
      %du_20 = arith.divsi %du, %c64_i32 : i32
      %acc = scf.for %r = %c0_i32 to %du_20 step %c1_i32 iter_args(%acc_56 = %cst_2) -> (tensor<128x128xf32>)  : i32 {
        %rr = arith.muli %r, %c64_i32 : i32
        %rr_57 = tt.splat %rr : i32 -> tensor<64xi32>
        %rr_58 = arith.addi %rr_57, %offs_r : tensor<64xi32>
        %a_ptr = tt.expand_dims %rows {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_59 = tt.splat %R : i32 -> tensor<128x1xi32>
        %a_ptr_60 = arith.muli %a_ptr, %a_ptr_59 : tensor<128x1xi32>
        %a_ptr_61 = tt.splat %DY : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_62 = tt.addptr %a_ptr_61, %a_ptr_60 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_63 = tt.expand_dims %rr_58 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_64 = tt.broadcast %a_ptr_62 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_65 = tt.broadcast %a_ptr_63 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_66 = tt.addptr %a_ptr_64, %a_ptr_65 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %rr_58 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_67 = arith.muli %b_ptr, %cst_1 : tensor<64x1xi32>
        %b_ptr_68 = tt.splat %W : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
        %b_ptr_69 = tt.addptr %b_ptr_68, %b_ptr_67 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
        %b_ptr_70 = tt.expand_dims %cols {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
        %b_ptr_71 = tt.broadcast %b_ptr_69 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
        %b_ptr_72 = tt.broadcast %b_ptr_70 : tensor<1x128xi32> -> tensor<64x128xi32>
        %b_ptr_73 = tt.addptr %b_ptr_71, %b_ptr_72 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
        %a = tt.splat %R : i32 -> tensor<1x64xi32>
        %a_74 = arith.cmpi slt, %a_ptr_63, %a : tensor<1x64xi32>
        %a_75 = tt.broadcast %a_74 : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_76 = tt.load %a_ptr_66, %a_75, %cst_3 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.splat %R : i32 -> tensor<64x1xi32>
        %b_77 = arith.cmpi slt, %b_ptr, %b : tensor<64x1xi32>
        %b_78 = tt.broadcast %b_77 : tensor<64x1xi1> -> tensor<64x128xi1>
        %b_79 = tt.load %b_ptr_73, %b_78, %cst_4 : tensor<64x128x!tt.ptr<bf16>>
        %acc_80 = tt.dot %a_76, %b_79, %acc_56, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
        scf.yield %acc_80 : tensor<128x128xf32>
      }
      %acc_21 = tt.expand_dims %mmask_19 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %acc_22 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %acc_23 = tt.broadcast %acc_21 : tensor<128x1xi1> -> tensor<128x128xi1>
      %acc_24 = tt.broadcast %acc_22 : tensor<1x128xi1> -> tensor<128x128xi1>
      %acc_25 = arith.andi %acc_23, %acc_24 : tensor<128x128xi1>
      %acc_26 = arith.select %acc_25, %acc, %cst_2 : tensor<128x128xi1>, tensor<128x128xf32>
      %du_27 = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %du_28 = tt.splat %M : i32 -> tensor<128x1xi32>
      %du_29 = arith.cmpi slt, %du_27, %du_28 : tensor<128x1xi32>
      %du_30 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %du_31 = arith.cmpi slt, %du_30, %cst : tensor<1x128xi32>
      %du_32 = tt.broadcast %du_29 : tensor<128x1xi1> -> tensor<128x128xi1>
      %du_33 = tt.broadcast %du_31 : tensor<1x128xi1> -> tensor<128x128xi1>
      %du_34 = arith.andi %du_32, %du_33 : tensor<128x128xi1>
      %du_35 = arith.muli %du_27, %cst_8 : tensor<128x1xi32>
      %du_36 = tt.splat %DRES : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %du_37 = tt.addptr %du_36, %du_35 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %du_38 = tt.broadcast %du_37 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %du_39 = tt.broadcast %du_30 : tensor<1x128xi32> -> tensor<128x128xi32>
      %du_40 = tt.addptr %du_38, %du_39 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %du_41 = tt.load %du_40, %du_34, %cst_6 : tensor<128x128x!tt.ptr<bf16>>
      %du_42 = arith.extf %du_41 : tensor<128x128xbf16> to tensor<128x128xf32>
      %du_43 = arith.addf %acc_26, %du_42 : tensor<128x128xf32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_44 = tt.addptr %x, %du_35 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_45 = tt.broadcast %x_44 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_46 = tt.addptr %x_45, %du_39 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_47 = tt.load %x_46, %du_34, %cst_6 : tensor<128x128x!tt.ptr<bf16>>
      %x_48 = arith.extf %x_47 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_49 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %rstd_50 = tt.addptr %rstd_49, %offs_m_11 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %rstd_51 = tt.load %rstd_50, %mmask_19, %cst_5 : tensor<128x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_51 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_52 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_53 = arith.mulf %x_48, %xhat_52 : tensor<128x128xf32>
      %1 = arith.muli %pid, %c256_i32 : i32
      %2 = tt.addptr %DGP, %1 : !tt.ptr<f32>, i32
      %3 = tt.splat %2 : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
      %4 = tt.addptr %3, %offs_n_18 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
      %5 = arith.mulf %du_43, %xhat_53 : tensor<128x128xf32>
      %6 = "tt.reduce"(%5) <{axis = 0 : i32}> ({
      ^bb0(%arg11: f32, %arg12: f32):
        %12 = arith.addf %arg11, %arg12 : f32
        tt.reduce.return %12 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      tt.store %4, %6 : tensor<128x!tt.ptr<f32>>
      %c2_54 = "tt.reduce"(%5) <{axis = 1 : i32}> ({
      ^bb0(%c2_56: f32, %c2_57: f32):
        %c2_58 = arith.addf %c2_56, %c2_57 : f32
        tt.reduce.return %c2_58 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %c2_55 = arith.addf %c2_16, %c2_54 : tensor<128xf32>
      %7 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %8 = tt.addptr %7, %du_35 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %9 = tt.broadcast %8 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %10 = tt.addptr %9, %du_39 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %11 = arith.truncf %du_43 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %10, %11, %du_34 : tensor<128x128x!tt.ptr<bf16>>
      scf.yield %c2_55 : tensor<128xf32>
    }
    %0 = arith.divf %c2, %cst_7 : tensor<128xf32>
    %rstd = tt.splat %M : i32 -> tensor<128xi32>
    %rstd_12 = arith.cmpi slt, %offs_m_11, %rstd : tensor<128xi32>
    %rstd_13 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %rstd_14 = tt.addptr %rstd_13, %offs_m_11 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    %rstd_15 = tt.load %rstd_14, %rstd_12, %cst_5 : tensor<128x!tt.ptr<f32>>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_m_9 : tensor<128xi32>
      %p = tt.expand_dims %offs_m_11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %p_18 = arith.muli %p, %cst_8 : tensor<128x1xi32>
      %p_19 = tt.splat %DX : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %p_20 = tt.addptr %p_19, %p_18 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %p_21 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %p_22 = tt.broadcast %p_20 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %p_23 = tt.broadcast %p_21 : tensor<1x128xi32> -> tensor<128x128xi32>
      %p_24 = tt.addptr %p_22, %p_23 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %du = tt.splat %M : i32 -> tensor<128x1xi32>
      %du_25 = arith.cmpi slt, %p, %du : tensor<128x1xi32>
      %du_26 = arith.cmpi slt, %p_21, %cst : tensor<1x128xi32>
      %du_27 = tt.broadcast %du_25 : tensor<128x1xi1> -> tensor<128x128xi1>
      %du_28 = tt.broadcast %du_26 : tensor<1x128xi1> -> tensor<128x128xi1>
      %du_29 = arith.andi %du_27, %du_28 : tensor<128x128xi1>
      %du_30 = tt.load %p_24, %du_29, %cst_6 : tensor<128x128x!tt.ptr<bf16>>
      %du_31 = arith.extf %du_30 : tensor<128x128xbf16> to tensor<128x128xf32>
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_32 = tt.addptr %x, %p_18 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_33 = tt.broadcast %x_32 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %x_34 = tt.addptr %x_33, %p_23 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %x_35 = tt.load %x_34, %du_29, %cst_6 : tensor<128x128x!tt.ptr<bf16>>
      %x_36 = arith.extf %x_35 : tensor<128x128xbf16> to tensor<128x128xf32>
      %rstd_37 = tt.load %rstd_14, %rstd_12, %cst_5 : tensor<128x!tt.ptr<f32>>
      %xhat = tt.expand_dims %rstd_37 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %xhat_38 = tt.broadcast %xhat : tensor<128x1xf32> -> tensor<128x128xf32>
      %xhat_39 = arith.mulf %x_36, %xhat_38 : tensor<128x128xf32>
      %1 = tt.expand_dims %0 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %2 = tt.broadcast %1 : tensor<128x1xf32> -> tensor<128x128xf32>
      %3 = arith.mulf %xhat_39, %2 : tensor<128x128xf32>
      %4 = arith.subf %du_31, %3 : tensor<128x128xf32>
      %5 = tt.expand_dims %rstd_15 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %6 = tt.broadcast %5 : tensor<128x1xf32> -> tensor<128x128xf32>
      %7 = arith.mulf %4, %6 : tensor<128x128xf32>
      %8 = arith.truncf %7 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %p_24, %8, %du_29 : tensor<128x128x!tt.ptr<bf16>>
    }
    tt.return
  }
}
