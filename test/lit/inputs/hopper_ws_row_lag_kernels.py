"""Writes test/lit/hopper-ws-row-lag.mlir: hopper-ws{row-lag} on the naive post-norm kernels
(kernels/postnorm_gemm.py), 128 x 128 tiles, with hand-written CHECKs of the remarks.

    PYTHONPATH=python python3 test/lit/inputs/hopper_ws_row_lag_kernels.py [--check]
"""
import sys

from normfuse.kernels.postnorm_gemm import linear_layernorm_naive, linear_rmsnorm_naive
import litgen
from postnorm_common import LN, POST

HEAD = """// hopper-ws{row-lag=true} (after epilogue-norm, post-norm=true, the coop schedule): a post-norm
// row of several N tiles finished one tile late, after the next tile's k-loop, from a second
// staging tile. Positive cases first, then bail-outs. Inputs: test/lit/inputs/hopper_ws_row_lag_kernels.py.
// RUN: normfuse-opt --split-input-file --pass-pipeline='epilogue-norm,hopper-ws{post-norm=true,schedule=coop,row-lag=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
"""
TILES = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, EVEN_K=False, HAS_RES=False)
CASES = [
    ("rms_three_tiles", linear_rmsnorm_naive, POST, dict(TILES, N=264, HAS_BIAS=True),
     """// RMSNorm with bias, a row of 3 N tiles of 128: lowered with the lagged exchange (a second
// staging tile for the output).
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-2: ttg.local_alloc : () -> !ttg.memdesc<128x128xbf16, #shared, #smem, mutable>
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(1) rows-lagged, persistent
// REMARK-NOT: row-lag not applied"""),
    ("negative_layernorm", linear_layernorm_naive, LN, dict(TILES, N=264, HAS_BIAS=False),
     """// Bail out: LayerNorm's two row sums (the lagged tile is re-read rounded): lowered without it
// (one staging tile).
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-1: ttg.local_alloc : () -> !ttg.memdesc<128x128xbf16, #shared, #smem, mutable>
// CHECK-NOT: ttg.local_alloc : () -> !ttg.memdesc<128x128xbf16, #shared, #smem, mutable>
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(2), persistent
// REMARK-SAME: row-lag not applied: LayerNorm's two row sums"""),
]


def outputs() -> dict:
    return {"hopper-ws-row-lag.mlir": litgen.lit_text(HEAD, CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
