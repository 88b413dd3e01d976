"""normfuse's IR layer: the only code that touches `triton._C`.

- `core`: an editable SSA view of Triton-printed MLIR (ops, blocks, regions, values, types).
- `bridge`: Triton's parser, verifier, printer and cleanup passes behind plain functions.
- `ops`: the facade the passes program against: op names, typed op views, attributes, and a
  builder that computes result types (the one place, with `core` and `syntax`, that knows how
  Triton prints TTIR).
- `effects`: the memory-effects table every pass consults.
- `match`: helpers the passes share (slices, value equivalence, locations).
"""
from .core import Block, IRError, Module, Op, Region, TensorType, Value, parse_type
from .bridge import cleanup, finish, load, new_context, parse_triton, reload

__all__ = ["Block", "IRError", "Module", "Op", "Region", "TensorType", "Value", "parse_type",
           "cleanup", "finish", "load", "new_context", "parse_triton", "reload"]
