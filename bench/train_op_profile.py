"""Where a fused training op's forward + backward spends its time, per backward plan
(issue 21; `--kind post-rms` / `post-ln`: the post-norm ops linear_rmsnorm / linear_layernorm,
the norm over the GEMM's N outputs, against F.linear + the norm; no plans there): host time per step (no sync), wall time per step (synchronized), the device kernels
of one step (torch.profiler), with `--timeline` where the device waited inside a synchronized
step (`profile_models.timeline_gaps`: the lead before the first kernel, the gaps and the kernel
each one held up) and the host's CUDA / torch calls by their own time, and the host's top
functions (cProfile), against eager
F.rms_norm / F.layer_norm + F.linear, and with `--compiled` against that eager module under
torch.compile (the issue's yardstick: which of its kernels make its backward cheaper than the
GEMMs plus the norm backward timed alone). `--plans` picks the backward plans (default: all);
`--no-cprofile` skips the host's function listing.

    PYTHONPATH=python python3 bench/train_op_profile.py [--kind rms|ln|post-rms|post-ln]
        [--m 8192 --k 2048 --n 3072]
        [--compiled] [--plans cublas,rowdot] [--no-cprofile] [--timeline] [--trace DIR]

`--trace DIR` (with --timeline): also the timeline's profiler trace per variant, as Chrome trace
JSON (DIR/<op>_<variant>.json: the host's launch calls and the kernels, each with its times).
`--host-marks`: also, for ours, when each of the step's Triton launches (the norm kernels' and
the fused GEMM's) began and returned on the host, the forward's return and the step's, in us
from the step's start after a synchronize (medians over --steps steps, no profiler: the
profiler's own cost per call inflates the timeline's host times several-fold).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="rms", choices=["rms", "ln", "post-rms", "post-ln"])
    ap.add_argument("--m", type=int, default=8192)
    ap.add_argument("--k", type=int, default=2048)
    ap.add_argument("--n", type=int, default=3072)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--row-stats", action="store_true",
                    help="also time the statistics kernel (row_stats) at a few tilings")
    ap.add_argument("--compiled", action="store_true",
                    help="also the eager module under torch.compile (fwd + bwd, default mode)")
    ap.add_argument("--plans", default=None,
                    help="only these backward plans of ours, comma-separated (default: all)")
    ap.add_argument("--no-cprofile", action="store_true", help="skip the host's top functions")
    ap.add_argument("--timeline", action="store_true",
                    help="also the device's timeline of synchronized steps (lead, busy, idle "
                         "and the largest gaps) and the host's calls by own time")
    ap.add_argument("--trace", default=None,
                    help="with --timeline: write each variant's profiler trace (Chrome JSON) "
                         "into this directory")
    ap.add_argument("--host-marks", action="store_true",
                    help="also, for ours, when each Triton launch of a step began and returned "
                         "on the host (us from the step's start; no profiler)")
    a = ap.parse_args(argv)
    if a.trace and not a.timeline:
        ap.error("--trace needs --timeline (the trace is the timeline's profile)")
    import torch
    import torch.nn.functional as F
    import normfuse.ops as ops
    from normfuse.ops import training
    from normfuse.repro.profile_models import (TIMELINE_MARK, gap_line,
                                               host_calls as host_calls_of, kernels_of,
                                               launch_calls as launch_calls_of,
                                               timeline_gaps)
    M, K, N = a.m, a.k, a.n
    post, ln = a.kind.startswith("post-"), a.kind.endswith("ln")
    op = (("linear_layernorm" if ln else "linear_rmsnorm") if post else
          ("layernorm_linear" if ln else "rmsnorm_linear"))
    eps = 1e-5 if ln else 1e-6
    g = torch.Generator(device="cuda").manual_seed(0)

    def r(*s, sc=1.0, sh=0.0):
        return (torch.randn(*s, generator=g, device="cuda") * sc + sh).to(torch.bfloat16)
    L = N if post else K  # (the normalized length: the GEMM's outputs for a post-norm)
    ins = [r(M, K), r(L, sc=0.1, sh=1.0), r(L, sc=0.1) if ln else None, r(N, K, sc=K ** -0.5)]
    ins = [t.requires_grad_(True) if t is not None else None for t in ins]
    dy = r(M, N)

    def ours(x, gw, b, w):
        if post:
            return (ops.linear_layernorm(x, w, gw, b, eps) if ln else
                    ops.linear_rmsnorm(x, w, gw, eps))
        return ops.layernorm_linear(x, gw, b, w, eps) if ln else ops.rmsnorm_linear(x, gw, w, eps)

    def norm(h, gw, b):
        return F.layer_norm(h, (L,), gw, b, eps) if ln else F.rms_norm(h, (L,), gw, eps)

    def eager(x, gw, b, w):
        return norm(F.linear(x, w), gw, b) if post else F.linear(norm(x, gw, b), w)

    def fwd_part(fn):
        for t in ins:
            if t is not None:
                t.grad = None
        return fn(*ins)

    def step(fn):
        fwd_part(fn).backward(dy)

    if a.row_stats:
        import triton.testing
        x2 = ins[0].detach()
        for bm, bk, nw in ((64, 128, 4), (32, 256, 4), (16, 256, 4), (16, 512, 4), (8, 512, 4),
                           (8, 1024, 4), (4, 1024, 4), (4, 2048, 8), (2, 2048, 8)):
            cfg = dict(BLOCK_M=bm, BLOCK_K=bk, num_warps=nw)
            for is_ln in (False, True):
                r, _ = training.row_stats(x2, eps, is_ln, cfg)
                ref = torch.rsqrt((x2.float() - (x2.float().mean(-1, keepdim=True) if is_ln
                                                 else 0)).pow(2).mean(-1) + eps)
                ok = torch.allclose(r, ref, rtol=1e-4, atol=1e-5)
                ms = triton.testing.do_bench(lambda: training.row_stats(x2, eps, is_ln, cfg),
                                             warmup=10, rep=50, return_mode="median")
                gbs = x2.numel() * x2.element_size() * (2 if is_ln else 1) / ms / 1e6
                print(f"row_stats {M}x{K} {'ln' if is_ln else 'rms'} BLOCK_M={bm} BLOCK_K={bk} "
                      f"warps={nw}: {ms * 1e3:.1f} us ({gbs:.0f} GB/s){'' if ok else ' WRONG'}")
    if post and a.plans is not None:
        raise SystemExit("train_op_profile: --plans is for the pre-norm ops (--kind rms / ln)")
    plans = (() if post else training.PRENORM_BWD_PLANS if a.plans is None
             else tuple(a.plans.split(",")))
    bad = [p for p in plans if p not in training.PRENORM_BWD_PLANS]
    if bad:
        raise SystemExit(f"train_op_profile: unknown plan(s) {bad}; expected any of "
                         f"{list(training.PRENORM_BWD_PLANS)}")
    variants = ([("eager", eager, None)] + [(f"ours {p}", ours, p) for p in plans]
                + ([("ours", ours, None)] if post else []))
    if a.compiled:
        variants.append(("compiled", torch.compile(eager), None))
    for name, fn, plan in variants:
        old = training.PRENORM_BWD_PLAN.get(op)
        if plan:
            training.PRENORM_BWD_PLAN[op] = plan
        try:
            for _ in range(3):
                step(fn)
            torch.cuda.synchronize()
            host, wall = [], []
            for _ in range(a.steps):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                step(fn)
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                host.append((t1 - t0) * 1e3)
                wall.append((time.perf_counter() - t0) * 1e3)
            tot, evs = kernels_of(lambda: step(fn))
            timeline = host_calls = launch_rows = None
            if a.timeline:
                from torch.profiler import ProfilerActivity, profile, record_function
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
                    for _ in range(10):
                        torch.cuda.synchronize()
                        with record_function(TIMELINE_MARK):
                            step(fn)
                        torch.cuda.synchronize()
                events = tp.events()
                timeline = timeline_gaps(events)
                if a.trace:
                    os.makedirs(a.trace, exist_ok=True)
                    tp.export_chrome_trace(os.path.join(
                        a.trace, f"{op}_{name.replace(' ', '_')}.json"))
                host_calls = host_calls_of(events)
                launch_rows = launch_calls_of(events)
            marks = None
            if a.host_marks and name.startswith("ours"):
                marks = launch_marks(lambda: fwd_part(fn), lambda y: y.backward(dy), a.steps)
            pr = None
            if not a.no_cprofile:
                pr = cProfile.Profile()
                pr.enable()
                for _ in range(10):
                    step(fn)
                torch.cuda.synchronize()
                pr.disable()
        finally:
            if plan:
                training.PRENORM_BWD_PLAN[op] = old
        print(f"\n== {op} {M}x{K}x{N} {name}: host {statistics.median(host):.3f} ms, wall "
              f"{statistics.median(wall):.3f} ms (medians of {a.steps} steps)")
        print(f"device kernels of one step: {tot:.3f} ms")
        for e in evs[:12]:
            print(f"  {e.device_time_total / 1e3:8.3f} ms  x{e.count:<3d} {e.key[:110]}")
        if timeline:
            print(f"timeline (median of {len(timeline['calls'])} synchronized steps, us): span "
                  f"{timeline['span_us']} = lead {timeline['lead_us']} + busy "
                  f"{timeline['busy_us']} + idle {timeline['idle_us']} in {timeline['gaps']} "
                  f"gaps; host {timeline['host_us']}; first launch left the host at "
                  f"{timeline['first_launch_us']}; largest gaps (first step), by the kernel "
                  f"they held up:")
            for g in timeline["largest"][:8]:
                print("  " + gap_line(g))
            print("host calls inside the steps by own time (us a step, calls a step):")
            for c in host_calls:
                print(f"  {c['self_us']:8.1f} us  x{c['count']:<5g} {c['name'][:100]}")
            if launch_rows:
                print("launch calls by kernel (medians, us: the call on the host; from its "
                      "return to the kernel's start):")
                for c in launch_rows:
                    print(f"  {c['call_us']:8.1f} us  then {c['start_after_call_us']:8.1f} us  "
                          f"x{c['count']:<5g} {c['name'][:90]}")
        if marks:
            print("host marks (medians, us from the step's start after a synchronize; no "
                  "profiler): launch began - returned")
            for label, began, returned in marks:
                print(f"  {began:8.1f} - {returned:8.1f}  {label}")
        if pr is None:
            continue
        s = io.StringIO()
        st = pstats.Stats(pr, stream=s)
        st.sort_stats("tottime").print_stats(25)
        st.sort_stats("cumulative").print_stats(45)
        print("cProfile over 10 steps:")
        print("\n".join(ln for ln in s.getvalue().splitlines() if ln.strip()))
    return 0


def launch_marks(fwd, bwd, steps: int, warmup: int = 3) -> list:
    """[(label, began us, returned us)]: medians over `steps` synchronized steps (after `warmup`)
    of when each Triton launch of ours (the norm module's launch-ready calls, named by kernel,
    and the pre-norm plans' fused GEMM) began and returned on the host, from the step's start,
    then "forward returned" and "step returned" (begin = return). `fwd()` -> the output,
    `bwd(y)` runs the backward. The launch functions are wrapped for the measurement only."""
    import torch
    import normfuse.ops.norm as norm_mod
    import normfuse.ops.prenorm_linear as pl
    stamps: list = []
    real_ready, real_launch = norm_mod._launch_ready, pl.LaunchPlan._launch

    def ready(key, tensors, kernel, plan, device=None):
        t = time.perf_counter()
        real_ready(key, tensors, kernel, plan, device)
        stamps.append((kernel, t, time.perf_counter()))

    def launch(self, tensors):
        t = time.perf_counter()
        real_launch(self, tensors)
        stamps.append(("fused GEMM", t, time.perf_counter()))
    norm_mod._launch_ready, pl.LaunchPlan._launch = ready, launch
    rows: list = []
    try:
        for i in range(warmup + steps):
            torch.cuda.synchronize()
            stamps.clear()
            t0 = time.perf_counter()
            y = fwd()
            t1 = time.perf_counter()
            bwd(y)
            t2 = time.perf_counter()
            torch.cuda.synchronize()
            if i >= warmup:
                rows.append([(n, (b - t0) * 1e6, (e - t0) * 1e6) for n, b, e in stamps]
                            + [("forward returned", (t1 - t0) * 1e6, (t1 - t0) * 1e6),
                               ("step returned", (t2 - t0) * 1e6, (t2 - t0) * 1e6)])
    finally:
        norm_mod._launch_ready, pl.LaunchPlan._launch = real_ready, real_launch
    labels = [r[0] for r in rows[0]] if rows else []
    rows = [r for r in rows if [x[0] for x in r] == labels]  # (steps of the same launches)
    return [(lab, statistics.median(r[j][1] for r in rows),
             statistics.median(r[j][2] for r in rows)) for j, lab in enumerate(labels)]


if __name__ == "__main__":
    raise SystemExit(main())
