"""GPU (H100 / H200): the FlashNormAttention backward's kvq plan at given tiles against the split
plan, to find which tile knob breaks `dlnq_dtype=torch.float32` (session 32: wrong dx at 32 rows,
3 stages, dQ transposed; an illegal memory access in fna_bwd_kvq_naive at 32 rows, dQ transposed,
2 stages, B = 160; correct at 16 rows, dS K, 2 stages). The op refuses fp32 outside
`KVQ_F32_TILES`; this script lifts that check.

    CUDA_LAUNCH_BLOCKING=1 PYTHONPATH=python python3 bench/fna_kvq_check.py \\
        --tiles 32:3:t:f32,32:2:t:f32,16:3:t:f32 [--cells 160:2:gelu_tanh,64:4:softmax]

Tiles BLOCK_M:stages:(t|n):(f32|bf16) at 8 warps, 't' for dQ transposed (`BwdConfig.kvq_dq_t`).
Each tile runs twice per cell (B:H:activation, max length 1024, L = D = 128, g saved by the
forward); one JSON line per (cell, tile): dx / dk / dv relative to the split plan (Frobenius)
and whether the two runs are bitwise equal; with `--time` also the tile's backward time (`ms`,
triton's do_bench median) and the split plan's (`split_ms`). A CUDA error is sticky: the script prints the error
and exits 1, so run one process per tile set when looking for a crash.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def parse_tile(item: str):
    try:
        bm, st, t, dt = item.split(":")
        if t not in ("t", "n") or dt not in ("f32", "bf16"):
            raise ValueError
        return int(bm), int(st), t == "t", dt
    except ValueError:
        raise ValueError(f"tile '{item}': expected BLOCK_M:stages:(t|n):(f32|bf16), "
                         f"e.g. 32:3:t:f32") from None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", required=True)
    ap.add_argument("--cells", default="160:2:gelu_tanh,64:4:softmax")
    ap.add_argument("--time", action="store_true", help="also time each tile and the split plan")
    a = ap.parse_args(argv)
    tiles = [parse_tile(t) for t in a.tiles.split(",") if t.strip()]
    import importlib
    import torch
    from normfuse.ops.common import host_offsets
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    from normfuse.ops.flash_norm_attention_bwd import BwdConfig, flash_norm_attention_bwd
    # (the op refuses fp32 at the tiles that faulted: here, run them)
    importlib.import_module("normfuse.ops.flash_norm_attention_bwd").KVQ_F32_TILES = None
    from normfuse.reference_attention import default_qk_scale
    from normfuse.repro.bench_attention_bwd import make_inputs
    for cell in a.cells.split(","):
        B, H, act = cell.split(":")
        B, H = int(B), int(H)
        x, k, v, off, dout, _ = make_inputs(B, 128, H, H, 128, 1024)
        fkw = dict(activation=act, qk_scale=default_qk_scale(act, 128), check_offsets=False)
        host_offsets(off)
        ps = prepare_flash_norm_attention(x, k, v, off, save=True, **fkw)
        ps.launch()
        args = (dout, x, k, v, off, ps.out, ps.mean, ps.rstd, ps.rrms)
        kw = dict(fkw, g=ps.g, lse=ps.lse)
        split = flash_norm_attention_bwd(*args, plan="split", **kw)
        torch.cuda.synchronize()
        for bm, st, dqt, dt in tiles:
            rec = dict(cell=cell, tile=f"{bm}:{st}:{'t' if dqt else 'n'}:{dt}")
            cfg = BwdConfig(kvq_block_m=bm, kvq_num_stages=st, kvq_dq_t=dqt)
            dtype = torch.float32 if dt == "f32" else None
            try:
                runs = [flash_norm_attention_bwd(*args, plan="kvq", config=cfg,
                                                 dlnq_dtype=dtype, **kw) for _ in range(2)]
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - reported; the context is unusable after it
                rec["error"] = repr(e)[:400]
                print(json.dumps(rec), flush=True)
                return 1
            for name, p, q, s in zip(("dx", "dk", "dv"), *runs, split):
                rec[name] = float((p.float() - s.float()).norm() / s.float().norm())
                rec[name + "_repeatable"] = bool(torch.equal(p, q))
            if a.time:
                from triton.testing import do_bench
                rec["ms"] = do_bench(lambda: flash_norm_attention_bwd(
                    *args, plan="kvq", config=cfg, dlnq_dtype=dtype, **kw), return_mode="median")
                rec["split_ms"] = do_bench(lambda: flash_norm_attention_bwd(
                    *args, plan="split", **kw), return_mode="median")
            print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
