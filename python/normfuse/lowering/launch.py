"""Launch a lowered kernel with the arguments of the kernel it was planned from.

The user's kernel takes pointers and sizes; the template takes TMA descriptors, M/N/K, the
`eargs` tuple its hooks read, and the shared statistics' workspace. The plan says where each comes
from (its launch needs: the descriptors of A, B and the output (and of a post-norm's residual),
the derived arguments, the persistent grid (whole rows for a post-norm's exchange: refused when a
row has more N tiles than the device has SMs), the shared statistics or partial row sums):
`LoweredLaunch.arguments` computes all of it on the host and returns a `BoundLaunch`, a plain
record of what a launch passes (the template's arguments in order, each descriptor's base, shape,
strides and box, the grid). It needs no GPU: given CPU tensors and an SM count it computes
exactly what the real launch would pass (the CPU interpreter of the lowered TTGIR executes a
kernel with it).

Per call, only what depends on the tensors' addresses is redone: `prepare(args)` decides once per
argument geometry (sizes, strides, dtypes) the matrices' shapes and strides, M/N/K, the grid and
the launcher; `LoweredPlan.run(args)` takes the tensor maps of A, B, the output and a post-norm's
residual (without one the template's r_desc is a constexpr None, passed as Triton's launcher
passes it) from their caches (by address: a new address is encoded once,
`normfuse.direct_launch.TensorMaps`), looks the hooks' arguments up, takes the derived vectors
from their cache and, with shared statistics, the launch's epoch, and calls the C function
Triton's launcher ends in (`normfuse.direct_launch`: Triton's Python wrapper re-encoded every
descriptor and rebuilt the argument list on each launch). Where that
launcher cannot be resolved, or while a Triton launch hook is registered, Triton's runner takes
the descriptors as `TmaArg` records. `__call__` and `bind` are both on top of it.

Derived arguments (the column sums of the weight) are computed with torch once per weight
version (the tensors' data pointers and `_version`), on the weight's device.

A launch whose operands TMA cannot address (a base or row stride that is not 16-byte aligned) is
refused with the reason (`why_not`), and the caller runs the unlowered kernel instead.
"""
from __future__ import annotations

import contextlib
import operator
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..device import cuda_state
from ..ir.ws_plan import TileOperand
from .runtime import SharedStats, TmaArg, kernel_arguments

__all__ = ["LoweredLaunch", "LoweredPlan", "BoundLaunch", "TmaArg", "provide_column_sums"]

_DERIVED_CACHE: "OrderedDict[tuple, tuple]" = OrderedDict()
_DERIVED_CACHE_SIZE = 1024  # one entry per weight of a model (a few KB each)
# derived vectors read by captured CUDA graphs (held until clear_graph_pins(), after the graphs
# are destroyed: a graph holds addresses, not references)
_GRAPH_PINS: dict = {}
# taken from a shared-statistics launch's epoch until the launch is issued (LoweredPlan.run)
_EPOCH_LOCK = threading.Lock()
_NO_LOCK = contextlib.nullcontext()


def clear_graph_pins() -> None:
    _GRAPH_PINS.clear()


# Column sums handed over by whoever made the weight (id(weight) -> (weakref, version, sums)):
# the pre-norm training forward folds a new W diag(g) every step, and the kernel that writes it
# sums its rows on the way (`ops.norm.fold_columns_dot`), so the launch need not read it again.
_PROVIDED: dict = {}


def provide_column_sums(weight, sums) -> None:
    """The row sums over the last dimension of `weight` [rows, cols] (unit stride along cols,
    fp32 [rows], on weight's device), computed by the caller: a launch whose derived argument is
    the column sum of exactly this tensor at this version, read as [rows, cols] with no scale,
    takes them instead of summing the weight itself (`LoweredLaunch._derived`). Kept while the
    tensor lives; a new version of it (an in-place update) is summed as before. An inference
    tensor (no version counter) is not taken: its launches sum it."""
    if weight.is_inference():
        return
    key = id(weight)

    def gone(ref, key=key):
        if _PROVIDED.get(key, (None,))[0] is ref:
            del _PROVIDED[key]
    _PROVIDED[key] = (weakref.ref(weight, gone), weight._version, sums)


def _provided(weight, w_t, rows: int, cols: int, stride: int, b_kn: bool):
    """The sums `provide_column_sums` holds for `weight` read as B [rows, cols] (None if none
    apply: another tensor, version or layout)."""
    p = _PROVIDED.get(id(weight))
    if (p is None or p[0]() is not weight or p[1] != weight._version or b_kn
            or w_t is not weight or weight.dim() != 2 or tuple(weight.shape) != (rows, cols)
            or weight.stride() != (stride, 1)):
        return None
    return p[2]


@dataclass(frozen=True)
class BoundLaunch:
    """What one launch of a lowered kernel passes, computed on the host.

    `args`: the template kernel's runtime arguments in order (`names`): the TMA descriptors of A,
    B and the output (`TmaArg`: base tensor, [rows, cols], strides, box), the residual's (None
    without one: a constexpr of the template), M, N, K, the `eargs` tuple the hooks read (kernel
    parameters and derived vectors), the shared statistics' words and the launch's epoch.
    `constexprs`: the template's compile-time parameters (hooks, tile config, num_warps).
    `grid`: the launch grid (persistent: programs, 1, 1). `output`: the [M, N] view the launch
    writes."""
    names: tuple[str, ...]
    args: tuple
    constexprs: dict
    grid: tuple[int, int, int]
    output: Any

    def __getitem__(self, name: str):
        return self.args[self.names.index(name)]

    def launch_args(self, instance) -> list:
        """Every parameter of the template kernel in order (Triton's launcher takes them all)."""
        return kernel_arguments(instance, dict(zip(self.names, self.args)))

    def __repr__(self) -> str:
        args = ", ".join(f"{n}={v!r}" for n, v in zip(self.names, self.args) if n != "eargs")
        return f"BoundLaunch(grid={self.grid}, {args}, eargs={len(self['eargs'])} values)"


class LoweredLaunch:
    """The launch of a compiled plan (`runtime.LoweredKernel`). `params[i]` is the position, in
    the argument tuples this launch is given, of the plan's parameter i (the TTIR function's
    argument i); None: the identity."""

    def __init__(self, lowered, params: tuple[int, ...] | None = None):
        self.lowered = lowered
        self.plan = lowered.plan
        self.instance = lowered.instance
        self.kernel = lowered.compiled
        self.params = params
        self._geometry = None  # the parameters the operands' geometry is read from
        self._plans: dict = {}  # geometry -> LoweredPlan (launches through __call__)
        self._splits: dict = {}  # member starts -> the split-output launch (`split`)
        from .ws_gemm import ws_gemm_kernel
        self.kernel_param_names = tuple(ws_gemm_kernel.arg_names)

    @property
    def out_split(self) -> tuple:
        """The first column of each output member after the first (() : one output)."""
        return self.instance.out_split

    def split(self, starts, target="cuda:90") -> "LoweredLaunch":
        """The same lowered kernel writing its output's columns into separate matrices: member
        0 gets columns [0, starts[0]), member i columns [starts[i - 1], starts[i]), the last one
        the rest (each its own [M, N_i] tensor, passed to `run(args, outs=...)`). `starts`:
        increasing multiples of the tile's BLOCK_N, at most 3 (4 members). Compiled once per
        `starts` (the template with NOUT = len(starts) + 1); a plain, shared-statistics or coop2
        plan (coop2's [BM / 2, BN] halves go to the member by their columns as whole tiles do);
        a post-norm's rows, a residual or a second output are refused."""
        starts = tuple(int(s) for s in starts)
        hit = self._splits.get(starts)
        if hit is not None:
            return hit
        plan, bn = self.plan, self.plan.config.block_n
        why = None
        if self.out_split:
            why = "it already writes a split output"
        elif not 1 <= len(starts) <= 3:
            why = f"a split output has 2 to 4 members, not {len(starts) + 1}"
        elif any(s <= 0 or s % bn for s in starts) or list(starts) != sorted(set(starts)):
            why = (f"the members' first columns {list(starts)} must increase and be multiples "
                   f"of the tile's {bn} columns (a tile must belong to one member)")
        elif plan.config.row_exchange or plan.res is not None or plan.aux_out is not None \
                or plan.backward:
            why = "a post-norm, a residual or a second output keeps the output in one matrix"
        if why:
            raise ValueError(f"normfuse: cannot split the lowered kernel's output: {why}")
        from dataclasses import replace
        from .runtime import compile_instance
        inst = replace(self.instance, out_split=starts)
        low = replace(self.lowered, instance=inst, compiled=compile_instance(inst, target))
        hit = self._splits[starts] = LoweredLaunch(low, self.params)
        return hit

    @property
    def lowering(self):  # the plan (older name)
        return self.plan

    # -- argument mapping --------------------------------------------------------------------
    def _arg(self, args, i: int):
        return args[i if self.params is None else self.params[i]]

    def _int(self, src, args) -> int:
        return int(self._arg(args, src.param)) if src.param is not None else int(src.value)

    def _matrix(self, op: TileOperand, args) -> tuple:
        """(tensor, (rows, cols), row stride) of a tile operand."""
        import torch
        t = self._arg(args, op.base)
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"parameter {self.plan.params[op.base][0]} is not a tensor")
        return t, (self._int(op.rows, args), self._int(op.cols, args)), self._int(op.stride, args)

    def member_widths(self, N: int) -> tuple:
        """The split output's member widths for an output of N columns (() : one output)."""
        if not self.out_split:
            return ()
        edges = (0,) + self.out_split + (N,)
        return tuple(edges[i + 1] - edges[i] for i in range(len(edges) - 1))

    def why_not(self, args, outs=None) -> str | None:
        """None when the launch can run lowered, else the reason it cannot. `outs`: a split
        output's member tensors (`split`)."""
        import torch
        plan = self.plan
        if self.out_split:
            why = self._members_why_not(args, outs)
            if why:
                return why
        cfg = plan.config
        for single, src, blk, what in ((plan.single[0], plan.M, cfg.block_m, "M"),
                                       (plan.single[1], plan.N, cfg.block_n, "N")):
            if single and self._int(src, args) > blk:
                return (f"the kernel covers one tile of {what} ({blk}), the launch has "
                        f"{what} = {self._int(src, args)}")
        operands = (("A", plan.a), ("B", plan.b), ("output", plan.out))
        if plan.res is not None:
            operands += (("the residual", plan.res),)
        if plan.aux_out is not None:
            operands += (("the second output", plan.aux_out),)
        for name, op in operands:
            t = self._arg(args, op.base)
            if not isinstance(t, torch.Tensor) or not t.is_cuda:
                return f"{name} is not a CUDA tensor"
            why = _addressable(name, *self._matrix(op, args))
            if why:
                return why
        grid = next((n for n in plan.needs if type(n).__name__ == "PersistentGrid"), None)
        if grid is not None and grid.whole_rows:
            from ..device import sm_count  # cached per device
            tiles = -(-self._int(plan.N, args) // grid.block_n)
            sms = sm_count(self._arg(args, plan.a.base).device)
            if tiles > sms:
                return (f"the post-norm's row has {tiles} N tiles of {grid.block_n}, which must run "
                        f"at once on distinct CTAs; the device has {sms} SMs")
        return None

    def _members_why_not(self, args, outs) -> str | None:
        """Why `outs` cannot be the split output's members of this launch, or None."""
        import torch
        N = self._int(self.plan.N, args)
        M = self._int(self.plan.M, args)
        widths = self.member_widths(N)
        if outs is None or len(outs) != len(widths):
            return f"the split output needs {len(widths)} member tensors"
        if widths[-1] <= 0:
            return (f"the output has {N} columns, not more than the last member's first column "
                    f"{self.out_split[-1]}")
        for i, (t, w) in enumerate(zip(outs, widths)):
            if not isinstance(t, torch.Tensor):
                return f"output member {i} is not a tensor"
            if tuple(t.shape) != (M, w) or t.stride() != (w, 1):
                return (f"output member {i} must be a contiguous [{M}, {w}] tensor, got "
                        f"{list(t.shape)} with strides {list(t.stride())}")
        for i, (t, w) in enumerate(zip(outs, widths)):
            if not t.is_cuda:
                return f"output member {i} is not a CUDA tensor"
            why = _addressable(f"output member {i}", t, (M, w), w)
            if why:
                return why
        return None

    def _derived(self, j: int, args, b=None):
        """Column sum j of the weight, cached per weight (and scale) version; `b`: B's (tensor,
        (rows, cols), row stride) when known."""
        d = self.plan.column_sums[j]
        w_t, (rows, cols), stride = b or self._matrix(self.plan.b, args)
        weight = self._arg(args, d.weight)
        scale = self._arg(args, d.scale) if d.scale is not None else None
        b_kn = self.plan.b_kn
        capturing = cuda_state.capturing()
        given = None if scale is not None else _provided(weight, w_t, rows, cols, stride, b_kn)
        if given is not None:  # (summed by the weight's maker: not cached, it lives with it)
            if capturing:  # a captured graph reads it by address: keep it alive
                _GRAPH_PINS[id(given)] = given
            return given
        if weight.is_inference() or (scale is not None and scale.is_inference()):
            key = hit = None  # (inference tensors have no version counter: nothing cached)
        else:
            key = (w_t.data_ptr(), weight._version, weight.dtype, rows, cols, stride, b_kn,
                   None if scale is None else (scale.data_ptr(), scale._version, scale.dtype))
            hit = _DERIVED_CACHE.get(key)
        # a freed tensor's address is reused by the next allocation: the entry counts only while
        # the very tensors it was computed from are alive
        if hit is not None and hit[0]() is weight and (scale is None or hit[1]() is scale):
            _DERIVED_CACHE.move_to_end(key)
            if capturing:  # a captured graph reads it by address: keep it alive
                _GRAPH_PINS[id(hit[2])] = hit[2]
            return hit[2]
        w = w_t.as_strided((rows, cols), (stride, 1), w_t.storage_offset()).float()
        k_axis = 0 if b_kn else 1
        if scale is not None:
            K = w.shape[k_axis]
            g = scale.reshape(-1)[:K].float()
            w = w * (g[:, None] if b_kn else g[None, :])
        cs = w.sum(k_axis).contiguous()
        if capturing or key is None:  # (a capture: computed by every replay, in its memory)
            return cs
        _DERIVED_CACHE[key] = (weakref.ref(weight), weakref.ref(scale) if scale is not None else None, cs)
        if len(_DERIVED_CACHE) > _DERIVED_CACHE_SIZE:
            _DERIVED_CACHE.popitem(last=False)
        return cs

    def prepare(self, args, *, grid: int | None = None, sms: int | None = None) -> "LoweredPlan":
        """What a launch decides from its arguments' sizes, strides and dtypes, not their
        addresses (the matrices' geometry, M/N/K, the grid, the launcher and the constexprs):
        `plan.run(args)` then launches any arguments of that geometry with only per-address
        work (the descriptors, the hooks' arguments, the derived vectors from their cache, the
        shared statistics' epoch). The caller keys plans on that geometry; `why_not(args)` must
        hold for each launch."""
        return LoweredPlan(self, args, grid, sms)

    def arguments(self, args, *, grid: int | None = None, sms: int | None = None,
                  shared: tuple | None = None, outs=None) -> BoundLaunch:
        """What the launch with the planned kernel's runtime arguments `args` passes (see
        `BoundLaunch`). `sms`: the SM count the persistent grid is sized for (default: the
        device's); `shared`: (words, epoch) of the shared statistics (default: the current
        stream's workspace, `SharedStats`); `outs`: a split output's members. Pure host
        computation: CPU tensors work."""
        return self.prepare(args, grid=grid, sms=sms).bound(args, shared, outs)

    def __call__(self, args, *, grid: int | None = None, outs=None):
        """Launch with the runtime arguments `args` (the planned kernel's non-constexpr
        parameters, in order), through a plan kept per argument geometry (the integers the
        operands' sizes and strides are read from, and the device). Returns the output tensor
        (a split output: `outs`, its members)."""
        if grid is not None:
            return self.prepare(args, grid=grid).run(args, outs)
        if self._geometry is None:
            plan = self.plan
            ops = (plan.a, plan.b, plan.out) + ((plan.res,) if plan.res is not None else ()) + \
                ((plan.aux_out,) if plan.aux_out is not None else ())
            srcs = [s for op in ops for s in (op.rows, op.cols, op.stride)]
            self._geometry = sorted({s.param for s in srcs if s.param is not None})
        key = (tuple(self._arg(args, i) for i in self._geometry),
               self._arg(args, self.plan.a.base).device)
        p = self._plans.get(key)
        if p is None:
            p = self._plans[key] = self.prepare(args)
            if len(self._plans) > 64:
                self._plans.pop(next(iter(self._plans)))
        return p.run(args, outs)

    def bind(self, args, *, grid: int | None = None):
        """The launch for fixed `args`: a callable that launches them (`prepare(args).run`),
        for prepared launches and benchmarks."""
        plan = self.prepare(args, grid=grid)
        return lambda: plan.run(args)


class LoweredPlan:
    """A lowered launch prepared for one argument geometry (`LoweredLaunch.prepare`)."""

    def __init__(self, launch: LoweredLaunch, args, grid: int | None, sms: int | None):
        from .runtime import _layout_of
        self.launch = launch
        plan, inst = launch.plan, launch.instance
        self.instance = inst
        # the plan's launch needs, in the template's argument order: the TMA descriptors of A, B
        # and the output (and a residual), the derived vectors (with the hooks' arguments), the
        # persistent grid, the shared statistics' workspace
        needs = {type(n).__name__: [] for n in plan.needs}
        for n in plan.needs:
            needs[type(n).__name__].append(n)
        descs = {n.operand: n for n in needs.get("TmaDescriptor", [])}
        want = ["a", "b", "out"] + (["res"] if inst.res_block is not None else []) + \
            (["aux"] if inst.aux_block is not None else [])
        boxes = inst.blocks + ((inst.res_block,) if inst.res_block is not None else ()) + \
            ((inst.aux_block,) if inst.aux_block is not None else ())
        if list(descs) != want or tuple(d.block for d in descs.values()) != boxes:
            raise ValueError(f"the plan's descriptors {list(descs.values())} are not the "
                             f"template's ({', '.join(want)} with boxes {boxes})")
        self.operands = []  # (position in args, (rows, cols), (row stride, 1), box)
        for name, d in descs.items():
            op = getattr(plan, "aux_out" if name == "aux" else name)
            t, shape, stride = launch._matrix(op, args)
            base = op.base
            self.operands.append((base if launch.params is None else launch.params[base], shape,
                                  (stride, 1), d.block))
        (M, K), (N,) = self.operands[0][1], self.operands[2][1][1:]
        self.M, self.N, self.K = M, N, K
        # a split output (`LoweredLaunch.split`): member i an [M, N_i] matrix with row stride N_i,
        # member 0 in the output's descriptor slot, the others in c1_desc.. (their own slots)
        widths = launch.member_widths(N)
        if widths:
            if widths[-1] <= 0:
                raise ValueError(f"the output has {N} columns, not more than the split's last "
                                 f"first column {launch.out_split[-1]}")
            pc, _, _, bc = self.operands[2]
            self.operands[2] = (pc, (M, widths[0]), (widths[0], 1), bc)
        self._member_geometry = [((M, w), (w, 1), self.operands[2][3]) for w in widths[1:]]
        g, = needs["PersistentGrid"]
        if grid is None:
            if sms is None:
                from ..device import sm_count  # cached per device
                sms = sm_count(launch._arg(args, plan.a.base).device)
            grid = g.programs(M, N, sms)
            if grid == 0:
                raise ValueError(f"the post-norm's row has {-(-N // g.block_n)} N tiles, more than "
                                 f"the {sms} programs that run at once (why_not refuses it)")
        self.grid = (grid, 1, 1)
        if len(needs.get("DerivedArgument", [])) != len(plan.column_sums):
            raise ValueError("the plan's derived arguments are not its column sums")
        self.eargs = [(kind, x if kind == "derived" or launch.params is None else launch.params[x])
                      for kind, x in launch.lowered.eargs]
        # the hooks' kernel parameters in one itemgetter; the derived vectors by slot
        self._derived_slots = [(i, x) for i, (kind, x) in enumerate(self.eargs) if kind == "derived"]
        params = [x for kind, x in self.eargs if kind != "derived"]
        self._param_slots = [i for i, (kind, _) in enumerate(self.eargs) if kind != "derived"]
        self._params = (operator.itemgetter(*params) if len(params) > 1
                        else (lambda a, i=params[0]: (a[i],)) if params else (lambda a: ()))
        # per derived slot: (slot, column sum j, the position of its scale in args or None)
        self._derived_info = [(i, j, None if plan.column_sums[j].scale is None
                               else launch.params[plan.column_sums[j].scale]
                               if launch.params is not None else plan.column_sums[j].scale)
                              for i, j in self._derived_slots]
        # slot -> (weight, its version, scale, its version, vector, the weight's address, the
        # scale's address); weight and scale by weak reference
        self._last_derived: dict = {}
        self.share = "SharedStatistics" in needs
        if self.share != (plan.config.stats_share or bool(plan.config.row_exchange)):
            raise ValueError("the plan's shared statistics need and its config disagree")
        self.words_per_row = needs["SharedStatistics"][0].words_per_row(N) if self.share else 0
        names, tail = _layout_of(inst)
        self.names = names
        self.tail = tail
        self._block_m = plan.config.block_m
        # whether a launch asks if its stream is capturing (the shared statistics take a fresh
        # buffer, derived vectors are pinned and not remembered)
        self._capture_check = self.share or bool(self._derived_slots)
        self._runner = None  # Triton's runner (kernel[grid]) where the direct launch is not used
        self._direct = None  # normfuse.direct_launch.DirectLaunch, on the first launch
        self._maps = None  # the tensor-map caches of A, B, the output (and the residual)
        # the residual's and the second output's (position in args, (rows, cols), (row stride,
        # 1), box), or None: the template's r_desc / aux_desc is then a constexpr None
        rest = iter(self.operands[3:])
        self._res = next(rest) if inst.res_block is not None else None
        self._aux = next(rest) if inst.aux_block is not None else None
        # the descriptors' positions among the template's parameters (a, b, c, r, aux)
        from .runtime import MEMBER_PARAMS, RUNTIME_PARAMS
        member_pos = [RUNTIME_PARAMS.index(n) for n in MEMBER_PARAMS][:len(self._member_geometry)]
        self._desc_positions = tuple([0, 1, 2] + ([3] if self._res is not None else [])
                                     + ([4] if self._aux is not None else []) + member_pos)
        # the member descriptors' arguments where absent (constexpr Nones)
        self._no_members = (None,) * (3 - len(self._member_geometry))

    def _eargs(self, args, b, capturing: bool = False) -> tuple:
        """The hooks' arguments; `b`: B's (tensor, (rows, cols), row stride, position). Each
        derived vector (column sum j of the weight) is the last one while the weight (and
        scale) are the same tensors at the same versions and address, else from the launch's
        cache. Under capture a vector is pinned for the graph and nothing is remembered (a
        vector computed inside a capture holds nothing until the graph is replayed)."""
        eargs = self._params(args)
        if not self._derived_slots:
            return eargs
        full = [None] * len(self.eargs)
        for i, v in zip(self._param_slots, eargs):
            full[i] = v
        w = b[0]
        address = w.data_ptr()
        remembered = self._last_derived
        if w.is_inference():  # (no version counter to check: derived afresh, nothing kept)
            for i, j, spos in self._derived_info:
                full[i] = self.launch._derived(j, args, b[:3])
            return tuple(full)
        for i, j, spos in self._derived_info:
            sc = None if spos is None else args[spos]
            last = remembered.get(i)
            if last is not None and last[0]() is w and last[1] == w._version \
                    and (last[2] is None if sc is None
                         else last[2] is not None and last[2]() is sc) \
                    and (sc is None or (last[3] == sc._version and last[6] == sc.data_ptr())) \
                    and last[5] == address:
                v = last[4]
                if capturing:  # a captured graph reads it by address: keep it alive
                    _GRAPH_PINS[id(v)] = v
            else:
                v = self.launch._derived(j, args, b[:3])
                if not capturing and (sc is None or not sc.is_inference()):
                    # (the weight and scale by weak reference: a folded W' of a training
                    # step is not kept alive by the launch until the next step's replaces it)
                    remembered[i] = (weakref.ref(w), w._version,
                                     None if sc is None else weakref.ref(sc),
                                     None if sc is None else sc._version, v, address,
                                     None if sc is None else sc.data_ptr())
            full[i] = v
        return tuple(full)

    def _shared(self, args, stream=None, capturing=None) -> tuple:
        """(sbuf, epoch): the shared statistics' words and this launch's epoch (A, 0 without)."""
        a = args[self.operands[0][0]]
        if not self.share:
            return a, 0
        return SharedStats.take(a.device, self.M, self._block_m, stream, capturing,
                                per_row=self.words_per_row)

    def _runtime(self, args, shared, outs=None) -> tuple:
        (pa, sa, ta, ba), (pb, sb, tb, bb), (pc, sc, tc, bc) = self.operands[:3]
        c = args[pc] if not self._member_geometry else self._outs(outs)[0]
        da, db, dc = (TmaArg(args[pa], sa, ta, ba), TmaArg(args[pb], sb, tb, bb),
                      TmaArg(c, sc, tc, bc))
        members = tuple(TmaArg(t, s, st, bx) for t, (s, st, bx)
                        in zip(outs[1:], self._member_geometry)) if self._member_geometry else ()
        dr = dx = None  # no residual, no second output: constexpr Nones
        if self._res is not None:
            pr, sr, tr, br = self._res
            dr = TmaArg(args[pr], sr, tr, br)
        if self._aux is not None:
            px, sx, tx, bx = self._aux
            dx = TmaArg(args[px], sx, tx, bx)
        eargs = self._eargs(args, (db.base, sb, tb[0], pb), bool(self._derived_slots)
                            and cuda_state.capturing())
        if shared is None:
            shared = self._shared(args)
        return (da, db, dc, dr, dx, self.M, self.N, self.K, eargs, *shared, *members,
                *self._no_members)

    def _outs(self, outs):
        if outs is None or len(outs) != len(self._member_geometry) + 1:
            raise ValueError(f"the split output needs {len(self._member_geometry) + 1} member "
                             f"tensors, got {0 if outs is None else len(outs)}")
        return outs

    def bound(self, args, shared: tuple | None = None, outs=None) -> BoundLaunch:
        """The launch's arguments as a `BoundLaunch` record (`output`: a split output's members,
        as views of what each descriptor addresses)."""
        runtime = self._runtime(args, shared, outs)
        c = runtime[2]
        out = c.base.as_strided(c.shape, c.strides, c.base.storage_offset())
        if self._member_geometry:
            out = (out,) + tuple(d.base.as_strided(d.shape, d.strides, d.base.storage_offset())
                                 for d in runtime[11:11 + len(self._member_geometry)])
        consts = dict(zip(self.launch.kernel_param_names[len(self.names):], self.tail))
        return BoundLaunch(self.names, runtime, consts, self.grid, out)

    def _resolve_launcher(self) -> None:
        """Once, on the first launch (on the plan's device): Triton's launcher resolved down to
        its C function (`normfuse.direct_launch`) with one tensor-map cache per descriptor, or
        Triton's runner where it cannot be (`_direct` stays None)."""
        from ..direct_launch import resolve
        kernel = self.launch.kernel
        direct = resolve(kernel, self.grid)
        if direct is not None:
            geoms = [(shape, strides) for _, shape, strides, _ in self.operands] + \
                [(shape, strides) for shape, strides, _ in self._member_geometry]
            maps = [direct.tensor_maps(i, shape, strides)
                    for i, (shape, strides) in enumerate(geoms)]
            if all(m is not None for m in maps) and direct.positions == self._desc_positions:
                self._maps = maps
                self._direct = direct
        if self._direct is None:
            self._runner = kernel[self.grid]

    def run(self, args, outs=None):
        """Launch with `args` (of the geometry the plan was made for). Returns the output
        tensor as the caller passed it (a split output: `outs`, the members' tensors).

        Per launch: the tensor maps of A, B, the output and the residual (if any) from their
        caches (by address; a new address is encoded once), the hooks' arguments, the shared
        statistics' epoch, and one call of the C launch function (`normfuse.direct_launch`).
        Where Triton's launcher cannot be resolved, or while a Triton launch hook is registered,
        Triton's runner launches the same arguments (descriptors as `TmaArg` records)."""
        direct = self._direct
        if direct is None and self._runner is None:
            self._resolve_launcher()
            direct = self._direct
        (pa, sa, ta, ba), (pb, sb, tb, bb), (pc, sc, tc, bc) = self.operands[:3]
        mg = self._member_geometry
        if mg:
            outs = self._outs(outs)
            a, b, c = args[pa], args[pb], outs[0]
        else:
            a, b, c = args[pa], args[pb], args[pc]
        res = self._res
        capturing = self._capture_check and cuda_state.capturing()
        eargs = self._eargs(args, (b, sb, tb[0], pb), capturing) if self._derived_slots else \
            self._params(args)
        # an epoch is taken right before its launch, under a lock where the statistics are
        # shared: launches on one stream must carry increasing epochs (the device takes any stamp
        # at least its epoch), and another thread could take a later one between the two
        lock = _EPOCH_LOCK if self.share else _NO_LOCK
        if direct is not None:
            stream = direct.stream()
            maps = self._maps
            ma, mb, mc = maps[0], maps[1], maps[2]
            ea = ma.get(a.data_ptr()) or ma.encode(a)
            eb = mb.get(b.data_ptr()) or mb.encode(b)
            ec = mc.get(c.data_ptr()) or mc.encode(c)
            if res is None:  # r_desc: a constexpr None, passed as Triton's launcher passes it
                er = (None,)
            else:  # the residual's tensor map (a fourth descriptor slot)
                r, mr = args[res[0]], maps[3]
                er = mr.get(r.data_ptr()) or mr.encode(r)
            aux = self._aux
            if aux is None:  # aux_desc: a constexpr None
                ex = (None,)
            else:  # the second output's tensor map (the last descriptor slot)
                xo, mx = args[aux[0]], maps[-1]
                ex = mx.get(xo.data_ptr()) or mx.encode(xo)
            if mg:  # the other members' tensor maps (the slots after A, B and the output)
                em = ()
                for t, mm in zip(outs[1:], maps[3:]):
                    em += mm.get(t.data_ptr()) or mm.encode(t)
                em += self._no_members
            else:
                em = self._no_members
            with lock:
                sbuf, epoch = (SharedStats.take(a.device, self.M, self._block_m, stream,
                                                capturing, per_row=self.words_per_row)
                               if self.share else (a, 0))
                if direct.launch_on(stream, *ea, *eb, *ec, *er, *ex, self.M, self.N, self.K,
                                    eargs, sbuf, epoch, *em, *self.tail):
                    return outs if mg else c
            if self._runner is None:  # a launch hook is registered: Triton's own path
                self._runner = self.launch.kernel[self.grid]
        dr = None if res is None else TmaArg(args[res[0]], res[1], res[2], res[3])
        aux = self._aux
        dx = None if aux is None else TmaArg(args[aux[0]], aux[1], aux[2], aux[3])
        members = tuple(TmaArg(t, s, st, bx) for t, (s, st, bx) in zip(outs[1:], mg)) if mg \
            else ()
        with lock:
            sbuf, epoch = self._shared(args, None, capturing)
            self._runner(TmaArg(a, sa, ta, ba), TmaArg(b, sb, tb, bb), TmaArg(c, sc, tc, bc), dr,
                         dx, self.M, self.N, self.K, eargs, sbuf, epoch, *members,
                         *self._no_members, *self.tail)
        return outs if mg else c


def _addressable(name: str, t, shape, stride) -> str | None:
    """Why TMA cannot address the [rows, cols] matrix at `t` with row stride `stride`, or None."""
    esz = t.element_size()
    if t.data_ptr() % 16 or (stride * esz) % 16:
        return f"{name}'s base or row stride is not 16-byte aligned (TMA)"
    rows, cols = shape
    if rows <= 0 or cols <= 0:
        return f"{name} is empty ({rows} x {cols})"
    need = t.storage_offset() + (rows - 1) * stride + cols
    if need > t.untyped_storage().nbytes() // esz:
        return (f"{name} does not hold the [{rows}, {cols}] matrix with row stride {stride} the "
                f"kernel addresses")
    return None
