// hopper-ws{stats-mma=true}: a row statistic that is the A tiles' plain row sum (LayerNorm's sum
// of x with g and beta folded) computed by the tensor cores: per k-step an m64n8 wgmma of the A
// tile against the [8, BK] tile e_1 (ones in its first row, filled before the partitions start),
// the waits leaving two groups in flight; the sum of squares stays in the registers, after the
// wait (stats-late). RMSNorm and LayerNorm with g and beta in the loop keep both in the registers
// and the remark says why. Inputs: TTIR from test/lit/inputs/stats_mma_kernels.py (the op's
// kernels after lazy-prenorm, locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-mma=true,schedule=coop}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=DEFAULT

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 stats-late release-early mma-sum(0), persistent, B [N, K]; 2 row statistic(s) from the A tiles in the MMA warps (each k-step's after the wait for the previous wgmma); statistic 0 (the row sum) by the tensor cores
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 stats-late release-early, persistent, B [N, K]; 1 row statistic(s){{.*}}stats-mma not applied: no statistic is the plain row sum of the A tile
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; 2 row statistic(s){{.*}}stats-mma not applied: the A operand is computed in the k-loop (g or beta not folded)
// DEFAULT: applied: lowered to the warp-specialized template: 128x256x64 s3 coop2 w4, persistent, B [N, K]; 2 row statistic(s) from the A tiles in the MMA warps; A straight

// LayerNorm, g and beta folded: the ones tile is filled and fenced before the partitions; in the
// k-loop the row-sum wgmma (n = 8) follows the main one (n = 256), the wait leaves 2 in flight.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.local_alloc {{.*}} -> !ttg.memdesc<8x64xbf16
// CHECK: ttg.local_store
// CHECK: ttng.fence_async_shared
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot {{.*}} -> tensor<128x256xf32
// CHECK: ttng.warp_group_dot {{.*}} -> tensor<128x8xf32
// CHECK: ttng.warp_group_dot_wait {{.*}}pendings = 2
module {
  tt.func public @layernorm_gemm_naive(%X: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %G: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %B: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %W: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %Y: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %BIAS: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %M: i32 {tt.divisibility = 16 : i32}, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}, %stride_xm: i32 {tt.divisibility = 16 : i32}, %stride_wn: i32 {tt.divisibility = 16 : i32}, %stride_ym: i32 {tt.divisibility = 16 : i32}, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<256xf32>
    %num_m = arith.constant 127 : i32
    %c8_i32 = arith.constant 8 : i32
    %num_n = arith.constant 255 : i32
    %c128_i32 = arith.constant 128 : i32
    %c256_i32 = arith.constant 256 : i32
    %cst = arith.constant dense<64> : tensor<128x64xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_0 = arith.constant dense<64> : tensor<64x256xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c64_i32 = arith.constant 64 : i32
    %c63_i32 = arith.constant 63 : i32
    %cst_2 = arith.constant dense<64> : tensor<64xi32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %acc_4 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %0 = tt.get_program_id x : i32
    %num_m_6 = arith.addi %M, %num_m : i32
    %num_m_7 = arith.divsi %num_m_6, %c128_i32 : i32
    %num_n_8 = arith.addi %N, %num_n : i32
    %num_n_9 = arith.divsi %num_n_8, %c256_i32 : i32
    %group = arith.muli %num_n_9, %c8_i32 : i32
    %first_m = arith.divsi %0, %group : i32
    %first_m_10 = arith.muli %first_m, %c8_i32 : i32
    %size_m = arith.subi %num_m_7, %first_m_10 : i32
    %size_m_11 = arith.minsi %size_m, %c8_i32 : i32
    %pid_m = arith.remsi %0, %group : i32
    %pid_m_12 = arith.remsi %pid_m, %size_m_11 : i32
    %pid_m_13 = arith.addi %first_m_10, %pid_m_12 : i32
    %pid_n = arith.divsi %pid_m, %size_m_11 : i32
    %offs_m = arith.muli %pid_m_13, %c128_i32 : i32
    %offs_m_14 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_15 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_16 = arith.addi %offs_m_15, %offs_m_14 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_17 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_18 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_19 = arith.addi %offs_n_18, %offs_n_17 : tensor<256xi32>
    %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %1 = tt.splat %M : i32 -> tensor<128xi32>
    %2 = arith.remsi %offs_m_16, %1 : tensor<128xi32>
    %3 = tt.splat %N : i32 -> tensor<256xi32>
    %4 = arith.remsi %offs_n_19, %3 : tensor<256xi32>
    %x_ptrs = tt.expand_dims %2 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %x_ptrs_20 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_ptrs_21 = arith.muli %x_ptrs, %x_ptrs_20 : tensor<128x1xi32>
    %x_ptrs_22 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %x_ptrs_23 = tt.addptr %x_ptrs_22, %x_ptrs_21 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %x_ptrs_24 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %x_ptrs_25 = tt.broadcast %x_ptrs_23 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
    %x_ptrs_26 = tt.broadcast %x_ptrs_24 : tensor<1x64xi32> -> tensor<128x64xi32>
    %x_ptrs_27 = tt.addptr %x_ptrs_25, %x_ptrs_26 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
    %5 = arith.addi %K, %c63_i32 : i32
    %6 = arith.divsi %5, %c64_i32 : i32
    %mean = arith.sitofp %K : i32 to f32
    %mean_28 = tt.splat %mean : f32 -> tensor<128xf32>
    %rstd_29 = tt.splat %eps : f32 -> tensor<128xf32>
    %w_ptrs = tt.expand_dims %4 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %w_ptrs_30 = tt.splat %stride_wn : i32 -> tensor<1x256xi32>
    %w_ptrs_31 = arith.muli %w_ptrs, %w_ptrs_30 : tensor<1x256xi32>
    %w_ptrs_32 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
    %w_ptrs_33 = tt.addptr %w_ptrs_32, %w_ptrs_31 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
    %w_ptrs_34 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %w_ptrs_35 = tt.broadcast %w_ptrs_33 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
    %w_ptrs_36 = tt.broadcast %w_ptrs_34 : tensor<64x1xi32> -> tensor<64x256xi32>
    %w_ptrs_37 = tt.addptr %w_ptrs_35, %w_ptrs_36 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
    %acc_38:6 = scf.for %arg13 = %c0_i32 to %6 step %c1_i32 iter_args(%arg14 = %x_ptrs_27, %arg15 = %w_ptrs_37, %arg16 = %acc_4, %arg17 = %cst_1, %arg18 = %cst_1, %arg19 = %acc) -> (tensor<128x64x!tt.ptr<bf16>>, tensor<64x256x!tt.ptr<bf16>>, tensor<128x256xf32>, tensor<128xf32>, tensor<128xf32>, tensor<256xf32>)  : i32 {
      %kmask = arith.cmpi slt, %offs_k, %cst_2 : tensor<64xi32>
      %x = tt.expand_dims %kmask {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
      %x_62 = tt.broadcast %x : tensor<1x64xi1> -> tensor<128x64xi1>
      %x_63 = tt.load %arg14, %x_62, %cst_3 : tensor<128x64x!tt.ptr<bf16>>
      %x_64 = tt.load %arg14, %x_62, %cst_3 cacheModifier = cg : tensor<128x64x!tt.ptr<bf16>>
      %b = tt.expand_dims %kmask {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %b_65 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x256xi1>
      %b_66 = tt.load %arg15, %b_65, %cst_5 : tensor<64x256x!tt.ptr<bf16>>
      %b_67 = tt.load %arg15, %b_65, %cst_5 cacheModifier = cg : tensor<64x256x!tt.ptr<bf16>>
      %acc_68 = tt.dot %x_63, %b_66, %arg16, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      %x_ptrs_69 = tt.addptr %arg14, %cst : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %w_ptrs_70 = tt.addptr %arg15, %cst_0 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %x_71 = arith.extf %x_64 : tensor<128x64xbf16> to tensor<128x64xf32>
      %s1 = "tt.reduce"(%x_71) <{axis = 1 : i32}> ({
      ^bb0(%s1_78: f32, %s1_79: f32):
        %s1_80 = arith.addf %s1_78, %s1_79 : f32
        tt.reduce.return %s1_80 : f32
      }) : (tensor<128x64xf32>) -> tensor<128xf32>
      %s1_72 = arith.addf %arg17, %s1 : tensor<128xf32>
      %s2 = arith.mulf %x_71, %x_71 : tensor<128x64xf32>
      %s2_73 = "tt.reduce"(%s2) <{axis = 1 : i32}> ({
      ^bb0(%s2_78: f32, %s2_79: f32):
        %s2_80 = arith.addf %s2_78, %s2_79 : f32
        tt.reduce.return %s2_80 : f32
      }) : (tensor<128x64xf32>) -> tensor<128xf32>
      %s2_74 = arith.addf %arg18, %s2_73 : tensor<128xf32>
      %acc_75 = arith.extf %b_67 : tensor<64x256xbf16> to tensor<64x256xf32>
      %acc_76 = "tt.reduce"(%acc_75) <{axis = 0 : i32}> ({
      ^bb0(%acc_78: f32, %acc_79: f32):
        %acc_80 = arith.addf %acc_78, %acc_79 : f32
        tt.reduce.return %acc_80 : f32
      }) : (tensor<64x256xf32>) -> tensor<256xf32>
      %acc_77 = arith.addf %arg19, %acc_76 : tensor<256xf32>
      scf.yield %x_ptrs_69, %w_ptrs_70, %acc_68, %s1_72, %s2_74, %acc_77 : tensor<128x64x!tt.ptr<bf16>>, tensor<64x256x!tt.ptr<bf16>>, tensor<128x256xf32>, tensor<128xf32>, tensor<128xf32>, tensor<256xf32>
    }
    %mean_39 = arith.divf %acc_38#3, %mean_28 : tensor<128xf32>
    %var = arith.divf %acc_38#4, %mean_28 : tensor<128xf32>
    %var_40 = arith.mulf %mean_39, %mean_39 : tensor<128xf32>
    %var_41 = arith.subf %var, %var_40 : tensor<128xf32>
    %rstd_42 = arith.addf %var_41, %rstd_29 : tensor<128xf32>
    %rstd_43 = math.sqrt %rstd_42 : tensor<128xf32>
    %rstd_44 = arith.divf %rstd, %rstd_43 : tensor<128xf32>
    %acc_45 = tt.expand_dims %rstd_44 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %acc_46 = tt.broadcast %acc_45 : tensor<128x1xf32> -> tensor<128x256xf32>
    %acc_47 = tt.expand_dims %mean_39 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %acc_48 = tt.broadcast %acc_47 : tensor<128x1xf32> -> tensor<128x256xf32>
    %acc_49 = tt.expand_dims %acc_38#5 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
    %acc_50 = tt.broadcast %acc_49 : tensor<1x256xf32> -> tensor<128x256xf32>
    %acc_51 = arith.mulf %acc_48, %acc_50 : tensor<128x256xf32>
    %acc_52 = arith.subf %acc_38#2, %acc_51 : tensor<128x256xf32>
    %acc_53 = arith.mulf %acc_52, %acc_46 : tensor<128x256xf32>
    %y_ptrs = tt.expand_dims %offs_m_16 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %y_ptrs_54 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
    %y_ptrs_55 = arith.muli %y_ptrs, %y_ptrs_54 : tensor<128x1xi32>
    %y_ptrs_56 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %y_ptrs_57 = tt.addptr %y_ptrs_56, %y_ptrs_55 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %y_ptrs_58 = tt.expand_dims %offs_n_19 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %y_ptrs_59 = tt.broadcast %y_ptrs_57 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %y_ptrs_60 = tt.broadcast %y_ptrs_58 : tensor<1x256xi32> -> tensor<128x256xi32>
    %y_ptrs_61 = tt.addptr %y_ptrs_59, %y_ptrs_60 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %7 = tt.splat %M : i32 -> tensor<128x1xi32>
    %8 = arith.cmpi slt, %y_ptrs, %7 : tensor<128x1xi32>
    %9 = tt.splat %N : i32 -> tensor<1x256xi32>
    %10 = arith.cmpi slt, %y_ptrs_58, %9 : tensor<1x256xi32>
    %11 = tt.broadcast %8 : tensor<128x1xi1> -> tensor<128x256xi1>
    %12 = tt.broadcast %10 : tensor<1x256xi1> -> tensor<128x256xi1>
    %13 = arith.andi %11, %12 : tensor<128x256xi1>
    %14 = arith.truncf %acc_53 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %y_ptrs_61, %14, %13 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}

// -----

// RMSNorm: no plain row sum; no second wgmma.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-NOT: tensor<128x8xf32
// CHECK: ttg.warp_specialize
module {
  tt.func public @rmsnorm_gemm_naive(%X: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %G: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %W: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %Y: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %BIAS: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %M: i32 {tt.divisibility = 16 : i32}, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}, %stride_xm: i32 {tt.divisibility = 16 : i32}, %stride_wn: i32 {tt.divisibility = 16 : i32}, %stride_ym: i32 {tt.divisibility = 16 : i32}, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<0.000000e+00> : tensor<128x64xf32>
    %c8_i32 = arith.constant 8 : i32
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %cst_1 = arith.constant dense<64> : tensor<64xi32>
    %c63_i32 = arith.constant 63 : i32
    %c64_i32 = arith.constant 64 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_3 = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_4 = arith.constant dense<64> : tensor<128x64xi32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %cst_6 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst_7 = arith.constant dense<64> : tensor<64x256xi32>
    %c255_i32 = arith.constant 255 : i32
    %c256_i32 = arith.constant 256 : i32
    %c132_i32 = arith.constant 132 : i32
    %c128_i32 = arith.constant 128 : i32
    %c127_i32 = arith.constant 127 : i32
    %num_tiles = arith.addi %M, %c127_i32 : i32
    %num_tiles_8 = arith.divsi %num_tiles, %c128_i32 : i32
    %num_tiles_9 = arith.addi %N, %c255_i32 : i32
    %num_tiles_10 = arith.divsi %num_tiles_9, %c256_i32 : i32
    %num_tiles_11 = arith.muli %num_tiles_8, %num_tiles_10 : i32
    %0 = tt.get_program_id x : i32
    scf.for %arg12 = %0 to %num_tiles_11 step %c132_i32  : i32 {
      %group = arith.muli %num_tiles_10, %c8_i32 : i32
      %first_m = arith.divsi %arg12, %group : i32
      %first_m_12 = arith.muli %first_m, %c8_i32 : i32
      %size_m = arith.subi %num_tiles_8, %first_m_12 : i32
      %size_m_13 = arith.minsi %size_m, %c8_i32 : i32
      %pid_m = arith.remsi %arg12, %group : i32
      %pid_m_14 = arith.remsi %pid_m, %size_m_13 : i32
      %pid_m_15 = arith.addi %first_m_12, %pid_m_14 : i32
      %pid_n = arith.divsi %pid_m, %size_m_13 : i32
      %offs_m = arith.muli %pid_m_15, %c128_i32 : i32
      %offs_m_16 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
      %offs_m_17 = tt.splat %offs_m : i32 -> tensor<128xi32>
      %offs_m_18 = arith.addi %offs_m_17, %offs_m_16 : tensor<128xi32>
      %offs_n = arith.muli %pid_n, %c256_i32 : i32
      %offs_n_19 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
      %offs_n_20 = tt.splat %offs_n : i32 -> tensor<256xi32>
      %offs_n_21 = arith.addi %offs_n_20, %offs_n_19 : tensor<256xi32>
      %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %1 = tt.splat %M : i32 -> tensor<128xi32>
      %2 = arith.remsi %offs_m_18, %1 : tensor<128xi32>
      %3 = tt.splat %N : i32 -> tensor<256xi32>
      %4 = arith.remsi %offs_n_21, %3 : tensor<256xi32>
      %x_ptrs = tt.expand_dims %2 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %x_ptrs_22 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
      %x_ptrs_23 = arith.muli %x_ptrs, %x_ptrs_22 : tensor<128x1xi32>
      %x_ptrs_24 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %x_ptrs_25 = tt.addptr %x_ptrs_24, %x_ptrs_23 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %x_ptrs_26 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
      %x_ptrs_27 = tt.broadcast %x_ptrs_25 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
      %x_ptrs_28 = tt.broadcast %x_ptrs_26 : tensor<1x64xi32> -> tensor<128x64xi32>
      %x_ptrs_29 = tt.addptr %x_ptrs_27, %x_ptrs_28 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %rstd = arith.addi %K, %c63_i32 : i32
      %rstd_30 = arith.divsi %rstd, %c64_i32 : i32
      %rstd_31 = arith.sitofp %K : i32 to f32
      %rstd_32 = tt.splat %rstd_31 : f32 -> tensor<128xf32>
      %rstd_33 = tt.splat %eps : f32 -> tensor<128xf32>
      %w_ptrs = tt.expand_dims %4 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %w_ptrs_34 = tt.splat %stride_wn : i32 -> tensor<1x256xi32>
      %w_ptrs_35 = arith.muli %w_ptrs, %w_ptrs_34 : tensor<1x256xi32>
      %w_ptrs_36 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
      %w_ptrs_37 = tt.addptr %w_ptrs_36, %w_ptrs_35 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
      %w_ptrs_38 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %w_ptrs_39 = tt.broadcast %w_ptrs_37 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
      %w_ptrs_40 = tt.broadcast %w_ptrs_38 : tensor<64x1xi32> -> tensor<64x256xi32>
      %w_ptrs_41 = tt.addptr %w_ptrs_39, %w_ptrs_40 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %acc:4 = scf.for %arg13 = %c0_i32 to %rstd_30 step %c1_i32 iter_args(%arg14 = %x_ptrs_29, %arg15 = %w_ptrs_41, %arg16 = %cst_6, %arg17 = %cst) -> (tensor<128x64x!tt.ptr<bf16>>, tensor<64x256x!tt.ptr<bf16>>, tensor<128x256xf32>, tensor<128x64xf32>)  : i32 {
        %kmask = arith.cmpi slt, %offs_k, %cst_1 : tensor<64xi32>
        %x = tt.expand_dims %kmask {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
        %x_59 = tt.broadcast %x : tensor<1x64xi1> -> tensor<128x64xi1>
        %x_60 = tt.load %arg14, %x_59, %cst_0 {tt.latency = 2 : i32} : tensor<128x64x!tt.ptr<bf16>>
        %x_61 = tt.load %arg14, %x_59, %cst_0 cacheModifier = cg {tt.latency = 2 : i32} : tensor<128x64x!tt.ptr<bf16>>
        %b = tt.expand_dims %kmask {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
        %b_62 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x256xi1>
        %b_63 = tt.load %arg15, %b_62, %cst_5 {tt.latency = 2 : i32} : tensor<64x256x!tt.ptr<bf16>>
        %acc_64 = tt.dot %x_60, %b_63, %arg16, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
        %x_ptrs_65 = tt.addptr %arg14, %cst_4 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
        %w_ptrs_66 = tt.addptr %arg15, %cst_7 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
        %x_67 = arith.extf %x_61 : tensor<128x64xbf16> to tensor<128x64xf32>
        %ss = arith.mulf %x_67, %x_67 : tensor<128x64xf32>
        %acc_68 = arith.addf %arg17, %ss : tensor<128x64xf32>
        scf.yield %x_ptrs_65, %w_ptrs_66, %acc_64, %acc_68 : tensor<128x64x!tt.ptr<bf16>>, tensor<64x256x!tt.ptr<bf16>>, tensor<128x256xf32>, tensor<128x64xf32>
      }
      %acc_42 = "tt.reduce"(%acc#3) <{axis = 1 : i32}> ({
      ^bb0(%acc_59: f32, %acc_60: f32):
        %acc_61 = arith.addf %acc_59, %acc_60 : f32
        tt.reduce.return %acc_61 : f32
      }) : (tensor<128x64xf32>) -> tensor<128xf32>
      %acc_43 = arith.addf %acc_42, %cst_2 : tensor<128xf32>
      %rstd_44 = arith.divf %acc_43, %rstd_32 : tensor<128xf32>
      %rstd_45 = arith.addf %rstd_44, %rstd_33 : tensor<128xf32>
      %rstd_46 = math.sqrt %rstd_45 : tensor<128xf32>
      %rstd_47 = arith.divf %cst_3, %rstd_46 : tensor<128xf32>
      %acc_48 = tt.expand_dims %rstd_47 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
      %acc_49 = tt.broadcast %acc_48 : tensor<128x1xf32> -> tensor<128x256xf32>
      %acc_50 = arith.mulf %acc#2, %acc_49 : tensor<128x256xf32>
      %y_ptrs = tt.expand_dims %offs_m_18 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
      %y_ptrs_51 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
      %y_ptrs_52 = arith.muli %y_ptrs, %y_ptrs_51 : tensor<128x1xi32>
      %y_ptrs_53 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
      %y_ptrs_54 = tt.addptr %y_ptrs_53, %y_ptrs_52 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
      %y_ptrs_55 = tt.expand_dims %offs_n_21 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
      %y_ptrs_56 = tt.broadcast %y_ptrs_54 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
      %y_ptrs_57 = tt.broadcast %y_ptrs_55 : tensor<1x256xi32> -> tensor<128x256xi32>
      %y_ptrs_58 = tt.addptr %y_ptrs_56, %y_ptrs_57 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
      %5 = tt.splat %M : i32 -> tensor<128x1xi32>
      %6 = arith.cmpi slt, %y_ptrs, %5 : tensor<128x1xi32>
      %7 = tt.splat %N : i32 -> tensor<1x256xi32>
      %8 = arith.cmpi slt, %y_ptrs_55, %7 : tensor<1x256xi32>
      %9 = tt.broadcast %6 : tensor<128x1xi1> -> tensor<128x256xi1>
      %10 = tt.broadcast %8 : tensor<1x256xi1> -> tensor<128x256xi1>
      %11 = arith.andi %9, %10 : tensor<128x256xi1>
      %12 = arith.truncf %acc_50 : tensor<128x256xf32> to tensor<128x256xbf16>
      tt.store %y_ptrs_58, %12, %11 : tensor<128x256x!tt.ptr<bf16>>
    } {tt.flatten}
    tt.return
  }
}

// -----

// LayerNorm with g and beta in the loop: the register-operand k-loop, no second wgmma.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-NOT: tensor<128x8xf32
// CHECK: ttg.warp_specialize
module {
  tt.func public @layernorm_gemm_naive(%X: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %G: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %B: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %W: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %Y: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %BIAS: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, %M: i32 {tt.divisibility = 16 : i32}, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}, %stride_xm: i32 {tt.divisibility = 16 : i32}, %stride_wn: i32 {tt.divisibility = 16 : i32}, %stride_ym: i32 {tt.divisibility = 16 : i32}, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<256xf32>
    %acc_0 = arith.constant dense<1.562500e-02> : tensor<128xf32>
    %num_m = arith.constant 127 : i32
    %c8_i32 = arith.constant 8 : i32
    %num_n = arith.constant 255 : i32
    %c128_i32 = arith.constant 128 : i32
    %c256_i32 = arith.constant 256 : i32
    %c64_i32 = arith.constant 64 : i32
    %cst = arith.constant dense<64> : tensor<128x64xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %cst_1 = arith.constant dense<64> : tensor<64x256xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64xbf16>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<128xf32>
    %c63_i32 = arith.constant 63 : i32
    %cst_4 = arith.constant dense<64> : tensor<64xi32>
    %cst_5 = arith.constant dense<0.000000e+00> : tensor<128x64xbf16>
    %acc_6 = arith.constant dense<0.000000e+00> : tensor<128x256xf32>
    %cst_7 = arith.constant dense<0.000000e+00> : tensor<64x256xbf16>
    %0 = tt.get_program_id x : i32
    %num_m_8 = arith.addi %M, %num_m : i32
    %num_m_9 = arith.divsi %num_m_8, %c128_i32 : i32
    %num_n_10 = arith.addi %N, %num_n : i32
    %num_n_11 = arith.divsi %num_n_10, %c256_i32 : i32
    %group = arith.muli %num_n_11, %c8_i32 : i32
    %first_m = arith.divsi %0, %group : i32
    %first_m_12 = arith.muli %first_m, %c8_i32 : i32
    %size_m = arith.subi %num_m_9, %first_m_12 : i32
    %size_m_13 = arith.minsi %size_m, %c8_i32 : i32
    %pid_m = arith.remsi %0, %group : i32
    %pid_m_14 = arith.remsi %pid_m, %size_m_13 : i32
    %pid_m_15 = arith.addi %first_m_12, %pid_m_14 : i32
    %pid_n = arith.divsi %pid_m, %size_m_13 : i32
    %offs_m = arith.muli %pid_m_15, %c128_i32 : i32
    %offs_m_16 = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32>
    %offs_m_17 = tt.splat %offs_m : i32 -> tensor<128xi32>
    %offs_m_18 = arith.addi %offs_m_17, %offs_m_16 : tensor<128xi32>
    %offs_n = arith.muli %pid_n, %c256_i32 : i32
    %offs_n_19 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32>
    %offs_n_20 = tt.splat %offs_n : i32 -> tensor<256xi32>
    %offs_n_21 = arith.addi %offs_n_20, %offs_n_19 : tensor<256xi32>
    %offs_k = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %1 = tt.splat %M : i32 -> tensor<128xi32>
    %2 = arith.remsi %offs_m_18, %1 : tensor<128xi32>
    %3 = tt.splat %N : i32 -> tensor<256xi32>
    %4 = arith.remsi %offs_n_21, %3 : tensor<256xi32>
    %x_ptrs = tt.expand_dims %2 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %x_ptrs_22 = tt.splat %stride_xm : i32 -> tensor<128x1xi32>
    %x_ptrs_23 = arith.muli %x_ptrs, %x_ptrs_22 : tensor<128x1xi32>
    %x_ptrs_24 = tt.splat %X : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %x_ptrs_25 = tt.addptr %x_ptrs_24, %x_ptrs_23 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %x_ptrs_26 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %x_ptrs_27 = tt.broadcast %x_ptrs_25 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x64x!tt.ptr<bf16>>
    %x_ptrs_28 = tt.broadcast %x_ptrs_26 : tensor<1x64xi32> -> tensor<128x64xi32>
    %x_ptrs_29 = tt.addptr %x_ptrs_27, %x_ptrs_28 : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
    %5 = arith.addi %K, %c63_i32 : i32
    %6 = arith.divsi %5, %c64_i32 : i32
    %mean = arith.sitofp %K : i32 to f32
    %mean_30 = tt.splat %mean : f32 -> tensor<128xf32>
    %rstd_31 = tt.splat %eps : f32 -> tensor<128xf32>
    %w_ptrs = tt.expand_dims %4 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %w_ptrs_32 = tt.splat %stride_wn : i32 -> tensor<1x256xi32>
    %w_ptrs_33 = arith.muli %w_ptrs, %w_ptrs_32 : tensor<1x256xi32>
    %w_ptrs_34 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
    %w_ptrs_35 = tt.addptr %w_ptrs_34, %w_ptrs_33 : tensor<1x256x!tt.ptr<bf16>>, tensor<1x256xi32>
    %w_ptrs_36 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %w_ptrs_37 = tt.broadcast %w_ptrs_35 : tensor<1x256x!tt.ptr<bf16>> -> tensor<64x256x!tt.ptr<bf16>>
    %w_ptrs_38 = tt.broadcast %w_ptrs_36 : tensor<64x1xi32> -> tensor<64x256xi32>
    %w_ptrs_39 = tt.addptr %w_ptrs_37, %w_ptrs_38 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
    %kmask = arith.cmpi slt, %offs_k, %cst_4 : tensor<64xi32>
    %x = tt.expand_dims %kmask {axis = 0 : i32} : tensor<64xi1> -> tensor<1x64xi1>
    %x_40 = tt.broadcast %x : tensor<1x64xi1> -> tensor<128x64xi1>
    %x_41 = tt.load %x_ptrs_29, %x_40, %cst_5 : tensor<128x64x!tt.ptr<bf16>>
    %acc_42 = arith.extf %x_41 : tensor<128x64xbf16> to tensor<128x64xf32>
    %acc_43 = "tt.reduce"(%acc_42) <{axis = 1 : i32}> ({
    ^bb0(%acc_75: f32, %acc_76: f32):
      %acc_77 = arith.addf %acc_75, %acc_76 : f32
      tt.reduce.return %acc_77 : f32
    }) : (tensor<128x64xf32>) -> tensor<128xf32>
    %acc_44 = arith.mulf %acc_43, %acc_0 : tensor<128xf32>
    %acc_45 = tt.expand_dims %acc_44 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %acc_46 = tt.broadcast %acc_45 : tensor<128x1xf32> -> tensor<128x64xf32>
    %acc_47:7 = scf.for %arg13 = %c0_i32 to %6 step %c1_i32 iter_args(%arg14 = %x_ptrs_29, %arg15 = %w_ptrs_39, %arg16 = %acc_6, %arg17 = %cst_3, %arg18 = %cst_3, %arg19 = %acc, %arg20 = %acc) -> (tensor<128x64x!tt.ptr<bf16>>, tensor<64x256x!tt.ptr<bf16>>, tensor<128x256xf32>, tensor<128xf32>, tensor<128xf32>, tensor<256xf32>, tensor<256xf32>)  : i32 {
      %x_75 = tt.load %arg14, %x_40, %cst_5 : tensor<128x64x!tt.ptr<bf16>>
      %x_76 = tt.load %arg14, %x_40, %cst_5 cacheModifier = cg : tensor<128x64x!tt.ptr<bf16>>
      %x_77 = arith.extf %x_75 : tensor<128x64xbf16> to tensor<128x64xf32>
      %a = arith.subf %x_77, %acc_46 : tensor<128x64xf32>
      %g = arith.muli %arg13, %c64_i32 : i32
      %g_78 = tt.addptr %G, %g : !tt.ptr<bf16>, i32
      %g_79 = tt.splat %g_78 : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
      %g_80 = tt.addptr %g_79, %offs_k : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
      %g_81 = tt.load %g_80, %kmask, %cst_2 : tensor<64x!tt.ptr<bf16>>
      %g_82 = arith.extf %g_81 : tensor<64xbf16> to tensor<64xf32>
      %a_83 = tt.expand_dims %g_82 {axis = 0 : i32} : tensor<64xf32> -> tensor<1x64xf32>
      %a_84 = tt.broadcast %a_83 : tensor<1x64xf32> -> tensor<128x64xf32>
      %a_85 = arith.mulf %a, %a_84 : tensor<128x64xf32>
      %beta = tt.addptr %B, %g : !tt.ptr<bf16>, i32
      %beta_86 = tt.splat %beta : !tt.ptr<bf16> -> tensor<64x!tt.ptr<bf16>>
      %beta_87 = tt.addptr %beta_86, %offs_k : tensor<64x!tt.ptr<bf16>>, tensor<64xi32>
      %beta_88 = tt.load %beta_87, %kmask, %cst_2 : tensor<64x!tt.ptr<bf16>>
      %beta_89 = arith.extf %beta_88 : tensor<64xbf16> to tensor<64xf32>
      %b = tt.expand_dims %kmask {axis = 1 : i32} : tensor<64xi1> -> tensor<64x1xi1>
      %b_90 = tt.broadcast %b : tensor<64x1xi1> -> tensor<64x256xi1>
      %b_91 = tt.load %arg15, %b_90, %cst_7 : tensor<64x256x!tt.ptr<bf16>>
      %b_92 = tt.load %arg15, %b_90, %cst_7 cacheModifier = cg : tensor<64x256x!tt.ptr<bf16>>
      %acc_93 = arith.truncf %a_85 : tensor<128x64xf32> to tensor<128x64xbf16>
      %acc_94 = tt.dot %acc_93, %b_91, %arg16, inputPrecision = tf32 : tensor<128x64xbf16> * tensor<64x256xbf16> -> tensor<128x256xf32>
      %x_ptrs_95 = tt.addptr %arg14, %cst : tensor<128x64x!tt.ptr<bf16>>, tensor<128x64xi32>
      %w_ptrs_96 = tt.addptr %arg15, %cst_1 : tensor<64x256x!tt.ptr<bf16>>, tensor<64x256xi32>
      %x_97 = arith.extf %x_76 : tensor<128x64xbf16> to tensor<128x64xf32>
      %s1 = "tt.reduce"(%x_97) <{axis = 1 : i32}> ({
      ^bb0(%s1_112: f32, %s1_113: f32):
        %s1_114 = arith.addf %s1_112, %s1_113 : f32
        tt.reduce.return %s1_114 : f32
      }) : (tensor<128x64xf32>) -> tensor<128xf32>
      %s1_98 = arith.addf %arg17, %s1 : tensor<128xf32>
      %s2 = arith.mulf %x_97, %x_97 : tensor<128x64xf32>
      %s2_99 = "tt.reduce"(%s2) <{axis = 1 : i32}> ({
      ^bb0(%s2_112: f32, %s2_113: f32):
        %s2_114 = arith.addf %s2_112, %s2_113 : f32
        tt.reduce.return %s2_114 : f32
      }) : (tensor<128x64xf32>) -> tensor<128xf32>
      %s2_100 = arith.addf %arg18, %s2_99 : tensor<128xf32>
      %acc_101 = arith.extf %b_92 : tensor<64x256xbf16> to tensor<64x256xf32>
      %acc_102 = tt.expand_dims %g_82 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_103 = tt.broadcast %acc_102 : tensor<64x1xf32> -> tensor<64x256xf32>
      %acc_104 = arith.mulf %acc_101, %acc_103 : tensor<64x256xf32>
      %acc_105 = tt.expand_dims %beta_89 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_106 = tt.broadcast %acc_105 : tensor<64x1xf32> -> tensor<64x256xf32>
      %acc_107 = arith.mulf %acc_101, %acc_106 : tensor<64x256xf32>
      %acc_108 = "tt.reduce"(%acc_104) <{axis = 0 : i32}> ({
      ^bb0(%acc_112: f32, %acc_113: f32):
        %acc_114 = arith.addf %acc_112, %acc_113 : f32
        tt.reduce.return %acc_114 : f32
      }) : (tensor<64x256xf32>) -> tensor<256xf32>
      %acc_109 = arith.addf %arg19, %acc_108 : tensor<256xf32>
      %acc_110 = "tt.reduce"(%acc_107) <{axis = 0 : i32}> ({
      ^bb0(%acc_112: f32, %acc_113: f32):
        %acc_114 = arith.addf %acc_112, %acc_113 : f32
        tt.reduce.return %acc_114 : f32
      }) : (tensor<64x256xf32>) -> tensor<256xf32>
      %acc_111 = arith.addf %arg20, %acc_110 : tensor<256xf32>
      scf.yield %x_ptrs_95, %w_ptrs_96, %acc_94, %s1_98, %s2_100, %acc_109, %acc_111 : tensor<128x64x!tt.ptr<bf16>>, tensor<64x256x!tt.ptr<bf16>>, tensor<128x256xf32>, tensor<128xf32>, tensor<128xf32>, tensor<256xf32>, tensor<256xf32>
    }
    %mean_48 = arith.divf %acc_47#3, %mean_30 : tensor<128xf32>
    %var = arith.divf %acc_47#4, %mean_30 : tensor<128xf32>
    %var_49 = arith.mulf %mean_48, %mean_48 : tensor<128xf32>
    %var_50 = arith.subf %var, %var_49 : tensor<128xf32>
    %rstd_51 = arith.addf %var_50, %rstd_31 : tensor<128xf32>
    %rstd_52 = math.sqrt %rstd_51 : tensor<128xf32>
    %rstd_53 = arith.divf %rstd, %rstd_52 : tensor<128xf32>
    %acc_54 = tt.expand_dims %rstd_53 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %acc_55 = tt.broadcast %acc_54 : tensor<128x1xf32> -> tensor<128x256xf32>
    %acc_56 = arith.subf %mean_48, %acc_44 : tensor<128xf32>
    %acc_57 = tt.expand_dims %acc_56 {axis = 1 : i32} : tensor<128xf32> -> tensor<128x1xf32>
    %acc_58 = tt.broadcast %acc_57 : tensor<128x1xf32> -> tensor<128x256xf32>
    %acc_59 = tt.expand_dims %acc_47#5 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
    %acc_60 = tt.broadcast %acc_59 : tensor<1x256xf32> -> tensor<128x256xf32>
    %acc_61 = arith.mulf %acc_58, %acc_60 : tensor<128x256xf32>
    %acc_62 = arith.subf %acc_47#2, %acc_61 : tensor<128x256xf32>
    %acc_63 = arith.mulf %acc_62, %acc_55 : tensor<128x256xf32>
    %acc_64 = tt.expand_dims %acc_47#6 {axis = 0 : i32} : tensor<256xf32> -> tensor<1x256xf32>
    %acc_65 = tt.broadcast %acc_64 : tensor<1x256xf32> -> tensor<128x256xf32>
    %acc_66 = arith.addf %acc_63, %acc_65 : tensor<128x256xf32>
    %y_ptrs = tt.expand_dims %offs_m_18 {axis = 1 : i32} : tensor<128xi32> -> tensor<128x1xi32>
    %y_ptrs_67 = tt.splat %stride_ym : i32 -> tensor<128x1xi32>
    %y_ptrs_68 = arith.muli %y_ptrs, %y_ptrs_67 : tensor<128x1xi32>
    %y_ptrs_69 = tt.splat %Y : !tt.ptr<bf16> -> tensor<128x1x!tt.ptr<bf16>>
    %y_ptrs_70 = tt.addptr %y_ptrs_69, %y_ptrs_68 : tensor<128x1x!tt.ptr<bf16>>, tensor<128x1xi32>
    %y_ptrs_71 = tt.expand_dims %offs_n_21 {axis = 0 : i32} : tensor<256xi32> -> tensor<1x256xi32>
    %y_ptrs_72 = tt.broadcast %y_ptrs_70 : tensor<128x1x!tt.ptr<bf16>> -> tensor<128x256x!tt.ptr<bf16>>
    %y_ptrs_73 = tt.broadcast %y_ptrs_71 : tensor<1x256xi32> -> tensor<128x256xi32>
    %y_ptrs_74 = tt.addptr %y_ptrs_72, %y_ptrs_73 : tensor<128x256x!tt.ptr<bf16>>, tensor<128x256xi32>
    %7 = tt.splat %M : i32 -> tensor<128x1xi32>
    %8 = arith.cmpi slt, %y_ptrs, %7 : tensor<128x1xi32>
    %9 = tt.splat %N : i32 -> tensor<1x256xi32>
    %10 = arith.cmpi slt, %y_ptrs_71, %9 : tensor<1x256xi32>
    %11 = tt.broadcast %8 : tensor<128x1xi1> -> tensor<128x256xi1>
    %12 = tt.broadcast %10 : tensor<1x256xi1> -> tensor<128x256xi1>
    %13 = arith.andi %11, %12 : tensor<128x256xi1>
    %14 = arith.truncf %acc_66 : tensor<128x256xf32> to tensor<128x256xbf16>
    tt.store %y_ptrs_74, %14, %13 : tensor<128x256x!tt.ptr<bf16>>
    tt.return
  }
}
