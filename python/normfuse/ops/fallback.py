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
           "row_stats", "norm_forward", "norm_backward"]


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


# ---------------------------------------------------------------------------------------------
# The training ops' reference path: what they save, and their backward (closed form, no autograd
# inside: the ops run below the autograd key, and under a dispatch mode (FlopCounterMode,
# opcheck) nothing would record a graph)
# ---------------------------------------------------------------------------------------------

def _norm_grads(h: Tensor, g, beta, eps, offset, is_ln, dn: Tensor, act: bool = False):
    """(dh, dg, dbeta) of n = normalize(h, g, beta) (SiLU(n) when `act`) for the upstream
    gradient dn, in h's dtype (None where g / beta is None), and n (after SiLU when `act`): the
    standalone norm's forward and closed-form backward (`norm_forward`, `norm_backward`)."""
    n, rstd, mean = norm_forward(h, g, beta, eps, offset, is_ln)
    dn = dn.to(h.dtype)
    if act:  # SiLU'(n) = s (1 + n (1 - s)), s = sigmoid(n)
        s = torch.sigmoid(n)
        dn = dn * (s * (1 + n * (1 - s)))
        n = n * s
    return norm_backward(dn, h, g, rstd, mean, offset, is_ln, g is not None,
                         beta is not None), n


def prenorm_backward(dy, x2, g, beta, weight, eps, offset, is_ln, has_bias):
    """(dx, dg, dbeta, dW, db) of y = normalize(x2) W^T + b (compute dtype; None if absent)."""
    dt = compute_dtype(x2.dtype)
    dyf = dy.to(dt)
    dn = dyf @ weight.to(dt)
    (dx, dg, dbeta), n = _norm_grads(x2.to(dt), g, beta, eps, offset, is_ln, dn)
    return dx.to(x2.dtype), dg, dbeta, dyf.t() @ n, (dyf.sum(0) if has_bias else None)


def postnorm_forward_save(x2, weight, g, beta, bias, residual, eps, offset, is_ln, act=False):
    """(z, h, rstd, mean) as the fused training forward returns them: h = x W^T + b + r in x's
    dtype, the statistics of h in fp32 (mean empty for RMSNorm); `act`: z = SiLU(norm(h)), the
    SiLU taken before the rounding (as the kernels do)."""
    dt = compute_dtype(x2.dtype)
    h = F.linear(x2.to(dt), weight.to(dt), _c(bias, dt))
    if residual is not None:
        h = h + residual.to(dt)
    z = normalize(h, g, beta, eps, offset, is_ln)
    z = (F.silu(z) if act else z).to(x2.dtype)
    rstd, mean = row_stats(h, eps, is_ln)
    return z, h.to(x2.dtype), rstd, mean


def postnorm_backward(dz, x2, weight, g, beta, h, eps, offset, is_ln, has_bias: bool = True):
    """(dx, dW, dg, dbeta, db, dh) of z = normalize(h), h = x W^T + b + r, from the saved h (db
    None without a bias: no column sum)."""
    dt = compute_dtype(x2.dtype)
    (dh, dg, dbeta), _ = _norm_grads(h.to(dt), g, beta, eps, offset, is_ln, dz.to(dt))
    dx = (dh @ weight.to(dt)).to(x2.dtype)
    dw = dh.t() @ x2.to(dt)
    return (dx, dw, dg, (dbeta if is_ln else None), dh.sum(0) if has_bias else None,
            dh.to(x2.dtype))


def postnorm_mlp_save(x2, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, is_ln):
    """What the block's fused forward returns: out, h1, rstd1, mean1, a, h2, rstd2, mean2."""
    a, h1, rstd1, mean1 = postnorm_forward_save(x2, w1, g1, beta1, b1, None, eps, 0.0, is_ln,
                                                act=True)
    out, h2, rstd2, mean2 = postnorm_forward_save(a, w2, g2, beta2, b2, x2, eps, 0.0, is_ln)
    return out, h1, rstd1, mean1, a, h2, rstd2, mean2


def postnorm_mlp_backward(dout, x2, w1, g1, beta1, w2, g2, beta2, h1, a, h2, eps, is_ln,
                          has_b1: bool = True, has_b2: bool = True):
    """The block's gradients (dx, dW1, dg1, dbeta1, db1, dW2, dg2, dbeta2, db2) from the saved
    h1, a, h2 (SiLU's derivative through the recomputed norm1 output; db1 / db2 None without
    that bias)."""
    dt = compute_dtype(x2.dtype)
    (dh2, dg2, dbeta2), _ = _norm_grads(h2.to(dt), g2, beta2, eps, 0.0, is_ln, dout.to(dt))
    dw2 = dh2.t() @ a.to(dt)
    da = dh2 @ w2.to(dt)
    (dh1, dg1, dbeta1), _ = _norm_grads(h1.to(dt), g1, beta1, eps, 0.0, is_ln, da, act=True)
    dw1 = dh1.t() @ x2.to(dt)
    dx = (dh1 @ w1.to(dt) + dh2).to(x2.dtype)
    return (dx, dw1, dg1, dbeta1 if is_ln else None, dh1.sum(0) if has_b1 else None, dw2, dg2,
            dbeta2 if is_ln else None, dh2.sum(0) if has_b2 else None)


# ---------------------------------------------------------------------------------------------
# The standalone norm (normfuse::norm_fwd / norm_bwd): forward with its statistics, and the
# closed-form backward from them (the kernels' formulas, here in the compute dtype)
# ---------------------------------------------------------------------------------------------

def norm_forward(x2: Tensor, g: Optional[Tensor], beta: Optional[Tensor], eps: float,
                 offset: float, is_ln: bool) -> tuple[Tensor, Tensor, Tensor]:
    """(y in x2's dtype, rstd [M], mean [M] or empty) of y = norm(x2) (offset + g) [+ beta]; the
    statistics in the compute dtype (fp32; fp64 for fp64 x)."""
    dt = compute_dtype(x2.dtype)
    xf = x2.to(dt)
    if is_ln:
        mean = xf.mean(-1)
        xf = xf - mean[:, None]
    else:
        mean = xf.new_empty(0)
    rstd = torch.rsqrt(xf.square().mean(-1) + eps)
    y = xf * rstd[:, None]
    if g is not None:
        y = y * (g.to(dt) + offset)
    if beta is not None:
        y = y + beta.to(dt)
    return y.to(x2.dtype), rstd, mean


def norm_backward(dy: Tensor, x2: Tensor, g: Optional[Tensor], rstd: Tensor, mean: Tensor,
                  offset: float, is_ln: bool, want_dg: bool, want_db: bool
                  ) -> tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
    """(dx in x2's dtype, dg, dbeta in the compute dtype or None) from the saved statistics:
    xhat = (x - mean) rstd, dyw = dy (offset + g),
    dx = rstd (dyw - xhat mean_N(dyw xhat) - mean_N(dyw)) (RMSNorm: no mean_N(dyw)),
    dg = sum_rows dy xhat, dbeta = sum_rows dy."""
    dt = compute_dtype(x2.dtype)
    dyf = dy.to(dt)
    xhat = x2.to(dt)
    if is_ln:
        xhat = xhat - mean.to(dt)[:, None]
    xhat = xhat * rstd.to(dt)[:, None]
    dyw = dyf * (g.to(dt) + offset) if g is not None else dyf
    dx = dyw - xhat * (dyw * xhat).mean(-1, keepdim=True)
    if is_ln:
        dx = dx - dyw.mean(-1, keepdim=True)
    dx = dx * rstd.to(dt)[:, None]
    dg = (dyf * xhat).sum(0) if want_dg else None
    db = dyf.sum(0) if want_db else None
    return dx.to(x2.dtype), dg, db
