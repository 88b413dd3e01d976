"""The standalone norm: y = norm(x) (offset + g) [+ beta] over x's last dimension, forward and
backward, as torch.library ops with registered autograd (issue 21 item 3).

Layers (Quack style): kernels/norm.py (`norm_fwd`: rows per program; `norm_bwd`: persistent,
the dg / dbeta partials in registers) -> launchers (`normfuse.jit(..., passes=())`: no pass
applies, Triton's own code) with the config table `norm_config` -> ops `normfuse::norm_fwd` /
`normfuse::norm_bwd` (one implementation for CPU and CUDA tensors: the kernels on sm_90 for
bf16 / fp16 / fp32 rows of N <= MAX_N, `fallback.norm_forward` / `norm_backward` elsewhere;
fake implementations, so torch.compile sees opaque ops without a graph break) ->
`register_autograd` -> `rms_norm` / `layer_norm` (checks in the user's terms, [..., N] reshaped
to rows).

What forward saves: x, the parameters, rstd [M] fp32 (LayerNorm: and mean [M]); nothing
normalized. Backward: dx in x's dtype, dg / dbeta in the parameters' dtypes (summed in fp32),
each computed only when autograd needs it.

Numerics: fp32 statistics and math whatever x's dtype (as the stock modules' fp32 upcast), one
rounding of y to x's dtype; offset + g is formed in fp32 (Gemma's `1 + w.float()`). The
persistent backward is bitwise repeatable: a fixed grid P (per device and config) and fixed
orders, then torch's sum of the [P, N] partials.
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import torch
from torch import Tensor

from . import fallback
from .common import fused_unavailable, sm_count, warn_fallback
from ..device import programs_per_sm

__all__ = ["rms_norm", "layer_norm", "norm_config", "norm_unavailable", "MAX_N", "KERNEL_DTYPES"]

# Rows longer than this run the reference math (on the GPU too): the kernels hold a whole row
# (next_power_of_2(N) fp32 values) in registers.
MAX_N = 16384
KERNEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

# The kernels' tiles, by BLOCK_N = next_power_of_2(N) (measured on AOT builds for sm_90, bf16,
# ptxas: no spills at any entry; about 7 registers per row element a thread holds in the
# backward, so about 16 elements per thread):
# - ROWS rows per tile, about TILE_ELEMS elements (8 rows at N = 512, 1 from N = 4096);
# - num_warps 8, 16 from BLOCK_N = 8192;
# - backward STAGES: its loop's loads of dy and x pipelined into shared memory (cp.async),
#   STAGES - 1 row blocks ahead: more bytes in flight per SM than registers allow (two CTAs of
#   about 120 registers a thread fit on an SM);
# - BLOCK_N = 16384: the backward accumulates its partials in global memory (ACC_GLOBAL; in
#   registers ptxas spills 164 B (RMSNorm) / 1156 B (LayerNorm) a thread), no pipelining.
TILE_ELEMS = 4096
BWD_STAGES = {8192: 2}  # BLOCK_N -> stages (default 3; 1 with ACC_GLOBAL)
ACC_GLOBAL_FROM = 16384
MAX_PROGRAMS_PER_SM = 8  # the backward's grid: resident CTAs per SM, at most this many
# Overrides of `norm_config` by N (the benchmark's sweep sets them; users may too): a dict of
# any of ROWS, num_warps, STAGES.
NORM_CONFIG_CHOICE: dict[int, dict] = {}


def norm_config(N: int) -> dict:
    """The kernels' tiles for rows of length N (N <= MAX_N): BLOCK_N (the row padded to a power
    of 2), ROWS (rows per tile), num_warps, and the backward's STAGES and ACC_GLOBAL (see the
    table above; NORM_CONFIG_CHOICE[N] overrides)."""
    bn = 1 << (max(N, 1) - 1).bit_length()
    acc_global = bn >= ACC_GLOBAL_FROM
    cfg = dict(BLOCK_N=bn, ROWS=max(1, TILE_ELEMS // bn), num_warps=8 if bn <= 4096 else 16,
               STAGES=1 if acc_global else BWD_STAGES.get(bn, 3), ACC_GLOBAL=acc_global)
    cfg.update(NORM_CONFIG_CHOICE.get(int(N), {}))
    return cfg


def norm_unavailable(x: Tensor) -> Optional[str]:
    """None when the kernels run for rows x [..., N]; else why not, in a sentence."""
    why = fused_unavailable(x.device)
    if why is None and x.dtype not in KERNEL_DTYPES:
        why = f"x is {x.dtype}; the norm kernels take bfloat16, float16 or float32"
    if why is None and x.shape[-1] > MAX_N:
        why = f"rows of {x.shape[-1]} elements; the norm kernels hold rows of at most {MAX_N}"
    return why


def _route(op: str, x: Tensor) -> bool:
    why = norm_unavailable(x)
    if why is None:
        return True
    warn_fallback(op, why)
    return False


@functools.lru_cache(maxsize=None)
def _launcher(name: str):
    import normfuse
    from ..kernels import norm
    return normfuse.jit(getattr(norm, name), passes=())


# (device, dtypes, constexprs) -> the backward's CTAs per SM (all of its grid resident at once)
_PER_SM: dict = {}


def _unit_rows(t: Tensor) -> Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


def _kernel_forward(x2, g, beta, eps, offset, is_ln):
    M, N = x2.shape
    y = torch.empty(M, N, device=x2.device, dtype=x2.dtype)
    rstd = torch.empty(M, device=x2.device, dtype=torch.float32)
    mean = torch.empty(M if is_ln else 0, device=x2.device, dtype=torch.float32)
    if M:
        cfg = norm_config(N)
        _launcher("norm_fwd")[(-(-M // cfg["ROWS"]),)](
            x2, g if g is not None else x2, beta if beta is not None else x2, y, rstd,
            mean if is_ln else rstd, M, x2.stride(0), y.stride(0), float(eps), float(offset),
            N=N, BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"], IS_LN=is_ln, HAS_G=g is not None,
            HAS_B=beta is not None, num_warps=cfg["num_warps"], num_stages=1)
    return y, rstd, mean


def _kernel_backward(dy, x2, g, rstd, mean, offset, is_ln, want_dg, want_db):
    M, N = x2.shape
    dx = torch.empty(M, N, device=x2.device, dtype=x2.dtype)
    if M == 0:
        z = torch.zeros(N, device=x2.device, dtype=torch.float32)
        return dx, (z if want_dg else None), (z.clone() if want_db else None)
    cfg = norm_config(N)
    meta = dict(N=N, BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"], IS_LN=is_ln, HAS_G=g is not None,
                HAS_DG=want_dg, HAS_DB=want_db, STAGES=cfg["STAGES"], ACC_GLOBAL=cfg["ACC_GLOBAL"],
                num_warps=cfg["num_warps"], num_stages=cfg["STAGES"])
    blocks = -(-M // cfg["ROWS"])
    head = (dy, x2, rstd, mean if is_ln else rstd, g if g is not None else x2, dx)
    tail = (M, dy.stride(0), x2.stride(0), dx.stride(0), float(offset))
    key = (x2.device, x2.dtype, dy.dtype, None if g is None else g.dtype, tuple(meta.items()))
    per_sm = _PER_SM.get(key)
    if per_sm is None:
        compiled = _launcher("norm_bwd").warmup(*head, rstd, rstd, *tail, **meta)
        per_sm = _PER_SM[key] = min(MAX_PROGRAMS_PER_SM, programs_per_sm(compiled))
    P = max(1, min(blocks, per_sm * sm_count(x2.device)))
    new = torch.zeros if cfg["ACC_GLOBAL"] else torch.empty  # ACC_GLOBAL accumulates into them
    dgp = new(P if want_dg else 0, N, device=x2.device, dtype=torch.float32)
    dbp = new(P if want_db else 0, N, device=x2.device, dtype=torch.float32)
    _launcher("norm_bwd")[(P,)](*head, dgp if want_dg else rstd, dbp if want_db else rstd,
                                *tail, **meta)
    return dx, (dgp.sum(0) if want_dg else None), (dbp.sum(0) if want_db else None)


# ---------------------------------------------------------------------------------------------
# normfuse::norm_fwd / normfuse::norm_bwd
# ---------------------------------------------------------------------------------------------

_LIB = torch.library.Library("normfuse", "FRAGMENT")


def _define(schema: str, impl, fake) -> None:
    name = schema.split("(", 1)[0]
    _LIB.define(schema)
    _LIB.impl(name, impl, "CPU")
    _LIB.impl(name, impl, "CUDA")
    torch.library.register_fake(f"normfuse::{name}", fake, lib=_LIB)


def _op_name(is_ln: bool) -> str:
    return "layer_norm" if is_ln else "rms_norm"


def _fwd_impl(x, weight, bias, eps, offset, is_ln):
    if not _route(_op_name(is_ln), x):
        return fallback.norm_forward(x, weight, bias, eps, offset, is_ln)
    with torch.no_grad():
        return _kernel_forward(_unit_rows(x), weight, bias, eps, offset, is_ln)


def _fwd_fake(x, weight, bias, eps, offset, is_ln):
    M = x.shape[0]
    f = fallback.compute_dtype(x.dtype)
    return (x.new_empty(x.shape), x.new_empty(M, dtype=f), x.new_empty(M if is_ln else 0, dtype=f))


def _bwd_impl(dy, x, weight, rstd, mean, offset, is_ln, want_dg, want_db):
    if not _route(_op_name(is_ln), x):
        dx, dg, db = fallback.norm_backward(dy, x, weight, rstd, mean, offset, is_ln, want_dg,
                                            want_db)
    else:
        with torch.no_grad():
            dx, dg, db = _kernel_backward(_unit_rows(dy), _unit_rows(x), weight, rstd, mean,
                                          offset, is_ln, want_dg, want_db)
    return (dx, dg.to(weight.dtype) if want_dg else x.new_empty(0),
            db.to(x.dtype if weight is None else weight.dtype) if want_db else x.new_empty(0))


def _bwd_fake(dy, x, weight, rstd, mean, offset, is_ln, want_dg, want_db):
    N = x.shape[1]
    wdt = x.dtype if weight is None else weight.dtype
    return (x.new_empty(x.shape), x.new_empty(N if want_dg else 0, dtype=wdt),
            x.new_empty(N if want_db else 0, dtype=wdt))


_define("norm_fwd(Tensor x, Tensor? weight, Tensor? bias, float eps, float offset, bool is_ln) "
        "-> (Tensor, Tensor, Tensor)", _fwd_impl, _fwd_fake)
_define("norm_bwd(Tensor dy, Tensor x, Tensor? weight, Tensor rstd, Tensor mean, float offset, "
        "bool is_ln, bool want_dg, bool want_db) -> (Tensor, Tensor, Tensor)", _bwd_impl, _bwd_fake)
_fwd = torch.ops.normfuse.norm_fwd.default
_bwd = torch.ops.normfuse.norm_bwd.default


def _setup(ctx, inputs, output):
    x, weight, bias, eps, offset, is_ln = inputs
    _, rstd, mean = output
    ctx.save_for_backward(x, weight, rstd, mean)
    ctx.offset, ctx.is_ln = offset, is_ln
    ctx.has_bias = bias is not None
    ctx.bias_dtype = None if bias is None else bias.dtype


def _backward(ctx, dy, _drstd, _dmean):
    x, weight, rstd, mean = ctx.saved_tensors
    need = ctx.needs_input_grad
    want_dg = weight is not None and need[1]
    want_db = ctx.has_bias and need[2]
    dx, dg, db = _bwd(dy.contiguous(), x, weight, rstd, mean, ctx.offset, ctx.is_ln, want_dg,
                      want_db)
    if want_db and db.dtype != ctx.bias_dtype:
        db = db.to(ctx.bias_dtype)
    return (dx if need[0] else None, dg if want_dg else None, db if want_db else None, None, None,
            None)


torch.library.register_autograd("normfuse::norm_fwd", _backward, setup_context=_setup, lib=_LIB)


# ---------------------------------------------------------------------------------------------
# The public functions
# ---------------------------------------------------------------------------------------------

def _check(op: str, x, named: dict, eps, offset) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1:
        raise ValueError(f"{op}: x must have at least 1 dimension [..., N], got a scalar")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: x must be a floating-point tensor, got {x.dtype}")
    N = x.shape[-1]
    if N == 0:
        raise ValueError(f"{op}: x's last dimension (the normalized one) must be positive, got x "
                         f"of shape {tuple(x.shape)}")
    for name, t in named.items():
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a torch.Tensor or None, got {type(t).__name__}")
        if t.dim() != 1 or t.shape[0] != N:
            raise ValueError(f"{op}: {name} must have shape ({N},) (x's last dimension), got "
                             f"{tuple(t.shape)}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{op}: {name} must be a floating-point tensor, got {t.dtype}")
        if t.device != x.device:
            raise ValueError(f"{op}: {name} is on {t.device}, x on {x.device}; they must be on "
                             f"one device")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (math.isfinite(eps)
                                                                          and eps >= 0):
        raise ValueError(f"{op}: eps must be a finite float >= 0, got {eps!r}")
    if isinstance(offset, bool) or not isinstance(offset, (int, float)) or not math.isfinite(offset):
        raise ValueError(f"{op}: offset must be a finite float, got {offset!r}")
    if offset != 0 and named.get("weight") is None:
        raise ValueError(f"{op}: offset={offset} needs a weight (the scale is offset + weight)")


def _apply(x: Tensor, weight, bias, eps, offset, is_ln) -> Tensor:
    x2 = x.reshape(-1, x.shape[-1])
    y, _, _ = _fwd(x2, weight, bias, float(eps), float(offset), is_ln)
    return y.view(x.shape)


def rms_norm(x: Tensor, weight: Optional[Tensor] = None, eps: float = 1e-6, *,
             offset: float = 0.0) -> Tensor:
    """y = x * rsqrt(mean(x^2) + eps) * (offset + weight) over x's last dimension (x [..., N],
    weight [N] or None), in x's dtype, fp32 inside; differentiable in x and weight. Gemma's
    `(1 + w)` scale: offset=1.0. The Triton kernels run for bf16 / fp16 / fp32 CUDA tensors on
    an sm_90 GPU and N <= MAX_N; reference math elsewhere (FallbackWarning once)."""
    _check("normfuse.ops.rms_norm", x, {"weight": weight}, eps, offset)
    return _apply(x, weight, None, eps, offset, False)


def layer_norm(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5, *, offset: float = 0.0) -> Tensor:
    """y = (x - mean) * rsqrt(var + eps) * (offset + weight) + bias over x's last dimension
    (biased variance, as torch's layer_norm; weight / bias [N] or None), in x's dtype, fp32
    inside; differentiable in x, weight and bias. Where it runs: as `rms_norm`."""
    _check("normfuse.ops.layer_norm", x, {"weight": weight, "bias": bias}, eps, offset)
    return _apply(x, weight, bias, eps, offset, True)
