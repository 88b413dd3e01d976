"""Post-norm GEMM benchmark (thin wrapper; the code is normfuse/repro/bench_post.py).

    PYTHONPATH=python python3 bench/bench_postnorm.py --out DIR [--norm rms|ln|both] [--quick]
                                                      [--cells M,K,N;...] [--no-compile]
                                                      [--cluster-sweep]

Needs a Hopper GPU. See the module docstring for what is measured.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))

from normfuse.repro.bench_post import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
