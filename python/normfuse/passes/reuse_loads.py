"""reuse-loads: one load for what a block loads twice from memory the kernel never writes.

Algebra
-------
Two loads of the same addresses under the same mask and `other` return the same values when
nothing writes that memory while the kernel runs, so the later load's users can take the
earlier load's result::

    %a = tt.load %p, %m, %o                      %a = tt.load %p, %m, %o
    ... (no write to %p's memory) ...     ->     ...
    %b = tt.load %q, %m2, %o2   (q == p, ...)    ... uses of %a where %b was used ...
    ... uses of %b ...

"The same addresses" is decided on canonical forms (`normfuse.ir.affine.Forms`), not on the
spelling: `xrow[:, None] + h * D + offs[None, :]` and `xrow[:, None] + (h * D + offs)[None, :]`
are one address tensor. What this is for: FlashNormAttention's forward reads its head's x tile in
the LayerNorm statistics' loop and again in the attention's loop (and once more for the outer
residual); once cluster-reduce has dealt one head to each CTA and inlined both loops, the two
loads sit in one block with equal addresses. Triton keeps every `tt.load` (a load is not pure
for its CSE), so without this pass the tile comes from L2 twice and is converted twice.

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. Both are pointer `tt.load`s (not descriptor loads, not volatile) directly in the same block,
   the earlier one first, with the same result type and the same cache and eviction modifiers.
2. Their pointer, mask and `other` have equal canonical forms (both without a mask, or both
   with one; the same for `other`).
3. No op of the kernel writes the loads' memory: every store's pointer traces to a kernel
   argument (`memory_root`) other than the loads', and no other op writes memory the kernel can
   see (an atomic, a call, inline asm that is not normfuse's own); kernel arguments are taken
   not to alias one another, as the other passes do.
4. Register pressure: no `tt.dot` and no control flow (an `scf` loop or branch) between them. The
   earlier load's tile stays live until the later load's users; across an attention's or a
   GEMM's dots it would take registers the dots need (FlashNormAttention's residual reload
   after the attention is left alone, with a remark).

Options
-------
across-dots = false        true: also merge loads with `tt.dot`s between them (rule 4's register
                           pressure, to measure: where Triton's pipeliner has the earlier load in
                           shared memory, the later use may read it there)
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module, Op
from ..ir.affine import Forms, NotAffine
from ..ir.ops import DOT, LOADS, LoadOp, root_names, unknown_writer, written_roots
from . import Pass, PassRun

_ATTRS = ("cacheModifier", "evictionPolicy")  # (volatile loads are not candidates)


@dataclass(frozen=True)
class ReuseLoads(Pass):
    """Reuse an earlier load of the same addresses (memory the kernel never writes)."""

    name = "reuse-loads"
    summary = ("load once what a block loads twice from memory the kernel never writes (x in "
               "FlashNormAttention's statistics and attention loops)")

    across_dots: bool = False

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        for func in module.functions():
            loads = [o for o in func.walk() if o.name in LOADS]
            if len(loads) < 2:
                run.missed("fewer than two loads in the function", func)
                continue
            why = unknown_writer(func)
            if why:
                run.missed(f"no load reused: {why}", func)
                continue
            pairs, why_not = _pairs(func, loads, written_roots(func), self.across_dots)
            if not pairs:
                run.missed(f"no load reused: {why_not or 'no two loads of the same addresses'}",
                           func)
                continue
            for keep, drop in pairs:  # analysis done: now rewrite
                module.replace_all_uses(drop.results[0], keep.results[0])
                module.erase(drop)
            n = len(pairs)
            run.applied(f"{n} load{'s' if n > 1 else ''} (of {', '.join(root_names([d for _, d in pairs]))}) "
                        f"reuse{'' if n > 1 else 's'} an earlier load of the same addresses in "
                        "the same block (memory the kernel never writes)", pairs[0][1])
            if why_not:
                run.missed(f"a load of the same addresses kept: {why_not}", func)


def _signature(o: Op) -> tuple:
    return tuple((a, o.attr(a).text if o.attr(a) is not None else None) for a in _ATTRS)


def _pairs(func: Op, loads: list[Op], written: set,
           across_dots: bool = False) -> tuple[list[tuple[Op, Op]], str | None]:
    """(earlier load, later load) pairs to merge, and why the first other same-address pair
    stayed (None when none did)."""
    forms = Forms()
    pairs, dropped, why_not = [], set(), None
    cands = []
    for o in loads:
        ld = LoadOp(o)
        if not ld.is_descriptor and not ld.is_volatile:
            cands.append(o)
    for j, later in enumerate(cands):
        for earlier in cands[:j]:
            if id(earlier) in dropped or earlier.block is not later.block:
                continue
            if not _same_load(forms, earlier, later):
                continue
            root = LoadOp(later).root
            if root is None or id(root) in written:
                why_not = why_not or ("a load whose pointer does not trace to a kernel argument"
                                      if root is None else
                                      f"the kernel writes the memory of {root.name.lstrip('%')}")
                continue
            blocker = next((o for o in _between(earlier, later)
                            if (o.name == DOT and not across_dots)
                            or (o.regions and o.name.startswith("scf."))), None)
            if blocker is not None:
                why_not = why_not or (f"'{blocker.name}' between two loads of "
                                      f"{', '.join(root_names([later]))} (the tile would stay "
                                      "live across it)")
                continue
            pairs.append((earlier, later))
            dropped.add(id(later))
            break
    return pairs, why_not


def _same_load(forms: Forms, a: Op, b: Op) -> bool:
    la, lb = LoadOp(a), LoadOp(b)
    if a.results[0].type != b.results[0].type or _signature(a) != _signature(b):
        return False
    try:
        for x, y in ((la.ptr, lb.ptr), (la.mask, lb.mask), (la.other, lb.other)):
            if (x is None) != (y is None):
                return False
            if x is not None and not forms.equal(x, y):
                return False
    except NotAffine:
        return False
    return True


def _between(a: Op, b: Op) -> list[Op]:
    block = a.block
    i, j = block.index_of(a), block.index_of(b)
    return list(block.ops[i + 1:j])
