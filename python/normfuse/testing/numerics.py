"""Numerical checks of a pass pipeline on the CPU: the IR before and after, run by `run_ir`.

`check_pass_numerics(fn, args, constexprs=..., grid=..., passes="default", **options)` compiles a
@triton.jit kernel ahead of time for sm_90 through `normfuse.compile` (no GPU needed; the PTX
goes through ptxas as usual), runs its TTIR before the passes and after them on copies of
`args`, and compares every pointer argument afterwards. `check_ir_numerics(ir_text, ...)` does
the same for a TTIR text (a lit file's module), the passes run by `normfuse-opt`'s pipeline.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .interpreter import cluster_dims, run_ir
from .memory import InterpreterError

# "default": the TTIR part of the pipeline the ops compile each kernel with: the fusion passes of
# pipeline.DEFAULT_PIPELINE (each applies where it matches; a pass that does not match changes
# nothing), without the lowerings (hopper-ws hands back TTGIR with warp-specialized regions and
# Gluon's ops, which this interpreter does not run; its translated hooks are checked on the GPU)
def _fusion_passes() -> tuple:
    from ..passes import _load
    from ..pipeline import DEFAULT_PIPELINE
    return tuple(n for n in DEFAULT_PIPELINE if not getattr(_load(n), "lowers", False))


ALL_PASSES = _fusion_passes()


def default_pipeline(fn) -> tuple:
    """The pipeline `passes="default"` stands for, for kernel `fn`."""
    from ..kernels import gemm, postnorm_gemm, prenorm_gemm
    from ..ops.postnorm_linear import DEFAULT_POSTNORM_PASSES
    if fn in (prenorm_gemm.rmsnorm_gemm_naive, prenorm_gemm.layernorm_gemm_naive):
        return ("lazy-prenorm",)
    if fn in (postnorm_gemm.linear_rmsnorm_naive, postnorm_gemm.linear_layernorm_naive):
        return tuple(DEFAULT_POSTNORM_PASSES)
    if fn is gemm.gemm_plain:
        return ()
    return ALL_PASSES


@dataclass
class NumericsCheck:
    """What `check_pass_numerics` / `check_ir_numerics` found.

    `max_rel_diff`: the largest, over pointer arguments, of max|before - after| / max|before|
    (over elements finite in both; inf where one run left NaN/inf and the other did not, e.g.
    an unwritten tile of a NaN-poisoned output). `diffs`: the same per argument. `before` /
    `after`: the arguments after each run (copies; arrays/tensors as given)."""

    pipeline: str
    applied: list[str]
    remarks: list[str]
    changed: bool
    num_ctas: int
    max_rel_diff: float
    diffs: dict[str, float]
    before: dict[str, Any] = field(repr=False)
    after: dict[str, Any] = field(repr=False)
    ir_before: str = field(repr=False)
    ir_after: str = field(repr=False)


_TORCH = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
          "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1"}
_NUMPY = dict(_TORCH, uint16="u16", uint32="u32", uint64="u64")


def _arg_type(name: str, v) -> tuple[str, bool]:
    """Triton signature type and 16-divisibility, as `normfuse.jit` specializes a launch
    (pointers of the launch are 16-byte aligned)."""
    if hasattr(v, "data_ptr") and hasattr(v, "dtype"):
        kind = str(v.dtype).replace("torch.", "")
        if kind not in _TORCH:
            raise InterpreterError(f"argument {name}: unsupported tensor dtype {v.dtype}")
        return "*" + _TORCH[kind], True
    if isinstance(v, np.ndarray):
        if v.dtype.name not in _NUMPY:
            raise InterpreterError(f"argument {name}: unsupported array dtype {v.dtype}")
        return "*" + _NUMPY[v.dtype.name], True
    if isinstance(v, (bool, np.bool_)):
        return "i1", False
    if isinstance(v, (int, np.integer)):
        v = int(v)
        return ("i32" if -(2 ** 31) <= v < 2 ** 31 else "i64"), v % 16 == 0 and v != 0
    if isinstance(v, (float, np.floating)):
        return "fp32", False
    raise InterpreterError(f"argument {name}: cannot pass {type(v).__name__} to a kernel")


def _copy(v):
    if hasattr(v, "clone"):
        return v.clone()
    if isinstance(v, np.ndarray):
        return v.copy()
    return v


def _as_f64(v) -> np.ndarray:
    if hasattr(v, "detach"):
        import torch
        return v.detach().to(torch.float64).numpy()
    return np.asarray(v).astype(np.float64)


def rel_diff(a, b) -> float:
    """max|a - b| / max|a| over the elements finite in both; inf if NaN/inf differ in place."""
    a, b = _as_f64(a), _as_f64(b)
    if a.shape != b.shape:
        return float("inf")
    fa, fb = np.isfinite(a), np.isfinite(b)
    odd = ~(fa & fb)
    if odd.any():
        same = (np.isnan(a) & np.isnan(b)) | (a == b)
        if not same[odd].all():
            return float("inf")
    both = fa & fb
    if not both.any():
        return 0.0
    d = float(np.max(np.abs(a[both] - b[both])))
    scale = float(np.max(np.abs(a[both])))
    if d == 0.0:
        return 0.0
    return d / scale if scale > 0 else float("inf")


def _compare(names, args, ir_before, ir_after, grid, kernel, pipeline, remarks, changed):
    num_ctas = cluster_dims(ir_after, kernel)
    before = [_copy(a) for a in args]
    after = [_copy(a) for a in args]
    run_ir(ir_before, before, grid, kernel=kernel)
    run_ir(ir_after, after, grid, num_ctas=num_ctas, kernel=kernel)
    diffs = {}
    for n, a, b in zip(names, before, after):
        if hasattr(a, "data_ptr") or isinstance(a, np.ndarray):
            diffs[n] = rel_diff(a, b)
    return NumericsCheck(
        pipeline=pipeline, applied=[str(r) for r in remarks if "applied:" in str(r)],
        remarks=[str(r) for r in remarks], changed=changed, num_ctas=num_ctas,
        max_rel_diff=max(diffs.values(), default=0.0), diffs=diffs,
        before=dict(zip(names, before)), after=dict(zip(names, after)),
        ir_before=ir_before, ir_after=ir_after)


def launch_signature(fn, args, consts: dict) -> tuple[dict, dict]:
    """(signature, attrs) of `fn` for the runtime `args` (in order, the constexprs in `consts`
    left out), specialized as `normfuse.jit` does at launch: types from the values, 16-byte
    divisibility of pointers and integers."""
    names = [n for n in fn.arg_names if n not in consts]
    signature, attrs = {}, {}
    for i, n in enumerate(fn.arg_names):
        if n in consts:
            signature[n] = "constexpr"
            continue
        t, div16 = _arg_type(n, args[names.index(n)])
        signature[n] = t
        if div16:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return signature, attrs


def check_pass_numerics(fn, args, *, constexprs: dict, grid, passes="default",
                        target: str = "cuda:90", **options) -> NumericsCheck:
    """Compile `fn` for sm_90 with `passes` (a pipeline spec or list; "default": see
    `default_pipeline`), run the IR before and after them on copies of `args`, compare.

    `args`: the runtime (non-constexpr) arguments in order, or a dict by name; arrays or CPU
    tensors for pointers (C-contiguous; the originals are not touched). `constexprs`: the
    constexpr arguments (those left out take their defaults). `options`: Triton compile options
    (num_warps, num_stages, ...). The IR after the passes runs with the cluster size they chose."""
    import normfuse
    from ..pipeline import describe, parse_pipeline

    consts = dict(constexprs)
    for p in getattr(fn, "params", ()):
        if p.is_constexpr and p.name not in consts and p.has_default:
            consts[p.name] = p.default
    names = [n for n in fn.arg_names if n not in consts]
    if isinstance(args, dict):
        missing = [n for n in names if n not in args]
        if missing:
            raise InterpreterError(f"missing arguments: {', '.join(missing)}")
        args = [args[n] for n in names]
    args = list(args)
    if len(args) != len(names):
        raise InterpreterError(f"{fn.__name__} takes {len(names)} runtime arguments "
                               f"({', '.join(names)}), got {len(args)}")
    signature, attrs = launch_signature(fn, args, consts)
    spec = default_pipeline(fn) if passes == "default" else passes
    plist = parse_pipeline(spec)
    ck = normfuse.compile(fn, signature=signature, constexprs=consts, attrs=attrs, target=target,
                          passes=plist, **options)
    ir_before = ck.asm["ttir"]
    ir_after = ck.asm.get("normfuse", ir_before) if plist else ir_before
    return _compare(names, args, ir_before, ir_after, grid, None, describe(plist), ck.remarks,
                    ck.applied)


@functools.lru_cache(maxsize=16)
def _run_pipeline(ir_text: str, spec: str):
    """normfuse-opt's pipeline on a module, once per (text, canonical pipeline): the passes are
    deterministic, and a lit module holds many kernels."""
    from ..pipeline import run_pipeline
    return run_pipeline(ir_text, spec)


def check_ir_numerics(ir_text: str, args: Sequence, grid, *, passes, kernel: str | None = None,
                      names: Sequence[str] | None = None) -> NumericsCheck:
    """`check_pass_numerics` for TTIR text: the passes run as `normfuse-opt` runs them; `kernel`
    picks the function when the module has several (the remarks are the whole module's)."""
    from ..pipeline import describe, parse_pipeline
    plist = parse_pipeline(passes)
    res = _run_pipeline(ir_text, describe(plist))
    names = list(names) if names is not None else [f"arg{i}" for i in range(len(args))]
    return _compare(names, list(args), ir_text, res.text, grid, kernel, describe(plist),
                    res.remarks, res.changed)
