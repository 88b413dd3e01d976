"""Lowerings of fused kernels to hand-scheduled Gluon templates (Hopper, sm_90).

- `ws_gemm`: the warp-specialized GEMM template (loader / consumer partitions, register-operand
  statistics, the DSMEM cluster exchange) that `passes/hopper_ws.py` instantiates.
- `runtime`: compile an instance ahead of time, launch it.
"""
