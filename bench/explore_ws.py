"""Tune the warp-specialized template (normfuse/lowering/ws_gemm.py) on the H200 with hand-written
hooks (bench/ws_hooks.py): correctness (NaN-poisoned outputs, fp32 reference on a row sample, two
launches bitwise equal) and time next to cuBLAS, per schedule, on the issues' shapes.

    PYTHONPATH=python python3 bench/explore_ws.py --out DIR [--quick] [--only plain,rms,...]

Writes DIR/explore_ws.json and prints a table (time / cuBLAS). Not run in CI.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import triton
from triton.testing import do_bench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ws_hooks as H  # noqa: E402
from normfuse.lowering.runtime import Hooks, Instance, WSConfig, _Fake, compile_instance, launch  # noqa: E402

BLOG = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)]
BIG = [(8192, 4096, 4096), (8192, 8192, 8192)]
RAGGED = [(4133, 1032, 1000), (777, 520, 264)]
# (the row-major tile order, the N-split warpgroups and the template's post-norms were measured
# here too and removed as slower: docs/NOTES.md)
CONFIGS = {
    "coop3": WSConfig(),
    "pp4": WSConfig(block_n=128, stages=4, consumers=2, consumer_warps=4),
    "pp5": WSConfig(block_n=128, stages=5, consumers=2, consumer_warps=4),
}


def variants(N, cfg):
    bf, f32 = torch.bfloat16, torch.float32
    return {
        "plain": (Hooks(), (17,)),
        "rms": (Hooks(stats=H.rms_stats, epi=H.rms_epi), (17, 1e-6)),
        "rms_g": (Hooks(stats=H.rms_stats, afn=H.rms_afn_g, epi=H.rms_epi), (17, 1e-6, _Fake([1], bf))),
        "ln": (Hooks(stats=H.ln_stats, epi=H.ln_epi), (17, 1e-5, 17, _Fake([1], f32), _Fake([1], f32))),
        "diag_colvec": (Hooks(epi=H.diag_colvec_epi), (17, 1e-6, _Fake([1], bf))),
        "diag_colvec_cvt": (Hooks(epi=H.diag_colvec_cvt_epi), (17, 1e-6, _Fake([1], bf))),
    }


_CK = {}


def compiled(name, cfgname, inst):
    key = (name, cfgname)
    if key not in _CK:
        t = time.time()
        _CK[key] = compile_instance(inst)
        print(f"  compiled {name}/{cfgname} in {time.time() - t:.1f}s", flush=True)
    return _CK[key]


def reference(name, X, W, G, B, eps, rows):
    x = X[:rows].double()
    w = W.double()
    if name.startswith("plain") or name.startswith("diag"):
        return x @ w.T  # diagnostics: numerics not checked
    if name == "rms":
        return (x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + eps)) @ w.T
    if name == "rms_g":
        return (x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + eps) * G.double()) @ w.T
    if name == "ln":  # W is W' (g folded), B is the output bias W beta
        mu = x.mean(1, keepdim=True)
        var = x.var(1, unbiased=False, keepdim=True)
        return ((x - mu) * torch.rsqrt(var + eps)) @ w.T + B.double()
    raise ValueError(name)


def run_shape(M, K, N, only, cfgnames, timing=True):
    torch.manual_seed(0)
    dev = "cuda"
    X = torch.randn(M, K, device=dev, dtype=torch.bfloat16) + 0.5
    W = (torch.randn(N, K, device=dev) / K ** 0.5).to(torch.bfloat16)
    Y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    Gk = (1 + 0.1 * torch.randn(K, device=dev)).to(torch.bfloat16)
    Gn = (1 + 0.1 * torch.randn(N, device=dev)).to(torch.bfloat16)
    cs = W.float().sum(1).contiguous()
    lnb = (0.1 * torch.randn(N, device=dev)).float()
    row = {"M": M, "K": K, "N": N}
    if timing:
        row["cublas_ms"] = do_bench(lambda: torch.matmul(X, W.T), warmup=25, rep=100)
    rows = min(M, 1024)
    for cfgname in cfgnames:
        cfg = CONFIGS[cfgname]
        for name, (hooks, ex) in variants(N, cfg).items():
            if only and name not in only:
                continue
            key = f"{name}/{cfgname}"
            inst = Instance(cfg, hooks, eargs_example=ex)
            try:
                ck = compiled(name, cfgname, inst)
                if name.startswith("plain"):
                    eargs = (K,)
                elif name in ("rms",):
                    eargs = (K, 1e-6)
                elif name == "rms_g":
                    eargs = (K, 1e-6, Gk)
                elif name == "ln":
                    eargs = (K, 1e-5, N, cs, lnb)
                else:  # the diagnostics
                    eargs = (N, 1e-6, Gn)
                Y.fill_(float("nan"))
                launch(ck, inst, X, W, Y, eargs)
                torch.cuda.synchronize()
                first = Y.clone()
                launch(ck, inst, X, W, Y, eargs)
                torch.cuda.synchronize()
                eps = 1e-6 if "rms" in name else 1e-5
                ref = reference(name, X, W, Gk if name == "rms_g" else Gn, lnb, eps, rows)
                err = ((Y[:rows].double() - ref).norm() / ref.norm()).item()
                r = {"err": err, "nan": bool(torch.isnan(Y).any()), "repeatable": bool(torch.equal(first, Y))}
                if timing:
                    ms = do_bench(lambda: launch(ck, inst, X, W, Y, eargs), warmup=25, rep=100)
                    r.update(ms=ms, vs_cublas=ms / row["cublas_ms"])
                row[key] = r
                print(f"{M}x{K}x{N} {key:18s} {r}", flush=True)
            except Exception as e:  # noqa: BLE001
                row[key] = {"error": f"{type(e).__name__}: {str(e)[-400:]}"}
                print(f"{M}x{K}x{N} {key:18s} ERROR {row[key]['error']}", flush=True)
    del X, W, Y
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--only", default="")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--shapes", default="ragged,blog,big")
    args = ap.parse_args()
    only = set(x for x in args.only.split(",") if x)
    cfgnames = [c for c in args.configs.split(",") if c]
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "date": time.strftime("%Y-%m-%d"), "rows": []}
    groups = {"ragged": (RAGGED, False), "blog": (BLOG, True), "big": (BIG, True),
              "probe": ([(262144, 512, 512), (262144, 1024, 1024), (262144, 2048, 2048), (8192, 8192, 8192)], True)}
    for g in args.shapes.split(","):
        shapes, timing = groups[g]
        for (M, K, N) in shapes:
            res["rows"].append(run_shape(M, K, N, only, cfgnames, timing))
            with open(os.path.join(args.out, "explore_ws.json"), "w") as f:
                json.dump(res, f, indent=1)
    # summary table: time / cuBLAS
    keys = sorted({k for r in res["rows"] for k in r if "/" in k})
    print("\nshape | " + " | ".join(keys))
    for r in res["rows"]:
        if "cublas_ms" not in r:
            bad = [k for k in keys if k in r and ("error" in r[k] or r[k]["err"] > 2e-2 or r[k]["nan"]
                                                  or not r[k]["repeatable"])]
            print(f"{r['M']}x{r['K']}x{r['N']} correctness problems: {bad or 'none'}")
            continue
        cells = []
        for k in keys:
            v = r.get(k)
            if v is None:
                cells.append("-")
            elif "error" in v:
                cells.append("ERR")
            else:
                flag = "" if (v["err"] < 2e-2 and not v["nan"] and v["repeatable"]) else "!"
                cells.append(f"{v['vs_cublas']:.3f}{flag}")
        print(f"{r['M']}x{r['K']}x{r['N']} ({r['cublas_ms']:.3f}ms) | " + " | ".join(cells))


if __name__ == "__main__":
    main()
