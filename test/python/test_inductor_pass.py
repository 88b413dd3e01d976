"""normfuse.nn.inductor_pass: torch.compile finds the norms feeding GEMMs without
normfuse.optimize (CPU: the ops' reference path computes the fused function)."""
from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.testing import FileCheck  # noqa: E402

from normfuse.nn import inductor_pass as nip  # noqa: E402


class _Capture(nip.NormfusePass):
    """The pass, keeping each graph as it left it."""

    def __init__(self):
        super().__init__()
        self.graphs: list[str] = []

    def __call__(self, graph):
        super().__call__(graph)
        self.graphs.append(str(graph))


class LlamaRMS(nn.Module):
    def __init__(self, K):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(K) + 0.5)

    def forward(self, h):
        dt = h.dtype
        h = h.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * h.to(dt)


class Block(nn.Module):
    """Pre-norm siblings (RMSNorm with an fp32 upcast -> q, k with bias), a LayerNorm feeding a
    Conv1D-style GEMM (weight [K, N], addmm), a post-norm LayerNorm(dense(h) + residual) whose
    output a GEMM and a residual read, and an RMSNorm of that GEMM's output (no residual)."""

    def __init__(self, K=64):
        super().__init__()
        self.norm = LlamaRMS(K)
        self.q = nn.Linear(K, 32, bias=False)
        self.k = nn.Linear(K, 16)
        self.ln = nn.LayerNorm(K)
        self.conv_w = nn.Parameter(torch.randn(K, 48) * K ** -0.5)  # transformers' Conv1D
        self.conv_b = nn.Parameter(torch.randn(48) * 0.1)
        self.dense = nn.Linear(48, K)
        self.post = nn.LayerNorm(K)
        self.o = nn.Linear(K, K, bias=False)
        self.sandwich = LlamaRMS(K)  # a norm right after a GEMM, no residual (Gemma2)
        self.dense2 = nn.Linear(K, K)
        self.post2 = nn.LayerNorm(K)  # its residual is the post-norm above (BERT's chain)
        with torch.no_grad():
            for m in (self.ln, self.post, self.post2):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.3)

    def forward(self, x, r):
        h = x + r
        y = self.norm(h)
        z = self.ln(h)
        c = torch.addmm(self.conv_b, z.view(-1, z.shape[-1]), self.conv_w).view(*z.shape[:-1], 48)
        out = self.post(self.dense(c) + h)
        out2 = self.post2(self.dense2(out) + out)
        return self.q(y), self.k(y), out2, self.sandwich(self.o(out)) + out


def _compile_run(model, *args, p=None):
    import torch._dynamo
    torch._dynamo.reset()
    p = p or _Capture()
    with torch._inductor.config.patch(fx_graph_cache=False), torch.no_grad():
        out = torch.compile(model, options=nip.options(p))(*args)
    return out, p


def test_pass_fuses_prenorm_siblings_conv1d_and_postnorm():
    torch.manual_seed(0)
    m = Block().bfloat16().eval()
    x, r = torch.randn(2, 6, 64).bfloat16(), torch.randn(2, 6, 64).bfloat16()
    out, p = _compile_run(m, x, r)
    rep = p.reports[-1]
    assert len(rep.matched) == 5 and not rep.refused, str(rep)
    assert any("RMSNorm eps=1e-06" in s and "over 2 GEMM(s)" in s for s in rep.matched)
    assert any("LayerNorm eps=1e-05" in s and "over 1 GEMM(s)" in s for s in rep.matched)
    assert any("postnorm_linear" in s and "+ residual" in s for s in rep.matched)
    assert any("postnorm_linear" in s and "+ residual" not in s for s in rep.matched)
    g = p.graphs[-1]
    # the norms are gone: one pre-norm op per norm, the post-norm ops, no statistics left
    assert g.count("normfuse.prenorm_linear.default") == 2, g
    assert g.count("normfuse.postnorm_linear.default") == 3, g
    # the chained post-norm reads the first one's fused output as its residual: no norm of
    # the first one is left computing it (a stale residual would keep its statistics alive)
    FileCheck().check("normfuse.postnorm_linear.default").check_not("var_mean").run(g)
    for gone in ("aten.rsqrt", "aten.var_mean", "aten.mean"):
        assert gone not in g, g
    # the Conv1D weight reaches the op as the parameter itself (weight_kn=True), not as a
    # transpose made in the graph (a new alias every call, which the op's memos cannot key)
    assert "permute" not in g, g
    assert re.search(r"prenorm_linear\.default\]\(args = \(%\w+, %\w+, %\w+, \[%arg\d+_1\], "
                     r"\[%arg\d+_1\], 1e-05, 0\.0, True, True, True\)", g), g
    # numerics: against fp64, within 1.5x of eager bf16's error
    m64 = Block().double()
    m64.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
    with torch.no_grad():
        ref = m64(x.double(), r.double())
        eager = m(x, r)
    for o, e, rr in zip(out, eager, ref):
        err = (o.double() - rr).norm() / rr.norm()
        err_e = (e.double() - rr).norm() / rr.norm()
        assert err <= 1.5 * err_e + 1e-4, (err, err_e)


def test_compiled_calls_resolve_weights_once(monkeypatch):
    """On the fused path (the device calls stubbed on the CPU), the rewritten graph's op calls
    find their derived weights and launch-ready calls from the second call on: no call
    resolves again (the Conv1D weight, given as the parameter with weight_kn, included; given
    as a transpose made in the graph it re-resolved every call)."""
    import torch._dynamo
    from normfuse.ops import inference
    from normfuse.testing.fake_driver import fused_on_cpu
    seen = []
    for fn in ("_resolve_pre", "_resolve_post"):
        real = getattr(inference, fn)
        monkeypatch.setattr(inference, fn, (lambda real: lambda *a: (seen.append(1), real(*a))[1])(real))
    monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "fused")
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = Block().bfloat16().eval()
    x, r = torch.randn(2, 6, 64).bfloat16(), torch.randn(2, 6, 64).bfloat16()
    p = _Capture()
    with fused_on_cpu() as drv, torch._inductor.config.patch(fx_graph_cache=False), \
            torch.no_grad():
        f = torch.compile(m, options=nip.options(p))
        counts = []
        for _ in range(4):
            f(x, r)
            counts.append((len(seen), len(drv.launches)))
    assert len(p.reports[-1].matched) == 5, str(p.reports[-1])
    assert counts[1][0] == counts[2][0] == counts[3][0] > 0, counts
    assert [b - a for (_, a), (_, b) in zip(counts, counts[1:])] == [5, 5, 5], counts


@pytest.mark.filterwarnings("ignore::normfuse.ops.common.FallbackWarning")
def test_ops_take_kn_weights():
    """weight_kn=True: the weights are [K, N] (a Conv1D's), the op reads their transposes."""
    torch.manual_seed(3)
    x = torch.randn(5, 32)
    g, w1, w2 = torch.rand(32) + 0.5, torch.randn(32, 8), torch.randn(32, 4)
    b = torch.randn(12)
    pre = torch.ops.normfuse.prenorm_linear.default
    post = torch.ops.normfuse.postnorm_linear.default
    want = pre(x, g, None, [w1.t(), w2.t()], [b[:8], b[8:]], 1e-6, 0.0, False, True)
    got = pre(x, g, None, [w1, w2], [b[:8], b[8:]], 1e-6, 0.0, False, True, True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    r = torch.randn(5, 8)
    want = post(x, w1.t(), g[:8], None, b[:8], r, 1e-6, 0.0, False)
    got = post(x, w1, g[:8], None, b[:8], r, 1e-6, 0.0, False, True)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(ValueError, match="weight_kn=True takes 2-D"):
        pre(x, g, None, [w1.flatten()], [None], 1e-6, 0.0, False, True, True)


class _Refused(nn.Module):
    def __init__(self, K=64):
        super().__init__()
        self.norm = nn.RMSNorm(K, eps=1e-5)
        self.a = nn.Linear(K, 32)
        self.g = nn.Parameter(torch.rand(K) + 0.5)
        self.b = nn.Linear(K, 16)

    def forward(self, x):
        y = self.norm(x)                                   # also read by the add: refused
        h = x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 1e-3) * self.g  # eps outside sqrt
        return self.a(y) + y[..., :32], self.b(h)


def test_pass_refuses_with_the_reason_and_leaves_the_graph():
    torch.manual_seed(1)
    m = _Refused().bfloat16().eval()
    x = torch.randn(3, 5, 64).bfloat16()
    out, p = _compile_run(m, x)
    rep = p.reports[-1]
    assert not rep.matched, str(rep)
    text = "\n".join(rep.refused)
    assert "its output is also used by" in text and "slice" in text, text
    assert "outside the square root" in text, text
    assert "normfuse" not in p.graphs[-1]
    with torch.no_grad():
        want = m(x)
    for o, w in zip(out, want):
        torch.testing.assert_close(o, w, rtol=2e-2, atol=2e-2)


def test_pass_leaves_training_graphs_to_inductor():
    """Under autograd the forward graph saves the norm's output (or its statistics) for the
    backward: the pass refuses, and the gradients are Inductor's own."""
    import torch._dynamo
    torch._dynamo.reset()
    torch.manual_seed(2)
    m = Block().float()
    x = torch.randn(2, 4, 64, requires_grad=True)
    r = torch.randn(2, 4, 64)
    p = _Capture()
    with torch._inductor.config.patch(fx_graph_cache=False):
        outs = torch.compile(m, options=nip.options(p))(x, r)
    sum(o.sum() for o in outs).backward()
    assert p.reports and all(not rep.matched for rep in p.reports), [str(r) for r in p.reports]
    assert all("normfuse" not in g for g in p.graphs)
    gx = x.grad.clone()
    x.grad = None
    sum(o.sum() for o in m(x, r)).backward()
    torch.testing.assert_close(gx, x.grad, rtol=1e-4, atol=1e-4)


def test_enable_disable_and_a_foreign_pass():
    from torch._inductor import config
    old = config.post_grad_custom_post_pass
    try:
        config.post_grad_custom_post_pass = None
        p = nip.enable()
        assert isinstance(config.post_grad_custom_post_pass, nip.NormfusePass) and p is not None
        nip.disable()
        assert config.post_grad_custom_post_pass is None

        def foreign(graph):
            return None
        config.post_grad_custom_post_pass = foreign
        with pytest.raises(ValueError, match="already set"):
            nip.enable()
        assert config.post_grad_custom_post_pass is foreign
    finally:
        config.post_grad_custom_post_pass = old
    assert len(nip.NormfusePass().uuid()) == 32  # the code's hash: Inductor's cache key


@pytest.mark.slow
@pytest.mark.parametrize("family,fused", [("llama", 5), ("qwen2", 5), ("gpt2", 5), ("bert", 4),
                                          ("gemma", 5), ("gemma2", 9)])
def test_pass_on_transformers_families(family, fused):
    """Every norm feeding GEMMs in the tiny families (2 layers, final norm -> LM head): Llama
    and Qwen2 q/k/v and gate/up as siblings, GPT-2's Conv1D, BERT's post-norms, Gemma's
    (1 + w) scale, Gemma2's norms after o_proj and down_proj (post-norms without a residual);
    numerics against fp64 within eager bf16's error."""
    from optimize_models import logits, tiny_family
    m = tiny_family(family).to(torch.bfloat16)
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = logits(tiny_family(family).double()(input_ids=ids))
        eager = logits(m(input_ids=ids))
    out, p = _compile_run(lambda i: logits(m(input_ids=i)), ids)
    rep = p.reports[-1]
    assert len(rep.matched) == fused, str(rep)
    e = (out.double() - ref).norm() / ref.norm()
    e_eager = (eager.double() - ref).norm() / ref.norm()
    assert e <= 1.1 * e_eager, (e, e_eager)


@pytest.mark.gpu
@pytest.mark.parametrize("family,fused", [("llama", 5), ("gpt2", 5), ("bert", 4)])
def test_gpu_pass_runs_the_fused_kernels(monkeypatch, family, fused):
    """On the H200 (bf16, hidden 256): the compiled model with the pass runs normfuse's fused
    kernels (the reference path would raise) and its logits are within eager bf16's error of
    fp64."""
    from normfuse.ops import inference
    from optimize_models import VOCAB, logits, tiny_family

    def refuse(*a, **k):
        raise AssertionError("the reference path ran instead of the fused kernels")
    for name in ("prenorm_linear", "postnorm_linear"):
        monkeypatch.setattr(inference.fallback, name, refuse)
    m = tiny_family(family, hidden=256).to("cuda", torch.bfloat16)
    ids = torch.randint(0, VOCAB, (2, 64), generator=torch.Generator().manual_seed(0)).cuda()
    with torch.no_grad():
        ref = logits(tiny_family(family, hidden=256).to("cuda", torch.float64)(input_ids=ids))
        eager = logits(m(input_ids=ids))
    out, p = _compile_run(lambda i: logits(m(input_ids=i)), ids)
    assert len(p.reports[-1].matched) == fused, str(p.reports[-1])
    e = (out.double() - ref).norm() / ref.norm()
    e_eager = (eager.double() - ref).norm() / ref.norm()
    assert e <= 1.1 * e_eager, (e, e_eager)


def test_model_benchmark_compiles_its_pass_configuration_with_the_pass():
    """normfuse.repro.models' `normfuse-pass+compile`: the counting backend hands Inductor the
    pass (caches off, so it runs and reports in the timing process)."""
    import torch._dynamo

    from normfuse.repro import models as M
    cfg = M._config("normfuse-pass+compile")
    assert cfg.inductor_pass and cfg.compiled and cfg.modes == ("prefill",)
    assert "normfuse-pass+compile" in M.NORMFUSE
    torch._dynamo.reset()
    torch.manual_seed(3)
    m = nn.Sequential(LlamaRMS(64), nn.Linear(64, 32)).bfloat16().eval()
    p = _Capture()
    counter = M.CompileCounter("inductor", p)
    x = torch.randn(4, 64).bfloat16()
    with torch.no_grad():
        out = torch.compile(m, backend=counter)(x)
        want = m(x)
    assert counter.graphs == 1 and len(p.reports) == 1 and len(p.reports[0].matched) == 1
    assert "normfuse.prenorm_linear" in p.graphs[0]
    torch.testing.assert_close(out, want, rtol=2e-2, atol=2e-2)


class _FlatThenLinear(nn.Module):
    """A LayerNorm over K whose output is flattened to [B, T * K] before the GEMM: not a
    pre-norm over the GEMM's rows."""

    def __init__(self, K=16, T=4):
        super().__init__()
        self.fc = nn.Linear(T * K, 8)
        self.K = K

    def forward(self, x):
        y = torch.nn.functional.layer_norm(x, (self.K,))
        return self.fc(y.reshape(x.shape[0], -1))


class _PerHeadNorm(nn.Module):
    """Qwen3-style per-head norms: RMSNorm / LayerNorm over head_dim of q_proj(x) viewed as
    [..., heads, head_dim] (+ a residual of that shape): not a norm over the GEMM's row."""

    def __init__(self, K=16, heads=4, rms=True):
        super().__init__()
        self.q = nn.Linear(K, K, bias=not rms)
        self.qn = nn.RMSNorm(K // heads) if rms else nn.LayerNorm(K // heads)
        self.heads = heads
        with torch.no_grad():
            self.qn.weight.uniform_(0.5, 1.5)

    def forward(self, x, r=None):
        q = self.q(x).view(*x.shape[:-1], self.heads, -1)
        return self.qn(q if r is None else q + r)


@pytest.mark.parametrize("case", ["flatten", "per-head rms", "per-head ln + residual"])
def test_pass_leaves_norms_over_another_width_than_the_gemms(case):
    """A reshape between the norm and the GEMM that changes the last dimension is not a GEMM
    row: the pass fuses nothing, the compiled model computes the model's function (it once
    normalized over T * K columns, or raised at every call for the per-head norms)."""
    torch.manual_seed(0)
    if case == "flatten":
        m, args = _FlatThenLinear().eval(), (torch.randn(3, 4, 16) * 3 + 1,)
    elif case == "per-head rms":
        m, args = _PerHeadNorm().eval(), (torch.randn(6, 16),)
    else:
        m, args = _PerHeadNorm(rms=False).eval(), (torch.randn(6, 16), torch.randn(6, 4, 4))
    out, p = _compile_run(m, *args)
    assert not any(rep.matched for rep in p.reports), [str(r) for r in p.reports]
    with torch.no_grad():
        torch.testing.assert_close(out, m(*args), rtol=1e-5, atol=1e-5)
