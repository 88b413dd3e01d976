"""Tests of the pre-norm linear ops, the modules, the references and the config table.

CPU (run everywhere): input validation messages, the fp64 references, weight folding, the
config table, the compile-cache key, and ahead-of-time compilation of the ops' kernels for
cuda:90. GPU (`@pytest.mark.gpu`, skipped without a Hopper GPU by conftest.py): fused vs naive
vs fp64 numerics on ragged shapes with NaN-poisoned outputs, determinism, large-mean LayerNorm,
layouts, empty inputs, the modules.
"""
from __future__ import annotations

import importlib.util
import re

import pytest
import torch

from normfuse import reference as ref
from normfuse.kernels.configs import CANDIDATES, GemmConfig, TABLE, select_config
from normfuse.nn import LayerNormLinear, RMSNormLinear
from normfuse.ops import fold_norm_weight, layernorm_linear, rmsnorm_linear
from normfuse.ops import prenorm_linear as ops

PASSES = ("lazy-prenorm",)
HAVE_PASS = importlib.util.find_spec("normfuse.passes.lazy_prenorm") is not None
# Tests whose subject is the lazy-prenorm pass itself (not the op's correctness): skipped, with
# this reason, while the pass module does not exist.
needs_lazy_prenorm = pytest.mark.skipif(not HAVE_PASS, reason="depends on the lazy-prenorm pass")


def _t(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape, dtype=dtype, device=device)


# ---------------------------------------------------------------------------------------------
# Validation (CPU)
# ---------------------------------------------------------------------------------------------

def test_launch_path_rejects_cpu_tensors_with_device_in_message():
    x, g, w = _t(8, 64), _t(64), _t(32, 64)
    with pytest.raises(ValueError, match=r"CUDA tensors on one device.*cpu"):
        ops.prepare_rmsnorm_linear(x, g, w)
    with pytest.raises(ValueError, match=r"CUDA tensors on one device"):
        ops.prepare_layernorm_linear(x, g, _t(64), w)


@pytest.mark.parametrize("bad", ["weight", "norm_weight", "x"])
def test_dtype_mismatch(bad):
    t = {"x": _t(8, 64), "norm_weight": _t(64), "weight": _t(32, 64)}
    t[bad] = t[bad].to(torch.float16)
    with pytest.raises(TypeError, match=r"one dtype.*float16"):
        rmsnorm_linear(t["x"], t["norm_weight"], t["weight"])


def test_float32_only_on_the_reference_path():
    x, g, w = (_t(*s, dtype=torch.float32) for s in ((8, 64), (64,), (32, 64)))
    with pytest.raises(TypeError, match=r"bfloat16 or float16 \(the fused kernels\), got torch.float32"):
        ops.prepare_rmsnorm_linear(x, g, w)
    y = rmsnorm_linear(x, g, w)  # the functional op computes it (reference path)
    assert y.dtype == torch.float32
    assert ref.rel_err(y, ref.rmsnorm_linear_ref(x, g, w, 1e-6)) < 1e-6
    with pytest.raises(TypeError, match=r"floating-point dtype, got torch.int64"):
        rmsnorm_linear(x.long(), g, w)


def test_shape_mismatch_weight():
    with pytest.raises(ValueError, match=r"shape mismatch.*x.shape\[-1\]=64, weight.shape\[1\]=48"
                                         r".*x \(8, 64\), weight \(32, 48\)"):
        rmsnorm_linear(_t(8, 64), _t(64), _t(32, 48))


def test_shape_mismatch_norm_weight_and_bias():
    with pytest.raises(ValueError, match=r"shape mismatch.*norm_weight.shape\[0\]=63"):
        rmsnorm_linear(_t(8, 64), _t(63), _t(32, 64))
    with pytest.raises(ValueError, match=r"shape mismatch.*norm_bias.shape\[0\]=65"):
        layernorm_linear(_t(8, 64), _t(64), _t(65), _t(32, 64))
    with pytest.raises(ValueError, match=r"bias must have shape \(32,\)"):
        rmsnorm_linear(_t(8, 64), _t(64), _t(32, 64), bias=_t(31))


@pytest.mark.parametrize("wshape", [(64,), (2, 32, 64)])
def test_weight_must_be_2d(wshape):
    with pytest.raises(ValueError, match=r"weight must be 2-D .*got weight of shape"):
        rmsnorm_linear(_t(8, 64), _t(64), _t(*wshape))


def test_norm_weight_must_be_1d_and_present():
    with pytest.raises(ValueError, match=r"norm_weight must be 1-D"):
        rmsnorm_linear(_t(8, 64), _t(1, 64), _t(32, 64))
    with pytest.raises(ValueError, match=r"norm_weight is required unless folded=True"):
        rmsnorm_linear(_t(8, 64), None, _t(32, 64))


def test_weight_list_errors_name_the_entry():
    x, g = _t(8, 64), _t(64)
    with pytest.raises(ValueError, match=r"bias must be None or a list of the same length as "
                                         r"weight \(2 tensors\), got a list of 3"):
        rmsnorm_linear(x, g, [_t(16, 64), _t(8, 64)], bias=[None, None, None])
    with pytest.raises(TypeError, match=r"so bias must be None or a list"):
        rmsnorm_linear(x, g, [_t(16, 64), _t(8, 64)], bias=_t(24))
    with pytest.raises(TypeError, match=r"bias is a list but weight is a single tensor"):
        rmsnorm_linear(x, g, _t(16, 64), bias=[_t(16)])
    with pytest.raises(ValueError, match=r"weight\[1\].shape\[1\]=48"):
        rmsnorm_linear(x, g, [_t(16, 64), _t(8, 48)])
    with pytest.raises(ValueError, match=r"weight\[1\] must be 2-D"):
        layernorm_linear(x, g, g, [_t(16, 64), _t(64)])
    with pytest.raises(ValueError, match=r"bias\[1\] must have shape \(8,\)"):
        rmsnorm_linear(x, g, [_t(16, 64), _t(8, 64)], bias=[None, _t(16)])
    with pytest.raises(TypeError, match=r"weight\[0\] must be a torch.Tensor, got list"):
        rmsnorm_linear(x, g, [[1.0], _t(8, 64)])
    with pytest.raises(ValueError, match=r"weight is an empty list"):
        rmsnorm_linear(x, g, [])
    with pytest.raises(TypeError, match=r"weight\[1\] torch.float16"):
        rmsnorm_linear(x, g, [_t(16, 64), _t(8, 64, dtype=torch.float16)])


def test_mixed_devices_named():
    x, g, w = _t(8, 64), _t(64), _t(32, 64)
    with pytest.raises(ValueError, match=r"all tensors must be on one device, got x on cpu, "
                                         r"norm_weight on meta, weight on cpu"):
        rmsnorm_linear(x, g.to("meta"), w)
    with pytest.raises(ValueError, match=r"weight\[1\] on meta"):
        layernorm_linear(x, g, g, [w, w.to("meta")])


def test_offset_needs_a_norm_weight_and_a_number():
    x, w = _t(8, 64), _t(32, 64)
    with pytest.raises(ValueError, match=r"offset=1.0 needs norm_weight"):
        rmsnorm_linear(x, None, w, folded=True, offset=1.0)
    with pytest.raises(ValueError, match=r"offset=1.0 needs norm_weight"):
        layernorm_linear(x, None, None, w, offset=1.0)
    with pytest.raises(TypeError, match=r"offset must be a float, got Tensor"):
        rmsnorm_linear(x, _t(64), w, offset=torch.tensor(1.0))


def test_grad_requiring_inputs_on_the_launch_path_are_rejected():
    x = _t(8, 64).requires_grad_()
    with pytest.raises(NotImplementedError, match=r"inference-only.*torch.no_grad"):
        ops.prepare_rmsnorm_linear(x, _t(64), _t(32, 64))
    with torch.no_grad():  # past the grad check, stopped at the device check
        with pytest.raises(ValueError, match="CUDA"):
            ops.prepare_rmsnorm_linear(x, _t(64), _t(32, 64))


def test_module_fold_cache_follows_parameter_versions():
    m = RMSNormLinear(64, 32, dtype=torch.float32, fold=True)
    with torch.no_grad():
        m.norm_weight.uniform_(0.5, 1.5)
    w1 = m.folded_weight()
    assert m.folded_weight() is w1  # cached
    torch.testing.assert_close(w1, m.weight.detach() * m.norm_weight.detach()[None, :])
    with torch.no_grad():
        m.norm_weight.mul_(2.0)
    w2 = m.folded_weight()
    assert w2 is not w1
    torch.testing.assert_close(w2, 2.0 * w1)
    with torch.no_grad():
        m.weight.zero_()
    assert m.folded_weight().abs().max() == 0


# ---------------------------------------------------------------------------------------------
# References, folding, config table, cache key (CPU)
# ---------------------------------------------------------------------------------------------

def test_references_match_torch_in_float64():
    x, g, b, w, bias = (torch.randn(*s, dtype=torch.float64) for s in
                        ((5, 3, 40), (40,), (40,), (24, 40), (24,)))
    exp = torch.nn.functional.linear(torch.nn.functional.rms_norm(x, (40,), g, 1e-6), w, bias)
    torch.testing.assert_close(ref.rmsnorm_linear_ref(x, g, w, 1e-6, bias), exp)
    exp = torch.nn.functional.linear(torch.nn.functional.layer_norm(x, (40,), g, b, 1e-5), w, bias)
    torch.testing.assert_close(ref.layernorm_linear_ref(x, g, b, w, 1e-5, bias), exp)
    assert ref.rel_err(exp, exp) == 0.0
    assert abs(ref.rel_err(exp * 1.01, exp) - 0.01) < 1e-12


def test_fold_norm_weight_identity():
    x, g, w = torch.randn(16, 64), torch.rand(64) + 0.5, torch.randn(32, 64)
    wf = fold_norm_weight(w, g)
    assert wf.dtype == w.dtype and wf.shape == w.shape
    y = ref.rmsnorm_linear_ref(x, g, w, 1e-6)
    y_folded = ref.rmsnorm_linear_ref(x, None, wf, 1e-6)
    assert ref.rel_err(y_folded, y) < 1e-6
    assert fold_norm_weight(w.bfloat16(), g.bfloat16()).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="fold_norm_weight"):
        fold_norm_weight(w, torch.ones(63))


def test_config_table():
    assert select_config(262144, 2048, 2048) == GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    assert select_config(262144, 512, 512) == GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    assert select_config(262144, 256, 512) == GemmConfig(128, 128, 64, 8, 8, 3)
    assert select_config(16, 4096, 4096).block_m == 64
    for M in (1, 63, 64, 65, 1000, 1024, 1025, 10**6):
        for N in (1, 255, 256, 2047, 2048, 10**5):
            cfg = select_config(M, N, 4096)
            assert cfg in [row[2] for row in TABLE]
    # Every candidate fits the H200's 227 KB of shared memory (A + B tiles per stage).
    for cfg in CANDIDATES + tuple(row[2] for row in TABLE):
        assert (cfg.block_m + cfg.block_n) * cfg.block_k * 2 * cfg.num_stages <= 227 * 1024


def test_compile_key_ignores_batch_size():
    """The launcher's cache key depends on dtypes, 16-divisibility and constexprs, never on M."""
    launcher = ops.get_launcher("rms", ())
    spec = ops._Spec(torch.bfloat16)
    key = lambda M: launcher.specialize(  # noqa: E731
        (spec, spec, spec, spec, spec, M, 1024, 1024, 1024, 1024, 1024, 1e-6),
        dict(HAS_G=True, HAS_BIAS=False, EVEN_K=True, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
             num_warps=8, num_stages=3))[-1]
    assert key(4096) == key(262144) == key(16)
    assert key(4096) != key(4097)  # 16-divisibility of M is specialised, as in Triton's JIT


# ---------------------------------------------------------------------------------------------
# Ahead-of-time compilation for cuda:90 (CPU)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,K", [("rms", 4096), ("ln", 4096), ("gemm", 520)])
def test_aot_compile_for_sm90_without_passes(kind, K):
    ck = ops.aot_compile(kind, M=8192, N=1024, K=K, passes=(), target="cuda:90")
    assert "wgmma" in ck.asm["ptx"]
    assert ck.metadata.num_warps == select_config(8192, 1024, K).num_warps
    assert "normfuse" not in ck.asm and ck.remarks == []


@needs_lazy_prenorm
@pytest.mark.parametrize("kind,flags", [("rms", {"has_g": True}), ("rms", {"has_g": False})])
def test_aot_compile_through_lazy_prenorm_applies(kind, flags):
    """Depends on the lazy-prenorm pass: the op's own kernel, as launched, is rewritten."""
    ck = ops.aot_compile(kind, M=8192, N=1024, K=4096, passes=PASSES, persistent=False, **flags)
    assert any("[lazy-prenorm] applied" in r for r in ck.remarks), ck.remarks
    assert ck.asm["ttir"].count("scf.for ") == 2
    assert ck.asm["normfuse"].count("scf.for ") == 1
    assert "wgmma" in ck.asm["ptx"]


# ---------------------------------------------------------------------------------------------
# GPU: numerics against fp64 and against the naive kernel
# ---------------------------------------------------------------------------------------------

SHAPES = [(1, 64, 64), (127, 300, 200), (1000, 1000, 520), (4096, 512, 1024), (333, 2048, 4096)]
DTYPES = [torch.bfloat16, torch.float16]


def _inputs(M, K, N, dtype, mean=0.0, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s: torch.randn(*s, device="cuda", generator=gen)  # noqa: E731
    x = (r(M, K) + mean).to(dtype)
    g = (1.0 + 0.1 * r(K)).to(dtype)
    b = (0.1 * r(K)).to(dtype)
    w = (r(N, K) / K ** 0.5).to(dtype)
    return x, g, b, w


def _run(plan):
    """Poison the output with NaN, launch, return it ([..., N])."""
    plan.out.fill_(float("nan"))
    y = plan()
    torch.cuda.synchronize()
    assert not torch.isnan(y).any(), "some outputs were not written"
    return y


def _prepare(variant, x, g, b, w, passes, **kw):
    # rms / ln: the op's default (g, and beta, folded out of the loop on the fly);
    # *_inloop: fold=False, g (and beta) applied to the A tile in the k-loop;
    # rms_folded: the caller passes W diag(g) itself.
    if variant in ("rms", "rms_inloop"):
        return ops.prepare_rmsnorm_linear(x, g, w, 1e-6, passes=passes, fold=variant == "rms", **kw)
    if variant == "rms_folded":
        return ops.prepare_rmsnorm_linear(x, None, fold_norm_weight(w, g), 1e-6, folded=True,
                                          passes=passes, **kw)
    return ops.prepare_layernorm_linear(x, g, b, w, 1e-5, passes=passes, fold=variant == "ln", **kw)


def _oracle(variant, x, g, b, w):
    if variant.startswith("ln"):
        return ref.layernorm_linear_ref(x, g, b, w, 1e-5)
    return ref.rmsnorm_linear_ref(x, g, w, 1e-6)


def _check_fused_vs_naive(variant, x, g, b, w):
    oracle = _oracle(variant, x, g, b, w)
    naive_err = ref.rel_err(_run(_prepare(variant, x, g, b, w, ())), oracle)
    fused_err = ref.rel_err(_run(_prepare(variant, x, g, b, w, PASSES)), oracle)
    assert fused_err <= 1.5 * naive_err + 1e-6, (fused_err, naive_err)
    assert fused_err < 2e-2, fused_err
    return fused_err, naive_err


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("M,K,N", SHAPES)
@pytest.mark.parametrize("variant", ["rms", "rms_inloop", "rms_folded", "ln", "ln_inloop"])
def test_numerics_fused_vs_naive_vs_fp64(variant, M, K, N, dtype):
    x, g, b, w = _inputs(M, K, N, dtype)
    _check_fused_vs_naive(variant, x, g, b, w)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("M,K,N", [(1000, 1000, 520), (4096, 4096, 256)])
@pytest.mark.parametrize("variant", ["ln", "ln_inloop"])
def test_layernorm_large_mean(variant, M, K, N, dtype):
    """|mean| >> std: x = 50 + randn. Cancellation in the statistics must not show."""
    x, g, b, w = _inputs(M, K, N, dtype, mean=50.0)
    _check_fused_vs_naive(variant, x, g, b, w)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["rms", "rms_inloop", "rms_folded", "ln", "ln_inloop"])
def test_fused_is_deterministic(variant):
    x, g, b, w = _inputs(4096, 2048, 2048, torch.bfloat16)
    y1 = _run(_prepare(variant, x, g, b, w, PASSES)).clone()
    y2 = _run(_prepare(variant, x, g, b, w, PASSES))
    assert torch.equal(y1, y2)


@pytest.mark.gpu
@needs_lazy_prenorm
def test_fused_kernel_remarks_say_applied():
    """Depends on the lazy-prenorm pass: the kernel the op launches on this GPU was rewritten."""
    x, g, b, w = _inputs(256, 512, 256, torch.bfloat16)
    plan = _prepare("rms", x, g, b, w, PASSES)
    ck = plan.launcher.warmup(*plan.runtime_args, **plan.constexprs, **plan.options)
    assert any("[lazy-prenorm] applied" in r for r in ck.remarks), ck.remarks
    assert ck.applied


@pytest.mark.gpu
def test_functional_api_layouts_bias_and_leading_dims():
    M, K, N = 300, 520, 200
    x, g, b, w = _inputs(M, K, N, torch.bfloat16)
    bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    oracle = ref.rmsnorm_linear_ref(x, g, w, 1e-6, bias)
    naive = rmsnorm_linear(x, g, w, bias=bias, passes=())
    naive_err = ref.rel_err(naive, oracle)
    # x with leading dims, x with a row stride > K, weight not unit-stride along K.
    x3 = x.view(3, 100, K)
    x_wide = torch.empty(M, K + 40, device="cuda", dtype=x.dtype)
    x_wide[:, :K] = x
    w_t = w.t().contiguous().t()
    for xx, ww in ((x3, w), (x_wide[:, :K], w), (x, w_t)):
        y = rmsnorm_linear(xx, g, ww, bias=bias)
        assert y.shape == (*xx.shape[:-1], N)
        err = ref.rel_err(y.reshape(M, N), oracle)
        assert err <= 1.5 * naive_err + 1e-6 and err < 2e-2
    y = layernorm_linear(x3, g, b, w, bias=bias)
    assert y.shape == (3, 100, N)
    assert ref.rel_err(y.reshape(M, N), ref.layernorm_linear_ref(x, g, b, w, 1e-5, bias)) < 2e-2


@pytest.mark.gpu
def test_empty_batch():
    _, g, b, w = _inputs(1, 64, 32, torch.bfloat16)
    x = torch.empty(0, 64, device="cuda", dtype=torch.bfloat16)
    assert rmsnorm_linear(x, g, w).shape == (0, 32)
    assert layernorm_linear(x.view(2, 0, 64), g, b, w).shape == (2, 0, 32)


@pytest.mark.gpu
def test_plain_gemm_matches_cublas():
    x, _, _, w = _inputs(1000, 1000, 520, torch.bfloat16)
    oracle = x.double() @ w.double().t()
    y = ops.plain_linear(x, w)
    assert ref.rel_err(y, oracle) <= 1.5 * ref.rel_err(torch.nn.functional.linear(x, w), oracle) + 1e-6


@pytest.mark.gpu
def test_wrong_gpu_message_names_capability(monkeypatch):
    from normfuse.ops import FallbackWarning, common
    monkeypatch.setattr(common, "capability", lambda index: (8, 0))
    monkeypatch.setattr(common, "_device_name", lambda index: "NVIDIA A100")
    monkeypatch.setattr(common, "_UNAVAILABLE", {})
    monkeypatch.setattr(common, "_WARNED", set())
    x, g, _, w = _inputs(8, 64, 32, torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"Hopper GPU \(sm_90\).*NVIDIA A100.*sm_80"):
        ops.prepare_rmsnorm_linear(x, g, w)
    with pytest.warns(FallbackWarning, match=r"NVIDIA A100 with compute capability sm_80"):
        y = rmsnorm_linear(x, g, w)  # the reference path
    assert ref.rel_err(y, ref.rmsnorm_linear_ref(x, g, w, 1e-6)) < 1e-2


@pytest.mark.gpu
def test_compiled_kernel_reused_across_batch_sizes():
    _, g, _, w = _inputs(1, 1024, 512, torch.bfloat16)
    launcher = ops.get_launcher("rms", ())
    kernels = set()
    for M in (256, 512, 4096):
        x = torch.randn(M, 1024, device="cuda", dtype=torch.bfloat16)
        kernels.add(id(ops.prepare_rmsnorm_linear(x, g, w, passes=(),
                                                  config=GemmConfig(128, 128, 64, 8, 8, 3)).compile()))
    assert len(kernels) == 1
    assert launcher is ops.get_launcher("rms", [])


@pytest.mark.gpu
def test_modules_match_ops():
    torch.manual_seed(0)
    m = RMSNormLinear(520, 300, bias=True, device="cuda", dtype=torch.bfloat16, fold=True)
    with torch.no_grad():
        m.norm_weight.uniform_(0.5, 1.5)
    x = torch.randn(4, 50, 520, device="cuda", dtype=torch.bfloat16)
    oracle = ref.rmsnorm_linear_ref(x, m.norm_weight, m.weight, m.eps, m.bias)
    with torch.inference_mode():
        y_train = m.train()(x)
        y_eval = m.eval()(x)  # folded
    with torch.inference_mode():
        naive = rmsnorm_linear(x, m.norm_weight, m.weight, m.eps, m.bias, passes=())
        naive_folded = rmsnorm_linear(x, None, fold_norm_weight(m.weight, m.norm_weight), m.eps,
                                      m.bias, folded=True, passes=())
    for y, y_naive in ((y_train, naive), (y_eval, naive_folded)):
        assert y.shape == (4, 50, 300)
        assert ref.rel_err(y, oracle) <= 1.5 * ref.rel_err(y_naive, oracle) + 1e-6
    ln = LayerNormLinear(520, 300, device="cuda", dtype=torch.bfloat16).requires_grad_(False)
    y = ln(x)
    assert ref.rel_err(y, ref.layernorm_linear_ref(x, ln.norm_weight, ln.norm_bias, ln.weight,
                                                   ln.eps)) < 2e-2


@needs_lazy_prenorm
@pytest.mark.parametrize("kind", ["rms", "ln"])
def test_aot_tma_kernels_through_lazy_prenorm(kind):
    """Bulk-tensor-copy (TMA) form: the pass matches descriptor loads, the statistics read their
    own cg copy (for LayerNorm also of the transposed W tile), and the PTX uses the copy engine."""
    ck = ops.aot_compile(kind, M=8192, N=1024, K=1024, has_g=False, has_b=False, tma=True,
                         persistent=False, target="cuda:90")
    assert any("[lazy-prenorm] applied" in r for r in ck.remarks), ck.remarks
    ir = ck.asm["normfuse"]
    assert ir.count("scf.for") == 1
    assert ir.count("tt.descriptor_load") == (4 if kind == "ln" else 3)
    assert ir.count("cacheModifier = cg") == (2 if kind == "ln" else 1)
    assert "cp.async.bulk.tensor" in ck.asm["ptx"] and "wgmma" in ck.asm["ptx"]


@needs_lazy_prenorm
@pytest.mark.parametrize("kind,tma", [("rms", False), ("rms", True), ("ln", False)])
def test_aot_persistent_kernels_through_lazy_prenorm(kind, tma):
    """Persistent form (NUM_PROGRAMS > 0): the pass finds the two k-loops inside the tile loop and
    fuses them there; Triton then flattens the tile loop (`tt.flatten`) around the one k-loop."""
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    ck = ops.aot_compile(kind, M=262144, N=512, K=512, has_g=False, has_b=False, tma=tma,
                         config=cfg, persistent=True, target="cuda:90")
    assert any("[lazy-prenorm] applied" in r for r in ck.remarks), ck.remarks
    ttir, ir = ck.asm["ttir"], ck.asm["normfuse"]
    assert ttir.count("scf.for") == 3 and ir.count("scf.for") == 2
    assert "tt.flatten" in ir and "c132_i32" in ir
    if tma:
        assert "cp.async.bulk.tensor" in ck.asm["ptx"]
    assert "wgmma" in ck.asm["ptx"]


def test_persistent_rule():
    """`persistent=None`: the config's choice only where it was measured to win (RMSNorm with g
    folded, the plain GEMM); an explicit True/False always wins."""
    p, rule = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True), ops._persistent_form
    assert rule(p, "rms", {"HAS_G": False}, None) and rule(p, "gemm", {}, None)
    assert not rule(p, "rms", {"HAS_G": True}, None) and not rule(p, "ln", {"HAS_G": False}, None)
    assert rule(p, "ln", {}, True) and not rule(p, "rms", {}, False)
    assert not rule(GemmConfig(128, 256, 64, 8, 8, 3), "rms", {}, None)


def test_num_programs_rule():
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    assert ops.num_programs(cfg, 262144, 512, 132) == 132
    assert ops.num_programs(cfg, 1024, 512, 132) == 0  # 16 tiles < 132 SMs
    assert ops.num_programs(cfg, 262144, 512, 132, persistent=False) == 0
    plain = GemmConfig(128, 256, 64, 8, 8, 3)
    assert ops.num_programs(plain, 262144, 512, 132) == 0
    assert ops.num_programs(plain, 262144, 512, 132, persistent=True) == 132


@pytest.mark.gpu
def test_persistent_with_tma_refused():
    """Persistent + bulk tensor copies wrote garbage on ragged shapes (H200, 2026-11-29): an
    explicit request is refused, and `persistent=None` falls back to one program per tile."""
    x, g, b, w = _inputs(33000, 520, 1000, torch.bfloat16)
    with pytest.raises(NotImplementedError, match="persistent=True with bulk tensor copies"):
        ops.prepare_rmsnorm_linear(x, g, w, persistent=True, tma=True)
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    assert ops.prepare_rmsnorm_linear(x, None, w, folded=True, config=cfg, tma=True).constexprs["NUM_PROGRAMS"] == 0
    assert ops.prepare_rmsnorm_linear(x, None, w, folded=True, config=cfg).constexprs["NUM_PROGRAMS"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("M,K,N", [(33000, 520, 1000), (65536, 1024, 512), (20000, 4096, 264)])
@pytest.mark.parametrize("variant", ["rms", "rms_inloop", "ln", "ln_inloop"])
def test_persistent_numerics_fused_vs_naive_vs_fp64(variant, M, K, N):
    """The persistent form (at least as many tiles as SMs, pointer loads): every tile written,
    the fused kernel within 1.5x of the naive kernel's error, bitwise repeatable; ragged M, N, K."""
    x, g, b, w = _inputs(M, K, N, torch.bfloat16)
    tma = False
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    oracle = _oracle(variant, x, g, b, w)
    plan = _prepare(variant, x, g, b, w, (), config=cfg, tma=tma, persistent=True)
    assert plan.constexprs["NUM_PROGRAMS"] == torch.cuda.get_device_properties(0).multi_processor_count
    naive_err = ref.rel_err(_run(plan), oracle)
    fused = _prepare(variant, x, g, b, w, PASSES, config=cfg, tma=tma, persistent=True)
    y1 = _run(fused).clone()
    fused_err = ref.rel_err(y1, oracle)
    assert fused_err <= 1.5 * naive_err + 1e-6, (fused_err, naive_err)
    assert torch.equal(_run(fused), y1)


@pytest.mark.slow  # (6 s of ptxas)
def test_ptxas_resources_explain_the_persistent_rule():
    """`CompiledKernel.resources()` (ptxas -v, no GPU): the persistent form of the fused LayerNorm
    kernel with g and beta in the loop spills registers (one reason it is 2-2.5x slower and off by
    default); the per-tile form does not spill as much; RMSNorm folded does not spill at all."""
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    def res(kind, pers, **flags):
        # the fused Triton kernel (hopper-ws's fallback), not the warp-specialized one
        return ops.aot_compile(kind, M=262144, N=1024, K=1024, config=cfg, persistent=pers,
                               passes=("lazy-prenorm",), **flags).resources()
    ln_pers = res("ln", True, has_g=True, has_b=True)
    ln_tile = res("ln", False, has_g=True, has_b=True)
    rms = res("rms", True, has_g=False)
    assert 0 < rms["registers"] <= 255 and rms["spill_stores"] == 0
    assert ln_pers["spill_stores"] > ln_tile["spill_stores"] >= 0



def _buffers(ttgir: str) -> list[str]:
    """The pipeliner's multi-buffered shared allocations, e.g. ['3x128x64', '2x128x64', ...]."""
    return re.findall(r"ttg\.local_alloc[^\n]*-> !ttg\.memdesc<(\d+x\d+x\d+)x", ttgir)


@pytest.mark.parametrize("kind,flags,persistent,staged", [
    ("rms", {"has_g": False}, True, True),      # the op's default RMSNorm form
    ("rms", {"has_g": True}, False, True),      # g in the loop: the tile reaches the MMA via registers
    ("rms", {"has_g": False}, False, False),    # per tile, tile straight into the MMA: auto skips
    ("ln", {"has_g": False, "has_b": False}, True, False),  # two reloads do not fit: none staged
])
def test_aot_stage_reloads_default(kind, flags, persistent, staged):
    """lazy-prenorm{stage-reloads=auto} in the kernels the op compiles (num_stages=3 from the
    compilation): the statistics' reload gets its own 2 shared buffers, the MMA's A tile keeps
    3 (the async wgmma's extra buffer), and the CTA stays within Hopper's 227 KiB."""
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    ck = ops.aot_compile(kind, M=262144, N=1024, K=1024, config=cfg, persistent=persistent,
                         passes=("lazy-prenorm",), **flags)  # the Triton kernel, not the lowering
    applied = next(r for r in ck.remarks if "[lazy-prenorm] applied" in r)
    bufs = _buffers(ck.asm["ttgir"])
    assert ck.metadata.shared <= 227 * 1024, ck.metadata.shared
    if staged:
        assert "1 of 1 reload(s) staged in shared memory (tt.latency = 2" in applied, applied
        assert "{tt.latency = 2 : i32}" in ck.asm["normfuse"]
        assert bufs.count("2x128x64") + bufs.count("3x128x64") == 2, bufs
        assert "ttg.local_load" in ck.asm["ttgir"]
    else:
        assert "tt.latency" not in ck.asm["normfuse"], applied
        assert bufs.count("2x128x64") + bufs.count("3x128x64") == 1, bufs
    if not flags.get("has_g"):
        assert "3x128x64" in bufs  # the MMA's A tile: never the racy 2 buffers


def test_stage_reloads_fixes_the_buffer_count_that_races():
    """The race of stats-source=tile, seen in the TTGIR: the tile read by the wgmma and by the
    statistics gets num_stages - 1 = 2 buffers (no extra buffer for the async wgmma, Triton 3.6
    LowerLoops); with the default reload the MMA's tile has 3."""
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    tile = ops.aot_compile("rms", M=262144, N=1024, K=1024, config=cfg, persistent=True, has_g=False,
                           passes=("lazy-prenorm{stats-source=tile}",))
    assert _buffers(tile.asm["ttgir"])[0] == "2x128x64"
    default = ops.aot_compile("rms", M=262144, N=1024, K=1024, config=cfg, persistent=True, has_g=False)
    assert _buffers(default.asm["ttgir"])[0] == "3x128x64"


@pytest.mark.gpu
@pytest.mark.parametrize("M,K,N", [(33000, 520, 1000), (20000, 4096, 264), (17000, 1024, 2048)])
@pytest.mark.parametrize("variant", ["rms", "rms_inloop"])
def test_row_blocks_numerics_fused_vs_naive_vs_fp64(variant, M, K, N):
    """The row-block form (programs walk row blocks; the pass computes each row block's
    statistics once, in its first N tile): every tile written, within 1.5x of the naive kernel
    (the same form without passes), bitwise repeatable; ragged M, N, K."""
    x, g, b, w = _inputs(M, K, N, torch.bfloat16)
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    oracle = _oracle(variant, x, g, b, w)
    kw = dict(config=cfg, tma=False, persistent=True, row_blocks=True)
    naive = _prepare(variant, x, g, b, w, (), **kw)
    assert naive.constexprs["ROW_BLOCKS"] and naive.constexprs["NUM_PROGRAMS"] > 0
    naive_err = ref.rel_err(_run(naive), oracle)
    fused = _prepare(variant, x, g, b, w, PASSES, **kw)
    assert any("once per row block" in r for r in fused.compile().remarks)
    y1 = _run(fused).clone()
    fused_err = ref.rel_err(y1, oracle)
    assert fused_err <= 1.5 * naive_err + 1e-6, (fused_err, naive_err)
    assert torch.equal(_run(fused), y1)


def test_aot_row_blocks_form():
    """row_blocks=True in the persistent RMSNorm kernel (CPU, sm_90): the pass versions the N-tile
    loop (one scf.if, two GEMM loops: the fused first tile with the staged reload, the later
    tiles without statistics); LayerNorm refuses the option; too few row blocks fall back."""
    cfg = GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)
    ck = ops.aot_compile("rms", M=262144, N=1024, K=1024, has_g=False, config=cfg, row_blocks=True)
    assert any("once per row block" in r for r in ck.remarks), ck.remarks
    ir = ck.asm["normfuse"]
    assert ir.count("scf.if") == 1 and ir.count("tt.dot") == 2 and ir.count("cacheModifier = cg") == 1
    assert ck.metadata.shared <= 227 * 1024
    small = ops.aot_compile("rms", M=4096, N=1024, K=1024, has_g=False, config=cfg, row_blocks=True)
    assert not any("once per row block" in r for r in small.remarks)  # 32 row blocks < 132 SMs
    assert not ops.row_blocks_form("ln", cfg, 262144, 132, True, True)
