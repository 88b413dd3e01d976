"""Recognize a normalization module by what its forward computes, not by its class.

`recognize(module, features, dtype)` traces the module's forward on its own to an aten graph
(`make_fx` on a small CPU example, the module's parameters passed in through
`torch.func.functional_call`, so the module itself is not touched) and reads the graph with a
small abstract interpreter whose values are the pieces of a norm:

    x            the input (casts are transparent: an fp32 upcast of a 16-bit x is noted)
    mean         mean(x) over the last dim           cen   x - mean
    sq(b)        b^2 for b in {x, cen}               ms(b, eps)   mean(sq(b)) + eps
    std(b, eps, out)   sqrt(ms(b, eps)) + out        rstd(b, eps, out)   1 / std(b, eps, out)
    n(b, ...)    b * rstd(b, ...) or b / std(b, ...), then * (offset + g) and + beta
    p(name, off) a parameter [K] plus a constant     c   a scalar constant

The usual spellings all reduce to one `n` value: F.rms_norm and nn.RMSNorm (decomposed by the
trace), F.layer_norm / nn.LayerNorm (aten.native_layer_norm), `x * rsqrt(x.pow(2).mean(-1,
keepdim=True) + eps) * w` (LlamaRMSNorm, T5LayerNorm), Gemma's `* (1 + w)`, an fp32 upcast and the
cast back, `(x - mu) / sqrt(var + eps)` with var from mean((x - mu)^2), `var(correction=0)` or
`var_mean`. The result is a `NormSpec`: y = norm(x) * (offset + g) [+ beta] over the last dim,
norm(x) = x * rsqrt(mean(x^2) + eps) (RMS) or (x - mean) * rsqrt(var + eps) (LayerNorm).

The spec is then VERIFIED: the module (its parameters replaced by random values, fp32, CPU) and
the spec (fp64) are run on rows whose mean square lies near eps and far from it (so eps, the
offset and the roles of the parameters are all visible); a mismatch is a refusal.

Refused on purpose (the kernels compute rsqrt(ms + eps) over the last dimension only):
eps outside the square root (`x / (sqrt(ms) + eps)`), the unbiased variance (divides by K - 1),
normalized_shape of more than one dimension, a scale or shift that is not a [K] parameter.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass

import torch

__all__ = ["NormSpec", "NotANorm", "Unsupported", "recognize", "looks_like_norm"]


class NotANorm(Exception):
    """The module computes no reduction over its input's last dimension: not a norm at all."""


class Unsupported(Exception):
    """The module normalizes, but not in a form the fused kernels compute; str() says why."""


@dataclass(frozen=True)
class NormSpec:
    """y = norm(x) * (offset + weight) [+ bias] over the last dimension (size `features`).

    kind: "rms" (x * rsqrt(mean(x^2) + eps)) or "ln" ((x - mean) * rsqrt(var + eps), biased
    variance); weight/bias: names of the module's parameters (None: absent); offset: 1.0 for
    Gemma's (1 + w), else 0.0; upcast: the forward casts a 16-bit input to fp32 for the
    statistics (the fused kernels always accumulate in fp32, so this only informs the report).
    """

    kind: str
    eps: float
    weight: str | None
    offset: float
    bias: str | None
    upcast: bool
    features: int

    @property
    def title(self) -> str:
        return "RMSNorm" if self.kind == "rms" else "LayerNorm"

    def describe(self) -> str:
        if self.weight is None:
            scale = "no scale"
        elif self.offset:
            scale = f"scale ({self.offset:g} + {self.weight})"
        else:
            scale = f"scale {self.weight}"
        parts = [f"{self.title} eps={self.eps:g}", scale]
        if self.bias is not None:
            parts.append(f"shift {self.bias}")
        if self.upcast:
            parts.append("fp32 upcast")
        return ", ".join(parts)

    def compute(self, x: torch.Tensor, weight: torch.Tensor | None,
                bias: torch.Tensor | None) -> torch.Tensor:
        """The spec's function in x's dtype (the verification runs it in float64)."""
        if self.kind == "ln":
            x = x - x.mean(-1, keepdim=True)
        y = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + self.eps)
        if weight is not None:
            y = y * (weight + self.offset)
        if bias is not None:
            y = y + bias
        return y


# ---------------------------------------------------------------------------------------------
# Abstract values
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _V:
    t: str                     # x, c, p, mean, cen, sq, sum, ms, std, rstd, n, tuple
    b: str | None = None       # base of a statistic: "x" or "cen"
    eps: float = 0.0           # added inside the square root
    out: float = 0.0           # added outside the square root
    name: str | None = None    # parameter name (p)
    off: float = 0.0           # p: constant added to the parameter
    v: float | None = None     # c: the value
    w: tuple | None = None     # n: (name, offset) of the scale
    bias: str | None = None    # n: name of the shift
    items: tuple = ()          # tuple: element values


_X = _V("x")


def _const(v: _V | None) -> float | None:
    return v.v if v is not None and v.t == "c" else None


class _Interp:
    """Evaluates the aten graph of a module's forward over `_V` values (None: unrecognized)."""

    def __init__(self, gm: torch.fx.GraphModule, names: list[str], x_dtype: torch.dtype):
        self.gm = gm
        self.names = names            # placeholder order: parameter names, then "x"
        self.x_dtype = x_dtype
        self.ndim = None
        self.upcast = False
        self.env: dict[torch.fx.Node, _V | None] = {}
        self.unknown: dict[torch.fx.Node, str] = {}

    # -- helpers --
    def _last(self, dims) -> bool:
        if isinstance(dims, int):
            dims = [dims]
        return (isinstance(dims, (list, tuple)) and len(dims) == 1
                and dims[0] in (-1, self.ndim - 1))

    def _arg(self, a):
        if isinstance(a, torch.fx.Node):
            return self.env.get(a)
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return _V("c", v=float(a))
        return None

    # -- the interpreter --
    def run(self) -> _V | None:
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for node, name in zip(placeholders, self.names):
            if name == "x":
                self.ndim = node.meta["val"].dim() if "val" in node.meta else 3
                self.env[node] = _X
            else:
                val = node.meta.get("val")
                if val is not None and val.dim() == 0:
                    self.env[node] = None
                    self.unknown[node] = f"0-d tensor {name}"
                else:
                    self.env[node] = _V("p", name=name)
        result = None
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                out = node.args[0]
                if isinstance(out, (list, tuple)):
                    out = out[0] if len(out) == 1 else None
                result = self.env.get(out) if isinstance(out, torch.fx.Node) else None
                break
            if node.op == "get_attr":
                t = getattr(self.gm, node.target)
                if isinstance(t, torch.Tensor) and t.numel() == 1:
                    self.env[node] = _V("c", v=float(t.item()))
                else:
                    self.env[node] = None
                    self.unknown[node] = f"constant tensor {node.target}"
                continue
            try:
                val = self.step(node)
            except Unsupported:
                raise
            except Exception:  # noqa: BLE001 - a form the interpreter does not model
                val = None
            self.env[node] = val
            if val is None and all(self.env.get(i) is not None for i in node.all_input_nodes):
                self.unknown[node] = _op_name(node)  # the first op not understood on its path
        return result

    def step(self, node: torch.fx.Node) -> _V | None:
        tgt = node.target
        if tgt is operator.getitem:
            tup = self._arg(node.args[0])
            if tup is not None and tup.t == "tuple" and node.args[1] < len(tup.items):
                return tup.items[node.args[1]]
            return None
        if not isinstance(tgt, torch._ops.OpOverload):
            return None
        op = _packet(tgt)  # in-place forms (add_, mul_) read as their out-of-place op
        args = node.args
        kw = node.kwargs
        a = self._arg(args[0]) if args else None

        if op in ("_to_copy", "clone", "alias", "detach", "to", "lift_fresh_copy", "contiguous",
                  "convert_element_type"):  # (prims.convert_element_type: Inductor's graphs)
            if a is not None and a.t == "x":
                dt = args[1] if op == "convert_element_type" else kw.get("dtype")
                if (dt in (torch.float32, torch.float64)
                        and self.x_dtype in (torch.float16, torch.bfloat16)):
                    self.upcast = True
            return a
        if op in ("view", "reshape", "expand", "unsqueeze", "_unsafe_view"):
            return a if a is not None and a.t in ("p", "c") else None
        if op == "pow":
            e = args[1]
            if a is None or not isinstance(e, (int, float)):
                return None
            if e == 2 and a.t in ("x", "cen"):
                return _V("sq", b=a.t)
            if e == 0.5 and a.t == "ms":
                return _V("std", b=a.b, eps=a.eps)
            if e == -0.5 and a.t == "ms":
                return _V("rstd", b=a.b, eps=a.eps)
            return None
        if op == "square":
            return _V("sq", b=a.t) if a is not None and a.t in ("x", "cen") else None
        if op in ("mean", "sum"):
            dims = args[1] if len(args) > 1 else kw.get("dim")
            keep = args[2] if len(args) > 2 else kw.get("keepdim", False)
            if a is None or not self._last(dims) or not keep:
                return None
            is_mean = op == "mean"
            if a.t == "x":
                return _V("mean") if is_mean else _V("sum", b="xsum")
            if a.t == "sq":
                return _V("ms", b=a.b) if is_mean else _V("sum", b=a.b)
            return None
        if op in ("var", "var_mean"):
            dims = args[1] if len(args) > 1 else kw.get("dim")
            corr = kw.get("correction", 1)
            keep = kw.get("keepdim", False)
            if a is None or a.t != "x" or not self._last(dims) or not keep:
                return None
            if corr not in (0, 0.0):
                raise Unsupported(f"the variance is unbiased (divides by K - {corr}); the kernels "
                                  f"use the biased variance (divides by K), as nn.LayerNorm")
            ms = _V("ms", b="cen")
            return ms if op == "var" else _V("tuple", items=(ms, _V("mean")))
        if op == "sub":
            alpha = kw.get("alpha", 1)
            b = self._arg(args[1])
            if alpha == 1 and a is not None and b is not None and a.t == "x" and b.t == "mean":
                return _V("cen")
            if b is not None and b.t == "c" and alpha == 1:
                return self._add(a, _V("c", v=-b.v))
            return None
        if op == "add":
            if kw.get("alpha", 1) != 1:
                return None
            return self._add(a, self._arg(args[1]))
        if op == "mul":
            return self._mul(a, self._arg(args[1]), args[0] is args[1])
        if op == "div":
            return self._div(a, self._arg(args[1]))
        if op == "rsqrt":
            return _V("rstd", b=a.b, eps=a.eps) if a is not None and a.t == "ms" else None
        if op == "sqrt":
            return _V("std", b=a.b, eps=a.eps) if a is not None and a.t == "ms" else None
        if op == "reciprocal":
            return _V("rstd", b=a.b, eps=a.eps, out=a.out) if a is not None and a.t == "std" else None
        if op in ("native_layer_norm", "layer_norm"):
            shape, w, bias, eps = args[1], args[2], args[3], args[4]
            self._check_shape(shape)
            n = self._native(a, "cen", eps, w, bias)
            return n if op == "layer_norm" else _V("tuple", items=(n, None, None))
        if op in ("rms_norm", "_fused_rms_norm"):
            shape, w = args[1], args[2] if len(args) > 2 else None
            eps = args[3] if len(args) > 3 else kw.get("eps")
            self._check_shape(shape)
            if eps is None:
                eps = torch.finfo(self.x_dtype).eps
            n = self._native(a, "x", eps, w, None)
            return n if op == "rms_norm" else _V("tuple", items=(n, None))
        return None

    def _check_shape(self, shape) -> None:
        if len(shape) != 1:
            raise Unsupported(f"it normalizes over the last {len(shape)} dimensions "
                              f"(normalized_shape {tuple(shape)}); the kernels normalize the last "
                              f"dimension only")

    def _native(self, a, base, eps, w, bias):
        if a is None or a.t != "x":
            return None
        wv = self._arg(w) if w is not None else None
        bv = self._arg(bias) if bias is not None else None
        if ((w is not None and (wv is None or wv.t != "p"))
                or (bias is not None and (bv is None or bv.t != "p"))):
            return None
        return _V("n", b=base, eps=float(eps), w=None if wv is None else (wv.name, wv.off),
                  bias=None if bv is None else bv.name)

    def _add(self, a, b):
        if a is None or b is None:
            return None
        for u, v in ((a, b), (b, a)):
            c = _const(v)
            if c is not None:
                if u.t == "c":
                    return _V("c", v=u.v + c)
                if u.t == "ms":
                    return _V("ms", b=u.b, eps=u.eps + c)
                if u.t == "std":
                    return _V("std", b=u.b, eps=u.eps, out=u.out + c)
                if u.t == "p":
                    return _V("p", name=u.name, off=u.off + c)
                return None
            if u.t == "n" and v.t == "p" and v.off == 0 and u.bias is None:
                return _V("n", b=u.b, eps=u.eps, out=u.out, w=u.w, bias=v.name)
        return None

    def _mul(self, a, b, same: bool):
        if a is None or b is None:
            return None
        if same and a.t in ("x", "cen"):
            return _V("sq", b=a.t)
        for u, v in ((a, b), (b, a)):
            if u.t in ("x", "cen") and v.t == "rstd" and v.b == u.t:
                return _V("n", b=u.t, eps=v.eps, out=v.out)
            if u.t == "n" and v.t == "p" and u.w is None and u.bias is None:
                return _V("n", b=u.b, eps=u.eps, out=u.out, w=(v.name, v.off))
            c = _const(v)
            if c is not None:
                if u.t == "c":
                    return _V("c", v=u.v * c)
                if c == 1.0:
                    return u
                if u.t == "sum" and self.K and math.isclose(c * self.K, 1.0, rel_tol=1e-6):
                    return _V("mean") if u.b == "xsum" else _V("ms", b=u.b)
                return None
        return None

    def _div(self, a, b):
        if a is None or b is None:
            return None
        c = _const(b)
        if c is not None:
            if a.t == "sum" and self.K and math.isclose(c, self.K, rel_tol=1e-6):
                return _V("mean") if a.b == "xsum" else _V("ms", b=a.b)
            if a.t == "c" and c != 0:
                return _V("c", v=a.v / c)
            return a if c == 1.0 else None
        if a.t in ("x", "cen") and b.t == "std" and b.b == a.t:
            return _V("n", b=a.t, eps=b.eps, out=b.out)
        if _const(a) == 1.0 and b.t == "std":
            return _V("rstd", b=b.b, eps=b.eps, out=b.out)
        return None

    K: int | None = None


def _packet(target) -> str:
    name = target.overloadpacket.__name__
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _op_name(node: torch.fx.Node) -> str:
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return f"aten.{t.overloadpacket.__name__}"
    return getattr(t, "__name__", str(t))


_REDUCTIONS = ("mean", "sum", "var", "var_mean", "std", "std_mean", "native_layer_norm",
               "layer_norm", "rms_norm", "_fused_rms_norm", "norm", "linalg_vector_norm", "amax")


def _has_reduction(gm: torch.fx.GraphModule) -> bool:
    for n in gm.graph.nodes:
        if (isinstance(n.target, torch._ops.OpOverload)
                and n.target.overloadpacket.__name__ in _REDUCTIONS):
            return True
    return False


def looks_like_norm(module: torch.nn.Module) -> bool:
    """Only for wording the report: does the class name say it is a norm?"""
    return "norm" in type(module).__name__.lower()


# ---------------------------------------------------------------------------------------------
# Trace, interpret, verify
# ---------------------------------------------------------------------------------------------

def _tensors(module: torch.nn.Module, dtype: torch.dtype, params: dict | None = None):
    """The module's own parameters and buffers as CPU tensors (parameters in `dtype`)."""
    out = {}
    for name, p in module.named_parameters(recurse=False):
        t = params[name] if params is not None and name in params else p.detach()
        out[name] = t.to("cpu", dtype)
    for name, b in module.named_buffers(recurse=False):
        if b is not None:
            out[name] = b.detach().to("cpu")
    return out


def _example_shape(shape: tuple) -> tuple:
    """The trace's input shape: the probe's with at most 2 in the first dimension (and the
    middle dimensions cut to 3 when they hold more than 64 rows)."""
    shape = tuple(shape)
    if len(shape) == 1:
        return shape
    middle = shape[1:-1]
    if math.prod(middle) > 64:
        middle = tuple(min(s, 3) for s in middle)
    return (min(shape[0], 2),) + middle + (shape[-1],)


def _trace(module: torch.nn.Module, shape: tuple, dtype: torch.dtype) -> NormSpec:
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functional_call

    features = shape[-1]
    tensors = _tensors(module, dtype)
    x = torch.randn(shape, dtype=dtype)
    names = list(tensors) + ["x"]

    def fn(ts, x):
        return functional_call(module, ts, (x,))
    try:
        with torch.no_grad():
            gm = make_fx(fn)(tensors, x)
    except Exception as e:  # noqa: BLE001 - anything the forward does on a lone [2, 3, K] input
        raise NotANorm(f"its forward could not be traced on a {list(shape)} {dtype} input: "
                       f"{type(e).__name__}: {e}") from e
    if not _has_reduction(gm):
        raise NotANorm("its forward has no reduction")
    interp = _Interp(gm, names, dtype)
    interp.K = features
    v = interp.run()
    if v is None or v.t != "n":
        why = ", ".join(sorted(set(interp.unknown.values()))) or "the output is not a normalized x"
        raise Unsupported(f"its forward is not a recognized RMSNorm or LayerNorm over the last "
                          f"dimension (unrecognized: {why})")
    if v.out != 0.0:
        raise Unsupported(f"eps={v.out:g} is added outside the square root (x / (sqrt(ms) + eps)); "
                          f"the kernels compute x * rsqrt(ms + eps), a different function")
    params = dict(module.named_parameters(recurse=False))
    for role, name in (("scale", v.w[0] if v.w else None), ("shift", v.bias)):
        if name is not None and (name not in params or tuple(params[name].shape) != (features,)):
            raise Unsupported(f"its {role} '{name}' is not a parameter of shape ({features},)")
    return NormSpec(kind="rms" if v.b == "x" else "ln", eps=_short_float(v.eps),
                    weight=v.w[0] if v.w else None, offset=v.w[1] if v.w else 0.0,
                    bias=v.bias, upcast=interp.upcast, features=features)


def _short_float(v: float) -> float:
    """eps as written (1e-06) rather than its float32 rounding (9.99999997e-07), when those are
    the same float32."""
    short = float(f"{v:.8g}")
    f32 = torch.tensor([v, short], dtype=torch.float32)
    return short if f32[0].item() == f32[1].item() else v


def _verify(module: torch.nn.Module, spec: NormSpec, shape: tuple, rtol: float = 2e-4) -> None:
    """Run the module (random parameters, fp32, CPU) and the spec (fp64) on rows whose mean
    square is 0.3, 1, 3 and 30 times eps and 1; raise Unsupported on a mismatch (beyond
    `rtol` relative to 1 + |value|)."""
    from torch.func import functional_call

    K = spec.features
    g = torch.Generator().manual_seed(1234)
    params = {n: (torch.rand(p.shape, generator=g) * 1.5 - 0.25) for n, p in
              module.named_parameters(recurse=False)}
    tensors = _tensors(module, torch.float32, params)
    eps = spec.eps if spec.eps > 0 else 1e-6
    levels = [0.3 * eps, eps, 3 * eps, 30 * eps, 1.0, 0.3 * eps, 2.0, 1e-2]
    rows = []
    for i, ms in enumerate(levels):
        z = torch.randn(K, generator=g, dtype=torch.float64)
        z = (z - z.mean()) / z.std(correction=0).clamp_min(1e-12)
        shift = 0.0 if i % 2 == 0 else 0.7  # a mean that RMSNorm keeps and LayerNorm removes
        rows.append((z + shift) * math.sqrt(ms))
    if len(shape) == 1:
        x = rows[0]
    else:
        inner = math.prod(shape[1:-1])
        lead = -(-len(rows) // inner)
        x = torch.stack([rows[i % len(rows)] for i in range(lead * inner)]).reshape(lead, *shape[1:])
    with torch.no_grad():
        try:
            got = functional_call(module, tensors, (x.float(),))
        except Exception as e:  # noqa: BLE001
            raise Unsupported(f"verification: the module failed on fp32 CPU input: {e}") from e
        w = params.get(spec.weight) if spec.weight else None
        b = params.get(spec.bias) if spec.bias else None
        want = spec.compute(x, None if w is None else w.double(), None if b is None else b.double())
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        raise Unsupported("verification: the module's output is not one tensor of its input's shape")
    err = (got.double() - want).abs()
    tol = rtol * (1 + want.abs())
    if not bool((err <= tol).all()):
        raise Unsupported(f"verification failed: {spec.describe()} differs from the module's "
                          f"output by up to {err.max().item():.3g} on random inputs")


def verify_spec(module: torch.nn.Module, spec: NormSpec, shape, rtol: float = 2e-4) -> None:
    """Check that `module` computes `spec` (a spec recognized on another module of the same
    kind): Unsupported on a mismatch. What `recognize` runs after tracing."""
    _verify(module, spec, _example_shape(shape), rtol)


def recognize(module: torch.nn.Module, shape, dtype: torch.dtype = torch.float32,
              rtol: float = 2e-4) -> NormSpec:
    """The NormSpec of `module` (called on inputs of `shape` and `dtype`), verified (to `rtol`:
    a graph whose casts are fixed to 16 bits, as Inductor's, rounds in the verification too).

    Raises NotANorm when the forward is no normalization at all, Unsupported with the reason
    when it is one the kernels do not compute. eps is read in `dtype` (an eps that defaults to
    torch.finfo(dtype).eps depends on it); the upcast flag too.
    """
    shape = _example_shape(shape)
    spec = _trace(module, shape, torch.float32)
    if dtype != torch.float32:
        low = _trace(module, shape, dtype)
        if ((low.kind, low.weight, low.offset, low.bias)
                != (spec.kind, spec.weight, spec.offset, spec.bias)):
            raise Unsupported(f"it computes {low.describe()} in {dtype} but {spec.describe()} in "
                              f"float32")
    _verify(module, spec, shape, rtol)
    if dtype != torch.float32:
        spec = low
    return spec
