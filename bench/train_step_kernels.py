"""The device kernels of one training step (issue 21), ours against eager and torch.compile, for
each training op: the forward's kernels and the whole step's (forward + backward), with the
host time and wall time of a step, so that the gap to torch.compile can be put on kernels.

    PYTHONPATH=python python3 bench/train_step_kernels.py --out DIR [--ops all|rmsnorm_linear,...]
        [--cells 262144x1024x1024,...] [--top 12] [--no-compiled] [--host-profile STEPS]

The ops and their inputs are `bench/train_options_ab.py`'s (`make_case`: the four ops and the
block with D = K, H = N, bf16, every input needing a gradient). Per (op, cell, config) where
config is ours / eager / compiled (torch.compile of the eager step, static shapes):
  - host_ms, wall_ms: medians over --steps steps (host: until the step's call returns, no sync;
    wall: synchronized);
  - fwd_kernels_ms, step_kernels_ms: the recorded kernels' device time of the forward alone
    (ours and eager: the forward call with gradients on, no backward; compiled: none, its
    forward is not separable from the compiled step) and of the whole step (torch.profiler);
  - the largest kernels of each (name, count, ms).
Writes train_step_kernels.json and .md (the ms table; the kernel lists per op in the json and
printed). `--host-profile STEPS` instead: cProfile of STEPS steps of ours and eager per (op,
cell), the Python calls a step and the functions by own and cumulative us a step
(host_profile.txt): where a host-bound step's time goes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

OPS = ("rmsnorm_linear", "layernorm_linear", "linear_rmsnorm", "linear_layernorm",
       "postnorm_mlp")


def _kernels(fn, top: int):
    """(device ms of the kernels fn launches, [(name, count, ms)] of the `top` largest)."""
    import torch
    from normfuse.repro.profile_models import kernels_of
    fn()
    torch.cuda.synchronize()
    tot, evs = kernels_of(fn)
    rows = [(e.key[:100], int(e.count), e.device_time_total / 1e3) for e in evs
            if e.device_time_total > 0][:top]
    return tot, rows


def _times(fn, steps: int):
    import torch
    host, wall = [], []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        host.append((t1 - t0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(host), statistics.median(wall)


def host_profile(step, steps: int, top: int = 25) -> dict:
    """cProfile of `steps` calls of `step` (a sync before each, outside the profile): the calls
    a step and the `top` functions by own and by cumulative time, us a step (pstats' raw
    counters, finer than its printed seconds)."""
    import cProfile
    import pstats
    import torch
    pr = cProfile.Profile()
    for _ in range(steps):
        torch.cuda.synchronize()
        pr.enable()
        step()
        pr.disable()
    torch.cuda.synchronize()
    st = pstats.Stats(pr)
    rows = [(tt / steps * 1e6, ct / steps * 1e6, nc / steps,
             f"{os.path.basename(fn)}:{line}({name})")
            for (fn, line, name), (_, nc, tt, ct, _) in st.stats.items()]
    return dict(calls_per_step=st.total_calls / steps,
                own_us=sum(r[0] for r in rows),
                by_own=sorted(rows, reverse=True)[:top],
                by_cumulative=sorted(rows, key=lambda r: -r[1])[:top])


def host_profile_text(op: str, cell, name: str, prof: dict) -> str:
    out = [f"==== {op} {cell[0]}x{cell[1]}x{cell[2]} {name}: {prof['calls_per_step']:.0f} Python "
           f"calls a step, {prof['own_us']:.0f} us profiled a step"]
    for what in ("by_own", "by_cumulative"):
        out.append(f"  {what}:  own us  cum us  calls  function")
        out += [f"    {o:8.1f} {c:8.1f} {n:6.1f}  {f}" for o, c, n, f in prof[what]]
    return "\n".join(out) + "\n"


def profile_case(op: str, cell, steps: int, top: int, compiled: bool, device: str = "cuda") -> dict:
    """The record of one (op, cell): every config's times and kernels, or its error."""
    import torch
    from train_options_ab import make_case
    step, _, eager_step, fwd, eager_fwd = make_case(op, cell, device, with_forward=True)
    configs = [("ours", step, fwd), ("eager", eager_step, eager_fwd)]
    if compiled:
        configs.append(("compiled", torch.compile(eager_step, dynamic=False), None))
    rec = dict(op=op, M=cell[0], K=cell[1], N=cell[2], configs={})
    for name, st, fw in configs:
        try:
            for _ in range(3):
                st()
            host, wall = _times(st, steps)
            fwd_ms, fwd_rows = _kernels(fw, top) if fw is not None else (None, [])
            step_ms, step_rows = _kernels(st, top)
            rec["configs"][name] = dict(host_ms=host, wall_ms=wall, fwd_kernels_ms=fwd_ms,
                                        step_kernels_ms=step_ms, fwd_kernels=fwd_rows,
                                        step_kernels=step_rows)
        except Exception as e:  # noqa: BLE001 - record and go on
            rec["configs"][name] = dict(error=f"{type(e).__name__}: {e}"[:400])
    return rec


def markdown(records) -> str:
    md = ["| op | M x K x N | config | host ms | wall ms | fwd kernels ms | step kernels ms |",
          "|---|---|---|---:|---:|---:|---:|"]
    for r in records:
        for name, c in r["configs"].items():
            cell = f"{r['M']}x{r['K']}x{r['N']}"
            if "error" in c:
                md.append(f"| {r['op']} | {cell} | {name} | {c['error'][:60]} | | | |")
                continue
            fwd = "" if c["fwd_kernels_ms"] is None else f"{c['fwd_kernels_ms']:.3f}"
            md.append(f"| {r['op']} | {cell} | {name} | {c['host_ms']:.3f} | {c['wall_ms']:.3f} "
                      f"| {fwd} | {c['step_kernels_ms']:.3f} |")
    return "\n".join(md) + "\n"


def kernel_lists(records) -> str:
    out = []
    for r in records:
        for name, c in r["configs"].items():
            if "error" in c:
                continue
            fwd = "" if c["fwd_kernels_ms"] is None else f" (forward {c['fwd_kernels_ms']:.3f})"
            out.append(f"\n== {r['op']} {r['M']}x{r['K']}x{r['N']} {name}: step kernels "
                       f"{c['step_kernels_ms']:.3f} ms{fwd}")
            for what in ("fwd_kernels", "step_kernels"):
                out.append(f"  {what}:")
                out += [f"    {ms:8.3f} ms x{n:<3d} {k}" for k, n, ms in c[what]]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    from train_options_ab import parse_cells
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ops", default="all", help=f"'all' or some of {','.join(OPS)}")
    ap.add_argument("--cells", default="262144x1024x1024,262144x512x512",
                    help="MxKxN,... or 'quick' / 'blog' (train_options_ab's)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--no-compiled", action="store_true")
    ap.add_argument("--host-profile", type=int, default=0, metavar="STEPS",
                    help="instead of the kernels: cProfile of STEPS steps of ours and eager per "
                    "(op, cell), own and cumulative us a step -> host_profile.txt")
    a = ap.parse_args(argv)
    ops = list(OPS) if a.ops == "all" else [o for o in a.ops.split(",") if o]
    bad = [o for o in ops if o not in OPS]
    if bad:
        ap.error(f"unknown op(s) {bad}: expected some of {OPS}")
    import torch
    if not torch.cuda.is_available():
        print("train_step_kernels: needs a CUDA GPU", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    if a.host_profile:
        from train_options_ab import make_case
        text = []
        for cell in parse_cells(a.cells):
            for op in ops:
                step, _, eager_step = make_case(op, cell, "cuda")[:3]
                for name, st in (("ours", step), ("eager", eager_step)):
                    for _ in range(5):
                        st()
                    text.append(host_profile_text(op, cell, name,
                                                  host_profile(st, a.host_profile, a.top)))
                    print(text[-1], flush=True)
                torch.cuda.empty_cache()
        with open(os.path.join(a.out, "host_profile.txt"), "w") as fh:
            fh.write("".join(text))
        return 0
    records = []
    for cell in parse_cells(a.cells):
        for op in ops:
            rec = profile_case(op, cell, a.steps, a.top, not a.no_compiled)
            records.append(rec)
            print(kernel_lists([rec]), flush=True)
            torch.cuda.empty_cache()
    with open(os.path.join(a.out, "train_step_kernels.json"), "w") as fh:
        json.dump(records, fh, indent=1)
    md = markdown(records)
    with open(os.path.join(a.out, "train_step_kernels.md"), "w") as fh:
        fh.write(md + "\n```\n" + kernel_lists(records) + "```\n")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
