"""Naive backward kernels of the fused ops, written the obvious way; the passes fuse them.

Notation: a normalized row has length N (the pre-norm op's K, the post-norm op's N); xhat =
(x - mean) * rstd (RMSNorm: x * rstd); the norm's output is n = xhat * g + beta.

`norm_backward_naive` — the norm backward, optionally behind a GEMM and an activation:

    du  = DY[M, R] @ W[R, N]   (HAS_GEMM; else du = DY[M, N])          the dX GEMM of the next op
    du *= act'(xhat * g + beta)                 (ACT = 1: SiLU; the activation between the ops)
    dn  = du * g
    DX  = rstd * (dn - mean_N(dn) - xhat * mean_N(dn * xhat))   (RMSNorm: without mean_N(dn))
          + DRES                                                (HAS_DRES: a residual gradient)
    DGP[pid, :] = sum over the block's rows of du * xhat   (partial dg; dbeta partial: DBP, du)
    XN  = xhat * g + beta      (HAS_XN: the norm's output for the dW GEMM, stored in pass 1)

One kernel serves the pre-norm op's dX (DY = dY, W = the op's weight [N_out, K], X = the op's
input) and the regrouped post-norm backward (DY = the gradient of the *next* linear's output, W =
that linear's weight, X = the pre-norm activation h saved by the post-norm forward): in both the
norm backward is a row reduction of an elementwise function of the GEMM's accumulator and other
loaded tiles (x, g, rstd), i.e. an epilogue. It has the structure of the naive post-norm GEMM
(`postnorm_gemm.py`): per row block, a loop over the row's N tiles that computes du, accumulates
the row sums and stores du into DX; then the statistics; then a loop that reloads du, finishes dx
and stores it over du. `epilogue-norm` (one tile per row) and `cluster-reduce` (the row's tiles
dealt to a cluster, the row sums exchanged through DSMEM) rewrite it like the forward one.

`norm_backward_rowdot_naive` — the pre-norm dX with the norm backward's two row sums taken
from the GEMM's A operand instead of its output. For y = n W^T + b (W [R, N], n = xhat g +
beta, the forward's output y saved):

    sum_k du_k g_k xhat_k = sum_k du_k (n_k - beta_k) = sum_j dY_j (y_j - b_j - (W beta)_j)
    sum_k du_k g_k        = sum_j dY_j (W g)_j

so a memory-bound pass (`rowdot_sums`: dY and y read once, BP = b + W beta, WG = W g; it also
writes xhat for the dW side) gives them per row, and the dX GEMM (one program per (row block, N tile)) finishes dx in an
elementwise epilogue: no reduction over the GEMM's output, no exchange between a row's tiles.
(Accumulating the sums inside the GEMM's k-loop, from the dY tiles it streams, needs y's tiles
there too, re-read once per N tile, and serializes Triton's wgmma pipeline: the non-wgmma math
in the loop, ptxas says so at 128 x 128 tiles.) Pre-norm only (an activation between the norm
and the GEMM does not factor through dY). The epilogue takes the row sums as per-row
coefficients, dx = du g rstd + (x - mean) b + c, two FMAs an element (`_rowdot_coefs`;
ROW_COEFS=False keeps the norm backward's terms, for a benchmark's comparison).

`dw_norm_naive` — dW = dY^T n with n = xhat * g + beta recomputed from x and the saved rstd
(mean) in the GEMM's prologue: a row scale on the reduction side (M), so it is applied to the
loaded tile (it cannot be deferred past the k-loop as lazy-prenorm does in forward).

`row_stats` — rstd (and mean) per row, what the pre-norm forward saves for backward (LayerNorm:
two passes, mean then the centred sum of squares, so |mean| >> std loses nothing).
"""
import triton
import triton.language as tl


@triton.jit
def row_stats(X, RSTD, MEAN, M, K, stride_xm, eps, IS_LN: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    mmask = offs_m < M
    offs_k = tl.arange(0, BLOCK_K)
    mean = tl.zeros([BLOCK_M], dtype=tl.float32)
    if IS_LN:
        s1 = tl.zeros([BLOCK_M], dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            kk = k * BLOCK_K + offs_k
            x = tl.load(X + offs_m[:, None] * stride_xm + kk[None, :],
                        mask=mmask[:, None] & (kk[None, :] < K), other=0.0).to(tl.float32)
            s1 += tl.sum(x, axis=1)
        mean = s1 / K
    ss = tl.zeros([BLOCK_M], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + offs_k
        msk = mmask[:, None] & (kk[None, :] < K)
        x = tl.load(X + offs_m[:, None] * stride_xm + kk[None, :], mask=msk, other=0.0).to(tl.float32)
        xc = tl.where(msk, x - mean[:, None], 0.0)
        ss += tl.sum(xc * xc, axis=1)
    rstd = 1.0 / tl.sqrt(ss / K + eps)
    tl.store(RSTD + offs_m, rstd, mask=mmask)
    if IS_LN:
        tl.store(MEAN + offs_m, mean, mask=mmask)


@triton.jit
def _du_tile(DY, W, offs_m, offs_n, M, R, stride_dym, stride_wr, N: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_R: tl.constexpr,
             HAS_GEMM: tl.constexpr, EVEN_R: tl.constexpr = False,
             ZERO_OUT: tl.constexpr = True):
    mmask = offs_m < M
    nmask = offs_n < N
    if HAS_GEMM:
        # wrapped rows and columns (no masks on M and N: the pipeliner keeps async copies), the
        # out-of-range products zeroed after the loop; EVEN_R (R % BLOCK_R == 0) drops the R masks
        rows = offs_m % M
        cols = offs_n % N
        offs_r = tl.arange(0, BLOCK_R)
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for r in range(0, tl.cdiv(R, BLOCK_R)):
            rr = r * BLOCK_R + offs_r
            a_ptr = DY + rows[:, None] * stride_dym + rr[None, :]
            b_ptr = W + rr[:, None] * stride_wr + cols[None, :]
            if EVEN_R:
                a = tl.load(a_ptr)
                b = tl.load(b_ptr)
            else:
                a = tl.load(a_ptr, mask=rr[None, :] < R, other=0.0)
                b = tl.load(b_ptr, mask=rr[:, None] < R, other=0.0)
            acc = tl.dot(a, b, acc)
        if ZERO_OUT:  # (off: the caller masks every use of the wrapped products itself)
            acc = tl.where(mmask[:, None] & nmask[None, :], acc, 0.0)
    else:
        acc = tl.load(DY + offs_m[:, None] * stride_dym + offs_n[None, :],
                      mask=mmask[:, None] & nmask[None, :], other=0.0).to(tl.float32)
    return acc


@triton.jit
def _xhat(X, RSTD, MEAN, offs_m, offs_n, M, stride_xm, N: tl.constexpr, IS_LN: tl.constexpr):
    msk = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(X + offs_m[:, None] * stride_xm + offs_n[None, :], mask=msk, other=0.0).to(tl.float32)
    rstd = tl.load(RSTD + offs_m, mask=offs_m < M, other=0.0)
    if IS_LN:
        mean = tl.load(MEAN + offs_m, mask=offs_m < M, other=0.0)
        x = x - mean[:, None]
    return x * rstd[:, None]


@triton.jit
def _vec(V, offs_n, N: tl.constexpr, HAS: tl.constexpr, one):
    if HAS:
        v = tl.load(V + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    else:
        v = tl.where(offs_n < N, one, 0.0)
    return v


@triton.jit
def _dmask(offs_m, offs_n, M, N: tl.constexpr):
    return (offs_m[:, None] < M) & (offs_n[None, :] < N)


@triton.jit
def norm_backward_naive(DY, W, X, RSTD, MEAN, G, B, DRES, DX, DGP, DBP, XN, M, R, stride_dym,
                        stride_wr, stride_xm, stride_drm, stride_dxm, stride_xnm, N: tl.constexpr,
                        BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_R: tl.constexpr, IS_LN: tl.constexpr,
                        HAS_GEMM: tl.constexpr = True, HAS_G: tl.constexpr = True,
                        HAS_B: tl.constexpr = False, ACT: tl.constexpr = 0,
                        HAS_DRES: tl.constexpr = False, HAS_DG: tl.constexpr = True,
                        EVEN_R: tl.constexpr = False, HAS_XN: tl.constexpr = False):
    pid = tl.program_id(0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    c1 = tl.zeros([BLOCK_M], dtype=tl.float32)
    c2 = tl.zeros([BLOCK_M], dtype=tl.float32)
    # pass 1: du per tile, its row sums, partial column sums; du stored into DX
    for n in range(0, tl.cdiv(N, BLOCK_N)):
        offs_n = n * BLOCK_N + tl.arange(0, BLOCK_N)
        du = _du_tile(DY, W, offs_m, offs_n, M, R, stride_dym, stride_wr, N, BLOCK_M, BLOCK_N,
                      BLOCK_R, HAS_GEMM, EVEN_R)
        xhat = _xhat(X, RSTD, MEAN, offs_m, offs_n, M, stride_xm, N, IS_LN)
        g = _vec(G, offs_n, N, HAS_G, 1.0)
        if ACT == 1:  # SiLU'(z) at z = the norm's output
            z = xhat * g[None, :]
            if HAS_B:
                z += _vec(B, offs_n, N, HAS_B, 0.0)[None, :]
            s = 1.0 / (1.0 + tl.exp(-z))
            du = du * (s * (1.0 + z * (1.0 - s)))
        if HAS_XN:  # the norm's output n = xhat g + beta, for the dW GEMM (dW = dY^T n); stored
            # here, before du's store, like the dg partials (epilogue-norm keeps such stores)
            xn = xhat * g[None, :]
            if HAS_B:
                xn += _vec(B, offs_n, N, HAS_B, 0.0)[None, :]
            tl.store(XN + offs_m[:, None] * stride_xnm + offs_n[None, :], xn.to(XN.dtype.element_ty),
                     mask=_dmask(offs_m, offs_n, M, N))
        if HAS_DG:
            tl.store(DGP + pid * N + offs_n, tl.sum(du * xhat, axis=0), mask=offs_n < N)
            if IS_LN:
                tl.store(DBP + pid * N + offs_n, tl.sum(du, axis=0), mask=offs_n < N)
        dn = du * g[None, :]
        if IS_LN:
            c1 += tl.sum(dn, axis=1)
        c2 += tl.sum(dn * xhat, axis=1)
        tl.store(DX + offs_m[:, None] * stride_dxm + offs_n[None, :], du.to(DX.dtype.element_ty),
                 mask=_dmask(offs_m, offs_n, M, N))
    rstd = tl.load(RSTD + offs_m, mask=offs_m < M, other=0.0)
    m1 = c1 / N
    m2 = c2 / N
    # pass 2: reload du, dx = rstd * (du g - mean(du g) - xhat mean(du g xhat)) (+ dres)
    for n in range(0, tl.cdiv(N, BLOCK_N)):
        offs_n = n * BLOCK_N + tl.arange(0, BLOCK_N)
        du = tl.load(DX + offs_m[:, None] * stride_dxm + offs_n[None, :],
                     mask=_dmask(offs_m, offs_n, M, N), other=0.0).to(tl.float32)
        xhat = _xhat(X, RSTD, MEAN, offs_m, offs_n, M, stride_xm, N, IS_LN)
        g = _vec(G, offs_n, N, HAS_G, 1.0)
        dx = du * g[None, :] - xhat * m2[:, None]
        if IS_LN:
            dx = dx - m1[:, None]
        dx = dx * rstd[:, None]
        if HAS_DRES:
            dx += tl.load(DRES + offs_m[:, None] * stride_drm + offs_n[None, :],
                          mask=_dmask(offs_m, offs_n, M, N), other=0.0).to(tl.float32)
        tl.store(DX + offs_m[:, None] * stride_dxm + offs_n[None, :], dx.to(DX.dtype.element_ty),
                 mask=_dmask(offs_m, offs_n, M, N))


@triton.jit
def dw_norm_naive(DY, X, RSTD, MEAN, G, B, DW, M, NO, M_PER, stride_dym, stride_xm,
                  K: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  BLOCK_M: tl.constexpr, IS_LN: tl.constexpr, HAS_G: tl.constexpr = True,
                  HAS_B: tl.constexpr = False):
    """DW[s] = DY[rows of split s]^T @ (xhat * g + beta)[rows of split s], fp32, DW [SPLIT, NO, K];
    grid (cdiv(NO, BN), cdiv(K, BK), SPLIT), split s = rows [s * M_PER, (s + 1) * M_PER)."""
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    m0 = tl.program_id(2) * M_PER
    m_end = tl.minimum(m0 + M_PER, M)
    g = _vec(G, offs_k, K, HAS_G, 1.0)
    beta = _vec(B, offs_k, K, HAS_B, 0.0)
    acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    for m in range(m0, m_end, BLOCK_M):
        offs_m = m + tl.arange(0, BLOCK_M)
        dyt = tl.load(DY + offs_m[None, :] * stride_dym + offs_n[:, None],
                      mask=(offs_m[None, :] < m_end) & (offs_n[:, None] < NO), other=0.0)
        # the prologue: the row scale (and shift) on the reduction side, applied to the tile
        xn = _xhat(X, RSTD, MEAN, offs_m, offs_k, M, stride_xm, K, IS_LN) * g[None, :] + beta[None, :]
        acc = tl.dot(dyt, xn.to(DY.dtype.element_ty), acc)
    tl.store(DW + tl.program_id(2) * NO * K + offs_n[:, None] * K + offs_k[None, :], acc,
             mask=(offs_n[:, None] < NO) & (offs_k[None, :] < K))


@triton.jit
def rowdot_sums(DY, Y, BP, WG, S1, S2, X, RSTD, MEAN, XH, M, R, stride_dym, stride_ym,
                stride_xm, stride_xhm, N: tl.constexpr, IS_LN: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
                HAS_XH: tl.constexpr = True):
    """Per row of dY [M, R]: S1 = sum_j dY_j (y_j - BP_j) and (LayerNorm) S2 = sum_j dY_j WG_j,
    fp32: the norm backward's two row sums through the identity in the module docstring; and
    (HAS_XH) xhat = (x - mean) rstd in XH's dtype, for the dW GEMM dY^T xhat. Memory-bound:
    dY, y and x read once."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    mmask = offs_m < M
    offs_r = tl.arange(0, BLOCK_R)
    s1 = tl.zeros([BLOCK_M], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_M], dtype=tl.float32)
    for r in range(0, tl.cdiv(R, BLOCK_R)):
        rr = r * BLOCK_R + offs_r
        msk = mmask[:, None] & (rr[None, :] < R)
        a = tl.load(DY + offs_m[:, None] * stride_dym + rr[None, :], mask=msk,
                    other=0.0).to(tl.float32)
        y = tl.load(Y + offs_m[:, None] * stride_ym + rr[None, :], mask=msk,
                    other=0.0).to(tl.float32)
        bp = tl.load(BP + rr, mask=rr < R, other=0.0)
        s1 += tl.sum(a * (y - bp[None, :]), axis=1)
        if IS_LN:
            wg = tl.load(WG + rr, mask=rr < R, other=0.0)
            s2 += tl.sum(a * wg[None, :], axis=1)
    tl.store(S1 + offs_m, s1, mask=mmask)
    if IS_LN:
        tl.store(S2 + offs_m, s2, mask=mmask)
    if HAS_XH:
        for n in range(0, tl.cdiv(N, BLOCK_N)):
            offs_n = n * BLOCK_N + tl.arange(0, BLOCK_N)
            xh = _xhat(X, RSTD, MEAN, offs_m, offs_n, M, stride_xm, N, IS_LN)
            tl.store(XH + offs_m[:, None] * stride_xhm + offs_n[None, :],
                     xh.to(XH.dtype.element_ty), mask=_dmask(offs_m, offs_n, M, N))


@triton.jit
def _rowdot_sides(du, xhat, g, B, DGP, DBP, XN, pid_m, offs_m, offs_n, msk, stride_xnm,
                  N: tl.constexpr, IS_LN: tl.constexpr, HAS_B: tl.constexpr,
                  HAS_DG: tl.constexpr, HAS_XN: tl.constexpr):
    """The rowdot dX kernel's side outputs, in either epilogue form: n = xhat g + beta for the dW
    GEMM (HAS_XN), and the per (row block, column) partials of dg and dbeta (HAS_DG)."""
    if HAS_XN:
        xn = xhat * g[None, :]
        if HAS_B:
            xn += _vec(B, offs_n, N, HAS_B, 0.0)[None, :]
        tl.store(XN + offs_m[:, None] * stride_xnm + offs_n[None, :], xn.to(XN.dtype.element_ty),
                 mask=msk)
    if HAS_DG:
        tl.store(DGP + pid_m * N + offs_n, tl.sum(du * xhat, axis=0), mask=offs_n < N)
        if IS_LN:
            tl.store(DBP + pid_m * N + offs_n, tl.sum(du, axis=0), mask=offs_n < N)


@triton.jit
def _rowdot_coefs(DY, W, S1, S2, X, RSTD, MEAN, G, B, DX, DGP, DBP, XN, M, R, stride_dym,
                  stride_wr, stride_xm, stride_dxm, stride_xnm, pid_m, offs_m, offs_n,
                  N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_R: tl.constexpr, IS_LN: tl.constexpr, HAS_G: tl.constexpr,
                  HAS_B: tl.constexpr, HAS_DG: tl.constexpr, EVEN_R: tl.constexpr,
                  HAS_XN: tl.constexpr):
    """`norm_backward_rowdot_naive`'s epilogue (ROW_COEFS) as per-row coefficients: with xc = x -
    mean (x for RMSNorm) and du' = du g,

        dx = (du' - xc rstd s1 / N - s2 / N) rstd = du' a + xc b + c,
        a = rstd, b = -rstd^2 s1 / N, c = -rstd s2 / N (LayerNorm; 0 for RMSNorm),

    two FMAs per element where the terms take six operations (the row vectors' products once per
    row). xc stays a difference, so |mean| >> std loses nothing. du is zeroed outside the
    problem only where a column sum reads it (HAS_DG; the GEMM's wrapped rows and columns): dx
    and n are stored under the mask, and x is loaded as 0 there."""
    du = _du_tile(DY, W, offs_m, offs_n, M, R, stride_dym, stride_wr, N, BLOCK_M, BLOCK_N,
                  BLOCK_R, True, EVEN_R, ZERO_OUT=HAS_DG)
    msk = _dmask(offs_m, offs_n, M, N)
    rmask = offs_m < M
    x = tl.load(X + offs_m[:, None] * stride_xm + offs_n[None, :], mask=msk,
                other=0.0).to(tl.float32)
    rstd = tl.load(RSTD + offs_m, mask=rmask, other=0.0)
    s1 = tl.load(S1 + offs_m, mask=rmask, other=0.0)
    if IS_LN:
        x = x - tl.load(MEAN + offs_m, mask=rmask, other=0.0)[:, None]
    g = _vec(G, offs_n, N, HAS_G, 1.0)
    if HAS_XN or HAS_DG:
        xhat = x * rstd[:, None]
        _rowdot_sides(du, xhat, g, B, DGP, DBP, XN, pid_m, offs_m, offs_n, msk, stride_xnm, N,
                      IS_LN, HAS_B, HAS_DG, HAS_XN)
    if HAS_G:
        du = du * g[None, :]
    b = -(rstd * rstd) * (s1 / N)
    if IS_LN:
        c = -rstd * (tl.load(S2 + offs_m, mask=rmask, other=0.0) / N)
        dx = tl.fma(x, b[:, None], tl.fma(du, rstd[:, None], c[:, None]))
    else:
        dx = tl.fma(x, b[:, None], du * rstd[:, None])
    tl.store(DX + offs_m[:, None] * stride_dxm + offs_n[None, :], dx.to(DX.dtype.element_ty),
             mask=msk)


@triton.jit
def norm_backward_rowdot_naive(DY, W, S1, S2, X, RSTD, MEAN, G, B, DX, DGP, DBP, XN, M, R,
                               stride_dym, stride_wr, stride_xm, stride_dxm, stride_xnm,
                               N: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               BLOCK_R: tl.constexpr, IS_LN: tl.constexpr,
                               HAS_G: tl.constexpr = True, HAS_B: tl.constexpr = False,
                               HAS_DG: tl.constexpr = True, EVEN_R: tl.constexpr = False,
                               HAS_XN: tl.constexpr = False, ROW_COEFS: tl.constexpr = True):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if ROW_COEFS:
        return _rowdot_coefs(DY, W, S1, S2, X, RSTD, MEAN, G, B, DX, DGP, DBP, XN, M, R,
                             stride_dym, stride_wr, stride_xm, stride_dxm, stride_xnm, pid_m,
                             offs_m, offs_n, N, BLOCK_M, BLOCK_N, BLOCK_R, IS_LN, HAS_G, HAS_B,
                             HAS_DG, EVEN_R, HAS_XN)
    du = _du_tile(DY, W, offs_m, offs_n, M, R, stride_dym, stride_wr, N, BLOCK_M, BLOCK_N,
                  BLOCK_R, True, EVEN_R)
    msk = _dmask(offs_m, offs_n, M, N)
    xhat = _xhat(X, RSTD, MEAN, offs_m, offs_n, M, stride_xm, N, IS_LN)
    g = _vec(G, offs_n, N, HAS_G, 1.0)
    _rowdot_sides(du, xhat, g, B, DGP, DBP, XN, pid_m, offs_m, offs_n, msk, stride_xnm, N, IS_LN,
                  HAS_B, HAS_DG, HAS_XN)
    rmask = offs_m < M
    rstd = tl.load(RSTD + offs_m, mask=rmask, other=0.0)
    s1 = tl.load(S1 + offs_m, mask=rmask, other=0.0)
    if HAS_G:
        dx = du * g[None, :] - xhat * (s1 / N)[:, None]
    else:  # (g folded into W by the caller, or none: du is zero past N, masked on the store)
        dx = du - xhat * (s1 / N)[:, None]
    if IS_LN:
        s2 = tl.load(S2 + offs_m, mask=rmask, other=0.0)
        dx = dx - (s2 / N)[:, None]
    dx = dx * rstd[:, None]
    tl.store(DX + offs_m[:, None] * stride_dxm + offs_n[None, :], dx.to(DX.dtype.element_ty),
             mask=msk)
