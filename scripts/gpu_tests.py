"""Run the gpu-marked tests in parallel pytest processes on one GPU machine.

    python3 scripts/gpu_tests.py [-j 8] [--marker gpu] [-k EXPR] [--timeout 540] [--log-dir DIR] [PATHS...]

The command line of `normfuse.repro.gpu_tests` (what it does: its docstring); usable without
PYTHONPATH set.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))

from normfuse.repro.gpu_tests import (  # noqa: E402,F401
    DETAIL_LINES, collect, counts, default_jobs, failure_details, main, run, shard_results)

if __name__ == "__main__":
    sys.exit(main())
