"""`run_ir`: run a kernel's IR on the CPU, whichever form it is in.

TTIR (a kernel before or after normfuse's fusion passes) runs in `interpreter`, one program (or
one cluster) after another; TTGIR with `ttg.warp_specialize` (the kernel hopper-ws lowers to)
runs in `warp_specialized`, every CTA and partition at once, interleaved by a seeded scheduler.
"""
from __future__ import annotations

from . import interpreter
from .interpreter import InterpreterError, _func_attr, _grid3, _load, _pick_kernel, is_ttgir
from .warp_specialized import RunInfo, run_ttgir

__all__ = ["run_ir"]


def run_ir(ir_text: str, args, grid, *, num_ctas: int = 1, kernel: str | None = None,
           seed: int = 0, trusted: bool = False) -> RunInfo | None:
    """Run the kernel of `ir_text` on `args` for every program of `grid`, like a launch.

    TTIR: see `interpreter.run_ir` (`num_ctas`: the cluster size a cluster-reduce'd kernel is
    launched with); returns None. TTGIR (a lowered kernel): all programs of the grid and all
    partitions at once, interleaved by a scheduler seeded with `seed`; a tensor-descriptor
    parameter takes the host descriptor (base, shape, strides, and block or block_shape: the
    lowering's TmaArg, Gluon's TensorDescriptor), pointer arguments may be views (their whole
    storage is mapped); returns the run's `RunInfo`. Raises `InterpreterError`, `RaceError`.
    `trusted`: the text is Triton's own print of a module it verified (see `interpreter.run_ir`)."""
    if not is_ttgir(ir_text):
        interpreter.run_ir(ir_text, args, grid, num_ctas=num_ctas, kernel=kernel, trusted=trusted)
        return None
    module = _load(ir_text, trusted)
    func = _pick_kernel(module, kernel)
    if num_ctas != 1 or _func_attr(func, "normfuse.cluster_dims"):
        raise InterpreterError("TTGIR with clusters is not supported by the interpreter")
    return run_ttgir(module, func, args, _grid3(grid), seed=seed)
