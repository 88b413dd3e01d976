"""torch.compile over the ops and the modules: one graph, no graph break, no recompile after
warm-up (new inputs, parameters updated in place), in eval (no_grad) and train (forward and
backward), on CPU tensors (the reference path inside the ops) and, marked gpu, on the H200 (the
fused kernels, inductor). The compiled graphs hold the normfuse ops themselves (opaque to dynamo:
their caches, device checks and warnings are never traced).
"""
from __future__ import annotations

import pytest
import torch

import normfuse.ops as ops
from normfuse.nn import LayerNormLinear, LinearLayerNorm, LinearRMSNorm, PostNormMLP, RMSNormLinear

pytestmark = pytest.mark.filterwarnings("ignore::normfuse.ops.FallbackWarning")


class Net(torch.nn.Module):
    """Every fused module once: pre-norm (RMSNorm with offset, LayerNorm with bias), post-norm
    (with a residual), the block."""

    def __init__(self, d=32, dtype=None, device=None):
        super().__init__()
        kw = dict(dtype=dtype, device=device)
        self.a = RMSNormLinear(d, 48, offset=1.0, **kw)
        self.b = LayerNormLinear(48, d, bias=True, **kw)
        self.c = LinearRMSNorm(d, d, **kw)
        self.d = LinearLayerNorm(d, d, bias=True, **kw)
        self.e = PostNormMLP(d, 64, **kw)

    def forward(self, x):
        h = self.b(self.a(x))
        h = self.d(self.c(h, x))
        return self.e(h)


def _functional(x, g, w0, w1, w2t, b0, gp, bp, wp):
    """The four functional ops with API v1's arguments: siblings (one strided), a bias list,
    offset, a residual."""
    y = ops.rmsnorm_linear(x, g, [w0, w1], 1e-6, [b0, None], offset=1.0)
    y = ops.layernorm_linear(y[..., :32], g, g, w2t, 1e-5)
    z = ops.linear_rmsnorm(y, wp, gp, 1e-6, bp, x[..., :16], offset=1.0)
    return ops.linear_layernorm(z, wp[:, :16], gp, bp, 1e-5)


def _fn_inputs(gen, dtype=torch.float32, device="cpu", M=6):
    def r(*s, scale=1.0):
        return (torch.randn(*s, generator=gen) * scale).to(dtype=dtype, device=device)
    return [r(2, M, 32), r(32, scale=0.1), r(16, 32, scale=0.2), r(24, 32, scale=0.2),
            r(32, 32, scale=0.2).t(), r(16, scale=0.1), 1 + r(16, scale=0.1), r(16, scale=0.1),
            r(16, 32, scale=0.2)]


def _normfuse_ops(gm) -> set:
    return {str(n.target) for n in gm.graph.nodes if str(n.target).startswith("normfuse.")}


def _explain(f, *args):
    torch._dynamo.reset()
    ex = torch._dynamo.explain(f)(*args)
    assert ex.graph_break_count == 0, ex.break_reasons
    assert ex.graph_count == 1
    return set().union(*(_normfuse_ops(g) for g in ex.graphs))


def test_explain_modules_one_graph_eval_and_train():
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(2, 6, 32)
    with torch.no_grad():
        seen = _explain(net.eval(), x)
    assert seen == {"normfuse.prenorm_linear.default", "normfuse.postnorm_linear.default",
                    "normfuse.postnorm_mlp_fwd.default"}, seen
    seen = _explain(lambda x: net.train()(x).square().sum(), x.requires_grad_(True))
    assert seen == {"normfuse.prenorm_linear_fwd.default", "normfuse.postnorm_linear_fwd.default",
                    "normfuse.postnorm_mlp_fwd.default"}, seen


def test_explain_functional_ops_api_v1():
    args = _fn_inputs(torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert _explain(_functional, *args) == {"normfuse.prenorm_linear.default",
                                                "normfuse.postnorm_linear.default"}
    args = [a.detach().requires_grad_(True) for a in args]
    assert _explain(lambda *a: _functional(*a).sum(), *args) == {
        "normfuse.prenorm_linear_fwd.default", "normfuse.postnorm_linear_fwd.default"}


def _fail_on_recompile():
    return torch.compiler.set_stance("fail_on_recompile")


def test_compiled_training_no_recompile_and_eager_gradients():
    """fullgraph=True; after the first step: new inputs, an optimizer step (parameters updated
    in place), eval under no_grad after train: compiled once per mode, gradients equal eager's."""
    torch._dynamo.reset()
    torch.manual_seed(2)
    net = Net()
    ref = Net()
    ref.load_state_dict(net.state_dict())
    step = torch.compile(lambda x: net(x).square().sum(), fullgraph=True, backend="aot_eager")
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for i in range(3):
        x = torch.randn(2, 6, 32)
        ctx = _fail_on_recompile() if i else torch.enable_grad()
        with ctx:
            loss = step(x)
        loss.backward()
        ref(x).square().sum().backward()
        for p, q in zip(net.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
        opt.step(), ropt.step(), opt.zero_grad(), ropt.zero_grad()
    infer = torch.compile(net.eval(), fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        for i in range(3):
            x = torch.randn(2, 6, 32)
            with (_fail_on_recompile() if i else torch.no_grad()):
                y = infer(x)
            torch.testing.assert_close(y, ref.eval()(x), rtol=1e-5, atol=1e-6)
            with torch.no_grad():
                net.a.weight.mul_(1.01)  # in place: the op's fold cache follows, no recompile
                ref.a.weight.mul_(1.01)


def test_compiled_functional_ops_match_eager():
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(3)
    f = torch.compile(_functional, fullgraph=True, backend="aot_eager")
    for i in range(2):
        args = _fn_inputs(gen)
        with (_fail_on_recompile() if i else torch.no_grad()), torch.no_grad():
            torch.testing.assert_close(f(*args), _functional(*args))


# ---------------------------------------------------------------------------------------------
# GPU: the fused kernels under inductor
# ---------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_compiled_modules_one_graph_no_recompile():
    torch._dynamo.reset()
    torch.manual_seed(4)
    dev, bf = "cuda", torch.bfloat16
    net = Net(256, dtype=bf, device=dev)
    x = torch.randn(4, 128, 256, device=dev, dtype=bf)
    with torch.no_grad():
        assert _explain(net.eval(), x)
    assert _explain(lambda x: net.train()(x).float().square().sum(), x.requires_grad_(True))
    torch._dynamo.reset()
    step = torch.compile(lambda x: net.train()(x).float().square().sum(), fullgraph=True)
    infer = torch.compile(net, fullgraph=True)
    for i in range(3):
        xi = torch.randn(4, 128, 256, device=dev, dtype=bf)
        with (_fail_on_recompile() if i else torch.enable_grad()):
            step(xi).backward()
        with torch.no_grad():
            for p in net.parameters():
                p.add_(p.grad, alpha=-1e-3)
                p.grad = None
    net.eval()
    with torch.no_grad():
        for i in range(2):
            xi = torch.randn(4, 128, 256, device=dev, dtype=bf)
            with (_fail_on_recompile() if i else torch.no_grad()):
                y = infer(xi)
            torch.testing.assert_close(y, net(xi))


def test_gpu_ops_benchmark_code_path_on_cpu():
    """normfuse.repro.bench_ops's plans part on the CPU (reference path, aot_eager, a fake timer):
    every record complete, each plan's gradients equal torch.compile's, the markdown table."""
    from normfuse.repro import bench_ops as gb
    torch._dynamo.reset()
    recs = gb.plans_part(["rms", "ln"], M=24, shapes=[(32, 48)], device="cpu",
                         timer=lambda fn: (fn(), 1.0)[1], compile_backend="aot_eager",
                         dtype=torch.float32, device_timer=lambda fn: (fn(), 0.5)[1],
                         kernel_lister=lambda fn: (fn(), [["gemm_k", 0.4, 2], ["norm_k", 0.1, 1]])[1])
    assert [r["op"] for r in recs] == ["rmsnorm_linear", "layernorm_linear"]
    for r in recs:
        assert "error" not in r, r.get("trace")
        assert r["grad_rel_err_fused_vs_compiled"] < 1e-5
        assert r["grad_rel_err_cublas_vs_compiled"] < 1e-5
        assert r["grad_rel_err_rowdot_vs_compiled"] < 1e-5
        assert r["ours_fused_over_compiled"] == 1.0
    md = gb.markdown(recs, {"date": "d", "torch": "t", "triton": "tr"})
    assert "| op | K | N | fused | cublas | rowdot | torch.compile |" in md
    assert "| rmsnorm_linear | 32 | 48 | 1.000 | 1.000 | 1.000 |" in md
    # the device's work per step, beside do_bench's (host-bound) figures
    assert all(r["ours_cublas_device_ms"] == 0.5 and r["eager_device_ms"] == 0.5 for r in recs)
    assert "The device's work per step" in md
    assert "| layernorm_linear | 32 | 48 | 0.500 | 0.500 | 0.500 | 0.500 | 0.500 |" in md
    # and where each plan's step spends it, kernel by kernel
    assert all(r["ours_rowdot_kernels"][0] == ["gemm_k", 0.4, 2] and r["compiled_kernels"]
               for r in recs)
    assert "### layernorm_linear 24x32x48" in md
    assert "- rowdot (0.500 ms): `gemm_k` 0.400 x2; `norm_k` 0.100 x1" in md
