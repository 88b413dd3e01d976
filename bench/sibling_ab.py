"""BERT prefill (the model benchmark's spec, bf16, eager, no_grad) on the GPU: host and wall time
per forward for stock, normfuse, and normfuse with the sibling GEMMs' packed form off
(SiblingGEMMs.enabled), interleaved call by call; then a cProfile of normfuse's forwards.

    PYTHONPATH=python python3 bench/sibling_ab.py [--calls 40] [--model bert]
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--model", default="bert")
    a = ap.parse_args(argv)
    import torch
    from normfuse.nn.fused import SiblingGEMMs
    from normfuse.repro import models as M
    spec = M.SPECS[a.model]
    sd, ids, _ = M.make_state(spec, "cuda", torch.bfloat16)
    built = {c: M.build_configuration(spec, M._config(c), sd, "cuda", torch.bfloat16, {}).eval()
             for c in ("stock", "normfuse")}

    def fwd(m):
        with torch.no_grad():
            return M._forward(m, ids)
    variants = {"stock": (built["stock"], True), "normfuse": (built["normfuse"], True),
                "normfuse, siblings off": (built["normfuse"], False)}
    host = {k: [] for k in variants}
    wall = {k: [] for k in variants}
    for _ in range(5):
        for m, on in variants.values():
            SiblingGEMMs.enabled = on
            fwd(m)
    torch.cuda.synchronize()
    for _ in range(a.calls):
        for k, (m, on) in variants.items():
            SiblingGEMMs.enabled = on
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fwd(m)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            host[k].append((t1 - t0) * 1e3)
            wall[k].append((time.perf_counter() - t0) * 1e3)
    for k in variants:
        print(f"{a.model} {k:24s} host {statistics.median(host[k]):.3f} ms  wall "
              f"{statistics.median(wall[k]):.3f} ms (medians of {a.calls})")
    SiblingGEMMs.enabled = True
    for k in ("normfuse", "stock"):
        pr = cProfile.Profile()
        with contextlib.redirect_stdout(io.StringIO()):
            pr.enable()
            for _ in range(10):
                fwd(built[k])
            pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(22)
        print(f"== cProfile, {k}, 10 forwards ==\n" + s.getvalue()[-6000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
