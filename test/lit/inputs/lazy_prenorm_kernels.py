"""Source of the TTIR in test/lit/lazy-prenorm.mlir: small kernels, positive and negative.

Regenerate the lit file (CHECK lines live in make_lazy_prenorm_lit.py; either script does it):
    PYTHONPATH=python python3 test/lit/inputs/make_lazy_prenorm_lit.py [--check]
"""
import sys

import triton
import triton.language as tl

BM, BN, BK = 64, 32, 32


@triton.jit
def _stats(X, offs_m, offs_k, stride, K, BK: tl.constexpr, BM: tl.constexpr):
    ss = tl.zeros([BM], dtype=tl.float32)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        ss += tl.sum(x * x, axis=1)
        p += BK
    return ss


@triton.jit
def rms_weight_in_loop(X, G, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        g = tl.load(G + k * BK + offs_k).to(tl.float32)
        a = (x * rstd[:, None] * g[None, :]).to(tl.bfloat16)
        acc = tl.dot(a, tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def rms_weight_folded(X, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def layernorm(X, G, B, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    s1 = tl.zeros([BM], dtype=tl.float32)
    s2 = tl.zeros([BM], dtype=tl.float32)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        s1 += tl.sum(x, axis=1)
        s2 += tl.sum(x * x, axis=1)
        p += BK
    mean = s1 / K
    rstd = 1.0 / tl.sqrt(s2 / K - mean * mean + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        g = tl.load(G + k * BK + offs_k).to(tl.float32)
        beta = tl.load(B + k * BK + offs_k).to(tl.float32)
        a = ((x - mean[:, None]) * rstd[:, None] * g[None, :] + beta[None, :]).to(tl.bfloat16)
        acc = tl.dot(a, tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def layernorm_folded(X, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    s1 = tl.zeros([BM], dtype=tl.float32)
    s2 = tl.zeros([BM], dtype=tl.float32)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p).to(tl.float32)
        s1 += tl.sum(x, axis=1)
        s2 += tl.sum(x * x, axis=1)
        p += BK
    mean = s1 / K
    rstd = 1.0 / tl.sqrt(s2 / K - mean * mean + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p).to(tl.float32)
        acc = tl.dot(((x - mean[:, None]) * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def rms_precomputed_rstd(X, R, W, Y, K, stride, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rstd = tl.load(R + offs_m)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p).to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def rms_residual_accumulator(X, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.load(Y + offs_m[:, None] * BN + offs_n[None, :])
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def rms_block_pointers(X, W, Y, M, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    xs = tl.make_block_ptr(X, (M, K), (stride, 1), (0, 0), (BM, BK), (1, 0))
    ss = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(xs, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        ss += tl.sum(x * x, axis=1)
        xs = tl.advance(xs, (0, BK))
    rstd = 1.0 / tl.sqrt(ss / K + eps)
    xg = tl.make_block_ptr(X, (M, K), (stride, 1), (0, 0), (BM, BK), (1, 0))
    wg = tl.make_block_ptr(W, (K, BN), (1, stride), (0, 0), (BK, BN), (0, 1))
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(xg, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(wg, boundary_check=(0, 1)), acc)
        xg = tl.advance(xg, (0, BK))
        wg = tl.advance(wg, (BK, 0))
    tl.store(Y + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@triton.jit
def rms_divide_by_rms(X, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # x / rms instead of x * rstd, over offsets instead of tile indices
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    ss = tl.zeros([BM], dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(X + offs_m[:, None] * stride + k0 + offs_k[None, :]).to(tl.float32)
        ss += tl.sum(x * x, axis=1)
    rms = tl.sqrt(ss / K + eps)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(X + offs_m[:, None] * stride + k0 + offs_k[None, :]).to(tl.float32)
        w = tl.load(W + offs_n[None, :] * stride + k0 + offs_k[:, None])
        acc = tl.dot((x / rms[:, None]).to(tl.bfloat16), w, acc)
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def _row_block_tile(X, W, Y, rstd, offs_m, offs_k, n, K, N, stride, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr):
    # N tile n of a row block: the GEMM loop on the scaled tile, then the store
    offs_n = n * BN + tl.arange(0, BN)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * N + offs_n[None, :], acc)


@triton.jit
def rms_row_block(X, W, Y, K, N, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the row-block form: the statistics once, then a GEMM loop per N tile of the row block
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    for n in range(0, tl.cdiv(N, BN)):
        _row_block_tile(X, W, Y, rstd, offs_m, offs_k, n, K, N, stride, BM, BN, BK)


# ---- bail-out cases -------------------------------------------------------------------------

@triton.jit
def negative_scale_varies_with_k(X, R, W, Y, K, stride, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        r = tl.load(R + k * BM + offs_m)
        x = tl.load(p).to(tl.float32)
        acc = tl.dot((x * r[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def negative_scale_per_element(X, S, W, Y, K, stride, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    s = tl.load(S + offs_m[:, None] * BK + offs_k[None, :])
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p).to(tl.float32)
        acc = tl.dot((x * s).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def negative_stats_other_iteration_space(X, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr,
                                         BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    ss = tl.zeros([BM], dtype=tl.float32)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    for k in range(0, tl.cdiv(K, BK) - 1):
        x = tl.load(p).to(tl.float32)
        ss += tl.sum(x * x, axis=1)
        p += BK
    rstd = 1.0 / tl.sqrt(ss / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p).to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def negative_stats_other_tile(X, X2, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X2, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        acc = tl.dot((x * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def negative_row_block_stats_used_after(X, W, Y, Z, K, N, stride, eps, BM: tl.constexpr, BN: tl.constexpr,
                                        BK: tl.constexpr):
    # rstd is also stored after the N loop: the statistics stay where they are (the row scale is
    # still sunk out of the k-loop, as a precomputed one)
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    for n in range(0, tl.cdiv(N, BN)):
        _row_block_tile(X, W, Y, rstd, offs_m, offs_k, n, K, N, stride, BM, BN, BK)
    tl.store(Z + offs_m, rstd)


@triton.jit
def negative_row_block_store_ahead(X, W, Y, Z, K, N, stride, eps, BM: tl.constexpr, BN: tl.constexpr,
                                   BK: tl.constexpr):
    # a store in the N loop ahead of the GEMM loop: moving the statistics' reads after it could
    # change what they read, so they stay before the N loop
    offs_m = tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    for n in range(0, tl.cdiv(N, BN)):
        tl.store(Z + n * BM + offs_m, tl.zeros([BM], dtype=tl.float32))
        _row_block_tile(X, W, Y, rstd, offs_m, offs_k, n, K, N, stride, BM, BN, BK)


@triton.jit
def negative_scaled_tile_other_user(X, W, Y, Z, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr,
                                    BK: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0).to(tl.float32)
        a = x * rstd[:, None]
        tl.store(Z + k * BK + offs_m[:, None] * stride + offs_k[None, :], a)
        acc = tl.dot(a.to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


@triton.jit
def negative_gemm_loop_writes_x(X, W, Y, K, stride, eps, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr, CARRIED: tl.constexpr):
    # the GEMM loop stores twice its tile into the next one (through its carried pointer, or,
    # CARRIED false, one computed from X: the CPU test's second form): its later trips read other
    # values than the statistics loop read
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    rstd = 1.0 / tl.sqrt(_stats(X, offs_m, offs_k, stride, K, BK, BM) / K + eps)
    p = X + offs_m[:, None] * stride + offs_k[None, :]
    q = W + offs_n[None, :] * stride + offs_k[:, None]
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        x = tl.load(p, mask=offs_k[None, :] < K - k * BK, other=0.0)
        nxt = offs_k[None, :] < K - (k + 1) * BK
        if CARRIED:
            tl.store(p + BK, x * 2, mask=nxt)
        else:
            tl.store(X + offs_m[:, None] * stride + (k + 1) * BK + offs_k[None, :], x * 2, mask=nxt)
        acc = tl.dot((x.to(tl.float32) * rstd[:, None]).to(tl.bfloat16), tl.load(q), acc)
        p += BK
        q += BK
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], acc)


KERNELS = [rms_weight_in_loop, rms_weight_folded, layernorm, layernorm_folded, rms_precomputed_rstd, rms_residual_accumulator,
           rms_block_pointers, rms_row_block, rms_divide_by_rms, negative_scale_varies_with_k, negative_scale_per_element,
           negative_stats_other_iteration_space, negative_stats_other_tile, negative_row_block_stats_used_after,
           negative_row_block_store_ahead, negative_scaled_tile_other_user, negative_gemm_loop_writes_x]


def signature(fn) -> dict:
    """The kernel's Triton signature, from its parameter names."""
    sig = {}
    for name in fn.arg_names:
        if name in ("BM", "BN", "BK", "CARRIED"):
            sig[name] = "constexpr"
        elif name in ("K", "M", "N", "stride"):
            sig[name] = "i32"
        elif name == "eps":
            sig[name] = "fp32"
        elif name in ("R", "S", "Y", "Z"):
            sig[name] = "*fp32"
        else:
            sig[name] = "*bf16"
    return sig


if __name__ == "__main__":
    import litgen
    import make_lazy_prenorm_lit
    sys.exit(litgen.main(make_lazy_prenorm_lit.outputs))
