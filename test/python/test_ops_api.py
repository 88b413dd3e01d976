"""The ops' API v1 on the CPU: the reference path of every op (numerics against the fp64
oracles, gradients against plain torch autograd in fp64 and gradcheck, the one FallbackWarning),
`offset`, weight lists (outputs side by side, adjacent views joined without a copy), strided
weights (Conv1D's weight.t()), the derived-weight cache (versions, freed storage, inference
tensors), and the nn modules (offset, deepcopy, state_dict, .to).

The fused path of the same features (lists, offset, strided weights) runs through the
interpreter in test_backward_training.py (test_cpu_fused_path_*).
"""
from __future__ import annotations

import copy
import gc
import warnings

import pytest
import torch
import torch.nn.functional as F

from normfuse import reference as ref
from normfuse.nn import (LayerNormLinear, LinearLayerNorm, LinearRMSNorm, PostNormMLP,
                         RMSNormLinear)
from normfuse.ops import (FallbackWarning, common, layernorm_linear, linear_layernorm,
                          linear_rmsnorm, postnorm_mlp, rmsnorm_linear)
from normfuse.ops import prenorm_linear as pre

pytestmark = pytest.mark.filterwarnings("ignore::normfuse.ops.FallbackWarning")


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _inputs(K=64, Ns=(32,), dtype=torch.bfloat16, seed=0, lead=(2, 7), post_n=None):
    gen = _g(seed)
    r = lambda *s, scale=1.0, shift=0.0: (torch.randn(*s, generator=gen) * scale + shift).to(dtype)  # noqa: E731
    x = r(*lead, K, shift=0.5)
    ws = [r(n, K, scale=K ** -0.5) for n in Ns]
    bs = [r(n, scale=0.1) for n in Ns]
    L = K if post_n is None else post_n
    g = r(L, scale=0.2)  # with offset=1.0: a scale around 1 (Gemma)
    beta = r(L, scale=0.1)
    res = r(*lead, post_n or 1, scale=1.0)
    return x, ws, bs, g, beta, res


# ---------------------------------------------------------------------------------------------
# The reference path: numerics, the warning
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 8e-3), (torch.float32, 1e-5)],
                         ids=["bf16", "fp32"])
@pytest.mark.parametrize("offset", [0.0, 1.0])
@pytest.mark.parametrize("op", ["rms", "ln", "post_rms", "post_ln"])
def test_reference_path_matches_fp64(op, offset, dtype, tol):
    x, ws, bs, g, beta, res = _inputs(dtype=dtype, post_n=32 if op.startswith("post") else None)
    w, b = ws[0], bs[0]
    if offset == 0.0:
        g = g + 1  # a scale around 1 either way
    if op == "rms":
        y = rmsnorm_linear(x, g, w, 1e-6, b, offset=offset)
        want = ref.rmsnorm_linear_ref(x, g, w, 1e-6, b, offset=offset)
    elif op == "ln":
        y = layernorm_linear(x, g, beta, w, 1e-5, b, offset=offset)
        want = ref.layernorm_linear_ref(x, g, beta, w, 1e-5, b, offset=offset)
    elif op == "post_rms":
        y = linear_rmsnorm(x, w, g, 1e-6, b, res, offset=offset)
        want = ref.linear_norm_ref(x, w, g, None, 1e-6, b, res, offset=offset)
    else:
        y = linear_layernorm(x, w, g, beta, 1e-5, b, res, offset=offset)
        want = ref.linear_norm_ref(x, w, g, beta, 1e-5, b, res, offset=offset)
    assert y.dtype == dtype and y.shape == (2, 7, 32)
    assert ref.rel_err(y, want) < tol


def test_block_reference_path_matches_the_module_reference():
    torch.manual_seed(1)
    for layernorm in (False, True):
        m = PostNormMLP(32, 48, layernorm=layernorm, dtype=torch.float64)
        x = torch.randn(3, 5, 32, dtype=torch.float64)
        torch.testing.assert_close(m(x), m.reference(x))


def test_fallback_warns_once_per_reason(monkeypatch):
    monkeypatch.setattr(common, "_WARNED", set())
    x, ws, bs, g, beta, _ = _inputs()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        for _ in range(3):
            rmsnorm_linear(x, g, ws[0])
            layernorm_linear(x, g, beta, ws[0])
    got = [r for r in rec if issubclass(r.category, FallbackWarning)]
    assert len(got) == 1, [str(r.message) for r in got]
    assert issubclass(FallbackWarning, UserWarning)
    msg = str(got[0].message)
    assert "on cpu" in msg and "Hopper GPUs (sm_90)" in msg and "reference math" in msg


# ---------------------------------------------------------------------------------------------
# Weight lists and strided weights
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["rms", "ln"])
def test_weight_list_outputs_side_by_side(op):
    x, ws, bs, g, beta, _ = _inputs(Ns=(16, 8, 24), dtype=torch.float32)
    bias = [bs[0], None, bs[2]]
    if op == "rms":
        f = lambda w, b: rmsnorm_linear(x, g, w, 1e-6, b, offset=1.0)  # noqa: E731
    else:
        f = lambda w, b: layernorm_linear(x, g, beta, w, 1e-5, b, offset=1.0)  # noqa: E731
    y = f(ws, bias)
    assert y.shape == (2, 7, 48)
    parts = torch.cat([f(w, b) for w, b in zip(ws, bias)], -1)
    torch.testing.assert_close(y, parts)
    wcat = torch.cat(ws)
    bcat = torch.cat([bs[0], torch.zeros(8), bs[2]])
    want = (ref.rmsnorm_linear_ref(x, g, wcat, 1e-6, bcat, offset=1.0) if op == "rms" else
            ref.layernorm_linear_ref(x, g, beta, wcat, 1e-5, bcat, offset=1.0))
    assert ref.rel_err(y, want) < 1e-6
    assert f(ws, None).shape == (2, 7, 48) and f(tuple(ws), (None, None, None)).shape == (2, 7, 48)


@pytest.mark.parametrize("op", ["rms", "ln"])
def test_split_op_members_are_the_joined_outputs_columns(op):
    """rmsnorm_linear_split / layernorm_linear_split (reference path on the CPU): each member a
    contiguous [..., N_i] tensor equal to its columns of the joined op; under autograd the same
    values and the joined op's gradients; under torch.compile one graph (the custom op and its
    fake implementation); a single weight is refused by name."""
    from normfuse.ops import layernorm_linear_split, rmsnorm_linear_split
    x, ws, bs, g, beta, _ = _inputs(Ns=(16, 8, 24), dtype=torch.float32)
    bias = [bs[0], None, bs[2]]
    if op == "rms":
        split = lambda x, w, b: rmsnorm_linear_split(x, g, w, 1e-6, b, offset=1.0)  # noqa: E731
        joined = lambda x, w, b: rmsnorm_linear(x, g, w, 1e-6, b, offset=1.0)  # noqa: E731
    else:
        split = lambda x, w, b: layernorm_linear_split(x, g, beta, w, 1e-5, b)  # noqa: E731
        joined = lambda x, w, b: layernorm_linear(x, g, beta, w, 1e-5, b)  # noqa: E731
    with torch.no_grad():
        outs = split(x, ws, bias)
        y = joined(x, ws, bias)
    assert [tuple(o.shape) for o in outs] == [(2, 7, 16), (2, 7, 8), (2, 7, 24)]
    assert all(o.is_contiguous() for o in outs)
    torch.testing.assert_close(torch.cat(outs, -1), y)
    compiled = torch.compile(lambda x: split(x, ws, bias), fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(torch.cat(compiled(x), -1), y)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    wa = [w.clone().requires_grad_() for w in ws]
    wb = [w.clone().requires_grad_() for w in ws]
    sum((o * (i + 1)).sum() for i, o in enumerate(split(xa, wa, bias))).backward()
    yb = joined(xb, wb, bias)
    sum((o * (i + 1)).sum() for i, o in enumerate(yb.split([16, 8, 24], -1))).backward()
    torch.testing.assert_close(xa.grad, xb.grad)
    for a, b in zip(wa, wb):
        torch.testing.assert_close(a.grad, b.grad)
    with pytest.raises(TypeError, match="a list of 2 or more sibling weights"):
        split(x, ws[0], None)


def test_adjacent_views_are_joined_without_a_copy():
    buf = torch.randn(48, 64)
    ws = [buf[:16], buf[16:24], buf[24:]]
    assert common.adjacent(ws)
    w, b = pre._joined(ws, None)
    assert w.data_ptr() == buf.data_ptr() and w.shape == (48, 64) and torch.equal(w, buf)
    # columns of a transposed buffer ([K, N] storage, Conv1D-style): adjacent too
    store = torch.randn(64, 48)
    wt = store.t()
    vs = [wt[:16], wt[16:48]]
    assert common.adjacent(vs)
    joined, _ = pre._joined(vs, None)
    assert joined.data_ptr() == store.data_ptr() and torch.equal(joined, wt)
    # not adjacent: out of order, a gap, another buffer
    assert not common.adjacent([buf[16:24], buf[:16]])
    assert not common.adjacent([buf[:16], buf[20:24]])
    assert not common.adjacent([buf[:16], torch.randn(8, 64)])


def test_separate_siblings_concatenated_once_per_version():
    ws = [torch.randn(16, 64), torch.randn(8, 64)]
    bs = [torch.randn(16), None]
    w1, b1 = pre._joined(ws, bs)
    w2, b2 = pre._joined(ws, bs)
    assert w1 is w2 and b1 is b2  # cached
    torch.testing.assert_close(w1, torch.cat(ws))
    torch.testing.assert_close(b1, torch.cat([bs[0], torch.zeros(8)]))
    with torch.no_grad():
        ws[1].mul_(2.0)  # an optimizer step
    w3, _ = pre._joined(ws, bs)
    assert w3 is not w1
    torch.testing.assert_close(w3, torch.cat(ws))


def test_strided_weight_conv1d_layout():
    """GPT-2's Conv1D stores its weight [in, out]; the op takes weight.t() ([out, in], strides
    (1, out)) as it is: the reference path reads it directly, the launch path copies it to unit
    stride along K once per version (or folds it, which writes a contiguous tensor)."""
    x, ws, bs, g, _, _ = _inputs(dtype=torch.float32)
    store = ws[0].t().contiguous()  # [K, N]
    w = store.t()
    assert w.stride() == (1, 32)
    y = rmsnorm_linear(x, g, w, 1e-6, bs[0])
    torch.testing.assert_close(y, rmsnorm_linear(x, g, ws[0], 1e-6, bs[0]))
    y = linear_rmsnorm(x, w, torch.ones(32), 1e-6, bs[0])
    assert ref.rel_err(y, ref.linear_norm_ref(x, ws[0], torch.ones(32), None, 1e-6, bs[0])) < 1e-6
    u1 = pre._unit_k(w)
    assert u1.stride(-1) == 1 and u1 is pre._unit_k(w) and torch.equal(u1, ws[0])
    with torch.no_grad():
        store.add_(1.0)
    u2 = pre._unit_k(w)
    assert u2 is not u1 and torch.equal(u2, w)
    f = pre.folded_weight(w, g, 1.0)
    assert f.is_contiguous()
    torch.testing.assert_close(f, w * (g + 1.0)[None, :])


# ---------------------------------------------------------------------------------------------
# Autograd on the reference path
# ---------------------------------------------------------------------------------------------

def _grads(fn, tensors):
    ts = [t.detach().clone().requires_grad_(True) if t is not None else None for t in tensors]
    out = fn(*ts)
    gen = _g(99)
    out.backward(torch.randn(out.shape, generator=gen, dtype=out.dtype))
    return out.detach(), [t.grad if t is not None else None for t in ts]


@pytest.mark.parametrize("op", ["rms", "ln", "post_rms", "post_ln"])
def test_reference_path_gradients_match_torch_fp64(op):
    """Every input gets torch's gradient: x, norm weight/bias (offset 1), each sibling weight and
    bias (post-norm: weight, bias, residual)."""
    f64 = torch.float64
    post = op.startswith("post")
    x, ws, bs, g, beta, res = _inputs(Ns=(8, 16), dtype=f64, post_n=24 if post else None)
    K = x.shape[-1]
    if op == "rms":
        ours = lambda x, g, w0, w1, b0: rmsnorm_linear(x, g, [w0, w1], 1e-6, [b0, None], offset=1.0)  # noqa: E731
        theirs = lambda x, g, w0, w1, b0: torch.cat(  # noqa: E731
            [F.linear(F.rms_norm(x, (K,), g + 1.0, 1e-6), w0, b0),
             F.linear(F.rms_norm(x, (K,), g + 1.0, 1e-6), w1)], -1)
        ins = [x, g, ws[0], ws[1], bs[0]]
    elif op == "ln":
        ours = lambda x, g, b, w0, w1, b1: layernorm_linear(x, g, b, (w0, w1), 1e-5, (None, b1), offset=1.0)  # noqa: E731
        theirs = lambda x, g, b, w0, w1, b1: F.linear(  # noqa: E731
            F.layer_norm(x, (K,), g + 1.0, b, 1e-5), torch.cat([w0, w1]),
            torch.cat([torch.zeros(8, dtype=f64), b1]))
        ins = [x, g, beta, ws[0], ws[1], bs[1]]
    else:
        w = torch.randn(24, K, generator=_g(3), dtype=f64) * K ** -0.5
        b = bs[1][:8].repeat(3)
        if op == "post_rms":
            ours = lambda x, w, g, b, r: linear_rmsnorm(x, w, g, 1e-6, b, r, offset=1.0)  # noqa: E731
            theirs = lambda x, w, g, b, r: F.rms_norm(F.linear(x, w, b) + r, (24,), g + 1.0, 1e-6)  # noqa: E731
            ins = [x, w, g, b, res]
        else:
            ours = lambda x, w, g, bt, b, r: linear_layernorm(x, w, g, bt, 1e-5, b, r, offset=1.0)  # noqa: E731
            theirs = lambda x, w, g, bt, b, r: F.layer_norm(F.linear(x, w, b) + r, (24,), g + 1.0, bt, 1e-5)  # noqa: E731
            ins = [x, w, g, beta, b, res]
    y1, g1 = _grads(ours, ins)
    y2, g2 = _grads(theirs, ins)
    torch.testing.assert_close(y1, y2)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)


def test_reference_path_gradcheck():
    f64 = torch.float64
    gen = _g(5)
    x = torch.randn(3, 8, generator=gen, dtype=f64, requires_grad=True)
    g = torch.randn(8, generator=gen, dtype=f64, requires_grad=True)
    beta = torch.randn(8, generator=gen, dtype=f64, requires_grad=True)
    w0 = torch.randn(4, 8, generator=gen, dtype=f64, requires_grad=True)
    w1 = torch.randn(8, 3, generator=gen, dtype=f64).t().requires_grad_(True)  # strided
    b0 = torch.randn(4, generator=gen, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, g, beta, w0, w1, b0: layernorm_linear(x, g, beta, [w0, w1], 1e-5, [b0, None],
                                                        offset=0.5),
        (x, g, beta, w0, w1, b0))
    r = torch.randn(3, 4, generator=gen, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, w0, g, b0, r: linear_rmsnorm(x, w0, g[:4], 1e-6, b0, r, offset=1.0),
        (x, w0, g, b0, r))


def test_block_reference_path_gradients():
    torch.manual_seed(2)
    m = PostNormMLP(16, 24, layernorm=True, dtype=torch.float64)
    x = torch.randn(5, 16, dtype=torch.float64)
    ps = [m.w1, m.g1, m.beta1, m.b1, m.w2, m.g2, m.beta2, m.b2]
    y1, g1 = _grads(lambda x, *ps: postnorm_mlp(x, *ps, m.eps, layernorm=True), [x, *ps])
    y2, g2 = _grads(lambda x, *ps: mlp_torch(x, *ps, m.eps), [x, *ps])
    torch.testing.assert_close(y1, y2)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)


def mlp_torch(x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps):
    h = F.layer_norm(F.linear(x, w1, b1), (w1.shape[0],), g1, beta1, eps)
    return F.layer_norm(F.linear(F.silu(h), w2, b2) + x, (w2.shape[0],), g2, beta2, eps)


# ---------------------------------------------------------------------------------------------
# The derived-weight cache
# ---------------------------------------------------------------------------------------------

def test_derived_cache_follows_versions_and_keeps_one_entry_per_source():
    c = common.DerivedCache()
    w, g = torch.randn(8, 4), torch.randn(4)
    a = c.get("fold", (w, g), 0.0, lambda: w * g)
    assert c.get("fold", (w, g), 0.0, lambda: w * g) is a
    assert c.get("fold", (w.detach(), g.detach()), 0.0, lambda: w * g) is a  # same storage
    assert c.get("fold", (w, g), 1.0, lambda: w * (g + 1)) is not a  # another extra
    n = len(c)
    for _ in range(3):
        g.add_(1.0)  # new versions replace the entry: no pile-up of stale copies
        b = c.get("fold", (w, g), 0.0, lambda: w * g)
        torch.testing.assert_close(b, w * g)
    assert len(c) == n


def test_derived_cache_drops_entries_of_freed_storage():
    c = common.DerivedCache()
    w = torch.randn(8, 4)
    c.get("unit-k", (w,), None, lambda: w.clone())
    assert len(c) == 1
    del w
    gc.collect()
    assert len(c) == 0  # a new tensor at the same address cannot hit a dead entry
    calls = []
    for _ in range(2):  # and a fresh tensor computes
        v = torch.randn(8, 4)
        c.get("unit-k", (v,), None, lambda: calls.append(1) or v.clone())
        del v
    assert len(calls) == 2


def test_derived_cache_never_trusts_inference_tensors():
    c = common.DerivedCache()
    with torch.inference_mode():
        w = torch.randn(8, 4)
        a = c.get("unit-k", (w,), None, lambda: w.clone())
        b = c.get("unit-k", (w,), None, lambda: w.clone())
    assert a is not b and len(c) == 0
    assert c.get("x", (w,), None, lambda: 1, cache=False) == 1


# ---------------------------------------------------------------------------------------------
# Modules
# ---------------------------------------------------------------------------------------------

def _modules(dtype=torch.float32):
    torch.manual_seed(4)
    return [RMSNormLinear(32, 24, bias=True, dtype=dtype, offset=1.0),
            LayerNormLinear(32, 24, bias=True, dtype=dtype, offset=1.0),
            LinearRMSNorm(32, 24, bias=True, dtype=dtype, offset=1.0),
            LinearLayerNorm(32, 24, dtype=dtype)]


def test_modules_offset_reference_path_and_gradients():
    x = torch.randn(3, 5, 32, dtype=torch.float64)
    for m in _modules(torch.float64):
        assert m.offset in (0.0, 1.0) and ("offset=1.0" in repr(m)) == (m.offset == 1.0)
        # the norm's scale offset + g starts at 1
        torch.testing.assert_close(m.norm_weight + m.offset, torch.ones_like(m.norm_weight))
        with torch.no_grad():
            m.norm_weight.add_(0.1 * torch.randn(m.norm_weight.shape, dtype=torch.float64))
        y = m(x)
        s = m.norm_weight + m.offset
        nb = getattr(m, "norm_bias", None)
        if isinstance(m, RMSNormLinear):
            want = F.linear(F.rms_norm(x, (32,), s, m.eps), m.weight, m.bias)
        elif isinstance(m, LayerNormLinear):
            want = F.linear(F.layer_norm(x, (32,), s, nb, m.eps), m.weight, m.bias)
        elif isinstance(m, LinearRMSNorm):
            want = F.rms_norm(F.linear(x, m.weight, m.bias), (24,), s, m.eps)
        else:
            want = F.layer_norm(F.linear(x, m.weight, m.bias), (24,), s, nb, m.eps)
        torch.testing.assert_close(y, want)
        y.square().sum().backward()
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in m.parameters()), type(m)


def test_modules_deepcopy_state_dict_and_to():
    x = torch.randn(4, 32)
    for m in _modules():
        with torch.no_grad():
            m.norm_weight.add_(0.2)
            m.eval()
            y = m(x)
            c = copy.deepcopy(m)
            torch.testing.assert_close(c(x), y)
            c.weight.mul_(2.0)  # independent parameters; the fold cache follows each
            assert not torch.equal(c(x), y) and torch.equal(m(x), y)
            fresh = type(m)(32, 24, bias=m.bias is not None, offset=m.offset)
            fresh.load_state_dict(m.state_dict())
            torch.testing.assert_close(fresh(x), y)
            assert set(m.state_dict()) == {n for n, _ in m.named_parameters()}
            d = copy.deepcopy(m).to(torch.float64)
            torch.testing.assert_close(d(x.double()), y.double(), rtol=1e-5, atol=1e-5)
            b = copy.deepcopy(m).to(torch.bfloat16)
            assert b(x.bfloat16()).dtype == torch.bfloat16


def test_module_inference_reuses_the_fold_across_calls():
    m = RMSNormLinear(32, 24, dtype=torch.float32).eval()
    x = torch.randn(4, 32)
    with torch.no_grad():
        m.norm_weight.add_(0.5)
        w1 = m.folded_weight()
        assert m.folded_weight() is w1
        m.load_state_dict({k: v * 2 for k, v in m.state_dict().items()})  # copies in place
        w2 = m.folded_weight()
    assert w2 is not w1
    torch.testing.assert_close(w2, m.weight.detach() * m.norm_weight.detach())
    assert m(x).shape == (4, 24)


# ---------------------------------------------------------------------------------------------
# Layering (issue 23): each module imports only the modules below it, at any depth of the code
# ---------------------------------------------------------------------------------------------

LAYERS = {"ops": ["common", "prenorm_linear", "postnorm_linear", "fallback", "inference",
                  "training", "functional"],
          "nn": ["common", "modules", "postnorm"]}


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_layers_import_only_downward(package):
    import ast
    from pathlib import Path
    import normfuse
    root = Path(normfuse.__file__).parent / package
    order = LAYERS[package]
    for i, name in enumerate(order):
        tree = ast.parse((root / f"{name}.py").read_text())
        for node in ast.walk(tree):  # function-local imports included
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                targets = [node.module] if node.module else [a.name for a in node.names]
                for t in targets:
                    t = t.split(".")[0]
                    assert t not in order or order.index(t) < i, \
                        f"normfuse.{package}.{name} imports .{t}, which stands above it"
            if package == "ops" and isinstance(node, ast.ImportFrom) and node.level == 2:
                assert node.module.split(".")[0] not in ("nn", "repro"), (name, node.module)


def test_caches_release_the_weights_of_a_deleted_model(monkeypatch):
    """The fused inference path (launch stubbed): the weight memo and the derived-weight cache
    hold nothing that keeps a deleted model's derived weights alive; a second call hits the memo
    (no new resolution), an in-place update misses it."""
    import weakref
    from normfuse.ops import inference
    monkeypatch.setattr(inference, "fused_unavailable", lambda device: None)
    seen = []
    monkeypatch.setattr(inference, "launch_prenorm", lambda op, kind, x, w, g, beta, b, eps, wkey=None: (
        seen.append(w), x.new_empty(*x.shape[:-1], w.shape[0]))[1])
    resolves = []
    real = inference._resolve_pre
    monkeypatch.setattr(inference, "_resolve_pre", lambda *a: (resolves.append(1), real(*a))[1])
    m = RMSNormLinear(32, 24, dtype=torch.bfloat16).eval()
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    with torch.no_grad():
        m.norm_weight.add_(0.5)
        m(x)
        m(x)
        assert len(resolves) == 1 and seen[0] is seen[1]
        torch.testing.assert_close(seen[0], m.weight * m.norm_weight)
        m.weight.mul_(2.0)
        m(x)
        assert len(resolves) == 2 and seen[2] is not seen[0]
    folded = weakref.ref(seen[2])
    seen.clear()
    n = len(inference._PRE_MEMO)
    del m
    gc.collect()
    assert folded() is None
    assert len(inference._PRE_MEMO) < n


def test_weights_made_under_inference_mode_work_uncached(monkeypatch):
    """Tensors made under torch.inference_mode have no version counter: the fused path resolves
    their derived weights on every call (never trusting a cache), and works."""
    from normfuse.ops import inference
    monkeypatch.setattr(inference, "fused_unavailable", lambda device: None)
    monkeypatch.setattr(inference, "launch_prenorm", lambda op, kind, x, w, g, beta, b, eps, wkey=None:
                        x.float() @ w.float().t())
    with torch.inference_mode():
        x, g, w = (torch.randn(*s, dtype=torch.bfloat16) for s in ((4, 32), (32,), (24, 32)))
        y1 = rmsnorm_linear(x, g, w)
        w.mul_(2.0)
        y2 = rmsnorm_linear(x, g, w)
    torch.testing.assert_close(y2, 2 * y1)
