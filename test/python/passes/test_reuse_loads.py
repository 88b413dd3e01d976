"""reuse-loads on the CPU: the lit input's kernel (test/lit/inputs/reuse_loads_kernels.py) and
FlashNormAttention's forward (x read by the statistics' loop and again by the attention's), run
by normfuse.testing's interpreter before and after the pass."""
from __future__ import annotations

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402

from normfuse.testing import check_pass_numerics  # noqa: E402

from pass_numerics import lit_input  # noqa: E402


def _twice_kernel():
    return lit_input("reuse_loads_kernels")._twice


@pytest.mark.parametrize("n", [32, 21], ids=["even", "ragged"])
def test_twice_same_results(n):
    """One load for both uses: the same bits, and what the kernel means (s = the rows' sums of
    squares, Y = X * s), ragged rows masked."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 16, generator=g)
    w = torch.randn(16, 16, generator=g)
    y = torch.full((32, 16), float("nan"))
    s = torch.full((32,), float("nan"))
    res = check_pass_numerics(_twice_kernel(), [x, w, y, s, n], constexprs=dict(MODE=0),
                              grid=(2,), passes="reuse-loads", num_warps=4)
    assert any("1 load (of X) reuses an earlier load" in r for r in res.applied), res.remarks
    for name in ("Y", "S"):
        assert torch.equal(torch.nan_to_num(res.before[name], 7.0),
                           torch.nan_to_num(res.after[name], 7.0)), name
    want = (x[:n] * x[:n]).sum(1)
    assert torch.allclose(res.after["S"][:n], want, rtol=1e-6, atol=1e-6)
    assert torch.allclose(res.after["Y"][:n], x[:n] * want[:, None], rtol=1e-6, atol=1e-6)
    assert torch.isnan(res.after["Y"][n:]).all()


@pytest.mark.parametrize("mode, why", [
    (1, "no two loads of the same addresses"),
    (3, "the kernel writes the memory of X"),
    (4, "no two loads of the same addresses")],
    ids=["another-mask", "x-written", "another-pointer"])
def test_twice_left_alone_same_results(mode, why):
    """The loads that must stay two (the lit file's negatives, run): a second load under another
    mask (its columns >= 8 read as 0), after a store into X (its column 0 the sums), or of W:
    the pass leaves them, and Y is what the kernel means, not the first load's tile (a bug that
    merged them would scale x's columns >= 8, x's column 0, or X instead of W)."""
    g = torch.Generator().manual_seed(mode)
    n = 21
    x = torch.randn(32, 16, generator=g)
    w = torch.randn(32, 16, generator=g)  # (MODE 4 reads W's rows as the second tile)
    y = torch.full((32, 16), float("nan"))
    s = torch.full((32,), float("nan"))
    res = check_pass_numerics(_twice_kernel(), [x.clone(), w, y, s, n],
                              constexprs=dict(MODE=mode), grid=(2,), passes="reuse-loads",
                              num_warps=4)
    assert not res.applied, res.remarks
    assert any(why in r for r in res.remarks), res.remarks
    want_s = (x[:n] * x[:n]).sum(1)
    second = {1: torch.where(torch.arange(16) < 8, x[:n], 0.0),
              3: torch.cat([want_s[:, None], x[:n, 1:]], 1), 4: w[:n]}[mode]
    assert torch.allclose(res.after["S"][:n], want_s, rtol=1e-6, atol=1e-6)
    assert torch.allclose(res.after["Y"][:n], second * want_s[:, None], rtol=1e-6, atol=1e-6)
    assert torch.equal(torch.nan_to_num(res.before["Y"], 7.0),
                       torch.nan_to_num(res.after["Y"], 7.0))


def test_flash_norm_attention_forward_reads_x_once_before_the_attention():
    """FlashNormAttention's forward through the passes before reuse-loads in its default, then
    with reuse-loads: the attention's load of x takes the statistics' (the residual's reload
    after the attention stays: a dot lies between; with across-dots=true, the op's default, it
    goes too), with the same bits as without."""
    import test_flash_norm_attention as t
    from normfuse.kernels.attention import flash_norm_attention_naive
    from normfuse.ops.common import row_block_table
    from normfuse.ops.flash_norm_attention import DEFAULT_FNA_PASSES
    x, k, v, offs, w = t._inputs(t.LENS, 3, 64, 64, act="softmax", seed=5)
    args, consts, grid = t._kernel_args(x, k, v, offs, w, "softmax")
    args = list(args)
    args[4] = row_block_table(offs, 2 * consts["BLOCK_M"], rows=x.shape[0])
    consts = dict(consts, ROWS=2 * consts["BLOCK_M"])
    grid = (args[4].shape[0],)
    # the op's default ends with reuse-loads across dots: here against the passes before it
    assert DEFAULT_FNA_PASSES[-1] == "reuse-loads{across-dots=true}", DEFAULT_FNA_PASSES
    base = ",".join(DEFAULT_FNA_PASSES[:-1])
    runs = {}
    for name, passes in (("default", base), ("reuse", base + ",reuse-loads"),
                         ("across", base + ",reuse-loads{across-dots=true}")):
        runs[name] = check_pass_numerics(
            flash_norm_attention_naive, [a.clone() if isinstance(a, torch.Tensor) else a for a in args],
            constexprs=consts, grid=grid, passes=passes, num_warps=4)
    applied = "\n".join(runs["reuse"].applied)
    assert "1 load (of X) reuses an earlier load of the same addresses" in applied, applied
    kept = "\n".join(r for r in runs["reuse"].remarks if "[reuse-loads] missed" in r)
    assert "'tt.dot' between two loads of X" in kept, runs["reuse"].remarks
    across = "\n".join(runs["across"].applied)
    assert "2 loads (of X) reuse an earlier load of the same addresses" in across, across
    for name in ("OUT", "MEAN", "RSTD", "RRMS"):
        for run in ("reuse", "across"):
            assert not torch.isnan(runs[run].after[name].float()).any(), (run, name)
            assert torch.equal(runs["default"].after[name], runs[run].after[name]), (run, name)


def test_flash_norm_attention_backward_rows_kernel_same_bits():
    """The backward's rows kernel through `DEFAULT_BWD_PASSES` (softmax's default) and through
    the op's default for GELU, which adds reuse-loads: dout and the RMSNorm weight loaded once
    per row block (x's loads stay: the attention's loop lies between), the six gradients
    bitwise the same."""
    import test_flash_norm_attention_bwd as t
    from normfuse.ops.flash_norm_attention_bwd import DEFAULT_BWD_PASSES, flash_norm_attention_bwd
    from normfuse.testing.attention_bwd import interpreted, last_remarks
    x, k, v, off, dout, lnw, lnb, rmw = t._inputs([3, 17], 4, 2, 64, 24, seed=6)
    _, out64, st = t._grads(x, k, v, off, dout, lnw, lnb, rmw, "gelu_tanh", torch.float64)
    args = (dout, x, k, v, off, out64.to(x.dtype), st["mean"].float(), st["rstd"].float(),
            st["rrms"].float())
    kw = dict(activation="gelu_tanh", ln_weight=lnw, ln_bias=lnb, rms_weight=rmw, block_m=16)
    with interpreted():
        base = flash_norm_attention_bwd(*args, passes=DEFAULT_BWD_PASSES, **kw)
        got = flash_norm_attention_bwd(*args, **kw)  # passes="default"
        remarks = last_remarks()
    assert any("2 loads (of DOUT, RMSW) reuse an earlier load" in r for r in remarks), remarks
    assert any("'scf.for' between two loads of X" in r for r in remarks), remarks
    for a, b in zip(base, got):
        assert torch.equal(a, b)


def _kernels():
    return lit_input("reuse_loads_kernels")


def _same(res, names):
    for name in names:
        a, b = res.before[name], res.after[name]
        assert not torch.isnan(b).any(), name
        assert torch.equal(a, b), name


@pytest.mark.parametrize("n", [48, 40, 0], ids=["even", "ragged", "no-trips"])
def test_walk_across_trips_same_results(n):
    """across-trips on the lit input's walk: the next block's tile carried to the next trip (the
    first from the load before the walk), Y = the tile times the rows' sums, the same bits."""
    x = torch.randn(64, 16, generator=torch.Generator().manual_seed(1))
    y = torch.zeros(64, 16)
    res = check_pass_numerics(_kernels()._walk, [x, y, n], constexprs=dict(MODE=0), grid=(1,),
                              passes="reuse-loads{across-trips=true}", num_warps=4)
    assert any("across-trips: 1 load (of X)" in r for r in res.applied), res.remarks
    _same(res, ["Y"])
    want = x[:n] * x[:n].sum(1)[:, None]  # (each row's sums: the row block's, a trip ahead)
    assert torch.allclose(res.after["Y"][:n], want, rtol=1e-5, atol=1e-5)
    assert not res.after["Y"][n:].any()


def test_stream_across_trips_builds_the_loop_yield():
    """A walk that carries nothing has its scf.yield elided: across-trips builds one for the
    carried tile (it raised an internal error, failing the compile), the same bits."""
    x = torch.randn(80, 16, generator=torch.Generator().manual_seed(2))
    y = torch.zeros(4096 + 16)
    res = check_pass_numerics(_kernels()._stream, [x, y, 40], constexprs={}, grid=(1,),
                              passes="reuse-loads{across-trips=true}", num_warps=4)
    assert any("across-trips: 1 load (of X)" in r for r in res.applied), res.remarks
    _same(res, ["Y"])
    want = x[:40] + torch.cat([x[16:40], torch.zeros(16, 16)])[:40]
    assert torch.equal(res.after["Y"][:640].view(40, 16), want)


@pytest.mark.parametrize("mode", [0, 1], ids=["reduce", "written"])
@pytest.mark.parametrize("option", ["true", "values"])
def test_walk_twin_with_the_same_form_not_carried(mode, option):
    """The walk's first block loaded before it under a bound of the walk's form but another
    value (max(c) for sum(c); N loaded again after a store to it): not the carry's start (the
    carried tile took the wrong bound in the first trip: Y differed), the same bits."""
    x = torch.randn(160, 16, generator=torch.Generator().manual_seed(3))
    x.view(-1)[2048:2064] = torch.tensor([5.0] * 8 + [0.0] * 8)  # sum 40, max 5
    y = torch.zeros(4096 + 256)
    res = check_pass_numerics(_kernels()._walk_twin, [x, y, torch.tensor([40], dtype=torch.int32)],
                              constexprs=dict(MODE=mode), grid=(1,),
                              passes=f"reuse-loads{{across-trips={option}}}", num_warps=4)
    why = "'tt.reduce'" if mode == 0 else "memory the kernel writes (N"
    assert any("across-trips: nothing carried" in r and why in r for r in res.remarks), res.remarks
    _same(res, ["Y"])
    acc = sum(2.0 * x[rb:rb + 16] * (torch.arange(rb, rb + 16) < 40)[:, None]
              - x[rb + 16:rb + 32] * (torch.arange(rb + 16, rb + 32) < 40)[:, None]
              for rb in range(0, 64, 16))
    assert torch.allclose(res.after["Y"][:256].view(16, 16), acc, rtol=1e-5, atol=1e-5)


def test_bounds_of_one_form_two_values_not_reused():
    """Two loads of one address masked by cols < sum(c) and cols < max(c): one form (a
    tt.reduce's combiner is in its region), two masks; both loads stay (the second took the
    first's value: Y differed), the same bits."""
    x = torch.randn(32, generator=torch.Generator().manual_seed(4))
    x[16:32] = torch.tensor([5.0] * 8 + [0.0] * 8)
    y = torch.zeros(16)
    res = check_pass_numerics(_kernels()._bounds, [x, y], constexprs={}, grid=(1,),
                              passes="reuse-loads", num_warps=4)
    assert any("missed: no load reused: a value computed from 'tt.reduce'" in r
               for r in res.remarks), res.remarks
    _same(res, ["Y"])
    want = 2.0 * x[:16] + torch.where(torch.arange(16) < 5, x[:16], 0.0)
    assert torch.equal(res.after["Y"], want)
