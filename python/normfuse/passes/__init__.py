"""Pass registry, the pass base class, the run context and remarks.

A pass is a frozen dataclass whose fields are its typed options (written `pass{opt-name=value}`
in a pipeline), with a `name`, a one-line `summary`, and `apply(module, run)`: it edits a
`normfuse.ir.Module` in place through the IR facade (`normfuse.ir.ops`) and reports through
`run` (a `PassRun`): remarks ("applied", or "missed" with the reason: a pass that does not
match leaves the IR unchanged), launch needs (`run.require`, see `normfuse.launch`), a plan for
a backend (`run.lower`, a lowering pass), and the compilation it runs in (`run.context`, a
`CompileContext`; empty under normfuse-opt).
Passes are imported lazily by name.

Older passes that subclass `Pass` as a plain dataclass and define `run(module)` (remarks through
`self.remark`) keep working: `Pass.apply` calls them.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import typing
from dataclasses import dataclass
from typing import ClassVar, Literal

from ..ir import Module

# name -> "module:Class"; the pipeline is readable here in one place.
_REGISTRY: dict[str, str] = {
    "lazy-prenorm": "normfuse.passes.lazy_prenorm:LazyPreNorm",
    "epilogue-norm": "normfuse.passes.epilogue_norm:EpilogueNorm",
    "cluster-reduce": "normfuse.passes.cluster_reduce:ClusterReduce",
    "residual-acc": "normfuse.passes.residual_acc:ResidualAcc",
    "cluster-reduce-chain": "normfuse.passes.cluster_reduce_chain:ClusterReduceChain",
    "hopper-ws": "normfuse.passes.hopper_ws:HopperWS",
    "hoist-loads": "normfuse.passes.hoist_loads:HoistLoads",
    "reuse-loads": "normfuse.passes.reuse_loads:ReuseLoads",
    "prefetch-loads": "normfuse.passes.prefetch_loads:PrefetchLoads",
}


@dataclass(frozen=True)
class Remark:
    """What a pass did ("applied"), why it did nothing ("missed"), or a note ("analysis")."""

    pass_name: str
    kind: str
    message: str
    loc: str | None = None

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc else ""
        return f"{where}remark: [{self.pass_name}] {self.kind}: {self.message}"


class PassError(Exception):
    """Unknown pass, bad option, or a pass that produced invalid IR."""


@dataclass(frozen=True)
class CompileContext:
    """What a pass may know of the compilation it runs in. Under `normfuse.compile`/`jit` the
    pipeline fills it from Triton's options; under normfuse-opt every field is None (a pass
    that needs one says so in a remark, or takes it from an option)."""

    num_stages: int | None = None
    num_warps: int | None = None
    num_ctas: int | None = None
    arch: int | None = None  # compute capability, e.g. 90

    @classmethod
    def from_metadata(cls, metadata: dict) -> "CompileContext":
        def get(k):
            v = metadata.get(k)
            return int(v) if v is not None else None
        target = metadata.get("target")
        arch = getattr(target, "arch", None) if target is not None else None
        return cls(get("num_stages"), get("num_warps"), get("num_ctas"),
                   int(arch) if isinstance(arch, (int, str)) and str(arch).isdigit() else None)


class PassRun:
    """One pass's run over one module: where its remarks and launch needs go, and the context."""

    def __init__(self, pass_name: str, module: Module, context: CompileContext | None = None):
        from ..ir.match import LocResolver
        self.pass_name = pass_name
        self.module = module
        self.context = context or CompileContext()
        self.remarks: list[Remark] = []
        self.plan = None  # what a lowering pass hands to its backend (`lower`)
        self._locs = LocResolver(module)

    def where(self, op) -> str | None:
        """'file.py:line:col' of an op (its location resolved through the module's aliases)."""
        return self._locs(op) if op is not None and not isinstance(op, str) else op

    def remark(self, kind: str, message: str, at=None) -> Remark:
        r = Remark(self.pass_name, kind, message, self.where(at))
        self.remarks.append(r)
        return r

    def applied(self, message: str, at=None) -> Remark:
        return self.remark("applied", message, at)

    def missed(self, message: str, at=None) -> Remark:
        return self.remark("missed", message, at)

    def lower(self, plan) -> None:
        """Hand `plan` to the backend: a lowering pass (`lowers = True`) analyses and returns a
        frozen plan; the pipeline gives it to `normfuse.lowering.build` and replaces the module
        by the compiled program's TTGIR."""
        self.plan = plan

    def require(self, func, *needs) -> None:
        """Declare what the kernel `func` (a tt.func op) needs at launch (`normfuse.launch`)."""
        from .. import launch
        launch.declare(func, *needs)

    def refuses_ttgir(self, module: Module) -> bool:
        """True (with a "missed" remark) when `module` is TTGIR: the passes run on TTIR."""
        from ..ir.match import is_ttgir
        if not is_ttgir(module):
            return False
        self.missed(f"the module is TTGIR; {self.pass_name} runs on TTIR (between Triton's "
                    "'ttir' and 'ttgir' stages)")
        return True


class Pass:
    """Base of every pass (see the module docstring). Subclasses are dataclasses; their fields
    are the options."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def apply(self, module: Module, run: PassRun) -> None:
        """Run over `module`, editing it in place; report through `run`."""
        if type(self).run is Pass.run:
            raise NotImplementedError(f"pass '{self.name}' defines neither apply() nor run()")
        self.remarks = []  # an older pass: run(module) with self.remark
        # older passes read the compilation from the module (superseded by run.context)
        c = run.context
        module.compile_options = {"num_stages": c.num_stages, "num_warps": c.num_warps,
                                  "num_ctas": c.num_ctas}
        out = self.run(module)
        run.remarks.extend(out if out is not None else self.remarks)

    def run(self, module: Module, context: CompileContext | None = None) -> list[Remark]:
        """Run the pass on `module` alone and return its remarks."""
        r = PassRun(self.name, module, context)
        self.apply(module, r)
        return r.remarks

    # -- the older interface (passes that define run() and keep remarks on themselves) ---------
    @property
    def remarks(self) -> list:
        return self.__dict__.setdefault("_remarks", [])

    @remarks.setter
    def remarks(self, value) -> None:
        self.__dict__["_remarks"] = value

    def remark(self, kind: str, message: str, loc: str | None = None) -> Remark:
        r = Remark(self.name, kind, message, loc)
        self.remarks.append(r)
        return r

    def refuses_ttgir(self, module: Module) -> bool:
        from ..ir.match import is_ttgir
        if not is_ttgir(module):
            return False
        self.remark("missed", f"the module is TTGIR; {self.name} runs on TTIR (between Triton's "
                              "'ttir' and 'ttgir' stages)")
        return True


def option_error(pass_name: str, key: str, message: str) -> PassError:
    return PassError(f"option {pass_name}{{{key.replace('_', '-')}}} {message}")


def pass_names() -> list[str]:
    """Registered pass names, without importing the passes."""
    return sorted(_REGISTRY)


def available_passes() -> dict[str, str]:
    """name -> one-line summary, for --list-passes and docs."""
    return {name: _load(name).summary for name in sorted(_REGISTRY)}


def pass_options(name: str) -> dict[str, object]:
    """A pass's options as written in a pipeline (`stats-source`, ...) with their defaults."""
    import dataclasses
    cls = _load(name)
    return {f.name.replace("_", "-"): f.default for f in dataclasses.fields(cls)
            if f.init and not f.name.startswith("_") and f.default is not dataclasses.MISSING}


def _load(name: str) -> type[Pass]:
    try:
        target = _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise PassError(f"unknown pass '{name}' (known passes: {known})") from None
    mod, cls = target.split(":")
    try:
        return getattr(importlib.import_module(mod), cls)
    except (ImportError, AttributeError) as e:
        raise PassError(f"pass '{name}' is registered but cannot be loaded: {e}") from None


def create_pass(name: str, options: dict[str, str] | None = None) -> Pass:
    """Instantiate a registered pass; option strings are converted to the fields' types
    (bool, int, str, a Literal of strings, or a union of those)."""
    cls = _load(name)
    options = dict(options or {})
    fields = _option_fields(cls)
    kwargs = {}
    for key, raw in options.items():
        attr = key.replace("-", "_")
        if attr not in fields:
            raise PassError(f"pass '{name}' has no option '{key}' (options: "
                            f"{', '.join(k.replace('_', '-') for k in fields) or 'none'})")
        kwargs[attr] = _convert(name, key, raw, fields[attr])
    return cls(**kwargs)


@functools.lru_cache(maxsize=None)
def _option_fields(cls) -> dict[str, object]:
    """option attribute -> its type (from the annotations; the default's type when unresolvable).
    Cached per class: `typing.get_type_hints` evaluates every annotation string, which cost about
    0.1 ms per pass on every launch when `normfuse.jit` parsed its pipeline each time."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - a forward reference that does not resolve
        hints = {}
    out = {}
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.init and not f.name.startswith("_"):
                out[f.name] = hints.get(f.name, type(f.default) if f.default is not dataclasses.MISSING else str)
    return out


def _convert(pass_name: str, key: str, raw, typ):
    if not isinstance(raw, str):
        return raw
    choices: list = []
    kinds: list = []
    for t in (typing.get_args(typ) if typing.get_origin(typ) in (typing.Union, _UnionType) else (typ,)):
        if typing.get_origin(t) is Literal:
            choices += list(typing.get_args(t))
        else:
            kinds.append(t)
    if raw in choices:
        return raw
    if bool in kinds:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise PassError(f"option {pass_name}{{{key}}} expects true/false, got '{raw}'")
    if int in kinds:
        try:
            return int(raw)
        except ValueError:
            if not choices:
                raise PassError(f"option {pass_name}{{{key}}} expects an integer, got '{raw}'") from None
    if str in kinds or not (choices or kinds):
        return raw
    words = [str(c) for c in choices] + (["an integer"] if int in kinds else [])
    listed = ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]
    raise PassError(f"option {pass_name}{{{key}}} must be {listed}, got '{raw}'")


try:
    from types import UnionType as _UnionType
except ImportError:  # pragma: no cover - Python < 3.10
    _UnionType = typing.Union
