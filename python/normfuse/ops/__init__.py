"""Torch ops built on normfuse-compiled kernels (inference only for now)."""
from ..reference import fold_norm_weight
from .postnorm_linear import (aot_compile_postnorm, linear_layernorm, linear_rmsnorm,
                              postnorm_passes, prepare_linear_layernorm, prepare_linear_rmsnorm)
from .prenorm_linear import (PreparedLaunch, aot_compile, layernorm_linear, plain_linear,
                             prepare_layernorm_linear, prepare_plain_linear,
                             prepare_rmsnorm_linear, rmsnorm_linear)

__all__ = ["rmsnorm_linear", "layernorm_linear", "fold_norm_weight", "plain_linear",
           "prepare_rmsnorm_linear", "prepare_layernorm_linear", "prepare_plain_linear",
           "PreparedLaunch", "aot_compile", "linear_rmsnorm", "linear_layernorm",
           "prepare_linear_rmsnorm", "prepare_linear_layernorm", "aot_compile_postnorm",
           "postnorm_passes"]
from .flash_norm_attention import (flash_norm_attention, flash_norm_attention_fwd,  # noqa: E402
                                   prepare_flash_norm_attention)

__all__ += ["flash_norm_attention", "flash_norm_attention_fwd", "prepare_flash_norm_attention"]
from .training import postnorm_mlp  # noqa: E402

__all__ += ["postnorm_mlp"]
