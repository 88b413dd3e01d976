"""The plan `hopper-ws` hands to its backend: what a fused GEMM-shaped kernel computes, in terms
the warp-specialized template understands, and nothing about how the template is written.

The pass (`passes/hopper_ws.py`) reads a kernel's TTIR and returns a frozen `WSPlan`; the backend
(`lowering/`) turns a plan into a Gluon program and its launch. Neither imports the other: both
import this module, which imports nothing of normfuse.

A plan holds
- the operands: A [M, K], B ([N, K] or [K, N]) and the output [M, N] as `TileOperand`s whose
  base, sizes and row stride are kernel parameters or constants (`Source`); M, N, K;
- the tile (BM, BN, BK), the element types, the schedule (`WSConfig`);
- the hooks as expression DAGs (`Expr`), one per role: PRE (a row vector from the first A tile),
  STATS (row statistics accumulated over the A tiles), AFN (the A operand computed from the
  tile), EPI (the epilogue on the accumulator), each over the values the template provides
  (`bound` leaves) and kernel parameters (`param` leaves); a post-norm whose row spans several
  N tiles adds ROWS (the row sums of EPI's tile, over the tile's columns) and FIN (the output
  from EPI's tile and the row sums over the whole row, which the template exchanges between the
  row's tiles);
- the launch needs: the TMA descriptors of A, B and the output, the derived arguments (column
  sums of the weight, computed per weight version at launch), the persistent grid (one program
  per SM, or whole rows: groups of the row's N tiles), and the workspace of shared statistics
  (or of the post-norm's partial row sums).

`Source.param` and `Expr("param")` indices count the TTIR function's arguments, which are the
kernel's parameters that were not specialized away as constants (tl.constexpr, and integers
equal to 1 or None, which Triton's JIT turns into constants); the launch maps them back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

__all__ = ["Source", "TileOperand", "ColumnSums", "WSConfig", "Expr", "Hook", "WSPlan",
           "TmaDescriptor", "DerivedArgument", "PersistentGrid", "SharedStatistics", "BOUND",
           "EXPR_OPS", "bound", "param", "const", "expr"]


@dataclass(frozen=True)
class Source:
    """Where a launch-time integer comes from: kernel parameter `param` or the constant `value`."""
    param: int | None = None
    value: int | None = None

    def __str__(self) -> str:
        return f"arg{self.param}" if self.param is not None else str(self.value)


@dataclass(frozen=True)
class TileOperand:
    """A 2-D operand read (or written) by TMA: `rows` x `cols` of a matrix whose column stride is
    1 and row stride `stride`, starting at kernel parameter `base` (a pointer)."""
    base: int
    rows: Source
    cols: Source
    stride: Source


@dataclass(frozen=True)
class ColumnSums:
    """A derived argument: the [N] vector sum over k of B[k, n] (times scale[k] when `scale` is a
    parameter), computed at launch once per weight version (the LayerNorm correction
    colsum(diag(g) W)); the template never reads B outside the MMA."""
    weight: int
    scale: int | None = None


# bytes of shared memory kept for Triton's scratch next to the template's buffers: a [BN] fp32
# column vector converted between layouts takes 1 KiB, a [BM] row vector 512 bytes
SCRATCH_RESERVE = 2048


@dataclass(frozen=True)
class WSConfig:
    """Tile shape and schedule. `consumers=1, consumer_warps=8`: one 128xBN tile per CTA at a time
    on two warpgroups ("coop"); `consumers=2, consumer_warps=4`: two warpgroups with a tile
    each, main loops taking turns ("pingpong"). `stats_share`: the row statistics computed once
    per row block and shared through global memory (coop, no A transform). `row_exchange`: a
    post-norm's row sums (1 or 2) exchanged between the N tiles of a row block through global
    memory, the tiles of a row block run at once on distinct CTAs (0: no exchange);
    `row_chunk`: how many N tiles' partial sums one step of the gather reads at once.
    `stats_late`: the k-loop computes a tile's row statistics after the wait for the previous
    k-step's wgmma (else right after the issue of its own; no effect without statistics, with a
    shift (PRE) or with an A transform, whose k-loop waits for each wgmma at once).
    `halves` (with consumers=2, consumer_warps=4, "coop2"): both warpgroups work on every tile,
    each on its own half of the tile's rows and in its own partition (each releases the ring's
    slots itself: no barrier between the two per k-step); the output leaves in [block_m / 2,
    block_n] boxes. With `stats_share` each warpgroup publishes and takes its half's rows.
    `release_early` (with `stats_late`): each k-step releases the previous k-step's ring slot
    right after the wait, before its own statistics (else after them).
    `row_lag` (with `row_exchange`, one consumer): each post-norm tile finished one tile late,
    after the next tile's k-loop, from a second staging tile (the exchange's wait off the
    critical path). `stats_rows`: the k-loop reads the A tile for its statistics in a row layout
    (each thread a contiguous run of one row: fewer shuffles per row sum; not with an A
    transform, whose registers are the wgmma's operand). `stats_lanes` (with `stats_rows`): the
    k-loop keeps each row sum as per-lane partials (the lanes that share a row each add their own
    run) and combines the lanes once per tile, not in every k-step. `epi_prefetch` (with
    `hoist_loads`): the epilogue's 1-D loads (column sums, a bias) and their addresses are issued
    before the tile's k-loop (the EPRE hook), not at the epilogue's start: their L2 latency hides
    under the k-loop (not for a post-norm's rows or a norm backward). `staging_late` (a plain
    instance whose epilogue reads a second matrix's tile by TMA, `WSPlan.res`): the consumer hands
    the staging tile back to the loader after the next tile's first wgmma is issued, not right
    after its output store: the store's read of the staging tile drains under the k-loop."""
    block_m: int = 128
    block_n: int = 256
    block_k: int = 64
    stages: int = 3
    consumers: int = 1
    consumer_warps: int = 8
    group_m: int = 8
    loader_warps: int = 4
    loader_regs: int = 40
    consumer_regs: int = 232
    stats_share: bool = False
    row_exchange: int = 0
    row_chunk: int = 16
    stats_late: bool = False
    halves: bool = False
    release_early: bool = False
    row_lag: bool = False
    hoist_loads: bool = True
    stats_rows: bool = False
    stats_lanes: bool = False
    epi_prefetch: bool = False
    staging_late: bool = False

    def __post_init__(self):
        if self.consumers not in (1, 2):
            raise ValueError(f"consumers must be 1 or 2, got {self.consumers}")
        if self.consumer_warps not in (4, 8):
            raise ValueError(f"consumer_warps must be 4 or 8, got {self.consumer_warps}")
        if self.block_m % (16 * self.consumer_warps):
            raise ValueError(f"block_m={self.block_m} must be a multiple of 16 x consumer_warps")
        if self.row_exchange not in (0, 1, 2):
            raise ValueError(f"row_exchange must be 0, 1 or 2, got {self.row_exchange}")
        if self.row_chunk not in (2, 4, 8, 16, 32):
            raise ValueError(f"row_chunk must be a power of two in 2..32, got {self.row_chunk}")
        if self.halves and (self.consumers, self.consumer_warps) != (2, 4):
            raise ValueError("halves takes two consumers of 4 warps")
        if self.halves and self.block_m % 128:
            raise ValueError(f"halves takes block_m a multiple of 128, got {self.block_m}")
        if self.halves and self.row_exchange:
            raise ValueError("halves: not with row_exchange")
        if self.release_early and not self.stats_late:
            raise ValueError("release_early takes stats_late (the slot is released before late "
                             "statistics)")
        if self.row_exchange and self.stats_share:
            raise ValueError("row_exchange and stats_share use one workspace: not both")
        if self.row_lag and not (self.row_exchange and self.consumers == 1):
            raise ValueError("row_lag takes a post-norm row exchange and one consumer")
        if self.stats_lanes and not self.stats_rows:
            raise ValueError("stats_lanes takes stats_rows (the partials are the row layout's lanes)")
        if self.epi_prefetch and (not self.hoist_loads or self.row_exchange):
            raise ValueError("epi_prefetch takes hoist_loads and no post-norm row exchange")
        if self.staging_late and (self.row_exchange or self.halves or self.stats_share):
            raise ValueError("staging_late takes a plain instance (no post-norm rows, coop2 "
                             "halves or shared statistics)")
        if self.stats_share and self.consumers == 2 and not self.halves:
            raise ValueError("stats_share takes one consumer or coop2's halves, not ping-pong")

    @property
    def out_rows(self) -> int:
        """Rows of the output's TMA box: the tile's, or half of them with `halves`."""
        return self.block_m // 2 if self.halves else self.block_m

    @property
    def schedule(self) -> str:
        return "coop" if self.consumers == 1 else "coop2" if self.halves else "pingpong"

    def smem_bytes(self, elem: int = 2) -> int:
        """Shared memory of an instance: the ring, the output tiles, the ring's and the ping-pong
        order's mbarriers, and SCRATCH_RESERVE for Triton's own scratch (the hooks' layout
        conversions and reductions go through shared memory)."""
        ring = self.stages * (self.block_m + self.block_n) * self.block_k * elem
        out = (2 if self.row_lag else 1 if self.halves else self.consumers) \
            * self.block_m * self.block_n * elem
        return ring + out + 16 * self.stages + 16 + SCRATCH_RESERVE

    def __str__(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k} s{self.stages} {self.schedule} "
                f"w{self.consumer_warps}" + (" stats-shared" if self.stats_share else "")
                + (" stats-late" if self.stats_late else "")
                + (" release-early" if self.release_early else "")
                + (f" rows-exchanged({self.row_exchange})" if self.row_exchange else "")
                + (" rows-lagged" if self.row_lag else "")
                + ("" if self.hoist_loads else " loads-in-order")
                + (" stats-rows" if self.stats_rows else "")
                + (" stats-lanes" if self.stats_lanes else "")
                + (" epi-prefetch" if self.epi_prefetch else "")
                + (" staging-late" if self.staging_late else ""))


# ---------------------------------------------------------------------------------------------
# Hook expressions
# ---------------------------------------------------------------------------------------------

# What the template provides to the hooks (`bound` leaves):
BOUND = {
    "af": "the A tile of the k-step in fp32 [BM, BK]",
    "a_tile": "the A tile of the k-step in the input type [BM, BK]",
    "acc": "the accumulator [BM, BN] (fp32)",
    "pid_m": "the tile's row block", "pid_n": "the tile's column block",
    "kk": "the k-step (0, 1, ...)", "k_offset": "the k-step's first column (kk * BK)",
    "c0": "PRE's row vector [BM]",
    "st0": "the first row statistic [BM]", "st1": "the second row statistic [BM]",
    "cs<j>": "column sum j (a derived argument) for the tile's columns [BN] (EPI)",
    "y": "EPI's tile [BM, BN] (fp32) of a post-norm whose row spans several N tiles (ROWS, FIN)",
    "s0": "the first row sum over the whole row [BM] (FIN)",
    "s1": "the second row sum over the whole row [BM] (FIN)",
    "res": "the plan's residual tile [BM, BN] in its own type (EPI of a post-norm; by TMA; a "
           "norm backward's input tile, read by every hook after the k-loop)",
}
_COLUMN_SUM = re.compile(r"cs\d+")

# op -> what it means; `attr` as noted
EXPR_OPS = {
    "bound": "a value of BOUND (attr: its name)",
    "param": "kernel parameter attr (a scalar or a pointer)",
    "const": "a scalar constant attr (bool, int or float), splat to the result's shape",
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b (floats)",
    "floordiv": "a // b (integers, rounding toward zero as arith.divsi)",
    "rem": "a % b (integers, sign of a as arith.remsi)",
    "and": "a & b", "or": "a | b", "xor": "a ^ b",
    "cmp": "a attr b, attr one of < <= > >= == !=",
    "max": "maximum(a, b)", "min": "minimum(a, b)", "neg": "-a",
    "select": "where(c, a, b)",
    "cast": "a converted to element type attr ('f32', 'bf16', 'i32', ...)",
    "math": "attr(a) for attr in sqrt rsqrt exp exp2 log log2 abs erf floor ceil sin cos",
    "fma": "a * b + c",
    "expand_dims": "a with a new axis attr",
    "arange": "the integers attr[0] .. attr[1] - 1",
    "addptr": "pointer a advanced by b elements",
    "load": "load(ptr[, mask[, other]]); attr = (has mask, has other)",
    "reduce": "attr[0] in sum max min over axis attr[1]",
    "store": "store(ptr, value[, mask]) of a 1-D vector (a SIDE result; attr: has mask)",
}


@dataclass(frozen=True, eq=False)
class Expr:
    """One node of a hook's expression DAG (identity semantics: a node used twice is one value).
    `rank`: 0 for a scalar, else the tensor rank; `dtype`: the element type ('f32', 'i32', 'i1',
    'ptr', ...)."""
    op: str
    args: tuple = ()
    attr: object = None
    rank: int = 0
    dtype: str = ""

    def __post_init__(self):
        if self.op not in EXPR_OPS:
            raise ValueError(f"unknown hook expression op '{self.op}'")
        if self.op == "bound" and self.attr not in BOUND and not _COLUMN_SUM.fullmatch(str(self.attr)):
            raise ValueError(f"'{self.attr}' is not a value the template provides")


def expr(op: str, *args, attr=None, rank: int = 0, dtype: str = "") -> Expr:
    return Expr(op, tuple(args), attr, rank, dtype)


def bound(name: str, rank: int, dtype: str) -> Expr:
    return Expr("bound", (), name, rank, dtype)


def param(index: int, rank: int = 0, dtype: str = "") -> Expr:
    return Expr("param", (), index, rank, dtype)


def const(value, rank: int = 0, dtype: str = "") -> Expr:
    return Expr("const", (), value, rank, dtype)


@dataclass(frozen=True)
class Hook:
    """A hook's results: PRE (c0,), AFN (the A operand,), EPI (the output tile, or a post-norm's
    tile y when the plan has ROWS), FIN (the output tile,); STATS one contribution per row
    statistic j, added to st_j at every k-step: a [BM] vector, or a [BM, BK] tile whose row sums
    are meant when `row_sums[j]`; ROWS one [BM, BN] tile per row sum j, whose sum over the tile's
    columns is the tile's share of s_j; AUX (a second output tile, stored by TMA at the output
    tile's place: a norm backward's n,); SIDE `store` nodes (a norm backward's column partials),
    made once per output tile."""
    name: str
    results: tuple[Expr, ...]
    row_sums: tuple[bool, ...] = ()

    def row_sum_operand(self, j: int) -> "Expr | None":
        """STATS: the [BM, BK] tile whose row sums statistic j adds, or None when j is not a row
        sum of a tile: result j itself when `row_sums[j]`, the summed operand when the kernel
        took the row sum in the k-step (a top-level sum over axis 1)."""
        e = self.results[j]
        if self.row_sums[j]:
            return e
        return e.args[0] if e.op == "reduce" and e.attr == ("sum", 1) else None


# ---------------------------------------------------------------------------------------------
# Launch needs of a lowered kernel
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TmaDescriptor:
    """A host-side TMA descriptor of `operand` ('a', 'b', 'out', 'res' or 'aux') with box `block`."""
    operand: str
    block: tuple[int, int]


@dataclass(frozen=True)
class DerivedArgument:
    """An argument computed on the host from kernel parameters (per weight version)."""
    value: ColumnSums


@dataclass(frozen=True)
class PersistentGrid:
    """One program per SM, at most one per output tile of block_m x block_n. `whole_rows`: the
    programs come in groups of T = cdiv(N, block_n) (one program per N tile of a row block):
    T x min(row blocks, SMs // T) programs, and a launch with T > SMs is refused (the row's
    tiles must run at once on distinct CTAs)."""
    block_m: int
    block_n: int
    whole_rows: bool = False

    def programs(self, M: int, N: int, sms: int) -> int:
        """The grid for an M x N output on `sms` SMs (0: refused, whole rows wider than SMs)."""
        pm, pn = -(-M // self.block_m), -(-N // self.block_n)
        if self.whole_rows:
            return 0 if pn > sms else pn * max(1, min(pm, sms // pn))
        return max(1, min(sms, pm * pn))


@dataclass(frozen=True)
class SharedStatistics:
    """The global words through which shared statistics (or a post-norm's partial row sums)
    pass, and the launch's epoch (one per launch on a stream: see the backend's SharedStats).
    Words per row: 3 (the statistics and the shift), or `row_sums` x cdiv(N, block_n) (each N
    tile's partial row sums) when `row_sums` > 0."""
    block_m: int
    row_sums: int = 0
    block_n: int = 0

    def words_per_row(self, N: int) -> int:
        return self.row_sums * -(-N // self.block_n) if self.row_sums else 3


# ---------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WSPlan:
    kernel_name: str
    params: tuple[tuple[str, str], ...]   # (name, type) of the TTIR function's arguments
    a: TileOperand
    b: TileOperand
    out: TileOperand
    b_kn: bool                            # B is [K, N] (else [N, K], a Linear weight)
    M: Source
    N: Source
    K: Source
    dtype: str                            # A and B: 'bf16' | 'fp16'
    out_dtype: str
    config: WSConfig
    single: tuple[bool, bool] = (False, False)  # the kernel covers one row (column) tile only
    pre: Hook | None = None
    stats: Hook | None = None
    afn: Hook | None = None
    epi: Hook | None = None
    rows: Hook | None = None              # a post-norm's row sums over EPI's tile (exchanged)
    fin: Hook | None = None               # the output from EPI's tile and the rows' sums
    res: TileOperand | None = None        # a [M, N] tile EPI reads (bound `res`), by TMA
    res_dtype: str = ""
    aux: Hook | None = None               # a second output tile from EPI's tile (and res), by TMA
    aux_out: TileOperand | None = None    # where AUX goes ([M, N], the output's type)
    side: Hook | None = None              # 1-D stores made once per output tile
    # a norm backward: ROWS, SIDE, AUX and FIN read `res` too (the input x), FIN reads EPI's tile
    # `y` rounded to the output type (as the naive kernel reloads it)
    backward: bool = False
    n_stats: int = 0                      # row statistics STATS accumulates (0..2)
    column_sums: tuple[ColumnSums, ...] = ()
    notes: tuple[str, ...] = ()
    needs: tuple = field(default=())      # TmaDescriptor, DerivedArgument, PersistentGrid, ...

    def with_config(self, config: WSConfig) -> "WSPlan":
        return replace(self, config=config)

    @property
    def tile(self) -> tuple[int, int, int]:
        c = self.config
        return c.block_m, c.block_n, c.block_k
