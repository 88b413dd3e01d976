"""Launch a lowered kernel with the arguments of the kernel it was lowered from.

The user's kernel takes pointers and sizes; the template takes TMA descriptors, M/N/K and the
`eargs` tuple its hooks read. `LoweredLaunch` maps one to the other with what `hopper-ws`
recorded (`passes.hopper_ws.Lowering`): which parameter is A's base, its row count, K, its row
stride, ..., and which derived vectors (column sums of the weight) to compute. Derived vectors are
computed with torch once per weight version (the weight tensor's data pointer and `_version`).

A launch whose operands TMA cannot address (a base or row stride that is not 16-byte aligned)
is refused with the reason (`why_not`), and the caller runs the unlowered kernel instead.
"""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["LoweredLaunch"]

_DERIVED_CACHE: "OrderedDict[tuple, object]" = OrderedDict()
_DERIVED_CACHE_SIZE = 1024  # one entry per weight of a model (a few KB each)
# derived vectors read by captured CUDA graphs (held until clear_graph_pins(), after the graphs
# are destroyed: a graph holds addresses, not references)
_GRAPH_PINS: dict = {}


def clear_graph_pins() -> None:
    _GRAPH_PINS.clear()


class LoweredLaunch:
    def __init__(self, lowering):
        self.lowering = lowering
        self.instance = lowering.instance
        self.kernel = lowering.compiled

    # -- argument mapping --------------------------------------------------------------------
    def _int(self, src, args) -> int:
        return int(args[src.param]) if src.param is not None else int(src.value)

    def _view(self, op, args):
        import torch
        t = args[op.base]
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"parameter {self.lowering.params[op.base].name} is not a tensor")
        rows, cols, stride = self._int(op.rows, args), self._int(op.cols, args), self._int(op.stride, args)
        return t.as_strided((rows, cols), (stride, 1), t.storage_offset())

    def why_not(self, args) -> str | None:
        """None when the launch can run lowered, else the reason it cannot."""
        import torch
        lw = self.lowering
        cfg = self.instance.config
        for single, src, blk, what in ((lw.single[0], lw.M, cfg.block_m, "M"),
                                       (lw.single[1], lw.N, cfg.block_n, "N")):
            if single and self._int(src, args) > blk:
                return (f"the kernel covers one tile of {what} ({blk}), the launch has "
                        f"{what} = {self._int(src, args)}")
        for name, op in (("A", lw.a), ("B", lw.b), ("output", lw.out)):
            t = args[op.base]
            if not isinstance(t, torch.Tensor) or not t.is_cuda:
                return f"{name} is not a CUDA tensor"
            esz = t.element_size()
            if t.data_ptr() % 16 or (self._int(op.stride, args) * esz) % 16:
                return f"{name}'s base or row stride is not 16-byte aligned (TMA)"
            try:
                self._view(op, args)
            except RuntimeError as e:
                return f"{name} does not hold the [rows, cols] the kernel addresses: {e}"
        return None

    def _derived(self, d, b_view, args):
        import weakref

        import torch
        weight = args[d.weight]
        scale = args[d.scale] if d.scale is not None else None
        key = (b_view.data_ptr(), weight._version, weight.dtype, tuple(b_view.shape),
               tuple(b_view.stride()), self.lowering.b_kn,
               None if scale is None else (scale.data_ptr(), scale._version, scale.dtype))
        hit = _DERIVED_CACHE.get(key)
        capturing = torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
        # a freed tensor's address is reused by the next allocation: the entry counts only while
        # the very tensors it was computed from are alive
        if hit is not None and hit[0]() is weight and (scale is None or hit[1]() is scale):
            _DERIVED_CACHE.move_to_end(key)
            if capturing:  # a captured graph reads it by address: keep it alive
                _GRAPH_PINS[id(hit[2])] = hit[2]
            return hit[2]
        w = b_view.float()
        k_axis = 0 if self.lowering.b_kn else 1
        if scale is not None:
            K = w.shape[k_axis]
            g = scale.reshape(-1)[:K].float()
            w = w * (g[:, None] if self.lowering.b_kn else g[None, :])
        cs = w.sum(k_axis).contiguous()
        if capturing:  # computed by every replay, in the graph's memory: not for eager launches
            return cs
        _DERIVED_CACHE[key] = (weakref.ref(weight), weakref.ref(scale) if scale is not None else None, cs)
        if len(_DERIVED_CACHE) > _DERIVED_CACHE_SIZE:
            _DERIVED_CACHE.popitem(last=False)
        return cs

    def __call__(self, args, *, grid: int | None = None):
        """Launch with the runtime arguments `args` (the kernel's non-constexpr parameters, in
        order). Returns the output view."""
        return self.bind(args, grid=grid)()

    def bind(self, args, *, grid: int | None = None):
        """The launch for fixed `args`: a callable that only re-checks that the derived vectors'
        inputs did not change (their `_version`) before it calls Triton's launcher. For
        benchmarks and repeated launches."""
        plan = self.prepare(args, grid=grid)
        return lambda: plan.run(args)

    def prepare(self, args, *, grid: int | None = None) -> "LoweredPlan":
        """What a launch decides from its arguments' sizes, strides, dtypes and alignment, not
        their addresses (the views' geometry, the grid, the launcher): `plan.run(args)` then
        launches any arguments of that geometry with only per-address work (the views, the
        descriptors from runtime.descriptor's cache, the derived vectors from theirs). The
        caller keys plans on that geometry (`why_not(args)` must hold for each)."""
        return LoweredPlan(self, args, grid)


class LoweredPlan:
    """A lowered launch prepared for one argument geometry (see LoweredLaunch.prepare)."""

    def __init__(self, launch: LoweredLaunch, args, grid):
        from ..ops.prenorm_linear import sm_count  # cached per device
        from .runtime import grid_for
        self.launch = launch
        lw = self.lowering = launch.lowering
        inst = launch.instance
        self.cfg = inst.config
        self.geo = [(op.base, launch._int(op.rows, args), launch._int(op.cols, args),
                     launch._int(op.stride, args)) for op in (lw.a, lw.b, lw.out)]
        (_, M, K, _), (_, _, _, _), (_, _, N, _) = self.geo
        self.M, self.N, self.K = M, N, K
        a = launch._view(lw.a, args)
        g = grid
        if g is None:
            g = grid_for(launch.kernel, inst, M, N, sm_count(a.device))
        self.grid = g
        self.runner = launch.kernel[(g, 1, 1)]
        self.derived = [(i, x) for i, (kind, x) in enumerate(lw.eargs) if kind == "derived"]
        self.params = [(i, x) for i, (kind, x) in enumerate(lw.eargs) if kind != "derived"]
        self.n_eargs = len(lw.eargs)

    @staticmethod
    def _view(t, rows, cols, stride):
        if t.dim() == 2 and t.shape[0] == rows and t.shape[1] == cols and t.stride(1) == 1 \
                and (t.stride(0) == stride or rows <= 1):
            return t
        return t.as_strided((rows, cols), (stride, 1), t.storage_offset())

    def run(self, args):
        """Launch with `args` (the geometry the plan was made for). Returns the output view."""
        from .runtime import SharedStats, _args
        (ia, ra, ca, sa), (ib, rb, cb, sb), (ic, rc, cc, sc) = self.geo
        a = self._view(args[ia], ra, ca, sa)
        b = self._view(args[ib], rb, cb, sb)
        c = self._view(args[ic], rc, cc, sc)
        eargs = [None] * self.n_eargs
        for i, x in self.params:
            eargs[i] = args[x]
        for i, x in self.derived:
            eargs[i] = self.launch._derived(x, b, args)
        cfg = self.cfg
        shared = (SharedStats.take(a.device, self.M, cfg.block_m) if cfg.stats_share else None)
        full = _args(self.launch.instance, a, b, c, self.M, self.N, self.K, eargs, shared)
        self.runner(*full, cfg.consumer_warps)
        return c
