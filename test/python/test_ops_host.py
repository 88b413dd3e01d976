"""The op layer's per-call host path, on the CPU (issue 19 item 3).

The fused path runs on CPU tensors with only the device calls stubbed
(normfuse.testing.fake_driver.fused_on_cpu: Triton's own launcher, its C launch function
recording the argument tuple): every call launches its own tensors (new activations and outputs
every call), an in-place weight update or a new weight storage re-resolves the derived weights,
a new geometry makes a new launch-ready call, the eager call that skips the dispatcher passes
what the torch.library op passes, a capture stores nothing and pins what it reads. Also: when an
eager call may skip the dispatcher, and the modules' parameter reads.
"""
from __future__ import annotations

import pytest
import torch

import normfuse.ops as ops
from normfuse.ops import common, functional, inference
from normfuse.testing.fake_driver import fused_on_cpu, same_arguments

M, K, N = 1000, 1032, 520
A, B, C = 13, 18, 23  # the tensor maps of A, B and the output in the C launch's tuple

pytestmark = pytest.mark.filterwarnings("ignore::normfuse.ops.FallbackWarning")


def _bf(*shape, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).bfloat16()


@pytest.fixture
def resolves(monkeypatch):
    """How many times the inference op resolved derived weights (the memo missed)."""
    seen = []
    real = inference._resolve_pre
    monkeypatch.setattr(inference, "_resolve_pre", lambda *a: (seen.append(a), real(*a))[1])
    return seen


@pytest.fixture(autouse=True)
def _fresh_caches():
    ops.clear_caches()
    yield
    ops.clear_caches()


def _address(m) -> int:
    return m.inputs[0]


def _call_of(x, srcs, eps, offset=0.0, is_ln=False, fold=True):
    """The launch-ready call the inference op keeps for x and the weight tensors `srcs`
    (norm_weight, norm_bias, weight, bias)."""
    g, beta, w, b = srcs
    return inference.pre_call(x, g, beta, [w], [b], eps, offset, is_ln, fold)


_same = same_arguments


def test_eager_calls_launch_their_own_tensors_and_see_weight_updates(resolves):
    g, w = 1 + _bf(K, scale=0.1, seed=1), _bf(N, K, scale=K ** -0.5, seed=2)
    with fused_on_cpu() as drv:
        ys, launches = [], []
        for seed in (3, 4):  # new activations every call
            x = _bf(M, K, seed=seed)
            y = ops.rmsnorm_linear(x, g, w)
            ys.append(y)
            launches.append(drv.launches[-1])
            assert y.shape == (M, N)
            assert _address(drv.launches[-1][A]) == x.data_ptr()
            assert _address(drv.launches[-1][C]) == y.data_ptr()  # the output it returns
        assert ys[0].data_ptr() != ys[1].data_ptr()
        assert launches[1][B] is launches[0][B]  # the folded weight's map, looked up
        assert len(resolves) == 1
        call = _call_of(x, (g, None, w, None), 1e-6)
        assert call is not None and call.plan.lowered is not None  # the lowered kernel
        folded = call.pins[0]
        torch.testing.assert_close(folded.float(), (w.float() * g.float()).bfloat16().float(),
                                   rtol=0.01, atol=1e-3)

        with torch.no_grad():
            w.mul_(2.0)  # in place: a new version
        ops.rmsnorm_linear(x, g, w)
        assert len(resolves) == 2
        call = _call_of(x, (g, None, w, None), 1e-6)
        assert call.pins[0] is not folded
        assert _address(drv.launches[-1][B]) == call.pins[0].data_ptr()
        torch.testing.assert_close(call.pins[0].float(), 2 * folded.float(), rtol=0.02, atol=2e-3)

        w.data = w.data.clone()  # same tensor object and version, another address
        ops.rmsnorm_linear(x, g, w)
        assert len(resolves) == 3

        x3 = _bf(2, 300, K, seed=5)  # another geometry: its own plan and call
        y3 = ops.rmsnorm_linear(x3, g, w)
        assert y3.shape == (2, 300, N) and _address(drv.launches[-1][C]) == y3.data_ptr()
        assert drv.launches[-1][A].inputs[5] == (600, K)
        assert len(resolves) == 3  # the weights' resolution is the memo's


def test_the_direct_call_passes_what_the_dispatched_op_passes():
    g, w = 1 + _bf(K, scale=0.1, seed=1), _bf(N, K, scale=K ** -0.5, seed=2)
    x = _bf(M, K, seed=3)
    with fused_on_cpu() as drv:
        for is_ln in (False, True):
            beta = _bf(K, scale=0.1, seed=7) if is_ln else None
            b = _bf(N, seed=6) if is_ln else None
            args = (x, g, beta, [w], [b], 1e-5 if is_ln else 1e-6, 0.0, is_ln, True)
            y = inference.prenorm_linear(*args)  # warm-up: resolves and plans
            direct = drv.launches[-1]
            y2 = torch.ops.normfuse.prenorm_linear.default(*args)
            dispatched = drv.launches[-1]
            assert len(direct) == len(dispatched)
            for i, (u, v) in enumerate(zip(direct, dispatched)):
                if i == C:  # each call's own output
                    assert _address(u) == y.data_ptr() and _address(v) == y2.data_ptr()
                    assert u.inputs[1:] == v.inputs[1:]
                else:
                    assert _same(u, v), i
            f = ops.layernorm_linear(x, g, beta, w, 1e-5, b) if is_ln else \
                ops.rmsnorm_linear(x, g, w, 1e-6, b)
            assert drv.launches[-1][A] == direct[A] and drv.launches[-1][B] is direct[B]
            assert _address(drv.launches[-1][C]) == f.data_ptr()


def test_postnorm_calls_launch_their_own_tensors():
    """linear_rmsnorm (a Triton kernel without host descriptors: the C function takes the
    tensors) with a residual, 3-D activations."""
    m, k, n = 200, 256, 256
    w, gn = _bf(n, k, scale=k ** -0.5, seed=2), 1 + _bf(n, scale=0.1, seed=8)
    with fused_on_cpu() as drv:
        for seed in (3, 4):
            x, r = _bf(2, m // 2, k, seed=seed), _bf(2, m // 2, n, seed=seed + 10)
            y = ops.linear_rmsnorm(x, w, gn, residual=r)
            assert y.shape == (2, m // 2, n)
            launch = drv.launches[-1]
            ptrs = [a.data_ptr() for a in launch[13:19]]  # X, W, BIAS, RES, G, Y
            assert ptrs[0] == x.data_ptr() and ptrs[3] == r.data_ptr() and ptrs[5] == y.data_ptr()
            assert launch[14] is w and launch[15] is w and launch[17] is gn  # (no bias: W)
        assert len(inference._POST_CALLS) == 1


def test_a_capture_stores_no_call_and_pins_what_it_reads(monkeypatch):
    from normfuse import device
    g, w = 1 + _bf(K, scale=0.1, seed=1), _bf(N, K, scale=K ** -0.5, seed=2)
    monkeypatch.setattr(common, "_GRAPH_PINS", {})
    with fused_on_cpu() as drv:
        x = _bf(M, K, seed=3)
        ops.rmsnorm_linear(x, g, w)
        folded = _call_of(x, (g, None, w, None), 1e-6).pins[0]
        n, m = len(inference._PRE_CALLS), len(inference._PRE_MEMO)
        assert not common._GRAPH_PINS
        stub = device.cuda_state.capturing
        device.cuda_state.capturing = lambda: True
        try:
            x2 = _bf(M, K, seed=4)
            ops.rmsnorm_linear(x2, g, w)  # a hit: the folded weight is pinned for the graph
            assert any(t is folded for t in common._GRAPH_PINS.values())
            assert _address(drv.launches[-1][A]) == x2.data_ptr()
            x3 = _bf(600, K, seed=5)  # (the same config and specialization: the same kernel)
            ops.rmsnorm_linear(x3, g, w)  # a new geometry: launched, nothing stored
            assert _address(drv.launches[-1][A]) == x3.data_ptr()
            assert len(inference._PRE_CALLS) == n and len(inference._PRE_MEMO) == m
        finally:
            device.cuda_state.capturing = stub
    ops.clear_caches()
    assert not common._GRAPH_PINS and not inference._PRE_CALLS and not inference._PRE_MEMO


def test_eager_calls_skip_the_dispatcher_only_where_it_adds_nothing(monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.overrides import TorchFunctionMode
    x, g, w = torch.randn(4, 8), torch.randn(8), torch.nn.Parameter(torch.randn(6, 8))
    direct = functional._direct
    assert direct(x, g, w, None)
    with FakeTensorMode():
        assert not direct(torch.empty(4, 8), g)

    def traced(x):
        assert not direct(x, g)
        return x + 1
    make_fx(traced)(x)
    assert torch.vmap(lambda t: torch.tensor(float(direct(t, g))))(x).sum() == 0

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))
    with Mode():
        assert not direct(x, g)

    class Sub(torch.Tensor):
        pass
    assert not direct(x.as_subclass(Sub), g) and not direct(x, g.as_subclass(Sub))
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert not direct(x, g)


def test_plain_eager_takes_only_plain_arguments():
    """common.plain_eager (behind _direct and the training ops' eager path) over arguments:
    plain tensors, parameters, None and Python scalars; a list, a string or a subclass takes the
    op."""
    x, p = torch.randn(4, 8), torch.nn.Parameter(torch.randn(8))
    assert common.plain_eager((x, p, None, 1e-6, 0, True))
    assert not common.plain_eager((x, [p]))
    assert not common.plain_eager((x, "gelu_tanh"))

    class Sub(torch.Tensor):
        pass
    assert not common.plain_eager((x, p.as_subclass(Sub)))


def _train_cases():
    """(name, the public call, its inputs, the forward op's name) of each autograd op: the
    training ops and the standalone norm."""
    def bf(*s, seed, scale=1.0):
        return _bf(*s, scale=scale, seed=seed).requires_grad_(True)
    m, k, n = 24, 64, 48
    x, r = bf(m, k, seed=1), bf(m, n, seed=2)
    g, beta = 1 + _bf(k, scale=0.1, seed=3), _bf(k, scale=0.1, seed=4)
    gn, betan, b = 1 + _bf(n, scale=0.1, seed=5), _bf(n, scale=0.1, seed=6), _bf(n, seed=7)
    w, w2 = bf(n, k, seed=8, scale=k ** -0.5), bf(k, n, seed=9, scale=n ** -0.5)
    for t in (g, beta, gn, betan, b):
        t.requires_grad_(True)
    return [
        ("rmsnorm_linear", lambda: ops.rmsnorm_linear(x, g, w), (x, g, w), "prenorm_linear_fwd"),
        ("layernorm_linear", lambda: ops.layernorm_linear(x, g, beta, w, 1e-5, b),
         (x, g, beta, w, b), "prenorm_linear_fwd"),
        ("linear_layernorm", lambda: ops.linear_layernorm(x, w, gn, betan, 1e-5, b, r),
         (x, w, gn, betan, b, r), "postnorm_linear_fwd"),
        ("postnorm_mlp", lambda: ops.postnorm_mlp(x, w, gn, None, b, w2, g, None, None),
         (x, w, gn, b, w2, g), "postnorm_mlp_fwd"),
        ("layer_norm", lambda: ops.layer_norm(x, g, beta), (x, g, beta), "norm_fwd"),
    ]


@pytest.mark.parametrize("case", range(5), ids=[c[0] for c in _train_cases()])
def test_training_eager_path_matches_the_op_and_its_autograd(case, monkeypatch):
    """An eager training call skips the dispatcher and torch.library's autograd wrapper
    (common.AutogradOp: an autograd.Function over the op's implementation, setup and backward);
    the output and every gradient equal the op's own autograd path bitwise (the reference
    path, CPU), and a traced or moded call still takes the op."""
    name, call, inputs, fwd = _train_cases()[case]

    def run():
        for t in inputs:
            t.grad = None
        y = call()
        node = y.grad_fn
        while node is not None and "View" in type(node).__name__:
            node = node.next_functions[0][0]  # (the public function's view of the op's output)
        y.float().square().sum().backward()
        return y.detach(), [t.grad for t in inputs], type(node).__name__
    y, grads, node = run()
    assert node == f"Eager_{fwd}Backward", node
    monkeypatch.setattr(common, "plain_eager", lambda args: False)
    y2, grads2, node2 = run()
    assert node2 == f"GeneratedBackwardFor_normfuse_{fwd}_defaultBackward", node2
    torch.testing.assert_close(y, y2, rtol=0, atol=0)
    for i, (a, b) in enumerate(zip(grads, grads2)):
        assert a is not None and b is not None, (name, i)
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_training_eager_path_refuses_double_backward():
    x, g, w = (_bf(8, 32, seed=1), 1 + _bf(32, scale=0.1, seed=2), _bf(16, 32, seed=3))
    for t in (x, g, w):
        t.requires_grad_(True)
    y = ops.rmsnorm_linear(x, g, w)
    assert "Eager_" in type(y.grad_fn).__name__ or "Eager_" in type(
        y.grad_fn.next_functions[0][0]).__name__
    with pytest.raises(NotImplementedError, match="not differentiable"):
        torch.autograd.grad(y.float().sum(), (x,), create_graph=True)


def test_dispatched_and_direct_calls_compute_the_same_on_cpu():
    """The reference path (CPU), with and without the dispatcher, and through FakeTensorMode
    (which takes the op's fake implementation)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    x, g, w = _bf(5, 3, 64, seed=1), 1 + _bf(64, scale=0.1, seed=2), _bf(40, 64, seed=3)
    y = ops.rmsnorm_linear(x, g, w)
    y2 = torch.ops.normfuse.prenorm_linear.default(x, g, None, [w], [None], 1e-6, 0.0, False,
                                                   True)
    torch.testing.assert_close(y, y2, rtol=0, atol=0)
    with FakeTensorMode() as mode:
        fy = ops.rmsnorm_linear(mode.from_tensor(x), mode.from_tensor(g), mode.from_tensor(w))
        assert fy.shape == (5, 3, 40)


def test_modules_read_their_parameters_however_they_are_held():
    """RMSNormLinear / LayerNormLinear read registered parameters from _parameters (no
    Module.__getattr__), and anything else as attributes: bias=False (None), a bias, a
    parametrized weight (a property), a weight norm style plain attribute."""
    from torch.nn.utils import parametrize
    from normfuse.nn import LayerNormLinear, RMSNormLinear

    torch.manual_seed(0)
    x = torch.randn(3, 32).bfloat16()
    for cls in (RMSNormLinear, LayerNormLinear):
        for bias in (False, True):
            m = cls(32, 24, bias=bias, dtype=torch.bfloat16)
            with torch.no_grad():
                for p in m.parameters():
                    p.add_(0.1 * torch.randn_like(p))
            want = _module_ref(m, x, m.weight)
            torch.testing.assert_close(m(x), want, rtol=0.02, atol=0.02)

            class Double(torch.nn.Module):
                def forward(self, w):
                    return 2 * w
            parametrize.register_parametrization(m, "weight", Double())
            assert "weight" not in m._parameters
            torch.testing.assert_close(m(x), _module_ref(m, x, m.weight), rtol=0.02, atol=0.02)
            torch.testing.assert_close(m.weight, 2 * m.parametrizations.weight.original)


def _module_ref(m, x, w):
    xf = x.float()
    if hasattr(m, "norm_bias"):
        h = torch.nn.functional.layer_norm(xf, (xf.shape[-1],), m.norm_weight.float(),
                                           m.norm_bias.float(), m.eps)
    else:
        h = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + m.eps) * m.norm_weight.float()
    y = h @ w.float().t()
    if m.bias is not None:
        y = y + m.bias.float()
    return y.to(x.dtype)


def test_a_fresh_view_of_the_same_weight_every_call_hits(resolves):
    """GPT-2's Conv1D holds W as [K, N] and hands the op `weight.t()`, a new view every call (and
    a compiled graph reinterprets a parameter afresh every call): the memo and the launch-ready
    call key a view by its base and geometry, so only the first call resolves; a write through
    the base, another view of it (other columns) and a new base storage are all seen."""
    g = 1 + _bf(K, scale=0.1, seed=1)
    wt = _bf(K, N + 8, scale=K ** -0.5, seed=2)  # Conv1D-style [K, N'] storage
    x = _bf(M, K, seed=3)
    with fused_on_cpu() as drv:
        y1 = ops.rmsnorm_linear(x, g, wt[:, :N].t())
        n_calls = len(inference._PRE_CALLS)
        y2 = ops.rmsnorm_linear(x, g, wt[:, :N].t())
        assert len(resolves) == 1 and len(inference._PRE_CALLS) == n_calls
        assert drv.launches[-1][B] is drv.launches[-2][B]
        assert y1.shape == y2.shape == (M, N)

        ops.rmsnorm_linear(x, g, wt[:, 8:].t())  # other columns of the same base: its own entry
        assert len(resolves) == 2
        folded = inference._PRE_MEMO.lookup(
            inference._watched((g, None, wt[:, 8:].t(), None))[0] + (0.0, False, True, False),
            inference._watched((g, None, wt[:, 8:].t(), None))[1])[0]
        torch.testing.assert_close(folded.float(), (wt[:, 8:].t().float() * g.float()).bfloat16()
                                   .float(), rtol=0.01, atol=1e-3)

        with torch.no_grad():
            wt.mul_(2.0)  # through the base: a new version of every view
        ops.rmsnorm_linear(x, g, wt[:, :N].t())
        assert len(resolves) == 3
        wt.data = wt.data.clone()  # a new storage under the same base object
        ops.rmsnorm_linear(x, g, wt[:, :N].t())
        assert len(resolves) == 4


def _alias(t, shape, stride, offset=0):
    """What a compiled graph hands a custom op for a permuted parameter (Inductor's
    reinterpret_tensor): a new tensor every call, no `_base`, its own version counter."""
    from torch._C._dynamo.guards import _reinterpret_tensor
    a = _reinterpret_tensor(t, shape, stride, offset)
    assert a._base is None
    return a


def test_a_compiled_graphs_alias_of_a_weight_hits_and_sees_updates(resolves):
    """Under torch.compile a Conv1D's `weight.t()` reaches the op as a fresh alias of the
    parameter every call (no `_base`; its version counter stays 0 when the parameter is written
    in place). The op finds the parameter by address (registered by a fused module, or by an
    eager call that resolved it): one resolution, then launch-ready calls; an in-place update
    of the parameter is seen (a new fold, not the stale one); an unregistered tensor's alias
    still computes (it resolves every call)."""
    g = 1 + _bf(K, scale=0.1, seed=1)
    wt = torch.nn.Parameter(_bf(K, N, scale=K ** -0.5, seed=2), requires_grad=False)
    x = _bf(M, K, seed=3)
    common.register_weights(wt)  # what the fused modules do for their parameters
    with fused_on_cpu() as drv:
        for _ in range(3):
            y = torch.ops.normfuse.prenorm_linear.default(
                x, g, None, [_alias(wt, (N, K), (1, N))], [None], 1e-6, 0.0, False, True)
            assert y.shape == (M, N)
        assert len(resolves) == 1
        assert drv.launches[-1][B] is drv.launches[-2][B]
        a = _alias(wt, (N, K), (1, N))
        call = inference.pre_call(x, g, None, [a], [None], 1e-6)
        assert call is not None
        folded = call.pins[0]
        torch.testing.assert_close(folded.float(), (wt.t().float() * g.float()).bfloat16().float(),
                                   rtol=0.01, atol=1e-3)

        with torch.no_grad():
            wt.mul_(2.0)  # an optimizer step: the parameter's version moves, the alias's not
        torch.ops.normfuse.prenorm_linear.default(
            x, g, None, [_alias(wt, (N, K), (1, N))], [None], 1e-6, 0.0, False, True)
        assert len(resolves) == 2
        call = inference.pre_call(x, g, None, [_alias(wt, (N, K), (1, N))], [None], 1e-6)
        torch.testing.assert_close(call.pins[0].float(), 2 * folded.float(), rtol=0.02, atol=2e-3)
        assert _address(drv.launches[-1][B]) == call.pins[0].data_ptr()

        seen = []
        real = inference.alias_owner
        inference.alias_owner = lambda t: (seen.append(t), real(t))[1]
        try:  # a launch-ready call found by identity looks for no owner
            w = _bf(N, K, scale=K ** -0.5, seed=5)
            for _ in range(3):
                ops.rmsnorm_linear(x, g, w)
            assert len(seen) == 2  # (the first call's miss: g and w)
        finally:
            inference.alias_owner = real

        other = _bf(K, N, scale=K ** -0.5, seed=4)  # never registered: no owner to find
        for i in range(2):
            torch.ops.normfuse.prenorm_linear.default(
                x, g, None, [_alias(other, (N, K), (1, N))], [None], 1e-6, 0.0, False, True)
        assert len(resolves) == 5


def test_kn_weights_hit_without_registration(resolves, monkeypatch):
    """The Inductor pass hands a Conv1D's [K, N] parameter itself to the ops (weight_kn=True),
    registered by nobody: the op's own transpose is a view keyed by the parameter, so only
    the first call resolves, and an in-place update is still seen (the unregistered alias of
    the test above resolves every call)."""
    g = 1 + _bf(K, scale=0.1, seed=1)
    wt = torch.nn.Parameter(_bf(K, N, scale=K ** -0.5, seed=2), requires_grad=False)
    x = _bf(M, K, seed=3)
    pre = torch.ops.normfuse.prenorm_linear.default
    with fused_on_cpu() as drv:
        for _ in range(3):
            assert pre(x, g, None, [wt], [None], 1e-6, 0.0, False, True, True).shape == (M, N)
        assert len(resolves) == 1
        assert drv.launches[-1][B] is drv.launches[-2][B]
        with torch.no_grad():
            wt.mul_(2.0)
        pre(x, g, None, [wt], [None], 1e-6, 0.0, False, True, True)
        assert len(resolves) == 2

        seen = []
        real = inference._resolve_post
        monkeypatch.setattr(inference, "_resolve_post", lambda *a: (seen.append(a), real(*a))[1])
        monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "fused")
        gn = 1 + _bf(N, scale=0.1, seed=4)
        for _ in range(3):
            z = torch.ops.normfuse.postnorm_linear.default(x, wt, gn, None, None, None, 1e-6,
                                                           0.0, False, True)
            assert z.shape == (M, N)
        assert len(seen) == 1


def test_public_weight_kn_launches_what_the_transpose_launches(resolves):
    """ops.layernorm_linear(..., weight_kn=True) with [K, N] weights (a Conv1D's, siblings
    included) launches what passing their transposes launches, from one resolution; under
    autograd it trains as the transposes do; a weight that is not 2-D is refused by name."""
    g, beta = 1 + _bf(K, scale=0.1, seed=1), _bf(K, scale=0.1, seed=7)
    w1, w2 = _bf(K, N, scale=K ** -0.5, seed=2), _bf(K, 64, scale=K ** -0.5, seed=4)
    b1, b2 = _bf(N, seed=6), _bf(64, seed=8)
    x = _bf(M, K, seed=3)
    with fused_on_cpu() as drv:
        for ws, bs in (([w1], [b1]), ([w1, w2], [b1, b2])):
            one = ws[0] if len(ws) == 1 else ws
            y = ops.layernorm_linear(x, g, beta, one, 1e-5, bs[0] if len(bs) == 1 else bs,
                                     weight_kn=True)
            kn = drv.launches[-1]
            n = len(resolves)
            ts = [w.t() for w in ws]
            y2 = ops.layernorm_linear(x, g, beta, ts[0] if len(ts) == 1 else ts, 1e-5,
                                      bs[0] if len(bs) == 1 else bs)
            tr = drv.launches[-1]
            assert y.shape == y2.shape == (M, sum(w.shape[1] for w in ws))
            for i, (u, v) in enumerate(zip(kn, tr)):
                if i == C:
                    assert u.inputs[1:] == v.inputs[1:]
                else:  # B included: one derived weight (the cache keys it by the storage)
                    assert _same(u, v), i
            ops.layernorm_linear(x, g, beta, one, 1e-5, bs[0] if len(bs) == 1 else bs,
                                 weight_kn=True)
            assert len(resolves) == n + 1  # the transposes' own; the kn call again: none
    with pytest.raises(ValueError, match="weight_kn=True takes 2-D"):
        ops.rmsnorm_linear(x, g, w1.flatten(), weight_kn=True)
    xg = x.float().requires_grad_()
    wg = w1.float().requires_grad_()
    ops.rmsnorm_linear(xg, g.float(), wg, 1e-6, weight_kn=True).square().sum().backward()
    gx, gw = xg.grad, wg.grad
    xg.grad = wg.grad = None
    ops.rmsnorm_linear(xg, g.float(), wg.t(), 1e-6).square().sum().backward()
    torch.testing.assert_close(gx, xg.grad)
    torch.testing.assert_close(gw, wg.grad)


def test_postnorm_fresh_views_hit(monkeypatch):
    """The post-norm op keys its weight's views the same way."""
    seen = []
    real = inference._resolve_post
    monkeypatch.setattr(inference, "_resolve_post", lambda *a: (seen.append(a), real(*a))[1])
    monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "fused")
    wt = _bf(K, N, scale=K ** -0.5, seed=2)
    g = 1 + _bf(N, scale=0.1, seed=1)
    x = _bf(M, K, seed=3)
    with fused_on_cpu():
        for _ in range(3):
            z = ops.linear_rmsnorm(x, wt.t(), g)
            assert z.shape == (M, N)
    assert len(seen) == 1


@pytest.mark.postnorm_plan
def test_lowered_postnorm_calls_view_3d_activations(monkeypatch):
    """The default post-norm plan (the lowered form, tensor maps) on 3-D activations: a call
    that hits the launch-ready call passes contiguous x and residual as they are and allocates
    the output 3-D (the maps' addresses are x's, the residual's and the output's own, the
    geometry the plan's [M, K] / [M, N]); a non-contiguous x is copied to 2-D first."""
    from normfuse.ops import postnorm_linear as post
    from normfuse.testing.fake_driver import FakeTensorMap
    monkeypatch.delenv("NORMFUSE_POSTNORM_PLAN", raising=False)
    monkeypatch.setitem(post.LOWERED_POSTNORM, "rms", "coop")
    post.clear_postnorm_plans()
    m, k, n = 200, 256, 512
    w, gn = _bf(n, k, scale=k ** -0.5, seed=2), 1 + _bf(n, scale=0.1, seed=8)
    with fused_on_cpu() as drv:
        for seed in (3, 4, 5):
            x, r = _bf(2, m // 2, k, seed=seed), _bf(2, m // 2, n, seed=seed + 10)
            y = ops.linear_rmsnorm(x, w, gn, residual=r)
            assert y.shape == (2, m // 2, n)
            maps = [a.inputs[0] for a in drv.launches[-1] if isinstance(a, FakeTensorMap)]
            assert x.data_ptr() in maps and r.data_ptr() in maps and y.data_ptr() in maps
        assert len(inference._POST_CALLS) == 1
        wide = _bf(2, m // 2, k + 64, seed=6)[..., :k]  # rows of stride k + 64: a 2-D view
        y = ops.linear_rmsnorm(wide, w, gn, residual=r)
        maps = [a.inputs[0] for a in drv.launches[-1] if isinstance(a, FakeTensorMap)]
        assert wide.data_ptr() in maps and y.data_ptr() in maps
        xt = _bf(m // 2, 2, k, seed=7).transpose(0, 1)  # [2, 100, K] whose rows need a copy
        y = ops.linear_rmsnorm(xt, w, gn, residual=r)
        maps = [a.inputs[0] for a in drv.launches[-1] if isinstance(a, FakeTensorMap)]
        assert xt.data_ptr() not in maps and y.data_ptr() in maps and r.data_ptr() in maps
    post.clear_postnorm_plans()


def test_optimized_conv1d_blocks_call_with_kn_weights(resolves, monkeypatch):
    """GPT-2's fused blocks hand the op their Conv1D parameters as they are (weight_kn), in
    eager and compiled forwards: the op sees the [K, N] parameters (no per-call view, no alias
    to look an owner up for), resolves once per block, and computes what the transposes do."""
    import optimize_models as om

    import normfuse
    seen = []
    real = inference.prenorm_linear
    monkeypatch.setattr(inference, "prenorm_linear",
                        lambda *a: (seen.append(a), real(*a))[1])
    torch.manual_seed(0)
    m = om.tiny_family("gpt2").bfloat16().eval()
    ids = torch.randint(0, 100, (2, 16))
    with fused_on_cpu(), torch.no_grad():
        normfuse.optimize(m, check=False)
        for _ in range(3):
            m(input_ids=ids)
    convs = {id(p) for n, p in m.named_parameters() if n.endswith(("c_attn.weight", "c_fc.weight"))}
    kn = [a[9] for a in seen]  # the Conv1D blocks' calls: the parameters themselves, weight_kn
    assert kn == [all(id(w) in convs for w in a[3]) for a in seen], kn
    assert sum(kn) == 2 * 2 * 3  # c_attn and c_fc in 2 layers, 3 forwards (the LM head: Linear)
    per_forward = len(seen) // 3
    assert len(resolves) == per_forward  # the first forward's; none after


def test_launch_ready_calls_take_a_strided_2d_x():
    """A 2-D x without unit stride along K (a transpose) goes to the launch as a copy: the second
    call (the launch-ready one) returns the [M, N] output as the first did, for the pre-norm op
    and for the post-norm op with and without a transposed 2-D residual (the launch-ready calls
    once ended in y.view(None) there and raised after launching)."""
    m, k, n = 200, 256, 256
    w, g = _bf(n, k, scale=k ** -0.5, seed=2), 1 + _bf(k, scale=0.1, seed=8)
    gn = 1 + _bf(n, scale=0.1, seed=9)
    x = _bf(k, m, seed=3).t()  # [M, K], strides (1, M)
    xc = _bf(m, k, seed=4)
    r = _bf(n, m, seed=5).t()
    with fused_on_cpu():
        for i in range(3):
            assert ops.rmsnorm_linear(x, g, w).shape == (m, n), i
            assert ops.linear_rmsnorm(x, w, gn).shape == (m, n), i
            assert ops.linear_rmsnorm(xc, w, gn, residual=r).shape == (m, n), i
    assert len(inference._PRE_CALLS) == 1 and len(inference._POST_CALLS) == 2


@pytest.mark.parametrize("form", [pytest.param("fused", marks=pytest.mark.slow), "lowered"])
def test_postnorm_training_forward_is_planned_once_per_geometry(form, monkeypatch):
    """The post-norm ops' training forward (`postnorm_linear_fwd`) keeps one launch plan per
    geometry (`training._TRAIN_PLANS`) and launches each step's own tensors: fresh x, residual,
    z and h every step. The lowered form (h the template's second output) passes them in its
    tensor maps, and returns empty statistics; the fused one's launches carry their addresses."""
    from normfuse.ops import postnorm_linear as post, training as tr
    from normfuse.testing.fake_driver import FakeTensorMap
    monkeypatch.setitem(post.LOWERED_POSTNORM, "rms", "coop")
    monkeypatch.setattr(tr, "POSTNORM_TRAIN_FWD", form)
    post.clear_postnorm_plans()
    m, k, n = 256, 256, 512
    w, gn = _bf(n, k, scale=k ** -0.5, seed=2), 1 + _bf(n, scale=0.1, seed=8)
    with fused_on_cpu() as drv:
        for seed in (3, 4, 5):
            x, r = _bf(m, k, seed=seed), _bf(m, n, seed=seed + 10)
            before = len(drv.launches)
            z, h, rstd, mean = torch.ops.normfuse.postnorm_linear_fwd(x, w, gn, None, None, r,
                                                                      1e-6, 0.0, False)
            assert len(drv.launches) == before + 1
            mine = {x.data_ptr(), r.data_ptr(), z.data_ptr(), h.data_ptr()}
            launch = drv.launches[-1]
            if form == "lowered":
                assert rstd.numel() == 0 and mean.numel() == 0
                seen = {a.inputs[0] for a in launch if isinstance(a, FakeTensorMap)}
            else:
                assert rstd.shape == (m,)
                seen = {a.data_ptr() for a in launch if isinstance(a, torch.Tensor)}
            assert mine <= seen, (mine - seen)
        assert len(tr._TRAIN_PLANS) == 1
    post.clear_postnorm_plans()
    assert len(tr._TRAIN_PLANS) == 0


def test_a_prenorm_training_step_launches_the_fused_kernels():
    """A LayerNorm pre-norm training step on the CPU stand-in, as on the H200 (the default
    "cublas" backward plan, statistics recomputed in the backward): the forward launches one
    kernel (the lowered fused GEMM: the fold is torch's on the CPU, one fold_columns_dot launch
    on the GPU), the backward two Triton kernels (the persistent norm backward and its column
    partials' reduction) beside cuBLAS's dX and dW GEMMs, and every gradient comes back in its
    input's shape and dtype (the stand-in runs no kernel: their values are not checked here)."""
    x = _bf(M, K).requires_grad_()
    g = (1 + _bf(K, scale=0.1, seed=1)).requires_grad_()
    beta = _bf(K, scale=0.1, seed=2).requires_grad_()
    w = _bf(N, K, scale=K ** -0.5, seed=3).requires_grad_()
    with fused_on_cpu() as drv:
        y = functional.layernorm_linear(x, g, beta, w)
        fwd = len(drv.launches)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            y.backward(_bf(M, N, seed=4))
        bwd = len(drv.launches) - fwd
    assert (fwd, bwd) == (1, 2), (fwd, bwd)
    mms = sum(e.count for e in prof.key_averages() if e.key == "aten::mm")
    assert mms == 2, mms
    for t in (x, g, beta, w):
        assert t.grad is not None and t.grad.shape == t.shape and t.grad.dtype == t.dtype


def test_input_checks_pass_at_once_for_inputs_alike(monkeypatch):
    """check_prenorm / check_postnorm run their checks once per inputs' metadata (types, shapes,
    dtypes, devices: all they read); inputs that differ in any of those are checked again, a
    failing check is never remembered, and what is not a tensor is checked every time."""
    runs = []
    real_pre, real_post = common._check_prenorm, common._check_postnorm
    monkeypatch.setattr(common, "_check_prenorm", lambda *a: (runs.append("pre"), real_pre(*a)))
    monkeypatch.setattr(common, "_check_postnorm", lambda *a: (runs.append("post"),
                                                               real_post(*a)))
    monkeypatch.setattr(common, "_PASSED", {})
    x, w, g = _bf(8, 64), _bf(32, 64), _bf(64)

    def pre(x, w, g, b=None, fused=True):
        common.check_prenorm("rmsnorm_linear", x, (w,), None if b is None else (b,),
                             {"norm_weight": g}, fused=fused)
    pre(x, w, g)
    pre(_bf(8, 64, seed=1), _bf(32, 64, seed=1), _bf(64, seed=1))  # other values, same metadata
    assert runs == ["pre"]
    pre(_bf(9, 64), w, g)  # another shape
    pre(x, w, g, fused=False)  # another dtype rule
    assert runs == ["pre"] * 3
    with pytest.raises(ValueError, match="in_features must agree"):
        pre(x, _bf(32, 63), g)
    with pytest.raises(ValueError, match="in_features must agree"):  # (not remembered)
        pre(x, _bf(32, 63), g)
    with pytest.raises(TypeError, match="all tensors must have one dtype"):
        pre(x, w, g.half())
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        pre([[1.0]], w, g)
    assert runs == ["pre"] * 7

    def post(x, w, gn, bias=None, residual=None):
        common.check_postnorm("linear_rmsnorm", x, w, {"norm_weight": gn}, bias, residual,
                              fused=True)
    post(x, w, _bf(32))
    post(x, w, _bf(32, seed=2))
    with pytest.raises(ValueError, match="residual must have the output's shape"):
        post(x, w, _bf(32), residual=_bf(8, 31))
    with pytest.raises(TypeError, match="weight must be one tensor"):
        post(x, [w, w], _bf(32))
    assert runs == ["pre"] * 7 + ["post"] * 3
