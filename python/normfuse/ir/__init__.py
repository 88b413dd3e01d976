"""normfuse's IR layer: the only code that touches `triton._C`.

- `core`: an editable SSA view of Triton-printed MLIR (ops, blocks, regions, values, types).
- `bridge`: Triton's parser, verifier, printer and cleanup passes behind plain functions.
- `match`: helpers the passes share (defining ops, loop structure, value equivalence).
"""
from .core import Block, IRError, Module, Op, Region, TensorType, Value, parse_type
from .bridge import cleanup, finish, load, new_context, parse_triton, reload

__all__ = ["Block", "IRError", "Module", "Op", "Region", "TensorType", "Value", "parse_type",
           "cleanup", "finish", "load", "new_context", "parse_triton", "reload"]
