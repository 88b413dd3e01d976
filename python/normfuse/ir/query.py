"""Read-only queries on ops, in one place: what an op's printed form says (attributes, constants,
predicates, operand roles). The lowering (`passes/hopper_ws.py`, `lowering/translate.py`) asks
these questions instead of reading Triton's printed syntax itself, so a Triton upgrade that
changes how an op prints is fixed here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .core import Op, Value, _render, parse_type

__all__ = ["int_attr", "constant_value", "cmp_predicate", "reduce_combiner", "load_info",
           "LoadInfo", "desc_info", "DescInfo", "func_params", "Param", "func_attr_int", "shape",
           "element", "is_pointer", "pointee", "func_name", "make_range_bounds", "program_id_axis", "dot_precision"]

_FLOAT_TYPES = ("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2")


def shape(v: Value) -> tuple[int, ...]:
    t = parse_type(v.type)
    return t.shape if not isinstance(t, str) else ()


def element(v: Value) -> str:
    """The element type of a tensor (or the type of a scalar): 'bf16', 'f32', 'i32', '!tt.ptr<bf16>'."""
    t = parse_type(v.type)
    return t.element if not isinstance(t, str) else t


def is_pointer(v: Value) -> bool:
    return pointee(element(v)) is not None


def pointee(type_text: str) -> str | None:
    """'!tt.ptr<bf16>' -> 'bf16'; None when the type is not a pointer."""
    m = re.fullmatch(r"\s*!tt\.ptr<(.+)>\s*", type_text)
    return m.group(1) if m else None


def int_attr(op: Op, key: str) -> int | None:
    """An integer attribute `key = 3 : i32` of the op."""
    m = re.search(rf"\b{re.escape(key)}\s*=\s*(-?\d+)\s*:\s*i\d+", op.text)
    return int(m.group(1)) if m else None


def make_range_bounds(op: Op) -> tuple[int, int]:
    return int_attr(op, "start") or 0, int_attr(op, "end")


def program_id_axis(op: Op) -> int:
    m = re.search(r"\btt\.get_(?:program_id|num_programs)\s+([xyz])", op.text)
    return "xyz".index(m.group(1)) if m else 0


_CONST = re.compile(r"arith\.constant\s+(?:dense<)?(-?[\d.]+(?:e[+-]?\d+)?|true|false|0x[0-9A-Fa-f]+)>?\s*:\s*(.+?)\s*(?:loc\(.*)?$")


def constant_value(op: Op):
    """(value, element type) of a scalar or splat `arith.constant`, else None. Floats are Python
    floats, integers ints, i1 bools; hex float literals (inf, nan) are decoded."""
    if op.name != "arith.constant":
        return None
    m = _CONST.search(_render(op.head).strip())
    if not m:
        return None
    raw, ty = m.group(1), m.group(2).strip()
    t = parse_type(ty)
    el = t.element if not isinstance(t, str) else t
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


def reduce_combiner(op: Op) -> str | None:
    """The one combining op of a single-operand tt.reduce ('arith.addf', 'arith.maxnumf', ...), or
    None when the combiner is anything else."""
    if not op.regions or not op.regions[0].blocks:
        return None
    ops = [o for o in op.regions[0].blocks[0].ops if o.name != "tt.reduce.return"]
    if len(ops) != 1 or len(op.results) != 1:
        return None
    return ops[0].name


@dataclass
class LoadInfo:
    ptr: Value
    mask: Value | None
    other: Value | None
    cache: str | None
    volatile: bool
    evict: str | None


def load_info(op: Op) -> LoadInfo:
    """Operand roles of a tt.load (pointer, mask, other) and its modifiers."""
    ops = op.operands
    text = op.text
    cache = re.search(r"cacheModifier\s*=\s*(\w+)", text)
    evict = re.search(r"evictionPolicy\s*=\s*(\w+)", text)
    return LoadInfo(ops[0], ops[1] if len(ops) > 1 else None, ops[2] if len(ops) > 2 else None,
                    cache.group(1) if cache else None, "isVolatile = true" in text,
                    evict.group(1) if evict else None)


@dataclass
class DescInfo:
    """A `tt.make_tensor_descriptor base, [shape...], [strides...]` (block shape from the type)."""
    base: Value
    shape: list[Value]
    strides: list[Value]
    block: tuple[int, ...]


def desc_info(op: Op) -> DescInfo | None:
    if op.name != "tt.make_tensor_descriptor":
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


def func_name(func: Op) -> str:
    """The symbol name of a tt.func (`@kernel` -> 'kernel')."""
    m = re.search(r"@([\w$.]+)", _render(func.head))
    return m.group(1) if m else "kernel"


def func_attr_int(func: Op, key: str) -> int | None:
    m = re.search(rf"\b{re.escape(key)}\s*=\s*(\d+)\s*:\s*i\d+", _render(func.head))
    return int(m.group(1)) if m else None


def dot_precision(op: Op) -> str | None:
    m = re.search(r"inputPrecision\s*=\s*(\w+)", op.text)
    return m.group(1) if m else None
