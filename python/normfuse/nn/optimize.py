"""`normfuse.optimize(model)`: every norm with a GEMM on either side runs fused.

Steps (analyse, decide, rewrite, check):

1. Probe: one forward on the example inputs (no_grad, eval mode) records each leaf module that
   returns a tensor of its input's shape (the norm candidates), every use of its output and
   where the input of every GEMM (nn.Linear, transformers' Conv1D) came from (`probe.Probe`).
2. Recognize each candidate by what it computes (`recognize.recognize`: its forward traced to
   aten, matched to RMSNorm / LayerNorm over the last dim, then verified numerically).
3. Decide per recognized norm:
   - pre-norm when every use of its output is the whole input of a GEMM module (maybe through
     row views) and those GEMMs read nothing else: the norm and its consumers become
     FusedNorm / FusedLinear (`fused.py`), one GEMM over the concatenated weights when the
     consumers read the output directly;
   - else post-norm when its input is `linear(h)` (+ dropout, + bias, + residual) computed in the
     same forward that calls the norm: that forward is rewritten through torch.fx
     (`postnorm_rewrite.py`); or when its input is a GEMM's output and nothing else reads that
     output: DeferredLinear + NormAfterLinear (`fused.py`);
   - else a refusal, with the users or producers that prevent it;
   - then, for every recognized norm whose output exists (post-norm, refused, standalone):
     when several GEMMs read that output whole, once each, they run as one GEMM over their
     packed weights in inference (`fused.SiblingGEMMs`; BERT's query / key / value), listed in
     the report's `siblings` (or `siblings_not`, with why not).
4. Check (check=True): the example through the rewritten model (no_grad and, when parameters
   require grad, with grad) against the probe's output; a group whose rewrite changes the
   output beyond bf16 tolerance (or raises) is reverted and reported.

A model where nothing matched comes back unchanged (the same module objects).

What the rewritten model guarantees, and its limits:
- state_dict() keys and load_state_dict() are the original ones (the fused modules hold the
  original Parameter objects under their names); model.to()/half()/cuda() re-pack sibling
  weights; copy.deepcopy and torch.save(model) work (after a deepcopy the siblings are separate
  tensors again: the ops then concatenate them, cached; `FusedNorm.repack()` joins them).
- In inference (and in the fused training plan) a FusedNorm returns its input x unchanged
  except in the packed inference form: only its consumers see the normalized values. The whole
  model computes what it did, but a submodule that returned the norm's output (LlamaModel inside
  LlamaForCausalLM: its last_hidden_state) returns x when called on its own; the report notes
  it. (In composed training it returns the norm's output.)
- Training (grad mode on and something requiring grad) follows the training plan, `train=`:
  "composed" (the default): the original norm module's own forward (the stock model's numerics)
  and plain GEMMs, one per consumer as its original module computes it (F.linear, Conv1D's
  addmm: the stock model's autograd graph, node for node; siblings as one GEMM over their
  concatenated weights under torch.compile only with NORMFUSE_COMPOSED_PACK=1: measured
  slower), post-norm forwards their original code; "fused": the fused training ops (in eager
  one op over a group's sibling weights, its output split by columns for the consumers:
  nn.fused.FUSED_TRAIN_SPLIT; under torch.compile one per consumer; the backward as the ops'
  PRENORM_BWD_PLAN says). Why composed is the default: at model shapes the fused forward saves
  only the write of the norm's output while the backward writes it again for dW, and the norm
  backward still runs as its own kernel after cuBLAS's dX GEMM (the dX kernels with it in their
  epilogue are slower than cuBLAS's GEMM alone; docs/NOTES.md), so the norm as the model writes
  it (which Inductor fuses with the residual add and its backward) and cuBLAS GEMMs train
  faster (Llama: 3.6-6.3 % a step, H100, session 43). `set_train_plan(model, plan)` switches an
  optimized model. Inference is fused either way: one GEMM over the concatenated sibling
  weights.
- Post-norm with a residual or dropout in between needs the linear and the norm called in one
  forward (BERT's BertSelfOutput / BertOutput), FX-traceable with its submodules as black boxes.
  A norm reading a GEMM's output untouched may have the GEMM in a child module (Gemma2's
  post-attention norm after o_proj inside the attention), or both in a forward that cannot be
  rewritten (OLMo2's q_norm(q_proj(h)) in an attention forward taking **kwargs): the GEMM hands
  on its input (DeferredLinear) and the norm runs it (NormAfterLinear); the report notes the
  submodule whose output changes meaning. DistilBERT's `sa_layer_norm(attention(...) + x)` (GEMM
  in the child, residual in the parent) is refused, and so are norms per head over a view of a
  GEMM's output (Qwen3's / Gemma3's q_norm over q_proj(h).view(..., heads, head_dim): the fused
  ops normalize whole output rows); the refusal names the GEMM and the view.
- The probe sees one forward: code paths that the example does not take (another branch,
  output_hidden_states=True) are not checked.
"""
from __future__ import annotations

import copy
import fnmatch
import logging
from dataclasses import dataclass, field

import torch
from torch import nn

from . import fused as _fused
from .fused import (TRAIN_PLANS, DeferredLinear, FusedLinear, FusedNorm, NormAfterLinear,
                    SiblingGEMMs, SiblingLinear, StandaloneNorm, check_train_plan, gemm_weight,
                    is_conv1d, pack_side_by_side)
from .postnorm_rewrite import PostNormFailure, PostNormForward, build_post_forward
from .probe import Probe, _flat_tensors, _show as _show_path
from .recognize import (NormSpec, NotANorm, Unsupported, looks_like_norm, recognize,
                        verify_spec)

__all__ = ["optimize", "OptimizeReport", "Match", "Refusal", "set_train_plan", "set_fused_training",
           "TRAIN_PLANS"]

log = logging.getLogger("normfuse.optimize")

# Relative error (Frobenius) above which check=True reverts a rewrite: bf16's tolerance for
# 16-bit outputs, tighter for fp32 outputs (the CPU path computes the same fp32 math).
CHECK_TOL = {torch.float32: 1e-3, torch.float64: 1e-6}
CHECK_TOL_LOW = 2e-2


@dataclass
class Match:
    """A fused norm. side: "pre" (norm -> GEMMs) or "post" (GEMM -> norm)."""

    norm: str                 # the norm's module path
    norm_type: str            # its class name
    spec: NormSpec
    side: str
    gemms: list[str]          # pre: the consumers; post: the producing GEMM
    plan: str                 # how it runs in inference, in words
    notes: str = ""
    train: str = ""           # how it runs in training (the training plan), in words

    @property
    def kind(self) -> str:
        return self.spec.title

    @property
    def eps(self) -> float:
        return self.spec.eps


@dataclass
class Refusal:
    """A norm left as it is: why, and what would make it fusable."""

    module: str
    module_type: str
    reason: str
    fix: str = ""


@dataclass
class OptimizeReport:
    matches: list[Match] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    checked: bool = False
    max_error: float | None = None    # the check's largest relative error over the outputs
    train_plan: str = "composed"      # optimize(train=...): how the fused groups train
    standalone: list[str] = field(default_factory=list)  # unfused norms on the standalone op
    # GEMMs reading one norm's output that must exist anyway, run as one GEMM in inference:
    # "norm -> consumers"; and where several GEMMs read one but cannot: "norm -> ...: why"
    siblings: list[str] = field(default_factory=list)
    siblings_not: list[str] = field(default_factory=list)

    def summary(self) -> str:
        pre = sum(m.side == "pre" for m in self.matches)
        post = len(self.matches) - pre
        gemms = sum(len(m.gemms) for m in self.matches)
        s = (f"normfuse.optimize: {len(self.matches)} norms fused ({pre} pre-norm, {post} "
             f"post-norm, {gemms} GEMMs), {len(self.refusals)} refused; training plan "
             f"'{self.train_plan}'")
        if self.siblings:
            s += f"; {len(self.siblings)} sibling group(s) as one GEMM"
        if self.checked and self.max_error is not None:
            s += f"; checked, max rel. error {self.max_error:.2e}"
        return s

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.matches:
            rows = [("norm", "type", "computes", "side", "GEMMs", "inference", "training")]
            for m in self.matches:
                rows.append((m.norm or "(model)", m.norm_type, m.spec.describe(), m.side,
                             ", ".join(_short(g, m.norm) for g in m.gemms), m.plan, m.train))
            lines += ["", "fused:"] + _table(rows)
            lines += ["", "training plan: " + _train_why(self.train_plan)]
            noted = [m for m in self.matches if m.notes]
            if noted:
                lines += ["", "notes:"] + [f"  {m.norm}: {m.notes}" for m in noted]
        if self.refusals:
            lines += ["", "refused:"]
            for r in self.refusals:
                lines.append(f"  {r.module or '(model)'} ({r.module_type}): {r.reason}")
                if r.fix and r.fix != "-":
                    lines.append(f"      fix: {r.fix}")
        if self.siblings or self.siblings_not:
            lines += ["", "GEMMs reading one norm's output (which other users need), as one GEMM "
                      "over their concatenated weights in inference:"]
            lines += [f"  {s}" for s in self.siblings]
            lines += [f"  not packed: {s}" for s in self.siblings_not]
        if self.standalone:
            lines += ["", "not fused, on the standalone norm kernel (eager, sm_90, 16-bit; torch's "
                      "own nn.LayerNorm / nn.RMSNorm from 2^26 elements of input up): "
                      + ", ".join(p or "(model)" for p in self.standalone)]
        return "\n".join(lines)

    __repr__ = __str__


# Why each training plan (the report's line under the table).
TRAIN_WHY = {
    "composed": ("'composed' (the default; train='fused' for the fused ops): in training the "
                 "norms run as the model wrote them and the GEMMs on cuBLAS (one per consumer), "
                 "so torch.compile can fuse each norm with the residual add and its backward; "
                 "the fused training ops save only the write of the norm's "
                 "output while their backward writes it again for dW and runs the norm "
                 "backward as its own kernel after cuBLAS's dX GEMM, so they train slower "
                 "(docs/NOTES.md). Inference is fused."),
    "fused": ("'fused': in training each GEMM runs a fused training op (norm + GEMM forward; "
              "backward with the norm backward fused, as normfuse.ops.training.PRENORM_BWD_PLAN "
              "says: now {bwd}). Inference is fused."),
}


def _bwd_plan(op: str) -> str:
    """The fused pre-norm op's backward plan as the op will read it (its default unless changed:
    the optimized model passes none of its own)."""
    from ..ops.training import PRENORM_BWD_PLAN
    return PRENORM_BWD_PLAN[op]


def _train_why(plan: str) -> str:
    if plan != "fused":
        return TRAIN_WHY[plan]
    from ..ops.training import PRENORM_BWD_PLAN
    plans = sorted(set(PRENORM_BWD_PLAN.values()))
    now = (f"'{plans[0]}'" if len(plans) == 1 else
           ", ".join(f"{op} '{p}'" for op, p in PRENORM_BWD_PLAN.items()))
    return TRAIN_WHY[plan].format(bwd=now)


def _short(path: str, norm: str) -> str:
    """A consumer's path relative to the norm's parent, when they share it."""
    parent = norm.rsplit(".", 1)[0] + "." if "." in norm else ""
    return path[len(parent):] if parent and path.startswith(parent) else path


def _table(rows: list[tuple]) -> list[str]:
    widths = [min(max(len(str(r[i])) for r in rows), 60) for i in range(len(rows[0]))]
    out = []
    for j, r in enumerate(rows):
        out.append("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
        if j == 0:
            out.append("  " + "  ".join("-" * w for w in widths))
    return out


# ---------------------------------------------------------------------------------------------
# Groups: one rewrite each, applied and reverted as a unit
# ---------------------------------------------------------------------------------------------

def _paths_of(model: nn.Module, target: nn.Module) -> list[str]:
    return [p for p, m in model.named_modules(remove_duplicate=False) if m is target]


def _set(model: nn.Module, path: str, new: nn.Module) -> None:
    parent, _, name = path.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, name, new)


def _swap(model: nn.Module, pairs, back: bool = False) -> None:
    """Put each `new` wherever its `old` sits in `model` (back: the reverse) for (old, new) in
    `pairs`."""
    for old, new in pairs:
        if back:
            old, new = new, old
        for p in _paths_of(model, old):
            _set(model, p, new)


def _side_by_side(members, wrap) -> list:
    """`wrap(path, module)` for each (path, GEMM module) of `members`, each given its columns
    (`cols`) of the members' outputs side by side."""
    out, a = [], 0
    for path, lin in members:
        m = wrap(path, lin)
        n = gemm_weight(lin).shape[0]
        m.cols = (a, a + n)
        a += n
        out.append(m)
    return out


def _restore(saved) -> None:
    for w, data in saved:
        w.data = data


class _PreGroup:
    def __init__(self, norm_path, norm, spec, consumers: list[tuple[str, nn.Module]], packed,
                 train_plan: str = "composed"):
        self.norm_path, self.norm, self.spec = norm_path, norm, spec
        self.consumers = consumers
        self.packed = packed
        self.split = None  # SplitForm: one GEMM with an output per consumer (inference)
        self.train_plan = train_plan
        self.paths = {}
        self.saved = []

    def apply(self, model: nn.Module) -> None:
        fn = FusedNorm(self.norm, self.spec, self.norm_path)
        fn.train_plan = self.train_plan
        fls = _side_by_side(self.consumers, lambda path, lin: FusedLinear(lin, fn, path))
        object.__setattr__(fn, "_consumers", tuple(fls))
        self.saved = [(lin.weight, lin.weight.data) for _, lin in self.consumers]
        self.paths = {self.norm_path: (self.norm, fn)}
        for (path, lin), fl in zip(self.consumers, fls):
            self.paths[path] = (lin, fl)
        _swap(model, self.paths.values())
        fn.packed = self.packed
        fn.split = self.split is not None
        fn.repack()
        self.fused = fn

    def revert(self, model: nn.Module) -> None:
        _restore(self.saved)
        _swap(model, self.paths.values(), back=True)

    def set_packed(self, packed: bool) -> None:
        self.packed = packed


class _DeferredGroup:
    """GEMM (in a child module) -> norm: DeferredLinear + NormAfterLinear."""

    def __init__(self, norm_path, norm, spec, lin_path, lin, train_plan: str = "composed"):
        self.norm_path, self.norm, self.spec = norm_path, norm, spec
        self.lin_path, self.lin = lin_path, lin
        self.packed = False
        self.consumers = []
        self.train_plan = train_plan

    def apply(self, model: nn.Module) -> None:
        dl = DeferredLinear(self.lin, self.lin_path)
        fn = NormAfterLinear(self.norm, self.spec, dl, self.norm_path)
        fn.train_plan = self.train_plan
        self.swaps = [(self.lin, dl), (self.norm, fn)]
        _swap(model, self.swaps)

    def revert(self, model: nn.Module) -> None:
        _swap(model, self.swaps, back=True)


class _PostGroup:
    def __init__(self, caller_path, caller, forward, norms, train_plan: str = "composed"):
        self.caller_path, self.caller, self.forward, self.norms = caller_path, caller, forward, norms
        self.packed = False
        forward.train_plan = train_plan

    def apply(self, model: nn.Module) -> None:
        self.caller.forward = self.forward

    def revert(self, model: nn.Module) -> None:
        self.caller.__dict__.pop("forward", None)


class _SiblingGroup:
    """GEMMs reading one norm's output that other users need too: SiblingLinear members of one
    SiblingGEMMs (fused.py), their weights packed side by side."""

    def __init__(self, norm_path, members: list[tuple[str, nn.Module]]):
        self.norm_path, self.members = norm_path, members
        self.paths, self.saved, self.applied = {}, [], False
        self.matches = []

    def apply(self, model: nn.Module) -> None:
        grp = SiblingGEMMs(self.norm_path)
        sls = _side_by_side(self.members, lambda path, lin: SiblingLinear(lin, grp, path))
        grp.members = tuple(sls)
        self.saved = [(lin.weight, lin.weight.data) for _, lin in self.members]
        self.paths = {path: (lin, sl) for (path, lin), sl in zip(self.members, sls)}
        _swap(model, self.paths.values())
        pack_side_by_side(sls)
        self.applied = True

    def revert(self, model: nn.Module) -> None:
        _restore(self.saved)
        _swap(model, self.paths.values(), back=True)
        self.applied = False

    def describe(self) -> str:
        paths = [p for p, _ in self.members]
        parent = paths[0].rsplit(".", 1)[0] if "." in paths[0] else ""
        if parent and all(p.rsplit(".", 1)[0] == parent for p in paths):
            names = f"{parent}.{{{', '.join(p.rsplit('.', 1)[1] for p in paths)}}}"
        else:
            names = ", ".join(paths)
        return f"{self.norm_path or '(model)'} -> {names}"


# ---------------------------------------------------------------------------------------------
# Decisions
# ---------------------------------------------------------------------------------------------

def _patterns(p) -> list[str] | None:
    if p is None:
        return None
    return [p] if isinstance(p, str) else list(p)


def _selected(path: str, include, exclude) -> bool:
    if include is not None and not any(fnmatch.fnmatchcase(path, pat) for pat in include):
        return False
    return not (exclude is not None and any(fnmatch.fnmatchcase(path, pat) for pat in exclude))


def _spec_key(mod: nn.Module, shape, dtype):
    """What the norm cache (`_recognize_all`) keys a module by: its class, parameters' shapes
    and dtypes, simple attributes (private ones too: a `_eps`), the input's shape and dtype.
    What it cannot see (a config object's eps) the cache hit's verification does."""
    simple = []
    for k, v in sorted(mod.__dict__.items()):
        if isinstance(v, (int, float, bool, str, type(None), tuple)):
            simple.append((k, v))
    params = tuple((n, tuple(p.shape), p.dtype) for n, p in mod.named_parameters(recurse=False))
    return (type(mod), params, tuple(simple), tuple(shape[1:]), dtype)


def _computes(mod: nn.Module, spec, shape) -> bool:
    """Whether `mod` computes `spec` (recognized on another module with the same `_spec_key`),
    checked numerically as recognize checks what it traced."""
    try:
        verify_spec(mod, spec, shape)
    except Unsupported:
        return False
    return True


def _unique(xs):
    seen, out = set(), []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


# modules optimize put there (a model optimized twice): already fused, not reported again
_OURS = (FusedNorm, FusedLinear, NormAfterLinear, DeferredLinear, SiblingLinear)


def _recognize_all(model, probe, include, exclude, report):
    modules = dict(model.named_modules(remove_duplicate=False))
    specs, cache = {}, {}
    for path in sorted(probe.leaf_calls - set(probe.norm_calls)):
        mod = modules.get(path)
        if mod is not None and looks_like_norm(mod) and not isinstance(mod, _OURS):
            report.refusals.append(Refusal(path, type(mod).__name__,
                                           "not a candidate: it takes more than one tensor or "
                                           "does not return one tensor of its input's shape"))
    for path, calls in probe.norm_calls.items():
        mod = modules[path]
        if isinstance(mod, _OURS):
            continue
        K, dt = calls[0].shape[-1], calls[0].dtype
        params = list(mod.parameters(recurse=False))
        normlike = looks_like_norm(mod)
        if any(p.dim() != 1 or p.shape[0] != K for p in params):
            if normlike:
                report.refusals.append(Refusal(path, type(mod).__name__,
                                               f"its parameters are not vectors of its {K} features",
                                               "-"))
            continue
        if any(c.shape[-1] != K or c.dtype != dt for c in calls):
            if normlike:
                report.refusals.append(Refusal(path, type(mod).__name__,
                                               "it is called on inputs of different widths or dtypes"))
            continue
        try:
            key = _spec_key(mod, calls[0].shape, dt)
            hash(key)
        except TypeError:
            key = None
        try:
            hit = cache.get(key) if key is not None else None
            if isinstance(hit, Exception):
                raise hit
            if hit is not None and _computes(mod, hit, calls[0].shape):
                spec = hit
            else:
                try:
                    spec = recognize(mod, calls[0].shape, dt)
                except (NotANorm, Unsupported) as e:
                    if key is not None:
                        cache[key] = e
                    raise
                if key is not None:
                    cache[key] = spec
        except NotANorm as e:
            if normlike:
                report.refusals.append(Refusal(path, type(mod).__name__,
                                               f"not recognized as a norm: {e}",
                                               "write it as RMSNorm or LayerNorm over the last "
                                               "dimension"))
            continue
        except Unsupported as e:
            report.refusals.append(Refusal(path, type(mod).__name__, str(e), _fix_for(str(e))))
            continue
        if not _selected(path, include, exclude):
            report.refusals.append(Refusal(path, type(mod).__name__,
                                           f"{spec.title}, left out by include/exclude", "-"))
            continue
        specs[path] = spec
    return specs


def _fix_for(reason: str) -> str:
    if "outside the square root" in reason:
        return "x * rsqrt(mean(x^2) + eps) if the model tolerates it, else leave unfused"
    if "unbiased" in reason:
        return "var(..., correction=0) if the model tolerates it"
    return "-"


def _pre_decision(path, spec, probe, modules, split: bool = False):
    """(consumer paths, True or why not one GEMM or False for one consumer, None) or
    (None, None, reason)."""
    uses = probe.uses.get(path, [])
    gemm = [u for u in uses if u.kind == "gemm"]
    other = [u for u in uses if u.kind == "other"]
    if not gemm:
        return None, None, "no GEMM reads its output" + (
            f" (used by {_users(other)})" if other else "")
    if other:
        return None, None, f"its output is also used by {_users(other)}"
    esc = _unique(probe.escapes.get(path, []))
    if esc:  # (the final norm of a *ForCausalLM: the base model's output, output_hidden_states)
        return None, None, (f"its output is returned by {', '.join(_disp(e) for e in esc[:2])}: "
                            f"fused, that module would return the norm's input to any caller "
                            f"that reads it (the base model called alone, output_hidden_states); "
                            f"optimize the model that returns it to fuse what reads it")
    consumers = _unique(u.what for u in gemm)
    for m in [path] + consumers:
        why = _untouchable(modules[m])
        if why:
            return None, None, f"{m} {why}"
    for c in consumers:
        calls = probe.gemm_calls.get(c, [])
        if any(gc.origin != path for gc in calls):
            return None, None, f"{c} also reads inputs that are not this norm's output"
        w = gemm_weight(modules[c])
        if not w.is_floating_point():
            return None, None, f"{c} has a {w.dtype} weight"
    if len(consumers) == 1:
        return consumers, False, None
    n_calls = len(probe.norm_calls[path])
    mods = [modules[c] for c in consumers]
    last = _unique(u.where for u in uses if u.kind == "meta_last")
    why = []  # what keeps the siblings from one GEMM over their concatenated weights
    if (n_calls > 1 or len(gemm) != len(consumers)
            or any(len(probe.gemm_calls[c]) != 1 for c in consumers)):
        why.append("the norm or a consumer runs more than once per forward")
    if any(u.via_view for u in gemm):
        why.append("consumers read row views")
    if last:
        why.append(f"the width x.shape[-1] is read in {', '.join(last[:2])}")
    if (len({is_conv1d(m) for m in mods}) != 1
            or len({(m.weight.dtype, m.weight.device) for m in mods}) != 1):
        why.append("the consumers differ in kind, dtype or device")
    copied = [(c, probe.gemm_copied[c]) for c in consumers if c in probe.gemm_copied]
    if copied:
        c, where = copied[0]
        if not why and split:  # one GEMM, each output its own tensor
            return consumers, SplitForm(f"the output of {_show_path(c)} is made contiguous in "
                                        f"{where}"), None
        why.append(f"the output of {_show_path(c)} is made contiguous in {where} (as a column "
                   f"slice of one GEMM's output it would be copied there, as Liger's RoPE does)")
    return consumers, "; ".join(why) or True, None


class SplitForm(str):
    """`_pre_decision`'s answer for siblings that can run as one GEMM except that a consumer
    makes its output contiguous: the split form (one GEMM, an output tensor per consumer; the
    string says which consumer)."""


def _untouchable(m: nn.Module) -> str:
    """Why replacing (or bypassing) m would lose behaviour attached to it; "" if nothing is."""
    if "forward" in m.__dict__:
        return ("has its forward replaced on the instance (accelerate's hooks?), which a rewrite "
                "would drop")
    if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks:
        return "has module hooks, which a rewrite would drop"
    return ""


def _untouchable_dropouts(caller: nn.Module, found: dict) -> str:
    """Why a post-norm rewrite of `caller` would lose behaviour of a dropout it drops from the
    fused graph (hooks, a replaced forward); "" if none."""
    for _, drops in found.values():
        for d in drops:
            why = _untouchable(caller.get_submodule(d))
            if why:
                return f"{d} {why}"
    return ""


def _users(uses) -> str:
    descs = _unique(u.describe() for u in uses)
    more = f" and {len(descs) - 3} more" if len(descs) > 3 else ""
    return ", ".join(descs[:3]) + more


def _post_decision(path, probe):
    """(caller path, relative norm path, linear path, None) or (None, None, None, reason)."""
    calls = probe.norm_calls[path]
    callers = {c.caller for c in calls}
    if any(c.input_from is None for c in calls):
        return None, None, None, _not_from_gemm(calls, probe.model)
    if len(callers) != 1:
        return None, None, None, "it is called from several modules"
    caller = callers.pop()
    # the GEMMs reaching the norm's input in every call, called in the norm's caller's forward
    common = set(calls[0].input_from).intersection(*(c.input_from for c in calls[1:]))
    local = [g for g in calls[0].input_from if g in common
             and {gc.caller for gc in probe.gemm_calls.get(g, [])} == {caller}]
    if not local:
        lin = calls[0].input_from[-1]
        where = ", ".join(sorted({_disp(gc.caller) for gc in probe.gemm_calls.get(lin, [])}))
        return None, None, None, (f"its input comes from {lin}, called in {where}, but the norm "
                                  f"is called in {_disp(caller)}: both must run in one forward")
    lin = local[-1]
    modules = dict(probe.model.named_modules(remove_duplicate=False))
    for m in (caller, path, lin):
        why = _untouchable(modules[m])
        if why:
            return None, None, None, f"{_disp(m)} {why}"
    if caller and not path.startswith(caller + "."):
        return None, None, None, f"it is not a submodule of {_disp(caller)}, which calls it"
    rel = path[len(caller) + 1:] if caller else path
    return caller, rel, lin, None


def _not_from_gemm(calls, model) -> str:
    """Why a norm's input is no GEMM's output, in the user's terms: a view of one (a norm per
    head, Qwen3's q_norm over q_proj(h).view(..., heads, head_dim)) said so."""
    viewed = next((c for c in calls if c.input_view is not None), None)
    if viewed is None:
        return "its input is not produced by a GEMM"
    gemm, shape = viewed.input_view, viewed.shape
    n = gemm_weight(model.get_submodule(gemm)).shape[0]  # the GEMM's output features
    if shape[-1] < n and n % shape[-1] == 0:
        return (f"its input is {gemm}'s output viewed as [..., {n // shape[-1]}, {shape[-1]}]: a "
                f"norm over each {shape[-1]}-wide slice (per head) of the GEMM's {n} output "
                f"features, where the fused ops normalize whole output rows (per-head norms "
                f"after a GEMM are not fused yet)")
    return (f"its input is a view of {gemm}'s output (shape {list(shape)}), not the output "
            f"itself")


def _deferred_decision(path, spec, probe, modules):
    """(the GEMM whose own output is the norm's whole input and nothing else's, None) or
    (None, reason or None when the norm's input is no GEMM's output)."""
    calls = probe.norm_calls[path]
    lins = {c.input_raw for c in calls}
    if None in lins or len(lins) != 1:
        return None, None
    lin = lins.pop()
    uses = probe.gemm_uses.get(lin, [])
    bad = [u for u in uses if not (u.kind == "meta" or (u.kind == "other" and u.target == path))]
    if bad:
        return None, f"the output of {lin} is also used by {_users(bad)}"
    if len(probe.gemm_calls.get(lin, [])) != len(calls):
        return None, f"{lin} and the norm run a different number of times"
    if gemm_weight(modules[lin]).shape[0] != spec.features:
        return None, f"{lin} has not the norm's {spec.features} output features"
    for m in (path, lin):
        why = _untouchable(modules[m])
        if why:
            return None, f"{_disp(m)} {why}"
    return lin, None


def _sibling_decision(path, probe, modules, taken):
    """(member paths in call order, None) when several GEMMs read the norm's whole output once
    each and can run as one GEMM; (None, why) when several read it but cannot; (None, None)
    when fewer than two GEMMs read it."""
    gemm = [u for u in probe.uses.get(path, []) if u.kind == "gemm"]
    consumers = _unique(u.what for u in gemm)
    if len(consumers) < 2:
        return None, None
    if any(u.via_view for u in gemm):
        return None, "they read it through row views"
    if (len(probe.norm_calls.get(path, [])) != 1 or len(gemm) != len(consumers)
            or any(len(probe.gemm_calls.get(c, [])) != 1 for c in consumers)):
        return None, "the norm or a GEMM runs more than once per forward"
    for c in consumers:
        if c in taken:
            return None, f"{c} is fused with the norm {taken[c]}"
        if any(gc.origin != path for gc in probe.gemm_calls[c]):
            return None, f"{c} also reads other inputs"
        why = _untouchable(modules[c])
        if why:
            return None, f"{c} {why}"
        if c in probe.gemm_copied:
            return None, (f"the output of {_show_path(c)} is made contiguous in "
                          f"{probe.gemm_copied[c]} (a column slice would be copied there)")
    mods = [modules[c] for c in consumers]
    ws = [gemm_weight(m) for m in mods]
    if (len({is_conv1d(m) for m in mods}) != 1 or len({(w.dtype, w.device) for w in ws}) != 1
            or not ws[0].is_floating_point()):
        return None, "the GEMMs differ in kind, dtype or device"
    order = {g: i for i, g in enumerate(probe.gemm_calls)}
    return sorted(consumers, key=lambda c: order[c]), None


def _disp(path: str) -> str:
    return f"'{path}'" if path else "the model"


# ---------------------------------------------------------------------------------------------
# Check
# ---------------------------------------------------------------------------------------------

def _rel_errors(ref, out) -> tuple[float, float]:
    """(largest relative Frobenius error over the output tensors scaled so that 1.0 is the
    tolerance of their dtype, the largest unscaled one); inf when the structure differs."""
    inf = (float("inf"), float("inf"))
    rt, ot = _flat_tensors(ref), _flat_tensors(out)
    if len(rt) != len(ot):
        return inf
    worst, raw = 0.0, 0.0
    for a, b in zip(ot, rt):
        if a.shape != b.shape or a.dtype != b.dtype:
            return inf
        if not b.is_floating_point():
            if not torch.equal(a, b):
                return inf
            continue
        a64, b64 = a.detach().double(), b.detach().double()
        den = torch.linalg.vector_norm(b64).item()
        err = torch.linalg.vector_norm(a64 - b64).item() / (den if den > 0 else 1.0)
        if err != err:
            return inf
        worst = max(worst, err / CHECK_TOL.get(b.dtype, CHECK_TOL_LOW))
        raw = max(raw, err)
    return worst, raw


def _fresh(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The example inputs for one more forward: what a forward may change in place (a
    transformers cache grows with every forward) deep-copied, the tensors among the arguments
    shared; plain tensor and scalar arguments as they are."""
    plain = (torch.Tensor, int, float, bool, str, type(None))
    if all(isinstance(a, plain) for a in (*args, *kwargs.values())):
        return args, kwargs
    memo = {id(t): t for t in _flat_tensors((args, kwargs))}
    return copy.deepcopy((args, kwargs), memo)


def _run(model, args, kwargs, grad: bool):
    args, kwargs = _fresh(args, kwargs)
    with torch.set_grad_enabled(grad):
        return model(*args, **kwargs)


def _check(model, args, kwargs, ref, grad: bool) -> tuple[float, str | None]:
    """(largest relative error, None) or (error, what went wrong)."""
    worst = 0.0
    for g in ((False, True) if grad else (False,)):
        try:
            out = _run(model, args, kwargs, g)
        except Exception as e:  # noqa: BLE001 - reported to the user
            return float("inf"), f"the optimized model raised {type(e).__name__}: {str(e)[:200]}"
        scaled, raw = _rel_errors(ref, out)
        if scaled > 1.0:
            what = "with grad" if g else "under no_grad"
            return raw, f"the output changed {what} (relative error {raw:.3g})"
        worst = max(worst, raw)
    return worst, None


# ---------------------------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------------------------

def _example(model: nn.Module, example_inputs) -> tuple[tuple, dict]:
    if example_inputs is None:
        cfg = getattr(model, "config", None)
        vocab = getattr(cfg, "vocab_size", None)
        if cfg is None or vocab is None:
            raise TypeError(f"normfuse.optimize: example_inputs is required for a "
                            f"{type(model).__name__} (inputs are derived only for transformers "
                            f"models with a config.vocab_size)")
        try:
            dev = next(model.parameters()).device
        except StopIteration:
            dev = torch.device("cpu")
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, min(int(vocab), 1000), (1, 8), generator=g).to(dev)
        kw = {"input_ids": ids}
        if getattr(cfg, "is_encoder_decoder", False):
            kw["decoder_input_ids"] = ids
        return (), kw
    if isinstance(example_inputs, dict):
        return (), dict(example_inputs)
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,), {}
    return tuple(example_inputs), {}


def optimize(model: nn.Module, example_inputs=None, *, report: bool = False, check: bool = True,
             include=None, exclude=None, train: str = "composed", standalone: bool = True,
             split_siblings: bool | None = None):
    """Rewrite `model` in place so that every norm with a GEMM on either side runs fused.

    example_inputs: a tuple of positional arguments or a dict of keyword arguments for one
    forward (tiny is fine); None derives `input_ids` [1, 8] for transformers models.
    report: also return the OptimizeReport (matches and refusals; str() is a table).
    check: run the example through the model before and after; a rewrite that changes the
    output beyond bf16 tolerance (fp32 outputs: 1e-3) or raises is reverted and reported.
    include / exclude: glob patterns (or lists of them) on the norms' module paths.
    train: the training plan (grad mode on and something requiring grad): "composed" (the
    default: the original norms and plain GEMMs) or "fused" (the fused training ops); see the
    module docstring. Inference is fused either way; `set_train_plan` changes it later.
    standalone: a recognized norm that no GEMM takes (the report's refusals: Llama's final norm,
    BERT's embedding LayerNorm) runs the standalone norm op (`ops.rms_norm` / `layer_norm`: one
    kernel each way) where it computes the module's function, in eager on an sm_90 GPU for 16-bit
    tensors (nn.fused.StandaloneNorm; its own forward elsewhere); False leaves those modules as
    they are.
    split_siblings: sibling GEMMs whose outputs a user makes contiguous (Liger's RoPE / SwiGLU)
    run in eager inference as one GEMM with an output tensor per GEMM (`ops.rmsnorm_linear_split`)
    instead of one fused GEMM each; None: the NORMFUSE_SPLIT_SIBLINGS default (on: faster on the
    H200 in every measured group, nn.fused.SPLIT_SIBLINGS).

    Returns the model (the same object), or (model, report).
    """
    check_train_plan(train)
    split = _fused.SPLIT_SIBLINGS if split_siblings is None else bool(split_siblings)
    args, kwargs = _example(model, example_inputs)
    include, exclude = _patterns(include), _patterns(exclude)
    rep = OptimizeReport(train_plan=train)
    modes = {p: m.training for p, m in model.named_modules(remove_duplicate=False)}
    model.eval()
    try:
        probe = Probe(model)
        try:
            ref = probe.run(*_fresh(args, kwargs))
        except Exception as e:
            raise RuntimeError(f"normfuse.optimize: the model's forward on the example inputs "
                               f"raised {type(e).__name__}: {e}") from e
        groups, unfused = _decide(model, probe, include, exclude, rep, train, split)
        for g in groups:
            g.apply(model)
        if check and groups:
            grad = any(p.requires_grad for p in model.parameters())
            _check_groups(model, groups, args, kwargs, ref, grad, rep)
        else:
            for g in groups:
                rep.matches.extend(_matches(g))
        rep.siblings = [g.describe() for g in groups
                        if isinstance(g, _SiblingGroup) and g.applied]
        if standalone:
            for path, mod, spec in unfused:
                own = mod.__dict__.get("forward")
                if own is not None and not isinstance(own, StandaloneNorm):
                    continue  # a forward set on the instance (accelerate's hooks?): kept
                if own is None:
                    mod.forward = StandaloneNorm(mod, spec)
                rep.standalone.append(path)
    finally:
        for p, m in model.named_modules(remove_duplicate=False):
            if p in modes:
                m.training = modes[p]
                orig = m.__dict__.get("_original")  # a fused norm's original module
                if orig is not None:
                    orig.training = modes[p]
    order = {p: i for i, p in enumerate(modes)}
    rep.matches.sort(key=lambda m: order.get(m.norm, len(order)))
    rep.refusals.sort(key=lambda r: order.get(r.module, len(order)))
    log.info(rep.summary())
    return (model, rep) if report else model


def _decide(model, probe, include, exclude, rep, train="composed", split: bool = False):
    modules = dict(model.named_modules(remove_duplicate=False))
    specs = _recognize_all(model, probe, include, exclude, rep)
    groups, post, deferred = [], {}, []
    unfused = []  # (path, module, spec): recognized, no GEMM takes it (StandaloneNorm)
    for path, spec in specs.items():
        mod = modules[path]
        consumers, packed, pre_why = _pre_decision(path, spec, probe, modules, split)
        if consumers is not None:
            is_split = isinstance(packed, SplitForm)
            not_packed = packed if isinstance(packed, str) and not is_split else ""
            g = _PreGroup(path, mod, spec, [(c, modules[c]) for c in consumers], packed is True,
                          train)
            g.not_packed = not_packed
            g.split = packed if is_split else None
            notes = []
            if any(u.via_view for u in probe.uses.get(path, []) if u.kind == "gemm"):
                notes.append("read through row views")
            g.match = Match(path, type(mod).__name__, spec, "pre", consumers, _pre_plan(g),
                            "; ".join(notes))
            groups.append(g)
            continue
        caller, rel, lin, post_why = _post_decision(path, probe)
        if caller is None:
            lin, why = _deferred_decision(path, spec, probe, modules)
            if lin is not None:
                deferred.append((path, mod, spec, lin, pre_why))
                continue
            unfused.append((path, mod, spec))
            rep.refusals.append(_refusal(path, mod, spec, pre_why, why or post_why))
            continue
        post.setdefault(caller, []).append((path, rel, lin, spec, mod, pre_why))
    taken = {c: g.norm_path for g in groups for c, _ in g.consumers}

    def defer(path, mod, spec, lin, pre_why, note=""):
        """The norm runs its GEMM `lin` (DeferredLinear + NormAfterLinear), or its refusal."""
        if lin in taken:
            unfused.append((path, mod, spec))
            rep.refusals.append(_refusal(path, mod, spec, pre_why, f"its GEMM {lin} already "
                                         f"takes the pre-norm {taken[lin]}"))
            return
        g = _DeferredGroup(path, mod, spec, lin, modules[lin], train)
        notes = [f"not pre-norm: {pre_why}"] + ([note] if note else [])
        esc = _unique(probe.escapes.get(lin, []))
        if esc:
            notes.append(f"{lin}'s output is returned by {', '.join(_disp(e) for e in esc[:2])}: "
                         f"called alone, that module now returns the GEMM's input")
        op = f"linear_{'rms' if spec.kind == 'rms' else 'layer'}norm"
        g.matches = [Match(path, type(mod).__name__, spec, "post", [lin],
                           f"{op}: {lin} hands on its input, the norm runs the GEMM",
                           notes="; ".join(notes),
                           train=("composed: the GEMM, then the norm" if train == "composed"
                                  else f"fused: {op} training op"))]
        groups.append(g)

    for path, mod, spec, lin, pre_why in deferred:
        defer(path, mod, spec, lin, pre_why)
    for caller in list(post):
        keep = []
        for item in post[caller]:
            path, rel, lin, spec, mod, pre_why = item
            if lin in taken:  # a GEMM with a norm on each side: one of them only
                unfused.append((path, mod, spec))
                rep.refusals.append(_refusal(path, mod, spec, pre_why,
                                             f"its GEMM {lin} already takes the pre-norm "
                                             f"{taken[lin]}"))
            else:
                keep.append(item)
        post[caller] = keep
    for caller, items in post.items():
        if not items:
            continue
        cmod = modules[caller] if caller else model
        try:
            a, kw = probe.calls[caller]
            # (each norm with the linear the probe saw reach it: the rewrite takes that one)
            fwd = build_post_forward(cmod, [(rel, spec, lin[len(caller) + 1:] if caller else lin)
                                            for _, rel, lin, spec, _, _ in items], a, kw)
            why = _untouchable_dropouts(cmod, fwd.found)
        except Exception as e:  # noqa: BLE001 - any failure of the rewrite: that caller's refusal
            why = str(e) if isinstance(e, PostNormFailure) else \
                f"the rewrite of {_disp(caller)}'s forward failed: {type(e).__name__}: {e}"
        if why:
            for path, _, _, spec, mod, pre_why in items:
                # a norm reading its GEMM's own output untouched (OLMo2's q_norm(q_proj(h)) in
                # a forward with **kwargs) needs no rewrite of the caller's forward
                lin, _ = _deferred_decision(path, spec, probe, modules)
                if lin is not None:
                    defer(path, mod, spec, lin, pre_why,
                          f"its GEMM's module hands on its input, {_disp(caller)} is not "
                          f"rewritten ({why})")
                    continue
                unfused.append((path, mod, spec))
                rep.refusals.append(_refusal(path, mod, spec, pre_why, why))
            continue
        found = fwd.found
        g = _PostGroup(caller, cmod, fwd, items, train)
        g.matches = []
        for path, rel, lin, spec, mod, pre_why in items:
            drops = found[rel][1]
            op = f"linear_{'rms' if spec.kind == 'rms' else 'layer'}norm"
            how = f"{op} in {_disp(caller)}'s forward"
            if drops:
                how += " (dropout: fused in eval or p=0)"
            if train == "composed":
                tr = "composed: the original forward (GEMM, residual, norm)"
            else:
                tr = f"fused: {op} training op" + (
                    " (the original forward while its dropout is active)" if drops else "")
            g.matches.append(Match(path, type(mod).__name__, spec, "post", [lin], how,
                                   notes=f"not pre-norm: {pre_why}", train=tr))
        groups.append(g)
    # GEMMs reading one norm's output that must exist anyway (not a pre-norm group's norm): one
    # GEMM over their concatenated weights in inference (BERT's query / key / value)
    pre_norms = {g.norm_path for g in groups if isinstance(g, _PreGroup)}
    for g in groups:
        if isinstance(g, _DeferredGroup):
            taken[g.lin_path] = g.norm_path
        elif isinstance(g, _PostGroup):
            for path, _, lin, *_ in g.norms:
                taken[lin] = path
    for path in specs:
        if path in pre_norms:
            continue
        members, why = _sibling_decision(path, probe, modules, taken)
        if members is not None:
            groups.append(_SiblingGroup(path, [(c, modules[c]) for c in members]))
            taken.update((c, path) for c in members)
        elif why:
            rep.siblings_not.append(f"{path or '(model)'}: {why}")
    return groups, unfused


def _pre_plan(g: _PreGroup) -> str:
    if len(g.consumers) == 1:
        return "fused into its GEMM"
    if g.packed:
        return f"one GEMM over the {len(g.consumers)} concatenated weights (inference)"
    if g.split is not None:
        return (f"one GEMM over the {len(g.consumers)} concatenated weights, an output tensor "
                f"per GEMM (eager inference; {g.split})")
    why = getattr(g, "not_packed", "")
    return f"fused into each of its {len(g.consumers)} GEMMs" + (f" ({why})" if why else "")


def _refusal(path, mod, spec, pre_why, post_why) -> Refusal:
    t = type(mod).__name__
    if pre_why.startswith("no GEMM") and post_why.startswith("its input is not produced"):
        users = pre_why[len("no GEMM reads its output"):].strip(" ()")
        return Refusal(path, t, f"{spec.title}: no GEMM consumer/producer"
                                + (f" ({users})" if users else ""), "-")
    fix = "the normalized tensor must exist for those users" if "also used" in pre_why else "-"
    return Refusal(path, t, f"{spec.title}: pre-norm: {pre_why}; post-norm: {post_why}", fix)


def _pre_train(g: _PreGroup) -> str:
    """How a pre-norm group trains, in words."""
    n = len(g.consumers)
    if g.train_plan == "fused":
        op = "rmsnorm_linear" if g.spec.kind == "rms" else "layernorm_linear"
        plan = f"(backward plan '{_bwd_plan(op)}')"
        if n == 1:
            return f"fused: {op} training op on its GEMM {plan}"
        if _fused.FUSED_TRAIN_SPLIT:
            return (f"fused: one {op} training op over its {n} weights eager, one per GEMM "
                    f"compiled {plan}")
        return f"fused: {op} training op on each of its {n} GEMMs {plan}"
    if n == 1:
        return "composed: the norm, then its GEMM"
    total = sum(gemm_weight(lin).shape[0] for _, lin in g.consumers)
    if _fused.COMPOSED_PACK and g.packed and total != g.spec.features:
        return f"composed: the norm; one GEMM over the {n} weights compiled, {n} GEMMs eager"
    return f"composed: the norm, then its {n} GEMMs"


def _matches(g) -> list[Match]:
    if isinstance(g, _PreGroup):
        g.match.train = _pre_train(g)
        return [g.match]
    return g.matches


def _check_groups(model, groups, args, kwargs, ref, grad, rep):
    """Keep the groups whose rewrite leaves the example's output within tolerance."""
    err, why = _check(model, args, kwargs, ref, grad)
    if why is None:
        rep.checked, rep.max_error = True, err
        for g in groups:
            rep.matches.extend(_matches(g))
        return
    # Something is off: undo everything, then add the groups back one at a time.
    for g in reversed(groups):
        g.revert(model)
    worst = 0.0
    for g in groups:
        g.apply(model)
        err, why = _check(model, args, kwargs, ref, grad)
        if why is not None and isinstance(g, _PreGroup) and (g.packed or g.split is not None):
            g.revert(model)
            g.set_packed(False)
            g.split = None
            g.apply(model)
            err, why2 = _check(model, args, kwargs, ref, grad)
            if why2 is None:
                g.match.plan = _pre_plan(g) + " (one GEMM failed the check: " + why + ")"
                why = None
        if why is None:
            worst = max(worst, err)
            rep.matches.extend(_matches(g))
            continue
        g.revert(model)
        if isinstance(g, _SiblingGroup):
            rep.siblings_not.append(f"{g.describe()}: reverted by the check: {why}")
        for m in _matches(g):
            rep.refusals.append(Refusal(m.norm, m.norm_type, f"{m.spec.title}: reverted by the "
                                        f"check: {why}", "report this model to normfuse"))
    rep.checked, rep.max_error = True, worst


def set_train_plan(model: nn.Module, plan: str) -> nn.Module:
    """Set the training plan of every fused group of an optimized model: "composed" (the
    original norms' forwards and plain GEMMs, one per consumer; post-norm forwards their
    original code) or "fused" (the fused training ops). Inference is fused either way. A compiled model recompiles once for the change (Dynamo guards on it).
    Returns the model."""
    check_train_plan(plan)
    for m in model.modules():
        if isinstance(m, (FusedNorm, NormAfterLinear)):
            m.train_plan = plan
        fwd = m.__dict__.get("forward")
        if isinstance(fwd, PostNormForward):
            fwd.train_plan = plan
    return model


def set_fused_training(model: nn.Module, enabled: bool) -> nn.Module:
    """The former switch, kept: `set_train_plan(model, "fused" if enabled else "composed")`."""
    return set_train_plan(model, "fused" if enabled else "composed")
