"""Post-norm linear ops: y = norm(x @ W^T + bias + residual), one normfuse-compiled kernel.

    linear_rmsnorm / linear_layernorm      functional API: validate -> prepare -> launch
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
compiled kernel and device; where it fits no cluster of the chosen size, a smaller one with more
tiles per CTA, else the unfused kernel); a launch that fails anyway raises
`normfuse.launch.LaunchFailure` naming the op, M/N/K, dtype and form.
`passes=()` launches the naive kernel unchanged: the numerical oracle.

Inference only, Hopper only, bf16/fp16 with every tensor of one dtype, 32-bit offsets.
"""
from __future__ import annotations

import functools

import torch

from ..kernels.configs import PostNormConfig, select_postnorm_config
from ..launch import LaunchFailure
from .prenorm_linear import (PreparedLaunch, _as_2d, _check_inputs, _check_offsets,
                             _ensure_allocator, _make_out, _on_device, _passes_key, _shape, _tma_ok,
                             _unit_k, _wants_grad)

__all__ = ["linear_rmsnorm", "linear_layernorm", "prepare_linear_rmsnorm",
           "prepare_linear_layernorm", "DEFAULT_POSTNORM_PASSES", "postnorm_passes",
           "aot_compile_postnorm", "get_postnorm_launcher"]

DEFAULT_POSTNORM_PASSES = ("cluster-reduce", "epilogue-norm")


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


def _check_post(op, x, weight, norm: dict, residual) -> None:
    """Checks of the post-norm operands (shapes over N); run before the shared checks, whose
    last one is the device check."""
    for name, t in (("x", x), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if weight.dim() != 2:
        raise ValueError(f"{op}: weight must be 2-D [out_features, in_features], got weight of "
                         f"shape {_shape(weight)}")
    N = weight.shape[0]
    for name, t in norm.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if tuple(t.shape) != (N,):
            raise ValueError(f"{op}: {name} must have shape ({N},) = (out_features,), got {_shape(t)}")
    if residual is not None:
        if not isinstance(residual, torch.Tensor):
            raise TypeError(f"{op}: residual must be a torch.Tensor, got {type(residual).__name__}")
        want = tuple(x.shape[:-1]) + (N,)
        if tuple(residual.shape) != want:
            raise ValueError(f"{op}: residual must have the output's shape {want}, got "
                             f"{_shape(residual)}")
    extra = dict(norm, residual=residual)
    for name, t in extra.items():
        if t is None:
            continue
        if t.dtype != x.dtype:
            raise TypeError(f"{op}: {name} must have x's dtype {x.dtype}, got {t.dtype}")
        if t.device != x.device:
            raise ValueError(f"{op}: {name} must be on x's device {x.device}, got {t.device}")
        if torch.is_grad_enabled() and t.requires_grad:
            raise NotImplementedError(f"{op}: this launch path is inference-only (autograd goes "
                                      "through the functional op, see normfuse.ops.training): "
                                      "call it under torch.no_grad() or torch.inference_mode()")


def _want_tma(K: int, tma: bool | None) -> bool:
    """`tma=None` resolved. Measured on the H200 (2026-11-29, bench/results/2026-11-29/postnorm/
    variants_rms.json, 128x256x64 s3): bulk copies 2-6 % faster at K >= 1024, 7 % slower at
    K = 512. (Rows must still be 16-byte aligned: `_tma_ok`.)"""
    return K >= 1024 if tma is None else bool(tma)


def _want_persistent(cfg: PostNormConfig, persistent: bool | None) -> bool:
    """`persistent=None` resolved: the config's choice (select_postnorm_config: large M)."""
    return cfg.persistent if persistent is None else bool(persistent)


def max_resident_programs(compiled, sms: int) -> int:
    """How many programs of a compiled post-norm kernel run at once: `sms` for one CTA per
    program (the 128x256 tiles hold one CTA per SM), else the driver's count of clusters of
    `num_ctas` CTAs that fit together (cuOccupancyMaxActiveClusters: clusters must sit inside
    one GPC, so this is less than sms / num_ctas on the H200's GPCs), asked once per loaded
    kernel (`normfuse.launch.cluster_occupancy`); LaunchFailure when the device fits none."""
    from ..launch import ensure_cluster_launch, triton_kernel
    kernel = triton_kernel(compiled)
    if int(kernel.metadata.num_ctas or 1) == 1:
        return sms
    return ensure_cluster_launch(kernel)


def fit_cluster_form(plan: PreparedLaunch, launcher_for, passes) -> PreparedLaunch:
    """`plan` (compiled) with the form the driver launches (`ops/cluster_form.py`: the rule):
    under the default pipeline, the cluster size cluster-reduce picks when the device fits such a
    cluster (the driver is asked once per compiled kernel and device), else the next smaller
    one, else no cluster (the unfused kernel). `launcher_for(passes)` gives the plan's kernel
    under other passes. A pipeline given by the caller is kept as given."""
    bn = plan.constexprs.get("BLOCK_N")
    tiles = -(-int(plan.constexprs["N"]) // int(bn)) if bn else 1
    if tiles < 2 or _passes_key(passes) != DEFAULT_POSTNORM_PASSES or _fits(plan):
        return plan  # (on the H200 every size fits: one dictionary lookup per call after the first)
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
    """Whether the device fits a cluster of the plan's compiled kernel (or it has none)."""
    from ..launch import cluster_occupancy
    kernel = getattr(plan.compile(), "kernel", None)  # (none: the CPU interpreter's stand-in)
    if kernel is None or kernel.metadata.num_ctas == 1:
        return True
    with _on_device(plan.out.device):
        return cluster_occupancy(kernel) > 0


def _prepare(op, kind, x, weight, norm: dict, eps, bias, residual, config, passes, out, tma=None,
             persistent=None, fit=True):
    if config is not None and not isinstance(config, PostNormConfig):
        raise TypeError(f"{op}: config must be a PostNormConfig, got {type(config).__name__}")
    _check_post(op, x, weight, norm, residual)
    _check_inputs(op, x, weight, {}, bias)
    N = weight.shape[0]
    lead = tuple(x.shape[:-1])
    x2 = _as_2d(x)
    w = _unit_k(weight)
    M, K = x2.shape
    res = None
    if residual is not None:
        res = residual.reshape(M, N)
        if res.stride(-1) != 1:
            res = res.contiguous()
    cfg = config or select_postnorm_config(M, N, K, x.dtype)
    y = _make_out(op, x, weight, out)
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


def _fit_and_grid(plan: PreparedLaunch, launcher_for, passes) -> PreparedLaunch:
    """The form the driver launches (`fit_cluster_form`), and for the persistent form as many
    programs as run at once (compiled first: the passes decide the cluster size). A driver
    refusal is reported in the op's terms."""
    from .prenorm_linear import sm_count  # (looked up here: the CPU tests replace it)
    try:
        plan = fit_cluster_form(plan, launcher_for, passes)
        if plan.constexprs["PERSISTENT"]:
            plan.grid = (min(plan.grid[0], max_resident_programs(plan.compile(),
                                                                 sm_count(plan.out.device))),)
    except LaunchFailure as e:
        raise e.for_op(plan.describe()) from e
    return plan


def prepare_linear_rmsnorm(x, weight, norm_weight, eps=1e-6, bias=None, residual=None, *,
                           config: PostNormConfig | None = None, passes=DEFAULT_POSTNORM_PASSES,
                           out: torch.Tensor | None = None, tma: bool | None = None,
                           persistent: bool | None = None) -> PreparedLaunch:
    """Validate and prepare `linear_rmsnorm` without launching."""
    if norm_weight is None:
        raise ValueError("linear_rmsnorm: norm_weight is required")
    return _prepare("linear_rmsnorm", "rms", x, weight, {"norm_weight": norm_weight}, eps, bias,
                    residual, config, passes, out, tma, persistent)


def prepare_linear_layernorm(x, weight, norm_weight, norm_bias, eps=1e-5, bias=None, residual=None, *,
                             config: PostNormConfig | None = None, passes=DEFAULT_POSTNORM_PASSES,
                             out: torch.Tensor | None = None, tma: bool | None = None,
                             persistent: bool | None = None) -> PreparedLaunch:
    """Validate and prepare `linear_layernorm` without launching."""
    if norm_weight is None or norm_bias is None:
        raise ValueError("linear_layernorm: norm_weight and norm_bias are required (pass ones / "
                         "zeros for a LayerNorm without affine parameters)")
    return _prepare("linear_layernorm", "ln", x, weight,
                    {"norm_weight": norm_weight, "norm_bias": norm_bias}, eps, bias, residual,
                    config, passes, out, tma, persistent)


def linear_rmsnorm(x, weight, norm_weight, eps=1e-6, bias=None, residual=None, *,
                   config: PostNormConfig | None = None, passes=DEFAULT_POSTNORM_PASSES,
                   tma: bool | None = None, persistent: bool | None = None) -> torch.Tensor:
    """y = rmsnorm(x @ weight^T + bias + residual, norm_weight, eps), in one kernel.

    x: [..., K]; weight: [N, K]; norm_weight: [N]; bias: [N] or None; residual: [..., N] or None
    (added before the norm). Returns [..., N] in x's dtype. The form (single CTA, cluster,
    deferred) follows from N and the config (see the module docstring); `passes=()` runs the
    naive kernel. `tma=True` reads the tiles with bulk tensor copies (when rows are 16-byte
    aligned), False pointer loads, None (default) bulk copies when K >= 1024 (measured faster
    there). `persistent`: launch only as many programs (clusters) as run at once, each walking
    row blocks (None: the config's choice, for large M). Trains under autograd
    (`normfuse.ops.training`; the launch options must keep their defaults).
    """
    if _wants_grad(x, weight, norm_weight, bias, residual):
        return _train("linear_rmsnorm", x, weight, {"norm_weight": norm_weight}, eps, bias,
                      residual, dict(config=config, passes=passes, tma=tma, persistent=persistent))
    return prepare_linear_rmsnorm(x, weight, norm_weight, eps, bias, residual, config=config,
                                  passes=passes, tma=tma, persistent=persistent)()


def linear_layernorm(x, weight, norm_weight, norm_bias, eps=1e-5, bias=None, residual=None, *,
                     config: PostNormConfig | None = None, passes=DEFAULT_POSTNORM_PASSES,
                     tma: bool | None = None, persistent: bool | None = None) -> torch.Tensor:
    """y = layer_norm(x @ weight^T + bias + residual, [N], norm_weight, norm_bias, eps), in one
    kernel. As `linear_rmsnorm`; the row's sum and sum of squares are exchanged in one step."""
    if _wants_grad(x, weight, norm_weight, norm_bias, bias, residual):
        return _train("linear_layernorm", x, weight,
                      {"norm_weight": norm_weight, "norm_bias": norm_bias}, eps, bias, residual,
                      dict(config=config, passes=passes, tma=tma, persistent=persistent))
    return prepare_linear_layernorm(x, weight, norm_weight, norm_bias, eps, bias, residual,
                                    config=config, passes=passes, tma=tma, persistent=persistent)()


def _train(op, x, weight, norm: dict, eps, bias, residual, options: dict):
    from .prenorm_linear import _training_options
    _training_options(op, **options)
    if any(t is None for t in norm.values()):
        raise ValueError(f"{op}: " + " and ".join(norm) + " are required")
    if not torch.compiler.is_compiling():  # while torch.compile traces, the implementation checks
        with torch.no_grad():
            _check_post(op, x, weight, norm, residual)
            _check_inputs(op, x, weight, {}, bias)
    from .training import postnorm_linear_train
    return postnorm_linear_train(op, x, weight, norm["norm_weight"], norm.get("norm_bias"), eps,
                                 bias, residual, "norm_bias" in norm)


def aot_compile_postnorm(kind: str, *, M: int = 8192, N: int = 1024, K: int = 1024,
                         dtype=torch.bfloat16, has_bias: bool = False, has_res: bool = False,
                         config: PostNormConfig | None = None, passes=DEFAULT_POSTNORM_PASSES,
                         target="cuda:90", tma: bool | None = None, persistent: bool | None = None):
    """Compile the kernel `linear_rmsnorm` ('rms') / `linear_layernorm` ('ln') would launch for an
    [M, K] x [N, K] problem, without a GPU (contiguous, 16-byte aligned inputs; `tma=None`
    follows the op's rule: bulk tensor copies when K >= 1024)."""
    import normfuse
    from .prenorm_linear import _Spec
    if kind not in ("rms", "ln"):
        raise ValueError(f"unknown post-norm kernel kind '{kind}' (rms, ln)")
    cfg = config or select_postnorm_config(M, N, K, dtype)
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
