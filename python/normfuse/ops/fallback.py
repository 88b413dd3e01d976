"""The ops' reference path: the same functions in plain torch, where the fused kernels do not
run (CPU tensors, GPUs other than sm_90).

Computed in fp32 (fp64 for fp64 inputs: `compute_dtype`), the result cast to x's dtype; every
function is differentiable by torch's autograd, so the ops train here too. The math is the
fused ops' (normfuse.reference has the fp64 oracles the tests compare both with):

    pre-norm   y = norm(x) (offset + g) [+ beta] @ W^T + bias     norm over K (x's last dim)
    post-norm  z = norm(x W^T + bias + residual) (offset + g) [+ beta]   norm over N
    block      out = post(silu(post(x W1^T + b1)) W2^T + b2 + x)

RMSNorm: x * rsqrt(mean(x^2) + eps); LayerNorm: (x - mean) * rsqrt(var + eps), var biased.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["compute_dtype", "normalize", "prenorm_linear", "postnorm_linear", "postnorm_mlp",
           "row_stats"]


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _c(t: Optional[Tensor], dt) -> Optional[Tensor]:
    return None if t is None else t.to(dt)


def normalize(h: Tensor, g: Optional[Tensor], beta: Optional[Tensor], eps: float, offset: float,
              is_ln: bool) -> Tensor:
    """norm(h) * (offset + g) + beta over the last dim, in h's dtype (g, beta: None or [L])."""
    if is_ln:
        h = h - h.mean(-1, keepdim=True)
    n = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)
    if g is not None:
        n = n * (g.to(h.dtype) + offset)
    if beta is not None:
        n = n + beta.to(h.dtype)
    return n


def row_stats(x2: Tensor, eps: float, is_ln: bool) -> tuple[Tensor, Tensor]:
    """rstd [M] and mean ([M]; empty for RMSNorm) of x2 [M, K] rows, fp32 (the fused forward's)."""
    xf = x2.float()
    if is_ln:
        mean = xf.mean(-1)
        xf = xf - mean[:, None]
    else:
        mean = xf.new_empty(0)
    return torch.rsqrt(xf.square().mean(-1) + eps), mean


def prenorm_linear(x: Tensor, norm_weight: Optional[Tensor], norm_bias: Optional[Tensor],
                   weights: Sequence[Tensor], biases: Optional[Sequence[Optional[Tensor]]],
                   eps: float, offset: float, is_ln: bool) -> Tensor:
    """[..., sum N_i]: the siblings' outputs side by side."""
    dt = compute_dtype(x.dtype)
    n = normalize(x.to(dt), norm_weight, norm_bias, eps, offset, is_ln)
    outs = [F.linear(n, w.to(dt), None if biases is None else _c(biases[i], dt))
            for i, w in enumerate(weights)]
    y = outs[0] if len(outs) == 1 else torch.cat(outs, -1)
    return y.to(x.dtype)


def postnorm_linear(x: Tensor, weight: Tensor, norm_weight: Tensor, norm_bias: Optional[Tensor],
                    eps: float, bias: Optional[Tensor], residual: Optional[Tensor], offset: float,
                    is_ln: bool) -> Tensor:
    dt = compute_dtype(x.dtype)
    h = F.linear(x.to(dt), weight.to(dt), _c(bias, dt))
    if residual is not None:
        h = h + residual.to(dt)
    return normalize(h, norm_weight, norm_bias, eps, offset, is_ln).to(x.dtype)


def postnorm_mlp(x: Tensor, w1: Tensor, g1: Tensor, beta1: Optional[Tensor], b1: Optional[Tensor],
                 w2: Tensor, g2: Tensor, beta2: Optional[Tensor], b2: Optional[Tensor], eps: float,
                 is_ln: bool) -> Tensor:
    """out = norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x); the hidden activation is rounded to
    x's dtype between the two halves, as the fused forward stores it."""
    a = F.silu(postnorm_linear(x, w1, g1, beta1, eps, b1, None, 0.0, is_ln))
    return postnorm_linear(a, w2, g2, beta2, eps, b2, x, 0.0, is_ln)
