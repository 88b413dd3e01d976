"""Post-norm linear launches: y = norm(x @ W^T + bias + residual), one normfuse-compiled kernel.

The bottom layer of the post-norm ops, next to prenorm_linear.py (the autograd layer,
normfuse.ops.training, and the public functions, normfuse.ops.functional, stand above):

    prepare_linear_*  -> PreparedLaunch    the validated launch (shared with the pre-norm ops)
    select_postnorm_config                 the tile table (kernels/configs.py)
    kernels/postnorm_gemm.py               the naive kernels that the passes rewrite

The default pipeline `cluster-reduce,epilogue-norm` picks the form from the row's N tiles
(cdiv(N, BLOCK_N)): one tile -> the row is normalized in registers in one CTA (epilogue-norm);
2..16 tiles -> one tile per CTA of a thread-block cluster, row statistics exchanged through
distributed shared memory (cluster-reduce, then epilogue-norm); more tiles -> several tiles per
CTA of a cluster of at most 16, unnormalized tiles re-read from L2 after the exchange (deferred).
The compiled kernel's remarks say which (`prepare_linear_rmsnorm(...).compile().remarks`). Every
cluster form is one the driver launches (`ops/cluster_form.py`: the driver is asked once per
compiled kernel and device, when the launch is prepared or planned, never per call; where it
fits no cluster of the chosen size, a smaller one with more tiles per CTA, else the unfused
kernel); a launch that fails anyway raises `normfuse.device.LaunchFailure` naming the op,
M/N/K, dtype and form.
`passes=()` launches the naive kernel unchanged: the numerical oracle.

The lowered form (`lowered_postnorm_passes(schedule)` = epilogue-norm, then
hopper-ws{post-norm=true}: the warp-specialized template, the row's N tiles on distinct CTAs of
one wave exchanging their partial row sums through global memory) is what the ops run by
default: the module switch `LOWERED_POSTNORM[kind]` ('auto' by default: the schedule and tile
per geometry by `lowered_postnorm_choice`; 'coop' or 'pingpong' to force one; None for the
pipeline above; the environment variable NORMFUSE_POSTNORM_LOWERED=auto|coop|pingpong|off at
import). Measured on the H200 (2026-12-01, bench/results/2026-12-01/post-lowered, T = 8192): coop
0.96-0.98x cuBLAS's GEMM alone at K = N = 4096 / 8192 (cuBLAS + the norm: 1.06-1.16x), 1.17 /
1.49x at BERT's output / attention-output blocks (cuBLAS + LayerNorm: 1.44 / 1.64x; the cluster
pipeline: 1.77 / 2.46x). While the switch names a form, the ops' plan
(`ops.inference.postnorm_plan`) is "lowered" at every M. Its tiles (`lowered_postnorm_config`):
coop 128 x 256, ping-pong 64 x 256 (two 64-row accumulators). 'auto' takes ping-pong over
128 x 128 tiles from 8192 rows where K <= 2048 (from 131072 rows where K <= 512), coop 128 x 256
elsewhere (measured over 45 cells and the blog's 9,
`lowered_postnorm_choice`). Where the lowered kernel cannot
launch (rows of more N tiles than SMs, operands TMA cannot address) the op runs the pipeline
above instead (a RuntimeWarning once per geometry says why).

No autograd here (normfuse.ops.training has the training form), Hopper only, bf16/fp16 with
every tensor of one dtype, 32-bit offsets. `offset`: the norm's scale is offset + g, rounded to
g's dtype (the kernel reads g in the epilogue). A weight that is not unit-stride along K (a
strided view) is copied once per weight version.
"""
from __future__ import annotations

import functools

import torch

from ..device import LaunchFailure, cluster_occupancy, max_resident_programs
from ..kernels.configs import PostNormConfig, select_postnorm_config
from .common import check_hopper, check_postnorm, sm_count
from .prenorm_linear import (LaunchPlan, PlanCache, PreparedLaunch, _Spec, _as_2d, _check_offsets,
                             _ensure_allocator, _on_device, _passes_key, _ptr_key,
                             _check_offset, _make_out, _no_grad_check, _offset_weight, _tma_ok,
                             _unit_k)

__all__ = ["prepare_linear_rmsnorm", "lowered_postnorm_choice", "SWITCH_VALUES",
           "prepare_linear_layernorm", "DEFAULT_POSTNORM_PASSES", "postnorm_passes",
           "aot_compile_postnorm", "get_postnorm_launcher", "LOWERED_POSTNORM",
           "lowered_postnorm_passes", "lowered_postnorm_config", "clear_postnorm_plans",
           "on_clear_postnorm_plans", "normalizes_rounded_tile", "composes_for_rounded_tile"]

DEFAULT_POSTNORM_PASSES = ("cluster-reduce", "epilogue-norm")

# The module switch of the lowered form, per kernel kind: 'auto' (the default: the schedule and
# tile per geometry, `lowered_postnorm_choice`), 'coop' or 'pingpong' (hopper-ws{post-norm=true}
# with that schedule and its own tiles, `lowered_postnorm_config`) or None (the cluster pipeline
# above). NORMFUSE_POSTNORM_LOWERED=auto|coop|pingpong|off sets both kinds at import. Changing it
# takes effect for geometries not yet planned (`clear_postnorm_plans()` drops the plans and the
# ops' launch-ready calls).
LOWERED_SCHEDULES = ("coop", "pingpong")
SWITCH_VALUES = ("auto",) + LOWERED_SCHEDULES

# 'auto' (issue 20's tile rule): from PINGPONG_MIN_ROWS rows where K <= PINGPONG_MAX_K, ping-pong:
# over 64 x 256 tiles for rows wider than PINGPONG_128_MAX_N, over 128 x 128 ones below; coop
# 128 x 256 elsewhere. Measured on the H200 (2026-12-02,
# bench/results/2026-12-02/session11/post-grid: LayerNorm(x W^T + bias + residual), K in {512, 768,
# 1024, 2048, 4096} x N in {768, 1024, 2048} x T in {4096, 8192, 16384}, 3 rounds): geo. mean
# over the 45 cells 1.440x cuBLAS with coop everywhere, 1.413x with ping-pong 128 x 128
# everywhere, 1.395x with this rule, 1.390x taking the faster of the two in every cell. Ping-pong
# won 21 of the 24 cells with T >= 8192 and K <= 2048 (up to 16 % faster: K 1024 N 768 T 8192,
# 1.692 -> 1.422); coop won 10 of the 12 K = 4096 cells and 11 of the 15 T = 4096 ones (one tile
# per SM there: a second accumulator has no other tile to overlap). The wider rows
# (session11/bert-blocks, K, N in {1024, 4096}, T 8192-32768): at K = 1024, N = 4096 ping-pong
# 64 x 256 1.310-1.408x cuBLAS, coop 1.428-1.509, ping-pong 128 x 128 1.512-1.573 (32 N tiles per
# row); at K = 4096 coop stays fastest (ping-pong 64 x 256: 1.47-1.60x).
# Past PINGPONG_TALL_ROWS rows ping-pong only where K <= PINGPONG_TALL_MAX_K. Measured on the H200
# (2026-12-02, bench/results/2026-12-02/session12/post-summary: the blog's 9 cells, M = 262144, no
# bias or residual, both norms): the rule above 1.195x cuBLAS geo. mean over the 18 cells,
# coop everywhere 1.178x; at K = 512 ping-pong 128 x 128 faster in 4 of 6 cells (N 1024 and
# 2048: 1.094 vs 1.175, 1.235 vs 1.280, 1.247 vs 1.283 RMS/LN), at K >= 1024 coop faster in 9
# of 12 (up to 10 %: LN K 2048 N 2048, 1.230 -> 1.115), the others within 1 %; with this bound
# 1.173x. Where between 32768 rows (bert-blocks: ping-pong 9-11 % faster at K = 1024, with bias
# and residual) and 262144 the crossing lies is not measured; 131072 splits them.
PINGPONG_MIN_ROWS = 8192
PINGPONG_MAX_K = 2048
PINGPONG_128_MAX_N = 2048
PINGPONG_TALL_ROWS = 131072
PINGPONG_TALL_MAX_K = 512


def _switch_from_env() -> dict:
    import os
    v = os.environ.get("NORMFUSE_POSTNORM_LOWERED", "").strip().lower() or "auto"
    if v in ("off", "none", "0"):
        v = None
    elif v not in SWITCH_VALUES:
        raise ValueError(f"NORMFUSE_POSTNORM_LOWERED must be one of {SWITCH_VALUES} or 'off', "
                         f"got {v!r}")
    return {"rms": v, "ln": v}


LOWERED_POSTNORM: dict = _switch_from_env()


def lowered_postnorm_passes(schedule: str = "coop") -> tuple:
    """The lowered post-norm pipeline: epilogue-norm (a row in one tile: normalized in registers)
    then hopper-ws{post-norm=true} with `schedule` ('coop' or 'pingpong')."""
    if schedule not in LOWERED_SCHEDULES:
        raise ValueError(f"lowered post-norm schedule must be one of {LOWERED_SCHEDULES}, got "
                         f"{schedule!r}")
    opts = "post-norm=true,schedule=" + schedule
    return ("epilogue-norm", "hopper-ws{" + opts + "}")


def lowered_postnorm_config(M: int, N: int, K: int, schedule: str = "coop",
                            dtype=None) -> PostNormConfig:
    """The naive kernel's tile for the lowered form (the template takes the kernel's tile): coop
    128 x 256 (two warpgroups on one accumulator), ping-pong 64 x 256 (a 64-row accumulator per
    warpgroup: one's epilogue and exchange run during the other's k-loop); a row of N <= 256 in
    one tile of the next power of two (as the default table). Persistence as the table says (it
    matters only to the unlowered kernel)."""
    base = select_postnorm_config(M, N, K, dtype)
    bm = 64 if schedule == "pingpong" else 128
    bn = base.block_n if N <= 256 else 256
    return PostNormConfig(bm, bn, 64, 8 if bm * bn >= 128 * 256 else 4, 3, base.persistent)


def lowered_postnorm_choice(M: int, N: int, K: int, switch: str = "auto",
                            dtype=None) -> tuple[str, PostNormConfig]:
    """(schedule, tile config) of the lowered form for an [M, K] x [N, K] problem under the
    switch value `switch`: 'coop' / 'pingpong' take that schedule's own tiles
    (`lowered_postnorm_config`); 'auto' takes, from PINGPONG_MIN_ROWS rows where K <=
    PINGPONG_MAX_K (PINGPONG_TALL_MAX_K from PINGPONG_TALL_ROWS rows) and the row spans more
    than one 256-wide tile, ping-pong (one tile per
    consumer warpgroup, their main loops taking turns) over 128 x 128 tiles up to
    PINGPONG_128_MAX_N columns, over 64 x 256 tiles for wider rows; coop 128 x 256 elsewhere
    (measured: see PINGPONG_MIN_ROWS)."""
    if switch in LOWERED_SCHEDULES:
        return switch, lowered_postnorm_config(M, N, K, switch, dtype)
    if switch != "auto":
        raise ValueError(f"lowered post-norm switch must be one of {SWITCH_VALUES}, got "
                         f"{switch!r}")
    max_k = PINGPONG_TALL_MAX_K if M >= PINGPONG_TALL_ROWS else PINGPONG_MAX_K
    if M >= PINGPONG_MIN_ROWS and K <= max_k and N > 256:
        if N > PINGPONG_128_MAX_N:
            return "pingpong", lowered_postnorm_config(M, N, K, "pingpong", dtype)
        base = select_postnorm_config(M, N, K, dtype)
        return "pingpong", PostNormConfig(128, 128, 64, 4, 3, base.persistent)
    return "coop", lowered_postnorm_config(M, N, K, "coop", dtype)


def postnorm_passes(cluster_size: int | None = None, max_cluster: int | None = None,
                    exchange: str | None = None) -> tuple:
    """The default post-norm pipeline, with cluster-reduce's options when given (`exchange`:
    'dsmem', the default, or 'global' for the global-scratch exchange)."""
    opts = []
    if cluster_size is not None:
        opts.append(f"cluster-size={int(cluster_size)}")
    if max_cluster is not None:
        opts.append(f"max-cluster={int(max_cluster)}")
    if exchange is not None:
        opts.append(f"exchange={exchange}")
    cr = "cluster-reduce" + ("{" + ",".join(opts) + "}" if opts else "")
    return (cr, "epilogue-norm")


def _config_for(passes, M: int, N: int, K: int, dtype) -> PostNormConfig:
    """The tile table's config, or the lowered form's tiles when `passes` is its spelling (the
    template takes the kernel's tile)."""
    key = tuple(passes) if passes is not None and not isinstance(passes, str) else passes
    for sched in LOWERED_SCHEDULES:
        if key == lowered_postnorm_passes(sched):
            return lowered_postnorm_config(M, N, K, sched, dtype)
    return select_postnorm_config(M, N, K, dtype)


def _kernel(kind: str):
    from ..kernels.postnorm_gemm import linear_layernorm_naive, linear_rmsnorm_naive
    return {"rms": linear_rmsnorm_naive, "ln": linear_layernorm_naive}[kind]


@functools.lru_cache(maxsize=None)
def _launcher(kind: str, passes):
    import normfuse
    return normfuse.jit(_kernel(kind), passes=passes)


def get_postnorm_launcher(kind: str, passes=DEFAULT_POSTNORM_PASSES):
    key = () if passes is None else (passes if isinstance(passes, str) else tuple(passes))
    return _launcher(kind, key)


def _check_post(op, x, weight, norm: dict, bias, residual) -> None:
    """The launch path's checks: the shared ones, no tensor requiring grad under grad mode, a
    Hopper GPU."""
    check_postnorm(op, x, weight, norm, bias, residual, fused=True)
    _no_grad_check(op, (x, weight, *norm.values(), bias, residual))
    check_hopper(op, x.device)


def _want_tma(K: int, tma: bool | None) -> bool:
    """`tma=None` resolved. Measured on the H200 (2026-11-29, bench/results/2026-11-29/postnorm/
    variants_rms.json, 128x256x64 s3): bulk copies 2-6 % faster at K >= 1024, 7 % slower at
    K = 512. (Rows must still be 16-byte aligned: `_tma_ok`.)"""
    return K >= 1024 if tma is None else bool(tma)


def _want_persistent(cfg: PostNormConfig, persistent: bool | None) -> bool:
    """`persistent=None` resolved: the config's choice (select_postnorm_config: large M)."""
    return cfg.persistent if persistent is None else bool(persistent)


def fit_cluster_form(plan: PreparedLaunch, launcher_for, passes) -> PreparedLaunch:
    """`plan` (compiled) with the form the driver launches (`ops/cluster_form.py`: the rule):
    under the default pipeline, the cluster size cluster-reduce picks when the device fits such a
    cluster (the driver is asked once per compiled kernel and device), else the next smaller
    one, else no cluster (the unfused kernel). `launcher_for(passes)` gives the plan's kernel
    under other passes. A pipeline given by the caller is kept as given."""
    bn = plan.constexprs.get("BLOCK_N")
    tiles = -(-int(plan.constexprs["N"]) // int(bn)) if bn else 1
    if tiles < 2 or _passes_key(passes) != DEFAULT_POSTNORM_PASSES or _fits(plan):
        return plan  # (on the H200 every size fits)
    from dataclasses import replace

    from ..passes.cluster_reduce import cluster_candidates
    from .cluster_form import choose_cluster_form
    plans = {cluster_candidates(tiles)[0]: plan}  # the default pipeline's size, refused

    def plan_for(c):  # c CTAs per cluster; 1: the unfused kernel
        if c not in plans:
            plans[c] = replace(
                plan, launcher=launcher_for(postnorm_passes(max_cluster=c) if c > 1 else ()),
                _compiled=None, _full_args=(), _bound=None)
        return plans[c]

    form = choose_cluster_form(tiles, lambda c: plans.get(c) is not plan and _fits(plan_for(c)))
    return plan_for(1) if form.unclustered else plan_for(form.ctas)


def _fits(plan: PreparedLaunch) -> bool:
    """Whether the device fits a cluster of the plan's compiled kernel (or it has none); the
    driver is asked once per loaded kernel (normfuse.device.cluster_occupancy)."""
    kernel = getattr(plan.compile(), "kernel", None)  # (none: the CPU interpreter's stand-in)
    if kernel is None or kernel.metadata.num_ctas == 1:
        return True
    with _on_device(plan.out.device):
        return cluster_occupancy(kernel) > 0


def _fit_and_grid(plan: PreparedLaunch, launcher_for, passes) -> PreparedLaunch:
    """The form the driver launches (`fit_cluster_form`), and for the persistent form as many
    programs as run at once (compiled first: the passes decide the cluster size). A driver
    refusal is reported in the op's terms."""
    try:
        plan = fit_cluster_form(plan, launcher_for, passes)
        if plan.constexprs["PERSISTENT"]:
            with _on_device(plan.out.device):
                resident = max_resident_programs(plan.compile(), sm_count(plan.out.device))
            plan.grid = (min(plan.grid[0], resident),)
    except LaunchFailure as e:
        raise e.for_op(plan.describe()) from e
    return plan


def _prepare(op, kind, x, weight, norm: dict, eps, bias, residual, config, passes, out, tma=None,
             persistent=None, offset=0.0, cache_weights=True, fit=True):
    if config is not None and not isinstance(config, PostNormConfig):
        raise TypeError(f"{op}: config must be a PostNormConfig, got {type(config).__name__}")
    _check_offset(op, offset, norm["norm_weight"])
    _check_post(op, x, weight, norm, bias, residual)
    if offset:
        norm = dict(norm, norm_weight=_offset_weight(norm["norm_weight"], offset, cache_weights))
    return _prepare_checked(op, kind, x, _unit_k(weight, cache_weights), norm, eps, bias,
                            residual, config, passes, out, tma, persistent, fit)


def _prepare_checked(op, kind, x, w, norm: dict, eps, bias, residual, config, passes, out,
                     tma=None, persistent=None, fit=True):
    """`_prepare` after the checks (w unit-stride along K, norm weight with its offset).
    `fit`: compile now and choose the cluster form the driver launches (`_fit_and_grid`); False
    for a caller that launches another kernel with this plan's arguments (the training
    forward) and fits that one."""
    N = w.shape[0]
    lead = tuple(x.shape[:-1])
    x2 = _as_2d(x)
    M, K = x2.shape
    res = None
    if residual is not None:
        res = residual.reshape(M, N)
        if res.stride(-1) != 1:
            res = res.contiguous()
    cfg = config or _config_for(passes, M, N, K, x.dtype)
    y = _make_out(op, x, w, out)
    stride_xm = x2.stride(0) if M > 1 else K
    stride_wn = w.stride(0) if N > 1 else K
    stride_rm = res.stride(0) if res is not None and M > 1 else N
    if M:
        _check_offsets(op, M, N, K, stride_xm, stride_wn, cfg, stride_out=stride_rm)
    vecs = [t.contiguous() for t in norm.values()]
    args = (x2, w, bias.contiguous() if bias is not None else w, res if res is not None else w,
            *vecs, y, M, K, stride_xm, stride_wn, stride_rm, y.stride(0) if M > 1 else N, float(eps))
    use_tma = _want_tma(K, tma) and _tma_ok(x2, w, stride_xm, stride_wn, K)
    # device-side TMA descriptors and cluster-reduce{exchange=global} live in global scratch,
    # which Triton's launcher takes from the allocator
    _ensure_allocator()
    persistent = _want_persistent(cfg, persistent)
    consts = dict(N=N, EVEN_K=K % cfg.block_k == 0, HAS_BIAS=bias is not None,
                  HAS_RES=res is not None, USE_TMA=use_tma, PERSISTENT=persistent and M > 0,
                  **cfg.constexprs())
    # One program per row block; a cluster kernel's launcher starts num_ctas CTAs per program.
    blocks = -(-M // cfg.block_m) if N else 0
    plan = PreparedLaunch(op, kind, get_postnorm_launcher(kind, passes), args, consts, cfg.options(),
                          (blocks,), cfg, y, lead + (N,), None)
    if blocks and fit:
        plan = _fit_and_grid(plan, lambda p: get_postnorm_launcher(kind, p), passes)
    return plan


_POST_PLANS = PlanCache()


_CLEAR_HOOKS: list = []  # callables run by clear_postnorm_plans (the ops' launch-ready calls)


# Plan keys whose LayerNorm kernel would normalize a rounded tile (see `normalizes_rounded_tile`):
# `launch_postnorm` returns None for them and the op composes cuBLAS with the norm instead.
_COMPOSE_KEYS: set = set()


def normalizes_rounded_tile(p: PreparedLaunch) -> bool:
    """Whether the prepared post-norm launch normalizes a tile it stored in the output's dtype
    and read back: no lowered form, and epilogue-norm did not forward the tile through registers
    (the deferred cluster form, more tiles per row than a cluster holds, or the unfused kernel).
    Its statistics come from the fp32 accumulator while it centres the rounded values, so a
    LayerNorm row whose variance is below the rounding of its mean (a constant row, N = 1) comes
    out as (rounded - exact) * rsqrt(eps): the LayerNorm ops compose cuBLAS with the norm there
    (RMSNorm does not centre: its error stays the rounding's)."""
    if p.grid[0] == 0:
        return False
    ck = p.compile()
    return ck.lowered is None and not any("[epilogue-norm] applied" in r
                                          for r in ck.remarks)


# kernel -> whether its LayerNorm composes instead (`composes_for_rounded_tile`); keyed by what
# decides the form (the pipeline, the constexprs with N and the tiles, the cluster options,
# the dtype), not by M: a run of ragged batches adds no entries
_ROUNDED: dict = {}


def composes_for_rounded_tile(p: PreparedLaunch, what: str) -> bool:
    """Whether the LayerNorm launch `p` (of the inference or the training kernel) must be composed
    instead (`normalizes_rounded_tile`), decided once per kernel, with a RuntimeWarning the first
    time; `what` names the op in it."""
    key = (p.launcher, tuple(sorted(p.constexprs.items())), tuple(sorted(p.options.items())),
           p.runtime_args[0].dtype)
    got = _ROUNDED.get(key)
    if got is None:
        got = _ROUNDED[key] = normalizes_rounded_tile(p)
        if got:
            import warnings
            M, K = p.runtime_args[0].shape
            warnings.warn(f"normfuse: {what}: M={M}, N={p.out.shape[-1]}, K={K}: the fused "
                          "kernel here (no lowered form; the row's tiles re-read after its "
                          "statistics) would normalize the rounded tile, which loses rows of "
                          "near-zero variance; running cuBLAS and the norm instead",
                          RuntimeWarning, stacklevel=4)
    return got


def clear_postnorm_plans() -> None:
    """Drop the post-norm ops' launch plans, and the launch-ready calls made from them (after
    changing LOWERED_POSTNORM)."""
    _POST_PLANS.clear()
    _COMPOSE_KEYS.clear()
    for fn in _CLEAR_HOOKS:
        fn()


def on_clear_postnorm_plans(fn) -> None:
    """`fn()` runs in clear_postnorm_plans (for the layers above that keep plans)."""
    _CLEAR_HOOKS.append(fn)


def _lowered_or_default(op, kind, x2, w, norm, eps, bias, r2, switch):
    """The lowered form's prepared launch (schedule and tiles by `lowered_postnorm_choice` under
    the switch value `switch`) when its kernel lowers and can launch these operands, else the
    default pipeline's (the reason in a RuntimeWarning, once per geometry)."""
    M, K = x2.shape
    N = w.shape[0]
    schedule, cfg = lowered_postnorm_choice(M, N, K, switch, x2.dtype)
    from ..passes import PassError
    try:
        # (preparing a persistent launch compiles already: its grid is the resident programs)
        p = _prepare_checked(op, kind, x2, w, norm, eps, bias, r2, cfg,
                             lowered_postnorm_passes(schedule), None)
        if p.grid[0] == 0:
            return p
        ck = p.compile()
    except PassError as e:  # a lowering bug must not cost the user the op: said, and bypassed
        why = f"the lowering failed: {e}"
    else:
        why = ("hopper-ws did not lower it: " + "; ".join(r for r in ck.remarks
                                                          if "hopper-ws" in r)
               if ck.lowered is None else ck.lowered.why_not(p.runtime_args))
    if why is None:
        return p
    import warnings
    warnings.warn(f"normfuse: {op}: the lowered post-norm cannot run here ({why}); running the "
                  "default pipeline", RuntimeWarning, stacklevel=4)
    return _prepare_checked(op, kind, x2, w, norm, eps, bias, r2, None, DEFAULT_POSTNORM_PASSES, None)


def _postnorm_2d(x, w, residual) -> tuple:
    """(x2, r2): x [..., K] and the residual [..., N] (or None) as the launch passes them."""
    x2 = x if x.dim() == 2 and x.stride(1) == 1 else _as_2d(x)
    r2 = None
    if residual is not None:
        r2 = residual if residual.dim() == 2 else residual.reshape(x2.shape[0], w.shape[0])
        if r2.stride(-1) != 1:
            r2 = r2.contiguous()
    return x2, r2


def postnorm_plan_key(kind, x2, w, g, beta, bias, r2, eps, schedule=None) -> tuple:
    """The key of `launch_postnorm`'s plan (geometry, dtypes, device, 16-byte alignment, the
    lowered form's switch value or None)."""
    return (kind, eps, x2.shape, x2.stride(), x2.dtype, x2.device, x2.data_ptr() & 15, w.shape,
            w.stride(), w.data_ptr() & 15, _ptr_key(g), _ptr_key(beta), _ptr_key(bias),
            None if r2 is None else (r2.stride(), r2.data_ptr() & 15), schedule)


def postnorm_plan_made(kind, x, w, g, beta, bias, residual, eps,
                       lowered: str | None = None) -> "LaunchPlan | None":
    """The plan `launch_postnorm` made for these arguments (as it passes them), or None."""
    x2, r2 = _postnorm_2d(x, w, residual)
    schedule = LOWERED_POSTNORM.get(kind) if lowered is None else lowered
    return _POST_PLANS.get(postnorm_plan_key(kind, x2, w, g, beta, bias, r2, eps, schedule))


def launch_postnorm(op: str, kind: str, x, w, g, beta, bias, residual, eps: float,
                    lowered: str | None = None) -> torch.Tensor:
    """The default fused launch of a post-norm kernel, planned once per geometry: x [..., K]
    (checked by the caller), w [N, K] unit-stride along K, g / beta / bias [N] contiguous (beta
    for kind "ln"), residual [..., N] or None. Returns z [..., N] in x's dtype, or None where
    the LayerNorm kernel for this geometry would normalize a rounded tile
    (`normalizes_rounded_tile`): the caller composes then. `lowered`: the lowered form's switch
    value, 'auto', 'coop' or 'pingpong' (default: the module switch, LOWERED_POSTNORM[kind])."""
    x2, r2 = _postnorm_2d(x, w, residual)
    M, N = x2.shape[0], w.shape[0]
    schedule = LOWERED_POSTNORM.get(kind) if lowered is None else lowered
    key = postnorm_plan_key(kind, x2, w, g, beta, bias, r2, eps, schedule)
    plan = _POST_PLANS.get(key)
    if plan is None:
        if key in _COMPOSE_KEYS:
            return None
        norm = {"norm_weight": g} if kind == "rms" else {"norm_weight": g, "norm_bias": beta}
        if schedule:
            p = _lowered_or_default(op, kind, x2, w, norm, eps, bias, r2, schedule)
        else:
            p = _prepare_checked(op, kind, x2, w, norm, eps, bias, r2, None,
                                 DEFAULT_POSTNORM_PASSES, None)
        if kind == "ln" and composes_for_rounded_tile(p, op):
            _COMPOSE_KEYS.add(key)  # (skips planning this geometry again)
            return None
        plan = _POST_PLANS.add(key, LaunchPlan(p, 5 + len(norm)))
    y = torch.empty((M, N), dtype=x2.dtype, device=x2.device)
    b, r = w if bias is None else bias, w if r2 is None else r2
    plan.run((x2, w, b, r, g, y) if kind == "rms" else (x2, w, b, r, g, beta, y))
    return y if x.dim() == 2 else y.view(*x.shape[:-1], N)


def prepare_linear_rmsnorm(x, weight, norm_weight, eps=1e-6, bias=None, residual=None, *,
                           offset=0.0, config: PostNormConfig | None = None,
                           passes=DEFAULT_POSTNORM_PASSES, out: torch.Tensor | None = None,
                           tma: bool | None = None,
                           persistent: bool | None = None) -> PreparedLaunch:
    """Validate and prepare `linear_rmsnorm` without launching."""
    if norm_weight is None:
        raise ValueError("linear_rmsnorm: norm_weight is required")
    return _prepare("linear_rmsnorm", "rms", x, weight, {"norm_weight": norm_weight}, eps, bias,
                    residual, config, passes, out, tma, persistent, offset)


def prepare_linear_layernorm(x, weight, norm_weight, norm_bias, eps=1e-5, bias=None, residual=None, *,
                             offset=0.0, config: PostNormConfig | None = None,
                             passes=DEFAULT_POSTNORM_PASSES, out: torch.Tensor | None = None,
                             tma: bool | None = None,
                             persistent: bool | None = None) -> PreparedLaunch:
    """Validate and prepare `linear_layernorm` without launching."""
    if norm_weight is None or norm_bias is None:
        raise ValueError("linear_layernorm: norm_weight and norm_bias are required (pass ones / "
                         "zeros for a LayerNorm without affine parameters)")
    return _prepare("linear_layernorm", "ln", x, weight,
                    {"norm_weight": norm_weight, "norm_bias": norm_bias}, eps, bias, residual,
                    config, passes, out, tma, persistent, offset)


def aot_compile_postnorm(kind: str, *, M: int = 8192, N: int = 1024, K: int = 1024,
                         dtype=torch.bfloat16, has_bias: bool = False, has_res: bool = False,
                         config: PostNormConfig | None = None, passes=DEFAULT_POSTNORM_PASSES,
                         target="cuda:90", tma: bool | None = None, persistent: bool | None = None):
    """Compile the kernel of `linear_rmsnorm` ('rms') / `linear_layernorm` ('ln') for an
    [M, K] x [N, K] problem through `passes`, without a GPU (contiguous, 16-byte aligned inputs;
    `tma=None` follows the op's rule: bulk tensor copies when K >= 1024). The default `passes`
    is the cluster pipeline; the ops launch the lowered form by default
    (`passes=lowered_postnorm_passes(schedule)`)."""
    import normfuse
    if kind not in ("rms", "ln"):
        raise ValueError(f"unknown post-norm kernel kind '{kind}' (rms, ln)")
    cfg = config or _config_for(passes, M, N, K, dtype)
    t = _Spec(dtype)
    vecs = (t,) if kind == "rms" else (t, t)
    args = (t, t, t, t, *vecs, t, M, K, K, K, N, N, 1e-6)
    consts = dict(N=N, EVEN_K=K % cfg.block_k == 0, HAS_BIAS=has_bias, HAS_RES=has_res,
                  USE_TMA=_want_tma(K, tma), PERSISTENT=_want_persistent(cfg, persistent),
                  **cfg.constexprs())
    launcher = get_postnorm_launcher(kind, passes)
    signature, consts, attrs, options, _ = launcher.specialize(args, dict(consts, **cfg.options()))
    return normfuse.compile(launcher.fn, signature=signature, constexprs=consts, attrs=attrs,
                            target=target, passes=launcher.passes, **options)
