"""The passes accept the kernels users write, not one spelling of them (issue 11, section 1).

Every variant of `kernel_variants` (loops over tile indices or offsets, range or tl.range,
tl.static_range; masked, unmasked, block pointers, tensor descriptors; W [N, K] or [K, N]; the
statistics spelled several ways; bf16 and fp16; one program per tile, per row block, persistent)
is compiled for sm_90 on the CPU through the passes (the default suite: a subset in which every
axis value occurs, `kernel_variants.covering`; `-m slow` all of them): the pass must apply, or, for the variants
that are not pre-/post-norms the passes may rewrite, leave the kernel alone with a remark that
names the reason. A sample is also run on a Hopper GPU against the naive kernel.
"""
from __future__ import annotations

import pytest

import kernel_variants as kv

IDS = [v.name for v in kv.VARIANTS]
# the default suite compiles a subset covering every axis value; `-m slow` the rest
COVER = kv.covering(kv.VARIANTS)


def test_the_matrix_is_large_and_covers_every_axis():
    assert len(kv.VARIANTS) >= 40
    seen = {axis: {getattr(v, axis) for v in kv.VARIANTS}
            for axis in ("form", "loop", "kloop", "memory", "w", "stats", "g", "dtype", "norm")}
    assert {"tile", "rowblock", "rowblock_static", "persistent", "single"} <= seen["form"]
    assert {"tiles", "offsets", "tl_range", "ptr_inc"} <= seen["loop"]
    assert {"static"} <= seen["kloop"]
    assert {"mask", "nomask", "block_ptr", "desc"} <= seen["memory"]
    assert seen["w"] == {"nk", "kn"} and seen["dtype"] == {"bf16", "fp16"} and seen["norm"] == {"rms", "ln"}
    assert {"rsqrt", "inv_sqrt", "eps_out", "div", "meansq"} <= seen["stats"]
    assert all("**" not in kv.source(v) for v in kv.VARIANTS)  # no ** on Triton 3.6 tensors
    assert sum(v.gpu for v in kv.VARIANTS) >= 10


def test_the_default_suites_subset_covers_every_axis_value():
    def pairs(vs):
        return {(v.kind, a, getattr(v, a)) for v in vs for a in kv.COVER_AXES}
    sub = [v for v in kv.VARIANTS if v.name in COVER]
    assert pairs(sub) == pairs(kv.VARIANTS) and len(sub) < len(kv.VARIANTS)


def _remarks(ck, pass_name):
    return [r for r in ck.remarks if f"[{pass_name}]" in r]


@pytest.mark.parametrize("v", [pytest.param(v, marks=() if v.name in COVER else pytest.mark.slow)
                               for v in kv.VARIANTS], ids=IDS)
def test_variant_compiles_for_sm90_through_the_passes(v):
    ck = kv.compile_variant(v)
    assert len(ck.asm["cubin"]) > 0  # ptxas accepted the rewritten kernel
    if v.expect.startswith("missed:"):
        why = v.expect.split(":", 1)[1]
        assert not ck.applied, ck.remarks
        assert any("missed" in r and why in r for r in ck.remarks), ck.remarks
        return
    assert ck.applied, ck.remarks
    if v.kind == "pre":
        mine = _remarks(ck, "lazy-prenorm")
        assert mine and all("] applied:" in r for r in mine), mine
        what = "LayerNorm" if v.norm == "ln" else "RMSNorm"
        assert any(f"{what} row scale sunk" in r and "statistics loop fused" in r for r in mine), mine
        if v.form == "rowblock":
            assert any("moved into the first trip of the enclosing N-tile loop" in r for r in mine), mine
        return
    m, n, k = kv.shape(v)
    tiles = n // kv.BN
    if tiles == 1:
        assert any("the row is one tile" in r for r in _remarks(ck, "cluster-reduce")), ck.remarks
    else:
        assert any(f"row of {tiles} N tiles split over a {tiles}-CTA cluster" in r
                   for r in _remarks(ck, "cluster-reduce")), ck.remarks
        assert ck.metadata.num_ctas == tiles
        assert "barrier.cluster.arrive.release" in ck.asm["ptx"]
    assert any("] applied:" in r for r in _remarks(ck, "epilogue-norm")), ck.remarks


# ---------------------------------------------------------------------------------------------
# On the GPU: the fused kernel against the naive one and an fp64 reference
# ---------------------------------------------------------------------------------------------

def _rel(a, b):
    return float((a.double() - b).norm() / b.norm())


@pytest.mark.gpu
@pytest.mark.parametrize("v", [v for v in kv.VARIANTS if v.gpu], ids=[v.name for v in kv.VARIANTS if v.gpu])
def test_gpu_fused_variant_matches_naive(v):
    """The rewritten kernel computes what the naive one does: every output written (Y starts as
    NaN), an error against fp64 within 1.5x of the naive kernel's (plus rounding slack), and
    bitwise repeatable."""
    import torch
    t = kv.inputs(v, seed=1)
    ref = kv.reference(v, t)
    naive = kv.run_variant(v, dict(t, Y=t["Y"].clone()), passes=())
    fused = kv.run_variant(v, dict(t, Y=t["Y"].clone()))
    again = kv.run_variant(v, dict(t, Y=t["Y"].clone()))
    torch.cuda.synchronize()
    assert torch.isfinite(naive).all() and torch.isfinite(fused).all(), v.name
    e_naive, e_fused = _rel(naive, ref), _rel(fused, ref)
    tol = {"bf16": 8e-3, "fp16": 1e-3}[v.dtype]
    assert e_naive < tol * 4, (v.name, e_naive)
    assert e_fused <= 1.5 * e_naive + tol / 4, (v.name, e_fused, e_naive)
    assert torch.equal(fused, again), v.name
