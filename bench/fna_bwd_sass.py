"""CPU, no GPU: the FlashNormAttention backward's plans in sm_90 SASS, as warp instructions per
64 rows and head at the benchmark's shape (bf16, D = L = 128, no weights), to compare the
"split" plan (rows kernel + dK / dV kernel) with the "kvq" plan (rows_pre + kvq + rows_post)
before the H200 times them (`bench_attention_bwd`'s `fused_saved_kvq_ms`).

    PYTHONPATH=python python3 bench/fna_bwd_sass.py [--acts gelu_tanh,softmax] [--heads 2]
        [--kvq 16:8:2,16:8:2:t,32:8:2:t,32:8:3:tp] [--json FILE]

Each kernel is compiled as the op compiles it (`BwdConfig`'s tiles, the default passes). A
kernel's static SASS is counted once per trip of each of its loops over the trips that 64 rows
of one head take (a loop's body is the code between a backward branch and its target, nested
loops not separated: the kernels here have one loop each or none), times its warps:

    split: rows kernel (32 rows a program, one head per CTA, keys in 64-key steps: 2 programs,
           2 key trips each) + dK / dV kernel (32 keys a program, 32 rows a step: 4 x 2 steps)
    kvq:   rows_pre (2 programs) + kvq (64 / BLOCK_M row steps, every key in one tile) +
           rows_post (2 programs, its loops over the H heads shared by them: / H)
    (the dK / dV and kvq programs' code outside their row loop counted 64 / --seq-rows times)

Warp instructions are what the SMs issue; this leaves out latency, occupancy and memory traffic
(the kvq plan writes and reads dlnq once more), so it ranks candidates, it does not time them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

from fna_bwd_tiles import example_args  # noqa: E402
from fna_sass import loops, sass  # noqa: E402


def compiled(kernel, act, H, consts, passes, warps, stages):
    """(SASS [(address, text)], ptxas resources) of one backward kernel."""
    import normfuse
    from normfuse.ops.flash_norm_attention_bwd import _kernel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck = normfuse.compile(_kernel(kernel), args=example_args(kernel, H, 128, 128,
                                                                 act == "softmax"),
                              constexprs=consts, target="cuda:90", passes=passes,
                              num_warps=warps, num_stages=stages)
    with tempfile.TemporaryDirectory() as tmp:
        return sass(ck.asm["cubin"], tmp), ck.resources()


def dynamic(ins, trips, once=1.0) -> float:
    """Instructions run: each loop's body `trips` times, the rest `once` (a fraction where a
    program's prologue and epilogue serve more rows than counted)."""
    body = sum(sum(1 for a, _ in ins if lp[0] <= a <= lp[1]) for lp in loops(ins))
    return once * (len(ins) - body) + trips * body


def parse_kvq(spec: str) -> list:
    """`bench_attention_bwd.parse_kvq_tiles`: [(BLOCK_M, warps, stages, dq_t, sums_in_post),
    ...], a malformed tile ending the script."""
    from normfuse.repro.bench_attention_bwd import parse_kvq_tiles
    try:
        return parse_kvq_tiles(spec)
    except ValueError as e:
        raise SystemExit(f"fna_bwd_sass: {e}") from None


def measure(act: str, H: int, kvq_tiles, seq_rows: int = 512) -> dict:
    from normfuse.kernels.attention_bwd import ACT_CODES
    from normfuse.ops.flash_norm_attention_bwd import PRE_PASSES, BwdConfig, default_bwd_passes
    cfg, A = BwdConfig(), ACT_CODES[act]
    rec = dict(activation=act, H=H, seq_rows=seq_rows)

    def kern(name, consts, passes, warps, stages, trips, programs, share=1, once=1.0):
        ins, res = compiled(name, act, H, consts, passes, warps, stages)
        return dict(static=len(ins), registers=res["registers"], spills=res["spill_stores"],
                    warps=warps,
                    warp_instructions=programs * dynamic(ins, trips, once) * warps / share)

    # (the dK / dV and kvq programs walk a whole sequence: their code outside the row loop
    # serves `seq_rows` rows)
    seq = 64 / seq_rows

    rec["rows_saved"] = kern("rows_saved", dict(H=H, HKV=H, D=128, ACT=A, BLOCK_M=cfg.block_m,
                                                BLOCK_L=cfg.block_l), default_bwd_passes(act),
                             cfg.num_warps, cfg.num_stages, 128 // cfg.block_l,
                             64 // cfg.block_m)
    rec["kv"] = kern("kv", dict(H=H, HKV=H, D=128, ACT=A, BLOCK_M=cfg.kv_block_m,
                                BLOCK_L=cfg.kv_block_l), (), cfg.kv_num_warps,
                     cfg.kv_num_stages, 64 // cfg.kv_block_m, 128 // cfg.kv_block_l, once=seq)
    rec["split"] = rec["rows_saved"]["warp_instructions"] + rec["kv"]["warp_instructions"]
    rec["rows_pre"] = kern("rows_pre", dict(H=H, D=128, ACT=A, BLOCK_M=cfg.block_m), PRE_PASSES,
                           cfg.num_warps, cfg.num_stages, 1, 64 // cfg.block_m)
    rec["rows_post"] = kern("rows_post", dict(H=H, D=128, BLOCK_M=cfg.block_m), (),
                            cfg.num_warps, 1, H, 64 // cfg.block_m, share=H)
    if any(t[4] for t in kvq_tiles):  # rows_post summing dlnq itself (kvq_sums_in_post)
        rec["rows_post_sums"] = kern("rows_post", dict(H=H, D=128, BLOCK_M=cfg.block_m,
                                                       SUMS=True), (),
                                     cfg.num_warps, 1, H, 64 // cfg.block_m, share=H)
    rec["kvq"] = {}
    for bm, w, st, dqt, post in kvq_tiles:
        mid = kern("kvq", dict(H=H, HKV=H, D=128, ACT=A, BLOCK_M=bm, BLOCK_L=128, DQ_T=dqt,
                               HAS_PART=not post), (),
                   w, st, 64 // bm, 1, once=seq)
        rest = (rec["rows_pre"]["warp_instructions"]
                + rec["rows_post_sums" if post else "rows_post"]["warp_instructions"])
        flags = ("t" if dqt else "") + ("p" if post else "")
        rec["kvq"][f"{bm}:{w}:{st}" + (f":{flags}" if flags else "")] = dict(
            kernel=mid, total=rest + mid["warp_instructions"])
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--acts", default="gelu_tanh,softmax")
    ap.add_argument("--heads", default="2")
    ap.add_argument("--kvq", default="16:8:2,16:8:2:t,32:8:2:t",
                    help="the kvq kernel's tiles, BLOCK_M:warps:stages[:FLAGS] (FLAGS: 't' dQ "
                         "transposed, 'p' the LayerNorm's row sums in rows_post)")
    ap.add_argument("--seq-rows", type=int, default=512,
                    help="rows of a sequence (the benchmark's mean at max length 1024: ~505)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    recs = []
    for act in a.acts.split(","):
        for H in (int(h) for h in a.heads.split(",")):
            rec = measure(act, H, parse_kvq(a.kvq), a.seq_rows)
            recs.append(rec)
            print(f"{act} H={H}: split {rec['split']:.0f} warp instructions per 64 rows and head "
                  f"(rows {rec['rows_saved']['warp_instructions']:.0f}, dK/dV "
                  f"{rec['kv']['warp_instructions']:.0f}); kvq plan "
                  + ", ".join(f"{k} {v['total']:.0f} ({v['kernel']['spills']} B spilled)"
                              for k, v in rec["kvq"].items())
                  + f" (rows_pre {rec['rows_pre']['warp_instructions']:.0f}, rows_post "
                  f"{rec['rows_post']['warp_instructions']:.0f}"
                  + (f", rows_post summing dlnq {rec['rows_post_sums']['warp_instructions']:.0f}"
                     if "rows_post_sums" in rec else "") + ")", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(recs, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
