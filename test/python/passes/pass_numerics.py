"""Shared pieces of the passes' numerics tests (passes/test_lazy_prenorm_numerics.py,
passes/test_cluster_reduce.py): what the passes mean, checked on the CPU by running a kernel in
normfuse.testing's interpreter before and after the passes.

Inputs exercise what the algebra depends on: norm weights g != 1, LayerNorm beta != 0, K over
several tiles (ragged where the kernel masks K), rows with non-zero means, ragged M and N, and
NaN-poisoned outputs (an unwritten tile is a NaN in one run and not the other: an infinite
difference). The naive kernel's result is also checked against the fp64 reference, so a wrong
interpreter cannot make both runs agree on nonsense.
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402


LIT = Path(__file__).resolve().parents[2] / "lit"
TOL = 2e-2  # fused vs naive, relative to the output's largest value (bf16 outputs: ~5e-3 seen)
REF_TOL = 1e-2  # naive (interpreted) vs the fp64 reference, Frobenius

# the pre-norm kernels' tiles and shape (the post-norm tests use M and K too)
PRE = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2)
M, N, K = 70, 72, 80  # 3 x 3 tiles, the last ragged; 3 k-tiles, the last half full


def _bf(*shape, mean=0.0, scale=1.0, gen):
    return (torch.randn(*shape, generator=gen) * scale + mean).bfloat16()


def _poisoned(*shape, dtype=torch.bfloat16):
    return torch.full(shape, float("nan"), dtype=dtype)


def _assert_ok(res, *, applied: bool = True, out: str = "Y"):
    if applied:
        assert res.applied and res.changed, res.remarks
    assert res.max_rel_diff < TOL, (res.diffs, res.remarks)
    assert not torch.isnan(res.before[out].float()).any(), "the naive kernel left elements unwritten"
    assert not torch.isnan(res.after[out].float()).any(), "the rewritten kernel left elements unwritten"


# ---------------------------------------------------------------------------------------------
# The positive lit kernels (test/lit/*.mlir), through normfuse-opt's pipeline
# ---------------------------------------------------------------------------------------------

BM, BN, BK = 64, 32, 32  # the lit inputs' tile (lazy_prenorm_kernels.py, cluster_reduce_kernels.py)


def _lazy_args(name, k, gen):
    """(arguments, index of the output) for a lazy-prenorm lit kernel."""
    stride = 96  # >= the k-tiles' reach: the lit kernels read W, g and beta unmasked
    x = (torch.randn(BM, stride, generator=gen) + 2 * torch.randn(BM, 1, generator=gen)).bfloat16()
    g = (0.5 + torch.rand(stride, generator=gen)).bfloat16()
    b = _bf(stride, gen=gen)
    w = _bf(BN, stride, scale=0.1, gen=gen)
    y = _poisoned(BM, BN, dtype=torch.float32)
    eps = 1e-5
    table = {
        "rms_weight_in_loop": ([x, g, w, y, k, stride, eps], 3),
        "rms_weight_folded": ([x, w, y, k, stride, eps], 2),
        "layernorm": ([x, g, b, w, y, k, stride, eps], 4),
        "layernorm_folded": ([x, w, y, k, stride, eps], 2),
        "rms_precomputed_rstd": ([x, 0.5 + torch.rand(BM, generator=gen), w, y, k, stride], 3),
        # the accumulator starts from Y's values
        "rms_residual_accumulator": ([x, w, torch.randn(BM, BN, generator=gen), k, stride, eps], 2),
        # M = 50 < BM rows and a ragged K: the block pointers' boundary checks mask both
        "rms_block_pointers": ([x, w, y, 50, 80, stride, eps], 2),
        "rms_row_block": ([x, _bf(3 * BN, stride, scale=0.1, gen=gen),
                           _poisoned(BM, 3 * BN, dtype=torch.float32), k, 3 * BN, stride, eps], 2),
    }
    return table[name]


def _op_names(text: str, kernel: str) -> list[str]:
    return list(next(ops for func, ops in _functions(text) if f"@{kernel}(" in func))


@functools.lru_cache(maxsize=16)
def _functions(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(text, op names) of each function of a module, parsed once per module: the lit tests ask
    for one kernel of a whole lit input (or of its fused form) at a time, and each parse of one
    (up to 1700 lines, with the guard's fork) takes 0.1-0.15 s."""
    from normfuse.ir import load
    return tuple((f.text, tuple(o.name for o in f.walk())) for f in load(text).functions())


LAZY = ["rms_weight_in_loop", "rms_weight_folded", "layernorm", "layernorm_folded",
        "rms_precomputed_rstd", "rms_residual_accumulator", "rms_block_pointers", "rms_row_block"]


def _post_lit_args(lit, name, m, gen):
    n = 32 if lit == "epilogue-norm.mlir" else {"rms_four_tiles": 128, "ln_two_stats": 64,
                                                 "rms_deferred": 1024, "rms_persistent": 128}[name]
    k = 64
    x = _bf(m, k, gen=gen)
    w = _bf(n, k, scale=0.1, gen=gen)
    g = (0.5 + torch.rand(n, generator=gen)).bfloat16()
    b = _bf(n, gen=gen)
    y = _poisoned(m, n)
    vec = [g, b] if "ln" in name or "layernorm" in name else [g]
    # BIAS and RES are unused (HAS_BIAS = HAS_RES = False in the lit inputs): pass W again
    return [x, w, w, w, *vec, y, m, k, k, k, n, n, 1e-5], 4 + len(vec)


def lit_input(name: str):
    """The module test/lit/inputs/<name>.py (a lit file's kernels), imported from its directory."""
    import importlib
    import sys
    inputs = str(LIT / "inputs")
    if inputs not in sys.path:
        sys.path.insert(0, inputs)
    return importlib.import_module(name)


def lit_input_kernels():
    """test/lit/inputs/flash_norm_attention_kernels.py (the FlashNormAttention lit input's
    small kernels)."""
    return lit_input("flash_norm_attention_kernels")
