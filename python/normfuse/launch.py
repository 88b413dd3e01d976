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
        return llir


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


# ---------------------------------------------------------------------------------------------
# Launching clusters: what the driver needs before the first launch, and failures in words
# ---------------------------------------------------------------------------------------------
# (A device fact; to move next to the others in normfuse.device.)

class LaunchFailure(RuntimeError):
    """A kernel launch that the driver refused (or that cannot be made: no cluster of the
    kernel's size fits on the device). `what` says which kernel and form; `cause` is the driver's
    (Triton's) message. The ops re-raise it naming the op and the shapes (`for_op`)."""

    def __init__(self, what: str, cause: str, *, num_ctas: int = 1, shared: int = 0,
                 fits_none: bool = False):
        self.what, self.cause, self.num_ctas, self.shared = what, cause, num_ctas, shared
        # the driver fits no cluster of this size: refused before anything ran, so a caller may
        # choose a smaller cluster and launch again
        self.fits_none = fits_none
        super().__init__(f"{what}: {cause}")

    def for_op(self, op_what: str) -> "LaunchFailure":
        """The same failure described in the op's terms (`op_what`: op, shapes, dtype, form)."""
        return LaunchFailure(f"{op_what} [{self.what}]", self.cause, num_ctas=self.num_ctas,
                             shared=self.shared, fits_none=self.fits_none)


_OCCUPANCY: dict = {}  # (CUfunction, shared bytes, CTAs) -> clusters resident at once


def triton_kernel(compiled):
    """Triton's CompiledKernel of a normfuse CompiledKernel (its `.kernel`), or `compiled` itself
    when it is Triton's (whose own `.kernel` is the cubin)."""
    return compiled if hasattr(compiled, "_init_handles") else compiled.kernel


def cluster_occupancy(kernel) -> int:
    """How many clusters of a Triton CompiledKernel (`metadata.num_ctas` CTAs each, its shared
    memory) the current device holds at once: `cuOccupancyMaxActiveClusters`, asked once per
    loaded function (CUfunction) and then remembered. 0: the driver fits none, a launch would fail.

    Asking is also what makes clusters of 9 to 15 CTAs launchable at all. Sizes above 8 are
    "non-portable": the driver launches them only on a function with
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED set; Triton 3.6's launcher sets it only
    when num_ctas == 16 (backends/nvidia/driver.py), and Triton's occupancy query sets it on the
    function before it asks. Measured on the H200 (2026-12-01, /work/shared/DESIGN.md): without
    the query, the post-norm kernels with 9-15 CTAs per cluster failed at launch ("a kernel
    launch error has occurred due to cluster misconfiguration"); after it, every size 2-16
    launched (66, 39, 30, 22, 17, 15, 15 clusters at 2-8 CTAs, 9 at 9, 7 at 10-16; 147992 B
    of shared memory). One-CTA kernels: returns 0 without asking (no cluster)."""
    kernel = triton_kernel(kernel)
    ctas = int(getattr(kernel.metadata, "num_ctas", 1) or 1)
    if ctas == 1:
        return 0
    kernel._init_handles()  # loads the module on the current device once
    key = (kernel.function, int(kernel.metadata.shared), ctas)
    n = _OCCUPANCY.get(key)
    if n is None:
        from triton.runtime import driver
        try:
            n = max(0, int(driver.active.utils.cuOccupancyMaxActiveClusters(*key)))
        except RuntimeError as e:  # the driver refused the query itself: no cluster fits
            raise LaunchFailure(describe_kernel(kernel), f"the driver's occupancy query failed: "
                                f"{e}", num_ctas=ctas, shared=key[1]) from e
        _OCCUPANCY[key] = n
    return n


def describe_kernel(kernel) -> str:
    """'kernel linear_rmsnorm_naive (clusters of 12 CTAs, 147968 B of shared memory)'."""
    md = kernel.metadata
    ctas = int(getattr(md, "num_ctas", 1) or 1)
    form = f"clusters of {ctas} CTAs" if ctas > 1 else "one CTA per program"
    return f"kernel {getattr(kernel, 'name', '?')} ({form}, {int(md.shared)} B of shared memory)"


def ensure_cluster_launch(kernel) -> int:
    """Before a cluster kernel's launch: make the function launchable at its cluster size and
    check that the device fits at least one cluster (`cluster_occupancy`: the driver is asked
    once per function). Returns the number of co-resident clusters; raises LaunchFailure when
    it is 0."""
    kernel = triton_kernel(kernel)
    n = cluster_occupancy(kernel)
    if n <= 0:
        md = kernel.metadata
        raise LaunchFailure(describe_kernel(kernel),
                            f"the driver fits no cluster of {int(md.num_ctas)} CTAs with "
                            f"{int(md.shared)} B of shared memory each on this device "
                            "(cuOccupancyMaxActiveClusters = 0): choose a smaller cluster "
                            "(cluster-reduce{max-cluster=8})", num_ctas=int(md.num_ctas),
                            shared=int(md.shared), fits_none=True)
    return n
