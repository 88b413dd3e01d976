"""normfuse.optimize's training plans on the CPU (fp32, tiny transformers models of one layer):
the composed plan (the default) computes the stock model's training step with the original norm
modules and plain GEMMs, eager and under torch.compile (fullgraph, one graph per mode, no
recompile when switching modes, the siblings as one GEMM over concatenated weights in the
compiled graph); the fused plan runs the fused ops with the ops' own backward plan; the report
says which plan each group trains with."""
from __future__ import annotations

import collections
import copy
import sys
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import normfuse
from normfuse.nn.fused import FusedNorm, NormAfterLinear
from normfuse.nn.optimize import set_train_plan
from normfuse.nn.postnorm_rewrite import PostNormForward

sys.path.insert(0, str(Path(__file__).parent))
import optimize_models as om  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

IDS = torch.randint(0, om.VOCAB, (2, 12), generator=torch.Generator().manual_seed(7))
FAMILIES = ("llama", "qwen2", "gpt2", "bert")
# packed groups (siblings reading one norm) per layer: q/k/v and gate/up
PACKED = {"llama": 2, "qwen2": 2, "gpt2": 0, "bert": 0, "gemma2": 2}


def _optimize(model, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return normfuse.optimize(model, *args, report=True, **kw)


def _pair(family: str, train: str = "composed"):
    stock = om.no_dropout(om.tiny_family(family, layers=1))
    model, rep = _optimize(copy.deepcopy(stock), train=train)
    return stock, model, rep


def _step(model, f, train: bool, ids=IDS):
    """One forward (and in train mode the backward of a fixed projection of the output)."""
    model.train(train)
    for p in model.parameters():
        p.grad = None
    with torch.set_grad_enabled(train):
        out = om.logits(f(input_ids=ids))
        if train:
            (out * torch.linspace(-1, 1, out.shape[-1])).sum().backward()
    return out.detach()


def _grads(model) -> dict:
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def _original_norms(model) -> list:
    """The original norm modules that the composed plan runs (kept by the rewrite)."""
    out = []
    for m in model.modules():
        if isinstance(m, (FusedNorm, NormAfterLinear)):
            out.append(m._original)
        fwd = m.__dict__.get("forward")
        if isinstance(fwd, PostNormForward):
            out += [m.get_submodule(rel) for rel, *_ in fwd.norms]
    return out


def _graph_nodes(out: torch.Tensor) -> collections.Counter:
    """The autograd graph behind `out`: its nodes' type names, counted."""
    seen, stack, nodes = set(), [out.grad_fn], collections.Counter()
    while stack:
        f = stack.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        nodes[type(f).__name__] += 1
        stack += [n for n, _ in f.next_functions]
    return nodes


@pytest.mark.parametrize("family", FAMILIES + ("gemma2",))
def test_composed_backward_graph_is_the_stock_models(family, monkeypatch):
    """Composed training records the stock model's autograd graph, node for node: in
    particular GPT-2's Conv1D consumers run Conv1D's addmm on the [K, N] weight, not F.linear
    through a transposed view (two more TBackward nodes per consumer, linear's matmul path)."""
    from normfuse.nn.fused import SiblingGEMMs
    monkeypatch.setattr(SiblingGEMMs, "train_packed", False)
    stock, model, _ = _pair(family)
    graphs = []
    for m in (stock, model):
        m.train()
        graphs.append(_graph_nodes(om.logits(m(input_ids=IDS))))
    assert graphs[1] == graphs[0], (graphs[1] - graphs[0], graphs[0] - graphs[1])


class _GemmCount(TorchFunctionMode):
    """Counts the GEMM calls (F.linear, and torch.addmm: GPT-2's Conv1D) and torch.cat calls."""

    def __init__(self):
        super().__init__()
        self.gemms = self.cats = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (F.linear, torch._C._nn.linear, torch.addmm):
            self.gemms += 1
        if func is torch.cat:
            self.cats += 1
        return func(*args, **(kwargs or {}))


def _count_ops(monkeypatch) -> list:
    import normfuse.ops as ops
    calls = []
    for name in ("rmsnorm_linear", "layernorm_linear", "linear_rmsnorm", "linear_layernorm"):
        real = getattr(ops, name)
        monkeypatch.setattr(ops, name,
                            lambda *a, _r=real, _n=name, **k: (calls.append(_n), _r(*a, **k))[1])
    return calls


# ---------------------------------------------------------------------------------------------
# composed, eager: the stock model's step
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family,siblings_packed",
                         [(f, False) for f in FAMILIES + ("gemma2",)] + [("bert", True)],
                         ids=[*FAMILIES, "gemma2", "bert-siblings-packed"])
def test_composed_eager_is_the_stock_step(family, siblings_packed, monkeypatch):
    """Train mode, eager: no normfuse op runs, each fused norm's original module runs once per
    forward, the GEMMs are the stock model's (as many, no concatenated weights), and the output
    and every gradient equal the stock model's, bitwise (GPT-2's Conv1D consumers run Conv1D's
    own addmm on the [K, N] weight: `_GemmModule.plain_gemm`). With the sibling
    groups' packed training form (BERT's q / k / v, `SiblingGEMMs.train_packed`, the default;
    off for the other cases here): one GEMM per group over the concatenated weights and biases
    (two cats), the output and gradients within 1e-5. Eval mode: the fused ops, within 1e-5."""
    from normfuse.nn.fused import SiblingGEMMs
    monkeypatch.setattr(SiblingGEMMs, "train_packed", siblings_packed)
    stock, model, rep = _pair(family)
    assert rep.train_plan == "composed" and rep.matches
    calls = _count_ops(monkeypatch)
    ran = []
    norms = _original_norms(model)
    assert len(norms) == len(rep.matches)
    hooks = [n.register_forward_hook(lambda m, a, out: ran.append(m)) for n in norms]
    counts = []
    for m in (stock, model):
        with _GemmCount() as c:
            out = _step(m, m, True)
        counts.append((c.gemms, c.cats))
        if m is stock:
            want, g_want = out, _grads(stock)
    assert calls == [] and len(ran) == len(norms) and set(map(id, ran)) == set(map(id, norms))
    g = _grads(model)
    assert set(g) == set(g_want)
    if siblings_packed:
        groups = len(rep.siblings)
        assert groups and counts[1] == (counts[0][0] - 2 * groups, 2 * groups), counts
        assert _rel(out, want) < 1e-5
        assert all(_rel(g[n], g_want[n]) < 1e-5 for n in g if g_want[n].abs().max() > 1e-12)
        return
    assert counts[1] == counts[0], counts  # the same GEMMs, no torch.cat of weights
    assert torch.equal(out, want)
    assert all(torch.equal(g[n], g_want[n]) for n in g), [n for n in g if not torch.equal(
        g[n], g_want[n])]
    for h in hooks:  # (a post-norm's norm with hooks runs as a module: nn.fused._hooked)
        h.remove()
    ran.clear()
    got = _step(model, model, False)
    assert calls and not ran  # inference: the fused ops
    assert _rel(got, _step(stock, stock, False)) < 1e-5


# ---------------------------------------------------------------------------------------------
# composed under torch.compile
# ---------------------------------------------------------------------------------------------

def _cat_gemms(gm) -> int:
    """F.linear calls whose weight is a torch.cat in the graph."""
    n = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (F.linear, torch._C._nn.linear):
            w = node.args[1] if len(node.args) > 1 else node.kwargs.get("weight")
            n += getattr(w, "target", None) is torch.cat
    return n


def _normfuse_ops(gm) -> set:
    return {str(n.target) for n in gm.graph.nodes if "normfuse" in str(n.target)}


@pytest.mark.parametrize("family,pack", [(f, False) for f in FAMILIES] + [
    pytest.param("llama", True, marks=pytest.mark.slow)])  # (the packed form: not the default)
def test_composed_compiles_without_breaks_or_recompiles(family, pack, monkeypatch):
    """torch.compile(fullgraph=True: a graph break raises) over the optimized model, eval then
    train mode: one graph per mode, the normfuse inference ops in eval, none in train, where
    every consumer runs its own GEMM (the default) or, with COMPOSED_PACK, each packed sibling
    group is one GEMM over torch.cat of its weights (q/k/v, gate/up); the compiled training
    step's gradients equal the stock model's (fp32); then switching modes back and forth with
    new inputs recompiles nothing."""
    import torch._dynamo as dynamo
    from normfuse.nn import fused
    monkeypatch.setattr(fused, "COMPOSED_PACK", pack)
    packed = PACKED[family] if pack else 0
    stock, model, _ = _pair(family)
    graphs = []

    def record(gm, example):  # the eager backend, keeping each graph Dynamo hands over
        graphs.append(gm)
        return gm.forward
    compiled = torch.compile(model, backend=record, fullgraph=True)
    dynamo.reset()
    try:
        got = _step(model, compiled, False)
        assert _rel(got, _step(stock, stock, False)) < 1e-5
        got = _step(model, compiled, True)
        g = _grads(model)
        want = _step(stock, stock, True)
        g_want = _grads(stock)
        assert len(graphs) == 2
        assert _normfuse_ops(graphs[0]) and not _normfuse_ops(graphs[1])
        assert _cat_gemms(graphs[0]) == 0 and _cat_gemms(graphs[1]) == packed
        assert _rel(got, want) < 1e-6 and set(g) == set(g_want)
        assert all(_rel(g[n], g_want[n]) < 1e-6 for n in g)
        with dynamo.config.patch(error_on_recompile=True):
            for train in (False, True):
                _step(model, compiled, train, torch.randint(0, om.VOCAB, IDS.shape))
        assert len(graphs) == 2
        if family == "llama":  # and what torch._dynamo.explain says, in train mode
            model.train()
            ex = dynamo.explain(model)(input_ids=IDS)
            assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
            assert _cat_gemms(ex.graphs[0]) == packed
    finally:
        dynamo.reset()


# ---------------------------------------------------------------------------------------------
# fused: the ops' own backward plan
# ---------------------------------------------------------------------------------------------

def test_fused_plan_uses_the_ops_backward_plan(monkeypatch):
    """train="fused": every consumer runs the fused training op, whose backward takes the plan
    normfuse.ops.training.PRENORM_BWD_PLAN holds when it runs (the default 'cublas', or what a
    user set: 'fused'); the optimized model passes none of its own. (On the CPU the ops take
    the reference path: the kernels' route is forced for the backward and the plan's function
    replaced by the reference math, recording its plan.) The gradients equal the stock model's;
    the report names the plan."""
    from normfuse.ops import fallback, training
    eps = 1e-6
    stock = om.randomize(om.QKVBlock(om.FRMS(eps)))
    x = torch.randn(2, 5, om.H)
    model, rep = _optimize(copy.deepcopy(stock), (x,), train="fused")
    assert training.PRENORM_BWD_PLAN["rmsnorm_linear"] == "cublas"  # the ops' default
    assert "backward plan 'cublas'" in rep.matches[0].train
    real_route, in_bwd, plans = training.route, [False], []

    def route(op, t):
        return True if in_bwd[0] else real_route(op, t)

    def prenorm_backward(dy, x2, g, beta, weight, rstd, mean, *, is_ln, has_bias, plan, y=None,
                         bias=None, eps=None):
        # (the forward's output reaches the backward under the plan that reads it only)
        assert (y is not None) == (plan == "rowdot") and (y is None or y.shape == dy.shape)
        plans.append(plan)
        dx, dg, dbeta, dw, db = fallback.prenorm_backward(dy, x2, g, beta, weight, eps, 0.0,
                                                          is_ln, has_bias)
        return dx, dg, dbeta, dw, db
    monkeypatch.setattr(training, "route", route)
    monkeypatch.setattr(training, "prenorm_backward", prenorm_backward)
    R = torch.randn(2, 5, om.H)
    (stock(x) * R).sum().backward()
    for plan in ("cublas", "fused", "rowdot"):
        monkeypatch.setitem(training.PRENORM_BWD_PLAN, "rmsnorm_linear", plan)
        for p in model.parameters():
            p.grad = None
        plans.clear()
        y = model.train()(x)
        in_bwd[0] = True
        try:
            (y * R).sum().backward()
        finally:
            in_bwd[0] = False
        assert plans == [plan]  # q, k, v: one op over the three (FUSED_TRAIN_SPLIT)
        got = dict(model.named_parameters())
        for n, p in stock.named_parameters():
            assert _rel(got[n].grad, p.grad) < 1e-5, (plan, n)
    _, rep = _optimize(copy.deepcopy(stock), (x,), train="fused")
    assert "backward plan 'rowdot'" in rep.matches[0].train  # (as the loop left it)
    assert "now rmsnorm_linear 'rowdot', layernorm_linear 'cublas'" in str(rep)


# ---------------------------------------------------------------------------------------------
# The report, the switch, the kept original modules
# ---------------------------------------------------------------------------------------------

def test_report_says_how_each_group_trains(monkeypatch):
    """The report's training column per group and the plan's reason under the table; an
    unknown plan is refused in the user's terms."""
    from normfuse.nn import fused
    _, _, rep = _pair("llama")
    by = {m.norm.rsplit(".", 1)[-1]: m for m in rep.matches}
    assert by["input_layernorm"].train == "composed: the norm, then its 3 GEMMs"
    monkeypatch.setattr(fused, "COMPOSED_PACK", True)
    _, _, rep = _pair("llama")
    by = {m.norm.rsplit(".", 1)[-1]: m for m in rep.matches}
    assert by["input_layernorm"].train == ("composed: the norm; one GEMM over the 3 weights "
                                           "compiled, 3 GEMMs eager")
    monkeypatch.setattr(fused, "COMPOSED_PACK", False)
    _, _, rep = _pair("gpt2")  # a single consumer (ln_1 -> c_attn)
    by = {m.norm.rsplit(".", 1)[-1]: m for m in rep.matches}
    assert by["ln_1"].train == "composed: the norm, then its GEMM"
    text = str(rep)
    assert "training plan 'composed'" in text and "training plan: 'composed' (the default" in text
    assert "inference" in text.splitlines()[3] and "training" in text.splitlines()[3]
    _, _, rep = _pair("bert", train="fused")
    assert rep.train_plan == "fused"
    assert all(m.train == "fused: linear_layernorm training op (the original forward while its "
               "dropout is active)" for m in rep.matches)
    _, _, rep = _pair("bert")
    assert all(m.train == "composed: the original forward (GEMM, residual, norm)"
               for m in rep.matches)
    with pytest.raises(ValueError, match="unknown training plan 'unfused'.*'composed', 'fused'"):
        normfuse.optimize(om.tiny_family("gpt2", layers=1), train="unfused")
    with pytest.raises(ValueError, match="unknown training plan"):
        set_train_plan(om.tiny_family("gpt2", layers=1), "eager")


def test_set_train_plan_switches(monkeypatch):
    """set_train_plan on an optimized Gemma2 (pre-norm groups, norms after a GEMM in a child
    module): composed runs no normfuse op in training, fused one per GEMM next to a norm
    (q, k, v, gate, up and the two deferred GEMMs; the final norm is refused: its output is
    the base model's); the gradients equal the stock
    model's either way, and the switch back restores the composed plan."""
    stock, model, _ = _pair("gemma2")
    calls = _count_ops(monkeypatch)
    _step(stock, stock, True)
    g_want = _grads(stock)
    for plan, n_ops in (("fused", 4), ("composed", 0)):  # fused: q/k/v, gate/up, 2 deferred
        set_train_plan(model, plan)
        calls.clear()
        _step(model, model, True)
        assert len(calls) == n_ops, (plan, calls)
        g = _grads(model)
        assert all(_rel(g[n], g_want[n]) < 1e-5 for n in g_want), plan


@pytest.mark.parametrize("family", ["llama", "gemma2"])
def test_fused_plan_runs_one_op_per_group(family, monkeypatch):
    """train="fused" in eager: a group of sibling GEMMs (q/k/v, gate/up) runs one fused training
    op over their weights, split by columns for the consumers (FUSED_TRAIN_SPLIT); with the
    switch off, one op per consumer. Both give the stock model's output and gradients, and
    agree with each other; a consumer the model does not call leaves its part's gradient zero
    (the split's backward)."""
    from normfuse.nn import fused
    stock, model, rep = _pair(family, train="fused")
    calls = _count_ops(monkeypatch)
    want = _step(stock, stock, True)
    g_want = _grads(stock)
    per_layer = {"llama": 2, "gemma2": 4}[family]  # (gemma2: and its two deferred GEMMs)
    got = {}
    for split in (True, False):
        monkeypatch.setattr(fused, "FUSED_TRAIN_SPLIT", split)
        calls.clear()
        out = _step(model, model, True)
        n_consumers = {"llama": 5, "gemma2": 7}[family]
        assert len(calls) == (per_layer if split else n_consumers), (split, calls)
        assert _rel(out, want) < 1e-5
        g = _grads(model)
        assert all(_rel(g[n], g_want[n]) < 1e-5 for n in g_want), split
        got[split] = g
    assert all(_rel(got[True][n], got[False][n]) < 1e-5 for n in got[False])
    by = {m.norm.rsplit(".", 1)[-1]: m for m in rep.matches}
    assert by["input_layernorm"].train.startswith(
        "fused: one rmsnorm_linear training op over its 3 weights eager")
    # only q called: the gradient flows through q's part (k's and v's gradients: zeros in the
    # split's backward), as q's own op gives it; the next norm call drops the left-over parts
    norm = next(m for m in model.modules() if isinstance(m, FusedNorm) and len(m.consumers) == 3)
    q = norm.consumers[0]
    x0 = torch.randn(3, q.weight.shape[1], generator=torch.Generator().manual_seed(3))
    model.train()
    grads = {}
    for split in (True, False):
        monkeypatch.setattr(fused, "FUSED_TRAIN_SPLIT", split)
        x = x0.clone().requires_grad_(True)
        h = norm(x)
        assert h is x and (norm._pending is not None) == split
        q(h).float().square().sum().backward()
        grads[split] = x.grad
    assert _rel(grads[True], grads[False]) < 1e-5
    monkeypatch.setattr(fused, "FUSED_TRAIN_SPLIT", True)
    x1 = x0.clone().requires_grad_(True)
    norm(x1)
    assert norm._pending is not None and norm._pending[0] is x1


def test_original_modules_follow_the_parameters():
    """The composed plan's original norms read the fused modules' parameters: after
    load_state_dict(assign=True) (new Parameter objects), after deepcopy and after pickling the
    training gradients land on the model's own parameters and equal a stock model's with the
    same values; train()/eval() reach the original modules; state_dict keys stay the stock
    ones."""
    import io
    stock, model, _ = _pair("qwen2")
    assert list(model.state_dict()) == list(stock.state_dict())
    other = om.no_dropout(om.tiny_family("qwen2", seed=3, layers=1))
    model.load_state_dict(copy.deepcopy(other.state_dict()), assign=True)
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    _step(other, other, True)
    g_want = _grads(other)
    for m in (model, copy.deepcopy(model), loaded):
        fn = m.model.layers[0].input_layernorm
        assert fn._original.weight is fn.weight
        _step(m, m, True)
        g = _grads(m)
        assert set(g) == set(g_want)
        assert all(_rel(g[n], g_want[n]) < 1e-6 for n in g)
        m.eval()
        assert not fn._original.training
        m.train()
        assert fn._original.training
