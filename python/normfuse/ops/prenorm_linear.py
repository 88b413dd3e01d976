"""Pre-norm linear ops: y = norm(x) @ W^T (+ bias), computed by a normfuse-compiled kernel.

Layers, top to bottom (Quack style):

    rmsnorm_linear / layernorm_linear      functional API: validate -> prepare -> launch
    prepare_*  -> PreparedLaunch           the validated launch: arguments, config, grid, output
    select_config (kernels/configs.py)     the tile config table
    get_launcher(kind, passes)             one `normfuse.jit` launcher per kernel and pipeline
    kernels/prenorm_gemm.py                the naive kernels that the passes rewrite

With the default `passes="default"` the naive kernel is rewritten into the one-loop form
(lazy-prenorm: statistics accumulated in the GEMM's k-loop, rstd applied to the accumulator) and
lowered to the warp-specialized Hopper template (hopper-ws); at SHARE_MIN_N_TILES or more N tiles
per row block the template computes the statistics once per row block and shares them
(hopper-ws{stats-share=true}). `passes=()` runs the naive two-loop kernel untouched, which is the
numerical oracle of the tests.

Limits of this first version (each is stated where it matters):
- inference only: no backward. Calling with tensors that require grad under grad mode raises.
- `bias` is fused into the kernel's epilogue (HAS_BIAS), after the norm-scaled accumulator.
- By default (`fold=True`) the norm weight g is folded into W (W diag(g), cached per weight
  version) and, for LayerNorm, beta into the output bias (W beta): the A tile then reaches the
  MMA unmodified, which is the fast path of the lazy form. `fold=False` keeps g (and beta) in the
  k-loop, as the naive kernel has them.
- Hopper (sm_90) only; bf16/fp16 only, every tensor of one dtype; 32-bit offsets in the kernels.
- x is [..., K] with any leading dims; x and weight are made unit-stride along K (a copy when they
  are not), x's row stride is passed through as is.
"""
from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch

from ..kernels.configs import GemmConfig, select_config
from ..launch import LaunchFailure

__all__ = ["rmsnorm_linear", "layernorm_linear", "prepare_rmsnorm_linear",
           "prepare_layernorm_linear", "prepare_plain_linear", "plain_linear", "PreparedLaunch",
           "get_launcher", "aot_compile", "kernel_for", "DEFAULT_PASSES"]

# The default pipeline (pipeline.DEFAULT_PIPELINE): lazy-prenorm fuses the statistics into the
# k-loop, hopper-ws lowers the fused loop to the warp-specialized template.
DEFAULT_PASSES = "default"
# With the default passes and at least this many N tiles per row block, the pre-norm ops run the
# default pipeline with hopper-ws{stats-share=true}: the row statistics computed once per row
# block and shared with its other tiles instead of recomputed in every tile. Measured on the H200
# (2026-12-01, bench/results/2026-12-01/stats-share-stamped, ratios of the same run): at 8 and
# more N tiles RMSNorm 0.93-1.01x and LayerNorm 0.89-0.97x the per-tile time; at 2 and 4 N tiles
# RMSNorm 1.00-1.06x and LayerNorm 0.97-1.05x (the row block's first tile still pays for the
# statistics and the tile order spreads a row block over two waves).
# The shared statistics make a tile wait for another CTA's tile: they assume that every CTA of
# the persistent grid is resident at once (one per SM). Where SMs are withheld from the launch
# (MPS or green-context SM limits, or two such launches running at once on two streams), set
# NORMFUSE_STATS_SHARE=0 to keep the per-tile statistics.
SHARE_MIN_N_TILES = 8


def _default_pipeline_for(kind: str, N: int, block_n: int):
    """The pipeline the pre-norm ops run under `passes="default"` (see SHARE_MIN_N_TILES)."""
    import os
    from ..pipeline import DEFAULT_PIPELINE
    if (kind in ("rms", "ln") and -(-N // block_n) >= SHARE_MIN_N_TILES
            and os.environ.get("NORMFUSE_STATS_SHARE", "1") != "0"):
        return ",".join(DEFAULT_PIPELINE[:-1]) + ",hopper-ws{stats-share=true}"
    return DEFAULT_PASSES
_DTYPES = (torch.bfloat16, torch.float16)
_I32 = 2**31


# ---------------------------------------------------------------------------------------------
# Launchers: one per kernel and pipeline, built on first use
# ---------------------------------------------------------------------------------------------

def _kernel(kind: str):
    if kind == "rms":
        from ..kernels.prenorm_gemm import rmsnorm_gemm_naive
        return rmsnorm_gemm_naive
    if kind == "ln":
        from ..kernels.prenorm_gemm import layernorm_gemm_naive
        return layernorm_gemm_naive
    if kind == "gemm":
        from ..kernels.gemm import gemm_plain
        return gemm_plain
    raise ValueError(f"unknown kernel kind '{kind}' (rms, ln, gemm)")


def _passes_key(passes) -> str | tuple:
    if passes is None:
        return ()
    return passes if isinstance(passes, str) else tuple(passes)


@functools.lru_cache(maxsize=None)
def _launcher_cached(kind: str, passes):
    import normfuse
    return normfuse.jit(_kernel(kind), passes=passes)


def get_launcher(kind: str, passes=DEFAULT_PASSES):
    """The module-level `normfuse.jit` launcher of kernel `kind` ('rms', 'ln', 'gemm') under
    `passes`; its compile cache lives as long as the process."""
    return _launcher_cached(kind, _passes_key(passes))


# ---------------------------------------------------------------------------------------------
# Validation (pure Python: no CUDA call before the device check has passed)
# ---------------------------------------------------------------------------------------------

def _shape(t) -> str:
    return "None" if t is None else str(tuple(t.shape))


def _check_inputs(op: str, x, weight, named: dict[str, Any], bias) -> None:
    tensors = {"x": x, "weight": weight, **named, "bias": bias}
    for name, t in tensors.items():
        if t is not None and not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if x is None or weight is None:
        raise TypeError(f"{op}: x and weight are required")
    if weight.dim() != 2:
        raise ValueError(f"{op}: weight must be 2-D [out_features, in_features], got weight of "
                         f"shape {_shape(weight)}")
    if x.dim() < 1:
        raise ValueError(f"{op}: x must have at least 1 dimension [..., in_features], got a scalar")
    for name, t in named.items():
        if t is not None and t.dim() != 1:
            raise ValueError(f"{op}: {name} must be 1-D [in_features], got {name} of shape {_shape(t)}")
    K = x.shape[-1]
    ks = {"x.shape[-1]": K, "weight.shape[1]": weight.shape[1]}
    ks.update({f"{n}.shape[0]": t.shape[0] for n, t in named.items() if t is not None})
    if len(set(ks.values())) != 1:
        got = ", ".join(f"{k}={v}" for k, v in ks.items())
        shapes = ", ".join(f"{n} {_shape(t)}" for n, t in tensors.items() if t is not None)
        raise ValueError(f"{op}: shape mismatch, in_features must agree: {got} (shapes: {shapes})")
    if K == 0:
        raise ValueError(f"{op}: in_features must be positive, got x of shape {_shape(x)}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({weight.shape[0]},) = (out_features,), got "
                         f"{_shape(bias)}")
    given = {n: t for n, t in tensors.items() if t is not None}
    if x.dtype not in _DTYPES:
        raise TypeError(f"{op}: x must be bfloat16 or float16, got {x.dtype}")
    if any(t.dtype != x.dtype for t in given.values()):
        got = ", ".join(f"{n} {t.dtype}" for n, t in given.items())
        raise TypeError(f"{op}: all tensors must have one dtype (bfloat16 or float16), got {got}")
    if torch.is_grad_enabled() and any(t.requires_grad for t in given.values()):
        raise NotImplementedError(
            f"{op}: this launch path is inference-only (autograd goes through the functional "
            f"op, e.g. rmsnorm_linear, see normfuse.ops.training): call it under "
            f"torch.no_grad() or torch.inference_mode(), or with tensors that do not require grad")
    devices = {n: t.device for n, t in given.items()}
    if any(d.type != "cuda" for d in devices.values()) or len(set(devices.values())) != 1:
        got = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"{op}: all tensors must be CUDA tensors on one device, got {got}")
    _check_hopper(op, x.device)


@functools.lru_cache(maxsize=None)
def _capability(index: int) -> tuple[tuple[int, int], str]:
    return torch.cuda.get_device_capability(index), torch.cuda.get_device_name(index)


def _check_hopper(op: str, device: torch.device) -> None:
    index = device.index if device.index is not None else torch.cuda.current_device()
    cap, name = _capability(index)
    if cap[0] != 9:
        raise RuntimeError(f"{op}: needs a Hopper GPU (sm_90); {device} is {name} with compute "
                           f"capability sm_{cap[0]}{cap[1]}")


def _check_offsets(op: str, M: int, N: int, K: int, stride_xm: int, stride_wn: int,
                   cfg, stride_out: int | None = None) -> None:
    """The kernels form row offsets as i32 products (rows * stride), padded tiles included.
    `cfg`: any config with block_m/block_n/block_k; `stride_out`: the largest row stride of an
    [M, N] operand (output, residual; default N)."""
    k_pad = -(-K // cfg.block_k) * cfg.block_k
    m_pad = -(-M // cfg.block_m) * cfg.block_m
    n_pad = -(-N // cfg.block_n) * cfg.block_n
    if ((M - 1) * stride_xm + k_pad >= _I32 or (N - 1) * stride_wn + k_pad >= _I32
            or m_pad * max(N, stride_out or N) + n_pad >= _I32):
        raise ValueError(f"{op}: problem too large for the kernels' 32-bit offsets (M={M}, N={N}, "
                         f"K={K}, x row stride {stride_xm}); split x along its rows")


# ---------------------------------------------------------------------------------------------
# Prepared launches
# ---------------------------------------------------------------------------------------------

@dataclass
class PreparedLaunch:
    """A validated launch: call it to run the kernel (and the bias add) into `out`.

    The benchmarks time `launch()` (the kernel alone, compiled once, no per-call validation);
    `compile()` returns the `normfuse.CompiledKernel` (asm, remarks, metadata).
    """

    op: str
    kind: str
    launcher: Any
    runtime_args: tuple
    constexprs: dict
    options: dict
    grid: tuple
    config: GemmConfig
    out: torch.Tensor            # [M, N]
    out_shape: tuple             # [..., N]
    bias: torch.Tensor | None = None
    _compiled: Any = field(default=None, repr=False)
    _full_args: tuple = field(default=(), repr=False)
    _bound: Any = field(default=None, repr=False)

    def compile(self):
        if self._compiled is None:
            with _on_device(self.out.device):
                self._compiled = self.launcher.warmup(*self.runtime_args, **self.constexprs,
                                                      **self.options)
            # Launched straight through Triton's CompiledKernel with every argument in kernel
            # order, constexprs included (what `JITKernel.__getitem__` does per call, minus the
            # per-call specialization), so a timed `launch()` costs one launcher call.
            from ..compiler import kernel_args
            self._full_args = kernel_args(self.launcher.fn, self.runtime_args, self.constexprs)
        return self._compiled

    def launch(self) -> torch.Tensor:
        """Run the kernel into `out` ([M, N]); no bias."""
        if self.grid[0] == 0:  # empty M or N: nothing to compile or launch
            return self.out
        ck = self.compile()
        grid = tuple(self.grid) + (1,) * (3 - len(self.grid))  # Triton's launcher reads 3 dims
        with _on_device(self.out.device):
            # the lowered (warp-specialized) kernel when hopper-ws applied, with its own
            # persistent grid, prepared once for these arguments; else the fused Triton kernel
            if self._bound is None:  # decided once: the arguments of a prepared launch are fixed
                lowered = ck.lowered is not None and ck.lowered.why_not(self.runtime_args) is None
                self._bound = ck.lowered.bind(self.runtime_args) if lowered else False
            try:
                if self._bound:
                    self._bound()
                else:
                    ck.launch(grid, self._full_args, runtime_args=self.runtime_args)
            except LaunchFailure as e:  # in the op's terms: shapes, dtype, form
                raise e.for_op(self.describe()) from e
        return self.out

    def describe(self) -> str:
        """'linear_rmsnorm: M=257, N=3072, K=512, torch.bfloat16, form: 12-CTA clusters, ...'
        (what a launch failure names)."""
        from .cluster_form import describe_form
        M, N = self.out.shape
        x = self.runtime_args[0] if self.runtime_args else None
        K = x.shape[-1] if isinstance(x, torch.Tensor) else "?"
        ck = self._compiled
        ctas = int(ck.kernel.metadata.num_ctas or 1) if ck is not None else 1
        lowered = bool(self._bound)
        form = describe_form(N, self.constexprs.get("BLOCK_N"), ctas,
                             bool(self.constexprs.get("PERSISTENT")), self.grid[0], lowered)
        if ck is not None and "exchange=global" in str(ck.pipeline):
            form += ", exchange through global scratch"
        return f"{self.op}: launch failed for M={M}, N={N}, K={K}, {self.out.dtype}, form: {form}"

    def __call__(self) -> torch.Tensor:
        y = self.launch()
        if self.bias is not None:
            y.add_(self.bias)  # only a kernel without an epilogue bias leaves one here
        return y.view(self.out_shape)


class _on_device:
    """Make `device` current for Triton's launcher (it launches on the current device)."""

    def __init__(self, device: torch.device):
        self.index = device.index

    def __enter__(self):
        self.prev = None
        if self.index is not None and torch.cuda.current_device() != self.index:
            self.prev = torch.cuda.current_device()
            torch.cuda.set_device(self.index)

    def __exit__(self, *exc):
        if self.prev is not None:
            torch.cuda.set_device(self.prev)


def _as_2d(x: torch.Tensor) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    return x2


def _unit_k(w: torch.Tensor) -> torch.Tensor:
    return w if w.stride(-1) == 1 else w.contiguous()


def _make_out(op, x, weight, out):
    M, N = x.numel() // x.shape[-1], weight.shape[0]
    if out is None:
        return torch.empty((M, N), dtype=x.dtype, device=x.device)
    if tuple(out.shape) != (M, N) or out.dtype != x.dtype or out.device != x.device \
            or not out.is_contiguous():
        raise ValueError(f"{op}: out must be a contiguous {x.dtype} tensor of shape ({M}, {N}) on "
                         f"{x.device}, got {out.dtype} {_shape(out)} on {out.device}")
    return out


def _tma_ok(x2, w, stride_xm, stride_wn, K) -> bool:
    """Bulk tensor copies need 16-byte aligned bases and row strides."""
    esz = x2.element_size()
    return (x2.data_ptr() % 16 == 0 and w.data_ptr() % 16 == 0 and (stride_xm * esz) % 16 == 0
            and (stride_wn * esz) % 16 == 0 and (K * esz) % 16 == 0)


def sm_count(device) -> int:
    """Streaming multiprocessors of `device` (the persistent kernels launch one program per SM)."""
    return _sm_count(torch.device(device).index if torch.device(device).index is not None
                     else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _persistent_form(cfg: GemmConfig, kind: str, flags: dict, persistent: bool | None) -> bool:
    """`persistent=None` resolved for a kernel: the config's choice where it was measured to win.
    Measured on the H200 (2026-11-29, bench/results/2026-11-29/persistent/): the persistent form
    is 7-14 % faster for RMSNorm with g folded (the tile reaches the MMA unmodified) and for the
    plain GEMM; 5-10 % slower for LayerNorm folded; with g (or beta) applied to the tile in the
    loop, 8-27 % slower for RMSNorm and 2-2.5x slower for LayerNorm."""
    if persistent is not None:
        return bool(persistent)
    return cfg.persistent and kind in ("rms", "gemm") and not flags.get("HAS_G")


def num_programs(cfg: GemmConfig, M: int, N: int, sms: int, persistent: bool | None = None) -> int:
    """NUM_PROGRAMS of a launch: `sms` when the config (or `persistent`) asks for the persistent
    form and there are at least `sms` tiles; 0 (one program per tile) otherwise."""
    tiles = (-(-M // cfg.block_m)) * (-(-N // cfg.block_n))
    want = cfg.persistent if persistent is None else persistent
    return sms if want and tiles >= sms else 0


def _torch_allocator(size: int, align: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _ensure_allocator() -> None:
    """Device-side tensor descriptors live in global scratch that Triton's launcher asks for.

    `triton.set_allocator` stores the allocator in a ContextVar: it holds in the thread (context)
    that set it, not process-wide. So set it in the calling context whenever that context has
    none; a once-per-process flag is wrong: autograd runs a CUDA backward on its own worker
    thread, and when the first call came from there (the norm-backward launch), the main
    thread kept Triton's null allocator, and every later launch there that needs scratch (the
    post-norm training forward with bulk copies, K >= 1024) raises "Kernel requires a runtime
    memory allocation, but no allocator was set": the likely cause of the H200 failures of
    test_backward.py -m gpu at K >= 1024 (2026-11-30; docs/NOTES.md). A user's own allocator
    in this context is kept."""
    import triton
    if _context_allocator_missing():
        triton.set_allocator(_torch_allocator)


def _context_allocator_missing() -> bool:
    """Whether the calling context has no Triton allocator (Triton's null allocator)."""
    try:
        from triton.runtime import _allocation
        return isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    except (ImportError, AttributeError):  # another Triton layout: set it (cheap, idempotent)
        return True


def row_blocks_form(kind: str, cfg: GemmConfig, M: int, sms: int, persistent: bool,
                    row_blocks: bool | None) -> bool:
    """Whether the RMSNorm kernel walks row blocks (ROW_BLOCKS: its statistics once per row block,
    then the row's N tiles) instead of tiles: only persistent, only with at least `sms` row
    blocks; `row_blocks=None` is the measured default (ROW_BLOCKS_DEFAULT)."""
    want = ROW_BLOCKS_DEFAULT if row_blocks is None else bool(row_blocks)
    return kind == "rms" and persistent and want and -(-M // cfg.block_m) >= sms


# `row_blocks=None`. Measured on the H200 (2026-11-29, bench/results/2026-11-29/row-blocks/, g
# folded, reload staged): the row-block form takes 1.03-1.19x the tile-walking form's time in
# five of eight cells, the same in two (M=262144, K=1024, N=2048; M=K=N=8192) and 0.91x in one
# (M=8192, K=N=4096), so the tiles stay the default.
ROW_BLOCKS_DEFAULT = False


def _launch_consts(kind: str, cfg: GemmConfig, M: int, N: int, K: int, flags: dict,
                   use_tma: bool, persistent: bool, row_blocks: bool | None, sms: int) -> dict:
    """The kernel's constexprs for a launch form already resolved (`persistent`, `use_tma`);
    shared by the op and aot_compile. NUM_PROGRAMS = 0 means one program per tile."""
    rows = bool(M and N) and row_blocks_form(kind, cfg, M, sms, persistent, row_blocks)
    consts = dict(flags, EVEN_K=K % cfg.block_k == 0, USE_TMA=use_tma,
                  NUM_PROGRAMS=sms if rows else num_programs(cfg, M, N, sms, persistent),
                  **cfg.constexprs())
    if kind == "rms":
        consts["ROW_BLOCKS"] = rows
    return consts


def _prepare(op, kind, x, weight, vectors: dict, bias, eps, flags: dict, config, passes, out,
             tma=None, persistent=None, row_blocks=None):
    """Shared tail of the prepare_* functions (inputs already validated)."""
    lead = tuple(x.shape[:-1])
    x2 = _as_2d(x)
    w = _unit_k(weight)
    M, K = x2.shape
    N = w.shape[0]
    cfg = config or select_config(M, N, K, x.dtype)
    if not isinstance(cfg, GemmConfig):
        raise TypeError(f"{op}: config must be a GemmConfig, got {type(cfg).__name__}")
    y = _make_out(op, x, weight, out)
    stride_xm = x2.stride(0) if M > 1 else K
    stride_wn = w.stride(0) if N > 1 else K
    if M and N:
        _check_offsets(op, M, N, K, stride_xm, stride_wn, cfg)
    ptrs = [t.contiguous() if t is not None else w for t in vectors.values()]
    if kind == "gemm":
        args = (x2, w, y, M, N, K, stride_xm, stride_wn, N)
    else:
        args = (x2, *ptrs, w, y, bias.contiguous() if bias is not None else w, M, N, K, stride_xm,
                stride_wn, N, float(eps))
        flags = dict(flags, HAS_BIAS=bias is not None)
        bias = None  # in the epilogue
    if tma is None:
        # Measured on the H200 (2026-11-29, bench/results/2026-11-29/{pointer-loads,tma}): bulk
        # copies win when g (or beta) is applied to the A tile in the loop (295-400 vs 185-395
        # TFLOP/s) and lose when the tile goes to the MMA unmodified (272-363 vs 317-420).
        tma = any(flags.get(f) for f in ("HAS_G", "HAS_B"))
    use_tma = bool(tma) and _tma_ok(x2, w, stride_xm, stride_wn, K)
    if use_tma:
        _ensure_allocator()
    if use_tma and persistent:
        raise NotImplementedError(
            f"{op}: persistent=True with bulk tensor copies (tma) is not supported: the persistent "
            "TMA kernels left outputs unwritten on ragged shapes on the H200 (2026-11-29); pass "
            "tma=False or persistent=False")
    persistent = False if use_tma else _persistent_form(cfg, kind, flags, persistent)
    if row_blocks and kind != "rms":
        raise ValueError(f"{op}: row_blocks=True is implemented for RMSNorm only")
    sms = sm_count(x.device) if M and N else 0
    consts = _launch_consts(kind, cfg, M, N, K, flags, use_tma, persistent, row_blocks, sms)
    grid = (consts["NUM_PROGRAMS"] or (-(-M // cfg.block_m)) * (-(-N // cfg.block_n)),)
    if isinstance(passes, str) and passes == DEFAULT_PASSES:
        passes = _default_pipeline_for(kind, N, cfg.block_n)
    return PreparedLaunch(op, kind, get_launcher(kind, passes), args, consts, cfg.options(), grid,
                          cfg, y, lead + (N,), bias)


def prepare_rmsnorm_linear(x, norm_weight, weight, eps=1e-6, bias=None, *, folded=False,
                           fold=True, config: GemmConfig | None = None, passes=DEFAULT_PASSES,
                           out: torch.Tensor | None = None, tma: bool | None = None,
                           persistent: bool | None = None,
                           row_blocks: bool | None = None) -> PreparedLaunch:
    """Validate and prepare `rmsnorm_linear` without launching (see there for the arguments);
    `out` ([M, N], contiguous) is written in place when given."""
    op = "rmsnorm_linear"
    if not folded and norm_weight is None:
        raise ValueError(f"{op}: norm_weight is required unless folded=True")
    _check_inputs(op, x, weight, {"norm_weight": norm_weight}, bias)
    g = None if folded else norm_weight
    if g is not None and fold:
        weight, g = _folded(weight, g, None)[0], None
    return _prepare(op, "rms", x, weight, {"G": g}, bias, eps, {"HAS_G": g is not None},
                    config, passes, out, tma, persistent, row_blocks)


def prepare_layernorm_linear(x, norm_weight, norm_bias, weight, eps=1e-5, bias=None, *,
                             fold=True, config: GemmConfig | None = None, passes=DEFAULT_PASSES,
                             out: torch.Tensor | None = None, tma: bool | None = None,
                           persistent: bool | None = None) -> PreparedLaunch:
    """Validate and prepare `layernorm_linear` without launching."""
    op = "layernorm_linear"
    _check_inputs(op, x, weight, {"norm_weight": norm_weight, "norm_bias": norm_bias}, bias)
    if fold and (norm_weight is not None or norm_bias is not None):
        weight, extra = _folded(weight, norm_weight, norm_bias)
        if extra is not None:  # beta @ W^T (fp32), plus the Linear bias
            bias = extra + bias.float() if bias is not None else extra
        norm_weight = norm_bias = None
    return _prepare(op, "ln", x, weight, {"G": norm_weight, "B": norm_bias}, bias, eps,
                    {"HAS_G": norm_weight is not None, "HAS_B": norm_bias is not None},
                    config, passes, out, tma, persistent)


_FOLD_CACHE: "OrderedDict[tuple, tuple]" = OrderedDict()
_FOLD_CACHE_SIZE = 16


def _key(t):
    return None if t is None else (t.data_ptr(), t._version, tuple(t.shape), t.dtype, t.device)


def _folded(weight, norm_weight, norm_bias):
    """(W diag(g) in W's dtype, W beta in fp32 or None), cached per (tensor, version)."""
    key = (_key(weight), _key(norm_weight), _key(norm_bias))
    hit = _FOLD_CACHE.get(key)
    if hit is not None:
        _FOLD_CACHE.move_to_end(key)
        return hit
    from ..reference import fold_norm_weight
    w = fold_norm_weight(weight, norm_weight) if norm_weight is not None else weight
    extra = (weight.float() @ norm_bias.float()) if norm_bias is not None else None
    _FOLD_CACHE[key] = (w, extra)
    if len(_FOLD_CACHE) > _FOLD_CACHE_SIZE:
        _FOLD_CACHE.popitem(last=False)
    return w, extra


def prepare_plain_linear(x, weight, *, config: GemmConfig | None = None,
                         out: torch.Tensor | None = None, tma: bool | None = None,
                         persistent: bool | None = None, passes=()) -> PreparedLaunch:
    """The plain Triton GEMM (kernels/gemm.py), y = x @ W^T: the benchmarks' baseline.
    `passes=("hopper-ws",)` lowers it to the warp-specialized template without statistics (the
    backbone the fused ops are compared with)."""
    op = "plain_linear"
    _check_inputs(op, x, weight, {}, None)
    return _prepare(op, "gemm", x, weight, {}, None, 0.0, {}, config, passes, out, tma, persistent)


# ---------------------------------------------------------------------------------------------
# Functional API
# ---------------------------------------------------------------------------------------------

def rmsnorm_linear(x, norm_weight, weight, eps=1e-6, bias=None, *, folded=False, fold=True,
                   config: GemmConfig | None = None, passes=DEFAULT_PASSES,
                   tma: bool | None = None, persistent: bool | None = None,
                   row_blocks: bool | None = None) -> torch.Tensor:
    """y = rmsnorm(x, norm_weight, eps) @ weight^T + bias, in one kernel.

    x: [..., K]; norm_weight: [K]; weight: [N, K]; bias: [N] or None; returns [..., N] in x's
    dtype. `folded=True`: `weight` already holds W diag(g) (`normfuse.ops.fold_norm_weight`), the
    kernel skips g and `norm_weight` may be None (it is ignored otherwise). `fold=True` (default)
    folds g into W on the fly (cached per weight version); `fold=False` applies g in the k-loop.
    `bias` is added in the kernel's epilogue. `config` overrides the tile table; `passes` the
    normfuse pipeline (`()` = the naive kernel, the oracle). `tma`: read A and W tiles with
    bulk tensor copies (None: when g stays in the loop, the measured faster choice; rows must be
    16-byte aligned, else pointer loads are used). `persistent`: one program per SM
    walks the tiles (None: the config's choice; only when there are at least as many tiles as
    SMs). `row_blocks`: in the persistent form, walk row blocks instead of tiles, so that each
    row's statistics are computed once for all its N tiles (None: ROW_BLOCKS_DEFAULT).
    Under autograd (grad mode on and a tensor requiring grad) the op trains: see
    `normfuse.ops.training` (the options other than eps and bias must keep their defaults).
    """
    if _wants_grad(x, norm_weight, weight, bias):
        op = "rmsnorm_linear"
        _training_options(op, folded=folded, config=config, passes=passes, tma=tma,
                          persistent=persistent, row_blocks=row_blocks)
        if norm_weight is None:
            raise ValueError(f"{op}: norm_weight is required for training")
        with torch.no_grad():  # while torch.compile traces, the op's implementation checks
            if not torch.compiler.is_compiling():
                _check_inputs(op, x, weight, {"norm_weight": norm_weight}, bias)
        from .training import prenorm_linear_train
        return prenorm_linear_train(op, x, norm_weight, None, weight, eps, bias, False)
    return prepare_rmsnorm_linear(x, norm_weight, weight, eps, bias, folded=folded, fold=fold,
                                  config=config, passes=passes, tma=tma,
                                  persistent=persistent, row_blocks=row_blocks)()


def layernorm_linear(x, norm_weight, norm_bias, weight, eps=1e-5, bias=None, *, fold=True,
                     config: GemmConfig | None = None, passes=DEFAULT_PASSES,
                     tma: bool | None = None, persistent: bool | None = None) -> torch.Tensor:
    """y = layer_norm(x, norm_weight, norm_bias, eps) @ weight^T + bias, in one kernel.

    norm_weight / norm_bias: [K] or None (no affine scale / shift). Otherwise as
    `rmsnorm_linear`; `fold=True` (default) folds norm_weight into W and norm_bias into the
    output bias (W norm_bias), `fold=False` keeps both in the k-loop. Trains under autograd
    (`normfuse.ops.training`).
    """
    if _wants_grad(x, norm_weight, norm_bias, weight, bias):
        op = "layernorm_linear"
        _training_options(op, config=config, passes=passes, tma=tma, persistent=persistent)
        with torch.no_grad():  # while torch.compile traces, the op's implementation checks
            if not torch.compiler.is_compiling():
                _check_inputs(op, x, weight, {"norm_weight": norm_weight, "norm_bias": norm_bias},
                              bias)
        from .training import prenorm_linear_train
        return prenorm_linear_train(op, x, norm_weight, norm_bias, weight, eps, bias, True)
    return prepare_layernorm_linear(x, norm_weight, norm_bias, weight, eps, bias, fold=fold,
                                    config=config, passes=passes, tma=tma,
                                  persistent=persistent)()


def _wants_grad(*tensors) -> bool:
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                           for t in tensors)


_TRAIN_DEFAULTS = {"folded": False, "config": None, "passes": DEFAULT_PASSES, "tma": None,
                   "persistent": None, "row_blocks": None}


def _training_options(op: str, **given) -> None:
    """Training runs the default kernels: a non-default launch option is refused, by name."""
    from .postnorm_linear import DEFAULT_POSTNORM_PASSES
    for name, value in given.items():
        default = _TRAIN_DEFAULTS[name]
        if name == "passes" and value in (DEFAULT_PASSES, DEFAULT_POSTNORM_PASSES,
                                          tuple(DEFAULT_POSTNORM_PASSES)):
            continue
        if value is not default and value != default:
            raise NotImplementedError(
                f"{op}: {name}={value!r} is not supported under autograd (training uses the "
                f"default kernels); leave {name} at its default or call under torch.no_grad()")


def plain_linear(x, weight, *, config: GemmConfig | None = None) -> torch.Tensor:
    """y = x @ W^T with the plain Triton GEMM (no norm)."""
    return prepare_plain_linear(x, weight, config=config)()


# ---------------------------------------------------------------------------------------------
# Ahead-of-time compilation (CPU-only machines, CI, the repro)
# ---------------------------------------------------------------------------------------------

class _Spec:
    """Stands in for a tensor in `JITKernel.specialize`: a dtype and a 16-byte-aligned pointer."""

    def __init__(self, dtype):
        self.dtype = dtype

    def data_ptr(self) -> int:
        return 0


def aot_compile(kind: str, *, M: int = 8192, N: int = 4096, K: int = 4096,
                dtype=torch.bfloat16, has_g: bool = True, has_b: bool = True,
                config: GemmConfig | None = None, passes=DEFAULT_PASSES, target="cuda:90",
                tma: bool = False, persistent: bool | None = None, sms: int = 132,
                row_blocks: bool | None = None):
    """Compile the kernel the op would launch for an [M, K] x [N, K] problem, for `target`,
    without a GPU. The specialization (dtypes, 16-divisibility of pointers and sizes,
    constexprs, options) is the one `normfuse.jit` derives at launch time for contiguous
    inputs, so the IR and PTX are those of the real launch; `sms` stands in for the device's
    SM count (132 on the H100 SXM and H200) in the persistent form."""
    import normfuse
    cfg = config or select_config(M, N, K, dtype)
    t = _Spec(dtype)
    if kind == "rms":
        args = (t, t, t, t, t, M, N, K, K, K, N, 1e-6)
        flags = {"HAS_G": has_g, "HAS_BIAS": False}
    elif kind == "ln":
        args = (t, t, t, t, t, t, M, N, K, K, K, N, 1e-5)
        flags = {"HAS_G": has_g, "HAS_B": has_b, "HAS_BIAS": False}
    elif kind == "gemm":
        args = (t, t, t, M, N, K, K, K, N)
        flags = {}
    else:
        raise ValueError(f"unknown kernel kind '{kind}' (rms, ln, gemm)")
    consts = _launch_consts(kind, cfg, M, N, K, flags, tma,
                            _persistent_form(cfg, kind, flags, persistent), row_blocks, sms)
    # the plain GEMM takes no passes unless asked (as prepare_plain_linear)
    launcher = get_launcher(kind, () if kind == "gemm" and passes is DEFAULT_PASSES else passes)
    signature, consts, attrs, options, _ = launcher.specialize(args, dict(consts, **cfg.options()))
    return normfuse.compile(launcher.fn, signature=signature, constexprs=consts, attrs=attrs,
                            target=target, passes=launcher.passes, **options)


def kernel_for(kind: str):
    """The @triton.jit function behind kernel `kind` (for tools that compile it themselves)."""
    return _kernel(kind)
