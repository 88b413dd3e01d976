"""One forward of a model that records, for every leaf module that may be a norm, who reads its
output, and for every GEMM module (nn.Linear, transformers' Conv1D) where its input came from.

A TorchFunctionMode sees every torch function and Tensor method called on a tracked tensor
(module hooks say which module is running); the outputs of leaf modules are tracked, and so are
row views of them (indexing, view/reshape and transposes that leave the last dimension in place:
a norm works row by row, so a GEMM reading a row view of its output can still normalize what it
reads). A use is one of:

    gemm       the whole input of an nn.Linear / Conv1D forward (K columns, maybe through views)
    meta       a read of the shape that does not involve the last dimension (x.shape[:-1])
    meta_last  a read of the last dimension's size (x.shape[-1], x.size(), numel, iteration)
    other      anything else: an op (named, with the module running it), the input of another
               module, or the model's output

Leaf modules run as black boxes: uses inside them are not recorded, their inputs are.
The outputs of GEMM modules are tracked too (through dropout and additions) so that a norm
whose input is `linear(h) [+ ...]` is known as a post-norm candidate.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from .fused import is_conv1d, is_gemm_module

__all__ = ["Probe", "Use", "NormCall", "is_gemm_module"]


_SKIP_MODULES = ("torch.nn.modules.activation", "torch.nn.modules.dropout",
                 "torch.nn.modules.linear", "transformers.activations")
_META_GETTERS = {"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout",
                 "is_leaf", "grad_fn", "names", "is_sparse", "is_quantized", "is_meta",
                 "itemsize", "is_nested", "grad"}
_META_METHODS = {"dim", "ndimension", "is_contiguous", "is_floating_point", "element_size",
                 "get_device", "is_complex", "type", "data_ptr", "untyped_storage",
                 "__len__", "is_inference", "storage_offset"}
_META_LAST_METHODS = {"numel", "stride", "nelement", "empty_like", "zeros_like", "ones_like",
                      "full_like", "rand_like", "randn_like", "new_empty", "new_zeros",
                      "new_ones", "new_full", "new_tensor"}
_VIEWS = {"__getitem__", "view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze",
          "transpose", "swapaxes", "swapdims", "permute", "contiguous", "expand", "narrow",
          "select", "view_as", "reshape_as", "expand_as"}
_ADDS = {"add", "__add__", "__radd__", "add_", "__iadd__"}
_DROPOUTS = {"dropout", "dropout_", "alpha_dropout", "feature_alpha_dropout"}


@dataclass
class Use:
    kind: str                 # gemm, meta, meta_last, other
    what: str                 # the GEMM's path, or the op / module / "the model's output"
    where: str = ""           # the module whose forward made the use
    via_view: bool = False    # through a row view of the norm's output
    target: str = ""          # a module whose input it is (kind other)

    def describe(self) -> str:
        if self.kind == "gemm":
            return f"{self.what}" + (" (through a row view)" if self.via_view else "")
        return self.what + (f" in {self.where}" if self.where else "")


@dataclass
class NormCall:
    shape: tuple
    dtype: torch.dtype
    caller: str               # the module whose forward called it
    input_from: tuple | None  # the GEMMs whose outputs (+ residual, dropout) reach its input
    input_raw: str | None = None  # the GEMM whose output, untouched, is its input
    # (the GEMM whose output the input is a view of: Qwen3's q_norm over
    # q_proj(h).view(..., heads, head_dim); only where input_from is None)
    input_view: str | None = None


@dataclass
class GemmCall:
    origin: str | None        # the module whose output this GEMM reads (None: untracked)
    via_view: bool
    caller: str


@dataclass
class _Src:
    origin: str
    kind: str                 # "out" (a leaf module's output) or "gemm" (GEMM outputs summed)
    via_view: bool = False
    gemms: tuple = ()         # "gemm": the GEMMs whose outputs it sums, the latest last (<= 4)
    raw: bool = False         # "gemm": a GEMM's output itself (not a sum, not a dropout)


class _WatchedSize(tuple):
    """Stands in for x.shape / x.size() of a tracked tensor during the probe (torch.Size cannot
    be subclassed) and reports reads of the last dimension; slices come back as torch.Size."""

    def __new__(cls, size, on_last):
        obj = super().__new__(cls, tuple(size))
        obj._on_last = on_last
        return obj

    def __getitem__(self, i):
        n = len(self)
        if isinstance(i, slice):
            if n and (n - 1) in range(n)[i]:
                self._on_last()
            return torch.Size(tuple.__getitem__(self, i))
        if isinstance(i, int) and i in (-1, n - 1):
            self._on_last()
        return tuple.__getitem__(self, i)

    def __iter__(self):
        self._on_last()
        return tuple.__iter__(self)

    def __eq__(self, other):
        self._on_last()
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        self._on_last()
        return tuple.__ne__(self, other)

    __hash__ = tuple.__hash__

    def __add__(self, other):
        self._on_last()
        return torch.Size(tuple(tuple.__iter__(self)) + tuple(other))

    def numel(self):
        self._on_last()
        return torch.Size(tuple.__iter__(self)).numel()

    def __reduce__(self):
        return (torch.Size, (tuple(tuple.__iter__(self)),))


def _fname(func) -> str:
    self_ = getattr(func, "__self__", None)
    if getattr(func, "__name__", "") == "__get__" and self_ is not None:
        return getattr(self_, "__name__", "?")
    return getattr(func, "__name__", str(func))


def _display(func) -> str:
    name = _fname(func)
    q = getattr(func, "__qualname__", "") or ""
    mod = getattr(func, "__module__", "") or ""
    if q.startswith(("TensorBase.", "Tensor.")) or name in _META_GETTERS:
        return f"Tensor.{name}"
    if mod.startswith("torch.nn.functional"):
        return f"F.{name}"
    return f"torch.{name}"


def _full_slice(i) -> bool:
    return isinstance(i, slice) and i.start is None and i.stop is None and i.step is None


def _index_keeps_last(idx, ndim: int) -> bool:
    """Does x[idx] leave x's last dimension whole and last?"""
    idx = idx if isinstance(idx, tuple) else (idx,)
    idx = [i for i in idx if i is not None]
    if any(i is Ellipsis for i in idx):
        after = idx[idx.index(Ellipsis) + 1:]
        return all(_full_slice(i) for i in after)
    used = 0
    for i in idx:
        if isinstance(i, torch.Tensor) and i.dtype == torch.bool:
            used += i.dim()
        else:
            used += 1
    if used < ndim:
        return True
    return used == ndim and _full_slice(idx[-1])


def _row_view(name: str, args, kwargs, t: torch.Tensor, out) -> bool:
    """Is `out = name(t, ...)` a selection / rearrangement of t's rows (last dim untouched)?"""
    if not isinstance(out, torch.Tensor) or out.dim() == 0 or t.dim() == 0:
        return False
    K = t.shape[-1]
    if out.shape[-1] != K or not args or args[0] is not t:
        return False
    last = t.dim() - 1
    rest = list(args[1:])

    def norm_dim(d):
        return d % t.dim() if isinstance(d, int) else None
    if name == "__getitem__":
        return _index_keeps_last(rest[0], t.dim())
    if name in ("transpose", "swapaxes", "swapdims"):
        dims = rest[:2] if len(rest) >= 2 else [kwargs.get("dim0"), kwargs.get("dim1")]
        return all(norm_dim(d) is not None and norm_dim(d) != last for d in dims)
    if name == "permute":
        dims = rest[0] if len(rest) == 1 and isinstance(rest[0], (list, tuple)) else rest
        dims = dims or kwargs.get("dims")
        return bool(dims) and norm_dim(dims[-1]) == last
    if name in ("narrow", "select"):
        d = rest[0] if rest else kwargs.get("dim")
        return norm_dim(d) is not None and norm_dim(d) != last
    return True


class Probe(TorchFunctionMode):
    """Run `model(*args, **kwargs)` once (call `run`) and keep what it saw:

    - `uses[path]`: the Uses of each leaf module's output (see the module docstring);
    - `norm_calls[path]`: a NormCall per call of a leaf module returning a tensor of its one
      tensor input's shape (the norm candidates);
    - `gemm_calls[path]`: a GemmCall per call of a GEMM module;
    - `gemm_uses[path]`: the Uses of each GEMM module's own output (kind other with `target`:
      the input of that module);
    - `calls[path]`: the (args, kwargs) of each non-leaf module's first call;
    - `escapes[path]`: the non-leaf modules whose output holds the leaf module's (or GEMM's)
      output;
    - `leaf_calls`: the paths of the leaf modules that ran;
    - `names`: module id -> path.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.names: dict[int, str] = {}
        for path, m in model.named_modules(remove_duplicate=False):
            self.names.setdefault(id(m), path)
        self.uses: dict[str, list[Use]] = {}
        self.norm_calls: dict[str, list[NormCall]] = {}
        self.gemm_calls: dict[str, list[GemmCall]] = {}
        self.src: dict[int, _Src] = {}
        self.keep: list = []
        self.stack: list[str] = []
        self.opaque = 0          # > 0 while a leaf module runs
        self.busy = False        # True while a hook of the probe runs
        self._pending: dict[int, tuple] = {}
        self.calls: dict[str, tuple] = {}   # non-leaf module path -> its first call's (args, kwargs)
        self.escapes: dict[str, list[str]] = {}   # leaf path -> non-leaf modules returning its output
        self.gemm_uses: dict[str, list[Use]] = {}  # GEMM path -> the uses of its own output
        # GEMM path -> where its output (or a view of it) is made contiguous (Liger's RoPE calls
        # q.contiguous() after transposing back): a no-op on the GEMM's own output, a copy on a
        # column slice of one GEMM over the siblings
        self.gemm_copied: dict[str, str] = {}
        self._gemm_view: dict[int, str] = {}  # id(tensor) -> the GEMM whose output it views
        self.leaf_calls: set[str] = set()

    # -- bookkeeping --
    def _track(self, t, src: _Src) -> None:
        if isinstance(t, torch.Tensor):
            self.src[id(t)] = src
            self.keep.append(t)

    def _use(self, origin: str, use: Use) -> None:
        self.uses.setdefault(origin, []).append(use)

    def _where(self) -> str:
        return _show(self.stack[-1]) if self.stack else _show("")

    # -- module hooks (their own tensor reads are not uses: `busy`) --
    def _pre(self, mod, args, kwargs):
        self.busy = True
        try:
            self._pre_hook(mod, args, kwargs)
        finally:
            self.busy = False

    def _post(self, mod, args, kwargs, out):
        self.busy = True
        try:
            self._post_hook(mod, args, kwargs, out)
        finally:
            self.busy = False

    def _pre_hook(self, mod, args, kwargs):
        path = self.names.get(id(mod), "?")
        caller = self.stack[-1] if self.stack else None
        self.stack.append(path)
        if self.opaque:
            self.opaque += 1
            return
        if mod._modules:
            self.calls.setdefault(path, (args, kwargs))
            return
        flat, _ = tree_flatten((args, kwargs))
        first = args[0] if args else None
        is_gemm = is_gemm_module(mod)
        for t in flat:
            s = self.src.get(id(t)) if isinstance(t, torch.Tensor) else None
            if s is None:
                continue
            if s.kind == "gemm" and s.raw:
                self._gemm_use(s.origin, Use("other", f"the input of {type(mod).__name__} "
                                                      f"{_show(path)}", _show(caller or ""),
                                             target=path))
            if s.kind == "out":
                if is_gemm and t is first and len(flat) == 1:
                    self._use(s.origin, Use("gemm", path, _show(caller or ""), s.via_view))
                else:
                    self._use(s.origin, Use("other", f"the input of {type(mod).__name__} "
                                                     f"{_show(path)}", _show(caller or "")))
        s = self.src.get(id(first)) if isinstance(first, torch.Tensor) else None
        if is_gemm:
            self.gemm_calls.setdefault(path, []).append(
                GemmCall(s.origin if s is not None and s.kind == "out" else None,
                         bool(s is not None and s.via_view), caller or ""))
        tensors = [t for t in flat if isinstance(t, torch.Tensor)]
        if len(tensors) == 1 and first is tensors[0]:
            self._pending[id(mod)] = (first, caller or "", s)
        self.opaque = 1

    def _post_hook(self, mod, args, kwargs, out):
        self.stack.pop()
        if self.opaque > 1:
            self.opaque -= 1
            return
        path = self.names.get(id(mod), "?")
        if mod._modules:
            for t in _flat_tensors(out):
                s = self.src.get(id(t))
                if s is not None and (s.kind == "out" or s.raw):
                    self.escapes.setdefault(s.origin, []).append(path)
            return
        self.opaque = 0
        self.leaf_calls.add(path)
        pend = self._pending.pop(id(mod), None)
        if is_gemm_module(mod):
            self._track(out, _Src(path, "gemm", gemms=(path,), raw=True))
            if isinstance(out, torch.Tensor):
                self._gemm_view[id(out)] = path
            return
        if pend is None or not isinstance(out, torch.Tensor):
            return
        x, caller, s = pend
        is_dropout = isinstance(mod, nn.modules.dropout._DropoutNd)
        if is_dropout or type(mod).__module__.startswith(_SKIP_MODULES):
            if s is not None and s.kind == "gemm" and is_dropout:
                self._track(out, s)
            return
        if out.shape == x.shape and out.is_floating_point() and out is not x:
            is_gemm_out = s is not None and s.kind == "gemm"
            view = None if is_gemm_out else self._gemm_view.get(id(x))
            self.norm_calls.setdefault(path, []).append(
                NormCall(tuple(x.shape), x.dtype, caller, s.gemms if is_gemm_out else None,
                         s.origin if is_gemm_out and s.raw else None, view))
            self._track(out, _Src(path, "out"))

    # -- every torch function and Tensor method --
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.opaque or self.busy:
            return func(*args, **kwargs)
        flat, _ = tree_flatten((args, kwargs))
        hits = [(t, self.src[id(t)]) for t in flat
                if isinstance(t, torch.Tensor) and id(t) in self.src]
        for a in flat:
            if isinstance(a, _WatchedSize):
                a._on_last()
        out = func(*args, **kwargs)
        viewed = [self._gemm_view[id(t)] for t in flat
                  if isinstance(t, torch.Tensor) and id(t) in self._gemm_view]
        if viewed:
            self._gemm_view_use(func, viewed[0], out)
        if not hits:
            return out
        name = _fname(func)
        gemms = [g for _, s in hits if s.kind == "gemm" for g in s.gemms]
        if gemms and (name in _ADDS or name in _DROPOUTS):
            merged = tuple(dict.fromkeys(reversed(gemms)))[:4][::-1]
            self._track(out, _Src("", "gemm", gemms=merged))
        for t, s in hits:
            if s.kind == "gemm":
                if s.raw:
                    use, out = self._classify_raw(func, name, args, kwargs, t, s, out)
                    self._gemm_use(s.origin, use)
                continue
            if name in _META_GETTERS or name in _META_METHODS:
                if name == "shape" and isinstance(out, torch.Size):
                    out = self._watch(out, s.origin)
                self._use(s.origin, Use("meta", _display(func), self._where()))
            elif name == "size":
                dim = args[1] if len(args) > 1 else kwargs.get("dim")
                if dim is None:
                    out = self._watch(out, s.origin)
                    self._use(s.origin, Use("meta", "Tensor.size", self._where()))
                else:
                    last = dim % t.dim() == t.dim() - 1 if t.dim() else True
                    self._use(s.origin, Use("meta_last" if last else "meta", "Tensor.size",
                                            self._where()))
            elif name in _META_LAST_METHODS:
                self._use(s.origin, Use("meta_last", _display(func), self._where()))
            elif name in _VIEWS and _row_view(name, args, kwargs, t, out):
                self._track(out, _Src(s.origin, "out", True))
            else:
                self._use(s.origin, Use("other", _display(func), self._where()))
        return out

    def _classify_raw(self, func, name, args, kwargs, t, s, out):
        """A use of a GEMM's own output: metadata, or anything else (views included: the
        deferred form hands on the GEMM's input, whose last dimension differs)."""
        if name in _META_GETTERS or name in _META_METHODS:
            if name == "shape" and isinstance(out, torch.Size):
                out = self._watch(out, s.origin, self._gemm_use)
            return Use("meta", _display(func), self._where()), out
        if name == "size":
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            if dim is None:
                return Use("meta", "Tensor.size", self._where()), self._watch(out, s.origin,
                                                                             self._gemm_use)
            last = dim % t.dim() == t.dim() - 1 if t.dim() else True
            return Use("meta_last" if last else "meta", "Tensor.size", self._where()), out
        return Use("other", _display(func), self._where()), out

    def _gemm_view_use(self, func, origin: str, out) -> None:
        """A GEMM's output or a view of it read by `func`: `contiguous` is recorded, a view is
        followed."""
        name = _fname(func)
        if name == "contiguous":
            self.gemm_copied.setdefault(origin, self._where())
        elif name in _VIEWS and isinstance(out, torch.Tensor):
            self._gemm_view[id(out)] = origin
            self.keep.append(out)

    def _gemm_use(self, origin: str, use: Use) -> None:
        self.gemm_uses.setdefault(origin, []).append(use)

    def _watch(self, size: torch.Size, origin: str, record=None) -> torch.Size:
        record = record or self._use

        def on_last():
            record(origin, Use("meta_last", "the size of the last dimension", self._where()))
        return _WatchedSize(size, on_last)

    # -- the run --
    def run(self, args: tuple, kwargs: dict):
        for m in self.model.modules():
            is_gemm_module(m)  # checks nn.Linear subclasses now, before the hooks are in place
        handles = []
        try:
            for m in self.model.modules():
                handles.append(m.register_forward_pre_hook(self._pre, with_kwargs=True))
                handles.append(m.register_forward_hook(self._post, with_kwargs=True, always_call=True))
            with torch.no_grad(), self:
                out = self.model(*args, **kwargs)
        finally:
            for h in handles:
                h.remove()
        for t in _flat_tensors(out):
            s = self.src.get(id(t))
            if s is not None and s.kind == "out":
                self._use(s.origin, Use("other", "the model's output"))
            elif s is not None and s.raw:
                self._gemm_use(s.origin, Use("other", "the model's output"))
        return out


# the probe's hooks are not the user's: fused forwards that run the modules themselves where
# the user hooked them (nn.fused._hooked) run fused under the probe, as without it
Probe._pre._normfuse_probe = Probe._post._normfuse_probe = True


def _show(path: str) -> str:
    return f"'{path}'" if path else "the model"


def _flat_tensors(obj, depth: int = 0) -> list[torch.Tensor]:
    """The tensors in a model output: tensors, lists, tuples, dicts (ModelOutput) nested."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if depth > 6:
        return []
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _flat_tensors(o, depth + 1)]
    return []
