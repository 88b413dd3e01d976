"""A/B of model-benchmark configurations, interleaved: every variant built and compiled first,
then timed round by round (the same order each round), so that drift between runs cancels.

    PYTHONPATH=python python3 bench/train_ab.py --out DIR --model llama \
        --variants stock+compile,normfuse+compile,normfuse+compile:pack [--mode train] \
        [--rounds 5]

A variant is a configuration of `normfuse.repro.models` with optional switches after a colon:
`pack` (composed training under torch.compile runs each packed sibling group as one GEMM over
the concatenated weights: nn.fused.COMPOSED_PACK = True while the variant is built, compiled
and run) or `nopack` (each consumer its own GEMM, the default since 2026-12-02). Writes
train_ab.json and prints a table: median ms over the rounds and each round's ms.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


@contextlib.contextmanager
def switches(names):
    from normfuse.nn import fused
    old = fused.COMPOSED_PACK
    if "nopack" in names:
        fused.COMPOSED_PACK = False
    elif "pack" in names:
        fused.COMPOSED_PACK = True
    try:
        yield
    finally:
        fused.COMPOSED_PACK = old


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="llama")
    ap.add_argument("--variants", default="stock+compile,normfuse+compile,normfuse+compile:pack")
    ap.add_argument("--mode", choices=("train", "prefill"), default="train")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep-ms", type=int, default=150)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import torch
    from triton.testing import do_bench

    from normfuse.repro import models as M
    M_ = M
    spec = M_.SPECS[args.model]
    dev, dt = "cuda", torch.bfloat16
    sd, ids, R = M_.make_state(spec, dev, dt)
    built = []
    for v in args.variants.split(","):
        name, _, sw = v.partition(":")
        cfg = M_._config(name)
        sws = tuple(s for s in sw.split("+") if s)
        info: dict = {}
        scope = M_.liger_scope(spec.family) if cfg.liger else contextlib.nullcontext()
        with scope, switches(sws):
            model = M_.build_configuration(spec, cfg, sd, dev, dt, info)
            f = torch.compile(model) if cfg.compiled else model
            params = [p for p in model.parameters() if p.requires_grad]
            if args.mode == "train":
                model.train()

                def call(f=f, params=params):
                    return M_._step(f, ids, R, params)
            else:
                model.eval()

                def call(f=f):
                    with torch.no_grad():
                        return M_._forward(f, ids)
            t0 = time.time()
            for _ in range(3):
                call()
            torch.cuda.synchronize()
            print(f"built {v} ({time.time() - t0:.1f} s to warm)", flush=True)
        built.append((v, sws, call))
    times = {v: [] for v, _, _ in built}
    for r in range(args.rounds):
        for v, sws, call in built:
            with switches(sws):
                times[v].append(float(do_bench(call, warmup=10, rep=args.rep_ms,
                                               return_mode="median")))
        print(f"round {r}: " + ", ".join(f"{v} {times[v][-1]:.3f}" for v, _, _ in built),
              flush=True)
    base = statistics.median(times[built[0][0]])
    rec = {"model": args.model, "mode": args.mode, "device": torch.cuda.get_device_name(),
           "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
           "variants": {v: {"median_ms": round(statistics.median(t), 3),
                            "vs_first": round(statistics.median(t) / base, 4),
                            "rounds_ms": [round(x, 3) for x in t]} for v, t in times.items()}}
    with open(os.path.join(args.out, f"train_ab_{args.model}_{args.mode}.json"), "w") as f:
        json.dump(rec, f, indent=1)
    print(f"| {args.model} {args.mode} | median ms | vs {built[0][0]} | rounds |")
    for v, d in rec["variants"].items():
        print(f"| {v} | {d['median_ms']} | {d['vs_first']} | {d['rounds_ms']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
