"""The facade the passes program against: op names, typed op views, attributes, and a builder.

This module (with `core`, `syntax` and `bridge`) is the one place that knows how Triton prints
TTIR. A pass reads an op through a view (`LoadOp(op).mask`, `DotOp(op).acc`,
`ForOp(op).iter_args`, `attr(op, "tt.num_stages").int`), writes attributes through
`set_attr`, and creates ops through a `Builder` bound to an insertion point and a location,
which computes the result types (`b.expand_dims(v, 1)` knows the result is [M, 1]). Names such
as `DOT` are for matching (`op.name == DOT`); no pass spells an op's syntax.

Every module that a pass produces is printed and handed back to Triton, which parses and verifies
it (`bridge`): a template here that Triton does not accept fails the first test that uses it.
"""
from __future__ import annotations

import re
from typing import ClassVar, Sequence

from .core import Block, IRError, Module, Op, TensorType, Value, _render, parse_type
from .effects import writes_memory
from .syntax import (Attr, bool_attr, insert_keyword, int_attr, read_attrs, set_attr_text,
                     str_attr, type_colon)

# ---------------------------------------------------------------------------------------------
# Op names (for matching)
# ---------------------------------------------------------------------------------------------

MODULE = "module"
FUNC = "tt.func"
RETURN = "tt.return"
CALL = "tt.call"
FOR = "scf.for"
IF = "scf.if"
WHILE = "scf.while"
YIELD = "scf.yield"
LOAD = "tt.load"
DESCRIPTOR_LOAD = "tt.descriptor_load"
STORE = "tt.store"
DESCRIPTOR_STORE = "tt.descriptor_store"
DOT = "tt.dot"
REDUCE = "tt.reduce"
REDUCE_RETURN = "tt.reduce.return"
EXPAND_DIMS = "tt.expand_dims"
BROADCAST = "tt.broadcast"
SPLAT = "tt.splat"
ADDPTR = "tt.addptr"
MAKE_RANGE = "tt.make_range"
TRANS = "tt.trans"
GET_PROGRAM_ID = "tt.get_program_id"
GET_NUM_PROGRAMS = "tt.get_num_programs"
INLINE_ASM = "tt.elementwise_inline_asm"
CONSTANT = "arith.constant"
EXTF = "arith.extf"
TRUNCF = "arith.truncf"
ADDF = "arith.addf"
SUBF = "arith.subf"
MULF = "arith.mulf"
DIVF = "arith.divf"
SELECT = "arith.select"
DIVSI = "arith.divsi"
DIVUI = "arith.divui"
ADDI = "arith.addi"
SUBI = "arith.subi"
MULI = "arith.muli"
REMSI = "arith.remsi"
REMUI = "arith.remui"
ANDI = "arith.andi"
ORI = "arith.ori"
XORI = "arith.xori"
CMPI = "arith.cmpi"
CMPF = "arith.cmpf"
NEGF = "arith.negf"
MAXNUMF = "arith.maxnumf"
MINNUMF = "arith.minnumf"
MAXSI = "arith.maxsi"
MINSI = "arith.minsi"
SITOFP = "arith.sitofp"
UITOFP = "arith.uitofp"
FPTOSI = "arith.fptosi"
FPTOUI = "arith.fptoui"
EXTSI = "arith.extsi"
EXTUI = "arith.extui"
TRUNCI = "arith.trunci"
FMA = "math.fma"
# element type conversions
CASTS = (EXTF, TRUNCF, SITOFP, UITOFP, FPTOSI, FPTOUI, EXTSI, EXTUI, TRUNCI)
# one-operand math functions -> their name
MATH_FUNCTIONS = {"math.sqrt": "sqrt", "math.rsqrt": "rsqrt", "math.exp": "exp",
                  "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.absf": "abs",
                  "math.absi": "abs", "math.erf": "erf", "math.floor": "floor", "math.ceil": "ceil",
                  "math.sin": "sin", "math.cos": "cos"}

# discardable attributes that normfuse reads or writes
LATENCY = "tt.latency"  # on a load: its pipeline latency (Triton's AssignLatencies takes it as given)
NUM_STAGES = "tt.num_stages"  # on an scf.for: the pipeline depth asked for the loop

LOADS = (LOAD, DESCRIPTOR_LOAD)
STORES = (STORE, DESCRIPTOR_STORE)
# value-only ops that map elements to elements (shape changes by broadcasting only)
ELEMENTWISE_PREFIXES = ("arith.", "math.")
SHAPE_OPS = (BROADCAST, EXPAND_DIMS, SPLAT)


def is_elementwise(op: Op) -> bool:
    """Arithmetic, math, or a broadcast/expand/splat (no regions)."""
    return not op.regions and (op.name.startswith(ELEMENTWISE_PREFIXES) or op.name in SHAPE_OPS)


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

def type_of(v: Value) -> TensorType | str:
    """The value's type: a TensorType, or the scalar type's text ('i32', '!tt.ptr<f32>')."""
    return parse_type(v.type)


def shape_of(v: Value) -> tuple[int, ...]:
    t = type_of(v)
    return t.shape if isinstance(t, TensorType) else ()


def element_of(v: Value | str) -> str:
    t = parse_type(v if isinstance(v, str) else v.type)
    return t.element if isinstance(t, TensorType) else t


def tensor(shape: Sequence[int], element: str, encoding: str | None = None) -> str:
    return str(TensorType(tuple(shape), element, encoding))


def bit_width(element: str) -> int:
    """Bits of an element type: bf16 -> 16, f32 -> 32, i1 -> 1, pointers -> 64."""
    if element.startswith("!tt.ptr"):
        return 64
    m = re.search(r"(\d+)", element)
    return int(m.group(1)) if m else 32


def nbytes(v: Value) -> int:
    """Size of a tensor value in bytes."""
    t = type_of(v)
    if not isinstance(t, TensorType):
        return bit_width(t) // 8
    n = 1
    for d in t.shape:
        n *= d
    return n * bit_width(t.element) // 8


# ---------------------------------------------------------------------------------------------
# Attributes
# ---------------------------------------------------------------------------------------------

_PH = "\x00{}\x00"
_PH_RE = re.compile("\x00(\\d+)\x00")


def _edit_segments(segs: list, fn) -> list:
    """Apply a text edit to a segment list (str | Value) without touching its Values."""
    values = [s for s in segs if isinstance(s, Value)]
    text, k = [], 0
    for s in segs:
        if isinstance(s, Value):
            text.append(_PH.format(k))
            k += 1
        else:
            text.append(s)
    new = fn("".join(text))
    if new is None:
        return None
    out: list = []
    pos = 0
    for m in _PH_RE.finditer(new):
        if m.start() > pos:
            out.append(new[pos:m.start()])
        out.append(values[int(m.group(1))])
        pos = m.end()
    if pos < len(new):
        out.append(new[pos:])
    return out


def attrs(op: Op) -> dict[str, Attr]:
    """The op's own attributes (attribute dictionaries, properties and keywords of its text)."""
    return read_attrs(op.text)


def attr(op: Op, key: str) -> Attr | None:
    return attrs(op).get(key)


def set_attr(op: Op, key: str, value: str | int | bool) -> None:
    """Set attribute `key` of `op` (e.g. `set_attr(load, "tt.latency", 2)`); ints become i32,
    bools true/false, strings are taken as printed attribute text (`str_attr` quotes a string).

    The attribute dictionary sits where the op's syntax puts it: before the type of a custom op,
    after the regions of scf ops and generic ops, in `attributes {...}` of a function."""
    if isinstance(value, bool):
        value = bool_attr(value)
    elif isinstance(value, int):
        value = int_attr(value)
    if op.name == FUNC:
        def edit(t):
            if "attributes {" in t or read_attrs(t):
                out = set_attr_text(t, key, value, where="none")
                if out is not None:
                    return out
            return t.rstrip() + f" attributes {{{key} = {value}}} "
        op.head = _edit_segments(op.head, edit)
        return
    if op.regions:
        where = "end" if op.name.startswith("scf.") else "before-colon"
        new = _edit_segments(op.tail, lambda t: set_attr_text(t, key, value, where=where))
        if new is None:
            raise IRError(f"cannot place attribute {key} on {op.name}")
        op.tail = new
        return
    new = _edit_segments(op.head, lambda t: set_attr_text(t, key, value))
    if new is None:
        raise IRError(f"cannot place attribute {key} on {op.name}")
    op.head = new


# ---------------------------------------------------------------------------------------------
# Typed views
# ---------------------------------------------------------------------------------------------

class OpView:
    """A typed view of one op; `op` is the underlying `core.Op` (shared, not copied)."""

    NAMES: ClassVar[tuple[str, ...]] = ()

    def __init__(self, op: Op):
        if self.NAMES and op.name not in self.NAMES:
            raise IRError(f"{type(self).__name__} expects {' or '.join(self.NAMES)}, got {op.name}")
        self.op = op

    @classmethod
    def match(cls, x: "Op | Value | None"):
        """The view of `x` (an op, or the op defining a value) when it is one of NAMES, else None."""
        op = x.owner if isinstance(x, Value) else x
        if op is None or (cls.NAMES and op.name not in cls.NAMES):
            return None
        return cls(op)

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def result(self) -> Value:
        return self.op.result

    @property
    def results(self) -> list[Value]:
        return self.op.results

    @property
    def operands(self) -> list[Value]:
        return self.op.operands

    @property
    def loc(self) -> str:
        return self.op.loc

    def attr(self, key: str) -> Attr | None:
        return attr(self.op, key)

    def set_attr(self, key: str, value) -> None:
        set_attr(self.op, key, value)

    def __eq__(self, other) -> bool:
        return isinstance(other, OpView) and other.op is self.op

    def __hash__(self) -> int:
        return id(self.op)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.op!r}>"


class LoadOp(OpView):
    """`tt.load %ptr[, %mask[, %other]]` or `tt.descriptor_load %desc[%i, ...]`."""

    NAMES = LOADS

    @property
    def is_descriptor(self) -> bool:
        return self.op.name == DESCRIPTOR_LOAD

    @property
    def ptr(self) -> Value:
        """The pointer tensor (tt.load) or the tensor descriptor (tt.descriptor_load)."""
        return self.op.operands[0]

    @property
    def mask(self) -> Value | None:
        ops = self.op.operands
        return ops[1] if not self.is_descriptor and len(ops) > 1 else None

    @property
    def other(self) -> Value | None:
        ops = self.op.operands
        return ops[2] if not self.is_descriptor and len(ops) > 2 else None

    @property
    def indices(self) -> list[Value]:
        return self.op.operands[1:] if self.is_descriptor else []

    @property
    def address(self) -> tuple:
        """What says where it reads: (pointer, mask) or (descriptor, *indices)."""
        return (self.ptr, *self.indices) if self.is_descriptor else (self.ptr, self.mask)

    @property
    def root(self) -> Value | None:
        """The kernel argument whose memory it reads (None when that cannot be traced)."""
        return memory_root(self.ptr)

    @property
    def cache_modifier(self) -> str | None:
        a = self.attr("cacheModifier")
        return a.text if a is not None else None

    @property
    def is_volatile(self) -> bool:
        a = self.attr("isVolatile")
        return bool(a is not None and a.bool)

    def set_cache_modifier(self, value: str) -> None:
        """cacheModifier = ca | cg | cs | cv | wb | wt (a keyword of tt.load's format)."""
        new = _edit_segments(self.op.head, lambda t: insert_keyword(t, "cacheModifier", value))
        if new is None:
            raise IRError(f"cannot set the cache modifier of {self.op.name}")
        self.op.head = new

    def set_volatile(self) -> None:
        self.set_attr("isVolatile", True)


class StoreOp(OpView):
    """`tt.store %ptr, %value[, %mask]` or `tt.descriptor_store %desc[%i, ...], %value`."""

    NAMES = STORES

    @property
    def is_descriptor(self) -> bool:
        return self.op.name == DESCRIPTOR_STORE

    @property
    def ptr(self) -> Value:
        """The pointer tensor (tt.store) or the tensor descriptor (tt.descriptor_store)."""
        return self.op.operands[0]

    @property
    def value(self) -> Value:
        ops = self.op.operands
        return ops[-1] if self.is_descriptor else ops[1]

    @property
    def mask(self) -> Value | None:
        ops = self.op.operands
        return ops[2] if not self.is_descriptor and len(ops) > 2 else None

    @property
    def indices(self) -> list[Value]:
        return self.op.operands[1:-1] if self.is_descriptor else []

    @property
    def address(self) -> tuple:
        """What says where it writes: (pointer, mask) or (descriptor, *indices)."""
        return (self.ptr, *self.indices) if self.is_descriptor else (self.ptr, self.mask)

    @property
    def root(self) -> Value | None:
        """The kernel argument whose memory it writes (None when that cannot be traced)."""
        return memory_root(self.ptr)


class DotOp(OpView):
    """`tt.dot %a, %b, %acc` (acc = a @ b + acc)."""

    NAMES = (DOT,)

    @property
    def a(self) -> Value:
        return self.op.operands[0]

    @property
    def b(self) -> Value:
        return self.op.operands[1]

    @property
    def acc(self) -> Value | None:
        ops = self.op.operands
        return ops[2] if len(ops) > 2 else None


class ReduceOp(OpView):
    """`"tt.reduce"(%x...) <{axis = k}> ({combiner})`."""

    NAMES = (REDUCE,)

    @property
    def axis(self) -> int | None:
        a = self.attr("axis")
        return a.int if a is not None else None

    @property
    def inputs(self) -> list[Value]:
        return self.op.operands

    @property
    def combiner(self) -> list[Op]:
        return self.op.body().ops

    @property
    def combining_op(self) -> str | None:
        """The name of the single op combining a single input ('arith.addf', 'arith.maxnumf',
        ...); None for several inputs or a combiner of several ops."""
        ops = [o.name for o in self.combiner if o.name != REDUCE_RETURN]
        return ops[0] if len(ops) == 1 and len(self.inputs) == 1 else None

    def is_sum(self) -> bool:
        """One input, combined by a single floating-point addition."""
        return len(self.inputs) == 1 and [o.name for o in self.combiner] == [ADDF, REDUCE_RETURN]


class ExpandDimsOp(OpView):
    NAMES = (EXPAND_DIMS,)

    @property
    def src(self) -> Value:
        return self.op.operands[0]

    @property
    def axis(self) -> int | None:
        a = self.attr("axis")
        return a.int if a is not None else None


class BroadcastOp(OpView):
    NAMES = (BROADCAST,)

    @property
    def src(self) -> Value:
        return self.op.operands[0]


class ConstantOp(OpView):
    """`arith.constant 4 : i32`, `arith.constant dense<0.0> : tensor<...>`."""

    NAMES = (CONSTANT,)

    @property
    def literal(self) -> str:
        """The printed value: `4`, `dense<0.000000e+00>`, `true`."""
        text = _render(self.op.head)
        body = text[len(CONSTANT):]
        cut = type_colon(body)
        return body[:cut].strip() if cut is not None else body.strip()

    @property
    def splat_literal(self) -> str:
        lit = self.literal
        m = re.fullmatch(r"dense<(.*)>", lit)
        return m.group(1).strip() if m else lit

    def is_zero(self) -> bool:
        return bool(re.fullmatch(r"-?0|-?0\.0*(?:e[+-]?0+)?|false", self.splat_literal))

    @property
    def int_value(self) -> int | None:
        """The value of a scalar integer constant."""
        if not isinstance(type_of(self.result), str) or not self.result.type.startswith("i"):
            return None
        return int(self.literal) if re.fullmatch(r"-?\d+", self.literal) else None

    @property
    def float_value(self) -> float | None:
        """The value of a float constant, scalar or splat."""
        try:
            return float(self.splat_literal)
        except ValueError:
            return None


def is_zero_constant(v: Value) -> bool:
    c = ConstantOp.match(v)
    return c is not None and c.is_zero()


def int_constant(v: Value) -> int | None:
    """The value of a scalar integer `arith.constant`, else None."""
    c = ConstantOp.match(v)
    return c.int_value if c is not None else None


def float_constant(v: Value) -> float | None:
    c = ConstantOp.match(v)
    return c.float_value if c is not None else None


class ProgramIdOp(OpView):
    """`tt.get_program_id x` and `tt.get_num_programs x`."""

    NAMES = (GET_PROGRAM_ID, GET_NUM_PROGRAMS)

    @property
    def axis(self) -> str:
        """'x', 'y' or 'z'."""
        m = re.match(r"\s*\S+\s+(?:axis\s*=\s*)?([xyz]|\d)\b", _render(self.op.head))
        a = m.group(1) if m else "x"
        return {"0": "x", "1": "y", "2": "z"}.get(a, a)


class InlineAsmOp(OpView):
    NAMES = (INLINE_ASM,)

    @property
    def asm(self) -> str:
        from .syntax import first_string
        return first_string(self.op.text) or ""

    @property
    def pure(self) -> bool:
        a = self.attr("pure")
        return bool(a is not None and a.bool)

    @property
    def constraints(self) -> str:
        a = self.attr("constraints")
        return (a.str or "") if a is not None else ""


class FuncOp(OpView):
    """`tt.func [public] @name(%args...) attributes {...} { body }`."""

    NAMES = (FUNC,)

    @property
    def sym_name(self) -> str:
        m = re.search(r"@([\w$.\-]+)", _render(self.op.head))
        return m.group(1) if m else ""

    @property
    def body(self) -> Block:
        return self.op.body()

    @property
    def args(self) -> list[Value]:
        return self.op.body().args

    @property
    def terminator(self) -> Op:
        return self.op.body().terminator

    def walk(self):
        return self.op.walk()


class ForOp(OpView):
    """`scf.for %iv = %lb to %ub step %s iter_args(%a = %init, ...) -> (types)`."""

    NAMES = (FOR,)

    @property
    def body(self) -> Block:
        return self.op.body()

    @property
    def iv(self) -> Value:
        return self.body.args[0]

    @property
    def iter_args(self) -> list[Value]:
        return self.body.args[1:]

    @property
    def bounds(self) -> list[Value]:
        """[lower bound, upper bound, step]."""
        return self.op.operands[:3]

    @property
    def inits(self) -> list[Value]:
        return self.op.operands[3:]

    def constant_bounds(self) -> tuple[int | None, int | None, int | None]:
        return tuple(int_constant(v) for v in self.bounds)

    @property
    def num_stages(self) -> int | None:
        a = self.attr(NUM_STAGES)
        return a.int if a is not None else None

    @property
    def yield_op(self) -> Op | None:
        """The body's scf.yield; None when the printer elided it (a loop without results)."""
        ops = self.body.ops
        return ops[-1] if ops and ops[-1].name == YIELD else None

    @property
    def yields(self) -> list[Value]:
        y = self.yield_op
        return y.operands if y is not None else []

    def contains(self, v: Value) -> bool:
        """Whether `v` is defined inside this loop (its body or deeper)."""
        if v.owner is not None:
            return self.op is not v.owner and self.op.is_ancestor_of(v.owner)
        blk = v.block
        while blk is not None:
            if blk.parent_op is self.op:
                return True
            p = blk.parent_op
            blk = p.block if p is not None else None
        return False

    def add_iter_args(self, module: Module, inits: list[Value], types: list[str], hint: str = "nf"):
        """Append loop-carried values; returns (block args, results). The caller must yield them
        (see `set_yields`)."""
        body = self.body
        new_args, new_results = [], []
        for init, t in zip(inits, types):
            a = Value(module.fresh_name(hint), t, None, len(body.args), body)
            body.args.append(a)
            body.arg_suffixes.append("")
            new_args.append(a)
            base = self.op.results[0].name if self.op.results else module.fresh_name(hint)
            r = Value(base, t, self.op, len(self.op.results),
                      gidx=sum(1 for x in self.op.results if x.name == base))
            self.op.results.append(r)
            new_results.append(r)
        self._rebuild_head(self.inits + list(inits))
        return new_args, new_results

    def _rebuild_head(self, inits: list[Value], bounds: list[Value] | None = None) -> None:
        lb, ub, step = bounds if bounds is not None else self.bounds
        head = _render(self.op.head)
        cut = type_colon(head)
        iv_type = head[cut + 1:].strip() if cut is not None else "i32"
        segs: list = ["scf.for ", self.iv, " = ", lb, " to ", ub, " step ", step]
        if self.iter_args:
            segs.append(" iter_args(")
            for k, (a, i) in enumerate(zip(self.iter_args, inits)):
                segs += ([", "] if k else []) + [a, " = ", i]
            segs.append(") -> (" + ", ".join(r.type for r in self.op.results) + ")")
        segs.append(f"  : {iv_type} ")
        self.op.head = segs

    def set_bounds(self, lb: Value, ub: Value, step: Value) -> None:
        """Replace the loop's lower bound, upper bound and step (same integer type)."""
        self._rebuild_head(self.inits, [lb, ub, step])

    def set_init(self, index: int, value: Value) -> None:
        inits = self.inits
        inits[index] = value
        self._rebuild_head(inits)

    def inline(self, module: Module, iv: Value) -> list[Op]:
        """Replace a loop that runs exactly once, with induction variable `iv`, by its body.

        The caller guarantees the single trip. Iteration arguments become their inits, the loop's
        results the yielded values; the body's ops move in front of the loop, which is erased.
        Returns the moved ops."""
        term = self.yield_op
        yields = self.yields
        moved = [o for o in self.body.ops if o is not term]
        module.replace_all_uses(self.iv, iv)
        for a, init in zip(self.iter_args, self.inits):
            module.replace_all_uses(a, init)
        for r, y in zip(self.op.results, yields):
            module.replace_all_uses(r, y)
        for o in moved:
            module.rename_fresh(o)
            module.insert(o, before=self.op)
        module.erase(self.op)
        return moved

    def set_yields(self, values: list[Value], module: Module | None = None,
                   loc: "Op | str | None" = None) -> None:
        """Yield `values` from the body. A loop whose yield was elided (no results) gets one when
        `module` is given (at `loc`, by default the loop's)."""
        y = self.yield_op
        if y is None:
            if module is None:
                raise IRError("set_yields on a loop whose scf.yield was elided (no results)")
            Builder(module, loc or self.op, at_end=self.body).yield_(values)
            return
        y.head = _yield_segments(values, y.loc)


# the name of the old class, still imported by code outside the passes
ForLoop = ForOp


class IfOp(OpView):
    NAMES = (IF,)

    @property
    def cond(self) -> Value:
        return self.op.operands[0]

    @property
    def then_block(self) -> Block:
        return self.op.regions[0].blocks[0]

    @property
    def else_block(self) -> Block | None:
        return self.op.regions[1].blocks[0] if len(self.op.regions) > 1 else None

    @property
    def then_yield(self) -> Op:
        return self.then_block.terminator

    @property
    def else_yield(self) -> Op | None:
        b = self.else_block
        return b.terminator if b is not None else None


def _yield_segments(values: list[Value], loc: str) -> list:
    segs: list = [YIELD + " "]
    for k, v in enumerate(values):
        segs += ([", "] if k else []) + [v]
    if values:
        segs.append(" : " + ", ".join(v.type for v in values))
    segs.append(f" {loc}")
    return segs


def enclosing(op: Op, name: str) -> Op | None:
    """The nearest ancestor of `op` named `name`."""
    p = op.parent_op
    while p is not None and p.name != name:
        p = p.parent_op
    return p


def function_of(op: Op) -> Op | None:
    return enclosing(op, FUNC)


# ---------------------------------------------------------------------------------------------
# Builder
# ---------------------------------------------------------------------------------------------

def _float_literal(x: float) -> str:
    return "0.000000e+00" if x == 0.0 else repr(float(x))


class Builder:
    """Creates ops at an insertion point, with one location, computing result types.

    Positions (one of): `before=op` (each new op goes right before `op`), `after=op` (the first
    new op goes after `op`, each next one after the previous), `at_end=block`, or none (ops are
    made detached; insert them yourself). `loc` is an op (its location is used) or the printed
    location (`loc(#loc12)`). Each method returns the new op's result (`Value`), or the op for
    several results.
    """

    def __init__(self, module: Module, loc: "Op | str | None" = None, *, before: Op | None = None,
                 after: Op | None = None, at_end: Block | None = None, hint: str = "nf"):
        self.module = module
        self.loc = loc.loc if isinstance(loc, Op) else (loc or "loc(unknown)")
        self._before, self._after, self._at_end = before, after, at_end
        self.hint = hint
        self.created: list[Op] = []

    def at(self, *, before: Op | None = None, after: Op | None = None,
           at_end: Block | None = None, loc: "Op | str | None" = None, hint: str | None = None) -> "Builder":
        """A builder at another position (same module; same location unless given)."""
        return Builder(self.module, loc if loc is not None else self.loc, before=before, after=after,
                       at_end=at_end, hint=hint or self.hint)

    @property
    def last(self) -> Op | None:
        """The op most recently inserted after the `after=` anchor (the next one goes after it)."""
        return self._after

    # -- placement -------------------------------------------------------------------------------
    def insert(self, op: Op) -> Op:
        """Insert an existing (new, cloned or detached) op at the insertion point."""
        m = self.module
        if self._before is not None:
            m.insert(op, before=self._before)
        elif self._after is not None:
            m.insert(op, after=self._after)
            self._after = op
        elif self._at_end is not None:
            m.insert(op, at_end=self._at_end)
        self.created.append(op)
        return op

    def clone(self, op: Op, mapping: dict[int, Value] | None = None) -> Op:
        """A deep copy of `op` (operands remapped through `mapping`, id(old) -> new), inserted."""
        return self.insert(self.module.clone(op, {} if mapping is None else mapping))

    def _make(self, template: str, args: Sequence[Value], types: Sequence[str], hint: str | None) -> Op:
        return self.insert(self.module.build(f"{template} {self.loc}", *args, types=list(types),
                                             hint=hint or self.hint))

    def _one(self, template: str, args: Sequence[Value], t: str, hint: str | None) -> Value:
        return self._make(template, args, [t], hint).result

    # -- constants -------------------------------------------------------------------------------
    def constant(self, value: float | int | bool, type: str, hint: str | None = None) -> Value:
        """A scalar constant, or a splat tensor constant when `type` is a tensor type."""
        t = parse_type(type)
        elem = t.element if isinstance(t, TensorType) else t
        if isinstance(value, bool) or elem == "i1":
            lit = bool_attr(bool(value))
        elif elem.startswith("i"):
            lit = str(int(value))
        else:
            lit = _float_literal(value)
        lit = f"dense<{lit}>" if isinstance(t, TensorType) else lit
        return self._one(f"{CONSTANT} {lit} : {type}", (), type, hint)

    def zeros(self, type: str, hint: str | None = None) -> Value:
        return self.constant(0.0 if not element_of(type).startswith("i") else 0, type, hint)

    # -- arithmetic ------------------------------------------------------------------------------
    def binary(self, name: str, a: Value, b: Value, hint: str | None = None) -> Value:
        """`name` is an arith op with two operands and the result type of the first."""
        return self._one(f"{name} $0, $1 : {a.type}", (a, b), a.type, hint)

    def addf(self, a, b, hint=None): return self.binary(ADDF, a, b, hint)  # noqa: E704
    def subf(self, a, b, hint=None): return self.binary(SUBF, a, b, hint)  # noqa: E704
    def mulf(self, a, b, hint=None): return self.binary(MULF, a, b, hint)  # noqa: E704
    def divf(self, a, b, hint=None): return self.binary(DIVF, a, b, hint)  # noqa: E704
    def addi(self, a, b, hint=None): return self.binary("arith.addi", a, b, hint)  # noqa: E704
    def subi(self, a, b, hint=None): return self.binary("arith.subi", a, b, hint)  # noqa: E704
    def muli(self, a, b, hint=None): return self.binary("arith.muli", a, b, hint)  # noqa: E704
    def divsi(self, a, b, hint=None): return self.binary("arith.divsi", a, b, hint)  # noqa: E704
    def remsi(self, a, b, hint=None): return self.binary("arith.remsi", a, b, hint)  # noqa: E704
    def andi(self, a, b, hint=None): return self.binary("arith.andi", a, b, hint)  # noqa: E704

    def cmpi(self, predicate: str, a: Value, b: Value, hint: str | None = None) -> Value:
        """`predicate`: eq, ne, slt, sle, sgt, sge, ult, ... -> i1 (or a tensor of i1)."""
        t = type_of(a)
        rt = str(t.with_element("i1")) if isinstance(t, TensorType) else "i1"
        return self._one(f"arith.cmpi {predicate}, $0, $1 : {a.type}", (a, b), rt, hint)

    def select(self, cond: Value, a: Value, b: Value, hint: str | None = None) -> Value:
        types = f"{cond.type}, {a.type}" if isinstance(type_of(cond), TensorType) else a.type
        return self._one(f"{SELECT} $0, $1, $2 : {types}", (cond, a, b), a.type, hint)

    def extf(self, v: Value, element: str = "f32", hint: str | None = None) -> Value:
        t = _with_element(v.type, element)
        return self._one(f"{EXTF} $0 : {v.type} to {t}", (v,), t, hint)

    def truncf(self, v: Value, element: str, hint: str | None = None) -> Value:
        t = _with_element(v.type, element)
        return self._one(f"{TRUNCF} $0 : {v.type} to {t}", (v,), t, hint)

    def to_f32(self, v: Value, hint: str | None = None) -> Value:
        """`v` as f32 (an extf unless it already is)."""
        return v if element_of(v) == "f32" else self.extf(v, "f32", hint)

    # -- shapes ----------------------------------------------------------------------------------
    def expand_dims(self, v: Value, axis: int, hint: str | None = None) -> Value:
        t = type_of(v)
        shape = list(t.shape)
        shape.insert(axis, 1)
        rt = str(t.with_shape(shape))
        return self._one(f"{EXPAND_DIMS} $0 {{axis = {int_attr(axis)}}} : {v.type} -> {rt}", (v,), rt, hint)

    def broadcast(self, v: Value, shape: Sequence[int], hint: str | None = None) -> Value:
        rt = str(type_of(v).with_shape(shape))
        return self._one(f"{BROADCAST} $0 : {v.type} -> {rt}", (v,), rt, hint)

    def splat(self, v: Value, shape: Sequence[int], hint: str | None = None) -> Value:
        rt = tensor(shape, v.type)
        return self._one(f"{SPLAT} $0 : {v.type} -> {rt}", (v,), rt, hint)

    def row_broadcast(self, vec: Value, shape: Sequence[int], axis: int = 1, hint: str | None = None) -> Value:
        """[M] -> [M, N] along `axis` (1: each row one value; 0: each column one value)."""
        return self.broadcast(self.expand_dims(vec, axis, hint), shape, hint)

    def make_range(self, start: int, end: int, hint: str | None = None) -> Value:
        rt = tensor([end - start], "i32")
        return self._one(f"{MAKE_RANGE} {{end = {int_attr(end)}, start = {int_attr(start)}}} : {rt}",
                         (), rt, hint)

    # -- reductions ------------------------------------------------------------------------------
    def reduce_sum(self, v: Value, axis: int, hint: str | None = None) -> Value:
        """Sum of `v` (f32) along `axis`."""
        t = type_of(v)
        shape = [d for i, d in enumerate(t.shape) if i != axis]
        rt = str(t.with_shape(shape)) if shape else t.element
        e, loc = t.element, self.loc
        template = (f'"{REDUCE}"($0) <{{axis = {int_attr(axis)}}}> ({{\n'
                    f"^bb0(%lhs: {e} {loc}, %rhs: {e} {loc}):\n"
                    f"  %sum = {ADDF} %lhs, %rhs : {e} {loc}\n"
                    f"  {REDUCE_RETURN} %sum : {e} {loc}\n"
                    f"}}) : ({v.type}) -> {rt}")
        return self._one(template, (v,), rt, hint)

    # -- memory, asm -----------------------------------------------------------------------------
    def reload(self, load: Op, *, cache_modifier: str | None = "cg", volatile: bool = False) -> Op:
        """A second load of the same tile as `load` (a clone), with another cache modifier or
        volatile."""
        again = self.module.clone(load, {})
        view = LoadOp(again)
        if volatile:
            view.set_volatile()
        elif cache_modifier is not None:
            view.set_cache_modifier(cache_modifier)
        return self.insert(again)

    def inline_asm(self, asm: str, constraints: str, args: Sequence[Value], result_types: Sequence[str],
                   *, pure: bool = False, packed_element: int = 1, hint: str | None = None) -> Op:
        """`tt.elementwise_inline_asm`; `asm` is the PTX text ($0.. its operands, outputs first)."""
        ins = ", ".join(f"${k}" for k in range(len(args)))
        sig = f"{ins} : {', '.join(a.type for a in args)} -> {', '.join(result_types)}"
        op = self._make(f'{INLINE_ASM} "@ASM@" {{constraints = {str_attr(constraints)}, '
                        f"packed_element = {int_attr(packed_element)}, pure = {bool_attr(pure)}}} {sig}",
                        args, result_types, hint)
        quoted = str_attr(asm)[1:-1]
        op.head = [s.replace("@ASM@", quoted) if isinstance(s, str) else s for s in op.head]
        return op

    def global_scratch(self, nbytes: int, alignment: int = 16, hint: str | None = None) -> Value:
        """This program's slice of Triton's global scratch (`!tt.ptr<i8>`)."""
        return self._one(f"ttg.global_scratch_alloc {{alignment = {int_attr(alignment)}, "
                         f"nbytes = {int_attr(nbytes)}}} : !tt.ptr<i8>", (), "!tt.ptr<i8>", hint)

    def ptr_to_int(self, v: Value, hint: str | None = None) -> Value:
        return self._one(f"tt.ptr_to_int $0 : {v.type} -> i64", (v,), "i64", hint)

    # -- control flow ----------------------------------------------------------------------------
    def yield_(self, values: Sequence[Value]) -> Op:
        ins = ", ".join(f"${k}" for k in range(len(values)))
        tys = ", ".join(v.type for v in values)
        return self._make(f"{YIELD} {ins} : {tys}" if values else YIELD, values, [], None)

    def if_(self, cond: Value, then_values: Sequence[Value], else_values: Sequence[Value],
            hint: str | None = None) -> IfOp:
        """`scf.if %cond -> (types) { yield then_values } else { yield else_values }`; move the
        ops that compute the values into the branches (before `then_yield` / `else_yield`)."""
        types = [v.type for v in then_values]
        n = len(types)
        yt = ", ".join(types)
        ph = lambda lo: ", ".join(f"${lo + k}" for k in range(n))  # noqa: E731
        loc = self.loc
        op = self._make(f"{IF} $0 -> ({yt}) {{\n  {YIELD} {ph(1)} : {yt} {loc}\n}} else {{\n"
                        f"  {YIELD} {ph(1 + n)} : {yt} {loc}\n}}", (cond, *then_values, *else_values),
                        types, hint)
        return IfOp(op)


def _with_element(type: str, element: str) -> str:
    t = parse_type(type)
    return str(t.with_element(element)) if isinstance(t, TensorType) else element


# ---------------------------------------------------------------------------------------------
# Derived queries
# ---------------------------------------------------------------------------------------------

def row_vector(v: Value) -> tuple[Value, int] | None:
    """If v = broadcast(expand_dims(u, axis)) (or expand_dims alone), return (u, axis)."""
    b = BroadcastOp.match(v)
    e = ExpandDimsOp.match(b.src if b is not None else v)
    if e is None or e.axis is None:
        return None
    return e.src, e.axis


MAKE_TENSOR_DESCRIPTOR = "tt.make_tensor_descriptor"


def memory_root(ptr_or_desc: Value) -> Value | None:
    """The kernel argument behind a pointer tensor or a tensor descriptor (a descriptor made in
    the kernel from a base pointer, or passed in); through pointers carried by an scf.for as
    `pointer_root` follows them. None when it cannot be traced."""
    v = ptr_or_desc
    if v.owner is not None and v.owner.name == MAKE_TENSOR_DESCRIPTOR:
        v = v.owner.operands[0]
    return pointer_root(v)


def written_roots(op: Op) -> set:
    """ids of the kernel arguments the stores nested in `op` write (id(None) for a store whose
    pointer does not trace to one)."""
    return {id(StoreOp(o).root) for o in op.walk() if o.name in STORES}


def unknown_writer(func: Op) -> str | None:
    """Why some write of the kernel could reach any memory, in a remark's words (None when every
    write is a store traced to a kernel argument): what the passes that reuse loaded values
    (hoist-loads, reuse-loads) check before trusting `written_roots`."""
    for o in func.walk():
        if o.name in STORES:
            if StoreOp(o).root is None:
                return ("a store whose pointer does not trace to a kernel argument could write "
                        "any memory")
        elif not o.regions and writes_memory(o, private=False):
            return f"'{o.name}' writes memory the loads may read"
    return None


def root_names(loads) -> list[str]:
    """The sorted names of the kernel arguments `loads` read (for remarks; "?" when untraced)."""
    return sorted({(r.name.lstrip("%") if r is not None else "?")
                   for r in (LoadOp(o).root for o in loads)})


def is_function_argument(v: Value) -> bool:
    """Whether `v` is an argument of a tt.func's entry block (a kernel parameter): not a loop's or
    region's block argument, nor a later block's (which may merge two values like a phi)."""
    blk = v.block if v.owner is None else None
    op = blk.parent_op if blk is not None else None
    return (op is not None and op.name == FUNC and bool(op.regions)
            and bool(op.regions[0].blocks) and blk is op.regions[0].blocks[0])


def pointer_root(ptr: Value) -> Value | None:
    """The function argument a pointer tensor is derived from (through splat/addptr/broadcast/
    expand_dims), and through a pointer an scf.for carries (the k-loop's `p += BK`): an iter_arg,
    or the loop's result for it, has its init's root when the iter_arg's yield traces back to that
    root again, through the iter_arg itself or afresh from the argument (`_carried_root`). Every
    value such a pointer takes is then derived from that one argument, as a pointer computed in
    place is. None for anything else: a carried pointer whose init and yields may point into
    different arguments (a swap of two buffers), an scf.while's or an scf.if's value, a later
    block's argument, any other op (the passes that compare roots to decide aliasing must not
    take such a pointer for one memory)."""
    return _root(ptr, {})


_POINTER_STEPS = (ADDPTR, SPLAT, BROADCAST, EXPAND_DIMS)


def _root(v: Value, assumed: dict) -> Value | None:
    """`pointer_root`, with `assumed`: id(iter_arg) -> the root taken for an iter_arg whose
    yields are being traced (a yield that comes back to it comes back to that root)."""
    for _ in range(64):
        op = v.owner
        if op is None:
            return v if is_function_argument(v) else _carried_root(v, assumed)
        if op.name in _POINTER_STEPS:
            v = op.operands[0]
            continue
        if op.name == FOR and op.regions and op.regions[0].blocks:
            # the loop's result: its last yield, or its init when it runs no trip
            args = op.regions[0].blocks[0].args
            return _carried_root(args[v.index + 1], assumed) if v.index + 1 < len(args) else None
        return None
    return None


def _carried_root(arg: Value, assumed: dict) -> Value | None:
    """The root of an scf.for iter_arg: its init's, when its yield traces to the same root under
    the assumption that the iter_arg has it (every trip's value is then derived from the init's
    argument, by induction over the trips). None otherwise (the induction variable included)."""
    blk = arg.block
    loop = blk.parent_op if blk is not None else None
    if loop is None or loop.name != FOR or not loop.regions or blk is not loop.regions[0].blocks[0]:
        return None
    if id(arg) in assumed:
        return assumed[id(arg)]
    f = ForOp(loop)
    i = next((k for k, a in enumerate(f.iter_args) if a is arg), None)
    if i is None or i >= len(f.inits) or i >= len(f.yields):
        return None
    init = _root(f.inits[i], assumed)
    if init is None:
        return None
    assumed[id(arg)] = init
    try:
        back = _root(f.yields[i], assumed)
    finally:
        del assumed[id(arg)]
    return init if back is init else None
