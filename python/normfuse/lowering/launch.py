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
_DERIVED_CACHE_SIZE = 32


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
        weight = args[d.weight]
        scale = args[d.scale] if d.scale is not None else None
        key = (b_view.data_ptr(), weight._version, weight.dtype, tuple(b_view.shape),
               tuple(b_view.stride()), self.lowering.b_kn,
               None if scale is None else (scale.data_ptr(), scale._version, scale.dtype))
        hit = _DERIVED_CACHE.get(key)
        # a freed tensor's address is reused by the next allocation: the entry counts only while
        # the very tensors it was computed from are alive
        if hit is not None and hit[0]() is weight and (scale is None or hit[1]() is scale):
            _DERIVED_CACHE.move_to_end(key)
            return hit[2]
        w = b_view.float()
        k_axis = 0 if self.lowering.b_kn else 1
        if scale is not None:
            K = w.shape[k_axis]
            g = scale.reshape(-1)[:K].float()
            w = w * (g[:, None] if self.lowering.b_kn else g[None, :])
        cs = w.sum(k_axis).contiguous()
        _DERIVED_CACHE[key] = (weakref.ref(weight), weakref.ref(scale) if scale is not None else None, cs)
        if len(_DERIVED_CACHE) > _DERIVED_CACHE_SIZE:
            _DERIVED_CACHE.popitem(last=False)
        return cs

    def __call__(self, args, *, grid: int | None = None):
        """Launch with the runtime arguments `args` (the kernel's non-constexpr parameters, in
        order). Returns the output view."""
        return self.bind(args, grid=grid)()

    def bind(self, args, *, grid: int | None = None):
        """The launch for fixed `args`, prepared once (views, descriptors, derived vectors, grid):
        a callable that only re-checks that the derived vectors' inputs did not change (their
        `_version`) before it calls Triton's launcher. For benchmarks and repeated launches."""
        from ..device import sm_count  # cached per device
        from .runtime import SHARED_ARGS, SharedStats, _args, grid_for
        lw = self.lowering
        a = self._view(lw.a, args)
        b = self._view(lw.b, args)
        c = self._view(lw.out, args)
        derived_inputs = [args[lw.b.base]] + [args[x.scale] for k, x in lw.eargs
                                               if k == "derived" and x.scale is not None]

        def build():
            eargs = tuple(self._derived(x, b, args) if kind == "derived" else args[x]
                          for kind, x in lw.eargs)
            M, K = a.shape
            g = grid
            if g is None:
                g = grid_for(self.kernel, self.instance, M, c.shape[1], sm_count(a.device))
            # shared statistics: the workspace and epoch are taken per launch (run)
            shared = (a, 0) if cfg.stats_share else None
            full = _args(self.instance, a, b, c, M, c.shape[1], K, eargs, shared) + (cfg.consumer_warps,)
            return self.kernel[(g, 1, 1)], full, tuple(t._version for t in derived_inputs), g

        cfg = self.instance.config
        state = {"launch": build()}
        has_derived = any(k == "derived" for k, _ in lw.eargs)

        def run():
            runner, full, versions, g = state["launch"]
            if has_derived and tuple(t._version for t in derived_inputs) != versions:
                state["launch"] = build()
                runner, full, _, g = state["launch"]
            if cfg.stats_share:
                # every launch waits for its own epoch's statistics (on the current stream)
                full = (full[:SHARED_ARGS.start] + SharedStats.take(a.device, a.shape[0], cfg.block_m)
                        + full[SHARED_ARGS.stop:])
            runner(*full)
            return c
        return run
