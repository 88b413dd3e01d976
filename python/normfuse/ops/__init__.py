"""Torch ops built on normfuse-compiled kernels: inference and training (autograd), with a
reference path in plain torch where the fused kernels do not run (CPU, GPUs other than sm_90).

Layers, bottom up: common (device facts, validation, weight caches) -> prenorm_linear /
postnorm_linear (fused forward launches) -> fallback (reference path) -> norm (the standalone norm op pair) -> training (backward
kernels, autograd custom ops) -> functional (the public functions below).
"""
from ..reference import fold_norm_weight
from .common import FallbackWarning, clear_caches
from .functional import (layernorm_linear, layernorm_linear_split, linear_layernorm,
                         linear_rmsnorm, postnorm_mlp, rmsnorm_linear, rmsnorm_linear_split)
from .postnorm_linear import (aot_compile_postnorm, postnorm_passes, prepare_linear_layernorm,
                              prepare_linear_rmsnorm)
from .prenorm_linear import (PreparedLaunch, aot_compile, plain_linear, prepare_layernorm_linear,
                             prepare_plain_linear, prepare_rmsnorm_linear)

__all__ = ["rmsnorm_linear", "layernorm_linear", "rmsnorm_linear_split", "layernorm_linear_split",
           "fold_norm_weight", "plain_linear",
           "prepare_rmsnorm_linear", "prepare_layernorm_linear", "prepare_plain_linear",
           "PreparedLaunch", "aot_compile", "linear_rmsnorm", "linear_layernorm",
           "prepare_linear_rmsnorm", "prepare_linear_layernorm", "aot_compile_postnorm",
           "postnorm_passes", "postnorm_mlp", "FallbackWarning", "clear_caches"]
from .norm import layer_norm, rms_norm  # noqa: E402

__all__ += ["rms_norm", "layer_norm"]
from .flash_norm_attention import (flash_norm_attention, flash_norm_attention_fwd,  # noqa: E402
                                   prepare_flash_norm_attention)

__all__ += ["flash_norm_attention", "flash_norm_attention_fwd", "prepare_flash_norm_attention"]
