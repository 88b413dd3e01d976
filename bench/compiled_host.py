"""Where a compiled configuration's host time goes (GPU): cProfile over a few calls, and every
synchronizing CUDA call (torch.cuda.set_sync_debug_mode) with the Python stack that made it.

    PYTHONPATH=python python3 bench/compiled_host.py --out DIR bert:normfuse+compile gpt2:normfuse+compile

Written for issue 19 (2026-12-01): BERT's normfuse+compile prefill took 4.17 ms of host per
forward against 1.34 for stock+compile, equal to its device time (a sync?); GPT-2's likewise.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def one(model: str, config: str, out: str, calls: int = 10) -> dict:
    import torch
    from normfuse.repro.profile_models import configuration_call, cprofile_stats, host_and_wall
    with configuration_call(model, config, "prefill") as call:
        host, _ = host_and_wall(call, calls)
        # the synchronizing calls of one forward, with their stacks
        syncs = []

        def show(message, category, filename, lineno, file=None, line=None):
            syncs.append({"message": str(message)[:200],
                          "stack": "".join(traceback.format_stack(limit=14)[:-1])[-2500:]})
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings():  # (restores showwarning on exit)
                warnings.simplefilter("always")
                warnings.showwarning = show
                call()
        finally:
            torch.cuda.set_sync_debug_mode("default")
        stats = cprofile_stats(call, calls, (("cumulative", 45), ("tottime", 30)))
    name = f"{model}_{config.replace('+', '-')}"
    with open(os.path.join(out, f"cprofile_{name}.txt"), "w") as fh:
        fh.write(f"{model} {config}: host {host * 1e3:.3f} ms/call (no sync), {len(syncs)} "
                 f"synchronizing calls in one forward\n\n")
        for sy in syncs[:5]:
            fh.write(f"-- sync: {sy['message']}\n{sy['stack']}\n")
        fh.write("\n== cumulative ==\n" + stats["cumulative"] + "\n== tottime ==\n"
                 + stats["tottime"])
    rec = {"model": model, "config": config, "host_ms": round(host * 1e3, 3),
           "syncs": len(syncs), "first_sync": syncs[0] if syncs else None}
    print(f"[compiled_host] {model} {config}: host {rec['host_ms']} ms, syncs {len(syncs)}",
          flush=True)
    if syncs:
        print(syncs[0]["stack"][-1500:], flush=True)
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--calls", type=int, default=10)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    recs = []
    for pair in a.pairs:
        model, config = pair.split(":", 1)
        try:
            recs.append(one(model, config, a.out, a.calls))
        except Exception as e:  # noqa: BLE001
            recs.append({"model": model, "config": config, "error": f"{type(e).__name__}: {e}"})
            traceback.print_exc()
        with open(os.path.join(a.out, "compiled_host.json"), "w") as fh:
            json.dump(recs, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
