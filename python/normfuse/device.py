"""Facts about the GPU a launch runs on, asked once and cached: the bottom layer that every
launch path (the lowered kernels, the ops, the training step) reads instead of asking the driver.

- `sm_count(device)`: streaming multiprocessors (a persistent kernel launches one program per SM).
- `capability(index)`: the compute capability, e.g. (9, 0); `device_name(index)` for messages.
- Clusters (`cluster_occupancy`, `ensure_cluster_launch`, `max_resident_programs`): the driver's
  count of co-resident clusters of a loaded kernel (cuOccupancyMaxActiveClusters), asked once per
  loaded function and remembered; asking is also what makes clusters of 9-15 CTAs launchable.
  `max_resident_programs(compiled, sms)`: how many programs of a compiled kernel run at once:
  `sms` for one-CTA programs, else that count (clusters sit inside one GPC, so fewer than
  sms / num_ctas fit on the H200). `programs_per_sm(compiled)`: CTAs of a one-CTA kernel that
  fit on one SM together (its warps, registers, shared memory), for persistent grids.
- `LaunchFailure`: a launch the driver refused or that cannot be made (no cluster of the size
  fits), in words; the ops re-raise it naming the op, the shapes, the dtype and the form.
- `ensure_allocator()`: Triton's allocator for global scratch (device-side tensor descriptors,
  cluster-reduce's `exchange=global`) in the calling context.
- `cuda_state`: the current device, its current stream (a raw handle) and whether that stream is
  capturing a graph, as torch's C functions answer them (what a launch asks on every call:
  `torch.cuda.current_stream()` builds a Stream object, ~2 us; the raw queries ~0.1 us).

Nothing here imports normfuse; torch and triton are imported when a function first needs them.
"""
from __future__ import annotations

import functools

__all__ = ["sm_count", "capability", "device_name", "device_index", "max_resident_programs",
           "programs_per_sm", "cluster_occupancy", "ensure_cluster_launch", "LaunchFailure", "describe_kernel",
           "ensure_allocator", "context_allocator_missing", "cuda_state"]


class _CudaState:
    """torch's C queries of the current CUDA state, bound on first use (the functions
    `torch.cuda` wraps; where this torch lacks one, the public function):

    - `device()`: the current device's index (`torch.cuda.current_device()` without its
      lazy-init check: ask only once CUDA is initialized, e.g. with CUDA tensors in hand);
    - `stream(index)`: the raw handle (an int) of device `index`'s current stream, as Triton's
      launcher gets it;
    - `capturing()`: whether the current stream is capturing a CUDA graph (False without a
      CUDA context, creating none)."""

    def __getattr__(self, name: str):
        if name not in ("device", "stream", "capturing"):
            raise AttributeError(name)
        import torch
        c = torch._C
        # (a CPU build has dummies under these names)
        built = torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None
        self.device = (c._cuda_getDevice if built and hasattr(c, "_cuda_getDevice")
                       else torch.cuda.current_device)
        self.stream = (c._cuda_getCurrentRawStream
                       if built and hasattr(c, "_cuda_getCurrentRawStream")
                       else lambda index: torch.cuda.current_stream(index).cuda_stream)
        self.capturing = (c._cuda_isCurrentStreamCapturing
                          if built and hasattr(c, "_cuda_isCurrentStreamCapturing")
                          else lambda: False)
        return getattr(self, name)


cuda_state = _CudaState()


def device_index(device) -> int:
    """The CUDA device index of `device` (a torch.device, 'cuda:1', an int; None or 'cuda': the
    current device)."""
    import torch
    if isinstance(device, int):
        return device
    d = torch.device(device) if device is not None else torch.device("cuda")
    return d.index if d.index is not None else torch.cuda.current_device()


def sm_count(device) -> int:
    """Streaming multiprocessors of `device` (cached per device)."""
    return _sm_count(device_index(device))


@functools.lru_cache(maxsize=None)
def _sm_count(index: int) -> int:
    import torch
    return torch.cuda.get_device_properties(index).multi_processor_count


@functools.lru_cache(maxsize=None)
def capability(index: int) -> tuple[int, int]:
    """(major, minor) compute capability of CUDA device `index` (cached)."""
    import torch
    return torch.cuda.get_device_capability(index)


@functools.lru_cache(maxsize=None)
def device_name(index: int) -> str:
    """The name of CUDA device `index`, for messages (cached: a str-returning device call)."""
    import torch
    return torch.cuda.get_device_name(index)


# ---------------------------------------------------------------------------------------------
# Clusters: what the driver needs before a cluster kernel's first launch, and failures in words
# ---------------------------------------------------------------------------------------------

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


# The kernel handle cache: (CUfunction, shared bytes, CTAs per cluster) -> co-resident clusters.
# A CUfunction belongs to one loaded module on one device (Triton keeps one CompiledKernel per
# device), so the key is per kernel and device.
_OCCUPANCY: dict = {}


def triton_kernel(compiled):
    """Triton's CompiledKernel of a normfuse CompiledKernel (its `.kernel`), or `compiled` itself
    when it is Triton's (whose own `.kernel` is the cubin)."""
    return compiled if hasattr(compiled, "_init_handles") else compiled.kernel


def cluster_occupancy(kernel) -> int:
    """How many clusters of a compiled kernel (normfuse's or Triton's; `metadata.num_ctas` CTAs
    each, its shared memory) the current device holds at once: `cuOccupancyMaxActiveClusters`,
    asked once per loaded function (CUfunction) and then remembered. 0: the driver fits none, a
    launch would fail. One-CTA kernels: 0 without asking (no cluster).

    Asking is also what makes clusters of 9 to 15 CTAs launchable at all. Sizes above 8 are
    "non-portable": the driver launches them only on a function with
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED set; Triton 3.6's launcher sets it only
    when num_ctas == 16 (backends/nvidia/driver.py), and Triton's occupancy query sets it on the
    function before it asks. Measured on the H200 (2026-12-01, docs/design.md,
    "Clusters of 9-15 CTAs"): without the query, the post-norm kernels with 9-15 CTAs per cluster
    failed at launch ("a kernel launch error has occurred due to cluster misconfiguration");
    after it, every size 2-16 launched (66, 39, 30, 22, 17, 15, 15 clusters at 2-8 CTAs, 9 at 9,
    7 at 10-16; 147992 B of shared memory)."""
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
    kernel = triton_kernel(kernel)
    md = kernel.metadata
    ctas = int(getattr(md, "num_ctas", 1) or 1)
    form = f"clusters of {ctas} CTAs" if ctas > 1 else "one CTA per program"
    return f"kernel {getattr(kernel, 'name', '?')} ({form}, {int(md.shared)} B of shared memory)"


def ensure_cluster_launch(kernel) -> int:
    """Before a cluster kernel's first launch: make the function launchable at its cluster size
    and check that the device fits at least one cluster (`cluster_occupancy`: the driver is asked
    once per loaded function). Returns the number of co-resident clusters; raises LaunchFailure
    (fits_none=True) when it is 0."""
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


def max_resident_programs(compiled, sms: int) -> int:
    """How many programs of a compiled kernel (normfuse's CompiledKernel or Triton's) run at once:
    `sms` for one CTA per program (the kernels here hold one CTA per SM), else the driver's count
    of clusters of `num_ctas` CTAs that fit together (`ensure_cluster_launch`: asked once per
    loaded kernel, which also allows the non-portable sizes 9-15; LaunchFailure when the device
    fits none)."""
    kernel = triton_kernel(compiled)
    if int(kernel.metadata.num_ctas or 1) == 1:
        return sms
    return ensure_cluster_launch(kernel)


# An sm_90 SM: 64 resident warps, 65536 registers (allocated per warp in units of 256), at most
# 32 resident CTAs, 228 KB of shared memory (CUDA's occupancy rules for compute capability 9.0)
SM90_WARPS, SM90_REGS, SM90_CTAS, SM90_SHARED = 64, 65536, 32, 228 * 1024


def programs_per_sm(compiled) -> int:
    """How many CTAs of a compiled one-CTA kernel (normfuse's CompiledKernel or Triton's) fit on
    one sm_90 SM at once, by its warps, registers (as loaded: `n_regs`) and shared memory; for
    the grids of persistent kernels that must all be resident (a second wave would double the
    time). At least 1."""
    kernel = triton_kernel(compiled)
    kernel._init_handles()
    return max(1, sm90_resident_ctas(int(kernel.metadata.num_warps),
                                     int(getattr(kernel, "n_regs", 0) or 0),
                                     int(kernel.metadata.shared or 0)))


def sm90_resident_ctas(warps: int, regs: int, shared: int) -> int:
    """CTAs of `warps` warps, `regs` registers per thread (0: unknown) and `shared` bytes of
    shared memory that one sm_90 SM holds at once (0 when one does not fit)."""
    per_warp = -(-regs * 32 // 256) * 256
    fit = min(SM90_CTAS, SM90_WARPS // warps)
    if per_warp:
        fit = min(fit, SM90_REGS // (per_warp * warps))
    if shared:  # 228 KB a SM, 1 KB of it reserved per resident CTA
        fit = min(fit, SM90_SHARED // (shared + 1024))
    return fit


def _torch_allocator(size: int, align: int, stream):
    import torch
    return torch.empty(size, dtype=torch.int8, device="cuda")


def ensure_allocator() -> None:
    """Set Triton's allocator (global scratch from torch) in the calling context when it has none.

    `triton.set_allocator` stores the allocator in a ContextVar: it holds in the thread (context)
    that set it, not process-wide. A once-per-process flag is wrong: autograd runs a CUDA backward
    on its own worker thread, and when the first call came from there, the main thread kept
    Triton's null allocator and every later launch there that needs scratch raised "Kernel
    requires a runtime memory allocation, but no allocator was set" (H200, 2026-11-30;
    docs/NOTES.md). A user's own allocator in this context is kept."""
    import triton
    if context_allocator_missing():
        triton.set_allocator(_torch_allocator)


def context_allocator_missing() -> bool:
    """Whether the calling context has no Triton allocator (Triton's null allocator)."""
    try:
        from triton.runtime import _allocation
        return isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    except (ImportError, AttributeError):  # another Triton layout: set it (cheap, idempotent)
        return True
