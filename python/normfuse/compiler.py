"""Compile and launch `@triton.jit` kernels with normfuse passes applied.

`compile()` works ahead of time on a CPU-only machine (target "cuda:90"); `jit()` wraps a
kernel for grid-style launches on the current GPU, like Triton's own `kernel[grid](...)`.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any, Sequence

from .launch import apply_launch, from_metadata
from .passes import Remark
from .pipeline import cache_tag, describe, installed, parse_pipeline

DEFAULT_PASSES = "default"  # pipeline.DEFAULT_PIPELINE: every fusion pass, then hopper-ws


def _target(target):
    from triton.backends.compiler import GPUTarget
    if isinstance(target, GPUTarget):
        return target
    if target is None:
        from triton.runtime.driver import driver
        return driver.active.get_current_target()
    backend, _, arch = str(target).partition(":")
    if backend != "cuda" or not arch.isdigit():
        raise ValueError(f"target must look like 'cuda:90', got {target!r}")
    return GPUTarget("cuda", int(arch), 32)


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

    @property
    def asm(self):
        if self.lowered is None:
            return self.kernel.asm
        out = dict(self.lowered.kernel.asm)
        for k in ("ttir", "normfuse"):
            if k in self.kernel.asm:
                out[k] = self.kernel.asm[k]
        out["gluon"] = self.lowered.lowering.source
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
        Returns {"registers", "spill_stores", "spill_loads"} (bytes per thread for the spills)."""
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
        return self.kernel[tuple(grid) + (1,) * (3 - len(tuple(grid)))](*args)

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
    """Run Triton's ptxas with -v on `ptx` and read back registers and spill bytes per thread."""
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
    return {"registers": int(regs.group(1)), "spill_stores": int(spills.group(1)),
            "spill_loads": int(spills.group(2))}


def compile(fn, *, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
            target="cuda:90", passes=DEFAULT_PASSES, attrs=None, **triton_options) -> CompiledKernel:
    """Compile `fn` (a @triton.jit function) for `target` with normfuse `passes` inserted.

    `signature` and `constexprs` are Triton's (`{"X": "*bf16", "M": "i32", "BLOCK": "constexpr"}`);
    `triton_options` are Triton's compile options (num_warps, num_stages, ...).
    """
    import triton
    from triton._C.libtriton import get_cache_invalidating_env_vars  # noqa: the version key only
    from triton.compiler import ASTSource

    plist = parse_pipeline(passes)
    missing = [k for k, v in signature.items() if v == "constexpr" and k not in (constexprs or {})]
    if missing:
        raise ValueError(f"constexpr arguments without a value: {', '.join(missing)}")
    src = ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    env = dict(get_cache_invalidating_env_vars())
    env["NORMFUSE_PIPELINE"] = cache_tag(plist) if plist else "none"
    stage = [p for p in plist if not getattr(p, "lowers", False)]
    lowerers = [p for p in plist if getattr(p, "lowers", False)]
    sink: list[Remark] = []
    tgt = _target(target)
    with installed(stage, sink):
        ck = triton.compile(src, target=tgt, options=triton_options, _env_vars=env)
    remarks = list(getattr(ck.metadata, "normfuse_remarks", []) or [])
    lowered = None
    for p in lowerers:
        if lowered is not None:
            break
        if tgt.backend != "cuda" or tgt.arch != 90:
            remarks.append(str(Remark(p.name, "missed", f"the lowering targets sm_90; compiling for "
                                                        f"{tgt.backend}:{tgt.arch}")))
            continue
        lowered, more = _lower(p, ck)
        remarks.extend(more)
    return CompiledKernel(ck, remarks, describe(plist), lowered)


def _lower(p, ck):
    """Run lowering pass `p` on the fused TTIR of `ck`; (LoweredLaunch or None, remarks)."""
    from .ir import bridge
    from .pipeline import run_on_view
    text = ck.asm.get("normfuse", ck.asm["ttir"])
    view = bridge.load(text, source_name=ck.name + ".ttir")
    out, _ = run_on_view(view, [p])
    lowering = getattr(p, "lowering", None)
    if lowering is None:
        return None, [str(r) for r in out]
    from .lowering.launch import LoweredLaunch
    return LoweredLaunch(lowering), [str(r) for r in out]


# ---------------------------------------------------------------------------------------------
# Grid-style launches on the current GPU
# ---------------------------------------------------------------------------------------------

_TORCH_DTYPES = {
    "bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1",
}


def _arg_type(value) -> tuple[str, bool]:
    """Triton signature type for a runtime argument, and whether it is 16-divisible."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        name = str(value.dtype).replace("torch.", "")
        if name not in _TORCH_DTYPES:
            raise TypeError(f"unsupported tensor dtype {value.dtype}")
        return "*" + _TORCH_DTYPES[name], value.data_ptr() % 16 == 0
    if isinstance(value, bool):
        return "i1", False
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32", value % 16 == 0 and value != 0
        return "i64", value % 16 == 0
    if isinstance(value, float):
        return "fp32", False
    if value is None:
        return "constexpr", False
    raise TypeError(f"cannot pass {type(value).__name__} to a kernel")


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
        self.passes = tuple(passes) if not isinstance(passes, str) else passes
        self._cache: dict[tuple, CompiledKernel] = {}
        self._lock = threading.Lock()
        self._constexpr_names = {fn.arg_names[i] for i in fn.constexprs}

    def specialize(self, args, kwargs):
        names = self.fn.arg_names
        constexpr_names = self._constexpr_names
        options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                   if k in kwargs}
        consts = {k: kwargs.pop(k) for k in list(kwargs) if k in constexpr_names}
        for p in getattr(self.fn, "params", ()):  # constexprs left out take their defaults
            if p.name in constexpr_names and p.name not in consts and p.has_default:
                consts[p.name] = p.default
        if kwargs:
            raise TypeError(f"unknown keyword arguments: {', '.join(kwargs)}")
        runtime = [n for n in names if n not in constexpr_names]
        if len(args) != len(runtime):
            raise TypeError(f"{self.fn.__name__} takes {len(runtime)} runtime arguments "
                            f"({', '.join(runtime)}), got {len(args)}")
        signature, attrs, key = {}, {}, []
        for n in names:
            if n in constexpr_names:
                signature[n] = "constexpr"
                continue
            v = args[runtime.index(n)]
            t, div16 = _arg_type(v)
            signature[n] = t
            if div16:
                attrs[(names.index(n),)] = [["tt.divisibility", 16]]
            key.append((t, div16))
        return signature, consts, attrs, options, tuple(key)

    def warmup(self, *args, **kwargs) -> CompiledKernel:
        signature, consts, attrs, options, key = self.specialize(args, dict(kwargs))
        target = _target(None)  # the current device: a binary for one arch never runs on another
        ck_key = (key, tuple(sorted(consts.items())), tuple(sorted(options.items())),
                  target.backend, target.arch)
        with self._lock:
            ck = self._cache.get(ck_key)
            if ck is None:
                ck = compile(self.fn, signature=signature, constexprs=consts, target=target,
                             passes=self.passes, attrs=attrs, **options)
                self._cache[ck_key] = ck
        return ck

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            meta = dict(kwargs)
            for p in getattr(self.fn, "params", ()):
                if p.name in self._constexpr_names and p.name not in meta and p.has_default:
                    meta[p.name] = p.default
            ck = self.warmup(*args, **kwargs)
            g = grid(meta) if callable(grid) else grid
            g = tuple(g) + (1,) * (3 - len(tuple(g)))
            # Triton's launcher takes every argument in order, constexprs included.
            it = iter(args)
            full = [meta[n] if n in self._constexpr_names else next(it) for n in self.fn.arg_names]
            if ck.lowered is None:
                needs = launch_needs(ck)
                if needs:  # what the passes declared (normfuse.launch): grid policy, derived args, ...
                    g, full = apply_launch(needs, g, full, meta)
            # the lowered kernel (hopper-ws) maps the arguments itself (descriptors, derived
            # vectors, its persistent grid); else Triton's launcher with the needs applied
            return ck.launch(g, full, runtime_args=args)
        return launch


def jit(fn=None, *, passes=DEFAULT_PASSES):
    """Wrap a @triton.jit function so launches go through normfuse's passes."""
    if fn is None:
        return lambda f: JITKernel(f, passes)
    return JITKernel(fn, passes)
