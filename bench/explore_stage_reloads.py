"""Does staging the statistics' reload in shared memory pay? lazy-prenorm{stage-reloads} (H200)

Triton 3.6 pipelines only the loads that feed a dot; the reload the statistics read (stats-source=
reload, the default) is otherwise a synchronous register load each k-step. `stage-reloads=true`
tags the loop's loads with tt.latency so that the reload gets its own cp.async buffers. This script
times the pre-norm ops with stage-reloads=false and =true side by side, in one process, per form:

  rms-folded        RMSNorm, g folded into W (the op's default), the op's launch form
  rms-folded-tile   the same, one program per tile
  rms-g             RMSNorm, g applied to the tile in the loop (fold=False)
  ln-folded         LayerNorm, g and beta folded (the op's default), one program per tile
  ln-folded-pers    the same, persistent (spilled without staging: 104 B)
  ln-g              LayerNorm, g and beta in the loop (fold=False)

and, with --forms, LayerNorm (and RMSNorm) at BLOCK_K = 32 (`*-k32*`), and RMSNorm with programs
walking row blocks (`*-rows`: statistics once per row block), see FORMS.

next to cuBLAS and our plain Triton GEMM. Numerics on the first 4096 rows: rel. error vs fp64,
NaN-poisoned output fully written, three launches bitwise equal. Writes JSON + markdown to --out.

    PYTHONPATH=python python3 bench/explore_stage_reloads.py --out DIR [--cells M,K,N;...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
from normfuse.kernels.configs import GemmConfig  # noqa: E402
from normfuse.ops import prenorm_linear as ops  # noqa: E402
from normfuse.repro.bench import (_check_launch, _error_text, _oracle, do_bench, environment,  # noqa: E402
                                  hopper_status, make_inputs)

CELLS = [(262144, 512, 512), (262144, 1024, 1024), (262144, 2048, 2048), (262144, 1024, 2048),
         (8192, 4096, 4096)]
_K32 = GemmConfig(128, 256, 32, 8, 8, 4)
FORMS = {  # name: (norm, fold, persistent[, config, extra lazy-prenorm options])
    "rms-folded": ("rms", True, None), "rms-folded-tile": ("rms", True, False),
    "rms-g": ("rms", False, None), "ln-folded": ("ln", True, None),
    "ln-folded-pers": ("ln", True, True), "ln-g": ("ln", False, None),
    # LayerNorm at BLOCK_K = 32: both reloads fit shared memory (and its statistics summed in a
    # tile fit the registers: 218, no spills, ptxas)
    "ln-folded-k32s4": ("ln", True, None, _K32, ""),
    "ln-folded-k32s4-tileacc": ("ln", True, None, _K32, ",stats-accumulate=tile"),
    "ln-folded-k32s3-tileacc": ("ln", True, None, GemmConfig(128, 256, 32, 8, 8, 3), ",stats-accumulate=tile"),
    "ln-g-k32s4-tileacc": ("ln", False, None, _K32, ",stats-accumulate=tile"),
    "rms-folded-k32s4": ("rms", True, None, GemmConfig(128, 256, 32, 8, 8, 4, True), ""),
    # RMSNorm, programs walking row blocks (statistics once per row block, `row_blocks=True`)
    "rms-folded-rows": ("rms", True, True, None, "", True),
    "rms-g-rows": ("rms", False, True, None, "", True),
    "rms-g-pers": ("rms", False, True),
}
DEFAULT_FORMS = ("rms-folded", "rms-folded-tile", "rms-g", "ln-folded", "ln-folded-pers", "ln-g")


def _plan(form, x, g, b, w, stage, out):
    norm, fold, pers, cfg, extra, rows = (FORMS[form] + (None, "", False))[:6]
    passes = (f"lazy-prenorm{{stage-reloads={stage}{extra}}}",)
    if norm == "rms":
        return ops.prepare_rmsnorm_linear(x, g, w, 1e-6, fold=fold, passes=passes, out=out,
                                          persistent=pers, config=cfg, tma=False if pers else None,
                                          row_blocks=rows)
    return ops.prepare_layernorm_linear(x, g, b, w, 1e-5, fold=fold, passes=passes, out=out,
                                        persistent=pers, config=cfg)


def run_cell(M, K, N, forms, log=print) -> dict:
    cell = {"M": M, "K": K, "N": N, "ms": {}, "rows": []}
    data = {}
    for norm in sorted({FORMS[f][0] for f in forms}):
        xs, g, b, w = make_inputs(norm, M, K, N, torch.bfloat16)
        data[norm] = (xs[0], g, b, w, _oracle(norm, xs[0][:4096], g, b, w, 1e-6 if norm == "rms" else 1e-5))
    x, _, _, w, _ = next(iter(data.values()))
    cell["ms"]["cublas"] = do_bench(lambda: F.linear(x, w))
    cell["ms"]["triton_gemm"] = do_bench(ops.prepare_plain_linear(x, w).launch)
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    for form in forms:
        x, g, b, w, oracle = data[FORMS[form][0]]
        row = {"form": form}
        for stage in ("false", "true"):
            try:
                plan = _plan(form, x, g, b, w, stage, out)
                ck = plan.compile()
                err, written, same = _check_launch(plan, min(M, 4096), oracle, repeats=3)
                row[stage] = {"err": err, "written": written, "repeatable": same,
                              "ms": do_bench(plan.launch), "remark": str(ck.remarks[-1])[-160:],
                              "persistent": bool(plan.constexprs.get("NUM_PROGRAMS")),
                              "config": str(plan.config),
                              "shared": ck.kernel.metadata.shared}
            except Exception as e:  # noqa: BLE001
                row[stage] = {"error": _error_text(e)}
        f, t = row["false"].get("ms"), row["true"].get("ms")
        row["true_over_false"] = t / f if f and t else None
        cell["rows"].append(row)
        log(f"{M}x{K}x{N} {form}: " + json.dumps({k: (v if not isinstance(v, dict) else {
            kk: vv for kk, vv in v.items() if kk != "remark"}) for k, v in row.items()}), flush=True)
    return cell


def markdown(res) -> str:
    env = res["env"]
    out = [f"# lazy-prenorm stage-reloads=false vs true, {env.get('gpu')}", "",
           f"{env['date']}; torch {env['torch']}, triton {env['triton']}; bf16; ms (do_bench median); "
           "err = rel. Frobenius error vs fp64 (first 4096 rows); ok = written and 3 launches bitwise equal", "",
           "| M | K | N | form | cuBLAS | our GEMM | false | true | true/false | true/our GEMM | err false | err true | ok false | ok true |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    f3 = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    for c in res["cells"]:
        for r in c["rows"]:
            a, b = r["false"], r["true"]
            tg = c["ms"]["triton_gemm"]
            out.append("| " + " | ".join([
                str(c["M"]), str(c["K"]), str(c["N"]), r["form"], f3(c["ms"]["cublas"]), f3(tg),
                f3(a.get("ms")), f3(b.get("ms")), f3(r["true_over_false"]),
                f3(b["ms"] / tg if b.get("ms") else None),
                f"{a['err']:.2e}" if "err" in a else a.get("error", "-"),
                f"{b['err']:.2e}" if "err" in b else b.get("error", "-"),
                str(a.get("written") and a.get("repeatable")), str(b.get("written") and b.get("repeatable"))]) + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--tag", default="", help="suffix of the output file names")
    ap.add_argument("--cells", default=None, help="'M,K,N;M,K,N' instead of the default cells")
    ap.add_argument("--forms", default=",".join(DEFAULT_FORMS),
                    help="comma-separated subset of " + ", ".join(FORMS))
    a = ap.parse_args(argv)
    ok, why = hopper_status()
    if not ok:
        print(f"explore_stage_reloads: needs a Hopper GPU: {why}", file=sys.stderr)
        return 2
    cells = ([tuple(int(v) for v in c.split(",")) for c in a.cells.split(";") if c.strip()]
             if a.cells else CELLS)
    forms = [f for f in a.forms.split(",") if f]
    t0 = time.time()
    res = {"env": environment(), "cells": [run_cell(*c, forms) for c in cells]}
    res["wall_s"] = round(time.time() - t0, 1)
    md = markdown(res)
    print(md)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"stage_reloads{a.tag}.json"), "w") as fh:
            json.dump(res, fh, indent=1, default=str)
        with open(os.path.join(a.out, f"stage_reloads{a.tag}.md"), "w") as fh:
            fh.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
