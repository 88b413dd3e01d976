"""Post-norm rewrite: `norm(dropout(linear(h)) [+ bias] + residual)` in one module's forward
becomes one `ops.linear_layernorm` / `ops.linear_rmsnorm` call.

    %l = call_module[linear](%h)
    %d = call_module[dropout](%l)           ->      %z = call_module[normfuse_post_<i>](%h, %r)
    %s = add(%d, %r)
    %z = call_module[norm](%s)

normfuse_post_<i> is a FusedPostNorm holding the original linear and norm; the graph module is
built over a dict of the caller's submodules (it is not registered in the model: the
parameters stay where they were).

The module whose forward calls both the linear and the norm is traced with torch.fx, every
submodule a leaf (its own forward must be traceable; the submodules stay black boxes), once in
eval and once in train mode (a forward that reads self.training is specialized both ways). Its
non-tensor arguments are specialized to the values of the example call; other values run the
original forward. The linear's output, the dropout's and the sums must have no other user.
"""
from __future__ import annotations

import inspect
import operator

import torch
import torch.fx as fx
from torch import nn

from .fused import FusedPostNorm, PostNormForward, gemm_weight
from .probe import is_gemm_module

__all__ = ["PostNormFailure", "build_post_plan"]


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
    """(concrete_args for fx, PostNormPlan.params) from the example call's arguments."""
    sig = inspect.signature(type(module).forward)
    ps = list(sig.parameters.values())[1:]  # drop self
    for p in ps:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise PostNormFailure(f"the forward of {type(module).__name__} takes *{p.name}; "
                                  f"torch.fx cannot specialize it")
    bound = sig.bind(module, *args, **kwargs)
    bound.apply_defaults()
    concrete, params, seen_fixed = {}, [], False
    for pos, p in enumerate(ps):
        v = bound.arguments[p.name]
        fixed = not isinstance(v, torch.Tensor)
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
             extra: dict) -> tuple[str, list[str]]:
    """Replace the pattern ending in call_module[norm_rel] by a call of a new FusedPostNorm
    (added to `extra` under its target name); return (linear target, dropout targets). Raises
    PostNormFailure with the reason when the pattern is not there."""
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
        if m is not None and is_gemm_module(m) and len(cur.users) == 1 and lin is None:
            lin = cur
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
                              "and additions) in this forward")
    lin_mod = _submodule(root, lin.target)
    if bias is not None and lin_mod.bias is not None:
        raise PostNormFailure("both the linear's bias and a separate bias are added")
    if len(lin.args) != 1 or lin.kwargs:
        raise PostNormFailure("the linear is called with more than one argument")
    N = gemm_weight(lin_mod).shape[0]
    if N != spec.features:
        raise PostNormFailure(f"the GEMM's output has {N} features, the norm {spec.features}")
    name = f"normfuse_post_{len(extra)}"
    extra[name] = FusedPostNorm(lin_mod, _submodule(root, norm_rel), spec)
    with graph.inserting_before(nnode):
        args = (lin.args[0], resid) + ((bias,) if bias is not None else ())
        new = graph.call_module(name, args)
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


def _graph_module(root: nn.Module, graph: fx.Graph, extra: dict, name: str) -> fx.GraphModule:
    """A GraphModule over the caller's submodules and parameters that the graph uses (the same
    objects) and the new FusedPostNorm calls."""
    attrs = {}
    for n in graph.nodes:
        if n.op in ("call_module", "get_attr") and n.target not in extra:
            attrs[n.target] = (root.get_submodule(n.target) if n.op == "call_module"
                               else _attr(root, n.target))
    attrs.update(extra)
    return fx.GraphModule(attrs, graph, class_name=name)


def _attr(root: nn.Module, target: str):
    obj = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def build_post_plan(caller: nn.Module, norms: list[tuple[str, object]], args: tuple,
                    kwargs: dict) -> tuple[PostNormForward, dict[str, tuple[str, list[str]]]]:
    """The PostNormForward for `caller` with each (norm path relative to caller, spec)
    rewritten; `args`/`kwargs`: one example call of caller.forward. Returns it and, per norm,
    (the linear's relative path, the dropouts' relative paths). Raises PostNormFailure."""
    concrete, params = _signature_params(caller, args, kwargs)
    gms, found = [], {}
    for training in (False, True):
        graph = _trace(caller, concrete, training)
        extra = {}
        for rel, spec in norms:
            found[rel] = _rewrite(caller, graph, rel, spec, extra)
        gms.append(_graph_module(caller, graph, extra, f"{type(caller).__name__}PostNorm"))
    dropouts = [caller.get_submodule(d) for _, ds in found.values() for d in ds]
    return PostNormForward(caller, gms[0], gms[1], dropouts, params), found
