"""FlashNormAttention backward (issue 12): the gradients of
`out = RMSNorm_N(attend(LayerNorm_N(x)) + LayerNorm_N(x)) + x` (`normfuse.reference_attention`).

    flash_norm_attention_bwd(dout, x, k, v, offsets, out, mean, rstd, rrms, *, activation,
                             qk_scale, ln_weight, ln_bias, rms_weight, eps, rms_eps, max_seqlen)
        -> (dx, dk, dv, d_ln_weight, d_ln_bias, d_rms_weight)   (None for absent weights)

Two normfuse-compiled kernels (`kernels/attention_bwd.py`, the derivation is there): the rows
kernel (RMSNorm backward, attention backward for d ln_q, LayerNorm backward, outer residual; one
program per row block, the heads of a row block dealt to one thread-block cluster by
`cluster-reduce-chain`, which exchanges the two cross-head reductions through distributed shared
memory) and the dK/dV kernel (one program per batch, kv head and key block; deterministic, no
atomics). The weight gradients are per-program column sums, added up here. That is the "split"
plan; `plan="kvq"` (the forward's g saved, every key in one tile) runs three kernels instead,
with the attention's products once per head and row block (`PLANS`, below).

What the forward saved is used as follows: mean and rstd recompute ln_q; rrms is the RMSNorm's
statistic; `out` is accepted for the contract but not read (z = g + ln_q is recomputed, see the
kernels' docstring); eps/rms_eps are not needed (the statistics are saved). `max_seqlen` is
accepted and ignored (the row-block table is built from `offsets`; this costs one
device-to-host copy of its size).

The op takes CUDA tensors (Hopper). For the kernels' CPU tests, CPU tensors run the same
compiled TTIR in normfuse's CPU interpreter under `normfuse.testing.attention_bwd.interpreted()`,
which installs that launcher here (`cpu_launcher`): the op layer does not import the interpreter,
which stands above it.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import torch
import triton

from ..reference_attention import ACTIVATIONS, check_layout, default_qk_scale
from .common import (cached_longest_first, cached_row_block_table, host_offsets,
                     row_block_count, row_block_table)

__all__ = ["flash_norm_attention_bwd", "DEFAULT_BWD_PASSES", "default_bwd_passes", "BwdConfig",
           "PLANS", "PRE_PASSES", "DEFAULT_PLAN",
           "row_block_table", "unwritten_scratch", "bwd_kernels"]

# the rows kernel's pipeline: the heads of a row block over one cluster, then each CTA's reloads
# of what it stored forwarded through registers; z and dlnq are fp32 scratch that only this
# kernel reads, so their stores go too (4 bytes per element and head each not written). Its
# `early-loads` issues x, dout and g while the exchanges' barriers wait. For the activations
# other than softmax, `reuse-loads` then loads dout and the RMSNorm weight once per row block
# (`default_bwd_passes`). H200, 2026-12-04 (bench_attention_bwd's 18 cells, saved g, two runs):
# early-loads 0.97-0.99x the pipeline without it (both activations; session 21's two cells:
# 0.98-1.00x); early + reuse 0.96-0.98x for GELU, 0.985-0.994x for softmax, where early-loads
# alone is faster (0.97-0.99x). Same bits (the passes move and merge loads).
DEFAULT_BWD_PASSES = ("cluster-reduce-chain{scratch=Z:DLNQ,early-loads=true}",)


def default_bwd_passes(activation: str) -> tuple:
    """The rows kernel's default pipeline for `activation` (see DEFAULT_BWD_PASSES)."""
    return DEFAULT_BWD_PASSES if activation == "softmax" else DEFAULT_BWD_PASSES + ("reuse-loads",)

BLOCK_M = 64


@dataclass(frozen=True)
class BwdConfig:
    """Tiles of the two backward kernels, chosen by `normfuse.repro.bench_attention_bwd
    --rows-tiles/--kv-tiles` on the H200 (B = 768, max length 1024, saved g, no host sync).
    The rows kernel: 32 rows x 64 keys a step, 4 warps, 2 stages (188 registers, no spills, 2
    CTAs per SM at D = 128, GELU; `bench/fna_bwd_tiles.py`); 2026-12-03 the whole backward 2.235
    -> 2.026 ms (GELU, H = 2) and 4.503 -> 4.371 (softmax, H = 4) against 64 x 64 at 8 warps
    (one CTA per SM). The dK/dV kernel: 32 x 32 tiles, 4 warps, 3 stages: it re-reads the
    batch's rows twice as often as with 64 x 64 tiles and 8 warps, but spills less (64 x 64:
    100-340 B/thread at D = 128) and runs 4 programs per (sequence, head) at L = 128 instead of 2
    (3.698 -> 3.371 ms, GELU, H = 2, when the backward still synced); 3 stages against 2: 2.08 ->
    1.97 ms (GELU, H = 2), 4.39 -> 4.23 (softmax, H = 4), bitwise the same dK / dV in 6 repeats
    of 4 cases (its dz tile feeds two wgmmas: the pipeliner race of docs/design.md would show as
    run-to-run differences; `test_gpu_kv_stages_bitwise_repeatable` pins it)."""

    block_m: int = 32        # rows kernel: rows per program (a cluster of H CTAs after the pass)
    block_l: int = 64        # keys per step in the rows kernel
    num_warps: int = 4
    # <= 2: the key loop is short (L / block_l trips), and the pipeliner race (docs/design.md)
    # needs >= 3 stages (a loaded tile feeding a wgmma and another use)
    num_stages: int = 2
    kv_block_m: int = 32     # dK/dV kernel: rows per step
    kv_block_l: int = 32     # keys per program
    kv_num_warps: int = 4
    kv_num_stages: int = 3
    # the kvq plan's middle kernel (`fna_bwd_kvq_naive`): one program per batch and kv head,
    # all L <= KVQ_MAX_L keys in one tile (the products' M: 128 keys = two warpgroups' wgmma),
    # kvq_block_m rows a step; its first and last kernels take block_m and num_warps. Timed on
    # the H200 (2026-12-05, bench_attention_bwd --quick --kvq-tiles, B = 768, L = D = 128, the
    # whole kvq plan): 32 rows, 8 warps, 3 stages, dQ transposed 1.213 ms (GELU H 2) / 2.524 ms
    # (softmax H 4); 16:8:3 1.334 / 2.724; 32:8:2:t 1.365 / 2.690; 16:8:2 (the ptxas-only choice
    # before) 1.519 / 3.050; 64:8:2:t 1.518 / 2.941; 16:8:1 1.655 / 3.317. (ptxas: 16 rows at 8
    # warps 238-255 registers without spills, 32 rows 0-48 B of spills; 4 warps spill 1-3 KB:
    # the fp32 dK and dV of 128 keys alone take 128 registers a thread at 8 warps.)
    kvq_block_m: int = 32
    kvq_num_warps: int = 8
    kvq_num_stages: int = 3
    # dQ as dQ^T = K^T dS^T (M = D on the tensor cores: a wgmma at any kvq_block_m, where dS K
    # at 16 rows is an mma.sync with K reloaded from shared memory each step): sm_90 SASS of the
    # row step at 16 rows 599 -> 633 (GELU), 535 -> 563 (softmax), no spills either way; at 32
    # rows and 3 stages the faster tile on the H200 (above)
    kvq_dq_t: bool = True
    # The LayerNorm backward's per-head row sums (sum_D dlnq a, sum_D dlnq a xhat) taken by
    # rows_post from the stored dlnq (a first loop over the heads, reading dlnq and x once
    # more) instead of by the kvq kernel after each dQ product, where D is spread over its 8
    # warps: cross-warp reductions through shared memory and 10 of the row step's 16 barriers.
    # sm_90 SASS of the kvq row step (GELU H 2, 32 rows, a helper's analysis, session 38): 1112
    # -> 739 warp instructions a warp, 16 -> 6 BAR.SYNC. The same sums of the same rounded
    # dlnq, in another order of the D lanes' adds. Timed (H100, session 39, B = 768, max
    # length 1000, the whole backward with g saved): 1.365 -> 1.110 ms (GELU, H 2) and 2.749 ->
    # 2.399 ms (softmax, H 4): on by default.
    kvq_sums_in_post: bool = True
    # The kvq programs (one per batch and kv head, each walking its whole sequence) launched
    # longest sequence first (`ops.common.cached_longest_first`: an argsort of the lengths,
    # kept per offsets tensor), so that the last wave is not a few long sequences alone. A
    # helper's simulation of the benchmark's lengths (B = 768, max 1000, 132 SMs, one program
    # an SM): the makespan 10.2 % over a perfect balance in batch order, ~1 % longest first.
    # The same bits (each program's work is unchanged). Timed (H100, session 39, as above):
    # alone 1.365 -> 1.302 ms (GELU H 2), 2.749 -> 2.707 (softmax H 4); with the sums in
    # rows_post 1.110 -> 1.095 and 2.399 -> 2.406: on by default.
    kvq_longest_first: bool = True


# The plans (`flash_norm_attention_bwd(plan=...)`):
#   "split": the rows kernel (dz, dlnq = dS K + dz, dx; the cross-head sums through a cluster)
#            and the dK / dV kernel (key blocks of kv_block_l): 7 of the attention's products per
#            head and row block;
#   "kvq":   (the forward's g saved; L <= KVQ_MAX_L, D <= KVQ_MAX_D) rows_pre (dz, through a
#            cluster), kvq (dK, dV and dlnq with the LayerNorm's per-head partials, all keys in
#            one tile: 5 products) and rows_post (dx; the partials summed over heads, no cluster);
#            dlnq round-trips through memory in `dlnq_dtype`.
PLANS = ("split", "kvq")
KVQ_MAX_L = 128
KVQ_MAX_D = 128
# the fewest kvq programs (batch x kv heads) for plan="default" to take the kvq plan: two per SM
# of an H100 / H200 (132 SMs) at one CTA per SM. A guess, not measured: the benchmark's cells
# have B = 768 (1536-3072 programs)
KVQ_MIN_PROGRAMS = 264
# what plan="default" runs (the autograd backward's choice): the kvq plan where it applies (g
# saved, L <= KVQ_MAX_L, D <= KVQ_MAX_D, B * Hkv >= KVQ_MIN_PROGRAMS), else the split plan. The
# kvq plan since 2026-12-05 (H200, B = 768, L = D = 128, backward with g saved: GELU H 2 1.213 ms
# against split's 1.791, softmax H 4 2.524 against 4.099)
DEFAULT_PLAN = "kvq"
# dlnq_dtype=torch.float32's tile (no `config` given: KVQ_F32_CONFIG) and the only kvq tiles it
# runs at (KVQ_F32_TILES: (kvq_block_m, kvq_dq_t, kvq_num_stages, kvq_num_warps); None lifts the
# check, for bench/fna_kvq_check.py). H200, 2026-12-05 (sessions 32-33, bench/fna_kvq_check.py at
# 8 warps, B = 160, GELU H 2, one process per tile under CUDA_LAUNCH_BLOCKING; softmax not run
# at these tiles yet: test_gpu_kvq_plan covers it): with dQ as dS K every tile tried is
# right (16 and 32 rows at 2 and 3 stages: dx within 6e-6 of the split plan, dK / dV equal,
# repeatable); with dQ transposed (kvq_dq_t) fp32 faults at 16 and 32 rows: wrong dx at 3 stages
# (0.13-0.67 relative to split), an illegal memory access at 2 (compute-sanitizer: an
# out-of-range shared address at the transposed dot's second wgmma, whose descriptors the TTGIR
# shares with the bf16 variant, which is right at the same tiles). The interpreter computes the
# fp32 variant within 1e-5 of split: a GPU-side fault of Triton's sm_90 code, not understood
KVQ_F32_CONFIG = BwdConfig(kvq_block_m=16, kvq_num_stages=2, kvq_dq_t=False)
KVQ_F32_TILES = frozenset({(bm, False, st, 8) for bm in (16, 32) for st in (2, 3)})
# rows_pre's pipeline: its two loops over heads on one cluster (c exchanged), x, g and dout
# issued while the exchange waits; the second loop's reloads merged into the first's
PRE_PASSES = ("cluster-reduce-chain{early-loads=true}", "reuse-loads")
_I32 = 2 ** 31


def bwd_kernels():
    from ..kernels.attention_bwd import fna_bwd_kv_naive, fna_bwd_rows_naive
    return fna_bwd_rows_naive, fna_bwd_kv_naive


def _kernel(which: str):
    """The naive kernel of `which`: "rows", "rows_saved" (the forward's g and lse read), "kv",
    or the kvq plan's "rows_pre", "kvq", "rows_post"."""
    from ..kernels import attention_bwd as kb
    named = dict(rows_saved=kb.fna_bwd_rows_saved_naive, rows_pre=kb.fna_bwd_rows_pre_naive,
                 kvq=kb.fna_bwd_kvq_naive, rows_post=kb.fna_bwd_rows_post_naive)
    if which in named:
        return named[which]
    return bwd_kernels()[0 if which == "rows" else 1]


def _check(dout, x, k, v, offsets, out, mean, rstd, rrms, weights: dict, activation,
           host=None):
    op = "flash_norm_attention_bwd"
    tensors = dict(dout=dout, x=x, k=k, v=v, offsets=offsets, mean=mean, rstd=rstd, rrms=rrms)
    for name, t in dict(tensors, **{n: w for n, w in weights.items() if w is not None}).items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"{op}: unknown activation {activation!r}; expected one of {ACTIVATIONS}")
    if x.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"{op}: x must be bfloat16 or float16, got {x.dtype}")
    for name in ("dout", "k", "v"):
        if tensors[name].dtype != x.dtype:
            raise TypeError(f"{op}: {name} must have x's dtype {x.dtype}, got {tensors[name].dtype}")
    if offsets.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"{op}: offsets must be int32 or int64, got {offsets.dtype}")
    for name in ("mean", "rstd", "rrms"):
        if tensors[name].dtype != torch.float32:
            raise TypeError(f"{op}: {name} must be float32 (as the forward saves it), got "
                            f"{tensors[name].dtype}")
    for name, t in dict(tensors, **{n: w for n, w in weights.items() if w is not None}).items():
        if t.device != x.device:
            raise ValueError(f"{op}: {name} must be on x's device {x.device}, got {t.device}")
    if x.device.type not in ("cuda", "cpu"):
        raise ValueError(f"{op}: unsupported device {x.device}")
    try:
        T, H, D, B, L = check_layout(x, k, v, offsets, values=host is not None, host=host)
    except ValueError as e:
        raise ValueError(f"{op}: {e}") from None
    if tuple(dout.shape) != tuple(x.shape):
        raise ValueError(f"{op}: dout must have x's shape {tuple(x.shape)}, got {tuple(dout.shape)}")
    if out is not None and tuple(out.shape) != tuple(x.shape):
        raise ValueError(f"{op}: out must have x's shape {tuple(x.shape)}, got {tuple(out.shape)}")
    for name in ("mean", "rstd", "rrms"):
        if tuple(tensors[name].shape) != (T,):
            raise ValueError(f"{op}: {name} must have shape ({T},), got {tuple(tensors[name].shape)}")
    for name, w in weights.items():
        if w is not None and tuple(w.shape) != (H * D,):
            raise ValueError(f"{op}: {name} must have shape ({H * D},) = (H*D,), got {tuple(w.shape)}")
        if w is not None and not w.is_floating_point():
            raise TypeError(f"{op}: {name} must be floating point, got {w.dtype}")
    if D < 16 or D & (D - 1) or D > 256:
        raise ValueError(f"{op}: head dim D must be a power of two in 16..256, got {D}")
    if max((T + 256) * H * D, (B * L + 256) * k.shape[2] * D) >= _I32:
        raise ValueError(f"{op}: problem too large for the kernels' 32-bit offsets")
    return T, H, D, B, L


def _check_saved(g, lse, x, T, H, D, activation) -> None:
    """The forward's saved g and lse, when given: shapes, dtypes, device (lse for softmax)."""
    op = "flash_norm_attention_bwd"
    if g is None:
        if lse is not None:
            raise ValueError(f"{op}: lse is given without g (pass both, as the forward saves them)")
        return
    if not isinstance(g, torch.Tensor) or tuple(g.shape) != (T, H, D) or g.dtype != x.dtype:
        raise ValueError(f"{op}: g must be a [T, H, D] = {(T, H, D)} tensor of x's dtype {x.dtype}, "
                         f"got {getattr(g, 'dtype', type(g).__name__)} {tuple(getattr(g, 'shape', ()))}")
    if activation == "softmax":
        if (not isinstance(lse, torch.Tensor) or tuple(lse.shape) != (T, H)
                or lse.dtype != torch.float32):
            raise ValueError(f"{op}: softmax with g needs lse, a float32 [T, H] = {(T, H)} tensor, "
                             f"got {None if lse is None else (lse.dtype, tuple(lse.shape))}")
    elif lse is not None:
        raise ValueError(f"{op}: lse is only saved for softmax, got activation {activation!r}")
    for name, t in (("g", g), ("lse", lse)):
        if t is not None and t.device != x.device:
            raise ValueError(f"{op}: {name} must be on x's device {x.device}, got {t.device}")


@functools.lru_cache(maxsize=None)
def _jit(which: str, passes):
    import normfuse
    return normfuse.jit(_kernel(which), passes=passes)


# How CPU tensors run the two kernels: None (the op refuses them) or the launcher that
# normfuse.testing.attention_bwd.interpreted() installs for the kernels' CPU tests:
# fn(kernel, passes, grid, args, consts, num_warps, num_stages), kernel the naive JIT function.
_CPU_LAUNCH = None


def cpu_launcher(fn):
    """Install `fn` as the CPU tensors' launcher (None: refuse CPU tensors); returns the previous
    one. Used by `normfuse.testing.attention_bwd.interpreted()`."""
    global _CPU_LAUNCH
    prev, _CPU_LAUNCH = _CPU_LAUNCH, fn
    return prev


_ERASED = re.compile(r"\[cluster-reduce-chain\] applied: .*the stores to scratch ([\w, ]+) erased")


def unwritten_scratch(remarks) -> set:
    """The rows kernel's fp32 scratch parameters its compiled form never touches, from the
    compile's remarks: those `cluster-reduce-chain{scratch=...}` erased the stores of (their
    reloads forwarded). The op then passes a one-element stand-in instead of a [T, H, D] fp32
    buffer."""
    out = set()
    for r in remarks:
        m = _ERASED.search(str(r))
        if m:
            out.update(n.strip() for n in m.group(1).split(","))
    return out


# compiled rows kernel's id -> (the kernel, its unwritten_scratch)
_UNWRITTEN: dict = {}


def _scratch(which, passes, args, consts, device, num_warps, num_stages, shape) -> list:
    """The rows kernel's z and dlnq arguments (args' stand-ins at positions Z and DLNQ replaced):
    full [T, H, D] fp32 buffers, except where the CUDA kernel's compiled form never touches them
    (`unwritten_scratch`; the saved kernel never touches z). The CPU interpreter keeps them."""
    f32 = dict(dtype=torch.float32, device=device)
    unused = set()
    if device.type == "cuda" and passes:
        ck = _jit(which, passes).warmup(*args, **consts, num_warps=num_warps,
                                        num_stages=num_stages)
        hit = _UNWRITTEN.get(id(ck))
        if hit is None or hit[0] is not ck:  # (read once per compiled kernel; ck kept alive)
            hit = _UNWRITTEN[id(ck)] = (ck, frozenset(unwritten_scratch(ck.remarks)))
        unused = set(hit[1])
    if which == "rows_saved":
        unused.add("Z")
    return [torch.empty((1,) if n in unused else shape, **f32) for n in ("Z", "DLNQ")]


def _launch(which, passes, grid, args, consts, device, num_warps, num_stages):
    if device.type == "cuda":
        return _jit(which, passes)[grid](*args, **consts, num_warps=num_warps, num_stages=num_stages)
    return _CPU_LAUNCH(_kernel(which), passes, grid, args, consts, num_warps, num_stages)


def flash_norm_attention_bwd(dout, x, k, v, offsets, out, mean, rstd, rrms, *,
                             activation: str = "gelu_tanh", qk_scale: float | None = None,
                             ln_weight=None, ln_bias=None, rms_weight=None, eps: float = 1e-5,
                             rms_eps: float | None = None, max_seqlen: int | None = None,
                             passes="default", config: BwdConfig | None = None,
                             block_m: int | None = None, g=None, lse=None,
                             check_offsets: bool = True, plan: str = "default",
                             dlnq_dtype: torch.dtype | None = None):
    """Gradients of flash_norm_attention w.r.t. x, k, v and the norm weights (None where absent).
    `passes`: the rows kernel's pipeline ("default": `default_bwd_passes(activation)`; () for
    the naive kernel, the numerical oracle). `config`: the tiles (`BwdConfig`); `block_m` overrides the
    row-block size of both kernels (the CPU tests use 16). `g` (the attention's output
    attend(ln_q), [T, H, D] in x's dtype) and, for softmax, `lse` ([T, H] float32): what the
    training forward saved (`flash_norm_attention_fwd(..., save=True)`); given, the rows kernel
    reads them instead of recomputing the attention (`fna_bwd_rows_saved_naive`).
    `check_offsets`: read the offsets on the host (once per offsets tensor and version:
    `ops.common.host_offsets`), check them (from 0 to T, non-decreasing) and launch exactly one
    program per row block. False (the autograd backward: the forward checked the same offsets)
    reads nothing on the host: the grid is exact where the forward's host copy is cached, else
    the upper bound cdiv(T, block_m) + B with the extra programs masked off (`row_block_table`).
    `plan`: "split" (two kernels) or "kvq" (three, the attention's products once; needs g and
    lse, L <= 128 keys and D <= 128; `passes` then is rows_pre's pipeline, "default"
    `PRE_PASSES`), see `PLANS`; "default": `DEFAULT_PLAN` where it applies, else "split".
    `dlnq_dtype` (an explicit plan "kvq" only): dz and dlnq between its kernels in x's dtype
    (the default) or torch.float32 (the split plan's values but for the order of sums, at twice
    their traffic; without a `config`, at `KVQ_F32_CONFIG`'s tile).
    """
    from ..kernels.attention_bwd import ACT_CODES
    if x.device.type != "cuda" and _CPU_LAUNCH is None:
        raise ValueError(f"flash_norm_attention_bwd: the tensors must be CUDA tensors, got x on "
                         f"{x.device} (the kernels' CPU tests run them in the interpreter under "
                         f"normfuse.testing.attention_bwd.interpreted())")
    weights = dict(ln_weight=ln_weight, ln_bias=ln_bias, rms_weight=rms_weight)
    # the offsets on the host: read (a sync, once per tensor and version) to be checked, or
    # where the forward has read them already (`host_offsets`' cache)
    host = host_offsets(offsets, read=check_offsets) if isinstance(offsets, torch.Tensor) else None
    T, H, D, B, L = _check(dout, x, k, v, offsets, out, mean, rstd, rrms, weights, activation,
                           host if check_offsets else None)
    _check_saved(g, lse, x, T, H, D, activation)
    plan = _check_plan(plan, dlnq_dtype, g, x, k, D)
    Hkv = k.shape[2]
    scale = default_qk_scale(activation, D) if qk_scale is None else float(qk_scale)
    dev = x.device
    kvq = plan == "kvq"
    passes = (PRE_PASSES if kvq else default_bwd_passes(activation)) if passes == "default" else (
        () if passes is None else (passes if isinstance(passes, str) else tuple(passes)))
    x, dout, k, v = (t.contiguous() for t in (x, dout, k, v))
    gs = None if g is None else g.contiguous()
    lnw, lnb, rmw = (None if w is None else w.contiguous() for w in (ln_weight, ln_bias, rms_weight))
    dx = torch.empty_like(x)
    # (the dK / dV kernel stores every key of every batch and head, an empty sequence's as zeros)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    if T == 0 or B == 0:
        dx.zero_()
        dk.zero_()
        dv.zero_()
        return (dx, dk, dv, *(None if w is None else torch.zeros_like(w) for w in (lnw, lnb, rmw)))
    if L == 0:
        raise ValueError("flash_norm_attention_bwd: k/v have no keys (L = 0)")
    mean, rstd, rrms = (t.contiguous() for t in (mean, rstd, rrms))
    cfg = config or (KVQ_F32_CONFIG if dlnq_dtype == torch.float32 else BwdConfig())
    if block_m is not None:
        cfg = BwdConfig(**{**cfg.__dict__, "block_m": block_m, "kv_block_m": block_m})
    tile = (cfg.kvq_block_m, cfg.kvq_dq_t, cfg.kvq_num_stages, cfg.kvq_num_warps)
    if kvq and dlnq_dtype == torch.float32 and KVQ_F32_TILES is not None \
            and tile not in KVQ_F32_TILES:
        why = ("dQ transposed (kvq_dq_t=True) with an fp32 dlnq faulted on the H200"
               if cfg.kvq_dq_t else "other tiles are not checked on the H200")
        raise ValueError(f"flash_norm_attention_bwd: dlnq_dtype=torch.float32 runs the kvq kernel "
                         f"only at (kvq_block_m, kvq_dq_t, kvq_num_stages, kvq_num_warps) in "
                         f"{sorted(KVQ_F32_TILES)} ({why}), got {tile}: pass no config "
                         f"(KVQ_F32_CONFIG's tile), or one of those")
    # the table is built where the offsets are (no host-to-device copy: from pageable memory it
    # may wait for the stream), sized by the upper bound; its live entries come first, so where
    # the offsets are on the host already only those are launched (the exact grid), except while
    # a CUDA graph is captured (a replay may see the offsets buffer refilled in place)
    table = cached_row_block_table(offsets, cfg.block_m, T)  # (per offsets tensor and version)
    nprog = row_block_count(T, B, cfg.block_m, host)
    f32 = dict(dtype=torch.float32, device=dev)
    # dz in x's dtype, the type the dK / dV kernel multiplies it in; z and dlnq (fp32 scratch of
    # the rows kernel) are sized by `_scratch` below
    # (the kvq plan's fp32 dlnq keeps dz in fp32 too: the inner residual's + dz unrounded)
    dz = torch.empty((T, H, D), device=dev, dtype=torch.float32 if kvq and
                     dlnq_dtype == torch.float32 else x.dtype)
    stand_in = torch.empty((1,), **f32)
    soft = activation == "softmax"
    stat = torch.empty((T, H, 2) if soft else (1,), **f32)
    any_w = any(w is not None for w in (lnw, lnb, rmw))
    # (each program stores its rows of the partials for every weight present, a dead one zeros;
    # an absent weight's rows are never read into a gradient)
    dw_part = torch.empty((nprog, 3, H * D) if any_w else (1,), **f32)
    dummy = x  # never read when the HAS_* flag is off
    act = ACT_CODES[activation]
    stride_kb, stride_kl = k.stride(0), k.stride(1)
    consts = dict(H=H, HKV=Hkv, D=D, ACT=act, BLOCK_M=cfg.block_m, BLOCK_L=cfg.block_l,
                  HAS_LNW=lnw is not None, HAS_LNB=lnb is not None, HAS_RMSW=rmw is not None)
    saved = [] if gs is None else [gs, lse.contiguous() if soft else stat]
    if kvq:
        _kvq_plan(x, dout, k, v, offsets, mean, rstd, rrms, lnw, lnb, rmw, saved, table, nprog,
                  dz, stat, dw_part, dx, dk, dv, L, scale, consts, cfg, passes,
                  dlnq_dtype or x.dtype)
        return (dx, dk, dv, *_weight_grads(dw_part, rmw, lnw, lnb))
    which = "rows" if gs is None else "rows_saved"
    head = [x, dout, k, v, mean, rstd, rrms, lnw if lnw is not None else dummy,
            lnb if lnb is not None else dummy, rmw if rmw is not None else dummy, table, *saved]
    tail = [stat, dx, dw_part, L, stride_kb, stride_kl, scale]
    z, dlnq = _scratch(which, passes, head + [stand_in, dz, stand_in] + tail, consts, dev,
                       cfg.num_warps, cfg.num_stages, (T, H, D))
    _launch(which, passes, (nprog,), head + [z, dz, dlnq] + tail, consts, dev, cfg.num_warps,
            cfg.num_stages)
    kv_consts = dict(H=H, HKV=Hkv, D=D, ACT=act, BLOCK_M=cfg.kv_block_m, BLOCK_L=cfg.kv_block_l,
                     HAS_LNW=lnw is not None, HAS_LNB=lnb is not None)
    nlb = -(-L // cfg.kv_block_l)
    off = offsets.contiguous()
    _launch("kv", (), (B * Hkv * nlb,),
            [x, k, v, mean, rstd, lnw if lnw is not None else dummy,
             lnb if lnb is not None else dummy, off, dz, stat, dk, dv, L, stride_kb, stride_kl,
             scale], kv_consts, dev, cfg.kv_num_warps, cfg.kv_num_stages)
    return (dx, dk, dv, *_weight_grads(dw_part, rmw, lnw, lnb))


def _weight_grads(dw_part, rmw, lnw, lnb) -> tuple:
    """(d ln_weight, d ln_bias, d rms_weight) from the programs' column partials (rows 0: the RMS
    weight, 1: the LayerNorm weight, 2: its bias), None where the weight is absent."""
    grads = [None if w is None else dw_part[:, i].sum(0).to(w.dtype)
             for i, w in enumerate((rmw, lnw, lnb))]
    return grads[1], grads[2], grads[0]


def _check_plan(plan, dlnq_dtype, g, x, k, D) -> str:
    """The plan to run ("default" resolved), checked against the inputs."""
    op = "flash_norm_attention_bwd"
    B, L, Hkv = k.shape[0], k.shape[1], k.shape[2]
    if dlnq_dtype is not None and plan != "kvq":
        raise ValueError(f"{op}: dlnq_dtype is the kvq plan's: pass plan='kvq' with it (plan "
                         f"{plan!r})")
    if plan == "default":
        # (the kvq plan runs B * Hkv programs, each walking its whole sequence: too few to fill
        # the GPU at a small batch, where the split plan's per-row-block programs do)
        fits = (g is not None and L <= KVQ_MAX_L and D <= KVQ_MAX_D
                and B * Hkv >= KVQ_MIN_PROGRAMS)
        plan = "kvq" if DEFAULT_PLAN == "kvq" and fits else "split"
    elif plan not in PLANS:
        raise ValueError(f"{op}: unknown plan {plan!r}; expected 'default' or one of {PLANS}")
    if plan != "kvq":
        return plan
    if g is None:
        raise ValueError(f"{op}: plan 'kvq' needs the forward's saved g (and lse for softmax): "
                         f"run the forward with save=True, or use plan 'split'")
    if L > KVQ_MAX_L or D > KVQ_MAX_D:
        raise ValueError(f"{op}: plan 'kvq' holds every key of a head in one tile: it needs "
                         f"L <= {KVQ_MAX_L} keys and D <= {KVQ_MAX_D}, got L = {L}, D = {D}; "
                         f"use plan 'split'")
    if dlnq_dtype not in (None, torch.float32, x.dtype):
        raise ValueError(f"{op}: dlnq_dtype must be x's dtype {x.dtype} or torch.float32, got "
                         f"{dlnq_dtype}")
    return plan


def _kvq_plan(x, dout, k, v, offsets, mean, rstd, rrms, lnw, lnb, rmw, saved, table, nprog, dz,
              stat, dw_part, dx, dk, dv, L, scale, consts, cfg, passes, dlnq_dtype) -> None:
    """The kvq plan's three launches (`PLANS`), into dz, stat, dw_part, dx, dk, dv."""
    dev = x.device
    T, H, D = dz.shape
    Hkv = k.shape[2]
    dummy = x
    w3 = [w if w is not None else dummy for w in (lnw, lnb, rmw)]
    has = dict(HAS_LNW=lnw is not None, HAS_LNB=lnb is not None)
    gs, lse_or_stat = saved
    _launch("rows_pre", passes, (nprog,),
            [x, dout, gs, lse_or_stat, mean, rstd, rrms, *w3, table, dz, stat, dw_part],
            dict(H=H, D=D, ACT=consts["ACT"], BLOCK_M=cfg.block_m, HAS_RMSW=rmw is not None,
                 **has), dev, cfg.num_warps, cfg.num_stages)
    dlnq = torch.empty((T, H, D), dtype=dlnq_dtype, device=dev)
    sums_in_post = cfg.kvq_sums_in_post
    # (the row partials between kvq and rows_post, unless rows_post sums dlnq itself)
    part = dlnq if sums_in_post else torch.empty((T, H, 2), dtype=torch.float32, device=dev)
    block_l = max(16, triton.next_power_of_2(L))
    order = cached_longest_first(offsets) if cfg.kvq_longest_first else offsets
    _launch("kvq", (), (k.shape[0] * Hkv,),
            [x, k, v, mean, rstd, *w3[:2], offsets.contiguous(), dz, stat, dk, dv, dlnq, part, L,
             k.stride(0), k.stride(1), scale, order],
            dict(H=H, HKV=Hkv, D=D, ACT=consts["ACT"], BLOCK_M=cfg.kvq_block_m, BLOCK_L=block_l,
                 DQ_T=cfg.kvq_dq_t, HAS_PART=not sums_in_post,
                 HAS_ORDER=cfg.kvq_longest_first, **has), dev, cfg.kvq_num_warps,
            cfg.kvq_num_stages)
    _launch("rows_post", (), (nprog,),
            [x, dout, mean, rstd, *w3[:2], table, dlnq, part, dx, dw_part],
            dict(H=H, D=D, BLOCK_M=cfg.block_m, SUMS=sums_in_post, **has), dev, cfg.num_warps, 1)
