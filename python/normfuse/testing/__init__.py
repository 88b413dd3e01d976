"""CPU checks of what the passes mean, not only of what they print.

- `run_ir(ir_text, args, grid, *, num_ctas=1, kernel=None, seed=0, trusted=False)` (`run`):
  execute a TTIR module on numpy arrays or CPU tensors, every program of the grid, thread-block
  clusters and normfuse's inline PTX included (`interpreter`, `ptx`, `memory`); a
  warp-specialized TTGIR module (what hopper-ws lowers to) runs all CTAs and partitions
  interleaved, with TMA, mbarriers and wgmma and their race check (`warp_specialized`);
  `trusted` for a compiled kernel's own text (no crash preflight).
- `check_pass_numerics(fn, args, *, constexprs, grid, passes="default", **options)`: compile a
  kernel ahead of time for sm_90, run its IR before and after the passes, compare, and run the
  lowered kernel when a lowering applied (`numerics`); `check_ir_numerics` does the same for
  TTIR text, `check_lowered_numerics` for a kernel compiled elsewhere (the ops' `aot_compile`);
  `ttir_of` gives a kernel's TTIR without compiling it further, `lower_ir` the passes' lowered
  kernel of a TTIR text.
"""
from .interpreter import TRITON_SMEM, cluster_dims
from .run import run_ir
from .memory import InterpreterError, RaceError, bf16_bits, bf16_from_bits, round_bf16
from .numerics import (ALL_PASSES, LoweredBinding, LoweredRun, NumericsCheck, check_ir_numerics,
                       check_lowered_numerics, check_pass_numerics, default_pipeline,
                       lower_ir, lowered_launch, rel_diff, run_lowered, stale_words,
                       ttir_of)

__all__ = ["run_ir", "cluster_dims", "check_pass_numerics", "check_ir_numerics",
           "check_lowered_numerics", "NumericsCheck", "LoweredRun", "LoweredBinding",
           "lowered_launch", "run_lowered", "stale_words", "default_pipeline", "rel_diff",
           "InterpreterError", "RaceError", "round_bf16", "bf16_bits", "bf16_from_bits",
           "TRITON_SMEM", "ALL_PASSES", "ttir_of", "lower_ir"]
