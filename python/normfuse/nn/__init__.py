"""nn.Module drop-ins built on normfuse's fused ops (inference only for now)."""
from .modules import LayerNormLinear, RMSNormLinear

__all__ = ["RMSNormLinear", "LayerNormLinear"]
from .attention import FlashNormAttention  # noqa: E402

__all__ += ["FlashNormAttention"]
