"""normfuse: compiler passes over Triton IR that make normalization free on Hopper."""
from .version import __version__  # noqa: E402
from .compiler import CompiledKernel, JITKernel, SpillWarning, compile, jit  # noqa: E402
from .passes import Remark, available_passes  # noqa: E402
from .pipeline import run_pipeline  # noqa: E402

__all__ = ["CompiledKernel", "JITKernel", "SpillWarning", "compile", "jit", "Remark",
           "available_passes", "run_pipeline", "optimize", "OptimizeReport", "__version__"]


def __getattr__(name):
    # normfuse.optimize lives in normfuse.nn (torch, torch.fx): imported on first use only, so
    # that `import normfuse` stays light.
    if name in ("optimize", "OptimizeReport"):
        import importlib
        return getattr(importlib.import_module(".nn.optimize", __name__), name)
    raise AttributeError(f"module 'normfuse' has no attribute '{name}'")
