"""Where a model benchmark configuration's prefill spends its host time: cProfile over a few
calls (after warm-up), sorted by own time and by cumulative time, with the host time per call
(no sync) before profiling. Complements profile_models (device kernels, timeline).

    PYTHONPATH=python python3 bench/host_profile.py gpt2:normfuse+compile gpt2:stock+compile \
        [--calls 10] [--top 30]
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
    a = ap.parse_args(argv)
    import torch
    from normfuse.repro import models as M
    for pair in a.pairs:
        name, cname = pair.split(":", 1)
        spec, cfg = M.SPECS[name], M._config(cname)
        sd, ids, _ = M.make_state(spec, "cuda", torch.bfloat16)
        model = M.build_configuration(spec, cfg, sd, "cuda", torch.bfloat16, {}).eval()
        f = M.compile_for(model, cfg) if cfg.compiled else model

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
        del fwd, f, model
        torch._dynamo.reset()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
