"""GPU check of issue 10 (training): the gpu-marked backward tests, then forward + backward timings.

    PYTHONPATH=python python3 -m normfuse.repro.bench_training --out $OUT [--quick]
        [--part all|tests|bench] [--test-timeout 130] [--budget 90] [--no-sweep] [--warm-procs 9]
        [--rounds 3] [--pairs 40] [--cells MxKxN,...] [--ops rmsnorm_linear,...]

(`python -m normfuse.repro` runs `--part bench` of it in a child: normfuse.repro.extra.)

1. The gpu-marked tests of test/python/test_backward_*.py (normfuse.repro.gpu_tests, at most
   --test-timeout s, default 130): pass / fail / skip counts and the failures' lines ->
   tests.json; the pytest logs -> tests/.
2. Per cell (M, K, N) of the blog's grid (M = 262144, K, N in {512, 1024, 2048}; --quick: 3 cells;
   --cells: those given, --ops: only those of the five ops),
   bf16, for rmsnorm_linear, layernorm_linear, linear_rmsnorm, linear_layernorm and the block
   (PostNormMLP with D = K, H = N):
   - fwd_bwd_{ours,eager,compiled}: forward + backward of the op (grads of every input), ms:
     the median of --rounds interleaved rounds (ours, eager, compiled in turn; each round's
     figure in fwd_bwd_rounds_ms); fwd_{ours,compiled}: the training forward alone (its
     graph recorded, no backward), in the same rounds; vs_compiled_rounds: compiled / ours
     within each round (paired, free of the drift between rounds); verdict_vs_compiled from
     --pairs alternating single calls of ours and compiled (CUDA events, L2 overwritten
     before each): "faster" / "slower" where a two-sided sign test puts compiled / ours on
     that side of 1 at p < 0.01, else "tie", with the ratios' median and its 95 % interval
     (--pairs 0: "faster" / "slower" where every round agrees, else "tie");
   - bwd_fused: our backward alone (the backward custom op, given what the training forward
     saves: no statistics where the backward computes them), bwd_gemms: its GEMMs alone on cuBLAS
     (pre-norm: dY W and dY^T xn; post-norm: dh W and dh^T x; the block: its four), both in the
     cell's rounds (each the median; hidden_pct the median of hidden_pct_rounds, each round's
     own pair), norm_bwd: the
     faster of eager and torch.compile for the norm's backward alone ((fwd+bwd) - fwd of the
     standalone norm), and the blog's metric hidden_pct = (bwd_gemms + norm_bwd - bwd_fused) /
     norm_bwd.
   Before the cells (unless --no-sweep), a tiling sweep at M = 262144 per normalized length
   (RMSNorm, R = 1024): the norm-backward kernel's named tilings with and without the dX GEMM,
   and the pre-norm dW forms ("xn": cuBLAS on n written by the dX kernel; "prologue"), each
   checked against an fp32 reference, then timed; the fastest correct ones are what the cells
   run (records op = "backward.sweep" and "backward.tilings"; sweep.json).
   --warm-procs P first runs every cell once in P processes at a time (`normfuse.repro.warm`:
   Inductor with one compile thread each, the same torch.compile settings), so that the timing
   process finds every kernel and graph compiled in the shared caches; Inductor's autotuning is
   redone by the timing process (its local autotune cache is off).
   Records go to summary.json (op = "<op>.backward", with M, K, N, times, hidden_pct, gpu, date,
   torch, triton) and summary.md. Cells stop when --budget seconds are spent (recorded as
   skipped; the three --quick cells come first). Every piece is guarded: an error is recorded
   and the rest goes on. The whole grid in a second call:
   `... --part bench --budget 540` (torch.compile's compilations are most of the time).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

from . import gpu_tests
from .summary import parse_cells
from .warm import REPO

BLOG = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)]
QUICK = [(262144, 1024, 1024), (262144, 512, 2048), (262144, 2048, 512)]


def run_tests(out: str, timeout: int) -> dict:
    """The gpu-marked tests of test_backward_*.py: tests.json (counts, failures) and tests/ (logs)."""
    res = gpu_tests.run([os.path.join(REPO, "test", "python", f"test_backward_{part}.py")
                         for part in ("kernels", "ops", "training")],
                        gpu_tests.default_jobs(), "gpu", timeout, log_dir=os.path.join(out, "tests"),
                        log=lambda m: print(f"[bench_training] {m}", flush=True))
    res = {"ok": res["ok"], "seconds": res["seconds"], "counts": res["totals"],
           "failures": res["failures"]}
    with open(os.path.join(out, "tests.json"), "w") as f:
        json.dump(res, f, indent=1)
    return res


# ---------------------------------------------------------------------------------------------
# Benchmark
# ---------------------------------------------------------------------------------------------

def _timer(timer=None):
    """fn -> ms: `timer` when given (the CPU tests' fake, the warm-up's single call), else
    `triton.testing.do_bench`'s median."""
    if timer is not None:
        return lambda fn: float(timer(fn))
    import triton.testing
    return lambda fn: float(triton.testing.do_bench(fn, warmup=10, rep=40, return_mode="median"))


def train_switches() -> dict:
    """The training module switches in force (ops.training), recorded with every cell so that a
    table says which backward and forward forms it timed."""
    from normfuse.ops import training as tr
    return {"prenorm_bwd_plan": dict(tr.PRENORM_BWD_PLAN),
            "prenorm_stats_in_bwd": bool(tr.PRENORM_STATS_IN_BWD),
            "postnorm_mlp_bwd_plan": tr.POSTNORM_MLP_BWD_PLAN,
            "postnorm_train_fwd": tr.POSTNORM_TRAIN_FWD,
            "nogemm_norm_bwd": tr.NOGEMM_NORM_BWD, "lowered_dx": tr.LOWERED_DX}


OPS = ("rmsnorm_linear", "layernorm_linear", "linear_rmsnorm", "linear_layernorm", "postnorm_mlp")


def parse_ops(text: str) -> tuple:
    """`--ops`: a comma-separated subset of OPS, in OPS' order."""
    want = [o.strip() for o in text.split(",") if o.strip()]
    bad = [o for o in want if o not in OPS]
    if bad or not want:
        raise ValueError(f"--ops: {', '.join(bad) or 'nothing given'}: choose from {', '.join(OPS)}")
    return tuple(o for o in OPS if o in want)


def paired_vs_compiled(ours: list, compiled: list) -> dict:
    """Round by round, compiled's time over ours (the two were timed next to each other, so a
    round's ratio is free of the clock and power drift between rounds, which moved one cell's
    medians by up to 12 % in session 27): `vs_compiled_rounds`, their median
    `vs_compiled_paired`, and `verdict_vs_compiled`: "faster" where every round's ratio is above
    1, "slower" where every one is below, else "tie" (the rounds disagree: within the noise)."""
    ratios = [round(c / o, 4) for o, c in zip(ours, compiled) if o > 0]
    if not ratios:
        return {}
    verdict = ("faster" if min(ratios) > 1.0 else "slower" if max(ratios) < 1.0 else "tie")
    return {"vs_compiled_rounds": ratios, "vs_compiled_paired": round(statistics.median(ratios), 3),
            "verdict_vs_compiled": verdict}


def sign_test_p(above: int, below: int) -> float:
    """Two-sided sign test: the probability, under a fair coin, of a split of the above + below
    pairs at least as uneven as the one seen (pairs with a ratio of exactly 1 left out)."""
    n = above + below
    if n == 0:
        return 1.0
    k = min(above, below)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0 ** n
    return min(1.0, 2.0 * tail)


def median_ci95(values: list) -> tuple:
    """A distribution-free 95 % confidence interval of the median of `values` (order statistics:
    the widest-in rank j with P(Binomial(n, 1/2) < j) <= 0.025); (min, max) below 6 values,
    where no interval reaches 95 %."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return (None, None)
    j, cdf = 0, 0.0
    while True:  # cdf = P(B <= j) = P(B < j + 1)
        cdf += math.comb(n, j) / 2.0 ** n
        if cdf > 0.025:
            break
        j += 1
    # P(B < j) <= 0.025: the interval is [x_(j), x_(n - j + 1)] in 1-based ranks
    return (xs[max(j - 1, 0)], xs[min(n - j, n - 1)]) if j > 0 else (xs[0], xs[-1])


PAIR_ALPHA = 0.01


def paired_calls_vs_compiled(ours_ms: list, compiled_ms: list, alpha: float = PAIR_ALPHA) -> dict:
    """The verdict from single calls of the two steps timed next to each other (`time_pairs`,
    milliseconds apart: the GPU's clock and power state are the same for both), where the
    rounds' do_bench medians, each ~0.1 s long, moved a cell by 5-15 % between rounds on the
    H100 (session 38) and a 4 % advantage measured by device time came out a tie. Per pair the
    ratio compiled / ours; `verdict_vs_compiled` "faster" / "slower" where a two-sided sign
    test puts the pairs on that side of 1 at p < alpha, else "tie"; the ratios' median and its
    distribution-free 95 % interval."""
    ratios = [c / o for o, c in zip(ours_ms, compiled_ms) if o > 0 and c > 0]
    if not ratios:
        return {}
    above = sum(r > 1.0 for r in ratios)
    below = sum(r < 1.0 for r in ratios)
    p = sign_test_p(above, below)
    verdict = ("faster" if p < alpha and above > below else
               "slower" if p < alpha and below > above else "tie")
    lo, hi = median_ci95(ratios)
    return {"vs_compiled_pairs": len(ratios), "vs_compiled_pairs_above": above,
            "vs_compiled_pair_median": round(statistics.median(ratios), 4),
            "vs_compiled_pair_ci95": [round(lo, 4), round(hi, 4)], "vs_compiled_sign_p": p,
            "verdict_vs_compiled": verdict}


def _once_timer(timer=None, device: str = "cuda"):
    """fn -> ms of one call: `timer` when given (the CPU tests' fake), else CUDA events around
    one call after the L2 cache is overwritten (as do_bench does before each of its calls)."""
    if timer is not None:
        return lambda fn: float(timer(fn))
    import torch
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=device)

    def once(fn):
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))
    return once


def time_pairs(fa, fb, pairs: int, once) -> tuple:
    """([ms of fa], [ms of fb]): `pairs` single calls of each, fa then fb, then fb then fa (the
    order alternates, so that neither always runs second, after the other's traffic)."""
    ta, tb = [], []
    for i in range(pairs):
        if i % 2 == 0:
            ta.append(once(fa))
            tb.append(once(fb))
        else:
            tb.append(once(fb))
            ta.append(once(fa))
    return ta, tb


def hidden_rounds(fused: list, gemms: list, nb: float) -> dict:
    """The blog's hidden % of the norm backward from interleaved rounds: per round
    (gemms + nb - fused) / nb with that round's fused backward and GEMMs (timed next to each
    other), `hidden_pct` their median, `hidden_pct_rounds` each; bwd_fused_ms / bwd_gemms_ms the
    medians of the pieces."""
    per = [round(100.0 * (g + nb - f) / nb, 1) for f, g in zip(fused, gemms)]
    return {"bwd_fused_ms": statistics.median(fused), "bwd_gemms_ms": statistics.median(gemms),
            "hidden_pct": statistics.median(per), "hidden_pct_rounds": per}


def bench_cells(cells, out: str, budget: float, env: dict, *, device: str = "cuda", timer=None,
                compile_backend: str = "inductor", rounds: int = 3, ops=OPS,
                pairs: int = 0) -> list[dict]:
    """The benchmark. `device`, `timer` (fn -> ms) and `compile_backend` exist so that the CPU
    test can run this code path (interpreted kernels, a fake timer); the GPU run keeps the
    defaults: do_bench medians, inductor. Each cell's fwd + bwd steps (ours, eager, compiled)
    are timed in `rounds` interleaved rounds, the median kept; `ops`: which of OPS. `pairs` > 0:
    the verdict against torch.compile from that many alternating single-call pairs of the two
    steps (`paired_calls_vs_compiled`) instead of the rounds' (kept as
    `verdict_vs_compiled_rounds`)."""
    import torch
    import torch.nn.functional as F

    from normfuse.ops import (layernorm_linear, linear_layernorm, linear_rmsnorm, postnorm_mlp,
                              rmsnorm_linear)
    from normfuse.ops import training as tr
    from normfuse.reference import rel_err
    from .model_shapes import time_round_robin

    bench = _timer(timer)
    once = _once_timer(timer, device) if pairs > 0 else None

    def compile_(fn):
        # static shapes: one graph per shape, as a user's fixed-shape training step compiles
        return torch.compile(fn, backend=compile_backend, dynamic=False)

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

    nb_cache: dict = {}

    def norm_bwd_cached(norm, shape, g, b):  # the same standalone norm recurs across the ops
        key = (norm, tuple(shape))
        if key not in nb_cache:
            nb_cache[key] = norm_bwd_time(norm, shape, g, b)
        return nb_cache[key]

    rms = lambda h, g, b: F.rms_norm(h, (h.shape[-1],), g, 1e-6)  # noqa: E731
    ln = lambda h, g, b: F.layer_norm(h, (h.shape[-1],), g, b, 1e-5)  # noqa: E731
    records, t_start = [], time.time()
    compiled_cache: dict = {}

    def comp(key, fn):
        if key not in compiled_cache:
            compiled_cache[key] = compile_(fn)
        return compiled_cache[key]

    for (M, K, N) in cells:
        for op in ops:
            rec = dict(op=f"{op}.backward", M=M, K=K, N=N, dtype="bfloat16",
                       train_switches=train_switches(), **env)
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
                    if tr.stats_in_backward(op, x):
                        # (what the training forward saves then: no statistics; the backward's
                        # norm kernel computes them from x, as in the timed steps)
                        rstd = mean = x.new_empty(0, dtype=torch.float32)
                    bwd_fused = (lambda: torch.ops.normfuse.prenorm_linear_bwd(
                        dy, x.detach(), g.detach(), b.detach() if b is not None else None,
                        w.detach(), rstd, mean, 1e-5 if is_ln else 1e-6, 0.0, is_ln, False))
                    bwd_gemms = lambda: (torch.mm(dy, w.detach()), torch.mm(dy.t(), xn))  # noqa: E731
                    nb, nb_all = norm_bwd_cached(norm, (M, K), g.detach(), b.detach() if b is not None else None)
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
                    bwd_fused = (lambda: torch.ops.normfuse.postnorm_linear_bwd(
                        dy, x.detach(), w.detach(), g.detach(), b.detach() if b is not None else None,
                        h, rstd, mean, 1e-5 if is_ln else 1e-6, 0.0, is_ln, False))
                    bwd_gemms = lambda: (torch.mm(dy, w.detach()), torch.mm(dy.t(), x.detach()))  # noqa: E731
                    nb, nb_all = norm_bwd_cached(norm, (M, N), g.detach(), b.detach() if b is not None else None)
                else:  # the block, D = K, H = N
                    from normfuse.nn import PostNormMLP
                    m = PostNormMLP(K, N, device=device, dtype=torch.bfloat16)
                    x = torch.randn(M, K, **d).requires_grad_(True)
                    dy = torch.randn(M, K, **d)
                    ps = [m.w1, m.g1, m.beta1, m.b1, m.w2, m.g2, m.beta2, m.b2]
                    ours = lambda x, *ps: postnorm_mlp(x, *ps, m.eps)  # noqa: E731
                    eager = lambda x, *ps: _mlp_eager(F, x, *ps, m.eps)  # noqa: E731
                    ins = [x] + ps
                    saved = tr._mlp_fwd(x.detach(), *[p.detach() if p is not None else None
                                                      for p in ps], m.eps, False)
                    _, h1, rstd1, mean1, a, h2, rstd2, mean2 = saved
                    pd = [p.detach() if p is not None else None for p in ps]
                    bwd_fused = (lambda: torch.ops.normfuse.postnorm_mlp_bwd(
                        dy, x.detach(), pd[0], pd[1], None, pd[4], pd[5], None, h1, rstd1, mean1, a,
                        h2, rstd2, mean2, m.eps, False, True, True))
                    bwd_gemms = lambda: (torch.mm(dy.t(), a), torch.mm(dy, pd[4]),  # noqa: E731
                                         torch.mm(h1.t(), x.detach()), torch.mm(h1, pd[0]))
                    nb1, _ = norm_bwd_cached(rms, (M, N), pd[1], None)
                    nb2, _ = norm_bwd_cached(rms, (M, K), pd[5], None)
                    nb, nb_all = nb1 + nb2, {"norm1": nb1, "norm2": nb2}
                # ours vs eager's gradients on the same inputs (both bf16: a sanity figure at
                # the benchmark's shapes; the fp64 checks are the tests')
                grads = []
                for f in (ours, eager):
                    fwd_bwd(f, ins, dy)()
                    grads.append([t.grad.clone() if t is not None and t.grad is not None else None
                                  for t in ins])
                rec["grad_rel_diff_vs_eager"] = max(
                    (rel_err(a, b) for a, b in zip(*grads) if a is not None and b is not None),
                    default=None)
                # ours, eager and compiled in `rounds` interleaved rounds, the median of each
                # (one do_bench each moved a cell by up to +-5 % between runs: the GPU's clock
                # and power state drift over a run)
                steps = {"ours": fwd_bwd(ours, ins, dy), "eager": fwd_bwd(eager, ins, dy)}
                try:
                    steps["compiled"] = fwd_bwd(comp(op, eager), ins, dy)
                    steps["compiled"]()  # (compiles)
                except Exception as e:  # noqa: BLE001
                    steps.pop("compiled", None)
                    rec["compiled_error"] = f"{type(e).__name__}: {e}"[:300]
                # the training forward alone (the graph recorded, no backward), ours and
                # compiled, in the same rounds: where a step's difference sits
                fwd_only = {"fwd:ours": lambda: ours(*ins)}
                if "compiled" in steps:
                    fwd_only["fwd:compiled"] = lambda: comp(op, eager)(*ins)
                # and our backward beside its GEMMs alone, in the same rounds: hidden % from
                # each round's pair (single do_bench calls of the two moved identical GEMMs by
                # 10 % between cells in session 27, swamping a 0.4 ms norm backward)
                pieces = {"bwd:fused": bwd_fused, "bwd:gemms": bwd_gemms}
                runs = time_round_robin(dict(steps, **fwd_only, **pieces), max(1, rounds), bench)
                for name, ts in runs.items():
                    if name in pieces:
                        continue
                    key = f"fwd_{name[4:]}_ms" if name.startswith("fwd:") else f"fwd_bwd_{name}_ms"
                    rec[key] = statistics.median(ts)
                rec["fwd_bwd_rounds_ms"] = {k: v for k, v in runs.items() if k in steps}
                rec.update(hidden_rounds(runs["bwd:fused"], runs["bwd:gemms"], nb),
                           norm_bwd_ms=nb, norm_bwd_detail_ms=nb_all)
                if "fwd_bwd_compiled_ms" in rec:
                    rec["speedup_vs_compiled"] = round(rec["fwd_bwd_compiled_ms"] / rec["fwd_bwd_ours_ms"], 3)
                    rec.update(paired_vs_compiled(runs["ours"], runs["compiled"]))
                    if pairs > 0:
                        rec["verdict_vs_compiled_rounds"] = rec.get("verdict_vs_compiled")
                        to, tc = time_pairs(steps["ours"], steps["compiled"], pairs, once)
                        rec["fwd_bwd_pairs_ms"] = {"ours": [round(t, 4) for t in to],
                                                   "compiled": [round(t, 4) for t in tc]}
                        rec.update(paired_calls_vs_compiled(to, tc))
                rec["speedup_vs_eager"] = round(rec["fwd_bwd_eager_ms"] / rec["fwd_bwd_ours_ms"], 3)
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {e}"[:500]
                rec["traceback"] = traceback.format_exc()[-2000:]
            records.append(rec)
            print(f"[bench_training] {op} {M}x{K}x{N}: " + ", ".join(
                f"{k}={v}" for k, v in rec.items() if k.endswith(("_ms", "pct")) or k in ("error", "skipped")),
                flush=True)
            if device == "cuda":
                torch.cuda.empty_cache()
            with open(os.path.join(out, "summary.json"), "w") as f:
                json.dump(records, f, indent=1)
    return records


# ---------------------------------------------------------------------------------------------
# Tiling sweep: the norm-backward kernel's named tilings and the pre-norm dW forms, timed and
# checked at the blog's M; the winners are what the grid then runs (and what the ops default to)
# ---------------------------------------------------------------------------------------------

SWEEP_R = 1024  # the dX GEMM's reduction length (the op's N) in the sweep


def sweep_configs(Ds, M: int, *, timer=None, device: str = "cuda", tol: float = 2e-2) -> list[dict]:
    """Per normalized length D (RMSNorm, bf16): the dX kernel (GEMM over R = SWEEP_R, writing n)
    per tiling of `backward_config_candidates(D, True)`; the kernel without the GEMM (the
    post-norm op's dh) per `backward_config_candidates(D, False)`; the pre-norm op's backward
    with PRENORM_DW = "xn" and "prologue". Each is checked against an fp32 torch reference
    (relative Frobenius error < tol) before it is timed."""
    import torch
    from normfuse.ops import training as tr
    from normfuse.reference import rel_err

    bench = _timer(timer)

    recs = []
    for D in Ds:
        torch.manual_seed(0)
        d = dict(device=device, dtype=torch.bfloat16)
        x = torch.randn(M, D, **d)
        g = 1 + 0.1 * torch.randn(D, **d)
        w = torch.randn(SWEEP_R, D, **d) * D ** -0.5
        dy = torch.randn(M, SWEEP_R, **d)
        dz = torch.randn(M, D, **d)
        rstd, mean = tr.row_stats(x, 1e-6, False)
        xhat = x.float() * rstd[:, None]

        def ref_dx(du):
            dn = du * g.float()
            return rstd[:, None] * (dn - xhat * (dn * xhat).mean(1, keepdim=True))
        ref_gemm = ref_dx(dy.float() @ w.float())
        ref_nog = ref_dx(dz.float())
        ref_xn = xhat * g.float()
        for gemm in (True, False):
            for name, cfg in tr.backward_config_candidates(D, gemm).items():
                rec = dict(op="backward.sweep", kind="dx_gemm" if gemm else "dh_no_gemm", D=D,
                           R=SWEEP_R if gemm else None, M=M, tiling=name, config=cfg)
                try:
                    xn = torch.empty_like(x) if gemm else None

                    def f(gemm=gemm, cfg=cfg, xn=xn):
                        return tr.norm_backward(dy if gemm else dz, w if gemm else None, x, rstd,
                                                mean, g, None, None, is_ln=False, xn_out=xn,
                                                config=cfg)
                    dx, _, _ = f()
                    rec["err"] = rel_err(dx, ref_gemm if gemm else ref_nog)
                    if gemm:
                        rec["err_xn"] = rel_err(xn, ref_xn)
                    ok = rec["err"] < tol and rec.get("err_xn", 0.0) < tol
                    rec["ok"] = bool(ok)
                    if ok:
                        rec["ms"] = bench(f)
                except Exception as e:  # noqa: BLE001
                    rec["error"] = f"{type(e).__name__}: {e}"[:400]
                recs.append(rec)
                print(f"[bench_training] sweep D={D} {rec['kind']} {name}: ms={rec.get('ms')} "
                      f"err={rec.get('err')} {rec.get('error', '')}", flush=True)
        saved = tr.PRENORM_DW
        for mode in ("xn", "prologue"):
            rec = dict(op="backward.sweep", kind="prenorm_bwd_dw", D=D, R=SWEEP_R, M=M, dw=mode)
            try:
                tr.PRENORM_DW = mode
                f = lambda: torch.ops.normfuse.prenorm_linear_bwd(dy, x, g, None, w, rstd, mean,  # noqa: E731
                                                                   1e-6, 0.0, False, False)
                out = f()
                rec["err"] = rel_err(out[0], ref_gemm)
                rec["err_dw"] = rel_err(out[3], dy.float().t() @ ref_xn)
                rec["ok"] = bool(rec["err"] < tol and rec["err_dw"] < tol)
                if rec["ok"]:
                    rec["ms"] = bench(f)
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {e}"[:400]
            finally:
                tr.PRENORM_DW = saved
            recs.append(rec)
            print(f"[bench_training] sweep D={D} prenorm bwd dW={mode}: ms={rec.get('ms')} "
                  f"err={rec.get('err')} {rec.get('error', '')}", flush=True)
        del x, w, dy, dz, xhat, ref_gemm, ref_nog, ref_xn
        if device == "cuda":
            torch.cuda.empty_cache()
    return recs


def choose(sweep: list[dict]) -> dict:
    """The fastest correct tiling per (gemm, D) and the faster dW form over all D."""
    best: dict = {}
    for r in sweep:
        if r.get("kind") in ("dx_gemm", "dh_no_gemm") and r.get("ok") and "ms" in r:
            key = (r["kind"] == "dx_gemm", r["D"])
            if key not in best or r["ms"] < best[key][1]:
                best[key] = (r["tiling"], r["ms"])
    dw: dict = {}
    for r in sweep:
        if r.get("kind") == "prenorm_bwd_dw" and r.get("ok") and "ms" in r:
            dw[r["dw"]] = dw.get(r["dw"], 0.0) + r["ms"]
    complete = [m for m in dw if all(any(q.get("dw") == m and q.get("D") == D and "ms" in q
                                         for q in sweep) for D in {q["D"] for q in sweep})]
    return {"tilings": {k: v[0] for k, v in best.items()},
            "prenorm_dw": min(complete, key=dw.get) if complete else None}


def apply_choice(ch: dict) -> None:
    from normfuse.ops import training as tr
    tr.BACKWARD_CONFIG_CHOICE.update(ch.get("tilings", {}))
    if ch.get("prenorm_dw"):
        tr.PRENORM_DW = ch["prenorm_dw"]


# ---------------------------------------------------------------------------------------------
# Parallel warm-up: every kernel of the run compiled once, in processes that share the caches
# ---------------------------------------------------------------------------------------------

def sweep_cells(cells):
    """The cells whose normalized length is swept: (M, D, SWEEP_R) for each distinct K."""
    return [(M, K, SWEEP_R) for (M, K) in sorted({(c[0], c[1]) for c in cells})]


def warm_one(cell, out: str, with_sweep: bool) -> None:
    """What one warm-up process does: run the sweep (when asked) and the cell's ops once, under
    every tiling choice the timing process may pick, with a timer that just runs the function."""
    from normfuse.ops import training as tr
    from .warm import configure_torch, once
    configure_torch()
    M, K, N = cell
    if with_sweep:
        sweep_configs([K], M, timer=once)
    # every tiling the sweep may pick, for each length of this cell: choice set i takes each
    # (gemm, D)'s i-th candidate (its last when it has fewer)
    names = {(gemm, D): list(tr.backward_config_candidates(D, gemm))
             for D in {K, N} for gemm in (True, False)}
    for i in range(max(len(v) for v in names.values())):
        tr.BACKWARD_CONFIG_CHOICE.clear()
        tr.BACKWARD_CONFIG_CHOICE.update({k: v[min(i, len(v) - 1)] for k, v in names.items()})
        bench_cells([cell], out, 1e9, {}, timer=once, rounds=1)
    tr.BACKWARD_CONFIG_CHOICE.clear()


def warm_jobs(cells) -> list:
    """The warm-up children (normfuse.repro.warm --target training): one per cell; the first cell
    with each K also runs the sweep of that length."""
    from .warm import child_argv
    seen, jobs = set(), []
    for c in cells:
        sw = c[1] not in seen
        seen.add(c[1])
        jobs.append(("training %dx%dx%d" % c, child_argv("training", c, *(["--sweep"] if sw else []))))
    return jobs


def warm(cells, out: str, procs: int, timeout: float) -> dict:
    """`warm_one` for each cell in up to `procs` child processes at once (normfuse.repro.warm)."""
    from .warm import parallel
    return parallel(warm_jobs(cells), procs, timeout, log=lambda m: print(f"[bench_training] {m}", flush=True))


def _mlp_eager(F, x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps):
    a = F.silu(F.rms_norm(F.linear(x, w1, b1), (w1.shape[0],), g1, eps))
    return F.rms_norm(F.linear(a, w2, b2) + x, (w2.shape[0],), g2, eps)


def _rounds_cell(r: dict) -> str:
    """The markdown's verdict of a cell: from single-call pairs "1.042 [1.031, 1.050] (faster)"
    (the ratios' median and its 95 % interval), else from the rounds "1.01-1.04 (faster)"
    (their lowest and highest ratio)."""
    if r.get("vs_compiled_pairs"):
        lo, hi = r["vs_compiled_pair_ci95"]
        return f"{r['vs_compiled_pair_median']:.3f} [{lo:.3f}, {hi:.3f}] ({r['verdict_vs_compiled']})"
    rs = r.get("vs_compiled_rounds")
    if not rs:
        return "-"
    return f"{min(rs):.3f}-{max(rs):.3f} ({r['verdict_vs_compiled']})"


def markdown(records: list[dict], tests: dict | None, env: dict) -> str:
    lines = [f"# Backward (issue 10), {env.get('gpu', '?')}, {env.get('date', '?')}",
             f"torch {env.get('torch')}, triton {env.get('triton')}", ""]
    if tests is not None:
        lines += [f"GPU tests (test_backward_*.py): {tests.get('counts')} ok={tests.get('ok')}", ""]
        lines += [f"- {l}" for l in tests.get("failures", [])[:30]] + [""]
    cells = [r for r in records if r.get("op", "").endswith(".backward") and "verdict_vs_compiled" in r]
    if cells:
        n = {v: sum(r["verdict_vs_compiled"] == v for r in cells) for v in ("faster", "tie", "slower")}
        npairs = sorted({r["vs_compiled_pairs"] for r in cells if r.get("vs_compiled_pairs")})
        if npairs:
            how = (f"{'/'.join(map(str, npairs))} alternating single-call pairs a cell (faster / "
                   f"slower: a sign test puts the pairs' compiled / ours on that side of 1 at "
                   f"p < {PAIR_ALPHA}; else tie)")
        else:
            how = ("round by round (faster / slower: every round's ratio on one side of 1; tie: "
                   "the rounds disagree)")
        lines += [f"Against torch.compile, {how}: faster in {n['faster']}, tie in {n['tie']}, "
                  f"slower in {n['slower']} of {len(cells)} cells.", ""]
    lines += ["| op | M x K x N | fwd+bwd ours | eager | compiled | vs compiled | verdict | "
              "bwd fused | bwd GEMMs | norm bwd | hidden % | fwd ours | fwd compiled |",
              "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    lines = lines[:3] + [f"- {r['op']}: {r.get('skipped') or r.get('error')}" for r in records
                         if r.get("op") == "backward"] + [""] + lines[3:]
    for r in records:
        if not r.get("op", "").endswith(".backward") or "K" not in r:
            continue
        cell = f"{r['M']} x {r['K']} x {r['N']}"
        if "skipped" in r or "error" in r:
            lines.append(f"| {r['op']} | {cell} | {r.get('skipped') or r.get('error')} ||||||||||| ")
            continue
        f = lambda k: f"{r[k]:.3f}" if isinstance(r.get(k), float) else "-"  # noqa: E731
        lines.append(f"| {r['op']} | {cell} | {f('fwd_bwd_ours_ms')} | {f('fwd_bwd_eager_ms')} | "
                     f"{f('fwd_bwd_compiled_ms')} | {r.get('speedup_vs_compiled', '-')} | "
                     f"{_rounds_cell(r)} | {f('bwd_fused_ms')} | {f('bwd_gemms_ms')} | {f('norm_bwd_ms')} | "
                     f"{r.get('hidden_pct', '-')} | {f('fwd_ours_ms')} | {f('fwd_compiled_ms')} |")
    lines += ["", "Times in ms (do_bench medians; fwd + bwd and fwd: the median of interleaved "
              "rounds; fwd: the training forward alone, its graph recorded). vs compiled: the "
              "medians' ratio; verdict: the pairs' median compiled / ours and its 95 % "
              "interval where single-call pairs were timed, else the lowest and highest of "
              "compiled / ours within one round. hidden % = (bwd "
              "GEMMs + norm bwd - bwd fused) / norm bwd, norm bwd = the faster of eager and "
              "torch.compile for the norm's backward."]
    sweep = [r for r in records if r.get("op") == "backward.sweep"]
    if sweep:
        lines += ["", "## Tiling sweep (RMSNorm, R = %d)" % SWEEP_R, "",
                  "| D | kernel | tiling / dW | ms | rel. err vs fp32 |", "|---|---|---|---:|---:|"]
        for r in sweep:
            ms = f"{r['ms']:.3f}" if isinstance(r.get("ms"), float) else (r.get("error") or "-")
            err = f"{r['err']:.2e}" if isinstance(r.get("err"), float) else "-"
            lines.append(f"| {r['D']} | {r['kind']} | {r.get('tiling') or r.get('dw')} | {ms} | {err} |")
    for r in records:
        if r.get("op") == "backward.tilings":
            lines += ["", f"Chosen: tilings {r['tilings']}, pre-norm dW form {r['prenorm_dw']!r}."]
        if r.get("op") == "backward.warmup":
            lines += ["", f"Warm-up: {r['seconds']} s in {r['procs']} processes."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(REPO, "bench", "results",
                                                                          "backward-local"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=["all", "tests", "bench"], default="all")
    ap.add_argument("--test-timeout", type=int, default=130)
    ap.add_argument("--budget", type=float, default=90.0,
                    help="seconds of benchmarking (the sweep and the cells; not the warm-up)")
    ap.add_argument("--no-sweep", action="store_true",
                    help="skip the tiling sweep: the ops' default tilings and dW form")
    ap.add_argument("--warm-procs", type=int, default=0,
                    help="compile every kernel first in this many processes at once (0: none)")
    ap.add_argument("--warm-timeout", type=float, default=150.0)
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds of each cell's fwd + bwd timings (median kept)")
    ap.add_argument("--pairs", type=int, default=40,
                    help="alternating single-call pairs of ours and compiled per cell, for the "
                         "verdict against torch.compile (a sign test; 0: the rounds decide)")
    ap.add_argument("--cells", default=None,
                    help="only these cells, MxKxN comma-separated (default: the blog's grid; "
                         "--quick: its three quick cells)")
    ap.add_argument("--ops", default=None,
                    help="only these ops, comma-separated, of " + ", ".join(OPS))
    args = ap.parse_args(argv)
    try:
        only_cells = parse_cells(args.cells) if args.cells else None
    except ValueError as e:
        ap.error(f"--cells: {e}")
    try:
        ops = parse_ops(args.ops) if args.ops else OPS
    except ValueError as e:
        ap.error(str(e))
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.pairs < 0:
        ap.error(f"--pairs must be 0 or more, got {args.pairs}")
    os.makedirs(args.out, exist_ok=True)
    env = {}
    try:
        from .bench import environment, hopper_status
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
                from .warm import configure_torch
                configure_torch()
                cells = only_cells or (QUICK if args.quick else
                                       QUICK + [c for c in BLOG if c not in QUICK])
                if args.warm_procs > 0:
                    w = warm(cells, args.out, args.warm_procs, args.warm_timeout)
                    records.append({"op": "backward.warmup", **w, **keep})
                t0 = time.time()
                if not args.no_sweep:
                    sw = sweep_configs(sorted({c[1] for c in cells}), cells[0][0])
                    ch = choose(sw)
                    apply_choice(ch)
                    records += [dict(r, **keep) for r in sw]
                    with open(os.path.join(args.out, "sweep.json"), "w") as f:
                        json.dump({"sweep": sw, "choice": {"prenorm_dw": ch["prenorm_dw"], "tilings": [
                            [k[0], k[1], v] for k, v in ch["tilings"].items()]}}, f, indent=1)
                    records.append({"op": "backward.tilings", "prenorm_dw": ch["prenorm_dw"],
                                    "tilings": {f"{'gemm' if k[0] else 'no_gemm'}:{k[1]}": v
                                                for k, v in ch["tilings"].items()}, **keep})
                    print(f"[bench_training] chosen: {records[-1]}", flush=True)
                records += bench_cells(cells, args.out, args.budget - (time.time() - t0), keep,
                                       rounds=args.rounds, ops=ops, pairs=args.pairs)
            except Exception as e:  # noqa: BLE001
                records.append({"op": "backward", "error": f"{type(e).__name__}: {e}",
                                 "traceback": traceback.format_exc()[-2000:], **keep})
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(records, f, indent=1)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(markdown(records, tests, keep))
    print(f"[bench_training] wrote {args.out}/summary.json, summary.md", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
