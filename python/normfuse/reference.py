"""Pure-torch references for the pre-norm linear ops, shared by tests and benchmarks.

Two kinds of reference live here:

- the *oracle* (`rmsnorm_linear_ref`, `layernorm_linear_ref`): the exact math on the given
  inputs, every tensor upcast to float64 before anything is computed. Errors of a kernel are
  measured against it with `rel_err`, next to the error of the naive kernel on the same inputs.
- the *eager baseline* (`eager_rmsnorm_linear`, `eager_layernorm_linear`): what a user writes in
  plain torch, in the input dtype (F.rms_norm / F.layer_norm, then F.linear). It is the speed
  baseline "norm + GEMM unfused" and, compiled, the torch.compile baseline.

Shapes follow torch.nn.Linear: x [..., K], weight [N, K], norm weight/bias [K], bias [N].
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["rmsnorm_linear_ref", "layernorm_linear_ref", "eager_rmsnorm_linear",
           "eager_layernorm_linear", "rel_err", "fold_norm_weight"]


def _up(t, dtype):
    return None if t is None else t.to(dtype)


def rmsnorm_linear_ref(x, norm_weight, weight, eps, bias=None, dtype=torch.float64, offset=0.0):
    """y = (x * rsqrt(mean(x^2) + eps) * (offset + g)) @ W^T + bias, all in `dtype` (float64 by
    default).

    `norm_weight` may be None (g = 1, e.g. when g was folded into `weight`).
    """
    x, g, w, b = (_up(t, dtype) for t in (x, norm_weight, weight, bias))
    rstd = torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps)
    a = x * rstd
    if g is not None:
        a = a * (g + offset)
    y = a @ w.t()
    return y if b is None else y + b


def layernorm_linear_ref(x, norm_weight, norm_bias, weight, eps, bias=None, dtype=torch.float64,
                         offset=0.0):
    """y = (((x - mean) * rsqrt(var + eps)) * (offset + g) + beta) @ W^T + bias, all in `dtype`.

    The variance is the biased one (as torch.nn.LayerNorm), computed two-pass from the centred
    values, so the oracle itself has no cancellation when |mean| >> std.
    """
    x, g, beta, w, b = (_up(t, dtype) for t in (x, norm_weight, norm_bias, weight, bias))
    mean = x.mean(dim=-1, keepdim=True)
    xc = x - mean
    rstd = torch.rsqrt(xc.square().mean(dim=-1, keepdim=True) + eps)
    a = xc * rstd
    if g is not None:
        a = a * (g + offset)
    if beta is not None:
        a = a + beta
    y = a @ w.t()
    return y if b is None else y + b


def linear_norm_ref(x, weight, norm_weight, norm_bias, eps, bias=None, residual=None, offset=0.0):
    """Post-norm oracle in float64: norm(x @ W^T + bias + residual) * (offset + g) [+ beta] over
    rows of length N; RMSNorm when `norm_bias` is None, LayerNorm otherwise."""
    h = x.double() @ weight.double().t()
    if bias is not None:
        h = h + bias.double()
    if residual is not None:
        h = h + residual.double()
    if norm_bias is None:
        return h * torch.rsqrt((h * h).mean(-1, keepdim=True) + eps) * (norm_weight.double() + offset)
    mu = h.mean(-1, keepdim=True)
    var = ((h - mu) ** 2).mean(-1, keepdim=True)
    return (h - mu) / torch.sqrt(var + eps) * (norm_weight.double() + offset) + norm_bias.double()


def eager_rmsnorm_linear(x, norm_weight, weight, eps, bias=None):
    """Plain torch in the input dtype: F.rms_norm then F.linear (two kernels, x read twice)."""
    return F.linear(F.rms_norm(x, (x.shape[-1],), norm_weight, eps), weight, bias)


def eager_layernorm_linear(x, norm_weight, norm_bias, weight, eps, bias=None):
    """Plain torch in the input dtype: F.layer_norm then F.linear."""
    return F.linear(F.layer_norm(x, (x.shape[-1],), norm_weight, norm_bias, eps), weight, bias)


def rel_err(out, ref) -> float:
    """||out - ref||_F / ||ref||_F in float64 (NaN anywhere in `out` gives NaN).

    When `ref` is all zeros the absolute norm of the difference is returned.
    """
    out = out.detach().to(torch.float64)
    ref = ref.detach().to(device=out.device, dtype=torch.float64)
    if out.shape != ref.shape:
        raise ValueError(f"rel_err: shapes differ, out {tuple(out.shape)} vs ref {tuple(ref.shape)}")
    diff = torch.linalg.vector_norm(out - ref).item()
    den = torch.linalg.vector_norm(ref).item()
    return diff / den if den > 0 else diff


def fold_norm_weight(weight, norm_weight, offset=0.0):
    """W' = W diag(offset + g), computed in float32 and cast back to weight's dtype, contiguous
    (whatever weight's strides).

    Then rmsnorm(x, g) @ W^T == (x * rstd) @ W'^T, so the fused kernel can skip g in its
    k-loop (`rmsnorm_linear(..., folded=True)`). The same identity holds for LayerNorm's
    scale, not for its shift (beta @ W^T is a bias term). `offset`: the norm's scale is
    offset + g (Gemma's (1 + w): offset=1.0).
    """
    if weight.dim() != 2 or norm_weight.dim() != 1 or norm_weight.shape[0] != weight.shape[1]:
        raise ValueError(f"fold_norm_weight: expected weight [N, K] and norm_weight [K], got "
                         f"weight {tuple(weight.shape)} and norm_weight {tuple(norm_weight.shape)}")
    g = norm_weight.to(device=weight.device, dtype=torch.float32)
    if offset:
        g = g + offset
    folded = weight.to(torch.float32) * g[None, :]
    return folded.to(weight.dtype).contiguous()
