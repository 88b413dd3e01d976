"""normfuse: compiler passes over Triton IR that make normalization free on Hopper."""
from .version import __version__  # noqa: E402
from .compiler import CompiledKernel, JITKernel, SpillWarning, compile, jit  # noqa: E402
from .passes import Remark, available_passes  # noqa: E402
from .pipeline import run_pipeline  # noqa: E402

__all__ = ["CompiledKernel", "JITKernel", "SpillWarning", "compile", "jit", "Remark",
           "available_passes", "run_pipeline", "__version__"]
