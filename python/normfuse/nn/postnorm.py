"""Post-norm modules (`nn.Linear -> norm`) and the block that chains them; all train.

- `LinearRMSNorm` / `LinearLayerNorm`: z = norm(x W^T + b [+ residual]) in one kernel
  (`normfuse.ops.linear_rmsnorm` / `linear_layernorm`); under autograd the training form of the
  kernel also saves h = x W^T + b + r and the row statistics, and the backward is
  `normfuse.ops.training`'s (the norm backward at op level, then cuBLAS GEMMs).
- `PostNormMLP`: out = norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x), two fused post-norm
  kernels forward; backward regrouped: norm1's backward (with SiLU') runs in the epilogue of
  linear 2's dX GEMM, so both backward norms are epilogue fusions of a GEMM or a row kernel.
- `from_modules(...)` converts a torch pair (nn.Linear + nn.RMSNorm / nn.LayerNorm), copying the
  parameters; the pre-norm modules get the same classmethod (`(norm, linear)` order).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..ops.functional import linear_layernorm, linear_rmsnorm, postnorm_mlp
from .common import copy_params, norm_eps, reset_linear, split_pair
from .modules import LayerNormLinear, RMSNormLinear, _PreNormLinear

__all__ = ["LinearRMSNorm", "LinearLayerNorm", "PostNormMLP", "from_modules"]


class _PostNormLinear(nn.Module):
    def __init__(self, in_features, out_features, eps, bias, device, dtype, offset):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.in_features, self.out_features, self.eps = in_features, out_features, eps
        self.offset = float(offset)
        self.weight = nn.Parameter(torch.empty(out_features, in_features, **kw))
        self.bias = nn.Parameter(torch.empty(out_features, **kw)) if bias else None
        self.norm_weight = nn.Parameter(torch.empty(out_features, **kw))

    def _reset_linear(self) -> None:
        reset_linear(self.weight, self.bias, self.in_features)

    _reset_norm_weight = _PreNormLinear._reset_norm_weight
    extra_repr = _PreNormLinear.extra_repr


class LinearRMSNorm(_PostNormLinear):
    """`nn.RMSNorm(nn.Linear(x) + residual)` in one kernel; the norm's scale is offset + g
    (`norm_weight` initialised so that it is 1)."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-6, bias: bool = False,
                 device=None, dtype=None, offset: float = 0.0):
        super().__init__(in_features, out_features, eps, bias, device, dtype, offset)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._reset_norm_weight()
        self._reset_linear()

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return linear_rmsnorm(x, self.weight, self.norm_weight, self.eps, self.bias, residual,
                              offset=self.offset)

    @classmethod
    def from_modules(cls, a: nn.Module, b: nn.Module) -> "LinearRMSNorm":
        norm, linear = split_pair(a, b)
        if not isinstance(norm, nn.RMSNorm):
            raise TypeError(f"LinearRMSNorm.from_modules: needs nn.RMSNorm, got {type(norm).__name__}")
        return copy_params(cls(linear.in_features, linear.out_features,
                               norm_eps(norm, linear.weight.dtype), linear.bias is not None,
                               linear.weight.device, linear.weight.dtype), norm, linear,
                           linear.out_features)


class LinearLayerNorm(_PostNormLinear):
    """`nn.LayerNorm(nn.Linear(x) + residual)` in one kernel (`offset` as LinearRMSNorm's)."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5, bias: bool = False,
                 device=None, dtype=None, offset: float = 0.0):
        super().__init__(in_features, out_features, eps, bias, device, dtype, offset)
        self.norm_bias = nn.Parameter(torch.empty(out_features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._reset_norm_weight()
        nn.init.zeros_(self.norm_bias)
        self._reset_linear()

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return linear_layernorm(x, self.weight, self.norm_weight, self.norm_bias, self.eps,
                                self.bias, residual, offset=self.offset)

    @classmethod
    def from_modules(cls, a: nn.Module, b: nn.Module) -> "LinearLayerNorm":
        norm, linear = split_pair(a, b)
        if not isinstance(norm, nn.LayerNorm):
            raise TypeError(f"LinearLayerNorm.from_modules: needs nn.LayerNorm, got {type(norm).__name__}")
        return copy_params(cls(linear.in_features, linear.out_features, norm.eps,
                               linear.bias is not None, linear.weight.device, linear.weight.dtype),
                           norm, linear, linear.out_features)


class PostNormMLP(nn.Module):
    """out = norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x): linear -> norm -> SiLU -> linear ->
    norm with a residual, norm = RMSNorm (or LayerNorm with `layernorm=True`). Forward: two fused
    post-norm kernels; backward: norm1's backward fused into linear 2's dX GEMM epilogue (the
    regrouping, `normfuse.ops.postnorm_mlp`)."""

    def __init__(self, dim: int, hidden: int, eps: float = 1e-6, bias: bool = True,
                 layernorm: bool = False, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.dim, self.hidden, self.eps, self.layernorm = dim, hidden, eps, layernorm
        self.w1 = nn.Parameter(torch.empty(hidden, dim, **kw))
        self.b1 = nn.Parameter(torch.empty(hidden, **kw)) if bias else None
        self.g1 = nn.Parameter(torch.ones(hidden, **kw))
        self.beta1 = nn.Parameter(torch.zeros(hidden, **kw)) if layernorm else None
        self.w2 = nn.Parameter(torch.empty(dim, hidden, **kw))
        self.b2 = nn.Parameter(torch.empty(dim, **kw)) if bias else None
        self.g2 = nn.Parameter(torch.ones(dim, **kw))
        self.beta2 = nn.Parameter(torch.zeros(dim, **kw)) if layernorm else None
        for w, b in ((self.w1, self.b1), (self.w2, self.b2)):
            nn.init.kaiming_uniform_(w, a=math.sqrt(5))
            if b is not None:
                bound = 1 / math.sqrt(w.shape[1])
                nn.init.uniform_(b, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return postnorm_mlp(x, self.w1, self.g1, self.beta1, self.b1, self.w2, self.g2, self.beta2,
                            self.b2, self.eps, layernorm=self.layernorm)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        """The same block in plain torch (eager / torch.compile baseline)."""
        import torch.nn.functional as F

        def norm(h, g, b):
            return (F.layer_norm(h, (h.shape[-1],), g, b, self.eps) if self.layernorm else
                    F.rms_norm(h, (h.shape[-1],), g, self.eps))
        a = F.silu(norm(F.linear(x, self.w1, self.b1), self.g1, self.beta1))
        return norm(F.linear(a, self.w2, self.b2) + x, self.g2, self.beta2)

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, hidden={self.hidden}, eps={self.eps}, "
                f"norm={'LayerNorm' if self.layernorm else 'RMSNorm'}, bias={self.b1 is not None}")


def from_modules(a: nn.Module, b: nn.Module) -> nn.Module:
    """The fused module for a torch pair: (norm, linear) -> RMSNormLinear / LayerNormLinear,
    (linear, norm) -> LinearRMSNorm / LinearLayerNorm (the order says which side the norm is on)."""
    norm, linear = split_pair(a, b)
    if a is norm:  # pre-norm
        return (RMSNormLinear if isinstance(norm, nn.RMSNorm) else LayerNormLinear).from_modules(norm, linear)
    return (LinearRMSNorm if isinstance(norm, nn.RMSNorm) else LinearLayerNorm).from_modules(linear, norm)
