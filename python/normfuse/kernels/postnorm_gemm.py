"""Naive post-norm GEMM kernels: y = norm(x @ W^T + bias + residual), the input of `epilogue-norm`
and `cluster-reduce`.

    X: [M, K] row-major, W: [N, K] (torch.nn.Linear layout), BIAS: [N] (HAS_BIAS), RES: [M, N]
    (HAS_RES, row stride stride_rm), Y: [M, N]; the norm is over each output row of length N
    (RMSNorm with weight G; LayerNorm with weight G and bias B).

One program per BLOCK_M row block loops over all N tiles of its rows twice:

  pass 1, per N tile:  acc = x @ w_tile (k-loop) + bias + res; ss += sum(acc^2) (LayerNorm: s1, s2);
                       store the unnormalized tile to Y
  then                 rstd (and mean) per row
  pass 2, per N tile:  reload the tile from Y, normalize, scale by g (+ beta), store

Correct for any N, slow for large N. With N a constexpr <= BLOCK_N both passes have one trip, Triton
inlines them, and `epilogue-norm` forwards the tile through registers: one store, no round trip.
For N > BLOCK_N, `cluster-reduce` deals the N tiles of a row block to the CTAs of a cluster and
exchanges the row statistics through distributed shared memory (then `epilogue-norm` again).
EVEN_K (K % BLOCK_K == 0) drops the k masks, which lets Triton's pipeliner use async copies.
USE_TMA reads the tiles with bulk tensor copies (16-byte aligned rows; needs triton.set_allocator).
The train kernels (`*_train_naive`, the training forward) also store h, the tile before the
norm, in pass 1 (for the backward) and, with SAVE_STATS, rstd (and mean) after pass 2; ACT = 1
applies SiLU to the norm's output before its store (the post-norm block's activation: its
linear 2 reads SiLU(z), and the backward needs h, not z).
PERSISTENT: a grid smaller than the number of row blocks, each program walking row blocks
pid, pid + num_programs, ... (`tl.range(..., flatten=True)`, so that Triton can overlap one row
block's epilogue with the next one's loads). `cluster-reduce` divides the program id and the
program count by the cluster size, so the same code walks the row blocks cluster by cluster.
"""
import triton
import triton.language as tl

from .prenorm_gemm import _descriptors


@triton.jit
def _gemm_tile(X, W, BIAS, RES, x_desc, w_desc, rows, offs_m, row0, n, M, K, stride_xm, stride_wn,
               stride_rm, N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr,
               HAS_RES: tl.constexpr, USE_TMA: tl.constexpr):
    offs_n = n * BLOCK_N + tl.arange(0, BLOCK_N)
    wrows = offs_n % N  # wrap-around rows of W: no mask along N, the columns >= N are not stored
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a_ptr = X + rows[:, None] * stride_xm + k * BLOCK_K + offs_k[None, :]
        b_ptr = W + wrows[None, :] * stride_wn + k * BLOCK_K + offs_k[:, None]
        if USE_TMA:  # bulk tensor copies; out-of-bounds rows and columns read as zero
            a = x_desc.load([row0, k * BLOCK_K])
            b = w_desc.load([n * BLOCK_N, k * BLOCK_K]).T
        elif EVEN_K:
            a = tl.load(a_ptr)
            b = tl.load(b_ptr)
        else:
            kmask = offs_k < K - k * BLOCK_K
            a = tl.load(a_ptr, mask=kmask[None, :], other=0.0)
            b = tl.load(b_ptr, mask=kmask[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
    nmask = offs_n < N
    if HAS_BIAS:
        acc += tl.load(BIAS + offs_n, mask=nmask, other=0.0).to(tl.float32)[None, :]
    if HAS_RES:
        rmask = (offs_m[:, None] < M) & nmask[None, :]
        acc += tl.load(RES + offs_m[:, None] * stride_rm + offs_n[None, :], mask=rmask,
                       other=0.0).to(tl.float32)
    # columns >= N (ragged last tile) hold products with wrapped W rows: zero them for the sums
    acc = tl.where(nmask[None, :], acc, 0.0)
    return acc


@triton.jit
def _ymask(offs_m, offs_n, M, N: tl.constexpr):
    return (offs_m[:, None] < M) & (offs_n[None, :] < N)


@triton.jit
def _store_rows(Y, tile, offs_m, offs_n, M, stride_ym, N: tl.constexpr):
    # a [BLOCK_M, BLOCK_N] tile of Y (rows >= M and columns >= N masked)
    tl.store(Y + offs_m[:, None] * stride_ym + offs_n[None, :], tile.to(Y.dtype.element_ty),
             mask=_ymask(offs_m, offs_n, M, N))


@triton.jit
def _rms_rows(pid_m, X, W, BIAS, RES, G, Y, x_desc, w_desc, M, K, stride_xm, stride_wn, stride_rm,
              stride_ym, eps, N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr,
              HAS_RES: tl.constexpr, USE_TMA: tl.constexpr, H=None, RSTD=None,
              SAVE: tl.constexpr = False, SAVE_STATS: tl.constexpr = True, ACT: tl.constexpr = 0):
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = offs_m % M
    ss = tl.zeros([BLOCK_M], dtype=tl.float32)
    for n in range(0, tl.cdiv(N, BLOCK_N)):
        acc = _gemm_tile(X, W, BIAS, RES, x_desc, w_desc, rows, offs_m, pid_m * BLOCK_M, n, M, K,
                         stride_xm, stride_wn, stride_rm, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K,
                         HAS_BIAS, HAS_RES, USE_TMA)
        ss += tl.sum(acc * acc, axis=1)
        if SAVE:  # training: the pre-norm activation h, for the backward (before Y's store)
            _store_rows(H, acc, offs_m, n * BLOCK_N + tl.arange(0, BLOCK_N), M, stride_ym, N)
        _store_rows(Y, acc, offs_m, n * BLOCK_N + tl.arange(0, BLOCK_N), M, stride_ym, N)
    rstd = 1.0 / tl.sqrt(ss / N + eps)
    for n in range(0, tl.cdiv(N, BLOCK_N)):
        offs_n = n * BLOCK_N + tl.arange(0, BLOCK_N)
        y = tl.load(Y + offs_m[:, None] * stride_ym + offs_n[None, :], mask=_ymask(offs_m, offs_n, M, N),
                    other=0.0).to(tl.float32)
        g = tl.load(G + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
        out = y * rstd[:, None] * g[None, :]
        if ACT == 1:  # SiLU of the norm's output (the block's activation before its linear 2)
            out = out * tl.sigmoid(out)
        _store_rows(Y, out, offs_m, offs_n, M, stride_ym, N)
    if SAVE and SAVE_STATS:  # after the normalizing loop (between the loops it would stop
        tl.store(RSTD + offs_m, rstd, mask=offs_m < M)  # cluster-reduce)


@triton.jit
def linear_rmsnorm_naive(X, W, BIAS, RES, G, Y, M, K, stride_xm, stride_wn, stride_rm, stride_ym, eps,
                         N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr = False,
                         HAS_BIAS: tl.constexpr = False, HAS_RES: tl.constexpr = False,
                         USE_TMA: tl.constexpr = False, PERSISTENT: tl.constexpr = False):
    x_desc, w_desc = _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M, BLOCK_N, BLOCK_K, USE_TMA)
    if PERSISTENT:
        for pid_m in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.num_programs(0), flatten=True):
            _rms_rows(pid_m, X, W, BIAS, RES, G, Y, x_desc, w_desc, M, K, stride_xm, stride_wn,
                      stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, HAS_BIAS,
                      HAS_RES, USE_TMA)
    else:
        _rms_rows(tl.program_id(0), X, W, BIAS, RES, G, Y, x_desc, w_desc, M, K, stride_xm,
                  stride_wn, stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K,
                  HAS_BIAS, HAS_RES, USE_TMA)


@triton.jit
def _ln_rows(pid_m, X, W, BIAS, RES, G, B, Y, x_desc, w_desc, M, K, stride_xm, stride_wn, stride_rm,
             stride_ym, eps, N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr,
             HAS_RES: tl.constexpr, USE_TMA: tl.constexpr, H=None, RSTD=None, MEAN=None,
             SAVE: tl.constexpr = False, SAVE_STATS: tl.constexpr = True, ACT: tl.constexpr = 0):
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = offs_m % M
    s1 = tl.zeros([BLOCK_M], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_M], dtype=tl.float32)
    for n in range(0, tl.cdiv(N, BLOCK_N)):
        acc = _gemm_tile(X, W, BIAS, RES, x_desc, w_desc, rows, offs_m, pid_m * BLOCK_M, n, M, K,
                         stride_xm, stride_wn, stride_rm, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K,
                         HAS_BIAS, HAS_RES, USE_TMA)
        s1 += tl.sum(acc, axis=1)
        s2 += tl.sum(acc * acc, axis=1)
        if SAVE:
            _store_rows(H, acc, offs_m, n * BLOCK_N + tl.arange(0, BLOCK_N), M, stride_ym, N)
        _store_rows(Y, acc, offs_m, n * BLOCK_N + tl.arange(0, BLOCK_N), M, stride_ym, N)
    mean = s1 / N
    rstd = 1.0 / tl.sqrt(tl.maximum(s2 / N - mean * mean, 0.0) + eps)
    for n in range(0, tl.cdiv(N, BLOCK_N)):
        offs_n = n * BLOCK_N + tl.arange(0, BLOCK_N)
        y = tl.load(Y + offs_m[:, None] * stride_ym + offs_n[None, :], mask=_ymask(offs_m, offs_n, M, N),
                    other=0.0).to(tl.float32)
        g = tl.load(G + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
        beta = tl.load(B + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
        out = (y - mean[:, None]) * rstd[:, None] * g[None, :] + beta[None, :]
        if ACT == 1:
            out = out * tl.sigmoid(out)
        _store_rows(Y, out, offs_m, offs_n, M, stride_ym, N)
    if SAVE and SAVE_STATS:
        tl.store(RSTD + offs_m, rstd, mask=offs_m < M)
        tl.store(MEAN + offs_m, mean, mask=offs_m < M)


@triton.jit
def linear_layernorm_naive(X, W, BIAS, RES, G, B, Y, M, K, stride_xm, stride_wn, stride_rm, stride_ym,
                           eps, N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr = False,
                           HAS_BIAS: tl.constexpr = False, HAS_RES: tl.constexpr = False,
                           USE_TMA: tl.constexpr = False, PERSISTENT: tl.constexpr = False):
    x_desc, w_desc = _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M, BLOCK_N, BLOCK_K, USE_TMA)
    if PERSISTENT:
        for pid_m in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.num_programs(0), flatten=True):
            _ln_rows(pid_m, X, W, BIAS, RES, G, B, Y, x_desc, w_desc, M, K, stride_xm, stride_wn,
                     stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, HAS_BIAS,
                     HAS_RES, USE_TMA)
    else:
        _ln_rows(tl.program_id(0), X, W, BIAS, RES, G, B, Y, x_desc, w_desc, M, K, stride_xm,
                 stride_wn, stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K,
                 HAS_BIAS, HAS_RES, USE_TMA)


# Training forms: the same kernels that also save what the backward needs (kernels/backward.py):
# H = the pre-norm activation x @ W^T + bias + residual (in Y's dtype, row stride stride_ym),
# RSTD (and MEAN) per row, fp32 (SAVE_STATS; else the backward computes them from H). The H tile
# is stored before Y's unnormalized store and the statistics after the normalizing loop, so
# cluster-reduce and epilogue-norm apply unchanged. ACT = 1: Y = SiLU(norm(...)).

@triton.jit
def linear_rmsnorm_train_naive(X, W, BIAS, RES, G, Y, H, RSTD, M, K, stride_xm, stride_wn, stride_rm,
                               stride_ym, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                               EVEN_K: tl.constexpr = False, HAS_BIAS: tl.constexpr = False,
                               HAS_RES: tl.constexpr = False, USE_TMA: tl.constexpr = False,
                               PERSISTENT: tl.constexpr = False, SAVE_STATS: tl.constexpr = True,
                               ACT: tl.constexpr = 0):
    x_desc, w_desc = _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M, BLOCK_N, BLOCK_K, USE_TMA)
    if PERSISTENT:
        for pid_m in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.num_programs(0), flatten=True):
            _rms_rows(pid_m, X, W, BIAS, RES, G, Y, x_desc, w_desc, M, K, stride_xm, stride_wn,
                      stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, HAS_BIAS,
                      HAS_RES, USE_TMA, H, RSTD, True, SAVE_STATS, ACT)
    else:
        _rms_rows(tl.program_id(0), X, W, BIAS, RES, G, Y, x_desc, w_desc, M, K, stride_xm,
                  stride_wn, stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K,
                  HAS_BIAS, HAS_RES, USE_TMA, H, RSTD, True, SAVE_STATS, ACT)


@triton.jit
def linear_layernorm_train_naive(X, W, BIAS, RES, G, B, Y, H, RSTD, MEAN, M, K, stride_xm, stride_wn,
                                 stride_rm, stride_ym, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
                                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                 EVEN_K: tl.constexpr = False, HAS_BIAS: tl.constexpr = False,
                                 HAS_RES: tl.constexpr = False, USE_TMA: tl.constexpr = False,
                                 PERSISTENT: tl.constexpr = False, SAVE_STATS: tl.constexpr = True,
                                 ACT: tl.constexpr = 0):
    x_desc, w_desc = _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M, BLOCK_N, BLOCK_K, USE_TMA)
    if PERSISTENT:
        for pid_m in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.num_programs(0), flatten=True):
            _ln_rows(pid_m, X, W, BIAS, RES, G, B, Y, x_desc, w_desc, M, K, stride_xm, stride_wn,
                     stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, HAS_BIAS,
                     HAS_RES, USE_TMA, H, RSTD, MEAN, True, SAVE_STATS, ACT)
    else:
        _ln_rows(tl.program_id(0), X, W, BIAS, RES, G, B, Y, x_desc, w_desc, M, K, stride_xm,
                 stride_wn, stride_rm, stride_ym, eps, N, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K,
                 HAS_BIAS, HAS_RES, USE_TMA, H, RSTD, MEAN, True, SAVE_STATS, ACT)
