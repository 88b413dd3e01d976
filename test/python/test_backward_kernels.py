"""Training (issue 10), the kernels: the naive backward kernels (dX with the norm backward, dW,
row statistics, the post-norm training forward) run in normfuse's TTIR interpreter before and
after the default pipeline (cluster-reduce / epilogue-norm must apply) against fp64; their AOT
forms for sm_90 at the ops' configs and tilings; the cluster form the driver fits (issue 20).
GPU (marked): the norm-backward kernel at every cluster size.
"""
from __future__ import annotations

import warnings

import pytest
from pathlib import Path

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402

import normfuse  # noqa: E402
from normfuse.kernels.backward import dw_norm_naive, norm_backward_naive, row_stats  # noqa: E402
from normfuse.kernels.postnorm_gemm import (linear_layernorm_train_naive,  # noqa: E402
                                            linear_rmsnorm_train_naive)
from normfuse.reference import linear_norm_ref, rel_err  # noqa: E402
from normfuse.testing import check_pass_numerics  # noqa: E402

from backward_common import (  # noqa: E402  (fixtures too)
    BF, BWD_SWEEP_N, EPS, M, R, REF_TOL, _ClusterLauncher, _dev, _dx_case, _gen, _norm_bwd_ref,
    _stats64)


_TILINGS = [((64, 64, 1), "one-tile"), ((96, 32, 3), "3-cta"), ((128, 32, 4), "4-cta")]
_FORMS = [((0, False, False), "prenorm-dx"), ((1, True, False), "regrouped"),
          ((0, False, True), "prenorm-dx-even-r")]


# the default suite: every (tiling, form) pair once, the norms alternating (9 of 18); `-m slow` all
@pytest.mark.parametrize("is_ln,N,BN,ctas,act,dres,even_r", [
    pytest.param(ln, *t, *f, id=f"{fid}-{tid}-{'ln' if ln else 'rms'}",
                 marks=() if (i + j + ln) % 2 == 0 else pytest.mark.slow)
    for ln in (False, True) for i, (t, tid) in enumerate(_TILINGS)
    for j, (f, fid) in enumerate(_FORMS)])
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


def test_row_stats_tiling_rule():
    """The statistics kernel's tiling rule: tiles of at most 4096 elements, at least 4 programs
    per SM where the rows allow it, the rows' whole K in one tile up to 1024; and the kernel at
    the rule's tiling (a ragged M, K not a power of two) matches fp64 in the interpreter."""
    from normfuse.ops.training import row_stats_config
    for Mx, K in ((8192, 2048), (8192, 5632), (262144, 1024), (70, 200), (3, 64)):
        c = row_stats_config(Mx, K, sms=132)
        assert c["BLOCK_M"] * c["BLOCK_K"] <= 4096 and c["BLOCK_K"] >= min(K, 1024)
        assert -(-Mx // c["BLOCK_M"]) >= 4 * 132 or c["BLOCK_M"] == 1
    assert row_stats_config(8192, 2048, sms=132)["BLOCK_M"] <= 4  # (was 64: 128 programs)
    Mx, K = 70, 200
    c = row_stats_config(Mx, K, sms=4)
    gen = _gen(6)
    x = (torch.randn(Mx, K, generator=gen) * 2 + 1).bfloat16()
    for is_ln in (False, True):
        rstd = torch.full((Mx,), float("nan"))
        mean = torch.full((Mx,), float("nan"))
        res = check_pass_numerics(row_stats, [x, rstd, mean, Mx, K, K, EPS],
                                  constexprs=dict(IS_LN=is_ln, BLOCK_M=c["BLOCK_M"],
                                                  BLOCK_K=c["BLOCK_K"]),
                                  grid=(-(-Mx // c["BLOCK_M"]),), passes=(),
                                  num_warps=c["num_warps"])
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


@pytest.mark.parametrize("N", [1024, pytest.param(2048, marks=pytest.mark.slow)])
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


@pytest.mark.parametrize("gemm", [pytest.param(True, marks=pytest.mark.slow), False],
                         ids=["dx-gemm", "no-gemm"])  # (with the GEMM: 7 s; no default plan runs it)
@pytest.mark.parametrize("N", [200, pytest.param(640, marks=pytest.mark.slow)])
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


def _rowdot_case(gen):
    """(M, N, R, (dy, w, x, rstd, mean, s1, s2)): the rowdot dX kernel's ragged interpreter case
    (M, N not multiples of the tiles, R of the 64 k-step)."""
    Mx, Nx, Rx = 200, 192, 96
    dy = torch.randn(Mx, Rx, generator=gen).bfloat16()
    w = (torch.randn(Rx, Nx, generator=gen) * 0.1).bfloat16()
    x = torch.randn(Mx, Nx, generator=gen).bfloat16()
    rstd, mean = torch.rand(Mx, generator=gen) + 0.5, torch.randn(Mx, generator=gen)
    s1, s2 = torch.randn(Mx, generator=gen), torch.randn(Mx, generator=gen)
    return Mx, Nx, Rx, (dy, w, x, rstd, mean, s1, s2)


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
@pytest.mark.parametrize("bn,has_g,coefs", [(128, True, True), (256, False, True),
                                            (256, False, False)],
                         ids=["128-g", "256-folded", "256-folded-terms"])
def test_rowdot_dx_kernel_lowered_by_hopper_ws_computes_the_same(is_ln, bn, has_g, coefs):
    """The "rowdot" plan's dX kernel (the GEMM with an elementwise epilogue reading the
    precomputed row sums; one store) is lowered by hopper-ws into the warp-specialized template
    (x, the epilogue's tile of a second matrix, by TMA into the staging tile), and the lowered
    kernel, interpreted on the CPU on a ragged shape (M, N not multiples of the tiles, R of the
    64 k-step), writes what the unlowered kernel writes; both match fp64. At 128 x 128 with g
    in the epilogue, and at the plan's 128 x 256 with g folded into W (HAS_G off); the epilogue
    as per-row coefficients (the default) and as the norm backward's terms (ROW_COEFS off)."""
    from normfuse.kernels.backward import norm_backward_rowdot_naive
    gen = _gen(21 + is_ln)
    Mx, Nx, Rx, (dy, w, x, rstd, mean, s1, s2) = _rowdot_case(gen)
    g = (1 + 0.1 * torch.randn(Nx, generator=gen)).bfloat16()
    b = torch.randn(Nx, generator=gen).bfloat16()
    dx = torch.full((Mx, Nx), float("nan")).bfloat16()
    args = [dy, w, s1, s2, x, rstd, mean, g, b, dx, rstd, rstd, dy, Mx, Rx, Rx, Nx, Nx, Nx, 0]
    if bn == 128:  # without hopper-ws{epilogue-tma}: x stays a pointer load of the hook
        plain = check_pass_numerics(norm_backward_rowdot_naive, list(args),
                                    constexprs=dict(N=Nx, BLOCK_M=128, BLOCK_N=bn, BLOCK_R=64,
                                                    IS_LN=is_ln, HAS_G=True, HAS_B=is_ln,
                                                    HAS_DG=False, EVEN_R=False, HAS_XN=False),
                                    grid=(2, 2), passes=("hopper-ws",), num_warps=8,
                                    num_stages=3)
        assert plain.lowered and plain.max_rel_diff == 0.0
        assert not any("staging tile" in r for r in plain.applied), plain.remarks
    if not has_g:  # the plan's form: g folded into W
        w = (w.float() * g.float()[None, :]).bfloat16()
        args[1] = w
    consts = dict(N=Nx, BLOCK_M=128, BLOCK_N=bn, BLOCK_R=64, IS_LN=is_ln, HAS_G=has_g,
                  HAS_B=is_ln, HAS_DG=False, EVEN_R=False, HAS_XN=False, ROW_COEFS=coefs)
    from normfuse.ops.training import ROWDOT_PASSES
    res = check_pass_numerics(norm_backward_rowdot_naive, args, constexprs=consts,
                              grid=(2, -(-Nx // bn)), passes=ROWDOT_PASSES, num_warps=8,
                              num_stages=3)
    assert any("[hopper-ws] applied" in r and "loaded by TMA into the output's staging tile" in r
               for r in res.applied), res.remarks
    assert res.lowered and res.max_rel_diff == 0.0, res.lowered_diffs
    xh = (x.double() - (mean.double()[:, None] if is_ln else 0)) * rstd.double()[:, None]
    gw = g.double() if has_g else 1.0
    want = (dy.double() @ w.double()) * gw - xh * (s1.double() / Nx)[:, None]
    if is_ln:
        want = want - (s2.double() / Nx)[:, None]
    want = want * rstd.double()[:, None]
    assert rel_err(res.before["DX"], want) < REF_TOL


@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_rowdot_dx_kernel_side_outputs_with_row_coefficients(is_ln):
    """The rowdot dX kernel's side outputs (HAS_DG: the dg (dbeta) column partials, which read
    du where the GEMM's rows and columns wrapped; HAS_XN: n for the dW GEMM) with the epilogue as
    per-row coefficients, interpreted on the CPU on the ragged case (2 x 2 programs, the last of
    each partly outside): the partials sum to fp64's dg (dbeta), n and dx match fp64, and the
    partials' out-of-range columns are left as they were (NaN)."""
    from normfuse.kernels.backward import norm_backward_rowdot_naive
    gen = _gen(41 + is_ln)
    Mx, Nx, Rx, (dy, w, x, rstd, mean, s1, s2) = _rowdot_case(gen)
    g = (1 + 0.1 * torch.randn(Nx, generator=gen)).bfloat16()
    b = torch.randn(Nx, generator=gen).bfloat16()
    dx = torch.full((Mx, Nx), float("nan")).bfloat16()
    xn = torch.full((Mx, Nx), float("nan")).bfloat16()
    dgp = torch.full((2, Nx), float("nan"))
    dbp = torch.full((2, Nx), float("nan"))
    args = [dy, w, s1, s2, x, rstd, mean, g, b, dx, dgp, dbp, xn, Mx, Rx, Rx, Nx, Nx, Nx, Nx]
    consts = dict(N=Nx, BLOCK_M=128, BLOCK_N=128, BLOCK_R=64, IS_LN=is_ln, HAS_G=True,
                  HAS_B=is_ln, HAS_DG=True, EVEN_R=False, HAS_XN=True)
    res = check_pass_numerics(norm_backward_rowdot_naive, args, constexprs=consts, grid=(2, 2),
                              passes=(), num_warps=8, num_stages=3)
    out = res.before
    xh = (x.double() - (mean.double()[:, None] if is_ln else 0)) * rstd.double()[:, None]
    du = dy.double() @ w.double()
    want = du * g.double() - xh * (s1.double() / Nx)[:, None]
    if is_ln:
        want = want - (s2.double() / Nx)[:, None]
    assert rel_err(out["DX"], want * rstd.double()[:, None]) < REF_TOL
    assert rel_err(out["XN"], xh * g.double() + (b.double() if is_ln else 0)) < REF_TOL
    assert rel_err(out["DGP"].sum(0), (du * xh).sum(0)) < 1e-5
    if is_ln:
        assert rel_err(out["DBP"].sum(0), du.sum(0)) < 1e-5
    else:  # (RMSNorm: no dbeta partials written)
        assert torch.isnan(out["DBP"]).all()


@pytest.mark.slow  # (9 s of ptxas; the "rowdot" plan is not a default)
def test_rowdot_kernels_compile_for_sm90_without_spills_or_serialized_wgmma():
    """The "rowdot" plan's kernels at their configuration (ops.training.ROWDOT_CONFIG: 128 x 256
    tiles), AOT for sm_90, as `rowdot_backward` launches them (g folded into W: HAS_G off): the
    dX GEMM, unlowered and lowered by hopper-ws (the plan's ROWDOT_PASSES; x read by TMA into the
    staging tile), keeps its wgmma pipeline (its k-loop is the GEMM alone; the row sums come from
    `rowdot_sums`) and, lowered, spills nothing, RMSNorm and LayerNorm (Triton's own lowering,
    the fallback, 20 B); with g in the epilogue instead the lowered 128 x 256 kernel spills (what
    the fold is for)."""
    from normfuse.kernels.backward import norm_backward_rowdot_naive, rowdot_sums
    from normfuse.ops.training import ROWDOT_CONFIG as C, ROWDOT_PASSES
    from backward_common import launch_signature
    Mx, Nx, Rx = 8192, 2048, 2048
    t = torch.empty
    dy, w = t(Mx, Rx, dtype=BF), t(Rx, Nx, dtype=BF)
    x, dx, xn = t(Mx, Nx, dtype=BF), t(Mx, Nx, dtype=BF), t(Mx, Nx, dtype=BF)
    v, vn, part = t(Mx), t(Nx, dtype=BF), t(Mx // C["BLOCK_M"], Nx)
    args = [dy, w, v, v, x, v, v, vn, vn, dx, part, part, xn, Mx, Rx, Rx, Nx, Nx, Nx, Nx]
    assert C["BLOCK_N"] == 256
    for is_ln, has_g, passes in ((True, False, ()), (True, False, ROWDOT_PASSES),
                                 (False, False, ROWDOT_PASSES), (False, True, ROWDOT_PASSES)):
        consts = dict(N=Nx, BLOCK_M=C["BLOCK_M"], BLOCK_N=C["BLOCK_N"], BLOCK_R=C["BLOCK_R"],
                      IS_LN=is_ln, HAS_G=has_g, HAS_B=is_ln, HAS_DG=False, EVEN_R=True,
                      HAS_XN=False)
        sig, attrs = launch_signature(norm_backward_rowdot_naive, args, consts)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the SpillWarning of the g-in-the-epilogue form)
            ck = normfuse.compile(norm_backward_rowdot_naive, signature=sig, constexprs=consts,
                                  attrs=attrs, passes=passes, num_warps=C["num_warps"],
                                  num_stages=C["num_stages"])
        res = ck.resources()
        assert not res["wgmma_serialized"] and "wgmma" in ck.asm["ptx"], (passes, res)
        assert (ck.lowered is not None) == bool(passes), ck.remarks
        if passes:
            assert any("loaded by TMA into the output's staging tile" in r for r in ck.remarks)
            assert (res["spill_stores"] == 0) == (not has_g), (is_ln, has_g, res)
        else:  # Triton's own lowering (the fallback where the lowered launch is refused)
            assert res["spill_stores"] <= 64, res
    args = [dy, dy, t(Rx), t(Rx), v, v, x, v, v, xn, Mx, Rx, Rx, Rx, Nx, Nx]
    consts = dict(N=Nx, IS_LN=True, BLOCK_M=C["SUMS_BLOCK_M"], BLOCK_R=C["SUMS_BLOCK_R"],
                  BLOCK_N=C["SUMS_BLOCK_R"], HAS_XH=True)
    sig, attrs = launch_signature(rowdot_sums, args, consts)
    ck = normfuse.compile(rowdot_sums, signature=sig, constexprs=consts, attrs=attrs, passes=(),
                          num_warps=4)
    assert ck.resources()["spill_stores"] == 0


def _rowdot_ln_folded(seed, bm, bn, passes, *, num_warps, programs, seeds):
    """check_pass_numerics of the rowdot dX kernel (LayerNorm, g folded, no side outputs) on the
    ragged case at a bm x bn tile through `passes`, 3 stages."""
    from normfuse.kernels.backward import norm_backward_rowdot_naive
    Mx, Nx, Rx, (dy, w, x, rstd, mean, s1, s2) = _rowdot_case(_gen(seed))
    dx = torch.full((Mx, Nx), float("nan")).bfloat16()
    args = [dy, w, s1, s2, x, rstd, mean, dy, dy, dx, rstd, rstd, dy, Mx, Rx, Rx, Nx, Nx, Nx, 0]
    consts = dict(N=Nx, BLOCK_M=bm, BLOCK_N=bn, BLOCK_R=64, IS_LN=True, HAS_G=False, HAS_B=False,
                  HAS_DG=False, EVEN_R=False, HAS_XN=False)
    return check_pass_numerics(norm_backward_rowdot_naive, args, constexprs=consts,
                               grid=(-(-Mx // bm), -(-Nx // bn)), passes=(passes,),
                               num_warps=num_warps, num_stages=3, programs=programs, seeds=seeds)


@pytest.mark.parametrize("bm,bn", [(64, 256), (128, 128)])
def test_rowdot_dx_kernel_pingpong_stages_x_per_consumer(bm, bn):
    """hopper-ws{epilogue-tma=true,schedule=pingpong} on the rowdot dX kernel (LayerNorm, g
    folded): each consumer's x tile comes by TMA into its own staging tile, handed back after its
    store; on 3 programs (several tiles per CTA, both consumers) and two interleavings the
    lowered kernel writes bitwise what the unlowered kernel writes."""
    res = _rowdot_ln_folded(31, bm, bn, "hopper-ws{epilogue-tma=true,schedule=pingpong}",
                            num_warps=4, programs=3, seeds=(0, 1))
    assert any("pingpong" in r and "staging tile" in r for r in res.applied), res.remarks
    assert res.lowered and res.max_rel_diff == 0.0, res.lowered_diffs


@pytest.mark.parametrize("sched,bm,bn", [("coop", 128, 256), ("pingpong", 128, 128)])
def test_rowdot_dx_kernel_staging_late(sched, bm, bn):
    """hopper-ws{epilogue-tma=true,staging-late=true} on the rowdot dX kernel: each consumer
    hands its staging tile back to the loader inside its next tile's k-loop (after the first
    wgmma's issue) instead of after its output store; on one program (coop: its one consumer
    takes both tiles; ping-pong: each consumer two of the four, so the loader waits for a tile
    handed back late) and three interleavings the lowered kernel writes bitwise what the
    unlowered kernel writes."""
    res = _rowdot_ln_folded(33, bm, bn,
                            f"hopper-ws{{epilogue-tma=true,schedule={sched},staging-late=true}}",
                            num_warps=8 if sched == "coop" else 4, programs=1, seeds=(0, 1, 2))
    assert any(f"{sched} w" in r and "staging-late" in r for r in res.applied), res.remarks
    assert res.lowered and res.max_rel_diff == 0.0, res.lowered_diffs


def test_ttir_of_gives_a_left_out_constexpr_its_default():
    """normfuse.testing.ttir_of with ROW_COEFS left out of the signature: the rowdot kernel's
    default (the per-row coefficients, FMAs), not Triton's None (the terms' branch)."""
    import sys
    from normfuse.kernels.backward import norm_backward_rowdot_naive
    from normfuse.testing.numerics import ttir_of
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lit" / "inputs"))
    from backward_kernels import ROWDOT, ROWDOT_RMS
    sig = {k: v for k, v in ROWDOT.items() if k != "ROW_COEFS"}
    consts = {k: v for k, v in ROWDOT_RMS.items() if k != "ROW_COEFS"}
    assert "math.fma" in ttir_of(norm_backward_rowdot_naive, sig, consts, num_warps=8)
    terms = ttir_of(norm_backward_rowdot_naive, dict(sig, ROW_COEFS="constexpr"),
                    dict(consts, ROW_COEFS=False), num_warps=8)
    assert "math.fma" not in terms and "arith.select" in terms


def test_staging_late_without_a_staged_tile_is_a_note():
    """staging-late where no second matrix's tile comes by TMA (epilogue-tma off, so x stays a
    pointer load of the hook): the kernel is lowered without it, and a note says why."""
    import warnings
    from normfuse.kernels.backward import norm_backward_rowdot_naive
    from normfuse.ops.training import ROWDOT_CONFIG as C
    from backward_common import launch_signature
    Mx, Nx, Rx = 1024, 512, 256
    t = torch.empty
    dy, w, x = t(Mx, Rx, dtype=BF), t(Rx, Nx, dtype=BF), t(Mx, Nx, dtype=BF)
    v, vn = t(Mx), t(Nx, dtype=BF)
    args = [dy, w, v, v, x, v, v, vn, vn, x, v, v, x, Mx, Rx, Rx, Nx, Nx, Nx, Nx]
    consts = dict(N=Nx, BLOCK_M=128, BLOCK_N=128, BLOCK_R=64, IS_LN=False, HAS_G=True,
                  HAS_B=False, HAS_DG=False, EVEN_R=True, HAS_XN=False)
    sig, attrs = launch_signature(norm_backward_rowdot_naive, args, consts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck = normfuse.compile(norm_backward_rowdot_naive, signature=sig, constexprs=consts,
                              attrs=attrs, passes=("hopper-ws{staging-late=true}",),
                              num_warps=C["num_warps"], num_stages=C["num_stages"])
    assert ck.lowered is not None, ck.remarks
    assert not ck.lowered.plan.config.staging_late
    assert any("staging-late not applied: no tile of a second matrix comes by TMA" in r
               for r in ck.remarks), ck.remarks


def test_lowered_kernel_refuses_arguments_of_another_variant():
    """The warp-specialized interpreter checks each pointer the kernel reads against the tensor
    bound to it: the rowdot dX kernel's lowered form run with g passed as fp32 where the kernel
    reads bf16 stops with both types named (a flake once ran a kernel whose f32 vector load went
    through a bf16 argument: this names that mismatch at the start), while a placeholder for a
    pointer it never reads (`sbuf`, bound to dY here) is taken."""
    from normfuse.kernels.backward import norm_backward_rowdot_naive
    from normfuse.testing import InterpreterError, run_ir
    from normfuse.testing.numerics import _copy, lowered_launch
    gen = _gen(21)
    Mx, Nx, Rx, (dy, w, x, rstd, mean, s1, s2) = _rowdot_case(gen)
    g = (1 + 0.1 * torch.randn(Nx, generator=gen)).bfloat16()
    dx = torch.full((Mx, Nx), float("nan")).bfloat16()
    args = [dy, w, s1, s2, x, rstd, mean, g, g, dx, rstd, rstd, dy, Mx, Rx, Rx, Nx, Nx, Nx, 0]
    ck = normfuse.compile(norm_backward_rowdot_naive, args=args,
                          constexprs=dict(N=Nx, BLOCK_M=128, BLOCK_N=128, BLOCK_R=64, IS_LN=False,
                                          HAS_G=True, HAS_B=False, HAS_DG=False, EVEN_R=False,
                                          HAS_XN=False),
                          passes=("hopper-ws",), target="cuda:90", num_warps=8, num_stages=3)
    assert ck.lowered is not None, ck.remarks
    text = ck.lowered.kernel.asm["ttgir"]
    good = lowered_launch(ck.lowered, [_copy(a) for a in args], programs=2)
    run_ir(text, good.args, good.grid, trusted=True)  # (sbuf: dY's placeholder, never read)
    bad_args = [_copy(a) for a in args]
    bad_args[7] = g.float()
    bad = lowered_launch(ck.lowered, bad_args, programs=2)
    with pytest.raises(InterpreterError, match=r"the kernel reads it as bf16, the host passed a "
                                               r"f32 tensor of shape \(192,\)"):
        run_ir(text, bad.args, bad.grid, trusted=True)
