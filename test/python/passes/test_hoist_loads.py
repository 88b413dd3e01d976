"""hoist-loads on the CPU: the lit input's loop (test/lit/inputs/hoist_loads_kernels.py) and
FlashNormAttention's forward walking the row blocks of a sequence (`ROWS`), run by
normfuse.testing's interpreter before and after the pass."""
from __future__ import annotations

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402

from normfuse.testing import check_pass_numerics  # noqa: E402

from pass_numerics import lit_input  # noqa: E402


def _walk_kernel():
    return lit_input("hoist_loads_kernels")._walk


@pytest.mark.parametrize("lo, hi, kn", [(0, 48, 16), (16, 16, 1)], ids=["three-trips", "no-trip"])
def test_walk_same_results(lo, hi, kn):
    """The hoisted load gives every trip the same vector; with no trip it reads nothing (K has
    a single element there: an unmasked read of 16 would fall outside it)."""
    g = torch.Generator().manual_seed(0)
    k = torch.randn(kn, generator=g)
    x = torch.randn(64 * 16, generator=g)
    y = torch.full((64 * 16,), float("nan"))
    res = check_pass_numerics(_walk_kernel(), [k, x, y, lo, hi, 16], constexprs=dict(MODE=0),
                              grid=(1,), passes="hoist-loads", num_warps=4)
    assert any("1 loop-invariant load" in r for r in res.applied), res.remarks
    assert torch.allclose(res.before["Y"], res.after["Y"], rtol=0, atol=0, equal_nan=True)
    if hi > lo:
        assert torch.equal(res.after["Y"][lo * 16:hi * 16].view(-1, 16),
                           x[lo * 16:hi * 16].view(-1, 16) + k[None, :])


def test_walk_reading_what_it_writes_left_alone():
    """MODE 3: the vector read from Y, which each trip stores to (trip 0 writes Y's first row):
    the load stays in the loop, and later trips add the row the earlier trip stored (a hoisted
    load would give every trip Y's row from before the loop)."""
    g = torch.Generator().manual_seed(3)
    k = torch.randn(16, generator=g)
    x = torch.randn(48 * 16, generator=g)
    y0 = torch.randn(48 * 16, generator=g)
    res = check_pass_numerics(_walk_kernel(), [k, x, y0.clone(), 0, 48, 16],
                              constexprs=dict(MODE=3), grid=(1,), passes="hoist-loads",
                              num_warps=4)
    assert not res.applied, res.remarks
    assert any("the kernel writes the memory of Y" in r for r in res.remarks), res.remarks
    want = y0.clone()
    for r in range(0, 48, 16):
        want[r * 16:(r + 16) * 16] = (x[r * 16:(r + 16) * 16].view(16, 16)
                                      + want[:16][None, :]).reshape(-1)
    assert torch.equal(res.after["Y"], want)
    assert torch.equal(res.before["Y"], res.after["Y"])


def test_flash_norm_attention_walk_loads_k_and_v_once():
    """FlashNormAttention's forward with ROWS = 2 row blocks per program (the chunk table) through
    the default passes + early-loads + hoist-loads: K and V leave the walk; the same bits as one
    program per row block through the default passes."""
    import test_flash_norm_attention as t
    from normfuse.kernels.attention import flash_norm_attention_naive
    from normfuse.ops.common import row_block_table
    x, k, v, offs, w = t._inputs(t.LENS, 3, 64, 64, act="softmax", seed=13)
    args, consts, grid = t._kernel_args(x, k, v, offs, w, "softmax")
    base = "cluster-reduce{gather=once},epilogue-norm,residual-acc"
    one = check_pass_numerics(flash_norm_attention_naive,
                              [a.clone() if isinstance(a, torch.Tensor) else a for a in args],
                              constexprs=consts, grid=grid, passes=base, num_warps=4)
    a = list(args)
    a[4] = row_block_table(offs, 2 * consts["BLOCK_M"], rows=x.shape[0])
    walk = check_pass_numerics(flash_norm_attention_naive, a,
                               constexprs=dict(consts, ROWS=2 * consts["BLOCK_M"]),
                               grid=(a[4].shape[0],),
                               passes=base.replace("once}", "once,early-loads=true}") + ",hoist-loads",
                               num_warps=4)
    applied = "\n".join(walk.applied)
    assert "persistent: the clusters walk the row blocks" in applied, applied
    assert "2 loop-invariant loads (of K, V) hoisted" in applied, applied
    assert "early-loads: " in applied, applied
    for name in ("OUT", "MEAN", "RSTD", "RRMS"):
        assert not torch.isnan(walk.after[name].float()).any(), name
        assert torch.equal(one.after[name], walk.after[name]), name
