"""The backend's instances of the warp-specialized template (`ws_gemm.py`): build one for a plan,
compile it ahead of time (no GPU needed), and the pieces of its launch.

`build(plan)` generates the plan's hooks (`codegen.py`), makes an `Instance` (the tile config,
the schedule, the four hooks, typed stand-ins for what the hooks read) and compiles it
(`compile_instance`, Triton's Gluon front end, cuda:90). `kernel_arguments` lays out the template
kernel's parameters by name (runtime values and constexprs), the one place that knows its
signature; `TmaArg` is a host TMA descriptor as Triton's launcher takes it; `SharedStats` is the
global workspace of shared statistics. `launch` runs an instance on 2-D tensors (benchmarks with
hand-written hooks); a plan's launch, from the arguments of the kernel it was planned from, is
`launch.LoweredLaunch`.
"""
from __future__ import annotations

import contextlib
import functools
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ..device import cuda_state
from ..ir.ws_plan import PersistentGrid, WSConfig, WSPlan

__all__ = ["WSConfig", "Hooks", "Instance", "TmaArg", "kernel_arguments", "compile_instance",
           "launch", "grid_for", "SharedStats", "LoweredKernel", "build", "RUNTIME_PARAMS"]


@dataclass(frozen=True)
class Hooks:
    """The template's hook functions (@gluon.jit); None: the plan has nothing of that kind
    (`rows` and `fin`: a post-norm whose row spans several N tiles)."""
    pre: Any = None
    stats: Any = None
    afn: Any = None
    epi: Any = None
    rows: Any = None
    fin: Any = None
    side: Any = None   # a norm backward's 1-D stores per tile
    aux: Any = None    # a norm backward's second output tile
    epre: Any = None   # the epilogue's 1-D loads, issued before the tile's k-loop

    def constexprs(self) -> dict:
        from . import ws_gemm as W
        d = W.DEFAULT_HOOKS
        return {"PRE": self.pre or d["pre"], "STATS": self.stats or d["stats"],
                "AFN": self.afn or d["afn"], "EPI": self.epi or d["epi"],
                "ROWS": self.rows or d["rows"], "FIN": self.fin or d["fin"],
                "HAS_PRE": self.pre is not None, "HAS_STATS": self.stats is not None,
                "HAS_AFN": self.afn is not None, "SIDE": self.side or d["side"],
                "AUX": self.aux or d["aux"], "HAS_SIDE": self.side is not None,
                "HAS_AUX": self.aux is not None, "EPRE": self.epre or d["epre"],
                "HAS_EPRE": self.epre is not None}


@dataclass(frozen=True)
class Instance:
    config: WSConfig
    hooks: Hooks
    dtype: str = "bf16"           # A and B element type ('bf16' | 'fp16')
    out_dtype: str = "bf16"
    b_kn: bool = False            # B is [K, N] (else [N, K], a Linear weight)
    eargs_example: tuple = field(default=(), compare=False)  # typed stand-ins for the hooks' inputs
    res_dtype: str | None = None  # a residual tile read by TMA in the epilogue (a post-norm's)
    # a norm backward: every hook after the k-loop reads the residual tile (the input x), FIN the
    # tile rounded to the output type; `aux`: it has a second output tile (the output's type)
    bwd: bool = False
    aux: bool = False
    # a split output: the first column of each member after the first (multiples of BN; at most
    # 3, i.e. 4 members), each member its own [M, N_i] matrix (`ws_gemm.Output`); () = one output
    out_split: tuple = ()

    @property
    def blocks(self) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
        """The TMA boxes of A, B and the output."""
        c = self.config
        b = (c.block_k, c.block_n) if self.b_kn else (c.block_n, c.block_k)
        return (c.block_m, c.block_k), b, (c.out_rows, c.block_n)

    @property
    def res_block(self) -> tuple[int, int] | None:
        """The TMA box of the residual tile (None: no residual)."""
        c = self.config
        return (c.block_m, c.block_n) if self.res_dtype is not None else None

    @property
    def aux_block(self) -> tuple[int, int] | None:
        """The TMA box of the second output tile (None: none)."""
        c = self.config
        return (c.block_m, c.block_n) if self.aux else None

    def constexprs(self) -> dict:
        """The template's constexprs for this instance (a fresh dict; `kernel_arguments` caches)."""
        c = self.config
        return dict(self.hooks.constexprs(), STAGES=c.stages, GROUP_M=c.group_m, NCONS=c.consumers,
                    B_KN=self.b_kn, LOADER_WARPS=c.loader_warps, LOADER_REGS=c.loader_regs,
                    CONS_REGS=c.consumer_regs, SHARE=c.stats_share, NPOST=c.row_exchange,
                    XN=c.row_chunk, RES=self.res_dtype is not None, BWD=self.bwd,
                    STATS_LATE=c.stats_late, HALVES=c.halves,
                    RELEASE_EARLY=c.release_early, LAG=c.row_lag, STATS_ROWS=c.stats_rows,
                    STATS_LANES=c.stats_lanes, STAGING_LATE=c.staging_late,
                    NOUT=len(self.out_split) + 1,
                    **{f"S{i + 1}": s for i, s in enumerate(self.out_split + (0, 0, 0))
                       if i < 3},
                    num_warps=c.consumer_warps)


# the template kernel's runtime parameters, in order (`ws_gemm.ws_gemm_kernel`)
RUNTIME_PARAMS = ("a_desc", "b_desc", "c_desc", "r_desc", "aux_desc", "M", "N", "K", "eargs",
                  "sbuf", "epoch", "c1_desc", "c2_desc", "c3_desc")
# the split output's member descriptors (`Instance.out_split`; None where absent: constexprs)
MEMBER_PARAMS = RUNTIME_PARAMS[-3:]


class TmaArg:
    """A host-side TMA descriptor argument: the [rows, cols] matrix at `base`'s data pointer with
    row stride `strides[0]` (elements; the column stride is 1), moved in boxes of `block`. The
    swizzle and element type are the compiled kernel's (its metadata), so this is all Triton's
    launcher reads (`base`, `shape`, `strides`, `padding`). A plain object (a dataclass or
    Gluon's validating TensorDescriptor costs microseconds more); the direct launch
    (`normfuse.direct_launch`) passes cached tensor maps instead."""
    __slots__ = ("base", "shape", "strides", "block")
    padding = "zero"

    def __init__(self, base, shape: tuple, strides: tuple, block: tuple):
        self.base, self.shape, self.strides, self.block = base, shape, strides, block

    def __eq__(self, other) -> bool:
        return (isinstance(other, TmaArg) and self.base is other.base and self.shape == other.shape
                and self.strides == other.strides and self.block == other.block)

    __hash__ = None

    def __repr__(self) -> str:
        return (f"TmaArg(base=<{getattr(self.base, 'dtype', '?')} at {self.base.data_ptr():#x}>, "
                f"shape={self.shape}, strides={self.strides}, block={self.block})")


def kernel_arguments(inst: Instance, runtime: dict) -> list:
    """Every parameter of the template kernel in order, as Triton's launcher of the compiled
    kernel takes them: `runtime` values by name (RUNTIME_PARAMS), then the constexprs."""
    names, tail = _layout_of(inst)
    return [runtime[n] for n in names] + tail


_TAILS: dict = {}


def _layout_of(inst: Instance) -> tuple[tuple, list]:
    """(the runtime parameters' names, the constexprs' values) in the kernel's order, once per
    instance (by identity: hashing the frozen dataclass costs more than building the list)."""
    hit = _TAILS.get(id(inst))
    if hit is None or hit[0] is not inst:
        from . import ws_gemm as W
        names = tuple(W.ws_gemm_kernel.arg_names)
        k = len(RUNTIME_PARAMS)
        if names[:k] != RUNTIME_PARAMS:
            raise AssertionError(f"the template's runtime parameters are {names[:k]}")
        consts = inst.constexprs()
        hit = _TAILS[id(inst)] = (inst, (RUNTIME_PARAMS, [consts[n] for n in names[k:]]))
    return hit[1]


class _Fake:
    """A tensor stand-in for specialization: dtype (a `_DType`), shape and strides, address 0
    (16-aligned)."""

    def __init__(self, shape, dtype):
        self.shape = list(shape)
        self.dtype = dtype

    def data_ptr(self) -> int:
        return 0

    def stride(self, *dim):
        st = [1] * len(self.shape)
        for i in range(len(self.shape) - 2, -1, -1):
            st[i] = st[i + 1] * self.shape[i + 1]
        return st if not dim else st[dim[0]]


class _DType:
    """A torch dtype's stand-in for specialization: Triton reads a tensor argument's element type
    from str(dtype) ('torch.bfloat16'), so the compile's stand-ins need no torch.

    One instance per name, kept for the process, hashed by its name. Triton's native specializer
    caches a tensor's pointer type by hash(dtype) alone (specialize.cc's `dtype_ptr2str`), as
    torch's dtypes are singletons. Stand-ins made afresh per compile had identity hashes, and a
    freed one's address came back for the next stand-in of another dtype: that one was then
    specialized with the freed one's type (a bf16 vector compiled as *i64 or *fp32), so the
    lowered kernel read its arguments with the wrong element type. That was the CPU suite's
    flake of sessions 33 and 34 (an interpreter read past a bf16 argument), and on the GPU it
    would be a wrong or faulting kernel. `test_dtype_stand_ins_specialize_by_name` holds it."""

    _interned: dict = {}

    def __new__(cls, name: str):
        inst = cls._interned.get(name)
        if inst is None:
            inst = super().__new__(cls)
            inst.name = name
            cls._interned[name] = inst
        return inst

    def __hash__(self) -> int:
        return hash(("normfuse.lowering._DType", self.name))

    def __str__(self) -> str:
        return f"torch.{self.name}"

    __repr__ = __str__


def _torch_dtype(name: str) -> _DType:
    return _DType({"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[name])


@contextlib.contextmanager
def _binder_without_torch():
    """Triton's argument binder (its native specializer) imports torch on its first call, to tell
    torch tensors apart: 1.2 s on the 2-core CI machine, as long as compiling a lowered kernel
    (normfuse-opt --hopper-ws on a kernel already in Triton's cache: 2.2 s with the import, 0.9 s
    without). The arguments of an ahead-of-time compile are stand-ins (`_Fake`, `_DType`), which
    Triton reads by duck typing, as it does where torch is not installed. So in a guard child (a
    process that ends with its work: normfuse-opt's child) that has not imported torch, the
    binder runs with torch hidden (the same specialization: the same kernel and cache key).
    Triton then keeps to duck typing in that process (it does not retry the import), which is
    why only such a throwaway process does it: anywhere else torch is imported as before
    (normfuse.compile's callers have it imported anyway)."""
    import sys
    from ..ir import guard
    hide = guard.supervised() and "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # `import torch` raises ImportError
    try:
        yield
    finally:
        if hide and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


@functools.lru_cache(maxsize=None)
def _layout(block: tuple[int, int], dtype: str):
    """The NVMMA shared layout of a TMA box (what the compiled kernel's descriptors use)."""
    from triton.experimental.gluon import language as gl
    el = {"bf16": gl.bfloat16, "fp16": gl.float16, "fp32": gl.float32}[dtype]
    return gl.NVMMASharedLayout.get_default_for(list(block), el)


# ---------------------------------------------------------------------------------------------
# Ahead-of-time compilation
# ---------------------------------------------------------------------------------------------

# Sizes of the stand-in problem an instance is compiled for: none a multiple of 16 (Triton
# specializes integers by divisibility, so the kernel is compiled for any size), M, N and K all
# different (a swapped size or stride cannot go unnoticed), rows 16-byte aligned (TMA).
EXAMPLE_M, EXAMPLE_N, EXAMPLE_K = 16 * 1024 + 1, 4 * 1024 + 8, 2 * 1024 + 24


def compile_instance(inst: Instance, target="cuda:90"):
    """Compile `inst` for `target` (works without a GPU); returns Triton's CompiledKernel with
    'ttgir' (ttg.warp_specialize), 'llir', 'ptx', 'cubin' in `.asm`."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import create_function_from_signature
    from . import ws_gemm as W

    if isinstance(target, str):
        backend_name, _, arch = target.partition(":")
        target = GPUTarget(backend_name, int(arch), 32)
    if target.arch != 90:
        raise ValueError(f"the warp-specialized lowering emits sm_90 code (wgmma, setmaxnreg); "
                         f"target sm_{target.arch} is not supported")
    M, N, K = EXAMPLE_M, EXAMPLE_N, EXAMPLE_K
    el, eo = _torch_dtype(inst.dtype), _torch_dtype(inst.out_dtype)
    ab, bb, cb = inst.blocks
    descs = []
    for t, block, dtype in ((_Fake([M, K], el), ab, inst.dtype),
                            (_Fake([K, N] if inst.b_kn else [N, K], el), bb, inst.dtype),
                            (_Fake([M, N], eo), cb, inst.out_dtype)):
        descs.append(TensorDescriptor(t, list(t.shape), list(t.stride()), list(block),
                                      _layout(block, dtype)))
    r_desc = None  # no residual: a constexpr None, not an argument
    if inst.res_dtype is not None:
        r_desc = TensorDescriptor(_Fake([M, N], _torch_dtype(inst.res_dtype)), [M, N],
                                  _Fake([M, N], eo).stride(), list(inst.res_block),
                                  _layout(inst.res_block, inst.res_dtype))
    aux_desc = None  # no second output tile: a constexpr None
    if inst.aux:
        aux_desc = TensorDescriptor(_Fake([M, N], eo), [M, N], _Fake([M, N], eo).stride(),
                                    list(inst.aux_block), _layout(inst.aux_block, inst.out_dtype))
    # the shared statistics' words and an epoch that Triton does not specialize (not 1, odd)
    # a split output's members (C is member 0): stand-ins of a width that is no multiple of 16
    # either (the members' true widths are the starts' differences, known at launch)
    members = [TensorDescriptor(_Fake([M, 264], eo), [M, 264], [264, 1], list(cb),
                                _layout(cb, inst.out_dtype)) for _ in inst.out_split]
    members += [None] * (3 - len(members))
    runtime = dict(zip(RUNTIME_PARAMS, (*descs, r_desc, aux_desc, M, N, K, tuple(inst.eargs_example),
                                        _Fake([1], _DType("int64")), 17, *members)))
    consts = inst.constexprs()
    options = {"num_warps": consts.pop("num_warps")}
    backend = make_backend(target)
    fn = W.ws_gemm_kernel
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    with _binder_without_torch():
        bound, specialization, opts = binder(**runtime, **consts, **options)
    options, signature, constexprs, attrs = fn._pack_args(backend, options, bound, specialization, opts)
    src = GluonASTSource(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=options.__dict__)


# ---------------------------------------------------------------------------------------------
# Launch
# ---------------------------------------------------------------------------------------------

def grid_for(config: WSConfig, M: int, N: int, sms: int) -> int:
    """The persistent grid: one program (CTA) per SM, at most one per output tile; with a
    post-norm's row exchange, whole rows (T x G programs, `ws_plan.PersistentGrid`; 0: the row
    has more N tiles than there are SMs)."""
    return PersistentGrid(config.block_m, config.block_n,
                          bool(config.row_exchange)).programs(M, N, sms)


def launch(ck, inst: Instance, a, b, c, eargs, *, grid: int | None = None, sms: int | None = None):
    """Run a compiled instance: c[M, N] = template(a[M, K], b) with the hooks reading `eargs`
    (2-D tensors, rows 16-byte aligned)."""
    M, K = a.shape
    N = c.shape[1]
    if grid is None:
        if sms is None:
            from ..device import sm_count  # cached per device
            sms = sm_count(a.device)
        grid = grid_for(inst.config, M, N, sms)
    ab, bb, cb = inst.blocks
    descs = [TmaArg(t, tuple(t.shape), tuple(t.stride()), blk) for t, blk in ((a, ab), (b, bb), (c, cb))]
    cfg = inst.config
    if cfg.row_exchange:
        sbuf, epoch = SharedStats.take(a.device, M, cfg.block_m,
                                       per_row=cfg.row_exchange * -(-N // cfg.block_n))
    else:
        sbuf, epoch = SharedStats.take(a.device, M, cfg.block_m) if cfg.stats_share else (a, 0)
    if inst.res_dtype is not None:
        raise ValueError("runtime.launch runs instances without a residual tile")
    if inst.out_split:
        raise ValueError("runtime.launch runs instances with one output")
    runtime = dict(zip(RUNTIME_PARAMS, (*descs, None, None, M, N, K, tuple(eargs), sbuf, epoch,
                                        None, None, None)))
    ck[(grid, 1, 1)](*kernel_arguments(inst, runtime))
    return c


_DEVICE_TYPE = None


def _torch_device():
    """torch.device (torch imported on first use, not with this module)."""
    global _DEVICE_TYPE
    if _DEVICE_TYPE is None:
        import torch
        _DEVICE_TYPE = torch.device
    return _DEVICE_TYPE


class SharedStats:
    """The global memory through which shared statistics pass (`WSConfig.stats_share`; and a
    post-norm's partial row sums, `WSConfig.row_exchange`), one per (device, stream): `sbuf`
    int64 [W, Mp], W words per row (3: each statistic and the shift; a post-norm: each row sum
    of each N tile), the f32 value in the low half and the epoch of the launch that wrote it in
    the high half. Every kind of launch takes its epoch from the same counter. Nothing
    is cleared between launches: every launch gets a larger epoch than the launches before it on
    its stream (which have finished: a stream runs its kernels in order) and takes only words
    stamped with its own epoch; an epoch taken but never launched is harmless. The buffer is
    zeroed and the epoch restarts before it could wrap.

    Under CUDA-graph capture a launch gets a fresh zeroed buffer and epoch 1 instead (the memset
    is captured with the kernel), so that a replay never takes another launch's words."""

    EPOCH_LIMIT = 2**31 - 2
    MAX_STREAMS = 8  # buffers kept; the least recently used is dropped (its stream's memory pool
    #                  gets it back in stream order, after the kernels already queued there)
    _by_stream: "OrderedDict" = None

    def __init__(self, device, words: int):
        import torch
        self.sbuf = torch.zeros(words, dtype=torch.int64, device=device)
        self.epoch = 0

    @classmethod
    def take(cls, device, M: int, block_m: int, stream: int | None = None,
             capturing: bool | None = None, per_row: int = 3):
        """(sbuf, epoch) for one launch over M rows (`per_row` words each) on `device` (a
        torch.device), on `stream` (a raw stream handle: the one the kernel is launched on;
        default the device's current stream). `capturing`: whether that stream is capturing a
        graph, when the caller knows. (On every launch's host path: ~1 us.)"""
        words = -(-M // block_m) * block_m * per_row
        if capturing is None:
            capturing = cuda_state.capturing()
        if capturing:
            return cls(device, words).sbuf, 1
        by = cls._by_stream
        if by is None:
            by = cls._by_stream = OrderedDict()
        dev = _torch_device()
        index = (device if type(device) is dev else dev(device)).index
        if stream is None:
            stream = cuda_state.stream(index if index is not None else cuda_state.device())
        key = (index, stream)
        ws = by.get(key)
        if ws is None or ws.sbuf.numel() < words:
            ws = cls(device, max(words, 0 if ws is None else ws.sbuf.numel()))
            by[key] = ws
            while len(by) > cls.MAX_STREAMS:
                by.popitem(last=False)
        elif len(by) > 1:
            by.move_to_end(key)
        if ws.epoch >= cls.EPOCH_LIMIT:
            ws.sbuf.zero_()
            ws.epoch = 0
        ws.epoch += 1
        return ws.sbuf, ws.epoch


# ---------------------------------------------------------------------------------------------
# A plan's instance
# ---------------------------------------------------------------------------------------------

_TORCH_OF = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "i32": "int32", "i64": "int64",
             "f64": "float64"}


def _example(name: str, type_text: str):
    """A typed stand-in of a kernel parameter for ahead-of-time compilation."""
    from ..ir.query import pointee
    el = pointee(type_text)
    if el is not None:
        if el not in _TORCH_OF:
            raise ValueError(f"parameter {name} points to {el}")
        return _Fake([1], _DType(_TORCH_OF[el]))
    if type_text in ("i32", "i64"):
        return 17 if type_text == "i32" else 2**33 + 1
    if type_text in ("f32", "f16", "bf16", "f64"):
        return 1.5
    if type_text == "i1":
        return True
    raise ValueError(f"parameter {name} has type {type_text}")


@dataclass
class LoweredKernel:
    """A plan compiled by the backend: the hooks' source, the eargs layout (("derived", j) for
    column sum j, ("param", i) for kernel parameter i), the instance and Triton's CompiledKernel of
    it (cuda:90)."""
    plan: WSPlan
    source: str
    eargs: tuple
    instance: Instance
    compiled: Any


def build(plan: WSPlan, target="cuda:90") -> LoweredKernel:
    """Generate the hooks of `plan`, instantiate the template with them and compile it."""
    from . import codegen
    source, eargs = codegen.generate(plan)
    mod = codegen.write_module(source)
    hooks = Hooks(pre=getattr(mod, "pre", None), stats=getattr(mod, "stats", None),
                  afn=getattr(mod, "afn", None), epi=getattr(mod, "epi", None),
                  rows=getattr(mod, "rows", None), fin=getattr(mod, "fin", None),
                  side=getattr(mod, "side", None), aux=getattr(mod, "aux", None),
                  epre=getattr(mod, "epre", None))
    example = tuple(_Fake([1], _DType("float32")) if kind == "derived" else _example(*plan.params[x])
                    for kind, x in eargs)
    inst = Instance(plan.config, hooks, dtype=plan.dtype, out_dtype=plan.out_dtype, b_kn=plan.b_kn,
                    eargs_example=example, res_dtype=plan.res_dtype if plan.res is not None else None,
                    bwd=plan.backward, aux=plan.aux is not None)
    return LoweredKernel(plan, source, eargs, inst, compile_instance(inst, target))
