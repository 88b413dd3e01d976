"""Where does our Triton GEMM main loop lose to cuBLAS on the blog grid? (exploration, H200)

Times the plain GEMM Y = X @ W^T (bf16, fp32 accumulate) in several Triton 3.6 forms, next to
cuBLAS, on the shapes of issues 2 and 3:

  np-*    non-persistent, one tile per program (today's kernels' structure, kernels/gemm.py)
  pers-*  persistent: 132 programs walk the tiles; `tl.range(..., flatten=True)` lets Triton's
          pipeliner issue the next tile's loads while the current tile's epilogue runs
  *-2cta  128x128 tiles with 4 warps and 3 stages: small enough for two CTAs per SM, so one
          CTA's epilogue overlaps the other's main loop without a persistent loop

The persistent kernels here are benchmark references (not product kernels): they say what the
passes' output would gain from a persistent structure. Writes JSON + markdown under --out.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from normfuse.kernels.gemm import gemm_plain  # noqa: E402
from normfuse.reference import rel_err  # noqa: E402


@triton.jit
def _pid(tile, num_in_group, num_m, GROUP_M: tl.constexpr):
    group = tile // num_in_group
    first_m = group * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    return first_m + (tile % size_m), (tile % num_in_group) // size_m


@triton.jit
def gemm_persistent_tma(X, W, Y, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                        SUBTILE: tl.constexpr, FLATTEN: tl.constexpr):
    start = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_m * num_n
    x_desc = tl.make_tensor_descriptor(X, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(W, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    if SUBTILE:
        y_desc = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1],
                                           block_shape=[BLOCK_M, BLOCK_N // 2])
    else:
        y_desc = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1],
                                           block_shape=[BLOCK_M, BLOCK_N])
    num_in_group = GROUP_M * num_n
    tile_c = start - NUM_SMS
    for tile in tl.range(start, num_tiles, NUM_SMS, flatten=FLATTEN):
        pid_m, pid_n = _pid(tile, num_in_group, num_m, GROUP_M)
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k in range(k_tiles):
            a = x_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = w_desc.load([pid_n * BLOCK_N, k * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        tile_c += NUM_SMS
        pid_m, pid_n = _pid(tile_c, num_in_group, num_m, GROUP_M)
        if SUBTILE:
            acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc0.to(Y.dtype.element_ty))
            y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], acc1.to(Y.dtype.element_ty))
        else:
            y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(Y.dtype.element_ty))


@triton.jit
def gemm_persistent_rms(X, W, G, Y, M, K, eps, N: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr, FLATTEN: tl.constexpr):
    """Benchmark reference only: persistent GEMM whose tile is the whole row (N <= 256), RMSNorm
    in registers before the single store. Says what a persistent epilogue-norm would run at."""
    start = tl.program_id(0)
    num_tiles = tl.cdiv(M, BLOCK_M)
    k_tiles = tl.cdiv(K, BLOCK_K)
    x_desc = tl.make_tensor_descriptor(X, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(W, shape=[N, K], strides=[K, 1], block_shape=[N, BLOCK_K])
    y_desc = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, N])
    g = tl.load(G + tl.arange(0, N)).to(tl.float32)
    tile_c = start - NUM_SMS
    for tile in tl.range(start, num_tiles, NUM_SMS, flatten=FLATTEN):
        acc = tl.zeros([BLOCK_M, N], dtype=tl.float32)
        for k in range(k_tiles):
            a = x_desc.load([tile * BLOCK_M, k * BLOCK_K])
            b = w_desc.load([0, k * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        tile_c += NUM_SMS
        rstd = 1.0 / tl.sqrt(tl.sum(acc * acc, axis=1) / N + eps)
        y_desc.store([tile_c * BLOCK_M, 0], (acc * rstd[:, None] * g[None, :]).to(Y.dtype.element_ty))


def _bench(row: dict, name: str, fn, y, ref, flops: float) -> None:
    """Poison y, run fn once for the error vs ref, then time it; row[name] gets ms, TFLOP/s and
    the error, or the exception (a config that does not compile is a result too)."""
    try:
        y.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = rel_err(y, ref)
        ms = triton.testing.do_bench(fn, warmup=25, rep=100)
        row[name] = {"ms": ms, "tflops": flops / ms / 1e9, "err": err}
    except Exception as e:  # noqa: BLE001
        row[name] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
    print(row["M"], row["K"], row["N"], name, row[name], flush=True)


CELLS = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)] + [
    (8192, 4096, 4096), (32768, 4096, 8192)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench_out")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    dev = torch.cuda.get_device_properties(0)
    sms = dev.multi_processor_count
    cells = CELLS[:3] if args.quick else CELLS
    rows = []
    for (M, K, N) in cells:
        torch.manual_seed(0)
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K ** 0.5
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        ref = x @ w.T
        flops = 2.0 * M * N * K
        row = {"M": M, "K": K, "N": N}

        def bench(name, fn):
            _bench(row, name, fn, y, ref, flops)

        bench("cublas", lambda: torch.matmul(x, w.T, out=y))
        for (bm, bn, bk, nw, ns, tma, tag) in [(128, 256, 64, 8, 3, False, "np-128x256-s3"),
                                               (128, 256, 64, 8, 3, True, "np-128x256-s3-tma"),
                                               (128, 128, 64, 4, 3, False, "np-128x128-w4-s3-2cta"),
                                               (128, 128, 64, 4, 3, True, "np-128x128-w4-s3-2cta-tma"),
                                               (128, 256, 64, 8, 2, True, "np-128x256-s2-tma")]:
            grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
            bench(tag, lambda bm=bm, bn=bn, bk=bk, nw=nw, ns=ns, tma=tma, grid=grid: gemm_plain[grid](
                x, w, y, M, N, K, x.stride(0), w.stride(0), y.stride(0), EVEN_K=K % bk == 0,
                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, USE_TMA=tma, num_warps=nw, num_stages=ns))
        for (bm, bn, bk, nw, ns, sub, fl, tag) in [(128, 256, 64, 8, 3, False, True, "pers-128x256-s3"),
                                                   (128, 256, 64, 8, 3, True, True, "pers-128x256-s3-sub"),
                                                   (128, 256, 64, 8, 4, True, True, "pers-128x256-s4-sub"),
                                                   (128, 256, 64, 8, 3, True, False, "pers-128x256-s3-sub-noflat"),
                                                   (128, 128, 64, 8, 4, False, True, "pers-128x128-s4"),
                                                   (128, 128, 64, 4, 3, False, True, "pers-128x128-w4-s3-2cta")]:
            per_sm = 2 if tag.endswith("2cta") else 1
            grid = (min(per_sm * sms, triton.cdiv(M, bm) * triton.cdiv(N, bn)),)
            bench(tag, lambda bm=bm, bn=bn, bk=bk, nw=nw, ns=ns, sub=sub, fl=fl, grid=grid:
                  gemm_persistent_tma[grid](x, w, y, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                            GROUP_M=8, NUM_SMS=grid[0], SUBTILE=sub, FLATTEN=fl,
                                            num_warps=nw, num_stages=ns))
        rows.append(row)
    # one extra line: the persistent whole-row RMSNorm epilogue at N = 256 (one CTA per row block)
    for (M, K, N) in ([(262144, 512, 256), (262144, 2048, 256)]):
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / K ** 0.5
        g = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        row = {"M": M, "K": K, "N": N}
        h = (x.double() @ w.double().T)
        ref = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * g.double()
        flops = 2.0 * M * N * K

        def bench2(name, fn):
            _bench(row, name, fn, y, ref, flops)

        bench2("cublas", lambda: torch.matmul(x, w.T, out=y))
        for fl in (True, False):
            for bm, nw, ns in ((128, 8, 3), (128, 8, 4), (64, 4, 4)):
                grid = (min(sms, triton.cdiv(M, bm)),)
                bench2(f"pers-rms-{bm}-w{nw}-s{ns}{'' if fl else '-noflat'}",
                       lambda bm=bm, nw=nw, ns=ns, fl=fl, grid=grid: gemm_persistent_rms[grid](
                           x, w, g, y, M, K, 1e-6, N=N, BLOCK_M=bm, BLOCK_K=64, NUM_SMS=grid[0],
                           FLATTEN=fl, num_warps=nw, num_stages=ns))
        rows.append(row)
    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "gpu": dev.name, "sms": sms, "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda}
    with open(os.path.join(args.out, "mainloop.json"), "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1)
    names = []
    for r in rows:
        for k in r:
            if k not in ("M", "K", "N") and k not in names:
                names.append(k)
    lines = [f"# Triton GEMM main-loop forms vs cuBLAS, {env['gpu']}", "",
             f"{env['date']}; torch {env['torch']}, triton {env['triton']}, CUDA {env['cuda']}; bf16; "
             "ms (do_bench median), in brackets time / cuBLAS", ""]
    lines.append("| M | K | N | " + " | ".join(names) + " |")
    lines.append("|---" * (3 + len(names)) + "|")
    for r in rows:
        cb = r["cublas"].get("ms")
        cells = []
        for k in names:
            v = r.get(k)
            if v is None:
                cells.append("")
            elif "ms" in v:
                cells.append(f"{v['ms']:.3f} ({v['ms'] / cb:.2f})" if cb else f"{v['ms']:.3f}")
            else:
                cells.append("fail")
        lines.append(f"| {r['M']} | {r['K']} | {r['N']} | " + " | ".join(cells) + " |")
    with open(os.path.join(args.out, "mainloop.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
