"""Host time per eager forward, forward by forward, from the first call after `optimize` on:
what the host does in the forwards that are slower than the steady state.

    PYTHONPATH=python python3 bench/host_warmup.py --out DIR [--models bert,llama] [--forwards 80]

Per forward (no_grad, synchronized after each, host time = perf_counter around the call): the
host ms, the tensor maps encoded (and their host time), the op calls that missed the launch-ready
memo (the slow path: launch_prenorm / launch_postnorm), Python garbage collections, for the
stock model and for normfuse.optimize's. Writes host_warmup.json and a short table.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host_chain import Capture  # noqa: E402  (the same method wrapper)


def take(c) -> tuple:
    """(calls, host us) a clocked `host_chain.Capture` counted since the last take."""
    out = (c.calls, c.ns / 1e3)
    c.calls, c.ns = 0, 0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="bert,llama")
    ap.add_argument("--forwards", type=int, default=80)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import torch
    if not torch.cuda.is_available():
        print("host_warmup: needs a CUDA GPU")
        return 0
    import normfuse
    from normfuse.direct_launch import TensorMaps
    from normfuse.ops import inference
    from normfuse.repro import models as M

    gcs = [0]
    gc.callbacks.append(lambda phase, info: gcs.__setitem__(0, gcs[0] + (phase == "start")))
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d"), "runs": []}
    for name in args.models.split(","):
        spec = M.SPECS[name]
        sd, ids, _ = M.make_state(spec, "cuda", torch.bfloat16)
        for config in ("stock", "normfuse"):
            model = M.fresh(spec, sd, "cuda", torch.bfloat16)
            if config == "normfuse":
                model = normfuse.optimize(model)
            model.eval()
            counters = {"encode": Capture(TensorMaps, "encode", clock=True),
                        "pre slow": Capture(inference, "launch_prenorm", clock=True),
                        "post slow": Capture(inference, "launch_postnorm", clock=True)}
            rows = []
            with torch.no_grad():
                for i in range(args.forwards):
                    g0 = gcs[0]
                    t0 = time.perf_counter()
                    M._forward(model, ids)
                    host = (time.perf_counter() - t0) * 1e3
                    torch.cuda.synchronize()
                    row = {"i": i, "host_ms": round(host, 3), "gc": gcs[0] - g0}
                    for k, c in counters.items():
                        n, us = take(c)
                        row[k] = n
                        row[k + " us"] = round(us, 1)
                    rows.append(row)
            for c in counters.values():
                c.restore()
            steady = statistics.median(r["host_ms"] for r in rows[-20:])
            first = statistics.median(r["host_ms"] for r in rows[3:33])
            out["runs"].append({"model": name, "config": config, "rows": rows,
                                "median_3_33": first, "median_last_20": steady})
            print(f"{name} {config}: host ms median forwards 3-32 {first:.3f}, last 20 "
                  f"{steady:.3f}; encodes per forward (first 10): "
                  f"{[r['encode'] for r in rows[:10]]}, later: "
                  f"{sum(r['encode'] for r in rows[10:])}; slow-path calls first 10: "
                  f"{[r['pre slow'] + r['post slow'] for r in rows[:10]]}; "
                  f"host ms first 12: {[r['host_ms'] for r in rows[:12]]}", flush=True)
            del model
            torch.cuda.empty_cache()
    with open(os.path.join(args.out, "host_warmup.json"), "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
