"""hoist-loads: move a loop's invariant loads of memory the kernel never writes out of the loop.

Algebra
-------
A load whose address and mask do not change from trip to trip reads the same values in every
trip when nothing writes that memory while the loop runs, so loading once before the loop and
using the value in every trip computes the same thing::

    scf.for %i = %lb to %ub step %s {            %t = arith.cmpi slt, %lb, %ub
      %k = tt.load %p, %m, %o                    %k = tt.load %p, (%m & splat(%t)), %o
      ... uses of %k ...                  ->     scf.for %i = %lb to %ub step %s {
    }                                              ... uses of %k ...
                                                 }

The hoisted load is masked by the loop's trip condition, so a loop that runs no trip reads
nothing (its value, `other`, is never used). What this is for: FlashNormAttention's forward with
`ROWS` (a program walking the row blocks of one sequence) loads its head's K and V (64 KB at
L = D = 128) in every row block; hoisted, they are loaded once per program, and Triton keeps the
dot operands in shared memory across the loop (the `local_alloc` follows the load).

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. The loop is an `scf.for` with a constant positive step; the load sits directly in its body
   (not under a nested loop or branch: those may not run).
2. Every operand of the load (pointer, mask, other) is defined outside the loop, or by pure ops
   directly in the body whose operands are, recursively, invariant (they move with the load);
   none depends on the induction variable or a loop-carried value.
3. The load has a mask and an `other` (the trip condition joins the mask), and is not volatile.
4. No op of the kernel writes the load's memory: every store's pointer traces to a kernel
   argument (`memory_root`) other than the load's, and no other op writes memory the kernel can
   see (an atomic, a call, inline asm that is not normfuse's own). Kernel arguments are taken not
   to alias one another, as the other passes do (the ops allocate their outputs).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module, Op
from ..ir.effects import pure_operand_slice
from ..ir.core import TensorType
from ..ir.ops import (FOR, LOADS, Builder, ForOp, LoadOp, root_names, type_of, unknown_writer,
                      written_roots)
from . import Pass, PassRun


@dataclass(frozen=True)
class HoistLoads(Pass):
    """Hoist loop-invariant loads of memory the kernel never writes out of their loops."""

    name = "hoist-loads"
    summary = ("load once before a loop what every trip loads from memory the kernel never "
               "writes (K and V of an attention walking row blocks)")

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        for func in module.functions():
            loops = [o for o in func.walk() if o.name == FOR]
            if not loops:
                continue
            why = unknown_writer(func)
            if why:
                run.missed(f"no load hoisted: {why}", func)
                continue
            written = written_roots(func)
            moved, why_not = [], []
            for lp in reversed(loops):  # inner loops first: their hoisted loads may go further
                got, why = _hoist(module, ForOp(lp), written)
                moved += got
                if why:
                    why_not.append((lp, why))
            if moved:
                run.applied(f"{len(moved)} loop-invariant load{'s' if len(moved) > 1 else ''} "
                            f"(of {', '.join(root_names(moved))}) hoisted out of their loop, masked by its "
                            "trip condition (loaded once, not every trip)", moved[0])
            else:
                lp, why = why_not[0] if why_not else (loops[0], "no load in a loop body")
                run.missed(f"no load hoisted: {why}", lp)


def _hoist(module: Module, loop: ForOp, written: set) -> tuple[list[Op], str | None]:
    """Hoist what legality allows out of `loop`; (loads moved, why the first candidate stayed)."""
    body = loop.op.regions[0].blocks[0]
    block_args = {id(a) for a in body.args}
    step = loop.constant_bounds()[2]
    if step is None or step <= 0:
        return [], "the loop's step is not a positive constant"
    moved, why = [], None
    cond = None
    for o in list(body.ops):
        if o.name not in LOADS or o.block is not body:
            continue
        ld = LoadOp(o)
        if ld.is_descriptor or ld.is_volatile:
            why = why or "a descriptor or volatile load"
            continue
        if ld.root is None or id(ld.root) in written:
            why = why or ("a load whose pointer does not trace to a kernel argument"
                          if ld.root is None else
                          f"the kernel writes the memory of {ld.root.name.lstrip('%')}")
            continue
        if ld.mask is None or ld.other is None:
            why = why or "a load without a mask and other (the trip condition needs both)"
            continue
        inside = {id(x) for x in loop.op.walk()}  # (what earlier hoists moved is outside now)
        sl = pure_operand_slice(o, body, inside, block_args)
        if sl is None:
            why = why or "its address or mask changes from trip to trip"
            continue
        for d in sorted(sl, key=body.index_of):
            module.insert(d, before=loop.op)
        if cond is None:
            lb, ub, _ = loop.bounds
            cond = Builder(module, loop.op, before=loop.op).cmpi("slt", lb, ub, hint="runs")
        b = Builder(module, loop.op, before=loop.op)
        t = type_of(ld.mask)
        shape = t.shape if isinstance(t, TensorType) else None
        runs = b.splat(cond, shape, hint="runs") if shape else cond
        mask = b.andi(ld.mask, runs, hint="hoisted_mask")
        old = ld.mask
        module.insert(o, before=loop.op)
        module.replace_all_uses(old, mask, where=lambda u, o=o: u is o)
        moved.append(o)
    return moved, (None if moved else why)
