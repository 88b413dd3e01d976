"""normfuse.testing.run_ir against torch on the CPU, op by op: small kernels compiled ahead of time
for sm_90 (no passes), their TTIR run by the interpreter, the results compared with torch."""
from __future__ import annotations

import re

import pytest

np = pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch
import triton
import triton.language as tl

import normfuse
from normfuse.testing import InterpreterError, RaceError, round_bf16, run_ir


def ttir(fn, signature: dict, constexprs: dict | None = None) -> str:
    ck = normfuse.compile(fn, signature=signature, constexprs=constexprs or {}, passes=(),
                          num_warps=4)
    return ck.asm["ttir"]


def nan_f32(*shape):
    return torch.full(shape, float("nan"), dtype=torch.float32)


# ---------------------------------------------------------------------------------------------
# arith / math on floats
# ---------------------------------------------------------------------------------------------

@triton.jit
def _float_ops(X, Y, Out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=1.0)
    y = tl.load(Y + offs, mask=m, other=1.0)
    res = [x + y, x - y, x * y, x / y, -x, tl.maximum(x, y), tl.minimum(x, y),
           tl.sqrt(tl.abs(x)), tl.math.rsqrt(tl.abs(x) + 1), tl.exp(x), tl.exp2(y),
           tl.log(tl.abs(x) + 1), tl.log2(tl.abs(y) + 1), tl.sin(x), tl.cos(y), tl.abs(y),
           tl.math.fma(x, y, x), tl.floor(x), tl.ceil(y), tl.math.erf(x), tl.where(x > y, x, y),
           tl.sqrt_rn(tl.abs(y)), tl.div_rn(y, x), tl.clamp(x, -0.5, 0.5), x % y]
    for i in tl.static_range(len(res)):
        tl.store(Out + i * BLOCK + offs, res[i], mask=m)


def test_float_ops_match_torch():
    torch.manual_seed(0)
    n, B = 13, 16
    x, y = torch.randn(n), torch.randn(n)
    out = nan_f32(25, B)
    run_ir(ttir(_float_ops, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "n": "i32",
                             "BLOCK": "constexpr"}, {"BLOCK": B}), [x, y, out, n], (1,))
    ref = [x + y, x - y, x * y, x / y, -x, torch.maximum(x, y), torch.minimum(x, y),
           x.abs().sqrt(), torch.rsqrt(x.abs() + 1), x.exp(), torch.exp2(y), (x.abs() + 1).log(),
           (y.abs() + 1).log2(), x.sin(), y.cos(), y.abs(), (x.double() * y + x).float(),
           x.floor(), y.ceil(), torch.erf(x), torch.where(x > y, x, y), y.abs().sqrt(), y / x,
           x.clamp(-0.5, 0.5), torch.fmod(x, y)]
    for i, r in enumerate(ref):
        torch.testing.assert_close(out[i, :n], r, rtol=2e-6, atol=1e-6, msg=f"op #{i}")
    assert torch.isnan(out[:, n:]).all()  # masked stores leave the tail alone


# ---------------------------------------------------------------------------------------------
# integers
# ---------------------------------------------------------------------------------------------

@triton.jit
def _int_ops(A, B, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(A + offs)
    b = tl.load(B + offs)
    s = b & 7
    ua = a.to(tl.uint32, bitcast=True)
    ub = b.to(tl.uint32, bitcast=True)
    res = [a + b, a - b, a * b, a // b, a % b, a & b, a | b, a ^ b, a << s, a >> s,
           (ua >> s).to(tl.int32, bitcast=True), (ua // ub).to(tl.int32, bitcast=True),
           (ua % ub).to(tl.int32, bitcast=True), tl.maximum(a, b), tl.minimum(a, b),
           (a < b).to(tl.int32), (ua < ub).to(tl.int32), tl.where(a > 0, a, -a), tl.cdiv(a, b)]
    for i in tl.static_range(len(res)):
        tl.store(Out + i * BLOCK + offs, res[i])


def test_int_ops_match_torch():
    g = torch.Generator().manual_seed(1)
    B = 32
    a = torch.randint(-1000, 1000, (B,), generator=g, dtype=torch.int32)
    b = torch.randint(1, 50, (B,), generator=g, dtype=torch.int32) * torch.where(
        torch.arange(B) % 3 == 0, -1, 1).int()
    a[0], b[0] = 2**31 - 1, 2  # overflow wraps
    out = torch.zeros(19, B, dtype=torch.int32)
    run_ir(ttir(_int_ops, {"A": "*i32", "B": "*i32", "Out": "*i32", "BLOCK": "constexpr"},
                {"BLOCK": B}), [a, b, out], 1)
    A, Bn = a.numpy().astype(np.int64), b.numpy().astype(np.int64)
    ua, ub = A & 0xFFFFFFFF, Bn & 0xFFFFFFFF
    s = Bn & 7
    wrap = lambda v: ((np.asarray(v) + 2**31) % 2**32 - 2**31)  # noqa: E731
    trunc = np.trunc(A / Bn).astype(np.int64)
    ref = [A + Bn, A - Bn, A * Bn, trunc, A - Bn * trunc, A & Bn, A | Bn, A ^ Bn, A << s, A >> s,
           ua >> s, ua // ub, ua % ub, np.maximum(A, Bn), np.minimum(A, Bn), A < Bn, ua < ub,
           np.abs(A), None]
    for i, r in enumerate(ref):
        if r is not None:
            np.testing.assert_array_equal(out[i].numpy(), wrap(r).astype(np.int32), err_msg=f"op #{i}")
    # tl.cdiv(a, b) = (a + b - 1) // b with C division, the sum wrapping in int32 first
    np.testing.assert_array_equal(out[18].numpy(), wrap(np.trunc(wrap(A + Bn - 1) / Bn)).astype(np.int32))


def test_integer_division_by_zero_raises():
    a = torch.ones(32, dtype=torch.int32)
    b = torch.zeros(32, dtype=torch.int32)
    out = torch.zeros(19, 32, dtype=torch.int32)
    with pytest.raises(InterpreterError, match="division by zero"):
        run_ir(ttir(_int_ops, {"A": "*i32", "B": "*i32", "Out": "*i32", "BLOCK": "constexpr"},
                    {"BLOCK": 32}), [a, b, out], 1)


# ---------------------------------------------------------------------------------------------
# casts and bf16
# ---------------------------------------------------------------------------------------------

@triton.jit
def _casts(X, XB, OB, OH, OI, OF, OS, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    xb = tl.load(XB + offs)
    tl.store(OB + offs, x.to(tl.bfloat16))
    tl.store(OB + BLOCK + offs, xb * xb + xb)  # bf16 arithmetic, rounded after each op
    tl.store(OB + 2 * BLOCK + offs, (x * 3.0).to(tl.bfloat16) / xb)
    tl.store(OH + offs, x.to(tl.float16))
    tl.store(OI + offs, x.to(tl.int32))
    tl.store(OF + offs, (x.to(tl.int32) * 7).to(tl.float32))
    tl.store(OS + offs, xb.to(tl.float32))


def test_casts_and_bf16_arithmetic_match_torch():
    torch.manual_seed(2)
    B = 64
    x = torch.randn(B) * 100
    # ties: bf16 keeps 8 significant bits; these sit exactly between two bf16 neighbours
    x[:4] = torch.tensor([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 256.5])
    xb = torch.randn(B).bfloat16()
    ob = torch.zeros(3, B, dtype=torch.bfloat16)
    oh = torch.zeros(B, dtype=torch.float16)
    oi = torch.zeros(B, dtype=torch.int32)
    of = torch.zeros(B)
    os_ = torch.zeros(B)
    run_ir(ttir(_casts, {"X": "*fp32", "XB": "*bf16", "OB": "*bf16", "OH": "*fp16", "OI": "*i32",
                         "OF": "*fp32", "OS": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": B}),
           [x, xb, ob, oh, oi, of, os_], 1)
    assert torch.equal(ob[0], x.bfloat16())
    assert torch.equal(ob[1], xb * xb + xb)
    assert torch.equal(ob[2], (x * 3.0).bfloat16() / xb)
    assert torch.equal(oh, x.half())
    assert torch.equal(oi, x.to(torch.int32))
    assert torch.equal(of, (x.to(torch.int32) * 7).float())
    assert torch.equal(os_, xb.float())


def test_round_bf16_matches_torch_on_many_values():
    v = torch.cat([torch.randn(4096) * 10.0 ** torch.randint(-30, 30, (4096,)).float(),
                   torch.tensor([float("inf"), -float("inf"), 3.3895314e38, 0.0, -0.0])])
    got = round_bf16(v.numpy())
    assert np.array_equal(got, v.bfloat16().float().numpy())
    assert np.isnan(round_bf16(np.array([np.nan], np.float32)))[0]


# ---------------------------------------------------------------------------------------------
# 2-D pointers, masks, program ids over a 3-D grid
# ---------------------------------------------------------------------------------------------

@triton.jit
def _copy_tiles(X, Y, M, N, stride_x, stride_y, BM: tl.constexpr, BN: tl.constexpr):
    pm, pn, pz = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rows = pm * BM + tl.arange(0, BM)
    cols = pn * BN + tl.arange(0, BN)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * stride_x + cols[None, :], mask=m, other=-7.0)
    tag = (pz * 1000 + tl.num_programs(0) * 100 + tl.num_programs(1) * 10 + tl.num_programs(2))
    tl.store(Y + pz * M * stride_y + rows[:, None] * stride_y + cols[None, :], x + tag.to(tl.float32),
             mask=m)


def test_masked_2d_tiles_over_a_3d_grid():
    torch.manual_seed(3)
    M, N = 37, 21
    x = torch.randn(M, 24)  # stride 24 > N: the columns past N are never read
    y = nan_f32(2, M, N + 3)
    run_ir(ttir(_copy_tiles, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "stride_x": "i32",
                              "stride_y": "i32", "BM": "constexpr", "BN": "constexpr"},
                {"BM": 16, "BN": 8}), [x, y, M, N, 24, N + 3], (3, 3, 2))
    for z in range(2):
        torch.testing.assert_close(y[z, :, :N], x[:, :N] + float(z * 1000 + 332), rtol=0, atol=0)
    assert torch.isnan(y[:, :, N:]).all()


def test_out_of_bounds_access_raises():
    x = torch.randn(30, 24)  # too small for M = 37
    y = nan_f32(2, 37, 24)
    with pytest.raises(InterpreterError, match="outside every buffer"):
        run_ir(ttir(_copy_tiles, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32",
                                  "stride_x": "i32", "stride_y": "i32", "BM": "constexpr",
                                  "BN": "constexpr"}, {"BM": 16, "BN": 8}),
               [x, y, 37, 21, 24, 24], (3, 3, 2))


# ---------------------------------------------------------------------------------------------
# reductions, scans, shapes
# ---------------------------------------------------------------------------------------------

@triton.jit
def _reduce(X, Out, IOut, R: tl.constexpr, C: tl.constexpr):
    x = tl.load(X + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    o = tl.arange(0, R)
    p = tl.arange(0, C)
    tl.store(Out + o, tl.sum(x, axis=1))
    tl.store(Out + R + p, tl.max(x, axis=0))
    tl.store(Out + R + C + o, tl.min(x, axis=1))
    tl.store(Out + 2 * R + C + p, tl.sum(x * x, axis=0))
    tl.store(IOut + o, tl.argmax(x, axis=1))
    tl.store(IOut + R + p, tl.argmin(x, axis=0))
    tl.store(Out + 2 * R + 2 * C + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :],
             tl.cumsum(x, axis=1))
    t = tl.trans(x)
    tl.store(Out + 2 * R + 2 * C + R * C + tl.arange(0, C)[:, None] * R + tl.arange(0, R)[None, :], t)
    a, b = tl.split(tl.reshape(x, (R, C // 2, 2)))
    j = tl.join(b, a)
    tl.store(Out + 2 * R + 2 * C + 2 * R * C + tl.arange(0, R * C), tl.reshape(j, (R * C,)))


def test_reduce_scan_and_shape_ops_match_torch():
    torch.manual_seed(4)
    R, C = 8, 16
    x = torch.randn(R, C)
    out = nan_f32(2 * R + 2 * C + 3 * R * C)
    iout = torch.zeros(R + C, dtype=torch.int32)
    run_ir(ttir(_reduce, {"X": "*fp32", "Out": "*fp32", "IOut": "*i32", "R": "constexpr",
                          "C": "constexpr"}, {"R": R, "C": C}), [x, out, iout], 1)
    k = 0
    for ref in (x.sum(1), x.max(0).values, x.min(1).values, (x * x).sum(0)):
        torch.testing.assert_close(out[k:k + ref.numel()], ref, rtol=1e-6, atol=1e-6)
        k += ref.numel()
    assert torch.equal(iout[:R], x.argmax(1).int())
    assert torch.equal(iout[R:], x.argmin(0).int())
    torch.testing.assert_close(out[k:k + R * C].view(R, C), x.cumsum(1), rtol=1e-6, atol=1e-6)
    assert torch.equal(out[k + R * C:k + 2 * R * C].view(C, R), x.t())
    pairs = x.view(R, C // 2, 2)
    assert torch.equal(out[k + 2 * R * C:].view(R, C // 2, 2), torch.stack([pairs[..., 1], pairs[..., 0]], -1))


# ---------------------------------------------------------------------------------------------
# tt.dot
# ---------------------------------------------------------------------------------------------

@triton.jit
def _dot(A, B, C, Out, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PREC: tl.constexpr):
    a = tl.load(A + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(B + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    c = tl.load(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Out + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :],
             tl.dot(a, b, c, input_precision=PREC))


@pytest.mark.parametrize("dtype, prec", [("bf16", "tf32"), ("fp16", "tf32"), ("fp32", "ieee"),
                                         ("fp32", "tf32")])
def test_dot_accumulates_in_fp32(dtype, prec):
    torch.manual_seed(5)
    M, N, K = 32, 16, 64
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    a, b = torch.randn(M, K).to(tdt), torch.randn(K, N).to(tdt)
    c = torch.randn(M, N)
    out = nan_f32(M, N)
    run_ir(ttir(_dot, {"A": f"*{dtype}", "B": f"*{dtype}", "C": "*fp32", "Out": "*fp32",
                       "M": "constexpr", "N": "constexpr", "K": "constexpr", "PREC": "constexpr"},
                {"M": M, "N": N, "K": K, "PREC": prec}), [a, b, c, out], 1)
    ad, bd = a.double(), b.double()
    if dtype == "fp32" and prec == "tf32":  # inputs rounded to 10 mantissa bits
        tf = lambda t: torch.from_numpy(  # noqa: E731
            ((t.float().numpy().view(np.uint32).astype(np.uint64) + 0x1000) & 0xFFFFE000)
            .astype(np.uint32).view(np.float32)).double()
        ad, bd = tf(a), tf(b)
        assert not torch.allclose(out.double(), a.double() @ b.double() + c.double(), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out.double(), ad @ bd + c.double(), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# scf.for / scf.if / scf.while, persistent loops
# ---------------------------------------------------------------------------------------------

@triton.jit
def _control(X, Out, n, NPROG: tl.constexpr):
    pid = tl.program_id(0)
    for t in tl.range(pid, 10, NPROG):  # persistent walk
        i = 0
        s = 0.0
        while i < n + t:  # scf.while
            s += tl.load(X + i)
            i += 2
        if t % 3 == 0:  # scf.if with results
            s = -s
        tl.store(Out + t, s)


def test_control_flow_matches_python():
    x = torch.arange(40, dtype=torch.float32)
    out = nan_f32(10)
    run_ir(ttir(_control, {"X": "*fp32", "Out": "*fp32", "n": "i32", "NPROG": "constexpr"},
                {"NPROG": 3}), [x, out, 5], (3,))
    ref = []
    for t in range(10):
        s = float(sum(x[i] for i in range(0, 5 + t, 2)))
        ref.append(-s if t % 3 == 0 else s)
    assert out.tolist() == ref


# ---------------------------------------------------------------------------------------------
# tensor descriptors (TMA) and block pointers
# ---------------------------------------------------------------------------------------------

@triton.jit
def _desc_copy(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(X, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    t = xd.load([pm * BM, pn * BN])
    yd.store([pm * BM, pn * BN], t * 2 + 1)


def test_tensor_descriptor_loads_zero_fill_and_stores_in_bounds():
    torch.manual_seed(6)
    M, N = 20, 24
    x = torch.randn(M, N).bfloat16()
    y = torch.full((M, N), float("nan")).bfloat16()
    run_ir(ttir(_desc_copy, {"X": "*bf16", "Y": "*bf16", "M": "i32", "N": "i32", "BM": "constexpr",
                             "BN": "constexpr"}, {"BM": 16, "BN": 16}), [x, y, M, N], (2, 2))
    assert torch.equal(y, x * 2 + 1)


def test_tensor_descriptor_checks_tma_alignment():
    x = torch.randn(20, 12).bfloat16()  # rows of 24 bytes: not a multiple of 16
    y = torch.zeros(20, 12).bfloat16()
    with pytest.raises(InterpreterError, match="TMA needs"):
        run_ir(ttir(_desc_copy, {"X": "*bf16", "Y": "*bf16", "M": "i32", "N": "i32",
                                 "BM": "constexpr", "BN": "constexpr"}, {"BM": 16, "BN": 16}),
               [x, y, 20, 12], (2, 1))


# Triton rewrites block pointers away before its TTIR stage; this one is written by hand.
BLOCK_PTR_IR = """
module {
  tt.func public @block_copy(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %M: i32, %N: i32) {
    %c0 = arith.constant 0 : i32
    %c4 = arith.constant 4 : i32
    %c1_i64 = arith.constant 1 : i64
    %m = arith.extsi %M : i32 to i64
    %n = arith.extsi %N : i32 to i64
    %pid = tt.get_program_id x : i32
    %row = arith.muli %pid, %c4 : i32
    %x0 = tt.make_tensor_ptr %X, [%m, %n], [%n, %c1_i64], [%row, %c0] {order = array<i32: 1, 0>} : <tensor<4x8xf32>>
    %x1 = tt.advance %x0, [%c0, %c4] : <tensor<4x8xf32>>
    %a = tt.load %x1 {boundaryCheck = array<i32: 0, 1>, padding = 2 : i32} : !tt.ptr<tensor<4x8xf32>>
    %y0 = tt.make_tensor_ptr %Y, [%m, %n], [%n, %c1_i64], [%row, %c0] {order = array<i32: 1, 0>} : <tensor<4x8xf32>>
    tt.store %y0, %a {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<4x8xf32>>
    tt.return
  }
}
"""


def test_block_pointers_advance_pad_and_check_bounds():
    M, N = 7, 10
    x = torch.arange(M * N, dtype=torch.float32).view(M, N)
    y = torch.full((M, N), -1.0)
    run_ir(BLOCK_PTR_IR, [x, y, M, N], (2,))
    want = torch.full((M, N), float("nan"))
    want[:, :6] = x[:, 4:]  # columns 4..11 of X: 10 and 11 are out of bounds -> NaN padding
    want[:, 6:8] = float("nan")
    want[:, 8:] = -1.0  # the store's block covers columns 0..7 only
    assert torch.equal(torch.nan_to_num(y, 99.0), torch.nan_to_num(want, 99.0))


# ---------------------------------------------------------------------------------------------
# atomics, inline asm, asserts
# ---------------------------------------------------------------------------------------------

@triton.jit
def _atomics(X, H, Mx, Lock, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0)
    tl.atomic_add(H + (x % 4), 1, mask=m)  # several lanes hit one bin
    tl.atomic_max(Mx, tl.max(tl.where(m, x, -1), axis=0))
    tl.atomic_cas(Lock, 0, tl.program_id(0) + 1)  # only the first program wins


def test_atomics_match_numpy():
    x = torch.randint(0, 100, (45,), dtype=torch.int32, generator=torch.Generator().manual_seed(7))
    h = torch.zeros(4, dtype=torch.int32)
    mx = torch.zeros(1, dtype=torch.int32)
    lock = torch.zeros(1, dtype=torch.int32)
    run_ir(ttir(_atomics, {"X": "*i32", "H": "*i32", "Mx": "*i32", "Lock": "*i32", "n": "i32",
                           "BLOCK": "constexpr"}, {"BLOCK": 16}), [x, h, mx, lock, 45], (3,))
    assert h.tolist() == np.bincount(x.numpy() % 4, minlength=4).tolist()
    assert mx.item() == x.max().item()
    assert lock.item() == 1


@triton.jit
def _asm(X, Y, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    z = tl.inline_asm_elementwise("{ .reg .f32 %t; mul.f32 %t, $1, $2; add.f32 $0, %t, $1; }",
                                  "=f,f,f", [x, y], dtype=tl.float32, is_pure=True, pack=1)
    r = tl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank;", "=r,r", [offs], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(Out + offs, z + r.to(tl.float32))


@triton.jit
def _asm_unknown(X, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Out + offs, tl.inline_asm_elementwise("ex2.approx.f32 $0, $1;", "=f,f", [x],
                                                   dtype=tl.float32, is_pure=True, pack=1))


def test_inline_asm_is_evaluated_from_the_string():
    x, y = torch.randn(16), torch.randn(16)
    out = nan_f32(16)
    run_ir(ttir(_asm, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "BLOCK": "constexpr"},
                {"BLOCK": 16}), [x, y, out], 1)
    torch.testing.assert_close(out, x * y + x, rtol=1e-6, atol=1e-6)
    with pytest.raises(InterpreterError, match="ex2.approx.f32"):
        run_ir(ttir(_asm_unknown, {"X": "*fp32", "Out": "*fp32", "BLOCK": "constexpr"},
                    {"BLOCK": 16}), [x, out], 1)


@triton.jit
def _asm_div(X, Y, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(Out + offs, tl.inline_asm_elementwise("div.approx.f32 $0, $1, $2;", "=f,f,f",
                                                   [x, y], dtype=tl.float32, is_pure=True,
                                                   pack=1))
    tl.store(Out + BLOCK + offs, tl.inline_asm_elementwise("div.full.f32 $0, $1, $2;", "=f,f,f",
                                                           [x, y], dtype=tl.float32,
                                                           is_pure=True, pack=1))


def test_inline_asm_approximate_division():
    """div.approx.f32 as the PTX ISA defines it: a times 1 / b, which is 0 for |b| in
    (2^126, 2^128) and for infinity, with b's sign (so x / inf is a signed zero, inf / 2^127
    NaN), and the quotient at |b| = 2^126; div.full.f32 is the quotient over the whole range
    (the interpreter's IEEE one)."""
    big = 2.0 ** 127
    x = torch.tensor([3.0, -6.0, 1.0, -2.0, 5.0, float("inf"), 2.0, 0.5] * 2)
    y = torch.tensor([2.0, 4.0, big, float("inf"), -big, big, 2.0 ** 126, -0.25] * 2)
    out = nan_f32(32)
    run_ir(ttir(_asm_div, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "BLOCK": "constexpr"},
                {"BLOCK": 16}), [x, y, out], 1)
    approx, full = out[:16], out[16:]
    want = torch.tensor([1.5, -1.5, 0.0, -0.0, -0.0, float("nan"), 2.0 ** -125, -2.0] * 2)
    torch.testing.assert_close(approx, want, equal_nan=True, rtol=0, atol=0)
    assert torch.equal(torch.signbit(approx[:5]), torch.tensor([False, True, False, True, True]))
    torch.testing.assert_close(full, x / y, equal_nan=True, rtol=0, atol=0)


@triton.jit
def _asm_tanh(X, Out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Out + offs, tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f",
                                                   [tl.load(X + offs)], dtype=tl.float32,
                                                   is_pure=True, pack=1))


def test_inline_asm_approximate_tanh():
    """tanh.approx.f32 (MUFU.TANH) at the PTX ISA's error bound: every finite input's tanh shrunk
    toward zero by TANH_APPROX_REL_ERR (2^-11) relative, saturated ones included (so that
    1 + tanh(u) near u = -inf is as far off as the ISA lets the GPU be), +-1 exactly at +-inf, the
    sign of zero kept, NaN kept."""
    from normfuse.testing.ptx import TANH_APPROX_REL_ERR
    assert TANH_APPROX_REL_ERR == 2.0 ** -11
    x = torch.tensor([0.0, -0.0, 0.5, -0.5, 3.0, -20.0, float("inf"), float("-inf"),
                      1e-3, -8.0, 2.0, float("nan"), 1.0, -1.0, 0.25, 10.0])
    out = nan_f32(16)
    run_ir(ttir(_asm_tanh, {"X": "*fp32", "Out": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 16}),
           [x, out], 1)
    assert torch.equal(torch.signbit(out[:2]), torch.tensor([False, True])) and not out[:2].any()
    assert float(out[6]) == 1.0 and float(out[7]) == -1.0 and torch.isnan(out[11])
    finite = [i for i in range(16) if i not in (0, 1, 6, 7, 11)]
    exact = torch.tanh(x[finite].double())
    got = out[finite].double()
    assert torch.equal(torch.sign(got), torch.sign(exact))
    assert (got.abs() < exact.abs()).all()  # (toward zero, every one)
    rel = (exact - got).abs() / exact.abs()
    assert (rel > 0.99 * TANH_APPROX_REL_ERR).all() and (rel < 1.01 * TANH_APPROX_REL_ERR).all()
    # 1 + tanh(-20): the bound's error alone (the exact value, 8e-18, is below it)
    assert float(out[5]) + 1 == pytest.approx(TANH_APPROX_REL_ERR, rel=0.01)


def test_inline_asm_tanh_other_types_refused():
    @triton.jit
    def k(X, Out, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs).to(tl.float16)
        tl.store(Out + offs, tl.inline_asm_elementwise("tanh.approx.f16 $0, $1;", "=h,h", [x],
                                                       dtype=tl.float16, is_pure=True, pack=1))
    with pytest.raises(InterpreterError, match="tanh"):
        run_ir(ttir(k, {"X": "*fp32", "Out": "*fp16", "BLOCK": "constexpr"}, {"BLOCK": 16}),
               [torch.zeros(16), torch.zeros(16, dtype=torch.float16)], 1)


@triton.jit
def _asm_lanes(X, Y, Out, BLOCK: tl.constexpr):
    # per element: add 3 to x until it reaches y (lanes leave the loop at different rounds), then
    # pack (x, y) into 64 bits, unpack, and return x + y
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    z = tl.inline_asm_elementwise(
        "{ .reg .pred %p; .reg .b32 %x, %lo, %hi; .reg .b64 %w; mov.u32 %x, $1; "
        "LOOP: setp.ge.s32 %p, %x, $2; @%p bra DONE; add.s32 %x, %x, 3; bra LOOP; "
        "DONE: mov.b64 %w, {%x, $2}; mov.b64 {%lo, %hi}, %w; add.u32 $0, %lo, %hi; }",
        "=r,r,r", [x, y], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(Out + offs, z)


def test_inline_asm_branches_predicates_and_register_pairs():
    """Labels, setp, guarded and plain bra, divergent lanes, mov.b64 pack/unpack."""
    x = torch.randint(-20, 20, (16,), dtype=torch.int32)
    y = torch.randint(-20, 20, (16,), dtype=torch.int32)
    out = torch.zeros(16, dtype=torch.int32)
    run_ir(ttir(_asm_lanes, {"X": "*i32", "Y": "*i32", "Out": "*i32", "BLOCK": "constexpr"},
                {"BLOCK": 16}), [x, y, out], 1)
    xs = torch.where(x >= y, x, x + 3 * ((y - x + 2) // 3))
    assert torch.equal(out, xs + y)


def test_unknown_op_is_named_before_running():
    text = """
module {
  tt.func public @k(%X: !tt.ptr<i32>) {
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %h = tt.histogram %r : tensor<16xi32> -> tensor<4xi32>
    tt.return
  }
}
"""
    with pytest.raises(InterpreterError, match="does not support 'tt.histogram'"):
        run_ir(text, [torch.zeros(4, dtype=torch.int32)], 1)


def test_argument_checks():
    text = ttir(_float_ops, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "n": "i32",
                             "BLOCK": "constexpr"}, {"BLOCK": 16})
    x = torch.randn(16)
    with pytest.raises(InterpreterError, match="takes 4 arguments"):
        run_ir(text, [x, x, x], 1)
    with pytest.raises(InterpreterError, match="reads it as f32, the array holds bfloat16"):
        run_ir(text, [x.bfloat16(), x, nan_f32(25, 16), 16], 1)
    with pytest.raises(InterpreterError, match="overlaps"):
        big = torch.zeros(25 * 16 + 8)
        run_ir(text, [big[:16], x, big[8:], 16], 1)
    with pytest.raises(InterpreterError, match="does not fit i32"):
        run_ir(text, [x, x, nan_f32(25, 16), 2**40], 1)
    with pytest.raises(InterpreterError, match="normfuse.cluster_dims"):
        run_ir(text, [x, x, nan_f32(25, 16), 16], 1, num_ctas=2)


# ---------------------------------------------------------------------------------------------
# Clusters: barrier phases, distributed shared memory, races, deadlocks
# ---------------------------------------------------------------------------------------------

# Each CTA of a 2-CTA cluster writes pid + 1 into its slot (the last 64 bytes of its dynamic
# shared memory, past Triton's allocation), crosses the cluster barrier, reads the PEER's slot
# (rank ^ 1) through mapa + ld.shared::cluster, and stores it. @@BARRIER@@ and @@PEER@@ let the
# tests break it.
CLUSTER_IR = """
module {
  tt.func public @swap(%Out: !tt.ptr<f32>) attributes {normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 64 : i32} {
    %pid = tt.get_program_id x : i32
    %r = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %p1 = arith.sitofp %pid : i32 to f32
    %one = arith.constant 1.000000e+00 : f32
    %v = arith.addf %p1, %one : f32
    %vs = tt.splat %v : f32 -> tensor<16xf32>
    %w = tt.elementwise_inline_asm "{ .reg .b32 %a, %q; mov.u32 %a, global_smem; mov.u32 %q, %dynamic_smem_size; add.u32 %a, %a, %q; sub.u32 %a, %a, 64; mad.lo.u32 %a, $1, 4, %a; st.shared.f32 [%a], $2; mov.u32 $0, 0; }" {constraints = "=r,r,f", packed_element = 1 : i32, pure = false} %r, %vs : tensor<16xi32>, tensor<16xf32> -> tensor<16xi32>
    %b = tt.elementwise_inline_asm "@@BARRIER@@ mov.u32 $0, 0;" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %pid : i32 -> i32
    %got = tt.elementwise_inline_asm "{ .reg .b32 %a, %q, %k, %p; mov.u32 %a, global_smem; mov.u32 %q, %dynamic_smem_size; add.u32 %a, %a, %q; sub.u32 %a, %a, 64; mad.lo.u32 %a, $1, 4, %a; mov.u32 %k, %cluster_ctarank; @@PEER@@; mapa.shared::cluster.u32 %p, %a, %k; ld.shared::cluster.f32 $0, [%p]; }" {constraints = "=f,r", packed_element = 1 : i32, pure = false} %r : tensor<16xi32> -> tensor<16xf32>
    %e = tt.elementwise_inline_asm "@@END@@ mov.u32 $0, 0;" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %pid : i32 -> i32
    %c16 = arith.constant 16 : i32
    %base = arith.muli %pid, %c16 : i32
    %o = tt.splat %base : i32 -> tensor<16xi32>
    %offs = arith.addi %o, %r : tensor<16xi32>
    %ptrs = tt.splat %Out : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %ptr = tt.addptr %ptrs, %offs : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %ptr, %got : tensor<16x!tt.ptr<f32>>
    %f = tt.elementwise_inline_asm "@@EXIT@@ mov.u32 $0, 0;" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %pid : i32 -> i32
    tt.return
  }
}
"""
_SYNC = "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;"


def _cluster_ir(barrier=_SYNC, peer="xor.b32 %k, %k, 1", end="barrier.cluster.arrive.release;",
                exit_="barrier.cluster.wait.acquire;"):
    return (CLUSTER_IR.replace("@@BARRIER@@", barrier).replace("@@PEER@@", peer)
            .replace("@@END@@", end).replace("@@EXIT@@", exit_))


def test_cluster_exchange_through_distributed_shared_memory():
    out = nan_f32(6, 16)
    run_ir(_cluster_ir(), [out], (3,), num_ctas=2)  # 3 clusters of 2 CTAs
    assert out[:, 0].tolist() == [2, 1, 4, 3, 6, 5]  # each CTA holds its peer's pid + 1
    assert (out == out[:, :1]).all()


def test_cluster_missing_barrier_is_a_race():
    with pytest.raises((RaceError, InterpreterError), match="no CTA has written|no barrier"):
        run_ir(_cluster_ir(barrier=""), [nan_f32(6, 16)], (3,), num_ctas=2)


def test_cluster_rank_outside_the_cluster_raises():
    with pytest.raises(InterpreterError, match="rank 2 is outside the 2-CTA cluster"):
        run_ir(_cluster_ir(peer="add.u32 %k, %k, 1"), [nan_f32(6, 16)], (3,), num_ctas=2)


def test_cluster_exit_before_peers_read_is_a_race():
    with pytest.raises(RaceError, match="exited|exits"):
        run_ir(_cluster_ir(end="", exit_=""), [nan_f32(6, 16)], (3,), num_ctas=2)


HANG_IR = """
module {
  tt.func public @hang() attributes {normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 0 : i32} {
    %pid = tt.get_program_id x : i32
    %c2 = arith.constant 2 : i32
    %c0 = arith.constant 0 : i32
    %r = arith.remsi %pid, %c2 : i32
    %is0 = arith.cmpi eq, %r, %c0 : i32
    scf.if %is0 {
      %b = tt.elementwise_inline_asm "barrier.cluster.arrive.release; barrier.cluster.wait.acquire; mov.u32 $0, 0;" {constraints = "=r,r", packed_element = 1 : i32, pure = false} %pid : i32 -> i32
    }
    tt.return
  }
}
"""


def test_cluster_barrier_one_cta_never_reaches_is_a_deadlock():
    with pytest.raises(InterpreterError, match="deadlock in a 2-CTA cluster: CTA 0 waits for phase 1"):
        run_ir(HANG_IR, [], (1,), num_ctas=2)


def test_cluster_size_must_match_the_kernel():
    with pytest.raises(InterpreterError, match="run it with num_ctas=2"):
        run_ir(_cluster_ir(), [nan_f32(6, 16)], (3,))


def test_barrier_inside_a_tensor_asm_is_refused():
    text = _cluster_ir().replace(
        '"=r,r", packed_element = 1 : i32, pure = false} %pid : i32 -> i32\n    %got',
        '"=r,r", packed_element = 1 : i32, pure = false} %r : tensor<16xi32> -> tensor<16xi32>\n    %got')
    assert text != _cluster_ir()
    with pytest.raises(InterpreterError, match="once per element"):
        run_ir(text, [nan_f32(6, 16)], (3,), num_ctas=2)


# ---------------------------------------------------------------------------------------------
# tt.call, and check_pass_numerics on a kernel no pass matches
# ---------------------------------------------------------------------------------------------

@triton.jit(noinline=True)
def _scaled(X, Out, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Out + offs, tl.load(X + offs) * s + 1.0)


@triton.jit
def _caller(X, Out, s, BLOCK: tl.constexpr):
    _scaled(X, Out, s, BLOCK)


def test_call_of_a_noinline_function():
    text = ttir(_caller, {"X": "*fp32", "Out": "*fp32", "s": "fp32", "BLOCK": "constexpr"},
                {"BLOCK": 16})
    assert "tt.call" in text
    x = torch.randn(16)
    out = nan_f32(16)
    run_ir(text, [x, out, 2.5], 1)
    torch.testing.assert_close(out, x * 2.5 + 1.0, rtol=1e-6, atol=1e-6)


def test_check_pass_numerics_on_a_kernel_no_pass_matches():
    from normfuse.testing import ALL_PASSES, check_pass_numerics, default_pipeline
    assert default_pipeline(_caller) == ALL_PASSES
    x = torch.randn(16)
    res = check_pass_numerics(_caller, {"X": x, "Out": nan_f32(16), "s": 3.0},
                              constexprs={"BLOCK": 16}, grid=(1,), num_warps=4)
    assert not res.changed and not res.applied and res.num_ctas == 1
    assert res.max_rel_diff == 0.0 and set(res.diffs) == {"X", "Out"}
    torch.testing.assert_close(res.after["Out"], x * 3.0 + 1.0, rtol=1e-6, atol=1e-6)
    assert torch.isnan(res.before["Out"]).sum() == 0


def test_only_untrusted_text_is_parsed_in_the_guards_child_first(monkeypatch):
    """`trusted=True` (a compiled kernel's own text): parsed in this process only; without it
    (any other text: a lit input, a hand-edited kernel) the guard's crash preflight parses it in a
    forked child first, as normfuse.ir.load does."""
    from normfuse.ir import bridge
    from normfuse.testing import cluster_dims, interpreter
    text = ttir(_copy_tiles, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "stride_x": "i32",
                              "stride_y": "i32", "BM": "constexpr", "BN": "constexpr"},
                {"BM": 16, "BN": 8})
    preflights = []
    real = bridge._preflight
    monkeypatch.setattr(bridge, "_preflight",
                        lambda t, *a, **k: (preflights.append(t), real(t, *a, **k))[1])
    interpreter._load.cache_clear()  # (a parse cached by an earlier test would hide it)
    x, y = torch.randn(16, 8), nan_f32(1, 16, 8)
    assert cluster_dims(text, trusted=True) == 1
    run_ir(text, [x, y, 16, 8, 8, 8], (1,), trusted=True)
    assert preflights == []
    torch.testing.assert_close(y[0], x + 111.0, rtol=0, atol=0)  # tag: 1, 1, 1 programs
    y = nan_f32(1, 16, 8)
    run_ir(text, [x, y, 16, 8, 8, 8], (1,))
    assert preflights == [text]
    torch.testing.assert_close(y[0], x + 111.0, rtol=0, atol=0)  # tag: 1, 1, 1 programs


def test_out_of_bounds_names_what_the_host_passed():
    """A read past an argument's end says which element type the host's tensor had and how wide
    the kernel's elements are: a kernel compiled for other arguments than it was given (its
    pointer f32 where the host passed a bfloat16 vector) reads past the end, and the message
    says so, instead of only where."""
    import numpy as np
    from normfuse.testing.memory import Buffer, Space
    sp = Space("global")
    sp.add(Buffer("argument g", 1 << 32, np.zeros(384, np.uint8), holds="bfloat16"))
    with pytest.raises(InterpreterError, match="the host passed bfloat16 there, the kernel reads "
                                               "4-byte elements"):
        sp.load((1 << 32) + 4 * np.arange(128), None, "f32")
    sp.load((1 << 32) + 2 * np.arange(192), None, "bf16")  # (the whole vector, as passed)
