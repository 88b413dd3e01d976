"""What a compiled kernel needs at launch, declared by the pass that made it need it.

A rewrite can make a kernel that Triton's default launch would run wrongly: cluster-reduce's
kernels must start as thread-block clusters with extra dynamic shared memory past Triton's own
allocation, and with `exchange=global` their PTX needs the size of a CTA's global-scratch slice,
which is known only after Triton's allocation. Such a requirement is a *launch need*:

- the pass declares it on the kernel function, `run.require(func, ClusterSize(4))`
  (`normfuse.passes.PassRun.require`); it is written onto the function as an attribute, so
  normfuse-opt's output shows it and the module carries it;
- the pipeline reads every need back from the IR (`read`) and applies each one at fixed points,
  without knowing which pass asked or why:

  =====================  =========================================================================
  `check(context)`       before the rewritten IR goes on: refuse compile options the need conflicts
                         with (a cluster size set by a pass and by `num_ctas` at once)
  `at_llir(llir, md)`    after Triton's make_llir, when shared memory and scratch are sized: edit
                         the compilation metadata (`num_ctas`, `shared`) or fill numbers into the
                         LLVM IR
  `at_launch(grid, args, meta)`  at each `normfuse.jit` launch: the grid and the argument list
  =====================  =========================================================================

- the needs are also recorded in the compiled kernel's metadata (`metadata.normfuse_launch`, one
  JSON entry per need: `{"num_ctas": 4, "extra_shared": 256}`), so a kernel loaded from Triton's
  cache still knows them at launch.

Adding a kind of need (for a future pass) is one frozen dataclass here, registered with
`@need`: a `value`, the function attribute it is written as (`attr`), the metadata key (`key`),
and the hooks it needs. Two examples that fit the same interface: a lowering that adds derived
kernel arguments (e.g. TMA descriptors made on the host) overrides `at_launch` to append them to
`args`; a launch-grid policy (persistent: one program per SM) overrides `at_launch` to replace
the grid. `pipeline.py` and `compiler.py` stay unchanged: they only call the hooks.

Several passes may declare needs on one function; the same kind twice must agree (`merge`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

_KINDS: dict[str, type["LaunchNeed"]] = {}  # key -> class


def need(cls):
    """Register a LaunchNeed subclass (by its metadata key)."""
    if cls.key in _KINDS and _KINDS[cls.key] is not cls:
        raise ValueError(f"launch need key '{cls.key}' registered twice")
    _KINDS[cls.key] = cls
    return cls


class LaunchError(Exception):
    """A need that conflicts with the compile options or with another need."""


@dataclass(frozen=True)
class LaunchNeed:
    """One thing the launch must do for a kernel. Subclasses set `key`, `attr`, `value_type`."""

    value: Any

    key: ClassVar[str] = ""  # the entry in metadata.normfuse_launch
    attr: ClassVar[str] = ""  # the function attribute it is written as
    value_type: ClassVar[type] = int

    def check(self, context) -> str | None:
        """Why the compilation (a `CompileContext`) cannot honour this need, or None."""
        return None

    def at_llir(self, llir: str, metadata: dict) -> str:
        """After Triton's make_llir: adjust `metadata` (a dict) and/or return edited LLVM IR."""
        return llir

    def at_launch(self, grid: tuple, args: list, meta: dict) -> tuple[tuple, list]:
        """At a normfuse.jit launch: the grid and the full argument list to launch with."""
        return grid, args

    def merge(self, other: "LaunchNeed") -> "LaunchNeed":
        """The need when two passes declare the same kind on one function."""
        if other.value != self.value:
            raise LaunchError(f"conflicting launch needs: {self.key}={self.value} and {other.value}")
        return self

    @classmethod
    def from_attr(cls, a) -> "LaunchNeed":
        return cls(a.int if cls.value_type is int else a.str)


@need
@dataclass(frozen=True)
class ClusterSize(LaunchNeed):
    """Launch each program as a cluster of `value` CTAs (Triton's launcher does it when
    `metadata.num_ctas` is set; each CTA stays a num_ctas=1 Triton program)."""

    key: ClassVar[str] = "num_ctas"
    attr: ClassVar[str] = "normfuse.cluster_dims"

    def check(self, context) -> str | None:
        n = getattr(context, "num_ctas", None)
        if n is not None and int(n) != 1:
            # Triton's own num_ctas>1 codegen would split the CTA's tile again (and fail)
            return (f"a pass sets the cluster size itself (num_ctas={self.value}); compile with "
                    f"num_ctas=1, not {n}")
        return None

    def at_llir(self, llir: str, metadata: dict) -> str:
        metadata["num_ctas"] = self.value
        return llir


@need
@dataclass(frozen=True)
class ExtraSharedMemory(LaunchNeed):
    """`value` bytes of dynamic shared memory past Triton's own allocation (the pass addresses
    them from the end: `%dynamic_smem_size - value`). Attribute named for its first user."""

    key: ClassVar[str] = "extra_shared"
    attr: ClassVar[str] = "normfuse.cluster_smem"

    def at_llir(self, llir: str, metadata: dict) -> str:
        metadata["shared"] = int(metadata.get("shared") or 0) + int(self.value)
        return declare_global_smem(llir)


# Triton's own declaration of the CTA's dynamic shared memory (its LLVM lowering emits it only
# when the kernel allocates shared memory); the exchange's PTX addresses its slots from it
_GLOBAL_SMEM = "@global_smem = external addrspace(3) global [0 x i8], align 16"


def declare_global_smem(llir: str) -> str:
    """`llir` with `@global_smem` declared. A kernel that allocates no shared memory of its own
    (no dot, no layout conversion through shared memory) has no such symbol, and the exchange's
    inline PTX naming it would fail in ptxas ("Unknown symbol 'global_smem'"). LLVM's NVPTX
    backend emits the external declaration although only inline asm uses it (a test compiles
    such a kernel through ptxas)."""
    if "@global_smem" in llir or "global_smem" not in llir:  # declared, or nothing names it
        return llir
    m = re.search(r"^define ", llir, re.M)
    if m is None:
        raise LaunchError("cannot declare global_smem: no function definition in the LLVM IR")
    return llir[:m.start()] + _GLOBAL_SMEM + "\n\n" + llir[m.start():]


@need
@dataclass(frozen=True)
class ScratchSizeToken(LaunchNeed):
    """The LLVM IR carries token `value` where the size in bytes of one program's global scratch
    slice belongs; it is known only after Triton's allocation (`metadata.global_scratch_size`)."""

    key: ClassVar[str] = "scratch_size_token"
    attr: ClassVar[str] = "normfuse.scratch_size_token"
    value_type: ClassVar[type] = str

    def at_llir(self, llir: str, metadata: dict) -> str:
        return llir.replace(self.value, str(int(metadata.get("global_scratch_size") or 0)))


# ---------------------------------------------------------------------------------------------
# Reading and writing
# ---------------------------------------------------------------------------------------------

def declare(func_op, *needs: LaunchNeed) -> None:
    """Write `needs` onto a function (a `tt.func` op), merged with what it declares already."""
    from .ir.ops import FuncOp
    from .ir.syntax import str_attr
    f = FuncOp(func_op)
    for n in needs:
        old = f.attr(n.attr)
        if old is not None:
            n = type(n).from_attr(old).merge(n)
        f.set_attr(n.attr, int(n.value) if n.value_type is int else str_attr(n.value))


def read(module) -> list[LaunchNeed]:
    """Every need declared on the module's functions (a kernel module has one function)."""
    from .ir.ops import FuncOp
    out: dict[str, LaunchNeed] = {}
    for func in module.functions():
        f = FuncOp(func)
        for cls in _KINDS.values():
            a = f.attr(cls.attr)
            if a is None:
                continue
            n = cls.from_attr(a)
            out[cls.key] = out[cls.key].merge(n) if cls.key in out else n
    return list(out.values())


def to_metadata(needs) -> dict:
    """JSON form for the compiled kernel's metadata: {key: value}."""
    return {n.key: n.value for n in needs}


def from_metadata(entry: dict | None) -> list[LaunchNeed]:
    out = []
    for key, value in (entry or {}).items():
        cls = _KINDS.get(key)
        if cls is None:
            raise LaunchError(f"compiled kernel needs '{key}' at launch, which this normfuse does not know")
        out.append(cls(value))
    return out


def check(needs, context) -> str | None:
    for n in needs:
        why = n.check(context)
        if why:
            return why
    return None


def apply_llir(needs, llir: str, metadata: dict) -> str:
    for n in needs:
        llir = n.at_llir(llir, metadata)
    return llir


def apply_launch(needs, grid: tuple, args: list, meta: dict) -> tuple[tuple, list]:
    for n in needs:
        grid, args = n.at_launch(grid, args, meta)
    return grid, args
