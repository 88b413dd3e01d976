"""Paper reproduction: `python -m normfuse.repro` (compile report, numerics, quick benchmark).

- `normfuse.repro.__main__`: the project's main job; runs anywhere, uses a Hopper GPU when
  there is one.
- `normfuse.repro.bench`: the pre-norm GEMM benchmark (also `bench/bench_prenorm.py`).
"""
