"""The issues' speed summary: every fused op against cuBLAS and the best standalone norm.

    PYTHONPATH=python python3 -m normfuse.repro.summary --out DIR [--quick] [--ops a,b] [--plot-only F]
                                                        [--warm-procs P] [--rounds R]

One record per (op, M, K, N) in one process and one run, on the blog's 9 cells (M = 262144,
K, N in {512, 1024, 2048}) and M = 8192 with K = N = 4096 and 8192, bf16:

    cublas_ms     torch.matmul(x, W^T) (cuBLAS)
    norm_ms       the best standalone norm: min(eager, torch.compile(dynamic=False)) of
                  F.rms_norm / F.layer_norm over the tensor the op normalizes ([M, K] for
                  pre-norm ops, [M, N] for post-norm ops); both are recorded
    fused_ms      the op as a user calls it (default pipeline and arguments), kernel only
    backbone_ms   the same GEMM without the norm through the same lowering (the plain GEMM
                  kernel through hopper-ws, its auto schedule: coop); for pre-norm ops whose
                  kernel runs another schedule (coop2) also `backbone_same_ms`, the plain GEMM
                  on that schedule, and `fused_over_backbone_same` (the statistics' cost alone)
    hidden_pct    (cublas_ms + norm_ms - fused_ms) / norm_ms * 100 (the blog's metric)

plus `err` (fused vs fp64 on a row sample) and `lowered` (whether the op ran the warp-specialized
kernel). Where nvidia-smi runs, `sm_mhz`, `power_w` and `capped`: the median SM clock and power
while the cell's quantities were timed and the share of those samples under the board's software
power cap (`gpu_clocks`: the big cells run at the H200's 700 W limit, where a kernel's time
follows its energy and the board's temperature; per kernel: `bench/power_probe.py`). The fused column is the ops' default plan (post-norm: the lowered form under
`LOWERED_POSTNORM`: 'auto' by default, the schedule and tiles per shape). Post-norm ops also record each lowered schedule
(hopper-ws{post-norm=true}), per schedule s in coop, pingpong (and for RMSNorm coop_lag: coop
at 128 x 256 with hopper-ws{row-lag}, 2 stages): `lowered_<s>_ms`, `_hidden_pct`, `_over_backbone`,
`_over_cublas`, `_err`, `_ran` (the lowered kernel launched rather than a fallback); the table
`summary_post_lowered.md` lists them. Times: per cell, every quantity's `triton.testing.do_bench`
median (warmup 25 ms, rep 100 ms), taken in turns over `--rounds` rounds (default ROUNDS), the
median of the rounds (the post-norm ops' per-schedule times too). Writes DIR/summary.json, DIR/summary.md and DIR/hidden.png (hidden % per cell next to the
blog's ranges on B200). `--warm-procs P` first compiles every cell in P child processes at once
(`normfuse.repro.warm`), so that this process spends its time measuring.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys

CELLS = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)] + \
        [(8192, 4096, 4096), (8192, 8192, 8192)]
OPS = ("rmsnorm_linear", "layernorm_linear", "linear_rmsnorm", "linear_layernorm")
# the blog's "norm latency hidden" ranges on B200 (UNVERIFIED third-party transcription of its
# charts, shared/notes); pre-norm LayerNorm has none (the blog does not fuse it)
BLOG = {"rmsnorm_linear": (41, 98), "linear_rmsnorm": (48, 72), "linear_layernorm": (51, 92)}
# Rounds per cell (`_timed`). One do_bench per quantity moved single pre-norm cells by 10-25 %
# between runs on the H200 (2026-12-02, bench/results/2026-12-02/session14/summary-noise: the
# same RMSNorm kernel at 262144x2048x1024 2.198 ms in one summary, 1.727-1.839 in the next two)
ROUNDS = 3


def _bench(fn):
    from triton.testing import do_bench
    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def _timed(fns: dict, rounds: int) -> dict:
    """Each function's time: the median over `rounds` rounds of its do_bench median, the functions
    taking turns in every round (drift of the clocks or the host hits all of them alike)."""
    import statistics
    from .model_shapes import time_round_robin
    times = time_round_robin(fns, max(1, rounds), _bench)
    return {k: statistics.median(v) for k, v in times.items()}


def _schedule_of(p) -> str | None:
    """The hopper-ws schedule a prepared op's kernel runs (coop, coop2, pingpong), or None when it
    is not lowered."""
    low = getattr(p.compile(), "lowered", None)
    return None if low is None else low.plan.config.schedule


def _clock_fields(clocks: dict) -> dict:
    """The record's clock fields for its cell's timing (gpu_clocks.summarize): the median SM clock
    (MHz) and power (W) and the share of samples under the power cap; {} without samples."""
    if not clocks.get("n"):
        return {}
    return {"sm_mhz": clocks["sm_mhz"], "power_w": clocks["power_w"], "capped": clocks["capped"],
            "clock_samples": clocks["n"]}


def run(ops_wanted, cells, log=print, rounds: int = ROUNDS, sampler=None):
    import torch
    import torch.nn.functional as F
    from .. import reference as ref
    from ..ops import postnorm_linear as post
    from ..ops import prenorm_linear as pre

    rms = lambda t, w, eps: F.rms_norm(t, (t.shape[-1],), w, eps)  # noqa: E731
    ln = lambda t, w, b, eps: F.layer_norm(t, (t.shape[-1],), w, b, eps)  # noqa: E731
    # static shapes: one compile per shape (dynamic=True was measured 1.0-1.7x slower, 2026-11-30)
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    crms = torch.compile(rms, dynamic=False)
    cln = torch.compile(ln, dynamic=False)
    records = []
    for (M, K, N) in cells:
        torch.manual_seed(0)
        dev = "cuda"
        x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        w = (torch.randn(N, K, device=dev) / K ** 0.5).to(torch.bfloat16)
        gk = (1 + 0.1 * torch.randn(K, device=dev)).to(torch.bfloat16)
        bk = (0.1 * torch.randn(K, device=dev)).to(torch.bfloat16)
        gn = (1 + 0.1 * torch.randn(N, device=dev)).to(torch.bfloat16)
        bn = (0.1 * torch.randn(N, device=dev)).to(torch.bfloat16)
        y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
        bb = pre.prepare_plain_linear(x, w, passes=("hopper-ws",))
        rows = min(M, 1024)
        fns = {"cublas": lambda: torch.matmul(x, w.T, out=y), "backbone": bb.launch}
        made = []
        for op in ops_wanted:
            prenorm = op in ("rmsnorm_linear", "layernorm_linear")
            t = x if prenorm else y
            gv, bv = (gk, bk) if prenorm else (gn, bn)
            norm_key = ("rms" if "rms" in op else "ln") + (":pre" if prenorm else ":post")
            if "rms" in op:
                fns.setdefault(norm_key + ":eager", lambda t=t, gv=gv: rms(t, gv, 1e-6))
                fns.setdefault(norm_key + ":compiled", lambda t=t, gv=gv: crms(t, gv, 1e-6))
            else:
                fns.setdefault(norm_key + ":eager", lambda t=t, gv=gv, bv=bv: ln(t, gv, bv, 1e-5))
                fns.setdefault(norm_key + ":compiled", lambda t=t, gv=gv, bv=bv: cln(t, gv, bv, 1e-5))
            if op == "rmsnorm_linear":
                p = pre.prepare_rmsnorm_linear(x, gk, w, 1e-6)
                want = ref.rmsnorm_linear_ref(x[:rows], gk, w, 1e-6)
            elif op == "layernorm_linear":
                p = pre.prepare_layernorm_linear(x, gk, bk, w, 1e-5)
                want = ref.layernorm_linear_ref(x[:rows], gk, bk, w, 1e-5)
            elif op == "linear_rmsnorm":
                p = post.prepare_linear_rmsnorm(x, w, gn, 1e-6, **_post_default("rms", M, N, K))
                want = ref.linear_norm_ref(x[:rows], w, gn, None, 1e-6)
            else:
                p = post.prepare_linear_layernorm(x, w, gn, bn, 1e-5,
                                                  **_post_default("ln", M, N, K))
                want = ref.linear_norm_ref(x[:rows], w, gn, bn, 1e-5)
            p.out.fill_(float("nan"))
            out = p()
            torch.cuda.synchronize()
            err = ref.rel_err(out.reshape(M, N)[:rows], want)
            written = not bool(torch.isnan(out).any())
            fns[op] = p.launch
            sched = _schedule_of(p)
            if prenorm and sched not in (None, "coop") and f"backbone@{sched}" not in fns:
                # the plain GEMM on the fused kernel's own schedule (the backbone column is the
                # plain GEMM's auto choice, coop): fused / that is the statistics' cost alone
                fns[f"backbone@{sched}"] = pre.prepare_plain_linear(
                    x, w, passes=(f"hopper-ws{{schedule={sched}}}",)).launch
            lowered = {}
            if not prenorm:  # each lowered schedule, timed in the same rounds
                lowered, launches = _post_lowered(op, x, w, gn, bn, want, rows)
                fns.update({f"{op}@{s}": f for s, f in launches.items()})
            made.append((op, prenorm, norm_key, p, want, err, written, lowered, sched))
        t0 = sampler.now() if sampler is not None else None
        ms = _timed(fns, rounds)
        clocks = sampler.window(t0, sampler.now()) if sampler is not None else {}
        cublas, backbone = ms["cublas"], ms["backbone"]
        for op, prenorm, norm_key, p, want, err, written, lowered, sched in made:
            eager, comp, fused = ms[norm_key + ":eager"], ms[norm_key + ":compiled"], ms[op]
            ck = p.compile()
            norm = min(eager, comp)
            rec = {"op": op, "M": M, "K": K, "N": N, "cublas_ms": cublas, "norm_ms": norm,
                   "norm_eager_ms": eager, "norm_compiled_ms": comp, "fused_ms": fused,
                   "backbone_ms": backbone, "hidden_pct": (cublas + norm - fused) / norm * 100,
                   "fused_over_cublas": fused / cublas, "fused_over_backbone": fused / backbone,
                   "backbone_over_cublas": backbone / cublas, "err": err, "written": written,
                   "lowered": getattr(ck, "lowered", None) is not None, "rounds": max(1, rounds)}
            rec.update(_clock_fields(clocks))
            same = ms.get(f"backbone@{sched}") if prenorm else None
            if same is not None:
                rec.update(backbone_same_ms=same, backbone_same_schedule=sched,
                           fused_over_backbone_same=fused / same)
            if not prenorm:
                rec.update(lowered)
                rec.update(_post_lowered_times(
                    {k.split("@", 1)[1]: v for k, v in ms.items() if k.startswith(op + "@")},
                    cublas, norm, backbone))
            records.append(rec)
            log(f"{op:17s} {M}x{K}x{N}: cublas {cublas:.3f} norm {norm:.3f} fused {fused:.3f} "
                f"backbone {backbone:.3f} hidden {rec['hidden_pct']:6.1f}% err {err:.2e}"
                f"{'' if written else ' UNWRITTEN'}{' lowered' if rec['lowered'] else ''}"
                + (f" | SM {rec['sm_mhz']:.0f} MHz, {rec['power_w']:.0f} W, power-capped "
                   f"{100 * rec['capped']:.0f} %" if "sm_mhz" in rec else ""))
        del fns, made
        del x, w, y
        torch.cuda.empty_cache()
    return records


def _post_default(kind: str, M: int, N: int, K: int) -> dict:
    """The passes (and tiles) of the post-norm ops' default plan for `kind` over [M, K] x [N, K]
    (what the op launches: the lowered form under LOWERED_POSTNORM's switch, its schedule and
    tiles by lowered_postnorm_choice, else the cluster pipeline)."""
    from ..ops import postnorm_linear as post
    switch = post.LOWERED_POSTNORM.get(kind)
    if not switch:
        return {"passes": post.DEFAULT_POSTNORM_PASSES}
    sched, cfg = post.lowered_postnorm_choice(M, N, K, switch)
    return {"passes": post.lowered_postnorm_passes(sched), "config": cfg}


def _post_lowered(op, x, w, gn, bn, want, rows) -> tuple[dict, dict]:
    """The post-norm op's lowered form under each schedule, prepared and run once: (the record's
    error / written / ran fields per schedule, {schedule: launch} to be timed with the cell's
    other quantities; `_post_lowered_times` adds the times)."""
    import torch
    from .. import reference as ref
    from ..kernels.configs import PostNormConfig
    from ..ops import postnorm_linear as post
    out, launches = {}, {}
    M, N = x.shape[0], w.shape[0]
    variants = [(s, post.lowered_postnorm_passes(s), None) for s in post.LOWERED_SCHEDULES]
    if op == "linear_rmsnorm" and N > 128:
        # the lagged row exchange (hopper-ws{row-lag}: RMSNorm, coop, 128 x 256 tiles: the
        # pass takes the ring to 2 stages for the second staging tile; at 128 x 128, 3 stages,
        # it ran 1.34-1.65x cuBLAS on the blog's cells, H200, 2026-12-03)
        variants.append(("coop_lag", ("epilogue-norm",
                                      "hopper-ws{post-norm=true,schedule=coop,row-lag=true}"),
                         PostNormConfig(128, 256, 64, 8, 3, True)))
    for sched, passes, cfg in variants:
        k = f"lowered_{sched}_"
        try:
            p = (post.prepare_linear_rmsnorm(x, w, gn, 1e-6, passes=passes, config=cfg)
                 if op == "linear_rmsnorm"
                 else post.prepare_linear_layernorm(x, w, gn, bn, 1e-5, passes=passes, config=cfg))
            ck = p.compile()
            ran = ck.lowered is not None and ck.lowered.why_not(p.runtime_args) is None
            p.out.fill_(float("nan"))
            y = p()
            torch.cuda.synchronize()
            out.update({k + "err": ref.rel_err(y.reshape(M, N)[:rows], want),
                        k + "written": not bool(torch.isnan(y).any()), k + "ran": ran})
            if sched == "coop_lag":  # (a refused row-lag would time plain coop under its name)
                out[k + "lagged"] = ck.lowered is not None and ck.lowered.plan.config.row_lag
            launches[sched] = p.launch
        except Exception as e:  # noqa: BLE001 - recorded, the other measurements go on
            out[k + "error"] = f"{type(e).__name__}: {e}"[:300]
    return out, launches


def _post_lowered_times(ms: dict, cublas: float, norm: float, backbone: float) -> dict:
    """The per-schedule time fields from the cell's timed quantities ({schedule: ms})."""
    out = {}
    for sched, t in ms.items():
        k = f"lowered_{sched}_"
        out.update({k + "ms": t, k + "hidden_pct": (cublas + norm - t) / norm * 100,
                    k + "over_backbone": t / backbone, k + "over_cublas": t / cublas})
    return out


def post_lowered_table(records) -> str:
    """The post-norm ops' default and lowered forms side by side (fused / cuBLAS, hidden %)."""
    lines = ["| op | M | K | N | default / cuBLAS | hidden % | coop / cuBLAS | coop / backbone | "
             "coop hidden % | pingpong / cuBLAS | pingpong / backbone | pingpong hidden % | "
             "coop 128x256 row-lag (2 stages) / cuBLAS | row-lag hidden % |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def f(v, fmt):
        return format(v, fmt) if isinstance(v, (int, float)) else "-"
    for r in records:
        if r["op"] not in ("linear_rmsnorm", "linear_layernorm"):
            continue
        cols = [f(r["fused_over_cublas"], ".3f"), f(r["hidden_pct"], ".0f")]
        for s in ("coop", "pingpong"):
            ok = r.get(f"lowered_{s}_ran") and r.get(f"lowered_{s}_written")
            cols += [f(r.get(f"lowered_{s}_over_cublas"), ".3f") if ok else "n/a",
                     f(r.get(f"lowered_{s}_over_backbone"), ".3f") if ok else "n/a",
                     f(r.get(f"lowered_{s}_hidden_pct"), ".0f") if ok else "n/a"]
        ok = (r.get("lowered_coop_lag_ran") and r.get("lowered_coop_lag_written")
              and r.get("lowered_coop_lag_lagged"))
        cols += [f(r.get("lowered_coop_lag_over_cublas"), ".3f") if ok else "-",
                 f(r.get("lowered_coop_lag_hidden_pct"), ".0f") if ok else "-"]
        lines.append(f"| {r['op']} | {r['M']} | {r['K']} | {r['N']} | " + " | ".join(cols) + " |")
    return "\n".join(lines)


def parse_cells(text: str) -> list:
    """A benchmark's `--cells`: "MxKxN,MxKxN,..." -> [(M, K, N), ...] (positive integers);
    ValueError naming the first malformed one."""
    cells = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"'{part}' is not MxKxN (three positive integers, e.g. "
                             "262144x512x1024)")
        cells.append(tuple(int(d) for d in dims))
    return cells


def summary_cells(quick: bool, only: str = "") -> list:
    """The cells of the summary (--quick: three of them; `only`: "MxKxN,..." of the summary's
    cells, in the summary's order)."""
    cells = CELLS[:1] + CELLS[4:5] + CELLS[-1:] if quick else CELLS
    if not only:
        return cells
    try:
        want = set(parse_cells(only))
    except ValueError as e:
        raise SystemExit(f"summary: --cells takes MxKxN,... ({e})") from None
    unknown = want - set(CELLS)
    if unknown:
        raise SystemExit(f"summary: not a summary cell: {sorted(unknown)} (cells: "
                         + ", ".join("%dx%dx%d" % c for c in CELLS) + ")")
    return [c for c in cells if c in want]


def warm_jobs(ops, cells) -> list:
    """The warm-up children of `run` (normfuse.repro.warm --target summary): one per cell."""
    from .warm import child_argv
    return [("summary %dx%dx%d" % c, child_argv("summary", c, "--ops", ",".join(ops))) for c in cells]


def table(records) -> str:
    clocked = any("sm_mhz" in r for r in records)
    head = ("| op | M | K | N | cuBLAS ms | norm ms | fused ms | backbone ms | fused/cuBLAS | "
            "backbone/cuBLAS | fused/backbone | hidden % | lowered |")
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    if clocked:
        head += " SM MHz | capped % |"
        rule += "---:|---:|"
    lines = [head, rule]
    for r in records:
        line = (f"| {r['op']} | {r['M']} | {r['K']} | {r['N']} | {r['cublas_ms']:.3f} | "
                f"{r['norm_ms']:.3f} | {r['fused_ms']:.3f} | {r['backbone_ms']:.3f} | "
                f"{r['fused_over_cublas']:.3f} | {r['backbone_over_cublas']:.3f} | "
                f"{r['fused_over_backbone']:.3f} | {r['hidden_pct']:.0f} | "
                f"{'yes' if r['lowered'] else 'no'} |")
        if clocked:
            line += (f" {r['sm_mhz']:.0f} | {100 * r['capped']:.0f} |" if "sm_mhz" in r
                     else " - | - |")
        lines.append(line)
    return "\n".join(lines)


def plot(records, path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ops = [o for o in OPS if any(r["op"] == o for r in records)]
    fig, axes = plt.subplots(1, len(ops), figsize=(4.2 * len(ops), 4), sharey=True, squeeze=False)
    for ax, op in zip(axes[0], ops):
        rs = [r for r in records if r["op"] == op]
        labels = [f"{r['K']}x{r['N']}" if r["M"] == 262144 else f"{r['M']}\n{r['K']}x{r['N']}"
                  for r in rs]
        ax.bar(range(len(rs)), [r["hidden_pct"] for r in rs], color="tab:blue", label="normfuse, H200")
        if op in BLOG:
            lo, hi = BLOG[op]
            ax.axhspan(lo, hi, color="tab:orange", alpha=0.25, label=f"blog, B200 ({lo}-{hi} %)")
        ax.axhline(0, color="black", lw=0.8)
        ax.axhline(100, color="gray", lw=0.5, ls="--")
        ax.set_xticks(range(len(rs)))
        ax.set_xticklabels(labels, rotation=60, fontsize=7)
        ax.set_title(op)
        ax.legend(fontsize=7, loc="lower left")
    axes[0][0].set_ylabel("norm latency hidden (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--quick", action="store_true", help="three cells only")
    ap.add_argument("--cells", default="", help="only these cells, MxKxN comma-separated (e.g. "
                    "262144x2048x1024: a cell timed without the others before it)")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help=f"rounds per cell, the quantities timed in turns (default {ROUNDS})")
    ap.add_argument("--plot-only", metavar="SUMMARY_JSON", help="redraw the plot of a summary.json")
    ap.add_argument("--warm-procs", type=int, default=0,
                    help="compile every cell first in this many processes at once "
                         "(normfuse.repro.warm; 0: no warm-up)")
    ap.add_argument("--warm-timeout", type=float, default=240.0)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.plot_only:
        with open(args.plot_only) as f:
            data = json.load(f)
        ok = plot(data["records"], os.path.join(args.out, "hidden.png"))
        print("plot written" if ok else "matplotlib is not installed: no plot")
        return 0
    import torch
    import triton
    if not torch.cuda.is_available():
        print("summary: no GPU: nothing to measure")
        return 0
    cells = summary_cells(args.quick, args.cells)
    ops = [o for o in args.ops.split(",") if o]
    from .warm import configure_torch, parallel
    configure_torch()  # the same settings as the warm-up children's, warm-up or not
    if args.warm_procs > 0:
        parallel(warm_jobs(ops, cells), args.warm_procs, args.warm_timeout)
    from .gpu_clocks import ClockSampler
    with ClockSampler() as sampler:  # disabled without nvidia-smi
        records = run(ops, cells, rounds=args.rounds, sampler=sampler)
    data = {"gpu": torch.cuda.get_device_name(), "date": _dt.date.today().isoformat(),
            "triton": triton.__version__, "torch": torch.__version__, "dtype": "bf16",
            "records": records}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(data, f, indent=1)
    md = (f"# Speed summary ({data['gpu']}, {data['date']}, torch {data['torch']}, triton "
          f"{data['triton']}, bf16)\n\n" + table(records) + "\n")
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(md)
    if any(r["op"] in ("linear_rmsnorm", "linear_layernorm") for r in records):
        post_md = ("# Post-norm ops: the default and the lowered forms (hopper-ws{post-norm=true})"
                   "\n\n" + post_lowered_table(records) + "\n")
        with open(os.path.join(args.out, "summary_post_lowered.md"), "w") as f:
            f.write(post_md)
        md += "\n" + post_md
    plot(records, os.path.join(args.out, "hidden.png"))
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
