"""A CPU interpreter for Triton 3.6 TTIR (as Triton prints it, before or after normfuse's passes).

`run_ir(ir_text, args, grid, *, num_ctas=1, kernel=None, trusted=False)` runs every program of
`grid` on the given arrays, like a launch: it returns nothing and writes into the arrays. A
warp-specialized TTGIR module (the kernel hopper-ws lowers to) runs in `warp_specialized`, which
reuses the op closures below and adds shared memory, mbarriers, TMA, wgmma and partitions;
`normfuse.testing.run_ir` (`testing/run.py`) picks one or the other.

How it runs
-----------
The module is parsed and verified by Triton (`normfuse.ir.load`), then every op is turned into a
small Python closure once. A program's values are whole numpy arrays (a tile is one array, a
scalar a 0-d array), so an op costs one numpy call, never a loop over elements. bf16 is exact
(float32 values rounded to bf16 after every op that yields bf16; 16-bit patterns in memory).
`tt.dot` multiplies in float32 (bf16/fp16 products are exact there) and accumulates in float32,
tf32 inputs rounded to tf32; the summation order is numpy's, not the tensor cores'. `tt.reduce`
and `tt.scan` evaluate their combine region on whole slices (a pairwise tree for reduce).

Arguments: pointer parameters take numpy arrays (any numeric dtype, or an ml_dtypes bfloat16
array) or CPU torch tensors, C-contiguous; a `!tt.ptr<bf16>` parameter takes torch.bfloat16,
ml_dtypes bfloat16, or raw uint16/int16 bit patterns. Each array becomes a buffer at its own base
address (the same array passed twice is one buffer); a pointer that leaves its buffer raises
`InterpreterError`. Scalar parameters take Python or numpy numbers (range-checked for integers).
`None` for a pointer is a null pointer.

Programs and clusters
---------------------
Programs run one after another in launch order. With `num_ctas=C` (a kernel that
`cluster-reduce` split: its function carries `normfuse.cluster_dims = C`, which must match), the
launch has grid[0] * C CTAs along x, as Triton's launcher starts them, and the C CTAs of each
cluster run together as coroutines: a CTA runs until a `barrier.cluster.wait` whose phase not
every CTA of the cluster has arrived at, then the next CTA runs. Each CTA has its own shared
memory (a stand-in for Triton's allocation, `TRITON_SMEM` bytes that inline asm must not touch,
plus `normfuse.cluster_smem` bytes past it), and its own global-scratch slice
(`ttg.global_scratch_alloc`; the slice is laid out like Triton's: descriptors, then the allocs).
The inline PTX of `tt.elementwise_inline_asm` is evaluated from the asm string
(`normfuse.testing.ptx`), so a wrong rank, slot or offset reads the wrong bytes (or bytes no CTA
wrote, which raises). Accesses to shared memory and to the global scratch are checked for races
against the cluster barrier's happens-before order (`normfuse.testing.memory`), so a missing
barrier or a wrong double-buffer parity raises `RaceError` even though the interpreter runs one
access at a time. A CTA that leaves while a peer may still read its shared memory raises too, and
a cluster whose CTAs wait on a barrier that a peer never reaches raises (a hang on the GPU).

What is not modelled: races inside Triton's own lowering (the pipeliner's buffer counts, async
copies and wgmma, which are not in the TTIR) and timing; floating-point results of `math` ops
and of divisions are IEEE (the GPU's approximate forms differ in the last bits). Masked-off lanes
of a load without `other` read 0, as Triton 3.6's lowering makes them (`mov 0` before the
predicated `ld`); a block-pointer load without a padding option pads with 0 too.

Supported ops: arith (constant, add/sub/mul/div/rem/neg/min/max/select/cmp/shift/bitwise, all
casts), math (sqrt, rsqrt, exp, exp2, log, log2, log1p, expm1, sin, cos, tan, tanh, erf, abs,
floor, ceil, trunc, fma, copysign, powf), scf.for/if/while/yield/condition, tt.func/return/call,
tt.get_program_id/get_num_programs, make_range, splat, broadcast, expand_dims, reshape, trans,
cat, join, split, addptr, int_to_ptr, ptr_to_int, bitcast, load, store (masks, `other`),
make_tensor_ptr/advance and loads/stores through them (boundary checks, zero/NaN padding),
make_tensor_descriptor/descriptor_load/descriptor_store (out-of-bounds reads zero, TMA alignment
checked), dot, reduce, scan, atomic_rmw, atomic_cas, clampf, precise_sqrt, precise_divf,
fp_to_fp, mulhiui, assert, print, elementwise_inline_asm, ttg.global_scratch_alloc, ub.poison,
gpu.barrier (a no-op: a program is one logical thread). Any other op raises `InterpreterError`
naming it before anything runs.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..ir import load as load_ir
from ..ir.core import Module, Op, Value, _render, parse_type
from ..ir.match import ForLoop, strip_loc
from . import ptx
from .memory import (FLOATS, Buffer, InterpreterError, Space, check_exit, elem_bytes, is_ptr,
                     matmul_f32, one_thread, pointee, round_bf16, round_tf32, runtime_dtype,
                     to_runtime)

TRITON_SMEM = 1024  # stand-in for the shared memory Triton allocates itself (the asm must not touch it)
GLOBAL_BASE = 1 << 32
_ALIGN = 4096
_DESC_BYTES = 128  # a device-side TMA descriptor in global scratch


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _ty(t: str) -> tuple[tuple, str]:
    """A value's (shape, element type): `tensor<64x32xbf16>` -> ((64, 32), 'bf16'); scalars ()."""
    p = parse_type(t)
    if isinstance(p, str):
        return (), p
    return tuple(p.shape), p.element


def _is_block_ptr(elem: str) -> bool:
    return elem.startswith("!tt.ptr<tensor<")


def _block_of(t: str) -> tuple[tuple, str]:
    """`!tt.ptr<tensor<64x32xbf16>>` / `!tt.tensordesc<tensor<...>>` -> ((64, 32), 'bf16')."""
    m = re.search(r"tensor<[^>]*>", t)
    if not m:
        raise InterpreterError(f"cannot read the block type of '{t}'")
    return _ty(m.group(0))


@dataclass(frozen=True)
class BlockPtr:
    base: int
    shape: tuple
    strides: tuple
    offsets: tuple
    block: tuple
    elem: str


@dataclass(frozen=True)
class TensorDesc:
    base: int
    shape: tuple
    strides: tuple
    block: tuple
    elem: str
    nan_padding: bool = False


# ---------------------------------------------------------------------------------------------
# CTAs, clusters, the launch
# ---------------------------------------------------------------------------------------------

class _Launch:
    def __init__(self, grid, num_ctas: int):
        self.grid = grid
        self.num_ctas = num_ctas
        self.nprog = (grid[0] * num_ctas, grid[1], grid[2])
        self.glob = Space("global")
        self.scratch_bytes = 0
        self.scratch_base = 0
        self._next = GLOBAL_BASE

    def place(self, nbytes: int) -> int:
        base = self._next
        self._next += -(-max(nbytes, 1) // _ALIGN) * _ALIGN + _ALIGN  # an unmapped gap after it
        return base


class _Cluster:
    def __init__(self, size: int):
        self.size = size
        self.ctas: list[CTA] = []
        self.shared = Space("shared::cluster")

    def passed(self, phase: int) -> bool:
        return all(c.arrived >= phase for c in self.ctas)


class CTA:
    """One program (CTA) of the launch: what ops and the asm evaluator see of it."""

    def __init__(self, launch: _Launch, cluster: _Cluster, pid: tuple, smem_extra: int):
        self.launch = launch
        self.cluster = cluster
        self.pid = pid
        self.nprog = launch.nprog
        self.cluster_size = cluster.size
        self.rank = pid[0] % cluster.size
        self.cta = pid[0] + launch.nprog[0] * (pid[1] + launch.nprog[1] * pid[2])
        self.arrived = 0
        self.waited = 0
        self.exited = False
        self.smem_size = TRITON_SMEM + smem_extra
        self.scratch_bytes = launch.scratch_bytes
        self.scratch_base = launch.scratch_base + self.cta * launch.scratch_bytes
        self.smem = None
        if smem_extra:
            data = np.zeros(smem_extra, dtype=np.uint8)
            base = ptx.CLUSTER_BASE + (self.rank << ptx.RANK_SHIFT) + ptx.SMEM_BASE + TRITON_SMEM
            self.smem = cluster.shared.add(Buffer(f"the shared memory of CTA {self.cta} (rank "
                                                  f"{self.rank}) past Triton's allocation", base,
                                                  data, tracked=True, owner=self))

    # -- cluster barrier -----------------------------------------------------------------------
    def arrive(self) -> None:
        if self.arrived > self.waited:
            raise InterpreterError(f"CTA {self.cta}: barrier.cluster.arrive twice without a wait "
                                   "between (the hardware barrier has one pending phase per CTA)")
        self.arrived += 1

    def wait(self, where: str):
        phase = self.waited + 1
        if phase > self.arrived:
            raise InterpreterError(f"{where}: CTA {self.cta} waits on the cluster barrier without "
                                   "having arrived (a barrier.cluster.arrive is missing)")
        if not self.cluster.passed(phase):
            yield ("wait", phase)
        self.waited = phase

    # -- memory for the asm evaluator ----------------------------------------------------------
    def _shared_addr(self, space: str, addr: np.ndarray, what: str) -> np.ndarray:
        addr = np.asarray(addr, dtype=np.int64)
        own = addr < (1 << ptx.RANK_SHIFT)
        if space in ("shared", "shared::cta") and not own.all():
            raise InterpreterError(f"{what}: a shared::cluster address used with .shared::cta")
        if space == "global":
            return addr
        return np.where(own, ptx.CLUSTER_BASE + (self.rank << ptx.RANK_SHIFT) + addr, addr)

    def mem_load(self, space: str, addr, elem: str, what: str, mask=None):
        if space == "global":
            return self.launch.glob.load(addr, mask, elem, actor=self, what=what)
        return self.cluster.shared.load(self._shared_addr(space, addr, what), mask, elem, actor=self,
                                        what=what)

    def mem_store(self, space: str, addr, value, elem: str, what: str, mask=None):
        if space == "global":
            return self.launch.glob.store(addr, value, mask, elem, actor=self, what=what)
        self.cluster.shared.store(self._shared_addr(space, addr, what), value, mask, elem,
                                  actor=self, what=what)


# ---------------------------------------------------------------------------------------------
# Compiling ops to closures
# ---------------------------------------------------------------------------------------------

class _Ret(Exception):
    def __init__(self, values):
        self.values = values


@dataclass
class _BlockCode:
    args: list
    steps: list  # (fn, is_generator)
    term: Op | None
    term_vals: list = field(default_factory=list)


def _where(op: Op) -> str:
    loc = op.loc
    return f"'{op.name}'" + (f" at {loc}" if loc != "loc(unknown)" and not loc.startswith("loc(#") else "")


def _symbol(text: str) -> str | None:
    """The first symbol reference: `@name` or `@"quoted.name(3,)"` (Triton quotes the names of
    specialized noinline functions)."""
    m = re.search(r'@(?:"((?:[^"\\]|\\.)*)"|([\w$.\-]+))', text)
    if not m:
        return None
    return m.group(1) if m.group(1) is not None else m.group(2)


def _attr_int(op: Op, key: str, default=None):
    v = op.attr(key)
    if v is None:
        return default
    return int(v.split(":")[0].strip())


def _array_attr(op: Op, key: str):
    m = re.search(rf"\b{re.escape(key)}\s*=\s*array<i\d+(?::\s*([-\d,\s]*))?>", op.text)
    if not m:
        return None
    return [int(x) for x in (m.group(1) or "").split(",") if x.strip()]


def _keyword(op: Op) -> str:
    """The first word after the op name (cmpi predicate, program id axis, rmw kind, ...)."""
    m = re.match(rf"\s*{re.escape(op.name)}\s+([A-Za-z_]\w*)", _render(op.head))
    if not m:
        raise InterpreterError(f"{_where(op)}: cannot read its keyword")
    return m.group(1)


def _parse_scalar(lit: str, elem: str):
    lit = lit.strip()
    if lit in ("true", "false"):
        return lit == "true"
    if lit.lower().startswith("0x") and elem in FLOATS:
        bits = int(lit, 16)
        return {"f32": lambda b: np.array(b, np.uint32).view(np.float32),
                "f64": lambda b: np.array(b, np.uint64).view(np.float64),
                "f16": lambda b: np.array(b, np.uint16).view(np.float16),
                "bf16": lambda b: (np.array(b, np.uint32) << 16).view(np.float32)}[elem](bits)
    if elem in FLOATS:
        return float(lit)
    n = int(lit, 0)
    bits = 64 if elem in ("index", "i64") else int(elem[1:]) if elem[1:].isdigit() else 64
    if bits > 1 and n >= 1 << (bits - 1):  # hex/unsigned spellings of negative values
        n -= 1 << bits
    return n


def _wrap_int(v, elem):
    return np.asarray(v).astype(runtime_dtype(elem))


def _unsigned(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _idiv(a, b, what):
    a = np.asarray(a).astype(np.int64)
    b = np.asarray(b).astype(np.int64)
    if (b == 0).any():
        raise InterpreterError(f"{what}: integer division by zero")
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


_FLOAT_BIN = {"arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
              "arith.divf": np.divide, "arith.remf": np.fmod, "arith.maxnumf": np.fmax,
              "arith.minnumf": np.fmin, "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
              "math.copysign": np.copysign, "math.powf": np.power, "tt.precise_divf": np.divide,
              "math.atan2": np.arctan2}
_FLOAT_UN = {"arith.negf": np.negative, "math.sqrt": np.sqrt, "tt.precise_sqrt": np.sqrt,
             "math.rsqrt": lambda x: 1 / np.sqrt(x), "math.exp": np.exp, "math.exp2": np.exp2,
             "math.log": np.log, "math.log2": np.log2, "math.log1p": np.log1p,
             "math.expm1": np.expm1, "math.sin": np.sin, "math.cos": np.cos, "math.tan": np.tan,
             "math.tanh": np.tanh, "math.absf": np.abs, "math.floor": np.floor,
             "math.ceil": np.ceil, "math.trunc": np.trunc, "math.roundeven": np.rint,
             "math.erf": np.vectorize(math.erf, otypes=[np.float64])}
_INT_BIN = {"arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi",
            "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.andi", "arith.ori",
            "arith.xori", "arith.shli", "arith.shrsi", "arith.shrui", "arith.maxsi", "arith.minsi",
            "arith.maxui", "arith.minui", "tt.mulhiui"}
_CASTS = {"arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp",
          "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.index_cast", "arith.index_castui",
          "arith.bitcast", "tt.bitcast", "tt.fp_to_fp", "tt.int_to_ptr", "tt.ptr_to_int"}
_CMP_I = {"eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal,
          "sgt": np.greater, "sge": np.greater_equal, "ult": np.less, "ule": np.less_equal,
          "ugt": np.greater, "uge": np.greater_equal}
_CMP_F = {"oeq": np.equal, "one": np.not_equal, "olt": np.less, "ole": np.less_equal,
          "ogt": np.greater, "oge": np.greater_equal, "ueq": np.equal, "une": np.not_equal,
          "ult": np.less, "ule": np.less_equal, "ugt": np.greater, "uge": np.greater_equal}


class _Compiler:
    """Turns a module's functions into closures over (cta, env)."""

    def __init__(self, module: Module):
        self.module = module
        self.funcs = {self._fname(f): f for f in module.functions()}
        self._code: dict[str, _BlockCode] = {}
        self.scratch_offsets: dict[int, int] = {}

    @staticmethod
    def _fname(f: Op) -> str:
        return _symbol(_render(f.head)) or "?"

    def function(self, name: str) -> _BlockCode:
        code = self._code.get(name)
        if code is None:
            f = self.funcs.get(name)
            if f is None:
                raise InterpreterError(f"no function @{name} in the module")
            code = self._code[name] = self.block(f.body())
        return code

    def block(self, block) -> _BlockCode:
        steps, term = [], None
        for op in block.ops:
            if op.name in ("scf.yield", "tt.return", "tt.reduce.return", "tt.scan.return",
                           "scf.condition"):
                term = op
                break
            steps.append(self.op(op))
        code = _BlockCode(list(block.args), steps, term)
        if term is not None:
            vals = term.operands
            code.term_vals = vals[1:] if term.name == "scf.condition" else vals
        return code

    def op(self, op: Op):
        name = op.name
        if name in _FLOAT_BIN or name in _FLOAT_UN or name in _INT_BIN:
            return self._elementwise(op), False
        if name in _CASTS:
            return self._cast(op), False
        h = getattr(self, "_op_" + name.replace(".", "_"), None)
        if h is None:
            raise InterpreterError(f"the interpreter does not support {_where(op)} "
                                   f"({strip_loc(op.text)[:160]})")
        return h(op)

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _finish(op: Op):
        """(setter) that stores results with their declared element types (bf16 rounded)."""
        outs = op.results
        specs = [(_ty(r.type), r) for r in outs]

        def put(env, *values):
            for ((shape, elem), r), v in zip(specs, values):
                if is_ptr(elem) and not _is_block_ptr(elem):
                    v = np.asarray(v, dtype=np.int64)
                elif elem in FLOATS or elem.startswith("i") or elem == "index":
                    v = to_runtime(v, elem)
                # (a declared scalar may hold a slice: the combine regions of reduce and scan
                # run on whole slices at once)
                if shape and isinstance(v, np.ndarray) and v.shape != shape:
                    if v.ndim:
                        raise InterpreterError(f"internal: {_where(op)} made shape {v.shape}, "
                                               f"declared {shape}")
                    v = np.broadcast_to(v, shape)
                env[r] = v
        return put

    def _elementwise(self, op: Op):
        name = op.name
        args = op.operands
        put = self._finish(op)
        shape, elem = _ty(op.results[0].type)
        where = _where(op)
        if name in _FLOAT_BIN or name in _FLOAT_UN:
            f = _FLOAT_BIN.get(name) or _FLOAT_UN[name]
            work = np.float64 if name in ("math.erf",) else None

            def run(cta, env):
                vals = [env[a] for a in args]
                if work is not None:
                    vals = [np.asarray(v, dtype=work) for v in vals]
                put(env, f(*vals))
            return run
        # integers
        if name == "tt.mulhiui":
            def run(cta, env):
                a, b = (_unsigned(env[x]).astype(np.uint64) for x in args)
                bits = np.dtype(runtime_dtype(elem)).itemsize * 8
                put(env, _wrap_int(((a * b) >> np.uint64(bits)).astype(np.int64), elem))
            return run

        def run(cta, env):
            a, b = env[args[0]], env[args[1]]
            if name == "arith.addi":
                r = np.add(a, b)
            elif name == "arith.subi":
                r = np.subtract(a, b)
            elif name == "arith.muli":
                r = np.multiply(a, b)
            elif name in ("arith.andi", "arith.ori", "arith.xori"):
                r = {"arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or,
                     "arith.xori": np.bitwise_xor}[name](a, b)
            elif name == "arith.divsi":
                r = _idiv(a, b, where)
            elif name == "arith.remsi":
                q = _idiv(a, b, where)
                r = np.asarray(a).astype(np.int64) - q * np.asarray(b).astype(np.int64)
            elif name == "arith.floordivsi":
                _idiv(a, b, where)
                r = np.floor_divide(np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))
            elif name == "arith.ceildivsi":
                _idiv(a, b, where)
                r = -np.floor_divide(-np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64))
            elif name in ("arith.divui", "arith.remui"):
                ua, ub = _unsigned(a), _unsigned(b)
                if (ub == 0).any():
                    raise InterpreterError(f"{where}: integer division by zero")
                r = (ua // ub if name == "arith.divui" else ua % ub)
                r = r.view(np.asarray(a).dtype) if np.asarray(r).dtype.kind == "u" else r
            elif name in ("arith.shli", "arith.shrsi", "arith.shrui"):
                bits = np.dtype(runtime_dtype(elem)).itemsize * 8
                n = np.asarray(b).astype(np.int64)
                if (n < 0).any() or (n >= bits).any():
                    raise InterpreterError(f"{where}: shift by {int(np.max(n))} of a {bits}-bit value")
                if name == "arith.shli":
                    r = np.left_shift(np.asarray(a), n.astype(np.asarray(a).dtype))
                elif name == "arith.shrsi":
                    r = np.right_shift(np.asarray(a), n.astype(np.asarray(a).dtype))
                else:
                    ua = _unsigned(a)
                    r = np.right_shift(ua, n.astype(ua.dtype)).view(np.asarray(a).dtype)
            elif name in ("arith.maxsi", "arith.minsi"):
                r = (np.maximum if name == "arith.maxsi" else np.minimum)(a, b)
            else:  # maxui / minui
                ua, ub = _unsigned(a), _unsigned(b)
                r = (np.maximum if name == "arith.maxui" else np.minimum)(ua, ub).view(np.asarray(a).dtype)
            put(env, _wrap_int(r, elem))
        return run

    def _cast(self, op: Op):
        name = op.name
        src = op.operands[0]
        _, selem = _ty(src.type)
        shape, elem = _ty(op.results[0].type)
        put = self._finish(op)
        rtz = name == "tt.fp_to_fp" and "rounding = rtz" in op.text

        def run(cta, env):
            x = np.asarray(env[src])
            if name in ("arith.bitcast", "tt.bitcast") and not is_ptr(elem):
                if selem == "bf16":
                    x = (np.ascontiguousarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)
                if elem == "bf16":
                    r = (np.ascontiguousarray(x).astype(np.uint16).astype(np.uint32) << 16).view(np.float32)
                else:
                    r = np.ascontiguousarray(x).view(runtime_dtype(elem))
            elif name in ("arith.extui", "arith.uitofp", "arith.index_castui"):
                u = _unsigned(x)
                r = u.astype(np.float64) if name == "arith.uitofp" else u.astype(np.int64)
            elif name == "arith.extsi" and selem == "i1":
                r = -x.astype(np.int64)
            elif name in ("arith.fptosi", "arith.fptoui"):
                r = np.trunc(np.nan_to_num(x.astype(np.float64))).astype(np.int64)
            elif name in ("arith.truncf", "tt.fp_to_fp") and rtz and elem == "bf16":
                b = np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
                r = b.view(np.float32)
            elif name == "arith.trunci":
                r = x.astype(np.int64)
            elif name in ("arith.sitofp",):
                r = x.astype(np.float64)
            else:
                r = x
            put(env, r)
        return run

    # -- arith / math / structural ops ---------------------------------------------------------
    def _op_arith_constant(self, op: Op):
        text = strip_loc(_render(op.head)).strip()
        m = re.match(r"arith\.constant\s+(.*?)(?:\s+:\s+(\S.*))?$", text, re.S)
        if not m:
            raise InterpreterError(f"{_where(op)}: cannot read '{text}'")
        lit = m.group(1).strip()  # (`true`/`false` print without a type)
        shape, elem = _ty(op.results[0].type)
        if lit.startswith("dense<"):
            inner = lit[len("dense<"):-1].strip()
            if inner.startswith('"'):
                raise InterpreterError(f"{_where(op)}: hex-blob dense constants are not supported")
            if inner.startswith("["):
                flat = re.findall(r"[^\[\],\s]+", inner)
                arr = np.array([_parse_scalar(t, elem) for t in flat]).reshape(shape)
            else:
                arr = np.full(shape, _parse_scalar(inner, elem))
        else:
            arr = np.array(_parse_scalar(lit, elem))
        val = to_runtime(arr, elem)
        out = op.results[0]

        def run(cta, env):
            env[out] = val
        return run, False

    def _op_arith_cmpi(self, op: Op):
        pred = _keyword(op)
        f = _CMP_I.get(pred)
        if f is None:
            raise InterpreterError(f"{_where(op)}: unknown predicate '{pred}'")
        a, b = op.operands
        put = self._finish(op)
        uns = pred.startswith("u")

        def run(cta, env):
            x, y = env[a], env[b]
            if uns:
                x, y = _unsigned(x), _unsigned(y)
            put(env, f(x, y))
        return run, False

    def _op_arith_cmpf(self, op: Op):
        pred = _keyword(op)
        a, b = op.operands
        put = self._finish(op)

        def run(cta, env):
            x, y = env[a], env[b]
            if pred in ("true", "false"):
                r = np.full(np.broadcast(x, y).shape, pred == "true")
            elif pred == "ord":
                r = ~(np.isnan(x) | np.isnan(y))
            elif pred == "uno":
                r = np.isnan(x) | np.isnan(y)
            else:
                r = _CMP_F[pred](x, y)
                if pred.startswith("u"):
                    r = r | np.isnan(x) | np.isnan(y)
            put(env, r)
        if pred not in _CMP_F and pred not in ("true", "false", "ord", "uno"):
            raise InterpreterError(f"{_where(op)}: unknown predicate '{pred}'")
        return run, False

    def _op_arith_select(self, op: Op):
        c, a, b = op.operands
        put = self._finish(op)

        def run(cta, env):
            put(env, np.where(env[c], env[a], env[b]))
        return run, False

    def _op_math_fma(self, op: Op):
        a, b, c = op.operands
        put = self._finish(op)

        def run(cta, env):
            put(env, np.asarray(env[a], np.float64) * env[b] + env[c])
        return run, False

    def _op_math_absi(self, op: Op):
        a = op.operands[0]
        put = self._finish(op)
        return (lambda cta, env: put(env, np.abs(env[a]))), False

    def _op_tt_clampf(self, op: Op):
        x, lo, hi = op.operands
        put = self._finish(op)
        prop = "propagateNan = all" in op.text

        def run(cta, env):
            v = np.minimum(np.maximum(env[x], env[lo]), env[hi]) if prop else \
                np.fmin(np.fmax(env[x], env[lo]), env[hi])
            put(env, v)
        return run, False

    def _op_ub_poison(self, op: Op):
        shape, elem = _ty(op.results[0].type)
        put = self._finish(op)
        v = np.full(shape, np.nan if elem in FLOATS else 0)
        return (lambda cta, env: put(env, v)), False

    def _op_gpu_barrier(self, op: Op):
        return (lambda cta, env: None), False

    _op_tt_debug_barrier = _op_gpu_barrier

    # -- program ids, ranges, shapes -----------------------------------------------------------
    def _op_tt_get_program_id(self, op: Op):
        axis = "xyz".index(_keyword(op))
        out = op.results[0]
        return (lambda cta, env: env.__setitem__(out, np.array(cta.pid[axis], np.int32))), False

    def _op_tt_get_num_programs(self, op: Op):
        axis = "xyz".index(_keyword(op))
        out = op.results[0]
        return (lambda cta, env: env.__setitem__(out, np.array(cta.nprog[axis], np.int32))), False

    def _op_tt_make_range(self, op: Op):
        start, end = _attr_int(op, "start"), _attr_int(op, "end")
        val = np.arange(start, end, dtype=np.int32)
        out = op.results[0]
        return (lambda cta, env: env.__setitem__(out, val)), False

    def _shape_op(self, op: Op, f):
        a = op.operands[0]
        shape, _ = _ty(op.results[0].type)
        out = op.results[0]

        def run(cta, env):
            env[out] = f(env[a], shape)
        return run, False

    def _op_tt_splat(self, op: Op):
        return self._shape_op(op, lambda x, s: np.broadcast_to(np.asarray(x), s))

    def _op_tt_broadcast(self, op: Op):
        return self._shape_op(op, lambda x, s: np.broadcast_to(x, s))

    def _op_tt_expand_dims(self, op: Op):
        axis = _attr_int(op, "axis")
        return self._shape_op(op, lambda x, s: np.expand_dims(x, axis))

    def _op_tt_reshape(self, op: Op):
        return self._shape_op(op, lambda x, s: np.reshape(x, s))

    def _op_tt_trans(self, op: Op):
        order = _array_attr(op, "order")
        return self._shape_op(op, lambda x, s: np.transpose(x, order))

    def _op_tt_cat(self, op: Op):
        a, b = op.operands
        out = op.results[0]
        return (lambda cta, env: env.__setitem__(out, np.concatenate([env[a], env[b]], axis=0))), False

    def _op_tt_join(self, op: Op):
        a, b = op.operands
        out = op.results[0]
        return (lambda cta, env: env.__setitem__(out, np.stack([env[a], env[b]], axis=-1))), False

    def _op_tt_split(self, op: Op):
        a = op.operands[0]
        lo, hi = op.results

        def run(cta, env):
            x = env[a]
            env[lo], env[hi] = x[..., 0], x[..., 1]
        return run, False

    # -- pointers and memory -------------------------------------------------------------------
    def _op_tt_addptr(self, op: Op):
        p, off = op.operands
        _, elem = _ty(op.results[0].type)
        size = elem_bytes(pointee(elem))
        out = op.results[0]

        def run(cta, env):
            env[out] = np.asarray(env[p], np.int64) + np.asarray(env[off]).astype(np.int64) * size
        return run, False

    def _op_ttg_global_scratch_alloc(self, op: Op):
        off = self.scratch_offsets[id(op)]
        out = op.results[0]
        return (lambda cta, env: env.__setitem__(out, np.array(cta.scratch_base + off, np.int64))), False

    def _op_tt_load(self, op: Op):
        ops = op.operands
        ptr = ops[0]
        shape, pelem = _ty(ptr.type)
        where = _where(op)
        put = self._finish(op)
        if _is_block_ptr(pelem):
            check = _array_attr(op, "boundaryCheck") or []
            pad_nan = _attr_int(op, "padding", 1) == 2

            def run(cta, env):
                bp = env[ptr]
                addr, inb = _block_addresses(bp, check)
                v = cta.launch.glob.load(addr, inb, bp.elem, actor=cta, what=where)
                if inb is not None:
                    v = np.where(inb, v, np.nan if pad_nan else 0)
                put(env, v)
            return run, False
        elem = pointee(pelem)
        mask = ops[1] if len(ops) > 1 else None
        other = ops[2] if len(ops) > 2 else None
        poison = 0  # Triton 3.6's lowering: `mov 0` before the predicated ld when there is no other

        def run(cta, env):
            addr = env[ptr]
            m = None if mask is None else np.broadcast_to(env[mask], np.shape(addr))
            v = cta.launch.glob.load(addr, m, elem, actor=cta, what=where)
            if m is not None:
                v = np.where(m, v, env[other] if other is not None else poison)
            put(env, v)
        return run, False

    def _op_tt_store(self, op: Op):
        ops = op.operands
        ptr, val = ops[0], ops[1]
        mask = ops[2] if len(ops) > 2 else None
        _, pelem = _ty(ptr.type)
        where = _where(op)
        if _is_block_ptr(pelem):
            check = _array_attr(op, "boundaryCheck") or []

            def run(cta, env):
                bp = env[ptr]
                addr, inb = _block_addresses(bp, check)
                cta.launch.glob.store(addr, env[val], inb, bp.elem, actor=cta, what=where)
            return run, False
        elem = pointee(pelem)

        def run(cta, env):
            addr = env[ptr]
            m = None if mask is None else env[mask]
            cta.launch.glob.store(addr, np.broadcast_to(env[val], np.shape(addr)), m, elem,
                                  actor=cta, what=where)
        return run, False

    def _op_tt_make_tensor_ptr(self, op: Op):
        block, elem = _block_of(op.results[0].type)
        r = len(block)
        ops = op.operands
        base, shp, strides, offs = ops[0], ops[1:1 + r], ops[1 + r:1 + 2 * r], ops[1 + 2 * r:1 + 3 * r]
        out = op.results[0]

        def run(cta, env):
            env[out] = BlockPtr(int(env[base]), tuple(int(env[v]) for v in shp),
                                tuple(int(env[v]) for v in strides), tuple(int(env[v]) for v in offs),
                                block, elem)
        return run, False

    def _op_tt_advance(self, op: Op):
        bp, *deltas = op.operands
        out = op.results[0]

        def run(cta, env):
            b = env[bp]
            env[out] = BlockPtr(b.base, b.shape, b.strides,
                                tuple(o + int(env[d]) for o, d in zip(b.offsets, deltas)), b.block, b.elem)
        return run, False

    def _op_tt_make_tensor_descriptor(self, op: Op):
        block, elem = _block_of(op.results[0].type)
        r = len(block)
        ops = op.operands
        base, shp, strides = ops[0], ops[1:1 + r], ops[1 + r:1 + 2 * r]
        out = op.results[0]
        where = _where(op)
        nan = "padding = nan" in op.text or "PAD_NAN" in op.text
        esize = elem_bytes(elem)

        def run(cta, env):
            d = TensorDesc(int(env[base]), tuple(int(env[v]) for v in shp),
                           tuple(int(env[v]) for v in strides), block, elem, nan)
            if d.base % 16:
                raise InterpreterError(f"{where}: TMA needs a 16-byte aligned base address")
            if d.strides[-1] != 1 or any((s * esize) % 16 for s in d.strides[:-1]):
                raise InterpreterError(f"{where}: TMA needs unit stride in the last dimension and "
                                       f"16-byte multiples elsewhere (strides {list(d.strides)}, "
                                       f"{esize}-byte elements)")
            if block[-1] * esize < 16:
                raise InterpreterError(f"{where}: TMA blocks need at least 16 bytes along the last "
                                       "dimension")
            env[out] = d
        return run, False

    def _op_tt_descriptor_load(self, op: Op):
        desc, *coords = op.operands
        shape, _ = _ty(op.results[0].type)
        put = self._finish(op)
        where = _where(op)

        def run(cta, env):
            d = env[desc]
            addr, inb = _desc_addresses(d, [int(env[c]) for c in coords])
            v = cta.launch.glob.load(addr, inb, d.elem, actor=cta, what=where)
            v = np.where(inb, v, np.nan if d.nan_padding else 0)
            put(env, np.reshape(v, shape))
        return run, False

    def _op_tt_descriptor_store(self, op: Op):
        desc, *rest = op.operands
        coords, val = rest[:-1], rest[-1]
        where = _where(op)

        def run(cta, env):
            d = env[desc]
            addr, inb = _desc_addresses(d, [int(env[c]) for c in coords])
            cta.launch.glob.store(addr, np.reshape(env[val], addr.shape), inb, d.elem, actor=cta,
                                  what=where)
        return run, False

    def _op_tt_atomic_rmw(self, op: Op):
        kind = _keyword(op)
        ops = op.operands
        ptr, val = ops[0], ops[1]
        mask = ops[2] if len(ops) > 2 else None
        _, pelem = _ty(ptr.type)
        elem = pointee(pelem)
        put = self._finish(op)
        where = _where(op)
        f = {"fadd": np.add, "add": np.add, "max": np.maximum, "min": np.minimum, "umax": None,
             "umin": None, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
             "xchg": lambda old, new: new}
        if kind not in f or f[kind] is None:
            raise InterpreterError(f"{where}: atomic_rmw '{kind}' is not supported")
        fn = f[kind]

        def run(cta, env):
            addr = np.asarray(env[ptr], np.int64)
            v = np.broadcast_to(env[val], addr.shape)
            m = np.ones(addr.shape, bool) if mask is None else np.broadcast_to(env[mask], addr.shape)
            old = np.zeros(addr.shape, dtype=runtime_dtype(elem))
            glob = cta.launch.glob
            for i in np.ndindex(addr.shape):  # one lane after another, as the hardware serializes
                if not m[i]:
                    continue
                o = glob.load(addr[i], None, elem, actor=cta, what=where)
                old[i] = o
                glob.store(addr[i], to_runtime(fn(o, v[i]), elem), None, elem, actor=cta, what=where)
            put(env, old)
        return run, False

    def _op_tt_atomic_cas(self, op: Op):
        ptr, cmp, val = op.operands[:3]
        _, pelem = _ty(ptr.type)
        elem = pointee(pelem)
        put = self._finish(op)
        where = _where(op)

        def run(cta, env):
            addr = np.asarray(env[ptr], np.int64)
            c = np.broadcast_to(env[cmp], addr.shape)
            v = np.broadcast_to(env[val], addr.shape)
            old = np.zeros(addr.shape, dtype=runtime_dtype(elem))
            glob = cta.launch.glob
            for i in np.ndindex(addr.shape):
                o = glob.load(addr[i], None, elem, actor=cta, what=where)
                old[i] = o
                if o == c[i]:
                    glob.store(addr[i], v[i], None, elem, actor=cta, what=where)
            put(env, old)
        return run, False

    # -- dot, reduce, scan ---------------------------------------------------------------------
    def _op_tt_dot(self, op: Op):
        a, b = op.operands[:2]
        c = op.operands[2] if len(op.operands) > 2 else None
        _, ea = _ty(a.type)
        shape, elem = _ty(op.results[0].type)
        prec = op.attr("inputPrecision") or "ieee"  # the printer elides the default, ieee
        tf32 = ea == "f32" and prec.startswith("tf32") and prec != "tf32x3"
        put = self._finish(op)

        def run(cta, env):
            x, y = env[a], env[b]
            if elem in FLOATS:
                x = np.asarray(x, np.float32)
                y = np.asarray(y, np.float32)
                if tf32:
                    x, y = round_tf32(x), round_tf32(y)
                r = matmul_f32(x, y)
                if elem == "f64":
                    r = np.matmul(np.asarray(env[a], np.float64), np.asarray(env[b], np.float64))
            else:
                r = np.matmul(np.asarray(x, np.int64), np.asarray(y, np.int64))
            if c is not None:
                r = r + env[c]
            put(env, r)
        return run, False

    def _region_fn(self, op: Op):
        code = self.block(op.regions[0].blocks[0])
        if any(g for _, g in code.steps):
            raise InterpreterError(f"{_where(op)}: its combine region has ops with regions or asm")

        def combine(cta, vals):
            env = dict(zip(code.args, vals))
            for fn, _ in code.steps:
                fn(cta, env)
            return [env[v] for v in code.term_vals]
        return combine

    def _op_tt_reduce(self, op: Op):
        axis = _attr_int(op, "axis")
        ins = op.operands
        combine = self._region_fn(op)
        put = self._finish(op)

        def run(cta, env):
            vals = [np.moveaxis(np.asarray(env[v]), axis, -1) for v in ins]
            while vals[0].shape[-1] > 1:
                n = vals[0].shape[-1]
                odd = [v[..., n - 1:] for v in vals] if n % 2 else None
                lhs = [v[..., 0:n - (n % 2):2] for v in vals]
                rhs = [v[..., 1:n - (n % 2):2] for v in vals]
                vals = [np.asarray(r) for r in combine(cta, lhs + rhs)]
                vals = [np.broadcast_to(v, lhs[0].shape) for v in vals]
                if odd is not None:
                    vals = [np.concatenate([v, o], axis=-1) for v, o in zip(vals, odd)]
            put(env, *[v[..., 0] for v in vals])
        return run, False

    def _op_tt_scan(self, op: Op):
        axis = _attr_int(op, "axis")
        reverse = "reverse = true" in op.text
        ins = op.operands
        combine = self._region_fn(op)
        put = self._finish(op)

        def run(cta, env):
            vals = [np.moveaxis(np.asarray(env[v]), axis, -1) for v in ins]
            n = vals[0].shape[-1]
            order = range(n - 1, -1, -1) if reverse else range(n)
            outs = [np.empty_like(v) for v in vals]
            acc = None
            for i in order:
                cur = [v[..., i] for v in vals]
                acc = cur if acc is None else [np.asarray(r) for r in combine(cta, acc + cur)]
                for o, a in zip(outs, acc):
                    o[..., i] = a
            put(env, *[np.moveaxis(o, -1, axis) for o in outs])
        return run, False

    # -- control flow --------------------------------------------------------------------------
    def _op_scf_for(self, op: Op):
        loop = ForLoop(op)
        lb, ub, step = loop.bounds
        inits = loop.inits
        body = self.block(op.body())
        iv, iargs = body.args[0], body.args[1:]
        results = list(op.results)

        def run(cta, env):
            i, hi, st = int(env[lb]), int(env[ub]), int(env[step])
            dt = np.asarray(env[lb]).dtype
            if st <= 0:
                raise InterpreterError(f"{_where(op)}: step {st} is not positive")
            vals = [env[v] for v in inits]
            while i < hi:
                env[iv] = np.array(i, dt)
                for a, v in zip(iargs, vals):
                    env[a] = v
                vals = yield from _run_block(body, cta, env)
                i += st
            for r, v in zip(results, vals):
                env[r] = v
        return run, True

    def _op_scf_if(self, op: Op):
        cond = op.operands[0]
        then = self.block(op.regions[0].blocks[0])
        other = self.block(op.regions[1].blocks[0]) if len(op.regions) > 1 and op.regions[1].blocks else None
        results = list(op.results)

        def run(cta, env):
            code = then if bool(env[cond]) else other
            vals = []
            if code is not None:
                vals = yield from _run_block(code, cta, env)
            for r, v in zip(results, vals):
                env[r] = v
        return run, True

    def _op_scf_while(self, op: Op):
        before = self.block(op.regions[0].blocks[0])
        after = self.block(op.regions[1].blocks[0])
        inits = op.operands
        results = list(op.results)
        cond_op = before.term
        if cond_op is None or cond_op.name != "scf.condition":
            raise InterpreterError(f"{_where(op)}: the before region does not end in scf.condition")
        cond = cond_op.operands[0]

        def run(cta, env):
            vals = [env[v] for v in inits]
            while True:
                for a, v in zip(before.args, vals):
                    env[a] = v
                passed = yield from _run_block(before, cta, env)
                if not bool(env[cond]):
                    break
                for a, v in zip(after.args, passed):
                    env[a] = v
                vals = yield from _run_block(after, cta, env)
            for r, v in zip(results, passed):
                env[r] = v
        return run, True

    def _op_tt_call(self, op: Op):
        callee = _symbol(op.text)
        if callee is None:
            raise InterpreterError(f"{_where(op)}: cannot read the callee")
        args = op.operands
        results = list(op.results)

        def run(cta, env):
            code = self.function(callee)
            inner = dict(zip(code.args, [env[a] for a in args]))
            vals = yield from _run_block(code, cta, inner)
            for r, v in zip(results, vals):
                env[r] = v
        return run, True

    def _op_tt_assert(self, op: Op):
        cond = op.operands[0]
        m = re.search(r'"((?:[^"\\]|\\.)*)"', op.text)
        msg = ptx.decode_mlir_string(m.group(1)) if m else ""
        where = _where(op)

        def run(cta, env):
            if not np.all(env[cond]):
                raise InterpreterError(f"{where}: tt.assert failed in program {cta.pid}: {msg}")
        return run, False

    def _op_tt_print(self, op: Op):
        m = re.search(r'"((?:[^"\\]|\\.)*)"', op.text)
        prefix = ptx.decode_mlir_string(m.group(1)) if m else ""
        args = op.operands

        def run(cta, env):
            print(f"pid {cta.pid}{prefix}", *[np.asarray(env[a]) for a in args])
        return run, False

    def _op_tt_elementwise_inline_asm(self, op: Op):
        text = _render(op.head)
        m = re.match(r'\s*tt\.elementwise_inline_asm\s+"((?:[^"\\]|\\.)*)"', text)
        cons = re.search(r'constraints\s*=\s*"([^"]*)"', text)
        if not m or not cons:
            raise InterpreterError(f"{_where(op)}: cannot read the asm string and constraints")
        if _attr_int(op, "packed_element", 1) != 1:
            raise InterpreterError(f"{_where(op)}: packed_element > 1 is not supported")
        where = _where(op)
        runner = ptx.AsmRunner(ptx.parse(ptx.decode_mlir_string(m.group(1))), where)
        parts = [c.strip() for c in cons.group(1).split(",") if c.strip()]
        outs = [c for c in parts if c.startswith("=")]
        ins_kinds = [c for c in parts if not c.startswith("=")]
        args = op.operands
        if len(ins_kinds) != len(args) or len(outs) != len(op.results):
            raise InterpreterError(f"{where}: constraints '{cons.group(1)}' do not match "
                                   f"{len(args)} operands and {len(op.results)} results")
        for c in outs + ins_kinds:
            if c.lstrip("=") not in ptx._CONSTRAINT:
                raise InterpreterError(f"{where}: constraint '{c}' is not supported")
        shape, _ = _ty(op.results[0].type) if op.results else ((), "")
        put = self._finish(op)
        res_elems = [_ty(r.type)[1] for r in op.results]

        def run(cta, env):
            vals = yield from runner.run(cta, outs, [np.asarray(env[a]) for a in args], ins_kinds, shape)
            conv = []
            for v, e in zip(vals, res_elems):
                t = runtime_dtype(e) if e != "bf16" else np.float32
                conv.append(ptx._as(v, t) if np.dtype(t).itemsize == v.dtype.itemsize else v.astype(t))
            put(env, *conv)
        return run, True


def _block_addresses(bp: BlockPtr, check):
    esize = elem_bytes(bp.elem)
    addr = np.zeros(bp.block, dtype=np.int64) + bp.base
    inb = None
    for d, (n, st, off) in enumerate(zip(bp.block, bp.strides, bp.offsets)):
        idx = off + np.arange(n, dtype=np.int64)
        sh = [1] * len(bp.block)
        sh[d] = n
        addr = addr + (idx * st * esize).reshape(sh)
        if d in check:
            ok = ((idx >= 0) & (idx < bp.shape[d])).reshape(sh)
            inb = ok if inb is None else inb & ok
    if inb is not None:
        inb = np.broadcast_to(inb, bp.block)
    return addr, inb


def _desc_addresses(d: TensorDesc, coords):
    esize = elem_bytes(d.elem)
    addr = np.zeros(d.block, dtype=np.int64) + d.base
    inb = np.ones(d.block, dtype=bool)
    for k, (n, st, c) in enumerate(zip(d.block, d.strides, coords)):
        idx = c + np.arange(n, dtype=np.int64)
        sh = [1] * len(d.block)
        sh[k] = n
        addr = addr + (idx * st * esize).reshape(sh)
        inb = inb & ((idx >= 0) & (idx < d.shape[k])).reshape(sh)
    return addr, inb


def _run_block(code: _BlockCode, cta, env):
    for fn, gen in code.steps:
        if gen:
            yield from fn(cta, env)
        else:
            fn(cta, env)
    return [env[v] for v in code.term_vals]


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------

_NP_ELEM = {"float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16", "int8": "i8",
            "uint8": "i8", "int16": "i16", "uint16": "i16", "int32": "i32", "uint32": "i32",
            "int64": "i64", "uint64": "i64", "bool": "i1"}


def _array_bytes(a, name: str):
    """(1-D uint8 view of an array's memory, element type name, data address) for numpy arrays
    and CPU torch tensors."""
    if hasattr(a, "data_ptr") and hasattr(a, "is_contiguous"):  # torch
        if a.device.type != "cpu":
            raise InterpreterError(f"argument {name}: the interpreter takes CPU tensors, got {a.device}")
        if not a.is_contiguous():
            raise InterpreterError(f"argument {name}: the tensor is not contiguous")
        import torch
        kind = str(a.dtype).replace("torch.", "")
        data = a.reshape(-1).view(torch.uint8).numpy() if a.numel() else np.zeros(0, np.uint8)
        return data, kind, a.data_ptr()
    if isinstance(a, np.ndarray):
        if not a.flags["C_CONTIGUOUS"]:
            raise InterpreterError(f"argument {name}: the array is not C-contiguous")
        if not a.flags["WRITEABLE"]:
            raise InterpreterError(f"argument {name}: the array is read-only")
        return a.reshape(-1).view(np.uint8), a.dtype.name, a.__array_interface__["data"][0]
    raise InterpreterError(f"argument {name}: expected a numpy array or a CPU torch tensor for a "
                           f"pointer, got {type(a).__name__}")


def _check_elem(name: str, kind: str, elem: str) -> None:
    got = _NP_ELEM.get(kind, kind)
    if elem == "bf16" and kind in ("uint16", "int16", "bfloat16"):
        return
    if got != elem and not (elem == "i8" and kind in ("bool", "int8", "uint8")):
        raise InterpreterError(f"argument {name}: the kernel reads it as {elem}, the array holds "
                               f"{kind}")


def _scalar(name: str, v, t: str):
    if t in FLOATS:
        return to_runtime(np.asarray(float(v)), t)
    if t == "i1":
        return np.array(bool(v))
    if t.startswith("i"):
        bits = int(t[1:])
        n = int(v)
        if not -(1 << (bits - 1)) <= n < (1 << bits):
            raise InterpreterError(f"argument {name}: {n} does not fit {t}")
        return _wrap_int(np.array(n, np.int64), t)
    raise InterpreterError(f"argument {name}: parameter type {t} is not supported")


# ---------------------------------------------------------------------------------------------
# run_ir
# ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def _load(ir_text: str, trusted: bool) -> Module:
    """`trusted`: the text is Triton's own print of a module it verified (a compiled kernel's
    `asm`, which normfuse.compile itself parses that way): no crash preflight in a forked child
    (`normfuse.ir.load`), which takes 50-100 ms in a process the size of a test worker."""
    return load_ir(ir_text, source_name="run_ir.mlir", trusted=trusted)


def _pick_kernel(module: Module, kernel: str | None) -> Op:
    funcs = module.functions()
    if kernel is not None:
        for f in funcs:
            if _Compiler._fname(f) == kernel:
                return f
        raise InterpreterError(f"no function @{kernel} in the module "
                               f"(functions: {', '.join(_Compiler._fname(f) for f in funcs)})")
    public = [f for f in funcs if "public" in _render(f.head).split("@")[0]]
    if len(public) != 1:
        raise InterpreterError(f"the module has {len(public)} public functions: pass kernel= "
                               f"({', '.join(_Compiler._fname(f) for f in funcs)})")
    return public[0]


def _func_attr(func: Op, key: str) -> int | None:
    m = re.search(rf"\b{re.escape(key)}\s*=\s*(\d+)\s*:\s*i32", _render(func.head))
    return int(m.group(1)) if m else None


def cluster_dims(ir_text: str, kernel: str | None = None, *, trusted: bool = False) -> int:
    """The cluster size a kernel must be launched with: its `normfuse.cluster_dims`, else 1.
    `trusted`: see `run_ir`."""
    return _func_attr(_pick_kernel(_load(ir_text, trusted), kernel), "normfuse.cluster_dims") or 1


def _grid3(grid) -> tuple:
    grid = tuple(int(g) for g in ((grid,) if isinstance(grid, int) else grid))
    if not 1 <= len(grid) <= 3 or any(g < 0 for g in grid):
        raise InterpreterError(f"grid must be 1-3 non-negative ints, got {grid}")
    return grid + (1,) * (3 - len(grid))


def is_ttgir(text: str) -> bool:
    """Whether a module is TritonGPU IR (a `ttg.num-warps` module attribute), not TTIR."""
    return re.search(r'^module attributes \{[^\n]*"ttg\.num-warps"', text, re.M) is not None


def run_ir(ir_text: str, args, grid, *, num_ctas: int = 1, kernel: str | None = None,
           trusted: bool = False) -> None:
    """Run a TTIR module's kernel on `args` for every program of `grid`, like a launch.

    `args`: one per parameter of the kernel function, in order (pointers: arrays or CPU tensors,
    written in place; scalars: numbers). `grid`: an int or up to three ints. `num_ctas`: the
    cluster size the kernel is launched with (a `cluster-reduce`d kernel needs its
    `normfuse.cluster_dims`). `kernel`: the function's name when the module has several public
    ones. Raises `InterpreterError` (an unsupported op, a bad argument, an out-of-bounds access,
    a failed tt.assert, a deadlock) or `RaceError` (see the module docstring). TTGIR (a lowered
    kernel) runs through `normfuse.testing.run_ir`, which dispatches to `warp_specialized`.
    `trusted`: `ir_text` is Triton's own print of a module it verified (a compiled kernel's
    `asm["ttir"]`, `asm["normfuse"]`, `asm["ttgir"]`): parsed in this process without the crash
    preflight (`normfuse.ir.load(..., trusted=True)`, as normfuse.compile parses those texts).
    """
    if is_ttgir(ir_text):
        raise InterpreterError("a TTGIR module (a lowered kernel): run it with "
                               "normfuse.testing.run_ir, which runs warp-specialized kernels")
    module = _load(ir_text, trusted)
    func = _pick_kernel(module, kernel)
    grid = _grid3(grid)
    dims = _func_attr(func, "normfuse.cluster_dims")
    if dims is not None and dims != num_ctas:
        raise InterpreterError(f"the kernel was split over {dims}-CTA clusters "
                               f"(normfuse.cluster_dims = {dims}): run it with num_ctas={dims}")
    if dims is None and num_ctas != 1:
        raise InterpreterError("num_ctas > 1 is only supported for kernels that cluster-reduce "
                               "split (normfuse.cluster_dims); Triton's own multi-CTA layouts are "
                               "not modelled")
    smem_extra = _func_attr(func, "normfuse.cluster_smem") or 0

    comp = _Compiler(module)
    # the global-scratch slice of a program: descriptors first, then the allocs (as Triton does)
    offset = 0
    walked = list(func.walk())
    offset += _DESC_BYTES * sum(1 for o in walked if o.name == "tt.make_tensor_descriptor")
    for o in walked:
        if o.name == "ttg.global_scratch_alloc":
            align = _attr_int(o, "alignment", 1)
            offset = -(-offset // align) * align
            comp.scratch_offsets[id(o)] = offset
            offset += _attr_int(o, "nbytes")
    code = comp.function(_Compiler._fname(func))  # compiles (and checks) every op first

    params = code.args
    if len(args) != len(params):
        raise InterpreterError(f"the kernel takes {len(params)} arguments "
                               f"({', '.join(p.name.lstrip('%') for p in params)}), got {len(args)}")
    launch = _Launch(grid, num_ctas)
    env0 = {}
    by_addr: dict[tuple, int] = {}
    for p, a in zip(params, args):
        name = p.name.lstrip("%")
        _, t = _ty(p.type)
        if is_ptr(t):
            if a is None:
                env0[p] = np.array(0, np.int64)
                continue
            data, kind, ptr = _array_bytes(a, name)
            _check_elem(name, kind, pointee(t))
            key = (ptr, data.size)
            if key not in by_addr:
                for (q, n), _b in by_addr.items():
                    if q < ptr + data.size and ptr < q + n:
                        raise InterpreterError(f"argument {name} overlaps another argument's memory")
                base = launch.place(data.size)
                launch.glob.add(Buffer(f"argument {name}", base, data))
                by_addr[key] = base
            env0[p] = np.array(by_addr[key], np.int64)
        else:
            env0[p] = _scalar(name, a, t)
    total = launch.nprog[0] * launch.nprog[1] * launch.nprog[2]
    if offset:
        launch.scratch_bytes = -(-offset // 128) * 128
        launch.scratch_base = launch.place(launch.scratch_bytes * total)
        launch.glob.add(Buffer("the global scratch", launch.scratch_base,
                               np.zeros(launch.scratch_bytes * total, np.uint8), tracked=True))

    with np.errstate(all="ignore"), one_thread():
        for z in range(grid[2]):
            for y in range(grid[1]):
                for cx in range(grid[0]):
                    cluster = _Cluster(num_ctas)
                    for r in range(num_ctas):
                        cluster.ctas.append(CTA(launch, cluster, (cx * num_ctas + r, y, z), smem_extra))
                    _run_cluster(cluster, code, env0)


def _run_cluster(cluster: _Cluster, code: _BlockCode, env0: dict) -> None:
    gens = {}
    for cta in cluster.ctas:
        gens[cta.rank] = _run_block(code, cta, dict(env0))
    waiting: dict[int, int] = {}
    spinning: set[int] = set()  # CTAs in a polling loop (inline asm), since the last progress
    active = [c.rank for c in cluster.ctas]
    while active:
        progressed = False
        for r in list(active):
            if r in waiting:
                if not cluster.passed(waiting[r]):
                    continue
                del waiting[r]
            cta = cluster.ctas[r]
            try:
                req = next(gens[r])
            except StopIteration:
                active.remove(r)
                cta.exited = True
                if cta.smem is not None:
                    check_exit(cta.smem, cta)
                progressed = True
                spinning.clear()
                continue
            if req[0] == "spin":  # polled memory that no other CTA has written since
                if r in spinning and spinning >= set(active) - set(waiting):
                    raise InterpreterError(f"{req[1]}: CTA {cta.cta} polls memory in a loop that "
                                           "no running CTA of its cluster can end (a hang on the "
                                           "GPU: programs of a plain launch run one after another "
                                           "here)")
                spinning.add(r)
                continue
            spinning.clear()
            waiting[r] = req[1]
            progressed = True
        if not progressed and not spinning:
            stuck = ", ".join(f"CTA {cluster.ctas[r].cta} waits for phase {p}" for r, p in waiting.items())
            done = ", ".join(f"CTA {c.cta} {'exited' if c.exited else 'is at'} after {c.arrived} arrives"
                             for c in cluster.ctas)
            raise InterpreterError(f"deadlock in a {cluster.size}-CTA cluster: {stuck}; {done}")
