"""lazy-prenorm's numerics on the CPU: every pre-norm kernel of normfuse.kernels (and the plain
GEMM, left unchanged) and every positive lit kernel of lazy-prenorm.mlir, run by normfuse.testing's
interpreter before and after the pass (inputs and checks: passes/pass_numerics.py). The pass's IR
structure is checked in test_lazy_prenorm.py and test/lit/lazy-prenorm.mlir."""
from __future__ import annotations

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402

from normfuse.kernels.gemm import gemm_plain
from normfuse.kernels.prenorm_gemm import layernorm_gemm_naive, rmsnorm_gemm_naive
from normfuse.reference import layernorm_linear_ref, rel_err, rmsnorm_linear_ref
from normfuse.testing import check_ir_numerics, check_pass_numerics, default_pipeline

from pass_numerics import (  # noqa: E402
    K, LAZY, LIT, M, N, PRE, REF_TOL, TOL, _assert_ok, _bf, _lazy_args, _op_names, _poisoned,
    lit_input)


# ---------------------------------------------------------------------------------------------
# Pre-norm kernels (lazy-prenorm)
# ---------------------------------------------------------------------------------------------



def _prenorm(kind, *, has_g=True, has_b=True, has_bias=True, k=K, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(M, k, generator=gen) + 3.0 * torch.randn(M, 1, generator=gen)).bfloat16()
    g = (0.5 + torch.rand(k, generator=gen)).bfloat16()
    b = _bf(k, gen=gen)
    w = _bf(N, k, scale=0.1, gen=gen)
    bias = _bf(N, gen=gen)
    y = _poisoned(M, N)
    eps = 1e-5
    if kind == "rms":
        args = [x, g, w, y, bias, M, N, k, k, k, N, eps]
        ref = rmsnorm_linear_ref(x, g if has_g else None, w, eps, bias if has_bias else None)
        consts = dict(HAS_G=has_g)
    else:
        args = [x, g, b, w, y, bias, M, N, k, k, k, N, eps]
        ref = layernorm_linear_ref(x, g if has_g else None, b if has_b else None, w, eps,
                                   bias if has_bias else None)
        consts = dict(HAS_G=has_g, HAS_B=has_b)
    consts.update(PRE, HAS_BIAS=has_bias, EVEN_K=k % PRE["BLOCK_K"] == 0)
    return args, consts, ref


def _grid(consts):
    progs = consts.get("NUM_PROGRAMS", 0)
    return (progs,) if progs else (-(-M // 32) * -(-N // 32),)


@pytest.mark.parametrize("has_g, tma, programs, row_blocks", [
    pytest.param(True, False, 0, False, id="g-in-loop"),
    pytest.param(False, False, 0, False, id="g-folded"),
    pytest.param(True, True, 0, False, id="g-in-loop-tma"),
    pytest.param(False, False, 3, False, id="persistent"),
    pytest.param(False, True, 3, False, id="persistent-tma"),
    pytest.param(True, False, 2, True, id="row-blocks"),
])
def test_rmsnorm_kernel(has_g, tma, programs, row_blocks):
    args, consts, ref = _prenorm("rms", has_g=has_g)
    consts.update(USE_TMA=tma, NUM_PROGRAMS=programs, ROW_BLOCKS=row_blocks)
    res = check_pass_numerics(rmsnorm_gemm_naive, args, constexprs=consts, grid=_grid(consts),
                              num_warps=4, num_stages=3)
    _assert_ok(res)
    if row_blocks:
        assert any("once per row block" in r for r in res.applied), res.remarks
    assert rel_err(res.before["Y"], ref) < REF_TOL


@pytest.mark.parametrize("has_g, has_b, tma, programs, even_k", [
    pytest.param(True, True, False, 0, False, id="g-beta-in-loop"),
    pytest.param(False, False, False, 0, False, id="folded"),
    pytest.param(True, False, False, 0, True, id="g-only-even-k"),
    pytest.param(True, True, True, 0, False, id="g-beta-tma"),
    pytest.param(False, False, True, 3, True, id="folded-persistent-tma"),
])
def test_layernorm_kernel(has_g, has_b, tma, programs, even_k):
    args, consts, ref = _prenorm("ln", has_g=has_g, has_b=has_b, k=96 if even_k else K, seed=1)
    consts.update(USE_TMA=tma, NUM_PROGRAMS=programs)
    res = check_pass_numerics(layernorm_gemm_naive, args, constexprs=consts, grid=_grid(consts),
                              num_warps=4, num_stages=3)
    _assert_ok(res)
    assert rel_err(res.before["Y"], ref) < REF_TOL


@pytest.mark.parametrize("kind, spec", [
    ("rms", "lazy-prenorm{stats-source=tile}"),
    ("rms", "lazy-prenorm{stats-source=reload-volatile,stats-accumulate=row}"),
    ("ln", "lazy-prenorm{shift=false,stats-accumulate=tile}"),
    ("ln", "lazy-prenorm{shift=true,stats-source=tile}"),
])
def test_prenorm_pass_options(kind, spec):
    args, consts, _ = _prenorm(kind, seed=2)
    consts.update(USE_TMA=False, NUM_PROGRAMS=0)
    fn = rmsnorm_gemm_naive if kind == "rms" else layernorm_gemm_naive
    res = check_pass_numerics(fn, args, constexprs=consts, grid=_grid(consts), passes=spec,
                              num_warps=4)
    _assert_ok(res)


def test_plain_gemm_runs_unchanged_and_matches_torch():
    gen = torch.Generator().manual_seed(3)
    x, w = _bf(M, K, gen=gen), _bf(N, K, gen=gen)
    y = _poisoned(M, N)
    consts = dict(PRE, EVEN_K=False, USE_TMA=False)
    assert default_pipeline(gemm_plain) == ()
    res = check_pass_numerics(gemm_plain, [x, w, y, M, N, K, K, K, N], constexprs=consts,
                              grid=_grid(consts), num_warps=4)
    assert not res.changed and res.max_rel_diff == 0.0
    assert rel_err(res.before["Y"], x.double() @ w.double().t()) < REF_TOL


@pytest.mark.parametrize("spec", ["lazy-prenorm{num-stages=3}",
                                  "lazy-prenorm{shift=false,stats-source=tile}",
                                  "lazy-prenorm{stats-accumulate=row}"])
@pytest.mark.parametrize("name", LAZY)
def test_lit_lazy_prenorm(name, spec):
    # K = 96: three full k-tiles (the lit kernels mask only X along K; see the xfail below)
    args, out = _lazy_args(name, 96, torch.Generator().manual_seed(6))
    res = check_ir_numerics((LIT / "lazy-prenorm.mlir").read_text(), args, (1,), passes=spec,
                            kernel=name)
    assert _op_names(res.ir_before, name) != _op_names(res.ir_after, name), "the pass did not apply"
    y = f"arg{out}"
    assert res.diffs[y] < TOL, res.diffs
    assert not torch.isnan(res.after[y]).any() and not torch.isnan(res.before[y]).any()


def test_lit_layernorm_ragged_k_unmasked_weight():
    """Ragged K with only the A tile masked (W, g, beta read unmasked past K, as the lit kernel
    'layernorm' does): the shifted lazy form keeps (0 - shift) in the masked-off lanes, so it
    equals the naive kernel, which feeds (0 - mean) * rstd * g + beta there. (It used to zero
    them: 0.35-0.55 relative difference.)"""
    gen = torch.Generator().manual_seed(7)
    args, _ = _lazy_args("layernorm", 80, gen)
    res = check_ir_numerics((LIT / "lazy-prenorm.mlir").read_text(), args, (1,),
                            passes="lazy-prenorm{num-stages=3}", kernel="layernorm")
    assert res.diffs["arg4"] < TOL, res.diffs


# ---------------------------------------------------------------------------------------------
# Forms leave out regions and effects (review of the forms, session 18): the statistics loop's
# and the GEMM loop's tile loads have equal forms when their masks are bounded by tl.sum(c) and
# tl.max(c) (two tt.reduce of c), or by two loads of one address around a store to it; the
# statistics were computed from the GEMM loop's tile (Y differed). Now refused.
# ---------------------------------------------------------------------------------------------

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _rms_twin(X, W, Y, C, KP, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr, MODE: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    c = tl.load(C + offs_k)
    if MODE == 0:
        k1 = tl.sum(c, 0)
        k2 = tl.max(c, 0)
    else:
        k1 = tl.load(KP)
        tl.store(KP, 20)
        k2 = tl.load(KP)
    ss = tl.zeros([BM], dtype=tl.float32)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < k1 - k * BK, other=0.0).to(tl.float32)
        ss += tl.sum(x * x, axis=1)
        p += BK
    rstd = 1.0 / tl.sqrt(ss / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < k2 - k * BK, other=0.0).to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@pytest.mark.parametrize("mode, why", [
    (0, "a value computed from 'tt.reduce'"),
    (1, "a value computed from memory the kernel writes (KP"),
], ids=["reduce", "written"])
def test_stats_loop_twin_forms(mode, why):
    import normfuse
    sig = {"X": "*bf16", "W": "*bf16", "Y": "*fp32", "C": "*i32", "KP": "*i32", "K": "i32",
           "stride": "i32", "eps": "fp32"}
    ttir = normfuse.compile(_rms_twin, signature=sig, constexprs=dict(BM=16, BN=16, BK=16, MODE=mode),
                            target="cuda:90", passes=(), num_warps=4).asm["ttir"]
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(16, 32, generator=gen).bfloat16()
    w = torch.randn(16, 32, generator=gen).bfloat16()
    c = torch.tensor([10, 20] + [0] * 14, dtype=torch.int32)  # sum 30, max 20
    kp = torch.tensor([30], dtype=torch.int32)
    res = check_ir_numerics(ttir, [x, w, torch.zeros(16, 16), c, kp, 32, 32, 1e-5], (1,),
                            passes="lazy-prenorm")
    assert not res.changed and any(why in r for r in res.remarks), res.remarks
    assert res.max_rel_diff == 0, res.diffs


# ---------------------------------------------------------------------------------------------
# A kernel that writes X (session 39's carried pointer): the GEMM loop stores twice its tile into
# the next one, so its later trips read other values than the statistics loop read. The tile
# loads were not checked against the kernel's writes (their pointer, carried by the loops, traced
# to no argument) and the statistics were fused from the GEMM loop's tiles: Y differed (0.67 of
# its largest value). Now refused, whether the store goes through the carried pointer or one
# computed from X.
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("carried", [True, False], ids=["carried-pointer", "computed-pointer"])
def test_gemm_loop_writing_x_is_refused(carried):
    import normfuse
    lit = lit_input("lazy_prenorm_kernels")  # (the lit chunk negative_gemm_loop_writes_x)
    fn = lit.negative_gemm_loop_writes_x
    sig = {k: v for k, v in lit.signature(fn).items() if v != "constexpr"}
    ttir = normfuse.compile(fn, signature=sig,
                            constexprs=dict(BM=16, BN=16, BK=16, CARRIED=carried),
                            target="cuda:90", passes=(), num_warps=4).asm["ttir"]
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(16, 48, generator=gen).bfloat16()
    w = torch.randn(16, 48, generator=gen).bfloat16()
    res = check_ir_numerics(ttir, [x, w, torch.zeros(16, 16), 48, 48, 1e-5], (1,),
                            passes="lazy-prenorm")
    assert not res.changed, res.remarks
    assert any("missed: the kernel writes X, which the statistics loop and the GEMM loop both read"
               in r for r in res.remarks), res.remarks
    assert res.max_rel_diff == 0, res.diffs
