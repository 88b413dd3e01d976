"""Matching helpers shared by the passes: loops, constants, slices, and value equivalence."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .core import IRError, Module, Op, Value, _render, parse_type

_LOC_TAIL = re.compile(r"\s*loc\(.*\)\s*$")


def strip_loc(text: str) -> str:
    return _LOC_TAIL.sub("", text)


def op_signature(op: Op) -> str:
    """The op's text with operands replaced by '%' and the location dropped: two ops with equal
    signatures and equivalent operands compute the same value."""
    txt = "".join("%" if isinstance(s, Value) else s for s in op.head + op.tail)
    return strip_loc(txt).strip()


def is_zero_constant(v: Value) -> bool:
    op = v.owner
    if op is None or op.name != "arith.constant":
        return False
    return bool(_ZERO_RE.match(_render(op.head)))


# the whole constant: `arith.constant 0 : i32`, `arith.constant dense<0.000000e+00> : tensor<..>`
_ZERO_RE = re.compile(r"\s*arith\.constant\s+(?:dense<)?(?:-?0|-?0\.0*(?:e[+-]?0+)?|false)>?\s*:")


def int_constant(v: Value) -> int | None:
    """The value of a scalar integer `arith.constant` (e.g. `arith.constant 4 : i32`), else None."""
    op = v.owner
    if op is None or op.name != "arith.constant":
        return None
    m = re.match(r"\s*arith\.constant\s+(-?\d+)\s*:\s*i\d+\b", _render(op.head))
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------
# scf.for
# ---------------------------------------------------------------------------------------------

@dataclass
class ForLoop:
    """A view of an `scf.for`: iv, bounds, iter_args with their inits, yields and results."""

    op: Op

    def __post_init__(self):
        if self.op.name != "scf.for":
            raise IRError(f"not an scf.for: {self.op!r}")

    @property
    def body(self):
        return self.op.body()

    @property
    def iv(self) -> Value:
        return self.body.args[0]

    @property
    def iter_args(self) -> list[Value]:
        return self.body.args[1:]

    @property
    def bounds(self) -> list[Value]:
        return self.op.operands[:3]

    @property
    def inits(self) -> list[Value]:
        return self.op.operands[3:]

    @property
    def yield_op(self) -> Op | None:
        """The body's scf.yield; None when the printer elided it (a loop without results)."""
        ops = self.body.ops
        return ops[-1] if ops and ops[-1].name == "scf.yield" else None

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
        iv_type = strip_loc(_render(self.op.head)).rstrip()
        iv_type = iv_type[iv_type.rindex(":") + 1:].strip()
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

    def set_yields(self, values: list[Value]) -> None:
        y = self.yield_op
        if y is None:
            raise IRError("set_yields on a loop whose scf.yield was elided (no results)")
        loc = y.loc
        segs: list = ["scf.yield "]
        for k, v in enumerate(values):
            segs += ([", "] if k else []) + [v]
        if values:
            segs.append(" : " + ", ".join(v.type for v in values))
        segs.append(f" {loc}")
        y.head = segs


def enclosing_loop(op: Op) -> Op | None:
    p = op.parent_op
    while p is not None and p.name != "scf.for":
        p = p.parent_op
    return p


# ---------------------------------------------------------------------------------------------
# Slices and equivalence
# ---------------------------------------------------------------------------------------------

def backward_slice(v: Value, stop) -> list[Op]:
    """Ops that `v` depends on, stopping at values for which stop(value) is true; in program order
    of discovery (dependencies first)."""
    seen: set[int] = set()
    out: list[Op] = []

    def visit(x: Value):
        if stop(x) or x.owner is None or id(x.owner) in seen:
            return
        seen.add(id(x.owner))
        for o in x.owner.operands:
            visit(o)
        out.append(x.owner)

    visit(v)
    return out


_SIDE_EFFECTS = ("tt.store", "tt.atomic", "tt.descriptor_store", "tt.print", "tt.assert", "tt.call",
                 "tt.descriptor_reduce", "tt.descriptor_gather", "tt.descriptor_scatter")


def has_side_effects(op: Op) -> bool:
    return any(o.name.startswith(_SIDE_EFFECTS) for o in op.walk())


class Equivalence:
    """Decides whether a value in loop A always equals a value in loop B, iteration by iteration.

    Both loops must have the same bounds. The induction variables correspond; iter_args correspond
    when their inits are equivalent and what they yield is (assumed co-inductively). Ops
    correspond when they print the same modulo operands and their operands correspond. Loads are
    compared like any op: both loops read memory that neither writes (checked by the caller).
    """

    def __init__(self, a: ForLoop, b: ForLoop):
        self.a, self.b = a, b
        self.pairs: dict[int, Value] = {}  # id(value in A) -> value in B

    def __call__(self, x: Value, y: Value) -> bool:
        if x is y:
            return True
        got = self.pairs.get(id(x))
        if got is not None:
            return got is y
        if x is self.a.iv:
            return y is self.b.iv and self._bind(x, y)
        if x in self.a.iter_args:
            if y not in self.b.iter_args:
                return False
            i, j = self.a.iter_args.index(x), self.b.iter_args.index(y)
            self._bind(x, y)
            if self(self.a.inits[i], self.b.inits[j]) and self(self.a.yields[i], self.b.yields[j]):
                return True
            del self.pairs[id(x)]
            return False
        if x.owner is None or y.owner is None:
            return False
        ox, oy = x.owner, y.owner
        if ox.name != oy.name or x.index != y.index or ox.regions or oy.regions:
            return False
        if op_signature(ox) != op_signature(oy) or x.type != y.type:
            return False
        xs, ys = ox.operands, oy.operands
        if len(xs) != len(ys) or not all(self(p, q) for p, q in zip(xs, ys)):
            return False
        for r, s in zip(ox.results, oy.results):
            self._bind(r, s)
        return True

    def _bind(self, x: Value, y: Value) -> bool:
        self.pairs[id(x)] = y
        return True


def row_vector(v: Value) -> tuple[Value, int] | None:
    """If v = broadcast(expand_dims(u, axis)) (or expand_dims alone), return (u, axis)."""
    op = v.owner
    if op is not None and op.name == "tt.broadcast":
        op = op.operands[0].owner
    if op is None or op.name != "tt.expand_dims":
        return None
    axis = op.attr("axis")
    if axis is None:
        return None
    return op.operands[0], int(axis.split(":")[0].strip())


def shape_of(v: Value) -> tuple[int, ...]:
    t = parse_type(v.type)
    return t.shape if not isinstance(t, str) else ()


def is_ttgir(module: Module) -> bool:
    """Whether the module is TTGIR (carries TritonGPU module attributes) rather than TTIR."""
    return any(o.name == "module" and "ttg.num-warps" in o.text for o in module.ops)


class LocResolver:
    """`loc(#loc12)` -> 'file.py:27:20' through the module's location aliases."""

    def __init__(self, module: Module):
        self.aliases = {}
        for line in module.prefix + module.suffix:
            m = re.match(r"^(#loc\d*)\s*=\s*(loc\(.*\))\s*$", line.strip())
            if m:
                self.aliases[m.group(1)] = m.group(2)

    def __call__(self, op: Op | None) -> str | None:
        if op is None:
            return None
        text = op.loc
        for _ in range(32):
            m = re.search(r'"([^"]+)":(\d+):(\d+)', text)
            if m and not re.search(r'^loc\(callsite', text):
                return f"{os.path.basename(m.group(1))}:{m.group(2)}:{m.group(3)}"
            refs = re.findall(r"#loc\d*", text)
            if not refs:
                return m and f"{m.group(1)}:{m.group(2)}:{m.group(3)}"
            # callsite(callee at caller): the caller is the user's code
            text = self.aliases.get(refs[-1], "")
        return None


# ---------------------------------------------------------------------------------------------
# Memory ops
# ---------------------------------------------------------------------------------------------

def pointer_root(ptr: Value) -> Value | None:
    """The function argument a pointer tensor is derived from (through splat/addptr/broadcast)."""
    v = ptr
    for _ in range(64):
        op = v.owner
        if op is None:
            return v
        if op.name in ("tt.addptr", "tt.splat", "tt.broadcast", "tt.expand_dims"):
            v = op.operands[0]
            continue
        return None
    return None


def store_parts(op: Op):
    """(pointer, value, mask or None) of a tt.store."""
    ops = op.operands
    return ops[0], ops[1], (ops[2] if len(ops) > 2 else None)


def load_parts(op: Op):
    """(pointer, mask or None) of a tt.load."""
    ops = op.operands
    return ops[0], (ops[1] if len(ops) > 1 else None)
