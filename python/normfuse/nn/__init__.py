"""nn.Module drop-ins built on normfuse's fused ops (they train: normfuse.ops.training)."""
from .modules import LayerNormLinear, RMSNormLinear

__all__ = ["RMSNormLinear", "LayerNormLinear"]
from .attention import FlashNormAttention  # noqa: E402

__all__ += ["FlashNormAttention"]
from .postnorm import LinearLayerNorm, LinearRMSNorm, PostNormMLP, from_modules  # noqa: E402

__all__ += ["LinearRMSNorm", "LinearLayerNorm", "PostNormMLP", "from_modules"]
