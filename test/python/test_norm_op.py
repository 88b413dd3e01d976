"""The standalone norm op pair (normfuse.ops.rms_norm / layer_norm; issue 21 item 3): the
reference path against fp64 autograd, the Triton kernels at the ops' own configs run by
normfuse's TTIR interpreter through the op (the persistent backward's grid and partial sums
included), their AOT builds for sm_90 (no spills, the backward's loads pipelined), input errors,
the fake implementations under torch.compile; GPU (marked): fp64 comparison at model shapes,
bitwise repeatability."""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import normfuse  # noqa: E402
from normfuse.kernels import norm as norm_kernels  # noqa: E402
from normfuse.ops import norm as norm_ops  # noqa: E402
from normfuse.reference import rel_err  # noqa: E402
from normfuse.testing.fake_driver import same_arguments  # noqa: E402
from backward_common import _Interpreted  # noqa: E402  (the interpreted launcher)
from normfuse.testing.numerics import launch_signature  # noqa: E402


def _ref64(x, w, b, eps, offset, is_ln, dy):
    """fp64 autograd: y and the gradients of (y * dy).sum() w.r.t. x, w, b."""
    xs = x.detach().double().requires_grad_(True)
    ws = w.detach().double().requires_grad_(True) if w is not None else None
    bs = b.detach().double().requires_grad_(True) if b is not None else None
    h = xs - xs.mean(-1, keepdim=True) if is_ln else xs
    y = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)
    if ws is not None:
        y = y * (ws + offset)
    if bs is not None:
        y = y + bs
    y.backward(dy.double())
    return y.detach(), xs.grad, (ws.grad if ws is not None else None), (bs.grad if bs is not None
                                                                        else None)


def _eager_bf16(x, w, b, eps, offset, is_ln, dy):
    """What stock eager computes in x's dtype (torch's own norm, the scale applied after)."""
    xs = x.detach().clone().requires_grad_(True)
    ws = w.detach().clone().requires_grad_(True) if w is not None else None
    bs = b.detach().clone().requires_grad_(True) if b is not None else None
    N = x.shape[-1]
    n = F.layer_norm(xs, (N,), None, None, eps) if is_ln else F.rms_norm(xs, (N,), None, eps)
    y = n * (ws + offset) if ws is not None else n
    if bs is not None:
        y = y + bs
    y.backward(dy)
    return y.detach(), xs.grad, (ws.grad if ws is not None else None), (bs.grad if bs is not None
                                                                        else None)


def _case(shape, seed, dtype=torch.bfloat16, affine=True, bias=False, mean=2.0):
    gen = torch.Generator().manual_seed(seed)
    N = shape[-1]
    x = (torch.randn(*shape, generator=gen) + mean).to(dtype)  # |mean| > std: LN's centring
    w = (0.5 + torch.rand(N, generator=gen)).to(dtype) if affine else None
    b = torch.randn(N, generator=gen).to(dtype) if bias else None
    dy = torch.randn(*shape, generator=gen).to(dtype)
    return x, w, b, dy


def _run(fn, x, w, b, dy):
    xs = x.detach().clone().requires_grad_(True)
    ws = w.detach().clone().requires_grad_(True) if w is not None else None
    bs = b.detach().clone().requires_grad_(True) if b is not None else None
    y = fn(xs, ws, bs)
    y.backward(dy)
    return y.detach(), xs.grad, (ws.grad if ws is not None else None), (bs.grad if bs is not None
                                                                        else None)


def _op(is_ln, eps, offset):
    if is_ln:
        return lambda x, w, b: normfuse.ops.layer_norm(x, w, b, eps, offset=offset)
    return lambda x, w, b: normfuse.ops.rms_norm(x, w, eps, offset=offset)


def _assert_close(got, ref64, eager, what):
    """Each output within 1.5x (+ a floor) of stock eager's error in the same dtype, vs fp64."""
    for name, a, r, e in zip(("y", "dx", "dw", "db"), got, ref64, eager):
        if r is None:
            assert a is None, f"{what}: {name} should be None"
            continue
        assert a.dtype == e.dtype, f"{what}: {name} is {a.dtype}, eager gives {e.dtype}"
        err, err_eager = rel_err(a, r), rel_err(e, r)
        assert err <= 1.5 * err_eager + 2e-3, f"{what}: {name} {err:.2e} vs eager {err_eager:.2e}"


CASES = [  # (shape, is_ln, affine, bias, offset)
    ((3, 5, 40), False, True, False, 0.0),
    ((70, 300), True, True, True, 0.0),
    ((33, 96), False, True, False, 1.0),   # Gemma's (1 + w)
    ((17, 129), True, False, False, 0.0),  # no affine parameters
    ((2, 9, 64), True, True, False, 0.0),  # weight, no bias
]


def _ids(c):
    shape, is_ln, affine, bias, offset = c
    return (f"{'ln' if is_ln else 'rms'}-{'x'.join(map(str, shape))}"
            f"{'-noaffine' if not affine else ''}{'-bias' if bias else ''}"
            f"{'-offset' if offset else ''}")


# ---------------------------------------------------------------------------------------------
# The reference path (CPU)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_reference_path_matches_fp64(case):
    shape, is_ln, affine, bias, offset = case
    eps = 1e-5
    x, w, b, dy = _case(shape, seed=len(shape) + shape[-1], affine=affine, bias=bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", normfuse.ops.FallbackWarning)
        got = _run(_op(is_ln, eps, offset), x, w, b, dy)
    _assert_close(got, _ref64(x, w, b, eps, offset, is_ln, dy),
                  _eager_bf16(x, w, b, eps, offset, is_ln, dy), _ids(case))


def test_reference_path_fp32_is_tight():
    x, w, b, dy = _case((20, 72), seed=3, dtype=torch.float32, bias=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", normfuse.ops.FallbackWarning)
        got = _run(_op(True, 1e-5, 0.0), x, w, b, dy)
    ref = _ref64(x, w, b, 1e-5, 0.0, True, dy)
    for a, r in zip(got, ref):
        assert rel_err(a, r) < 1e-5


def test_only_needed_gradients():
    x, w, b, dy = _case((6, 32), seed=4, dtype=torch.float32, bias=True)
    xs = x.clone().requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", normfuse.ops.FallbackWarning)
        y = normfuse.ops.layer_norm(xs, w, b)  # parameters not requiring grad
        (gx,) = torch.autograd.grad(y, xs, dy)
        ws = w.clone().requires_grad_(True)
        y = normfuse.ops.rms_norm(x, ws)  # only the weight
        (gw,) = torch.autograd.grad(y, ws, dy)
    assert gx.shape == x.shape and gw.shape == w.shape
    assert rel_err(gw, _ref64(x, w, None, 1e-6, 0.0, False, dy)[2]) < 1e-5


# ---------------------------------------------------------------------------------------------
# The kernels, through the op, interpreted (CPU)
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def interpreted(monkeypatch):
    log: list = []
    monkeypatch.setattr(norm_ops, "fused_unavailable", lambda device: None)
    monkeypatch.setattr(norm_ops, "_launcher",
                        lambda name: _Interpreted(getattr(norm_kernels, name), (), [], log))
    monkeypatch.setattr(norm_ops, "sm_count", lambda device: 3)
    monkeypatch.setattr(norm_ops, "programs_per_sm", lambda compiled: 2)
    monkeypatch.setattr(norm_ops, "_PER_SM", {})
    return log


KERNEL_CASES = [  # (shape, is_ln, affine, bias, offset): BLOCK_N 64 / 512 / 1024, ragged
    ((2, 35, 40), False, True, False, 0.0),   # 64 rows a tile: one block, one program
    ((70, 300), True, True, True, 0.0),       # 8 rows a tile: 9 blocks over P = 6 programs
    ((45, 1000), False, True, False, 1.0),    # 4 rows a tile: 12 blocks, 2 each; Gemma offset
    ((13, 520), True, False, False, 0.0),     # no affine parameters
    ((7, 5000), False, True, False, 0.0),     # BLOCK_N 8192: 16 warps, 2 stages
    ((5, 9000), True, True, True, 0.0),       # BLOCK_N 16384: partials accumulated in global
]


@pytest.mark.parametrize("case", KERNEL_CASES, ids=_ids)
def test_kernels_through_the_op_match_fp64(interpreted, case):
    shape, is_ln, affine, bias, offset = case
    eps = 1e-5
    x, w, b, dy = _case(shape, seed=shape[-1], affine=affine, bias=bias)
    got = _run(_op(is_ln, eps, offset), x, w, b, dy)
    _assert_close(got, _ref64(x, w, b, eps, offset, is_ln, dy),
                  _eager_bf16(x, w, b, eps, offset, is_ln, dy), _ids(case))
    # forward: one program per tile of ROWS rows; backward: the persistent grid, min(blocks, P),
    # then (with a parameter) one launch summing its partials into dg / dbeta
    (fname, fgrid, fc), (bname, bgrid, bc), *finish = interpreted
    M, N = x.numel() // shape[-1], shape[-1]
    cfg = norm_ops.norm_config(N)
    blocks = -(-M // cfg["ROWS"])
    assert (fname, bname) == ("norm_fwd", "norm_bwd")
    assert fgrid == (blocks,) and bgrid == (min(blocks, 6),)
    assert bc["HAS_DG"] == affine and bc["HAS_DB"] == bias and bc["STAGES"] == cfg["STAGES"]
    if affine or bias:
        (name, grid, c), = finish
        assert name == "norm_bwd_finish" and (c["HAS_DG"], c["HAS_DB"]) == (affine, bias)
        assert grid == (-(-N // norm_ops.FINISH_TILE["BLOCK_N"]),)
    else:
        assert finish == []


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_kernels_other_dtypes(interpreted, dtype):
    x, w, b, dy = _case((21, 200), seed=2, dtype=dtype, bias=True)
    got = _run(_op(True, 1e-5, 0.0), x, w, b, dy)
    assert got[0].dtype == dtype and got[2].dtype == dtype
    _assert_close(got, _ref64(x, w, b, 1e-5, 0.0, True, dy),
                  _eager_bf16(x, w, b, 1e-5, 0.0, True, dy), str(dtype))


def test_kernel_partials_one_row_per_program():
    # the persistent backward writes exactly P partial rows, each the sum over the row blocks
    # pid, pid + P, ... (here 3 programs, blocks of 2 rows, M = 11: 6 blocks)
    from normfuse.testing import check_pass_numerics
    M, N, P = 11, 24, 3
    x, w, _, dy = _case((M, N), seed=5)
    xs = x.double()
    rstd = torch.rsqrt(xs.square().mean(1) + 1e-5)
    nan = torch.full((P, N), float("nan"))
    res = check_pass_numerics(
        norm_kernels.norm_bwd, [dy, x, rstd.float(), rstd.float(), w,
                                torch.full((M, N), float("nan")).bfloat16(), nan, nan.clone(),
                                x, x, M, N, N, N, 0, 0.0, 1e-5],
        constexprs=dict(N=N, BLOCK_N=32, ROWS=2, IS_LN=False, HAS_G=True, HAS_DG=True,
                        HAS_DB=True), grid=(P,), passes=(), num_warps=4)
    xhat = xs * rstd[:, None]
    for p in range(P):
        rows = [r for blk in range(p, 6, P) for r in (2 * blk, 2 * blk + 1) if r < M]
        want = (dy.double()[rows] * xhat[rows]).sum(0)
        assert rel_err(torch.as_tensor(res.after["DGP"][p]), want) < 1e-5
        assert rel_err(torch.as_tensor(res.after["DBP"][p]), dy.double()[rows].sum(0)) < 1e-5


def _bwd_kernel_case(M, N, seed, shift, is_ln):
    """(x shifted by `shift` for LayerNorm, w, dy, mean (zeros for RMSNorm), rstd) for a direct
    `norm_bwd` run, the statistics in fp64 (eps 1e-5)."""
    x, w, _, dy = _case((M, N), seed=seed)
    x = (x.float() + (shift if is_ln else 0.0)).bfloat16()
    xs = x.double()
    mean = xs.mean(1) if is_ln else torch.zeros(M, dtype=torch.float64)
    rstd = torch.rsqrt((xs - mean[:, None]).square().mean(1) + 1e-5)
    return x, w, dy, mean, rstd


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_kernel_stats_form_computes_the_statistics(is_ln):
    """norm_bwd's STATS form (the pre-norm op's deferred statistics): RSTD / MEAN never read
    (NaN here), rstd and mean from the x rows with eps; dx, the partials and n as the form that
    loads the statistics, to fp32 rounding (ragged M, N: masked columns stay out of the sums)."""
    from normfuse.testing import check_pass_numerics
    M, N, P = 11, 24, 3
    x, w, dy, mean, rstd = _bwd_kernel_case(M, N, 7, 3.0, is_ln)
    beta = (0.1 * torch.randn(N)).bfloat16()
    out = {}
    for stats in (False, True):
        st = torch.full((M,), float("nan")) if stats else rstd.float()
        mu = torch.full((M,), float("nan")) if stats else mean.float()
        nan = torch.full((P, N), float("nan"))
        res = check_pass_numerics(
            norm_kernels.norm_bwd, [dy, x, st, mu, w, torch.full((M, N), float("nan")).bfloat16(),
                                    nan, nan.clone(), torch.full((M, N), float("nan")).bfloat16(),
                                    beta, M, N, N, N, N, 0.0, 1e-5],
            constexprs=dict(N=N, BLOCK_N=32, ROWS=2, IS_LN=is_ln, HAS_G=True, HAS_DG=True,
                            HAS_DB=is_ln, HAS_XN=True, HAS_BETA=True, STATS=stats),
            grid=(P,), passes=(), num_warps=4)
        out[stats] = res.after
    for name in ("DX", "XN", "DGP") + (("DBP",) if is_ln else ()):
        a, b = torch.as_tensor(out[False][name]).float(), torch.as_tensor(out[True][name]).float()
        assert not torch.isnan(b).any(), name
        assert rel_err(b, a) < (8e-3 if name in ("DX", "XN") else 1e-5), (name, rel_err(b, a))


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_kernel_act_form_is_silu_then_the_norm_backward(is_ln):
    """norm_bwd's ACT form (dy the gradient of SiLU(n), n = xhat (offset + g) [+ beta]; the
    block's norm1 backward): dx, dg, dbeta against fp64 autograd through SiLU (ragged M, N,
    3 programs walking 2-row blocks)."""
    from backward_common import _norm_bwd_ref
    from normfuse.testing import check_pass_numerics
    M, N, P = 11, 24, 3
    x, w, dy, mean, rstd = _bwd_kernel_case(M, N, 9, 2.0, is_ln)
    beta = (0.2 * torch.randn(N, generator=torch.Generator().manual_seed(4))).bfloat16() \
        if is_ln else None
    nan = torch.full((P, N), float("nan"))
    res = check_pass_numerics(
        norm_kernels.norm_bwd, [dy, x, rstd.float(), mean.float(), w,
                                torch.full((M, N), float("nan")).bfloat16(), nan, nan.clone(),
                                x, beta if beta is not None else x, M, N, N, N, 0, 0.0, 1e-5],
        constexprs=dict(N=N, BLOCK_N=32, ROWS=2, IS_LN=is_ln, HAS_G=True, HAS_DG=True,
                        HAS_DB=is_ln, HAS_BETA=is_ln, ACT=1),
        grid=(P,), passes=(), num_warps=4)
    rdx, rdg, rdb = _norm_bwd_ref(dy, x, w, beta, is_ln, 1)
    out = res.after
    assert rel_err(torch.as_tensor(out["DX"]), rdx) < 1e-2
    assert rel_err(torch.as_tensor(out["DGP"]).sum(0), rdg) < 1e-4
    if is_ln:
        assert rel_err(torch.as_tensor(out["DBP"]).sum(0), rdb) < 1e-4


def _aot(fn, N, consts, warps, stages, x_dtype=torch.bfloat16):
    bf = torch.empty(4, N, dtype=x_dtype)
    f = torch.empty(4)
    g = torch.empty(N, dtype=torch.bfloat16)
    if fn is norm_kernels.norm_bwd:
        args = [bf, bf, f, f, g, bf, f, f, bf, g, 262144, N, N, N, N, 0.0, 1e-5]
    else:
        args = [bf, g, g, bf, f, f, 262144, N, N, 1e-5, 0.0]
    return _sm90(fn, args, consts, num_warps=warps, num_stages=stages)


def _sm90(fn, args, consts, **options):
    """`fn` compiled for sm_90 as a launch with `args` specializes it (no passes)."""
    sig, attrs = launch_signature(fn, args, consts)
    return normfuse.compile(fn, signature=sig, constexprs=consts, attrs=attrs, target="cuda:90",
                            passes=(), **options)


@pytest.mark.parametrize("N,xn,stats,act", [(1024, False, False, 0), (16384, False, False, 0),
                                            (2048, True, False, 0), (5632, True, False, 0),
                                            (2048, True, True, 0), (5632, True, True, 0),
                                            (2048, False, False, 1), (512, True, True, 0),
                                            (512, False, False, 0)])
def test_kernels_build_for_sm90_without_spills(N, xn, stats, act):
    """xn: the backward also writing n = xhat g + beta (the pre-norm op's "cublas" plan);
    stats: with the rows' statistics computed in the kernel (the deferred form); act: SiLU' of
    n first (the block's norm1 backward). LayerNorm, each at its form's tiles (at N = 512 the
    pre-norm and plain forms' 4 warps hold 250-254 registers a thread: the closest to
    spilling)."""
    form = "act" if act else "pre" if xn else "post" if stats else "plain"
    cfg = norm_ops.norm_config(N, form, True)
    bwd = _aot(norm_kernels.norm_bwd, N, dict(N=N, BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"],
                                              IS_LN=True, HAS_G=True, HAS_DG=True, HAS_DB=True,
                                              STAGES=cfg["STAGES"], ACC_GLOBAL=cfg["ACC_GLOBAL"],
                                              HAS_XN=xn, HAS_BETA=xn or bool(act),
                                              STATS=stats, ACT=act),
               cfg["num_warps"], cfg["STAGES"])
    fwd = _aot(norm_kernels.norm_fwd, N, dict(N=N, BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"],
                                              IS_LN=True, HAS_G=True, HAS_B=True),
               cfg["num_warps"], 1)
    for ck in (bwd, fwd):
        r = ck.resources()
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    ttgir = bwd.asm["ttgir"]
    if cfg["STAGES"] > 1:  # the loop's loads go through shared memory, STAGES - 1 blocks ahead
        assert "ttg.async_copy_global_to_local" in ttgir
    else:
        assert "ttg.async_copy_global_to_local" not in ttgir


@pytest.mark.parametrize("has_dg,has_db", [(True, True), (True, False), (False, True)])
def test_finish_kernel_sums_the_partials(has_dg, has_db):
    """`norm_bwd_finish` run as its TTIR in the interpreter: P = 300 partial rows (two steps of
    256, the last ragged) and N = 70 columns (three programs, the last ragged), dg stored in
    bf16 and dbeta in fp32: the column sums of the partials within fp32 rounding (of fp64)."""
    from normfuse.testing import check_pass_numerics
    t = norm_ops.FINISH_TILE
    gen = torch.Generator().manual_seed(3)
    P, N = 300, 70
    dgp, dbp = torch.randn(P, N, generator=gen), torch.randn(P, N, generator=gen)
    dg = torch.full((N,), float("nan")).bfloat16()
    db = torch.full((N,), float("nan"))
    res = check_pass_numerics(
        norm_kernels.norm_bwd_finish,
        [dgp if has_dg else dbp, dbp if has_db else dgp, dg if has_dg else db,
         db if has_db else dg, P],
        constexprs=dict(N=N, BLOCK_P=t["BLOCK_P"], BLOCK_N=t["BLOCK_N"], HAS_DG=has_dg,
                        HAS_DB=has_db),
        grid=(-(-N // t["BLOCK_N"]),), passes=(), num_warps=t["num_warps"], num_stages=1)
    if has_dg:
        got = torch.as_tensor(res.after["DG"])
        assert got.dtype == torch.bfloat16
        assert rel_err(got, dgp.double().sum(0)) < 4e-3  # (bf16's rounding)
    if has_db:
        got = torch.as_tensor(res.after["DB"])
        assert got.dtype == torch.float32
        assert (got.double() - dbp.double().sum(0)).abs().max() < 1e-4


def test_finish_kernel_builds_for_sm90_without_spills():
    """The partials' sum (`norm_bwd_finish`) for sm_90 as the ops launch it: no spills with dg
    in bf16 and dbeta in fp32 (the op) or both bf16 (the training ops; a 128-row tile at 4
    warps spilled there), one partial row or many; 16-byte loads of the partial rows."""
    t = norm_ops.FINISH_TILE
    for db_dtype, P in ((torch.float32, 528), (torch.bfloat16, 528), (torch.bfloat16, 1)):
        f = torch.empty(4, 1024)
        args = [f, f, torch.empty(1024, dtype=torch.bfloat16), torch.empty(1024, dtype=db_dtype), P]
        consts = dict(N=1024, BLOCK_P=t["BLOCK_P"], BLOCK_N=t["BLOCK_N"], HAS_DG=True,
                      HAS_DB=True)
        ck = _sm90(norm_kernels.norm_bwd_finish, args, consts, num_warps=t["num_warps"],
                   num_stages=1)
        r = ck.resources()
        assert r["spill_stores"] == 0 and r["spill_loads"] == 0, (db_dtype, P, r)
        assert "ld.global.v4" in ck.asm["ptx"]


def test_config_table(monkeypatch):
    assert norm_ops.norm_config(1000) == dict(BLOCK_N=1024, ROWS=4, num_warps=8, STAGES=3,
                                              ACC_GLOBAL=False)
    assert norm_ops.norm_config(8192)["num_warps"] == 16
    # the backward's forms (BWD_FORMS): LayerNorm's at 4 warps, the ACT forms half the rows at
    # 4 warps, RMSNorm's others the table's, all within BWD_FORM_TILES_BLOCK_N only
    table = norm_ops.norm_config(1000)
    for form in ("plain", "post", "pre"):
        assert norm_ops.norm_config(1000, form, False) == table
        assert norm_ops.norm_config(1000, form, True) == dict(table, num_warps=4)
    for is_ln in (False, True):
        assert norm_ops.norm_config(1000, "act", is_ln) == dict(table, ROWS=2, num_warps=4)
        assert norm_ops.norm_config(2048, "act", is_ln)["ROWS"] == 1
        assert norm_ops.norm_config(4096, "pre", True) == norm_ops.norm_config(4096)
        assert norm_ops.norm_config(256, "act", is_ln) == norm_ops.norm_config(256)
    monkeypatch.setitem(norm_ops.NORM_CONFIG_CHOICE, 1000, {"num_warps": 8})
    assert norm_ops.norm_config(1000, "pre", True)["num_warps"] == 8  # the override wins
    with pytest.raises(ValueError, match="form 'dx'; expected None .* plain, post, pre, act"):
        norm_ops.norm_config(1000, "dx")
    assert norm_ops.norm_config(16384)["ACC_GLOBAL"]
    assert norm_ops.norm_unavailable(torch.empty(2, 8)).startswith("the inputs are on cpu")
    monkeypatch.setattr(norm_ops, "fused_unavailable", lambda device: None)
    assert "at most 16384" in norm_ops.norm_unavailable(torch.empty(2, norm_ops.MAX_N + 1))
    assert "float64" in norm_ops.norm_unavailable(torch.empty(2, 8, dtype=torch.float64))
    assert norm_ops.norm_unavailable(torch.empty(2, norm_ops.MAX_N)) is None


# ---------------------------------------------------------------------------------------------
# Errors, torch.compile
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call,exc,match", [
    (lambda: normfuse.ops.rms_norm([1.0, 2.0]), TypeError, "x must be a torch.Tensor"),
    (lambda: normfuse.ops.rms_norm(torch.tensor(1.0)), ValueError, "at least 1 dimension"),
    (lambda: normfuse.ops.rms_norm(torch.ones(2, 3, dtype=torch.int32)), TypeError,
     "floating-point"),
    (lambda: normfuse.ops.rms_norm(torch.ones(2, 0)), ValueError, "must be positive"),
    (lambda: normfuse.ops.rms_norm(torch.ones(2, 8), torch.ones(4)), ValueError,
     r"weight must have shape \(8,\) \(x's last dimension\), got \(4,\)"),
    (lambda: normfuse.ops.layer_norm(torch.ones(2, 8), None, torch.ones(8, 1)), ValueError,
     r"bias must have shape \(8,\)"),
    (lambda: normfuse.ops.rms_norm(torch.ones(2, 8), torch.ones(8), eps=-1.0), ValueError,
     "eps must be a finite float >= 0"),
    (lambda: normfuse.ops.rms_norm(torch.ones(2, 8), None, offset=1.0), ValueError,
     "offset=1.0 needs a weight"),
    (lambda: normfuse.ops.rms_norm(torch.ones(2, 8), torch.ones(8, device="meta")), ValueError,
     "weight is on meta, x on cpu"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_fake_impl_under_torch_compile():
    import torch._dynamo as dynamo
    from torch._dynamo.testing import CompileCounterWithBackend
    dynamo.reset()
    cnt = CompileCounterWithBackend("aot_eager")

    def f(x, w, b):
        return normfuse.ops.layer_norm(x, w, b, 1e-5) + normfuse.ops.rms_norm(x, w, 1e-6,
                                                                              offset=1.0)

    x, w, b, dy = _case((4, 6, 48), seed=11, dtype=torch.float32, bias=True)
    args = [t.clone().requires_grad_(True) for t in (x, w, b)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", normfuse.ops.FallbackWarning)
        out = torch.compile(f, backend=cnt, fullgraph=True)(*args)
        out.backward(dy)
        ref = [t.clone().requires_grad_(True) for t in (x, w, b)]
        f(*ref).backward(dy)
    assert cnt.frame_count == 1
    explain = dynamo.explain(f)(x, w, b)
    assert explain.graph_break_count == 0
    for a, r in zip(args, ref):
        assert torch.allclose(a.grad, r.grad, rtol=1e-5, atol=1e-5)


def test_fake_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x = torch.empty(10, 64, dtype=torch.bfloat16)
        w = torch.empty(64, dtype=torch.float32)
        y, rstd, mean = torch.ops.normfuse.norm_fwd(x, w, None, 1e-5, 0.0, True)
        dx, dg, db = torch.ops.normfuse.norm_bwd(y, x, w, rstd, mean, 0.0, True, True, False)
    assert (y.shape, y.dtype, rstd.shape, rstd.dtype, mean.shape) == (
        (10, 64), torch.bfloat16, (10,), torch.float32, (10,))
    assert (dx.dtype, dg.shape, dg.dtype, db.shape) == (torch.bfloat16, (64,), torch.float32, (0,))


# ---------------------------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------------------------

GPU_CASES = [((4, 2048, 1024), False, True, False, 0.0), ((8192, 4096), True, True, True, 0.0),
             ((3, 1000, 2048), False, True, False, 1.0), ((1000, 16384), True, True, True, 0.0),
             ((257, 16384), False, True, False, 0.0), ((999, 384), True, False, False, 0.0)]


@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=_ids)
def test_gpu_matches_fp64_and_repeats_bitwise(case):
    shape, is_ln, affine, bias, offset = case
    eps = 1e-5
    x, w, b, dy = [t.cuda() if t is not None else None
                   for t in _case(shape, seed=shape[-1], affine=affine, bias=bias)]
    assert norm_ops.norm_unavailable(x) is None
    fn = _op(is_ln, eps, offset)
    got = _run(fn, x, w, b, dy)
    _assert_close(got, _ref64(x, w, b, eps, offset, is_ln, dy),
                  _eager_bf16(x, w, b, eps, offset, is_ln, dy), _ids(case))
    again = _run(fn, x, w, b, dy)
    for a, r in zip(got, again):
        if a is not None:
            assert torch.equal(a, r)


# ---------------------------------------------------------------------------------------------
# The composed training plan: the op in place of the original norm (in eager, where it runs)
# ---------------------------------------------------------------------------------------------

def _train_step(model, ids, out="logits"):
    model.train(True)
    for p in model.parameters():
        p.grad = None
    out = model(input_ids=ids)[out]
    (out.float() * torch.linspace(-1, 1, out.shape[-1])).sum().backward()
    return out.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                          if p.grad is not None}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("family,norms", [("llama", 3), ("gemma2", 5), ("gpt2", 3)])
def test_composed_training_runs_the_op(interpreted, family, norms, monkeypatch):
    """bf16 tiny models (1 layer), train mode, eager, with the op's kernels (interpreted) taking
    the norms: every norm that the plan composes runs the op (forward and backward), none of
    the original norm modules runs, and the output and every gradient stay within bf16 error of
    the stock model's (Llama, GPT-2: pre-norm FusedNorm; Gemma2: also NormAfterLinear, Gemma's
    1 + w). GPT-2's nn.LayerNorms take the op from NATIVE_NORM_MIN_ELEMENTS up: lowered to 0."""
    import copy
    from normfuse.nn import fused
    monkeypatch.setattr(fused, "NATIVE_NORM_MIN_ELEMENTS", 0)
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    import optimize_models as om
    from normfuse.nn.fused import FusedNorm, NormAfterLinear
    stock = om.no_dropout(om.tiny_family(family, layers=1)).to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = normfuse.optimize(copy.deepcopy(stock))
    ran = []
    for m in model.modules():
        if isinstance(m, (FusedNorm, NormAfterLinear)):
            m._original.register_forward_hook(lambda mod, a, out: ran.append(mod))
    ids = torch.randint(0, om.VOCAB, (2, 8), generator=torch.Generator().manual_seed(1))
    interpreted.clear()  # (optimize's own probing runs)
    want, g_want = _train_step(stock, ids)
    got, g = _train_step(model, ids)
    assert ran == []
    names = [name for name, _, _ in interpreted]
    assert names.count("norm_fwd") == norms and names.count("norm_bwd") == norms, names
    assert rel_err(got, want) < 2e-2
    assert set(g) == set(g_want)
    bad = {n: rel_err(g[n], g_want[n]) for n in g if rel_err(g[n], g_want[n]) > 5e-2}
    assert not bad, bad


def test_composed_keeps_the_original_where_the_op_does_not_apply(interpreted, monkeypatch):
    """fp32 x, parameters of another dtype than x, autocast, a module without the fp32 upcast,
    torch's own nn.LayerNorm below NATIVE_NORM_MIN_ELEMENTS: the original module runs (no
    launch)."""
    from normfuse.nn import fused
    from normfuse.nn.fused import composed_norm
    from normfuse.nn.recognize import recognize

    class NoUpcast(torch.nn.Module):  # computes in x's dtype: recognized, not upcast
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(32))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    ln = torch.nn.LayerNorm(32).to(torch.bfloat16)
    spec_ln = recognize(ln, (4, 32), torch.bfloat16)
    x = torch.randn(4, 32, dtype=torch.bfloat16)
    composed_norm(spec_ln, ln, x, ln.weight, ln.bias)
    assert interpreted == []  # torch's native kernel: fewer host us where x is small
    nrms = torch.nn.RMSNorm(32).to(torch.bfloat16)  # its spec says upcast (its decomposition
    spec_nrms = recognize(nrms, (4, 32), torch.bfloat16)  # does), the threshold holds still
    composed_norm(spec_nrms, nrms, x, nrms.weight, None)
    assert interpreted == []
    monkeypatch.setattr(fused, "NATIVE_NORM_MIN_ELEMENTS", x.numel())
    composed_norm(spec_ln, ln, x, ln.weight, ln.bias)
    assert [n for n, _, _ in interpreted] == ["norm_fwd"]  # the op applies from there up
    interpreted.clear()
    ln32 = torch.nn.LayerNorm(32)
    composed_norm(spec_ln, ln32, x.float(), ln32.weight, ln32.bias)  # fp32 x
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    rms = LlamaRMSNorm(32)  # fp32 weight, bf16 x: the module returns fp32
    spec_rms = recognize(rms, (4, 32), torch.bfloat16)
    assert spec_rms.upcast
    assert composed_norm(spec_rms, rms, x, rms.weight, None).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        composed_norm(spec_ln, ln, x, ln.weight, ln.bias)
    nu = NoUpcast().to(torch.bfloat16)
    spec = recognize(nu, (4, 32), torch.bfloat16)
    assert not spec.upcast
    composed_norm(spec, nu, x, nu.weight, None)
    assert interpreted == []


def test_benchmark_cli_and_table(capsys):
    from normfuse.repro import bench_norm
    with pytest.raises(SystemExit) as e:
        bench_norm.main(["--help"])
    assert e.value.code == 0 and "--sweep" in capsys.readouterr().out
    row = {"kind": "rms", "M": 262144, "N": 1024, "ms": {"ours.fwd": 0.2, "ours.bwd": 0.4,
                                                        "ours.fwd_bwd": 0.6,
                                                        "compiled.fwd_bwd": 0.7},
           "GBps": {"ours.bwd": 3900}, "err": {"ours.dx": 1e-3},
           "ours_over_compiled_fwd_bwd": 0.6 / 0.7, "bitwise_repeatable": True}
    md = bench_norm.format_markdown({"env": {"gpu": "H200", "torch": "2.11", "triton": "3.6.0"},
                                     "rows": [row]})
    assert "| rms | 262144 x 1024 | 0.200 | 0.400 | 0.600 | - | - | 0.700 |" in md
    assert "| 0.86 | 3900 |" in md


def test_host_path_under_tritons_launcher(monkeypatch, stand_in_norm):
    """The ops' real launch path (normfuse.jit with passes=(), Triton's own launcher, the
    backward's occupancy query) on CPU tensors with only the device calls stubbed (FakeDriver,
    132 SMs, a kernel of 0 registers): the grids launched. The backward (LayerNorm's plain
    form: 4 warps) gets 6 CTAs per SM: 16 by warps, 6 by shared memory (3 stages of a 4 x 1024
    tile of dy and x, bf16: 32 KB + 1 KB reserved each, of 228 KB)."""
    from normfuse.testing.fake_driver import fused_on_cpu
    monkeypatch.setattr(norm_ops, "_PER_SM", {})
    x, w, b, dy = _case((2, 3000, 1024), seed=1, bias=True)
    with fused_on_cpu() as drv:
        xs, ws, bs = (t.clone().requires_grad_(True) for t in (x, w, b))
        y = normfuse.ops.layer_norm(xs, ws, bs)
        y.backward(dy)
        (fwd, bwd, fin) = drv.launches[-3:]
    M = 6000
    assert fwd[:3] == (M // 4, 1, 1)  # 4 rows a tile
    assert bwd[:3] == (6 * 132, 1, 1)
    assert fin[:3] == (1024 // norm_ops.FINISH_TILE["BLOCK_N"], 1, 1)  # the partials' sums
    assert list(norm_ops._PER_SM.values()) == [6]
    meta = dict(next(iter(norm_ops._PER_SM))[-1])
    assert (meta["ROWS"], meta["num_warps"], meta["STAGES"]) == (4, 4, 3)
    assert xs.grad.shape == x.shape and ws.grad.shape == (1024,) and bs.grad.dtype == b.dtype
    # a second step takes the launch-ready calls (norm_bwd's and the finish's): the same grids
    # and trailing arguments as Triton's launches, the fresh gradients' buffers passed
    with fused_on_cpu() as drv:
        for t in (xs, ws, bs):
            t.grad = None
        normfuse.ops.layer_norm(xs, ws, bs).backward(dy)
        (_, bwd2, fin2) = drv.launches[-3:]
    assert bwd2[:3] == bwd[:3] and fin2[:3] == fin[:3]
    assert len(fin2) == len(fin) and all(same_arguments(p, q) for p, q in zip(fin[17:], fin2[17:]))
    assert ws.grad.dtype == w.dtype and bs.grad.dtype == b.dtype


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
def test_gpu_other_dtypes(dtype):
    x, w, b, dy = [t.cuda() for t in _case((3000, 768), seed=3, dtype=dtype, bias=True)]
    got = _run(_op(True, 1e-5, 0.0), x, w, b, dy)
    _assert_close(got, _ref64(x, w, b, 1e-5, 0.0, True, dy),
                  _eager_bf16(x, w, b, 1e-5, 0.0, True, dy), str(dtype))


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gpu_composed_training_uses_the_op(monkeypatch):
    """A bf16 Llama (2 layers) on the GPU, composed training in eager: the norms run the op (5
    calls: 2 per layer and the final norm) and the step stays within bf16 error of the stock
    model's."""
    import copy
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    import optimize_models as om
    stock = om.no_dropout(om.tiny_family("llama", hidden=256)).to("cuda", torch.bfloat16)
    model = normfuse.optimize(copy.deepcopy(stock))
    calls = []
    real = normfuse.ops.rms_norm
    monkeypatch.setattr(normfuse.ops, "rms_norm", lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    ids = torch.randint(0, om.VOCAB, (4, 64), device="cuda",
                        generator=torch.Generator(device="cuda").manual_seed(0))

    def step(m):
        m.train(True)
        for p in m.parameters():
            p.grad = None
        out = m(input_ids=ids)["logits"]
        (out.float() * torch.linspace(-1, 1, out.shape[-1], device="cuda")).sum().backward()
        return out.detach(), {n: p.grad for n, p in m.named_parameters() if p.grad is not None}
    want, g_want = step(stock)
    got, g = step(model)
    assert len(calls) == 5
    assert rel_err(got, want) < 2e-2
    bad = {n: rel_err(g[n], g_want[n]) for n in g if rel_err(g[n], g_want[n]) > 5e-2}
    assert not bad, bad


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_postnorm_backward_uses_the_persistent_kernel(interpreted, monkeypatch, is_ln):
    """The post-norm op's backward (no GEMM in front of its norm): NOGEMM_NORM_BWD "persistent"
    (default) launches the standalone norm's backward kernel (interpreted here), with the
    scale's offset formed in fp32; its gradients match the reference path's."""
    from normfuse.ops import fallback, inference, training
    monkeypatch.setattr(inference, "fused_unavailable", lambda device: None)
    assert training.NOGEMM_NORM_BWD == "persistent"
    gen = torch.Generator().manual_seed(21)
    Mx, K, N = 30, 24, 200
    x = torch.randn(Mx, K, generator=gen).bfloat16()
    w = (torch.randn(N, K, generator=gen) * 0.2).bfloat16()
    g = (0.5 + torch.rand(N, generator=gen)).bfloat16()
    beta = torch.randn(N, generator=gen).bfloat16() if is_ln else None
    dz = torch.randn(Mx, N, generator=gen).bfloat16()
    h = (x.float() @ w.float().t() + 1.0).bfloat16()
    rstd, mean = fallback.row_stats(h, 1e-5, is_ln)
    got = training._post_bwd(dz, x, w, g, beta, h, rstd, mean, 1e-5, 1.0, is_ln, True)
    assert [name for name, _, _ in interpreted] == ["norm_bwd", "norm_bwd_finish"]
    want = fallback.postnorm_backward(dz, x, w, g, beta, h, 1e-5, 1.0, is_ln)
    # (dx, dw, dg, dbeta, db, dh) from the op; (dx, dW, dg, dbeta, db, dh) from the reference
    for name, a, r in zip(("dx", "dw", "dg", "dbeta", "db", "dh"), got, want):
        if r is None:
            continue
        assert rel_err(a, r) < 1e-2, name
    monkeypatch.setattr(training, "NOGEMM_NORM_BWD", "rows")
    with pytest.raises(ValueError, match="expected 'persistent' or 'row'"):
        training._post_bwd(dz, x, w, g, beta, h, rstd, mean, 1e-5, 1.0, is_ln, True)


@pytest.fixture
def stand_in_norm(monkeypatch):
    """The standalone norm op's fused path on CPU tensors (with the stand-in driver the tests
    enter): no device check, 132 SMs, no launch-ready call from an earlier test."""
    monkeypatch.setattr(norm_ops, "fused_unavailable", lambda device: None)
    monkeypatch.setattr(norm_ops, "sm_count", lambda device: 132)
    monkeypatch.setattr(norm_ops, "_CALLS", {})


def test_launch_ready_inference_call(monkeypatch, stand_in_norm):
    """Eager no-grad calls after the first launch through Triton's launcher (FakeDriver on CPU
    tensors) take the launch-ready path: one entry per geometry and scalars, the same grid,
    inputs and trailing arguments as Triton's launch; a new eps is a new entry; a bad weight
    still raises (the checks run where no entry matches)."""
    from normfuse.testing.fake_driver import fused_on_cpu
    x = torch.randn(2, 300, 512, dtype=torch.bfloat16)
    w = torch.randn(512, dtype=torch.bfloat16)
    with fused_on_cpu() as drv, torch.no_grad():
        normfuse.ops.rms_norm(x, w, 1e-6)
        first = drv.launches[-1]
        assert len(norm_ops._CALLS) == 1
        y = normfuse.ops.rms_norm(x, w, 1e-6)
        second = drv.launches[-1]
        assert len(drv.launches) == 2 and len(norm_ops._CALLS) == 1
        assert y.shape == x.shape and y.dtype == x.dtype
        assert first[:3] == second[:3]  # the grid
        a, b = first[13:], second[13:]  # the kernel's arguments
        assert len(a) == len(b)
        assert [t.data_ptr() for t in a[:3]] == [t.data_ptr() for t in b[:3]]  # x, w, (x)
        assert b[3].shape == (600, 512) and b[4].shape == (600,) and b[4].dtype == torch.float32
        assert all(same_arguments(p, q) for p, q in zip(a[6:], b[6:]))
        normfuse.ops.rms_norm(x, w, 1e-5)
        assert len(norm_ops._CALLS) == 2 and drv.launches[-1][13 + 9] == pytest.approx(1e-5)
        with pytest.raises(ValueError, match=r"weight must have shape \(512,\)"):
            normfuse.ops.rms_norm(x, torch.randn(256, dtype=torch.bfloat16), 1e-6)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_unfused_norm_runs_the_standalone_op(interpreted):
    """A recognized norm that no GEMM takes (a base LlamaModel's final norm: no LM head) runs the
    standalone op under optimize (StandaloneNorm, listed in the report), in inference and in
    training, within bf16 error of the stock model; fp32 (and the CPU reference) keeps the
    module's own forward, bit for bit; optimize(standalone=False) leaves it alone."""
    import copy
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    import optimize_models as om
    from normfuse.nn.fused import StandaloneNorm
    base = om.no_dropout(om.tiny_family("llama", layers=1)).model  # LlamaModel, no head
    ids = torch.randint(0, om.VOCAB, (2, 8), generator=torch.Generator().manual_seed(2))
    stock = base.to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, rep = normfuse.optimize(copy.deepcopy(stock), report=True)
    assert rep.standalone == ["norm"] and "standalone norm kernel" in str(rep)
    assert isinstance(model.norm.__dict__["forward"], StandaloneNorm)
    assert "norm.weight" in model.state_dict()
    model.eval(), stock.eval()
    interpreted.clear()
    with torch.no_grad():
        got = model(input_ids=ids).last_hidden_state
        want = stock(input_ids=ids).last_hidden_state
    assert [n for n, _, _ in interpreted].count("norm_fwd") == 1
    assert rel_err(got, want) < 2e-2
    model.train(), stock.train()
    interpreted.clear()
    got, g = _train_step(model, ids, out="last_hidden_state")
    want, g_want = _train_step(stock, ids, out="last_hidden_state")
    names = [n for n, _, _ in interpreted]
    assert names.count("norm_bwd") == 3, names  # the two composed norms and the final one
    assert rel_err(got, want) < 2e-2 and rel_err(g["norm.weight"], g_want["norm.weight"]) < 5e-2
    # fp32: the module's own forward
    f32 = om.no_dropout(om.tiny_family("llama", layers=1)).model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m32 = normfuse.optimize(copy.deepcopy(f32))
        interpreted.clear()
        with torch.no_grad():
            assert torch.equal(m32(input_ids=ids).last_hidden_state,
                               f32(input_ids=ids).last_hidden_state)
        assert interpreted == []
        off, rep = normfuse.optimize(copy.deepcopy(stock), report=True, standalone=False)
    assert rep.standalone == [] and "forward" not in off.norm.__dict__


def _every_other(t):
    return torch.stack([t, torch.zeros_like(t)], 1).reshape(-1)[::2]


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_kernels_take_strided_weight_and_bias(interpreted, is_ln):
    """A weight and bias given as stride-2 views (or expanded): the kernels read a bare
    pointer with unit stride, so the op hands them contiguous copies (the interpreter refuses
    a strided tensor; on the GPU the kernels read every other value), forward and backward,
    within 1.5x eager bf16's error of fp64; the launch-ready path leaves strided vectors to
    the slow path."""
    x, w, b, dy = _case((70, 300), seed=7, bias=is_ln)

    def fn(x, w, b):
        if is_ln:
            return normfuse.ops.layer_norm(x, _every_other(w), _every_other(b), 1e-5)
        return normfuse.ops.rms_norm(x, _every_other(w), 1e-5)
    got = _run(fn, x, w, b, dy)
    _assert_close(got, _ref64(x, w, b, 1e-5, 0.0, is_ln, dy),
                  _eager_bf16(x, w, b, 1e-5, 0.0, is_ln, dy), "strided")
    with torch.no_grad():
        y = fn(x, w, b)
        ones = torch.ones(1, dtype=x.dtype).expand(x.shape[-1])
        y1 = normfuse.ops.rms_norm(x, ones, 1e-5)
        y2 = normfuse.ops.rms_norm(x, ones, 1e-5)  # (a launch-ready call exists now)
    assert torch.equal(y, got[0]) and torch.equal(y1, y2)
    assert torch.equal(y1, normfuse.ops.rms_norm(x, torch.ones_like(ones), 1e-5))


def test_bias_gradient_in_the_bias_dtype_and_no_double_backward():
    """An fp32 bias beside a bf16 weight gets an fp32 gradient (once rounded to the weight's
    dtype first); a backward under create_graph=True raises instead of wrong second
    derivatives (CPU reference path: the same autograd formula)."""
    import warnings
    g = torch.Generator().manual_seed(3)
    x = torch.randn(512, 64, generator=g)
    w = (1 + 0.1 * torch.randn(64, generator=g)).bfloat16().float().requires_grad_(True)
    b = torch.randn(64, generator=g, requires_grad=True)
    dy = torch.randn(512, 64, generator=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = normfuse.ops.layer_norm(x, w.bfloat16(), b, 1e-5)
        y.backward(dy)
        assert b.grad.dtype == torch.float32
        torch.testing.assert_close(b.grad, dy.sum(0), rtol=1e-4, atol=1e-4)
        xr = x.clone().requires_grad_(True)
        loss = normfuse.ops.rms_norm(xr, None, 1e-5).pow(2).sum()
        with pytest.raises(NotImplementedError, match="not differentiable"):
            torch.autograd.grad(loss, xr, create_graph=True)


def test_forward_launch_follows_a_tile_override(monkeypatch, stand_in_norm):
    """NORM_CONFIG_CHOICE set after a first call takes effect for that geometry (the launch-ready
    key holds the override)."""
    from normfuse.testing.fake_driver import fused_on_cpu
    monkeypatch.setattr(norm_ops, "NORM_CONFIG_CHOICE", {})
    x = torch.randn(2, 300, 512, dtype=torch.bfloat16)
    w = torch.randn(512, dtype=torch.bfloat16)
    with fused_on_cpu() as drv, torch.no_grad():
        normfuse.ops.rms_norm(x, w, 1e-6)
        rows = norm_ops.norm_config(512)["ROWS"]
        assert tuple(drv.launches[-1][:3]) == (-(-600 // rows), 1, 1)
        norm_ops.NORM_CONFIG_CHOICE[512] = {"ROWS": 2}
        normfuse.ops.rms_norm(x, w, 1e-6)
        assert tuple(drv.launches[-1][:3]) == (300, 1, 1)


@pytest.mark.parametrize("dtype,offset,R,K,pad", [
    (torch.bfloat16, 0.0, 40, 300, 0),    # ragged rows and columns (3 x 2 programs)
    (torch.float16, 1.0, 17, 256, 0),     # Gemma's 1 + g, one column block
    (torch.bfloat16, 0.5, 33, 520, 8)])   # rows strided past K (a column slice of a wider W)
def test_fold_kernel_matches_the_reference_bitwise(dtype, offset, R, K, pad):
    """`scale_columns` (the pre-norm ops' per-step fold W diag(offset + g) on the GPU), run as
    its TTIR in the interpreter: bit for bit `reference.fold_norm_weight` (fp32 math, one
    rounding), which `prenorm_linear.fold_now` computes on the CPU."""
    from normfuse.ops.prenorm_linear import FOLD_TILE
    from normfuse.reference import fold_norm_weight
    from normfuse.testing import check_pass_numerics
    gen = torch.Generator().manual_seed(R * K)
    wide = (torch.randn(R, K + pad, generator=gen) * 3).to(dtype)
    w = wide[:, :K]
    g = (1 + 0.3 * torch.randn(K, generator=gen)).to(dtype)
    out = torch.full((R, K), float("nan"), dtype=dtype)
    t = FOLD_TILE
    grid = (-(-R // t["BLOCK_R"]), -(-K // t["BLOCK_K"]))
    res = check_pass_numerics(
        norm_kernels.scale_columns, [wide.contiguous(), g, out, R, K + pad, K, offset],
        constexprs=dict(K=K, BLOCK_R=t["BLOCK_R"], BLOCK_K=t["BLOCK_K"]), grid=grid, passes=(),
        num_warps=t["num_warps"])
    got = res.after["OUT"]
    want = fold_norm_weight(w, g, offset=offset)
    assert got.dtype == want.dtype and torch.equal(got, want)


@pytest.mark.parametrize("dtype,offset,R,K,pad,has_g,has_bias", [
    (torch.bfloat16, 0.0, 20, 600, 0, True, True),   # ragged rows, K over three column steps
    (torch.float16, 1.0, 9, 256, 0, True, False),    # Gemma's 1 + g, one column step, no bias
    (torch.bfloat16, 0.0, 11, 300, 8, False, True)])  # no g (beta only); rows strided past K
def test_fold_dot_kernel(dtype, offset, R, K, pad, has_g, has_bias):
    """`scale_columns_dot` (LayerNorm's per-step fold in one pass) run as its TTIR in the
    interpreter: OUT bit for bit `reference.fold_norm_weight`, WB = W beta [+ bias] within fp32
    rounding of fp64 (from the unfolded W), and the launch form `fold_columns_dot` chooses."""
    from normfuse.ops.norm import FOLD_DOT_TILE
    from normfuse.reference import fold_norm_weight
    from normfuse.testing import check_pass_numerics
    gen = torch.Generator().manual_seed(R * K)
    wide = (torch.randn(R, K + pad, generator=gen) * 3).to(dtype)
    w = wide[:, :K]
    g = (1 + 0.3 * torch.randn(K, generator=gen)).to(dtype)
    beta = (0.5 * torch.randn(K, generator=gen)).to(dtype)
    bias = torch.randn(R, generator=gen).to(dtype)
    out = torch.full((R, K), float("nan"), dtype=dtype)
    wb = torch.full((R,), float("nan"))
    cs = torch.full((R,), float("nan"))
    t = FOLD_DOT_TILE
    res = check_pass_numerics(
        norm_kernels.scale_columns_dot,
        [wide.contiguous(), g if has_g else beta, beta, bias if has_bias else wb,
         out if has_g else wide.contiguous(), wb, cs, R, K + pad, K if has_g else 0, offset],
        constexprs=dict(K=K, BLOCK_R=t["BLOCK_R"], BLOCK_K=t["BLOCK_K"], HAS_G=has_g,
                        HAS_BIAS=has_bias),
        grid=(-(-R // t["BLOCK_R"]),), passes=(), num_warps=t["num_warps"])
    folded = fold_norm_weight(w, g, offset=offset) if has_g else w
    if has_g:
        assert torch.equal(res.after["OUT"], folded)
    want = w.double() @ beta.double() + (bias.double() if has_bias else 0)
    got = torch.as_tensor(res.after["WB"])
    assert got.dtype == torch.float32
    assert (got.double() - want).abs().max() <= 1e-5 * want.abs().max()
    # CS: the row sums of the folded W as rounded (the launch's column sum of its weight)
    sums = torch.as_tensor(res.after["CS"])
    want = folded.double().sum(1)
    assert sums.dtype == torch.float32
    assert (sums.double() - want).abs().max() <= 1e-5 * folded.double().abs().sum(1).max()


def test_fold_dot_launch_path_under_tritons_launcher(monkeypatch, stand_in_norm):
    """`fold_columns_dot`'s real launch path on CPU tensors (FakeDriver; the CUDA device context
    stubbed): one program per 8 rows, the seven tensors then R, W's and OUT's row strides and
    the offset; the second call takes the launch-ready call with the same grid and trailing
    arguments, and new output buffers."""
    import contextlib
    from normfuse.testing.fake_driver import fused_on_cpu
    monkeypatch.setattr(torch.cuda, "device", lambda d: contextlib.nullcontext())
    gen = torch.Generator().manual_seed(9)
    wide = torch.randn(60, 264, generator=gen).bfloat16()
    w = wide[:, :256]  # (rows strided past K)
    g, beta = torch.randn(256, generator=gen).bfloat16(), torch.randn(256, generator=gen).bfloat16()
    bias = torch.randn(60, generator=gen).bfloat16()
    calls = []
    for _ in range(2):
        with fused_on_cpu() as drv:
            out, wb, cs = norm_ops.fold_columns_dot(w, g, beta, bias, 1.0)
            calls.append((drv.launches[-1], out, wb, cs))
    (first, o1, b1, c1), (second, o2, b2, c2) = calls
    assert first[:3] == second[:3] == (-(-60 // norm_ops.FOLD_DOT_TILE["BLOCK_R"]), 1, 1)
    a, b = first[13:], second[13:]
    assert a[0] is w and a[4] is o1 and a[5] is b1 and a[6] is c1 and b[4] is o2
    assert tuple(a[7:11]) == (60, 264, 256, 1.0) and all(same_arguments(p, q)
                                                          for p, q in zip(a[7:], b[7:]))
    assert o1.shape == (60, 256) and o1.dtype == w.dtype and b1.dtype == c1.dtype == torch.float32
    assert len([k for k in norm_ops._CALLS if k[0] == "fold-dot"]) == 1


def test_fold_norm_takes_the_one_pass_kernel_for_layernorm(monkeypatch):
    """`prenorm_linear.fold_norm` with beta where the kernel applies: one `fold_columns_dot`
    call (its (folded W, W beta + bias) returned as they come, cached per version unless
    cache=False); without beta, or where it does not apply (CPU), the older path."""
    from normfuse.ops import prenorm_linear as pre
    calls = []

    def fake(w, g, beta, bias, offset):
        calls.append((w, g, beta, bias, offset))
        return ((None if g is None else w * 2), torch.full((w.shape[0],), 7.0),
                torch.full((w.shape[0],), 3.0))
    monkeypatch.setattr(pre, "fold_columns_dot", fake)
    given = []
    monkeypatch.setattr(pre, "provide_column_sums", lambda t, sums: given.append((t, sums)))
    w, g, beta, bias = torch.ones(4, 6), torch.ones(6), torch.ones(6), torch.ones(4)
    assert not pre._fold_dot_applies(w, g, beta, bias)  # CPU tensors
    monkeypatch.setattr(pre, "_fold_dot_applies", lambda *a: True)
    for cache in (False, True, True):
        fw, fb = pre.fold_norm(w, g, beta, bias, 1.0, cache=cache)
        assert torch.equal(fw, w * 2) and torch.equal(fb, torch.full((4,), 7.0))
    assert len(calls) == 2 and calls[0][4] == 1.0  # the second cached call hit
    # each new folded W's column sums handed to the launches (`provide_column_sums`)
    assert len(given) == 2 and all(torch.equal(s, torch.full((4,), 3.0)) for _, s in given)
    fw, fb = pre.fold_norm(w, None, beta, None, 0.0, cache=False)
    assert fw is w and len(given) == 2  # (no scale: W as it is, and nothing handed over)
    pre.fold_norm(w, g, None, bias, 0.0, cache=False)
    assert len(calls) == 3  # (RMSNorm's fold, no beta: not this kernel)


def test_fold_kernel_builds_for_sm90_vectorized():
    """The fold kernel for sm_90 (no GPU): no spills, 16-byte global loads and stores."""
    from normfuse.ops.prenorm_linear import FOLD_TILE
    t = FOLD_TILE
    bf = torch.empty(4, 2048, dtype=torch.bfloat16)
    args = [bf, torch.empty(2048, dtype=torch.bfloat16), bf, 5632, 2048, 2048, 0.0]
    consts = dict(K=2048, BLOCK_R=t["BLOCK_R"], BLOCK_K=t["BLOCK_K"])
    ck = _sm90(norm_kernels.scale_columns, args, consts, num_warps=t["num_warps"])
    r = ck.resources()
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    ptx = ck.asm["ptx"]
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx, ptx[:2000]
    # LayerNorm's one-pass fold (scale_columns_dot), with g and a bias
    from normfuse.ops.norm import FOLD_DOT_TILE as t
    args = [bf, torch.empty(2048, dtype=torch.bfloat16), torch.empty(2048, dtype=torch.bfloat16),
            torch.empty(5632, dtype=torch.bfloat16), bf, torch.empty(5632), torch.empty(5632),
            5632, 2048, 2048, 0.0]
    consts = dict(K=2048, BLOCK_R=t["BLOCK_R"], BLOCK_K=t["BLOCK_K"], HAS_G=True, HAS_BIAS=True)
    ck = _sm90(norm_kernels.scale_columns_dot, args, consts, num_warps=t["num_warps"])
    r = ck.resources()
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0, r
    ptx = ck.asm["ptx"]
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx, ptx[:2000]


@pytest.mark.gpu
@pytest.mark.parametrize("has_bias", [False, True], ids=["no_bias", "bias"])
def test_gpu_fold_dot_is_the_reference(has_bias):
    """On the H200 LayerNorm's fold (`fold_norm` with beta) is one `scale_columns_dot` launch
    (launch-ready after the first call): the folded W bit for bit the reference, W beta + bias
    within fp32 rounding of fp64, strided rows included, the same bits twice."""
    from normfuse.ops.prenorm_linear import fold_norm
    from normfuse.reference import fold_norm_weight
    w = torch.randn(3072, 2056, device="cuda").to(torch.bfloat16)[:, :2048]
    g = (1 + 0.2 * torch.randn(2048, device="cuda")).to(torch.bfloat16)
    beta = (0.3 * torch.randn(2048, device="cuda")).to(torch.bfloat16)
    bias = torch.randn(3072, device="cuda").to(torch.bfloat16) if has_bias else None
    want = w.double() @ beta.double() + (bias.double() if has_bias else 0)
    outs = [fold_norm(w, g, beta, bias, 0.0, cache=False) for _ in range(2)]
    from normfuse.lowering.launch import _provided
    for fw, fb in outs:
        assert torch.equal(fw, fold_norm_weight(w, g))
        sums = _provided(fw, fw, 3072, 2048, 2048, False)  # (the column sum handed over)
        torch.testing.assert_close(sums, fw.float().sum(1), rtol=1e-5, atol=1e-3)
        assert fb.dtype == torch.float32
        assert (fb.double() - want).abs().max() <= 1e-5 * want.abs().max()
    assert torch.equal(outs[0][1], outs[1][1])


@pytest.mark.gpu
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_gpu_fold_now_is_the_reference(offset):
    """On the H200 `fold_now` launches the fold kernel (launch-ready after the first call) and
    is bit for bit the reference, strided rows included."""
    from normfuse.ops.prenorm_linear import fold_now
    from normfuse.reference import fold_norm_weight
    w = torch.randn(3072, 2056, device="cuda").to(torch.bfloat16)[:, :2048]
    g = (1 + 0.2 * torch.randn(2048, device="cuda")).to(torch.bfloat16)
    for _ in range(2):
        assert torch.equal(fold_now(w, g, offset), fold_norm_weight(w, g, offset=offset))
