"""The lowering takes the pre-norm kernels as users write them (issue 23, items 2 and 3).

Every legal pre-norm spelling of `kernel_variants` (those lazy-prenorm fuses: `PRENORM` and the
lowering matrix `LOWERING`: runtime strides, block pointers, descriptors for the operands and the
output, tl.range, unmasked divisible shapes, the row walk with the statistics carried across the
N tiles (peeled by lazy-prenorm, or unrolled by tl.static_range), W [N, K] and [K, N], bf16 and
fp16) goes through lazy-prenorm and hopper-ws{schedule=pingpong} (the variants' tiles are 64
rows) on the CPU, to the fused TTIR and the pass's plan (no Gluon compilation): each is lowered or
refused with the reason in `kernel_variants.WS_REFUSED`, at least 90 % lowered. The refusals name
every blocker with its fix, in the kernel's terms, and leave the IR unchanged.

A sample of the newly lowered forms is compiled and its lowered TTGIR run in normfuse.testing's
interpreter against the unlowered kernel at small ragged shapes; the whole matrix with
NORMFUSE_LOWERED_SWEEP=1.
"""
from __future__ import annotations

import dataclasses
import functools
import os

import pytest

import kernel_variants as kv

SWEEP = os.environ.get("NORMFUSE_LOWERED_SWEEP") == "1"
LEGAL = [v for v in kv.PRENORM + kv.LOWERING if v.expect == "applied"]
DEFECTIVE = [v for v in kv.PRENORM if v.expect != "applied"]
PIPELINE = "hopper-ws{schedule=pingpong}"


@functools.lru_cache(maxsize=None)
def _fused(v):
    return kv.fused(v)


@functools.lru_cache(maxsize=None)
def _lowering(v, text=None):
    """(plan or None, hopper-ws remarks, IR unchanged on a miss) of the variant's fused TTIR."""
    from normfuse.ir import bridge
    from normfuse.passes import PassRun
    from normfuse.pipeline import parse_pipeline
    text = text if text is not None else _fused(v)[0]
    view = bridge.load(text, source_name=f"{v.name}.py", trusted=True)
    before = view.print()
    run = PassRun("hopper-ws", view)
    parse_pipeline(PIPELINE)[0].apply(view, run)
    return run.plan, [str(r) for r in run.remarks], view.print() == before


def test_the_matrix_covers_the_spellings_of_issue_23():
    seen = {axis: {getattr(v, axis) for v in LEGAL}
            for axis in ("form", "loop", "memory", "w", "dtype", "norm", "strides", "ydesc", "g")}
    assert {"tile", "rowblock", "rowblock_offsets", "rowblock_static", "persistent"} <= seen["form"]
    assert {"tiles", "offsets", "tl_range", "ptr_inc"} <= seen["loop"]
    assert {"mask", "nomask", "block_ptr", "desc"} <= seen["memory"]
    assert seen["w"] == {"nk", "kn"} and seen["dtype"] == {"bf16", "fp16"}
    assert seen["strides"] == {"", "runtime"} and seen["ydesc"] == {False, True}
    # runtime strides with each memory form and the row walk
    rt = [v for v in LEGAL if v.strides == "runtime"]
    assert {v.memory for v in rt} == {"mask", "nomask", "block_ptr", "desc"}
    assert {v.form for v in rt} >= {"tile", "persistent", "rowblock", "rowblock_offsets"}
    assert len(LEGAL) >= 60 and len(set(v.name for v in LEGAL)) == len(LEGAL)
    assert set(kv.WS_REFUSED) <= {v.name for v in LEGAL}


@pytest.mark.parametrize("v", LEGAL, ids=[v.name for v in LEGAL])
def test_legal_variant_is_lowered_or_refused_by_name(v):
    """lazy-prenorm fuses the variant; hopper-ws lowers it, or refuses it with the reason of
    WS_REFUSED (each blocker with a fix) and the IR unchanged."""
    text, remarks = _fused(v)
    lp = [r for r in remarks if "[lazy-prenorm]" in r]
    assert lp and all("] applied:" in r for r in lp), remarks
    plan, ws, unchanged = _lowering(v)
    if v.name in kv.WS_REFUSED:
        assert plan is None and unchanged, ws
        assert ws and all("] missed:" in r for r in ws), ws
        assert any(kv.WS_REFUSED[v.name] in r for r in ws), ws
        assert all("; " in r.split("] missed:")[1] for r in ws), ws  # every blocker has a fix
        return
    assert plan is not None, ws
    assert any("] applied: lowered to the warp-specialized template" in r for r in ws), ws
    # the plan reads the operands as the variant lays them out
    assert plan.b_kn == (v.w == "kn")
    assert plan.n_stats == (2 if v.norm == "ln" else 1)
    assert plan.dtype == v.dtype and plan.out_dtype == v.dtype
    if v.form.startswith("rowblock"):
        what = "unrolled N tiles" if v.form == "rowblock_static" else "the row walk's later N tiles"
        assert any(what in r for r in ws), ws


def test_at_least_90_percent_of_the_legal_variants_are_lowered(capsys):
    """The share over the whole legal matrix, and the list of refusals with their reasons."""
    lowered, refused = [], {}
    for v in LEGAL:
        plan, ws, _ = _lowering(v)
        if plan is not None:
            lowered.append(v.name)
        else:
            refused[v.name] = [r.split("] missed: ", 1)[1] for r in ws]
    share = len(lowered) / len(LEGAL)
    with capsys.disabled():
        print(f"\nhopper-ws lowers {len(lowered)} of {len(LEGAL)} legal pre-norm variants "
              f"({100 * share:.0f} %); refused:")
        for name, why in refused.items():
            print(f"  {name}: {' | '.join(why)}")
    assert share >= 0.9, refused
    assert set(refused) == set(kv.WS_REFUSED), refused


@pytest.mark.parametrize("v", DEFECTIVE, ids=[v.name for v in DEFECTIVE])
def test_kernels_lazy_prenorm_refuses_are_lowered_or_refused_by_name(v):
    """The defective pre-norms (not fused) are still GEMM-shaped kernels: hopper-ws lowers them
    when their epilogue is the template's (a per-k-step scale is an A transform), else names
    why (a statistics loop it cannot fuse, a second store)."""
    plan, ws, unchanged = _lowering(v)
    if plan is None:
        assert unchanged and ws and all("] missed:" in r for r in ws), ws
        assert any("a loop other than the k-loop" in r or "side effects besides one tt.store" in r
                   for r in ws), ws
    else:
        assert v.defect in ("scale_in_loop", "per_element"), ws


# ---------------------------------------------------------------------------------------------
# The remarks: every blocker, with its fix, in the kernel's terms (item 2)
# ---------------------------------------------------------------------------------------------

def _unspecialized(v):
    """The variant's specialization with every stride an i32 (as a signature without example
    arguments describes it: nothing says they are 1 at launch)."""
    sig, consts, attrs = kv.specialization(v)
    for s in ("stride_xm", "stride_xk", "stride_wn", "stride_wk", "stride_ym", "stride_yn"):
        sig[s] = "i32"
        consts.pop(s, None)
    return sig, consts, attrs


def test_issue_23_kernel_every_stride_runtime_names_every_blocker():
    """Issue 23's kernel (every stride a runtime argument, W [K, N], masked loads) described by a
    signature with every stride an i32: lazy-prenorm fuses it; hopper-ws lists every blocker at
    once, each with its fix, naming the parameters: A's stride along K, W's strides (neither is
    known to be 1), the output's stride along N; and under the default schedule the 64-row tile
    too. The IR is unchanged."""
    v = next(v for v in kv.LOWERING if v.name == "rms_strides_kn")
    text, remarks = kv.fused_ttir(v, specialized=_unspecialized(v))
    assert any("[lazy-prenorm] applied" in r for r in remarks), remarks
    for pipeline, n in ((PIPELINE, 3), ("hopper-ws", 4)):
        from normfuse.ir import bridge
        from normfuse.passes import PassRun
        from normfuse.pipeline import parse_pipeline
        view = bridge.load(text, trusted=True)
        run = PassRun("hopper-ws", view)
        parse_pipeline(pipeline)[0].apply(view, run)
        ws = [str(r) for r in run.remarks]
        assert run.plan is None and view.print() == text
        assert len(ws) == n and all(f"/{n}] " in r for r in ws), ws
        a, b, out = ws[:3]
        assert "the A tile (X) is not contiguous along K: its stride along K, 'stride_xk', is a " \
               "runtime value" in a and "'stride_xk': pass it as 1" in a, a
        assert "the B tile (W) has no dimension of unit stride" in b and "'stride_wn'" in b \
            and "'stride_wk'" in b and "pass it as 1" in b, b
        assert "the output (Y)'s rows are not contiguous: its stride along N, 'stride_yn', is " \
               "a runtime value" in out and "'stride_yn': pass it as 1" in out, out
        assert all("tl.constexpr" in r for r in (a, b, out))
        if n == 4:
            assert "the coop schedule takes 128-row tiles" in ws[3] and \
                "hopper-ws{schedule=pingpong}" in ws[3], ws[3]
    # specialized as a launch on contiguous tensors makes them (strides of 1 are constants): lowered
    plan, ws, _ = _lowering(v)
    assert plan is not None, ws


def test_blockers_in_several_parts_are_all_named():
    """A column-major X, an unmasked kernel whose grid alone sets M, and a 64-row tile under coop:
    three blockers from three parts of the analysis, each with its fix."""
    v = dataclasses.replace(next(v for v in kv.PRENORM if v.name == "rms_nomask"), name="rms_nomask_colmajor")
    src = kv.source(v).replace("offs_m[:, None] * K + (k_off + offs_k)[None, :]",
                               "offs_m[:, None] + (k_off + offs_k)[None, :] * M")
    assert src != kv.source(v)
    text, _ = kv.fused_ttir(v, source=src)
    plan, ws, unchanged = _lowering(v, text)
    assert plan is None and unchanged
    joined = "\n".join(ws)
    assert "the A tile (X) is not contiguous along K: its rows are" in joined, ws
    assert "pass the matrix row-major" in joined
    assert "the output's M cannot be told" in joined and "mask the store with rows < M" in joined
    assert "schedule=pingpong" not in joined  # pingpong takes 64-row tiles


# ---------------------------------------------------------------------------------------------
# Numerics: the lowered TTGIR against the unlowered kernel in the interpreter
# ---------------------------------------------------------------------------------------------

# the forms this issue newly lowers: the peeled row walk with LayerNorm's carried mean and rstd
# (and its shift and column sums), issue 23's kernel (runtime strides, W [K, N]), block pointers in
# a row walk, the unrolled row walk, the output through a descriptor, an unmasked persistent
# kernel (its M and N read from the loop bounds), a mean of squares accumulated per k-step
SAMPLE = ["ln_rowblock", "rms_strides_kn", "rms_block_ptr_rowblock", "rms_desc_ydesc",
          "rms_rowblock_static_kn", "ln_persistent_nomask", "rms_meansq"]
CI_SAMPLE = SAMPLE[:4]


def _variant(name):
    return next(v for v in kv.PRENORM + kv.LOWERING if v.name == name)


def _numerics_params():
    names = [v.name for v in LEGAL if v.name not in kv.WS_REFUSED] if SWEEP else SAMPLE
    return [pytest.param(n, marks=() if n in CI_SAMPLE or SWEEP else
                         pytest.mark.skip(reason="NORMFUSE_LOWERED_SWEEP=1")) for n in names]


@pytest.mark.parametrize("name", _numerics_params())
def test_lowered_variant_matches_the_unlowered_kernel(name):
    """Compiled through lazy-prenorm and hopper-ws{schedule=pingpong}: the lowered TTGIR (2
    persistent CTAs) and the unlowered kernel's TTIR, on the same inputs at the variant's ragged
    shape (N and K rounded up to multiples of 8: TMA rows are 16-byte aligned), every output
    written (Y starts as NaN) and equal up to bf16/fp16 rounding of the reassociated sums."""
    pytest.importorskip("numpy")
    import torch
    from normfuse.testing import rel_diff, run_ir, run_lowered
    v = _variant(name)
    ck = kv.compile_variant(v, passes="lazy-prenorm," + PIPELINE)
    assert ck.lowered is not None, ck.remarks
    m, n, k = kv.shape(v)
    n, k = -(-n // 8) * 8, -(-k // 8) * 8
    gen = torch.Generator().manual_seed(3)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[v.dtype]
    w = (torch.randn(n, k, generator=gen) / k ** 0.5).to(dt)
    t = {"X": (torch.randn(m, k, generator=gen) * 2 + 0.5).to(dt),
         "W": w if v.w == "nk" else w.t().contiguous(),
         "G": (1 + 0.1 * torch.randn(k, generator=gen)).to(dt),
         "B": (0.1 * torch.randn(k, generator=gen)).to(dt),
         "Y": torch.full((m, n), float("nan")).to(dt)}
    runtime = kv.runtime_args(v, t, m, n, k)
    # the unlowered kernel's TTIR takes the runtime arguments less those specialized to constants
    fn = ck.kernel.src.fn
    consts = {fn.arg_names[i[0] if isinstance(i, tuple) else i] for i in ck.kernel.src.constants}
    names = [p for i, p in enumerate(fn.arg_names) if i not in fn.constexprs]
    assert len(names) == len(runtime)
    naive = [x.clone() if isinstance(x, torch.Tensor) else x for x, p in zip(runtime, names)
             if p not in consts]
    tiles = -(-m // kv.BM) * -(-n // kv.BN)
    grid = tiles if v.form == "tile" else 3 if v.form == "persistent" else -(-m // kv.BM)
    run_ir(ck.asm["ttir"], naive, (grid,), trusted=True)
    y_naive = naive[[p for p in names if p not in consts].index("Y")]
    assert not torch.isnan(y_naive.float()).any()
    run, = run_lowered(ck.lowered, runtime, names=names, programs=2)
    y = run.args["Y"]
    assert not torch.isnan(y.float()).any(), "the lowered kernel left outputs unwritten"
    assert rel_diff(y_naive, y) < 2e-2, rel_diff(y_naive, y)


# ---------------------------------------------------------------------------------------------
# On the GPU: the lowered kernel launched by normfuse.jit against the naive kernel and fp64
# ---------------------------------------------------------------------------------------------

GPU_SAMPLE = ["rms_strides_kn", "ln_strides_kn_fp16", "rms_strides_rowblock_kn", "ln_rowblock",
              "rms_rowblock_static", "rms_block_ptr_rowblock", "rms_desc_ydesc", "ln_persistent_nomask"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_SAMPLE)
def test_gpu_lowered_variant_matches_naive(name):
    """normfuse.jit with lazy-prenorm and hopper-ws{schedule=pingpong} launches the lowered kernel
    (a fallback to the Triton kernel is an error here: the shape is TMA-aligned, N and K
    multiples of 8) and it computes what the naive kernel does: every output written, an error
    against fp64 within 1.5x of the naive kernel's (plus rounding slack), bitwise repeatable."""
    import warnings
    import torch
    v = _variant(name)
    m, n, k = kv.shape(v)
    dims = (m, -(-n // 8) * 8, -(-k // 8) * 8)
    t = kv.inputs(v, seed=1, dims=dims)
    ref = kv.reference(v, t)
    naive = kv.run_variant(v, dict(t, Y=t["Y"].clone()), passes=(), dims=dims)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # "running the unlowered kernel: ..."
        cks: list = []
        lowered = kv.run_variant(v, dict(t, Y=t["Y"].clone()), passes="lazy-prenorm," + PIPELINE,
                                 dims=dims, compiled=cks)
        assert cks[0].lowered is not None, cks[0].remarks
        again = kv.run_variant(v, dict(t, Y=t["Y"].clone()), passes="lazy-prenorm," + PIPELINE,
                               dims=dims)
    torch.cuda.synchronize()
    assert torch.isfinite(naive).all() and torch.isfinite(lowered).all(), name
    rel = lambda a: float((a.double() - ref).norm() / ref.norm())  # noqa: E731
    tol = {"bf16": 8e-3, "fp16": 1e-3}[v.dtype]
    assert rel(naive) < 4 * tol, (name, rel(naive))
    assert rel(lowered) <= 1.5 * rel(naive) + tol / 4, (name, rel(lowered), rel(naive))
    assert torch.equal(lowered, again), name
