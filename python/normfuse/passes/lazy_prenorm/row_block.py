"""The row-block rewrite: statistics once per row block instead of once per N tile.

    stats = for k {...}                       for n (carry r) {
    r = rstd(stats)                              first = n == lb
    for n {                          ->          r', acc = scf.if first { stats' = for k {...}; r' = rstd(stats')
      acc = for k { dot(x * r, ...) }                                   acc' = for k { dot(x * r', ...) } }
      store(acc) }                                         else { acc'' = for k { dot(x * r, ...) } }
                                                 store(acc); yield r' }

The first trip's copy is then fused (`fusion`), the later trips' row scale is sunk as a
precomputed one. Conditions are in the package docstring ("Once per row block"); a loop that
does not qualify is left alone silently (the fusion then reports the row scale as precomputed).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir import Module, Op, Value
from ...ir.effects import has_side_effects
from ...ir.ops import FOR, Builder, ForOp
from .match import Miss, analyze_chain, deferred_ops, loops_defining, row_vectors, single_dot


@dataclass
class Plan:
    loop: ForOp  # the GEMM loop
    nloop: ForOp  # the loop over N tiles around it
    stats: ForOp  # the statistics loop before nloop
    deferred: list[Op]  # ops between stats and nloop that derive the row vectors
    carried: list[Value]  # results of stats/deferred used inside nloop


def plan(module: Module, loop: ForOp) -> Plan | None:
    """Whether the GEMM loop `loop` sits in an N-tile loop with its statistics before it."""
    try:
        dot = single_dot(loop)
    except Miss:
        return None
    outer = loop.op.parent_op
    if dot is None or outer is None or outer.name != FOR:
        return None
    nloop = ForOp(outer)
    users = module.user_index()
    try:
        _, steps = analyze_chain(loop, dot, users)
    except Miss:
        return None
    vectors = row_vectors(steps)
    if not vectors or any(nloop.contains(v) for v in vectors):
        return None
    block = nloop.op.block
    found = loops_defining(vectors, block)
    if len(found) != 1 or block.index_of(found[0]) > block.index_of(nloop.op):
        return None
    stats = ForOp(found[0])
    if any(has_side_effects(o) for o in stats.body.ops):
        return None
    deferred = deferred_ops(stats, nloop)
    mine = {id(o) for o in deferred} | {id(stats.op)}
    carried = []
    for o in [stats.op] + deferred:
        for r in o.results:
            outside = [u for u in users.get(id(r), []) if id(u) not in mine and not nloop.op.is_ancestor_of(u)]
            if outside:
                return None  # the statistics are used after the N loop as well
            if any(nloop.op.is_ancestor_of(u) for u in users.get(id(r), [])):
                carried.append(r)
    # the statistics' reads move from before the N loop to its first trip, just before the GEMM
    # loop: no write may come between those two points (it could alias X)
    between = block.ops[block.index_of(stats.op) + 1:block.index_of(nloop.op)]
    ahead = nloop.body.ops[:nloop.body.index_of(loop.op)]
    if any(has_side_effects(o) for o in between + ahead):
        return None
    return Plan(loop, nloop, stats, deferred, carried)


def rewrite(module: Module, p: Plan) -> None:
    loop, nloop = p.loop, p.nloop
    b = Builder(module, loop.op, before=loop.op, hint="rowblock")
    first = b.cmpi("eq", nloop.iv, nloop.bounds[0], hint="first")
    mapping: dict[int, Value] = {}
    then_ops = [module.clone(o, mapping) for o in [p.stats.op] + p.deferred]
    then_ops.append(module.clone(loop.op, mapping))
    fused_loop = then_ops[-1]
    # later trips: the statistics carried from the first trip (zero before it: a loop that runs
    # no trip uses none)
    zeros = [Builder(module, loop.op, before=nloop.op).zeros(r.type, hint="rowstat0") for r in p.carried]
    args, _ = nloop.add_iter_args(module, zeros, [r.type for r in p.carried], "rowstat")
    for r, a in zip(p.carried, args):
        module.replace_all_uses(r, a, where=lambda o: nloop.op.is_ancestor_of(o))
    then_vals = [mapping[id(r)] for r in p.carried] + list(fused_loop.results)
    else_vals = list(args) + list(loop.op.results)
    ifop = b.if_(first, then_vals, else_vals)
    then_yield, else_yield = ifop.then_yield, ifop.else_yield
    for o in then_ops:
        module.insert(o, before=then_yield)
    n = len(p.carried)
    for r, nr in zip(loop.op.results, ifop.results[n:]):
        module.replace_all_uses(r, nr, where=lambda o: o is not else_yield)
    module.insert(loop.op, before=else_yield)
    nloop.set_yields(nloop.yields + list(ifop.results[:n]), module, loc=loop.op)
    for o in reversed(p.deferred):
        module.erase(o)
    module.erase(p.stats.op)
