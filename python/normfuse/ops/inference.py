"""The inference ops as torch.library ops (torch.compile sees opaque ops with fake
implementations; the caches live inside the implementations, which dynamo does not trace):

    normfuse::prenorm_linear(Tensor x, Tensor? norm_weight, Tensor? norm_bias, Tensor[] weight,
                             Tensor?[] bias, float eps, float offset, bool is_ln, bool fold,
                             bool weight_kn=False)
        y = norm(x) (offset + g) [+ beta] @ [W_0; W_1; ...]^T + [b_0; b_1; ...]   [..., sum N_i]
    normfuse::prenorm_linear_split(... the same arguments ...) -> Tensor[]
        the same, each weight's columns a separate contiguous [..., N_i] tensor (one GEMM: the
        lowered kernel stores each tile into the member holding its columns)
    normfuse::postnorm_linear(Tensor x, Tensor weight, Tensor norm_weight, Tensor? norm_bias,
                              Tensor? bias, Tensor? residual, float eps, float offset, bool is_ln,
                              bool weight_kn=False)
        z = norm(x W^T + bias + residual) (offset + g) [+ beta]                     [..., N]

W is [N, K] (nn.Linear's); with weight_kn=True each weight is given as [K, N] (a Conv1D's) and
the op reads its transpose. That is for a compiled graph (the Inductor pass): a transpose made in
the graph reaches the op as a new alias of the parameter every call (no `_base`, its own version
counter), which the memos below cannot key unless the parameter was registered (by a normfuse
module: `alias_owner`); the parameter itself is keyed by its identity (with the flag), and its
transpose is made only when a call resolves. (On the H200, 2026-12-02, GPT-2's pass-compiled
prefill spent 3.3 ms of host per forward against 2.2 ms with optimize's modules, whose Conv1D
weights are registered.)

No autograd formula is registered for them (an autograd kernel in Python costs ~17 us per call
even under no_grad): the public functions (normfuse.ops.functional) take the training ops of
normfuse.ops.training under autograd; called directly with tensors that require grad, their
backward raises torch's "not implemented" error.

One implementation for CPU and CUDA tensors:
- where the fused kernels do not run (`fused_unavailable`: CPU, a GPU other than sm_90, or a
  dtype other than bf16/fp16) the reference path (normfuse.ops.fallback), validated every call,
  with the one FallbackWarning;
- else the fused launch. The effective weights (siblings joined, the norm scale folded, unit
  stride along K, offset applied) are resolved once per set of weight tensors and their
  versions: a memo keyed by the tensors' identity, checked by version counter and address (an
  optimizer step, load_state_dict, in-place writes under no_grad, `param.data = new_tensor` and
  `model.to(...)` are all seen; writes through `param.data` (`p.data.copy_(...)`) are not:
  torch does not count them in the parameter's version, so after those call
  `normfuse.ops.clear_caches()`), over
  the derived-weight cache keyed by storage (normfuse.ops.common.WEIGHTS). Validation runs when
  the memo or the launch plan misses. A call that resolved and planned leaves a launch-ready
  call (`_PreCall` / `_PostCall`) keyed by everything the resolution and the plan depend on: x's
  shape, strides, dtype, device and 16-byte alignment (the residual's too), the op's scalars and
  the weight tensors' identity, checked by the weight tensors' versions and addresses as the
  memo is. A call that hits one allocates the output and launches the plan with the new
  pointers (about 2 us of Python on the CPU machine; the launch itself goes to Triton's C
  launch function with cached tensor maps, normfuse.direct_launch).
- The public functions (normfuse.ops.functional) call these implementations directly in eager
  mode when the dispatcher would add nothing (no compile, tracing, mode or functorch transform,
  plain tensors): the op call itself costs ~5 us of host time.

Inference under CUDA-graph capture (warm up with one eager call first: compilation and plans are
made outside the capture): the derived weights are taken from the caches as they are at capture
and kept alive for the graph (normfuse.ops.clear_caches() releases them, after the graphs are
destroyed); a replay reads them, not the parameters. After changing weights in place, a replay
still reads the derived weights of capture time: re-capture after an eager call (which
refreshes the caches), or capture with fold=False and unit-stride, non-sibling weights (then the
kernels read the parameters themselves). Nothing is stored in the caches during capture (a
derived weight first computed inside a capture is recomputed by every replay; no launch-ready
call is made there). The tensor maps of a launch are 128-byte values copied into the kernel's
parameters, which a graph captures by value: their cache holds nothing a graph reads. The training
ops cache nothing derived from weights: a captured training step reads the weights as they are
at each replay.
"""
from __future__ import annotations

import functools
import os
import weakref
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from . import fallback
from .common import (FUSED_DTYPES, WEIGHTS, alias_owner, capturing, check_kn, check_postnorm,
                     check_prenorm, fused_unavailable, pin_for_capture, register_clear,
                     register_weights, warn_fallback)
from .postnorm_linear import (LOWERED_POSTNORM, _postnorm_2d, launch_postnorm,
                              on_clear_postnorm_plans, postnorm_plan_made)
from .prenorm_linear import (_as_2d, _joined, _offset_weight, _unit_k, fold_norm,
                             launch_prenorm, launch_prenorm_split, prenorm_plan_made,
                             split_plan_made, weights_key)

__all__ = ["route", "prenorm_linear", "prenorm_linear_split", "postnorm_linear", "postnorm_plan",
           "POSTNORM_FUSED_MIN_ROWS"]

_LIB = torch.library.Library("normfuse", "FRAGMENT")
_LIB.define("prenorm_linear(Tensor x, Tensor? norm_weight, Tensor? norm_bias, Tensor[] weight, "
            "Tensor?[] bias, float eps, float offset, bool is_ln, bool fold, bool weight_kn=False) "
            "-> Tensor")
_LIB.define("prenorm_linear_split(Tensor x, Tensor? norm_weight, Tensor? norm_bias, "
            "Tensor[] weight, Tensor?[] bias, float eps, float offset, bool is_ln, bool fold, "
            "bool weight_kn=False) -> Tensor[]")
_LIB.define("postnorm_linear(Tensor x, Tensor weight, Tensor norm_weight, Tensor? norm_bias, "
            "Tensor? bias, Tensor? residual, float eps, float offset, bool is_ln, "
            "bool weight_kn=False) -> Tensor")


def route(op: str, x: Tensor) -> bool:
    """True: the fused kernels run for x; False: the reference path (warned once)."""
    why = fused_unavailable(x.device)
    if why is None and x.dtype not in FUSED_DTYPES:
        why = f"x is {x.dtype}; the fused kernels take bfloat16 or float16"
    if why is None:
        return True
    warn_fallback(op, why)
    return False


class _Memo(dict):
    """Values by the identity of the tensors they came from. An entry holds weak references to
    the tensors and their versions and addresses when it was made; it goes when one of the
    tensors is collected (its derived weights with it). `srcs` may hold None (no tensor there:
    the key must then say so, e.g. by id(None))."""

    SIZE = 4096

    def lookup(self, key, srcs):
        hit = self.get(key)
        if hit is None:
            return None
        for i, r, version, address in hit[0]:  # the tensors (not the None entries)
            t = srcs[i]
            if r() is not t or t._version != version or t.data_ptr() != address:
                return None
        return hit[1]  # (entries are only made for tensors with a version counter)

    @staticmethod
    def stamp(srcs):
        """The tensors' versions and addresses, or None when an entry must not be made: under
        capture (what is resolved there lives in the graph's pool), or for a tensor without a
        version counter (made under inference mode: never trusted)."""
        try:
            stamp = tuple(None if t is None else (t._version, t.data_ptr()) for t in srcs)
        except RuntimeError:
            return None
        return None if capturing() else stamp

    def store(self, key, srcs, value, stamp=None) -> None:
        stamp = stamp or self.stamp(srcs)
        if stamp is None:
            return
        if len(self) >= self.SIZE:
            self.clear()
        drop = functools.partial(_drop, weakref.ref(self), key)
        self[key] = (tuple((i, weakref.ref(t, drop), *st) for i, (t, st) in
                           enumerate(zip(srcs, stamp)) if t is not None), value)


def _watched(srcs, aliases: bool = False):
    """(key, anchors, tensors) for the memos. A tensor is keyed by its identity, except
    - a view (`t._base` set): keyed by its base's identity and its geometry (storage offset,
      shape, strides), watched through its base. A view made afresh every call (a Conv1D's
      `weight.t()`) thus finds the entry its first call made, instead of missing every call
      (and resolving and planning again: ~0.2 ms of host time per call, measured on GPT-2's
      Conv1D on the H200, 2026-12-01);
    - an alias of a registered weight (common.alias_owner: a compiled graph's reinterpretation
      of a parameter, new every call, no `_base`, its own version counter): keyed and watched as
      a view of its owner, and replaced in `tensors` (`_Owned.tensors()`, on a miss only) by a
      true view of the owner (same memory and geometry), so that what is derived from it is
      keyed by the owner's version counter.
      Looked for only with `aliases` (the ops look a call up by identity first, and for
      aliases only when that misses: the eager hit path pays nothing for them).
    The version counter watched is the base's / owner's, the address the base's / owner's: a
    write through any view, `param.data = ...` and `.to()` are seen as before."""
    if not aliases:  # no view among them (the common case): the identities themselves
        for t in srcs:
            if t is not None and t._base is not None:
                break
        else:
            return tuple(map(id, srcs)), srcs, srcs
    key, anchors, owned = [], [], None
    for i, t in enumerate(srcs):
        if t is None:
            key.append(id(t))
            anchors.append(t)
            continue
        b = t._base
        if b is None:
            o = None
            if aliases:
                try:
                    o = alias_owner(t)
                except RuntimeError:  # no storage: the checks say what is wrong
                    pass
            if o is None:
                key.append(id(t))
                anchors.append(t)
                continue
            if owned is None:
                owned = []
            owned.append((i, o))
            b = o
        key.append((id(b), t.storage_offset(), t.shape, t.stride()))
        anchors.append(b)
    return tuple(key), tuple(anchors), srcs if owned is None else _Owned(srcs, owned)


class _Owned(tuple):
    """`srcs` with each alias to be replaced by a view of its owner (`_watched`), made only
    when asked (`tensors()`): a call found in the launch-ready memo never needs them, and an
    `as_strided` view costs a few microseconds per alias and call."""

    def __new__(cls, srcs, owned):
        self = super().__new__(cls, srcs)
        self.owned = owned
        return self

    def tensors(self) -> tuple:
        out = list(self)
        for i, o in self.owned:
            t = out[i]
            out[i] = o.as_strided(t.shape, t.stride(), t.storage_offset())
        return tuple(out)


def _find(calls: "_Memo", head, given: tuple):
    """(call, ckey, wkey, anchors, tensors) for a call whose x (and residual) key is `head` (None:
    no storage to key on) and whose weight tensors are `given`: the launch-ready call found by
    the tensors' identity (the eager hit path), else by their owners where some are a compiled
    graph's aliases (`_watched`); call None on a miss, with the keys a new call is stored under
    and `tensors`, `given` with the aliases replaced by views of their owners."""
    wkey, srcs, _ = _watched(given)
    if head is not None:
        call = calls.lookup((*head, wkey), srcs)
        if call is not None:
            return call, None, None, None, None
    wk, sr, ts = _watched(given, aliases=True)
    if ts is not given:
        wkey, srcs = wk, sr
        if head is not None:
            call = calls.lookup((*head, wkey), srcs)
            if call is not None:
                return call, None, None, None, None
        ts = ts.tensors()
    return None, None if head is None else (*head, wkey), wkey, srcs, ts


def _drop(memo_ref, key, _dead) -> None:
    memo = memo_ref()
    if memo is not None:
        memo.pop(key, None)


_PRE_MEMO = _Memo()
_POST_MEMO = _Memo()
# Launch-ready calls (`_PreCall`, `_PostCall`) by x's geometry (shape, strides, dtype, device,
# 16-byte alignment), the op's scalars and the weight tensors' identity, checked by the weight
# tensors' versions and addresses: a call that hits one allocates the output and launches the
# plan, skipping routing, the memo and the plan key. Made after a CUDA call that resolved and
# planned (as the memo: not during capture, not for tensors without a version counter).
_PRE_CALLS = _Memo()
_POST_CALLS = _Memo()
_SPLIT_CALLS = _Memo()


def clear_memos() -> None:
    """Drop the resolved weights and launch-ready calls (normfuse.ops.clear_caches())."""
    for m in (_PRE_MEMO, _POST_MEMO, _PRE_CALLS, _POST_CALLS, _SPLIT_CALLS):
        m.clear()


register_clear(clear_memos)
# the launch-ready post-norm calls hold plans: they go with them (a changed LOWERED_POSTNORM)
on_clear_postnorm_plans(_POST_CALLS.clear)


class _PreCall:
    """One pre-norm call's launch, resolved (the weights the kernel reads, the plan, the
    output's shape): `call(x)` for an x of the geometry it was made for."""
    __slots__ = ("plan", "pre", "post", "pins", "m", "n", "view", "as_is")

    def __init__(self, plan, kind, x, w, g, beta, b):
        self.plan = plan
        self.pre = (w if g is None else g, w) if kind == "rms" else \
            (w if g is None else g, w if beta is None else beta, w)
        self.post = (w if b is None else b,)
        self.pins = (w, g, beta, b)
        self.m, self.n = x.numel() // x.shape[-1], w.shape[0]
        self.view = None if x.dim() == 2 else (*x.shape[:-1], self.n)
        # a [M, K] x with unit column stride, or a contiguous [..., K] one, goes to the launch
        # as it is (see _PostCall); its strides are part of the call's key
        self.as_is = (x.dim() == 2 and x.stride(1) == 1) or x.is_contiguous()

    def __call__(self, x):
        pin_for_capture(*self.pins)
        if self.as_is:  # see _PostCall: the launch reads x and y by address only
            # (x's dtype and device; the sizes as separate ints: a size tuple costs more)
            y = x.new_empty(self.m, self.n) if self.view is None else x.new_empty(self.view)
            self.plan.run((x, *self.pre, y, *self.post))
            return y
        y = x.new_empty(self.m, self.n)
        self.plan.run((_as_2d(x), *self.pre, y, *self.post))
        return y if self.view is None else y.view(self.view)  # (None: a strided 2-D x)


class _SplitCall(_PreCall):
    """One split pre-norm call's launch, resolved (`_PreCall`'s, with the members' widths):
    `call(x)` returns the members, contiguous [..., N_i] tensors (the plan reads [M, N_i] views
    of them)."""
    __slots__ = ("widths", "lead", "slices")

    def __init__(self, plan, kind, x, w, g, beta, b, widths):
        super().__init__(plan, kind, x, w, g, beta, b)
        self.widths, self.lead = tuple(widths), tuple(x.shape[:-1])
        # the fallback's member slices of w and b, made once (SplitPlan.member_slices)
        self.slices = plan.member_slices((*self.pre, w, *self.post))

    def __call__(self, x):
        pin_for_capture(*self.pins)
        lead, m = self.lead, self.m
        outs = [x.new_empty((*lead, n)) for n in self.widths]
        flat = outs if len(lead) == 1 else [o.view(m, n) for o, n in zip(outs, self.widths)]
        self.plan.run((x if self.as_is else _as_2d(x), *self.pre, flat[0], *self.post), flat,
                      self.slices)
        return outs


class _PostCall:
    """One post-norm call's launch, resolved (as `_PreCall`): `call(x, residual)`."""
    __slots__ = ("plan", "w", "pre", "mid", "pins", "m", "n", "view", "as_is")

    def __init__(self, plan, kind, x, w, g, beta, b, residual):
        self.plan, self.w = plan, w
        self.pre = (w, w if b is None else b)
        self.mid = (g,) if kind == "rms" else (g, beta)
        self.pins = (w, g, beta, b)
        self.m, self.n = x.numel() // x.shape[-1], w.shape[0]
        self.view = None if x.dim() == 2 else (*x.shape[:-1], self.n)
        # [M, K] / [M, N] operands with unit column stride, or contiguous x and residual (a
        # BERT block's [B, T, K] and [B, T, N]), go to the launch as they are, and the output is
        # allocated in its final shape: the launch reads a tensor only by its address (the plan
        # holds the [M, K] / [M, N] geometry: TmaArg, the tensor maps), so the three views a
        # call made cost ~4 us of host for nothing; their strides are part of the call's key
        plain = x.dim() == 2 and x.stride(1) == 1 and (
            residual is None or (residual.dim() == 2 and residual.stride(1) == 1))
        self.as_is = plain or (x.is_contiguous() and (residual is None
                                                       or residual.is_contiguous()))

    def __call__(self, x, residual):
        pin_for_capture(*self.pins)
        if self.as_is:
            y = x.new_empty(self.m, self.n) if self.view is None else x.new_empty(self.view)
            self.plan.run((x, *self.pre, self.w if residual is None else residual, *self.mid, y))
            return y
        x2, r2 = _postnorm_2d(x, self.w, residual)
        y = x.new_empty(self.m, self.n)
        self.plan.run((x2, *self.pre, self.w if r2 is None else r2, *self.mid, y))
        return y if self.view is None else y.view(self.view)  # (None: 2-D, strided operands)


def _kn(w: Tensor) -> Tensor:
    """A weight given as [K, N] (weight_kn=True), as the [N, K] view the op reads."""
    check_kn("normfuse", w)
    return w.t()


def _vec(t: Optional[Tensor]) -> Optional[Tensor]:
    if t is None or t.is_contiguous():
        return t
    return WEIGHTS.get("contiguous", (t,), None, t.contiguous)


# ---------------------------------------------------------------------------------------------
# normfuse::prenorm_linear
# ---------------------------------------------------------------------------------------------

def _resolve_pre(op, x, g, beta, ws, bs, offset, is_ln, fold):
    """(w [N, K] unit-K, g, beta, bias) for the kernel, from the user's tensors (checked)."""
    check_prenorm(op, x, tuple(ws), None if all(b is None for b in bs) else tuple(bs),
                  {"norm_weight": g, "norm_bias": beta} if is_ln else {"norm_weight": g},
                  fused=True)
    weight = ws[0] if len(ws) == 1 else ws
    bias = bs[0] if len(bs) == 1 else (None if all(b is None for b in bs) else bs)
    w, bias = _joined(weight, bias)
    if fold and (g is not None or beta is not None):
        w, bias = fold_norm(w, g, beta, bias, offset)
        g = beta = None
    elif g is not None:
        g = _offset_weight(g, offset)
    w, g, beta, bias = _unit_k(w), _vec(g), _vec(beta), _vec(bias)
    return w, g, beta, bias, x.shape[-1], x.dtype, x.device, weights_key(w, g, beta, bias)


def _pre_head(x, eps, offset, is_ln, fold, weight_kn=False):
    """The pre-norm launch-ready call's key before the weights' (None: x has no storage, e.g.
    sparse; the checks say what is wrong)."""
    try:
        return (x.shape, x.stride(), x.dtype, x.device, x.data_ptr() & 15, eps, offset, is_ln,
                fold, weight_kn)
    except RuntimeError:
        return None


def prenorm_linear(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold,
                   weight_kn=False):
    return _prenorm(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold, weight_kn,
                    False)


def prenorm_linear_split(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold,
                         weight_kn=False):
    return _prenorm(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold, weight_kn,
                    True)


def _prenorm(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold, weight_kn,
             split: bool):
    """normfuse::prenorm_linear (`split` False: one [..., sum N_i] output) and
    prenorm_linear_split (a contiguous [..., N_i] output per weight)."""
    calls = _SPLIT_CALLS if split else _PRE_CALLS
    given = (norm_weight, norm_bias, *weight, *bias)
    # (weight_kn: the calls and the memo are keyed by the [K, N] tensors themselves, with the
    # flag; their transposes are made on a miss only)
    call, ckey, wkey, srcs, ts = _find(calls, _pre_head(x, eps, offset, is_ln, fold, weight_kn),
                                       given)
    if call is not None:
        return call(x)
    if ts is not given:  # an alias of a registered weight: read through a view of its owner
        n = len(weight)
        norm_weight, norm_bias, weight, bias = ts[0], ts[1], list(ts[2:2 + n]), list(ts[2 + n:])
    if weight_kn:
        weight = [_kn(w) for w in weight]
    op = "layernorm_linear" if is_ln else "rmsnorm_linear"
    widths = tuple(w.shape[0] for w in weight)
    if not route(op, x):
        check_prenorm(op, x, tuple(weight), None if all(b is None for b in bias) else tuple(bias),
                      {"norm_weight": norm_weight, "norm_bias": norm_bias}, fused=False)
        y = fallback.prenorm_linear(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln)
        return [t.contiguous() for t in y.split(widths, -1)] if split else y
    register_weights(*srcs)  # (a compiled graph's aliases of them are then known)
    key = (*wkey, offset, is_ln, fold, weight_kn)
    r = _PRE_MEMO.lookup(key, srcs)
    if r is None or x.shape[-1] != r[4] or x.dtype != r[5] or x.device != r[6]:
        r = _resolve_pre(op, x, norm_weight, norm_bias, weight, bias, offset, is_ln, fold)
        _PRE_MEMO.store(key, srcs, r)
    w, g, beta, b = r[:4]
    pin_for_capture(w, g, beta, b)
    kind = "ln" if is_ln else "rms"
    if split:
        y = launch_prenorm_split(op, kind, x, w, g, beta, b, eps, widths, r[7])
    else:
        y = launch_prenorm(op, kind, x, w, g, beta, b, eps, r[7])
    stamp = calls.stamp(srcs) if ckey is not None else None
    if stamp is not None:
        plan = (split_plan_made(kind, x, eps, r[7], widths) if split
                else prenorm_plan_made(kind, x, eps, r[7]))
        if plan is not None:
            calls.store(ckey, srcs, _SplitCall(plan, kind, x, w, g, beta, b, widths) if split
                        else _PreCall(plan, kind, x, w, g, beta, b), stamp)
    return y


def pre_call(x, norm_weight, norm_bias, weight, bias, eps, offset=0.0, is_ln=False, fold=True,
             weight_kn=False):
    """The launch-ready call `prenorm_linear` keeps for these arguments (as it keys it), or None:
    for the host benchmarks and tests that time or inspect the layers below the op."""
    return _find(_PRE_CALLS, _pre_head(x, eps, offset, is_ln, fold, weight_kn),
                 (norm_weight, norm_bias, *weight, *bias))[0]


def _one_device(op: str, named: dict) -> None:
    """The fake implementations' check (a mix of devices would otherwise pass under FakeTensor
    and meta dispatch); the real ones check everything."""
    given = {n: t for n, t in named.items() if t is not None}
    if len({t.device for t in given.values()}) > 1:
        raise ValueError(f"{op}: all tensors must be on one device, got "
                         + ", ".join(f"{n} on {t.device}" for n, t in given.items()))


def _prenorm_fake(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold,
                  weight_kn=False):
    if weight_kn:
        weight = [_kn(w) for w in weight]
    _one_device("layernorm_linear" if is_ln else "rmsnorm_linear",
                {"x": x, "norm_weight": norm_weight, "norm_bias": norm_bias,
                 **{f"weight[{i}]" if len(weight) > 1 else "weight": w
                    for i, w in enumerate(weight)},
                 **{f"bias[{i}]" if len(bias) > 1 else "bias": b for i, b in enumerate(bias)}})
    n = sum(w.shape[0] for w in weight)
    return x.new_empty((*x.shape[:-1], n))


_LIB.impl("prenorm_linear", prenorm_linear, "CPU")
_LIB.impl("prenorm_linear", prenorm_linear, "CUDA")
torch.library.register_fake("normfuse::prenorm_linear", _prenorm_fake, lib=_LIB)


def _prenorm_split_fake(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold,
                        weight_kn=False):
    _prenorm_fake(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, fold, weight_kn)
    return [x.new_empty((*x.shape[:-1], w.shape[1 if weight_kn else 0])) for w in weight]


_LIB.impl("prenorm_linear_split", prenorm_linear_split, "CPU")
_LIB.impl("prenorm_linear_split", prenorm_linear_split, "CUDA")
torch.library.register_fake("normfuse::prenorm_linear_split", _prenorm_split_fake, lib=_LIB)


# ---------------------------------------------------------------------------------------------
# normfuse::postnorm_linear
# ---------------------------------------------------------------------------------------------

def _resolve_post(op, x, weight, g, beta, bias, residual, offset, is_ln):
    norm = {"norm_weight": g, "norm_bias": beta} if is_ln else {"norm_weight": g}
    check_postnorm(op, x, weight, norm, bias, residual, fused=True)
    return (_unit_k(weight), _vec(_offset_weight(g, offset)), _vec(beta), _vec(bias),
            x.shape[-1], x.dtype, x.device)


def _post_head(x, residual, eps, offset, is_ln, weight_kn):
    """The post-norm launch-ready call's key before the weights' (None: a tensor without
    storage, e.g. sparse; the checks say what is wrong)."""
    try:
        rkey = None if residual is None else (residual.shape, residual.stride(), residual.dtype,
                                              residual.device, residual.data_ptr() & 15)
        return (x.shape, x.stride(), x.dtype, x.device, x.data_ptr() & 15, rkey, eps, offset,
                is_ln, weight_kn)
    except RuntimeError:
        return None


def post_call(x, weight, norm_weight, norm_bias, bias, residual, eps, offset=0.0, is_ln=False,
              weight_kn=False):
    """The launch-ready call `postnorm_linear` keeps for these arguments, or None (as
    `pre_call`)."""
    return _find(_POST_CALLS, _post_head(x, residual, eps, offset, is_ln, weight_kn),
                 (weight, norm_weight, norm_bias, bias))[0]


def postnorm_linear(x, weight, norm_weight, norm_bias, bias, residual, eps, offset, is_ln,
                    weight_kn=False):
    given = (weight, norm_weight, norm_bias, bias)  # (weight_kn: as in prenorm_linear)
    call, ckey, wkey, srcs, ts = _find(_POST_CALLS, _post_head(x, residual, eps, offset, is_ln,
                                                               weight_kn), given)
    if call is not None:
        return call(x, residual)
    if ts is not given:  # an alias of a registered weight: read through a view of its owner
        weight, norm_weight, norm_bias, bias = ts
    if weight_kn:
        weight = _kn(weight)
    op = "linear_layernorm" if is_ln else "linear_rmsnorm"
    norm = {"norm_weight": norm_weight, "norm_bias": norm_bias} if is_ln else \
        {"norm_weight": norm_weight}
    if not route(op, x):
        check_postnorm(op, x, weight, norm, bias, residual, fused=False)
        return fallback.postnorm_linear(x, weight, norm_weight, norm_bias, eps, bias, residual,
                                        offset, is_ln)
    register_weights(*srcs)  # (a compiled graph's aliases of them are then known)
    key = (*wkey, offset, is_ln, weight_kn)
    r = _POST_MEMO.lookup(key, srcs)
    if (r is None or x.shape[-1] != r[4] or x.dtype != r[5] or x.device != r[6]
            or (residual is not None and (residual.shape[:-1] != x.shape[:-1]
                                          or residual.shape[-1] != r[0].shape[0]
                                          or residual.dtype != x.dtype
                                          or residual.device != x.device))):
        r = _resolve_post(op, x, weight, norm_weight, norm_bias, bias, residual, offset, is_ln)
        _POST_MEMO.store(key, srcs, r)
    w, g, beta, b = r[:4]
    kind = "ln" if is_ln else "rms"
    if postnorm_plan(x.numel() // max(1, x.shape[-1]), kind) == "composed":
        return _postnorm_composed(x, w, g, beta, b, residual, eps, is_ln)
    pin_for_capture(w, g, beta, b)
    # "fused" or "lowered": launch_postnorm takes the lowered form where LOWERED_POSTNORM[kind]
    # names one (postnorm_plan said "lowered" then), else the default pipeline
    y = launch_postnorm(op, kind, x, w, g, beta, b, residual, eps)
    if y is None:  # a LayerNorm form that would normalize a rounded tile (launch_postnorm)
        return _postnorm_composed(x, w, g, beta, b, residual, eps, is_ln)
    stamp = _POST_CALLS.stamp(srcs) if ckey is not None else None
    if stamp is not None:
        plan = postnorm_plan_made(kind, x, w, g, beta, b, residual, eps)
        if plan is not None:
            _POST_CALLS.store(ckey, srcs, _PostCall(plan, kind, x, w, g, beta, b, residual),
                              stamp)
    return y


# The post-norm ops' plan at launch (issue 20 item 3: the fastest correct plan, measured). By
# default the lowered form (hopper-ws{post-norm=true}, coop; postnorm_linear.LOWERED_POSTNORM):
# on the H200 (2026-12-01, bench/results/2026-12-01/post-lowered, T = 8192) the fastest option in
# all six post-norm cells measured, 0.96-0.98x cuBLAS's GEMM alone at K = N = 4096 / 8192 and
# 1.17 / 1.49x at BERT's blocks, where cuBLAS + the norm take 1.44 / 1.64x. With the switch off
# (LOWERED_POSTNORM[kind] = None, NORMFUSE_POSTNORM_LOWERED=off) the cluster pipeline (Triton's
# sm_90 lowering) wins only in its persistent form: hidden 12-84 % in 16 of the blog's 18
# post-norm cells (M = 262144, bench/results/2026-12-01/summary), but at M <= 16384 1.46-2.58x
# cuBLAS (bench/results/2026-12-01/model-shapes); so below POSTNORM_FUSED_MIN_ROWS rows the op
# then composes cuBLAS's GEMM (bias in its epilogue) with torch's norm.
# NORMFUSE_POSTNORM_PLAN=composed composes at every M; =fused takes the cluster pipeline where
# the switch is off.
POSTNORM_FUSED_MIN_ROWS = 4 * 132 * 128   # the persistent form's threshold (kernels/configs.py)


def postnorm_plan(M: int, kind: str | None = None) -> str:
    """"fused", "composed" or "lowered" for a post-norm launch over M rows of kernel `kind`
    ('rms' / 'ln'; None: either). NORMFUSE_POSTNORM_PLAN=composed composes at every M; else a
    lowered form named by the switch (LOWERED_POSTNORM[kind], 'auto' by default) gives
    "lowered" at every M; else NORMFUSE_POSTNORM_PLAN=fused, else "fused" from
    POSTNORM_FUSED_MIN_ROWS rows up."""
    forced = os.environ.get("NORMFUSE_POSTNORM_PLAN")
    if forced == "composed":
        return forced
    if (LOWERED_POSTNORM.get(kind) if kind is not None
            else LOWERED_POSTNORM.get("rms") or LOWERED_POSTNORM.get("ln")):
        return "lowered"
    if forced == "fused":
        return forced
    return "fused" if M >= POSTNORM_FUSED_MIN_ROWS else "composed"


def _postnorm_composed(x, w, g, beta, bias, residual, eps, is_ln):
    """z = norm(x W^T + bias + residual) as cuBLAS + torch's norm kernels compute it (h rounded
    to x's dtype before the norm, as an unfused model does)."""
    h = F.linear(x, w, bias)
    if residual is not None:
        h = h + residual
    N = w.shape[0]
    if is_ln:
        return F.layer_norm(h, (N,), g, beta, eps)
    return F.rms_norm(h, (N,), g, eps)


def _postnorm_fake(x, weight, norm_weight, norm_bias, bias, residual, eps, offset, is_ln,
                   weight_kn=False):
    if weight_kn:
        weight = _kn(weight)
    _one_device("linear_layernorm" if is_ln else "linear_rmsnorm",
                {"x": x, "weight": weight, "norm_weight": norm_weight, "norm_bias": norm_bias,
                 "bias": bias, "residual": residual})
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


_LIB.impl("postnorm_linear", postnorm_linear, "CPU")
_LIB.impl("postnorm_linear", postnorm_linear, "CUDA")
torch.library.register_fake("normfuse::postnorm_linear", _postnorm_fake, lib=_LIB)
