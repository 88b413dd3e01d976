"""`FlashNormAttention`: the Kunlun PFFN attention block as one trainable module.

    out = RMSNorm(attend(LayerNorm(x)) + LayerNorm(x)) + x       (normfuse.reference_attention)

Both norms span all H * D features of a token row; the attention has no projections (x, after its
LayerNorm, is the query; k and v are inputs), so its only parameters are the norms' optional
affines. Forward: the fused kernel (`normfuse.ops.flash_norm_attention`); backward: through the
op's autograd (`normfuse.ops.flash_norm_attention_bwd`).
"""
from __future__ import annotations

import torch
from torch import nn

from ..ops.flash_norm_attention import flash_norm_attention
from ..reference_attention import ACTIVATIONS

__all__ = ["FlashNormAttention"]


class FlashNormAttention(nn.Module):
    """`forward(x [T, H, D], k, v [B, L, Hkv, D], offsets [B + 1], max_seqlen=None)`.

    `ln_affine` / `ln_bias` / `rms_affine`: the LayerNorm's weight and bias and the RMSNorm's
    weight (each [H * D]; off by default, as in the blog). `activation`: "gelu_tanh" (default),
    "silu", "relu", "relu2" (GDPA) or "softmax"; `qk_scale`: see normfuse.reference_attention
    (None: 1.0 for GDPA, 1/sqrt(D) for softmax)."""

    def __init__(self, num_heads: int, head_dim: int, *, activation: str = "gelu_tanh",
                 qk_scale: float | None = None, eps: float = 1e-5, rms_eps: float | None = None,
                 ln_affine: bool = False, ln_bias: bool = False, rms_affine: bool = False,
                 device=None, dtype=None):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"FlashNormAttention: unknown activation {activation!r}; expected one "
                             f"of {ACTIVATIONS}")
        kw = {"device": device, "dtype": dtype}
        n = num_heads * head_dim
        self.num_heads, self.head_dim = num_heads, head_dim
        self.activation, self.qk_scale = activation, qk_scale
        self.eps, self.rms_eps = eps, rms_eps
        self.ln_weight = nn.Parameter(torch.ones(n, **kw)) if ln_affine else None
        self.ln_bias = nn.Parameter(torch.zeros(n, **kw)) if ln_bias else None
        self.rms_weight = nn.Parameter(torch.ones(n, **kw)) if rms_affine else None

    @classmethod
    def from_modules(cls, layer_norm: nn.LayerNorm, rms_norm: "nn.RMSNorm", num_heads: int, *,
                     activation: str = "gelu_tanh", qk_scale: float | None = None):
        """Build from the block's two torch norms over the H * D features of a row:
        `layer_norm` (an nn.LayerNorm, with or without elementwise affine and bias) before the
        attention and `rms_norm` (an nn.RMSNorm) after the inner residual. There is no attention
        module to convert: the block has no projections (the attention is parameter-free), so
        the attention is described by `num_heads`, `activation` and `qk_scale`. Weights are
        copied; eps is taken from each norm (nn.RMSNorm's eps=None means its dtype's epsilon)."""
        if not isinstance(layer_norm, nn.LayerNorm):
            raise TypeError(f"from_modules: layer_norm must be an nn.LayerNorm, got "
                            f"{type(layer_norm).__name__}")
        if not isinstance(rms_norm, nn.RMSNorm):
            raise TypeError(f"from_modules: rms_norm must be an nn.RMSNorm, got {type(rms_norm).__name__}")
        shape = tuple(layer_norm.normalized_shape)
        if len(shape) != 1 or tuple(rms_norm.normalized_shape) != shape:
            raise ValueError("from_modules: both norms must normalize one dimension of H * D features, "
                             f"got {shape} and {tuple(rms_norm.normalized_shape)}")
        n = shape[0]
        if n % num_heads:
            raise ValueError(f"from_modules: {n} features do not split into {num_heads} heads")
        ref = layer_norm.weight if layer_norm.weight is not None else rms_norm.weight
        kw = {} if ref is None else {"device": ref.device, "dtype": ref.dtype}
        rms_eps = rms_norm.eps
        if rms_eps is None:
            rms_eps = torch.finfo(ref.dtype if ref is not None else torch.get_default_dtype()).eps
        m = cls(num_heads, n // num_heads, activation=activation, qk_scale=qk_scale,
                eps=layer_norm.eps, rms_eps=rms_eps, ln_affine=layer_norm.weight is not None,
                ln_bias=layer_norm.bias is not None, rms_affine=rms_norm.weight is not None, **kw)
        with torch.no_grad():
            for mine, theirs in ((m.ln_weight, layer_norm.weight), (m.ln_bias, layer_norm.bias),
                                 (m.rms_weight, rms_norm.weight)):
                if mine is not None:
                    mine.copy_(theirs)
        return m

    def forward(self, x, k, v, offsets, max_seqlen: int | None = None):
        def cast(p):
            return None if p is None else p.to(x.dtype)
        return flash_norm_attention(x, k, v, offsets, activation=self.activation,
                                    qk_scale=self.qk_scale, ln_weight=cast(self.ln_weight),
                                    ln_bias=cast(self.ln_bias), rms_weight=cast(self.rms_weight),
                                    eps=self.eps, rms_eps=self.rms_eps, max_seqlen=max_seqlen)

    def extra_repr(self) -> str:
        return (f"num_heads={self.num_heads}, head_dim={self.head_dim}, activation={self.activation}, "
                f"qk_scale={self.qk_scale}, eps={self.eps}, rms_eps={self.rms_eps}, "
                f"ln_affine={self.ln_weight is not None}, ln_bias={self.ln_bias is not None}, "
                f"rms_affine={self.rms_weight is not None}")
