"""The pass pipeline: parse a spec, run passes on IR text, and splice them into Triton's stages.

Where normfuse runs inside Triton's compiler::

    source -> ttir -> [normfuse: the passes, verify, cleanup] -> ttgir -> llir -> ptx -> cubin

The stage is inserted through `triton.knobs.runtime.add_stages_inspection_hook`, which Triton
does not put in its cache key; `cache_tag()` of the stage's passes is therefore passed to
`triton.compile` as an extra cache-invalidating variable, so a kernel compiled with a pipeline never
reuses a binary compiled without it (or with other stage passes), and the other way round. The
lowering passes (hopper-ws) run after Triton's compilation, on its output: they are not in that key.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Sequence

from . import launch
from .version import __version__
from .ir import IRError, bridge, guard
from .passes import CompileContext, Pass, PassError, PassRun, Remark, create_pass

STAGE_NAME = "normfuse"  # the stage key inserted after "ttir"


# `passes="default"`: every fusion pass, then the lowering; each applies where it matches (a pass
# that does not match leaves the IR as it was and says why). lazy-prenorm fuses pre-norms,
# cluster-reduce and epilogue-norm post-norms, cluster-reduce-chain chains of loops over heads
# with cross-head row sums (the FlashNormAttention backward); residual-acc starts a GEMM
# accumulator at a residual added to its result (FlashNormAttention's inner residual,
# acc = ln_q; acc += P V); hopper-ws lowers what is then a GEMM-shaped loop to the
# warp-specialized Hopper template.
DEFAULT_PIPELINE = ("lazy-prenorm", "cluster-reduce", "cluster-reduce-chain", "epilogue-norm",
                    "residual-acc", "hopper-ws")


def parse_pipeline(spec: str | Sequence[str | Pass] | None) -> list[Pass]:
    """'lazy-prenorm,other{opt=v,flag=true}' (or a list of names/passes) -> pass objects;
    'default' is DEFAULT_PIPELINE."""
    if spec is None:
        return []
    if isinstance(spec, Pass):
        return [spec]
    if isinstance(spec, str):
        items = _split_spec(spec)
    elif isinstance(spec, (list, tuple)):
        items = list(spec)
    else:
        raise PassError(f"passes must be a pipeline string, a list of pass names or Pass objects, "
                        f"or None; got {type(spec).__name__}")
    items = [x for item in items for x in (DEFAULT_PIPELINE if item == "default" else (item,))]
    out: list[Pass] = []
    for item in items:
        if isinstance(item, Pass):
            out.append(item)
            continue
        if not isinstance(item, str):
            what = (f"the class {item.__name__} (pass an instance: {item.__name__}())"
                    if isinstance(item, type) and issubclass(item, Pass) else
                    f"a {type(item).__name__}")
            raise PassError(f"a pipeline item must be a pass name or a Pass object, got {what}")
        m = re.fullmatch(r"\s*([A-Za-z0-9_\-]+)\s*(?:\{(.*)\})?\s*", item)
        if not m:
            raise PassError(f"cannot read pass '{item}' (expected name or name{{opt=value,...}})")
        opts = {}
        if m.group(2):
            for kv in m.group(2).split(","):
                if not kv.strip():
                    continue
                if "=" not in kv:
                    raise PassError(f"option '{kv.strip()}' of pass '{m.group(1)}' needs '=value'")
                k, v = kv.split("=", 1)
                opts[k.strip()] = v.strip()
        out.append(create_pass(m.group(1), opts))
    return out


def _split_spec(spec: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in spec:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def describe(passes: Sequence[Pass]) -> str:
    """A canonical, printable form of a pipeline (also what the cache key is made from)."""
    out = []
    for p in passes:
        opts = {k: v for k, v in vars(p).items() if k != "remarks" and not k.startswith("_")}
        out.append(p.name + ("{" + ",".join(f"{k.replace('_', '-')}={v}" for k, v in sorted(opts.items())) + "}"
                             if opts else ""))
    return ",".join(out)


def cache_tag(passes: Sequence[Pass]) -> str:
    """Changes whenever the pipeline, its options, normfuse's version or a pass's source does."""
    h = hashlib.sha256()
    h.update(__version__.encode())
    h.update(describe(passes).encode())
    mods = {inspect.getmodule(type(p)) for p in passes}
    extra = tuple(sorted(m.__file__ for m in mods if m is not None and getattr(m, "__file__", None)))
    h.update(_sources_digest(extra).encode())
    return h.hexdigest()[:32]


@functools.lru_cache(maxsize=None)
def _sources_digest(extra_files: tuple[str, ...]) -> str:
    """Everything the rewrite goes through: the IR layer, the pass package, this module (read once
    per process), plus the modules of passes registered from elsewhere."""
    here = os.path.dirname(os.path.abspath(__file__))
    files = set(extra_files) | {os.path.abspath(__file__), os.path.join(here, "launch.py")}
    for sub in ("ir", "passes", "lowering"):
        for d, _, names in os.walk(os.path.join(here, sub)):
            files.update(os.path.join(d, f) for f in names if f.endswith(".py"))
    h = hashlib.sha256()
    for f in sorted(files):
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.hexdigest()


@dataclass
class PipelineResult:
    text: str
    remarks: list[Remark] = field(default_factory=list)
    changed: bool = False
    module: object = None  # the Triton module (verified), when run through run_module


def run_on_view(view, passes: Sequence[Pass], context: CompileContext | None = None,
                lowered: list | None = None) -> tuple[list[Remark], bool]:
    """Run passes on an editable view; each pass's output is re-verified by Triton.

    A lowering pass returns a plan (`PassRun.lower`): its backend (`normfuse.lowering.build`)
    compiles the plan and the view becomes the compiled program's TTGIR; the built kernels are
    appended to `lowered` when given.

    A pass that fails with anything but a PassError (a bug in the pass, met on this input) raises
    a PassError that names the pass, the exception and where it was raised: callers report it as
    an error about the input, never as a traceback.
    """
    remarks: list[Remark] = []
    changed = False
    context = context or CompileContext()
    for p in passes:
        before = view.print()
        with guard.section(f"running pass '{p.name}'"):
            run = PassRun(p.name, view, context)
            try:
                p.apply(view, run)
                if run.plan is not None:
                    from .lowering import build
                    kernel = build(run.plan)
                    if lowered is not None:
                        lowered.append(kernel)
                    view.__init__(kernel.compiled.asm["ttgir"])
            except PassError:
                raise
            except Exception as e:  # noqa: BLE001 - see the docstring
                raise PassError(f"pass '{p.name}' failed on this input (internal error: "
                                f"{_describe_exception(e)}); please report it with the input") \
                    from None
            remarks.extend(run.remarks)
            if view.print() != before:
                changed = True
                try:
                    if getattr(p, "lowers", False):
                        # a lowering hands back a TTGIR module Triton produced itself: verify
                        # it; the editable view of TTIR does not model its warp-specialized regions
                        bridge.parse_triton(view.print(), getattr(view, "context", None), trusted=True)
                        continue
                    new = bridge.reload(view, clean=True)
                except IRError as e:
                    err = PassError(f"pass '{p.name}' produced invalid IR: {e}")
                    # (Triton died on it: normfuse-opt reports the crash itself, as when its
                    # supervised child died)
                    err.crash = e if isinstance(e, guard.TritonCrash) else None
                    raise err from None
                view.__dict__.update(new.__dict__)
    return remarks, changed


def _describe_exception(e: BaseException) -> str:
    """'KeyError: 'x' at lazy_prenorm.py:123' (the innermost frame of the traceback)."""
    import traceback
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""
    msg = str(e)
    return f"{type(e).__name__}{': ' + msg if msg else ''}{where}"


def run_pipeline(text: str, passes: str | Sequence[str | Pass], *, source_name: str = "<stdin>",
                 context: CompileContext | None = None, debuginfo: bool = True) -> PipelineResult:
    """Parse `text` (TTIR/TTGIR), run the passes, return verified text and remarks.

    The IR is unchanged (byte for byte as Triton prints it) when no pass matched. `context`
    tells the passes about the compilation (num_stages, ...), as normfuse.compile does.
    `debuginfo=False` prints it without locations (`#loc` lines and `loc(...)`), as normfuse-opt
    does by default. Bad input raises IRError (guard.TritonCrash when Triton's parser crashed on
    it, in a child process), a pass that fails raises PassError.
    """
    plist = parse_pipeline(passes)
    view = bridge.load(text, source_name=source_name)
    remarks, changed = run_on_view(view, plist, context)
    out = view.print()
    if not debuginfo:
        out = bridge.print_without_locations(out, source_name=source_name)
    return PipelineResult(out, remarks, changed)


# ---------------------------------------------------------------------------------------------
# Inside Triton's compiler
# ---------------------------------------------------------------------------------------------

_hook_lock = threading.RLock()


def launch_requirements(text: str) -> dict:
    """What the passes asked of the launch (the launch needs declared in `text`, see
    `normfuse.launch`), as metadata.normfuse_launch holds it: {"num_ctas": C, ...}; {} for an
    ordinary launch."""
    return launch.to_metadata(launch.read(bridge.load(text)))


def _make_stage(passes: Sequence[Pass], sink: list[Remark]):
    def stage(src, metadata):
        view = bridge.load(str(src), source_name=metadata.get("name", "kernel") + ".ttir",
                           context=src.context, trusted=True)
        remarks, changed = run_on_view(view, passes, CompileContext.from_metadata(metadata))
        sink.extend(remarks)
        metadata["normfuse_remarks"] = [str(r) for r in remarks]
        metadata["normfuse_pipeline"] = describe(passes)
        metadata["normfuse_changed"] = changed
        needs = launch.read(view) if changed else []
        why = launch.check(needs, CompileContext.from_metadata(metadata))
        if why:
            raise PassError(why)
        metadata["normfuse_launch"] = launch.to_metadata(needs)
        if not changed:
            return src
        # run_on_view reloaded the view after each change: Triton's own print, verified
        return bridge.finish(view, clean=False, trusted=True)
    return stage


def _wrap_llir(make_llir):
    """Apply the launch needs (`normfuse.launch`) once Triton has sized its shared memory and
    scratch, in make_llir: e.g. a cluster size becomes `metadata.num_ctas` (Triton's launcher
    then starts gridX * num_ctas CTAs as clusters of num_ctas along x) and extra shared memory is
    added to `metadata.shared`. The kernel itself stays a num_ctas=1 Triton program."""
    def llir(src, metadata):
        out = make_llir(src, metadata)
        needs = launch.from_metadata(metadata.get("normfuse_launch"))
        return launch.apply_llir(needs, out, metadata) if needs else out
    return llir


@contextlib.contextmanager
def installed(passes: Sequence[Pass], sink: list[Remark]):
    """While active, every NVIDIA compilation runs `passes` between 'ttir' and 'ttgir'."""
    from triton import knobs

    def hook(backend, stages, options, language, capability):
        if prev is not None:
            prev(backend, stages, options, language, capability)
        if "ttir" not in stages or not passes:
            return
        items = list(stages.items())
        stages.clear()
        for k, v in items:
            stages[k] = v
            if k == "ttir":
                stages[STAGE_NAME] = _make_stage(passes, sink)
        if "llir" in stages:
            stages["llir"] = _wrap_llir(stages["llir"])

    with _hook_lock:
        prev = knobs.runtime.add_stages_inspection_hook
        knobs.runtime.add_stages_inspection_hook = hook
        try:
            yield
        finally:
            knobs.runtime.add_stages_inspection_hook = prev
