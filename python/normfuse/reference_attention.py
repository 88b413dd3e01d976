"""Pure-torch reference for FlashNormAttention (issue 12): the definition every kernel is checked
against, and the convention the ops implement.

Per token row t of the attention's query input X [T, H, D] (N = H*D, no projections)::

    ln_q = LayerNorm_N(X)                 # over all H*D features of the row, eps, affine optional
    g_h  = attend_h(ln_q_h, K_h, V_h)     # per head h, against the K/V of t's batch
    y    = RMSNorm_N(g + ln_q)            # inner residual, again over all H*D features
    out  = y + X                          # outer residual (the raw, pre-LayerNorm input)

`attend` is one of
- GDPA (``activation`` = "gelu_tanh" (default), "silu", "relu", "relu2"):
  ``S = q K^T`` (no 1/sqrt(D)), ``P = act(S) * qk_scale`` (the scale after the activation;
  ``qk_scale`` defaults to 1.0), ``g = P V``: no softmax, no normalization over the keys.
- softmax attention (``activation`` = "softmax"): ``g = softmax(S * qk_scale) V`` with
  ``qk_scale`` defaulting to 1/sqrt(D).

Layout: X is jagged: batch b owns rows ``offsets[b] <= t < offsets[b+1]`` (int, B+1 entries,
non-decreasing, offsets[0] = 0, offsets[B] = T; empty sequences allowed). K and V are dense per
batch: ``[B, L, Hkv, D]`` with H a multiple of Hkv (GQA: query head h reads kv head
h // (H // Hkv)). Every key of a batch is visible to every query of that batch (no causal mask).

The statistics a forward saves for the backward are ``mean`` and ``rstd`` of the LayerNorm and
``rrms`` of the RMSNorm, each [T] float32 (`flash_norm_attention_ref(..., return_stats=True)`);
the training forward also saves the attention's output ``g = attend(ln_q)`` [T, H, D] and, for
softmax, ``lse`` [T, H], the log-sum-exp of ``q k^T * qk_scale`` over the keys (float32 in the
stats).
LayerNorm: ``(x - mean) * rstd * w + b`` with ``rstd = 1/sqrt(var + eps)`` (biased variance);
RMSNorm: ``z * rrms * w`` with ``rrms = 1/sqrt(mean(z^2) + eps)``.
"""
from __future__ import annotations

import math

import torch

__all__ = ["ACTIVATIONS", "activation_fn", "default_qk_scale", "flash_norm_attention_ref",
           "flash_norm_attention_grads", "check_layout"]

ACTIVATIONS = ("gelu_tanh", "silu", "relu", "relu2", "softmax")


def activation_fn(name: str):
    """The elementwise activation of GDPA as a torch function (any float dtype)."""
    if name == "gelu_tanh":
        return lambda s: 0.5 * s * (1.0 + torch.tanh(0.7978845608028654 * (s + 0.044715 * s * s * s)))
    if name == "silu":
        return lambda s: s * torch.sigmoid(s)
    if name == "relu":
        return torch.relu
    if name == "relu2":
        return lambda s: torch.relu(s).square()
    raise ValueError(f"unknown GDPA activation {name!r}; expected one of {ACTIVATIONS[:-1]}")


def default_qk_scale(activation: str, head_dim: int) -> float:
    """1.0 for GDPA (applied after the activation), 1/sqrt(D) for softmax (applied before it)."""
    return 1.0 / math.sqrt(head_dim) if activation == "softmax" else 1.0


def check_layout(x, k, v, offsets, values: bool = True, host=None) -> tuple[int, int, int, int, int]:
    """Check shapes of (x [T, H, D], k/v [B, L, Hkv, D], offsets [B+1]); return (T, H, D, B, L).
    `values`: also check that the offsets run from 0 to T, non-decreasing, reading them on the
    host (a device-to-host copy) unless `host` is their copy there."""
    if x.dim() != 3:
        raise ValueError(f"x must be [T, H, D], got shape {tuple(x.shape)}")
    if k.dim() != 4 or v.dim() != 4 or k.shape != v.shape:
        raise ValueError(f"k and v must both be [B, L, Hkv, D], got {tuple(k.shape)} and {tuple(v.shape)}")
    T, H, D = x.shape
    B, L, Hkv, Dk = k.shape
    if Dk != D:
        raise ValueError(f"head dim of k/v ({Dk}) differs from x's ({D})")
    if Hkv == 0 or H % Hkv:
        raise ValueError(f"heads of x ({H}) must be a multiple of the heads of k/v ({Hkv})")
    if offsets.dim() != 1 or offsets.numel() != B + 1:
        raise ValueError(f"offsets must have B+1 = {B + 1} entries, got shape {tuple(offsets.shape)}")
    if not values:
        return T, H, D, B, L
    off = offsets.detach().to("cpu", torch.int64) if host is None else host
    if int(off[0]) != 0 or int(off[-1]) != T:
        raise ValueError(f"offsets must start at 0 and end at T = {T}, got {int(off[0])}..{int(off[-1])}")
    if bool((off[1:] < off[:-1]).any()):
        raise ValueError("offsets must be non-decreasing")
    return T, H, D, B, L


def flash_norm_attention_ref(x, k, v, offsets, *, activation: str = "gelu_tanh",
                             qk_scale: float | None = None, ln_weight=None, ln_bias=None,
                             rms_weight=None, eps: float = 1e-5, rms_eps: float | None = None,
                             dtype=torch.float64, return_stats: bool = False):
    """out = RMSNorm(attend(LayerNorm(x)) + LayerNorm(x)) + x, computed in `dtype` (float64 by
    default; pass the input dtype for an eager, unfused baseline). Differentiable (autograd)."""
    T, H, D, B, L = check_layout(x, k, v, offsets)
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    scale = default_qk_scale(activation, D) if qk_scale is None else float(qk_scale)
    rms_eps = eps if rms_eps is None else rms_eps
    up = (lambda t: None if t is None else t.to(dtype))
    N = H * D
    f = _forward(up(x).reshape(T, N), up(k), up(v), offsets, activation, scale,
                 up(ln_weight), up(ln_bias), eps, rms_eps)
    xf, mean, rstd, g, lses, rrms = f.xf, f.mean, f.rstd, f.g, f.lses, f.rrms
    y = f.z * rrms
    if rms_weight is not None:
        y = y * up(rms_weight).reshape(N)
    out = (y + xf).reshape(T, H, D)
    if not return_stats:
        return out
    stats = {"mean": mean.reshape(T).float(), "rstd": rstd.reshape(T).float(),
             "rrms": rrms.reshape(T).float(),
             # what the training forward also saves for the backward: g = attend(ln_q)
             # (float32 here; the kernel keeps x's dtype) and, for softmax, the log-sum-exp of
             # q k^T * qk_scale per row and head
             "g": g.detach().reshape(T, H, D).float()}
    if activation == "softmax":
        stats["lse"] = (torch.cat(lses, dim=0) if lses else xf.new_zeros((0, H))).detach().float()
    return out, stats


class _Forward:
    """What `_forward` computed (attributes named as in the definition)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _forward(xf, kd, vd, offsets, activation, scale, ln_weight, ln_bias, eps, rms_eps):
    """The definition's forward up to the RMSNorm's statistics, from x as [T, N] and k, v in the
    compute dtype: the LayerNorm (mean, rstd, xhat, lnq [T, N]), per batch the scores s and
    probabilities p [H, n, L] (None for an empty sequence) and softmax's log-sum-exp [n, H],
    g = attend(lnq) [T, H, D], z = g + lnq [T, N] and rrms [T, 1]. Differentiable."""
    T, N = xf.shape
    B, L, Hkv, D = kd.shape
    H = N // D
    mean = xf.mean(dim=1, keepdim=True)
    var = (xf - mean).square().mean(dim=1, keepdim=True)
    rstd = torch.rsqrt(var + eps)
    xhat = (xf - mean) * rstd
    lnq = xhat
    if ln_weight is not None:
        lnq = lnq * ln_weight.reshape(N)
    if ln_bias is not None:
        lnq = lnq + ln_bias.reshape(N)
    q3 = lnq.reshape(T, H, D)
    G = H // Hkv
    off = offsets.detach().to("cpu", torch.int64).tolist()
    probs, parts, lses = [], [], []
    for b in range(B):
        q = q3[off[b]:off[b + 1]]                        # [n, H, D]
        if q.shape[0] == 0:
            probs.append(None)
            continue
        kb = kd[b].repeat_interleave(G, dim=1)            # [L, H, D]
        vb = vd[b].repeat_interleave(G, dim=1)
        sc = torch.einsum("thd,lhd->htl", q, kb)
        if activation == "softmax":
            p = torch.softmax(sc * scale, dim=-1)
            lses.append(torch.logsumexp(sc * scale, dim=-1).transpose(0, 1))  # [n, H]
        else:
            p = activation_fn(activation)(sc) * scale
        probs.append((sc, p))
        parts.append(torch.einsum("htl,lhd->thd", p, vb))
    g = torch.cat(parts, dim=0) if parts else q3.new_zeros((0, H, D))
    z = (g + q3).reshape(T, N)
    rrms = torch.rsqrt(z.square().mean(dim=1, keepdim=True) + rms_eps)
    return _Forward(xf=xf, mean=mean, rstd=rstd, xhat=xhat, lnq=lnq, q3=q3, probs=probs,
                    lses=lses, g=g, z=z, rrms=rrms)


def _activation_grad(name: str, s):
    """d act(s) / ds for the GDPA activations (the forms `activation_fn` computes)."""
    if name == "gelu_tanh":
        c = 0.7978845608028654
        t = torch.tanh(c * (s + 0.044715 * s * s * s))
        return 0.5 * (1.0 + t) + 0.5 * s * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * s * s)
    if name == "silu":
        sig = torch.sigmoid(s)
        return sig * (1.0 + s * (1.0 - sig))
    if name == "relu":
        return (s > 0).to(s.dtype)
    if name == "relu2":
        return 2.0 * torch.relu(s)
    raise ValueError(f"unknown GDPA activation {name!r}; expected one of {ACTIVATIONS[:-1]}")


def flash_norm_attention_grads(dout, x, k, v, offsets, *, activation: str = "gelu_tanh",
                               qk_scale: float | None = None, ln_weight=None, ln_bias=None,
                               rms_weight=None, eps: float = 1e-5, rms_eps: float | None = None,
                               dtype=torch.float64):
    """(dx, dk, dv, d ln_weight, d ln_bias, d rms_weight) of `flash_norm_attention_ref` for the
    upstream gradient dout [T, H, D], in closed form (no autograd: it runs where no graph is
    recorded, e.g. inside a custom op's implementation), computed in `dtype` and returned in it;
    None for an absent weight, the others shaped like their weight. The forward is recomputed:

        dz    = rrms (dy - zhat mean_N(dy zhat)),  dy = dout * rms_weight, zhat = z rrms
        dP    = dz_h V^T;  dV = P^T dz_h;  dS = P (dP - rowsum(dP P)) scale (softmax) or
                act'(S) dP scale (GDPA);  dq_h = dS K;  dK = dS^T q_h   (summed over a GQA group)
        dln_q = dz + dq;  dx = dout + rstd (dl - mean_N(dl) - xhat mean_N(dl xhat)),
                dl = dln_q * ln_weight
    """
    T, H, D, B, L = check_layout(x, k, v, offsets)
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    scale = default_qk_scale(activation, D) if qk_scale is None else float(qk_scale)
    rms_eps = eps if rms_eps is None else rms_eps
    up = (lambda t: None if t is None else t.to(dtype))
    N = H * D
    xf, kd, vd, do = up(x).reshape(T, N), up(k), up(v), up(dout).reshape(T, N)
    lnw = None if ln_weight is None else up(ln_weight).reshape(N)
    lnb = None if ln_bias is None else up(ln_bias).reshape(N)
    rmw = None if rms_weight is None else up(rms_weight).reshape(N)
    f = _forward(xf, kd, vd, offsets, activation, scale, lnw, lnb, eps, rms_eps)
    rstd, xhat, q3, probs, rrms = f.rstd, f.xhat, f.q3, f.probs, f.rrms
    Hkv = k.shape[2]
    G = H // Hkv
    off = offsets.detach().to("cpu", torch.int64).tolist()
    zhat = f.z * rrms
    # the backward
    d_rmw = None if rmw is None else (do * zhat).sum(0)
    dy = do if rmw is None else do * rmw
    dz = rrms * (dy - zhat * (dy * zhat).mean(dim=1, keepdim=True))
    dz3 = dz.reshape(T, H, D)
    dq = torch.zeros_like(q3)
    dk, dv = torch.zeros_like(kd), torch.zeros_like(vd)
    for b in range(B):
        lo, hi = off[b], off[b + 1]
        if hi == lo:
            continue
        s, p = probs[b]
        q, dg = q3[lo:hi], dz3[lo:hi]
        kb, vb = kd[b].repeat_interleave(G, dim=1), vd[b].repeat_interleave(G, dim=1)
        dp = torch.einsum("thd,lhd->htl", dg, vb)
        dv_rep = torch.einsum("htl,thd->lhd", p, dg)
        if activation == "softmax":
            ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale
        else:
            ds = _activation_grad(activation, s) * dp * scale
        dq[lo:hi] = torch.einsum("htl,lhd->thd", ds, kb)
        dk_rep = torch.einsum("htl,thd->lhd", ds, q)
        dk[b] = dk_rep.reshape(L, Hkv, G, D).sum(2)
        dv[b] = dv_rep.reshape(L, Hkv, G, D).sum(2)
    dlnq = dz + dq.reshape(T, N)
    d_lnw = None if lnw is None else (dlnq * xhat).sum(0)
    d_lnb = None if lnb is None else dlnq.sum(0)
    dl = dlnq if lnw is None else dlnq * lnw
    dx = do + rstd * (dl - dl.mean(dim=1, keepdim=True)
                      - xhat * (dl * xhat).mean(dim=1, keepdim=True))

    def like(gr, w):
        return None if w is None else gr.reshape(w.shape)
    return (dx.reshape(T, H, D), dk, dv, like(d_lnw, ln_weight), like(d_lnb, ln_bias),
            like(d_rmw, rms_weight))
