"""CUDA graphs (GPU, marked): the ops capture (no host sync, allocations from torch's caching
allocator only), replays with new inputs copied in place equal eager; a captured training step
(forward, backward, SGD step) replays step for step like the same steps in eager, the weights
updated in place by each replay (the training ops cache nothing derived from weights); derived
weights read by an inference graph stay alive after the eager caches drop them (pinned).

CPU: the capture rules of the caches, with the capture state faked (nothing stored while
capturing; what a capture reads is pinned until clear_caches()).
"""
from __future__ import annotations

import pytest
import torch

import normfuse.ops as ops
from normfuse.ops import common, inference

pytestmark = pytest.mark.filterwarnings("ignore::normfuse.ops.FallbackWarning")


# ---------------------------------------------------------------------------------------------
# CPU: the caches under capture
# ---------------------------------------------------------------------------------------------

def test_caches_store_nothing_during_capture_and_pin_what_it_reads(monkeypatch):
    c = common.DerivedCache()
    w = torch.randn(8, 4)
    monkeypatch.setattr(common, "capturing", lambda: True)
    monkeypatch.setattr(common, "_capturing", lambda: True)
    a = c.get("unit-k", (w,), None, lambda: w.clone())
    assert len(c) == 0  # computed inside the graph: recomputed by every replay, never cached
    monkeypatch.setattr(common, "_GRAPH_PINS", {})
    common.pin_for_capture(a, None)
    assert list(common._GRAPH_PINS.values()) == [a]
    monkeypatch.setattr(common, "capturing", lambda: False)
    common.pin_for_capture(w)  # not capturing: nothing kept
    assert len(common._GRAPH_PINS) == 1
    ops.clear_caches()
    assert not common._GRAPH_PINS


def test_memo_stores_nothing_during_capture(monkeypatch):
    memo = inference._Memo()
    w = torch.randn(4, 4)
    monkeypatch.setattr(inference, "capturing", lambda: True)
    memo.store(("k",), [w], "value")
    assert not memo
    monkeypatch.setattr(inference, "capturing", lambda: False)
    memo.store(("k",), [w], "value")
    assert memo.lookup(("k",), [w]) == "value"
    w.add_(1)  # a new version
    assert memo.lookup(("k",), [w]) is None
    v = torch.randn(4, 4)
    memo.store(("k",), [v], "value")
    v.data = torch.randn(4, 4)  # same object and version, another address (model.to, .data =)
    assert memo.lookup(("k",), [v]) is None


# ---------------------------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------------------------

def _net(seed, d=256):
    from test_ops_compile import Net  # the same modules as the torch.compile tests
    torch.manual_seed(seed)
    net = Net(d, dtype=torch.bfloat16, device="cuda")
    with torch.no_grad():
        for p in net.parameters():
            if p.dim() == 1:
                p.add_(0.05 * torch.randn_like(p))
    return net


class _WithSiblings(torch.nn.Module):
    """The modules, then the functional op with siblings (one strided) and offset."""

    def __init__(self, net, d=256):
        super().__init__()
        self.net = net
        self.g = torch.nn.Parameter(0.1 * torch.randn(d, device="cuda", dtype=torch.bfloat16))
        self.w0 = torch.nn.Parameter(0.05 * torch.randn(128, d, device="cuda", dtype=torch.bfloat16))
        self.w1t = torch.nn.Parameter(0.05 * torch.randn(d, 128, device="cuda", dtype=torch.bfloat16))

    def forward(self, x):
        h = self.net(x)
        return ops.rmsnorm_linear(h, self.g, [self.w0, self.w1t.t()], offset=1.0)


def _warm(fn, n=3):
    from normfuse.repro.models import warm_on_side_stream
    warm_on_side_stream(fn, n)


@pytest.mark.gpu
def test_gpu_inference_graph_replays_new_inputs_like_eager():
    m = _WithSiblings(_net(0)).eval()
    x = torch.randn(4, 128, 256, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        _warm(lambda: m(x))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = m(x)
        for _ in range(3):
            x.copy_(torch.randn_like(x))
            g.replay()
            torch.testing.assert_close(y, m(x))  # the same kernels: equal up to bf16 rounding
        # the eager caches move on (new weight versions); the graph keeps reading the folded
        # weights of capture time, which stay allocated (pinned) whatever is allocated since
        before = m(x).clone()
        m.net.a.weight.mul_(2.0)
        m.w0.mul_(2.0)
        after = m(x)  # eager: the new weights
        junk = [torch.full((4096, 4096), float("nan"), device="cuda") for _ in range(4)]
        g.replay()
        torch.testing.assert_close(y, before, rtol=0, atol=0)
        assert not torch.equal(after, before)
        del junk
    ops.clear_caches()


@pytest.mark.gpu
def test_gpu_training_step_graph_replays_like_eager_steps():
    net, ref = _WithSiblings(_net(1)), _WithSiblings(_net(1))
    ref.load_state_dict(net.state_dict())
    opt = torch.optim.SGD(net.parameters(), lr=1e-2)
    ropt = torch.optim.SGD(ref.parameters(), lr=1e-2)
    x = torch.randn(2, 128, 256, device="cuda", dtype=torch.bfloat16)
    xs = [torch.randn_like(x) for _ in range(4)]

    def step(model, o, inp):
        o.zero_grad(set_to_none=False)
        loss = model(inp).float().square().mean()
        loss.backward()
        o.step()
        return loss

    for p in net.parameters():  # grads allocated before capture (static)
        p.grad = torch.zeros_like(p)
    _warm(lambda: step(net, opt, x), n=2)
    for _ in range(2):  # the same warm-up steps for the twin
        step(ref, ropt, x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = step(net, opt, x)
    torch.testing.assert_close(net.state_dict(), ref.state_dict())  # capture runs nothing
    for xi in xs:
        x.copy_(xi)
        g.replay()
        rl = step(ref, ropt, xi)
        torch.testing.assert_close(loss, rl, rtol=1e-3, atol=1e-5)
        for (n, p), q in zip(net.named_parameters(), ref.parameters()):
            torch.testing.assert_close(p, q, rtol=2e-2, atol=2e-3, msg=n)
