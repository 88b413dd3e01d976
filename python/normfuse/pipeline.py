"""The pass pipeline: parse a spec, run passes on IR text, and splice them into Triton's stages.

Where normfuse runs inside Triton's compiler::

    source -> ttir -> [normfuse: the passes, verify, cleanup] -> ttgir -> llir -> ptx -> cubin

The stage is inserted through `triton.knobs.runtime.add_stages_inspection_hook`, which Triton
does not put in its cache key; `cache_tag()` is therefore passed to `triton.compile` as an extra
cache-invalidating variable, so a kernel compiled with a pipeline never reuses a binary compiled
without it (or with another pipeline), and the other way round.
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

from . import __version__
from .ir import IRError, bridge, guard
from .passes import Pass, PassError, Remark, create_pass
from .passes.cluster_reduce import SCRATCH_TOKEN

STAGE_NAME = "normfuse"  # the stage key inserted after "ttir"


def parse_pipeline(spec: str | Sequence[str | Pass] | None) -> list[Pass]:
    """'lazy-prenorm,other{opt=v,flag=true}' (or a list of names/passes) -> pass objects."""
    if spec is None:
        return []
    if isinstance(spec, str):
        items = _split_spec(spec)
    else:
        items = list(spec)
    out: list[Pass] = []
    for item in items:
        if isinstance(item, Pass):
            out.append(item)
            continue
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
    files = set(extra_files) | {os.path.abspath(__file__)}
    for sub in ("ir", "passes"):
        d = os.path.join(here, sub)
        files.update(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py"))
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


def run_on_view(view, passes: Sequence[Pass]) -> tuple[list[Remark], bool]:
    """Run passes on an editable view; each pass's output is re-verified by Triton.

    A pass that fails with anything but a PassError (a bug in the pass, met on this input) raises
    a PassError that names the pass, the exception and where it was raised: callers report it as
    an error about the input, never as a traceback.
    """
    remarks: list[Remark] = []
    changed = False
    for p in passes:
        p.remarks = []
        before = view.print()
        with guard.section(f"running pass '{p.name}'"):
            try:
                out = p.run(view)
            except PassError:
                raise
            except Exception as e:  # noqa: BLE001 - see the docstring
                raise PassError(f"pass '{p.name}' failed on this input (internal error: "
                                f"{_describe_exception(e)}); please report it with the input") \
                    from None
            remarks.extend(out if out is not None else p.remarks)
            if view.print() != before:
                changed = True
                try:
                    new = bridge.reload(view, clean=True)
                except IRError as e:
                    raise PassError(f"pass '{p.name}' produced invalid IR: {e}") from None
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
                 debuginfo: bool = True) -> PipelineResult:
    """Parse `text` (TTIR/TTGIR), run the passes, return verified text and remarks.

    The IR is unchanged (byte for byte as Triton prints it) when no pass matched. `debuginfo=False`
    prints it without locations (`#loc` lines and `loc(...)`), as normfuse-opt does by default.
    Bad input raises IRError (guard.TritonCrash when Triton's parser crashed on it, in a child
    process), a pass that fails raises PassError.
    """
    plist = parse_pipeline(passes)
    view = bridge.load(text, source_name=source_name)
    remarks, changed = run_on_view(view, plist)
    out = view.print()
    if not debuginfo:
        out = bridge.print_without_locations(out, source_name=source_name)
    return PipelineResult(out, remarks, changed)


# ---------------------------------------------------------------------------------------------
# Inside Triton's compiler
# ---------------------------------------------------------------------------------------------

_hook_lock = threading.RLock()


_CLUSTER_DIMS_RE = re.compile(r"\bnormfuse\.cluster_dims = (\d+) : i32")
_CLUSTER_SMEM_RE = re.compile(r"\bnormfuse\.cluster_smem = (\d+) : i32")


def launch_requirements(text: str) -> dict:
    """What a pass asked of the launch, from the function attributes it set (cluster-reduce):
    {"num_ctas": C, "extra_shared": bytes}, or {} for an ordinary launch."""
    dims = _CLUSTER_DIMS_RE.search(text)
    if not dims:
        return {}
    smem = _CLUSTER_SMEM_RE.search(text)
    return {"num_ctas": int(dims.group(1)), "extra_shared": int(smem.group(1)) if smem else 0}


def _make_stage(passes: Sequence[Pass], sink: list[Remark]):
    def stage(src, metadata):
        view = bridge.load(str(src), source_name=metadata.get("name", "kernel") + ".ttir",
                           context=src.context, trusted=True)
        # what a pass may need to know of the compilation (lazy-prenorm{stage-reloads}: num_stages)
        view.compile_options = {k: metadata.get(k) for k in ("num_stages", "num_warps", "num_ctas")}
        remarks, changed = run_on_view(view, passes)
        sink.extend(remarks)
        metadata["normfuse_remarks"] = [str(r) for r in remarks]
        metadata["normfuse_pipeline"] = describe(passes)
        metadata["normfuse_changed"] = changed
        req = metadata["normfuse_launch"] = launch_requirements(view.print()) if changed else {}
        if req and int(metadata.get("num_ctas") or 1) != 1:
            # Triton's own num_ctas>1 codegen would split the CTA's tile again (and fail)
            raise PassError(f"cluster-reduce sets the cluster size itself (num_ctas={req['num_ctas']}); "
                            f"compile with num_ctas=1, not {metadata['num_ctas']}")
        if not changed:
            return src
        # run_on_view reloaded the view after each change: Triton's own print, verified
        return bridge.finish(view, clean=False, trusted=True)
    return stage


def _wrap_llir(make_llir):
    """Apply the launch requirements once Triton has sized its shared memory (in make_llir):
    the cluster size becomes `metadata.num_ctas` (Triton's launcher then starts gridX * num_ctas
    CTAs as clusters of num_ctas along x) and the exchange slots are added to the dynamic shared
    memory, past Triton's own allocation (or, for cluster-reduce{exchange=global}, the size of a
    CTA's global scratch slice is written into the exchange's asm). The kernel itself stays a
    num_ctas=1 Triton program."""
    def llir(src, metadata):
        out = make_llir(src, metadata)
        req = metadata.get("normfuse_launch") or {}
        if req:
            metadata["num_ctas"] = req["num_ctas"]
            metadata["shared"] = int(metadata.get("shared") or 0) + req["extra_shared"]
            if SCRATCH_TOKEN in out:  # exchange=global: the per-CTA scratch slice size, now known
                out = out.replace(SCRATCH_TOKEN, str(int(metadata["global_scratch_size"])))
        return out
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
