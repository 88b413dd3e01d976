"""Host time of a post-norm call on the GPU, layer by layer, alone and inside BERT.

    PYTHONPATH=python python3 bench/host_chain.py --out DIR [--model bert] [--rounds 7]

Where BERT's eager prefill loses its host time (bench/results/2026-12-01/bert-host: normfuse's
forward 3.3 ms of host against stock's 2.36, with the same GPU work saved). Two parts:

1. One BertSelfOutput-shaped call (T = 16 x 512, K = N = 1024, LayerNorm, bias, residual) timed
   at every layer of the eager chain, from the module down to Triton's C launch function, each
   called with what the layer above passes it (captured from one real call), the same tensors
   every call: perf_counter over 200 calls without synchronizing, median of `--rounds` rounds.
   Next to them the stock block (linear, add, layer_norm), an empty CUDA allocation and a small
   torch op, which calibrate the machine's host speed.
2. The model: stock and normfuse forwards (host time per forward, no sync), then the normfuse
   forward again with a timer around each layer (the wrappers' own cost shows in the total), and
   the number of tensor maps encoded per forward (a new activation address costs an encode).

Writes host_chain.json and host_chain.md to --out.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def timed(fn, calls: int = 200, rounds: int = 7) -> float:
    """Median host microseconds per call of fn() over `rounds` rounds (no sync inside a round)."""
    import torch
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


class Capture:
    """Wrap `owner.name` to record the first call's (self, args) and, when `clock`, the time
    spent in every call (perf_counter_ns)."""

    def __init__(self, owner, name, clock=False):
        self.owner, self.name, self.orig = owner, name, getattr(owner, name)
        self.first = None
        self.ns = 0
        self.calls = 0
        orig, cap = self.orig, self

        if clock:
            def wrapped(*a, **k):
                t0 = time.perf_counter_ns()
                try:
                    return orig(*a, **k)
                finally:
                    cap.ns += time.perf_counter_ns() - t0
                    cap.calls += 1
        else:
            def wrapped(*a, **k):
                if cap.first is None:
                    cap.first = (a, k)
                return orig(*a, **k)
        setattr(owner, name, wrapped)

    def restore(self):
        setattr(self.owner, self.name, self.orig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        print("host_chain: needs a CUDA GPU")
        return 0
    import normfuse
    from normfuse import direct_launch
    from normfuse.lowering import launch as lowering_launch
    from normfuse.nn import postnorm_rewrite
    from normfuse.ops import inference, prenorm_linear
    from normfuse.repro import models as M

    R = args.rounds
    rec: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                 "date": time.strftime("%Y-%m-%d"), "layers_us": {}, "model": {}}
    dev, dt = "cuda", torch.bfloat16
    spec = M.SPECS["bert"]
    sd, ids, _ = M.make_state(spec, dev, dt)

    def host_per_forward(model, n=30):
        model.eval()
        with torch.no_grad():
            for _ in range(3):
                M._forward(model, ids)
            torch.cuda.synchronize()
            ts = []
            for _ in range(n):
                t0 = time.perf_counter()
                M._forward(model, ids)
                ts.append(time.perf_counter() - t0)
                torch.cuda.synchronize()
        return statistics.median(ts) * 1e3

    stock = M.fresh(spec, sd, dev, dt)
    rec["model"]["stock_host_ms"] = round(host_per_forward(stock), 3)
    del stock
    nf = M.fresh(spec, sd, dev, dt)
    nf = normfuse.optimize(nf)
    rec["model"]["normfuse_host_ms"] = round(host_per_forward(nf), 3)

    # ---- 1. one call, layer by layer --------------------------------------------------------
    block = None
    for name, mod in nf.named_modules():
        if type(mod).__name__ == "BertSelfOutput":
            block = mod
            break
    T, K = spec.tokens, 1024
    x = torch.randn(spec.batch, spec.seq, K, device=dev, dtype=dt)
    res = torch.randn(spec.batch, spec.seq, K, device=dev, dtype=dt)
    caps = [Capture(postnorm_rewrite.PostNormForward, "__call__"),
            Capture(inference, "postnorm_linear"),
            Capture(inference._PostCall, "__call__"),
            Capture(prenorm_linear.LaunchPlan, "run"),
            Capture(lowering_launch.LoweredPlan, "run"),
            Capture(direct_launch.DirectLaunch, "launch_on")]
    with torch.no_grad():
        block(x, res)
        torch.cuda.synchronize()
    for c in caps:
        c.restore()
    names = ["module forward (PostNormForward)", "op implementation (inference.postnorm_linear)",
             "launch-ready call (_PostCall)", "LaunchPlan.run", "LoweredPlan.run",
             "DirectLaunch.launch_on"]
    L = rec["layers_us"]
    with torch.no_grad():
        L["stock block (linear, add, layer_norm)"] = timed(
            lambda: F.layer_norm(F.linear(x, block.dense.weight, block.dense.bias) + res,
                                 (K,), block.LayerNorm.weight, block.LayerNorm.bias,
                                 block.LayerNorm.eps), rounds=R)
        L["F.linear alone"] = timed(lambda: F.linear(x, block.dense.weight, block.dense.bias),
                                    rounds=R)
        L["module call block(x, res)"] = timed(lambda: block(x, res), rounds=R)
        for nm, c in zip(names, caps):
            if c.first is None:
                L[nm] = None
                continue
            a, k = c.first
            L[nm] = timed(lambda c=c, a=a, k=k: c.orig(*a, **k), rounds=R)
        L["public function (normfuse.ops.linear_layernorm)"] = timed(
            lambda: normfuse.ops.linear_layernorm(
                x, block.dense.weight, block.LayerNorm.weight, block.LayerNorm.bias,
                block.LayerNorm.eps, bias=block.dense.bias, residual=res), rounds=R)
        L["x.new_empty(T, N) (CUDA)"] = timed(lambda: x.new_empty(T, K), rounds=R)
        small = torch.ones(4, device=dev)
        L["torch.add of 4 floats (CUDA)"] = timed(lambda: torch.add(small, small), rounds=R)
        L["torch.cuda.is_current_stream_capturing()"] = timed(
            torch.cuda.is_current_stream_capturing, rounds=R)

        def noop(*a):
            return a
        L["python call of a no-op"] = timed(lambda: noop(x, res), rounds=R)
    rec["layers_us"] = {k: (None if v is None else round(v, 2)) for k, v in L.items()}

    # ---- 2. inside the model: time per layer ------------------------------------------------
    clocks = [Capture(postnorm_rewrite.PostNormForward, "__call__", clock=True),
              Capture(inference, "postnorm_linear", clock=True),
              Capture(inference._PostCall, "__call__", clock=True),
              Capture(lowering_launch.LoweredPlan, "run", clock=True),
              Capture(direct_launch.DirectLaunch, "launch_on", clock=True)]
    enc0 = _encoded()
    n = 30
    wrapped = host_per_forward(nf, n)
    encoded = (_encoded() - enc0) / (n + 3)
    for c in clocks:
        c.restore()
    rec["model"]["normfuse_host_ms_with_timers"] = round(wrapped, 3)
    rec["model"]["tensor_maps_encoded_per_forward"] = round(encoded, 2)
    rec["model"]["per_call_us"] = {
        f"{c.owner.__name__}.{c.name}": round(c.ns / max(1, c.calls) / 1e3, 2) for c in clocks}
    rec["model"]["calls_per_forward"] = {
        f"{c.owner.__name__}.{c.name}": round(c.calls / (n + 3), 2) for c in clocks}
    with open(os.path.join(args.out, "host_chain.json"), "w") as f:
        json.dump(rec, f, indent=1)
    lines = [f"# Host time of a post-norm call ({rec['device']}, {rec['date']}, torch "
             f"{rec['torch']})", "", "| layer (one BertSelfOutput call, T 8192, K = N = 1024) | "
             "us per call |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in rec["layers_us"].items()]
    lines += ["", "| in BERT's forward | value |", "|---|---:|"]
    for k, v in rec["model"].items():
        lines.append(f"| {k} | {v} |")
    with open(os.path.join(args.out, "host_chain.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _encoded() -> int:
    """Tensor maps encoded so far by every live TensorMaps (direct_launch)."""
    import gc

    from normfuse.direct_launch import TensorMaps
    return sum(o.encoded for o in gc.get_objects() if type(o) is TensorMaps)


if __name__ == "__main__":
    sys.exit(main())
