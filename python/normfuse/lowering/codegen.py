"""The hooks of a hopper-ws plan as Gluon source: the plan's expression DAGs, node by node.

`generate(plan)` writes the hook functions the template calls (PRE, STATS, AFN, EPI, a
post-norm's ROWS and FIN, a norm backward's AUX and SIDE; their signatures are the template's default hooks in `ws_gemm.py`,
declared once there) and returns the source and the
`eargs` tuple's layout: the derived arguments first (column sums), then the kernel parameters
the hooks read, in the order the hooks first read them. `Writer` spells one hook: every DAG node
once, as a temporary; values the template provides (`bound` leaves) and parameters inline.

Layouts: tile-shaped values take the layout of the template's tile (`acc` or `af`) through
Gluon's AutoLayout. A 1-D load (a norm weight, a bias, a column sum) is issued coalesced, one
element per thread (`vec_layout`), and moved to the tile's row or column layout where it meets the
tile (`gl.convert_layout`, through shared memory): loading it straight in the accumulator's column
layout costs a scattered 2-byte load per column per thread, measured +7-13 % of the kernel's time
on the H200 (bench/results/2026-11-30/ws-explore). A hook's 1-D loads go first, with their
address arithmetic (`hoist_loads`, unless the plan's config says `hoist_loads=False`:
hopper-ws{hoist-loads=false}): the conversions' barriers no longer separate one load from the
next, so their latencies overlap.

`write_module(source)` stores the generated module under normfuse's cache directory (named by
its hash) and imports it: Triton's JIT needs the functions' source on disk.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import re

from ..ir.ws_plan import Expr, WSPlan

__all__ = ["generate", "Writer", "write_module", "GL_DTYPES", "hook_signature", "hoist_loads"]

GL_DTYPES = {"f32": "gl.float32", "f16": "gl.float16", "bf16": "gl.bfloat16", "fp16": "gl.float16",
             "f64": "gl.float64", "i1": "gl.int1", "i8": "gl.int8", "i16": "gl.int16",
             "i32": "gl.int32", "i64": "gl.int64"}

_BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "rem": "%",
        "and": "&", "or": "|", "xor": "^"}
_REDUCE = {"sum": "gl.sum", "max": "gl.max", "min": "gl.min"}


def hook_signature(role: str) -> str:
    """The parameter list of hook `role` ('pre', 'stats', 'afn', 'epi', 'rows', 'fin'), as the
    template's default hook declares it."""
    from . import ws_gemm as W
    fn = W.DEFAULT_HOOKS[role]
    out = []
    for p in inspect.signature(fn.fn).parameters.values():
        ann = p.annotation
        if ann is not inspect.Parameter.empty and not isinstance(ann, str):
            ann = "gl.constexpr" if getattr(ann, "__name__", "") == "constexpr" else ann
        out.append(p.name if ann is inspect.Parameter.empty else f"{p.name}: {ann}")
    return ", ".join(out)


class Writer:
    """Spells the body of one hook function.

    earg:  callable(parameter index) -> position in the eargs tuple (shared by all hooks)
    tile:  the expression of the tile whose layout 2-D values take ('acc', 'af' or 'y')
    """

    def __init__(self, plan: WSPlan, earg, tile: str):
        self.plan = plan
        self.earg = earg
        self.tile = tile
        self.lines: list[str] = []
        self._memo: dict[tuple[int, str], str] = {}
        self._vec: set[str] = set()  # names of coalesced 1-D values
        self._n = 0

    def _emit(self, text: str, vec: bool = False) -> str:
        name = f"t{self._n}"
        self._n += 1
        self.lines.append(f"{name} = {text}")
        if vec:
            self._vec.add(name)
        return name

    def expr(self, e: Expr, domain: str = "auto") -> str:
        if e.op == "bound":
            return self._bound(e.attr)
        if e.op == "param":
            return f"eargs[{self.earg(e.attr)}]"
        key = (id(e), domain if e.rank == 1 else "auto")
        if key not in self._memo:
            self._memo[key] = self._spell(e, key[1])
        return self._memo[key]

    def _bound(self, name: str) -> str:
        if name == "a_tile":
            return f"af.to({GL_DTYPES[self.plan.dtype]})"
        if name == "k_offset":
            return f"(kk * {self.plan.config.block_k})"
        return name

    def _fit(self, a: str, b: str, ea: Expr, eb: Expr) -> tuple[str, str]:
        """Two operands of a 1-D elementwise op: a coalesced one meets a tile-derived one (scalars
        and splat constants broadcast, they need no conversion)."""
        if not (ea.rank == 1 and eb.rank == 1 and ea.op != "const" and eb.op != "const"):
            return a, b
        if (a in self._vec) != (b in self._vec):
            if a in self._vec:
                return f"fit({a}, {b})", b
            return a, f"fit({b}, {a})"
        return a, b

    def _spell(self, e: Expr, domain: str) -> str:
        op, args = e.op, e.args
        if op == "const":
            return repr(e.attr)
        if op in _BIN or op == "cmp":
            a, b = self.expr(args[0], domain), self.expr(args[1], domain)
            if e.rank == 1:
                a, b = self._fit(a, b, args[0], args[1])
            sym = _BIN[op] if op in _BIN else e.attr
            return self._emit(f"({a} {sym} {b})", e.rank == 1 and (a in self._vec or b in self._vec))
        if op in ("max", "min"):
            a, b = self.expr(args[0], domain), self.expr(args[1], domain)
            fn = "gl.maximum" if op == "max" else "gl.minimum"
            return self._emit(f"{fn}({a}, {b})", e.rank == 1 and (a in self._vec or b in self._vec))
        if op == "neg":
            a = self.expr(args[0], domain)
            return self._emit(f"(-{a})", a in self._vec)
        if op in ("select", "fma"):
            xs = [self.expr(x, domain) for x in args]
            fn = "gl.where" if op == "select" else "gl.fma"
            return self._emit(f"{fn}({', '.join(xs)})", any(x in self._vec for x in xs))
        if op == "cast":
            a = self.expr(args[0], domain)
            return self._emit(f"{a}.to({GL_DTYPES[e.attr]})", a in self._vec)
        if op == "math":
            a = self.expr(args[0], domain)
            return self._emit(f"gl.{e.attr}({a})", a in self._vec)
        if op == "expand_dims":
            # a 1-D value is spelled per axis it is expanded along: the TTIR may share one
            # make_range between rows and columns (BLOCK_M == BLOCK_N), and one Gluon value
            # cannot take both slice layouts
            sub = args[0]
            a = self.expr(sub, f"axis{e.attr}" if sub.rank == 1 and domain != "vec" else domain)
            if a in self._vec:
                a = f"gl.convert_layout({a}, gl.SliceLayout({e.attr}, {self.tile}.type.layout))"
            return self._emit(f"gl.expand_dims({a}, {e.attr})")
        if op == "arange":
            s, end = e.attr
            if domain == "vec":
                return self._emit(f"gl.arange({s}, {end}, layout=vec_layout({end - s}, gl.num_warps()))", True)
            return self._emit(f"gl.arange({s}, {end})")
        if op == "addptr":
            a, b = self.expr(args[0], domain), self.expr(args[1], domain)
            return self._emit(f"({a} + {b})", e.rank == 1 and (a in self._vec or b in self._vec))
        if op == "load":
            dom = "vec" if e.rank == 1 else "auto"
            parts = [self.expr(args[0], dom)]
            has_mask, has_other = e.attr
            if has_mask:
                parts.append(f"mask={self.expr(args[1], dom)}")
                if has_other:
                    parts.append(f"other={self.expr(args[2], dom)}")
            return self._emit(f"gl.load({', '.join(parts)})", e.rank == 1)
        if op == "reduce":
            comb, axis = e.attr
            a = self.expr(args[0], "auto")
            return self._emit(f"{_REDUCE[comb]}({a}, axis={axis})")
        raise ValueError(f"hook expression op '{op}' has no Gluon spelling")


_HEADER = '''"""Hooks generated by normfuse's hopper-ws pass for `{name}` (do not edit: regenerated)."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from normfuse.lowering.ws_gemm import colvec_fit, colvec_load, fit, row_sums, vec_layout  # noqa: F401

'''


def generate(plan: WSPlan) -> tuple[str, tuple]:
    """(hook module source, eargs layout) for `plan`; the layout lists ("derived", j) for the
    column sums, then ("param", i) for each kernel parameter the hooks read."""
    eargs: list = [("derived", j) for j in range(len(plan.column_sums))]
    pos_of_param: dict[int, int] = {}

    def earg(i: int) -> int:
        if i not in pos_of_param:
            pos_of_param[i] = len(eargs)
            eargs.append(("param", i))
        return pos_of_param[i]

    funcs = []
    if plan.pre is not None:
        w = Writer(plan, earg, "af")
        funcs.append(("pre", w.lines, w.expr(plan.pre.results[0])))
    if plan.stats is not None:
        w = Writer(plan, earg, "af")
        rets = []
        for j, e in enumerate(plan.stats.results):
            # a row sum (a tile's, or the kernel's own tl.sum in the k-step) through row_sums,
            # which keeps it per lane where the template holds partials
            tile = plan.stats.row_sum_operand(j)
            if tile is not None:
                rets.append(f"st{j} + row_sums({w.expr(tile)}, st{j})")
            else:
                rets.append(f"st{j} + {w.expr(e)}")
        while len(rets) < 2:
            rets.append(f"st{len(rets)}")
        funcs.append(("stats", w.lines, ", ".join(rets)))
    if plan.afn is not None:
        w = Writer(plan, earg, "af")
        funcs.append(("afn", w.lines, w.expr(plan.afn.results[0])))
    w = Writer(plan, earg, "acc")
    if plan.column_sums:
        n = f"eargs[{earg(plan.N.param)}]" if plan.N.param is not None else str(plan.N.value)
        for j in range(len(plan.column_sums)):
            w.lines.append(f"cs{j}_v = colvec_load(eargs[{j}], pid_n, {n}, acc.shape[1])")
            w._vec.add(f"cs{j}_v")
            w.lines.append(f"cs{j} = colvec_fit(cs{j}_v, acc)")
    ret = w.expr(plan.epi.results[0])
    passed = []
    if plan.config.epi_prefetch and _prefetchable(plan):
        pre_lines, epi_lines, passed = prefetch_split(w.lines, w._vec, ret)
    if not passed:
        epi_lines = _hoisted(plan, w)
    else:
        # (BN: the tile's columns, which a hoisted column load reads as acc.shape[1])
        funcs.append(("epre", [ln.replace("acc.shape[1]", "BN") for ln in pre_lines],
                      "(" + "".join(f"{n}, " for n in passed) + ")"))
        epi_lines = [f"{n} = ev[{i}]" for i, n in enumerate(passed)] + epi_lines
    funcs.append(("epi", epi_lines, ret))
    if plan.rows is not None:
        # a post-norm's shares of the row sums: each result's sum over the tile's columns
        w = Writer(plan, earg, "y")
        rets = [f"gl.sum({w.expr(e)}, axis=1)" for e in plan.rows.results]
        if len(rets) < 2:
            rets.append("gl.sum(y, axis=1) * 0.0")  # unused (NPOST = 1): removed as dead code
        funcs.append(("rows", _hoisted(plan, w), ", ".join(rets)))
    if plan.fin is not None:
        w = Writer(plan, earg, "y")
        ret = w.expr(plan.fin.results[0])
        funcs.append(("fin", _hoisted(plan, w), ret))
    if plan.aux is not None:
        w = Writer(plan, earg, "y")
        ret = w.expr(plan.aux.results[0])
        funcs.append(("aux", _hoisted(plan, w), ret))
    if plan.side is not None:
        # 1-D stores (a norm backward's column partials): address and mask coalesced, the value
        # (a reduction of the tile) moved to their layout
        w = Writer(plan, earg, "y")
        for e in plan.side.results:
            ptr = w.expr(e.args[0], "vec")
            val = w.expr(e.args[1], "vec")
            mask = f", mask={w.expr(e.args[2], 'vec')}" if e.attr else ""
            w.lines.append(f"gl.store({ptr}, fit({val}, {ptr}){mask})")
        funcs.append(("side", w.lines, None))
    src = [_HEADER.format(name=plan.kernel_name)]
    prefetched = any(name == "epre" for name, _, _ in funcs)
    for name, lines, ret in funcs:
        body = "\n".join(f"    {line}" for line in lines)
        sig = hook_signature(name)
        if name == "epi" and prefetched:
            sig += ", ev"  # EPRE's values (the template passes them after eargs)
        if (name == "epi" and plan.res is not None) or (plan.backward and name != "epi"
                                                         and plan.res is not None):
            sig += ", res"  # the residual tile, which the template loads by TMA
        tail = f"    return {ret}\n\n" if ret is not None else "\n"
        src.append(f"@gluon.jit\ndef {name}({sig}):\n"
                   f"{body + chr(10) if body else ''}{tail}")
    return "\n".join(src), tuple(eargs)


_ASSIGN = re.compile(r"(\w+) = (.*)")
_NAME = re.compile(r"\b(?:t\d+|cs\d+(?:_v)?)\b")
# the values a hook receives from the template's tile (a hoisted line may not read them; the
# accumulator's static shape is no read)
_TILE = re.compile(r"\b(?:acc|af|y|res|st0|st1|c0|s0|s1|kk)\b")


def _hoisted(plan: WSPlan, w: "Writer") -> list:
    """`w`'s lines, their 1-D loads first unless the plan keeps the DAG's order."""
    return hoist_loads(w.lines, w._vec) if plan.config.hoist_loads else w.lines


def hoist_loads(lines: list, vec: set) -> list:
    """A hook body with its 1-D loads first: each coalesced load (a bias, a norm weight, a column
    sum: `gl.load` / `colvec_load` of a vec value) with the address arithmetic it needs, in their
    order, then every other line in its order. The tile-layout conversions that follow a load
    (`gl.convert_layout`: a shared-memory round trip and a barrier) used to sit between one
    load and the next, so each load's latency (an L2 round trip) was paid in turn in every tile's
    epilogue; issued together they overlap. Loads whose address reads a tile value stay in place,
    and a body that is not all assignments (stores) is left as it is."""
    head, rest = _hoist_split(lines, vec)
    return head + rest if head else lines


def _hoist_split(lines: list, vec: set) -> tuple[list, list]:
    """(the lines `hoist_loads` moves first, the other lines), each in order; ([], lines) where
    none moves or a line is not an assignment."""
    parsed = []
    for line in lines:
        m = _ASSIGN.fullmatch(line)
        if m is None:
            return [], lines
        parsed.append((m.group(1), m.group(2)))
    rhs_of = dict(parsed)
    hoisted: set = set()
    for name, rhs in parsed:
        if name not in vec or not (rhs.startswith("gl.load(") or rhs.startswith("colvec_load(")):
            continue
        need, stack, ok = set(), [name], True
        while stack and ok:
            n = stack.pop()
            if n in need or n in hoisted:
                continue
            r = rhs_of.get(n)
            if r is None:
                continue  # (not a line of this body)
            if _TILE.search(r.replace("acc.shape[1]", "")):
                ok = False
                break
            need.add(n)
            stack.extend(x for x in _NAME.findall(r) if x != n)
        if ok:
            hoisted |= need
    return ([line for line, (n, _) in zip(lines, parsed) if n in hoisted],
            [line for line, (n, _) in zip(lines, parsed) if n not in hoisted])


def _prefetchable(plan: WSPlan) -> bool:
    """The template runs EPRE before the k-loop in the consumers of plain, shared-statistics and
    coop2 instances; a post-norm's rows and a norm backward keep their loads in the epilogue
    (WSConfig refuses epi_prefetch with a row exchange)."""
    return plan.rows is None and not plan.backward


def prefetch_split(lines: list, vec: set, ret: str) -> tuple[list, list, list]:
    """EPI's body split for `epi-prefetch`: (EPRE's lines: the 1-D loads `hoist_loads` moves
    first, with their address arithmetic, in order; EPI's other lines, in order; the names of
    EPRE's lines that EPI or its result `ret` reads, in order). ([], lines, []) where nothing is
    hoisted."""
    head, rest = _hoist_split(lines, vec)
    if not head:
        return [], lines, []
    used = set(_NAME.findall(ret))
    for ln in rest:
        used |= set(_NAME.findall(_ASSIGN.fullmatch(ln).group(2)))
    passed = [n for n in (_ASSIGN.fullmatch(ln).group(1) for ln in head) if n in used]
    return head, rest, passed


def write_module(source: str):
    """Write generated hook source under the cache directory (once per content) and import it."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    root = os.environ.get("NORMFUSE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "normfuse", "lowering")
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, f"hooks_{digest}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    name = f"normfuse_hooks_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
