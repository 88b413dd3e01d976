"""A/B of the training module switches (issue 21), interleaved: each op's forward + backward step
under every value of a switch, timed round by round in the same order (drift between rounds
cancels), against torch.compile's step when asked.

    PYTHONPATH=python python3 bench/train_options_ab.py --out DIR [--switches stats,block,postfwd]
        [--cells quick|blog|MxKxN,...] [--rounds 3] [--compiled]   (switches: also norm1, silu)

Switches (`SWITCHES`: the module constant, its values, the ops it touches):
  stats    ops.training.PRENORM_STATS_IN_BWD (False: `row_stats` in the forward; True: the
           persistent norm backward computes the statistics): rmsnorm_linear, layernorm_linear
  block    ops.training.POSTNORM_MLP_BWD_PLAN ("regrouped" / "composed"): postnorm_mlp
  postfwd  ops.training.POSTNORM_TRAIN_FWD ("fused" / "composed" / "lowered": the post-norm
           ops' train kernel through hopper-ws, statistics computed by the backward; the block's
           norm2 too, its norm1 where norm1 is on): linear_rmsnorm, linear_layernorm,
           postnorm_mlp
  norm1    ops.training.POSTNORM_MLP_NORM1_PERSISTENT (False / True: the composed block's norm1
           backward on the persistent norm kernel): postnorm_mlp
  silu     ops.training.POSTNORM_MLP_SILU_IN_KERNEL (False: SiLU by torch after the first
           post-norm kernel; True: in that kernel, z1 never stored): postnorm_mlp
Per (switch, op, cell): the median ms over the rounds of each value (do_bench medians, L2 not
flushed: a training step's working set is far larger), every round's ms, the ratio of each
value to the switch's first value, and the largest relative difference of the gradients
between values (a sanity check: the values are the same math up to rounding). The block takes
D = K, H = N. Writes train_options_ab.json and train_options_ab.md.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

SWITCHES = {
    "stats": ("PRENORM_STATS_IN_BWD", (False, True), ("rmsnorm_linear", "layernorm_linear")),
    "block": ("POSTNORM_MLP_BWD_PLAN", ("regrouped", "composed"), ("postnorm_mlp",)),
    "postfwd": ("POSTNORM_TRAIN_FWD", ("fused", "composed", "lowered"),
                ("linear_rmsnorm", "linear_layernorm", "postnorm_mlp")),
    "norm1": ("POSTNORM_MLP_NORM1_PERSISTENT", (False, True), ("postnorm_mlp",)),
    "silu": ("POSTNORM_MLP_SILU_IN_KERNEL", (False, True), ("postnorm_mlp",)),
}
BLOG = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)]
QUICK = [(262144, 1024, 1024), (262144, 512, 2048), (262144, 2048, 512)]


def parse_cells(spec: str) -> list:
    if spec == "blog":
        return list(BLOG)
    if spec == "quick":
        return list(QUICK)
    cells = []
    for part in spec.split(","):
        try:
            m, k, n = (int(v) for v in part.lower().split("x"))
        except ValueError:
            raise ValueError(f"cell {part!r}: expected MxKxN (e.g. 262144x1024x1024), 'quick' or "
                             f"'blog'") from None
        cells.append((m, k, n))
    return cells


def parse_switches(spec: str) -> list:
    names = [s for s in spec.split(",") if s]
    bad = [s for s in names if s not in SWITCHES]
    if bad:
        raise ValueError(f"unknown switch(es) {bad}: expected some of {sorted(SWITCHES)}")
    return names


@contextlib.contextmanager
def switch(name: str, value):
    """ops.training.<constant> = value inside, restored after."""
    from normfuse.ops import training
    attr = SWITCHES[name][0]
    old = getattr(training, attr)
    setattr(training, attr, value)
    try:
        yield
    finally:
        setattr(training, attr, old)


def make_case(op: str, cell, device: str = "cuda", dtype=None, with_forward: bool = False):
    """(step, leaves, eager step) of op's fwd + bwd at cell (leaves get .grad each step); with
    `with_forward` also (ours, eager)'s forward alone: (step, leaves, eager step, fwd, eager fwd)."""
    import torch
    import torch.nn.functional as F
    from normfuse import ops
    dtype = dtype or torch.bfloat16
    M, K, N = cell
    g = torch.Generator(device=device).manual_seed(0)

    def r(*s, sc=1.0, sh=0.0, grad=True):
        t = (torch.randn(*s, generator=g, device=device) * sc + sh).to(dtype)
        return t.requires_grad_(grad)
    ln = "layernorm" in op
    if op in ("rmsnorm_linear", "layernorm_linear"):
        x, w, nw = r(M, K, sh=2.0 if ln else 0.0), r(N, K, sc=K ** -0.5), r(K, sc=0.1, sh=1.0)
        nb = r(K, sc=0.1) if ln else None
        dy = r(M, N, grad=False)
        fn = ((lambda: ops.layernorm_linear(x, nw, nb, w)) if ln
              else (lambda: ops.rmsnorm_linear(x, nw, w)))
        eager = ((lambda: F.linear(F.layer_norm(x, (K,), nw, nb, 1e-5), w)) if ln
                 else (lambda: F.linear(F.rms_norm(x, (K,), nw, 1e-6), w)))
        leaves = [t for t in (x, w, nw, nb) if t is not None]
    elif op in ("linear_rmsnorm", "linear_layernorm"):
        x, w, nw, res = r(M, K), r(N, K, sc=K ** -0.5), r(N, sc=0.1, sh=1.0), r(M, N)
        nb = r(N, sc=0.1) if ln else None
        dy = r(M, N, grad=False)
        fn = ((lambda: ops.linear_layernorm(x, w, nw, nb, 1e-5, None, res)) if ln
              else (lambda: ops.linear_rmsnorm(x, w, nw, 1e-6, None, res)))
        eager = ((lambda: F.layer_norm(F.linear(x, w) + res, (N,), nw, nb, 1e-5)) if ln
                 else (lambda: F.rms_norm(F.linear(x, w) + res, (N,), nw, 1e-6)))
        leaves = [t for t in (x, w, nw, nb, res) if t is not None]
    elif op == "postnorm_mlp":
        x = r(M, K)
        w1, g1, w2, g2 = r(N, K, sc=K ** -0.5), r(N, sc=0.1, sh=1.0), r(K, N, sc=N ** -0.5), \
            r(K, sc=0.1, sh=1.0)
        dy = r(M, K, grad=False)
        fn = lambda: ops.postnorm_mlp(x, w1, g1, None, None, w2, g2, None, None, 1e-6)  # noqa: E731

        def eager():
            a = F.silu(F.rms_norm(F.linear(x, w1), (N,), g1, 1e-6))
            return F.rms_norm(F.linear(a, w2) + x, (K,), g2, 1e-6)
        leaves = [x, w1, g1, w2, g2]
    else:
        raise ValueError(f"unknown op {op!r}")

    def step_of(f):
        def step():
            for t in leaves:
                t.grad = None
            f().backward(dy)
        return step
    if with_forward:
        return step_of(fn), leaves, step_of(eager), fn, eager
    return step_of(fn), leaves, step_of(eager)


def run(switches, cells, rounds: int, compiled: bool, timer=None, device: str = "cuda") -> list:
    """Records, one per (switch, op, cell); `timer` (fn -> ms) and `device` for the CPU test."""
    import torch
    if timer is None:
        from triton.testing import do_bench

        def timer(fn):
            return float(do_bench(fn, warmup=5, rep=40, return_mode="median"))
    records = []
    for name in switches:
        attr, values, op_names = SWITCHES[name]
        for op in op_names:
            for cell in cells:
                rec = dict(switch=name, constant=attr, op=op, M=cell[0], K=cell[1], N=cell[2])
                try:
                    step, leaves, eager_step = make_case(op, cell, device)
                    grads = {}
                    for v in values:  # compile and warm every value first
                        with switch(name, v):
                            step()
                            grads[repr(v)] = [t.grad.float().clone() for t in leaves]
                    base = grads[repr(values[0])]
                    rec["max_rel_grad_diff"] = max(
                        float((a - b).norm() / b.norm().clamp_min(1e-30))
                        for v in values[1:] for a, b in zip(grads[repr(v)], base))
                    del grads, base
                    times = {repr(v): [] for v in values}
                    extra = {}
                    if compiled:
                        cstep = _compiled_step(eager_step)
                        cstep()
                        extra["compiled"] = []
                    for _ in range(rounds):
                        for v in values:
                            with switch(name, v):
                                times[repr(v)].append(timer(step))
                        if compiled:
                            extra["compiled"].append(timer(cstep))
                    rec["rounds_ms"] = {**times, **extra}
                    rec["ms"] = {k: statistics.median(t) for k, t in rec["rounds_ms"].items()}
                    first = rec["ms"][repr(values[0])]
                    rec["ratio_to_first"] = {k: t / first for k, t in rec["ms"].items()}
                except Exception as e:  # noqa: BLE001 - record and go on
                    rec["error"] = f"{type(e).__name__}: {e}"[:400]
                records.append(rec)
                print(json.dumps(rec), flush=True)
                if device == "cuda":
                    torch.cuda.empty_cache()
    return records


def _compiled_step(eager_step):
    """torch.compile of the eager step's forward + backward (static shapes)."""
    import torch
    return torch.compile(eager_step, dynamic=False)


def markdown(records) -> str:
    md = ["| switch | op | M x K x N | ms per value (median over rounds) | x first value | "
          "max rel. grad diff |", "|---|---|---|---|---|---:|"]
    for r in records:
        cell = f"{r['M']}x{r['K']}x{r['N']}"
        if "error" in r:
            md.append(f"| {r['switch']} | {r['op']} | {cell} | error: {r['error'][:100]} | | |")
            continue
        ms = ", ".join(f"{k} {v:.3f}" for k, v in r["ms"].items())
        ratio = ", ".join(f"{k} {v:.3f}" for k, v in r["ratio_to_first"].items())
        md.append(f"| {r['switch']} | {r['op']} | {cell} | {ms} | {ratio} | "
                  f"{r['max_rel_grad_diff']:.1e} |")
    return "\n".join(md) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--switches", default="stats,block,postfwd")
    ap.add_argument("--cells", default="quick")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compiled", action="store_true",
                    help="also time torch.compile's step of the same function (compiles)")
    a = ap.parse_args(argv)
    try:
        switches, cells = parse_switches(a.switches), parse_cells(a.cells)
    except ValueError as e:
        ap.error(str(e))
    import torch
    if not torch.cuda.is_available():
        print("train_options_ab: no GPU: nothing to time", file=sys.stderr)
        return 1
    from normfuse.repro.warm import configure_torch
    configure_torch()
    os.makedirs(a.out, exist_ok=True)
    records = run(switches, cells, a.rounds, a.compiled)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    with open(os.path.join(a.out, "train_options_ab.json"), "w") as f:
        json.dump({"meta": meta, "records": records}, f, indent=1)
    with open(os.path.join(a.out, "train_options_ab.md"), "w") as f:
        f.write(markdown(records))
    print(markdown(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
