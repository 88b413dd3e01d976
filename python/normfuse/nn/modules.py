"""Drop-in modules for `norm -> nn.Linear` pairs, backed by the fused pre-norm kernels.

They train: when autograd needs a graph (grad mode on and an input or parameter requiring grad)
`forward` goes through the ops' autograd path (`normfuse.ops.training`: fused forward, backward
with the norm backward fused into the dX GEMM's epilogue); otherwise the inference path below.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..ops.prenorm_linear import layernorm_linear, rmsnorm_linear
from ..reference import fold_norm_weight

__all__ = ["RMSNormLinear", "LayerNormLinear"]


def _needs_grad(module: nn.Module, x: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and (x.requires_grad or any(p.requires_grad for p in module.parameters()))


def _version(t: torch.Tensor):
    try:
        return t._version
    except RuntimeError:  # inference tensors have no version counter: never trust a cache
        return None


class _PreNormLinear(nn.Module):
    def __init__(self, in_features, out_features, eps, bias, device, dtype):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.out_features = out_features
        self.eps = eps
        self.norm_weight = nn.Parameter(torch.empty(in_features, **kw))
        self.weight = nn.Parameter(torch.empty(out_features, in_features, **kw))
        self.bias = nn.Parameter(torch.empty(out_features, **kw)) if bias else None

    def _reset_linear(self) -> None:
        # nn.Linear's initialisation.
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            nn.init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"eps={self.eps}, bias={self.bias is not None}")


class RMSNormLinear(_PreNormLinear):
    """`nn.Linear(nn.RMSNorm(x))` in one kernel: y = rmsnorm(x) @ W^T + b.

    Parameters: `norm_weight` [in_features] (ones), `weight` [out_features, in_features] and
    `bias` [out_features] (nn.Linear's initialisation). `fold=True` (the default, like
    `rmsnorm_linear`'s): in eval mode the module computes W diag(g) once, caches it, and launches
    the kernel without g in its k-loop; the cache is rebuilt when either parameter changes
    (tracked through the tensors' version counters and storage) or the module moves to another
    device or dtype; in training mode the op folds (and caches) per call. `fold=False` applies g
    to the A tile in the k-loop.
    """

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-6, bias: bool = False,
                 device=None, dtype=None, fold: bool = True):
        super().__init__(in_features, out_features, eps, bias, device, dtype)
        self.fold = fold
        self._folded = None
        self._folded_key = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.norm_weight)
        self._reset_linear()
        self._folded = self._folded_key = None

    def folded_weight(self) -> torch.Tensor:
        """W diag(g), cached until `weight` or `norm_weight` changes."""
        w, g = self.weight, self.norm_weight
        key = (_version(w), _version(g), w.data_ptr(), g.data_ptr(), w.device, w.dtype, g.dtype)
        if self._folded is None or self._folded_key != key or None in key[:2]:
            with torch.no_grad():
                self._folded = fold_norm_weight(w.detach(), g.detach())
            self._folded_key = key
        return self._folded

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _needs_grad(self, x):
            return rmsnorm_linear(x, self.norm_weight, self.weight, self.eps, self.bias)
        bias = None if self.bias is None else self.bias.detach()
        if self.fold and not self.training:
            return rmsnorm_linear(x, None, self.folded_weight(), self.eps, bias, folded=True)
        return rmsnorm_linear(x, self.norm_weight.detach(), self.weight.detach(), self.eps, bias,
                              fold=self.fold)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", fold={self.fold}"

    @classmethod
    def from_modules(cls, norm: nn.Module, linear: nn.Linear, **kw) -> "RMSNormLinear":
        """From an (nn.RMSNorm, nn.Linear) pair, parameters copied."""
        from .postnorm import _norm_eps, _split_pair, copy_pre
        norm, linear = _split_pair(norm, linear)
        if not isinstance(norm, nn.RMSNorm):
            raise TypeError(f"RMSNormLinear.from_modules: needs nn.RMSNorm, got {type(norm).__name__}")
        w = linear.weight
        return copy_pre(cls(linear.in_features, linear.out_features, _norm_eps(norm, w.dtype),
                            linear.bias is not None, w.device, w.dtype, **kw), norm, linear)


class LayerNormLinear(_PreNormLinear):
    """`nn.Linear(nn.LayerNorm(x))` in one kernel: y = layer_norm(x) @ W^T + b.

    Parameters: `norm_weight` (ones) and `norm_bias` (zeros) [in_features], `weight` and `bias`
    as nn.Linear.
    """

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5, bias: bool = False,
                 device=None, dtype=None):
        super().__init__(in_features, out_features, eps, bias, device, dtype)
        self.norm_bias = nn.Parameter(torch.empty(in_features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.ones_(self.norm_weight)
        nn.init.zeros_(self.norm_bias)
        self._reset_linear()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if _needs_grad(self, x):
            return layernorm_linear(x, self.norm_weight, self.norm_bias, self.weight, self.eps,
                                    self.bias)
        bias = None if self.bias is None else self.bias.detach()
        return layernorm_linear(x, self.norm_weight.detach(), self.norm_bias.detach(),
                                self.weight.detach(), self.eps, bias)

    @classmethod
    def from_modules(cls, norm: nn.Module, linear: nn.Linear) -> "LayerNormLinear":
        """From an (nn.LayerNorm, nn.Linear) pair, parameters copied."""
        from .postnorm import _split_pair, copy_pre
        norm, linear = _split_pair(norm, linear)
        if not isinstance(norm, nn.LayerNorm):
            raise TypeError(f"LayerNormLinear.from_modules: needs nn.LayerNorm, got {type(norm).__name__}")
        w = linear.weight
        return copy_pre(cls(linear.in_features, linear.out_features, norm.eps,
                            linear.bias is not None, w.device, w.dtype), norm, linear)
