"""Queries the lowering needs that the facade (`normfuse.ir.ops`) does not answer: a constant's
value with its element type, a comparison's predicate, a make_range's bounds, a tensor
descriptor's operands, a function's parameters with their types and divisibility, pointer types.
Everything else (load/store/reduce/expand_dims views, attributes, shapes and element types, a
function's name) the lowering reads through `normfuse.ir.ops`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .core import Op, Value, _render
from .ops import MAKE_TENSOR_DESCRIPTOR, ConstantOp, attr, element_of

__all__ = ["constant_value", "cmp_predicate", "make_range_bounds", "desc_info", "DescInfo",
           "func_params", "Param", "is_pointer", "pointee"]

_FLOAT_TYPES = ("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2")


def pointee(type_text: str) -> str | None:
    """'!tt.ptr<bf16>' -> 'bf16'; None when the type is not a pointer."""
    m = re.fullmatch(r"\s*!tt\.ptr<(.+)>\s*", type_text)
    return m.group(1) if m else None


def is_pointer(v: Value) -> bool:
    return pointee(element_of(v)) is not None


def make_range_bounds(op: Op) -> tuple[int, int]:
    start, end = attr(op, "start"), attr(op, "end")
    return (start.int if start is not None else 0) or 0, end.int if end is not None else None


def constant_value(op: Op):
    """(value, element type) of a scalar or splat `arith.constant`, else None. Floats are Python
    floats, integers ints, i1 bools; hex float literals (inf, nan) are decoded."""
    c = ConstantOp.match(op)
    if c is None:
        return None
    raw = c.splat_literal
    el = element_of(c.result)
    if raw in ("true", "false"):
        return raw == "true", el
    if raw.startswith("0x"):
        import struct
        bits = int(raw, 16)
        if el == "f32":
            return struct.unpack("<f", struct.pack("<I", bits))[0], el
        if el == "f64":
            return struct.unpack("<d", struct.pack("<Q", bits))[0], el
        return None
    if not re.fullmatch(r"-?[\d.]+(?:e[+-]?\d+)?", raw):
        return None
    if el in _FLOAT_TYPES:
        return float(raw), el
    if el == "i1":
        return bool(int(raw)), el
    return int(float(raw)), el


_PRED = re.compile(r"arith\.cmp[if]\s+(\w+)\s*,")


def cmp_predicate(op: Op) -> str | None:
    """'slt', 'olt', ... of an arith.cmpi / arith.cmpf."""
    m = _PRED.search(op.text)
    return m.group(1) if m else None


@dataclass
class DescInfo:
    """A `tt.make_tensor_descriptor base, [shape...], [strides...]` (block shape from the type)."""
    base: Value
    shape: list[Value]
    strides: list[Value]
    block: tuple[int, ...]


def desc_info(op: Op) -> DescInfo | None:
    if op.name != MAKE_TENSOR_DESCRIPTOR:
        return None
    ops = op.operands
    n = (len(ops) - 1) // 2
    m = re.search(r"tensor<([\dx]+)x[a-z]", op.text)
    block = tuple(int(x) for x in m.group(1).split("x")) if m else ()
    return DescInfo(ops[0], ops[1:1 + n], ops[1 + n:1 + 2 * n], block)


@dataclass
class Param:
    name: str
    type: str
    value: Value
    divisible: int  # tt.divisibility, 1 when absent


def func_params(func: Op) -> list[Param]:
    """The parameters of a tt.func, in order."""
    block = func.body()
    text = _render(func.head)
    out = []
    for v in block.args:
        m = re.search(rf"{re.escape(v.name)}\s*:\s*([^{{,)]+?)\s*(\{{[^}}]*\}})?\s*(?:loc\([^)]*\)\)?)?\s*[,)]", text)
        div = 1
        if m and m.group(2):
            d = re.search(r"tt\.divisibility\s*=\s*(\d+)", m.group(2))
            div = int(d.group(1)) if d else 1
        out.append(Param(v.name.lstrip("%"), v.type or (m.group(1).strip() if m else ""), v, div))
    return out
