"""Matching helpers shared by the passes: slices, value equivalence, locations.

The op views, constants and loops now live in the facade (`normfuse.ir.ops`) and the effects
table in `normfuse.ir.effects`; the names below stay importable from here.
"""
from __future__ import annotations

import os
import re

from .core import Module, Op, Value, parse_type  # noqa: F401
from .effects import has_side_effects  # noqa: F401
from .ops import (ForLoop, ForOp, LoadOp, StoreOp, enclosing, int_constant,  # noqa: F401
                  is_zero_constant, pointer_root, row_vector, shape_of)

_LOC_TAIL = re.compile(r"\s*loc\(.*\)\s*$")


def strip_loc(text: str) -> str:
    return _LOC_TAIL.sub("", text)


def op_signature(op: Op) -> str:
    """The op's text with operands replaced by '%' and the location dropped: two ops with equal
    signatures and equivalent operands compute the same value."""
    txt = "".join("%" if isinstance(s, Value) else s for s in op.head + op.tail)
    return strip_loc(txt).strip()


def enclosing_loop(op: Op) -> Op | None:
    return enclosing(op, "scf.for")


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

def store_parts(op: Op):
    """(pointer, value, mask or None) of a tt.store."""
    v = StoreOp(op)
    return v.ptr, v.value, v.mask


def load_parts(op: Op):
    """(pointer, mask or None) of a tt.load."""
    v = LoadOp(op)
    return v.ptr, v.mask
