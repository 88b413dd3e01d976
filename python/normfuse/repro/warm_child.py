"""The warm-up children (see normfuse.repro.warm): `python -m normfuse.repro.warm_child --target T
--cell C` runs one benchmark cell once, with do_bench replaced by one call, and exits.

A module of its own so that the benchmarks can import the warm-up helpers below them
(normfuse.repro.warm) while this one, above them, imports the benchmarks it runs.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time

from . import bench_attention, bench_attention_bwd, bench_training, model_shapes, models, summary
from .warm import PEAK_MARK, configure_torch, patch_do_bench


def _child(target: str, cell: str, ops: str | None, quick: bool, sweep: bool = False,
           lean: bool = False) -> None:
    configure_torch()
    patch_do_bench()
    parts = cell.split(",")
    if target == "summary":
        summary.run(ops.split(",") if ops else list(summary.OPS), [tuple(int(p) for p in parts)],
                    log=lambda *_: None, rounds=1)
    elif target == "attention":
        H, m, act = int(parts[0]), int(parts[1]), parts[2]
        bench_attention._cell(H, m, act, configs=bench_attention.configs(quick))
    elif target == "attention_bwd":
        bench_attention_bwd.bench_shape(int(parts[0]), int(parts[1]), parts[2], time.time(), quick,
                                        kernels=False, **({"lean": True} if lean else {}))
    elif target == "training":
        bench_training.warm_one(tuple(int(p) for p in parts),
                                tempfile.mkdtemp(prefix="normfuse_warm_train_"), sweep)
    elif target == "models":
        models.warm_one(*parts)
    elif target == "model_shapes":
        model_shapes.warm_one(int(parts[0]), quick)
    else:
        raise SystemExit(f"normfuse.repro.warm_child: unknown target {target!r}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True,
                    choices=("summary", "attention", "attention_bwd", "training", "models",
                             "model_shapes"))
    ap.add_argument("--cell", required=True, help="the cell, comma-separated (see the targets)")
    ap.add_argument("--ops", help="summary: the ops (default all four)")
    ap.add_argument("--quick", action="store_true", help="the benchmark's --quick settings")
    ap.add_argument("--sweep", action="store_true", help="training: also the tiling sweep of K")
    ap.add_argument("--lean", action="store_true",
                    help="attention_bwd: the benchmark's --lean (no A/B columns)")
    a = ap.parse_args(argv)
    try:
        _child(a.target, a.cell, a.ops, a.quick, a.sweep, a.lean)
    finally:  # (failed or not: the parent records it beside its estimate, what the next run's
        # estimates rest on; reserved, not allocated: what the caching allocator held)
        try:
            import torch
            if torch.cuda.is_available():
                print(f"{PEAK_MARK} {torch.cuda.max_memory_reserved()}", flush=True)
        except Exception:  # noqa: BLE001
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
