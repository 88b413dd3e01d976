"""Write the obvious RMSNorm + GEMM kernel in Triton; normfuse fuses it and lowers it for sm_90.

    PYTHONPATH=python python3 examples/compile_kernel.py [--ttir FILE]

Compiles ahead of time for sm_90 (no GPU needed), prints the passes' remarks, the loops before
and after, and whether hopper-ws lowered the kernel to the warp-specialized template. On a
Hopper GPU it also launches the kernel through `normfuse.jit` and checks it against torch.
`--ttir FILE` writes the kernel's TTIR before the passes (the input of `normfuse-opt`,
docs/guide.md).
"""
import argparse

import torch
import triton
import triton.language as tl

import normfuse


@triton.jit
def rmsnorm_matmul(X, G, W, Y, M, N, K, stride_xm, stride_wn, stride_ym, eps,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Y = rmsnorm(X) diag(G) @ W^T, one program per [BM, BN] tile of Y."""
    pid_m = tl.program_id(0) // tl.cdiv(N, BN)
    pid_n = tl.program_id(0) % tl.cdiv(N, BN)
    rows = pid_m * BM + tl.arange(0, BM)
    cols = pid_n * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    # loop 1: the rows' mean square
    ss = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(X + rows[:, None] * stride_xm + (k + ks)[None, :],
                    mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0).to(tl.float32)
        ss += tl.sum(x * x, axis=1)
    rstd = 1.0 / tl.sqrt(ss / K + eps)
    # loop 2: the GEMM on the normalized rows
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(X + rows[:, None] * stride_xm + (k + ks)[None, :],
                    mask=(rows[:, None] < M) & ((k + ks)[None, :] < K), other=0.0).to(tl.float32)
        g = tl.load(G + k + ks, mask=(k + ks) < K, other=0.0).to(tl.float32)
        a = (x * rstd[:, None] * g[None, :]).to(tl.bfloat16)
        w = tl.load(W + cols[None, :] * stride_wn + (k + ks)[:, None],
                    mask=(cols[None, :] < N) & ((k + ks)[:, None] < K), other=0.0)
        acc = tl.dot(a, w, acc)
    tl.store(Y + rows[:, None] * stride_ym + cols[None, :], acc.to(tl.bfloat16),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ttir", help="write the TTIR before the passes here")
    a = ap.parse_args()
    M, N, K = 4096, 1024, 1024
    # example arguments: CPU tensors are enough to specialize the kernel (dtype, 16-byte alignment)
    x, g = torch.empty(M, K, dtype=torch.bfloat16), torch.empty(K, dtype=torch.bfloat16)
    w, y = torch.empty(N, K, dtype=torch.bfloat16), torch.empty(M, N, dtype=torch.bfloat16)
    args = (x, g, w, y, M, N, K, x.stride(0), w.stride(0), y.stride(0), 1e-6)
    tiles = dict(BM=128, BN=128, BK=64)
    ck = normfuse.compile(rmsnorm_matmul, args=args, constexprs=tiles, target="cuda:90",
                          num_warps=8, num_stages=3)                   # passes="default"
    for r in ck.remarks:
        print(r[r.index("["):][:160])                                  # drop the location
    print(f"k-loops: {ck.asm['ttir'].count('scf.for ')} before the passes, "
          f"{ck.asm['normfuse'].count('scf.for ')} after")
    print("lowered by hopper-ws:", ck.lowered is not None,
          "| warp-specialized TTGIR:", "ttg.warp_specialize" in ck.asm["ttgir"],
          "| wgmma in the PTX:", "wgmma" in ck.asm["ptx"])
    if a.ttir:
        naive = normfuse.compile(rmsnorm_matmul, args=args, constexprs=tiles, passes=(),
                                 num_warps=8, num_stages=3)
        with open(a.ttir, "w") as f:
            f.write(naive.asm["ttir"])
        print("TTIR before the passes written to", a.ttir)

    if torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0):
        dev = dict(device="cuda", dtype=torch.bfloat16)
        x, g = torch.randn(M, K, **dev), 1 + 0.1 * torch.randn(K, **dev)
        w, y = torch.randn(N, K, **dev) / K ** 0.5, torch.empty(M, N, **dev)
        fused = normfuse.jit(rmsnorm_matmul)                          # passes="default"
        grid = (triton.cdiv(M, 128) * triton.cdiv(N, 128),)
        fused[grid](x, g, w, y, M, N, K, x.stride(0), w.stride(0), y.stride(0), 1e-6,
                    num_warps=8, num_stages=3, **tiles)
        ref = torch.nn.functional.rms_norm(x.float(), (K,), g.float(), 1e-6) @ w.float().T
        print(f"on the GPU: relative error vs fp32 torch {((y.float() - ref).norm() / ref.norm()).item():.1e}")
    else:
        print("no Hopper GPU: launching skipped (compiled ahead of time only)")


if __name__ == "__main__":
    main()
