"""normfuse.optimize on the CPU (the ops' reference path): tiny transformers models of each
family and hand-written blocks, fp32. Outputs against the stock model, the norms fused and
refused (the report), state_dict, deepcopy, .to(dtype), training gradients, torch.compile,
DDP and FSDP2 with 2 gloo processes."""
from __future__ import annotations

import copy
import io
import logging
import os
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import normfuse
from normfuse.nn.fused import DeferredLinear, FusedLinear, FusedNorm, NormAfterLinear
from normfuse.ops.common import adjacent as _adjacent

sys.path.insert(0, str(Path(__file__).parent))
import optimize_models as om  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

IDS = torch.randint(0, om.VOCAB, (2, 12), generator=torch.Generator().manual_seed(7))


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).norm() / b.norm()).item()


def _optimize(model, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return normfuse.optimize(model, *args, report=True, **kw)


# ---------------------------------------------------------------------------------------------
# transformers families
# ---------------------------------------------------------------------------------------------

# family: {norm path suffix: (side, GEMMs)} for layer 0 and the model-level norms, and the
# refused norms (path: words in the reason).
FAMILIES = {
    "llama": ({"model.layers.0.input_layernorm": ("pre", ["q_proj", "k_proj", "v_proj"]),
               "model.layers.0.post_attention_layernorm": ("pre", ["gate_proj", "up_proj"])},
              {"model.norm": ["returned by 'model'", "output_hidden_states"]}),
    "qwen2": ({"model.layers.1.input_layernorm": ("pre", ["q_proj", "k_proj", "v_proj"]),
               "model.layers.1.post_attention_layernorm": ("pre", ["gate_proj", "up_proj"])},
              {"model.norm": ["returned by 'model'"]}),
    "gemma": ({"model.layers.0.input_layernorm": ("pre", ["q_proj", "k_proj", "v_proj"])},
              {"model.norm": ["returned by 'model'"]}),
    "gemma2": ({"model.layers.0.input_layernorm": ("pre", ["q_proj", "k_proj", "v_proj"]),
                "model.layers.0.post_attention_layernorm": ("post", ["o_proj"]),
                "model.layers.1.post_feedforward_layernorm": ("post", ["down_proj"])},
               {"model.norm": ["returned by 'model'"]}),
    # per-head q_norm / k_norm over q_proj(h).view(..., heads, head_dim): refused, saying so
    "qwen3": ({"model.layers.0.input_layernorm": ("pre", ["q_proj", "k_proj", "v_proj"]),
               "model.layers.1.post_attention_layernorm": ("pre", ["gate_proj", "up_proj"])},
              {"model.norm": ["returned by 'model'"],
               **{f"model.layers.{i}.self_attn.{n}_norm": [f"{n}_proj's output viewed as [..., ",
                                                          "per head", "not fused yet"]
                  for i in (0, 1) for n in ("q", "k")}}),
    # q_norm(q_proj(h)) inside a forward that takes **kwargs: the GEMM hands on its input
    "olmo2": ({"model.layers.0.self_attn.q_norm": ("post", ["q_proj"]),
               "model.layers.0.self_attn.k_norm": ("post", ["k_proj"]),
               "model.layers.0.post_attention_layernorm": ("post", ["o_proj"]),
               "model.layers.1.post_feedforward_layernorm": ("post", ["down_proj"])},
              {"model.norm": ["returned by 'model'"]}),
    "gpt2": ({"transformer.h.0.ln_1": ("pre", ["c_attn"]), "transformer.h.0.ln_2": ("pre", ["c_fc"])},
             {"transformer.ln_f": ["returned by 'transformer'"]}),
    "bert": ({"encoder.layer.0.attention.output.LayerNorm": ("post", ["dense"]),
              "encoder.layer.1.output.LayerNorm": ("post", ["dense"])},
             {"embeddings.LayerNorm": ["also used by", "not produced by a GEMM"]}),
}
# (a *ForCausalLM's final norm is returned by the base model: refused, the standalone norm op
# runs it; fused into lm_head it would hand the base model's callers the norm's input)
N_FUSED = {"llama": 4, "qwen2": 4, "gemma": 4, "gemma2": 8, "qwen3": 4, "olmo2": 8, "gpt2": 4,
           "bert": 4}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family(family):
    """Outputs equal to the stock model's, the right norms fused, state_dict keys and values
    kept, load_state_dict, deepcopy and pickling (torch.save of the whole model) work."""
    stock = om.tiny_family(family)
    model = copy.deepcopy(stock)
    keys = list(model.state_dict())
    model, rep = _optimize(model)
    fused, refused = FAMILIES[family]
    by_norm = {m.norm: m for m in rep.matches}
    assert len(rep.matches) == N_FUSED[family], str(rep)
    for norm, (side, gemms) in fused.items():
        m = by_norm[norm]
        assert m.side == side and [g.rsplit(".", 1)[-1] for g in m.gemms] == gemms, str(rep)
    assert {r.module for r in rep.refusals} == set(refused), str(rep)
    for r in rep.refusals:
        assert all(w in r.reason for w in refused[r.module]), r.reason
    assert rep.checked and rep.max_error < 1e-5
    if family == "gemma":
        assert by_norm["model.layers.0.input_layernorm"].spec.offset == 1.0
    if family == "olmo2":  # the attention's forward is not rewritten, and the report says why
        attn = model.model.layers[0].self_attn
        assert isinstance(attn.q_proj, DeferredLinear) and isinstance(attn.q_norm, NormAfterLinear)
        assert "takes **kwargs" in by_norm["model.layers.0.self_attn.k_norm"].notes
    if family in ("llama", "qwen2", "gemma", "gemma2"):
        fn = model.model.layers[0].input_layernorm
        assert isinstance(fn, FusedNorm) and fn.packed
        assert isinstance(model.model.layers[0].self_attn.k_proj, FusedLinear)
        assert _adjacent([c.gemm_weight() for c in fn.consumers])
    with torch.no_grad():
        want = om.logits(stock(input_ids=IDS))
        got = om.logits(model(input_ids=IDS))
        assert _rel(got, want) < 1e-5
        # state_dict: the same keys, and a round trip of other values
        assert list(model.state_dict()) == keys
        other = om.tiny_family(family, seed=3)
        model.load_state_dict(other.state_dict())
        assert _rel(om.logits(model(input_ids=IDS)), om.logits(other(input_ids=IDS))) < 1e-5
        twin = copy.deepcopy(model)
        assert _rel(om.logits(twin(input_ids=IDS)), om.logits(other(input_ids=IDS))) < 1e-5
        buf = io.BytesIO()
        torch.save(model, buf)
        buf.seek(0)
        loaded = torch.load(buf, weights_only=False)
        assert _rel(om.logits(loaded(input_ids=IDS)), om.logits(other(input_ids=IDS))) < 1e-5
    assert "fused:" in str(rep)


@pytest.mark.parametrize("train", ["composed", "fused"])
@pytest.mark.parametrize("family", ["llama", "gemma2", "olmo2", "gpt2", "bert"])
def test_family_training_gradients(family, train):
    """Training mode (dropout off), fp32: the gradients of every parameter equal the stock
    model's, in both training plans (composed: the original norms and plain GEMMs; fused: the
    per-consumer fused ops, BERT's post-norm through the fused post-norm op)."""
    stock = om.tiny_family(family)
    model, _ = _optimize(copy.deepcopy(stock), train=train)
    for m in (stock, model):
        om.no_dropout(m).train()
    width = om.VOCAB if family != "bert" else om.H
    R = torch.randn(2, 12, width, generator=torch.Generator().manual_seed(1))
    for m in (stock, model):
        (om.logits(m(input_ids=IDS)) * R).sum().backward()
    got = dict(model.named_parameters())
    scale = max(p.grad.norm().item() for p in stock.parameters() if p.grad is not None)
    for name, p in stock.named_parameters():
        if p.grad is None:
            assert got[name].grad is None, name
            continue
        err = (got[name].grad - p.grad).norm().item()
        assert err <= 1e-5 * scale + 1e-4 * p.grad.norm().item(), name


@pytest.mark.parametrize("fused", [True, False])
def test_training_forms(fused, monkeypatch):
    """Both training plans, switched after optimize (set_train_plan; set_fused_training, the
    former switch, for "fused"): the fused ops (one per sibling group), or composed (the original norms and
    plain GEMMs, no normfuse op) give the stock model's gradients; inference stays fused."""
    import normfuse.ops as ops
    from normfuse.nn.optimize import set_fused_training, set_train_plan
    stock = om.randomize(om.Mixed())
    model, _ = _optimize(copy.deepcopy(stock), (torch.randn(2, 5, om.H),),
                         train="composed" if fused else "fused")
    if fused:
        set_fused_training(model, True)
    else:
        set_train_plan(model, "composed")
    calls = []
    for name in ("rmsnorm_linear", "layernorm_linear", "linear_rmsnorm", "linear_layernorm"):
        real = getattr(ops, name)
        monkeypatch.setattr(ops, name, lambda *a, _r=real, **k: (calls.append(1), _r(*a, **k))[1])
    x = torch.randn(2, 5, om.H)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    R = torch.randn(2, 3, 32)
    for m, xi in zip((stock, model), xs):
        (m.train()(xi) * R).sum().backward()
    assert len(calls) == (4 if fused else 0)  # q, k, v as one op; the post-norm; the sandwich; the head
    assert _rel(xs[1].grad, xs[0].grad) < 1e-5
    got = dict(model.named_parameters())
    for n, p in stock.named_parameters():
        assert _rel(got[n].grad, p.grad) < 1e-5, n
    with torch.no_grad():
        assert _rel(model.eval()(x), stock.eval()(x)) < 1e-5


def test_to_dtype_repacks():
    """.to(bfloat16) converts the fused modules; the sibling weights are packed again (one
    buffer), and the model still computes the stock model's function in bf16."""
    stock = om.tiny_family("llama")
    model, _ = _optimize(copy.deepcopy(stock))
    model.to(torch.bfloat16)
    fn = model.model.layers[1].post_attention_layernorm
    ws = [c.gemm_weight() for c in fn.consumers]
    assert all(w.dtype == torch.bfloat16 for w in ws) and _adjacent(ws)
    with torch.no_grad():
        got = om.logits(model(input_ids=IDS)).float()
        want = om.logits(stock.to(torch.bfloat16)(input_ids=IDS)).float()
    assert _rel(got, want) < 3e-2


def test_fused_weights_are_known_by_address():
    """A compiled graph hands the ops a parameter it reinterpreted (a Conv1D's weight.t(): a new
    tensor without `_base` every call): the fused modules register their parameters, so the ops
    find the owner of such an alias (ops.common.alias_owner), after optimize, after .to(dtype)
    (new storage) and for packed siblings (each a column block of one buffer)."""
    from torch._C._dynamo.guards import _reinterpret_tensor
    from normfuse.nn.fused import FusedLinear
    from normfuse.ops.common import alias_owner

    def owners(model):
        out = []
        for m in model.modules():
            if isinstance(m, FusedLinear) and m.transposed:
                w = m.weight
                # (the offset is relative to w's own storage offset, as in Inductor's code)
                a = _reinterpret_tensor(w, (w.shape[1], w.shape[0]), (w.stride(1), w.stride(0)), 0)
                out.append(alias_owner(a) is w)
        return out

    model, _ = _optimize(om.tiny_family("gpt2"))
    assert owners(model) and all(owners(model))
    model.to(torch.float64)  # new storage for every parameter
    assert all(owners(model))
    pair, _ = _optimize(om.randomize(om.Conv1DPair()).eval(), (torch.randn(2, 5, om.H),))
    assert pair.ln.packed and owners(pair) == [True, True]


# ---------------------------------------------------------------------------------------------
# Hand-written blocks
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", list(om.SPELLINGS))
def test_spelling(spelling):
    """Each spelling is recognized (kind, eps, parameter names, offset), its three QKV
    consumers run as one GEMM, the head reads a row view of the final norm; outputs equal."""
    make, kind, eps, weight, offset, bias = om.SPELLINGS[spelling]
    stock = om.randomize(om.Stack(make)).eval()
    x = torch.randn(2, 5, om.H, generator=torch.Generator().manual_seed(2))
    model, rep = _optimize(copy.deepcopy(stock), (x,))
    assert not rep.refusals, str(rep)
    assert [m.norm for m in rep.matches] == ["blocks.0.norm", "blocks.1.norm", "final"]
    for m in rep.matches:
        s = m.spec
        assert (s.kind, s.weight, s.offset, s.bias) == (kind, weight, offset, bias)
        assert s.eps == pytest.approx(eps, rel=1e-6)
    assert rep.matches[0].gemms == ["blocks.0.q", "blocks.0.k", "blocks.0.v"]
    assert model.blocks[0].norm.packed and not model.final.packed
    assert rep.matches[2].gemms == ["head"]
    with torch.no_grad():
        x2 = torch.randn(3, 7, om.H)
        assert _rel(model(x2), stock(x2)) < 1e-5
    assert list(model.state_dict()) == list(stock.state_dict())


def test_spelling_training():
    """Training through the per-consumer form: gradients of x and of every parameter."""
    stock = om.randomize(om.Stack(om.GemmaStyle))
    model, _ = _optimize(copy.deepcopy(stock), (torch.randn(1, 4, om.H),))
    x = torch.randn(2, 5, om.H)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    R = torch.randn(2, 3, 32)
    for m, xi in zip((stock, model), xs):
        (m(xi) * R).sum().backward()
    assert _rel(xs[1].grad, xs[0].grad) < 1e-5
    got = dict(model.named_parameters())
    for n, p in stock.named_parameters():
        assert _rel(got[n].grad, p.grad) < 1e-5, n


def test_conv1d_siblings_packed():
    """Two Conv1D ([in, out] weights) reading one norm: one GEMM over their transposed views,
    packed as column blocks of one [K, sum N] buffer; training gradients equal."""
    stock = om.randomize(om.Conv1DPair()).eval()
    x = torch.randn(2, 5, om.H)
    model, rep = _optimize(copy.deepcopy(stock), (x,))
    assert [(m.norm, m.gemms) for m in rep.matches] == [("ln", ["a", "b"])]
    assert model.ln.packed and _adjacent([c.gemm_weight() for c in model.ln.consumers])
    assert model.a.weight.shape == (om.H, 2 * om.H)
    with torch.no_grad():
        assert _rel(model(x), stock(x)) < 1e-5
    xs = [x.clone().requires_grad_() for _ in range(2)]
    for m, xi in zip((stock, model), xs):
        (m(xi) * torch.linspace(-1, 1, 3 * om.H)).sum().backward()
    got = dict(model.named_parameters())
    for n, p in stock.named_parameters():
        assert _rel(got[n].grad, p.grad) < 1e-5, n


def test_linear_subclasses():
    """An nn.Linear subclass with its own forward is a consumer when that forward computes
    F.linear (checked with random parameters), else the norm is refused naming it."""
    stock = om.randomize(om.SubclassConsumers()).eval()
    x = torch.randn(2, 3, om.H)
    model, rep = _optimize(copy.deepcopy(stock), (x,))
    assert [(m.norm, m.gemms) for m in rep.matches] == [("n1", ["a"])], str(rep)
    why = rep.refusals[0].reason
    assert [r.module for r in rep.refusals] == ["n2"] and "ScaledLinear 'b'" in why
    assert "already takes the pre-norm n1" in why  # a after n1 and before n2: one of them
    with torch.no_grad():
        assert _rel(model(x), stock(x)) < 1e-5


def test_optimize_under_inference_mode_then_train():
    """optimize called under torch.inference_mode: the packed weight buffer is a normal tensor,
    so the model trains afterwards."""
    model = om.randomize(om.Stack(om.FRMS))
    with torch.inference_mode():
        model, rep = _optimize(model, (torch.randn(2, 4, om.H),))
    assert model.blocks[0].norm.packed
    assert not any(p.is_inference() for p in model.parameters())
    x = torch.randn(2, 4, om.H, requires_grad=True)
    model.train()(x).sum().backward()
    assert x.grad is not None


def test_packed_consumer_reads_width():
    """A packed group's consumer tells the packed output from the norm's input by its width:
    the norm run with grad (fused training plan: returns x), the consumer under no_grad still
    normalizes. (Composed plan: the norm run with grad is the original norm.)"""
    stock = om.randomize(om.QKVBlock(om.FRMS()))
    x = torch.randn(2, 3, om.H)
    model, _ = _optimize(copy.deepcopy(stock), (x,))
    assert _rel(model.norm(x), stock.norm(x)) == 0
    model, _ = _optimize(copy.deepcopy(stock), (x,), train="fused")
    assert model.norm.packed
    h = model.norm(x)
    assert h is x
    with torch.no_grad():
        assert _rel(model.k(h), stock.k(stock.norm(x))) < 1e-5
        assert _rel(model.k(model.norm(x)), stock.k(stock.norm(x))) < 1e-5


def _same_modules(a: nn.Module, ids: list[int]) -> bool:
    return [id(m) for m in a.modules()] == ids


@pytest.mark.parametrize("block, words", [
    (om.EpsOutsideBlock, ["outside the square root"]),
    (om.ResidualUse, ["also used by", "Tensor.add"]),
    (om.SharedLinear, ["also reads inputs"]),
    (om.PerHeadNorm, ["q's output viewed as [..., 4, 16]", "per head", "64 output features"]),
    (om.RowViewNorm, ["a view of q's output (shape [6, 64])", "not the output itself"]),
])
def test_refused_unchanged(block, words):
    """A refused norm leaves the model as it was (same module objects, same output)."""
    model = om.randomize(block()).eval()
    ids = [id(m) for m in model.modules()]
    x = torch.randn(2, 3, om.H)
    with torch.no_grad():
        want = model(x)
    out, rep = _optimize(model, (x,))
    assert out is model and _same_modules(model, ids) and "forward" not in model.__dict__
    assert not rep.matches and len(rep.refusals) == 1, str(rep)
    assert all(w in rep.refusals[0].reason for w in words), rep.refusals[0].reason
    with torch.no_grad():
        assert torch.equal(model(x), want)


def test_hooks_and_instance_forward_refused():
    """A norm or GEMM carrying module hooks or an instance-level forward (accelerate) is left
    alone: a rewrite would drop them."""
    model = om.randomize(om.QKVBlock(om.FRMS())).eval()
    seen = []
    model.k.register_forward_hook(lambda m, a, out: seen.append(out.shape))
    _, rep = _optimize(model, (torch.randn(1, 3, om.H),))
    assert not rep.matches and "module hooks" in rep.refusals[0].reason
    block = om.randomize(om.PostNorm()).eval()
    block.dense.forward = block.dense.forward
    _, rep = _optimize(block, (torch.randn(1, 3, 2 * om.H), torch.randn(1, 3, om.H)))
    assert not rep.matches and "replaced on the instance" in rep.refusals[0].reason


def test_no_norm_unchanged(caplog):
    model = om.NoNorm()
    ids = [id(m) for m in model.modules()]
    with caplog.at_level(logging.INFO, logger="normfuse.optimize"):
        out, rep = _optimize(model, (torch.randn(2, om.H),))
    assert out is model and _same_modules(model, ids)
    assert not rep.matches and not rep.refusals
    assert "0 norms fused" in caplog.text


@pytest.mark.parametrize("rms", [False, True])
def test_post_norm_block(rms):
    """norm(dropout(linear(h)) + residual) and norm(residual + (linear(h) + bias)): both fused
    post-norm; eval equal; training with dropout p > 0 runs the original forward (same RNG,
    same output), with p = 0 the fused one (gradients equal)."""
    stock = om.randomize(om.PostNormStack(rms))
    x = torch.randn(2, 5, om.H)
    model, rep = _optimize(copy.deepcopy(stock).eval(), (x,))
    assert [(m.norm, m.side, m.gemms) for m in rep.matches] == [
        ("out.norm", "post", ["out.dense"]), ("out2.norm", "post", ["out2.dense"])], str(rep)
    assert rep.matches[0].spec.kind == ("rms" if rms else "ln")
    assert list(model.state_dict()) == list(stock.state_dict())
    stock.eval()
    with torch.no_grad():
        assert _rel(model(x), stock(x)) < 1e-5
    stock.train()
    model.train()
    torch.manual_seed(5)
    a = stock(x)
    torch.manual_seed(5)
    b = model(x)
    assert _rel(b, a) < 1e-5  # out's dropout active: its original forward, same random mask
    for m in (stock, model):
        m.out.dropout.p = 0.0
    xs = [x.clone().requires_grad_() for _ in range(2)]
    R = torch.randn_like(x)
    for m, xi in zip((stock, model), xs):
        (m(xi) * R).sum().backward()
    assert _rel(xs[1].grad, xs[0].grad) < 1e-5
    got = dict(model.named_parameters())
    for n, p in stock.named_parameters():
        assert _rel(got[n].grad, p.grad) < 1e-5, n
    twin = copy.deepcopy(model).eval()
    with torch.no_grad():
        assert _rel(twin(x), stock.eval()(x)) < 1e-5


def test_check_reverts(monkeypatch):
    """A fused op that computes something else: check=True reverts every group and says why."""
    import normfuse.ops as ops
    real = ops.rmsnorm_linear
    monkeypatch.setattr(ops, "rmsnorm_linear", lambda *a, **k: real(*a, **k) * 1.1)
    model = om.randomize(om.Stack(om.FRMS)).eval()
    ids = [id(m) for m in model.modules()]
    out, rep = _optimize(model, (torch.randn(2, 4, om.H),))
    assert not rep.matches and len(rep.refusals) == 3
    assert all("reverted by the check" in r.reason and "output changed" in r.reason
               for r in rep.refusals), str(rep)
    assert _same_modules(model, ids)


@pytest.mark.parametrize("family,refused", [("bert", {"embeddings.LayerNorm"}),
                                            ("gemma2", {"model.norm"})])
def test_optimize_twice_is_idempotent(family, refused):
    """A second optimize finds nothing left to fuse, changes nothing, and does not report its
    own modules (Gemma2's norms after o_proj / down_proj, now NormAfterLinear) as refusals."""
    model, _ = _optimize(om.tiny_family(family))
    ids = [id(m) for m in model.modules()]
    again, rep = _optimize(model)
    assert again is model and _same_modules(model, ids)
    assert not rep.matches and {r.module for r in rep.refusals} == refused, str(rep)


def test_check_falls_back_to_per_consumer(monkeypatch):
    """When only the one-GEMM form fails the check, the group stays fused per consumer and the
    plan says why."""
    import normfuse.ops as ops
    real = ops.rmsnorm_linear

    def wrong_when_packed(x, g, w, *a, **k):
        return real(x, g, w, *a, **k) * (1.1 if isinstance(w, (list, tuple)) else 1.0)
    monkeypatch.setattr(ops, "rmsnorm_linear", wrong_when_packed)
    stock = om.randomize(om.Stack(om.FRMS)).eval()
    x = torch.randn(2, 4, om.H)
    model, rep = _optimize(copy.deepcopy(stock), (x,))
    assert [m.norm for m in rep.matches] == ["blocks.0.norm", "blocks.1.norm", "final"]
    assert not rep.refusals and not model.blocks[0].norm.packed
    assert "one GEMM failed the check" in rep.matches[0].plan
    with torch.no_grad():
        assert _rel(model(x), stock(x)) < 1e-5


def test_include_exclude_and_inputs():
    model = om.randomize(om.Stack(om.FRMS)).eval()
    _, rep = _optimize(copy.deepcopy(model), (torch.randn(1, 4, om.H),), exclude="blocks.*")
    assert [m.norm for m in rep.matches] == ["final"]
    assert {r.module for r in rep.refusals} == {"blocks.0.norm", "blocks.1.norm"}
    _, rep = _optimize(copy.deepcopy(model), (torch.randn(1, 4, om.H),), include=["blocks.1.*"])
    assert [m.norm for m in rep.matches] == ["blocks.1.norm"]
    with pytest.raises(TypeError, match="example_inputs is required"):
        normfuse.optimize(model)
    x = torch.randn(1, 4, om.H)
    out, rep = _optimize(copy.deepcopy(model), (x,), check=False)
    assert len(rep.matches) == 3 and not rep.checked and rep.max_error is None
    with torch.no_grad():
        assert _rel(out(x), model(x)) < 1e-5
    with pytest.raises(RuntimeError, match="forward on the example inputs raised"):
        normfuse.optimize(model, (torch.randn(1, 4, om.H + 1),))


def test_optimize_modules_import_downward():
    """normfuse.nn's optimize modules, bottom up: recognize, fused, probe, postnorm_rewrite,
    optimize; each imports only those below it (and normfuse.ops), never normfuse.repro;
    `import normfuse` does not import them (normfuse.optimize is a lazy attribute)."""
    import ast
    order = ["recognize", "fused", "probe", "postnorm_rewrite", "optimize"]
    root = Path(normfuse.__file__).parent / "nn"
    for i, name in enumerate(order):
        for node in ast.walk(ast.parse((root / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                for t in ([node.module] if node.module else [a.name for a in node.names]):
                    t = t.split(".")[0]
                    assert t not in order or order.index(t) < i, (name, t)
            if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
                assert node.module.split(".")[0] != "repro", (name, node.module)
    import subprocess
    code = ("import sys, normfuse; assert 'normfuse.nn' not in sys.modules; "
            "assert callable(normfuse.optimize); assert 'normfuse.nn.optimize' in sys.modules")
    root_dir = Path(normfuse.__file__).parents[1]
    subprocess.run([sys.executable, "-c", code], check=True,
                   env=dict(os.environ, PYTHONPATH=str(root_dir)))


def test_recognize_refusals():
    """Spellings the kernels do not compute, with the reason in the user's terms."""
    from normfuse.nn.recognize import NotANorm, Unsupported, recognize

    class Unbiased(nn.Module):
        def forward(self, x):
            v, m = torch.var_mean(x, -1, keepdim=True)
            return (x - m) * torch.rsqrt(v + 1e-5)

    class TwoDims(nn.LayerNorm):
        pass

    with pytest.raises(Unsupported, match="outside the square root"):
        recognize(om.EpsOutside(), (2, om.H))
    with pytest.raises(Unsupported, match="unbiased"):
        recognize(Unbiased(), (2, om.H))
    with pytest.raises(Unsupported, match="last 2 dimensions"):
        recognize(TwoDims((4, 16)), (2, 4, 16))
    with pytest.raises(NotANorm):
        recognize(nn.GELU(), (2, om.H))
    # eps read in the dtype the model runs in: nn.RMSNorm(eps=None) in bf16
    s = recognize(nn.RMSNorm(om.H).to(torch.bfloat16), (2, om.H), torch.bfloat16)
    assert s.kind == "rms" and s.upcast
    # LlamaRMSNorm in bf16: the fp32 upcast, the cast back before the weight
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    s = recognize(LlamaRMSNorm(om.H, eps=1e-5).to(torch.bfloat16), (1, 8, om.H), torch.bfloat16)
    assert (s.kind, s.eps, s.weight, s.offset, s.upcast) == ("rms", 1e-5, "weight", 0.0, True)


# ---------------------------------------------------------------------------------------------
# torch.compile
# ---------------------------------------------------------------------------------------------

def test_compile_fullgraph_no_recompiles():
    """torch.compile(fullgraph=True) over a model optimized with the fused training plan, with
    a packed q/k/v group, a post-norm block, a norm after a GEMM in a child module and a final
    norm read through a row view (a graph break raises), eval and
    train mode (with backward): one graph per mode holding the normfuse ops (inference ops in
    eval, the training ops in train); after one warm-up call per mode, alternating modes with
    new inputs of the same shape recompile nothing. (The composed plan: test_optimize_train.py;
    the GPU test does this for each family.)"""
    import torch._dynamo as dynamo
    stock = om.randomize(om.Mixed())
    model, rep = _optimize(copy.deepcopy(stock), (torch.randn(2, 5, om.H),), train="fused")
    assert [m.side for m in rep.matches] == ["pre", "post", "post", "pre"]
    graphs = []

    def record(gm, example):  # the eager backend, keeping each graph dynamo hands over
        graphs.append(gm)
        return gm.forward
    compiled = torch.compile(model, backend=record, fullgraph=True)

    def step(train: bool, x: torch.Tensor) -> None:
        model.train(train)
        with torch.set_grad_enabled(train):
            out = compiled(x)
            if train:
                out.pow(2).mean().backward()
        return out
    dynamo.reset()
    try:
        x = torch.randn(2, 5, om.H)
        with torch.no_grad():
            assert _rel(step(False, x), stock.eval()(x)) < 1e-5
        step(True, x)
        ops = [sorted({str(n.target) for n in g.graph.nodes if "normfuse" in str(n.target)})
               for g in graphs]
        assert ops == [["normfuse.postnorm_linear.default", "normfuse.prenorm_linear.default"],
                       ["normfuse.postnorm_linear_fwd.default",
                        "normfuse.prenorm_linear_fwd.default"]], ops
        with dynamo.config.patch(error_on_recompile=True):
            for train in (False, True, False):
                step(train, torch.randn(2, 5, om.H))
    finally:
        dynamo.reset()


# ---------------------------------------------------------------------------------------------
# torch.distributed: DDP and FSDP2 over an optimized model, 2 gloo processes
# ---------------------------------------------------------------------------------------------

def test_distributed_training(tmp_path):
    """A few SGD steps of an optimized model (a pre-norm block with q/k/v as one group, a
    post-norm block, a norm after a GEMM in a child module, a final norm and head) under DDP, then under fully_shard (FSDP2, each block
    and the root sharded) on 2 CPU processes (gloo): the parameters equal those of the same
    steps on the stock model in one process."""
    import optimize_dist
    optimize_dist.run(str(tmp_path))
    want, start = optimize_dist.reference()
    for wrap in ("ddp", "fsdp2"):
        got = torch.load(tmp_path / f"{wrap}.pt")
        assert set(got) == set(want)
        for n, p in want.items():
            moved = (p - start[n]).norm()
            assert moved > 0 and (got[n] - p).norm() <= 1e-4 * moved + 1e-6, (wrap, n)


# ---------------------------------------------------------------------------------------------
# GPU (Hopper): the fused kernels, bf16
# ---------------------------------------------------------------------------------------------

def _grads(m: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.float().flatten() for _, p in sorted(m.named_parameters())
                      if p.grad is not None])


@pytest.mark.gpu
@pytest.mark.parametrize("train", ["composed", "fused"])
@pytest.mark.parametrize("family", ["llama", "gemma2", "olmo2", "gpt2", "bert"])
def test_gpu_family(family, train):
    """bf16 on the H200 (hidden 256, 2 layers, 2 x 64 tokens), each training plan: optimize
    fuses the same norms and the fused kernels run (a FallbackWarning is an error); the output's
    error against the fp32 stock model is within twice the bf16 stock model's (+0.5 %), the
    gradients' within twice (+1 %); dynamo.explain finds no graph break in eval and in train
    mode."""
    import torch._dynamo as dynamo
    from normfuse.ops import FallbackWarning
    from normfuse.ops.common import fused_unavailable
    assert fused_unavailable(torch.device("cuda")) is None  # the fused kernels, not the fallback
    ref = om.tiny_family(family, hidden=256).cuda()
    stock = copy.deepcopy(ref).to(torch.bfloat16)
    ids = torch.randint(0, om.VOCAB, (2, 64), generator=torch.Generator().manual_seed(0)).cuda()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        model, rep = normfuse.optimize(copy.deepcopy(stock), report=True, train=train)
        assert len(rep.matches) == N_FUSED[family], str(rep)
        with torch.no_grad():
            want = om.logits(ref(input_ids=ids)).float()
            base = _rel(om.logits(stock(input_ids=ids)), want)
            err = _rel(om.logits(model(input_ids=ids)), want)
        assert err <= 2 * base + 5e-3, (err, base)
        R = torch.randn(2, 64, om.VOCAB if family != "bert" else 256, device="cuda")
        for m in (ref, stock, model):
            om.no_dropout(m).train()
            (om.logits(m(input_ids=ids)).float() * R).sum().backward()
        g_ref = _grads(ref)
        g_base, g_err = _rel(_grads(stock), g_ref), _rel(_grads(model), g_ref)
        assert g_err <= 2 * g_base + 1e-2, (g_err, g_base)
        for train in (False, True):
            model.train(train)
            dynamo.reset()
            with torch.set_grad_enabled(train):
                ex = dynamo.explain(model)(input_ids=ids)
            assert ex.graph_break_count == 0, [b.reason for b in ex.break_reasons]
    dynamo.reset()


@pytest.mark.gpu
@pytest.mark.parametrize("train", ["composed", "fused"])
def test_gpu_compile_no_recompiles(train):
    """torch.compile(fullgraph=True, backend aot_eager: dynamo and AOTAutograd over the ops'
    fake implementations, no Inductor codegen) over an optimized bf16 Llama on the H200, each
    training plan: after one warm-up call per mode, alternating eval/train calls with new token
    ids recompile nothing."""
    import torch._dynamo as dynamo
    model, rep = normfuse.optimize(om.tiny_family("llama", hidden=256).to("cuda", torch.bfloat16),
                                   report=True, train=train)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)

    def step(train: bool) -> None:
        ids = torch.randint(0, om.VOCAB, (2, 64), device="cuda")
        model.train(train)
        with torch.set_grad_enabled(train):
            out = om.logits(compiled(input_ids=ids))
            if train:
                out.float().pow(2).mean().backward()
    dynamo.reset()
    try:
        step(False)
        step(True)
        with dynamo.config.patch(error_on_recompile=True):
            for train in (False, True, False):
                step(train)
    finally:
        dynamo.reset()


def test_siblings_unpacked_where_an_output_is_made_contiguous():
    """A consumer's output made contiguous downstream (Liger's RoPE transposes q back and calls
    .contiguous()): as a column slice of one GEMM it would be copied, so the siblings run one
    fused GEMM each with the split form off (optimize(split_siblings=False)); the report says
    why. Without that call the group is packed."""
    stock = om.randomize(om.ContiguousQKV(om.FRMS()))
    x = torch.randn(2, 3, om.H)
    model, rep = _optimize(copy.deepcopy(stock), (x,), split_siblings=False)
    assert [(m.norm, m.gemms) for m in rep.matches] == [("norm", ["q", "k", "v"])]
    assert not model.norm.packed and not model.norm.split
    assert "made contiguous" in str(rep) and "'q'" in str(rep), str(rep)
    with torch.no_grad():
        assert _rel(model(x), stock(x)) < 1e-5
    packed, _ = _optimize(om.randomize(om.QKVBlock(om.FRMS())), (x,))
    assert packed.norm.packed


def test_split_siblings_where_an_output_is_made_contiguous(monkeypatch):
    """With the split form on (optimize(split_siblings=True); its default is
    nn.fused.SPLIT_SIBLINGS, NORMFUSE_SPLIT_SIBLINGS): the same group runs as one GEMM whose
    outputs are one contiguous tensor per consumer (ops.rmsnorm_linear_split, once per eager
    inference forward), equal to the stock model's; the report says so and why. Training, an
    input made under inference_mode and torch.compile run each consumer's own op."""
    from normfuse import ops
    from normfuse.nn import fused
    stock = om.randomize(om.ContiguousQKV(om.FRMS()))
    x = torch.randn(2, 3, om.H)
    monkeypatch.setattr(fused, "SPLIT_SIBLINGS", False)
    model, rep = _optimize(copy.deepcopy(stock), (x,), split_siblings=True)
    assert [(m.norm, m.gemms) for m in rep.matches] == [("norm", ["q", "k", "v"])]
    assert model.norm.split and not model.norm.packed
    assert "an output tensor per GEMM" in str(rep) and "made contiguous" in str(rep), str(rep)
    calls = []
    real = ops.rmsnorm_linear_split
    monkeypatch.setattr(ops, "rmsnorm_linear_split",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    with torch.no_grad():
        assert _rel(model(x), stock(x)) < 1e-5
        assert len(calls) == 1 and model.norm._pending is None  # every consumer took its own
        with torch.inference_mode():
            assert _rel(model(x.clone()), stock(x)) < 1e-5
        assert len(calls) == 1
    y = model(x.clone().requires_grad_())
    y.sum().backward()
    assert len(calls) == 1
    with torch.no_grad():
        compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
        assert _rel(compiled(x), stock(x)) < 1e-5
    assert len(calls) == 1
    torch._dynamo.reset()


class _OneConsumer(nn.Module):
    """norm -> one linear, plus the residual."""

    def __init__(self):
        super().__init__()
        self.norm = om.FRMS()
        self.lin = nn.Linear(om.H, om.H)

    def forward(self, x):
        return x + self.lin(self.norm(x))


def test_split_siblings_default_and_after_a_single_consumer_norm(monkeypatch):
    """The split form is optimize's default (nn.fused.SPLIT_SIBLINGS on: measured faster than a
    fused GEMM per sibling on the H200). A norm with one consumer ahead of the sibling group
    does not turn it off for the groups after it (optimize's decision loop once reused the
    option's name for the group's answer)."""
    from normfuse.nn import fused
    assert fused.SPLIT_SIBLINGS, "NORMFUSE_SPLIT_SIBLINGS set in the environment?"
    stock = om.randomize(nn.Sequential(_OneConsumer(), om.ContiguousQKV(om.FRMS())))
    x = torch.randn(2, 3, om.H)
    for kw in ({}, {"split_siblings": True}):
        model, rep = _optimize(copy.deepcopy(stock), (x,), **kw)
        assert [m.norm for m in rep.matches] == ["0.norm", "1.norm"], str(rep)
        assert not model[0].norm.split and model[1].norm.split, str(rep)
        with torch.no_grad():
            assert _rel(model(x), stock(x)) < 1e-5
    monkeypatch.setattr(fused, "SPLIT_SIBLINGS", False)
    model, _ = _optimize(copy.deepcopy(stock), (x,))
    assert not model[1].norm.split


class _Linears(torch.overrides.TorchFunctionMode):
    """The output widths of the F.linear calls made while it is active."""

    def __init__(self):
        super().__init__()
        self.widths = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.nn.functional.linear:
            self.widths.append(args[1].shape[0])
        return func(*args, **(kwargs or {}))


def test_bert_siblings_run_as_one_gemm(monkeypatch):
    """BERT's query / key / value read a norm's output that the residual needs too (the previous
    layer's post-norm, the embeddings' LayerNorm): in inference one GEMM over their packed
    weights, each member's output a column view of it, the model's output the stock model's; in
    eager training one GEMM over their concatenated weights with the stock gradients; for
    another input, or after an in-place change of the input between the members, each member
    runs its own GEMM; torch.compile traces the members' own GEMMs."""
    from normfuse.nn.fused import SiblingGEMMs, SiblingLinear
    H = om.H
    stock = om.tiny_family("bert")
    model, rep = _optimize(copy.deepcopy(stock))
    assert rep.siblings == [
        "embeddings.LayerNorm -> encoder.layer.0.attention.self.{query, key, value}",
        "encoder.layer.0.output.LayerNorm -> encoder.layer.1.attention.self.{query, key, value}"]
    assert "2 sibling group(s) as one GEMM" in rep.summary() and not rep.siblings_not
    att = model.encoder.layer[1].attention.self
    q, k, v = att.query, att.key, att.value
    assert all(isinstance(m, SiblingLinear) for m in (q, k, v))
    assert _adjacent([m.gemm_weight() for m in (q, k, v)])  # packed: one [3H, H] view
    with torch.no_grad():
        with _Linears() as seen:
            got = om.logits(model(input_ids=IDS))
        with _Linears() as base:
            want = om.logits(stock(input_ids=IDS))
    assert _rel(got, want) < 1e-5
    # per layer q, k, v, attention.output.dense, intermediate.dense, output.dense; the pooler
    assert base.widths == [H, H, H, H, 2 * H, H] * 2 + [H]
    # one GEMM for q, k, v; the post-norm denses in the fused ops (not F.linear)
    assert seen.widths == [3 * H, 2 * H] * 2 + [H]
    # the protocol, member by member
    x = torch.randn(2, 5, H)
    with torch.no_grad():
        yq = q(x)
        assert yq._base is not None and yq._base.shape[-1] == 3 * H
        torch.testing.assert_close(yq, nn.functional.linear(x, q.weight, q.bias))
        x.mul_(2)  # in place between the members: k computes its own
        torch.testing.assert_close(k(x), nn.functional.linear(x, k.weight, k.bias))
        other = torch.randn(2, 5, H)  # v with another tensor: its own GEMM
        yv = v(other)
        assert (yv if yv._base is None else yv._base).shape[-1] == H
        torch.testing.assert_close(yv, nn.functional.linear(other, v.weight, v.bias))
        # in the model's order, the last member releases the shared output
        q(x), k(x), v(x)
        assert q._group.pending is None
    # under inference_mode (no version counter on the input): each member's own GEMM
    with torch.inference_mode():
        with _Linears() as inf:
            got = om.logits(model(input_ids=IDS))
        assert _rel(got, want) < 1e-5 and 3 * H not in inf.widths
    # training (eager): one GEMM over the concatenated weights too, the stock model's gradients
    # (the key bias's is zero up to rounding: softmax ignores a per-query constant)
    grads = []
    for m in (model, stock):
        om.no_dropout(m).train().zero_grad(set_to_none=True)
        with _Linears() as train:
            (om.logits(m(input_ids=IDS)) * torch.linspace(-1, 1, H)).sum().backward()
        grads.append({n: p.grad for n, p in m.named_parameters() if p.grad is not None})
        if m is model:
            # per layer: q, k, v as one; attention.output.dense, intermediate.dense and
            # output.dense as the model wrote them (composed training); the pooler
            assert train.widths == [3 * H, H, 2 * H, H] * 2 + [H], train.widths
    scale = max(g.abs().max() for g in grads[1].values())
    assert grads[0].keys() == grads[1].keys()
    for n, g in grads[1].items():
        torch.testing.assert_close(grads[0][n], g, rtol=1e-4, atol=1e-6 * scale, msg=n)
    # NORMFUSE_SIBLINGS_TRAIN=0: each member's own GEMM in training
    monkeypatch.setattr(SiblingGEMMs, "train_packed", False)
    with _Linears() as train:
        om.logits(model(input_ids=IDS)).sum()
    assert 3 * H not in train.widths
    model.eval()
    stock.eval()
    # torch.compile: no break, the stock model's GEMMs
    torch._dynamo.reset()
    with torch.no_grad():
        ex = torch._dynamo.explain(lambda i: model(input_ids=i).last_hidden_state)(IDS)
    assert ex.graph_break_count == 0, ex.break_reasons
    torch._dynamo.reset()
    # .to(dtype) packs the members again; the model keeps computing the stock function
    model.to(torch.float64), stock.to(torch.float64)
    assert _adjacent([m.gemm_weight() for m in (q, k, v)]) and q.weight.dtype == torch.float64
    with torch.no_grad():
        assert _rel(om.logits(model(input_ids=IDS)), om.logits(stock(input_ids=IDS))) < 1e-10


def test_siblings_that_cannot_be_one_gemm_are_reported():
    """Several GEMMs reading a norm's output through row views (or differing in dtype) keep
    their own GEMMs; the report says why."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(om.H)
            self.a, self.b = nn.Linear(om.H, 8), nn.Linear(om.H, 8)

        def forward(self, x):
            n = self.norm(x)
            return n + 1, self.a(n[:, -1:]), self.b(n[:, -1:])

    model, rep = _optimize(om.randomize(Block()), (torch.randn(2, 4, om.H),))
    assert not rep.siblings
    assert rep.siblings_not == ["norm: they read it through row views"], str(rep)
    assert "not packed: norm: they read it through row views" in str(rep)
    assert type(model.a) is nn.Linear


@pytest.mark.gpu
@pytest.mark.parametrize("family", ["llama", "gpt2", "bert"])
def test_gpu_optimized_prefill_in_a_cuda_graph(family):
    """The model benchmark's '+graph' configurations on the H200 (bf16, hidden 256): an
    optimized model's prefill captured in a CUDA graph (after eager warm-up calls) replays to
    what the eager forward computes, with new token ids copied into the captured input, and
    BERT's sibling GEMMs packed inside the graph."""
    from normfuse.repro.models import graphed
    model = normfuse.optimize(om.tiny_family(family, hidden=256).to("cuda", torch.bfloat16))
    ids = torch.randint(0, om.VOCAB, (2, 64), generator=torch.Generator().manual_seed(0)).cuda()
    with torch.no_grad():
        with _Linears() as seen:
            replay = graphed(lambda: om.logits(model(input_ids=ids)))
        if family == "bert":  # q, k, v as one GEMM in the captured forward too
            assert 3 * 256 in seen.widths, seen.widths
        for seed in (1, 2):
            ids.copy_(torch.randint(0, om.VOCAB, (2, 64),
                                    generator=torch.Generator().manual_seed(seed)))
            want = om.logits(model(input_ids=ids)).clone()
            got = replay()
            torch.cuda.synchronize()
            assert _rel(got, want) < 2e-3


def test_conv1d_siblings_over_a_norm_output_that_is_also_the_residual():
    """GPT-2-style Conv1D GEMMs ([in, out] weights) reading a norm's output that a residual
    needs too: one GEMM over their column-packed weights in inference, the stock model's
    outputs, and the stock gradients in training (each member its own GEMM)."""
    from transformers.pytorch_utils import Conv1D

    from normfuse.nn.fused import SiblingLinear

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(om.H)
            self.a, self.b = Conv1D(2 * om.H, om.H), Conv1D(om.H, om.H)

        def forward(self, x):
            h = self.ln(x)
            return torch.cat([torch.relu(self.a(h)), self.b(h) + h], -1)

    stock = om.randomize(Block()).eval()
    x = torch.randn(2, 5, om.H)
    model, rep = _optimize(copy.deepcopy(stock), (x,))
    assert rep.siblings == ["ln -> a, b"], str(rep)
    assert isinstance(model.a, SiblingLinear) and model.a.transposed
    assert model.a.weight.shape == (om.H, 2 * om.H)  # the parameters keep their shapes
    assert _adjacent([model.a.gemm_weight(), model.b.gemm_weight()])
    with torch.no_grad(), _Linears() as seen:
        assert _rel(model(x), stock(x)) < 1e-5
    assert seen.widths == [3 * om.H]
    xs = [x.clone().requires_grad_() for _ in range(2)]
    for m, xi in zip((stock, model), xs):
        (m.train()(xi) * torch.linspace(-1, 1, 3 * om.H)).sum().backward()
    got = dict(model.named_parameters())
    for n, p in stock.named_parameters():
        assert _rel(got[n].grad, p.grad) < 1e-5, n


class _ConfigRMS(nn.Module):
    """An RMSNorm reading eps from a config object (the norm cache's key cannot see it)."""

    def __init__(self, config):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(om.H))
        self.config = config

    def forward(self, x):
        v = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(v + self.config.eps))


class _PrivateEpsRMS(_ConfigRMS):
    def __init__(self, eps):
        super().__init__(None)
        self._eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self._eps))


@pytest.mark.parametrize("make", [
    lambda eps: _ConfigRMS(type("Cfg", (), {"eps": eps})()),
    lambda eps: _PrivateEpsRMS(eps)], ids=["config", "private"])
def test_norms_of_one_class_with_different_eps_each_get_their_own(make):
    """Two instances of one norm class whose eps differ in state the recognition cache's key
    cannot see (a config object) or once did not (a private attribute): each is recognized
    with its own eps, also with check=False (nothing would revert a wrong spec)."""

    class TwoNorms(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.l1 = make(1e-6), nn.Linear(om.H, om.H)
            self.n2, self.l2 = make(1.0), nn.Linear(om.H, om.H)

        def forward(self, x):
            return self.l2(self.n2(self.l1(self.n1(x))))
    stock = om.randomize(TwoNorms())
    x = 0.3 * torch.randn(2, 5, om.H)
    model, rep = _optimize(copy.deepcopy(stock), (x,), check=False)
    assert {m.norm: m.spec.eps for m in rep.matches} == {"n1": 1e-6, "n2": 1.0}, str(rep)
    with torch.no_grad():
        assert _rel(model(x), stock(x)) < 1e-5


def test_standalone_keeps_a_forward_set_on_the_instance():
    """A recognized norm no GEMM takes, whose forward was replaced on the instance (accelerate's
    hooks do this): optimize(standalone=True) leaves that forward in place and does not list the
    norm as standalone; without one the standalone wrapper is installed."""
    from normfuse.nn.fused import StandaloneNorm
    x = torch.randn(2, 5, om.H)
    m = om.randomize(om.ResidualUse()).eval()
    calls = []
    orig = m.norm.forward

    def hooked(inp):
        calls.append(1)
        return orig(inp)
    m.norm.forward = hooked
    m, rep = _optimize(m, (x,))
    assert m.norm.__dict__["forward"] is hooked and "norm" not in rep.standalone, str(rep)
    calls.clear()
    with torch.no_grad():
        m(x)
    assert calls == [1]
    plain, rep = _optimize(om.randomize(om.ResidualUse()).eval(), (x,))
    assert isinstance(plain.norm.__dict__["forward"], StandaloneNorm) and "norm" in rep.standalone


def test_split_leftovers_are_not_copied_and_clear_caches_reaches_sibling_joins():
    """A split forward interrupted before every consumer took its output leaves them on the
    norm; deepcopy and pickling do not carry them. Writes through `param.data` (which bump no
    version) are seen by the sibling GEMMs' joined weight after normfuse.ops.clear_caches()."""
    import pickle
    stock = om.randomize(om.ContiguousQKV(om.FRMS()))
    x = torch.randn(2, 3, om.H)
    model, _ = _optimize(copy.deepcopy(stock), (x,), split_siblings=True)

    def boom(*a, **k):
        raise RuntimeError("interrupted")
    model.k.forward = boom  # (not a hook: hooks make the group run unfused)
    with torch.no_grad(), pytest.raises(RuntimeError, match="interrupted"):
        model(x)
    del model.k.forward
    assert model.norm._pending is not None
    assert copy.deepcopy(model).norm._pending is None
    assert pickle.loads(pickle.dumps(model)).norm._pending is None

    class QK(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(om.H)
            self.q, self.k = nn.Linear(om.H, om.H), nn.Linear(om.H, om.H)

        def forward(self, x):
            h = self.norm(x)
            return h + torch.tanh(self.q(h)) * self.k(h)
    m, rep = _optimize(om.randomize(QK()).eval(), (x,))
    assert rep.siblings, str(rep)
    with torch.no_grad():
        m(x)
        m.q.bias.data.zero_()
        m.k.bias.data.zero_()
        normfuse.ops.clear_caches()
        h = m.norm(x)
        lin = torch.nn.functional.linear
        want = h + torch.tanh(lin(h, m.q.weight, m.q.bias)) * lin(h, m.k.weight, m.k.bias)
        assert _rel(m(x), want) < 1e-5


def test_example_inputs_a_forward_changes_are_fresh_for_every_run():
    """An example argument the forward changes in place (a transformers DynamicCache grows with
    every forward) is copied for each of optimize's runs (the probe, every check), so the
    check compares the same computation: the norms are fused, none reverted."""
    transformers = pytest.importorskip("transformers")
    ids = torch.randint(0, om.VOCAB, (1, 8), generator=torch.Generator().manual_seed(0))
    cache = transformers.DynamicCache()
    m, rep = _optimize(om.tiny_family("llama"), {"input_ids": ids, "past_key_values": cache})
    assert len(rep.matches) == 4 and [r.module for r in rep.refusals] == ["model.norm"], str(rep)
    assert cache.get_seq_length() == 0  # the user's object is left as it was


def test_sibling_gemms_follow_substituted_and_parametrized_weights():
    """BERT's query / key / value (one GEMM over their joined weights in inference):
    functional_call with a fresh query weight each call gets its own weight each time (a freed
    weight's id and address, reused by the next, once hit the previous join); a member whose
    weight a parametrization computes makes each member run its own GEMM (it raised KeyError)."""
    from torch.func import functional_call
    from torch.nn.utils import parametrize
    stock = om.tiny_family("bert")
    model, rep = _optimize(copy.deepcopy(stock))
    ids = IDS
    k = "encoder.layer.0.attention.self.query.weight"
    shape = dict(stock.named_parameters())[k].shape
    with torch.no_grad():
        for seed in range(3):
            w = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
            want = functional_call(stock, {k: w}, (), {"input_ids": ids})["last_hidden_state"]
            got = functional_call(model, {k: w}, (), {"input_ids": ids})["last_hidden_state"]
            assert _rel(got, want) < 1e-5, seed
            del w, got, want

    class Double(nn.Module):
        def forward(self, w):
            return 2 * w
    for m in (stock, model):
        parametrize.register_parametrization(m.encoder.layer[0].attention.self.key, "weight",
                                             Double())
    with torch.no_grad():
        assert _rel(model(input_ids=ids)["last_hidden_state"],
                    stock(input_ids=ids)["last_hidden_state"]) < 1e-5


def test_hooks_on_a_pre_norm_group_see_the_stock_computation():
    """Forward hooks a user registers after optimize (activation capture, a pre-hook changing a
    GEMM's input): the group runs as the model wrote it while they are there (the norm's output
    normalized, each consumer's own GEMM), so the hooks see and change what they would in the
    stock model; removed, the fused form is back."""
    stock = om.tiny_family("llama").eval()
    model, rep = _optimize(copy.deepcopy(stock))
    layer = lambda m: m.model.layers[0]  # noqa: E731
    seen = {}

    def capture(name):
        return lambda mod, args, out: seen.setdefault(name, []).append(out.detach().clone())
    handles = []
    for tag, m in (("stock", stock), ("model", model)):
        handles.append(layer(m).input_layernorm.register_forward_hook(capture(tag)))
        handles.append(layer(m).self_attn.q_proj.register_forward_pre_hook(
            lambda mod, args: (args[0] + 0.5,)))
    with torch.no_grad():
        want = om.logits(stock(input_ids=IDS))
        got = om.logits(model(input_ids=IDS))
    assert _rel(got, want) < 1e-5
    assert seen["model"][0].shape == seen["stock"][0].shape
    assert _rel(seen["model"][0], seen["stock"][0]) < 1e-5
    fn = layer(model).input_layernorm
    assert fn.hooked()
    for h in handles:
        h.remove()
    assert not fn.hooked()
    x = torch.randn(1, 3, fn.spec.features)
    with torch.no_grad():
        assert fn.output_form(x) != "normalized"  # the fused forms again
        assert _rel(om.logits(model(input_ids=IDS)), om.logits(stock(input_ids=IDS))) < 1e-5


def test_sibling_training_form_falls_back_per_member():
    """The sibling group's training form (one GEMM over torch.cat of the members' weights) only
    where the cat computes what the members would: members of another dtype, or a weight that
    is no plain tensor, run their own GEMMs (gradients the stock model's either way)."""
    from normfuse.nn.fused import SiblingGEMMs
    stock = om.tiny_family("bert")
    model, rep = _optimize(copy.deepcopy(stock))
    assert rep.siblings
    att = model.encoder.layer[1].attention.self
    grp = att.query._group
    assert grp.train_weight_and_bias() is not None
    with torch.no_grad():
        att.value.weight.data = att.value.weight.data.double()
    assert grp.train_weight_and_bias() is None
    att.value.weight.data = att.value.weight.data.float()
    assert grp.train_weight_and_bias() is not None
    bias = att.key.bias
    att.key._parameters["bias"] = nn.Parameter(bias.detach().double())
    assert grp.train_weight_and_bias() is None
    att.key._parameters["bias"] = bias
    # in the model: a group that cannot take the form runs per member, with the stock gradients
    with torch.no_grad():
        att.value.weight.data = att.value.weight.data.double()
    x = torch.randn(2, 5, om.H, requires_grad=True)
    outs = [m(x) for m in (att.query, att.key)]
    assert grp.pending is None  # each its own GEMM: no split output
    assert all("Split" not in type(o.grad_fn).__name__ for o in outs), [o.grad_fn for o in outs]
    att.value.weight.data = att.value.weight.data.float()
    outs = [m(x) for m in (att.query, att.key, att.value)]
    assert all("Split" in type(o.grad_fn).__name__ for o in outs)  # the group's one GEMM
    assert grp.pending is None and SiblingGEMMs.train_packed
