"""H200: why the speed summary's pre-norm RMSNorm time at some cells differs from ab_order's for
the identical kernel (2026-12-02: 262144x2048x1024 fused 2.198 ms in the summary, ~1.75 ms in
`bench/ab_order.py`). Times, per cell and round, in the summary's order (cuBLAS, backbone, eager
and compiled norm, then the fused op) and then the fused op again right after cuBLAS, with both
timers (the summary's do_bench(warmup=25, rep=100), ab_order's (10, 60)).

    PYTHONPATH=python python3 bench/summary_probe.py [--cells 262144x2048x1024,...] [--rounds 3]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from ncu_backbone import cell_inputs  # (this directory: the script's own)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="262144x2048x1024,262144x2048x2048,262144x512x2048")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    crms = torch.compile(lambda t, w: F.rms_norm(t, (t.shape[-1],), w, 1e-6), dynamic=False)
    for cell in a.cells.split(","):
        M, K, N, x, w, gk, y, bb, p = cell_inputs(cell)
        p()
        bb.launch()
        crms(x, gk)
        torch.cuda.synchronize()
        fns = {"cublas": lambda: torch.matmul(x, w.T, out=y), "backbone": bb.launch,
               "norm_eager": lambda: F.rms_norm(x, (K,), gk, 1e-6), "norm_compiled": lambda: crms(x, gk),
               "fused": p.launch, "cublas2": lambda: torch.matmul(x, w.T, out=y), "fused_after_cublas": p.launch}
        res = {k: [] for k in fns}
        short = {k: [] for k in ("fused", "backbone")}
        for _ in range(a.rounds):
            for k, f in fns.items():
                res[k].append(float(do_bench(f, warmup=25, rep=100, return_mode="median")))
            for k, f in (("fused", p.launch), ("backbone", bb.launch)):
                short[k].append(float(do_bench(f, warmup=10, rep=60, return_mode="median")))
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"{cell} config {p.config} | " + " | ".join(f"{k} {v:.3f}" for k, v in med.items())
              + " | short timer: " + " ".join(f"{k} {statistics.median(v):.3f}" for k, v in short.items())
              + f" | all fused {['%.3f' % v for v in res['fused']]}", flush=True)
        del x, w, y, p, bb
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
