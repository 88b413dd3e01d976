"""stage-reloads: let Triton pipeline the statistics' second load of a tile into shared memory.

Triton 3.6 assigns pipeline latencies only to loads that feed a dot, so a reload made for the
statistics is a synchronous register load in every k-step. Tagging the loop's loads with
`tt.latency = S - 1` (S = num_stages) makes Triton's AssignLatencies take the loop's latencies
as given, and the reloads get their own cp.async (or TMA) buffers. The decision is taken on the
fused loop (after the fusion's rewrite) and only tags attributes; it cannot fail half-way.
"""
from __future__ import annotations

from ...ir import Module, Op
from ...ir.match import backward_slice
from ...ir.ops import LATENCY, EXTF, FOR, LOADS, TRANS, TRUNCF, DotOp, ForOp, attr, enclosing, nbytes, set_attr

# Hopper: 227 KiB of shared memory per CTA (the opt-in maximum of the H100 and H200), less what
# Triton allocates beside the loop's buffers (layout conversions of the statistics: 16-32 KiB
# measured at 128x256x64, num_stages=3)
SMEM_BUDGET = 227 * 1024
SMEM_RESERVE = 32 * 1024


def stage(module: Module, loop: ForOp, dot: Op, reloads: list[Op], opts, num_stages: int | None) -> str | None:
    """Tag the loop's dot-operand loads and (within the shared-memory budget) the reloads with
    tt.latency; returns what was done (or why not), for the remark, or None when not asked."""
    reloads = [r for r in reloads if r.block is not None]
    if opts.stage_reloads == "false" or not reloads or opts.stats_source == "reload-volatile":
        return None
    users = module.user_index()

    def into_mma(o: Op) -> bool:
        """Whether the MMA reads this tile straight from shared memory (views and the
        ext/trunc pair that canonicalization folds are looked through)."""
        u = users.get(id(o.results[0]), [])
        while len(u) == 1 and u[0].name in (TRANS, EXTF, TRUNCF):
            u = users.get(id(u[0].results[0]), [])
        return len(u) == 1 and u[0] is dot

    inside = lambda v: loop.contains(v)  # noqa: E731
    d = DotOp(dot)
    a_loads = [o for o in backward_slice(d.a, lambda v: not inside(v)) if o.name in LOADS]
    if opts.stage_reloads == "auto" and enclosing(loop.op, FOR) is None and any(map(into_mma, a_loads)):
        return None  # one program per tile, tile straight into the MMA: measured no gain
    top = list(loop.body.ops)
    if any(attr(o, LATENCY) is not None for o in top):
        return "reloads not staged: the loop already carries tt.latency"
    stages = loop.num_stages or int(opts.num_stages) or int(num_stages or 0)
    if not stages:
        return ("reloads not staged: num_stages unknown (give lazy-prenorm{num-stages=S} "
                "outside normfuse.compile)")
    if stages < 2:
        return None
    lat = stages - 1
    in_body = {id(o) for o in top}
    feeding = []  # the loads the default AssignLatencies would pipeline: the dot's operands
    for operand in (d.a, d.b):
        for o in backward_slice(operand, lambda v: not inside(v)):
            if o.name in LOADS and id(o) in in_body and o not in feeding and o not in reloads:
                feeding.append(o)
    # S buffers for a tile the wgmma reads from shared memory (its extra buffer), else S - 1
    need = lambda o: (lat + 1 if into_mma(o) else lat) * nbytes(o.results[0])  # noqa: E731
    budget = SMEM_BUDGET - SMEM_RESERVE
    total = sum(map(need, feeding))
    staged = []
    for r in reloads:
        n = need(r)
        if total + n <= budget:
            staged.append(r)
            total += n
    if not staged or (opts.stage_reloads == "auto" and len(staged) < len(reloads)):
        # auto: all or nothing (LayerNorm's B reload left a register load beside staged
        # buffers: its column sums' own scratch took the CTA past the limit)
        return (f"reloads not staged: with their buffers the loop would need more than "
                f"{budget // 1024} KiB of shared memory")
    for o in feeding + staged:
        set_attr(o, LATENCY, lat)
    return (f"{len(staged)} of {len(reloads)} reload(s) staged in shared memory (tt.latency = "
            f"{lat}; ~{-(-total // 1024)} KiB of loop buffers)")
