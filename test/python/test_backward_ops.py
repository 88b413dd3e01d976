"""Training (issue 10), the autograd ops: the backward custom ops end to end on the CPU with
their launches interpreted (the TTIR the GPU would run, through the passes) against
torch.autograd in fp64; registration and bad input (raises, naming it); from_modules.
GPU (marked): gradients of the four ops and of the block vs fp64, within 1.5x eager PyTorch's
error in the same dtype; a short training run of the block; torch.compile over the custom ops.
"""
from __future__ import annotations

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import normfuse  # noqa: E402
from normfuse.reference import rel_err  # noqa: E402

from backward_common import (  # noqa: E402  (fixtures too)
    BF, EPS, HF, POST_CASES, PRE_CASES, _case_id, _check, _check_from_modules, _compare_grads,
    _dev, _gen, _grads, _mlp_params, _sgd_losses, _stats64, interpreted, mlp_reference)


@pytest.mark.parametrize("plan,dw_mode", [("fused", "xn"), ("fused", "prologue"), ("cublas", "xn"),
                                          ("cublas-row", "xn")])
@pytest.mark.parametrize("is_ln,has_bias", [(False, True), (True, False), (True, True)],
                         ids=["rms-bias", "ln", "ln-bias"])
def test_prenorm_backward_op_matches_autograd(interpreted, monkeypatch, is_ln, has_bias, dw_mode,
                                              plan):
    """Both backward plans: "fused" (the dX GEMM with the norm backward in its epilogue) and
    "cublas" (dn = dY W by torch.mm, then the norm backward without the GEMM, writing n): by
    default the standalone norm's persistent kernel (NOGEMM_NORM_BWD "persistent"), with "row"
    the norm-backward kernel without its GEMM."""
    from normfuse.ops import training
    monkeypatch.setattr(training, "PRENORM_DW", dw_mode)
    if plan == "cublas-row":
        monkeypatch.setattr(training, "NOGEMM_NORM_BWD", "row")
    monkeypatch.setitem(training.PRENORM_BWD_PLAN, "layernorm_linear" if is_ln else "rmsnorm_linear",
                        plan.split("-")[0])
    gemm_in_kernel, persistent = [], []
    real_nb, real_pk = training.norm_backward, training.norm_kernel_backward
    monkeypatch.setattr(training, "norm_backward", lambda dy, w, *a, **k: (
        gemm_in_kernel.append(w is not None), real_nb(dy, w, *a, **k))[1])
    monkeypatch.setattr(training, "norm_kernel_backward", lambda *a, **k: (
        persistent.append(k.get("xn_out") is not None), real_pk(*a, **k))[1])
    gen = _gen(11)
    Mx, K, NO = 50, 64, 40
    x = (torch.randn(Mx, K, generator=gen) + (5.0 if is_ln else 0.0)).bfloat16()
    g = (0.5 + torch.rand(K, generator=gen)).bfloat16()
    beta = torch.randn(K, generator=gen).bfloat16() if is_ln else None
    w = (torch.randn(NO, K, generator=gen) * 0.1).bfloat16()
    dy = torch.randn(Mx, NO, generator=gen).bfloat16()
    rstd, mean = training.row_stats(x, EPS, is_ln)
    dx, dg, dbeta, dw, db = training._pre_bwd(dy, x, g, beta, w, rstd, mean, EPS, 0.0, is_ln,
                                                    has_bias)
    # which kernel ran the norm backward: the dX GEMM's epilogue, the persistent kernel writing
    # n, or the norm-backward kernel without its GEMM
    assert (gemm_in_kernel, persistent) == {"fused": ([True], []), "cublas": ([], [True]),
                                            "cublas-row": ([False], [])}[plan]
    if plan == "fused":  # the norm backward in the dX GEMM's epilogue, over 2 N tiles of 32
        assert any("[cluster-reduce] applied: row of 2 N tiles" in r for r in interpreted), interpreted
    bias = torch.zeros(NO).bfloat16() if has_bias else None
    _check_prenorm_grads((dx, dg, dbeta, dw, db), x, g, beta, w, bias, dy, is_ln)


def _prenorm_inputs(seed, M, K, N, *, shift, g, beta, bias):
    """(generator, x [M, K] + shift, g or None, beta or None, w [N, K], bias or None), bf16."""
    gen = _gen(seed)
    x = (torch.randn(M, K, generator=gen) + shift).bfloat16()
    gw = (0.5 + torch.rand(K, generator=gen)).bfloat16() if g else None
    bt = torch.randn(K, generator=gen).bfloat16() if beta else None
    w = (torch.randn(N, K, generator=gen) * 0.1).bfloat16()
    b = torch.randn(N, generator=gen).bfloat16() if bias else None
    return gen, x, gw, bt, w, b


def _prenorm_norm(xx, gg, bb, is_ln):
    K = xx.shape[-1]
    return F.layer_norm(xx, (K,), gg, bb, EPS) if is_ln else F.rms_norm(xx, (K,), gg, EPS)


def _check_prenorm_grads(got, x, g, beta, w, bias, dy, is_ln):
    """(dx, dg, dbeta, dw, db) of the pre-norm backward op against torch.autograd of
    norm(x) w^T + bias in fp64, within eager bf16's error (`_check`); an absent input's
    gradient must be empty."""
    def f(dtype):
        ts = [t.to(dtype).requires_grad_(True) if t is not None else None for t in (x, g, beta, w, bias)]
        xx, gg, bb, ww, bi = ts
        F.linear(_prenorm_norm(xx, gg, bb, is_ln), ww, bi).backward(dy.to(dtype))
        return [t.grad if t is not None else None for t in ts]

    ref, eager = f(torch.float64), f(torch.bfloat16)
    for name, gt, r, e in zip(["dx", "dg", "dbeta", "dw", "db"], got, ref, eager):
        if r is None:
            assert gt.numel() == 0
            continue
        _check(name, gt, r, e)


@pytest.mark.parametrize("is_ln,has_bias,has_g", [(False, False, True), (False, True, True),
                                                   (True, False, True), (True, True, True),
                                                   (True, True, False)],
                         ids=["rms", "rms-bias", "ln", "ln-bias", "ln-bias-no-g"])
def test_rowdot_backward_op_matches_autograd(interpreted, monkeypatch, is_ln, has_bias, has_g):
    """Plan "rowdot" (issue 21): the backward op given the forward's output y and bias runs the
    one-kernel dX whose row sums come from dY and y (a 2-D grid, ragged M, N and R, no pass
    applies), and its gradients are within eager bf16's error of fp64; without y (the plan
    changed after the forward) it runs "cublas"."""
    from normfuse.ops import training
    monkeypatch.setitem(training.PRENORM_BWD_PLAN, "layernorm_linear" if is_ln else "rmsnorm_linear",
                        "rowdot")
    monkeypatch.setattr(training, "ROWDOT_CONFIG",
                        dict(BLOCK_M=32, BLOCK_N=32, BLOCK_R=16, num_warps=4, num_stages=2,
                             SUMS_BLOCK_M=16, SUMS_BLOCK_R=16))
    launched = []
    real_launcher = training._launcher
    monkeypatch.setattr(training, "_launcher", lambda name, passes="default": (
        launched.append((name, tuple(passes) if not isinstance(passes, str) else passes)),
        real_launcher(name, passes))[1])
    Mx, K, NO = 50, 72, 40
    gen, x, g, beta, w, bias = _prenorm_inputs(13, Mx, K, NO, shift=5.0 if is_ln else 0.0,
                                               g=has_g, beta=is_ln, bias=has_bias)
    rstd, mean = training.row_stats(x, EPS, is_ln)
    # the forward's output as the fused forward kernel gives it (fp32 math, rounded to bf16)
    y = F.linear(_prenorm_norm(x.float(), *(t.float() if t is not None else None
                                            for t in (g, beta)), is_ln),
                 w.float(), bias.float() if bias is not None else None).bfloat16()
    # dY correlated with y (as a loss near its optimum makes it): the row sum from dY and y, and
    # with it the xhat term of dx, is then large, so an error in it shows (with an independent
    # dY that term is ~1/sqrt(K) of dx and hides in bf16's error)
    dy = (2.0 * (y.float() - (bias.float() if bias is not None else 0.0))
          + 0.3 * torch.randn(Mx, NO, generator=gen)).bfloat16()
    dx, dg, dbeta, dw, db = training._pre_bwd(dy, x, g, beta, w, rstd, mean, EPS, 0.0, is_ln,
                                              has_bias, y, bias)
    # the sums' pass, then the dX kernel through hopper-ws (interpreted here as its TTIR; the
    # lowered kernel's own numerics: test_backward_kernels)
    assert launched[-2:] == [("rowdot_sums", ()),
                             ("norm_backward_rowdot_naive", tuple(training.ROWDOT_PASSES))], \
        launched
    _check_prenorm_grads((dx, dg, dbeta, dw, db), x, g, beta, w, bias, dy, is_ln)
    launched.clear()
    cublas = []  # without y: the "cublas" plan's norm backward (the persistent kernel)
    real_pk = training.norm_kernel_backward
    monkeypatch.setattr(training, "norm_kernel_backward",
                        lambda *a, **k: (cublas.append(1), real_pk(*a, **k))[1])
    training._pre_bwd(dy, x, g, beta, w, rstd, mean, EPS, 0.0, is_ln, has_bias)
    assert cublas == [1] and all(name != "norm_backward_rowdot_naive" for name, _ in launched)


@pytest.mark.parametrize("is_ln,has_bias", [(False, False), (False, True), (True, True)])
def test_rowdot_backward_of_no_rows(is_ln, has_bias):
    """Plan "rowdot" over zero rows: no kernel runs, and every gradient has its parameter's shape
    (db: the output's R columns, not x's N), zero."""
    from normfuse.ops import training
    N, R = 24, 40
    x, dy, y = torch.empty(0, N).bfloat16(), torch.empty(0, R).bfloat16(), torch.empty(0, R).bfloat16()
    w = torch.randn(R, N).bfloat16()
    g = torch.ones(N).bfloat16()
    beta = torch.zeros(N).bfloat16() if is_ln else None
    stat = torch.empty(0)
    dx, dg, dbeta, dw, db = training.rowdot_backward(dy, w, y, None, x, stat, stat, g, beta,
                                                     is_ln=is_ln, has_bias=has_bias)
    assert dx.shape == (0, N) and dg.shape == (N,) and dw.shape == w.shape
    assert (dbeta is not None) == is_ln and (db is not None) == has_bias
    for t in (dg, dbeta, dw, db):
        if t is not None:
            assert not t.float().any()
    if has_bias:
        assert db.shape == (R,) and db.dtype == torch.float32


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_postnorm_backward_op_matches_autograd(interpreted, is_ln):
    from normfuse.ops import training
    gen = _gen(12)
    Mx, K, NO = 50, 40, 64
    x = torch.randn(Mx, K, generator=gen).bfloat16()
    w = (torch.randn(NO, K, generator=gen) * 0.2).bfloat16()
    bias = torch.randn(NO, generator=gen).bfloat16()
    res_ = (torch.randn(Mx, NO, generator=gen) + 4.0).bfloat16()
    g = (0.5 + torch.rand(NO, generator=gen)).bfloat16()
    beta = torch.randn(NO, generator=gen).bfloat16() if is_ln else None
    dz = torch.randn(Mx, NO, generator=gen).bfloat16()
    h = (x.float() @ w.float().t() + bias.float() + res_.float()).bfloat16()
    rstd, mean = training.row_stats(h, EPS, is_ln)
    dx, dw, dg, dbeta, db, dres = training._post_bwd(dz, x, w, g, beta, h, rstd, mean, EPS, 0.0, is_ln,
                                                       True)

    def f(dtype):
        ts = [t.to(dtype).requires_grad_(True) if t is not None else None
              for t in (x, w, g, beta, bias, res_)]
        xx, ww, gg, bb, bi, rr = ts
        hh = F.linear(xx, ww, bi) + rr
        z = F.layer_norm(hh, (NO,), gg, bb, EPS) if is_ln else F.rms_norm(hh, (NO,), gg, EPS)
        z.backward(dz.to(dtype))
        return [t.grad if t is not None else None for t in ts]

    ref, eager = f(torch.float64), f(torch.bfloat16)
    for name, got, r, e in zip(["dx", "dw", "dg", "dbeta", "db", "dres"],
                               [dx, dw, dg, dbeta, db, dres], ref, eager):
        if r is None:
            assert got.numel() == 0
            continue
        _check(name, got, r, e)


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_block_backward_regrouped_matches_autograd(interpreted, is_ln, monkeypatch):
    from normfuse.ops import training
    monkeypatch.setattr(training, "POSTNORM_MLP_BWD_PLAN", "regrouped")  # (the default: composed)
    gen = _gen(13)
    Mx, D, H = 40, 32, 96
    p = _mlp_params(gen, D, H, is_ln)
    x = (torch.randn(Mx, D, generator=gen) + 2.0).bfloat16()
    dout = torch.randn(Mx, D, generator=gen).bfloat16()
    # forward quantities as the fused forward saves them (h in bf16, statistics in fp32)
    norm = ((lambda h, g, b: F.layer_norm(h.float(), (h.shape[1],), g.float(), b.float(), EPS))
            if is_ln else (lambda h, g, b: F.rms_norm(h.float(), (h.shape[1],), g.float(), EPS)))
    h1 = F.linear(x.float(), p["w1"].float(), p["b1"].float()).bfloat16()
    rstd1, mean1 = training.row_stats(h1, EPS, is_ln)
    a = F.silu(norm(h1, p["g1"], p["beta1"])).bfloat16()
    h2 = (F.linear(a.float(), p["w2"].float(), p["b2"].float()) + x.float()).bfloat16()
    rstd2, mean2 = training.row_stats(h2, EPS, is_ln)
    interpreted.clear()
    got = training._mlp_bwd(dout, x, p["w1"], p["g1"], p["beta1"], p["w2"], p["g2"], p["beta2"],
                            h1, rstd1, mean1, a, h2, rstd2, mean2, EPS, is_ln, True, True)
    # the regrouping: norm1's backward (H = 96: 3 tiles of 32) runs in linear 2's dX GEMM epilogue
    assert any("[cluster-reduce] applied: row of 3 N tiles" in r for r in interpreted), interpreted
    names = ["w1", "g1", "beta1", "b1", "w2", "g2", "beta2", "b2"]

    def f(dtype):
        xx = x.to(dtype).requires_grad_(True)
        ps = {k: (v.to(dtype).requires_grad_(True) if v is not None else None) for k, v in p.items()}
        mlp_reference(xx, *(ps[k] for k in names), EPS, is_ln).backward(dout.to(dtype))
        return {"x": xx.grad, **{k: (v.grad if v is not None else None) for k, v in ps.items()}}

    ref, eager = f(torch.float64), f(torch.bfloat16)
    order = ["x", "w1", "g1", "beta1", "b1", "w2", "g2", "beta2", "b2"]
    for name, t in zip(order, got):
        if ref[name] is None:
            assert t.numel() == 0
            continue
        _check(name, t, ref[name], eager[name])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_training_fold_is_the_reference_fold_bit_for_bit(dtype):
    """The training forward folds g into W every step with one multiply where that is exact;
    it must equal reference.fold_norm_weight (fp32 product, cast back) bit for bit, and take
    the reference's route where one multiply would not be exact (offset, strided W)."""
    from normfuse.ops.prenorm_linear import fold_now
    from normfuse.reference import fold_norm_weight
    gen = _gen(5)
    w = (torch.randn(96, 80, generator=gen) * 3).to(dtype)
    g = (torch.randn(80, generator=gen) * 2).to(dtype)
    assert torch.equal(fold_now(w, g), fold_norm_weight(w, g))
    for offset, ww in ((1.0, w), (0.0, w.t().contiguous().t())):
        got = fold_now(ww, g, offset)
        assert got.is_contiguous() and torch.equal(got, fold_norm_weight(ww, g, offset=offset))


@pytest.mark.parametrize("is_ln,has_g,has_beta,has_bias,offset",
                         [(False, True, False, True, 0.0), (False, True, False, False, 1.0),
                          (True, True, True, True, 0.0), (True, False, True, False, 0.0),
                          (True, False, False, True, 0.0)],
                         ids=["rms-bias", "rms-offset", "ln-bias", "ln-beta-only", "ln-no-affine"])
def test_training_forward_launches_the_derived_weights(monkeypatch, is_ln, has_g, has_beta,
                                                       has_bias, offset):
    """The training forward's fused path (CPU stand-in for the GPU launch): the launch gets
    W diag(offset + g) and beta W^T + bias, and the norm-less kernel computes the op's function
    from them (against fp64 autograd's forward); the statistics are the rows' own."""
    from normfuse.ops import training
    seen = {}

    def fake_launch(op, kind, x, w, g, beta, bias, eps):  # the kernel's, fp64
        assert g is None and beta is None and w.stride(-1) == 1 and eps == EPS
        assert bias is None or bias.is_contiguous()
        seen.update(kind=kind, bias=bias)
        n = _prenorm_norm(x.double(), None, None, kind == "ln")
        return F.linear(n, w.double(), None if bias is None else bias.double()).to(x.dtype)
    monkeypatch.setattr(training, "route", lambda op, x: True)
    monkeypatch.setattr(training, "launch_prenorm", fake_launch)
    monkeypatch.setattr(training, "row_stats", lambda x, eps, is_ln: tuple(
        t.float() for t in _stats64(x, is_ln)))
    M, K, N = 24, 64, 48
    _, x, g, beta, w, b = _prenorm_inputs(7, M, K, N, shift=3.0 if is_ln else 0.0, g=has_g,
                                          beta=has_beta, bias=has_bias)
    monkeypatch.setattr(training, "PRENORM_STATS_IN_BWD", False)
    y, rstd, _ = training._pre_fwd_impl(x, g, beta, w, b, EPS, offset, is_ln)
    # (by default the statistics are left to the backward's persistent norm kernel: none kept)
    monkeypatch.setattr(training, "PRENORM_STATS_IN_BWD", True)
    y2, rstd2, mean2 = training._pre_fwd_impl(x, g, beta, w, b, EPS, offset, is_ln)
    assert torch.equal(y, y2) and rstd2.numel() == 0 and mean2.numel() == 0
    assert seen["kind"] == ("ln" if is_ln else "rms")
    assert (seen["bias"] is None) == (not has_bias and not (is_ln and has_beta))
    gg = None if g is None else g.double() + offset
    n = _prenorm_norm(x.double(), gg, None if beta is None else beta.double(), is_ln)
    ref = F.linear(n, w.double(), None if b is None else b.double())
    assert rel_err(y.double(), ref) < 1e-2
    assert y.shape == (M, N) and rstd.shape == (M,)


# ---------------------------------------------------------------------------------------------
# Registration and bad input (CPU)
# ---------------------------------------------------------------------------------------------

def test_custom_ops_registered_with_fake_impls():
    from torch._subclasses.fake_tensor import FakeTensorMode
    import normfuse.ops.training  # noqa: F401
    for name in ("prenorm_linear_fwd", "prenorm_linear_bwd", "postnorm_linear_fwd",
                 "postnorm_linear_bwd", "postnorm_mlp_fwd", "postnorm_mlp_bwd"):
        assert hasattr(torch.ops.normfuse, name)
    with FakeTensorMode():
        x = torch.empty(10, 64, dtype=torch.bfloat16)
        w = torch.empty(48, 64, dtype=torch.bfloat16)
        g = torch.empty(64, dtype=torch.bfloat16)
        y, rstd, mean = torch.ops.normfuse.prenorm_linear_fwd(x, g, g, w, None, 1e-5, 0.0, True)
        assert y.shape == (10, 48) and rstd.shape == (10,) and mean.dtype == torch.float32
        w2 = torch.empty(64, 48, dtype=torch.bfloat16)
        g2 = torch.empty(48, dtype=torch.bfloat16)
        out = torch.ops.normfuse.postnorm_mlp_fwd(x, w, g2, None, None, w2, g, None, None, 1e-6, False)
        assert out[0].shape == (10, 64) and out[1].shape == (10, 48)


@pytest.mark.parametrize("eps, exc, match", [
    (None, TypeError, "eps must be a real number, got NoneType"),
    ("1e-6", TypeError, "got str"),
    (torch.tensor(1e-6), TypeError, "got Tensor"),
    (True, TypeError, "got bool"),
    (-1e-6, ValueError, "eps must be >= 0"),
    (float("nan"), ValueError, "eps must be >= 0"),
])
def test_eps_is_checked_naming_the_op(eps, exc, match):
    from normfuse import ops
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    g = torch.ones(64, dtype=torch.bfloat16)
    w = torch.randn(32, 64, dtype=torch.bfloat16)
    gn = torch.ones(32, dtype=torch.bfloat16)
    for call in (lambda: ops.rmsnorm_linear(x, g, w, eps),
                 lambda: ops.layernorm_linear(x, g, g, w, eps),
                 lambda: ops.linear_rmsnorm(x, w, gn, eps),
                 lambda: ops.linear_layernorm(x, w, gn, gn, eps),
                 lambda: ops.rmsnorm_linear_split(x, g, [w, w], eps)):
        with pytest.raises(exc, match=match):
            call()
    import numpy as np
    assert ops.rmsnorm_linear(x.float(), g.float(), w.float(), np.float32(1e-6)).shape == (4, 32)
    assert ops.rmsnorm_linear(x.float(), g.float(), w.float(), 0).shape == (4, 32)


def test_training_bad_input_raises_naming_it():
    from normfuse.ops import layernorm_linear, linear_rmsnorm, postnorm_mlp, rmsnorm_linear
    x = torch.randn(4, 64, dtype=torch.bfloat16, requires_grad=True)
    g = torch.ones(64, dtype=torch.bfloat16)
    w = torch.randn(32, 64, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="folded=True is not supported under autograd"):
        rmsnorm_linear(x, None, w, folded=True)
    with pytest.raises(NotImplementedError, match="persistent=True is not supported"):
        layernorm_linear(x, g, g, w, persistent=True)
    # the default post-norm pipeline spelled as a list is the default, as in inference
    import warnings
    from normfuse.ops.postnorm_linear import DEFAULT_POSTNORM_PASSES
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wp = torch.randn(64, 64, dtype=torch.bfloat16)
        assert linear_rmsnorm(x, wp, g, passes=list(DEFAULT_POSTNORM_PASSES)).shape == (4, 64)
    with pytest.raises(TypeError, match="norm_weight torch.float32"):
        rmsnorm_linear(x, g.float(), w)
    with pytest.raises(ValueError, match="norm_weight must have shape"):
        linear_rmsnorm(x, w, g)
    with pytest.raises(ValueError, match="all tensors must be on one device"):
        rmsnorm_linear(x, g.to("meta"), w)
    w1 = torch.randn(96, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"w2 must be \[64, 96\]"):
        postnorm_mlp(x, w1, torch.ones(96, dtype=torch.bfloat16), None, None, w1,
                     g, None, None)
    with pytest.raises(ValueError, match="layernorm=True needs beta1 and beta2"):
        postnorm_mlp(x, w1, torch.ones(96, dtype=torch.bfloat16), None, None, w1.t(), g, None,
                     None, layernorm=True)


def test_from_modules_copies_parameters():
    from torch import nn
    from normfuse.nn import (LayerNormLinear, LinearLayerNorm, LinearRMSNorm, RMSNormLinear,
                             from_modules)
    torch.manual_seed(0)
    lin = nn.Linear(64, 32)
    rms, ln_in, ln_out = nn.RMSNorm(64), nn.LayerNorm(64), nn.LayerNorm(32)
    for norm in (rms, ln_in, ln_out):
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            if getattr(norm, "bias", None) is not None:
                norm.bias.uniform_(-1, 1)
    m = from_modules(rms, lin)
    assert isinstance(m, RMSNormLinear) and torch.equal(m.norm_weight, rms.weight)
    assert m.eps == torch.finfo(torch.float32).eps  # nn.RMSNorm(eps=None) uses finfo(dtype).eps
    m = from_modules(ln_in, lin)
    assert isinstance(m, LayerNormLinear) and torch.equal(m.norm_bias, ln_in.bias)
    m = from_modules(lin, ln_out)
    assert isinstance(m, LinearLayerNorm) and torch.equal(m.weight, lin.weight)
    assert torch.equal(m.bias, lin.bias) and torch.equal(m.norm_bias, ln_out.bias)
    assert isinstance(from_modules(lin, nn.RMSNorm(32)), LinearRMSNorm)
    with pytest.raises(ValueError, match=r"normalized_shape \(64,\)"):
        from_modules(lin, ln_in)  # a post-norm over 32 outputs cannot take a LayerNorm(64)
    with pytest.raises(TypeError, match="expected an nn.Linear and an nn.RMSNorm or nn.LayerNorm"):
        from_modules(lin, nn.ReLU())


@pytest.mark.gpu
@pytest.mark.parametrize("case", [PRE_CASES[0], PRE_CASES[2], PRE_CASES[3]], ids=_case_id)
@pytest.mark.parametrize("kind,has_bias", [("rms", True), ("ln", False), ("ln", True)])
def test_gpu_prenorm_gradients_rowdot_plan(monkeypatch, case, kind, has_bias):
    """The "rowdot" backward plan (issue 21; off by default): the forward saves its output, the
    backward's one dX kernel takes the norm's row sums from dY and it; gradients as the default
    plan's test demands."""
    from normfuse.ops import training
    monkeypatch.setitem(training.PRENORM_BWD_PLAN, f"{'rms' if kind == 'rms' else 'layer'}norm_linear",
                        "rowdot")
    launched = []
    real = training.rowdot_backward
    monkeypatch.setattr(training, "rowdot_backward",
                        lambda *a, **k: (launched.append(1), real(*a, **k))[1])
    test_gpu_prenorm_gradients(case, kind, has_bias)
    assert launched == [1]


@pytest.mark.gpu
@pytest.mark.parametrize("case", PRE_CASES, ids=_case_id)
@pytest.mark.parametrize("kind,has_bias", [("rms", False), ("rms", True), ("ln", False), ("ln", True)])
def test_gpu_prenorm_gradients(case, kind, has_bias):
    shape, dtype = case
    from normfuse.ops import layernorm_linear, rmsnorm_linear
    Mx, K, NO = shape
    gen = torch.Generator(device="cuda").manual_seed(Mx + K)
    x = _dev(Mx, K, dtype=dtype, gen=gen, shift=20.0 if kind == "ln" else 0.0)  # |mean| >> std
    g = _dev(K, dtype=dtype, gen=gen, scale=0.2, shift=1.0)
    beta = _dev(K, dtype=dtype, gen=gen, scale=0.2) if kind == "ln" else None
    w = _dev(NO, K, dtype=dtype, gen=gen, scale=K ** -0.5)
    bias = _dev(NO, dtype=dtype, gen=gen) if has_bias else None
    dy = _dev(Mx, NO, dtype=dtype, gen=gen)
    if kind == "rms":
        ours = lambda x, g, b, w, bi: rmsnorm_linear(x, g, w, 1e-6, bi)  # noqa: E731
        eager = lambda x, g, b, w, bi: F.linear(F.rms_norm(x, (K,), g, 1e-6), w, bi)  # noqa: E731
    else:
        ours = lambda x, g, b, w, bi: layernorm_linear(x, g, b, w, 1e-5, bi)  # noqa: E731
        eager = lambda x, g, b, w, bi: F.linear(F.layer_norm(x, (K,), g, b, 1e-5), w, bi)  # noqa: E731
    ts = (x, g, beta, w, bias)
    y, got = _grads(ours, ts, dy)
    yr, ref = _grads(eager, [t.double() if t is not None else None for t in ts], dy)
    ye, eag = _grads(eager, ts, dy)
    _compare_grads(["x", "norm_weight", "norm_bias", "weight", "bias"], got, ref, eag,
                   f"{kind}_linear {shape} {dtype}")
    # the forward output (the fused forward kernel's numerics, not the backward's)
    assert rel_err(y, yr) <= 1.5 * rel_err(ye, yr) + 1e-4, ("forward", rel_err(y, yr), rel_err(ye, yr))


@pytest.mark.gpu
@pytest.mark.parametrize("case", POST_CASES, ids=_case_id)
@pytest.mark.parametrize("kind,extras", [("rms", ()), ("rms", ("bias", "res")), ("ln", ("res",)),
                                         ("ln", ("bias", "res"))])
def test_gpu_postnorm_gradients(case, kind, extras):
    shape, dtype = case
    ts, dz = _post_case(shape, dtype, kind, extras, shape[0] + shape[2], 20.0)
    _check_post_grads(kind, shape[2], ts, dz, 1e-6, f"linear_{kind}norm {shape} {dtype}")


def _post_case(shape, dtype, kind, extras, seed, ln_shift):
    """((x, w, g, beta, bias, residual), dz) of a post-norm op's gradient check on the GPU: the
    residual's rows shifted by `ln_shift` for LayerNorm."""
    Mx, K, NO = shape
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = _dev(Mx, K, dtype=dtype, gen=gen)
    w = _dev(NO, K, dtype=dtype, gen=gen, scale=K ** -0.5)
    g = _dev(NO, dtype=dtype, gen=gen, scale=0.2, shift=1.0)
    beta = _dev(NO, dtype=dtype, gen=gen, scale=0.2) if kind == "ln" else None
    bias = _dev(NO, dtype=dtype, gen=gen) if "bias" in extras else None
    res = _dev(Mx, NO, dtype=dtype, gen=gen, shift=ln_shift if kind == "ln" else 0.0) \
        if "res" in extras else None
    dz = _dev(Mx, NO, dtype=dtype, gen=gen)
    return (x, w, g, beta, bias, res), dz


def _check_post_grads(kind, NO, ts, dz, rms_eps, label):
    """The op's gradients (RMSNorm at `rms_eps`, LayerNorm at 1e-5) against fp64 and eager bf16
    (`_compare_grads`), and its forward against fp64 within 1.5x eager's error."""
    from normfuse.ops import linear_layernorm, linear_rmsnorm
    if kind == "rms":
        ours = lambda x, w, g, b, bi, r: linear_rmsnorm(x, w, g, rms_eps, bi, r)  # noqa: E731

        def eager(x, w, g, b, bi, r):
            h = F.linear(x, w, bi)
            return F.rms_norm(h + r if r is not None else h, (NO,), g, rms_eps)
    else:
        ours = lambda x, w, g, b, bi, r: linear_layernorm(x, w, g, b, 1e-5, bi, r)  # noqa: E731

        def eager(x, w, g, b, bi, r):
            h = F.linear(x, w, bi)
            return F.layer_norm(h + r if r is not None else h, (NO,), g, b, 1e-5)
    z, got = _grads(ours, ts, dz)
    zr, ref = _grads(eager, [t.double() if t is not None else None for t in ts], dz)
    ze, eag = _grads(eager, ts, dz)
    _compare_grads(["x", "weight", "norm_weight", "norm_bias", "bias", "residual"], got, ref, eag,
                   label)
    assert rel_err(z, zr) <= 1.5 * rel_err(ze, zr) + 1e-4, ("forward", rel_err(z, zr), rel_err(ze, zr))


@pytest.mark.gpu
@pytest.mark.parametrize("case", [((1000, 320, 520), BF), ((4096, 2048, 1024), BF),
                                  ((8192, 512, 2048), HF)], ids=_case_id)
@pytest.mark.parametrize("kind,extras", [("rms", ("bias", "res")), ("ln", ("res",))])
def test_gpu_postnorm_lowered_training_forward(case, kind, extras, monkeypatch):
    """POSTNORM_TRAIN_FWD = "lowered": the train kernel through hopper-ws (h the template's second
    output tile, no statistics stored; the backward computes them from h). The lowered kernel
    runs (no fallback said), the forward returns empty rstd / mean, z and h as the fused
    training kernel's to bf16 rounding, and the gradients pass the same checks against fp64 and
    eager as the fused forward's (`test_gpu_postnorm_gradients`): ragged M, N = 520 (a last
    tile of 8 columns), the coop and ping-pong schedules."""
    import warnings

    from normfuse.ops import postnorm_linear as post, training as tr
    monkeypatch.setitem(post.LOWERED_POSTNORM, kind, "auto")
    monkeypatch.setattr(tr, "POSTNORM_TRAIN_FWD", "lowered")
    shape, dtype = case
    ts, dz = _post_case(shape, dtype, kind, extras, shape[0] + shape[2] + 1, 5.0)
    x, w, g, beta, bias, res = ts
    ln = kind == "ln"
    with warnings.catch_warnings(record=True) as caught:  # (a fallback would say so)
        warnings.simplefilter("always")
        low = torch.ops.normfuse.postnorm_linear_fwd(x, w, g, beta, bias, res, 1e-5, 0.0, ln)
    said = [str(c.message) for c in caught if "training forward cannot run" in str(c.message)]
    assert not said, said
    assert low[2].numel() == 0 and low[3].numel() == 0
    monkeypatch.setattr(tr, "POSTNORM_TRAIN_FWD", "fused")
    fused = torch.ops.normfuse.postnorm_linear_fwd(x, w, g, beta, bias, res, 1e-5, 0.0, ln)
    assert rel_err(low[0], fused[0]) < 1e-2 and rel_err(low[1], fused[1]) < 1e-2
    monkeypatch.setattr(tr, "POSTNORM_TRAIN_FWD", "lowered")
    _check_post_grads(kind, shape[2], ts, dz, 1e-5,
                      f"linear_{kind}norm lowered fwd {shape} {dtype}")


@pytest.mark.gpu
@pytest.mark.parametrize("D,H,Mx,dtype", [(256, 520, 1000, BF), (64, 96, 77, HF), (1024, 2048, 4096, BF)],
                         ids=["256x520-bf16", "64x96-fp16", "1024x2048-bf16"])
@pytest.mark.parametrize("layernorm", [False, True], ids=["rms", "ln"])
def test_gpu_block_gradients(D, H, Mx, dtype, layernorm):
    from normfuse.nn import PostNormMLP
    torch.manual_seed(D + H)
    m = PostNormMLP(D, H, layernorm=layernorm, device="cuda", dtype=dtype)
    with torch.no_grad():
        for p in (m.g1, m.g2):
            p.uniform_(0.5, 1.5)
        for p in (m.beta1, m.beta2):
            if p is not None:
                p.uniform_(-0.5, 0.5)
    gen = torch.Generator(device="cuda").manual_seed(1)
    x = _dev(Mx, D, dtype=dtype, gen=gen)
    dout = _dev(Mx, D, dtype=dtype, gen=gen)
    names = ["w1", "g1", "beta1", "b1", "w2", "g2", "beta2", "b2"]
    params = [getattr(m, n) for n in names]
    ref_fn = lambda x, *ps: mlp_reference(x, *ps, m.eps, layernorm)  # noqa: E731
    ours_fn = lambda x, *ps: normfuse.ops.postnorm_mlp(x, *ps, m.eps, layernorm=layernorm)  # noqa: E731
    ts = [x] + params
    o, got = _grads(ours_fn, ts, dout)
    orf, ref = _grads(ref_fn, [t.double() if t is not None else None for t in ts], dout)
    oe, eag = _grads(ref_fn, ts, dout)
    _compare_grads(["x"] + names, got, ref, eag, f"PostNormMLP {D}x{H} {dtype}")
    assert rel_err(o, orf) <= 1.5 * rel_err(oe, orf) + 1e-4, ("forward", rel_err(o, orf), rel_err(oe, orf))


@pytest.mark.gpu
@pytest.mark.parametrize("layernorm", [False, True], ids=["rms", "ln"])
def test_gpu_block_training_run_like_eager(layernorm):
    """A short training run: the loss goes down, step by step close to eager's."""
    from normfuse.nn import PostNormMLP
    torch.manual_seed(0)
    D, H, Mx = 256, 512, 2048
    m = PostNormMLP(D, H, layernorm=layernorm, device="cuda", dtype=torch.bfloat16)
    ref = PostNormMLP(D, H, layernorm=layernorm, device="cuda", dtype=torch.bfloat16)
    ref.load_state_dict(m.state_dict())
    gen = torch.Generator(device="cuda").manual_seed(2)
    x = _dev(Mx, D, dtype=torch.bfloat16, gen=gen)
    target = _dev(Mx, D, dtype=torch.bfloat16, gen=gen)
    ours, eager = _sgd_losses(m, ref, x, target, lr=0.5, steps=30)
    assert ours[-1] < 0.9 * ours[0], ours
    assert abs(ours[-1] - eager[-1]) <= 0.02 * eager[0], (ours, eager)


@pytest.mark.gpu
def test_gpu_torch_compile_sees_the_custom_ops():
    from normfuse.ops import linear_rmsnorm, rmsnorm_linear
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = _dev(512, 256, dtype=torch.bfloat16, gen=gen).requires_grad_(True)
    g = _dev(256, dtype=torch.bfloat16, gen=gen, shift=1.0).requires_grad_(True)
    w1 = _dev(512, 256, dtype=torch.bfloat16, gen=gen, scale=0.06).requires_grad_(True)
    w2 = _dev(256, 512, dtype=torch.bfloat16, gen=gen, scale=0.04).requires_grad_(True)
    g2 = _dev(256, dtype=torch.bfloat16, gen=gen, shift=1.0).requires_grad_(True)

    def f(x, g, w1, w2, g2):
        return linear_rmsnorm(F.silu(rmsnorm_linear(x, g, w1)), w2, g2, residual=x).float().sum()

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)  # fullgraph: a graph break would raise
    loss = compiled(x, g, w1, w2, g2)
    grads = torch.autograd.grad(loss, (x, g, w1, w2, g2))
    loss_e = f(x, g, w1, w2, g2)
    grads_e = torch.autograd.grad(loss_e, (x, g, w1, w2, g2))
    for a, b in zip(grads, grads_e):
        assert rel_err(a, b) < 1e-2


@pytest.mark.gpu
def test_gpu_modules_from_torch_train():
    from torch import nn
    torch.manual_seed(4)
    pairs = [(nn.RMSNorm(320, eps=1e-6), nn.Linear(320, 192)), (nn.LayerNorm(320), nn.Linear(320, 192)),
             (nn.Linear(320, 192), nn.RMSNorm(192, eps=1e-6)), (nn.Linear(320, 192), nn.LayerNorm(192))]
    x0 = torch.randn(300, 320, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(300, 192, device="cuda")
    for a, b in pairs:
        _check_from_modules(a.cuda().bfloat16(), b.cuda().bfloat16(), x0, r)
