"""prefetch-loads on the CPU: small loops whose tile load reaches a dot as its accumulator, as an
A operand, or is written by the kernel (run by normfuse.testing's interpreter before and after
the pass: only attributes change), and FlashNormAttention's forward with its LayerNorm in the MMA
layout walking row blocks, compiled for sm_90 (its x tile prefetched through cp.async again)."""
from __future__ import annotations

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from normfuse.testing import check_pass_numerics  # noqa: E402


@triton.jit
def _walk(W, X, Y, n, MODE: tl.constexpr):
    """Per trip a 16 x 16 tile of X: MODE 0 the accumulator of W @ W, MODE 1 the dot's A operand,
    MODE 2 the accumulator, with X written back by the loop."""
    r = tl.arange(0, 16)
    tile = r[:, None] * 16 + r[None, :]
    w = tl.load(W + tile)
    for i in range(0, n):
        x = tl.load(X + i * 256 + tile, mask=tile < 256, other=0.0)
        if MODE == 1:
            acc = tl.dot(x.to(tl.bfloat16), w)
        else:
            acc = tl.dot(w, w, x)
        tl.store(Y + i * 256 + tile, acc)
        if MODE == 2:
            tl.store(X + i * 256 + tile, acc)


def _run(mode):
    g = torch.Generator().manual_seed(mode)
    w = torch.randn(256, generator=g).to(torch.bfloat16)
    x = torch.randn(3 * 256, generator=g)
    y = torch.full((3 * 256,), float("nan"))
    return check_pass_numerics(_walk, [w, x, y, 3], constexprs=dict(MODE=mode), grid=(1,),
                               passes="prefetch-loads", num_warps=4, num_stages=2)


def test_accumulator_tile_tagged_same_results():
    res = _run(0)
    assert any("1 tile load (of X) given tt.latency = 1" in r for r in res.applied), res.remarks
    assert torch.equal(res.before["Y"], res.after["Y"])
    assert not torch.isnan(res.after["Y"]).any()


@pytest.mark.parametrize("mode, why", [(1, "no tile load reaches the loop's dots only as an "
                                           "accumulator"),
                                       (2, "the kernel writes the memory of X")],
                         ids=["a-operand", "written"])
def test_left_alone(mode, why):
    res = _run(mode)
    assert not res.applied, res.remarks
    assert any(why in r for r in res.remarks), res.remarks
    assert torch.equal(res.before["Y"], res.after["Y"])



def test_flash_norm_attention_walk_prefetches_x():
    """FlashNormAttention's forward with its LayerNorm in the MMA layout (LN_MMA) walking 2 row
    blocks per program through `MMA_FNA_PASSES` (the default passes, then this one), compiled
    for sm_90 on the CPU: x (anchored in the MMA layout, reaching the dots only as an
    accumulator) is tagged and copied by cp.async a row block ahead, as when it fed the dot's A
    operand."""
    import test_flash_norm_attention as t
    from normfuse.ops.flash_norm_attention import MMA_FNA_PASSES, _launcher
    from normfuse.testing.fake_driver import fused_on_cpu
    x, k, v, offs, w = t._inputs([300, 0, 1, 77], 2, 128, 128, act="softmax", seed=3,
                                 affine=False)  # (the benchmark's shape: no weights, no spills)
    args, consts, _ = t._kernel_args(x, k, v, offs, w, "softmax", BM=64, BN=128)
    with fused_on_cpu():
        ck = _launcher(MMA_FNA_PASSES).warmup(*args, **consts, ROWS=128, LN_MMA=True,
                                              num_warps=4, num_stages=2)
    assert any("[prefetch-loads] applied: 1 tile load (of X) given tt.latency = 1" in r
               for r in ck.remarks), ck.remarks
    assert "ttg.async_copy_global_to_local" in ck.asm["ttgir"]
