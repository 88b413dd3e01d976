"""Paper reproduction: `python -m normfuse.repro` (compile report, numerics, the benchmarks).

- `__main__`: the project's main job (`bash scripts/main.sh`); runs anywhere, uses a Hopper GPU
  when there is one.
- The benchmarks it runs, each also a command (`python -m normfuse.repro.<name> --help`):
  `summary` (every op against cuBLAS, the best norm and the backbone), `bench` and `bench_post`
  (pre-/post-norm in detail), `bench_attention` and `bench_attention_bwd` (FlashNormAttention),
  `bench_training` (the ops' backward), `models` and `model_shapes` (transformers models and
  their GEMM shapes); `bench_ops` (the op layer's host time and backward plans) is run by hand.
- Their support: `extra` (the backward benchmarks in child processes), `warm` / `warm_child`
  (compile every cell first, in parallel processes), `gpu_tests` (the gpu-marked tests in
  parallel pytest processes: `scripts/gpu_tests.py`).
bench/README.md lists them with their commands.
"""
