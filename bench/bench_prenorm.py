"""Pre-norm GEMM benchmark (thin wrapper; the code is normfuse/repro/bench.py).

    PYTHONPATH=python python3 bench/bench_prenorm.py --out DIR [--quick] [--norm rms|ln|both]
                                                     [--autotune] [--dtype bf16|fp16] [--no-compile]

Needs a Hopper GPU. Full grid: the blog's M=262144 x K,N in {512,1024,2048} plus M=8192 with
K=N=4096 and 8192; --quick runs 3 cells. See the module docstring for what is measured.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))

from normfuse.repro.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
