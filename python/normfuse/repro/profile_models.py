"""Where a model benchmark configuration spends its time: torch.profiler over a few calls.

    python -m normfuse.repro.profile_models --out DIR gpt2:stock gpt2:normfuse+compile \
        llama:liger llama:normfuse+liger [--mode prefill|train|both] [--calls 3]

For each model:configuration of `normfuse.repro.models` (a compiled configuration is compiled
by its warm-up calls and profiles as Inductor's kernels and the custom ops it calls), the wall time
per call (synchronized), the host time per call (perf_counter around the call, no sync) and the
device kernels by total time (top 25, `profile_<model>_<config>_<mode>.txt`), plus
`profile.json` with the per-call figures and each kernel's total. Used to find why a
configuration is slower than the one it should beat (2026-12-01: GPT-2 and BERT through
normfuse, Llama normfuse+Liger).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import time

__all__ = ["configuration_call", "host_and_wall", "profile_one", "main"]


@contextlib.contextmanager
def configuration_call(model: str, config: str, mode: str):
    """The call of one prefill forward (no grad) or one train step of `model`:`config` of
    `normfuse.repro.models`, built in Liger's scope (in force while the caller runs it) and
    compiled where the configuration is (by the caller's first calls). The model, Dynamo's
    caches and the CUDA cache are released on exit."""
    import torch

    from . import models as M
    spec = M.SPECS[model]
    cfg = M._config(config)
    device, dtype = "cuda", torch.bfloat16
    sd, ids, R = M.make_state(spec, device, dtype)
    scope = M.liger_scope(spec.family) if cfg.liger else contextlib.nullcontext()
    with scope:
        m = M.build_configuration(spec, cfg, sd, device, dtype, {})
        params = [p for p in m.parameters() if p.requires_grad]
        if mode == "prefill":
            m.eval()
        else:
            m.train()
        f = torch.compile(m) if cfg.compiled else m
        if mode == "prefill":
            def call():
                with torch.no_grad():
                    return M._forward(f, ids)
        else:
            def call():
                return M._step(f, ids, R, params)
        try:
            yield call
        finally:
            f = m = params = None  # released before the cache is emptied
            if cfg.compiled:
                import torch._dynamo
                torch._dynamo.reset()
            torch.cuda.empty_cache()


def host_and_wall(call, calls: int, warm: int = 3) -> tuple[float, float]:
    """(host s, wall s) per call after `warm` calls: host from perf_counter around `calls`
    calls without a sync, wall until the GPU finished them."""
    import torch
    for _ in range(warm):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    host = (time.perf_counter() - t0) / calls
    torch.cuda.synchronize()
    return host, (time.perf_counter() - t0) / calls


def profile_one(model: str, config: str, mode: str, calls: int, out: str, log=print) -> dict:
    from torch.profiler import ProfilerActivity, profile
    import torch

    with configuration_call(model, config, mode) as call:
        host, wall = host_and_wall(call, calls)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                call()
            torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)
    name = f"profile_{model}_{config.replace('+', '-')}_{mode}.txt"
    with open(os.path.join(out, name), "w") as f:
        f.write(f"{model} {config} {mode}: wall {wall * 1e3:.3f} ms/call, host "
                f"{host * 1e3:.3f} ms/call (no sync)\n\n{table}\n")
    kernels = []
    for e in prof.key_averages():
        dev = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if dev:
            kernels.append({"name": e.key[:120], "device_us": round(dev / calls, 1),
                            "count": e.count // calls})
    kernels.sort(key=lambda k: -k["device_us"])
    from torch.autograd import DeviceType
    # device time of the kernels themselves (not of the ops that launched them): the GPU's busy
    # time per call; wall - busy is time the device waited for the host
    busy = sum(e.device_time_total for e in prof.events()
               if e.device_type == DeviceType.CUDA) / calls
    rec = {"model": model, "config": config, "mode": mode, "wall_ms": round(wall * 1e3, 3),
           "host_ms": round(host * 1e3, 3), "device_busy_ms": round(busy / 1e3, 3),
           "kernels": kernels[:40]}
    log(f"[profile] {model} {config} {mode}: wall {rec['wall_ms']} ms, host {rec['host_ms']} ms, "
        f"device busy {rec['device_busy_ms']} ms; "
        + "; ".join(f"{k['name'][:40]} {k['device_us']} us x{k['count']}" for k in kernels[:6]))
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", help="model:configuration")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=("prefill", "train", "both"), default="prefill")
    ap.add_argument("--calls", type=int, default=3)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    recs = []
    for pair in a.pairs:
        model, config = pair.split(":", 1)
        for mode in (("prefill", "train") if a.mode == "both" else (a.mode,)):
            try:
                recs.append(profile_one(model, config, mode, a.calls, a.out))
            except Exception as e:  # noqa: BLE001 - one failure must not lose the others
                recs.append({"model": model, "config": config, "mode": mode,
                             "error": f"{type(e).__name__}: {e}"})
                print(f"[profile] {pair} {mode}: {type(e).__name__}: {e}")
            with open(os.path.join(a.out, "profile.json"), "w") as f:
                json.dump(recs, f, indent=1)
    with open(os.path.join(a.out, "profile.json"), "w") as f:
        json.dump(recs, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
