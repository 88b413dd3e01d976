"""Writes test/lit/hopper-ws.mlir: TTIR of small GEMM-shaped kernels in the fused form (what
lazy-prenorm leaves), one `// -----` chunk per case, positive cases first, then negative_*.

    PYTHONPATH=python python3 test/lit/inputs/hopper_ws_kernels.py
"""
import os
import re

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def rms_fused(X, W, Y, M, N, K, sx, sw, sy, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the lazy form of RMSNorm -> GEMM: statistics in the k-loop, the row scale after it
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    ss = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        km = rk < K - k * BK
        a = tl.load(X + (rm % M)[:, None] * sx + (k * BK + rk)[None, :], mask=km[None, :], other=0.0)
        b = tl.load(W + (rn % N)[None, :] * sw + (k * BK + rk)[:, None], mask=km[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        af = a.to(tl.float32)
        ss += tl.sum(af * af, axis=1)
    r = 1.0 / tl.sqrt(ss / K + eps)
    tl.store(Y + rm[:, None] * sy + rn[None, :], (acc * r[:, None]).to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def rms_tile_stats(X, W, Y, M, N, K, sx, sw, sy, eps, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    # lazy-prenorm's tile form of one statistic: [BM, BK] squares summed elementwise in the
    # k-loop, reduced once after it; at BK == BN that reduction has the accumulator's shape and
    # is still the statistic, not a post-norm's row sum (added by hand to hopper-ws.mlir before the bail-outs,
    # compiled at BM = BN = BK = 128: `python3 hopper_ws_kernels.py --tile-stats`)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    sst = tl.zeros([BM, BK], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        km = rk < K - k * BK
        a = tl.load(X + (rm % M)[:, None] * sx + (k * BK + rk)[None, :], mask=km[None, :], other=0.0)
        b = tl.load(W + (rn % N)[None, :] * sw + (k * BK + rk)[:, None], mask=km[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        af = a.to(tl.float32)
        sst += af * af
    ss = tl.sum(sst, axis=1)
    r = 1.0 / tl.sqrt(ss / K + eps)
    tl.store(Y + rm[:, None] * sy + rn[None, :], (acc * r[:, None]).to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def gemm_bias(X, W, Y, BIAS, M, N, K, sx, sw, sy, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # a plain GEMM (k-loop over offsets) with a bias in the epilogue
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(X + rm[:, None] * sx + (k0 + rk)[None, :], mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(W + rn[None, :] * sw + (k0 + rk)[:, None], mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    bias = tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)
    tl.store(Y + rm[:, None] * sy + rn[None, :], (acc + bias[None, :]).to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def negative_two_dots(X, W, Y, M, N, K, sx, sw, sy, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    acc2 = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(X + rm[:, None] * sx + (k0 + rk)[None, :])
        b = tl.load(W + rn[None, :] * sw + (k0 + rk)[:, None])
        acc = tl.dot(a, b, acc)
        acc2 = tl.dot(a, b, acc2)
    tl.store(Y + rm[:, None] * sy + rn[None, :], (acc - acc2).to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def negative_postnorm(X, W, Y, M, N, K, sx, sw, sy, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the row of the output is normalized: a row reduction of the accumulator (post-norm)
    pid_m = tl.program_id(0)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(X + rm[:, None] * sx + (k0 + rk)[None, :], mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(W + rn[None, :] * sw + (k0 + rk)[:, None], mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    r = 1.0 / tl.sqrt(tl.sum(acc * acc, axis=1) / N + eps)
    tl.store(Y + rm[:, None] * sy + rn[None, :], (acc * r[:, None]).to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def negative_strided_k(X, W, Y, M, N, K, sx, sw, sy, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A is read with a stride along K: TMA needs the last dimension contiguous
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(X + rm[:, None] + (k0 + rk)[None, :] * sx)
        b = tl.load(W + rn[None, :] * sw + (k0 + rk)[:, None])
        acc = tl.dot(a, b, acc)
    tl.store(Y + rm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def postnorm_rows(X, W, BIAS, RES, G, Y, M, K, sx, sw, sr, sy, eps, N: tl.constexpr,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the naive post-norm, N = 2 tiles: the row's tiles twice (GEMM + bias + residual stored, the
    # row sum carried; then each tile reloaded and normalized)
    pid_m = tl.program_id(0)
    rm = pid_m * BM + tl.arange(0, BM)
    rk = tl.arange(0, BK)
    ss = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, tl.cdiv(N, BN)):
        rn = n * BN + tl.arange(0, BN)
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            km = (k * BK + rk) < K
            a = tl.load(X + (rm % M)[:, None] * sx + (k * BK + rk)[None, :], mask=km[None, :], other=0.0)
            b = tl.load(W + (rn % N)[None, :] * sw + (k * BK + rk)[:, None], mask=km[:, None], other=0.0)
            acc = tl.dot(a, b, acc)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        acc += tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
        acc += tl.load(RES + rm[:, None] * sr + rn[None, :], mask=mask, other=0.0).to(tl.float32)
        acc = tl.where(rn[None, :] < N, acc, 0.0)
        ss += tl.sum(acc * acc, axis=1)
        tl.store(Y + rm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16), mask=mask)
    rstd = 1.0 / tl.sqrt(ss / N + eps)
    for n in range(0, tl.cdiv(N, BN)):
        rn = n * BN + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        y = tl.load(Y + rm[:, None] * sy + rn[None, :], mask=mask, other=0.0).to(tl.float32)
        g = tl.load(G + rn, mask=rn < N, other=0.0).to(tl.float32)
        tl.store(Y + rm[:, None] * sy + rn[None, :], (y * rstd[:, None] * g[None, :]).to(tl.bfloat16),
                 mask=mask)


@triton.jit
def postnorm_one_tile(X, W, G, Y, M, K, sx, sw, sy, eps, N: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr, BK: tl.constexpr):
    # the naive post-norm with the row in one tile (N <= BN): the loops over N tiles inlined,
    # store, reload and store in one block (epilogue-norm's case)
    pid_m = tl.program_id(0)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        km = (k * BK + rk) < K
        a = tl.load(X + (rm % M)[:, None] * sx + (k * BK + rk)[None, :], mask=km[None, :], other=0.0)
        b = tl.load(W + (rn % N)[None, :] * sw + (k * BK + rk)[:, None], mask=km[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc = tl.where(rn[None, :] < N, acc, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(acc * acc, axis=1) / N + eps)
    tl.store(Y + rm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16), mask=mask)
    y = tl.load(Y + rm[:, None] * sy + rn[None, :], mask=mask, other=0.0).to(tl.float32)
    g = tl.load(G + rn, mask=rn < N, other=0.0).to(tl.float32)
    tl.store(Y + rm[:, None] * sy + rn[None, :], (y * rstd[:, None] * g[None, :]).to(tl.bfloat16),
             mask=mask)


@triton.jit
def negative_postnorm_reversed(X, W, G, Y, M, K, sx, sw, sy, eps, N: tl.constexpr,
                               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the normalizing loop walks the tiles backwards: its reload is not, trip by trip, the tile
    # the GEMM loop stored (the pass proves the trip-by-trip equality; it does not reorder)
    pid_m = tl.program_id(0)
    rm = pid_m * BM + tl.arange(0, BM)
    rk = tl.arange(0, BK)
    ss = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, tl.cdiv(N, BN)):
        rn = n * BN + tl.arange(0, BN)
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(X + (rm % M)[:, None] * sx + (k * BK + rk)[None, :])
            b = tl.load(W + (rn % N)[None, :] * sw + (k * BK + rk)[:, None])
            acc = tl.dot(a, b, acc)
        ss += tl.sum(acc * acc, axis=1)
        tl.store(Y + rm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16), mask=rm[:, None] < M)
    rstd = 1.0 / tl.sqrt(ss / N + eps)
    for n in range(0, tl.cdiv(N, BN)):
        rn = (tl.cdiv(N, BN) - 1 - n) * BN + tl.arange(0, BN)
        y = tl.load(Y + rm[:, None] * sy + rn[None, :], mask=rm[:, None] < M, other=0.0).to(tl.float32)
        g = tl.load(G + rn).to(tl.float32)
        tl.store(Y + rm[:, None] * sy + rn[None, :], (y * rstd[:, None] * g[None, :]).to(tl.bfloat16),
                 mask=rm[:, None] < M)


@triton.jit
def negative_postnorm_runtime_n(X, W, G, Y, M, N, K, sx, sw, sy, eps, BM: tl.constexpr,
                                BN: tl.constexpr, BK: tl.constexpr):
    # N a runtime argument: the loops over the row's tiles have no constant bounds
    pid_m = tl.program_id(0)
    rm = pid_m * BM + tl.arange(0, BM)
    rk = tl.arange(0, BK)
    ss = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, tl.cdiv(N, BN)):
        rn = n * BN + tl.arange(0, BN)
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(X + (rm % M)[:, None] * sx + (k * BK + rk)[None, :])
            b = tl.load(W + (rn % N)[None, :] * sw + (k * BK + rk)[:, None])
            acc = tl.dot(a, b, acc)
        acc = tl.where(rn[None, :] < N, acc, 0.0)
        ss += tl.sum(acc * acc, axis=1)
        tl.store(Y + rm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
    rstd = 1.0 / tl.sqrt(ss / N + eps)
    for n in range(0, tl.cdiv(N, BN)):
        rn = n * BN + tl.arange(0, BN)
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        y = tl.load(Y + rm[:, None] * sy + rn[None, :], mask=mask, other=0.0).to(tl.float32)
        g = tl.load(G + rn, mask=rn < N, other=0.0).to(tl.float32)
        tl.store(Y + rm[:, None] * sy + rn[None, :], (y * rstd[:, None] * g[None, :]).to(tl.bfloat16),
                 mask=mask)


SIG = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "M": "i32", "N": "i32", "K": "i32", "sx": "i32",
       "sw": "i32", "sy": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
TILE = {"BM": 128, "BN": 256, "BK": 64}
CASES = [
    (rms_fused, dict(SIG, eps="fp32"), """// RMSNorm statistics in the k-loop: warp-specialized, the statistic and the epilogue become hooks.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-SAME: !tt.tensordesc<tensor<128x64xbf16
// CHECK-SAME: !tt.tensordesc<tensor<256x64xbf16
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK: "tt.reduce"
// CHECK: math.sqrt
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0({{.*}}) num_warps(4)
// CHECK: ttng.async_tma_copy_global_to_local"""),
    (gemm_bias, dict(SIG, BIAS="*bf16"), """// A plain GEMM with a bias: no statistics; the bias is loaded coalesced and converted to the
// accumulator's column layout.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK: ttg.convert_layout
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0({{.*}}) num_warps(4)"""),
    (negative_two_dots, SIG, """// Two accumulators: left alone.
// CHECK-LABEL: tt.func public @negative_two_dots
// CHECK-NOT: ttg.warp_specialize
// CHECK-COUNT-2: tt.dot"""),
    (negative_postnorm, dict(SIG, eps="fp32"), """// A row reduction of the accumulator (post-norm): left to epilogue-norm / cluster-reduce.
// CHECK-LABEL: tt.func public @negative_postnorm
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot"""),
    (negative_strided_k, SIG, """// A not contiguous along K: left alone.
// CHECK-LABEL: tt.func public @negative_strided_k
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot"""),
]
POST_SIG = {"X": "*bf16", "W": "*bf16", "G": "*bf16", "Y": "*bf16", "M": "i32", "K": "i32",
            "sx": "i32", "sw": "i32", "sy": "i32", "eps": "fp32", "N": "constexpr",
            "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
POST_CASES = [  # (kernel, signature, N or None (a runtime N))
    (postnorm_rows, dict(POST_SIG, BIAS="*bf16", RES="*bf16", sr="i32"), 512),
    (postnorm_one_tile, POST_SIG, 256),
    (negative_postnorm_reversed, POST_SIG, 512),
    (negative_postnorm_runtime_n, dict({k: v for k, v in POST_SIG.items() if k != "N"}, N="i32"), None),
]

REMARKS = """// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; 1 row statistic(s)
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; no statistics
// REMARK: missed: 2 tt.dot ops; the lowering handles one accumulator
// REMARK: missed: the epilogue reduces rows of the accumulator (a post-norm)
// REMARK: missed: the A tile is not contiguous along K"""


def _ttir(fn, sig, n=None, tile=None):
    consts = dict(tile or TILE) if n is None else dict(tile or TILE, N=n)
    ck = triton.compile(ASTSource(fn, sig, constexprs=consts), target=GPUTarget("cuda", 90, 32))
    text = ck.asm["ttir"]
    text = re.sub(r"\s*loc\((?:[^()]|\([^()]*\))*\)", "", text)
    return "\n".join(l for l in text.splitlines() if not l.startswith("#loc"))


def main():
    out = ["// hopper-ws: fused GEMM-shaped TTIR -> the warp-specialized Gluon template's TTGIR.",
           "// Inputs: TTIR from test/lit/inputs/hopper_ws_kernels.py (locations stripped).",
           "// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>%t.remark | FileCheck %s",
           "// RUN: FileCheck %s --check-prefix=REMARK < %t.remark",
           "", REMARKS, ""]
    chunks = []
    for fn, sig, checks in CASES:
        chunks.append(checks + "\n" + _ttir(fn, sig))
    out.append("\n\n// -----\n\n".join(chunks))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hopper-ws.mlir")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def post_chunks():
    """The post-norm chunks' TTIR (hopper-ws{post-norm=true}), printed for the .mlir file."""
    for fn, sig, n in POST_CASES:
        print(f"// ----- {fn.__name__}\n" + _ttir(fn, sig, n))


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--post"]:
        post_chunks()
    elif sys.argv[1:] == ["--tile-stats"]:
        print(_ttir(rms_tile_stats, dict(SIG, eps="fp32"), tile={"BM": 128, "BN": 128, "BK": 128}))
    else:
        main()
