"""FlashNormAttention backward (issue 12): `normfuse.ops.flash_norm_attention_bwd` and the
`cluster-reduce-chain` pass.

CPU: the naive rows kernel and the one `cluster-reduce-chain` rewrote run in normfuse's TTIR
interpreter (thread-block clusters, DSMEM exchange and its races modelled) and are checked against
fp64 autograd of `flash_norm_attention_ref`, next to eager autograd of the same reference in the
input dtype (the unfused baseline): each gradient's error must be within 1.5x the eager one's (plus
a small floor for gradients where both are at the rounding level). The saved statistics come from
the fp64 reference, as float32, as the forward saves them.
GPU (`-m gpu`): the same on the device, at larger shapes.
"""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")

from normfuse.ops.flash_norm_attention_bwd import (DEFAULT_BWD_PASSES, flash_norm_attention_bwd,
                                                   row_block_table, unwritten_scratch)
from normfuse.reference_attention import flash_norm_attention_ref
from normfuse.testing.attention_bwd import interpreted, last_remarks

NAMES = ("dx", "dk", "dv", "d_ln_weight", "d_ln_bias", "d_rms_weight")
FLOOR = 2e-3  # bf16 rounding of a gradient that is itself tiny relative to its norm


@pytest.fixture(autouse=True)
def _kernels_in_the_interpreter():
    """CPU tensors run the backward's kernels in the interpreter (the op alone refuses them)."""
    with interpreted():
        yield


def test_cpu_tensors_are_refused_outside_the_interpreter():
    """Without `interpreted()` the op takes CUDA tensors only, and says how the CPU tests run."""
    from normfuse.ops import flash_norm_attention_bwd as bwd
    prev = bwd.cpu_launcher(None)
    try:
        x = torch.zeros(4, 2, 32, dtype=torch.bfloat16)
        kv = torch.zeros(1, 4, 2, 32, dtype=torch.bfloat16)
        st = torch.zeros(4, 2)
        with pytest.raises(ValueError, match="must be CUDA tensors.*interpreted"):
            flash_norm_attention_bwd(x, x, kv, kv, torch.tensor([0, 4]), x, st, st, st)
    finally:
        bwd.cpu_launcher(prev)


def _inputs(lens, H, Hkv, D, L, *, mean=0.0, affine=True, dtype=torch.bfloat16, seed=0,
            device="cpu", k_scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    B = len(lens)
    off = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32)
    T = int(off[-1])
    x = torch.randn(T, H, D, generator=gen) + mean
    k = torch.randn(B, L, Hkv, D, generator=gen) * (0.5 / D ** 0.25) * k_scale
    v = torch.randn(B, L, Hkv, D, generator=gen)
    dout = torch.randn(T, H, D, generator=gen)
    ws = [None, None, None]
    if affine:
        ws = [1 + 0.3 * torch.randn(H * D, generator=gen), 0.2 * torch.randn(H * D, generator=gen),
              1 + 0.3 * torch.randn(H * D, generator=gen)]
    cast = (lambda t: None if t is None else t.to(dtype).to(device))
    return (cast(x), cast(k), cast(v), off.to(device), cast(dout), *[cast(w) for w in ws])


def _grads(x, k, v, off, dout, lnw, lnb, rmw, activation, dtype, qk_scale=None):
    """Autograd of the reference computed in `dtype`: the gradients, and the saved statistics."""
    leaves = [None if t is None else t.detach().to(dtype).requires_grad_() for t in (x, k, v, lnw, lnb, rmw)]
    out, stats = flash_norm_attention_ref(leaves[0], leaves[1], leaves[2], off, activation=activation,
                                          ln_weight=leaves[3], ln_bias=leaves[4], rms_weight=leaves[5],
                                          qk_scale=qk_scale, dtype=dtype, return_stats=True)
    out.backward(dout.to(dtype))
    g = [None if t is None else t.grad for t in leaves]
    return (g[0], g[1], g[2], g[3], g[4], g[5]), out.detach(), stats


def _rel(a, ref):
    if a is None or ref is None:
        assert a is None and ref is None
        return 0.0
    a, ref = a.double().cpu(), ref.double().cpu()
    n = float(ref.norm())
    return float((a - ref).norm()) / n if n else float(a.norm())


def _check(lens, H, Hkv, D, L, activation, *, mean=0.0, affine=True, seed=0, passes="default",
           device="cpu", k_scale=1.0, **kw):
    x, k, v, off, dout, lnw, lnb, rmw = _inputs(lens, H, Hkv, D, L, mean=mean, affine=affine,
                                                seed=seed, device=device, k_scale=k_scale)
    sc = kw.get("qk_scale")
    ref, out64, stats = _grads(x, k, v, off, dout, lnw, lnb, rmw, activation, torch.float64, sc)
    eager, _, _ = _grads(x, k, v, off, dout, lnw, lnb, rmw, activation, x.dtype, sc)
    got = flash_norm_attention_bwd(dout, x, k, v, off, out64.to(x.dtype), stats["mean"].float(),
                                   stats["rstd"].float(), stats["rrms"].float(),
                                   activation=activation, ln_weight=lnw, ln_bias=lnb,
                                   rms_weight=rmw, passes=passes, **kw)
    # the contract's order: (dx, dk, dv, d_ln_weight, d_ln_bias, d_rms_weight)
    refs = (ref[0], ref[1], ref[2], ref[3], ref[4], ref[5])
    eags = (eager[0], eager[1], eager[2], eager[3], eager[4], eager[5])
    errs = {}
    for name, g, r, e in zip(NAMES, got, refs, eags):
        if r is None:
            assert g is None, name
            continue
        assert g.shape == r.shape and g.dtype == (x.dtype if name in ("dx", "dk", "dv") else lnw.dtype)
        assert torch.isfinite(g.float()).all(), name
        err, base = _rel(g, r), _rel(e, r)
        errs[name] = (err, base)
        assert err <= 1.5 * base + FLOOR, (name, err, base)
    return got, errs


# ---------------------------------------------------------------------------------------------
# CPU: the interpreted kernels against fp64 autograd
# ---------------------------------------------------------------------------------------------

LENS = [0, 5, 1, 20, 0]  # empty sequences (first and last), a length-1 sequence, ragged lengths


@pytest.mark.parametrize("H, Hkv, D, L, activation", [
    pytest.param(1, 1, 64, 24, "gelu_tanh", id="h1-gelu"),
    pytest.param(2, 2, 64, 24, "silu", id="h2-silu"),
    pytest.param(3, 1, 64, 40, "relu", id="h3-gqa-relu"),
    pytest.param(4, 2, 64, 24, "relu2", id="h4-gqa-relu2"),
    # (gelu at 8 heads and at D = 128: `-m slow`; h1 covers gelu, h2-d128 D = 128)
    pytest.param(8, 8, 64, 16, "gelu_tanh", id="h8-gelu", marks=pytest.mark.slow),
    pytest.param(2, 1, 128, 24, "softmax", id="h2-d128-softmax"),
    pytest.param(4, 4, 128, 24, "gelu_tanh", id="h4-d128-gelu", marks=pytest.mark.slow),
])
def test_bwd_matches_fp64(H, Hkv, D, L, activation):
    _check(LENS, H, Hkv, D, L, activation, block_m=16)
    remarks = last_remarks()
    if H >= 2:
        assert any(f"split over a {H}-CTA cluster" in r for r in remarks), remarks
    else:
        # one head: Triton has already inlined the single-trip loops; nothing to split
        assert any("[cluster-reduce-chain] missed: no two loops" in r for r in remarks), remarks


@pytest.mark.parametrize("activation", ["gelu_tanh", "softmax"])
def test_bwd_layernorm_large_mean(activation):
    # |mean| >> std: the LayerNorm backward's xhat is recomputed from the saved mean/rstd, and z
    # is recomputed (not recovered from out - x, whose bf16 rounding carries x's magnitude)
    _, errs = _check([7, 19], 2, 2, 64, 24, activation, mean=40.0, block_m=16, seed=3)
    assert errs["dx"][0] < 2e-2, errs


@pytest.mark.parametrize("activation", ["gelu_tanh", "silu"])
def test_bwd_large_scores(activation):
    """Keys 12x the other tests' (scores to |s| ~ 50): the activations' derivatives on their
    negative tails, where h = sigmoid(2u) (GELU) must keep a relative error: from 1 + tanh(u)
    (tanh.approx, as the forward computes GELU) the derivative's ~0.1 |s|^3 factor made dx
    7x eager's error (0.023 against 0.0032, a reviewer's run)."""
    _, errs = _check(LENS, 1, 1, 64, 24, activation, block_m=16, k_scale=12.0)
    # (and _check's bound: every gradient within 1.5x eager bf16's error against fp64)
    assert errs["dx"][0] < 1e-2 and errs["dk"][0] < 1e-2, errs


def test_bwd_softmax_keys_over_several_blocks():
    # L = 80: two key blocks of 64, the second ragged: the log-sum-exp is recomputed across them
    _check([9, 3], 2, 1, 64, 80, "softmax", block_m=16, seed=4)


def _poison_new_buffers(monkeypatch):
    """torch.empty / empty_like give NaN-filled floating-point tensors: an element no kernel
    stores shows."""
    real, real_empty = torch.empty_like, torch.empty
    monkeypatch.setattr(torch, "empty_like",
                        lambda t, **kw: real(t, **kw).fill_(float("nan"))
                        if t.is_floating_point() else real(t, **kw))

    def empty(*shape, **kw):
        t = real_empty(*shape, **kw)
        return t.fill_(float("nan")) if t.is_floating_point() else t
    monkeypatch.setattr(torch, "empty", empty)


def test_bwd_writes_every_gradient_element(monkeypatch):
    """dx, dK, dV and the weights' partials come from fresh uninitialized buffers (no zero
    fill): here NaN-poisoned (torch.empty / empty_like), so an element a kernel did not store
    shows (the weights' gradients come from the partials of the weights present only); empty
    sequences get dK = dV = 0 from the dK / dV kernel itself, an input without rows zeros."""
    _poison_new_buffers(monkeypatch)
    got, _ = _check([0, 6, 0], 2, 1, 64, 24, "softmax", block_m=16, seed=6)
    _check([3, 0, 5], 2, 2, 64, 24, "gelu_tanh", affine=False, block_m=16, seed=7)
    dk, dv = got[1], got[2]
    assert (dk[0] == 0).all() and (dk[2] == 0).all() and (dv[0] == 0).all() and (dv[2] == 0).all()
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([0, 0], 2, 1, 64, 24, seed=6)
    out = flash_norm_attention_bwd(dout, x, k, v, off, dout, torch.zeros(0), torch.zeros(0),
                                   torch.zeros(0), activation="softmax")
    assert all(t is None or (t == 0).all() for t in out[:3])


def test_bwd_without_affine_and_qk_scale():
    _check([6, 11], 2, 2, 64, 24, "silu", affine=False, block_m=16, seed=5, qk_scale=0.3)


def test_bwd_fp16_int64_offsets():
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([4, 0, 13], 3, 3, 64, 24, dtype=torch.float16, seed=8)
    off = off.long()
    ref, out64, st = _grads(x, k, v, off, dout, lnw, lnb, rmw, "gelu_tanh", torch.float64)
    eager, _, _ = _grads(x, k, v, off, dout, lnw, lnb, rmw, "gelu_tanh", torch.float16)
    got = flash_norm_attention_bwd(dout, x, k, v, off, out64.half(), st["mean"].float(),
                                   st["rstd"].float(), st["rrms"].float(), ln_weight=lnw,
                                   ln_bias=lnb, rms_weight=rmw, block_m=16)
    assert got[0].dtype == torch.float16
    for name, g, r, e in zip(NAMES, got, ref, eager):
        assert _rel(g, r) <= 1.5 * _rel(e, r) + FLOOR, name


def test_fused_equals_naive():
    # the pass changes where the per-head sums are added, not their order: same bits
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([3, 17], 4, 2, 64, 24, seed=6)
    _, out64, st = _grads(x, k, v, off, dout, lnw, lnb, rmw, "gelu_tanh", torch.float64)
    args = (dout, x, k, v, off, out64.to(x.dtype), st["mean"].float(), st["rstd"].float(),
            st["rrms"].float())
    kw = dict(activation="gelu_tanh", ln_weight=lnw, ln_bias=lnb, rms_weight=rmw, block_m=16)
    naive = flash_norm_attention_bwd(*args, passes=(), **kw)
    assert not last_remarks()
    fused = flash_norm_attention_bwd(*args, passes=DEFAULT_BWD_PASSES, **kw)
    assert any("split over a 4-CTA cluster" in r for r in last_remarks())
    # one head per CTA: every reload of z and dlnq forwarded, their fp32 scratch never written
    # (on a GPU the op then passes one-element stand-ins for them)
    assert any("the stores to scratch Z, DLNQ erased" in r for r in last_remarks()), last_remarks()
    assert unwritten_scratch(last_remarks()) == {"Z", "DLNQ"}
    two = flash_norm_attention_bwd(*args, passes="cluster-reduce-chain{cluster-size=2}", **kw)
    assert any("up to 2 trips per CTA" in r for r in last_remarks())
    assert unwritten_scratch(last_remarks()) == set()  # two heads per CTA: the reloads stay
    for a, b, c in zip(naive, fused, two):
        assert torch.equal(a, b) and torch.equal(a, c)
    # early-loads: the loads that do not depend on an exchange between its arrive and wait
    early = flash_norm_attention_bwd(*args, passes="cluster-reduce-chain{scratch=Z:DLNQ,"
                                     "early-loads=true}", **kw)
    assert any("early-loads: " in r and "applied" in r for r in last_remarks()), last_remarks()
    assert unwritten_scratch(last_remarks()) == {"Z", "DLNQ"}
    for a, b in zip(naive, early):
        assert torch.equal(a, b)


def test_all_sequences_empty():
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([0, 0], 2, 2, 64, 16)
    st = torch.zeros(0)
    dx, dk, dv, dlw, dlb, drw = flash_norm_attention_bwd(dout, x, k, v, off, x, st, st, st,
                                                         ln_weight=lnw, ln_bias=lnb, rms_weight=rmw)
    assert dx.shape == x.shape and not dk.any() and not dv.any()
    assert not dlw.any() and not dlb.any() and not drw.any()


def test_row_block_table():
    off = torch.tensor([0, 0, 5, 6, 26, 26])
    t = row_block_table(off, 16)
    # (batch, first row of the block, end of the sequence: the block masks rows past it)
    assert t.tolist() == [[1, 0, 5], [2, 5, 6], [3, 6, 26], [3, 22, 26]]
    # sized from T alone (no host read of the offsets): cdiv(26, 16) + 5 = 7 entries, the
    # three past the last block dead (every row masked: first row = end = T)
    up = row_block_table(off, 16, rows=26)
    assert up.tolist() == t.tolist() + [[4, 26, 26]] * 3
    assert row_block_table(off[:1], 16, rows=0).shape == (0, 3)


@pytest.mark.parametrize("saved", [False, True], ids=["recompute", "saved-g"])
def test_unchecked_offsets_give_the_same_bits(saved, monkeypatch):
    """check_offsets=False (the autograd backward's call) with offsets not read on the host
    before (as device offsets the forward has not seen): the rows kernel's grid is the upper
    bound cdiv(T, BLOCK_M) + B; the dead programs change nothing, and their weight partials are
    zeros."""
    import normfuse.ops.flash_norm_attention_bwd as bwd
    seen = []

    def not_cached(offsets, read=True):  # (CPU offsets are always "on the host")
        seen.append(read)
        return offsets.to(torch.int64) if read else None
    monkeypatch.setattr(bwd, "host_offsets", not_cached)
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([0, 5, 1, 20, 0, 3], 2, 2, 64, 24, seed=9)
    _, out64, st = _grads(x, k, v, off, dout, lnw, lnb, rmw, "softmax", torch.float64)
    args = (dout, x, k, v, off, out64.to(x.dtype), st["mean"].float(), st["rstd"].float(),
            st["rrms"].float())
    kw = dict(activation="softmax", ln_weight=lnw, ln_bias=lnb, rms_weight=rmw, block_m=16)
    if saved:
        kw.update(g=st["g"].to(x.dtype), lse=st["lse"].float())
    checked = flash_norm_attention_bwd(*args, **kw)
    # 5 live blocks of 16 rows; the upper bound 2 + 6 = 8 programs
    assert row_block_table(off, 16).shape[0] == 5 and row_block_table(off, 16, 29).shape[0] == 8
    unchecked = flash_norm_attention_bwd(*args, check_offsets=False, **kw)
    assert seen == [True, False]
    for name, a, b in zip(NAMES, checked, unchecked):
        assert torch.equal(a, b), name


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

def _base():
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([3, 4], 2, 2, 64, 16)
    st = torch.zeros(7)
    return dict(dout=dout, x=x, k=k, v=v, offsets=off, out=x, mean=st, rstd=st, rrms=st), \
        dict(ln_weight=lnw, ln_bias=lnb, rms_weight=rmw)


@pytest.mark.parametrize("change, err, match", [
    (lambda a, w: a.update(k=a["k"][:, :, :1].repeat(1, 1, 3, 1), v=a["v"][:, :, :1].repeat(1, 1, 3, 1)),
     ValueError, r"heads of x \(2\) must be a multiple of the heads of k/v \(3\)"),
    (lambda a, w: a.update(offsets=torch.tensor([0, 3, 9], dtype=torch.int32)),
     ValueError, r"offsets must start at 0 and end at T = 7"),
    (lambda a, w: a.update(x=a["x"].float()), TypeError, r"x must be bfloat16 or float16"),
    (lambda a, w: a.update(k=a["k"].half()), TypeError, r"k must have x's dtype"),
    (lambda a, w: a.update(mean=a["mean"].double()), TypeError, r"mean must be float32"),
    (lambda a, w: a.update(offsets=a["offsets"].float()), TypeError, r"offsets must be int32 or int64"),
    (lambda a, w: a.update(rrms=torch.zeros(7, device="meta")), ValueError, r"rrms must be on x's device"),
    (lambda a, w: w.update(rms_weight=w["rms_weight"][:64]), ValueError, r"rms_weight must have shape \(128,\)"),
    (lambda a, w: a.update(dout=a["dout"][:5]), ValueError, r"dout must have x's shape"),
])
def test_bad_input(change, err, match):
    a, w = _base()
    change(a, w)
    with pytest.raises(err, match=match):
        flash_norm_attention_bwd(a["dout"], a["x"], a["k"], a["v"], a["offsets"], a["out"], a["mean"],
                                 a["rstd"], a["rrms"], **w)


def test_offsets_not_a_tensor():
    a, w = _base()
    with pytest.raises(TypeError, match="offsets must be a torch.Tensor, got list"):
        flash_norm_attention_bwd(a["dout"], a["x"], a["k"], a["v"], [0, 3, 7], a["out"], a["mean"],
                                 a["rstd"], a["rrms"], **w)


def test_offsets_not_monotone():
    a, w = _base()
    a["offsets"] = torch.tensor([0, 7, 5, 7], dtype=torch.int32)
    a["k"] = torch.cat([a["k"], a["k"][:1]])
    a["v"] = torch.cat([a["v"], a["v"][:1]])
    with pytest.raises(ValueError, match="offsets must be non-decreasing"):
        flash_norm_attention_bwd(a["dout"], a["x"], a["k"], a["v"], a["offsets"], a["out"], a["mean"],
                                 a["rstd"], a["rrms"], **w)


def test_unknown_activation():
    a, w = _base()
    with pytest.raises(ValueError, match="unknown activation 'gelu2'"):
        flash_norm_attention_bwd(*a.values(), activation="gelu2", **w)


# ---------------------------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------------------------

GPU_LENS = [0, 1, 300, 77, 1000, 0, 513, 64, 129]


@pytest.mark.gpu
@pytest.mark.parametrize("H, Hkv, D, L, activation", [
    (1, 1, 128, 128, "gelu_tanh"), (2, 2, 128, 128, "gelu_tanh"), (3, 3, 128, 128, "silu"),
    (4, 2, 128, 128, "relu2"), (8, 8, 64, 64, "relu"), (2, 2, 64, 128, "softmax"),
    (4, 4, 128, 200, "softmax"), (2, 1, 128, 256, "gelu_tanh"),
])
def test_gpu_bwd_matches_fp64(H, Hkv, D, L, activation):
    _check(GPU_LENS, H, Hkv, D, L, activation, device="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("passes", [(), "default"])
def test_gpu_bwd_large_mean(passes):
    _check(GPU_LENS, 3, 3, 128, 128, "gelu_tanh", mean=40.0, device="cuda", passes=passes)


@pytest.mark.gpu
def test_gpu_fused_equals_naive():
    x, k, v, off, dout, lnw, lnb, rmw = _inputs(GPU_LENS, 4, 4, 128, 128, device="cuda", seed=9)
    _, out64, st = _grads(x, k, v, off, dout, lnw, lnb, rmw, "gelu_tanh", torch.float64)
    args = (dout, x, k, v, off, out64.to(x.dtype), st["mean"].float(), st["rstd"].float(),
            st["rrms"].float())
    kw = dict(ln_weight=lnw, ln_bias=lnb, rms_weight=rmw)
    naive = flash_norm_attention_bwd(*args, passes=(), **kw)
    fused = flash_norm_attention_bwd(*args, **kw)
    for name, a, b in zip(NAMES, naive, fused):
        assert _rel(b, a) < 1e-3, name


# ---------------------------------------------------------------------------------------------
# The forward's saved g and lse (fna_bwd_rows_saved_naive)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("activation,H,Hkv", [
    pytest.param("gelu_tanh", 2, 1, marks=pytest.mark.slow), ("softmax", 4, 2)])
def test_saved_g_and_lse_match_the_recompute(activation, H, Hkv):
    """With the forward's attention output g (in x's dtype, as the training forward stores it)
    and softmax's lse the rows kernel skips the attention recompute of loop 1: every gradient
    within the same bound against fp64 as the recomputing kernel, naive and through the default
    passes (the cluster exchange), and within the rounding of g's bf16 copy of the recomputing
    kernel's gradients."""
    D, L = 32, 24
    x, k, v, off, dout, lnw, lnb, rmw = _inputs(LENS, H, Hkv, D, L)
    ref, out64, stats = _grads(x, k, v, off, dout, lnw, lnb, rmw, activation, torch.float64)
    eager, _, _ = _grads(x, k, v, off, dout, lnw, lnb, rmw, activation, x.dtype)
    g = stats["g"].to(x.dtype)
    lse = stats.get("lse")
    assert (lse is not None) == (activation == "softmax")
    args = (dout, x, k, v, off, out64.to(x.dtype), stats["mean"], stats["rstd"], stats["rrms"])
    kw = dict(activation=activation, ln_weight=lnw, ln_bias=lnb, rms_weight=rmw, block_m=16)
    for passes in ((), "default"):
        base = flash_norm_attention_bwd(*args, passes=passes, **kw)
        got = flash_norm_attention_bwd(*args, passes=passes, g=g, lse=lse, **kw)
        if passes == "default":  # (z is not stored with g saved: only dlnq's scratch to drop)
            assert any("cluster-reduce-chain] applied" in r
                       and "the stores to scratch DLNQ erased" in r and "kept" not in r
                       for r in last_remarks("fna_bwd_rows_saved_naive")), \
                last_remarks("fna_bwd_rows_saved_naive")
            assert unwritten_scratch(last_remarks("fna_bwd_rows_saved_naive")) == {"DLNQ"}
        for name, gr, b, r, e in zip(NAMES, got, base, ref, eager):
            if r is None:
                assert gr is None, name
                continue
            assert torch.isfinite(gr.float()).all(), name
            assert _rel(gr, r) <= 1.5 * _rel(e, r) + FLOOR, (passes, name, _rel(gr, r), _rel(e, r))
            assert _rel(gr, b) <= 2e-2, (passes, name, _rel(gr, b))


def test_saved_g_and_lse_are_checked():
    """A saved g of the wrong shape or dtype, lse missing for softmax or given for GDPA, lse
    without g: refused by name."""
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([3, 5], 2, 2, 32, 8)
    st = torch.zeros(8)
    args = (dout, x, k, v, off, x, st, st, st)
    g = torch.zeros(8, 2, 32, dtype=x.dtype)
    with pytest.raises(ValueError, match="g must be a"):
        flash_norm_attention_bwd(*args, g=g.float())
    with pytest.raises(ValueError, match="softmax with g needs lse"):
        flash_norm_attention_bwd(*args, activation="softmax", g=g)
    with pytest.raises(ValueError, match="lse is only saved for softmax"):
        flash_norm_attention_bwd(*args, g=g, lse=torch.zeros(8, 2))
    with pytest.raises(ValueError, match="lse is given without g"):
        flash_norm_attention_bwd(*args, lse=torch.zeros(8, 2))


def test_host_offsets_are_read_once_per_version():
    """`ops.common.host_offsets`: the forward's host copy of the offsets, which the backward then
    finds without a read of its own; an in-place update (a new version) reads them again; an
    inference tensor (no version counter) is never cached."""
    from normfuse.ops.common import host_offsets
    t = torch.tensor([0, 3, 5], dtype=torch.int32)
    assert host_offsets(t, read=False) is None
    a = host_offsets(t)
    assert a.dtype == torch.int64 and a.tolist() == [0, 3, 5]
    assert host_offsets(t, read=False) is a and host_offsets(t) is a
    t[2] = 6
    assert host_offsets(t, read=False) is None
    b = host_offsets(t)
    assert b is not a and b.tolist() == [0, 3, 6]
    with torch.inference_mode():
        u = torch.tensor([0, 1], dtype=torch.int32)
    assert host_offsets(u).tolist() == [0, 1] and host_offsets(u, read=False) is None


def test_row_block_tables_are_kept_per_version(monkeypatch):
    """`ops.common.cached_row_block_table`: built once per offsets tensor, version and block
    size (the layers sharing one offsets tensor, a layer's forward and backward); an in-place
    update builds it again; nothing is kept while a CUDA graph is captured (the table must be
    computed inside the graph) or for inference tensors; clear_caches() drops them."""
    from normfuse.ops import common
    t = torch.tensor([0, 3, 3, 40], dtype=torch.int64)
    a = common.cached_row_block_table(t, 16, 40)
    assert torch.equal(a, common.row_block_table(t, 16, 40))
    assert common.cached_row_block_table(t, 16, 40) is a
    b = common.cached_row_block_table(t, 32, 40)
    assert b is not a and torch.equal(b, common.row_block_table(t, 32, 40))
    assert common.cached_row_block_table(t, 16, 40) is a  # (both block sizes kept)
    t[1] = 5
    c = common.cached_row_block_table(t, 16, 40)
    assert c is not a and torch.equal(c, common.row_block_table(t, 16, 40))
    assert not torch.equal(c, a)
    monkeypatch.setattr(common, "capturing", lambda: True)
    d = common.cached_row_block_table(t, 16, 40)
    assert d is not c and torch.equal(d, c)
    monkeypatch.setattr(common, "capturing", lambda: False)
    assert common.cached_row_block_table(t, 16, 40) is c
    with torch.inference_mode():
        u = torch.tensor([0, 1], dtype=torch.int32)
    assert common.cached_row_block_table(u, 16, 1) is not common.cached_row_block_table(u, 16, 1)
    common.clear_caches()
    assert common.cached_row_block_table(t, 16, 40) is not c


@pytest.mark.gpu
@pytest.mark.parametrize("activation, H", [("gelu_tanh", 3), ("softmax", 4)])
def test_gpu_kv_stages_bitwise_repeatable(activation, H):
    """The dK / dV kernel at 3 stages (the default), whose dz tile feeds two wgmmas: repeated
    runs give the same bits as each other and as 2 stages (the pipeliner race of docs/design.md,
    a tile's shared slot overwritten while a wgmma reads it, shows as run-to-run differences)."""
    from normfuse.ops.flash_norm_attention_bwd import BwdConfig
    x, k, v, off, dout, lnw, lnb, rmw = _inputs([300, 0, 77, 1000, 5], H, H, 128, 128, seed=11,
                                                device="cuda")
    _, out64, st = _grads(x.cpu(), k.cpu(), v.cpu(), off.cpu(), dout.cpu(), lnw.cpu(), lnb.cpu(),
                          rmw.cpu(), activation, torch.float64)
    args = (dout, x, k, v, off, None, *(st[n].float().cuda() for n in ("mean", "rstd", "rrms")))
    kw = dict(activation=activation, ln_weight=lnw, ln_bias=lnb, rms_weight=rmw)
    assert BwdConfig().kv_num_stages == 3
    two = flash_norm_attention_bwd(*args, config=BwdConfig(kv_num_stages=2), **kw)
    for _ in range(4):
        got = flash_norm_attention_bwd(*args, **kw)
        for name, a, b in zip(NAMES, two, got):
            assert torch.equal(a, b), name


# ---------------------------------------------------------------------------------------------
# The kvq plan (rows_pre, kvq, rows_post: the attention's products once, all keys in one tile)
# ---------------------------------------------------------------------------------------------

def _saved_args(lens, H, Hkv, D, L, activation, *, device="cpu", seed=0, affine=True):
    """The op's arguments with the forward's saved g and lse (from the fp64 reference), the
    fp64 and eager gradients."""
    x, k, v, off, dout, lnw, lnb, rmw = _inputs(lens, H, Hkv, D, L, seed=seed, device=device,
                                                affine=affine)
    cpu = [None if t is None else t.cpu() for t in (x, k, v, off, dout, lnw, lnb, rmw)]
    ref, out64, st = _grads(*cpu, activation, torch.float64)
    eager, _, _ = _grads(*cpu, activation, x.dtype)
    lse = st.get("lse")
    args = (dout, x, k, v, off, out64.to(x.dtype).to(device),
            *(st[n].float().to(device) for n in ("mean", "rstd", "rrms")))
    kw = dict(activation=activation, ln_weight=lnw, ln_bias=lnb, rms_weight=rmw,
              g=st["g"].to(x.dtype).to(device), lse=None if lse is None else lse.to(device))
    return args, kw, ref, eager


def _within_eager(got, ref, eager, what=""):
    for name, g, r, e in zip(NAMES, got, ref, eager):
        if r is None:
            assert g is None, name
            continue
        assert torch.isfinite(g.float()).all(), (what, name)
        assert _rel(g, r) <= 1.5 * _rel(e, r) + FLOOR, (what, name, _rel(g, r), _rel(e, r))


@pytest.mark.parametrize("activation, H, Hkv, D, L, variant", [
    pytest.param("softmax", 4, 2, 32, 24, "f32", id="softmax-h4-gqa"),
    pytest.param("gelu_tanh", 3, 1, 32, 40, "dq_t", id="gelu-h3-mqa-l40"),  # BLOCK_L 64, ragged
])
def test_kvq_plan_matches_fp64(activation, H, Hkv, D, L, variant):
    """plan="kvq" against fp64 autograd (every gradient within 1.5x eager bf16's error), dz and
    dlnq stored in x's dtype (the default), and one variant: both in fp32 (then the split
    plan's values but for the order of sums: within 1e-5), or dQ computed as dS K at 16 rows
    a step (the default computes it transposed, `BwdConfig.kvq_dq_t`, at 32); rows_pre through its cluster (the exchange of c) gives the bits of
    the naive rows_pre; dK and dV are the split plan's bits (the same products in the same
    order); everything within 2e-2 of the split plan."""
    from normfuse.ops.flash_norm_attention_bwd import BwdConfig
    args, kw, ref, eager = _saved_args(LENS, H, Hkv, D, L, activation)
    split = flash_norm_attention_bwd(*args, block_m=16, plan="split", **kw)
    got = flash_norm_attention_bwd(*args, block_m=16, plan="kvq", **kw)
    assert any(f"split over a {H}-CTA cluster" in r
               for r in last_remarks("fna_bwd_rows_pre_naive")), last_remarks("fna_bwd_rows_pre_naive")
    _within_eager(got, ref, eager, "kvq")
    naive = flash_norm_attention_bwd(*args, block_m=16, plan="kvq", passes=(), **kw)
    other = flash_norm_attention_bwd(*args, block_m=16, plan="kvq", **kw, **(
        dict(dlnq_dtype=torch.float32) if variant == "f32" else
        dict(config=BwdConfig(kvq_block_m=16, kvq_num_stages=2, kvq_dq_t=False))))
    _within_eager(other, ref, eager, variant)
    for name, a, b, s, f in zip(NAMES, got, naive, split, other):
        if a is None:
            continue
        assert torch.equal(a, b), name
        assert _rel(a, s) <= 2e-2 and _rel(f, s) <= 2e-2, (name, _rel(a, s), _rel(f, s))
        if variant == "f32":
            assert _rel(f, s) <= 1e-5, (name, _rel(f, s))
        if name in ("dk", "dv", "d_rms_weight"):
            assert torch.equal(a, s) and torch.equal(f, s), name


def _kvq_launches(*args, config, **kw):
    """(gradients, {kernel name: (constexprs, its last argument)}) of plan="kvq" at block_m 16
    with `config`, each CPU launch seen on its way to the interpreter."""
    from normfuse.ops import flash_norm_attention_bwd as bwd
    seen = {}

    def spy(kernel, passes, grid, a, consts, *rest):
        seen[kernel.__name__] = (dict(consts), a[-1])
        return real(kernel, passes, grid, a, consts, *rest)
    real = bwd.cpu_launcher(spy)
    try:
        got = flash_norm_attention_bwd(*args, block_m=16, plan="kvq", config=config, **kw)
    finally:
        bwd.cpu_launcher(real)
    return got, seen


@pytest.mark.parametrize("activation, H, Hkv, affine", [
    pytest.param("gelu_tanh", 2, 2, True, id="gelu-h2-affine"),
    pytest.param("softmax", 3, 1, False, id="softmax-h3-mqa"),
])
def test_kvq_plan_sums_in_post(activation, H, Hkv, affine):
    """BwdConfig(kvq_sums_in_post=True), the default: rows_post sums the stored dlnq over D
    itself (no PART from the kvq kernel). Against the kvq kernel's own sums
    (kvq_sums_in_post=False): the same sums of the same rounded dlnq in another order of adds,
    dK, dV, dz-side gradients bitwise, dx and the LayerNorm weights' within 1e-2 and within
    eager's error against fp64; the kvq kernel compiled without its PART stores
    (HAS_PART=False, the plan's second buffer unallocated), with them when off."""
    from normfuse.ops.flash_norm_attention_bwd import BwdConfig
    assert BwdConfig().kvq_sums_in_post is True
    args, kw, ref, eager = _saved_args(LENS, H, Hkv, 32, 40, activation, affine=affine)
    base, seen_off = _kvq_launches(*args, config=BwdConfig(kvq_sums_in_post=False), **kw)
    got, seen = _kvq_launches(*args, config=BwdConfig(), **kw)
    consts = {name: c for name, (c, _) in seen.items()}
    assert consts["fna_bwd_kvq_naive"]["HAS_PART"] is False, consts
    assert consts["fna_bwd_rows_post_naive"]["SUMS"] is True, consts
    off = {name: c for name, (c, _) in seen_off.items()}
    assert off["fna_bwd_kvq_naive"]["HAS_PART"] is True, off
    assert off["fna_bwd_rows_post_naive"]["SUMS"] is False, off
    _within_eager(got, ref, eager, "sums_in_post")
    for name, a, b in zip(NAMES, got, base):
        if a is None:
            continue
        if name in ("dk", "dv", "d_rms_weight"):
            assert torch.equal(a, b), name
        else:
            assert _rel(a, b) <= 1e-2, (name, _rel(a, b))


def test_kvq_plan_longest_first():
    """BwdConfig(kvq_longest_first=True), the default: the kvq programs take their batches from
    the lengths' order, longest first (ties in batch order; `ops.common.longest_first`, kept
    per offsets tensor and version): every gradient bitwise batch order's (each program's work
    is the same), the order passed to the kernel (HAS_ORDER), none in batch order."""
    from normfuse.ops import common
    from normfuse.ops.flash_norm_attention_bwd import BwdConfig
    off = torch.tensor([0, 0, 5, 6, 26, 26])  # LENS: 0, 5, 1, 20, 0
    assert common.longest_first(off).tolist() == [3, 1, 2, 0, 4]
    assert common.longest_first(off).dtype == torch.int32
    kept = common.cached_longest_first(off)
    assert common.cached_longest_first(off) is kept
    off2 = off.clone()
    assert common.cached_longest_first(off2) is not kept
    off2[1:] += 7  # (refilled in place: a new version, a new order)
    off2[2] = 30
    assert common.cached_longest_first(off2).tolist() == common.longest_first(off2).tolist()
    args, kw, ref, eager = _saved_args(LENS, 2, 1, 32, 40, "gelu_tanh")
    assert BwdConfig().kvq_longest_first is True
    base, seen_off = _kvq_launches(*args, config=BwdConfig(kvq_longest_first=False), **kw)
    assert seen_off["fna_bwd_kvq_naive"][0]["HAS_ORDER"] is False
    got, seen = _kvq_launches(*args, config=BwdConfig(), **kw)
    consts, order = seen["fna_bwd_kvq_naive"]
    assert consts["HAS_ORDER"] is True and order.tolist() == [3, 1, 2, 0, 4]
    for name, a, b in zip(NAMES, got, base):
        assert (a is None and b is None) or torch.equal(a, b), name


def test_kvq_plan_writes_every_element(monkeypatch):
    """Every buffer of the kvq plan NaN-poisoned (torch.empty / empty_like): an element no kernel
    stores shows; empty sequences (first and last) get dK = dV = 0; with the weights (their
    partial rows from two kernels) and the upper-bound grid of the autograd backward's call
    (check_offsets=False, offsets not read on the host: dead row-table entries)."""
    _poison_new_buffers(monkeypatch)
    args, kw, ref, eager = _saved_args([0, 6, 19, 0], 2, 1, 32, 24, "softmax", seed=6)
    from normfuse.ops import flash_norm_attention_bwd as bwd
    monkeypatch.setattr(bwd, "host_offsets",  # (CPU offsets are always "on the host")
                        lambda offsets, read=True: offsets.to(torch.int64) if read else None)
    # (plan="default" runs DEFAULT_PLAN where it applies: here the kvq plan, g being saved and
    # enough programs)
    monkeypatch.setattr(bwd, "DEFAULT_PLAN", "kvq")
    monkeypatch.setattr(bwd, "KVQ_MIN_PROGRAMS", 4)
    runs = []
    monkeypatch.setattr(bwd, "_kvq_plan", lambda *a, _real=bwd._kvq_plan: runs.append(1)
                        or _real(*a))
    got = flash_norm_attention_bwd(*args, block_m=16, check_offsets=False, **kw)
    assert runs, "the kvq plan did not run"
    _within_eager(got, ref, eager)
    assert (got[1][0] == 0).all() and (got[2][3] == 0).all()
    # too few programs (B * Hkv = 4 < KVQ_MIN_PROGRAMS): plan="default" takes the split plan
    monkeypatch.setattr(bwd, "KVQ_MIN_PROGRAMS", 5)
    flash_norm_attention_bwd(*args, block_m=16, check_offsets=False, **kw)
    assert len(runs) == 1


def test_kvq_plan_refusals():
    """plan="kvq" without the saved g, with more keys than its one tile, an unknown plan,
    dlnq_dtype where it does not apply, and fp32 dlnq at a kvq tile that faulted on the H200:
    refused by name, with what to do instead."""
    a, w = _base()
    args = (a["dout"], a["x"], a["k"], a["v"], a["offsets"], a["out"], a["mean"], a["rstd"],
            a["rrms"])
    g = torch.zeros(a["x"].shape, dtype=a["x"].dtype)
    with pytest.raises(ValueError, match="plan 'kvq' needs the forward's saved g.*save=True"):
        flash_norm_attention_bwd(*args, plan="kvq", **w)
    with pytest.raises(ValueError, match="unknown plan 'fast'; expected 'default' or one of"):
        flash_norm_attention_bwd(*args, plan="fast", **w)
    with pytest.raises(ValueError, match="dlnq_dtype is the kvq plan's: pass plan='kvq'"):
        flash_norm_attention_bwd(*args, dlnq_dtype=torch.float32, **w)
    with pytest.raises(ValueError, match="dlnq_dtype is the kvq plan's"):  # (whatever "default" is)
        flash_norm_attention_bwd(*args, g=g, dlnq_dtype=torch.float32, **w)
    with pytest.raises(ValueError, match="dlnq_dtype must be x's dtype"):
        flash_norm_attention_bwd(*args, g=g, plan="kvq", dlnq_dtype=torch.float16, **w)
    from normfuse.ops.flash_norm_attention_bwd import BwdConfig
    for cfg in (BwdConfig(), BwdConfig(kvq_block_m=16, kvq_dq_t=True, kvq_num_stages=2),
                BwdConfig(kvq_block_m=32, kvq_dq_t=True, kvq_num_stages=3)):
        with pytest.raises(ValueError, match=r"float32 runs the kvq kernel only at .*"
                           r"\(16, False, 2, 8\).*\(32, False, 3, 8\).*dQ transposed \(kvq_dq_t=True\) "
                           r"with an fp32 dlnq faulted on the H200.*KVQ_F32_CONFIG"):
            flash_norm_attention_bwd(*args, g=g, plan="kvq", dlnq_dtype=torch.float32,
                                     config=cfg, **w)
    for cfg in (BwdConfig(kvq_block_m=64, kvq_dq_t=False, kvq_num_stages=2),
                BwdConfig(kvq_block_m=16, kvq_dq_t=False, kvq_num_stages=1),
                BwdConfig(kvq_block_m=16, kvq_dq_t=False, kvq_num_stages=2, kvq_num_warps=4)):
        with pytest.raises(ValueError, match=r"float32 runs the kvq kernel only at .*"
                           r"other tiles are not checked on the H200"):
            flash_norm_attention_bwd(*args, g=g, plan="kvq", dlnq_dtype=torch.float32,
                                     config=cfg, **w)
    k = a["k"].repeat(1, 9, 1, 1)  # 144 keys
    with pytest.raises(ValueError, match=r"L <= 128 keys and D <= 128, got L = 144.*plan 'split'"):
        flash_norm_attention_bwd(a["dout"], a["x"], k, k, a["offsets"], a["out"], a["mean"],
                                 a["rstd"], a["rrms"], g=g, plan="kvq", **w)


@pytest.mark.gpu
@pytest.mark.parametrize("activation, H, Hkv, L", [
    ("gelu_tanh", 2, 2, 128), ("softmax", 4, 2, 128), ("silu", 3, 3, 100)])
def test_gpu_kvq_plan(activation, H, Hkv, L, monkeypatch):
    """On the device: the kvq plan (its buffers NaN-poisoned) within eager's error against fp64,
    close to the split plan (in norm and in every element: a wrong row would not hide in the
    norm of 2084 rows), in fp32 (at `KVQ_F32_CONFIG`'s tile, its default) the split plan's
    values, and at each tile the H200 timed (16 rows with dQ as dS K or transposed, 32 rows
    transposed: the default) bitwise repeatable at 2 and 3 stages, the stages giving the same
    bits (its kernels run no atomics; the pipeliner race of docs/design.md, a shared slot
    overwritten while a wgmma reads it, would show here)."""
    from normfuse.ops.flash_norm_attention_bwd import BwdConfig
    args, kw, ref, eager = _saved_args(GPU_LENS, H, Hkv, 128, L, activation, device="cuda",
                                       seed=12)
    split = flash_norm_attention_bwd(*args, plan="split", **kw)
    _poison_new_buffers(monkeypatch)
    got = flash_norm_attention_bwd(*args, plan="kvq", **kw)
    _within_eager(got, ref, eager)
    # the default sums the LayerNorm's rows in rows_post (kvq_sums_in_post); the kvq kernel's
    # own sums: eager's error, the default's values but for the order of the sums' adds,
    # repeatable
    own_cfg = BwdConfig(kvq_sums_in_post=False, kvq_longest_first=False)
    own, own2 = (flash_norm_attention_bwd(*args, plan="kvq", config=own_cfg, **kw)
                 for _ in range(2))
    _within_eager(own, ref, eager, "sums_in_kvq")
    for name, a, p, p2 in zip(NAMES, got, own, own2):
        assert a is None or (torch.equal(p, p2) and _rel(p, a) <= 1e-2), (name, "sums_in_kvq")
    # the kvq programs longest sequence first (the default) or in batch order: the same work
    # per program, the same bits
    lpt = flash_norm_attention_bwd(*args, plan="kvq", config=BwdConfig(kvq_longest_first=False),
                                   **kw)
    for name, a, o in zip(NAMES, got, lpt):
        assert a is None or torch.equal(a, o), (name, "batch order")
    f32 = flash_norm_attention_bwd(*args, plan="kvq", dlnq_dtype=torch.float32, **kw)
    for name, a, f, s in zip(NAMES, got, f32, split):
        if a is None:
            continue
        assert _rel(a, s) <= 2e-2, (name, _rel(a, s))
        assert _rel(f, s) <= 1e-5, ("fp32", name, _rel(f, s))
        err = float((a.float() - s.float()).abs().max())
        assert err <= 5e-2 * float(s.float().abs().max()), (name, err)
    # every tile fp32 is allowed at (dQ as dS K): the split plan's values, repeatable
    from normfuse.ops.flash_norm_attention_bwd import KVQ_F32_TILES
    for bm, dqt, st, w in sorted(KVQ_F32_TILES):
        cfg = BwdConfig(kvq_block_m=bm, kvq_dq_t=dqt, kvq_num_stages=st, kvq_num_warps=w)
        one, two = (flash_norm_attention_bwd(*args, plan="kvq", dlnq_dtype=torch.float32,
                                             config=cfg, **kw) for _ in range(2))
        for name, a, b, s in zip(NAMES, one, two, split):
            assert a is None or (torch.equal(a, b) and _rel(a, s) <= 1e-5), (cfg, name)
    # the tiles the H200 timed (BLOCK_M, dQ transposed) at 2 and 3 stages: each repeatable, and
    # the stages change no arithmetic (the same bits within a tile); the default is one of them
    firsts = {}
    for bm, dqt, st in [(bm, t, st) for bm, t in ((16, False), (16, True), (32, True))
                        for st in (2, 3)]:
        cfg = BwdConfig(kvq_block_m=bm, kvq_dq_t=dqt, kvq_num_stages=st)
        first = flash_norm_attention_bwd(*args, plan="kvq", config=cfg, **kw)
        _within_eager(first, ref, eager, cfg)
        for _ in range(2):
            again = flash_norm_attention_bwd(*args, plan="kvq", config=cfg, **kw)
            for name, a, b in zip(NAMES, first, again):
                assert a is None or torch.equal(a, b), (cfg, name)
        for name, a, b in zip(NAMES, firsts.setdefault((bm, dqt), first), first):
            assert a is None or torch.equal(a, b), (cfg, name)
    default = BwdConfig()
    for name, a, b in zip(NAMES, got, firsts[default.kvq_block_m, default.kvq_dq_t]):
        assert a is None or torch.equal(a, b), ("default", name)
