"""Post-norm rewrite: `norm(dropout(linear(h)) [+ bias] + residual)` in one module's forward
becomes one `ops.linear_layernorm` / `ops.linear_rmsnorm` call.

    %l = call_module[linear](%h)                %lm = get_attr[linear]
    %d = call_module[dropout](%l)        ->     %nm = get_attr[norm]
    %s = add(%d, %r)                            %z = call_function[fused_post_norm](%h, %r, %lm,
    %z = call_module[norm](%s)                                         %nm, None, kind, eps, ...)

The rewritten graph is compiled to a Python function of `self` and called with the caller
itself as self: every submodule and parameter is looked up on the caller at call time, so the
rewritten forward follows the caller's current modules and parameters (FSDP's unsharded
parameters, model.to() with new Parameter objects, load_state_dict(assign=True), a linear
replaced later). Pickling keeps only what rebuilds it (the graph is traced again on first use).

The module whose forward calls both the linear and the norm is traced with torch.fx, every
submodule a leaf (its own forward must be traceable; the submodules stay black boxes), once in
eval and once in train mode (a forward that reads self.training is specialized both ways). Its
non-tensor arguments are specialized to the values of the example call; other values run the
original forward. The linear's output, the dropout's and the sums must have no other user.
"""
from __future__ import annotations

import inspect
import linecache
import operator
from typing import Any

import torch
import torch.fx as fx
from torch import nn

from .fused import fused_post_norm, gemm_weight
from .probe import is_gemm_module

__all__ = ["PostNormFailure", "PostNormForward", "build_post_forward"]


class PostNormFailure(Exception):
    """The pattern is not there, or the forward cannot be traced; str() says why."""


class _AllLeaves(fx.Tracer):
    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return True


def _is_add(n: fx.Node) -> bool:
    return ((n.op == "call_function" and n.target in (operator.add, torch.add))
            or (n.op == "call_method" and n.target == "add")) and not n.kwargs


def _submodule(root: nn.Module, target: str):
    try:
        return root.get_submodule(target)
    except AttributeError:
        return None


def _signature_params(module: nn.Module, args: tuple, kwargs: dict):
    """(concrete_args for fx, PostNormForward.params) from the example call's arguments."""
    sig = inspect.signature(type(module).forward)
    ps = list(sig.parameters.values())[1:]  # drop self
    for p in ps:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            stars = "*" if p.kind == p.VAR_POSITIONAL else "**"
            raise PostNormFailure(f"the forward of {type(module).__name__} takes {stars}{p.name}; "
                                  f"torch.fx cannot specialize it")
    bound = sig.bind(module, *args, **kwargs)
    bound.apply_defaults()
    concrete, params, seen_fixed = {}, [], False
    for pos, p in enumerate(ps):
        v = bound.arguments[p.name]
        fixed = not isinstance(v, torch.Tensor)
        if fixed and not isinstance(v, (bool, int, float, str, type(None))):
            raise PostNormFailure(f"the forward of {type(module).__name__} takes '{p.name}' as a "
                                  f"{type(v).__name__}; the rewrite specializes only None, bool, "
                                  f"int, float and str arguments")
        if fixed:
            concrete[p.name] = v
            seen_fixed = True
        elif seen_fixed:
            raise PostNormFailure(f"the forward of {type(module).__name__} takes the tensor "
                                  f"'{p.name}' after a non-tensor argument")
        default = None if p.default is inspect.Parameter.empty else p.default
        params.append((pos, p.name, default, fixed, v if fixed else None))
    return concrete, params


def _trace(module: nn.Module, concrete: dict, training: bool) -> fx.Graph:
    was = module.training
    module.training = training
    try:
        return _AllLeaves().trace(module, concrete_args=concrete or None)
    except Exception as e:  # noqa: BLE001 - fx's errors say what failed
        raise PostNormFailure(f"the forward of {type(module).__name__} cannot be traced by "
                              f"torch.fx: {type(e).__name__}: {str(e).splitlines()[0][:160]}") from e
    finally:
        module.training = was


def _rewrite(root: nn.Module, graph: fx.Graph, norm_rel: str, spec,
             want: str | None = None) -> tuple[str, list[str]]:
    """Replace the pattern ending in call_module[norm_rel] by a call of fused_post_norm; return
    (linear target, dropout targets). `want`: the linear (relative path) the probe saw reach
    the norm; another GEMM output in the sum is a residual term. Raises PostNormFailure with
    the reason when the pattern is not there."""
    norms = [n for n in graph.nodes if n.op == "call_module" and n.target == norm_rel]
    if len(norms) != 1:
        raise PostNormFailure(f"the norm is called {len(norms)} times in the traced forward")
    nnode = norms[0]
    if len(nnode.args) != 1 or nnode.kwargs or not isinstance(nnode.args[0], fx.Node):
        raise PostNormFailure("the norm is called with more than one argument")
    dead = [nnode]
    terms = []

    def expand(n: fx.Node, top: bool):
        if _is_add(n) and (top or len(n.users) == 1) and all(isinstance(a, fx.Node) for a in n.args[:2]):
            if not top:
                dead.append(n)
            expand(n.args[0], False)
            expand(n.args[1], False)
        else:
            terms.append(n)
    s = nnode.args[0]
    if _is_add(s):
        if len(s.users) != 1:
            raise PostNormFailure("the sum the norm reads is also used elsewhere")
        dead.append(s)
        expand(s, True)
    else:
        terms.append(s)

    lin = bias = resid = None
    dropouts = []
    for t in terms:
        chain, cur = [], t
        while (cur.op == "call_module" and isinstance(_submodule(root, cur.target),
                                                      nn.modules.dropout._DropoutNd)
               and len(cur.users) == 1 and len(cur.args) == 1):
            chain.append(cur)
            cur = cur.args[0]
        inner_bias = None
        if _is_add(cur) and len(cur.users) == 1:
            a, b = cur.args[:2]
            for u, v in ((a, b), (b, a)):
                if (isinstance(v, fx.Node) and v.op == "get_attr" and isinstance(u, fx.Node)
                        and u.op == "call_module" and is_gemm_module(_submodule(root, u.target))):
                    chain.append(cur)
                    inner_bias, cur = v, u
                    break
        m = _submodule(root, cur.target) if cur.op == "call_module" else None
        if (m is not None and is_gemm_module(m) and len(cur.users) == 1 and lin is None
                and (want is None or cur.target == want)):
            lin = cur
            if inner_bias is not None:
                if bias is not None:
                    raise PostNormFailure("a bias is added both to the linear's output and to "
                                          "the sum")
                bias = inner_bias
            dead.extend(chain + [cur])
            dropouts.extend(c.target for c in chain if c.op == "call_module")
            continue
        if cur is t and t.op == "get_attr" and bias is None and inner_bias is None:
            try:
                p = root.get_parameter(t.target)
            except AttributeError:
                p = None
            if p is not None and p.dim() == 1:
                bias = t
                continue
        if resid is None:
            resid = t
            continue
        raise PostNormFailure("the norm's input sums more than a GEMM output, a bias and one "
                              "residual")
    if lin is None:
        raise PostNormFailure("no GEMM output reaches the norm directly (only through dropout "
                              "and additions) in this forward" + (
                                  f" from {want}" if want is not None else ""))
    lin_mod = _submodule(root, lin.target)
    if bias is not None and lin_mod.bias is not None:
        raise PostNormFailure("both the linear's bias and a separate bias are added")
    if len(lin.args) != 1 or lin.kwargs:
        raise PostNormFailure("the linear is called with more than one argument")
    N = gemm_weight(lin_mod).shape[0]
    if N != spec.features:
        raise PostNormFailure(f"the GEMM's output has {N} features, the norm {spec.features}")
    with graph.inserting_before(nnode):
        lm, nm = graph.get_attr(lin.target), graph.get_attr(norm_rel)
        new = graph.call_function(fused_post_norm, (lin.args[0], resid, lm, nm, bias, spec.kind,
                                                    float(spec.eps), float(spec.offset),
                                                    spec.weight, spec.bias))
    nnode.replace_all_uses_with(new)
    changed = True
    while changed:  # the pattern's nodes, each once its users are gone
        changed = False
        for d in dead:
            if d.graph is graph and not d.users and d in set(graph.nodes):
                graph.erase_node(d)
                changed = True
    graph.lint()
    return lin.target, dropouts


def _compile(graph: fx.Graph, name: str):
    """The graph as a Python function forward(self, ...) (self: the caller)."""
    code = graph.python_code(root_module="self")
    filename = f"<normfuse post-norm forward of {name} {id(graph):x}>"
    linecache.cache[filename] = (len(code.src), None, code.src.splitlines(True), filename)
    scope = dict(code.globals)
    exec(compile(code.src, filename, "exec"), scope)  # noqa: S102 - code generated by torch.fx
    return scope["forward"]


class PostNormForward:
    """Installed as `module.forward` (an instance attribute) by optimize: the module's forward
    with each recognized post-norm pattern fused (traced in eval and in train mode), or the
    original forward when a dropout of a pattern is active (training and p > 0) or a non-tensor
    argument differs from the value the graph was specialized to; with the composed training
    plan (`train_plan`) the original forward whenever it trains.

    `params`: (position, name, default, fixed, value) per forward parameter (self excluded):
    fixed parameters must equal `value` at call time, the others are passed to the graph."""

    # "composed": the original forward in training (grad mode on and an argument or a
    # parameter of the module requiring grad); "fused": the fused graph in train mode (the
    # original forward while a dropout of a pattern is active)
    train_plan = "composed"

    def __init__(self, module: nn.Module, norms: list[tuple[str, object]], params: list[tuple]):
        self.module = module
        self.norms = norms
        self.params = params
        self.found = self._build()

    def _build(self) -> dict[str, tuple[str, list[str]]]:
        m = self.module
        concrete = {name: value for _, name, _, fixed, value in self.params if fixed}
        fns, found = [], {}
        for training in (False, True):
            graph = _trace(m, concrete, training)
            for rel, spec, *want in self.norms:
                found[rel] = _rewrite(m, graph, rel, spec, *want)
            fns.append(_compile(graph, type(m).__name__))
        self.fn_eval, self.fn_train = fns
        self.dropouts = [m.get_submodule(d) for _, ds in found.values() for d in ds]
        return found

    def _graph_args(self, args: tuple, kwargs: dict[str, Any]):
        vals = []
        for pos, name, default, fixed, value in self.params:
            v = args[pos] if pos < len(args) else kwargs.get(name, default)
            if fixed:
                if v is not value and not (type(v) is type(value) and v == value):
                    return None
            elif not isinstance(v, torch.Tensor):
                return None  # traced with a tensor there (a mask given as None now)
            else:
                vals.append(v)
        return vals

    def _wants_grad(self, args: tuple, kwargs: dict) -> bool:
        if not torch.is_grad_enabled():
            return False
        for vs in (args, kwargs.values()):  # (the first argument first: the common case)
            for v in vs:
                if isinstance(v, torch.Tensor) and v.requires_grad:
                    return True
        return any(p.requires_grad for p in self.module.parameters())

    def __call__(self, *args, **kwargs):
        m = self.module
        if self.train_plan == "composed" and self._wants_grad(args, kwargs):
            return type(m).forward(m, *args, **kwargs)
        if self.fn_eval is None:  # unpickled or copied: trace again
            if getattr(self, "failed", None):
                return type(m).forward(m, *args, **kwargs)
            try:
                self._build()
            except PostNormFailure as e:  # (the caller changed since: its own forward, from now)
                self.failed = str(e)
                return type(m).forward(m, *args, **kwargs)
        vals = self._graph_args(args, kwargs)
        # (an active dropout also in an eval-mode caller: MC dropout keeps it training)
        if vals is None or any(d.training and d.p > 0 for d in self.dropouts):
            return type(m).forward(m, *args, **kwargs)
        return (self.fn_train if m.training else self.fn_eval)(m, *vals)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.update(fn_eval=None, fn_train=None, dropouts=[])
        return state


def build_post_forward(caller: nn.Module, norms: list[tuple], args: tuple,
                       kwargs: dict) -> PostNormForward:
    """The PostNormForward for `caller` with each (norm path relative to caller, spec[, the
    linear's relative path]) rewritten; `args`/`kwargs`: one example call of caller.forward.
    Its `found` maps each norm to (the linear's relative path, the dropouts' relative paths).
    Raises PostNormFailure."""
    _, params = _signature_params(caller, args, kwargs)
    return PostNormForward(caller, norms, params)
