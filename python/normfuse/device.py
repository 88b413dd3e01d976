"""Facts about the GPU a launch runs on, asked once and cached: the bottom layer that every
launch path (the lowered kernels, the ops, the training step) reads instead of asking the driver.

- `sm_count(device)`: streaming multiprocessors (a persistent kernel launches one program per SM).
- `capability(index)`: the compute capability, e.g. (9, 0); `device_name(index)` for messages.
- `max_resident_programs(compiled, sms)`: how many programs of a compiled kernel run at once: `sms`
  for one-CTA programs, else the driver's count of co-resident clusters (clusters sit inside one
  GPC, so fewer than sms / num_ctas fit on the H200).
- `ensure_allocator()`: Triton's allocator for global scratch (device-side tensor descriptors,
  cluster-reduce's `exchange=global`) in the calling context.

Nothing here imports normfuse; torch and triton are imported when a function first needs them.
"""
from __future__ import annotations

import functools

__all__ = ["sm_count", "capability", "device_name", "device_index", "max_resident_programs",
           "ensure_allocator", "context_allocator_missing"]


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


_RESIDENT: dict = {}  # (CUfunction, shared bytes, CTAs per cluster) -> clusters


def max_resident_programs(compiled, sms: int) -> int:
    """How many programs of a compiled kernel (normfuse's CompiledKernel or Triton's) run at once:
    `sms` for one CTA per program (the kernels here hold one CTA per SM), else the driver's count
    of clusters of `num_ctas` CTAs that fit together (`cuOccupancyMaxActiveClusters`), asked once
    per loaded kernel. Asking also sets the non-portable cluster-size attribute on the function,
    which a 9-15 CTA cluster needs at launch (DESIGN.md, "Trap: clusters of 9-15 CTAs")."""
    kernel = getattr(compiled, "kernel", compiled)
    ctas = int(kernel.metadata.num_ctas or 1)
    if ctas == 1:
        return sms
    from triton.runtime import driver
    kernel._init_handles()
    key = (kernel.function, int(kernel.metadata.shared), ctas)
    if key not in _RESIDENT:
        _RESIDENT[key] = max(1, int(driver.active.utils.cuOccupancyMaxActiveClusters(*key)))
    return _RESIDENT[key]


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
