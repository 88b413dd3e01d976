"""Is a cuBLAS call's host time longer right after a normfuse launch? In the model benchmark's
processes every C-level call of a normfuse configuration took about twice its stock time
(F.linear 62 vs 29 us in BERT's eager prefill, addmm 62 vs 25 us in GPT-2's compiled one;
bench/host_profile.py on the H200, 2026-12-02). This times, with a sync before each sequence,
the host time of the last call of short sequences: F.linear alone, after another F.linear,
after a normfuse post-norm / pre-norm op call, after a plain Triton kernel, with the garbage
collector on and off.

    PYTHONPATH=python python3 bench/launch_probe.py [--m 8192] [--k 1024] [--n 1024] [--reps 200]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=8192)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F
    import triton
    import triton.language as tl

    from normfuse.ops import functional as nf

    @triton.jit
    def _copy(x, y, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)

    dev, dt = "cuda", torch.bfloat16
    x = torch.randn(a.m, a.k, device=dev, dtype=dt)
    r = torch.randn(a.m, a.n, device=dev, dtype=dt)
    w = torch.randn(a.n, a.k, device=dev, dtype=dt) * a.k ** -0.5
    b = torch.randn(a.n, device=dev, dtype=dt)
    g, beta = torch.rand(a.n, device=dev, dtype=dt) + 0.5, torch.randn(a.n, device=dev, dtype=dt)
    gk = torch.rand(a.k, device=dev, dtype=dt) + 0.5
    small = torch.randn(4096, device=dev, dtype=dt)
    out = torch.empty_like(small)

    calls = {
        "F.linear": lambda: F.linear(x, w, b),
        "F.layer_norm": lambda: F.layer_norm(r, (a.n,), g, beta, 1e-5),
        "normfuse linear_layernorm": lambda: nf.linear_layernorm(x, w, g, beta, 1e-5, b, r),
        "normfuse rmsnorm_linear": lambda: nf.rmsnorm_linear(x, gk, w, 1e-6, b),
        "triton copy kernel": lambda: _copy[(1,)](small, out, 4096, BLOCK=4096),
        "torch.add": lambda: small + small,
    }
    seqs = [("F.linear",), ("F.linear", "F.linear"), ("torch.add", "F.linear"),
            ("triton copy kernel", "F.linear"), ("normfuse linear_layernorm", "F.linear"),
            ("normfuse rmsnorm_linear", "F.linear"), ("normfuse linear_layernorm",),
            ("normfuse linear_layernorm", "normfuse linear_layernorm"),
            ("F.linear", "normfuse linear_layernorm"), ("F.layer_norm",),
            ("normfuse linear_layernorm", "F.layer_norm"),
            ("normfuse linear_layernorm", "torch.add"), ("torch.add",)]
    with torch.no_grad():
        for f in calls.values():  # warm-up (compilation, plans, cuBLAS heuristics)
            for _ in range(3):
                f()
        torch.cuda.synchronize()
        for gc_on in (True, False):
            (gc.enable if gc_on else gc.disable)()
            print(f"\n== gc {'on' if gc_on else 'off'}: host us of the LAST call of each sequence "
                  f"(median / p10 of {a.reps}; sync before each sequence)")
            rows = {}
            for rep in range(a.reps):  # sequences interleaved, round by round
                for s in seqs:
                    torch.cuda.synchronize()
                    for name in s[:-1]:
                        calls[name]()
                    t0 = time.perf_counter()
                    calls[s[-1]]()
                    rows.setdefault(s, []).append((time.perf_counter() - t0) * 1e6)
            for s, ts in rows.items():
                ts.sort()
                print(f"  {' -> '.join(s):60s} {statistics.median(ts):8.1f} {ts[len(ts) // 10]:8.1f}")
        gc.enable()
        _layers(a, torch, nf, x, w, g, beta, b, r)
        _pre_layers(a, torch, nf)
    return 0


def _pre_layers(a, torch, nf, M=8192, K=1280, N=3840) -> None:
    """The same for the pre-norm op at GPT-2's c_attn (LayerNorm, [K, N] Conv1D weight read
    transposed, bias): the eager public call with `weight.t()`, the op through the dispatcher
    with weight_kn (the Inductor pass's call), the launch-ready call, the plan's launch."""
    from normfuse.ops import inference
    dev, dt = "cuda", torch.bfloat16
    x = torch.randn(4, M // 4, K, device=dev, dtype=dt)
    wkn = torch.randn(K, N, device=dev, dtype=dt) * K ** -0.5
    b = torch.randn(N, device=dev, dtype=dt)
    g, beta = torch.rand(K, device=dev, dtype=dt) + 0.5, torch.randn(K, device=dev, dtype=dt)
    op = torch.ops.normfuse.prenorm_linear.default
    op(x, g, beta, [wkn], [b], 1e-5, 0.0, True, True, True)
    wt = wkn.t()
    call = inference.pre_call(x, g, beta, [wkn], [b], 1e-5, 0.0, True, True, True)
    if call is None:
        print("no launch-ready pre-norm call")
        return
    y = x.new_empty(call.view)
    args = (x, *call.pre, y, *call.post)
    layers = {
        "normfuse.ops.layernorm_linear (public, weight.t())": lambda: nf.layernorm_linear(
            x, g, beta, wkn.t(), 1e-5, b),
        "torch.ops.normfuse.prenorm_linear (dispatcher, weight_kn)": lambda: op(
            x, g, beta, [wkn], [b], 1e-5, 0.0, True, True, True),
        "inference.prenorm_linear (implementation, weight_kn)": lambda:
            inference.prenorm_linear(x, g, beta, [wkn], [b], 1e-5, 0.0, True, True, True),
        "_PreCall (launch-ready call)": lambda: call(x),
        "plan.run (the launch)": lambda: call.plan.run(args),
        "F.linear + F.layer_norm (what it replaces, eager)": lambda: torch.nn.functional.linear(
            torch.nn.functional.layer_norm(x, (K,), g, beta, 1e-5), wt, b),
    }
    _print_rows(torch, f"pre-norm op at {M} x {K} x {N} (LN, Conv1D weight): host us per call",
                layers, a.reps, 60)
    print(f"  plan: {type(call.plan).__name__}, lowered: "
          f"{getattr(call.plan, 'lowered', None) is not None}")


def _layers(a, torch, nf, x, w, g, beta, b, r) -> None:
    """The post-norm op's host time layer by layer, each call following the same call (no sync
    in between; medians of a.reps): the public function, the inference op's implementation,
    its launch-ready call, the plan's launch, the output's allocation."""
    from normfuse.ops import inference
    x3, r3 = x.view(4, -1, x.shape[-1]), r.view(4, -1, r.shape[-1])
    nf.linear_layernorm(x3, w, g, beta, 1e-5, b, r3)
    call = inference.post_call(x3, w, g, beta, b, r3, 1e-5, 0.0, True)
    if call is None:
        print("no launch-ready call (plan not lowered?)")
        return
    y = x3.new_empty(call.view)
    args = (x3, *call.pre, r3, *call.mid, y)
    layers = {
        "normfuse.ops.linear_layernorm (public)": lambda: nf.linear_layernorm(
            x3, w, g, beta, 1e-5, b, r3),
        "torch.ops.normfuse.postnorm_linear (dispatcher)": lambda:
            torch.ops.normfuse.postnorm_linear.default(x3, w, g, beta, b, r3, 1e-5, 0.0, True),
        "inference.postnorm_linear (implementation)": lambda: inference.postnorm_linear(
            x3, w, g, beta, b, r3, 1e-5, 0.0, True),
        "_PostCall (launch-ready call)": lambda: call(x3, r3),
        "plan.run (the launch)": lambda: call.plan.run(args),
        "new_empty (the output)": lambda: x3.new_empty(call.view),
        "F.linear (cuBLAS)": lambda: torch.nn.functional.linear(x3, w, b),
    }
    _print_rows(torch, "host us per call", layers, a.reps, 55)


def _print_rows(torch, title: str, layers: dict, reps: int, width: int) -> None:
    """Each row's host us per call: `reps` calls back to back, 5 rounds, the median round."""
    import timeit
    print(f"\n== {title}, {reps} calls back to back per row, 5 rounds (median)")
    for name, f in layers.items():
        ts = []
        for _ in range(5):
            torch.cuda.synchronize()
            ts.append(timeit.timeit(f, number=reps) / reps * 1e6)
        torch.cuda.synchronize()
        print(f"  {name:{width}s} {sorted(ts)[2]:8.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
