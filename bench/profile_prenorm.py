"""One launch each of cuBLAS, our plain GEMM and the fused RMSNorm GEMM (g folded, reload staged
and not), for Nsight Compute: where does the fused kernel's extra time go? (H200)

    PYTHONPATH=python ncu --clock-control none --nvtx --nvtx-include "profile/" \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \\
        --csv --page details python3 bench/profile_prenorm.py [M K N]

Each kernel is compiled and timed (do_bench) first; the profiled launches, one each, follow in
the order printed, inside the NVTX range "profile" (the two fused kernels share one name).
"""
from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
from normfuse.ops import prenorm_linear as ops  # noqa: E402
from normfuse.repro.bench import do_bench  # noqa: E402


def main(argv) -> int:
    M, K, N = (int(v) for v in argv[:3]) if len(argv) >= 3 else (262144, 1024, 1024)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
    runs = [("cublas", lambda: F.linear(x, w)),
            ("triton_gemm", ops.prepare_plain_linear(x, w).launch)]
    for stage in ("true", "false"):
        plan = ops.prepare_rmsnorm_linear(x, None, w, folded=True,
                                          passes=(f"lazy-prenorm{{stage-reloads={stage}}}",))
        runs.append((f"fused stage-reloads={stage}", plan.launch))
    for name, fn in runs:  # compile, warm up, and the times without the profiler's overhead
        print(f"{name}: {do_bench(fn):.3f} ms", flush=True)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")  # ncu --nvtx --nvtx-include "profile/"
    for name, fn in runs:
        print(f"launch: {name}", flush=True)
        fn()
        torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
