// lazy-prenorm: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs are TTIR from test/lit/inputs/lazy_prenorm_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --lazy-prenorm %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{shift=false,stats-source=tile}' %s 2>/dev/null | FileCheck %s --check-prefix=OPTS
// RUN: normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{stats-source=reload-volatile}' %s 2>/dev/null | FileCheck %s --check-prefix=VOLATILE
// RUN: not normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{stats-source=nope}' %s 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{stats-accumulate=row}' %s 2>/dev/null | FileCheck %s --check-prefix=ROW
// RUN: normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{num-stages=3}' %s 2>%t.stage-remark | FileCheck %s --check-prefix=STAGE
// RUN: FileCheck %s --check-prefix=STAGE-REMARK < %t.stage-remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{num-stages=60}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=STAGE-BIG
// RUN: normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{stage-reloads=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=STAGE-UNKNOWN
// RUN: normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{stage-reloads=false,num-stages=3}' %s 2>/dev/null | FileCheck %s --check-prefix=NOSTAGE
// RUN: not normfuse-opt --split-input-file --pass-pipeline='lazy-prenorm{stage-reloads=maybe}' %s 2>&1 | FileCheck %s --check-prefix=BADSTAGE

// Options that fail before any input is read, and one that must leave no trace anywhere.
// BADOPT: stats-source} must be auto, tile, reload or reload-volatile, got 'nope'
// BADSTAGE: stage-reloads} must be auto, true or false, got 'maybe'
// NOSTAGE-NOT: tt.latency

// The norm weight stays in the loop; the statistics read a cg reload of the tile (stats-source=auto).
// A single statistic accumulates in a tile reduced once after the loop (stats-accumulate=auto).
// CHECK-LABEL: tt.func public @rms_weight_in_loop
// CHECK: %[[L:.+]]:4 = scf.for
// CHECK: %[[X:.+]] = tt.load %[[P:arg[0-9]+]], %[[MASK:[0-9]+]], %[[OTHER:cst[_0-9]*]] :
// CHECK: %[[XR:.+]] = tt.load %[[P]], %[[MASK]], %[[OTHER]] cacheModifier = cg
// CHECK: tt.dot
// CHECK: %[[XF:.+]] = arith.extf %[[XR]]
// CHECK: %[[SQ:.+]] = arith.mulf %[[XF]], %[[XF]]
// CHECK-NOT: "tt.reduce"
// CHECK: arith.addf %{{.+}}, %[[SQ]] : tensor<64x32xf32>
// CHECK: scf.yield
// CHECK-NOT: scf.for
// CHECK: %[[RS:.+]] = "tt.reduce"(%[[L]]#3) <{axis = 1 : i32}>
// CHECK: %[[SS:.+]] = arith.addf %[[RS]], %{{.+}} : tensor<64xf32>
// CHECK: arith.divf %[[SS]]
// CHECK: %[[R:.+]] = arith.divf %cst
// CHECK: %[[RE:.+]] = tt.expand_dims %[[R]] {axis = 1 : i32}
// CHECK: %[[RB:.+]] = tt.broadcast %[[RE]]
// CHECK: %[[Y:.+]] = arith.mulf %[[L]]#2, %[[RB]]
// CHECK: tt.store %{{.+}}, %[[Y]]
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: statistics loop fused
// Options: no reload (statistics from the MMA's own tile).
// OPTS-LABEL: tt.func public @rms_weight_in_loop
// OPTS-NOT: cacheModifier = cg
// Per-iteration row reductions when asked for.
// ROW-LABEL: tt.func public @rms_weight_in_loop
// ROW: scf.for
// ROW: "tt.reduce"({{.*}}) <{axis = 1 : i32}>
// ROW: scf.yield
// stage-reloads (num_stages known): every tile load feeding the dot and the reload get
// tt.latency = num_stages - 1, so Triton's pipeliner gives the reload its own shared buffers.
// STAGE-LABEL: tt.func public @rms_weight_in_loop
// STAGE: %[[X:.+]] = tt.load %[[P:arg[0-9]+]], %[[M:[0-9]+]], %[[O:cst[_0-9]*]] {tt.latency = 2 : i32} :
// STAGE: tt.load %[[P]], %[[M]], %[[O]] cacheModifier = cg {tt.latency = 2 : i32} :
// STAGE: tt.load %{{.+}} {tt.latency = 2 : i32} : tensor<32x32x!tt.ptr<bf16>>
// STAGE: tt.dot
// STAGE-REMARK: applied: RMSNorm {{.*}}; 1 of 1 reload(s) staged in shared memory (tt.latency = 2;
// Not past the shared-memory budget, not without num_stages (normfuse-opt has no compilation options).
// STAGE-BIG: reloads not staged: with their buffers the loop would need more than 195 KiB of shared memory
// STAGE-UNKNOWN: reloads not staged: num_stages unknown (give lazy-prenorm{num-stages=S} outside normfuse.compile)

module {
  tt.func public @rms_weight_in_loop(%X: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<32> : tensor<64x1xi32>
    %cst_1 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_2 = arith.constant dense<32> : tensor<64x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_11 = arith.addi %K, %c31_i32 : i32
    %rstd_12 = arith.divsi %rstd_11, %c32_i32 : i32
    %p_13:2 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%ss_29 = %ss, %p_30 = %p_10) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_31 = arith.subi %K, %x : i32
      %x_32 = tt.splat %x_31 : i32 -> tensor<1x32xi32>
      %x_33 = arith.cmpi slt, %p_7, %x_32 : tensor<1x32xi32>
      %x_34 = tt.broadcast %x_33 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_35 = tt.load %p_30, %x_34, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_36 = arith.extf %x_35 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_37 = arith.mulf %x_36, %x_36 : tensor<64x32xf32>
      %ss_38 = "tt.reduce"(%ss_37) <{axis = 1 : i32}> ({
      ^bb0(%ss_41: f32, %ss_42: f32):
        %ss_43 = arith.addf %ss_41, %ss_42 : f32
        tt.reduce.return %ss_43 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_39 = arith.addf %ss_29, %ss_38 : tensor<64xf32>
      %p_40 = tt.addptr %p_30, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_39, %p_40 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_14 = arith.sitofp %K : i32 to f32
    %rstd_15 = tt.splat %rstd_14 : f32 -> tensor<64xf32>
    %rstd_16 = arith.divf %p_13#0, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_21 = arith.muli %p_7, %q : tensor<1x32xi32>
    %q_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_23 = tt.addptr %q_22, %q_21 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_24 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_25 = tt.broadcast %q_23 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_26 = tt.broadcast %q_24 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_27 = tt.addptr %q_25, %q_26 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_28:3 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%p_29 = %p_10, %q_30 = %q_27, %acc_31 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_32 = arith.subi %K, %x : i32
      %x_33 = tt.splat %x_32 : i32 -> tensor<1x32xi32>
      %x_34 = arith.cmpi slt, %p_7, %x_33 : tensor<1x32xi32>
      %x_35 = tt.broadcast %x_34 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_36 = tt.load %p_29, %x_35, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_37 = arith.extf %x_36 : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = tt.addptr %G, %x : !tt.ptr<bf16>, i32
      %g_38 = tt.splat %g : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_39 = tt.addptr %g_38, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_40 = tt.load %g_39 : tensor<32x!tt.ptr<bf16>>
      %g_41 = arith.extf %g_40 : tensor<32xbf16> to tensor<32xf32>
      %a = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %a_42 = tt.broadcast %a : tensor<64x1xf32> -> tensor<64x32xf32>
      %a_43 = arith.mulf %x_37, %a_42 : tensor<64x32xf32>
      %a_44 = tt.expand_dims %g_41 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %a_45 = tt.broadcast %a_44 : tensor<1x32xf32> -> tensor<64x32xf32>
      %a_46 = arith.mulf %a_43, %a_45 : tensor<64x32xf32>
      %a_47 = arith.truncf %a_46 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_48 = tt.load %q_30 : tensor<32x32x!tt.ptr<bf16>>
      %acc_49 = tt.dot %a_47, %acc_48, %acc_31, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_50 = tt.addptr %p_29, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_51 = tt.addptr %q_30, %cst_1 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_50, %q_51, %acc_49 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %0 = arith.muli %p, %cst_0 : tensor<64x1xi32>
    %1 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %2 = tt.addptr %1, %0 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %3 = tt.broadcast %2 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %4 = tt.addptr %3, %p_9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %4, %acc_28#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Weight folded into W: the tile would feed the wgmma directly, so the statistics read a cg reload.
// CHECK-LABEL: tt.func public @rms_weight_folded
// CHECK: %[[L:.+]]:4 = scf.for
// CHECK: %[[X:.+]] = tt.load %[[P:arg[0-9]+]], %[[MASK:[0-9]+]], %[[OTHER:cst[_0-9]*]] :
// CHECK: %[[XR:.+]] = tt.load %[[P]], %[[MASK]], %[[OTHER]] cacheModifier = cg
// CHECK: tt.dot %[[X]],
// CHECK: arith.extf %[[XR]]
// CHECK: scf.yield
// CHECK-NOT: scf.for
// CHECK: arith.mulf %[[L]]#2,
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: statistics loop fused (statistics from a cg reload of the tile)
// OPTS-LABEL: tt.func public @rms_weight_folded
// OPTS-NOT: cacheModifier = cg
// VOLATILE-LABEL: tt.func public @rms_weight_folded
// VOLATILE: tt.load %{{.+}} {isVolatile = true}
// VOLATILE-NOT: cacheModifier = cg
// Not staged: one program per tile whose tile goes straight into the MMA (auto).
// STAGE-LABEL: tt.func public @rms_weight_folded
// STAGE-NOT: tt.latency
// STAGE: tt.dot

module {
  tt.func public @rms_weight_folded(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<32> : tensor<64x1xi32>
    %cst_1 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_2 = arith.constant dense<32> : tensor<64x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_11 = arith.addi %K, %c31_i32 : i32
    %rstd_12 = arith.divsi %rstd_11, %c32_i32 : i32
    %p_13:2 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%ss_29 = %ss, %p_30 = %p_10) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_31 = arith.subi %K, %x : i32
      %x_32 = tt.splat %x_31 : i32 -> tensor<1x32xi32>
      %x_33 = arith.cmpi slt, %p_7, %x_32 : tensor<1x32xi32>
      %x_34 = tt.broadcast %x_33 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_35 = tt.load %p_30, %x_34, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_36 = arith.extf %x_35 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_37 = arith.mulf %x_36, %x_36 : tensor<64x32xf32>
      %ss_38 = "tt.reduce"(%ss_37) <{axis = 1 : i32}> ({
      ^bb0(%ss_41: f32, %ss_42: f32):
        %ss_43 = arith.addf %ss_41, %ss_42 : f32
        tt.reduce.return %ss_43 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_39 = arith.addf %ss_29, %ss_38 : tensor<64xf32>
      %p_40 = tt.addptr %p_30, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_39, %p_40 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_14 = arith.sitofp %K : i32 to f32
    %rstd_15 = tt.splat %rstd_14 : f32 -> tensor<64xf32>
    %rstd_16 = arith.divf %p_13#0, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_21 = arith.muli %p_7, %q : tensor<1x32xi32>
    %q_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_23 = tt.addptr %q_22, %q_21 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_24 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_25 = tt.broadcast %q_23 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_26 = tt.broadcast %q_24 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_27 = tt.addptr %q_25, %q_26 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_28:3 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%p_29 = %p_10, %q_30 = %q_27, %acc_31 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_32 = arith.subi %K, %x : i32
      %x_33 = tt.splat %x_32 : i32 -> tensor<1x32xi32>
      %x_34 = arith.cmpi slt, %p_7, %x_33 : tensor<1x32xi32>
      %x_35 = tt.broadcast %x_34 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_36 = tt.load %p_29, %x_35, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_37 = arith.extf %x_36 : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_38 = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_39 = tt.broadcast %acc_38 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_40 = arith.mulf %x_37, %acc_39 : tensor<64x32xf32>
      %acc_41 = arith.truncf %acc_40 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_42 = tt.load %q_30 : tensor<32x32x!tt.ptr<bf16>>
      %acc_43 = tt.dot %acc_41, %acc_42, %acc_31, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_44 = tt.addptr %p_29, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_45 = tt.addptr %q_30, %cst_1 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_44, %q_45, %acc_43 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %0 = arith.muli %p, %cst_0 : tensor<64x1xi32>
    %1 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %2 = tt.addptr %1, %0 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %3 = tt.broadcast %2 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %4 = tt.addptr %3, %p_9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %4, %acc_28#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// LayerNorm: first tile's row mean as shift, centered masked operand (masked-off lanes keep
// other - shift, as the naive kernel's (other - mean): no select), column sums of B in the loop.
// CHECK-LABEL: tt.func public @layernorm
// CHECK: tt.load
// CHECK: "tt.reduce"
// CHECK: %[[C:.+]] = arith.mulf %{{.+}}, %{{.+}} : tensor<64xf32>
// CHECK: %[[L:.+]]:7 = scf.for
// CHECK: arith.subf %{{.+}}, %{{.+}} : tensor<64x32xf32>
// CHECK-NOT: arith.select
// CHECK: tt.load {{.*}} cacheModifier = cg : tensor<32x32x!tt.ptr<bf16>>
// CHECK: tt.dot
// CHECK: <{axis = 0 : i32}>
// CHECK: <{axis = 0 : i32}>
// CHECK: scf.yield
// CHECK-NOT: scf.for
// CHECK: arith.subf %{{.+}}, %[[C]] : tensor<64xf32>
// CHECK: arith.subf %[[L]]#2,
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tt.store
// REMARK: applied: LayerNorm row scale sunk out of the k-loop: statistics loop fused (statistics from a cg reload of the tile); shifted by the first tile's row mean
// Options: no LayerNorm shift, no reload.
// OPTS-LABEL: tt.func public @layernorm
// OPTS-NOT: arith.select
// OPTS-NOT: cacheModifier = cg
// STAGE-LABEL: tt.func public @layernorm
// STAGE: cacheModifier = cg {tt.latency = 2 : i32} : tensor<64x32x!tt.ptr<bf16>>
// STAGE: cacheModifier = cg {tt.latency = 2 : i32} : tensor<32x32x!tt.ptr<bf16>>
// STAGE: tt.dot
// STAGE-REMARK: applied: LayerNorm {{.*}}; 2 of 2 reload(s) staged in shared memory (tt.latency = 2;

module {
  tt.func public @layernorm(%X: !tt.ptr<bf16>, %G: !tt.ptr<bf16>, %B: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_1 = arith.constant dense<32> : tensor<64x1xi32>
    %cst_2 = arith.constant dense<32> : tensor<32x32xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_3 = arith.constant dense<32> : tensor<64x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_4 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_5 = arith.muli %p, %p_4 : tensor<64x1xi32>
    %p_6 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_7 = tt.addptr %p_6, %p_5 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_8 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_9 = tt.broadcast %p_7 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_10 = tt.broadcast %p_8 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_11 = tt.addptr %p_9, %p_10 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %0 = arith.addi %K, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    %p_12:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%s1 = %cst, %s2 = %cst, %p_30 = %p_11) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_31 = arith.subi %K, %x : i32
      %x_32 = tt.splat %x_31 : i32 -> tensor<1x32xi32>
      %x_33 = arith.cmpi slt, %p_8, %x_32 : tensor<1x32xi32>
      %x_34 = tt.broadcast %x_33 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_35 = tt.load %p_30, %x_34, %cst_0 : tensor<64x32x!tt.ptr<bf16>>
      %x_36 = arith.extf %x_35 : tensor<64x32xbf16> to tensor<64x32xf32>
      %s1_37 = "tt.reduce"(%x_36) <{axis = 1 : i32}> ({
      ^bb0(%s1_43: f32, %s1_44: f32):
        %s1_45 = arith.addf %s1_43, %s1_44 : f32
        tt.reduce.return %s1_45 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %s1_38 = arith.addf %s1, %s1_37 : tensor<64xf32>
      %s2_39 = arith.mulf %x_36, %x_36 : tensor<64x32xf32>
      %s2_40 = "tt.reduce"(%s2_39) <{axis = 1 : i32}> ({
      ^bb0(%s2_43: f32, %s2_44: f32):
        %s2_45 = arith.addf %s2_43, %s2_44 : f32
        tt.reduce.return %s2_45 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %s2_41 = arith.addf %s2, %s2_40 : tensor<64xf32>
      %p_42 = tt.addptr %p_30, %cst_3 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %s1_38, %s2_41, %p_42 : tensor<64xf32>, tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %mean = arith.sitofp %K : i32 to f32
    %mean_13 = tt.splat %mean : f32 -> tensor<64xf32>
    %mean_14 = arith.divf %p_12#0, %mean_13 : tensor<64xf32>
    %rstd_15 = arith.divf %p_12#1, %mean_13 : tensor<64xf32>
    %rstd_16 = arith.mulf %mean_14, %mean_14 : tensor<64xf32>
    %rstd_17 = arith.subf %rstd_15, %rstd_16 : tensor<64xf32>
    %rstd_18 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_19 = arith.addf %rstd_17, %rstd_18 : tensor<64xf32>
    %rstd_20 = math.sqrt %rstd_19 : tensor<64xf32>
    %rstd_21 = arith.divf %rstd, %rstd_20 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_22 = arith.muli %p_8, %q : tensor<1x32xi32>
    %q_23 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_24 = tt.addptr %q_23, %q_22 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_25 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_26 = tt.broadcast %q_24 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_27 = tt.broadcast %q_25 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_28 = tt.addptr %q_26, %q_27 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_29:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%p_30 = %p_11, %q_31 = %q_28, %acc_32 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_33 = arith.subi %K, %x : i32
      %x_34 = tt.splat %x_33 : i32 -> tensor<1x32xi32>
      %x_35 = arith.cmpi slt, %p_8, %x_34 : tensor<1x32xi32>
      %x_36 = tt.broadcast %x_35 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_37 = tt.load %p_30, %x_36, %cst_0 : tensor<64x32x!tt.ptr<bf16>>
      %x_38 = arith.extf %x_37 : tensor<64x32xbf16> to tensor<64x32xf32>
      %g = tt.addptr %G, %x : !tt.ptr<bf16>, i32
      %g_39 = tt.splat %g : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %g_40 = tt.addptr %g_39, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %g_41 = tt.load %g_40 : tensor<32x!tt.ptr<bf16>>
      %g_42 = arith.extf %g_41 : tensor<32xbf16> to tensor<32xf32>
      %beta = tt.addptr %B, %x : !tt.ptr<bf16>, i32
      %beta_43 = tt.splat %beta : !tt.ptr<bf16> -> tensor<32x!tt.ptr<bf16>>
      %beta_44 = tt.addptr %beta_43, %offs_n : tensor<32x!tt.ptr<bf16>>, tensor<32xi32>
      %beta_45 = tt.load %beta_44 : tensor<32x!tt.ptr<bf16>>
      %beta_46 = arith.extf %beta_45 : tensor<32xbf16> to tensor<32xf32>
      %a = tt.expand_dims %mean_14 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %a_47 = tt.broadcast %a : tensor<64x1xf32> -> tensor<64x32xf32>
      %a_48 = arith.subf %x_38, %a_47 : tensor<64x32xf32>
      %a_49 = tt.expand_dims %rstd_21 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %a_50 = tt.broadcast %a_49 : tensor<64x1xf32> -> tensor<64x32xf32>
      %a_51 = arith.mulf %a_48, %a_50 : tensor<64x32xf32>
      %a_52 = tt.expand_dims %g_42 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %a_53 = tt.broadcast %a_52 : tensor<1x32xf32> -> tensor<64x32xf32>
      %a_54 = arith.mulf %a_51, %a_53 : tensor<64x32xf32>
      %a_55 = tt.expand_dims %beta_46 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
      %a_56 = tt.broadcast %a_55 : tensor<1x32xf32> -> tensor<64x32xf32>
      %a_57 = arith.addf %a_54, %a_56 : tensor<64x32xf32>
      %a_58 = arith.truncf %a_57 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_59 = tt.load %q_31 : tensor<32x32x!tt.ptr<bf16>>
      %acc_60 = tt.dot %a_58, %acc_59, %acc_32, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_61 = tt.addptr %p_30, %cst_3 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_62 = tt.addptr %q_31, %cst_2 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_61, %q_62, %acc_60 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %2 = arith.muli %p, %cst_1 : tensor<64x1xi32>
    %3 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %4 = tt.addptr %3, %2 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %5 = tt.broadcast %4 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %6 = tt.addptr %5, %p_10 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %6, %acc_29#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// LayerNorm with g and beta folded away: no shift, the tile feeds the MMA, statistics from a reload.
// CHECK-LABEL: tt.func public @layernorm_folded
// CHECK-NOT: arith.select
// CHECK: %[[L:.+]]:6 = scf.for
// CHECK: %[[X:.+]] = tt.load %[[P:arg[0-9]+]] :
// CHECK: %[[XR:.+]] = tt.load %[[P]] cacheModifier = cg
// CHECK: tt.dot %[[X]],
// CHECK: scf.yield
// CHECK-NOT: scf.for
// CHECK: arith.subf %[[L]]#2,
// CHECK: tt.store
// REMARK: applied: LayerNorm row scale sunk out of the k-loop: statistics loop fused (statistics from a cg reload of the tile); no shift (the tile reaches the MMA unscaled)

module {
  tt.func public @layernorm_folded(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %c32_i32 = arith.constant 32 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<32> : tensor<64x1xi32>
    %cst_1 = arith.constant dense<32> : tensor<32x32xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_2 = arith.constant dense<32> : tensor<64x32xi32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %0 = arith.addi %K, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    %p_11:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%s1 = %cst, %s2 = %cst, %p_29 = %p_10) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = tt.load %p_29 : tensor<64x32x!tt.ptr<bf16>>
      %x_30 = arith.extf %x : tensor<64x32xbf16> to tensor<64x32xf32>
      %s1_31 = "tt.reduce"(%x_30) <{axis = 1 : i32}> ({
      ^bb0(%s1_37: f32, %s1_38: f32):
        %s1_39 = arith.addf %s1_37, %s1_38 : f32
        tt.reduce.return %s1_39 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %s1_32 = arith.addf %s1, %s1_31 : tensor<64xf32>
      %s2_33 = arith.mulf %x_30, %x_30 : tensor<64x32xf32>
      %s2_34 = "tt.reduce"(%s2_33) <{axis = 1 : i32}> ({
      ^bb0(%s2_37: f32, %s2_38: f32):
        %s2_39 = arith.addf %s2_37, %s2_38 : f32
        tt.reduce.return %s2_39 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %s2_35 = arith.addf %s2, %s2_34 : tensor<64xf32>
      %p_36 = tt.addptr %p_29, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %s1_32, %s2_35, %p_36 : tensor<64xf32>, tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %mean = arith.sitofp %K : i32 to f32
    %mean_12 = tt.splat %mean : f32 -> tensor<64xf32>
    %mean_13 = arith.divf %p_11#0, %mean_12 : tensor<64xf32>
    %rstd_14 = arith.divf %p_11#1, %mean_12 : tensor<64xf32>
    %rstd_15 = arith.mulf %mean_13, %mean_13 : tensor<64xf32>
    %rstd_16 = arith.subf %rstd_14, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_21 = arith.muli %p_7, %q : tensor<1x32xi32>
    %q_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_23 = tt.addptr %q_22, %q_21 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_24 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_25 = tt.broadcast %q_23 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_26 = tt.broadcast %q_24 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_27 = tt.addptr %q_25, %q_26 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_28:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%p_29 = %p_10, %q_30 = %q_27, %acc_31 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = tt.load %p_29 : tensor<64x32x!tt.ptr<bf16>>
      %x_32 = arith.extf %x : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_33 = tt.expand_dims %mean_13 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_34 = tt.broadcast %acc_33 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_35 = arith.subf %x_32, %acc_34 : tensor<64x32xf32>
      %acc_36 = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_37 = tt.broadcast %acc_36 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_38 = arith.mulf %acc_35, %acc_37 : tensor<64x32xf32>
      %acc_39 = arith.truncf %acc_38 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_40 = tt.load %q_30 : tensor<32x32x!tt.ptr<bf16>>
      %acc_41 = tt.dot %acc_39, %acc_40, %acc_31, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_42 = tt.addptr %p_29, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_43 = tt.addptr %q_30, %cst_1 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_42, %q_43, %acc_41 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %2 = arith.muli %p, %cst_0 : tensor<64x1xi32>
    %3 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %4 = tt.addptr %3, %2 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %5 = tt.broadcast %4 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %6 = tt.addptr %5, %p_9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %6, %acc_28#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// No statistics loop: a loop-invariant row scale is sunk only.
// CHECK-LABEL: tt.func public @rms_precomputed_rstd
// CHECK: %[[R:.+]] = tt.load %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK: %[[L:.+]]:3 = scf.for
// CHECK-NOT: %[[R]]
// CHECK: scf.yield
// CHECK: tt.expand_dims %[[R]] {axis = 1 : i32}
// CHECK: arith.mulf %[[L]]#2,
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only
// OPTS-LABEL: tt.func public @rms_precomputed_rstd

module {
  tt.func public @rms_precomputed_rstd(%X: !tt.ptr<bf16>, %R: !tt.ptr<f32>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32) attributes {noinline = false} {
    %c31_i32 = arith.constant 31 : i32
    %c32_i32 = arith.constant 32 : i32
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %rstd = tt.splat %R : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %rstd_2 = tt.addptr %rstd, %offs_m : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %rstd_3 = tt.load %rstd_2 : tensor<64x!tt.ptr<f32>>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_4 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_5 = arith.muli %p, %p_4 : tensor<64x1xi32>
    %p_6 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_7 = tt.addptr %p_6, %p_5 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_8 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_9 = tt.broadcast %p_7 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_10 = tt.broadcast %p_8 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_11 = tt.addptr %p_9, %p_10 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_12 = arith.muli %p_8, %q : tensor<1x32xi32>
    %q_13 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_14 = tt.addptr %q_13, %q_12 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_15 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_16 = tt.broadcast %q_14 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_17 = tt.broadcast %q_15 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_18 = tt.addptr %q_16, %q_17 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %0 = arith.addi %K, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    %acc_19:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%p_20 = %p_11, %q_21 = %q_18, %acc_22 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = tt.load %p_20 : tensor<64x32x!tt.ptr<bf16>>
      %x_23 = arith.extf %x : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_24 = tt.expand_dims %rstd_3 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_25 = tt.broadcast %acc_24 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_26 = arith.mulf %x_23, %acc_25 : tensor<64x32xf32>
      %acc_27 = arith.truncf %acc_26 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_28 = tt.load %q_21 : tensor<32x32x!tt.ptr<bf16>>
      %acc_29 = tt.dot %acc_27, %acc_28, %acc_22, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_30 = tt.addptr %p_20, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_31 = tt.addptr %q_21, %cst_0 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_30, %q_31, %acc_29 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %2 = arith.muli %p, %cst : tensor<64x1xi32>
    %3 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %4 = tt.addptr %3, %2 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %5 = tt.broadcast %4 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %6 = tt.addptr %5, %p_10 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %6, %acc_19#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// An accumulator that starts at a loaded value: start at zero, add the value after scaling.
// CHECK-LABEL: tt.func public @rms_residual_accumulator
// CHECK: %[[INIT:.+]] = tt.load {{.*}} : tensor<64x32x!tt.ptr<f32>>
// CHECK: %[[L:.+]]:4 = scf.for {{.*}} iter_args({{.*}}, %{{.+}} = %cst{{.*}}, %{{.+}} = %cst{{.*}})
// CHECK: %[[S:.+]] = arith.mulf %[[L]]#2,
// CHECK: arith.addf %[[S]], %[[INIT]]
// REMARK: applied: RMSNorm

module {
  tt.func public @rms_residual_accumulator(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32>
    %cst_2 = arith.constant dense<32> : tensor<64x1xi32>
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_11 = arith.addi %K, %c31_i32 : i32
    %rstd_12 = arith.divsi %rstd_11, %c32_i32 : i32
    %p_13:2 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%ss_34 = %ss, %p_35 = %p_10) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_36 = arith.subi %K, %x : i32
      %x_37 = tt.splat %x_36 : i32 -> tensor<1x32xi32>
      %x_38 = arith.cmpi slt, %p_7, %x_37 : tensor<1x32xi32>
      %x_39 = tt.broadcast %x_38 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_40 = tt.load %p_35, %x_39, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_41 = arith.extf %x_40 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_42 = arith.mulf %x_41, %x_41 : tensor<64x32xf32>
      %ss_43 = "tt.reduce"(%ss_42) <{axis = 1 : i32}> ({
      ^bb0(%ss_46: f32, %ss_47: f32):
        %ss_48 = arith.addf %ss_46, %ss_47 : f32
        tt.reduce.return %ss_48 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_44 = arith.addf %ss_34, %ss_43 : tensor<64xf32>
      %p_45 = tt.addptr %p_35, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_44, %p_45 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_14 = arith.sitofp %K : i32 to f32
    %rstd_15 = tt.splat %rstd_14 : f32 -> tensor<64xf32>
    %rstd_16 = arith.divf %p_13#0, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_21 = arith.muli %p_7, %q : tensor<1x32xi32>
    %q_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_23 = tt.addptr %q_22, %q_21 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_24 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_25 = tt.broadcast %q_23 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_26 = tt.broadcast %q_24 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_27 = tt.addptr %q_25, %q_26 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc = arith.muli %p, %cst_2 : tensor<64x1xi32>
    %acc_28 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %acc_29 = tt.addptr %acc_28, %acc : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %acc_30 = tt.broadcast %acc_29 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %acc_31 = tt.addptr %acc_30, %p_9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    %acc_32 = tt.load %acc_31 : tensor<64x32x!tt.ptr<f32>>
    %acc_33:3 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%p_34 = %p_10, %q_35 = %q_27, %acc_36 = %acc_32) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_37 = arith.subi %K, %x : i32
      %x_38 = tt.splat %x_37 : i32 -> tensor<1x32xi32>
      %x_39 = arith.cmpi slt, %p_7, %x_38 : tensor<1x32xi32>
      %x_40 = tt.broadcast %x_39 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_41 = tt.load %p_34, %x_40, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_42 = arith.extf %x_41 : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_43 = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_44 = tt.broadcast %acc_43 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_45 = arith.mulf %x_42, %acc_44 : tensor<64x32xf32>
      %acc_46 = arith.truncf %acc_45 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_47 = tt.load %q_35 : tensor<32x32x!tt.ptr<bf16>>
      %acc_48 = tt.dot %acc_46, %acc_47, %acc_36, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_49 = tt.addptr %p_34, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_50 = tt.addptr %q_35, %cst_0 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_49, %q_50, %acc_48 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    tt.store %acc_31, %acc_33#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Block pointers reach TTIR as pointer tensors with masks: matched like the plain form.
// CHECK-LABEL: tt.func public @rms_block_pointers
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: arith.mulf %{{.+}}#2,
// REMARK: applied: RMSNorm

module {
  tt.func public @rms_block_pointers(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %M: i32, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<1x32xi64>
    %cst_0 = arith.constant dense<0> : tensor<32x1xi64>
    %c32_i64 = arith.constant 32 : i64
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %cst_2 = arith.constant dense<0> : tensor<1x32xi64>
    %cst_3 = arith.constant dense<0> : tensor<64x1xi64>
    %c0_i64 = arith.constant 0 : i64
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c1_i32 = arith.constant 1 : i32
    %cst_4 = arith.constant dense<32> : tensor<64x1xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %c0_i32 = arith.constant 0 : i32
    %xs = arith.extsi %M : i32 to i64
    %xs_5 = arith.extsi %K : i32 to i64
    %xs_6 = arith.extsi %stride : i32 to i64
    %0 = arith.addi %K, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    %ss_7:2 = scf.for %ss_16 = %c0_i32 to %1 step %c1_i32 iter_args(%xs_17 = %c0_i64, %ss_18 = %ss) -> (i64, tensor<64xf32>)  : i32 {
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<64x32x!tt.ptr<bf16>>
      %x_19 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %x_20 = arith.extsi %x_19 : tensor<64xi32> to tensor<64xi64>
      %x_21 = tt.expand_dims %x_20 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
      %x_22 = tt.splat %xs_6 : i64 -> tensor<64x1xi64>
      %x_23 = arith.muli %x_21, %x_22 : tensor<64x1xi64>
      %x_24 = tt.broadcast %x_23 : tensor<64x1xi64> -> tensor<64x32xi64>
      %x_25 = tt.splat %xs_17 : i64 -> tensor<32xi64>
      %x_26 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %x_27 = arith.extsi %x_26 : tensor<32xi32> to tensor<32xi64>
      %x_28 = arith.addi %x_25, %x_27 : tensor<32xi64>
      %x_29 = tt.expand_dims %x_28 {axis = 0 : i32} : tensor<32xi64> -> tensor<1x32xi64>
      %x_30 = tt.broadcast %x_29 : tensor<1x32xi64> -> tensor<64x32xi64>
      %x_31 = arith.addi %x_24, %x_30 : tensor<64x32xi64>
      %x_32 = tt.addptr %x, %x_31 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi64>
      %x_33 = arith.cmpi sge, %x_21, %cst_3 : tensor<64x1xi64>
      %x_34 = tt.splat %xs : i64 -> tensor<64x1xi64>
      %x_35 = arith.cmpi slt, %x_21, %x_34 : tensor<64x1xi64>
      %x_36 = arith.andi %x_33, %x_35 : tensor<64x1xi1>
      %x_37 = tt.broadcast %x_36 : tensor<64x1xi1> -> tensor<64x32xi1>
      %x_38 = arith.cmpi sge, %x_29, %cst_2 : tensor<1x32xi64>
      %x_39 = tt.splat %xs_5 : i64 -> tensor<1x32xi64>
      %x_40 = arith.cmpi slt, %x_29, %x_39 : tensor<1x32xi64>
      %x_41 = arith.andi %x_38, %x_40 : tensor<1x32xi1>
      %x_42 = tt.broadcast %x_41 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_43 = arith.andi %x_37, %x_42 : tensor<64x32xi1>
      %x_44 = tt.load %x_32, %x_43, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %x_45 = arith.extf %x_44 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_46 = arith.mulf %x_45, %x_45 : tensor<64x32xf32>
      %ss_47 = "tt.reduce"(%ss_46) <{axis = 1 : i32}> ({
      ^bb0(%ss_50: f32, %ss_51: f32):
        %ss_52 = arith.addf %ss_50, %ss_51 : f32
        tt.reduce.return %ss_52 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_48 = arith.addf %ss_18, %ss_47 : tensor<64xf32>
      %xs_49 = arith.addi %xs_17, %c32_i64 : i64
      scf.yield %xs_49, %ss_48 : i64, tensor<64xf32>
    }
    %rstd_8 = arith.sitofp %K : i32 to f32
    %rstd_9 = tt.splat %rstd_8 : f32 -> tensor<64xf32>
    %rstd_10 = arith.divf %ss_7#1, %rstd_9 : tensor<64xf32>
    %rstd_11 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_12 = arith.addf %rstd_10, %rstd_11 : tensor<64xf32>
    %rstd_13 = math.sqrt %rstd_12 : tensor<64xf32>
    %rstd_14 = arith.divf %rstd, %rstd_13 : tensor<64xf32>
    %acc_15:3 = scf.for %acc_16 = %c0_i32 to %1 step %c1_i32 iter_args(%xg = %c0_i64, %wg = %c0_i64, %acc_17 = %acc) -> (i64, i64, tensor<64x32xf32>)  : i32 {
      %x = tt.splat %X : !tt.ptr<bf16> -> tensor<64x32x!tt.ptr<bf16>>
      %x_18 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
      %x_19 = arith.extsi %x_18 : tensor<64xi32> to tensor<64xi64>
      %x_20 = tt.expand_dims %x_19 {axis = 1 : i32} : tensor<64xi64> -> tensor<64x1xi64>
      %x_21 = tt.splat %xs_6 : i64 -> tensor<64x1xi64>
      %x_22 = arith.muli %x_20, %x_21 : tensor<64x1xi64>
      %x_23 = tt.broadcast %x_22 : tensor<64x1xi64> -> tensor<64x32xi64>
      %x_24 = tt.splat %xg : i64 -> tensor<32xi64>
      %x_25 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
      %x_26 = arith.extsi %x_25 : tensor<32xi32> to tensor<32xi64>
      %x_27 = arith.addi %x_24, %x_26 : tensor<32xi64>
      %x_28 = tt.expand_dims %x_27 {axis = 0 : i32} : tensor<32xi64> -> tensor<1x32xi64>
      %x_29 = tt.broadcast %x_28 : tensor<1x32xi64> -> tensor<64x32xi64>
      %x_30 = arith.addi %x_23, %x_29 : tensor<64x32xi64>
      %x_31 = tt.addptr %x, %x_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi64>
      %x_32 = arith.cmpi sge, %x_20, %cst_3 : tensor<64x1xi64>
      %x_33 = tt.splat %xs : i64 -> tensor<64x1xi64>
      %x_34 = arith.cmpi slt, %x_20, %x_33 : tensor<64x1xi64>
      %x_35 = arith.andi %x_32, %x_34 : tensor<64x1xi1>
      %x_36 = tt.broadcast %x_35 : tensor<64x1xi1> -> tensor<64x32xi1>
      %x_37 = arith.cmpi sge, %x_28, %cst_2 : tensor<1x32xi64>
      %x_38 = tt.splat %xs_5 : i64 -> tensor<1x32xi64>
      %x_39 = arith.cmpi slt, %x_28, %x_38 : tensor<1x32xi64>
      %x_40 = arith.andi %x_37, %x_39 : tensor<1x32xi1>
      %x_41 = tt.broadcast %x_40 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_42 = arith.andi %x_36, %x_41 : tensor<64x32xi1>
      %x_43 = tt.load %x_31, %x_42, %cst_1 : tensor<64x32x!tt.ptr<bf16>>
      %x_44 = arith.extf %x_43 : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_45 = tt.expand_dims %rstd_14 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_46 = tt.broadcast %acc_45 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_47 = arith.mulf %x_44, %acc_46 : tensor<64x32xf32>
      %acc_48 = arith.truncf %acc_47 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_49 = tt.splat %W : !tt.ptr<bf16> -> tensor<32x32x!tt.ptr<bf16>>
      %acc_50 = tt.splat %wg : i64 -> tensor<32xi64>
      %acc_51 = arith.addi %acc_50, %x_26 : tensor<32xi64>
      %acc_52 = tt.expand_dims %acc_51 {axis = 1 : i32} : tensor<32xi64> -> tensor<32x1xi64>
      %acc_53 = tt.broadcast %acc_52 : tensor<32x1xi64> -> tensor<32x32xi64>
      %acc_54 = tt.expand_dims %x_26 {axis = 0 : i32} : tensor<32xi64> -> tensor<1x32xi64>
      %acc_55 = tt.splat %xs_6 : i64 -> tensor<1x32xi64>
      %acc_56 = arith.muli %acc_54, %acc_55 : tensor<1x32xi64>
      %acc_57 = tt.broadcast %acc_56 : tensor<1x32xi64> -> tensor<32x32xi64>
      %acc_58 = arith.addi %acc_53, %acc_57 : tensor<32x32xi64>
      %acc_59 = tt.addptr %acc_49, %acc_58 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi64>
      %acc_60 = arith.cmpi sge, %acc_52, %cst_0 : tensor<32x1xi64>
      %acc_61 = tt.splat %xs_5 : i64 -> tensor<32x1xi64>
      %acc_62 = arith.cmpi slt, %acc_52, %acc_61 : tensor<32x1xi64>
      %acc_63 = arith.andi %acc_60, %acc_62 : tensor<32x1xi1>
      %acc_64 = tt.broadcast %acc_63 : tensor<32x1xi1> -> tensor<32x32xi1>
      %acc_65 = arith.cmpi sge, %acc_54, %cst_2 : tensor<1x32xi64>
      %acc_66 = arith.cmpi slt, %acc_54, %cst : tensor<1x32xi64>
      %acc_67 = arith.andi %acc_65, %acc_66 : tensor<1x32xi1>
      %acc_68 = tt.broadcast %acc_67 : tensor<1x32xi1> -> tensor<32x32xi1>
      %acc_69 = arith.andi %acc_64, %acc_68 : tensor<32x32xi1>
      %acc_70 = tt.load %acc_59, %acc_69 : tensor<32x32x!tt.ptr<bf16>>
      %acc_71 = tt.dot %acc_48, %acc_70, %acc_17, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %xg_72 = arith.addi %xg, %c32_i64 : i64
      %wg_73 = arith.addi %wg, %c32_i64 : i64
      scf.yield %xg_72, %wg_73, %acc_71 : i64, i64, tensor<64x32xf32>
    }
    %2 = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %3 = tt.expand_dims %2 {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %4 = arith.muli %3, %cst_4 : tensor<64x1xi32>
    %5 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %6 = tt.addptr %5, %4 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %7 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %8 = tt.expand_dims %7 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %9 = tt.broadcast %6 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %10 = tt.broadcast %8 : tensor<1x32xi32> -> tensor<64x32xi32>
    %11 = tt.addptr %9, %10 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %11, %acc_15#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Row-block form: the statistics loop moves into the N-tile loop's first trip, later trips reuse rstd.
// The first trip's copy of the GEMM loop is fused; the carried rstd is sunk in the others.
// CHECK-LABEL: tt.func public @rms_row_block
// CHECK-NOT: "tt.reduce"
// CHECK: scf.for %[[N:[a-z0-9_]+]] = {{.*}} iter_args(%[[RC:[a-z0-9_]+]] = %{{.+}}) -> (tensor<64xf32>)
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[N]],
// CHECK: %[[IF:.+]]:2 = scf.if %[[FIRST]] -> (tensor<64xf32>, tensor<64x32xf32>) {
// CHECK: scf.for
// CHECK: tt.load {{.*}} cacheModifier = cg
// CHECK: tt.dot
// CHECK: "tt.reduce"
// CHECK: } else {
// CHECK: scf.for
// CHECK-NOT: cacheModifier = cg
// CHECK: tt.dot
// CHECK: scf.yield %[[RC]], %{{.+}} : tensor<64xf32>, tensor<64x32xf32>
// CHECK: tt.store %{{.+}}, %[[IF]]#1
// CHECK: scf.yield %[[IF]]#0 : tensor<64xf32>
// REMARK: applied: statistics loop moved into the first trip of the enclosing N-tile loop (computed once per row block, carried to the later tiles)
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: statistics loop fused
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only

module {
  tt.func public @rms_row_block(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %N: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<32x32xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_k = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_11 = arith.addi %K, %c31_i32 : i32
    %rstd_12 = arith.divsi %rstd_11, %c32_i32 : i32
    %p_13:2 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%ss_21 = %ss, %p_22 = %p_10) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_23 = arith.subi %K, %x : i32
      %x_24 = tt.splat %x_23 : i32 -> tensor<1x32xi32>
      %x_25 = arith.cmpi slt, %p_7, %x_24 : tensor<1x32xi32>
      %x_26 = tt.broadcast %x_25 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_27 = tt.load %p_22, %x_26, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_28 = arith.extf %x_27 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_29 = arith.mulf %x_28, %x_28 : tensor<64x32xf32>
      %ss_30 = "tt.reduce"(%ss_29) <{axis = 1 : i32}> ({
      ^bb0(%ss_33: f32, %ss_34: f32):
        %ss_35 = arith.addf %ss_33, %ss_34 : f32
        tt.reduce.return %ss_35 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_31 = arith.addf %ss_21, %ss_30 : tensor<64xf32>
      %p_32 = tt.addptr %p_22, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_31, %p_32 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_14 = arith.sitofp %K : i32 to f32
    %rstd_15 = tt.splat %rstd_14 : f32 -> tensor<64xf32>
    %rstd_16 = arith.divf %p_13#0, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %0 = arith.addi %N, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    scf.for %n = %c0_i32 to %1 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_21 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_22 = arith.addi %offs_n_21, %offs_k : tensor<32xi32>
      %q = tt.expand_dims %offs_n_22 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %q_23 = tt.splat %stride : i32 -> tensor<1x32xi32>
      %q_24 = arith.muli %q, %q_23 : tensor<1x32xi32>
      %q_25 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %q_26 = tt.addptr %q_25, %q_24 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %q_27 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %q_28 = tt.broadcast %q_26 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %q_29 = tt.broadcast %q_27 : tensor<32x1xi32> -> tensor<32x32xi32>
      %q_30 = tt.addptr %q_28, %q_29 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %acc:3 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%p_31 = %p_10, %q_32 = %q_30, %acc_33 = %cst_0) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
        %x = arith.muli %k, %c32_i32 : i32
        %x_34 = arith.subi %K, %x : i32
        %x_35 = tt.splat %x_34 : i32 -> tensor<1x32xi32>
        %x_36 = arith.cmpi slt, %p_7, %x_35 : tensor<1x32xi32>
        %x_37 = tt.broadcast %x_36 : tensor<1x32xi1> -> tensor<64x32xi1>
        %x_38 = tt.load %p_31, %x_37, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %x_39 = arith.extf %x_38 : tensor<64x32xbf16> to tensor<64x32xf32>
        %acc_40 = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
        %acc_41 = tt.broadcast %acc_40 : tensor<64x1xf32> -> tensor<64x32xf32>
        %acc_42 = arith.mulf %x_39, %acc_41 : tensor<64x32xf32>
        %acc_43 = arith.truncf %acc_42 : tensor<64x32xf32> to tensor<64x32xbf16>
        %acc_44 = tt.load %q_32 : tensor<32x32x!tt.ptr<bf16>>
        %acc_45 = tt.dot %acc_43, %acc_44, %acc_33, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        %p_46 = tt.addptr %p_31, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %q_47 = tt.addptr %q_32, %cst : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        scf.yield %p_46, %q_47, %acc_45 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
      }
      %2 = tt.splat %N : i32 -> tensor<64x1xi32>
      %3 = arith.muli %p, %2 : tensor<64x1xi32>
      %4 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
      %5 = tt.addptr %4, %3 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
      %6 = tt.broadcast %5 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
      %7 = tt.broadcast %q : tensor<1x32xi32> -> tensor<64x32xi32>
      %8 = tt.addptr %6, %7 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
      tt.store %8, %acc#2 : tensor<64x32x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// The tile divided by the RMS (x / rms, loops over offsets): the factor sunk is 1 / rms, once per row.
// CHECK-LABEL: tt.func public @rms_divide_by_rms
// CHECK: %[[L:.+]]:{{[0-9]+}} = scf.for
// CHECK-NOT: arith.divf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// CHECK: scf.yield
// CHECK: %[[RMS:.+]] = math.sqrt
// CHECK: %[[INV:.+]] = arith.divf %{{.+}}, %[[RMS]] : tensor<64xf32>
// CHECK: %[[E:.+]] = tt.expand_dims %[[INV]] {axis = 1 : i32}
// CHECK: %[[B:.+]] = tt.broadcast %[[E]]
// CHECK: arith.mulf %[[L]]#{{[0-9]+}}, %[[B]] : tensor<64x32xf32>
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: statistics loop fused

module {
  tt.func public @rms_divide_by_rms(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %ss_0 = scf.for %k0 = %c0_i32 to %K step %c32_i32 iter_args(%ss_7 = %ss) -> (tensor<64xf32>)  : i32 {
      %x = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %x_8 = tt.splat %stride : i32 -> tensor<64x1xi32>
      %x_9 = arith.muli %x, %x_8 : tensor<64x1xi32>
      %x_10 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_11 = tt.addptr %x_10, %x_9 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_12 = tt.splat %k0 : i32 -> tensor<64x1xi32>
      %x_13 = tt.addptr %x_11, %x_12 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_14 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %x_15 = tt.broadcast %x_13 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_16 = tt.broadcast %x_14 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_17 = tt.addptr %x_15, %x_16 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_18 = tt.load %x_17 : tensor<64x32x!tt.ptr<bf16>>
      %x_19 = arith.extf %x_18 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_20 = arith.mulf %x_19, %x_19 : tensor<64x32xf32>
      %ss_21 = "tt.reduce"(%ss_20) <{axis = 1 : i32}> ({
      ^bb0(%ss_23: f32, %ss_24: f32):
        %ss_25 = arith.addf %ss_23, %ss_24 : f32
        tt.reduce.return %ss_25 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_22 = arith.addf %ss_7, %ss_21 : tensor<64xf32>
      scf.yield %ss_22 : tensor<64xf32>
    }
    %rms = arith.sitofp %K : i32 to f32
    %rms_1 = tt.splat %rms : f32 -> tensor<64xf32>
    %rms_2 = arith.divf %ss_0, %rms_1 : tensor<64xf32>
    %rms_3 = tt.splat %eps : f32 -> tensor<64xf32>
    %rms_4 = arith.addf %rms_2, %rms_3 : tensor<64xf32>
    %rms_5 = math.sqrt %rms_4 : tensor<64xf32>
    %acc_6 = scf.for %k0 = %c0_i32 to %K step %c32_i32 iter_args(%acc_7 = %acc) -> (tensor<64x32xf32>)  : i32 {
      %x = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
      %x_8 = tt.splat %stride : i32 -> tensor<64x1xi32>
      %x_9 = arith.muli %x, %x_8 : tensor<64x1xi32>
      %x_10 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
      %x_11 = tt.addptr %x_10, %x_9 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_12 = tt.splat %k0 : i32 -> tensor<64x1xi32>
      %x_13 = tt.addptr %x_11, %x_12 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
      %x_14 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %x_15 = tt.broadcast %x_13 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
      %x_16 = tt.broadcast %x_14 : tensor<1x32xi32> -> tensor<64x32xi32>
      %x_17 = tt.addptr %x_15, %x_16 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %x_18 = tt.load %x_17 : tensor<64x32x!tt.ptr<bf16>>
      %x_19 = arith.extf %x_18 : tensor<64x32xbf16> to tensor<64x32xf32>
      %w = tt.splat %stride : i32 -> tensor<1x32xi32>
      %w_20 = arith.muli %x_14, %w : tensor<1x32xi32>
      %w_21 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %w_22 = tt.addptr %w_21, %w_20 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %w_23 = tt.splat %k0 : i32 -> tensor<1x32xi32>
      %w_24 = tt.addptr %w_22, %w_23 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %w_25 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %w_26 = tt.broadcast %w_24 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %w_27 = tt.broadcast %w_25 : tensor<32x1xi32> -> tensor<32x32xi32>
      %w_28 = tt.addptr %w_26, %w_27 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %w_29 = tt.load %w_28 : tensor<32x32x!tt.ptr<bf16>>
      %acc_30 = tt.expand_dims %rms_5 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_31 = tt.broadcast %acc_30 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_32 = arith.divf %x_19, %acc_31 : tensor<64x32xf32>
      %acc_33 = arith.truncf %acc_32 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_34 = tt.dot %acc_33, %w_29, %acc_7, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      scf.yield %acc_34 : tensor<64x32xf32>
    }
    %0 = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %1 = arith.muli %0, %cst : tensor<64x1xi32>
    %2 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %3 = tt.addptr %2, %1 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %4 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %5 = tt.broadcast %3 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %6 = tt.broadcast %4 : tensor<1x32xi32> -> tensor<64x32xi32>
    %7 = tt.addptr %5, %6 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %7, %acc_6 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out: the row factor is loaded inside the k-loop.
// CHECK-LABEL: tt.func public @negative_scale_varies_with_k
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the per-row factor is computed inside the k-loop (varies with k); not sunk

module {
  tt.func public @negative_scale_varies_with_k(%X: !tt.ptr<bf16>, %R: !tt.ptr<f32>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32) attributes {noinline = false} {
    %c31_i32 = arith.constant 31 : i32
    %c32_i32 = arith.constant 32 : i32
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32>
    %c64_i32 = arith.constant 64 : i32
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_2 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_3 = arith.muli %p, %p_2 : tensor<64x1xi32>
    %p_4 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_5 = tt.addptr %p_4, %p_3 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_6 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_7 = tt.broadcast %p_5 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_8 = tt.broadcast %p_6 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_9 = tt.addptr %p_7, %p_8 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_10 = arith.muli %p_6, %q : tensor<1x32xi32>
    %q_11 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_12 = tt.addptr %q_11, %q_10 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_13 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_14 = tt.broadcast %q_12 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_15 = tt.broadcast %q_13 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_16 = tt.addptr %q_14, %q_15 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %0 = arith.addi %K, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    %acc_17:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%p_18 = %p_9, %q_19 = %q_16, %acc_20 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %r = arith.muli %k, %c64_i32 : i32
      %r_21 = tt.addptr %R, %r : !tt.ptr<f32>, i32
      %r_22 = tt.splat %r_21 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %r_23 = tt.addptr %r_22, %offs_m : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      %r_24 = tt.load %r_23 : tensor<64x!tt.ptr<f32>>
      %x = tt.load %p_18 : tensor<64x32x!tt.ptr<bf16>>
      %x_25 = arith.extf %x : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_26 = tt.expand_dims %r_24 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_27 = tt.broadcast %acc_26 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_28 = arith.mulf %x_25, %acc_27 : tensor<64x32xf32>
      %acc_29 = arith.truncf %acc_28 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_30 = tt.load %q_19 : tensor<32x32x!tt.ptr<bf16>>
      %acc_31 = tt.dot %acc_29, %acc_30, %acc_20, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_32 = tt.addptr %p_18, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_33 = tt.addptr %q_19, %cst_0 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_32, %q_33, %acc_31 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %2 = arith.muli %p, %cst : tensor<64x1xi32>
    %3 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %4 = tt.addptr %3, %2 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %5 = tt.broadcast %4 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %6 = tt.addptr %5, %p_8 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %6, %acc_17#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out: the factor depends on row and column.
// CHECK-LABEL: tt.func public @negative_scale_per_element
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: 'arith.mulf' on the A tile does not use a row or column broadcast vector

module {
  tt.func public @negative_scale_per_element(%X: !tt.ptr<bf16>, %S: !tt.ptr<f32>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32) attributes {noinline = false} {
    %c31_i32 = arith.constant 31 : i32
    %c32_i32 = arith.constant 32 : i32
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<32> : tensor<32x32xi32>
    %cst_0 = arith.constant dense<32> : tensor<64x32xi32>
    %cst_1 = arith.constant dense<32> : tensor<64x1xi32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %s = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %s_2 = arith.muli %s, %cst_1 : tensor<64x1xi32>
    %s_3 = tt.splat %S : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %s_4 = tt.addptr %s_3, %s_2 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %s_5 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %s_6 = tt.broadcast %s_4 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %s_7 = tt.broadcast %s_5 : tensor<1x32xi32> -> tensor<64x32xi32>
    %s_8 = tt.addptr %s_6, %s_7 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    %s_9 = tt.load %s_8 : tensor<64x32x!tt.ptr<f32>>
    %p = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_10 = arith.muli %s, %p : tensor<64x1xi32>
    %p_11 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_12 = tt.addptr %p_11, %p_10 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_13 = tt.broadcast %p_12 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_14 = tt.addptr %p_13, %s_7 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_15 = arith.muli %s_5, %q : tensor<1x32xi32>
    %q_16 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_17 = tt.addptr %q_16, %q_15 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_18 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_19 = tt.broadcast %q_17 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_20 = tt.broadcast %q_18 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_21 = tt.addptr %q_19, %q_20 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %0 = arith.addi %K, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    %acc_22:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%p_23 = %p_14, %q_24 = %q_21, %acc_25 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = tt.load %p_23 : tensor<64x32x!tt.ptr<bf16>>
      %x_26 = arith.extf %x : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_27 = arith.mulf %x_26, %s_9 : tensor<64x32xf32>
      %acc_28 = arith.truncf %acc_27 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_29 = tt.load %q_24 : tensor<32x32x!tt.ptr<bf16>>
      %acc_30 = tt.dot %acc_28, %acc_29, %acc_25, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_31 = tt.addptr %p_23, %cst_0 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_32 = tt.addptr %q_24, %cst : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_31, %q_32, %acc_30 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %2 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %3 = tt.addptr %2, %s_2 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %4 = tt.broadcast %3 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %5 = tt.addptr %4, %s_7 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %5, %acc_22#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out: the statistics loop stops one tile early.
// CHECK-LABEL: tt.func public @negative_stats_other_iteration_space
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the statistics loop has a different iteration space than the GEMM loop

module {
  tt.func public @negative_stats_other_iteration_space(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %c31_i32 = arith.constant 31 : i32
    %c32_i32 = arith.constant 32 : i32
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<32> : tensor<64x1xi32>
    %cst_0 = arith.constant dense<32> : tensor<32x32xi32>
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32>
    %c1_i32 = arith.constant 1 : i32
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_2 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_3 = arith.muli %p, %p_2 : tensor<64x1xi32>
    %p_4 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_5 = tt.addptr %p_4, %p_3 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_6 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_7 = tt.broadcast %p_5 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_8 = tt.broadcast %p_6 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_9 = tt.addptr %p_7, %p_8 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %0 = arith.addi %K, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    %2 = arith.subi %1, %c1_i32 : i32
    %p_10:2 = scf.for %k = %c0_i32 to %2 step %c1_i32 iter_args(%ss_26 = %ss, %p_27 = %p_9) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = tt.load %p_27 : tensor<64x32x!tt.ptr<bf16>>
      %x_28 = arith.extf %x : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_29 = arith.mulf %x_28, %x_28 : tensor<64x32xf32>
      %ss_30 = "tt.reduce"(%ss_29) <{axis = 1 : i32}> ({
      ^bb0(%ss_33: f32, %ss_34: f32):
        %ss_35 = arith.addf %ss_33, %ss_34 : f32
        tt.reduce.return %ss_35 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_31 = arith.addf %ss_26, %ss_30 : tensor<64xf32>
      %p_32 = tt.addptr %p_27, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_31, %p_32 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_11 = arith.sitofp %K : i32 to f32
    %rstd_12 = tt.splat %rstd_11 : f32 -> tensor<64xf32>
    %rstd_13 = arith.divf %p_10#0, %rstd_12 : tensor<64xf32>
    %rstd_14 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_15 = arith.addf %rstd_13, %rstd_14 : tensor<64xf32>
    %rstd_16 = math.sqrt %rstd_15 : tensor<64xf32>
    %rstd_17 = arith.divf %rstd, %rstd_16 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_18 = arith.muli %p_6, %q : tensor<1x32xi32>
    %q_19 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_20 = tt.addptr %q_19, %q_18 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_21 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_22 = tt.broadcast %q_20 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_23 = tt.broadcast %q_21 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_24 = tt.addptr %q_22, %q_23 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_25:3 = scf.for %k = %c0_i32 to %1 step %c1_i32 iter_args(%p_26 = %p_9, %q_27 = %q_24, %acc_28 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = tt.load %p_26 : tensor<64x32x!tt.ptr<bf16>>
      %x_29 = arith.extf %x : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_30 = tt.expand_dims %rstd_17 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_31 = tt.broadcast %acc_30 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_32 = arith.mulf %x_29, %acc_31 : tensor<64x32xf32>
      %acc_33 = arith.truncf %acc_32 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_34 = tt.load %q_27 : tensor<32x32x!tt.ptr<bf16>>
      %acc_35 = tt.dot %acc_33, %acc_34, %acc_28, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_36 = tt.addptr %p_26, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_37 = tt.addptr %q_27, %cst_0 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_36, %q_37, %acc_35 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %3 = arith.muli %p, %cst : tensor<64x1xi32>
    %4 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %5 = tt.addptr %4, %3 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %6 = tt.broadcast %5 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %7 = tt.addptr %6, %p_8 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %7, %acc_25#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out: the statistics read another tensor.
// CHECK-LABEL: tt.func public @negative_stats_other_tile
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the statistics loop reads a different tile than the GEMM loop

module {
  tt.func public @negative_stats_other_tile(%X: !tt.ptr<bf16>, %X2: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<32> : tensor<64x1xi32>
    %cst_1 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_2 = arith.constant dense<32> : tensor<64x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X2 : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_11 = arith.addi %K, %c31_i32 : i32
    %rstd_12 = arith.divsi %rstd_11, %c32_i32 : i32
    %p_13:2 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%ss_33 = %ss, %p_34 = %p_10) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_35 = arith.subi %K, %x : i32
      %x_36 = tt.splat %x_35 : i32 -> tensor<1x32xi32>
      %x_37 = arith.cmpi slt, %p_7, %x_36 : tensor<1x32xi32>
      %x_38 = tt.broadcast %x_37 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_39 = tt.load %p_34, %x_38, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_40 = arith.extf %x_39 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_41 = arith.mulf %x_40, %x_40 : tensor<64x32xf32>
      %ss_42 = "tt.reduce"(%ss_41) <{axis = 1 : i32}> ({
      ^bb0(%ss_45: f32, %ss_46: f32):
        %ss_47 = arith.addf %ss_45, %ss_46 : f32
        tt.reduce.return %ss_47 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_43 = arith.addf %ss_33, %ss_42 : tensor<64xf32>
      %p_44 = tt.addptr %p_34, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_43, %p_44 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_14 = arith.sitofp %K : i32 to f32
    %rstd_15 = tt.splat %rstd_14 : f32 -> tensor<64xf32>
    %rstd_16 = arith.divf %p_13#0, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %p_21 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_22 = tt.addptr %p_21, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_23 = tt.broadcast %p_22 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_24 = tt.addptr %p_23, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_25 = arith.muli %p_7, %q : tensor<1x32xi32>
    %q_26 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_27 = tt.addptr %q_26, %q_25 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_28 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_29 = tt.broadcast %q_27 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_30 = tt.broadcast %q_28 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_31 = tt.addptr %q_29, %q_30 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_32:3 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%p_33 = %p_24, %q_34 = %q_31, %acc_35 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_36 = arith.subi %K, %x : i32
      %x_37 = tt.splat %x_36 : i32 -> tensor<1x32xi32>
      %x_38 = arith.cmpi slt, %p_7, %x_37 : tensor<1x32xi32>
      %x_39 = tt.broadcast %x_38 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_40 = tt.load %p_33, %x_39, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_41 = arith.extf %x_40 : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_42 = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_43 = tt.broadcast %acc_42 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_44 = arith.mulf %x_41, %acc_43 : tensor<64x32xf32>
      %acc_45 = arith.truncf %acc_44 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_46 = tt.load %q_34 : tensor<32x32x!tt.ptr<bf16>>
      %acc_47 = tt.dot %acc_45, %acc_46, %acc_35, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_48 = tt.addptr %p_33, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_49 = tt.addptr %q_34, %cst_1 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_48, %q_49, %acc_47 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %0 = arith.muli %p, %cst_0 : tensor<64x1xi32>
    %1 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %2 = tt.addptr %1, %0 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %3 = tt.broadcast %2 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %4 = tt.addptr %3, %p_9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %4, %acc_32#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out of the row-block form: rstd is also stored after the N loop (the scale is sunk as precomputed).
// CHECK-LABEL: tt.func public @negative_row_block_stats_used_after
// CHECK: "tt.reduce"
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: tt.dot
// REMARK-NOT: statistics loop moved
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only

module {
  tt.func public @negative_row_block_stats_used_after(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %Z: !tt.ptr<f32>, %K: i32, %N: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<32x32xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %cst_1 = arith.constant dense<32> : tensor<64x32xi32>
    %cst_2 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_k = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_11 = arith.addi %K, %c31_i32 : i32
    %rstd_12 = arith.divsi %rstd_11, %c32_i32 : i32
    %p_13:2 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%ss_21 = %ss, %p_22 = %p_10) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_23 = arith.subi %K, %x : i32
      %x_24 = tt.splat %x_23 : i32 -> tensor<1x32xi32>
      %x_25 = arith.cmpi slt, %p_7, %x_24 : tensor<1x32xi32>
      %x_26 = tt.broadcast %x_25 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_27 = tt.load %p_22, %x_26, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
      %x_28 = arith.extf %x_27 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_29 = arith.mulf %x_28, %x_28 : tensor<64x32xf32>
      %ss_30 = "tt.reduce"(%ss_29) <{axis = 1 : i32}> ({
      ^bb0(%ss_33: f32, %ss_34: f32):
        %ss_35 = arith.addf %ss_33, %ss_34 : f32
        tt.reduce.return %ss_35 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_31 = arith.addf %ss_21, %ss_30 : tensor<64xf32>
      %p_32 = tt.addptr %p_22, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_31, %p_32 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_14 = arith.sitofp %K : i32 to f32
    %rstd_15 = tt.splat %rstd_14 : f32 -> tensor<64xf32>
    %rstd_16 = arith.divf %p_13#0, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %0 = arith.addi %N, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    scf.for %n = %c0_i32 to %1 step %c1_i32  : i32 {
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_21 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_22 = arith.addi %offs_n_21, %offs_k : tensor<32xi32>
      %q = tt.expand_dims %offs_n_22 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %q_23 = tt.splat %stride : i32 -> tensor<1x32xi32>
      %q_24 = arith.muli %q, %q_23 : tensor<1x32xi32>
      %q_25 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %q_26 = tt.addptr %q_25, %q_24 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %q_27 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %q_28 = tt.broadcast %q_26 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %q_29 = tt.broadcast %q_27 : tensor<32x1xi32> -> tensor<32x32xi32>
      %q_30 = tt.addptr %q_28, %q_29 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %acc:3 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%p_31 = %p_10, %q_32 = %q_30, %acc_33 = %cst_0) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
        %x = arith.muli %k, %c32_i32 : i32
        %x_34 = arith.subi %K, %x : i32
        %x_35 = tt.splat %x_34 : i32 -> tensor<1x32xi32>
        %x_36 = arith.cmpi slt, %p_7, %x_35 : tensor<1x32xi32>
        %x_37 = tt.broadcast %x_36 : tensor<1x32xi1> -> tensor<64x32xi1>
        %x_38 = tt.load %p_31, %x_37, %cst_2 : tensor<64x32x!tt.ptr<bf16>>
        %x_39 = arith.extf %x_38 : tensor<64x32xbf16> to tensor<64x32xf32>
        %acc_40 = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
        %acc_41 = tt.broadcast %acc_40 : tensor<64x1xf32> -> tensor<64x32xf32>
        %acc_42 = arith.mulf %x_39, %acc_41 : tensor<64x32xf32>
        %acc_43 = arith.truncf %acc_42 : tensor<64x32xf32> to tensor<64x32xbf16>
        %acc_44 = tt.load %q_32 : tensor<32x32x!tt.ptr<bf16>>
        %acc_45 = tt.dot %acc_43, %acc_44, %acc_33, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        %p_46 = tt.addptr %p_31, %cst_1 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %q_47 = tt.addptr %q_32, %cst : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        scf.yield %p_46, %q_47, %acc_45 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
      }
      %4 = tt.splat %N : i32 -> tensor<64x1xi32>
      %5 = arith.muli %p, %4 : tensor<64x1xi32>
      %6 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
      %7 = tt.addptr %6, %5 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
      %8 = tt.broadcast %7 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
      %9 = tt.broadcast %q : tensor<1x32xi32> -> tensor<64x32xi32>
      %10 = tt.addptr %8, %9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
      tt.store %10, %acc#2 : tensor<64x32x!tt.ptr<f32>>
    }
    %2 = tt.splat %Z : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %3 = tt.addptr %2, %offs_m : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %3, %rstd_20 : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out of the row-block form: a store ahead of the GEMM loop in the N loop (reads cannot move past it).
// CHECK-LABEL: tt.func public @negative_row_block_store_ahead
// CHECK: "tt.reduce"
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: tt.dot
// REMARK-NOT: statistics loop moved
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only

module {
  tt.func public @negative_row_block_store_ahead(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %Z: !tt.ptr<f32>, %K: i32, %N: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %cst = arith.constant dense<32> : tensor<32x32xi32>
    %cst_0 = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c32_i32 = arith.constant 32 : i32
    %cst_2 = arith.constant dense<32> : tensor<64x32xi32>
    %cst_3 = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c31_i32 = arith.constant 31 : i32
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_k = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_4 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_5 = arith.muli %p, %p_4 : tensor<64x1xi32>
    %p_6 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_7 = tt.addptr %p_6, %p_5 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_8 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_9 = tt.broadcast %p_7 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_10 = tt.broadcast %p_8 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_11 = tt.addptr %p_9, %p_10 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_12 = arith.addi %K, %c31_i32 : i32
    %rstd_13 = arith.divsi %rstd_12, %c32_i32 : i32
    %p_14:2 = scf.for %k = %c0_i32 to %rstd_13 step %c1_i32 iter_args(%ss = %cst_1, %p_22 = %p_11) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_23 = arith.subi %K, %x : i32
      %x_24 = tt.splat %x_23 : i32 -> tensor<1x32xi32>
      %x_25 = arith.cmpi slt, %p_8, %x_24 : tensor<1x32xi32>
      %x_26 = tt.broadcast %x_25 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_27 = tt.load %p_22, %x_26, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
      %x_28 = arith.extf %x_27 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_29 = arith.mulf %x_28, %x_28 : tensor<64x32xf32>
      %ss_30 = "tt.reduce"(%ss_29) <{axis = 1 : i32}> ({
      ^bb0(%ss_33: f32, %ss_34: f32):
        %ss_35 = arith.addf %ss_33, %ss_34 : f32
        tt.reduce.return %ss_35 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_31 = arith.addf %ss, %ss_30 : tensor<64xf32>
      %p_32 = tt.addptr %p_22, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_31, %p_32 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_15 = arith.sitofp %K : i32 to f32
    %rstd_16 = tt.splat %rstd_15 : f32 -> tensor<64xf32>
    %rstd_17 = arith.divf %p_14#0, %rstd_16 : tensor<64xf32>
    %rstd_18 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_19 = arith.addf %rstd_17, %rstd_18 : tensor<64xf32>
    %rstd_20 = math.sqrt %rstd_19 : tensor<64xf32>
    %rstd_21 = arith.divf %rstd, %rstd_20 : tensor<64xf32>
    %0 = arith.addi %N, %c31_i32 : i32
    %1 = arith.divsi %0, %c32_i32 : i32
    scf.for %n = %c0_i32 to %1 step %c1_i32  : i32 {
      %2 = arith.muli %n, %c64_i32 : i32
      %3 = tt.addptr %Z, %2 : !tt.ptr<f32>, i32
      %4 = tt.splat %3 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
      %5 = tt.addptr %4, %offs_m : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
      tt.store %5, %cst_1 : tensor<64x!tt.ptr<f32>>
      %offs_n = arith.muli %n, %c32_i32 : i32
      %offs_n_22 = tt.splat %offs_n : i32 -> tensor<32xi32>
      %offs_n_23 = arith.addi %offs_n_22, %offs_k : tensor<32xi32>
      %q = tt.expand_dims %offs_n_23 {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %q_24 = tt.splat %stride : i32 -> tensor<1x32xi32>
      %q_25 = arith.muli %q, %q_24 : tensor<1x32xi32>
      %q_26 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
      %q_27 = tt.addptr %q_26, %q_25 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
      %q_28 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %q_29 = tt.broadcast %q_27 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
      %q_30 = tt.broadcast %q_28 : tensor<32x1xi32> -> tensor<32x32xi32>
      %q_31 = tt.addptr %q_29, %q_30 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      %acc:3 = scf.for %k = %c0_i32 to %rstd_13 step %c1_i32 iter_args(%p_32 = %p_11, %q_33 = %q_31, %acc_34 = %cst_0) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
        %x = arith.muli %k, %c32_i32 : i32
        %x_35 = arith.subi %K, %x : i32
        %x_36 = tt.splat %x_35 : i32 -> tensor<1x32xi32>
        %x_37 = arith.cmpi slt, %p_8, %x_36 : tensor<1x32xi32>
        %x_38 = tt.broadcast %x_37 : tensor<1x32xi1> -> tensor<64x32xi1>
        %x_39 = tt.load %p_32, %x_38, %cst_3 : tensor<64x32x!tt.ptr<bf16>>
        %x_40 = arith.extf %x_39 : tensor<64x32xbf16> to tensor<64x32xf32>
        %acc_41 = tt.expand_dims %rstd_21 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
        %acc_42 = tt.broadcast %acc_41 : tensor<64x1xf32> -> tensor<64x32xf32>
        %acc_43 = arith.mulf %x_40, %acc_42 : tensor<64x32xf32>
        %acc_44 = arith.truncf %acc_43 : tensor<64x32xf32> to tensor<64x32xbf16>
        %acc_45 = tt.load %q_33 : tensor<32x32x!tt.ptr<bf16>>
        %acc_46 = tt.dot %acc_44, %acc_45, %acc_34, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
        %p_47 = tt.addptr %p_32, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
        %q_48 = tt.addptr %q_33, %cst : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
        scf.yield %p_47, %q_48, %acc_46 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
      }
      %6 = tt.splat %N : i32 -> tensor<64x1xi32>
      %7 = arith.muli %p, %6 : tensor<64x1xi32>
      %8 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
      %9 = tt.addptr %8, %7 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
      %10 = tt.broadcast %9 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
      %11 = tt.broadcast %q : tensor<1x32xi32> -> tensor<64x32xi32>
      %12 = tt.addptr %10, %11 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
      tt.store %12, %acc#2 : tensor<64x32x!tt.ptr<f32>>
    }
    tt.return
  }
}

// -----

// Bail out: the scaled tile is also stored.
// CHECK-LABEL: tt.func public @negative_scaled_tile_other_user
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.store
// CHECK: tt.dot
// REMARK: missed: a scaled A tile has another user besides the dot

module {
  tt.func public @negative_scaled_tile_other_user(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %Z: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<32> : tensor<64x1xi32>
    %cst_1 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_2 = arith.constant dense<32> : tensor<64x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_3 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_4 = arith.muli %p, %p_3 : tensor<64x1xi32>
    %p_5 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_6 = tt.addptr %p_5, %p_4 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_7 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_8 = tt.broadcast %p_6 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_9 = tt.broadcast %p_7 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_10 = tt.addptr %p_8, %p_9 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_11 = arith.addi %K, %c31_i32 : i32
    %rstd_12 = arith.divsi %rstd_11, %c32_i32 : i32
    %p_13:2 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%ss_29 = %ss, %p_30 = %p_10) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_31 = arith.subi %K, %x : i32
      %x_32 = tt.splat %x_31 : i32 -> tensor<1x32xi32>
      %x_33 = arith.cmpi slt, %p_7, %x_32 : tensor<1x32xi32>
      %x_34 = tt.broadcast %x_33 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_35 = tt.load %p_30, %x_34, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_36 = arith.extf %x_35 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_37 = arith.mulf %x_36, %x_36 : tensor<64x32xf32>
      %ss_38 = "tt.reduce"(%ss_37) <{axis = 1 : i32}> ({
      ^bb0(%ss_41: f32, %ss_42: f32):
        %ss_43 = arith.addf %ss_41, %ss_42 : f32
        tt.reduce.return %ss_43 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_39 = arith.addf %ss_29, %ss_38 : tensor<64xf32>
      %p_40 = tt.addptr %p_30, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_39, %p_40 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_14 = arith.sitofp %K : i32 to f32
    %rstd_15 = tt.splat %rstd_14 : f32 -> tensor<64xf32>
    %rstd_16 = arith.divf %p_13#0, %rstd_15 : tensor<64xf32>
    %rstd_17 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_18 = arith.addf %rstd_16, %rstd_17 : tensor<64xf32>
    %rstd_19 = math.sqrt %rstd_18 : tensor<64xf32>
    %rstd_20 = arith.divf %rstd, %rstd_19 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_21 = arith.muli %p_7, %q : tensor<1x32xi32>
    %q_22 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_23 = tt.addptr %q_22, %q_21 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_24 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_25 = tt.broadcast %q_23 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_26 = tt.broadcast %q_24 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_27 = tt.addptr %q_25, %q_26 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_28:3 = scf.for %k = %c0_i32 to %rstd_12 step %c1_i32 iter_args(%p_29 = %p_10, %q_30 = %q_27, %acc_31 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_32 = arith.subi %K, %x : i32
      %x_33 = tt.splat %x_32 : i32 -> tensor<1x32xi32>
      %x_34 = arith.cmpi slt, %p_7, %x_33 : tensor<1x32xi32>
      %x_35 = tt.broadcast %x_34 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_36 = tt.load %p_29, %x_35, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_37 = arith.extf %x_36 : tensor<64x32xbf16> to tensor<64x32xf32>
      %a = tt.expand_dims %rstd_20 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %a_38 = tt.broadcast %a : tensor<64x1xf32> -> tensor<64x32xf32>
      %a_39 = arith.mulf %x_37, %a_38 : tensor<64x32xf32>
      %5 = tt.addptr %Z, %x : !tt.ptr<f32>, i32
      %6 = tt.splat %5 : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
      %7 = tt.addptr %6, %p_4 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
      %8 = tt.broadcast %7 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
      %9 = tt.addptr %8, %p_9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
      tt.store %9, %a_39 : tensor<64x32x!tt.ptr<f32>>
      %acc_40 = arith.truncf %a_39 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_41 = tt.load %q_30 : tensor<32x32x!tt.ptr<bf16>>
      %acc_42 = tt.dot %acc_40, %acc_41, %acc_31, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %p_43 = tt.addptr %p_29, %cst_2 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %q_44 = tt.addptr %q_30, %cst_1 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %p_43, %q_44, %acc_42 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %0 = arith.muli %p, %cst_0 : tensor<64x1xi32>
    %1 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %2 = tt.addptr %1, %0 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %3 = tt.broadcast %2 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %4 = tt.addptr %3, %p_9 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %4, %acc_28#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// Bail out: the GEMM loop stores into X, which the statistics loop read before it.
// CHECK-LABEL: tt.func public @negative_gemm_loop_writes_x
// CHECK: scf.for
// CHECK: "tt.reduce"
// CHECK: scf.for
// CHECK: tt.store
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the kernel writes [[X:arg[0-9]+]], which the statistics loop and the GEMM loop both read: the GEMM loop's tiles may differ from those the statistics were computed from (store to another buffer than [[X]], or pass the row statistics precomputed)

module {
  tt.func public @negative_gemm_loop_writes_x(%X: !tt.ptr<bf16>, %W: !tt.ptr<bf16>, %Y: !tt.ptr<f32>, %K: i32, %stride: i32, %eps: f32) attributes {noinline = false} {
    %acc = arith.constant dense<0.000000e+00> : tensor<64x32xf32>
    %ss = arith.constant dense<0.000000e+00> : tensor<64xf32>
    %c31_i32 = arith.constant 31 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<64x32xbf16>
    %c0_i32 = arith.constant 0 : i32
    %cst_0 = arith.constant dense<32> : tensor<64x1xi32>
    %cst_1 = arith.constant dense<32> : tensor<32x32xi32>
    %cst_2 = arith.constant dense<2.000000e+00> : tensor<64x32xbf16>
    %cst_3 = arith.constant dense<32> : tensor<64x32xi32>
    %c32_i32 = arith.constant 32 : i32
    %c1_i32 = arith.constant 1 : i32
    %rstd = arith.constant dense<1.000000e+00> : tensor<64xf32>
    %offs_m = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %p = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %p_4 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %p_5 = arith.muli %p, %p_4 : tensor<64x1xi32>
    %p_6 = tt.splat %X : !tt.ptr<bf16> -> tensor<64x1x!tt.ptr<bf16>>
    %p_7 = tt.addptr %p_6, %p_5 : tensor<64x1x!tt.ptr<bf16>>, tensor<64x1xi32>
    %p_8 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %p_9 = tt.broadcast %p_7 : tensor<64x1x!tt.ptr<bf16>> -> tensor<64x32x!tt.ptr<bf16>>
    %p_10 = tt.broadcast %p_8 : tensor<1x32xi32> -> tensor<64x32xi32>
    %p_11 = tt.addptr %p_9, %p_10 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
    %rstd_12 = arith.addi %K, %c31_i32 : i32
    %rstd_13 = arith.divsi %rstd_12, %c32_i32 : i32
    %p_14:2 = scf.for %k = %c0_i32 to %rstd_13 step %c1_i32 iter_args(%ss_30 = %ss, %p_31 = %p_11) -> (tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_32 = arith.subi %K, %x : i32
      %x_33 = tt.splat %x_32 : i32 -> tensor<1x32xi32>
      %x_34 = arith.cmpi slt, %p_8, %x_33 : tensor<1x32xi32>
      %x_35 = tt.broadcast %x_34 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_36 = tt.load %p_31, %x_35, %cst : tensor<64x32x!tt.ptr<bf16>>
      %x_37 = arith.extf %x_36 : tensor<64x32xbf16> to tensor<64x32xf32>
      %ss_38 = arith.mulf %x_37, %x_37 : tensor<64x32xf32>
      %ss_39 = "tt.reduce"(%ss_38) <{axis = 1 : i32}> ({
      ^bb0(%ss_42: f32, %ss_43: f32):
        %ss_44 = arith.addf %ss_42, %ss_43 : f32
        tt.reduce.return %ss_44 : f32
      }) : (tensor<64x32xf32>) -> tensor<64xf32>
      %ss_40 = arith.addf %ss_30, %ss_39 : tensor<64xf32>
      %p_41 = tt.addptr %p_31, %cst_3 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      scf.yield %ss_40, %p_41 : tensor<64xf32>, tensor<64x32x!tt.ptr<bf16>>
    }
    %rstd_15 = arith.sitofp %K : i32 to f32
    %rstd_16 = tt.splat %rstd_15 : f32 -> tensor<64xf32>
    %rstd_17 = arith.divf %p_14#0, %rstd_16 : tensor<64xf32>
    %rstd_18 = tt.splat %eps : f32 -> tensor<64xf32>
    %rstd_19 = arith.addf %rstd_17, %rstd_18 : tensor<64xf32>
    %rstd_20 = math.sqrt %rstd_19 : tensor<64xf32>
    %rstd_21 = arith.divf %rstd, %rstd_20 : tensor<64xf32>
    %q = tt.splat %stride : i32 -> tensor<1x32xi32>
    %q_22 = arith.muli %p_8, %q : tensor<1x32xi32>
    %q_23 = tt.splat %W : !tt.ptr<bf16> -> tensor<1x32x!tt.ptr<bf16>>
    %q_24 = tt.addptr %q_23, %q_22 : tensor<1x32x!tt.ptr<bf16>>, tensor<1x32xi32>
    %q_25 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %q_26 = tt.broadcast %q_24 : tensor<1x32x!tt.ptr<bf16>> -> tensor<32x32x!tt.ptr<bf16>>
    %q_27 = tt.broadcast %q_25 : tensor<32x1xi32> -> tensor<32x32xi32>
    %q_28 = tt.addptr %q_26, %q_27 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
    %acc_29:3 = scf.for %k = %c0_i32 to %rstd_13 step %c1_i32 iter_args(%p_30 = %p_11, %q_31 = %q_28, %acc_32 = %acc) -> (tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>)  : i32 {
      %x = arith.muli %k, %c32_i32 : i32
      %x_33 = arith.subi %K, %x : i32
      %x_34 = tt.splat %x_33 : i32 -> tensor<1x32xi32>
      %x_35 = arith.cmpi slt, %p_8, %x_34 : tensor<1x32xi32>
      %x_36 = tt.broadcast %x_35 : tensor<1x32xi1> -> tensor<64x32xi1>
      %x_37 = tt.load %p_30, %x_36, %cst : tensor<64x32x!tt.ptr<bf16>>
      %nxt = arith.addi %k, %c1_i32 : i32
      %nxt_38 = arith.muli %nxt, %c32_i32 : i32
      %nxt_39 = arith.subi %K, %nxt_38 : i32
      %nxt_40 = tt.splat %nxt_39 : i32 -> tensor<1x32xi32>
      %nxt_41 = arith.cmpi slt, %p_8, %nxt_40 : tensor<1x32xi32>
      %5 = tt.addptr %p_30, %cst_3 : tensor<64x32x!tt.ptr<bf16>>, tensor<64x32xi32>
      %6 = arith.mulf %x_37, %cst_2 : tensor<64x32xbf16>
      %7 = tt.broadcast %nxt_41 : tensor<1x32xi1> -> tensor<64x32xi1>
      tt.store %5, %6, %7 : tensor<64x32x!tt.ptr<bf16>>
      %acc_42 = arith.extf %x_37 : tensor<64x32xbf16> to tensor<64x32xf32>
      %acc_43 = tt.expand_dims %rstd_21 {axis = 1 : i32} : tensor<64xf32> -> tensor<64x1xf32>
      %acc_44 = tt.broadcast %acc_43 : tensor<64x1xf32> -> tensor<64x32xf32>
      %acc_45 = arith.mulf %acc_42, %acc_44 : tensor<64x32xf32>
      %acc_46 = arith.truncf %acc_45 : tensor<64x32xf32> to tensor<64x32xbf16>
      %acc_47 = tt.load %q_31 : tensor<32x32x!tt.ptr<bf16>>
      %acc_48 = tt.dot %acc_46, %acc_47, %acc_32, inputPrecision = tf32 : tensor<64x32xbf16> * tensor<32x32xbf16> -> tensor<64x32xf32>
      %q_49 = tt.addptr %q_31, %cst_1 : tensor<32x32x!tt.ptr<bf16>>, tensor<32x32xi32>
      scf.yield %5, %q_49, %acc_48 : tensor<64x32x!tt.ptr<bf16>>, tensor<32x32x!tt.ptr<bf16>>, tensor<64x32xf32>
    }
    %0 = arith.muli %p, %cst_0 : tensor<64x1xi32>
    %1 = tt.splat %Y : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %2 = tt.addptr %1, %0 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %3 = tt.broadcast %2 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x32x!tt.ptr<f32>>
    %4 = tt.addptr %3, %p_10 : tensor<64x32x!tt.ptr<f32>>, tensor<64x32xi32>
    tt.store %4, %acc_29#2 : tensor<64x32x!tt.ptr<f32>>
    tt.return
  }
}
