"""Naive FlashNormAttention forward kernel (issue 12): out = RMSNorm(attend(LN(x)) + LN(x)) + x.

The definition and conventions are `normfuse.reference_attention` (activations, qk_scale, layout,
saved statistics). Written the obvious way, as the input of the passes:

    X    [T, H, D] row-major, jagged by OFFS (int32, B + 1 entries)
    K, V [B, L, HKV, D] contiguous (GQA: head h reads kv head h // (H // HKV))
    LNW, LNB, RMSW [H * D] (HAS_LNW, HAS_LNB, HAS_RMSW); OUT [T, H, D]; MEAN, RSTD, RRMS [T] f32

One program per BLOCK_M row block of one batch. BLOCKS [B + 1] int32 is the running count of row
blocks per batch (BLOCKS[b] = sum_{c < b} cdiv(len_c, BLOCK_M)); a program finds its batch by a
binary search (LOG_B steps, unrolled) and its rows from there; programs past the last row block
have every row masked off, so the grid may be any upper bound (cdiv(T, BLOCK_M) + B: no host sync).
ROWS (constexpr, > 0): each program walks up to ROWS rows of one sequence (a multiple of
BLOCK_M) in BLOCK_M-row blocks, BLOCKS the table of those chunks (`row_block_table(offsets,
ROWS)`): the blocks of a sequence share one program, so its K and V can be loaded once for them
(a pass hoists the loop-invariant loads out of the walk).
ROW_TABLE (constexpr): BLOCKS is instead the row-block table, int32 [programs, 3] of (batch,
first row, end of the sequence) (`ops.common.row_block_table`; dead entries first row = end):
one round of loads where the search is LOG_B dependent ones on every program's critical path.
LN_MMA (constexpr, off by default in the kernel; the op sets it without norm weights,
`prepare_flash_norm_attention`'s `DEFAULT_LN_MMA`, with `MMA_FNA_PASSES`): the LayerNorm in the MMA accumulator's layout, x through `_in_mma` (a K = 16
product of zeros whose tl.dot result anchors Triton's layout pass) for the statistics, q and the
residuals: the same values (the interpreter's bits are the default's), fewer sm_90 instructions
in the inference forward, more ptxas spills in the training forward and with the weights; on the
GPU the statistics' row sums run in the MMA layout's order, so the bits may differ by a rounding.

  loop 0, per head:  LayerNorm statistics of the row over all H * D features: shifted sums
                     s1 = sum(x - c), s2 = sum((x - c)^2) with c = x[row, 0] (one pass, exact
                     algebra, no cancellation when |mean| >> std)
  then               mean, rstd
  loop 1, per head:  q = LN(x) (the whole tile: the activation is nonlinear, LN is not lazy);
                     acc = act(q K^T) * qk_scale @ V (GDPA), or online softmax (FA2: running
                     max and sum, acc / l at the end); z = acc + q (inner residual);
                     ss += sum(z^2); store z to OUT (unnormalized)
  then               rrms
  loop 2, per head:  reload z, y = z * rrms * w + x (outer residual), store
  then               store mean, rstd, rrms

The heads play the part of the N tiles of the naive post-norm GEMM (kernels/postnorm_gemm.py):
`cluster-reduce` deals the heads of a row block to the CTAs of a cluster (one head each), and
exchanges both the RMSNorm's and the LayerNorm's (prologue) row sums over DSMEM; `epilogue-norm`
then forwards z through registers; `residual-acc` starts the P V accumulator at q.

STATS_AHEAD (constexpr, off; with ROWS > 0): the walk software-pipelined for one cluster exchange
a row block instead of two: loop 0 of the first block before the walk, and in block i's trip
loop 0 of block i + 1 between loop 1 and rrms (z held in registers across it after the passes),
its sums carried to the next trip (`_fna_rows(AHEAD=True)`); `cluster-reduce{merge=true}`
exchanges them with block i's RMSNorm sums. The same arithmetic in the same order: the same bits.
STATS_AHEAD = 2 (the carry form; `prepare_flash_norm_attention(stats_ahead="carry")`): that walk
with LN_MMA's residuals (q's and loop 2's x) from loop 1's x itself, `_in_mma(x)`, instead of
x widened by its bits, so that every use of block i + 1's x tile in trip i + 1 is the value the
sums of trip i computed (`_in_mma(x.to(fp32))` of the same addresses): `reuse-loads{across-trips
=values}` then carries that fp32 tile in the MMA layout to the next trip (the first block's from
the sums before the walk), and trip i + 1 neither loads nor converts x. Same values (x through
the same anchor), the same bits. Without LN_MMA the kernel is STATS_AHEAD = 1's.

The KV loop runs over L in BLOCK_N tiles (L a constexpr; with L == BLOCK_N it has one trip and is
folded away: the short-KV case, K and V of one head held whole). ACT: 0 gelu_tanh, 1 silu,
2 relu, 3 relu2, 4 softmax (ACT_CODES).
"""
import triton
import triton.language as tl

ACT_CODES = {"gelu_tanh": 0, "silu": 1, "relu": 2, "relu2": 3, "softmax": 4}


@triton.jit
def gelu_exp_m2u(s):
    """exp(-2u) of the tanh GELU, u = sqrt(2 / pi) (s + 0.044715 s^3), as one exp2 of
    s (k0 + k1 s^2): a multiply-add and a multiply before the exp2 (six ops as written)."""
    k0: tl.constexpr = -2.0 * 0.7978845608028654 * 1.4426950408889634
    k1: tl.constexpr = -2.0 * 0.7978845608028654 * 1.4426950408889634 * 0.044715
    return tl.exp2(s * tl.fma(s * s, k1, k0))


@triton.jit
def fast_div(a, b):
    """a / b (fp32) by PTX `div.approx.f32`: a times the reciprocal of b (MUFU.RCP and an FMUL
    in sm_90 SASS), within 2 ulp for |b| in [2^-126, 2^126], a signed zero for |b| past 2^126
    (a / inf too). Triton lowers `/` to `div.full.f32`, which scales b into that range first: ~6 SASS
    instructions an element (the fused GELU forward's row-block body 2055 -> 1799). For the
    activations' 1 + exp(...) >= 1 the zero past 2^126 stands for a quotient below 1e-36."""
    return tl.inline_asm_elementwise("div.approx.f32 $0, $1, $2;", "=f,f,f", [a, b],
                                     dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def fast_tanh(x):
    """tanh(x) (fp32) by PTX `tanh.approx.f32`: one MUFU.TANH on sm_75 and later. Relative error:
    the PTX ISA bounds it by 2^-11 (the interpreter applies that bound, `testing.ptx`); measured,
    1.1e-5 over every fp32 input (N. Juffa, NVIDIA's developer forum, 2021, on sm_75); against
    ~2^-9 for the bf16 rounding of what it feeds (the attention's P)."""
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x],
                                     dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def _activation(s, ACT: tl.constexpr, scale=1.0):
    """act(s) * scale. GELU (tanh) as h + h tanh(u) with h = s scale / 2, u = s (c0 + c1 s^2), and
    SiLU as h + h tanh(s / 2): six and four instructions an element (sm_90 SASS), the scale
    included, where s / (1 + exp(-2u)) (exp2, add, div.approx) and then the scale took eight
    (GELU) and six (SiLU): the fused GELU forward's row-block body 1678 -> 1550 (H 2).
    Accuracy: tanh.approx's relative error (the ISA's bound 2^-11) becomes an absolute error of
    up to |h| 2^-11 in act(s) scale (on the negative tail, where the exact value is ~0 and the
    exp form kept a relative error): at |s| <= 8, 2e-3 |scale|, the size of bf16's rounding of
    P. The backward keeps the exp form (`attention_bwd._gelu_h`), where GELU's derivative
    multiplies that error by ~0.1 |s|^3. |s scale| past 6.8e38 (h infinite) gives NaN where
    the exp form gave -0."""
    if ACT == 0:  # tanh-approximated GELU: 0.5 s (1 + tanh(u))
        c0: tl.constexpr = 0.7978845608028654  # sqrt(2 / pi)
        c1: tl.constexpr = 0.7978845608028654 * 0.044715
        h = s * (0.5 * scale)
        p = tl.fma(h, fast_tanh(s * tl.fma(s * s, c1, c0)), h)
    elif ACT == 1:  # SiLU: s sigmoid(s) = 0.5 s (1 + tanh(s / 2))
        h = s * (0.5 * scale)
        p = tl.fma(h, fast_tanh(s * 0.5), h)
    elif ACT == 2:  # ReLU
        p = tl.maximum(s, 0.0) * scale
    else:  # ReLU^2
        r = tl.maximum(s, 0.0)
        p = r * r * scale
    return p


@triton.jit
def _in_mma(t, DT: tl.constexpr):
    """t (fp32 [M, N]) through a K = 16 product of zeros, t + 0 * 0: the same values (a -0.0
    comes back +0.0) as a tl.dot's result, so that Triton's layout pass computes what follows
    from it in the MMA accumulator's layout (`_fna_block`'s LN_MMA). The LayerNorm computed from
    x itself runs in the load's blocked layout (8 rows a thread: 64 shuffles for the two row
    sums, and q goes to the attention's dot through shared memory) beside a second copy in the
    MMA layout for the residuals; from x through this product it is one layout, the row sums
    take 8 shuffles and q reaches the dot in registers, as P does. x then reaches the dots only
    as an accumulator, which Triton's pipeliner does not prefetch: `prefetch-loads` tags it."""
    return tl.dot(tl.zeros([t.shape[0], 16], dtype=DT), tl.zeros([16, t.shape[1]], dtype=DT), t)


@triton.jit
def _widen(x):
    """x in fp32, exact; bf16 by its bits (x << 16). Not the op that `.to` gives, so that the
    residuals' copy of x (`_in_mma(_widen(x))`, after the attention) is not merged with the
    LayerNorm's: the fp32 tile would stay live across the attention (ptxas spilled 156 B a
    thread at softmax H = 2), where the bf16 tile is half of it."""
    if x.dtype == tl.bfloat16:
        return (x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    else:
        return x.to(tl.float32)


@triton.jit
def _ln_q(x, rq, nmr, mean, rstd, LNW, LNB, cols, Q_FMA: tl.constexpr, HAS_LNW: tl.constexpr,
          HAS_LNB: tl.constexpr):
    """q = LN(x) of one head's fp32 tile x from its rows' statistics: x rq + nmr as one fma
    (Q_FMA; rq, nmr: rstd and -mean rstd, see `_fna_rows`) or (x - mean) rstd, then the norm's
    weight and bias columns `cols` where given."""
    if Q_FMA:
        q = tl.fma(x, rq[:, None], nmr[:, None])
    else:
        q = (x - mean[:, None]) * rstd[:, None]
    if HAS_LNW:
        q = q * tl.load(LNW + cols).to(tl.float32)[None, :]
    if HAS_LNB:
        q = q + tl.load(LNB + cols).to(tl.float32)[None, :]
    return q


@triton.jit
def _locate(BLOCKS, OFFS, nbatch, BLOCK_M: tl.constexpr, LOG_B: tl.constexpr,
            ROW_TABLE: tl.constexpr = False):
    """The batch of this program (the last b with BLOCKS[b] <= pid), its first row and the end of
    its sequence. ROW_TABLE: BLOCKS is the row-block table instead, (batch, first row, end) per
    program (`ops.common.row_block_table`): three independent loads, where the search is LOG_B
    dependent ones before the row's first load."""
    pid = tl.program_id(0)
    if ROW_TABLE:
        b = tl.load(BLOCKS + pid * 3)
        row0 = tl.load(BLOCKS + pid * 3 + 1)
        end = tl.load(BLOCKS + pid * 3 + 2)
    else:
        b = pid * 0
        for i in tl.static_range(LOG_B):
            cand = b + (1 << (LOG_B - 1 - i))
            first = tl.load(BLOCKS + cand, mask=cand < nbatch, other=2147483647)
            b = tl.where(first <= pid, cand, b)
        start = tl.load(OFFS + b)
        end = tl.load(OFFS + b + 1)
        row0 = start + (pid - tl.load(BLOCKS + b)) * BLOCK_M
    return b, row0, end


@triton.jit
def attend(qh, K, V, kvh, qk_scale, HKV: tl.constexpr, D: tl.constexpr, L: tl.constexpr,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ACT: tl.constexpr,
           KV_TMA: tl.constexpr = False, RECIP: tl.constexpr = True,
           SCALED: tl.constexpr = False):
    """One head's attention for a [BLOCK_M, D] tile of queries `qh`: a loop over the batch's L
    keys/values (K and V [B, L, HKV, D], this head's at `kvh`), GDPA (act(q k^T) * qk_scale) or
    online softmax (ACT == 4, FA2); (the fp32 [BLOCK_M, D] result (softmax: normalized by l),
    softmax's log-sum-exp of q k^T * qk_scale per row in natural units (zeros for GDPA); unused,
    it costs nothing)). KV_TMA: K and V are the batch's [L, HKV * D] (base pointers, 16-byte
    aligned) and `kvh` the head's first column; the tiles come by bulk tensor copies straight
    into shared memory (zero past L), not through registers (needs triton.set_allocator).
    RECIP (softmax): the result normalized by one reciprocal of l per row and a multiply per
    element (sm_90 SASS of the fused forward's body 2161 -> 1968, softmax H 2) instead of a
    divide per element; False keeps the divide (the training forward, which spilled 0 -> 160 B
    with the reciprocal).
    SCALED (softmax only): `qh` comes scaled by qk_scale log2(e), the scores' exponent base 2
    straight from the product, a multiply an element less here (the caller folds the factor into
    the per-row constants that make q); `qk_scale` is then unused. (GDPA has the scale in its
    activation: `_activation(s, ACT, qk_scale)`.)"""
    tl.static_assert(ACT == 4 or not SCALED, "attend: SCALED is softmax's (ACT == 4)")
    offs_d = tl.arange(0, D)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    if KV_TMA:
        kd = tl.make_tensor_descriptor(K, shape=[L, HKV * D], strides=[HKV * D, 1],
                                       block_shape=[BLOCK_N, D])
        vd = tl.make_tensor_descriptor(V, shape=[L, HKV * D], strides=[HKV * D, 1],
                                       block_shape=[BLOCK_N, D])
    for n0 in range(0, L, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        nmask = offs_n < L
        if KV_TMA:
            k = kd.load([n0, kvh])
            v = vd.load([n0, kvh])
        else:
            kv_off = kvh + offs_n[:, None] * (HKV * D) + offs_d[None, :]
            k = tl.load(K + kv_off, mask=nmask[:, None], other=0.0)
            v = tl.load(V + kv_off, mask=nmask[:, None], other=0.0)
        s = tl.dot(qh, tl.trans(k))
        if ACT == 4:  # online softmax (FA2)
            # (s c rounded first, then the offset: the maximal score's exponent is exactly 0.
            # An fma(s, c, -max(s) c) would save a multiply an element (sm_90 SASS of the fused
            # forward's body 1703 -> 1643, softmax H 2) but leaves that exponent at the product's
            # rounding error, up to half an ulp of max(s) c: exp2 overflows past |max(s) c| ~
            # 2^31 and the row turns NaN where this form gives the one-hot limit)
            if SCALED:
                s = tl.where(nmask[None, :], s, float("-inf"))
            else:
                s = tl.where(nmask[None, :], s * (qk_scale * 1.4426950408889634), float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, axis=1))
            p = tl.exp2(s - m_new[:, None])
            if L <= BLOCK_N:  # one tile: alpha = 0 and acc = l_i = 0, so no rescale (same bits)
                l_i = tl.sum(p, axis=1)
            else:
                alpha = tl.exp2(m_i - m_new)
                l_i = l_i * alpha + tl.sum(p, axis=1)
                acc = acc * alpha[:, None]
            m_i = m_new
        else:
            p = tl.where(nmask[None, :], _activation(s, ACT, qk_scale), 0.0)
        acc = tl.dot(p.to(V.dtype.element_ty), v, acc)
    lse = tl.zeros([BLOCK_M], dtype=tl.float32)
    if ACT == 4:
        if RECIP:
            acc = acc * (1.0 / l_i)[:, None]
        else:
            acc = acc / l_i[:, None]
        lse = m_i * 0.6931471805599453 + tl.log(l_i)  # (m_i in log2 units)
    return acc, lse


@triton.jit
def flash_norm_attention_naive(X, K, V, OFFS, BLOCKS, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS,
                               nbatch, qk_scale, eps, rms_eps,
                               H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                               L: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               ACT: tl.constexpr, LOG_B: tl.constexpr,
                               HAS_LNW: tl.constexpr = False, HAS_LNB: tl.constexpr = False,
                               HAS_RMSW: tl.constexpr = False, KV_TMA: tl.constexpr = False,
                               ROW_TABLE: tl.constexpr = False, ROWS: tl.constexpr = 0,
                               LN_MMA: tl.constexpr = False, STATS_AHEAD: tl.constexpr = False):
    _fna_body(X, K, V, OFFS, BLOCKS, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, OUT, RRMS, nbatch,
              qk_scale, eps, rms_eps, H, HKV, D, L, BLOCK_M, BLOCK_N, ACT, LOG_B, HAS_LNW,
              HAS_LNB, HAS_RMSW, False, KV_TMA, ROW_TABLE, ROWS, LN_MMA, STATS_AHEAD)


@triton.jit
def flash_norm_attention_save_naive(X, K, V, OFFS, BLOCKS, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS,
                                    GS, LSE, nbatch, qk_scale, eps, rms_eps,
                                    H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
                                    L: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                    ACT: tl.constexpr, LOG_B: tl.constexpr,
                                    HAS_LNW: tl.constexpr = False, HAS_LNB: tl.constexpr = False,
                                    HAS_RMSW: tl.constexpr = False, KV_TMA: tl.constexpr = False,
                                    ROW_TABLE: tl.constexpr = False, ROWS: tl.constexpr = 0,
                                    LN_MMA: tl.constexpr = False,
                                    STATS_AHEAD: tl.constexpr = False):
    """The training forward: `flash_norm_attention_naive` that also stores, for the backward,
    the attention's output g = attend(ln_q) per head (GS [T, H, D] in OUT's dtype; the backward
    adds ln_q back, so g's rounding is relative to g, not to z = g + ln_q, which FA2's delta =
    sum(dz * g) needs at long L) and, for softmax, the log-sum-exp per row and head (LSE [T, H]
    f32). With the accumulator also stored, `residual-acc` leaves it starting at zero."""
    _fna_body(X, K, V, OFFS, BLOCKS, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE, nbatch,
              qk_scale, eps, rms_eps, H, HKV, D, L, BLOCK_M, BLOCK_N, ACT, LOG_B, HAS_LNW,
              HAS_LNB, HAS_RMSW, True, KV_TMA, ROW_TABLE, ROWS, LN_MMA, STATS_AHEAD)


@triton.jit
def _fna_body(X, K, V, OFFS, BLOCKS, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE, nbatch,
              qk_scale, eps, rms_eps, H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
              L: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ACT: tl.constexpr,
              LOG_B: tl.constexpr, HAS_LNW: tl.constexpr, HAS_LNB: tl.constexpr,
              HAS_RMSW: tl.constexpr, SAVE: tl.constexpr, KV_TMA: tl.constexpr,
              ROW_TABLE: tl.constexpr, ROWS: tl.constexpr, LN_MMA: tl.constexpr,
              STATS_AHEAD: tl.constexpr = False):
    if ROWS > 0:  # BLOCKS: the table of ROWS-row chunks; their BLOCK_M-row blocks in turn
        b, start, end = _locate(BLOCKS, OFFS, nbatch, BLOCK_M, LOG_B, True)
        stop = tl.minimum(end, start + ROWS)
        if STATS_AHEAD:  # the walk software-pipelined: block i + 1's LayerNorm sums in block i
            shift, s1, s2 = _ln_sums(X, start, stop, H, D, BLOCK_M, LN_MMA)
            for row0 in range(start, stop, BLOCK_M):
                shift, s1, s2 = _fna_rows(X, K, V, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE,
                                          b, row0, stop, shift, s1, s2, qk_scale, eps, rms_eps,
                                          H, HKV, D, L, BLOCK_M, BLOCK_N, ACT, HAS_LNW, HAS_LNB,
                                          HAS_RMSW, SAVE, KV_TMA, LN_MMA, STATS_AHEAD)
        else:
            for row0 in range(start, stop, BLOCK_M):
                _fna_block(X, K, V, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE, b, row0, stop,
                           qk_scale, eps, rms_eps, H, HKV, D, L, BLOCK_M, BLOCK_N, ACT, HAS_LNW,
                           HAS_LNB, HAS_RMSW, SAVE, KV_TMA, LN_MMA)
    else:
        b, row0, end = _locate(BLOCKS, OFFS, nbatch, BLOCK_M, LOG_B, ROW_TABLE)
        _fna_block(X, K, V, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE, b, row0, end,
                   qk_scale, eps, rms_eps, H, HKV, D, L, BLOCK_M, BLOCK_N, ACT, HAS_LNW,
                   HAS_LNB, HAS_RMSW, SAVE, KV_TMA, LN_MMA)


@triton.jit
def _ln_sums(X, row0, end, H: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr,
             LN_MMA: tl.constexpr):
    """Loop 0 of the rows row0.. below end: the LayerNorm's shift (the row's first feature) and
    shifted sums s1 = sum(x - c), s2 = sum((x - c)^2) over all H * D features (zeros on the
    masked rows: a block past the end loads nothing)."""
    N: tl.constexpr = H * D
    rows = row0 + tl.arange(0, BLOCK_M)
    rmask = rows < end
    xrow = X + rows.to(tl.int64) * N
    offs_d = tl.arange(0, D)
    shift = tl.load(xrow, mask=rmask, other=0.0).to(tl.float32)
    s1 = tl.zeros([BLOCK_M], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_M], dtype=tl.float32)
    for h in range(H):
        x = tl.load(xrow[:, None] + h * D + offs_d[None, :], mask=rmask[:, None], other=0.0)
        if LN_MMA:
            xc = _in_mma(x.to(tl.float32), X.dtype.element_ty) - shift[:, None]
        else:
            xc = x.to(tl.float32) - shift[:, None]  # (0 - 0 = +0 on the masked rows)
        s1 += tl.sum(xc, axis=1)
        s2 += tl.sum(xc * xc, axis=1)
    return shift, s1, s2


@triton.jit
def _fna_block(X, K, V, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE, b, row0, end,
               qk_scale, eps, rms_eps, H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
               L: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ACT: tl.constexpr,
               HAS_LNW: tl.constexpr, HAS_LNB: tl.constexpr, HAS_RMSW: tl.constexpr,
               SAVE: tl.constexpr, KV_TMA: tl.constexpr, LN_MMA: tl.constexpr):
    """One BLOCK_M-row block of batch b: rows row0.. below end (loop 0, then the rest)."""
    shift, s1, s2 = _ln_sums(X, row0, end, H, D, BLOCK_M, LN_MMA)
    _fna_rows(X, K, V, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE, b, row0, end, shift, s1,
              s2, qk_scale, eps, rms_eps, H, HKV, D, L, BLOCK_M, BLOCK_N, ACT, HAS_LNW, HAS_LNB,
              HAS_RMSW, SAVE, KV_TMA, LN_MMA, False)


@triton.jit
def _fna_rows(X, K, V, LNW, LNB, RMSW, OUT, MEAN, RSTD, RRMS, GS, LSE, b, row0, end, shift, s1,
              s2, qk_scale, eps, rms_eps, H: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr,
              L: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ACT: tl.constexpr,
              HAS_LNW: tl.constexpr, HAS_LNB: tl.constexpr, HAS_RMSW: tl.constexpr,
              SAVE: tl.constexpr, KV_TMA: tl.constexpr, LN_MMA: tl.constexpr,
              AHEAD: tl.constexpr):
    """One BLOCK_M-row block of batch b from its LayerNorm sums (`_ln_sums`: shift, s1, s2):
    loops 1 and 2. AHEAD (the walk's STATS_AHEAD): loop 0 of the next block (row0 + BLOCK_M,
    all rows masked past `end`) runs between loop 1 and the RMSNorm's rrms, and its sums are
    returned (else the block's own): `cluster-reduce{merge=true}` exchanges them together with
    loop 1's, one exchange per row block. AHEAD == 2 (the carry form, LN_MMA): the residuals
    from loop 1's x (module docstring)."""
    N: tl.constexpr = H * D
    GROUP: tl.constexpr = H // HKV
    # q = LN(x) as one fma, x rstd + (-mean rstd) (Q_FMA), where the subtraction first costs a
    # second instruction an element, in both of the body's copies of q: sm_90 SASS of the fused
    # forward's row-block body 1703 -> 1579 (softmax H 2), 1799 -> 1675 (GELU H 2); the training
    # forward's GELU 1916 -> 1851 (spills 80 -> 64 B). Not softmax's training forward: its lse,
    # saved for the backward, must come from the q the backward recomputes, (x - mean) rstd (q's
    # bf16 rounding flips where the two forms differ: P's rows then sum to 1 +- 2e-3 at
    # |mean| / std = 200, a reviewer's emulation); GELU's backward saves no normalizer.
    # Exactness: -mean rstd is rounded once, so q is off by up to half an ulp of |mean| rstd
    # where (x - mean) rstd would be exact. A row of one value (s2 == 0: its shifted sums are
    # exactly 0) takes rstd 0 here, so its q is 0 as before (at rstd = 1 / sqrt(eps) the error
    # would be ~ |mean| 2^-16: a whole bf16 ulp of the output y + x where GELU leaves z = q ~ 0).
    # Any other bf16 row has a value at least a bf16 ulp (|mean| 2^-8) from the others, so
    # var >= (|mean| 2^-8)^2 / N, |mean| rstd <= 2^8 sqrt(N) and the error <= sqrt(N) 2^-16
    # (3.5e-4 at N = 512) on q of unit variance: below bf16's rounding of q for the dot (2^-9).
    # fp16's finer ulp gives 2^11 sqrt(N) there, not below its rounding: fp16 keeps the exact form.
    Q_FMA: tl.constexpr = (X.dtype.element_ty == tl.bfloat16) and ((ACT != 4) or (not SAVE))
    # Softmax's inference forward (no lse kept for a backward that recomputes the scores) takes
    # the scale out of the attention's loop (attend's SCALED): the dot's q comes scaled by
    # qk_scale log2(e), folded into q's fma constants (Q_FMA, without norm weights), and the
    # scores are exp2's argument as they leave the product: a multiply an element less, sm_90
    # body softmax H 2 1582 -> 1522, H 4 1609 -> 1549. The rounding moves (bf16(q c) for the dot
    # instead of bf16(q) then c in fp32); the training forward keeps it where its backward
    # recomputes the scores against the saved lse. Not GDPA: act(s) @ V scaled in z's fma with
    # the residual measured the same, as residual-acc no longer starts the accumulator at q.
    SCALED: tl.constexpr = (ACT == 4) and (not SAVE) and Q_FMA and (not HAS_LNW) and (not HAS_LNB)
    # NARROW (the carry form's softmax training forward): the carried fp32 x narrowed to X's
    # dtype (exact: x holds its values) before the attention and widened after it for the
    # residual's q, recomputed there, and loop 2's x. Without it the fp32 x and q (the
    # accumulator starts at zero when g is stored) both live across the attention: sm_90 body
    # softmax H 2 1958 instructions / 136 B spills -> 2019 / 16 B (default 2111 / 0 B), H 4
    # 1977 / 128 B -> 2041 / 4 B. Not GELU's (1564 / 24 B -> 1692 / 32 B).
    NARROW: tl.constexpr = LN_MMA and (AHEAD == 2) and SAVE and (ACT == 4)
    rows = row0 + tl.arange(0, BLOCK_M)
    rmask = rows < end
    xrow = X + rows.to(tl.int64) * N
    orow = OUT + rows.to(tl.int64) * N
    offs_d = tl.arange(0, D)
    kv_base = b.to(tl.int64) * (L * HKV * D)

    # (rsqrt and the reciprocal of N as torch's LayerNorm kernels do: the IEEE-rounded divide
    # and sqrt cost 141-155 of the fused forward's ~2300-2900 sm_90 SASS instructions per row
    # block and head, as every layout's copy of the statistics computes them)
    # Every multiply-add here is an explicit fma or none: left to LLVM, `shift + m1` and
    # `s2 / N - m1 * m1` contract differently in different layout copies and launch variants
    # (m1 has two uses), and the variants' bits parted (H200, 2026-12-04).
    m1 = s1 * (1.0 / N)
    mean = tl.fma(s1, 1.0 / N, shift)
    rstd = tl.math.rsqrt(tl.maximum(tl.fma(s2, 1.0 / N, -(m1 * m1)), 0.0) + eps)
    # (Q_FMA: a row of one value keeps q = 0 exactly; s1 too, for a row whose shifted values
    # are nonzero but square to zero, |x - x0| < 2^-75)
    rq = tl.where((s2 > 0.0) | (s1 != 0.0), rstd, 0.0)
    nmr = -(mean * rq)
    if SCALED:  # (the dot's q scaled: exp2's argument straight from the product)
        rqs = rq * (qk_scale * 1.4426950408889634)
        nmrs = -(mean * rqs)
    else:
        rqs = rq
        nmrs = nmr

    # loop 1: per head, LN(x) -> attention -> z = attention + LN(x); RMSNorm statistics
    ss = tl.zeros([BLOCK_M], dtype=tl.float32)
    for h in range(H):
        cols = h * D + offs_d
        if LN_MMA:
            xb = tl.load(xrow[:, None] + cols[None, :], mask=rmask[:, None], other=0.0)
            x = _in_mma(xb.to(tl.float32), X.dtype.element_ty)
        else:
            x = tl.load(xrow[:, None] + cols[None, :], mask=rmask[:, None], other=0.0).to(tl.float32)
        q = _ln_q(x, rq, nmr, mean, rstd, LNW, LNB, cols, Q_FMA, HAS_LNW, HAS_LNB)
        if SCALED:  # the dot's copy scaled, the residual's not (LN_MMA recomputes it below)
            qh = tl.fma(x, rqs[:, None], nmrs[:, None]).to(X.dtype.element_ty)
        else:
            qh = q.to(X.dtype.element_ty)
        if LN_MMA and AHEAD == 2 and not NARROW:  # (the carry form: the residual's q from x)
            q = _ln_q(x, rq, nmr, mean, rstd, LNW, LNB, cols, Q_FMA, HAS_LNW, HAS_LNB)
        elif LN_MMA:  # q again, the same values, in the same layout, for the residual: from x
            # widened by its bits (`_widen`: the bf16 tile stays live across the attention)
            q = _ln_q(_in_mma(_widen(xb), X.dtype.element_ty), rq, nmr, mean, rstd, LNW, LNB,
                      cols, Q_FMA, HAS_LNW, HAS_LNB)
        if NARROW:
            xt = x.to(X.dtype.element_ty)
        if KV_TMA:  # (the batch's K and V, the head's column)
            acc, lse = attend(qh, K + kv_base, V + kv_base, (h // GROUP) * D, qk_scale, HKV, D, L,
                              BLOCK_M, BLOCK_N, ACT, True, not SAVE, SCALED)
        else:
            kvh = kv_base + (h // GROUP) * D
            acc, lse = attend(qh, K, V, kvh, qk_scale, HKV, D, L, BLOCK_M, BLOCK_N, ACT, False,
                              not SAVE, SCALED)
        if NARROW:  # (the residual's q after the attention, from x narrowed)
            q = _ln_q(xt.to(tl.float32), rq, nmr, mean, rstd, LNW, LNB, cols, Q_FMA, HAS_LNW,
                      HAS_LNB)
        z = acc + q
        ss += tl.sum(z * z, axis=1)
        tl.store(orow[:, None] + cols[None, :], z.to(OUT.dtype.element_ty), mask=rmask[:, None])
        if SAVE:  # (the backward's g and lse: no attention recomputed for them)
            tl.store(GS + rows.to(tl.int64)[:, None] * N + cols[None, :],
                     acc.to(GS.dtype.element_ty), mask=rmask[:, None])
            if ACT == 4:
                tl.store(LSE + rows * H + h, lse, mask=rmask)
    nshift, ns1, ns2 = shift, s1, s2
    if AHEAD:  # the next block's loop 0, here: its sums are exchanged with ss (one exchange)
        nshift, ns1, ns2 = _ln_sums(X, row0 + BLOCK_M, end, H, D, BLOCK_M, LN_MMA)
    rrms = tl.math.rsqrt(tl.fma(ss, 1.0 / N, rms_eps))

    # loop 2: per head, normalize, outer residual
    for h in range(H):
        cols = h * D + offs_d
        z = tl.load(orow[:, None] + cols[None, :], mask=rmask[:, None], other=0.0).to(tl.float32)
        if LN_MMA and AHEAD == 2:  # (the carry form: loop 1's x again)
            x = tl.load(xrow[:, None] + cols[None, :], mask=rmask[:, None], other=0.0)
            x = _in_mma(x.to(tl.float32), X.dtype.element_ty)
            if NARROW:
                x = x.to(X.dtype.element_ty).to(tl.float32)
        elif LN_MMA:
            x = tl.load(xrow[:, None] + cols[None, :], mask=rmask[:, None], other=0.0)
            x = _in_mma(_widen(x), X.dtype.element_ty)
        else:
            x = tl.load(xrow[:, None] + cols[None, :], mask=rmask[:, None], other=0.0).to(tl.float32)
        y = z * rrms[:, None]
        if HAS_RMSW:
            y = y * tl.load(RMSW + cols).to(tl.float32)[None, :]
        tl.store(orow[:, None] + cols[None, :], (y + x).to(OUT.dtype.element_ty), mask=rmask[:, None])

    tl.store(MEAN + rows, mean, mask=rmask)
    tl.store(RSTD + rows, rstd, mask=rmask)
    tl.store(RRMS + rows, rrms, mask=rmask)
    return nshift, ns1, ns2
