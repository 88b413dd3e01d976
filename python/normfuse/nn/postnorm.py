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

from ..ops.postnorm_linear import linear_layernorm, linear_rmsnorm
from ..ops.training import postnorm_mlp
from .modules import _PreNormLinear

__all__ = ["LinearRMSNorm", "LinearLayerNorm", "PostNormMLP", "from_modules"]


def _norm_eps(norm: nn.Module, dtype) -> float:
    eps = getattr(norm, "eps", None)
    return float(eps) if eps is not None else float(torch.finfo(dtype).eps)


def _split_pair(a: nn.Module, b: nn.Module):
    """(norm, linear) in either order."""
    norms = (nn.RMSNorm, nn.LayerNorm)
    if isinstance(a, nn.Linear) and isinstance(b, norms):
        return b, a
    if isinstance(b, nn.Linear) and isinstance(a, norms):
        return a, b
    raise TypeError(f"from_modules: expected an nn.Linear and an nn.RMSNorm or nn.LayerNorm, got "
                    f"{type(a).__name__} and {type(b).__name__}")


def _check_norm_shape(cls: str, norm: nn.Module, n: int) -> None:
    shape = tuple(norm.normalized_shape)
    if shape != (n,):
        raise ValueError(f"{cls}.from_modules: the norm must normalize the last dimension of size "
                         f"{n}, got normalized_shape {shape}")


class _PostNormLinear(nn.Module):
    def __init__(self, in_features, out_features, eps, bias, device, dtype):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.in_features, self.out_features, self.eps = in_features, out_features, eps
        self.weight = nn.Parameter(torch.empty(out_features, in_features, **kw))
        self.bias = nn.Parameter(torch.empty(out_features, **kw)) if bias else None
        self.norm_weight = nn.Parameter(torch.empty(out_features, **kw))

    # nn.Linear's initialisation and repr, as the pre-norm modules
    _reset_linear = _PreNormLinear._reset_linear
    extra_repr = _PreNormLinear.extra_repr


class LinearRMSNorm(_PostNormLinear):
    """`nn.RMSNorm(nn.Linear(x) + residual)` in one kernel."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-6, bias: bool = False,
                 device=None, dtype=None):
        super().__init__(in_features, out_features, eps, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.norm_weight)
        self._reset_linear()

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return linear_rmsnorm(x, self.weight, self.norm_weight, self.eps, self.bias, residual)

    @classmethod
    def from_modules(cls, a: nn.Module, b: nn.Module) -> "LinearRMSNorm":
        norm, linear = _split_pair(a, b)
        if not isinstance(norm, nn.RMSNorm):
            raise TypeError(f"LinearRMSNorm.from_modules: needs nn.RMSNorm, got {type(norm).__name__}")
        return _copy_post(cls(linear.in_features, linear.out_features,
                              _norm_eps(norm, linear.weight.dtype), linear.bias is not None,
                              linear.weight.device, linear.weight.dtype), norm, linear)


class LinearLayerNorm(_PostNormLinear):
    """`nn.LayerNorm(nn.Linear(x) + residual)` in one kernel."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5, bias: bool = False,
                 device=None, dtype=None):
        super().__init__(in_features, out_features, eps, bias, device, dtype)
        self.norm_bias = nn.Parameter(torch.empty(out_features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.norm_weight)
        nn.init.zeros_(self.norm_bias)
        self._reset_linear()

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return linear_layernorm(x, self.weight, self.norm_weight, self.norm_bias, self.eps,
                                self.bias, residual)

    @classmethod
    def from_modules(cls, a: nn.Module, b: nn.Module) -> "LinearLayerNorm":
        norm, linear = _split_pair(a, b)
        if not isinstance(norm, nn.LayerNorm):
            raise TypeError(f"LinearLayerNorm.from_modules: needs nn.LayerNorm, got {type(norm).__name__}")
        return _copy_post(cls(linear.in_features, linear.out_features, norm.eps,
                              linear.bias is not None, linear.weight.device, linear.weight.dtype),
                          norm, linear)


def _copy_post(m: _PostNormLinear, norm: nn.Module, linear: nn.Linear):
    return _copy(m, norm, linear, linear.out_features)


def copy_pre(m: nn.Module, norm: nn.Module, linear: nn.Linear):
    """Parameters of (norm, linear) into a pre-norm module (RMSNormLinear / LayerNormLinear)."""
    return _copy(m, norm, linear, linear.in_features)


def _copy(m: nn.Module, norm: nn.Module, linear: nn.Linear, normalized: int):
    """Copy linear's weight/bias and norm's weight/bias into m; the norm must normalize
    `normalized` features (the linear's output for post-norm, its input for pre-norm)."""
    _check_norm_shape(type(m).__name__, norm, normalized)
    with torch.no_grad():
        m.weight.copy_(linear.weight)
        if linear.bias is not None:
            m.bias.copy_(linear.bias)
        if norm.weight is not None:
            m.norm_weight.copy_(norm.weight)
        if getattr(norm, "bias", None) is not None:
            m.norm_bias.copy_(norm.bias)
    return m


class PostNormMLP(nn.Module):
    """out = norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x): linear -> norm -> SiLU -> linear ->
    norm with a residual, norm = RMSNorm (or LayerNorm with `layernorm=True`). Forward: two fused
    post-norm kernels; backward: norm1's backward fused into linear 2's dX GEMM epilogue (the
    regrouping, `normfuse.ops.training.postnorm_mlp`)."""

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
    from .modules import LayerNormLinear, RMSNormLinear
    norm, linear = _split_pair(a, b)
    if a is norm:  # pre-norm
        return (RMSNormLinear if isinstance(norm, nn.RMSNorm) else LayerNormLinear).from_modules(norm, linear)
    return (LinearRMSNorm if isinstance(norm, nn.RMSNorm) else LinearLayerNorm).from_modules(linear, norm)
