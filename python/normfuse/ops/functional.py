"""The public functional ops: the torch.library ops below them, chosen per call.

Layers of normfuse.ops, bottom up (each imports only those below it):

    common.py                        device facts, validation, weight lists, derived-weight cache
    prenorm_linear.py, postnorm_linear.py   the fused forward launches (prepare_*, launch plans)
    fallback.py                      the same functions in plain torch (reference path)
    inference.py                     the inference ops normfuse::prenorm_linear / postnorm_linear
    training.py                      backward kernels and the training ops (autograd)
    functional.py (this file)        rmsnorm_linear, layernorm_linear, linear_rmsnorm,
                                     linear_layernorm, postnorm_mlp

A call under autograd (grad mode on and a tensor requiring grad) takes the training ops
(normfuse::*_fwd with registered autograd; the launch options must keep their defaults), any other
call the inference op. Each op runs the fused kernels for bf16/fp16 CUDA tensors on an sm_90 GPU
and the reference path elsewhere (CPU, another GPU, float32: fp32 inside, the result in x's
dtype, FallbackWarning once). Under torch.compile this file is all dynamo traces: plain Python
and torch.ops calls (no caches, locks or device queries), so a model compiles into one graph.
In eager mode, where torch's dispatcher would add nothing to the inference op (`_direct`: no
compile, jit tracing, torch-function or dispatch mode, functorch transform; plain tensors and
parameters), the op's implementation is called directly (the dispatcher costs ~5 us per call).
Launch options other than the defaults (config, passes, tma, persistent, row_blocks) take the
explicit launch path (prepare_*), in eager only (a graph break under torch.compile).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from . import inference  # (defines the inference ops)
from .common import as_lists, cat_biases, check_kn, check_postnorm, check_prenorm, plain_eager
from .postnorm_linear import (DEFAULT_POSTNORM_PASSES, prepare_linear_layernorm,
                              prepare_linear_rmsnorm)
from .prenorm_linear import (DEFAULT_PASSES, GemmConfig, _check_offset, prepare_layernorm_linear,
                             prepare_rmsnorm_linear)
from .training import postnorm_linear_train, postnorm_mlp_train, prenorm_linear_train

__all__ = ["rmsnorm_linear", "layernorm_linear", "rmsnorm_linear_split",
           "layernorm_linear_split", "linear_rmsnorm", "linear_layernorm", "postnorm_mlp"]

_PRE = torch.ops.normfuse.prenorm_linear.default
_SPLIT = torch.ops.normfuse.prenorm_linear_split.default
_POST = torch.ops.normfuse.postnorm_linear.default


_PLAIN = frozenset((Tensor, torch.nn.Parameter, type(None)))


def _direct(x, *tensors) -> bool:
    """Whether an eager call may run the inference op's implementation itself rather than
    through torch's dispatcher (the op call costs ~5 us of host time): `common.plain_eager`
    over the tensors. For such a call the dispatcher would run exactly that implementation: the
    op has one for CPU and CUDA alike and no autograd or autocast kernel."""
    return plain_eager((x, *tensors))


def _check_eps(op: str, eps) -> None:
    """eps must be a real number >= 0 (a float, an int, a NumPy scalar; not a tensor, a string,
    None or a bool)."""
    import numbers
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"{op}: eps must be a real number, got {type(eps).__name__}")
    if not eps >= 0:
        raise ValueError(f"{op}: eps must be >= 0, got {eps}")


def _wants_grad(*tensors) -> bool:
    if not torch.is_grad_enabled():
        return False
    for t in tensors:  # (a loop: a generator costs ~1 us per call)
        if isinstance(t, Tensor) and t.requires_grad:
            return True
    return False


_TRAIN_DEFAULTS = {"folded": False, "config": None, "passes": DEFAULT_PASSES, "tma": None,
                   "persistent": None, "row_blocks": None}


def _training_options(op: str, **given) -> None:
    """Training runs the default kernels: a non-default launch option is refused, by name."""
    for name, value in given.items():
        default = _TRAIN_DEFAULTS[name]
        if name == "passes" and isinstance(value, list):
            value = tuple(value)  # (a list spells the same pipeline, as in inference)
        if name == "passes" and value in (DEFAULT_PASSES, DEFAULT_POSTNORM_PASSES,
                                          tuple(DEFAULT_POSTNORM_PASSES)):
            continue
        if value is not default and value != default:
            raise NotImplementedError(
                f"{op}: {name}={value!r} is not supported under autograd (training uses the "
                f"default kernels); leave {name} at its default or call under torch.no_grad()")


def _cat_for_autograd(ws, bs):
    """Siblings joined for the training path, differentiably (each weight gets its gradient)."""
    w = ws[0] if len(ws) == 1 else torch.cat(ws)
    return w, (bs[0] if len(bs) == 1 else cat_biases(ws, bs))


def _lists(op: str, weight, bias) -> tuple[list, list]:
    """weight and bias as lists of the same length (bias entries may be None)."""
    if isinstance(weight, Tensor) and (bias is None or isinstance(bias, Tensor)):
        return [weight], [bias]
    ws, bs = as_lists(op, weight, bias)
    return list(ws), list(bs) if bs is not None else [None] * len(ws)


def _kn_lists(op: str, weight, bias) -> tuple[list, list]:
    """`_lists` for weight_kn=True: the [K, N] tensors as given (2-D, checked here; a list is
    checked against its biases as its [N, K] transposes would be)."""
    single = isinstance(weight, Tensor)
    if not single and not isinstance(weight, (list, tuple)):
        return _lists(op, weight, bias)  # raises, naming what is wrong
    for w in [weight] if single else weight:
        check_kn(op, w)
    if single and (bias is None or isinstance(bias, Tensor)):
        return [weight], [bias]
    _, bs = _lists(op, weight.t() if single else [w.t() for w in weight], bias)
    return [weight] if single else list(weight), bs


def _nk(weight, ws: list):
    """(weight, ws) as [N, K] views of the [K, N] tensors given with weight_kn=True, for the
    paths that read them so (training, explicit launch options)."""
    ws = [w.t() for w in ws]
    return (ws[0] if isinstance(weight, Tensor) else ws), ws


def _tensors(op: str, **named) -> None:
    for name, t in named.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")


def _launch_options(passes, default_passes, *others) -> bool:
    """Whether any launch option differs from its default (then the explicit launch path)."""
    for o in others:
        if o is not None:
            return True
    if passes is default_passes:
        return False
    if isinstance(passes, str) or isinstance(default_passes, str):
        return passes != default_passes
    return passes is None or tuple(passes) != tuple(default_passes)


# ---------------------------------------------------------------------------------------------
# Pre-norm: y = norm(x) (offset + g) [+ beta] @ W^T + bias
# ---------------------------------------------------------------------------------------------

def rmsnorm_linear(x, norm_weight, weight, eps=1e-6, bias=None, *, offset=0.0, folded=False,
                   fold=True, config: GemmConfig | None = None, passes=DEFAULT_PASSES,
                   tma: bool | None = None, persistent: bool | None = None,
                   row_blocks: bool | None = None, weight_kn: bool = False) -> Tensor:
    """y = rmsnorm(x, offset + norm_weight, eps) @ weight^T + bias, in one kernel.

    x: [..., K]; norm_weight: [K]; weight: [N, K] (any strides, e.g. GPT-2 Conv1D's
    `weight.t()`) or a list of siblings [N_i, K] reading the same norm (q/k/v, gate/up); bias:
    [N], or with a weight list None or a list of [N_i] tensors / None. Returns [..., N] (for a
    list [..., sum N_i]: the outputs side by side in list order) in x's dtype.
    `offset`: the norm's scale is offset + norm_weight (Gemma's (1 + w): offset=1.0).
    `folded=True`: `weight` already holds W diag(offset + g) (`normfuse.ops.fold_norm_weight`),
    the kernel skips g and `norm_weight` may be None (it is ignored otherwise). `fold=True`
    (default) folds the scale into W on the fly (fp32, cached per weight version); `fold=False`
    applies it in the k-loop. `bias` is added in the kernel's epilogue. `config` overrides the
    tile table; `passes` the normfuse pipeline (`()` = the naive kernel, the oracle). `tma`:
    read A and W tiles with bulk tensor copies (None: when g stays in the loop, the measured
    faster choice; rows must be 16-byte aligned, else pointer loads are used). `persistent`:
    one program per SM walks the tiles (None: the config's choice). `row_blocks`: in the
    persistent form, walk row blocks (None: ROW_BLOCKS_DEFAULT). `weight_kn=True`: each weight
    is given as [K, N] (transformers' Conv1D layout), as if `weight.t()` were passed; cheaper per
    call (the launch-ready call is found by the tensor itself, not by a new view's geometry).
    Under autograd (grad mode on and a tensor requiring grad) the op trains (normfuse.ops.training;
    the launch options must keep their defaults). Where the fused kernels do not run (CPU, not
    sm_90, float32) the reference path computes the same function (FallbackWarning, once).
    """
    op = "rmsnorm_linear"
    if type(eps) is not float or not eps >= 0:
        _check_eps(op, eps)
    # weight_kn: the fast path passes the [K, N] tensors; the others transpose them (_nk)
    ws, bs = _kn_lists(op, weight, bias) if weight_kn else _lists(op, weight, bias)
    if not folded and norm_weight is None:
        raise ValueError(f"{op}: norm_weight is required unless folded=True")
    g = None if folded else norm_weight
    if type(x) not in _PLAIN or type(g) not in _PLAIN:
        _tensors(op, x=x, norm_weight=g)
    if offset:
        _check_offset(op, offset, g)
    if _wants_grad(x, g, *ws, *bs):
        _training_options(op, folded=folded, config=config, passes=passes, tma=tma,
                          persistent=persistent, row_blocks=row_blocks)
        if weight_kn:
            weight, ws = _nk(weight, ws)
        if not torch.compiler.is_compiling():
            check_prenorm(op, x, tuple(ws), tuple(bs), {"norm_weight": g}, fused=False)
        w, b = _cat_for_autograd(ws, bs)
        return prenorm_linear_train(op, x, g, None, w, eps, b, False, float(offset))
    if (config is not None or passes is not DEFAULT_PASSES or tma is not None
            or persistent is not None or row_blocks is not None) and \
            _launch_options(passes, DEFAULT_PASSES, config, tma, persistent, row_blocks):
        if inference.route(op, x):
            if weight_kn:
                weight, ws = _nk(weight, ws)
            return prepare_rmsnorm_linear(x, g, weight, eps, bias, offset=offset, folded=folded,
                                          fold=fold, config=config, passes=passes, tma=tma,
                                          persistent=persistent, row_blocks=row_blocks)()
    if _direct(x, g, *ws, *bs):
        return inference.prenorm_linear(x, g, None, ws, bs, float(eps), float(offset), False,
                                        bool(fold), bool(weight_kn))
    return _PRE(x, g, None, ws, bs, float(eps), float(offset), False, bool(fold), bool(weight_kn))


def layernorm_linear(x, norm_weight, norm_bias, weight, eps=1e-5, bias=None, *, offset=0.0,
                     fold=True, config: GemmConfig | None = None, passes=DEFAULT_PASSES,
                     tma: bool | None = None, persistent: bool | None = None,
                     weight_kn: bool = False) -> Tensor:
    """y = layer_norm(x, offset + norm_weight, norm_bias, eps) @ weight^T + bias, in one kernel.

    norm_weight / norm_bias: [K] or None (no affine scale / shift; `offset` needs
    norm_weight). Otherwise as `rmsnorm_linear` (weight lists, strided weights, training, the
    reference path, `weight_kn`); `fold=True` (default) folds the scale into W and norm_bias
    into the output bias (W norm_bias), `fold=False` keeps both in the k-loop.
    """
    op = "layernorm_linear"
    if type(eps) is not float or not eps >= 0:
        _check_eps(op, eps)
    # weight_kn: the fast path passes the [K, N] tensors; the others transpose them (_nk)
    ws, bs = _kn_lists(op, weight, bias) if weight_kn else _lists(op, weight, bias)
    if type(x) not in _PLAIN or type(norm_weight) not in _PLAIN or type(norm_bias) not in _PLAIN:
        _tensors(op, x=x, norm_weight=norm_weight, norm_bias=norm_bias)
    if offset:
        _check_offset(op, offset, norm_weight)
    if _wants_grad(x, norm_weight, norm_bias, *ws, *bs):
        _training_options(op, config=config, passes=passes, tma=tma, persistent=persistent)
        if weight_kn:
            weight, ws = _nk(weight, ws)
        if not torch.compiler.is_compiling():
            check_prenorm(op, x, tuple(ws), tuple(bs),
                          {"norm_weight": norm_weight, "norm_bias": norm_bias}, fused=False)
        w, b = _cat_for_autograd(ws, bs)
        return prenorm_linear_train(op, x, norm_weight, norm_bias, w, eps, b, True, float(offset))
    if (config is not None or passes is not DEFAULT_PASSES or tma is not None
            or persistent is not None) and \
            _launch_options(passes, DEFAULT_PASSES, config, tma, persistent):
        if inference.route(op, x):
            if weight_kn:
                weight, ws = _nk(weight, ws)
            return prepare_layernorm_linear(x, norm_weight, norm_bias, weight, eps, bias,
                                            offset=offset, fold=fold, config=config,
                                            passes=passes, tma=tma, persistent=persistent)()
    if _direct(x, norm_weight, norm_bias, *ws, *bs):
        return inference.prenorm_linear(x, norm_weight, norm_bias, ws, bs, float(eps),
                                        float(offset), True, bool(fold), bool(weight_kn))
    return _PRE(x, norm_weight, norm_bias, ws, bs, float(eps), float(offset), True, bool(fold),
                bool(weight_kn))


def _split_lists(op: str, weight, bias, weight_kn: bool) -> tuple[list, list]:
    if isinstance(weight, Tensor) or not isinstance(weight, (list, tuple)) or len(weight) < 2:
        got = (f"{len(weight)} weight(s)" if isinstance(weight, (list, tuple))
               else type(weight).__name__)
        raise TypeError(f"{op}: weight must be a list of 2 or more sibling weights (their outputs "
                        f"are returned separately), got {got}")
    return _kn_lists(op, weight, bias) if weight_kn else _lists(op, weight, bias)


def rmsnorm_linear_split(x, norm_weight, weight, eps=1e-6, bias=None, *, offset=0.0,
                         fold=True, weight_kn: bool = False) -> list:
    """[rmsnorm(x, offset + g, eps) @ W_i^T + b_i for each sibling weight W_i], each a separate
    contiguous [..., N_i] tensor, computed as ONE GEMM over the joined weights (what
    `rmsnorm_linear` with a weight list computes, without the column slices: for consumers that
    need their output contiguous, e.g. a RoPE or SwiGLU kernel that would copy a slice).

    weight: a list of 2 or more [N_i, K] tensors (or [K, N_i] with `weight_kn`); bias None or a
    list of [N_i] tensors / None. On Hopper the lowered kernel stores each output tile into the
    member holding its columns (`LoweredLaunch.split`); that needs every member but the last
    to be a multiple of the kernel's tile width (256, or 128 for small outputs) wide, else each
    member runs its own fused launch (a RuntimeWarning says why, once).
    Under autograd, the training op's joined output split into contiguous copies; elsewhere
    (CPU, not sm_90, float32) the reference path."""
    op = "rmsnorm_linear_split"
    if type(eps) is not float or not eps >= 0:
        _check_eps(op, eps)
    ws, bs = _split_lists(op, weight, bias, weight_kn)
    if norm_weight is None:
        raise ValueError(f"{op}: norm_weight is required")
    if type(x) not in _PLAIN or type(norm_weight) not in _PLAIN:
        _tensors(op, x=x, norm_weight=norm_weight)
    if offset:
        _check_offset(op, offset, norm_weight)
    if _wants_grad(x, norm_weight, *ws, *bs):
        y = rmsnorm_linear(x, norm_weight, ws, eps, bs, offset=offset, weight_kn=weight_kn)
        return [t.contiguous() for t in y.split([w.shape[1 if weight_kn else 0] for w in ws], -1)]
    if _direct(x, norm_weight, *ws, *bs):
        return inference.prenorm_linear_split(x, norm_weight, None, ws, bs, float(eps),
                                              float(offset), False, bool(fold), bool(weight_kn))
    return _SPLIT(x, norm_weight, None, ws, bs, float(eps), float(offset), False, bool(fold),
                  bool(weight_kn))


def layernorm_linear_split(x, norm_weight, norm_bias, weight, eps=1e-5, bias=None, *,
                           offset=0.0, fold=True, weight_kn: bool = False) -> list:
    """`rmsnorm_linear_split` for LayerNorm (norm_weight / norm_bias: [K] or None)."""
    op = "layernorm_linear_split"
    if type(eps) is not float or not eps >= 0:
        _check_eps(op, eps)
    ws, bs = _split_lists(op, weight, bias, weight_kn)
    if type(x) not in _PLAIN or type(norm_weight) not in _PLAIN or type(norm_bias) not in _PLAIN:
        _tensors(op, x=x, norm_weight=norm_weight, norm_bias=norm_bias)
    if offset:
        _check_offset(op, offset, norm_weight)
    if _wants_grad(x, norm_weight, norm_bias, *ws, *bs):
        y = layernorm_linear(x, norm_weight, norm_bias, ws, eps, bs, offset=offset,
                             weight_kn=weight_kn)
        return [t.contiguous() for t in y.split([w.shape[1 if weight_kn else 0] for w in ws], -1)]
    if _direct(x, norm_weight, norm_bias, *ws, *bs):
        return inference.prenorm_linear_split(x, norm_weight, norm_bias, ws, bs, float(eps),
                                              float(offset), True, bool(fold), bool(weight_kn))
    return _SPLIT(x, norm_weight, norm_bias, ws, bs, float(eps), float(offset), True, bool(fold),
                  bool(weight_kn))


# ---------------------------------------------------------------------------------------------
# Post-norm: z = norm(x W^T + bias + residual) (offset + g) [+ beta]
# ---------------------------------------------------------------------------------------------

def linear_rmsnorm(x, weight, norm_weight, eps=1e-6, bias=None, residual=None, *, offset=0.0,
                   config=None, passes=DEFAULT_POSTNORM_PASSES, tma: bool | None = None,
                   persistent: bool | None = None) -> Tensor:
    """z = rmsnorm(x @ weight^T + bias + residual, offset + norm_weight, eps), in one kernel.

    x: [..., K]; weight: [N, K] (any strides); norm_weight: [N]; bias: [N] or None; residual:
    [..., N] or None (added before the norm). Returns [..., N] in x's dtype. The kernel's form
    (single CTA, cluster, deferred) follows from N and the config (normfuse.ops.postnorm_linear);
    `passes=()` runs the naive kernel. `tma=True` reads the tiles with bulk tensor copies (when
    rows are 16-byte aligned), False pointer loads, None (default) bulk copies when K >= 1024.
    `persistent`: launch only as many programs (clusters) as run at once (None: the config's
    choice, for large M). `offset`: the norm's scale is offset + norm_weight (rounded to its
    dtype where the kernel reads it). Trains under autograd (normfuse.ops.training; the launch
    options must keep their defaults); the reference path elsewhere (as rmsnorm_linear).
    """
    return _postnorm("linear_rmsnorm", x, weight, {"norm_weight": norm_weight}, eps, bias,
                     residual, offset, dict(config=config, passes=passes, tma=tma,
                                            persistent=persistent))


def linear_layernorm(x, weight, norm_weight, norm_bias, eps=1e-5, bias=None, residual=None, *,
                     offset=0.0, config=None, passes=DEFAULT_POSTNORM_PASSES,
                     tma: bool | None = None, persistent: bool | None = None) -> Tensor:
    """z = layer_norm(x @ weight^T + bias + residual, [N], offset + norm_weight, norm_bias, eps),
    in one kernel. As `linear_rmsnorm`; the row's sum and sum of squares are exchanged in one
    step. norm_weight and norm_bias are required (ones / zeros for no affine parameters)."""
    if norm_weight is None or norm_bias is None:
        raise ValueError("linear_layernorm: norm_weight and norm_bias are required (pass ones / "
                         "zeros for a LayerNorm without affine parameters)")
    return _postnorm("linear_layernorm", x, weight,
                     {"norm_weight": norm_weight, "norm_bias": norm_bias}, eps, bias, residual,
                     offset, dict(config=config, passes=passes, tma=tma, persistent=persistent))


def _postnorm(op, x, weight, norm: dict, eps, bias, residual, offset, options: dict):
    if type(eps) is not float or not eps >= 0:
        _check_eps(op, eps)
    g, beta = norm["norm_weight"], norm.get("norm_bias")
    if g is None:
        raise ValueError(f"{op}: norm_weight is required")
    if (type(x) not in _PLAIN or type(bias) not in _PLAIN or type(residual) not in _PLAIN
            or type(g) not in _PLAIN or type(beta) not in _PLAIN):
        _tensors(op, x=x, bias=bias, residual=residual, **norm)
    if not isinstance(weight, Tensor):
        check_postnorm(op, x, weight, norm, bias, residual, fused=False)  # raises, naming it
    if offset:
        _check_offset(op, offset, g)
    is_ln = beta is not None
    if _wants_grad(x, weight, g, beta, bias, residual):
        _training_options(op, **options)
        if not torch.compiler.is_compiling():
            check_postnorm(op, x, weight, norm, bias, residual, fused=False)
        return postnorm_linear_train(op, x, weight, g, beta, eps, bias, residual, is_ln,
                                     float(offset))
    if (options["config"] is not None or options["passes"] is not DEFAULT_POSTNORM_PASSES
            or options["tma"] is not None or options["persistent"] is not None) and \
            _launch_options(options["passes"], DEFAULT_POSTNORM_PASSES, options["config"],
                            options["tma"], options["persistent"]):
        if inference.route(op, x):
            prepare = prepare_linear_layernorm if is_ln else prepare_linear_rmsnorm
            return prepare(x, weight, *norm.values(), eps, bias, residual, offset=offset,
                           **options)()
    if _direct(x, weight, g, beta, bias, residual):
        return inference.postnorm_linear(x, weight, g, beta, bias, residual, float(eps),
                                         float(offset), is_ln)
    return _POST(x, weight, g, beta, bias, residual, float(eps), float(offset), is_ln)


# ---------------------------------------------------------------------------------------------
# The block: out = norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x)
# ---------------------------------------------------------------------------------------------

def postnorm_mlp(x: Tensor, w1: Tensor, g1: Tensor, beta1: Optional[Tensor], b1: Optional[Tensor],
                 w2: Tensor, g2: Tensor, beta2: Optional[Tensor], b2: Optional[Tensor],
                 eps: float = 1e-6, *, layernorm: bool = False) -> Tensor:
    """out = norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x), norm = RMSNorm (LayerNorm when
    `layernorm`, then beta1/beta2 are required). x [..., D], w1 [H, D], w2 [D, H]. Forward: two
    fused post-norm kernels (the first applies the SiLU before its store); backward (training
    .POSTNORM_MLP_BWD_PLAN): composed by default (linear 2's dX GEMM on cuBLAS, then norm1's
    backward with SiLU'), or regrouped (norm1's backward fused into the epilogue of linear 2's
    dX GEMM); norm2's by the no-GEMM norm-backward kernel. The reference path where the fused
    kernels do not run (as rmsnorm_linear)."""
    op = "postnorm_mlp"
    if not torch.compiler.is_compiling():
        _check_mlp(op, x, w1, g1, beta1, b1, w2, g2, beta2, b2, layernorm)
    return postnorm_mlp_train(x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, layernorm)


def _check_mlp(op, x, w1, g1, beta1, b1, w2, g2, beta2, b2, layernorm):
    named = dict(x=x, w1=w1, g1=g1, beta1=beta1, b1=b1, w2=w2, g2=g2, beta2=beta2, b2=b2)
    for n, t in named.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}: {n} must be a torch.Tensor, got {type(t).__name__}")
    for n in ("x", "w1", "g1", "w2", "g2"):
        if named[n] is None:
            raise TypeError(f"{op}: {n} is required")
    if layernorm and (beta1 is None or beta2 is None):
        raise ValueError(f"{op}: layernorm=True needs beta1 and beta2")
    if not layernorm and (beta1 is not None or beta2 is not None):
        raise ValueError(f"{op}: beta1/beta2 are LayerNorm's; pass layernorm=True")
    D = x.shape[-1]
    if w1.dim() != 2 or w1.shape[1] != D:
        raise ValueError(f"{op}: w1 must be [hidden, {D}], got w1 of shape {tuple(w1.shape)}")
    H = w1.shape[0]
    if w2.dim() != 2 or tuple(w2.shape) != (D, H):
        raise ValueError(f"{op}: w2 must be [{D}, {H}] (the residual needs out_features = "
                         f"x.shape[-1]), got w2 of shape {tuple(w2.shape)}")
    for n, t, L in (("g1", g1, H), ("beta1", beta1, H), ("b1", b1, H), ("g2", g2, D),
                    ("beta2", beta2, D), ("b2", b2, D)):
        if t is not None and tuple(t.shape) != (L,):
            raise ValueError(f"{op}: {n} must have shape ({L},), got {tuple(t.shape)}")
    given = {n: t for n, t in named.items() if t is not None}
    if len({t.device for t in given.values()}) != 1:
        raise ValueError(f"{op}: all tensors must be on one device, got "
                         + ", ".join(f"{n} on {t.device}" for n, t in given.items()))
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: x must be a floating-point tensor, got {x.dtype}")
    bad = {n: t.dtype for n, t in given.items() if t.dtype != x.dtype}
    if bad:
        raise TypeError(f"{op}: every tensor must have x's dtype {x.dtype}; got "
                        + ", ".join(f"{n} {d}" for n, d in bad.items()))
