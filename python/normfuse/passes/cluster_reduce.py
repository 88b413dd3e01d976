"""cluster-reduce: split a post-norm row over a Hopper thread-block cluster (DSMEM exchange).

Algebra
-------
The row statistics of an epilogue norm are sums over the row's N columns, and a sum splits over
any partition of the columns: with the row's T = cdiv(N, BLOCK_N) tiles dealt to the C CTAs of one
cluster (CTA r takes tiles r, r + C, r + 2C, ...),

    sum_j f(y_j) = sum_{r < C} ( sum_{tiles t of CTA r} sum_{j in t} f(y_j) ).

Each CTA reduces its own tiles, writes its partial row sums (RMSNorm: sum y^2; LayerNorm: sum y
and sum y^2, in one exchange) into its shared memory, crosses one cluster barrier
(`barrier.cluster.arrive.release` / `barrier.cluster.wait.acquire`), and reads all C partials through
distributed shared memory (`mapa.shared::cluster` + `ld.shared::cluster`), adding them in rank order
0..C-1, so every CTA of the cluster gets bitwise the same totals. The rest of the naive kernel (rstd,
mean, the second loop that normalizes) is unchanged and now runs over the CTA's own tiles.

When T == C each CTA owns exactly one tile; the loops over N are inlined and `epilogue-norm`, run
after this pass, forwards the tile through registers (no unnormalized store). When T > C (a row
longer than one cluster, at most 16 CTAs) each CTA handles several tiles: the unnormalized tiles are
written in the first loop and re-read (from L2, written by the same CTA a moment before) in the
second: the "deferred" form, reported in the remark.

The partition argument holds for any per-row sum, whatever is summed: the pass checks that the
loop-carried statistics are sums over tiles (rule 3), never what f is. The norm backward is such a
reduction of an elementwise function of the dX GEMM's accumulator and loaded tiles, f = du g xhat
(LayerNorm also du g) with du = dY W (the pre-norm op's dX, or the next linear's dX in the
regrouped post-norm backward, times SiLU'(n) there) and xhat from a loaded x tile and the saved
rstd (mean): `kernels/backward.py:norm_backward_naive` has the naive kernel's structure and is
split over a cluster the same way (`test/lit/cluster-reduce-backward.mlir`). Column partial sums
(dg, dbeta) that each CTA stores for its own tiles inside loop 1 stay per CTA and correct.

IR
--
Before (the naive kernel of `normfuse.kernels.postnorm_gemm`, N a constexpr)::

    %pid = tt.get_program_id x
    %ss = scf.for %n = %c0 to %cT step %c1 iter_args(%s = %zero) {   // loop 1: GEMM tile, stats,
      ... tt.dot ... tt.store %y_tile ...  scf.yield (%s + sum(acc^2))  // unnormalized store
    }
    %rstd = f(%ss)
    scf.for %n = %c0 to %cT step %c1 { load tile, normalize with %rstd, store }   // loop 2

After (C-CTA cluster; the launch grid stays one program per row block, Triton's launcher starts
C CTAs per program as one cluster)::

    %rank = %pid mod C ; %blk = %pid div C          // %blk replaces every other use of %pid
    %ss_part = scf.for %n = %rank to %cT step %cC ...  // (inlined when T == C)
    inline_asm "st.shared partial"  %rows, %ss_part
    inline_asm "barrier.cluster.arrive.release; barrier.cluster.wait.acquire"
    %ss = inline_asm "sum over r of ld.shared::cluster(mapa(slot, r))"  %rows
    inline_asm "barrier.cluster.arrive.release"       // done reading peers' shared memory
    ... loop 2 over %rank, %rank + C, ... ...
    inline_asm "barrier.cluster.wait.acquire"         // before exit: peers may still read ours
    tt.return

Persistent kernels: when the two loops sit in a loop over row blocks (`scf.for %rb = %pid to
%blocks step %nprog`, %nprog = `tt.get_num_programs x`), the program count is divided by C too
(a launch of P programs is P clusters of C CTAs) and the exchange runs once per row block::

    scf.for %rb = %blk to %blocks step (%nprog div C) {
      ... loop 1 (or its inlined tile) ...
      %idx = rows + ((%rb - %blk) / step mod 2) * bytes / 4     // slot set of this row block
      inline_asm "st.shared partial" %idx, %ss_part ; inline_asm "arrive.release; wait.acquire"
      %ss = inline_asm "sum over r of ld.shared::cluster(mapa(slot, r))" %idx
      ... loop 2 ...
    }
    inline_asm "barrier.cluster.arrive.release; barrier.cluster.wait.acquire"   // before exit
    tt.return

With one barrier per row block, a CTA may write row block i + 1's partials while a peer still
reads row block i's; it cannot write row block i + 2's before every peer has arrived at row block
i + 1's barrier, which each does after its reads of row block i (the arrive orders them: release
semantics). So two slot sets, alternating with the row block's parity, are never written while
being read, and the barrier after the loop keeps every CTA's shared memory alive until its peers'
last reads are done.

The function gets `normfuse.cluster_dims = C` and `normfuse.cluster_smem = bytes`; normfuse's
compile stage turns them into the launch's cluster size (`metadata.num_ctas`) and extra dynamic
shared memory. The exchange slots sit past Triton's own allocation, at the end of the dynamic shared
memory (`global_smem + %dynamic_smem_size - bytes`), so they never alias Triton's buffers.

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. TTIR, one `tt.get_program_id x` (the row block); not already clustered. Every use of the
   program id and of `tt.get_num_programs x` is divided by C (the only CTA-dependent values the
   rewritten kernel has are then the rank and what the pass builds from it).
2. A loop over N tiles (loop 1) containing a `tt.dot` and a `tt.store`, followed in the same block
   by a loop (loop 2) that loads from the memory loop 1 stored to (through pointers or a tensor
   descriptor); both with constant bounds lb to ub step s > 0 (over tile indices,
   `range(0, T)`, or offsets, `range(0, N, BN)`) and the same number T = cdiv(ub - lb, s) >= 2
   of trips (T == 1 is `epilogue-norm`'s case); CTA r runs the trips r, r + C, ... of each
   (from lb + r * s, step C * s). Loops spelled differently must be proven to touch the same
   tile in the same trip (loop 2 reads exactly what loop 1 stored: `normfuse.ir.affine`, with
   nothing `affine.undetermined` behind the equal forms). The
   block is the function body, or the
   body of an scf.for in the function body (the persistent loop over row blocks) with an i32
   induction variable and no loop-carried values (its trip count is then the same in every CTA
   of a cluster, so every CTA crosses the same number of barriers).
3. Loop 1's only loop-carried values are per-row f32 vectors that start at zero and are updated as
   `%s + x` (a sum over tiles: the partition above is exact); loop 2 carries nothing.
4. Nothing with side effects between the loops.
5. C (option or auto) within 2..16 and <= T.

Prologue statistics (FlashNormAttention's LayerNorm over the heads)
--------------------------------------------------------------------
A loop before loop 1, in the same block, that only sums per-row f32 values over the same T tiles
(constant bounds, T trips, every loop-carried value a zero-started `%s + x` whose only reader is
that addition, nothing with side effects inside) is dealt to the CTAs like loop 1 (or inlined, one
tile per CTA), and its partial sums are exchanged right after it (all of them in one round: the
LayerNorm's sum and sum of squares together) in the first slots, before loop 1 uses them; the
epilogue statistics take the slots after them. A loop that fails these checks is left whole (every
CTA sums every tile: correct, redundant) with a "missed" remark; the epilogue split still applies.
With two exchanges per row block the persistent form's parity argument holds unchanged (a CTA
passes row block i + 1's first barrier only after every peer has read row block i's slots).

One exchange a row block (option merge, FlashNormAttention's STATS_AHEAD walk)
-----------------------------------------------------------------------------
The walk with a prologue crosses two exchanges a row block: the LayerNorm's sums before the
GEMM loop (the attention), the RMSNorm's after it. A software-pipelined walk computes row block
i + 1's statistics in trip i, between the GEMM loop and the normalizing loop, and carries them
to trip i + 1 (the first block's before the walk)::

    %a0, %b0 = scf.for %h ... { sums of block 0 }                    // "pre" loop
    scf.for %rb = %lb to %ub step %s iter_args(%a = %a0, %b = %b0) {  // the walk
      ... uses %a, %b ... ; %ss = loop 1 (GEMM, stores, sums)
      %na, %nb = scf.for %h ... { sums of block %rb + %s }           // "mid" loop
      ... uses %ss ... ; loop 2 ; scf.yield %na, %nb
    }

With merge, each mid loop (between the GEMM loop and the normalizing loop, passing the
prologue's checks: a zero-started `%s + x` per-row f32 sum over the same T tiles, nothing with
side effects) is dealt like the GEMM loop, and its partials are exchanged together with the
GEMM loop's in one exchange placed after the last mid loop: one write of nstats + nmid partials,
one barrier, one rank-order read. Sums of independent reductions do not interact, so each total
is the same rank-order sum of the same partials as in two exchanges (the same bits). Each pre
loop (in the function body before the walk, same checks) is dealt too and exchanged once, after
the last of them, before the walk. Per program: 1 + (row blocks) exchanges instead of
2 x (row blocks); the last block's exchange carries its successor's sums (zeros: its rows are
masked off), which costs two more slots, not another barrier.
Legality, beyond the persistent form's: (a) the walk may carry values (its trip count is fixed
at entry by bounds every CTA of a cluster computes alike, so each CTA still crosses the same
barriers); (b) moving the GEMM loop's exchange later is legal only when no op from the GEMM loop
to the last mid loop reads the GEMM loop's sums or an earlier mid loop's (they would be read
before their totals exist), and mid loops cannot depend on the GEMM loop's sums for the same
reason: any such read leaves the mid loops whole (every CTA sums every tile: correct, redundant)
with a "missed" remark, and the pre loops with them (row block 0's sums from the same adds as
the later blocks'); likewise nothing from the first pre loop to the last may read an earlier
pre loop's sums (a mean feeding a second, centred pass): such a read leaves the pre and the mid
loops whole; (c) slot reuse: the pre exchange is row block -1's and takes slot set 1
(the walk's trip t takes t mod 2), so the two-set argument above holds unchanged: a CTA writes
set 1 again at trip 1 only after passing trip 0's barrier, at which every peer arrived after
reading the pre exchange's slots. A walk of no trips (a dead program) still crosses the pre
exchange and the barrier before the return, in every CTA of its cluster alike. Without a walk,
or with no mid loop, merge misses and the exchanges are built as without it.

Options
-------
cluster-size = auto | 2..16    auto: C = T when T <= max-cluster (one tile per CTA), else the
                               fewest tiles per CTA, p = cdiv(T, max-cluster), on C = cdiv(T, p)
                               CTAs (so no CTA idles: N = 6144, 24 tiles of 256 -> 12 CTAs of 2)
max-cluster = 2..16            the largest cluster auto picks (16; 8 stays portable)
gather = each | once           each (default): the read of the totals is an elementwise inline asm
    with n x C loads from the peers' shared memory per element, and Triton's layout pass copies
    it into every layout its users want (20 copies in FlashNormAttention's forward; ptxas
    spills there grow with C). once: one asm per row sums the C partials and stores the totals
    into slots of this CTA's own (the region doubles), a CTA barrier (`bar.sync 0`), then the
    read is one local `ld.shared` per total, cheap to copy. Same sums in the same order: the
    same bits. DSMEM only. FlashNormAttention's forward (H200): 5-11 % faster, its default
    pipeline; the post-norm cluster forms not timed (ptxas: LayerNorm spills more).
early-loads = false | true     true: each exchange's cluster barrier is emitted as its two halves
    (`barrier.cluster.arrive.release`, then `barrier.cluster.wait.acquire`), and the loads after
    the exchange that do not depend on it move between them, with the pure ops that compute
    their addresses: the scan stops at the first op that writes memory other than the exchange
    slots, or that has regions (a loop, a branch: not looked into), and a load moves only if no
    store of the kernel writes its memory (its traced root argument; an untraced root stays):
    the barrier orders nothing it reads, the exchange's asm touches only its private slots, and
    a thread's own program order is kept. The loads' latency then overlaps the wait for the
    peers. FlashNormAttention's forward: x, K, V and the norm weights move, and ptxas spills
    drop from 788-900 to 112-152 B per thread (64 x 4 warps, H 2-4, gather=once); the post-norm
    kernels: the norm weights. In the persistent form the loads move within their row block's
    trip (a CTA still arrives at row block i + 1's barrier only after reading row block i's
    slots, which the two slot sets rely on). Not timed on the GPU yet.
merge = false | true           one exchange a row block in a software-pipelined walk (above);
    off by default. FlashNormAttention: `prepare_flash_norm_attention(stats_ahead=True)`. sm_90
    SASS of the walk's body: one cluster barrier pair instead of two, +8.4-10.5 % instructions
    (x loaded and converted once more a row block), no spills (255 registers); with
    reuse-loads{across-trips=values} (`stats_ahead="carry"`: the converted x carried to the
    next trip) 2.6-9.0 % fewer instructions than the default walk (4 B of spills at GELU H 3).
    Not timed on the GPU yet.
exchange = dsmem | global      where the partials meet. dsmem (default): as above. global: each
    CTA writes its partials to its own slice of Triton's global scratch (`ttg.global_scratch_alloc`,
    one slice of S bytes per CTA at base + ctaid * S); the same cluster barrier orders the writes
    before the reads; every CTA reads the C slices from rank 0's (its own minus
    %cluster_ctarank * S) with `ld.global.cg` (L2: this SM's L1 is not coherent with the peers'
    writes). S is known only after Triton's allocation pass: the asm carries a token that
    normfuse's make_llir wrapper replaces by `metadata.global_scratch_size`. No extra shared
    memory; the launcher allocates the scratch (a Triton allocator must be set, as for TMA).

Cluster sizes and the launch
----------------------------
Sizes up to 8 are portable; 9-16 are not: the driver launches them only on a function that has
CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED set, and Triton 3.6's launcher sets it only
for exactly 16. Measured on the H200 (2026-12-01): the post-norm op failed at launch ("a kernel
launch error has occurred due to cluster misconfiguration") at N = 2176-3840 (9-15 tiles of 256,
one per CTA) and 6144 (24 tiles, 12 CTAs of 2), while after cuOccupancyMaxActiveClusters, which
sets the attribute on the function, every size 2-16 launched (66, 39, 30, 22, 17, 15, 15
co-resident clusters at 2-8 CTAs, 9 at 9, 7 at 10-16; 147992 B of shared memory, K = 1024).
So auto keeps choosing up to 16 CTAs (one tile per CTA keeps the row in registers; which size is
fastest, with 7 clusters of 10-15 CTAs leaving 27-62 of the 132 SMs idle, is not decided here),
and the size is a launch need (`ClusterSize`): normfuse's launch
(`compiler.CompiledKernel.launch`, and the ops' launch plans when they are made ->
`normfuse.device.ensure_cluster_launch`) asks the driver for the occupancy once per loaded
kernel before its first launch (which allows the size) and refuses a size of which the device
fits no cluster. The pass runs ahead of time and cannot ask; the ops can (`ops/cluster_form.py`):
where the device fits no cluster of the size auto chose (smaller GPCs, SM partitions), they
compile the next size `cluster_candidates` lists (max-cluster = C - 1, C - 2, ...: more tiles
per CTA) and, when none fits, the unfused kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..ir import Module, Op, Value
from ..ir.cluster_ptx import (ARRIVE, BARRIER, CTA_BARRIER, MARK, SCRATCH_TOKEN, WAIT, read_asm,
                               read_global_asm, read_local_asm, reduce_store_asm, write_asm,
                               write_global_asm)
from ..ir.effects import (has_side_effects, is_normfuse_asm, pure_operand_slice,
                          writes_memory)
from ..ir.affine import Forms, memory_written, undetermined
from ..ir.ops import (ADDF, DOT, FOR, FUNC, GET_NUM_PROGRAMS, GET_PROGRAM_ID, INLINE_ASM, LOADS,
                      STORES, Builder, ForOp, FuncOp, LoadOp, ProgramIdOp, StoreOp, int_constant,
                      function_of, is_zero_constant, root_names, tensor, type_of,
                      written_roots)
from ..launch import ClusterSize, ExtraSharedMemory, ScratchSizeToken
from . import Pass, PassError, PassRun

PORTABLE_MAX = 8
HW_MAX = 16  # non-portable cluster size on H100/H200; Triton's launcher allows it at exactly 16


def is_cluster_asm(op: Op) -> bool:
    """An inline-asm op emitted by this pass (it touches only the exchange slots)."""
    return op.name == INLINE_ASM and MARK in op.text


def parse_cluster_size(pass_name: str, value):
    """A `cluster-size` option: 'auto' or an integer in 2..HW_MAX (shared with
    cluster-reduce-chain)."""
    if value == "auto":
        return value
    try:
        c = int(value)
    except ValueError:
        raise PassError(f"option {pass_name}{{cluster-size}} expects 'auto' or an integer "
                        f"in 2..{HW_MAX}, got '{value}'") from None
    if not 2 <= c <= HW_MAX:
        raise PassError(f"option {pass_name}{{cluster-size}} must be in 2..{HW_MAX}, got {c}")
    return c


def cluster_ctas(cluster_size, max_cluster, trips: int, what: str) -> int | str:
    """CTAs per cluster for `trips` tiles (loop trips): 'auto' deals them evenly over the fewest
    clusters of at most `max_cluster`; an integer must not exceed the trips (else the reason, with
    `what` naming the trips; shared with cluster-reduce-chain)."""
    if cluster_size == "auto":
        per = -(-trips // int(max_cluster))
        return -(-trips // per)
    c = int(cluster_size)
    if c > trips:
        return f"cluster-size={c} is larger than {what}"
    return c


def cluster_candidates(trips: int, max_cluster: int = HW_MAX) -> list[int]:
    """The cluster sizes 'auto' picks for `trips` tiles as max-cluster goes down from
    `max_cluster` to 2, each once, largest first (the order in which a launch that finds no room
    for one size tries the next: more tiles per CTA each time). Empty for one trip. Each size C
    is reproduced by max-cluster=C."""
    out: list[int] = []
    for m in range(min(int(max_cluster), HW_MAX), 1, -1):
        c = cluster_ctas("auto", m, trips, "")
        if trips >= 2 and c not in out:
            out.append(c)
    return out


@dataclass(frozen=True)
class ClusterReduce(Pass):
    """Distribute the N tiles of a post-norm row over a thread-block cluster.

    Options: `cluster_size` ("auto" or 2..16), `max_cluster` (the largest cluster "auto" picks;
    8 stays portable), `exchange` (where the partials meet: "dsmem", distributed shared memory,
    or "global", global scratch), `gather` ("each": every use of the totals reads the peers'
    slots; "once": one read per row into the CTA's own slots, see the module docstring),
    `early_loads` (the loads after an exchange that do not depend on it issued between the
    cluster barrier's arrive and wait), `merge` (the statistics loops after the GEMM loop
    exchanged with its sums, and those before a walk before it: one exchange a row block in a
    software-pipelined walk)."""

    name = "cluster-reduce"
    summary = ("split a post-norm row's N tiles over a thread-block cluster; exchange row "
               "statistics through distributed shared memory")
    cluster_size: Literal["auto"] | int = "auto"
    max_cluster: int = HW_MAX
    exchange: Literal["dsmem", "global"] = "dsmem"
    gather: Literal["each", "once"] = "each"
    early_loads: bool = False
    merge: bool = False

    def __post_init__(self):
        if self.exchange not in ("dsmem", "global"):
            raise PassError(f"option cluster-reduce{{exchange}} must be dsmem or global, got '{self.exchange}'")
        if self.gather not in ("each", "once"):
            raise PassError(f"option cluster-reduce{{gather}} must be each or once, got '{self.gather}'")
        if self.gather == "once" and self.exchange != "dsmem":
            raise PassError("option cluster-reduce{gather=once} needs exchange=dsmem (the totals go "
                            "to the CTA's own exchange slots)")
        if self.early_loads and self.exchange != "dsmem":
            raise PassError("option cluster-reduce{early-loads} needs exchange=dsmem (it splits the "
                            "cluster barrier into its arrive and wait)")
        if not 2 <= int(self.max_cluster) <= HW_MAX:
            raise PassError(f"option cluster-reduce{{max-cluster}} must be in 2..{HW_MAX}, got {self.max_cluster}")
        object.__setattr__(self, "cluster_size", parse_cluster_size(self.name, self.cluster_size))

    # -- matching ------------------------------------------------------------------------------
    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        for func in module.functions():
            why = self._run_func(module, run, func)
            if why:
                run.missed(why, func)

    def _run_func(self, module: Module, run: PassRun, func: Op) -> str | None:
        if FuncOp(func).attr(ClusterSize.attr) is not None:
            return "already split over a cluster"
        ops = list(func.walk())
        pids = [o for o in ops if o.name == GET_PROGRAM_ID and ProgramIdOp(o).axis == "x"]
        top = func.body()
        # the loops over N tiles: in the function body, or in the body of a persistent loop over
        # row blocks (an scf.for directly in the function body)
        blocks = [top] + [o.regions[0].blocks[0] for o in top.ops if o.name == FOR]
        loops = [o for b in blocks for o in b.ops if o.name == FOR]
        stores = [(l, s) for l in loops for s in l.walk() if s.name in STORES]
        gemm_loops = [l for l in loops if any(x.name == DOT for x in l.walk())
                      and any(x.name in STORES for x in l.walk())]
        if not gemm_loops:
            if any(o.name == DOT for o in ops):
                return ("no loop over N tiles around the GEMM: the row is one tile "
                        "(epilogue-norm's case) or the kernel is not a post-norm GEMM")
            return "no GEMM (tt.dot) in a loop over output tiles"
        for l1 in gemm_loops:
            body = l1.block
            roots = {id(StoreOp(s).root) for l, s in stores if l is l1} - {id(None)}
            later = body.ops[body.index_of(l1) + 1:]
            l2 = next((o for o in later if o.name == FOR and any(
                x.name in LOADS and id(LoadOp(x).root) in roots for x in o.walk())), None)
            if l2 is None:
                continue
            why = self._check(l1, l2, pids, later) or self._check_outer(l1)
            if why:
                run.missed(why, l1)
                return None
            prologues = []
            trips = _trips(*ForOp(l1).constant_bounds())
            rows = type_of(ForOp(l1).iter_args[0]).shape[0]
            for lp in body.ops[:body.index_of(l1)]:
                if lp.name != FOR or not ForOp(lp).iter_args:
                    continue
                why = _check_prologue(lp, trips, rows)
                if why:  # left as it is: every CTA still sums the whole row (correct, redundant)
                    run.missed(f"prologue row statistics not split: {why}", lp)
                else:
                    prologues.append(ForOp(lp))
            mids, pres = self._merge_candidates(run, l1, l2, trips, rows) if self.merge else ([], [])
            self._rewrite(module, run, func, ForOp(l1), ForOp(l2), pids[0], prologues, mids, pres)
            return None
        return "the GEMM loop's output is not reloaded by a later loop (no second pass over the row)"

    def _check(self, l1: Op, l2: Op, pids: list[Op], later: list[Op]) -> str | None:
        if len(pids) != 1:
            return (f"expected one tt.get_program_id x (the row block), found {len(pids)}")
        f1, f2 = ForOp(l1), ForOp(l2)
        b1 = list(f1.constant_bounds())
        b2 = list(f2.constant_bounds())
        if None in b1 or None in b2:
            return "the loops over N tiles need constant bounds (make N a tl.constexpr)"
        if b1[2] <= 0 or b2[2] <= 0:
            return f"the loops over N tiles do not count up ({b1} vs {b2})"
        trips = _trips(*b1)
        if _trips(*b2) != trips:
            return f"the two loops over N tiles run different numbers of trips ({b1} vs {b2})"
        if b1 != b2 and not _same_tiles(f1, f2):
            # each loop is dealt to the CTAs trip by trip: trip t of both must be the same tile
            return (f"the two loops over N tiles are spelled differently ({b1} vs {b2}) and the "
                    "normalizing loop's reads are not proven to be the tiles the GEMM loop stored "
                    "in the same trip")
        if trips < 2:
            return "the row is one tile (epilogue-norm's case)"
        if f2.iter_args:
            return "the normalizing loop carries values across tiles"
        if not f1.iter_args:
            return "the GEMM loop accumulates no row statistics"
        for a, init, y in zip(f1.iter_args, f1.inits, f1.yields):
            t = type_of(a)
            if isinstance(t, str) or len(t.shape) != 1 or t.element != "f32":
                return f"loop-carried value {a.ref()} is not a per-row f32 vector ({a.type})"
            if not is_zero_constant(init):
                return f"row statistic {a.ref()} does not start at zero"
            o = y.owner
            if o is None or o.name != ADDF or sum(1 for v in o.operands if v is a) != 1:
                return f"row statistic {a.ref()} is not a sum over tiles (%s + x)"
        for o in later[:later.index(l2)]:
            if has_side_effects(o):
                return f"'{o.name}' with side effects between the two loops over N tiles"
        ctas = self._ctas(trips)
        if isinstance(ctas, str):
            return ctas
        return None

    def _check_outer(self, l1: Op) -> str | None:
        """The persistent form: the loops over N tiles sit in a loop over row blocks. merge:
        it may carry values (the next row block's statistics of a software-pipelined walk): its
        trip count is set at its entry by bounds that every CTA of a cluster computes alike, so
        every CTA still crosses the same barriers, whatever it carries."""
        outer = l1.block.parent_op
        if outer is None or outer.name != FUNC:
            f = ForOp(outer)
            if f.iv.type != "i32":
                return f"the loop over row blocks has an induction variable of type {f.iv.type}, not i32"
            if f.iter_args and not self.merge:
                return ("the loop over row blocks carries values across row blocks (merge=true "
                        "takes a walk that carries its next row block's statistics)")
        return None

    def _merge_candidates(self, run: PassRun, l1: Op, l2: Op, trips: int,
                          rows: int) -> tuple[list, list]:
        """merge (analysis only): (mids, pres). mids: the statistics loops between the GEMM
        loop and the normalizing loop (each passes `_check_prologue`: sums over the same tiles),
        whose partials join the GEMM loop's exchange, moved after the last of them; none when an
        op from the GEMM loop to the last of them reads the GEMM loop's or an earlier mid's sums
        (they would be read before the exchange that totals them). pres: in the persistent form,
        the statistics loops in the function body before the walk, exchanged once before it;
        neither mids nor pres when an op from the first of them to the last reads an earlier
        one's sums.
        A loop that fails a check stays whole (every CTA sums every tile: correct, redundant),
        with a "missed" remark."""
        body = l1.block
        between = body.ops[body.index_of(l1) + 1:body.index_of(l2)]
        mids = []
        for lp in between:
            if lp.name != FOR or not ForOp(lp).iter_args:
                continue
            why = _check_prologue(lp, trips, rows)
            if why:
                run.missed(f"merge: statistics loop between the GEMM loop and the normalizing "
                           f"loop not merged: {why}", lp)
            else:
                mids.append(lp)
        if mids:
            x = _early_reader(between[:between.index(mids[-1]) + 1], mids, l1.results)
            if x is not None:
                run.missed(f"merge: '{x.name}' reads the row sums before the merged "
                           "exchange would total them; the statistics loops after the "
                           "GEMM loop, and the one before the walk, are left whole", x)
                return [], []
        elif self.merge:
            run.missed("merge: no statistics loop (sums over the same tiles) between the GEMM "
                       "loop and the normalizing loop; the exchanges are built as without merge",
                       l1)
            return [], []
        # (the loop before the walk is exchanged only with mids: its sums are row block 0's of
        # the walk's carried statistics, which the mids give every later row block; left whole
        # where they are, so that every row block's sums come out of the same adds)
        pres = self._pres(run, l1, trips, rows)
        if len(pres) > 1:
            # one exchange after the last of them: nothing from the first to the last may read
            # an earlier one's sums (it would read them before the exchange totals them)
            top = pres[0].op.block
            x = _early_reader(top.ops[top.index_of(pres[0].op):top.index_of(pres[-1].op) + 1],
                              [p.op for p in pres], ())
            if x is not None:
                run.missed(f"merge: '{x.name}' reads the row sums of a statistics loop "
                           "before the walk before their exchange (one, after the last "
                           "such loop) would total them; the statistics loops before the "
                           "walk, and those after the GEMM loop, are left whole", x)
                return [], []
        return [ForOp(m) for m in mids], pres

    @staticmethod
    def _pres(run: PassRun, l1: Op, trips: int, rows: int) -> list:
        """merge: the statistics loops before the walk (the persistent loop over row blocks),
        in the function body: the first row block's statistics of a software-pipelined walk."""
        outer = l1.block.parent_op
        if outer is None or outer.name != FOR:
            return []
        top = outer.block
        pres = []
        for lp in top.ops[:top.index_of(outer)]:
            if lp.name != FOR or not ForOp(lp).iter_args:
                continue
            why = _check_prologue(lp, trips, rows)
            if why:
                run.missed(f"merge: statistics loop before the walk not split: {why}", lp)
            else:
                pres.append(ForOp(lp))
        return pres

    def _ctas(self, trips: int) -> int | str:
        return cluster_ctas(self.cluster_size, self.max_cluster, trips, f"the row's {trips} tiles")

    # -- rewriting -----------------------------------------------------------------------------
    def _rewrite(self, module: Module, run: PassRun, func: Op, f1: ForOp, f2: ForOp, pid_op: Op,
                 prologues: list[ForOp] = (), mids: list[ForOp] = (),
                 pres: list[ForOp] = ()) -> None:
        trips = _trips(*f1.constant_bounds())
        ctas = self._ctas(trips)
        where = f1.op
        pid = pid_op.result
        b = Builder(module, pid_op, after=pid_op)
        c = b.constant(ctas, "i32", hint="c_ctas")
        rank = b.remsi(pid, c, hint="cta_rank")
        blk = b.divsi(pid, c, hint="row_block")
        made = (rank.owner, blk.owner)
        module.replace_all_uses(pid, blk, where=lambda o: o not in made)
        # CTA r of the cluster takes trips r, r + C, ... of each loop: the iterations lb + r * step,
        # stepping C * step (a loop over tile indices 0..T step 1: r, stepping C)
        deal: dict[tuple, tuple] = {}

        def dealt(loop: ForOp) -> tuple[Value, Value]:
            lb, _, step = loop.constant_bounds()
            if (lb, step) not in deal:
                first, stride = rank, c
                if (lb, step) != (0, 1):
                    first = b.muli(rank, b.constant(step, "i32", hint="n_step"), hint="n_first") if step != 1 else rank
                    first = b.addi(first, b.constant(lb, "i32", hint="n_lb"), hint="n_first") if lb != 0 else first
                    stride = b.constant(step * ctas, "i32", hint="n_stride")
                deal[(lb, step)] = (first, stride)
            return deal[(lb, step)]

        (first1, stride1), (first2, stride2) = dealt(f1), dealt(f2)
        # a program is now a cluster of C CTAs: the program count the kernel sees is CTAs / C
        for np_op in [o for o in func.walk() if o.name == GET_NUM_PROGRAMS and ProgramIdOp(o).axis == "x"]:
            cnt = Builder(module, np_op, after=np_op).divsi(np_op.result, c, hint="num_clusters")
            module.replace_all_uses(np_op.result, cnt, where=lambda o, c=cnt.owner: o is not c)
        outer = f1.op.block.parent_op
        outer = ForOp(outer) if outer is not None and outer.name == FOR else None

        stats = list(f1.op.results)
        rows = type_of(stats[0]).shape[0]
        nstats = len(stats)
        # prologue statistics (sums over the same tiles, before the GEMM loop) take the first slots
        npro = sum(len(p.op.results) for p in prologues)
        # merge: the statistics loops between the GEMM loop and the normalizing loop share its
        # exchange, after its own statistics; those before the walk exchange once in set 1
        nmid = sum(len(m.op.results) for m in mids)
        npre = sum(len(p.op.results) for p in pres)
        # gather=once: the totals in slots of their own after the partials' (as many)
        nslots = max(npro + nstats + nmid, npre)
        nbytes = -(-(4 * rows * nslots * (2 if self.gather == "once" else 1)) // 16) * 16
        # persistent: two slot sets, used by even and odd row blocks (see `_slot_index`)
        slot_bytes = 2 * nbytes if outer is not None else nbytes
        first_slot = 0
        # early-loads: each exchange's wait, for the hoist (in the persistent form too: the
        # loads move within their row block's trip, and a CTA still arrives at row block i + 1's
        # barrier only after its reads of row block i, which is what the two slot sets need)
        waits = [] if self.early_loads else None
        pre_parts, pre_marks = [], []
        for fp in pres:  # merge: the walk's first row block's statistics, before the walk
            pfirst, pstride = dealt(fp)
            if ctas == trips:
                pmark = Builder(module, fp.op, after=fp.op).constant(0, "i32").owner
                pre_parts += list(fp.yields)
                fp.inline(module, pfirst)
                pafter = pmark
                pre_marks.append(pmark)
            else:
                fp.set_bounds(pfirst, fp.bounds[1], pstride)
                pre_parts += list(fp.op.results)
                pafter = fp.op
        if pres:  # (one exchange for all of them, after the last; slot set 1: row block -1's)
            pusers = {id(p): list(module.users(p)) for p in pre_parts}
            xb = Builder(module, pafter, after=pafter)
            made = self._exchange(module, xb, outer, pre_parts, rows, nbytes, slot_bytes, ctas,
                                  rank, pid_op, 0, hint="pre_", nslots=nslots, waits=waits,
                                  parity=1)
            for p, total in zip(pre_parts, made[1].results):
                module.replace_all_uses(p, total, where=lambda o, ok=pusers[id(p)]: o in ok
                                        and o not in made)
            for m in pre_marks:
                module.erase(m)
        for fp in prologues:
            # dealt like the GEMM loop, its partial sums exchanged (one exchange for all of them)
            pfirst, pstride = dealt(fp)
            if ctas == trips:
                pmark = Builder(module, fp.op, after=fp.op).constant(0, "i32").owner
                pparts = list(fp.yields)
                fp.inline(module, pfirst)
                pafter = pmark
            else:
                fp.set_bounds(pfirst, fp.bounds[1], pstride)
                pparts = list(fp.op.results)
                pafter = fp.op
            pusers = {id(p): list(module.users(p)) for p in pparts}
            xb = Builder(module, pafter, after=pafter)
            made = self._exchange(module, xb, outer, pparts, rows, nbytes, slot_bytes, ctas, rank,
                                  pid_op, first_slot, hint="pro_", nslots=nslots, waits=waits)
            for p, total in zip(pparts, made[1].results):
                module.replace_all_uses(p, total, where=lambda o, ok=pusers[id(p)]: o in ok
                                        and o not in made)
            if ctas == trips:
                module.erase(pmark)
            first_slot += len(pparts)
        if ctas == trips:  # one tile per CTA: no loops left
            partials = f1.yields
            # marks the end of loop 1's ops; erased below
            marker = Builder(module, f1.op, after=f1.op).constant(0, "i32").owner
            f1.inline(module, first1)
            f2.inline(module, first2)
            where_after = marker
        else:
            f1.set_bounds(first1, f1.bounds[1], stride1)
            f2.set_bounds(first2, f2.bounds[1], stride2)
            partials = list(f1.op.results)
            where_after = f1.op
        mid_marks = []
        for fm in mids:  # merge: dealt like loop 1; the exchange moves after the last of them
            mfirst, mstride = dealt(fm)
            if ctas == trips:
                mmark = Builder(module, fm.op, after=fm.op).constant(0, "i32").owner
                partials = list(partials) + list(fm.yields)
                fm.inline(module, mfirst)
                mid_marks.append(mmark)
                where_after = mmark
            else:
                fm.set_bounds(mfirst, fm.bounds[1], mstride)
                partials = list(partials) + list(fm.op.results)
                where_after = fm.op
        users_before = {id(p): [u for u in module.users(p)] for p in partials}

        x = Builder(module, where.loc, after=where_after)
        wr, rd = self._exchange(module, x, outer, partials, rows, nbytes, slot_bytes, ctas, rank,
                                pid_op, first_slot, nslots=nslots, waits=waits)
        if outer is None:  # done reading the peers' slots (the wait is before the return)
            x.inline_asm(ARRIVE, "=r,r", [rank], ["i32"], hint="cluster_arrive")
        new_ops = {id(o) for o in (wr, rd)}
        for p, total in zip(partials, rd.results):
            old_users = users_before[id(p)]
            module.replace_all_uses(p, total, where=lambda o, ok=old_users: o in ok and id(o) not in new_ops)
        if ctas == trips:
            for m in [marker] + mid_marks:
                module.erase(m)
        ret = func.body().terminator
        # no CTA exits while a peer may still read its slots: a wait (after the arrive that
        # followed the reads) or, in the persistent form, a whole barrier after the last row block
        Builder(module, ret, before=ret).inline_asm(WAIT if outer is None else BARRIER, "=r,r", [rank],
                                                    ["i32"], hint="cluster_wait")
        if waits is not None:
            early_loads(module, run, func, waits, where)
        needs = [ClusterSize(ctas), ExtraSharedMemory(slot_bytes if self.exchange == "dsmem" else 0)]
        if self.exchange == "global":
            needs.append(ScratchSizeToken(SCRATCH_TOKEN))
        run.require(func, *needs)

        if mids or pres:
            run.applied(f"merge: {nmid} row statistic{'s' if nmid != 1 else ''} of "
                        f"{len(mids)} loop{'s' if len(mids) != 1 else ''} between the GEMM loop "
                        "and the normalizing loop (sums over the same tiles: the next row block's "
                        f"in a software-pipelined walk) exchanged with the GEMM loop's {nstats} in "
                        "one exchange" + (f"; {npre} of the loop before the walk exchanged once "
                                          "before it" if pres else ""), (mids or pres)[0].op)
        if prologues:
            run.applied(f"{npro} prologue row statistic{'s' if npro > 1 else ''} (a sum over the "
                        f"same {trips} tiles before the GEMM loop) split over the cluster too and "
                        "exchanged in one round before the GEMM loop (each CTA sums only its own "
                        "tiles)", prologues[0].op)
        per = -(-trips // ctas)
        if per == 1:
            how = ("one tile per CTA, kept in registers for the normalization "
                   "(run epilogue-norm next to drop the unnormalized store)")
        else:
            how = (f"deferred: the row is longer than one cluster, so each CTA handles up to {per} tiles; "
                   "they are stored unnormalized and re-read from L2 after the exchange")
        if outer is not None:
            how += ("; persistent: the clusters walk the row blocks, two exchange slot sets "
                    "alternate between consecutive row blocks")
        run.applied(f"row of {trips} N tiles split over a {ctas}-CTA cluster"
                    f"{' (non-portable size)' if ctas > PORTABLE_MAX else ''}; {nstats} row "
                    f"statistic{'s' if nstats > 1 else ''} exchanged through "
                    + ("distributed shared memory" if self.exchange == "dsmem" else "global scratch (L2)")
                    + f" ({slot_bytes} B per CTA), one cluster barrier per row block; {how}", where)


    def _exchange(self, module: Module, x: Builder, outer, partials, rows: int, nbytes: int,
                  slot_bytes: int, ctas: int, rank: Value, pid_op: Op, first: int,
                  hint: str = "", nslots: int = 0, waits: list | None = None,
                  parity: int | None = None) -> tuple[Op, Op]:
        """Write `partials` into the slots from `first` on, cross the cluster barrier, read the
        totals back (rank order); returns the (write, read) ops. gather=once: the totals are
        summed once per row into this CTA's slots `nslots + first`..., and after a CTA barrier
        the read is of those (the read then copied per layout is one local load per total)."""
        n = len(partials)
        idx = x.make_range(0, rows, hint="rows")
        if outer is not None and parity:  # (merge: before the walk, row block -1's set)
            off = x.constant(parity * nbytes // 4, "i32", hint="slot_words")
            idx = x.addi(idx, x.splat(off, [rows], hint="slot_offs"), hint="slot_rows")
        elif outer is not None:
            idx = _slot_index(x, outer, idx, rows, nbytes)
        vt = tensor([rows], "f32")
        it = tensor([rows], "i32")
        if self.exchange == "global":
            ptrs = _scratch_slice(module, pid_op, slot_bytes, rows)
            wasm, wcons = write_global_asm(n, rows, first)
            wr = x.inline_asm(wasm, wcons, [idx, ptrs] + list(partials), [it], hint=hint + "xchg_put")
            x.inline_asm(BARRIER, "=r,r", [rank], ["i32"], hint="cluster_sync")
            rasm, rcons = read_global_asm(n, rows, ctas, first)
            rd = x.inline_asm(rasm, rcons, [idx, ptrs], [vt] * n, hint=hint + "row_stat")
        else:
            wasm, wcons = write_asm(n, rows, slot_bytes, first)
            wr = x.inline_asm(wasm, wcons, [idx] + list(partials), [it], hint=hint + "xchg_put")
            if waits is not None:  # early-loads: the barrier's two halves, loads to go between
                x.inline_asm(ARRIVE, "=r,r", [rank], ["i32"], hint="cluster_arrive")
                waits.append(x.inline_asm(WAIT, "=r,r", [rank], ["i32"], hint="cluster_wait"))
            else:
                x.inline_asm(BARRIER, "=r,r", [rank], ["i32"], hint="cluster_sync")
            if self.gather == "once":
                sasm, scons = reduce_store_asm(n, rows, slot_bytes, ctas, first, nslots + first)
                x.inline_asm(sasm, scons, [idx], [it], hint=hint + "row_total")
                x.inline_asm(CTA_BARRIER, "=r,r", [rank], ["i32"], hint=hint + "cta_sync")
                rasm, rcons = read_local_asm(n, rows, slot_bytes, nslots + first)
            else:
                rasm, rcons = read_asm(n, rows, slot_bytes, ctas, first)
            rd = x.inline_asm(rasm, rcons, [idx], [vt] * n, hint=hint + "row_stat")
        return wr, rd


def early_loads(module: Module, run: PassRun, func: Op, waits: list, where: Op) -> None:
    """early-loads, once the exchanges are in place (cluster-reduce, cluster-reduce-chain): the
    loads after each of `waits` that do not depend on its exchange moved before it
    (`_hoist_loads`), and the remark."""
    written = written_roots(func)
    hoisted = [o for w in waits for o in _hoist_loads(module, w, written)]
    if hoisted:
        run.applied(f"early-loads: {len(hoisted)} load{'s' if len(hoisted) > 1 else ''} (of "
                    f"{', '.join(root_names(hoisted))}) independent of the exchange issued between "
                    "the cluster barrier's arrive and wait", hoisted[0])
    else:
        run.missed("early-loads: no load after an exchange is independent of it (each reads the "
                   "exchanged statistics, sits in a loop, or reads memory this kernel stores to)",
                   where)


def _hoist_loads(module: Module, wait: Op, written: set) -> list[Op]:
    """early-loads: move the loads after `wait` (same block, up to the first op that writes
    memory other than the exchange slots) that do not depend on the exchange to just before
    it, between the barrier's arrive and wait, with the pure ops that compute their operands.
    Legal for a load whose memory no op of the kernel writes (`written`: the stores' roots; an
    untraced root stays): the barrier orders nothing it reads, and the exchange's asm touches
    only its private slots. Returns the loads moved, in order."""
    blk = wait.block
    after = blk.ops[blk.index_of(wait) + 1:]
    pos = {id(o): i for i, o in enumerate(after)}
    tainted: set = {id(r) for r in wait.results}  # values that depend on the exchange
    moved: list[Op] = []
    for o in after:
        if o.regions or writes_memory(o, private=False):
            break  # (a store: a later load may read it; a loop or branch: not looked into)
        if o.name in LOADS and id(LoadOp(o).root) not in written and LoadOp(o).root is not None:
            sl = pure_operand_slice(o, blk, pos, tainted)
            if sl is not None:
                for d in sorted(sl, key=lambda d: pos[id(d)]) + [o]:
                    module.insert(d, before=wait)
                    del pos[id(d)]
                moved.append(o)
                continue
        if any(isinstance(v, Value) and id(v) in tainted for v in o.operands) or is_normfuse_asm(o):
            tainted.update(id(r) for r in o.results)
    return moved


def _early_reader(ops: list, loops: list, sums) -> Op | None:
    """The first op in `ops` (walked into) that reads one of `sums` (Values) or a result of an
    earlier one of `loops` (statistics loops among `ops`, exchanged together after the last of
    them): it would read those sums before the exchange totals them. None if there is none."""
    seen = {id(v) for v in sums}
    for o in ops:
        for x in o.walk():
            if any(id(v) in seen for v in x.operands):
                return x
        if any(o is lp for lp in loops):
            seen |= {id(v) for v in o.results}
    return None


def _check_prologue(lp: Op, trips: int, rows: int) -> str | None:
    """A loop before the GEMM loop that only sums per-row statistics over the same tiles (the
    LayerNorm statistics of an attention's input, over its heads): dealt like the GEMM loop and
    exchanged, since a sum splits over any partition of its terms."""
    f = ForOp(lp)
    b = f.constant_bounds()
    if None in b:
        return "non-constant bounds"
    if b[2] <= 0 or _trips(*b) != trips:
        return f"its {_trips(*b) if b[2] > 0 else '?'} trips differ from the GEMM loop's {trips}"
    for o in lp.walk():
        if o is not lp and has_side_effects(o):
            return f"'{o.name}' with side effects in the loop"
    for a, init, y in zip(f.iter_args, f.inits, f.yields):
        t = type_of(a)
        if isinstance(t, str) or len(t.shape) != 1 or t.element != "f32" or t.shape[0] != rows:
            return f"loop-carried value {a.ref()} is not a per-row f32 vector of {rows} rows ({a.type})"
        if not is_zero_constant(init):
            return f"row statistic {a.ref()} does not start at zero"
        o = y.owner
        if o is None or o.name != ADDF or sum(1 for v in o.operands if v is a) != 1:
            return f"row statistic {a.ref()} is not a sum over tiles (%s + x)"
        if any(u is not o for u in _users_in(lp, a)):
            return f"row statistic {a.ref()} is read inside the loop (not a plain sum)"
    return None


def _users_in(lp: Op, v: Value) -> list[Op]:
    return [o for o in lp.walk() if any(x is v for x in o.operands)]


def _trips(lb: int, ub: int, step: int) -> int:
    return max(0, -(-(ub - lb) // step))


def _same_tiles(f1: ForOp, f2: ForOp) -> bool:
    """Whether every read of loop 2 from the memory loop 1 writes is, trip by trip, the address
    of one of loop 1's stores (so the CTA that normalizes a tile is the one that stored it). Equal
    forms count only where `affine.undetermined` finds nothing behind them (two tt.reduce of one
    tensor, two loads of one address around a store, have one form)."""
    forms = Forms(f1, f2)
    stores = [StoreOp(s) for s in f1.op.walk() if s.name in STORES]
    roots = {id(s.root) for s in stores} - {id(None)}
    func = function_of(f1.op)
    written = memory_written(func) if func is not None else None

    def same(a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(
            (x is None and y is None) or (x is not None and y is not None and forms.equal(x, y))
            for x, y in zip(a, b)) and undetermined(
                [x for x in a + b if x is not None], written, forms.loops) is None

    reads = [LoadOp(x) for x in f2.op.walk() if x.name in LOADS and id(LoadOp(x).root) in roots]
    return bool(reads) and all(any(same(r.address, s.address) for s in stores) for r in reads)


def _slot_index(b: Builder, outer: ForOp, rows_range: Value, rows: int, nbytes: int) -> Value:
    """Row index into the slot set of this row block: row + (iteration parity) * nbytes / 4.

    With one barrier per row block, a CTA may write row block i + 1's partials while a slower peer
    still reads row block i's; it cannot reach row block i + 2 before every peer has arrived at
    row block i + 1's barrier, which each does after its reads of row block i (the arrive has
    release semantics). Two slot sets, alternating, are therefore never written while read."""
    iv, (lb, _, step) = outer.iv, outer.bounds
    it = b.divsi(b.subi(iv, lb, hint="rb_off"), step, hint="rb_iter")
    parity = b.andi(it, b.constant(1, "i32", hint="c1"), hint="rb_parity")
    off = b.muli(parity, b.constant(nbytes // 4, "i32", hint="slot_words"), hint="slot_off")
    return b.addi(rows_range, b.splat(off, [rows], hint="slot_offs"), hint="slot_rows")


def _scratch_slice(module: Module, pid_op: Op, nbytes: int, rows: int) -> Value:
    """This CTA's global scratch slice for the exchange, as a [rows] i64 tensor of its address
    (made once, next to the program id, outside any loop)."""
    b = Builder(module, pid_op, after=pid_op)
    addr = b.ptr_to_int(b.global_scratch(nbytes, hint="xchg_scratch"), hint="xchg_addr")
    return b.splat(addr, [rows], hint="xchg_addrs")
