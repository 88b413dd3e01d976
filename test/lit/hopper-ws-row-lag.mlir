// hopper-ws{row-lag=true} (after epilogue-norm, post-norm=true, the coop schedule): a post-norm
// row of several N tiles finished one tile late, after the next tile's k-loop, from a second
// staging tile. Positive cases first, then bail-outs. Inputs: test/lit/inputs/hopper_ws_row_lag_kernels.py.
// RUN: normfuse-opt --split-input-file --pass-pipeline='epilogue-norm,hopper-ws{post-norm=true,schedule=coop,row-lag=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark

// RMSNorm with bias, a row of 3 N tiles of 128: lowered with the lagged exchange (a second
// staging tile for the output).
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-2: ttg.local_alloc : () -> !ttg.memdesc<128x128xbf16, #shared, #smem, mutable>
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(1) rows-lagged, persistent
// REMARK-NOT: row-lag not applied

module {
  tt.func public @rms_three_tiles(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c128_i32 = arith.constant 128 : i32
    %rstd = arith.constant dense<2.640000e+02> : tensor<128xf32>
    %rstd_0 = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst = arith.constant dense<264> : tensor<128xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128xbf16>
    %ss = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c3_i32 = arith.constant 3 : i32
    %c63_i32 = arith.constant 63 : i32
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %c64_i32 = arith.constant 64 : i32
    %cst_6 = arith.constant dense<264> : tensor<1x128xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c128_i32 : i32
    %offs_m_7 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_8 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_9 = arith.addi %offs_m_8, %offs_m_7 : tensor<128xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_10 = arith.remsi %offs_m_9, %rows : tensor<128xi32>
    %ss_11 = scf.for %n = %c0_i32 to %c3_i32 step %c1_i32 iter_args(%ss_17 = %ss) -> (tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_18 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_19 = arith.addi %offs_n_18, %offs_m_7 : tensor<128xi32>
      %wrows = arith.remsi %offs_n_19, %cst : tensor<128xi32>
      %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %acc = arith.addi %K, %c63_i32 : i32
      %acc_20 = arith.divsi %acc, %c64_i32 : i32
      %acc_21 = scf.for %k = %c0_i32 to %acc_20 step %c1_i32 iter_args(%acc_35 = %cst_5) -> (tensor<128x128xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_36 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
        %a_ptr_37 = arith.muli %a_ptr, %a_ptr_36 : tensor<128x1xi32>
        %a_ptr_38 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_39 = tt.addptr %a_ptr_38, %a_ptr_37 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_40 = arith.muli %k, %c64_i32 : i32
        %a_ptr_41 = tt.splat %a_ptr_40 : i32 -> tensor<128x1xi32>
        %a_ptr_42 = tt.addptr %a_ptr_39, %a_ptr_41 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_43 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_44 = tt.broadcast %a_ptr_42 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_45 = tt.broadcast %a_ptr_43 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_46 = tt.addptr %a_ptr_44, %a_ptr_45 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
        %b_ptr_47 = tt.splat %stride_wn : i32 -> tensor<1x128xi32>
        %b_ptr_48 = arith.muli %b_ptr, %b_ptr_47 : tensor<1x128xi32>
        %b_ptr_49 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x128x!tt.ptr<bf16>>
        %b_ptr_50 = tt.addptr %b_ptr_49, %b_ptr_48 : tensor<1x128x!tt.ptr<bf16>>, tensor<1x128xi32>
        %b_ptr_51 = tt.splat %a_ptr_40 : i32 -> tensor<1x128xi32>
        %b_ptr_52 = tt.addptr %b_ptr_50, %b_ptr_51 : tensor<1x128x!tt.ptr<bf16>>, tensor<1x128xi32>
        %b_ptr_53 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_54 = tt.broadcast %b_ptr_52 : tensor<1x128x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
        %b_ptr_55 = tt.broadcast %b_ptr_53 : tensor<64x1xi32> -> tensor<64x128xi32>
        %b_ptr_56 = tt.addptr %b_ptr_54, %b_ptr_55 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
        %kmask = arith.subi %K, %a_ptr_40 : i32
        %kmask_57 = tt.splat %kmask : i32 -> tensor<64xi32>
        %kmask_58 = arith.cmpi slt, %offs_k, %kmask_57 : tensor<64xi32>
        %a = tt.expand_dims %kmask_58 {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
        %a_59 = tt.broadcast %a : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_60 = tt.load %a_ptr_46, %a_59, %cst_4 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.expand_dims %kmask_58 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %b_61 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x128xi1>
        %b_62 = tt.load %b_ptr_56, %b_61, %cst_3 : tensor<64x128x!tt.ptr<bf16>>
        %acc_63 = tt.dot %a_60, %b_62, %acc_35, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
        scf.yield %acc_63 : tensor<128x128xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_19, %cst : tensor<128xi32>
      %acc_22 = tt.splat %BIAS : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %acc_23 = tt.addptr %acc_22, %offs_n_19 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %acc_24 = tt.load %acc_23, %nmask, %cst_2 : tensor<128x!tt.ptr<bf16>>
      %acc_25 = arith.extf %acc_24 : tensor<128xbf16> to tensor<128xf32>
      %acc_26 = tt.expand_dims %acc_25 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %acc_27 = tt.broadcast %acc_26 : tensor<1x128xf32> -> tensor<128x128xf32>
      %acc_28 = arith.addf %acc_21, %acc_27 : tensor<128x128xf32>
      %acc_29 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %acc_30 = tt.broadcast %acc_29 : tensor<1x128xi1> -> tensor<128x128xi1>
      %acc_31 = arith.select %acc_30, %acc_28, %cst_5 : tensor<128x128xi1>, tensor<128x128xf32>
      %ss_32 = arith.mulf %acc_31, %acc_31 : tensor<128x128xf32>
      %ss_33 = "tt.reduce"(%ss_32) <{axis = 1 : i32}> ({
      ^bb0(%ss_35: f32, %ss_36: f32):
        %ss_37 = arith.addf %ss_35, %ss_36 : f32
        tt.reduce.return %ss_37 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %ss_34 = arith.addf %ss_17, %ss_33 : tensor<128xf32>
      %1 = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %2 = tt.splat %M : i32 -> tensor<128x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<128x1xi32>
      %4 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %5 = arith.cmpi slt, %4, %cst_6 : tensor<1x128xi32>
      %6 = tt.broadcast %3 : tensor<128x1xi1> -> tensor<128x128xi1>
      %7 = tt.broadcast %5 : tensor<1x128xi1> -> tensor<128x128xi1>
      %8 = arith.andi %6, %7 : tensor<128x128xi1>
      %9 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %10 = arith.muli %1, %9 : tensor<128x1xi32>
      %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %10 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %13 = tt.broadcast %12 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %14 = tt.broadcast %4 : tensor<1x128xi32> -> tensor<128x128xi32>
      %15 = tt.addptr %13, %14 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %16 = arith.truncf %acc_31 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %15, %16, %8 : tensor<128x128x!tt.ptr<bf16>>
      scf.yield %ss_34 : tensor<128xf32>
    }
    %rstd_12 = arith.divf %ss_11, %rstd : tensor<128xf32>
    %rstd_13 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_14 = arith.addf %rstd_12, %rstd_13 : tensor<128xf32>
    %rstd_15 = math.sqrt %rstd_14 : tensor<128xf32>
    %rstd_16 = arith.divf %rstd_0, %rstd_15 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c3_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_17 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_18 = arith.addi %offs_n_17, %offs_m_7 : tensor<128xi32>
      %y = tt.expand_dims %offs_m_9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %y_19 = tt.splat %M : i32 -> tensor<128x1xi32>
      %y_20 = arith.cmpi slt, %y, %y_19 : tensor<128x1xi32>
      %y_21 = tt.expand_dims %offs_n_18 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %y_22 = arith.cmpi slt, %y_21, %cst_6 : tensor<1x128xi32>
      %y_23 = tt.broadcast %y_20 : tensor<128x1xi1> -> tensor<128x128xi1>
      %y_24 = tt.broadcast %y_22 : tensor<1x128xi1> -> tensor<128x128xi1>
      %y_25 = arith.andi %y_23, %y_24 : tensor<128x128xi1>
      %y_26 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %y_27 = arith.muli %y, %y_26 : tensor<128x1xi32>
      %y_28 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_29 = tt.addptr %y_28, %y_27 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_30 = tt.broadcast %y_29 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %y_31 = tt.broadcast %y_21 : tensor<1x128xi32> -> tensor<128x128xi32>
      %y_32 = tt.addptr %y_30, %y_31 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %y_33 = tt.load %y_32, %y_25, %cst_1 : tensor<128x128x!tt.ptr<bf16>>
      %y_34 = arith.extf %y_33 : tensor<128x128xbf16> to tensor<128x128xf32>
      %g = arith.cmpi slt, %offs_n_18, %cst : tensor<128xi32>
      %g_35 = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %g_36 = tt.addptr %g_35, %offs_n_18 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %g_37 = tt.load %g_36, %g, %cst_2 : tensor<128x!tt.ptr<bf16>>
      %g_38 = arith.extf %g_37 : tensor<128xbf16> to tensor<128xf32>
      %out = tt.expand_dims %rstd_16 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %out_39 = tt.broadcast %out : tensor<128x1xf32> -> tensor<128x128xf32>
      %out_40 = arith.mulf %y_34, %out_39 : tensor<128x128xf32>
      %out_41 = tt.expand_dims %g_38 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %out_42 = tt.broadcast %out_41 : tensor<1x128xf32> -> tensor<128x128xf32>
      %out_43 = arith.mulf %out_40, %out_42 : tensor<128x128xf32>
      %1 = arith.truncf %out_43 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %y_32, %1, %y_25 : tensor<128x128x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// Bail out: LayerNorm's two row sums (the lagged tile is re-read rounded): lowered without it
// (one staging tile).
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-1: ttg.local_alloc : () -> !ttg.memdesc<128x128xbf16, #shared, #smem, mutable>
// CHECK-NOT: ttg.local_alloc : () -> !ttg.memdesc<128x128xbf16, #shared, #smem, mutable>
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(2), persistent
// REMARK-SAME: row-lag not applied: LayerNorm's two row sums

module {
  tt.func public @negative_layernorm(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_rm: i32, %stride_ym: i32, %eps: f32) attributes {noinline = false} {
    %c128_i32 = arith.constant 128 : i32
    %cst = arith.constant dense<2.640000e+02> : tensor<128xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_1 = arith.constant dense<264> : tensor<128xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128xbf16>
    %c3_i32 = arith.constant 3 : i32
    %c63_i32 = arith.constant 63 : i32
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<64x128xbf16>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %c64_i32 = arith.constant 64 : i32
    %cst_7 = arith.constant dense<264> : tensor<1x128xi32>
    %0 = tt.get_program_id x : i32
    %offs_m = arith.muli %0, %c128_i32 : i32
    %offs_m_8 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_9 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_10 = arith.addi %offs_m_9, %offs_m_8 : tensor<128xi32>
    %rows = tt.splat %M : i32 -> tensor<128xi32>
    %rows_11 = arith.remsi %offs_m_10, %rows : tensor<128xi32>
    %s2:2 = scf.for %n = %c0_i32 to %c3_i32 step %c1_i32 iter_args(%s1 = %cst_0, %s2_20 = %cst_0) -> (tensor<128xf32>, tensor<128xf32>)  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_21 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_22 = arith.addi %offs_n_21, %offs_m_8 : tensor<128xi32>
      %wrows = arith.remsi %offs_n_22, %cst_1 : tensor<128xi32>
      %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %acc = arith.addi %K, %c63_i32 : i32
      %acc_23 = arith.divsi %acc, %c64_i32 : i32
      %acc_24 = scf.for %k = %c0_i32 to %acc_23 step %c1_i32 iter_args(%acc_33 = %cst_6) -> (tensor<128x128xf32>)  : i32 {
        %a_ptr = tt.expand_dims %rows_11 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_ptr_34 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
        %a_ptr_35 = arith.muli %a_ptr, %a_ptr_34 : tensor<128x1xi32>
        %a_ptr_36 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_ptr_37 = tt.addptr %a_ptr_36, %a_ptr_35 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_38 = arith.muli %k, %c64_i32 : i32
        %a_ptr_39 = tt.splat %a_ptr_38 : i32 -> tensor<128x1xi32>
        %a_ptr_40 = tt.addptr %a_ptr_37, %a_ptr_39 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_ptr_41 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_ptr_42 = tt.broadcast %a_ptr_40 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_ptr_43 = tt.broadcast %a_ptr_41 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_ptr_44 = tt.addptr %a_ptr_42, %a_ptr_43 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %b_ptr = tt.expand_dims %wrows {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
        %b_ptr_45 = tt.splat %stride_wn : i32 -> tensor<1x128xi32>
        %b_ptr_46 = arith.muli %b_ptr, %b_ptr_45 : tensor<1x128xi32>
        %b_ptr_47 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x128x!tt.ptr<bf16>>
        %b_ptr_48 = tt.addptr %b_ptr_47, %b_ptr_46 : tensor<1x128x!tt.ptr<bf16>>, tensor<1x128xi32>
        %b_ptr_49 = tt.splat %a_ptr_38 : i32 -> tensor<1x128xi32>
        %b_ptr_50 = tt.addptr %b_ptr_48, %b_ptr_49 : tensor<1x128x!tt.ptr<bf16>>, tensor<1x128xi32>
        %b_ptr_51 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_ptr_52 = tt.broadcast %b_ptr_50 : tensor<1x128x!tt.ptr<bf16>> -> tensor<64x128x!tt.ptr<bf16>>
        %b_ptr_53 = tt.broadcast %b_ptr_51 : tensor<64x1xi32> -> tensor<64x128xi32>
        %b_ptr_54 = tt.addptr %b_ptr_52, %b_ptr_53 : tensor<64x128x!tt.ptr<bf16>>, tensor<64x128xi32>
        %kmask = arith.subi %K, %a_ptr_38 : i32
        %kmask_55 = tt.splat %kmask : i32 -> tensor<64xi32>
        %kmask_56 = arith.cmpi slt, %offs_k, %kmask_55 : tensor<64xi32>
        %a = tt.expand_dims %kmask_56 {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
        %a_57 = tt.broadcast %a : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_58 = tt.load %a_ptr_44, %a_57, %cst_5 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.expand_dims %kmask_56 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %b_59 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x128xi1>
        %b_60 = tt.load %b_ptr_54, %b_59, %cst_4 : tensor<64x128x!tt.ptr<bf16>>
        %acc_61 = tt.dot %a_58, %b_60, %acc_33, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x128xbf16> -> tensor<128x128xf32>
        scf.yield %acc_61 : tensor<128x128xf32>
      }
      %nmask = arith.cmpi slt, %offs_n_22, %cst_1 : tensor<128xi32>
      %acc_25 = tt.expand_dims %nmask {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %acc_26 = tt.broadcast %acc_25 : tensor<1x128xi1> -> tensor<128x128xi1>
      %acc_27 = arith.select %acc_26, %acc_24, %cst_6 : tensor<128x128xi1>, tensor<128x128xf32>
      %s1_28 = "tt.reduce"(%acc_27) <{axis = 1 : i32}> ({
      ^bb0(%s1_33: f32, %s1_34: f32):
        %s1_35 = arith.addf %s1_33, %s1_34 : f32
        tt.reduce.return %s1_35 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %s1_29 = arith.addf %s1, %s1_28 : tensor<128xf32>
      %s2_30 = arith.mulf %acc_27, %acc_27 : tensor<128x128xf32>
      %s2_31 = "tt.reduce"(%s2_30) <{axis = 1 : i32}> ({
      ^bb0(%s2_33: f32, %s2_34: f32):
        %s2_35 = arith.addf %s2_33, %s2_34 : f32
        tt.reduce.return %s2_35 : f32
      }) : (tensor<128x128xf32>) -> tensor<128xf32>
      %s2_32 = arith.addf %s2_20, %s2_31 : tensor<128xf32>
      %1 = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %2 = tt.splat %M : i32 -> tensor<128x1xi32>
      %3 = arith.cmpi slt, %1, %2 : tensor<128x1xi32>
      %4 = tt.expand_dims %offs_n_22 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %5 = arith.cmpi slt, %4, %cst_7 : tensor<1x128xi32>
      %6 = tt.broadcast %3 : tensor<128x1xi1> -> tensor<128x128xi1>
      %7 = tt.broadcast %5 : tensor<1x128xi1> -> tensor<128x128xi1>
      %8 = arith.andi %6, %7 : tensor<128x128xi1>
      %9 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %10 = arith.muli %1, %9 : tensor<128x1xi32>
      %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %10 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %13 = tt.broadcast %12 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %14 = tt.broadcast %4 : tensor<1x128xi32> -> tensor<128x128xi32>
      %15 = tt.addptr %13, %14 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %16 = arith.truncf %acc_27 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %15, %16, %8 : tensor<128x128x!tt.ptr<bf16>>
      scf.yield %s1_29, %s2_32 : tensor<128xf32>, tensor<128xf32>
    }
    %mean = arith.divf %s2#0, %cst : tensor<128xf32>
    %rstd_12 = arith.divf %s2#1, %cst : tensor<128xf32>
    %rstd_13 = arith.mulf %mean, %mean : tensor<128xf32>
    %rstd_14 = arith.subf %rstd_12, %rstd_13 : tensor<128xf32>
    %rstd_15 = arith.maxnumf %rstd_14, %cst_0 : tensor<128xf32>
    %rstd_16 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_17 = arith.addf %rstd_15, %rstd_16 : tensor<128xf32>
    %rstd_18 = math.sqrt %rstd_17 : tensor<128xf32>
    %rstd_19 = arith.divf %rstd, %rstd_18 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c3_i32 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c128_i32 : i32
      %offs_n_20 = tt.splat %offs_n : i32 -> tensor<128xi32>
      %offs_n_21 = arith.addi %offs_n_20, %offs_m_8 : tensor<128xi32>
      %y = tt.expand_dims %offs_m_10 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %y_22 = tt.splat %M : i32 -> tensor<128x1xi32>
      %y_23 = arith.cmpi slt, %y, %y_22 : tensor<128x1xi32>
      %y_24 = tt.expand_dims %offs_n_21 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %y_25 = arith.cmpi slt, %y_24, %cst_7 : tensor<1x128xi32>
      %y_26 = tt.broadcast %y_23 : tensor<128x1xi1> -> tensor<128x128xi1>
      %y_27 = tt.broadcast %y_25 : tensor<1x128xi1> -> tensor<128x128xi1>
      %y_28 = arith.andi %y_26, %y_27 : tensor<128x128xi1>
      %y_29 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %y_30 = arith.muli %y, %y_29 : tensor<128x1xi32>
      %y_31 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_32 = tt.addptr %y_31, %y_30 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_33 = tt.broadcast %y_32 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %y_34 = tt.broadcast %y_24 : tensor<1x128xi32> -> tensor<128x128xi32>
      %y_35 = tt.addptr %y_33, %y_34 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %y_36 = tt.load %y_35, %y_28, %cst_2 : tensor<128x128x!tt.ptr<bf16>>
      %y_37 = arith.extf %y_36 : tensor<128x128xbf16> to tensor<128x128xf32>
      %g = arith.cmpi slt, %offs_n_21, %cst_1 : tensor<128xi32>
      %g_38 = tt.splat %G : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %g_39 = tt.addptr %g_38, %offs_n_21 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %g_40 = tt.load %g_39, %g, %cst_3 : tensor<128x!tt.ptr<bf16>>
      %g_41 = arith.extf %g_40 : tensor<128xbf16> to tensor<128xf32>
      %beta = tt.splat %B : !tt.ptr<bf16> -> tensor<128x!tt.ptr<bf16>>
      %beta_42 = tt.addptr %beta, %offs_n_21 : tensor<128x!tt.ptr<bf16>>, tensor<128xi32>
      %beta_43 = tt.load %beta_42, %g, %cst_3 : tensor<128x!tt.ptr<bf16>>
      %beta_44 = arith.extf %beta_43 : tensor<128xbf16> to tensor<128xf32>
      %out = tt.expand_dims %mean {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %out_45 = tt.broadcast %out : tensor<128x1xf32> -> tensor<128x128xf32>
      %out_46 = arith.subf %y_37, %out_45 : tensor<128x128xf32>
      %out_47 = tt.expand_dims %rstd_19 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %out_48 = tt.broadcast %out_47 : tensor<128x1xf32> -> tensor<128x128xf32>
      %out_49 = arith.mulf %out_46, %out_48 : tensor<128x128xf32>
      %out_50 = tt.expand_dims %g_41 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %out_51 = tt.broadcast %out_50 : tensor<1x128xf32> -> tensor<128x128xf32>
      %out_52 = arith.mulf %out_49, %out_51 : tensor<128x128xf32>
      %out_53 = tt.expand_dims %beta_44 {axis = 0 : i32} : tensor<128xf32> -> tensor<1x128xf32>
      %out_54 = tt.broadcast %out_53 : tensor<1x128xf32> -> tensor<128x128xf32>
      %out_55 = arith.addf %out_52, %out_54 : tensor<128x128xf32>
      %1 = arith.truncf %out_55 : tensor<128x128xf32> to tensor<128x128xbf16>
      tt.store %y_35, %1, %y_28 : tensor<128x128x!tt.ptr<bf16>>
    }
    tt.return
  }
}
