"""The standalone norm: y = norm(x) (offset + g) [+ beta] over x's last dimension, forward and
backward, as torch.library ops with registered autograd (issue 21 item 3).

Layers (Quack style): kernels/norm.py (`norm_fwd`: rows per program; `norm_bwd`: persistent,
the dg / dbeta partials in registers) -> launchers (`normfuse.jit(..., passes=())`: no pass
applies, Triton's own code) with the config table `norm_config` -> ops `normfuse::norm_fwd` /
`normfuse::norm_bwd` (one implementation for CPU and CUDA tensors: the kernels on sm_90 for
bf16 / fp16 / fp32 rows of N <= MAX_N, `fallback.norm_forward` / `norm_backward` elsewhere;
fake implementations, so torch.compile sees opaque ops without a graph break) ->
`register_autograd` (eager calls: the same functions from an autograd.Function,
common.AutogradOp) -> `rms_norm` / `layer_norm` (checks in the user's terms, [..., N] reshaped
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

import contextlib
import functools
import math
from typing import Optional

import torch
from torch import Tensor

from . import fallback
from .common import (EagerOp, autograd_op, define_op, fused_unavailable, no_double_backward,
                     plain_eager, register_clear, sm_count, unit_stride, warn_fallback)
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
# The backward's forms (what `_kernel_backward` launches): "plain" (the standalone norm op:
# statistics loaded), "post" (statistics computed from the rows: the post-norm ops and the
# block's norm2), "pre" (and n written: the pre-norm ops), "act" (SiLU' of n first: the
# block's norm1). Where their tiles differ from the table above (`bench/norm_bwd_tiles.py`,
# H200, session 24: M = 262144 and 8192, BLOCK_N 512-2048; `bench/results/2026-12-04/session24/`):
# LayerNorm's forms hold two more row sums and the dbeta partial; at 8 warps its pre-norm form
# took 158 registers a thread, one CTA an SM, and ran 0.78-0.83x the time at 4 warps with the
# same rows (220-254 registers, no spills, two CTAs); its other forms 0.85-1.0x. The ACT forms:
# half the rows at 4 warps, 0.66-0.98x. RMSNorm's other forms keep the table (within 5 % of the
# best tile measured, and faster than the alternatives at the models' M = 8192).
BWD_FORMS = ("plain", "post", "pre", "act")
BWD_FORM_TILES_BLOCK_N = (512, 2048)  # the BLOCK_N range the form rules were measured on
# Overrides of `norm_config` by N (the benchmark's sweep sets them; users may too): a dict of
# any of ROWS, num_warps, STAGES (forward and every backward form alike).
NORM_CONFIG_CHOICE: dict[int, dict] = {}


def norm_config(N: int, form: Optional[str] = None, is_ln: bool = False) -> dict:
    """The kernels' tiles for rows of length N (N <= MAX_N): BLOCK_N (the row padded to a power
    of 2), ROWS (rows per tile), num_warps, and the backward's STAGES and ACC_GLOBAL (see the
    table above). `form` (one of BWD_FORMS; None: the forward) and `is_ln`: the backward's tiles
    for that form (BWD_FORMS's rules). NORM_CONFIG_CHOICE[N] overrides."""
    if form is not None and form not in BWD_FORMS:
        raise ValueError(f"norm_config: form {form!r}; expected None (the forward) or one of "
                         f"{', '.join(BWD_FORMS)}")
    bn = 1 << (max(N, 1) - 1).bit_length()
    acc_global = bn >= ACC_GLOBAL_FROM
    cfg = dict(BLOCK_N=bn, ROWS=max(1, TILE_ELEMS // bn), num_warps=8 if bn <= 4096 else 16,
               STAGES=1 if acc_global else BWD_STAGES.get(bn, 3), ACC_GLOBAL=acc_global)
    lo, hi = BWD_FORM_TILES_BLOCK_N
    if form is not None and lo <= bn <= hi:
        if form == "act":
            cfg.update(ROWS=max(1, cfg["ROWS"] // 2), num_warps=4)
        elif is_ln:
            cfg.update(num_warps=4)
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
    """Triton's own JIT function of kernel `name` (no pass applies to these kernels)."""
    from ..kernels import norm
    return getattr(norm, name)


# Launch-ready calls by geometry (issue 19's host budget: eager models call the norm a dozen
# times a forward). Key: the device, dtypes, M, N, row strides, 16-byte alignment of every
# pointer, the scalars and the flags: everything Triton specializes the kernel on and every
# argument after the tensors, so that a hit launches the same compiled kernel with the same
# trailing arguments through its C launch function (`normfuse.direct_launch`). A call is made
# only where Triton's launcher resolves (not for the tests' stand-in launchers).
_CALLS: dict = {}
_CALLS_SIZE = 1024


register_clear(_CALLS.clear)


def _direct_call(launched, grid: tuple, rest: tuple):
    """runner(*tensors) for the compiled kernel `launched` (what `kernel[grid](...)` returned):
    Triton's C launch with `rest` (the runtime scalars, then the constexprs) after the tensors;
    None where the launcher does not resolve."""
    from ..direct_launch import resolve
    if launched is None or not hasattr(launched, "_init_handles"):
        return None
    direct = resolve(launched, tuple(grid) + (1,) * (3 - len(grid)))
    if direct is None:
        return None
    return lambda *tensors: direct(*tensors, *rest)


def _store_call(key, call) -> None:
    if call is None:
        return
    if len(_CALLS) >= _CALLS_SIZE:
        _CALLS.clear()
    _CALLS[key] = call


def _launch_ready(key, tensors: tuple, name: str, plan, device=None) -> None:
    """Launch kernel `name` on `tensors`: by the launch-ready call kept under `key` in `_CALLS`
    (the same compiled kernel, grid and trailing arguments), else through Triton's launcher,
    keeping the call. `plan()` -> (grid, runtime scalars after the tensors, constexprs, launch
    options such as num_warps), asked only then; `device`: the CUDA device to launch on there."""
    call = _CALLS.get(key)
    if call is not None:
        call(*tensors)
        return
    grid, rest, consts, options = plan()
    with torch.cuda.device(device) if device is not None else contextlib.nullcontext():
        launched = _launcher(name)[grid](*tensors, *rest, **consts, **options)
    _store_call(key, _direct_call(launched, grid, tuple(rest) + tuple(consts.values())))


def _align(*ts) -> int:
    a = 0
    for t in ts:
        a |= t.data_ptr() & 15
    return a


def _fwd_key(x2, gg, bb, eps, offset, is_ln, no_g, no_b) -> tuple:
    """The forward's launch-ready key (`_CALLS`): x [M, N] and the two vectors the kernel reads
    (x itself where absent), the scalars and flags. The outputs are fresh allocations (512-byte
    aligned on CUDA), so their addresses are not part of it."""
    M, N = x2.shape
    choice = NORM_CONFIG_CHOICE.get(N)  # (an override of the tiles: part of what was planned)
    return ("fwd", x2.device, x2.dtype, gg.dtype, bb.dtype, M, N, x2.stride(0), eps, offset,
            is_ln, no_g, no_b, _align(x2, gg, bb), gg.shape, gg.device, bb.shape, bb.device,
            tuple(sorted(choice.items())) if choice else None)


# (device, dtypes, constexprs) -> the backward's CTAs per SM (all of its grid resident at once)
_PER_SM: dict = {}


def _unit_rows(t: Tensor) -> Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


def _kernel_forward(x2, g, beta, eps, offset, is_ln):
    M, N = x2.shape
    y = x2.new_empty(M, N)
    rstd = x2.new_empty(M, dtype=torch.float32)
    mean = x2.new_empty(M if is_ln else 0, dtype=torch.float32)
    if not M:
        return y, rstd, mean
    gg = g if g is not None else x2
    bb = beta if beta is not None else x2
    tensors = (x2, gg, bb, y, rstd, mean if is_ln else rstd)

    def plan():
        cfg = norm_config(N)  # (in the key too: NORM_CONFIG_CHOICE may change it)
        consts = dict(N=N, BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"], IS_LN=is_ln,
                      HAS_G=g is not None, HAS_B=beta is not None)
        return ((-(-M // cfg["ROWS"]),), (M, x2.stride(0), y.stride(0), float(eps), float(offset)),
                consts, dict(num_warps=cfg["num_warps"], num_stages=1))
    _launch_ready(_fwd_key(x2, gg, bb, eps, offset, is_ln, g is None, beta is None), tensors,
                  "norm_fwd", plan)
    return y, rstd, mean


def _kernel_backward(dy, x2, g, rstd, mean, offset, is_ln, want_dg, want_db, xn_out=None,
                     beta=None, eps=None, act: int = 0, dg_dtype=torch.float32,
                     db_dtype=torch.float32):
    """(dx, dg or None, dbeta or None) of the norm over x2's rows through the persistent
    `norm_bwd` kernel, then `norm_bwd_finish` (its [P, N] partials summed in fp32, stored in
    `dg_dtype` / `db_dtype`: one launch for both). `xn_out` ([M, N], unit column stride): the
    kernel also writes the norm's output n = xhat (offset + g) [+ beta] there (the pre-norm op's
    backward: dW = dY^T n); `beta` is read only for that. `eps` given: the kernel computes the
    rows' statistics itself from x (its STATS form; `rstd` and `mean` are not read and may be
    empty). `act` = 1: dy is the gradient of SiLU(n), n the norm's output (`beta` read for n
    too): the kernel's ACT form."""
    stats = eps is not None
    if stats:
        rstd = mean = x2  # (pointers the STATS form never reads)
    M, N = x2.shape
    dx = torch.empty(M, N, device=x2.device, dtype=x2.dtype)
    if M == 0:
        return (dx, torch.zeros(N, device=x2.device, dtype=dg_dtype) if want_dg else None,
                torch.zeros(N, device=x2.device, dtype=db_dtype) if want_db else None)
    has_xn = xn_out is not None
    has_beta = (has_xn or act == 1) and beta is not None
    form = "act" if act == 1 else "pre" if has_xn else "post" if stats else "plain"
    cfg = norm_config(N, form, is_ln)
    meta = dict(N=N, BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"], IS_LN=is_ln, HAS_G=g is not None,
                HAS_DG=want_dg, HAS_DB=want_db, STAGES=cfg["STAGES"], ACC_GLOBAL=cfg["ACC_GLOBAL"],
                HAS_XN=has_xn, HAS_BETA=has_beta, STATS=stats, ACT=int(act),
                num_warps=cfg["num_warps"],
                num_stages=cfg["STAGES"])
    blocks = -(-M // cfg["ROWS"])
    head = (dy, x2, rstd, mean if is_ln else rstd, g if g is not None else x2, dx)
    outs = (xn_out if has_xn else dx, beta if has_beta else x2)
    tail = (M, dy.stride(0), x2.stride(0), dx.stride(0), xn_out.stride(0) if has_xn else 0,
            float(offset), float(eps) if stats else 0.0)
    key = (x2.device, x2.dtype, dy.dtype, None if g is None else g.dtype,
           None if not has_xn else xn_out.dtype, None if not has_beta else beta.dtype,
           tuple(meta.items()))
    per_sm = _PER_SM.get(key)
    if per_sm is None:
        compiled = _launcher("norm_bwd").warmup(*head, rstd, rstd, *outs, *tail, grid=(1,), **meta)
        per_sm = _PER_SM[key] = min(MAX_PROGRAMS_PER_SM, programs_per_sm(compiled))
    P = max(1, min(blocks, per_sm * sm_count(x2.device)))
    new = x2.new_zeros if cfg["ACC_GLOBAL"] else x2.new_empty  # ACC_GLOBAL accumulates into them
    dgp = new(P if want_dg else 0, N, dtype=torch.float32)
    dbp = new(P if want_db else 0, N, dtype=torch.float32)
    tensors = (*head, dgp if want_dg else rstd, dbp if want_db else rstd, *outs)
    ckey = ("bwd", key, M, P, dy.stride(0), x2.stride(0), tail[4], offset, tail[6],
            _align(*tensors))
    options = ("num_warps", "num_stages")
    _launch_ready(ckey, tensors, "norm_bwd", lambda: (
        (P,), tail, {k: v for k, v in meta.items() if k not in options},
        {k: meta[k] for k in options}))
    if not (want_dg or want_db):
        return dx, None, None
    dg = torch.empty(N, device=x2.device, dtype=dg_dtype) if want_dg else None
    db = torch.empty(N, device=x2.device, dtype=db_dtype) if want_db else None
    _finish(dgp, dbp, dg, db, P, N)
    return dx, dg, db


# The partials' sum (`norm_bwd_finish`): 32 columns a program, 256 partial rows a step, 8 warps,
# no pipelining (P <= 8 CTAs x 132 SMs = 1056 rows: at most 5 steps; N = 1024: 32 programs).
# ptxas (sm_90): no spills for N 48-16384, P 1-1056, bf16 / fp16 / fp32 outputs; 128 rows at
# 4 warps spilled 8 bytes a thread with two 16-bit outputs.
FINISH_TILE = dict(BLOCK_P=256, BLOCK_N=32, num_warps=8)


def _finish(dgp, dbp, dg, db, P: int, N: int) -> None:
    """dg / db = the column sums of the partials dgp / dbp [P, N] fp32 (either may be absent:
    None), one `norm_bwd_finish` launch (launch-ready per geometry in `_CALLS`)."""
    tensors = (dgp if dg is not None else dbp, dbp if db is not None else dgp,
               dg if dg is not None else db, db if db is not None else dg)
    key = ("finish", dgp.device, None if dg is None else dg.dtype,
           None if db is None else db.dtype, P, N, _align(*tensors))
    t = FINISH_TILE
    _launch_ready(key, tensors, "norm_bwd_finish", lambda: (
        (-(-N // t["BLOCK_N"]),), (P,),
        dict(N=N, BLOCK_P=t["BLOCK_P"], BLOCK_N=t["BLOCK_N"], HAS_DG=dg is not None,
             HAS_DB=db is not None), dict(num_warps=t["num_warps"], num_stages=1)))


# The fold kernel's tile (kernels/norm.py `scale_columns`): 16 x 256 elements a program,
# 4 warps (8 bf16 elements a thread per row: 16-byte accesses).
FOLD_TILE = dict(BLOCK_R=16, BLOCK_K=256, num_warps=4)


def fold_columns(w: Tensor, g: Tensor, offset: float) -> Tensor:
    """W diag(offset + g) by one `scale_columns` launch (CUDA, sm_90; w [R, K] of 16 bits with
    unit stride along K, g [K] unit-stride): the pre-norm ops' fold, `prenorm_linear.fold_now`.
    Its launch-ready call is kept per geometry in `_CALLS` (a few us of host per step)."""
    R, K = w.shape
    out = torch.empty((R, K), dtype=w.dtype, device=w.device)
    if not (R and K):
        return out
    tensors = (w, g, out)
    key = ("fold", w.device, w.dtype, g.dtype, R, K, w.stride(0), offset, _align(*tensors),
           tuple(FOLD_TILE.items()))
    t = FOLD_TILE
    _launch_ready(key, tensors, "scale_columns", lambda: (
        (-(-R // t["BLOCK_R"]), -(-K // t["BLOCK_K"])), (R, w.stride(0), out.stride(0), offset),
        dict(K=K, BLOCK_R=t["BLOCK_R"], BLOCK_K=t["BLOCK_K"]), dict(num_warps=t["num_warps"])),
        device=w.device)
    return out


# The LayerNorm fold kernel's tile (`scale_columns_dot`): 8 whole rows a program, K in steps of
# 256 columns, 4 warps (R = 512 rows: 64 programs).
FOLD_DOT_TILE = dict(BLOCK_R=8, BLOCK_K=256, num_warps=4)


def fold_columns_dot(w: Tensor, g: Optional[Tensor], beta: Tensor, bias: Optional[Tensor],
                     offset: float) -> tuple[Optional[Tensor], Tensor, Tensor]:
    """(W diag(offset + g) or None without g, W beta [+ bias] fp32, the row sums of the folded
    W as rounded (of W without g) fp32) by one `scale_columns_dot` launch (CUDA, sm_90; w
    [R, K] of 16 bits with unit stride along K, g / beta [K] and bias [R] unit-stride):
    LayerNorm's fold (`prenorm_linear.fold_norm`). Its launch-ready call is kept per geometry
    in `_CALLS`."""
    R, K = w.shape
    out = torch.empty((R, K), dtype=w.dtype, device=w.device) if g is not None else None
    wb = torch.empty(R, dtype=torch.float32, device=w.device)
    cs = torch.empty(R, dtype=torch.float32, device=w.device)
    if not R:
        return out, wb, cs
    if not K:
        wb.copy_(bias.float() if bias is not None else torch.zeros_like(wb))
        cs.zero_()
        return out, wb, cs
    tensors = (w, g if g is not None else beta, beta, bias if bias is not None else wb,
               out if out is not None else w, wb, cs)
    key = ("fold-dot", w.device, w.dtype, None if g is None else g.dtype, beta.dtype,
           None if bias is None else bias.dtype, R, K, w.stride(0), offset, _align(*tensors),
           tuple(FOLD_DOT_TILE.items()))
    t = FOLD_DOT_TILE
    _launch_ready(key, tensors, "scale_columns_dot", lambda: (
        (-(-R // t["BLOCK_R"]),), (R, w.stride(0), out.stride(0) if out is not None else 0, offset),
        dict(K=K, BLOCK_R=t["BLOCK_R"], BLOCK_K=t["BLOCK_K"], HAS_G=g is not None,
             HAS_BIAS=bias is not None), dict(num_warps=t["num_warps"])), device=w.device)
    return out, wb, cs


# ---------------------------------------------------------------------------------------------
# normfuse::norm_fwd / normfuse::norm_bwd
# ---------------------------------------------------------------------------------------------

_LIB = torch.library.Library("normfuse", "FRAGMENT")


def _define(schema: str, impl, fake) -> None:
    define_op(_LIB, schema, impl, fake)


def _op_name(is_ln: bool) -> str:
    return "layer_norm" if is_ln else "rms_norm"


def _fwd_impl(x, weight, bias, eps, offset, is_ln):
    if not _route(_op_name(is_ln), x):
        return fallback.norm_forward(x, weight, bias, eps, offset, is_ln)
    with torch.no_grad():
        return _kernel_forward(_unit_rows(x), unit_stride(weight), unit_stride(bias), eps, offset,
                               is_ln)


def _fwd_fake(x, weight, bias, eps, offset, is_ln):
    M = x.shape[0]
    f = fallback.compute_dtype(x.dtype)
    return (x.new_empty(x.shape), x.new_empty(M, dtype=f), x.new_empty(M if is_ln else 0, dtype=f))


def _bwd_impl(dy, x, weight, rstd, mean, offset, is_ln, want_dg, want_db):
    # (db in the compute dtype: the autograd formula casts it once, to the bias's own dtype; an
    # output not wanted is empty, in the dtype the fake implementation gives it; the kernels
    # store dg and db in these dtypes, so the casts below are no-ops there)
    wdt = x.dtype if weight is None else weight.dtype
    cdt = fallback.compute_dtype(x.dtype)
    if not _route(_op_name(is_ln), x):
        dx, dg, db = fallback.norm_backward(dy, x, weight, rstd, mean, offset, is_ln, want_dg,
                                            want_db)
    else:
        with torch.no_grad():
            dx, dg, db = _kernel_backward(_unit_rows(dy), _unit_rows(x), unit_stride(weight), rstd,
                                          mean, offset, is_ln, want_dg, want_db, dg_dtype=wdt,
                                          db_dtype=cdt)
    return (dx, dg.to(wdt) if want_dg else x.new_empty(0, dtype=wdt),
            db.to(cdt) if want_db else x.new_empty(0, dtype=cdt))


def _bwd_fake(dy, x, weight, rstd, mean, offset, is_ln, want_dg, want_db):
    N = x.shape[1]
    wdt = x.dtype if weight is None else weight.dtype
    return (x.new_empty(x.shape), x.new_empty(N if want_dg else 0, dtype=wdt),
            x.new_empty(N if want_db else 0, dtype=fallback.compute_dtype(x.dtype)))


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
    no_double_backward(_op_name(ctx.is_ln))
    x, weight, rstd, mean = ctx.saved_tensors
    need = ctx.needs_input_grad
    want_dg = weight is not None and need[1]
    want_db = ctx.has_bias and need[2]
    dx, dg, db = _BWD(dy.contiguous(), x, weight, rstd, mean, ctx.offset, ctx.is_ln, want_dg,
                      want_db)
    if want_db and db.dtype != ctx.bias_dtype:
        db = db.to(ctx.bias_dtype)
    return (dx if need[0] else None, dg if want_dg else None, db if want_db else None, None, None,
            None)


# (the eager fast path: common.AutogradOp / EagerOp; the standalone norm of an eager training
# step is called a dozen times a forward)
_FWD = autograd_op(_LIB, "normfuse::norm_fwd", _fwd_impl, _backward, _setup)
_BWD = EagerOp(_bwd, _bwd_impl)


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


_C = torch._C


def _wants_grad(x, weight, bias) -> bool:
    return _C.is_grad_enabled() and (x.requires_grad or (weight is not None and weight.requires_grad)
                                     or (bias is not None and bias.requires_grad))


def _eager_no_grad(x, weight, bias) -> bool:
    """Whether the call may run the forward's implementation itself, not through the
    dispatcher (~10-20 us of host time on the H200 machine): no autograd needed and
    `common.plain_eager`: the dispatcher would run that implementation then."""
    return not _wants_grad(x, weight, bias) and plain_eager((x, weight, bias))


def _apply(x: Tensor, weight, bias, eps, offset, is_ln) -> Tensor:
    x2 = x if x.dim() == 2 else (x.view(-1, x.shape[-1]) if x.is_contiguous()
                                 else x.reshape(-1, x.shape[-1]))
    # (eager: the implementation, under autograd from an autograd.Function; else the op)
    y = _FWD(x2, weight, bias, float(eps), float(offset), is_ln)[0]
    return y if x2 is x else y.view(x.shape)


def _ready(x, weight, bias, eps, offset, is_ln):
    """The output of a call whose launch is ready (checked and launched before with arguments
    of this geometry: `_CALLS`), or None. Eager, no autograd (`_eager_no_grad`): the inference
    path of a model's norms, a dozen calls a forward."""
    if type(x) is not Tensor and type(x) is not torch.nn.Parameter:
        return None
    if x.dim() == 0 or not _eager_no_grad(x, weight, bias):
        return None
    x2 = x if x.dim() == 2 else x.view(-1, x.shape[-1]) if x.is_contiguous() else None
    if x2 is None or x2.stride(1) != 1:
        return None
    gg = weight if weight is not None else x2
    bb = bias if bias is not None else x2
    if (weight is not None and weight.stride(0) != 1) or (bias is not None and bias.stride(0) != 1):
        return None  # (strided vectors are copied on the way: unit_stride in _fwd_impl)
    M, N = x2.shape
    key = _fwd_key(x2, gg, bb, eps, offset, is_ln, weight is None, bias is None)
    call = _CALLS.get(key)
    if call is None:
        return None
    y = x2.new_empty(M, N)
    rstd = x2.new_empty(M, dtype=torch.float32)
    call(x2, gg, bb, y, rstd, x2.new_empty(M, dtype=torch.float32) if is_ln else rstd)
    return y if x2 is x else y.view(x.shape)


def rms_norm(x: Tensor, weight: Optional[Tensor] = None, eps: float = 1e-6, *,
             offset: float = 0.0) -> Tensor:
    """y = x * rsqrt(mean(x^2) + eps) * (offset + weight) over x's last dimension (x [..., N],
    weight [N] or None), in x's dtype, fp32 inside; differentiable in x and weight. Gemma's
    `(1 + w)` scale: offset=1.0. The Triton kernels run for bf16 / fp16 / fp32 CUDA tensors on
    an sm_90 GPU and N <= MAX_N; reference math elsewhere (FallbackWarning once)."""
    y = _ready(x, weight, None, eps, offset, False)
    if y is not None:
        return y
    _check("normfuse.ops.rms_norm", x, {"weight": weight}, eps, offset)
    return _apply(x, weight, None, eps, offset, False)


def layer_norm(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5, *, offset: float = 0.0) -> Tensor:
    """y = (x - mean) * rsqrt(var + eps) * (offset + weight) + bias over x's last dimension
    (biased variance, as torch's layer_norm; weight / bias [N] or None), in x's dtype, fp32
    inside; differentiable in x, weight and bias. Where it runs: as `rms_norm`."""
    y = _ready(x, weight, bias, eps, offset, True)
    if y is not None:
        return y
    _check("normfuse.ops.layer_norm", x, {"weight": weight, "bias": bias}, eps, offset)
    return _apply(x, weight, bias, eps, offset, True)
