"""CPU (ptxas, no GPU): registers, spills and shared memory of the FlashNormAttention backward's
kernels over a grid of tiles, to choose what the H200 should time (`bench_attention_bwd
--tiles`). Session 18 found the dK / dV kernel 0.2-0.5 ms faster at 32 x 32 tiles, 4 warps and
2 stages than at 64 x 64, 8 warps, 1 stage (the latter spilled 108 B / thread); the rows kernel's
tiles have not been swept.

    PYTHONPATH=python python3 bench/fna_bwd_tiles.py [--out DIR] [--kernels rows_saved,kv]
        (kernels: rows, rows_saved, kv; the kvq plan's rows_pre, kvq, rows_post)
        [--acts gelu_tanh,softmax] [--heads 2,4] [--d 128]

Each row: kernel, activation, H, BLOCK_M, BLOCK_L, warps, stages -> registers per thread, spill
stores / loads (bytes per thread), static shared memory (bytes), the CTAs an SM holds at once
by registers and shared memory (`ctas_per_sm`), or the compile error. `--from-json` rewrites
the table of an earlier run. The rows
kernel goes through `DEFAULT_BWD_PASSES` (a cluster of H CTAs), as the op compiles it; its
example arguments are the op's (bf16 x / dout / k / v / g, fp32 statistics, one-element z / dlnq
stand-ins), so the divisibility specialization matches a launch at L = 128 keys.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

ROWS_TILES = [(bm, bl, w, s) for bm in (32, 64, 128) for bl in (32, 64, 128) for w in (4, 8)
              for s in (1, 2)]
KV_TILES = [(bm, bl, w, s) for bm in (32, 64) for bl in (32, 64, 128) for w in (4, 8)
            for s in (1, 2, 3)]
# the kvq plan (`flash_norm_attention_bwd(plan="kvq")`): its middle kernel holds every key (L =
# 128 here) in one tile; its first and last kernels go by rows only (BLOCK_L unused)
KVQ_TILES = [(bm, 128, w, s) for bm in (16, 32, 64, 128) for w in (4, 8) for s in (1, 2, 3)]
PRE_POST_TILES = [(bm, 0, w, s) for bm in (16, 32, 64) for w in (4, 8) for s in (1, 2)]
TILES = dict(kv=KV_TILES, kvq=KVQ_TILES, rows_pre=PRE_POST_TILES, rows_post=PRE_POST_TILES)


def example_args(kernel: str, H: int, D: int, L: int, soft: bool):
    """The op's argument list for `kernel` (CPU tensors: only dtypes and alignment matter)."""
    import torch
    bf, f32 = torch.bfloat16, torch.float32
    T, B = 256, 2

    def t(*shape, dtype=bf):
        return torch.empty(shape, dtype=dtype)
    x, dout, dx = t(T, H * D), t(T, H, D), t(T, H * D)
    k, v = t(B, L, H, D), t(B, L, H, D)
    mean, rstd, rrms = t(T, dtype=f32), t(T, dtype=f32), t(T, H, dtype=f32)
    stat = t(T, H, 2, dtype=f32) if soft else t(1, dtype=f32)
    stride_kb, stride_kl = k.stride(0), k.stride(1)
    if kernel in ("kv", "kvq"):
        off = torch.zeros(B + 1, dtype=torch.int64)
        tail = [t(T, H, D), t(T, H, 2, dtype=f32)] if kernel == "kvq" else []
        # (kvq: its ORDER argument last, the offsets as the op passes them without an order)
        return [x, k, v, mean, rstd, x, x, off, t(T, H, D), stat, t(B, L, H, D),
                t(B, L, H, D), *tail, L, stride_kb, stride_kl, 0.125] + (
                    [off] if kernel == "kvq" else [])
    table = torch.zeros(T // 16, 2, dtype=torch.int32)
    if kernel == "rows_pre":
        return [x, dout, t(T, H, D), t(T, H, dtype=f32) if soft else stat, mean, rstd, rrms,
                x, x, x, table, t(T, H, D), stat, t(4, 3, H * D, dtype=f32)]
    if kernel == "rows_post":
        return [x, dout, mean, rstd, x, x, table, t(T, H, D), t(T, H, 2, dtype=f32), dx,
                t(4, 3, H * D, dtype=f32)]
    head = [x, dout, k, v, mean, rstd, rrms, x, x, x, table]
    if kernel == "rows_saved":
        head += [t(T, H, D), t(T, H, dtype=f32) if soft else stat]
    one = t(1, dtype=f32)
    return head + [one, t(T, H, D), one, stat, dx, t(4, 3, H * D, dtype=f32), L, stride_kb,
                   stride_kl, 0.125]


def ctas_per_sm(rec: dict) -> int:
    """CTAs of this compilation one H100 / H200 SM holds at once (`device.sm90_resident_ctas`)."""
    from normfuse.device import sm90_resident_ctas
    return sm90_resident_ctas(rec["warps"], rec["registers"], rec["shared"])


def compile_one(kernel, act, H, D, tile, L=128):
    import normfuse
    from normfuse.kernels.attention_bwd import ACT_CODES
    from normfuse.ops.flash_norm_attention_bwd import DEFAULT_BWD_PASSES, PRE_PASSES, _kernel
    bm, bl, w, s = tile
    soft = act == "softmax"
    consts = dict(H=H, HKV=H, D=D, ACT=ACT_CODES[act], BLOCK_M=bm, BLOCK_L=bl)
    if kernel in ("rows_pre", "rows_post"):  # (no keys; rows_post has no activation)
        consts = {k_: v_ for k_, v_ in consts.items()
                  if k_ not in ("HKV", "BLOCK_L") and not (kernel == "rows_post" and k_ == "ACT")}
    passes = dict(kv=(), kvq=(), rows_post=(), rows_pre=PRE_PASSES).get(kernel, DEFAULT_BWD_PASSES)
    rec = dict(kernel=kernel, activation=act, H=H, D=D, block_m=bm, block_l=bl, warps=w,
               stages=s)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ck = normfuse.compile(_kernel(kernel), args=example_args(kernel, H, D, L, soft),
                                  constexprs=consts, target="cuda:90", passes=passes,
                                  num_warps=w, num_stages=s)
        res = ck.resources()
        rec.update(registers=res["registers"], spill_stores=res["spill_stores"],
                   spill_loads=res["spill_loads"], shared=int(ck.metadata.shared))
        rec["ctas_per_sm"] = ctas_per_sm(rec)
    except Exception as e:  # noqa: BLE001 - recorded: a tile the kernel cannot take
        rec["error"] = (type(e).__name__ + ": " + str(e).strip().splitlines()[0])[:200]
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--kernels", default="rows_saved,kv")
    ap.add_argument("--acts", default="gelu_tanh,softmax")
    ap.add_argument("--heads", default="2,4")
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--from-json", metavar="JSON",
                    help="only rewrite the table (with CTAs per SM) from an earlier run's JSON")
    a = ap.parse_args(argv)
    recs = []
    if a.from_json:
        with open(a.from_json) as f:
            recs = json.load(f)
        for r in recs:
            if "error" not in r:
                r["ctas_per_sm"] = ctas_per_sm(r)
    for kernel, act, H in ([] if a.from_json else itertools.product(
            a.kernels.split(","), a.acts.split(","), [int(h) for h in a.heads.split(",")])):
        for tile in TILES.get(kernel, ROWS_TILES):
            r = compile_one(kernel, act, H, a.d, tile)
            recs.append(r)
            what = r.get("error") or (f"{r['registers']} regs, spills {r['spill_stores']} / "
                                      f"{r['spill_loads']} B, smem {r['shared']}, "
                                      f"{r['ctas_per_sm']} CTA(s) / SM")
            print(f"{kernel:10s} {act:9s} H={H} {tile}: {what}", flush=True)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "fna_bwd_tiles.json"), "w") as f:
            json.dump(recs, f, indent=1)
        lines = ["| kernel | activation | H | BLOCK_M x BLOCK_L | warps | stages | registers | "
                 "spills (st / ld B) | shared B | CTAs / SM |",
                 "|---|---|---:|---|---:|---:|---:|---|---:|---:|"]
        for r in recs:
            tail = (f"{r['registers']} | {r['spill_stores']} / {r['spill_loads']} | "
                    f"{r['shared']} | {r['ctas_per_sm']}"
                    if "error" not in r else f"- | {r['error'][:60]} | - | -")
            lines.append(f"| {r['kernel']} | {r['activation']} | {r['H']} | {r['block_m']} x "
                         f"{r['block_l']} | {r['warps']} | {r['stages']} | {tail} |")
        with open(os.path.join(a.out, "fna_bwd_tiles.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
