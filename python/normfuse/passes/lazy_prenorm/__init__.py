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
   broadcast vector: a per-row scale (the factor sunk; `x * rstd` or `x / rms`, which sinks as
   the row's 1 / rms), optionally a per-row centering first
   (LayerNorm), per-column weights, and a per-column bias last. A factor that is not a broadcast
   vector (depends on the column and row), or a per-row factor defined inside the loop (varies
   with k), is not sunk. An intermediate scaled tile with another user blocks the rewrite.
3. The row vectors are computed outside the loop. If they come from a statistics loop (a loop
   without a tt.dot: a vector derived from an earlier GEMM loop is precomputed), that loop
   runs as many trips and reads, trip by trip, the same tile (pointers, mask and iteration
   space proven equal however each loop spells them: tile indices or offsets, advanced or
   recomputed pointers, any association of the address terms; `normfuse.ir.affine`), has no
   side effects, nothing between the two loops writes memory, the kernel never writes the
   argument the tile is read from (a store to X in the GEMM loop changes what its later trips
   read after the statistics loop read it; a pointer advanced in the loop traces to its argument,
   `ir.ops.pointer_root`), and only its statistics are used later.
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

Code
----
`match` (what the three transforms share: the k-loop, the A-operand chain, the statistics loop
and the proof that both loops read the same tile), `fusion` (the rewrite above), `row_block`
("Once per row block"), `stage_reloads` (the scheduler behind the option of that name). Each
transform decides everything before it edits the IR: a loop that does not match is left as it
was, with a "missed" remark.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...ir import Module
from ...ir.ops import FOR, ForOp
from .. import Pass, PassError, PassRun
from . import fusion, row_block, stage_reloads
from .match import Miss, single_dot

StatsSource = Literal["auto", "tile", "reload", "reload-volatile"]
StatsAccumulate = Literal["auto", "row", "tile"]
Choice = Literal["auto", "true", "false"]


@dataclass(frozen=True)
class LazyPreNorm(Pass):
    """Lazy Pre-Norm prologue fusion for RMSNorm and LayerNorm (options: module docstring)."""

    name = "lazy-prenorm"
    summary = "sink a pre-norm's per-row scale out of the GEMM k-loop and fuse its statistics loop"
    stats_source: StatsSource = "auto"
    shift: Choice = "auto"
    stats_accumulate: StatsAccumulate = "auto"
    stage_reloads: Choice = "auto"
    num_stages: int = 0

    def __post_init__(self):
        if self.stats_source not in ("auto", "tile", "reload", "reload-volatile"):
            raise PassError("option lazy-prenorm{stats-source} must be auto, tile, reload or "
                            f"reload-volatile, got '{self.stats_source}'")
        if self.stats_accumulate not in ("auto", "row", "tile"):
            raise PassError("option lazy-prenorm{stats-accumulate} must be auto, row or tile, "
                            f"got '{self.stats_accumulate}'")
        # True/False from Python are the options' "true"/"false"
        object.__setattr__(self, "shift", str(self.shift).lower())
        if self.shift not in ("auto", "true", "false"):
            raise PassError(f"option lazy-prenorm{{shift}} must be auto, true or false, got '{self.shift}'")
        object.__setattr__(self, "stage_reloads", str(self.stage_reloads).lower())
        if self.stage_reloads not in ("auto", "true", "false"):
            raise PassError("option lazy-prenorm{stage-reloads} must be auto, true or false, "
                            f"got '{self.stage_reloads}'")
        if int(self.num_stages) < 0:
            raise PassError(f"option lazy-prenorm{{num-stages}} must be >= 0, got {self.num_stages}")

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        seen_gemm = False
        for func in module.functions():
            # the row-block form first: statistics before a loop over N tiles move into its first trip
            for op in [o for o in func.walk() if o.name == FOR]:
                if op.block is None:
                    continue
                rb = row_block.plan(module, ForOp(op))
                if rb is not None:
                    stats_op = rb.stats.op
                    row_block.rewrite(module, rb)
                    run.applied("statistics loop moved into the first trip of the enclosing N-tile "
                                "loop (computed once per row block, carried to the later tiles)", stats_op)
            for op in [o for o in func.walk() if o.name == FOR]:
                if op.block is None:  # erased by an earlier rewrite
                    continue
                loop = ForOp(op)
                try:
                    dot = single_dot(loop)
                    if dot is None:
                        continue
                    seen_gemm = True
                    plan = fusion.plan(module, loop, dot, self)
                except Miss as m:
                    seen_gemm = True
                    run.missed(str(m), m.op or op)
                    continue
                done, reloads = fusion.rewrite(module, plan)
                staged = stage_reloads.stage(module, loop, dot, reloads, self, run.context.num_stages)
                if staged:
                    done.append(staged)
                what = "LayerNorm" if plan.layer else "RMSNorm"
                run.applied(f"{what} row scale sunk out of the k-loop: {'; '.join(done)}", dot)
        if not seen_gemm:
            run.missed("no GEMM k-loop (an scf.for carrying a tt.dot accumulator) found")
