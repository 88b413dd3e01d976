"""The fusion: the statistics loop merged into the GEMM k-loop, the row scale sunk after it.

    stats = for k { ss += sum(x_k * x_k) }          acc = for k { d = dot(x_k, w_k, acc)
    r = rstd(stats)                         ->                 ss += sum(x_k * x_k) }
    acc = for k { d = dot(x_k * r, w_k, acc) }      r = rstd(ss);  acc * r

`plan()` decides everything (and raises `Miss`) before `rewrite()` touches the IR; `rewrite()`
cannot fail on a planned loop. The algebra and legality are in the package docstring.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...ir import Module, Op, Value
from ...ir.effects import has_side_effects
from ...ir.ops import (BROADCAST, EXPAND_DIMS, FOR, TRANS, Builder, DotOp, ForOp, LoadOp, TensorType,
                       is_zero_constant, tensor, type_of)
from .match import (Miss, StatsMatch, Step, analyze_chain, address_slice, check_stats_loop,
                    check_tile_unwritten, deferred_ops, find_stats_loop, row_sum_update)


@dataclass
class Plan:
    """Everything the rewrite of one GEMM loop needs, decided before it starts."""

    loop: ForOp
    dot: Op
    acc_index: int  # of the accumulator among the loop's iter_args
    load: Op  # the A tile load in the GEMM loop
    steps: list[Step]  # application order (tile outwards)
    stats: StatsMatch | None
    deferred: list[Op]  # ops between the loops that depend on the statistics
    row_sums: dict[int, tuple[Op, Op]] = field(default_factory=dict)  # stats_accumulate=tile
    reload: bool = False  # statistics (and column sums) from a second load of the tile
    volatile: bool = False
    shift_slice: list[Op] | None = None  # LayerNorm shift: the A address at the first trip

    @property
    def layer(self) -> bool:
        return any(s.kind == "center" for s in self.steps)


def plan(module: Module, loop: ForOp, dot: Op, opts) -> Plan:
    """Match `loop` (its tt.dot is `dot`) with `opts` (the pass's options); raise Miss."""
    users = module.user_index()
    acc = DotOp(dot).acc
    if acc is None or acc not in loop.iter_args:
        raise Miss("the dot's accumulator is not carried by the loop", dot)
    idx = loop.iter_args.index(acc)
    if loop.yields[idx] is not dot.results[0] or users.get(id(acc), []) != [dot] or \
            users.get(id(dot.results[0]), []) != [loop.yield_op]:
        raise Miss("the accumulator has other users than the dot and the yield", dot)
    load, steps = analyze_chain(loop, dot, users)
    stats_loop = find_stats_loop(loop, steps)
    stats, deferred = None, []
    if stats_loop is not None:
        stats = check_stats_loop(loop, stats_loop, load, users)
        blk = loop.op.block
        for o in blk.ops[blk.index_of(stats_loop.op) + 1:blk.index_of(loop.op)]:
            if has_side_effects(o):  # the statistics' reads would move past it
                raise Miss(f"'{o.name}' writes memory between the statistics loop and the GEMM loop", o)
        check_tile_unwritten(stats.load, load)  # (a store in the GEMM loop, say)
        deferred = deferred_ops(stats_loop, loop)
        allowed = set()
        for s in steps:
            if s.kind in ("scale", "center"):
                allowed.add(id(s.op))
                o = s.other.owner
                while o is not None and loop.contains(o.results[0]) and o.name in (
                        BROADCAST, EXPAND_DIMS):
                    allowed.add(id(o))
                    o = o.operands[0].owner
        dvals = {id(r) for o in deferred for r in o.results}
        for o in loop.op.walk():
            if o is loop.op or id(o) in allowed:
                continue
            if any(id(v) in dvals for v in o.operands):
                raise Miss("the GEMM loop uses a value computed from the statistics besides the "
                           "row scale", o)
    bm = type_of(dot.results[0]).shape[0]
    for s in steps:
        if s.kind == "scale" and type_of(s.vector) != TensorType((bm,), "f32"):
            raise Miss(f"the row scale is a {s.vector.type}, not an f32 vector of the tile's {bm} rows",
                       s.op)
    p = Plan(loop, dot, idx, load, steps, stats, deferred)
    if stats is not None:
        p.reload = opts.stats_source != "tile"
        p.volatile = opts.stats_source == "reload-volatile"
        # auto: a tile accumulator for a single statistic (RMSNorm); LayerNorm's two [BM, BK]
        # fp32 tiles spill at 128x256 (ptxas: 255 registers, 100 B spilled), so rows there.
        if opts.stats_accumulate == "tile" or (opts.stats_accumulate == "auto" and len(stats.indices) == 1):
            for i in stats.indices:
                m = row_sum_update(stats.loop, i, users)
                if m is not None:
                    p.row_sums[i] = m
    kinds = [s.kind for s in steps]
    if p.layer and (opts.shift == "true" or (opts.shift == "auto" and any(k in ("weight", "bias")
                                                                            for k in kinds))):
        p.shift_slice = address_slice(loop, load)
    return p


def rewrite(module: Module, p: Plan) -> tuple[list[str], list[Op]]:
    """Apply a plan. Returns what was done (for the remark) and the loads it added (reloads of
    tiles, for stage-reloads)."""
    loop, dot = p.loop, p.dot
    acc_t = type_of(dot.results[0])
    bm, bn = acc_t.shape
    f32 = lambda *shape: tensor(shape, "f32")  # noqa: E731
    before_loop = Builder(module, dot, before=loop.op)
    reloads: list[Op] = []

    # 1. statistics: accumulate them in the GEMM loop from its own tile (or a second load of it)
    stats_src = p.load
    anchor = loop.op
    if p.stats is not None:
        st = p.stats
        if p.reload:
            stats_src = Builder(module, dot, after=p.load).reload(p.load, volatile=p.volatile)
            reloads.append(stats_src)
        inits, types = [], []
        for i in st.indices:
            if i in p.row_sums:
                t = p.row_sums[i][0].operands[0].type
                inits.append(before_loop.zeros(t, hint="stat0"))
                types.append(t)
            else:
                inits.append(st.loop.inits[i])
                types.append(st.loop.op.results[i].type)
        new_args, new_results = loop.add_iter_args(module, inits, types, "stat")
        mapping = dict(st.counterparts)
        mapping[id(st.load.results[0])] = stats_src.results[0]
        for i, a in zip(st.indices, new_args):
            mapping[id(st.loop.iter_args[i])] = a
        skip = {id(o) for red, add in p.row_sums.values() for o in (red, add)}
        in_loop = Builder(module, dot, before=loop.yield_op, hint="stat")
        for o in st.slice:
            if id(o) not in skip:
                in_loop.clone(o, mapping)
        nxt = []
        for i, a in zip(st.indices, new_args):
            if i in p.row_sums:  # T += t, elementwise: no cross-thread reduction per k-step
                nxt.append(in_loop.addf(a, mapping[id(p.row_sums[i][0].operands[0])]))
            else:
                nxt.append(mapping[id(st.loop.yields[i])])
        loop.set_yields(loop.yields + nxt)
        after = Builder(module, dot, after=loop.op, hint="stat")
        for i, r in zip(st.indices, new_results):
            if i in p.row_sums:
                fin = after.addf(st.loop.inits[i], after.reduce_sum(r, 1))
                module.replace_all_uses(st.loop.op.results[i], fin)
            else:
                module.replace_all_uses(st.loop.op.results[i], r)
        for o in p.deferred:
            after.insert(o)
        anchor = after.last

    # 2. LayerNorm: the shift, the centered operand, and the column sums of B
    shift = colsum = bsum = None
    if p.layer:
        center = p.steps[0]
        if p.shift_slice is not None:
            shift = _first_tile_row_mean(module, p, before_loop)
            bk = type_of(center.op.result).shape[1]
            sb = before_loop.row_broadcast(shift, [bm, bk], hint="shift")
            # masked-off lanes of the tile (x = `other`) stay (other - shift): the naive kernel
            # feeds (other - mean) * rstd * g + beta there, which the correction below
            # (mean - shift) * colsum and the beta column sum reproduce exactly, whatever B, g
            # and beta hold in those columns (zeroing them instead changed kernels that read W
            # unmasked past K)
            module.replace_all_uses(center.other, sb, where=lambda o: o is center.op)
        colsum, bsum = _column_sums(module, p, bn, reloads)

    # 3. drop the per-row factors from the loop
    for s in p.steps:
        if s.kind in ("scale", "bias") or (s.kind == "center" and shift is None):
            # the chain operand as it is now (an earlier step may have been rewired)
            chain = next(v for v in s.op.operands if v is not s.other)
            module.replace_all_uses(s.op.result, chain)
    erase_dead(module, loop.op)
    if p.stats is not None:
        module.erase(p.stats.loop.op)

    # 4. after the loop: scale (and correct) the accumulator
    acc_out = loop.op.results[p.acc_index]
    acc_init = loop.inits[p.acc_index]
    out = Builder(module, dot, after=anchor, hint="lazy")
    scale = None
    for s in p.steps:
        if s.kind == "scale":
            # x / r: the factor is 1 / r, once per row (not a division per element)
            vec = out.divf(out.constant(1.0, s.vector.type), s.vector) if s.inverse else s.vector
            scale = vec if scale is None else out.mulf(scale, vec)
    rb = out.row_broadcast(scale, [bm, bn])
    val = acc_out
    if p.layer:
        mean = p.steps[0].vector
        delta = mean if shift is None else out.subf(mean, shift)
        db = out.row_broadcast(delta, [bm, bn])
        cb = out.row_broadcast(colsum, [bm, bn], axis=0)
        val = out.subf(val, out.mulf(db, cb))
    val = out.mulf(val, rb)
    if bsum is not None:
        val = out.addf(val, out.row_broadcast(bsum, [bm, bn], axis=0))
    if not is_zero_constant(acc_init):
        loop.set_init(p.acc_index, before_loop.zeros(acc_out.type, hint="acc0"))
        val = out.addf(val, acc_init)
    mine = set(id(o) for o in out.created)
    module.replace_all_uses(acc_out, val, where=lambda o: id(o) not in mine)

    done = []
    if p.stats is not None:
        done.append("statistics loop fused" + (" (statistics from a cg reload of the tile)"
                                               if stats_src is not p.load else ""))
        if p.row_sums:
            done.append("statistics summed elementwise in the loop, reduced once after it")
    else:
        done.append("row scale is precomputed: sunk only")
    if p.layer:
        done.append("shifted by the first tile's row mean" if shift is not None else
                    "no shift (the tile reaches the MMA unscaled)")
    return done, reloads


def _first_tile_row_mean(module: Module, p: Plan, b: Builder) -> Value:
    """Load the first K tile before the loop (its address slice with iv = lb) and return its
    per-row mean, the LayerNorm shift."""
    loop = p.loop
    mapping = {id(loop.iv): loop.bounds[0]}
    for a, i in zip(loop.iter_args, loop.inits):
        mapping[id(a)] = i
    for o in p.shift_slice:
        b.clone(o, mapping)
    first = mapping[id(p.load.results[0])]
    bk = type_of(first).shape[1]
    x = b.to_f32(first, hint="shift")
    red = b.reduce_sum(x, 1, hint="shift")
    return b.mulf(red, b.constant(1.0 / bk, red.type, hint="shift"), hint="shift")


def _column_sums(module: Module, p: Plan, bn: int, reloads: list[Op]):
    """Accumulate colsum(diag(g) B) and (beta^T B) for this N tile in the loop (a reload of
    B, when made, is appended to `reloads`)."""
    loop, dot = p.loop, p.dot
    b = DotOp(dot).b
    views, v = [], b  # tt.trans between the load and the dot (a K-major W read by TMA)
    while v.owner is not None and v.owner.name == TRANS:
        views.append(v.owner)
        v = v.owner.operands[0]
    bload = LoadOp.match(v)
    src = b
    y = loop.yield_op
    ins = Builder(module, dot, before=y)
    if bload is not None and p.reload:
        again = Builder(module, dot, after=bload.op).reload(bload.op, volatile=p.volatile)
        reloads.append(again)
        mapping = {id(bload.result): again.results[0]}
        for view in reversed(views):
            ins.clone(view, mapping)
        src = mapping[id(b)]
    bk = type_of(b).shape[0]
    bf = ins.to_f32(src, hint="bcol")

    def col(vec: Value) -> Value:  # [BK] -> [BK, BN] broadcast along N
        return ins.row_broadcast(ins.to_f32(vec), [bk, bn])

    weighted = bf
    for s in p.steps:
        if s.kind == "weight":
            weighted = ins.mulf(weighted, col(s.vector))
    terms = [weighted]
    bias = [s for s in p.steps if s.kind == "bias"]
    if bias:
        terms.append(ins.mulf(bf, col(bias[0].vector)))
    zero = Builder(module, dot, before=loop.op).zeros(tensor([bn], "f32"), hint="colsum0")
    args, results = loop.add_iter_args(module, [zero] * len(terms), [zero.type] * len(terms), "colsum")
    nxt = [ins.addf(a, ins.reduce_sum(t, 0, hint="colsum"), hint="colsum") for t, a in zip(terms, args)]
    loop.set_yields(loop.yields + nxt)
    return results[0], (results[1] if bias else None)


def erase_dead(module: Module, root: Op) -> None:
    """Erase ops nested in `root` whose results are unused and that have no side effects."""
    changed = True
    while changed:
        changed = False
        users = module.user_index()
        for o in list(root.walk()):
            if o is root or o.block is None or not o.results or o.name == FOR or has_side_effects(o):
                continue
            if all(not users.get(id(r)) for r in o.results):
                module.erase(o)
                changed = True
