// hopper-ws: fused GEMM-shaped TTIR -> the warp-specialized Gluon template's TTGIR.
// Inputs: TTIR from test/lit/inputs/hopper_ws_kernels.py (locations stripped).
// Each RUN line lowers only the chunks its checks read (select-chunks, test/lit/README.md).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{schedule=coop,stats-rows=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: select-chunks rms_fused,gemm_bias,negative_two_dots,negative_postnorm,negative_strided_k %s \
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-share=true}' - 2>%t.share-remark | FileCheck %s --check-prefix=SHARE
// RUN: FileCheck %s --check-prefix=SHARE-REMARK < %t.share-remark
// RUN: select-chunks --except rms_tile_stats %s \
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='epilogue-norm,hopper-ws{post-norm=true}' - 2>%t.post-remark | FileCheck %s --check-prefix=POST
// RUN: FileCheck %s --check-prefix=POST-REMARK < %t.post-remark
// RUN: select-chunks rms_fused,gemm_bias,postnorm_rows,postnorm_one_tile,rms_tile_stats %s \
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='epilogue-norm,hopper-ws{post-norm=true,schedule=coop2}' - 2>&1 >/dev/null | FileCheck %s --check-prefix=COOP2
// RUN: select-chunks rms_fused,gemm_bias,postnorm_rows,rms_tile_stats %s \
// RUN:   | normfuse-opt --split-input-file --hopper-ws - 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO
// RUN: select-chunks rms_fused %s \
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-rows=false,stats-lanes=true}' - 2>&1 >/dev/null | FileCheck %s --check-prefix=OPERAND-LAYOUT
// RUN: select-chunks rms_fused,gemm_bias,postnorm_rows %s \
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='hopper-ws{schedule=coop2,stats-share=true,stats-lanes=true}' - 2>&1 >/dev/null | FileCheck %s --check-prefix=COOP2-SHARE

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 stats-late release-early stats-rows, persistent, B [N, K]; 1 row statistic(s) from the A tiles in the MMA warps (each k-step's after the wait for the previous wgmma)
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; no statistics{{.*}}stats-rows not applied: the k-loop computes no row statistics
// REMARK: missed: a post-norm whose row spans 2 N tiles (two passes over the row); not lowered by default (hopper-ws{post-norm=true} lowers it
// REMARK: missed: the output tile is stored, reloaded and stored again next to the GEMM (a post-norm whose row is one tile): run epilogue-norm first
// REMARK: applied: lowered to the warp-specialized template: 128x128x128 s2 coop w8 stats-late release-early stats-rows, persistent, B [N, K]; 1 row statistic(s)
// REMARK: missed: 2 tt.dot ops; the lowering handles one accumulator
// REMARK: missed: the epilogue reduces rows of the accumulator (a post-norm)
// REMARK: missed: the A tile ({{.*}}) is not contiguous along K: its rows are (the matrix is stored column-major); pass the matrix row-major
// REMARK: missed: the normalizing loop's reload is not, trip by trip, the tile the GEMM loop stored
// REMARK: missed: the loops over the row's N tiles need constant bounds (make N a tl.constexpr)

// The default schedule (auto): coop2 for the kernels with row statistics (release-early with
// RMSNorm's late statistics), coop for the plain GEMM; the misses as above.
// AUTO: applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4 stats-late release-early stats-rows, persistent, B [N, K]; 1 row statistic(s)
// AUTO: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; no statistics
// AUTO-NOT: stats-rows not applied
// AUTO-NOT: stats-lanes
// AUTO-NOT: (auto)
// AUTO: missed: a post-norm whose row spans 2 N tiles
// AUTO: applied: lowered to the warp-specialized template: 128x128x128 s2 coop2 w4 stats-late release-early stats-rows, persistent, B [N, K]; 1 row statistic(s)
// stats-rows=false: the statistics read the A tile in the wgmma operand's layout (asked for,
// stats-rows=true, on the plain GEMM, which has no statistics, it says so: REMARK above)
// OPERAND-LAYOUT: applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4 stats-late release-early, persistent, B [N, K]; 1 row statistic(s){{.*}}stats-lanes not applied: stats-rows is off

// post-norm=true (after epilogue-norm): the one-tile rows (negative_postnorm above, and the naive
// kernel's one-tile form once epilogue-norm forwarded its tile) keep their row reductions in the
// epilogue; the naive kernel's two passes over a row of 2 N tiles become the whole-rows order with
// the partial row sums exchanged as stamped words and the residual tile read by TMA; a reload in
// another order and loops without constant bounds are left alone.
// POST-REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4 stats-late release-early stats-rows, persistent, B [N, K]; 1 row statistic(s)
// POST-REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; no statistics
// POST-REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 rows-exchanged(1), persistent, B [N, K]; {{.*}}the residual tile loaded by TMA into the output's staging tile during the k-loop; post-norm: the row's 2 N tiles on 2 CTAs of one wave, 1 partial row sum(s) exchanged through global memory
// POST-REMARK: [epilogue-norm] applied
// POST-REMARK: [hopper-ws] applied: {{.*}}post-norm: the epilogue reduces rows of the accumulator within the tile (the row is one tile)
// POST-REMARK: [hopper-ws] missed: 2 tt.dot ops
// POST-REMARK: [hopper-ws] applied: {{.*}}post-norm: the epilogue reduces rows of the accumulator within the tile (the row is one tile)
// POST-REMARK: [hopper-ws] missed: the A tile ({{.*}}) is not contiguous along K
// POST-REMARK: [hopper-ws] missed: the normalizing loop's reload is not, trip by trip, the tile the GEMM loop stored
// POST-REMARK: [hopper-ws] missed: the loops over the row's N tiles need constant bounds

// schedule=coop2: the coop tiles with each warpgroup in its own partition on half of the rows;
// a post-norm whose row spans several N tiles is refused (its row sums are the whole tile's).
// COOP2: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4 stats-late release-early stats-rows, persistent, B [N, K]; 1 row statistic(s)
// COOP2: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4, persistent, B [N, K]; no statistics
// COOP2: [hopper-ws] missed: the coop2 schedule does not take a post-norm's rows; use hopper-ws{schedule=coop} (or auto, the default, which chooses coop there)
// COOP2: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4, persistent, B [N, K]; no statistics
// COOP2: [hopper-ws] applied: lowered to the warp-specialized template: 128x128x128 s2 coop2 w4 stats-late

// coop2 with stats-share: each warpgroup publishes and takes its half's rows (auto keeps sharing
// on coop and says so: SHARE-REMARK below). With stats-lanes=true the row sums are kept per
// lane through the k-loop, also for these late statistics (auto keeps them per lane only where
// the sums follow the wgmma issue, LayerNorm's two: AUTO-NOT above), and combined before they
// are published; the plain GEMM has none and says so.
// COOP2-SHARE: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4 stats-shared stats-late release-early stats-rows stats-lanes, persistent, B [N, K]; 1 row statistic(s) from the A tiles in the MMA warps (each k-step's after the wait for the previous wgmma), once per row block
// COOP2-SHARE: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4, persistent, B [N, K]; no statistics{{.*}}stats-lanes not applied: the k-loop computes no row statistics
// COOP2-SHARE-NOT: stats-share not applied
// COOP2-SHARE: [hopper-ws] missed: a post-norm whose row spans 2 N tiles

// stats-share: the statistics once per row block. The first case publishes stamped 64-bit words
// (value, epoch) and reads them back with a reload loop on stale stamps; the plain GEMM has no
// statistics to share (no stamped words); the bail-outs are unchanged.
// SHARE-REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 stats-shared stats-late release-early stats-rows, persistent, B [N, K]; 1 row statistic(s) from the A tiles in the MMA warps (each k-step's after the wait for the previous wgmma), once per row block (its first tile, a wave ahead of the others), shared through global memory
// SHARE-REMARK-SAME: schedule coop (auto): the statistics are shared per row block (stats-share), which coop2 was not measured with (hopper-ws{schedule=coop2,stats-share=true} asks for it)
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
// One sum with no shift: the statistics read the A tile after the wait for the previous
// k-step's wgmma (stats-late), not between the issue and the wait.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-SAME: !tt.tensordesc<tensor<128x64xbf16
// CHECK-SAME: !tt.tensordesc<tensor<256x64xbf16
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK-NOT: ttg.local_load
// CHECK: ttng.warp_group_dot_wait {{.*}}pendings = 1
// CHECK: ttg.local_load
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

// The naive post-norm over a row of 2 N tiles, bias and residual (kernels/postnorm_gemm.py's
// form): under the default options left alone with the reason; with post-norm=true, the residual
// becomes a fourth descriptor (TMA into the staging tile, issued by the loader), the tile's row sum
// is published as a stamped word and the row's sums are gathered back before the normalization.
// CHECK-LABEL: tt.func public @postnorm_rows
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot
// POST: tt.func public @ws_gemm_kernel({{.*}}!tt.tensordesc<tensor<128x256xbf16{{.*}}!tt.tensordesc<tensor<128x256xbf16
// POST: ttg.warp_specialize
// POST: ttng.warp_group_dot
// POST: "tt.reduce"
// POST: st.relaxed.gpu.global.b64
// POST: ld.relaxed.gpu.global.b64
// POST: NF_CHECK:
// POST: math.sqrt
// POST: ttng.async_tma_copy_local_to_global
// POST: partition0(
// POST: ttng.async_tma_copy_global_to_local {{.*}}tensor<128x256xbf16
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

// -----

// The naive post-norm with the row in one tile: store, reload, store next to the GEMM. hopper-ws
// alone says to run epilogue-norm first; after it, the row reductions stay in the epilogue (no
// exchange).
// CHECK-LABEL: tt.func public @postnorm_one_tile
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot
// POST: tt.func public @ws_gemm_kernel
// POST-NOT: st.relaxed.gpu.global.b64
// POST: "tt.reduce"
// POST: math.sqrt
// POST: partition0(
module {
  tt.func public @postnorm_one_tile(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32, %eps: f32) attributes {noinline = false} {
    %c63_i32 = arith.constant 63 : i32
    %g = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %y = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %cst = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %rstd_1 = arith.constant dense<2.560000e+02> : tensor<128xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst_3 = arith.constant dense<256> : tensor<1x256xi32>
    %cst_4 = arith.constant dense<256> : tensor<256xi32>
    %c64_i32 = arith.constant 64 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_5 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_6 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_7 = arith.addi %rm_6, %rm_5 : tensor<128xi32>
    %rn = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %0 = arith.addi %K, %c63_i32 : i32
    %1 = arith.divsi %0, %c64_i32 : i32
    %acc = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%acc_30 = %cst_2) -> (tensor<128x256xf32>)  : i32 {
      %km = arith.muli %k, %c64_i32 : i32
      %km_31 = tt.splat %km : i32 -> tensor<64xi32>
      %km_32 = arith.addi %km_31, %rk : tensor<64xi32>
      %km_33 = tt.splat %K : i32 -> tensor<64xi32>
      %km_34 = arith.cmpi slt, %km_32, %km_33 : tensor<64xi32>
      %a = tt.expand_dims %km_34 {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
      %a_35 = tt.splat %M : i32 -> tensor<128xi32>
      %a_36 = arith.remsi %rm_7, %a_35 : tensor<128xi32>
      %a_37 = tt.expand_dims %a_36 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_38 = tt.splat %sx : i32 -> tensor<128x1xi32>
      %a_39 = arith.muli %a_37, %a_38 : tensor<128x1xi32>
      %a_40 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_41 = tt.addptr %a_40, %a_39 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_42 = tt.expand_dims %km_32 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %a_43 = tt.broadcast %a_41 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %a_44 = tt.broadcast %a_42 : tensor<1x64xi32> -> tensor<128x64xi32>
      %a_45 = tt.addptr %a_43, %a_44 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %a_46 = tt.broadcast %a : tensor<1x64xi1> -> tensor<128x64xi1>
      %a_47 = tt.load %a_45, %a_46, %cst_0 : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.expand_dims %km_34 {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %b_48 = arith.remsi %rn, %cst_4 : tensor<256xi32>
      %b_49 = tt.expand_dims %b_48 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %b_50 = tt.splat %sw : i32 -> tensor<1x256xi32>
      %b_51 = arith.muli %b_49, %b_50 : tensor<1x256xi32>
      %b_52 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
      %b_53 = tt.addptr %b_52, %b_51 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
      %b_54 = tt.expand_dims %km_32 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %b_55 = tt.broadcast %b_53 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %b_56 = tt.broadcast %b_54 : tensor<64x1xi32> -> tensor<64x256xi32>
      %b_57 = tt.addptr %b_55, %b_56 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %b_58 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x256xi1>
      %b_59 = tt.load %b_57, %b_58, %cst : tensor<64x256x!tt.ptr<bf16>>
      %acc_60 = tt.dot %a_47, %b_59, %acc_30, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      scf.yield %acc_60 : tensor<128x256xf32>
    }
    %mask = tt.expand_dims %rm_7 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %mask_8 = tt.splat %M : i32 -> tensor<128x1xi32>
    %mask_9 = arith.cmpi slt, %mask, %mask_8 : tensor<128x1xi32>
    %mask_10 = tt.expand_dims %rn {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %mask_11 = arith.cmpi slt, %mask_10, %cst_3 : tensor<1x256xi32>
    %mask_12 = tt.broadcast %mask_9 : tensor<128x1xi1> -> tensor<128x256xi1>
    %mask_13 = tt.broadcast %mask_11 : tensor<1x256xi1> -> tensor<128x256xi1>
    %mask_14 = arith.andi %mask_12, %mask_13 : tensor<128x256xi1>
    %acc_15 = arith.select %mask_13, %acc, %cst_2 : tensor<128x256xi1>, tensor<128x256xf32>
    %rstd_16 = arith.mulf %acc_15, %acc_15 : tensor<128x256xf32>
    %rstd_17 = "tt.reduce"(%rstd_16) <{axis = 1 : i32}> ({
    ^bb0(%rstd_30: f32, %rstd_31: f32):
      %rstd_32 = arith.addf %rstd_30, %rstd_31 : f32
      tt.reduce.return %rstd_32 : f32
    }) : (tensor<128x256xf32>) -> tensor<128xf32>
    %rstd_18 = arith.divf %rstd_17, %rstd_1 : tensor<128xf32>
    %rstd_19 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_20 = arith.addf %rstd_18, %rstd_19 : tensor<128xf32>
    %rstd_21 = math.sqrt %rstd_20 : tensor<128xf32>
    %rstd_22 = arith.divf %rstd, %rstd_21 : tensor<128xf32>
    %2 = tt.splat %sy : i32 -> tensor<128x1xi32>
    %3 = arith.muli %mask, %2 : tensor<128x1xi32>
    %4 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %5 = tt.addptr %4, %3 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %6 = tt.broadcast %5 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %7 = tt.broadcast %mask_10 : tensor<1x256xi32> -> tensor<128x256xi32>
    %8 = tt.addptr %6, %7 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %9 = arith.truncf %acc_15 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %8, %9, %mask_14 : tensor<128x256x!tt.ptr<bf16>>
    %y_23 = tt.load %8, %mask_14, %y : tensor<128x256x!tt.ptr<bf16>>
    %y_24 = arith.extf %y_23 : tensor<128x256xbf16> to tensor<128x256xf32>
    %g_25 = arith.cmpi slt, %rn, %cst_4 : tensor<256xi32>
    %g_26 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
    %g_27 = tt.addptr %g_26, %rn : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
    %g_28 = tt.load %g_27, %g_25, %g : tensor<256x!tt.ptr<bf16>>
    %g_29 = arith.extf %g_28 : tensor<256xbf16> to tensor<256xf32>
    %10 = tt.expand_dims %rstd_22 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %11 = tt.broadcast %10 : tensor<128x1xf32> -> tensor<128x256xf32>
    %12 = arith.mulf %y_24, %11 : tensor<128x256xf32>
    %13 = tt.expand_dims %g_29 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
    %14 = tt.broadcast %13 : tensor<1x256xf32> -> tensor<128x256xf32>
    %15 = arith.mulf %12, %14 : tensor<128x256xf32>
    %16 = arith.truncf %15 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %8, %16, %mask_14 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// lazy-prenorm's tile form of one statistic at BLOCK_K == BLOCK_N = 128 (rms_tile_stats): the
// [BM, BK] squares' reduction after the loop has the accumulator's shape, and is the statistic,
// not a post-norm's row sum: lowered, the statistic a hook.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-SAME: !tt.tensordesc<tensor<128x128xbf16
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK: "tt.reduce"
// CHECK: math.sqrt
// CHECK: ttng.async_tma_copy_local_to_global
module {
  tt.func public @rms_tile_stats(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %N: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32, %eps: f32) attributes {noinline = false} {
    %c127_i32 = arith.constant 127 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<128x128xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x128xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %r = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_1 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_2 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_3 = arith.addi %rm_2, %rm_1 : tensor<128xi32>
    %rn = arith.muli %pid_n, %c128_i32 : i32
    %rn_4 = tt.splat %rn : i32 -> tensor<128xi32>
    %rn_5 = arith.addi %rn_4, %rm_1 : tensor<128xi32>
    %0 = arith.addi %K, %c127_i32 : i32
    %1 = arith.divsi %0, %c128_i32 : i32
    %sst:2 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%acc = %cst, %sst_13 = %cst) -> (tensor<128x128xf32>, tensor<128x128xf32>)  : i32 {
      %km = arith.muli %k, %c128_i32 : i32
      %km_14 = arith.subi %K, %km : i32
      %km_15 = tt.splat %km_14 : i32 -> tensor<128xi32>
      %km_16 = arith.cmpi slt, %rm_1, %km_15 : tensor<128xi32>
      %a = tt.expand_dims %km_16 {axis = 0 : i32} : tensor<128xi1> -> tensor<1x128xi1>
      %a_17 = tt.splat %M : i32 -> tensor<128xi32>
      %a_18 = arith.remsi %rm_3, %a_17 : tensor<128xi32>
      %a_19 = tt.expand_dims %a_18 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %a_20 = tt.splat %sx : i32 -> tensor<128x1xi32>
      %a_21 = arith.muli %a_19, %a_20 : tensor<128x1xi32>
      %a_22 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %a_23 = tt.addptr %a_22, %a_21 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %a_24 = tt.splat %km : i32 -> tensor<128xi32>
      %a_25 = arith.addi %a_24, %rm_1 : tensor<128xi32>
      %a_26 = tt.expand_dims %a_25 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %a_27 = tt.broadcast %a_23 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %a_28 = tt.broadcast %a_26 : tensor<1x128xi32> -> tensor<128x128xi32>
      %a_29 = tt.addptr %a_27, %a_28 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %a_30 = tt.broadcast %a : tensor<1x128xi1> -> tensor<128x128xi1>
      %a_31 = tt.load %a_29, %a_30, %cst_0 : tensor<128x128x!tt.ptr<bf16>>
      %b = tt.expand_dims %km_16 {axis = 1 : i32} : tensor<128xi1> -> tensor<128x1xi1>
      %b_32 = tt.splat %N : i32 -> tensor<128xi32>
      %b_33 = arith.remsi %rn_5, %b_32 : tensor<128xi32>
      %b_34 = tt.expand_dims %b_33 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
      %b_35 = tt.splat %sw : i32 -> tensor<1x128xi32>
      %b_36 = arith.muli %b_34, %b_35 : tensor<1x128xi32>
      %b_37 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x128x!tt.ptr<bf16>>
      %b_38 = tt.addptr %b_37, %b_36 : tensor<1x128x!tt.ptr<bf16>>, tensor<1x128xi32>
      %b_39 = tt.expand_dims %a_25 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %b_40 = tt.broadcast %b_38 : tensor<1x128x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
      %b_41 = tt.broadcast %b_39 : tensor<128x1xi32> -> tensor<128x128xi32>
      %b_42 = tt.addptr %b_40, %b_41 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
      %b_43 = tt.broadcast %b : tensor<128x1xi1> -> tensor<128x128xi1>
      %b_44 = tt.load %b_42, %b_43, %cst_0 : tensor<128x128x!tt.ptr<bf16>>
      %acc_45 = tt.dot %a_31, %b_44, %acc, inputPrecision = tf32 : tensor<128x128xbf16> * tensor<128x128xbf16> -> tensor<128x128xf32>
      %af = arith.extf %a_31 : tensor<128x128xbf16> to tensor<128x128xf32>
      %sst_46 = arith.mulf %af, %af : tensor<128x128xf32>
      %sst_47 = arith.addf %sst_13, %sst_46 : tensor<128x128xf32>
      scf.yield %acc_45, %sst_47 : tensor<128x128xf32>, tensor<128x128xf32>
    }
    %ss = "tt.reduce"(%sst#1) <{axis = 1 : i32}> ({
    ^bb0(%ss_13: f32, %ss_14: f32):
      %ss_15 = arith.addf %ss_13, %ss_14 : f32
      tt.reduce.return %ss_15 : f32
    }) : (tensor<128x128xf32>) -> tensor<128xf32>
    %r_6 = arith.sitofp %K : i32 to f32
    %r_7 = tt.splat %r_6 : f32 -> tensor<128xf32>
    %r_8 = arith.divf %ss, %r_7 : tensor<128xf32>
    %r_9 = tt.splat %eps : f32 -> tensor<128xf32>
    %r_10 = arith.addf %r_8, %r_9 : tensor<128xf32>
    %r_11 = math.sqrt %r_10 : tensor<128xf32>
    %r_12 = arith.divf %r, %r_11 : tensor<128xf32>
    %2 = tt.expand_dims %rm_3 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %3 = tt.splat %M : i32 -> tensor<128x1xi32>
    %4 = arith.cmpi slt, %2, %3 : tensor<128x1xi32>
    %5 = tt.expand_dims %rn_5 {axis = 0 : i32} : tensor<128xi32> -> tensor<1x128xi32>
    %6 = tt.splat %N : i32 -> tensor<1x128xi32>
    %7 = arith.cmpi slt, %5, %6 : tensor<1x128xi32>
    %8 = tt.broadcast %4 : tensor<128x1xi1> -> tensor<128x128xi1>
    %9 = tt.broadcast %7 : tensor<1x128xi1> -> tensor<128x128xi1>
    %10 = arith.andi %8, %9 : tensor<128x128xi1>
    %11 = tt.splat %sy : i32 -> tensor<128x1xi32>
    %12 = arith.muli %2, %11 : tensor<128x1xi32>
    %13 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %14 = tt.addptr %13, %12 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %15 = tt.broadcast %14 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x128x!tt.ptr<bf16>>
    %16 = tt.broadcast %5 : tensor<1x128xi32> -> tensor<128x128xi32>
    %17 = tt.addptr %15, %16 : tensor<128x128x!tt.ptr<bf16>>, tensor<128x128xi32>
    %18 = tt.expand_dims %r_12 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %19 = tt.broadcast %18 : tensor<128x1xf32> -> tensor<128x128xf32>
    %20 = arith.mulf %sst#0, %19 : tensor<128x128xf32>
    %21 = arith.truncf %20 : tensor<128x128xf32> to tensor<128x128xbf16>
    tt.store %17, %21, %10 : tensor<128x128x!tt.ptr<bf16>>
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

// A row reduction of the accumulator (post-norm): left to epilogue-norm / cluster-reduce by
// default (post-norm=true lowers it: the kernel covers one N tile, the reductions are whole rows).
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

// -----

// The normalizing loop walks the tiles backwards: its reload is not the tile stored in the same
// trip (the pass proves trip-by-trip equality; it does not reorder): left alone.
// CHECK-LABEL: tt.func public @negative_postnorm_reversed
// CHECK-NOT: ttg.warp_specialize
// POST: tt.func public @negative_postnorm_reversed
// POST-NOT: ttg.warp_specialize
// POST: tt.dot
module {
  tt.func public @negative_postnorm_reversed(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32, %eps: f32) attributes {noinline = false} {
    %c63_i32 = arith.constant 63 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %c2_i32 = arith.constant 2 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %c0_i32 = arith.constant 0 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %rstd_1 = arith.constant dense<5.120000e+02> : tensor<128xf32>
    %cst_2 = arith.constant dense<512> : tensor<256xi32>
    %c64_i32 = arith.constant 64 : i32
    %c256_i32 = arith.constant 256 : i32
    %c1_i32 = arith.constant 1 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_3 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_4 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_5 = arith.addi %rm_4, %rm_3 : tensor<128xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %ss_6 = scf.for %n = %c0_i32 to %c2_i32 step %c1_i32 iter_args(%ss_12 = %ss) -> (tensor<128xf32>)  : i32 {
      %rn = arith.muli %n, %c256_i32 : i32
      %rn_13 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %rn_14 = tt.splat %rn : i32 -> tensor<256xi32>
      %rn_15 = arith.addi %rn_14, %rn_13 : tensor<256xi32>
      %0 = arith.addi %K, %c63_i32 : i32
      %1 = arith.divsi %0, %c64_i32 : i32
      %acc = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%acc_19 = %cst) -> (tensor<128x256xf32>)  : i32 {
        %a = tt.splat %M : i32 -> tensor<128xi32>
        %a_20 = arith.remsi %rm_5, %a : tensor<128xi32>
        %a_21 = tt.expand_dims %a_20 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_22 = tt.splat %sx : i32 -> tensor<128x1xi32>
        %a_23 = arith.muli %a_21, %a_22 : tensor<128x1xi32>
        %a_24 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_25 = tt.addptr %a_24, %a_23 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_26 = arith.muli %k, %c64_i32 : i32
        %a_27 = tt.splat %a_26 : i32 -> tensor<64xi32>
        %a_28 = arith.addi %a_27, %rk : tensor<64xi32>
        %a_29 = tt.expand_dims %a_28 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_30 = tt.broadcast %a_25 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_31 = tt.broadcast %a_29 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_32 = tt.addptr %a_30, %a_31 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %a_33 = tt.load %a_32 : tensor<128x64x!tt.ptr<bf16>>
        %b = arith.remsi %rn_15, %cst_2 : tensor<256xi32>
        %b_34 = tt.expand_dims %b {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
        %b_35 = tt.splat %sw : i32 -> tensor<1x256xi32>
        %b_36 = arith.muli %b_34, %b_35 : tensor<1x256xi32>
        %b_37 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
        %b_38 = tt.addptr %b_37, %b_36 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_39 = tt.expand_dims %a_28 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_40 = tt.broadcast %b_38 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
        %b_41 = tt.broadcast %b_39 : tensor<64x1xi32> -> tensor<64x256xi32>
        %b_42 = tt.addptr %b_40, %b_41 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
        %b_43 = tt.load %b_42 : tensor<64x256x!tt.ptr<bf16>>
        %acc_44 = tt.dot %a_33, %b_43, %acc_19, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        scf.yield %acc_44 : tensor<128x256xf32>
      }
      %ss_16 = arith.mulf %acc, %acc : tensor<128x256xf32>
      %ss_17 = "tt.reduce"(%ss_16) <{axis = 1 : i32}> ({
      ^bb0(%ss_19: f32, %ss_20: f32):
        %ss_21 = arith.addf %ss_19, %ss_20 : f32
        tt.reduce.return %ss_21 : f32
      }) : (tensor<128x256xf32>) -> tensor<128xf32>
      %ss_18 = arith.addf %ss_12, %ss_17 : tensor<128xf32>
      %2 = tt.expand_dims %rm_5 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %3 = tt.splat %M : i32 -> tensor<128x1xi32>
      %4 = arith.cmpi slt, %2, %3 : tensor<128x1xi32>
      %5 = tt.splat %sy : i32 -> tensor<128x1xi32>
      %6 = arith.muli %2, %5 : tensor<128x1xi32>
      %7 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %8 = tt.addptr %7, %6 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %9 = tt.expand_dims %rn_15 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %10 = tt.broadcast %8 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %11 = tt.broadcast %9 : tensor<1x256xi32> -> tensor<128x256xi32>
      %12 = tt.addptr %10, %11 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %13 = arith.truncf %acc : tensor<128x256xf32> to tensor<128x256xbf16>
      %14 = tt.broadcast %4 : tensor<128x1xi1> -> tensor<128x256xi1>
      tt.store %12, %13, %14 : tensor<128x256x!tt.ptr<bf16>>
      scf.yield %ss_18 : tensor<128xf32>
    }
    %rstd_7 = arith.divf %ss_6, %rstd_1 : tensor<128xf32>
    %rstd_8 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_9 = arith.addf %rstd_7, %rstd_8 : tensor<128xf32>
    %rstd_10 = math.sqrt %rstd_9 : tensor<128xf32>
    %rstd_11 = arith.divf %rstd, %rstd_10 : tensor<128xf32>
    scf.for %n = %c0_i32 to %c2_i32 step %c1_i32  : i32 {
      %rn = arith.subi %c1_i32, %n : i32
      %rn_12 = arith.muli %rn, %c256_i32 : i32
      %rn_13 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %rn_14 = tt.splat %rn_12 : i32 -> tensor<256xi32>
      %rn_15 = arith.addi %rn_14, %rn_13 : tensor<256xi32>
      %y = tt.expand_dims %rm_5 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %y_16 = tt.splat %M : i32 -> tensor<128x1xi32>
      %y_17 = arith.cmpi slt, %y, %y_16 : tensor<128x1xi32>
      %y_18 = tt.splat %sy : i32 -> tensor<128x1xi32>
      %y_19 = arith.muli %y, %y_18 : tensor<128x1xi32>
      %y_20 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_21 = tt.addptr %y_20, %y_19 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_22 = tt.expand_dims %rn_15 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %y_23 = tt.broadcast %y_21 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %y_24 = tt.broadcast %y_22 : tensor<1x256xi32> -> tensor<128x256xi32>
      %y_25 = tt.addptr %y_23, %y_24 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %y_26 = tt.broadcast %y_17 : tensor<128x1xi1> -> tensor<128x256xi1>
      %y_27 = tt.load %y_25, %y_26, %cst_0 : tensor<128x256x!tt.ptr<bf16>>
      %y_28 = arith.extf %y_27 : tensor<128x256xbf16> to tensor<128x256xf32>
      %g = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %g_29 = tt.addptr %g, %rn_15 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %g_30 = tt.load %g_29 : tensor<256x!tt.ptr<bf16>>
      %g_31 = arith.extf %g_30 : tensor<256xbf16> to tensor<256xf32>
      %0 = tt.expand_dims %rstd_11 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %1 = tt.broadcast %0 : tensor<128x1xf32> -> tensor<128x256xf32>
      %2 = arith.mulf %y_28, %1 : tensor<128x256xf32>
      %3 = tt.expand_dims %g_31 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %4 = tt.broadcast %3 : tensor<1x256xf32> -> tensor<128x256xf32>
      %5 = arith.mulf %2, %4 : tensor<128x256xf32>
      %6 = arith.truncf %5 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %y_25, %6, %y_26 : tensor<128x256x!tt.ptr<bf16>>
    }
    tt.return
  }
}

// -----

// N a runtime argument: the loops over the row's tiles have no constant bounds: left alone.
// CHECK-LABEL: tt.func public @negative_postnorm_runtime_n
// CHECK-NOT: ttg.warp_specialize
// POST: tt.func public @negative_postnorm_runtime_n
// POST-NOT: ttg.warp_specialize
// POST: tt.dot
module {
  tt.func public @negative_postnorm_runtime_n(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %Y: !tt.ptr<bf16>, %M: i32, %N: i32, %K: i32, %sx: i32, %sw: i32, %sy: i32, %eps: f32) attributes {noinline = false} {
    %c63_i32 = arith.constant 63 : i32
    %c255_i32 = arith.constant 255 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %cst = arith.constant dense<0.000000e+00> : tensor<256xbf16>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x256xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %c64_i32 = arith.constant 64 : i32
    %c256_i32 = arith.constant 256 : i32
    %c128_i32 = arith.constant 128 : i32
    %pid_m = tt.get_program_id x : i32
    %rm = arith.muli %pid_m, %c128_i32 : i32
    %rm_2 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %rm_3 = tt.splat %rm : i32 -> tensor<128xi32>
    %rm_4 = arith.addi %rm_3, %rm_2 : tensor<128xi32>
    %rk = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %0 = arith.addi %N, %c255_i32 : i32
    %1 = arith.divsi %0, %c256_i32 : i32
    %ss_5 = scf.for %n = %c0_i32 to %1 step %c1_i32 iter_args(%ss_13 = %ss) -> (tensor<128xf32>)  : i32 {
      %rn = arith.muli %n, %c256_i32 : i32
      %rn_14 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %rn_15 = tt.splat %rn : i32 -> tensor<256xi32>
      %rn_16 = arith.addi %rn_15, %rn_14 : tensor<256xi32>
      %2 = arith.addi %K, %c63_i32 : i32
      %3 = arith.divsi %2, %c64_i32 : i32
      %acc = scf.for %k = %c0_i32 to %3 step %c1_i32 iter_args(%acc_25 = %cst_1) -> (tensor<128x256xf32>)  : i32 {
        %a = tt.splat %M : i32 -> tensor<128xi32>
        %a_26 = arith.remsi %rm_4, %a : tensor<128xi32>
        %a_27 = tt.expand_dims %a_26 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
        %a_28 = tt.splat %sx : i32 -> tensor<128x1xi32>
        %a_29 = arith.muli %a_27, %a_28 : tensor<128x1xi32>
        %a_30 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
        %a_31 = tt.addptr %a_30, %a_29 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
        %a_32 = arith.muli %k, %c64_i32 : i32
        %a_33 = tt.splat %a_32 : i32 -> tensor<64xi32>
        %a_34 = arith.addi %a_33, %rk : tensor<64xi32>
        %a_35 = tt.expand_dims %a_34 {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
        %a_36 = tt.broadcast %a_31 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
        %a_37 = tt.broadcast %a_35 : tensor<1x64xi32> -> tensor<128x64xi32>
        %a_38 = tt.addptr %a_36, %a_37 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %a_39 = tt.load %a_38 : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.splat %N : i32 -> tensor<256xi32>
        %b_40 = arith.remsi %rn_16, %b : tensor<256xi32>
        %b_41 = tt.expand_dims %b_40 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
        %b_42 = tt.splat %sw : i32 -> tensor<1x256xi32>
        %b_43 = arith.muli %b_41, %b_42 : tensor<1x256xi32>
        %b_44 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
        %b_45 = tt.addptr %b_44, %b_43 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
        %b_46 = tt.expand_dims %a_34 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
        %b_47 = tt.broadcast %b_45 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
        %b_48 = tt.broadcast %b_46 : tensor<64x1xi32> -> tensor<64x256xi32>
        %b_49 = tt.addptr %b_47, %b_48 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
        %b_50 = tt.load %b_49 : tensor<64x256x!tt.ptr<bf16>>
        %acc_51 = tt.dot %a_39, %b_50, %acc_25, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        scf.yield %acc_51 : tensor<128x256xf32>
      }
      %acc_17 = tt.expand_dims %rn_16 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %acc_18 = tt.splat %N : i32 -> tensor<1x256xi32>
      %acc_19 = arith.cmpi slt, %acc_17, %acc_18 : tensor<1x256xi32>
      %acc_20 = tt.broadcast %acc_19 : tensor<1x256xi1> -> tensor<128x256xi1>
      %acc_21 = arith.select %acc_20, %acc, %cst_1 : tensor<128x256xi1>, tensor<128x256xf32>
      %ss_22 = arith.mulf %acc_21, %acc_21 : tensor<128x256xf32>
      %ss_23 = "tt.reduce"(%ss_22) <{axis = 1 : i32}> ({
      ^bb0(%ss_25: f32, %ss_26: f32):
        %ss_27 = arith.addf %ss_25, %ss_26 : f32
        tt.reduce.return %ss_27 : f32
      }) : (tensor<128x256xf32>) -> tensor<128xf32>
      %ss_24 = arith.addf %ss_13, %ss_23 : tensor<128xf32>
      %4 = tt.expand_dims %rm_4 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %5 = tt.splat %M : i32 -> tensor<128x1xi32>
      %6 = arith.cmpi slt, %4, %5 : tensor<128x1xi32>
      %7 = tt.broadcast %6 : tensor<128x1xi1> -> tensor<128x256xi1>
      %8 = arith.andi %7, %acc_20 : tensor<128x256xi1>
      %9 = tt.splat %sy : i32 -> tensor<128x1xi32>
      %10 = arith.muli %4, %9 : tensor<128x1xi32>
      %11 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %12 = tt.addptr %11, %10 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %13 = tt.broadcast %12 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %14 = tt.broadcast %acc_17 : tensor<1x256xi32> -> tensor<128x256xi32>
      %15 = tt.addptr %13, %14 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %16 = arith.truncf %acc_21 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %15, %16, %8 : tensor<128x256x!tt.ptr<bf16>>
      scf.yield %ss_24 : tensor<128xf32>
    }
    %rstd_6 = arith.sitofp %N : i32 to f32
    %rstd_7 = tt.splat %rstd_6 : f32 -> tensor<128xf32>
    %rstd_8 = arith.divf %ss_5, %rstd_7 : tensor<128xf32>
    %rstd_9 = tt.splat %eps : f32 -> tensor<128xf32>
    %rstd_10 = arith.addf %rstd_8, %rstd_9 : tensor<128xf32>
    %rstd_11 = math.sqrt %rstd_10 : tensor<128xf32>
    %rstd_12 = arith.divf %rstd, %rstd_11 : tensor<128xf32>
    scf.for %n = %c0_i32 to %1 step %c1_i32  : i32 {
      %rn = arith.muli %n, %c256_i32 : i32
      %rn_13 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %rn_14 = tt.splat %rn : i32 -> tensor<256xi32>
      %rn_15 = arith.addi %rn_14, %rn_13 : tensor<256xi32>
      %mask = tt.expand_dims %rm_4 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %mask_16 = tt.splat %M : i32 -> tensor<128x1xi32>
      %mask_17 = arith.cmpi slt, %mask, %mask_16 : tensor<128x1xi32>
      %mask_18 = tt.expand_dims %rn_15 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %mask_19 = tt.splat %N : i32 -> tensor<1x256xi32>
      %mask_20 = arith.cmpi slt, %mask_18, %mask_19 : tensor<1x256xi32>
      %mask_21 = tt.broadcast %mask_17 : tensor<128x1xi1> -> tensor<128x256xi1>
      %mask_22 = tt.broadcast %mask_20 : tensor<1x256xi1> -> tensor<128x256xi1>
      %mask_23 = arith.andi %mask_21, %mask_22 : tensor<128x256xi1>
      %y = tt.splat %sy : i32 -> tensor<128x1xi32>
      %y_24 = arith.muli %mask, %y : tensor<128x1xi32>
      %y_25 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_26 = tt.addptr %y_25, %y_24 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_27 = tt.broadcast %y_26 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %y_28 = tt.broadcast %mask_18 : tensor<1x256xi32> -> tensor<128x256xi32>
      %y_29 = tt.addptr %y_27, %y_28 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %y_30 = tt.load %y_29, %mask_23, %cst_0 : tensor<128x256x!tt.ptr<bf16>>
      %y_31 = arith.extf %y_30 : tensor<128x256xbf16> to tensor<128x256xf32>
      %g = tt.splat %N : i32 -> tensor<256xi32>
      %g_32 = arith.cmpi slt, %rn_15, %g : tensor<256xi32>
      %g_33 = tt.splat %G : !tt.ptr<bf16> -> tensor<256x!tt.ptr<bf16>>
      %g_34 = tt.addptr %g_33, %rn_15 : tensor<256x!tt.ptr<bf16>>, tensor<256xi32>
      %g_35 = tt.load %g_34, %g_32, %cst : tensor<256x!tt.ptr<bf16>>
      %g_36 = arith.extf %g_35 : tensor<256xbf16> to tensor<256xf32>
      %2 = tt.expand_dims %rstd_12 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %3 = tt.broadcast %2 : tensor<128x1xf32> -> tensor<128x256xf32>
      %4 = arith.mulf %y_31, %3 : tensor<128x256xf32>
      %5 = tt.expand_dims %g_36 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
      %6 = tt.broadcast %5 : tensor<1x256xf32> -> tensor<128x256xf32>
      %7 = arith.mulf %4, %6 : tensor<128x256xf32>
      %8 = arith.truncf %7 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %y_29, %8, %mask_23 : tensor<128x256x!tt.ptr<bf16>>
    }
    tt.return
  }
}
