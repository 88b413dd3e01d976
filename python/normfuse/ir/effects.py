"""Memory effects of TTIR ops: the one table every pass asks before moving, merging or erasing.

Triton's bindings do not expose MLIR's MemoryEffectOpInterface, so the table is written here from
the TTIR op definitions (Triton 3.6). Anything the table does not know is assumed to read and
write memory: a new op makes a pass more careful, never wrong.

Resources:
- `MEMORY`: global or shared memory that the kernel's tensors may alias (what tt.load and
  tt.store touch);
- `PRIVATE`: memory that only normfuse's own inline asm touches (cluster-reduce's exchange slots
  past Triton's shared-memory allocation, or its slice of global scratch). Such asm starts with
  `NORMFUSE_ASM_MARK`; its writes never alias a tensor the kernel loads or stores, but they are
  still writes (nothing may be merged across them or erase them).

Inline asm that is not marked pure counts as a read and a write of `MEMORY`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .core import Op, Value
from .syntax import first_string, read_attrs

READ = "read"
WRITE = "write"
MEMORY = "memory"
PRIVATE = "normfuse-private"

# the prefix of every inline asm that normfuse emits (see PRIVATE above)
NORMFUSE_ASM_MARK = "/* normfuse."


@dataclass(frozen=True)
class Effect:
    kind: str  # READ or WRITE
    resource: str = MEMORY


_R = (Effect(READ),)
_W = (Effect(WRITE),)
_RW = (Effect(READ), Effect(WRITE))
_NONE: tuple = ()

_PURE_PREFIXES = ("arith.", "math.", "ub.", "llvm.intr.assume")
_PURE = {
    # structure and control flow (what their regions hold is looked at separately)
    "module", "builtin.module", "tt.func", "tt.return", "scf.for", "scf.if", "scf.while",
    "scf.yield", "scf.condition", "scf.index_switch", "scf.execute_region",
    "tt.reduce.return", "tt.scan.return",
    # values
    "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans", "tt.cat", "tt.join",
    "tt.split", "tt.make_range", "tt.addptr", "tt.advance", "tt.make_tensor_ptr",
    "tt.get_program_id", "tt.get_num_programs", "tt.dot", "tt.dot_scaled", "tt.reduce", "tt.scan",
    "tt.histogram", "tt.gather", "tt.int_to_ptr", "tt.ptr_to_int", "tt.bitcast", "tt.fp_to_fp",
    "tt.clampf", "tt.precise_sqrt", "tt.precise_divf", "tt.mulhiui", "tt.unsplat", "tt.assume",
    "tt.make_tensor_descriptor", "ttg.convert_layout", "ttg.global_scratch_alloc",
}
_TABLE = {
    "tt.load": _R,
    "tt.descriptor_load": _R,
    "tt.descriptor_gather": _R,
    "ttg.local_load": _R,
    "tt.store": _W,
    "tt.descriptor_store": _W,
    "tt.descriptor_scatter": _W,
    "tt.descriptor_reduce": _RW,
    "tt.atomic_rmw": _RW,
    "tt.atomic_cas": _RW,
    "ttg.local_store": _W,
    "tt.print": _RW,
    "tt.assert": _RW,
    "tt.call": _RW,  # the callee is not looked at
    "gpu.barrier": _RW,
}


def effects(op: Op) -> tuple[Effect, ...]:
    """The op's own effects (not those of ops nested in its regions)."""
    name = op.name
    if name in _TABLE:
        return _TABLE[name]
    if name in ("tt.elementwise_inline_asm", "tt.inline_asm"):
        pure = read_attrs(op.text).get("pure")
        if pure is not None and pure.bool:
            return _NONE
        if (first_string(op.text) or "").startswith(NORMFUSE_ASM_MARK):
            return (Effect(READ, PRIVATE), Effect(WRITE, PRIVATE))
        return _RW
    if name == "tt.extern_elementwise":
        pure = read_attrs(op.text).get("pure")
        return _NONE if pure is not None and pure.bool else _RW
    if name in _PURE or name.startswith(_PURE_PREFIXES):
        return _NONE
    return _RW


def _nested(op: Op):
    return op.walk()


def has_side_effects(op: Op) -> bool:
    """Whether `op` or an op nested in it writes memory (of any resource): such an op may not be
    erased, duplicated or moved across other memory accesses."""
    return any(e.kind == WRITE for o in _nested(op) for e in effects(o))


def writes_memory(op: Op, *, private: bool = True) -> bool:
    """Whether `op` (or an op nested in it) writes; `private=False` ignores writes to normfuse's
    private memory (they cannot alias the kernel's tensors)."""
    return any(e.kind == WRITE and (private or e.resource != PRIVATE)
               for o in _nested(op) for e in effects(o))


def reads_memory(op: Op, *, private: bool = True) -> bool:
    return any(e.kind == READ and (private or e.resource != PRIVATE)
               for o in _nested(op) for e in effects(o))


def is_normfuse_asm(op: Op) -> bool:
    """An inline asm that normfuse emitted (it touches only normfuse's private memory)."""
    return (op.name in ("tt.elementwise_inline_asm", "tt.inline_asm")
            and (first_string(op.text) or "").startswith(NORMFUSE_ASM_MARK))


def is_pure(op: Op) -> bool:
    """No effect at all, nested ops included (may be erased when unused, duplicated, hoisted)."""
    return not any(effects(o) for o in _nested(op))


def pure_operand_slice(op: Op, block, considered, blocked=frozenset()) -> list[Op] | None:
    """The ops that compute `op`'s operands, transitively, among those `considered` (ids of ops;
    the others' values are taken as given): each must sit directly in `block`, be pure and
    have no regions, and no value reached may be in `blocked` (ids of values). What moves with
    `op` when it moves earlier in `block`; unordered; None when something disqualifies it."""
    out: list[Op] = []
    seen: set = set()
    todo = [v for v in op.operands if isinstance(v, Value)]
    while todo:
        v = todo.pop()
        if id(v) in blocked:
            return None
        d = v.owner
        if d is None or id(d) not in considered or id(d) in seen:
            continue
        if d.block is not block or d.regions or not is_pure(d):
            return None
        seen.add(id(d))
        out.append(d)
        todo += [u for u in d.operands if isinstance(u, Value)]
    return out
