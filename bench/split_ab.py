"""The sibling groups of the Liger-composed models on the GPU: what each way of computing
norm(x) @ [W_1; ..; W_n]^T into one CONTIGUOUS tensor per sibling costs (the outputs Liger's RoPE
and SwiGLU need), at the model benchmark's T = 8192 (bf16, device time of the whole group).

    PYTHONPATH=python python3 bench/split_ab.py [--t 8192] [--rounds 3] [--json out.json]

Per group (Llama q/k/v and gate/up, Qwen2 q/k/v with biases and gate/up):
    each        one fused op per sibling (`rmsnorm_linear` on each weight): what optimize runs
                today where a consumer makes its output contiguous
    split       `rmsnorm_linear_split`: one GEMM, each output tile stored into its sibling's
                own tensor (the lowered kernel's split output)
    joined+copy `rmsnorm_linear` over the weight list, then `.contiguous()` of each column slice
    norm+cublas the standalone norm op once, then cuBLAS per sibling (Liger's RMSNorm + linears)
    cublas      cuBLAS per sibling on a normalized input (no norm): the floor
Each is checked first (the split members bitwise equal to the joined op's columns, every way
within bf16 error of the joined op), then timed with `triton.testing.do_bench` in `--rounds`
round-robin rounds (the median kept).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

GROUPS = {  # name: (K, widths, biases)
    "llama qkv": (2048, (2048, 512, 512), False),
    "llama gate/up": (2048, (5632, 5632), False),
    "qwen2 qkv": (1536, (1536, 256, 256), True),
    "qwen2 gate/up": (1536, (8960, 8960), False),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", type=int, default=8192)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import warnings

    import torch
    import triton
    from normfuse import ops
    from normfuse.reference import rel_err
    warnings.simplefilter("ignore", RuntimeWarning)
    torch.manual_seed(0)
    rows = {}
    for name, (K, widths, with_bias) in GROUPS.items():
        x = torch.randn(a.t, K, device="cuda").bfloat16()
        g = (1 + 0.1 * torch.randn(K, device="cuda")).bfloat16()
        ws = [(torch.randn(n, K, device="cuda") / K ** 0.5).bfloat16() for n in widths]
        bs = [(0.1 * torch.randn(n, device="cuda")).bfloat16() for n in widths] if with_bias \
            else [None] * len(widths)
        n_ = torch.nn.functional.rms_norm(x, (K,), g, 1e-6)
        ways = {
            "each": lambda: [ops.rmsnorm_linear(x, g, w, 1e-6, b) for w, b in zip(ws, bs)],
            "split": lambda: ops.rmsnorm_linear_split(x, g, ws, 1e-6, bs),
            "joined+copy": lambda: [t.contiguous() for t in ops.rmsnorm_linear(
                x, g, ws, 1e-6, bs).split(list(widths), -1)],
            "norm+cublas": lambda: [torch.nn.functional.linear(n, w, b) for n in
                                    [ops.rms_norm(x, g, 1e-6)] for w, b in zip(ws, bs)],
            "cublas": lambda: [torch.nn.functional.linear(n_, w, b) for w, b in zip(ws, bs)],
        }
        with torch.no_grad():
            joined = ops.rmsnorm_linear(x, g, ws, 1e-6, bs)
            split = ways["split"]()
            check = {"split_bitwise_equal_joined": bool(torch.equal(torch.cat(split, -1), joined)),
                     "split_contiguous": all(t.is_contiguous() for t in split)}
            for k, f in ways.items():
                check[f"{k}_err_vs_joined"] = rel_err(torch.cat(f(), -1), joined)
            times = {k: [] for k in ways}
            for _ in range(a.rounds):
                for k, f in ways.items():
                    times[k].append(triton.testing.do_bench(f, warmup=10, rep=40))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows[name] = {"K": K, "widths": widths, "ms": med, "rounds": times, **check}
        print(f"{name:14s} " + "  ".join(f"{k} {v:.4f}" for k, v in med.items())
              + f"  | split == joined: {check['split_bitwise_equal_joined']}", flush=True)
    out = {"t": a.t, "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": triton.__version__, "groups": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
