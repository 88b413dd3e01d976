"""lazy-prenorm on kernels that are not pre-norm GEMMs: the IR stays as Triton printed it, a
"missed" remark says why, and nothing raises."""
import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from normfuse.pipeline import run_pipeline


@triton.jit
def vector_add(X, Y, Z, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Z + offs, tl.load(X + offs, mask=offs < N) + tl.load(Y + offs, mask=offs < N), mask=offs < N)


@triton.jit
def softmax_rows(X, Y, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(X + row * N + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < N, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(Y + row * N + tl.arange(0, BLOCK), e / tl.sum(e, 0), mask=tl.arange(0, BLOCK) < N)


@triton.jit
def gemm_scaled_after(X, W, R, Y, K, BLOCK: tl.constexpr):
    # A post-GEMM row scale: nothing to sink (there is no scale on the A operand).
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK, BLOCK], tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(X + offs[:, None] * K + k + offs[None, :])
        b = tl.load(W + (k + offs[:, None]) * BLOCK + offs[None, :])
        acc = tl.dot(a, b, acc)
    acc = acc * tl.load(R + offs)[:, None]
    tl.store(Y + offs[:, None] * BLOCK + offs[None, :], acc)


@triton.jit
def two_dots(X, W, V, Y, K, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK, BLOCK], tl.float32)
    acc2 = tl.zeros([BLOCK, BLOCK], tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(X + offs[:, None] * K + k + offs[None, :])
        acc = tl.dot(a, tl.load(W + (k + offs[:, None]) * BLOCK + offs[None, :]), acc)
        acc2 = tl.dot(a, tl.load(V + (k + offs[:, None]) * BLOCK + offs[None, :]), acc2)
    tl.store(Y + offs[:, None] * BLOCK + offs[None, :], acc + acc2)


@triton.jit
def scale_in_loop_from_k(X, W, Y, K, BLOCK: tl.constexpr):
    # The "row scale" depends on the iteration: it must stay in the loop.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK, BLOCK], tl.float32)
    for k in range(0, K, BLOCK):
        x = tl.load(X + offs[:, None] * K + k + offs[None, :]).to(tl.float32)
        r = tl.sum(x, axis=1)
        a = (x * r[:, None]).to(tl.bfloat16)
        acc = tl.dot(a, tl.load(W + (k + offs[:, None]) * BLOCK + offs[None, :]), acc)
    tl.store(Y + offs[:, None] * BLOCK + offs[None, :], acc)


CASES = [
    (vector_add, {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "N": "i32"}, "no GEMM k-loop"),
    (softmax_rows, {"X": "*fp32", "Y": "*fp32", "N": "i32"}, "no GEMM k-loop"),
    (gemm_scaled_after, {"X": "*bf16", "W": "*bf16", "R": "*fp32", "Y": "*fp32", "K": "i32"},
     "no per-row scale on the A operand"),
    (two_dots, {"X": "*bf16", "W": "*bf16", "V": "*bf16", "Y": "*fp32", "K": "i32"},
     "several tt.dot ops"),
    (scale_in_loop_from_k, {"X": "*bf16", "W": "*bf16", "Y": "*fp32", "K": "i32"},
     "computed inside the k-loop"),
]


@pytest.mark.parametrize("fn,sig,why", CASES, ids=[c[0].__name__ for c in CASES])
def test_non_matching_kernels_are_left_alone(fn, sig, why):
    sig = dict(sig, BLOCK="constexpr")
    ck = triton.compile(ASTSource(fn, sig, constexprs={"BLOCK": 64}), target=GPUTarget("cuda", 90, 32))
    r = run_pipeline(ck.asm["ttir"], "lazy-prenorm")
    assert not r.changed
    assert [x.kind for x in r.remarks] == ["missed"], r.remarks
    assert why in r.remarks[0].message, r.remarks


@triton.jit
def layernorm_permuted_k(X, MEAN, RSTD, G, W, PERM, Y, K, BLOCK: tl.constexpr):
    # LayerNorm with precomputed statistics and g applied in the loop (so the pass would shift by
    # the first K tile's row mean), reading the K tiles in the order PERM gives: the tile's
    # address depends on another load in the loop, so the first tile cannot be loaded before it.
    offs = tl.arange(0, BLOCK)
    mean = tl.load(MEAN + offs)
    rstd = tl.load(RSTD + offs)
    acc = tl.zeros([BLOCK, BLOCK], tl.float32)
    for k in range(0, K // BLOCK):
        kk = tl.load(PERM + k)
        x = tl.load(X + offs[:, None] * K + kk * BLOCK + offs[None, :]).to(tl.float32)
        g = tl.load(G + kk * BLOCK + offs).to(tl.float32)
        a = ((x - mean[:, None]) * rstd[:, None] * g[None, :]).to(tl.bfloat16)
        acc = tl.dot(a, tl.load(W + (kk * BLOCK + offs[:, None]) * BLOCK + offs[None, :]), acc)
    tl.store(Y + offs[:, None] * BLOCK + offs[None, :], acc)


def test_a_miss_found_late_leaves_the_module_untouched():
    """The LayerNorm shift needs the A tile's address at the first trip; here it depends on a
    load in the loop. The pass used to find that out in the middle of its rewrite (a half-edited
    module and an uncaught exception); it is now part of the analysis: a remark, no change."""
    sig = {"X": "*bf16", "MEAN": "*fp32", "RSTD": "*fp32", "G": "*bf16", "W": "*bf16", "PERM": "*i32",
           "Y": "*fp32", "K": "i32", "BLOCK": "constexpr"}
    ck = triton.compile(ASTSource(layernorm_permuted_k, sig, constexprs={"BLOCK": 64}),
                        target=GPUTarget("cuda", 90, 32))
    r = run_pipeline(ck.asm["ttir"], "lazy-prenorm")
    assert not r.changed
    assert [(x.kind, x.message) for x in r.remarks] == [
        ("missed", "the A tile address depends on another load")], r.remarks
    # without the shift nothing needs the first tile: the row scale is sunk
    r = run_pipeline(ck.asm["ttir"], "lazy-prenorm{shift=false}")
    assert r.changed and "LayerNorm row scale sunk" in r.remarks[0].message, r.remarks
