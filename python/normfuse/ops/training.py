"""Training: the autograd layer of the fused ops and of the chained block, as torch.library ops.

Layers (Quack style): the naive backward kernels (kernels/backward.py) -> launchers compiled with
`passes="default"` (cluster-reduce + epilogue-norm fuse the norm backward into the dX GEMM's
epilogue) -> ops `normfuse::*_fwd` / `normfuse::*_bwd` (torch.library definitions with one
implementation for CPU and CUDA tensors: the fused kernels on sm_90, normfuse.ops.fallback's
reference math elsewhere; fake implementations, so torch.compile sees opaque ops) ->
`register_autograd` -> the public functions (normfuse.ops.functional), which come here when a
tensor requires grad under grad mode. An eager call (no torch.compile, tracer, mode or tensor
subclass) skips the dispatcher and torch.library's autograd wrapper: the same implementations,
setup and backward run from an autograd.Function (common.AutogradOp, EagerOp), ~70 us less host
time a forward on the H200 machine; torch.compile and the tracers see the ops.

What forward saves (nothing normalized is kept: xhat is recomputed from x and the statistics):
- pre-norm ops y = norm(x) W^T + b: x and the parameters; with the "cublas" plan's persistent
  norm backward (the default) nothing else: that kernel computes rstd / mean from the x rows it
  loads (PRENORM_STATS_IN_BWD); otherwise rstd [M] fp32 (LayerNorm: and mean [M]) from
  `row_stats` (one extra read of x: the fused forward kernel computes them in registers but does
  not write them).
- post-norm ops z = norm(h), h = x W^T + b + r: x (for dW), h (the norm's input, written by the
  training form of the fused forward kernel next to z), rstd (and mean), the parameters.

Backward:
- pre-norm, plan "fused" (PRENORM_BWD_PLAN): dX = normbwd(dY W) in one kernel (the norm backward
  as the dX GEMM's epilogue, a row reduction over K); dg, dbeta from the same kernel's
  per-row-block column partials; plan "cublas" (the default): dn = dY W on cuBLAS, then the
  norm backward without a GEMM (NOGEMM_NORM_BWD "persistent": the standalone norm's persistent
  kernel, ops/norm.py, writing n for dW too; "row", or rows longer than its MAX_N: the
  norm-backward kernel below with HAS_GEMM=False); plan "rowdot" (off by default, not measured yet): the two row sums
  from dY and the forward's output y (saved under that plan only) by a memory-bound pass, then
  the dX GEMM with an elementwise epilogue lowered by hopper-ws (no exchange between a row's
  tiles; issue 21), dg, dbeta and dW from dY^T xhat (`rowdot_backward`). Otherwise
  dW = dY^T n, n = xhat g + beta: by default (PRENORM_DW = "xn") the
  norm-backward kernel writes n from its epilogue, where it recomputes xhat anyway, and dW is a
  plain cuBLAS GEMM on it; or ("prologue", fused plan) n recomputed in a Triton dW GEMM's
  prologue (`dw_norm_naive`, split over M when there are few output tiles); db = colsum(dY).
  The dX kernel can instead be lowered by hopper-ws{post-norm=true} into the warp-specialized
  template (LOWERED_DX / NORMFUSE_DX_LOWERED=coop|pingpong; off by default until measured; it
  switches the post-norm block's regrouped kernel too).
- post-norm at op level (no next layer): dh = normbwd(dz) without a GEMM (`NOGEMM_NORM_BWD`:
  the standalone norm's persistent backward kernel, ops/norm.py, by default; or the same kernel
  as above with HAS_GEMM=False), then the plain GEMMs dx = dh W and dW = dh^T x on cuBLAS
  (torch.mm: no norm in them).
- the block (`postnorm_mlp`): the first post-norm's backward (SiLU' included) after the second
  linear's dX GEMM on cuBLAS, in the no-GEMM kernel (POSTNORM_MLP_BWD_PLAN = "composed", the
  default), or in that GEMM's epilogue (the regrouping, "regrouped").

`offset` (the norm's scale offset + g): folded exactly (fp32) in the pre-norm forward; where a
kernel reads the scale (post-norm forward, every backward) offset + g is rounded to g's dtype.
CUDA graphs: the training ops allocate only through torch's caching allocator, make no host
syncs, and cache nothing derived from weights (the fold is recomputed every step, inside a
captured step too), so a captured training step replays with the weights as they are then.
"""
from __future__ import annotations

import functools
import os
from typing import NamedTuple, Optional

import torch
import triton
from torch import Tensor

from ..kernels.configs import PERSISTENT_MIN_ROW_BLOCKS
from . import fallback
from .common import (EagerOp, autograd_op, check_prenorm, define_op, no_double_backward, sm_count,
                     unit_stride)
from .norm import MAX_N as NORM_MAX_N, _kernel_backward as norm_kernel_backward
from .norm import _kernel_forward as norm_kernel_forward
from .inference import route
from ..device import LaunchFailure, cluster_occupancy
from . import postnorm_linear as _postnorm
from .postnorm_linear import DEFAULT_POSTNORM_PASSES, _fit_and_grid, composes_for_rounded_tile
from .postnorm_linear import _prepare as _prepare_post
from .prenorm_linear import (LaunchPlan, PlanCache, PreparedLaunch, _as_2d, _ensure_allocator,
                             _offset_weight, fold_norm, launch_prenorm)

__all__ = ["norm_backward", "dw_norm", "row_stats", "prenorm_linear_train", "postnorm_linear_train",
           "postnorm_mlp_train", "select_backward_config", "backward_config_candidates",
           "default_backward_tiling"]

# ---------------------------------------------------------------------------------------------
# Configs and launchers
# ---------------------------------------------------------------------------------------------

def backward_config_candidates(N: int, gemm: bool = True) -> dict[str, dict]:
    """The tilings of the norm-backward kernel over rows of length N that the ops know, by name
    (the benchmark times each; `select_backward_config` picks one). The epilogue holds du, x and
    g tiles, so the tiles are smaller than forward's.

    - "cluster": 64-row blocks; N <= 128: the whole row in one CTA (epilogue-norm), larger:
      128-column tiles, one per CTA of a cluster of cdiv(N, 128) CTAs (cluster-reduce; more than
      16 tiles: several per CTA).
    - "cluster-m128" (with the GEMM): 128-row blocks, 32-deep R steps, 4 stages: twice the rows
      per W tile read, a full m64 wgmma per warpgroup.
    - "cluster-n256" (with the GEMM, N >= 512): 64-row blocks of 256-column tiles, a cluster of
      N / 256 CTAs: half the CTAs per row, each W tile read feeding twice the columns.
    - "row" (without the GEMM, next_pow2(N) <= 4096): the whole row in one CTA, about 8192
      elements per CTA (64 rows at N = 128, 8 at N = 1024, 2 at N = 4096): epilogue-norm alone,
      no cluster barrier; a bandwidth-bound kernel.
    - "row-16k" (without the GEMM, 512 <= next_pow2(N) <= 4096): the same with 16384 elements,
      half the dg/dbeta partial rows (fewer warps resident: about 200 registers a thread).
    Not yet measured (the next sweep will): "cluster-n256", "row-16k".
    """
    if N <= 128:
        bn = max(32, 1 << (max(N, 1) - 1).bit_length())
        return {"cluster": dict(BLOCK_M=64, BLOCK_N=bn, BLOCK_R=64, num_warps=4 if bn <= 64 else 8,
                                num_stages=3)}
    c = {"cluster": dict(BLOCK_M=64, BLOCK_N=128, BLOCK_R=64, num_warps=8, num_stages=3)}
    if gemm:
        c["cluster-m128"] = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_R=32, num_warps=8, num_stages=4)
        if N >= 512:
            c["cluster-n256"] = dict(BLOCK_M=64, BLOCK_N=256, BLOCK_R=64, num_warps=8, num_stages=3)
    else:
        bn = 1 << (N - 1).bit_length()
        if bn <= 4096:
            c["row"] = dict(BLOCK_M=max(1, 8192 // bn), BLOCK_N=bn, BLOCK_R=64,
                            num_warps=8, num_stages=1)
            if bn >= 512:
                c["row-16k"] = dict(BLOCK_M=16384 // bn, BLOCK_N=bn, BLOCK_R=64,
                                    num_warps=8, num_stages=1)
    return c


# An explicit choice of candidate per (gemm, N), over the default below (the benchmark's sweep
# fills it with what it measured fastest; users may too).
BACKWARD_CONFIG_CHOICE: dict[tuple[bool, int], str] = {}


def default_backward_tiling(N: int, gemm: bool = True) -> str:
    """The tiling measured fastest on the H200 (bench/results/2026-11-30/backward-sweep, RMSNorm,
    M = 262144, N in {512, 1024, 2048}; all correct to 1.7e-3 against fp32): with the GEMM,
    "cluster-m128" (1.30 / 2.56 / 5.61 ms against "cluster"'s 1.74 / 3.50 / 7.96 ms at R =
    1024, despite 12-72 bytes of ptxas spills); without it, "row" (0.66 / 0.74 / 1.13 ms
    against 0.68 / 1.02 / 2.46 ms). N <= 128 has "cluster" only (one tile, no cluster)."""
    return _default_name(backward_config_candidates(N, gemm), gemm)


def _default_name(cands: dict, gemm: bool) -> str:
    name = "cluster-m128" if gemm else "row"
    return name if name in cands else "cluster"


def select_backward_config(N: int, gemm: bool = True) -> dict:
    """The norm-backward kernel's tiles for rows of length N, with (gemm=True: the dX GEMM in front)
    or without a GEMM: the candidate named in BACKWARD_CONFIG_CHOICE, else
    `default_backward_tiling` (`backward_config_candidates` describes them; a named candidate
    that this N does not have falls back to the default)."""
    cands = backward_config_candidates(N, gemm)
    name = BACKWARD_CONFIG_CHOICE.get((bool(gemm), int(N)))
    if name not in cands:
        name = _default_name(cands, gemm)
    return dict(cands[name])


# How the pre-norm backward computes dW = dY^T n, n = xhat g + beta:
# - "xn": the dX kernel also writes n (one bf16 [M, K] store in its epilogue, where xhat is at
#   hand anyway) and dW is a plain GEMM on it, on cuBLAS like the post-norm ops' plain GEMMs;
#   a transient [M, K] tensor, freed after the GEMM;
# - "prologue": `dw_norm_naive` recomputes n from x in the dW GEMM's prologue (no temporary; a
#   Triton GEMM with a register-modified operand).
# Measured on the H200 (bench/results/2026-11-30/backward-sweep, RMSNorm, M = 262144, R = 1024):
# the whole pre-norm backward takes 2.10 / 4.19 / 9.29 ms with "xn" against 2.69 / 5.40 / 11.72
# ms with "prologue" at K = 512 / 1024 / 2048.
PRENORM_DW = "xn"

DW_CONFIG = dict(BLOCK_N=128, BLOCK_K=128, BLOCK_M=64, num_warps=8, num_stages=3)

# The dX kernel (the norm backward behind the dX GEMM) lowered by hopper-ws{post-norm=true} into
# the warp-specialized template (issue 21 item 1; docs/NOTES.md "The pre-norm dX kernel through
# hopper-ws"): 'coop' (128 x 128 tiles on two warpgroups), 'pingpong' (64 x 128, two consumers)
# or None (the cluster pipeline, `passes="default"`). Off by default until measured on the H200;
# NORMFUSE_DX_LOWERED=coop|pingpong|off sets it at import. The dX GEMM forms (w given) are
# switched: the pre-norm ops' and the post-norm block's (postnorm_mlp's regrouped backward: SiLU'
# between the norm and the GEMM, ACT = 1; a residual gradient, DRES, lowers too, as a pointer load
# in the normalizing epilogue); a kernel the pass does not lower or a launch it cannot take (TMA
# alignment, rows of more N tiles than SMs) runs the default pipeline, with a RuntimeWarning once
# per geometry.
LOWERED_DX_SCHEDULES = ("coop", "pingpong")


def _dx_switch_from_env() -> Optional[str]:
    v = os.environ.get("NORMFUSE_DX_LOWERED", "").strip().lower() or "off"
    if v in ("off", "none", "0"):
        return None
    if v not in LOWERED_DX_SCHEDULES:
        raise ValueError(f"NORMFUSE_DX_LOWERED must be one of {LOWERED_DX_SCHEDULES} or 'off', "
                         f"got {v!r}")
    return v


LOWERED_DX: Optional[str] = _dx_switch_from_env()
# the TMA ring's depth of the lowered dX kernel (0: the template's default, 3 for coop, 4 for
# ping-pong; coop 128 x 128 has shared memory for 4 or 5: bench/dx_lowered.py times 'coop-s4')
LOWERED_DX_STAGES = 0


def lowered_dx_passes(schedule: str = "coop", stages: Optional[int] = None) -> str:
    """The lowered dX kernel's pipeline: hopper-ws{post-norm=true} on the naive kernel (its two
    passes over the row, with the first pass's side outputs; no cluster-reduce before it).
    `stages`: the ring's depth (default LOWERED_DX_STAGES)."""
    if schedule not in LOWERED_DX_SCHEDULES:
        raise ValueError(f"lowered dX schedule must be one of {LOWERED_DX_SCHEDULES}, got "
                         f"{schedule!r}")
    stages = LOWERED_DX_STAGES if stages is None else int(stages)
    return ("hopper-ws{post-norm=true,schedule=" + schedule
            + (f",stages={stages}" if stages else "") + "}")


def lowered_dx_config(schedule: str = "coop", block_n: int = 128) -> dict:
    """The naive kernel's tile for the lowered form (the template takes the kernel's tile):
    coop 128 x 128 x 64 on 8 warps, ping-pong 64 x 128 x 64 (4 warps a consumer). 128 columns:
    at 128 x 256 the epilogue holds du (fp32), x and g's column slice at once and ptxas spills
    1.1-1.6 KB per thread (docs/NOTES.md); `block_n=256` asks for it anyway (benchmarks)."""
    bm = 64 if schedule == "pingpong" else 128
    return dict(BLOCK_M=bm, BLOCK_N=block_n, BLOCK_R=64,
                num_warps=8 if bm * block_n >= 128 * 128 and schedule == "coop" else 4,
                num_stages=3)


_DX_WARNED: set = set()


@functools.lru_cache(maxsize=None)
def _launcher(name: str, passes: str = "default"):
    import normfuse
    from ..kernels import backward
    return normfuse.jit(getattr(backward, name), passes=passes)


def _sms(device) -> int:
    return sm_count(device)


ROW_STATS_CONFIG = None  # a dict (BLOCK_M, BLOCK_K, num_warps) fixes the tiling; None: the rule


def row_stats_config(M: int, K: int, sms: int = 132) -> dict:
    """The statistics kernel's tiling for x [M, K]: a memory-bound row reduction wants many
    loads in flight, so at least ~4 programs per SM (BLOCK_M rows each, a power of two from 1
    to 64) and 4096-element tiles (BLOCK_K up to 1024, 32 fp32 registers per thread at 4 warps).
    The former fixed 64 x 128 tiling gave 128 programs at M = 8192, one 4-warp CTA per SM:
    46 us for 33 MB on the H200 (0.7 TB/s; 2026-12-02, bench/results/2026-12-02/session8).
    Not measured yet: the device time of this rule (bench_ops' plans, *_device_ms)."""
    bk = min(1024, triton.next_power_of_2(K))
    bm = max(1, min(64, 4096 // bk))
    while bm > 1 and -(-M // bm) < 4 * sms:
        bm //= 2
    return dict(BLOCK_M=bm, BLOCK_K=bk, num_warps=4)


def row_stats(x2: Tensor, eps: float, is_ln: bool, config: Optional[dict] = None
              ) -> tuple[Tensor, Tensor]:
    """rstd (and mean; an empty tensor for RMSNorm) per row of x2 [M, K], fp32. `config`
    (BLOCK_M, BLOCK_K, num_warps) overrides ROW_STATS_CONFIG, then `row_stats_config`."""
    M, K = x2.shape
    c = config or ROW_STATS_CONFIG or row_stats_config(M, K, _sms(x2.device) if x2.is_cuda else 132)
    rstd = torch.empty(M, device=x2.device, dtype=torch.float32)
    mean = torch.empty(M if is_ln else 0, device=x2.device, dtype=torch.float32)
    if M:
        _launcher("row_stats", ())[(triton_cdiv(M, c["BLOCK_M"]),)](
            x2, rstd, mean if is_ln else rstd, M, K, x2.stride(0), float(eps), IS_LN=is_ln,
            BLOCK_M=c["BLOCK_M"], BLOCK_K=c["BLOCK_K"], num_warps=c["num_warps"])
    return rstd, mean


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def norm_backward(dy: Tensor, w: Optional[Tensor], x: Tensor, rstd: Tensor, mean: Tensor,
                  g: Optional[Tensor], beta: Optional[Tensor], dres: Optional[Tensor], *,
                  is_ln: bool, act: int = 0, want_dg: bool = True, xn_out: Optional[Tensor] = None,
                  passes: str = "default", config: Optional[dict] = None,
                  op: str = "norm_backward",
                  lowered: Optional[str] = None) -> tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
    """dx = normbwd(du) (+ dres), du = dy @ w (w [R, N]; None: du = dy) times SiLU'(n) when act=1,
    n = xhat g + beta. Returns (dx [M, N] in x's dtype, dg [N] fp32 or None, dbeta [N] fp32 or
    None). `xn_out` ([M, N], unit column stride): the kernel also writes n there (beta is added
    when given; with act=0 beta is used for nothing else). One launch of `norm_backward_naive`
    through `passes` (default: fused, in a cluster form the driver launches: `_launch_fitted`);
    `config` overrides `select_backward_config`; `op` names the caller in a launch failure.
    `lowered` ('coop' | 'pingpong'; default the module switch LOWERED_DX, used only with
    passes="default" and the dX GEMM form, with or without SiLU' and dres): the kernel lowered by
    hopper-ws (`_dx_lowered`)."""
    M, N = x.shape
    if lowered is None and passes == "default" and config is None:
        lowered = LOWERED_DX
    if lowered and (w is None or M == 0):
        lowered = None  # forms the lowered switch does not cover: the default pipeline
    if lowered:
        cfg = lowered_dx_config(lowered) if config is None else dict(config)
    else:
        cfg = dict(config) if config is not None else select_backward_config(N, gemm=w is not None)
    nb = triton_cdiv(M, cfg["BLOCK_M"])
    dx = torch.empty(M, N, device=x.device, dtype=x.dtype)
    dgp = torch.empty(nb if want_dg else 0, N, device=x.device, dtype=torch.float32)
    dbp = torch.empty(nb if (want_dg and is_ln) else 0, N, device=x.device, dtype=torch.float32)
    if M == 0:
        z = torch.zeros(N, device=x.device, dtype=torch.float32)
        return dx, (z if want_dg else None), (z.clone() if want_dg and is_ln else None)
    R = w.shape[0] if w is not None else N
    dy = dy if dy.stride(-1) == 1 else dy.contiguous()
    if w is not None and w.stride(-1) != 1:
        w = w.contiguous()
    x = x if x.stride(-1) == 1 else x.contiguous()
    if dres is not None and dres.stride(-1) != 1:
        dres = dres.contiguous()
    _ensure_allocator()
    any_ptr = dy
    args = (dy, w if w is not None else any_ptr, x, rstd, mean if is_ln else rstd,
            g if g is not None else any_ptr, beta if beta is not None else any_ptr,
            dres if dres is not None else any_ptr, dx, dgp if want_dg else rstd,
            dbp if (want_dg and is_ln) else rstd, xn_out if xn_out is not None else any_ptr, M, R,
            dy.stride(0), w.stride(0) if w is not None else 0, x.stride(0),
            dres.stride(0) if dres is not None else 0, dx.stride(0),
            xn_out.stride(0) if xn_out is not None else 0)
    meta = dict(N=N, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_R=cfg["BLOCK_R"],
                IS_LN=is_ln, HAS_GEMM=w is not None, HAS_G=g is not None, HAS_B=beta is not None,
                ACT=act, HAS_DRES=dres is not None, HAS_DG=want_dg,
                EVEN_R=R % cfg["BLOCK_R"] == 0, HAS_XN=xn_out is not None,
                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])

    def what(ctas: int) -> str:
        from .cluster_form import describe_form
        return (f"{op}: norm backward ({'LayerNorm' if is_ln else 'RMSNorm'}"
                f"{', after the dX GEMM' if w is not None else ''}) launch failed for M={M}, "
                f"N={N}, R={R}, {x.dtype}, tiles {cfg['BLOCK_M']}x{cfg['BLOCK_N']}, form: "
                + describe_form(N, cfg["BLOCK_N"], ctas, False, nb))
    if lowered and _dx_lowered(lowered, args, meta, (nb,), op):
        pass
    elif lowered:  # the default pipeline at its own tiles (fresh partials: another row block)
        return norm_backward(dy, w, x, rstd, mean, g, beta, dres, is_ln=is_ln, act=act,
                             want_dg=want_dg, xn_out=xn_out, op=op, lowered="")
    else:
        _launch_fitted("norm_backward_naive", passes, (nb,), args, meta,
                       triton_cdiv(N, cfg["BLOCK_N"]), what)
    dg = dgp.sum(0) if want_dg else None
    db = dbp.sum(0) if (want_dg and is_ln) else None
    return dx, dg, db


def _dx_lowered(schedule: str, args: tuple, meta: dict, grid: tuple, op: str) -> bool:
    """Launch the dX kernel lowered by hopper-ws (`lowered_dx_passes(schedule)`) when the pass
    lowers it and the lowered launch can take these operands (TMA alignment, rows of at most as
    many N tiles as SMs); False (nothing launched) otherwise, with a RuntimeWarning once per
    geometry naming the reason: the caller then runs the default pipeline. A lowering that
    raises (PassError) is reported the same way, not raised."""
    from ..passes import PassError
    try:
        # (normfuse.jit refuses a bad pipeline when it is made, the pass when it runs)
        launcher = _launcher("norm_backward_naive", lowered_dx_passes(schedule))
        ck = launcher.warmup(*args, **meta)
    except PassError as e:
        why = f"the lowering failed: {e}"
    else:
        why = ("hopper-ws did not lower it: " + "; ".join(r for r in ck.remarks if "hopper-ws" in r)
               if ck.lowered is None else ck.lowered.why_not(args))
    if why is None:
        launcher[grid](*args, **meta)
        return True
    key = (schedule, meta["N"], meta["IS_LN"], args[0].shape[1], str(args[0].dtype), why)
    if key not in _DX_WARNED:
        _DX_WARNED.add(key)
        import warnings
        warnings.warn(f"normfuse: {op}: the lowered dX kernel cannot run here ({why}); running the "
                      "default pipeline", RuntimeWarning, stacklevel=4)
    return False


def _backward_passes(ctas: int) -> str:
    """The default pipeline with cluster-reduce's largest cluster lowered to `ctas`."""
    from ..pipeline import DEFAULT_PIPELINE
    return ",".join(f"cluster-reduce{{max-cluster={ctas}}}" if p == "cluster-reduce" else p
                    for p in DEFAULT_PIPELINE)


def _launch_fitted(name: str, passes: str, grid: tuple, args: tuple, meta: dict, tiles: int,
                   what) -> None:
    """Launch kernel `name` under `passes`. Under the default pipeline, when the driver fits no
    cluster of the size cluster-reduce chose (refused before anything ran), the next form of
    `ops/cluster_form.py`'s rule that fits is launched instead: a smaller cluster with more tiles
    per CTA, else the unfused kernel. A failure is raised naming the op, the shapes and the form
    (`what(ctas)`). The driver is asked once per loaded kernel (compiler.CompiledKernel.launch):
    after the first call this costs nothing."""
    from .cluster_form import choose_cluster_form
    try:
        _launcher(name, passes)[grid](*args, **meta)
        return
    except LaunchFailure as e:
        if passes != "default" or not e.fits_none:
            raise e.for_op(what(e.num_ctas)) from e
    from ..passes.cluster_reduce import cluster_candidates
    default = (cluster_candidates(tiles) or [None])[0]  # the default pipeline's size

    def launcher(c: int):
        return _launcher(name, "default" if c == default else _backward_passes(c) if c > 1 else ())

    def fits(c: int) -> bool:
        kernel = launcher(c).warmup(*args, **meta).kernel
        return int(kernel.metadata.num_ctas or 1) == 1 or cluster_occupancy(kernel) > 0

    form = choose_cluster_form(tiles, fits)
    try:
        launcher(1 if form.unclustered else form.ctas)[grid](*args, **meta)
    except LaunchFailure as e:
        raise e.for_op(what(e.num_ctas)) from e


def dw_norm(dy: Tensor, x: Tensor, rstd: Tensor, mean: Tensor, g: Optional[Tensor],
            beta: Optional[Tensor], *, is_ln: bool, passes: str = "default") -> Tensor:
    """dW [NO, K] = dy^T (xhat g + beta), xhat recomputed in the prologue; fp32 partials over
    SPLIT chunks of M when the output has fewer tiles than 2 per SM, summed here."""
    M, K = x.shape
    NO = dy.shape[1]
    c = DW_CONFIG
    tiles = triton_cdiv(NO, c["BLOCK_N"]) * triton_cdiv(K, c["BLOCK_K"])
    blocks = triton_cdiv(M, c["BLOCK_M"])
    split = max(1, min(blocks, (2 * _sms(x.device)) // max(tiles, 1)))
    per = triton_cdiv(blocks, split) * c["BLOCK_M"]  # rows per split, a multiple of BLOCK_M
    split = triton_cdiv(M, per) if M else 1
    out = torch.zeros(split, NO, K, device=x.device, dtype=torch.float32)
    if M == 0:
        return out.sum(0).to(x.dtype)
    dy = dy if dy.stride(-1) == 1 else dy.contiguous()
    x = x if x.stride(-1) == 1 else x.contiguous()
    _launcher("dw_norm_naive", passes)[(triton_cdiv(NO, c["BLOCK_N"]), triton_cdiv(K, c["BLOCK_K"]), split)](
        dy, x, rstd, mean if is_ln else rstd, g if g is not None else dy,
        beta if beta is not None else dy, out, M, NO, per, dy.stride(0), x.stride(0),
        K=K, BLOCK_N=c["BLOCK_N"], BLOCK_K=c["BLOCK_K"], BLOCK_M=c["BLOCK_M"], IS_LN=is_ln,
        HAS_G=g is not None, HAS_B=beta is not None, num_warps=c["num_warps"],
        num_stages=c["num_stages"])
    return out[0].to(x.dtype) if split == 1 else out.sum(0).to(x.dtype)


# ---------------------------------------------------------------------------------------------
# The training ops: torch.library definitions (one implementation for CPU and CUDA tensors, the
# reference path where the fused kernels do not run), fake implementations, autograd
# ---------------------------------------------------------------------------------------------

_LIB = torch.library.Library("normfuse", "FRAGMENT")


def _define(schema: str, impl, fake) -> None:
    define_op(_LIB, schema, impl, fake)


def _empty(x: Tensor) -> Tensor:
    """An absent gradient or statistic: a fresh empty tensor (op outputs may not alias)."""
    return x.new_empty(0)


# How the pre-norm backward computes dX = normbwd(dY W) ("plans"; dW = dY^T n with n written by
# the norm-backward kernel, or recomputed, as PRENORM_DW says):
# - "fused": dY W in the norm-backward kernel's k-loop, the norm backward in its epilogue (one
#   kernel, Triton's sm_90 GEMM lowering: 3.4x cuBLAS's dX GEMM time on the H200, NOTES);
# - "cublas": dn = dY W on cuBLAS (bf16 out, fp32 accumulate), then the norm-backward kernel
#   without the GEMM (the post-norm ops' "row" tiling), which also writes n.
# Per op; NORMFUSE_PRENORM_BWD overrides ("fused", or "rmsnorm_linear:fused,..."). The default is
# "cublas": the backward kernels alone on the H200 (2026-12-01 session 5, `bench/dx_lowered.py`,
# do_bench with L2 flushed, RMSNorm; bench/results/2026-12-01/session5/dx), ms and / cuBLAS's dX
# GEMM alone: 262144 x 1024 x 1024: "cublas" 1.515 (1.84x), "fused" 2.609 (3.18x), the fused
# kernel lowered by hopper-ws (LOWERED_DX) 1.658-1.955 (2.02-2.38x); 8192 x 2048 x 2048:
# 0.149 (1.59x), 0.294 (3.13x), 0.162-0.194 (1.73-2.07x). (The first comparison, fwd + bwd at
# T = 8192, gpu-run2/ops.md, was host-bound and ranked the plans either way.) LayerNorm's plans
# were not timed separately; its fused kernel carries one row sum more.
# - "rowdot" (issue 21, not measured yet, off by default): the norm backward's two row sums
#   taken from dY and the forward's output y (saved for it) by a memory-bound pass
#   (`rowdot_sums`), then the dX GEMM with an elementwise epilogue
#   (`norm_backward_rowdot_naive`: no exchange between a row's tiles, one store, lowered by
#   hopper-ws); dg, dbeta and dW from the dW side (`rowdot_backward`). The forward saves y
#   only under this plan; a model that changes y in place afterwards (an in-place RoPE) cannot
#   use it (autograd refuses the backward).
PRENORM_BWD_PLANS = ("fused", "cublas", "rowdot")
PRENORM_BWD_PLAN = {"rmsnorm_linear": "cublas", "layernorm_linear": "cublas"}
# the rowdot kernel's tiles: 128 x 256 (the template's tile that runs at 1.05-1.1x cuBLAS in the
# forward, where 128 x 128 ran 1.4-2.0x; H200, session 10). It fits the consumer's registers
# because the dX kernel reads g folded into its B operand (W diag(g), made per call:
# `rowdot_backward`) and x by TMA into the staging tile (hopper-ws): ptxas, sm_90, 8192 x 2048
# x 2048, no spill for RMSNorm and LayerNorm (with g in the epilogue and x by pointers: 804 /
# 1148 B; x by TMA alone: 348 / 908 B; CPU, 2026-12-02). Not timed on the H200 at 128 x 256 yet.
# ROW_COEFS: the dX kernel's epilogue as per-row coefficients, dx = du a + xc b + c (two FMAs
# per element; `norm_backward_rowdot_naive`), where the norm backward's terms took six operations
# and a select (sm_90, 128 x 256: the kernel's SASS 1888 -> 1496 instructions for LayerNorm,
# 1616 -> 1344 for RMSNorm; CPU, 2026-12-05). False: the terms (a benchmark's
# comparison). Timed (H100, 2026-12-05, `bench/results/2026-12-05/session38/dx`): the same
# within 1-2 % as the terms at all six cells (the kernel is not instruction-bound there).
ROWDOT_CONFIG = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_R=64, num_warps=8, num_stages=3,
                     SUMS_BLOCK_M=16, SUMS_BLOCK_R=256, ROW_COEFS=True)
# its dX kernel (the GEMM with an elementwise epilogue, one store) through hopper-ws: the
# warp-specialized template, the epilogue translated from the IR; () runs Triton's own lowering.
# epi-prefetch (the epilogue's row vectors loaded before the k-loop) and staging-late (the
# staging tile handed back inside the next tile's k-loop, the dx store's drain under it): the
# dX kernel against cuBLAS's dX GEMM (H100, 2026-12-05, session38/dx; device ms ratios, RMS /
# LayerNorm) at 262144 x 1024 x 1024 1.32 / 1.33x -> 1.23 / 1.27x, at 8192 x 2048 x 2048 1.15 /
# 1.17x -> 1.15 / 1.15x, at 8192 x 2048 x 5632 1.07 / 1.07x -> 1.07 / 1.06x
ROWDOT_PASSES = ("hopper-ws{epilogue-tma=true,epi-prefetch=true,staging-late=true}",)


def _plans_from_env(value: Optional[str]) -> None:
    if not value:
        return
    for item in value.split(","):
        op, _, plan = item.rpartition(":")
        if plan not in PRENORM_BWD_PLANS:
            raise ValueError(f"NORMFUSE_PRENORM_BWD={value!r}: unknown plan {plan!r}; expected "
                             f"one of {PRENORM_BWD_PLANS}, optionally per op as op:plan")
        for name in ([op] if op else list(PRENORM_BWD_PLAN)):
            if name not in PRENORM_BWD_PLAN:
                raise ValueError(f"NORMFUSE_PRENORM_BWD={value!r}: unknown op {name!r}; expected "
                                 f"one of {sorted(PRENORM_BWD_PLAN)}")
            PRENORM_BWD_PLAN[name] = plan


_plans_from_env(os.environ.get("NORMFUSE_PRENORM_BWD"))


def rowdot_backward(dy: Tensor, w: Tensor, y: Tensor, bias: Optional[Tensor], x: Tensor,
                    rstd: Tensor, mean: Tensor, g: Optional[Tensor], beta: Optional[Tensor], *,
                    is_ln: bool, has_bias: bool, config: Optional[dict] = None,
                    passes=None) -> tuple:
    """The pre-norm backward of plan "rowdot": (dx, dg fp32 or None, dbeta fp32 or None, dW,
    db fp32 or None) for y = n w^T + bias, n = xhat g + beta, w [R, N].

    - The norm backward's two row sums from dy and the forward's output y (`rowdot_sums`).
    - dx: the dX GEMM dy (w diag(g)) (g folded into its B operand) with an elementwise
      epilogue (`norm_backward_rowdot_naive`, its one store dx), lowered by hopper-ws (`passes`, default ROWDOT_PASSES; the unlowered kernel
      with a RuntimeWarning where the lowered launch cannot take the operands).
    - The rest from the dW side, without the dX GEMM's output: dWhat = dy^T xhat (cuBLAS; xhat
      written by the sums' pass from x and the statistics), dW = dWhat g + db beta^T,
      dg = sum_R(w * dWhat), dbeta = w^T db (db = colsum(dy))."""
    M, N = x.shape
    R = w.shape[0]
    cfg = dict(ROWDOT_CONFIG if config is None else config)
    passes = ROWDOT_PASSES if passes is None else passes
    nb, nt = triton_cdiv(M, cfg["BLOCK_M"]), triton_cdiv(N, cfg["BLOCK_N"])
    dx = torch.empty(M, N, device=x.device, dtype=x.dtype)
    # colsum(dY) only where something reads it (a bias's gradient, beta's terms): a full pass
    # over dY, 0.21 ms at 262144 x 1024 on the H100 (bench/results/2026-12-05/session37/dx)
    dbf = dy.sum(0, dtype=torch.float32) if has_bias or beta is not None else None
    if M == 0:
        z = torch.zeros(N, device=x.device, dtype=torch.float32)
        return (dx, z if g is not None else None, z.clone() if beta is not None else None,
                torch.zeros_like(w),
                torch.zeros(R, device=x.device, dtype=torch.float32) if has_bias else None)
    dy = dy if dy.stride(-1) == 1 else dy.contiguous()
    y = y if y.stride(-1) == 1 else y.contiguous()
    w = w if w.stride(-1) == 1 else w.contiguous()
    x = x if x.stride(-1) == 1 else x.contiguous()
    wf = w.float()
    # BP = b + W beta, WG = W g: [R] fp32, per call (the weights change every step)
    bp = bias.float() if bias is not None else torch.zeros(R, device=x.device,
                                                            dtype=torch.float32)
    if beta is not None:
        bp = bp + wf @ beta.float()
    wg = (wf @ g.float() if g is not None else wf.sum(1)) if is_ln else bp
    _ensure_allocator()
    s1 = torch.empty(M, device=x.device, dtype=torch.float32)
    s2 = torch.empty(M if is_ln else 0, device=x.device, dtype=torch.float32)
    xhat = torch.empty(M, N, device=x.device, dtype=x.dtype)  # for dW = (dY^T xhat) g + ...
    bm = cfg["SUMS_BLOCK_M"]
    _launcher("rowdot_sums", ())[(triton_cdiv(M, bm),)](
        dy, y, bp.contiguous(), wg.contiguous(), s1, s2 if is_ln else s1, x, rstd,
        mean if is_ln else rstd, xhat, M, R, dy.stride(0), y.stride(0), x.stride(0),
        xhat.stride(0), N=N, IS_LN=is_ln, BLOCK_M=bm, BLOCK_R=cfg["SUMS_BLOCK_R"],
        BLOCK_N=cfg["SUMS_BLOCK_R"], num_warps=4)
    # du g = dy (w diag(g)): g folded into the dX GEMM's B operand (one elementwise pass over w
    # per call) keeps g's column slice out of the epilogue's registers
    wd = (wf * g.float()[None, :]).to(w.dtype) if g is not None else w
    args = (dy, wd, s1, s2 if is_ln else s1, x, rstd, mean if is_ln else rstd,
            dy, beta if beta is not None else dy, dx, rstd, rstd, dy, M,
            R, dy.stride(0), wd.stride(0), x.stride(0), dx.stride(0), 0)
    meta = dict(N=N, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_R=cfg["BLOCK_R"],
                IS_LN=is_ln, HAS_G=False, HAS_B=beta is not None, HAS_DG=False,
                EVEN_R=R % cfg["BLOCK_R"] == 0, HAS_XN=False,
                ROW_COEFS=cfg.get("ROW_COEFS", True),
                num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    _launcher("norm_backward_rowdot_naive", passes)[(nb, nt)](*args, **meta)
    # the dW side: one cuBLAS GEMM over xhat (written by the sums' pass), then weight-sized math
    dwh = torch.mm(dy.t(), xhat).float()
    dw = dwh * g.float()[None, :] if g is not None else dwh.clone()
    if beta is not None:
        dw += dbf[:, None] * beta.float()[None, :]
    dg = (wf * dwh).sum(0) if g is not None else None
    dbeta = wf.t() @ dbf if beta is not None else None
    return dx, dg, dbeta, dw.to(w.dtype), (dbf if has_bias else None)


def prenorm_backward(dy, x, g, beta, weight, rstd, mean, *, is_ln: bool, has_bias: bool,
                     plan: str = "fused", y: Optional[Tensor] = None,
                     bias: Optional[Tensor] = None, eps: Optional[float] = None):
    """(dx, dg or None, dbeta or None, dW, db fp32 or None) of the fused pre-norm op, by `plan`
    (see PRENORM_BWD_PLAN); dg and dbeta summed in fp32, in x's dtype from the "cublas" plan's
    persistent norm kernel, fp32 elsewhere; g is the norm's scale (offset applied). "rowdot" needs
    the forward's output `y` and its `bias` (without y, as when the plan changed between the
    forward and the backward: "cublas"). Empty `rstd` (the forward deferred the statistics,
    `stats_in_backward`): the persistent norm backward computes them from x with `eps`; any other
    path gets them from `row_stats` first."""
    if plan == "rowdot" and y is None:
        plan = "cublas"
    deferred = rstd.numel() == 0 and x.shape[0] > 0
    if deferred and eps is None:
        raise ValueError("prenorm_backward: the forward kept no statistics (empty rstd) and no "
                         "eps was given to compute them")
    persistent = _persistent_after_cublas(plan, x.shape[1])
    if deferred and not persistent:
        rstd, mean = row_stats(x if x.stride(-1) == 1 else x.contiguous(), eps, is_ln)
        deferred = False
    if plan == "rowdot":
        return rowdot_backward(dy, weight, y, bias, x, rstd, mean, g, beta, is_ln=is_ln,
                               has_bias=has_bias)
    if plan == "cublas":
        dn = torch.mm(dy, weight if weight.stride(-1) == 1 else weight.contiguous())
        xn = x.new_empty(x.shape)
        if persistent:
            # the standalone norm's persistent kernel, writing n for dW as well (g is the scale
            # with its offset applied: offset 0 here), the statistics from x where deferred
            x2 = x if x.stride(-1) == 1 else x.contiguous()
            dx, dg, dbeta = norm_kernel_backward(dn, x2, unit_stride(g), rstd, mean, 0.0, is_ln,
                                                 True, is_ln, xn_out=xn,
                                                 beta=unit_stride(beta) if is_ln else None,
                                                 eps=eps if deferred else None,
                                                 dg_dtype=x.dtype, db_dtype=x.dtype)
        else:
            dx, dg, dbeta = norm_backward(dn, None, x, rstd, mean, g, beta, None, is_ln=is_ln,
                                          want_dg=True, xn_out=xn, op=_pre_op(is_ln))
        if not is_ln:
            dbeta = None
        dw = torch.mm(dy.t(), xn)
    elif plan != "fused":
        raise ValueError(f"unknown pre-norm backward plan {plan!r}; expected one of "
                         f"{PRENORM_BWD_PLANS}")
    elif PRENORM_DW == "xn":
        xn = x.new_empty(x.shape)
        dx, dg, dbeta = norm_backward(dy, weight, x, rstd, mean, g, beta, None, is_ln=is_ln,
                                      want_dg=True, xn_out=xn, op=_pre_op(is_ln))
        dw = torch.mm(dy.t(), xn)
    elif PRENORM_DW == "prologue":
        dx, dg, dbeta = norm_backward(dy, weight, x, rstd, mean, g, None, None, is_ln=is_ln,
                                      want_dg=True, op=_pre_op(is_ln))
        dw = dw_norm(dy, x, rstd, mean, g, beta, is_ln=is_ln)
    else:
        raise ValueError(f"normfuse.ops.training.PRENORM_DW = {PRENORM_DW!r}: expected 'xn' "
                         "or 'prologue'")
    db = dy.sum(0, dtype=torch.float32) if has_bias else None
    return dx, dg, dbeta, dw, db


def _pre_op(is_ln: bool) -> str:
    return "layernorm_linear" if is_ln else "rmsnorm_linear"


# ---------------------------------------------------------------------------------------------
# Pre-norm: y = norm(x) (offset + g) [+ beta] W^T + b
# ---------------------------------------------------------------------------------------------

# Whether the pre-norm ops' training forward leaves the rows' statistics to the backward: with
# the "cublas" plan and the persistent norm backward (rows up to the norm's MAX_N), that kernel
# loads each x row anyway and computes rstd (and mean) from it in registers (`norm_bwd`'s STATS
# form), so the forward's `row_stats` pass (one more read of x) and the saved [M] vectors go.
# The same math as `row_stats` (on the H200 the gradients came out bitwise equal at K = 512 and
# 1024, within 2.2e-4 at 2048). H200, 2026-12-03 (session 21, fwd + bwd, two alternating rounds
# each, the faster of each): 0.74-0.99x the step with `row_stats` in 6 of 8 cells (RMSNorm and
# LayerNorm at M = 262144, K = N = 512 / 1024 / 2048, and 8192 x 2048 x 5632), 1.02x at RMSNorm
# 2048 and 1.18x at RMSNorm 512, where the step with row_stats itself moved by 35 % between its
# two rounds (host-bound). "0" keeps row_stats.
PRENORM_STATS_IN_BWD = os.environ.get("NORMFUSE_PRENORM_STATS_IN_BWD", "1") == "1"


def stats_in_backward(op: str, x: Tensor) -> bool:
    """Whether the training forward of pre-norm `op` on x [M, K] defers the statistics (its
    rstd / mean outputs are then empty): PRENORM_STATS_IN_BWD, the "cublas" plan, the
    persistent norm backward and K <= its MAX_N. (Fake tensors answer the same: no data read.)"""
    return PRENORM_STATS_IN_BWD and _persistent_after_cublas(PRENORM_BWD_PLAN.get(op), x.shape[-1])


def _persistent_after_cublas(plan: Optional[str], K: int) -> bool:
    """Whether the pre-norm backward under `plan` runs its norm backward on the standalone norm's
    persistent kernel: the "cublas" plan, NOGEMM_NORM_BWD "persistent", K <= its MAX_N."""
    return plan == "cublas" and NOGEMM_NORM_BWD == "persistent" and K <= NORM_MAX_N


def _pre_fwd_impl(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, checked=False):
    """The op's implementation; `checked=True` (the eager path from the public functions, which
    validated the inputs: the same checks once route() holds) skips the validation."""
    op = "layernorm_linear" if is_ln else "rmsnorm_linear"
    if not route(op, x):
        y = fallback.prenorm_linear(x, norm_weight, norm_bias, [weight], [bias], eps, offset, is_ln)
        rstd, mean = fallback.row_stats(x, eps, is_ln)
        return y, rstd, mean
    with torch.no_grad():
        if not checked:
            check_prenorm(op, x, (weight,), (bias,), {"norm_weight": norm_weight, "norm_bias":
                                                      norm_bias} if is_ln else
                          {"norm_weight": norm_weight}, fused=True)
        # the weights change every step: the derived weights (the fold; LayerNorm's beta W^T)
        # are made for this step only, and the launch goes through the plan the inference path
        # keeps per geometry (launch_prenorm), which reads every operand by address: no
        # per-step preparation, compilation lookup or descriptor setup
        w, b = _train_weights(weight, norm_weight, norm_bias, bias, offset, is_ln)
        y = launch_prenorm(op, "ln" if is_ln else "rms", x, w, None, None, b, eps)
        if stats_in_backward(op, x):
            # two fresh tensors: a custom op's outputs may not alias one another
            return y, x.new_empty(0, dtype=torch.float32), x.new_empty(0, dtype=torch.float32)
        rstd, mean = row_stats(x, eps, is_ln)
    return y, rstd, mean


def _train_weights(weight, g, beta, bias, offset: float, is_ln: bool):
    """(W diag(offset + g) [N, K] unit-stride, the epilogue's bias or None) for one training
    step: `prenorm_linear.fold_norm` not cached (what prepare_layernorm_linear /
    prepare_rmsnorm_linear derive with cache_weights=False)."""
    w, bias = fold_norm(weight, g, beta if is_ln else None, bias, offset, cache=False)
    if w is weight and weight.stride(-1) != 1:
        w = weight.contiguous()
    return w, (bias.contiguous() if bias is not None else None)


def _pre_fwd_fake(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln):
    M = x.shape[0]
    op = _pre_op(is_ln)
    if stats_in_backward(op, x) and route(op, x):  # (the real forward's two conditions)
        M = 0  # (the real forward defers the statistics: empty rstd and mean)
    return (x.new_empty(x.shape[0], weight.shape[0]), x.new_empty(M, dtype=torch.float32),
            x.new_empty(M if is_ln else 0, dtype=torch.float32))


def _pre_bwd_impl(dy, x, norm_weight, norm_bias, weight, rstd, mean, eps, offset, is_ln,
                  has_bias, y=None, bias=None):
    op = "layernorm_linear" if is_ln else "rmsnorm_linear"
    dt = x.dtype
    if not route(op, x):
        dx, dg, dbeta, dw, db = fallback.prenorm_backward(dy, x, norm_weight, norm_bias, weight,
                                                          eps, offset, is_ln, has_bias)
    else:
        # (the kernels read the vectors with unit stride; the forward made them contiguous too)
        norm_weight, norm_bias = unit_stride(norm_weight), unit_stride(norm_bias)
        g = _offset_weight(norm_weight, offset, cache=False) if norm_weight is not None else None
        with torch.no_grad():
            dx, dg, dbeta, dw, db = prenorm_backward(dy, x, g, norm_bias, weight, rstd, mean,
                                                     is_ln=is_ln, has_bias=has_bias,
                                                     plan=PRENORM_BWD_PLAN[op], y=y,
                                                     bias=bias, eps=eps)
    return (dx, dg.to(dt) if norm_weight is not None else _empty(x),
            dbeta.to(dt) if norm_bias is not None else _empty(x), dw.to(weight.dtype),
            db.to(dt) if has_bias else _empty(x))


def _pre_bwd_fake(dy, x, norm_weight, norm_bias, weight, rstd, mean, eps, offset, is_ln,
                  has_bias, y=None, bias=None):
    K = x.shape[1]
    return (x.new_empty(x.shape), x.new_empty(K if norm_weight is not None else 0),
            x.new_empty(K if norm_bias is not None else 0), weight.new_empty(weight.shape),
            x.new_empty(weight.shape[0] if has_bias else 0))


_define("prenorm_linear_fwd(Tensor x, Tensor? norm_weight, Tensor? norm_bias, Tensor weight, "
        "Tensor? bias, float eps, float offset, bool is_ln) -> (Tensor, Tensor, Tensor)",
        _pre_fwd_impl, _pre_fwd_fake)
_define("prenorm_linear_bwd(Tensor dy, Tensor x, Tensor? norm_weight, Tensor? norm_bias, "
        "Tensor weight, Tensor rstd, Tensor mean, float eps, float offset, bool is_ln, "
        "bool has_bias, Tensor? y=None, Tensor? bias=None) -> (Tensor, Tensor, Tensor, Tensor, "
        "Tensor)", _pre_bwd_impl, _pre_bwd_fake)
_pre_fwd = torch.ops.normfuse.prenorm_linear_fwd.default
_pre_bwd = torch.ops.normfuse.prenorm_linear_bwd.default


def _pre_setup(ctx, inputs, output):
    x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln = inputs
    y, rstd, mean = output
    # the forward's output only for the "rowdot" plan (its row sums come from dY and y)
    rowdot = PRENORM_BWD_PLAN["layernorm_linear" if is_ln else "rmsnorm_linear"] == "rowdot"
    ctx.save_for_backward(x, norm_weight, norm_bias, weight, rstd, mean,
                          y if rowdot else None, bias if rowdot else None)
    ctx.is_ln, ctx.has_bias, ctx.eps, ctx.offset = is_ln, bias is not None, eps, offset


def _pre_backward(ctx, dy, _drstd, _dmean):
    no_double_backward("layernorm_linear" if ctx.is_ln else "rmsnorm_linear")
    x, g, beta, w, rstd, mean, y, bias = ctx.saved_tensors
    dx, dg, dbeta, dw, db = _PRE_BWD(dy.contiguous(), x, g, beta, w, rstd, mean, ctx.eps,
                                     ctx.offset, ctx.is_ln, ctx.has_bias, y, bias)
    return (dx, dg if g is not None else None, dbeta if beta is not None else None, dw,
            db if ctx.has_bias else None, None, None, None)


def _pre_fwd_checked(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln):
    return _pre_fwd_impl(x, norm_weight, norm_bias, weight, bias, eps, offset, is_ln, True)


# (the eager fast path: common.AutogradOp / EagerOp; prenorm_linear_train's callers validated)
_PRE_FWD = autograd_op(_LIB, "normfuse::prenorm_linear_fwd", _pre_fwd_checked, _pre_backward,
                       _pre_setup)
_PRE_BWD = EagerOp(_pre_bwd, _pre_bwd_impl)


def prenorm_linear_train(op: str, x: Tensor, norm_weight, norm_bias, weight, eps, bias,
                         is_ln: bool, offset: float = 0.0) -> Tensor:
    """The autograd path of rmsnorm_linear / layernorm_linear (one weight [N, K]: siblings
    concatenated by the caller, differentiably)."""
    lead = tuple(x.shape[:-1])
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    y, _, _ = _PRE_FWD(x2, norm_weight, norm_bias, weight, bias, float(eps), float(offset),
                       bool(is_ln))
    return y.view(*lead, weight.shape[0])


# ---------------------------------------------------------------------------------------------
# Post-norm: z = norm(x W^T + b + r) (offset + g) [+ beta]
# ---------------------------------------------------------------------------------------------

# The post-norm training forward (the ops' and the block's): "fused" (the training form of the
# fused kernel, which writes z and h and the statistics: Triton's cluster pipeline), "composed"
# (h = x W^T + b + r on cuBLAS, then the standalone norm's forward kernel on h: one more read of
# h, cuBLAS's GEMM) or "lowered" (the default; the post-norm ops, and the block's post-norms
# whose statistics its backward can compute: `mlp_stats_in_backward`; the others stay "fused"):
# the train kernel without its row statistics (SAVE_STATS=False) through hopper-ws{post-norm=
# true} (rule 9: h a second output tile of the warp-specialized template), schedule and tiles as
# the inference op's lowered form (`postnorm_linear.lowered_postnorm_choice`); the op's rstd /
# mean outputs are then empty and the backward's persistent norm kernel computes the statistics
# from h (`norm_bwd`'s STATS form), where the backward runs that kernel (NOGEMM_NORM_BWD
# "persistent", N <= its MAX_N; `post_stats_in_backward`). Where the lowered kernel cannot run
# (not lowered, operands TMA cannot take) the fused kernel runs, once said.
# Measured (H200, session 23, `bench/train_options_ab.py --switches postfwd --cells blog`, fwd +
# bwd of the op, M = 262144, 2 rounds; `bench/results/2026-12-04/session23/`), x "fused":
# linear_rmsnorm lowered 0.78-0.99 (composed 0.88-0.97), linear_layernorm 0.77-0.96 (0.80-0.98),
# the block 0.85-0.99 (0.91-0.99); the one cell where lowered lost (K x N = 2048 x 512: 1.07 /
# 1.08) came out 0.95 / 0.99 over 5 rounds. NORMFUSE_POSTNORM_TRAIN_FWD=fused|composed overrides.
POSTNORM_TRAIN_FWDS = ("fused", "composed", "lowered")
POSTNORM_TRAIN_FWD = os.environ.get("NORMFUSE_POSTNORM_TRAIN_FWD", "lowered")


def post_stats_in_backward(is_ln: bool, N: int) -> bool:
    """Whether the post-norm ops' training forward on rows of N leaves rstd / mean to the
    backward (empty outputs): POSTNORM_TRAIN_FWD "lowered", the post-norm ops' lowered form on
    (`postnorm_linear.LOWERED_POSTNORM`), the backward's norm on the persistent kernel. (Fake
    tensors answer the same: no data read.)"""
    return (POSTNORM_TRAIN_FWD == "lowered" and NOGEMM_NORM_BWD == "persistent"
            and N <= NORM_MAX_N and _postnorm.LOWERED_POSTNORM.get("ln" if is_ln else "rms")
            is not None)


def lowered_train_passes(schedule: str) -> tuple:
    """The lowered training forward's pipeline: hopper-ws{post-norm=true} alone (no
    epilogue-norm: a row of one tile stays the two folded passes hopper-ws reads, h beside)."""
    if schedule not in _postnorm.LOWERED_SCHEDULES:
        raise ValueError(f"lowered post-norm schedule must be one of "
                         f"{_postnorm.LOWERED_SCHEDULES}, got {schedule!r}")
    return ("hopper-ws{post-norm=true,schedule=" + schedule + "}",)


_TRAIN_LOWERED_WARNED: set = set()
# The lowered training forward's launch plans per geometry (`LaunchPlan`: compiled, lowered and
# bound once; a step passes its own tensors), and the geometries where it cannot run
_TRAIN_PLANS = PlanCache()
_TRAIN_REFUSED: set = set()


def _clear_train_plans() -> None:
    _TRAIN_PLANS.clear()
    _TRAIN_REFUSED.clear()


_postnorm.on_clear_postnorm_plans(_clear_train_plans)


class _TrainArgs(NamedTuple):
    """The training forward's operands as its kernels take them: x [M, K] and W with unit stride
    along K, the norm's vectors (offset + g, and beta for LayerNorm) contiguous, bias and the
    residual [M, N] (or None)."""
    x2: Tensor
    w: Tensor
    vecs: tuple
    b: Optional[Tensor]
    r: Optional[Tensor]

    def key(self, is_ln: bool, eps: float, tag: tuple) -> tuple:
        """The launch plan's key (`postnorm_plan_key`) under `tag` (the form)."""
        return _postnorm.postnorm_plan_key("ln" if is_ln else "rms", self.x2, self.w,
                                           self.vecs[0], self.vecs[1] if is_ln else None, self.b,
                                           self.r, eps, tag)

    def tensors(self, z: Tensor, h: Tensor, *stats: Tensor) -> tuple:
        """The train kernel's tensor arguments, in order (absent bias / residual: W's address)."""
        w = self.w
        return (self.x2, w, w if self.b is None else self.b, w if self.r is None else self.r,
                *self.vecs, z, h, *stats)


def _train_args(x2, weight, g, beta, bias, res, offset, is_ln) -> _TrainArgs:
    x2 = _as_2d(x2)  # (unit stride along K: what the plans are made for)
    M, N = x2.shape[0], weight.shape[0]
    w = weight if weight.stride(-1) == 1 else weight.contiguous()
    if offset:
        g = _offset_weight(g, offset, cache=False)
    vecs = tuple(t.contiguous() for t in ((g, beta) if is_ln else (g,)))
    r = res.reshape(M, N) if res is not None else None
    if r is not None and r.stride(-1) != 1:
        r = r.contiguous()
    return _TrainArgs(x2, w, vecs, bias.contiguous() if bias is not None else None, r)


def _train_launch(a: _TrainArgs, eps, is_ln, config, passes, stat: Optional[Tensor], consts: dict,
                  launcher_passes=None) -> tuple:
    """(the train kernel's PreparedLaunch for these operands, its number of tensor arguments):
    the post-norm op's prepared launch under `passes` / `config` with h and the statistics'
    pointers (`stat` for each, or h where None) after Y, the train kernel (under
    `launcher_passes`, default the default pipeline) and `consts` over the constexprs."""
    op = "linear_layernorm" if is_ln else "linear_rmsnorm"
    norm = ({"norm_weight": a.vecs[0]} if not is_ln else
            {"norm_weight": a.vecs[0], "norm_bias": a.vecs[1]})
    plan = _prepare_post(op, "ln" if is_ln else "rms", a.x2, a.w, norm, eps, a.b, a.r, config,
                         passes, None, persistent=False, cache_weights=False, fit=False)
    h = torch.empty(a.x2.shape[0], a.w.shape[0], device=a.x2.device, dtype=a.x2.dtype)
    stats = [h if stat is None else stat] * (2 if is_ln else 1)
    args = list(plan.runtime_args)
    at = 4 + len(norm) + 1  # after Y
    args[at:at] = [h] + stats
    kern = "linear_layernorm_train_naive" if is_ln else "linear_rmsnorm_train_naive"
    tp = PreparedLaunch(plan.op, plan.kind, _post_train_launcher(kern, launcher_passes),
                        tuple(args), dict(plan.constexprs, **consts), plan.options, plan.grid,
                        plan.config, plan.out, plan.out_shape, None)
    return tp, at + 1 + len(stats)


def _post_forward_lowered(a: _TrainArgs, eps, is_ln, act: int = 0):
    """(z, h) from the lowered training forward, or None where it cannot run here (the reason
    warned once per geometry). Planned once per geometry (`LaunchPlan`): a step's host work is
    the key, two allocations and the bound launch."""
    switch = _postnorm.LOWERED_POSTNORM["ln" if is_ln else "rms"]
    key = a.key(is_ln, eps, ("train", switch, act))
    if key in _TRAIN_REFUSED:
        return None
    plan = _TRAIN_PLANS.get(key)
    if plan is None:
        plan = _plan_post_forward_lowered(a, eps, is_ln, switch, act)
        if plan is None:
            _TRAIN_REFUSED.add(key)
            return None
        _TRAIN_PLANS.add(key, plan)
    M, N = a.x2.shape[0], a.w.shape[0]
    z = torch.empty(M, N, device=a.x2.device, dtype=a.x2.dtype)
    h = torch.empty(M, N, device=a.x2.device, dtype=a.x2.dtype)
    # (the statistics' pointers, never written without SAVE_STATS: h)
    plan.run(a.tensors(z, h, *([h] * (2 if is_ln else 1))))
    return z, h


def _plan_post_forward_lowered(a: _TrainArgs, eps, is_ln, switch, act: int = 0):
    """The `LaunchPlan` of the lowered training forward for this geometry, or None (said once):
    the train kernel without statistics (SAVE_STATS=False) under hopper-ws{post-norm=true} with
    the inference lowering's schedule and tiles."""
    op = "linear_layernorm" if is_ln else "linear_rmsnorm"
    M, K = a.x2.shape
    N = a.w.shape[0]
    schedule, cfg = _postnorm.lowered_postnorm_choice(M, N, K, switch, a.x2.dtype)
    passes = lowered_train_passes(schedule)
    tp, n = _train_launch(a, eps, is_ln, cfg, passes, None,
                          dict(SAVE_STATS=False, PERSISTENT=False, ACT=act), passes)
    if tp.grid[0]:
        from ..passes import PassError
        try:
            ck = tp.compile()
            why = ("hopper-ws did not lower it: " + "; ".join(r for r in ck.remarks
                                                              if "hopper-ws" in r)
                   if ck.lowered is None else ck.lowered.why_not(tp.runtime_args))
        except PassError as e:  # a lowering bug must not cost the user the step: said, bypassed
            why = f"the lowering failed: {e}"
        if why is not None:
            key = (op, M, N, K, why)
            if key not in _TRAIN_LOWERED_WARNED:
                _TRAIN_LOWERED_WARNED.add(key)
                import warnings
                warnings.warn(f"normfuse: {op} (training): the lowered training forward cannot "
                              f"run here ({why}); running the fused kernel", RuntimeWarning,
                              stacklevel=5)
            return None
    return LaunchPlan(tp, n)


def _post_forward_composed(x2, weight, g, beta, bias, res, eps, is_ln, offset):
    """(z, h, rstd, mean): h = x W^T + b (+ res) on cuBLAS, then the standalone norm's kernel on h
    (statistics of h as stored, as the backward reads it; offset + g formed in fp32)."""
    h = torch.nn.functional.linear(x2, weight, bias)
    if res is not None:
        h += res
    z, rstd, mean = norm_kernel_forward(h, unit_stride(g), unit_stride(beta) if is_ln else None,
                                        eps, offset, is_ln)
    return z, h, rstd, mean


def _post_forward_save(x2, weight, g, beta, bias, res, eps, is_ln, offset=0.0,
                       defer_stats: bool = False, act: int = 0):
    """z, h, rstd, mean from the training form of the fused post-norm kernel (the norm's scale
    offset + g, rounded to g's dtype), or composed (`POSTNORM_TRAIN_FWD`). `defer_stats` (the
    post-norm ops where `post_stats_in_backward`): the lowered training forward, rstd and mean
    empty (the fused kernel where it cannot run, its statistics dropped: the backward computes
    them from h alike). `act` = 1: z is SiLU(norm(h)) (the block's first norm; the kernels apply
    it before their store)."""
    if POSTNORM_TRAIN_FWD not in POSTNORM_TRAIN_FWDS:
        raise ValueError(f"normfuse.ops.training.POSTNORM_TRAIN_FWD = {POSTNORM_TRAIN_FWD!r} (or "
                         f"NORMFUSE_POSTNORM_TRAIN_FWD): expected one of {POSTNORM_TRAIN_FWDS}")
    if POSTNORM_TRAIN_FWD == "composed" and weight.shape[0] <= NORM_MAX_N:
        return _silu_first(_post_forward_composed(x2, weight, g, beta, bias, res, eps, is_ln,
                                                  offset), act)
    a = _train_args(x2, weight, g, beta, bias, res, offset, is_ln)
    got = _post_forward_lowered(a, eps, is_ln, act) if defer_stats else None
    if got is None:
        got = _post_forward_fused(a, eps, is_ln, act)
    if got is None:  # (the LayerNorm form that would normalize its rounded tile)
        got = _silu_first(_post_forward_composed(x2, weight, g, beta, bias, res, eps, True,
                                                 offset), act)
    if defer_stats:  # (statistics from the fused or composed form dropped: the backward's)
        return (*got[:2], x2.new_empty(0, dtype=torch.float32),
                x2.new_empty(0, dtype=torch.float32))
    return got


def _post_forward_fused(a: _TrainArgs, eps, is_ln, act: int = 0):
    """(z, h, rstd, mean) from the fused training forward, planned once per geometry; None
    where the plan composes instead (`_plan_post_forward_fused`)."""
    key = a.key(is_ln, eps, ("train", "fused", act))
    plan = _TRAIN_PLANS.get(key)
    if plan is None:
        if key in _TRAIN_REFUSED:
            return None
        plan = _plan_post_forward_fused(a, eps, is_ln, act)
        if plan is None:
            _TRAIN_REFUSED.add(key)
            return None
        _TRAIN_PLANS.add(key, plan)
    M, N = a.x2.shape[0], a.w.shape[0]
    dev = a.x2.device
    z = torch.empty(M, N, device=dev, dtype=a.x2.dtype)
    h = torch.empty(M, N, device=dev, dtype=a.x2.dtype)
    rstd = torch.empty(M, device=dev, dtype=torch.float32)
    mean = torch.empty(M if is_ln else 0, device=dev, dtype=torch.float32)
    plan.run(a.tensors(z, h, rstd, *((mean,) if is_ln else ())))
    return z, h, rstd, mean


def _silu_first(got: tuple, act: int) -> tuple:
    """(SiLU(z), h, rstd, mean) from a composed forward's (z, h, rstd, mean) where `act`."""
    if not act:
        return got
    z, *rest = got
    return (torch.nn.functional.silu(z), *rest)


def _plan_post_forward_fused(a: _TrainArgs, eps, is_ln, act: int = 0):
    """The `LaunchPlan` of the fused training forward (the train kernel under the default
    post-norm pipeline, in the cluster form the driver launches, persistent from
    PERSISTENT_MIN_ROW_BLOCKS row blocks) for this geometry, or None for the LayerNorm form
    that would normalize its rounded tile (the caller composes: as that backward forms
    offset + g, in fp32)."""
    op = "linear_layernorm" if is_ln else "linear_rmsnorm"
    M, N = a.x2.shape[0], a.w.shape[0]
    rstd = torch.empty(M, device=a.x2.device, dtype=torch.float32)
    tp, n = _train_launch(a, eps, is_ln, None, DEFAULT_POSTNORM_PASSES, rstd,
                          dict(SAVE_STATS=True, ACT=act))
    tp.constexprs["PERSISTENT"] = M >= PERSISTENT_MIN_ROW_BLOCKS * tp.config.block_m
    if tp.grid[0]:  # the cluster form the driver launches, the persistent grid
        kern = "linear_layernorm_train_naive" if is_ln else "linear_rmsnorm_train_naive"
        tp = _fit_and_grid(tp, lambda p: _post_train_launcher(kern, p), DEFAULT_POSTNORM_PASSES)
    if is_ln and N <= NORM_MAX_N and composes_for_rounded_tile(tp, f"{op} (training)"):
        return None
    return LaunchPlan(tp, n)


@functools.lru_cache(maxsize=None)
def _post_train_launcher(name: str, passes: Optional[tuple] = None):
    import normfuse
    from ..kernels import postnorm_gemm
    return normfuse.jit(getattr(postnorm_gemm, name),
                        passes=DEFAULT_POSTNORM_PASSES if passes is None else passes)


def _post_fwd_impl(x, weight, norm_weight, norm_bias, bias, residual, eps, offset, is_ln):
    op = "linear_layernorm" if is_ln else "linear_rmsnorm"
    if not route(op, x):
        return fallback.postnorm_forward_save(x, weight, norm_weight, norm_bias, bias, residual,
                                              eps, offset, is_ln)
    with torch.no_grad():
        return _post_forward_save(x, weight, norm_weight, norm_bias, bias, residual, eps, is_ln,
                                  offset, post_stats_in_backward(is_ln, weight.shape[0]))


def _post_fwd_fake(x, weight, norm_weight, norm_bias, bias, residual, eps, offset, is_ln):
    M, N = x.shape[0], weight.shape[0]
    op = "linear_layernorm" if is_ln else "linear_rmsnorm"
    S = 0 if post_stats_in_backward(is_ln, N) and route(op, x) else M  # (the real forward's)
    return (x.new_empty(M, N), x.new_empty(M, N), x.new_empty(S, dtype=torch.float32),
            x.new_empty(S if is_ln else 0, dtype=torch.float32))


# The norm backward without a GEMM in front (the post-norm op's, the block's norm2, the pre-norm
# "cublas" plan's after its dX GEMM): "persistent" (default): the standalone norm's backward
# kernel (ops/norm.py: persistent, dg / dbeta partials in registers, [P, N] of them; for the
# pre-norm plan it also writes n for dW); "row": `norm_backward_naive` with HAS_GEMM=False
# (tiling "row": [M / 8, N] fp32 partials; 0.74 ms at M = 262144, N = 1024 on the H200 against
# torch.compile's 0.42, issue 21 item 3; rows past 4096 get its cluster tiling). Measured for the
# pre-norm "cublas" plan on the H200 (2026-12-02, session 13, T = 8192, RMSNorm, the kernels of
# one fwd + bwd step): K = 2048: the norm backward 0.034 ms + 0.008 for its partials' sum against
# 0.038 + 0.014 with "row"; K = 5632: 0.158 + 0.006 against 0.220 + 0.008 (the cluster tiling);
# the step 0.485 / 1.556 / 0.975 ms (K x N 2048 x 3072, 2048 x 11264, 5632 x 2048) against
# torch.compile's 0.465 / 1.588 / 1.016. NORMFUSE_NOGEMM_NORM_BWD overrides.
NOGEMM_NORM_BWD = os.environ.get("NORMFUSE_NOGEMM_NORM_BWD", "persistent")


def nogemm_norm_backward(dy: Tensor, h: Tensor, norm_weight: Optional[Tensor], rstd: Tensor,
                         mean: Tensor, beta: Optional[Tensor], offset: float, is_ln: bool,
                         op: str, *, act: int = 0, kernel: Optional[str] = None,
                         eps: Optional[float] = None, grad_dtype=torch.float32
                         ) -> tuple[Tensor, Optional[Tensor], Optional[Tensor]]:
    """(dh in h's dtype, dg, dbeta or None) of z = norm(h) (offset + g) [+ beta] for dz = dy
    (act = 1: dy is the gradient of SiLU(z)), by `kernel` (default NOGEMM_NORM_BWD; rows
    longer than the persistent kernel's MAX_N: "row"); g = norm_weight must be given. dg and
    dbeta are summed in fp32 and come in `grad_dtype` from the persistent kernel (its partials'
    sum stores them so), fp32 from the row kernel. `eps` given: rstd / mean were not saved
    (empty): the persistent kernel computes them from h (its STATS form), the row kernel gets
    them from `row_stats` first."""
    kernel = NOGEMM_NORM_BWD if kernel is None else kernel
    if kernel not in ("persistent", "row"):
        raise ValueError(f"normfuse.ops.training.NOGEMM_NORM_BWD = {kernel!r}: expected "
                         "'persistent' or 'row'")
    norm_weight, beta = unit_stride(norm_weight), unit_stride(beta)
    if kernel == "persistent" and h.shape[1] <= NORM_MAX_N:
        dy = dy if dy.stride(-1) == 1 else dy.contiguous()
        h = h if h.stride(-1) == 1 else h.contiguous()
        return norm_kernel_backward(dy, h, norm_weight, rstd, mean, offset, is_ln, True, is_ln,
                                    beta=beta, act=act, eps=eps, dg_dtype=grad_dtype,
                                    db_dtype=grad_dtype)
    if eps is not None:
        rstd, mean = row_stats(h, eps, is_ln)
    g = _offset_weight(norm_weight, offset, cache=False)
    return norm_backward(dy, None, h, rstd, mean, g, beta, None, is_ln=is_ln, act=act, op=op)


def _post_bwd_impl(dz, x, weight, norm_weight, norm_bias, h, rstd, mean, eps, offset, is_ln,
                   has_bias):
    op = "linear_layernorm" if is_ln else "linear_rmsnorm"
    dt = x.dtype
    if not route(op, x):
        dx, dw, dg, dbeta, db, dh = fallback.postnorm_backward(
            dz, x, weight, norm_weight, norm_bias, h, eps, offset, is_ln, has_bias)
    else:
        with torch.no_grad():
            # (empty statistics: the forward left them to this kernel, `post_stats_in_backward`)
            deferred = rstd.numel() == 0 and h.shape[0] > 0
            dh, dg, dbeta = nogemm_norm_backward(dz, h, norm_weight, rstd, mean, norm_bias,
                                                 offset, is_ln, op, eps=eps if deferred else None,
                                                 grad_dtype=dt)
            dx = torch.mm(dh, weight)
            dw = torch.mm(dh.t(), x)
            db = dh.sum(0, dtype=torch.float32) if has_bias else None
    return (dx, dw.to(weight.dtype), dg.to(dt), dbeta.to(dt) if is_ln else _empty(x),
            db.to(dt) if has_bias else _empty(x), dh)


def _post_bwd_fake(dz, x, weight, norm_weight, norm_bias, h, rstd, mean, eps, offset, is_ln,
                   has_bias):
    N = weight.shape[0]
    return (x.new_empty(x.shape), weight.new_empty(weight.shape), x.new_empty(N),
            x.new_empty(N if is_ln else 0), x.new_empty(N if has_bias else 0), h.new_empty(h.shape))


_define("postnorm_linear_fwd(Tensor x, Tensor weight, Tensor norm_weight, Tensor? norm_bias, "
        "Tensor? bias, Tensor? residual, float eps, float offset, bool is_ln) -> "
        "(Tensor, Tensor, Tensor, Tensor)", _post_fwd_impl, _post_fwd_fake)
_define("postnorm_linear_bwd(Tensor dz, Tensor x, Tensor weight, Tensor norm_weight, "
        "Tensor? norm_bias, Tensor h, Tensor rstd, Tensor mean, float eps, float offset, "
        "bool is_ln, bool has_bias) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
        _post_bwd_impl, _post_bwd_fake)
_post_fwd = torch.ops.normfuse.postnorm_linear_fwd.default
_post_bwd = torch.ops.normfuse.postnorm_linear_bwd.default


def _post_setup(ctx, inputs, output):
    x, weight, g, beta, bias, residual, eps, offset, is_ln = inputs
    _, h, rstd, mean = output
    ctx.save_for_backward(x, weight, g, beta, h, rstd, mean)
    ctx.is_ln, ctx.has_bias, ctx.has_res = is_ln, bias is not None, residual is not None
    ctx.eps, ctx.offset = eps, offset


def _post_backward(ctx, dz, _dh, _drstd, _dmean):
    no_double_backward("linear_layernorm" if ctx.is_ln else "linear_rmsnorm")
    x, w, g, beta, h, rstd, mean = ctx.saved_tensors
    dx, dw, dg, dbeta, db, dres = _POST_BWD(dz.contiguous(), x, w, g, beta, h, rstd, mean,
                                            ctx.eps, ctx.offset, ctx.is_ln, ctx.has_bias)
    return (dx, dw, dg, dbeta if ctx.is_ln else None, db if ctx.has_bias else None,
            dres if ctx.has_res else None, None, None, None)


_POST_FWD = autograd_op(_LIB, "normfuse::postnorm_linear_fwd", _post_fwd_impl, _post_backward,
                        _post_setup)
_POST_BWD = EagerOp(_post_bwd, _post_bwd_impl)


def postnorm_linear_train(op: str, x: Tensor, weight, norm_weight, norm_bias, eps, bias, residual,
                          is_ln: bool, offset: float = 0.0) -> Tensor:
    """The autograd path of linear_rmsnorm / linear_layernorm (inputs already validated)."""
    lead = tuple(x.shape[:-1])
    N = weight.shape[0]
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    r2 = None
    if residual is not None:
        r2 = residual.reshape(-1, N)
        if r2.stride(-1) != 1:
            r2 = r2.contiguous()
    z, _, _, _ = _POST_FWD(x2, weight, norm_weight, norm_bias, bias, r2, float(eps), float(offset),
                           bool(is_ln))
    return z.view(*lead, N)


# ---------------------------------------------------------------------------------------------
# The block: out = norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x), backward composed or regrouped
# ---------------------------------------------------------------------------------------------

# norm1's part of the block's backward: "regrouped" (norm1's backward and SiLU' in the epilogue
# of linear 2's dX GEMM, one kernel: the blog's regrouping; Triton's plain sm_90 lowering
# unless LOWERED_DX) or "composed" (linear 2's dX GEMM da = dh2 W2 on cuBLAS, then norm1's
# backward with SiLU' in the no-GEMM kernel: one [M, H] round trip more, cuBLAS's GEMM).
# H200, 2026-12-03 (bench_training, the 9 blog cells): the regrouped block's backward 1.23-1.69x
# cuBLAS's four GEMMs + the two best standalone norm backwards; the block's fwd + bwd composed
# 0.774 / 0.876 / 0.925x the regrouped one's (RMSNorm, M = 262144, D x H = 512 x 2048,
# 1024 x 1024, 2048 x 512; gradients within 3.6e-3 of each other; session 21).
POSTNORM_MLP_BWD_PLANS = ("regrouped", "composed")
POSTNORM_MLP_BWD_PLAN = os.environ.get("NORMFUSE_MLP_BWD_PLAN", "composed")
# In the composed plan, norm1's backward (SiLU' included) on the standalone norm's persistent
# kernel (`norm_bwd`'s ACT form, rows up to its MAX_N) instead of the no-GEMM norm-backward
# kernel: the persistent one keeps the dg / dbeta partials in registers (the no-GEMM kernel
# writes [M / 8, H] fp32 of them); with the lowered training forward it also lets norm1's
# statistics move to the backward (`mlp_stats_in_backward`). Measured (H200, session 23, block
# fwd + bwd with the lowered forward, the 9 blog cells): 0.85-0.995x off. Default on;
# NORMFUSE_MLP_NORM1_PERSISTENT=0 turns it off.
POSTNORM_MLP_NORM1_PERSISTENT = os.environ.get("NORMFUSE_MLP_NORM1_PERSISTENT", "1") == "1"


# The block's SiLU in its first post-norm kernel (the train kernels' ACT = 1: a = SiLU(norm1(h1))
# stored instead of z1, no torch SiLU pass over z1: one [M, H] write and a read + write less per
# step) or after it in torch (False, the default). Measured (H200, session 23, block fwd + bwd,
# the 9 blog cells, `bench/train_options_ab.py --switches silu`): in the kernel 0.993-1.038x
# after it; but in both of that session's runs the first kernel was the fused (Triton) one:
# norm1's persistent backward was still off then, so its statistics were not deferred and the
# lowered form did not run (`mlp_stats_in_backward`). With today's defaults the first kernel is
# the lowered one, whose ACT = 1 form builds with the same 168 registers and no spills as ACT = 0
# (ptxas, RMSNorm 128 x 256 coop at H x D = 1024 x 1024 and 2048 x 512; session 24): not timed
# yet, so off. NORMFUSE_MLP_SILU_IN_KERNEL=1 turns it on.
POSTNORM_MLP_SILU_IN_KERNEL = os.environ.get("NORMFUSE_MLP_SILU_IN_KERNEL", "0") == "1"


def mlp_stats_in_backward(is_ln: bool, H: int, D: int) -> tuple[bool, bool]:
    """Whether the block's training forward leaves norm1's / norm2's statistics to its backward
    (POSTNORM_TRAIN_FWD "lowered": both post-norm kernels lowered; empty rstd / mean): norm2's
    where its no-GEMM backward runs the persistent kernel (`post_stats_in_backward`), norm1's
    where the composed plan runs its backward there too (POSTNORM_MLP_NORM1_PERSISTENT: the ACT
    form computes them; the row kernel would need a `row_stats` pass)."""
    d2 = post_stats_in_backward(is_ln, D)
    d1 = (post_stats_in_backward(is_ln, H) and POSTNORM_MLP_BWD_PLAN == "composed"
          and POSTNORM_MLP_NORM1_PERSISTENT)
    return d1, d2


def _mlp_fwd_impl(x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, is_ln):
    if not route("postnorm_mlp", x):
        return fallback.postnorm_mlp_save(x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, is_ln)
    d1, d2 = mlp_stats_in_backward(is_ln, w1.shape[0], w2.shape[0])
    with torch.no_grad():
        # (a = SiLU(norm1(h1)) from the first kernel itself: z1 is never stored)
        silu = POSTNORM_MLP_SILU_IN_KERNEL
        a, h1, rstd1, mean1 = _post_forward_save(x, w1, g1, beta1, b1, None, eps, is_ln,
                                                 act=int(silu), defer_stats=d1)
        if not silu:  # (in place: z1 itself is not kept)
            a = torch.nn.functional.silu(a, inplace=True)
        out, h2, rstd2, mean2 = _post_forward_save(a, w2, g2, beta2, b2, x, eps, is_ln,
                                                   defer_stats=d2)
    return out, h1, rstd1, mean1, a, h2, rstd2, mean2


def _mlp_fwd_fake(x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, is_ln):
    M, H, D = x.shape[0], w1.shape[0], w2.shape[0]
    f = torch.float32
    d1, d2 = mlp_stats_in_backward(is_ln, H, D) if route("postnorm_mlp", x) else (False, False)
    S1, S2 = (0 if d1 else M), (0 if d2 else M)  # (the real forward's)
    return (x.new_empty(M, D), x.new_empty(M, H), x.new_empty(S1, dtype=f),
            x.new_empty(S1 if is_ln else 0, dtype=f), x.new_empty(M, H), x.new_empty(M, D),
            x.new_empty(S2, dtype=f), x.new_empty(S2 if is_ln else 0, dtype=f))


def _mlp_bwd_impl(dout, x, w1, g1, beta1, w2, g2, beta2, h1, rstd1, mean1, a, h2, rstd2, mean2,
                  eps, is_ln, has_b1, has_b2):
    dt = x.dtype
    if not route("postnorm_mlp", x):
        dx, dw1, dg1, dbeta1, db1, dw2, dg2, dbeta2, db2 = fallback.postnorm_mlp_backward(
            dout, x, w1, g1, beta1, w2, g2, beta2, h1, a, h2, eps, is_ln, has_b1, has_b2)
    else:
        g1, beta1 = unit_stride(g1), unit_stride(beta1)  # (the kernels read them with unit stride)
        with torch.no_grad():
            # norm2's backward: no GEMM before it inside the block (op-level form)
            # (empty statistics: the forward left them to the backward, `mlp_stats_in_backward`)
            M = x.shape[0]
            e1 = eps if rstd1.numel() == 0 and M else None
            e2 = eps if rstd2.numel() == 0 and M else None
            dh2, dg2, dbeta2 = nogemm_norm_backward(dout, h2, g2, rstd2, mean2, beta2, 0.0,
                                                    is_ln, "postnorm_mlp", eps=e2, grad_dtype=dt)
            dw2 = torch.mm(dh2.t(), a)
            plan = POSTNORM_MLP_BWD_PLAN
            if plan == "regrouped":
                if e1 is not None:  # (the plan changed since the forward)
                    rstd1, mean1 = row_stats(h1, eps, is_ln)
                # norm1's backward (and SiLU') in the epilogue of linear 2's dX GEMM (through
                # hopper-ws's template where LOWERED_DX says so, as the pre-norm ops' dX)
                dh1, dg1, dbeta1 = norm_backward(dh2, w2, h1, rstd1, mean1, g1, beta1, None,
                                                 is_ln=is_ln, act=1, op="postnorm_mlp")
            elif plan == "composed":
                da = torch.mm(dh2, w2 if w2.stride(-1) == 1 else w2.contiguous())
                dh1, dg1, dbeta1 = nogemm_norm_backward(
                    da, h1, g1, rstd1, mean1, beta1, 0.0, is_ln, "postnorm_mlp", act=1,
                    kernel="persistent" if POSTNORM_MLP_NORM1_PERSISTENT else "row", eps=e1,
                    grad_dtype=dt)
            else:
                raise ValueError(f"normfuse.ops.training.POSTNORM_MLP_BWD_PLAN = {plan!r} (or "
                                 f"NORMFUSE_MLP_BWD_PLAN): expected one of "
                                 f"{POSTNORM_MLP_BWD_PLANS}")
            dw1 = torch.mm(dh1.t(), x)
            # (the bias gradients only for biases: each sum reads an [M, H] / [M, D] gradient)
            db1 = dh1.sum(0, dtype=torch.float32) if has_b1 else None
            db2 = dh2.sum(0, dtype=torch.float32) if has_b2 else None
            # the residual's gradient is dh2: dx = dh2 + dh1 W1 accumulated into dh2 itself (its
            # last use), not into a copy of it (torch.addmm copies its input first: a 0.25 ms
            # [M, D] copy at 262144 x 1024 on the H200)
            dx = dh2.addmm_(dh1, w1)
    return [dx, dw1.to(dt), dg1.to(dt), dbeta1.to(dt) if is_ln else _empty(x),
            db1.to(dt) if has_b1 else _empty(x), dw2.to(dt), dg2.to(dt),
            dbeta2.to(dt) if is_ln else _empty(x), db2.to(dt) if has_b2 else _empty(x)]


def _mlp_bwd_fake(dout, x, w1, g1, beta1, w2, g2, beta2, h1, rstd1, mean1, a, h2, rstd2, mean2,
                  eps, is_ln, has_b1, has_b2):
    H, D = w1.shape[0], w2.shape[0]
    return [x.new_empty(x.shape), w1.new_empty(w1.shape), x.new_empty(H), x.new_empty(H if is_ln else 0),
            x.new_empty(H if has_b1 else 0), w2.new_empty(w2.shape), x.new_empty(D),
            x.new_empty(D if is_ln else 0), x.new_empty(D if has_b2 else 0)]


_define("postnorm_mlp_fwd(Tensor x, Tensor w1, Tensor g1, Tensor? beta1, Tensor? b1, Tensor w2, "
        "Tensor g2, Tensor? beta2, Tensor? b2, float eps, bool is_ln) -> "
        "(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)",
        _mlp_fwd_impl, _mlp_fwd_fake)
_define("postnorm_mlp_bwd(Tensor dout, Tensor x, Tensor w1, Tensor g1, Tensor? beta1, Tensor w2, "
        "Tensor g2, Tensor? beta2, Tensor h1, Tensor rstd1, Tensor mean1, Tensor a, Tensor h2, "
        "Tensor rstd2, Tensor mean2, float eps, bool is_ln, bool has_b1, bool has_b2) -> Tensor[]",
        _mlp_bwd_impl, _mlp_bwd_fake)
_mlp_fwd = torch.ops.normfuse.postnorm_mlp_fwd.default
_mlp_bwd = torch.ops.normfuse.postnorm_mlp_bwd.default


def _mlp_setup(ctx, inputs, output):
    x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, is_ln = inputs
    _, h1, rstd1, mean1, a, h2, rstd2, mean2 = output
    ctx.save_for_backward(x, w1, g1, beta1, w2, g2, beta2, h1, rstd1, mean1, a, h2, rstd2, mean2)
    ctx.is_ln, ctx.has_b1, ctx.has_b2, ctx.eps = is_ln, b1 is not None, b2 is not None, eps


def _mlp_backward(ctx, dout, *_unused):
    no_double_backward("postnorm_mlp")
    saved = ctx.saved_tensors
    dx, dw1, dg1, dbeta1, db1, dw2, dg2, dbeta2, db2 = _MLP_BWD(
        dout.contiguous(), *saved, ctx.eps, ctx.is_ln, ctx.has_b1, ctx.has_b2)
    ln = ctx.is_ln
    return (dx, dw1, dg1, dbeta1 if ln else None, db1 if ctx.has_b1 else None, dw2, dg2,
            dbeta2 if ln else None, db2 if ctx.has_b2 else None, None, None)


_MLP_FWD = autograd_op(_LIB, "normfuse::postnorm_mlp_fwd", _mlp_fwd_impl, _mlp_backward,
                       _mlp_setup)
_MLP_BWD = EagerOp(_mlp_bwd, _mlp_bwd_impl)


def postnorm_mlp_train(x: Tensor, w1: Tensor, g1: Tensor, beta1: Optional[Tensor],
                       b1: Optional[Tensor], w2: Tensor, g2: Tensor, beta2: Optional[Tensor],
                       b2: Optional[Tensor], eps: float, layernorm: bool) -> Tensor:
    """normfuse.ops.postnorm_mlp after its checks: two fused post-norm kernels forward (the first
    applies the SiLU before its store), the backward by POSTNORM_MLP_BWD_PLAN (the reference
    path where the kernels do not run)."""
    lead = tuple(x.shape[:-1])
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    out = _MLP_FWD(x2, w1, g1, beta1, b1, w2, g2, beta2, b2, float(eps), bool(layernorm))[0]
    return out.view(*lead, w2.shape[0])
