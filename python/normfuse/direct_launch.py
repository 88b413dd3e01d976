"""Triton's launch of a compiled kernel, resolved once down to the generated C launch function.

What Triton 3.6 does per launch of a `CompiledKernel` (`kernel[grid](*args)`, read from
`triton/compiler/compiler.py` and `triton/backends/nvidia/driver.py`):

1. the runner asks the driver for the current device and its current stream, builds the launch
   metadata (a `LazyDict` naming the kernel, built on every launch: Triton's launch hooks are
   `HookChain` objects, never None) and calls the `CudaLauncher`;
2. the launcher allocates the global and profile scratch when the kernel has any (through the
   allocators of the calling context, sized grid x num_ctas x per-program bytes);
3. its tensor-descriptor wrapper (`wrap_handle_tensordesc`) walks every argument, constexprs
   included, and expands each host TensorDescriptor: `make_tensordesc_arg` encodes a CUtensorMap
   (`fill_tma_descriptor`: a new PyCUtensorMap object and cuTensorMapEncodeTiled) and passes it
   with the shape and strides;
4. the generated C function `launch` parses the argument tuple, calls the launch hooks (each an
   empty HookChain called through Python unless a profiler registered one), resolves pointers and
   calls cuLaunchKernelEx.

Of that, per kernel and grid, the device's function handle, the packed metadata, the C function,
the descriptor positions and their metadata (swizzle, element type, box), the scratch sizes and
the launch flags are fixed; the tensor maps are a pure function of (address, shape, strides,
padding) for a given descriptor slot. `DirectLaunch` resolves all of that once and per launch
only asks for the current stream, allocates scratch when the kernel has any, looks the tensor
maps up and calls the C function with the argument tuple Triton's wrapper would build, except
that the launch metadata and both hooks are passed as None while no launch hook is registered
(the C function then calls none; an empty HookChain calls nothing either). While a hook is
registered (a profiler), every launch goes through Triton's own runner.

Tensor maps are cached per descriptor slot and address (`TensorMaps`), bounded (the oldest entry
goes first). A cached map holds no reference to the tensor and needs none: a CUtensorMap is a
128-byte value that the C launcher copies into the kernel's parameters at launch, and a CUDA
graph captures the parameters by value, so a map may be reused or dropped at any time, during
capture too. Descriptor slots the compiled kernel did not lower to a CUtensorMap (Triton passes
the base tensor, shape and strides instead) are expanded by Triton's own function on every launch,
never cached (the expansion holds the tensor).

`resolve(kernel, grid)` returns None where Triton's launcher is not the one described here
(another backend or version, or a stand-in): the caller then launches through `kernel[grid]`.
"""
from __future__ import annotations

__all__ = ["DirectLaunch", "TensorMaps", "resolve", "hooks_registered"]

_WRAPPER = "wrap_handle_tensordesc.<locals>.inner"
_LAUNCHER_FIELDS = ("launch", "num_ctas", "global_scratch_size", "global_scratch_align",
                    "profile_scratch_size", "profile_scratch_align", "launch_cooperative_grid",
                    "launch_pdl")
_RUNTIME = None  # triton.knobs.runtime


def hooks_registered() -> bool:
    """Whether a Triton launch hook is registered (`knobs.runtime.launch_enter_hook` /
    `launch_exit_hook`: a HookChain with calls, or anything else that is not None)."""
    rt = _RUNTIME or _runtime_knobs()
    h, e = rt.launch_enter_hook, rt.launch_exit_hook
    if type(h) is _HOOK_CHAIN and type(e) is _HOOK_CHAIN:
        return bool(h.calls or e.calls)
    return any(x is not None and (type(x) is not _HOOK_CHAIN or x.calls) for x in (h, e))


_HOOK_CHAIN = None


def _runtime_knobs():
    global _RUNTIME, _HOOK_CHAIN
    from triton import knobs
    _HOOK_CHAIN = getattr(knobs, "HookChain", None)
    _RUNTIME = knobs.runtime
    return _RUNTIME


class _Desc:
    """A host tensor descriptor as Triton's `make_tensordesc_arg` reads it."""
    __slots__ = ("base", "shape", "strides", "padding")

    def __init__(self, base, shape, strides, padding):
        self.base, self.shape, self.strides, self.padding = base, shape, strides, padding


class TensorMaps:
    """The expanded arguments of one descriptor slot of a kernel (`(CUtensorMap, *shape,
    *strides)`, what Triton's `make_tensordesc_arg` returns) for a fixed shape, strides and
    padding, by the base tensor's address. `get(address)` is a dict lookup (None on a miss);
    `encode(base)` makes and keeps the entry. At most `size` entries, the oldest dropped first."""

    __slots__ = ("get", "_maps", "_meta", "_make", "shape", "strides", "padding", "size",
                 "encoded")

    def __init__(self, make, meta: dict, shape: tuple, strides: tuple, padding: str = "zero",
                 size: int = 256):
        self._maps: dict = {}
        self.get = self._maps.get
        self._make, self._meta = make, meta
        self.shape, self.strides, self.padding = tuple(shape), tuple(strides), padding
        self.size = size
        self.encoded = 0

    def encode(self, base) -> tuple:
        """The expansion for the tensor `base` (encoded now, kept by its address)."""
        address = base.data_ptr()
        out = tuple(self._make(_Desc(base, self.shape, self.strides, self.padding), self._meta))
        self.encoded += 1
        maps = self._maps
        if len(maps) >= self.size:
            del maps[next(iter(maps))]
        maps[address] = out
        return out

    def __call__(self, base) -> tuple:
        hit = self._maps.get(base.data_ptr())
        return hit if hit is not None else self.encode(base)

    def __len__(self) -> int:
        return len(self._maps)


def _c_function(run, kernel):
    """(C launch function, descriptor positions, their metadata) of Triton's CudaLauncher `run`,
    or None when it is not the launcher this module knows."""
    if any(not hasattr(run, f) for f in _LAUNCHER_FIELDS):
        return None
    launch = run.launch
    code = getattr(launch, "__code__", None)
    if (code is not None and getattr(launch, "__qualname__", "") == _WRAPPER
            and getattr(launch, "__module__", "") == "triton.backends.nvidia.driver"):
        cells = dict(zip(code.co_freevars, (c.cell_contents for c in launch.__closure__ or ())))
        if set(cells) != {"launcher", "tensordesc_indices", "tensordesc_meta"}:
            return None
        positions = sorted(cells["tensordesc_indices"])
        metas = list(cells["tensordesc_meta"])
        if len(metas) != len(positions):
            return None
        return cells["launcher"], positions, metas
    signature = getattr(getattr(kernel, "src", None), "signature", None)
    if not isinstance(signature, dict):
        return None
    if any(isinstance(s, str) and s.startswith("tensordesc") for s in signature.values()):
        return None  # has descriptors but no wrapper we know
    return launch, [], []  # no descriptors: Triton calls the C function directly


def resolve(kernel, grid: tuple) -> "DirectLaunch | None":
    """The direct launch of Triton's CompiledKernel `kernel` at `grid` (three ints), on the
    current device (the module is loaded there as `kernel[grid]` would); None when the launcher
    is not Triton 3.6's CUDA launcher."""
    if not (hasattr(kernel, "_init_handles") and hasattr(kernel, "packed_metadata")):
        return None
    try:
        import triton.backends.nvidia.driver as nd
    except ImportError:
        return None
    kernel._init_handles()
    run = kernel.run
    if not isinstance(run, nd.CudaLauncher):
        return None
    parts = _c_function(run, kernel)
    if parts is None:
        return None
    return DirectLaunch(kernel, tuple(grid), run, *parts, make=nd.make_tensordesc_arg)


class DirectLaunch:
    """One compiled kernel at one grid, launched through the C function Triton's launcher ends
    in (see the module docstring; `resolve` makes it). `__call__(*args)` takes what
    `kernel[grid](*args)` takes and passes the same; `launch(*expanded)` takes the arguments
    with every descriptor already expanded (`tensor_maps(i, ...)`), for callers that keep the
    tensor maps per slot."""

    def __init__(self, kernel, grid: tuple, run, c_launch, positions, metas, make):
        from triton.runtime import _allocation, driver
        self.kernel, self.grid, self.c_launch = kernel, grid, c_launch
        self.positions, self.metas, self._make = tuple(positions), tuple(metas), make
        self._slots = dict(zip(self.positions, range(len(self.positions))))
        self._head = (grid[0], grid[1], grid[2])
        self._function = kernel.function
        self._coop, self._pdl = run.launch_cooperative_grid, run.launch_pdl
        self._md = kernel.packed_metadata
        programs = grid[0] * grid[1] * grid[2] * run.num_ctas
        self._scratch = (programs * run.global_scratch_size if run.global_scratch_size > 0 else 0,
                         run.global_scratch_align,
                         programs * run.profile_scratch_size if run.profile_scratch_size > 0
                         else 0, run.profile_scratch_align)
        self._alloc = _allocation._allocator
        self._profile_alloc = _allocation._profile_allocator
        drv = driver.active
        self._device, self._stream = drv.get_current_device, drv.get_current_stream
        try:  # torch.cuda.current_device is _lazy_init() + this, and CUDA is initialized here
            import torch
            if self._device is torch.cuda.current_device and torch.cuda.is_initialized():
                self._device = torch._C._cuda_getDevice
        except (ImportError, AttributeError):
            pass
        self._maps: dict = {}  # (slot, shape, strides, padding) -> TensorMaps
        self._runner = None

    # -- tensor maps ---------------------------------------------------------------------------
    def tensor_maps(self, slot: int, shape, strides, padding: str = "zero") -> "TensorMaps | None":
        """The cache of descriptor `slot`'s expansions for one shape and strides; None when the
        kernel did not lower that descriptor to a CUtensorMap (`expand_slot` then)."""
        if self.metas[slot] is None:
            return None
        key = (slot, tuple(shape), tuple(strides), padding)
        maps = self._maps.get(key)
        if maps is None:
            if len(self._maps) >= 64:
                self._maps.clear()
            maps = self._maps[key] = TensorMaps(self._make, self.metas[slot], shape, strides,
                                                padding)
        return maps

    def expand(self, slot: int, desc) -> tuple:
        """Descriptor `slot`'s expansion of a host descriptor (base, shape, strides, padding):
        from the cache where the slot is a CUtensorMap, else Triton's `make_tensordesc_arg`."""
        maps = self.tensor_maps(slot, desc.shape, desc.strides, desc.padding)
        if maps is None:
            return tuple(self._make(desc, None))
        return maps(desc.base)

    # -- launching -----------------------------------------------------------------------------
    def _scratch_args(self, stream) -> tuple:
        gsize, galign, psize, palign = self._scratch
        return (self._alloc.get()(gsize, galign, stream) if gsize else None,
                self._profile_alloc.get()(psize, palign, stream) if psize else None)

    def stream(self) -> int:
        """The stream a launch now goes to: the current device's current stream (Triton's)."""
        return self._stream(self._device())

    def launch(self, *expanded) -> bool:
        """Launch with the kernel's arguments, descriptors expanded, on the current stream.
        Returns False, launching nothing, while a Triton launch hook is registered (the caller
        then goes through `kernel[grid]`, which calls the hooks)."""
        return self.launch_on(self._stream(self._device()), *expanded)

    def launch_on(self, stream: int, *expanded) -> bool:
        """`launch` on `stream` (the caller's `stream()` of this launch)."""
        if hooks_registered():
            return False
        gs = ps = None
        if self._scratch[0] or self._scratch[2]:
            gs, ps = self._scratch_args(stream)
        gx, gy, gz = self._head
        self.c_launch(gx, gy, gz, stream, self._function, self._coop, self._pdl, gs, ps,
                      self._md, None, None, None, *expanded)
        return True

    def __call__(self, *args) -> None:
        """`kernel[grid](*args)`: the same launch, with the tensor maps from the cache."""
        if not self.positions:
            if not hooks_registered():  # (launch_on, inlined: the arguments are packed once)
                stream = self._stream(self._device())
                gs = ps = None
                if self._scratch[0] or self._scratch[2]:
                    gs, ps = self._scratch_args(stream)
                gx, gy, gz = self._head
                self.c_launch(gx, gy, gz, stream, self._function, self._coop, self._pdl, gs, ps,
                              self._md, None, None, None, *args)
                return
        else:
            out = []
            slots = self._slots
            for i, a in enumerate(args):
                s = slots.get(i)
                if s is None:
                    out.append(a)
                else:
                    out.extend(self.expand(s, a))
            if self.launch(*out):
                return
        if self._runner is None:
            self._runner = self.kernel[self.grid]
        self._runner(*args)
