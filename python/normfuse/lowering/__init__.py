"""The backend of `hopper-ws`: a plan (`normfuse.ir.ws_plan.WSPlan`) becomes a Gluon program.

- `codegen`: the plan's hook DAGs as Gluon source (the hook signatures are the template's).
- `ws_gemm`: the warp-specialized GEMM template (loader / consumer partitions, statistics read
  from the MMA's shared A tile, shared statistics through global memory).
- `runtime`: an instance of the template for a plan, compiled ahead of time (`build`).
- `launch`: the launch of a compiled plan with the arguments of the kernel it was planned from
  (descriptors, derived arguments, the persistent grid).
"""
from .runtime import LoweredKernel, build

__all__ = ["build", "LoweredKernel"]
