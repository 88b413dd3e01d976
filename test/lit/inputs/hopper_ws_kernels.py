"""Writes test/lit/hopper-ws.mlir: TTIR of small GEMM-shaped kernels in the fused form (what
lazy-prenorm leaves) and of naive post-norms, one `// -----` chunk per case, positive cases first,
then negative_*; and test/lit/hopper-ws-epi-prefetch.mlir (its first three kernels).

    PYTHONPATH=python python3 test/lit/inputs/hopper_ws_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

import litgen


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
    # is still the statistic, not a post-norm's row sum (compiled at BM = BN = BK = 128)
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
POST_SIG = {"X": "*bf16", "W": "*bf16", "G": "*bf16", "Y": "*bf16", "M": "i32", "K": "i32",
            "sx": "i32", "sw": "i32", "sy": "i32", "eps": "fp32", "N": "constexpr",
            "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
TILE = {"BM": 128, "BN": 256, "BK": 64}
TILE_STATS = {"BM": 128, "BN": 128, "BK": 128}  # rms_tile_stats: BLOCK_K == BLOCK_N

# hopper-ws.mlir: the RUN lines, then the remarks and the other prefixes' checks of several
# chunks; one chunk per (kernel, signature, constexprs (N: a post-norm's row), checks) below
HEAD = """// hopper-ws: fused GEMM-shaped TTIR -> the warp-specialized Gluon template's TTGIR.
// Inputs: TTIR from test/lit/inputs/hopper_ws_kernels.py (locations stripped).
// Each RUN line lowers only the chunks its checks read (select-chunks, test/lit/README.md).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{schedule=coop,stats-rows=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: select-chunks rms_fused,gemm_bias,negative_two_dots,negative_postnorm,negative_strided_k %s \\
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-share=true}' - 2>%t.share-remark | FileCheck %s --check-prefix=SHARE
// RUN: FileCheck %s --check-prefix=SHARE-REMARK < %t.share-remark
// RUN: select-chunks --except rms_tile_stats %s \\
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='epilogue-norm,hopper-ws{post-norm=true}' - 2>%t.post-remark | FileCheck %s --check-prefix=POST
// RUN: FileCheck %s --check-prefix=POST-REMARK < %t.post-remark
// RUN: select-chunks rms_fused,gemm_bias,postnorm_rows,postnorm_one_tile,rms_tile_stats %s \\
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='epilogue-norm,hopper-ws{post-norm=true,schedule=coop2}' - 2>&1 >/dev/null | FileCheck %s --check-prefix=COOP2
// RUN: select-chunks rms_fused,gemm_bias,postnorm_rows,rms_tile_stats %s \\
// RUN:   | normfuse-opt --split-input-file --hopper-ws - 2>&1 >/dev/null | FileCheck %s --check-prefix=AUTO
// RUN: select-chunks rms_fused %s \\
// RUN:   | normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-rows=false,stats-lanes=true}' - 2>&1 >/dev/null | FileCheck %s --check-prefix=OPERAND-LAYOUT
// RUN: select-chunks rms_fused,gemm_bias,postnorm_rows %s \\
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
"""
CASES = [
    (rms_fused, dict(SIG, eps="fp32"), TILE, """// RMSNorm statistics in the k-loop: warp-specialized, the statistic and the epilogue become hooks.
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
// CHECK: ttng.async_tma_copy_global_to_local"""),
    (gemm_bias, dict(SIG, BIAS="*bf16"), TILE, """// A plain GEMM with a bias: no statistics; the bias is loaded coalesced and converted to the
// accumulator's column layout.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK: ttg.convert_layout
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0({{.*}}) num_warps(4)"""),
    (postnorm_rows, dict(POST_SIG, BIAS="*bf16", RES="*bf16", sr="i32"), dict(TILE, N=512), """// The naive post-norm over a row of 2 N tiles, bias and residual (kernels/postnorm_gemm.py's
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
// POST: ttng.async_tma_copy_global_to_local {{.*}}tensor<128x256xbf16"""),
    (postnorm_one_tile, POST_SIG, dict(TILE, N=256), """// The naive post-norm with the row in one tile: store, reload, store next to the GEMM. hopper-ws
// alone says to run epilogue-norm first; after it, the row reductions stay in the epilogue (no
// exchange).
// CHECK-LABEL: tt.func public @postnorm_one_tile
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot
// POST: tt.func public @ws_gemm_kernel
// POST-NOT: st.relaxed.gpu.global.b64
// POST: "tt.reduce"
// POST: math.sqrt
// POST: partition0("""),
    (rms_tile_stats, dict(SIG, eps="fp32"), TILE_STATS, """// lazy-prenorm's tile form of one statistic at BLOCK_K == BLOCK_N = 128 (rms_tile_stats): the
// [BM, BK] squares' reduction after the loop has the accumulator's shape, and is the statistic,
// not a post-norm's row sum: lowered, the statistic a hook.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-SAME: !tt.tensordesc<tensor<128x128xbf16
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot
// CHECK: "tt.reduce"
// CHECK: math.sqrt
// CHECK: ttng.async_tma_copy_local_to_global"""),
    (negative_two_dots, SIG, TILE, """// Two accumulators: left alone.
// CHECK-LABEL: tt.func public @negative_two_dots
// CHECK-NOT: ttg.warp_specialize
// CHECK-COUNT-2: tt.dot"""),
    (negative_postnorm, dict(SIG, eps="fp32"), TILE, """// A row reduction of the accumulator (post-norm): left to epilogue-norm / cluster-reduce by
// default (post-norm=true lowers it: the kernel covers one N tile, the reductions are whole rows).
// CHECK-LABEL: tt.func public @negative_postnorm
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot"""),
    (negative_strided_k, SIG, TILE, """// A not contiguous along K: left alone.
// CHECK-LABEL: tt.func public @negative_strided_k
// CHECK-NOT: ttg.warp_specialize
// CHECK: tt.dot"""),
    (negative_postnorm_reversed, POST_SIG, dict(TILE, N=512), """// The normalizing loop walks the tiles backwards: its reload is not the tile stored in the same
// trip (the pass proves trip-by-trip equality; it does not reorder): left alone.
// CHECK-LABEL: tt.func public @negative_postnorm_reversed
// CHECK-NOT: ttg.warp_specialize
// POST: tt.func public @negative_postnorm_reversed
// POST-NOT: ttg.warp_specialize
// POST: tt.dot"""),
    (negative_postnorm_runtime_n, dict({k: v for k, v in POST_SIG.items() if k != "N"}, N="i32"), TILE, """// N a runtime argument: the loops over the row's tiles have no constant bounds: left alone.
// CHECK-LABEL: tt.func public @negative_postnorm_runtime_n
// CHECK-NOT: ttg.warp_specialize
// POST: tt.func public @negative_postnorm_runtime_n
// POST-NOT: ttg.warp_specialize
// POST: tt.dot"""),
]

# hopper-ws-epi-prefetch.mlir: hopper-ws.mlir's first three kernels under epi-prefetch=true
EPI_HEAD = """// hopper-ws{epi-prefetch=true}: the epilogue's 1-D loads (a bias here; LayerNorm's column sums)
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
"""
EPI_CASES = [
    (rms_fused, dict(SIG, eps="fp32"), TILE, """// RMSNorm pre-norm (no bias): nothing to prefetch.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// DEFAULT-LABEL: tt.func public @ws_gemm_kernel"""),
    (gemm_bias, dict(SIG, BIAS="*bf16"), TILE, """// A plain GEMM with a bias: the bias load (coalesced, 256 bf16) comes right before the consumer's
// k-loop with the option, after it by default.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: tt.load {{.*}} : tensor<256x!tt.ptr<bf16>, #blocked>
// CHECK-NEXT: scf.for {{.*}} -> (tensor<128x256xf32, #mma>)
// DEFAULT-LABEL: tt.func public @ws_gemm_kernel
// DEFAULT: ttg.warp_specialize
// DEFAULT: scf.for {{.*}} -> (tensor<128x256xf32, #mma>)
// DEFAULT: tt.load {{.*}} : tensor<256x!tt.ptr<bf16>, #blocked>"""),
    (postnorm_rows, dict(POST_SIG, BIAS="*bf16", RES="*bf16", sr="i32"), dict(TILE, N=512), """// A post-norm over a row of 2 N tiles (with post-norm=true: its rows keep their loads)."""),
]


def _lit(head, cases) -> str:
    return litgen.lit_text(head, [(fn.__name__, fn, sig, consts, checks)
                                  for fn, sig, consts, checks in cases],
                           blank_before_module=False)


def outputs() -> dict:
    return {"hopper-ws.mlir": _lit(HEAD, CASES),
            "hopper-ws-epi-prefetch.mlir": _lit(EPI_HEAD, EPI_CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
