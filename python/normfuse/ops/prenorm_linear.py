"""Pre-norm linear launches: y = norm(x) @ W^T (+ bias) by a normfuse-compiled kernel.

The bottom layer of the pre-norm ops (the autograd layer, normfuse.ops.training, and the public
functions, normfuse.ops.functional, stand above it):

    prepare_*  -> PreparedLaunch           the validated launch: arguments, config, grid, output
    select_config (kernels/configs.py)     the tile config table
    get_launcher(kind, passes)             one `normfuse.jit` launcher per kernel and pipeline
    kernels/prenorm_gemm.py                the naive kernels that the passes rewrite

With the default `passes="default"` the naive kernel is rewritten into the one-loop form
(lazy-prenorm: statistics accumulated in the GEMM's k-loop, rstd applied to the accumulator) and
lowered to the warp-specialized Hopper template (hopper-ws); for LayerNorm (SHARE_KINDS), at
SHARE_MIN_N_TILES or more N tiles per row block and SHARE_MIN_WAVES or more waves of tiles the
template computes the statistics once per row block and shares them, each warpgroup of the
coop2 schedule its half's rows, the epilogue's column-sum load issued early (`SHARE_PASS`:
hopper-ws{schedule=coop2,stats-share=true,epi-prefetch=true}). `passes=()` runs the naive
two-loop kernel untouched, which is the
numerical oracle of the tests.

What a launch takes (each is stated where it matters):
- no autograd here: tensors requiring grad under grad mode are refused (training is
  normfuse.ops.training, reached through the public functions).
- `bias` is fused into the kernel's epilogue (HAS_BIAS), after the norm-scaled accumulator.
- By default (`fold=True`) the norm scale offset + g is folded into W (W diag(offset + g) in
  fp32, cached per weight version) and, for LayerNorm, beta into the output bias (W beta): the A
  tile then reaches the MMA unmodified, which is the fast path of the lazy form. `fold=False`
  keeps g (and beta) in the k-loop, as the naive kernel has them (offset + g rounded to g's dtype).
- weight: one [N, K] tensor or a list of siblings [N_i, K] (one [sum N_i, K] weight: a view when
  they are adjacent in one buffer, else concatenated once per weight version); any strides
  (a weight that is not unit-stride along K is copied once per version, or folded).
- Hopper (sm_90) only; bf16/fp16 only, every tensor of one dtype; 32-bit offsets in the kernels.
- x is [..., K] with any leading dims; x is made unit-stride along K (a copy when it is not),
  its row stride is passed through as is.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Any

import torch

from ..direct_launch import resolve as resolve_launch
from ..device import (LaunchFailure, cuda_state, describe_kernel,
                      ensure_allocator as _ensure_allocator, ensure_cluster_launch)
from ..kernels.configs import GemmConfig, select_config
from ..lowering.launch import provide_column_sums
from ..reference import fold_norm_weight
from .common import (WEIGHTS, adjacent, as_lists, cat_biases, check_hopper, check_prenorm,
                     fused_unavailable, joined_view, shape_str, sm_count)
from .norm import (FOLD_TILE, fold_columns,  # noqa: F401  (FOLD_TILE: the fold kernel's tile)
                   fold_columns_dot)

__all__ = ["prepare_rmsnorm_linear",
           "prepare_layernorm_linear", "prepare_plain_linear", "plain_linear", "PreparedLaunch",
           "get_launcher", "aot_compile", "kernel_for", "DEFAULT_PASSES"]

# The default pipeline (pipeline.DEFAULT_PIPELINE): lazy-prenorm fuses the statistics into the
# k-loop, hopper-ws lowers the fused loop to the warp-specialized template.
DEFAULT_PASSES = "default"
# With the default passes and at least this many N tiles per row block, the pre-norm ops run the
# default pipeline with SHARE_PASS, hopper-ws{schedule=coop2,stats-share=true,epi-prefetch=true}
# (below): the row statistics computed once per row
# block and shared with its other tiles instead of recomputed in every tile. Measured on the H200
# (2026-12-01, bench/results/2026-12-01/stats-share-stamped, ratios of the same run): at 8 and
# more N tiles RMSNorm 0.93-1.01x and LayerNorm 0.89-0.97x the per-tile time; at 2 and 4 N tiles
# RMSNorm 1.00-1.06x and LayerNorm 0.97-1.05x (the row block's first tile still pays for the
# statistics and the tile order spreads a row block over two waves).
# The shared statistics make a tile wait for another CTA's tile: they assume that every CTA of
# the persistent grid is resident at once (one per SM). Where SMs are withheld from the launch
# (MPS or green-context SM limits, or two such launches running at once on two streams), set
# NORMFUSE_STATS_SHARE=0 to keep the per-tile statistics.
# The share order also needs enough tiles: measured on the H200 at the models' shapes
# (2026-12-01, bench/results/2026-12-01/model-shapes, fused / cuBLAS, per-tile vs shared), with
# fewer than SHARE_MIN_WAVES waves of tiles (tiles < 4 x 132 SMs) the shared form lost in 5 of 7
# cells with 8+ N tiles (Qwen2 q/k/v 4096 x 1536 x 2048: 1.125 vs 1.508; 8192: 1.106 vs 1.309;
# Llama q/k/v 4096 x 2048 x 3072: 1.116 vs 1.354) and won in 2 by at most 6 % (GPT-2 c_attn
# 4096 x 1280 x 3840: 1.180 vs 1.109); from 4 waves on it won in 19 of 20 cells (up to 0.88 vs
# 1.07), and lost one by 1 % (Qwen2 q/k/v 16384: 1.081 vs 1.071).
# RMSNorm no longer shares: its per-tile statistics on the coop2 schedule (hopper-ws's auto
# choice, with release-early) measured faster (2026-12-02, bench/results/2026-12-02/session15,
# fused / cuBLAS over the models' 36 RMSNorm cells: coop2 release-early fastest in 25, elsewhere
# within 2.7 % of the fastest (the shared form or the old default); blog cells at N = 2048: 1.054 / 1.049 / 1.096 against 1.058 / 1.062 /
# 1.069). LayerNorm's shared statistics still win at 8+ N tiles (GPT-2's c_attn and c_fc), and
# on the coop2 schedule (each warpgroup sharing its half's rows) rather than coop: blog cells at
# N = 2048 (8 tiles), fused / cuBLAS, 3 interleaved rounds in one run (H200, 2026-12-04,
# bench/results/2026-12-04/session30/ab-ln-share): K = 512 / 1024 / 2048 1.099 / 1.049 / 1.094
# against coop with sharing 1.142 / 1.072 / 1.092 and coop2 without it 1.114 / 1.074 / 1.090.
# With epi-prefetch (the epilogue's column-sum load issued before the tile's wait): H200,
# 2026-12-05 (bench/ab_order.py, 3 interleaved rounds in one run, the same bits; bench/results/
# 2026-12-05/session32/): N = 2048, K = 512 / 1024 / 2048 1.074 / 1.067 / 1.051 against
# 1.109 / 1.073 / 1.061 without it. (Without the shared statistics it won nothing: the plain
# hopper-ws 1.128 -> 1.134, 1.082 -> 1.115 at N = 512, 1.182 -> 1.106 at K = 2048, N = 512.)
SHARE_PASS = "hopper-ws{schedule=coop2,stats-share=true,epi-prefetch=true}"
SHARE_KINDS = ("ln",)
SHARE_MIN_N_TILES = 8
SHARE_MIN_WAVES = 4


def _default_pipeline_for(kind: str, N: int, block_n: int, M: int | None = None,
                          block_m: int = 128, sms: int = 132):
    """The pipeline the pre-norm ops run under `passes="default"`: for SHARE_KINDS, shared
    statistics from SHARE_MIN_N_TILES N tiles per row block and SHARE_MIN_WAVES waves of tiles over `sms`
    programs (M None: the tile count is not checked)."""
    import os
    from ..pipeline import DEFAULT_PIPELINE
    n_tiles = -(-N // block_n)
    waves_ok = M is None or n_tiles * -(-M // block_m) >= SHARE_MIN_WAVES * max(1, sms)
    if (kind in SHARE_KINDS and n_tiles >= SHARE_MIN_N_TILES and waves_ok
            and os.environ.get("NORMFUSE_STATS_SHARE", "1") != "0"):
        return ",".join(DEFAULT_PIPELINE[:-1]) + "," + SHARE_PASS
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
    return shape_str(t)


def _check_inputs(op: str, x, weight, named: dict[str, Any], bias) -> None:
    """The launch path's checks: the shared ones (shapes, one dtype and device, bf16/fp16), no
    tensor requiring grad under grad mode, a Hopper GPU. `weight`/`bias`: a tensor or a list
    (siblings)."""
    ws, bs = as_lists(op, weight, bias)
    check_prenorm(op, x, ws, bs, named, fused=True)
    _no_grad_check(op, (x, *ws, *named.values(), *(bs or ())))
    _check_hopper(op, x.device)


def _no_grad_check(op: str, tensors) -> None:
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors):
        raise NotImplementedError(
            f"{op}: this launch path is inference-only (autograd goes through the functional "
            f"op, e.g. normfuse.ops.rmsnorm_linear): call it under torch.no_grad() or "
            f"torch.inference_mode(), or with tensors that do not require grad")


def _check_hopper(op: str, device: torch.device) -> None:
    check_hopper(op, device)


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
            except RuntimeError as e:  # in the op's terms: shapes, dtype, form
                failure = launch_failure(e, self.describe(), ck)
                if failure is e:
                    raise
                raise failure from e
        return self.out

    def describe(self, lowered: bool | None = None) -> str:
        """'linear_rmsnorm: launch failed for M=257, N=3072, K=512, torch.bfloat16, form: 12-CTA
        clusters, ...' (what a launch failure names). `lowered`: whether the lowered kernel is
        the one launched (default: as this launch decided)."""
        from .cluster_form import describe_form
        M, N = self.out.shape
        x = self.runtime_args[0] if self.runtime_args else None
        K = x.shape[-1] if isinstance(x, torch.Tensor) else "?"
        ck = self._compiled
        ctas = int(ck.kernel.metadata.num_ctas or 1) if ck is not None else 1
        lowered = bool(self._bound) if lowered is None else lowered
        persistent = bool(self.constexprs.get("PERSISTENT") or self.constexprs.get("NUM_PROGRAMS"))
        form = describe_form(N, self.constexprs.get("BLOCK_N"), ctas, persistent, self.grid[0],
                             lowered)
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


class LaunchPlan:
    """A launch decided once per argument geometry (shapes, strides, dtypes, device, 16-byte
    alignment of every pointer): the compiled kernel, the lowered kernel's plan or Triton's
    launcher, the grid, the scalar arguments. `run(tensors)` launches the tensor arguments of a
    call of that geometry (new addresses) with no validation, specialization or compilation.

    Made from a PreparedLaunch whose first `n_tensors` runtime arguments are the tensors. A
    cluster kernel's launch is made possible here, once (`normfuse.device.ensure_cluster_launch`:
    the driver's occupancy query, which allows clusters of 9-15 CTAs; LaunchFailure when the
    device fits none), so `run` makes no driver query. A launch error is re-raised as a
    LaunchFailure naming the op, the shapes, the dtype and the form (`what`, kept from the
    PreparedLaunch; building it costs nothing per call)."""

    __slots__ = ("tail", "lowered", "runner", "consts", "rest", "dev_index", "empty", "config",
                 "compiled", "what")

    def __init__(self, prepared: "PreparedLaunch", n_tensors: int):
        # keeps no tensor of the call it was made from (those are the caller's)
        p = prepared
        self.config = p.config
        self.tail = tuple(p.runtime_args[n_tensors:])
        self.dev_index = p.out.device.index
        self.empty = p.grid[0] == 0
        self.lowered = self.runner = None
        self.compiled = self.what = None
        if self.empty:
            return
        ck = self.compiled = p.compile()
        if ck.lowered is not None:
            why = ck.lowered.why_not(p.runtime_args)
            if why is None:
                with _on_device(p.out.device):
                    self.lowered = ck.lowered.prepare(p.runtime_args)
                self.what = p.describe(lowered=True)
                return
            import warnings
            warnings.warn(f"normfuse: {ck.kernel.name}: running the unlowered kernel: {why}",
                          RuntimeWarning, stacklevel=4)
        fn = p.launcher.fn
        n = len(p.runtime_args)
        if sorted(fn.constexprs) != list(range(n, len(fn.arg_names))):
            raise NotImplementedError(f"{fn.__name__}: constexpr parameters before runtime ones")
        self.consts = tuple(p.constexprs[fn.arg_names[i]] for i in sorted(fn.constexprs))
        self.rest = self.tail + self.consts  # what follows the tensors in the runner's arguments
        grid = tuple(p.grid) + (1,) * (3 - len(p.grid))
        with _on_device(p.out.device):
            # Triton's launcher resolved to its C function (normfuse.direct_launch), else its
            # runner; either loads the module on the device
            self.runner = resolve_launch(ck.kernel, grid) or ck.kernel[grid]
            if ck.kernel.metadata.num_ctas != 1:
                try:
                    ensure_cluster_launch(ck.kernel)
                except LaunchFailure as e:
                    raise e.for_op(p.describe()) from e
        self.what = p.describe()

    def run(self, tensors: tuple) -> None:
        if self.empty:
            return
        idx = self.dev_index
        if idx is not None and cuda_state.device() != idx:
            with torch.cuda.device(idx):
                self._launch(tensors)
        else:
            self._launch(tensors)

    def _launch(self, tensors) -> None:
        try:
            if self.lowered is not None:
                self.lowered.run(tensors + self.tail)
            else:
                self.runner(*tensors, *self.rest)
        except RuntimeError as e:  # (a try costs nothing until something is raised)
            failure = launch_failure(e, self.what, self.compiled)
            if failure is e:
                raise
            raise failure from e


def launch_failure(e: RuntimeError, what: str, ck) -> RuntimeError:
    """A launch's RuntimeError in the op's terms (`what`: PreparedLaunch.describe()): a
    LaunchFailure for one from normfuse's launch or a CUDA error from Triton's launcher; any
    other error unchanged."""
    if isinstance(e, LaunchFailure):
        return e.for_op(what)
    if "Triton Error [CUDA]" not in str(e):
        return e
    k = ck.kernel
    return LaunchFailure(f"{what} [{describe_kernel(k)}]", str(e),
                         num_ctas=int(k.metadata.num_ctas or 1), shared=int(k.metadata.shared))


class PlanCache(dict):
    """Launch plans by geometry key; cleared when it outgrows `size` (a model has a few dozen
    geometries; the bound only matters for callers that vary shapes without end)."""

    def __init__(self, size: int = 1024):
        super().__init__()
        self.size = size
        self.built = 0

    def add(self, key, plan):
        if len(self) >= self.size:
            self.clear()
        self[key] = plan
        self.built += 1
        return plan


def _ptr_key(t):
    """What a launch plan depends on of an optional [L] vector operand."""
    return None if t is None else (t.dtype, t.data_ptr() & 15)


_PRE_PLANS = PlanCache()


def weights_key(w, *vectors) -> tuple:
    """What a launch plan depends on of the weight operands (their geometry and alignment)."""
    return (w.shape, w.stride(), w.data_ptr() & 15, *map(_ptr_key, vectors))


def prenorm_plan_key(kind: str, x2, eps: float, wkey: tuple) -> tuple:
    """The key of `launch_prenorm`'s plan for the [M, K] unit-stride x2 and the weights' key."""
    return (kind, eps, x2.shape, x2.stride(), x2.dtype, x2.device, x2.data_ptr() & 15, wkey)


def prenorm_plan_made(kind: str, x, eps: float, wkey: tuple) -> "LaunchPlan | None":
    """The plan `launch_prenorm` made for x [..., K] (as it passes x), or None."""
    x2 = x if x.dim() == 2 and x.stride(1) == 1 else _as_2d(x)
    return _PRE_PLANS.get(prenorm_plan_key(kind, x2, eps, wkey))


def launch_prenorm(op: str, kind: str, x, w, g, beta, bias, eps: float, wkey=None) -> torch.Tensor:
    """The default fused launch of a pre-norm kernel, planned once per geometry: x [..., K]
    (checked by the caller), w [N, K] with unit stride along K, g / beta [K] and bias [N]
    contiguous or None (kind "rms" takes no beta). `wkey`: weights_key(w, g, beta, bias) when
    the caller has it. Returns y [..., N] in x's dtype."""
    x2 = x if x.dim() == 2 and x.stride(1) == 1 else _as_2d(x)
    key = prenorm_plan_key(kind, x2, eps, wkey or weights_key(w, g, beta, bias))
    plan = _PRE_PLANS.get(key)
    if plan is None:
        plan = _PRE_PLANS.add(key, LaunchPlan(*_default_prepared(op, kind, x2, w, g, beta, bias,
                                                                 eps)))
    M, N = x2.shape[0], w.shape[0]
    y = torch.empty((M, N), dtype=x2.dtype, device=x2.device)
    plan.run(_plan_tensors(kind, x2, w, g, beta, y, bias))
    return y if x.dim() == 2 else y.view(*x.shape[:-1], N)


def _default_prepared(op, kind, x2, w, g, beta, bias, eps) -> tuple:
    """(the default pipeline's PreparedLaunch, how many of its runtime arguments are the call's
    tensors): what a pre-norm launch plan is made from."""
    vectors = {"G": g} if kind == "rms" else {"G": g, "B": beta}
    flags = {f"HAS_{n}": t is not None for n, t in vectors.items()}
    p = _prepare(op, kind, x2, w, vectors, bias, eps, flags, None, DEFAULT_PASSES, None)
    return p, 5 if kind == "rms" else 6


def _plan_tensors(kind, x2, w, g, beta, y, bias) -> tuple:
    """A pre-norm plan's tensor arguments (rms: x, g, w, y, bias; ln: x, g, beta, w, y, bias;
    an absent one is w, which the kernel does not read)."""
    if kind == "rms":
        return (x2, w if g is None else g, w, y, w if bias is None else bias)
    return (x2, w if g is None else g, w if beta is None else beta, w, y,
            w if bias is None else bias)


class SplitPlan:
    """A pre-norm launch over sibling weights whose outputs must be separate contiguous tensors
    (q / k / v, gate / up): the joined weight's plan (`LaunchPlan`), and its lowered kernel
    with a split output (`LoweredLaunch.split`: each N tile stored into the member holding its
    columns, one GEMM). Where that cannot run (the kernel not lowered, a member's first column
    no multiple of the tile's width, a width whose rows are not 16-byte aligned) each member
    runs its own fused launch over its rows of the weight (`members`, made by the caller from
    `member_prepared`; the reason in a RuntimeWarning, once per geometry). Measured on the H200
    (2026-12-02, bench/results/2026-12-02/session12/split_ab.json, Llama / Qwen2 q/k/v and
    gate/up at T = 8192): a launch per member 0.109-0.691 ms against 0.131-0.999 ms for the
    joined launch and a copy of its columns, so the fallback launches per member."""

    __slots__ = ("base", "widths", "lowered", "why", "dev_index", "members")

    def __init__(self, prepared: "PreparedLaunch", n_tensors: int, widths: tuple,
                 member_prepared=None):
        """member_prepared(i) -> (PreparedLaunch, n_tensors) of member i alone (its rows of the
        weight and its bias): the fallback's plans, made only where the split cannot run."""
        self.base = base = LaunchPlan(prepared, n_tensors)
        self.widths = widths
        self.lowered = None
        self.members = None
        self.dev_index = base.dev_index
        starts = tuple(itertools.accumulate(widths))[:-1]
        self.why = why = None
        if base.empty:
            return
        ll = base.compiled.lowered
        esz = prepared.out.element_size()
        if base.lowered is None:
            why = "the kernel was not lowered"
        elif len(widths) > 4:
            why = f"{len(widths)} members (a split output has at most 4)"
        elif any(s % ll.plan.config.block_n for s in starts):
            why = (f"the members' first columns {list(starts)} are not multiples of the tile's "
                   f"{ll.plan.config.block_n} columns")
        elif any((w * esz) % 16 for w in widths):
            why = f"a member's rows are not 16-byte aligned (widths {list(widths)})"
        if why is None:
            try:
                with _on_device(prepared.out.device):
                    self.lowered = ll.split(starts).prepare(prepared.runtime_args)
                return
            except Exception as e:  # noqa: BLE001 - a lowering bug must not cost the op
                why = f"the split kernel failed to build: {type(e).__name__}: {e}"
        self.why = why
        if member_prepared is not None:
            self.members = [LaunchPlan(*member_prepared(i)) for i in range(len(widths))]
        import warnings
        how = ("one fused launch per member" if self.members is not None
               else "the joined output's columns copied out")
        warnings.warn(f"normfuse: {base.compiled.kernel.name}: the siblings run as {how} "
                      f"({why})", RuntimeWarning, stacklevel=4)

    def member_slices(self, tensors: tuple) -> "list | None":
        """The fallback's per-member (w_i, bias_i) row slices of a call's joined w and bias
        (None where the split runs): a launch-ready caller keeps them, so that what a member's
        lowered launch derives from its weight (LayerNorm's column sums) is found again by the
        slice's identity instead of recomputed for a new slice every call."""
        if self.lowered is not None or self.members is None:
            return None
        # (w, y, bias are the last three: _plan_tensors; an absent bias's slot holds w, which
        # the kernel does not read, so slicing it is harmless)
        w, bias = tensors[-3], tensors[-1]
        out, a = [], 0
        for n in self.widths:
            out.append((w[a:a + n], bias[a:a + n]))
            a += n
        return out

    def run(self, tensors: tuple, outs: list, slices=None) -> None:
        """Launch for the call's tensors (the joined plan's, with any [M, N] tensor in the
        output's place) into `outs` (contiguous [M, N_i] members; the fallback launches each
        member's plan over its rows of w and bias (`slices`: `member_slices` of these tensors,
        kept by the caller), or without member plans writes a joined [M, N] output and copies
        from it)."""
        base = self.base
        if base.empty:
            return
        if self.lowered is None and self.members is not None:
            head = tensors[:-3]
            for plan, o, (w, b) in zip(self.members, outs,
                                       slices or self.member_slices(tensors)):
                plan.run(head + (w, o, b))
            return
        if self.lowered is None:
            joined = outs[0].new_empty(outs[0].shape[0], sum(self.widths))
            base.run(tensors[:-2] + (joined, tensors[-1]))  # (y is next to last: _plan_tensors)
            a = 0
            for o, w in zip(outs, self.widths):
                o.copy_(joined[:, a:a + w])
                a += w
            return
        idx = self.dev_index
        try:
            if idx is not None and cuda_state.device() != idx:
                with torch.cuda.device(idx):
                    self.lowered.run(tensors + base.tail, outs)
            else:
                self.lowered.run(tensors + base.tail, outs)
        except RuntimeError as e:
            failure = launch_failure(e, base.what, base.compiled)
            if failure is e:
                raise
            raise failure from e


_SPLIT_PLANS = PlanCache()


def launch_prenorm_split(op: str, kind: str, x, w, g, beta, bias, eps: float, widths: tuple,
                         wkey=None) -> list:
    """`launch_prenorm` for sibling weights joined in w ([sum N_i, K]) whose outputs are
    separate contiguous [..., N_i] tensors (`SplitPlan`: one GEMM storing each tile into its
    member). Returns the list of members."""
    x2 = x if x.dim() == 2 and x.stride(1) == 1 else _as_2d(x)
    widths = tuple(int(n) for n in widths)
    key = (prenorm_plan_key(kind, x2, eps, wkey or weights_key(w, g, beta, bias)), widths)
    plan = _SPLIT_PLANS.get(key)
    if plan is None:
        starts = (0, *itertools.accumulate(widths))

        def member(i):
            a, b = starts[i], starts[i + 1]
            return _default_prepared(op, kind, x2, w[a:b], g, beta,
                                     None if bias is None else bias[a:b], eps)
        plan = _SPLIT_PLANS.add(key, SplitPlan(*_default_prepared(op, kind, x2, w, g, beta, bias,
                                                                  eps), widths, member))
    M = x2.shape[0]
    lead = x.shape[:-1]
    outs = [torch.empty((*lead, n), dtype=x2.dtype, device=x2.device) for n in widths]
    flat = outs if x.dim() == 2 else [o.view(M, o.shape[-1]) for o in outs]
    # (member 0 in the output's slot of the joined kernel's arguments: the plan's geometry)
    plan.run(_plan_tensors(kind, x2, w, g, beta, flat[0], bias), flat)
    return outs


def split_plan_made(kind: str, x, eps: float, wkey: tuple, widths) -> "SplitPlan | None":
    """The plan `launch_prenorm_split` made for x [..., K], or None."""
    x2 = x if x.dim() == 2 and x.stride(1) == 1 else _as_2d(x)
    return _SPLIT_PLANS.get((prenorm_plan_key(kind, x2, eps, wkey), tuple(widths)))


def _as_2d(x: torch.Tensor) -> torch.Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    return x2


def _unit_k(w: torch.Tensor, cache: bool = True) -> torch.Tensor:
    """w with unit stride along K: itself, or a copy cached per weight version (a strided view
    such as GPT-2 Conv1D's weight.t() is not copied on every call)."""
    if w.stride(-1) == 1:
        return w
    return WEIGHTS.get("unit-k", (w,), None, w.contiguous, cache)


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
             tma=None, persistent=None, row_blocks=None, cache=True):
    """Shared tail of the prepare_* functions (inputs already validated)."""
    lead = tuple(x.shape[:-1])
    x2 = _as_2d(x)
    w = _unit_k(weight, cache)
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
        passes = _default_pipeline_for(kind, N, cfg.block_n, M, cfg.block_m, sms)
    return PreparedLaunch(op, kind, get_launcher(kind, passes), args, consts, cfg.options(), grid,
                          cfg, y, lead + (N,), bias)


def prepare_rmsnorm_linear(x, norm_weight, weight, eps=1e-6, bias=None, *, offset=0.0,
                           folded=False, fold=True, config: GemmConfig | None = None,
                           passes=DEFAULT_PASSES, out: torch.Tensor | None = None,
                           tma: bool | None = None, persistent: bool | None = None,
                           row_blocks: bool | None = None,
                           cache_weights: bool = True) -> PreparedLaunch:
    """Validate and prepare `rmsnorm_linear` without launching (see there for the arguments);
    `out` ([M, sum N_i], contiguous) is written in place when given. `cache_weights=False`:
    derived weights (folded, concatenated, unit-stride copies) are made for this launch only
    (training, where the weights change every step)."""
    c = cache_weights
    op = "rmsnorm_linear"
    if not folded and norm_weight is None:
        raise ValueError(f"{op}: norm_weight is required unless folded=True")
    g = None if folded else norm_weight
    _check_offset(op, offset, g)
    _check_inputs(op, x, weight, {"norm_weight": g}, bias)
    w, bias = _joined(weight, bias, c)
    if g is not None and fold:
        w, g = folded_weight(w, g, offset, c), None
    elif g is not None:
        g = _offset_weight(g, offset, c)
    return _prepare(op, "rms", x, w, {"G": g}, bias, eps, {"HAS_G": g is not None},
                    config, passes, out, tma, persistent, row_blocks, c)


def prepare_layernorm_linear(x, norm_weight, norm_bias, weight, eps=1e-5, bias=None, *,
                             offset=0.0, fold=True, config: GemmConfig | None = None,
                             passes=DEFAULT_PASSES, out: torch.Tensor | None = None,
                             tma: bool | None = None, persistent: bool | None = None,
                             cache_weights: bool = True) -> PreparedLaunch:
    """Validate and prepare `layernorm_linear` without launching (`cache_weights`: as
    prepare_rmsnorm_linear)."""
    op = "layernorm_linear"
    c = cache_weights
    _check_offset(op, offset, norm_weight)
    _check_inputs(op, x, weight, {"norm_weight": norm_weight, "norm_bias": norm_bias}, bias)
    w, bias = _joined(weight, bias, c)
    if fold and (norm_weight is not None or norm_bias is not None):
        w, bias = fold_norm(w, norm_weight, norm_bias, bias, offset, c)
        norm_weight = norm_bias = None
    elif norm_weight is not None:
        norm_weight = _offset_weight(norm_weight, offset, c)
    return _prepare(op, "ln", x, w, {"G": norm_weight, "B": norm_bias}, bias, eps,
                    {"HAS_G": norm_weight is not None, "HAS_B": norm_bias is not None},
                    config, passes, out, tma, persistent, None, c)


def _check_offset(op: str, offset, g) -> None:
    if not isinstance(offset, (int, float)) or isinstance(offset, bool):
        raise TypeError(f"{op}: offset must be a float, got {type(offset).__name__}")
    if offset != 0 and g is None:
        raise ValueError(f"{op}: offset={offset} needs norm_weight (the norm's scale is "
                         f"offset + norm_weight)")


def folded_weight(w: torch.Tensor, g: torch.Tensor, offset: float = 0.0,
                  cache: bool = True) -> torch.Tensor:
    """W diag(offset + g) in W's dtype (computed in fp32), cached per weight version."""
    with torch.no_grad():
        return WEIGHTS.get("fold", (w, g), float(offset),
                           lambda: fold_now(w, g, float(offset)), cache)


def fold_now(w: torch.Tensor, g: torch.Tensor, offset: float = 0.0) -> torch.Tensor:
    """W diag(offset + g), computed now: `reference.fold_norm_weight` bit for bit. On an sm_90
    GPU for 16-bit W with unit stride along K, g a unit-stride vector: one launch of the
    `scale_columns` kernel (fp32 math, one rounding; torch's broadcast multiply of a row
    vector is not vectorized). Elsewhere one torch multiply where that is exact (offset 0, g
    in W's dtype, W contiguous: torch multiplies 16-bit tensors in fp32 and rounds once, as the
    reference's fp32 product cast back), else the reference."""
    if (w.is_cuda and w.dim() == 2 and w.dtype in (torch.bfloat16, torch.float16)
            and w.stride(-1) == 1 and g.dim() == 1 and g.shape[0] == w.shape[1]
            and g.device == w.device and fused_unavailable(w.device) is None):
        return fold_columns(w, g if g.stride(0) == 1 else g.contiguous(), float(offset))
    if not offset and g.dtype == w.dtype and w.is_contiguous():
        return w * g
    return fold_norm_weight(w, g, offset=offset)


def fold_norm(w: torch.Tensor, g, beta, bias, offset: float = 0.0, cache: bool = True):
    """The norm's affine parameters folded into the GEMM (fold=True): (W diag(offset + g), the
    epilogue's bias). LayerNorm's shift becomes beta W^T in fp32 (from the unfolded W), plus the
    Linear bias: one fp32 vector. g and beta may be None; `cache`: WEIGHTS' (per version).
    With beta on an sm_90 GPU (16-bit W with unit stride along K): both from one launch of
    `fold_columns_dot` (the training forward's fold runs every step)."""
    if beta is not None and _fold_dot_applies(w, g, beta, bias):
        def both():
            vec = lambda t: t if t is None or t.stride(0) == 1 else t.contiguous()  # noqa: E731
            folded, extra, sums = fold_columns_dot(w, vec(g), vec(beta), vec(bias), float(offset))
            if folded is not None:  # (its launch's column sum: summed on the way)
                provide_column_sums(folded, sums)
            return folded, extra
        with torch.no_grad():
            folded, extra = WEIGHTS.get("fold+w-beta", (w, g, beta, bias), float(offset), both,
                                        cache)
        return (folded if folded is not None else w), extra
    if beta is not None:
        extra = WEIGHTS.get("w-beta", (w, beta), None, lambda: w.float() @ beta.float(), cache)
        if bias is not None:
            extra = WEIGHTS.get("w-beta+b", (w, beta, bias), None,
                                lambda: extra + bias.float(), cache)
        bias = extra
    if g is not None:
        w = folded_weight(w, g, offset, cache)
    return w, bias


def _fold_dot_applies(w, g, beta, bias) -> bool:
    """Whether LayerNorm's fold runs as one `fold_columns_dot` launch: W on an sm_90 GPU, 2-D,
    16 bits, unit stride along K; g (if any) and beta [K], bias (if any) [R], on W's device."""
    if not (w.is_cuda and w.dim() == 2 and w.dtype in (torch.bfloat16, torch.float16)
            and w.stride(-1) == 1):
        return False
    R, K = w.shape
    vecs = ((g, K), (beta, K), (bias, R))
    return (all(t is None or (t.dim() == 1 and t.shape[0] == n and t.device == w.device)
                for t, n in vecs)
            and fused_unavailable(w.device) is None)


def _offset_weight(g: torch.Tensor, offset: float, cache: bool = True) -> torch.Tensor:
    """offset + g where a kernel reads the norm weight: rounded to g's dtype (cached)."""
    if offset == 0:
        return g
    with torch.no_grad():
        return WEIGHTS.get("offset", (g,), float(offset),
                           lambda: (g.float() + float(offset)).to(g.dtype), cache)


def _joined(weight, bias, cache: bool = True):
    """Siblings as one weight [sum N_i, K] and one bias (or None), for a launch: adjacent views
    of one buffer without a copy; others concatenated once per weight version (cached)."""
    if isinstance(weight, torch.Tensor):
        return weight, bias
    ws = tuple(weight)
    bs = None if bias is None or all(b is None for b in bias) else tuple(bias)
    w = (joined_view(ws) if adjacent(ws)
         else WEIGHTS.get("cat", ws, None, lambda: torch.cat(ws), cache))
    if bs is None:
        return w, None
    sizes = tuple(v.shape[0] for v in ws)
    return w, WEIGHTS.get("cat-bias", bs, sizes, lambda: cat_biases(ws, bs), cache)


def prepare_plain_linear(x, weight, *, config: GemmConfig | None = None,
                         out: torch.Tensor | None = None, tma: bool | None = None,
                         persistent: bool | None = None, passes=()) -> PreparedLaunch:
    """The plain Triton GEMM (kernels/gemm.py), y = x @ W^T: the benchmarks' baseline.
    `passes=("hopper-ws",)` lowers it to the warp-specialized template without statistics (the
    backbone the fused ops are compared with)."""
    op = "plain_linear"
    _check_inputs(op, x, weight, {}, None)
    return _prepare(op, "gemm", x, weight, {}, None, 0.0, {}, config, passes, out, tma, persistent)


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
