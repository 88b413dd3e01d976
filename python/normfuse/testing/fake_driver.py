"""Triton's CUDA driver with only the device calls replaced (CPU; no GPU, no libcuda).

`FakeDriver` stands in for `triton.runtime.driver.active`: it loads no module (a stand-in
function handle per kernel), answers the device properties and occupancy queries, encodes no
tensor map (`fill_tma_descriptor` returns a `FakeTensorMap` recording its inputs, and counts
them), and its `launcher_cls` is Triton's own `CudaLauncher`, built by Triton's own code (the
launcher source is generated as on a GPU) except that the generated C module is not compiled: its
`launch` function is `c_launch`, by default a recorder of the argument tuple it is called with.
Everything Python does per launch (Triton's `CompiledKernel.__getitem__` runner, the launcher's
scratch allocation, its tensor-descriptor wrapper, normfuse's own launch paths) therefore runs
as on the GPU; only the C launch function and the tensor-map encoding do not.

    with FakeDriver() as drv:        # sets triton's active driver, restores it on exit
        ...launch kernels...
        drv.launches[-1]             # the C launch's last argument tuple
        drv.utils.encoded            # how many tensor maps were encoded

`fused_on_cpu()` goes further: the ops' fused path runs on CPU tensors (device checks and facts
answered as on an sm_90 GPU) under a FakeDriver. Used by the launch tests and
`bench/host_overhead.py --stub launcher`.
"""
from __future__ import annotations

import contextlib
import itertools
from types import SimpleNamespace

__all__ = ["FakeDriver", "FakeTensorMap", "fused_on_cpu", "same_arguments"]


class FakeTensorMap:
    """What `fill_tma_descriptor` would encode (a CUtensorMap): its inputs, compared by value
    (address, swizzle, element size, element type, box, shape, strides, padding)."""
    __slots__ = ("inputs",)

    def __init__(self, inputs: tuple):
        self.inputs = inputs

    def __eq__(self, other) -> bool:
        return type(other) is FakeTensorMap and other.inputs == self.inputs

    __hash__ = None

    def __repr__(self) -> str:
        return f"FakeTensorMap{self.inputs}"


def _record(*args) -> None:
    from triton.runtime import driver
    driver.active.launches.append(args)


class _Utils:
    def __init__(self, occupancy: int):
        self.encoded = 0
        self.occupancy = occupancy
        self._handles = itertools.count(0x1000)

    def fill_tma_descriptor(self, address, swizzle, elem_size, elem_type, block, shape, strides,
                            padding):
        self.encoded += 1
        return FakeTensorMap((int(address), swizzle, elem_size, elem_type, tuple(block),
                              tuple(shape), tuple(strides), padding))

    def load_binary(self, name, kernel, shared, device):
        # module, function, registers, spills, max threads
        return "fake-module", next(self._handles), 0, 0, 1024

    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536,
                "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000,
                "mem_bus_width": 6144}

    def cuOccupancyMaxActiveClusters(self, function, shared, ctas):
        return self.occupancy


class FakeDriver:
    """A stand-in for Triton's active CUDA driver (see the module docstring). `c_launch`: the
    generated C module's `launch` (default: record each argument tuple in `launches`);
    `stream`: what the current stream is (an integer, as torch's raw stream)."""

    def __init__(self, c_launch=None, *, stream: int = 0x5EED, occupancy: int = 7):
        self.utils = _Utils(occupancy)
        self.launches: list[tuple] = []
        self.stream = stream
        self.device = 0
        # the C function of the launchers this driver builds: `c_launch` itself, or (default)
        # the recorder of whichever FakeDriver is active at the launch (a kernel keeps the
        # launcher it was first loaded with, across drivers)
        self._c = c_launch or _record
        self.launcher_cls = self._launcher
        self._saved = None

    # -- what Triton asks of its driver ------------------------------------------------------
    def get_current_device(self) -> int:
        return self.device

    def get_current_stream(self, device) -> int:
        return self.stream

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", 90, 32)

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def _launcher(self, src, metadata):
        """Triton's CudaLauncher for `src`, its C module replaced by `c_launch` (not compiled)."""
        import triton.backends.nvidia.driver as nd
        saved = nd.compile_module_from_src, nd.library_dirs
        nd.compile_module_from_src = lambda **kw: SimpleNamespace(launch=self._c)
        nd.library_dirs = lambda: []
        try:
            return nd.CudaLauncher(src, metadata)
        finally:
            nd.compile_module_from_src, nd.library_dirs = saved

    # -- activation ----------------------------------------------------------------------------
    def __enter__(self) -> "FakeDriver":
        from triton.runtime import driver
        self._saved = driver._active
        driver.set_active(self)
        return self

    def __exit__(self, *exc) -> None:
        from triton.runtime import driver
        driver._active = self._saved


_MISSING = object()


@contextlib.contextmanager
def fused_on_cpu(c_launch=None, *, sms: int = 132):
    """Run the ops' fused path on CPU tensors, as on an sm_90 GPU with `sms` SMs, with only the
    device calls stubbed: a `FakeDriver` (yielded), the device checks and facts answered (sm_90,
    `sms` SMs, no stream capturing, stream and device 0, TMA can address every tensor), global
    scratch from CPU memory. Kernels compile for sm_90 as they would for the GPU; everything
    restored on exit."""
    import sys
    import torch
    from triton.runtime import _allocation
    from normfuse import device
    from normfuse.lowering import launch as lowered
    from normfuse.ops import inference, postnorm_linear as post, prenorm_linear as pre
    # device.sm_count wherever a normfuse module bound it by name (the ops import it)
    patches = [(m, "sm_count", lambda d: sms) for name, m in list(sys.modules.items())
               if name.startswith("normfuse") and getattr(m, "sm_count", None) is device.sm_count]
    patches += [
        (inference, "fused_unavailable", lambda d: None),
        (pre, "check_hopper", lambda op, d: None), (post, "check_hopper", lambda op, d: None),
        (pre, "_ensure_allocator", lambda: None),
        (lowered.LoweredLaunch, "why_not", lambda self, args, outs=None: None),
        (device.cuda_state, "capturing", lambda: False), (device.cuda_state, "stream", abs),
        (device.cuda_state, "device", int),
    ]
    saved = []
    for obj, name, value in patches:
        old = obj.__dict__.get(name, _MISSING) if isinstance(obj, type) else \
            getattr(obj, name, _MISSING)
        saved.append((obj, name, old))
        setattr(obj, name, value)
    token = _allocation._allocator.set(
        lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    try:
        with FakeDriver(c_launch) as drv:
            yield drv
    finally:
        _allocation._allocator.reset(token)
        for obj, name, old in reversed(saved):
            if old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)


def same_arguments(a, b) -> bool:
    """Launch argument tuples equal element by element: tensors by identity, tuples
    recursively, anything else by type and value (what the tests compare two recorded C launches
    by)."""
    import torch
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_arguments(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
