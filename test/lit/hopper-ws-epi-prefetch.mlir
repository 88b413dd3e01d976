// hopper-ws{epi-prefetch=true}: the epilogue's 1-D loads (a bias here; LayerNorm's column sums)
// and their addresses go to a hook of their own that each consumer runs before the tile's k-loop,
// so the load sits ahead of the k-loop in the lowered kernel; by default it follows the k-loop.
// Where the epilogue loads no 1-D vector (RMSNorm, no bias) and for a post-norm's rows, the remark
// says why it does not apply. Inputs: the first three chunks of hopper-ws.mlir (both files written
// by test/lit/inputs/hopper_ws_kernels.py).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{epi-prefetch=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>/dev/null | FileCheck %s --check-prefix=DEFAULT
// RUN: normfuse-opt --split-input-file --pass-pipeline='epilogue-norm,hopper-ws{post-norm=true,epi-prefetch=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=POST

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4 {{.*}}epi-prefetch not applied: the epilogue loads no 1-D vector
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 epi-prefetch, persistent
// REMARK-NOT: epi-prefetch not applied
// REMARK: missed: a post-norm whose row spans 2 N tiles
// POST: applied: {{.*}}epi-prefetch not applied: the epilogue loads no 1-D vector
// POST: applied: {{.*}} coop w8 epi-prefetch, persistent
// POST: applied: {{.*}}rows-exchanged(1){{.*}}epi-prefetch not applied: a post-norm's rows keep their loads in the epilogue

// RMSNorm pre-norm (no bias): nothing to prefetch.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// DEFAULT-LABEL: tt.func public @ws_gemm_kernel
module {
  tt.func public @rms_fused(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %N: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32, %eps: f32) attributes {noinline = false} {
    %c63_i32 = arith.constant 63 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %acc = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %c64_i32 = arith.constant 64 : i32
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_1 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_2 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_3 = arith.addi %rm_2, %rm_1 : tensor<128xi32>
    %rn = arith.muli %pid_n, %c256_i32 : i32
    %rn_4 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %rn_5 = tt.splat %rn : i32 -> tensor<256xi32>
    %rn_6 = arith.addi %rn_5, %rn_4 : tensor<256xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %0 = arith.addi %K, %c63_i32 : i32
    %1 = arith.divsi %0, %c64_i32 : i32
    %ss_7:2 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%acc_15 = %acc, %ss_16 = %ss) -> (tensor<128x256xf32>, tensor<128xf32>)  : i32 {
      %km = arith.muli %k, %c64_i32 : i32
      %km_17 = arith.subi %K, %km : i32
      %km_18 = tt.splat %km_17 : i32 -> tensor<64xi32>
      %km_19 = arith.cmpi slt, %rk, %km_18 : tensor<64xi32>
      %a = tt.expand_dims %km_19 {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
      %a_20 = tt.splat %M : i32 -> tensor<128xi32>
      %a_21 = arith.remsi %rm_3, %a_20 : tensor<128xi32>
      %a_22 = tt.expand_dims %a_21 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_23 = tt.splat %sx : i32 -> tensor<128x1xi32>
      %a_24 = arith.muli %a_22, %a_23 : tensor<128x1xi32>
      %a_25 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_26 = tt.addptr %a_25, %a_24 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_27 = tt.splat %km : i32 -> tensor<64xi32>
      %a_28 = arith.addi %a_27, %rk : tensor<64xi32>
      %a_29 = tt.expand_dims %a_28 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_30 = tt.broadcast %a_26 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_31 = tt.broadcast %a_29 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_32 = tt.addptr %a_30, %a_31 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %a_33 = tt.broadcast %a : tensor<1x64xi1> -> tensor<128x64xi1>
      %a_34 = tt.load %a_32, %a_33, %cst_0 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.expand_dims %km_19 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %b_35 = tt.splat %N : i32 -> tensor<256xi32>
      %b_36 = arith.remsi %rn_6, %b_35 : tensor<256xi32>
      %b_37 = tt.expand_dims %b_36 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_38 = tt.splat %sw : i32 -> tensor<1x256xi32>
      %b_39 = arith.muli %b_37, %b_38 : tensor<1x256xi32>
      %b_40 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
      %b_41 = tt.addptr %b_40, %b_39 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
      %b_42 = tt.expand_dims %a_28 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_43 = tt.broadcast %b_41 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_44 = tt.broadcast %b_42 : tensor<64x1xi32> -> tensor<64x256xi32>
      %b_45 = tt.addptr %b_43, %b_44 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %b_46 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x256xi1>
      %b_47 = tt.load %b_45, %b_46, %cst : tensor<64x256x!tt.ptr<bf16>>
      %acc_48 = tt.dot %a_34, %b_47, %acc_15, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      %af = arith.extf %a_34 : tensor<128x64xbf16> to tensor<128x64xf32>
      %ss_49 = arith.mulf %af, %af : tensor<128x64xf32>
      %ss_50 = "tt.reduce"(%ss_49) <{axis = 1 : i32}> ({
      ^bb0(%ss_52: f32, %ss_53: f32):
        %ss_54 = arith.addf %ss_52, %ss_53 : f32
        tt.reduce.return %ss_54 : f32
      }) : (tensor<128x64xf32>) -> tensor<128xf32>
      %ss_51 = arith.addf %ss_16, %ss_50 : tensor<128xf32>
      scf.yield %acc_48, %ss_51 : tensor<128x256xf32>, tensor<128xf32>
    }
    %r_8 = arith.sitofp %K : i32 to f32
    %r_9 = tt.splat %r_8 : f32 -> tensor<128xf32>
    %r_10 = arith.divf %ss_7#1, %r_9 : tensor<128xf32>
    %r_11 = tt.splat %eps : f32 -> tensor<128xf32>
    %r_12 = arith.addf %r_10, %r_11 : tensor<128xf32>
    %r_13 = math.sqrt %r_12 : tensor<128xf32>
    %r_14 = arith.divf %r, %r_13 : tensor<128xf32>
    %2 = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %3 = tt.splat %M : i32 -> tensor<128x1xi32>
    %4 = arith.cmpi slt, %2, %3 : tensor<128x1xi32>
    %5 = tt.expand_dims %rn_6 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %6 = tt.splat %N : i32 -> tensor<1x256xi32>
    %7 = arith.cmpi slt, %5, %6 : tensor<1x256xi32>
    %8 = tt.broadcast %4 : tensor<128x1xi1> -> tensor<128x256xi1>
    %9 = tt.broadcast %7 : tensor<1x256xi1> -> tensor<128x256xi1>
    %10 = arith.andi %8, %9 : tensor<128x256xi1>
    %11 = tt.splat %sy : i32 -> tensor<128x1xi32>
    %12 = arith.muli %2, %11 : tensor<128x1xi32>
    %13 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %14 = tt.addptr %13, %12 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %15 = tt.broadcast %14 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %16 = tt.broadcast %5 : tensor<1x256xi32> -> tensor<128x256xi32>
    %17 = tt.addptr %15, %16 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %18 = tt.expand_dims %r_14 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %19 = tt.broadcast %18 : tensor<128x1xf32> -> tensor<128x256xf32>
    %20 = arith.mulf %ss_7#0, %19 : tensor<128x256xf32>
    %21 = arith.truncf %20 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %17, %21, %10 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// A plain GEMM with a bias: the bias load (coalesced, 256 bf16) comes right before the consumer's
// k-loop with the option, after it by default.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: tt.load {{.*}} : tensor<256x!tt.ptr<bf16>, #blocked>
// CHECK-NEXT: scf.for {{.*}} -> (tensor<128x256xf32, #mma>)
// DEFAULT-LABEL: tt.func public @ws_gemm_kernel
// DEFAULT: ttg.warp_specialize
// DEFAULT: scf.for {{.*}} -> (tensor<128x256xf32, #mma>)
// DEFAULT: tt.load {{.*}} : tensor<256x!tt.ptr<bf16>, #blocked>
module {
  tt.func public @gemm_bias(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %M: i32, %N: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %bias = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %cst = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_1 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_2 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_3 = arith.addi %rm_2, %rm_1 : tensor<128xi32>
    %rn = arith.muli %pid_n, %c256_i32 : i32
    %rn_4 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %rn_5 = tt.splat %rn : i32 -> tensor<256xi32>
    %rn_6 = arith.addi %rn_5, %rn_4 : tensor<256xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %acc_7 = scf.for %k0 = %c0_i32 to %K step %c64_i32 iter_args(%acc_14 = %acc) -> (tensor<128x256xf32>)  : i32 {
      %a = tt.splat %k0 : i32 -> tensor<64xi32>
      %a_15 = arith.addi %a, %rk : tensor<64xi32>
      %a_16 = tt.expand_dims %a_15 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_17 = tt.splat %K : i32 -> tensor<1x64xi32>
      %a_18 = arith.cmpi slt, %a_16, %a_17 : tensor<1x64xi32>
      %a_19 = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_20 = tt.splat %sx : i32 -> tensor<128x1xi32>
      %a_21 = arith.muli %a_19, %a_20 : tensor<128x1xi32>
      %a_22 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_23 = tt.addptr %a_22, %a_21 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_24 = tt.broadcast %a_23 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_25 = tt.broadcast %a_16 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_26 = tt.addptr %a_24, %a_25 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %a_27 = tt.broadcast %a_18 : tensor<1x64xi1> -> tensor<128x64xi1>
      %a_28 = tt.load %a_26, %a_27, %cst_0 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.expand_dims %a_15 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_29 = tt.splat %K : i32 -> tensor<64x1xi32>
      %b_30 = arith.cmpi slt, %b, %b_29 : tensor<64x1xi32>
      %b_31 = tt.expand_dims %rn_6 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_32 = tt.splat %sw : i32 -> tensor<1x256xi32>
      %b_33 = arith.muli %b_31, %b_32 : tensor<1x256xi32>
      %b_34 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
      %b_35 = tt.addptr %b_34, %b_33 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
      %b_36 = tt.broadcast %b_35 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_37 = tt.broadcast %b : tensor<64x1xi32> -> tensor<64x256xi32>
      %b_38 = tt.addptr %b_36, %b_37 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %b_39 = tt.broadcast %b_30 : tensor<64x1xi1> -> tensor<64x256xi1>
      %b_40 = tt.load %b_38, %b_39, %cst : tensor<64x256x!tt.ptr<bf16>>
      %acc_41 = tt.dot %a_28, %b_40, %acc_14, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_41 : tensor<128x256xf32>
    }
    %bias_8 = tt.splat %N : i32 -> tensor<256xi32>
    %bias_9 = arith.cmpi slt, %rn_6, %bias_8 : tensor<256xi32>
    %bias_10 = tt.splat %BIAS : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
    %bias_11 = tt.addptr %bias_10, %rn_6 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
    %bias_12 = tt.load %bias_11, %bias_9, %bias : tensor<256x!tt.ptr<bf16>>
    %bias_13 = arith.extf %bias_12 : tensor<256xbf16> to tensor<256xf32>
    %0 = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %1 = tt.splat %M : i32 -> tensor<128x1xi32>
    %2 = arith.cmpi slt, %0, %1 : tensor<128x1xi32>
    %3 = tt.expand_dims %rn_6 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %4 = tt.splat %N : i32 -> tensor<1x256xi32>
    %5 = arith.cmpi slt, %3, %4 : tensor<1x256xi32>
    %6 = tt.broadcast %2 : tensor<128x1xi1> -> tensor<128x256xi1>
    %7 = tt.broadcast %5 : tensor<1x256xi1> -> tensor<128x256xi1>
    %8 = arith.andi %6, %7 : tensor<128x256xi1>
    %9 = tt.splat %sy : i32 -> tensor<128x1xi32>
    %10 = arith.muli %0, %9 : tensor<128x1xi32>
    %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %12 = tt.addptr %11, %10 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %13 = tt.broadcast %12 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %14 = tt.broadcast %3 : tensor<1x256xi32> -> tensor<128x256xi32>
    %15 = tt.addptr %13, %14 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %16 = tt.expand_dims %bias_13 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
    %17 = tt.broadcast %16 : tensor<1x256xf32> -> tensor<128x256xf32>
    %18 = arith.addf %acc_7, %17 : tensor<128x256xf32>
    %19 = arith.truncf %18 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %15, %19, %8 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// A post-norm over a row of 2 N tiles (with post-norm=true: its rows keep their loads).
module {
  tt.func public @postnorm_rows(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %BIAS: !tt.ptr<bf16>, %RES: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %sx: i32, %sw: i32, %sr: i32, %sy: i32, %eps: f32) attributes {noinline = false} {
    %c63_i32 = arith.constant 63 : i32
    %c2_i32 = arith.constant 2 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %rstd_3 = arith.constant dense<5.120000e+02> : tensor<128xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst_5 = arith.constant dense<512> : tensor<1x256xi32>
    %cst_6 = arith.constant dense<512> : tensor<256xi32>
    %c64_i32 = arith.constant 64 : i32
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_7 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_8 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_9 = arith.addi %rm_8, %rm_7 : tensor<128xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ss_10 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_16 = %ss) -> (tensor<128xf32>)  : i32 {
      %rn = arith.muli %n, %c256_i32 : i32
      %rn_17 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %rn_18 = tt.splat %rn : i32 -> tensor<256xi32>
      %rn_19 = arith.addi %rn_18, %rn_17 : tensor<256xi32>
      %0 = arith.addi %K, %c63_i32 : i32
      %1 = arith.divsi %0, %c64_i32 : i32
      %acc = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%acc_49 = %cst_4) -> (tensor<128x256xf32>)  : i32 {
        %km = arith.muli %k, %c64_i32 : i32
        %km_50 = tt.splat %km : i32 -> tensor<64xi32>
        %km_51 = arith.addi %km_50, %rk : tensor<64xi32>
        %km_52 = tt.splat %K : i32 -> tensor<64xi32>
        %km_53 = arith.cmpi slt, %km_51, %km_52 : tensor<64xi32>
        %a = tt.expand_dims %km_53 {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
        %a_54 = tt.splat %M : i32 -> tensor<128xi32>
        %a_55 = arith.remsi %rm_9, %a_54 : tensor<128xi32>
        %a_56 = tt.expand_dims %a_55 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_57 = tt.splat %sx : i32 -> tensor<128x1xi32>
        %a_58 = arith.muli %a_56, %a_57 : tensor<128x1xi32>
        %a_59 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_60 = tt.addptr %a_59, %a_58 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_61 = tt.expand_dims %km_51 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_62 = tt.broadcast %a_60 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_63 = tt.broadcast %a_61 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_64 = tt.addptr %a_62, %a_63 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %a_65 = tt.broadcast %a : tensor<1x64xi1> -> tensor<128x64xi1>
        %a_66 = tt.load %a_64, %a_65, %cst_2 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.expand_dims %km_53 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %b_67 = arith.remsi %rn_19, %cst_6 : tensor<256xi32>
        %b_68 = tt.expand_dims %b_67 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
        %b_69 = tt.splat %sw : i32 -> tensor<1x256xi32>
        %b_70 = arith.muli %b_68, %b_69 : tensor<1x256xi32>
        %b_71 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
        %b_72 = tt.addptr %b_71, %b_70 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_73 = tt.expand_dims %km_51 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_74 = tt.broadcast %b_72 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
        %b_75 = tt.broadcast %b_73 : tensor<64x1xi32> -> tensor<64x256xi32>
        %b_76 = tt.addptr %b_74, %b_75 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
        %b_77 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x256xi1>
        %b_78 = tt.load %b_76, %b_77, %cst_1 : tensor<64x256x!tt.ptr<bf16>>
        %acc_79 = tt.dot %a_66, %b_78, %acc_49, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        scf.yield %acc_79 : tensor<128x256xf32>
      }
      %mask = tt.expand_dims %rm_9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %mask_20 = tt.splat %M : i32 -> tensor<128x1xi32>
      %mask_21 = arith.cmpi slt, %mask, %mask_20 : tensor<128x1xi32>
      %mask_22 = tt.expand_dims %rn_19 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %mask_23 = arith.cmpi slt, %mask_22, %cst_5 : tensor<1x256xi32>
      %mask_24 = tt.broadcast %mask_21 : tensor<128x1xi1> -> tensor<128x256xi1>
      %mask_25 = tt.broadcast %mask_23 : tensor<1x256xi1> -> tensor<128x256xi1>
      %mask_26 = arith.andi %mask_24, %mask_25 : tensor<128x256xi1>
      %acc_27 = arith.cmpi slt, %rn_19, %cst_6 : tensor<256xi32>
      %acc_28 = tt.splat %BIAS : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %acc_29 = tt.addptr %acc_28, %rn_19 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %acc_30 = tt.load %acc_29, %acc_27, %cst_0 : tensor<256x!tt.ptr<bf16>>
      %acc_31 = arith.extf %acc_30 : tensor<256xbf16> to tensor<256xf32>
      %acc_32 = tt.expand_dims %acc_31 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %acc_33 = tt.broadcast %acc_32 : tensor<1x256xf32> -> tensor<128x256xf32>
      %acc_34 = arith.addf %acc, %acc_33 : tensor<128x256xf32>
      %acc_35 = tt.splat %sr : i32 -> tensor<128x1xi32>
      %acc_36 = arith.muli %mask, %acc_35 : tensor<128x1xi32>
      %acc_37 = tt.splat %RES : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %acc_38 = tt.addptr %acc_37, %acc_36 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %acc_39 = tt.broadcast %acc_38 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %acc_40 = tt.broadcast %mask_22 : tensor<1x256xi32> -> tensor<128x256xi32>
      %acc_41 = tt.addptr %acc_39, %acc_40 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %acc_42 = tt.load %acc_41, %mask_26, %cst : tensor<128x256x!tt.ptr<bf16>>
      %acc_43 = arith.extf %acc_42 : tensor<128x256xbf16> to tensor<128x256xf32>
      %acc_44 = arith.addf %acc_34, %acc_43 : tensor<128x256xf32>
      %acc_45 = arith.select %mask_25, %acc_44, %cst_4 : tensor<128x256xi1>, tensor<128x256xf32>
      %ss_46 = arith.mulf %acc_45, %acc_45 : tensor<128x256xf32>
      %ss_47 = "tt.reduce"(%ss_46) <{axis = 1 : i32}> ({
      ^bb0(%ss_49: f32, %ss_50: f32):
        %ss_51 = arith.addf %ss_49, %ss_50 : f32
        tt.reduce.return %ss_51 : f32
      }) : (tensor<128x256xf32>) -> tensor<128xf32>
      %ss_48 = arith.addf %ss_16, %ss_47 : tensor<128xf32>
      %2 = tt.splat %sy : i32 -> tensor<128x1xi32>
      %3 = arith.muli %mask, %2 : tensor<128x1xi32>
      %4 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %5 = tt.addptr %4, %3 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %6 = tt.broadcast %5 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %7 = tt.addptr %6, %acc_40 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %8 = arith.truncf %acc_45 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %7, %8, %mask_26 : tensor<128x256x!tt.ptr<bf16>>
      scf.yield %ss_48 : tensor<128xf32>
    }
    %rstd_11 = arith.divf %ss_10, %rstd_3 : tensor<128xf32>
    %rstd_12 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_13 = arith.addf %rstd_11, %rstd_12 : tensor<128xf32>
    %rstd_14 = math.sqrt %rstd_13 : tensor<128xf32>
    %rstd_15 = arith.divf %rstd, %rstd_14 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %rn = arith.muli %n, %c256_i32 : i32
      %rn_16 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %rn_17 = tt.splat %rn : i32 -> tensor<256xi32>
      %rn_18 = arith.addi %rn_17, %rn_16 : tensor<256xi32>
      %mask = tt.expand_dims %rm_9 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %mask_19 = tt.splat %M : i32 -> tensor<128x1xi32>
      %mask_20 = arith.cmpi slt, %mask, %mask_19 : tensor<128x1xi32>
      %mask_21 = tt.expand_dims %rn_18 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %mask_22 = arith.cmpi slt, %mask_21, %cst_5 : tensor<1x256xi32>
      %mask_23 = tt.broadcast %mask_20 : tensor<128x1xi1> -> tensor<128x256xi1>
      %mask_24 = tt.broadcast %mask_22 : tensor<1x256xi1> -> tensor<128x256xi1>
      %mask_25 = arith.andi %mask_23, %mask_24 : tensor<128x256xi1>
      %y = tt.splat %sy : i32 -> tensor<128x1xi32>
      %y_26 = arith.muli %mask, %y : tensor<128x1xi32>
      %y_27 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_28 = tt.addptr %y_27, %y_26 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_29 = tt.broadcast %y_28 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %y_30 = tt.broadcast %mask_21 : tensor<1x256xi32> -> tensor<128x256xi32>
      %y_31 = tt.addptr %y_29, %y_30 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %y_32 = tt.load %y_31, %mask_25, %cst : tensor<128x256x!tt.ptr<bf16>>
      %y_33 = arith.extf %y_32 : tensor<128x256xbf16> to tensor<128x256xf32>
      %g = arith.cmpi slt, %rn_18, %cst_6 : tensor<256xi32>
      %g_34 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %g_35 = tt.addptr %g_34, %rn_18 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %g_36 = tt.load %g_35, %g, %cst_0 : tensor<256x!tt.ptr<bf16>>
      %g_37 = arith.extf %g_36 : tensor<256xbf16> to tensor<256xf32>
      %0 = tt.expand_dims %rstd_15 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %1 = tt.broadcast %0 : tensor<128x1xf32> -> tensor<128x256xf32>
      %2 = arith.mulf %y_33, %1 : tensor<128x256xf32>
      %3 = tt.expand_dims %g_37 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %4 = tt.broadcast %3 : tensor<1x256xf32> -> tensor<128x256xf32>
      %5 = arith.mulf %2, %4 : tensor<128x256xf32>
      %6 = arith.truncf %5 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %y_31, %6, %mask_25 : tensor<128x256x!tt.ptr<bf16>>
    }
    tt.return
  }
}
