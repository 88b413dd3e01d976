"""H200, under Nsight Compute: where FlashNormAttention's fused forward spends the time that the
unfused pipeline's attention core does not (issue 22: the fused kernel costs 0.39-0.60 of the two
compiled norms beyond its core, session 21), one launch each, NVTX-tagged.

    ncu --set full --import-source yes --nvtx --nvtx-include "profile/" -o prof \
        python3 bench/ncu_fna.py softmax:4:3000
    ncu -i prof.ncu-rep --page details --csv > details.csv
    ncu -i prof.ncu-rep --nvtx-include "profile/softmax:4:3000:fused" --page source --csv \
        --print-source sass > fused.csv          (then bench/ncu_source.py fused.csv)

A cell `ACT:H:MAX_LEN` (act softmax or gelu_tanh) is the main job's cell (`bench_attention._cell`:
B = 768 sequences of random lengths in [0, MAX_LEN], L = 128 keys, D = 128, bf16, the same seed):
"fused" the op's kernel as `prepare_flash_norm_attention` launches it, "core" the unfused
pipeline's attention core over the normalized queries (the K / V-resident walk of 512 rows, the
main job's fastest core), "ln" and "post" the compiled norms around it. Without ncu it prints
do_bench medians of the four, so a run shows both.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def cell_launches(cell: str, **prepare) -> dict:
    """{name: a no-argument launch} of one cell (see the module doc); `prepare`: more keywords
    of the fused kernel's `prepare_flash_norm_attention` (stats_ahead=True, say)."""
    import torch
    from normfuse.ops.common import row_block_table
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    from normfuse.reference_attention import default_qk_scale
    from normfuse.repro import bench_attention as A
    act, H, max_len = cell.split(":")
    H, max_len, B, L, D = int(H), int(max_len), 768, 128, 128
    gen = torch.Generator().manual_seed(7 * H + max_len)  # (bench_attention._cell, seed 0)
    lens = A._lengths(B, max_len, gen)
    offs = torch.zeros(B + 1, dtype=torch.int32)
    offs[1:] = torch.cumsum(lens, 0)
    T, N = int(offs[-1]), H * D
    x = torch.randn(T, H, D, device="cuda", dtype=torch.bfloat16)
    k = (torch.randn(B, L, H, D, device="cuda") / D ** 0.5).to(torch.bfloat16)
    v = torch.randn(B, L, H, D, device="cuda", dtype=torch.bfloat16)
    offs = offs.to("cuda")
    p = prepare_flash_norm_attention(x, k, v, offs, activation=act, **prepare)
    ln_fn, post_fn = A._compiled_norms()
    x2 = x.view(T, N)
    ln = ln_fn(x2)
    o = torch.empty_like(x)
    rows = 512
    chunks = row_block_table(offs, rows)
    scale = default_qk_scale(act, D)

    def core():
        A.attention_core_kv_resident[(chunks.shape[0], H)](
            ln.view(T, H, D), k, v, o, chunks, scale, H=H, HKV=H, D=D, L=L, BLOCK_M=64, ROWS=rows,
            ACT=A.ACT_CODES[act], num_warps=4, num_stages=2)
    print(f"{cell}: T = {T}, fused kernel constexprs {getattr(p, 'constexprs', {})}", flush=True)
    return {"fused": p.launch, "core": core, "ln": lambda: ln_fn(x2),
            "post": lambda: post_fn(o.view(T, N), ln, x2)}


def main(cells):
    from ncu_backbone import time_and_profile  # (this directory: bench/)
    for cell in cells:
        runs = cell_launches(cell)
        for fn in runs.values():  # (compiles: the fused kernel, the core, the norms' graphs)
            fn()
        time_and_profile(cell, runs)


if __name__ == "__main__":
    main(sys.argv[1:] or ["softmax:4:3000"])
