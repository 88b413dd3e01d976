"""ptxas (sm_90a) on the post-norm training forward lowered by hopper-ws{post-norm=true} (rule 9:
h as the template's second output), N = K = 1024, 128-row tiles, both norms, with and without a
residual, ACT 0 / 1 (the block's SiLU). CPU only.

    PYTHONPATH=python:test/python python3 bench/results/2026-12-03/session22/train-fwd-ptxas/train_fwd_ptxas.py
"""
import json
import os
import sys

from test_lowered_postnorm import TRAIN, _train_ttir
from normfuse.compiler import ptxas_resources
from normfuse.testing import lower_ir

rows = []
for kind in ("rms", "ln"):
    for bn in (128, 256):
        for res in (False, True):
            for act in (0, 1):
                lw, _, remarks = lower_ir(_train_ttir(kind, 1024, 128, bn, 1024, True, res,
                                                      act=act), TRAIN)
                r = ptxas_resources(lw.kernel.asm["ptx"], 90)
                rows.append(dict(kind=kind, block_n=bn, residual=res, act=act,
                                 schedule=lw.plan.config.schedule, stages=lw.plan.config.stages,
                                 spill_stores=r["spill_stores"],
                                 wgmma_serialized=bool(r["wgmma_serialized"])))
                print(rows[-1], flush=True)
out = os.path.dirname(os.path.abspath(__file__))
json.dump(rows, open(os.path.join(out, "train_fwd_ptxas.json"), "w"), indent=1)
md = ["| norm | tile | residual | SiLU | schedule, stages | spill stores B/thread | wgmma serialized |",
      "|---|---|---|---|---|---:|---|"]
for r in rows:
    md.append(f"| {r['kind']} | 128x{r['block_n']} | {r['residual']} | {r['act']} | "
              f"{r['schedule']}, {r['stages']} | {r['spill_stores']} | {r['wgmma_serialized']} |")
open(os.path.join(out, "train_fwd_ptxas.md"), "w").write("\n".join(md) + "\n")
