"""Naive FlashNormAttention backward kernels (issue 12), the input of `cluster-reduce-chain`.

The forward (`normfuse.reference_attention`, per token row t, N = H*D)::

    xhat = (x - mean) * rstd               ln_q = xhat * a + c         (LayerNorm, affine a, c)
    g_h  = attend_h(ln_q_h, K_h, V_h)      z = g + ln_q                (inner residual)
    y    = z * rrms * w                    out = y + x                 (RMSNorm weight w; outer residual)

Backward, from dout (every sum over the N = H*D features of the row: a sum over heads)::

    dx    = dout                                               (outer residual)
          + LN_bwd(dlnq)
    c     = sum_N(dout * w * z)                                RMS statistic, cross-head
    dz    = rrms * (dout * w - z * rrms^2 * c / N)             = rrms*(dout*w - zhat*mean_N(dout*w*zhat))
    dw    = sum_T(dout * z * rrms)                             (rms_weight)
    attention backward per head, dg = dz:
      GDPA     S = q K^T, P = act(S) * s:   dV = P^T dz, dP = dz V^T, dS = act'(S) * dP * s
      softmax  P = exp(S*s - lse):          dV = P^T dz, dP = dz V^T, dS = P * (dP - delta) * s,
               delta = sum_D(dz_h * g_h) (= rowsum(P * dP)), lse recomputed (not saved by the forward)
      dK = dS^T q,  dlnq = dS K + dz                           (+ dz: the inner residual)
    c1    = sum_N(dlnq * a),  c2 = sum_N(dlnq * a * xhat)      LN statistics, cross-head, one exchange
    dx   += rstd * (dlnq * a - (c1 + xhat * c2) / N)
    da    = sum_T(dlnq * xhat),  dc = sum_T(dlnq)              (ln_weight, ln_bias)

What is recomputed: xhat (hence ln_q) from x and the saved mean/rstd, and z = g + ln_q by redoing
the forward's P V for the row block (softmax: and its log-sum-exp, one more q K^T pass). The
forward's `out` is not used: z = (out - x) / (rrms * w) loses the bits of y under x's magnitude
when |mean(x)| >> std (out is bf16 and carries x) and divides by w (zero weights); the recompute
costs one extra [BLOCK_M, L] x [L, D] product per head (two with softmax's log-sum-exp). The
training forward can save g itself, in x's dtype, and softmax's lse
(`kernels/attention.py:flash_norm_attention_save_naive`): `fna_bwd_rows_saved_naive` then reads
them in loop 1 (z = ln_q + g) and runs no attention there (the rows kernel's products per head
5 -> 3 for GDPA, 6 -> 3 for softmax). g rather than z: softmax's delta = sum_D(dz * (z - ln_q))
would otherwise take a bf16 z's rounding, relative to |ln_q|, into g = z - ln_q, which shrinks as
L grows (simulated at L = 4096: dq 40x further from fp64 than with g saved).

Two kernels, both deterministic (no atomics):

`fna_bwd_rows_naive`: one program per row block (BLOCK_M rows of one sequence, from the block
table ROWS: (batch, first row, end row) per program; a dead entry, first row = end, masks every
row and runs no key loop). Three loops over the H heads, written the obvious way, cross-head
sums accumulated in one loop and used in the next, per-head tiles stored and reloaded through
fp32 scratch::

    loop 1 over h: recompute ln_q_h, z_h = P V + ln_q_h; store z_h; c += sum_D(dout*w*z)
    loop 2 over h: reload z_h; dz_h; store dz_h (x's dtype, for the dK/dV kernel); dlnq_h = dS K + dz_h;
                   store dlnq_h; c1 += sum_D(dlnq*a); c2 += sum_D(dlnq*a*xhat)
    loop 3 over h: reload dlnq_h; dx_h; store dx_h

`cluster-reduce-chain` deals the heads of a row block to the H CTAs of a cluster (one head each)
and exchanges c, then (c1, c2), through distributed shared memory; `epilogue-norm`-style
forwarding is then possible because the reloads read what the same CTA just stored.

`fna_bwd_kv_naive`: one program per (batch, kv head, BLOCK_L keys): loops over the query heads of
the group and the row blocks of the batch, recomputes ln_q and S, reads dz (and lse, delta for
softmax) from the rows kernel, accumulates dK and dV in registers.

Layout: X, DOUT, DX [T, H, D]; K, V, DK, DV [B, L, HKV, D] contiguous; MEAN, RSTD, RRMS [T] f32;
Z, DLNQ [T, H, D] f32 scratch (Z unused by `fna_bwd_rows_saved_naive`, which takes z = ln_q + g
from the saved g in both loops); DZ [T, H, D] in x's dtype (the dK/dV kernel's operand type:
rounded where it is stored, as that kernel rounded it before); STAT [T, H, 2] f32 (lse, delta;
softmax only);
DW_PART [programs, 3, H*D] f32 (per-program column sums of the weight grads: rms_weight,
ln_weight, ln_bias), summed over programs by the host. ACT: 0 gelu_tanh, 1 silu, 2 relu, 3 relu2,
4 softmax (`ACT_CODES`).
"""
import triton
import triton.language as tl

from .attention import fast_div, gelu_exp_m2u

ACT_CODES = {"gelu_tanh": 0, "silu": 1, "relu": 2, "relu2": 3, "softmax": 4}


@triton.jit
def _gelu_h(s):
    """h = sigmoid(2u) = (1 + tanh(u)) / 2 with u = sqrt(2 / pi) (s + 0.044715 s^3): the tanh
    GELU is s h and its derivative h (1 + 2 sqrt(2 / pi) s (1 - h) (1 + 3 * 0.044715 s^2))
    (1 - tanh(u)^2 = 4 h (1 - h)), exp(-2u) as session 33's forward computed it. Not by
    tanh.approx as the forward now does: h from 1 + tanh(u) carries tanh's error as an absolute
    one (its relative error bound times |tanh|), which the derivative multiplies by ~0.1 |s|^3 on
    the negative side (s = -20: 0.01 where the derivative is 0; a backward with keys 12x the
    tests' gave dx 7x eager's error), where 1 / (1 + exp(-2u)) keeps a relative error."""
    return fast_div(1.0, 1.0 + gelu_exp_m2u(s))


@triton.jit
def _act(s, ACT: tl.constexpr):
    if ACT == 0:
        return s * _gelu_h(s)
    elif ACT == 1:
        return s * tl.sigmoid(s)
    elif ACT == 2:
        return tl.maximum(s, 0.0)
    else:
        r = tl.maximum(s, 0.0)
        return r * r


@triton.jit
def _act_grad(s, ACT: tl.constexpr):
    if ACT == 0:
        h = _gelu_h(s)
        return h * (1.0 + (2.0 * 0.7978845608028654) * s * (1.0 - h) * (1.0 + 0.134145 * s * s))
    elif ACT == 1:
        sg = tl.sigmoid(s)
        return sg * (1.0 + s * (1.0 - sg))
    elif ACT == 2:
        return tl.where(s > 0.0, 1.0, 0.0)
    else:
        return 2.0 * tl.maximum(s, 0.0)


@triton.jit
def _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H: tl.constexpr, D: tl.constexpr,
             HAS_LNW: tl.constexpr, HAS_LNB: tl.constexpr):
    """xhat and ln_q of head h for the rows (f32 [BLOCK_M, D]), and the LN weight (f32 [D])."""
    offs_d = tl.arange(0, D)
    x = tl.load(X + (rows[:, None] * H + h) * D + offs_d[None, :], mask=rmask[:, None],
                other=0.0).to(tl.float32)
    xhat = (x - mean[:, None]) * rstd[:, None]
    lnq = xhat
    a = tl.full([D], 1.0, tl.float32)
    if HAS_LNW:
        a = tl.load(LNW + h * D + offs_d).to(tl.float32)
        lnq = lnq * a[None, :]
    if HAS_LNB:
        lnq = lnq + tl.load(LNB + h * D + offs_d).to(tl.float32)[None, :]
    return xhat, lnq, a


@triton.jit
def _kv_tile(KV, b, kvh, l0, L, stride_b, stride_l, D: tl.constexpr, BLOCK_L: tl.constexpr):
    """Keys or values l0 .. l0 + BLOCK_L of (batch b, kv head kvh): [BLOCK_L, D], zero past L."""
    offs_l = l0 + tl.arange(0, BLOCK_L)
    offs_d = tl.arange(0, D)
    return tl.load(KV + b * stride_b + offs_l[:, None] * stride_l + kvh * D + offs_d[None, :],
                   mask=(offs_l < L)[:, None], other=0.0)


@triton.jit
def _lse(q, K, b, kvh, L, stride_b, stride_l, qk_scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
         BLOCK_L: tl.constexpr):
    """log-sum-exp over the keys of softmax(S * qk_scale), per row (online max and sum)."""
    m = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_sum = tl.zeros([BLOCK_M], tl.float32)
    for l0 in range(0, L, BLOCK_L):
        k = _kv_tile(K, b, kvh, l0, L, stride_b, stride_l, D, BLOCK_L)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where((l0 + tl.arange(0, BLOCK_L) < L)[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        l_sum = l_sum * tl.exp(m - m_new) + tl.sum(tl.exp(s - m_new[:, None]), 1)
        m = m_new
    return m + tl.log(l_sum)


@triton.jit
def _probs(s, lse, l0, L, qk_scale, ACT: tl.constexpr, BLOCK_L: tl.constexpr):
    """P for a tile of scores S (f32): act(S) * qk_scale, or exp(S * qk_scale - lse); 0 past L."""
    lmask = (l0 + tl.arange(0, BLOCK_L) < L)[None, :]
    if ACT == 4:
        # exp(x) = exp2(x log2 e), the scale and log2 e in one multiply-add (tl.exp is ex2 after
        # a multiply anyway)
        p = tl.exp2(tl.fma(s, qk_scale * 1.4426950408889634, -(lse * 1.4426950408889634)[:, None]))
    else:
        p = _act(s, ACT) * qk_scale
    return tl.where(lmask, p, 0.0)


@triton.jit
def _dscores(s, p, dp, delta, qk_scale, ACT: tl.constexpr):
    """dL/dS from dP = dz V^T."""
    if ACT == 4:
        return p * tl.fma(dp, qk_scale, -(delta * qk_scale)[:, None])
    else:
        return _act_grad(s, ACT) * dp * qk_scale


@triton.jit
def fna_bwd_rows_naive(X, DOUT, K, V, MEAN, RSTD, RRMS, LNW, LNB, RMSW, ROWS, Z, DZ, DLNQ, STAT,
                       DX, DW_PART, L, stride_kb, stride_kl, qk_scale,
                       H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, ACT: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_L: tl.constexpr, HAS_LNW: tl.constexpr = False,
                       HAS_LNB: tl.constexpr = False, HAS_RMSW: tl.constexpr = False):
    _rows_body(X, DOUT, K, V, MEAN, RSTD, RRMS, LNW, LNB, RMSW, ROWS, Z, STAT, Z, DZ, DLNQ, STAT,
               DX, DW_PART, L, stride_kb, stride_kl, qk_scale, H, HKV, D, ACT, BLOCK_M, BLOCK_L,
               HAS_LNW, HAS_LNB, HAS_RMSW, False)


@triton.jit
def fna_bwd_rows_saved_naive(X, DOUT, K, V, MEAN, RSTD, RRMS, LNW, LNB, RMSW, ROWS, GS, LSE, Z,
                             DZ, DLNQ, STAT, DX, DW_PART, L, stride_kb, stride_kl, qk_scale,
                             H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                             ACT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_L: tl.constexpr,
                             HAS_LNW: tl.constexpr = False, HAS_LNB: tl.constexpr = False,
                             HAS_RMSW: tl.constexpr = False):
    """`fna_bwd_rows_naive` with the forward's saved attention output g (GS [T, H, D] in x's
    dtype) and, for softmax, log-sum-exp (LSE [T, H] f32): loops 1 and 2 take z = ln_q + g
    instead of recomputing the attention (no q K^T, P V or log-sum-exp pass over the keys) and
    of storing and reloading z (Z is not accessed)."""
    _rows_body(X, DOUT, K, V, MEAN, RSTD, RRMS, LNW, LNB, RMSW, ROWS, GS, LSE, Z, DZ, DLNQ, STAT,
               DX, DW_PART, L, stride_kb, stride_kl, qk_scale, H, HKV, D, ACT, BLOCK_M, BLOCK_L,
               HAS_LNW, HAS_LNB, HAS_RMSW, True)


@triton.jit
def _rows_body(X, DOUT, K, V, MEAN, RSTD, RRMS, LNW, LNB, RMSW, ROWS, GS, LSE, Z, DZ, DLNQ, STAT,
               DX, DW_PART, L, stride_kb, stride_kl, qk_scale, H: tl.constexpr,
               HKV: tl.constexpr, D: tl.constexpr, ACT: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_L: tl.constexpr, HAS_LNW: tl.constexpr, HAS_LNB: tl.constexpr,
               HAS_RMSW: tl.constexpr, SAVED: tl.constexpr):
    pid = tl.program_id(0)
    N: tl.constexpr = H * D
    G: tl.constexpr = H // HKV
    b = tl.load(ROWS + pid * 3)
    start = tl.load(ROWS + pid * 3 + 1)
    end = tl.load(ROWS + pid * 3 + 2)
    # the key loops' bound: none for a dead program (first row = end: past the last row block
    # of an upper-bound grid, every row masked off)
    nkeys = tl.where(start < end, L, 0)
    rows = start + tl.arange(0, BLOCK_M)
    rmask = rows < end
    offs_d = tl.arange(0, D)
    tmask = rmask[:, None]
    mean = tl.load(MEAN + rows, mask=rmask, other=0.0)
    rstd = tl.load(RSTD + rows, mask=rmask, other=0.0)
    rrms = tl.load(RRMS + rows, mask=rmask, other=0.0)

    # loop 1: z = attend(ln_q) + ln_q per head; the RMS backward's statistic sum_N(dout * w * z)
    c = tl.zeros([BLOCK_M], tl.float32)
    for h in range(0, H):
        tile = (rows[:, None] * H + h) * D + offs_d[None, :]
        xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW, HAS_LNB)
        if SAVED:  # the forward's g and lse
            z = lnq + tl.load(GS + tile, mask=tmask, other=0.0).to(tl.float32)
            if ACT == 4:
                tl.store(STAT + (rows * H + h) * 2,
                         tl.load(LSE + rows * H + h, mask=rmask, other=0.0), mask=rmask)
        else:
            kvh = h // G
            q = lnq.to(X.dtype.element_ty)
            lse = tl.zeros([BLOCK_M], tl.float32)
            if ACT == 4:
                lse = _lse(q, K, b, kvh, nkeys, stride_kb, stride_kl, qk_scale, D, BLOCK_M, BLOCK_L)
                tl.store(STAT + (rows * H + h) * 2, lse, mask=rmask)
            z = lnq
            for l0 in range(0, nkeys, BLOCK_L):
                k = _kv_tile(K, b, kvh, l0, L, stride_kb, stride_kl, D, BLOCK_L)
                v = _kv_tile(V, b, kvh, l0, L, stride_kb, stride_kl, D, BLOCK_L)
                p = _probs(tl.dot(q, tl.trans(k)), lse, l0, L, qk_scale, ACT, BLOCK_L)
                z = tl.dot(p.to(v.dtype), v, z)
            tl.store(Z + tile, z, mask=tmask)  # (with g saved, loop 2 takes z from g again)
        do = tl.load(DOUT + tile, mask=tmask, other=0.0).to(tl.float32)
        if HAS_RMSW:
            do = do * tl.load(RMSW + h * D + offs_d).to(tl.float32)[None, :]
        c += tl.sum(do * z, 1)
    cz = c * rrms * rrms * (1.0 / N)

    # loop 2: dz, the attention backward for dlnq, the LN backward's statistics
    c1 = tl.zeros([BLOCK_M], tl.float32)
    c2 = tl.zeros([BLOCK_M], tl.float32)
    for h in range(0, H):
        kvh = h // G
        tile = (rows[:, None] * H + h) * D + offs_d[None, :]
        xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW, HAS_LNB)
        if SAVED:  # z = ln_q + g as loop 1 made it (bitwise), instead of an fp32 round trip
            z = lnq + tl.load(GS + tile, mask=tmask, other=0.0).to(tl.float32)
        else:
            z = tl.load(Z + tile, mask=tmask, other=0.0)
        do = tl.load(DOUT + tile, mask=tmask, other=0.0).to(tl.float32)
        dow = do
        if HAS_RMSW:
            dow = do * tl.load(RMSW + h * D + offs_d).to(tl.float32)[None, :]
            tl.store(DW_PART + pid * 3 * N + h * D + offs_d, tl.sum(do * z * rrms[:, None], 0))
        dz = rrms[:, None] * (dow - z * cz[:, None])
        # for the dK / dV kernel, which multiplies it in x's dtype: stored rounded to DZ's type
        tl.store(DZ + tile, dz.to(DZ.dtype.element_ty), mask=tmask)
        q = lnq.to(X.dtype.element_ty)
        lse = tl.zeros([BLOCK_M], tl.float32)
        delta = tl.zeros([BLOCK_M], tl.float32)
        if ACT == 4:
            lse = tl.load(STAT + (rows * H + h) * 2, mask=rmask, other=0.0)
            delta = tl.sum(dz * (z - lnq), 1)
            tl.store(STAT + (rows * H + h) * 2 + 1, delta, mask=rmask)
        dzq = dz.to(X.dtype.element_ty)
        dlnq = dz
        for l0 in range(0, nkeys, BLOCK_L):
            k = _kv_tile(K, b, kvh, l0, L, stride_kb, stride_kl, D, BLOCK_L)
            v = _kv_tile(V, b, kvh, l0, L, stride_kb, stride_kl, D, BLOCK_L)
            s = tl.dot(q, tl.trans(k))
            p = _probs(s, lse, l0, L, qk_scale, ACT, BLOCK_L)
            dp = tl.dot(dzq, tl.trans(v))
            ds = _dscores(s, p, dp, delta, qk_scale, ACT)
            ds = tl.where((l0 + tl.arange(0, BLOCK_L) < L)[None, :], ds, 0.0)
            dlnq = tl.dot(ds.to(k.dtype), k, dlnq)
        tl.store(DLNQ + tile, dlnq, mask=tmask)
        ga = dlnq * a[None, :]
        c1 += tl.sum(ga, 1)
        c2 += tl.sum(ga * xhat, 1)

    # loop 3: the LayerNorm backward and the outer residual (c1 / N and c2 / N once per row, not
    # a divide per element)
    c1 = c1 * (1.0 / N)
    c2 = c2 * (1.0 / N)
    for h in range(0, H):
        tile = (rows[:, None] * H + h) * D + offs_d[None, :]
        dlnq = tl.load(DLNQ + tile, mask=tmask, other=0.0)
        xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW, HAS_LNB)
        do = tl.load(DOUT + tile, mask=tmask, other=0.0).to(tl.float32)
        dx = rstd[:, None] * (dlnq * a[None, :] - tl.fma(xhat, c2[:, None], c1[:, None])) + do
        tl.store(DX + tile, dx.to(DX.dtype.element_ty), mask=tmask)
        if HAS_LNW:
            tl.store(DW_PART + pid * 3 * N + N + h * D + offs_d, tl.sum(dlnq * xhat, 0))
        if HAS_LNB:
            tl.store(DW_PART + pid * 3 * N + 2 * N + h * D + offs_d, tl.sum(dlnq, 0))


@triton.jit
def _kv_row_step(X, MEAN, RSTD, LNW, LNB, DZ, STAT, start, q1, h, H: tl.constexpr,
                 D: tl.constexpr, ACT: tl.constexpr, BLOCK_M: tl.constexpr,
                 HAS_LNW: tl.constexpr, HAS_LNB: tl.constexpr):
    """A dK / dV program's BLOCK_M-row step of head h (rows start.. below q1): the rows and their
    mask, xhat, the LN weight a, q = ln_q in x's dtype, the head's tile offsets, its dz tile (in
    DZ's dtype) and softmax's (lse, delta) per row (zeros for the other activations)."""
    rows = start + tl.arange(0, BLOCK_M)
    rmask = rows < q1
    mean = tl.load(MEAN + rows, mask=rmask, other=0.0)
    rstd = tl.load(RSTD + rows, mask=rmask, other=0.0)
    xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW, HAS_LNB)
    q = lnq.to(X.dtype.element_ty)
    tile = (rows[:, None] * H + h) * D + tl.arange(0, D)[None, :]
    dz = tl.load(DZ + tile, mask=rmask[:, None], other=0.0)
    lse = tl.zeros([BLOCK_M], tl.float32)
    delta = tl.zeros([BLOCK_M], tl.float32)
    if ACT == 4:
        lse = tl.load(STAT + (rows * H + h) * 2, mask=rmask, other=0.0)
        delta = tl.load(STAT + (rows * H + h) * 2 + 1, mask=rmask, other=0.0)
    return rows, rmask, xhat, a, q, tile, dz, lse, delta


@triton.jit
def fna_bwd_kv_naive(X, K, V, MEAN, RSTD, LNW, LNB, OFFSETS, DZ, STAT, DK, DV, L, stride_kb,
                     stride_kl, qk_scale, H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                     ACT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_L: tl.constexpr,
                     HAS_LNW: tl.constexpr = False, HAS_LNB: tl.constexpr = False):
    pid = tl.program_id(0)
    G: tl.constexpr = H // HKV
    nlb = tl.cdiv(L, BLOCK_L)
    lblk = pid % nlb
    kvh = (pid // nlb) % HKV
    b = pid // (nlb * HKV)
    l0 = lblk * BLOCK_L
    offs_l = l0 + tl.arange(0, BLOCK_L)
    offs_d = tl.arange(0, D)
    lmask = offs_l < L
    k = _kv_tile(K, b, kvh, l0, L, stride_kb, stride_kl, D, BLOCK_L)
    v = _kv_tile(V, b, kvh, l0, L, stride_kb, stride_kl, D, BLOCK_L)
    q0 = tl.load(OFFSETS + b).to(tl.int32)
    q1 = tl.load(OFFSETS + b + 1).to(tl.int32)
    dk = tl.zeros([BLOCK_L, D], tl.float32)
    dv = tl.zeros([BLOCK_L, D], tl.float32)
    for g in range(0, G):
        h = kvh * G + g
        for start in range(q0, q1, BLOCK_M):
            rows, rmask, xhat, a, q, tile, dz, lse, delta = _kv_row_step(
                X, MEAN, RSTD, LNW, LNB, DZ, STAT, start, q1, h, H, D, ACT, BLOCK_M, HAS_LNW,
                HAS_LNB)
            dzq = dz.to(X.dtype.element_ty)
            s = tl.dot(q, tl.trans(k))
            p = _probs(s, lse, l0, L, qk_scale, ACT, BLOCK_L)
            p = tl.where(rmask[:, None], p, 0.0)
            dv = tl.dot(tl.trans(p.to(v.dtype)), dzq, dv)
            dp = tl.dot(dzq, tl.trans(v))
            ds = _dscores(s, p, dp, delta, qk_scale, ACT)
            ds = tl.where(rmask[:, None] & lmask[None, :], ds, 0.0)
            dk = tl.dot(tl.trans(ds.to(q.dtype)), q, dk)
    out = b * stride_kb + offs_l[:, None] * stride_kl + kvh * D + offs_d[None, :]
    tl.store(DK + out, dk.to(DK.dtype.element_ty), mask=lmask[:, None])
    tl.store(DV + out, dv.to(DV.dtype.element_ty), mask=lmask[:, None])


# ---------------------------------------------------------------------------------------------
# The three-kernel plan ("kvq"; the forward's g and lse saved, all L keys in one tile).
#
# The two kernels above run the attention backward's products 7 times per head and row block:
# the rows kernel recomputes S = q K^T and dP = dz V^T for dlnq = dS K, the dK / dV kernel
# recomputes both again (its key blocks are narrower than L, so no program sees a row's whole
# dS). Where one tile holds every key (L <= BLOCK_L), the program of a (batch, kv head) sees
# each row's whole dS and can finish dlnq itself: 5 products, FlashAttention-2's count, no
# atomics. The cross-head sums then split around it:
#
#   rows_pre  (one program per row block; cross-head c):   c, dz = rrms (dout w - z c rrms^2 / N),
#             the RMS weight's partials, softmax's delta = sum_D(dz g), lse copied beside it
#   kvq       (one program per batch and kv head, all keys): S^T = K q^T, P^T, dV += P^T dz,
#             dP^T = V dz^T, dS^T, dK += dS^T q, dlnq = dS K + dz (stored in DLNQ's dtype), and
#             each row's per-head LayerNorm partials sum_D(dlnq a), sum_D(dlnq a xhat) of the
#             stored (rounded) dlnq
#   rows_post (one program per row block; no exchange: the partials are summed over heads):
#             dx = rstd (dlnq a - (c1 + xhat c2) / N) + dout, the LayerNorm weights' partials
#
# The kvq kernel works transposed (keys as the products' M dimension, 128 rows for two
# warpgroups' wgmma), as FlashAttention-2's dK / dV loop does; dS^T is transposed once more for
# dS K. Traffic over the two-kernel plan: dlnq written and read once ([T, H, D] in DLNQ's
# dtype); the rows kernel's recomputed products and the dK / dV kernel's re-reads of x and dz
# per key block go.
# ---------------------------------------------------------------------------------------------


@triton.jit
def fna_bwd_rows_pre_naive(X, DOUT, GS, LSE, MEAN, RSTD, RRMS, LNW, LNB, RMSW, ROWS, DZ, STAT,
                           DW_PART, H: tl.constexpr, D: tl.constexpr, ACT: tl.constexpr,
                           BLOCK_M: tl.constexpr, HAS_LNW: tl.constexpr = False,
                           HAS_LNB: tl.constexpr = False, HAS_RMSW: tl.constexpr = False):
    """The RMSNorm backward of a row block (the kvq plan's first kernel): dz for every head in
    DZ (x's dtype), softmax's (lse, delta) per row and head in STAT, the RMS weight's column
    partials in DW_PART[pid, 0]. Two loops over the heads, the cross-head sum c between them."""
    pid = tl.program_id(0)
    N: tl.constexpr = H * D
    start = tl.load(ROWS + pid * 3 + 1)
    end = tl.load(ROWS + pid * 3 + 2)
    rows = start + tl.arange(0, BLOCK_M)
    rmask = rows < end
    offs_d = tl.arange(0, D)
    tmask = rmask[:, None]
    mean = tl.load(MEAN + rows, mask=rmask, other=0.0)
    rstd = tl.load(RSTD + rows, mask=rmask, other=0.0)
    rrms = tl.load(RRMS + rows, mask=rmask, other=0.0)

    # loop 1: z = ln_q + g per head; the RMS backward's statistic sum_N(dout * w * z)
    c = tl.zeros([BLOCK_M], tl.float32)
    for h in range(0, H):
        tile = (rows[:, None] * H + h) * D + offs_d[None, :]
        xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW, HAS_LNB)
        z = lnq + tl.load(GS + tile, mask=tmask, other=0.0).to(tl.float32)
        do = tl.load(DOUT + tile, mask=tmask, other=0.0).to(tl.float32)
        if HAS_RMSW:
            do = do * tl.load(RMSW + h * D + offs_d).to(tl.float32)[None, :]
        c += tl.sum(do * z, 1)
    cz = c * rrms * rrms * (1.0 / N)

    # loop 2: dz (and delta) per head
    for h in range(0, H):
        tile = (rows[:, None] * H + h) * D + offs_d[None, :]
        xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW, HAS_LNB)
        gh = tl.load(GS + tile, mask=tmask, other=0.0).to(tl.float32)
        z = lnq + gh
        do = tl.load(DOUT + tile, mask=tmask, other=0.0).to(tl.float32)
        dow = do
        if HAS_RMSW:
            dow = do * tl.load(RMSW + h * D + offs_d).to(tl.float32)[None, :]
            tl.store(DW_PART + pid * 3 * N + h * D + offs_d, tl.sum(do * z * rrms[:, None], 0))
        dz = rrms[:, None] * (dow - z * cz[:, None])
        tl.store(DZ + tile, dz.to(DZ.dtype.element_ty), mask=tmask)
        if ACT == 4:
            tl.store(STAT + (rows * H + h) * 2,
                     tl.load(LSE + rows * H + h, mask=rmask, other=0.0), mask=rmask)
            tl.store(STAT + (rows * H + h) * 2 + 1, tl.sum(dz * gh, 1), mask=rmask)


@triton.jit
def _probs_t(st, lse, lmask, rmask, qk_scale, ACT: tl.constexpr):
    """P^T for a tile of transposed scores S^T [keys, rows] (f32); 0 past L and past the rows."""
    if ACT == 4:
        p = tl.exp2(tl.fma(st, qk_scale * 1.4426950408889634, -(lse * 1.4426950408889634)[None, :]))
    else:
        p = _act(st, ACT) * qk_scale
    return tl.where(lmask[:, None] & rmask[None, :], p, 0.0)


@triton.jit
def fna_bwd_kvq_naive(X, K, V, MEAN, RSTD, LNW, LNB, OFFSETS, DZ, STAT, DK, DV, DLNQ, PART, L,
                      stride_kb, stride_kl, qk_scale, ORDER, H: tl.constexpr,
                      HKV: tl.constexpr, D: tl.constexpr, ACT: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_L: tl.constexpr,
                      HAS_LNW: tl.constexpr = False, HAS_LNB: tl.constexpr = False,
                      DQ_T: tl.constexpr = False, HAS_PART: tl.constexpr = True,
                      HAS_ORDER: tl.constexpr = False):
    """The attention backward of one (batch, kv head) with all L <= BLOCK_L keys in one tile:
    dK, dV, and per query head and row block dlnq = dS K + dz (DLNQ, its dtype) with
    (HAS_PART) the LayerNorm backward's per-head row partials (PART [T, H, 2] f32:
    sum_D(dlnq a), sum_D(dlnq a xhat), of the stored dlnq; without them rows_post sums the
    stored dlnq itself, SUMS). Rows of the batch in BLOCK_M steps. HAS_ORDER: program p takes
    batch ORDER[p // HKV] (int32 [B], e.g. the longest sequences first), else p // HKV."""
    pid = tl.program_id(0)
    G: tl.constexpr = H // HKV
    kvh = pid % HKV
    if HAS_ORDER:
        b = tl.load(ORDER + pid // HKV)
    else:
        b = pid // HKV
    offs_l = tl.arange(0, BLOCK_L)
    offs_d = tl.arange(0, D)
    lmask = offs_l < L
    k = _kv_tile(K, b, kvh, 0, L, stride_kb, stride_kl, D, BLOCK_L)
    v = _kv_tile(V, b, kvh, 0, L, stride_kb, stride_kl, D, BLOCK_L)
    q0 = tl.load(OFFSETS + b).to(tl.int32)
    q1 = tl.load(OFFSETS + b + 1).to(tl.int32)
    dk = tl.zeros([BLOCK_L, D], tl.float32)
    dv = tl.zeros([BLOCK_L, D], tl.float32)
    for g in range(0, G):
        h = kvh * G + g
        for start in range(q0, q1, BLOCK_M):
            rows, rmask, xhat, a, q, tile, dzs, lse, delta = _kv_row_step(
                X, MEAN, RSTD, LNW, LNB, DZ, STAT, start, q1, h, H, D, ACT, BLOCK_M, HAS_LNW,
                HAS_LNB)
            dzf = dzs.to(tl.float32)
            dz = dzf.to(X.dtype.element_ty)
            st = tl.dot(k, tl.trans(q))                       # S^T [BLOCK_L, BLOCK_M]
            pt = _probs_t(st, lse, lmask, rmask, qk_scale, ACT)
            dv = tl.dot(pt.to(v.dtype), dz, dv)
            dpt = tl.dot(v, tl.trans(dz))                     # dP^T
            if ACT == 4:
                dst = pt * tl.fma(dpt, qk_scale, -(delta * qk_scale)[None, :])
            else:
                dst = _act_grad(st, ACT) * dpt * qk_scale
            dst = tl.where(lmask[:, None] & rmask[None, :], dst, 0.0).to(q.dtype)
            dk = tl.dot(dst, q, dk)
            if DQ_T:  # dQ^T = K^T dS^T: M = D for the tensor cores, whatever BLOCK_M
                dlnq = tl.trans(tl.dot(tl.trans(k), dst, tl.trans(dzf)))
            else:
                dlnq = tl.dot(tl.trans(dst), k, dzf)
            dlnq = dlnq.to(DLNQ.dtype.element_ty)
            tl.store(DLNQ + tile, dlnq, mask=rmask[:, None])
            if HAS_PART:
                ga = dlnq.to(tl.float32) * a[None, :]
                tl.store(PART + (rows * H + h) * 2, tl.sum(ga, 1), mask=rmask)
                tl.store(PART + (rows * H + h) * 2 + 1, tl.sum(ga * xhat, 1), mask=rmask)
    out = b * stride_kb + offs_l[:, None] * stride_kl + kvh * D + offs_d[None, :]
    tl.store(DK + out, dk.to(DK.dtype.element_ty), mask=lmask[:, None])
    tl.store(DV + out, dv.to(DV.dtype.element_ty), mask=lmask[:, None])


@triton.jit
def fna_bwd_rows_post_naive(X, DOUT, MEAN, RSTD, LNW, LNB, ROWS, DLNQ, PART, DX, DW_PART,
                            H: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr,
                            HAS_LNW: tl.constexpr = False, HAS_LNB: tl.constexpr = False,
                            SUMS: tl.constexpr = False):
    """The LayerNorm backward and the outer residual of a row block (the kvq plan's last
    kernel): c1, c2 summed over the heads' partials (PART, from the kvq kernel) or (SUMS) over
    the heads' stored dlnq and x here, a first loop over the heads with the kvq kernel's
    arithmetic per head, then dx per head; the LayerNorm weights' column partials in
    DW_PART[pid, 1] and [pid, 2]."""
    pid = tl.program_id(0)
    N: tl.constexpr = H * D
    start = tl.load(ROWS + pid * 3 + 1)
    end = tl.load(ROWS + pid * 3 + 2)
    rows = start + tl.arange(0, BLOCK_M)
    rmask = rows < end
    offs_d = tl.arange(0, D)
    tmask = rmask[:, None]
    mean = tl.load(MEAN + rows, mask=rmask, other=0.0)
    rstd = tl.load(RSTD + rows, mask=rmask, other=0.0)
    c1 = tl.zeros([BLOCK_M], tl.float32)
    c2 = tl.zeros([BLOCK_M], tl.float32)
    for h in range(0, H):
        if SUMS:
            tile = (rows[:, None] * H + h) * D + offs_d[None, :]
            dlnq = tl.load(DLNQ + tile, mask=tmask, other=0.0).to(tl.float32)
            xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW,
                                    HAS_LNB)
            ga = dlnq * a[None, :]
            c1 += tl.sum(ga, 1)
            c2 += tl.sum(ga * xhat, 1)
        else:
            c1 += tl.load(PART + (rows * H + h) * 2, mask=rmask, other=0.0)
            c2 += tl.load(PART + (rows * H + h) * 2 + 1, mask=rmask, other=0.0)
    c1 = c1 * (1.0 / N)
    c2 = c2 * (1.0 / N)
    for h in range(0, H):
        tile = (rows[:, None] * H + h) * D + offs_d[None, :]
        dlnq = tl.load(DLNQ + tile, mask=tmask, other=0.0).to(tl.float32)
        xhat, lnq, a = _ln_tile(X, rows, rmask, h, mean, rstd, LNW, LNB, H, D, HAS_LNW, HAS_LNB)
        do = tl.load(DOUT + tile, mask=tmask, other=0.0).to(tl.float32)
        dx = rstd[:, None] * (dlnq * a[None, :] - tl.fma(xhat, c2[:, None], c1[:, None])) + do
        tl.store(DX + tile, dx.to(DX.dtype.element_ty), mask=tmask)
        if HAS_LNW:
            tl.store(DW_PART + pid * 3 * N + N + h * D + offs_d, tl.sum(dlnq * xhat, 0))
        if HAS_LNB:
            tl.store(DW_PART + pid * 3 * N + 2 * N + h * D + offs_d, tl.sum(dlnq, 0))
