"""The pre-norm GEMM benchmark: fused kernel vs cuBLAS, eager, torch.compile, our own GEMM.

    PYTHONPATH=python python3 -m normfuse.repro.bench --out DIR [--quick] [--norm rms|ln|both]
                                                          [--autotune] [--dtype bf16|fp16]

For every cell (M, K, N) of the blog's grid (M = 262144, K and N in {512, 1024, 2048}) plus
M = 8192 with K = N = 4096 and 8192, in ONE process and one run (docs/design.md, "How we measure"):

  cublas              F.linear(x, W)                                   the GEMM alone
  eager_norm          F.rms_norm / F.layer_norm                        standalone norm
  compiled_norm       torch.compile of the same                        standalone norm
  eager_norm_gemm     norm then F.linear, eager                        what users write
  compiled_norm_gemm  torch.compile of norm then F.linear (default mode)
  triton_gemm         kernels/gemm.py, same config as the fused kernel our GEMM without norm
  naive               the two-loop naive kernel (passes=())           the oracle
  fused               the naive kernel through the pipeline (g in the k-loop)
  fused_folded        the op's default: g folded into W (LayerNorm: beta into the output bias,
                      W beta, in the epilogue); the fold is per weight, outside the timing

Times are `triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")` in ms (it
flushes L2 before each call); X is rotated over several buffers when one is smaller than a few
times L2; inputs are fresh `torch.randn`. Reported: TFLOP/s (2 M N K / t), time ratios (fused
time over the baseline's: below 1 means fused is faster), and the blog's
"norm hidden %" = (T_gemm + T_norm - T_fused) / T_norm with T_gemm = cuBLAS and T_norm = the
best standalone norm (100 %: the norm is free; 0 %: no better than running it separately).

Numerics, per cell: rel_err (Frobenius, fp64 oracle on the first `--rows-check` rows) of eager,
naive, fused and folded outputs, outputs poisoned with NaN before each launch, every element
checked written, and the fused kernel launched three times and compared bitwise (the pipeliner
race (docs/design.md) shows up as run-to-run differences).

`--autotune` tries `kernels.configs.CANDIDATES` for the fused kernel and for the plain Triton
GEMM per cell, keeps the fastest candidate that passes the numerics gate (error <= 1.5 x naive
error + 1e-6, all written, repeatable), and reports the configs chosen.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from .. import reference as ref
from ..kernels.configs import CANDIDATES, GemmConfig, select_config
from ..ops import prenorm_linear as ops

PASSES = ("lazy-prenorm",)
FULL_GRID = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)] + \
    [(8192, 4096, 4096), (8192, 8192, 8192)]
QUICK_GRID = [(262144, 1024, 1024), (262144, 2048, 2048), (8192, 4096, 4096)]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
EPS = {"rms": 1e-6, "ln": 1e-5}
WARMUP_MS, REP_MS = 25, 100
L2_FALLBACK = 50 * 2**20
ROTATE_L2_TIMES = 4
MAX_BUFFERS = 8

SPEED_VARIANTS = ("cublas", "eager_norm", "compiled_norm", "eager_norm_gemm", "compiled_norm_gemm",
                  "triton_gemm", "naive", "fused", "fused_folded")


# ---------------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------------

def hopper_status() -> tuple[bool, str]:
    """(True, GPU name) when a Hopper (sm_90) GPU is usable, else (False, why not)."""
    if not torch.cuda.is_available():
        return False, "no CUDA GPU visible to torch " + f"({torch.__version__})"
    cap = torch.cuda.get_device_capability()
    name = torch.cuda.get_device_name()
    if cap[0] != 9:
        return False, f"{name} is sm_{cap[0]}{cap[1]}, not Hopper sm_90"
    return True, name


def environment() -> dict:
    import triton
    import normfuse
    env = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
           "normfuse": normfuse.__version__, "python": sys.version.split()[0]}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        env.update(gpu=torch.cuda.get_device_name(), capability="sm_%d%d" % (p.major, p.minor),
                   sms=p.multi_processor_count, l2_bytes=_l2_bytes())
    return env


def _l2_bytes() -> int:
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(p, "L2_cache_size", 0) or L2_FALLBACK)


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------

def do_bench(fn, warmup=WARMUP_MS, rep=REP_MS) -> float:
    """Median time of `fn` in ms (triton.testing.do_bench, L2 flushed before each call)."""
    import triton.testing
    return float(triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))


def _rotating(fns):
    """One callable that calls fns[0], fns[1], ... in turn (X rotated over its buffers)."""
    if len(fns) == 1:
        return fns[0]
    it = itertools.cycle(fns)
    return lambda: next(it)()


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


# ---------------------------------------------------------------------------------------------
# Inputs and the functions under test
# ---------------------------------------------------------------------------------------------

def _norm_fn(norm: str):
    if norm == "rms":
        return lambda x, g, b, eps: F.rms_norm(x, (x.shape[-1],), g, eps)
    return lambda x, g, b, eps: F.layer_norm(x, (x.shape[-1],), g, b, eps)


def _norm_gemm_fn(norm: str):
    if norm == "rms":
        return lambda x, g, b, w, eps: ref.eager_rmsnorm_linear(x, g, w, eps)
    return lambda x, g, b, w, eps: ref.eager_layernorm_linear(x, g, b, w, eps)


def _oracle(norm, x, g, b, w, eps):
    if norm == "rms":
        return ref.rmsnorm_linear_ref(x, g, w, eps)
    return ref.layernorm_linear_ref(x, g, b, w, eps)


def make_inputs(norm, M, K, N, dtype, n_buffers=1, device="cuda", mean=0.0):
    """Fresh random inputs: X buffers [M, K], g, beta [K] and W [N, K] (~1/sqrt(K) scale)."""
    xs = [torch.randn(M, K, device=device, dtype=dtype) + mean for _ in range(n_buffers)]
    g = (1.0 + 0.1 * torch.randn(K, device=device)).to(dtype)
    b = (0.1 * torch.randn(K, device=device)).to(dtype) if norm == "ln" else None
    w = (torch.randn(N, K, device=device) / math.sqrt(K)).to(dtype)
    return xs, g, b, w


TMA: bool | None = None  # --tma: None = the op's default (bulk tensor copies when rows are aligned)
PERSISTENT: bool | None = None  # --persistent: None = the config's choice


def _prepare(norm, variant, x, g, b, w, eps, cfg, out, passes=PASSES):
    if variant == "triton_gemm":
        return ops.prepare_plain_linear(x, w, config=cfg, out=out, tma=TMA, persistent=PERSISTENT)
    p = () if variant == "naive" else passes
    fold = variant == "fused_folded"  # naive and fused: g (and beta) in the k-loop, as written
    if norm == "rms":
        if variant == "fused_folded":
            return ops.prepare_rmsnorm_linear(x, None, w, eps, folded=True, config=cfg, passes=p,
                                              out=out, tma=TMA, persistent=PERSISTENT)
        return ops.prepare_rmsnorm_linear(x, g, w, eps, fold=False, config=cfg, passes=p, out=out,
                                          tma=TMA, persistent=PERSISTENT)
    return ops.prepare_layernorm_linear(x, g, b, w, eps, fold=fold, config=cfg, passes=p, out=out,
                                        tma=TMA, persistent=PERSISTENT)


def _check_launch(plan, rows, oracle, repeats=1):
    """Poison, launch, compare: (rel_err on `rows` rows, all written, bitwise repeatable)."""
    first = None
    written, repeatable = True, True
    err = float("nan")
    for i in range(repeats):
        plan.out.fill_(float("nan"))
        plan.launch()
        torch.cuda.synchronize()
        if i == 0:
            written = not bool(torch.isnan(plan.out).any())
            err = ref.rel_err(plan.out[:rows], oracle)
            first = plan.out.clone() if repeats > 1 else None
        elif not torch.equal(plan.out, first):
            repeatable = False
    return err, written, repeatable


def _gate(err, written, repeatable, naive_err) -> bool:
    return (written and repeatable and math.isfinite(err)
            and err <= 1.5 * naive_err + 1e-6 and err < 2e-2)


# ---------------------------------------------------------------------------------------------
# One cell
# ---------------------------------------------------------------------------------------------

def _autotune(norm, variant, x, g, b, w, eps, out, rows, oracle, naive_err, log, passes=PASSES):
    """Fastest candidate of `variant` that passes the numerics gate; (config, table)."""
    table = []
    best = None
    for cfg in CANDIDATES:
        row = {"config": cfg.as_dict()}
        try:
            plan = _prepare(norm, variant, x, g, b, w, eps, cfg, out, passes)
            plan.compile()
            err, written, rep_ok = _check_launch(plan, rows, oracle, repeats=3)
            row.update(err=err, written=written, repeatable=rep_ok)
            ok = _gate(err, written, rep_ok, naive_err)
            row["passed"] = ok
            if ok:
                row["ms"] = do_bench(plan.launch, warmup=5, rep=25)
                if best is None or row["ms"] < best[1]:
                    best = (cfg, row["ms"])
        except Exception as e:  # noqa: BLE001 - a candidate that fails is reported, not fatal
            row.update(passed=False, error=_error_text(e))
        table.append(row)
        log(f"    autotune {variant:12s} {cfg}: " + (f"{row['ms']:.4f} ms" if "ms" in row else
            ("rejected err=%.3g written=%s repeatable=%s" % (row.get("err", float("nan")),
             row.get("written"), row.get("repeatable")) if "error" not in row else row["error"])))
    return (best[0] if best else None), table


def bench_cell(norm, M, K, N, dtype, *, autotune=False, use_compile=True, rows_check=4096,
               passes=PASSES, log=print) -> dict:
    eps = EPS[norm]
    flops = 2.0 * M * N * K
    elt = torch.finfo(dtype).bits // 8
    x_bytes = M * K * elt
    n_buf = max(1, min(MAX_BUFFERS, math.ceil(ROTATE_L2_TIMES * _l2_bytes() / x_bytes)))
    xs, g, b, w = make_inputs(norm, M, K, N, dtype, n_buf)
    x0 = xs[0]
    rows = min(M, rows_check)
    cell = {"M": M, "K": K, "N": N, "x_buffers": n_buf, "rows_checked": rows,
            "ms": {}, "errors": {}, "numerics": {}}
    default_cfg = select_config(M, N, K, dtype)
    cfg = {"fused": default_cfg, "triton_gemm": default_cfg, "naive": default_cfg}
    oracle = _oracle(norm, x0[:rows], g, b, w, eps)

    # Numerics first: the naive kernel is the reference for the fused kernel's gate.
    outs = {v: torch.empty(M, N, device=x0.device, dtype=dtype)
            for v in ("triton_gemm", "naive", "fused", "fused_folded")}
    variants = ["naive", "fused", "fused_folded"]
    wf = ref.fold_norm_weight(w, g) if norm == "rms" else None
    with torch.no_grad():
        eager_out = _norm_gemm_fn(norm)(x0[:rows], g, b, w, eps)
    cell["numerics"]["eager_err"] = ref.rel_err(eager_out, oracle)
    del eager_out
    naive_err = float("nan")
    for v in variants:
        try:
            plan = _prepare(norm, v, x0, g, b, wf if (v == "fused_folded" and norm == "rms") else w, eps, cfg["naive"],
                            outs[v], passes)
            ck = plan.compile()
            err, written, rep_ok = _check_launch(plan, rows, oracle, repeats=3 if v != "naive" else 1)
            cell["numerics"][v] = {"err": err, "written": written, "repeatable": rep_ok}
            if v == "naive":
                naive_err = err
            else:
                cell["numerics"][v]["ok"] = _gate(err, written, rep_ok, naive_err)
                cell["numerics"][v]["applied"] = bool(ck.applied)
                cell["numerics"][v]["remarks"] = list(ck.remarks)
        except Exception as e:  # noqa: BLE001 - e.g. the pass is not there yet
            cell["errors"][v] = _error_text(e)
            log(f"    {v}: {cell['errors'][v]}")

    cfg["fused_folded"] = default_cfg
    if autotune:
        tuned = {}
        for v in ("fused", "fused_folded"):
            if v in cell["errors"]:
                continue
            ww = wf if (v == "fused_folded" and norm == "rms") else w
            best, table = _autotune(norm, v, x0, g, b, ww, eps, outs[v], rows, oracle, naive_err,
                                    log, passes)
            tuned[v] = table
            if best is not None:
                cfg[v] = best
        gemm_oracle = (x0[:rows].double() @ w.double().t())
        best, table = _autotune(norm, "triton_gemm", x0, g, b, w, eps, outs["triton_gemm"], rows,
                                gemm_oracle, ref.rel_err(F.linear(x0[:rows], w), gemm_oracle), log)
        tuned["triton_gemm"] = table
        if best is not None:
            cfg["triton_gemm"] = best
        cell["autotune"] = tuned
    cell["configs"] = {k: v.as_dict() for k, v in cfg.items()}
    cell["configs_text"] = {k: str(v) for k, v in cfg.items()}

    # Speed.
    fns = {}
    fns["cublas"] = [lambda x=x: F.linear(x, w) for x in xs]
    norm_fn, norm_gemm_fn = _norm_fn(norm), _norm_gemm_fn(norm)
    fns["eager_norm"] = [lambda x=x: norm_fn(x, g, b, eps) for x in xs]
    fns["eager_norm_gemm"] = [lambda x=x: norm_gemm_fn(x, g, b, w, eps) for x in xs]
    if use_compile:
        torch._dynamo.reset()
        for name, f in (("compiled_norm", norm_fn), ("compiled_norm_gemm", norm_gemm_fn)):
            try:
                cf = torch.compile(f, dynamic=False)
                t0 = time.perf_counter()
                if name == "compiled_norm":
                    cf(x0, g, b, eps)
                    fns[name] = [lambda x=x, cf=cf: cf(x, g, b, eps) for x in xs]
                else:
                    cf(x0, g, b, w, eps)
                    fns[name] = [lambda x=x, cf=cf: cf(x, g, b, w, eps) for x in xs]
                torch.cuda.synchronize()
                cell.setdefault("compile_s", {})[name] = round(time.perf_counter() - t0, 2)
            except Exception as e:  # noqa: BLE001 - fall back: report, keep going
                cell["errors"][name] = _error_text(e)
                log(f"    {name}: torch.compile failed: {cell['errors'][name]}")
    else:
        cell["errors"]["compiled_norm"] = cell["errors"]["compiled_norm_gemm"] = "skipped (--no-compile)"
    for v in ("triton_gemm", "naive", "fused", "fused_folded"):
        if v in cell["errors"]:
            continue
        try:
            ww = wf if (v == "fused_folded" and norm == "rms") else w
            plans = [_prepare(norm, v, x, g, b, ww, eps, cfg[v], outs[v], passes) for x in xs]
            for p in plans:
                p.compile()
            fns[v] = [p.launch for p in plans]
        except Exception as e:  # noqa: BLE001
            cell["errors"][v] = _error_text(e)
            log(f"    {v}: {cell['errors'][v]}")
    for v in SPEED_VARIANTS:
        if v not in fns:
            continue
        try:
            cell["ms"][v] = do_bench(_rotating(fns[v]))
        except Exception as e:  # noqa: BLE001
            cell["errors"][v] = _error_text(e)
            log(f"    {v}: timing failed: {cell['errors'][v]}")

    ms = cell["ms"]
    cell["tflops"] = {v: flops / (t * 1e-3) / 1e12 for v, t in ms.items()
                      if v not in ("eager_norm", "compiled_norm")}
    norm_bytes = 2 * M * K * elt + (2 if norm == "ln" else 1) * K * elt
    cell["norm_gbps"] = {v: norm_bytes / (ms[v] * 1e-3) / 1e9 for v in ("eager_norm", "compiled_norm")
                         if v in ms}
    norms = [ms[v] for v in ("eager_norm", "compiled_norm") if v in ms]
    t_norm = min(norms) if norms else None
    cell["t_norm_best_ms"] = t_norm
    ratios, hidden = {}, {}
    for f in ("fused", "fused_folded", "naive"):
        if f not in ms:
            continue
        for base in ("cublas", "eager_norm_gemm", "compiled_norm_gemm", "triton_gemm"):
            if base in ms:
                ratios[f"{f}/{base}"] = ms[f] / ms[base]
        if t_norm and "cublas" in ms:
            hidden[f] = 100.0 * (ms["cublas"] + t_norm - ms[f]) / t_norm
    cell["ratios"] = ratios
    cell["norm_hidden_pct"] = hidden
    del xs, outs, fns
    torch.cuda.empty_cache()
    return cell


# ---------------------------------------------------------------------------------------------
# A whole run
# ---------------------------------------------------------------------------------------------

def run(norm="rms", cells=None, *, dtype=torch.bfloat16, autotune=False, use_compile=True,
        rows_check=4096, passes=PASSES, log=print) -> dict:
    """Benchmark `cells` ((M, K, N) triples) for one norm ('rms' or 'ln'); returns the record."""
    cells = list(cells or FULL_GRID)
    result = {"norm": norm, "dtype": str(dtype).replace("torch.", ""), "eps": EPS[norm],
              "passes": list(passes), "env": environment(),
              "do_bench": {"warmup_ms": WARMUP_MS, "rep_ms": REP_MS, "return_mode": "median"},
              "autotune": autotune, "tma": {None: "auto", True: "on", False: "off"}[TMA],
              "persistent": {None: "auto", True: "on", False: "off"}[PERSISTENT], "cells": []}
    t0 = time.perf_counter()
    torch.manual_seed(0)
    for (M, K, N) in cells:
        log(f"[{norm}] M={M} K={K} N={N} ...")
        tc = time.perf_counter()
        try:
            cell = bench_cell(norm, M, K, N, dtype, autotune=autotune, use_compile=use_compile,
                              rows_check=rows_check, passes=passes, log=log)
        except Exception as e:  # noqa: BLE001 - one broken cell must not lose the others
            traceback.print_exc()
            cell = {"M": M, "K": K, "N": N, "failed": _error_text(e)}
        cell["wall_s"] = round(time.perf_counter() - tc, 1)
        result["cells"].append(cell)
        log("    " + _one_line(cell))
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    result["remarks"] = _collect_remarks(result)
    return result


def _collect_remarks(result) -> dict:
    """Unique remark lists of the fused kernels, with the cells they came from."""
    seen: dict[str, list] = {}
    for c in result["cells"]:
        for v in ("fused", "fused_folded"):
            r = c.get("numerics", {}).get(v, {}).get("remarks")
            if r is not None:
                seen.setdefault("\n".join(r) or "(no remarks)", []).append(f"{v} {c['M']}x{c['K']}x{c['N']}")
    return seen


def _one_line(c) -> str:
    if "failed" in c:
        return f"FAILED: {c['failed']}"
    ms = c["ms"]
    parts = [f"{v}={ms[v]:.3f}ms" for v in SPEED_VARIANTS if v in ms]
    h = c["norm_hidden_pct"].get("fused")
    if h is not None:
        parts.append(f"hidden={h:.0f}%")
    return " ".join(parts) + f" ({c['wall_s']}s)"


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

def _f(v, fmt="{:.0f}"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def format_markdown(result) -> str:
    env = result["env"]
    out = [f"# Pre-norm GEMM benchmark: {result['norm'].upper()} ({result['dtype']})", "",
           f"- date: {env['date']}; GPU: {env.get('gpu', '-')} ({env.get('capability', '-')}, "
           f"L2 {env.get('l2_bytes', 0) / 2**20:.0f} MiB); torch {env['torch']} (CUDA {env['cuda']}); "
           f"triton {env['triton']}; normfuse {env['normfuse']}",
           f"- pipeline: {','.join(result['passes']) or '(none)'}; do_bench median, warmup "
           f"{result['do_bench']['warmup_ms']} ms, rep {result['do_bench']['rep_ms']} ms; "
           f"autotune: {result['autotune']}; wall {result.get('wall_s', '-')} s", ""]
    out += ["## Times (ms, median)", "",
            "| M | K | N | " + " | ".join(SPEED_VARIANTS) + " |",
            "|---:|---:|---:|" + "---:|" * len(SPEED_VARIANTS)]
    for c in result["cells"]:
        ms = c.get("ms", {})
        out.append(f"| {c['M']} | {c['K']} | {c['N']} | "
                   + " | ".join(_f(ms.get(v), "{:.4f}") for v in SPEED_VARIANTS) + " |")
    out += ["", "## Numerics (rel. Frobenius error vs fp64, first rows; NaN-poisoned outputs)", "",
            "| M | K | N | eager | naive | fused | fused ok | folded | folded ok | written | repeatable | applied |",
            "|---:|---:|---:|---:|---:|---:|:--:|---:|:--:|:--:|:--:|:--:|"]
    for c in result["cells"]:
        n = c.get("numerics", {})
        nv, fu, fo = n.get("naive", {}), n.get("fused", {}), n.get("fused_folded", {})
        written = all(d.get("written", True) for d in (nv, fu, fo)) if (nv or fu) else None
        rep = all(d.get("repeatable", True) for d in (fu, fo)) if fu else None
        out.append(f"| {c['M']} | {c['K']} | {c['N']} | {_f(n.get('eager_err'), '{:.2e}')} | "
                   f"{_f(nv.get('err'), '{:.2e}')} | {_f(fu.get('err'), '{:.2e}')} | "
                   f"{_yn(fu.get('ok'))} | {_f(fo.get('err'), '{:.2e}')} | {_yn(fo.get('ok'))} | "
                   f"{_yn(written)} | {_yn(rep)} | {_yn(fu.get('applied'))} |")
    errs = [(c, v, e) for c in result["cells"] for v, e in c.get("errors", {}).items()]
    if errs or any("failed" in c for c in result["cells"]):
        out += ["", "## Not measured", ""]
        out += [f"- {c['M']}x{c['K']}x{c['N']} {v}: {e}" for c, v, e in errs]
        out += [f"- {c['M']}x{c['K']}x{c['N']}: cell failed: {c['failed']}"
                for c in result["cells"] if "failed" in c]
    out += ["", "## Configs", ""]
    for c in result["cells"]:
        if "configs_text" in c:
            out.append(f"- {c['M']}x{c['K']}x{c['N']}: " + "; ".join(
                f"{k} {v}" for k, v in c["configs_text"].items()))
    out += ["", "## Remarks of the fused kernel", ""]
    for text, where in result.get("remarks", {}).items():
        out.append(f"- {', '.join(where[:3])}{' ...' if len(where) > 3 else ''}:")
        out += [f"    {line}" for line in text.splitlines()]
    out += ["", speed_table(result)]
    return "\n".join(out) + "\n"


def _yn(v):
    return "-" if v is None else ("yes" if v else "NO")


def speed_table(result) -> str:
    """The headline table: TFLOP/s, time ratios (fused / baseline), norm hidden %."""
    head = ["M", "K", "N", "cuBLAS TF/s", "fused TF/s", "folded TF/s", "triton GEMM TF/s",
            "naive TF/s", "fused/cuBLAS", "fused/(eager norm+GEMM)", "fused/(compiled norm+GEMM)",
            "fused/triton GEMM", "hidden % (fused)", "hidden % (folded)"]
    lines = [f"## Speed: {result['norm'].upper()} {result['dtype']} (time ratios: < 1 = fused faster)",
             "", "| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for c in result["cells"]:
        tf, r, h = c.get("tflops", {}), c.get("ratios", {}), c.get("norm_hidden_pct", {})
        lines.append("| " + " | ".join([
            str(c["M"]), str(c["K"]), str(c["N"]), _f(tf.get("cublas")), _f(tf.get("fused")),
            _f(tf.get("fused_folded")), _f(tf.get("triton_gemm")), _f(tf.get("naive")),
            _f(r.get("fused/cublas"), "{:.2f}"), _f(r.get("fused/eager_norm_gemm"), "{:.2f}"),
            _f(r.get("fused/compiled_norm_gemm"), "{:.2f}"), _f(r.get("fused/triton_gemm"), "{:.2f}"),
            _f(h.get("fused")), _f(h.get("fused_folded"))]) + " |")
    return "\n".join(lines) + "\n"


def write(result, out_dir) -> tuple[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, f"prenorm_{result['norm']}")
    with open(base + ".json", "w") as f:
        json.dump(result, f, indent=1, default=_json_default)
    with open(base + ".md", "w") as f:
        f.write(format_markdown(result))
    return base + ".json", base + ".md"


def _json_default(o):
    return o.as_dict() if isinstance(o, GemmConfig) else str(o)


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

def _parse_cells(text):
    cells = []
    for part in text.replace(";", " ").split():
        m, k, n = (int(v) for v in part.lower().replace("x", ",").split(","))
        cells.append((m, k, n))
    return cells


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m normfuse.repro.bench", description=__doc__.split("\n")[0])
    p.add_argument("--out", help="write <out>/prenorm_<norm>.json and .md here")
    p.add_argument("--quick", action="store_true", help=f"only {len(QUICK_GRID)} cells: {QUICK_GRID}")
    p.add_argument("--norm", choices=("rms", "ln", "both"), default="rms")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--autotune", action="store_true",
                   help="try kernels.configs.CANDIDATES for the fused kernel and the Triton GEMM")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    p.add_argument("--tma", choices=("auto", "on", "off"), default="auto",
                   help="A/W tiles by bulk tensor copies (on), pointer loads (off), or the op's choice")
    p.add_argument("--persistent", choices=("auto", "on", "off"), default="auto",
                   help="one program per SM walking the tiles (on), one program per tile (off), "
                        "or the op's rule (the config table, where the form was measured faster)")
    p.add_argument("--cells", help="cells to run instead of the grid, 'MxKxN;MxKxN'")
    p.add_argument("--rows-check", type=int, default=4096,
                   help="rows compared with the fp64 oracle per cell (default 4096)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    global TMA, PERSISTENT
    TMA = {"auto": None, "on": True, "off": False}[args.tma]
    PERSISTENT = {"auto": None, "on": True, "off": False}[args.persistent]
    ok, why = hopper_status()
    if not ok:
        print(f"normfuse.repro.bench: needs a Hopper GPU: {why}", file=sys.stderr)
        return 2
    cells = _parse_cells(args.cells) if args.cells else (QUICK_GRID if args.quick else FULL_GRID)
    norms = ("rms", "ln") if args.norm == "both" else (args.norm,)
    run_and_report(norms, cells, args.out, dtype=DTYPES[args.dtype], autotune=args.autotune,
                   use_compile=not args.no_compile, rows_check=args.rows_check)
    return 0


def run_and_report(norms, cells, out=None, **kw) -> list:
    """Benchmark each norm over `cells`, write its files to `out` (if given), print the tables."""
    results = []
    for norm in norms:
        res = run(norm, cells, **kw)
        results.append(res)
        if out:
            for path in write(res, out):
                print(f"wrote {path}")
    for res in results:
        print()
        print(speed_table(res))
    return results


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
