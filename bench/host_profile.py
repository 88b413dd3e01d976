"""Where a model benchmark configuration's prefill spends its host time: cProfile over a few
calls (after warm-up), sorted by own time and by cumulative time, with the host time per call
(no sync) before profiling. Complements profile_models (device kernels, timeline).

    PYTHONPATH=python python3 bench/host_profile.py gpt2:normfuse+compile gpt2:stock+compile \
        [--calls 10] [--top 30]
    PYTHONPATH=python python3 bench/host_profile.py --ab --calls 30 bert:stock bert:normfuse \
        bert:normfuse@nosib          (host per call only, interleaved; @nosib: sibling GEMMs off)
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="+", help="model:configuration (normfuse.repro.models)")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--ab", action="store_true",
                    help="no cProfile: build every pair, then time their host per call in "
                         "interleaved rounds (median); a pair 'model:config@nosib' runs with "
                         "the sibling GEMMs off (normfuse.nn.fused.SiblingGEMMs.enabled)")
    a = ap.parse_args(argv)
    import torch
    from normfuse.repro import models as M
    if a.ab:
        return _ab(a, torch, M)
    for pair in a.pairs:
        f, ids = _build(pair, torch, M)

        def fwd(f=f):
            with torch.no_grad():
                return M._forward(f, ids)
        for _ in range(4):
            fwd()
        torch.cuda.synchronize()
        host = []
        for _ in range(a.calls):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fwd()
            host.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(a.calls):
            fwd()
        torch.cuda.synchronize()
        pr.disable()
        s = io.StringIO()
        st = pstats.Stats(pr, stream=s)
        st.sort_stats("tottime").print_stats(a.top)
        st.sort_stats("cumulative").print_stats(a.top)
        print(f"\n== {pair} prefill: host {statistics.median(host):.3f} ms per call (median of "
              f"{a.calls}, no sync); cProfile over {a.calls} calls:")
        print("\n".join(ln for ln in s.getvalue().splitlines() if ln.strip()))
        del fwd, f
        torch._dynamo.reset()
    return 0


def _build(pair: str, torch, M):
    """(the callable model, its input ids) of 'model:configuration', compiled as the model
    benchmark compiles it."""
    name, cname = pair.split(":", 1)
    spec, cfg = M.SPECS[name], M._config(cname)
    sd, ids, _ = M.make_state(spec, "cuda", torch.bfloat16)
    model = M.build_configuration(spec, cfg, sd, "cuda", torch.bfloat16, {}).eval()
    return (M.compile_for(model, cfg) if cfg.compiled else model), ids


def _ab(a, torch, M) -> int:
    """(bench/sibling_ab.py does the same for BERT's eager configurations, with wall times.)"""
    from normfuse.nn.fused import SiblingGEMMs
    runs = {}
    for pair in a.pairs:
        base, _, flag = pair.partition("@")
        runs[pair] = (*_build(base, torch, M), flag == "nosib")
    host = {p: [] for p in runs}
    default = SiblingGEMMs.enabled
    try:
        for rnd in range(a.calls + 4):
            for pair, (f, ids, nosib) in runs.items():
                SiblingGEMMs.enabled = default and not nosib
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                with torch.no_grad():
                    M._forward(f, ids)
                t = (time.perf_counter() - t0) * 1e3
                torch.cuda.synchronize()
                if rnd >= 4:  # warm-up rounds
                    host[pair].append(t)
    finally:
        SiblingGEMMs.enabled = default
    print(f"== host ms per prefill call (median of {a.calls} interleaved rounds, sync before "
          f"each call, no sync in it)")
    for pair, ts in host.items():
        print(f"  {pair:40s} {statistics.median(ts):8.3f}  (min {min(ts):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
