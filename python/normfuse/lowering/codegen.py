"""Translate the non-GEMM parts of a matched kernel into Gluon hook functions, as Python source.

`Translator` turns a TTIR value into a Gluon expression op by op: arith/math elementwise ops,
splat/broadcast/expand_dims, make_range, addptr, loads, and single-op reductions. Values the
template provides (the A tile, the accumulator, the statistics, the tile coordinates, the k-step)
are *bindings*; kernel parameters become elements of the `eargs` tuple. Anything else (a loop, a
program id beyond the tile coordinates, a dot, a store) makes the value untranslatable, and the
pass leaves the kernel alone with a remark that names the op.

Layouts: tile-shaped values take the layout of the template's tile (`acc` or `af`) through
Gluon's AutoLayout. A 1-D load (a norm weight, a bias, a column sum) is issued coalesced, one
element per thread (`vec_layout`), and moved to the tile's row or column layout where it meets the
tile (`gl.convert_layout`, through shared memory): loading it straight in the accumulator's column
layout costs a scattered 2-byte load per column per thread, measured +7-13 % of the kernel's time
on the H200 (bench/results/2026-11-30/ws-explore).

`write_module(source)` stores the generated module under normfuse's cache directory (named by
its hash) and imports it: Triton's JIT needs the functions' source on disk.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os

from ..ir.core import Value
from ..ir.ops import ExpandDimsOp, LoadOp, ReduceOp, element_of as element, shape_of as shape
from ..ir.query import cmp_predicate, constant_value, make_range_bounds

__all__ = ["Untranslatable", "Translator", "write_module", "GL_DTYPES"]


class Untranslatable(Exception):
    """A value the hooks cannot compute; the message names the op."""


GL_DTYPES = {"f32": "gl.float32", "f16": "gl.float16", "bf16": "gl.bfloat16", "f64": "gl.float64",
             "i1": "gl.int1", "i8": "gl.int8", "i16": "gl.int16", "i32": "gl.int32",
             "i64": "gl.int64"}

_BIN = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/",
        "arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divsi": "//",
        "arith.remsi": "%", "arith.andi": "&", "arith.ori": "|", "arith.xori": "^"}
_CMP = {"slt": "<", "olt": "<", "ult": "<", "sle": "<=", "ole": "<=", "ule": "<=",
        "sgt": ">", "ogt": ">", "ugt": ">", "sge": ">=", "oge": ">=", "uge": ">=",
        "eq": "==", "oeq": "==", "ne": "!=", "une": "!=", "one": "!="}
_CAST = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi",
         "arith.fptoui", "arith.extsi", "arith.extui", "arith.trunci")
_MATH = {"math.sqrt": "gl.sqrt", "math.rsqrt": "gl.rsqrt", "math.exp": "gl.exp",
         "math.exp2": "gl.exp2", "math.log": "gl.log", "math.log2": "gl.log2",
         "math.absf": "gl.abs", "math.absi": "gl.abs", "math.erf": "gl.erf",
         "math.floor": "gl.floor", "math.ceil": "gl.ceil", "math.sin": "gl.sin",
         "math.cos": "gl.cos"}
_RED = {"arith.addf": "gl.sum", "arith.addi": "gl.sum", "arith.maxnumf": "gl.max",
        "arith.minnumf": "gl.min", "arith.maxsi": "gl.max", "arith.minsi": "gl.min"}


class Translator:
    """Emits the body of one hook function.

    bindings: id(Value) -> expression provided by the template
    params:   id(Value) -> index of the kernel parameter (becomes `eargs[position]`)
    earg_pos: callable(param index) -> position in the eargs tuple (shared by all hooks)
    tile:     the expression of the tile whose layout 2-D values take ('acc' or 'af')
    """

    def __init__(self, bindings: dict[int, str], params: dict[int, int], earg_pos, tile: str):
        self.bindings = dict(bindings)
        self.params = params
        self.earg_pos = earg_pos
        self.tile = tile
        self.lines: list[str] = []
        self._memo: dict[tuple[int, str], str] = {}
        self._vec: set[str] = set()  # names of coalesced 1-D values
        self._n = 0

    def _emit(self, expr: str, vec: bool = False) -> str:
        name = f"t{self._n}"
        self._n += 1
        self.lines.append(f"{name} = {expr}")
        if vec:
            self._vec.add(name)
        return name

    def expr(self, v: Value, domain: str = "auto") -> str:
        b = self.bindings.get(id(v))
        if b is not None:
            return b
        if id(v) in self.params:
            return f"eargs[{self.earg_pos(self.params[id(v)])}]"
        key = (id(v), domain if len(shape(v)) == 1 else "auto")
        if key not in self._memo:
            self._memo[key] = self._translate(v, key[1])
        return self._memo[key]

    def _fit(self, a: str, b: str, va: Value, vb: Value) -> tuple[str, str]:
        """Two operands of a 1-D elementwise op: a coalesced one meets a tile-derived one (scalars
        and splats broadcast, they need no conversion)."""
        if not (len(shape(va)) == 1 and len(shape(vb)) == 1 and _tensor_source(va) and _tensor_source(vb)):
            return a, b
        if (a in self._vec) != (b in self._vec):
            if a in self._vec:
                return f"fit({a}, {b})", b
            return a, f"fit({b}, {a})"
        return a, b

    def _translate(self, v: Value, domain: str) -> str:
        op = v.owner
        if op is None:
            raise Untranslatable(f"{v.ref()} is a value of an enclosing loop or region")
        name = op.name
        ops = op.operands
        rank = len(shape(v))
        if name == "arith.constant":
            cv = constant_value(op)
            if cv is None:
                raise Untranslatable(f"the constant {v.ref()} is not a scalar or splat")
            val, el = cv
            if isinstance(val, float) and (val != val or val in (float("inf"), float("-inf"))):
                raise Untranslatable(f"the constant {v.ref()} is not finite")
            lit = repr(bool(val)) if el == "i1" else repr(val)
            return lit
        if name in _BIN:
            a, b = self.expr(ops[0], domain), self.expr(ops[1], domain)
            if rank == 1:
                a, b = self._fit(a, b, ops[0], ops[1])
            vec = rank == 1 and (a in self._vec or b in self._vec)
            return self._emit(f"({a} {_BIN[name]} {b})", vec)
        if name in ("arith.cmpi", "arith.cmpf"):
            pred = cmp_predicate(op)
            if pred not in _CMP:
                raise Untranslatable(f"{name} with predicate '{pred}'")
            a, b = self.expr(ops[0], domain), self.expr(ops[1], domain)
            if rank == 1:
                a, b = self._fit(a, b, ops[0], ops[1])
            return self._emit(f"({a} {_CMP[pred]} {b})", rank == 1 and (a in self._vec or b in self._vec))
        if name in ("arith.maxnumf", "arith.maxsi", "arith.minnumf", "arith.minsi"):
            fn = "gl.maximum" if "max" in name else "gl.minimum"
            a, b = self.expr(ops[0], domain), self.expr(ops[1], domain)
            return self._emit(f"{fn}({a}, {b})", rank == 1 and (a in self._vec or b in self._vec))
        if name == "arith.negf":
            a = self.expr(ops[0], domain)
            return self._emit(f"(-{a})", a in self._vec)
        if name == "arith.select":
            c, a, b = (self.expr(x, domain) for x in ops)
            return self._emit(f"gl.where({c}, {a}, {b})", any(x in self._vec for x in (c, a, b)))
        if name in _CAST:
            a = self.expr(ops[0], domain)
            el = element(v)
            if el not in GL_DTYPES:
                raise Untranslatable(f"a cast to {el}")
            return self._emit(f"{a}.to({GL_DTYPES[el]})", a in self._vec)
        if name in _MATH:
            a = self.expr(ops[0], domain)
            return self._emit(f"{_MATH[name]}({a})", a in self._vec)
        if name == "math.fma":
            a, b, c = (self.expr(x, domain) for x in ops)
            return self._emit(f"gl.fma({a}, {b}, {c})", any(x in self._vec for x in (a, b, c)))
        if name in ("tt.splat", "tt.broadcast"):
            src = ops[0]
            if name == "tt.splat" and shape(src) == ():
                return self.expr(src, domain)
            if name == "tt.broadcast":
                return self.expr(src, domain)
            raise Untranslatable(f"{name} of a tensor")
        if name == "tt.expand_dims":
            axis = ExpandDimsOp(op).axis
            a = self.expr(ops[0], domain)
            if a in self._vec:
                a = f"gl.convert_layout({a}, gl.SliceLayout({axis}, {self.tile}.type.layout))"
            return self._emit(f"gl.expand_dims({a}, {axis})")
        if name == "tt.make_range":
            s, e = make_range_bounds(op)
            if domain == "vec":
                return self._emit(f"gl.arange({s}, {e}, layout=vec_layout({e - s}, gl.num_warps()))", True)
            return self._emit(f"gl.arange({s}, {e})")
        if name == "tt.addptr":
            a, b = self.expr(ops[0], domain), self.expr(ops[1], domain)
            return self._emit(f"({a} + {b})", rank == 1 and (a in self._vec or b in self._vec))
        if name == "tt.load":
            info = LoadOp(op)
            dom = "vec" if rank == 1 else "auto"
            p = self.expr(info.ptr, dom)
            args = [p]
            if info.mask is not None:
                args.append(f"mask={self.expr(info.mask, dom)}")
                if info.other is not None:
                    args.append(f"other={self.expr(info.other, dom)}")
            return self._emit(f"gl.load({', '.join(args)})", rank == 1)
        if name == "tt.reduce":
            red = ReduceOp(op)
            comb = red.combining_op
            if comb not in _RED:
                raise Untranslatable(f"a tt.reduce combining with {comb or 'several ops'}")
            axis = red.axis
            a = self.expr(ops[0], "auto")
            return self._emit(f"{_RED[comb]}({a}, axis={axis})")
        raise Untranslatable(f"'{name}' ({v.ref()})")


def _tensor_source(v: Value) -> bool:
    """Whether a 1-D value is a real vector (not a splat of a scalar or a constant)."""
    op = v.owner
    if op is None:
        return True
    if op.name == "arith.constant":
        return False
    if op.name == "tt.splat":
        return False
    return True


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
