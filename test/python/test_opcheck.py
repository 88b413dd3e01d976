"""torch.library.opcheck over every normfuse custom op on the CPU path: the schema (no output
aliases an input or another output, nothing mutated that the schema does not say), the fake
implementation against the real one (shapes, dtypes, strides of every output, empty ones
included), the autograd registration, and AOT dispatch with dynamic shapes. Every op's real
implementation also runs under a dispatch mode here (opcheck's schema check), as it does under
FlopCounterMode: nothing inside may rely on autograd recording a graph."""
from __future__ import annotations

import math

import pytest
import torch
from torch.library import opcheck

import normfuse.ops  # noqa: F401  (defines the ops)
import normfuse.ops.flash_norm_attention  # noqa: F401
import normfuse.ops.training  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # (the reference-path warnings)

OPS = torch.ops.normfuse
M, K, N = 12, 32, 48


def _r(gen, *shape, dtype, scale=1.0, grad=False):
    return (scale * torch.randn(*shape, generator=gen)).to(dtype).requires_grad_(grad)


def _check(name: str, args: tuple) -> None:
    # the backward ops run inside the autograd formulas, on tensors without grad; the inference
    # ops (prenorm_linear, prenorm_linear_split, postnorm_linear) have no autograd: the public
    # functions send a call that wants gradients to the training ops (`_fwd`, which have it)
    if not name.endswith("_fwd"):
        args = tuple(_detach(a) for a in args)
    opcheck(getattr(OPS, name).default, args)


def _detach(a):
    if isinstance(a, torch.Tensor):
        return a.detach()
    if isinstance(a, list):
        return [_detach(t) for t in a]
    return a


def test_every_op_is_checked():
    """The cases below cover every op the library defines (a new op needs its case)."""
    assert sorted(OPS) == sorted(CASES_NORMS + CASES_ATTENTION)


CASES_NORMS = ["norm_fwd", "norm_bwd", "prenorm_linear_fwd", "prenorm_linear_bwd",
               "postnorm_linear_fwd", "postnorm_linear_bwd", "postnorm_mlp_fwd",
               "postnorm_mlp_bwd", "prenorm_linear", "prenorm_linear_split", "postnorm_linear"]
CASES_ATTENTION = ["flash_norm_attention_fwd", "flash_norm_attention_bwd"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, pytest.param(torch.float32,
                                                                  marks=pytest.mark.slow)])
@pytest.mark.parametrize("is_ln", [False, True], ids=["rms", "ln"])
def test_norm_and_linear_ops(dtype, is_ln):
    gen = torch.Generator().manual_seed(3)
    r = (lambda *s, **kw: _r(gen, *s, dtype=dtype, **kw))
    x, g, beta = r(M, K, grad=True), r(K, grad=True), r(K, grad=True)
    w, b = r(N, K, scale=0.2, grad=True), r(N, grad=True)
    beta_ = beta if is_ln else None
    eps, off = 1e-6, 0.0

    _check("norm_fwd", (x, g, beta_, eps, off, is_ln))
    _, rstd, mean = OPS.norm_fwd(x, g, beta_, eps, off, is_ln)
    for want_dg, want_db in ((True, is_ln), (False, False)):
        _check("norm_bwd", (r(M, K), x, g, rstd, mean, off, is_ln, want_dg, want_db))
    _check("norm_bwd", (r(M, K), x, None, rstd, mean, off, is_ln, False, False))

    _check("prenorm_linear_fwd", (x, g, beta_, w, b, eps, off, is_ln))
    y, rstd, mean = OPS.prenorm_linear_fwd(x, g, beta_, w, b, eps, off, is_ln)
    _check("prenorm_linear_bwd", (r(M, N), x, g, beta_, w, rstd, mean, eps, off, is_ln, True))
    _check("prenorm_linear_bwd", (r(M, N), x, g, beta_, w, rstd, mean, eps, off, is_ln, False))

    _check("prenorm_linear", (x, g, beta_, [w], [b], eps, off, is_ln, False))
    w2 = r(16, K, scale=0.2, grad=True)
    _check("prenorm_linear_split", (x, g, beta_, [w, w2], [b, None], eps, off, is_ln, False))

    # post-norm: x [M, K] -> h [M, K] through W [K, K] (the residual's shape)
    wk = r(K, K, scale=0.2, grad=True)
    res = r(M, K, grad=True)
    _check("postnorm_linear", (x, wk, g, beta_, None, res, eps, off, is_ln))
    _check("postnorm_linear_fwd", (x, wk, g, beta_, r(K, grad=True), res, eps, off, is_ln))
    z, h, rstd, mean = OPS.postnorm_linear_fwd(x, wk, g, beta_, None, res, eps, off, is_ln)
    _check("postnorm_linear_bwd", (r(M, K), x, wk, g, beta_, h, rstd, mean, eps, off, is_ln,
                                   False))

    # the block: x [M, K] -> K * 2 -> K
    w1, w2b = r(2 * K, K, scale=0.2, grad=True), r(K, 2 * K, scale=0.2, grad=True)
    g1, g2 = r(2 * K, grad=True), r(K, grad=True)
    b1 = r(2 * K, grad=True)
    be1, be2 = (r(2 * K, grad=True), r(K, grad=True)) if is_ln else (None, None)
    fwd = (x, w1, g1, be1, b1, w2b, g2, be2, None, eps, is_ln)
    _check("postnorm_mlp_fwd", fwd)
    _, h1, rstd1, mean1, a, h2, rstd2, mean2 = OPS.postnorm_mlp_fwd(*fwd)
    _check("postnorm_mlp_bwd", (r(M, K), x, w1, g1, be1, w2b, g2, be2, h1, rstd1, mean1, a, h2,
                                rstd2, mean2, eps, is_ln, True, False))


@pytest.mark.parametrize("activation", ["gelu_tanh", "softmax"])
def test_flash_norm_attention_ops(activation):
    gen = torch.Generator().manual_seed(5)
    lens, H, D, L = [3, 0, 6], 2, 16, 8
    B, T = len(lens), sum(lens)
    bf = torch.bfloat16
    x = (1.5 * torch.randn(T, H, D, generator=gen)).to(bf).requires_grad_(True)
    k = (torch.randn(B, L, H, D, generator=gen) / math.sqrt(D)).to(bf).requires_grad_(True)
    v = torch.randn(B, L, H, D, generator=gen).to(bf).requires_grad_(True)
    offs = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32)
    lnw = (1 + 0.3 * torch.randn(H * D, generator=gen)).to(bf).requires_grad_(True)
    rmsw = (1 + 0.3 * torch.randn(H * D, generator=gen)).to(bf).requires_grad_(True)
    scale = 1.0 / math.sqrt(D)
    for save in (False, True):
        _check("flash_norm_attention_fwd", (x, k, v, offs, lnw, None, rmsw, activation, scale,
                                            1e-5, 1e-5, max(lens), save))
    _, mean, rstd, rrms, gsave, lse = OPS.flash_norm_attention_fwd(
        x, k, v, offs, lnw, None, rmsw, activation, scale, 1e-5, 1e-5, max(lens), True)
    _check("flash_norm_attention_bwd", (torch.randn(T, H, D, generator=gen).to(bf), x, k, v, offs,
                                        mean, rstd, rrms, lnw, None, rmsw, gsave, lse, activation,
                                        scale, 1e-5, 1e-5, max(lens)))
