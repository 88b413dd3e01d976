"""hopper-ws: plan the lowering of a fused GEMM-shaped kernel to the warp-specialized Hopper
template.

What it does
------------
The fusion passes leave a kernel whose heavy part is one k-loop: two tile loads (A [BM, BK] and
B) feeding a `tt.dot`, side reductions of the A tiles (the statistics lazy-prenorm moved into the
loop), perhaps an elementwise A transform (g and beta applied in the loop), and an epilogue on the
accumulator (the row scale, the LayerNorm correction, a bias) before one masked store. Triton 3.6
does not warp-specialize such a loop on sm_90 and its pipeliner cannot give the statistics the
MMA's own tile (DESIGN.md). This pass matches that structure and returns a frozen plan
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

Legality (each failure leaves the IR unchanged and emits a "missed" remark naming the reason)
---------------------------------------------------------------------------------------------
1. One `tt.func` with exactly one `tt.dot` (bf16 or fp16 operands, fp32 accumulator) in an
   `scf.for`; the accumulator is an iter_arg that starts at zero and is used only by the dot.
2. The A tile is a 2-D load in the loop at `base + rows * stride + k` (rows = tile * BM + r, maybe
   `% M`; k = r + BK * step, contiguous), or a tensor-descriptor load; B likewise, as W [N, K]
   (k contiguous) or [K, N] (n contiguous). Masks may only cut off rows >= M, columns >= N and
   k >= K (TMA zero-fills there), with `other` zero. The loop covers exactly cdiv(K, BK) k-steps.
   Addresses are read as canonical forms (`normfuse.ir.affine`): any association and order of
   the terms, tile indices or offsets, pointers advanced or recomputed.
3. Rows and columns of both loads and of the store come from two scalars (the tile coordinates):
   the template owns the tile order and the persistence, so the lowered kernel computes every tile
   of the [M, N] output whatever order the kernel walked them in. The kernel must therefore cover
   its whole output (every launch of the ops does; a hand launch with a partial grid would differ).
4. Exactly one side effect: the store of a [BM, BN] tile at `Y + rows * stride + cols`, masked by
   rows < M and cols < N only (or, for a post-norm, the two stores of rule 7). Rows, columns and
   K rows must be 16-byte aligned at launch (TMA); a launch that is not falls back to the
   unlowered kernel.
5. Every other loop-carried value is a sum over k that starts at zero: row statistics of the A tile
   (`st + reduce(E(a), axis=1)`, or a [BM, BK] tile reduced after the loop; at most two), or
   column sums of the B tile (`cs + reduce(w [* g[:, None]], axis=0)`), which depend only on the
   weight: they become derived arguments, computed once per weight version at launch (the
   LayerNorm correction colsum(diag(g) W); the template never reads B outside the MMA).
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

Options
-------
schedule = coop | pingpong      coop: one 128x256 tile on two wgmma warpgroups (default; measured
                                fastest with statistics); pingpong: two 128-row tiles, one per
                                warpgroup, main loops taking turns
stages = 0 | 2..6               TMA ring depth (0: the most that fits, at most 3 for coop, 4 ping-pong)
stats-share = false             the row statistics once per row block: the tiles run in an order
                                where a row block's first tile comes at least a wave before its
                                other tiles; it computes the statistics in the MMA warps and stores
                                them in global memory as 64-bit words (value, launch epoch); the
                                other tiles run the plain k-loop and take the words stamped with
                                their launch's epoch in their epilogue. Same numbers, bitwise.
                                Needs all CTAs of the persistent grid resident at once (grid <=
                                SMs, one CTA per SM); not with an A transform (g folded). Measured
                                faster from 8 N tiles per row block (the pre-norm ops use it there)
post-norm = false               lower post-norms (rules 6 and 7): run after epilogue-norm, which
                                puts one-tile rows in registers (`epilogue-norm,hopper-ws{post-norm=
                                true}`); not after cluster-reduce (the template takes the naive
                                kernel's rows, not a cluster's). Needs, like stats-share, every CTA
                                of the grid resident at once. Pingpong takes 64x256 tiles (two
                                accumulators of 64 rows: one consumer's exchange and epilogue run
                                while the other's k-loop does)

Options measured slower and chosen by no default were removed (their numbers are in
docs/NOTES.md): row-major tile runs (`rows-max-k`), a statistics partition reading A from L2
(`stats-partition`), the first post-norms in the template (`epilogue-reductions`, clusters).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import Module, Op, Value
from ..ir import ops
from ..ir import ws_plan as P
from ..ir.affine import (TRIP, DimIndex, Forms, NotAffine, Poly, conditions, divide, dims_of,
                         drop_trip, is_scalar, position, split_dims, swap_dims, trip)
from ..ir.cluster_ptx import MARK as CLUSTER_MARK
from ..ir.effects import writes_memory
from ..ir.match import ForLoop, is_zero_constant
from ..ir.ops import LoadOp, ReduceOp, StoreOp, element_of as element, shape_of as shape
from ..ir.query import (cmp_predicate, constant_value, desc_info, func_params, is_pointer,
                        make_range_bounds)
from . import Pass, PassError, PassRun

_DTYPES = {"bf16": "bf16", "f16": "fp16"}


class _Miss(Exception):
    def __init__(self, msg: str, op: Op | None = None):
        super().__init__(msg)
        self.op = op


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


def _same(a: P.Source | None, b: P.Source | None) -> bool:
    return a is not None and b is not None and a.param == b.param and a.value == b.value


class _Matcher:
    """Reads the kernel: the dot, its loop, the A and B tiles, the store, the loop-carried sums.
    Tile coordinates are scalar forms (`self.pid_m`, `self.pid_n`; None: one tile only)."""

    def __init__(self, module: Module):
        self.module = module
        self.users = module.user_index()
        self.res = self.res_load = None  # a post-norm's residual tile, read by TMA (`_residual`)

    def users_of(self, v: Value) -> list[Op]:
        return self.users.get(id(v), [])

    # -- 1. structure ------------------------------------------------------------------------
    def run(self):
        funcs = [f for f in self.module.functions() if any(o.name == ops.DOT for o in f.walk())]
        if not funcs:
            raise _Miss("no tt.dot: not a GEMM-shaped kernel")
        if len(funcs) > 1:
            raise _Miss("several functions contain a tt.dot")
        func = funcs[0]
        self.func = func
        self.params = func_params(func)
        self.pid = {id(p.value): i for i, p in enumerate(self.params)}
        dots = [o for o in func.walk() if o.name == ops.DOT]
        if len(dots) != 1:
            raise _Miss(f"{len(dots)} tt.dot ops; the lowering handles one accumulator", dots[1])
        dot = dots[0]
        loop_op = dot.block.parent_op
        if loop_op is None or loop_op.name != ops.FOR:
            raise _Miss("the tt.dot is not directly in an scf.for", dot)
        loop = ForLoop(loop_op)
        self.loop, self.dot = loop, dot
        effects = [o for o in func.walk() if not o.regions and writes_memory(o)]
        stores = [o for o in effects if o.name == ops.STORE]
        clustered = next((o for o in effects
                          if o.name == ops.INLINE_ASM and CLUSTER_MARK in o.text), None)
        if clustered is not None:
            raise _Miss("the kernel's rows are split over a thread-block cluster (cluster-reduce ran "
                        "before): the template's post-norm takes the naive kernel (run "
                        "epilogue-norm,hopper-ws{post-norm=true} instead)", clustered)
        self.post = None
        two_passes = len(stores) == 2 and len(effects) == 2
        if two_passes:
            self.store = None  # the post-norm's GEMM tile store (`_two_passes`, below)
        elif len(stores) != 1 or len(effects) != 1:
            bad = next((o for o in effects if o.name != ops.STORE), stores[1] if len(stores) > 1 else None)
            raise _Miss("the kernel has side effects besides one tt.store of the output tile "
                        f"({', '.join(sorted({o.name for o in effects}))})", bad)
        else:
            self.store = stores[0]
        a_v, b_v, c_v = dot.operands[:3]
        if c_v not in loop.iter_args:
            raise _Miss("the dot's accumulator is not carried by its loop", dot)
        self.acc_i = loop.iter_args.index(c_v)
        if loop.yields[self.acc_i] is not dot.results[0]:
            raise _Miss("the loop does not yield the dot's result as the accumulator", dot)
        if not is_zero_constant(loop.inits[self.acc_i]):
            raise _Miss("the accumulator does not start at zero", dot)
        if len(self.users_of(c_v)) != 1:
            raise _Miss("the accumulator has users besides the dot", dot)
        tshape = shape(dot.results[0])
        if len(tshape) != 2 or element(dot.results[0]) != "f32":
            raise _Miss("the dot is not a 2-D fp32-accumulating product", dot)
        self.BM, self.BN = tshape
        self.BK = shape(a_v)[1]
        self.dtype = element(a_v)
        if self.dtype not in _DTYPES or element(b_v) != self.dtype:
            raise _Miss(f"dot operands are {element(a_v)} x {element(b_v)}; the template takes "
                        "bf16 or fp16 (one type)", dot)
        if two_passes:
            # a post-norm whose row spans several N tiles: the GEMM loop's store is the tile, the
            # normalizing loop's store the output
            self.post = _two_passes(self, stores)
            self.store = self.post.s1
        self.forms = Forms(loop)
        self._k_bound()
        self._a_operand(a_v)
        self._b_operand(b_v)
        self._out()
        self._loop_values()

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
            raise _Miss(str(e), self.loop.op)
        if plb.constant() != 0:
            raise _Miss("the k-loop does not start at 0", self.loop.op)
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
                        "(0..cdiv(K, BK) step 1, or 0..K step BK)", self.loop.op)
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
                            f"in the loop ({len(loads)} found)", self.dot)
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
                            "descriptor load", op)
            self.b_load = load
            self.b = self._operand(load, "B", (self.BN, self.BK), k_dim=1)
            self.b_kn = False
            return
        load = self._tile_load(b_v)
        if load is None:
            raise _Miss("the dot's B operand is not a tile loaded in the loop (a B transform is "
                        "not lowered)", self.dot)
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
            raise _Miss("the B tile is not contiguous along K or N", load)

    def _operand(self, load: Op, what: str, tile: tuple, k_dim: int) -> _Operand:
        """A or B read as a [rows, cols] tile of a row-major matrix, k along `k_dim`."""
        if load.name == ops.DESCRIPTOR_LOAD:
            return self._desc_operand(load, what, k_dim)
        base, dims, conds = self._address(load, what)
        if dims[k_dim].stride != Poly.const(1) and dims[1 - k_dim].stride != Poly.const(1):
            raise _Miss(f"the {what} tile is not contiguous along either dimension", load)
        return self._read_dims(load, what, base, dims, conds, tile, k_dim)

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
        r, kk, rest = kd.parts(k_dim)
        if r != 1 or kk != self.BK or rest.terms or kd.modulus is not None:
            raise _Miss(f"the {what} tile does not walk K by {self.BK} per k-step", load)
        r, kk, rest = od.parts(other)
        coord = self._coordinate(rest, tile[other])
        if r != 1 or kk != 0 or coord is False:
            raise _Miss(f"the {what} tile's {'rows' if other == 0 else 'columns'} are not "
                        f"tile * {tile[other]} + position", load)
        limit = None
        if od.modulus is not None:
            limit = self.source(od.modulus)
            if limit is None:
                raise _Miss(f"the {what} tile's rows wrap around by something other than a "
                            "parameter", load)
        klimit = None
        for d in conds:
            lim = self._limit(d, dims, tile, load, what)
            if lim is None:
                continue
            which, src = lim
            if which == k_dim:
                klimit = src
            else:
                limit = src if limit is None or _same(limit, src) else None
                if limit is None:
                    raise _Miss(f"the {what} tile is masked by two different row limits", load)
        if klimit is not None and not _same(klimit, self.K):
            raise _Miss(f"the {what} tile's k mask limit differs from the loop's K", load)
        stride = self.source(od.stride if k_dim == 1 else kd.stride)
        if k_dim == 1 and kd.stride != Poly.const(1):
            raise _Miss(f"the {what} tile is not contiguous along K", load)
        if stride is None:
            raise _Miss(f"the {what} tile's row stride is not a parameter or a constant", load)
        if what == "A":
            self.pid_m, self.m_limit = coord, limit
            return _Operand(self.pid[id(base)], rows=limit or _NONE, cols=self.K, stride=stride)
        self.pid_n, self.n_limit = coord, limit
        if k_dim == 1:  # W [N, K]
            return _Operand(self.pid[id(base)], rows=limit or _NONE, cols=self.K, stride=stride)
        return _Operand(self.pid[id(base)], rows=self.K, cols=limit or _NONE, stride=stride)

    def _limit(self, d: Poly, dims, tile, load, what):
        """The limit of one mask condition `D < 0`: (dimension, source), or None when the condition
        holds for every position of the tile."""
        involved = set().union(*(dims_of(m) for m, _ in d.terms)) if d.terms else set()
        if len(involved) != 1:
            if not involved and d.constant() is not None and d.constant() < 0:
                return None
            raise _Miss(f"the {what} tile's mask is not a bound on one dimension", load)
        dim = involved.pop()
        # trivially true: position r < c with c >= the tile's extent
        c = _constant_term(d)
        rest = d + Poly.const(-c)
        if len(rest.terms) == 1 and position(rest, dim) == 1 and -c >= tile[dim]:
            return None
        src = self.source(dims[dim].inner + d.scale(-1))
        if src is None:
            raise _Miss(f"the {what} tile's mask compares against something other than a "
                        "parameter", load)
        return dim, src

    def _address(self, load: Op, what: str):
        """(base parameter value, per-dimension indices, mask conditions) of a pointer tile load
        whose masked lanes read zero (what TMA fills in)."""
        info = LoadOp(load)
        try:
            base, off = self.pointer(info.ptr, what)
            dims = split_dims(off, 2)
            conds = conditions(self.forms, info.mask) if info.mask is not None else []
        except NotAffine as e:
            raise _Miss(f"the {what} tile's address: {e}", load)
        if id(base) not in self.pid:
            raise _Miss(f"the {what} tile's base pointer is not a kernel parameter", load)
        if info.mask is not None and info.other is not None and not is_zero_constant(info.other):
            raise _Miss(f"the {what} tile's masked lanes are not zero (TMA fills zeros)", load)
        return base, dims, conds

    def _desc_operand(self, load: Op, what: str, k_dim: int) -> _Operand:
        dop = load.operands[0].owner
        info = desc_info(dop) if dop is not None else None
        if info is None or len(info.shape) != 2:
            raise _Miss(f"the {what} descriptor is not made in the kernel by "
                        "tt.make_tensor_descriptor of a 2-D tensor", load)
        if id(info.base) not in self.pid:
            raise _Miss(f"the {what} descriptor's base is not a kernel parameter", load)
        try:
            strides = [self.form(s) for s in info.strides]
            dims_src = [self.source(self.form(s)) for s in info.shape]
            coords = [self.form(c) for c in load.operands[1:3]]
        except NotAffine as e:
            raise _Miss(f"the {what} descriptor: {e}", load)
        if strides[1] != Poly.const(1):
            raise _Miss(f"the {what} descriptor is not contiguous in its last dimension", load)
        stride = self.source(strides[0])
        if stride is None or None in dims_src:
            raise _Miss(f"the {what} descriptor's shape or stride is not a parameter", load)
        other = 1 - k_dim
        block = shape(load.results[0])
        kc, oc = coords[k_dim], coords[other]
        if kc != Poly.atom(TRIP).scale(self.BK):
            raise _Miss(f"the {what} descriptor load does not walk K by {self.BK}", load)
        coord = self._coordinate(oc, block[other])
        if not coord:
            raise _Miss(f"the {what} descriptor load's coordinate is not tile * {block[other]}", load)
        if not _same(dims_src[k_dim], self.K):
            raise _Miss(f"the {what} descriptor's K differs from the loop's", load)
        op = _Operand(self.pid[id(info.base)], rows=dims_src[0], cols=dims_src[1], stride=stride)
        if what == "A":
            self.pid_m, self.m_limit = coord, dims_src[0]
        else:
            self.pid_n, self.n_limit = coord, dims_src[other]
        return op

    # -- 3. the store ------------------------------------------------------------------------
    def _out(self):
        st = self.store
        ptr, val = st.operands[0], st.operands[1]
        mask = st.operands[2] if len(st.operands) > 2 else None
        if shape(val) != (self.BM, self.BN):
            raise _Miss("the stored tile's shape differs from the accumulator's", st)
        if self.loop.contains(val) or st.block is self.loop.body:
            raise _Miss("the output is stored inside the k-loop", st)
        try:
            base, off = self.pointer(ptr, "output")
            dims = split_dims(off, 2)
            conds = conditions(self.forms, mask) if mask is not None else []
        except NotAffine as e:
            raise _Miss(f"the store's address: {e}", st)
        if id(base) not in self.pid:
            raise _Miss("the store's base pointer is not a kernel parameter", st)
        if dims[1].stride != Poly.const(1):
            raise _Miss("the output's rows are not contiguous", st)
        for d, (coord, size) in enumerate(((self.pid_m, self.BM), (self.pid_n, self.BN))):
            r, kk, rest = dims[d].parts(d)
            got = self._coordinate(rest, size)
            if r != 1 or kk != 0 or dims[d].modulus is not None or got is False or got != coord:
                raise _Miss(f"the store's {'rows' if d == 0 else 'columns'} are not the loads' tile "
                            f"coordinate * {size} + position", st)
        stride = self.source(dims[0].stride)
        if stride is None:
            raise _Miss("the output's row stride is not a parameter or a constant", st)
        limits = {}
        for d in conds:
            inv = set().union(*(dims_of(m) for m, _ in d.terms)) if d.terms else set()
            if len(inv) != 1:
                raise _Miss("the store's mask is not a bound on rows or on columns", st)
            dim = inv.pop()
            src = self.source(dims[dim].inner + d.scale(-1))
            if src is None or (dim in limits and not _same(limits[dim], src)):
                raise _Miss("the store's mask is not rows < M and columns < N", st)
            limits[dim] = src
        M = limits.get(0) or self.m_limit
        N = limits.get(1) or self.n_limit
        if M is None or N is None or M.param is None and M.value is None or N.param is None and N.value is None:
            raise _Miss("the output's M or N cannot be told from the store's mask or the loads", st)
        for lim, name in ((self.m_limit, "M"), (self.n_limit, "N")):
            ref = M if name == "M" else N
            if lim is not None and lim.param is not None and not _same(lim, ref):
                raise _Miss(f"the loads and the store use different {name}", st)
        self.M, self.N = M, N
        self.a.rows = M
        if self.b_kn:
            self.b.cols = N
        else:
            self.b.rows = N
        self.out = _Operand(self.pid[id(base)], rows=M, cols=N, stride=stride)
        self.out_dtype = element(val) if element(val) in _DTYPES else None
        if self.out_dtype is None:
            raise _Miss(f"the output is {element(val)}; the template stores bf16 or fp16", st)
        self.out_value = val

    # -- 4. loop-carried sums ----------------------------------------------------------------
    def _loop_values(self):
        loop = self.loop
        self.row_stats: list[tuple[int, Value, str]] = []   # (iter index, contribution, mode)
        self.col_sums: list[tuple[int, P.ColumnSums]] = []
        for i, arg in enumerate(loop.iter_args):
            if i == self.acc_i or is_pointer(arg):
                continue
            y = loop.yields[i]
            if not is_zero_constant(loop.inits[i]):
                raise _Miss("a loop-carried value besides the accumulator does not start at zero",
                            loop.op)
            yo = y.owner
            if yo is None or yo.name != ops.ADDF or arg not in yo.operands:
                raise _Miss("a loop-carried value is not a running sum", loop.op)
            x = yo.operands[1] if yo.operands[0] is arg else yo.operands[0]
            xo = x.owner
            if len(shape(arg)) == 1 and shape(arg)[0] == self.BM and xo is not None \
                    and _is_sum_over(xo, 1):
                self.row_stats.append((i, x, "row"))
            elif shape(arg) == (self.BM, self.BK):
                self.row_stats.append((i, x, "tile"))
            elif len(shape(arg)) == 1 and shape(arg)[0] == self.BN and xo is not None \
                    and _is_sum_over(xo, 0):
                self.col_sums.append((i, self._colsum(xo)))
            else:
                raise _Miss("a loop-carried sum is neither a row statistic of the A tile nor a "
                            "column sum of the B tile", yo)
        if len(self.row_stats) > 2:
            raise _Miss(f"{len(self.row_stats)} row statistics; the template carries two", loop.op)

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
        """Whether `load` (before the k-loop) reads the A tile of the first k-step."""
        a = self.a_load
        if load.name != a.name:
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


def _acc_reductions(m: _Matcher, out: Value) -> Op | None:
    """A tt.reduce over a [BM, BN] value in the epilogue's slice (a post-norm's row statistic)."""
    seen, stack = set(), [out]
    while stack:
        x = stack.pop()
        op = x.owner
        if op is None or id(op) in seen or op is m.loop.op:
            continue
        seen.add(id(op))
        if op.name == ops.REDUCE and shape(op.operands[0]) == (m.BM, m.BN):
            return op
        stack.extend(op.operands)
    return None


# ---------------------------------------------------------------------------------------------
# Post-norm: the naive kernel's two passes over the row's N tiles
# ---------------------------------------------------------------------------------------------

@dataclass
class _Post:
    """A post-norm whose row spans several N tiles, in the naive kernel's form: loop 1 over the
    row's T tiles runs the GEMM's k-loop, stores the tile (`s1`) and carries the row sums
    (`sums`: (loop-1 result index, the tile's share: a sum over the tile's columns)); loop 2
    over the same tiles reloads each tile (`reload`) and stores it normalized (`s2`)."""
    loop1: ForLoop
    loop2: ForLoop
    s1: Op
    s2: Op
    reload: Op
    trips: int
    sums: list


def _two_passes(m: _Matcher, stores: list[Op]) -> _Post:
    """Read the two passes of a naive post-norm (kernels/postnorm_gemm.py's form for N > BN):

        %s = scf.for %n = 0 to T step 1 iter_args(%ss = 0) {      // loop 1 (the k-loop inside)
          %acc = scf.for %k ... { tt.dot }    %v = f(%acc, ...)    // bias, residual, masks
          tt.store %Y[tile n], truncf(%v)     yield %ss + reduce(g(%v), axis=1) }
        %rstd = h(%s)
        scf.for %n = 0 to T step 1 { %y = tt.load %Y[tile n]; tt.store %Y[tile n], norm(%y, %rstd) }

    The row sums split over any partition of the row's columns, so the template computes each
    tile's share reduce(g(v)) on its own CTA and adds the T shares (the exchange); loop 2 reloads
    exactly what loop 1 stored in the same trip (same address and mask under the shared trip
    index, `normfuse.ir.affine`), so its reload is the tile v itself (in fp32: one rounding, as
    epilogue-norm does), and the first store is overwritten by the second everywhere it wrote."""
    kloop = m.loop.op
    l1op = kloop.block.parent_op
    blk = kloop.block
    generic = _Miss("the kernel has side effects besides one tt.store of the output tile (2 "
                    "tt.store, not a post-norm's two passes over the row's N tiles)", stores[1])
    if all(st.block is blk for st in stores):
        first, second = sorted(stores, key=blk.index_of)
        root = StoreOp(first).root
        if root is not None and any(o.name in ops.LOADS and LoadOp(o).root is root
                                    for o in blk.ops[blk.index_of(first) + 1:blk.index_of(second)]):
            raise _Miss("the output tile is stored, reloaded and stored again next to the GEMM (a "
                        "post-norm whose row is one tile): run epilogue-norm first, which "
                        "normalizes it in registers", second)
        raise generic
    s1 = next((st for st in stores if st.block is blk), None)
    if s1 is None or l1op is None or l1op.name != ops.FOR:
        raise generic
    s2 = stores[1] if stores[0] is s1 else stores[0]
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
    # loop 2 reads back exactly what loop 1 stored, trip by trip, and stores over it
    forms = Forms(l1, l2)

    def same(a: tuple, b: tuple) -> bool:
        return len(a) == len(b) and all(
            (x is None and y is None) or (x is not None and y is not None and forms.equal(x, y))
            for x, y in zip(a, b))

    first = StoreOp(s1)
    root = first.root
    reads = [o for o in m.func.walk() if o.name in ops.LOADS and root is not None
             and LoadOp(o).root is root]
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
        sums.append((i, red))
    if not sums:
        raise _Miss("the loop over N tiles accumulates no row sums", l1op)
    if len(sums) > 2:
        raise _Miss(f"{len(sums)} row sums; the template exchanges two", l1op)
    return _Post(l1, l2, s1, s2, reload, b1[1], sums)


# ---------------------------------------------------------------------------------------------
# The hooks as expression DAGs
# ---------------------------------------------------------------------------------------------

class _Untranslatable(Exception):
    """A value the hooks cannot compute; the message names the op."""


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

    def __init__(self, bindings: dict[int, P.Expr], params: dict[int, int]):
        self.bindings = dict(bindings)
        self.params = params
        self.memo: dict[int, P.Expr] = {}

    def __call__(self, v: Value) -> P.Expr:
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


def _hooks(m: _Matcher, post_norm: bool = False):
    """(pre, stats, afn, epi, rows, fin, notes): the hooks' DAGs. `post_norm`: lower row
    reductions of the accumulator (rows and fin: a post-norm whose row spans several tiles)."""
    loop = m.loop
    params = {id(p.value): i for i, p in enumerate(m.params)}
    tile_loads = [o for o in loop.body.ops if _same_tile(o, m.a_load)]
    BM, BN, BK = m.BM, m.BN, m.BK
    el = m.dtype
    af = P.bound("af", 2, "f32")
    a_tile = P.bound("a_tile", 2, el)
    rowvec = lambda name: P.bound(name, 1, "f32")  # noqa: E731

    def coords(include_n: bool):
        """Every scalar value whose form is a tile coordinate binds to it."""
        out = {}
        want = [(m.pid_m, P.bound("pid_m", 0, "i32"))]
        if include_n:
            want.append((m.pid_n, P.bound("pid_n", 0, "i32")))
        want = [(c, b) for c, b in want if c is not None]
        if not want:
            return out
        for r in _scalar_values(m.func):
            if loop.contains(r) or r.owner is loop.op:
                continue
            f = m.forms.form(r)
            for c, b in want:
                if f == c:
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
        pre = P.Hook("pre", (_Exprs(b, params)(pre_value),))
        notes.append("a row vector from the first A tile (the LayerNorm shift) computed in the k-loop's first step")

    def with_c0(b):
        if pre_value is not None:
            b[id(pre_value)] = rowvec("c0")
        return b

    # STATS
    if m.row_stats:
        t = _Exprs(with_c0(loop_bindings()), params)
        stats = P.Hook("stats", tuple(t(x) for _, x, _ in m.row_stats),
                       tuple(mode != "row" for _, _, mode in m.row_stats))
    # AFN
    if m.afn is not None:
        afn = P.Hook("afn", (_Exprs(with_c0(loop_bindings()), params)(m.afn),))
    # EPI
    results = loop.op.results
    b = dict(common)
    b.update(coords(True))
    b[id(results[m.acc_i])] = P.bound("acc", 2, "f32")
    with_c0(b)
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
    for j, (i, _) in enumerate(m.col_sums):
        b[id(results[i])] = P.bound(f"cs{j}", 1, "f32")
    out = _unrounded(m.out_value)
    red = _acc_reductions(m, out)
    if m.post is not None:
        if not post_norm:
            raise _Miss(f"a post-norm whose row spans {m.post.trips} N tiles (two passes over the "
                        "row); not lowered by default (hopper-ws{post-norm=true} lowers it, the "
                        "tiles of a row exchanging their row sums through global memory)", m.post.s2)
        if red is not None:
            raise _Miss("the tile before the norm reduces rows of the accumulator within one N tile",
                        red)
        res = _residual(m, out)
        if isinstance(res, str):
            notes.append(f"the residual tile is read with pointer loads in the epilogue ({res})")
        elif res is not None:
            m.res_load, m.res = res
            b[id(m.res_load.results[0])] = P.bound("res", 2, element(m.res_load.results[0]))
            notes.append("the residual tile loaded by TMA into the output's staging tile during "
                         "the k-loop")
        epi = P.Hook("epi", (_Exprs(b, params)(out),))
        rows, fin = _post_hooks(m, params, coords(True), out)
        notes.append(f"post-norm: the row's {m.post.trips} N tiles on {m.post.trips} CTAs of one "
                     f"wave, {len(m.post.sums)} partial row sum(s) exchanged through global memory "
                     "(stamped words), the tile normalized in fp32 in the epilogue")
        return pre, stats, afn, epi, rows, fin, notes
    if red is not None:
        if not post_norm:
            raise _Miss("the epilogue reduces rows of the accumulator (a post-norm); not lowered by "
                        "default: the template's post-norms measured slower than cluster-reduce and "
                        "epilogue-norm's kernels on the H200 (docs/NOTES.md; "
                        "hopper-ws{post-norm=true} lowers it)", red)
        notes.append("post-norm: the epilogue reduces rows of the accumulator within the tile"
                     + (" (the row is one tile)" if m.pid_n is None else ""))
    epi = P.Hook("epi", (_Exprs(b, params)(out),))
    return pre, stats, afn, epi, None, None, notes


def _residual(m: _Matcher, v: Value):
    """The [BM, BN] tile that the epilogue value `v` reads from a second matrix at the output
    tile's rows and columns (a post-norm's residual), as (load, TileOperand) for the template's
    TMA; None when there is none; the reason (a string) when it cannot be read by TMA."""
    loads, seen, stack = [], set(), [v]
    while stack:
        x = stack.pop()
        op = x.owner
        if op is None or id(op) in seen or op is m.loop.op:
            continue
        seen.add(id(op))
        if op.name == ops.LOAD and shape(x) == (m.BM, m.BN):
            loads.append(op)
            continue
        if op.name in ops.LOADS:
            continue
        stack.extend(op.operands)
    if not loads:
        return None
    if len(loads) > 1:
        return f"{len(loads)} tiles of other matrices"
    load = loads[0]
    info = LoadOp(load)
    try:
        base, off = m.pointer(info.ptr, "residual")
        dims = split_dims(off, 2)
        conds = conditions(m.forms, info.mask) if info.mask is not None else []
    except NotAffine as e:
        return f"its address: {e}"
    if id(base) not in m.pid:
        return "its base pointer is not a kernel parameter"
    if info.other is not None and not is_zero_constant(info.other):
        return "its masked lanes are not zero (TMA fills zeros)"
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
    el = element(load.results[0])
    if el != m.out_dtype:
        return f"it is {el}, the output {m.out_dtype} (the tile is staged in the output's buffer)"
    return load, P.TileOperand(m.pid[id(base)], rows=m.M, cols=m.N, stride=stride)


def _unrounded(v: Value) -> Value:
    """The fp32 value a store rounds (truncf's operand), else `v`."""
    o = v.owner
    if o is not None and o.name == ops.TRUNCF and element(o.operands[0]) == "f32":
        return o.operands[0]
    return v


def _post_hooks(m: _Matcher, params: dict, coords: dict, tile: Value):
    """ROWS and FIN of a two-pass post-norm (`_two_passes`): ROWS is each row sum's share per tile
    over the tile value `tile` (bound to y), FIN the normalizing loop's stored value with its
    reload bound to y (fp32; rounded to the reload's type where the loop reads it unconverted),
    loop 1's results (the row sums) to s0, s1 and loop 2's index to the N tile."""
    post = m.post
    y = P.bound("y", 2, "f32")
    b = dict(coords)
    b[id(tile)] = y
    t = _Exprs(b, params)
    rows = P.Hook("rows", tuple(t(red.operands[0]) for _, red in post.sums),
                  tuple(True for _ in post.sums))
    b = dict(coords)
    b[id(post.loop2.iv)] = P.bound("pid_n", 0, "i32")
    r = post.reload.results[0]
    b[id(r)] = P.expr("cast", y, attr=element(r), rank=2, dtype=element(r))
    for u in m.users_of(r):
        if u.name == ops.EXTF and element(u.results[0]) == "f32":
            b[id(u.results[0])] = y
    for j, (i, _) in enumerate(post.sums):
        b[id(post.loop1.op.results[i])] = P.bound(f"s{j}", 1, "f32")
    out = _unrounded(StoreOp(post.s2).value)
    red = _acc_reductions(m, out)
    if red is not None:
        raise _Miss("the normalizing loop reduces rows of the reloaded tile", red)
    fin = P.Hook("fin", (_Exprs(b, params)(out),))
    return rows, fin


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------

_BUDGET = 227 * 1024 - 1024  # shared memory per CTA on sm_90, less Triton's own reserve
# words of partial row sums a consumer thread holds in flight in one step of the gather (next to
# the 128-register tile: 16 spilled at 128 x 128 ping-pong, LayerNorm, N = 8192)
_GATHER_WORDS = 8


def _row_chunk(trips: int, sums: int, cfg: P.WSConfig) -> int:
    """N tiles per step of the gather: all of the row's (a power of two) when they fit
    _GATHER_WORDS words per consumer thread, else as many as do (2..32)."""
    fit = _GATHER_WORDS * 32 * cfg.consumer_warps // (cfg.block_m * sums)
    return max(2, min(32, 1 << (trips - 1).bit_length(), 1 << (max(fit, 1).bit_length() - 1)))


def _stats_where(cfg: P.WSConfig) -> str:
    if cfg.stats_share:
        return ("in the MMA warps, once per row block (its first tile, a wave ahead of the others), "
                "shared through global memory")
    return "in the MMA warps"


@dataclass
class HopperWS(Pass):
    """Plan the lowering of a fused GEMM-shaped kernel to the warp-specialized Hopper template
    (see the module docstring)."""

    name = "hopper-ws"
    lowers = True  # returns a plan; the pipeline replaces the module by the backend's TTGIR
    summary = ("lower a fused GEMM-shaped kernel (statistics in the k-loop, elementwise epilogue) "
               "to a warp-specialized Gluon template for sm_90: TMA loader + wgmma warpgroups")
    schedule: str = "coop"
    stages: int = 0
    # the row statistics computed once per row block (by the MMA warps of the CTA that owns the
    # row block's first tile) and shared with the other CTAs through global memory
    stats_share: bool = False
    # lower post-norms: row reductions of the accumulator in the epilogue, and the naive kernel's
    # two passes over a row of several N tiles (the tiles exchanging their row sums)
    post_norm: bool = False

    def __post_init__(self):
        if self.schedule not in ("coop", "pingpong"):
            raise PassError(f"option hopper-ws{{schedule}} must be coop or pingpong, got '{self.schedule}'")
        if not (self.stages == 0 or 2 <= int(self.stages) <= 6):
            raise PassError(f"option hopper-ws{{stages}} must be 0 or 2..6, got {self.stages}")

    def config(self, m: _Matcher, share: bool) -> P.WSConfig:
        """The schedule's tile config at the deepest ring that fits (at most the schedule's
        default depth unless `stages` asks for more)."""
        if self.schedule == "coop":
            if (m.BM, m.BN) != (128, 256) and m.BM % 128:
                raise _Miss(f"the coop schedule takes 128-row tiles, the kernel has {m.BM}x{m.BN}")
            cfg = P.WSConfig(block_m=m.BM, block_n=m.BN, block_k=m.BK, stages=3, consumers=1,
                             consumer_warps=8)
        else:
            cfg = P.WSConfig(block_m=m.BM, block_n=m.BN, block_k=m.BK, stages=4, consumers=2,
                             consumer_warps=4)
        if m.BM % (16 * cfg.consumer_warps) or m.BN > 256 or m.BN % 16 or m.BK % 16:
            raise _Miss(f"tile {m.BM}x{m.BN}x{m.BK} does not fit the {self.schedule} schedule "
                        f"({cfg.consumer_warps} warps of 16-row wgmma, n <= 256)")
        stages = int(self.stages) or cfg.stages
        while stages > 2 and replace(cfg, stages=stages).smem_bytes() > _BUDGET:
            stages -= 1
        cfg = replace(cfg, stages=stages)
        if cfg.smem_bytes() > _BUDGET:
            raise _Miss(f"tile {m.BM}x{m.BN}x{m.BK} needs {cfg.smem_bytes()} bytes of shared "
                        f"memory at {stages} stages")
        if share and cfg.consumers == 1:
            cfg = replace(cfg, stats_share=True)
        return cfg

    def plan(self, module: Module) -> tuple[P.WSPlan, Op]:
        """The plan for `module` and its dot, or _Miss with the reason."""
        m = _Matcher(module)
        try:
            m.run()
        except NotAffine as e:
            raise _Miss(str(e))
        try:
            pre, stats, afn, epi, rows, fin, notes = _hooks(m, self.post_norm)
        except _Untranslatable as e:
            raise _Miss(f"cannot translate {e} into the template's hooks")
        share = self.stats_share and stats is not None and afn is None and rows is None
        cfg = self.config(m, share)
        if self.stats_share and stats is not None and not cfg.stats_share:
            notes.append("stats-share not applied: " + (
                "the A operand is computed in the k-loop (g or beta not folded)" if afn is not None
                else "the kernel is a post-norm" if rows is not None
                else "it needs the coop schedule"))
        if rows is not None:
            cfg = replace(cfg, row_exchange=len(rows.results),
                          row_chunk=_row_chunk(m.post.trips, len(rows.results), cfg))
        a, b, out = m.a.frozen(), m.b.frozen(), m.out.frozen()
        needs = [P.TmaDescriptor("a", (m.BM, m.BK)),
                 P.TmaDescriptor("b", (m.BK, m.BN) if m.b_kn else (m.BN, m.BK)),
                 P.TmaDescriptor("out", (m.BM, m.BN))]
        if m.res is not None:
            needs.append(P.TmaDescriptor("res", (m.BM, m.BN)))
        needs += [P.DerivedArgument(c) for _, c in m.col_sums]
        needs.append(P.PersistentGrid(m.BM, m.BN, whole_rows=rows is not None))
        if cfg.stats_share:
            needs.append(P.SharedStatistics(m.BM))
        if rows is not None:
            needs.append(P.SharedStatistics(m.BM, row_sums=len(rows.results), block_n=m.BN))
        return P.WSPlan(
            kernel_name=ops.FuncOp(m.func).sym_name, params=tuple((p.name, p.type) for p in m.params),
            a=a, b=b, out=out, b_kn=m.b_kn, M=m.M, N=m.N, K=m.K, dtype=_DTYPES[m.dtype],
            out_dtype=_DTYPES[m.out_dtype], config=cfg, single=(m.pid_m is None, m.pid_n is None),
            pre=pre, stats=stats, afn=afn, epi=epi, rows=rows, fin=fin,
            res=m.res, res_dtype=_DTYPES[m.out_dtype] if m.res is not None else "",
            n_stats=len(m.row_stats),
            column_sums=tuple(c for _, c in m.col_sums), notes=tuple(notes),
            needs=tuple(needs)), m.dot

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        try:
            plan, dot = self.plan(module)
        except _Miss as e:
            run.missed(str(e), e.op)
            return
        cfg = plan.config
        hooks = (plan.pre, plan.stats, plan.afn, plan.epi, plan.rows, plan.fin)
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
