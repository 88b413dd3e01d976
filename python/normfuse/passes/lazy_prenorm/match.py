"""What lazy-prenorm's three transforms (the fusion, the row-block rewrite, stage-reloads) match:
the GEMM k-loop, the chain of per-row and per-column steps on its A operand, the statistics loop
that produces the row vectors, and the proof that both loops read the same tile. Nothing here
edits the IR."""
from __future__ import annotations

from dataclasses import dataclass

from ...ir import Op, Value
from ...ir.effects import has_side_effects
from ...ir.affine import Forms, memory_written, undetermined
from ...ir.match import backward_slice
from ...ir.ops import (ADDF, DIVF, DOT, EXTF, FOR, LOADS, MULF, STORES, SUBF, TRUNCF, ForOp, LoadOp,
                       ReduceOp, StoreOp, function_of, row_vector, shape_of, unknown_writer,
                       written_roots)


class Miss(Exception):
    """The loop does not match; the message becomes the "missed" remark (at `op`)."""

    def __init__(self, msg: str, op: Op | None = None):
        super().__init__(msg)
        self.op = op


@dataclass
class Step:
    """One elementwise step between the loaded A tile and the dot."""

    kind: str  # scale (per-row factor) | center (per-row subtrahend) | weight | bias (per column)
    op: Op  # the arith op applying it
    chain: Value  # the tile value it is applied to
    vector: Value  # the un-broadcast vector
    other: Value  # the broadcast operand
    inverse: bool = False  # a scale applied as a division (x / rms): the factor is 1 / vector


def single_dot(loop: ForOp) -> Op | None:
    """The loop's tt.dot (directly in its body), None without one; Miss with several."""
    dots = [o for o in loop.body.ops if o.name == DOT]
    if not dots:
        return None
    if len(dots) > 1:
        raise Miss("the loop has several tt.dot ops; only one accumulator is handled", dots[1])
    return dots[0]


def tile_load(v: Value, loop: ForOp) -> Op | None:
    """The load in `loop` that `v` is (possibly through an extf)."""
    op = v.owner
    if op is not None and op.name == EXTF:
        op = op.operands[0].owner
    if op is not None and op.name in LOADS and loop.contains(op.results[0]):
        return op
    return None


def analyze_chain(loop: ForOp, dot: Op, users) -> tuple[Op, list[Step]]:
    """The A tile's load and the steps from it to the dot, in application order (tile outwards).

    The steps are elementwise ops with one broadcast vector each: a per-row scale, optionally a
    per-row centering first (LayerNorm), per-column weights, and a per-column bias last."""
    v = dot.operands[0]
    if v.owner is not None and v.owner.name in (TRUNCF, EXTF):
        v = v.owner.operands[0]
    steps: list[Step] = []
    while True:
        load = tile_load(v, loop)
        if load is not None:
            break
        op = v.owner
        if op is None or not loop.contains(v):
            raise Miss("the dot's A operand is not computed from a tile loaded in this loop", dot)
        if op.name not in (MULF, ADDF, SUBF, DIVF):
            raise Miss(f"the A operand goes through '{op.name}', which the pass does not look through", op)
        if len(users.get(id(v), [])) > 1:
            raise Miss("a scaled A tile has another user besides the dot", op)
        x, y = op.operands
        candidates = [(x, y)] if op.name in (SUBF, DIVF) else [(x, y), (y, x)]
        step = None
        for chain, other in candidates:
            rv = row_vector(other)
            if rv is None:
                continue
            vec, axis = rv
            rows = len(shape_of(vec)) == 1 and axis == 1
            cols = len(shape_of(vec)) == 1 and axis == 0
            if rows:
                if loop.contains(vec):
                    raise Miss("the per-row factor is computed inside the k-loop (varies with k); not sunk", op)
                kind = {MULF: "scale", DIVF: "scale", SUBF: "center"}.get(op.name)
                if kind is None:
                    raise Miss("a per-row bias on the A tile is not a pre-norm; not sunk", op)
            elif cols:
                kind = {MULF: "weight", ADDF: "bias"}.get(op.name)
                if kind is None:
                    raise Miss(f"a per-column '{op.name}' on the A tile is not a pre-norm", op)
            else:
                continue
            step = Step(kind, op, chain, vec, other, inverse=op.name == DIVF)
            break
        if step is None:
            raise Miss(f"'{op.name}' on the A tile does not use a row or column broadcast vector "
                       "(a factor that depends on both row and column is not sunk)", op)
        steps.append(step)
        v = step.chain
    steps.reverse()
    kinds = [s.kind for s in steps]
    if "scale" not in kinds:
        raise Miss("no per-row scale on the A operand of the dot", dot)
    if "center" in kinds and kinds.index("center") != 0:
        raise Miss("the per-row centering is not applied to the loaded tile first", dot)
    if kinds.count("center") > 1 or kinds.count("bias") > 1:
        raise Miss("several centerings or biases on the A tile", dot)
    if "bias" in kinds and kinds[-1] != "bias":
        raise Miss("the per-column bias is not the last step before the dot", dot)
    return load, steps


def row_vectors(steps: list[Step]) -> list[Value]:
    """The per-row vectors the steps use (scales and the centering)."""
    return [s.vector for s in steps if s.kind in ("scale", "center")]


def loops_defining(vectors: list[Value], block) -> list[Op]:
    """The scf.for ops of `block` that the vectors are computed from (within `block`). A loop
    with a tt.dot is a GEMM loop, not a statistics loop: a vector computed after one (the row
    scale of a row block's later N tiles, once an earlier tile's loop has been fused) is
    precomputed as far as the next GEMM loop is concerned."""
    found: list[Op] = []
    for v in vectors:
        for op in backward_slice(v, lambda x: x.owner is None or x.owner.block is not block):
            if op.name == FOR and op not in found and not any(o.name == DOT for o in op.walk()):
                found.append(op)
    return found


def find_stats_loop(loop: ForOp, steps: list[Step]) -> ForOp | None:
    found = loops_defining(row_vectors(steps), loop.op.block)
    if len(found) > 1:
        raise Miss("the row statistics come from several loops", found[1])
    return ForOp(found[0]) if found else None


@dataclass
class StatsMatch:
    """A statistics loop proven to read the GEMM loop's tile, trip by trip."""

    loop: ForOp
    load: Op  # its tile load
    indices: list[int]  # the loop results that are statistics used later
    slice: list[Op]  # its ops that compute the statistics (to clone into the GEMM loop)
    counterparts: dict  # id(value of the statistics loop) -> the GEMM loop's equal value


def check_stats_loop(loop: ForOp, stats: ForOp, load2: Op, users) -> StatsMatch:
    """The statistics loop reads, in each trip, the tile the GEMM loop's `load2` reads, however
    each loop spells its iteration and its addresses (`normfuse.ir.affine`). That the tile holds
    the same values in both loops is `check_tile_unwritten`'s (and `fusion.plan`'s) to prove."""
    parent = loop.op.block
    if stats.op.block is not parent or parent.index_of(stats.op) > parent.index_of(loop.op):
        raise Miss("the statistics loop is not a preceding sibling of the GEMM loop", stats.op)
    forms = Forms(stats, loop)
    if not forms.same_trips():
        raise Miss("the statistics loop has a different iteration space than the GEMM loop", stats.op)
    if any(has_side_effects(o) for o in stats.body.ops):
        raise Miss("the statistics loop has side effects", stats.op)
    loads = [o for o in stats.op.walk() if o.name in LOADS and o is not stats.op]
    if len(loads) != 1:
        raise Miss(f"the statistics loop has {len(loads)} loads; exactly one tile load is handled", stats.op)
    load1 = loads[0]
    if load1.block is not stats.body or not forms.equal(load1.results[0], load2.results[0]):
        raise Miss("the statistics loop reads a different tile than the GEMM loop "
                   "(pointer, mask or iteration space differ)", load1)
    # equal forms are equal values only where nothing undetermined is behind them (two tt.reduce
    # of one tensor, two loads of one address around a store, have one form): the loads' pointer,
    # mask and other and the loops' bounds (the tile loads themselves: `check_tile_unwritten`,
    # which `fusion.plan` calls after its check of the ops between the loops)
    func = function_of(stats.op)
    written = memory_written(func) if func is not None else None
    why = undetermined(list(load1.operands) + list(load2.operands) + list(stats.bounds)
                       + list(loop.bounds), written, forms.loops)
    if why:
        raise Miss(f"the statistics loop's tile is not proven to be the GEMM loop's: {why}", load1)
    used = [i for i, r in enumerate(stats.op.results) if users.get(id(r))]
    stat_idx = []
    for i in used:
        y = stats.yields[i]
        sl = backward_slice(y, lambda v: not stats.contains(v) or v is load1.results[0]
                            or v.owner is None)
        if not any(load1.results[0] in o.operands for o in sl):
            raise Miss(f"result #{i} of the statistics loop is used later but is not a statistic "
                       "of the loaded tile", stats.op)
        stat_idx.append(i)
    if not stat_idx:
        raise Miss("no statistic of the statistics loop is used", stats.op)
    # everything the statistics need: cloned ops, or values equal to one of the GEMM loop's
    table = forms.table(loop)
    counterparts: dict = {}
    # what is computed from the tile is recomputed from the statistics' own read of it (a reload)
    from_tile = {id(load1.results[0])}
    for o in stats.op.walk():
        if any(id(v) in from_tile for v in o.operands):
            from_tile.update(id(r) for r in o.results)

    def counterpart(v: Value) -> Value | None:
        if id(v) in from_tile:
            return None
        if id(v) not in counterparts:
            got = table.get((v.type, forms.form(v)))
            if got is None or undetermined([v, got], written, forms.loops):
                return None
            counterparts[id(v)] = got
        return counterparts[id(v)]

    stat_args = {id(stats.iter_args[i]) for i in stat_idx}
    to_clone: list[Op] = []
    for i in stat_idx:
        for o in backward_slice(stats.yields[i], lambda v: not stats.contains(v) or v.owner is None
                                or v is load1.results[0] or counterpart(v) is not None):
            if o not in to_clone:
                to_clone.append(o)
    for o in to_clone:
        if o.name in LOADS or has_side_effects(o):
            raise Miss("the statistics depend on another load or a side effect", o)
        for v in o.operands:
            if not stats.contains(v) or v is load1.results[0] or id(v) in counterparts:
                continue
            if v.owner is None and id(v) in stat_args:
                continue
            if v.owner is not None and v.owner in to_clone:
                continue
            if counterpart(v) is not None:
                continue
            if v.owner is None:
                raise Miss("the statistics depend on a loop-carried value that is not a statistic", o)
            raise Miss("the statistics use a value of the statistics loop that has no "
                       "counterpart in the GEMM loop", o)
    order = {id(o): k for k, o in enumerate(stats.body.ops)}
    to_clone.sort(key=lambda o: order.get(id(o), 0))
    return StatsMatch(stats, load1, stat_idx, to_clone, counterparts)


def check_tile_unwritten(load1: Op, load2: Op) -> None:
    """Miss unless both tile loads (the statistics loop's, the GEMM loop's) read a kernel argument
    that the kernel never writes. Nothing writes between the two loops (`fusion.plan`) and the
    statistics loop has no side effects, but a store in the GEMM loop (to the next tile, say)
    changes what its later trips read, after the statistics loop read the same addresses: the
    fused statistics would be those of other values. (A descriptor load is checked as a pointer
    load is; `undetermined` refuses it as an op with effects.)"""
    func = function_of(load1)
    root = LoadOp(load1).root
    if root is None or LoadOp(load2).root is not root:
        raise Miss("the tile's pointer does not trace to a kernel argument, so the kernel's stores "
                   "are not known to leave it alone (compute it from the argument: X + offsets, "
                   "advanced with += in the loop)", load1)
    x = root.name.lstrip("%")
    why = unknown_writer(func) if func is not None else "no enclosing function"
    if why:
        raise Miss(f"the kernel may write {x}, which both loops read ({why}): the GEMM loop's tiles "
                   "may differ from those the statistics were computed from", load1)
    if id(root) in written_roots(func):
        store = next((o for o in func.walk() if o.name in STORES and StoreOp(o).root is root), load1)
        raise Miss(f"the kernel writes {x}, which the statistics loop and the GEMM loop both read: "
                   "the GEMM loop's tiles may differ from those the statistics were computed from "
                   f"(store to another buffer than {x}, or pass the row statistics precomputed)",
                   store)


def deferred_ops(stats: ForOp, loop: ForOp) -> list[Op]:
    """Ops between the statistics loop and `loop` (same block) that depend on the statistics."""
    parent = loop.op.block
    lo, hi = parent.index_of(stats.op), parent.index_of(loop.op)
    tainted = {id(r) for r in stats.op.results}
    out = []
    for o in parent.ops[lo + 1:hi]:
        if any(id(v) in tainted for v in o.operands) or any(
                id(v) in tainted for x in o.walk() for v in x.operands):
            out.append(o)
            tainted.update(id(r) for r in o.results)
    return out


def row_sum_update(stats: ForOp, i: int, users) -> tuple[Op, Op] | None:
    """(reduce, add) when statistic i is updated as s + sum(t, axis=1), the sum used only there."""
    add = stats.yields[i].owner
    if add is None or add.name != ADDF:
        return None
    s_arg = stats.iter_args[i]
    others = [v for v in add.operands if v is not s_arg]
    if len(others) != 1 or len(add.operands) != 2:
        return None
    red = ReduceOp.match(others[0])
    if red is None or red.axis != 1 or not red.is_sum():
        return None
    if users.get(id(red.result), []) != [add] or users.get(id(add.results[0]), []) != [stats.yield_op]:
        return None
    return red.op, add


def address_slice(loop: ForOp, load: Op) -> list[Op]:
    """The ops of `loop` that compute `load`'s operands (to evaluate them at the first trip);
    Miss when they depend on another load."""
    sl = backward_slice(load.results[0], lambda v: not loop.contains(v) or v.owner is None)
    for o in sl:
        if o.name in LOADS and o is not load:
            raise Miss("the A tile address depends on another load", o)
    return sl
