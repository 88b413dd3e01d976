"""FlashNormAttention forward on the GPU (issue 12): gpu-marked tests + the blog's shapes.

    PYTHONPATH=python python3 bench/gpu_attention.py --out $OUT [--quick]

1. `pytest -m gpu test/python/test_flash_norm_attention.py` (its summary line and failures are
   recorded; a failure does not stop the benchmark).
2. Benchmark, bf16, B = 768, KV length L = 128 (dense per batch), D = 128, Q jagged with lengths
   uniform in [0, max_len] (average sparsity 0.5), max_len in {1000, 3000, 10000}, H in {2, 3, 4},
   activation gelu_tanh (GDPA) and softmax; `--quick`: H = 2, max_len 1000 and 3000. Per cell:

     fused_ms      normfuse.ops.flash_norm_attention's kernel (default passes; prepared launch)
     naive_ms      the naive kernel without the passes (the oracle), for reference
     unfused_ms    ln_ms + core_ms + post_ms: torch.compile'd LayerNorm, the attention core
                   kernel (below) on LN(x), torch.compile'd RMSNorm(o + ln) + x
     saved_pct     (unfused_ms - fused_ms) / unfused_ms * 100   (the issue's "% of total time saved")
     core_ms       the attention core alone: a plain jagged Triton kernel written here (one program
                   per (row block, head); GDPA or FA2-style online softmax), no norms
     sdpa_ms       softmax only: torch SDPA on padded [B, H, max_len, D] queries, the best of its
                   flash / efficient / cudnn backends (padding doubles its work at sparsity 0.5)
     core_vs_best  core_ms / best baseline (sdpa_ms for softmax; for GDPA the core kernel is the
                   baseline itself, so the record says which)
     err           fused vs the unfused pipeline's output (relative Frobenius), a sanity check

   Times: triton.testing.do_bench medians. Every cell is caught separately (errors recorded).
   The cells, the core kernel and the records live in normfuse.repro.bench_attention (also run by
   `python -m normfuse.repro`, which appends the records to summary.json).
Writes $OUT/gpu_attention.json (records, op = "flash_norm_attention.forward"), gpu_attention.md,
pytest.txt and, with matplotlib, saved_pct.png.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time

import torch
import triton

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

from normfuse.repro import bench_attention as ba  # noqa: E402


def _run_tests(out_dir: str, timeout: int) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
           "test/python/test_flash_norm_attention.py"]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")))
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text, rc = f"TIMEOUT after {timeout}s\n{(e.stdout or b'')!s}", 124
    with open(os.path.join(out_dir, "pytest.txt"), "w") as f:
        f.write(text)
    lines = [l for l in text.splitlines() if l.strip()]
    return {"rc": rc, "summary": lines[-1] if lines else "", "seconds": round(time.time() - t0, 1),
            "failed": [l for l in lines if l.startswith("FAILED")][:40]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results/gpu_attention"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds for the benchmark cells")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    meta = {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__, "triton": triton.__version__}
    result = {"meta": meta, "records": []}
    path = os.path.join(a.out, "gpu_attention.json")
    if not a.no_tests:
        result["tests"] = _run_tests(a.out, 120)

    def save(records):  # after every cell: a run cut short still leaves its records
        result["records"] = records
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    save(ba.run(a.quick, a.budget, meta, on_record=save, log=lambda s: print(s, flush=True)))
    md = [f"# FlashNormAttention forward ({meta['gpu']}, torch {meta['torch']}, triton {meta['triton']})", ""]
    if "tests" in result:
        md += [f"pytest -m gpu: rc {result['tests']['rc']}, {result['tests']['summary']}", ""]
    md.append(ba.table(result["records"]))
    with open(os.path.join(a.out, "gpu_attention.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    try:
        ba.plot(result["records"], os.path.join(a.out, "saved_pct.png"))
    except Exception as e:  # noqa: BLE001
        print(f"no plot: {e}")
    print("\n".join(md))
    print(f"total {time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
