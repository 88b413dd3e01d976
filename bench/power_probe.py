"""H200: each kernel of a pre-norm cell alone for seconds, with its steady SM clock, power and
energy per call (why the summary's big cells move between runs: they run at the 700 W cap).

    PYTHONPATH=python python3 bench/power_probe.py [--cells 262144x2048x2048,...] [--seconds 3]
                                                   [--specs 'hopper-ws{...};...'] [--json FILE]

Per cell and kernel (cuBLAS, the backbone through hopper-ws, the fused RMSNorm and LayerNorm ops,
the eager RMSNorm alone; per --specs spec also the backbone (without stats-share) and the fused
RMSNorm and LayerNorm ops through that hopper-ws spelling): back-to-back launches for --seconds, its time per call from CUDA events
over all of them, and nvidia-smi's samples (repro/gpu_clocks.py) after the first second: median
SM clock, median power, the share under the software power cap; energy per call = power x time.
Under the cap the kernel that spends less energy per call gets the higher clock. Kernels of a
cell take turns over --rounds rounds. Not run in CI.
"""
import argparse
import datetime as dt
import json
import statistics

import torch
import torch.nn.functional as F

from ncu_backbone import cell_inputs  # (this directory: the script's own)
from normfuse.ops import prenorm_linear as pre
from normfuse.repro.gpu_clocks import ClockSampler


def steady(fn, seconds, sampler, settle=1.0):
    """(ms per call, clocks) of fn launched back to back for about `seconds`."""
    fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(5):
        fn()
    e1.record()
    torch.cuda.synchronize()
    n = max(10, int(seconds * 1000 / max(e0.elapsed_time(e1) / 5, 1e-3)))
    t0 = sampler.now()
    e0.record()
    for _ in range(n):
        fn()
    e1.record()
    torch.cuda.synchronize()
    t1 = sampler.now()
    ms = e0.elapsed_time(e1) / n
    return ms, sampler.window(t0 + dt.timedelta(seconds=settle), t1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="262144x2048x2048,262144x1024x1024,262144x512x512")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--specs", default="", help="hopper-ws spellings to add, ';'-separated")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    rows = []
    with ClockSampler(period_ms=50) as sampler:
        if not sampler.enabled:
            raise SystemExit("power_probe: nvidia-smi is not available")
        for cell in a.cells.split(","):
            M, K, N, x, w, gk, y, bb, rms = cell_inputs(cell)
            bk = (0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
            ln = pre.prepare_layernorm_linear(x, gk, bk, w, 1e-5)
            fns = {"cublas": lambda: torch.matmul(x, w.T, out=y), "backbone": bb.launch,
                   "rmsnorm_linear": rms.launch, "layernorm_linear": ln.launch,
                   "rms_norm eager": lambda: F.rms_norm(x, (K,), gk, 1e-6)}
            for spec in (s for s in a.specs.split(";") if s):
                if "stats-share" not in spec:  # (the plain GEMM has no statistics to share)
                    fns["backbone@" + spec] = pre.prepare_plain_linear(x, w, passes=spec).launch
                fns["rms@" + spec] = pre.prepare_rmsnorm_linear(
                    x, gk, w, 1e-6, passes="lazy-prenorm," + spec).launch
                fns["ln@" + spec] = pre.prepare_layernorm_linear(
                    x, gk, bk, w, 1e-5, passes="lazy-prenorm," + spec).launch
            got = {k: [] for k in fns}
            for _ in range(a.rounds):
                for k, f in fns.items():
                    got[k].append(steady(f, a.seconds, sampler))
            for k, runs in got.items():
                ms = statistics.median(r[0] for r in runs)
                clk = [r[1] for r in runs if r[1].get("n")]
                mhz = statistics.median(c["sm_mhz"] for c in clk) if clk else float("nan")
                watts = statistics.median(c["power_w"] for c in clk) if clk else float("nan")
                capped = statistics.median(c["capped"] for c in clk) if clk else float("nan")
                row = {"cell": cell, "kernel": k, "ms": ms, "sm_mhz": mhz, "power_w": watts,
                       "capped": capped, "mj_per_call": watts * ms, "rounds": len(runs),
                       "all_ms": [r[0] for r in runs], "all_mhz": [c.get("sm_mhz") for c in clk]}
                rows.append(row)
                print(f"{cell} {k:44s} {ms:7.3f} ms  SM {mhz:6.0f} MHz  {watts:5.0f} W  capped "
                      f"{100 * capped:3.0f} %  {watts * ms:7.1f} mJ/call  (rounds {row['all_ms']})",
                      flush=True)
            del x, w, y, bb, rms, ln, fns
            torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "date": dt.date.today().isoformat(),
                       "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
