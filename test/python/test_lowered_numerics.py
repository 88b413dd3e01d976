"""The fast path on the CPU: the warp-specialized kernels hopper-ws lowers to, interpreted (issue 24).

Every lowered kernel CI compiles runs here as TTGIR in `normfuse.testing`'s interpreter, all CTAs
of a small persistent grid and all their partitions interleaved (TMA, mbarriers, wgmma, the
shared statistics' stamped words), with the arguments the host side builds for it (descriptors
over views of the tensors, derived column sums, statistics words and epoch). Each is compared
with the unlowered kernel's TTIR run on the same inputs and with the fp64 reference, on ragged
shapes (partial tiles in M and N, in K where the kernel was compiled for a ragged K), several
tiles per CTA, and the race check on. The TTGIR-level tests at the end plant synchronization bugs
in a lowered kernel's text and check that the interpreter names them.

Heavier sweeps (more seeds, pingpong at 128x128 for RMSNorm, the variant matrix through
hopper-ws{schedule=pingpong}) run with NORMFUSE_LOWERED_SWEEP=1.
"""
from __future__ import annotations

import functools
import os
import re

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402

from normfuse.kernels.configs import GemmConfig  # noqa: E402
from normfuse.ops import prenorm_linear as ops  # noqa: E402
from normfuse.reference import layernorm_linear_ref, rel_err, rmsnorm_linear_ref  # noqa: E402
from normfuse.testing import (InterpreterError, RaceError, check_ir_numerics,  # noqa: E402
                              check_lowered_numerics, lowered_launch, rel_diff, run_ir, run_lowered)

SWEEP = os.environ.get("NORMFUSE_LOWERED_SWEEP") == "1"
TOL = 2e-2       # lowered vs unlowered, max |diff| / max |naive| (bf16 outputs: ~5e-3 seen)
REF_TOL = 1e-2   # the unlowered kernel vs fp64, Frobenius
PAD = 64         # x is a view with row stride K + PAD (the descriptors must use its stride)

# The kernels test_hopper_ws.test_lowered_wgmma_is_not_serialized compiles (same arguments: one
# compilation per session serves both): every kernel kind, every tile order of the template.
KINDS = [("gemm", ()), ("rms", (("has_g", False),)), ("rms", (("has_g", True),)),
         ("ln", (("has_g", False), ("has_b", False))), ("ln", (("has_g", True), ("has_b", True)))]
# "" is the pass's default (schedule=auto: coop2 for the folded pre-norm kernels, coop for the
# rest); coop explicitly for the folded ones
ORDERS = ["", "{stats-share=true}", "{schedule=coop}"]


@functools.lru_cache(maxsize=None)
def _ci_kernel(kind, flags, order):
    passes = ("lazy-prenorm," if kind != "gemm" else "") + "hopper-ws" + order
    return ops.aot_compile(kind, M=262144, N=1024, K=512, passes=passes, **dict(flags))


@functools.lru_cache(maxsize=None)
def _ragged_kernel(kind, flags, passes, config, sms):
    """A kernel compiled for a ragged K (its k-masks, EVEN_K=False), as the op compiles it."""
    return ops.aot_compile(kind, M=300, N=520, K=200, config=config, passes=passes, sms=sms,
                           **dict(flags))


def _inputs(kind, M, N, K, flags, seed=0):
    """(runtime args of the naive kernel, names, fp64 reference): x a [M, K] view of a wider
    buffer, rows with non-zero means, g != 1, beta != 0, Y NaN-poisoned."""
    flags = dict(flags)
    gen = torch.Generator().manual_seed(seed)
    xbuf = (torch.randn(M, K + PAD, generator=gen) + 3.0 * torch.randn(M, 1, generator=gen)).bfloat16()
    x = xbuf[:, :K]
    g = (0.5 + torch.rand(K, generator=gen)).bfloat16()
    b = (0.5 * torch.randn(K, generator=gen)).bfloat16()
    w = (0.1 * torch.randn(N, K, generator=gen)).bfloat16()
    y = torch.full((M, N), float("nan")).bfloat16()
    if kind == "gemm":
        return ([xbuf, w, y, M, N, K, K + PAD, K, N], ["X", "W", "Y", "M", "N", "K", "sx", "sw", "sy"],
                x.double() @ w.double().t())
    if kind == "rms":
        eps = 1e-6
        ref = rmsnorm_linear_ref(x, g if flags.get("has_g") else None, w, eps)
        return ([xbuf, g, w, y, w, M, N, K, K + PAD, K, N, eps],
                ["X", "G", "W", "Y", "BIAS", "M", "N", "K", "sx", "sw", "sy", "eps"], ref)
    eps = 1e-5
    ref = layernorm_linear_ref(x, g if flags.get("has_g") else None, b if flags.get("has_b") else None,
                               w, eps)
    return ([xbuf, g, b, w, y, w, M, N, K, K + PAD, K, N, eps],
            ["X", "G", "B", "W", "Y", "BIAS", "M", "N", "K", "sx", "sw", "sy", "eps"], ref)


def _naive_grid(ck, M, N):
    """The grid the op launches the unlowered kernel with (NUM_PROGRAMS, or one per tile)."""
    fn = ck.kernel.src.fn
    c = {fn.arg_names[k[0] if isinstance(k, tuple) else k]: v for k, v in ck.kernel.src.constants.items()}
    tiles = -(-M // c["BLOCK_M"]) * -(-N // c["BLOCK_N"])
    return (c.get("NUM_PROGRAMS") or tiles,)


@functools.lru_cache(maxsize=64)
def _naive_run(ttir, kind, flags, M, N, K, grid):
    """The unlowered kernel's output, once per (kernel, shape): the tile orders share it."""
    args, names, ref = _inputs(kind, M, N, K, flags)
    run_ir(ttir, args, grid, trusted=True)  # a compiled kernel's own text
    return args[names.index("Y")], ref


def _check(ck, kind, flags, M, N, K, programs, seeds=(0,)):
    assert ck.lowered is not None, ck.remarks
    args, names, _ = _inputs(kind, M, N, K, flags)
    grid = _naive_grid(ck, M, N)
    naive, ref = _naive_run(ck.asm["ttir"], kind, flags, M, N, K, grid)
    e_naive = rel_err(naive, ref)
    assert not torch.isnan(naive.float()).any() and e_naive < REF_TOL, e_naive
    runs = run_lowered(ck.lowered, args, names=names, programs=programs, seeds=seeds)
    for r in runs:
        y = r.args["Y"]
        assert not torch.isnan(y.float()).any(), (
            f"seed {r.seed}: the lowered kernel left {int(torch.isnan(y.float()).sum())} outputs "
            "NaN (unwritten tiles, or statistics words of another launch taken)")
        assert rel_diff(naive, y) < TOL, (r.seed, rel_diff(naive, y))
        e = rel_err(y, ref)
        assert e <= 1.5 * e_naive + 2e-3, (r.seed, e, e_naive)
    return runs


# ---------------------------------------------------------------------------------------------
# Every lowered kernel CI compiles
# ---------------------------------------------------------------------------------------------

# (M, N, K, programs): 3 x 3 tiles of 128 x 256 (the last row block 48 rows, the last column
# block 16 columns), K = 3 k-tiles (these kernels were compiled for K % 64 == 0); 3 programs
# take 3 tiles each (the shared statistics' order: some CTAs reach a row block's words before
# its first tile wrote them), 2 programs 5 and 4
SHAPE = {"": (304, 528, 192, 2), "{stats-share=true}": (304, 528, 192, 3),
         "{schedule=coop}": (304, 528, 192, 2), "{schedule=coop2}": (304, 528, 192, 2)}


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.strip("{}") or "grouped")
@pytest.mark.parametrize("kind,flags", KINDS, ids=["gemm", "rms-folded", "rms-g", "ln-folded", "ln-g-beta"])
def test_ci_lowered_kernel_matches_naive_and_fp64(kind, flags, order):
    ck = _ci_kernel(kind, flags, order)
    M, N, K, programs = SHAPE[order]
    runs = _check(ck, kind, flags, M, N, K, programs)
    cfg = ck.lowered.instance.config
    if order == "{stats-share=true}" and cfg.stats_share:
        # the share order made some CTA read a row block's words before its first tile wrote
        # them (stale words of "the previous launch" in the buffer: it had to wait)
        assert runs[0].info.spins > 0, runs[0].info


@pytest.mark.parametrize("order", ["", "{schedule=coop2,stats-share=true}"],
                         ids=["coop2", "coop2-shared"])
def test_epi_prefetch_matches_bitwise(order):
    """hopper-ws{epi-prefetch=true}: LayerNorm's column-sum load moves to a hook of its own
    (EPRE) that the consumer runs before each tile's k-loop, and the epilogue takes its value:
    the same numbers, bitwise, as the loads at the epilogue's start (interpreted, several tiles
    per CTA, the race check on)."""
    kind, flags = KINDS[3]
    sep = "," if order else ""
    ck = _ci_kernel(kind, flags, (order[:-1] + sep + "epi-prefetch=true}") if order
                    else "{epi-prefetch=true}")
    low = ck.lowered.lowered
    assert low.instance.config.epi_prefetch, ck.remarks
    assert re.search(r"def epre\(pid_m, pid_n, eargs, BN: gl.constexpr\):\n"
                     r"    cs0_v = colvec_load\(.*BN\)\n    return \(cs0_v, \)", low.source), \
        low.source
    assert "def epi(acc, st0, st1, c0, pid_m, pid_n, eargs, ev):\n    cs0_v = ev[0]" in low.source
    M, N, K, programs = 304, 528, 192, 3
    runs = _check(ck, kind, flags, M, N, K, programs)
    base = _check(_ci_kernel(kind, flags, order), kind, flags, M, N, K, programs)
    assert "def epre(" not in _ci_kernel(kind, flags, order).lowered.lowered.source
    assert torch.equal(runs[0].args["Y"], base[0].args["Y"])


def test_epi_prefetch_says_where_it_does_not_apply():
    """Without a 1-D load in the epilogue (RMSNorm, no bias) epi-prefetch changes nothing and the
    remark says why."""
    ck = ops.aot_compile("rms", M=262144, N=1024, K=512, has_g=False,
                         passes="lazy-prenorm,hopper-ws{epi-prefetch=true}")
    assert not ck.lowered.lowered.instance.config.epi_prefetch
    assert "epi-prefetch not applied: the epilogue loads no 1-D vector" in str(ck.remarks)


@pytest.mark.parametrize("kind,flags", [KINDS[1], pytest.param(*KINDS[3], marks=pytest.mark.slow)],
                         ids=["rms-folded", "ln-folded"])
def test_coop2_shared_statistics_match_coop2_bitwise(kind, flags):
    """hopper-ws{schedule=coop2,stats-share=true}: each warpgroup publishes its half's statistics
    from a row block's first tile and takes them in the row block's other tiles (the shared
    statistics' order, 3 programs: some CTA reaches a row block's words before they are written
    and waits). Against the unlowered kernel and fp64 (`_check`), and bitwise against coop2
    computing the statistics in every tile (the same numbers in the same order)."""
    M, N, K, programs = 304, 528, 192, 3
    ck = _ci_kernel(kind, flags, "{schedule=coop2,stats-share=true}")
    cfg = ck.lowered.instance.config
    assert cfg.halves and cfg.stats_share, cfg
    runs = _check(ck, kind, flags, M, N, K, programs)
    assert runs[0].info.spins > 0, runs[0].info
    base = _check(_ci_kernel(kind, flags, "{schedule=coop2}"), kind, flags, M, N, K, programs)
    assert torch.equal(runs[0].args["Y"], base[0].args["Y"])


@pytest.mark.parametrize("order", ["{stats-share=true}", "{schedule=coop2}"] + ([""] if SWEEP else []),
                         ids=lambda o: o.strip("{}") or "grouped")
def test_split_output_members_hold_their_columns(order):
    """A split output (`LoweredLaunch.split`, one GEMM whose output columns land in separate
    contiguous matrices, e.g. q / k / v): RMSNorm with g in the loop, M = 304, N = 528 split at
    columns 256 and 512 into [304, 256], [304, 256] and [304, 16] members (the last one ragged),
    each NaN-poisoned; every member equals its columns of the unlowered kernel's single output
    (and fp64's), on 3 programs with the shared statistics' order. Starts that are no multiple
    of the tile's columns, or a post-norm's plan, are refused by name."""
    kind, flags = "rms", (("has_g", True),)
    ck = _ci_kernel(kind, flags, order)
    M, N, K, programs = SHAPE[order]
    lw = ck.lowered
    assert lw.plan.config.block_n == 256
    split = lw.split((256, 512))
    assert lw.split([256, 512]) is split and split.out_split == (256, 512)  # compiled once
    args, names, _ = _inputs(kind, M, N, K, flags)
    naive, ref = _naive_run(ck.asm["ttir"], kind, flags, M, N, K, _naive_grid(ck, M, N))
    assert split.member_widths(N) == (256, 256, 16)

    def members():
        return [torch.full((M, w), float("nan")).bfloat16() for w in (256, 256, 16)]
    runs = run_lowered(split, args, names=names, programs=programs, outs=members)
    for r in runs:
        outs = r.args["outs"]
        y = torch.cat(outs, dim=1)
        assert not torch.isnan(y.float()).any(), "a member's tile was not written"
        assert rel_diff(naive, y) < TOL, rel_diff(naive, y)
        assert rel_err(y, ref) <= 1.5 * rel_err(naive, ref) + 2e-3
        assert torch.isnan(r.args["Y"].float()).all()  # the single output is not written
        assert r.binding.bound["c1_desc"].shape == (M, 256)
        assert r.binding.bound["c2_desc"].shape == (M, 16)
        assert r.binding.bound["c3_desc"] is None
    with pytest.raises(ValueError, match="multiples of the tile's 256 columns"):
        lw.split((128,))
    with pytest.raises(ValueError, match="2 to 4 members"):
        lw.split((256, 512, 768, 1024))
    with pytest.raises(ValueError, match="already writes a split output"):
        split.split((256,))
    bad = members()
    bad[2] = torch.full((M, 32), float("nan")).bfloat16()
    assert "member 2 must be a contiguous [304, 16] tensor" in split.why_not(args, bad)
    assert "needs 3 member tensors" in split.why_not(args, bad[:2])


# test_lowered_launch.test_bound_arguments_of_the_ops_kernels_match_torch's kernels (same
# arguments): compiled for M = 1000, N = 520, K = 1032 (128 x 128 tiles, K ragged: EVEN_K off),
# g folded with pointer loads, g and beta in the loop with TMA loads
LAUNCH_KINDS = [("rms", True), ("rms", False), ("ln", True), ("ln", False)]


@functools.lru_cache(maxsize=None)
def _launch_kernel(kind, fold):
    return ops.aot_compile(kind, M=1000, N=520, K=1032, has_g=not fold, has_b=not fold, tma=not fold)


@pytest.mark.parametrize("kind,fold", LAUNCH_KINDS, ids=["rms-folded", "rms-g", "ln-folded", "ln-g-beta"])
def test_ragged_k(kind, fold):
    """Kernels compiled for a ragged K, run at K = 200 (the last k-tile 8 wide: TMA zero-fills
    past K, the statistics and LayerNorm's shift must not count it), 300 x 264 (a 44-row block,
    an 8-column block: 3 x 3 tiles of 128 x 128), 2 programs (5 and 4 tiles)."""
    ck = _launch_kernel(kind, fold)
    flags = (("has_g", not fold), ("has_b", not fold))
    _check(ck, kind, flags, 300, 264, 200, 2, seeds=(0, 1) if SWEEP else (0,))


def test_ragged_k_shared_statistics_through_check_pass_numerics():
    """check_pass_numerics on the naive LayerNorm kernel with shared statistics, compiled for a
    ragged K (two statistics published per row block; no shift folded): the TTIR before and after
    lazy-prenorm, and the lowered kernel on 3 programs, against each other and fp64."""
    from normfuse.kernels.prenorm_gemm import layernorm_gemm_naive
    from normfuse.testing import check_pass_numerics
    M, N, K = 300, 520, 200
    flags = (("has_g", False), ("has_b", False))
    args, names, ref = _inputs("ln", M, N, K, flags)
    consts = dict(HAS_G=False, HAS_B=False, HAS_BIAS=False, EVEN_K=False, USE_TMA=False,
                  NUM_PROGRAMS=0, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8)
    res = check_pass_numerics(layernorm_gemm_naive, args, constexprs=consts, grid=(9,),
                              passes="lazy-prenorm,hopper-ws{stats-share=true}", num_warps=8,
                              num_stages=3, programs=3, seeds=(0, 1) if SWEEP else (0,))
    assert res.lowered and any("stats-shared" in r for r in res.applied), res.remarks
    assert res.diffs["Y"] < TOL and res.lowered_diffs["Y"] < TOL, (res.diffs, res.lowered_diffs)
    e_naive = rel_err(res.before["Y"], ref)
    for r in res.lowered:
        assert rel_err(r.args["Y"], ref) <= 1.5 * e_naive + 2e-3
    assert res.lowered[0].info.spins > 0  # some CTA waited for another's words


@pytest.mark.parametrize("kind,flags", [
    pytest.param("ln", (("has_g", True), ("has_b", True)), id="ln-g-beta"),
    pytest.param("rms", (("has_g", False),), id="rms-folded",
                 marks=pytest.mark.skipif(not SWEEP, reason="NORMFUSE_LOWERED_SWEEP=1")),
])
def test_pingpong(kind, flags):
    """The ping-pong schedule (two consumers taking turns on the ring through the `order`
    barriers, a 4-stage ring) at 128 x 128 tiles: 3 x 5 tiles on 2 programs."""
    cfg = GemmConfig(128, 128, 64, 8, 8, 3, persistent=True)
    ck = _ragged_kernel(kind, flags, "lazy-prenorm,hopper-ws{schedule=pingpong}", cfg, 2)
    assert "pingpong" in str(ck.lowered.instance.config)
    runs = _check(ck, kind, flags, 300, 520, 200, 2)
    assert runs[0].info.agents == 2 * 3  # per CTA: two consumers and the loader


def test_tile_statistics_with_block_k_equal_to_block_n():
    """RMSNorm's statistic accumulated as a [BM, BK] tile (lazy-prenorm's default for one
    statistic) and reduced after the loop, at BLOCK_K == BLOCK_N = 128: that reduction has the
    accumulator's shape, and hopper-ws once took it for a post-norm's row reduction and refused
    the kernel ("the epilogue reduces rows of the accumulator"). Lowered, and run: 3 x 3 tiles
    (ragged M and N), 3 k-tiles, 2 programs."""
    cfg = GemmConfig(128, 128, 128, 8, 8, 3, persistent=True)
    flags = (("has_g", False),)
    ck = ops.aot_compile("rms", M=8192, N=512, K=2048, config=cfg, passes="lazy-prenorm,hopper-ws",
                         has_g=False, sms=2)
    assert ck.lowered is not None, ck.remarks
    assert any("statistics summed elementwise" in r for r in ck.remarks), ck.remarks
    assert "128x128x128" in str(ck.lowered.instance.config)
    _check(ck, "rms", flags, 300, 264, 384, 2)


def _canonical(ttgir: str) -> str:
    """TTGIR without locations (the hooks' file path, which has the hooks' hash, is in them)."""
    t = re.sub(r"^#loc.*$", "", ttgir, flags=re.M)
    t = re.sub(r"\s*loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)", "", t)
    return re.sub(r"\n+", "\n", t)


@pytest.mark.slow
def test_every_lowered_kernel_of_test_hopper_ws_is_one_run_here():
    """test_hopper_ws lowers the pre-norm kernels in every form the ops launch (persistent or
    per tile, pointer or TMA loads: 12) and with shared statistics at N = 2048; the lowered
    program depends only on the hooks and the tile config, so each is, locations aside, one of
    the kernels run above (the TTGIR compared). `slow` (14 s of CPU, the 14 compilations in
    this file's worker): a check that the kernels above cover test_hopper_ws's, not of a kernel."""
    cfg_p = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    cfg_t = GemmConfig(128, 256, 64, 8, 8, 3)
    run_here: dict[str, set] = {}
    for k, f in KINDS:
        for o in ORDERS:
            run_here.setdefault(_canonical(_ci_kernel(k, f, o).lowered.kernel.asm["ttgir"]), set()).add((k, f, o))
    for kind, flags in KINDS[1:]:
        for config, persistent, tma in ((cfg_p, True, False), (cfg_t, False, False), (cfg_t, False, True)):
            ck = ops.aot_compile(kind, M=262144, N=2048, K=1024, config=config, persistent=persistent,
                                 tma=tma, **dict(flags))
            assert (kind, flags, "") in run_here.get(_canonical(ck.lowered.kernel.asm["ttgir"]), ()), \
                (kind, flags, persistent, tma)
    for kind, flags in (KINDS[1], KINDS[3]):
        ck = ops.aot_compile(kind, M=262144, N=2048, K=1024,
                             passes="lazy-prenorm,hopper-ws{stats-share=true}", **dict(flags))
        assert (kind, flags, "{stats-share=true}") in run_here.get(
            _canonical(ck.lowered.kernel.asm["ttgir"]), ()), (kind, flags)


# ---------------------------------------------------------------------------------------------
# The lit inputs (test/lit/hopper-ws.mlir), through normfuse-opt's pipeline
# ---------------------------------------------------------------------------------------------

LIT = __import__("pathlib").Path(__file__).resolve().parents[1] / "lit" / "hopper-ws.mlir"


def _lit_chunk(name):
    return next(c for c in LIT.read_text().split("// -----") if f"@{name}(" in c)


@pytest.mark.parametrize("name", ["rms_fused", "gemm_bias"])
def test_lit_lowered(name):
    """128 x 256 x 64 tiles; rms_fused wraps its rows and columns (% M, % N) and takes a ragged
    M and N, gemm_bias reads them unmasked (whole tiles); both mask K."""
    gen = torch.Generator().manual_seed(9)
    M, N, K = (200, 264, 136) if name == "rms_fused" else (256, 512, 136)
    x = (torch.randn(M, K, generator=gen) + 2.0).bfloat16()
    w = (0.1 * torch.randn(N, K, generator=gen)).bfloat16()
    y = torch.full((M, N), float("nan")).bfloat16()
    if name == "rms_fused":
        args = [x, w, y, M, N, K, K, K, N, 1e-5]
        ref = rmsnorm_linear_ref(x, None, w, 1e-5)
    else:
        bias = torch.randn(N, generator=gen).bfloat16()
        args = [x, w, y, bias, M, N, K, K, K, N]
        ref = x.double() @ w.double().t() + bias.double()
    res = check_ir_numerics(_lit_chunk(name), args, (2, 2), passes="hopper-ws", kernel=name,
                            programs=2)
    assert res.lowered, res.remarks
    out = res.lowered[0].args["arg2"]
    assert not torch.isnan(out.float()).any()
    assert res.lowered_diffs["arg2"] < TOL, res.lowered_diffs
    assert rel_err(out, ref) < REF_TOL


# ---------------------------------------------------------------------------------------------
# The host binding, determinism, the shared statistics' epochs
# ---------------------------------------------------------------------------------------------

def test_binding_is_the_host_launch():
    """The arguments come from the lowering's own host code: descriptors over views of the
    tensors (x's row stride, not K), the grid of `programs` CTAs; the TTGIR's parameters match."""
    ck = _ci_kernel("ln", KINDS[4][1], "")
    args, names, _ = _inputs("ln", 304, 528, 192, KINDS[4][1])
    b = lowered_launch(ck.lowered, args, programs=2)
    assert b.grid == (2, 1, 1)
    a_desc = b.descriptors["a_desc"]
    assert list(a_desc.strides) == [192 + PAD, 1] and list(a_desc.shape) == [304, 192]
    assert list(a_desc.block) == [128, 64]
    assert a_desc.base.data_ptr() == args[0].data_ptr()
    assert list(b.descriptors["c_desc"].shape) == [304, 528]
    params = re.search(r"tt\.func public @ws_gemm_kernel\((.*?)\) attributes", ck.asm["ttgir"], re.S).group(1)
    assert len(re.findall(r"%[\w]+: ", params)) == len(b.args)


def test_interleavings_are_seeded_and_the_result_does_not_depend_on_them():
    ck = _ci_kernel("rms", KINDS[1][1], "")
    args, names, _ = _inputs("rms", 304, 528, 192, KINDS[1][1])
    r0, r0b, r1 = (run_lowered(ck.lowered, args, names=names, programs=3, seeds=(s,))[0]
                   for s in (0, 0, 5))
    assert r0.info.steps == r0b.info.steps and torch.equal(r0.args["Y"], r0b.args["Y"])
    # another interleaving, the same bits (each tile's arithmetic does not depend on the order)
    assert torch.equal(r0.args["Y"], r1.args["Y"])


def test_shared_statistics_take_only_their_launchs_words():
    """Two launches on one statistics buffer (as SharedStats keeps it), the second on other
    inputs with the next epoch: it must not take the first launch's words. And words that carry
    the launch's own epoch before it starts (a host that reused an epoch) are taken: NaN in the
    output shows it."""
    from normfuse.testing import stale_words
    ck = _ci_kernel("rms", KINDS[1][1], "{stats-share=true}")
    assert ck.lowered.instance.config.stats_share
    M, N, K = 304, 528, 192
    rows = 3 * 128
    sbuf = torch.zeros(3 * rows, dtype=torch.int64)
    outs = []
    for epoch, seed in ((5, 1), (6, 2)):
        args, names, ref = _inputs("rms", M, N, K, KINDS[1][1], seed=seed)
        b = lowered_launch(ck.lowered, args, programs=3, epoch=epoch, sbuf=sbuf)
        info = run_ir(ck.lowered.kernel.asm["ttgir"], b.args, b.grid, seed=seed, trusted=True)
        outs.append((args[names.index("Y")], ref, info))
    for y, ref, _ in outs:
        assert rel_err(y, ref) < REF_TOL
    assert (sbuf >> 32).max() == 6  # the second launch's stamps
    # a reused epoch: the stale words (NaN) carry the epoch the kernel waits for
    args, names, _ = _inputs("rms", M, N, K, KINDS[1][1])
    b = lowered_launch(ck.lowered, args, programs=3, epoch=7, sbuf=stale_words(rows, 8))
    run_ir(ck.lowered.kernel.asm["ttgir"], b.args, b.grid, seed=0, trusted=True)
    assert torch.isnan(args[names.index("Y")].float()).any()


# ---------------------------------------------------------------------------------------------
# The race check: synchronization bugs planted in a lowered kernel's TTGIR
# ---------------------------------------------------------------------------------------------

def _default_region(ttgir):
    start = ttgir.index("ttg.warp_specialize(")
    return start, ttgir.index("partition0(", start)


def _run_text(text, seed=0):
    ck = _ci_kernel("rms", KINDS[1][1], "")
    args, names, _ = _inputs("rms", 304, 528, 192, KINDS[1][1])
    b = lowered_launch(ck.lowered, args, programs=3)
    return run_ir(text, b.args, b.grid, seed=seed)


def test_race_consumer_reads_a_slot_before_its_phase():
    """The consumer waits for `ready[s]` with parity 1 instead of (pos / STAGES) & 1: a fresh
    barrier passes that at once, and the consumer reads a slot whose TMA load has not landed."""
    text = _ci_kernel("rms", KINDS[1][1], "").asm["ttgir"]
    lo, hi = _default_region(text)
    m = re.search(r"ttng\.wait_barrier (%\w+), (%\w+), %true", text[lo:hi])
    bad = text[:lo] + text[lo:hi].replace(m.group(0), f"ttng.wait_barrier {m.group(1)}, %c1_i32, %true", 1) + text[hi:]
    with pytest.raises(RaceError, match="TMA load into it is still in flight|no happens-before|"
                                        "nothing has written yet"):
        _run_text(bad)


def test_race_slot_released_while_the_wgmma_reads_it():
    """The consumer keeps two wgmma groups in flight (pendings = 2) but still releases the
    previous slot after the wait: the loader overwrites a slot a running wgmma reads."""
    text = _ci_kernel("rms", KINDS[1][1], "").asm["ttgir"]
    bad = text.replace("{pendings = 1 : i32}", "{pendings = 2 : i32}")
    assert bad != text
    with pytest.raises(RaceError, match="may still be running|may still be read"):
        _run_text(bad)


def test_race_missing_proxy_fence():
    """The output tile is written to shared memory by the generic proxy (ttg.local_store) and
    read by the TMA store (async proxy): without fence_async_shared between, the TMA may read
    stale bytes."""
    text = _ci_kernel("rms", KINDS[1][1], "").asm["ttgir"]
    bad = re.sub(r"\n\s*ttng\.fence_async_shared \{bCluster = false\}[^\n]*", "", text)
    assert bad != text
    with pytest.raises(RaceError, match="fence.proxy.async"):
        _run_text(bad)


def test_deadlock_is_reported_with_the_waits():
    """A consumer that never releases its slots: the loader waits forever on `empty`."""
    text = _ci_kernel("rms", KINDS[1][1], "").asm["ttgir"]
    lo, hi = _default_region(text)
    body = re.sub(r"\n\s*ttng\.arrive_barrier [^\n]*", "", text[lo:hi])
    with pytest.raises(InterpreterError, match=r"deadlock: .*partition0 waits at .* mbarrier"):
        _run_text(text[:lo] + body + text[hi:])


# ---------------------------------------------------------------------------------------------
# On the GPU: the interpreter against the hardware, same kernel, same arguments, same grid
# ---------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("kind,flags,order", [
    pytest.param("rms", KINDS[1][1], "", id="rms-folded"),
    pytest.param("ln", KINDS[4][1], "", id="ln-g-beta"),
    pytest.param("ln", KINDS[3][1], "{stats-share=true}", id="ln-folded-stats-share"),
    pytest.param("ln", KINDS[3][1], "{stats-rows=false}", id="ln-folded-operand-layout"),
    pytest.param("rms", KINDS[1][1], "{stats-rows=false}", id="rms-folded-operand-layout"),
    pytest.param("ln", KINDS[3][1], "{stats-lanes=false}", id="ln-folded-one-sum"),
])
def test_gpu_interpreter_agrees_with_the_gpu(kind, flags, order):
    """The lowered kernel launched on the H200 with 3 programs (LoweredLaunch, the real host
    binding) and interpreted on CPU copies of the same inputs: the same output up to the wgmma's
    summation order (bf16 outputs: a few last-bit differences)."""
    ck = _ci_kernel(kind, flags, order)
    args, names, ref = _inputs(kind, 304, 528, 192, flags)
    gpu = [a.cuda() if isinstance(a, torch.Tensor) else a for a in args]
    ck.lowered(gpu, grid=3)
    torch.cuda.synchronize()
    y_gpu = gpu[names.index("Y")].cpu()
    y_cpu = run_lowered(ck.lowered, args, names=names, programs=3)[0].args["Y"]
    assert not torch.isnan(y_gpu.float()).any() and not torch.isnan(y_cpu.float()).any()
    assert rel_diff(y_gpu, y_cpu) < 1e-2, rel_diff(y_gpu, y_cpu)
    same = (y_gpu.view(torch.int16) == y_cpu.view(torch.int16)).float().mean().item()
    assert same > 0.5, same  # most elements bitwise equal
    assert abs(rel_err(y_gpu, ref) - rel_err(y_cpu, ref)) < 2e-3


# ---------------------------------------------------------------------------------------------
# Sweeps (NORMFUSE_LOWERED_SWEEP=1): more seeds on every CI kernel, the variant matrix
# ---------------------------------------------------------------------------------------------

@pytest.mark.skipif(not SWEEP, reason="NORMFUSE_LOWERED_SWEEP=1")
@pytest.mark.parametrize("order", ORDERS, ids=lambda o: o.strip("{}") or "grouped")
@pytest.mark.parametrize("kind,flags", KINDS, ids=["gemm", "rms-folded", "rms-g", "ln-folded", "ln-g-beta"])
def test_sweep_seeds_and_grids(kind, flags, order):
    ck = _ci_kernel(kind, flags, order)
    for programs in (1, 2, 4):
        _check(ck, kind, flags, 304, 528, 192, programs, seeds=(1, 2, 3))
    _check(ck, kind, flags, 128, 264, 64, 2, seeds=(0,))  # one row block, one k-tile


def _variants():
    import kernel_variants as kv
    return [v for v in kv.PRENORM if v.expect == "applied"]


@pytest.mark.skipif(not SWEEP, reason="NORMFUSE_LOWERED_SWEEP=1")
@pytest.mark.parametrize("v", _variants(), ids=lambda v: v.name)
def test_sweep_variant_matrix_lowered(v):
    """The variant matrix's 64 x 64 kernels through lazy-prenorm and hopper-ws{schedule=pingpong}
    (the coop schedule takes 128-row tiles): where the lowering applies, the lowered kernel
    against the naive one, at the variant's shape with N and K rounded up to multiples of 8 (TMA
    rows are 16-byte aligned; a launch that is not falls back to the Triton kernel)."""
    import kernel_variants as kv
    ck = kv.compile_variant(v, passes="lazy-prenorm,hopper-ws{schedule=pingpong}")
    if ck.lowered is None:
        pytest.skip("; ".join(r for r in ck.remarks if "hopper-ws" in r))
    m, n, k = kv.shape(v)
    n, k = -(-n // 8) * 8, -(-k // 8) * 8
    t = _variant_inputs(v, m, n, k)
    consts = _consts(ck)
    rest = [("M", m), ("N", n), ("K", k), ("eps", 1e-5)]
    names = ["X", "G", "B", "W", "Y"] + [a for a, _ in rest if a not in consts]
    args = [t[a] for a in names[:5]] + [x for a, x in rest if a not in consts]
    tiles = -(-m // kv.BM) * -(-n // kv.BN)
    grid = tiles if v.form == "tile" else 3 if v.form == "persistent" else -(-m // kv.BM)
    res = check_lowered_numerics(ck, args, grid=(grid,), programs=2, names=names, fused=False)
    y = res.lowered[0].args["Y"]
    assert not torch.isnan(y.float()).any()
    assert res.lowered_diffs["Y"] < TOL, res.lowered_diffs


def _consts(ck):
    fn = ck.kernel.src.fn
    return {fn.arg_names[k[0] if isinstance(k, tuple) else k] for k in ck.kernel.src.constants}


def _variant_inputs(v, m, n, k):
    gen = torch.Generator().manual_seed(3)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[v.dtype]
    x = (torch.randn(m, k, generator=gen) * 2 + 0.5).to(dt)
    w = (torch.randn(n, k, generator=gen) / k ** 0.5).to(dt)
    return {"X": x, "W": w if v.w == "nk" else w.t().contiguous(),
            "G": (1 + 0.1 * torch.randn(k, generator=gen)).to(dt),
            "B": (0.1 * torch.randn(k, generator=gen)).to(dt),
            "Y": torch.full((m, n), float("nan")).to(dt)}


@pytest.mark.parametrize("kind,flags", [
    ("gemm", ()), ("rms", (("has_g", False),)), ("rms", (("has_g", True),)),
    ("ln", (("has_g", False), ("has_b", False))),
    ("ln", (("has_g", True), ("has_b", True))),
], ids=["gemm", "rms-folded", "rms-g", "ln-folded", "ln-g-beta"])
def test_coop2_halves(kind, flags):
    """hopper-ws{schedule=coop2}: each warpgroup in its own partition on half of every tile's
    rows, each releasing the ring's slots (count 2) and storing its [64, 256] half. 304 x 528 x
    192 on 2 programs (the last row block's second half lies past M: stored nowhere), against the
    unlowered kernel and fp64; in the PTX no barrier spans both warpgroups (256 threads)."""
    passes = ("lazy-prenorm," if kind != "gemm" else "") + "hopper-ws{schedule=coop2}"
    ck = ops.aot_compile(kind, M=262144, N=1024, K=512, passes=passes, **dict(flags))
    cfg = ck.lowered.plan.config
    assert cfg.halves and cfg.schedule == "coop2" and "coop2 w4" in str(ck.remarks)
    assert ck.lowered.instance.blocks[2] == (64, 256)
    res = ck.resources()
    assert res["spill_stores"] == 0 and not res["wgmma_serialized"], res
    ptx = ck.lowered.kernel.asm["ptx"]
    assert "bar.sync \t0, 256;" not in ptx and re.search(r"bar\.sync\s+\d+, 128;", ptx)
    runs = _check(ck, kind, flags, 304, 528, 192, 2)
    assert runs[0].info.agents == 2 * 3  # per CTA: two halves and the loader


def test_coop2_shares_statistics_where_it_can():
    """coop2 with stats-share: applied with the A tile straight from shared memory (each
    warpgroup shares its half's rows, said in the remark); with g in the k-loop (an A operand
    computed in registers) not applied, said so, and the kernel lowers with per-tile statistics."""
    passes = "lazy-prenorm,hopper-ws{schedule=coop2,stats-share=true}"
    ck = ops.aot_compile("rms", M=262144, N=2048, K=512, has_g=False, passes=passes)
    cfg = ck.lowered.plan.config
    assert cfg.halves and cfg.stats_share and "coop2 w4 stats-shared" in ck.remarks[-1]
    ck = ops.aot_compile("rms", M=262144, N=2048, K=512, has_g=True, passes=passes)
    assert ck.lowered is not None and not ck.lowered.plan.config.stats_share
    assert "stats-share not applied: the A operand is computed in the k-loop" in str(ck.remarks)


@pytest.mark.parametrize("schedule", ["coop", "coop2"])
def test_release_early(schedule):
    """hopper-ws{release-early}: with RMSNorm's late statistics, each k-step releases the
    previous slot right after the wait, before reading its own tile for the statistics (in the
    PTX: the arrive precedes the tile's shared loads); the interpreter's race check would flag a slot
    released while a wgmma still reads it. Against the unlowered kernel and fp64."""
    flags = (("has_g", False),)
    passes = f"lazy-prenorm,hopper-ws{{release-early=true,schedule={schedule}}}"
    ck = ops.aot_compile("rms", M=262144, N=1024, K=512, passes=passes, **dict(flags))
    cfg = ck.lowered.plan.config
    assert cfg.stats_late and cfg.release_early and "release-early" in str(ck.remarks)
    steps = [s.split("wgmma.commit_group")[0]
             for s in ck.lowered.kernel.asm["ptx"].split("wgmma.wait_group.sync.aligned 1;")[1:]]
    reads = [re.search(r"ldmatrix|ld\.shared\.v4", s) for s in steps]  # the A tile's loads
    with_stats = [(s, r.start()) for s, r in zip(steps, reads) if r]
    assert with_stats and all(s.find("mbarrier.arrive") < at for s, at in with_stats)
    _check(ck, "rms", flags, 304, 528, 192, 2)


_ROW_RESIDUAL = '''
import triton
import triton.language as tl


@triton.jit
def gemm_row_residual(A, B, R, C, M, N, K, sa, sb, sr, sc, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ROW_BLOCKS: tl.constexpr):
    # C = A B + R, the residual a pointer load at the tile's rows; ROW_BLOCKS=False: one row
    # block (pid_m a constant 0, so the rows are arange(0, BLOCK_M) alone)
    pid_n = tl.program_id(0)
    if ROW_BLOCKS:
        pid_m = tl.program_id(1)
    else:
        pid_m = 0
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(A + rm[:, None] * sa + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(B + (k + rk)[:, None] * sb + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    r = tl.load(R + rm[:, None] * sr + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N),
                other=0.0)
    tl.store(C + rm[:, None] * sc + rn[None, :], (acc + r.to(tl.float32)).to(tl.bfloat16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))
'''


@pytest.mark.parametrize("row_blocks", [True, False])
def test_coop2_refuses_hooks_that_index_rows(tmp_path, row_blocks):
    """A residual loaded by pointers at the tile's rows (row offsets from BLOCK_M): coop2's half
    tiles would need other offsets, so the pass refuses coop2 by name (also with a single row
    block, whose rows are arange(0, BLOCK_M) without a pid_m) and coop lowers the kernel."""
    import importlib.util
    from normfuse.testing import lower_ir, ttir_of
    path = tmp_path / "nf_row_residual.py"
    path.write_text(_ROW_RESIDUAL)
    spec = importlib.util.spec_from_file_location("nf_row_residual", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sig = {n: "*bf16" for n in ("A", "B", "R", "C")}
    sig.update({n: "i32" for n in ("M", "N", "K", "sa", "sb", "sr", "sc")})
    consts = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, ROW_BLOCKS=row_blocks)
    sig.update({k: "constexpr" for k in consts})
    ir = ttir_of(mod.gemm_row_residual, sig, consts, num_warps=8)
    lw, _, remarks = lower_ir(ir, "hopper-ws{schedule=coop2}")
    assert lw is None and any("the coop2 schedule does not take hooks that index the tile's rows"
                              in r for r in remarks), remarks
    assert lower_ir(ir, "hopper-ws")[0] is not None


@pytest.mark.parametrize("late", ["true", "false"])
def test_stats_late_option_places_layernorms_sums(late):
    """hopper-ws{stats-late}: LayerNorm's two sums after the wait for the previous k-step's
    wgmma (true) or right after the issue (false, the auto rule's choice for two sums), on the
    default coop2 schedule; against the unlowered kernel and fp64 in the interpreter."""
    flags = (("has_g", False), ("has_b", False))
    ck = ops.aot_compile("ln", M=262144, N=1024, K=512,
                         passes=f"lazy-prenorm,hopper-ws{{stats-late={late}}}", **dict(flags))
    cfg = ck.lowered.plan.config
    assert cfg.halves and cfg.stats_late is (late == "true")
    assert ("stats-late" in str(ck.remarks)) is (late == "true")
    _check(ck, "ln", flags, 304, 528, 192, 2)
    with pytest.raises(Exception, match="stats-late.*must be auto, true or false"):
        ops.aot_compile("ln", M=262144, N=1024, K=512, passes="lazy-prenorm,hopper-ws{stats-late=sometimes}",
                        **dict(flags))


@pytest.mark.parametrize("kind,flags", [KINDS[3], KINDS[1]], ids=["ln-folded", "rms-folded"])
def test_stats_rows_reads_the_a_tile_by_rows(kind, flags):
    """hopper-ws{stats-rows} (default auto: on here): the k-loop's statistics read the A tile in
    a row layout (each thread 32 contiguous elements of one row: 16-byte shared loads instead of
    ldmatrix, one shuffle per row sum and k-step instead of two for each of the thread's two
    rows), the schedule and the statistics' placement unchanged; against the unlowered kernel
    and fp64 in the interpreter. stats-rows=false keeps the wgmma operand's layout."""
    default = _ci_kernel(kind, flags, "{stats-rows=false}")
    ck = _ci_kernel(kind, flags, "")
    cfg, cfg0 = ck.lowered.plan.config, default.lowered.plan.config
    assert cfg.stats_rows and not cfg0.stats_rows and "stats-rows" in str(cfg)
    assert (cfg.schedule, cfg.stats_late) == (cfg0.schedule, cfg0.stats_late)
    p, p0 = ck.lowered.kernel.asm["ptx"], default.lowered.kernel.asm["ptx"]
    assert p.count("ld.shared.v4") > 0 == p0.count("ld.shared.v4")
    assert p.count("ldmatrix") < p0.count("ldmatrix")
    assert 0 < 4 * p.count("shfl.sync.bfly") == p0.count("shfl.sync.bfly")
    _check(ck, kind, flags, 304, 528, 192, 2)


def test_stats_rows_says_where_it_does_not_apply():
    """stats-rows leaves a kernel without row statistics, or whose A operand is computed in the
    k-loop (the wgmma's register operand keeps its layout), as it was: silently by default
    (auto), with a note when asked for (true)."""
    for kind, flags, why in (("gemm", (), "the k-loop computes no row statistics"),
                             ("ln", KINDS[4][1], "the A operand is computed in the k-loop")):
        ck = _ci_kernel(kind, flags, "{stats-rows=true}")
        assert not ck.lowered.plan.config.stats_rows
        assert f"stats-rows not applied: {why}" in str(ck.remarks), ck.remarks
        auto = _ci_kernel(kind, flags, "")
        assert not auto.lowered.plan.config.stats_rows and "stats-rows" not in str(auto.remarks)
    with pytest.raises(Exception, match="stats-rows.*must be auto, true or false"):
        _ci_kernel("rms", KINDS[1][1], "{stats-rows=maybe}")


def _kloop_shuffles(ptx: str) -> int:
    """Butterfly shuffles in the PTX basic blocks that issue a wgmma (the k-loops' bodies)."""
    blocks = re.split(r"^\$L__BB\d+_\d+:", ptx, flags=re.M)
    return sum(b.count("shfl.sync.bfly") for b in blocks if "wgmma.mma_async" in b)


@pytest.mark.parametrize("kind,flags", [KINDS[3], KINDS[1]], ids=["ln-folded", "rms-folded"])
def test_stats_lanes_keeps_per_lane_partial_sums(kind, flags):
    """hopper-ws{stats-lanes}: each row sum is kept through the k-loop as one partial per lane of
    the row (LayerNorm's two sums, on by default: they follow the wgmma issue; RMSNorm's one,
    late, when asked for), the lanes combined once per tile after it: no shuffle left in the
    k-loop, where stats-lanes=false has one per row sum and k-step in each of coop2's two
    partitions; against the unlowered kernel and fp64 in the interpreter (a partial dropped or
    counted twice fails it)."""
    one = _ci_kernel(kind, flags, "{stats-lanes=false}")
    ck = _ci_kernel(kind, flags, "" if kind == "ln" else "{stats-lanes=true}")
    cfg, cfg1 = ck.lowered.plan.config, one.lowered.plan.config
    assert cfg.stats_lanes and cfg.stats_rows and cfg1.stats_rows and not cfg1.stats_lanes
    assert "stats-lanes" in str(cfg) and "stats-lanes" not in str(cfg1)
    assert (cfg.schedule, cfg.stats_late) == (cfg1.schedule, cfg1.stats_late) == \
        ("coop2", kind == "rms")
    sums = 2 if kind == "ln" else 1
    assert _kloop_shuffles(one.lowered.kernel.asm["ptx"]) == 2 * sums
    assert _kloop_shuffles(ck.lowered.kernel.asm["ptx"]) == 0
    g = ck.asm["gluon"]
    stats = g[g.index("def stats("):g.index("def epi(")]
    assert stats.count("row_sums(") == sums and "gl.sum(" not in stats
    _check(ck, kind, flags, 304, 528, 192, 2)


def test_stats_lanes_says_where_it_does_not_apply():
    """stats-lanes leaves a kernel without row statistics, or without the row layout
    (stats-rows=false, or an A operand computed in the k-loop), as it was: silently by default
    (auto), with a note when asked for (true)."""
    for kind, flags, opts, why in (
            ("gemm", (), "stats-lanes=true", "the k-loop computes no row statistics"),
            ("rms", KINDS[1][1], "stats-rows=false,stats-lanes=true", "stats-rows is off"),
            ("ln", KINDS[4][1], "stats-lanes=true", "stats-rows is off")):
        ck = _ci_kernel(kind, flags, "{" + opts + "}")
        assert not ck.lowered.plan.config.stats_lanes
        assert f"stats-lanes not applied: {why}" in str(ck.remarks), ck.remarks
    for opts in ("{stats-rows=false}", ""):  # (auto: RMSNorm's one sum is late: one per row)
        auto = _ci_kernel("rms", KINDS[1][1], opts)
        assert not auto.lowered.plan.config.stats_lanes and "stats-lanes" not in str(auto.remarks)
    assert auto.lowered.plan.config.stats_late and auto.lowered.plan.config.stats_rows
    with pytest.raises(Exception, match="stats-lanes.*must be auto, true or false"):
        _ci_kernel("rms", KINDS[1][1], "{stats-lanes=often}")


def test_stats_row_layout_covers_the_threads_or_falls_back():
    """`ws_gemm.a_layout_for`: the row layout gives each thread one contiguous run of a row
    (coop2's 64 x 64 half tile: 32 elements, 2 lanes to a row; coop's 128 x 128 at 8 warps: 64,
    2 lanes); a tile whose share per thread is under 8 elements, or stats-rows off, keeps the
    wgmma operand's layout."""
    import triton.experimental.gluon.language as gl
    from normfuse.lowering.ws_gemm import a_layout_for, lane_partial_layout, mma_layout_for, stat_lanes
    m4, m8 = mma_layout_for(64, 256, 4), mma_layout_for(128, 256, 8)
    half = a_layout_for(64, 64, 4, m4, True)
    assert isinstance(half, gl.BlockedLayout)
    assert (list(half.size_per_thread), list(half.threads_per_warp), list(half.warps_per_cta)) \
        == ([1, 32], [16, 2], [4, 1])
    coop = a_layout_for(128, 128, 8, m8, True)
    assert (list(coop.size_per_thread), list(coop.threads_per_warp)) == ([1, 64], [16, 2])
    for layout in (a_layout_for(64, 64, 4, m4, False), a_layout_for(16, 32, 4, m4, True)):
        assert isinstance(layout, gl.DotOperandLayout)
        assert stat_lanes(layout, True) == 0
    # the per-lane partials (stats-lanes): [rows, 2], the row layout's [R, 2, run] view summed
    # over its run, each lane's partial in that lane
    assert (stat_lanes(half, True), stat_lanes(half, False), stat_lanes(coop, True)) == (2, 0, 2)
    part = lane_partial_layout(half)
    assert isinstance(part, gl.SliceLayout) and part.dim == 2
    assert (list(part.parent.size_per_thread), list(part.parent.threads_per_warp),
            list(part.parent.warps_per_cta)) == ([1, 1, 32], [16, 2, 1], [4, 1, 1])
