"""Torch ops built on normfuse-compiled kernels (inference only for now)."""
from ..reference import fold_norm_weight
from .prenorm_linear import (PreparedLaunch, aot_compile, layernorm_linear, plain_linear,
                             prepare_layernorm_linear, prepare_plain_linear,
                             prepare_rmsnorm_linear, rmsnorm_linear)

__all__ = ["rmsnorm_linear", "layernorm_linear", "fold_norm_weight", "plain_linear",
           "prepare_rmsnorm_linear", "prepare_layernorm_linear", "prepare_plain_linear",
           "PreparedLaunch", "aot_compile"]
