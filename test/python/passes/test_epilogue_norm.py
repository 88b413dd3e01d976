"""epilogue-norm on the naive post-norm kernels (kernels/postnorm_gemm.py)."""
import pytest
import torch
import triton
import triton.language as tl

import normfuse
from normfuse.reference import linear_norm_ref
from normfuse.kernels.postnorm_gemm import linear_layernorm_naive, linear_rmsnorm_naive

SIG = {"X": "*bf16", "W": "*bf16", "BIAS": "*bf16", "RES": "*bf16", "G": "*bf16", "Y": "*bf16",
       "M": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_rm": "i32",
       "stride_ym": "i32", "eps": "fp32", "N": "constexpr", "BLOCK_M": "constexpr",
       "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "EVEN_K": "constexpr",
       "HAS_BIAS": "constexpr", "HAS_RES": "constexpr"}
LN_SIG = {k: ("*bf16" if k == "B" else SIG[k]) for k in
          ["X", "W", "BIAS", "RES", "G", "B", "Y", "M", "K", "stride_xm", "stride_wn", "stride_rm",
           "stride_ym", "eps", "N", "BLOCK_M", "BLOCK_N", "BLOCK_K", "EVEN_K", "HAS_BIAS", "HAS_RES"]}
ALIGNED = {(i,): [["tt.divisibility", 16]] for i in range(6)}
FLAGS = dict(EVEN_K=True, HAS_BIAS=False, HAS_RES=False)


@pytest.mark.parametrize("fn,sig", [(linear_rmsnorm_naive, SIG), (linear_layernorm_naive, LN_SIG)],
                         ids=["rms", "ln"])
def test_aot_single_tile_row_is_normalized_in_registers(fn, sig):
    ck = normfuse.compile(fn, signature=sig, constexprs=dict(N=256, BLOCK_M=64, BLOCK_N=256, BLOCK_K=64, **FLAGS),
                          passes=("epilogue-norm",), num_warps=8, num_stages=3, attrs=ALIGNED)
    assert any("[epilogue-norm] applied" in r for r in ck.remarks), ck.remarks
    assert ck.applied
    assert ck.asm["ttir"].count("tt.store") == 2 and ck.asm["normfuse"].count("tt.store") == 1
    assert "wgmma" in ck.asm["ptx"]


def test_aot_row_over_several_tiles_is_left_alone():
    ck = normfuse.compile(linear_rmsnorm_naive, signature=SIG,
                          constexprs=dict(N=1024, BLOCK_M=64, BLOCK_N=256, BLOCK_K=64, **FLAGS),
                          passes=("epilogue-norm",), num_warps=8, attrs=ALIGNED)
    assert not ck.applied
    assert any("several tiles" in r for r in ck.remarks), ck.remarks


@triton.jit
def _overwrite_between(X, Y, eps, N: tl.constexpr, BM: tl.constexpr):
    """A tile stored, its column 0 overwritten by the row sums (Y's own memory, between the two
    stores), reloaded, normalized and stored back: the reload reads the sums there."""
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, N)
    acc = tl.load(X + offs_m[:, None] * N + offs_n[None, :]).to(tl.float32) * 2.0
    ss = tl.sum(acc * acc, axis=1)
    p = Y + offs_m[:, None] * N + offs_n[None, :]
    tl.store(p, acc.to(tl.bfloat16))
    tl.store(Y + offs_m * N, ss.to(tl.bfloat16))
    y = tl.load(p).to(tl.float32)
    tl.store(p, (y / tl.sqrt(ss / N + eps)[:, None]).to(tl.bfloat16))


def test_store_to_the_output_between_left_alone():
    """A store into the output's own memory between the unnormalized store and the final one
    (lit: negative_extra_store, there outside the tile; here over its column 0): left alone,
    so the reload sees it (forwarded, column 0 would be the tile's own value)."""
    pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
    from normfuse.testing import check_pass_numerics
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(5)).bfloat16()
    y = torch.full((16, 32), float("nan")).bfloat16()
    res = check_pass_numerics(_overwrite_between, [x, y, 1e-5], constexprs=dict(N=32, BM=16),
                              grid=(1,), passes="epilogue-norm", num_warps=4)
    assert not res.applied, res.remarks
    assert any("'tt.store' between the unnormalized store and the final store" in r
               for r in res.remarks), res.remarks
    acc = x.float() * 2.0
    ss = (acc * acc).sum(1)
    tile = acc.bfloat16().float()
    tile[:, 0] = ss.bfloat16().float()
    want = (tile / torch.sqrt(ss / 32 + 1e-5)[:, None]).bfloat16()
    assert torch.equal(res.after["Y"], want)
    assert torch.equal(res.before["Y"], res.after["Y"])


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rms", "ln"])
@pytest.mark.parametrize("M,K,N", [(1000, 256, 64), (4096, 512, 128), (333, 1000, 256)])
def test_gpu_numerics_vs_naive(kind, M, K, N):
    torch.manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
    g = (1 + 0.1 * torch.randn(N, device="cuda")).to(torch.bfloat16)
    b = (0.1 * torch.randn(N, device="cuda")).to(torch.bfloat16) if kind == "ln" else None
    fn = linear_rmsnorm_naive if kind == "rms" else linear_layernorm_naive
    ref = linear_norm_ref(x, w, g, b, 1e-6)
    errs = {}
    for passes in ((), ("epilogue-norm",)):
        launcher = normfuse.jit(fn, passes=passes)
        outs = []
        for _ in range(2):
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            args = (x, w, w, w, g) + ((b,) if b is not None else ()) + (
                y, M, K, x.stride(0), w.stride(0), N, y.stride(0), 1e-6)
            launcher[(triton.cdiv(M, 64),)](*args, N=N, BLOCK_M=64, BLOCK_N=N, BLOCK_K=64,
                                            EVEN_K=K % 64 == 0, HAS_BIAS=False, HAS_RES=False,
                                            num_warps=4, num_stages=3)
            torch.cuda.synchronize()
            assert not torch.isnan(y).any()
            outs.append(y)
        assert torch.equal(outs[0], outs[1])
        errs[passes] = ((outs[0].double() - ref).norm() / ref.norm()).item()
    assert errs[("epilogue-norm",)] <= 1.5 * errs[()] + 1e-6, errs
