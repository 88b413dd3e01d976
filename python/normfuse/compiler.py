"""Compile and launch `@triton.jit` kernels with normfuse passes applied.

`compile()` works ahead of time on a CPU-only machine (target "cuda:90"); `jit()` wraps a
kernel for grid-style launches on the current GPU, like Triton's own `kernel[grid](...)`.

Bad arguments raise ValueError/TypeError naming the kernel and the argument before Triton runs;
a pass that fails raises PassError naming the kernel and the pass; a kernel that spills registers
compiles, with a `SpillWarning`.
"""
from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

from .device import LaunchFailure, describe_kernel, ensure_cluster_launch
from .launch import apply_launch, from_metadata
from .passes import PassError, Remark
from .pipeline import cache_tag, describe, installed, parse_pipeline

DEFAULT_PASSES = "default"  # pipeline.DEFAULT_PIPELINE: every fusion pass, then hopper-ws

# What the passes emit (thread-block clusters, distributed shared memory and cluster barriers in
# sm_90a inline PTX, loops shaped for wgmma) exists on sm_90 only.
SUPPORTED_ARCH = 90


class SpillWarning(UserWarning):
    """ptxas spilled registers of a compiled kernel to local memory (slow)."""


def _kernel_name(fn) -> str:
    return getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", "kernel")


def _target(target, name: str = "kernel", passes: Sequence = ()):
    """A GPUTarget for 'cuda:90' (or None: the current device); with passes, sm_90 only."""
    from triton.backends.compiler import GPUTarget
    if isinstance(target, GPUTarget):
        tgt = target
    elif target is None:
        from triton.runtime.driver import driver
        try:
            tgt = driver.active.get_current_target()
        except RuntimeError as e:  # no GPU driver: Triton says "0 active drivers"
            raise RuntimeError(f"kernel '{name}': normfuse.jit launches on the current GPU and "
                               f"Triton finds none ({e}); without a GPU, compile ahead of time "
                               f"with normfuse.compile(..., target='cuda:90')") from None
    else:
        backend, _, arch = str(target).partition(":")
        if backend != "cuda" or not arch.isdigit():
            raise ValueError(f"kernel '{name}': target must look like 'cuda:90', got {target!r}")
        tgt = GPUTarget("cuda", int(arch), 32)
    if passes and (tgt.backend != "cuda" or tgt.arch != SUPPORTED_ARCH):
        where = "the current device is" if target is None else "target is"
        raise ValueError(
            f"kernel '{name}': normfuse's passes emit sm_90 (Hopper) code, but {where} "
            f"'{tgt.backend}:{tgt.arch}'; compile with target='cuda:90' (or passes=() for "
            f"Triton's own code)")
    return tgt


class CompiledKernel:
    """A Triton CompiledKernel plus what normfuse did to it.

    `.asm` holds every stage ('ttir', 'normfuse' when a pass changed the IR, 'ttgir', 'llir',
    'ptx', 'cubin'); `.remarks` lists what each pass matched or why it did not. When a lowering
    pass (hopper-ws) applied, `.lowered` launches the warp-specialized kernel and `.asm` shows it
    ('ttgir' with `ttg.warp_specialize`, 'gluon': the generated hooks), while `.kernel` stays the
    fused Triton kernel that a launch falls back to when TMA cannot address its operands.
    """

    def __init__(self, kernel, remarks: Sequence[str], pipeline: str, lowered=None):
        self.kernel = kernel
        self.remarks = list(remarks)
        self.pipeline = pipeline
        self.lowered = lowered
        self._resources = None
        self._fallback_reason = None
        self._cluster_ready = None  # the loaded function whose cluster launch was checked

    @property
    def asm(self):
        if self.lowered is None:
            return self.kernel.asm
        out = dict(self.lowered.kernel.asm)
        for k in ("ttir", "normfuse"):
            if k in self.kernel.asm:
                out[k] = self.kernel.asm[k]
        out["gluon"] = self.lowered.lowered.source
        return out

    @property
    def metadata(self):
        return self.lowered.kernel.metadata if self.lowered is not None else self.kernel.metadata

    @property
    def applied(self) -> bool:
        """Whether a pass changed the IR (not merely whether a pipeline ran)."""
        return bool(getattr(self.kernel.metadata, "normfuse_changed", False)) or self.lowered is not None

    def resources(self) -> dict:
        """Registers per thread and spill traffic of the kernel, as ptxas reports them for its PTX
        (`ptxas -v`, Triton's bundled ptxas, the kernel's own arch); works without a GPU.
        Returns {"registers", "spill_stores", "spill_loads"} (bytes per thread for the spills),
        and "wgmma_serialized" (ptxas made every wgmma wait for the previous one; the reason in
        "wgmma_serialized_reason")."""
        if self._resources is None:
            self._resources = ptxas_resources(self.asm["ptx"], int(self.metadata.target.arch))
        return dict(self._resources)

    def launch(self, grid, args, runtime_args=None):
        """Run with Triton's launcher convention (`args`: every parameter in order, constexprs
        included). A lowered kernel picks its own (persistent) grid; `runtime_args` are the
        non-constexpr parameters (derived from `args` when omitted)."""
        if self.lowered is not None:
            rt = runtime_args if runtime_args is not None else self._runtime(args)
            why = self.lowered.why_not(rt)
            if why is None:
                return self.lowered(rt)
            if why != self._fallback_reason:
                import warnings
                self._fallback_reason = why
                warnings.warn(f"normfuse: {self.kernel.name}: running the unlowered kernel: {why}",
                              RuntimeWarning, stacklevel=3)
        kernel = self.kernel
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        if kernel.metadata.num_ctas != 1:
            kernel._init_handles()
            if kernel.function != self._cluster_ready:
                # once per loaded function: clusters of 9-15 CTAs launch only after this
                # (normfuse.device.cluster_occupancy), and none when the device fits none
                ensure_cluster_launch(kernel)
                self._cluster_ready = kernel.function
        try:
            return kernel[grid](*args)
        except RuntimeError as e:
            if "Triton Error [CUDA]" not in str(e):
                raise
            raise LaunchFailure(f"{describe_kernel(kernel)}, grid {grid[0]}", str(e),
                                num_ctas=int(kernel.metadata.num_ctas),
                                shared=int(kernel.metadata.shared)) from e

    def _runtime(self, args):
        names = [n for n in self.kernel.src.fn.arg_names]
        consts = {n for i, n in enumerate(names) if i in self.kernel.src.fn.constexprs}
        return tuple(a for n, a in zip(names, args) if n not in consts)

    def __getitem__(self, grid):
        return lambda *args: self.launch(grid, args)

    def __repr__(self) -> str:
        lowered = ", lowered" if self.lowered is not None else ""
        return f"<normfuse.CompiledKernel {self.kernel.name} pipeline='{self.pipeline}'{lowered}>"


def ptxas_resources(ptx: str, arch: int = 90) -> dict:
    """Run Triton's ptxas with -v on `ptx` and read back registers and spill bytes per thread, and
    whether ptxas serialized the kernel's wgmma instructions (its C7515 "Potential Performance
    Loss" note: each wgmma waited for before the next is issued, a slow kernel that is still
    correct)."""
    import re
    import subprocess
    import tempfile
    from triton.backends.nvidia.compiler import get_ptxas
    sm = f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run([get_ptxas(arch).path, f"-arch={sm}", "-v", src, "-o", out],
                           capture_output=True, text=True)
    text = r.stdout + r.stderr
    regs = re.search(r"Used (\d+) registers", text)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    if r.returncode != 0 or regs is None or spills is None:
        raise RuntimeError(f"ptxas -v failed (exit {r.returncode}): {text[-500:]}")
    serial = re.search(r"wgmma.mma_async instructions are serialized[^\n]*", text)
    return {"registers": int(regs.group(1)), "spill_stores": int(spills.group(1)),
            "spill_loads": int(spills.group(2)), "wgmma_serialized": serial is not None,
            "wgmma_serialized_reason": serial.group(0) if serial else None}


def compile(fn, *, signature: dict[str, str] | None = None, constexprs: dict[str, Any] | None = None,
            args: Sequence | None = None, target="cuda:90", passes=DEFAULT_PASSES, attrs=None,
            **triton_options) -> CompiledKernel:
    """Compile `fn` (a @triton.jit function) for `target` with normfuse `passes` inserted.

    The arguments are described one of two ways:

    - `args=(x, w, y, M, N, ...)`: example arguments, specialized as `normfuse.jit` does at launch
      time: tensors (or anything with `dtype` and `data_ptr()`) give pointer types and 16-byte
      alignment, integers i32/i64 and divisibility by 16, floats fp32. Give the runtime
      arguments (the `tl.constexpr` parameters left out, their values in `constexprs`) or every
      parameter in order.
    - `signature={"X": "*bf16", "M": "i32", "BLOCK": "constexpr"}` (Triton's), with `attrs` for
      divisibility hints; without them Triton assumes nothing about alignment, which can cost
      registers and spills.

    `constexprs` gives the constexpr values; parameters with defaults take them. `target` must be
    'cuda:90' when `passes` is not empty. `triton_options` are Triton's compile options
    (num_warps, num_stages, ...). A kernel that ptxas compiles with register spills comes with
    a `SpillWarning`.
    """
    import triton
    from triton._C.libtriton import get_cache_invalidating_env_vars  # noqa: the version key only
    from triton.compiler import ASTSource

    name = _kernel_name(fn)
    plist = parse_pipeline(passes)
    tgt = _target(target, name, plist)
    if args is not None:
        if signature is not None or attrs is not None:
            raise TypeError(f"kernel '{name}': give either args= or signature=/attrs=, not both")
        signature, constexprs, attrs = _specialize_examples(fn, name, args, constexprs)
    elif signature is None:
        raise TypeError(f"kernel '{name}': give example arguments (args=...) or a signature")
    signature, constexprs = _complete_signature(fn, name, signature, constexprs)
    src = ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    stage = [p for p in plist if not getattr(p, "lowers", False)]
    lowerers = [p for p in plist if getattr(p, "lowers", False)]
    # Triton's cache keyed on the stage's passes only: the lowerers run after triton.compile on
    # the text it returns (and compile their own program), so kernels that differ only in a
    # lowerer's options share one Triton compilation; the stage's remarks come back from the
    # cached metadata (normfuse_remarks) and each cache hit is a fresh Triton CompiledKernel
    env = dict(get_cache_invalidating_env_vars())
    env["NORMFUSE_PIPELINE"] = cache_tag(stage) if stage else "none"
    sink: list[Remark] = []
    try:
        with installed(stage, sink):
            ck = triton.compile(src, target=tgt, options=triton_options, _env_vars=env)
    except PassError as e:
        raise PassError(f"kernel '{name}': {e}") from None
    remarks = list(getattr(ck.metadata, "normfuse_remarks", []) or [])
    lowered = None
    for p in lowerers:
        if lowered is not None:
            break
        if tgt.backend != "cuda" or tgt.arch != 90:
            remarks.append(str(Remark(p.name, "missed", f"the lowering targets sm_90; compiling for "
                                                        f"{tgt.backend}:{tgt.arch}")))
            continue
        lowered, more = _lower(p, ck, _ttir_positions(fn, signature))
        remarks.extend(more)
    out = CompiledKernel(ck, remarks, describe(plist), lowered)
    _warn_on_spills(out, name)
    return out

def _ttir_positions(fn, signature: dict) -> tuple[int, ...] | None:
    """Where each argument of the TTIR function sits among the kernel's runtime arguments (its
    non-tl.constexpr parameters): parameters specialized as constants (an integer equal to 1,
    None) are not arguments of the TTIR function. None when they are the same."""
    declared = _constexpr_params(fn)
    runtime = [n for n in _params(fn) if n not in declared]
    pos = tuple(runtime.index(n) for n in runtime if signature.get(n) != "constexpr")
    return None if pos == tuple(range(len(runtime))) else pos


def _lower(p, ck, positions=None):
    """Run lowering pass `p` on the fused TTIR of `ck` and compile its plan; (LoweredLaunch or
    None, remarks). `positions`: see `_ttir_positions`."""
    from .ir import bridge
    from .pipeline import run_on_view
    text = ck.asm.get("normfuse", ck.asm["ttir"])
    view = bridge.load(text, source_name=ck.name + ".ttir", trusted=True)  # Triton's own print
    built: list = []
    out, _ = run_on_view(view, [p], lowered=built)
    if not built:
        return None, [str(r) for r in out]
    from .lowering.launch import LoweredLaunch
    return LoweredLaunch(built[0], positions), [str(r) for r in out]


def _params(fn) -> list[str]:
    return list(getattr(fn, "arg_names", None) or [])


def _constexpr_params(fn) -> set[str]:
    names = _params(fn)
    return {names[i] for i in getattr(fn, "constexprs", ())}


def _defaults(fn) -> dict[str, Any]:
    return {p.name: p.default for p in getattr(fn, "params", ()) if getattr(p, "has_default", False)}


def _complete_signature(fn, name: str, signature: dict, constexprs: dict | None):
    """Check `signature`/`constexprs` against the kernel's parameters before Triton sees them:
    unknown names, runtime parameters without a type, constexprs without a value (those with a
    default take it). Returns (signature, constexprs), completed."""
    params = _params(fn)
    signature, constexprs = dict(signature), dict(constexprs or {})
    unknown = [k for k in [*signature, *constexprs] if k not in params]
    if unknown:
        raise ValueError(f"kernel '{name}' has no parameter {', '.join(map(repr, unknown))} "
                         f"(parameters: {', '.join(params)})")
    declared = _constexpr_params(fn)
    defaults = _defaults(fn)
    no_value, no_type = [], []
    for p in params:
        if p in declared or signature.get(p) == "constexpr" or (p not in signature and p in constexprs):
            if signature.get(p, "constexpr") != "constexpr":
                raise ValueError(f"kernel '{name}': parameter '{p}' is a tl.constexpr; its "
                                 f"signature entry must be 'constexpr', not {signature[p]!r}")
            signature[p] = "constexpr"
            if p not in constexprs:
                if p in defaults:
                    constexprs[p] = defaults[p]
                else:
                    no_value.append(p)
        elif p not in signature:
            no_type.append(p)
    if no_value:
        raise ValueError(f"kernel '{name}': constexpr parameters without a value: "
                         f"{', '.join(no_value)} (give them in constexprs=)")
    if no_type:
        raise ValueError(f"kernel '{name}': parameters without a type in signature: "
                         f"{', '.join(no_type)} (or give example arguments with args=)")
    return {p: signature[p] for p in params}, constexprs


def _specialize_examples(fn, name: str, args: Sequence, constexprs: dict | None):
    """(signature, constexprs, attrs) for example arguments, as `normfuse.jit` specializes a
    launch with them (Triton's own rules); `args` are the runtime arguments (constexprs in
    `constexprs`) or every parameter in order."""
    params = _params(fn)
    declared = _constexpr_params(fn)
    consts = dict(constexprs or {})
    args = tuple(args)
    if len(args) == len(params) and len(params) != len(params) - len(declared):
        for p, v in zip(params, args):
            if p in declared and p in consts and consts[p] != v:
                raise ValueError(f"kernel '{name}': constexpr '{p}' is {v!r} in args and "
                                 f"{consts[p]!r} in constexprs")
        consts = {k: v for k, v in consts.items() if k not in declared or k not in params}
    unknown = [k for k in consts if k not in params]
    if unknown:
        raise ValueError(f"kernel '{name}' has no parameter {', '.join(map(repr, unknown))} "
                         f"(parameters: {', '.join(params)})")
    signature, consts, attrs, _, _ = specialize(fn, args, consts, name=name)
    return signature, consts, attrs


def _warn_on_spills(ck: CompiledKernel, name: str) -> None:
    """SpillWarning when ptxas spills. `ptxas -v` takes about 0.6 s on a fused kernel, so the
    kernel's stack frame is read from the cubin first (cuobjdump, a few ms): spills live in the
    stack frame, so a kernel without one has none and ptxas is not asked."""
    try:
        if _stack_frame_bytes(ck.asm["cubin"]) == 0:
            return
        res = ck.resources()
    except Exception:  # noqa: BLE001 - no ptxas/cuobjdump (a non-NVIDIA target): nothing to say
        return
    if res["spill_stores"] or res["spill_loads"]:
        warnings.warn(
            f"kernel '{name}' spills registers: ptxas reports {res['spill_stores']} bytes of "
            f"spill stores and {res['spill_loads']} bytes of spill loads per thread at "
            f"{res['registers']} registers (smaller tiles, fewer stages or warps, or divisibility "
            f"hints through args=/attrs= usually help)", SpillWarning, stacklevel=3)


def _stack_frame_bytes(cubin: bytes) -> int | None:
    """STACK of `cuobjdump -res-usage` for the kernel; None when cuobjdump cannot say."""
    import re
    import subprocess
    import tempfile
    from triton import knobs
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        try:
            r = subprocess.run([knobs.nvidia.cuobjdump.path, "-res-usage", path],
                               capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError, RuntimeError):
            return None
    m = re.search(r"\bSTACK:(\d+)", r.stdout)
    return int(m.group(1)) if r.returncode == 0 and m else None


# ---------------------------------------------------------------------------------------------
# Grid-style launches on the current GPU
# ---------------------------------------------------------------------------------------------

_TORCH_DTYPES = {
    "bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "u1",
}

_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def _arg_type(value, what: str = "argument") -> None:
    """Raise TypeError naming the argument when Triton cannot pass `value` to a kernel."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        name = str(value.dtype).replace("torch.", "")
        if name not in _TORCH_DTYPES:
            raise TypeError(f"{what}: unsupported tensor dtype {value.dtype} "
                            f"(supported: {', '.join(sorted(_TORCH_DTYPES))})")
        return
    if isinstance(value, bool) or isinstance(value, float) or value is None:
        return
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise TypeError(f"{what}: integer {value} does not fit 64 bits")
        return
    raise TypeError(f"{what}: cannot pass {type(value).__name__} to a kernel (tensors, "
                    f"integers, floats, bools and None can be passed)")


def bind_arguments(fn, args: Sequence, kwargs: dict, *, name: str | None = None) -> dict:
    """Every parameter of `fn` -> its value for a launch `fn[grid](*args, **kwargs)` (options
    such as num_warps removed from `kwargs` beforehand). Keyword arguments bind by name;
    positional ones fill the remaining parameters in order, as Triton binds them (the ones left
    take their defaults), or only the runtime (non-constexpr) ones when there are exactly that
    many (constexprs then by name or their defaults)."""
    name = name or _kernel_name(fn)
    names = _params(fn)
    constexpr_names = _constexpr_params(fn)
    unknown = [k for k in kwargs if k not in names]
    if unknown:
        raise TypeError(f"kernel '{name}': unknown keyword arguments: {', '.join(unknown)} "
                        f"(constexpr parameters: {', '.join(sorted(constexpr_names)) or 'none'})")
    bound = dict(kwargs)
    open_all = [n for n in names if n not in bound]
    open_runtime = [n for n in open_all if n not in constexpr_names]
    args = tuple(args)
    runtime = [n for n in names if n not in constexpr_names]
    too_many = TypeError(f"{name} takes {len(runtime)} runtime arguments ({', '.join(runtime)}), "
                         f"got {len(args)}")
    slots = open_runtime if len(args) == len(open_runtime) else open_all[:len(args)]
    if len(args) > len(open_all):
        raise too_many
    bound.update(zip(slots, args))
    defaults = _defaults(fn)
    missing = []
    for n in names:
        if n not in bound:
            if n in defaults:
                bound[n] = defaults[n]
            else:
                missing.append(n)
    if any(n not in constexpr_names for n in missing):
        raise too_many
    if missing:
        raise ValueError(f"kernel '{name}': constexpr parameters without a value: "
                         f"{', '.join(missing)} (give them in constexprs=)")
    return {n: bound[n] for n in names}


_BINDERS: dict = {}


def _binder(fn, target=None):
    """Triton's own argument specializer for `fn` (what `JITFunction.run` uses), per target."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature
    target = target or GPUTarget("cuda", 90, 32)
    key = (id(fn), target.backend, target.arch)
    b = _BINDERS.get(key)
    if b is None or b[0] is not fn:
        b = (fn, create_function_from_signature(fn.signature, fn.params, make_backend(target)))
        _BINDERS[key] = b
    return b[1]


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def specialize(fn, args: Sequence, kwargs: dict, *, name: str | None = None, target=None):
    """Specialize a launch `fn[grid](*args, **kwargs)` exactly as Triton's JIT does (its own
    specializer): pointers get 16-byte alignment, integers equal to 1 (and None) become
    constants, integers divisible by 16 get `tt.divisibility`, `do_not_specialize` holds;
    constexprs may be given by name or positionally, and left out when they have a default.
    Returns (signature, constexprs, attrs, options, key); `key` identifies the specialization
    (never an integer's value, except 1)."""
    name = name or _kernel_name(fn)
    kwargs = dict(kwargs)
    options = {k: kwargs.pop(k) for k in _OPTIONS if k in kwargs}
    bound = bind_arguments(fn, args, kwargs, name=name)
    signature, consts, attrs, key = _specialize_bound(fn, bound, name, target)
    return signature, consts, attrs, options, key


def _specialize_bound(fn, bound: dict, name: str, target=None):
    """(signature, constexprs, attrs, key) of fully bound arguments (`specialize`)."""
    try:
        _, spec, _ = _binder(fn, target)(**bound)
    except Exception:  # noqa: BLE001 - name the argument Triton cannot take
        constexpr_names = _constexpr_params(fn)
        for n, v in bound.items():
            if n not in constexpr_names:
                _arg_type(v, f"kernel '{name}', argument '{n}'")
        raise
    signature, consts, attrs, key = {}, {}, {}, []
    for i, (n, (ty, attr)) in enumerate(zip(bound, spec)):
        signature[n] = ty
        if ty == "constexpr":
            consts[n] = bound[n]
            key.append(("constexpr", _hashable(bound[n])))
            continue
        if attr == "D":
            attrs[(i,)] = [["tt.divisibility", 16]]
        key.append((ty, attr))
    return signature, consts, attrs, tuple(key)


def launch_needs(ck: "CompiledKernel") -> list:
    """The launch needs a compiled kernel carries (`normfuse.launch`), from its metadata."""
    return from_metadata(getattr(ck.kernel.metadata, "normfuse_launch", None) or {})


@dataclass
class _Launch:
    kernel: CompiledKernel
    args: tuple


class JITKernel:
    """`normfuse.jit(fn, passes=...)[grid](*args, BLOCK=..., num_warps=..., num_stages=...)`.

    Runtime arguments are specialized like Triton does (dtype, 16-byte divisibility of pointers
    and integers); the cache is keyed on that specialization, the constexprs, the options and
    the pipeline, never on tensor sizes passed as integers that are not 16-divisible.
    """

    def __init__(self, fn, passes=DEFAULT_PASSES):
        self.fn = fn
        if passes is None:
            passes = ()
        parsed = parse_pipeline(passes)  # (a bad pipeline is refused here, naming the pass)
        if not isinstance(passes, (str, list, tuple)):  # (one Pass object)
            passes = tuple(parsed)
        self.passes = tuple(passes) if not isinstance(passes, str) else passes
        self._cache: dict[tuple, CompiledKernel] = {}
        self._lock = threading.Lock()
        self._constexpr_names = {fn.arg_names[i] for i in fn.constexprs}
        self._plist = parsed  # the parsed pipeline, once (a launch must not re-parse it)
        self._targets: dict = {}  # Triton's current device -> its GPUTarget
        # the launch fast path (`_compiled`): per call shape (positional count, keyword names)
        # the binding of arguments to parameters, and per specialization the compiled kernel
        self._bindings: dict = {}
        self._fast: dict = {}
        names = _params(fn)
        self._names = names
        self._cnames = [n for n in names if n in self._constexpr_names]

    def _current_target(self):
        """(the current device's target, the device index or None), the target looked up once
        per device (a launch used to ask the driver and parse the pipeline every time: about
        0.1 ms of host time per launch)."""
        try:
            from triton.runtime.driver import driver
            dev = driver.active.get_current_device()
        except Exception:  # noqa: BLE001 - no driver: _target explains
            dev = None
        tgt = self._targets.get(dev)
        if tgt is None:
            tgt = _target(None, _kernel_name(self.fn), self._plist)
            if dev is not None:
                self._targets[dev] = tgt
        return tgt, dev

    def specialize(self, args, kwargs):
        return specialize(self.fn, args, kwargs)

    def _binding(self, nargs: int, keys: tuple):
        """How a call with `nargs` positional arguments and keyword names `keys` binds: (the
        parameters the positional arguments fill, the defaults of the rest, the option names
        among the keywords); the rule of `bind_arguments`, computed once per call shape."""
        names = self._names
        given = [k for k in keys if k not in _OPTIONS]
        open_all = [n for n in names if n not in given]
        open_runtime = [n for n in open_all if n not in self._constexpr_names]
        slots = tuple(open_runtime if nargs == len(open_runtime) else open_all[:nargs])
        defaults = _defaults(self.fn)
        fill = {n: defaults[n] for n in names if n not in given and n not in slots
                and n in defaults}
        return slots, fill, tuple(k for k in keys if k in _OPTIONS)

    def _compiled(self, args, kwargs):
        """(CompiledKernel, every parameter's value, options) of a launch.

        Fast path: a call shaped like an earlier one that compiled (as many positional
        arguments, the same keyword names) replays that call's binding of arguments to
        parameters, runs Triton's own specializer on the values and finds the compiled kernel
        by the specialization (pointer alignment, integer divisibility, the constexprs, the
        options, the target): what the general path below keys on, without re-deriving the
        binding and the signature in Python (about 0.1 ms of host time per launch on the
        H200's host, measured 2026-12-02). Anything unusual falls through to the general path,
        which validates and names what is wrong."""
        # the current device: a binary for one arch never runs on another, and a loaded kernel
        # (its module and function handle) belongs to the device it was loaded on, as in
        # Triton's own per-device caches: the device is part of both keys
        target, dev = self._current_target()
        shape = (len(args), tuple(kwargs))
        binding = self._bindings.get(shape)
        if binding is not None:
            slots, fill, opt_names = binding
            vals = dict(fill)
            vals.update(zip(slots, args))
            options = {}
            for k, v in kwargs.items():
                if k in opt_names:
                    options[k] = v
                else:
                    vals[k] = v
            try:
                bound = {n: vals[n] for n in self._names}
                ck = self._fast.get(self._fast_key(shape, bound, options, target, dev))
            except Exception:  # noqa: BLE001 - the general path says what is wrong
                ck = None
            if ck is not None:
                return ck, bound, options
        ck, bound, options = self._compiled_general(target, args, kwargs, dev)
        if binding is None:
            self._bindings[shape] = self._binding(len(args), tuple(kwargs))
        try:
            self._fast[self._fast_key(shape, bound, options, target, dev)] = ck
        except Exception:  # noqa: BLE001 - (not cached: the general path each time)
            pass
        return ck, bound, options

    def _fast_key(self, shape, bound: dict, options: dict, target, dev=None) -> tuple:
        """The fast path's key of a launch: its call shape, Triton's specialization of the
        values, the constexprs, the options, the target and the device."""
        _, spec, _ = _binder(self.fn, target)(**bound)
        return (shape, tuple(spec), tuple(_hashable(bound[n]) for n in self._cnames),
                tuple(sorted(options.items())), target.backend, target.arch, dev)

    def _compiled_general(self, target, args, kwargs, dev=None):
        kwargs = dict(kwargs)
        options = {k: kwargs.pop(k) for k in _OPTIONS if k in kwargs}
        name = _kernel_name(self.fn)
        bound = bind_arguments(self.fn, args, kwargs, name=name)
        signature, consts, attrs, key = _specialize_bound(self.fn, bound, name, target)
        ck_key = (key, tuple(sorted(options.items())), target.backend, target.arch, dev)
        ck = self._cache.get(ck_key)
        if ck is None:
            with self._lock:
                ck = self._cache.get(ck_key)
                if ck is None:
                    ck = compile(self.fn, signature=signature, constexprs=consts, target=target,
                                 passes=self.passes, attrs=attrs, **options)
                    self._cache[ck_key] = ck
        return ck, bound, options

    def warmup(self, *args, **kwargs) -> CompiledKernel:
        return self._compiled(args, kwargs)[0]

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            ck, bound, options = self._compiled(args, kwargs)
            meta = dict(bound, **options)
            g = grid(meta) if callable(grid) else grid
            g = tuple(g) + (1,) * (3 - len(tuple(g)))
            # Triton's launcher takes every argument in order, constexprs included.
            full = list(bound.values())
            runtime = tuple(v for n, v in bound.items() if n not in self._constexpr_names)
            if ck.lowered is None:
                needs = launch_needs(ck)
                if needs:  # what the passes declared (normfuse.launch): grid policy, derived args, ...
                    g, full = apply_launch(needs, g, full, meta)
            # the lowered kernel (hopper-ws) maps the arguments itself (descriptors, derived
            # vectors, its persistent grid); else Triton's launcher with the needs applied
            return ck.launch(g, full, runtime_args=runtime)
        return launch


def kernel_args(fn, runtime_args, constexprs: dict) -> tuple:
    """Every argument of `fn` in kernel order, constexprs included, as Triton's launcher of a
    compiled kernel takes them: the runtime arguments (non-constexpr parameters, in order) and
    the constexpr values by name, a constexpr not given taking its default (as the binding that
    compiled the kernel did)."""
    it = iter(runtime_args)
    cs = set(fn.constexprs)
    out = []
    params = getattr(fn, "params", None) or [None] * len(fn.arg_names)
    for i, (n, p) in enumerate(zip(fn.arg_names, params)):
        if i not in cs:
            out.append(next(it))
        elif n in constexprs:
            out.append(constexprs[n])
        elif p is not None and p.has_default:
            out.append(p.default)
        else:
            raise TypeError(f"{fn.__name__}: constexpr {n} has no value and no default")
    return tuple(out)


def jit(fn=None, *, passes=DEFAULT_PASSES):
    """Wrap a @triton.jit function so launches go through normfuse's passes."""
    if fn is None:
        return lambda f: JITKernel(f, passes)
    return JITKernel(fn, passes)
