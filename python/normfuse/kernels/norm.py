"""The standalone norm, forward and backward, written the obvious way (no GEMM; no normfuse pass
applies to them: they are launched with `passes=()`).

Notation: a row x of length N; RMSNorm: xhat = x * rstd, rstd = 1 / sqrt(mean(x^2) + eps);
LayerNorm: xhat = (x - mean) * rstd, rstd = 1 / sqrt(mean((x - mean)^2) + eps) (biased
variance, from the centred row held in registers: |mean| >> std loses nothing). The scale is
s = offset + g (Gemma's 1 + w: offset = 1), computed in fp32; y = xhat * s [+ beta].

`norm_fwd` — ROWS whole rows per program ([ROWS, BLOCK_N] tile, BLOCK_N >= N, fp32 math), y
stored in Y's dtype, rstd (and mean) stored fp32 for the backward.

`norm_bwd` — persistent: program p of P walks the row blocks p, p + P, p + 2P, ... For a row,
with dyw = dy * s:

    dx = rstd * (dyw - xhat * mean_N(dyw * xhat) - mean_N(dyw))   (RMSNorm: without mean_N(dyw))

(the derivative of xhat * s through rstd, and through mean for LayerNorm). The column sums
dg = sum_rows dy * xhat and dbeta = sum_rows dy are accumulated in registers over every row
the program visits ([ROWS, BLOCK_N] fp32, reduced over ROWS once at the end) and written once:
DGP / DBP [P, N] fp32, which the caller sums over P (a few hundred rows: a tiny second step).
The older no-GEMM backward (backward.py, HAS_GEMM=False) writes one partial row per row block
of 8 rows: [M / 8, N] fp32, as much traffic as dx itself at bf16 (docs/NOTES.md).

Row offsets are int64 (M * N may pass 2^31 elements).
"""
import triton
import triton.language as tl


@triton.jit
def norm_fwd(X, G, B, Y, RSTD, MEAN, M, stride_xm, stride_ym, eps, offset, N: tl.constexpr,
             BLOCK_N: tl.constexpr, ROWS: tl.constexpr, IS_LN: tl.constexpr, HAS_G: tl.constexpr,
             HAS_B: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    rmask = rows < M
    cmask = cols < N
    msk = rmask[:, None] & cmask[None, :]
    r64 = rows.to(tl.int64)
    x = tl.load(X + r64[:, None] * stride_xm + cols[None, :], mask=msk, other=0.0).to(tl.float32)
    if IS_LN:
        mean = tl.sum(x, axis=1) / N
        x = tl.where(msk, x - mean[:, None], 0.0)
        tl.store(MEAN + rows, mean, mask=rmask)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
    tl.store(RSTD + rows, rstd, mask=rmask)
    y = x * rstd[:, None]
    if HAS_G:
        s = tl.load(G + cols, mask=cmask, other=0.0).to(tl.float32) + offset
        y = y * s[None, :]
    if HAS_B:
        y = y + tl.load(B + cols, mask=cmask, other=0.0).to(tl.float32)[None, :]
    tl.store(Y + r64[:, None] * stride_ym + cols[None, :], y.to(Y.dtype.element_ty), mask=msk)


@triton.jit
def norm_bwd(DY, X, RSTD, MEAN, G, DX, DGP, DBP, XN, BETA, M, stride_dym, stride_xm, stride_dxm,
             stride_xnm, offset, eps, N: tl.constexpr, BLOCK_N: tl.constexpr, ROWS: tl.constexpr,
             IS_LN: tl.constexpr, HAS_G: tl.constexpr, HAS_DG: tl.constexpr, HAS_DB: tl.constexpr,
             STAGES: tl.constexpr = 1, ACC_GLOBAL: tl.constexpr = False,
             HAS_XN: tl.constexpr = False, HAS_BETA: tl.constexpr = False,
             STATS: tl.constexpr = False, ACT: tl.constexpr = 0):
    """STAGES > 1: the loop's loads of dy, x and the statistics pipelined (cp.async into shared
    memory, STAGES - 1 row blocks ahead). ACC_GLOBAL (rows too long for the partials and the
    scale to stay in registers): the scale is reloaded per row block and each partial is
    accumulated in its program's own row of DGP / DBP (zeroed by the caller; read and written
    by that program only, so from L2), with STAGES = 1 (a pipelined load would not see the
    previous iteration's store). HAS_XN: also store the norm's output n = xhat (offset + g)
    [+ BETA] (HAS_BETA) into XN (row stride stride_xnm, XN's dtype): the pre-norm op's
    backward takes it for dW = dY^T n where x is at hand anyway (XN, BETA: any pointer when
    their flags are off). STATS: the row's statistics computed here from the x row in registers,
    as `norm_fwd` computes them (with `eps`; RSTD, MEAN unread: any pointer) instead of loaded:
    a caller that did not keep them (the pre-norm op's training forward) reads nothing more.
    ACT = 1: dy is the gradient of SiLU(n), n = xhat (offset + g) [+ BETA] (HAS_BETA): it is
    multiplied by SiLU'(n) first (the activation between a post-norm and the next linear, as
    in `PostNormMLP`), and dg, dbeta and dx follow from that product."""
    pid = tl.program_id(0)
    P = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    cmask = cols < N
    if HAS_G and not ACC_GLOBAL:
        s = tl.load(G + cols, mask=cmask, other=0.0).to(tl.float32) + offset
    if not ACC_GLOBAL:
        dg = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        db = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
    for blk in tl.range(pid, tl.cdiv(M, ROWS), P, num_stages=STAGES):
        rows = blk * ROWS + tl.arange(0, ROWS)
        rmask = rows < M
        msk = rmask[:, None] & cmask[None, :]
        r64 = rows.to(tl.int64)
        dy = tl.load(DY + r64[:, None] * stride_dym + cols[None, :], mask=msk,
                     other=0.0).to(tl.float32)
        x = tl.load(X + r64[:, None] * stride_xm + cols[None, :], mask=msk,
                    other=0.0).to(tl.float32)
        if STATS:
            if IS_LN:
                xc = tl.where(msk, x - (tl.sum(x, axis=1) / N)[:, None], 0.0)
                rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=1) / N + eps)
                xhat = xc * rstd[:, None]
            else:
                rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
                xhat = x * rstd[:, None]
        else:
            rstd = tl.load(RSTD + rows, mask=rmask, other=0.0)
            if IS_LN:
                mean = tl.load(MEAN + rows, mask=rmask, other=0.0)
                xhat = tl.where(msk, (x - mean[:, None]) * rstd[:, None], 0.0)
            else:
                xhat = x * rstd[:, None]
        if HAS_G and ACC_GLOBAL:
            s = tl.load(G + cols, mask=cmask, other=0.0).to(tl.float32) + offset
        if ACT == 1:  # SiLU'(n) at the norm's output n
            n = xhat * s[None, :] if HAS_G else xhat
            if HAS_BETA:
                n += tl.load(BETA + cols, mask=cmask, other=0.0).to(tl.float32)[None, :]
            sg = 1.0 / (1.0 + tl.exp(-n))
            dy = dy * (sg * (1.0 + n * (1.0 - sg)))
        if HAS_G:
            dyw = dy * s[None, :]
        else:
            dyw = dy
        dx = dyw - xhat * (tl.sum(dyw * xhat, axis=1) / N)[:, None]
        if IS_LN:
            dx = dx - (tl.sum(dyw, axis=1) / N)[:, None]
        dx = dx * rstd[:, None]
        tl.store(DX + r64[:, None] * stride_dxm + cols[None, :], dx.to(DX.dtype.element_ty),
                 mask=msk)
        if HAS_XN:
            xn = xhat
            if HAS_G:
                xn = xhat * s[None, :]
            if HAS_BETA:
                xn += tl.load(BETA + cols, mask=cmask, other=0.0).to(tl.float32)[None, :]
            tl.store(XN + r64[:, None] * stride_xnm + cols[None, :], xn.to(XN.dtype.element_ty),
                     mask=msk)
        if ACC_GLOBAL:
            if HAS_DG:
                pg = DGP + pid * N + cols
                tl.store(pg, tl.load(pg, mask=cmask, other=0.0) + tl.sum(dy * xhat, axis=0),
                         mask=cmask)
            if HAS_DB:
                pb = DBP + pid * N + cols
                tl.store(pb, tl.load(pb, mask=cmask, other=0.0) + tl.sum(dy, axis=0), mask=cmask)
        else:
            if HAS_DG:
                dg += dy * xhat
            if HAS_DB:
                db += dy
    if not ACC_GLOBAL:
        if HAS_DG:
            tl.store(DGP + pid * N + cols, tl.sum(dg, axis=0), mask=cmask)
        if HAS_DB:
            tl.store(DBP + pid * N + cols, tl.sum(db, axis=0), mask=cmask)


@triton.jit
def norm_bwd_finish(DGP, DBP, DG, DB, P, N: tl.constexpr, BLOCK_P: tl.constexpr,
                    BLOCK_N: tl.constexpr, HAS_DG: tl.constexpr, HAS_DB: tl.constexpr):
    """The persistent backward's last step: dg = sum_p DGP[p, :] and dbeta = sum_p DBP[p, :]
    ([P, N] fp32 partials, one row per program of `norm_bwd`), summed in fp32 in a fixed order
    (BLOCK_P rows at a time, then across the steps: repeatable bitwise) and stored once in DG's /
    DB's dtype (the parameters' dtype where the caller asks for it). Each program BLOCK_N
    columns. One launch where the backward took a sum per partial and a cast per gradient."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    accg = tl.zeros([BLOCK_N], dtype=tl.float32)
    accb = tl.zeros([BLOCK_N], dtype=tl.float32)
    for p0 in tl.range(0, P, BLOCK_P):
        prow = p0 + tl.arange(0, BLOCK_P)
        msk = (prow < P)[:, None] & cmask[None, :]
        offs = prow.to(tl.int64)[:, None] * N + cols[None, :]
        if HAS_DG:
            accg += tl.sum(tl.load(DGP + offs, mask=msk, other=0.0), axis=0)
        if HAS_DB:
            accb += tl.sum(tl.load(DBP + offs, mask=msk, other=0.0), axis=0)
    if HAS_DG:
        tl.store(DG + cols, accg.to(DG.dtype.element_ty), mask=cmask)
    if HAS_DB:
        tl.store(DB + cols, accb.to(DB.dtype.element_ty), mask=cmask)


@triton.jit
def scale_columns(W, G, OUT, R, stride_w, stride_o, offset, K: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr):
    """OUT = W diag(offset + G) for W [R, K] (unit stride along K): the pre-norm ops' fold of
    the norm's scale into the GEMM weight (`prenorm_linear.fold_now`), made per training step.
    fp32 math, one rounding to OUT's dtype: (offset + g) in fp32, times w in fp32, as
    `reference.fold_norm_weight` computes it (bit for bit). Grid (cdiv(R, BLOCK_R),
    cdiv(K, BLOCK_K)): 2-D tiles with unit-stride rows, which torch's broadcast multiply does
    not vectorize (measured 0.016-0.058 ms for 13-46 MB on the H200, ~1.5 TB/s)."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    cmask = cols < K
    msk = (rows < R)[:, None] & cmask[None, :]
    r64 = rows.to(tl.int64)
    s = tl.load(G + cols, mask=cmask, other=0.0).to(tl.float32) + offset
    w = tl.load(W + r64[:, None] * stride_w + cols[None, :], mask=msk, other=0.0).to(tl.float32)
    tl.store(OUT + r64[:, None] * stride_o + cols[None, :], (w * s[None, :]).to(OUT.dtype.element_ty),
             mask=msk)


@triton.jit
def scale_columns_dot(W, G, BETA, BIAS, OUT, WB, CS, R, stride_w, stride_o, offset,
                      K: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
                      HAS_G: tl.constexpr, HAS_BIAS: tl.constexpr):
    """LayerNorm's fold in one pass over W [R, K] (unit stride along K): OUT = W diag(offset + G)
    as `scale_columns` computes it (bit for bit; HAS_G), WB = W BETA [+ BIAS] in fp32 (the
    epilogue's bias: the shift beta through the unfolded W, plus the Linear's bias), and CS =
    the row sums of OUT as rounded (of W without G) in fp32: the lazy LayerNorm's column sum of
    the weight, which its launch would otherwise read the weight again for. Each program
    BLOCK_R whole rows, K walked in BLOCK_K steps (a fixed order: repeatable bitwise). One launch
    where the per-step fold took the scale kernel, two fp32 copies, a matrix-vector product, an
    add, and the launch's copy and sum of the folded weight."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < R
    r64 = rows.to(tl.int64)
    acc = tl.zeros([BLOCK_R], dtype=tl.float32)
    csum = tl.zeros([BLOCK_R], dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        cmask = cols < K
        msk = rmask[:, None] & cmask[None, :]
        w = tl.load(W + r64[:, None] * stride_w + cols[None, :], mask=msk, other=0.0).to(tl.float32)
        if HAS_G:
            s = tl.load(G + cols, mask=cmask, other=0.0).to(tl.float32) + offset
            folded = (w * s[None, :]).to(OUT.dtype.element_ty)
            tl.store(OUT + r64[:, None] * stride_o + cols[None, :], folded, mask=msk)
            csum += tl.sum(folded.to(tl.float32), axis=1)
        else:
            csum += tl.sum(w, axis=1)
        beta = tl.load(BETA + cols, mask=cmask, other=0.0).to(tl.float32)
        acc += tl.sum(w * beta[None, :], axis=1)
    if HAS_BIAS:
        acc += tl.load(BIAS + rows, mask=rmask, other=0.0).to(tl.float32)
    tl.store(WB + rows, acc, mask=rmask)
    tl.store(CS + rows, csum, mask=rmask)
