"""hopper-ws: the lowering of fused GEMM-shaped kernels to the warp-specialized Gluon template.

CPU: what the pass matches and produces (ttg.warp_specialize TTGIR, generated hooks, PTX with
setmaxnreg + wgmma), what it refuses and why (remarks), the IR queries and the affine address
reading it relies on. GPU (`gpu` marker): the lowered ops against fp64 and the naive kernel on
ragged shapes with NaN-poisoned outputs, bitwise repeatability, the TMA-alignment fallback, and
LayerNorm at |mean| >> std.
"""
from __future__ import annotations

import re
import textwrap

import pytest
import torch

from normfuse import reference as ref
from normfuse.ops import prenorm_linear as ops
from normfuse.kernels.configs import GemmConfig
from normfuse.pipeline import DEFAULT_PIPELINE, parse_pipeline, run_pipeline

PERSISTENT = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
PER_TILE = GemmConfig(128, 256, 64, 8, 8, 3)


def _lowered(kind, **kw):
    ck = ops.aot_compile(kind, M=262144, N=2048, K=1024, **kw)
    applied = [r for r in ck.remarks if "[hopper-ws] applied" in r]
    return ck, applied


# ---------------------------------------------------------------------------------------------
# CPU: what is lowered
# ---------------------------------------------------------------------------------------------

_KINDS = [("rms", {"has_g": False}), ("rms", {"has_g": True}),
          ("ln", {"has_g": False, "has_b": False}), ("ln", {"has_g": True, "has_b": True})]


# the default suite: every kernel persistent, the per-tile forms of the kernels with g (8 of 12);
# `-m slow` all
@pytest.mark.parametrize("config,persistent,tma,kind,flags", [
    pytest.param(c, p, t, k, f, marks=() if p or f.get("has_g") else pytest.mark.slow)
    for c, p, t in [(PERSISTENT, True, False), (PER_TILE, False, False), (PER_TILE, False, True)]
    for k, f in _KINDS])
def test_prenorm_kernels_are_lowered(kind, flags, config, persistent, tma):
    """Every form of the naive pre-norm kernels the ops launch (persistent or one program per
    tile, pointer or TMA loads, g folded or in the loop) goes through lazy-prenorm and then
    hopper-ws: the TTGIR is warp-specialized (a 4-warp loader partition) and the PTX has the
    register reallocation and wgmma of the template."""
    ck, applied = _lowered(kind, config=config, persistent=persistent, tma=tma, **flags)
    assert ck.lowered is not None and applied, ck.remarks
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    assert "ttg.warp_specialize" in ttgir and re.search(r"partition0\(.*num_warps\(4\)", ttgir)
    assert "setmaxnreg.inc.sync.aligned.u32" in ptx and "wgmma.mma_async" in ptx
    assert "cp.async.bulk.tensor" in ptx  # the loader's TMA
    n_stats = 2 if kind == "ln" else 1
    assert f"{n_stats} row statistic(s)" in applied[0]
    gluon = ck.asm["gluon"]
    assert "def stats(" in gluon and "def epi(" in gluon
    if flags.get("has_g"):
        assert "def afn(" in gluon and "A operand computed in registers" in applied[0]
    else:
        assert "def afn(" not in gluon and "A straight from shared memory" in applied[0]
    if kind == "ln":
        assert "colvec_load(" in gluon and "column sum(s) of the weight precomputed" in applied[0]
        # the epilogue's 1-D loads (column sums, the folded bias) before its first conversion
        epi = gluon[gluon.index("def epi("):]
        epi = epi[:epi.index("return")]
        loads = [i for i, ln in enumerate(epi.splitlines())
                 if "colvec_load(" in ln or "gl.load(" in ln]
        fits = [i for i, ln in enumerate(epi.splitlines())
                if "colvec_fit(" in ln or "convert_layout(" in ln]
        assert loads and fits and max(loads) < min(fits), epi
    if kind == "ln" and flags.get("has_g"):
        assert "def pre(" in gluon  # the shift: the first tile's row mean


# the default suite: every kernel in the default order, the shared statistics for the kernels
# with g (7 of 10); `-m slow` all
@pytest.mark.parametrize("order,kind,flags", [
    pytest.param(o, k, f, marks=pytest.mark.slow if o and not f.get("has_g") else ())
    for o in ("", "{stats-share=true}") for k, f in [("gemm", {})] + _KINDS])
def test_lowered_wgmma_is_not_serialized(kind, flags, order):
    """ptxas keeps the template's wgmma pipelined (no C7515 "serialized" note) for every kernel
    kind, in both tile orders. A first version of a row-major order serialized the plain GEMM's
    wgmma (a non-wgmma instruction defining accumulator registers inside the pipeline stage):
    15-20 % slower on the H200 and invisible in the IR."""
    passes = ("lazy-prenorm," if kind != "gemm" else "") + "hopper-ws" + order
    ck = ops.aot_compile(kind, M=262144, N=1024, K=512, passes=passes, **flags)
    assert ck.lowered is not None, ck.remarks
    res = ck.resources()
    assert not res["wgmma_serialized"], res["wgmma_serialized_reason"]
    assert res["spill_stores"] == 0, res


def test_consecutive_tiles_of_a_row_block_reuse_the_statistics():
    """A consumer whose next tile is in the row block of its previous one runs the plain k-loop
    (no reads of the A tile) and keeps the statistics: the PTX has both k-loops (twice the wgmma of one)."""
    ck, applied = _lowered("rms", config=PERSISTENT, persistent=True, has_g=False)
    assert ck.asm["ptx"].count("wgmma.mma_async") == 8, applied


@pytest.mark.parametrize("kind,flags", [("rms", {"has_g": False}), ("ln", {"has_g": False, "has_b": False})])
def test_shared_statistics_are_published_and_awaited(kind, flags):
    """stats-share: the consumer has two k-loops (a row block's first tile with the statistics'
    shared-memory reads, its other tiles without); the first tile publishes the statistics as 64-bit
    words (value, epoch) with relaxed GPU-scope stores (single-copy atomic: no fence, no flag), the
    other tiles read the words before their k-loop and check the stamps after it (reloading
    stale ones in a loop); no extra partition."""
    ck = ops.aot_compile(kind, M=262144, N=2048, K=1024, passes="lazy-prenorm,hopper-ws{stats-share=true}",
                         **flags)
    assert ck.lowered is not None, ck.remarks
    assert "once per row block (its first tile, a wave ahead of the others)" in ck.remarks[-1]
    assert "stats-shared" in ck.remarks[-1]
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    assert "partition1(" not in ttgir and re.search(r"partition0\(.*num_warps\(4\)", ttgir)
    assert ptx.count("st.relaxed.gpu.global.b64") >= 3  # statistics 0, 1 and the shift
    assert "NF_CHECK: mov.b64 {%nflo, %nfhi}" in ptx and "ld.relaxed.gpu.global.b64" in ptx
    assert "fence.acq_rel" not in ptx and "membar" not in ptx  # nothing waits for the stores
    ck0, _ = _lowered(kind, config=PERSISTENT, persistent=True, **flags)
    assert "st.relaxed.gpu" not in ck0.asm["ptx"]
    # the k-loop twice, with the statistics (the A tile's shared loads: 16-byte rows with
    # stats-rows, the default, ldmatrix without) and the plain one (as the default's, which keeps
    # a plain loop for row-major runs)
    assert ptx.count("wgmma.mma_async") == ck0.asm["ptx"].count("wgmma.mma_async") == 8
    assert "ld.shared.v4" in ptx


@pytest.mark.parametrize("programs", [1, 7, 132])
@pytest.mark.parametrize("num_pid_n", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("num_pid_m", [1, 3, 8, 9, 65, 2049])
def test_shared_statistics_order(num_pid_m, num_pid_n, programs):
    """The shared-statistics tile order covers every tile once; a row block's other tiles come
    after its first tile (a CTA waits only for an earlier position: no cycle among resident
    CTAs), and from the lead groups on at least a wave (`programs` positions) after it."""
    from normfuse.lowering.ws_gemm import share_order
    order = share_order(num_pid_m, num_pid_n, programs)
    tiles = [t for t in order if t is not None]
    assert sorted(tiles) == [(m, n) for m in range(num_pid_m) for n in range(num_pid_n)]
    lead = -(-programs // (8 * num_pid_n)) + 1
    # empty positions: the first tiles of the lead groups past the last, the last group's padding
    assert len(order) - len(tiles) <= lead * 8 + 7 * num_pid_n
    pos = {t: i for i, t in enumerate(order) if t is not None}
    for m in range(num_pid_m):
        for n in range(1, num_pid_n):
            assert pos[(m, n)] > pos[(m, 0)]
            if m >= lead * 8:
                assert pos[(m, n)] - pos[(m, 0)] >= programs


def test_ops_share_the_statistics_from_eight_n_tiles(monkeypatch):
    """The pre-norm ops' default: LayerNorm's statistics shared per row block at >= 8 N tiles
    (measured faster there, slower at 2 and 4) and >= 4 waves of tiles, on coop2 with
    epi-prefetch, per tile below; RMSNorm
    always per tile (its coop2 schedule measured faster than sharing); the plain GEMM and explicit
    passes as given."""
    pick = ops._default_pipeline_for
    assert pick("ln", 2048, 256).endswith(
        "hopper-ws{schedule=coop2,stats-share=true,epi-prefetch=true}")
    assert pick("ln", 8192, 256).startswith("lazy-prenorm,") and "stats-share" in pick("ln", 8192, 256)
    assert pick("ln", 2047 - 256, 256) == pick("ln", 1024, 256) == "default"
    assert pick("rms", 2048, 256) == pick("rms", 17920, 256) == "default"
    assert pick("gemm", 8192, 256) == "default"
    # and only from 4 waves of tiles (measured at the models' shapes): 8 N tiles x 64 row blocks
    # = 512 < 4 x 132 tiles stays per tile, 8 x 66 = 528 shares; M = None does not count tiles
    assert pick("ln", 2048, 256, 64 * 128, 128, 132) == "default"
    assert pick("ln", 2048, 256, 66 * 128, 128, 132) == pick("ln", 2048, 256)
    assert pick("ln", 2048, 256, 65 * 128 + 1, 128, 132) == pick("ln", 2048, 256)
    assert pick("ln", 3840, 256, 4096, 128, 132) == "default"   # GPT-2 c_attn at T = 4096
    assert pick("ln", 3840, 256, 8192, 128, 132) == pick("ln", 2048, 256)
    monkeypatch.setenv("NORMFUSE_STATS_SHARE", "0")  # the escape hatch (SMs withheld from the launch)
    assert pick("ln", 8192, 256) == "default"
    monkeypatch.delenv("NORMFUSE_STATS_SHARE")
    from normfuse.pipeline import parse_pipeline
    assert [p.name for p in parse_pipeline(pick("ln", 4096, 256))] == [
        p.name for p in parse_pipeline("default")]
    ck = ops.aot_compile("ln", M=262144, N=2048, K=1024, has_g=False, has_b=False,
                         passes=pick("ln", 2048, 256))
    assert "stats-shared" in ck.remarks[-1], ck.remarks
    ck = ops.aot_compile("rms", M=262144, N=2048, K=1024, has_g=False, passes=pick("rms", 2048, 256))
    assert " coop2 " in ck.remarks[-1] and "release-early" in ck.remarks[-1], ck.remarks


def test_shared_statistics_workspace(monkeypatch):
    """SharedStats (host side, CPU stand-ins for the CUDA stream queries): one buffer per stream,
    every launch a larger epoch, a larger M gets a larger zeroed buffer, the epoch limit zeroes
    the words and restarts, at most MAX_STREAMS buffers are kept, and a capture gets fresh zeros
    at epoch 1 without touching the streams' buffers; a stream the caller names is used as
    given."""
    from types import SimpleNamespace
    from normfuse.device import cuda_state
    from normfuse.lowering.runtime import SharedStats
    stream = SimpleNamespace(cuda_stream=1)
    capturing = [False]
    monkeypatch.setattr(cuda_state, "device", lambda: 0, raising=False)
    monkeypatch.setattr(cuda_state, "stream", lambda index: stream.cuda_stream, raising=False)
    monkeypatch.setattr(cuda_state, "capturing", lambda: capturing[0], raising=False)
    monkeypatch.setattr(SharedStats, "_by_stream", None)
    buf, e1 = SharedStats.take("cpu", 1000, 128)
    assert buf.dtype == torch.int64 and buf.numel() == 3 * 1024 and not buf.any()
    buf[:] = 7  # words of a launch
    buf2, e2 = SharedStats.take("cpu", 900, 128)
    assert buf2 is buf and e2 == e1 + 1  # smaller M: same buffer, next epoch
    big, e3 = SharedStats.take("cpu", 5000, 128)
    assert big.numel() == 3 * 5120 and not big.any() and e3 == 1  # grown: fresh zeros
    monkeypatch.setattr(SharedStats, "EPOCH_LIMIT", 3)
    big[:] = 5
    for _ in range(2):
        _, e = SharedStats.take("cpu", 5000, 128)
    assert e == 3
    _, e = SharedStats.take("cpu", 5000, 128)
    assert e == 1 and not big.any()  # limit: zeroed, restarted
    capturing[0] = True
    cap, e = SharedStats.take("cpu", 5000, 128)
    assert e == 1 and cap is not big and not cap.any()
    capturing[0] = False
    _, e = SharedStats.take("cpu", 5000, 128)
    assert e == 2  # the stream's own sequence went on
    for i in range(2, 2 + SharedStats.MAX_STREAMS):
        stream = SimpleNamespace(cuda_stream=i)
        SharedStats.take("cpu", 128, 128)
    assert len(SharedStats._by_stream) == SharedStats.MAX_STREAMS
    assert (None, 1) not in SharedStats._by_stream  # the least recently used went
    named, e = SharedStats.take(torch.device("cpu"), 128, 128, stream=10**6, capturing=False)
    assert e == 1 and (None, 10**6) in SharedStats._by_stream
    assert SharedStats.take("cpu", 128, 128, stream=10**6, capturing=False) == (named, 2)


def test_shared_statistics_need_a_folded_weight():
    """With g in the k-loop the A operand goes through registers anyway: stats-share leaves the
    statistics in the MMA warps and says why."""
    ck = ops.aot_compile("rms", M=262144, N=2048, K=1024, has_g=True,
                         passes="lazy-prenorm,hopper-ws{stats-share=true}")
    assert ck.lowered is not None
    assert "stats-share not applied: the A operand is computed in the k-loop" in ck.remarks[-1]
    assert "in the MMA warps" in ck.remarks[-1]


def test_generated_rms_hooks_are_the_algebra():
    """The hooks translate the IR op by op: the statistic is the row sum of x*x (`row_sums`:
    over the whole row, or per lane where the template keeps partials), the epilogue
    multiplies the accumulator by 1/sqrt(ss/K + eps) broadcast along rows."""
    ck, _ = _lowered("rms", config=PERSISTENT, persistent=True, has_g=False)
    g = ck.asm["gluon"]
    stats = g[g.index("def stats("):g.index("def epi(")]
    assert "t0 = (af * af)" in stats and "return st0 + row_sums(t0, st0), st1" in stats
    epi = g[g.index("def epi("):]
    assert "gl.sqrt(" in epi and "(1.0 / " in epi and "gl.expand_dims(" in epi and "(acc * " in epi


def test_plain_gemm_is_the_backbone():
    """The plain GEMM kernel (no norm) lowers to the same template without statistics: the
    backbone the fused ops are measured against."""
    launcher = ops.get_launcher("gemm", ("hopper-ws",))
    t = ops._Spec(torch.bfloat16)
    consts = ops._launch_consts("gemm", PERSISTENT, 262144, 1024, 1024, {}, False, True, None, 132)
    sig, consts, attrs, options, _ = launcher.specialize((t, t, t, 262144, 1024, 1024, 1024, 1024, 1024),
                                                         dict(consts, **PERSISTENT.options()))
    import normfuse
    ck = normfuse.compile(launcher.fn, signature=sig, constexprs=consts, attrs=attrs,
                          passes=("hopper-ws",), **options)
    assert ck.lowered is not None, ck.remarks
    assert "no statistics" in ck.remarks[-1] and "def stats(" not in ck.asm["gluon"]


def test_default_pipeline_names_every_pass():
    names = [p.name for p in parse_pipeline("default")]
    assert names == list(DEFAULT_PIPELINE) == ["lazy-prenorm", "cluster-reduce", "cluster-reduce-chain",
                                               "epilogue-norm", "residual-acc", "hopper-ws"]


def test_postnorm_is_left_to_the_triton_passes_with_a_reason():
    """A post-norm's epilogue reduces rows of the accumulator: hopper-ws leaves it (measured
    slower in the template) and says so; the Triton passes still fuse it."""
    from normfuse.ops import postnorm_linear as post
    ck = post.aot_compile_postnorm("rms", M=8192, N=256, K=512, passes="default")
    assert ck.lowered is None
    missed = [r for r in ck.remarks if "[hopper-ws] missed" in r]
    assert missed and "reduces rows of the accumulator" in missed[0], ck.remarks
    assert any("[epilogue-norm] applied" in r for r in ck.remarks)


# ---------------------------------------------------------------------------------------------
# CPU: what is refused (normfuse-opt on small TTIR inputs)
# ---------------------------------------------------------------------------------------------

def _ttir(fn_src: str, signature: dict, constexprs: dict) -> str:
    """Compile a small @triton.jit kernel to TTIR (no passes) from source text."""
    import importlib.util
    import tempfile
    import triton
    from triton.compiler import ASTSource
    from triton.backends.compiler import GPUTarget
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write("import triton\nimport triton.language as tl\n\n" + textwrap.dedent(fn_src))
    spec = importlib.util.spec_from_file_location("nf_ws_case", f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ck = triton.compile(ASTSource(mod.kernel, signature, constexprs=constexprs),
                        target=GPUTarget("cuda", 90, 32))
    return ck.asm["ttir"]


_GEMM = """
@triton.jit
def kernel(X, W, Y, M, N, K, sx, sw, sy, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(X + rm[:, None] * sx + (k0 + rk)[None, :], mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(W + rn[None, :] * sw + (k0 + rk)[:, None], mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    {epilogue}
"""
_SIG = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "M": "i32", "N": "i32", "K": "i32", "sx": "i32",
        "sw": "i32", "sy": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
_CONST = {"BM": 128, "BN": 256, "BK": 64}
_STORE = ("tl.store(Y + rm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16), "
          "mask=(rm[:, None] < M) & (rn[None, :] < N))")


def test_user_written_gemm_over_offsets_is_lowered():
    """A GEMM written differently from the ops' kernels (2-D grid, k-loop over offsets, masks on
    the offset expressions) is recognized: the address analysis reads the computation."""
    text = _ttir(_GEMM.format(epilogue=_STORE), _SIG, _CONST)
    r = run_pipeline(text, "hopper-ws")
    assert r.changed and "ttg.warp_specialize" in r.text, [str(x) for x in r.remarks]


@pytest.mark.parametrize("epilogue,reason", [
    (_STORE + "\n    tl.store(Y, acc.to(tl.bfloat16).sum())", "side effects besides one tt.store"),
    (_STORE.replace("mask=(rm[:, None] < M) & (rn[None, :] < N)", "mask=rm[:, None] < M"),
     "the output's N cannot be told"),
    (_STORE.replace("rm[:, None] * sy + rn[None, :]", "rn[None, :] * sy + rm[:, None]"),
     "rows are not contiguous"),
    (_STORE.replace("acc.to(tl.bfloat16)", "tl.exp(acc).to(tl.bfloat16)"), None),
])
def test_bail_outs_leave_the_ir_unchanged(epilogue, reason):
    text = _ttir(_GEMM.format(epilogue=epilogue), _SIG, _CONST)
    r = run_pipeline(text, "hopper-ws")
    if reason is None:  # math.exp is translated: lowered
        assert r.changed
        return
    assert not r.changed and r.text == run_pipeline(text, ()).text
    missed = [str(x) for x in r.remarks if x.kind == "missed"]
    assert missed and reason in missed[0], missed


def test_cli_runs_the_lowering(normfuse_opt, tmp_path):
    """normfuse-opt lowers as run_pipeline does in this process, and its child compiles the
    kernel without importing torch (runtime._binder_without_torch: 1.2 s a run; `-X importtime`
    lists the child's imports too, in the stderr the driver relays)."""
    import subprocess
    text = _ttir(_GEMM.format(epilogue=_STORE), _SIG, _CONST)
    src = tmp_path / "gemm.ttir"
    src.write_text(text)
    out = subprocess.run([normfuse_opt[0], "-X", "importtime", *normfuse_opt[1:],
                          "--pass-pipeline=hopper-ws", str(src)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ttg.warp_specialize" in out.stdout and "[hopper-ws] applied" in out.stderr
    imported = re.findall(r"^import time: .*\| +(\S+)$", out.stderr, flags=re.M)
    assert "normfuse.lowering.ws_gemm" in imported  # the child's imports are listed
    # (Triton's attempt, with torch hidden, is listed as `torch` alone: no torch.* module loads)
    assert not [m for m in imported if m.startswith("torch.")], "the child imported torch"
    assert out.stdout == run_pipeline(text, "hopper-ws", debuginfo=False).text


def test_bad_options():
    from normfuse.passes import PassError
    with pytest.raises(PassError, match="schedule"):
        parse_pipeline("hopper-ws{schedule=fast}")
    with pytest.raises(PassError, match="stages"):
        parse_pipeline("hopper-ws{stages=9}")


# ---------------------------------------------------------------------------------------------
# CPU: the address algebra
# ---------------------------------------------------------------------------------------------

def test_affine_split_reads_rows_and_strides():
    """The tile address `(pid * 128 + r0) % M * stride + r1 + 64 k` splits into a row index that
    wraps at M with row stride `stride`, and a unit-stride column index that walks K by 64."""
    from normfuse.ir.affine import TRIP, DimIndex, Poly, split_dims
    r1 = Poly.atom(("range", 64), (1,))
    pid, st, M = (Poly.atom(("arg", i)) for i in (1, 2, 3))
    inner = pid.scale(128) + Poly.atom(("range", 128), (0,))
    rem = Poly.atom(("arith.remsi", "tensor<128xi32>", (inner, M), "", 0), (0,))
    off = rem * st + r1 + Poly.atom(TRIP).scale(64)
    d0, d1 = split_dims(off, 2)
    assert isinstance(d0, DimIndex) and d0.stride == st and d0.modulus == M
    assert d0.parts(0) == (1, 0, pid.scale(128))
    assert d1.stride == Poly.const(1) and d1.parts(1) == (1, 64, Poly({}))


# ---------------------------------------------------------------------------------------------
# GPU
# ---------------------------------------------------------------------------------------------

SHAPES = [(1, 64, 64), (127, 264, 200), (1000, 1000, 520), (4133, 1032, 1000), (8192, 512, 1024)]


def _inputs(M, K, N, dtype, mean=0.0, seed=0):
    torch.manual_seed(seed)
    x = (torch.randn(M, K, device="cuda") + mean).to(dtype)
    g = (1 + 0.1 * torch.randn(K, device="cuda")).to(dtype)
    b = (0.1 * torch.randn(K, device="cuda")).to(dtype)
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(dtype)
    return x, g, b, w


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("fold", [True, False])
@pytest.mark.parametrize("M,K,N", SHAPES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_lowered_matches_fp64_and_naive(kind, fold, M, K, N, dtype):
    x, g, b, w = _inputs(M, K, N, dtype)
    if kind == "rms":
        prep = lambda passes: ops.prepare_rmsnorm_linear(x, g, w, 1e-6, fold=fold, passes=passes)
        want = ref.rmsnorm_linear_ref(x, g, w, 1e-6)
    else:
        prep = lambda passes: ops.prepare_layernorm_linear(x, g, b, w, 1e-5, fold=fold, passes=passes)
        want = ref.layernorm_linear_ref(x, g, b, w, 1e-5)
    fused, naive = prep("default"), prep(())
    lowered = fused.compile().lowered is not None
    aligned = (K * x.element_size()) % 16 == 0
    if fused.config.block_m == 128:  # small-M configs (64-row tiles) stay on the Triton kernel
        assert lowered, fused.compile().remarks
    errs = []
    for p in (fused, naive):
        p.out.fill_(float("nan"))
        y = p()
        torch.cuda.synchronize()
        assert not torch.isnan(y).any(), "an output element was not written"
        errs.append(ref.rel_err(y, want))
    assert errs[0] <= 1.5 * errs[1] + 1e-4, (errs, "lowered" if aligned else "fallback")
    first = fused.out.clone()
    fused()
    torch.cuda.synchronize()
    assert torch.equal(first, fused.out), "two launches differ"


def _prep(kind, x, g, b, w, passes):
    if kind == "rms":
        return ops.prepare_rmsnorm_linear(x, g, w, 1e-6, passes=passes)
    return ops.prepare_layernorm_linear(x, g, b, w, 1e-5, passes=passes)


def _want(kind, x, g, b, w):
    if kind == "rms":
        return ref.rmsnorm_linear_ref(x, g, w, 1e-6)
    return ref.layernorm_linear_ref(x, g, b, w, 1e-5)


SHARE = "lazy-prenorm,hopper-ws{stats-share=true}"
SHARE_COOP2 = "lazy-prenorm,hopper-ws{schedule=coop2,stats-share=true}"


@pytest.mark.gpu
@pytest.mark.parametrize("share", [SHARE, SHARE_COOP2], ids=["coop", "coop2"])
@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("M,K,N", [(1, 64, 64), (1000, 2056, 264), (16384 + 77, 520, 1000),
                                   (33000, 1024, 520), (8192, 512, 4096), (40000, 512, 200)])
def test_gpu_shared_statistics_match_fp64_and_naive(kind, M, K, N, share):
    """Shared statistics (a row block's first tile publishes them, its other tiles wait), on coop
    and on coop2's halves: fewer and more tiles than SMs, a partial last row block, K not a
    multiple of the k-tile, 1 to 16 N tiles per row block. Every output written, within 1.5x the
    naive kernel's error vs fp64, bitwise what the default lowering (statistics in every tile)
    writes, and launches bitwise equal (each runs at the next epoch of the same words)."""
    x, g, b, w = _inputs(M, K, N, torch.bfloat16)
    fused, naive = _prep(kind, x, g, b, w, share), _prep(kind, x, g, b, w, ())
    every = _prep(kind, x, g, b, w, "lazy-prenorm,hopper-ws")
    if fused.config.block_m == 128:  # small-M configs (64-row tiles) stay on the Triton kernel
        assert "shared through global memory" in fused.compile().remarks[-1]
    want = _want(kind, x, g, b, w)
    errs = []
    for p in (fused, naive, every):
        p.out.fill_(float("nan"))
        y = p()
        torch.cuda.synchronize()
        assert not torch.isnan(y).any(), "an output element was not written"
        errs.append(ref.rel_err(y, want))
    assert errs[0] <= 1.5 * errs[1] + 1e-4, errs
    # the same statistics (same tile, same order) as when every tile computes them
    assert torch.equal(fused.out, every.out), "shared statistics differ from per-tile ones"
    first = fused.out.clone()
    for _ in range(3):
        fused()
    torch.cuda.synchronize()
    assert torch.equal(first, fused.out), "launches differ"


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_gpu_shared_statistics_follow_new_inputs(kind):
    """The statistics words are reused from launch to launch (epochs, never cleared):
    after x changes in place, the next launch must wait for the new statistics, not take the
    previous launch's. Alternating two inputs on one prepared launch, and a second M on the same
    stream (the buffers hold more rows than it needs), each output matches its own reference."""
    M, K, N = 20000, 1024, 1024
    xa, g, b, w = _inputs(M, K, N, torch.bfloat16, seed=1)
    xb = (3.0 * _inputs(M, K, N, torch.bfloat16, seed=2)[0].float()).to(torch.bfloat16)
    x = xa.clone()
    p = _prep(kind, x, g, b, w, SHARE)
    outs = {}
    for name, src in (("a", xa), ("b", xb), ("a2", xa), ("b2", xb)):
        x.copy_(src)
        p.out.fill_(float("nan"))
        outs[name] = p().clone()
    small = _prep(kind, xb[:777], g, b, w, SHARE)
    y_small = small().clone()
    torch.cuda.synchronize()
    assert torch.equal(outs["a"], outs["a2"]) and torch.equal(outs["b"], outs["b2"])
    assert ref.rel_err(outs["a"], _want(kind, xa, g, b, w)) < 1e-2
    assert ref.rel_err(outs["b"], _want(kind, xb, g, b, w)) < 1e-2
    assert ref.rel_err(y_small, _want(kind, xb[:777], g, b, w)) < 1e-2


@pytest.mark.gpu
def test_gpu_shared_statistics_in_a_cuda_graph():
    """Captured in a CUDA graph (a fresh zeroed buffer captured with the launch), replayed after the
    input changed: the replay computes the new input's statistics."""
    M, K, N = 4096, 1024, 512
    x, g, _, w = _inputs(M, K, N, torch.bfloat16, seed=3)
    x2 = _inputs(M, K, N, torch.bfloat16, seed=4)[0]
    p = _prep("rms", x, g, None, w, SHARE)
    p()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(graph, stream=s):
            p()
    torch.cuda.current_stream().wait_stream(s)
    x.copy_(x2)
    p.out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert ref.rel_err(p.out, _want("rms", x2, g, None, w)) < 1e-2
    graph.replay()
    p()  # an eager launch after the replays still waits for its own epoch
    torch.cuda.synchronize()
    assert ref.rel_err(p.out, _want("rms", x2, g, None, w)) < 1e-2


@pytest.mark.gpu
def test_gpu_misaligned_rows_fall_back_to_the_fused_triton_kernel():
    """K = 520 in fp16 is 1040-byte rows (aligned); a strided x with a 1-element offset is not:
    the launch runs the unlowered kernel, with a warning, and stays correct."""
    M, K, N = 300, 512, 256
    x, g, _, w = _inputs(M, K + 1, N, torch.bfloat16)
    xv = x[:, 1:]  # base 2 bytes past a 16-byte boundary
    prep = ops.prepare_rmsnorm_linear(xv, g[1:], w[:, :K].contiguous(), 1e-6, passes="default")
    with pytest.warns(RuntimeWarning, match="unlowered kernel"):
        y = prep()
    want = ref.rmsnorm_linear_ref(xv, g[1:], w[:, :K], 1e-6)
    assert ref.rel_err(y, want) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("fold", [True, False])
def test_gpu_layernorm_large_mean(fold):
    """|mean| >> std: the lowered kernel keeps the fused kernel's accuracy (the shift with g in
    the loop; the exact fp32 correction with g folded)."""
    x, g, b, w = _inputs(2048, 1024, 512, torch.bfloat16, mean=50.0)
    want = ref.layernorm_linear_ref(x, g, b, w, 1e-5)
    errs = [ref.rel_err(ops.prepare_layernorm_linear(x, g, b, w, 1e-5, fold=fold, passes=p)(), want)
            for p in ("default", ())]
    assert errs[0] <= 1.5 * errs[1] + 1e-4, errs


@pytest.mark.parametrize("kind,flags,want,why", [
    ("rms", {"has_g": False}, "coop2", None),
    ("ln", {"has_g": False, "has_b": False}, "coop2", None),
    ("gemm", {}, "coop", None),
    ("rms", {"has_g": True}, "coop", "the A operand is computed in the k-loop"),
])
def test_auto_schedule(kind, flags, want, why):
    """schedule=auto (the default): coop2 for pre-norm kernels with the A tile straight from
    shared memory, coop for the plain GEMM (no statistics: no remark) and, with a remark saying
    why, for an A operand computed in the k-loop; release-early with RMSNorm's late statistics."""
    passes = ("lazy-prenorm," if kind != "gemm" else "") + "hopper-ws"
    ck = ops.aot_compile(kind, M=262144, N=1024, K=512, passes=passes, **flags)
    cfg = ck.lowered.plan.config
    assert cfg.schedule == want, ck.remarks
    remark = ck.remarks[-1]
    assert (f"schedule coop (auto): {why}" in remark) if why else "(auto)" not in remark
    assert cfg.release_early == (kind == "rms" and not flags["has_g"])
    # stats-share asked for: coop (coop2 does not share), said so
    if kind == "ln":
        ck = ops.aot_compile(kind, M=262144, N=2048, K=1024,
                             passes="lazy-prenorm,hopper-ws{stats-share=true}", **flags)
        assert ck.lowered.plan.config.schedule == "coop" and ck.lowered.plan.config.stats_share
        assert "schedule coop (auto): the statistics are shared per row block" in ck.remarks[-1]


@pytest.mark.slow  # (6 s: a remark's wording under two option values)
def test_release_early_note_only_when_asked():
    """release-early is on by default where the statistics are late, silently elsewhere (LayerNorm's
    two sums); asked for explicitly where it cannot apply, the remark says why (stats-late=false
    named as the reason); stats-late takes the boolean spellings."""
    ln = dict(has_g=False, has_b=False)
    remark = ops.aot_compile("ln", M=262144, N=1024, K=512, **ln).remarks[-1]
    assert "release-early" not in remark
    remark = ops.aot_compile("ln", M=262144, N=1024, K=512,
                             passes="lazy-prenorm,hopper-ws{release-early=true}", **ln).remarks[-1]
    assert "release-early not applied: the statistics are not computed after the wait" in remark
    ck = ops.aot_compile("rms", M=262144, N=1024, K=512, has_g=False,
                         passes="lazy-prenorm,hopper-ws{stats-late=off,release-early=true}")
    assert not ck.lowered.plan.config.stats_late
    assert "release-early not applied: stats-late=false" in ck.remarks[-1]
    ck = ops.aot_compile("rms", M=262144, N=1024, K=512, has_g=False,
                         passes="lazy-prenorm,hopper-ws{release-early=false}")
    cfg = ck.lowered.plan.config
    assert cfg.stats_late and not cfg.release_early


def test_ws_config_refuses_what_the_template_would_drop():
    """WSConfig (the plan's tile config) refuses the combinations the template cannot run as
    asked: shared statistics with ping-pong's two consumers (the template would not share),
    coop2's halves with a post-norm row exchange, both workspaces at once."""
    from normfuse.ir.ws_plan import WSConfig
    assert WSConfig(consumers=2, consumer_warps=4, halves=True, stats_share=True).stats_share
    for bad, match in ((dict(consumers=2, consumer_warps=4, stats_share=True), "not ping-pong"),
                       (dict(consumers=2, consumer_warps=4, halves=True, row_exchange=1),
                        "not with row_exchange"),
                       (dict(stats_share=True, row_exchange=1), "one workspace")):
        with pytest.raises(ValueError, match=match):
            WSConfig(**bad)


def test_hoist_loads_puts_one_dimensional_loads_first():
    """codegen.hoist_loads: each coalesced 1-D load with its address arithmetic goes first (in
    order), the rest keeps its order; a load whose address reads the tile stays, and a body with
    a store is left alone."""
    from normfuse.lowering.codegen import hoist_loads
    body = ["cs0_v = colvec_load(eargs[0], pid_n, eargs[1], acc.shape[1])",
            "cs0 = colvec_fit(cs0_v, acc)",
            "t0 = (acc * 2.0)",
            "t1 = (pid_n * 256)",
            "t2 = (eargs[4] + t1)",
            "t3 = gl.load(t2)",
            "t4 = gl.expand_dims(gl.convert_layout(t3, gl.SliceLayout(0, acc.type.layout)), 0)",
            "t5 = gl.sum(acc, axis=0)",
            "t6 = gl.load((eargs[5] + t5.to(gl.int32)))",
            "t7 = (t0 + t4)"]
    vec = {"cs0_v", "t1", "t2", "t3", "t5", "t6"}
    out = hoist_loads(body, vec)
    assert sorted(out) == sorted(body)
    assert out[:4] == [body[0], body[3], body[4], body[5]]
    assert out[4:] == [body[1], body[2], body[6], body[7], body[8], body[9]]
    assert hoist_loads(body + ["gl.store(eargs[6], t5)"], vec) == body + ["gl.store(eargs[6], t5)"]
    assert hoist_loads(body[2:3], vec) == body[2:3]


def test_hoist_loads_option_orders_the_epilogues_loads():
    """LayerNorm folded with a shift (the column sums and the folded bias: two 1-D loads in the
    epilogue): by default both loads come before the first conversion in the generated hooks;
    hopper-ws{hoist-loads=false} keeps the DAG's order (a conversion between them), the
    instance's config saying so. (The PTX of the op's LayerNorm kernel at 1024 x 1024 then had
    its four global loads before the epilogue's first barrier, against a barrier between the two
    vectors' loads before: session 25.)"""
    from normfuse.pipeline import DEFAULT_PIPELINE
    for hoist in (True, False):
        passes = (DEFAULT_PIPELINE if hoist else ",".join(DEFAULT_PIPELINE[:-1])
                  + ",hopper-ws{hoist-loads=false}")
        ck, applied = _lowered("ln", config=PERSISTENT, persistent=True, has_g=False, has_b=True,
                               passes=passes)
        assert ck.lowered is not None and applied, ck.remarks
        epi = ck.asm["gluon"][ck.asm["gluon"].index("def epi("):]
        lines = epi[:epi.index("return")].splitlines()
        loads = [i for i, ln in enumerate(lines) if "colvec_load(" in ln or "gl.load(" in ln]
        fits = [i for i, ln in enumerate(lines)
                if "colvec_fit(" in ln or "convert_layout(" in ln]
        assert len(loads) == 2 and fits
        assert (max(loads) < min(fits)) == hoist, epi
        assert ("loads-in-order" in str(ck.lowered.instance.config)) == (not hoist)


_COORD_GEMM = """
@triton.jit
def kernel(X, W, Y, C, M, N, K, sx, sw, sy, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    c = tl.load(C + tl.arange(0, 16))
    rm = (pid_m + {load_shift}) * BM + tl.arange(0, BM)
    sm = (pid_m + {store_shift}) * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(X + rm[:, None] * sx + (k0 + rk)[None, :], mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(W + rn[None, :] * sw + (k0 + rk)[:, None], mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(Y + sm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16),
             mask=(sm[:, None] < M) & (rn[None, :] < N))
"""
_COORD_SIG = dict(_SIG, C="*i32")


@pytest.mark.parametrize("load_shift,store_shift", [
    ("tl.sum(c)", "tl.max(c)"),  # one form (tt.reduce's combiner is a region), two values
    ("tl.sum(c)", "tl.sum(c)"),
])
def test_undetermined_tile_coordinates_are_refused(load_shift, store_shift):
    """The template substitutes its own tile index for the loads' and the store's tile coordinate
    forms: a coordinate computed from something `affine.undetermined` flags (a tt.reduce, whose
    combiner the form does not name) is refused, the IR left unchanged. With `tl.max` at the store
    the old matcher read the loads' and the store's coordinates as one and lowered the kernel to
    store the tile at the loads' rows."""
    text = _ttir(_COORD_GEMM.format(load_shift=load_shift, store_shift=store_shift),
                 _COORD_SIG, _CONST)
    r = run_pipeline(text, "hopper-ws")
    missed = [str(x) for x in r.remarks if x.kind == "missed"]
    assert not r.changed and r.text == run_pipeline(text, ()).text, missed
    assert missed and "its form does not determine" in missed[0] and "tt.reduce" in missed[0], missed
