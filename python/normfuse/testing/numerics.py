"""Numerical checks of a pass pipeline on the CPU: the IR before and after, run by `run_ir`.

`check_pass_numerics(fn, args, constexprs=..., grid=..., passes="default", **options)` compiles a
@triton.jit kernel ahead of time for sm_90 through `normfuse.compile` (no GPU needed; the PTX
goes through ptxas as usual), runs its TTIR before the passes and after them on copies of
`args`, and compares every pointer argument afterwards. `check_ir_numerics(ir_text, ...)` does
the same for a TTIR text (a lit file's module), the passes run by `normfuse-opt`'s pipeline.

When a lowering pass applied (hopper-ws: the kernel the ops launch is the warp-specialized
template's TTGIR), the lowered kernel runs too (`run_lowered`): with the arguments the host side
builds for it (`lowered_launch`: TMA descriptors over views of the tensors, the derived column
sums, the shared-statistics words and epoch), on a persistent grid of `programs` CTAs, in the
interleavings of `seeds`; its output is compared with the unlowered kernel's (`lowered_diffs`).
`check_lowered_numerics(ck, args, ...)` does the same for a kernel compiled elsewhere (the ops'
`aot_compile`).
"""
from __future__ import annotations

import inspect

import functools
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .interpreter import cluster_dims
from .run import run_ir
from .memory import InterpreterError

# "default": the fusion passes of pipeline.DEFAULT_PIPELINE (each applies where it matches; a
# pass that does not match changes nothing); the pre-norm kernels get the lowering (hopper-ws) as
# well, as the ops compile them (its warp-specialized TTGIR runs in `warp_specialized`)
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
        return ("lazy-prenorm", "hopper-ws")
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
    `after`: the arguments after each run (copies; arrays/tensors as given). `lowered`: the
    runs of the lowered kernel (`LoweredRun`, one per seed; empty when nothing was lowered);
    `max_rel_diff` includes their differences to `before`."""

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
    lowered: list = field(default_factory=list)

    @property
    def lowered_diffs(self) -> dict[str, float]:
        """Per pointer argument, the largest difference of a lowered run to `before`."""
        out: dict[str, float] = {}
        for r in self.lowered:
            for k, v in r.diffs.items():
                out[k] = max(out.get(k, 0.0), v)
        return out


@dataclass
class LoweredRun:
    """One run of a lowered (warp-specialized) kernel: `seed` of the interleaving, `programs`
    (persistent CTAs), `diffs` per pointer argument against the unlowered kernel's run, `args`
    (the runtime arguments after the run), `info` (the interpreter's RunInfo), `binding` (what
    the kernel was launched with)."""

    seed: int
    programs: int
    diffs: dict[str, float]
    args: dict[str, Any] = field(repr=False)
    info: Any = None
    binding: Any = field(default=None, repr=False)

    @property
    def max_rel_diff(self) -> float:
        return max(self.diffs.values(), default=0.0)


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


def _is_buffer(a) -> bool:
    return hasattr(a, "data_ptr") or isinstance(a, np.ndarray)


def _compare(names, args, ir_before, ir_after, grid, kernel, pipeline, remarks, changed,
             lowered=None, programs: int = 3, seeds=(0,), trusted: bool = False):
    """`trusted`: both texts are a compiled kernel's own (`run_ir`'s `trusted`)."""
    before = [_copy(a) for a in args]
    run_ir(ir_before, before, grid, kernel=kernel, trusted=trusted)
    diffs = {}
    if ir_after is not None:
        num_ctas = cluster_dims(ir_after, kernel, trusted=trusted)
        after = [_copy(a) for a in args]
        run_ir(ir_after, after, grid, num_ctas=num_ctas, kernel=kernel, trusted=trusted)
        for n, a, b in zip(names, before, after):
            if _is_buffer(a):
                diffs[n] = rel_diff(a, b)
    else:  # the fused TTIR not run (check_lowered_numerics(fused=False))
        num_ctas, after, ir_after = 1, before, ir_before
    runs = []
    if lowered is not None:
        runs = run_lowered(lowered, args, names=names, programs=programs, seeds=seeds,
                           before=before)
    worst = max([*diffs.values(), *(r.max_rel_diff for r in runs)], default=0.0)
    return NumericsCheck(
        pipeline=pipeline, applied=[str(r) for r in remarks if "applied:" in str(r)],
        remarks=[str(r) for r in remarks], changed=changed, num_ctas=num_ctas,
        max_rel_diff=worst, diffs=diffs,
        before=dict(zip(names, before)), after=dict(zip(names, after)),
        ir_before=ir_before, ir_after=ir_after, lowered=runs)


# ---------------------------------------------------------------------------------------------
# Lowered kernels: the host binding and the runs
# ---------------------------------------------------------------------------------------------

@dataclass
class LoweredBinding:
    """A launch of a lowered kernel as the host builds it, on CPU tensors: `bound` (the
    lowering's own record, `normfuse.lowering.launch.BoundLaunch`: the template's runtime
    arguments by name, the descriptors' base/shape/strides/box, the grid), `args` (what the
    TTGIR kernel's parameters receive, in order: each TMA descriptor followed by its shape and
    strides, as Triton's launcher passes it, the `eargs` tuple flattened), `grid`,
    `descriptors` (name -> descriptor), `sbuf`/`epoch` (the shared statistics' words and the
    launch's epoch, or the placeholders a kernel without them never reads)."""

    bound: Any
    args: list
    grid: tuple
    descriptors: dict
    sbuf: Any = None
    epoch: int = 0


# a NaN (f32 0x7fc00000) stamped with an epoch: what a previous launch left in the words
_NAN_BITS = 0x7FC00000


def stale_words(rows: int, epoch: int, per_row: int = 3):
    """Shared-statistics words (int64 [per_row x rows]: 3 for the pre-norm statistics, a
    post-norm's row sums x N tiles for its partial sums) as launch `epoch - 1` left them, with
    NaN values: a kernel that takes a word of another launch writes NaN into its output."""
    import torch
    return torch.full((per_row * rows,), ((epoch - 1) << 32) | _NAN_BITS, dtype=torch.int64)


def _flatten(values) -> list:
    out = []
    for v in values:
        if v is None:  # an absent operand (no residual): a constexpr, not a kernel parameter
            continue
        if isinstance(v, tuple):
            out += _flatten(v)
        elif hasattr(v, "base") and hasattr(v, "shape") and hasattr(v, "strides"):
            out += [v, *v.shape, *v.strides]  # a TMA descriptor, as Triton's launcher expands it
        else:
            out.append(v)
    return out


def lowered_launch(lowered, runtime_args, *, programs: int = 3, epoch: int = 2,
                   sbuf=None, outs=None) -> LoweredBinding:
    """The arguments the host side gives the lowered kernel of `lowered` (a LoweredLaunch, i.e.
    `CompiledKernel.lowered`) for the unlowered kernel's runtime arguments (CPU tensors): the
    lowering's own `LoweredLaunch.arguments`, as a GPU launch computes them, with `programs`
    persistent CTAs instead of one per SM (a post-norm's whole-rows order uses the first T x G of
    them). With shared statistics or a post-norm's row exchange: `sbuf` (default: `stale_words`,
    a previous launch's NaN words) and `epoch`. `outs`: a split output's member tensors
    (`LoweredLaunch.split`)."""
    cfg = lowered.instance.config
    args = list(runtime_args)
    words = next((n for n in lowered.plan.needs if type(n).__name__ == "SharedStatistics"), None)
    bound = lowered.arguments(args, grid=programs, shared=(None, epoch) if words else None,
                              outs=outs)
    if words:
        rows = -(-int(bound["M"]) // cfg.block_m) * cfg.block_m
        per_row = words.words_per_row(int(bound["N"]))
        bound = lowered.arguments(
            args, grid=programs,
            shared=(stale_words(rows, epoch, per_row) if sbuf is None else sbuf, epoch), outs=outs)
    descs = {n: v for n, v in zip(bound.names, bound.args) if n.endswith("_desc")}
    return LoweredBinding(bound, _flatten(bound.args), tuple(bound.grid), descs,
                          bound["sbuf"] if words else None, bound["epoch"] if words else 0)


def run_lowered(lowered, args, *, names=None, programs: int = 3, seeds=(0,), before=None,
                epoch: int = 2, outs=None) -> list:
    """Run the lowered kernel of `lowered` on copies of the unlowered kernel's runtime `args`,
    once per interleaving seed; `before`: the unlowered kernel's arguments after its run, to
    compare with (`LoweredRun.diffs`). `outs`: a split output's members (a function returning
    fresh member tensors, called per seed; they are the run's `args["outs"]`)."""
    names = list(names) if names is not None else [f"arg{i}" for i in range(len(args))]
    text = lowered.kernel.asm["ttgir"]  # Triton's own print: run_ir's `trusted`
    runs = []
    for seed in seeds:
        mine = [_copy(a) for a in args]
        members = outs() if outs is not None else None
        binding = lowered_launch(lowered, mine, programs=programs, epoch=epoch, outs=members)
        info = run_ir(text, binding.args, binding.grid, seed=seed, trusted=True)
        diffs = {}
        if before is not None:
            for n, x, y in zip(names, before, mine):
                if _is_buffer(x):
                    diffs[n] = rel_diff(x, y)
        got = dict(zip(names, mine))
        if members is not None:
            got["outs"] = members
        runs.append(LoweredRun(seed, programs, diffs, got, info, binding))
    return runs


def check_lowered_numerics(ck, args, *, grid, programs: int = 3, seeds=(0,), names=None,
                           fused: bool = True) -> NumericsCheck:
    """`check_pass_numerics` for a kernel already compiled (`normfuse.compile` or the ops'
    `aot_compile`) whose pipeline lowered it: the TTIR before the passes (on `grid`), the fused
    TTIR (unless `fused=False`), and the lowered kernel (`programs` CTAs, each seed an
    interleaving) on copies of the runtime `args`."""
    if ck.lowered is None:
        raise InterpreterError(f"the kernel was not lowered: {ck.remarks}")
    fn = ck.kernel.src.fn
    consts = {fn.arg_names[i[0] if isinstance(i, tuple) else i]
              for i in getattr(ck.kernel.src, "constants", {})}
    names = list(names) if names is not None else [n for n in fn.arg_names if n not in consts]
    ttir = ck.asm["ttir"]
    return _compare(names, list(args), ttir, ck.asm.get("normfuse", ttir) if fused else None, grid,
                    None, ck.pipeline, ck.remarks, ck.applied, ck.lowered, programs, seeds,
                    trusted=True)


def launch_signature(fn, args, consts: dict) -> tuple[dict, dict]:
    """(signature, attrs) of `fn` for the runtime `args` (in order, the constexprs in `consts`
    left out), specialized as `normfuse.jit` does at launch: types from the values, 16-byte
    divisibility of pointers and integers. A constexpr parameter with a default that `consts`
    leaves out takes its default (as at a launch): no runtime argument stands for it."""
    defaulted = {p.name for p in getattr(fn, "params", ())
                 if p.is_constexpr and p.name not in consts and p.default is not inspect._empty}
    names = [n for n in fn.arg_names if n not in consts and n not in defaulted]
    signature, attrs = {}, {}
    for i, n in enumerate(fn.arg_names):
        if n in consts or n in defaulted:
            signature[n] = "constexpr"
            continue
        t, div16 = _arg_type(n, args[names.index(n)])
        signature[n] = t
        if div16:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return signature, attrs


def check_pass_numerics(fn, args, *, constexprs: dict, grid, passes="default",
                        target: str = "cuda:90", programs: int = 3, seeds=(0,),
                        **options) -> NumericsCheck:
    """Compile `fn` for sm_90 with `passes` (a pipeline spec or list; "default": see
    `default_pipeline`), run the IR before and after them on copies of `args`, compare.

    `args`: the runtime (non-constexpr) arguments in order, or a dict by name; arrays or CPU
    tensors for pointers (C-contiguous; the originals are not touched). `constexprs`: the
    constexpr arguments (those left out take their defaults). `options`: Triton compile options
    (num_warps, num_stages, ...). The IR after the passes runs with the cluster size they chose.
    When a lowering pass applied, the lowered kernel runs as well (`programs` persistent CTAs,
    one run per interleaving seed in `seeds`; `NumericsCheck.lowered`)."""
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
                    ck.applied, ck.lowered, programs, seeds, trusted=True)


@functools.lru_cache(maxsize=16)
def _run_pipeline(ir_text: str, spec: str):
    """normfuse-opt's pipeline on a module, once per (text, canonical pipeline): the passes are
    deterministic, and a lit module holds many kernels."""
    from ..pipeline import run_pipeline
    return run_pipeline(ir_text, spec)


def check_ir_numerics(ir_text: str, args: Sequence, grid, *, passes, kernel: str | None = None,
                      names: Sequence[str] | None = None, programs: int = 3,
                      seeds=(0,)) -> NumericsCheck:
    """`check_pass_numerics` for TTIR text: the passes run as `normfuse-opt` runs them; `kernel`
    picks the function when the module has several (the remarks are the whole module's). A
    lowering pass (hopper-ws) runs last on the fused module: when it applies, the lowered kernel
    runs too (`programs`, `seeds`: see `check_pass_numerics`); it lowers a module of one kernel
    (a lit file's `// -----` chunk)."""
    from ..pipeline import describe, parse_pipeline
    plist = parse_pipeline(passes)
    fusion = [p for p in plist if not getattr(p, "lowers", False)]
    lowering = [p for p in plist if getattr(p, "lowers", False)]
    res = _run_pipeline(ir_text, describe(fusion)) if fusion else None
    fused = res.text if res is not None else ir_text
    remarks = list(res.remarks) if res is not None else []
    changed = bool(res.changed) if res is not None else False
    lowered = None
    if lowering:
        lowered, more = _lower_text(fused, lowering)
        remarks += more
        changed = changed or lowered is not None
    names = list(names) if names is not None else [f"arg{i}" for i in range(len(args))]
    return _compare(names, list(args), ir_text, fused, grid, kernel, describe(plist),
                    remarks, changed, lowered, programs, seeds)


def lower_ir(ir_text: str, passes):
    """The passes on TTIR text as `check_ir_numerics` runs them, without running anything: the
    fusion passes (normfuse-opt's pipeline), then the lowering on the fused module. Returns
    (LoweredLaunch or None, the fused text, the remarks); the launch's parameters are the TTIR
    function's arguments in order."""
    from ..pipeline import describe, parse_pipeline
    plist = parse_pipeline(passes)
    fusion = [p for p in plist if not getattr(p, "lowers", False)]
    lowering = [p for p in plist if getattr(p, "lowers", False)]
    res = _run_pipeline(ir_text, describe(fusion)) if fusion else None
    fused = res.text if res is not None else ir_text
    remarks = [str(r) for r in res.remarks] if res is not None else []
    lowered = None
    if lowering:
        lowered, more = _lower_text(fused, lowering)
        remarks += [str(r) for r in more]
    return lowered, fused, remarks


def _lower_text(text: str, passes):
    """Run lowering passes on a fused TTIR text: (LoweredLaunch or None, remarks)."""
    from ..ir import bridge
    from ..lowering.launch import LoweredLaunch
    from ..pipeline import run_on_view
    view = bridge.load(text, source_name="lowering.mlir")
    built: list = []
    remarks, _ = run_on_view(view, list(passes), lowered=built)
    return (LoweredLaunch(built[0]) if built else None), remarks


class _Captured(Exception):
    """Raised by `ttir_of`'s stage once it has the TTIR: the compilation stops there."""

    def __init__(self, text: str):
        super().__init__("ttir captured")
        self.text = text


def ttir_of(fn, signature: dict, constexprs: dict, *, num_warps: int = 4,
            target: str = "cuda:90") -> str:
    """The TTIR Triton makes of `fn` for `signature` (Triton's, constexprs included as
    "constexpr") and `constexprs`: its front end and TTIR passes only, the compilation stopped
    before TTGIR (no PTX, no ptxas: a second where the full compilation of a 128 x 256 post-norm
    kernel takes ten or twenty). For CPU tests that run TTIR through the passes (`check_ir_numerics`).
    Constexpr parameters missing from `constexprs` take their defaults.
    Nothing reaches Triton's cache (its group file is written only at the end)."""
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from ..pipeline import _hook_lock

    def capture(mod, metadata):
        raise _Captured(str(mod))

    def hook(backend, stages, options, language, capability):
        items = list(stages.items())
        stages.clear()
        for k, v in items:
            stages[k] = v
            if k == "ttir":
                stages["normfuse-capture"] = capture
                break

    from ..compiler import _complete_signature
    # a constexpr left out takes its default, as `normfuse.compile` gives it (Triton's front end
    # would take None, i.e. false in a constexpr `if`: the rowdot kernel's ROW_COEFS once lost
    # its default so)
    signature, constexprs = _complete_signature(fn, fn.__name__, signature, constexprs)
    backend, _, arch = target.partition(":")
    with _hook_lock:
        prev = knobs.runtime.add_stages_inspection_hook
        prev_always = knobs.compilation.always_compile
        knobs.runtime.add_stages_inspection_hook = hook
        # a kernel a full compilation put in Triton's cache (the lit inputs' generators compile
        # the same kernels) would come back from the cache without running the stages
        knobs.compilation.always_compile = True
        try:
            triton.compile(ASTSource(fn, signature, constexprs=constexprs),
                           target=GPUTarget(backend, int(arch), 32), options={"num_warps": num_warps})
        except _Captured as c:
            return c.text
        finally:
            knobs.runtime.add_stages_inspection_hook = prev
            knobs.compilation.always_compile = prev_always
    raise InterpreterError(f"{getattr(fn, '__name__', fn)}: Triton produced no TTIR stage")
