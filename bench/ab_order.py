"""A/B of lowered-template variants on the H200 (hopper-ws options: by default the per-tile
statistics against the statistics shared per row block), for the backbone and the pre-norm ops,
interleaved rounds.

    PYTHONPATH=python python3 bench/ab_order.py --out DIR [--rounds 3] [--specs 'hopper-ws;...']

Each variant is one spec of --specs. Per cell and variant the median of `rounds` do_bench
medians (the variants run in turn in every round, so drift hits all alike). (Its earlier runs
compared tile orders and a statistics partition, options removed since: docs/NOTES.md.)
Writes DIR/ab_order.json and prints ratios to cuBLAS. Not run in CI.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch
import triton
from triton.testing import do_bench

from normfuse.ops import prenorm_linear as pre

BLOG = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)]
BIG = [(8192, 4096, 4096), (8192, 8192, 8192)]


def bench(fn):
    return float(do_bench(fn, warmup=10, rep=60, return_mode="median"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cells", default="blog,big")
    ap.add_argument("--specs", default="hopper-ws;hopper-ws{stats-share=true}")
    ap.add_argument("--ops", default="plain,rms,ln")
    a = ap.parse_args()
    limits = [s for s in a.specs.split(";") if s]
    want = a.ops.split(",")
    cells = (BLOG if "blog" in a.cells else []) + (BIG if "big" in a.cells else [])
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "date": time.strftime("%Y-%m-%d"), "rows": []}
    for (M, K, N) in cells:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
        gk = (1 + 0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
        bk = (0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        fns = {"cublas": lambda: torch.matmul(x, w.T, out=y)}
        outs = {}
        for L in limits:
            spec = L
            full = f"lazy-prenorm,{spec}"
            variants = {"plain": lambda: pre.prepare_plain_linear(x, w, passes=spec),
                        "rms": lambda: pre.prepare_rmsnorm_linear(x, gk, w, 1e-6, passes=full),
                        "ln": lambda: pre.prepare_layernorm_linear(x, gk, bk, w, 1e-5, passes=full)}
            for name, make in variants.items():
                if name not in want:
                    continue
                p = make()
                assert p.compile().lowered is not None, (name, L)
                p.out.fill_(float("nan"))
                outs[(name, L)] = p().clone()
                fns[f"{name}@{L}"] = p.launch
        torch.cuda.synchronize()
        same = {f"{n}": all(torch.equal(outs[(n, limits[0])], outs[(n, L)]) for L in limits)
                for n in want}
        import normfuse.reference as R
        rows = 2048
        errs = {f"{n}@{L}": R.rel_err(outs[(n, L)][:rows], {"plain": lambda: x[:rows].double() @ w.double().T,
                                                          "rms": lambda: R.rmsnorm_linear_ref(x[:rows], gk, w, 1e-6),
                                                          "ln": lambda: R.layernorm_linear_ref(x[:rows], gk, bk, w, 1e-5)}[n]())
                for n in want for L in limits}
        nan = any(bool(torch.isnan(o).any()) for o in outs.values())
        times = {k: [] for k in fns}
        for _ in range(a.rounds):
            for k, f in fns.items():
                times[k].append(bench(f))
        row = {"M": M, "K": K, "N": N, "bitwise_equal_across_orders": same, "nan": nan, "err": errs,
               "ms": {k: statistics.median(v) for k, v in times.items()}, "all_ms": times}
        cb = row["ms"]["cublas"]
        print(f"{M}x{K}x{N} cublas {cb:.3f} | " + " | ".join(
            f"{k} {v / cb:.3f}" for k, v in row["ms"].items() if k != "cublas")
            + f" | equal {same} nan {nan} maxerr {max(errs.values()):.2e}", flush=True)
        res["rows"].append(row)
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "ab_order.json"), "w") as f:
            json.dump(res, f, indent=1)
        del x, w, y, outs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
