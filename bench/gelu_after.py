"""H200: does the kernel that wrote a tensor change how fast the next kernel reads it?

Session 17 found Inductor's in-place GELU (identical generated code, same [8192, 5120] bf16
tensor) taking 0.352 ms per GPT-2 prefill (4 launches) after normfuse's fused c_fc GEMM and
0.209 after cuBLAS's addmm. This probe isolates it at GPT-2's c_fc shape (x [8192, 1280],
LayerNorm with bias, Conv1D weight [1280, 5120] + bias), each variant timed by torch.profiler
over `--calls` calls (device time per kernel name, per call):

    compiled-stock     torch.compile(gelu(addmm(b, layer_norm(x), W)))      Inductor's own graph
    compiled-normfuse  torch.compile(gelu(layernorm_linear(x, ...)))       the custom op inside
    eager-cublas       y = addmm(b, layer_norm(x), W); gelu_c(y)           gelu_c: compiled, out of place
    eager-normfuse     y = layernorm_linear(x, ...); gelu_c(y)
    flush-cublas       as eager-cublas with a 256 MB write between the GEMM and the GELU
    flush-normfuse     as eager-normfuse likewise (L2 holds nothing of y then)

If the GELU is slower only right after the fused GEMM and the flush makes both equal, the
difference is in what the GEMM leaves in L2 (dirty lines, what part of y), not in the GELU.

    PYTHONPATH=python python3 bench/gelu_after.py --out DIR [--t 8192 --k 1280 --n 5120]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--t", type=int, default=8192)
    ap.add_argument("--k", type=int, default=1280)
    ap.add_argument("--n", type=int, default=5120)
    ap.add_argument("--calls", type=int, default=20)
    a = ap.parse_args(argv)
    import torch
    import torch.nn.functional as F

    import normfuse.ops.functional as NF
    from normfuse.repro.profile_models import kernels_of
    os.makedirs(a.out, exist_ok=True)
    dev, dt = "cuda", torch.bfloat16
    torch.manual_seed(0)
    x = torch.randn(a.t, a.k, device=dev, dtype=dt)
    lw = (1 + 0.1 * torch.randn(a.k, device=dev)).to(dt)
    lb = (0.1 * torch.randn(a.k, device=dev)).to(dt)
    w = (torch.randn(a.k, a.n, device=dev) / a.k ** 0.5).to(dt)   # Conv1D: [in, out]
    b = (0.1 * torch.randn(a.n, device=dev)).to(dt)
    trash = torch.empty(256 << 20, dtype=torch.uint8, device=dev)

    def cublas_gemm(x):
        return torch.addmm(b, F.layer_norm(x, (a.k,), lw, lb, 1e-5), w)

    def nf_gemm(x):
        return NF.layernorm_linear(x, lw, lb, w, 1e-5, b, weight_kn=True)

    def stock_block(x):
        return F.gelu(cublas_gemm(x), approximate="tanh")

    def nf_block(x):
        return F.gelu(nf_gemm(x), approximate="tanh")

    gelu_c = torch.compile(lambda y: F.gelu(y, approximate="tanh"))
    c_stock = torch.compile(stock_block)
    c_nf = torch.compile(nf_block)

    def eager(gemm, flush):
        def call():
            y = gemm(x)
            if flush:
                trash.fill_(1)
            return gelu_c(y)
        return call

    variants = {
        "compiled-stock": lambda: c_stock(x),
        "compiled-normfuse": lambda: c_nf(x),
        "eager-cublas": eager(cublas_gemm, False),
        "eager-normfuse": eager(nf_gemm, False),
        "flush-cublas": eager(cublas_gemm, True),
        "flush-normfuse": eager(nf_gemm, True),
    }
    with torch.no_grad():
        ref = stock_block(x).float()
        out = {}
        for name, fn in variants.items():
            err = ((fn().float() - ref).norm() / ref.norm()).item()
            for _ in range(3):
                fn()
            torch.cuda.synchronize()

            def many(fn=fn):
                for _ in range(a.calls):
                    fn()
            total, evs = kernels_of(many)
            ks = [(e.key, round(e.device_time_total / 1e3 / a.calls, 4), e.count // a.calls)
                  for e in evs if e.device_time_total > 0]
            out[name] = {"ms_per_call": round(total / a.calls, 4), "rel_err": err, "kernels": ks}
            print(f"{name}: {total / a.calls:.4f} ms per call, err {err:.2e}", flush=True)
            for k, ms, n in ks:
                print(f"    {ms:8.4f} ms x{n}  {k[:90]}", flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "t": a.t, "k": a.k, "n": a.n, "calls": a.calls}
    with open(os.path.join(a.out, "gelu_after.json"), "w") as fh:
        json.dump({"meta": meta, "variants": out}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
