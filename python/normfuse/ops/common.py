"""What every op layer shares: where the fused kernels run, input validation, weight lists and
the caches of tensors derived from weights.

- Device facts (`capability`, `sm_count`: normfuse.device, cached per device index, no
  str-returning device call on a hot path); `fused_unavailable` (None where the fused kernels
  run: a CUDA tensor on an sm_90 GPU; else the reason, for the one `FallbackWarning`).
- Validation in the user's terms (`check_prenorm`, `check_postnorm`): the argument by name, its
  shape or dtype, what was expected.
- Weight lists (`as_lists`): one weight [N, K] or siblings [N_i, K] reading one norm, each with an
  optional bias; `adjacent` says when siblings are consecutive views of one buffer (then they
  are one [sum N_i, K] weight without a copy).
- `DerivedCache`: tensors computed from weights (W diag(offset + g), W beta, concatenated
  siblings, unit-stride copies), cached per the sources' identity (their storage, offset, shape,
  strides, dtype) and version counters, so an in-place update (an optimizer step) is seen at
  the next call; an entry holds weak references to the sources' storages, so memory freed and
  reused by another weight never hits. Tensors without a version counter (made under
  torch.inference_mode) are never cached. Nothing is stored while a CUDA graph is captured.
"""
from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict
from typing import Any, Callable, Optional, Sequence

import torch
import torch.utils.weak
from torch import Tensor

from ..device import (capability, cuda_state, device_index as _index, device_name as _device_name,
                      sm_count)
from ..lowering.launch import clear_graph_pins

__all__ = ["FallbackWarning", "capability", "sm_count", "fused_unavailable", "warn_fallback",
           "capturing", "pin_for_capture", "clear_caches", "register_clear",
           "check_prenorm", "check_postnorm", "as_lists", "adjacent", "DerivedCache", "WEIGHTS",
           "FUSED_DTYPES", "shape_str", "define_op", "register_weights", "alias_owner",
           "host_offsets", "row_block_count", "row_block_table", "cached_row_block_table",
           "register_autograd", "autograd_op", "AutogradOp", "EagerOp", "plain_eager"]

FUSED_DTYPES = (torch.bfloat16, torch.float16)
FALLBACK_DTYPES = (torch.bfloat16, torch.float16, torch.float32, torch.float64)


class FallbackWarning(UserWarning):
    """The fused kernels do not run here (not a CUDA tensor, or not an sm_90 GPU): the op
    computes the same function with reference math (torch, fp32 internally). Warned once per
    process and reason."""


# ---------------------------------------------------------------------------------------------
# Device facts (cached per device index)
# ---------------------------------------------------------------------------------------------

_UNAVAILABLE: dict = {}


def fused_unavailable(device: torch.device) -> Optional[str]:
    """None when the fused kernels run on `device` (a CUDA device of compute capability 9.x),
    else why not, in a sentence. Cached per device."""
    hit = _UNAVAILABLE.get(device, 0)
    if hit != 0:
        return hit
    if device.type != "cuda":
        why = f"the inputs are on {device}, the fused kernels run on Hopper GPUs (sm_90)"
    else:
        index = _index(device)
        cap = capability(index)
        why = None if cap[0] == 9 else (
            f"{device} is {_device_name(index)} with compute capability sm_{cap[0]}{cap[1]}; the "
            f"fused kernels run on Hopper GPUs (sm_90)")
    _UNAVAILABLE[device] = why
    return why


def check_hopper(op: str, device: torch.device) -> None:
    """Raise when `device` cannot run the fused kernels (the explicit launch paths: prepare_*)."""
    if device.type != "cuda":
        raise ValueError(f"{op}: all tensors must be CUDA tensors on one device, got {device}")
    index = _index(device)
    cap = capability(index)
    if cap[0] != 9:
        raise RuntimeError(f"{op}: needs a Hopper GPU (sm_90); {device} is {_device_name(index)} "
                           f"with compute capability sm_{cap[0]}{cap[1]}")


_WARNED: set = set()


def warn_fallback(op: str, why: str) -> None:
    """The one FallbackWarning per process and reason. Under torch.compile the call is one of
    Dynamo's reorderable logging functions (registered below): recorded while tracing and made
    after the graph runs, instead of a graph break at the first call that warns."""
    if why in _WARNED:
        return
    _WARNED.add(why)
    warnings.warn(f"normfuse.{op}: {why}; computing with reference math (torch, fp32 "
                  f"internally), not the fused kernels (warned once)", FallbackWarning,
                  stacklevel=3)


def _reorderable(fn) -> None:
    try:
        torch._dynamo.config.reorderable_logging_functions.add(fn)
    except AttributeError:  # (a torch without the setting: the warning breaks the graph once)
        pass


_reorderable(warn_fallback)


# ---------------------------------------------------------------------------------------------
# Validation (pure Python: no CUDA call)
# ---------------------------------------------------------------------------------------------

def shape_str(t) -> str:
    return "None" if t is None else str(tuple(t.shape))


def _is_tensor(op: str, name: str, t, required: bool = False) -> None:
    if t is None:
        if required:
            raise TypeError(f"{op}: {name} is required")
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")


def as_lists(op: str, weight, bias) -> tuple[tuple, Optional[tuple]]:
    """(weights, biases): `weight` as a tuple of [N_i, K] tensors, `bias` as None (no bias at
    all) or a tuple of the same length of [N_i] tensors or None."""
    if isinstance(weight, (list, tuple)):
        if len(weight) == 0:
            raise ValueError(f"{op}: weight is an empty list; pass a tensor [N, K] or a list of "
                             "tensors [N_i, K]")
        ws = tuple(weight)
        names = [f"weight[{i}]" for i in range(len(ws))]
        if bias is None:
            bs = None
        elif isinstance(bias, (list, tuple)):
            if len(bias) != len(ws):
                raise ValueError(f"{op}: bias must be None or a list of the same length as "
                                 f"weight ({len(ws)} tensors), got a list of {len(bias)}")
            bs = tuple(bias)
            if all(b is None for b in bs):
                bs = None
        else:
            raise TypeError(f"{op}: weight is a list of {len(ws)} tensors, so bias must be None or "
                            f"a list of {len(ws)} tensors (or None entries), got "
                            f"{type(bias).__name__}")
    else:
        ws, names = (weight,), ["weight"]
        if isinstance(bias, (list, tuple)):
            raise TypeError(f"{op}: bias is a list but weight is a single tensor; pass weight as a "
                            "list too (siblings) or bias as a tensor")
        bs = None if bias is None else (bias,)
    for n, w in zip(names, ws):
        _is_tensor(op, n, w, required=True)
        if w.dim() != 2:
            raise ValueError(f"{op}: {n} must be 2-D [out_features, in_features], got {n} of shape "
                             f"{shape_str(w)}")
    if bs is not None:
        for i, (w, b) in enumerate(zip(ws, bs)):
            n = f"bias[{i}]" if len(ws) > 1 or isinstance(bias, (list, tuple)) else "bias"
            _is_tensor(op, n, b)
            if b is not None and tuple(b.shape) != (w.shape[0],):
                raise ValueError(f"{op}: {n} must have shape ({w.shape[0]},) = (out_features,), "
                                 f"got {shape_str(b)}")
    return ws, bs


def _names(ws, bs) -> dict:
    if len(ws) == 1:
        d = {"weight": ws[0]}
        if bs is not None:
            d["bias"] = bs[0]
        return d
    d = {f"weight[{i}]": w for i, w in enumerate(ws)}
    if bs is not None:
        d.update({f"bias[{i}]": b for i, b in enumerate(bs) if b is not None})
    return d


def _common(op: str, x, tensors: dict, fused: bool) -> None:
    """One dtype and one device over `tensors` (x first); the dtypes the path takes."""
    given = {n: t for n, t in tensors.items() if t is not None}
    devices = {t.device for t in given.values()}
    if len(devices) != 1:
        got = ", ".join(f"{n} on {t.device}" for n, t in given.items())
        raise ValueError(f"{op}: all tensors must be on one device, got {got}")
    allowed = FUSED_DTYPES if fused else FALLBACK_DTYPES
    if x.dtype not in allowed:
        names = "bfloat16 or float16" if fused else "a floating-point dtype"
        where = " (the fused kernels)" if fused else ""
        raise TypeError(f"{op}: x must be {names}{where}, got {x.dtype}")
    if any(t.dtype != x.dtype for t in given.values()):
        got = ", ".join(f"{n} {t.dtype}" for n, t in given.items())
        raise TypeError(f"{op}: all tensors must have one dtype (x's, {x.dtype}), got {got}")


# Input checks passed, by the inputs' metadata (`_checked_once`): every check of check_prenorm /
# check_postnorm reads only each argument's type, shape, dtype and device, so inputs alike in
# those pass alike. A model calls its ops with the same few signatures every step (the
# LayerNorm training forward's host path on the CPU machine: 48.6 -> 44.4 us a call). Shapes
# that cannot be hashed (symbolic sizes while tracing) run the full checks every time.
_PASSED: dict = {}
_PASSED_SIZE = 1024


def _meta(t):
    """What the input checks read of one argument (None for None). Raises AttributeError for
    what is not tensor-like (the full checks then run and say what is wrong)."""
    return None if t is None else (type(t), t.shape, t.dtype, t.device)


def _checked_once(make_key, check, *args) -> None:
    """check(*args) unless inputs with the same key (`make_key()`, built from `_meta`s) passed it
    before; a key that cannot be made (not tensor-like, a weight list, a symbolic size) checks
    every time, and a failing check is not remembered."""
    try:
        key = make_key()
        hash(key)
    except (AttributeError, TypeError):
        key = None
    if key is not None and key in _PASSED:
        return
    check(*args)
    if key is not None:
        if len(_PASSED) >= _PASSED_SIZE:
            _PASSED.clear()
        _PASSED[key] = True


def check_prenorm(op: str, x, ws: tuple, bs, named: dict, fused: bool) -> None:
    """Pre-norm inputs: x [..., K], each weight [N_i, K], the norm's vectors (`named`) [K].
    Inputs whose types, shapes, dtypes and devices passed before pass at once (`_PASSED`)."""
    _checked_once(lambda: ("pre", op, fused, _meta(x), tuple(_meta(w) for w in ws),
                           None if bs is None else tuple(_meta(b) for b in bs),
                           tuple((n, _meta(t)) for n, t in named.items())),
                  _check_prenorm, op, x, ws, bs, named, fused)


def _check_prenorm(op: str, x, ws: tuple, bs, named: dict, fused: bool) -> None:
    _is_tensor(op, "x", x, required=True)
    for n, t in named.items():
        _is_tensor(op, n, t)
    if x.dim() < 1:
        raise ValueError(f"{op}: x must have at least 1 dimension [..., in_features], got a scalar")
    for n, t in named.items():
        if t is not None and t.dim() != 1:
            raise ValueError(f"{op}: {n} must be 1-D [in_features], got {n} of shape {shape_str(t)}")
    wn = _names(ws, None)
    for n, w in wn.items():
        _is_tensor(op, n, w, required=True)
        if w.dim() != 2:
            raise ValueError(f"{op}: {n} must be 2-D [out_features, in_features], got {n} of shape "
                             f"{shape_str(w)}")
    for n, b in (_names(ws, bs) if bs is not None else {}).items():
        _is_tensor(op, n, b)
    K = x.shape[-1]
    ks = {"x.shape[-1]": K}
    ks.update({f"{n}.shape[1]": w.shape[1] for n, w in wn.items()})
    ks.update({f"{n}.shape[0]": t.shape[0] for n, t in named.items() if t is not None})
    if len(set(ks.values())) != 1:
        got = ", ".join(f"{k}={v}" for k, v in ks.items())
        shapes = ", ".join(f"{n} {shape_str(t)}" for n, t in {"x": x, **wn, **named}.items()
                           if t is not None)
        raise ValueError(f"{op}: shape mismatch, in_features must agree: {got} (shapes: {shapes})")
    if K == 0:
        raise ValueError(f"{op}: in_features must be positive, got x of shape {shape_str(x)}")
    if bs is not None:
        for i, (w, b) in enumerate(zip(ws, bs)):
            if b is not None and tuple(b.shape) != (w.shape[0],):
                n = "bias" if len(ws) == 1 else f"bias[{i}]"
                raise ValueError(f"{op}: {n} must have shape ({w.shape[0]},) = (out_features,), "
                                 f"got {shape_str(b)}")
    _common(op, x, {"x": x, **named, **_names(ws, bs)}, fused)


def check_postnorm(op: str, x, weight, norm: dict, bias, residual, fused: bool) -> None:
    """Post-norm inputs: x [..., K], weight [N, K], the norm's vectors [N], bias [N],
    residual [..., N]. Inputs whose types, shapes, dtypes and devices passed before pass at
    once (`_PASSED`)."""
    _checked_once(lambda: ("post", op, fused, _meta(x), _meta(weight), _meta(bias),
                           _meta(residual), tuple((n, _meta(t)) for n, t in norm.items())),
                  _check_postnorm, op, x, weight, norm, bias, residual, fused)


def _check_postnorm(op: str, x, weight, norm: dict, bias, residual, fused: bool) -> None:
    _is_tensor(op, "x", x, required=True)
    ws, bs = as_lists(op, weight, bias)
    if len(ws) != 1:
        raise TypeError(f"{op}: weight must be one tensor [N, K] (a post-norm normalizes one "
                        "output row)")
    w = ws[0]
    N = w.shape[0]
    for name, t in norm.items():
        _is_tensor(op, name, t, required=True)
        if tuple(t.shape) != (N,):
            raise ValueError(f"{op}: {name} must have shape ({N},) = (out_features,), got "
                             f"{shape_str(t)}")
    _is_tensor(op, "residual", residual)
    if x.dim() < 1:
        raise ValueError(f"{op}: x must have at least 1 dimension [..., in_features], got a scalar")
    if residual is not None:
        want = tuple(x.shape[:-1]) + (N,)
        if tuple(residual.shape) != want:
            raise ValueError(f"{op}: residual must have the output's shape {want}, got "
                             f"{shape_str(residual)}")
    K = x.shape[-1]
    if w.shape[1] != K:
        raise ValueError(f"{op}: shape mismatch, in_features must agree: x.shape[-1]={K}, "
                         f"weight.shape[1]={w.shape[1]} (shapes: x {shape_str(x)}, weight "
                         f"{shape_str(w)})")
    if K == 0:
        raise ValueError(f"{op}: in_features must be positive, got x of shape {shape_str(x)}")
    _common(op, x, {"x": x, "weight": w, **norm, "bias": bias, "residual": residual}, fused)


# ---------------------------------------------------------------------------------------------
# Siblings and the derived-weight cache
# ---------------------------------------------------------------------------------------------

def adjacent(ws: Sequence[Tensor]) -> bool:
    """Whether the weights [N_i, K] are consecutive row blocks of one buffer (each starts where
    the previous ends, same strides): then they are one [sum N_i, K] view."""
    if len(ws) == 1:
        return True
    w0 = ws[0]
    st = w0.stride()
    store = w0.untyped_storage()
    end = w0.storage_offset() + w0.shape[0] * st[0]
    for w in ws[1:]:
        if (w.stride() != st or w.dtype != w0.dtype or w.device != w0.device
                or w.shape[1] != w0.shape[1] or w.untyped_storage() is not store
                or w.storage_offset() != end):
            return False
        end += w.shape[0] * st[0]
    return True


def joined_view(ws: Sequence[Tensor]) -> Tensor:
    """The [sum N_i, K] view of adjacent weights (`adjacent(ws)` must hold)."""
    w0 = ws[0]
    if len(ws) == 1:
        return w0
    n = sum(w.shape[0] for w in ws)
    return w0.as_strided((n, w0.shape[1]), w0.stride(), w0.storage_offset())


def cat_biases(ws: Sequence[Tensor], bs: Sequence) -> Optional[Tensor]:
    """The siblings' biases side by side ([sum N_i], zeros where a member has none), or None
    when none has one."""
    if all(b is None for b in bs):
        return None
    return torch.cat([b if b is not None else w.new_zeros(w.shape[0]) for b, w in zip(bs, ws)])


def check_kn(op: str, w) -> None:
    """weight_kn=True takes 2-D [K, N] tensors: raise, naming `op`, for anything else."""
    if not isinstance(w, Tensor) or w.dim() != 2:
        raise ValueError(f"{op}: weight_kn=True takes 2-D [K, N] weights, got "
                         + (f"shape {tuple(w.shape)}" if isinstance(w, Tensor)
                            else type(w).__name__))


def capturing() -> bool:
    """Whether the current CUDA stream is capturing a graph (torch's C query)."""
    return cuda_state.capturing()


_capturing = capturing

# Derived tensors (folded, concatenated, ...) that a captured CUDA graph reads: a graph holds
# their addresses, not references, so they are kept here until clear_caches() (call it after
# the graphs are destroyed); otherwise a cache replacing an entry would free memory a replay
# still reads.
_GRAPH_PINS: dict = {}


def pin_for_capture(*tensors) -> None:
    """While a graph is captured: keep `tensors` (cached derived weights) alive."""
    if capturing():
        for t in tensors:
            if isinstance(t, Tensor):
                _GRAPH_PINS[id(t)] = t


class DerivedCache:
    """Tensors computed from weights, one entry per (kind, extra, sources' identity): a newer
    version of the sources replaces the entry (an optimizer step does not pile up copies), and
    an entry goes when a source's storage is freed. At most `size` entries (least recently used
    dropped)."""

    def __init__(self, size: int = 4096):
        self.size = size
        self._d: "OrderedDict[tuple, tuple]" = OrderedDict()
        self.misses = 0

    def get(self, kind: str, sources: Sequence[Optional[Tensor]], extra: Any,
            compute: Callable[[], Any], cache: bool = True):
        """compute(), or the value cached for the same `kind`, `extra` and sources (None
        entries allowed) at their current versions. `cache=False`: compute, store nothing."""
        if not cache:
            return compute()
        ident, stores, versions = [kind, extra], [], []
        try:
            for t in sources:
                if t is None:
                    ident.append(None)
                    continue
                s = t.untyped_storage()
                stores.append(s)
                versions.append(t._version)
                ident.append((id(s), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype,
                              t.device))
        except RuntimeError:  # an inference tensor: no version counter, nothing to key on
            self.misses += 1
            return compute()
        key = tuple(ident)
        versions = tuple(versions)
        hit = self._d.get(key)
        if (hit is not None and hit[1] == versions
                and all(r() is s for r, s in zip(hit[0], stores))):
            self._d.move_to_end(key)
            return hit[2]
        self.misses += 1
        value = compute()
        if not _capturing():  # a tensor made during capture lives in the graph's pool
            drop = functools.partial(_drop, weakref.ref(self._d), key)
            self._d[key] = (tuple(weakref.ref(s, drop) for s in stores), versions, value)
            self._d.move_to_end(key)
            if len(self._d) > self.size:
                self._d.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._d)

    def clear(self) -> None:
        self._d.clear()


def _drop(d_ref, key, _dead) -> None:
    """A source's storage was freed: its entries go (their keys could be reused by new storage)."""
    d = d_ref()
    if d is not None:
        d.pop(key, None)


WEIGHTS = DerivedCache()


# ---------------------------------------------------------------------------------------------
# Weights by address: the owner of a compiled graph's alias
# ---------------------------------------------------------------------------------------------

# A compiled graph hands a custom op a parameter it reinterpreted (Inductor's
# `reinterpret_tensor`, e.g. a Conv1D's `weight.t()`): a new tensor object every call, without
# `_base` and with its own version counter, which stays 0 when the parameter is written in
# place. Keyed by that alias, the ops' memos miss every call (resolve and plan again: ~0.25 ms
# of host per call, GPT-2 under torch.compile on the H200, 2026-12-01) and the derived-weight
# cache would hand back a stale folded weight after an optimizer step. So weights are known by
# their address: `register_weights` (the fused modules' parameters, and every weight a fused
# call resolved) and `alias_owner`, which finds the registered tensor whose memory an alias
# reads; the ops then key and watch the owner and read a true view of it.
_OWNERS: dict = {}


def register_weights(*tensors) -> None:
    """Know `tensors` (a view: its base) by address, for `alias_owner`. Weak: a collected
    tensor's entry is dropped."""
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        b = t if t._base is None else t._base
        try:
            ptr = b.data_ptr()
        except RuntimeError:  # no storage (sparse, meta-like): nothing to know it by
            continue
        if ptr == 0:
            continue
        r = _OWNERS.get(ptr)
        if r is not None and r() is b:
            continue
        if len(_OWNERS) >= 8192:  # drop the dead entries first; then start over
            for k in [k for k, r in _OWNERS.items() if r() is None]:
                del _OWNERS[k]
            if len(_OWNERS) >= 8192:
                _OWNERS.clear()
        _OWNERS[ptr] = weakref.ref(b)


def alias_owner(t: Tensor) -> Optional[Tensor]:
    """The registered tensor whose memory `t` (a tensor without `_base`) aliases from its
    first element on, or None (t is registered itself, unknown, or not an alias of it: another
    storage, dtype or device). A few hundred ns."""
    ptr = t.data_ptr()
    r = _OWNERS.get(ptr)
    if r is None:
        return None
    o = r()
    if o is None or o is t:
        return None
    # the owner (a base tensor, alive: its memory is its own) still starts at that address
    # (`param.data = ...` moves it; its entry then names an address it left): t reads its
    # memory from its first element on. (Comparing the two storages' addresses, as before,
    # made two storage objects per call: ~1.5 us.)
    if o.data_ptr() != ptr or o.dtype != t.dtype or o.device != t.device:
        return None
    return o


_CLEARERS: list = []


def unit_stride(t: Optional[Tensor]) -> Optional[Tensor]:
    """A weight or bias vector as the kernels read it: a bare pointer with unit stride (a strided
    or expanded vector copied)."""
    return t if t is None or t.is_contiguous() else t.contiguous()


def no_double_backward(op: str) -> None:
    """The ops' backward kernels have no derivative of their own: a backward taken with
    create_graph=True (gradient penalties, Hessian-vector products) is refused, not given zero or
    wrong second derivatives. (Compiled backward graphs are traced, not differentiated.)"""
    if torch.is_grad_enabled() and not torch.compiler.is_compiling():
        raise NotImplementedError(
            f"normfuse: {op}'s backward is not differentiable (create_graph=True / double "
            f"backward); use the unfused modules for higher-order gradients")


def register_autograd(qualname: str, backward: Callable, setup_context: Callable,
                      lib=None):
    """torch.library.register_autograd for the ops whose first output is the result and whose
    other outputs are kept only for the backward (statistics, h, g): their gradients reach
    `backward` as None instead of zeros (autograd would otherwise launch a fill of each, every
    step: 0.16 ms for an [M, N] h at 262144 x 1024 on the H200), and when the result itself got
    no gradient `backward` is not called (None for every input). Returns the two functions as
    registered (setup_context, backward), for `autograd_op`'s eager path."""
    def setup(ctx, inputs, output):
        setup_context(ctx, inputs, output)
        ctx.set_materialize_grads(False)

    def bwd(ctx, grad, *saved_grads):
        if grad is None:  # (the result not used: nothing flows back)
            return (None,) * len(ctx.needs_input_grad)
        return backward(ctx, grad, *saved_grads)
    torch.library.register_autograd(qualname, bwd, setup_context=setup, lib=lib)
    return setup, bwd


# ---------------------------------------------------------------------------------------------
# The eager fast path: the ops' implementations called without the dispatcher
# ---------------------------------------------------------------------------------------------

_C = torch._C
_PLAIN_ARGS = frozenset((Tensor, torch.nn.Parameter, type(None), float, int, bool))


def plain_eager(args) -> bool:
    """Whether a call with `args` runs eagerly and untraced: every argument a plain Tensor or
    Parameter, None or a Python scalar (no tensor subclass, no list); not under torch.compile,
    torch.jit tracing, a torch-function or dispatch mode (FakeTensorMode, make_fx, a
    `torch.device` context) or a functorch transform (vmap, grad). There the dispatcher would
    run the op's one implementation itself, so calling it directly computes the same."""
    for a in args:
        if type(a) not in _PLAIN_ARGS:
            return False
    if torch.compiler.is_compiling():
        return False
    return not (_C._len_torch_dispatch_stack() or _C._is_torch_function_mode_enabled()
                or _C._are_functorch_transforms_active() or _C._get_tracing_state() is not None)


class EagerOp:
    """A custom op without autograd (a backward op) called as `op(*args)`: under `plain_eager`
    its implementation directly (the dispatcher's argument handling is ~15 us of host time a
    call on the CPU machine), else the op."""
    __slots__ = ("op", "impl")

    def __init__(self, op, impl: Callable):
        self.op, self.impl = op, impl

    def __call__(self, *args):
        return self.impl(*args) if plain_eager(args) else self.op(*args)


class AutogradOp:
    """A custom op with its autograd registered (`autograd_op`), called as `op(*args)`. Under
    `plain_eager` it skips the dispatcher and torch.library's autograd wrapper, whose argument
    handling (its `fill_defaults` walks the schema's arguments, rebuilt by pybind on every
    access) cost ~60-80 us of host time a call on the H200 machine: with autograd needed, an
    autograd.Function with the op's own implementation, setup_context and backward (the same
    saved tensors and gradients); without, the implementation itself. torch.compile, export,
    tracers, modes and tensor subclasses take the op (and its registered autograd). `impl`
    may differ from the op's implementation only in what the eager caller has done already
    (e.g. validated the inputs)."""
    __slots__ = ("op", "impl", "function")

    def __init__(self, op, impl: Callable, setup: Callable, backward: Callable):
        self.op, self.impl = op, impl

        def forward(ctx, *args):
            # (setup inside forward: with a separate setup_context, Function.apply binds the
            # arguments through inspect.signature on every call, ~7 us)
            output = impl(*args)
            setup(ctx, args, output)
            return output
        self.function = type(f"Eager_{op._opname}", (torch.autograd.Function,), {
            "forward": staticmethod(forward), "backward": staticmethod(backward)})

    def __call__(self, *args):
        if not plain_eager(args):
            return self.op(*args)
        if _C.is_grad_enabled() and _C._any_requires_grad(*args):
            return self.function.apply(*args)
        return self.impl(*args)


def autograd_op(lib, qualname: str, impl: Callable, backward: Callable,
                setup_context: Callable) -> AutogradOp:
    """`register_autograd(qualname, ...)` for the op, and the op as an `AutogradOp` whose
    eager path runs `impl` (the op's implementation, or one that skips what the eager caller
    did already) under the same setup and backward."""
    setup, bwd = register_autograd(qualname, backward, setup_context, lib=lib)
    ns, name = qualname.split("::")
    return AutogradOp(getattr(getattr(torch.ops, ns), name).default, impl, setup, bwd)


# Offsets read on the host (flash_norm_attention's checks and grids): tensor -> (its version
# counter when read, the int64 CPU copy), by identity (weak: the entry goes with the tensor)
_HOST_OFFSETS = torch.utils.weak.WeakIdKeyDictionary()


def _version(t: Tensor) -> Optional[int]:
    """The tensor's version counter (bumped by in-place writes); None for an inference tensor."""
    try:
        return t._version
    except RuntimeError:
        return None


def host_offsets(offsets: Tensor, read: bool = True) -> Optional[Tensor]:
    """`offsets` as an int64 CPU tensor. A CUDA tensor is copied to the host (a sync) once per
    tensor and version counter (CPU tensors are cached alike) and then served from a cache held
    by the tensor's identity, so a model's layers that share one offsets tensor read it once; an
    in-place update bumps the version and reads it again (a write the version counter does not
    see, e.g. by a custom kernel, is not noticed: make a new tensor). `read=False` returns only
    what the cache holds (None on a miss). Inference tensors (no version counter) are read every
    time; nothing is cached while a CUDA graph is captured."""
    version = _version(offsets)
    if version is not None:
        hit = _HOST_OFFSETS.get(offsets)
        if hit is not None and hit[0] == version:
            return hit[1]
    if not read:
        return None
    off = offsets.detach().to("cpu", torch.int64)
    if version is not None and not capturing():
        _HOST_OFFSETS[offsets] = (version, off)
    return off


def row_block_count(T: int, B: int, block_m: int, host: Optional[Tensor] = None) -> int:
    """How many BLOCK_M-row blocks jagged rows need (a launch's grid): exactly sum_b cdiv(len_b,
    BLOCK_M) from `host` (the offsets on the host, `host_offsets`), else, and while a CUDA graph
    is captured (its replays may see the offsets buffer refilled in place: the same T and B,
    other lengths), the upper bound cdiv(T, BLOCK_M) + B (only a sequence's last block is
    partial); the programs past the last block find every row masked off."""
    if host is not None and not capturing():
        return int(torch.div(host[1:] - host[:-1] + (block_m - 1), block_m,
                             rounding_mode="floor").sum())
    return -(-T // block_m) + B if T and B else 0


def row_block_table(offsets: torch.Tensor, block_m: int, rows: int | None = None) -> torch.Tensor:
    """int32 [programs, 3]: (batch, first row, end of the sequence) of every BLOCK_M-row block of
    every sequence (empty sequences have none), in order, built where `offsets` are.

    Without `rows` the table is exact (its length is read on the host: a sync for device offsets).
    With `rows` (T, from x's shape) nothing is read on the host: the table has cdiv(T, BLOCK_M) + B
    entries, an upper bound on the block count (only a sequence's last block can be partial), and
    the entries past the last block are dead, (B - 1, T, T): every row of them masked off."""
    off = offsets.to(torch.int64)
    lens = off[1:] - off[:-1]
    nb = (lens + block_m - 1) // block_m
    cum = torch.cumsum(nb, 0)
    B = nb.numel()
    if rows is None:
        total = int(cum[-1]) if B else 0
    else:
        total = row_block_count(int(rows), B, block_m)
    j = torch.arange(total, device=off.device)
    b = torch.searchsorted(cum, j, right=True)
    live = b < B
    b = b.clamp(max=max(B - 1, 0))
    first = cum[b] - nb[b]
    start = off[b] + (j - first) * block_m
    end = off[b + 1]
    if rows is not None:
        start = torch.where(live, start, off[-1])
        end = torch.where(live, end, off[-1])
    return torch.stack([b, start, end], 1).to(torch.int32).contiguous()


# what is derived from an offsets tensor on the device (row-block tables, launch orders), kept
# per tensor: {(version, what...): tensor}
_FROM_OFFSETS = torch.utils.weak.WeakIdKeyDictionary()


def _from_offsets(offsets: Tensor, key: tuple, build):
    """`build(offsets)` kept per offsets tensor (its identity and version counter, as
    `host_offsets`) and `key`, so a model's layers that share one offsets tensor, and a layer's
    forward and backward, build it once (a handful of small device ops each time otherwise).
    Built afresh, and not kept, while a CUDA graph is captured (its replays may see the offsets
    refilled in place: the value must be computed inside the graph) and for inference tensors
    (no version counter). An entry of an older version goes when a newer one is kept."""
    version = _version(offsets)
    if version is None or capturing():
        return build(offsets.detach())
    full = (version,) + key
    entry = _FROM_OFFSETS.get(offsets)
    if entry is not None and full in entry:
        return entry[full]
    kept = {k: t for k, t in (entry or {}).items() if k[0] == version}  # (older versions go)
    kept[full] = value = build(offsets.detach())
    _FROM_OFFSETS[offsets] = kept
    return value


def cached_row_block_table(offsets: Tensor, block_m: int, rows: int) -> Tensor:
    """`row_block_table(offsets, block_m, rows)`, kept per offsets tensor and version
    (`_from_offsets`)."""
    return _from_offsets(offsets, ("rows", int(block_m), int(rows)),
                         lambda off: row_block_table(off, block_m, rows))


def longest_first(offsets: Tensor) -> Tensor:
    """The batches of `offsets` ([B + 1], from 0 to T) by their row count, longest first (ties
    in batch order), int32 [B], on the offsets' device: the launch order of programs that each
    walk a whole sequence, so that the longest ones do not start last and end the grid alone."""
    lengths = offsets[1:] - offsets[:-1]
    return torch.argsort(lengths, descending=True, stable=True).to(torch.int32)


def cached_longest_first(offsets: Tensor) -> Tensor:
    """`longest_first(offsets)`, kept per offsets tensor and version (`_from_offsets`)."""
    return _from_offsets(offsets, ("longest_first",), longest_first)


def register_clear(fn) -> None:
    """`fn()` runs in clear_caches() (the caches of the layers above this one)."""
    _CLEARERS.append(fn)


def clear_caches() -> None:
    """Drop every cached derived weight (folded, concatenated, unit-stride copies), those kept
    for captured CUDA graphs included (call it after destroying the graphs)."""
    WEIGHTS.clear()
    _HOST_OFFSETS.clear()
    _FROM_OFFSETS.clear()
    for fn in _CLEARERS:
        fn()
    _GRAPH_PINS.clear()
    clear_graph_pins()


def define_op(lib, schema: str, impl, fake) -> None:
    """Define `schema` in the torch.library `lib` (namespace normfuse) with one implementation
    for CPU and CUDA tensors (it routes to the kernels or the reference path itself) and its fake
    implementation."""
    name = schema.split("(", 1)[0]
    lib.define(schema)
    lib.impl(name, impl, "CPU")
    lib.impl(name, impl, "CUDA")
    torch.library.register_fake(f"normfuse::{name}", fake, lib=lib)
