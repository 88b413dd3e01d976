"""The post-norm rewrite (normfuse.nn.postnorm_rewrite, through normfuse.optimize) on the CPU:
patterns it must refuse or hand back to the modules, each once got wrong (the session 12
review): outputs against the stock model on inputs other than optimize's example too."""
import copy
import warnings

import pytest
import torch
from torch import nn

import normfuse
import optimize_models as om

pytestmark = pytest.mark.filterwarnings("ignore::normfuse.ops.FallbackWarning")
D = om.H


def _optimize(model, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return normfuse.optimize(model, *args, report=True, **kw)


def _rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).norm() / b.norm()).item()


def _post(rep) -> list:
    return [m.norm for m in rep.matches if m.side == "post"]


class BiasFirst(nn.Module):
    """norm(bias + dense(h) + r): the separate bias comes before the linear in the sum."""

    def __init__(self, lin_bias: bool = False):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(D))
        self.dense = nn.Linear(D, D, bias=lin_bias)
        self.norm = nn.LayerNorm(D)

    def forward(self, h, r):
        return self.norm(self.bias + self.dense(h) + r)


def test_a_separate_bias_before_the_linear_is_kept():
    """The bias was dropped when the sum named it before the linear (a zero bias passes the
    check; a trained one then went missing); with the linear's own bias too the pattern is
    refused."""
    h, r = torch.randn(2, 5, D), torch.randn(2, 5, D)
    stock = om.randomize(BiasFirst())
    with torch.no_grad():
        stock.bias.zero_()
    model, rep = _optimize(copy.deepcopy(stock), (h, r))
    assert _post(rep) == ["norm"], str(rep)
    with torch.no_grad():
        stock.bias.normal_()
        model.bias.copy_(stock.bias)
        assert _rel(model(h, r), stock(h, r)) < 1e-5
    both = om.randomize(BiasFirst(lin_bias=True))
    model, rep = _optimize(copy.deepcopy(both), (h, r), check=False)
    assert not _post(rep) and "both" in str(rep), str(rep)
    with torch.no_grad():
        assert _rel(model(h, r), both(h, r)) < 1e-5


class TwoLinears(nn.Module):
    """n1(a(n0(h)) + b(h2)): a pre-norm GEMM (a) and the post-norm's GEMM (b, the last one
    the probe sees reach n1) in one sum."""

    def __init__(self):
        super().__init__()
        self.n0, self.a = nn.LayerNorm(D), nn.Linear(D, D)
        self.b, self.n1 = nn.Linear(D, D), nn.LayerNorm(D)

    def forward(self, h, h2):
        return self.n1(self.a(self.n0(h)) + self.b(h2))


def test_the_rewrite_fuses_the_linear_the_probe_chose():
    h, h2 = torch.randn(2, 5, D), torch.randn(2, 5, D)
    stock = om.randomize(TwoLinears())
    model, rep = _optimize(copy.deepcopy(stock), (h, h2), check=False)
    assert [(m.norm, m.side, m.gemms) for m in rep.matches] == [
        ("n0", "pre", ["a"]), ("n1", "post", ["b"])], str(rep)
    with torch.no_grad():
        assert _rel(model(h, h2), stock(h, h2)) < 1e-5


class Masked(nn.Module):
    """norm(dense(h) * mask + r), mask optional; a shape argument of tuple type."""

    def __init__(self):
        super().__init__()
        self.dense, self.norm = nn.Linear(D, D), nn.LayerNorm(D)

    def forward(self, h, r, mask=None):
        y = self.dense(h) if mask is None else self.dense(h) * mask
        return self.norm(y + r)


class TupleArg(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense, self.norm = nn.Linear(D, D), nn.LayerNorm(D)

    def forward(self, h, r, scale=(1.0, 1.0)):
        return self.norm(self.dense(h) + r) * scale[0]


def test_arguments_the_graph_was_not_specialized_to():
    """A graph traced with a tensor mask called with mask=None runs the original forward; a
    tuple argument is refused with the reason, not a SyntaxError out of optimize."""
    h, r, mask = torch.randn(2, 5, D), torch.randn(2, 5, D), torch.rand(2, 5, 1)
    stock = om.randomize(Masked())
    model, rep = _optimize(copy.deepcopy(stock), (h, r, mask))
    with torch.no_grad():
        assert _rel(model(h, r), stock(h, r)) < 1e-5
        assert _rel(model(h, r, mask), stock(h, r, mask)) < 1e-5
    stock = om.randomize(TupleArg())
    model, rep = _optimize(copy.deepcopy(stock), (h, r, (1.0, 1.0)))
    assert not _post(rep) and "specializes only" in str(rep), str(rep)


class BroadcastResidual(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense, self.norm = nn.Linear(D, D), nn.LayerNorm(D)
        self.pos = nn.Parameter(torch.randn(1, 5, D))

    def forward(self, h):
        return self.norm(self.dense(h) + self.pos)


def test_a_residual_that_broadcasts_runs_by_the_modules():
    stock = om.randomize(BroadcastResidual())
    model, rep = _optimize(copy.deepcopy(stock), (torch.randn(1, 5, D),))
    h = torch.randn(3, 5, D)
    with torch.no_grad():
        assert _rel(model(h), stock(h)) < 1e-5


def test_mc_dropout_in_an_eval_caller_is_not_dropped():
    """model.eval() with the pattern's dropout put back in training (MC dropout): the original
    forward runs, so the dropout does."""
    h, r = torch.randn(2, 5, 2 * D), torch.randn(2, 5, D)
    model, rep = _optimize(om.randomize(om.PostNorm(p=0.5)).eval(), (h, r))
    assert _post(rep) == ["norm"], str(rep)
    model.dropout.train()
    with torch.no_grad():
        torch.manual_seed(0)
        a = model(h, r)
        torch.manual_seed(1)
        b = model(h, r)
    assert not torch.equal(a, b)


def test_hooks_and_replaced_linears_after_optimize_are_honoured():
    """Forward hooks registered on the pattern's linear or norm after optimize fire (the modules
    run); a linear replaced by one that is no plain GEMM (a LoRA-style wrapper) computes its own
    function; hooks already on the pattern's dropout at optimize time refuse the rewrite."""
    h, r = torch.randn(2, 5, 2 * D), torch.randn(2, 5, D)
    stock = om.randomize(om.PostNorm()).eval()
    model, rep = _optimize(copy.deepcopy(stock), (h, r))
    assert _post(rep) == ["norm"], str(rep)
    seen = []
    handle = model.norm.register_forward_hook(lambda m, a, out: seen.append(1) or out * 2)
    with torch.no_grad():
        assert _rel(model(h, r), 2 * stock(h, r)) < 1e-5 and seen == [1]
    handle.remove()

    class LoRA(nn.Linear):
        def __init__(self, base):
            super().__init__(base.in_features, base.out_features)
            self.load_state_dict(base.state_dict())
            self.delta = nn.Linear(base.in_features, base.out_features, bias=False)

        def forward(self, x):
            return super().forward(x) + self.delta(x)
    model.dense = LoRA(model.dense)
    with torch.no_grad():
        want = stock.norm(model.dense(h) + r)
        assert _rel(model(h, r), want) < 1e-5
    hooked = copy.deepcopy(stock)
    hooked.dropout.register_forward_hook(lambda m, a, out: out * 2)
    model, rep = _optimize(hooked, (h, r), check=False)
    assert not _post(rep) and "hooks" in str(rep), str(rep)


class _Scaled(nn.Module):
    """A linear wrapped after optimize (1.5 x its output): no GEMM module in the pattern."""

    def __init__(self, base):
        super().__init__()
        self.base = base

    def forward(self, x):
        return self.base(x) * 1.5


def test_a_copy_of_a_changed_caller_runs_its_own_forward():
    """A copy (deepcopy, pickle) traces the caller again on its first call; where the caller
    changed after optimize so that the pattern is gone (the linear wrapped, a LoRA), the copy
    runs the caller's own forward instead of raising."""
    import pickle
    h, r = torch.randn(2, 5, 2 * D), torch.randn(2, 5, D)
    stock = om.randomize(om.PostNorm()).eval()
    model, _ = _optimize(copy.deepcopy(stock), (h, r))
    model.dense = _Scaled(model.dense)
    with torch.no_grad():
        want = stock.norm(1.5 * stock.dense(h) + r)
        for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
            assert _rel(twin(h, r), want) < 1e-5
            assert _rel(twin(h, r), want) < 1e-5  # (and again: no second trace)
