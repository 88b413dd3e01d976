"""The post-norm GEMM benchmark: y = norm(x @ W^T), fused (epilogue-norm / cluster-reduce) vs
cuBLAS, eager, torch.compile, the naive kernel and our own Triton GEMM.

    PYTHONPATH=python python3 -m normfuse.repro.bench_post --out DIR [--norm rms|ln|both] [--quick]
                                                               [--cells M,K,N;...] [--no-compile]
                                                               [--cluster-sweep]
                                                               [--exchange dsmem|global|both]

Cells: the blog's M = 262144 x K, N in {512, 1024, 2048}, plus N = 4096 and 8192 at M = 8192 and
32768 (K = 4096). In ONE process and one run per cell (docs/design.md, "How we measure"):

  cublas              F.linear(x, W)                                  the GEMM alone
  eager_norm          F.rms_norm / F.layer_norm over rows of length N standalone norm
  compiled_norm       torch.compile of the same                       standalone norm
  eager_gemm_norm     F.linear then the norm, eager                   what users write
  compiled_gemm_norm  torch.compile of F.linear then the norm
  triton_gemm         kernels/gemm.py at the fused kernel's tile      our GEMM without norm
  naive               the naive post-norm kernel (passes=())          the oracle
  fused               the op's default pipeline cluster-reduce,epilogue-norm
  fused_global        (--exchange both) the same with cluster-reduce{exchange=global}

Times: `triton.testing.do_bench` medians in ms (L2 flushed before each call), X rotated over
buffers when it is small against L2. "Norm hidden %" = (T_cublas + T_norm - T_fused) / T_norm
with T_norm = the best standalone norm (the blog's metric). Numerics on the first `rows_check`
rows: relative Frobenius error vs an fp64 oracle for naive and fused (outputs poisoned with NaN,
every element checked written), fused launched three times and compared bitwise (a race in the
cluster exchange shows up as run-to-run differences).

`--cluster-sweep` times N = 4096 (16 tiles of 256) at cluster sizes 2, 4, 8, 16 (8, 4, 2, 1 tiles
per CTA) on M = 32768, K = 4096, with the same numerics checks.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from .. import reference as ref
from ..kernels.configs import GemmConfig, PostNormConfig, select_postnorm_config
from ..ops import postnorm_linear as post
from ..ops import prenorm_linear as pre
from .bench import _error_text, _l2_bytes, _rotating, do_bench, environment, hopper_status

BLOG_GRID = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)]
EXTRA_GRID = [(8192, 4096, 4096), (32768, 4096, 4096), (8192, 4096, 8192), (32768, 4096, 8192)]
QUICK_GRID = [(262144, 1024, 1024), (262144, 2048, 2048), (32768, 4096, 8192)]
EPS = {"rms": 1e-6, "ln": 1e-5}
ROTATE_L2_TIMES, MAX_BUFFERS = 4, 8


def _norm(norm, h, g, b, eps):
    if norm == "rms":
        return F.rms_norm(h, (h.shape[-1],), g, eps)
    return F.layer_norm(h, (h.shape[-1],), g, b, eps)


def _oracle(norm, x, w, g, b, eps):
    return ref.linear_norm_ref(x, w, g, b if norm == "ln" else None, eps)


PERSISTENT: bool | None = None  # --persistent: None = the config table's choice


def _prepare(norm, x, w, g, b, eps, out, passes, config=None, tma=None):
    if norm == "rms":
        return post.prepare_linear_rmsnorm(x, w, g, eps, config=config, passes=passes, out=out, tma=tma,
                                           persistent=PERSISTENT)
    return post.prepare_linear_layernorm(x, w, g, b, eps, config=config, passes=passes, out=out,
                                         tma=tma, persistent=PERSISTENT)


# `--variants`: tile configs x bulk tensor copies for the fused kernel (numerics-gated)
VARIANTS = [(PostNormConfig(128, 256, 64, 8, 3), False), (PostNormConfig(128, 256, 64, 8, 3), True),
            (PostNormConfig(128, 256, 64, 8, 4), True), (PostNormConfig(128, 128, 64, 8, 4), False),
            (PostNormConfig(128, 128, 64, 8, 4), True), (PostNormConfig(128, 256, 128, 8, 2), True)]


def variants_cell(norm, M, K, N, *, dtype=torch.bfloat16, rows_check=4096, log=print) -> dict:
    eps = EPS[norm]
    x = torch.randn(M, K, device="cuda", dtype=dtype)
    w = (torch.randn(N, K, device="cuda") / math.sqrt(K)).to(dtype)
    g = (1.0 + 0.1 * torch.randn(N, device="cuda")).to(dtype)
    b = (0.1 * torch.randn(N, device="cuda")).to(dtype) if norm == "ln" else None
    rows = min(M, rows_check)
    oracle = _oracle(norm, x[:rows], w, g, b, eps)
    out = torch.empty(M, N, device="cuda", dtype=dtype)
    naive = _prepare(norm, x, w, g, b, eps, out, ())
    naive.compile()
    naive_err = _check(naive, rows, oracle, 1)[0]
    cell = {"norm": norm, "M": M, "K": K, "N": N, "naive_err": naive_err, "variants": [],
            "cublas_ms": do_bench(lambda: F.linear(x, w))}
    for cfg, tma in VARIANTS:
        row = {"config": str(cfg), "tma": tma}
        try:
            plan = _prepare(norm, x, w, g, b, eps, out, post.postnorm_passes(), config=cfg, tma=tma)
            ck = plan.compile()
            err, written, same = _check(plan, rows, oracle, 3)
            row.update(err=err, ok=bool(written and same and err <= 1.5 * naive_err + 1e-6),
                       num_ctas=ck.kernel.metadata.num_ctas, ms=do_bench(plan.launch))
        except Exception as e:  # noqa: BLE001
            row["error"] = _error_text(e)
        cell["variants"].append(row)
        log(f"  {norm} {M}x{K}x{N} {row}")
    return cell


def _check(plan, rows, oracle, repeats):
    """(error, all written, bitwise repeatable) of the plan's first `rows` rows."""
    outs = []
    for _ in range(repeats):
        plan.out.fill_(float("nan"))
        plan.launch()
        torch.cuda.synchronize()
        outs.append(plan.out[:rows].clone())
    written = not bool(torch.isnan(plan.out).any())
    same = all(torch.equal(outs[0], o) for o in outs[1:])
    return ref.rel_err(outs[0], oracle), written, same


def bench_cell(norm, M, K, N, *, dtype=torch.bfloat16, use_compile=True, rows_check=4096,
               cluster_size=None, exchange=None, log=print) -> dict:
    eps = EPS[norm]
    elt = torch.finfo(dtype).bits // 8
    n_buf = max(1, min(MAX_BUFFERS, math.ceil(ROTATE_L2_TIMES * _l2_bytes() / (M * K * elt))))
    xs = [torch.randn(M, K, device="cuda", dtype=dtype) for _ in range(n_buf)]
    w = (torch.randn(N, K, device="cuda") / math.sqrt(K)).to(dtype)
    g = (1.0 + 0.1 * torch.randn(N, device="cuda")).to(dtype)
    b = (0.1 * torch.randn(N, device="cuda")).to(dtype) if norm == "ln" else None
    x0 = xs[0]
    rows = min(M, rows_check)
    cfg = select_postnorm_config(M, N, K, dtype)
    # exchange="both": "fused" is the DSMEM exchange and "fused_global" the global-scratch one,
    # timed in the same run (the comparison issue 3 asks for)
    exchanges = ("dsmem", "global") if exchange == "both" else (exchange,)
    fused_names = {("fused" if i == 0 else f"fused_{ex}"): ex for i, ex in enumerate(exchanges)}
    variants = [("naive", ())] + [(v, post.postnorm_passes(cluster_size=cluster_size, exchange=ex))
                                  for v, ex in fused_names.items()]
    passes = variants[1][1]  # the "fused" pipeline
    cell = {"norm": norm, "M": M, "K": K, "N": N, "x_buffers": n_buf, "rows_checked": rows,
            "config": str(cfg), "passes": list(passes), "ms": {}, "errors": {}, "numerics": {}}
    oracle = _oracle(norm, x0[:rows], w, g, b, eps)
    outs = {v: torch.empty(M, N, device="cuda", dtype=dtype)
            for v in ("naive", "triton_gemm", *fused_names)}
    plans = {}
    for v, p in variants:
        try:
            plan = _prepare(norm, x0, w, g, b, eps, outs[v], p)
            ck = plan.compile()
            fused = v in fused_names
            err, written, same = _check(plan, rows, oracle, 3 if fused else 2)
            cell["numerics"][v] = {"err": err, "written": written, "repeatable": same}
            cell["numerics"][v].update(persistent=bool(plan.constexprs.get("PERSISTENT")),
                                       grid=plan.grid[0])
            if fused:
                md = ck.kernel.metadata
                cell["numerics"][v].update(remarks=list(ck.remarks), num_ctas=md.num_ctas,
                                           shared=md.shared, applied=bool(ck.applied))
            plans[v] = plan
        except Exception as e:  # noqa: BLE001
            cell["errors"][v] = _error_text(e)
            log(f"    {v}: {cell['errors'][v]}")
            traceback.print_exc()
    nv = cell["numerics"].get("naive")
    for v in fused_names:
        fu = cell["numerics"].get(v)
        if nv and fu:
            fu["ok"] = bool(fu["written"] and fu["repeatable"] and fu["err"] <= 1.5 * nv["err"] + 1e-6)
    try:
        # the same tile, one CTA per tile (persistent when the fused kernel is)
        pers = cfg.persistent if PERSISTENT is None else PERSISTENT
        gcfg = GemmConfig(cfg.block_m, cfg.block_n, cfg.block_k, 8, cfg.num_warps, cfg.num_stages, pers)
        plans["triton_gemm"] = pre.prepare_plain_linear(x0, w, config=gcfg, out=outs["triton_gemm"],
                                                        persistent=pers)
        plans["triton_gemm"].compile()
    except Exception as e:  # noqa: BLE001
        cell["errors"]["triton_gemm"] = _error_text(e)

    hs = [F.linear(x, w) for x in xs[:1]]
    fns = {"cublas": [lambda x=x: F.linear(x, w) for x in xs],
           "eager_norm": [lambda h=hs[0]: _norm(norm, h, g, b, eps)],
           "eager_gemm_norm": [lambda x=x: _norm(norm, F.linear(x, w), g, b, eps) for x in xs]}
    if use_compile:
        torch._dynamo.reset()
        cn = torch.compile(lambda h: _norm(norm, h, g, b, eps))
        cgn = torch.compile(lambda x: _norm(norm, F.linear(x, w), g, b, eps))
        fns["compiled_norm"] = [lambda h=hs[0]: cn(h)]
        fns["compiled_gemm_norm"] = [lambda x=x: cgn(x) for x in xs]
    for v in ("triton_gemm", "naive", *fused_names):
        if v in plans:
            fns[v] = [plans[v].launch]  # X buffers would need one plan each; L2 is flushed anyway
    for v, fl in fns.items():
        try:
            with torch.no_grad():
                cell["ms"][v] = do_bench(_rotating(fl))
        except Exception as e:  # noqa: BLE001
            cell["errors"][v] = _error_text(e)
            log(f"    {v}: {cell['errors'][v]}")
    ms = cell["ms"]
    t_norm = min([ms[k] for k in ("eager_norm", "compiled_norm") if k in ms] or [float("nan")])
    flops = 2.0 * M * N * K
    if "fused" in ms and "cublas" in ms:
        cell["derived"] = {
            "t_norm_best": t_norm,
            "fused_tflops": flops / ms["fused"] / 1e9,
            "cublas_tflops": flops / ms["cublas"] / 1e9,
            "fused_vs_cublas": ms["fused"] / ms["cublas"],
            "fused_vs_eager": ms["fused"] / ms["eager_gemm_norm"] if "eager_gemm_norm" in ms else None,
            "fused_vs_compiled": ms["fused"] / ms["compiled_gemm_norm"] if "compiled_gemm_norm" in ms else None,
            "fused_vs_triton_gemm": ms["fused"] / ms["triton_gemm"] if "triton_gemm" in ms else None,
            "fused_vs_naive": ms["fused"] / ms["naive"] if "naive" in ms else None,
            "hidden_pct": 100.0 * (ms["cublas"] + t_norm - ms["fused"]) / t_norm,
            "hidden_pct_vs_triton_gemm": (100.0 * (ms["triton_gemm"] + t_norm - ms["fused"]) / t_norm
                                          if "triton_gemm" in ms else None),
        }
        if "fused_global" in ms:
            cell["derived"].update(global_vs_dsmem=ms["fused_global"] / ms["fused"],
                                   hidden_pct_global=100.0 * (ms["cublas"] + t_norm - ms["fused_global"]) / t_norm)
    del xs, hs, outs, plans
    torch.cuda.empty_cache()
    return cell


def _line(c) -> str:
    d = c.get("derived", {})
    n = c["numerics"]
    f = n.get("fused", {})
    return (f"{c['norm']} M={c['M']} K={c['K']} N={c['N']} C={f.get('num_ctas')}: "
            f"cublas {c['ms'].get('cublas', float('nan')):.3f} fused {c['ms'].get('fused', float('nan')):.3f} "
            f"naive {c['ms'].get('naive', float('nan')):.3f} tgemm {c['ms'].get('triton_gemm', float('nan')):.3f} "
            f"norm {d.get('t_norm_best', float('nan')):.3f} ms | x{d.get('fused_vs_cublas', float('nan')):.2f} "
            f"hidden {d.get('hidden_pct', float('nan')):.0f}% | err {f.get('err', float('nan')):.2e} "
            f"vs naive {n.get('naive', {}).get('err', float('nan')):.2e} ok={f.get('ok')}")


def _fmt(v, spec="{:.3f}"):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else spec.format(v)


def markdown(result) -> str:
    env = result["env"]
    out = [f"# Post-norm GEMM (epilogue-norm / cluster-reduce), {env.get('gpu')}",
           "", f"{env['date']}; torch {env['torch']}, triton {env['triton']}, CUDA {env.get('cuda')}; "
           "bf16, times in ms (do_bench medians); ratios are fused time / baseline time.", "",
           "| norm | M | K | N | CTAs/cluster (persistent: programs) | cuBLAS | norm (best) | fused | naive | our GEMM | fused/cuBLAS "
           "| fused/eager | fused/compiled | fused/our GEMM | hidden % | err fused | err naive | ok |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    both = any("fused_global" in c["ms"] for c in result["cells"])
    if both:
        out[-2] = out[-2][:-1] + "| fused (global) | global/DSMEM | hidden % (global) | err (global) | ok (global) |"
        out[-1] += "---|---|---|---|---|"
    for c in result["cells"]:
        d, ms, n = c.get("derived", {}), c["ms"], c["numerics"]
        f = n.get("fused", {})
        out.append("| " + " | ".join([
            c["norm"], str(c["M"]), str(c["K"]), str(c["N"]),
            str(f.get("num_ctas", "-")) + (f", {f.get('grid')} programs" if f.get("persistent") else ""),
            _fmt(ms.get("cublas")), _fmt(d.get("t_norm_best")), _fmt(ms.get("fused")),
            _fmt(ms.get("naive")), _fmt(ms.get("triton_gemm")), _fmt(d.get("fused_vs_cublas"), "{:.2f}"),
            _fmt(d.get("fused_vs_eager"), "{:.2f}"), _fmt(d.get("fused_vs_compiled"), "{:.2f}"),
            _fmt(d.get("fused_vs_triton_gemm"), "{:.2f}"), _fmt(d.get("hidden_pct"), "{:.0f}"),
            _fmt(f.get("err"), "{:.2e}"), _fmt(n.get("naive", {}).get("err"), "{:.2e}"),
            str(f.get("ok", "-"))]) + " |")
        if both:
            fg = n.get("fused_global", {})
            out[-1] += " " + " | ".join([
                _fmt(ms.get("fused_global")), _fmt(d.get("global_vs_dsmem"), "{:.3f}"),
                _fmt(d.get("hidden_pct_global"), "{:.0f}"), _fmt(fg.get("err"), "{:.2e}"),
                str(fg.get("ok", "-"))]) + " |"
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None, help="directory for postnorm_<norm>.json/.md")
    ap.add_argument("--norm", choices=("rms", "ln", "both"), default="rms")
    ap.add_argument("--quick", action="store_true", help="3 cells instead of the full grid")
    ap.add_argument("--cells", default=None, help="'M,K,N;M,K,N' instead of the grid")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    ap.add_argument("--cluster-sweep", action="store_true",
                    help="N=4096 at cluster sizes 2, 4, 8, 16 instead of the grid")
    ap.add_argument("--exchange", choices=("dsmem", "global", "both"), default=None,
                    help="cluster-reduce{exchange=...}: distributed shared memory (default) or global "
                         "scratch; 'both' times the two side by side in one run")
    ap.add_argument("--cluster-size", type=int, default=None,
                    help="cluster-reduce{cluster-size=C} for every cell (default: the pass's auto rule)")
    ap.add_argument("--persistent", choices=("auto", "on", "off"), default="auto",
                    help="persistent launch (clusters walk the row blocks): on, off, or the config's choice")
    ap.add_argument("--variants", action="store_true",
                    help="time the fused kernel over VARIANTS (tile configs x TMA) on the cells")
    args = ap.parse_args(argv)
    global PERSISTENT
    PERSISTENT = {"auto": None, "on": True, "off": False}[args.persistent]
    ok, why = hopper_status()
    if not ok:
        print(f"normfuse.repro.bench_post: needs a Hopper GPU: {why}", file=sys.stderr)
        return 2
    if args.variants:
        cells = ([tuple(int(v) for v in c.split(",")) for c in args.cells.split(";") if c.strip()]
                 if args.cells else QUICK_GRID)
        norms = ("rms", "ln") if args.norm == "both" else (args.norm,)
        res = {"env": environment(), "kind": "variants",
               "cells": [variants_cell(n, *c) for n in norms for c in cells]}
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, f"postnorm_variants_{args.norm}.json"), "w") as fh:
                json.dump(res, fh, indent=1, default=str)
        return 0
    if args.cells:
        cells = [tuple(int(v) for v in c.split(",")) for c in args.cells.split(";") if c.strip()]
        runs = [(c, args.cluster_size) for c in cells]
    elif args.cluster_sweep:
        runs = [((32768, 4096, 4096), cs) for cs in (2, 4, 8, 16)]
    else:
        runs = [(c, args.cluster_size) for c in (QUICK_GRID if args.quick else BLOG_GRID + EXTRA_GRID)]
    norms = ("rms", "ln") if args.norm == "both" else (args.norm,)
    for norm in norms:
        result = {"env": environment(), "kind": "cluster-sweep" if args.cluster_sweep else "grid",
                  "persistent": args.persistent, "cells": []}
        for (M, K, N), cs in runs:
            t0 = time.time()
            c = bench_cell(norm, M, K, N, use_compile=not args.no_compile, cluster_size=cs,
                           exchange=args.exchange)
            c["cluster_size_option"] = cs
            c["wall_s"] = round(time.time() - t0, 1)
            result["cells"].append(c)
            print(_line(c), flush=True)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            tag = f"postnorm_{norm}" + ("_cluster_sweep" if args.cluster_sweep else "") + (
                f"_c{args.cluster_size}" if args.cluster_size and not args.cluster_sweep else "") + (
                f"_{args.exchange}" if args.exchange else "")
            with open(os.path.join(args.out, tag + ".json"), "w") as fh:
                json.dump(result, fh, indent=1, default=str)
            with open(os.path.join(args.out, tag + ".md"), "w") as fh:
                fh.write(markdown(result))
        print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
