"""Launch a lowered kernel with the arguments of the kernel it was planned from.

The user's kernel takes pointers and sizes; the template takes TMA descriptors, M/N/K, the
`eargs` tuple its hooks read, and the shared statistics' workspace. The plan says where each comes
from (its launch needs: the descriptors of A, B and the output, the derived arguments, the
persistent grid, the shared statistics): `LoweredLaunch.arguments` computes all of it on the host
and returns a `BoundLaunch`, a plain record of what a launch passes (the template's arguments in
order, each descriptor's base, shape, strides and box, the grid). It needs no GPU: given CPU
tensors and an SM count it computes exactly what the real launch would pass (the CPU interpreter
of the lowered TTGIR executes a kernel with it). `__call__` launches it; `bind` prepares a launch
for fixed arguments.

Derived arguments (the column sums of the weight) are computed with torch once per weight
version (the tensors' data pointers and `_version`), on the weight's device.

A launch whose operands TMA cannot address (a base or row stride that is not 16-byte aligned) is
refused with the reason (`why_not`), and the caller runs the unlowered kernel instead.
"""
from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..ir.ws_plan import TileOperand
from .runtime import RUNTIME_PARAMS, SharedStats, TmaArg, grid_for, kernel_arguments

__all__ = ["LoweredLaunch", "BoundLaunch", "TmaArg"]

_DERIVED_CACHE: "OrderedDict[tuple, tuple]" = OrderedDict()
_DERIVED_CACHE_SIZE = 32


@dataclass(frozen=True)
class BoundLaunch:
    """What one launch of a lowered kernel passes, computed on the host.

    `args`: the template kernel's runtime arguments in order (`names`): the TMA descriptors of A,
    B and the output (`TmaArg`: base tensor, [rows, cols], strides, box), M, N, K, the `eargs`
    tuple the hooks read (kernel parameters and derived vectors), the shared statistics' words
    and the launch's epoch. `constexprs`: the template's compile-time parameters (hooks, tile
    config, num_warps). `grid`: the launch grid (persistent: programs, 1, 1). `output`: the
    [M, N] view the launch writes."""
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

    def why_not(self, args) -> str | None:
        """None when the launch can run lowered, else the reason it cannot."""
        import torch
        plan = self.plan
        cfg = plan.config
        for single, src, blk, what in ((plan.single[0], plan.M, cfg.block_m, "M"),
                                       (plan.single[1], plan.N, cfg.block_n, "N")):
            if single and self._int(src, args) > blk:
                return (f"the kernel covers one tile of {what} ({blk}), the launch has "
                        f"{what} = {self._int(src, args)}")
        for name, op in (("A", plan.a), ("B", plan.b), ("output", plan.out)):
            t = self._arg(args, op.base)
            if not isinstance(t, torch.Tensor) or not t.is_cuda:
                return f"{name} is not a CUDA tensor"
            why = _addressable(name, *self._matrix(op, args))
            if why:
                return why
        return None

    def _derived(self, j: int, args):
        """Column sum j of the weight, cached per weight (and scale) version."""
        d = self.plan.column_sums[j]
        w_t, (rows, cols), stride = self._matrix(self.plan.b, args)
        weight = self._arg(args, d.weight)
        scale = self._arg(args, d.scale) if d.scale is not None else None
        b_kn = self.plan.b_kn
        key = (w_t.data_ptr(), weight._version, weight.dtype, rows, cols, stride, b_kn,
               None if scale is None else (scale.data_ptr(), scale._version, scale.dtype))
        hit = _DERIVED_CACHE.get(key)
        # a freed tensor's address is reused by the next allocation: the entry counts only while
        # the very tensors it was computed from are alive
        if hit is not None and hit[0]() is weight and (scale is None or hit[1]() is scale):
            _DERIVED_CACHE.move_to_end(key)
            return hit[2]
        w = w_t.as_strided((rows, cols), (stride, 1), w_t.storage_offset()).float()
        k_axis = 0 if b_kn else 1
        if scale is not None:
            K = w.shape[k_axis]
            g = scale.reshape(-1)[:K].float()
            w = w * (g[:, None] if b_kn else g[None, :])
        cs = w.sum(k_axis).contiguous()
        _DERIVED_CACHE[key] = (weakref.ref(weight), weakref.ref(scale) if scale is not None else None, cs)
        if len(_DERIVED_CACHE) > _DERIVED_CACHE_SIZE:
            _DERIVED_CACHE.popitem(last=False)
        return cs

    def arguments(self, args, *, grid: int | None = None, sms: int | None = None,
                  shared: tuple | None = None) -> BoundLaunch:
        """What the launch with the planned kernel's runtime arguments `args` passes (see
        `BoundLaunch`). `sms`: the SM count the persistent grid is sized for (default: the
        device's); `shared`: (words, epoch) of the shared statistics (default: the current
        stream's workspace, `SharedStats`). Pure host computation: CPU tensors work."""
        plan, inst = self.plan, self.instance
        ab, bb, cb = inst.blocks
        descs = []
        for op, block in ((plan.a, ab), (plan.b, bb), (plan.out, cb)):
            t, shape, stride = self._matrix(op, args)
            descs.append(TmaArg(t, shape, (stride, 1), block))
        M, K = descs[0].shape
        N = descs[2].shape[1]
        eargs = tuple(self._derived(x, args) if kind == "derived" else self._arg(args, x)
                      for kind, x in self.lowered.eargs)
        if grid is None:
            if sms is None:
                from ..device import sm_count  # cached per device
                sms = sm_count(descs[0].base.device)
            grid = grid_for(plan.config, M, N, sms)
        if shared is None:
            a = descs[0].base
            shared = (SharedStats.take(a.device, M, plan.config.block_m) if plan.config.stats_share
                      else (a, 0))
        c = descs[2]
        out = c.base.as_strided(c.shape, c.strides, c.base.storage_offset())
        return BoundLaunch(RUNTIME_PARAMS, (*descs, M, N, K, eargs, *shared), inst.constexprs(),
                           (grid, 1, 1), out)

    def __call__(self, args, *, grid: int | None = None):
        """Launch with the runtime arguments `args` (the planned kernel's non-constexpr
        parameters, in order). Returns the output view."""
        b = self.arguments(args, grid=grid)
        self.kernel[b.grid](*b.launch_args(self.instance))
        return b.output

    def bind(self, args, *, grid: int | None = None):
        """The launch for fixed `args`, prepared once (descriptors, derived vectors, grid): a
        callable that only re-checks that the derived vectors' inputs did not change (their
        `_version`) and, with shared statistics, takes the launch's epoch, before it calls
        Triton's launcher. For prepared launches and benchmarks."""
        plan = self.plan
        inputs = [self._arg(args, plan.b.base)] + [self._arg(args, d.scale)
                                                   for d in plan.column_sums if d.scale is not None]
        share = plan.config.stats_share
        from .ws_gemm import ws_gemm_kernel
        pos = ws_gemm_kernel.arg_names.index("sbuf")  # then the epoch

        def build():
            b = self.arguments(args, grid=grid, shared=(None, 0) if share else None)
            return self.kernel[b.grid], b.launch_args(self.instance), b, [t._version for t in inputs]

        state = [build()]

        def run():
            runner, full, b, versions = state[0]
            if plan.column_sums and [t._version for t in inputs] != versions:
                state[0] = build()
                runner, full, b, _ = state[0]
            if share:
                # every launch waits for its own epoch's statistics (on the current stream)
                a = b.args[0].base
                full = list(full)
                full[pos:pos + 2] = SharedStats.take(a.device, b.args[3], plan.config.block_m)
            runner(*full)
            return b.output
        return run


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
