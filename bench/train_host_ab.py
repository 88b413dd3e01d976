"""Host time of one eager training step (forward + backward) per training op, with the ops'
eager fast path (`normfuse.ops.common.AutogradOp`) and without it (every call through the
torch.library op and its registered autograd), interleaved over rounds. CPU, no GPU needed:
launches stubbed as `bench/host_overhead.py --stub launcher` does, CPU tensors standing in
(the CPU's own matmuls and casts are included, on both sides alike).

    PYTHONPATH=python python3 bench/train_host_ab.py [--m 16] [--k 128] [--n 128]
        [--steps 300] [--rounds 3] [--launches]

Prints us a step (the fastest round) per op and path. `--launches`: also, per op (fast path),
when each Triton launch of a step leaves the host, in us from the call (medians over --steps
steps; the forward's and the backward's, each from its own start). On the GPU a kernel cannot
start before its launch: a forward's first launch later than the device's previous work (in
`bench_training`'s pairs, the L2 flush, ~80 us) is idle device time. cuBLAS's GEMMs run as the
CPU's matmuls here and are not launches.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--k", type=int, default=128)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--launches", action="store_true",
                    help="also when each launch of a step leaves the host (fast path)")
    args = ap.parse_args(argv)
    import warnings
    warnings.simplefilter("ignore")
    import torch
    import host_overhead
    host_overhead.stub_device("launcher")
    stamps: list = []
    if args.launches:  # (before any launcher is built: they take the driver's C function then)
        host_overhead.DRIVER._c = lambda *a: stamps.append(time.perf_counter())
    import normfuse.ops as ops
    from normfuse.ops import common

    gen = torch.Generator().manual_seed(0)
    M, K, N = args.m, args.k, args.n

    def leaf(*s, scale=1.0):
        return (torch.randn(*s, generator=gen) * scale).bfloat16().requires_grad_(True)
    x, g, b, w = leaf(M, K), leaf(K), leaf(K), leaf(N, K, scale=K ** -0.5)
    gn, bn = leaf(N), leaf(N)
    w1, w2, g1, g2 = leaf(N, K, scale=K ** -0.5), leaf(K, N, scale=N ** -0.5), leaf(N), leaf(K)
    dy, dyk = torch.randn(M, N).bfloat16(), torch.randn(M, K).bfloat16()
    cases = {"rmsnorm_linear": (lambda: ops.rmsnorm_linear(x, g, w), dy),
             "layernorm_linear": (lambda: ops.layernorm_linear(x, g, b, w), dy),
             "linear_rmsnorm": (lambda: ops.linear_rmsnorm(x, w, gn), dy),
             "linear_layernorm": (lambda: ops.linear_layernorm(x, w, gn, bn), dy),
             "postnorm_mlp": (lambda: ops.postnorm_mlp(x, w1, g1, None, None, w2, g2, None, None),
                              dyk)}
    params = [x, g, b, w, gn, bn, w1, w2, g1, g2]
    real = common.plain_eager

    def timed(f, d) -> float:
        def step():
            for t in params:
                t.grad = None
            f().backward(d)
        for _ in range(10):
            step()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        return (time.perf_counter() - t0) / args.steps * 1e6
    def launches(f, d) -> str:
        """Median us from the forward's / the backward's start to each of their launches."""
        import statistics
        fw, bw = [], []
        for i in range(args.steps + 10):
            for t in params:
                t.grad = None
            stamps.clear()
            t0 = time.perf_counter()
            y = f()
            t1 = time.perf_counter()
            nf = len(stamps)
            y.backward(d)
            if i >= 10:
                fw.append([s - t0 for s in stamps[:nf]] + [t1 - t0])
                bw.append([s - t1 for s in stamps[nf:]] + [time.perf_counter() - t1])
        def med(rows) -> str:
            n = min(len(r) for r in rows)
            cols = [statistics.median(r[j] for r in rows) * 1e6 for j in range(n)]
            return ", ".join(f"{c:.0f}" for c in cols[:-1]) + f"; returns at {cols[-1]:.0f}"
        return f"forward launches at {med(fw)} us; backward launches at {med(bw)} us"
    try:
        for name, (f, d) in cases.items():
            best = {}
            for _ in range(args.rounds):
                for path, fn in (("op", lambda a: False), ("eager", real)):
                    common.plain_eager = fn
                    best[path] = min(best.get(path, float("inf")), timed(f, d))
            print(f"{name}: op path {best['op']:.0f} us a step, eager path {best['eager']:.0f} us "
                  f"({best['op'] - best['eager']:.0f} us less)")
            if args.launches:
                common.plain_eager = real
                print(f"  {name}: {launches(f, d)}")
    finally:
        common.plain_eager = real
    return 0


if __name__ == "__main__":
    sys.exit(main())
