"""Launch template instances once each, for Nsight Compute (`ncu`) to profile.

    ncu --kernel-name regex:ws_gemm --section SpeedOfLight ... \\
        python3 bench/profile_ws.py --shape 262144,512,1024 --only plain,rms --configs coop3,pp4

Each (variant, config) is compiled, warmed up (two launches), then launched once more; the order
of the profiled launches is printed, so ncu's report can be matched to the variants (`--launch-skip
2 --launch-count 1` per kernel is what the caller sets with `--warmup-in-ncu`). Not run in CI.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import explore_ws as E  # noqa: E402
from normfuse.lowering.runtime import Instance, launch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="262144,512,1024")
    ap.add_argument("--only", default="plain,rms,ln")
    ap.add_argument("--configs", default="coop3,pp4")
    a = ap.parse_args()
    M, K, N = (int(x) for x in a.shape.split(","))
    torch.manual_seed(0)
    dev = "cuda"
    X = torch.randn(M, K, device=dev, dtype=torch.bfloat16) + 0.5
    W = (torch.randn(N, K, device=dev) / K ** 0.5).to(torch.bfloat16)
    Y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    cs = W.float().sum(1).contiguous()
    lnb = (0.1 * torch.randn(N, device=dev)).float()
    eargs = {"plain": (K,), "rms": (K, 1e-6), "ln": (K, 1e-5, N, cs, lnb)}
    for cfgname in a.configs.split(","):
        cfg = E.CONFIGS[cfgname]
        for name, (hooks, ex) in E.variants(N, cfg).items():
            if name not in a.only.split(","):
                continue
            inst = Instance(cfg, hooks, eargs_example=ex)
            ck = E.compiled(name, cfgname, inst)
            for _ in range(3):
                launch(ck, inst, X, W, Y, eargs[name])
            torch.cuda.synchronize()
            print(f"launched {name}/{cfgname} x3", flush=True)


if __name__ == "__main__":
    main()
