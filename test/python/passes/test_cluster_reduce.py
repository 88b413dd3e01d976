"""cluster-reduce (with epilogue-norm after it: the post-norm pipeline) on the CPU: the post-norm
kernels of normfuse.kernels and the positive lit kernels of cluster-reduce.mlir and
epilogue-norm.mlir, run by normfuse.testing's interpreter before and after the passes (one CTA,
clusters, the global exchange, deferred and persistent forms; the interpreter checks the exchange's
races). Inputs and checks: passes/pass_numerics.py. The ops' AOT forms: test_postnorm.py."""
from __future__ import annotations

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402

from normfuse.kernels.postnorm_gemm import linear_layernorm_naive, linear_rmsnorm_naive
from normfuse.reference import linear_norm_ref, rel_err
from normfuse.testing import check_ir_numerics, check_pass_numerics, default_pipeline

from pass_numerics import (  # noqa: E402
    K, LIT, M, REF_TOL, TOL, _assert_ok, _bf, _op_names, _poisoned, _post_lit_args,
    lit_input_kernels)


# ---------------------------------------------------------------------------------------------
# Post-norm kernels (cluster-reduce, epilogue-norm)
# ---------------------------------------------------------------------------------------------

def _postnorm(kind, n, *, seed=0, k=K):
    gen = torch.Generator().manual_seed(seed)
    x = _bf(M, k, gen=gen)
    w = _bf(n, k, scale=0.1, gen=gen)
    bias = _bf(n, gen=gen)
    res = _bf(M, n, mean=3.0, gen=gen)  # rows with a non-zero mean
    g = (0.5 + torch.rand(n, generator=gen)).bfloat16()
    b = _bf(n, gen=gen)
    y = _poisoned(M, n)
    vec = [g] if kind == "rms" else [g, b]
    args = [x, w, bias, res, *vec, y, M, k, k, k, n, n, 1e-5]
    ref = linear_norm_ref(x, w, g, None if kind == "rms" else b, 1e-5, bias, res)
    return args, ref


POST = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, HAS_BIAS=True, HAS_RES=True)


_POST_FORMS = [
    pytest.param(96, "default", 3, False, False, id="3-tiles"),
    pytest.param(96, "default", 3, True, False, id="3-tiles-persistent"),
    pytest.param(96, "cluster-reduce{exchange=global},epilogue-norm", 3, True, True,
                 id="3-tiles-persistent-global-tma"),
    pytest.param(96, "cluster-reduce{exchange=global},epilogue-norm", 3, False, False,
                 id="3-tiles-global"),
    pytest.param(160, "cluster-reduce{cluster-size=2},epilogue-norm", 2, False, True,
                 id="deferred-5-tiles-2-ctas-tma"),
    pytest.param(128, "cluster-reduce{cluster-size=2},epilogue-norm", 2, True, False,
                 id="deferred-persistent"),
    pytest.param(32, "default", 1, False, False, id="one-tile"),
    pytest.param(32, "default", 1, True, True, id="one-tile-persistent-tma"),
]

_LN_SLOW = {"3-tiles-persistent", "3-tiles-persistent-global-tma", "deferred-persistent",
            "one-tile-persistent-tma"}


# the default suite: RMSNorm in every form, LayerNorm in the non-persistent ones; `-m slow` all
@pytest.mark.parametrize("kind,n,spec,ctas,persistent,tma", [
    pytest.param(kind, *p.values, id=f"{p.id}-{kind}",
                 marks=pytest.mark.slow if kind == "ln" and p.id in _LN_SLOW else ())
    for kind in ("rms", "ln") for p in _POST_FORMS])
def test_postnorm_kernel(kind, n, spec, ctas, persistent, tma):
    args, ref = _postnorm(kind, n, seed=4)
    consts = dict(POST, N=n, EVEN_K=False, USE_TMA=tma, PERSISTENT=persistent)
    fn = linear_rmsnorm_naive if kind == "rms" else linear_layernorm_naive
    # persistent: 2 programs (clusters) walk the 3 row blocks, so one of them takes two (both
    # exchange slot sets are used)
    grid = (2,) if persistent else (-(-M // 32),)
    res = check_pass_numerics(fn, args, constexprs=consts, grid=grid, passes=spec.replace(
        "default", ",".join(default_pipeline(fn))), num_warps=4)
    _assert_ok(res)
    assert res.num_ctas == ctas
    assert rel_err(res.before["Y"], ref) < REF_TOL
    assert rel_err(res.after["Y"], ref) < REF_TOL


def _postnorm_specs(kind, n, seed, persistent, specs):
    """The post-norm kernel (two row blocks per cluster when persistent) through each pipeline
    of `specs`, each run checked (`_assert_ok`): their NumericsChecks."""
    args, _ = _postnorm(kind, n, seed=seed)
    consts = dict(POST, N=n, EVEN_K=False, USE_TMA=False, PERSISTENT=persistent)
    fn = linear_rmsnorm_naive if kind == "rms" else linear_layernorm_naive
    grid = (2,) if persistent else (3,)
    out = []
    for spec in specs:
        res = check_pass_numerics(fn, args, constexprs=consts, grid=grid, passes=spec, num_warps=4)
        _assert_ok(res)
        out.append(res)
    return out


@pytest.mark.parametrize("kind, persistent", [("rms", True), ("ln", False)])
def test_gather_once_gives_the_same_bits(kind, persistent):
    """gather=once (the peers' partials summed once per row into the CTA's own slots, then read
    locally) adds the same values in the same rank order as gather=each: the same output bits."""
    runs = _postnorm_specs(kind, 96, 6, persistent, ("cluster-reduce,epilogue-norm",
                                                     "cluster-reduce{gather=once},epilogue-norm"))
    for res in runs:
        assert res.num_ctas == 3
    assert torch.equal(runs[0].after["Y"], runs[1].after["Y"])


@pytest.mark.parametrize("kind, persistent, n, moved", [
    ("rms", False, 96, {"G"}),       # one tile per CTA
    ("ln", False, 192, {"G", "B"}),  # deferred (2 tiles a CTA): the reload of Y stays
    ("rms", True, 96, {"G"}),        # persistent: within each row block's trip
])
def test_early_loads_move_only_unwritten_memory(kind, persistent, n, moved):
    """early-loads moves only loads of memory no store of the kernel writes: in the post-norm
    kernels the norm's weights (G, B), never the output Y the kernel stores (the deferred form
    re-reads its own unnormalized tiles after the exchange); the same output bits (the
    persistent form: two row blocks per cluster, the interpreter checking the slots' races)."""
    import re
    plain, early = _postnorm_specs(kind, n, 9, persistent,
                                   ("cluster-reduce", "cluster-reduce{early-loads=true}"))
    assert torch.equal(plain.after["Y"], early.after["Y"])
    m = re.search(r"early-loads: \d+ loads? \(of ([^)]*)\)", "\n".join(early.applied))
    assert m is not None, "\n".join(early.remarks)
    assert set(m.group(1).split(", ")) == moved


@pytest.mark.parametrize("opts, match", [
    (dict(gather="twice"), r"cluster-reduce\{gather\} must be each or once, got 'twice'"),
    (dict(gather="once", exchange="global"), r"gather=once\} needs exchange=dsmem"),
    (dict(early_loads=True, exchange="global"), r"early-loads\} needs exchange=dsmem"),
])
def test_gather_option_errors(opts, match):
    from normfuse.passes import PassError
    from normfuse.passes.cluster_reduce import ClusterReduce
    with pytest.raises(PassError, match=match):
        ClusterReduce(**opts)


def test_postnorm_layernorm_large_mean_beats_naive():
    # rows with mean ~30 and std ~1: the naive kernel rounds the GEMM output to bf16 before the
    # norm (error ~ |mean| * 2^-8), the fused one normalizes the fp32 accumulator; its one-pass
    # variance holds at this mean (docs/NOTES.md, "LayerNorm: one exchange or two")
    args, _ = _postnorm("ln", 96, seed=5, k=64)
    args[3] = (args[3].float() + 27.0).bfloat16()
    ref = linear_norm_ref(args[0], args[1], args[4], args[5], 1e-5, args[2], args[3])
    consts = dict(POST, N=96, EVEN_K=True, USE_TMA=False, PERSISTENT=False)
    res = check_pass_numerics(linear_layernorm_naive, args, constexprs=consts, grid=(3,), num_warps=4)
    naive, fused = rel_err(res.before["Y"], ref), rel_err(res.after["Y"], ref)
    assert fused < 5e-3 < naive, (fused, naive)


@pytest.mark.parametrize("lit, name, spec, m, grid, ctas", [
    ("cluster-reduce.mlir", "rms_four_tiles", "cluster-reduce,epilogue-norm", 100, 2, 4),
    ("cluster-reduce.mlir", "rms_four_tiles", "cluster-reduce{cluster-size=2}", 100, 2, 2),
    ("cluster-reduce.mlir", "rms_four_tiles", "cluster-reduce{exchange=global}", 100, 2, 4),
    ("cluster-reduce.mlir", "ln_two_stats", "cluster-reduce,epilogue-norm", 100, 2, 2),
    ("cluster-reduce.mlir", "ln_two_stats", "cluster-reduce{exchange=global}", 100, 2, 2),
    ("cluster-reduce.mlir", "rms_deferred", "cluster-reduce,epilogue-norm", 64, 1, 16),
    ("cluster-reduce.mlir", "rms_persistent", "cluster-reduce,epilogue-norm", 200, 2, 4),
    ("cluster-reduce.mlir", "rms_persistent", "cluster-reduce{exchange=global}", 200, 2, 4),
    ("epilogue-norm.mlir", "linear_rmsnorm_naive", "epilogue-norm", 100, 2, 1),
    ("epilogue-norm.mlir", "linear_layernorm_naive", "epilogue-norm", 100, 2, 1),
    ("epilogue-norm.mlir", "rms_persistent", "epilogue-norm", 200, 2, 1),
])
def test_lit_postnorm(lit, name, spec, m, grid, ctas):
    gen = torch.Generator().manual_seed(8)
    args, y = _post_lit_args(lit, name, m, gen)
    res = check_ir_numerics((LIT / lit).read_text(), args, (grid,), passes=spec, kernel=name)
    assert _op_names(res.ir_before, name) != _op_names(res.ir_after, name), "the pass did not apply"
    assert res.num_ctas == ctas
    key = f"arg{y}"
    assert res.diffs[key] < TOL, res.diffs
    assert not torch.isnan(res.after[key].float()).any()
    assert not torch.isnan(res.before[key].float()).any()


# -- the FlashNormAttention lit input's prologue kernels: a row statistic computed in the
# prologue loop, split over the cluster with the epilogue's (cluster-reduce, then epilogue-norm)

PROLOGUE_REF_TOL = 1.2e-2  # interpreted bf16 output vs fp64, Frobenius


@pytest.mark.parametrize("trips, mode, split, blocks", [
    (2, 0, True, 0), (2, 2, False, 0), (3, 0, False, 0), (2, 1, False, 0),
    (2, 0, True, 2),  # persistent: 1 cluster walks 2 row blocks (both slot sets, races checked)
])
def test_lit_prologue_kernels(trips, mode, split, blocks):
    m = lit_input_kernels()
    gen = torch.Generator().manual_seed(11)
    x = (torch.randn(32 * 32 + 16, generator=gen) + 2.0).bfloat16()  # rows of 32 (+16 for 3 trips)
    w = (torch.randn(16, 16, generator=gen) / 4).bfloat16()
    y = torch.full((32, 32), float("nan")).bfloat16()
    s = torch.zeros(32)
    res = check_pass_numerics(m._prologue, [x, w, y, s, 1e-5], constexprs=m.pro(trips, mode, blocks),
                              grid=(1,) if blocks else (2,), passes="cluster-reduce,epilogue-norm",
                              num_warps=4)
    assert res.num_ctas == 2
    assert ("prologue row statistic" in "\n".join(res.applied)) == split
    assert res.max_rel_diff < 2e-2, res.diffs
    # the epilogue's reference: (x[:, :32] tile products - prologue / N) normalized
    flat = x.double()
    xf = flat[:32 * 32].reshape(32, 32)
    pro = torch.stack([flat[32 * r:32 * r + 16 * trips] for r in range(32)])
    stat = pro.amax(dim=1).clamp(min=0) if mode == 1 else pro.sum(dim=1)
    z = torch.cat([xf[:, 16 * t:16 * t + 16] @ w.double() for t in range(2)], 1) - stat[:, None] / 32
    ref = z * torch.rsqrt(z.square().mean(1, keepdim=True) + 1e-5)
    assert rel_err(res.after["Y"], ref) < PROLOGUE_REF_TOL
