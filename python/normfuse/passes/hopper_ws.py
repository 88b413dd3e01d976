"""hopper-ws: plan the lowering of a fused GEMM-shaped kernel to the warp-specialized Hopper
template.

What it does
------------
The fusion passes leave a kernel whose heavy part is one k-loop: two tile loads (A [BM, BK] and
B) feeding a `tt.dot`, side reductions of the A tiles (the statistics lazy-prenorm moved into the
loop), perhaps an elementwise A transform (g and beta applied in the loop), and an epilogue on the
accumulator (the row scale, the LayerNorm correction, a bias) before one masked store. Triton 3.6
does not warp-specialize such a loop on sm_90 and its pipeliner cannot give the statistics the
MMA's own tile (docs/design.md). This pass matches that structure and returns a frozen plan
(`normfuse.ir.ws_plan.WSPlan`): the operands and their sizes as kernel parameters, the tile and
the schedule, and everything that is not the GEMM as four expression DAGs over the values the
template provides (PRE, STATS, AFN, EPI; a post-norm over several N tiles adds ROWS and FIN). The
backend (`normfuse.lowering`) turns the plan into the template's Gluon instance (a TMA loader warpgroup, wgmma warpgroups that also accumulate the
statistics from the same shared A tile, persistent tiles); the pipeline then replaces the module
by that instance's TTGIR (`ttg.warp_specialize`, sm_90).

Before (after lazy-prenorm, RMSNorm with g folded; one program per tile or persistent)::

    %acc:4 = scf.for %k = 0 to cdiv(K, 64) iter_args(%pa, %pw, %acc = 0, %ss = 0) {
      %x = tt.load %pa, %kmask, 0   %w = tt.load %pw, ...   %d = tt.dot %x, %w, %acc
      %x2 = tt.load %pa ... cg      %ss' = %ss + reduce(extf(%x2) * extf(%x2)) ... }
    %r = 1 / sqrt(%acc#3 / K + eps)      tt.store %Y + rows * stride + cols, truncf(%acc#2 * %r)

The plan's hooks::

    STATS: st0' = st0 + sum(af * af, axis=1)                   # the loop's statistics
    EPI:   out  = acc * expand_dims(1 / sqrt(st0 / K + eps), 1)

After (the backend, through the pipeline)::

    ttg.warp_specialize(...)        default: 2 wgmma warpgroups (STATS, EPI inlined)
    partition0: 4 warps             TMA loads of A [128, 64] and W [256, 64] into a 3-slot ring

Legality (a kernel that fails leaves the IR unchanged, with one "missed" remark per blocker)
---------------------------------------------------------------------------------------------
The analysis goes on past a blocker wherever what failed is not needed to read the rest, so one
compilation names every blocker (`[i/n]`), each with its fix in the kernel's terms (its parameter
names: "the A tile (X) is not contiguous along K: its stride along K, 'stride_xk', is a runtime
value; 'stride_xk': pass it as 1 ... or declare it tl.constexpr").

1. One `tt.func` whose output tiles are computed by one `tt.dot` (bf16 or fp16 operands, fp32
   accumulator) in an `scf.for`; the accumulator is an iter_arg that starts at zero and is used
   only by the dot. Or the same tile computation repeated over the N tiles of a row block, in
   the two forms a row walk takes after lazy-prenorm: peeled (`for n: if n == first: k-loop with
   the statistics, scale; carry them else: k-loop, scale by the carried values` and one store)
   or unrolled (`tl.static_range`: one dot and one store per N tile, N a constant). Every copy
   must read the same operands and translate to the same hooks once the carried values are bound
   to the first copy's (which depend on the row block only: row statistics, the first tile's
   shift): the template then computes every tile alike, the statistics per tile.
2. The A tile is a 2-D load in the loop at `base + rows * stride + k` (rows = tile * BM + r, maybe
   `% M`; k = r + BK * step, unit stride), or a tensor-descriptor load; B likewise, as W [N, K]
   (k unit stride) or [K, N] (n unit stride). Masks may only cut off rows >= M, columns >= N and
   k >= K (TMA zero-fills there) and negative indices (a block pointer's boundary check), with
   `other` zero. The loop covers exactly cdiv(K, BK) k-steps. Addresses are read as canonical
   forms (`normfuse.ir.affine`, sign extensions looked through: the index arithmetic is taken not
   to wrap, as TMA's coordinates do not): any association and order of the terms, tile indices or
   offsets, pointers advanced or recomputed, block pointers (Triton rewrites them to such loads
   with i64 offsets). A unit stride must be a constant: a stride parameter is one only when the
   launch specializes it (Triton makes an integer argument equal to 1 a constant).
3. Rows and columns of both loads and of the store come from two scalars (the tile coordinates):
   the template owns the tile order and the persistence, so the lowered kernel computes every tile
   of the [M, N] output whatever order the kernel walked them in. The kernel must therefore cover
   its whole output (every launch of the ops does; a hand launch with a partial grid would differ).
   M and N come from the masks, else (unmasked kernels on divisible shapes) from how the kernel
   walks the tiles: `% cdiv(N, BN)`, a loop over cdiv(M, BM) row blocks or over
   cdiv(M, BM) * cdiv(N, BN) tiles; a kernel whose grid alone sets them is refused. Nothing that
   `affine.undetermined` flags may be behind the loads' and the store's addresses (masks and
   descriptor coordinates included), nor behind a scalar bound to a tile coordinate in the hooks:
   the template replaces the coordinate's form by its own tile index, and a form does not tell
   `tl.sum(c)` from `tl.max(c)`, nor a load before a store from one after it.
4. Exactly one side effect per tile computation: the store of a [BM, BN] tile at
   `Y + rows * stride + cols` masked by rows < M and cols < N only, or through a tensor descriptor
   of Y [M, N] at (tile * BM, tile * BN) (or, for a post-norm, the two stores of rule 7). Rows,
   columns and K rows must be 16-byte aligned at launch (TMA); a launch that is not falls back to
   the unlowered kernel.
5. Every other loop-carried value is a sum over k that starts at zero: row statistics of the A tile
   (`st + c` for any [BM] contribution c of the k-step: `reduce(E(a), axis=1)`, or `... / K`, or
   a [BM, BK] tile reduced after the loop; at most two), or column sums of the B tile
   (`cs + reduce(w [* g[:, None]], axis=0)`), which depend only on the weight: they become
   derived arguments, computed once per weight version at launch (the LayerNorm correction
   colsum(diag(g) W); the template never reads B outside the MMA). Integers (offsets) are read as
   addresses.
6. Everything else (the A transform, row vectors computed from the first A tile, the epilogue)
   must be made of elementwise ops, broadcasts, 1-D loads and single-op reductions over values the
   template provides. Row reductions of the accumulator (a post-norm) are lowered only with
   `post-norm=true`: measured on the H200 (2026-11-30), the template's first one-CTA and cluster
   post-norms were slower than cluster-reduce and epilogue-norm's Triton kernels (docs/NOTES.md);
   the form of rule 7 is new and not yet measured. A reduction in the epilogue is the tile's own
   (a one-tile row, after epilogue-norm, or a norm per tile): the template computes it as is.
7. Post-norm over several N tiles (`post-norm=true`): the naive kernel's two passes over the row
   (kernels/postnorm_gemm.py, `_two_passes`): loop 1 over the row's T tiles (constant bounds
   0..T step 1) holds the k-loop, stores the tile v (bias, residual, masks: EPI) and carries the
   row sums `s_j + reduce(g_j(v), axis=1)` (at most two: ROWS); loop 2 over the same T tiles
   reloads what loop 1 stored in the same trip (same address and mask under the shared trip
   index) and stores the normalized tile there (FIN, the reload bound to v in fp32: one rounding,
   as epilogue-norm does; the first store is overwritten everywhere it wrote). The sums split
   over the row's tiles, so the template computes each tile's share on its own CTA and adds the
   T shares (a deterministic order: every tile of a row gets bitwise the same sums). The tiles of
   a row block run at once on T distinct CTAs (the whole-rows order, `ws_gemm._rows_tile`, with
   its deadlock argument); the shares pass as stamped 64-bit words (value, launch epoch) in
   global memory, like the shared pre-norm statistics. A 2-D tile of another matrix read at the
   output tile's place (a residual) is loaded by TMA. The launch refuses rows of more N tiles
   than SMs (the unlowered kernel runs). LayerNorm exchanges sum y and sum y^2 as the naive kernel
   computes them (from the fp32 tile: accurate to |mean| ~ 300 std, NOTES "LayerNorm: one
   exchange or two").
8. A norm backward (`post-norm=true`; kernels/backward.py's dX kernel, docs/NOTES.md "The
   pre-norm dX kernel through hopper-ws"): rule 7's two passes whose first pass also stores side
   outputs, tt.store ops of loop 1 to kernel arguments that no load of the kernel reads and the
   output store does not write (distinct pointer arguments are taken not to alias, as the naive
   kernel's own order of stores and reloads already assumes). A [BM, BN] side output at the
   output tile's place (the norm's output n, for dW) becomes AUX, stored by TMA through the
   staging tile (at most one, in the output's type); 1-D side outputs (the dg / dbeta column
   partials, `DGP + pid * N + cols`) become SIDE, translated whole (address, value, mask): the
   template computes every output tile exactly once, so each (row block, N tile) partial is
   stored once, as the naive kernel stores it once per program and trip (the partials stay per
   row block: the lowered kernel's row block is the naive kernel's program, same BM). The input
   x, read at the output tile's place by loop 1 (xhat for the row sums, n, the partials) and
   again by loop 2 (the same address and mask, trip by trip), is one TMA tile (`res`) that every
   hook after the k-loop reads; side outputs without it are refused. A second [BM, BN] tile that
   the normalizing loop alone reads (a residual gradient added to dx: the regrouped post-norm
   block's form) stays a pointer load, translated into FIN (it is read once per tile, after the
   exchange; measured at coop 128 x 128, N = R = 1024: +4 bytes of spills a thread against the
   same kernel without it, no TMA descriptor or staging tile added); a second tile read by the
   first pass is refused (only x comes by TMA). FIN reads the tile rounded to the output type, as the
   naive kernel's reload does (the row sums and side outputs use the fp32 tile, as it does): du
   and x are held across the exchange in 16 bits (at 128 x 256 du in fp32, x and g's column
   slice do not fit the consumer's 232 registers: the ops take 128 x 128). A row of one N tile
   (Triton folded the one-trip loops: du stored, reloaded and stored over in one block) is the
   two passes with T = 1 (`_one_tile_passes`), without an exchange.
9. A post-norm's training forward (`post-norm=true`; kernels/postnorm_gemm.py's train kernels
   with SAVE_STATS=False): rule 7's two passes whose first pass also stores the tile before the
   norm, h, to a second matrix at the output tile's place (for the backward). No tile is read
   again after EPI, so the side outputs are rule 8's without x: AUX's value is EPI's fp32 tile y
   rounded to the output type (the naive kernel stores the same rounding of the same values),
   stored by TMA through the staging tile before the exchange; 1-D side outputs likewise. Row
   statistics stored after the normalizing loop (rstd, mean: SAVE_STATS=True) are refused (rule
   4: one store outside the GEMM's loop); the backward then computes them from h. Not with
   row-lag (its second staging tile is the lagged tile's) or coop2.

Options
-------
schedule = auto | coop         coop: one 128x256 tile on two wgmma warpgroups in one partition;
         | coop2 | pingpong     pingpong: two 128-row tiles, one per warpgroup, main loops taking
                                turns; coop2: coop's tiles with each warpgroup in its own partition
                                on its half of the rows (each releases the ring's slots itself: no
                                barrier of both warpgroups per k-step; each stores its [BM / 2, BN]
                                half; a split output's members take the halves by their
                                columns). Not with a residual tile, a second output tile, a
                                post-norm's rows, a norm backward or hooks that index the tile's
                                rows; with stats-share each warpgroup shares its half's rows
                                (asked for by name: auto keeps sharing on coop, the models'
                                shapes not measured yet). auto (default): coop2 for a
                                kernel with row statistics in the k-loop and the A tile straight
                                from shared memory (g, beta folded) where coop2 takes it (the
                                remark says why not where it does not), coop otherwise. Measured on
                                the H200 (2026-12-02, bench/results/2026-12-02/session15, fused /
                                cuBLAS, same run): the models' 45 pre-norm shapes coop2 with
                                release-early 1.097 (geometric mean) against coop 1.164 and coop
                                with stats-share 1.186; RMSNorm fastest in 25 of 36 cells, within
                                2.7 % of the fastest elsewhere; on the blog's 9 cells faster than
                                coop in 8 of 9 (two runs); LayerNorm coop2
                                at or below coop in 9 of 9 model cells (by up to 1.6 %) and on the
                                blog cells 9 of 9 in one run, 4 of 9 in another; the plain GEMM
                                (no statistics) mixed (faster on the blog cells, 3 % slower at
                                8192 x 4096 x 4096): coop
stages = 0 | 2..6               TMA ring depth (0: the most that fits, at most 3 for coop and coop2,
                                4 ping-pong)
stats-share = false             the row statistics once per row block: the tiles run in an order
                                where a row block's first tile comes at least a wave before its
                                other tiles; it computes the statistics in the MMA warps and stores
                                them in global memory as 64-bit words (value, launch epoch); the
                                other tiles run the plain k-loop and take the words stamped with
                                their launch's epoch in their epilogue. Same numbers, bitwise.
                                Needs all CTAs of the persistent grid resident at once (grid <=
                                SMs, one CTA per SM); not with an A transform (g folded). Measured
                                faster from 8 N tiles per row block (the pre-norm ops use it there
                                for LayerNorm, on coop). On coop2 (schedule=coop2): 1.6-2.2 %
                                faster than coop2 without it at 8 N tiles, 3 % slower at 4 (H200,
                                steady state at the power cap, blog cells; 2026-12-03, session16)
post-norm = false               lower post-norms (rules 6 and 7) and norm backwards (rule 8;
                                directly on the naive kernel, rows of 2+ N tiles): run after epilogue-norm, which
                                puts one-tile rows in registers (`epilogue-norm,hopper-ws{post-norm=
                                true}`); not after cluster-reduce (the template takes the naive
                                kernel's rows, not a cluster's). Needs, like stats-share, every CTA
                                of the grid resident at once. Pingpong takes 64x256 tiles (two
                                accumulators of 64 rows: one consumer's exchange and epilogue run
                                while the other's k-loop does)
release-early = auto | true    with the statistics after the wait (RMSNorm's stats-late), release
         | false                the previous k-step's ring slot before computing them, not after
                                (the loader refills it while they run); auto (default): wherever
                                the statistics are late, true: the same and a remark where they
                                are not. Measured (2026-12-02,
                                session15): RMSNorm coop2 on the models' shapes 1.097 against
                                1.143 without it (geometric mean over 45 cells, fused / cuBLAS);
                                coop 9 of 11 blog and big cells at or below without it
stats-late = auto | true | false where the k-loop computes the statistics: auto (default) after
                                the wait for the previous k-step's wgmma with one register sum
                                (STATS_LATE_MAX_SUMS: RMSNorm), right after the issue with two
                                (LayerNorm); true / false force either (not with a shift or an A
                                operand computed in the k-loop). LayerNorm's sums late were
                                measured slower on coop (session 14) and coop2 (session 25)
row-lag = false                 post-norm rows of several N tiles (post-norm=true) finished one
                                tile late: after tile j's k-loop it publishes its row sums and goes,
                                rounded (the naive kernel's own store), into staging tile j % 2,
                                then tile j - 1 gathers its totals (its row's other tiles published
                                them a k-loop ago: normally no wait), is read back, normalized and
                                stored. RMSNorm (one row sum), coop, no residual tile or backward;
                                two staging tiles must fit next to the ring (128x128 tiles at 3
                                stages, 128x256 at 2). H200 (2026-12-03): slower than coop in
                                every blog cell, 1.34-1.65x cuBLAS at 128x128 and 1.31-1.62x at
                                128x256 against coop's 1.03-1.26x: the same warpgroups still run
                                the epilogue, now with a shared-memory round trip more
epilogue-tma = false            a plain epilogue's [BM, BN] load of a second matrix at the output
                                tile's rows and columns (masked by rows < M, columns < N, same
                                element type as the output; the rowdot dX kernel's x) comes by TMA
                                into the output's staging tile during the k-loop instead of as a
                                pointer load in the epilogue (a [BM, BN] tile of 64-bit addresses
                                in registers: the 128x256 rowdot kernel spilled 804-1148 B). Not
                                with row statistics. Off by default until timed on the H200.
hoist-loads = true              the generated hooks issue their 1-D loads (column sums, a bias,
                                a norm weight) with their address arithmetic first, before the
                                layout conversions (a shared-memory round trip and a barrier each)
                                that had separated one load from the next: every tile's epilogue
                                paid one L2 round trip per vector in turn (LayerNorm's: two);
                                false keeps the DAG's order (the A/B's other arm). H200
                                (2026-12-04, session 26): a tie on the blog cells (LayerNorm
                                1.132-1.204x cuBLAS against 1.149-1.206x, RMSNorm 1.018-1.054x
                                against 1.015-1.054x); kept on
epi-prefetch = false            the epilogue's 1-D loads (column sums, a bias) and their
                                addresses issued before each tile's k-loop (a hook of their own,
                                EPRE, whose values EPI takes) instead of at the epilogue's start,
                                where every tile paid an L2 round trip before its first
                                conversion (LayerNorm's column sums: ~300-600 clk a tile at
                                K = 512, sm_90 SASS, session 29). Not for a post-norm's rows or a
                                norm backward; with hoist-loads. Not yet timed on the H200
staging-late = false            with epilogue-tma: each consumer hands its staging tile (the second
                                matrix's tile, then the output's) back to the loader after its next
                                tile's first wgmma is issued, not right after the output store:
                                the wait for the store's read of the tile (64 KB at 128x256)
                                leaves the epilogue and drains under the k-loop. Measured (H100,
                                2026-12-05, the rowdot dX kernel, coop 128x256): 1.32 -> 1.22x
                                cuBLAS's dX GEMM at 262144x1024x1024 (RMSNorm), unchanged at
                                8192-row cells; the rowdot plan's passes take it
stats-rows = auto | true | false the k-loop reads the A tile for its statistics in a row layout:
                                each thread a contiguous run of one row, 2 lanes to a row (one
                                shuffle per row sum and k-step instead of two for each of two
                                rows, 16-byte shared loads instead of ldmatrix) instead of the
                                wgmma A operand's layout; auto (default): wherever the k-loop has
                                statistics and no A operand computed in it, true: the same and a
                                note where it cannot apply, false: the operand's layout. H200
                                (2026-12-04, session 26, 11 cells, 5 rounds): fused / cuBLAS
                                LayerNorm 1.076-1.170 against 1.123-1.210 (every cell faster),
                                RMSNorm 0.986-1.050 against 1.000-1.061 (10 of 11 at or below).
                                Summing each thread's run in chunks of 8 (independent chains)
                                measured slower (RMSNorm 1.005-1.077)
stats-lanes = auto | true | false with stats-rows, each row sum kept through the k-loop as
                                per-lane partials ([rows, 2]: each of the two lanes that share a
                                row adds its own run) and the lanes combined once per tile: no
                                shuffle and no dependence on the other lane in the k-step; auto
                                (default): where stats-rows applies, every statistic is a row sum
                                of the A tile and the sums follow the wgmma issue (not
                                stats-late: LayerNorm's two), true: wherever it applies (also late
                                sums) and a note where it cannot, false: one sum per row, combined
                                in every k-step. H200 (2026-12-04, session 27, 11 cells, 5
                                rounds): LayerNorm 1.052-1.151x cuBLAS against 1.074-1.163 (10
                                of 11 cells faster); RMSNorm's late sum a tie (0.984-1.031
                                against 0.970-1.040), so auto leaves it

Options measured slower and chosen by no default were removed (their numbers are in
docs/NOTES.md): row-major tile runs (`rows-max-k`), a statistics partition reading A from L2
(`stats-partition`), the first post-norms in the template (`epilogue-reductions`, clusters),
LayerNorm's row sum by an extra wgmma per k-step (`stats-mma`: 1.375 against 1.175 x cuBLAS,
session 15).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import Module, Op, Value
from ..ir import ops
from ..ir import ws_plan as P
from ..ir.affine import (REM, TRIP, DimIndex, Forms, NotAffine, Poly, conditions, divide,
                         dims_of, drop_trip, is_scalar, memory_written, position, split_dims,
                         swap_dims, trip, undetermined)
from ..ir.cluster_ptx import MARK as CLUSTER_MARK
from ..ir.effects import writes_memory
from ..ir.match import ForLoop, is_zero_constant
from ..ir.ops import (IfOp, LoadOp, ReduceOp, StoreOp, element_of as element, int_constant,
                      shape_of as shape)
from ..ir.query import (cmp_predicate, constant_value, desc_info, func_params, is_pointer,
                        make_range_bounds)
from . import Pass, PassError, PassRun

_DTYPES = {"bf16": "bf16", "f16": "fp16"}


class _Miss(Exception):
    """One blocker: what stops the lowering (the message), where (`op`), and what the user can
    change in the kernel (`fix`), in the kernel's own terms (its parameter names)."""

    def __init__(self, msg: str, op: Op | None = None, fix: str = ""):
        super().__init__(msg)
        self.op = op
        self.fix = fix

    @property
    def text(self) -> str:
        return f"{self}; {self.fix}" if self.fix else str(self)


class _Blockers(Exception):
    """Every blocker the analysis found: it goes on past a blocker wherever what failed is not
    needed to read the rest, so one compilation names them all."""

    def __init__(self, misses: list[_Miss], matcher=None):
        super().__init__("; ".join(m.text for m in misses))
        self.misses = list(misses)
        self.matcher = matcher  # the tile's matcher when the tile is known


# what a user does about a stride that must be 1
_UNIT = ("pass it as 1 (normfuse.jit and normfuse.compile(args=) make an integer argument "
         "equal to 1 a constant, as Triton's launcher does) or declare it tl.constexpr")
_FIX_LOOP = "loop `for k in range(0, tl.cdiv(K, BK))` or `for k0 in range(0, K, BK)`"
_FIX_MASK = ("mask only rows < M, columns < N and k < K (joined with &), with other=0.0")


# ---------------------------------------------------------------------------------------------
# Analysis: the GEMM, its operands and the loop-carried sums
# ---------------------------------------------------------------------------------------------

@dataclass
class _Operand:
    """A tile operand while it is being read (the plan's `TileOperand` once complete)."""
    base: int
    rows: P.Source
    cols: P.Source
    stride: P.Source

    def frozen(self) -> P.TileOperand:
        return P.TileOperand(self.base, self.rows, self.cols, self.stride)


_NONE = P.Source()
_WIDEN = (ops.EXTSI, ops.EXTUI)
_UNKNOWN = ("unknown",)  # a tile coordinate whose operand could not be read (a blocker said why)
_UNREAD = ("unread",)  # _Matcher._written before `written` first computes it


def _same(a: P.Source | None, b: P.Source | None) -> bool:
    return a is not None and b is not None and a.param == b.param and a.value == b.value


class _Matcher:
    """Reads one output tile's computation: the dot, its loop, the A and B tiles, the store, the
    loop-carried sums. Tile coordinates are scalar forms (`self.pid_m`, `self.pid_n`; None: the
    first tile only). `aliases` maps an scf.if result to the value the branch this computation
    runs in yields for it. Blockers go to `self.blockers`; a section that fails leaves what it
    reads unknown and the sections after it go on where they can."""

    def __init__(self, module: Module, func: Op, dot: Op, store: Op, aliases=None, users=None):
        self.module = module
        self.users = users if users is not None else module.user_index()
        self.func = func
        self.params = func_params(func)
        self.pid = {id(p.value): i for i, p in enumerate(self.params)}
        self.dot, self.store = dot, store
        self.aliases = dict(aliases or {})
        self.blockers: list[_Miss] = []
        self.K = self.a = self.b = self.out = None
        self.pid_m = self.pid_n = _UNKNOWN
        self.m_limit = self.n_limit = None
        self.b_load = None
        self.n_from_coord = False
        self.row_stats: list[tuple[int, Value, str]] = []
        self.col_sums: list[tuple[int, P.ColumnSums]] = []
        self.res = self.res_load = None  # a post-norm's residual tile, read by TMA (`_residual`)
        self.fin_loads: list[Op] = []  # a norm backward's tiles read by FIN alone (pointer loads)
        self.post = None  # a post-norm's two passes over the row's N tiles (`_two_passes`)
        # a norm backward's side outputs (`_side_hooks`): a second output tile, 1-D stores
        self.aux_hook = self.aux_out = self.side_hook = None
        self.bwd = False  # FIN reads the tile rounded, every hook after the k-loop the input tile
        self.two_passes: list[Op] | None = None  # their two stores, when the kernel has them
        self._written = _UNREAD  # memory_written(func), read once (`written`)

    def users_of(self, v: Value) -> list[Op]:
        return self.users.get(id(v), [])

    def name(self, base: Value | None, what: str) -> str:
        """'A (X)': the operand and the kernel parameter it is read from."""
        i = self.pid.get(id(base)) if base is not None else None
        return f"{what} ({self.params[i].name})" if i is not None else what

    def describe(self, p: Poly) -> str:
        """A stride or size form as the user wrote it: 'stride_ak', '64', or 'a computed value'."""
        src = self.source(p)
        if src is not None and src.param is not None:
            return f"'{self.params[src.param].name}'"
        if src is not None:
            return str(src.value)
        return "a computed value"

    def runtime(self, p: Poly) -> str | None:
        """The parameter name when `p` is one runtime kernel argument, else None."""
        src = self.source(p)
        return self.params[src.param].name if src is not None and src.param is not None else None

    def _section(self, fn, *args):
        try:
            fn(*args)
            return True
        except _Miss as e:
            self.blockers.append(e)
        except NotAffine as e:
            self.blockers.append(_Miss(str(e)))
        return False

    def determined(self, op: Op, values, who: str) -> None:
        """Refuse (a _Miss on `op`) when `affine.undetermined` finds something behind `values`
        (the address, mask or descriptor coordinates of a tile access the matcher reads a tile
        coordinate from): the template substitutes its own tile index for the coordinate's form,
        and equal forms are equal values only where nothing undetermined is behind them
        (`pid * BM + tl.sum(c)` and `pid * BM + tl.max(c)` have one form)."""
        why = self.undetermined_value(*values)
        if why is not None:
            raise _Miss(f"{who}'s address is computed from something its form does not determine: "
                        f"{why}", op, "compute tile coordinates from tl.program_id, loop indices "
                        "and kernel arguments only")

    @property
    def written(self):
        """`affine.memory_written` of the kernel, computed once."""
        if self._written is _UNREAD:
            self._written = memory_written(self.func)
        return self._written

    def undetermined_value(self, *values) -> str | None:
        """`affine.undetermined` of `values` (None ignored) in this kernel and the k-loop."""
        return undetermined([v for v in values if v is not None], self.written,
                            self.forms.loops)

    # -- 1. structure ------------------------------------------------------------------------
    def run(self):
        dot = self.dot
        loop_op = dot.block.parent_op
        if loop_op is None or loop_op.name != ops.FOR:
            raise _Miss("the tt.dot is not directly in an scf.for", dot,
                        "accumulate with `acc = tl.dot(a, b, acc)` in the body of the loop over K")
        loop = ForLoop(loop_op)
        self.loop = loop
        a_v, b_v, c_v = dot.operands[:3]
        fix_acc = ("start the accumulator at tl.zeros before the loop over K, use it only as "
                   "tl.dot's third argument in the loop, and scale it after the loop")
        if c_v not in loop.iter_args:
            raise _Miss("the dot's accumulator is not carried by its loop", dot, fix_acc)
        self.acc_i = loop.iter_args.index(c_v)
        if loop.yields[self.acc_i] is not dot.results[0]:
            raise _Miss("the loop does not yield the dot's result as the accumulator", dot, fix_acc)
        if not is_zero_constant(loop.inits[self.acc_i]):
            raise _Miss("the accumulator does not start at zero", dot, fix_acc)
        if len(self.users_of(c_v)) != 1:
            raise _Miss("the accumulator has users besides the dot", dot, fix_acc)
        tshape = shape(dot.results[0])
        if len(tshape) != 2 or element(dot.results[0]) != "f32":
            raise _Miss("the dot is not a 2-D fp32-accumulating product", dot,
                        "accumulate in tl.float32")
        self.BM, self.BN = tshape
        self.BK = shape(a_v)[1]
        self.dtype = element(a_v)
        if self.dtype not in _DTYPES or element(b_v) != self.dtype:
            self.blockers.append(_Miss(
                f"dot operands are {element(a_v)} x {element(b_v)}; the template takes bf16 or "
                "fp16 (one type)", dot, "give tl.dot bf16 or fp16 tiles of one type"))
        if self.two_passes is not None:
            # a post-norm whose row spans several N tiles: the GEMM loop's store is the tile, the
            # normalizing loop's store the output
            self.post = _two_passes(self, self.two_passes)
            self.store = self.post.s1
        self.forms = Forms(loop, widen=True)
        self._section(self._k_bound)
        self._section(self._a_operand, a_v)
        self._section(self._b_operand, b_v)
        self._section(self._out)
        self._section(self._loop_values)

    def form(self, v: Value) -> Poly:
        f = self.forms.form(v)
        if not isinstance(f, Poly):
            raise NotAffine(f"'{v.owner.name if v.owner is not None else v.ref()}' is not an "
                            "integer expression of the parameters")
        return f

    def source(self, p: Poly) -> P.Source | None:
        """A form that is one kernel parameter or one constant."""
        c = p.constant()
        if c is not None:
            return P.Source(value=c)
        if len(p.terms) == 1:
            (m, c), = p.terms
            if c == 1 and len(m) == 1 and not m[0][1]:
                key = m[0][0]
                v = self.forms.argument(key)
                if v is not None and id(v) in self.pid:
                    return P.Source(param=self.pid[id(v)])
                if isinstance(key, tuple) and key[:1] and key[0] in _WIDEN and isinstance(key[2][0], Poly):
                    return self.source(key[2][0])  # a sign- or zero-extended parameter
        return None

    def pointer(self, v: Value, what: str) -> tuple[Value, Poly]:
        """(base parameter value, element offset form) of a pointer value."""
        f = self.forms.form(v)
        base, off = (f[1], f[2]) if isinstance(f, tuple) and f[:1] == ("ptr",) else (f, Poly({}))
        arg = self.forms.argument(base)
        if arg is None or not isinstance(off, Poly):
            raise NotAffine("the pointer is not a kernel parameter advanced by an integer offset")
        return arg, off

    # -- 2. loads ----------------------------------------------------------------------------
    def _k_bound(self):
        lb, ub, step = self.loop.bounds
        try:
            plb, pub, pstep = self.form(lb), self.form(ub), self.form(step)
        except NotAffine as e:
            raise _Miss(f"the k-loop's bounds: {e}", self.loop.op, _FIX_LOOP)
        if plb.constant() != 0:
            raise _Miss("the k-loop does not start at 0", self.loop.op, _FIX_LOOP)
        src = None
        if pstep.constant() == self.BK:
            src = self.source(pub)
        elif pstep.constant() == 1:
            # cdiv(K, BK) = (K + BK - 1) / BK
            op = ub.owner
            if op is not None and op.name == ops.DIVSI:
                num, den = self.forms.form(op.operands[0]), self.forms.form(op.operands[1])
                if isinstance(num, Poly) and isinstance(den, Poly) and den.constant() == self.BK:
                    src = self.source(num + Poly.const(1 - self.BK))
        if src is None:
            raise _Miss(f"the k-loop does not run over cdiv(K, {self.BK}) tiles of K "
                        "(0..cdiv(K, BK) step 1, or 0..K step BK)", self.loop.op, _FIX_LOOP)
        self.K = src

    def _tile_load(self, v: Value) -> Op | None:
        op = v.owner
        if op is not None and op.name in ops.LOADS and self.loop.contains(v):
            return op
        return None

    def _a_operand(self, a_v: Value):
        src = a_v
        if src.owner is not None and src.owner.name == ops.TRUNCF:
            src = src.owner.operands[0]
        load = self._tile_load(a_v)
        if load is None:
            # an A transform: find the one tile load it starts from
            loads = _tile_loads_feeding(src, self.loop.contains)
            if len(loads) != 1:
                raise _Miss("the dot's A operand is not computed from exactly one tile loaded "
                            f"in the loop ({len(loads)} found)", self.dot,
                            "load one A tile per k-step and compute tl.dot's first operand from it")
            load = loads[0]
            self.afn = src
        else:
            self.afn = None
        if shape(load.results[0]) != (self.BM, self.BK):
            raise _Miss("the A tile's shape differs from the dot's", load)
        self.a_load = load
        self.a = self._operand(load, "A", (self.BM, self.BK), k_dim=1)

    def _b_operand(self, b_v: Value):
        op = b_v.owner
        if op is not None and op.name == ops.TRANS:
            load = self._tile_load(op.operands[0])
            if load is None or load.name != ops.DESCRIPTOR_LOAD:
                raise _Miss("the dot's B operand is a transpose of something other than a "
                            "descriptor load", op, "load W's tile in the loop and pass it to tl.dot")
            self.b_load = load
            self.b = self._operand(load, "B", (self.BN, self.BK), k_dim=1)
            self.b_kn = False
            return
        load = self._tile_load(b_v)
        if load is None:
            raise _Miss("the dot's B operand is not a tile loaded in the loop (a B transform is "
                        "not lowered)", self.dot, "pass tl.dot the tile of W as loaded (fold "
                        "scales of W into W)")
        self.b_load = load
        if load.name == ops.DESCRIPTOR_LOAD:
            self.b = self._operand(load, "B", (self.BK, self.BN), k_dim=0)
            self.b_kn = True
            return
        # pointer load of a [BK, BN] tile: W [N, K] (k contiguous) or W [K, N] (n contiguous)
        base, dims, conds = self._address(load, "B")
        # [BK, BN] tile: dim 0 = k, dim 1 = n
        if dims[0].stride == Poly.const(1):   # W [N, K]: k contiguous, n rows of W
            swapped = [DimIndex(d.stride, swap_dims(d.index)) for d in (dims[1], dims[0])]
            self.b = self._read_dims(load, "B", base, swapped, [swap_dims(d) for d in conds],
                                     (self.BN, self.BK), 1)
            self.b_kn = False
        elif dims[1].stride == Poly.const(1):   # W [K, N]
            self.b = self._read_dims(load, "B", base, dims, conds, (self.BK, self.BN), 0)
            self.b_kn = True
        else:
            who = self.name(base, "the B tile")
            w = self.params[self.pid[id(base)]].name
            runtime = [n for n in (self.runtime(dims[0].stride), self.runtime(dims[1].stride)) if n]
            if runtime:
                raise _Miss(f"{who} has no dimension of unit stride: its strides along K and N are "
                            f"{self.describe(dims[0].stride)} and {self.describe(dims[1].stride)}"
                            f" ({', '.join(map(repr, runtime))} known only at launch; TMA reads "
                            "rows of unit stride)", load,
                            f"for the dimension {w} is contiguous in "
                            f"({' or '.join(map(repr, runtime))}), " + _UNIT)
            raise _Miss(f"{who} is not contiguous along K or N (strides "
                        f"{self.describe(dims[0].stride)} and {self.describe(dims[1].stride)})",
                        load, "read W with unit stride along K ([N, K], nn.Linear's layout) or "
                        "along N ([K, N])")

    def _operand(self, load: Op, what: str, tile: tuple, k_dim: int) -> _Operand:
        """A or B read as a [rows, cols] tile of a row-major matrix, k along `k_dim`."""
        if load.name == ops.DESCRIPTOR_LOAD:
            return self._desc_operand(load, what, k_dim)
        base, dims, conds = self._address(load, what)
        return self._read_dims(load, what, base, dims, conds, tile, k_dim)

    def _not_k_contiguous(self, load, what, base, dims, k_dim):
        """The blocker of a tile whose stride along K is not 1 (A, or B read as [N, K])."""
        who = self.name(base, f"the {what} tile")
        ks, rs = dims[k_dim].stride, dims[1 - k_dim].stride
        if rs == Poly.const(1):
            raise _Miss(f"{who} is not contiguous along K: its rows are (the matrix is stored "
                        "column-major)", load, "pass the matrix row-major, K contiguous "
                        "(x.contiguous())")
        name = self.runtime(ks)
        if name is not None:
            raise _Miss(f"{who} is not contiguous along K: its stride along K, '{name}', is a "
                        "runtime value (TMA reads rows of unit stride)", load, f"'{name}': " + _UNIT)
        raise _Miss(f"{who} is not contiguous along K (stride {self.describe(ks)})", load,
                    "read it with unit stride along K")

    def _coordinate(self, rest: Poly, size: int):
        """The tile coordinate P of `rest` = size * P (a scalar form), None when `rest` is 0;
        False when `rest` is not of that form."""
        if not rest.terms:
            return None
        q = divide(rest, size)
        if q is None or not is_scalar(q):
            return False
        return q

    def _read_dims(self, load, what, base, dims, conds, tile, k_dim) -> _Operand:
        other = 1 - k_dim
        kd, od = dims[k_dim], dims[other]
        who = self.name(base, f"the {what} tile")
        r, kk, rest = kd.parts(k_dim)
        if r != 1 or kk != self.BK or rest.terms or kd.modulus is not None:
            raise _Miss(f"{who} does not walk K by {self.BK} per k-step", load,
                        f"index K as k * {self.BK} + tl.arange(0, {self.BK}) in trip k (or "
                        f"advance the pointer by {self.BK} each trip)")
        r, kk, rest = od.parts(other)
        coord = self._coordinate(rest, tile[other])
        rows = "rows" if other == 0 else "columns"
        if r != 1 or kk != 0 or coord is False:
            raise _Miss(f"{who}'s {rows} are not tile * {tile[other]} + position", load,
                        f"index them as pid * {tile[other]} + tl.arange(0, {tile[other]}) with "
                        "pid the same in every k-step")
        limit = None
        if od.modulus is not None:
            limit = self.source(od.modulus)
            if limit is None:
                raise _Miss(f"{who}'s {rows} wrap around by something other than a parameter",
                            load, "wrap them with % of a kernel argument, or mask them")
        klimit = None
        for d in conds:
            lim = self._limit(d, dims, tile, load, who)
            if lim is None:
                continue
            which, src = lim
            if which == k_dim:
                klimit = src
            else:
                limit = src if limit is None or _same(limit, src) else None
                if limit is None:
                    raise _Miss(f"{who} is masked by two different row limits", load, _FIX_MASK)
        if klimit is not None and self.K is not None and not _same(klimit, self.K):
            raise _Miss(f"{who}'s k mask limit differs from the loop's K", load,
                        "mask K with the K the loop runs to")
        stride = self.source(od.stride if k_dim == 1 else kd.stride)
        if what == "A":  # the tile coordinate is known even when the layout is not the template's
            self.pid_m, self.m_limit = coord, limit
        if k_dim == 1 and kd.stride != Poly.const(1):
            self._not_k_contiguous(load, what, base, dims, k_dim)
        if stride is None:
            raise _Miss(f"{who}'s row stride is not a parameter or a constant", load,
                        "pass the row stride as a kernel argument (or a constant)")
        if what == "A":
            return _Operand(self.pid[id(base)], rows=limit or _NONE, cols=self.K or _NONE,
                            stride=stride)
        self.pid_n, self.n_limit = coord, limit
        if k_dim == 1:  # W [N, K]
            return _Operand(self.pid[id(base)], rows=limit or _NONE, cols=self.K or _NONE,
                            stride=stride)
        return _Operand(self.pid[id(base)], rows=self.K or _NONE, cols=limit or _NONE, stride=stride)

    def _limit(self, d: Poly, dims, tile, load, who):
        """The limit of one mask condition `D < 0`: (dimension, source), or None when the condition
        holds for every position of the tile (r < c with c >= the tile's extent, or index >= 0:
        tile coordinates and k offsets are never negative)."""
        involved = set().union(*(dims_of(m) for m, _ in d.terms)) if d.terms else set()
        if len(involved) != 1:
            if not involved and d.constant() is not None and d.constant() < 0:
                return None
            raise _Miss(f"{who}'s mask is not a bound on one dimension", load, _FIX_MASK)
        dim = involved.pop()
        # trivially true: position r < c with c >= the tile's extent
        c = _constant_term(d)
        rest = d + Poly.const(-c)
        if len(rest.terms) == 1 and position(rest, dim) == 1 and -c >= tile[dim]:
            return None
        # a lower bound: -index + c < 0 with c < 0 (a block pointer's boundary check)
        low = (dims[dim].inner + d).constant()
        if low is not None and low < 0:
            return None
        src = self.source(dims[dim].inner + d.scale(-1))
        if src is None:
            raise _Miss(f"{who}'s mask compares against something other than a parameter", load,
                        "compare rows, columns and k with kernel arguments (M, N, K)")
        return dim, src

    def _address(self, load: Op, what: str):
        """(base parameter value, per-dimension indices, mask conditions) of a pointer tile load
        whose masked lanes read zero (what TMA fills in)."""
        info = LoadOp(load)
        self.determined(load, [info.ptr, info.mask], f"the {what} tile")
        try:
            base, off = self.pointer(info.ptr, what)
            dims = split_dims(off, 2)
            conds = conditions(self.forms, info.mask) if info.mask is not None else []
        except NotAffine as e:
            raise _Miss(f"the {what} tile's address: {e}", load,
                        "address the tile as base + rows * row_stride + columns (k offset "
                        "k * BK in trip k)")
        if id(base) not in self.pid:
            raise _Miss(f"the {what} tile's base pointer is not a kernel parameter", load,
                        "pass the matrix as a kernel argument")
        if info.mask is not None and info.other is not None and not is_zero_constant(info.other):
            raise _Miss(f"{self.name(base, f'the {what} tile')}'s masked lanes are not zero "
                        "(TMA fills zeros)", load, "load with other=0.0")
        return base, dims, conds

    def _desc_operand(self, load: Op, what: str, k_dim: int) -> _Operand:
        dop = load.operands[0].owner
        info = desc_info(dop) if dop is not None else None
        if info is None or len(info.shape) != 2:
            raise _Miss(f"the {what} descriptor is not made in the kernel by "
                        "tt.make_tensor_descriptor of a 2-D tensor", load,
                        "make the descriptor in the kernel with tl.make_tensor_descriptor")
        if id(info.base) not in self.pid:
            raise _Miss(f"the {what} descriptor's base is not a kernel parameter", load,
                        "make the descriptor of a kernel argument")
        who = self.name(info.base, f"the {what} descriptor")
        self.determined(load, list(load.operands[1:3]), who)
        try:
            strides = [self.form(s) for s in info.strides]
            dims_src = [self.source(self.form(s)) for s in info.shape]
            coords = [self.form(c) for c in load.operands[1:3]]
        except NotAffine as e:
            raise _Miss(f"{who}: {e}", load)
        if strides[1] != Poly.const(1):
            name = self.runtime(strides[1])
            if name is not None:
                raise _Miss(f"{who}'s last stride, '{name}', is a runtime value (TMA needs it "
                            "to be 1)", load, f"'{name}': " + _UNIT)
            raise _Miss(f"{who} is not contiguous in its last dimension", load,
                        "describe a matrix whose last dimension has unit stride")
        stride = self.source(strides[0])
        if stride is None or None in dims_src:
            raise _Miss(f"{who}'s shape or stride is not a parameter", load,
                        "give the descriptor kernel arguments (or constants) as shape and strides")
        other = 1 - k_dim
        block = shape(load.results[0])
        kc, oc = coords[k_dim], coords[other]
        if kc != Poly.atom(TRIP).scale(self.BK):
            raise _Miss(f"{who} load does not walk K by {self.BK}", load,
                        f"load at k * {self.BK} in trip k")
        coord = self._coordinate(oc, block[other])
        if coord is False:
            raise _Miss(f"{who} load's coordinate is not tile * {block[other]}", load,
                        f"load at pid * {block[other]}")
        if self.K is not None and not _same(dims_src[k_dim], self.K):
            raise _Miss(f"{who}'s K differs from the loop's", load,
                        "give the descriptor the K the loop runs to")
        op = _Operand(self.pid[id(info.base)], rows=dims_src[0], cols=dims_src[1], stride=stride)
        if what == "A":
            self.pid_m, self.m_limit = coord, dims_src[0]
        else:
            self.pid_n, self.n_limit = coord, dims_src[other]
        return op

    # -- 3. the store ------------------------------------------------------------------------
    def _out(self):
        st = self.store
        view = StoreOp(st)
        ptr, val, mask = view.ptr, view.value, view.mask
        if shape(val) != (self.BM, self.BN):
            raise _Miss("the stored tile's shape differs from the accumulator's", st,
                        "store the [BM, BN] tile the dot accumulates")
        if self.loop.contains(val) or st.block is self.loop.body:
            raise _Miss("the output is stored inside the k-loop", st, "store after the loop over K")
        if view.is_descriptor:
            return self._desc_out(st, val)
        self.determined(st, [ptr, mask], "the output")
        try:
            base, off = self.pointer(ptr, "output")
            dims = split_dims(off, 2)
            conds = conditions(self.forms, mask) if mask is not None else []
        except NotAffine as e:
            raise _Miss(f"the store's address: {e}", st,
                        "store at Y + rows * row_stride + columns")
        if id(base) not in self.pid:
            raise _Miss("the store's base pointer is not a kernel parameter", st,
                        "pass the output as a kernel argument")
        who = self.name(base, "the output")
        if dims[1].stride != Poly.const(1):
            name = self.runtime(dims[1].stride)
            if dims[0].stride == Poly.const(1):
                raise _Miss(f"{who}'s rows are not contiguous: it is written column-major", st,
                            "write the output row-major ([M, N], N contiguous)")
            if name is not None:
                raise _Miss(f"{who}'s rows are not contiguous: its stride along N, '{name}', is "
                            "a runtime value (TMA writes rows of unit stride)", st,
                            f"'{name}': " + _UNIT)
            raise _Miss(f"{who}'s rows are not contiguous (stride {self.describe(dims[1].stride)} "
                        "along N)", st, "write the output with unit stride along N")
        for d, (coord, size) in enumerate(((self.pid_m, self.BM), (self.pid_n, self.BN))):
            r, kk, rest = dims[d].parts(d)
            got = self._coordinate(rest, size)
            if coord is _UNKNOWN and r == 1 and kk == 0 and got is not False:
                continue  # the loads' coordinate is unknown (their blocker said why)
            if r != 1 or kk != 0 or dims[d].modulus is not None or got is False or got != coord:
                raise _Miss(f"{who}'s {'rows' if d == 0 else 'columns'} are not the loads' tile "
                            f"coordinate * {size} + position", st,
                            f"store the tile the loads read: pid * {size} + tl.arange(0, {size})")
        stride = self.source(dims[0].stride)
        if stride is None:
            raise _Miss(f"{who}'s row stride is not a parameter or a constant", st,
                        "pass the output's row stride as a kernel argument (or a constant)")
        limits = {}
        for d in conds:
            inv = set().union(*(dims_of(m) for m, _ in d.terms)) if d.terms else set()
            if len(inv) != 1:
                raise _Miss(f"{who}'s mask is not a bound on rows or on columns", st, _FIX_MASK)
            dim = inv.pop()
            low = (dims[dim].inner + d).constant()
            if low is not None and low < 0:
                continue  # index >= 0 (a block pointer's boundary check)
            src = self.source(dims[dim].inner + d.scale(-1))
            if src is None or (dim in limits and not _same(limits[dim], src)):
                raise _Miss(f"{who}'s mask is not rows < M and columns < N", st, _FIX_MASK)
            limits[dim] = src
        M = limits.get(0) or self.m_limit or self._extent(self.pid_m, self.BM)
        N = limits.get(1) or self.n_limit or self._extent(self.pid_n, self.BN)
        # a constant coordinate c and nothing else bounding that side: the tiles up to c are all
        # the kernel writes (one tile, or the unrolled ones: see _unrolled_columns)
        if M is None and _constant(self.pid_m) is not None:
            M = P.Source(value=(_constant(self.pid_m) + 1) * self.BM)
        if N is None and _constant(self.pid_n) is not None:
            N = P.Source(value=(_constant(self.pid_n) + 1) * self.BN)
            self.n_from_coord = True
        for src, coord, name, axis in ((M, self.pid_m, "M", "rows"), (N, self.pid_n, "N", "columns")):
            if coord is _UNKNOWN:
                continue
            if src is None or src.param is None and src.value is None:
                raise _Miss(f"the output's {name} cannot be told from the store's mask, the "
                            f"loads or the loops: nothing in the kernel bounds its {axis} (the "
                            "launch grid alone does)", st,
                            f"mask the store with {axis} < {name} (free on divisible shapes)")
        self._set_output(st, val, base, M, N, stride)

    def _desc_out(self, st: Op, val: Value):
        """The output stored through a tensor descriptor made in the kernel: [M, N] with unit
        stride along N, written at (pid_m * BM, pid_n * BN) (TMA clips at its shape)."""
        view = StoreOp(st)
        dop = view.ptr.owner
        info = desc_info(dop) if dop is not None else None
        if info is None or len(info.shape) != 2 or id(info.base) not in self.pid:
            raise _Miss("the output descriptor is not made in the kernel by "
                        "tt.make_tensor_descriptor of a 2-D kernel argument", st,
                        "make the output's descriptor in the kernel with tl.make_tensor_descriptor")
        who = self.name(info.base, "the output descriptor")
        self.determined(st, list(view.indices), who)
        try:
            strides = [self.form(x) for x in info.strides]
            dims_src = [self.source(self.form(x)) for x in info.shape]
            coords = [self.form(x) for x in view.indices]
        except NotAffine as e:
            raise _Miss(f"{who}: {e}", st)
        if strides[1] != Poly.const(1):
            name = self.runtime(strides[1])
            raise _Miss(f"{who}'s last stride{f', {name!r},' if name else ''} is not 1", st,
                        f"'{name}': " + _UNIT if name else "describe a row-major output")
        stride = self.source(strides[0])
        if stride is None or None in dims_src or tuple(info.block) != (self.BM, self.BN):
            raise _Miss(f"{who}'s shape, stride or block is not [M, N], a parameter row stride and "
                        f"[{self.BM}, {self.BN}]", st,
                        "describe Y as [M, N] with block [BM, BN] from kernel arguments")
        for d, (coord, size) in enumerate(((self.pid_m, self.BM), (self.pid_n, self.BN))):
            got = self._coordinate(coords[d], size)
            if coord is _UNKNOWN and got is not False:
                continue
            if got is False or got != coord:
                raise _Miss(f"{who} store's {'rows' if d == 0 else 'columns'} are not the loads' "
                            f"tile coordinate * {size}", st, f"store at pid * {size}")
        M, N = dims_src
        self._set_output(st, val, info.base, M, N, stride)

    def _set_output(self, st: Op, val: Value, base, M, N, stride) -> None:
        """The output's M and N (checked against the loads' bounds), the operands' extents they
        give, and the output operand (base argument, row stride, dtype)."""
        for lim, ref, name in ((self.m_limit, M, "M"), (self.n_limit, N, "N")):
            if lim is not None and lim.param is not None and not _same(lim, ref):
                raise _Miss(f"the loads and the store use different {name}", st,
                            f"bound the loads and the store by the same {name}")
        self.M, self.N = M, N
        if self.a is not None:
            self.a.rows = M
        if self.b is not None:
            if self.b_kn:
                self.b.cols = N
            else:
                self.b.rows = N
        self.out = _Operand(self.pid[id(base)], rows=M, cols=N, stride=stride)
        self.out_dtype = element(val) if element(val) in _DTYPES else None
        if self.out_dtype is None:
            raise _Miss(f"the output is {element(val)}; the template stores bf16 or fp16", st,
                        "store the tile as bf16 or fp16")
        self.out_value = val

    def _extent(self, coord, size: int) -> P.Source | None:
        """The size (a parameter) a tile coordinate covers in `size` tiles, read from how the
        kernel walks it: `x % cdiv(P, size)`, the index of a loop running to cdiv(P, size) (or
        over offsets to P step size, `// size`), `t // cdiv(Q, n)` of a loop over
        cdiv(P, size) * cdiv(Q, n) tiles. Sound for the unmasked kernels it serves: they write
        whole tiles up to cdiv(P, size) * size, so P is a multiple of size wherever they are
        correct, and TMA clips at P. None when the kernel does not say (an unmasked kernel whose
        grid alone sets it)."""
        if coord is None or coord is _UNKNOWN or not isinstance(coord, Poly) or len(coord.terms) != 1:
            return None
        (mono, c), = coord.terms
        if c != 1 or len(mono) != 1:
            return None
        key = mono[0][0]
        loop = self._enclosing_loop(key)
        if loop is not None:  # the index of a loop over tiles (any start and step: persistent)
            return self._cdiv_of(self.forms.form(loop.bounds[1]), size)
        if not (isinstance(key, tuple) and len(key) >= 3 and isinstance(key[2], tuple)
                and len(key[2]) == 2):
            return None
        a, b = key[2]
        if key[0] in REM:  # x % cdiv(P, size)
            return self._cdiv_of(b, size)
        if key[0] == ops.DIVSI and isinstance(a, Poly) and isinstance(b, Poly):
            if b.constant() == size:  # offset // size of a loop over offsets to P step size
                loop = self._enclosing_loop(a.terms[0][0][0][0]) if len(a.terms) == 1 and \
                    a.terms[0][1] == 1 and len(a.terms[0][0]) == 1 else None
                if loop is not None:
                    lb, ub, step = (self.forms.form(x) for x in loop.bounds)
                    if isinstance(step, Poly) and step.constant() == size and isinstance(ub, Poly):
                        return self.source(ub)
                return None
            # t // cdiv(Q, n) of a loop over cdiv(P, size) * cdiv(Q, n) tiles
            if len(a.terms) == 1 and a.terms[0][1] == 1 and len(a.terms[0][0]) == 1:
                loop = self._enclosing_loop(a.terms[0][0][0][0])
                if loop is not None:
                    ub = self.forms.form(loop.bounds[1])
                    if isinstance(ub, Poly) and len(ub.terms) == 1 and ub.terms[0][1] == 1:
                        factors = [Poly.atom(k, p) for k, p in ub.terms[0][0]]
                        if len(factors) == 2 and b in factors:
                            other = factors[1] if factors[0] == b else factors[0]
                            return self._cdiv_of(other, size)
        return None

    def _enclosing_loop(self, key) -> ForLoop | None:
        """The scf.for (enclosing the k-loop) whose induction variable an atom key is."""
        v = self.forms.argument(key)
        if v is None or v.owner is not None:
            return None
        blk = v.block
        op = blk.parent_op if blk is not None else None
        if op is None or op.name != ops.FOR or not op.is_ancestor_of(self.loop.op):
            return None
        loop = ForLoop(op)
        return loop if v is loop.iv else None

    def _cdiv_of(self, f, size: int) -> P.Source | None:
        """P when form `f` is cdiv(P, size) = (P + size - 1) / size of a parameter P."""
        if not isinstance(f, Poly) or len(f.terms) != 1:
            return None
        (mono, c), = f.terms
        if c != 1 or len(mono) != 1:
            return None
        key = mono[0][0]
        if not (isinstance(key, tuple) and key[:1] == (ops.DIVSI,) and len(key[2]) == 2):
            return None
        num, den = key[2]
        if not (isinstance(num, Poly) and isinstance(den, Poly) and den.constant() == size):
            return None
        return self.source(num + Poly.const(1 - size))

    # -- 4. loop-carried sums ----------------------------------------------------------------
    def _loop_values(self):
        loop = self.loop
        fix = ("carry only sums that start at tl.zeros: row statistics of the A tile (at most "
               "two) or column sums of the W tile")
        for i, arg in enumerate(loop.iter_args):
            if i == self.acc_i or is_pointer(arg) or _integral(arg):
                continue  # addresses and offsets (block pointers' i64 offsets): read as forms
            y = loop.yields[i]
            if not is_zero_constant(loop.inits[i]):
                raise _Miss("a loop-carried value besides the accumulator does not start at zero",
                            loop.op, fix)
            yo = y.owner
            if yo is None or yo.name != ops.ADDF or arg not in yo.operands:
                raise _Miss("a loop-carried value is not a running sum", loop.op, fix)
            x = yo.operands[1] if yo.operands[0] is arg else yo.operands[0]
            xo = x.owner
            if len(shape(arg)) == 1 and shape(arg)[0] == self.BN and xo is not None \
                    and _is_sum_over(xo, 0):
                if self.b is not None:  # else B's blocker said why
                    self.col_sums.append((i, self._colsum(xo)))
            elif len(shape(arg)) == 1 and shape(arg)[0] == self.BM:
                # a row statistic: any [BM] contribution of the k-step (the hook translates it)
                self.row_stats.append((i, x, "row"))
            elif shape(arg) == (self.BM, self.BK):
                self.row_stats.append((i, x, "tile"))
            else:
                raise _Miss("a loop-carried sum is neither a row statistic of the A tile nor a "
                            "column sum of the B tile", yo, fix)
        if len(self.row_stats) > 2:
            raise _Miss(f"{len(self.row_stats)} row statistics; the template carries two", loop.op,
                        fix)

    def _colsum(self, red: Op) -> P.ColumnSums:
        """reduce(w, axis=0) or reduce(w * g[:, None], axis=0) of the B tile (k rows)."""
        x = red.operands[0]
        scale = None
        op = x.owner
        w = x
        if op is not None and op.name == ops.MULF:
            a, b = op.operands
            for t, s in ((a, b), (b, a)):
                if self._is_b_tile(t):
                    w, scale = t, self._k_vector(s, red)
                    break
            else:
                raise _Miss("a column sum of something other than the B tile (times a vector over K)", red)
        if not self._is_b_tile(w):
            raise _Miss("a column sum of something other than the B tile", red)
        return P.ColumnSums(self.b.base, scale)

    def _is_b_tile(self, v: Value) -> bool:
        """The B tile as the dot reads it (a reload of it, or the transpose of its descriptor
        load), possibly extended to fp32."""
        op = v.owner
        if op is not None and op.name == ops.EXTF:
            v = op.operands[0]
            op = v.owner
        if op is not None and op.name == ops.TRANS:
            v = op.operands[0]
            op = v.owner
        return op is not None and self.loop.contains(v) and _same_tile(op, self.b_load)

    def _k_vector(self, v: Value, at: Op) -> int:
        """A [BK, 1]-broadcast vector loaded from a parameter at k * BK + position (masked k < K):
        returns the parameter."""
        op = v.owner
        while op is not None and op.name in (ops.BROADCAST, ops.EXPAND_DIMS, ops.EXTF):
            v = op.operands[0]
            op = v.owner
        if op is None or op.name != ops.LOAD or len(shape(v)) != 1:
            raise _Miss("a column sum's scale is not a vector loaded over K", at)
        try:
            base, off = self.pointer(LoadOp(op).ptr, "scale")
        except NotAffine as e:
            raise _Miss(f"a column sum's scale: {e}", at)
        if id(base) not in self.pid or position(off, 0) != 1 or trip(off) != self.BK \
                or len(off.terms) != 2:
            raise _Miss("a column sum's scale is not loaded at k * BK + position from a parameter", at)
        return self.pid[id(base)]

    def first_tile(self, load: Op) -> bool:
        """Whether `load` (before the k-loop) reads the A tile of the first k-step (equal forms
        only where `affine.undetermined` finds nothing behind them)."""
        a = self.a_load
        if load.name != a.name:
            return False
        if self.undetermined_value(*load.operands, *a.operands):
            return False
        if load.name == ops.DESCRIPTOR_LOAD:
            if load.operands[0] is not a.operands[0]:
                return False
            return all(self.forms.form(x) == _first(self.forms.form(y))
                       for x, y in zip(load.operands[1:3], a.operands[1:3]))
        try:
            b1, p1 = self.pointer(LoadOp(load).ptr, "A")
            b2, p2 = self.pointer(LoadOp(a).ptr, "A")
        except NotAffine:
            return False
        return b1 is b2 and p1 == drop_trip(p2)


def _first(f):
    return drop_trip(f) if isinstance(f, Poly) else f


def _integral(v: Value) -> bool:
    e = element(v)
    return e.startswith("i") and e != "i1"


def _constant(coord) -> int | None:
    """The value of a constant tile coordinate (None: the first tile), else None."""
    if coord is None:
        return 0
    return coord.constant() if isinstance(coord, Poly) else None


def _constant_term(p: Poly) -> int:
    return sum(c for m, c in p.terms if m == ())


def _scalar_values(func: Op):
    """Every scalar integer value of a function: op results and block arguments (loop indices)."""
    def integer(v):
        return not shape(v) and element(v).startswith("i") and element(v) != "i1"
    for op in func.walk():
        for region in op.regions:
            for block in region.blocks:
                yield from (a for a in block.args if integer(a))
        yield from (r for r in op.results if integer(r))


def _is_sum_over(op: Op, axis: int) -> bool:
    """A tt.reduce that adds along `axis`."""
    red = ReduceOp.match(op)
    return red is not None and red.axis == axis and red.combining_op == ops.ADDF


def _same_tile(o: Op, load: Op) -> bool:
    """Whether `o` loads the same tile as `load` (the statistics' reload of the A tile)."""
    if o is load:
        return True
    if o.name != load.name:
        return False
    if o.name == ops.DESCRIPTOR_LOAD:
        return all(x is y for x, y in zip(o.operands, load.operands)) and len(o.operands) == len(load.operands)
    if o.name == ops.LOAD:
        a, b = LoadOp(o), LoadOp(load)
        return a.ptr is b.ptr and a.mask is b.mask
    return False


def _outer_row_vectors(m: _Matcher):
    """[(value, first-tile load)] for [BM] row vectors computed before the k-loop from a 2-D load
    (the first A tile: LayerNorm's shift) and used in the loop, directly or broadcast."""
    loop = m.loop
    out = []
    seen = set()
    for op in loop.op.walk():
        for v in op.operands:
            if id(v) in seen or v.owner is None or loop.op.is_ancestor_of(v.owner) or v.owner is loop.op:
                continue
            seen.add(id(v))
            u = v
            while u.owner is not None and u.owner.name in (ops.BROADCAST, ops.EXPAND_DIMS) \
                    and shape(u) != (m.BM,):
                u = u.owner.operands[0]
            if shape(u) != (m.BM,) or any(u is x for x, _ in out):
                continue
            loads = _tile_loads_feeding(u)
            if loads:
                if len(loads) != 1:
                    raise _Miss("a row vector from before the k-loop reads several tiles", u.owner)
                out.append((u, loads[0]))
    return out


def _tile_loads_feeding(v: Value, within=None) -> list[Op]:
    """The 2-D tile loads (pointer or descriptor) that `v` is computed from, not looking through
    a load; `within(value)` limits the walk (e.g. to the k-loop)."""
    out, seen, stack = [], set(), [v]
    while stack:
        x = stack.pop()
        op = x.owner
        if op is None or id(op) in seen or (within is not None and not within(x)):
            continue
        seen.add(id(op))
        if op.name in ops.LOADS:
            if len(shape(x)) == 2:
                out.append(op)
            continue
        stack.extend(op.operands)
    return out


def _acc_reductions(m: _Matcher, out: Value, stop=frozenset()) -> Op | None:
    """A tt.reduce over a [BM, BN] value in the epilogue's slice (a post-norm's row statistic);
    the walk stops at the ops in `stop` (a folded row's row sums, bound to s0, s1)."""
    seen, stack = set(), [out]
    while stack:
        x = _resolve(m.aliases, stack.pop())
        op = x.owner
        if op is None or id(op) in seen or op is m.loop.op or id(op) in stop:
            continue
        seen.add(id(op))
        if op.name == ops.REDUCE and shape(op.operands[0]) == (m.BM, m.BN):
            return op
        stack.extend(op.operands)
    return None


# ---------------------------------------------------------------------------------------------
# The kernel: one output tile's computation, or one repeated over the N tiles of a row block
# ---------------------------------------------------------------------------------------------

def _resolve(aliases: dict, v: Value) -> Value:
    while id(v) in aliases:
        v = aliases[id(v)]
    return v


def _feeding_dots(v: Value, acc_of: dict) -> tuple[list[Op], list[Op]]:
    """(dots whose accumulator `v` is computed from, scf.if ops on the way): the walk goes
    through op operands and into both branches of an scf.if whose result it meets, and stops at a
    loop's result (recording the dot when it is that loop's accumulator)."""
    dots, ifs, seen, stack = [], [], set(), [v]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if id(x) in acc_of:
            if acc_of[id(x)] not in dots:
                dots.append(acc_of[id(x)])
            continue
        op = x.owner
        if op is None or op.name == ops.FOR:
            continue
        if op.name == ops.IF:
            if op not in ifs:
                ifs.append(op)
            view = IfOp(op)
            for y in (view.then_yield, view.else_yield):
                if y is not None:
                    stack.append(y.operands[x.index])
            continue
        stack.extend(op.operands)
    return dots, ifs


def _branch_of(op: Op, ifop: Op) -> int | None:
    """0 or 1: the region of `ifop` that holds `op` (None: neither)."""
    while op is not None and op.parent_op is not ifop:
        op = op.parent_op
    if op is None:
        return None
    return 0 if op.block is IfOp(ifop).then_block else 1


@dataclass
class _Copies:
    """The output tile computations of a kernel. kind: 'one' (one dot, one store); 'peeled' (a
    loop over N tiles whose first trip computes the statistics and carries them to the later
    trips: lazy-prenorm's row-walking form, one scf.if, then-branch first); 'unrolled' (one dot
    and one store per N tile, tl.static_range, the first with the statistics)."""
    kind: str
    tiles: list  # (dot, store, aliases)
    carried: dict = None  # 'peeled': id(N-loop iter_arg) -> the first trip's value it carries
    two_passes: list = None  # 'one' with a post-norm's two stores (the matcher reads them)


def _copies(func: Op, dots: list[Op], stores: list[Op]) -> _Copies:
    if len(dots) == 1:
        if len(stores) >= 2 and all(st.name == ops.STORE for st in stores):
            # a post-norm's two passes over the row (with side outputs in the first: a norm
            # backward's), or not: `_two_passes` says which
            return _Copies("one", [(dots[0], None, {})], two_passes=stores)
        if len(stores) != 1:
            raise _Miss(f"the kernel has side effects besides one tt.store of the output tile "
                        f"({len(stores)} tt.store)", stores[1] if len(stores) > 1 else dots[0],
                        "store the output tile once, after the loop over K")
        return _Copies("one", [(dots[0], stores[0], {})])
    acc_of = {}
    for d in dots:
        loop = d.block.parent_op
        if loop is not None and loop.name == ops.FOR:
            fl = ForLoop(loop)
            if d.operands[2] in fl.iter_args:
                acc_of[id(loop.results[fl.iter_args.index(d.operands[2])])] = d
    fed = {id(st): _feeding_dots(StoreOp(st).value, acc_of) for st in stores}
    if len(stores) == 1 and len(dots) == 2:
        peeled = _peeled(stores[0], dots, *fed[id(stores[0])])
        if peeled is not None:
            return peeled
    if len(stores) == len(dots) and all(len(fed[id(st)][0]) == 1 and not fed[id(st)][1]
                                        for st in stores):
        order = [fed[id(st)][0][0] for st in stores]
        if len({id(d) for d in order}) == len(dots):
            return _Copies("unrolled", [(d, st, {}) for d, st in zip(order, stores)])
    raise _Miss(f"{len(dots)} tt.dot ops; the lowering handles one accumulator (or one tile "
                "computation repeated over the N tiles of a row block)", dots[1],
                "compute each output tile with one tl.dot accumulation")


def _peeled(store: Op, dots: list[Op], fed: list[Op], ifs: list[Op]) -> _Copies | None:
    """The row-walking form: `for n in range(lb, ...)` holding `if n == lb: (k-loop with the
    statistics; scale) else: (k-loop; scale by the carried values)` and the store of its result."""
    if len(fed) != 2 or len(ifs) != 1:
        return None
    ifop = ifs[0]
    branches = [_branch_of(d, ifop) for d in fed]
    if sorted(b for b in branches if b is not None) != [0, 1]:
        return None
    then_dot, else_dot = (fed[0], fed[1]) if branches[0] == 0 else (fed[1], fed[0])
    nloop = ifop.block.parent_op
    if nloop is None or nloop.name != ops.FOR:
        return None
    nl = ForLoop(nloop)
    cond = IfOp(ifop).cond.owner
    if cond is None or cond.name != ops.CMPI or cmp_predicate(cond) != "eq":
        return None
    lb = nl.bounds[0]

    def same_as_lb(x):
        return x is lb or (int_constant(x) is not None and int_constant(x) == int_constant(lb))
    a, b = cond.operands
    if not ((a is nl.iv and same_as_lb(b)) or (b is nl.iv and same_as_lb(a))):
        return None
    view = IfOp(ifop)
    ty, ey = view.then_yield.operands, view.else_yield.operands
    carried = {}
    for j, y in enumerate(nl.yields):
        if y.owner is ifop and ey[y.index] is nl.iter_args[j]:
            carried[id(nl.iter_args[j])] = ty[y.index]
    then_alias = {id(r): ty[i] for i, r in enumerate(ifop.results)}
    else_alias = {id(r): ey[i] for i, r in enumerate(ifop.results)}
    return _Copies("peeled", [(then_dot, store, then_alias), (else_dot, store, else_alias)], carried)


def _same_expr(a: P.Expr, b: P.Expr, memo: dict) -> bool:
    """Structural equality of two hook DAGs."""
    key = (id(a), id(b))
    if key in memo:
        return memo[key]
    same = (a is b) or (a.op == b.op and a.attr == b.attr and a.rank == b.rank and a.dtype == b.dtype
                        and len(a.args) == len(b.args)
                        and all(_same_expr(x, y, memo) for x, y in zip(a.args, b.args)))
    memo[key] = same
    return same


def _same_hook(h1, h2, memo) -> bool:
    if h1 is None or h2 is None:
        return h1 is h2
    return (h1.name == h2.name and h1.row_sums == h2.row_sums and len(h1.results) == len(h2.results)
            and all(_same_expr(x, y, memo) for x, y in zip(h1.results, h2.results)))


def _mentions(e: P.Expr, names: set, seen=None) -> bool:
    """Whether a DAG reads one of the template's values `names`."""
    seen = set() if seen is None else seen
    if id(e) in seen:
        return False
    seen.add(id(e))
    if e.op == "bound" and e.attr in names:
        return True
    return any(_mentions(x, names, seen) for x in e.args)


@dataclass
class _Analysis:
    """What the pass read: the matcher of the tile computation the plan is made from, its
    hooks, and how the kernel repeats it (`copies`)."""
    m: _Matcher
    hooks: tuple
    copies: _Copies


def _analyze(module: Module, post_norm: bool = False, epilogue_tma: bool = False) -> _Analysis:
    """The kernel read for a plan, or _Blockers naming every reason it cannot be lowered.
    `post_norm`, `epilogue_tma`: see `_hooks`."""
    funcs = [f for f in module.functions() if any(o.name == ops.DOT for o in f.walk())]
    if not funcs:
        raise _Blockers([_Miss("no tt.dot: not a GEMM-shaped kernel")])
    if len(funcs) > 1:
        raise _Blockers([_Miss("several functions contain a tt.dot")])
    func = funcs[0]
    dots = [o for o in func.walk() if o.name == ops.DOT]
    effects = [o for o in func.walk() if not o.regions and writes_memory(o)]
    stores = [o for o in effects if o.name in ops.STORES]
    clustered = next((o for o in effects if o.name == ops.INLINE_ASM and CLUSTER_MARK in o.text), None)
    if clustered is not None:
        raise _Blockers([_Miss(
            "the kernel's rows are split over a thread-block cluster (cluster-reduce ran before): "
            "the template's post-norm takes the naive kernel", clustered,
            "run epilogue-norm,hopper-ws{post-norm=true} instead")])
    blockers = []
    others = [o for o in effects if o.name not in ops.STORES]
    if others:
        blockers.append(_Miss(
            "the kernel has side effects besides one tt.store of the output tile "
            f"({', '.join(sorted({o.name for o in effects}))})", others[0],
            "write only the output tile"))
    try:
        copies = _copies(func, dots, stores)
    except _Miss as e:
        raise _Blockers(blockers + [e]) from None
    users = module.user_index()
    tiles = []
    for dot, store, aliases in copies.tiles:
        m = _Matcher(module, func, dot, store, aliases, users)
        m.two_passes = copies.two_passes
        try:
            m.run()
        except _Miss as e:
            m.blockers.append(e)
        except NotAffine as e:
            m.blockers.append(_Miss(str(e)))
        tiles.append(m)
    # the computation with the statistics is the one the plan is made from
    prim = max(tiles, key=lambda t: len(t.row_stats))
    blockers += prim.blockers
    known = hasattr(prim, "BK")
    if copies.kind == "one":
        for coord, what in ((prim.pid_m, "row"), (prim.pid_n, "column")):
            c = coord.constant() if isinstance(coord, Poly) else None
            if c:
                blockers.append(_Miss(f"the kernel computes only {what} tile {c} of the output",
                                      prim.store, f"compute tile pid of a grid over all {what}s"))
    if blockers:
        raise _Blockers(blockers, prim if known else None)
    try:
        hooks, t_epi = _hooks(prim, post_norm=post_norm, epilogue_tma=epilogue_tma)
    except _OtherLoop as e:
        raise _Blockers([e.blocker()], prim) from None
    except _Untranslatable as e:
        raise _Blockers([_Miss(f"cannot translate {e} into the template's hooks", None,
                               "compute the epilogue from the accumulator, the row statistics "
                               "summed in the k-loop and kernel arguments")], prim) from None
    except _Miss as e:
        raise _Blockers([e], prim) from None
    if len(tiles) > 1:
        blockers = _check_copies(prim, hooks, t_epi, tiles, copies)
        if blockers:
            raise _Blockers(blockers, prim)
    return _Analysis(prim, hooks, copies)


def _check_copies(prim: _Matcher, hooks, t_epi, tiles: list, copies: _Copies) -> list[_Miss]:
    """The other tile computations compute what `prim` does: for the peeled row walk, the later
    trips of the N-tile loop with the statistics carried from the first (they do not depend on
    the N tile: the template computes them per tile); for the unrolled one, the same tile
    computation at columns 0, 1, ..., N / BN - 1."""
    out = []
    extra = {}
    results = prim.loop.op.results
    # the first computation's statistics, as the later ones read them (unrolled: straight from
    # its loop; peeled: through the values the N-tile loop carries)
    for j, (i, _, mode) in enumerate(prim.row_stats):
        res = results[i]
        if mode == "row":
            extra[id(res)] = P.bound(f"st{j}", 1, "f32")
        else:
            extra[id(prim.users_of(res)[0].results[0])] = P.bound(f"st{j}", 1, "f32")
    if copies.kind == "peeled":
        for key, v in copies.carried.items():
            try:
                e = t_epi(v)
            except (_Untranslatable, _Miss):
                continue  # not read by the later trips, else their translation fails
            if _mentions(e, {"pid_n", "acc"} | {f"cs{j}" for j in range(len(prim.col_sums))}):
                continue  # depends on the N tile: not a row statistic
            extra[key] = e
    pre, stats, afn, epi, *_ = hooks
    memo: dict = {}
    for m in tiles:
        if m is prim:
            continue
        where = ("the later N tiles of the row walk" if copies.kind == "peeled"
                 else "an unrolled N tile")
        if m.blockers:
            out += [_Miss(f"{where}: {b}", b.op, b.fix) for b in m.blockers]
            continue
        try:
            (pre2, stats2, afn2, epi2, *_), _ = _hooks(m, extra)
        except _Untranslatable as e:
            out.append(_Miss(f"{where}: cannot translate {e} into the template's hooks (a value "
                             "carried across the N tiles other than the first tile's row "
                             "statistics?)", m.dot))
            continue
        except _Miss as e:
            out.append(_Miss(f"{where}: {e}", e.op, e.fix))
            continue
        diff = []
        for what, x, y in (("A operand", m.a.frozen(), prim.a.frozen()),
                           ("B operand", _b_key(m), _b_key(prim)),
                           ("output", (m.out.base, m.out.stride, m.M), (prim.out.base, prim.out.stride, prim.M)),
                           ("K", m.K, prim.K), ("tile", (m.BM, m.BN, m.BK), (prim.BM, prim.BN, prim.BK)),
                           ("types", (m.dtype, m.out_dtype), (prim.dtype, prim.out_dtype)),
                           ("row block", m.pid_m, prim.pid_m),
                           ("column sums", [c for _, c in m.col_sums], [c for _, c in prim.col_sums])):
            if x != y:
                diff.append(what)
        if copies.kind == "peeled":
            if m.N != prim.N:
                diff.append("output columns")
            if m.pid_n != prim.pid_n:
                diff.append("column tile")
        if not _same_hook(pre2, pre, memo):
            diff.append("first-tile row vector")
        if not _same_hook(afn2, afn, memo):
            diff.append("A transform")
        if stats2 is not None and not _same_hook(stats2, stats, memo):
            diff.append("statistics")
        if not _same_hook(epi2, epi, memo):
            diff.append("epilogue")
        if diff:
            out.append(_Miss(f"{where} computes its tile unlike the first ({', '.join(diff)} "
                             "differ), so one tile computation cannot stand for all", m.dot,
                             "compute every N tile the same way (statistics before the N-tile "
                             "loop, or in its first trip as lazy-prenorm writes it)"))
    if copies.kind == "unrolled" and not out:
        out += _unrolled_columns(prim, tiles)
    return out


def _b_key(m: _Matcher) -> tuple:
    """B as read, without its N extent (which each unrolled tile tells only up to its own)."""
    return (m.b.base, m.b.stride, m.b_kn, m.b.rows if m.b_kn else m.b.cols)


def _unrolled_columns(prim: _Matcher, tiles: list) -> list[_Miss]:
    """The unrolled tiles cover columns 0 .. n-1 (in tiles), all of N: the plan's N is n * BN
    (or the constant N that the masks name, which must be that)."""
    cols = []
    for m in tiles:
        c = 0 if m.pid_n is None else (m.pid_n.constant() if isinstance(m.pid_n, Poly) else None)
        cols.append(c)
    n = len(tiles)
    if None in cols or sorted(cols) != list(range(n)):
        return [_Miss("the unrolled N tiles are not columns 0, 1, ..., n-1 of the output",
                      prim.dot, "unroll over tl.static_range(0, N // BN)")]
    N = prim.N
    if N is not None and N.value is not None and -(-N.value // prim.BN) != n and \
            any(not m.n_from_coord for m in tiles):
        return [_Miss(f"the kernel unrolls {n} N tiles but bounds the columns by N = {N.value}",
                      prim.store, "unroll over tl.static_range(0, N // BN) with N a tl.constexpr")]
    if N is not None and N.param is not None:
        return [_Miss(f"the kernel unrolls {n} N tiles but N ('{prim.params[N.param].name}') is a "
                      "runtime value", prim.store, "declare N tl.constexpr")]
    full = P.Source(value=n * prim.BN)
    if all(m.n_from_coord for m in tiles):
        prim.N = full
        prim.out.cols = full
        if prim.b_kn:
            prim.b.cols = full
        else:
            prim.b.rows = full
    return []


# ---------------------------------------------------------------------------------------------
# Post-norm: the naive kernel's two passes over the row's N tiles
# ---------------------------------------------------------------------------------------------

@dataclass
class _Post:
    """A post-norm whose row spans several N tiles, in the naive kernel's form: loop 1 over the
    row's T tiles runs the GEMM's k-loop, stores the tile (`s1`) and carries the row sums
    (`sums`: (loop-1 result index, the tile's share: a sum over the tile's columns)); loop 2
    over the same tiles reloads each tile (`reload`) and stores it normalized (`s2`). `sides`:
    loop 1's other stores (a norm backward's: the norm's output n, the dg / dbeta column
    partials), which write memory nothing in the kernel reads."""
    loop1: ForLoop | None  # None: a row of one N tile, the loops folded (`_one_tile_passes`)
    loop2: ForLoop | None
    s1: Op
    s2: Op
    reload: Op
    trips: int
    sums: list  # (the row sum over the whole row as the normalization reads it, its share)
    sides: list = None

    def before_s1(self, op: Op) -> bool:
        """Whether `op` belongs to the first pass (loop 1, or before s1 in a folded row)."""
        if self.loop1 is not None:
            return self.loop1.op.is_ancestor_of(op)
        blk = self.s1.block
        while op is not None and op.block is not blk:
            op = op.parent_op
        return op is not None and blk.index_of(op) < blk.index_of(self.s1)


def _two_passes(m: _Matcher, stores: list[Op]) -> _Post:
    """Read the two passes of a naive post-norm (kernels/postnorm_gemm.py's form for N > BN, and
    kernels/backward.py's norm backward, whose first pass also stores side outputs):

        %s = scf.for %n = 0 to T step 1 iter_args(%ss = 0) {      // loop 1 (the k-loop inside)
          %acc = scf.for %k ... { tt.dot }    %v = f(%acc, ...)    // bias, residual, masks
          [tt.store %XN[tile n], ...; tt.store %DGP[pid, cols of n], ...]   // side outputs
          tt.store %Y[tile n], truncf(%v)     yield %ss + reduce(g(%v), axis=1) }
        %rstd = h(%s)
        scf.for %n = 0 to T step 1 { %y = tt.load %Y[tile n]; tt.store %Y[tile n], norm(%y, %rstd) }

    The row sums split over any partition of the row's columns, so the template computes each
    tile's share reduce(g(v)) on its own CTA and adds the T shares (the exchange); loop 2 reloads
    exactly what loop 1 stored in the same trip (same address and mask under the shared trip
    index, `normfuse.ir.affine`), so its reload is the tile v itself (in fp32: one rounding, as
    epilogue-norm does), and the first store is overwritten by the second everywhere it wrote.
    A side store writes a kernel argument that no load of the kernel reads and that the output
    store does not write (distinct pointer arguments are taken not to alias, as the naive
    kernel's own store/reload order already assumes)."""
    kloop = m.loop.op
    l1op = kloop.block.parent_op
    blk = kloop.block
    generic = _Miss(f"the kernel has side effects besides one tt.store of the output tile "
                    f"({len(stores)} tt.store, not a post-norm's two passes over the row's N "
                    "tiles)", stores[1])
    if all(st.block is blk for st in stores):
        one = _one_tile_passes(m, stores) if len(stores) > 2 else None
        if one is not None:
            return one
        if len(stores) == 2:
            first, second = sorted(stores, key=blk.index_of)
            root = StoreOp(first).root
            if root is not None and any(o.name in ops.LOADS and LoadOp(o).root is root
                                        for o in blk.ops[blk.index_of(first) + 1:blk.index_of(second)]):
                raise _Miss("the output tile is stored, reloaded and stored again next to the GEMM "
                            "(a post-norm whose row is one tile): run epilogue-norm first, which "
                            "normalizes it in registers", second)
        raise generic
    firsts = [st for st in stores if st.block is blk]
    later = [st for st in stores if st.block is not blk]
    if not firsts or l1op is None or l1op.name != ops.FOR:
        raise generic
    if len(later) != 1:
        raise _Miss(f"{len(later)} stores outside the GEMM's loop over the row's N tiles; the "
                    "normalizing loop stores the output once per tile", later[-1])
    s2 = later[0]
    root2 = StoreOp(s2).root
    s1s = [st for st in firsts if root2 is not None and StoreOp(st).root is root2]
    if len(s1s) != 1:
        raise _Miss("the normalized tile is not stored where exactly one store of the GEMM's loop "
                    "stored the tile", s2)
    s1 = s1s[0]
    sides = [st for st in firsts if st is not s1]
    l2op = s2.block.parent_op
    blk = l1op.block
    if l2op is None or l2op.name != ops.FOR or l2op.block is not blk \
            or blk.index_of(l2op) < blk.index_of(l1op):
        raise _Miss("the normalized tile is not stored by a later loop over the row's N tiles, next "
                    "to the GEMM's loop", s2)
    l1, l2 = ForLoop(l1op), ForLoop(l2op)
    b1, b2 = l1.constant_bounds(), l2.constant_bounds()
    if None in b1 or None in b2:
        raise _Miss("the loops over the row's N tiles need constant bounds (make N a tl.constexpr)",
                    l1op)
    if b1[0] != 0 or b1[2] != 1 or b1 != b2 or b1[1] < 1:
        raise _Miss(f"the loops over the row's N tiles must both run over the tile indices 0..T "
                    f"step 1 (found {tuple(b1)} and {tuple(b2)})", l1op)
    if l2.iter_args:
        raise _Miss("the normalizing loop carries values across tiles", l2op)
    # loop 2 reads back exactly what loop 1 stored, trip by trip, and stores over it (equal
    # forms only where `affine.undetermined` finds nothing behind them: two tt.reduce of one
    # tensor, two loads of one address around a store, have one form)
    forms = Forms(l1, l2)

    def same(a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(
            (x is None and y is None) or (x is not None and y is not None and forms.equal(x, y))
            for x, y in zip(a, b)) and undetermined(
                [x for x in a + b if x is not None], m.written, forms.loops) is None

    first = StoreOp(s1)
    root = first.root
    loads = [o for o in m.func.walk() if o.name in ops.LOADS]
    reads = [o for o in loads if root is not None and LoadOp(o).root is root]
    if root is None or len(reads) != 1 or reads[0].block is not l2.body:
        raise _Miss("the normalizing loop does not reload the stored tile exactly once (and nothing "
                    "else reads the output)", reads[1] if len(reads) > 1 else l2op)
    reload = reads[0]
    if not same(LoadOp(reload).address, first.address):
        raise _Miss("the normalizing loop's reload is not, trip by trip, the tile the GEMM loop "
                    "stored (address and mask)", reload)
    if s2.block is not l2.body or l2.body.index_of(s2) < l2.body.index_of(reload) \
            or not same(StoreOp(s2).address, first.address):
        raise _Miss("the normalized tile is not stored where the GEMM loop stored the tile", s2)
    for st in sides:
        r = StoreOp(st).root
        if r is None or r is root:
            raise _Miss("a second store of the GEMM's loop writes the output (or memory that "
                        "cannot be traced to a kernel argument)", st,
                        "store the tile once per trip of the GEMM's loop")
        if any(LoadOp(o).root is r for o in loads):
            raise _Miss("a side output of the GEMM's loop is read back by the kernel", st,
                        "read side outputs in a later kernel")
    sums = []
    users = m.users
    for i, (a, init, y) in enumerate(zip(l1.iter_args, l1.inits, l1.yields)):
        if shape(a) != (m.BM,) or element(a) != "f32":
            raise _Miss(f"loop-carried value {a.ref()} of the loop over N tiles is not a per-row f32 "
                        "vector", l1op)
        if not is_zero_constant(init):
            raise _Miss(f"row sum {a.ref()} does not start at zero", l1op)
        o = y.owner
        if o is None or o.name != ops.ADDF or sum(1 for v in o.operands if v is a) != 1 \
                or len(users.get(id(a), [])) != 1:
            raise _Miss(f"row sum {a.ref()} is not a sum over the row's tiles (%s + x)", l1op)
        x = o.operands[1] if o.operands[0] is a else o.operands[0]
        red = x.owner
        if red is None or not _is_sum_over(red, 1) or shape(red.operands[0]) != (m.BM, m.BN) \
                or red.block is not l1.body:
            raise _Miss(f"row sum {a.ref()}'s share per tile is not a sum over the tile's columns",
                        red or l1op)
        sums.append((l1op.results[i], red))
    if not sums:
        raise _Miss("the loop over N tiles accumulates no row sums", l1op)
    if len(sums) > 2:
        raise _Miss(f"{len(sums)} row sums; the template exchanges two", l1op)
    return _Post(l1, l2, s1, s2, reload, b1[1], sums, sides)


def _one_tile_passes(m: _Matcher, stores: list[Op]) -> _Post | None:
    """A norm backward whose row is one N tile, as Triton leaves the naive kernel once it has
    folded the one-trip loops over the row's tiles: in the k-loop's block, the side outputs, the
    tile's store s1, its reload, and the normalized store s2 over it (the same address and mask
    values), the row sums being sums over the tile's columns (`reduce(g(v), axis=1)`, maybe plus
    the zero the loop started from) of first-pass values. The two passes with T = 1 (`_Post`,
    no loops): the template's whole-rows form without an exchange. None when the stores are not
    of that form (the caller's blockers apply). Only with side outputs: a plain post-norm's
    one-tile row goes through epilogue-norm (rule 6), as before."""
    blk = m.loop.op.block
    order = sorted(stores, key=blk.index_of)
    s2 = order[-1]
    root = StoreOp(s2).root
    firsts = [st for st in order[:-1] if root is not None and StoreOp(st).root is root]
    if len(firsts) != 1 or len(order) < 3:
        return None
    s1 = firsts[0]
    sides = [st for st in order[:-1] if st is not s1]
    late = [st for st in sides if blk.index_of(st) > blk.index_of(s1)]
    if late:
        raise _Miss("a side output is stored after the tile (between the two passes over the row)",
                    late[0], "store side outputs before the tile")
    loads = [o for o in m.func.walk() if o.name in ops.LOADS]
    reads = [o for o in loads if LoadOp(o).root is root]
    a1, a2 = StoreOp(s1).address, StoreOp(s2).address
    if len(reads) != 1 or reads[0].block is not blk or not \
            blk.index_of(s1) < blk.index_of(reads[0]) < blk.index_of(s2):
        raise _Miss("the tile is not reloaded exactly once between its store and the normalized "
                    "store (and nothing else reads the output)", s2)
    reload = reads[0]
    if not (all(x is y for x, y in zip(LoadOp(reload).address, a1)) and
            all(x is y for x, y in zip(a2, a1))):
        raise _Miss("the reload and the normalized store are not at the tile's address and mask",
                    reload)
    for st in sides:
        r = StoreOp(st).root
        if r is None or r is root:
            raise _Miss("a second store writes the output (or memory that cannot be traced to a "
                        "kernel argument)", st, "store the tile once")
        if any(LoadOp(o).root is r for o in loads):
            raise _Miss("a side output is read back by the kernel", st,
                        "read side outputs in a later kernel")
    # the row sums: [BM] sums over the tile's columns of first-pass values that the second pass
    # reads (through the zero the folded loop started from)
    post = _Post(None, None, s1, s2, reload, 1, [], sides)
    sums, seen, stack = [], set(), [StoreOp(s2).value]
    while stack:
        x = stack.pop()
        op = x.owner
        if op is None or id(op) in seen or op is reload or op is m.loop.op:
            continue
        seen.add(id(op))
        if post.before_s1(op):
            red = op if _is_sum_over(op, 1) else None
            if red is None and op.name == ops.ADDF and shape(x) == (m.BM,):
                zs = [v for v in op.operands if is_zero_constant(v)]
                rest = [v for v in op.operands if not is_zero_constant(v)]
                if len(zs) == 1 and rest[0].owner is not None and _is_sum_over(rest[0].owner, 1):
                    red = rest[0].owner
            if red is not None and shape(red.operands[0]) == (m.BM, m.BN):
                sums.append((x, red))
                continue
        stack.extend(op.operands)
    if not sums:
        raise _Miss("the normalized store reads no row sum over the tile's columns", s2)
    if len(sums) > 2:
        raise _Miss(f"{len(sums)} row sums; the template exchanges two", s2)
    post.sums = sums
    return post


# ---------------------------------------------------------------------------------------------
# The hooks as expression DAGs
# ---------------------------------------------------------------------------------------------

class _Untranslatable(Exception):
    """A value the hooks cannot compute; the message names the op."""


class _OtherLoop(_Untranslatable):
    """The hooks read a result of a loop other than the k-loop."""

    def blocker(self) -> "_Miss":
        return _Miss(f"the epilogue reads {self}, a result of a loop other than the k-loop (a "
                     "statistics loop before it that lazy-prenorm did not fuse: its remark says "
                     "why)", None, "compute the row statistics from the A tiles the k-loop "
                     "reads, in the k-loop or in a loop lazy-prenorm fuses into it")


_BINARY = {ops.ADDF: "add", ops.SUBF: "sub", ops.MULF: "mul", ops.DIVF: "div",
           ops.ADDI: "add", ops.SUBI: "sub", ops.MULI: "mul", ops.DIVSI: "floordiv",
           ops.REMSI: "rem", ops.ANDI: "and", ops.ORI: "or", ops.XORI: "xor"}
_CMP = {"slt": "<", "olt": "<", "ult": "<", "sle": "<=", "ole": "<=", "ule": "<=",
        "sgt": ">", "ogt": ">", "ugt": ">", "sge": ">=", "oge": ">=", "uge": ">=",
        "eq": "==", "oeq": "==", "ne": "!=", "une": "!=", "one": "!="}
_MINMAX = {ops.MAXNUMF: "max", ops.MAXSI: "max", ops.MINNUMF: "min", ops.MINSI: "min"}
_REDUCE = {ops.ADDF: "sum", ops.ADDI: "sum", ops.MAXNUMF: "max", ops.MINNUMF: "min",
           ops.MAXSI: "max", ops.MINSI: "min"}


class _Exprs:
    """TTIR values -> hook expressions. `bindings`: id(Value) -> the Expr the template provides;
    kernel parameters become `param` leaves. Each value is translated once (a DAG)."""

    def __init__(self, bindings: dict[int, P.Expr], params: dict[int, int], aliases=None):
        self.bindings = dict(bindings)
        self.params = params
        self.aliases = aliases or {}
        self.memo: dict[int, P.Expr] = {}

    def __call__(self, v: Value) -> P.Expr:
        v = _resolve(self.aliases, v)
        b = self.bindings.get(id(v))
        if b is not None:
            return b
        if id(v) in self.params:
            return P.param(self.params[id(v)], 0, element(v))
        if id(v) not in self.memo:
            self.memo[id(v)] = self._translate(v)
        return self.memo[id(v)]

    def _translate(self, v: Value) -> P.Expr:
        op = v.owner
        if op is None:
            raise _Untranslatable(f"{v.ref()} is a value of an enclosing loop or region")
        name = op.name
        if name == ops.FOR:
            raise _OtherLoop(v.ref())
        args = op.operands
        rank, el = len(shape(v)), element(v)
        new = lambda o, *a, attr=None: P.expr(o, *a, attr=attr, rank=rank, dtype=el)  # noqa: E731
        if name == ops.CONSTANT:
            cv = constant_value(op)
            if cv is None:
                raise _Untranslatable(f"the constant {v.ref()} is not a scalar or splat")
            val, cel = cv
            if isinstance(val, float) and (val != val or val in (float("inf"), float("-inf"))):
                raise _Untranslatable(f"the constant {v.ref()} is not finite")
            return P.const(bool(val) if cel == "i1" else val, rank, el)
        if name in _BINARY:
            return new(_BINARY[name], self(args[0]), self(args[1]))
        if name in (ops.CMPI, ops.CMPF):
            pred = cmp_predicate(op)
            if pred not in _CMP:
                raise _Untranslatable(f"{name} with predicate '{pred}'")
            return new("cmp", self(args[0]), self(args[1]), attr=_CMP[pred])
        if name in _MINMAX:
            return new(_MINMAX[name], self(args[0]), self(args[1]))
        if name == ops.NEGF:
            return new("neg", self(args[0]))
        if name == ops.SELECT:
            return new("select", *(self(x) for x in args))
        if name in ops.CASTS:
            x = self(args[0])
            if el not in P_CASTS:
                raise _Untranslatable(f"a cast to {el}")
            return new("cast", x, attr=el)
        if name in ops.MATH_FUNCTIONS:
            return new("math", self(args[0]), attr=ops.MATH_FUNCTIONS[name])
        if name == ops.FMA:
            return new("fma", *(self(x) for x in args))
        if name == ops.SPLAT:
            if shape(args[0]) == ():
                return self(args[0])
            raise _Untranslatable(f"{name} of a tensor")
        if name == ops.BROADCAST:
            return self(args[0])
        if name == ops.EXPAND_DIMS:
            return new("expand_dims", self(args[0]), attr=ops.ExpandDimsOp(op).axis)
        if name == ops.MAKE_RANGE:
            return new("arange", attr=make_range_bounds(op))
        if name == ops.ADDPTR:
            return new("addptr", self(args[0]), self(args[1]))
        if name == ops.LOAD:
            info = LoadOp(op)
            parts = [self(info.ptr)]
            if info.mask is not None:
                parts.append(self(info.mask))
                if info.other is not None:
                    parts.append(self(info.other))
            return new("load", *parts, attr=(info.mask is not None, info.other is not None))
        if name == ops.REDUCE:
            red = ReduceOp(op)
            if red.combining_op not in _REDUCE:
                raise _Untranslatable(f"a tt.reduce combining with {red.combining_op or 'several ops'}")
            return new("reduce", self(args[0]), attr=(_REDUCE[red.combining_op], red.axis))
        raise _Untranslatable(f"'{name}' ({v.ref()})")


P_CASTS = ("f32", "f16", "bf16", "f64", "i1", "i8", "i16", "i32", "i64")


def _count(hooks) -> int:
    """Nodes of the hooks' DAGs (each once)."""
    seen: set[int] = set()
    stack = [e for h in hooks if h is not None for e in h.results]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        stack.extend(a for a in e.args)
    return len(seen)


def _has(e: P.Expr, pred, into=lambda x: True) -> bool:
    """Whether `pred` holds for a node of the DAG under `e`, descending into the arguments
    for which `into` holds."""
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if pred(x):
            return True
        stack.extend(a for a in x.args if into(a))
    return False


def _reads_rows(hooks) -> bool:
    """Whether a hook indexes the tile's rows, which coop2's half tiles cannot take: a `pid_m`
    leaf, or a vector of the kernel's own row indices (an `arange` reaching an expansion along
    axis 1 through 1-D values: row offsets built from BLOCK_M, e.g. a residual's pointer load;
    with a single row block the kernel has no pid_m to show it). A row vector reduced from a
    tile (a norm's row sums, whose tile may be masked by column indices) is no row index."""
    def row_index(x: P.Expr) -> bool:
        return (x.op == "expand_dims" and x.attr == 1
                and _has(x.args[0], lambda y: y.op == "arange", lambda y: y.rank <= 1))
    return any(_mentions(e, {"pid_m"}) or _has(e, row_index)
               for h in hooks if h is not None for e in h.results)


def _hooks(m: _Matcher, extra: dict | None = None, post_norm: bool = False,
           epilogue_tma: bool = False):
    """((pre, stats, afn, epi, rows, fin, notes), the EPI translator): the hooks' DAGs. `extra`:
    bindings of values the epilogue reads from elsewhere (another tile computation's statistics);
    `post_norm`: lower row reductions of the accumulator (rows and fin: a post-norm whose row
    spans several tiles); `epilogue_tma`: a plain epilogue's tile of a second matrix by TMA."""
    loop = m.loop
    params = {id(p.value): i for i, p in enumerate(m.params)}
    aliases = m.aliases
    tile_loads = [o for o in loop.body.ops if _same_tile(o, m.a_load)]
    el = m.dtype
    af = P.bound("af", 2, "f32")
    a_tile = P.bound("a_tile", 2, el)
    rowvec = lambda name: P.bound(name, 1, "f32")  # noqa: E731

    def coords(include_n: bool):
        """Every scalar value whose form is a tile coordinate binds to it (where
        `affine.undetermined` finds nothing behind it: `pid * BM + tl.sum(c) - tl.max(c)` has
        the form `pid * BM`)."""
        out = {}
        want = [(m.pid_m, P.bound("pid_m", 0, "i32"))]
        if include_n:
            want.append((m.pid_n, P.bound("pid_n", 0, "i32")))
        want = [(c, b) for c, b in want if c is not None and _constant(c) is None]
        if not want:
            return out
        for r in _scalar_values(m.func):
            if loop.contains(r) or r.owner is loop.op:
                continue
            f = m.forms.form(r)
            for c, b in want:
                if f == c and m.undetermined_value(r) is None:
                    out[id(r)] = b
        return out

    common = coords(False)

    def a_bindings(loads):
        b = {}
        for ld in loads:
            b[id(ld.results[0])] = a_tile
            for u in m.users_of(ld.results[0]):
                if u.name == ops.EXTF and element(u.results[0]) == "f32":
                    b[id(u.results[0])] = af
        return b

    def loop_bindings():
        b = dict(common)
        step1 = m.forms.form(loop.bounds[2]) == Poly.const(1)
        b[id(loop.iv)] = P.bound("kk", 0, "i32") if step1 else P.bound("k_offset", 0, "i32")
        b.update(a_bindings(tile_loads))
        return b

    notes = []
    pre = stats = afn = None
    # PRE: a row vector defined before the loop and used in it, computed from the first A tile
    pre_value = None
    used_outside = _outer_row_vectors(m)
    if len(used_outside) > 1:
        raise _Miss("several row vectors from before the k-loop are used in it", loop.op)
    if used_outside:
        pre_value, first_load = used_outside[0]
        if not m.first_tile(first_load):
            raise _Miss("a row vector used in the k-loop is computed from a tile other than the "
                        "first A tile", first_load)
        b = dict(common)
        b.update(a_bindings([first_load]))
        pre = P.Hook("pre", (_Exprs(b, params, aliases)(pre_value),))
        notes.append("a row vector from the first A tile (the LayerNorm shift) computed in the k-loop's first step")

    def with_c0(b):
        if pre_value is not None:
            b[id(pre_value)] = rowvec("c0")
        return b

    # STATS
    if m.row_stats:
        t = _Exprs(with_c0(loop_bindings()), params, aliases)
        stats = P.Hook("stats", tuple(t(x) for _, x, _ in m.row_stats),
                       tuple(mode != "row" for _, _, mode in m.row_stats))
    # AFN
    if m.afn is not None:
        afn = P.Hook("afn", (_Exprs(with_c0(loop_bindings()), params, aliases)(m.afn),))
    # EPI
    results = loop.op.results
    b = dict(extra or {})
    b.update(common)
    b.update(coords(True))
    b[id(results[m.acc_i])] = P.bound("acc", 2, "f32")
    with_c0(b)
    stat_reduces = set()  # a tile-accumulated statistic's reduction after the loop (bound, st_j)
    for j, (i, _, mode) in enumerate(m.row_stats):
        res = results[i]
        if mode == "row":
            b[id(res)] = rowvec(f"st{j}")
        else:
            users = m.users_of(res)
            if len(users) != 1 or not _is_sum_over(users[0], 1):
                raise _Miss("a statistic accumulated as a tile is not reduced over its rows after "
                            "the loop", users[0] if users else loop.op)
            b[id(users[0].results[0])] = rowvec(f"st{j}")
            stat_reduces.add(id(users[0]))
    for j, (i, _) in enumerate(m.col_sums):
        b[id(results[i])] = P.bound(f"cs{j}", 1, "f32")
    out = _unrounded(_resolve(aliases, m.out_value))
    # (the statistics' own reductions are not the epilogue's: with BLOCK_K == BLOCK_N their
    # [BM, BK] tiles have the accumulator's shape, and were once taken for a post-norm's)
    red = _acc_reductions(m, out, stat_reduces)
    if m.post is not None:
        if not post_norm:
            raise _Miss(f"a post-norm whose row spans {m.post.trips} N tiles (two passes over the "
                        "row); not lowered by default (hopper-ws{post-norm=true} lowers it, the "
                        "tiles of a row exchanging their row sums through global memory)", m.post.s2)
        if red is not None:
            raise _Miss("the tile before the norm reduces rows of the accumulator within one N tile",
                        red)
        res = _residual(m, out)
        res_loads = []
        if isinstance(res, str):
            notes.append(f"the residual tile is read with pointer loads in the epilogue ({res})")
        elif res is not None:
            res_loads, m.res = res
            m.res_load = res_loads[0]
            for ld in res_loads:
                b[id(ld.results[0])] = P.bound("res", 2, element(ld.results[0]))
            epi_only = all(ld in _tile_loads(m, [out], set()) for ld in res_loads)
            notes.append(("the residual tile" if epi_only else
                          "the input tile (read in both passes over the row)")
                         + " loaded by TMA into the output's staging tile during the k-loop")
            if m.fin_loads:
                notes.append(f"{len(m.fin_loads)} tile(s) read by the normalizing loop alone (a "
                             "residual gradient added to dx) loaded with pointers in FIN")
        # a norm backward: the input tile is read after EPI too (by the row sums, the side
        # outputs, the normalizing loop); the template then holds the tile across the exchange
        # rounded to the output type, as the naive kernel reloads it, and FIN reads it so
        m.bwd = bool(res_loads) and any(ld not in _tile_loads(m, [out], set()) for ld in res_loads)
        # side outputs without a tile read again after EPI: a post-norm's training forward (h,
        # the tile before the norm, for the backward); their hooks read EPI's tile y (fp32)
        if m.post.sides and not m.bwd and isinstance(res, str):
            raise _Miss("side outputs of the row's first pass (a norm backward's) are lowered with "
                        f"the input tile read by TMA in both passes; here {res}",
                        m.post.sides[0], "read x at the output tile's rows and columns, masked by "
                        "rows < M and columns < N")
        t_epi = _Exprs(b, params, aliases)
        epi = P.Hook("epi", (t_epi(out),))
        rows, fin = _post_hooks(m, params, coords(True), out, res_loads, m.bwd)
        notes.append((f"post-norm: the row's {m.post.trips} N tiles on {m.post.trips} CTAs of one "
                      f"wave, {len(m.post.sums)} partial row sum(s) exchanged through global memory "
                      "(stamped words), " if m.post.trips > 1 else
                      f"post-norm: the row in one N tile ({len(m.post.sums)} row sum(s), no "
                      "exchange), ") + (
                         "the tile held across the exchange in the output's type (as the naive "
                         "kernel reloads it) and normalized in the epilogue" if m.bwd else
                         "the tile normalized in fp32 in the epilogue"))
        if m.post.sides:
            notes.append(_side_hooks(m, params, coords(True), out, res_loads))
        return (pre, stats, afn, epi, rows, fin, notes), t_epi
    if red is not None:
        if not post_norm:
            raise _Miss("the epilogue reduces rows of the accumulator (a post-norm); not lowered by "
                        "default: the template's post-norms measured slower than cluster-reduce and "
                        "epilogue-norm's kernels on the H200 (docs/NOTES.md; "
                        "hopper-ws{post-norm=true} lowers it)", red)
        notes.append("post-norm: the epilogue reduces rows of the accumulator within the tile"
                     + (" (the row is one tile)" if m.pid_n is None else ""))
    elif epilogue_tma and not m.row_stats:
        # a [BM, BN] tile of a second matrix at the output tile's place that the epilogue reads
        # (the rowdot dX kernel's x): by TMA into the output's staging tile during the k-loop,
        # instead of a pointer load (a tile of 64-bit addresses) in the epilogue. Not with row
        # statistics (the shared-statistics order has no staging handshake); a tile TMA cannot
        # read stays a pointer load of the hook.
        res = _residual(m, out)
        if isinstance(res, tuple):
            res_loads, m.res = res
            m.res_load = res_loads[0]
            for ld in res_loads:
                b[id(ld.results[0])] = P.bound("res", 2, element(ld.results[0]))
            notes.append("the epilogue's tile of a second matrix loaded by TMA into the output's "
                         "staging tile during the k-loop")
    t_epi = _Exprs(b, params, aliases)
    epi = P.Hook("epi", (t_epi(out),))
    return (pre, stats, afn, epi, None, None, notes), t_epi


def _tile_loads(m: _Matcher, starts, stop: set) -> list[Op]:
    """The [BM, BN] tt.load ops that the values `starts` are computed from, not looking through a
    load, a loop (the k-loop, the row's loops: their results are bound) or a value in `stop`."""
    loads, seen, stack = [], set(), list(starts)
    while stack:
        x = _resolve(m.aliases, stack.pop())
        op = x.owner
        if op is None or id(op) in seen or op.name == ops.FOR:
            continue
        seen.add(id(op))
        if op.name == ops.LOAD and shape(x) == (m.BM, m.BN):
            if op not in loads:
                loads.append(op)
            continue
        if op.name in ops.LOADS:
            continue
        stack.extend(v for v in op.operands if id(v) not in stop)
    return loads


def _at_output_tile(m: _Matcher, ptr: Value, mask: Value | None, what: str):
    """(base parameter index, row stride) of a [BM, BN] pointer access at the output tile's rows
    and columns, masked by rows < M and columns < N only; else the reason (a string)."""
    try:
        base, off = m.pointer(ptr, what)
        dims = split_dims(off, 2)
        conds = conditions(m.forms, mask) if mask is not None else []
    except NotAffine as e:
        return f"its address: {e}"
    if id(base) not in m.pid:
        return "its base pointer is not a kernel parameter"
    why = m.undetermined_value(ptr, mask)
    if why is not None:
        return f"its address is computed from something its form does not determine: {why}"
    if dims[1].stride != Poly.const(1):
        return "its rows are not contiguous"
    for d, (coord, size) in enumerate(((m.pid_m, m.BM), (m.pid_n, m.BN))):
        r, kk, rest = dims[d].parts(d)
        got = m._coordinate(rest, size)
        if r != 1 or kk != 0 or dims[d].modulus is not None or got is False or got != coord:
            return f"its {'rows' if d == 0 else 'columns'} are not the output tile's"
    stride = m.source(dims[0].stride)
    if stride is None:
        return "its row stride is not a parameter or a constant"
    for c in conds:
        inv = set().union(*(dims_of(t) for t, _ in c.terms)) if c.terms else set()
        if len(inv) != 1:
            return "its mask is not a bound on rows or on columns"
        dim = inv.pop()
        src = m.source(dims[dim].inner + c.scale(-1))
        if not _same(src, m.M if dim == 0 else m.N):
            return "its mask is not rows < M and columns < N"
    return m.pid[id(base)], stride


def _residual(m: _Matcher, v: Value):
    """The [BM, BN] tile of a second matrix at the output tile's rows and columns that the
    epilogue reads (a post-norm's residual; a norm backward's input x, read in both passes over
    the row: by its row sums, its side outputs and its normalizing loop), as (the loads of it,
    TileOperand) for the template's TMA; None when there is none; the reason (a string) when it
    cannot be read by TMA. Every load must read the same tile: a load of the normalizing loop the
    same address and mask, trip by trip, as one of the GEMM's loop; except, in a norm backward
    (x read by both passes), loads of other tiles by the normalizing loop alone (a residual
    gradient): they stay pointer loads of FIN (`m.fin_loads`, for the remark)."""
    loads = _tile_loads(m, [v], set())
    post = m.post
    if post is not None:
        stop = {id(v), id(post.reload.results[0])}
        later = [red.operands[0] for _, red in post.sums] + [StoreOp(post.s2).value]
        for st in post.sides or ():
            view = StoreOp(st)
            later += [x for x in (view.ptr, view.value, view.mask) if x is not None]
        loads += [ld for ld in _tile_loads(m, later, stop) if ld not in loads]
    if not loads:
        return None
    firsts = [ld for ld in loads if post is None or post.before_s1(ld)]
    if not firsts:
        return "the normalizing loop reads a tile the GEMM's loop does not"
    load = firsts[0]
    if len(loads) > 1:
        forms = None if post is None else (Forms(post.loop1, post.loop2) if post.loop1 is not None
                                           else Forms(m.loop))
        a0 = LoadOp(load)

        def same_tile(ld):
            a = LoadOp(ld)
            return not (forms is None or len(a.address) != len(a0.address) or not all(
                (x is None and y is None) or (x is not None and y is not None
                                              and forms.equal(x, y))
                for x, y in zip(a.address, a0.address)) or
                undetermined([x for x in a.address + a0.address if x is not None], m.written,
                             forms.loops) is not None or
                (a.other is None) != (a0.other is None) or
                (a.other is not None and not is_zero_constant(a.other)))
        others = [ld for ld in loads[1:] if not same_tile(ld)]
        # a norm backward (x read again by the normalizing loop): a tile that only the
        # normalizing loop reads (a residual gradient added to dx) stays a pointer load of FIN
        backward = any(not post.before_s1(ld) for ld in loads if ld not in others) \
            if post is not None else False
        if others and not (backward and all(not post.before_s1(ld) for ld in others)):
            return f"{len(loads)} tiles of other matrices"
        loads = [ld for ld in loads if ld not in others]
        m.fin_loads = others
    info = LoadOp(load)
    if info.other is not None and not is_zero_constant(info.other):
        return "its masked lanes are not zero (TMA fills zeros)"
    where = _at_output_tile(m, info.ptr, info.mask, "residual")
    if isinstance(where, str):
        return where
    base, stride = where
    el = element(load.results[0])
    if el != m.out_dtype:
        return f"it is {el}, the output {m.out_dtype} (the tile is staged in the output's buffer)"
    return loads, P.TileOperand(base, rows=m.M, cols=m.N, stride=stride)


def _side_hooks(m: _Matcher, params: dict, coords: dict, tile: Value, res_loads) -> str:
    """A norm backward's side outputs, loop 1's other stores (`_Post.sides`), as hooks on the
    matcher (the remark's note returned): a [BM, BN] tile at the output tile's place (the norm's
    output n; at most one) becomes AUX (its value, stored by TMA through the output's staging
    tile after the output), 1-D stores (the dg / dbeta column partials, at a row block's row of
    a partials matrix) become SIDE, translated whole (pointer, value, mask: `store` nodes over
    EPI's tile y, the input tile res and the tile coordinates). The template computes every
    output tile once, so each side store is made once per (row block, N tile), as in the naive
    kernel (which stores them once per program and trip of its loop over the row's tiles)."""
    b = dict(coords)
    b[id(tile)] = P.bound("y", 2, "f32")
    for ld in res_loads:
        b[id(ld.results[0])] = P.bound("res", 2, element(ld.results[0]))
    t = _Exprs(b, params, m.aliases)
    stores, aux = [], None
    for st in m.post.sides:
        view = StoreOp(st)
        val = view.value
        if shape(val) == (m.BM, m.BN):
            if aux is not None:
                raise _Miss("two [BM, BN] side outputs besides the output tile; the template stores "
                            "one", st, "store one side tile per trip (or make it a second kernel)")
            where = _at_output_tile(m, view.ptr, view.mask, "side output")
            if isinstance(where, str):
                raise _Miss(f"a [BM, BN] side output of the GEMM's loop is not stored at the output "
                            f"tile's place by TMA ({where})", st,
                            "store it at the output tile's rows and columns, masked by rows < M "
                            "and columns < N")
            if element(val) != m.out_dtype:
                raise _Miss(f"a side output tile is {element(val)}, the output {m.out_dtype} (it is "
                            "staged in the output's buffer)", st, "store it in the output's type")
            base, stride = where
            m.aux_out = P.TileOperand(base, rows=m.M, cols=m.N, stride=stride)
            aux = P.Hook("aux", (t(_unrounded(val)),))
        elif len(shape(val)) == 1:
            try:
                parts = [t(view.ptr), t(val)] + ([t(view.mask)] if view.mask is not None else [])
            except _Untranslatable as e:
                raise _Miss(f"a side output's store cannot be translated ({e})", st,
                            "address it by the row block (program id) and the N tile's columns")
            stores.append(P.expr("store", *parts, attr=view.mask is not None, rank=1,
                                 dtype=element(val)))
        else:
            raise _Miss(f"a side output of shape {list(shape(val))}: the template stores [BM, BN] "
                        "tiles at the output tile's place and 1-D vectors", st)
    m.aux_hook = aux
    m.side_hook = P.Hook("side", tuple(stores)) if stores else None
    parts = []
    if aux is not None:
        parts.append(f"a second output tile ({m.params[m.aux_out.base].name}) stored by TMA "
                     "through the staging tile before the exchange")
    if stores:
        parts.append(f"{len(stores)} column vector store(s) per tile (each (row block, N tile) once, "
                     "as the naive kernel stores them)")
    return "side outputs of the row's first pass: " + "; ".join(parts)


def _unrounded(v: Value) -> Value:
    """The fp32 value a store rounds (truncf's operand), else `v`."""
    o = v.owner
    if o is not None and o.name == ops.TRUNCF and element(o.operands[0]) == "f32":
        return o.operands[0]
    return v


def _post_hooks(m: _Matcher, params: dict, coords: dict, tile: Value, res_loads=(),
                rounded: bool = False):
    """ROWS and FIN of a two-pass post-norm (`_two_passes`): ROWS is each row sum's share per tile
    over the tile value `tile` (bound to y), FIN the normalizing loop's stored value with its
    reload bound to y (fp32; rounded to the reload's type where the loop reads it unconverted),
    loop 1's results (the row sums) to s0, s1 and loop 2's index to the N tile."""
    post = m.post
    y = P.bound("y", 2, "f32")
    resb = {id(ld.results[0]): P.bound("res", 2, element(ld.results[0])) for ld in res_loads}
    b = dict(coords)
    b.update(resb)
    b[id(tile)] = y
    t = _Exprs(b, params)
    rows = P.Hook("rows", tuple(t(red.operands[0]) for _, red in post.sums),
                  tuple(True for _ in post.sums))
    b = dict(coords)
    b.update(resb)
    if post.loop2 is not None:
        b[id(post.loop2.iv)] = P.bound("pid_n", 0, "i32")
    r = post.reload.results[0]
    if rounded:  # the template passes FIN the tile in the reload's type (`_hooks`: a backward)
        b[id(r)] = P.bound("y", 2, element(r))
    else:
        b[id(r)] = P.expr("cast", y, attr=element(r), rank=2, dtype=element(r))
        for u in m.users_of(r):
            if u.name == ops.EXTF and element(u.results[0]) == "f32":
                b[id(u.results[0])] = y
    for j, (total, _) in enumerate(post.sums):
        b[id(total)] = P.bound(f"s{j}", 1, "f32")
    out = _unrounded(StoreOp(post.s2).value)
    red = _acc_reductions(m, out, {id(total.owner) for total, _ in post.sums})
    if red is not None:
        raise _Miss("the normalizing loop reduces rows of the reloaded tile", red)
    fin = P.Hook("fin", (_Exprs(b, params)(out),))
    return rows, fin


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------

_BUDGET = 227 * 1024 - 1024  # shared memory per CTA on sm_90, less Triton's own reserve
# the lagged post-norm's bound: sm_90's whole 227 KiB per CTA (smem_bytes already holds
# SCRATCH_RESERVE for Triton's scratch). Its 128 x 256 tiles at 2 stages estimate 231,472 bytes
# (over _BUDGET by 48) and compile to 230,436 (Triton's metadata.shared, sm_90, RMSNorm,
# 2026-12-03): they fit.
_LAG_BUDGET = 227 * 1024
# words of partial row sums a consumer thread holds in flight in one step of the gather (next to
# the 128-register tile: 16 spilled at 128 x 128 ping-pong, LayerNorm, N = 8192)
_GATHER_WORDS = 8


def _row_chunk(trips: int, sums: int, cfg: P.WSConfig) -> int:
    """N tiles per step of the gather: all of the row's (a power of two) when they fit
    _GATHER_WORDS words per consumer thread, else as many as do (2..32)."""
    fit = _GATHER_WORDS * 32 * cfg.consumer_warps // (cfg.block_m * sums)
    return max(2, min(32, 1 << (trips - 1).bit_length(), 1 << (max(fit, 1).bit_length() - 1)))


# The k-loop's statistics after the wait for the previous k-step's wgmma (WSConfig.stats_late)
# when at most this many row sums are left to the registers, with no shift and no A transform
# (RMSNorm's sum of squares), else right after the issue. Measured on the H200 (2026-12-02,
# bench/results/2026-12-02/session14/stats-late/, the blog's 9 cells, g folded, interleaved
# processes): after the issue, ptxas puts the tile's ldmatrix and arithmetic between the k-step's
# first and second wgmma instruction and the tensor pipe waits for them; after the wait the four
# go out back to back. RMSNorm fused / backbone 1.067 -> 1.057 (geometric mean, 8 of 9 cells
# faster), fused / cuBLAS 1.119 -> 1.099; LayerNorm's two sums (Sx, Sx^2) got slower after the
# wait (1.146 -> 1.188 over the backbone): they start only once the previous MMA has finished and
# outlast the next.
STATS_LATE_MAX_SUMS = 1


def _coop2_refusal(m: _Matcher, hooks) -> str | None:
    """What in the kernel coop2's half tiles cannot take (None: it takes the kernel)."""
    pre, stats, afn, epi, rows = hooks
    return ("a post-norm's rows" if rows is not None else "a residual tile"
            if m.res is not None else "a second output tile" if m.aux_out is not None
            else "a norm backward" if m.bwd
            else "hooks that index the tile's rows (e.g. a residual's pointer load by "
            "the row block)" if _reads_rows((pre, stats, afn, epi)) else None)


def _auto_schedule(m: _Matcher, stats, afn, share: bool, refusal: str | None) -> tuple[str, str]:
    """schedule=auto: (the schedule, why not coop2 where the kernel has statistics). coop2 for
    row statistics in the k-loop with the A tile straight from shared memory (g and beta folded:
    measured faster than coop, module docstring), coop for the rest (the plain GEMM: mixed; an A
    operand computed in the k-loop: not measured with coop2; post-norms, backwards: coop2 does
    not take them)."""
    if stats is None:
        return "coop", ""
    if afn is not None:
        return "coop", ("the A operand is computed in the k-loop (g or beta not folded), which "
                        "coop2 was not measured with (hopper-ws{schedule=coop2} asks for it)")
    if share:
        return "coop", ("the statistics are shared per row block (stats-share), which coop2 was not "
                        "measured with (hopper-ws{schedule=coop2,stats-share=true} asks for it)")
    if m.BM % 128:
        return "coop", f"coop2 takes 128-row tiles, the kernel has {m.BM}x{m.BN}"
    if refusal is not None:
        return "coop", f"coop2 does not take {refusal}"
    return "coop2", ""


def _lagged(cfg: P.WSConfig, m: _Matcher, rows) -> tuple[P.WSConfig, str]:
    """hopper-ws{row-lag}: the config with each post-norm tile finished one tile late, at the
    deepest ring that fits next to the second staging tile, or (cfg, why not)."""
    why = ("the kernel is no post-norm over several tiles" if rows is None else
           "the coop schedule only (one consumer)" if cfg.consumers != 1 else
           "a residual tile (its staging tile is the lagged tile's)" if m.res is not None else
           "a norm backward" if m.bwd else
           "side outputs (their staging)" if m.aux_out is not None or m.side_hook is not None else
           "LayerNorm's two row sums (the lagged tile is re-read rounded, and the lowered "
           "LayerNorm keeps centring the fp32 tile for its accuracy at |mean| >> std)"
           if len(rows.results) != 1 else None)
    if why:
        return cfg, why
    lag = replace(cfg, row_lag=True)
    while lag.stages > 2 and lag.smem_bytes() > _LAG_BUDGET:
        lag = replace(lag, stages=lag.stages - 1)
    if lag.smem_bytes() > _LAG_BUDGET:
        return cfg, (f"two {cfg.block_m}x{cfg.block_n} staging tiles and the ring need "
                     f"{lag.smem_bytes()} bytes of shared memory, more than the "
                     f"{_LAG_BUDGET} a CTA has (use 128x128 or 128x256 tiles at BLOCK_K 64)")
    return lag, ""


def _stats_where(cfg: P.WSConfig) -> str:
    when = " (each k-step's after the wait for the previous wgmma)" if cfg.stats_late else ""
    if cfg.stats_share:
        return (f"in the MMA warps{when}, once per row block (its first tile, a wave ahead of the "
                "others), shared through global memory")
    return f"in the MMA warps{when}"


@dataclass
class HopperWS(Pass):
    """Plan the lowering of a fused GEMM-shaped kernel to the warp-specialized Hopper template
    (see the module docstring)."""

    name = "hopper-ws"
    lowers = True  # returns a plan; the pipeline replaces the module by the backend's TTGIR
    summary = ("lower a fused GEMM-shaped kernel (statistics in the k-loop, elementwise epilogue) "
               "to a warp-specialized Gluon template for sm_90: TMA loader + wgmma warpgroups")
    schedule: str = "auto"
    stages: int = 0
    # the row statistics computed once per row block (by the MMA warps of the CTA that owns the
    # row block's first tile) and shared with the other CTAs through global memory
    stats_share: bool = False
    # lower post-norms: row reductions of the accumulator in the epilogue, and the naive kernel's
    # two passes over a row of several N tiles (the tiles exchanging their row sums)
    post_norm: bool = False
    # a plain epilogue's [BM, BN] tile of a second matrix at the output tile's place (the rowdot
    # dX kernel's x) read by TMA into the output's staging tile during the k-loop, instead of a
    # pointer load in the epilogue hook (a tile of 64-bit addresses in registers)
    epilogue_tma: bool = False
    # with late statistics, the previous slot released before them
    # (auto: the default, on where the statistics are late, silently; true: asked for, a note
    # where it cannot apply; false: off)
    release_early: str = "auto"
    # where the k-loop's statistics go: auto (STATS_LATE_MAX_SUMS decides), true (after the wait
    # whatever the number of sums), false (right after the wgmma issue)
    stats_late: str = "auto"
    # post-norm rows of several tiles finished one tile late (after the next tile's k-loop) from
    # a second staging tile: the row exchange's wait off the critical path
    row_lag: bool = False
    # the hooks' 1-D loads issued first (codegen.hoist_loads)
    hoist_loads: bool = True
    # the epilogue's 1-D loads issued before the tile's k-loop (WSConfig.epi_prefetch)
    epi_prefetch: bool = False
    # with epilogue-tma, the staging tile handed back after the next tile's first wgmma
    # (WSConfig.staging_late)
    staging_late: bool = False
    # the k-loop's statistics read the A tile in a row layout (WSConfig.stats_rows; auto: the
    # default, wherever it applies, silently; true: a note where it cannot; false: off)
    stats_rows: str = "auto"
    # with stats-rows, the k-loop's row sums kept per lane, the lanes combined once per tile
    # (WSConfig.stats_lanes; auto: where stats-rows applies and the sums are not late, silently;
    # true: also late sums, a note where it cannot; false: off)
    stats_lanes: str = "auto"

    def __post_init__(self):
        # (true / false as the boolean options take them: on, 1, yes, a Python bool)
        for opt in ("stats_late", "release_early", "stats_rows", "stats_lanes"):
            v = str(getattr(self, opt)).lower()
            v = ("true" if v in ("true", "1", "yes", "on") else
                 "false" if v in ("false", "0", "no", "off") else v)
            if v not in ("auto", "true", "false"):
                raise PassError(f"option hopper-ws{{{opt.replace('_', '-')}}} must be auto, true "
                                f"or false, got '{getattr(self, opt)}'")
            setattr(self, opt, v)
        if self.schedule not in ("auto", "coop", "pingpong", "coop2"):
            raise PassError("option hopper-ws{schedule} must be auto, coop, pingpong or coop2, "
                            f"got '{self.schedule}'")
        if not (self.stages == 0 or 2 <= int(self.stages) <= 6):
            raise PassError(f"option hopper-ws{{stages}} must be 0 or 2..6, got {self.stages}")

    def config(self, m: _Matcher, share: bool, schedule: str | None = None) -> P.WSConfig:
        """The schedule's tile config at the deepest ring that fits (at most the schedule's
        default depth unless `stages` asks for more). `schedule`: the one chosen for `auto`
        (default: the option; auto's fallback, coop, where none was chosen yet)."""
        schedule = schedule or (self.schedule if self.schedule != "auto" else "coop")
        if schedule == "coop2":
            if m.BM % 128:
                raise _Miss(f"the coop2 schedule takes 128-row tiles, the kernel has {m.BM}x{m.BN}",
                            m.dot, "use 128-row tiles (BM = 128)")
            cfg = P.WSConfig(block_m=m.BM, block_n=m.BN, block_k=m.BK, stages=3, consumers=2,
                             consumer_warps=4, halves=True)
        elif schedule == "coop":
            if (m.BM, m.BN) != (128, 256) and m.BM % 128:
                raise _Miss(f"the coop schedule takes 128-row tiles, the kernel has {m.BM}x{m.BN}",
                            m.dot, "use 128-row tiles (BM = 128), or hopper-ws{schedule=pingpong} "
                            "for 64-row tiles")
            cfg = P.WSConfig(block_m=m.BM, block_n=m.BN, block_k=m.BK, stages=3, consumers=1,
                             consumer_warps=8)
        else:
            cfg = P.WSConfig(block_m=m.BM, block_n=m.BN, block_k=m.BK, stages=4, consumers=2,
                             consumer_warps=4)
        if m.BM % (16 * cfg.consumer_warps) or m.BN > 256 or m.BN % 16 or m.BK % 16:
            raise _Miss(f"tile {m.BM}x{m.BN}x{m.BK} does not fit the {schedule} schedule "
                        f"({cfg.consumer_warps} warps of 16-row wgmma, n <= 256)", m.dot,
                        f"use BM a multiple of {16 * cfg.consumer_warps}, BN <= 256 and BN, BK "
                        "multiples of 16")
        stages = int(self.stages) or cfg.stages
        while stages > 2 and replace(cfg, stages=stages).smem_bytes() > _BUDGET:
            stages -= 1
        cfg = replace(cfg, stages=stages)
        if cfg.smem_bytes() > _BUDGET:
            raise _Miss(f"tile {m.BM}x{m.BN}x{m.BK} needs {cfg.smem_bytes()} bytes of shared "
                        f"memory at {stages} stages", m.dot,
                        "use a smaller tile" + (" (BN = 128 fits two ping-pong tiles) or the coop "
                                                "schedule" if schedule == "pingpong" else ""))
        if share and (cfg.consumers == 1 or cfg.halves):
            cfg = replace(cfg, stats_share=True)
        return cfg

    def plan(self, module: Module) -> tuple[P.WSPlan, Op]:
        """The plan for `module` and its dot, or _Blockers with every reason it has none."""
        try:
            an = _analyze(module, self.post_norm, self.epilogue_tma)
        except _Blockers as e:
            m = getattr(e, "matcher", None)
            if m is not None:  # the tile is known: say too whether the schedule takes it
                try:
                    self.config(m, False)
                except _Miss as c:
                    e.misses.append(c)
            raise
        m = an.m
        pre, stats, afn, epi, rows, fin, notes = an.hooks
        if an.copies.kind == "peeled":
            notes.append("the row walk's later N tiles (statistics carried from the first) "
                         "are the same tile computation: every tile takes its statistics itself")
        elif an.copies.kind == "unrolled":
            notes.append(f"{len(an.copies.tiles)} unrolled N tiles are the same tile computation")
        share = (self.stats_share and stats is not None and afn is None and rows is None
                 and m.res is None)
        refusal = _coop2_refusal(m, (pre, stats, afn, epi, rows))
        schedule = self.schedule
        if schedule == "auto":
            schedule, why = _auto_schedule(m, stats, afn, share, refusal)
            if why:
                notes.append(f"schedule coop (auto): {why}")
        try:
            cfg = self.config(m, share, schedule)
        except _Miss as c:
            if self.schedule != "auto" or schedule == "coop":
                raise _Blockers([c], m) from None
            notes.append(f"schedule coop (auto): coop2 does not fit ({c.text})")
            try:
                cfg = self.config(m, share, "coop")
            except _Miss as c2:
                raise _Blockers([c2], m) from None
        if cfg.halves and refusal is not None:
            raise _Blockers([_Miss(f"the coop2 schedule does not take {refusal}", m.dot,
                                   "use hopper-ws{schedule=coop} (or auto, the default, which "
                                   "chooses coop there)")], m)
        # the number of row sums decides where they go in the k-step
        late = {"true": True, "false": False}.get(self.stats_late,
                                                  stats is not None
                                                  and len(stats.results) <= STATS_LATE_MAX_SUMS)
        if stats is not None and pre is None and afn is None and late:
            cfg = replace(cfg, stats_late=True, release_early=self.release_early != "false")
        elif self.stats_late == "true" and stats is not None:
            notes.append("stats-late not applied: the statistics are shifted (a PRE hook) or the "
                         "A operand is computed in the k-loop (g or beta not folded)")
        elif self.release_early == "true" and stats is not None:
            notes.append("release-early not applied: " + (
                "stats-late=false" if self.stats_late == "false" else
                "the statistics are not computed after the wait (more than one sum in the "
                "registers, a shift, or the A operand computed in the k-loop)"))
        if self.stats_share and stats is not None and not cfg.stats_share:
            notes.append("stats-share not applied: " + (
                "the A operand is computed in the k-loop (g or beta not folded)" if afn is not None
                else "the kernel is a post-norm" if rows is not None
                else "it needs the coop or coop2 schedule"))
        if rows is not None:
            cfg = replace(cfg, row_exchange=len(rows.results),
                          row_chunk=_row_chunk(m.post.trips, len(rows.results), cfg))
        if self.row_lag:
            cfg, why = _lagged(cfg, m, rows)
            if why:
                notes.append("row-lag not applied: " + why)
            else:  # (the analysis wrote the fp32 form's note)
                notes = [n.replace("the tile normalized in fp32 in the epilogue",
                                   "each tile finished one tile late, after the next tile's "
                                   "k-loop, from the output's type in a second staging tile (as "
                                   "the naive kernel reloads it)") for n in notes]
        cfg = replace(cfg, hoist_loads=self.hoist_loads)
        if self.epi_prefetch:
            why = ("hoist-loads=false keeps the loads in the DAG's order" if not self.hoist_loads
                   else "a norm backward keeps its loads in the epilogue" if m.bwd
                   else "a post-norm's rows keep their loads in the epilogue" if rows is not None
                   else "the epilogue loads no 1-D vector" if not (m.col_sums or any(
                       _has(e, lambda x: x.op == "load" and x.rank == 1) for e in epi.results))
                   else None)
            if why is None:
                cfg = replace(cfg, epi_prefetch=True)
            else:
                notes.append("epi-prefetch not applied: " + why)
        if self.staging_late:
            why = ("no tile of a second matrix comes by TMA into the staging tile "
                   "(hopper-ws{epilogue-tma=true} and such a load in a plain epilogue)"
                   if m.res is None or rows is not None or m.bwd
                   else "the coop2 schedule has no staging handshake" if cfg.halves
                   else "the shared-statistics order has no staging handshake"
                   if cfg.stats_share else None)
            if why is None:
                cfg = replace(cfg, staging_late=True)
            else:
                notes.append("staging-late not applied: " + why)
        if self.stats_rows != "false":
            why = ("the k-loop computes no row statistics" if stats is None and pre is None else
                   "the A operand is computed in the k-loop (g or beta not folded): its "
                   "registers are the wgmma's operand" if afn is not None else None)
            if why is None:
                cfg = replace(cfg, stats_rows=True)
            elif self.stats_rows == "true":
                notes.append("stats-rows not applied: " + why)
        if self.stats_lanes != "false":
            why = ("the k-loop computes no row statistics" if stats is None else
                   "stats-rows is off" if not cfg.stats_rows else
                   "a statistic is not a row sum of the A tile"
                   if any(stats.row_sum_operand(j) is None for j in range(len(stats.results)))
                   else None)
            if why is None and (self.stats_lanes == "true" or not cfg.stats_late):
                # auto: only where the sums follow the wgmma issue (between its instructions);
                # after the wait (stats-late) the shuffle was off the tensor pipe's path
                cfg = replace(cfg, stats_lanes=True)
            elif why is not None and self.stats_lanes == "true":
                notes.append("stats-lanes not applied: " + why)
        a, b, out = m.a.frozen(), m.b.frozen(), m.out.frozen()
        needs = [P.TmaDescriptor("a", (m.BM, m.BK)),
                 P.TmaDescriptor("b", (m.BK, m.BN) if m.b_kn else (m.BN, m.BK)),
                 P.TmaDescriptor("out", (cfg.out_rows, m.BN))]
        if m.res is not None:
            needs.append(P.TmaDescriptor("res", (m.BM, m.BN)))
        if m.aux_out is not None:
            needs.append(P.TmaDescriptor("aux", (m.BM, m.BN)))
        needs += [P.DerivedArgument(c) for _, c in m.col_sums]
        needs.append(P.PersistentGrid(m.BM, m.BN, whole_rows=rows is not None))
        if cfg.stats_share:
            needs.append(P.SharedStatistics(m.BM))
        if rows is not None:
            needs.append(P.SharedStatistics(m.BM, row_sums=len(rows.results), block_n=m.BN))
        return P.WSPlan(
            kernel_name=ops.FuncOp(m.func).sym_name, params=tuple((p.name, p.type) for p in m.params),
            a=a, b=b, out=out, b_kn=m.b_kn, M=m.M, N=m.N, K=m.K, dtype=_DTYPES[m.dtype],
            out_dtype=_DTYPES[m.out_dtype], config=cfg,
            single=(m.pid_m is None, m.pid_n is None and an.copies.kind != "unrolled"),
            pre=pre, stats=stats, afn=afn, epi=epi, rows=rows, fin=fin,
            res=m.res, res_dtype=_DTYPES[m.out_dtype] if m.res is not None else "",
            aux=m.aux_hook, aux_out=m.aux_out, side=m.side_hook, backward=m.bwd,
            n_stats=len(m.row_stats),
            column_sums=tuple(c for _, c in m.col_sums), notes=tuple(notes),
            needs=tuple(needs)), m.dot

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        try:
            plan, dot = self.plan(module)
        except _Blockers as e:
            n = len(e.misses)
            for i, b in enumerate(e.misses):
                run.missed((f"[{i + 1}/{n}] " if n > 1 else "") + b.text, b.op)
            return
        cfg = plan.config
        hooks = (plan.pre, plan.stats, plan.afn, plan.epi, plan.rows, plan.fin, plan.aux,
                 plan.side)
        parts = [f"lowered to the warp-specialized template: {cfg}, persistent, "
                 f"{'B [K, N]' if plan.b_kn else 'B [N, K]'}",
                 (f"{plan.n_stats} row statistic(s) from the A tiles " + _stats_where(cfg))
                 if plan.n_stats else "no statistics",
                 "A operand computed in registers (g/beta in the loop; each k-step's wgmma waited)"
                 if plan.afn is not None else "A straight from shared memory",
                 f"epilogue translated from the IR ({_count(hooks)} "
                 "expression nodes in the hooks)"]
        if plan.column_sums:
            parts.append(f"{len(plan.column_sums)} column sum(s) of the weight precomputed per "
                         "weight version (derived arguments)")
        parts += plan.notes
        run.lower(plan)
        run.applied("; ".join(parts), dot)
