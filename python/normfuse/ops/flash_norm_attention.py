"""FlashNormAttention (issue 12): out = RMSNorm(attend(LayerNorm(x)) + LayerNorm(x)) + x in one kernel.

    flash_norm_attention(x, k, v, offsets, ...)      the public op (differentiable: custom op +
                                                    autograd; the backward is
                                                    normfuse.ops.flash_norm_attention_bwd)
    flash_norm_attention_fwd(...) -> (out, mean, rstd, rrms)   the forward and its saved statistics
    prepare_flash_norm_attention(...) -> PreparedFNA  a validated launch (what the benchmarks time)
    kernels/attention.py                            the naive kernel that the passes rewrite

Definition and conventions: `normfuse.reference_attention` (activations "gelu_tanh" (default),
"silu", "relu", "relu2" for GDPA, `P = act(q K^T) * qk_scale`, qk_scale after the activation,
default 1.0; "softmax" for ordinary attention, `softmax(q K^T * qk_scale)`, default 1/sqrt(D)).
Layout: x [T, H, D] bf16/fp16 jagged by `offsets` (int32/int64, B + 1 entries, non-decreasing,
from 0 to T); k, v [B, L, Hkv, D] with H % Hkv == 0 (GQA); ln_weight, ln_bias, rms_weight [H * D]
in x's dtype (each optional). `max_seqlen` is accepted for API compatibility and unused (the
grid comes from the offsets).

The default pipeline (`DEFAULT_FNA_PASSES`): `cluster-reduce` deals the heads of a row block to
the CTAs of a thread-block cluster (one head each for H <= 16) and exchanges both the LayerNorm's
(sum, sum of squares: one exchange) and the RMSNorm's (sum of squares) row statistics over DSMEM;
`epilogue-norm` normalizes the attention output in registers (no unnormalized store and reload);
`residual-acc` starts the P V accumulator at LN(x) when the KV loop has several tiles (Triton
already does it for one); cluster-reduce's `early-loads` issues the loads that do not need an
exchange while its barrier waits, and `hoist-loads` loads K and V once per program, which walks
up to `ROWS_PER_PROGRAM` rows of one sequence (`rows_per_program`), and `reuse-loads` (across
dots) loads the head's x tile once per row block for the statistics, the attention and the
residual. `passes=()` launches the naive kernel unchanged (the oracle).
Validation reads `offsets` on the host once per offsets tensor and version (a sync the first
time; `ops.common.host_offsets` keeps the copy, so a model's layers sharing one offsets tensor
read it once and a CUDA graph can capture the later calls); it also sizes the grid to the exact
number of row blocks. `prepare_flash_norm_attention(...).launch()` does not read them again.

Where the kernels do not run (tensors not on a Hopper GPU, or x in float32 / float64), the public
op and the custom ops compute the same function with reference math in the compute dtype (fp32;
fp64 for fp64 x), the backward in closed form (`reference_attention.flash_norm_attention_grads`),
with one `FallbackWarning`: a model with FlashNormAttention runs, trains and compiles on the CPU.
The launchers (`flash_norm_attention_fwd`, `prepare_flash_norm_attention`) take CUDA tensors only.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from ..reference_attention import (ACTIVATIONS, default_qk_scale, flash_norm_attention_grads,
                                   flash_norm_attention_ref)
from .common import (FALLBACK_DTYPES, FUSED_DTYPES, cached_row_block_table, host_offsets,
                     no_double_backward, register_autograd, row_block_count)
from .fallback import compute_dtype
from .inference import route

__all__ = ["flash_norm_attention", "flash_norm_attention_fwd", "prepare_flash_norm_attention",
           "DEFAULT_FNA_PASSES", "MMA_FNA_PASSES", "DEFAULT_LN_MMA", "PreparedFNA",
           "AHEAD_FNA_PASSES", "AHEAD_MMA_FNA_PASSES", "with_merge", "CARRY_FNA_PASSES",
           "CARRY_MMA_FNA_PASSES", "with_carry"]

# The heads' statistics gathered once per row (`cluster-reduce{gather=once}`): the DSMEM read of
# the totals is one asm per row into the CTA's own slots instead of an elementwise asm that
# Triton's layout pass copies into every layout its users want (20 copies; ptxas spills 1.1-1.9
# KB a thread, growing with H). Same bits. H200, 2026-12-03 (bench_attention's full grid, B = 768,
# L = D = 128, 64 x 4 warps): 0.89-0.95x the per-use gather's time in all 18 cells (H 2-4, max
# length 1k-10k, both activations); 64 x 8 warps, 32 x 4, K / V by TMA at 64 x 8: 1.37-1.88x.
# `early-loads`: x, K, V and the weights loaded between the cluster barrier's arrive and wait
# (ptxas: 684-708 -> 108-124 B of spills a thread); `hoist-loads`: K and V loaded once per
# program when a program walks several row blocks (`ROWS_PER_PROGRAM`). Same bits. H200,
# 2026-12-03 (session 21, the same grid): early-loads alone 0.93-0.98x, with the row table
# 0.84-0.88x, walking 512 rows 0.76-0.84x the gather-once default's time in all 18 cells.
# `reuse-loads{across-dots=true}`: x's tile loaded once per row block for the statistics, the
# attention and the residual (it was loaded three times, only the attention's load pipelined).
# Same bits. H200, 2026-12-04 (session 29, the same grid): 0.86-0.97x the previous default's
# time in all 18 cells (without across-dots, only the attention's load merged: 0.97-1.02x).
DEFAULT_FNA_PASSES = ("cluster-reduce{gather=once,early-loads=true}", "epilogue-norm",
                      "residual-acc", "hoist-loads", "reuse-loads{across-dots=true}")
# The LayerNorm in the MMA layout (`prepare_flash_norm_attention(ln_mma=True)`, the
# kernels' LN_MMA: x through `_in_mma`'s K = 16 product of zeros, so that the statistics are
# reduced and q normalized once, in the accumulator's layout) with its pass list: x then reaches
# the dots only as an accumulator, which Triton's pipeliner skips, and `prefetch-loads` tags its
# load (tt.latency) so that the walk still copies it a row block ahead. sm_90 SASS of the walk's
# row-block body (bench/fna_sass.py --both): softmax H 2 1968 -> 1703, GELU H 2 2320 -> 2055, no
# spills; the training forward and the weighted forms spill more (ops.md). The interpreter's
# bits equal the default's; on the GPU the LayerNorm's row sums run in another order (the MMA
# layout's, not the load's), so the bits may differ by a rounding (1e-3 relative at most in
# bench_attention's check, ~5e-5 measured).
MMA_FNA_PASSES = DEFAULT_FNA_PASSES + ("prefetch-loads",)
# One cluster exchange a row block instead of two (`prepare_flash_norm_attention(stats_ahead=
# True)`, off: 0.98-1.00x the two-exchange walk's time, H100 2026-12-05; its carry form below is
# the default): the kernels' STATS_AHEAD walk computes row block i + 1's LayerNorm
# sums between block i's attention and its RMSNorm (z held in registers across them), and
# `cluster-reduce{merge=true}` exchanges them with block i's RMSNorm sums in one exchange (the
# first block's before the walk). Same bits as the default in the interpreter. Session 36's
# bound (H100, exchange_probe nowait-pro / nowait-main): ~6-7 % of the fused kernel.
def _with_option(passes, name: str, option: str, value: str) -> tuple:
    """`passes` (pass specs) with `option=value` added to pass `name`'s spec, where that spec does
    not set the option already."""
    out = []
    for p in passes:
        if p == name:
            p = f"{name}{{{option}={value}}}"
        elif p.startswith(name + "{") and f"{option}=" not in p:
            p = f"{p[:-1]},{option}={value}}}"
        out.append(p)
    return tuple(out)


def with_merge(passes):
    """`passes` (a tuple of pass specs) with `merge=true` added to its cluster-reduce."""
    return _with_option(passes, "cluster-reduce", "merge", "true")


AHEAD_FNA_PASSES = with_merge(DEFAULT_FNA_PASSES)
AHEAD_MMA_FNA_PASSES = with_merge(MMA_FNA_PASSES)


# The "carry" form of that walk (`stats_ahead="carry"`, the default where DEFAULT_STATS_AHEAD
# says, below): trip i loads block
# i + 1's x tile (one head a CTA after cluster-reduce) for its LayerNorm sums and converts it to
# the MMA layout, and trip i + 1 loaded and converted it again for q;
# `reuse-loads{across-trips=values}` carries the converted tile (fp32) to the next trip instead
# (an scf.for iter_arg; the walk's first block's from its twin before the walk). Same bits (the
# same values).
def with_carry(passes):
    """`with_merge(passes)` with `across-trips=values` added to its reuse-loads."""
    return _with_option(with_merge(passes), "reuse-loads", "across-trips", "values")


CARRY_FNA_PASSES = with_carry(DEFAULT_FNA_PASSES)
CARRY_MMA_FNA_PASSES = with_carry(MMA_FNA_PASSES)
# `prepare_flash_norm_attention(stats_ahead=None)` (the default, and the op's): the carry form
# where the forward (the inference kernel, and since session 42 the training forward, `save`,
# too) has the LayerNorm in the MMA layout through MMA_FNA_PASSES (the op's default without
# norm weights), the form timed; False elsewhere. H100, 2026-12-05 (bench_attention
# --default-only --configs 64x4:ahead,64x4:carry, one run, `bench/results/2026-12-05/session40/`):
# the fused forward 0.282 / 0.465 / 0.553 ms against 0.388 / 0.625 / 0.763 (softmax H 2 / 3 /
# 4, max length 1000), 0.279 against 0.378 (GELU H 2), 1.432 against 2.007 (GELU H 4, max
# 3000): 0.71-0.74x, the same bits; the ahead form without the carry 0.98-1.00x. The training
# forward (save), H100, 2026-12-06 (--configs 64x4:save,64x4:carry_save,
# `bench/results/2026-12-06/session42/b/`): 0.366 / 0.574 / 0.710 ms against 0.451 / 0.773 /
# 0.961 (softmax H 2 / 3 / 4, max length 1000), 0.340 against 0.450 (GELU H 2), 1.691 against
# 2.505 (GELU H 4, max 3000): 0.68-0.81x; both within the same 4.0e-4 (softmax) / 1.3e-5 (GELU)
# relative difference of the inference forward's output (the save kernel rounds its output
# differently).
DEFAULT_STATS_AHEAD = "carry"
# `prepare_flash_norm_attention(ln_mma=None)` (the default, and the op's): the LayerNorm in the
# MMA layout with MMA_FNA_PASSES where `passes` is the default pipeline and the norms have no
# weights, the forms timed. H200, 2026-12-05 (bench_attention --default-only --configs
# 64x4:mma,64x4:save,64x4:mma_save, B = 768, L = D = 128, all 18 cells): the inference forward
# 0.93-0.98x the default's time in every cell; the training forward 0.93-0.98x except softmax
# H 4 (1.00-1.01x, a tie). The weighted forms spill more (ops.md) and are not timed: off there.
DEFAULT_LN_MMA = True
# Under autograd the forward stores the attention output g = attend(ln_q) ([T, H, D], x's dtype)
# and softmax's log-sum-exp ([T, H] f32), and the backward's rows kernel reads them instead of
# recomputing the
# attention (loop 1 of `kernels/attention_bwd.py`: per head q K^T and P V, softmax one more
# q K^T pass; 2-3 of the rows kernel's 5-6 [BLOCK_M, L] x [L, D] products). Costs one more
# [T, H, D] write in the forward and that much memory until the backward. H200, 2026-12-03
# (bench_attention_bwd --quick, B = 768, L = 128, D = 128, max length 1024): backward 4.032 ->
# 3.642 ms (GELU, H = 2) and 8.442 -> 6.762 ms (softmax, H = 4) for a forward 0.704 -> 0.751 and
# 1.421 -> 1.512 ms: 0.34 / 1.59 ms saved per step. False keeps the recompute (less memory).
SAVE_FOR_BACKWARD = True
# Whether each program reads its (batch, first row, end) from a row-block table built on the
# device (`row_block_table`, kept per offsets tensor: `cached_row_block_table`) instead of a
# binary search over the running block counts (LOG_B = 10 dependent loads at B = 768, on every
# program's critical path before its first row loads). The same bits. H200, 2026-12-03: with
# early-loads 0.84-0.88x the search's time (all 18 cells of bench_attention's grid).
ROW_TABLE = True
# Rows of one sequence each program walks, BLOCK_M at a time (`rows_per_program=None`), K and V
# loaded once for them (`hoist-loads`); fewer where the walk would leave the GPU short of CTAs
# (`_default_walk`), none (one row block a program) below that. H200, 2026-12-03 (session 21,
# B = 768, L = D = 128, max length 1k-10k, H 2-4, both activations): walking 512 rows 0.91-0.97x
# the flat grid's time with early-loads and the row table, 256 rows 0.93-0.97x (best in 2 of
# 18 cells by <= 1 %); 32 x 4 and 64 x 8 warps walking 256 rows 1.04-1.36x the gather-once flat.
ROWS_PER_PROGRAM = 512
# the walk's shortest form still used: at least this many CTAs per SM (programs x heads)
WALK_MIN_CTAS_PER_SM = 4
_DTYPES = FUSED_DTYPES


@functools.lru_cache(maxsize=None)
def _launcher(passes, save: bool = False):
    import normfuse
    from ..kernels.attention import flash_norm_attention_naive, flash_norm_attention_save_naive
    return normfuse.jit(flash_norm_attention_save_naive if save else flash_norm_attention_naive,
                        passes=passes)


def _shape(t) -> tuple:
    return tuple(t.shape)


def _check(op: str, x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, eps, rms_eps,
           check_offsets: bool = True, fused: bool = True):
    """Validate the inputs; returns (T, H, D, B, L, Hkv, host offsets as int64 or None when not
    read). Errors name the offending input. `fused=False` (the reference path): any device, the
    fallback dtypes, any head dim."""
    for name, t in (("x", x), ("k", k), ("v", v), ("offsets", offsets)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    if x.dim() != 3:
        raise ValueError(f"{op}: x must be [T, H, D], got shape {_shape(x)}")
    for name, t in (("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"{op}: {name} must be [B, L, Hkv, D], got shape {_shape(t)}")
    if k.shape != v.shape:
        raise ValueError(f"{op}: k and v must have the same shape, got {_shape(k)} and {_shape(v)}")
    T, H, D = x.shape
    B, L, Hkv, Dk = k.shape
    if Dk != D:
        raise ValueError(f"{op}: head dim of k/v ({Dk}) differs from x's ({D})")
    if Hkv == 0 or H % Hkv:
        raise ValueError(f"{op}: mismatched heads: x has {H} heads, k/v {Hkv} (H must be a "
                         "multiple of Hkv)")
    if fused and D not in (16, 32, 64, 128, 256):
        raise ValueError(f"{op}: head dim D = {D} is not supported (16, 32, 64, 128 or 256)")
    if L < 1:
        raise ValueError(f"{op}: k/v must have at least one key per batch (L = {L})")
    if x.dtype not in (_DTYPES if fused else FALLBACK_DTYPES):
        raise TypeError(f"{op}: x must be " + ("bfloat16 or float16" if fused else
                        "bfloat16, float16, float32 or float64") + f", got {x.dtype}")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != x.dtype:
            raise TypeError(f"{op}: {name} must have x's dtype {x.dtype}, got {t.dtype}")
    for name, t in (("ln_weight", ln_weight), ("ln_bias", ln_bias), ("rms_weight", rms_weight)):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor or None, got {type(t).__name__}")
        if t.numel() != H * D or t.dim() not in (1, 2):
            raise ValueError(f"{op}: {name} must have H * D = {H * D} elements ([H * D] or [H, D]), "
                             f"got shape {_shape(t)}")
        if t.dtype != x.dtype:
            raise TypeError(f"{op}: {name} must have x's dtype {x.dtype}, got {t.dtype}")
    if offsets.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{op}: offsets must be int32 or int64, got {offsets.dtype}")
    if offsets.dim() != 1 or offsets.numel() != B + 1:
        raise ValueError(f"{op}: offsets must have B + 1 = {B + 1} entries (B from k's first dim), "
                         f"got shape {_shape(offsets)}")
    if not eps > 0 or not rms_eps > 0:
        raise ValueError(f"{op}: eps and rms_eps must be positive, got {eps} and {rms_eps}")
    if T >= 2 ** 31 or B >= 2 ** 30:
        raise ValueError(f"{op}: T = {T} rows or B = {B} batches is too large (32-bit row indices)")
    off = None
    if check_offsets and not torch.compiler.is_compiling():  # (traced: data-dependent, skipped)
        off = host_offsets(offsets)  # (read once per offsets tensor and version)
        if B + 1 and (int(off[0]) != 0 or int(off[-1]) != T):
            raise ValueError(f"{op}: offsets must start at 0 and end at T = {T}, got "
                             f"{int(off[0])}..{int(off[-1])}")
        if bool((off[1:] < off[:-1]).any()):
            raise ValueError(f"{op}: offsets must be non-decreasing (monotone), got {off.tolist()[:16]}"
                             f"{'...' if off.numel() > 16 else ''}")
    dev = x.device
    for name, t in (("k", k), ("v", v), ("offsets", offsets), ("ln_weight", ln_weight),
                    ("ln_bias", ln_bias), ("rms_weight", rms_weight)):
        if t is not None and t.device != dev:
            raise ValueError(f"{op}: {name} must be on x's device {dev}, got {t.device}")
    if fused and dev.type != "cuda":
        raise ValueError(f"{op}: x must be a CUDA tensor (the kernel runs on Hopper GPUs), got "
                         f"device {dev}")
    return T, H, D, B, L, Hkv, off


def _fwd_reference(x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, scale, eps,
                   rms_eps, save):
    """The custom op's outputs computed with reference math in the compute dtype: (out, mean,
    rstd, rrms, g, lse), g and lse empty unless `save` (lse also for GDPA)."""
    out, st = flash_norm_attention_ref(x, k, v, offsets, activation=activation, qk_scale=scale,
                                       ln_weight=ln_weight, ln_bias=ln_bias, rms_weight=rms_weight,
                                       eps=eps, rms_eps=rms_eps, dtype=compute_dtype(x.dtype),
                                       return_stats=True)
    f32 = dict(dtype=torch.float32)
    g = st["g"].to(x.dtype) if save else x.new_empty((0,))
    lse = st["lse"] if save and activation == "softmax" else x.new_empty((0,), **f32)
    return (out.to(x.dtype).contiguous(), st["mean"], st["rstd"], st["rrms"], g, lse)


def _config(D: int, L: int) -> dict:
    # (at least 16 keys a tile: tl.dot's smallest K; the key mask covers the padding)
    block_n = max(16, min(triton_next_pow2(L), 128 if D <= 128 else 64))
    return dict(BLOCK_M=64, BLOCK_N=block_n, num_warps=4, num_stages=2)


def triton_next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


@dataclass
class PreparedFNA:
    """A validated FlashNormAttention launch: `launch()` runs the kernel into `out` and the
    statistics (no validation, no host sync); `compile()` gives the CompiledKernel (remarks)."""

    launcher: Any
    runtime_args: tuple
    constexprs: dict
    options: dict
    grid: tuple
    out: torch.Tensor
    mean: torch.Tensor
    rstd: torch.Tensor
    rrms: torch.Tensor
    # with save=True: the attention output g = attend(ln_q) [T, H, D] (x's dtype) and softmax's
    # lse [T, H] f32 for the backward (None otherwise; lse None for GDPA)
    g: Any = None
    lse: Any = None
    _compiled: Any = field(default=None, repr=False)

    _full_args: tuple = field(default=(), repr=False)
    _fast: bool = field(default=False, repr=False)

    def compile(self):
        if self._compiled is None:
            from ..compiler import kernel_args, launch_needs
            from ..launch import LaunchNeed
            with torch.cuda.device(self.out.device):
                self._compiled = self.launcher.warmup(*self.runtime_args, **self.constexprs,
                                                      **self.options)
            self._full_args = kernel_args(self.launcher.fn, self.runtime_args, self.constexprs)
            # straight through Triton's launcher (every argument in kernel order) when nothing
            # has to be applied at launch time (the cluster size travels in the metadata)
            self._fast = (self._compiled.lowered is None and all(
                type(n).at_launch is LaunchNeed.at_launch for n in launch_needs(self._compiled)))
        return self._compiled

    def launch(self):
        if self.grid[0] > 0:
            ck = self.compile()
            with torch.cuda.device(self.out.device):
                if self._fast:
                    ck.launch(tuple(self.grid) + (1, 1), self._full_args, runtime_args=self.runtime_args)
                else:
                    self.launcher[self.grid](*self.runtime_args, **self.constexprs, **self.options)
        return self.out, self.mean, self.rstd, self.rrms


def _check_kv_tma(op: str, k, v, Hkv: int, D: int) -> None:
    """What bulk tensor copies of K and V need, in the user's terms."""
    row = Hkv * D * k.element_size()
    if row % 16 or D * k.element_size() < 16:
        raise ValueError(f"{op}: kv_tma needs rows of K and V (HKV * D = {Hkv * D} elements) a "
                         f"multiple of 16 bytes and D * {k.element_size()} >= 16 bytes; got D = "
                         f"{D}, HKV = {Hkv} (use kv_tma=False)")
    for name, t in (("k", k), ("v", v)):
        if t.data_ptr() % 16:
            raise ValueError(f"{op}: kv_tma needs {name} 16-byte aligned, got address "
                             f"{t.data_ptr():#x} (a view at an odd offset: pass a copy, or "
                             f"kv_tma=False)")


def prepare_flash_norm_attention(x, k, v, offsets, *, activation="gelu_tanh", qk_scale=None,
                                 ln_weight=None, ln_bias=None, rms_weight=None, eps=1e-5,
                                 rms_eps=None, max_seqlen=None, passes=DEFAULT_FNA_PASSES,
                                 check_offsets: bool = True, block_m: int | None = None,
                                 num_warps: int | None = None, save: bool = False,
                                 kv_tma: bool = False, row_table: bool | None = None,
                                 rows_per_program: int | None = None,
                                 ln_mma: bool | None = None,
                                 stats_ahead: bool | str | None = None) -> PreparedFNA:
    """A validated launch (`PreparedFNA`). `save`: the training forward's kernel, which also
    stores g (the attention's output) and (softmax) lse for the backward into `PreparedFNA.g` /
    `.lse`. `kv_tma`: K and V tiles by bulk tensor copies straight into shared memory instead of
    through registers (fewer ptxas spills at 8 warps, but 64 x 8 warps with it ran 1.7-1.9x the
    default's time on the H200, 2026-12-03: off by default); needs
    16-byte aligned K and V and rows of HKV * D a multiple of 16 bytes. `row_table` (None:
    `ROW_TABLE`): the programs find their rows in a row-block table built on the device, else by
    a binary search over the running block counts. `rows_per_program` (a multiple of BLOCK_M,
    0: one row block per program; None: `ROWS_PER_PROGRAM`, shortened by `_default_walk` where
    the grid would be small): each program walks up to that many rows of one sequence, block by
    block (the kernel's ROWS; `hoist-loads`, in the default passes, loads K and V once per
    program). `ln_mma`: the kernel's LayerNorm in the MMA accumulator's layout (LN_MMA; give it
    `passes=MMA_FNA_PASSES` when True); None (the default): `DEFAULT_LN_MMA` where `passes` is
    `DEFAULT_FNA_PASSES` and no norm weight is given, then with `MMA_FNA_PASSES`; False: the
    LayerNorm in the loads' layout (the weighted forms' default: LN_MMA spills more there).
    `stats_ahead`: True: one cluster exchange a row block in the walk instead of two (the
    kernel's STATS_AHEAD, `cluster-reduce{merge=true}` added to `passes`: `with_merge`); the
    same results; no effect without a walk (one row block a program). "carry": that walk with
    the next block's x tile, loaded in a trip for its sums and converted there, carried to the
    next trip instead of loaded and converted again (`reuse-loads{across-trips=values}` too:
    `with_carry`). None (the default): `DEFAULT_STATS_AHEAD` for the forward (inference and
    `save`) with the LayerNorm in the MMA layout through `MMA_FNA_PASSES` (what `ln_mma=None`
    picks without norm weights), else False. A pass list given as a string is used as given."""
    op = "flash_norm_attention"
    ln_mma, passes = _resolve_ln_mma(op, ln_mma, passes, ln_weight, ln_bias, rms_weight)
    stats_ahead = _resolve_stats_ahead(op, stats_ahead, ln_mma, passes)
    if stats_ahead and passes is not None and not isinstance(passes, str):
        passes = (with_carry if stats_ahead == "carry" else with_merge)(tuple(passes))
    rms_eps = eps if rms_eps is None else rms_eps
    T, H, D, B, L, Hkv, off = _check(op, x, k, v, offsets, ln_weight, ln_bias, rms_weight,
                                     activation, eps, rms_eps, check_offsets)
    from ..kernels.attention import ACT_CODES
    scale = default_qk_scale(activation, D) if qk_scale is None else float(qk_scale)
    cfg = _config(D, L)
    if block_m is not None:
        cfg["BLOCK_M"] = int(block_m)
    if num_warps is not None:
        cfg["num_warps"] = int(num_warps)
    bm = cfg["BLOCK_M"]
    x = x.contiguous()
    k = k.contiguous()
    v = v.contiguous()
    offs = offsets.to(torch.int32).contiguous()  # (the kernel reads OFFS + b: unit stride)
    # the running row-block counts, built on the device (no host-to-device copy: one from
    # pageable memory can wait for the stream, and none is allowed while a CUDA graph is
    # captured)
    row_table = ROW_TABLE if row_table is None else bool(row_table)
    walk, nblocks = (_default_walk(T, B, H, bm, off, x.device) if rows_per_program is None
                     else (int(rows_per_program), None))
    if walk and (walk < 0 or walk % bm):
        raise ValueError(f"{op}: rows_per_program must be a positive multiple of BLOCK_M = {bm}, "
                         f"got {rows_per_program}")
    if walk:  # the table of walk-row chunks (cdiv(T, walk) + B entries, those past the end dead)
        blocks = cached_row_block_table(offsets, walk, T)
    elif row_table:  # (cdiv(T, BLOCK_M) + B entries, those past the last block dead)
        blocks = cached_row_block_table(offsets, bm, T)
    else:
        lens = offs[1:] - offs[:-1]
        blocks = torch.zeros(B + 1, dtype=torch.int32, device=x.device)
        if B:
            blocks[1:] = torch.cumsum(torch.div(lens + (bm - 1), bm, rounding_mode="floor"), 0)
    # exact where the checks read the offsets on the host, else the upper bound
    if nblocks is None:
        nblocks = row_block_count(T, B, walk or bm, off)
    out = torch.empty_like(x)
    mean = torch.empty(T, dtype=torch.float32, device=x.device)
    rstd = torch.empty_like(mean)
    rrms = torch.empty_like(mean)
    dummy = x.new_empty(1)
    flat = (lambda t: dummy if t is None else t.reshape(H * D).contiguous())
    g = lse = None
    saved = ()
    if save:
        g = torch.empty_like(x)
        lse = torch.empty((T, H), dtype=torch.float32, device=x.device) \
            if activation == "softmax" else None
        saved = (g, lse if lse is not None else mean)  # (GDPA: LSE never written)
    runtime = (x, k, v, offs, blocks, flat(ln_weight), flat(ln_bias), flat(rms_weight), out, mean,
               rstd, rrms, *saved, B, scale, float(eps), float(rms_eps))
    consts = dict(H=H, HKV=Hkv, D=D, L=L, BLOCK_M=bm, BLOCK_N=cfg["BLOCK_N"],
                  ACT=ACT_CODES[activation], LOG_B=max(1, B.bit_length()),
                  HAS_LNW=ln_weight is not None, HAS_LNB=ln_bias is not None,
                  HAS_RMSW=rms_weight is not None)
    if walk:
        consts["ROWS"] = walk
    elif row_table:
        consts["ROW_TABLE"] = True
    if kv_tma:
        _check_kv_tma(op, k, v, Hkv, D)
        from ..device import ensure_allocator
        ensure_allocator()  # (the kernel builds its tensor descriptors in global scratch)
        consts["KV_TMA"] = True
    if ln_mma:
        consts["LN_MMA"] = True
    if stats_ahead and walk:
        consts["STATS_AHEAD"] = 2 if stats_ahead == "carry" else True
    options = dict(num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    # programs past the last row block (upper-bound grid) have every row masked off
    grid = (nblocks,)
    key = () if passes is None else (passes if isinstance(passes, str) else tuple(passes))
    return PreparedFNA(_launcher(key, bool(save)), runtime, consts, options, grid, out, mean, rstd,
                       rrms, g, lse)


def _resolve_ln_mma(op: str, ln_mma, passes, ln_weight, ln_bias, rms_weight) -> tuple:
    """(ln_mma, passes) for `prepare_flash_norm_attention`: None takes `DEFAULT_LN_MMA` with
    `MMA_FNA_PASSES` where `passes` is `DEFAULT_FNA_PASSES` (a tuple or list of its names) and no
    norm weight is given, else False and `passes` as given; True and False as given."""
    if ln_mma is None:
        default = (not isinstance(passes, str) and passes is not None
                   and tuple(passes) == DEFAULT_FNA_PASSES)
        if (DEFAULT_LN_MMA and default and ln_weight is None and ln_bias is None
                and rms_weight is None):
            return True, MMA_FNA_PASSES
        return False, passes
    if not isinstance(ln_mma, bool):
        raise ValueError(f"{op}: ln_mma must be True, False or None, got {ln_mma!r}")
    return ln_mma, passes


def _resolve_stats_ahead(op: str, stats_ahead, ln_mma: bool, passes):
    """`prepare_flash_norm_attention`'s stats_ahead (False, True or "carry") from the argument,
    after `_resolve_ln_mma`: None takes `DEFAULT_STATS_AHEAD` for the kernel (inference or
    training forward) with the LayerNorm in the MMA layout through `MMA_FNA_PASSES` (a tuple or
    list of its names), else False; anything but None, False, True and "carry" is refused."""
    if stats_ahead is None:
        default = (ln_mma and not isinstance(passes, str) and passes is not None
                   and tuple(passes) == MMA_FNA_PASSES)
        return DEFAULT_STATS_AHEAD if default else False
    if not (stats_ahead is False or stats_ahead is True or stats_ahead == "carry"):
        raise ValueError(f"{op}: stats_ahead must be None, False, True or 'carry', got "
                         f"{stats_ahead!r}")
    return stats_ahead


def _default_walk(T: int, B: int, H: int, block_m: int, host, device) -> tuple[int, Any]:
    """(rows a program walks by default, its grid's program count or None): `ROWS_PER_PROGRAM`,
    halved while the walk's grid (programs x heads: one CTA per head) gives fewer than
    `WALK_MIN_CTAS_PER_SM` CTAs per SM, (0, None) (one row block a program) once it is down to
    BLOCK_M. Counts exactly where the offsets are on the host (`host`), else by the upper bound
    (`row_block_count`); on a CPU device (the interpreter) the longest walk."""
    from ..device import sm_count
    need = WALK_MIN_CTAS_PER_SM * sm_count(device) if device.type == "cuda" else 0
    rows = ROWS_PER_PROGRAM
    while rows > block_m and rows % block_m == 0:
        programs = row_block_count(T, B, rows, host)
        if programs * H >= need:
            return rows, programs
        rows //= 2
    return 0, None


def _fwd_impl(x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, qk_scale, eps, rms_eps,
              max_seqlen, passes=DEFAULT_FNA_PASSES, check_offsets=True, save=False):
    """(out, mean, rstd, rrms), and with `save` also (g, lse) (lse None for GDPA)."""
    p = prepare_flash_norm_attention(x, k, v, offsets, activation=activation, qk_scale=qk_scale,
                                     ln_weight=ln_weight, ln_bias=ln_bias, rms_weight=rms_weight,
                                     eps=eps, rms_eps=rms_eps, max_seqlen=max_seqlen, passes=passes,
                                     check_offsets=check_offsets, save=save)
    out = p.launch()
    return (*out, p.g, p.lse) if save else out


def flash_norm_attention_fwd(x, k, v, offsets, *, activation="gelu_tanh", qk_scale=None,
                             ln_weight=None, ln_bias=None, rms_weight=None, eps=1e-5, rms_eps=None,
                             max_seqlen=None, passes=DEFAULT_FNA_PASSES, save=False):
    """The forward: (out [T, H, D], mean, rstd, rrms [T] float32), exactly as
    `flash_norm_attention_ref(..., return_stats=True)` defines them; with `save` also (g, lse),
    what the backward reads instead of recomputing the attention (g = attend(ln_q), [T, H, D] in
    x's dtype, lse
    [T, H] float32 for softmax, None for GDPA). No autograd."""
    return _fwd_impl(x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, qk_scale, eps,
                     rms_eps, max_seqlen, passes, save=save)


# ---------------------------------------------------------------------------------------------
# torch.library custom op + autograd
# ---------------------------------------------------------------------------------------------

@torch.library.custom_op("normfuse::flash_norm_attention_fwd", mutates_args=())
def _fna_op(x: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offsets: torch.Tensor,
            ln_weight: Optional[torch.Tensor], ln_bias: Optional[torch.Tensor],
            rms_weight: Optional[torch.Tensor], activation: str, qk_scale: float, eps: float,
            rms_eps: float, max_seqlen: int, save: bool = False
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                       torch.Tensor]:
    """(out, mean, rstd, rrms, g, lse): g (the attention's output) and lse what `save` (a call
    under autograd) keeps for the backward, else empty ([0]); lse empty for GDPA."""
    if not route("flash_norm_attention", x):
        _check("flash_norm_attention", x, k, v, offsets, ln_weight, ln_bias, rms_weight,
               activation, eps, rms_eps, fused=False)
        return _fwd_reference(x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation,
                              qk_scale, eps, rms_eps, save)
    # the offsets are checked here, on the host (one sync; this also sizes the grid exactly)
    res = _fwd_impl(x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, qk_scale, eps,
                    rms_eps, max_seqlen if max_seqlen >= 0 else None, save=save)
    out, mean, rstd, rrms = res[:4]
    g, lse = res[4:] if save else (None, None)
    # (contiguous whatever x's layout, on every path: what the fake implementation promises;
    # a fresh empty tensor per absent output: a custom op's outputs may not alias each other)
    return (out.contiguous(), mean, rstd, rrms, x.new_empty((0,)) if g is None else g,
            x.new_empty((0,), dtype=torch.float32) if lse is None else lse)


@_fna_op.register_fake
def _fna_fake(x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, qk_scale, eps, rms_eps,
              max_seqlen, save=False):
    T, H = x.shape[0], x.shape[1]
    f32 = dict(dtype=torch.float32)
    g = x.new_empty(x.shape) if save else x.new_empty((0,))
    lse = x.new_empty((T, H), **f32) if save and activation == "softmax" else x.new_empty((0,), **f32)
    # (contiguous, as the real op's output: it makes x contiguous before allocating it)
    return (x.new_empty(x.shape), x.new_empty((T,), **f32), x.new_empty((T,), **f32),
            x.new_empty((T,), **f32), g, lse)


def _setup_context(ctx, inputs, output):
    x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, qk_scale, eps, rms_eps, ms = \
        inputs[:12]
    save = bool(inputs[12]) if len(inputs) > 12 else False
    _, mean, rstd, rrms, g, lse = output  # (the output itself: the backward does not read it)
    ctx.save_for_backward(x, k, v, offsets, mean, rstd, rrms, ln_weight, ln_bias, rms_weight,
                          g, lse)
    ctx.saved_g = save
    ctx.cfg = dict(activation=activation, qk_scale=qk_scale, eps=eps, rms_eps=rms_eps,
                   max_seqlen=ms)  # (the ops' encoding: -1 for None)


@torch.library.custom_op("normfuse::flash_norm_attention_bwd", mutates_args=())
def _fna_bwd_op(dout: torch.Tensor, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                offsets: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor, rrms: torch.Tensor,
                ln_weight: Optional[torch.Tensor], ln_bias: Optional[torch.Tensor],
                rms_weight: Optional[torch.Tensor], g: Optional[torch.Tensor],
                lse: Optional[torch.Tensor], activation: str, qk_scale: float, eps: float,
                rms_eps: float, max_seqlen: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                           torch.Tensor]:
    """(dx, dk, dv, d ln_weight, d ln_bias, d rms_weight) of the forward op, the weights' gradients
    [H * D] (empty, [0], for absent weights). The backward the autograd formula runs, an op of its
    own so that torch.compile traces it through its fake implementation (no host read: the
    forward checked the offsets)."""
    if not route("flash_norm_attention", x):  # (the forward's check ran)
        grads = flash_norm_attention_grads(
            dout, x, k, v, offsets, activation=activation, qk_scale=qk_scale, ln_weight=ln_weight,
            ln_bias=ln_bias, rms_weight=rms_weight, eps=eps, rms_eps=rms_eps,
            dtype=compute_dtype(x.dtype))
        return tuple(x.new_empty((0,)) if t is None else t.to(like.dtype) for t, like in
                     zip(grads, (x, k, v, ln_weight, ln_bias, rms_weight)))
    try:
        from .flash_norm_attention_bwd import flash_norm_attention_bwd
    except ImportError as e:
        raise NotImplementedError(
            "flash_norm_attention's backward needs normfuse.ops.flash_norm_attention_bwd "
            f"(flash_norm_attention_bwd), which is not available: {e}") from e
    saved = {} if g is None else dict(g=g, lse=lse)
    grads = flash_norm_attention_bwd(
        dout.contiguous(), x, k, v, offsets, None, mean, rstd, rrms, activation=activation,
        qk_scale=qk_scale, ln_weight=ln_weight, ln_bias=ln_bias, rms_weight=rms_weight, eps=eps,
        rms_eps=rms_eps, max_seqlen=None if max_seqlen < 0 else max_seqlen, check_offsets=False,
        **saved)
    # (a fresh empty tensor per absent weight: a custom op's outputs may not alias each other)
    return tuple(x.new_empty((0,)) if t is None else t for t in grads)


@_fna_bwd_op.register_fake
def _fna_bwd_fake(dout, x, k, v, offsets, mean, rstd, rrms, ln_weight, ln_bias, rms_weight, g, lse,
                  activation, qk_scale, eps, rms_eps, max_seqlen):
    return (x.new_empty(x.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            *(x.new_empty((0,)) if w is None else w.new_empty(w.shape)
              for w in (ln_weight, ln_bias, rms_weight)))


def _backward(ctx, dout, dmean, drstd, drrms, dz, dlse):
    no_double_backward("flash_norm_attention")
    x, k, v, offsets, mean, rstd, rrms, ln_weight, ln_bias, rms_weight, g, lse = \
        ctx.saved_tensors
    c = ctx.cfg
    # the forward's g (and softmax's lse): the attention is not recomputed
    soft = c["activation"] == "softmax"
    gs, ls = (g, lse if soft else None) if ctx.saved_g else (None, None)

    def flat(t):  # (the forward takes [H * D] or [H, D] vectors; the backward [H * D])
        return None if t is None else t.reshape(-1)
    dx, dk, dv, dlnw, dlnb, drmsw = _fna_bwd_op(
        dout, x, k, v, offsets, mean, rstd, rrms, flat(ln_weight), flat(ln_bias), flat(rms_weight),
        gs, ls, c["activation"], c["qk_scale"], c["eps"], c["rms_eps"], c["max_seqlen"])

    def like(g, t):
        return None if t is None else g.reshape(t.shape)
    return (dx, dk, dv, None, like(dlnw, ln_weight), like(dlnb, ln_bias), like(drmsw, rms_weight),
            None, None, None, None, None, None)


register_autograd("normfuse::flash_norm_attention_fwd", _backward,
                  setup_context=_setup_context)


def flash_norm_attention(x, k, v, offsets, *, activation: str = "gelu_tanh",
                         qk_scale: float | None = None, ln_weight=None, ln_bias=None,
                         rms_weight=None, eps: float = 1e-5, rms_eps: float | None = None,
                         max_seqlen: int | None = None) -> torch.Tensor:
    """out = RMSNorm(attend(LayerNorm(x)) + LayerNorm(x)) + x for jagged x [T, H, D] (see the
    module docstring); differentiable in x, k, v and the norm weights."""
    op = "flash_norm_attention"
    rms_eps = eps if rms_eps is None else rms_eps
    # shapes, dtypes and devices here; the offsets' values inside the op (one host read), or
    # here already when they are on the host (no sync)
    T, H, D, B, L, Hkv, _ = _check(op, x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation,
                                   eps, rms_eps, check_offsets=offsets.device.type == "cpu",
                                   fused=route(op, x))
    scale = default_qk_scale(activation, D) if qk_scale is None else float(qk_scale)
    # under autograd the forward keeps g (and softmax's lse) for the backward (SAVE_FOR_BACKWARD)
    save = SAVE_FOR_BACKWARD and torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (x, k, v, ln_weight, ln_bias, rms_weight))
    out = _fna_op(x, k, v, offsets, ln_weight, ln_bias, rms_weight, activation, scale, float(eps),
                  float(rms_eps), -1 if max_seqlen is None else int(max_seqlen), save)[0]
    return out
