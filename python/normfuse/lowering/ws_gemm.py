"""The warp-specialized Hopper GEMM template that `hopper-ws` plans are lowered to (Gluon).

This is not a kernel a user calls: `passes/hopper_ws.py` reads a fused GEMM-shaped TTIR loop
(what lazy-prenorm, epilogue-norm and cluster-reduce leave behind) into a plan whose non-GEMM
parts are four expression DAGs; `codegen.py` writes them as four small Gluon functions and
`runtime.py` instantiates this template with them. The template owns the schedule; the hooks own
the math (their signatures are the default hooks at the end of this file):

    PRE(af, pid_m, eargs) -> c0                 row vector from the first A tile (LayerNorm's shift)
    STATS(af, c0, st0, st1, kk, pid_m, eargs)   row statistics accumulated from every A tile
    AFN(af, c0, kk, pid_m, eargs) -> tile       the A operand (g and beta applied in the k-loop)
    EPRE(pid_m, pid_n, eargs, BN) -> ev         the epilogue's 1-D loads, before the k-loop
    EPI(acc, st0, st1, c0, pid_m, pid_n, eargs[, ev][, res]) -> tile    everything after the
                                                k-loop (`ev`: EPRE's values where the plan has
                                                them; `res`: a post-norm's residual tile, by TMA)
    ROWS(y, pid_m, pid_n, eargs) -> (p0, p1)    a post-norm's row sums over the tile's columns
    FIN(y, s0, s1, pid_m, pid_n, eargs) -> tile  the output from EPI's tile and the row sums
    SIDE(y, pid_m, pid_n, eargs)                a norm backward's 1-D stores (column partials)
    AUX(y, pid_m, pid_n, eargs) -> tile         a norm backward's second output tile (n)
                                                (`BWD`: ROWS, SIDE, AUX, FIN also take `res`)

Schedule (one CTA, persistent: the programs walk the output tiles in grouped order):

    loader partition (4 warps, one thread issues)   TMA A[BM, BK] and B tiles into a ring of
                                                    STAGES slots; `ready[s]` (tx bytes),
                                                    waits `empty[s]`
    consumer partition(s) (1 or 2, CONS_WARPS each) wait `ready[s]`; A through registers
                                                    (ldmatrix) when statistics or an A transform
                                                    are needed, else straight from shared memory;
                                                    async wgmma with one group in flight; release
                                                    the previous slot; after the k-loop: EPI,
                                                    bf16/fp16 tile -> shared -> TMA store

The partitions take their arguments as aggregates (`Ring`, `Problem`, `HookFns`, `Output`), the
way Gluon's tutorials pass partition arguments: what a partition captures is the aggregates'
runtime fields, in field order.

With two consumers (`NCONS=2`, "ping-pong") consumer c takes the CTA's tiles c, c + 2, ...: the
ring is shared in tile order and an `order` mbarrier pair makes their main loops take strict
turns on the tensor cores, while the other one runs its epilogue. The turns are also what keeps
the ring's parity waits sound: a consumer that skipped ahead to its next tile could see a slot
two fills behind as ready.

Statistics in the consumer: after issuing the k-step's wgmma (A and B from shared memory), the
consumer warps read the same A slot into registers (`DotOperandLayout(0, mma, k_width=2)`, i.e.
ldmatrix, each warpgroup its own rows) and accumulate the row sums while the tensor cores work;
the slot is released after both. No separate partition, no extra ring coupling (docs/design.md:
measured +14-35 % for a statistics partition on the ring). When the A operand itself is computed
(g or beta applied in the loop), it goes to the wgmma from registers and each k-step's wgmma is
waited for before the next ldmatrix: the loop reuses the same PTX registers for every k-step's
fragment, so a fragment cannot stay in flight across iterations (a first version that kept one
wgmma in flight was not repeatable on the H200). A consumer whose next tile lies in the row block
of its previous one keeps the statistics and runs the plain k-loop for it.

Shared statistics (`SHARE`, one consumer or coop2's halves, each warpgroup then on its half's
rows; no A transform): the tiles run in the order of
`_share_tile`, in which a row block's first tile comes at least a wave before its other tiles.
The first tile runs the k-loop with the statistics and stores them (and the shift) as 64-bit
words (f32 value, launch epoch) into `sbuf`; the other tiles run the plain k-loop, load the words
before it and, after it, take those stamped with this launch's epoch, reloading the others until
they are (`_consumer_shared`). A 64-bit store is single-copy atomic, so no fence or flag is
needed, and the words are never cleared (each launch has a larger epoch). Waits point only to
earlier positions of the order: no deadlock as long as every CTA of the grid is resident.

Post-norm rows (`NPOST` row sums, a row of T = cdiv(N, BN) tiles): the tiles run in the
whole-rows order (`_rows_tile`: T x G programs, a row block's T tiles at the same position of T
distinct CTAs, one wave); after the k-loop a consumer computes y = EPI(acc), publishes its share
ROWS(y) of the row sums as stamped words, gathers the T shares of its row (`_row_totals`, the same
words in the same order in every tile) and stores FIN(y, s0, s1) (`_consumer_rows`; with two
consumers, one's exchange runs during the other's k-loop). A residual tile (`RES`) comes by TMA
into the consumer's output staging tile (`_load_tile_res`, `Residual`); a plain instance's
epilogue tile of a second matrix the same way (hopper-ws{epilogue-tma}), the staging tile
handed back (`res.free`) once the tile's output store has read it.

A split output (`NOUT` > 1, `Output`): the output's columns go to up to four member matrices,
each tile through the descriptor of the member that holds its columns (`_store_member`; the
members' first columns `S1..S3` are multiples of BN).

A post-norm's training forward (not `BWD`, `HAS_AUX`): after EPI, SIDE's 1-D stores and AUX's
tile (h, the tile before the norm) go out before the exchange, AUX by TMA to `aux_desc` through
the staging tile; FIN's output follows through the same staging tile once h's store has read it.

A norm backward (`BWD`: the pre-norm training dX kernel, dX = dY W then the norm backward over
each row of dX) is such a post-norm whose residual tile is the input x, which every hook after
the k-loop reads: after EPI (du), SIDE stores the dg (dbeta) column partials, AUX's tile (n =
xhat g + beta) goes to `aux_desc` by TMA through the staging tile (x is in registers by then;
the store overlaps the exchange), ROWS gives the row sums' shares, du is rounded to the output
type (as the naive kernel's reload) and held with x across the exchange, and FIN's dx leaves
through the staging tile once n's store has read it. A residual gradient added to dx (the
post-norm block's form) is read by FIN itself with pointer loads (the hook's own code).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)
from triton.language.core import _aggregate as aggregate

from ..ir import cluster_ptx

__all__ = ["ws_gemm_kernel", "noop_pre", "noop_stats", "noop_afn", "identity_epilogue",
           "noop_rows", "identity_fin", "DEFAULT_HOOKS", "share_order", "rows_order",
           "colvec_load", "colvec_fit",
           "fit", "vec_layout"]


# ---------------------------------------------------------------------------------------------
# Partition arguments
# ---------------------------------------------------------------------------------------------

@aggregate
class Ring:
    """The operand ring: the TMA descriptors of A and B, STAGES slots of each in shared memory,
    and per slot a `ready` barrier (the loader's bytes landed) and an `empty` one (the consumer
    released the slot). `B_KN`: B is [K, N] (else [N, K], a Linear weight)."""
    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    a_bufs: gl.shared_memory_descriptor
    b_bufs: gl.shared_memory_descriptor
    ready: gl.shared_memory_descriptor
    empty: gl.shared_memory_descriptor
    B_KN: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, a_desc, b_desc, a_bufs, b_bufs, ready, empty, B_KN):
        self.a_desc = a_desc
        self.b_desc = b_desc
        self.a_bufs = a_bufs
        self.b_bufs = b_bufs
        self.ready = ready
        self.empty = empty
        self.B_KN = gl.constexpr(B_KN)


@aggregate
class Problem:
    """The output's size M x N, the reduction length K, and the tile order's group of row blocks."""
    M: gl.tensor
    N: gl.tensor
    K: gl.tensor
    GROUP_M: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, M, N, K, GROUP_M):
        self.M = M
        self.N = N
        self.K = K
        self.GROUP_M = gl.constexpr(GROUP_M)


@aggregate
class HookFns:
    """The hooks (constexpr functions) and which of them do anything. ROWS and FIN: a post-norm
    whose row spans several N tiles (`NPOST` row sums exchanged, 0: none)."""
    PRE: gl.constexpr
    STATS: gl.constexpr
    AFN: gl.constexpr
    EPI: gl.constexpr
    ROWS: gl.constexpr
    FIN: gl.constexpr
    HAS_PRE: gl.constexpr
    HAS_STATS: gl.constexpr
    HAS_AFN: gl.constexpr
    NPOST: gl.constexpr
    SIDE: gl.constexpr
    AUX: gl.constexpr
    HAS_SIDE: gl.constexpr
    HAS_AUX: gl.constexpr
    BWD: gl.constexpr
    STATS_LATE: gl.constexpr
    RELEASE_EARLY: gl.constexpr
    STATS_ROWS: gl.constexpr
    STATS_LANES: gl.constexpr
    EPRE: gl.constexpr
    HAS_EPRE: gl.constexpr
    STAGING_LATE: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, PRE, STATS, AFN, EPI, ROWS, FIN, HAS_PRE, HAS_STATS, HAS_AFN, NPOST,
                 SIDE=None, AUX=None, HAS_SIDE=False, HAS_AUX=False, BWD=False,
                 STATS_LATE=False, RELEASE_EARLY=False, STATS_ROWS=False, STATS_LANES=False,
                 EPRE=None, HAS_EPRE=False, STAGING_LATE=False):
        self.PRE = gl.constexpr(PRE)
        self.STATS = gl.constexpr(STATS)
        self.AFN = gl.constexpr(AFN)
        self.EPI = gl.constexpr(EPI)
        self.ROWS = gl.constexpr(ROWS)
        self.FIN = gl.constexpr(FIN)
        self.HAS_PRE = gl.constexpr(HAS_PRE)
        self.HAS_STATS = gl.constexpr(HAS_STATS)
        self.HAS_AFN = gl.constexpr(HAS_AFN)
        self.NPOST = gl.constexpr(NPOST)
        self.SIDE = gl.constexpr(SIDE)
        self.AUX = gl.constexpr(AUX)
        self.HAS_SIDE = gl.constexpr(HAS_SIDE)
        self.HAS_AUX = gl.constexpr(HAS_AUX)
        self.BWD = gl.constexpr(BWD)
        self.STATS_LATE = gl.constexpr(STATS_LATE)
        self.RELEASE_EARLY = gl.constexpr(RELEASE_EARLY)
        self.STATS_ROWS = gl.constexpr(STATS_ROWS)
        self.STATS_LANES = gl.constexpr(STATS_LANES)
        self.EPRE = gl.constexpr(EPRE)
        self.HAS_EPRE = gl.constexpr(HAS_EPRE)
        self.STAGING_LATE = gl.constexpr(STAGING_LATE)


@aggregate
class Output:
    """Where a consumer's tiles go: the output's TMA descriptor and the consumer's staging tile.
    With NOUT > 1 the output's columns are split among NOUT tensors (members): member 0 holds
    columns [0, S1) through `c_desc`, member 1 [S1, S2) through `c1_desc`, and so on (each its
    own [M, N_i] matrix; every S_i a multiple of BN, so a tile belongs to one member); absent
    members' descriptors are placeholders (`c_desc`)."""
    c_desc: tma.tensor_descriptor
    c_smem: gl.shared_memory_descriptor
    c1_desc: tma.tensor_descriptor
    c2_desc: tma.tensor_descriptor
    c3_desc: tma.tensor_descriptor
    NOUT: gl.constexpr
    S1: gl.constexpr
    S2: gl.constexpr
    S3: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, c_desc, c_smem, c1_desc, c2_desc, c3_desc, NOUT, S1, S2, S3):
        self.c_desc = c_desc
        self.c_smem = c_smem
        self.c1_desc = c1_desc
        self.c2_desc = c2_desc
        self.c3_desc = c3_desc
        self.NOUT = gl.constexpr(NOUT)
        self.S1 = gl.constexpr(S1)
        self.S2 = gl.constexpr(S2)
        self.S3 = gl.constexpr(S3)


@aggregate
class Residual:
    """A [BM, BN] tile of a second matrix that the epilogue reads (a post-norm's residual),
    loaded by TMA by the loader into the consumer's output staging tile (`buf0`, `buf1` for
    consumer 1): `ready[c]` (the bytes landed), `free[c]` (consumer c's previous output left the
    staging tile). `RES`: there is one (else the other fields are placeholders). `aux_desc`: a
    second output's descriptor (a norm backward's n, `hooks.HAS_AUX`; else a placeholder)."""
    r_desc: tma.tensor_descriptor
    buf0: gl.shared_memory_descriptor
    buf1: gl.shared_memory_descriptor
    ready: gl.shared_memory_descriptor
    free: gl.shared_memory_descriptor
    RES: gl.constexpr
    aux_desc: tma.tensor_descriptor

    @gluon.constexpr_function
    def __init__(self, r_desc, buf0, buf1, ready, free, RES, aux_desc):
        self.r_desc = r_desc
        self.buf0 = buf0
        self.buf1 = buf1
        self.ready = ready
        self.free = free
        self.RES = gl.constexpr(RES)
        self.aux_desc = aux_desc


# ---------------------------------------------------------------------------------------------
# Layouts and the tile order
# ---------------------------------------------------------------------------------------------

@gluon.constexpr_function
def mma_layout_for(BM, BN, num_warps):
    """wgmma accumulator layout: warps stacked along M (16 rows each)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, BN, 16])


@gluon.constexpr_function
def a_layout_for(R, BK, num_warps, mma_layout, rows):
    """The registers' layout of an [R, BK] A tile read for the k-loop's statistics (and, with an
    A transform, the register operand of the wgmma). `rows` (WSConfig.stats_rows, no A
    transform): each thread one contiguous run of a row, as long as the thread's share of the
    tile allows (coop2's 64 x 64 halves: 32 elements, 2 lanes to a row, one shuffle per row sum
    and k-step; 16-byte shared loads, conflict-free under the 128-byte swizzle); else, and
    where the tile does not cover the threads evenly, the wgmma A operand's layout (4 lanes to
    a row, two rows a thread: two shuffles per row sum and k-step for each row)."""
    dot = gl.DotOperandLayout(operand_index=0, parent=mma_layout, k_width=2)
    if not rows:
        return dot
    per = R * BK // (32 * num_warps)           # elements per thread, whatever the layout
    run = min(BK, per)                         # one contiguous run of a row per thread
    lanes = BK // run                          # lanes sharing a row
    if per < 8 or lanes > 32 or R % ((32 // lanes) * num_warps):
        return dot                             # the tile does not cover the threads evenly
    return gl.BlockedLayout([1, run], [32 // lanes, lanes], [num_warps, 1], [1, 0])


@gluon.constexpr_function
def stat_lanes(a_layout, on):
    """How many lanes share a row of the row layout `a_layout` when the k-loop keeps one partial
    row sum per lane (`on`: WSConfig.stats_lanes, with statistics in this k-loop); 0: it keeps
    [R] sums (off, the wgmma operand's layout, or one lane to a row)."""
    if not on or not isinstance(a_layout, gl.BlockedLayout):
        return 0
    lanes = a_layout.threads_per_warp[1]
    return lanes if lanes > 1 else 0


@gluon.constexpr_function
def lane_partial_layout(a_layout):
    """The layout of the k-loop's per-lane partial row sums, [R, lanes]: the row layout's
    [R, lanes, run] view summed over its run (the slice of that view's layout), so that adding
    a k-step's run sums to the partials moves no data between lanes."""
    run = a_layout.size_per_thread[1]
    tpw = a_layout.threads_per_warp
    view = gl.BlockedLayout([1, 1, run], [tpw[0], tpw[1], 1], [a_layout.warps_per_cta[0], 1, 1],
                            [2, 1, 0])
    return gl.SliceLayout(2, view)


@gluon.jit
def row_sums(x, st):
    """A STATS hook's row sums of its [R, BK] tile, shaped as the statistic `st` it adds to:
    [R] sums (every lane's run combined), or, when `st` holds per-lane partials [R, lanes]
    (`stat_lanes`), each lane's own run summed (no shuffle; `_mainloop` combines the lanes
    once per tile)."""
    if len(st.shape) == 2:
        L: gl.constexpr = st.shape[1]
        y = gl.reshape(x, [x.shape[0], L, x.shape[1] // L])
        return gl.convert_layout(gl.sum(y, axis=2), st.type.layout)
    else:
        return gl.sum(x, axis=1)


@gluon.jit
def _num_work(M, N, BM: gl.constexpr, BN: gl.constexpr):
    """How many output tiles this CTA owns (tiles pid, pid + programs, ...)."""
    tiles = gl.cdiv(M, BM) * gl.cdiv(N, BN)
    n = gl.cdiv(tiles - gl.program_id(0), gl.num_programs(0))
    return gl.maximum(n, 0)


@gluon.jit
def _grouped_tile(t, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    group = GROUP_M * num_pid_n
    first_m = (t // group) * GROUP_M
    size_m = gl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (t % group) % size_m, (t % group) // size_m


@gluon.jit
def _work_tile(j, M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """The j-th (pid_m, pid_n) of this CTA: tile pid + j * programs in grouped order (GROUP_M row
    blocks share their B tiles in L2)."""
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    return _grouped_tile(gl.program_id(0) + j * gl.num_programs(0), num_pid_m, num_pid_n, GROUP_M)


# ---------------------------------------------------------------------------------------------
# Shared statistics: the tile order
# ---------------------------------------------------------------------------------------------

@gluon.jit
def _share_lead(N, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """Shared statistics: by how many groups of GROUP_M row blocks the first tiles run ahead of
    the rest, so that at least one wave of positions (a tile per program) separates a row block's
    first tile from its other tiles."""
    return gl.cdiv(gl.num_programs(0), GROUP_M * gl.cdiv(N, BN)) + 1


@gluon.jit
def _share_work(M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """How many positions of the shared-statistics order this CTA walks (some are empty)."""
    groups = gl.cdiv(gl.cdiv(M, BM), GROUP_M)
    positions = (_share_lead(N, BN, GROUP_M) + groups * gl.cdiv(N, BN)) * GROUP_M
    return gl.maximum(gl.cdiv(positions - gl.program_id(0), gl.num_programs(0)), 0)


@gluon.jit
def _share_tile(j, M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """The j-th position of this CTA in the shared-statistics order: (pid_m, pid_n, valid).

    Row blocks form groups of G = GROUP_M (the last one padded with empty positions). F(g) is the
    first tiles (N tile 0) of group g's row blocks, O(g) their other tiles, column by column (the
    G row blocks of a column share its B tile, as in the grouped order). Positions run
    F(0) .. F(L-1), then O(0) F(L), O(1) F(L+1), ...: from group L on, a row block's first tile,
    which computes and publishes the statistics, comes L - 1 >= programs / (G x num_pid_n) blocks
    of G x num_pid_n positions, at least a wave, before its other tiles, which wait for them in
    their epilogue (the first L groups' other tiles may share a wave with their first tiles and
    wait up to the statistics' share of one tile, once per launch). A CTA walks positions pid,
    pid + programs, ...; a wait always points to an earlier position. `share_order` is the same
    arithmetic in Python."""
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    lead = _share_lead(N, BN, GROUP_M)
    p = gl.program_id(0) + j * gl.num_programs(0)
    first = lead * GROUP_M
    q = p - first
    blk = GROUP_M * num_pid_n
    b = q // blk
    r = q % blk
    others = GROUP_M * (num_pid_n - 1)
    # prefix: F(p // G); else block b: O(b) (r < others) or F(b + lead)
    g = gl.where(p < first, p // GROUP_M, gl.where(r < others, b, b + lead))
    i = gl.where(p < first, p % GROUP_M, gl.where(r < others, r % GROUP_M, r - others))
    pid_n = gl.where(p < first, 0, gl.where(r < others, 1 + r // GROUP_M, 0))
    pid_m = g * GROUP_M + i
    return pid_m, pid_n, pid_m < num_pid_m


def share_order(num_pid_m: int, num_pid_n: int, programs: int, group_m: int = 8):
    """The shared-statistics order in Python, position by position (None: an empty position):
    `_share_tile`'s arithmetic, for tests and for reading. CTA c walks positions c, c + programs, ..."""
    lead = -(-programs // (group_m * num_pid_n)) + 1
    groups = -(-num_pid_m // group_m)
    first, blk, others = lead * group_m, group_m * num_pid_n, group_m * (num_pid_n - 1)
    out = []
    for p in range((lead + groups * num_pid_n) * group_m):
        if p < first:
            g, i, n = p // group_m, p % group_m, 0
        else:
            b, r = divmod(p - first, blk)
            g, i, n = (b, r % group_m, 1 + r // group_m) if r < others else (b + lead, r - others, 0)
        m = g * group_m + i
        out.append((m, n) if m < num_pid_m else None)
    return out


# ---------------------------------------------------------------------------------------------
# Shared statistics: stamped 64-bit words in global memory (PTX in normfuse.ir.cluster_ptx)
# ---------------------------------------------------------------------------------------------

_STORE_STAMPED = gl.constexpr(cluster_ptx.store_stamped())
_LOAD_WORD = gl.constexpr(cluster_ptx.load_word())
_STAMPED_VALUE = gl.constexpr(cluster_ptx.stamped_value())


@gluon.jit
def _publish(ptrs, v, epoch):
    # (addresses as integers: inline asm operands are type-checked against each other)
    gl.inline_asm_elementwise(_STORE_STAMPED, "=r,l,f,r", [ptrs.to(gl.int64), v, epoch],
                              gl.int32, is_pure=False, pack=1)


@gluon.jit
def _peek(ptrs):
    return gl.inline_asm_elementwise(_LOAD_WORD, "=l,l", [ptrs.to(gl.int64)], gl.int64,
                                     is_pure=False, pack=1)


@gluon.jit
def _stamped(ptrs, w, epoch):
    return gl.inline_asm_elementwise(_STAMPED_VALUE, "=f,l,l,r", [ptrs.to(gl.int64), w, epoch],
                                     gl.float32, is_pure=False, pack=1)


# ---------------------------------------------------------------------------------------------
# Post-norm rows: the order, and the exchange of partial row sums
# ---------------------------------------------------------------------------------------------

@gluon.jit
def _rows_groups(N, BN: gl.constexpr):
    """(T, G): the row's N tiles and the row blocks a wave holds (programs // T; 0: none fits)."""
    T = gl.cdiv(N, BN)
    return T, gl.num_programs(0) // T


@gluon.jit
def _rows_work(M, N, BM: gl.constexpr, BN: gl.constexpr):
    """How many tiles this CTA computes in the whole-rows order (`_rows_tile`)."""
    T, G = _rows_groups(N, BN)
    pid = gl.program_id(0)
    i = pid % gl.maximum(G, 1)
    n = gl.cdiv(gl.cdiv(M, BM) - i, gl.maximum(G, 1))
    return gl.where((G > 0) & (pid < G * T), gl.maximum(n, 0), 0)


@gluon.jit
def _rows_tile(j, M, N, BM: gl.constexpr, BN: gl.constexpr):
    """The j-th (pid_m, pid_n) of this CTA in the whole-rows order.

    The launch gives T x G programs (T = the row's N tiles, G = row blocks per wave). CTA c
    always takes N tile c // G and walks the row blocks c % G, c % G + G, ...: its j-th tile is
    row block j * G + c % G. So the T tiles of a row block are the j-th tiles of T distinct CTAs
    (a wave of G row blocks, column by column: the G CTAs of a column share its B tiles).

    Deadlock freedom: a tile waits (`_row_totals`) only for the partial sums of the other tiles
    of its row block, which their CTAs publish right after their k-loop of the same j. A CTA
    runs its j-th k-loop once its earlier tiles are done (one consumer; with two, the k-loops
    take turns and tile j's k-loop also needs only tiles < j); the loader fills the ring in the
    same order and waits only for its own consumers. By induction over j: when every tile < j of
    every CTA is done, every CTA can run its j-th k-loop and publish, so every j-th wait ends.
    This needs every CTA of the grid resident at once (grid <= SMs, one CTA per SM, as the launch
    sizes it), as the shared pre-norm statistics do. `rows_order` is the same in Python."""
    T, G = _rows_groups(N, BN)
    G = gl.maximum(G, 1)
    pid = gl.program_id(0)
    return j * G + pid % G, pid // G


def rows_order(num_pid_m: int, num_pid_n: int, programs: int):
    """The whole-rows order in Python: for each CTA c < programs, its tiles (pid_m, pid_n) in
    the order it computes them (`_rows_tile`); programs beyond T x G compute nothing."""
    G = programs // num_pid_n
    out = []
    for c in range(programs):
        if G == 0 or c >= G * num_pid_n:
            out.append([])
            continue
        out.append([(m, c // G) for m in range(c % G, num_pid_m, G)])
    return out


@gluon.constexpr_function
def rows_layout(BM, XN, num_warps):
    """The [BM, XN] layout of a gather step: consecutive rows on consecutive lanes (the words
    of one N tile are contiguous over rows), warps over rows first, then over N tiles."""
    wm = max(1, min(num_warps, BM // 32))
    return gl.BlockedLayout([1, 1], [32, 1], [wm, num_warps // wm], [0, 1])


@gluon.jit
def _publish_rows(sbuf, pid_m, pid_n, T, Mp, p0, p1, epoch, BM: gl.constexpr, TWO: gl.constexpr,
                  layout: gl.constexpr):
    """A tile's shares of its rows' sums as stamped words at sbuf[(j * T + n) * Mp + row] (j < 1 +
    TWO), where `_row_totals` gathers them."""
    mine = sbuf + (pid_n * Mp + pid_m * BM + gl.arange(0, BM, layout=layout))
    _publish(mine, p0, epoch)
    if TWO:
        _publish(mine + T * Mp, p1, epoch)


@gluon.jit
def _row_totals(sbuf, pid_m, T, Mp, epoch, BM: gl.constexpr, XN: gl.constexpr,
                TWO: gl.constexpr, layout: gl.constexpr):
    """The row sums over the whole row, from the partial sums the row's T tiles published:
    word (j, n, row) at sbuf[(j * T + n) * Mp + row] (j < 1 + TWO). Read XN tiles at a time (all
    their words loaded before any stamp is checked: one round trip per step), each word whose
    stamp is older than `epoch` reloaded until it is (`_stamped`); columns n >= T read tile T - 1's
    word (no mask: the asm has none) and count as 0. Every tile of a row adds the same words in
    the same order (`gl.sum` over the same layout, steps in n order): bitwise the same totals."""
    rl: gl.constexpr = gl.SliceLayout(1, layout)
    r = gl.arange(0, BM, layout=rl)
    c = gl.arange(0, XN, layout=gl.SliceLayout(0, layout))
    rows = gl.expand_dims((pid_m * BM + r).to(gl.int64), 1)
    t0 = gl.zeros([BM], gl.float32, rl)
    t1 = gl.zeros([BM], gl.float32, rl)
    for n0 in range(0, T, XN):
        n = n0 + c
        live = gl.expand_dims(n < T, 0)
        nn = gl.expand_dims(gl.minimum(n, T - 1).to(gl.int64), 0)
        p0 = sbuf + (nn * Mp + rows)
        w0 = _peek(p0)
        if TWO:
            p1 = sbuf + ((nn + T) * Mp + rows)
            w1 = _peek(p1)
        t0 += gl.sum(gl.where(live, _stamped(p0, w0, epoch), 0.0), axis=1)
        if TWO:
            t1 += gl.sum(gl.where(live, _stamped(p1, w1, epoch), 0.0), axis=1)
    return t0, t1


# ---------------------------------------------------------------------------------------------
# Hooks used when the plan has nothing of that kind (they also declare the hooks' signatures)
# ---------------------------------------------------------------------------------------------

@gluon.jit
def noop_pre(af, pid_m, eargs):
    return gl.sum(af, axis=1) * 0.0


@gluon.jit
def noop_stats(af, c0, st0, st1, kk, pid_m, eargs):
    return st0, st1


@gluon.jit
def noop_afn(af, c0, kk, pid_m, eargs):
    return af


@gluon.jit
def noop_epre(pid_m, pid_n, eargs, BN: gl.constexpr):
    return pid_n * 0


@gluon.jit
def identity_epilogue(acc, st0, st1, c0, pid_m, pid_n, eargs):
    return acc


@gluon.jit
def noop_rows(y, pid_m, pid_n, eargs):
    z = gl.sum(y, axis=1) * 0.0
    return z, z


@gluon.jit
def identity_fin(y, s0, s1, pid_m, pid_n, eargs):
    return y


@gluon.jit
def noop_side(y, pid_m, pid_n, eargs):
    pass


@gluon.jit
def identity_aux(y, pid_m, pid_n, eargs):
    return y


DEFAULT_HOOKS = {"pre": noop_pre, "stats": noop_stats, "afn": noop_afn, "epre": noop_epre,
                 "epi": identity_epilogue,
                 "rows": noop_rows, "fin": identity_fin, "side": noop_side, "aux": identity_aux}


@gluon.jit
def _epi(hooks, acc, st0, st1, c0, pid_m, pid_n, eargs, ev):
    """EPI on the tile, given EPRE's values `ev` where the plan has them."""
    if hooks.HAS_EPRE:
        out = hooks.EPI(acc, st0, st1, c0, pid_m, pid_n, eargs, ev)
    else:
        out = hooks.EPI(acc, st0, st1, c0, pid_m, pid_n, eargs)
    return out


@gluon.jit
def _epi_res(hooks, acc, st0, st1, c0, pid_m, pid_n, eargs, ev, r):
    """`_epi` with the epilogue's TMA tile `r`."""
    if hooks.HAS_EPRE:
        out = hooks.EPI(acc, st0, st1, c0, pid_m, pid_n, eargs, ev, r)
    else:
        out = hooks.EPI(acc, st0, st1, c0, pid_m, pid_n, eargs, r)
    return out


# ---------------------------------------------------------------------------------------------
# Partitions
# ---------------------------------------------------------------------------------------------

@gluon.jit
def _load_tile(ring, pid_m, pid_n, pos, k_tiles, BM: gl.constexpr, BN: gl.constexpr):
    """The TMA loads of one tile's k-steps into the ring from position `pos`; returns the next."""
    return _load_steps(ring, pid_m, pid_n, pos, 0, k_tiles, BM, BN)


@gluon.jit
def _load_tile_res(ring, res, j, pid_m, pid_n, pos, k_tiles, BM: gl.constexpr, BN: gl.constexpr,
                   NCONS: gl.constexpr):
    """`_load_tile` for the CTA's j-th tile with its [BM, BN] tile of a second matrix (`res`):
    issued once the ring holds the tile's first STAGES k-steps (the loader would wait for a
    free slot there anyway, so waiting for the staging tile instead, the consumer's previous
    epilogue, costs the ring nothing, and the load has the rest of the k-loop to land)."""
    STAGES: gl.constexpr = ring.a_bufs.shape[0]
    first = gl.minimum(k_tiles, STAGES)
    pos = _load_steps(ring, pid_m, pid_n, pos, 0, first, BM, BN)
    _load_residual(res, j, pid_m, pid_n, BM, BN, NCONS)
    return _load_steps(ring, pid_m, pid_n, pos, first, k_tiles, BM, BN)


@gluon.jit
def _load_steps(ring, pid_m, pid_n, pos, k_begin, k_end, BM: gl.constexpr, BN: gl.constexpr):
    """The TMA loads of one tile's k-steps k_begin .. k_end - 1 into the ring from position
    `pos`; returns the next position."""
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    STAGES: gl.constexpr = ring.a_bufs.shape[0]
    for kk in range(k_begin, k_end):
        s = pos % STAGES
        mbarrier.wait(ring.empty.index(s), ((pos // STAGES) & 1) ^ 1)
        bar = ring.ready.index(s)
        mbarrier.expect(bar, ring.a_desc.block_type.nbytes + ring.b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(ring.a_desc, [pid_m * BM, kk * BK], bar, ring.a_bufs.index(s))
        if ring.B_KN:
            tma.async_copy_global_to_shared(ring.b_desc, [kk * BK, pid_n * BN], bar, ring.b_bufs.index(s))
        else:
            tma.async_copy_global_to_shared(ring.b_desc, [pid_n * BN, kk * BK], bar, ring.b_bufs.index(s))
        pos += 1
    return pos


@gluon.jit
def _store_tile(out, dst, pid_m, pid_n):
    """The epilogue's output tile -> shared -> TMA store (after the previous tile's store left)."""
    BM: gl.constexpr = dst.c_desc.block_type.shape[0]
    BN: gl.constexpr = dst.c_desc.block_type.shape[1]
    _store_at(out, dst, pid_m * BM, pid_n * BN)


@gluon.jit
def _store_aux(aux, dst, res, pid_m, pid_n):
    """AUX's tile (a second output: a norm backward's n, a training forward's h) -> the staging
    tile (after the previous store left it) -> TMA store through `res.aux_desc`."""
    BM: gl.constexpr = dst.c_desc.block_type.shape[0]
    BN: gl.constexpr = dst.c_desc.block_type.shape[1]
    tma.store_wait(pendings=0)
    dst.c_smem.store(aux.to(dst.c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(res.aux_desc, [pid_m * BM, pid_n * BN], dst.c_smem)


@gluon.jit
def _store_at(out, dst, row, col):
    """`_store_tile` at output element [row, col] (coop2's halves: a row inside the tile)."""
    tma.store_wait(pendings=0)
    dst.c_smem.store(out.to(dst.c_desc.dtype))
    fence_async_shared()
    if dst.NOUT == 1:
        tma.async_copy_shared_to_global(dst.c_desc, [row, col], dst.c_smem)
    else:
        _store_member(dst, row, col)


@gluon.jit
def _store_member(dst, row, col):
    """The staged tile at output columns [col, col + BN) into the member holding them (a split
    output, `Output.NOUT` > 1), at the member's own column."""
    if col < dst.S1:
        tma.async_copy_shared_to_global(dst.c_desc, [row, col], dst.c_smem)
    elif dst.NOUT == 2:
        tma.async_copy_shared_to_global(dst.c1_desc, [row, col - dst.S1], dst.c_smem)
    elif col < dst.S2:
        tma.async_copy_shared_to_global(dst.c1_desc, [row, col - dst.S1], dst.c_smem)
    elif dst.NOUT == 3:
        tma.async_copy_shared_to_global(dst.c2_desc, [row, col - dst.S2], dst.c_smem)
    elif col < dst.S3:
        tma.async_copy_shared_to_global(dst.c2_desc, [row, col - dst.S2], dst.c_smem)
    else:
        tma.async_copy_shared_to_global(dst.c3_desc, [row, col - dst.S3], dst.c_smem)


@gluon.jit
def _loader(ring, prob, res, BM: gl.constexpr, BN: gl.constexpr, NCONS: gl.constexpr):
    """The loader in the grouped order; with `res.RES` each output tile's [BM, BN] tile of a
    second matrix (a plain epilogue's tile load) into its consumer's staging tile
    (`_load_tile_res`)."""
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    k_tiles = gl.cdiv(prob.K, BK)
    nw = _num_work(prob.M, prob.N, BM, BN)
    pos = 0
    for j in range(nw):
        pid_m, pid_n = _work_tile(j, prob.M, prob.N, BM, BN, prob.GROUP_M)
        if res.RES:
            pos = _load_tile_res(ring, res, j, pid_m, pid_n, pos, k_tiles, BM, BN, NCONS)
        else:
            pos = _load_tile(ring, pid_m, pid_n, pos, k_tiles, BM, BN)


@gluon.jit
def _release_staging(free_bar, pred):
    """The staging tile handed back to the loader (`pred`): once the output store that reads it
    has read it."""
    if pred:
        tma.store_wait(pendings=0)
        mbarrier.arrive(free_bar)


@gluon.jit
def _mainloop(ring, pos0, k_tiles, pid_m, eargs, acc, st0, st1, c0, hooks,
              WITH_PRE: gl.constexpr, WITH_STATS: gl.constexpr, a_layout: gl.constexpr,
              HALF: gl.constexpr = -1, free_bar=None, free_pred=False):
    """One tile's k-loop over ring positions pos0 .. pos0 + k_tiles - 1: acc += A @ B, the
    statistics (WITH_STATS) and the shift (WITH_PRE) accumulated from the A tiles; returns
    (acc, st0, st1, c0) with the last wgmma finished and every slot released. `HALF` >= 0
    (coop2): this warpgroup's half of the A tiles' rows only. `free_bar` (STAGING_LATE): the
    previous tile's staging tile handed back (`_release_staging`, where `free_pred`) once the
    first k-step's wgmma is issued."""
    STAGES: gl.constexpr = ring.a_bufs.shape[0]
    dtype: gl.constexpr = ring.a_desc.dtype
    HB: gl.constexpr = ring.a_bufs.shape[1] // 2
    # STATS_LANES: the statistics kept as per-lane partial row sums through the k-loop (each
    # lane adds its own run of the row; no shuffle per k-step), the lanes combined after it
    LANES: gl.constexpr = stat_lanes(a_layout, hooks.STATS_LANES and WITH_STATS)
    if LANES > 0:
        R: gl.constexpr = st0.shape[0]
        q_layout: gl.constexpr = lane_partial_layout(a_layout)
        q0 = gl.zeros([R, LANES], gl.float32, q_layout)
        q1 = gl.zeros([R, LANES], gl.float32, q_layout)
    else:
        q0 = st0
        q1 = st1
    for kk in range(k_tiles):
        pos = pos0 + kk
        s = pos % STAGES
        mbarrier.wait(ring.ready.index(s), (pos // STAGES) & 1)
        if HALF >= 0:
            a_tile = ring.a_bufs.index(s).slice(HALF * HB, HB)
        else:
            a_tile = ring.a_bufs.index(s)
        if ring.B_KN:
            b_view = ring.b_bufs.index(s)
        else:
            b_view = ring.b_bufs.index(s).permute((1, 0))
        if hooks.HAS_AFN:
            # the A operand is computed in registers (g, beta applied): register-operand wgmma,
            # waited for at once. The registers of an in-flight wgmma cannot be protected
            # across loop iterations (the loop reuses the same PTX registers for the next
            # ldmatrix; measured non-repeatable on the H200 with one wgmma left in flight).
            a = a_tile.load(a_layout)
            af = a.to(gl.float32)
            if WITH_PRE:
                if kk == 0:
                    c0 = hooks.PRE(af, pid_m, eargs)
            if WITH_STATS:
                # before the issue, not while the wgmma runs: nothing may be computed between
                # a register-operand wgmma and its wait (the compiler may reuse the operand's
                # registers for temporaries; measured wrong results on the H200, fp16, when
                # the statistics sat there)
                q0, q1 = hooks.STATS(af, c0, q0, q1, kk, pid_m, eargs)
            a_op = hooks.AFN(af, c0, kk, pid_m, eargs).to(dtype)
            acc = warpgroup_mma(a_op, b_view, acc, is_async=True)
            if free_bar is not None:
                _release_staging(free_bar, free_pred & (kk == 0))
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(ring.empty.index(s))
        else:
            # The statistics come from a register copy of the same shared tile, read while the
            # wgmma runs (the slot is released only after both), either right after the issue
            # or (STATS_LATE) after the wait for the previous k-step's wgmma. Right after the
            # issue, ptxas places the tile's ldmatrix and arithmetic between the k-step's first
            # and second wgmma instruction (the tensor pipe waits for them); after the wait, the
            # four are issued back to back, but the statistics start only when the previous
            # k-step's MMA has finished. The pass chooses (hopper_ws.STATS_LATE_MAX_SUMS, measured).
            LATE: gl.constexpr = hooks.STATS_LATE and not WITH_PRE
            acc = warpgroup_mma(a_tile, b_view, acc, is_async=True)
            if free_bar is not None:
                _release_staging(free_bar, free_pred & (kk == 0))
            if (WITH_STATS or WITH_PRE) and not LATE:
                af = a_tile.load(a_layout).to(gl.float32)
                if WITH_PRE:
                    if kk == 0:
                        c0 = hooks.PRE(af, pid_m, eargs)
                if WITH_STATS:
                    q0, q1 = hooks.STATS(af, c0, q0, q1, kk, pid_m, eargs)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            # the previous k-step's wgmma has finished reading its slot (and its statistics
            # were taken in the previous iteration): with RELEASE_EARLY it is released before
            # this k-step's late statistics, so the loader can refill it while they run
            EARLY: gl.constexpr = LATE and WITH_STATS and hooks.RELEASE_EARLY
            if EARLY:
                mbarrier.arrive(ring.empty.index((pos + STAGES - 1) % STAGES), pred=kk > 0)
            if WITH_STATS and LATE:
                af = a_tile.load(a_layout).to(gl.float32)
                q0, q1 = hooks.STATS(af, c0, q0, q1, kk, pid_m, eargs)
            if not EARLY:
                mbarrier.arrive(ring.empty.index((pos + STAGES - 1) % STAGES), pred=kk > 0)
    acc = warpgroup_mma_wait(0, deps=(acc,))
    if free_bar is not None:  # (no k-step: K = 0)
        _release_staging(free_bar, free_pred & (k_tiles == 0))
    if not hooks.HAS_AFN:
        mbarrier.arrive(ring.empty.index((pos0 + k_tiles + STAGES - 1) % STAGES), pred=k_tiles > 0)
    if LANES > 0:
        st0 = st0 + gl.convert_layout(gl.sum(q0, axis=1), st0.type.layout)
        st1 = st1 + gl.convert_layout(gl.sum(q1, axis=1), st1.type.layout)
    else:
        st0 = q0
        st1 = q1
    return acc, st0, st1, c0


@gluon.jit
def _consumer(ring, prob, hooks, dst, res, eargs, order, CID: gl.constexpr, NCONS: gl.constexpr,
              WARPS: gl.constexpr):
    BM: gl.constexpr = dst.c_desc.block_type.shape[0]
    BN: gl.constexpr = dst.c_desc.block_type.shape[1]
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    mma_layout: gl.constexpr = mma_layout_for(BM, BN, WARPS)
    a_layout: gl.constexpr = a_layout_for(BM, BK, WARPS, mma_layout, hooks.STATS_ROWS)
    row_a: gl.constexpr = gl.SliceLayout(1, a_layout)
    row_c: gl.constexpr = gl.SliceLayout(1, mma_layout)
    # the statistics of a row block are reused by this consumer's next tile when it is in the
    # same row block: they depend on the A rows only, and the k-loop without them is the plain
    # GEMM's. Not with an A transform (its k-loop needs the A registers anyway).
    REUSE: gl.constexpr = (hooks.HAS_STATS or hooks.HAS_PRE) and not hooks.HAS_AFN
    k_tiles = gl.cdiv(prob.K, BK)
    nw = _num_work(prob.M, prob.N, BM, BN)
    xj = 0  # this consumer's tiles so far
    prev_m = -1
    st0 = gl.zeros([BM], gl.float32, row_a)
    st1 = gl.zeros([BM], gl.float32, row_a)
    c0 = gl.zeros([BM], gl.float32, row_a)
    # STAGING_LATE: the previous tile's staging tile handed back inside this tile's k-loop
    LATE_FREE: gl.constexpr = res.RES and hooks.STAGING_LATE
    if LATE_FREE:
        fb = res.free.index(CID)
    else:
        fb = None
    for j in range(CID, nw, NCONS):
        pid_m, pid_n = _work_tile(j, prob.M, prob.N, BM, BN, prob.GROUP_M)
        pos0 = j * k_tiles
        acc = gl.zeros([BM, BN], gl.float32, mma_layout)
        ev = hooks.EPRE(pid_m, pid_n, eargs, BN)  # (noop_epre: a placeholder)
        if NCONS == 2:
            # the two consumers' main loops take strict turns (tile order = ring order), so a
            # consumer never waits on a ring slot more than one fill ahead of the loader
            if CID == 0:
                mbarrier.wait(order.index(0), (xj - 1) & 1, pred=xj > 0)
            else:
                mbarrier.wait(order.index(1), xj & 1)
        if REUSE:
            if pid_m != prev_m:
                acc, st0, st1, c0 = _mainloop(
                    ring, pos0, k_tiles, pid_m, eargs, acc,
                    gl.zeros([BM], gl.float32, row_a), gl.zeros([BM], gl.float32, row_a),
                    gl.zeros([BM], gl.float32, row_a), hooks, hooks.HAS_PRE, hooks.HAS_STATS,
                    a_layout, free_bar=fb, free_pred=xj > 0)
            else:
                acc, st0, st1, c0 = _mainloop(
                    ring, pos0, k_tiles, pid_m, eargs, acc, st0, st1, c0, hooks, False, False,
                    a_layout, free_bar=fb, free_pred=xj > 0)
        else:
            acc, st0, st1, c0 = _mainloop(
                ring, pos0, k_tiles, pid_m, eargs, acc,
                gl.zeros([BM], gl.float32, row_a), gl.zeros([BM], gl.float32, row_a),
                gl.zeros([BM], gl.float32, row_a), hooks, hooks.HAS_PRE, hooks.HAS_STATS,
                a_layout, free_bar=fb, free_pred=xj > 0)
        prev_m = pid_m
        if NCONS == 2:
            mbarrier.arrive(order.index(1 - CID))
        if res.RES:
            # the epilogue's tile of a second matrix, loaded by TMA into the staging tile
            mbarrier.wait(res.ready.index(CID), xj & 1)
            r = dst.c_smem.load(mma_layout)
            out = _epi_res(hooks, acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),
                           gl.convert_layout(c0, row_c), pid_m, pid_n, eargs, ev, r)
        else:
            out = _epi(hooks, acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),
                       gl.convert_layout(c0, row_c), pid_m, pid_n, eargs, ev)
        _store_tile(out, dst, pid_m, pid_n)
        if res.RES and not LATE_FREE:
            # the staging tile is the next tile's: free once the store has read it
            tma.store_wait(pendings=0)
            mbarrier.arrive(res.free.index(CID))
        xj += 1
    tma.store_wait(pendings=0)


@gluon.jit
def _consumer_half(ring, prob, hooks, dst, eargs, CID: gl.constexpr, WARPS: gl.constexpr):
    """coop2: every tile of the CTA, rows [CID * BM / 2, (CID + 1) * BM / 2) of it (one warpgroup,
    its own partition): the k-loop on its half of each A tile (it releases each slot itself; the
    ring's `empty` barriers count both halves), the epilogue on its [BM / 2, BN] half, stored
    from its own staging tile through the output's [BM / 2, BN] boxes."""
    BM: gl.constexpr = ring.a_desc.block_type.shape[0]
    HB: gl.constexpr = dst.c_desc.block_type.shape[0]
    BN: gl.constexpr = dst.c_desc.block_type.shape[1]
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    mma_layout: gl.constexpr = mma_layout_for(HB, BN, WARPS)
    a_layout: gl.constexpr = a_layout_for(HB, BK, WARPS, mma_layout, hooks.STATS_ROWS)
    row_a: gl.constexpr = gl.SliceLayout(1, a_layout)
    row_c: gl.constexpr = gl.SliceLayout(1, mma_layout)
    # every tile computes its statistics: with a second k-loop version for a row block's later
    # tiles (as `_consumer` has) ptxas serialized the wgmma of this consumer (seen in its
    # report, the PTX being otherwise the same), and in the grouped order a CTA's consecutive
    # tiles (`programs` apart) rarely share a row block
    k_tiles = gl.cdiv(prob.K, BK)
    nw = _num_work(prob.M, prob.N, BM, BN)
    for j in range(nw):
        pid_m, pid_n = _work_tile(j, prob.M, prob.N, BM, BN, prob.GROUP_M)
        pos0 = j * k_tiles
        acc = gl.zeros([HB, BN], gl.float32, mma_layout)
        ev = hooks.EPRE(pid_m, pid_n, eargs, BN)  # (noop_epre: a placeholder)
        acc, st0, st1, c0 = _mainloop(
            ring, pos0, k_tiles, pid_m, eargs, acc,
            gl.zeros([HB], gl.float32, row_a), gl.zeros([HB], gl.float32, row_a),
            gl.zeros([HB], gl.float32, row_a), hooks, hooks.HAS_PRE, hooks.HAS_STATS,
            a_layout, CID)
        out = _epi(hooks, acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),
                   gl.convert_layout(c0, row_c), pid_m, pid_n, eargs, ev)
        _store_at(out, dst, pid_m * BM + CID * HB, pid_n * BN)
    tma.store_wait(pendings=0)


@gluon.jit
def _consumer_half1(ring, prob, hooks, dst, eargs, WARPS: gl.constexpr):
    # coop2's second warpgroup (a worker partition)
    _consumer_half(ring, prob, hooks, dst, eargs, 1, WARPS)


@gluon.jit
def _consumer1(ring, prob, hooks, dst, res, eargs, order, WARPS: gl.constexpr):
    # the second consumer of the ping-pong schedule (a worker partition)
    _consumer(ring, prob, hooks, dst, res, eargs, order, 1, 2, WARPS)


@gluon.jit
def _loader_shared(ring, prob, BM: gl.constexpr, BN: gl.constexpr):
    """The loader in the shared-statistics order (`_share_tile`; empty positions load nothing)."""
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    k_tiles = gl.cdiv(prob.K, BK)
    pos = 0
    for j in range(_share_work(prob.M, prob.N, BM, BN, prob.GROUP_M)):
        pid_m, pid_n, valid = _share_tile(j, prob.M, prob.N, BM, BN, prob.GROUP_M)
        if valid:
            pos = _load_tile(ring, pid_m, pid_n, pos, k_tiles, BM, BN)


@gluon.jit
def _consumer_shared(ring, prob, hooks, dst, eargs, sbuf, epoch, WARPS: gl.constexpr,
                     CID: gl.constexpr = 0, HALVES: gl.constexpr = False):
    """The consumer with statistics shared per row block (`SHARE`): a row block's first tile runs
    the k-loop with the statistics (as every tile does otherwise) and, before its epilogue, stores
    them and the shift as stamped words sbuf[0 | Mp | 2 Mp + row] = (value, epoch) (64-bit,
    single-copy atomic: no fence or flag; the shift's words only with a PRE hook, LayerNorm's
    shift: without one c0 is zero and no hook reads it); the row block's other tiles read the words before their
    plain k-loop (the latency hides under it) and, before the epilogue, take each value whose
    stamp is the launch's epoch, reloading those that are older (the first tile, a wave ahead,
    has normally written them long before). The statistics are the same numbers (same tile, same
    order) as when every tile computes them: the output is bitwise the same. With `HALVES`
    (coop2) warpgroup CID does this on its half of every tile's rows (its own k-loop on its half
    of the A tiles, its words, its [BM / 2, BN] output box), as `_consumer_half` does."""
    BM: gl.constexpr = ring.a_desc.block_type.shape[0]
    HB: gl.constexpr = dst.c_desc.block_type.shape[0]  # (BM, or BM / 2 with HALVES)
    BN: gl.constexpr = dst.c_desc.block_type.shape[1]
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    HALF: gl.constexpr = CID if HALVES else -1
    mma_layout: gl.constexpr = mma_layout_for(HB, BN, WARPS)
    a_layout: gl.constexpr = a_layout_for(HB, BK, WARPS, mma_layout, hooks.STATS_ROWS)
    row_a: gl.constexpr = gl.SliceLayout(1, a_layout)
    row_c: gl.constexpr = gl.SliceLayout(1, mma_layout)
    k_tiles = gl.cdiv(prob.K, BK)
    publish = gl.cdiv(prob.N, BN) > 1
    Mp = gl.cdiv(prob.M, BM) * BM
    zero = gl.zeros([HB], gl.float32, row_a)  # where the statistics start
    done = 0
    for j in range(_share_work(prob.M, prob.N, BM, BN, prob.GROUP_M)):
        pid_m, pid_n, valid = _share_tile(j, prob.M, prob.N, BM, BN, prob.GROUP_M)
        if valid:
            acc = gl.zeros([HB, BN], gl.float32, mma_layout)
            ev = hooks.EPRE(pid_m, pid_n, eargs, BN)  # (noop_epre: a placeholder)
            p0 = sbuf + pid_m * BM + CID * HB + gl.arange(0, HB, layout=row_c)
            if pid_n == 0:
                acc, st0, st1, c0 = _mainloop(
                    ring, done * k_tiles, k_tiles, pid_m, eargs, acc, zero, zero, zero, hooks,
                    hooks.HAS_PRE, hooks.HAS_STATS, a_layout, HALF)
                s0 = gl.convert_layout(st0, row_c)
                s1 = gl.convert_layout(st1, row_c)
                cc = gl.convert_layout(c0, row_c)
                if publish:
                    _publish(p0, s0, epoch)
                    _publish(p0 + Mp, s1, epoch)
                    if hooks.HAS_PRE:
                        _publish(p0 + 2 * Mp, cc, epoch)
            else:
                w0 = _peek(p0)
                w1 = _peek(p0 + Mp)
                if hooks.HAS_PRE:
                    w2 = _peek(p0 + 2 * Mp)
                acc, st0, st1, c0 = _mainloop(
                    ring, done * k_tiles, k_tiles, pid_m, eargs, acc, zero, zero, zero, hooks,
                    False, False, a_layout, HALF)
                s0 = _stamped(p0, w0, epoch)
                s1 = _stamped(p0 + Mp, w1, epoch)
                if hooks.HAS_PRE:
                    cc = _stamped(p0 + 2 * Mp, w2, epoch)
                else:
                    # no shift (no PRE hook): c0 stays the zeros it starts as, and EPI is not
                    # bound to it (hopper_ws binds c0 only with a PRE): nothing to share
                    cc = gl.convert_layout(c0, row_c)
            out = _epi(hooks, acc, s0, s1, cc, pid_m, pid_n, eargs, ev)
            _store_at(out, dst, pid_m * BM + CID * HB, pid_n * BN)
            done += 1
    tma.store_wait(pendings=0)


@gluon.jit
def _consumer_shared1(ring, prob, hooks, dst, eargs, sbuf, epoch, WARPS: gl.constexpr):
    # coop2's second warpgroup with shared statistics (a worker partition)
    _consumer_shared(ring, prob, hooks, dst, eargs, sbuf, epoch, WARPS, 1, True)


@gluon.jit
def _load_residual(res, j, pid_m, pid_n, BM: gl.constexpr, BN: gl.constexpr, NCONS: gl.constexpr):
    """The residual tile of this CTA's j-th tile into the staging tile of the consumer that takes
    it (j % NCONS), once that consumer's previous output has left it."""
    c = j % NCONS
    x = j // NCONS
    mbarrier.wait(res.free.index(c), (x & 1) ^ 1)
    bar = res.ready.index(c)
    mbarrier.expect(bar, res.r_desc.block_type.nbytes)
    if NCONS == 1:
        tma.async_copy_global_to_shared(res.r_desc, [pid_m * BM, pid_n * BN], bar, res.buf0)
    elif c == 0:
        tma.async_copy_global_to_shared(res.r_desc, [pid_m * BM, pid_n * BN], bar, res.buf0)
    else:
        tma.async_copy_global_to_shared(res.r_desc, [pid_m * BM, pid_n * BN], bar, res.buf1)


@gluon.jit
def _loader_rows(ring, prob, res, BM: gl.constexpr, BN: gl.constexpr, NCONS: gl.constexpr):
    """The loader in the whole-rows order (`_rows_tile`); with a residual, each tile's residual
    goes out once the ring holds the tile's first STAGES k-steps (`_load_tile_res`)."""
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    k_tiles = gl.cdiv(prob.K, BK)
    pos = 0
    for j in range(_rows_work(prob.M, prob.N, BM, BN)):
        pid_m, pid_n = _rows_tile(j, prob.M, prob.N, BM, BN)
        if res.RES:
            pos = _load_tile_res(ring, res, j, pid_m, pid_n, pos, k_tiles, BM, BN, NCONS)
        else:
            pos = _load_tile(ring, pid_m, pid_n, pos, k_tiles, BM, BN)


@gluon.jit
def _consumer_rows(ring, prob, hooks, dst, res, eargs, order, sbuf, epoch, CID: gl.constexpr,
                   NCONS: gl.constexpr, WARPS: gl.constexpr, XN: gl.constexpr):
    """A post-norm whose row spans several N tiles (`hooks.NPOST` row sums), in the whole-rows
    order: after the k-loop, y = EPI(acc) (the tile before the norm: bias, residual), the tile's
    share of the row sums ROWS(y) is published as stamped words (`_publish`: 64-bit (value,
    epoch), single-copy atomic), the row sums over the whole row are gathered from the row's T
    tiles (`_row_totals`) and FIN(y, s0, s1) is stored. The loader keeps filling the ring for the
    next tile meanwhile; with two consumers (`NCONS=2`) the other one's k-loop runs while this one
    waits (the `order` turns are taken before the epilogue, as in `_consumer`). The row sums
    come from the fp32 tile (the naive kernel's from the same values; its normalization reads
    the tile back rounded to the output type, this one normalizes the fp32 tile). With a
    residual (`res.RES`) the tile comes from the staging tile, where the loader put it; EPI
    reads it as `res`, and the staging tile is handed back (`res.free`) once this tile's output
    store has read it."""
    BM: gl.constexpr = dst.c_desc.block_type.shape[0]
    BN: gl.constexpr = dst.c_desc.block_type.shape[1]
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    mma_layout: gl.constexpr = mma_layout_for(BM, BN, WARPS)
    a_layout: gl.constexpr = a_layout_for(BM, BK, WARPS, mma_layout, hooks.STATS_ROWS)
    row_a: gl.constexpr = gl.SliceLayout(1, a_layout)
    row_c: gl.constexpr = gl.SliceLayout(1, mma_layout)
    xl: gl.constexpr = rows_layout(BM, XN, WARPS)
    k_tiles = gl.cdiv(prob.K, BK)
    T = gl.cdiv(prob.N, BN)
    Mp = (gl.cdiv(prob.M, BM) * BM).to(gl.int64)
    nw = _rows_work(prob.M, prob.N, BM, BN)
    zero = gl.zeros([BM], gl.float32, row_a)
    xj = 0
    for j in range(CID, nw, NCONS):
        pid_m, pid_n = _rows_tile(j, prob.M, prob.N, BM, BN)
        acc = gl.zeros([BM, BN], gl.float32, mma_layout)
        if NCONS == 2:
            if CID == 0:
                mbarrier.wait(order.index(0), (xj - 1) & 1, pred=xj > 0)
            else:
                mbarrier.wait(order.index(1), xj & 1)
        acc, st0, st1, c0 = _mainloop(
            ring, j * k_tiles, k_tiles, pid_m, eargs, acc, zero, zero, zero, hooks,
            hooks.HAS_PRE, hooks.HAS_STATS, a_layout)
        if NCONS == 2:
            mbarrier.arrive(order.index(1 - CID))
        if res.RES:
            mbarrier.wait(res.ready.index(CID), xj & 1)
            r = dst.c_smem.load(mma_layout)
            y = hooks.EPI(acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),
                          gl.convert_layout(c0, row_c), pid_m, pid_n, eargs, r)
        else:
            y = hooks.EPI(acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),
                          gl.convert_layout(c0, row_c), pid_m, pid_n, eargs)
        if hooks.BWD:
            # a norm backward: every hook reads the input tile r (x); the side outputs go out
            # before the exchange (the second output tile by TMA through the staging tile, which
            # r has left: its store overlaps the exchange), and the tile is held rounded to the
            # output type across it (FIN reads it so, as the naive kernel reloads it)
            if hooks.HAS_SIDE:
                hooks.SIDE(y, pid_m, pid_n, eargs, r)
            if hooks.HAS_AUX:
                _store_aux(hooks.AUX(y, pid_m, pid_n, eargs, r), dst, res, pid_m, pid_n)
            p0, p1 = hooks.ROWS(y, pid_m, pid_n, eargs, r)
            y = y.to(dst.c_desc.dtype)
        else:
            # a post-norm's training forward: the side outputs (h, the tile before the norm, by
            # TMA through the staging tile, which a residual r has left) before the exchange
            if hooks.HAS_SIDE:
                hooks.SIDE(y, pid_m, pid_n, eargs)
            if hooks.HAS_AUX:
                _store_aux(hooks.AUX(y, pid_m, pid_n, eargs), dst, res, pid_m, pid_n)
            p0, p1 = hooks.ROWS(y, pid_m, pid_n, eargs)
        if T > 1:
            _publish_rows(sbuf, pid_m, pid_n, T, Mp, p0, p1, epoch, BM, hooks.NPOST == 2, row_c)
            t0, t1 = _row_totals(sbuf, pid_m, T, Mp, epoch, BM, XN, hooks.NPOST == 2, xl)
            s0 = gl.convert_layout(t0, row_c)
            s1 = gl.convert_layout(t1, row_c)
        else:
            s0 = p0
            s1 = p1
        if hooks.BWD:
            out = hooks.FIN(y, s0, s1, pid_m, pid_n, eargs, r)
        else:
            out = hooks.FIN(y, s0, s1, pid_m, pid_n, eargs)
        _store_tile(out, dst, pid_m, pid_n)
        if res.RES:
            # the staging tile is the next residual's: free once the store has read it
            tma.store_wait(pendings=0)
            mbarrier.arrive(res.free.index(CID))
        xj += 1
    tma.store_wait(pendings=0)


@gluon.jit
def _consumer_rows_lag(ring, prob, hooks, d0, d1, eargs, sbuf, epoch, WARPS: gl.constexpr,
                       XN: gl.constexpr):
    """A post-norm row of several N tiles with the exchange one tile late (`LAG`; one consumer,
    no residual tile, no backward): after tile j's k-loop, y = EPI(acc) publishes its share of
    the row sums and goes, rounded to the output type (the naive kernel's own store of the
    unnormalized tile), into staging buffer j % 2; then tile j - 1 is finished: its row totals
    gathered (its row's other tiles, the same position of other CTAs, published them before
    their own next k-loop: normally no wait by now), its tile read back from its buffer,
    FIN(y, s0, s1) stored through the same buffer by TMA. The last tile is finished after the
    loop. Waits point to earlier positions of other CTAs only (every CTA publishes position j
    before waiting for position j - 1): no deadlock with every CTA resident. FIN reads the tile
    rounded to the output type, as the naive kernel's reload does (the other forms normalize
    the fp32 tile)."""
    BM: gl.constexpr = d0.c_desc.block_type.shape[0]
    BN: gl.constexpr = d0.c_desc.block_type.shape[1]
    BK: gl.constexpr = ring.a_desc.block_type.shape[1]
    mma_layout: gl.constexpr = mma_layout_for(BM, BN, WARPS)
    a_layout: gl.constexpr = a_layout_for(BM, BK, WARPS, mma_layout, hooks.STATS_ROWS)
    row_a: gl.constexpr = gl.SliceLayout(1, a_layout)
    row_c: gl.constexpr = gl.SliceLayout(1, mma_layout)
    xl: gl.constexpr = rows_layout(BM, XN, WARPS)
    k_tiles = gl.cdiv(prob.K, BK)
    T = gl.cdiv(prob.N, BN)
    Mp = (gl.cdiv(prob.M, BM) * BM).to(gl.int64)
    nw = _rows_work(prob.M, prob.N, BM, BN)
    zero = gl.zeros([BM], gl.float32, row_a)
    prev_m = 0
    prev_n = 0
    for j in range(nw):
        pid_m, pid_n = _rows_tile(j, prob.M, prob.N, BM, BN)
        acc = gl.zeros([BM, BN], gl.float32, mma_layout)
        acc, st0, st1, c0 = _mainloop(
            ring, j * k_tiles, k_tiles, pid_m, eargs, acc, zero, zero, zero, hooks,
            hooks.HAS_PRE, hooks.HAS_STATS, a_layout)
        y = hooks.EPI(acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),
                      gl.convert_layout(c0, row_c), pid_m, pid_n, eargs)
        p0, p1 = hooks.ROWS(y, pid_m, pid_n, eargs)
        # (published even for a one-tile row, T = 1, which then gathers its own words: the
        # pass plans rows of several tiles only)
        _publish_rows(sbuf, pid_m, pid_n, T, Mp, p0, p1, epoch, BM, hooks.NPOST == 2, row_c)
        # (its buffer's previous TMA store, tile j - 2's, has left it: a k-loop ago)
        tma.store_wait(pendings=0)
        if j % 2 == 0:
            d0.c_smem.store(y.to(d0.c_desc.dtype))
        else:
            d1.c_smem.store(y.to(d1.c_desc.dtype))
        if j > 0:
            _finish_lagged(j - 1, d0, d1, hooks, eargs, sbuf, epoch, prev_m, prev_n, T, Mp,
                           mma_layout, row_c, xl, BM, BN, XN)
        prev_m = pid_m
        prev_n = pid_n
    if nw > 0:
        _finish_lagged(nw - 1, d0, d1, hooks, eargs, sbuf, epoch, prev_m, prev_n, T, Mp,
                       mma_layout, row_c, xl, BM, BN, XN)
    tma.store_wait(pendings=0)


@gluon.jit
def _finish_lagged(j, d0, d1, hooks, eargs, sbuf, epoch, pid_m, pid_n, T, Mp,
                   mma_layout: gl.constexpr, row_c: gl.constexpr, xl: gl.constexpr,
                   BM: gl.constexpr, BN: gl.constexpr, XN: gl.constexpr):
    """`_consumer_rows_lag`'s finish of its j-th tile, held rounded in staging tile j % 2: the
    row totals gathered from the row's published words, FIN, the store through the same tile."""
    t0, t1 = _row_totals(sbuf, pid_m, T, Mp, epoch, BM, XN, hooks.NPOST == 2, xl)
    s0 = gl.convert_layout(t0, row_c)
    s1 = gl.convert_layout(t1, row_c)
    if j % 2 == 0:
        out = hooks.FIN(d0.c_smem.load(mma_layout).to(gl.float32), s0, s1, pid_m, pid_n, eargs)
        _store_at(out, d0, pid_m * BM, pid_n * BN)
    else:
        out = hooks.FIN(d1.c_smem.load(mma_layout).to(gl.float32), s0, s1, pid_m, pid_n, eargs)
        _store_at(out, d1, pid_m * BM, pid_n * BN)


@gluon.jit
def _consumer_rows1(ring, prob, hooks, dst, res, eargs, order, sbuf, epoch, WARPS: gl.constexpr,
                    XN: gl.constexpr):
    # the second consumer of the ping-pong schedule (a worker partition)
    _consumer_rows(ring, prob, hooks, dst, res, eargs, order, sbuf, epoch, 1, 2, WARPS, XN)


# ---------------------------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------------------------

@gluon.jit
def ws_gemm_kernel(a_desc, b_desc, c_desc, r_desc, aux_desc, M, N, K, eargs, sbuf, epoch,
                   c1_desc, c2_desc, c3_desc, PRE: gl.constexpr, STATS: gl.constexpr,
                   AFN: gl.constexpr, EPI: gl.constexpr, ROWS: gl.constexpr, FIN: gl.constexpr,
                   HAS_PRE: gl.constexpr, HAS_STATS: gl.constexpr, HAS_AFN: gl.constexpr,
                   STAGES: gl.constexpr, GROUP_M: gl.constexpr, NCONS: gl.constexpr,
                   B_KN: gl.constexpr, LOADER_WARPS: gl.constexpr, LOADER_REGS: gl.constexpr,
                   CONS_REGS: gl.constexpr, SHARE: gl.constexpr, NPOST: gl.constexpr,
                   XN: gl.constexpr, RES: gl.constexpr, SIDE: gl.constexpr = None,
                   AUX: gl.constexpr = None, HAS_SIDE: gl.constexpr = False,
                   HAS_AUX: gl.constexpr = False, BWD: gl.constexpr = False,
                   NOUT: gl.constexpr = 1, S1: gl.constexpr = 0, S2: gl.constexpr = 0,
                   S3: gl.constexpr = 0, STATS_LATE: gl.constexpr = False,
                   HALVES: gl.constexpr = False, RELEASE_EARLY: gl.constexpr = False,
                   LAG: gl.constexpr = False, STATS_ROWS: gl.constexpr = False,
                   STATS_LANES: gl.constexpr = False, EPRE: gl.constexpr = None,
                   HAS_EPRE: gl.constexpr = False, STAGING_LATE: gl.constexpr = False,
                   num_warps: gl.constexpr = 4):
    """C[M, N] = EPI(A[M, K] @ B (+ statistics of A)) with A, B, C as TMA descriptors; B is [N, K]
    (`B_KN=False`, a Linear weight) or [K, N]. `eargs` is the tuple of runtime values the hooks
    read. `num_warps` is one consumer's warps (4: one warpgroup, 8: two on M). `SHARE`: the
    statistics computed once per row block and passed to its other tiles through `sbuf` (global
    memory, words stamped with `epoch`; see `_consumer_shared`, with HALVES each warpgroup on
    its half's rows; no A transform).
    `NPOST` > 0: a post-norm whose row spans several N tiles, C = FIN(EPI(...), row sums of
    ROWS(EPI(...)) over the whole row), the partial sums exchanged through `sbuf` in the
    whole-rows order (`_consumer_rows`; the launch gives T x G programs); `XN`: N tiles per step
    of the gather; `RES`: EPI reads a [BM, BN] tile of `r_desc` (a residual, or a plain
    epilogue's tile of a second matrix: hopper-ws{epilogue-tma}; None otherwise), loaded by TMA
    into the consumer's staging tile (not in the shared-statistics order). `BWD`: a norm backward (post-norm instances with
    a residual `r_desc`, the input x): every hook after the k-loop reads x's tile, SIDE makes 1-D
    stores per tile (`HAS_SIDE`), AUX a second output tile stored through `aux_desc` (`HAS_AUX`;
    None otherwise), FIN reads the tile rounded to the output type. Other instances never read
    `sbuf` and `epoch`. `NOUT` > 1 (plain and shared-statistics instances): C's columns are
    split among NOUT matrices, C[:, 0:S1] through `c_desc`, C[:, S1:S2] through `c1_desc`, ...
    (each member's [M, N_i] descriptor; the S_i multiples of BN; absent ones None).
    `STATS_LATE`: the statistics of a k-step's A tile computed after the wait for the previous
    k-step's wgmma instead of right after the issue (see `_mainloop`). `HALVES` (coop2, NCONS =
    2): both consumers work on every tile, each on half of its rows (`_consumer_half`); C's
    descriptor has [BM / 2, BN] boxes. `RELEASE_EARLY`: with late statistics, each k-step
    releases the previous slot before computing them (else after). `LAG` (with NPOST, one
    consumer, no residual tile, no backward): each tile finished one tile late, after the next
    tile's k-loop (`_consumer_rows_lag`; two staging tiles). `STATS_ROWS`: the k-loop reads the
    A tile for its statistics in a row layout (`a_layout_for`; not with an A transform);
    `STATS_LANES` (with it): the row sums kept per lane through the k-loop (`stat_lanes`).
    `HAS_EPRE` (not with NPOST): EPRE(pid_m, pid_n, eargs, BN) runs before each tile's k-loop
    (the epilogue's 1-D loads: their L2 latency hides under the k-loop) and EPI takes its values
    as an argument after `eargs`. `STAGING_LATE` (a plain instance with RES): each consumer hands
    its staging tile back to the loader after its next tile's first wgmma is issued instead of
    right after its output store (`_consumer`): the store's read of it drains under the k-loop."""
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem0 = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    order = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        if HALVES:  # each half releases every slot
            mbarrier.init(empty.index(i), count=2)
        else:
            mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(order.index(i), count=1)
    ring = Ring(a_desc, b_desc, a_bufs, b_bufs, ready, empty, B_KN)
    prob = Problem(M, N, K, GROUP_M)
    # a split output's members (placeholders where absent)
    if NOUT > 1:
        c1 = c1_desc
    else:
        c1 = c_desc
    if NOUT > 2:
        c2 = c2_desc
    else:
        c2 = c_desc
    if NOUT > 3:
        c3 = c3_desc
    else:
        c3 = c_desc
    # what the pass never plans (the template would drop a statistic or ignore an output)
    gl.static_assert(not HALVES or (NCONS == 2 and not RES and not BWD and NPOST == 0),
                     "HALVES: two consumers, no residual tile, backward or post-norm rows")
    gl.static_assert(not STAGING_LATE or (RES and NPOST == 0 and not HALVES and not SHARE),
                     "STAGING_LATE: a plain instance's tile of a second matrix")
    gl.static_assert(not LAG or (NPOST > 0 and NCONS == 1 and not RES and not BWD
                                 and not HAS_AUX and not HAS_SIDE),
                     "LAG: post-norm rows, one consumer, no residual tile, backward or side output")
    # (the row layout only without an A transform: those registers are the wgmma's operand)
    hooks = HookFns(PRE, STATS, AFN, EPI, ROWS, FIN, HAS_PRE, HAS_STATS, HAS_AFN, NPOST, SIDE,
                    AUX, HAS_SIDE, HAS_AUX, BWD, STATS_LATE, RELEASE_EARLY,
                    STATS_ROWS and not HAS_AFN, STATS_LANES and STATS_ROWS and not HAS_AFN,
                    EPRE, HAS_EPRE, STAGING_LATE)
    if NPOST > 0:
        res_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        res_free = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(2):
            mbarrier.init(res_ready.index(i), count=1)
            mbarrier.init(res_free.index(i), count=1)
        if NCONS == 2 or LAG:
            c_smem1 = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        else:
            c_smem1 = c_smem0
        o0 = Output(c_desc, c_smem0, c1, c2, c3, NOUT, S1, S2, S3)
        o1 = Output(c_desc, c_smem1, c1, c2, c3, NOUT, S1, S2, S3)
        if HAS_AUX and RES:
            res = Residual(r_desc, c_smem0, c_smem1, res_ready, res_free, True, aux_desc)
        elif HAS_AUX:  # (a training forward without a residual: r_desc a placeholder)
            res = Residual(aux_desc, c_smem0, c_smem1, res_ready, res_free, False, aux_desc)
        elif RES:
            res = Residual(r_desc, c_smem0, c_smem1, res_ready, res_free, True, c_desc)
        else:
            res = Residual(c_desc, c_smem0, c_smem1, res_ready, res_free, False, c_desc)
        if LAG:
            gl.warp_specialize([
                (_consumer_rows_lag, (ring, prob, hooks, o0, o1, eargs, sbuf, epoch, num_warps,
                                      XN)),
                (_loader_rows, (ring, prob, res, BM, BN, 1)),
            ], [LOADER_WARPS], [LOADER_REGS])
        elif NCONS == 2:
            gl.warp_specialize([
                (_consumer_rows, (ring, prob, hooks, o0, res, eargs, order, sbuf, epoch, 0, 2,
                                  num_warps, XN)),
                (_consumer_rows1, (ring, prob, hooks, o1, res, eargs, order, sbuf, epoch,
                                   num_warps, XN)),
                (_loader_rows, (ring, prob, res, BM, BN, 2)),
            ], [num_warps, LOADER_WARPS], [CONS_REGS, LOADER_REGS])
        else:
            gl.warp_specialize([
                (_consumer_rows, (ring, prob, hooks, o0, res, eargs, order, sbuf, epoch, 0, 1,
                                  num_warps, XN)),
                (_loader_rows, (ring, prob, res, BM, BN, 1)),
            ], [LOADER_WARPS], [LOADER_REGS])
    elif HALVES and SHARE:
        c_smem1 = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        o0 = Output(c_desc, c_smem0, c1, c2, c3, NOUT, S1, S2, S3)
        o1 = Output(c_desc, c_smem1, c1, c2, c3, NOUT, S1, S2, S3)
        TM: gl.constexpr = a_desc.block_type.shape[0]  # the tile's rows (C's boxes are half)
        gl.warp_specialize([
            (_consumer_shared, (ring, prob, hooks, o0, eargs, sbuf, epoch, num_warps, 0, True)),
            (_consumer_shared1, (ring, prob, hooks, o1, eargs, sbuf, epoch, num_warps)),
            (_loader_shared, (ring, prob, TM, BN)),
        ], [num_warps, LOADER_WARPS], [CONS_REGS, LOADER_REGS])
    elif HALVES:
        c_smem1 = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        res = _plain_residual(r_desc, c_desc, c_smem0, c_smem1, False)
        o0 = Output(c_desc, c_smem0, c1, c2, c3, NOUT, S1, S2, S3)
        o1 = Output(c_desc, c_smem1, c1, c2, c3, NOUT, S1, S2, S3)
        TM: gl.constexpr = a_desc.block_type.shape[0]  # the tile's rows (C's boxes are half)
        gl.warp_specialize([
            (_consumer_half, (ring, prob, hooks, o0, eargs, 0, num_warps)),
            (_consumer_half1, (ring, prob, hooks, o1, eargs, num_warps)),
            (_loader, (ring, prob, res, TM, BN, 2)),
        ], [num_warps, LOADER_WARPS], [CONS_REGS, LOADER_REGS])
    elif NCONS == 2:
        c_smem1 = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        res = _plain_residual(r_desc, c_desc, c_smem0, c_smem1, RES)
        o0 = Output(c_desc, c_smem0, c1, c2, c3, NOUT, S1, S2, S3)
        o1 = Output(c_desc, c_smem1, c1, c2, c3, NOUT, S1, S2, S3)
        gl.warp_specialize([
            (_consumer, (ring, prob, hooks, o0, res, eargs, order, 0, 2, num_warps)),
            (_consumer1, (ring, prob, hooks, o1, res, eargs, order, num_warps)),
            (_loader, (ring, prob, res, BM, BN, 2)),
        ], [num_warps, LOADER_WARPS], [CONS_REGS, LOADER_REGS])
    elif SHARE:
        o0 = Output(c_desc, c_smem0, c1, c2, c3, NOUT, S1, S2, S3)
        gl.warp_specialize([
            (_consumer_shared, (ring, prob, hooks, o0, eargs, sbuf, epoch, num_warps)),
            (_loader_shared, (ring, prob, BM, BN)),
        ], [LOADER_WARPS], [LOADER_REGS])
    else:
        res = _plain_residual(r_desc, c_desc, c_smem0, c_smem0, RES)
        o0 = Output(c_desc, c_smem0, c1, c2, c3, NOUT, S1, S2, S3)
        gl.warp_specialize([
            (_consumer, (ring, prob, hooks, o0, res, eargs, order, 0, 1, num_warps)),
            (_loader, (ring, prob, res, BM, BN, 1)),
        ], [LOADER_WARPS], [LOADER_REGS])


@gluon.jit
def _plain_residual(r_desc, c_desc, buf0, buf1, RES: gl.constexpr):
    """The `Residual` of a plain (or ping-pong) instance: with RES its barriers (the staging
    tiles `buf0` / `buf1` receive the epilogue's tile of `r_desc`), else placeholders."""
    if RES:
        ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        free = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(2):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(free.index(i), count=1)
        return Residual(r_desc, buf0, buf1, ready, free, True, c_desc)
    else:  # (placeholders: nothing reads them)
        return Residual(c_desc, buf0, buf1, buf0, buf1, False, c_desc)


# ---------------------------------------------------------------------------------------------
# Helpers the generated hooks call
# ---------------------------------------------------------------------------------------------

@gluon.constexpr_function
def vec_layout(n, num_warps):
    """A coalesced 1-D layout: consecutive elements on consecutive threads."""
    return gl.BlockedLayout([max(1, n // (32 * num_warps))], [32], [num_warps], [0])


@gluon.constexpr_function
def _differs(la, lb):
    return not isinstance(lb, gl.AutoLayout) and la != lb


@gluon.jit
def fit(a, b):
    """`a` in `b`'s layout (when `b` has a concrete one that differs), for 1-D elementwise ops."""
    if _differs(a.type.layout, b.type.layout):
        a = gl.convert_layout(a, b.type.layout)
    return a


@gluon.jit
def colvec_load(ptr, pid_n, N, BN: gl.constexpr):
    """A per-column fp32 vector (N entries at `ptr`) for a tile's BN columns, loaded coalesced
    (`colvec_fit` moves it to the accumulator's column layout): the generated hooks issue their
    1-D loads first, before the conversions' barriers, so their latencies overlap."""
    offs = pid_n * BN + gl.arange(0, BN, layout=vec_layout(BN, gl.num_warps()))
    return gl.load(ptr + offs, mask=offs < N, other=0.0)


@gluon.jit
def colvec_fit(v, acc):
    """A coalesced per-column vector (`colvec_load`) in the accumulator's column layout."""
    return gl.convert_layout(v, gl.SliceLayout(0, acc.type.layout))

