"""Writes test/lit/lazy-prenorm.mlir: the TTIR of lazy_prenorm_kernels.py with hand-written CHECKs,
one `// -----` chunk per kernel (CHECK lines of every prefix with it; a one-line intent first).

    PYTHONPATH=python python3 test/lit/inputs/make_lazy_prenorm_lit.py [--check]

(lazy_prenorm_kernels.py with the same arguments does the same.)
"""
import sys

import litgen
from lazy_prenorm_kernels import BK, BM, BN, KERNELS, signature

CH = {
"rms_weight_in_loop": """// The norm weight stays in the loop; the statistics read a cg reload of the tile (stats-source=auto).
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
// STAGE-UNKNOWN: reloads not staged: num_stages unknown (give lazy-prenorm{num-stages=S} outside normfuse.compile)""",
"rms_weight_folded": """// Weight folded into W: the tile would feed the wgmma directly, so the statistics read a cg reload.
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
// STAGE: tt.dot""",
"layernorm": """// LayerNorm: first tile's row mean as shift, centered masked operand (masked-off lanes keep
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
// STAGE-REMARK: applied: LayerNorm {{.*}}; 2 of 2 reload(s) staged in shared memory (tt.latency = 2;""",
"layernorm_folded": """// LayerNorm with g and beta folded away: no shift, the tile feeds the MMA, statistics from a reload.
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
// REMARK: applied: LayerNorm row scale sunk out of the k-loop: statistics loop fused (statistics from a cg reload of the tile); no shift (the tile reaches the MMA unscaled)""",
"rms_precomputed_rstd": """// No statistics loop: a loop-invariant row scale is sunk only.
// CHECK-LABEL: tt.func public @rms_precomputed_rstd
// CHECK: %[[R:.+]] = tt.load %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK: %[[L:.+]]:3 = scf.for
// CHECK-NOT: %[[R]]
// CHECK: scf.yield
// CHECK: tt.expand_dims %[[R]] {axis = 1 : i32}
// CHECK: arith.mulf %[[L]]#2,
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only
// OPTS-LABEL: tt.func public @rms_precomputed_rstd""",
"rms_residual_accumulator": """// An accumulator that starts at a loaded value: start at zero, add the value after scaling.
// CHECK-LABEL: tt.func public @rms_residual_accumulator
// CHECK: %[[INIT:.+]] = tt.load {{.*}} : tensor<64x32x!tt.ptr<f32>>
// CHECK: %[[L:.+]]:4 = scf.for {{.*}} iter_args({{.*}}, %{{.+}} = %cst{{.*}}, %{{.+}} = %cst{{.*}})
// CHECK: %[[S:.+]] = arith.mulf %[[L]]#2,
// CHECK: arith.addf %[[S]], %[[INIT]]
// REMARK: applied: RMSNorm""",
"rms_block_pointers": """// Block pointers reach TTIR as pointer tensors with masks: matched like the plain form.
// CHECK-LABEL: tt.func public @rms_block_pointers
// CHECK: scf.for
// CHECK-NOT: scf.for
// CHECK: arith.mulf %{{.+}}#2,
// REMARK: applied: RMSNorm""",
"rms_row_block": """// Row-block form: the statistics loop moves into the N-tile loop's first trip, later trips reuse rstd.
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
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only""",
"rms_divide_by_rms": """// The tile divided by the RMS (x / rms, loops over offsets): the factor sunk is 1 / rms, once per row.
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
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: statistics loop fused""",
"negative_row_block_stats_used_after": """// Bail out of the row-block form: rstd is also stored after the N loop (the scale is sunk as precomputed).
// CHECK-LABEL: tt.func public @negative_row_block_stats_used_after
// CHECK: "tt.reduce"
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: tt.dot
// REMARK-NOT: statistics loop moved
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only""",
"negative_row_block_store_ahead": """// Bail out of the row-block form: a store ahead of the GEMM loop in the N loop (reads cannot move past it).
// CHECK-LABEL: tt.func public @negative_row_block_store_ahead
// CHECK: "tt.reduce"
// CHECK: scf.for
// CHECK-NOT: scf.if
// CHECK: tt.dot
// REMARK-NOT: statistics loop moved
// REMARK: applied: RMSNorm row scale sunk out of the k-loop: row scale is precomputed: sunk only""",
"negative_scale_varies_with_k": """// Bail out: the row factor is loaded inside the k-loop.
// CHECK-LABEL: tt.func public @negative_scale_varies_with_k
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the per-row factor is computed inside the k-loop (varies with k); not sunk""",
"negative_scale_per_element": """// Bail out: the factor depends on row and column.
// CHECK-LABEL: tt.func public @negative_scale_per_element
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: 'arith.mulf' on the A tile does not use a row or column broadcast vector""",
"negative_stats_other_iteration_space": """// Bail out: the statistics loop stops one tile early.
// CHECK-LABEL: tt.func public @negative_stats_other_iteration_space
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the statistics loop has a different iteration space than the GEMM loop""",
"negative_stats_other_tile": """// Bail out: the statistics read another tensor.
// CHECK-LABEL: tt.func public @negative_stats_other_tile
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the statistics loop reads a different tile than the GEMM loop""",
"negative_scaled_tile_other_user": """// Bail out: the scaled tile is also stored.
// CHECK-LABEL: tt.func public @negative_scaled_tile_other_user
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.store
// CHECK: tt.dot
// REMARK: missed: a scaled A tile has another user besides the dot""",
"negative_gemm_loop_writes_x": """// Bail out: the GEMM loop stores into X, which the statistics loop read before it.
// CHECK-LABEL: tt.func public @negative_gemm_loop_writes_x
// CHECK: scf.for
// CHECK: "tt.reduce"
// CHECK: scf.for
// CHECK: tt.store
// CHECK: arith.mulf {{.*}} : tensor<64x32xf32>
// CHECK: tt.dot
// REMARK: missed: the kernel writes [[X:arg[0-9]+]], which the statistics loop and the GEMM loop both read: the GEMM loop's tiles may differ from those the statistics were computed from (store to another buffer than [[X]], or pass the row statistics precomputed)""",
}
HEAD = """// lazy-prenorm: one chunk per case, positive cases first, then the bail-outs (negative_*).
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
"""


def outputs() -> dict:
    assert set(CH) == {fn.__name__ for fn in KERNELS}, "one CHECK block per kernel of KERNELS"
    cases = [(fn.__name__, fn, signature(fn), dict({"BM": BM, "BN": BN, "BK": BK},
                                                  **({"CARRIED": True} if "CARRIED" in
                                                     fn.arg_names else {})),
              CH[fn.__name__]) for fn in KERNELS]
    return {"lazy-prenorm.mlir": litgen.lit_text(HEAD, cases)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
