"""Why a CUDA-graph replay of a model's prefill can time slower than its eager call: for each
configuration (eager, and captured with models.graphed), the wall time per call when each call is
synchronized on its own (the model benchmark's way), the time per call of N calls back to back,
and the device time of one call's kernels (torch.profiler).

    PYTHONPATH=python python3 bench/graph_probe.py [--model bert] [--calls 30]
"""
from __future__ import annotations

import argparse
import statistics
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bert")
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--kernels", type=int, default=0, help="list each call's top N kernels")
    ap.add_argument("--sdpa", default="", help="restrict SDPA's backends for every call and "
                    "capture (comma-separated: flash, efficient, cudnn, math): whether the "
                    "captured forward's slowdown is SDPA's backend choice under capture")
    a = ap.parse_args(argv)
    import contextlib

    import torch
    scope = contextlib.nullcontext()
    if a.sdpa:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        names = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                 "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
        scope = sdpa_kernel([names[n] for n in a.sdpa.split(",")])
    with scope:
        return _run(a, torch)


def _run(a, torch) -> int:
    from normfuse.repro import models as M
    from normfuse.repro.profile_models import kernels_of
    spec = M.SPECS[a.model]
    sd, ids, _ = M.make_state(spec, "cuda", torch.bfloat16)
    calls = {}
    for c in ("stock", "normfuse"):
        m = M.build_configuration(spec, M._config(c), sd, "cuda", torch.bfloat16, {}).eval()

        def fwd(m=m):
            with torch.no_grad():
                return M._forward(m, ids)
        calls[c] = fwd
        calls[c + "+graph"] = M.graphed(fwd)
    for f in calls.values():
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    single = {k: [] for k in calls}
    for _ in range(a.calls):
        for k, f in calls.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            f()
            torch.cuda.synchronize()
            single[k].append((time.perf_counter() - t0) * 1e3)
    for k, f in calls.items():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.calls):
            f()
        torch.cuda.synchronize()
        burst = (time.perf_counter() - t0) * 1e3 / a.calls
        dev, evs = kernels_of(f)
        n = sum(e.count for e in evs)
        print(f"{a.model} {k:16s} synchronized per call: median {statistics.median(single[k]):.3f} "
              f"ms (min {min(single[k]):.3f}); back to back: {burst:.3f} ms per call; "
              f"kernels of one call: {dev:.3f} ms in {n} events")
        for e in evs[:a.kernels]:
            print(f"    {e.device_time_total / 1e3:8.3f} ms x{e.count:<3d} {e.key[:100]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
