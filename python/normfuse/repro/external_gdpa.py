"""Meta's public Triton GDPA as a baseline for the FlashNormAttention benchmarks (issue 22: "GDPA
core measured against the best Triton GDPA you can find or write").

tritonbench (github.com/meta-pytorch/tritonbench, `tritonbench/operators/gdpa/gdpa.py`) carries
the generalized dot product attention kernels of Meta's ads models: jagged queries and keys by
offsets, the activation applied to the scores elementwise (its "fast_gelu" is the tanh GELU with
PTX tanh.approx, the same function as FlashNormAttention's `gelu_tanh`), autotuned forward and
backward kernels behind a torch custom op. It is not on the package index and not in the GPU
machine's image: build a wheel from a checkout and carry it with its two small dependencies
(bench/README.md, "Meta's GDPA"). Where it does not import (not installed; on the CPU its import
asks torch.cuda for the device capability and fails), the benchmarks record why and go on.

Imported, never copied: this module only adapts our inputs to its call.
"""
from __future__ import annotations

import torch

__all__ = ["ACTIVATION", "load", "key_offsets", "jagged_kv", "gdpa_fn"]

# FlashNormAttention's GDPA activations that tritonbench's GDPA computes (its name for each)
ACTIVATION = {"gelu_tanh": "fast_gelu"}

MODULE = "tritonbench.operators.gdpa.gdpa"


def load():
    """(tritonbench's `generalized_dot_product_attention`, None), or (None, why it is not here).
    The root logger's level and handlers are kept (tritonbench's import calls
    logging.basicConfig(INFO))."""
    import logging
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        import importlib
        mod = importlib.import_module(MODULE)
        return mod.generalized_dot_product_attention, None
    except Exception as e:  # noqa: BLE001 - not installed, or no GPU: the reason is recorded
        return None, f"{MODULE} does not import: {type(e).__name__}: {str(e)[:200]}"
    finally:
        root.setLevel(level)
        for h in list(root.handlers):
            if h not in handlers:
                root.removeHandler(h)


def key_offsets(B: int, L: int, device, dtype=torch.int32) -> torch.Tensor:
    """The offsets 0, L, 2L, .. B L of B dense key sequences of L rows read as jagged ones."""
    return torch.arange(0, (B + 1) * L, L, dtype=dtype, device=device)


def jagged_kv(k: torch.Tensor, v: torch.Tensor):
    """FlashNormAttention's dense keys and values [B, L, Hkv, D] as tritonbench's jagged ones:
    ([B * L, Hkv, D] views, the key offsets 0, L, 2L, .. (int32, B + 1 entries))."""
    B, L, Hkv, D = k.shape
    return k.reshape(B * L, Hkv, D), v.reshape(B * L, Hkv, D), key_offsets(B, L, k.device)


def gdpa_fn(fn, offsets: torch.Tensor, L: int, max_len: int, activation: str, qk_scale: float):
    """q, k, v -> o for jagged q [T, H, D] (rows by `offsets`, [B + 1]) and jagged keys / values
    [B * L, Hkv, D] (`jagged_kv`): act(q k^T) qk_scale v per sequence, by `fn` (tritonbench's
    op; differentiable: its backward kernels run under autograd). `max_len` bounds the query
    lengths (its grid: pass the same bound on every call of a shape, the cell's maximum, not
    the batch's: it is an autotuning key and a specialized integer). The offsets go in as
    int32, as tritonbench's own operator passes them; its kernels then form begin * stride in
    int32, so a q or key tensor of 2^31 elements or more is refused (a ValueError, before any
    launch: an out-of-range address would end the whole benchmark process), as is an activation
    it does not compute."""
    if activation not in ACTIVATION:
        raise ValueError(f"tritonbench's GDPA has no {activation!r} here (only {sorted(ACTIVATION)})")
    koff = key_offsets(offsets.numel() - 1, L, offsets.device)
    qoff = offsets.to(torch.int32)
    act = ACTIVATION[activation]

    def call(q, k, v):
        if max(q.numel(), k.numel()) >= 2 ** 31:
            raise ValueError(f"tritonbench's GDPA indexes in int32: q {tuple(q.shape)} / keys "
                             f"{tuple(k.shape)} have 2^31 elements or more")
        return fn(q, k, v, qoff, koff, int(max_len), int(L), qk_scale=float(qk_scale),
                  activation=act)
    return call
