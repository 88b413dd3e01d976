// hopper-ws: fused GEMM-shaped TTIR -> the warp-specialized Gluon template's TTGIR.
// Inputs: TTIR from test/lit/inputs/hopper_ws_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>/dev/null | FileCheck %s
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-share=true}' %s 2>/dev/null | FileCheck %s --check-prefix=SHARE
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-share=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=SHARE-REMARK

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; 1 row statistic(s)
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; no statistics
// REMARK: missed: 2 tt.dot ops; the lowering handles one accumulator
// REMARK: missed: the epilogue reduces rows of the accumulator (a post-norm)
// REMARK: missed: the A tile ({{.*}}) is not contiguous along K: its rows are (the matrix is stored column-major); pass the matrix row-major

// stats-share: the statistics once per row block. The first case publishes stamped 64-bit words
// (value, epoch) and reads them back with a reload loop on stale stamps; the plain GEMM has no
// statistics to share (no stamped words); the bail-outs are unchanged.
// SHARE-REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 stats-shared, persistent, B [N, K]; 1 row statistic(s) from the A tiles in the MMA warps, once per row block (its first tile, a wave ahead of the others), shared through global memory
// SHARE-REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; no statistics
// SHARE-REMARK: missed: 2 tt.dot ops
// SHARE-REMARK: missed: the epilogue reduces rows of the accumulator
// SHARE-REMARK: missed: the A tile ({{.*}}) is not contiguous along K
// SHARE-LABEL: tt.func public @ws_gemm_kernel
// SHARE: ttg.warp_specialize
// SHARE: ttng.warp_group_dot
// SHARE: tt.elementwise_inline_asm "{{.*}}st.relaxed.gpu.global.b64
// SHARE: tt.elementwise_inline_asm "ld.relaxed.gpu.global.b64
// SHARE: ttng.warp_group_dot
// SHARE: tt.elementwise_inline_asm "{{.*}}NF_CHECK:
// SHARE: partition0({{.*}}) num_warps(4)
// SHARE-LABEL: tt.func public @ws_gemm_kernel
// SHARE-NOT: st.relaxed.gpu.global.b64
// SHARE: partition0({{.*}}) num_warps(4)

// RMSNorm statistics in the k-loop: warp-specialized, the statistic and the epilogue become hooks.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-SAME: !tt.tensordesc<tensor<128x64xbf16
// CHECK-SAME: !tt.tensordesc<tensor<256x64xbf16
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK: "tt.reduce"
// CHECK: math.sqrt
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0({{.*}}) num_warps(4)
// CHECK: ttng.async_tma_copy_global_to_local
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

// A plain GEMM with a bias: no statistics; the bias is loaded coalesced and converted to the
// accumulator's column layout.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK: ttg.convert_layout
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0({{.*}}) num_warps(4)
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

// Two accumulators: left alone.
// CHECK-LABEL: tt.func public @negative_two_dots
// CHECK-NOT: ttg.warp_specialize
// CHECK-COUNT-2: tt.dot
module {
  tt.func public @negative_two_dots(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %N: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_1 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_2 = arith.addi %rm_1, %rm_0 : tensor<128xi32>
    %rn = arith.muli %pid_n, %c256_i32 : i32
    %rn_3 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %rn_4 = tt.splat %rn : i32 -> tensor<256xi32>
    %rn_5 = arith.addi %rn_4, %rn_3 : tensor<256xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %acc2:2 = scf.for %k0 = %c0_i32 to %K step %c64_i32 iter_args(%acc = %cst, %acc2_6 = %cst) -> (tensor<128x256xf32>, tensor<128x256xf32>)  : i32 {
      %a = tt.expand_dims %rm_2 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_7 = tt.splat %sx : i32 -> tensor<128x1xi32>
      %a_8 = arith.muli %a, %a_7 : tensor<128x1xi32>
      %a_9 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_10 = tt.addptr %a_9, %a_8 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_11 = tt.splat %k0 : i32 -> tensor<64xi32>
      %a_12 = arith.addi %a_11, %rk : tensor<64xi32>
      %a_13 = tt.expand_dims %a_12 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_14 = tt.broadcast %a_10 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_15 = tt.broadcast %a_13 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_16 = tt.addptr %a_14, %a_15 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %a_17 = tt.load %a_16 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.expand_dims %rn_5 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_18 = tt.splat %sw : i32 -> tensor<1x256xi32>
      %b_19 = arith.muli %b, %b_18 : tensor<1x256xi32>
      %b_20 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
      %b_21 = tt.addptr %b_20, %b_19 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
      %b_22 = tt.expand_dims %a_12 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_23 = tt.broadcast %b_21 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_24 = tt.broadcast %b_22 : tensor<64x1xi32> -> tensor<64x256xi32>
      %b_25 = tt.addptr %b_23, %b_24 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %b_26 = tt.load %b_25 : tensor<64x256x!tt.ptr<bf16>>
      %acc_27 = tt.dot %a_17, %b_26, %acc, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      %acc2_28 = tt.dot %a_17, %b_26, %acc2_6, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_27, %acc2_28 : tensor<128x256xf32>, tensor<128x256xf32>
    }
    %0 = tt.expand_dims %rm_2 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %1 = tt.splat %M : i32 -> tensor<128x1xi32>
    %2 = arith.cmpi slt, %0, %1 : tensor<128x1xi32>
    %3 = tt.expand_dims %rn_5 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
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
    %16 = arith.subf %acc2#0, %acc2#1 : tensor<128x256xf32>
    %17 = arith.truncf %16 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %15, %17, %8 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// A row reduction of the accumulator (post-norm): left to epilogue-norm / cluster-reduce.
// CHECK-LABEL: tt.func public @negative_postnorm
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot
module {
  tt.func public @negative_postnorm(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %N: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_1 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_2 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_3 = arith.addi %rm_2, %rm_1 : tensor<128xi32>
    %rn = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %acc_4 = scf.for %k0 = %c0_i32 to %K step %c64_i32 iter_args(%acc_14 = %acc) -> (tensor<128x256xf32>)  : i32 {
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
      %b_31 = tt.expand_dims %rn {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
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
    %r_5 = arith.mulf %acc_4, %acc_4 : tensor<128x256xf32>
    %r_6 = "tt.reduce"(%r_5) <{axis = 1 : i32}> ({
    ^bb0(%r_14: f32, %r_15: f32):
      %r_16 = arith.addf %r_14, %r_15 : f32
      tt.reduce.return %r_16 : f32
    }) : (tensor<128x256xf32>) -> tensor<128xf32>
    %r_7 = arith.sitofp %N : i32 to f32
    %r_8 = tt.splat %r_7 : f32 -> tensor<128xf32>
    %r_9 = arith.divf %r_6, %r_8 : tensor<128xf32>
    %r_10 = tt.splat %eps : f32 -> tensor<128xf32>
    %r_11 = arith.addf %r_9, %r_10 : tensor<128xf32>
    %r_12 = math.sqrt %r_11 : tensor<128xf32>
    %r_13 = arith.divf %r, %r_12 : tensor<128xf32>
    %0 = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %1 = tt.splat %M : i32 -> tensor<128x1xi32>
    %2 = arith.cmpi slt, %0, %1 : tensor<128x1xi32>
    %3 = tt.expand_dims %rn {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
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
    %16 = tt.expand_dims %r_13 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %17 = tt.broadcast %16 : tensor<128x1xf32> -> tensor<128x256xf32>
    %18 = arith.mulf %acc_4, %17 : tensor<128x256xf32>
    %19 = arith.truncf %18 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %15, %19, %8 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// A not contiguous along K: left alone.
// CHECK-LABEL: tt.func public @negative_strided_k
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot
module {
  tt.func public @negative_strided_k(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %N: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %c64_i32 = arith.constant 64 : i32
    %c0_i32 = arith.constant 0 : i32
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_0 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_1 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_2 = arith.addi %rm_1, %rm_0 : tensor<128xi32>
    %rn = arith.muli %pid_n, %c256_i32 : i32
    %rn_3 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %rn_4 = tt.splat %rn : i32 -> tensor<256xi32>
    %rn_5 = arith.addi %rn_4, %rn_3 : tensor<256xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %acc_6 = scf.for %k0 = %c0_i32 to %K step %c64_i32 iter_args(%acc_7 = %acc) -> (tensor<128x256xf32>)  : i32 {
      %a = tt.expand_dims %rm_2 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_8 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_9 = tt.addptr %a_8, %a : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_10 = tt.splat %k0 : i32 -> tensor<64xi32>
      %a_11 = arith.addi %a_10, %rk : tensor<64xi32>
      %a_12 = tt.expand_dims %a_11 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_13 = tt.splat %sx : i32 -> tensor<1x64xi32>
      %a_14 = arith.muli %a_12, %a_13 : tensor<1x64xi32>
      %a_15 = tt.broadcast %a_9 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_16 = tt.broadcast %a_14 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_17 = tt.addptr %a_15, %a_16 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %a_18 = tt.load %a_17 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.expand_dims %rn_5 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_19 = tt.splat %sw : i32 -> tensor<1x256xi32>
      %b_20 = arith.muli %b, %b_19 : tensor<1x256xi32>
      %b_21 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
      %b_22 = tt.addptr %b_21, %b_20 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
      %b_23 = tt.expand_dims %a_11 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_24 = tt.broadcast %b_22 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_25 = tt.broadcast %b_23 : tensor<64x1xi32> -> tensor<64x256xi32>
      %b_26 = tt.addptr %b_24, %b_25 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %b_27 = tt.load %b_26 : tensor<64x256x!tt.ptr<bf16>>
      %acc_28 = tt.dot %a_18, %b_27, %acc_7, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_28 : tensor<128x256xf32>
    }
    %0 = tt.expand_dims %rm_2 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %1 = tt.splat %M : i32 -> tensor<128x1xi32>
    %2 = arith.cmpi slt, %0, %1 : tensor<128x1xi32>
    %3 = tt.expand_dims %rn_5 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
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
    %16 = arith.truncf %acc_6 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %15, %16, %8 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}
