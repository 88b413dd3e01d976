"""Training (issue 10): the naive backward kernels, their fusion by the passes, and the autograd ops.

CPU: the kernels run in normfuse's TTIR interpreter before and after the default pipeline
(cluster-reduce / epilogue-norm must apply to the dX-with-norm-backward kernel) against fp64;
the backward custom ops run end to end with their launches interpreted (the same TTIR the GPU
would run, through the passes) against torch.autograd in fp64; bad input raises, naming it.
GPU (marked): gradients of the four ops and of the block vs fp64, within 1.5x eager PyTorch's
error in the same dtype; a short training run of the block; torch.compile over the custom ops.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import normfuse  # noqa: E402
from normfuse.kernels.backward import dw_norm_naive, norm_backward_naive, row_stats  # noqa: E402
from normfuse.kernels.postnorm_gemm import (linear_layernorm_train_naive,  # noqa: E402
                                            linear_rmsnorm_train_naive)
from normfuse.reference import linear_norm_ref, rel_err  # noqa: E402
from normfuse.testing import check_pass_numerics  # noqa: E402
from normfuse.testing.interpreter import cluster_dims, run_ir  # noqa: E402
from normfuse.testing.numerics import launch_signature  # noqa: E402
from normfuse.ops.prenorm_linear import _ensure_allocator as _REAL_ENSURE_ALLOCATOR  # noqa: E402

EPS = 1e-5
REF_TOL = 1.5e-2  # bf16 kernels (interpreted) vs fp64, Frobenius


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _stats64(x, is_ln):
    x = x.double()
    if is_ln:
        mean = x.mean(1)
        rstd = torch.rsqrt(((x - mean[:, None]) ** 2).mean(1) + EPS)
    else:
        mean = torch.zeros(x.shape[0], dtype=torch.float64)
        rstd = torch.rsqrt((x * x).mean(1) + EPS)
    return rstd, mean


def _norm_bwd_ref(du, x, g, beta, is_ln, act):
    """fp64: dx, dg, dbeta of n = norm(x) g + beta, given du = dL/d(act(n)) (act: SiLU or none)."""
    x = x.double().requires_grad_(True)
    gg = g.double().requires_grad_(True)
    bb = beta.double().requires_grad_(True) if beta is not None else None
    if is_ln:
        n = F.layer_norm(x, (x.shape[1],), gg, bb, EPS)
    else:
        n = x * torch.rsqrt((x * x).mean(1, keepdim=True) + EPS) * gg
    out = F.silu(n) if act else n
    out.backward(du.double())
    return x.grad, gg.grad, (bb.grad if bb is not None else None)


# ---------------------------------------------------------------------------------------------
# The dX-with-norm-backward kernel: naive vs fused (the passes) vs fp64
# ---------------------------------------------------------------------------------------------

M, R = 70, 40  # ragged: 3 row blocks of 32 (the last 6 rows), R over 3 tiles of 16 (ragged)
# (N = 96 and 128 with BLOCK_N = 32: 3 and 4 tiles; N = 64 in one tile)


def _dx_case(N, is_ln, act, gemm, dres, seed=0, mean=3.0, r=R):
    R = r
    gen = _gen(seed)
    dy = torch.randn(M, R if gemm else N, generator=gen).bfloat16()
    w = (torch.randn(R, N, generator=gen) * 0.2).bfloat16()
    x = (torch.randn(M, N, generator=gen) + mean).bfloat16()  # rows with |mean| >> std for LN
    rstd, mu = _stats64(x, is_ln)
    g = (0.5 + torch.rand(N, generator=gen)).bfloat16()
    b = torch.randn(N, generator=gen).bfloat16()
    r = torch.randn(M, N, generator=gen).bfloat16()
    nb = -(-M // 32)
    args = [dy, w, x, rstd.float(), mu.float(), g, b, r, torch.full((M, N), float("nan")).bfloat16(),
            torch.full((nb, N), float("nan")), torch.full((nb, N), float("nan")),
            torch.full((M, N), float("nan")).bfloat16(), M, R, dy.shape[1], N, N, N, N, N]
    du = (dy.double() @ w.double()) if gemm else dy.double()
    dx, dg, db = _norm_bwd_ref(du, x, g, b if (act and is_ln) else None, is_ln, act)
    if dres:
        dx = dx + r.double()
    if not is_ln or not act:
        db = du.sum(0) if not act else db
    xn = (x.double() - mu[:, None]) * rstd[:, None] * g.double()
    if is_ln:
        xn = xn + b.double()
    return args, (dx, dg, db, xn)


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
@pytest.mark.parametrize("N,BN,ctas", [(64, 64, 1), (96, 32, 3), (128, 32, 4)],
                         ids=["one-tile", "3-cta", "4-cta"])
@pytest.mark.parametrize("act,dres,even_r", [(0, False, False), (1, True, False), (0, False, True)],
                         ids=["prenorm-dx", "regrouped", "prenorm-dx-even-r"])
def test_norm_backward_kernel_fused_by_passes(is_ln, N, BN, ctas, act, dres, even_r):
    args, (dx, dg, db, xn) = _dx_case(N, is_ln, act, True, dres, seed=N + act,
                                      r=48 if even_r else R)
    # the pre-norm cases also write the norm's output n for the dW GEMM (HAS_XN; LayerNorm: + beta)
    has_xn = act == 0
    consts = dict(N=N, BLOCK_M=32, BLOCK_N=BN, BLOCK_R=16, IS_LN=is_ln, HAS_GEMM=True, HAS_G=True,
                  HAS_B=is_ln, ACT=act, HAS_DRES=dres, HAS_DG=True, EVEN_R=even_r, HAS_XN=has_xn)
    res = check_pass_numerics(norm_backward_naive, args, constexprs=consts, grid=(3,),
                              passes="default", num_warps=4)
    assert res.num_ctas == ctas, res.remarks
    assert any("[epilogue-norm] applied" in r for r in res.remarks), res.remarks
    if ctas > 1:
        assert any("[cluster-reduce] applied" in r for r in res.remarks), res.remarks
    # the fused kernel no longer stores du: one bf16 tile store left (the dg/dbeta partials are f32)
    assert res.ir_after.count("tt.store") < res.ir_before.count("tt.store")
    for run in (res.before, res.after):
        assert rel_err(run["DX"], dx) < REF_TOL
        assert rel_err(run["DGP"].sum(0), dg) < REF_TOL
        if is_ln:
            assert rel_err(run["DBP"].sum(0), db) < REF_TOL
        if has_xn:
            assert rel_err(run["XN"], xn) < REF_TOL
        else:
            assert run["XN"].isnan().all()  # HAS_XN off: nothing written there
    # fused vs the naive kernel: the fused one skips du's bf16 round trip, so it is not worse
    assert rel_err(res.after["DX"], dx) <= 1.5 * rel_err(res.before["DX"], dx) + 1e-4


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_norm_backward_without_gemm(is_ln):
    # the op-level post-norm backward: du = dz loaded, no GEMM: epilogue-norm still fuses one tile
    args, (dx, dg, db, _) = _dx_case(64, is_ln, 0, False, False, seed=7)
    consts = dict(N=64, BLOCK_M=32, BLOCK_N=64, BLOCK_R=16, IS_LN=is_ln, HAS_GEMM=False, HAS_G=True,
                  HAS_B=False, ACT=0, HAS_DRES=False, HAS_DG=True)
    res = check_pass_numerics(norm_backward_naive, args, constexprs=consts, grid=(3,),
                              passes="default", num_warps=4)
    assert any("[epilogue-norm] applied" in r for r in res.remarks), res.remarks
    assert rel_err(res.after["DX"], dx) < REF_TOL
    assert rel_err(res.after["DGP"].sum(0), dg) < REF_TOL


# ---------------------------------------------------------------------------------------------
# dW with the normalized prologue, row statistics, the post-norm training forward
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("is_ln,has_b", [(False, False), (True, True)], ids=["rms", "ln"])
def test_dw_kernel(is_ln, has_b):
    gen = _gen(3)
    NO, K = 40, 48
    dy = torch.randn(M, NO, generator=gen).bfloat16()
    x = (torch.randn(M, K, generator=gen) + 4.0).bfloat16()
    rstd, mu = _stats64(x, is_ln)
    g = (0.5 + torch.rand(K, generator=gen)).bfloat16()
    b = torch.randn(K, generator=gen).bfloat16()
    split, per = 2, 64  # two chunks of M (64 + 6 rows)
    out = torch.full((split, NO, K), float("nan"))
    args = [dy, x, rstd.float(), mu.float(), g, b, out, M, NO, per, NO, K]
    consts = dict(K=K, BLOCK_N=32, BLOCK_K=32, BLOCK_M=32, IS_LN=is_ln, HAS_G=True, HAS_B=has_b)
    res = check_pass_numerics(dw_norm_naive, args, constexprs=consts, grid=(2, 2, split),
                              passes="default", num_warps=4)
    xh = (x.double() - mu[:, None]) * rstd[:, None]
    ref = dy.double().t() @ (xh * g.double() + (b.double() if has_b else 0.0))
    assert rel_err(res.after["DW"].sum(0), ref) < REF_TOL
    assert res.max_rel_diff < 1e-6  # no pass applies to the plain GEMM with a prologue


def test_row_stats_large_mean():
    gen = _gen(4)
    x = (torch.randn(M, 200, generator=gen) + 200.0).bfloat16()  # |mean| / std = 200
    for is_ln in (False, True):
        rstd = torch.full((M,), float("nan"))
        mean = torch.full((M,), float("nan"))
        res = check_pass_numerics(row_stats, [x, rstd, mean, M, 200, 200, EPS],
                                  constexprs=dict(IS_LN=is_ln, BLOCK_M=32, BLOCK_K=64), grid=(3,),
                                  passes=(), num_warps=4)
        r64, m64 = _stats64(x, is_ln)
        assert rel_err(res.after["RSTD"], r64) < 1e-5
        if is_ln:
            assert rel_err(res.after["MEAN"], m64) < 1e-6


@pytest.mark.parametrize("kind,n,bn,ctas", [("rms", 64, 64, 1), ("ln", 128, 32, 4)])
def test_postnorm_training_forward_saves_h_and_stats(kind, n, bn, ctas):
    gen = _gen(5)
    K = 48
    x = torch.randn(M, K, generator=gen).bfloat16()
    w = (torch.randn(n, K, generator=gen) * 0.1).bfloat16()
    bias = torch.randn(n, generator=gen).bfloat16()
    res_ = (torch.randn(M, n, generator=gen) + 3).bfloat16()
    g = (0.5 + torch.rand(n, generator=gen)).bfloat16()
    b = torch.randn(n, generator=gen).bfloat16()
    nan = lambda *s: torch.full(s, float("nan"))  # noqa: E731
    y, h = nan(M, n).bfloat16(), nan(M, n).bfloat16()
    if kind == "rms":
        fn, args = linear_rmsnorm_train_naive, [x, w, bias, res_, g, y, h, nan(M), M, K, K, K, n, n, EPS]
    else:
        fn, args = linear_layernorm_train_naive, [x, w, bias, res_, g, b, y, h, nan(M), nan(M), M, K,
                                                  K, K, n, n, EPS]
    consts = dict(N=n, BLOCK_M=32, BLOCK_N=bn, BLOCK_K=32, EVEN_K=False, HAS_BIAS=True, HAS_RES=True)
    r = check_pass_numerics(fn, args, constexprs=consts, grid=(3,),
                            passes="cluster-reduce,epilogue-norm", num_warps=4)
    assert r.num_ctas == ctas
    assert any("[epilogue-norm] applied" in s for s in r.remarks), r.remarks
    h64 = x.double() @ w.double().t() + bias.double() + res_.double()
    assert rel_err(r.after["H"], h64) < 5e-3
    assert rel_err(r.after["Y"], linear_norm_ref(x, w, g, None if kind == "rms" else b, EPS, bias,
                                                 res_)) < 5e-3
    r64, m64 = _stats64(h64, kind == "ln")
    assert rel_err(r.after["RSTD"], r64) < 1e-4
    if kind == "ln":
        assert rel_err(r.after["MEAN"], m64) < 1e-4


# ---------------------------------------------------------------------------------------------
# The backward custom ops, end to end on the CPU with their launches interpreted
# ---------------------------------------------------------------------------------------------

class _Interpreted:
    """Stands in for a `normfuse.jit` launcher: compile for sm_90 through the same passes, run the
    TTIR in the interpreter (CPU tensors, written in place). Records the remarks."""

    def __init__(self, fn, passes, log):
        self.fn, self.passes, self.log = fn, passes, log

    def __getitem__(self, grid):
        def launch(*args, num_warps=4, num_stages=3, **consts):
            fn = self.fn
            for p in fn.params:
                if p.is_constexpr and p.name not in consts and p.has_default:
                    consts[p.name] = p.default
            sig, attrs = launch_signature(fn, args, consts)
            ck = normfuse.compile(fn, signature=sig, constexprs=consts, attrs=attrs,
                                  passes=self.passes, num_warps=num_warps, num_stages=num_stages)
            ir = ck.asm.get("normfuse", ck.asm["ttir"])
            self.log.extend(str(r) for r in ck.remarks)
            _need_allocator_like_triton(ir)
            run_ir(ir, list(args), grid, num_ctas=cluster_dims(ir))
        return launch


_SCRATCH_LAUNCHES: list = []  # the IR of every interpreted launch that needed global scratch


def _need_allocator_like_triton(ir: str) -> None:
    """What Triton's launcher does for a kernel with global scratch (device-side TMA descriptors,
    cluster-reduce{exchange=global}): take the allocator of the *calling* context (a ContextVar)
    and raise if there is none. The interpreter itself needs no allocator, so without this the
    CPU path could not see a launch that would fail on the GPU for lack of one."""
    if "tt.make_tensor_descriptor" not in ir and "global_scratch" not in ir:
        return
    _SCRATCH_LAUNCHES.append(ir)
    from triton.runtime import _allocation
    if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
        _allocation.NullAllocator()(0, 0, None)  # raises Triton's own RuntimeError


@pytest.fixture
def interpreted(monkeypatch):
    from normfuse.ops import inference, training
    from normfuse.kernels import backward
    log: list[str] = []
    # the ops run their fused path for CPU bf16 tensors (not the reference path)
    monkeypatch.setattr(inference, "fused_unavailable", lambda device: None)
    monkeypatch.setattr(training, "_launcher",
                        lambda name, passes="default": _Interpreted(getattr(backward, name),
                                                                    passes, log))
    monkeypatch.setattr(training, "_sms", lambda device: 4)
    monkeypatch.setattr("normfuse.ops.prenorm_linear._ensure_allocator", lambda: None)
    monkeypatch.setattr(training, "select_backward_config",
                        lambda N, gemm=True: dict(BLOCK_M=32, BLOCK_N=32, BLOCK_R=16, num_warps=4, num_stages=2))
    monkeypatch.setattr(training, "DW_CONFIG",
                        dict(BLOCK_N=32, BLOCK_K=32, BLOCK_M=32, num_warps=4, num_stages=2))
    return log


def _errs(got, ref64, eager):
    return rel_err(got, ref64), rel_err(eager, ref64)


def _check(name, got, ref, eager):
    e, e_eager = _errs(got, ref, eager)
    # within 1.5x eager PyTorch's error in the same dtype (bf16 on the CPU here)
    assert e <= 1.5 * e_eager + 1e-4, f"{name}: {e:.3e} vs eager {e_eager:.3e}"


@pytest.mark.parametrize("plan,dw_mode", [("fused", "xn"), ("fused", "prologue"), ("cublas", "xn")])
@pytest.mark.parametrize("is_ln,has_bias", [(False, True), (True, False), (True, True)],
                         ids=["rms-bias", "ln", "ln-bias"])
def test_prenorm_backward_op_matches_autograd(interpreted, monkeypatch, is_ln, has_bias, dw_mode,
                                              plan):
    """Both backward plans: "fused" (the dX GEMM with the norm backward in its epilogue) and
    "cublas" (dn = dY W by torch.mm, then the norm backward without the GEMM, writing n)."""
    from normfuse.ops import training
    monkeypatch.setattr(training, "PRENORM_DW", dw_mode)
    monkeypatch.setitem(training.PRENORM_BWD_PLAN, "layernorm_linear" if is_ln else "rmsnorm_linear",
                        plan)
    gemm_in_kernel = []
    real_nb = training.norm_backward
    monkeypatch.setattr(training, "norm_backward", lambda dy, w, *a, **k: (
        gemm_in_kernel.append(w is not None), real_nb(dy, w, *a, **k))[1])
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
    assert gemm_in_kernel == [plan == "fused"]
    if plan == "fused":  # the norm backward in the dX GEMM's epilogue, over 2 N tiles of 32
        assert any("[cluster-reduce] applied: row of 2 N tiles" in r for r in interpreted), interpreted
    bias = torch.zeros(NO).bfloat16() if has_bias else None

    def f(dtype):
        ts = [t.to(dtype).requires_grad_(True) if t is not None else None for t in (x, g, beta, w, bias)]
        xx, gg, bb, ww, bi = ts
        n = (F.layer_norm(xx, (K,), gg, bb, EPS) if is_ln else
             F.rms_norm(xx, (K,), gg, EPS))
        F.linear(n, ww, bi).backward(dy.to(dtype))
        return [t.grad if t is not None else None for t in ts]

    ref, eager = f(torch.float64), f(torch.bfloat16)
    for name, got, r, e in zip(["dx", "dg", "dbeta", "dw", "db"], [dx, dg, dbeta, dw, db], ref, eager):
        if r is None:
            assert got.numel() == 0
            continue
        _check(name, got, r, e)


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


def mlp_reference(x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, is_ln):
    """The block in plain torch: norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x)."""
    def norm(h, g, b):
        return (F.layer_norm(h, (h.shape[-1],), g, b, eps) if is_ln else
                F.rms_norm(h, (h.shape[-1],), g, eps))
    a = F.silu(norm(F.linear(x, w1, b1), g1, beta1))
    return norm(F.linear(a, w2, b2) + x, g2, beta2)


def _mlp_params(gen, D, H, is_ln, dtype=torch.bfloat16, device="cpu"):
    def r(*s, scale=1.0, shift=0.0):
        return (torch.randn(*s, generator=gen) * scale + shift).to(device=device, dtype=dtype)
    return dict(w1=r(H, D, scale=D ** -0.5), g1=r(H, scale=0.2, shift=1.0),
                beta1=r(H, scale=0.1) if is_ln else None, b1=r(H, scale=0.1),
                w2=r(D, H, scale=H ** -0.5), g2=r(D, scale=0.2, shift=1.0),
                beta2=r(D, scale=0.1) if is_ln else None, b2=r(D, scale=0.1))


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_block_backward_regrouped_matches_autograd(interpreted, is_ln):
    from normfuse.ops import training
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


def test_training_bad_input_raises_naming_it():
    from normfuse.ops import layernorm_linear, linear_rmsnorm, postnorm_mlp, rmsnorm_linear
    x = torch.randn(4, 64, dtype=torch.bfloat16, requires_grad=True)
    g = torch.ones(64, dtype=torch.bfloat16)
    w = torch.randn(32, 64, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="folded=True is not supported under autograd"):
        rmsnorm_linear(x, None, w, folded=True)
    with pytest.raises(NotImplementedError, match="persistent=True is not supported"):
        layernorm_linear(x, g, g, w, persistent=True)
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


# ---------------------------------------------------------------------------------------------
# GPU: gradients of every input vs fp64, within 1.5x eager's error in the same dtype
# ---------------------------------------------------------------------------------------------

def _grads(fn, tensors, dy):
    """Gradients of fn(*tensors) . dy w.r.t. every tensor (None entries skipped)."""
    ts = [t.detach().clone().requires_grad_(True) if t is not None else None for t in tensors]
    out = fn(*ts)
    out.backward(dy.to(out.dtype))
    return out.detach(), [t.grad if t is not None else None for t in ts]


def _compare_grads(names, got, ref, eager, what):
    for n, a, r, e in zip(names, got, ref, eager):
        if r is None:
            assert a is None, f"{what}: {n} got a gradient"
            continue
        assert a is not None, f"{what}: no gradient for {n}"
        assert torch.isfinite(a).all(), f"{what}: non-finite gradient for {n}"
        err, err_e = rel_err(a, r), rel_err(e, r)
        assert err <= 1.5 * err_e + 1e-4, f"{what}: d{n} error {err:.3e} vs eager {err_e:.3e}"


def _dev(*shape, dtype, gen, scale=1.0, shift=0.0):
    return (torch.randn(*shape, generator=gen, device="cuda") * scale + shift).to(dtype)


BF, HF = torch.bfloat16, torch.float16
# ragged shapes in both dtypes, one large one (16-CTA clusters in backward) in bf16
PRE_CASES = [((1000, 520, 300), BF), ((1000, 520, 300), HF), ((77, 64, 96), HF),
             ((4096, 1024, 2048), BF)]
POST_CASES = [((1000, 300, 520), BF), ((1000, 300, 520), HF), ((77, 96, 64), HF),
              ((4096, 2048, 1024), BF)]


def _case_id(c):
    return "x".join(map(str, c[0])) + ("-bf16" if c[1] is BF else "-fp16")


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
    from normfuse.ops import linear_layernorm, linear_rmsnorm
    Mx, K, NO = shape
    gen = torch.Generator(device="cuda").manual_seed(Mx + NO)
    x = _dev(Mx, K, dtype=dtype, gen=gen)
    w = _dev(NO, K, dtype=dtype, gen=gen, scale=K ** -0.5)
    g = _dev(NO, dtype=dtype, gen=gen, scale=0.2, shift=1.0)
    beta = _dev(NO, dtype=dtype, gen=gen, scale=0.2) if kind == "ln" else None
    bias = _dev(NO, dtype=dtype, gen=gen) if "bias" in extras else None
    res = _dev(Mx, NO, dtype=dtype, gen=gen, shift=20.0 if kind == "ln" else 0.0) if "res" in extras else None
    dz = _dev(Mx, NO, dtype=dtype, gen=gen)
    if kind == "rms":
        ours = lambda x, w, g, b, bi, r: linear_rmsnorm(x, w, g, 1e-6, bi, r)  # noqa: E731

        def eager(x, w, g, b, bi, r):
            h = F.linear(x, w, bi)
            return F.rms_norm(h + r if r is not None else h, (NO,), g, 1e-6)
    else:
        ours = lambda x, w, g, b, bi, r: linear_layernorm(x, w, g, b, 1e-5, bi, r)  # noqa: E731

        def eager(x, w, g, b, bi, r):
            h = F.linear(x, w, bi)
            return F.layer_norm(h + r if r is not None else h, (NO,), g, b, 1e-5)
    ts = (x, w, g, beta, bias, res)
    z, got = _grads(ours, ts, dz)
    zr, ref = _grads(eager, [t.double() if t is not None else None for t in ts], dz)
    ze, eag = _grads(eager, ts, dz)
    _compare_grads(["x", "weight", "norm_weight", "norm_bias", "bias", "residual"], got, ref, eag,
                   f"linear_{kind}norm {shape} {dtype}")
    assert rel_err(z, zr) <= 1.5 * rel_err(ze, zr) + 1e-4, ("forward", rel_err(z, zr), rel_err(ze, zr))


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


def _sgd_losses(m, ref, x, target, *, lr: float, steps: int):
    """The MSE losses of `steps` SGD steps of PostNormMLP `m` (its fused forward) and of `ref`
    (the same weights, its eager `reference` forward): (ours, eager)."""
    losses = []
    for mod, fwd in ((m, m.forward), (ref, ref.reference)):
        opt = torch.optim.SGD(mod.parameters(), lr=lr)
        ls = []
        for _ in range(steps):
            opt.zero_grad()
            loss = F.mse_loss(fwd(x).float(), target.float())
            loss.backward()
            opt.step()
            ls.append(loss.item())
        losses.append(ls)
    return losses[0], losses[1]


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


def _check_from_modules(a, b, x0, r):
    """`from_modules(a, b)` against the torch modules: the output, then the gradients of x and of
    the Linear weight for the loss sum(y * r). A random projection r, not sum(y^2): that of a
    unit-gain norm's output is N * ms / (ms + eps), nearly constant, and its gradient is rounding
    noise on both sides."""
    from torch import nn
    from normfuse.nn import from_modules
    fused = from_modules(a, b)
    x = x0.clone().requires_grad_(True)
    xr = x0.clone().requires_grad_(True)
    y = fused(x)
    yr = b(a(xr))
    assert rel_err(y, yr) < 1e-2
    (y.float() * r).sum().backward()
    (yr.float() * r).sum().backward()
    assert rel_err(x.grad, xr.grad) < 2e-2
    assert rel_err(fused.weight.grad, (b if isinstance(b, nn.Linear) else a).weight.grad) < 2e-2


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


@pytest.mark.parametrize("N,ctas", [(96, 1), (512, 4), (2048, 16)])
@pytest.mark.parametrize("is_ln,act,gemm", [(False, 0, True), (True, 1, True), (True, 0, False)],
                         ids=["pre-rms-dx", "regrouped-ln", "post-ln-op-level"])
def test_aot_backward_kernel_as_the_op_launches_it(N, ctas, is_ln, act, gemm):
    """The norm-backward kernel at the ops' config (select_backward_config), compiled for sm_90
    with the launch's specialization (16-byte aligned pointers and strides): the passes' form
    (a cluster of cdiv(N, 128) CTAs when there is a GEMM), ptxas accepts it, no spills."""
    import warnings
    from normfuse.ops.training import select_backward_config
    cfg = select_backward_config(N, gemm)
    sig = {n: ("*fp32" if n in ("RSTD", "MEAN", "DGP", "DBP") else "*bf16")
           for n in ("DY", "W", "X", "RSTD", "MEAN", "G", "B", "DRES", "DX", "DGP", "DBP", "XN")}
    sig.update({n: "i32" for n in ("M", "R", "stride_dym", "stride_wr", "stride_xm", "stride_drm",
                                   "stride_dxm", "stride_xnm")})
    consts = dict(N=N, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_R=cfg["BLOCK_R"],
                  IS_LN=is_ln, HAS_GEMM=gemm, HAS_G=True, HAS_B=is_ln, ACT=act, HAS_DRES=False,
                  HAS_DG=True, EVEN_R=True)
    sig.update({k: "constexpr" for k in consts})
    aligned = [i for i, n in enumerate(sig) if sig[n].startswith("*") or n.startswith("stride")]
    with warnings.catch_warnings():
        # the GEMM form's default (cluster-m128) spills a little, measured faster than the
        # 64-row form that does not (default_backward_tiling); without the GEMM: no spills
        warnings.simplefilter("ignore" if gemm else "error", normfuse.SpillWarning)
        ck = normfuse.compile(norm_backward_naive, signature=sig, constexprs=consts,
                              attrs={(i,): [["tt.divisibility", 16]] for i in aligned},
                              target="cuda:90", num_warps=cfg["num_warps"],
                              num_stages=cfg["num_stages"], passes="default")
    applied = " ".join(r for r in map(str, ck.remarks) if "applied" in r)
    if gemm and ctas > 1:
        assert f"split over a {ctas}-CTA cluster" in applied, ck.remarks
        assert "barrier.cluster" in ck.asm["ptx"]
    if ctas == 1 or not gemm:  # without the GEMM the default is one CTA per whole row
        assert "[epilogue-norm] applied" in applied, ck.remarks
    assert ck.resources()["spill_stores"] <= (128 if gemm else 0), ck.resources()


# ---------------------------------------------------------------------------------------------
# The whole training path on the CPU: the ops' forward and backward under torch.autograd, every
# launch (the fused forward kernels too) compiled for sm_90 through the passes and interpreted
# ---------------------------------------------------------------------------------------------

class _FakeCK:
    """normfuse's CompiledKernel as the ops launch it: `launch(grid, full, runtime_args)` and,
    through `.kernel[grid](*full)`, Triton's launcher (every argument, constexprs included)."""
    lowered = None

    def __init__(self, ir, n_runtime, pipeline=""):
        self.ir, self.n_runtime, self.pipeline = ir, n_runtime, pipeline

    def launch(self, grid, full, runtime_args=()):
        _need_allocator_like_triton(self.ir)
        run_ir(self.ir, list(runtime_args), tuple(grid), num_ctas=cluster_dims(self.ir))

    @property
    def kernel(self):
        ck = self

        class _Triton:
            name = "interpreted"
            metadata = SimpleNamespace(num_ctas=cluster_dims(ck.ir), shared=0)
            function = id(ck)

            def _init_handles(self):
                # no module to load; the driver's answer to normfuse.device's occupancy query
                # for a cluster kernel: clusters fit (7 at once)
                from normfuse import device
                if self.metadata.num_ctas > 1:
                    device._OCCUPANCY.setdefault((self.function, 0, self.metadata.num_ctas), 7)

            def __getitem__(self, grid):
                return lambda *full: ck.launch(grid, full, full[:ck.n_runtime])
        return _Triton()


class _FakeJIT(_Interpreted):
    """A `normfuse.jit` launcher (warmup + [grid]) whose kernels run in the interpreter."""

    def warmup(self, *args, num_warps=4, num_stages=3, **consts):
        holder = {}
        real_run = run_ir
        import normfuse.testing.interpreter as interp  # noqa: F401
        # compile exactly as _Interpreted does, but keep the IR instead of running it
        globals()["run_ir"] = lambda ir, a, g, num_ctas=1: holder.setdefault("ir", ir)
        try:
            self[(1,)](*args, num_warps=num_warps, num_stages=num_stages, **consts)
        finally:
            globals()["run_ir"] = real_run
        return _FakeCK(holder["ir"], len(args), str(self.passes))


@pytest.fixture
def cpu_training(monkeypatch, interpreted):
    """The training path with CUDA-only pieces replaced: launches interpreted, 4 'SMs', no device
    check (everything else of the ops' validation runs)."""
    from normfuse.kernels import postnorm_gemm
    from normfuse.ops import inference, postnorm_linear as post, prenorm_linear as pre, training
    log = interpreted
    monkeypatch.setattr(pre, "get_launcher", lambda kind, passes="default": _FakeJIT(
        pre._kernel(kind), passes, log))
    monkeypatch.setattr(post, "get_postnorm_launcher", lambda kind, passes=None: _FakeJIT(
        post._kernel(kind), passes, log))
    monkeypatch.setattr(training, "_post_train_launcher", lambda name: _FakeJIT(
        getattr(postnorm_gemm, name), post.DEFAULT_POSTNORM_PASSES, log))
    monkeypatch.setattr(pre, "sm_count", lambda device: 4)
    monkeypatch.setattr(post, "sm_count", lambda device: 4)
    monkeypatch.setattr(training, "sm_count", lambda device: 4)
    monkeypatch.setattr(pre, "_check_hopper", lambda op, device: None)
    monkeypatch.setattr(post, "check_hopper", lambda op, device: None)
    from normfuse import device
    monkeypatch.setattr(device, "_OCCUPANCY", {})  # (the interpreted kernels' stand-in handles)
    # the public functions take CPU bf16 tensors for the fused path
    return log


def _train_case(fn, eager, tensors, dout):
    got_out, got = _grads(fn, tensors, dout)
    ref_out, ref = _grads(eager, [t.double() if t is not None else None for t in tensors], dout)
    e_out, eag = _grads(eager, tensors, dout)
    return (got_out, ref_out, e_out), got, ref, eag


@pytest.mark.parametrize("op", ["rmsnorm_linear", "layernorm_linear", "linear_rmsnorm",
                                "linear_layernorm"])
def test_cpu_training_ops_end_to_end(cpu_training, op):
    from normfuse import ops
    gen = _gen(21)
    Mx, K, NO = 45, 64, 96  # post-norm rows of 96 (one 128-column tile)
    bf = torch.bfloat16
    x = (torch.randn(3, 15, K, generator=gen) + (4.0 if op == "layernorm_linear" else 0.0)).to(bf)
    w = (torch.randn(NO, K, generator=gen) * K ** -0.5).to(bf)
    bias = (torch.randn(NO, generator=gen) * 0.1).to(bf)
    pre_ = op.endswith("_linear")
    L = K if pre_ else NO
    g = (1 + 0.2 * torch.randn(L, generator=gen)).to(bf)
    beta = (0.2 * torch.randn(L, generator=gen)).to(bf) if "layer" in op else None
    res = (torch.randn(3, 15, NO, generator=gen) + 2.0).to(bf)
    dout = torch.randn(3, 15, NO, generator=gen).to(bf)
    if op == "rmsnorm_linear":
        fn = lambda x, w, g, b, bi, r: ops.rmsnorm_linear(x, g, w, 1e-6, bi)  # noqa: E731
        eager = lambda x, w, g, b, bi, r: F.linear(F.rms_norm(x, (K,), g, 1e-6), w, bi)  # noqa: E731
        res = None
    elif op == "layernorm_linear":
        fn = lambda x, w, g, b, bi, r: ops.layernorm_linear(x, g, b, w, 1e-5, bi)  # noqa: E731
        eager = lambda x, w, g, b, bi, r: F.linear(F.layer_norm(x, (K,), g, b, 1e-5), w, bi)  # noqa: E731
        res = None
    elif op == "linear_rmsnorm":
        fn = lambda x, w, g, b, bi, r: ops.linear_rmsnorm(x, w, g, 1e-6, bi, r)  # noqa: E731
        eager = lambda x, w, g, b, bi, r: F.rms_norm(F.linear(x, w, bi) + r, (NO,), g, 1e-6)  # noqa: E731
    else:
        fn = lambda x, w, g, b, bi, r: ops.linear_layernorm(x, w, g, b, 1e-5, bi, r)  # noqa: E731
        eager = lambda x, w, g, b, bi, r: F.layer_norm(F.linear(x, w, bi) + r, (NO,), g, b, 1e-5)  # noqa: E731
    outs, got, ref, eag = _train_case(fn, eager, (x, w, g, beta, bias, res), dout)
    _compare_grads(["x", "weight", "norm_weight", "norm_bias", "bias", "residual"], got, ref, eag, op)
    assert rel_err(outs[0], outs[1]) <= 1.5 * rel_err(outs[2], outs[1]) + 1e-4
    assert any("applied" in r for r in cpu_training), cpu_training


def test_cpu_fused_path_lists_offset_strided(cpu_training):
    """API v1 on the fused path (kernels interpreted): siblings [w0, w1] with w1 a strided view
    (Conv1D layout), a bias list with a None entry, offset=1.0 (Gemma), in inference (folded,
    concatenated, unit-stride copy) and in training (gradients to every sibling), against fp64
    within 1.5x eager bf16's error; the post-norm op with a strided weight and offset."""
    from normfuse import ops
    gen = _gen(31)
    bf = torch.bfloat16
    K = 64
    x = torch.randn(2, 20, K, generator=gen).to(bf)
    w0 = (torch.randn(32, K, generator=gen) * K ** -0.5).to(bf)
    w1 = (torch.randn(K, 64, generator=gen) * K ** -0.5).to(bf).t()  # [64, K], strides (1, 64)
    b0 = (0.1 * torch.randn(32, generator=gen)).to(bf)
    g = (0.2 * torch.randn(K, generator=gen)).to(bf)
    dy = torch.randn(2, 20, 96, generator=gen).to(bf)

    def ours(x, g, w0, w1, b0):
        return ops.rmsnorm_linear(x, g, [w0, w1], 1e-6, [b0, None], offset=1.0)

    def eager(x, g, w0, w1, b0):
        n = F.rms_norm(x, (K,), g + 1.0, 1e-6)
        return torch.cat([F.linear(n, w0, b0), F.linear(n, w1)], -1)
    ins = (x, g, w0, w1, b0)
    with torch.no_grad():
        y = ours(*ins)
        want = eager(*[t.double() for t in ins])
        assert y.shape == (2, 20, 96)
        assert rel_err(y, want) <= 1.5 * rel_err(eager(*ins), want) + 1e-4
        yl = ops.layernorm_linear(x, g, b0[:1].expand(K).contiguous(), [w0, w1], 1e-5,
                                  offset=1.0, fold=False, tma=False)  # g + 1 in the k-loop
        wl = F.layer_norm(x.double(), (K,), g.double() + 1.0, b0[:1].double().expand(K), 1e-5)
        wl = F.linear(wl, torch.cat([w0, w1]).double())
        assert rel_err(yl, wl) < 1.5e-2
    got_out, got = _grads(ours, ins, dy)
    ref_out, ref = _grads(eager, [t.double() for t in ins], dy)
    e_out, eag = _grads(eager, ins, dy)
    _compare_grads(["x", "norm_weight", "w0", "w1", "b0"], got, ref, eag, "siblings")
    assert rel_err(got_out, ref_out) <= 1.5 * rel_err(e_out, ref_out) + 1e-4
    # post-norm: strided weight, offset
    gp = (0.2 * torch.randn(64, generator=gen)).to(bf)
    res = torch.randn(2, 20, 64, generator=gen).to(bf)
    post = lambda x, w, g, r: ops.linear_rmsnorm(x, w, g, 1e-6, None, r, offset=1.0)  # noqa: E731
    post_e = lambda x, w, g, r: F.rms_norm(F.linear(x, w) + r, (64,), g + 1.0, 1e-6)  # noqa: E731
    pins = (x, w1, gp, res)
    dz = dy[..., :64]
    got_out, got = _grads(post, pins, dz)
    ref_out, ref = _grads(post_e, [t.double() for t in pins], dz)
    e_out, eag = _grads(post_e, pins, dz)
    _compare_grads(["x", "weight", "norm_weight", "residual"], got, ref, eag, "post-norm")
    assert rel_err(got_out, ref_out) <= 1.5 * rel_err(e_out, ref_out) + 1e-4
    assert any("applied" in r for r in cpu_training), cpu_training


@pytest.mark.parametrize("layernorm", [False, True], ids=["rms", "ln"])
def test_cpu_training_block_end_to_end(cpu_training, layernorm):
    """PostNormMLP (module) forward + backward under autograd: the regrouped fusion applies."""
    from normfuse.nn import PostNormMLP
    torch.manual_seed(5)
    m = PostNormMLP(32, 96, layernorm=layernorm, dtype=torch.bfloat16)
    with torch.no_grad():
        m.g1.uniform_(0.5, 1.5)
        m.g2.uniform_(0.5, 1.5)
    gen = _gen(22)
    x = torch.randn(40, 32, generator=gen).bfloat16()
    dout = torch.randn(40, 32, generator=gen).bfloat16()
    names = ["w1", "g1", "beta1", "b1", "w2", "g2", "beta2", "b2"]
    ps = [getattr(m, n) for n in names]
    cpu_training.clear()
    out, got = _grads(lambda x: m(x), [x], dout)
    got = got + [p.grad if p is not None else None for p in ps]
    # the regrouping: norm1's backward over 96 columns in the epilogue of linear 2's dX GEMM
    assert any("[cluster-reduce] applied: row of 3 N tiles" in r for r in cpu_training), cpu_training
    ref_fn = lambda x, *ps: mlp_reference(x, *ps, m.eps, layernorm)  # noqa: E731
    ro, ref = _grads(ref_fn, [t.double() if t is not None else None for t in [x] + ps], dout)
    eo, eag = _grads(ref_fn, [x] + ps, dout)
    _compare_grads(["x"] + names, got, ref, eag, "PostNormMLP")
    assert rel_err(out, ro) <= 1.5 * rel_err(eo, ro) + 1e-4


def test_cpu_training_run_of_the_block_like_eager(cpu_training):
    """A few SGD steps of PostNormMLP (interpreted kernels) next to the same steps in eager bf16:
    the loss goes down, step by step with eager's."""
    from normfuse.nn import PostNormMLP
    torch.manual_seed(6)
    m = PostNormMLP(32, 64, dtype=torch.bfloat16)
    ref = PostNormMLP(32, 64, dtype=torch.bfloat16)
    ref.load_state_dict(m.state_dict())
    gen = _gen(23)
    x = torch.randn(48, 32, generator=gen).bfloat16()
    target = (0.5 * torch.randn(48, 32, generator=gen)).bfloat16()
    ours, eager = _sgd_losses(m, ref, x, target, lr=0.3, steps=6)
    assert ours[-1] < 0.9 * ours[0], ours
    # seen: 1.2078 -> 1.0047 vs eager 1.2080 -> 1.0050
    assert max(abs(a - b) for a, b in zip(ours, eager)) <= 0.005 * eager[0], (ours, eager)


@pytest.mark.parametrize("op", ["pre", "post", "block"])
def test_cpu_torch_compile_fullgraph_over_the_custom_ops(cpu_training, op):
    """torch.compile(fullgraph=True) captures the ops (no graph break: the custom ops' fake
    implementations give the shapes), and the compiled function's gradients equal eager ones."""
    from normfuse import ops
    torch._dynamo.reset()
    gen = _gen(24)
    bf = torch.bfloat16
    x = torch.randn(40, 32, generator=gen).to(bf).requires_grad_(True)
    g = (1 + 0.1 * torch.randn(32, generator=gen)).to(bf).requires_grad_(True)
    w = (0.2 * torch.randn(32, 32, generator=gen)).to(bf).requires_grad_(True)
    g2 = (1 + 0.1 * torch.randn(32, generator=gen)).to(bf).requires_grad_(True)
    if op == "pre":
        def f(x, g, w, g2):
            return ops.rmsnorm_linear(x, g, w).float().square().sum()
    elif op == "post":
        def f(x, g, w, g2):
            return ops.linear_layernorm(x, w, g, g2, residual=x).float().square().sum()
    else:
        def f(x, g, w, g2):
            return ops.postnorm_mlp(x, w, g, None, None, w.t().contiguous(), g2, None, None).float().square().sum()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    grads = torch.autograd.grad(compiled(x, g, w, g2), (x, g, w, g2), allow_unused=True)
    grads_e = torch.autograd.grad(f(x, g, w, g2), (x, g, w, g2), allow_unused=True)
    for a, b in zip(grads, grads_e):
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.equal(a, b)


def test_cpu_gpu_backward_benchmark_code_path(cpu_training, tmp_path):
    """normfuse.repro.bench_training's benchmark on one tiny cell on the CPU (interpreted kernels,
    each timed function called once, aot_eager instead of inductor): every op gets a record with
    the times, hidden_pct and no error, and the markdown renders."""
    from normfuse.repro import bench_training as gb
    calls = []

    def timer(fn):
        fn()
        calls.append(1)
        return 1.0 + 0.01 * len(calls)

    recs = gb.bench_cells([(40, 32, 64)], str(tmp_path), 1e9, {"gpu": "cpu"}, device="cpu",
                          timer=timer, compile_backend="aot_eager")
    assert [r["op"] for r in recs] == [f"{o}.backward" for o in (
        "rmsnorm_linear", "layernorm_linear", "linear_rmsnorm", "linear_layernorm", "postnorm_mlp")]
    for r in recs:
        assert "error" not in r, r.get("traceback")
        for k in ("fwd_bwd_ours_ms", "fwd_bwd_eager_ms", "fwd_bwd_compiled_ms", "bwd_fused_ms",
                  "bwd_gemms_ms", "norm_bwd_ms", "hidden_pct"):
            assert isinstance(r[k], float), (k, r)
    md = gb.markdown(recs, {"counts": {"passed": 1}, "ok": True, "failures": []}, {"gpu": "cpu"})
    assert md.count("| postnorm_mlp.backward |") == 1
    assert all(r["grad_rel_diff_vs_eager"] < 5e-2 for r in recs), recs


def test_cpu_gpu_backward_tiling_sweep(cpu_training, monkeypatch):
    """The benchmark's tiling sweep on the CPU (interpreted kernels at the real tilings, a fake
    timer that favours the later candidates): every candidate is checked against the fp32
    reference and timed, and the choice is the fastest correct one per (gemm, D)."""
    from normfuse.ops import training
    from normfuse.repro import bench_training as gb
    monkeypatch.setattr(gb, "SWEEP_R", 48)
    n = []

    def timer(fn):
        fn()
        n.append(1)
        return 10.0 - len(n)  # each later candidate "faster"
    recs = gb.sweep_configs([64, 256], 40, timer=timer, device="cpu")
    assert all(r.get("ok") and "ms" in r for r in recs), [r for r in recs if not r.get("ok")]
    kinds = [(r["D"], r["kind"], r.get("tiling") or r.get("dw")) for r in recs]
    assert kinds == [(64, "dx_gemm", "cluster"), (64, "dh_no_gemm", "cluster"),
                     (64, "prenorm_bwd_dw", "xn"), (64, "prenorm_bwd_dw", "prologue"),
                     (256, "dx_gemm", "cluster"), (256, "dx_gemm", "cluster-m128"),
                     (256, "dh_no_gemm", "cluster"), (256, "dh_no_gemm", "row"),
                     (256, "prenorm_bwd_dw", "xn"), (256, "prenorm_bwd_dw", "prologue")]
    ch = gb.choose(recs)
    assert ch == {"tilings": {(True, 64): "cluster", (False, 64): "cluster",
                              (True, 256): "cluster-m128", (False, 256): "row"},
                  "prenorm_dw": "prologue"}
    monkeypatch.setattr(training, "BACKWARD_CONFIG_CHOICE", {})
    monkeypatch.setattr(training, "PRENORM_DW", "xn")
    gb.apply_choice(ch)
    assert training.PRENORM_DW == "prologue" and training.BACKWARD_CONFIG_CHOICE[(False, 256)] == "row"
    # a candidate that fails its check is never chosen
    bad = [dict(r, ok=False) if r.get("tiling") == "row" else r for r in recs]
    assert gb.choose(bad)["tilings"][(False, 256)] == "cluster"
    md = gb.markdown(recs, None, {"gpu": "cpu"})
    assert "| 256 | dh_no_gemm | row |" in md


# ---------------------------------------------------------------------------------------------
# Triton's allocator is per thread (a ContextVar); autograd runs a CUDA backward on a worker thread
# ---------------------------------------------------------------------------------------------

def _in_fresh_context(fn):
    """Run fn in an empty contextvars context: Triton's allocator unset, whatever ran before."""
    import contextvars
    return contextvars.Context().run(fn)


def test_allocator_set_in_every_thread_that_launches():
    """The H200 failures of test_gpu_postnorm_gradients / test_gpu_block_gradients at K >= 1024
    (2026-11-30): the first `_ensure_allocator()` of the run was norm_backward's, on autograd's
    CUDA worker thread; a process-wide "done" flag then kept the main thread at Triton's null
    allocator, and the post-norm training forward with bulk copies (global scratch) fails there."""
    import threading
    from triton.runtime import _allocation
    from normfuse.ops.prenorm_linear import _ensure_allocator

    def body():
        t = threading.Thread(target=_ensure_allocator)  # as autograd's device thread does
        t.start()
        t.join()
        assert isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
        _ensure_allocator()  # the main thread: the post-norm forward's _prepare
        assert not isinstance(_allocation._allocator.get(), _allocation.NullAllocator)
    _in_fresh_context(body)

    def users_own():  # an allocator the user set in this context stays
        import triton
        mine = lambda size, align, stream: None  # noqa: E731
        triton.set_allocator(mine)
        _ensure_allocator()
        assert _allocation._allocator.get() is mine
    _in_fresh_context(users_own)


@pytest.mark.parametrize("op", ["linear_rmsnorm", "linear_layernorm"])
def test_cpu_training_postnorm_bulk_copies_after_a_backward_on_another_thread(cpu_training,
                                                                               monkeypatch, op):
    """The GPU test order on the CPU: a pre-norm op trains first with its backward on another
    thread (as autograd runs a CUDA backward: the first `_ensure_allocator()` is norm_backward's,
    there); then a post-norm op with K = 1024 trains on the main thread, where its forward reads
    the tiles by bulk copies (device-side descriptors in global scratch: the launch needs
    Triton's allocator in this thread). Failed before the allocator was set per context."""
    import threading
    from normfuse import ops
    from normfuse.ops import prenorm_linear as pre
    monkeypatch.setattr(pre, "_ensure_allocator", _REAL_ENSURE_ALLOCATOR)  # the fixture stubs it
    gen = _gen(31)
    bf = torch.bfloat16
    Mx, K, NO = 40, 1024, 96
    x = torch.randn(Mx, K, generator=gen).to(bf)
    w = (torch.randn(NO, K, generator=gen) * K ** -0.5).to(bf)
    g = (1 + 0.2 * torch.randn(NO, generator=gen)).to(bf)
    beta = (0.2 * torch.randn(NO, generator=gen)).to(bf) if op == "linear_layernorm" else None
    dz = torch.randn(Mx, NO, generator=gen).to(bf)

    def body():
        xp = torch.randn(8, 64, generator=gen).to(bf).requires_grad_(True)
        y = ops.rmsnorm_linear(xp, torch.ones(64, dtype=bf), torch.randn(32, 64, generator=gen).to(bf))
        t = threading.Thread(target=lambda: y.float().sum().backward())
        t.start()
        t.join()
        assert xp.grad is not None
        _SCRATCH_LAUNCHES.clear()
        if op == "linear_rmsnorm":
            fn = lambda x, w, g, b: ops.linear_rmsnorm(x, w, g, 1e-6)  # noqa: E731
            eager = lambda x, w, g, b: F.rms_norm(F.linear(x, w), (NO,), g, 1e-6)  # noqa: E731
        else:
            fn = lambda x, w, g, b: ops.linear_layernorm(x, w, g, b, 1e-5)  # noqa: E731
            eager = lambda x, w, g, b: F.layer_norm(F.linear(x, w), (NO,), g, b, 1e-5)  # noqa: E731
        return _train_case(fn, eager, (x, w, g, beta), dz)
    outs, got, ref, eag = _in_fresh_context(body)
    # the forward read its tiles by bulk copies (the launch that needs the allocator)
    assert any("tt.descriptor_load" in ir for ir in _SCRATCH_LAUNCHES), len(_SCRATCH_LAUNCHES)
    _compare_grads(["x", "weight", "norm_weight", "norm_bias"], got, ref, eag, op)
    assert rel_err(outs[0], outs[1]) <= 1.5 * rel_err(outs[2], outs[1]) + 1e-4


# ---------------------------------------------------------------------------------------------
# The norm-backward kernel's tilings (the benchmark times them; select_backward_config picks one)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("N", [64, 96, 512, 1000, 1024, 4096, 8192])
@pytest.mark.parametrize("gemm", [True, False], ids=["gemm", "no-gemm"])
def test_backward_config_candidates(monkeypatch, N, gemm):
    from normfuse.ops import training
    cands = training.backward_config_candidates(N, gemm)
    assert "cluster" in cands
    for name, c in cands.items():
        assert set(c) == {"BLOCK_M", "BLOCK_N", "BLOCK_R", "num_warps", "num_stages"}, name
    row = 128 < N <= 4096 and not gemm
    assert ("row" in cands) == row
    if row:  # the whole row in one CTA, about 8192 elements
        c = cands["row"]
        assert c["BLOCK_N"] >= N and c["BLOCK_M"] * c["BLOCK_N"] == 8192
    assert ("cluster-m128" in cands) == (gemm and N > 128)
    assert ("cluster-n256" in cands) == (gemm and N >= 512)
    assert ("row-16k" in cands) == (row and N > 256)
    if "row-16k" in cands:
        c = cands["row-16k"]
        assert c["BLOCK_N"] >= N and c["BLOCK_M"] * c["BLOCK_N"] == 16384
    # nothing chosen: the measured default (m128 with the GEMM, the whole row without, when N has it)
    default = ("cluster-m128" if gemm and N > 128 else "row" if row else "cluster")
    assert training.default_backward_tiling(N, gemm) == default
    assert training.select_backward_config(N, gemm) == cands[default]
    for name in cands:
        monkeypatch.setitem(training.BACKWARD_CONFIG_CHOICE, (gemm, N), name)
        assert training.select_backward_config(N, gemm) == cands[name]
    # a choice this N has no such tiling for (e.g. "row" past 4096) keeps the default
    monkeypatch.setitem(training.BACKWARD_CONFIG_CHOICE, (gemm, N), "row" if gemm else "cluster-m128")
    assert training.select_backward_config(N, gemm) == cands[default]


@pytest.mark.parametrize("N", [1024, 2048])
@pytest.mark.parametrize("gemm,name", [(True, "cluster-m128"), (False, "row"), (True, "cluster"),
                                       (True, "cluster-n256"), (False, "row-16k")],
                         ids=["m128", "row", "cluster-xn", "n256", "row16k"])
def test_aot_backward_candidates(N, gemm, name):
    """Each tiling compiles for sm_90 through the passes in the form its name says: "row" and
    "row-16k" are one CTA per row block, fused by epilogue-norm alone (no cluster, no spills);
    the GEMM forms (writing n for the dW GEMM, as the pre-norm op launches them) are split over
    a cluster of N / BLOCK_N CTAs and fused by epilogue-norm too."""
    from normfuse.ops.training import backward_config_candidates
    cfg = backward_config_candidates(N, gemm)[name]
    sig = {n: ("*fp32" if n in ("RSTD", "MEAN", "DGP", "DBP") else "*bf16")
           for n in ("DY", "W", "X", "RSTD", "MEAN", "G", "B", "DRES", "DX", "DGP", "DBP", "XN")}
    sig.update({n: "i32" for n in ("M", "R", "stride_dym", "stride_wr", "stride_xm", "stride_drm",
                                   "stride_dxm", "stride_xnm")})
    consts = dict(N=N, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_R=cfg["BLOCK_R"],
                  IS_LN=True, HAS_GEMM=gemm, HAS_G=True, HAS_B=True, ACT=0, HAS_DRES=False,
                  HAS_DG=True, EVEN_R=True, HAS_XN=gemm)
    sig.update({k: "constexpr" for k in consts})
    aligned = [i for i, n in enumerate(sig) if sig[n].startswith("*") or n.startswith("stride")]
    ck = normfuse.compile(norm_backward_naive, signature=sig, constexprs=consts,
                          attrs={(i,): [["tt.divisibility", 16]] for i in aligned},
                          target="cuda:90", num_warps=cfg["num_warps"],
                          num_stages=cfg["num_stages"], passes="default")
    applied = " ".join(r for r in map(str, ck.remarks) if "applied" in r)
    assert "[epilogue-norm] applied" in applied, ck.remarks
    if gemm:
        assert f"split over a {N // cfg['BLOCK_N']}-CTA cluster" in applied, ck.remarks
        # n is stored once per tile next to dx: two bf16 tile stores in the fused kernel
        assert ck.asm["ttir"].count("tt.store") >= 2
    else:
        assert "cluster" not in applied and "barrier.cluster" not in ck.asm["ptx"], ck.remarks
        assert ck.resources()["spill_stores"] == 0


@pytest.mark.parametrize("gemm", [True, False], ids=["dx-gemm", "no-gemm"])
@pytest.mark.parametrize("N", [200, 640])
def test_every_tiling_fused_matches_fp64(gemm, N):
    """Each named tiling at its real tile sizes (not the small ones the op tests use): the kernel
    through the default passes, interpreted on the CPU on a ragged shape (rows and N not multiples
    of the tiles), against fp64; the pre-norm form (with the GEMM) also writes n."""
    from normfuse.ops.training import backward_config_candidates
    Mx, Rx, is_ln = 70, 48, True
    gen = _gen(N + gemm)
    dy = torch.randn(Mx, Rx if gemm else N, generator=gen).bfloat16()
    w = (torch.randn(Rx, N, generator=gen) * 0.2).bfloat16()
    x = (torch.randn(Mx, N, generator=gen) + 3.0).bfloat16()
    rstd, mu = _stats64(x, is_ln)
    g = (0.5 + torch.rand(N, generator=gen)).bfloat16()
    b = torch.randn(N, generator=gen).bfloat16()
    du = (dy.double() @ w.double()) if gemm else dy.double()
    dx, dg, _ = _norm_bwd_ref(du, x, g, None, is_ln, 0)
    xn = (x.double() - mu[:, None]) * rstd[:, None] * g.double() + b.double()
    for name, cfg in backward_config_candidates(N, gemm).items():
        nb = -(-Mx // cfg["BLOCK_M"])
        args = [dy, w, x, rstd.float(), mu.float(), g, b, dy, torch.full((Mx, N), float("nan")).bfloat16(),
                torch.full((nb, N), float("nan")), torch.full((nb, N), float("nan")),
                torch.full((Mx, N), float("nan")).bfloat16(), Mx, Rx, dy.shape[1], N, N, N, N, N]
        consts = dict(N=N, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], BLOCK_R=cfg["BLOCK_R"],
                      IS_LN=is_ln, HAS_GEMM=gemm, HAS_G=True, HAS_B=True, ACT=0, HAS_DRES=False,
                      HAS_DG=True, EVEN_R=Rx % cfg["BLOCK_R"] == 0, HAS_XN=gemm)
        res = check_pass_numerics(norm_backward_naive, args, constexprs=consts, grid=(nb,),
                                  passes="default", num_warps=cfg["num_warps"])
        assert any("[epilogue-norm] applied" in r for r in res.remarks), (name, res.remarks)
        run = res.after
        assert rel_err(run["DX"], dx) < REF_TOL, name
        assert rel_err(run["DGP"].sum(0), dg) < REF_TOL, name
        assert rel_err(run["DBP"].sum(0), du.sum(0)) < REF_TOL, name
        if gemm:
            assert rel_err(run["XN"], xn) < REF_TOL, name


@pytest.mark.parametrize("pair", ["rms-linear", "ln-linear", "linear-rms", "linear-ln"])
def test_cpu_modules_from_torch_train(cpu_training, pair):
    """`from_modules` of torch's norm and Linear modules, one backward through the CPU path: the
    output and the gradients of x and of the Linear weight like the torch modules' (K = 320 is
    ragged against the 128-column tiles, as in the GPU twin)."""
    from torch import nn
    torch.manual_seed(4)
    K, N = 320, 192
    mods = {"rms-linear": (nn.RMSNorm(K, eps=1e-6), nn.Linear(K, N)),
            "ln-linear": (nn.LayerNorm(K), nn.Linear(K, N)),
            "linear-rms": (nn.Linear(K, N), nn.RMSNorm(N, eps=1e-6)),
            "linear-ln": (nn.Linear(K, N), nn.LayerNorm(N))}[pair]
    a, b = (m.bfloat16() for m in mods)
    _check_from_modules(a, b, torch.randn(45, K, dtype=torch.bfloat16), torch.randn(45, N))


# ---------------------------------------------------------------------------------------------
# Every N: the norm-backward kernel's cluster form is one the driver launches (issue 20)
# ---------------------------------------------------------------------------------------------

class _ClusterLauncher:
    """A stand-in `normfuse.jit` launcher of the norm-backward kernel: clustered as
    cluster-reduce would (auto, max-cluster from the pipeline); a launch of a size the stubbed
    driver does not fit fails as normfuse.device.ensure_cluster_launch does."""

    def __init__(self, passes, tiles, fits, launched):
        self.passes, self.tiles, self.fits, self.launched = passes, tiles, fits, launched

    def ctas(self):
        import re
        from normfuse.passes.cluster_reduce import cluster_ctas
        if not self.passes:
            return 1
        m = re.search(r"max-cluster=(\d+)", self.passes)
        return cluster_ctas("auto", int(m.group(1)) if m else 16, self.tiles, "")

    def warmup(self, *args, **meta):
        from types import SimpleNamespace
        md = SimpleNamespace(num_ctas=self.ctas(), shared=70000)
        return SimpleNamespace(kernel=SimpleNamespace(metadata=md, function=self.ctas()))

    def __getitem__(self, grid):
        from normfuse.device import LaunchFailure

        def run(*args, **meta):
            c = self.ctas()
            if c > 1 and not self.fits(c):
                raise LaunchFailure("kernel norm_backward_naive", f"the driver fits no cluster of {c} CTAs",
                                    num_ctas=c, fits_none=True)
            self.launched.append((self.passes, c, grid))
        return run


@pytest.mark.parametrize("device,N,ctas", [("h200", 1152, 9), ("portable", 1152, 5),
                                           ("portable", 4160, 7), ("none", 2176, 1)])
def test_norm_backward_launches_the_form_the_driver_fits(monkeypatch, device, N, ctas):
    """norm_backward under the default pipeline: a launch refused because the device fits no
    cluster of the chosen size is made again in the rule's next form (ops/cluster_form.py); a
    pipeline given by the caller is not changed, and its failure names the op and the form."""
    from normfuse import device as launch
    from normfuse.ops import training
    fits = {"h200": lambda c: True, "portable": lambda c: c <= 8, "none": lambda c: False}[device]
    launched = []
    tiles = -(-N // 128)
    monkeypatch.setattr(training, "_launcher", lambda name, passes="default": _ClusterLauncher(
        passes, tiles, fits, launched))
    monkeypatch.setattr(training, "cluster_occupancy", lambda k: 7 if fits(k.metadata.num_ctas) else 0)
    monkeypatch.setattr(training, "_ensure_allocator", lambda: None)
    M, R = 257, 192
    g = torch.Generator().manual_seed(0)
    x = torch.randn(M, N, generator=g).bfloat16()
    dy = torch.randn(M, R, generator=g).bfloat16()
    w = torch.randn(R, N, generator=g).bfloat16()
    rstd = torch.ones(M)
    cfg = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_R=32, num_warps=8, num_stages=4)
    training.norm_backward(dy, w, x, rstd, rstd, None, None, None, is_ln=False, config=cfg,
                           op="rmsnorm_linear")
    want = ("default" if device == "h200" else
            training._backward_passes(ctas) if ctas > 1 else ())
    assert launched[-1] == (want, ctas, (3,)), launched
    if device == "h200":
        return
    with pytest.raises(launch.LaunchFailure) as e:
        training.norm_backward(dy, w, x, rstd, rstd, None, None, None, is_ln=False, config=cfg,
                               op="rmsnorm_linear", passes="cluster-reduce,epilogue-norm")
    first = _ClusterLauncher("default", tiles, fits, []).ctas()
    assert str(e.value).startswith(
        f"rmsnorm_linear: norm backward (RMSNorm, after the dX GEMM) launch failed for M=257, "
        f"N={N}, R=192, torch.bfloat16, tiles 128x128, form: {first}-CTA clusters"), str(e.value)
    assert "fits no cluster" in str(e.value)


# N for the GPU sweep of the norm-backward kernel with the dX GEMM (128-column tiles): one per
# cluster size 2..16 (one tile per CTA), deferred forms (17 -> 9 CTAs of 2, 24 -> 12 of 2,
# 33 -> 11 of 3, 64 -> 16 of 4), ragged widths
BWD_SWEEP_N = [128 * t for t in range(2, 17)] + [2176, 3072, 4160, 8192, 1000, 1864, 3080]


@pytest.mark.gpu
@pytest.mark.parametrize("N", BWD_SWEEP_N)
def test_gpu_every_n_norm_backward_kernel(monkeypatch, N):
    """The norm-backward kernel as the pre-norm ops' backward launches it (dX = normbwd(dY W),
    the 'cluster-m128' tiling: clusters of cdiv(N, 128) CTAs, deferred past 16) for every
    cluster size: launches in the rule's form, and dx, dg within 1.5x the unfused kernel's error
    vs fp64."""
    from normfuse.compiler import CompiledKernel
    from normfuse.ops.cluster_form import choose_cluster_form
    from normfuse.ops.training import norm_backward, select_backward_config
    is_ln = N % 3 == 0
    M, R = 257, 192
    gen = torch.Generator(device="cuda").manual_seed(N)
    x = _dev(M, N, dtype=BF, gen=gen, shift=3.0 if is_ln else 0.0)
    g = _dev(N, dtype=BF, gen=gen, scale=0.2, shift=1.0)
    beta = _dev(N, dtype=BF, gen=gen, scale=0.2) if is_ln else None
    w = _dev(R, N, dtype=BF, gen=gen, scale=R ** -0.5)
    dy = _dev(M, R, dtype=BF, gen=gen)
    xd = x.double()
    mean = xd.mean(1) if is_ln else torch.zeros(M, dtype=torch.float64, device="cuda")
    rstd = torch.rsqrt(((xd - mean[:, None]) ** 2 if is_ln else xd * xd).mean(1) + EPS)
    du = dy.double() @ w.double()
    ref = _norm_bwd_ref(du.cpu(), x.cpu(), g.cpu(), beta.cpu() if is_ln else None, is_ln, 0)
    outs, launched = {}, []
    real_launch = CompiledKernel.launch

    def spy(self, grid, args, runtime_args=None):  # what normfuse's launch ran, and its form
        launched.append((self.kernel.name, int(self.kernel.metadata.num_ctas)))
        return real_launch(self, grid, args, runtime_args)
    for passes in ((), "default"):
        with monkeypatch.context() as m:
            if passes:
                m.setattr(CompiledKernel, "launch", spy)
            outs[passes] = norm_backward(dy, w, x, rstd.float(), mean.float(), g, beta, None,
                                         is_ln=is_ln, passes=passes)
    torch.cuda.synchronize()
    for i, what in enumerate(("dx", "dg")):
        e0 = rel_err(outs[()][i].cpu(), ref[i])
        e1 = rel_err(outs["default"][i].cpu(), ref[i])
        assert e1 <= 1.5 * e0 + 1e-5, (what, N, e1, e0)
    # the form launched: the rule's (on the H200 every size fits: the pass's own choice)
    form = choose_cluster_form(-(-N // select_backward_config(N, gemm=True)["BLOCK_N"]),
                               lambda c: True)
    assert form.ctas > 1 and launched == [("norm_backward_naive", form.ctas)], (N, launched)
