"""Drop-in modules for `norm -> nn.Linear` pairs, backed by the fused pre-norm ops.

`forward` is one call of the functional op (`normfuse.ops.rmsnorm_linear` /
`layernorm_linear`) with the parameters themselves, in every mode: the op trains under autograd
(normfuse.ops.training), launches the inference kernel otherwise, and computes with reference
math where the fused kernels do not run (CPU, not sm_90). The folded weight W diag(offset + g)
is cached inside the op per parameter version (an in-place update, an optimizer step, a
load_state_dict, is seen at the next call); the module holds no derived state, so `model.to`,
`copy.deepcopy` and state_dict round trips need nothing special.
"""
from __future__ import annotations

import torch
from torch import nn

from ..ops.functional import layernorm_linear, rmsnorm_linear
from ..ops.prenorm_linear import folded_weight
from .common import copy_params, norm_eps, reset_linear, split_pair

__all__ = ["RMSNormLinear", "LayerNormLinear"]


class _PreNormLinear(nn.Module):
    def __init__(self, in_features, out_features, eps, bias, device, dtype, offset):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.out_features = out_features
        self.eps = eps
        self.offset = float(offset)
        self.norm_weight = nn.Parameter(torch.empty(in_features, **kw))
        self.weight = nn.Parameter(torch.empty(out_features, in_features, **kw))
        self.bias = nn.Parameter(torch.empty(out_features, **kw)) if bias else None


    def _reset_linear(self) -> None:
        reset_linear(self.weight, self.bias, self.in_features)

    def _reset_norm_weight(self) -> None:
        # the norm's scale offset + g starts at 1
        nn.init.constant_(self.norm_weight, 1.0 - self.offset)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"eps={self.eps}, bias={self.bias is not None}"
                + (f", offset={self.offset}" if self.offset else ""))


class RMSNormLinear(_PreNormLinear):
    """`nn.Linear(nn.RMSNorm(x))` in one kernel: y = rmsnorm(x) (offset + g) @ W^T + b.

    Parameters: `norm_weight` [in_features] (initialised so that offset + g = 1), `weight`
    [out_features, in_features] and `bias` [out_features] (nn.Linear's initialisation).
    `offset`: Gemma's (1 + w) norm is offset=1.0. `fold=True` (the default, as
    `rmsnorm_linear`'s): the scale is folded into W (W diag(offset + g), cached inside the op
    per parameter version); `fold=False` applies it to the A tile in the k-loop.
    """

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-6, bias: bool = False,
                 device=None, dtype=None, fold: bool = True, offset: float = 0.0):
        super().__init__(in_features, out_features, eps, bias, device, dtype, offset)
        self.fold = fold
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._reset_norm_weight()
        self._reset_linear()

    def folded_weight(self) -> torch.Tensor:
        """W diag(offset + g) as the op folds it (cached until `weight` or `norm_weight` changes)."""
        return folded_weight(self.weight.detach(), self.norm_weight.detach(), self.offset)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # parameters read from _parameters where registered there (through nn.Module.__getattr__
        # each costs ~1 us of host time); otherwise (a parametrization's property, bias=None)
        # as attributes
        p = self._parameters
        g = p["norm_weight"] if "norm_weight" in p else self.norm_weight
        w = p["weight"] if "weight" in p else self.weight
        b = p["bias"] if "bias" in p else self.bias
        return rmsnorm_linear(x, g, w, self.eps, b, offset=self.offset, fold=self.fold)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", fold={self.fold}"

    @classmethod
    def from_modules(cls, norm: nn.Module, linear: nn.Linear, **kw) -> "RMSNormLinear":
        """From an (nn.RMSNorm, nn.Linear) pair, parameters copied."""
        norm, linear = split_pair(norm, linear)
        if not isinstance(norm, nn.RMSNorm):
            raise TypeError(f"RMSNormLinear.from_modules: needs nn.RMSNorm, got {type(norm).__name__}")
        w = linear.weight
        return copy_params(cls(linear.in_features, linear.out_features, norm_eps(norm, w.dtype),
                               linear.bias is not None, w.device, w.dtype, **kw), norm, linear,
                           linear.in_features)


class LayerNormLinear(_PreNormLinear):
    """`nn.Linear(nn.LayerNorm(x))` in one kernel: y = layer_norm(x) @ W^T + b.

    Parameters: `norm_weight` (offset + g = 1) and `norm_bias` (zeros) [in_features], `weight`
    and `bias` as nn.Linear; `offset` as RMSNormLinear's.
    """

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5, bias: bool = False,
                 device=None, dtype=None, offset: float = 0.0):
        super().__init__(in_features, out_features, eps, bias, device, dtype, offset)
        self.norm_bias = nn.Parameter(torch.empty(in_features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self._reset_norm_weight()
        nn.init.zeros_(self.norm_bias)
        self._reset_linear()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self._parameters  # (as RMSNormLinear.forward)
        g = p["norm_weight"] if "norm_weight" in p else self.norm_weight
        beta = p["norm_bias"] if "norm_bias" in p else self.norm_bias
        w = p["weight"] if "weight" in p else self.weight
        b = p["bias"] if "bias" in p else self.bias
        return layernorm_linear(x, g, beta, w, self.eps, b, offset=self.offset)

    @classmethod
    def from_modules(cls, norm: nn.Module, linear: nn.Linear) -> "LayerNormLinear":
        """From an (nn.LayerNorm, nn.Linear) pair, parameters copied."""
        norm, linear = split_pair(norm, linear)
        if not isinstance(norm, nn.LayerNorm):
            raise TypeError(f"LayerNormLinear.from_modules: needs nn.LayerNorm, got {type(norm).__name__}")
        w = linear.weight
        return copy_params(cls(linear.in_features, linear.out_features, norm.eps,
                               linear.bias is not None, w.device, w.dtype), norm, linear,
                           linear.in_features)
