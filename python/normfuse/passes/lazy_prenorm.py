"""lazy-prenorm: sink a pre-norm's per-row scale out of the GEMM k-loop and fuse its statistics.

Algebra
-------
RMSNorm:   (diag(r) X diag(g)) W = diag(r) (X diag(g) W)          r = rstd(X), per row
LayerNorm: (diag(r) (X - mu 1^T) diag(g) + 1 beta^T) W
             = diag(r) ((X - c 1^T) diag(g) W - (mu - c) colsum(diag(g) W)) + 1 (beta^T W)

where c is any per-row shift. The per-row scale r is loop-invariant, so it leaves the k-loop and
multiplies the accumulator once after it; the statistics that produce r (and mu) are accumulated in
the same k-loop from the A tiles already loaded for the MMA, so the separate statistics loop and its
second read of A disappear. For LayerNorm, c is the mean of the row's first K tile (loaded once
before the loop): it keeps the bf16 operand (X - c) g of the size of the row's spread, not of its
mean, so inputs with |mean| >> std keep the naive kernel's accuracy. colsum(diag(g) W) and
beta^T W are accumulated from the B tiles in the same loop.

Before (what `kernels/prenorm_gemm.py` writes)::

    %s:2 = scf.for ... iter_args(%p = %x0, %ss = %zero) {      // statistics loop
      %x = tt.load %p ...   %q = arith.mulf %x, %x   %r = "tt.reduce"(%q) <{axis = 1}>
      scf.yield %p', %ss + %r }
    %rstd = 1 / sqrt(%s#1 / K + eps)
    %acc:3 = scf.for ... iter_args(%p = %x0, %w = %w0, %acc = %zero) {   // GEMM loop
      %x = tt.load %p ...   %a = arith.mulf %x, broadcast(%rstd)   %d = tt.dot %a, %b, %acc
      scf.yield ... }
    store(%acc#2)

After::

    %acc:4 = scf.for ... iter_args(%p = %x0, %w = %w0, %acc = %zero, %ss = %zero) {
      %x = tt.load %p ...   %d = tt.dot %x, %b, %acc   %ss' = %ss + sum(%x * %x)  ... }
    %rstd = 1 / sqrt(%acc#3 / K + eps)
    store(%acc#2 * broadcast(%rstd))

Once per row block
------------------
A kernel may walk a row block's N tiles itself: the statistics loop comes once, before an
`scf.for` over N tiles whose body holds the GEMM loop. The pass first versions that N loop: its
first trip (n == lb) runs a copy of the statistics loop, the ops deriving the row vectors, and a
copy of the GEMM loop (an `scf.if`); the later trips run the original GEMM loop with the row
vectors carried from the first trip as loop-carried values (zero-initialized: a loop that runs no
trip uses none). The result is the same computation in the same order. The first trip's pair is
then fused as above and the later trips' row scale is sunk as a precomputed one, so the
statistics cost one N tile's worth of work per row block instead of every tile's. Legality: the
GEMM loop sits directly in the N loop, the statistics loop is the only loop the row vectors come
from and precedes the N loop in the same block, and neither it nor the ops after it have users
after the N loop; no op with side effects sits between the statistics loop and the N loop or
ahead of the GEMM loop in the N loop's body, where the statistics' reads now happen (otherwise
nothing moves and the row scale is treated as precomputed). Measured on the H200 (bench/results/2026-11-29/row-blocks/), the row-block kernel
with this rewrite is not faster than the tile-walking persistent kernel: 1.03-1.19x its time in
five of eight cells, equal in two, 0.91x in one. A likely reason: Triton does not flatten the
versioned N loop, so a tile's epilogue no longer overlaps the next tile's first loads.

Legality (each failure leaves the IR unchanged and emits a "missed" remark)
-------------------------------------------------------------------------
1. The loop carries one `tt.dot` accumulator, used only by that dot.
2. The dot's A operand is the loaded tile followed by a chain of elementwise steps, each with one
   broadcast vector: a per-row scale (the factor sunk), optionally a per-row centering first
   (LayerNorm), per-column weights, and a per-column bias last. A factor that is not a broadcast
   vector (depends on the column and row), or a per-row factor defined inside the loop (varies
   with k), is not sunk. An intermediate scaled tile with another user blocks the rewrite.
3. The row vectors are computed outside the loop. If they come from a statistics loop, that loop
   has the same bounds, reads an equivalent tile (same pointers, mask and iteration space,
   proven iteration by iteration), has no side effects, and only its statistics are used later.
   Without a statistics loop (a precomputed rstd), the scale is only sunk.
4. Nothing in the GEMM loop other than the sunk steps uses a value computed from the statistics.
5. An accumulator that does not start at zero is handled exactly: it starts at zero and the
   initial value is added after scaling.

Options
-------
stats-source = auto | tile | reload | reload-volatile
    Where the statistics read the tile from. `tile` reuses the loaded tile; `reload` loads it a
    second time with cacheModifier=cg (an L2 hit; see stage-reloads for how it is pipelined);
    `reload-volatile` loads it a second time as a volatile load, which Triton's pipeliner leaves
    out of its shared-memory stages. `auto` is `reload`: Triton 3.6's software pipeliner races on a
    tile read by both the MMA and register code at num_stages >= 3 — measured on the H200 for the
    tile feeding the wgmma directly (g folded) and for RMSNorm with g in the loop at BLOCK_N=256
    (bench/results/2026-11-29/races_*.json) — so the statistics never share the MMA's tile by default.
    The cause, read from Triton's LowerLoops: the extra shared buffer that an async wgmma needs
    (it still reads buffer i while the copy for i + num_stages - 1 is issued) is only allocated for
    a load whose single user is the MMA's local_alloc; a second (register) user leaves the tile
    with num_stages - 1 buffers, and the copy overwrites the one the wgmma is reading.
stage-reloads = auto | true | false
    Triton 3.6 assigns pipeline latencies only to loads that feed a dot, so the reload of
    `stats-source=reload` is a synchronous register load in every k-step (its L2 latency is not
    hidden). `true` writes `tt.latency = S - 1` (S = num_stages) on the loop's tile loads that
    feed the dot and on the reloads; Triton's AssignLatencies then takes the loop's latencies as
    given, and each reload gets its own cp.async (or TMA) buffers, read by a local_load. The dot's
    loads keep a single user, hence the wgmma's extra buffer. Reloads are staged while the
    loop's buffers (S per tile the MMA reads from shared memory, S - 1 per other tile) fit the
    227 KiB of shared memory a Hopper CTA can have, less 32 KiB for Triton's other scratch; the
    rest stay register loads. `auto` is `true` when every reload fits (RMSNorm at 128x256x64,
    S = 3; not LayerNorm's two reloads) except for a k-loop that is the kernel's outermost loop
    (one program per tile) whose A tile goes straight into the MMA (g folded): there it was
    measured 0.93-1.13x, no gain. On the H200 (bench/results/2026-11-29/stage-reloads/):
    RMSNorm g folded, persistent 0.83-0.98x the unstaged time; g in the loop 0.70-0.85x.
num-stages = S
    The pipeline depth for stage-reloads; 0 (default) takes the loop's `tt.num_stages` or the
    compilation's num_stages (known under normfuse.compile/jit; normfuse-opt needs it given).
stats-accumulate = auto | row | tile
    `row` keeps the statistics' per-iteration row reduction (a cross-thread reduction every
    k-step); `tile` accumulates the elementwise terms in a [BLOCK_M, BLOCK_K] fp32 tile and reduces
    it once after the loop (a reassociation of the sum: rounding order changes, not accuracy).
    `auto` uses `tile` for a single statistic (RMSNorm: 0.394 vs 0.408 ms at M=262144, K=N=512;
    0.626 vs 0.690 ms at M=8192, K=N=4096 on the H200) and `row` for two (LayerNorm), whose two
    fp32 tiles spill registers at 128x256 tiles.
shift = auto | true | false
    LayerNorm only: center the A operand on the first tile's row mean (see above). `auto` shifts
    when a per-column weight or bias is applied to the tile before the MMA: the operand is then
    rounded to bf16 after scaling, an error proportional to |mean|. When the tile reaches the MMA
    unmodified (g folded into W), the bf16 products are exact in the fp32 accumulator and the
    correction mu * colsum(W) is taken in fp32, so no shift is needed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir import IRError, Module, Op, Value, parse_type
from ..ir.match import (Equivalence, ForLoop, LocResolver, backward_slice, enclosing_loop,
                        has_side_effects, is_zero_constant, row_vector, shape_of)
from . import Pass, Remark

_LOADS = ("tt.load", "tt.descriptor_load")


class _Miss(Exception):
    """Raised during analysis: the loop does not match; the message becomes the remark."""

    def __init__(self, msg: str, op: Op | None = None):
        super().__init__(msg)
        self.op = op


@dataclass
class _Step:
    kind: str  # scale | center | weight | bias
    op: Op  # the arith op applying it
    chain: Value  # the tile value it is applied to
    vector: Value  # the un-broadcast vector
    other: Value  # the broadcast operand


@dataclass
class _Plan:
    loop: ForLoop
    dot: Op
    acc_index: int
    load: Op  # the A tile load in the GEMM loop
    steps: list  # application order (tile outwards)
    stats: ForLoop | None
    stat_indices: list  # indices (into stats.iter_args) of the statistics
    stat_slice: list  # ops of the statistics loop to clone
    equiv: Equivalence | None
    stats_load: Op | None
    deferred: list  # ops between the loops that depend on the statistics


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------

def _single_dot(loop: ForLoop) -> Op | None:
    dots = [o for o in loop.body.ops if o.name == "tt.dot"]
    if not dots:
        return None
    if len(dots) > 1:
        raise _Miss("the loop has several tt.dot ops; only one accumulator is handled", dots[1])
    return dots[0]


def _tile_load(v: Value, loop: ForLoop) -> Op | None:
    op = v.owner
    if op is not None and op.name == "arith.extf":
        op = op.operands[0].owner
    if op is not None and op.name in _LOADS and loop.contains(op.results[0]):
        return op
    return None


def _analyze_chain(module: Module, loop: ForLoop, dot: Op, users) -> tuple[Op, list[_Step]]:
    v = dot.operands[0]
    if v.owner is not None and v.owner.name in ("arith.truncf", "arith.extf"):
        v = v.owner.operands[0]
    steps: list[_Step] = []
    while True:
        load = _tile_load(v, loop)
        if load is not None:
            break
        op = v.owner
        if op is None or not loop.contains(v):
            raise _Miss("the dot's A operand is not computed from a tile loaded in this loop", dot)
        if op.name not in ("arith.mulf", "arith.addf", "arith.subf"):
            raise _Miss(f"the A operand goes through '{op.name}', which the pass does not look through", op)
        if len(users.get(id(v), [])) > 1:
            raise _Miss("a scaled A tile has another user besides the dot", op)
        x, y = op.operands
        candidates = [(x, y)] if op.name == "arith.subf" else [(x, y), (y, x)]
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
                    raise _Miss("the per-row factor is computed inside the k-loop (varies with k); not sunk", op)
                kind = {"arith.mulf": "scale", "arith.subf": "center"}.get(op.name)
                if kind is None:
                    raise _Miss("a per-row bias on the A tile is not a pre-norm; not sunk", op)
            elif cols:
                kind = {"arith.mulf": "weight", "arith.addf": "bias"}.get(op.name)
                if kind is None:
                    raise _Miss("a per-column subtraction on the A tile is not a pre-norm", op)
            else:
                continue
            step = _Step(kind, op, chain, vec, other)
            break
        if step is None:
            raise _Miss(f"'{op.name}' on the A tile does not use a row or column broadcast vector "
                        "(a factor that depends on both row and column is not sunk)", op)
        steps.append(step)
        v = step.chain
    steps.reverse()
    kinds = [s.kind for s in steps]
    if "scale" not in kinds:
        raise _Miss("no per-row scale on the A operand of the dot", dot)
    if "center" in kinds and kinds.index("center") != 0:
        raise _Miss("the per-row centering is not applied to the loaded tile first", dot)
    if kinds.count("center") > 1 or kinds.count("bias") > 1:
        raise _Miss("several centerings or biases on the A tile", dot)
    if "bias" in kinds and kinds[-1] != "bias":
        raise _Miss("the per-column bias is not the last step before the dot", dot)
    return load, steps


def _find_stats_loop(loop: ForLoop, steps: list[_Step]) -> ForLoop | None:
    parent = loop.op.block
    found: list[Op] = []
    for s in steps:
        if s.kind not in ("scale", "center"):
            continue
        for op in backward_slice(s.vector, lambda v: v.owner is None or v.owner.block is not parent):
            if op.name == "scf.for" and op not in found:
                found.append(op)
    if len(found) > 1:
        raise _Miss("the row statistics come from several loops", found[1])
    return ForLoop(found[0]) if found else None


def _check_stats_loop(module: Module, loop: ForLoop, stats: ForLoop, load2: Op, users):
    parent = loop.op.block
    if stats.op.block is not parent or parent.index_of(stats.op) > parent.index_of(loop.op):
        raise _Miss("the statistics loop is not a preceding sibling of the GEMM loop", stats.op)
    eq = Equivalence(stats, loop)
    if not all(eq(a, b) for a, b in zip(stats.bounds, loop.bounds)):
        raise _Miss("the statistics loop has a different iteration space than the GEMM loop", stats.op)
    if any(has_side_effects(o) for o in stats.body.ops):
        raise _Miss("the statistics loop has side effects", stats.op)
    loads = [o for o in stats.op.walk() if o.name in _LOADS and o is not stats.op]
    if len(loads) != 1:
        raise _Miss(f"the statistics loop has {len(loads)} loads; exactly one tile load is handled", stats.op)
    load1 = loads[0]
    if load1.block is not stats.body or not eq(load1.results[0], load2.results[0]):
        raise _Miss("the statistics loop reads a different tile than the GEMM loop "
                    "(pointer, mask or iteration space differ)", load1)
    used = [i for i, r in enumerate(stats.op.results) if users.get(id(r))]
    stat_idx = []
    for i in used:
        y = stats.yields[i]
        sl = backward_slice(y, lambda v: not stats.contains(v) or v is load1.results[0]
                            or v.owner is None)
        if not any(load1.results[0] in o.operands for o in sl):
            raise _Miss(f"result #{i} of the statistics loop is used later but is not a statistic "
                        "of the loaded tile", stats.op)
        stat_idx.append(i)
    if not stat_idx:
        raise _Miss("no statistic of the statistics loop is used", stats.op)
    # everything the statistics need: cloned ops, or values with a counterpart in the GEMM loop
    stat_args = {id(stats.iter_args[i]) for i in stat_idx}
    to_clone: list[Op] = []
    for i in stat_idx:
        for o in backward_slice(stats.yields[i], lambda v: not stats.contains(v) or v.owner is None
                                or v is load1.results[0] or id(v) in eq.pairs):
            if o not in to_clone:
                to_clone.append(o)
    for o in to_clone:
        if o.name in _LOADS or has_side_effects(o):
            raise _Miss("the statistics depend on another load or a side effect", o)
        for v in o.operands:
            if not stats.contains(v) or v is load1.results[0] or id(v) in eq.pairs:
                continue
            if v.owner is None and id(v) in stat_args:
                continue
            if v.owner is not None and v.owner in to_clone:
                continue
            if v.owner is None and v is not stats.iv:  # the iv maps to the GEMM loop's iv
                raise _Miss("the statistics depend on a loop-carried value that is not a statistic", o)
            if v.owner is not None:
                raise _Miss("the statistics use a value of the statistics loop that has no "
                            "counterpart in the GEMM loop", o)
    order = {id(o): k for k, o in enumerate(stats.body.ops)}
    to_clone.sort(key=lambda o: order.get(id(o), 0))
    return eq, load1, stat_idx, to_clone


def _deferred_ops(stats: ForLoop, loop: ForLoop) -> list[Op]:
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


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------

@dataclass
class LazyPreNorm(Pass):
    """Lazy Pre-Norm prologue fusion for RMSNorm and LayerNorm (see module docstring)."""

    name = "lazy-prenorm"
    summary = "sink a pre-norm's per-row scale out of the GEMM k-loop and fuse its statistics loop"
    stats_source: str = "auto"
    shift: str = "auto"
    stats_accumulate: str = "auto"
    stage_reloads: str = "auto"
    num_stages: int = 0

    def __post_init__(self):
        from . import PassError
        if self.stats_source not in ("auto", "tile", "reload", "reload-volatile"):
            raise PassError("option lazy-prenorm{stats-source} must be auto, tile, reload or "
                            f"reload-volatile, got '{self.stats_source}'")
        if self.stats_accumulate not in ("auto", "row", "tile"):
            raise PassError("option lazy-prenorm{stats-accumulate} must be auto, row or tile, "
                            f"got '{self.stats_accumulate}'")
        self.shift = str(self.shift).lower()
        if self.shift not in ("auto", "true", "false"):
            raise PassError(f"option lazy-prenorm{{shift}} must be auto, true or false, got '{self.shift}'")
        self.stage_reloads = str(self.stage_reloads).lower()
        if self.stage_reloads not in ("auto", "true", "false"):
            raise PassError("option lazy-prenorm{stage-reloads} must be auto, true or false, "
                            f"got '{self.stage_reloads}'")
        if int(self.num_stages) < 0:
            raise PassError(f"option lazy-prenorm{{num-stages}} must be >= 0, got {self.num_stages}")

    def run(self, module: Module) -> list[Remark]:
        self.remarks = []
        self._locs = LocResolver(module)
        if self.refuses_ttgir(module):
            return self.remarks
        seen_gemm = False
        for func in module.functions():
            # the row-block form first: statistics before a loop over N tiles move into its first trip
            for op in [o for o in func.walk() if o.name == "scf.for"]:
                if op.block is not None:
                    self._once_per_row_block(module, ForLoop(op))
            for op in [o for o in func.walk() if o.name == "scf.for"]:
                if op.block is None:  # erased by an earlier rewrite
                    continue
                loop = ForLoop(op)
                try:
                    dot = _single_dot(loop)
                    if dot is None:
                        continue
                    seen_gemm = True
                    plan = self._analyze(module, loop, dot)
                except _Miss as m:
                    seen_gemm = True
                    self.remark("missed", str(m), self._locs(m.op or op))
                    continue
                self._rewrite(module, plan)
        if not seen_gemm:
            self.remark("missed", "no GEMM k-loop (an scf.for carrying a tt.dot accumulator) found")
        return self.remarks

    # -- analyse -------------------------------------------------------------------------------
    def _analyze(self, module: Module, loop: ForLoop, dot: Op) -> _Plan:
        users = module.user_index()
        acc = dot.operands[2] if len(dot.operands) > 2 else None
        if acc is None or acc not in loop.iter_args:
            raise _Miss("the dot's accumulator is not carried by the loop", dot)
        idx = loop.iter_args.index(acc)
        if loop.yields[idx] is not dot.results[0] or users.get(id(acc), []) != [dot] or \
                users.get(id(dot.results[0]), []) != [loop.yield_op]:
            raise _Miss("the accumulator has other users than the dot and the yield", dot)
        load, steps = _analyze_chain(module, loop, dot, users)
        stats = _find_stats_loop(loop, steps)
        eq = stats_load = None
        stat_idx, stat_slice, deferred = [], [], []
        if stats is not None:
            eq, stats_load, stat_idx, stat_slice = _check_stats_loop(module, loop, stats, load, users)
            deferred = _deferred_ops(stats, loop)
            allowed = set()
            for s in steps:
                if s.kind in ("scale", "center"):
                    allowed.add(id(s.op))
                    o = s.other.owner
                    while o is not None and loop.contains(o.results[0]) and o.name in (
                            "tt.broadcast", "tt.expand_dims"):
                        allowed.add(id(o))
                        o = o.operands[0].owner
            dvals = {id(r) for o in deferred for r in o.results}
            for o in loop.op.walk():
                if o is loop.op or id(o) in allowed:
                    continue
                if any(id(v) in dvals for v in o.operands):
                    raise _Miss("the GEMM loop uses a value computed from the statistics besides the "
                                "row scale", o)
        return _Plan(loop, dot, idx, load, steps, stats, stat_idx, stat_slice, eq, stats_load, deferred)

    # -- rewrite -------------------------------------------------------------------------------
    def _rewrite(self, module: Module, p: _Plan) -> None:
        loop, dot = p.loop, p.dot
        loc = dot.loc
        kinds = [s.kind for s in p.steps]
        layer = "center" in kinds
        acc_t = parse_type(dot.results[0].type)
        bm, bn = acc_t.shape
        f32 = lambda *shape: str(acc_t.with_shape(shape).with_element("f32"))  # noqa: E731

        do_shift = layer and (self.shift == "true" or (
            self.shift == "auto" and any(k in ("weight", "bias") for k in kinds)))
        # 1. statistics: accumulate them in the GEMM loop from its own tile
        stats_src = p.load
        post_tile = False
        reloads: list[Op] = []  # second loads of tiles, for stage-reloads
        if p.stats is not None:
            if self.stats_source != "tile":
                stats_src = _reload(module, p.load, volatile=self.stats_source == "reload-volatile")
                reloads.append(stats_src)
            users = module.user_index()
            row_sums = {}
            # auto: a tile accumulator for a single statistic (RMSNorm); LayerNorm's two [BM, BK]
            # fp32 tiles spill at 128x256 (ptxas: 255 registers, 100 B spilled), so rows there.
            if self.stats_accumulate == "tile" or (self.stats_accumulate == "auto"
                                                   and len(p.stat_indices) == 1):
                for i in p.stat_indices:
                    m = _row_sum_update(p.stats, i, users)
                    if m is not None:
                        row_sums[i] = m
            inits, types = [], []
            for i in p.stat_indices:
                if i in row_sums:
                    t = row_sums[i][0].operands[0].type
                    inits.append(module.insert(module.build(
                        f"arith.constant dense<0.000000e+00> : {t} {loc}", types=[t], hint="stat0"),
                        before=loop.op).result)
                    types.append(t)
                else:
                    inits.append(p.stats.inits[i])
                    types.append(p.stats.op.results[i].type)
            new_args, new_results = loop.add_iter_args(module, inits, types, "stat")
            mapping = dict(p.equiv.pairs)
            mapping[id(p.stats_load.results[0])] = stats_src.results[0]
            mapping[id(p.stats.iv)] = loop.iv
            for i, a in zip(p.stat_indices, new_args):
                mapping[id(p.stats.iter_args[i])] = a
            skip = {id(o) for red, add in row_sums.values() for o in (red, add)}
            y = loop.yield_op
            for o in p.stat_slice:
                if id(o) not in skip:
                    module.insert(module.clone(o, mapping), before=y)
            nxt = []
            for i, a in zip(p.stat_indices, new_args):
                if i in row_sums:  # T += t, elementwise: no cross-thread reduction per k-step
                    t = mapping[id(row_sums[i][0].operands[0])]
                    nxt.append(module.insert(module.build(f"arith.addf $0, $1 : {a.type} {loc}", a, t,
                                                          types=[a.type], hint="stat"), before=y).result)
                else:
                    nxt.append(mapping[id(p.stats.yields[i])])
            loop.set_yields(loop.yields + nxt)
            anchor = loop.op
            post_tile = bool(row_sums)
            for i, r in zip(p.stat_indices, new_results):
                if i in row_sums:
                    tt_ = parse_type(r.type)
                    row_t = str(tt_.with_shape(tt_.shape[:1]))
                    red = module.insert(module.build(_reduce_sum(r.type, row_t, 1, loc), r, types=[row_t],
                                                     hint="stat"), after=anchor)
                    fin = module.insert(module.build(f"arith.addf $0, $1 : {row_t} {loc}", p.stats.inits[i],
                                                     red.result, types=[row_t], hint="stat"), after=red)
                    anchor = fin
                    module.replace_all_uses(p.stats.op.results[i], fin.result)
                else:
                    module.replace_all_uses(p.stats.op.results[i], r)
            for o in p.deferred:
                module.insert(o, after=anchor)
                anchor = o
        else:
            anchor = loop.op

        # 2. LayerNorm: the shift, the centered operand, and the column sums of B
        shift = None
        colsum = bsum = None
        if layer:
            center = p.steps[0]
            if do_shift:
                shift = self._first_tile_row_mean(module, loop, p.load, loc)
                sb = _broadcast_rows(module, shift, bm, p.load, loop, before=center.op, loc=loc)
                center.op.head[center.op.head.index(center.other)] = sb
                mask = p.load.operands[1] if p.load.name == "tt.load" and len(p.load.operands) > 1 else None
                if mask is not None:
                    zero = module.insert(module.build(
                        f"arith.constant dense<0.000000e+00> : {center.op.result.type} {loc}",
                        types=[center.op.result.type], hint="zero"), before=loop.op).result
                    sel = module.build(f"arith.select $0, $1, $2 : {mask.type}, {center.op.result.type} {loc}",
                                       mask, center.op.result, zero, types=[center.op.result.type], hint="xs")
                    module.insert(sel, after=center.op)
                    module.replace_all_uses(center.op.result, sel.result, where=lambda o: o is not sel)
            colsum, bsum = self._column_sums(module, p, bn, loc, reloads)

        # 3. drop the per-row factors from the loop
        for s in p.steps:
            if s.kind in ("scale", "bias") or (s.kind == "center" and not do_shift):
                # the chain operand as it is now (an earlier step may have been rewired)
                chain = next(v for v in s.op.operands if v is not s.other)
                module.replace_all_uses(s.op.result, chain)
        _dce(module, loop.op)
        if p.stats is not None:
            module.erase(p.stats.op)

        # 4. after the loop: scale (and correct) the accumulator
        acc_out = loop.op.results[p.acc_index]
        acc_init = loop.inits[p.acc_index]
        new_ops: list[Op] = []

        def emit(template, *args, t=None, hint="lazy"):
            nonlocal anchor
            op = module.build(f"{template} {loc}", *args, types=[t] if t else [], hint=hint)
            module.insert(op, after=anchor)
            anchor = op
            new_ops.append(op)
            return op.result

        scale = None
        for s in p.steps:
            if s.kind == "scale":
                scale = s.vector if scale is None else emit(
                    f"arith.mulf $0, $1 : {s.vector.type}", scale, s.vector, t=s.vector.type)
        if scale.type != f32(bm):
            raise IRError(f"row scale has type {scale.type}, expected {f32(bm)}")
        r2 = emit(f"tt.expand_dims $0 {{axis = 1 : i32}} : {f32(bm)} -> {f32(bm, 1)}", scale, t=f32(bm, 1))
        rb = emit(f"tt.broadcast $0 : {f32(bm, 1)} -> {f32(bm, bn)}", r2, t=f32(bm, bn))
        val = acc_out
        if layer:
            mean = p.steps[0].vector
            delta = mean if shift is None else emit(f"arith.subf $0, $1 : {f32(bm)}", mean, shift, t=f32(bm))
            d2 = emit(f"tt.expand_dims $0 {{axis = 1 : i32}} : {f32(bm)} -> {f32(bm, 1)}", delta, t=f32(bm, 1))
            db = emit(f"tt.broadcast $0 : {f32(bm, 1)} -> {f32(bm, bn)}", d2, t=f32(bm, bn))
            c2 = emit(f"tt.expand_dims $0 {{axis = 0 : i32}} : {f32(bn)} -> {f32(1, bn)}", colsum, t=f32(1, bn))
            cb = emit(f"tt.broadcast $0 : {f32(1, bn)} -> {f32(bm, bn)}", c2, t=f32(bm, bn))
            corr = emit(f"arith.mulf $0, $1 : {f32(bm, bn)}", db, cb, t=f32(bm, bn))
            val = emit(f"arith.subf $0, $1 : {f32(bm, bn)}", val, corr, t=f32(bm, bn))
        val = emit(f"arith.mulf $0, $1 : {f32(bm, bn)}", val, rb, t=f32(bm, bn))
        if bsum is not None:
            b2 = emit(f"tt.expand_dims $0 {{axis = 0 : i32}} : {f32(bn)} -> {f32(1, bn)}", bsum, t=f32(1, bn))
            bb = emit(f"tt.broadcast $0 : {f32(1, bn)} -> {f32(bm, bn)}", b2, t=f32(bm, bn))
            val = emit(f"arith.addf $0, $1 : {f32(bm, bn)}", val, bb, t=f32(bm, bn))
        if not is_zero_constant(acc_init):
            zero = module.insert(module.build(f"arith.constant dense<0.000000e+00> : {acc_out.type} {loc}",
                                              types=[acc_out.type], hint="acc0"), before=loop.op).result
            _set_init(loop, p.acc_index, zero)
            val = emit(f"arith.addf $0, $1 : {acc_out.type}", val, acc_init, t=acc_out.type)
        mine = set(id(o) for o in new_ops)
        module.replace_all_uses(acc_out, val, where=lambda o: id(o) not in mine)

        staged = self._stage_reloads(module, loop, dot, reloads)
        what = "LayerNorm" if layer else "RMSNorm"
        extra = []
        if p.stats is not None:
            extra.append("statistics loop fused" + (" (statistics from a cg reload of the tile)"
                                                    if stats_src is not p.load else ""))
            if post_tile:
                extra.append("statistics summed elementwise in the loop, reduced once after it")
        else:
            extra.append("row scale is precomputed: sunk only")
        if layer:
            extra.append("shifted by the first tile's row mean" if do_shift else
                         "no shift (the tile reaches the MMA unscaled)")
        if staged:
            extra.append(staged)
        self.remark("applied", f"{what} row scale sunk out of the k-loop: {'; '.join(extra)}",
                    self._locs(dot))

    def _once_per_row_block(self, module: Module, loop: ForLoop) -> bool:
        """The row-block form (module docstring, "Once per row block"): version the enclosing
        N-tile loop so that its first trip computes the statistics next to a copy of the GEMM loop
        and later trips reuse them. Returns whether it applied; misses are silent here (the main
        analysis then treats the row vectors as precomputed and says so)."""
        try:
            dot = _single_dot(loop)
        except _Miss:
            return False
        outer = loop.op.parent_op
        if dot is None or outer is None or outer.name != "scf.for":
            return False
        nloop = ForLoop(outer)
        users = module.user_index()
        try:
            _, steps = _analyze_chain(module, loop, dot, users)
        except _Miss:
            return False
        vectors = [s.vector for s in steps if s.kind in ("scale", "center")]
        if not vectors or any(nloop.contains(v) for v in vectors):
            return False
        block = nloop.op.block
        found: list[Op] = []
        for v in vectors:
            for o in backward_slice(v, lambda x: x.owner is None or x.owner.block is not block):
                if o.name == "scf.for" and o not in found:
                    found.append(o)
        if len(found) != 1 or block.index_of(found[0]) > block.index_of(nloop.op):
            return False
        stats = ForLoop(found[0])
        if any(has_side_effects(o) for o in stats.body.ops):
            return False
        deferred = _deferred_ops(stats, nloop)
        mine = {id(o) for o in deferred} | {id(stats.op)}
        carried = []
        for o in [stats.op] + deferred:
            for r in o.results:
                outside = [u for u in users.get(id(r), []) if id(u) not in mine and not nloop.op.is_ancestor_of(u)]
                if outside:
                    return False  # the statistics are used after the N loop as well
                if any(nloop.op.is_ancestor_of(u) for u in users.get(id(r), [])):
                    carried.append(r)
        # the statistics' reads move from before the N loop to its first trip, just before the GEMM
        # loop: no write may come between those two points (it could alias X)
        between = block.ops[block.index_of(stats.op) + 1:block.index_of(nloop.op)]
        ahead = nloop.body.ops[:nloop.body.index_of(loop.op)]
        if any(has_side_effects(o) for o in between + ahead):
            return False
        loc = loop.op.loc
        # first trip: n == lb
        iv_t = nloop.iv.type
        first = module.insert(module.build(f"arith.cmpi eq, $0, $1 : {iv_t} {loc}", nloop.iv,
                                           nloop.bounds[0], types=["i1"], hint="first"), before=loop.op)
        mapping: dict[int, Value] = {}
        then_ops = [module.clone(o, mapping) for o in [stats.op] + deferred]
        then_ops.append(module.clone(loop.op, mapping))
        fused_loop = then_ops[-1]
        # later trips: the statistics carried from the first trip
        zeros = [module.insert(module.build(f"arith.constant dense<0.000000e+00> : {r.type} {loc}",
                                            types=[r.type], hint="rowstat0"), before=nloop.op).result
                 for r in carried]
        args, results = nloop.add_iter_args(module, zeros, [r.type for r in carried], "rowstat")
        for r, a in zip(carried, args):
            module.replace_all_uses(r, a, where=lambda o: nloop.op.is_ancestor_of(o))
        types = [r.type for r in carried] + [r.type for r in loop.op.results]
        n = len(types)
        then_vals = [mapping[id(r)] for r in carried] + list(fused_loop.results)
        else_vals = list(args) + list(loop.op.results)
        yt = ", ".join(types)
        ph = lambda lo: ", ".join(f"${lo + k}" for k in range(n))  # noqa: E731
        ifop = module.build(f"scf.if $0 -> ({yt}) {{\n  scf.yield {ph(1)} : {yt} {loc}\n}} else {{\n"
                            f"  scf.yield {ph(1 + n)} : {yt} {loc}\n}} {loc}",
                            first.result, *then_vals, *else_vals, types=types, hint="rowblock")
        module.insert(ifop, before=loop.op)
        then_yield = ifop.regions[0].blocks[0].ops[-1]
        else_yield = ifop.regions[1].blocks[0].ops[-1]
        for o in then_ops:
            module.insert(o, before=then_yield)
        for r, nr in zip(loop.op.results, ifop.results[len(carried):]):
            module.replace_all_uses(r, nr, where=lambda o: o is not else_yield)
        module.insert(loop.op, before=else_yield)
        new_yields = list(ifop.results[:len(carried)])
        if nloop.yield_op is None:
            module.insert(module.build(f"scf.yield {', '.join(f'${k}' for k in range(len(new_yields)))} : "
                                       f"{', '.join(v.type for v in new_yields)} {loc}", *new_yields),
                          at_end=nloop.body)
        else:
            nloop.set_yields(nloop.yields + new_yields)
        for o in reversed(deferred):
            module.erase(o)
        module.erase(stats.op)
        self.remark("applied", "statistics loop moved into the first trip of the enclosing N-tile loop "
                    "(computed once per row block, carried to the later tiles)", self._locs(stats.op))
        return True

    def _stage_reloads(self, module: Module, loop: ForLoop, dot: Op, reloads: list[Op]) -> str | None:
        """stage-reloads: tag the loop's dot-operand loads and (within the shared-memory budget)
        the reloads with tt.latency; returns what was done (or why not), for the remark."""
        reloads = [r for r in reloads if r.block is not None]
        if self.stage_reloads == "false" or not reloads or self.stats_source == "reload-volatile":
            return None
        users = module.user_index()

        def into_mma(o: Op) -> bool:
            """Whether the MMA reads this tile straight from shared memory (views and the
            ext/trunc pair that canonicalization folds are looked through)."""
            u = users.get(id(o.results[0]), [])
            while len(u) == 1 and u[0].name in ("tt.trans", "arith.extf", "arith.truncf"):
                u = users.get(id(u[0].results[0]), [])
            return len(u) == 1 and u[0] is dot

        inside = lambda v: loop.contains(v)  # noqa: E731
        a_loads = [o for o in backward_slice(dot.operands[0], lambda v: not inside(v)) if o.name in _LOADS]
        if self.stage_reloads == "auto" and enclosing_loop(loop.op) is None and any(map(into_mma, a_loads)):
            return None  # one program per tile, tile straight into the MMA: measured no gain
        top = list(loop.body.ops)
        if any(o.attr("tt.latency") is not None for o in top):
            return "reloads not staged: the loop already carries tt.latency"
        stages = _int_attr(loop.op.attr("tt.num_stages")) or int(self.num_stages) or int(
            (getattr(module, "compile_options", None) or {}).get("num_stages") or 0)
        if not stages:
            return ("reloads not staged: num_stages unknown (give lazy-prenorm{num-stages=S} "
                    "outside normfuse.compile)")
        if stages < 2:
            return None
        lat = stages - 1
        in_body = {id(o) for o in top}
        feeding = []  # the loads the default AssignLatencies would pipeline: the dot's operands
        for operand in dot.operands[:2]:
            for o in backward_slice(operand, lambda v: not inside(v)):
                if o.name in _LOADS and id(o) in in_body and o not in feeding and o not in reloads:
                    feeding.append(o)
        # S buffers for a tile the wgmma reads from shared memory (its extra buffer), else S - 1
        need = lambda o: (lat + 1 if into_mma(o) else lat) * _tile_bytes(o)  # noqa: E731
        budget = _SMEM_BUDGET - _SMEM_RESERVE
        total = sum(map(need, feeding))
        staged = []
        for r in reloads:
            n = need(r)
            if total + n <= budget:
                staged.append(r)
                total += n
        if not staged or (self.stage_reloads == "auto" and len(staged) < len(reloads)):
            # auto: all or nothing (LayerNorm's B reload left a register load beside staged
            # buffers: its column sums' own scratch took the CTA past the limit)
            return (f"reloads not staged: with their buffers the loop would need more than "
                    f"{budget // 1024} KiB of shared memory")
        for o in feeding + staged:
            _set_attr(o, "tt.latency", f"{lat} : i32")
        return (f"{len(staged)} of {len(reloads)} reload(s) staged in shared memory (tt.latency = "
                f"{lat}; ~{-(-total // 1024)} KiB of loop buffers)")

    def _first_tile_row_mean(self, module: Module, loop: ForLoop, load: Op, loc: str) -> Value:
        """Load the first K tile before the loop (its address slice with iv = lb) and return its
        per-row mean, the LayerNorm shift."""
        mapping = {id(loop.iv): loop.bounds[0]}
        for a, i in zip(loop.iter_args, loop.inits):
            mapping[id(a)] = i
        sl = backward_slice(load.results[0], lambda v: not loop.contains(v) or v.owner is None)
        for o in sl:
            if o.name in _LOADS and o is not load:
                raise _Miss("the A tile address depends on another load", o)
            module.insert(module.clone(o, mapping), before=loop.op)
        first = mapping[id(load.results[0])]
        tt = parse_type(first.type)
        bm, bk = tt.shape
        f32 = lambda *s: str(tt.with_shape(s).with_element("f32"))  # noqa: E731
        x = first
        if tt.element != "f32":
            x = module.insert(module.build(f"arith.extf $0 : {first.type} to {f32(bm, bk)} {loc}", first,
                                           types=[f32(bm, bk)], hint="shift"), before=loop.op).result
        red = module.insert(module.build(_reduce_sum(f32(bm, bk), f32(bm), 1, loc), x, types=[f32(bm)],
                                         hint="shift"), before=loop.op).result
        inv = module.insert(module.build(f"arith.constant dense<{1.0 / bk!r}> : {f32(bm)} {loc}",
                                         types=[f32(bm)], hint="shift"), before=loop.op).result
        return module.insert(module.build(f"arith.mulf $0, $1 : {f32(bm)} {loc}", red, inv,
                                          types=[f32(bm)], hint="shift"), before=loop.op).result

    def _column_sums(self, module: Module, p: _Plan, bn: int, loc: str, reloads: list[Op]):
        """Accumulate colsum(diag(g) B) and (beta^T B) for this N tile in the loop (a reload of
        B, when made, is appended to `reloads`)."""
        loop, dot = p.loop, p.dot
        b = dot.operands[1]
        views, v = [], b  # tt.trans between the load and the dot (a K-major W read by TMA)
        while v.owner is not None and v.owner.name == "tt.trans":
            views.append(v.owner)
            v = v.owner.operands[0]
        bload = v.owner if v.owner is not None and v.owner.name in _LOADS else None
        src = b
        if bload is not None and self.stats_source != "tile":
            again = _reload(module, bload, volatile=self.stats_source == "reload-volatile")
            reloads.append(again)
            mapping = {id(bload.results[0]): again.results[0]}
            for view in reversed(views):
                module.insert(module.clone(view, mapping), before=loop.yield_op)
            src = mapping[id(b)]
        bt = parse_type(b.type)
        bk = bt.shape[0]
        f32 = lambda *s: str(bt.with_shape(s).with_element("f32"))  # noqa: E731
        y = loop.yield_op
        ins = lambda op: module.insert(op, before=y).result  # noqa: E731
        bf = src if bt.element == "f32" else ins(module.build(
            f"arith.extf $0 : {b.type} to {f32(bk, bn)} {loc}", src, types=[f32(bk, bn)], hint="bcol"))

        def col(vec: Value) -> Value:  # [BK] -> [BK, BN] broadcast along N
            v = vec
            if parse_type(v.type).element != "f32":
                v = ins(module.build(f"arith.extf $0 : {v.type} to {f32(bk)} {loc}", v, types=[f32(bk)]))
            e = ins(module.build(f"tt.expand_dims $0 {{axis = 1 : i32}} : {f32(bk)} -> {f32(bk, 1)} {loc}",
                                 v, types=[f32(bk, 1)]))
            return ins(module.build(f"tt.broadcast $0 : {f32(bk, 1)} -> {f32(bk, bn)} {loc}", e,
                                    types=[f32(bk, bn)]))

        weighted = bf
        for s in p.steps:
            if s.kind == "weight":
                weighted = ins(module.build(f"arith.mulf $0, $1 : {f32(bk, bn)} {loc}", weighted,
                                            col(s.vector), types=[f32(bk, bn)]))
        terms = [weighted]
        bias = [s for s in p.steps if s.kind == "bias"]
        if bias:
            terms.append(ins(module.build(f"arith.mulf $0, $1 : {f32(bk, bn)} {loc}", bf, col(bias[0].vector),
                                          types=[f32(bk, bn)])))
        zero = module.insert(module.build(f"arith.constant dense<0.000000e+00> : {f32(bn)} {loc}",
                                          types=[f32(bn)], hint="colsum0"), before=loop.op).result
        args, results = loop.add_iter_args(module, [zero] * len(terms), [f32(bn)] * len(terms), "colsum")
        nxt = []
        for t, a in zip(terms, args):
            r = ins(module.build(_reduce_sum(f32(bk, bn), f32(bn), 0, loc), t, types=[f32(bn)], hint="colsum"))
            nxt.append(ins(module.build(f"arith.addf $0, $1 : {f32(bn)} {loc}", a, r, types=[f32(bn)],
                                        hint="colsum")))
        loop.set_yields(loop.yields + nxt)
        return results[0], (results[1] if bias else None)


def _row_sum_update(stats: ForLoop, i: int, users) -> tuple[Op, Op] | None:
    """(reduce, add) when statistic i is updated as s + sum(t, axis=1), the sum used only there."""
    add = stats.yields[i].owner
    if add is None or add.name != "arith.addf":
        return None
    s_arg = stats.iter_args[i]
    others = [v for v in add.operands if v is not s_arg]
    if len(others) != 1 or len(add.operands) != 2:
        return None
    red = others[0].owner
    if red is None or red.name != "tt.reduce" or red.attr("axis") is None or \
            int(red.attr("axis").split(":")[0]) != 1 or len(red.operands) != 1:
        return None
    body = red.regions[0].blocks[0].ops
    if [o.name for o in body] != ["arith.addf", "tt.reduce.return"]:
        return None
    if users.get(id(red.results[0]), []) != [add] or users.get(id(add.results[0]), []) != [stats.yield_op]:
        return None
    return red, add


# ---------------------------------------------------------------------------------------------
# Small builders
# ---------------------------------------------------------------------------------------------

def _reduce_sum(in_t: str, out_t: str, axis: int, loc: str) -> str:
    return (f'"tt.reduce"($0) <{{axis = {axis} : i32}}> ({{\n'
            f"^bb0(%lhs: f32 {loc}, %rhs: f32 {loc}):\n"
            f"  %sum = arith.addf %lhs, %rhs : f32 {loc}\n"
            f"  tt.reduce.return %sum : f32 {loc}\n"
            f"}}) : ({in_t}) -> {out_t} {loc}")


# Hopper: 227 KiB of shared memory per CTA (the opt-in maximum of the H100 and H200), less what
# Triton allocates beside the loop's buffers (layout conversions of the statistics: 16-32 KiB
# measured at 128x256x64, num_stages=3)
_SMEM_BUDGET = 227 * 1024
_SMEM_RESERVE = 32 * 1024


def _int_attr(text: str | None) -> int:
    """`3 : i32` -> 3; None or unparsable -> 0."""
    if not text:
        return 0
    try:
        return int(text.split(":")[0].strip())
    except ValueError:
        return 0


def _tile_bytes(load: Op) -> int:
    t = parse_type(load.results[0].type)
    n = 1
    for d in t.shape:
        n *= d
    bits = re.search(r"(\d+)", t.element)
    return n * (int(bits.group(1)) if bits else 32) // 8


def _set_attr(op: Op, key: str, value: str) -> None:
    """Add `key = value` to the op's attribute dictionary (printed before ` : ` in the custom
    syntax of tt.load and tt.descriptor_load)."""
    head = op.head
    k = max(i for i, s in enumerate(head) if isinstance(s, str) and " : " in s)
    seg = head[k]
    cut = seg.index(" : ")
    before = seg[:cut].rstrip()
    if before.endswith("}"):
        head[k] = before[:-1] + f", {key} = {value}}}" + seg[cut:]
    else:
        head[k] = seg[:cut] + f" {{{key} = {value}}}" + seg[cut:]


def _reload(module: Module, load: Op, *, volatile: bool = False) -> Op:
    """A second load of the same tile right after `load`: cacheModifier = cg, or volatile."""
    clone = module.clone(load, {})
    head = clone.head
    k = max(i for i, s in enumerate(head) if isinstance(s, str) and " : " in s)
    seg = head[k]
    cut = seg.index(" : ")
    if volatile:
        if "isVolatile" not in seg:
            seg = seg[:cut] + " {isVolatile = true}" + seg[cut:]
    elif "cacheModifier" in seg:
        seg = re.sub(r"cacheModifier = \w+", "cacheModifier = cg", seg)
    else:
        seg = seg[:cut] + " cacheModifier = cg" + seg[cut:]
    head[k] = seg
    return module.insert(clone, after=load)


def _broadcast_rows(module: Module, vec: Value, bm: int, load: Op, loop: ForLoop, *, before: Op,
                    loc: str) -> Value:
    tile = parse_type(before.result.type)
    bk = tile.shape[1]
    f = lambda *s: str(tile.with_shape(s).with_element("f32"))  # noqa: E731
    e = module.insert(module.build(f"tt.expand_dims $0 {{axis = 1 : i32}} : {f(bm)} -> {f(bm, 1)} {loc}", vec,
                                   types=[f(bm, 1)], hint="shift"), before=loop.op).result
    return module.insert(module.build(f"tt.broadcast $0 : {f(bm, 1)} -> {f(bm, bk)} {loc}", e,
                                      types=[f(bm, bk)], hint="shift"), before=loop.op).result


def _set_init(loop: ForLoop, index: int, value: Value) -> None:
    inits = loop.inits
    inits[index] = value
    loop._rebuild_head(inits)


def _dce(module: Module, root: Op) -> None:
    """Erase ops nested in `root` whose results are unused and that have no side effects."""
    changed = True
    while changed:
        changed = False
        users = module.user_index()
        for o in list(root.walk()):
            if o is root or o.block is None or not o.results or o.name == "scf.for" or has_side_effects(o):
                continue
            if all(not users.get(id(r)) for r in o.results):
                module.erase(o)
                changed = True
