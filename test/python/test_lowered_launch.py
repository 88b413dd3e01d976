"""The host side of lowered launches, on the CPU (issue 23 item 1, issue 24 item 3).

- Arguments are specialized exactly as Triton's JIT specializes them (its own specializer):
  integers equal to 1 become constants, so a GEMM written with a stride parameter per dimension,
  launched on contiguous tensors, has unit strides the address analysis can see and is lowered
  by hopper-ws, through `normfuse.compile(args=...)` and `normfuse.jit` alike; constexprs bind
  positionally as in Triton.
- What a lowered launch passes (`LoweredLaunch.arguments` -> `BoundLaunch`): the TMA
  descriptors' base, shape, strides and box, M/N/K, the hooks' arguments (kernel parameters and
  derived column sums), the persistent grid, computed from CPU tensors and compared with torch,
  with N != K everywhere so that a swapped size or stride shows.
"""
from __future__ import annotations

import importlib.util
import re
import textwrap

import pytest
import torch

import normfuse
from normfuse.compiler import bind_arguments, specialize
from normfuse.ops import prenorm_linear as ops

_STRIDED = '''
import triton
import triton.language as tl


@triton.jit
def strided_gemm(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # C[M, N] = A[M, K] @ B[K, N] with every stride a parameter, as Triton's tutorial writes it
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    c = acc.to(tl.bfloat16)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
'''

TILE = {"BM": 128, "BN": 256, "BK": 64}


@pytest.fixture(scope="module")
def strided_gemm(tmp_path_factory):
    path = tmp_path_factory.mktemp("kernels") / "nf_strided_gemm.py"
    path.write_text(textwrap.dedent(_STRIDED))
    spec = importlib.util.spec_from_file_location("nf_strided_gemm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.strided_gemm


def _args(M, N, K, wt=False):
    """A [M, K], B [K, N] (a Linear weight [N, K] seen transposed when `wt`), C [M, N]."""
    a = torch.randn(M, K).bfloat16()
    b = torch.randn(N, K).bfloat16().t() if wt else torch.randn(K, N).bfloat16()
    c = torch.empty(M, N, dtype=torch.bfloat16)
    return (a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride())


# ---------------------------------------------------------------------------------------------
# Specialization as Triton's JIT does it
# ---------------------------------------------------------------------------------------------

def test_integers_are_specialized_as_triton_does(strided_gemm):
    """1 becomes a constant (not a parameter of the TTIR function), 0 and multiples of 16 carry
    tt.divisibility, other integers are plain i32, integers past 32 bits i64."""
    M, N, K = 1000, 520, 1032
    args = _args(M, N, K)
    sig, consts, attrs, _, key = specialize(strided_gemm, args, TILE)
    assert sig["stride_ak"] == sig["stride_bn"] == sig["stride_cn"] == "constexpr"
    assert consts["stride_ak"] == consts["stride_bn"] == consts["stride_cn"] == 1
    names = strided_gemm.arg_names
    div = {names[i] for (i,) in attrs}
    # M = 1000, N = 520, K = 1032 and the row strides (K, N, N): none a multiple of 16
    assert div == {"A", "B", "C"}
    _, _, attrs16, _, _ = specialize(strided_gemm, _args(1024, 512, 1024), TILE)
    assert {names[i] for (i,) in attrs16} == {"A", "B", "C", "M", "N", "K", "stride_am",
                                                "stride_bk", "stride_cm"}
    sig2, _, _, _, key2 = specialize(strided_gemm, (*args[:4], 2**33 + 1, *args[5:]), TILE)
    assert sig2["N"] == "i64" and key2 != key
    _, consts0, attrs0, _, _ = specialize(strided_gemm, (*args[:3], 0, N, K, *args[6:]), TILE)
    assert (names.index("M"),) in attrs0  # 0 is divisible by 16, as in Triton
    with pytest.raises(TypeError, match=r"kernel 'strided_gemm', argument 'M': cannot pass str"):
        specialize(strided_gemm, (*args[:3], "x", *args[4:]), TILE)


def test_constexprs_bind_positionally_or_by_name(strided_gemm):
    args = _args(300, 520, 1032)
    by_name = bind_arguments(strided_gemm, args, TILE)
    positional = bind_arguments(strided_gemm, args + (128, 256, 64), {})
    assert by_name == positional
    assert list(positional) == list(strided_gemm.arg_names)
    # Triton's positional form with the trailing constexprs partly given: the rest by name
    assert bind_arguments(strided_gemm, args + (128,), dict(BN=256, BK=64)) == by_name
    with pytest.raises(TypeError, match="takes 12 runtime arguments"):
        bind_arguments(strided_gemm, args[:5], TILE)
    with pytest.raises(ValueError, match="constexpr parameters without a value: BK"):
        bind_arguments(strided_gemm, args + (128, 256), {})


def test_stride_parameterized_gemm_lowers_through_compile_args(strided_gemm):
    """Launched on contiguous tensors the unit strides are constants and hopper-ws lowers the
    kernel; described by a signature with every stride an i32, no operand can be shown to be
    contiguous and the kernel stays a Triton kernel (the remarks say why, one per operand)."""
    args = _args(1000, 520, 1032)
    ck = normfuse.compile(strided_gemm, args=args, constexprs=TILE, passes="hopper-ws",
                          num_warps=8)
    assert ck.lowered is not None, ck.remarks
    assert "ttg.warp_specialize" in ck.asm["ttgir"] and "wgmma" in ck.asm["ptx"]
    res = ck.resources()
    assert res["spill_stores"] == 0 and not res["wgmma_serialized"], res
    sig = {n: "i32" for n in strided_gemm.arg_names}
    sig.update(A="*bf16", B="*bf16", C="*bf16", BM="constexpr", BN="constexpr", BK="constexpr")
    with pytest.warns(normfuse.SpillWarning):  # and the Triton kernel spills (issue 23)
        plain = normfuse.compile(strided_gemm, signature=sig, constexprs=TILE, passes="hopper-ws",
                                 num_warps=8)
    assert plain.lowered is None
    # every blocker named, with its fix: the unit strides of A, B and C are runtime values
    missed = [r for r in plain.remarks if "[hopper-ws] missed" in r]
    assert len(missed) == 3 and all("pass it as 1" in r for r in missed), missed
    for name in ("stride_ak", "stride_bn", "stride_cn"):
        assert any(f"'{name}'" in r for r in missed), (name, missed)


def test_stride_parameterized_gemm_lowers_through_jit(strided_gemm, monkeypatch):
    """normfuse.jit specializes a launch the same way (the target stubbed: no GPU here), and the
    lowered launch reads the runtime arguments where the specialized kernel left them: the plan's
    parameters are the TTIR function's arguments, the unit strides are not among them."""
    import normfuse.compiler as comp
    from triton.backends.compiler import GPUTarget
    monkeypatch.setattr(comp.JITKernel, "_current_target",
                        lambda self: (GPUTarget("cuda", 90, 32), None))
    kernel = normfuse.jit(strided_gemm, passes="hopper-ws")
    M, N, K = 1000, 520, 1032
    args = _args(M, N, K, wt=True)  # B = W.t(): the Linear layout, n along rows of W
    ck = kernel.warmup(*args, **TILE, num_warps=8)
    assert ck.lowered is not None, ck.remarks
    assert ck.lowered.plan.b_kn is False  # W [N, K], k contiguous
    assert ck.lowered.params is not None and len(ck.lowered.params) == len(ck.lowered.plan.params)
    bound = ck.lowered.arguments(args, sms=132)
    a, b, c = args[:3]
    assert bound["a_desc"].shape == (M, K) and bound["a_desc"].strides == (K, 1)
    assert bound["b_desc"].shape == (N, K) and bound["b_desc"].strides == (K, 1)
    assert bound["b_desc"].base.data_ptr() == b.data_ptr()
    assert (bound["M"], bound["N"], bound["K"]) == (M, N, K)
    assert bound.grid == (min(132, -(-M // 128) * -(-N // 256)), 1, 1)
    assert bound.output.shape == c.shape and bound.output.data_ptr() == c.data_ptr()


# ---------------------------------------------------------------------------------------------
# The bound arguments of the ops' lowered kernels, against torch
# ---------------------------------------------------------------------------------------------

def _op_args(kind, M, N, K, fold, w_stride=None):
    """The runtime arguments the pre-norm op passes, for CPU tensors; W may be a view of wider
    rows (row stride `w_stride` > K)."""
    torch.manual_seed(0)
    x = torch.randn(M, K).bfloat16()
    g, b = (1 + 0.1 * torch.randn(K)).bfloat16(), (0.1 * torch.randn(K)).bfloat16()
    wide = torch.randn(N, w_stride or K).bfloat16()
    w = wide[:, :K]
    y = torch.empty(M, N, dtype=torch.bfloat16)
    bias = torch.zeros(N, dtype=torch.bfloat16)
    vecs = (g,) if kind == "rms" else (g, b)
    return (x, *vecs, w, y, bias, M, N, K, x.stride(0), w.stride(0), y.stride(0),
            1e-6 if kind == "rms" else 1e-5), (x, w, y, g)


@pytest.mark.parametrize("kind,fold", [("rms", True), ("rms", False), ("ln", True), ("ln", False)])
def test_bound_arguments_of_the_ops_kernels_match_torch(kind, fold):
    M, N, K = 1000, 520, 1032  # N != K, neither a multiple of the tile
    ck = ops.aot_compile(kind, M=M, N=N, K=K, has_g=not fold, has_b=not fold, tma=not fold)
    assert ck.lowered is not None, ck.remarks
    lw = ck.lowered
    args, (x, w, y, _) = _op_args(kind, M, N, K, fold, w_stride=K + 8)
    bound = lw.arguments(args, sms=132)
    assert bound.names[:8] == ("a_desc", "b_desc", "c_desc", "r_desc", "aux_desc", "M", "N", "K")
    assert bound["r_desc"] is None  # no residual tile: a constexpr None, not an argument
    assert bound["aux_desc"] is None  # no second output tile (a norm backward's): likewise
    A, B, C = bound["a_desc"], bound["b_desc"], bound["c_desc"]
    for d, t in ((A, x), (B, w), (C, y)):
        assert d.base.data_ptr() == t.data_ptr()
        assert d.shape == tuple(t.shape) and d.strides == tuple(t.stride()), (d, t.shape, t.stride())
    assert B.strides == (K + 8, 1)  # the weight's own row stride, not K
    cfg = lw.plan.config
    assert A.block == (cfg.block_m, cfg.block_k) and B.block == (cfg.block_n, cfg.block_k)
    assert C.block == (cfg.block_m // 2 if cfg.halves else cfg.block_m, cfg.block_n)  # coop2: halves
    assert (bound["M"], bound["N"], bound["K"]) == (M, N, K)
    tiles = -(-M // cfg.block_m) * -(-N // cfg.block_n)
    assert bound.grid == (min(132, tiles), 1, 1) and lw.arguments(args, sms=4).grid == (4, 1, 1)
    eargs = bound["eargs"]
    for (what, i), v in zip(lw.lowered.eargs, eargs):
        if what == "param":
            j = i if lw.params is None else lw.params[i]
            assert v is args[j]
        else:  # the LayerNorm corrections: colsum(W) (g folded), colsum(diag(g) W) and
            # colsum(diag(beta) W) (g and beta in the loop)
            d = lw.plan.column_sums[i]
            assert args[d.weight] is w
            scale = args[d.scale].float()[None, :] if d.scale is not None else 1
            torch.testing.assert_close(v, (w.float() * scale).sum(1), rtol=0, atol=0)
    derived = [lw.plan.column_sums[i].scale for what, i in lw.lowered.eargs if what == "derived"]
    assert derived == ([] if kind == "rms" else [None] if fold else [1, 2])  # G, B: params 1, 2
    # eps and K reach the hooks as the op passes them
    scalars = [v for v in eargs if not isinstance(v, torch.Tensor)]
    assert args[-1] in scalars and K in scalars
    full = bound.launch_args(lw.instance)
    assert full[:len(bound.args)] == list(bound.args)
    assert full[-1] == cfg.consumer_warps  # num_warps closes the constexprs


def test_a_launch_tma_cannot_address_is_refused_with_the_reason():
    ck = ops.aot_compile("rms", M=1000, N=520, K=1032, has_g=False)
    lw = ck.lowered
    args, _ = _op_args("rms", 1000, 520, 1032, True)
    assert lw.why_not(args) == "A is not a CUDA tensor"
    from normfuse.lowering.launch import _addressable
    x = torch.randn(1000, 1040).bfloat16()
    assert _addressable("A", x, (1000, 1032), 1040) is None
    assert "16-byte aligned" in _addressable("A", x[:, 1:], (1000, 1032), 1040)
    assert "does not hold" in _addressable("A", x, (1001, 1032), 1040)


def test_a_prepared_plan_launches_new_tensors_with_the_arguments_they_bind(monkeypatch):
    """The per-call path (`LoweredPlan.run`, Triton's launcher stubbed) passes exactly what
    `arguments` records for the same tensors, for new activations every call; `LoweredLaunch`
    keeps one plan per geometry (the size and stride arguments) and makes another for a new M."""
    ck = ops.aot_compile("ln", M=1000, N=520, K=1032, has_g=False, has_b=False)
    lw = ck.lowered
    calls = []

    class Launcher:  # Triton's launcher of the compiled kernel, recording instead of launching
        def __getitem__(self, grid):
            return lambda *a: calls.append((grid, a))
    lw.kernel = Launcher()
    first, _ = _op_args("ln", 1000, 520, 1032, True)
    plan = lw.prepare(first, sms=132)
    for _ in range(3):
        args = (torch.randn(1000, 1032).bfloat16(), *first[1:4], torch.empty(1000, 520).bfloat16(),
                *first[5:])
        plan.run(args)
        grid, got = calls[-1]
        want = lw.arguments(args, sms=132)
        assert grid == want.grid
        assert got[:8] == tuple(want.args[:8]) and got[8] == want.args[8]
        assert got[0].base is args[0] and got[2].base is args[4]  # this call's tensors
        assert list(got) == want.launch_args(lw.instance)
    import normfuse.device as dev
    monkeypatch.setattr(dev, "sm_count", lambda device: 132)
    lw(first)
    lw(first)
    assert len(lw._plans) == 1
    other, _ = _op_args("ln", 777, 520, 1032, True)
    lw(other)
    assert len(lw._plans) == 2 and calls[-1][1][5] == 777  # M (after the five descriptors)


# ---------------------------------------------------------------------------------------------
# GPU: the stride-parameterized GEMM launched through normfuse.jit runs lowered
# ---------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(1000, 520, 1032), (1, 264, 520), (4133, 1000, 2056)])
def test_gpu_stride_parameterized_gemm_runs_lowered(strided_gemm, M, N, K):
    """normfuse.jit launches the tutorial-style GEMM (every stride a parameter, B a Linear
    weight seen transposed) as the warp-specialized kernel: no fallback warning, every output
    written (NaN-poisoned), within 1.5x the error of the same kernel without passes against
    fp64; M = 1 is specialized as a constant too (the lowered launch maps the parameters)."""
    import warnings
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda").bfloat16()
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).bfloat16()
    b = w.t()
    want = a.double() @ b.double()
    grid = lambda meta: (-(-M // 128), -(-N // 256))  # noqa: E731
    outs = []
    for passes in ("hopper-ws", ()):
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        kernel = normfuse.jit(strided_gemm, passes=passes)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback would warn
            kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), **TILE,
                         num_warps=8)
        torch.cuda.synchronize()
        assert not torch.isnan(c).any()
        outs.append(float((c.double() - want).norm() / want.norm()))
        if passes:
            ck = kernel.warmup(a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), **TILE,
                               num_warps=8)
            assert ck.lowered is not None, ck.remarks
    assert outs[0] <= 1.5 * outs[1] + 1e-4, outs


# ---------------------------------------------------------------------------------------------
# Split outputs: rmsnorm_linear_split / layernorm_linear_split end to end on the CPU
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def split_plans():
    """The split op's launch plans, empty before and after the test."""
    from normfuse.ops import prenorm_linear as pre
    pre._SPLIT_PLANS.clear()
    yield pre._SPLIT_PLANS
    pre._SPLIT_PLANS.clear()


def _interpret_plans(monkeypatch, programs: int = 4) -> list:
    """Every prepared lowered launch (LoweredPlan.run) run by the TTGIR interpreter with the
    lowering's own host binding on `programs` programs; returns the bindings."""
    pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
    from normfuse.lowering.launch import LoweredPlan
    from normfuse.testing import lowered_launch, run_ir
    ran = []

    def interpret(self, args, outs=None):
        b = lowered_launch(self.launch, list(args), programs=programs, outs=outs)
        run_ir(self.launch.kernel.asm["ttgir"], b.args, b.grid, seed=0, trusted=True)
        ran.append(b)
        return outs if outs is not None else args[self.operands[2][0]]
    monkeypatch.setattr(LoweredPlan, "run", interpret)
    return ran


@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_split_op_end_to_end_in_the_interpreter(kind, monkeypatch, split_plans):
    """The split op on CPU tensors with the stand-in driver (sm_90 facts), its one lowered launch
    run by the interpreter: q / k / v-like siblings of 256, 256 and 16 columns (the last one
    ragged), biases on two of them, x [2, 150, 128] (300 rows: a ragged row block); each member
    contiguous, within the joined op's reference error of fp64, and the launch's member
    descriptors [300, N_i] over the returned tensors' memory."""
    from normfuse.ops import functional as F
    from normfuse.reference import layernorm_linear_ref, rel_err, rmsnorm_linear_ref
    from normfuse.testing.fake_driver import fused_on_cpu
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 150, 128, generator=gen).bfloat16()
    g = (0.5 + torch.rand(128, generator=gen)).bfloat16()
    beta = (0.2 * torch.randn(128, generator=gen)).bfloat16()
    ws = [(torch.randn(n, 128, generator=gen) / 12).bfloat16() for n in (256, 256, 16)]
    bs = [(0.1 * torch.randn(256, generator=gen)).bfloat16(), None,
          (0.1 * torch.randn(16, generator=gen)).bfloat16()]
    ran = _interpret_plans(monkeypatch)
    with fused_on_cpu():
        if kind == "rms":
            outs = F.rmsnorm_linear_split(x, g, ws, 1e-6, bs)
        else:
            outs = F.layernorm_linear_split(x, g, beta, ws, 1e-5, bs)
    assert len(ran) == 1, "one GEMM for the three members"
    b = ran[0].bound
    assert [tuple(o.shape) for o in outs] == [(2, 150, 256), (2, 150, 256), (2, 150, 16)]
    assert all(o.is_contiguous() for o in outs)
    assert b["c1_desc"].shape == (300, 256) and b["c2_desc"].shape == (300, 16)
    assert b["c_desc"].base.data_ptr() == outs[0].data_ptr()
    assert b["c2_desc"].base.data_ptr() == outs[2].data_ptr()
    wcat, bcat = torch.cat(ws), torch.cat([bs[0], torch.zeros(256).bfloat16(), bs[2]])
    ref = (rmsnorm_linear_ref(x, g, wcat, 1e-6) if kind == "rms"
           else layernorm_linear_ref(x, g, beta, wcat, 1e-5)) + bcat.double()
    y = torch.cat(outs, -1)
    assert not torch.isnan(y.float()).any()
    assert rel_err(y, ref) < 1e-2, rel_err(y, ref)


@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_split_op_falls_back_where_members_split_a_tile(kind, monkeypatch, split_plans):
    """Members whose first columns are no multiple of the tile's width (328 + 256): each member
    runs its own fused launch over its rows of the weight and its bias (run by the interpreter:
    each member equals the single op over that weight), and a RuntimeWarning says why."""
    from normfuse.ops import functional as F
    from normfuse.reference import layernorm_linear_ref, rel_err, rmsnorm_linear_ref
    from normfuse.testing.fake_driver import fused_on_cpu
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(300, 128, generator=gen).bfloat16()
    g = (0.5 + torch.rand(128, generator=gen)).bfloat16()
    beta = (0.2 * torch.randn(128, generator=gen)).bfloat16()
    ws = [(torch.randn(n, 128, generator=gen) / 12).bfloat16() for n in (328, 256)]
    bs = [None, (0.1 * torch.randn(256, generator=gen)).bfloat16()]
    ran = _interpret_plans(monkeypatch)
    with fused_on_cpu(), pytest.warns(RuntimeWarning, match="per member.*not multiples of the"):
        outs = (F.rmsnorm_linear_split(x, g, ws, 1e-6, bs) if kind == "rms" else
                F.layernorm_linear_split(x, g, beta, ws, 1e-5, bs))
    assert [tuple(o.shape) for o in outs] == [(300, 328), (300, 256)]
    assert all(o.is_contiguous() for o in outs)
    assert [tuple(b.bound["c_desc"].shape) for b in ran] == [(300, 328), (300, 256)]
    assert [b.bound["c_desc"].base.data_ptr() for b in ran] == [o.data_ptr() for o in outs]
    plan = next(iter(split_plans.values()))
    assert plan.lowered is None and "not multiples" in plan.why and len(plan.members) == 2
    for w, b, o in zip(ws, bs, outs):
        ref = (rmsnorm_linear_ref(x, g, w, 1e-6) if kind == "rms" else
               layernorm_linear_ref(x, g, beta, w, 1e-5)) + (0 if b is None else b.double())
        assert rel_err(o, ref) < 1e-2, rel_err(o, ref)


def test_split_fallback_derives_member_column_sums_once(monkeypatch, split_plans):
    """The fallback's members (LayerNorm: each member's lowered launch derives W's column sums)
    get the same row slices of the joined weight every launch-ready call (_SplitCall keeps
    SplitPlan.member_slices), so the sums are derived on the first calls only, not per call."""
    import warnings
    from normfuse.lowering.launch import LoweredLaunch
    from normfuse.ops import functional as F
    from normfuse.testing.fake_driver import fused_on_cpu
    derived = []
    real = LoweredLaunch._derived
    monkeypatch.setattr(LoweredLaunch, "_derived",
                        lambda self, *a, **k: derived.append(1) or real(self, *a, **k))
    x = torch.randn(300, 128).bfloat16()
    g, beta = torch.rand(128).bfloat16(), torch.rand(128).bfloat16()
    ws = [torch.randn(n, 128).bfloat16() for n in (328, 256)]
    with fused_on_cpu() as drv, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = []
        for _ in range(4):
            F.layernorm_linear_split(x, g, beta, ws)
            counts.append(len(derived))
    plan = next(iter(split_plans.values()))
    assert plan.lowered is None and all(m.lowered is not None for m in plan.members)
    assert len(drv.launches) == 8
    assert counts[0] > 0 and counts[1] == counts[2] == counts[3], counts


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("widths", [(2048, 512, 512), (1024, 1024), (256, 256, 16), (200, 56)])
def test_gpu_split_members_equal_the_joined_ops_columns(kind, widths):
    """On the H200: the split op's members bitwise equal to their columns of the joined op (the
    same kernel and tiles; only the store differs), contiguous, the launch-ready second call
    the same, and a captured CUDA graph's replay the same; (200, 56): the fallback, a launch
    per member, equal to the single op over each member's weight (LayerNorm within 1e-3: the
    joined weight's folded bias, b + W beta, is summed by another GEMV than a member's; the
    H200 showed last-bit differences, 2026-12-02), every call bitwise the first."""
    from normfuse.reference import rel_err
    import warnings
    from normfuse.ops import functional as F
    gen = torch.Generator(device="cuda").manual_seed(5)
    K = 1024
    x = torch.randn(4, 1000, K, device="cuda", generator=gen).bfloat16()
    g = (0.5 + torch.rand(K, device="cuda", generator=gen)).bfloat16()
    beta = (0.2 * torch.randn(K, device="cuda", generator=gen)).bfloat16()
    ws = [(torch.randn(n, K, device="cuda", generator=gen) / 32).bfloat16() for n in widths]
    bs = [(0.1 * torch.randn(n, device="cuda", generator=gen)).bfloat16() for n in widths]
    bs[1] = None
    if kind == "rms":
        split = lambda: F.rmsnorm_linear_split(x, g, ws, 1e-6, bs)  # noqa: E731
        single = lambda w, b: F.rmsnorm_linear(x, g, w, 1e-6, b)  # noqa: E731
    else:
        split = lambda: F.layernorm_linear_split(x, g, beta, ws, 1e-5, bs)  # noqa: E731
        single = lambda w, b: F.layernorm_linear(x, g, beta, w, 1e-5, b)  # noqa: E731
    joined = (torch.cat([single(w, b) for w, b in zip(ws, bs)], -1) if widths == (200, 56)
              else single(ws, bs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (the fallback says why, once)
        first, second = split(), split()
    y = torch.cat(first, -1)
    if kind == "ln" and widths == (200, 56):
        assert rel_err(y, joined) < 1e-3, rel_err(y, joined)
    else:
        assert torch.equal(y, joined)
    for outs in (first, second):
        assert all(o.is_contiguous() for o in outs)
        assert torch.equal(torch.cat(outs, -1), y)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = split()
    for o in captured:
        o.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(torch.cat(captured, -1), y)


def test_split_op_direct_launch_passes_a_tensor_map_per_member(split_plans):
    """The split op's launch through Triton's C launch function (normfuse.direct_launch, the
    stand-in driver recording it): the template's descriptor positions include the members'
    (c1_desc, c2_desc: parameters 11 and 12), and the launch carries one tensor map per member
    over the returned tensors, [300, N_i] each, for a second call too (the launch-ready call)."""
    import warnings
    from normfuse.ops import functional as F
    from normfuse.testing.fake_driver import FakeTensorMap, fused_on_cpu
    x = torch.randn(300, 128).bfloat16()
    g = torch.rand(128).bfloat16()
    ws = [torch.randn(n, 128).bfloat16() for n in (256, 256, 16)]
    with fused_on_cpu() as drv, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        F.rmsnorm_linear_split(x, g, ws)
        outs = F.rmsnorm_linear_split(x, g, ws)
    low = next(iter(split_plans.values())).lowered
    assert low._direct is not None and low._direct.positions == (0, 1, 2, 11, 12)
    assert len(drv.launches) == 2
    maps = [a for a in drv.launches[-1] if isinstance(a, FakeTensorMap)]
    assert [m.inputs[0] for m in maps[2:]] == [o.data_ptr() for o in outs]
    assert [m.inputs[5] for m in maps[2:]] == [(300, 256), (300, 256), (300, 16)]


def test_split_op_falls_back_when_the_split_kernel_fails_to_build(monkeypatch, split_plans):
    """A split kernel that fails to compile costs the user a RuntimeWarning naming the failure,
    not the op: each member runs its own fused launch."""
    from normfuse.lowering.launch import LoweredLaunch
    from normfuse.ops import functional as F
    from normfuse.testing.fake_driver import fused_on_cpu

    def broken(self, starts, target="cuda:90"):
        raise RuntimeError("planted")
    monkeypatch.setattr(LoweredLaunch, "split", broken)
    x = torch.randn(300, 128).bfloat16()
    g = torch.rand(128).bfloat16()
    ws = [torch.randn(256, 128).bfloat16(), torch.randn(64, 128).bfloat16()]
    with fused_on_cpu() as drv, pytest.warns(RuntimeWarning, match="failed to build.*planted"):
        outs = F.rmsnorm_linear_split(x, g, ws)
    assert [tuple(o.shape) for o in outs] == [(300, 256), (300, 64)] and len(drv.launches) == 2


def test_shared_statistics_epochs_follow_launch_order_across_threads():
    """Two threads launching one shared-statistics plan on one stream: every launch carries a
    larger epoch than the one issued before it on that stream's words (the epoch is taken and
    the kernel issued under one lock; the device accepts any stamp at least its epoch, so a
    launch issued after a later epoch read another launch's statistics: rel. error 0.26 in the
    interpreter)."""
    import sys
    import threading
    import normfuse.ops as ops
    from normfuse.lowering.runtime import SharedStats
    from normfuse.ops import inference
    from normfuse.testing.fake_driver import FakeDriver, fused_on_cpu
    M, N, K = 1000, 2056, 1032
    gen = torch.Generator().manual_seed(0)
    with fused_on_cpu():
        x = torch.randn(7512, K, generator=gen).bfloat16()
        g = (1 + 0.1 * torch.randn(K, generator=gen)).bfloat16()
        beta = (0.1 * torch.randn(K, generator=gen)).bfloat16()
        w = (torch.randn(N, K, generator=gen) / K ** 0.5).bfloat16()
        ops.layernorm_linear(x, g, beta, w, 1e-5)  # (LayerNorm's statistics are the shared ones)
        call = inference.pre_call(x, g, beta, [w], [None], 1e-5, is_ln=True)
        low = call.plan.lowered
        assert low.share
        base = (x[:M], *call.pre, torch.empty(M, N).bfloat16(), *call.post, M,
                *call.plan.tail[1:])
        out = 1 + len(call.pre)  # y's position (x, the norm's vectors and w, y, ...)
    switch = sys.getswitchinterval()
    old = SharedStats._by_stream
    SharedStats._by_stream = None
    sys.setswitchinterval(1e-6)
    try:
        with FakeDriver() as drv:
            plan = low.launch.prepare(base, sms=132)

            def worker():
                args = list(base)
                args[0], args[out] = torch.randn(M, K).bfloat16(), torch.empty(M, N).bfloat16()
                for _ in range(600):
                    plan.run(tuple(args))
            ts = [threading.Thread(target=worker) for _ in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            launches = drv.launches
    finally:
        sys.setswitchinterval(switch)
        SharedStats._by_stream = old
    assert len(launches) == 1200 and len({la[3] for la in launches}) == 1
    epochs = [la[35] for la in launches]
    assert all(b > a for a, b in zip(epochs, epochs[1:])), "an epoch out of launch order"


def test_derived_vectors_follow_the_scale_and_take_inference_tensors(monkeypatch):
    """The lowered LayerNorm launch's derived column sums: a scale whose memory was swapped
    (`g.data = ...`: same tensor, same version, new address) gets its sums again, not the
    remembered ones; under torch.inference_mode (tensors without a version counter) the launch
    derives them afresh instead of raising."""
    import test_lowered_numerics as T
    from normfuse.lowering import launch as L
    kind, flags = T.KINDS[4]
    low = T._ci_kernel(kind, flags, "").lowered
    args, names, _ = T._inputs(kind, 304, 528, 192, flags, seed=0)
    plan = low.prepare(args, grid=3)
    slots = plan._derived_slots
    assert slots and names[1] == "G"
    before = [plan.bound(args)["eargs"][i].clone() for i, _ in slots]
    g = args[1]
    g.data = (g.float() * 3 + 1).to(g.dtype)
    after = plan.bound(args)["eargs"]
    L._DERIVED_CACHE.clear()
    plan._last_derived.clear()
    fresh = plan.bound(args)["eargs"]
    for (i, _), b in zip(slots, before):
        assert torch.equal(after[i], fresh[i])
    assert any(not torch.equal(after[i], b) for (i, _), b in zip(slots, before))
    import normfuse.ops as ops
    from normfuse.testing.fake_driver import fused_on_cpu
    x = torch.randn(300, 128).bfloat16()
    gl, bl = torch.rand(128).bfloat16(), torch.rand(128).bfloat16()
    wl = torch.randn(256, 128).bfloat16()
    with fused_on_cpu() as drv:
        ops.layernorm_linear(x, gl, bl, wl)
        with torch.inference_mode():
            for _ in range(2):
                ops.layernorm_linear(torch.randn(300, 128).bfloat16(), gl, bl, wl)
        assert len(drv.launches) == 3


def test_a_bound_launch_does_not_keep_the_weight_alive():
    """The launch remembers its last derived column sums by the weight's and scale's weak
    references: once the caller drops a weight (a training step's folded W'), it is freed, and
    the next weight (same shape, maybe the same address) gets its own sums."""
    import gc
    import weakref
    import test_lowered_numerics as T
    kind, flags = T.KINDS[4]
    low = T._ci_kernel(kind, flags, "").lowered
    args, names, _ = T._inputs(kind, 304, 528, 192, flags, seed=0)
    plan = low.prepare(args, grid=3)
    slots = plan._derived_slots
    iw = names.index("W")
    first = [plan.bound(args)["eargs"][i].clone() for i, _ in slots]
    gone = weakref.ref(args[iw])
    new = (args[iw].float() * 2).to(args[iw].dtype)
    args = [new if a is args[iw] else a for a in args]  # W (also passed as BIAS) replaced
    gc.collect()
    assert gone() is None, "the bound launch kept the dropped weight alive"
    second = plan.bound(args)["eargs"]
    for (i, _), f in zip(slots, first):
        assert torch.allclose(second[i], 2 * f, rtol=1e-2, atol=1e-3)


_A_READ = re.compile(r"ldmatrix|ld\.shared\.v4")


def _stats_between(ptx: str) -> tuple[bool, bool]:
    """(some k-loop reads the A tile between its wgmma commit and `wgmma.wait_group 1`, some
    k-loop reads it after that wait): where the statistics' shared loads of the tile (16-byte
    rows with stats-rows, ldmatrix without) sit in each k-step."""
    before = after = False
    for step in ptx.split("wgmma.commit_group")[1:]:
        head, sep, tail = step.partition("wgmma.wait_group.sync.aligned 1;")
        if not sep:
            continue
        before |= bool(_A_READ.search(head))
        # up to the next k-step's wgmma or the loop's end (the final wait); with release-early
        # the loads follow the slot's arrive
        after |= bool(_A_READ.search(re.split(r"wgmma\.mma_async|wgmma\.wait_group\.sync\.aligned 0;", tail)[0]))
    return before, after


@pytest.mark.parametrize("kind,flags,late", [("rms", dict(has_g=False), True),
                                             ("ln", dict(has_g=False, has_b=False), False)])
def test_statistics_sit_where_measured_faster_in_the_k_step(kind, flags, late):
    """hopper_ws.STATS_LATE_MAX_SUMS: RMSNorm's one sum of squares is computed after the wait for
    the previous k-step's wgmma (stats-late; the k-step's four wgmma instructions go out back to
    back), LayerNorm's two sums right after the issue; the op's kernels, in their PTX."""
    ck = ops.aot_compile(kind, M=262144, N=1024, K=512, **flags)
    assert ck.lowered is not None, ck.remarks
    assert ck.lowered.plan.config.stats_late is late
    assert ("stats-late" in str(ck.remarks)) is late
    assert _stats_between(ck.lowered.kernel.asm["ptx"]) == (not late, late)


def test_dtype_stand_ins_specialize_by_name():
    """The ahead-of-time compile's dtype stand-ins (`runtime._DType`) specialize to their own
    pointer types whatever was specialized before: Triton's native specializer caches a pointer
    type by hash(dtype), and stand-ins made afresh had identity hashes, so a bf16 stand-in at a
    freed int64 one's address compiled as *i64 (the CPU suite's flake of sessions 33 and 34:
    this sequence gave ['*i64', '*i64', '*fp32', '*i64', '*fp32'])."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend
    from normfuse.lowering.runtime import _DType, _Fake

    def spec(name):  # (each stand-in dropped before the next is made)
        return native_specialize_impl(BaseBackend, _Fake([16], _DType(name)), False, True, True)[0]
    names = ("int64", "bfloat16", "float32", "bfloat16", "int64", "float16", "bfloat16")
    assert [spec(n) for n in names] == ["*i64", "*bf16", "*fp32", "*bf16", "*i64", "*fp16",
                                        "*bf16"]
    assert _DType("bfloat16") is _DType("bfloat16")
    assert hash(_DType("bfloat16")) != hash(_DType("int64"))
