"""Pass registry, the pass base class and remarks.

A pass is a small object with a `name`, a one-line `summary` and `run(module) -> list[Remark]`;
it edits a `normfuse.ir.Module` in place. A pass that does not match leaves the IR unchanged and
says why in a "missed" remark. Passes are imported lazily by name. Options are the dataclass
fields (written `pass{opt-name=value}` in a pipeline). Inside Triton's compiler the module also
carries `compile_options` (num_stages, num_warps, num_ctas of the compilation); under
normfuse-opt it has none.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import ClassVar

from ..ir import Module

# name -> "module:Class"; the pipeline is readable here in one place.
_REGISTRY: dict[str, str] = {
    "lazy-prenorm": "normfuse.passes.lazy_prenorm:LazyPreNorm",
    "epilogue-norm": "normfuse.passes.epilogue_norm:EpilogueNorm",
    "cluster-reduce": "normfuse.passes.cluster_reduce:ClusterReduce",
    "hopper-ws": "normfuse.passes.hopper_ws:HopperWS",
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


@dataclass
class Pass:
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    remarks: list = field(default_factory=list, init=False, repr=False, compare=False)

    def run(self, module: Module) -> list[Remark]:  # pragma: no cover - interface
        raise NotImplementedError

    def refuses_ttgir(self, module: Module) -> bool:
        """True (with a "missed" remark) when `module` is TTGIR: the passes run on TTIR."""
        from ..ir.match import is_ttgir
        if not is_ttgir(module):
            return False
        self.remark("missed", f"the module is TTGIR; {self.name} runs on TTIR (between Triton's "
                              "'ttir' and 'ttgir' stages)")
        return True

    def remark(self, kind: str, message: str, loc: str | None = None) -> Remark:
        r = Remark(self.name, kind, message, loc)
        self.remarks.append(r)
        return r


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
    """Instantiate a registered pass; options are strings parsed by the pass's field types."""
    cls = _load(name)
    options = dict(options or {})
    fields = {f: t for f, t in getattr(cls, "__annotations__", {}).items()
              if not f.startswith("_") and f not in ("name", "summary", "remarks")}
    kwargs = {}
    for key, raw in options.items():
        attr = key.replace("-", "_")
        if attr not in fields:
            raise PassError(f"pass '{name}' has no option '{key}' (options: "
                            f"{', '.join(k.replace('_', '-') for k in fields) or 'none'})")
        default = getattr(cls, attr, None)
        kwargs[attr] = _convert(name, key, raw, default)
    return cls(**kwargs)


def _convert(pass_name: str, key: str, raw, default):
    if not isinstance(raw, str):
        return raw
    if isinstance(default, bool):
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise PassError(f"option {pass_name}{{{key}}} expects true/false, got '{raw}'")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise PassError(f"option {pass_name}{{{key}}} expects an integer, got '{raw}'") from None
    return raw
