"""H200, under Nsight Compute: where the lowered GEMM (the backbone) and the fused pre-norm GEMM
spend their time against cuBLAS, one launch each, NVTX-tagged.

    ncu --clock-control none --nvtx --nvtx-include "profile/" --section SpeedOfLight \
        --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
        --section LaunchStats --section Occupancy --csv --page details \
        python3 bench/ncu_backbone.py 262144x512x512 8192x2048x512

Each cell M x K x N (x [M, K], W [N, K], bf16): torch.matmul (cuBLAS), the plain GEMM lowered by
hopper-ws (`prepare_plain_linear(passes=("hopper-ws",))`, the summary's backbone) and
`prepare_rmsnorm_linear` (the fused op's default plan), each warmed up, then launched once in
an NVTX range `<cell>:<name>` inside one named `profile`. Without ncu it prints do_bench medians and each launch's
compiled configuration (tile, stages, schedule), so a run shows both. A cell written
`post:MxKxN` profiles the post-norm op instead: `linear_rmsnorm`'s default plan (the lowered
form where the op takes it: `summary._post_default`) as "fused", against the same cuBLAS and
backbone (the GEMM of x [M, K] and W [N, K] either way). A cell written `ln:MxKxN` profiles
`layernorm_linear`'s default plan as "fused" and keeps the RMSNorm op as "rms", so the two
pre-norm kernels of one shape sit in one report.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def cell_inputs(cell: str):
    """(M, K, N, x, w, g, y, the backbone's prepared launch, the fused op's) of "MxKxN": x [M, K],
    W [N, K] scaled by 1 / sqrt(K), g near 1, y for cuBLAS, bf16, seed 0 (`bench/summary_probe.py`
    builds its cells here too)."""
    import torch
    from normfuse.ops import prenorm_linear as pre
    M, K, N = (int(v) for v in cell.split("x"))
    torch.manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
    g = (1 + 0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    bb = pre.prepare_plain_linear(x, w, passes=("hopper-ws",))
    fu = pre.prepare_rmsnorm_linear(x, g, w, 1e-6)
    return M, K, N, x, w, g, y, bb, fu


def post_inputs(cell: str):
    """`cell_inputs` with "fused" the post-norm op linear_rmsnorm (norm over N, g of size N)."""
    import torch
    from normfuse.ops import postnorm_linear as post
    from normfuse.repro.summary import _post_default
    M, K, N, x, w, g, y, bb, _ = cell_inputs(cell)
    gn = (1 + 0.1 * torch.randn(N, device="cuda")).to(torch.bfloat16)
    fu = post.prepare_linear_rmsnorm(x, w, gn, 1e-6, **_post_default("rms", M, N, K))
    return M, K, N, x, w, g, y, bb, fu


def ln_inputs(cell: str):
    """`cell_inputs` with "fused" the pre-norm op layernorm_linear (norm weight and bias over K);
    the RMSNorm op comes back as the tenth value."""
    import torch
    from normfuse.ops import prenorm_linear as pre
    M, K, N, x, w, g, y, bb, rms = cell_inputs(cell)
    beta = (0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
    fu = pre.prepare_layernorm_linear(x, g, beta, w, 1e-5)
    return M, K, N, x, w, g, y, bb, fu, rms


def time_and_profile(cell: str, runs: dict) -> None:
    """Each launch of `runs` ({name: a no-argument launch}) timed by do_bench (median, printed),
    then launched once more in an NVTX range `<cell>:<name>` inside one range `profile` (what
    ncu's `--nvtx-include "profile/"` selects)."""
    import torch
    from triton.testing import do_bench
    for name, fn in runs.items():
        ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
        print(f"{cell} {name}: {ms:.4f} ms", flush=True)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    for name, fn in runs.items():
        torch.cuda.nvtx.range_push(f"{cell}:{name}")
        fn()
        torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def main(cells):
    import torch
    for cell in cells:
        kind, _, shape = cell.rpartition(":")
        extra = {}
        if kind == "ln":
            M, K, N, x, w, g, y, bb, fu, rms = ln_inputs(shape)
            extra = {"rms": rms}
        else:
            M, K, N, x, w, g, y, bb, fu = (post_inputs if kind == "post" else cell_inputs)(shape)
        runs = {"cublas": lambda: torch.matmul(x, w.T, out=y), "backbone": bb.launch,
                "fused": fu.launch, **{k: p.launch for k, p in extra.items()}}
        for name, p in (("backbone", bb), ("fused", fu), *extra.items()):
            print(f"{cell} {name}: config {getattr(p, 'config', None)}", flush=True)
        time_and_profile(cell, runs)


if __name__ == "__main__":
    main(sys.argv[1:] or ["262144x512x512", "8192x2048x512"])
