"""GPU check of issue 10 (training): the gpu-marked backward tests, then forward + backward timings.

    PYTHONPATH=python python3 bench/gpu_backward.py --out $OUT [--quick] [--part all|tests|bench]
                                                    [--test-timeout 130] [--budget 90]

1. `pytest -m gpu test/python/test_backward.py` in a subprocess (at most --test-timeout s, default 130):
   pass / fail / skip counts and the failures' lines -> tests.json, tests.txt.
2. Per cell (M, K, N) of the blog's grid (M = 262144, K, N in {512, 1024, 2048}; --quick: 3 cells),
   bf16, for rmsnorm_linear, layernorm_linear, linear_rmsnorm, linear_layernorm and the block
   (PostNormMLP with D = K, H = N):
   - fwd_bwd_{ours,eager,compiled}: forward + backward of the op (grads of every input), ms;
   - bwd_fused: our backward alone (the backward custom op), bwd_gemms: its GEMMs alone on cuBLAS
     (pre-norm: dY W and dY^T xn; post-norm: dh W and dh^T x; the block: its four), norm_bwd: the
     faster of eager and torch.compile for the norm's backward alone ((fwd+bwd) - fwd of the
     standalone norm), and the blog's metric hidden_pct = (bwd_gemms + norm_bwd - bwd_fused) /
     norm_bwd.
   Records go to summary.json (op = "<op>.backward", with M, K, N, times, hidden_pct, gpu, date,
   torch, triton) and summary.md. Cells stop when --budget seconds are spent (recorded as
   skipped; the three --quick cells come first). Every piece is guarded: an error is recorded
   and the rest goes on. The whole grid in a second call:
   `... --part bench --budget 540` (torch.compile's compilations are most of the time).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

BLOG = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)]
QUICK = [(262144, 1024, 1024), (262144, 512, 2048), (262144, 2048, 512)]


def run_tests(out: str, timeout: int) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "-rf",
           os.path.join(REPO, "test", "python", "test_backward.py")]
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        text += f"\n[gpu_backward] pytest stopped after {timeout} s (--test-timeout)"
        rc = "timeout"
    import re
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|error|errors)", text)}
    res = {"rc": rc, "seconds": round(time.time() - t0, 1), "counts": counts,
           "failures": [l for l in text.splitlines() if l.startswith(("FAILED", "ERROR"))]}
    with open(os.path.join(out, "tests.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "tests.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"[gpu_backward] tests: {counts} rc={rc} ({res['seconds']} s)", flush=True)
    return res


# ---------------------------------------------------------------------------------------------
# Benchmark
# ---------------------------------------------------------------------------------------------

def bench_cells(cells, out: str, budget: float, env: dict, *, device: str = "cuda", timer=None,
                compile_backend: str = "inductor") -> list[dict]:
    """The benchmark. `device`, `timer` (fn -> ms) and `compile_backend` exist so that the CPU
    test can run this code path (interpreted kernels, a fake timer); the GPU run keeps the
    defaults: do_bench medians, inductor."""
    import torch
    import torch.nn.functional as F
    import triton.testing

    from normfuse.ops import layernorm_linear, linear_layernorm, linear_rmsnorm, rmsnorm_linear
    from normfuse.ops import training as tr

    def bench(fn):
        if timer is not None:
            return float(timer(fn))
        return float(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))

    def compile_(fn):
        return torch.compile(fn, backend=compile_backend)

    def fwd_bwd(fn, inputs, dy):
        def step():
            for t in inputs:
                if t is not None:
                    t.grad = None
            fn(*inputs).backward(dy)
        return step

    def norm_bwd_time(norm, shape, g, b):
        """(fwd+bwd) - fwd of the standalone norm, min over eager and torch.compile."""
        xs = torch.randn(*shape, device=device, dtype=torch.bfloat16).requires_grad_(True)
        dn = torch.randn(*shape, device=device, dtype=torch.bfloat16)
        best = {}
        # the norm's parameters require grad too: the fused backward computes dg (dbeta) as well
        g = g.detach().clone().requires_grad_(True)
        b = b.detach().clone().requires_grad_(True) if b is not None else None
        for name, f in (("eager", norm), ("compiled", compile_(norm))):
            ins = [xs, g, b]
            t_fb = bench(fwd_bwd(f, ins, dn))
            with torch.no_grad():
                t_f = bench(lambda: f(xs, g, b))
            best[name] = max(t_fb - t_f, 1e-6)
        return min(best.values()), best

    rms = lambda h, g, b: F.rms_norm(h, (h.shape[-1],), g, 1e-6)  # noqa: E731
    ln = lambda h, g, b: F.layer_norm(h, (h.shape[-1],), g, b, 1e-5)  # noqa: E731
    records, t_start = [], time.time()
    compiled_cache: dict = {}

    def comp(key, fn):
        if key not in compiled_cache:
            compiled_cache[key] = compile_(fn)
        return compiled_cache[key]

    for (M, K, N) in cells:
        for op in ("rmsnorm_linear", "layernorm_linear", "linear_rmsnorm", "linear_layernorm",
                   "postnorm_mlp"):
            rec = dict(op=f"{op}.backward", M=M, K=K, N=N, dtype="bfloat16", **env)
            if time.time() - t_start > budget:
                rec["skipped"] = f"time budget ({budget:.0f} s) spent"
                records.append(rec)
                continue
            try:
                torch.manual_seed(0)
                d = dict(device=device, dtype=torch.bfloat16)
                is_ln = "layernorm" in op
                if op in ("rmsnorm_linear", "layernorm_linear"):
                    x = torch.randn(M, K, **d)
                    g = (1 + 0.1 * torch.randn(K, **d))
                    b = 0.1 * torch.randn(K, **d) if is_ln else None
                    w = torch.randn(N, K, **d) * K ** -0.5
                    dy = torch.randn(M, N, **d)
                    norm = ln if is_ln else rms
                    ours = ((lambda x, g, b, w: layernorm_linear(x, g, b, w)) if is_ln else
                            (lambda x, g, b, w: rmsnorm_linear(x, g, w)))
                    eager = lambda x, g, b, w, norm=norm: F.linear(norm(x, g, b), w)  # noqa: E731
                    ins = [t.requires_grad_(True) if t is not None else None for t in (x, g, b, w)]
                    # backward pieces
                    with torch.no_grad():
                        rstd, mean = tr.row_stats(x, 1e-5 if is_ln else 1e-6, is_ln)
                        xn = norm(x, g, b)
                    bwd_fused = bench(lambda: torch.ops.normfuse.prenorm_linear_bwd(
                        dy, x.detach(), g.detach(), b.detach() if b is not None else None,
                        w.detach(), rstd, mean, is_ln, False))
                    bwd_gemms = bench(lambda: (torch.mm(dy, w.detach()), torch.mm(dy.t(), xn)))
                    nb, nb_all = norm_bwd_time(norm, (M, K), g.detach(), b.detach() if b is not None else None)
                elif op in ("linear_rmsnorm", "linear_layernorm"):
                    x = torch.randn(M, K, **d)
                    w = torch.randn(N, K, **d) * K ** -0.5
                    g = (1 + 0.1 * torch.randn(N, **d))
                    b = 0.1 * torch.randn(N, **d) if is_ln else None
                    dy = torch.randn(M, N, **d)
                    norm = ln if is_ln else rms
                    ours = ((lambda x, g, b, w: linear_layernorm(x, w, g, b)) if is_ln else
                            (lambda x, g, b, w: linear_rmsnorm(x, w, g)))
                    eager = lambda x, g, b, w, norm=norm: norm(F.linear(x, w), g, b)  # noqa: E731
                    ins = [t.requires_grad_(True) if t is not None else None for t in (x, g, b, w)]
                    with torch.no_grad():
                        h = F.linear(x, w)
                        rstd, mean = tr.row_stats(h, 1e-5 if is_ln else 1e-6, is_ln)
                    bwd_fused = bench(lambda: torch.ops.normfuse.postnorm_linear_bwd(
                        dy, x.detach(), w.detach(), g.detach(), b.detach() if b is not None else None,
                        h, rstd, mean, is_ln, False))
                    bwd_gemms = bench(lambda: (torch.mm(dy, w.detach()), torch.mm(dy.t(), x.detach())))
                    nb, nb_all = norm_bwd_time(norm, (M, N), g.detach(), b.detach() if b is not None else None)
                else:  # the block, D = K, H = N
                    from normfuse.nn import PostNormMLP
                    m = PostNormMLP(K, N, device=device, dtype=torch.bfloat16)
                    x = torch.randn(M, K, **d).requires_grad_(True)
                    dy = torch.randn(M, K, **d)
                    ps = [m.w1, m.g1, m.beta1, m.b1, m.w2, m.g2, m.beta2, m.b2]
                    ours = lambda x, *ps: tr.postnorm_mlp(x, *ps, m.eps)  # noqa: E731
                    eager = lambda x, *ps: _mlp_eager(F, x, *ps, m.eps)  # noqa: E731
                    ins = [x] + ps
                    saved = tr._mlp_fwd(x.detach(), *[p.detach() if p is not None else None
                                                      for p in ps], m.eps, False)
                    _, h1, rstd1, mean1, a, h2, rstd2, mean2 = saved
                    pd = [p.detach() if p is not None else None for p in ps]
                    bwd_fused = bench(lambda: torch.ops.normfuse.postnorm_mlp_bwd(
                        dy, x.detach(), pd[0], pd[1], None, pd[4], pd[5], None, h1, rstd1, mean1, a,
                        h2, rstd2, mean2, False, True, True))
                    bwd_gemms = bench(lambda: (torch.mm(dy.t(), a), torch.mm(dy, pd[4]),
                                               torch.mm(h1.t(), x.detach()), torch.mm(h1, pd[0])))
                    nb1, _ = norm_bwd_time(rms, (M, N), pd[1], None)
                    nb2, _ = norm_bwd_time(rms, (M, K), pd[5], None)
                    nb, nb_all = nb1 + nb2, {"norm1": nb1, "norm2": nb2}
                rec["fwd_bwd_ours_ms"] = bench(fwd_bwd(ours, ins, dy))
                rec["fwd_bwd_eager_ms"] = bench(fwd_bwd(eager, ins, dy))
                try:
                    rec["fwd_bwd_compiled_ms"] = bench(fwd_bwd(comp(op, eager), ins, dy))
                except Exception as e:  # noqa: BLE001
                    rec["compiled_error"] = f"{type(e).__name__}: {e}"[:300]
                rec.update(bwd_fused_ms=bwd_fused, bwd_gemms_ms=bwd_gemms, norm_bwd_ms=nb,
                           norm_bwd_detail_ms=nb_all,
                           hidden_pct=round(100.0 * (bwd_gemms + nb - bwd_fused) / nb, 1))
                if "fwd_bwd_compiled_ms" in rec:
                    rec["speedup_vs_compiled"] = round(rec["fwd_bwd_compiled_ms"] / rec["fwd_bwd_ours_ms"], 3)
                rec["speedup_vs_eager"] = round(rec["fwd_bwd_eager_ms"] / rec["fwd_bwd_ours_ms"], 3)
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {e}"[:500]
                rec["traceback"] = traceback.format_exc()[-2000:]
            records.append(rec)
            print(f"[gpu_backward] {op} {M}x{K}x{N}: " + ", ".join(
                f"{k}={v}" for k, v in rec.items() if k.endswith(("_ms", "pct")) or k in ("error", "skipped")),
                flush=True)
            if device == "cuda":
                torch.cuda.empty_cache()
            with open(os.path.join(out, "summary.json"), "w") as f:
                json.dump(records, f, indent=1)
    return records


def _mlp_eager(F, x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps):
    a = F.silu(F.rms_norm(F.linear(x, w1, b1), (w1.shape[0],), g1, eps))
    return F.rms_norm(F.linear(a, w2, b2) + x, (w2.shape[0],), g2, eps)


def markdown(records: list[dict], tests: dict | None, env: dict) -> str:
    lines = [f"# Backward (issue 10), {env.get('gpu', '?')}, {env.get('date', '?')}",
             f"torch {env.get('torch')}, triton {env.get('triton')}", ""]
    if tests is not None:
        lines += [f"GPU tests (test_backward.py): {tests.get('counts')} rc={tests.get('rc')}", ""]
        lines += [f"- {l}" for l in tests.get("failures", [])[:30]] + [""]
    lines += ["| op | M x K x N | fwd+bwd ours | eager | compiled | vs compiled | bwd fused | "
              "bwd GEMMs | norm bwd | hidden % |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines = lines[:3] + [f"- {r['op']}: {r.get('skipped') or r.get('error')}" for r in records
                         if "M" not in r] + [""] + lines[3:]
    for r in records:
        if "M" not in r:
            continue
        cell = f"{r['M']} x {r['K']} x {r['N']}"
        if "skipped" in r or "error" in r:
            lines.append(f"| {r['op']} | {cell} | {r.get('skipped') or r.get('error')} |||||||| ")
            continue
        f = lambda k: f"{r[k]:.3f}" if isinstance(r.get(k), float) else "-"  # noqa: E731
        lines.append(f"| {r['op']} | {cell} | {f('fwd_bwd_ours_ms')} | {f('fwd_bwd_eager_ms')} | "
                     f"{f('fwd_bwd_compiled_ms')} | {r.get('speedup_vs_compiled', '-')} | "
                     f"{f('bwd_fused_ms')} | {f('bwd_gemms_ms')} | {f('norm_bwd_ms')} | "
                     f"{r.get('hidden_pct', '-')} |")
    lines += ["", "Times in ms (do_bench medians). hidden % = (bwd GEMMs + norm bwd - bwd fused) / "
              "norm bwd, norm bwd = the faster of eager and torch.compile for the norm's backward."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(REPO, "bench", "results",
                                                                          "backward-local"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=["all", "tests", "bench"], default="all")
    ap.add_argument("--test-timeout", type=int, default=130)
    ap.add_argument("--budget", type=float, default=90.0, help="seconds of benchmarking")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    env = {}
    try:
        from normfuse.repro.bench import environment, hopper_status
        env = environment()
        ok, why = hopper_status()
    except Exception as e:  # noqa: BLE001
        ok, why = False, f"{type(e).__name__}: {e}"
    keep = {k: env.get(k) for k in ("gpu", "date", "torch", "triton")}
    tests = None
    if args.part in ("all", "tests"):
        try:
            tests = run_tests(args.out, args.test_timeout)
        except Exception as e:  # noqa: BLE001
            tests = {"error": f"{type(e).__name__}: {e}"}
    records = []
    if args.part in ("all", "bench"):
        if not ok:
            records = [{"op": "backward", "skipped": f"no Hopper GPU: {why}", **keep}]
        else:
            try:
                records = bench_cells(QUICK if args.quick else QUICK + [c for c in BLOG if c not in QUICK],
                                      args.out, args.budget, keep)
            except Exception as e:  # noqa: BLE001
                records.append({"op": "backward", "error": f"{type(e).__name__}: {e}",
                                 "traceback": traceback.format_exc()[-2000:], **keep})
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(records, f, indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(markdown(records, tests, keep))
    print(f"[gpu_backward] wrote {args.out}/summary.json, summary.md", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
