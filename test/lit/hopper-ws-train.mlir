// hopper-ws{post-norm=true} on the post-norm training forward (kernels/postnorm_gemm.py's
// *_train_naive): the naive post-norm's two passes over the row whose first pass also stores h,
// the tile before the norm, to a second matrix (rule 9). Without its row statistics
// (SAVE_STATS=False: the backward computes them from h) h becomes the template's second output
// tile, stored by TMA through the staging tile before the exchange; with them (rstd / mean
// stored after the normalizing loop) the kernel is refused. Positive cases first, then bail-outs.
// Inputs: test/lit/inputs/hopper_ws_train_kernels.py.
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{post-norm=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark

// RMSNorm with bias and residual, a row of 4 N tiles: five descriptors (x, W, z, the residual
// and h), h's TMA store before the stamped word of the row sum, z's after the exchange.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-3: !tt.tensordesc<tensor<128x256xbf16
// CHECK: ttg.warp_specialize
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: st.relaxed.gpu.global.b64
// CHECK: ttng.async_tma_copy_local_to_global
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 rows-exchanged(1), persistent, B [N, K]; {{.*}}the residual tile loaded by TMA into the output's staging tile during the k-loop; post-norm: the row's 4 N tiles on 4 CTAs of one wave, 1 partial row sum(s) exchanged through global memory (stamped words), the tile normalized in fp32 in the epilogue; side outputs of the row's first pass: a second output tile ({{.*}}) stored by TMA through the staging tile before the exchange

module {
  tt.func public @rms_train_residual(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %H: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c128_i32 = arith.constant 128 : i32
    %c256_i32 = arith.constant 256 : i32
    %rstd = arith.constant dense<1.024000e+03> : tensor<128xf32>
    %rstd_0 = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst = arith.constant dense<1024> : tensor<256xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %ss = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c4_i32 = arith.constant 4 : i32
    %c63_i32 = arith.constant 63 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %c64_i32 = arith.constant 64 : i32
    %cst_4 = arith.constant dense<1024> : tensor<1x256xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c128_i32 : i32
    %offs_m_5 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_6 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<128xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_8 = arith.remsi %offs_m_7, %rows : tensor<128xi32>
    %ss_9 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_15 = %ss) -> (tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c256_i32 : i32
      %offs_n_16 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<256xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<256xi32>
      %wrows = arith.remsi %offs_n_18, %cst : tensor<256xi32>
      %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %acc = arith.addi %K, %c63_i32 : i32
      %acc_19 = arith.divsi %acc, %c64_i32 : i32
      %acc_20 = scf.for %k = %c0_i32 to %acc_19 step %c1_i32 iter_args(%acc_49 = %cst_3) -> (tensor<128x256xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_50 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
        %a_ptr_51 = arith.muli %a_ptr, %a_ptr_50 : tensor<128x1xi32>
        %a_ptr_52 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_53 = tt.addptr %a_ptr_52, %a_ptr_51 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_54 = arith.muli %k, %c64_i32 : i32
        %a_ptr_55 = tt.splat %a_ptr_54 : i32 -> tensor<128x1xi32>
        %a_ptr_56 = tt.addptr %a_ptr_53, %a_ptr_55 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_57 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_58 = tt.broadcast %a_ptr_56 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_59 = tt.broadcast %a_ptr_57 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_60 = tt.addptr %a_ptr_58, %a_ptr_59 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
        %b_ptr_61 = tt.splat %stride_wn : i32 -> tensor<1x256xi32>
        %b_ptr_62 = arith.muli %b_ptr, %b_ptr_61 : tensor<1x256xi32>
        %b_ptr_63 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
        %b_ptr_64 = tt.addptr %b_ptr_63, %b_ptr_62 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_ptr_65 = tt.splat %a_ptr_54 : i32 -> tensor<1x256xi32>
        %b_ptr_66 = tt.addptr %b_ptr_64, %b_ptr_65 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_ptr_67 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_68 = tt.broadcast %b_ptr_66 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
        %b_ptr_69 = tt.broadcast %b_ptr_67 : tensor<64x1xi32> -> tensor<64x256xi32>
        %b_ptr_70 = tt.addptr %b_ptr_68, %b_ptr_69 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
        %a = tt.load %a_ptr_60 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_70 : tensor<64x256x!tt.ptr<bf16>>
        %acc_71 = tt.dot %a, %b, %acc_49, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        scf.yield %acc_71 : tensor<128x256xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_18, %cst : tensor<256xi32>
      %acc_21 = tt.splat %BIAS : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %acc_22 = tt.addptr %acc_21, %offs_n_18 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %acc_23 = tt.load %acc_22, %nmask, %cst_2 : tensor<256x!tt.ptr<bf16>>
      %acc_24 = arith.extf %acc_23 : tensor<256xbf16> to tensor<256xf32>
      %acc_25 = tt.expand_dims %acc_24 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %acc_26 = tt.broadcast %acc_25 : tensor<1x256xf32> -> tensor<128x256xf32>
      %acc_27 = arith.addf %acc_20, %acc_26 : tensor<128x256xf32>
      %rmask = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %rmask_28 = tt.splat %M : i32 -> tensor<128x1xi32>
      %rmask_29 = arith.cmpi slt, %rmask, %rmask_28 : tensor<128x1xi32>
      %rmask_30 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<256xi1> -> tensor<1x256xi1>
      %rmask_31 = tt.broadcast %rmask_29 : tensor<128x1xi1> -> tensor<128x256xi1>
      %rmask_32 = tt.broadcast %rmask_30 : tensor<1x256xi1> -> tensor<128x256xi1>
      %rmask_33 = arith.andi %rmask_31, %rmask_32 : tensor<128x256xi1>
      %acc_34 = tt.splat %stride_rm : i32 -> tensor<128x1xi32>
      %acc_35 = arith.muli %rmask, %acc_34 : tensor<128x1xi32>
      %acc_36 = tt.splat %RES : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %acc_37 = tt.addptr %acc_36, %acc_35 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %acc_38 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %acc_39 = tt.broadcast %acc_37 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %acc_40 = tt.broadcast %acc_38 : tensor<1x256xi32> -> tensor<128x256xi32>
      %acc_41 = tt.addptr %acc_39, %acc_40 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %acc_42 = tt.load %acc_41, %rmask_33, %cst_1 : tensor<128x256x!tt.ptr<bf16>>
      %acc_43 = arith.extf %acc_42 : tensor<128x256xbf16> to tensor<128x256xf32>
      %acc_44 = arith.addf %acc_27, %acc_43 : tensor<128x256xf32>
      %acc_45 = arith.select %rmask_32, %acc_44, %cst_3 : tensor<128x256xi1>, tensor<128x256xf32>
      %ss_46 = arith.mulf %acc_45, %acc_45 : tensor<128x256xf32>
      %ss_47 = "tt.reduce"(%ss_46) <{axis = 1 : i32}> ({
      ^bb0(%ss_49: f32, %ss_50: f32):
        %ss_51 = arith.addf %ss_49, %ss_50 : f32
        tt.reduce.return %ss_51 : f32
      }) : (tensor<128x256xf32>) -> tensor<128xf32>
      %ss_48 = arith.addf %ss_15, %ss_47 : tensor<128xf32>
      %1 = arith.cmpi slt, %acc_38, %cst_4 : tensor<1x256xi32>
      %2 = tt.broadcast %1 : tensor<1x256xi1> -> tensor<128x256xi1>
      %3 = arith.andi %rmask_31, %2 : tensor<128x256xi1>
      %4 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %5 = arith.muli %rmask, %4 : tensor<128x1xi32>
      %6 = tt.splat %H : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %7 = tt.addptr %6, %5 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %8 = tt.broadcast %7 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %9 = tt.addptr %8, %acc_40 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %10 = arith.truncf %acc_45 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %9, %10, %3 : tensor<128x256x!tt.ptr<bf16>>
      %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %5 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %13 = tt.broadcast %12 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %14 = tt.addptr %13, %acc_40 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      tt.store %14, %10, %3 : tensor<128x256x!tt.ptr<bf16>>
      scf.yield %ss_48 : tensor<128xf32>
    }
    %rstd_10 = arith.divf %ss_9, %rstd : tensor<128xf32>
    %rstd_11 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_12 = arith.addf %rstd_10, %rstd_11 : tensor<128xf32>
    %rstd_13 = math.sqrt %rstd_12 : tensor<128xf32>
    %rstd_14 = arith.divf %rstd_0, %rstd_13 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c256_i32 : i32
      %offs_n_15 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<256xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<256xi32>
      %y = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %y_18 = tt.splat %M : i32 -> tensor<128x1xi32>
      %y_19 = arith.cmpi slt, %y, %y_18 : tensor<128x1xi32>
      %y_20 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %y_21 = arith.cmpi slt, %y_20, %cst_4 : tensor<1x256xi32>
      %y_22 = tt.broadcast %y_19 : tensor<128x1xi1> -> tensor<128x256xi1>
      %y_23 = tt.broadcast %y_21 : tensor<1x256xi1> -> tensor<128x256xi1>
      %y_24 = arith.andi %y_22, %y_23 : tensor<128x256xi1>
      %y_25 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %y_26 = arith.muli %y, %y_25 : tensor<128x1xi32>
      %y_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_28 = tt.addptr %y_27, %y_26 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_29 = tt.broadcast %y_28 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %y_30 = tt.broadcast %y_20 : tensor<1x256xi32> -> tensor<128x256xi32>
      %y_31 = tt.addptr %y_29, %y_30 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %y_32 = tt.load %y_31, %y_24, %cst_1 : tensor<128x256x!tt.ptr<bf16>>
      %y_33 = arith.extf %y_32 : tensor<128x256xbf16> to tensor<128x256xf32>
      %g = arith.cmpi slt, %offs_n_17, %cst : tensor<256xi32>
      %g_34 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %g_35 = tt.addptr %g_34, %offs_n_17 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %g_36 = tt.load %g_35, %g, %cst_2 : tensor<256x!tt.ptr<bf16>>
      %g_37 = arith.extf %g_36 : tensor<256xbf16> to tensor<256xf32>
      %out = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %out_38 = tt.broadcast %out : tensor<128x1xf32> -> tensor<128x256xf32>
      %out_39 = arith.mulf %y_33, %out_38 : tensor<128x256xf32>
      %out_40 = tt.expand_dims %g_37 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %out_41 = tt.broadcast %out_40 : tensor<1x256xf32> -> tensor<128x256xf32>
      %out_42 = arith.mulf %out_39, %out_41 : tensor<128x256xf32>
      %1 = arith.truncf %out_42 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %y_31, %1, %y_24 : tensor<128x256x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// LayerNorm without bias or residual: two row sums exchanged, h as the second output.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 rows-exchanged(2), {{.*}}2 partial row sum(s) exchanged {{.*}}side outputs of the row's first pass: a second output tile ({{.*}}) stored by TMA

module {
  tt.func public @ln_train(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %H: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %MEAN: !tt.ptr<f32>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c128_i32 = arith.constant 128 : i32
    %c256_i32 = arith.constant 256 : i32
    %cst = arith.constant dense<1.024000e+03> : tensor<128xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_1 = arith.constant dense<1024> : tensor<256xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %c4_i32 = arith.constant 4 : i32
    %c63_i32 = arith.constant 63 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %c64_i32 = arith.constant 64 : i32
    %cst_5 = arith.constant dense<1024> : tensor<1x256xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c128_i32 : i32
    %offs_m_6 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_7 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_8 = arith.addi %offs_m_7, %offs_m_6 : tensor<128xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_9 = arith.remsi %offs_m_8, %rows : tensor<128xi32>
    %s2:2 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%s1 = %cst_0, %s2_18 = %cst_0) -> (tensor<128xf32>, tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c256_i32 : i32
      %offs_n_19 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %offs_n_20 = tt.splat %offs_n : i32 -> tensor<256xi32>
      %offs_n_21 = arith.addi %offs_n_20, %offs_n_19 : tensor<256xi32>
      %wrows = arith.remsi %offs_n_21, %cst_1 : tensor<256xi32>
      %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %acc = arith.addi %K, %c63_i32 : i32
      %acc_22 = arith.divsi %acc, %c64_i32 : i32
      %acc_23 = scf.for %k = %c0_i32 to %acc_22 step %c1_i32 iter_args(%acc_32 = %cst_4) -> (tensor<128x256xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_33 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
        %a_ptr_34 = arith.muli %a_ptr, %a_ptr_33 : tensor<128x1xi32>
        %a_ptr_35 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_36 = tt.addptr %a_ptr_35, %a_ptr_34 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_37 = arith.muli %k, %c64_i32 : i32
        %a_ptr_38 = tt.splat %a_ptr_37 : i32 -> tensor<128x1xi32>
        %a_ptr_39 = tt.addptr %a_ptr_36, %a_ptr_38 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_40 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_41 = tt.broadcast %a_ptr_39 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_42 = tt.broadcast %a_ptr_40 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_43 = tt.addptr %a_ptr_41, %a_ptr_42 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
        %b_ptr_44 = tt.splat %stride_wn : i32 -> tensor<1x256xi32>
        %b_ptr_45 = arith.muli %b_ptr, %b_ptr_44 : tensor<1x256xi32>
        %b_ptr_46 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
        %b_ptr_47 = tt.addptr %b_ptr_46, %b_ptr_45 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_ptr_48 = tt.splat %a_ptr_37 : i32 -> tensor<1x256xi32>
        %b_ptr_49 = tt.addptr %b_ptr_47, %b_ptr_48 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_ptr_50 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_51 = tt.broadcast %b_ptr_49 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
        %b_ptr_52 = tt.broadcast %b_ptr_50 : tensor<64x1xi32> -> tensor<64x256xi32>
        %b_ptr_53 = tt.addptr %b_ptr_51, %b_ptr_52 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
        %a = tt.load %a_ptr_43 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_53 : tensor<64x256x!tt.ptr<bf16>>
        %acc_54 = tt.dot %a, %b, %acc_32, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        scf.yield %acc_54 : tensor<128x256xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_21, %cst_1 : tensor<256xi32>
      %acc_24 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<256xi1> -> tensor<1x256xi1>
      %acc_25 = tt.broadcast %acc_24 : tensor<1x256xi1> -> tensor<128x256xi1>
      %acc_26 = arith.select %acc_25, %acc_23, %cst_4 : tensor<128x256xi1>, tensor<128x256xf32>
      %s1_27 = "tt.reduce"(%acc_26) <{axis = 1 : i32}> ({
      ^bb0(%s1_32: f32, %s1_33: f32):
        %s1_34 = arith.addf %s1_32, %s1_33 : f32
        tt.reduce.return %s1_34 : f32
      }) : (tensor<128x256xf32>) -> tensor<128xf32>
      %s1_28 = arith.addf %s1, %s1_27 : tensor<128xf32>
      %s2_29 = arith.mulf %acc_26, %acc_26 : tensor<128x256xf32>
      %s2_30 = "tt.reduce"(%s2_29) <{axis = 1 : i32}> ({
      ^bb0(%s2_32: f32, %s2_33: f32):
        %s2_34 = arith.addf %s2_32, %s2_33 : f32
        tt.reduce.return %s2_34 : f32
      }) : (tensor<128x256xf32>) -> tensor<128xf32>
      %s2_31 = arith.addf %s2_18, %s2_30 : tensor<128xf32>
      %1 = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %2 = tt.splat %M : i32 -> tensor<128x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<128x1xi32>
      %4 = tt.expand_dims %offs_n_21 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %5 = arith.cmpi slt, %4, %cst_5 : tensor<1x256xi32>
      %6 = tt.broadcast %3 : tensor<128x1xi1> -> tensor<128x256xi1>
      %7 = tt.broadcast %5 : tensor<1x256xi1> -> tensor<128x256xi1>
      %8 = arith.andi %6, %7 : tensor<128x256xi1>
      %9 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %10 = arith.muli %1, %9 : tensor<128x1xi32>
      %11 = tt.splat %H : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %10 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %13 = tt.broadcast %12 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %14 = tt.broadcast %4 : tensor<1x256xi32> -> tensor<128x256xi32>
      %15 = tt.addptr %13, %14 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %16 = arith.truncf %acc_26 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %15, %16, %8 : tensor<128x256x!tt.ptr<bf16>>
      %17 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %18 = tt.addptr %17, %10 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %19 = tt.broadcast %18 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %20 = tt.addptr %19, %14 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      tt.store %20, %16, %8 : tensor<128x256x!tt.ptr<bf16>>
      scf.yield %s1_28, %s2_31 : tensor<128xf32>, tensor<128xf32>
    }
    %mean = arith.divf %s2#0, %cst : tensor<128xf32>
    %rstd_10 = arith.divf %s2#1, %cst : tensor<128xf32>
    %rstd_11 = arith.mulf %mean, %mean : tensor<128xf32>
    %rstd_12 = arith.subf %rstd_10, %rstd_11 : tensor<128xf32>
    %rstd_13 = arith.maxnumf %rstd_12, %cst_0 : tensor<128xf32>
    %rstd_14 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_15 = arith.addf %rstd_13, %rstd_14 : tensor<128xf32>
    %rstd_16 = math.sqrt %rstd_15 : tensor<128xf32>
    %rstd_17 = arith.divf %rstd, %rstd_16 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c256_i32 : i32
      %offs_n_18 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %offs_n_19 = tt.splat %offs_n : i32 -> tensor<256xi32>
      %offs_n_20 = arith.addi %offs_n_19, %offs_n_18 : tensor<256xi32>
      %y = tt.expand_dims %offs_m_8 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %y_21 = tt.splat %M : i32 -> tensor<128x1xi32>
      %y_22 = arith.cmpi slt, %y, %y_21 : tensor<128x1xi32>
      %y_23 = tt.expand_dims %offs_n_20 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %y_24 = arith.cmpi slt, %y_23, %cst_5 : tensor<1x256xi32>
      %y_25 = tt.broadcast %y_22 : tensor<128x1xi1> -> tensor<128x256xi1>
      %y_26 = tt.broadcast %y_24 : tensor<1x256xi1> -> tensor<128x256xi1>
      %y_27 = arith.andi %y_25, %y_26 : tensor<128x256xi1>
      %y_28 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %y_29 = arith.muli %y, %y_28 : tensor<128x1xi32>
      %y_30 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_31 = tt.addptr %y_30, %y_29 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_32 = tt.broadcast %y_31 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %y_33 = tt.broadcast %y_23 : tensor<1x256xi32> -> tensor<128x256xi32>
      %y_34 = tt.addptr %y_32, %y_33 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %y_35 = tt.load %y_34, %y_27, %cst_2 : tensor<128x256x!tt.ptr<bf16>>
      %y_36 = arith.extf %y_35 : tensor<128x256xbf16> to tensor<128x256xf32>
      %g = arith.cmpi slt, %offs_n_20, %cst_1 : tensor<256xi32>
      %g_37 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %g_38 = tt.addptr %g_37, %offs_n_20 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %g_39 = tt.load %g_38, %g, %cst_3 : tensor<256x!tt.ptr<bf16>>
      %g_40 = arith.extf %g_39 : tensor<256xbf16> to tensor<256xf32>
      %beta = tt.splat %B : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %beta_41 = tt.addptr %beta, %offs_n_20 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %beta_42 = tt.load %beta_41, %g, %cst_3 : tensor<256x!tt.ptr<bf16>>
      %beta_43 = arith.extf %beta_42 : tensor<256xbf16> to tensor<256xf32>
      %out = tt.expand_dims %mean {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %out_44 = tt.broadcast %out : tensor<128x1xf32> -> tensor<128x256xf32>
      %out_45 = arith.subf %y_36, %out_44 : tensor<128x256xf32>
      %out_46 = tt.expand_dims %rstd_17 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %out_47 = tt.broadcast %out_46 : tensor<128x1xf32> -> tensor<128x256xf32>
      %out_48 = arith.mulf %out_45, %out_47 : tensor<128x256xf32>
      %out_49 = tt.expand_dims %g_40 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %out_50 = tt.broadcast %out_49 : tensor<1x256xf32> -> tensor<128x256xf32>
      %out_51 = arith.mulf %out_48, %out_50 : tensor<128x256xf32>
      %out_52 = tt.expand_dims %beta_43 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %out_53 = tt.broadcast %out_52 : tensor<1x256xf32> -> tensor<128x256xf32>
      %out_54 = arith.addf %out_51, %out_53 : tensor<128x256xf32>
      %1 = arith.truncf %out_54 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %y_34, %1, %y_27 : tensor<128x256x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: rstd stored after the normalizing loop (SAVE_STATS=True): a second store outside
// the GEMM's loop; the kernel is left as it was.
// CHECK-LABEL: tt.func public @negative_rms_train_stats
// CHECK-NOT: ttg.warp_specialize
// REMARK: [hopper-ws] missed: 2 stores outside the GEMM's loop over the row's N tiles; the normalizing loop stores the output once per tile

module {
  tt.func public @negative_rms_train_stats(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %H: !tt.ptr<bf16>, %RSTD: !tt.ptr<f32>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c128_i32 = arith.constant 128 : i32
    %c256_i32 = arith.constant 256 : i32
    %rstd = arith.constant dense<1.024000e+03> : tensor<128xf32>
    %rstd_0 = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst = arith.constant dense<1024> : tensor<256xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %ss = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c4_i32 = arith.constant 4 : i32
    %c63_i32 = arith.constant 63 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %c64_i32 = arith.constant 64 : i32
    %cst_4 = arith.constant dense<1024> : tensor<1x256xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c128_i32 : i32
    %offs_m_5 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_6 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_7 = arith.addi %offs_m_6, %offs_m_5 : tensor<128xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_8 = arith.remsi %offs_m_7, %rows : tensor<128xi32>
    %ss_9 = scf.for %n = %c0_i32 to %c4_i32 step %c1_i32 iter_args(%ss_15 = %ss) -> (tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c256_i32 : i32
      %offs_n_16 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<256xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_n_16 : tensor<256xi32>
      %wrows = arith.remsi %offs_n_18, %cst : tensor<256xi32>
      %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %acc = arith.addi %K, %c63_i32 : i32
      %acc_19 = arith.divsi %acc, %c64_i32 : i32
      %acc_20 = scf.for %k = %c0_i32 to %acc_19 step %c1_i32 iter_args(%acc_34 = %cst_3) -> (tensor<128x256xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_8 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_35 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
        %a_ptr_36 = arith.muli %a_ptr, %a_ptr_35 : tensor<128x1xi32>
        %a_ptr_37 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_38 = tt.addptr %a_ptr_37, %a_ptr_36 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_39 = arith.muli %k, %c64_i32 : i32
        %a_ptr_40 = tt.splat %a_ptr_39 : i32 -> tensor<128x1xi32>
        %a_ptr_41 = tt.addptr %a_ptr_38, %a_ptr_40 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_42 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_43 = tt.broadcast %a_ptr_41 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_44 = tt.broadcast %a_ptr_42 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_45 = tt.addptr %a_ptr_43, %a_ptr_44 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
        %b_ptr_46 = tt.splat %stride_wn : i32 -> tensor<1x256xi32>
        %b_ptr_47 = arith.muli %b_ptr, %b_ptr_46 : tensor<1x256xi32>
        %b_ptr_48 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
        %b_ptr_49 = tt.addptr %b_ptr_48, %b_ptr_47 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_ptr_50 = tt.splat %a_ptr_39 : i32 -> tensor<1x256xi32>
        %b_ptr_51 = tt.addptr %b_ptr_49, %b_ptr_50 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_ptr_52 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_53 = tt.broadcast %b_ptr_51 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
        %b_ptr_54 = tt.broadcast %b_ptr_52 : tensor<64x1xi32> -> tensor<64x256xi32>
        %b_ptr_55 = tt.addptr %b_ptr_53, %b_ptr_54 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
        %a = tt.load %a_ptr_45 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.load %b_ptr_55 : tensor<64x256x!tt.ptr<bf16>>
        %acc_56 = tt.dot %a, %b, %acc_34, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        scf.yield %acc_56 : tensor<128x256xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_18, %cst : tensor<256xi32>
      %acc_21 = tt.splat %BIAS : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %acc_22 = tt.addptr %acc_21, %offs_n_18 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %acc_23 = tt.load %acc_22, %nmask, %cst_2 : tensor<256x!tt.ptr<bf16>>
      %acc_24 = arith.extf %acc_23 : tensor<256xbf16> to tensor<256xf32>
      %acc_25 = tt.expand_dims %acc_24 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %acc_26 = tt.broadcast %acc_25 : tensor<1x256xf32> -> tensor<128x256xf32>
      %acc_27 = arith.addf %acc_20, %acc_26 : tensor<128x256xf32>
      %acc_28 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<256xi1> -> tensor<1x256xi1>
      %acc_29 = tt.broadcast %acc_28 : tensor<1x256xi1> -> tensor<128x256xi1>
      %acc_30 = arith.select %acc_29, %acc_27, %cst_3 : tensor<128x256xi1>, tensor<128x256xf32>
      %ss_31 = arith.mulf %acc_30, %acc_30 : tensor<128x256xf32>
      %ss_32 = "tt.reduce"(%ss_31) <{axis = 1 : i32}> ({
      ^bb0(%ss_34: f32, %ss_35: f32):
        %ss_36 = arith.addf %ss_34, %ss_35 : f32
        tt.reduce.return %ss_36 : f32
      }) : (tensor<128x256xf32>) -> tensor<128xf32>
      %ss_33 = arith.addf %ss_15, %ss_32 : tensor<128xf32>
      %4 = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %5 = tt.splat %M : i32 -> tensor<128x1xi32>
      %6 = arith.cmpi slt, %4, %5 : tensor<128x1xi32>
      %7 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %8 = arith.cmpi slt, %7, %cst_4 : tensor<1x256xi32>
      %9 = tt.broadcast %6 : tensor<128x1xi1> -> tensor<128x256xi1>
      %10 = tt.broadcast %8 : tensor<1x256xi1> -> tensor<128x256xi1>
      %11 = arith.andi %9, %10 : tensor<128x256xi1>
      %12 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %13 = arith.muli %4, %12 : tensor<128x1xi32>
      %14 = tt.splat %H : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %15 = tt.addptr %14, %13 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %16 = tt.broadcast %15 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %17 = tt.broadcast %7 : tensor<1x256xi32> -> tensor<128x256xi32>
      %18 = tt.addptr %16, %17 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %19 = arith.truncf %acc_30 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %18, %19, %11 : tensor<128x256x!tt.ptr<bf16>>
      %20 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %21 = tt.addptr %20, %13 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %22 = tt.broadcast %21 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %23 = tt.addptr %22, %17 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      tt.store %23, %19, %11 : tensor<128x256x!tt.ptr<bf16>>
      scf.yield %ss_33 : tensor<128xf32>
    }
    %rstd_10 = arith.divf %ss_9, %rstd : tensor<128xf32>
    %rstd_11 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_12 = arith.addf %rstd_10, %rstd_11 : tensor<128xf32>
    %rstd_13 = math.sqrt %rstd_12 : tensor<128xf32>
    %rstd_14 = arith.divf %rstd_0, %rstd_13 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c4_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c256_i32 : i32
      %offs_n_15 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %offs_n_16 = tt.splat %offs_n : i32 -> tensor<256xi32>
      %offs_n_17 = arith.addi %offs_n_16, %offs_n_15 : tensor<256xi32>
      %y = tt.expand_dims %offs_m_7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %y_18 = tt.splat %M : i32 -> tensor<128x1xi32>
      %y_19 = arith.cmpi slt, %y, %y_18 : tensor<128x1xi32>
      %y_20 = tt.expand_dims %offs_n_17 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %y_21 = arith.cmpi slt, %y_20, %cst_4 : tensor<1x256xi32>
      %y_22 = tt.broadcast %y_19 : tensor<128x1xi1> -> tensor<128x256xi1>
      %y_23 = tt.broadcast %y_21 : tensor<1x256xi1> -> tensor<128x256xi1>
      %y_24 = arith.andi %y_22, %y_23 : tensor<128x256xi1>
      %y_25 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %y_26 = arith.muli %y, %y_25 : tensor<128x1xi32>
      %y_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_28 = tt.addptr %y_27, %y_26 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_29 = tt.broadcast %y_28 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %y_30 = tt.broadcast %y_20 : tensor<1x256xi32> -> tensor<128x256xi32>
      %y_31 = tt.addptr %y_29, %y_30 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %y_32 = tt.load %y_31, %y_24, %cst_1 : tensor<128x256x!tt.ptr<bf16>>
      %y_33 = arith.extf %y_32 : tensor<128x256xbf16> to tensor<128x256xf32>
      %g = arith.cmpi slt, %offs_n_17, %cst : tensor<256xi32>
      %g_34 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %g_35 = tt.addptr %g_34, %offs_n_17 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %g_36 = tt.load %g_35, %g, %cst_2 : tensor<256x!tt.ptr<bf16>>
      %g_37 = arith.extf %g_36 : tensor<256xbf16> to tensor<256xf32>
      %out = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %out_38 = tt.broadcast %out : tensor<128x1xf32> -> tensor<128x256xf32>
      %out_39 = arith.mulf %y_33, %out_38 : tensor<128x256xf32>
      %out_40 = tt.expand_dims %g_37 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %out_41 = tt.broadcast %out_40 : tensor<1x256xf32> -> tensor<128x256xf32>
      %out_42 = arith.mulf %out_39, %out_41 : tensor<128x256xf32>
      %4 = arith.truncf %out_42 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %y_31, %4, %y_24 : tensor<128x256x!tt.ptr<bf16>>
    }
    %1 = arith.cmpi slt, %offs_m_7, %rows : tensor<128xi32>
    %2 = tt.splat %RSTD : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>>
    %3 = tt.addptr %2, %offs_m_7 : tensor<128x!tt.ptr<f32>>, tensor<128xi32>
    tt.store %3, %rstd_14, %1 : tensor<128x!tt.ptr<f32>>
    tt.return
  }
}
