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

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. A store, a later load and a later store of the same pointer tensor with the same mask, in one
   block (the row is one tile). When the store and the reload sit in different loops over N tiles
   the row spans several tiles: `cluster-reduce` (run first) deals them to the CTAs of a cluster,
   one tile each when they fit, and this pass then applies per CTA.
2. Between the first and the second store, no other store, atomic or call, no inline asm with side
   effects (other than cluster-reduce's exchange, which touches only its shared-memory slots), and
   no other load from the same base pointer (it could read the first store's data).
3. The reloaded tile flows only through elementwise ops into the second store (masked-off lanes
   of the reload, which held the load's `other`, never reach anything but masked-off lanes).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module, Op
from ..ir.match import LocResolver, load_parts, pointer_root, store_parts
from . import Pass, Remark
from .cluster_reduce import is_cluster_asm

_ELEMENTWISE_PREFIX = ("arith.", "math.")
_ELEMENTWISE = ("tt.broadcast", "tt.expand_dims", "tt.splat")
_WRITES = ("tt.store", "tt.atomic", "tt.call", "tt.descriptor_store")


@dataclass
class EpilogueNorm(Pass):
    """Single-CTA epilogue norm: forward the unnormalized tile through registers."""

    name = "epilogue-norm"
    summary = "normalize a GEMM output row in registers when one CTA holds it (no store + reload)"

    def run(self, module: Module) -> list[Remark]:
        self.remarks = []
        locs = LocResolver(module)
        if self.refuses_ttgir(module):
            return self.remarks
        found = False
        for func in module.functions():
            order = {id(o): i for i, o in enumerate(func.walk())}
            stores = [o for o in func.walk() if o.name == "tt.store"]
            loads = [o for o in func.walk() if o.name == "tt.load"]
            for s1 in stores:
                if s1.block is None:
                    continue
                p, _, mask = store_parts(s1)
                root = pointer_root(p)
                # loads after this store (program order) from the memory it wrote
                later = [l for l in loads if l.block is not None and root is not None
                         and order[id(l)] > order[id(s1)] and pointer_root(load_parts(l)[0]) is root]
                if not later:
                    continue
                found = True
                blk = s1.block
                seq = blk.ops[blk.index_of(s1) + 1:]
                reload = next((o for o in seq if o.name == "tt.load" and load_parts(o)[0] is p
                               and load_parts(o)[1] is mask), None)
                if reload is None:
                    if any(l.block is not blk for l in later):
                        self.remark("missed", "the stored tile is reloaded in another loop over N tiles: "
                                    "the row spans several tiles (BLOCK_N >= N puts it in one CTA; "
                                    "cluster-reduce first spreads the tiles over a cluster; with more "
                                    "tiles than CTAs the reload stays)", locs(s1))
                    else:
                        self.remark("missed", "the reload uses another pointer or mask than the store",
                                    locs(s1))
                    continue
                rest = blk.ops[blk.index_of(reload) + 1:]
                s2 = next((o for o in rest if o.name == "tt.store" and store_parts(o)[0] is p
                           and store_parts(o)[2] is mask), None)
                if s2 is None:
                    self.remark("missed", "the reloaded tile is not stored back to the same place",
                                locs(reload))
                    continue
                why = self._check_between(module, blk, s1, reload, s2, root)
                if why:
                    self.remark("missed", why, locs(reload))
                    continue
                self._rewrite(module, s1, reload)
                self.remark("applied", "output row normalized in registers before the single store "
                            "(the unnormalized tile is no longer stored and reloaded)", locs(s2))
        if not found:
            self.remark("missed", "no output tile that is stored and then reloaded")
        return self.remarks

    def _check_between(self, module: Module, blk, s1: Op, reload: Op, s2: Op, root) -> str | None:
        i1, i2 = blk.index_of(s1), blk.index_of(s2)
        for o in blk.ops[i1 + 1:i2]:
            for x in o.walk():
                if x.name.startswith(_WRITES):
                    return f"'{x.name}' between the unnormalized store and the final store"
                if (x.name == "tt.elementwise_inline_asm" and "pure = false" in x.text
                        and not is_cluster_asm(x)):
                    return "inline asm with side effects between the unnormalized store and the final store"
                if x.name == "tt.load" and x is not reload and pointer_root(load_parts(x)[0]) in (root, None):
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
                if not (u.name.startswith(_ELEMENTWISE_PREFIX) or u.name in _ELEMENTWISE) or u.regions:
                    return f"the reloaded tile reaches '{u.name}', not only elementwise ops into the store"
                frontier.extend(u.results)
        return None

    def _rewrite(self, module: Module, s1: Op, reload: Op) -> None:
        _, stored, _ = store_parts(s1)
        users = module.user_index()
        acc = stored.owner.operands[0] if stored.owner is not None and stored.owner.name == "arith.truncf" else None
        for u in users.get(id(reload.results[0]), []):
            # extf(load(store(truncf(acc)))) -> acc: skip the bf16 round trip
            if acc is not None and u.name == "arith.extf" and u.results[0].type == acc.type:
                module.replace_all_uses(u.results[0], acc)
        module.replace_all_uses(reload.results[0], stored)
        module.erase(s1)
