"""Post-norm ops and the cluster-reduce pass: AOT (IR, PTX, ptxas, launch metadata) on any
machine; numerics against an fp64 reference and against the naive kernel on the GPU."""
import re

import pytest
import torch

from normfuse.kernels.configs import PostNormConfig, select_postnorm_config
from normfuse.ops import (aot_compile_postnorm, linear_layernorm, linear_rmsnorm, postnorm_passes,
                          prepare_linear_rmsnorm)
from normfuse.reference import linear_norm_ref


# ---------------------------------------------------------------------------------------------
# Ahead of time (CPU): what the pipeline makes of the op's kernels
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_aot_single_cta_row(kind):
    ck = aot_compile_postnorm(kind, N=256, K=512)
    assert ck.kernel.metadata.num_ctas == 1
    assert any("[epilogue-norm] applied" in r for r in ck.remarks), ck.remarks
    assert any("[cluster-reduce] missed: no loop over N tiles" in r for r in ck.remarks), ck.remarks
    assert ck.asm["normfuse"].count("tt.store") == 1
    assert "barrier.cluster" not in ck.asm["ptx"] and "wgmma.mma_async" in ck.asm["ptx"]


@pytest.mark.parametrize("kind,N,ctas,stats", [("rms", 1024, 4, 1), ("ln", 2048, 8, 2), ("rms", 4096, 16, 1)])
def test_aot_cluster_kernel(kind, N, ctas, stats):
    base = aot_compile_postnorm(kind, N=N, K=1024, passes=())
    ck = aot_compile_postnorm(kind, N=N, K=1024)
    md = ck.kernel.metadata
    assert md.num_ctas == ctas  # the launcher starts clusters of `ctas` CTAs
    # Triton's own allocation plus the exchange slots (stats x 128 rows x fp32) at its end
    assert md.shared - base.kernel.metadata.shared == stats * 128 * 4, (md.shared, base.kernel.metadata.shared)
    assert any(f"split over a {ctas}-CTA cluster" in r for r in ck.remarks), ck.remarks
    assert any("[epilogue-norm] applied" in r for r in ck.remarks), ck.remarks
    assert ck.asm["normfuse"].count("tt.store") == 1
    ptx = ck.asm["ptx"]
    assert ptx.count("barrier.cluster.arrive.release;") == 2
    assert ptx.count("barrier.cluster.wait.acquire;") == 2
    assert re.search(r"mapa\.shared::cluster\.u32 %nfp, %nfa, " + str(ctas - 1) + ";", ptx)
    assert "ld.shared::cluster.f32" in ptx and "%dynamic_smem_size" in ptx
    assert "wgmma.mma_async" in ptx
    assert len(ck.asm["cubin"]) > 0  # ptxas accepted it (sm_90a)


@pytest.mark.parametrize("kind,N,ctas,stats", [("rms", 1024, 4, 1), ("ln", 512, 2, 2), ("rms", 8192, 16, 1)])
def test_aot_persistent_cluster_kernel(kind, N, ctas, stats):
    """Persistent form: the clusters walk the row blocks; two slot sets (double the shared-memory
    delta), the barrier inside the flattened row-block loop and one more before the exit."""
    ck = aot_compile_postnorm(kind, N=N, K=512, persistent=True)
    md = ck.kernel.metadata
    assert md.num_ctas == ctas
    assert f"normfuse.cluster_smem = {2 * stats * 128 * 4} : i32" in ck.asm["normfuse"]
    assert md.normfuse_launch == {"num_ctas": ctas, "extra_shared": 2 * stats * 128 * 4}
    assert any("persistent: the clusters walk the row blocks" in r for r in ck.remarks), ck.remarks
    ir = ck.asm["normfuse"]
    assert "tt.get_num_programs x" in ir and "tt.flatten" in ir
    ptx = ck.asm["ptx"]
    # arrive and wait come in pairs (one asm each), at least one pair in the loop and one at exit
    assert ptx.count("barrier.cluster.arrive.release;") == ptx.count("barrier.cluster.wait.acquire;") >= 2
    assert re.search(r"mapa\.shared::cluster\.u32 %nfp, %nfa, " + str(ctas - 1) + ";", ptx)
    assert len(ck.asm["cubin"]) > 0


@pytest.mark.parametrize("kind,N,ctas,persistent", [("rms", 1024, 4, False), ("ln", 2048, 8, False),
                                                    ("rms", 1024, 4, True), ("ln", 8192, 16, True)])
def test_aot_global_scratch_exchange(kind, N, ctas, persistent):
    """cluster-reduce{exchange=global}: partials through each CTA's global scratch slice (no
    DSMEM, no extra shared memory); the slice size S, known only after Triton's allocation, is
    written into the asm by normfuse's make_llir wrapper; ptxas accepts the result."""
    ck = aot_compile_postnorm(kind, N=N, K=1024, M=262144, persistent=persistent,
                              passes=postnorm_passes(exchange="global"))
    md = ck.kernel.metadata
    assert md.num_ctas == ctas and md.normfuse_launch == {"num_ctas": ctas, "extra_shared": 0,
                                                          "scratch_size_token": "NFSCRATCHBYTES"}
    assert any("exchanged through global scratch (L2)" in r for r in ck.remarks), ck.remarks
    ptx = ck.asm["ptx"]
    assert "mapa" not in ptx and "ld.shared::cluster" not in ptx and "NFSCRATCHBYTES" not in ptx
    assert "ld.global.cg.f32" in ptx and "st.global.f32" in ptx and "%cluster_ctarank" in ptx
    sizes = set(re.findall(r"mul\.wide\.u32 %nfo, %nfr, (\d+);", ptx))
    assert sizes == {str(md.global_scratch_size)}, (sizes, md.global_scratch_size)
    assert ptx.count("barrier.cluster.arrive.release;") == ptx.count("barrier.cluster.wait.acquire;") >= 2
    assert len(ck.asm["cubin"]) > 0


def test_aot_exchange_reads_stay_before_the_arrive():
    """Triton rematerializes the read of the totals per layout; every copy must still read the
    peers' shared memory before this CTA says it is done (or a peer may exit under the read)."""
    for kind, N in (("rms", 1024), ("ln", 2048)):
        tg = aot_compile_postnorm(kind, N=N, K=1024).asm["ttgir"]
        lines = [l for l in tg.splitlines() if "normfuse.cluster-reduce" in l]
        kinds = ["read" if "ld.shared::cluster" in l else "put" if "st.shared" in l else
                 "sync" if "wait.acquire; mov" in l and "arrive" in l else
                 "arrive" if "arrive.release; mov" in l else "wait" for l in lines]
        assert kinds[0] == "put" and kinds[1] == "sync" and kinds[-1] == "wait", kinds
        arrive = kinds.index("arrive")
        assert kinds.count("arrive") == 1 and "read" in kinds[2:arrive]
        assert "read" not in kinds[arrive:], kinds


def test_aot_deferred_long_row():
    ck = aot_compile_postnorm("rms", N=8192, K=1024)
    assert ck.kernel.metadata.num_ctas == 16
    assert any("deferred" in r and "up to 2 tiles" in r for r in ck.remarks), ck.remarks
    assert ck.asm["normfuse"].count("tt.store") == 2  # unnormalized tiles, then the normalized ones


def test_aot_cluster_size_option_and_cache_separation():
    two = aot_compile_postnorm("rms", N=1024, K=1024, passes=postnorm_passes(cluster_size=2))
    four = aot_compile_postnorm("rms", N=1024, K=1024)
    assert two.kernel.metadata.num_ctas == 2 and four.kernel.metadata.num_ctas == 4
    assert two.kernel.hash != four.kernel.hash
    assert any("up to 2 tiles" in r for r in two.remarks), two.remarks


def test_cluster_reduce_refuses_num_ctas_option():
    import normfuse
    from normfuse.kernels.postnorm_gemm import linear_rmsnorm_naive
    from normfuse.passes import PassError
    sig = {"X": "*bf16", "W": "*bf16", "BIAS": "*bf16", "RES": "*bf16", "G": "*bf16", "Y": "*bf16",
           "M": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_rm": "i32",
           "stride_ym": "i32", "eps": "fp32"}
    consts = dict(N=1024, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, EVEN_K=True, HAS_BIAS=False, HAS_RES=False)
    sig.update({k: "constexpr" for k in consts})
    with pytest.raises(PassError, match="sets the cluster size itself"):
        normfuse.compile(linear_rmsnorm_naive, signature=sig, constexprs=consts,
                         passes=("cluster-reduce",), num_warps=8, num_ctas=2)


def test_config_table():
    assert select_postnorm_config(4096, 64, 512) == PostNormConfig(128, 64, 64, 4, 3)
    assert select_postnorm_config(262144, 1024, 512).persistent
    assert not select_postnorm_config(32768, 1024, 512).persistent
    assert select_postnorm_config(4096, 200, 512).block_n == 256
    assert select_postnorm_config(4096, 4096, 512).block_n == 256
    assert select_postnorm_config(16, 1024, 512).block_m == 64


# ---------------------------------------------------------------------------------------------
# Errors (checked before any CUDA call)
# ---------------------------------------------------------------------------------------------

def test_errors():
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    w = torch.randn(16, 8, dtype=torch.bfloat16)
    g = torch.ones(16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"norm_weight must have shape \(16,\) = \(out_features,\), got \(8,\)"):
        linear_rmsnorm(x, w, torch.ones(8, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"residual must have the output's shape \(4, 16\)"):
        linear_rmsnorm(x, w, g, residual=torch.randn(4, 8, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match=r"one dtype.*norm_bias torch.float32"):
        linear_layernorm(x, w, g, torch.zeros(16), 1e-5)
    with pytest.raises(ValueError, match="norm_weight and norm_bias are required"):
        linear_layernorm(x, w, g, None)
    with pytest.raises(ValueError, match="in_features must agree"):
        linear_rmsnorm(torch.randn(4, 9, dtype=torch.bfloat16), w, g)
    with pytest.raises(ValueError, match="CUDA tensors"):
        prepare_linear_rmsnorm(x, w, g)
    with pytest.raises(ValueError, match="all tensors must be on one device.*residual on meta"):
        linear_rmsnorm(x, w, g, residual=torch.randn(4, 16, dtype=torch.bfloat16, device="meta"))
    with pytest.raises(TypeError, match="weight must be one tensor"):
        linear_rmsnorm(x, [w, w], g)
    with pytest.raises(TypeError, match="config must be a PostNormConfig"):
        prepare_linear_rmsnorm(x, w, g, config=object())


# ---------------------------------------------------------------------------------------------
# GPU: numerics vs fp64 and vs the naive kernel, twice (a race shows up as a difference)
# ---------------------------------------------------------------------------------------------

def _inputs(kind, M, K, N, seed):
    """x [M, K], W [N, K] (scaled by 1/sqrt(K)), g [N] around 1 and, for LayerNorm, beta [N]:
    bf16 on the GPU, from torch's global generator seeded with `seed`."""
    torch.manual_seed(seed)
    dt = torch.bfloat16
    x = torch.randn(M, K, device="cuda", dtype=dt)
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(dt)
    g = (1 + 0.1 * torch.randn(N, device="cuda")).to(dt)
    b = (0.1 * torch.randn(N, device="cuda")).to(dt) if kind == "ln" else None
    return x, w, g, b


def _run(kind, x, w, g, b, eps, bias, res, passes, **kw):
    from normfuse.ops import prepare_linear_layernorm
    if kind == "rms":
        plan = prepare_linear_rmsnorm(x, w, g, eps, bias, res, passes=passes, **kw)
    else:
        plan = prepare_linear_layernorm(x, w, g, b, eps, bias, res, passes=passes, **kw)
    outs = []
    for _ in range(2):
        plan.out.fill_(float("nan"))
        outs.append(plan().clone())
        torch.cuda.synchronize()
    assert not torch.isnan(outs[0]).any(), "unwritten output elements"
    assert torch.equal(outs[0], outs[1]), "run-to-run difference"
    return outs[0], plan.compile(), plan


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("M,K,N,extras", [
    (1000, 256, 64, ""), (4096, 512, 256, "bias"), (333, 1000, 512, "res"), (2048, 1024, 1024, ""),
    (1000, 512, 2048, "bias,res"), (777, 512, 1000, ""), (1024, 512, 4096, ""), (512, 256, 8192, "res"),
])
def test_gpu_numerics_vs_naive(kind, M, K, N, extras):
    x, w, g, b = _inputs(kind, M, K, N, 0)
    dt = torch.bfloat16
    bias = (0.5 * torch.randn(N, device="cuda")).to(dt) if "bias" in extras else None
    res = torch.randn(M, N, device="cuda", dtype=dt) if "res" in extras else None
    ref = linear_norm_ref(x, w, g, b, 1e-6, bias, res)
    y0, _, _ = _run(kind, x, w, g, b, 1e-6, bias, res, ())
    y1, ck, _ = _run(kind, x, w, g, b, 1e-6, bias, res, postnorm_passes())
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    e1 = ((y1.double() - ref).norm() / ref.norm()).item()
    assert e1 <= 1.5 * e0 + 1e-6, (e1, e0, ck.remarks)
    assert ck.applied


@pytest.mark.gpu
@pytest.mark.parametrize("exchange", ["dsmem", "global"])
@pytest.mark.parametrize("cluster_size", [2, 4, 8, 16])
@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_gpu_cluster_sizes(kind, cluster_size, exchange):
    M, K, N = 1500, 512, 4096  # 16 tiles of 256: 8, 4, 2, 1 tiles per CTA
    x, w, g, b = _inputs(kind, M, K, N, 1)
    ref = linear_norm_ref(x, w, g, b, 1e-6)
    y0, _, _ = _run(kind, x, w, g, b, 1e-6, None, None, ())
    y1, ck, _ = _run(kind, x, w, g, b, 1e-6, None, None,
                     postnorm_passes(cluster_size=cluster_size, exchange=exchange))
    assert ck.kernel.metadata.num_ctas == cluster_size
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    e1 = ((y1.double() - ref).norm() / ref.norm()).item()
    assert e1 <= 1.5 * e0 + 1e-6, (e1, e0)


@pytest.mark.gpu
def test_gpu_layernorm_large_mean_matches_naive():
    """Sum and sum of squares exchanged in one step: at |mean| >> std the variance cancels; the
    fused kernel must be no worse than the naive kernel, which uses the same formula."""
    torch.manual_seed(2)
    dt = torch.bfloat16
    M, K, N = 1024, 512, 2048
    x = torch.randn(M, K, device="cuda", dtype=dt)
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(dt)
    g = torch.ones(N, device="cuda", dtype=dt)
    b = torch.zeros(N, device="cuda", dtype=dt)
    res = torch.full((M, N), 30.0, device="cuda", dtype=dt)  # row mean 30, std 1
    ref = linear_norm_ref(x, w, g, b, 1e-5, None, res)
    y0, _, _ = _run("ln", x, w, g, b, 1e-5, None, res, ())
    y1, _, _ = _run("ln", x, w, g, b, 1e-5, None, res, postnorm_passes())
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    e1 = ((y1.double() - ref).norm() / ref.norm()).item()
    assert e1 <= 1.5 * e0 + 1e-6, (e1, e0)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("N", [256, 2048])
def test_gpu_tma_loads(kind, N):
    """tma=True: the tiles come in by bulk tensor copies (rows past M and N read as zero)."""
    from normfuse.ops import prepare_linear_layernorm
    M, K = 1000, 512
    x, w, g, b = _inputs(kind, M, K, N, 3)
    ref = linear_norm_ref(x, w, g, b, 1e-6)
    y0, _, _ = _run(kind, x, w, g, b, 1e-6, None, None, ())
    plan = (prepare_linear_rmsnorm(x, w, g, 1e-6, tma=True) if kind == "rms"
            else prepare_linear_layernorm(x, w, g, b, 1e-6, tma=True))
    assert plan.constexprs["USE_TMA"]
    outs = []
    for _ in range(2):
        plan.out.fill_(float("nan"))
        outs.append(plan().clone())
    assert not torch.isnan(outs[0]).any() and torch.equal(outs[0], outs[1])
    assert "cp.async.bulk.tensor" in plan.compile().asm["ptx"]
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    e1 = ((outs[0].double() - ref).norm() / ref.norm()).item()
    assert e1 <= 1.5 * e0 + 1e-6, (e1, e0)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("M,K,N,cluster,exchange", [
    (70001, 512, 256, None, None), (50000, 520, 1000, None, None), (40000, 1024, 2048, 8, None),
    (30000, 512, 4096, 2, None), (20000, 256, 8192, None, None), (50000, 520, 1000, None, "global"),
    (20000, 256, 8192, None, "global")])
def test_gpu_persistent(kind, M, K, N, cluster, exchange):
    """Persistent launch (fewer programs than row blocks; clusters walk the row blocks with the
    double-buffered exchange): correct, complete and bitwise repeatable, single CTA, cluster
    and deferred forms, ragged M/N/K."""
    x, w, g, b = _inputs(kind, M, K, N, 4)
    dt = torch.bfloat16
    bias = (0.5 * torch.randn(N, device="cuda")).to(dt)
    ref = linear_norm_ref(x, w, g, b, 1e-6, bias)
    y0, _, _ = _run(kind, x, w, g, b, 1e-6, bias, None, ())
    y1, ck, plan = _run(kind, x, w, g, b, 1e-6, bias, None,
                        postnorm_passes(cluster_size=cluster, exchange=exchange), persistent=True)
    assert plan.constexprs["PERSISTENT"] and plan.grid[0] < -(-M // plan.config.block_m)
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    e1 = ((y1.double() - ref).norm() / ref.norm()).item()
    assert e1 <= 1.5 * e0 + 1e-6, (e1, e0, ck.remarks)


def test_jit_fills_constexpr_defaults():
    """normfuse.jit, like Triton's launch, lets constexprs with a default be left out."""
    from normfuse.ops.postnorm_linear import get_postnorm_launcher
    from normfuse.ops.prenorm_linear import _Spec
    t = _Spec(torch.bfloat16)
    launcher = get_postnorm_launcher("rms")
    args = (t, t, t, t, t, t, 1024, 512, 512, 512, 1024, 1024, 1e-6)
    _, consts, _, _, _ = launcher.specialize(args, dict(N=1024, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64))
    assert consts["USE_TMA"] is False and consts["EVEN_K"] is False and consts["HAS_RES"] is False
    with pytest.raises(ValueError, match="constexpr parameters without a value: N"):
        import normfuse
        sig, c, attrs, opts, _ = launcher.specialize(args, dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64))
        normfuse.compile(launcher.fn, signature=sig, constexprs=c, attrs=attrs)


def test_max_resident_programs(monkeypatch):
    """The persistent grid: one program per SM for one-CTA kernels; for clusters, the driver's
    count of co-resident clusters (asked with the kernel's function handle and shared memory,
    once per loaded kernel: normfuse.device.cluster_occupancy); none fits: a LaunchFailure."""
    from types import SimpleNamespace
    from triton.runtime import driver
    from normfuse import device
    from normfuse.ops.postnorm_linear import max_resident_programs
    monkeypatch.setattr(device, "_OCCUPANCY", {})

    calls = []

    class Kernel:
        name = "k"

        def __init__(self, ctas, function=1234):
            self.metadata = SimpleNamespace(num_ctas=ctas, shared=181248)
            self.function = function

        def _init_handles(self):
            calls.append("init")

    answers = {1234: 30, 99: 0}
    utils = SimpleNamespace(cuOccupancyMaxActiveClusters=lambda f, s, c: calls.append((f, s, c))
                            or answers[f])
    monkeypatch.setattr(driver, "_active", SimpleNamespace(utils=utils), raising=False)
    monkeypatch.setattr(type(driver), "active", property(lambda self: self._active), raising=False)
    assert max_resident_programs(SimpleNamespace(kernel=Kernel(1)), 132) == 132 and calls == []
    assert max_resident_programs(SimpleNamespace(kernel=Kernel(4)), 132) == 30
    assert max_resident_programs(SimpleNamespace(kernel=Kernel(4)), 132) == 30  # cached
    assert calls == ["init", (1234, 181248, 4), "init"]
    with pytest.raises(device.LaunchFailure, match="fits no cluster of 12 CTAs with 181248 B"):
        max_resident_programs(Kernel(12, function=99), 132)


def test_offset_check_shared_by_both_ops():
    """One 32-bit offset check for the pre- and post-norm ops; the post-norm op passes the
    residual's row stride, which can exceed N."""
    from normfuse.ops.prenorm_linear import _check_offsets
    cfg = select_postnorm_config(8192, 4096, 4096)
    _check_offsets("op", 8192, 4096, 4096, 4096, 4096, cfg)
    with pytest.raises(ValueError, match=r"op: problem too large for the kernels' 32-bit offsets"):
        _check_offsets("op", 2 ** 20, 4096, 4096, 4096, 4096, cfg)
    with pytest.raises(ValueError, match="32-bit offsets"):
        _check_offsets("op", 8192, 4096, 4096, 4096, 4096, cfg, stride_out=2 ** 18)


def test_bench_markdown_reports_both_exchanges():
    """bench_postnorm --exchange both: the table gets the global-scratch columns (time, global /
    DSMEM, hidden %, error, ok) next to the DSMEM ones; without it, it does not."""
    from normfuse.repro import bench_post
    env = {"gpu": "H200", "date": "2026-11-29", "torch": "2.11", "triton": "3.6.0", "cuda": "13.0"}
    cell = {"norm": "rms", "M": 262144, "K": 512, "N": 1024,
            "ms": {"cublas": 0.46, "fused": 0.65, "fused_global": 0.66, "naive": 0.84, "triton_gemm": 0.53},
            "numerics": {"naive": {"err": 2.35e-3},
                         "fused": {"err": 1.66e-3, "ok": True, "num_ctas": 4, "persistent": True, "grid": 30},
                         "fused_global": {"err": 1.66e-3, "ok": True}},
            "derived": {"t_norm_best": 0.258, "fused_vs_cublas": 1.41, "hidden_pct": 27.0,
                        "global_vs_dsmem": 0.66 / 0.65, "hidden_pct_global": 23.0}}
    both = bench_post.markdown({"env": env, "cells": [cell]})
    head, sep, row = both.splitlines()[4:7]
    assert head.endswith("| fused (global) | global/DSMEM | hidden % (global) | err (global) | ok (global) |")
    assert head.count("|") == sep.count("|") == row.count("|")
    assert "| 0.660 | 1.015 | 23 | 1.66e-03 | True |" in row and "4, 30 programs" in row
    one = {k: v for k, v in cell.items()}
    one["ms"] = {k: v for k, v in cell["ms"].items() if k != "fused_global"}
    plain = bench_post.markdown({"env": env, "cells": [one]})
    assert "global" not in plain


# ---------------------------------------------------------------------------------------------
# Every N: the cluster form is one the driver launches (ops/cluster_form.py)
# ---------------------------------------------------------------------------------------------

# Co-resident clusters measured on the H200 (147992 B of shared memory, K = 1024; docs/design.md)
H200_CLUSTERS = {2: 66, 3: 39, 4: 30, 5: 22, 6: 17, 7: 15, 8: 15, 9: 9,
                 **{c: 7 for c in range(10, 17)}}
# every N multiple of 64 up to 16384, and every odd multiple of 8 up to 16384
RULE_N = list(range(64, 16385, 64)) + list(range(8, 16385, 16))
# device stubs: which cluster sizes the driver fits (H200; a device or SM partition whose
# GPCs take at most 8 or 4 CTAs; one that fits no cluster)
DEVICES = {"h200": lambda c: H200_CLUSTERS[c] > 0, "portable": lambda c: c <= 8,
           "gpc4": lambda c: c <= 4, "none": lambda c: False}


def _auto(tiles, most):
    """cluster-reduce's auto size, restated: the fewest tiles per CTA on at most `most` CTAs."""
    per = -(-tiles // most)
    return -(-tiles // per)


@pytest.mark.parametrize("device", list(DEVICES))
def test_cluster_form_rule_every_n(device):
    """The rule for every N (the op's tiles: select_postnorm_config; the training backward's
    128-column tiles), with the driver's answer stubbed: the form is one the driver fits, the
    largest such size (fewest tiles per CTA, no idle CTA), asked lazily (on the H200 once)."""
    from normfuse.ops.cluster_form import choose_cluster_form
    from normfuse.passes.cluster_reduce import cluster_ctas
    fits = DEVICES[device]
    largest = {"h200": 16, "portable": 8, "gpc4": 4, "none": 1}[device]
    for N in RULE_N:
        for bn in (select_postnorm_config(257, N, 512).block_n, 128):
            tiles = -(-N // bn)
            asked = []
            form = choose_cluster_form(tiles, lambda c: asked.append(c) or fits(c))
            assert form.tiles == tiles
            if tiles == 1:
                assert (form.kind, form.ctas, asked) == ("one-cta", 1, []), (N, bn)
                continue
            if largest == 1:
                assert form.kind == "unclustered" and form.ctas == 1, (N, bn, form)
                continue
            want = _auto(tiles, largest)
            assert form.ctas == want and fits(form.ctas), (N, bn, device, form)
            assert 2 <= form.ctas <= 16 and (form.ctas - 1) * form.per_cta < tiles <= form.ctas * form.per_cta
            assert form.kind == ("cluster" if tiles <= largest else "deferred")
            # the first size asked is the pass's own default choice; every size asked before the
            # chosen one was refused; the chosen one is reproduced by max-cluster=C
            assert asked[0] == cluster_ctas("auto", 16, tiles, "") and asked[-1] == form.ctas
            assert not any(fits(c) for c in asked[:-1])
            assert cluster_ctas("auto", form.cluster_option() or 16, tiles, "") == form.ctas
            if device == "h200":
                assert len(asked) == 1 and form.cluster_option() is None


def test_cluster_form_rule_pins_the_issue_widths():
    """The widths of issue 20 (bf16, 256-column tiles) and the forms they get, on the H200 and
    where only portable clusters fit."""
    from normfuse.ops.cluster_form import choose_cluster_form

    def form(N, device, bn=256):
        f = choose_cluster_form(-(-N // bn), DEVICES[device])
        return f.kind, f.ctas, f.per_cta
    assert form(256, "h200") == ("one-cta", 1, 1)
    assert form(768, "h200") == ("cluster", 3, 1) and form(1536, "h200") == ("cluster", 6, 1)
    assert form(2176, "h200") == ("cluster", 9, 1) and form(2304, "h200") == ("cluster", 9, 1)
    assert form(2560, "h200") == ("cluster", 10, 1) and form(3072, "h200") == ("cluster", 12, 1)
    assert form(4096, "h200") == ("cluster", 16, 1)
    assert form(6144, "h200") == ("deferred", 12, 2) and form(16384, "h200") == ("deferred", 16, 4)
    assert form(3072, "portable") == ("deferred", 6, 2) and form(2176, "portable") == ("deferred", 5, 2)
    assert form(6144, "portable") == ("deferred", 8, 3) and form(3072, "none") == ("unclustered", 1, 12)
    # the training backward's 128-column tiles: N = 1152 -> 9 CTAs, 4160 -> 11 CTAs of 3 tiles
    assert form(1152, "h200", 128) == ("cluster", 9, 1) and form(4160, "h200", 128) == ("deferred", 11, 3)


@pytest.mark.parametrize("N,max_cluster,ctas,per", [(2176, None, 9, 1), (6144, None, 12, 2),
                                                     (3072, 6, 6, 2)])
def test_cluster_form_rule_matches_the_compiled_kernel(N, max_cluster, ctas, per):
    """The passes the op launches for a form compile to that form (sm_90, no GPU): the default
    pipeline's size, and a smaller one through max-cluster (the rule's next choice)."""
    ck = aot_compile_postnorm("rms", M=257, N=N, K=512,
                              passes=postnorm_passes(max_cluster=max_cluster) if max_cluster
                              else postnorm_passes())
    assert ck.kernel.metadata.num_ctas == ctas
    assert any(f"split over a {ctas}-CTA cluster (non-portable size)" in r if ctas > 8 else
               f"split over a {ctas}-CTA cluster;" in r for r in ck.remarks), ck.remarks
    assert any(("up to %d tiles" % per) in r if per > 1 else "one tile per CTA" in r
               for r in ck.remarks), ck.remarks


class _Launcher:
    """A stand-in `normfuse.jit` launcher: its kernel is clustered as cluster-reduce would
    cluster the row's tiles under its passes (auto, max-cluster from the options)."""

    def __init__(self, passes, tiles, log):
        from types import SimpleNamespace
        self.passes, self.tiles, self.log = passes, tiles, log
        self.fn = SimpleNamespace(arg_names=["X"], constexprs=[])  # the plan's one argument

    def warmup(self, *args, **kw):
        from types import SimpleNamespace
        from normfuse.passes.cluster_reduce import cluster_ctas
        self.log.append(self.passes)
        opt = re.search(r"max-cluster=(\d+)", " ".join(self.passes))
        ctas = 1 if not self.passes else cluster_ctas("auto", int(opt.group(1)) if opt else 16,
                                                      self.tiles, "")
        md = SimpleNamespace(num_ctas=ctas, shared=147968)
        return SimpleNamespace(kernel=SimpleNamespace(metadata=md, function=ctas, name="k",
                                                      _init_handles=lambda: None),
                               lowered=None, pipeline=",".join(self.passes))


def _fake_plan(N, tiles, log, persistent=False):
    from normfuse.ops.postnorm_linear import DEFAULT_POSTNORM_PASSES
    from normfuse.ops.prenorm_linear import PreparedLaunch
    x = torch.empty(257, 512, dtype=torch.bfloat16)
    consts = dict(N=N, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, PERSISTENT=persistent)
    return PreparedLaunch("linear_rmsnorm", "rms", _Launcher(DEFAULT_POSTNORM_PASSES, tiles, log),
                          (x,), consts, {}, (3,), select_postnorm_config(257, N, 512),
                          torch.empty(257, N, dtype=torch.bfloat16), (257, N), None)


@pytest.mark.parametrize("device,N,passes,ctas", [
    ("h200", 3072, ("cluster-reduce", "epilogue-norm"), 12),
    ("portable", 3072, ("cluster-reduce{max-cluster=6}", "epilogue-norm"), 6),
    ("gpc4", 2176, ("cluster-reduce{max-cluster=3}", "epilogue-norm"), 3),
    ("none", 6144, (), 1)])
def test_op_launches_the_form_the_driver_fits(monkeypatch, device, N, passes, ctas):
    """The post-norm op's choice (fit_cluster_form) with the driver's occupancy stubbed: the
    plan it returns runs the kernel compiled under the rule's passes; the driver is asked about
    the sizes in the rule's order; the persistent grid is the chosen kernel's occupancy."""
    from normfuse import device as dev
    from normfuse.ops import postnorm_linear as post
    log, asked = [], []
    monkeypatch.setattr(post, "cluster_occupancy", lambda k: asked.append(k.metadata.num_ctas)
                        or (7 if DEVICES[device](k.metadata.num_ctas) else 0))
    monkeypatch.setattr(post, "get_postnorm_launcher",
                        lambda kind, p=post.DEFAULT_POSTNORM_PASSES: _Launcher(tuple(p), tiles, log))
    tiles = -(-N // 256)
    plan = _fake_plan(N, tiles, log)
    got = post.fit_cluster_form(plan, lambda p: post.get_postnorm_launcher("rms", p),
                                post.DEFAULT_POSTNORM_PASSES)
    assert tuple(got.launcher.passes) == passes and got.compile().kernel.metadata.num_ctas == ctas
    assert got is plan if device == "h200" else got is not plan
    assert asked[0] == _auto(tiles, 16) and (asked[-1] == ctas or ctas == 1)
    # a caller's own pipeline is launched as given: no question, no other form
    asked.clear()
    mine = post.fit_cluster_form(plan, None, postnorm_passes(cluster_size=16))
    assert mine is plan and asked == []
    # persistent: the grid is the fitted kernel's co-resident clusters (2 here), not the blocks
    monkeypatch.setattr(post, "sm_count", lambda d: 132)
    resident = []
    monkeypatch.setattr(dev, "ensure_cluster_launch",
                        lambda k: resident.append(k.metadata.num_ctas) or 2)
    if ctas > 1:
        p = post._fit_and_grid(_fake_plan(N, tiles, log, persistent=True),
                               lambda p: post.get_postnorm_launcher("rms", p),
                               post.DEFAULT_POSTNORM_PASSES)
        assert p.grid == (2,) and p.compile().kernel.metadata.num_ctas == ctas  # min(3 blocks, 2)
        assert resident == [ctas]


class _TritonKernel:
    """A stand-in for Triton's CompiledKernel whose launch fails like the H200's did."""
    name = "linear_rmsnorm_naive"

    def __init__(self, ctas, error=None):
        from types import SimpleNamespace
        self.metadata = SimpleNamespace(num_ctas=ctas, shared=147968)
        self.function, self.error, self.launches = 4242 + ctas, error, []

    def _init_handles(self):
        pass

    def __getitem__(self, grid):
        def run(*args):
            if self.error:
                raise RuntimeError(self.error)
            self.launches.append(grid)
        return run


def _prepared_with(kernel, N=3072, persistent=False):
    from normfuse.compiler import CompiledKernel
    plan = _fake_plan(N, -(-N // 256), [], persistent)
    plan._compiled = CompiledKernel(kernel, [], "cluster-reduce,epilogue-norm")
    plan._full_args = ()
    return plan


def _stub_driver(monkeypatch, clusters):
    """Triton's driver answering cuOccupancyMaxActiveClusters with `clusters`; the list of
    questions asked, and normfuse.device's cache emptied."""
    from triton.runtime import driver
    from types import SimpleNamespace
    from normfuse import device
    monkeypatch.setattr(device, "_OCCUPANCY", {})
    asked = []
    utils = SimpleNamespace(cuOccupancyMaxActiveClusters=lambda f, s, c: asked.append((f, s, c))
                            or clusters)
    monkeypatch.setattr(driver, "_active", SimpleNamespace(utils=utils), raising=False)
    monkeypatch.setattr(type(driver), "active", property(lambda self: self._active), raising=False)
    return asked


def test_cluster_launch_asks_the_driver_once_per_kernel(monkeypatch):
    """Every cluster launch goes through the occupancy query first (which is what allows 9-15
    CTAs), once per loaded kernel: later launches make no driver call."""
    asked = _stub_driver(monkeypatch, 7)
    k = _TritonKernel(12)
    plan = _prepared_with(k)
    for _ in range(3):
        plan.launch()
    assert asked == [(k.function, 147968, 12)] and k.launches == [(3, 1, 1)] * 3
    one = _TritonKernel(1)
    _prepared_with(one).launch()
    assert len(asked) == 1 and one.launches == [(3, 1, 1)]  # one CTA: nothing to ask


def test_launch_failure_names_the_op_shapes_and_form(monkeypatch):
    """A launch that fails anyway raises normfuse.device.LaunchFailure naming the op, M/N/K,
    the dtype, the form and the driver's message, not a bare CUDA error; a size the device fits
    no cluster of is refused before any launch."""
    from normfuse import device as launch
    monkeypatch.setattr(launch, "_OCCUPANCY", {})
    cuda = "Triton Error [CUDA]: a kernel launch error has occurred due to cluster misconfiguration"
    k = _TritonKernel(12, error=cuda)
    launch._OCCUPANCY[(k.function, 147968, 12)] = 7
    with pytest.raises(launch.LaunchFailure) as e:
        _prepared_with(k).launch()
    msg = str(e.value)
    assert msg.startswith("linear_rmsnorm: launch failed for M=257, N=3072, K=512, torch.bfloat16, "
                          "form: 12-CTA clusters, 1 tile of 256 columns per CTA, not persistent, "
                          "grid 3"), msg
    assert "kernel linear_rmsnorm_naive (clusters of 12 CTAs, 147968 B of shared memory), grid 3" in msg
    assert msg.endswith(cuda) and not e.value.fits_none
    k = _TritonKernel(12)
    launch._OCCUPANCY[(k.function, 147968, 12)] = 0
    with pytest.raises(launch.LaunchFailure, match=r"6144.*12-CTA clusters, 2 tiles of 256 columns "
                       r"per CTA \(deferred\), persistent.*fits no cluster of 12 CTAs") as e:
        _prepared_with(k, N=6144, persistent=True).launch()
    assert e.value.fits_none and k.launches == []
    # any other RuntimeError passes through unchanged
    k = _TritonKernel(1, error="something else")
    with pytest.raises(RuntimeError, match="^something else$") as e:
        _prepared_with(k).launch()
    assert type(e.value) is RuntimeError


def test_launch_plan_asks_the_driver_once_and_names_failures(monkeypatch):
    """The inference ops' per-geometry launch plans (LaunchPlan: ops/inference.py's path): the
    occupancy query runs once, when the plan is made (it is what allows 9-15 CTAs); running the
    plan makes no driver call; a plan for a size the device fits no cluster of is refused when
    it is made; a CUDA launch error is re-raised naming the op, M/N/K, dtype and form."""
    from normfuse import device
    from normfuse.ops.prenorm_linear import LaunchPlan
    asked = _stub_driver(monkeypatch, 7)
    x = torch.empty(257, 512, dtype=torch.bfloat16)
    k = _TritonKernel(12)
    plan = LaunchPlan(_prepared_with(k), 1)
    assert asked == [(k.function, 147968, 12)]
    for _ in range(3):
        plan.run((x,))
    assert len(asked) == 1 and k.launches == [(3, 1, 1)] * 3
    one = _TritonKernel(1)
    LaunchPlan(_prepared_with(one), 1).run((x,))
    assert len(asked) == 1 and one.launches == [(3, 1, 1)]  # one CTA: nothing to ask
    # the device fits none: refused when the plan is made, before any launch
    asked = _stub_driver(monkeypatch, 0)
    k = _TritonKernel(10)
    with pytest.raises(device.LaunchFailure, match=r"^linear_rmsnorm: launch failed for M=257, "
                       r"N=3072, K=512, torch.bfloat16, form: 10-CTA clusters.*fits no cluster "
                       r"of 10 CTAs") as e:
        LaunchPlan(_prepared_with(k), 1)
    assert e.value.fits_none and k.launches == [] and len(asked) == 1
    # a CUDA error at run time, in the op's terms; other errors unchanged
    _stub_driver(monkeypatch, 7)
    cuda = "Triton Error [CUDA]: a kernel launch error has occurred due to cluster misconfiguration"
    k = _TritonKernel(12, error=cuda)
    plan = LaunchPlan(_prepared_with(k), 1)
    with pytest.raises(device.LaunchFailure) as e:
        plan.run((x,))
    msg = str(e.value)
    assert msg.startswith("linear_rmsnorm: launch failed for M=257, N=3072, K=512, torch.bfloat16, "
                          "form: 12-CTA clusters, 1 tile of 256 columns per CTA, not persistent, "
                          "grid 3 [kernel linear_rmsnorm_naive (clusters of 12 CTAs, 147968 B of "
                          "shared memory)]"), msg
    assert msg.endswith(cuda) and not e.value.fits_none
    plan = LaunchPlan(_prepared_with(_TritonKernel(1, error="something else")), 1)
    with pytest.raises(RuntimeError, match="^something else$") as e:
        plan.run((x,))
    assert type(e.value) is RuntimeError


# The GPU sweep: every multiple of 64 up to 8192, a few widths up to 16384, odd multiples of 8;
# ragged M (257 and 4096 + 7, alternating); K = 192 (small: the GEMM is not what is tested).
# N is a constexpr of the post-norm kernels, so each width is its own compile: the forward test
# compiles two kernels per width (fused, unfused), the backward test two (the training forward,
# the norm backward).
EVERY_N = (list(range(64, 8193, 64)) + [9216, 10240, 12288, 16384]
           + [200, 1000, 2184, 3080, 4104, 6152])
EVERY_N_LN = [320, 1088, 2176, 2560, 3072, 3840, 4160, 6144, 8192, 16384, 1000, 3080]


def _every_n_case(N):
    i = EVERY_N.index(N) if N in EVERY_N else N // 8
    return (257, 4103)[i % 2], 192, ("bias", "res") if i % 3 == 0 else ()


def _every_n_inputs(kind, N, M=None):
    """The sweep's case at width N on the GPU (`M`: its rows instead of the case's): (x, w, g,
    beta, bias, residual, the fp64 reference, the unfused kernel's output)."""
    m, K, extras = _every_n_case(N)
    M = M or m
    x, w, g, b = _inputs(kind, M, K, N, N)
    dt = torch.bfloat16
    bias = (0.5 * torch.randn(N, device="cuda")).to(dt) if "bias" in extras else None
    res = torch.randn(M, N, device="cuda", dtype=dt) if "res" in extras else None
    ref = linear_norm_ref(x, w, g, b, 1e-6, bias, res)
    y0, _, _ = _run(kind, x, w, g, b, 1e-6, bias, res, ())
    return x, w, g, b, bias, res, ref, y0


def _h200_form(N, block_n):
    """The form the rule gives on the H200 (every size fits)."""
    from normfuse.ops.cluster_form import choose_cluster_form
    return choose_cluster_form(-(-N // block_n), lambda c: True)


@pytest.mark.gpu
@pytest.mark.parametrize("kind,N", [("rms", n) for n in EVERY_N] + [("ln", n) for n in EVERY_N_LN])
def test_gpu_every_n_forward(kind, N):
    """The op at every width launches (the rule's form: clusters of 2-16 CTAs, deferred past 16
    tiles), writes every element, repeats bitwise, and is within 1.5x the unfused kernel's
    error vs fp64. The public op runs that kernel, except LayerNorm in the deferred form, which
    would normalize its rounded tile: there it composes cuBLAS and the norm (and says so)."""
    import warnings
    x, w, g, b, bias, res, ref, y0 = _every_n_inputs(kind, N)
    y1, ck, plan = _run(kind, x, w, g, b, 1e-6, bias, res, postnorm_passes())
    form = _h200_form(N, plan.config.block_n)
    assert ck.kernel.metadata.num_ctas == form.ctas, (form, ck.remarks)
    # the public op (the inference path's per-geometry launch plan): the same kernel, bitwise
    composes = kind == "ln" and form.kind in ("deferred", "unclustered")
    with torch.no_grad(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", RuntimeWarning)
        y2 = (linear_rmsnorm(x, w, g, 1e-6, bias, res) if kind == "rms"
              else linear_layernorm(x, w, g, b, 1e-6, bias, res))
    said = any("would normalize the rounded tile" in str(m.message) for m in seen)
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    if composes:
        assert said, (N, form)
        e2 = ((y2.double() - ref).norm() / ref.norm()).item()
        assert e2 <= 1.5 * e0 + 1e-6, (N, form, e2, e0)
    else:
        assert not said and torch.equal(y2, y1), (N, form)
    e1 = ((y1.double() - ref).norm() / ref.norm()).item()
    assert e1 <= 1.5 * e0 + 1e-6, (N, form, e1, e0)


EVERY_N_LOWERED = sorted(set(EVERY_N[1::2] + [64, 120, 200, 1000, 2184, 3080, 4104, 6152]))


@pytest.mark.gpu
@pytest.mark.postnorm_plan
@pytest.mark.parametrize("kind,N", [("rms", n) for n in EVERY_N_LOWERED]
                         + [("ln", n) for n in EVERY_N_LN])
def test_gpu_every_n_default_plan(kind, N, monkeypatch):
    """The ops' default plan (the lowered form, coop) at every width of the sweep (every second
    multiple of 64, the odd ones, up to 16384), ragged M, bias / residual as the sweep alternates
    them: every element written, within 1.5x the unfused kernel's error vs fp64 (where the
    lowered form cannot launch the op runs the cluster pipeline, as it says)."""
    import warnings
    from normfuse.ops import inference
    from normfuse.ops import postnorm_linear as post
    monkeypatch.delenv("NORMFUSE_POSTNORM_PLAN", raising=False)
    monkeypatch.setitem(post.LOWERED_POSTNORM, kind, "coop")
    post.clear_postnorm_plans()
    assert inference.postnorm_plan(_every_n_case(N)[0], kind) == "lowered"
    x, w, g, b, bias, res, ref, y0 = _every_n_inputs(kind, N)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = (linear_rmsnorm(x, w, g, 1e-6, bias, res) if kind == "rms"
             else linear_layernorm(x, w, g, b, 1e-6, bias, res))
    assert not torch.isnan(y.float()).any(), N
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    e = ((y.double() - ref).norm() / ref.norm()).item()
    assert e <= 1.5 * e0 + 1e-6, (N, e, e0)
    post.clear_postnorm_plans()


EVERY_N_AUTO = sorted(set(EVERY_N_LOWERED[::3] + [320, 1000, 2048, 2056, 3080, 4096, 6152,
                                                  16384]))


@pytest.mark.gpu
@pytest.mark.postnorm_plan
@pytest.mark.parametrize("kind,N", [("rms", n) for n in EVERY_N_AUTO]
                         + [("ln", n) for n in EVERY_N_LN[::2]])
def test_gpu_every_n_auto_rule_from_8192_rows(kind, N, monkeypatch):
    """The default switch ('auto') where its rule takes ping-pong: 8200 rows, K = 192 (128 x 128
    tiles up to N = 2048, 64 x 256 beyond), bias and residual as the sweep alternates them:
    every element written, within 1.5x the unfused kernel's error vs fp64."""
    import warnings
    from normfuse.ops import postnorm_linear as post
    monkeypatch.delenv("NORMFUSE_POSTNORM_PLAN", raising=False)
    monkeypatch.setitem(post.LOWERED_POSTNORM, kind, "auto")
    post.clear_postnorm_plans()
    M, K = 8200, 192
    x, w, g, b, bias, res, ref, y0 = _every_n_inputs(kind, N, M)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = (linear_rmsnorm(x, w, g, 1e-6, bias, res) if kind == "rms"
             else linear_layernorm(x, w, g, b, 1e-6, bias, res))
    assert post.lowered_postnorm_choice(M, N, K)[0] == ("pingpong" if N > 256 else "coop")
    assert not torch.isnan(y.float()).any(), N
    e0 = ((y0.double() - ref).norm() / ref.norm()).item()
    e = ((y.double() - ref).norm() / ref.norm()).item()
    assert e <= 1.5 * e0 + 1e-6, (N, e, e0)
    post.clear_postnorm_plans()


@pytest.mark.gpu
@pytest.mark.parametrize("kind,N", [("rms", n) for n in EVERY_N] + [("ln", n) for n in EVERY_N_LN])
def test_gpu_every_n_backward(kind, N):
    """Under autograd (the training forward kernel, then the norm backward without a GEMM:
    one CTA per row up to 4096, clusters of 128-column tiles past it): every gradient within
    1.5x eager PyTorch's error in bf16 vs fp64, the output within 1.5x too."""
    import torch.nn.functional as F
    from normfuse.reference import rel_err
    M, K, extras = _every_n_case(N)
    dt = torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(N)

    def dev(*shape, scale=1.0, shift=0.0):
        return (torch.randn(*shape, generator=gen, device="cuda") * scale + shift).to(dt)
    x, w = dev(M, K), dev(N, K, scale=K ** -0.5)
    g, beta = dev(N, scale=0.2, shift=1.0), dev(N, scale=0.2) if kind == "ln" else None
    bias = dev(N) if "bias" in extras else None
    res = dev(M, N, shift=3.0 if kind == "ln" else 0.0) if "res" in extras else None
    dz = dev(M, N)

    def ours(x, w, g, b, bi, r):
        return (linear_rmsnorm(x, w, g, 1e-6, bi, r) if kind == "rms"
                else linear_layernorm(x, w, g, b, 1e-5, bi, r))

    def eager(x, w, g, b, bi, r):
        h = F.linear(x, w, bi)
        h = h + r if r is not None else h
        return (F.rms_norm(h, (N,), g, 1e-6) if kind == "rms"
                else F.layer_norm(h, (N,), g, b, 1e-5))

    def grads(fn, ts):
        ts = [t.detach().clone().requires_grad_(True) if t is not None else None for t in ts]
        out = fn(*ts)
        out.backward(dz.to(out.dtype))
        return out.detach(), [t.grad if t is not None else None for t in ts]
    ts = (x, w, g, beta, bias, res)
    z, got = grads(ours, ts)
    zr, ref = grads(eager, [t.double() if t is not None else None for t in ts])
    ze, eag = grads(eager, ts)
    for name, a, r, e in zip(("x", "weight", "norm_weight", "norm_bias", "bias", "residual"),
                             got, ref, eag):
        if r is None:
            continue
        assert a is not None and torch.isfinite(a).all(), (name, N)
        assert rel_err(a, r) <= 1.5 * rel_err(e, r) + 1e-4, (name, N, rel_err(a, r), rel_err(e, r))
    assert rel_err(z, zr) <= 1.5 * rel_err(ze, zr) + 1e-4, ("forward", N, rel_err(z, zr), rel_err(ze, zr))


@pytest.mark.postnorm_plan
def test_postnorm_plan_composes_below_the_persistent_form(monkeypatch):
    """With the lowered form off: measured (H200, 2026-12-01), the cluster pipeline's kernels win
    only in their persistent form (M >= 4 x 132 x 128 rows); below it the op composes cuBLAS and
    torch's norm, same function. The override is honoured both ways."""
    from normfuse.ops import inference
    from normfuse.ops import postnorm_linear as post
    monkeypatch.delenv("NORMFUSE_POSTNORM_PLAN", raising=False)
    monkeypatch.setitem(post.LOWERED_POSTNORM, "rms", None)  # the lowered form switched off
    monkeypatch.setitem(post.LOWERED_POSTNORM, "ln", None)
    assert inference.POSTNORM_FUSED_MIN_ROWS == 4 * 132 * 128
    assert inference.postnorm_plan(8192) == "composed"
    assert inference.postnorm_plan(67583) == "composed"
    assert inference.postnorm_plan(67584) == inference.postnorm_plan(262144) == "fused"
    monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "fused")
    assert inference.postnorm_plan(8192) == "fused"
    monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "composed")
    assert inference.postnorm_plan(262144) == "composed"


@pytest.mark.postnorm_plan
def test_postnorm_plan_lowered_switch(monkeypatch):
    """A lowered form named by the switch (LOWERED_POSTNORM[kind]) makes the plan "lowered" at
    every M, for that kind only (kind None: either); NORMFUSE_POSTNORM_PLAN=composed still
    composes, =fused does not undo the switch. clear_postnorm_plans drops the launch-ready calls
    made from the plans."""
    from normfuse.ops import inference
    from normfuse.ops import postnorm_linear as post
    monkeypatch.delenv("NORMFUSE_POSTNORM_PLAN", raising=False)
    monkeypatch.setitem(post.LOWERED_POSTNORM, "rms", None)
    monkeypatch.setitem(post.LOWERED_POSTNORM, "ln", None)
    assert inference.postnorm_plan(8192, "rms") == "composed"
    assert inference.postnorm_plan(262144, "ln") == "fused"
    monkeypatch.setitem(post.LOWERED_POSTNORM, "rms", "pingpong")
    for M in (1, 8192, 67584, 262144):
        assert inference.postnorm_plan(M, "rms") == inference.postnorm_plan(M) == "lowered"
    assert inference.postnorm_plan(8192, "ln") == "composed"
    assert inference.postnorm_plan(262144, "ln") == "fused"
    monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "fused")
    assert inference.postnorm_plan(8192, "rms") == "lowered"
    assert inference.postnorm_plan(8192, "ln") == "fused"
    monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "composed")
    assert inference.postnorm_plan(262144, "rms") == "composed"
    monkeypatch.setitem(inference._POST_CALLS, ("a key",), ((), "a call"))
    post.clear_postnorm_plans()
    assert ("a key",) not in inference._POST_CALLS


@pytest.mark.postnorm_plan
@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_postnorm_composed_plan_matches_fp64(monkeypatch, is_ln):
    """The composed plan through the op's fused route (forced on the CPU): bias, residual and
    the norm's offset applied as the fused kernels apply them, within bf16 rounding of fp64."""
    import torch
    from normfuse.ops import inference
    monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "composed")
    monkeypatch.setattr(inference, "route", lambda op, x: True)
    torch.manual_seed(0)
    M, K, N = 37, 64, 48
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randn(N, K, dtype=torch.bfloat16) / 8
    g = torch.randn(N, dtype=torch.bfloat16)
    beta = torch.randn(N, dtype=torch.bfloat16) if is_ln else None
    b = torch.randn(N, dtype=torch.bfloat16)
    r = torch.randn(M, N, dtype=torch.bfloat16)
    z = torch.ops.normfuse.postnorm_linear(x, w, g, beta, b, r, 1e-5, 1.0, is_ln)
    h = x.double() @ w.double().t() + b.double() + r.double()
    if is_ln:
        ref = (h - h.mean(-1, keepdim=True)) * torch.rsqrt(h.var(-1, unbiased=False, keepdim=True) + 1e-5)
        ref = ref * (1.0 + g.double()) + beta.double()
    else:
        ref = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5) * (1.0 + g.double())
    err = ((z.double() - ref).norm() / ref.norm()).item()
    assert z.dtype == torch.bfloat16 and z.shape == (M, N) and err < 2e-2, err


@pytest.mark.postnorm_plan
def test_postnorm_plan_defaults_to_the_lowered_form(monkeypatch):
    """By default (no environment) both kinds run the lowered form at every M, its schedule and
    tiles chosen per shape ('auto'; measured fastest at every post-norm cell, H200 2026-12-01
    and 2026-12-02); NORMFUSE_POSTNORM_LOWERED picks the schedule or turns it off at import; a
    bad value is refused naming the choices."""
    from normfuse.ops import inference
    from normfuse.ops import postnorm_linear as post
    monkeypatch.delenv("NORMFUSE_POSTNORM_PLAN", raising=False)
    monkeypatch.delenv("NORMFUSE_POSTNORM_LOWERED", raising=False)
    assert post._switch_from_env() == {"rms": "auto", "ln": "auto"}
    monkeypatch.setitem(post.LOWERED_POSTNORM, "rms", "auto")
    monkeypatch.setitem(post.LOWERED_POSTNORM, "ln", "coop")
    for M in (1, 8192, 262144):
        assert inference.postnorm_plan(M, "rms") == inference.postnorm_plan(M, "ln") == "lowered"
    monkeypatch.setenv("NORMFUSE_POSTNORM_LOWERED", "off")
    assert post._switch_from_env() == {"rms": None, "ln": None}
    monkeypatch.setenv("NORMFUSE_POSTNORM_LOWERED", "PingPong")
    assert post._switch_from_env() == {"rms": "pingpong", "ln": "pingpong"}
    monkeypatch.setenv("NORMFUSE_POSTNORM_LOWERED", "fast")
    with pytest.raises(ValueError, match="auto.*coop.*pingpong.*'off'"):
        post._switch_from_env()


@pytest.mark.parametrize("N,passes,rounded", [
    (256, None, False),                      # one tile: normalized in registers (epilogue-norm)
    (2048, None, False),                     # a cluster of 8 tiles, then epilogue-norm
    (8192, None, True),                      # deferred: 2 tiles per CTA, re-read after the sums
    (2048, (), True),                        # the naive kernel: every tile re-read
    (2048, "lowered", False)])               # hopper-ws: the tile stays in fp32 registers
def test_normalizes_rounded_tile(N, passes, rounded):
    """The forms that normalize a tile stored in bf16 and read back (whose LayerNorm the ops
    compose instead, where a near-constant row would come out as (rounded - exact) / sqrt(eps)):
    told from the compiled kernel (sm_90, no GPU)."""
    from types import SimpleNamespace
    from normfuse.ops.postnorm_linear import (DEFAULT_POSTNORM_PASSES, lowered_postnorm_passes,
                                              normalizes_rounded_tile)
    p = {None: DEFAULT_POSTNORM_PASSES, "lowered": lowered_postnorm_passes("coop")}.get(
        passes, passes)
    ck = aot_compile_postnorm("ln", M=8192, N=N, K=1024, passes=p)
    prepared = SimpleNamespace(grid=(8,), compile=lambda: ck)
    assert normalizes_rounded_tile(prepared) is rounded, ck.remarks
    assert not normalizes_rounded_tile(SimpleNamespace(grid=(0,), compile=None))  # nothing to run
