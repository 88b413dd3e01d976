"""Writes test/lit/epilogue-norm.mlir: TTIR of small post-norm kernels with hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/epilogue_norm_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

from normfuse.kernels.postnorm_gemm import linear_layernorm_naive, linear_rmsnorm_naive
import litgen
from postnorm_common import LN, PERS, POST


@triton.jit
def _store_between(X, W, Y, Z, eps, stride, N: tl.constexpr, BM: tl.constexpr,
                   SIDE: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, N)
    acc = tl.dot(tl.load(X + offs_m[:, None] * stride + offs_n[None, :]),
                 tl.load(W + offs_n[:, None] * stride + offs_n[None, :]))
    ss = tl.sum(acc * acc, axis=1)
    p = Y + offs_m[:, None] * N + offs_n[None, :]
    tl.store(p, acc.to(tl.bfloat16))
    if SIDE:
        tl.store(Z + offs_m, ss)  # a side output: another argument, written between the two stores
    else:
        tl.store(Y + BM * N + offs_m, ss.to(tl.bfloat16))  # the output's memory, between the stores
    y = tl.load(p).to(tl.float32)
    tl.store(p, (y / tl.sqrt(ss / N + eps)[:, None]).to(tl.bfloat16))


@triton.jit
def side_output_store(X, W, Y, Z, M, K, stride, eps, N: tl.constexpr, BM: tl.constexpr):
    _store_between(X, W, Y, Z, eps, stride, N, BM, True)


@triton.jit
def negative_extra_store(X, W, Y, Z, M, K, stride, eps, N: tl.constexpr, BM: tl.constexpr):
    _store_between(X, W, Y, Z, eps, stride, N, BM, False)


@triton.jit
def negative_reload_reduced(X, W, Y, Z, M, K, stride, eps, N: tl.constexpr, BM: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < K)
    acc = tl.dot(tl.load(X + offs_m[:, None] * stride + offs_n[None, :]),
                 tl.load(W + offs_n[:, None] * stride + offs_n[None, :]))
    p = Y + offs_m[:, None] * N + offs_n[None, :]
    tl.store(p, acc.to(tl.bfloat16), mask=mask)
    y = tl.load(p, mask=mask, other=0.0).to(tl.float32)
    ss = tl.sum(y * y, axis=1)  # the masked-off lanes of the reload feed a reduction
    tl.store(p, (y / tl.sqrt(ss / N + eps)[:, None]).to(tl.bfloat16), mask=mask)


FLAGS = dict(EVEN_K=False, HAS_BIAS=False, HAS_RES=False)
NEG = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "Z": "*fp32", "M": "i32", "K": "i32", "stride": "i32",
       "eps": "fp32", "N": "constexpr", "BM": "constexpr"}
CASES = [
    ("linear_rmsnorm_naive", linear_rmsnorm_naive, POST,
     dict(N=32, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **FLAGS), """// One tile holds the row: one store, normalized from the fp32 accumulator.
// CHECK-LABEL: tt.func public @linear_rmsnorm_naive
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[ACC:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x32xi1>, tensor<64x32xf32>
// CHECK-NOT: tt.store
// CHECK: arith.mulf %[[ACC]], %[[ACC]]
// CHECK-NOT: tt.store
// CHECK: %[[N:.+]] = arith.mulf %[[ACC]], %{{.+}} : tensor<64x32xf32>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store"""),
    ("linear_layernorm_naive", linear_layernorm_naive, LN,
     dict(N=32, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **FLAGS), """// LayerNorm, one tile holds the row: the centered row comes from the accumulator.
// CHECK-LABEL: tt.func public @linear_layernorm_naive
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[ACC:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x32xi1>, tensor<64x32xf32>
// CHECK-NOT: tt.store
// CHECK: arith.subf %[[ACC]], %{{.+}} : tensor<64x32xf32>
// CHECK: tt.store
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store"""),
    ("rms_persistent", linear_rmsnorm_naive, PERS,
     dict(N=32, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, USE_TMA=False, PERSISTENT=True, **FLAGS),
     """// Persistent (the programs walk the row blocks): the same forwarding inside the row-block loop.
// CHECK-LABEL: tt.func public @rms_persistent
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} : i32 {
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[ACC:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x32xi1>, tensor<64x32xf32>
// CHECK-NOT: tt.store
// CHECK: arith.mulf %[[ACC]], %[[ACC]]
// CHECK-NOT: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store
// CHECK-NOT: tt.store
// CHECK: } {tt.flatten}
// REMARK: applied: output row normalized in registers before the single store"""),
    ("side_output_store", side_output_store, NEG, dict(N=32, BM=64), """// A store to another argument between the two stores (a side output, as the FlashNormAttention
// training forward's saved z): left in place; the output is forwarded as without it.
// CHECK-LABEL: tt.func public @side_output_store
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store"""),
    ("negative_rows_span_tiles", linear_rmsnorm_naive, POST,
     dict(N=64, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **FLAGS), """// Bail out: N = 2 tiles, the row is stored and reloaded in two loops over N.
// CHECK-LABEL: tt.func public @negative_rows_span_tiles
// CHECK: scf.for
// CHECK: tt.store
// CHECK: scf.for
// CHECK: tt.load
// CHECK: tt.store
// REMARK: missed: the stored tile is reloaded in another loop over N tiles"""),
    ("negative_extra_store", negative_extra_store, NEG, dict(N=32, BM=64), """// Bail out: another store to the output's memory between the two stores.
// CHECK-LABEL: tt.func public @negative_extra_store
// CHECK: tt.store
// CHECK: tt.store
// CHECK: tt.load
// CHECK: tt.store
// REMARK: missed: 'tt.store' between the unnormalized store and the final store"""),
    ("negative_reload_reduced", negative_reload_reduced, NEG, dict(N=32, BM=64), """// Bail out: the reloaded tile feeds a reduction, where masked-off lanes matter.
// CHECK-LABEL: tt.func public @negative_reload_reduced
// CHECK: tt.store
// CHECK: tt.load
// CHECK: "tt.reduce"
// CHECK: tt.store
// REMARK: missed: the reloaded tile reaches 'tt.reduce'"""),
]

HEAD = """// epilogue-norm: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/epilogue_norm_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --epilogue-norm %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
"""


def outputs() -> dict:
    return {"epilogue-norm.mlir": litgen.lit_text(HEAD, CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
