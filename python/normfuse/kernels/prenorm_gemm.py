"""Naive pre-norm GEMM kernels: the obvious code a user writes, and the input of `lazy-prenorm`.

    Y = norm(X) @ W^T        X: [M, K] row-major, W: [N, K] (torch.nn.Linear layout), Y: [M, N]

Each program owns one [BLOCK_M, BLOCK_N] tile of Y and runs two loops over K:

  loop 1 (statistics)   ss += sum(x * x)               (LayerNorm: s1 += sum(x), s2 += sum(x * x))
  then                  rstd = 1 / sqrt(ss / K + eps)   (LayerNorm: mean, var = s2/K - mean^2)
  loop 2 (GEMM)         a = x * rstd * g                (LayerNorm: (x - mean) * rstd * g + beta)
                        acc = dot(a.to(bf16), w_tile, acc)

Both loops read the same A tiles, so X is read twice; the scale sits inside the GEMM loop. The
`lazy-prenorm` pass turns this into one loop (see passes/lazy_prenorm.py).

NUM_PROGRAMS > 0 makes the kernel persistent: that many programs walk the tiles. With ROW_BLOCKS
(RMSNorm) they walk row blocks instead, and each computes its rows' statistics once (loop 1)
before looping over the row's N tiles (loop 2 per tile); the pass then moves loop 1 into the
first N tile (`lazy-prenorm`: "once per row block"). Both loops compute their
A-tile mask with the same helper, so the pass can prove that they read the same elements.

BIAS (HAS_BIAS) is an output bias added after the GEMM: the Linear bias, plus beta @ W^T when the
op folds the LayerNorm bias out of the loop.

Ragged M, N, K are masked (EVEN_K drops the K mask when K % BLOCK_K == 0; rows past M are
clamped with `% M` on the load side and masked on the store). USE_TMA=True reads the A and W tiles with bulk tensor copies (device-side descriptors; needs
16-byte aligned rows, i.e. K % 8 == 0 in bf16/fp16, and a global-scratch allocator); the
statistics loop reads A the same way.

HAS_G=False is the form used when
the norm weight has been folded into W (W' = W diag(g)).

Arguments: X [M, K], G/B [K] (norm weight / LayerNorm bias), W [N, K], Y [M, N], BIAS [N].
"""
import triton
import triton.language as tl


@triton.jit
def _tile_ids(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped ordering of tile `pid`: GROUP_M row blocks share the W column tiles in L2.
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    return pid_m, pid_n


@triton.jit
def _tile_offsets(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    # Tile `tile`'s block ids, row/column/k offsets, and its rows and columns clamped with % M and
    # % N on the load side (the store masks rows >= M and columns >= N).
    pid_m, pid_n = _tile_ids(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    return pid_m, pid_n, offs_m, offs_n, offs_k, offs_m % M, offs_n % N


@triton.jit
def _k_mask(offs_k, K, k, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr):
    if EVEN_K:
        return offs_k < BLOCK_K
    else:
        return offs_k < K - k * BLOCK_K


@triton.jit
def _a_tile(x_ptrs, x_desc, kmask, pid_m, k, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
            USE_TMA: tl.constexpr):
    # The same helper in both loops, so the pass can prove that they read the same tile.
    if USE_TMA:
        return x_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
    else:
        return tl.load(x_ptrs, mask=kmask[None, :], other=0.0)


@triton.jit
def _b_tile(w_ptrs, w_desc, kmask, pid_n, k, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
            USE_TMA: tl.constexpr):
    if USE_TMA:
        return w_desc.load([pid_n * BLOCK_N, k * BLOCK_K]).T
    else:
        return tl.load(w_ptrs, mask=kmask[:, None], other=0.0)


@triton.jit
def _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, USE_TMA: tl.constexpr):
    # Made once per program (outside a persistent tile loop): device-side descriptors are
    # written to global scratch.
    if USE_TMA:
        x_desc = tl.make_tensor_descriptor(X, shape=[M, K], strides=[stride_xm, 1],
                                           block_shape=[BLOCK_M, BLOCK_K])
        w_desc = tl.make_tensor_descriptor(W, shape=[N, K], strides=[stride_wn, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
    else:  # unused placeholders
        x_desc = X
        w_desc = W
    return x_desc, w_desc


@triton.jit
def _store_tile(Y, acc, offs_m, offs_n, M, N, stride_ym):
    # A pointer store: a bulk tensor store here (tried 2026-11-29) left rows unwritten in the
    # non-persistent fp16 kernel with g in the loop on the H200.
    y_ptrs = Y + offs_m[:, None] * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, acc.to(Y.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _rms_rstd(X, x_desc, rows, offs_k, pid_m, K, stride_xm, eps, EVEN_K: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, USE_TMA: tl.constexpr):
    # loop 1: row statistics
    x_ptrs = X + rows[:, None] * stride_xm + offs_k[None, :]
    ss = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = _k_mask(offs_k, K, k, BLOCK_K, EVEN_K)
        x = _a_tile(x_ptrs, x_desc, kmask, pid_m, k, BLOCK_M, BLOCK_K, USE_TMA).to(tl.float32)
        ss += tl.sum(x * x, axis=1)
        x_ptrs += BLOCK_K
    return 1.0 / tl.sqrt(ss / K + eps)


@triton.jit
def _rms_gemm_store(rstd, pid_m, pid_n, offs_m, offs_n, offs_k, rows, cols, X, G, W, Y, BIAS,
                    x_desc, w_desc, M, N, K, stride_xm, stride_wn, stride_ym,
                    HAS_G: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    USE_TMA: tl.constexpr):
    # loop 2: GEMM on the normalized tile, then the store
    x_ptrs = X + rows[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = W + cols[None, :] * stride_wn + offs_k[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = _k_mask(offs_k, K, k, BLOCK_K, EVEN_K)
        x = _a_tile(x_ptrs, x_desc, kmask, pid_m, k, BLOCK_M, BLOCK_K, USE_TMA).to(tl.float32)
        a = x * rstd[:, None]
        if HAS_G:
            g = tl.load(G + k * BLOCK_K + offs_k, mask=kmask, other=0.0).to(tl.float32)
            a = a * g[None, :]
        b = _b_tile(w_ptrs, w_desc, kmask, pid_n, k, BLOCK_N, BLOCK_K, USE_TMA)
        acc = tl.dot(a.to(b.dtype), b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    if HAS_BIAS:
        acc += tl.load(BIAS + cols).to(tl.float32)[None, :]
    _store_tile(Y, acc, offs_m, offs_n, M, N, stride_ym)


@triton.jit
def _rms_tile(tile, X, G, W, Y, BIAS, x_desc, w_desc, M, N, K, stride_xm, stride_wn,
              stride_ym, eps, HAS_G: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              GROUP_M: tl.constexpr, USE_TMA: tl.constexpr):
    pid_m, pid_n, offs_m, offs_n, offs_k, rows, cols = _tile_offsets(tile, M, N, BLOCK_M, BLOCK_N,
                                                                     BLOCK_K, GROUP_M)
    rstd = _rms_rstd(X, x_desc, rows, offs_k, pid_m, K, stride_xm, eps, EVEN_K, BLOCK_M, BLOCK_K,
                     USE_TMA)
    _rms_gemm_store(rstd, pid_m, pid_n, offs_m, offs_n, offs_k, rows, cols, X, G, W, Y, BIAS,
                    x_desc, w_desc, M, N, K, stride_xm, stride_wn, stride_ym, HAS_G, HAS_BIAS,
                    EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K, USE_TMA)


@triton.jit
def _rms_row_block(pid_m, X, G, W, Y, BIAS, x_desc, w_desc, M, N, K, stride_xm, stride_wn,
                   stride_ym, eps, HAS_G: tl.constexpr, HAS_BIAS: tl.constexpr,
                   EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, USE_TMA: tl.constexpr):
    # One row block and all its N tiles: the statistics once, then one GEMM loop per N tile.
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = offs_m % M
    offs_k = tl.arange(0, BLOCK_K)
    rstd = _rms_rstd(X, x_desc, rows, offs_k, pid_m, K, stride_xm, eps, EVEN_K, BLOCK_M, BLOCK_K,
                     USE_TMA)
    for pid_n in range(0, tl.cdiv(N, BLOCK_N)):
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        _rms_gemm_store(rstd, pid_m, pid_n, offs_m, offs_n, offs_k, rows, offs_n % N, X, G, W, Y,
                        BIAS, x_desc, w_desc, M, N, K, stride_xm, stride_wn, stride_ym, HAS_G,
                        HAS_BIAS, EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K, USE_TMA)


@triton.jit
def rmsnorm_gemm_naive(X, G, W, Y, BIAS, M, N, K, stride_xm, stride_wn, stride_ym, eps,
                       HAS_G: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr, USE_TMA: tl.constexpr = False,
                       NUM_PROGRAMS: tl.constexpr = 0, ROW_BLOCKS: tl.constexpr = False):
    x_desc, w_desc = _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M, BLOCK_N,
                                  BLOCK_K, USE_TMA)
    if NUM_PROGRAMS > 0 and ROW_BLOCKS:  # persistent over row blocks, statistics once per row block
        for pid_m in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK_M), NUM_PROGRAMS):
            _rms_row_block(pid_m, X, G, W, Y, BIAS, x_desc, w_desc, M, N, K, stride_xm,
                           stride_wn, stride_ym, eps, HAS_G, HAS_BIAS, EVEN_K, BLOCK_M, BLOCK_N,
                           BLOCK_K, USE_TMA)
    elif NUM_PROGRAMS > 0:  # persistent: NUM_PROGRAMS programs walk the tiles
        num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=True):
            _rms_tile(tile, X, G, W, Y, BIAS, x_desc, w_desc, M, N, K, stride_xm,
                      stride_wn, stride_ym, eps, HAS_G, HAS_BIAS, EVEN_K, BLOCK_M, BLOCK_N,
                      BLOCK_K, GROUP_M, USE_TMA)
    else:
        _rms_tile(tl.program_id(0), X, G, W, Y, BIAS, x_desc, w_desc, M, N, K, stride_xm,
                  stride_wn, stride_ym, eps, HAS_G, HAS_BIAS, EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K,
                  GROUP_M, USE_TMA)


@triton.jit
def _ln_tile(tile, X, G, B, W, Y, BIAS, x_desc, w_desc, M, N, K, stride_xm, stride_wn,
             stride_ym, eps, HAS_G: tl.constexpr, HAS_B: tl.constexpr, HAS_BIAS: tl.constexpr,
             EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, USE_TMA: tl.constexpr):
    pid_m, pid_n, offs_m, offs_n, offs_k, rows, cols = _tile_offsets(tile, M, N, BLOCK_M, BLOCK_N,
                                                                     BLOCK_K, GROUP_M)
    # loop 1: sum and sum of squares
    x_ptrs = X + rows[:, None] * stride_xm + offs_k[None, :]
    s1 = tl.zeros([BLOCK_M], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = _k_mask(offs_k, K, k, BLOCK_K, EVEN_K)
        x = _a_tile(x_ptrs, x_desc, kmask, pid_m, k, BLOCK_M, BLOCK_K, USE_TMA).to(tl.float32)
        s1 += tl.sum(x, axis=1)
        s2 += tl.sum(x * x, axis=1)
        x_ptrs += BLOCK_K
    mean = s1 / K
    var = s2 / K - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    # loop 2: GEMM on the normalized tile
    x_ptrs = X + rows[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = W + cols[None, :] * stride_wn + offs_k[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = _k_mask(offs_k, K, k, BLOCK_K, EVEN_K)
        x = _a_tile(x_ptrs, x_desc, kmask, pid_m, k, BLOCK_M, BLOCK_K, USE_TMA).to(tl.float32)
        a = (x - mean[:, None]) * rstd[:, None]
        if HAS_G:
            g = tl.load(G + k * BLOCK_K + offs_k, mask=kmask, other=0.0).to(tl.float32)
            a = a * g[None, :]
        if HAS_B:
            beta = tl.load(B + k * BLOCK_K + offs_k, mask=kmask, other=0.0).to(tl.float32)
            a = a + beta[None, :]
        b = _b_tile(w_ptrs, w_desc, kmask, pid_n, k, BLOCK_N, BLOCK_K, USE_TMA)
        acc = tl.dot(a.to(b.dtype), b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    if HAS_BIAS:
        acc += tl.load(BIAS + cols).to(tl.float32)[None, :]
    _store_tile(Y, acc, offs_m, offs_n, M, N, stride_ym)


@triton.jit
def layernorm_gemm_naive(X, G, B, W, Y, BIAS, M, N, K, stride_xm, stride_wn, stride_ym, eps,
                         HAS_G: tl.constexpr, HAS_B: tl.constexpr, HAS_BIAS: tl.constexpr,
                         EVEN_K: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, USE_TMA: tl.constexpr = False,
                         NUM_PROGRAMS: tl.constexpr = 0):
    x_desc, w_desc = _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M, BLOCK_N,
                                  BLOCK_K, USE_TMA)
    if NUM_PROGRAMS > 0:  # persistent: NUM_PROGRAMS programs walk the tiles
        num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=True):
            _ln_tile(tile, X, G, B, W, Y, BIAS, x_desc, w_desc, M, N, K, stride_xm,
                     stride_wn, stride_ym, eps, HAS_G, HAS_B, HAS_BIAS, EVEN_K, BLOCK_M, BLOCK_N,
                     BLOCK_K, GROUP_M, USE_TMA)
    else:
        _ln_tile(tl.program_id(0), X, G, B, W, Y, BIAS, x_desc, w_desc, M, N, K,
                 stride_xm, stride_wn, stride_ym, eps, HAS_G, HAS_B, HAS_BIAS, EVEN_K, BLOCK_M,
                 BLOCK_N, BLOCK_K, GROUP_M, USE_TMA)
