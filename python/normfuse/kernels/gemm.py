"""The plain Triton GEMM: the naive pre-norm kernels' GEMM loop with the norm taken out.

    Y = X @ W^T        X: [M, K] (unit stride along K), W: [N, K] (torch.nn.Linear layout), Y: [M, N]

It is the benchmarks' "same Triton GEMM without norm" baseline: same grouped tile ordering
(`_tile_offsets`), same `% M` / `% N` clamps on the load side, same K masks (`_k_mask`), same pointer
walk and store mask as loop 2 of `prenorm_gemm.rmsnorm_gemm_naive`, launched with the same
config (USE_TMA included). The fused kernel's time over this one's is therefore the cost of the norm inside our own
GEMM, independent of how far our GEMM main loop is from cuBLAS.

One difference is inherent: here the A tile goes from the load straight into `tl.dot`, so
Triton can feed the wgmma from shared memory; in the pre-norm kernels A is scaled in registers
first.
"""
import triton
import triton.language as tl

from .prenorm_gemm import _a_tile, _b_tile, _descriptors, _k_mask, _store_tile, _tile_offsets


@triton.jit
def _gemm_tile(tile, X, W, Y, x_desc, w_desc, M, N, K, stride_xm, stride_wn, stride_ym,
               EVEN_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, USE_TMA: tl.constexpr):
    pid_m, pid_n, offs_m, offs_n, offs_k, rows, cols = _tile_offsets(tile, M, N, BLOCK_M, BLOCK_N,
                                                                     BLOCK_K, GROUP_M)
    x_ptrs = X + rows[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = W + cols[None, :] * stride_wn + offs_k[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kmask = _k_mask(offs_k, K, k, BLOCK_K, EVEN_K)
        a = _a_tile(x_ptrs, x_desc, kmask, pid_m, k, BLOCK_M, BLOCK_K, USE_TMA)
        b = _b_tile(w_ptrs, w_desc, kmask, pid_n, k, BLOCK_N, BLOCK_K, USE_TMA)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    _store_tile(Y, acc, offs_m, offs_n, M, N, stride_ym)


@triton.jit
def gemm_plain(X, W, Y, M, N, K, stride_xm, stride_wn, stride_ym,
               EVEN_K: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_M: tl.constexpr, USE_TMA: tl.constexpr = False,
               NUM_PROGRAMS: tl.constexpr = 0):
    x_desc, w_desc = _descriptors(X, W, M, N, K, stride_xm, stride_wn, BLOCK_M, BLOCK_N,
                                  BLOCK_K, USE_TMA)
    if NUM_PROGRAMS > 0:  # persistent, as the pre-norm kernels
        num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for tile in tl.range(tl.program_id(0), num_tiles, NUM_PROGRAMS, flatten=True):
            _gemm_tile(tile, X, W, Y, x_desc, w_desc, M, N, K, stride_xm, stride_wn,
                       stride_ym, EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, USE_TMA)
    else:
        _gemm_tile(tl.program_id(0), X, W, Y, x_desc, w_desc, M, N, K, stride_xm,
                   stride_wn, stride_ym, EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, USE_TMA)
