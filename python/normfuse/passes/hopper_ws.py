"""hopper-ws: lower a fused GEMM-shaped kernel to the warp-specialized Hopper template (Gluon).

What it does
------------
The fusion passes leave a kernel whose heavy part is one k-loop: two tile loads (A [BM, BK] and
B) feeding a `tt.dot`, side reductions of the A tiles (the statistics lazy-prenorm moved into the
loop), perhaps an elementwise A transform (g and beta applied in the loop), and an epilogue on the
accumulator (the row scale, the LayerNorm correction, a bias) before one masked store. Triton 3.6
does not warp-specialize such a loop on sm_90 and its pipeliner cannot give the statistics the
MMA's own tile (DESIGN.md). This pass matches that structure, translates everything that is not
the GEMM into four small Gluon functions (`lowering/codegen.py`) and instantiates the
warp-specialized template of `lowering/ws_gemm.py` with them (a TMA loader warpgroup, two wgmma
warpgroups that also accumulate the statistics from the same shared A tile, persistent tiles).
The module becomes the template instance's TTGIR (`ttg.warp_specialize`, sm_90).

Before (after lazy-prenorm, RMSNorm with g folded; one program per tile or persistent)::

    %acc:4 = scf.for %k = 0 to cdiv(K, 64) iter_args(%pa, %pw, %acc = 0, %ss = 0) {
      %x = tt.load %pa, %kmask, 0   %w = tt.load %pw, ...   %d = tt.dot %x, %w, %acc
      %x2 = tt.load %pa ... cg      %ss' = %ss + reduce(extf(%x2) * extf(%x2)) ... }
    %r = 1 / sqrt(%acc#3 / K + eps)      tt.store %Y + rows * stride + cols, truncf(%acc#2 * %r)

After::

    ttg.warp_specialize(...)        default: 2 wgmma warpgroups (STATS, EPI inlined)
    partition0: 4 warps             TMA loads of A [128, 64] and W [256, 64] into a 3-slot ring

with the hooks generated from the IR::

    STATS(af, ...) -> st0 + gl.sum(af * af, axis=1)          # the loop's statistics
    EPI(acc, st0, ...) -> acc * gl.expand_dims(1.0 / gl.sqrt(st0 / K + eps), 1)

Legality (each failure leaves the IR unchanged and emits a "missed" remark naming the reason)
---------------------------------------------------------------------------------------------
1. One `tt.func` with exactly one `tt.dot` (bf16 or fp16 operands, fp32 accumulator) in an
   `scf.for`; the accumulator is an iter_arg that starts at zero and is used only by the dot.
2. The A tile is a 2-D load in the loop at `base + rows * stride + k` (rows = tile * BM + r, maybe
   `% M`; k = r + BK * step, contiguous), or a tensor-descriptor load; B likewise, as W [N, K]
   (k contiguous) or [K, N] (n contiguous). Masks may only cut off rows >= M, columns >= N and
   k >= K (TMA zero-fills there), with `other` zero. The loop covers exactly cdiv(K, BK) k-steps.
3. Rows and columns of both loads and of the store come from two scalars (the tile coordinates):
   the template owns the tile order and the persistence, so the lowered kernel computes every tile
   of the [M, N] output whatever order the kernel walked them in. The kernel must therefore cover
   its whole output (every launch of the ops does; a hand launch with a partial grid would differ).
4. Exactly one side effect: the store of a [BM, BN] tile at `Y + rows * stride + cols`, masked by
   rows < M and cols < N only. Rows, columns and K rows must be 16-byte aligned at launch (TMA);
   a launch that is not falls back to the unlowered kernel.
5. Every other loop-carried value is a sum over k that starts at zero: row statistics of the A tile
   (`st + reduce(E(a), axis=1)`, or a [BM, BK] tile reduced after the loop; at most two), or
   column sums of the B tile (`cs + reduce(w [* g[:, None]], axis=0)`), which depend only on the
   weight: they become derived arguments, computed once per weight version at launch (the
   LayerNorm correction colsum(diag(g) W); the template never reads B outside the MMA).
6. Everything else (the A transform, row vectors computed from the first A tile, the epilogue)
   must be made of elementwise ops, broadcasts, 1-D loads and single-op reductions over values the
   template provides (see codegen.Translator). Row reductions of the accumulator (a post-norm) are
   lowered only with `epilogue-reductions=true`: measured on the H200 (2026-11-30), the template's
   one-CTA and cluster post-norms are slower than cluster-reduce/epilogue-norm's Triton kernels.

Options
-------
schedule = coop | pingpong      coop: one 128x256 tile on two wgmma warpgroups (default; measured
                                fastest with statistics); pingpong: two 128x128 tiles, one per
                                warpgroup, main loops taking turns
stages = 0 | 2..6               TMA ring depth (0: the most that fits, at most 3 for coop, 4 ping-pong)
epilogue-reductions = false     also lower row reductions of the accumulator (post-norms)
rows-max-k = 0                  launches with K <= this walk each CTA's contiguous run of tiles
                                in row-major order (the N tiles of a row block in turn), and the
                                row statistics are computed once per run of a row block, not per
                                tile; 0: the grouped order always (measured faster in every cell
                                on the H200, 2026-11-30: bench/results/2026-11-30/ab-order)
stats-partition = false         the row statistics in a partition of their own, reading A from L2
                                with plain loads instead of the MMA warps re-reading shared memory
stats-share = false             the row statistics once per row block: the tiles run in an order
                                where a row block's first tile comes at least a wave before its
                                other tiles; it computes the statistics in the MMA warps and stores
                                them in global memory as 64-bit words (value, launch epoch); the
                                other tiles run the plain k-loop and take the words stamped with
                                their launch's epoch in their epilogue. Same numbers, bitwise.
                                Needs all CTAs of the persistent grid resident at once (grid <=
                                SMs, one CTA per SM); not with an A transform (g folded). Measured
                                faster from 8 N tiles per row block (the pre-norm ops use it there)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Module, Op, Value
from ..ir.match import ForLoop, LocResolver, is_zero_constant
from ..ir import ops
from ..ir.effects import writes_memory
from ..ir.ops import LoadOp, ReduceOp, element_of as element, shape_of as shape
from ..ir.query import desc_info, func_params, is_pointer, pointee
from . import Pass, PassError

_DTYPES = {"bf16": "bf16", "f16": "fp16"}


class _Miss(Exception):
    def __init__(self, msg: str, op: Op | None = None):
        super().__init__(msg)
        self.op = op


@dataclass
class Source:
    """Where a launch-time value comes from: kernel parameter `param` or the constant `value`."""
    param: int | None = None
    value: int | None = None


@dataclass
class TileOperand:
    """A 2-D operand read (or written) by TMA: rows x cols of a row-major matrix."""
    base: int                 # kernel parameter holding the pointer
    rows: Source
    cols: Source
    stride: Source            # elements between rows (the column stride is 1)


@dataclass
class Derived:
    """A per-column vector computed at launch from the weight: sum over k of B[k, n] (* scale[k])."""
    weight: int
    scale: int | None


@dataclass
class Lowering:
    """What the pass decided; the launch adapter (lowering/launch.py) reads it."""
    kernel_name: str
    params: list
    a: TileOperand
    b: TileOperand
    b_kn: bool
    out: TileOperand
    M: Source
    N: Source
    K: Source
    eargs: list               # ("param", index) | ("derived", Derived)
    instance: object          # runtime.Instance
    source: str               # the generated hook module
    compiled: object = None   # Triton CompiledKernel of the instance (cuda:90)
    notes: list = field(default_factory=list)
    single: tuple = (False, False)  # the kernel covers one row (column) tile: needs M <= BM (N <= BN)


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------

def _source(poly, ev, params_by_id) -> Source | None:
    """A polynomial that is one kernel parameter or one constant."""
    if not poly:
        return Source(value=0)
    if len(poly) != 1:
        return None
    (m, c), = poly.items()
    if m == ():
        return Source(value=c)
    if c == 1 and len(m) == 1 and m[0][0] == "v":
        v = ev.value_of(m[0])
        if v is not None and id(v) in params_by_id:
            return Source(param=params_by_id[id(v)])
    return None


def _same(a: Source, b: Source) -> bool:
    return a.param == b.param and a.value == b.value


class _Matcher:
    def __init__(self, module: Module):
        self.module = module
        self.users = module.user_index()

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
        if len(stores) != 1 or len(effects) != 1:
            bad = next((o for o in effects if o.name != ops.STORE), stores[1] if len(stores) > 1 else None)
            raise _Miss("the kernel has side effects besides one tt.store of the output tile "
                        f"({', '.join(sorted({o.name for o in effects}))})", bad)
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
        from ..lowering.affine import Evaluator
        self.ev = Evaluator(loop)
        self._k_bound()
        self._a_operand(a_v)
        self._b_operand(b_v)
        self._out()
        self._loop_values()

    # -- 2. loads ----------------------------------------------------------------------------
    def _k_bound(self):
        from ..lowering.affine import NotAffine
        lb, ub, step = self.loop.bounds
        try:
            plb, pub, pstep = self.ev.ev(lb), self.ev.ev(ub), self.ev.ev(step)
        except NotAffine as e:
            raise _Miss(str(e), self.loop.op)
        if plb:
            raise _Miss("the k-loop does not start at 0", self.loop.op)
        if pstep == {(): self.BK}:
            src = _source(pub, self.ev, self.pid)
        elif pstep == {(): 1}:
            # cdiv(K, BK) = (K + BK - 1) / BK
            src = None
            op = ub.owner
            if op is not None and op.name == ops.DIVSI and self.ev.ev(op.operands[1]) == {(): self.BK}:
                inner = dict(self.ev.ev(op.operands[0]))
                if inner.get((), 0) == self.BK - 1:
                    inner.pop(())
                    src = _source(inner, self.ev, self.pid)
        else:
            src = None
        if src is None:
            raise _Miss(f"the k-loop does not run over cdiv(K, {self.BK}) tiles of K "
                        "(0..cdiv(K, BK) step 1, or 0..K step BK)", self.loop.op)
        self.K = src

    def _tile_load(self, v: Value) -> Op | None:
        op = v.owner
        if op is not None and op.name in (ops.LOAD, ops.DESCRIPTOR_LOAD) and self.loop.contains(v):
            return op
        return None

    def _a_operand(self, a_v: Value):
        src = a_v
        if src.owner is not None and src.owner.name == ops.TRUNCF:
            src = src.owner.operands[0]
        load = self._tile_load(a_v)
        if load is None:
            # an A transform: find the one tile load it starts from
            loads = self._loads_under(src)
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

    def _loads_under(self, v: Value) -> list[Op]:
        """The 2-D tile loads inside the k-loop that `v` is computed from."""
        return _tile_loads_feeding(v, self.loop.contains)

    def _b_operand(self, b_v: Value):
        op = b_v.owner
        if op is not None and op.name == ops.TRANS:
            inner = op.operands[0]
            load = self._tile_load(inner)
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
        self.b, self.b_kn = self._b_pointer(load)

    def _operand(self, load: Op, what: str, tile: tuple, k_dim: int) -> TileOperand:
        """A or B read as a [rows, cols] tile of a row-major matrix, k along `k_dim`."""
        if load.name == ops.DESCRIPTOR_LOAD:
            return self._desc_operand(load, what, k_dim)
        base, dims, conds = self._address(load, what)
        other_dim = 1 - k_dim
        if dims[k_dim].stride != {(): 1} and dims[other_dim].stride != {(): 1}:
            raise _Miss(f"the {what} tile is not contiguous along either dimension", load)
        return self._read_dims(load, what, base, dims, conds, tile, k_dim)

    def _read_dims(self, load, what, base, dims, conds, tile, k_dim) -> TileOperand:
        other = 1 - k_dim
        kd, od = dims[k_dim], dims[other]
        r, kk, rest = kd.parts(k_dim)
        if r != 1 or kk != self.BK or rest or kd.modulus is not None:
            raise _Miss(f"the {what} tile does not walk K by {self.BK} per k-step", load)
        r, kk, rest = od.parts(other)
        if r != 1 or kk != 0 or len(rest) > 1:
            raise _Miss(f"the {what} tile's {'rows' if other == 0 else 'columns'} are not "
                        f"tile * {tile[other]} + position", load)
        if rest:
            (m, c), = rest.items()
            if c != tile[other] or len(m) != 1 or m[0][0] != "v":
                raise _Miss(f"the {what} tile's {'rows' if other == 0 else 'columns'} are not "
                            f"tile * {tile[other]} + position", load)
            coord = self.ev.value_of(m[0])
        else:
            coord = None  # one tile along this dimension: the launch checks that it covers it
        limit = None
        if od.modulus is not None:
            limit = _source(od.modulus, self.ev, self.pid)
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
        stride = _source(od.stride, self.ev, self.pid) if k_dim == 1 else _source(kd.stride, self.ev, self.pid)
        if k_dim == 1 and kd.stride != {(): 1}:
            raise _Miss(f"the {what} tile is not contiguous along K", load)
        if stride is None:
            raise _Miss(f"the {what} tile's row stride is not a parameter or a constant", load)
        if what == "A":
            self.pid_m, self.m_limit = coord, limit
            return TileOperand(self.pid[id(base)], rows=limit or Source(value=None), cols=self.K,
                               stride=stride)
        self.pid_n, self.n_limit = coord, limit
        if k_dim == 1:  # W [N, K]
            return TileOperand(self.pid[id(base)], rows=limit or Source(value=None), cols=self.K,
                               stride=stride)
        return TileOperand(self.pid[id(base)], rows=self.K, cols=limit or Source(value=None), stride=stride)

    def _limit(self, d, dims, tile, load, what):
        """The limit of one mask condition `D < 0`: (dimension, source), or None when the condition
        holds for every position of the tile."""
        from ..lowering.affine import atoms_of, dims_of_atom, padd
        involved = set().union(*(dims_of_atom(a) for a in atoms_of(d))) if d else set()
        if len(involved) != 1:
            if not involved and d.get((), 0) < 0 and len(d) == 1:
                return None
            raise _Miss(f"the {what} tile's mask is not a bound on one dimension", load)
        dim = involved.pop()
        # trivially true: position r < c with c >= the tile's extent
        if set(d) <= {(("r", dim),), ()} and d.get((("r", dim),)) == 1:
            if -d.get((), 0) >= tile[dim]:
                return None
        idx = dims[dim].inner
        lim = padd(idx, d, -1)
        src = _source(lim, self.ev, self.pid)
        if src is None:
            raise _Miss(f"the {what} tile's mask compares against something other than a "
                        "parameter", load)
        return dim, src

    def _address(self, load: Op, what: str):
        """(base parameter value, per-dimension indices, mask conditions) of a pointer tile load
        whose masked lanes read zero (what TMA fills in)."""
        from ..lowering.affine import NotAffine, split_dims
        info = LoadOp(load)
        try:
            base, off = self.ev.evp(info.ptr)
            dims = split_dims(off, 2)
            conds = self.ev.conditions(info.mask) if info.mask is not None else []
        except NotAffine as e:
            raise _Miss(f"the {what} tile's address: {e}", load)
        if id(base) not in self.pid:
            raise _Miss(f"the {what} tile's base pointer is not a kernel parameter", load)
        if info.mask is not None and info.other is not None and not is_zero_constant(info.other):
            raise _Miss(f"the {what} tile's masked lanes are not zero (TMA fills zeros)", load)
        return base, dims, conds

    def _b_pointer(self, load: Op):
        base, dims, conds = self._address(load, "B")
        # [BK, BN] tile: dim 0 = k, dim 1 = n
        if dims[0].stride == {(): 1}:   # W [N, K]: k contiguous, n rows of W
            from ..lowering.affine import DimIndex
            sw = [DimIndex(d.stride, self._swap([d.index])[0]) for d in (dims[1], dims[0])]
            op = self._read_dims(load, "B", base, sw, self._swap(conds), (self.BN, self.BK), 1)
            return op, False
        if dims[1].stride == {(): 1}:   # W [K, N]
            return self._read_dims(load, "B", base, dims, conds, (self.BK, self.BN), 0), True
        raise _Miss("the B tile is not contiguous along K or N", load)

    @staticmethod
    def _swap(conds):
        def sw(a):
            if a[0] == "r":
                return ("r", 1 - a[1])
            if a[0] in ("rem", "div"):
                return (a[0], tuple((_mono_key(tuple(sw(x) for x in m)), c) for m, c in a[1]),
                        tuple((_mono_key(tuple(sw(x) for x in m)), c) for m, c in a[2]))
            return a
        from ..lowering.affine import _mono_key
        return [{_mono_key(tuple(sw(a) for a in m)): c for m, c in d.items()} for d in conds]

    def _desc_operand(self, load: Op, what: str, k_dim: int) -> TileOperand:
        from ..lowering.affine import NotAffine
        desc_v = load.operands[0]
        dop = desc_v.owner
        info = desc_info(dop) if dop is not None else None
        if info is None or len(info.shape) != 2:
            raise _Miss(f"the {what} descriptor is not made in the kernel by "
                        "tt.make_tensor_descriptor of a 2-D tensor", load)
        if id(info.base) not in self.pid:
            raise _Miss(f"the {what} descriptor's base is not a kernel parameter", load)
        try:
            strides = [self.ev.ev(s) for s in info.strides]
            dims_src = [_source(self.ev.ev(s), self.ev, self.pid) for s in info.shape]
            coords = [self.ev.ev(c) for c in load.operands[1:3]]
        except NotAffine as e:
            raise _Miss(f"the {what} descriptor: {e}", load)
        if strides[1] != {(): 1}:
            raise _Miss(f"the {what} descriptor is not contiguous in its last dimension", load)
        stride = _source(strides[0], self.ev, self.pid)
        if stride is None or None in dims_src:
            raise _Miss(f"the {what} descriptor's shape or stride is not a parameter", load)
        other = 1 - k_dim
        block = shape(load.results[0])
        kc, oc = coords[k_dim], coords[other]
        if kc != {(("kk",),): self.BK}:
            raise _Miss(f"the {what} descriptor load does not walk K by {self.BK}", load)
        if len(oc) != 1:
            raise _Miss(f"the {what} descriptor load's coordinate is not tile * {block[other]}", load)
        (m, c), = oc.items()
        if c != block[other] or len(m) != 1 or m[0][0] != "v":
            raise _Miss(f"the {what} descriptor load's coordinate is not tile * {block[other]}", load)
        coord = self.ev.value_of(m[0])
        if not _same(dims_src[k_dim], self.K):
            raise _Miss(f"the {what} descriptor's K differs from the loop's", load)
        op = TileOperand(self.pid[id(info.base)], rows=dims_src[0], cols=dims_src[1], stride=stride)
        if what == "A":
            self.pid_m, self.m_limit = coord, dims_src[0]
        else:
            self.pid_n, self.n_limit = coord, dims_src[other]
        return op

    # -- 3. the store ------------------------------------------------------------------------
    def _out(self):
        from ..lowering.affine import Evaluator, NotAffine, split_dims
        st = self.store
        ptr, val = st.operands[0], st.operands[1]
        mask = st.operands[2] if len(st.operands) > 2 else None
        if shape(val) != (self.BM, self.BN):
            raise _Miss("the stored tile's shape differs from the accumulator's", st)
        if self.loop.contains(val) or st.block is self.loop.body:
            raise _Miss("the output is stored inside the k-loop", st)
        ev = Evaluator(None)
        ev.values.update(self.ev.values)
        self.ev_out = ev
        try:
            base, off = ev.evp(ptr)
            dims = split_dims(off, 2)
            conds = ev.conditions(mask) if mask is not None else []
        except NotAffine as e:
            raise _Miss(f"the store's address: {e}", st)
        if id(base) not in self.pid:
            raise _Miss("the store's base pointer is not a kernel parameter", st)
        if dims[1].stride != {(): 1}:
            raise _Miss("the output's rows are not contiguous", st)
        for d, (coord, size) in enumerate(((self.pid_m, self.BM), (self.pid_n, self.BN))):
            r, kk, rest = dims[d].parts(d)
            ok = r == 1 and kk == 0 and dims[d].modulus is None and len(rest) == (coord is not None)
            if ok and rest:
                (m, c), = rest.items()
                ok = c == size and len(m) == 1 and m[0][0] == "v" and ev.value_of(m[0]) is coord
            if not ok:
                raise _Miss(f"the store's {'rows' if d == 0 else 'columns'} are not the loads' tile "
                            f"coordinate * {size} + position", st)
        stride = _source(dims[0].stride, ev, self.pid)
        if stride is None:
            raise _Miss("the output's row stride is not a parameter or a constant", st)
        limits = {}
        from ..lowering.affine import atoms_of, dims_of_atom, padd
        for d in conds:
            inv = set().union(*(dims_of_atom(a) for a in atoms_of(d))) if d else set()
            if len(inv) != 1:
                raise _Miss("the store's mask is not a bound on rows or on columns", st)
            dim = inv.pop()
            src = _source(padd(dims[dim].inner, d, -1), ev, self.pid)
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
        self.out = TileOperand(self.pid[id(base)], rows=M, cols=N, stride=stride)
        self.out_dtype = element(val) if element(val) in _DTYPES else None
        if self.out_dtype is None:
            raise _Miss(f"the output is {element(val)}; the template stores bf16 or fp16", st)
        self.out_value = val

    # -- 4. loop-carried sums ----------------------------------------------------------------
    def _loop_values(self):
        loop = self.loop
        self.row_stats: list[tuple[int, Value, str]] = []   # (iter index, contribution, mode)
        self.col_sums: list[tuple[int, Derived]] = []
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

    def _colsum(self, red: Op) -> Derived:
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
        return Derived(self.b.base, scale)

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
        from ..lowering.affine import NotAffine
        op = v.owner
        while op is not None and op.name in (ops.BROADCAST, ops.EXPAND_DIMS, ops.EXTF):
            v = op.operands[0]
            op = v.owner
        if op is None or op.name != ops.LOAD or len(shape(v)) != 1:
            raise _Miss("a column sum's scale is not a vector loaded over K", at)
        info = LoadOp(op)
        try:
            base, off = self.ev.evp(info.ptr)
        except NotAffine as e:
            raise _Miss(f"a column sum's scale: {e}", at)
        if id(base) not in self.pid or off != {(("r", 0),): 1, (("kk",),): self.BK}:
            raise _Miss("a column sum's scale is not loaded at k * BK + position from a parameter", at)
        return self.pid[id(base)]


# ---------------------------------------------------------------------------------------------
# Hook generation
# ---------------------------------------------------------------------------------------------

_HEADER = '''"""Hooks generated by normfuse's hopper-ws pass for `{name}` (do not edit: regenerated)."""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from normfuse.lowering.ws_gemm import cluster_sum, colvec, fit, vec_layout  # noqa: F401

'''


def _generate(m: _Matcher, epilogue_reductions: bool):
    from ..lowering.codegen import Translator
    loop = m.loop
    eargs: list = []          # ("derived", Derived) first, then ("param", i)
    for _, d in m.col_sums:
        eargs.append(("derived", d))
    pos_of_param: dict[int, int] = {}

    def earg_pos(i: int) -> int:
        if i not in pos_of_param:
            pos_of_param[i] = len(eargs)
            eargs.append(("param", i))
        return pos_of_param[i]

    params = {id(p.value): i for i, p in enumerate(m.params)}
    tile_loads = [o for o in loop.body.ops if _same_tile(o, m.a_load)]
    el = {"bf16": "gl.bfloat16", "f16": "gl.float16"}[m.dtype]
    common = {id(m.pid_m): "pid_m"} if m.pid_m is not None else {}

    def loop_bindings():
        b = dict(common)
        b[id(loop.iv)] = "kk" if loop.bounds and m.ev.ev(loop.bounds[2]) == {(): 1} else f"(kk * {m.BK})"
        for ld in tile_loads:
            b[id(ld.results[0])] = f"af.to({el})"
            for u in m.users_of(ld.results[0]):
                if u.name == ops.EXTF and element(u.results[0]) == "f32":
                    b[id(u.results[0])] = "af"
        return b

    funcs = []
    notes = []
    # PRE: row vectors defined before the loop and used in it, computed from the first A tile
    pre_value = None
    used_outside = _outer_row_vectors(m)
    if len(used_outside) > 1:
        raise _Miss("several row vectors from before the k-loop are used in it", loop.op)
    if used_outside:
        pre_value, first_load = used_outside[0]
        if not _first_tile(m, first_load):
            raise _Miss("a row vector used in the k-loop is computed from a tile other than the "
                        "first A tile", first_load)
        b = dict(common)
        b[id(first_load.results[0])] = f"af.to({el})"
        for u in m.users_of(first_load.results[0]):
            if u.name == ops.EXTF and element(u.results[0]) == "f32":
                b[id(u.results[0])] = "af"
        t = Translator(b, params, earg_pos, "af")
        r = t.expr(pre_value)
        funcs.append(("pre", "af, pid_m, eargs", t.lines, r))
        notes.append("a row vector from the first A tile (the LayerNorm shift) computed in the k-loop's first step")

    def with_c0(b):
        if pre_value is not None:
            b[id(pre_value)] = "c0"
        return b

    # STATS
    if m.row_stats:
        t = Translator(with_c0(loop_bindings()), params, earg_pos, "af")
        rets = []
        for j, (i, x, mode) in enumerate(m.row_stats):
            e = t.expr(x)
            rets.append(f"st{j} + {e}" if mode == "row" else f"st{j} + gl.sum({e}, axis=1)")
        while len(rets) < 2:
            rets.append(f"st{len(rets)}")
        funcs.append(("stats", "af, c0, st0, st1, kk, pid_m, eargs", t.lines, ", ".join(rets)))
    # AFN
    if m.afn is not None:
        t = Translator(with_c0(loop_bindings()), params, earg_pos, "af")
        funcs.append(("afn", "af, c0, kk, pid_m, eargs", t.lines, t.expr(m.afn)))
    # EPI
    results = loop.op.results
    b = dict(common)
    if m.pid_n is not None:
        b[id(m.pid_n)] = "pid_n"
    b[id(results[m.acc_i])] = "acc"
    with_c0(b)
    for j, (i, _, mode) in enumerate(m.row_stats):
        res = results[i]
        if mode == "row":
            b[id(res)] = f"st{j}"
        else:
            users = m.users_of(res)
            if len(users) != 1 or not _is_sum_over(users[0], 1):
                raise _Miss("a statistic accumulated as a tile is not reduced over its rows after "
                            "the loop", users[0] if users else loop.op)
            b[id(users[0].results[0])] = f"st{j}"
    pre_lines = []
    n_idx = _earg_source(m.N, earg_pos) if m.col_sums else None
    for j, (i, _) in enumerate(m.col_sums):
        pre_lines.append(f"cs{j} = colvec(eargs[{j}], pid_n, {n_idx}, acc)")
        b[id(results[i])] = f"cs{j}"
    out = m.out_value
    if out.owner is not None and out.owner.name in (ops.TRUNCF,) and element(out.owner.operands[0]) == "f32":
        out = out.owner.operands[0]
    t = Translator(b, params, earg_pos, "acc")
    if not epilogue_reductions:
        red = _acc_reductions(m, out)
        if red is not None:
            raise _Miss("the epilogue reduces rows of the accumulator (a post-norm); not lowered by "
                        "default: the template's post-norms measured slower than cluster-reduce and "
                        "epilogue-norm's kernels on the H200 (hopper-ws{epilogue-reductions=true} "
                        "lowers them)", red)
    e = t.expr(out)
    funcs.append(("epi", "acc, st0, st1, c0, pid_m, pid_n, xj, eargs, CLUSTER: gl.constexpr, "
                  "CID: gl.constexpr, NCONS: gl.constexpr, WARPS: gl.constexpr",
                  pre_lines + t.lines, e))
    src = [_HEADER.format(name=ops.FuncOp(m.func).sym_name)]
    for name, sig, lines, ret in funcs:
        body = "\n".join(f"    {line}" for line in lines)
        src.append(f"@gluon.jit\ndef {name}({sig}):\n{body + chr(10) if body else ''}    return {ret}\n\n")
    return "\n".join(src), eargs, notes


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


def _earg_source(src: Source, earg_pos) -> str:
    if src.param is not None:
        return f"eargs[{earg_pos(src.param)}]"
    return str(src.value)


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


def _first_tile(m: _Matcher, load: Op) -> bool:
    """Whether `load` (before the k-loop) reads the A tile of the first k-step."""
    from ..lowering.affine import Evaluator, NotAffine
    ev = Evaluator(None)
    ev.values.update(m.ev.values)
    drop_kk = lambda p: {k: c for k, c in p.items() if not any(a == ("kk",) for a in k)}  # noqa: E731
    try:
        if load.name == ops.DESCRIPTOR_LOAD and m.a_load.name == ops.DESCRIPTOR_LOAD:
            if load.operands[0] is not m.a_load.operands[0]:
                return False
            return all(ev.ev(x) == drop_kk(m.ev.ev(y))
                       for x, y in zip(load.operands[1:3], m.a_load.operands[1:3]))
        if load.name == ops.LOAD and m.a_load.name == ops.LOAD:
            b1, p1 = ev.evp(LoadOp(load).ptr)
            b2, p2 = m.ev.evp(LoadOp(m.a_load).ptr)
            return b1 is b2 and p1 == drop_kk(p2)
    except NotAffine:
        return False
    return False


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
# The pass
# ---------------------------------------------------------------------------------------------

def _example(p, dtype_name: str):
    """A typed stand-in of kernel parameter `p` for ahead-of-time compilation."""
    import torch
    from ..lowering.runtime import _Fake
    t = p.type
    el = pointee(t)
    if el is not None:
        dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
              "i32": torch.int32, "i64": torch.int64, "f64": torch.float64}.get(el)
        if dt is None:
            raise _Miss(f"parameter {p.name} points to {el}")
        return _Fake([1], dt)
    if t in ("i32", "i64"):
        return 17 if t == "i32" else 2**33 + 1
    if t in ("f32", "f16", "bf16", "f64"):
        return 1.5
    if t == "i1":
        return True
    raise _Miss(f"parameter {p.name} has type {t}")


def _stats_where(cfg) -> str:
    if cfg.stats_share:
        return ("in the MMA warps, once per row block (its first tile, a wave ahead of the others), "
                "shared through global memory")
    return "in a statistics partition (from L2)" if cfg.stats_partition else "in the MMA warps"


@dataclass
class HopperWS(Pass):
    """Lower a fused GEMM-shaped kernel to the warp-specialized Hopper template (see module doc)."""

    name = "hopper-ws"
    lowers = True  # the module becomes the template instance's TTGIR
    summary = ("lower a fused GEMM-shaped kernel (statistics in the k-loop, elementwise epilogue) "
               "to a warp-specialized Gluon template for sm_90: TMA loader + wgmma warpgroups")
    schedule: str = "coop"
    stages: int = 0
    epilogue_reductions: bool = False
    # launches with K <= rows-max-k walk row-major runs of tiles per CTA (the N tiles of a row
    # block in turn, its statistics computed once per run); 0: always the grouped order
    rows_max_k: int = 0
    # the row statistics in a partition of their own that reads the A tiles from L2 with plain
    # loads (2 warps, sharing a warpgroup with a 2-warp loader), instead of the MMA warps reading
    # the shared A slot again; only without an A transform (g folded)
    stats_partition: bool = False
    # the row statistics computed once per row block (by the statistics partition of the CTA that
    # owns the row block's first tile) and shared with the other CTAs through global memory
    stats_share: bool = False

    def __post_init__(self):
        if self.schedule not in ("coop", "pingpong"):
            raise PassError(f"option hopper-ws{{schedule}} must be coop or pingpong, got '{self.schedule}'")
        if not (self.stages == 0 or 2 <= int(self.stages) <= 6):
            raise PassError(f"option hopper-ws{{stages}} must be 0 or 2..6, got {self.stages}")
        if int(self.rows_max_k) < 0:
            raise PassError(f"option hopper-ws{{rows-max-k}} must be >= 0, got {self.rows_max_k}")
        self._lowering: Lowering | None = None

    @property
    def lowering(self) -> "Lowering | None":
        """What the last run lowered (None when it missed): the launch adapter reads it."""
        return self._lowering

    def config(self, m: _Matcher):
        from ..lowering.runtime import WSConfig
        if self.schedule == "coop":
            if (m.BM, m.BN) != (128, 256) and m.BM % 128:
                raise _Miss(f"the coop schedule takes 128-row tiles, the kernel has {m.BM}x{m.BN}")
            cfg = WSConfig(block_m=m.BM, block_n=m.BN, block_k=m.BK, stages=3, consumers=1,
                           consumer_warps=8)
        else:
            cfg = WSConfig(block_m=m.BM, block_n=m.BN, block_k=m.BK, stages=4, consumers=2,
                           consumer_warps=4)
        if m.BM % (16 * cfg.consumer_warps) or m.BN > 256 or m.BN % 16 or m.BK % 16:
            raise _Miss(f"tile {m.BM}x{m.BN}x{m.BK} does not fit the {self.schedule} schedule "
                        f"({cfg.consumer_warps} warps of 16-row wgmma, n <= 256)")
        esz = 2
        budget = 227 * 1024 - 1024
        stages = int(self.stages) or cfg.stages
        while stages > 2 and cfg.smem_bytes(esz) > budget:
            stages -= 1
        import dataclasses
        cfg = dataclasses.replace(cfg, stages=stages, rows_max_k=int(self.rows_max_k))
        if cfg.smem_bytes(esz) > budget:
            raise _Miss(f"tile {m.BM}x{m.BN}x{m.BK} needs {cfg.smem_bytes(esz)} bytes of shared "
                        f"memory at {stages} stages")
        return cfg

    def run(self, module: Module):
        self._lowering = None
        if self.refuses_ttgir(module):
            return self.remarks
        locs = LocResolver(module)
        try:
            m = _Matcher(module)
            m.run()
            from ..lowering.codegen import Untranslatable
            try:
                source, eargs, notes = _generate(m, self.epilogue_reductions)
            except Untranslatable as e:
                raise _Miss(f"cannot translate {e} into the template's hooks")
            cfg = self.config(m)
        except _Miss as e:
            self.remark("missed", str(e), locs(e.op))
            return self.remarks
        lowering = self._instantiate(m, source, eargs, notes, cfg)
        module.__init__(lowering.compiled.asm["ttgir"])
        self._lowering = lowering
        derived = [e for e in eargs if e[0] == "derived"]
        parts = [f"lowered to the warp-specialized template: {lowering.instance.config}, persistent, "
                 f"{'B [K, N]' if m.b_kn else 'B [N, K]'}",
                 (f"{len(m.row_stats)} row statistic(s) from the A tiles "
                  + _stats_where(lowering.instance.config)) if m.row_stats else "no statistics",
                 "A operand computed in registers (g/beta in the loop; each k-step's wgmma waited)" if m.afn is not None else "A straight from shared memory",
                 f"epilogue translated from the IR ({lowering.source.count(chr(10))} lines of hooks)"]
        if derived:
            parts.append(f"{len(derived)} column sum(s) of the weight precomputed per weight version "
                         "(derived arguments)")
        parts += notes
        self.remark("applied", "; ".join(parts), locs(m.dot))
        return self.remarks

    def _instantiate(self, m: _Matcher, source: str, eargs, notes, cfg) -> Lowering:
        import torch
        from ..lowering import codegen, runtime
        mod = codegen.write_module(source)
        hooks = runtime.Hooks(pre=getattr(mod, "pre", None), stats=getattr(mod, "stats", None),
                              afn=getattr(mod, "afn", None), epi=getattr(mod, "epi", None))
        example = []
        for kind, x in eargs:
            if kind == "derived":
                example.append(runtime._Fake([1], torch.float32))
            else:
                example.append(_example(m.params[x], m.dtype))
        import dataclasses
        if self.stats_share and hooks.stats is not None and hooks.afn is None and cfg.consumers == 1:
            cfg = dataclasses.replace(cfg, stats_share=True, rows_max_k=0)
        elif (self.stats_partition and hooks.stats is not None and hooks.afn is None
                and hooks.pre is None and cfg.consumers == 1):
            cfg = dataclasses.replace(cfg, stats_partition=True, loader_warps=2, stats_warps=2,
                                      loader_regs=40, stats_regs=120)
        if self.stats_share and hooks.stats is not None and not cfg.stats_share:
            notes.append("stats-share not applied: " + (
                "the A operand is computed in the k-loop (g or beta not folded)" if hooks.afn is not None
                else "it needs the coop schedule"))
        inst = runtime.Instance(cfg, hooks, dtype=_DTYPES[m.dtype], out_dtype=_DTYPES[m.out_dtype],
                                b_kn=m.b_kn, cluster=1, eargs_example=tuple(example))
        ck = runtime.compile_instance(inst)
        return Lowering(kernel_name=ops.FuncOp(m.func).sym_name, params=m.params, a=m.a, b=m.b,
                        b_kn=m.b_kn, out=m.out, M=m.M, N=m.N, K=m.K, eargs=eargs, instance=inst,
                        source=source, compiled=ck, notes=notes,
                        single=(m.pid_m is None, m.pid_n is None))
