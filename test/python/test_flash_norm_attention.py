"""FlashNormAttention forward (issue 12): the naive kernel and the pass-fused kernel vs the fp64
reference (normfuse.reference_attention), on the CPU through normfuse.testing's interpreter, and
the op / module on the GPU.

CPU: every case runs the naive kernel's TTIR and the TTIR after `passes="default"` (cluster-reduce
with the LayerNorm prologue exchange, epilogue-norm, residual-acc); both are compared with the fp64
reference (out and the saved statistics), and the fused error must stay within 1.5x the naive
one's. Inputs: jagged Q with empty and length-1 sequences and ragged lengths, norm affines != 1,
|mean| >> std rows, NaN-poisoned outputs.
"""
from __future__ import annotations

import concurrent.futures
import math

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from normfuse.kernels.attention import ACT_CODES, _in_mma, flash_norm_attention_naive  # noqa: E402
from normfuse.reference import rel_err  # noqa: E402
from normfuse.reference_attention import default_qk_scale, flash_norm_attention_ref  # noqa: E402
from normfuse.testing import check_pass_numerics  # noqa: E402

gpu = pytest.mark.gpu

LENS = [5, 0, 1, 19, 0]  # empty, length-1 and ragged sequences (16-row blocks: 1, 0, 1, 2, 0)
REF_TOL = 1.2e-2         # naive (interpreted, bf16 output) vs fp64, Frobenius


def _inputs(lens, H, D, L, *, Hkv=None, act="gelu_tanh", mean=0.0, affine=True, seed=0,
            dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(seed)
    Hkv = Hkv or H
    B, T = len(lens), sum(lens)
    x = (torch.randn(T, H, D, generator=g) * 1.5 + mean).to(dtype)
    k = (torch.randn(B, L, Hkv, D, generator=g) / math.sqrt(D)).to(dtype)
    v = torch.randn(B, L, Hkv, D, generator=g).to(dtype)
    offs = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32)
    w = dict(ln_weight=(1 + 0.3 * torch.randn(H * D, generator=g)).to(dtype),
             ln_bias=(0.3 * torch.randn(H * D, generator=g)).to(dtype),
             rms_weight=(1 + 0.3 * torch.randn(H * D, generator=g)).to(dtype)) if affine else {}
    return x, k, v, offs, w


def _kernel_args(x, k, v, offs, w, act, *, BM=16, BN=None):
    T, H, D = x.shape
    B, L, Hkv, _ = k.shape
    lens = (offs[1:] - offs[:-1]).tolist()
    blocks = torch.tensor([0] + torch.tensor([-(-n // BM) for n in lens]).cumsum(0).tolist(),
                          dtype=torch.int32)
    out = torch.full((T, H, D), float("nan")).to(x.dtype)
    stats = [torch.full((T,), float("nan")) for _ in range(3)]
    dummy = torch.zeros(1, dtype=x.dtype)
    scale = 1.0 / math.sqrt(D) if act == "softmax" else 1.0
    args = [x, k, v, offs, blocks, w.get("ln_weight", dummy), w.get("ln_bias", dummy),
            w.get("rms_weight", dummy), out, *stats, B, scale, 1e-5, 1e-5]
    consts = dict(H=H, HKV=Hkv, D=D, L=L, BLOCK_M=BM, BLOCK_N=BN or L, ACT=ACT_CODES[act],
                  LOG_B=max(1, B.bit_length()), HAS_LNW="ln_weight" in w, HAS_LNB="ln_bias" in w,
                  HAS_RMSW="rms_weight" in w)
    grid = (-(-T // BM) + B,)  # the op's upper bound: programs past the end are masked off
    return args, consts, grid


def _run(lens, H, D, L, act="gelu_tanh", *, passes="default", BN=None, **kw):
    x, k, v, offs, w = _inputs(lens, H, D, L, act=act, **kw)
    args, consts, grid = _kernel_args(x, k, v, offs, w, act, BN=BN)
    res = check_pass_numerics(flash_norm_attention_naive, args, constexprs=consts, grid=grid,
                              passes=passes, num_warps=4)
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True, **w)
    return res, ref, st


def _errors(res, ref, st):
    out = {}
    for tag, r in (("naive", res.before), ("fused", res.after)):
        o = r["OUT"]
        assert torch.isfinite(o.float()).all(), f"{tag}: NaN/inf left in the output (unwritten rows?)"
        out[tag] = rel_err(o, ref)
        for name in ("MEAN", "RSTD", "RRMS"):
            want = st[name.lower()]
            got = torch.as_tensor(r[name])
            assert torch.allclose(got, want, rtol=2e-3, atol=2e-3 * float(want.abs().max())), \
                f"{tag}: {name} differs from the reference"
    return out


def _assert_close(res, ref, st):
    e = _errors(res, ref, st)
    assert e["naive"] < REF_TOL, e
    assert e["fused"] <= 1.5 * e["naive"] + 1e-4, e
    return e


# the default suite: every H at one D, and D = 128 at a cluster's worth of heads and at 8 (more
# heads than one cluster); `-m slow` the rest
_SLOW_HD = {(1, 128), (2, 128), (3, 128), (4, 64)}


@pytest.mark.parametrize("H,D", [pytest.param(h, d, marks=pytest.mark.slow if (h, d) in _SLOW_HD
                                              else (), id=f"{d}-{h}")
                                 for d in (64, 128) for h in (1, 2, 3, 4, 8)])
def test_heads_and_head_dims(H, D):
    res, ref, st = _run(LENS, H, D, 32)
    _assert_close(res, ref, st)
    text = "\n".join(res.remarks)
    if H == 1:  # the row is one head: one CTA, no cluster
        assert res.num_ctas == 1
        assert "[epilogue-norm] applied" in text
    else:
        assert res.num_ctas == H
        assert "[cluster-reduce] applied: 2 prologue row statistics" in text
        assert f"row of {H} N tiles split over a {H}-CTA cluster" in text
        assert "[epilogue-norm] applied" in text


# silu / relu / relu2 also run in test_flash_norm_attention_bwd's forward+backward cells: `-m slow`
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"] + [pytest.param(a, marks=pytest.mark.slow)
                                                          for a in ("silu", "relu", "relu2")])
def test_activations_with_kv_loop(act):
    # L = 64 in 32-wide tiles: the KV loop has two trips (online softmax rescales; GDPA sums)
    res, ref, st = _run(LENS, 3, 64, 64, act, BN=32)
    _assert_close(res, ref, st)
    if act == "softmax":  # and with the dot's q scaled (no norm weights: SCALED)
        _assert_close(*_run(LENS, 3, 64, 64, act, BN=32, affine=False))
    text = "\n".join(res.remarks)
    if act == "softmax":
        # (acc * (1 / l): the inference kernel's normalization, attend(RECIP=True))
        assert "[residual-acc] missed: the product is transformed ('arith.mulf')" in text
    else:
        assert "[residual-acc] applied" in text


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("scale, L, BN", [(-0.7, 32, None), (0.0, 40, 32), (-2.5, 72, 32),
                                          (1e9, 32, None), (-1e9, 72, 32)])
def test_softmax_scale_sign_zero_and_huge(scale, L, BN, affine):
    """The forward's softmax for any qk_scale: negative, zero with a partial last key tile (L =
    40 in 32-key tiles: the masked keys stay out), and so large that max(s) scale is past 2^31,
    where an exponent formed as fma(s, scale, -max(s) scale) would carry the product's rounding
    error (up to half an ulp, > 128) into exp2 and overflow: the output stays finite, the
    one-hot limit of the reference. Without the norms' weights the dot's q comes scaled
    (the kernel's SCALED: qk_scale log2(e) in q's fma constants), with them the scores."""
    x, k, v, offs, w = _inputs(LENS, 2, 32, L, act="softmax", affine=affine)
    args, consts, grid = _kernel_args(x, k, v, offs, w, "softmax", BN=BN)
    args[-3] = scale
    res = check_pass_numerics(flash_norm_attention_naive, args, constexprs=consts, grid=grid,
                              passes="default", num_warps=4)
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation="softmax", qk_scale=scale,
                                       return_stats=True, **w)
    _assert_close(res, ref, st)


@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_large_mean_layernorm(act):
    # |mean| >> std: the shifted one-pass statistics keep the variance; the reference's LN output
    # is O(1) while x is ~ 300
    res, ref, st = _run(LENS, 2, 64, 32, act, mean=300.0, seed=3)
    e = _assert_close(res, ref, st)
    assert e["fused"] < REF_TOL


def test_tiny_rows_layernorm():
    """Rows of magnitude 2^-80 whose values differ (their shifted squares underflow to 0 in
    fp32, their shifted sum does not): LayerNorm of such a row is (x - mean) / sqrt(eps), tiny
    but not 0, and the kernel must not take them for rows of one value (q = 0): the output's
    error against fp64 stays the other rows' (a guard on the sum of squares alone gave 1.0)."""
    x, k, v, offs, w = _inputs(LENS, 2, 64, 32, act="gelu_tanh", seed=7, affine=False)
    x[::2] = x[::2] * 2.0 ** -80
    args, consts, grid = _kernel_args(x, k, v, offs, w, "gelu_tanh")
    res = check_pass_numerics(flash_norm_attention_naive, args, constexprs=consts, grid=grid,
                              passes="default", num_warps=4)
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation="gelu_tanh", return_stats=True,
                                       **w)
    _assert_close(res, ref, st)
    t = slice(None, None, 2)
    assert float(x[t].abs().max()) < 2.0 ** -70
    for r in (res.before, res.after):
        assert rel_err(r["OUT"][t], ref[t]) < REF_TOL, rel_err(r["OUT"][t], ref[t])


@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
@pytest.mark.parametrize("mean", [300.0, 3000.0])
@pytest.mark.parametrize("affine", [True, False])
def test_constant_rows_layernorm(act, mean, affine):
    """Rows of one value among rows of |mean| >> std: LayerNorm gives beta (0 without affines)
    at rstd = 1 / sqrt(eps). q = x rstd + (-mean rstd) as one fma (the kernel's Q_FMA) would
    leave q off by half an ulp of |mean| rstd there, which GELU without a bias carries into
    z ~ 0, and the RMSNorm's rsqrt(eps) into a whole ulp of the output; the kernel gives such
    rows rstd 0 in q. Their output is the reference rounded to bf16 (or one ulp off: the
    reference's y is rounded once more in the kernel's z: within 3/4 of an ulp), their statistics
    exact."""
    x, k, v, offs, w = _inputs(LENS, 2, 64, 32, act=act, mean=mean, seed=3, affine=affine)
    x[::3] = mean
    # and rows of one value but one element a bf16 ulp above: the smallest variance a row of
    # bf16 values that are not all one can have, where |mean| rstd is largest (2^8 sqrt(N))
    value = float(torch.tensor(mean).bfloat16())
    ulp = 2.0 ** (math.floor(math.log2(value)) - 7)  # (bf16's spacing at the value)
    x[1::3] = value
    x[1::3, 1, 5] = value + ulp
    args, consts, grid = _kernel_args(x, k, v, offs, w, act)
    res = check_pass_numerics(flash_norm_attention_naive, args, constexprs=consts, grid=grid,
                              passes="default", num_warps=4)
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True, **w)
    _assert_close(res, ref, st)
    assert float(x[1, 1, 5]) == value + ulp  # (one ulp up, exactly)
    o = slice(1, None, 3)
    for r in (res.before, res.after):
        err = (r["OUT"][o].double() - ref[o].double()).abs().max().item()
        assert err <= 0.75 * ulp, (err, ulp)
    c = slice(None, None, 3)
    for r in (res.before, res.after):
        assert torch.equal(torch.as_tensor(r["MEAN"])[c], torch.full_like(st["mean"][c], value))
        rstd = torch.as_tensor(r["RSTD"])[c]
        assert torch.allclose(rstd, torch.full_like(rstd, 1e-5 ** -0.5), rtol=1e-6)
        assert torch.allclose(torch.as_tensor(r["RRMS"])[c], st["rrms"][c].float(), rtol=1e-3)
        err = (r["OUT"][c].double() - ref[c].double()).abs().max().item()
        assert err <= 0.75 * ulp, (err, ulp)  # (the output's rounding: half an ulp, and a bit)


@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_ragged_kv_length(act):
    # L = 40 in 16-wide tiles: the last KV tile is masked (p = 0, or -inf before the softmax)
    res, ref, st = _run(LENS, 2, 64, 40, act, BN=16, seed=17)
    _assert_close(res, ref, st)


def test_more_heads_than_a_cluster():
    # 20 heads: cluster-reduce picks 10 CTAs of 2 heads each (deferred: z is stored and re-read)
    res, ref, st = _run([7, 0, 18], 20, 16, 16, seed=13)
    _assert_close(res, ref, st)
    assert res.num_ctas == 10
    assert "each CTA handles up to 2 tiles" in "\n".join(res.remarks)


def test_float16():
    res, ref, st = _run(LENS, 2, 64, 32, "silu", dtype=torch.float16, seed=9)
    _assert_close(res, ref, st)
    assert res.after["OUT"].dtype == torch.float16


def test_gqa_and_no_affine():
    res, ref, st = _run(LENS, 4, 64, 32, Hkv=2, affine=False, seed=5)
    _assert_close(res, ref, st)


@pytest.mark.parametrize("spec, ctas", [
    ("cluster-reduce{cluster-size=2},epilogue-norm,residual-acc", 2),   # 2 heads per CTA
    ("cluster-reduce{exchange=global},epilogue-norm,residual-acc", 4),  # partials via L2
    ("cluster-reduce{gather=once},epilogue-norm,residual-acc", 4),      # totals read locally
    ("residual-acc", 1),                                                # no cluster
])
def test_pipeline_variants(spec, ctas):
    res, ref, st = _run(LENS, 4, 64, 64, passes=spec, BN=32, seed=7)
    _assert_close(res, ref, st)
    assert res.num_ctas == ctas


@pytest.mark.parametrize("L, BN", [(32, None), (24, 16)], ids=["one-kv-tile", "two-kv-tiles"])
def test_kv_tma_same_bits(L, BN):
    """KV_TMA (K and V by bulk tensor copies, zero past L, through the default passes) against
    the pointer loads: the same output and statistics, bit for bit (GQA; L = 24 over two tiles
    of 16, the second ragged)."""
    x, k, v, offs, w = _inputs(LENS, 4, 64, L, Hkv=2, act="softmax", seed=13)
    args, consts, grid = _kernel_args(x, k, v, offs, w, "softmax", BN=BN)
    outs = []
    for tma in (False, True):
        a = [t.clone() if isinstance(t, torch.Tensor) else t for t in args]
        res = check_pass_numerics(flash_norm_attention_naive, a, constexprs=dict(consts, KV_TMA=tma),
                                  grid=grid, passes="default", num_warps=4)
        outs.append(res.after)
    for name in ("OUT", "MEAN", "RSTD", "RRMS"):
        assert torch.equal(outs[0][name], outs[1][name]), name


@pytest.mark.parametrize("act", [pytest.param("gelu_tanh", marks=pytest.mark.slow), "softmax"])
def test_row_table_same_bits(act):
    """ROW_TABLE (each program reads its batch and rows from `row_block_table`, the op's default)
    against the binary search over the running block counts: the same rows, so the same bits,
    through the default passes; the table's dead entries (the upper-bound grid) write nothing."""
    from normfuse.ops.common import row_block_table
    x, k, v, offs, w = _inputs(LENS, 3, 64, 64, act=act, seed=13)
    args, consts, grid = _kernel_args(x, k, v, offs, w, act, BN=32)
    outs = []
    for table in (False, True):
        a = [t.clone() if isinstance(t, torch.Tensor) else t for t in args]
        if table:
            a[4] = row_block_table(offs, consts["BLOCK_M"], rows=x.shape[0])
            assert a[4].shape[0] == grid[0]
        res = check_pass_numerics(flash_norm_attention_naive, a,
                                  constexprs=dict(consts, ROW_TABLE=table), grid=grid,
                                  passes="default", num_warps=4)
        outs.append(res.after)
    for name in ("OUT", "MEAN", "RSTD", "RRMS"):
        assert not torch.isnan(outs[1][name].float()).any(), name
        assert torch.equal(outs[0][name], outs[1][name]), name


def test_launch_args_take_constexpr_defaults():
    # The prepared launch hands Triton every argument in kernel order; a constexpr the op leaves
    # out (KV_TMA unless asked for) takes its default, as in the binding that compiled the kernel.
    from normfuse.compiler import kernel_args
    fn = flash_norm_attention_naive
    cs = set(fn.constexprs)
    consts = {n: 7 for i, n in enumerate(fn.arg_names) if i in cs and n != "KV_TMA"}
    runtime = tuple(f"r{i}" for i in range(len(fn.arg_names) - len(cs)))
    args = kernel_args(fn, runtime, consts)
    assert len(args) == len(fn.arg_names)
    assert args[fn.arg_names.index("KV_TMA")] is False
    assert [a for a in args if isinstance(a, str)] == list(runtime)
    assert kernel_args(fn, runtime, dict(consts, KV_TMA=True))[fn.arg_names.index("KV_TMA")] is True
    with pytest.raises(TypeError, match="constexpr H has no value"):
        kernel_args(fn, runtime, {n: v for n, v in consts.items() if n != "H"})


def test_kv_tma_checks():
    """prepare_flash_norm_attention(kv_tma=True) refuses, in the user's terms, what bulk copies
    cannot read."""
    from normfuse.ops.flash_norm_attention import _check_kv_tma
    k = torch.zeros(2, 8, 1, 4, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"kv_tma needs rows of K and V \(HKV \* D = 4 elements\)"):
        _check_kv_tma("flash_norm_attention", k, k, 1, 4)
    big = torch.zeros(2 * 8 * 16 + 1, dtype=torch.bfloat16)
    odd = big[1:].view(2, 8, 1, 16)
    with pytest.raises(ValueError, match="kv_tma needs k 16-byte aligned"):
        _check_kv_tma("flash_norm_attention", odd, odd, 1, 16)
    ok = torch.zeros(2, 8, 1, 16, dtype=torch.bfloat16)
    _check_kv_tma("flash_norm_attention", ok, ok, 1, 16)


def test_ln_mma_checks():
    """prepare_flash_norm_attention(ln_mma=...) takes True, False or None, refused before
    anything else otherwise; its pass list is the default's and prefetch-loads, which the default
    leaves out. None (the default) resolves to the MMA layout with MMA_FNA_PASSES exactly where
    the pipeline is the default one (tuple or list) and no norm weight is given."""
    import re
    from normfuse.ops.flash_norm_attention import (DEFAULT_FNA_PASSES, MMA_FNA_PASSES,
                                                   prepare_flash_norm_attention)
    mod = _fna_module()
    x, k, v, offs, w = _op_inputs()
    for bad in ("mma", 1, 0):
        with pytest.raises(ValueError, match=re.escape(
                f"ln_mma must be True, False or None, got {bad!r}")):
            prepare_flash_norm_attention(x, k, v, offs, ln_mma=bad)
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):  # (None accepted)
        prepare_flash_norm_attention(x, k, v, offs, ln_mma=None)
    one = torch.ones(4)
    resolve = lambda ln_mma, passes, *wts: mod._resolve_ln_mma(  # noqa: E731
        "op", ln_mma, passes, *(list(wts) + [None] * 3)[:3])
    assert mod.DEFAULT_LN_MMA
    assert resolve(None, DEFAULT_FNA_PASSES) == (True, MMA_FNA_PASSES)
    assert resolve(None, list(DEFAULT_FNA_PASSES)) == (True, MMA_FNA_PASSES)
    for wts in ((one,), (None, one), (None, None, one)):  # any weight: the loads' layout
        assert resolve(None, DEFAULT_FNA_PASSES, *wts) == (False, DEFAULT_FNA_PASSES)
    for passes in (DEFAULT_FNA_PASSES[:-1], (), ",".join(DEFAULT_FNA_PASSES), None):
        assert resolve(None, passes) == (False, passes)
    assert resolve(False, DEFAULT_FNA_PASSES) == (False, DEFAULT_FNA_PASSES)
    assert resolve(True, DEFAULT_FNA_PASSES, one) == (True, DEFAULT_FNA_PASSES)
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):  # (accepted: on to the next)
        prepare_flash_norm_attention(x, k, v, offs, ln_mma=True, passes=MMA_FNA_PASSES)
    assert MMA_FNA_PASSES == DEFAULT_FNA_PASSES + ("prefetch-loads",)
    assert not any(p.startswith("prefetch-loads") for p in DEFAULT_FNA_PASSES)


@pytest.mark.parametrize("act", [pytest.param("gelu_tanh", marks=pytest.mark.slow), "softmax"])
def test_gather_once_same_bits(act):
    """cluster-reduce{gather=once} (each exchange's totals summed once per row into the CTA's own
    slots and read locally; fewer ptxas spills) against the default pipeline: the same bits in
    the output and the saved statistics."""
    a, *_ = _run(LENS, 3, 64, 64, act, seed=12)
    b, *_ = _run(LENS, 3, 64, 64, act, seed=12,
                 passes="cluster-reduce{gather=once},epilogue-norm,residual-acc")
    assert a.num_ctas == b.num_ctas == 3
    for name in ("OUT", "MEAN", "RSTD", "RRMS"):
        assert torch.equal(a.after[name], b.after[name]), name


@pytest.mark.parametrize("act, H, BN", [("softmax", 3, None), ("gelu_tanh", 2, 32)],
                         ids=["softmax-one-kv-tile", "gelu-two-kv-tiles"])
def test_early_loads_same_bits(act, H, BN):
    """cluster-reduce{early-loads=true}: x, K and V, which nothing in the kernel stores to, load
    between the cluster barrier's arrive and wait (the exchange's latency hides theirs; fewer
    ptxas spills); the same values reach the same arithmetic: the same bits, and the remark
    names what moved. With two KV tiles the K / V loads sit in the key loop and stay."""
    base = "cluster-reduce{gather=once},epilogue-norm,residual-acc"
    a, *_ = _run(LENS, H, 64, 64, act, seed=14, BN=BN, passes=base)
    b, *_ = _run(LENS, H, 64, 64, act, seed=14, BN=BN,
                 passes=base.replace("once}", "once,early-loads=true}"))
    assert a.num_ctas == b.num_ctas == H
    for name in ("OUT", "MEAN", "RSTD", "RRMS"):
        assert torch.equal(a.after[name], b.after[name]), name
    applied = "\n".join(b.applied)
    assert "early-loads: " not in "\n".join(a.applied)
    import re
    names = set(re.search(r"early-loads: \d+ loads \(of ([^)]*)\)", applied).group(1).split(", "))
    # (with two KV tiles the K / V loads are in the key loop: not looked into)
    assert names == ({"X", "LNW", "LNB", "RMSW"} | ({"K", "V"} if BN is None else set())), names


@pytest.mark.parametrize("BN", [None, 16], ids=["one-kv-tile", "two-kv-tiles"])
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_training_forward_saves_g_and_lse(act, BN):
    """flash_norm_attention_save_naive (the training forward): through the default passes
    (epilogue-norm still forwards the tile: the saved tiles are side outputs) its g within bf16
    rounding of the fp64 attention output, its lse (softmax) within fp32 rounding of the fp64
    log-sum-exp, naive and fused alike; its output bitwise the inference kernel's with one KV
    tile for GDPA (softmax's inference kernel forms q as one fma and normalizes by a reciprocal:
    within the naive error's bound there) and within the naive error's bound with two (where
    residual-acc, which would start the stored accumulator at ln_q, must leave it alone)."""
    from normfuse.kernels.attention import flash_norm_attention_save_naive
    x, k, v, offs, w = _inputs(LENS, 2, 16, 32, act=act)
    args, consts, grid = _kernel_args(x, k, v, offs, w, act, BN=BN)
    T = x.shape[0]
    gs = torch.full(tuple(x.shape), float("nan")).to(x.dtype)
    lse = torch.full((T, 2), float("nan"))
    plain = check_pass_numerics(flash_norm_attention_naive, args, constexprs=consts, grid=grid,
                                passes="default", num_warps=4)
    res = check_pass_numerics(flash_norm_attention_save_naive, args[:12] + [gs, lse] + args[12:],
                              constexprs=consts, grid=grid, passes="default", num_warps=4)
    assert any("[epilogue-norm] applied" in r for r in res.remarks), res.remarks
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True, **w)
    if BN is None and act != "softmax":
        assert torch.equal(res.after["OUT"], plain.after["OUT"])
    else:
        assert rel_err(res.after["OUT"], ref) <= 1.5 * rel_err(res.before["OUT"], ref) + 1e-4
    for r in (res.before, res.after):
        assert rel_err(r["GS"], st["g"].double()) < 5e-3
        if act == "softmax":
            assert float((r["LSE"] - st["lse"]).abs().max()) < 1e-3
        else:
            assert torch.isnan(r["LSE"]).all()  # GDPA: never written


@pytest.mark.parametrize("act", ["gelu_tanh", "silu"])
def test_forward_large_scores_tanh(act):
    """Keys 12x the other tests' (|s| to ~40): GELU and SiLU through tanh.approx, whose error
    turns absolute on the negative tail (|h| 2^-11, the interpreter's model of the ISA's bound,
    taken in full): the attention output g (the training forward's saved tile, bf16) stays
    within the bf16 bound the other tests hold it to."""
    from normfuse.kernels.attention import flash_norm_attention_save_naive
    x, k, v, offs, w = _inputs(LENS, 2, 16, 32, act=act)
    k = (k.float() * 12).to(k.dtype)
    args, consts, grid = _kernel_args(x, k, v, offs, w, act)
    T = x.shape[0]
    gs = torch.full(tuple(x.shape), float("nan")).to(x.dtype)
    lse = torch.full((T, 2), float("nan"))
    res = check_pass_numerics(flash_norm_attention_save_naive, args[:12] + [gs, lse] + args[12:],
                              constexprs=consts, grid=grid, passes="default", num_warps=4)
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True, **w)
    q = torch.nn.functional.layer_norm(x.double().reshape(T, -1), (2 * 16,)).reshape(T, 2, 16)
    s = max(float(torch.einsum("thd,lhd->thl", q[int(offs[b]):int(offs[b + 1])],
                               k[b].double()).min()) for b in range(len(LENS)) if LENS[b])
    assert s < -20  # (the scores do reach the negative tail; the norm weights scale them more)
    for r in (res.before, res.after):
        assert rel_err(r["GS"], st["g"].double()) < 5e-3
    _assert_close(res, ref, st)


def _float_ops(ptx: str) -> dict:
    import collections
    import re
    return collections.Counter(re.findall(r"^\s*((?:fma|mul|add|sub|div)[.a-z]*\.f32|rsqrt[.a-z]*\.f32)\b",
                                          ptx, re.M))


def test_training_forward_walk_same_float_ops_in_ptx():
    """The training forward walking 128 rows per program and the same kernel one row block per
    program, compiled for sm_90 on the CPU (softmax, H = 3, D = 128, one KV tile: the GPU test's
    shape): the same count of each fp32 arithmetic instruction in the PTX. The interpreter cannot
    see the multiply-adds that LLVM contracts into fma differently in the two programs (it did
    for `shift + s1 / N` before the statistics spelled their fma: the H200's bits parted,
    2026-12-04); a different count is such a split."""
    from normfuse.ops.flash_norm_attention import DEFAULT_FNA_PASSES, _launcher
    from normfuse.testing.fake_driver import fused_on_cpu
    x, k, v, offs, w = _inputs([300, 0, 1, 77], 3, 128, 128, act="softmax", seed=3)
    args, consts, _ = _kernel_args(x, k, v, offs, w, "softmax", BM=64, BN=128)
    T = x.shape[0]
    args = args[:12] + [torch.empty_like(x), torch.empty(T, 3)] + args[12:]
    counts = []
    with fused_on_cpu():
        for rows in ({}, {"ROWS": 128}):
            ck = _launcher(DEFAULT_FNA_PASSES, True).warmup(*args, **consts, **rows, num_warps=4,
                                                              num_stages=2)
            counts.append(_float_ops(ck.asm["ptx"]))
    assert counts[0]["rsqrt.approx.ftz.f32"] > 0 and counts[0]["fma.rn.f32"] > 0, counts[0]
    assert counts[0] == counts[1], (counts[0] - counts[1], counts[1] - counts[0])


@pytest.mark.parametrize("act", [pytest.param("gelu_tanh", marks=pytest.mark.slow), "softmax"])
def test_training_forward_walk_same_bits(act):
    """The training forward (g and lse saved) walking two row blocks per program through the
    op's default passes (early-loads, hoist-loads: K and V loaded once per program), against one
    row block per program through the same passes: the same bits in every output."""
    from normfuse.kernels.attention import flash_norm_attention_save_naive
    from normfuse.ops.common import row_block_table
    from normfuse.ops.flash_norm_attention import DEFAULT_FNA_PASSES
    x, k, v, offs, w = _inputs([5, 0, 40, 19], 2, 16, 32, act=act, seed=5)
    args, consts, grid = _kernel_args(x, k, v, offs, w, act)
    T = x.shape[0]

    def run(a, consts, grid):
        a = [t.clone() if isinstance(t, torch.Tensor) else t for t in a]
        gs = torch.full(tuple(x.shape), float("nan")).to(x.dtype)
        lse = torch.full((T, 2), float("nan"))
        return check_pass_numerics(flash_norm_attention_save_naive, a[:12] + [gs, lse] + a[12:],
                                   constexprs=consts, grid=grid, passes=",".join(DEFAULT_FNA_PASSES),
                                   num_warps=4)
    flat_args = list(args)
    flat_args[4] = row_block_table(offs, 16, rows=T)
    flat = run(flat_args, dict(consts, ROW_TABLE=True), (flat_args[4].shape[0],))
    walk_args = list(args)
    walk_args[4] = row_block_table(offs, 32, rows=T)
    walk = run(walk_args, dict(consts, ROWS=32), (walk_args[4].shape[0],))
    assert any("2 loop-invariant loads (of K, V) hoisted" in r for r in walk.applied), walk.remarks
    for name in ("OUT", "MEAN", "RSTD", "RRMS", "GS") + (("LSE",) if act == "softmax" else ()):
        assert not torch.isnan(torch.as_tensor(walk.after[name]).float()).any(), name
        assert torch.equal(torch.as_tensor(flat.after[name]), torch.as_tensor(walk.after[name])), name


def test_default_walk_shortens_for_small_grids(monkeypatch):
    """rows_per_program=None: ROWS_PER_PROGRAM rows a program while the grid keeps
    WALK_MIN_CTAS_PER_SM CTAs per SM, halved below that, one row block a program (0) at the end;
    exact counts from the host offsets."""
    import normfuse.device as device
    mod = _fna_module()
    monkeypatch.setattr(device, "sm_count", lambda dev: 132)
    cuda = torch.device("cuda")
    need = mod.WALK_MIN_CTAS_PER_SM * 132
    lens = torch.full((768,), 500)
    host = torch.cat([torch.zeros(1, dtype=torch.int64), lens.cumsum(0)])
    T = int(host[-1])
    assert mod._default_walk(T, 768, 2, 64, host, cuda)[0] == mod.ROWS_PER_PROGRAM == 512
    # 16 sequences of 4096 rows, 2 heads: 256 / 512 CTAs at 512 / 256 rows, 1024 at 128
    host = torch.arange(17, dtype=torch.int64) * 4096
    assert 512 < need <= 1024
    assert mod._default_walk(16 * 4096, 16, 2, 64, host, cuda)[0] == 128
    assert mod._default_walk(1442, 6, 3, 64, None, cuda)[0] == 0  # the GPU tests' lengths: flat
    assert mod._default_walk(1442, 6, 3, 64, None, torch.device("cpu"))[0] == 512


@pytest.mark.parametrize("act, H, BN, save, affine", [
    ("softmax", 2, None, False, True), ("gelu_tanh", 4, 16, False, True),
    ("gelu_tanh", 2, None, True, True), ("softmax", 2, 16, False, False),
    ("softmax", 2, None, True, False),
    pytest.param("softmax", 4, None, True, True, marks=pytest.mark.slow)],
    ids=["softmax-h2", "gelu-h4-two-kv-tiles", "gelu-h2-save", "softmax-h2-scaled-two-kv-tiles",
         "softmax-h2-save", "softmax-h4-save"])
def test_ln_mma_same_bits(act, H, BN, save, affine):
    """LN_MMA (`prepare_flash_norm_attention(ln_mma=True)`: x through `_in_mma`'s product of
    zeros, the LayerNorm in the MMA layout) through `MMA_FNA_PASSES` against the default kernel
    (LN_MMA off: no anchor, its TTIR unchanged) through `DEFAULT_FNA_PASSES`, walking two row
    blocks per program, with the norms' weights and -0.0 in x, the inference and the training
    forward: the same bits in every output, before and after the passes (the interpreter; on the
    GPU the row sums run in another order and may round differently:
    test_gpu_launch_variants_same_bits)."""
    from normfuse.ops.common import row_block_table
    from normfuse.ops.flash_norm_attention import DEFAULT_FNA_PASSES, MMA_FNA_PASSES
    x, k, v, offs, w = _inputs([5, 0, 40, 19], H, 16, 32, act=act, seed=21, affine=affine)
    x[3, 0, 0] = x[7, 1, 5] = -0.0  # (`_in_mma` gives +0.0 back)
    x[9] = 2.5  # (rows of one value: q = 0 in every layout and form)
    x[30] = -0.0
    args, consts, _ = _kernel_args(x, k, v, offs, w, act, BN=BN)
    T = x.shape[0]
    args[4] = row_block_table(offs, 32, rows=T)
    runs = [_walk_run(args, x, save, MMA_FNA_PASSES if mma else DEFAULT_FNA_PASSES,
                      **dict(consts, ROWS=32, LN_MMA=mma)) for mma in (False, True)]
    default, mma = runs
    if BN is None:  # (with two KV tiles the innermost loop with dots is the KV loop: no x in it)
        assert any("[prefetch-loads] applied: 1 tile load (of X)" in r for r in mma.remarks), \
            mma.remarks
    # the attention's two dots; LN_MMA adds the anchors (statistics, q, the two residuals)
    assert default.ir_before.count("tt.dot ") == 2, default.ir_before
    assert mma.ir_before.count("tt.dot ") == 6
    names = ("OUT", "MEAN", "RSTD", "RRMS") + (("GS",) if save else ()) + (
        ("LSE",) if save and act == "softmax" else ())
    for name in names:
        for a, b in ((default.before, mma.before), (default.after, mma.after)):
            assert not torch.isnan(torch.as_tensor(b[name]).float()).any(), name
            assert torch.equal(torch.as_tensor(a[name]), torch.as_tensor(b[name])), name


def _walk_run(args, x, save: bool, passes, **consts):
    """`check_pass_numerics` of the inference (or, `save`, the training) forward kernel on a
    copy of `args` (the training kernel's GS and LSE NaN-filled), one program a row-table
    entry, under `passes` with the constexprs `consts`."""
    from normfuse.kernels.attention import flash_norm_attention_save_naive
    a = [t.clone() if isinstance(t, torch.Tensor) else t for t in args]
    fn = flash_norm_attention_naive
    if save:
        T, H = x.shape[:2]
        fn = flash_norm_attention_save_naive
        a = a[:12] + [torch.full(tuple(x.shape), float("nan")).to(x.dtype),
                      torch.full((T, H), float("nan"))] + a[12:]
    return check_pass_numerics(fn, a, constexprs=consts, grid=(a[4].shape[0],),
                               passes=",".join(passes), num_warps=4)


def _walk_cluster_barriers(ttir: str) -> tuple[int, int]:
    """(cluster barrier arrives in the walk's loop body, in the whole function) of the TTIR after
    the passes: the walk is the function body's scf.for (4 spaces in), its body 6 spaces in."""
    inside = total = 0
    in_walk = False
    for line in ttir.splitlines():
        if line.startswith("    ") and not line.startswith("     "):
            in_walk = in_walk if line.strip() == "}" and not in_walk else "scf.for" in line
            if line.strip() == "}":
                in_walk = False
        n = line.count("barrier.cluster.arrive")
        total += n
        if in_walk and line.startswith("      "):
            inside += n
    return inside, total


# lengths for the walk at 16-row blocks, 32 rows a program: a partial single block (5), empty
# sequences, one row, a walk of two full blocks then a chunk of one partial block (40), two
# blocks the last partial (19), a walk whose second chunk is one row (33), two whole chunks (64)
AHEAD_LENS = [5, 0, 40, 19, 1, 33, 0, 64]


@pytest.mark.parametrize("act, H, mma, save, rows, BN", [
    ("softmax", 2, False, False, 32, None), ("gelu_tanh", 2, False, False, 48, None),
    ("softmax", 3, True, False, 32, None), ("gelu_tanh", 3, True, False, 32, None),
    ("softmax", 3, False, False, 32, 16), ("gelu_tanh", 2, True, True, 32, None),
    pytest.param("softmax", 2, False, True, 48, None, marks=pytest.mark.slow),
    pytest.param("gelu_tanh", 3, False, False, 32, 16, marks=pytest.mark.slow)],
    ids=["softmax-h2", "gelu-h2-walk48", "softmax-h3-mma", "gelu-h3-mma", "softmax-h3-two-kv-tiles",
         "gelu-h2-mma-save", "softmax-h2-save-walk48", "gelu-h3-two-kv-tiles"])
def test_stats_ahead_same_bits(act, H, mma, save, rows, BN):
    """One cluster exchange a row block (`prepare_flash_norm_attention(stats_ahead=True)`): the
    STATS_AHEAD walk (row block i + 1's LayerNorm sums between block i's attention and its
    RMSNorm) through the op's pipeline with `cluster-reduce{merge=true}`, and its carry form
    (`stats_ahead="carry"`: STATS_AHEAD = 2, `reuse-loads{across-trips=values}` carrying the
    next block's x, as the sums converted it, to the next trip), against the default walk
    through the default pipeline, on jagged lengths with empty sequences, one-row and partial
    last blocks and walks of one to three blocks: the same bits in every output, before and
    after the passes, and within the reference's tolerance; after the passes the walk's body
    has one cluster barrier (the default two) and the kernel one before the walk; the carry
    form's walk carries x and loads its tile once a trip (the ahead walk twice)."""
    from normfuse.ops.common import row_block_table
    from normfuse.ops.flash_norm_attention import (AHEAD_FNA_PASSES, AHEAD_MMA_FNA_PASSES,
                                                   CARRY_FNA_PASSES, CARRY_MMA_FNA_PASSES,
                                                   DEFAULT_FNA_PASSES, MMA_FNA_PASSES)
    x, k, v, offs, w = _inputs(AHEAD_LENS, H, 16, 32, act=act, seed=31, affine=not mma)
    x[9] = 2.5  # (a row of one value)
    x[12, 1, 3] = -0.0  # (a negative zero, which the MMA layout's anchor makes +0)
    args, consts, _ = _kernel_args(x, k, v, offs, w, act, BN=BN)
    T = x.shape[0]
    args[4] = row_block_table(offs, rows, rows=T)
    passes = {0: MMA_FNA_PASSES if mma else DEFAULT_FNA_PASSES,
              1: AHEAD_MMA_FNA_PASSES if mma else AHEAD_FNA_PASSES,
              2: CARRY_MMA_FNA_PASSES if mma else CARRY_FNA_PASSES}
    runs = [_walk_run(args, x, save, passes[ahead],
                      **dict(consts, ROWS=rows, LN_MMA=mma, STATS_AHEAD=ahead))
            for ahead in (0, 1, 2)]
    default = runs[0]
    for ahead in runs[1:]:
        text = "\n".join(ahead.remarks)
        assert "[cluster-reduce] applied: merge: 2 row statistics of 1 loop" in text, text
        assert "exchanged once before it" in text, text
        assert "[epilogue-norm] applied" in text, text
        if BN is None:  # (K and V whole: loaded once a program, as in the default walk)
            assert "[hoist-loads] applied: 2 loop-invariant loads (of K, V)" in text, text
        assert _walk_cluster_barriers(ahead.ir_after) == (1, 3), ahead.ir_after
    assert _walk_cluster_barriers(default.ir_after) == (2, 3), default.ir_after
    carry_text = "\n".join(runs[2].remarks)
    assert "[reuse-loads] applied: across-trips: 1 value (of X)" in carry_text, carry_text
    # the walk's [16, D] tile loads (x's; K's and V's too with two KV tiles): x's once less
    # (twice with two KV tiles: the residual's load after the KV loop, which reuse-loads keeps
    # within a trip, is the carried value's too)
    tile = f": tensor<16x{x.shape[2]}x!tt.ptr<{'bf16' if x.dtype == torch.bfloat16 else 'f16'}>>"
    loads = lambda ir: sum(1 for ln in ir[ir.index("scf.for"):].splitlines()  # noqa: E731
                           if "tt.load" in ln and tile in ln)
    assert loads(runs[1].ir_after) - loads(runs[2].ir_after) >= 1, carry_text
    names = ("OUT", "MEAN", "RSTD", "RRMS") + (("GS",) if save else ()) + (
        ("LSE",) if save and act == "softmax" else ())
    for ahead in runs[1:]:
        for name in names:
            for a, b in ((default.before, ahead.before), (default.after, ahead.after)):
                assert not torch.isnan(torch.as_tensor(b[name]).float()).any(), name
                assert torch.equal(torch.as_tensor(a[name]), torch.as_tensor(b[name])), name
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True, **w)
    for ahead in runs[1:]:
        _assert_close(ahead, ref, st)


def test_stats_ahead_merge_refused_leaves_every_statistics_loop_whole(monkeypatch, tmp_path):
    """cluster-reduce{merge=true} where the statistics loop in the walk does not qualify (here
    refused by a stubbed check): the missed remark, no merged exchange, and the loop before the
    walk left whole too (exchanging it alone would sum row block 0's statistics in another
    order than the later blocks'): the walk's body keeps the RMSNorm's exchange only, no
    exchange before the walk, and the outputs are the default walk's bits."""
    from normfuse.passes import cluster_reduce as cr
    from normfuse.ops.common import row_block_table
    from normfuse.ops.flash_norm_attention import AHEAD_FNA_PASSES, DEFAULT_FNA_PASSES
    real = cr._check_prologue

    def refuse_in_walk(lp, trips, rows):  # (the loops inside the walk: the mids)
        outer = lp.block.parent_op
        if outer is not None and outer.name == cr.FOR:
            return "stubbed refusal"
        return real(lp, trips, rows)
    x, k, v, offs, w = _inputs(AHEAD_LENS, 2, 16, 32, act="softmax", seed=31, affine=True)
    args, consts, _ = _kernel_args(x, k, v, offs, w, "softmax")
    args[4] = row_block_table(offs, 32, rows=x.shape[0])
    runs = []
    for ahead, passes in ((0, DEFAULT_FNA_PASSES), (1, AHEAD_FNA_PASSES)):
        if ahead:  # (its own Triton cache: the stub is not in the cache's key, the passes'
            # sources are, and the same kernel compiled without it may be there already)
            monkeypatch.setattr(cr, "_check_prologue", refuse_in_walk)
            monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
        runs.append(_walk_run(args, x, False, passes,
                              **dict(consts, ROWS=32, LN_MMA=False, STATS_AHEAD=ahead)))
    text = "\n".join(runs[1].remarks)
    assert "missed: merge: statistics loop between the GEMM loop and the normalizing loop not " \
           "merged: stubbed refusal" in text, text
    assert "applied: merge:" not in text, text
    # one exchange in the walk (the RMSNorm's), none before it, the barrier before the return
    assert _walk_cluster_barriers(runs[1].ir_after) == (1, 2), runs[1].ir_after
    for name in ("OUT", "MEAN", "RSTD", "RRMS"):
        for a, b in ((runs[0].before, runs[1].before), (runs[0].after, runs[1].after)):
            assert torch.equal(torch.as_tensor(a[name]), torch.as_tensor(b[name])), name


def test_stats_ahead_default_is_the_carry_form_of_the_mma_kernel():
    """stats_ahead=None (prepare_flash_norm_attention's default and the op's): the carry form
    for the forward, inference and training alike, with the LayerNorm in the MMA layout through
    MMA_FNA_PASSES (what ln_mma=None picks without norm weights: the form timed); the
    two-exchange walk for the loads' layout (the weighted forms) and any other pass list;
    explicit values as given."""
    import importlib
    fna = importlib.import_module("normfuse.ops.flash_norm_attention")
    r = fna._resolve_stats_ahead
    assert fna.DEFAULT_STATS_AHEAD == "carry"
    assert r("op", None, True, fna.MMA_FNA_PASSES) == "carry"
    assert r("op", None, True, list(fna.MMA_FNA_PASSES)) == "carry"
    assert r("op", None, False, fna.DEFAULT_FNA_PASSES) is False  # (loads' layout)
    assert r("op", None, True, fna.DEFAULT_FNA_PASSES) is False  # (another pass list)
    assert r("op", None, True, ",".join(fna.MMA_FNA_PASSES)) is False  # (a string)
    for given in (False, True, "carry"):
        assert r("op", given, True, fna.MMA_FNA_PASSES) == given
    # what the op's default arguments resolve to: the MMA layout, then the carry form
    ln_mma, passes = fna._resolve_ln_mma("op", None, fna.DEFAULT_FNA_PASSES, None, None, None)
    assert (ln_mma, passes) == (fna.DEFAULT_LN_MMA, fna.MMA_FNA_PASSES)
    assert r("op", None, ln_mma, passes) == ("carry" if ln_mma else False)


def test_with_merge_adds_the_option_to_cluster_reduce():
    from normfuse.ops.flash_norm_attention import (AHEAD_FNA_PASSES, DEFAULT_FNA_PASSES,
                                                   with_merge)
    assert AHEAD_FNA_PASSES[0] == "cluster-reduce{gather=once,early-loads=true,merge=true}"
    assert AHEAD_FNA_PASSES[1:] == DEFAULT_FNA_PASSES[1:]
    assert with_merge(("cluster-reduce", "epilogue-norm")) == ("cluster-reduce{merge=true}",
                                                               "epilogue-norm")
    assert with_merge(AHEAD_FNA_PASSES) == AHEAD_FNA_PASSES


def test_stats_ahead_checks():
    """prepare_flash_norm_attention(stats_ahead=...) takes None (the default), False, True or
    "carry" and refuses anything else (1 and 0 too) before anything else is checked."""
    import re
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    x, k, v, offs, w = _op_inputs()
    for bad in ("ahead", 1, 0, "none"):
        with pytest.raises(ValueError, match=re.escape(
                f"stats_ahead must be None, False, True or 'carry', got {bad!r}")):
            prepare_flash_norm_attention(x, k, v, offs, stats_ahead=bad)
    for good in (None, False, True, "carry"):  # (accepted: the next check is the device's)
        with pytest.raises(ValueError, match="x must be a CUDA tensor"):
            prepare_flash_norm_attention(x, k, v, offs, stats_ahead=good)


def test_with_carry_adds_across_trips_to_reuse_loads():
    from normfuse.ops.flash_norm_attention import (AHEAD_MMA_FNA_PASSES, CARRY_MMA_FNA_PASSES,
                                                   MMA_FNA_PASSES, with_carry)
    assert CARRY_MMA_FNA_PASSES[0] == AHEAD_MMA_FNA_PASSES[0]  # (merge=true)
    assert "reuse-loads{across-dots=true,across-trips=values}" in CARRY_MMA_FNA_PASSES
    assert len(CARRY_MMA_FNA_PASSES) == len(MMA_FNA_PASSES)
    assert with_carry(("cluster-reduce", "reuse-loads")) == (
        "cluster-reduce{merge=true}", "reuse-loads{across-trips=values}")
    assert with_carry(CARRY_MMA_FNA_PASSES) == CARRY_MMA_FNA_PASSES


def test_subst_trip_reads_the_next_and_the_first_trip():
    from normfuse.ir.affine import TRIP, Poly, subst_trip
    t = Poly.atom(TRIP)
    f = ("ptr", "X", Poly.atom(("arith.extsi", "i64", (Poly.const(64) + t.scale(64),), "", 0)))
    nxt = subst_trip(f, t + Poly.const(1))
    assert nxt == ("ptr", "X", Poly.atom(("arith.extsi", "i64", (Poly.const(128) + t.scale(64),),
                                          "", 0)))
    assert subst_trip(f, Poly.const(0)) == ("ptr", "X", Poly.atom(
        ("arith.extsi", "i64", (Poly.const(64),), "", 0)))
    assert subst_trip(("tt.load", ("iter", 0, 1)), t) is None


def test_naive_matches_reference_unchanged():
    res, ref, st = _run([3, 17], 2, 64, 32, passes=())
    assert not res.changed
    _assert_close(res, ref, st)


# ---------------------------------------------------------------------------------------------
# The op and the module: input checks (CPU) and numerics (GPU)
# ---------------------------------------------------------------------------------------------

def _op_inputs(device="cpu", **kw):
    x, k, v, offs, w = _inputs([5, 0, 1, 19], 2, 64, 32, **kw)
    return x.to(device), k.to(device), v.to(device), offs.to(device), {n: t.to(device) for n, t in w.items()}


@pytest.mark.parametrize("change, match, exc", [
    (lambda a: a.update(k=a["k"][:, :, :1].repeat(1, 1, 3, 1), v=a["v"][:, :, :1].repeat(1, 1, 3, 1)),
     "mismatched heads: x has 2 heads, k/v 3", ValueError),
    (lambda a: a.update(offsets=torch.tensor([0, 7, 5, 25, 25], dtype=torch.int32)),
     "offsets must be non-decreasing", ValueError),
    (lambda a: a.update(offsets=torch.tensor([0, 5, 6, 25], dtype=torch.int32)),
     "offsets must have B \\+ 1 = 5 entries", ValueError),
    (lambda a: a.update(offsets=torch.tensor([0, 5, 5, 6, 24], dtype=torch.int32)),
     "offsets must start at 0 and end at T = 25", ValueError),
    (lambda a: a.update(offsets=a["offsets"].float()), "offsets must be int32 or int64", TypeError),
    (lambda a: a.update(x=a["x"].float()), "k must have x's dtype torch.float32", TypeError),
    (lambda a: a.update(x=a["x"].int(), k=a["k"].int(), v=a["v"].int()),
     "x must be bfloat16, float16, float32 or float64", TypeError),
    (lambda a: a.update(k=a["k"].half()), "k must have x's dtype", TypeError),
    (lambda a: a.update(ln_weight=a["ln_weight"][:-1]), "ln_weight must have H \\* D = 128", ValueError),
    (lambda a: a.update(rms_weight=a["rms_weight"].half()), "rms_weight must have x's dtype", TypeError),
    (lambda a: a.update(activation="gelu"), "unknown activation 'gelu'", ValueError),
    (lambda a: a.update(x=a["x"][:, :, :32]), "head dim of k/v \\(64\\) differs from x's \\(32\\)", ValueError),
])
def test_bad_input(change, match, exc):
    from normfuse.ops import flash_norm_attention
    x, k, v, offs, w = _op_inputs()
    a = dict(x=x, k=k, v=v, offsets=offs, **w)
    change(a)
    with pytest.raises(exc, match=match):
        flash_norm_attention(a.pop("x"), a.pop("k"), a.pop("v"), a.pop("offsets"), **a)


def test_module_from_modules_copies_norms():
    from normfuse.nn import FlashNormAttention
    ln = torch.nn.LayerNorm(256, eps=1e-6)
    rms = torch.nn.RMSNorm(256, eps=1e-5)
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()
        rms.weight.normal_()
    m = FlashNormAttention.from_modules(ln, rms, 4, activation="silu")
    assert (m.num_heads, m.head_dim, m.activation, m.eps, m.rms_eps) == (4, 64, "silu", 1e-6, 1e-5)
    assert torch.equal(m.ln_weight, ln.weight) and torch.equal(m.ln_bias, ln.bias)
    assert torch.equal(m.rms_weight, rms.weight)
    plain = FlashNormAttention.from_modules(torch.nn.LayerNorm(128, elementwise_affine=False),
                                            torch.nn.RMSNorm(128, elementwise_affine=False), 2)
    assert plain.ln_weight is None and plain.ln_bias is None and plain.rms_weight is None
    with pytest.raises(ValueError, match="do not split into 3 heads"):
        FlashNormAttention.from_modules(ln, rms, 3)
    with pytest.raises(TypeError, match="layer_norm must be an nn.LayerNorm"):
        FlashNormAttention.from_modules(rms, rms, 4)


# -- GPU -----------------------------------------------------------------------------------------

GPU_LENS = [300, 0, 1, 77, 1000, 64]


def _gpu_case(H, D, act, *, L=128, Hkv=None, mean=0.0, affine=True, seed=0):
    x, k, v, offs, w = _inputs(GPU_LENS, H, D, L, Hkv=Hkv, mean=mean, affine=affine, seed=seed)
    return x.cuda(), k.cuda(), v.cuda(), offs.cuda(), {n: t.cuda() for n, t in w.items()}


GPU_MATRIX = ([(h, d, "gelu_tanh") for h in (1, 2, 3, 4, 8) for d in (64, 128)]
              + [(3, 128, a) for a in ("silu", "relu", "relu2", "softmax")] + [(8, 64, "softmax")])


@gpu
@pytest.mark.parametrize("H, D, act", GPU_MATRIX)
def test_gpu_forward(H, D, act):
    from normfuse.ops import flash_norm_attention_fwd
    x, k, v, offs, w = _gpu_case(H, D, act, mean=40.0 if act == "relu" else 0.0, seed=H * D)
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True, **w)
    eager = flash_norm_attention_ref(x, k, v, offs, activation=act, dtype=x.dtype, **w)
    out, mean, rstd, rrms = flash_norm_attention_fwd(x, k, v, offs, activation=act, **w)
    torch.cuda.synchronize()
    e_fused, e_eager = rel_err(out, ref), rel_err(eager, ref)
    assert e_fused <= 1.5 * e_eager + 1e-4, (e_fused, e_eager)
    if H in (2, 3) and act in ("gelu_tanh", "softmax"):  # the naive kernel (no passes) on the GPU too
        naive, *_ = flash_norm_attention_fwd(x, k, v, offs, activation=act, passes=(), **w)
        assert e_fused <= 1.5 * rel_err(naive, ref) + 1e-4
    for got, name in ((mean, "mean"), (rstd, "rstd"), (rrms, "rrms")):
        want = st[name].to(got.device)
        assert torch.allclose(got, want, rtol=2e-3, atol=2e-3 * float(want.abs().max())), name


@gpu
@pytest.mark.parametrize("L", [64, 256])
def test_gpu_kv_lengths_and_gqa(L):
    from normfuse.ops import flash_norm_attention
    x, k, v, offs, w = _gpu_case(4, 128, "gelu_tanh", L=L, Hkv=2)
    ref = flash_norm_attention_ref(x, k, v, offs, **w)
    eager = flash_norm_attention_ref(x, k, v, offs, dtype=x.dtype, **w)
    out = flash_norm_attention(x, k, v, offs, **w)
    assert rel_err(out, ref) <= 1.5 * rel_err(eager, ref) + 1e-4


@gpu
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_gpu_kv_tma_matches_pointer_loads(act):
    """kv_tma=True (K and V by bulk tensor copies; 8 warps, where it removes ptxas' spills)
    against the pointer loads at the same tiles: the same bits."""
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    x, k, v, offs, w = _gpu_case(3, 128, act, Hkv=1)
    got = [prepare_flash_norm_attention(x, k, v, offs, activation=act, num_warps=8, kv_tma=t,
                                        **w).launch() for t in (False, True)]
    torch.cuda.synchronize()
    for a, b in zip(*got):
        assert torch.equal(a, b)


@gpu
@pytest.mark.parametrize("H, act", [(2, "softmax"), (4, "gelu_tanh")])
def test_gpu_default_ln_mma(H, act):
    """Without norm weights the default launch computes the LayerNorm in the MMA layout
    (`DEFAULT_LN_MMA`, through `MMA_FNA_PASSES`), the inference and the training forward: within
    eager bf16's error against fp64, its statistics within test_gpu_forward's bound, and within a
    rounding (1e-3) of the loads' layout (ln_mma=False), g and lse too."""
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    x, k, v, offs, w = _gpu_case(H, 128, act, affine=False, seed=5)
    assert not w
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True)
    eager = flash_norm_attention_ref(x, k, v, offs, activation=act, dtype=x.dtype)
    for save in (False, True):
        p = prepare_flash_norm_attention(x, k, v, offs, activation=act, save=save)
        assert p.constexprs.get("LN_MMA") is True
        q = prepare_flash_norm_attention(x, k, v, offs, activation=act, save=save, ln_mma=False)
        assert "LN_MMA" not in q.constexprs
        got = p.launch() + ((p.g, p.lse) if save else ())
        lo = q.launch() + ((q.g, q.lse) if save else ())
        torch.cuda.synchronize()
        assert rel_err(got[0], ref) <= 1.5 * rel_err(eager, ref) + 1e-4, save
        for t, name in zip(got[1:4], ("mean", "rstd", "rrms")):
            want = st[name].to(t.device)
            assert torch.allclose(t, want, rtol=2e-3, atol=2e-3 * float(want.abs().max())), name
        for a, b in zip(got, lo):
            if a is not None:
                assert rel_err(a, b) < 1e-3, (save, rel_err(a, b))


@gpu
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
@pytest.mark.parametrize("H", [2, 3, 4])
def test_gpu_stats_ahead_matches_the_default_walk(act, H):
    """One cluster exchange a row block (`stats_ahead=True`, and its carry form "carry")
    against the default walk, all walking 256 rows, in the MMA layout (the op's default without weights) and the loads' (with
    them), the training forward too: the interpreter's bits are the same; on the GPU a layout
    may sum a row in another order, so within a rounding (1e-3 relative), and bitwise is
    reported in the assertion message when it is not. The default (stats_ahead=None) is the
    carry form for both forwards."""
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    from normfuse.reference import rel_err
    x, k, v, offs, w = _gpu_case(H, 128, act)
    for save in (False, True):  # (the default, for the inference and the training forward)
        p = prepare_flash_norm_attention(x, k, v, offs, activation=act, rows_per_program=256,
                                         save=save)
        assert p.constexprs.get("STATS_AHEAD") == 2, (save, p.constexprs)
    for kw in (dict(), dict(w), dict(save=True)):
        outs = []
        for ahead in (False, True, "carry"):
            p = prepare_flash_norm_attention(x, k, v, offs, activation=act, rows_per_program=256,
                                             stats_ahead=ahead, **kw)
            assert p.constexprs.get("STATS_AHEAD", False) == (2 if ahead == "carry" else ahead)
            outs.append(p.launch() + ((p.g,) if kw.get("save") else ()))
        torch.cuda.synchronize()
        for out in outs[1:]:
            for a, b in zip(outs[0], out):
                assert torch.isfinite(b.float()).all()
                d = rel_err(b, a)
                assert d <= 1e-3, (kw.keys(), d, torch.equal(a, b))


@gpu
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_gpu_launch_variants_same_bits(act):
    """The forward's launch variants against one row block per program found by the binary
    search through gather-once alone, the same bits: the row-block table, early-loads, the
    default launch (flat at these lengths), each program walking 256 or 512 rows with K and V
    hoisted, the training forward walking 128 (its g and lse too), and at 32-row blocks the walk
    against the flat grid; the default passes without reuse-loads and with it under the dot rule
    (across-dots off), walking and flat; a walk that is not a multiple of BLOCK_M is refused.
    The LayerNorm in the MMA layout (`ln_mma`, `MMA_FNA_PASSES`: bench_attention's "mma") sums
    the statistics in another order (the MMA layout's): against the default within a rounding,
    among its own launches (walking, flat, without prefetch-loads; the training forward walking
    and flat) the same bits."""
    from normfuse.ops.flash_norm_attention import (DEFAULT_FNA_PASSES, MMA_FNA_PASSES,
                                                   prepare_flash_norm_attention)
    x, k, v, offs, w = _gpu_case(3, 128, act)
    once = ("cluster-reduce{gather=once}", "epilogue-norm", "residual-acc")
    early = ("cluster-reduce{gather=once,early-loads=true}", "epilogue-norm", "residual-acc")
    flat = dict(rows_per_program=0, row_table=False, ln_mma=False)
    # without reuse-loads (session 28's default) and reuse-loads with the dot rule on
    noreuse = tuple(p for p in DEFAULT_FNA_PASSES if not p.startswith("reuse-loads"))
    reuse = noreuse + ("reuse-loads",)
    # (the LayerNorm in the loads' layout, ln_mma=False, which the default takes only with
    # weights: the MMA layout's launches are compared among themselves below)
    lo = dict(ln_mma=False)
    runs = [dict(flat, passes=once), dict(flat, passes=once, row_table=True),
            dict(flat, passes=early), lo, dict(lo, rows_per_program=0),
            dict(lo, rows_per_program=256), dict(lo, rows_per_program=512), dict(passes=reuse),
            dict(flat, passes=reuse), dict(passes=noreuse), dict(flat, passes=noreuse)]
    outs = [prepare_flash_norm_attention(x, k, v, offs, activation=act, **w, **r).launch()
            for r in runs]
    # the training forward (another kernel: its output may round differently from the
    # inference kernel's) walking 128 rows against its flat grid, g and lse included
    saved = [prepare_flash_norm_attention(x, k, v, offs, activation=act, save=True, **w,
                                          rows_per_program=n, ln_mma=False) for n in (0, 128)]
    saved = [p.launch() + (p.g,) + ((p.lse,) if act == "softmax" else ()) for p in saved]
    # 32-row blocks multiply in other instruction shapes: the walk against the flat grid there
    b32 = [prepare_flash_norm_attention(x, k, v, offs, activation=act, block_m=32, **w, **r)
           .launch() for r in (dict(lo, rows_per_program=0), dict(lo, rows_per_program=256))]
    # the LayerNorm in the MMA layout: the default walk, flat, walking 256, and without
    # prefetch-loads (only x's pipelining differs); the training forward walking 128 and flat
    mma = dict(ln_mma=True, passes=MMA_FNA_PASSES)
    mma_outs = [prepare_flash_norm_attention(x, k, v, offs, activation=act, **w, **r).launch()
                for r in (mma, dict(mma, rows_per_program=0), dict(mma, rows_per_program=256),
                          dict(ln_mma=True))]
    mma_saved = [prepare_flash_norm_attention(x, k, v, offs, activation=act, save=True, **w,
                                              rows_per_program=n, **mma) for n in (0, 128)]
    mma_saved = [p.launch() + (p.g,) + ((p.lse,) if act == "softmax" else ()) for p in mma_saved]
    torch.cuda.synchronize()
    for r, out in zip(runs[1:], outs[1:]):
        for a, b in zip(outs[0], out):
            assert torch.equal(a, b), r
    for a, b in zip(*saved):
        assert torch.equal(a, b)
    for a, b in zip(*b32):
        assert torch.equal(a, b)
    for i, out in enumerate(mma_outs[1:]):
        for a, b in zip(mma_outs[0], out):
            assert torch.equal(a, b), i
    for a, b in zip(*mma_saved):
        assert torch.equal(a, b)
    # against the default (and the training forward against its default): within a rounding.
    # The statistics too: a row's variance summed in the MMA layout's order differs from the
    # default's by up to 1.9e-4 relative on the H200 (2026-12-05, GELU, one row of 1442, rstd
    # ~0.13); both are held to test_gpu_forward's bound against fp64 as well
    _, st = flash_norm_attention_ref(x, k, v, offs, activation=act, return_stats=True, **w)
    for want, got in ((outs[0], mma_outs[0]), (saved[0], mma_saved[0])):
        assert rel_err(got[0], want[0]) < 1e-3, rel_err(got[0], want[0])
        for a, b, name in zip(want[1:4], got[1:4], ("mean", "rstd", "rrms")):
            torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-6)
            ref = st[name].to(a.device)
            for t in (a, b):
                assert torch.allclose(t, ref, rtol=2e-3, atol=2e-3 * float(ref.abs().max())), name
        for a, b in zip(want[4:], got[4:]):  # g, lse
            assert rel_err(b, a) < 1e-3
    with pytest.raises(ValueError, match="rows_per_program must be a positive multiple of BLOCK_M"):
        prepare_flash_norm_attention(x, k, v, offs, activation=act, rows_per_program=100)


@triton.jit
def _through_mma(X, Y, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Y + offs, _in_mma(tl.load(X + offs).to(tl.float32), X.dtype.element_ty))


@gpu
def test_gpu_in_mma_returns_its_input():
    """`_in_mma` (LN_MMA's anchor: t + 0 * 0, one wgmma of K = 16 with t as the accumulator)
    gives back its fp32 input: bf16 values widened, over the normal range (1e-30 to 1e30), bit
    for bit; a zero as a zero (the interpreter gives +0.0 for -0.0); a subnormal exactly or as
    a zero (not assumed either way: the interpreter gives it back)."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(64, 128, generator=g) * torch.logspace(-30, 30, 128)[None, :]).bfloat16()
    x[0, :4] = torch.tensor([-0.0, 0.0, 1e-39, -3e-40]).bfloat16()
    y = torch.full((64, 128), float("nan"), device="cuda")
    _through_mma[(1,)](x.cuda(), y, 64, 128)
    want, y = x.float(), y.cpu()
    tiny = want.abs() < 2.0 ** -126
    sub = tiny & (want != 0)
    assert int(sub.sum()) >= 2
    assert torch.equal(y[~tiny].view(torch.int32), want[~tiny].view(torch.int32))
    assert (y[want == 0] == 0).all()
    assert ((y[sub] == want[sub]) | (y[sub] == 0)).all(), (want[sub], y[sub])


@gpu
def test_gpu_wrong_device():
    from normfuse.ops import flash_norm_attention
    x, k, v, offs, w = _gpu_case(2, 64, "gelu_tanh")
    with pytest.raises(ValueError, match="k must be on x's device"):
        flash_norm_attention(x, k.cpu(), v, offs)


@gpu
@pytest.mark.parametrize("save", [False, True], ids=["recompute", "saved-g"])
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_gpu_gradients(act, save, monkeypatch):
    """Gradients through the module against fp64, with the backward recomputing the attention
    and with the forward's saved g and lse (SAVE_FOR_BACKWARD)."""
    pytest.importorskip("normfuse.ops.flash_norm_attention_bwd",
                        reason="the backward (issue 12's other half) is merged separately")
    import sys
    import normfuse.ops  # noqa: F401 - loads the op's module
    monkeypatch.setattr(sys.modules["normfuse.ops.flash_norm_attention"], "SAVE_FOR_BACKWARD", save)
    from normfuse.nn import FlashNormAttention
    x, k, v, offs, w = _gpu_case(3, 64, act)
    m = FlashNormAttention(3, 64, activation=act, ln_affine=True, ln_bias=True, rms_affine=True,
                           device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        m.ln_weight.copy_(w["ln_weight"])
        m.ln_bias.copy_(w["ln_bias"])
        m.rms_weight.copy_(w["rms_weight"])
    leaves = [t.clone().requires_grad_() for t in (x, k, v)]
    params = [m.ln_weight, m.ln_bias, m.rms_weight]
    dout = torch.randn_like(x)
    m(*leaves, offs).backward(dout)
    got = [t.grad for t in leaves + params]
    ref_in = [t.detach().double().requires_grad_() for t in (x, k, v)] + \
             [p.detach().double().requires_grad_() for p in params]
    flash_norm_attention_ref(*ref_in[:3], offs, activation=act, ln_weight=ref_in[3],
                             ln_bias=ref_in[4], rms_weight=ref_in[5]).backward(dout.double())
    eag_in = [t.detach().clone().requires_grad_() for t in (x, k, v)] + \
             [p.detach().clone().requires_grad_() for p in params]
    flash_norm_attention_ref(*eag_in[:3], offs, activation=act, ln_weight=eag_in[3],
                             ln_bias=eag_in[4], rms_weight=eag_in[5], dtype=x.dtype).backward(dout)
    for name, g, r, e in zip(["x", "k", "v", "ln_weight", "ln_bias", "rms_weight"], got, ref_in, eag_in):
        assert g is not None, name
        assert rel_err(g, r.grad) <= 1.5 * rel_err(e.grad, r.grad) + 1e-3, name


@gpu
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_gpu_training_step_without_a_host_sync(act):
    """Once a layer has seen its offsets tensor (the forward reads it on the host once, to check
    it and size its grid), forward and backward run without a device-to-host sync (torch's sync
    debug mode raises on one), with the same gradients as the first step, bit for bit; the
    unchecked backward's upper-bound grid (offsets not cached) gives the same dx, dk, dv bits
    and the weight gradients within fp32 rounding (their partials summed over more programs)."""
    from normfuse.nn import FlashNormAttention
    from normfuse.ops.common import clear_caches
    from normfuse.ops.flash_norm_attention_bwd import flash_norm_attention_bwd
    x, k, v, offs, w = _gpu_case(2, 64, act)
    m = FlashNormAttention(2, 64, activation=act, ln_affine=True, rms_affine=True, device="cuda",
                           dtype=torch.bfloat16)
    dout = torch.randn_like(x)

    def step():
        leaves = [t.clone().requires_grad_() for t in (x, k, v)]
        m.zero_grad(set_to_none=True)
        m(*leaves, offs).backward(dout)
        return [t.grad for t in leaves] + [m.ln_weight.grad, m.rms_weight.grad]
    first = step()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        again = step()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    for a, b in zip(first, again):
        assert torch.equal(a, b)
    # the upper-bound grid: nothing cached, nothing read
    clear_caches()
    _, mean, rstd, rrms = torch.ops.normfuse.flash_norm_attention_fwd(
        x, k, v, offs, w["ln_weight"], None, w["rms_weight"], act, default_qk_scale(act, 64),
        1e-5, 1e-5, -1, False)[:4]
    kw = dict(activation=act, ln_weight=w["ln_weight"], rms_weight=w["rms_weight"])
    exact = flash_norm_attention_bwd(dout, x, k, v, offs, None, mean, rstd, rrms, **kw)
    clear_caches()
    bound = flash_norm_attention_bwd(dout, x, k, v, offs, None, mean, rstd, rrms,
                                     check_offsets=False, **kw)
    for a, b in zip(exact[:3], bound[:3]):
        assert torch.equal(a, b)
    for a, b in zip(exact[3:], bound[3:]):  # (partials summed over another number of programs)
        assert (a is None and b is None) or torch.allclose(a.float(), b.float(), rtol=1e-5,
                                                           atol=1e-6)


@gpu
def test_gpu_cuda_graph_capture():
    """Once the offsets tensor has been read (the first call), the forward and the backward
    (as autograd calls it) capture into one CUDA graph: no host read, no host-to-device copy.
    The replays give the eager results, also after the offsets buffer is refilled in place with
    other lengths (the captured grids are upper bounds): bit for bit, except the weight
    gradients, whose per-program partials are summed over another number of programs."""
    from normfuse.ops import flash_norm_attention_fwd
    from normfuse.ops.flash_norm_attention_bwd import flash_norm_attention_bwd
    x, k, v, offs, w = _gpu_case(3, 64, "softmax")
    kw = dict(activation="softmax", **w)
    dout = torch.randn_like(x)

    def step():
        out, mean, rstd, rrms, g, lse = flash_norm_attention_fwd(x, k, v, offs, save=True, **kw)
        grads = flash_norm_attention_bwd(dout, x, k, v, offs, None, mean, rstd, rrms, g=g, lse=lse,
                                         check_offsets=False, **kw)
        return [out, mean, rstd, rrms, g, lse], list(grads)

    def check(want, got):
        for a, b in zip(want[0] + want[1][:3], got[0] + got[1][:3]):
            assert torch.equal(a, b)
        for a, b in zip(want[1][3:], got[1][3:]):  # (d ln_weight, d ln_bias, d rms_weight)
            assert (a is None and b is None) or torch.allclose(a.float(), b.float(), rtol=1e-5,
                                                               atol=1e-6)
    want = step()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # (warm-up off the capture, as torch's docs advise)
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = step()
    graph.replay()
    torch.cuda.synchronize()
    check(want, got)
    # the offsets buffer refilled in place (the same T and B, other lengths and more row blocks:
    # [300, 0, 1, 77, 1000, 64] -> [1, 300, 77, 1, 63, 1000]): a replay computes every row of the
    # new layout, as an eager call does
    offs.copy_(torch.tensor([0, 1, 301, 378, 379, 442, 1442], dtype=offs.dtype, device="cuda"))
    want = step()
    graph.replay()
    torch.cuda.synchronize()
    check(want, got)


# -- the custom op's autograd wiring, on the CPU: the kernel replaced by the reference -------------

@pytest.fixture
def cpu_op(monkeypatch):
    """normfuse.ops.flash_norm_attention with the kernel launch replaced by the eager reference
    (same outputs and statistics) and the CUDA-only check lifted, so that the custom op, its
    autograd and the call into the backward module run on the CPU."""
    mod = _fna_module()
    _lift_cuda_check(monkeypatch, mod)
    monkeypatch.setattr(mod, "route", lambda op, x: True)  # (not the reference path)

    def fwd(x, k, v, offsets, lnw, lnb, rmsw, act, scale, eps, rms_eps, ms, passes=None,
            check_offsets=True, save=False):
        out, st = flash_norm_attention_ref(x, k, v, offsets, activation=act, qk_scale=scale,
                                           ln_weight=lnw, ln_bias=lnb, rms_weight=rmsw, eps=eps,
                                           rms_eps=rms_eps, dtype=x.dtype, return_stats=True)
        res = (out, st["mean"], st["rstd"], st["rrms"])
        return (*res, st["g"].to(x.dtype), st.get("lse")) if save else res
    monkeypatch.setattr(mod, "_fwd_impl", fwd)
    return mod


def _fna_module():
    import sys
    import normfuse.ops  # noqa: F401 - loads the op's module
    return sys.modules["normfuse.ops.flash_norm_attention"]


def _lift_cuda_check(monkeypatch, mod, offsets_read: bool = False) -> None:
    """The op's input check with its CUDA-only test lifted (CPU tensors pass); the host
    offsets it returns: read (int64) with `offsets_read`, else None (not read)."""
    check = mod._check

    def cpu_check(op, x, k, v, offsets, *a, **kw):
        try:
            return check(op, x, k, v, offsets, *a, **kw)
        except ValueError as e:
            if "CUDA tensor" not in str(e):
                raise
            return (*x.shape, k.shape[0], k.shape[1], k.shape[2],
                    offsets.to(torch.int64) if offsets_read else None)
    monkeypatch.setattr(mod, "_check", cpu_check)


def _fake_bwd(calls):
    import types

    def bwd(dout, x, k, v, offsets, out, mean, rstd, rrms, *, activation, qk_scale, ln_weight,
            ln_bias, rms_weight, eps, rms_eps, max_seqlen, check_offsets=True, **saved):
        calls.append(dict(activation=activation, qk_scale=qk_scale, eps=eps, rms_eps=rms_eps,
                          max_seqlen=max_seqlen, check_offsets=check_offsets,
                          stats=(mean.dtype, rstd.shape, rrms.shape),
                          **{k: (t.dtype, tuple(t.shape)) if t is not None else None
                             for k, t in saved.items()}))
        ins = [t.detach().double().requires_grad_() for t in (x, k, v)]
        ws = [None if t is None else t.detach().double().requires_grad_()
              for t in (ln_weight, ln_bias, rms_weight)]

        def ref_backward():
            flash_norm_attention_ref(*ins, offsets, activation=activation, qk_scale=qk_scale,
                                     ln_weight=ws[0], ln_bias=ws[1], rms_weight=ws[2], eps=eps,
                                     rms_eps=rms_eps).backward(dout.double())
        # (in a thread of its own: the backward op's body runs below autograd's dispatch key,
        # which a fresh thread does not inherit)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(ref_backward).result()
        return tuple([t.grad.to(x.dtype) for t in ins]
                     + [None if t is None else t.grad.to(x.dtype) for t in ws])
    mod = types.ModuleType("normfuse.ops.flash_norm_attention_bwd")
    mod.flash_norm_attention_bwd = bwd
    return mod


def test_autograd_calls_the_backward_module(cpu_op, monkeypatch):
    import sys
    from normfuse.nn import FlashNormAttention
    calls = []
    monkeypatch.setitem(sys.modules, "normfuse.ops.flash_norm_attention_bwd", _fake_bwd(calls))
    m = FlashNormAttention(2, 16, activation="softmax", ln_affine=True, rms_affine=True,
                           eps=1e-6, rms_eps=1e-4, dtype=torch.bfloat16)
    x, k, v, offs, _ = _inputs([3, 0, 4], 2, 16, 8, Hkv=1)
    leaves = [t.clone().requires_grad_() for t in (x, k, v)]
    m(*leaves, offs, max_seqlen=4).float().square().sum().backward()
    # by default (SAVE_FOR_BACKWARD) the forward's attention output g and softmax's lse reach
    # the backward
    # the backward does not read the offsets on the host again (no sync): the forward checked them
    assert calls == [dict(activation="softmax", qk_scale=0.25, eps=1e-6, rms_eps=1e-4, max_seqlen=4,
                          check_offsets=False, stats=(torch.float32, (7,), (7,)), g=(torch.bfloat16, (7, 2, 16)),
                          lse=(torch.float32, (7, 2)))]
    assert [t.grad.shape for t in leaves] == [x.shape, k.shape, v.shape]
    assert m.ln_weight.grad.shape == (32,) and m.rms_weight.grad.shape == (32,)
    assert float(m.ln_weight.grad.abs().sum()) > 0 and m.ln_bias is None


def test_backward_without_the_module_raises(cpu_op, monkeypatch):
    import sys
    from normfuse.ops import flash_norm_attention
    monkeypatch.setitem(sys.modules, "normfuse.ops.flash_norm_attention_bwd", None)
    x, k, v, offs, _ = _inputs([3, 4], 2, 16, 8)
    x.requires_grad_()
    out = flash_norm_attention(x, k, v, offs)
    with pytest.raises(NotImplementedError, match="normfuse.ops.flash_norm_attention_bwd"):
        out.float().sum().backward()


def test_custom_op_under_torch_compile(cpu_op):
    from normfuse.ops import flash_norm_attention
    x, k, v, offs, w = _inputs([3, 4], 2, 16, 8)
    fn = torch.compile(lambda x: flash_norm_attention(x, k, v, offs, activation="relu", **w),
                       fullgraph=True, backend="eager")
    want = flash_norm_attention_ref(x, k, v, offs, activation="relu", dtype=x.dtype, **w)
    assert torch.equal(fn(x), want)


def test_training_under_torch_compile(cpu_op):
    """The backward is a custom op too: torch.compile traces forward and backward into one graph
    each (fullgraph), and the compiled gradients are the eager ones, bit for bit (the backward's
    kernels run in the interpreter)."""
    from normfuse.ops import flash_norm_attention
    from normfuse.testing.attention_bwd import interpreted
    x, k, v, offs, w = _inputs([3, 0, 4], 2, 64, 24)
    leaves = [t.clone().requires_grad_() for t in (x, k, v, *w.values())]

    def f(x, k, v, lnw, lnb, rmsw):
        return flash_norm_attention(x, k, v, offs, activation="softmax", ln_weight=lnw,
                                    ln_bias=lnb, rms_weight=rmsw)
    fn = torch.compile(f, fullgraph=True, backend="aot_eager")
    with interpreted():
        want = torch.autograd.grad(f(*leaves).float().square().sum(), leaves)
        got = torch.autograd.grad(fn(*leaves).float().square().sum(), leaves)
    for a, b in zip(want, got):
        assert a.shape == b.shape and torch.equal(a, b)
    assert float(got[0].abs().sum()) > 0 and float(got[3].abs().sum()) > 0


def test_backward_op_fake_shapes():
    """The backward op's fake implementation: the gradients' shapes and dtypes, empty for an
    absent weight."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    import normfuse.ops  # noqa: F401 - registers the op
    with FakeTensorMode():
        x = torch.empty(7, 2, 16, dtype=torch.bfloat16)
        kv = torch.empty(2, 8, 1, 16, dtype=torch.bfloat16)
        st = torch.empty(7)
        w = torch.empty(32, dtype=torch.bfloat16)
        out = torch.ops.normfuse.flash_norm_attention_bwd(
            x, x, kv, kv, torch.empty(3, dtype=torch.int32), st, st, st, w, None, w, None, None,
            "gelu_tanh", 1.0, 1e-5, 1e-5, -1)
    assert [tuple(t.shape) for t in out] == [(7, 2, 16), (2, 8, 1, 16), (2, 8, 1, 16), (32,),
                                             (0,), (32,)]
    assert all(t.dtype == torch.bfloat16 for t in out)


def test_fewer_than_sixteen_keys():
    """Key lengths under 16: the key tile is at least tl.dot's 16 (it once took the length's
    power of 2 and failed to compile), the padding masked; against the fp64 reference."""
    x, k, v, offs, w = _inputs([5, 0, 1, 19], 2, 16, 8)
    cfg = _config_of(16, 8)
    assert cfg["BLOCK_N"] == 16
    args, consts, grid = _kernel_args(x, k, v, offs, w, "gelu_tanh", BN=cfg["BLOCK_N"])
    res = check_pass_numerics(flash_norm_attention_naive, args, constexprs=consts, grid=grid,
                              passes="default", num_warps=4)
    ref, st = flash_norm_attention_ref(x, k, v, offs, activation="gelu_tanh", return_stats=True,
                                       **w)
    _assert_close(res, ref, st)


def _config_of(D, L):
    return _fna_module()._config(D, L)


def test_strided_offsets_reach_the_kernel_contiguous(monkeypatch):
    """int32 offsets given as a stride-2 view: the kernel reads OFFS + b, so the launch gets a
    contiguous copy (it once got the view's storage: rows left unwritten)."""
    mod = _fna_module()
    x, k, v, offs, w = _inputs([5, 0, 19, 3], 2, 16, 16)
    base = torch.full((2 * len(offs),), 7, dtype=torch.int32)
    base[0::2] = offs
    strided = base[0::2]
    assert not strided.is_contiguous() and torch.equal(strided, offs)
    _lift_cuda_check(monkeypatch, mod, offsets_read=True)
    p = mod.prepare_flash_norm_attention(x, k, v, strided, passes=(), block_m=16, **w)
    launched = p.runtime_args[3]
    assert launched.is_contiguous() and torch.equal(launched, offs)


def test_head_matrix_weights_train_and_no_double_backward(cpu_op, monkeypatch):
    """[H, D] norm weights, which the forward takes, reach the backward as the [H * D] vectors
    it takes (it once refused them after the forward had run), their gradients shaped as the
    weights; a backward under create_graph=True raises."""
    import sys
    from normfuse.ops import flash_norm_attention
    calls = []
    bwd = _fake_bwd(calls)
    real = bwd.flash_norm_attention_bwd

    def checked(*a, ln_weight, ln_bias, rms_weight, **kw):
        assert all(t is None or t.dim() == 1 for t in (ln_weight, ln_bias, rms_weight))
        return real(*a, ln_weight=ln_weight, ln_bias=ln_bias, rms_weight=rms_weight, **kw)
    bwd.flash_norm_attention_bwd = checked
    monkeypatch.setitem(sys.modules, "normfuse.ops.flash_norm_attention_bwd", bwd)
    x, k, v, offs, w = _inputs([3, 4], 2, 16, 8)
    lnw = w["ln_weight"].reshape(2, 16).clone().requires_grad_()
    xs = x.clone().requires_grad_()
    flash_norm_attention(xs, k, v, offs, ln_weight=lnw).float().square().sum().backward()
    assert calls and lnw.grad.shape == (2, 16) and xs.grad.shape == x.shape
    out = flash_norm_attention(xs, k, v, offs).float().square().sum()
    with pytest.raises(NotImplementedError, match="not differentiable"):
        torch.autograd.grad(out, xs, create_graph=True)


@pytest.mark.parametrize("act", ["softmax", "gelu_tanh"])
def test_autograd_passes_the_saved_g_and_lse(cpu_op, monkeypatch, act):
    """With SAVE_FOR_BACKWARD the forward runs with save=True under autograd and the backward
    receives its g (x's dtype, [T, H, D]) and, for softmax, lse ([T, H] f32); without grad the
    forward saves nothing (the op's g and lse outputs are empty)."""
    import sys
    from normfuse.ops import flash_norm_attention
    monkeypatch.setattr(cpu_op, "SAVE_FOR_BACKWARD", True)
    calls = []
    monkeypatch.setitem(sys.modules, "normfuse.ops.flash_norm_attention_bwd", _fake_bwd(calls))
    x, k, v, offs, w = _inputs([3, 0, 4], 2, 16, 8)
    xs = x.clone().requires_grad_()
    flash_norm_attention(xs, k, v, offs, activation=act, **w).float().square().sum().backward()
    want_lse = (torch.float32, (7, 2)) if act == "softmax" else None
    assert calls[0]["g"] == (x.dtype, (7, 2, 16)) and calls[0]["lse"] == want_lse, calls
    res = torch.ops.normfuse.flash_norm_attention_fwd.default(
        x, k, v, offs, None, None, None, act, 1.0, 1e-5, 1e-5, -1)
    assert len(res) == 6 and res[4].numel() == 0 and res[5].numel() == 0
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fo = torch.ops.normfuse.flash_norm_attention_fwd.default(
            mode.from_tensor(x), mode.from_tensor(k), mode.from_tensor(v), mode.from_tensor(offs),
            None, None, None, act, 1.0, 1e-5, 1e-5, -1, True)
    assert tuple(fo[4].shape) == (7, 2, 16) and tuple(fo[5].shape) == ((7, 2) if act == "softmax"
                                                                       else (0,))


def test_fake_output_is_contiguous_like_the_real_one(cpu_op):
    """x given as a permuted view: the op's output is contiguous on every path and its fake
    (meta) implementation says so (Inductor asserted the strides and failed)."""
    from normfuse.ops import flash_norm_attention
    x, k, v, offs, w = _inputs([3, 5], 2, 16, 16)
    xt = x.transpose(0, 1).contiguous().transpose(0, 1)  # [T, H, D] with strides (16, T*16, 1)
    assert not xt.is_contiguous()
    out = flash_norm_attention(xt, k, v, offs, **w)
    assert out.is_contiguous()
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fx = mode.from_tensor(xt)
        fo = torch.ops.normfuse.flash_norm_attention_fwd.default(
            fx, mode.from_tensor(k), mode.from_tensor(v), mode.from_tensor(offs),
            None, None, None, "gelu_tanh", 1.0, 1e-5, 1e-5, -1)[0]
    assert fo.stride() == out.stride()


# -- the reference path: where the kernels do not run (CPU tensors, float32 / float64 x) ---------

def test_launchers_take_cuda_bf16_fp16_only():
    """The explicit launch path refuses what only the reference path computes, saying why."""
    from normfuse.ops import flash_norm_attention_fwd
    x, k, v, offs, w = _op_inputs()
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):
        flash_norm_attention_fwd(x, k, v, offs, **w)
    with pytest.raises(TypeError, match="x must be bfloat16 or float16"):
        flash_norm_attention_fwd(x.float(), k.float(), v.float(), offs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("act", ["gelu_tanh", "softmax"])
def test_cpu_reference_path_trains(dtype, act, monkeypatch):
    """On the CPU the module computes the function (fp32 inside) and its gradients (closed form)
    against fp64 autograd of the definition: jagged rows with an empty sequence, GQA, [H, D]
    weights, D = 24 (no kernel takes it); one FallbackWarning."""
    from normfuse.nn import FlashNormAttention
    from normfuse.ops import common
    monkeypatch.setattr(common, "_WARNED", set())  # (warned once per process and reason)
    x, k, v, offs, _ = _inputs([4, 0, 7, 1], 4, 24, 6, Hkv=2, act=act, mean=0.5, dtype=dtype)
    m = FlashNormAttention(4, 24, activation=act, ln_affine=True, ln_bias=True, rms_affine=True,
                           dtype=dtype)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen).to(dtype))
    leaves = [t.clone().requires_grad_() for t in (x, k, v)]
    with pytest.warns(common.FallbackWarning, match="flash_norm_attention: the inputs are on cpu"):
        out = m(*leaves, offs)
    dout = torch.randn(out.shape, generator=gen).to(dtype)
    out.backward(dout)
    ins = [t.detach().double().requires_grad_() for t in (x, k, v)]
    ws = [p.detach().double().requires_grad_() for p in (m.ln_weight, m.ln_bias, m.rms_weight)]
    ref = flash_norm_attention_ref(*ins, offs, activation=act, ln_weight=ws[0], ln_bias=ws[1],
                                   rms_weight=ws[2])
    ref.backward(dout.double())
    tol = 1e-2 if dtype == torch.bfloat16 else 1e-5
    assert out.dtype == dtype and rel_err(out, ref) < tol
    for got, want in zip([t.grad for t in leaves] + [m.ln_weight.grad, m.ln_bias.grad,
                                                     m.rms_weight.grad],
                         [t.grad for t in ins + ws]):
        assert got.dtype == dtype and got.shape == want.shape
        assert rel_err(got, want) < 2 * tol, rel_err(got, want)


@pytest.mark.parametrize("warned_before", [True, False], ids=["warned", "first-call"])
def test_cpu_reference_path_compiles_without_graph_breaks(monkeypatch, warned_before):
    """torch.compile(fullgraph=True) over the module on the CPU: the custom ops traced through
    their fake implementations, the compiled gradients equal the eager ones. Also when the
    compiled call is the process's first on the CPU: its FallbackWarning is then made after the
    graph runs (a reorderable logging function), not a graph break (it was one: the test passed
    only after another had warned)."""
    import warnings
    from normfuse.nn import FlashNormAttention
    from normfuse.ops import common
    from normfuse.ops.common import FallbackWarning
    monkeypatch.setattr(common, "_WARNED", set())
    torch._dynamo.reset()
    x, k, v, offs, _ = _inputs([3, 0, 5], 2, 16, 8)
    m = FlashNormAttention(2, 16, activation="softmax", ln_affine=True, rms_affine=True,
                           dtype=torch.bfloat16)

    def f(x, k, v):
        return m(x, k, v, offs).float().square().sum()
    if warned_before:  # (an eager call warned first)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(x, k, v)
    leaves = [t.clone().requires_grad_() for t in (x, k, v)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.compile(f, fullgraph=True, backend="aot_eager")(*leaves).backward()
    fallback = [w for w in seen if issubclass(w.category, FallbackWarning)]
    assert len(fallback) == (0 if warned_before else 1), [str(w.message) for w in fallback]
    got = [t.grad for t in leaves] + [m.ln_weight.grad, m.rms_weight.grad]
    m.zero_grad()
    leaves = [t.clone().requires_grad_() for t in (x, k, v)]
    f(*leaves).backward()
    for a, b in zip(got, [t.grad for t in leaves] + [m.ln_weight.grad, m.rms_weight.grad]):
        assert torch.equal(a, b)
