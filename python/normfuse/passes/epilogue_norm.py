"""epilogue-norm: normalize a GEMM's output row in registers when one CTA holds the whole row.

Algebra
-------
None is changed: y = norm(acc) is computed from the accumulator instead of from its stored and
reloaded copy. The naive post-norm kernel stores the unnormalized tile, finishes the row
statistics, reloads the tile, normalizes it and stores it again; when the whole row fits one tile
(N <= BLOCK_N, a constexpr N, so Triton has inlined the single-trip loops over N) the reload reads
exactly what the first store wrote. The pass forwards the stored value to the reload (the fp32
accumulator itself when the store rounded it: one rounding instead of two) and deletes the first
store, which the second one overwrites.

Before::

    tt.store %p, truncf(%acc), %mask             // unnormalized tile
    %rstd = ... sum(%acc * %acc) ...
    %y = tt.load %p, %mask, %zero
    tt.store %p, truncf(extf(%y) * %rstd * %g), %mask

After::

    %rstd = ... sum(%acc * %acc) ...
    tt.store %p, truncf(%acc * %rstd * %g), %mask

The statistics are not inspected: any row reduction of an elementwise function of the
accumulator and other loaded tiles qualifies, because the pass changes only where the reloaded
tile comes from. So the same rewrite fuses the norm *backward* into a dX GEMM's epilogue (the
naive kernel `kernels/backward.py:norm_backward_naive`): du = dY W (times SiLU'(n) in the
regrouped post-norm form), the row sums sum(du g xhat) (LayerNorm: and sum(du g)) with xhat
recomputed from a loaded x tile and the saved rstd (mean), du stored, reloaded and finished as
dx = rstd (du g - mean(du g) - xhat mean(du g xhat)); with the row in one tile du never reaches
memory (`test/lit/epilogue-norm-backward.mlir`). Stores to other kernel arguments (the dg partial
column sums; a training forward's saved tiles) are left alone wherever they are: distinct
arguments do not alias, as rule 2 assumes for loads.

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. A store, a later load and a later store of the same pointer tensor with the same mask (or the
   same tensor descriptor at the same indices), in one block (the row is one tile). When the store and the reload sit in different loops over N tiles
   the row spans several tiles: `cluster-reduce` (run first) deals them to the CTAs of a cluster,
   one tile each when they fit, and this pass then applies per CTA.
2. Between the first and the second store, nothing that writes memory (the effects table,
   `normfuse.ir.effects`: stores, atomics, calls, inline asm with side effects, unknown ops)
   except cluster-reduce's exchange, which touches only normfuse's private slots, and stores
   whose base traces to another kernel argument than the output's (side outputs; distinct
   arguments are taken not to alias); and no other read that may see the first store's data
   (a load from the same base pointer, or from a base that cannot be traced).
3. The reloaded tile flows only through elementwise ops into the second store (masked-off lanes
   of the reload, which held the load's `other`, never reach anything but masked-off lanes).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module, Op
from ..ir import effects
from ..ir.ops import (EXTF, INLINE_ASM, LOADS, STORES, TRUNCF, Block, LoadOp, StoreOp,
                      is_elementwise)
from . import Pass, PassRun


@dataclass(frozen=True)
class EpilogueNorm(Pass):
    """Single-CTA epilogue norm: forward the unnormalized tile through registers."""

    name = "epilogue-norm"
    summary = "normalize a GEMM output row in registers when one CTA holds it (no store + reload)"

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        found = False
        for func in module.functions():
            order = {id(o): i for i, o in enumerate(func.walk())}
            stores = [o for o in func.walk() if o.name in STORES]
            loads = [o for o in func.walk() if o.name in LOADS]
            for s1 in stores:
                if s1.block is None:
                    continue
                first = StoreOp(s1)
                where, root = first.address, first.root
                # loads after this store (program order) from the memory it wrote
                later = [l for l in loads if l.block is not None and root is not None
                         and order[id(l)] > order[id(s1)] and LoadOp(l).root is root]
                if not later:
                    continue
                found = True
                blk = s1.block
                seq = blk.ops[blk.index_of(s1) + 1:]
                reload = next((o for o in seq if o.name in LOADS and _same(LoadOp(o).address, where)), None)
                if reload is None:
                    if any(l.block is not blk for l in later):
                        run.missed("the stored tile is reloaded in another loop over N tiles: "
                                   "the row spans several tiles (BLOCK_N >= N puts it in one CTA; "
                                   "cluster-reduce first spreads the tiles over a cluster; with more "
                                   "tiles than CTAs the reload stays)", s1)
                    else:
                        run.missed("the reload uses another pointer or mask than the store", s1)
                    continue
                rest = blk.ops[blk.index_of(reload) + 1:]
                s2 = next((o for o in rest if o.name in STORES and _same(StoreOp(o).address, where)), None)
                if s2 is None:
                    run.missed("the reloaded tile is not stored back to the same place", reload)
                    continue
                why = _check_between(module, blk, s1, reload, s2, root)
                if why:
                    run.missed(why, reload)
                    continue
                _rewrite(module, s1, reload)
                run.applied("output row normalized in registers before the single store "
                            "(the unnormalized tile is no longer stored and reloaded)", s2)
        if not found:
            run.missed("no output tile that is stored and then reloaded")


def _check_between(module: Module, blk: Block, s1: Op, reload: Op, s2: Op, root) -> str | None:
    i1, i2 = blk.index_of(s1), blk.index_of(s2)
    for o in blk.ops[i1 + 1:i2]:
        for x in o.walk():
            own = effects.effects(x)
            # writes to normfuse's private memory (cluster-reduce's exchange slots) cannot alias Y
            if any(e.kind == effects.WRITE and e.resource != effects.PRIVATE for e in own):
                if x.name in STORES and _other_argument(StoreOp(x).root, root):
                    continue  # a side output (e.g. a training forward's saved tiles)
                if x.name == INLINE_ASM:
                    return "inline asm with side effects between the unnormalized store and the final store"
                return f"'{x.name}' between the unnormalized store and the final store"
            if x is reload or not any(e.kind == effects.READ and e.resource != effects.PRIVATE for e in own):
                continue
            if x.name not in LOADS or LoadOp(x).root in (root, None):
                return "another load from the output's memory between the two stores"
    users = module.user_index()
    frontier, seen = [reload.results[0]], set()
    while frontier:
        val = frontier.pop()
        for u in users.get(id(val), []):
            if u is s2:
                continue
            if id(u) in seen:
                continue
            seen.add(id(u))
            if not is_elementwise(u):
                return f"the reloaded tile reaches '{u.name}', not only elementwise ops into the store"
            frontier.extend(u.results)
    return None


def _other_argument(base, root) -> bool:
    """Whether a store's traced base is a kernel argument other than the output's: distinct
    arguments do not alias (the assumption rule 2 makes for loads from other bases). Roots are
    kernel parameters or None (`ir.ops.pointer_root`: a pointer a loop carries has one only
    where every trip's value derives from that one parameter)."""
    return base is not None and root is not None and base is not root


def _same(a: tuple, b: tuple) -> bool:
    """Two addresses made of the same values (same pointer and mask, or same descriptor and
    indices)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _rewrite(module: Module, s1: Op, reload: Op) -> None:
    stored = StoreOp(s1).value
    users = module.user_index()
    acc = stored.owner.operands[0] if stored.owner is not None and stored.owner.name == TRUNCF else None
    for u in users.get(id(reload.results[0]), []):
        # extf(load(store(truncf(acc)))) -> acc: skip the bf16 round trip
        if acc is not None and u.name == EXTF and u.results[0].type == acc.type:
            module.replace_all_uses(u.results[0], acc)
    module.replace_all_uses(reload.results[0], stored)
    module.erase(s1)
