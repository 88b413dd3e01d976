"""normfuse as an Inductor graph pass: `torch.compile(model)` fuses the norms that feed GEMMs
without `normfuse.optimize` (issue 19, item 2).

    from normfuse.nn import inductor_pass
    compiled = torch.compile(model, options=inductor_pass.options())   # this compile only
    inductor_pass.enable()                                              # or every compile
    ...
    print(inductor_pass.last_report())                                  # matches and refusals

What it rewrites. Inductor's post-grad graph (aten level, functional, after decompositions) is
searched for GEMMs (`aten.mm`, `aten.addmm` with alpha = beta = 1) whose left operand is, through
a reshape to [M, K], the output y of a normalization of some x over the last dimension. When
every user of y is such a GEMM, the GEMMs become one `normfuse::prenorm_linear` call over their
weights (W, or a Conv1D's [K, N] weight read transposed) and biases; each GEMM's result is its
column slice of that call's output (siblings such as q/k/v and gate/up: one call, the statistics
computed once per row block). The norm's nodes are then dead and go.

Post-norm: where x = GEMM(A, W) [+ bias] (through a reshape) [+ residual] and y is a norm of x
whose intermediate values nothing else reads, y becomes `normfuse::postnorm_linear(A, W, g,
beta, bias, residual)` reshaped to y's shape: BERT's LayerNorm(dense(h) + h0), and Gemma2's
norms right after o_proj and down_proj (no residual). A chain (BERT's next block takes the
previous post-norm's output as its residual) reads the previous fused op's output.

Algebra: norm(x) W^T + b = (x - mu) rstd (offset + g) W^T + beta W^T + b, which the op computes
(the scale folded into W, the shift into the bias; normfuse.ops.prenorm_linear). The op's
statistics are fp32 whatever the graph's spelling, as the models' own norms upcast; outputs
differ from the graph's by the rounding of the norm's output (y is never rounded to 16 bits).

Recognition is by what the subgraph computes, not by op names: the nodes between a candidate x
and y (whose other inputs are [K] vectors and constants) are copied into a small graph and read
by `nn.recognize` (its interpreter of norm spellings, then its numeric verification against the
NormSpec on rows near and far from eps), as for a module in `normfuse.optimize`; a [K] vector
made from graph inputs by a few vector ops (a cast of the scale, Gemma's 1 + w) is read into
the subgraph, so that the parameter and its offset are seen. x is the
farthest ancestor of y with y's shape from which such a subgraph reaches y; so a bf16 x upcast
to fp32 inside the norm is found as the bf16 tensor, and a residual add before the norm is not
taken in (it has two full-size inputs).

Legality (refused otherwise, with the reason in `last_report()`): every user of y is a GEMM as
above (a training forward graph saves y for the backward, an output user: refused, so training
graphs are left to Inductor); x, y, the weights and the biases share one dtype, the norm's
scale and shift too; the weights and biases are defined before the first GEMM (graph inputs or
nodes that precede it). A miss leaves the graph as it was.

On a CPU, or a GPU that is not Hopper, the op computes the same function with the reference
math (normfuse.ops' fallback), so a compiled model can be tested anywhere.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from dataclasses import dataclass, field

import torch
import torch.fx as fx

__all__ = ["NormfusePass", "options", "enable", "disable", "last_report", "Report"]

aten = torch.ops.aten
_GEMMS = (aten.mm.default, aten.addmm.default)
_RESHAPES = (aten.reshape.default, aten.view.default, aten._unsafe_view.default)
_TRANSPOSES = (aten.t.default, aten.permute.default)
_REDUCTIONS = ("mean", "sum", "var", "var_mean", "native_layer_norm", "rms_norm",
               "_fused_rms_norm")
MAX_NORM_NODES = 64     # the largest subgraph between x and y that is read as a norm
MAX_ANCESTORS = 96      # how far back from y a candidate x is looked for


@dataclass
class Report:
    """What the pass did to one compiled graph: `matched` and `refused` lines, in the user's
    terms (the graph's node names, the norm as recognized, the GEMMs)."""
    matched: list = field(default_factory=list)
    refused: list = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"normfuse inductor pass: {len(self.matched)} norm(s) fused, "
                 f"{len(self.refused)} refused"]
        lines += [f"  fused: {m}" for m in self.matched]
        lines += [f"  refused: {r}" for r in self.refused]
        return "\n".join(lines)


_REPORTS: list = []


def last_report() -> Report | None:
    """The report of the last graph the pass ran on (None before any)."""
    return _REPORTS[-1] if _REPORTS else None


def _hash() -> bytes:
    from . import recognize
    h = hashlib.sha256()
    for f in (__file__, recognize.__file__):
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.digest()


try:
    from torch._inductor.custom_graph_pass import CustomGraphPass as _Base
except ImportError:  # pragma: no cover - an Inductor without custom passes
    _Base = object


class NormfusePass(_Base):
    """The post-grad pass (`torch._inductor.config.post_grad_custom_post_pass`). Its uuid is
    the hash of this file and of nn/recognize.py, so Inductor's graph cache keys on the pass's
    code. `reports`: one Report per graph it ran on."""

    def __init__(self):
        self.reports: list[Report] = []

    def __call__(self, graph: fx.Graph) -> None:
        rep = rewrite(graph)
        self.reports.append(rep)
        _REPORTS.append(rep)
        del _REPORTS[:-64]

    def uuid(self) -> bytes:
        return _hash()


_DEFAULT = NormfusePass()


def options(p: NormfusePass | None = None) -> dict:
    """`torch.compile(model, options=options())`: Inductor options that run the pass in this
    compile only."""
    return {"post_grad_custom_post_pass": p or _DEFAULT}


def enable(p: NormfusePass | None = None) -> NormfusePass:
    """Run the pass in every Inductor compile from now on (torch._inductor.config). Refused when
    another post-grad custom pass is installed (it would be replaced)."""
    from torch._inductor import config
    cur = config.post_grad_custom_post_pass
    if cur is not None and not isinstance(cur, NormfusePass):
        raise ValueError(f"normfuse.nn.inductor_pass.enable: torch._inductor.config."
                         f"post_grad_custom_post_pass is already set ({cur!r}); compose the two "
                         f"passes in one callable, or pass options() to torch.compile")
    config.post_grad_custom_post_pass = p or _DEFAULT
    return config.post_grad_custom_post_pass


def disable() -> None:
    from torch._inductor import config
    if isinstance(config.post_grad_custom_post_pass, NormfusePass):
        config.post_grad_custom_post_pass = None


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------

def _val(n):
    v = n.meta.get("val") if isinstance(n, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _name(n) -> str:
    t = n.target
    if isinstance(t, torch._ops.OpOverload):
        return f"{t.overloadpacket.__name__}"
    return getattr(t, "__name__", str(t))


def _gemm_operands(g):
    """(A, B, bias) of mm / addmm with alpha = beta = 1, else None (any other node too)."""
    if not isinstance(g, fx.Node) or g.target not in _GEMMS:
        return None
    if g.target is aten.mm.default:
        return g.args[0], g.args[1], None
    if g.kwargs.get("beta", 1) != 1 or g.kwargs.get("alpha", 1) != 1:
        return None
    return g.args[1], g.args[2], g.args[0]


def _weight_of(B: fx.Node):
    """(the weight node, transposed) of a GEMM's right operand: W [N, K] read as W^T (nn.Linear:
    `t` / `permute([1, 0])` of it), else a [K, N] tensor (a Conv1D) the op reads transposed."""
    if B.target in _TRANSPOSES and (B.target is aten.t.default or list(B.args[1]) == [1, 0]):
        return B.args[0], False
    return B, True


def _reads(y: fx.Node):
    """The GEMMs reading y as their left operand (directly, or through a reshape to [M, K]
    used by nothing else): [(gemm, reshape or None)], and the other users (a description)."""
    gemms, other = [], []
    yv = _val(y)
    for u in y.users:
        uv = _val(u)
        # (a reshape to [M, K] only: one to [B, T * K] would normalize over rows it does not)
        if (u.target in _RESHAPES and uv is not None and uv.dim() == 2 and yv is not None
                and uv.shape[-1] == yv.shape[-1]):
            uses = list(u.users)
            ops = [_gemm_operands(v) for v in uses]
            ok = uses and all(o is not None and o[0] is u and o[1] is not u for o in ops)
            if ok:
                gemms += [(v, u) for v in uses]
                continue
            other += [_name(v) for v in uses if v.target not in _GEMMS] or [f"{_name(u)}"]
        elif (_gemm_operands(u) or (None,))[0] is y:
            gemms.append((u, None))
        else:
            other.append("the graph's output" if u.op == "output" else _name(u))
    return gemms, other


def _upstream(n: fx.Node, found, limit: int = MAX_NORM_NODES):
    """True when a node on n's inputs' paths (n included) satisfies `found`; False when none
    does; None when more than `limit` nodes were seen first."""
    seen, stack = {n}, [n]
    while stack and len(seen) <= limit:
        m = stack.pop()
        if found(m):
            return True
        for i in m.all_input_nodes:
            if i not in seen:
                seen.add(i)
                stack.append(i)
    return None if len(seen) > limit else False


def _has_reduction(y: fx.Node) -> bool:
    return bool(_upstream(y, lambda n: isinstance(n.target, torch._ops.OpOverload)
                          and _name(n) in _REDUCTIONS))


def _is_vector(n: fx.Node, K: int) -> bool:
    v = _val(n)
    return v is not None and v.dim() <= 1 and v.numel() in (1, K)


def _slice(y: fx.Node, x: fx.Node, K: int):
    """(nodes strictly between x and y plus y, vector leaves) when every input of the subgraph
    is x, a [K] (or one-element) vector that is a graph input, or a node of the subgraph;
    else None."""
    nodes, leaves, stack, reached = set(), [], [y], False
    while stack:
        n = stack.pop()
        if n is x:
            reached = True
            continue
        if n in nodes or n in leaves:
            continue
        if n.op in ("placeholder", "get_attr"):
            if not _is_vector(n, K):
                return None
            leaves.append(n)
            continue
        if n.op != "call_function":
            return None
        if _is_vector(n, K) and not _depends_on(n, x):
            chain = _vector_chain(n, K)
            if chain is None:
                leaves.append(n)  # a [K] vector computed from elsewhere: taken as it is
                continue
            # a [K] vector made from graph inputs by a few vector ops (a cast of the scale,
            # Gemma's 1 + w): read into the subgraph, so the recognizer sees the parameter
            # (in its dtype) and the offset
            cn, cl = chain
            nodes |= cn
            leaves.extend(leaf for leaf in cl if leaf not in leaves)
            continue
        nodes.add(n)
        if len(nodes) > MAX_NORM_NODES:
            return None
        stack.extend(n.all_input_nodes)
    return (nodes, leaves) if reached else None


def _vector_chain(n: fx.Node, K: int, limit: int = 8):
    """(nodes, graph-input leaves) when vector node n is computed from graph inputs ([K] or
    one-element) through at most `limit` vector nodes; else None."""
    nodes, leaves, stack = set(), [], [n]
    while stack:
        m = stack.pop()
        if m in nodes or m in leaves:
            continue
        if not _is_vector(m, K):
            return None
        if m.op in ("placeholder", "get_attr"):
            leaves.append(m)
            continue
        if m.op != "call_function" or len(nodes) >= limit:
            return None
        nodes.add(m)
        stack.extend(m.all_input_nodes)
    return nodes, leaves


def _depends_on(n: fx.Node, x: fx.Node) -> bool:
    # (too far to tell: treated as dependent, the subgraph then grows)
    return _upstream(n, lambda m: m is x) is not False


def _candidates(y: fx.Node):
    """Ancestors of y with y's shape, nearest first."""
    yv = _val(y)
    order, seen, queue = [], {y}, [y]
    while queue and len(seen) < MAX_ANCESTORS:
        n = queue.pop(0)
        for i in n.all_input_nodes:
            if i in seen:
                continue
            seen.add(i)
            queue.append(i)
            v = _val(i)
            if v is not None and tuple(v.shape) == tuple(yv.shape):
                order.append(i)
    return order


class _Sub(torch.nn.Module):
    """The subgraph between x and y as a module of x whose parameters are the vector leaves
    (p0, p1, ...): what nn.recognize reads and verifies."""

    def __init__(self, gm: fx.GraphModule, leaves):
        super().__init__()
        self.gm = gm
        self.n = len(leaves)
        for i, leaf in enumerate(leaves):
            v = _val(leaf)
            self.register_parameter(f"p{i}", torch.nn.Parameter(
                torch.ones(tuple(v.shape), dtype=v.dtype), requires_grad=False))

    def forward(self, x):
        return self.gm(*[getattr(self, f"p{i}") for i in range(self.n)], x)


def _subgraph(graph: fx.Graph, y, x, nodes, leaves) -> _Sub:
    g = fx.Graph()
    env = {}
    for i, leaf in enumerate(leaves):
        env[leaf] = g.placeholder(f"p{i}")
    env[x] = g.placeholder("x")
    for n in graph.nodes:
        if n in nodes:
            env[n] = g.node_copy(n, lambda a: env[a])
    g.output(env[y])
    return _Sub(fx.GraphModule(torch.nn.Module(), g), leaves)


def match_norm(graph: fx.Graph, y: fx.Node):
    """(x, NormSpec, {parameter name: leaf node}) when y is a recognized norm of some x over the
    last dimension, else (None, None, why): why is None when nothing on y's path looks like a
    norm (an attention output, an activation: not worth a report line), else the recognizer's
    reason for a norm the kernels do not compute (eps outside the square root, ...)."""
    yv = _val(y)
    if yv is None or yv.dim() < 1:
        return None, None, "no shape information"
    K = yv.shape[-1]
    if not isinstance(K, int):
        return None, None, "its last dimension is symbolic"
    passing = []
    for c in _candidates(y):
        s = _slice(y, c, K)
        if s is not None:
            passing.append((c, s))
    why = None
    for x, (nodes, leaves) in reversed(passing):  # the farthest x first
        spec, err = recognize_subgraph(graph, y, x, nodes, leaves)
        if spec is not None:
            return x, spec, {f"p{i}": leaf for i, leaf in enumerate(leaves)}
        why = why or err  # (the farthest x's reason)
    return None, None, why


_SPECS: dict = {}  # the recognizer's answer per subgraph structure (a model's layers repeat)


def recognize_subgraph(graph: fx.Graph, y, x, nodes, leaves):
    """(NormSpec, None), or (None, why: a norm the kernels do not compute) or (None, None: not
    a norm) for the subgraph from x (and the vector leaves) to y; cached by its structure."""
    from .recognize import NotANorm, Unsupported, recognize
    order = [n for n in graph.nodes if n in nodes]
    index = {x: "x", **{leaf: f"p{i}" for i, leaf in enumerate(leaves)},
             **{n: i for i, n in enumerate(order)}}

    def ref(a):
        if isinstance(a, fx.Node):
            return ("node", index.get(a))
        if isinstance(a, (list, tuple)):
            return tuple(ref(e) for e in a)
        return repr(a)
    xv = _val(x)
    key = (tuple((str(n.target), ref(n.args), ref(tuple(sorted(n.kwargs.items()))))
                 for n in order), index[y],
           tuple((tuple(map(str, _val(leaf).shape)), _val(leaf).dtype) for leaf in leaves),
           xv.dtype, xv.dim(), str(xv.shape[-1]))
    hit = _SPECS.get(key)
    if hit is not None:
        return hit
    try:
        sub = _subgraph(graph, y, x, nodes, leaves)
        # the graph's casts are fixed (a cast to bf16 stays one in the fp32 verification):
        # verified to twice the rounding of the narrowest float type in the subgraph
        rtol = max([2e-4] + [2 * torch.finfo(v.dtype).eps for v in map(_val, nodes)
                             if v is not None and v.dtype.is_floating_point])
        shape = (2,) * (xv.dim() - 1) + (int(xv.shape[-1]),)  # an example: the trace's size
        out = recognize(sub, shape, dtype=xv.dtype, rtol=rtol), None
    except Unsupported as e:
        out = None, str(e)
    except NotANorm:
        out = None, None
    except Exception:  # noqa: BLE001 - a subgraph the tracer cannot run: not a norm
        out = None, None
    if len(_SPECS) > 4096:
        _SPECS.clear()
    _SPECS[key] = out
    return out


# ---------------------------------------------------------------------------------------------
# Rewrite
# ---------------------------------------------------------------------------------------------

def rewrite(graph: fx.Graph) -> Report:
    """Run the pass over `graph` in place; returns what it matched and refused."""
    from .. import ops  # noqa: F401 - registers normfuse::prenorm_linear / postnorm_linear
    del ops
    rep = Report()
    ys = []
    for n in graph.nodes:
        ops = _gemm_operands(n)
        if ops is not None:
            a = ops[0]
            y = a.args[0] if (isinstance(a, fx.Node) and a.target in _RESHAPES) else a
            if isinstance(y, fx.Node) and y.op == "call_function" and y not in ys:
                ys.append(y)
    changed = False
    done, pre_why = set(), {}
    node = _node_maker(graph)
    for y in ys:
        if not _has_reduction(y):
            continue  # no statistics on its path: not a norm (no report line)
        x, spec, leaves = match_norm(graph, y)
        if x is None:  # (leaves: why)
            if leaves:
                rep.refused.append(f"{y.name}: a norm the kernels do not compute: {leaves}")
            continue
        why = _guarded(_fuse, graph, y, x, spec, leaves, rep, node)
        if why is not None and _post_form(x) is not None:
            pre_why[x] = f"{y.name} ({_describe(spec, leaves)} of {x.name}): {why}"
            continue  # a post-norm: the scan below takes it
        if why is not None:
            rep.refused.append(f"{y.name} ({_describe(spec, leaves)} of {x.name}): {why}")
        else:
            changed = True
            done.add(x)
    for x in list(graph.nodes):
        # (the form is read now, not before the loop: an earlier rewrite may have replaced x's
        # residual, the previous post-norm's output, by its fused op's)
        form = _post_form(x) if x.graph is graph else None
        if form is None or x in done:
            continue
        why = _guarded(_fuse_post, graph, x, form, rep, node)
        if why is None:
            changed = True
            continue
        parts = [f"pre-norm {pre_why[x]}"] if x in pre_why else []
        if why:  # ("": no norm of x follows)
            parts.append(f"post-norm of {x.name}: {why}")
        if parts:
            rep.refused.append("; ".join(parts))
    if changed:
        graph.eliminate_dead_code()
        graph.lint()
    return rep


def _fuse(graph: fx.Graph, y, x, spec, leaves, rep: Report, node) -> str | None:
    """Replace the GEMMs reading y by one normfuse::prenorm_linear; None, or why not."""
    gemms, other = _reads(y)
    if other:
        return (f"its output is also used by {', '.join(sorted(set(other))[:3])}, which needs "
                f"it written (a post-norm's residual is taken when the norm's input is a GEMM's "
                f"output plus the residual)")
    if not gemms:
        return "no GEMM reads it"
    xv = _val(x)
    dt = xv.dtype
    g = leaves.get(spec.weight) if spec.weight else None
    beta = leaves.get(spec.bias) if spec.bias else None
    if _val(y).dtype != dt:
        return f"the norm returns {_val(y).dtype} from {dt} input (the op returns x's dtype)"
    for what, t in (("scale", g), ("shift", beta)):
        if t is not None and (_val(t).dtype != dt or _val(t).dim() != 1):
            return f"its {what} is {_val(t).dtype} {list(_val(t).shape)}; the op takes [K] {dt}"
    order = {n: i for i, n in enumerate(graph.nodes)}
    gemms.sort(key=lambda p: order[p[0]])
    first = gemms[0][0]
    ws, bs, pending = [], [], []
    for gm_, _ in gemms:
        _, B, bias = _gemm_operands(gm_)
        bv = _val(B)
        if bv is None or bv.dim() != 2 or bv.dtype != dt:
            return f"{gm_.name}'s weight is not a 2-D {dt} tensor"
        w, transposed = _weight_of(B)
        for t in (w, bias):
            if t is not None and (not isinstance(t, fx.Node) or order[t] > order[first]):
                return f"{gm_.name}'s weight or bias is computed after the first GEMM"
        if bias is not None and (_val(bias) is None or _val(bias).dim() != 1
                                 or _val(bias).dtype != dt):
            return f"{gm_.name}'s bias is not a [N] {dt} vector"
        ws.append((w, transposed))
        bs.append(bias)
        pending.append(gm_)
    for t in (x, g, beta):
        if t is not None and order[t] > order[first]:
            return "the norm's input or parameters are computed after the first GEMM"


    with graph.inserting_before(first):
        x2 = x
        if xv.dim() != 2:
            shape = gemms[0][1].args[1] if gemms[0][1] is not None else [-1, xv.shape[-1]]
            x2 = node(aten.reshape.default, x, list(shape))
        # all [K, N] (Conv1D): given as they are, with weight_kn (see _fuse_post); a mix of
        # orientations (not seen in a model): the [K, N] ones transposed here
        kn = all(tr for _, tr in ws)
        wn = [w if kn or not tr else node(aten.permute.default, w, [1, 0]) for w, tr in ws]
        out = node(torch.ops.normfuse.prenorm_linear.default, x2, g, beta, wn, list(bs),
                   float(spec.eps), float(spec.offset), spec.kind == "ln", True, kn)
        col, results = 0, []
        for w in wn:
            n = _val(w).shape[1 if kn else 0]
            results.append(out if len(wn) == 1 else
                           node(aten.slice.Tensor, out, 1, col, col + n))
            col += n
    for gm_, r in zip(pending, results):
        gm_.replace_all_uses_with(r)
        graph.erase_node(gm_)
    for reshape in {r for _, r in gemms if r is not None}:
        if not reshape.users:
            graph.erase_node(reshape)
    names = ", ".join(p.name for p in pending)
    rep.matched.append(f"{y.name}: {_describe(spec, leaves)} of {x.name} ({dt}) -> normfuse::"
                       f"prenorm_linear over {len(pending)} GEMM(s) [{names}]")
    return None


def _guarded(fuse, *args):
    """fuse(*args), an unexpected error turned into a refusal: the fuse functions replace uses
    only after every new node is made, so a failure leaves the graph's function as it was (the
    new nodes are dead and go)."""
    try:
        return fuse(*args)
    except Exception as e:  # noqa: BLE001 - never fail the user's compile
        return f"not rewritten after an internal error ({type(e).__name__}: {e}); please report it"


def _post_form(x: fx.Node):
    """(gemm, its output reshape or None, residual or None) when x = GEMM(A, W) [+ bias]
    (+ reshape) [+ residual]: the input of a post-norm (Gemma2's norms after o_proj and
    down_proj have no residual); else None."""
    if x.op != "call_function":
        return None
    xv = _val(x)

    def same_rows(gemm: fx.Node) -> bool:  # (a reshape of the GEMM's rows only: Qwen3's
        gv = _val(gemm)  # per-head q_norm over q_proj(x).view(T, H, hd) is another norm)
        return gv is not None and xv is not None and gv.shape[-1] == xv.shape[-1]
    h = x.args[0] if x.target in _RESHAPES and isinstance(x.args[0], fx.Node) else x
    if (_gemm_operands(h) is not None and len(h.users) == 1
            and (h is x or len(x.users) >= 1) and same_rows(h)):
        return h, (x if h is not x else None), None
    if x.target is not aten.add.Tensor or x.kwargs.get("alpha", 1) != 1:
        return None
    if not all(isinstance(a, fx.Node) for a in x.args[:2]):
        return None
    for h, r in ((x.args[0], x.args[1]), (x.args[1], x.args[0])):
        reshape = None
        if h.target in _RESHAPES and isinstance(h.args[0], fx.Node):
            reshape, h = h, h.args[0]
        rv = _val(r)
        if (_gemm_operands(h) is not None and len(h.users) == 1
                and (reshape is None or len(reshape.users) == 1) and same_rows(h)
                and rv is not None and xv is not None and tuple(rv.shape) == tuple(xv.shape)):
            return h, reshape, r
    return None


def _fuse_post(graph: fx.Graph, x: fx.Node, form, rep: Report, node) -> str | None:
    """norm(GEMM + bias + residual) -> normfuse::postnorm_linear: None when rewritten, "" when
    no norm of x follows, else why not."""
    gemm, reshape, r = form
    xv = _val(x)
    K = xv.shape[-1]
    if not isinstance(K, int):
        return "its last dimension is symbolic"
    # the norm's output: the farthest descendant of x that a subgraph from x alone reaches
    order = {n: i for i, n in enumerate(graph.nodes)}
    desc, seen, queue = [], {x}, [x]
    while queue and len(seen) < MAX_ANCESTORS:
        n = queue.pop(0)
        for u in n.users:
            if u not in seen and u.op == "call_function":
                seen.add(u)
                queue.append(u)
                v = _val(u)
                if v is not None and tuple(v.shape) == tuple(xv.shape) and _slice(u, x, K):
                    desc.append(u)
    if not desc:
        return ""  # no norm of x follows (most GEMM outputs)
    for y in sorted(desc, key=order.get, reverse=True):  # the farthest y first
        nodes, leaves = _slice(y, x, K)
        spec, _ = recognize_subgraph(graph, y, x, nodes, leaves)
        if spec is not None:
            break
    else:
        return ""  # nothing after x is a norm of it
    leaves = {f"p{i}": leaf for i, leaf in enumerate(leaves)}
    what = f"{_describe(spec, leaves)} of {x.name}"
    dt = xv.dtype
    A, B, bias = _gemm_operands(gemm)
    g = leaves.get(spec.weight) if spec.weight else None
    beta = leaves.get(spec.bias) if spec.bias else None
    others = [u for n in [x, *nodes] for u in n.users if u not in nodes and n is not y]
    if others:
        return f"{what}: {others[0].name} also reads the norm's intermediate values"
    if g is None:
        return f"{what}: a norm without scale (the post-norm op takes one)"
    for t in (A, B, bias, r, g, beta, y):
        if t is not None and (_val(t) is None or _val(t).dtype != dt):
            return f"{what}: its operands are not all {dt}"
    w, transposed = _weight_of(B)

    with graph.inserting_before(y):
        N = _val(w).shape[1 if transposed else 0]
        r2 = r if r is None or _val(r).dim() == 2 else node(aten.reshape.default, r, [-1, N])
        # a [K, N] weight goes as it is, the op reads its transpose (weight_kn: a transpose
        # made here would reach the op as a new alias every call, which its memos cannot key)
        out = node(torch.ops.normfuse.postnorm_linear.default, A, w, g, beta, bias, r2,
                   float(spec.eps), float(spec.offset), spec.kind == "ln", transposed)
        res = out if reshape is None else node(aten.reshape.default, out, list(reshape.args[1]))
    y.replace_all_uses_with(res)
    rest = f" + residual {r.name}" if r is not None else ""
    rep.matched.append(f"{y.name}: {what} ({dt}) = {gemm.name}{rest} -> normfuse::postnorm_linear")
    return None


def _meta(a):
    """A node argument's value for a fake call: a node's meta value (tensor or SymInt), lists
    element by element, other values as they are."""
    if isinstance(a, fx.Node):
        return a.meta.get("val")
    if isinstance(a, (list, tuple)):
        return type(a)(_meta(e) for e in a)
    return a


def _node_maker(graph: fx.Graph):
    """node(target, *args): a call_function node at the insertion point, its meta value
    computed by the target on the arguments' meta values under the graph's fake mode."""
    from torch._guards import detect_fake_mode
    fake = detect_fake_mode([v for v in (_val(n) for n in graph.nodes) if v is not None])

    def node(target, *args):
        n = graph.call_function(target, args)
        with fake if fake is not None else contextlib.nullcontext():
            n.meta["val"] = target(*_meta(list(args)))
        return n
    return node


def _describe(spec, leaves) -> str:
    """The spec in the graph's names (its parameters are the leaves p0, p1, ...)."""
    return dataclasses.replace(
        spec, weight=leaves[spec.weight].name if spec.weight else None,
        bias=leaves[spec.bias].name if spec.bias else None).describe()
