"""The FlashNormAttention backward's kernels on the CPU, for their tests.

    with interpreted():
        grads = normfuse.ops.flash_norm_attention_bwd.flash_norm_attention_bwd(...)  # CPU tensors
    last_remarks()   # the pass remarks of the last CPU compile of the rows kernel

`interpreted()` installs a CPU launcher in the op (`ops.flash_norm_attention_bwd.cpu_launcher`):
each kernel is compiled ahead of time for sm_90 through `passes` (specialized from the runtime
arguments as `normfuse.jit` specializes a launch: `numerics.launch_signature`) and its TTIR after
the passes runs in the interpreter (`run_ir`, with the clusters the passes made). Compiles are
cached per signature, constants, divisibility, passes and launch options.
"""
from __future__ import annotations

import contextlib

from .interpreter import cluster_dims
from .numerics import launch_signature
from .run import run_ir

__all__ = ["interpreted", "last_remarks"]

_IR_CACHE: dict = {}


def _compiled_ir(fn, sig, consts, attr_key, passes, num_warps, num_stages) -> str:
    import normfuse
    key = (fn.__name__, sig, consts, attr_key, passes, num_warps, num_stages)
    if key not in _IR_CACHE:
        attrs = {(i,): [["tt.divisibility", 16]] for i, _ in attr_key}
        ck = normfuse.compile(fn, signature=dict(sig), constexprs=dict(consts), attrs=attrs,
                              target="cuda:90", passes=passes, num_warps=num_warps,
                              num_stages=num_stages)
        _IR_CACHE[key] = (ck.asm.get("normfuse", ck.asm["ttir"]) if passes else ck.asm["ttir"],
                          list(ck.remarks))
    return _IR_CACHE[key][0]


def _interpret(fn, passes, grid, args, consts, num_warps, num_stages) -> None:
    signature, attrs = launch_signature(fn, args, consts)
    ir = _compiled_ir(fn, tuple(sorted(signature.items())), tuple(sorted(consts.items())),
                      tuple(sorted((k[0], str(v)) for k, v in attrs.items())), passes, num_warps,
                      num_stages)
    # a compiled kernel's own text: run_ir's `trusted`
    run_ir(ir, list(args), grid, num_ctas=cluster_dims(ir, trusted=True), trusted=True)


@contextlib.contextmanager
def interpreted():
    """Within: `flash_norm_attention_bwd` runs CPU tensors' kernels in the interpreter."""
    from ..ops import flash_norm_attention_bwd as bwd
    prev = bwd.cpu_launcher(_interpret)
    try:
        yield
    finally:
        bwd.cpu_launcher(prev)


def last_remarks(fn_name: str = "fna_bwd_rows_naive") -> list[str]:
    """The pass remarks of the last CPU compile of a backward kernel (`fn_name`)."""
    for key in reversed(list(_IR_CACHE)):
        if key[0] == fn_name:
            return list(_IR_CACHE[key][1])
    return []
