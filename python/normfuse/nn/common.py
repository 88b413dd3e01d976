"""What the fused modules share: nn.Linear's initialisation and repr, and copying parameters from
a torch (norm, linear) pair."""
from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["reset_linear", "norm_eps", "split_pair", "copy_params"]


def reset_linear(weight: nn.Parameter, bias, in_features: int) -> None:
    """nn.Linear's initialisation of (weight, bias)."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        bound = 1 / math.sqrt(in_features) if in_features > 0 else 0
        nn.init.uniform_(bias, -bound, bound)


def norm_eps(norm: nn.Module, dtype) -> float:
    """The norm's eps (nn.RMSNorm's None: the dtype's machine epsilon, as torch does)."""
    eps = getattr(norm, "eps", None)
    return float(eps) if eps is not None else float(torch.finfo(dtype).eps)


def split_pair(a: nn.Module, b: nn.Module):
    """(norm, linear) in either order."""
    norms = (nn.RMSNorm, nn.LayerNorm)
    if isinstance(a, nn.Linear) and isinstance(b, norms):
        return b, a
    if isinstance(b, nn.Linear) and isinstance(a, norms):
        return a, b
    raise TypeError(f"from_modules: expected an nn.Linear and an nn.RMSNorm or nn.LayerNorm, got "
                    f"{type(a).__name__} and {type(b).__name__}")


def copy_params(m: nn.Module, norm: nn.Module, linear: nn.Linear, normalized: int):
    """Copy linear's weight/bias and norm's weight/bias into m; the norm must normalize
    `normalized` features (the linear's output for post-norm, its input for pre-norm)."""
    shape = tuple(norm.normalized_shape)
    if shape != (normalized,):
        raise ValueError(f"{type(m).__name__}.from_modules: the norm must normalize the last "
                         f"dimension of size {normalized}, got normalized_shape {shape}")
    with torch.no_grad():
        m.weight.copy_(linear.weight)
        if linear.bias is not None:
            m.bias.copy_(linear.bias)
        if norm.weight is not None:
            m.norm_weight.copy_(norm.weight)
        if getattr(norm, "bias", None) is not None:
            m.norm_bias.copy_(norm.bias)
    return m
