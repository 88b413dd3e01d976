"""residual-acc: the lit input's small GEMM kernels (the residual added to the accumulator before
the k-loop instead of after it, and the forms it leaves alone), interpreted before and after the
pass. The pass's place in the FlashNormAttention pipeline is tested in
test_flash_norm_attention.py."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")

from normfuse.reference import rel_err  # noqa: E402
from normfuse.testing import check_pass_numerics  # noqa: E402

from pass_numerics import lit_input_kernels  # noqa: E402

REF_TOL = 1.2e-2  # interpreted bf16 output vs fp64, Frobenius


# (mode 4: the accumulator starts at one, not zero, and must keep its start; 5: acc * (1 / l))
@pytest.mark.parametrize("mode", [0, 2, 3, 4, 5])
def test_lit_residual_kernels(mode):
    m = lit_input_kernels()
    gen = torch.Generator().manual_seed(12)
    a = torch.randn(16, 64, generator=gen).bfloat16()
    b = (torch.randn(64, 16, generator=gen) / 8).bfloat16()
    r = torch.randn(16, 16, generator=gen).bfloat16()
    y = torch.full((16, 16), float("nan")).bfloat16()
    res = check_pass_numerics(m._mm, [a, b, r, y], constexprs=m.mm(mode), grid=(1,),
                              passes="residual-acc", num_warps=4)
    assert res.changed == (mode == 0)
    assert res.max_rel_diff < 1e-2, res.diffs
    if mode == 0:
        assert rel_err(res.after["Y"], a.double() @ b.double() + r.double()) < REF_TOL
