"""Writes test/lit/epilogue-norm-backward.mlir, test/lit/cluster-reduce-backward.mlir,
test/lit/hopper-ws-backward.mlir and test/lit/hopper-ws-epilogue-tma.mlir: TTIR of the
naive norm-backward kernel (kernels/backward.py: dX GEMM + norm backward, the pre-norm op's dX and
the regrouped post-norm backward) and of its near misses, with hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/backward_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

from normfuse.kernels.backward import (_dmask, _du_tile, _xhat, norm_backward_naive,
                                       norm_backward_rowdot_naive)
import litgen

SIG = {"DY": "*bf16", "W": "*bf16", "X": "*bf16", "RSTD": "*fp32", "MEAN": "*fp32", "G": "*bf16",
       "B": "*bf16", "DRES": "*bf16", "DX": "*bf16", "DGP": "*fp32", "DBP": "*fp32", "XN": "*bf16", "M": "i32",
       "R": "i32", "stride_dym": "i32", "stride_wr": "i32", "stride_xm": "i32", "stride_drm": "i32",
       "stride_dxm": "i32", "stride_xnm": "i32", "N": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
       "BLOCK_R": "constexpr", "IS_LN": "constexpr", "HAS_GEMM": "constexpr", "HAS_G": "constexpr",
       "HAS_B": "constexpr", "ACT": "constexpr", "HAS_DRES": "constexpr", "HAS_DG": "constexpr",
       "EVEN_R": "constexpr", "HAS_XN": "constexpr"}
RMS = dict(BLOCK_M=64, BLOCK_R=32, IS_LN=False, HAS_GEMM=True, HAS_G=True, HAS_B=False, ACT=0,
           HAS_DRES=False, HAS_DG=True, EVEN_R=True, HAS_XN=False)
# the regrouped post-norm LayerNorm backward: SiLU' of the norm's output, a residual gradient
LN_ACT = dict(RMS, IS_LN=True, HAS_B=True, ACT=1, HAS_DRES=True)

NEG = {"DY": "*bf16", "W": "*bf16", "X": "*bf16", "RSTD": "*fp32", "DX": "*bf16", "DGP": "*fp32",
       "M": "i32", "R": "i32", "N": "constexpr", "BM": "constexpr", "BN": "constexpr",
       "BR": "constexpr"}
NEG2 = {"DY": "*bf16", "W": "*bf16", "X": "*bf16", "RSTD": "*fp32", "DX": "*bf16", "DGP": "*fp32",
        "M": "i32", "R": "i32", "DRES": "*bf16", "N": "constexpr", "BM": "constexpr",
        "BN": "constexpr", "BR": "constexpr"}


@triton.jit
def dg_after_store(DY, W, X, RSTD, DX, DGP, M, R, N: tl.constexpr, BM: tl.constexpr,
                            BN: tl.constexpr, BR: tl.constexpr):
    # the dg partial is stored after du, between the unnormalized store and its reload
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    du = _du_tile(DY, W, offs_m, offs_n, M, R, R, N, N, BM, BN, BR, True)
    xhat = _xhat(X, RSTD, RSTD, offs_m, offs_n, M, N, N, False)
    c2 = tl.sum(du * xhat, axis=1)
    p = DX + offs_m[:, None] * N + offs_n[None, :]
    tl.store(p, du.to(tl.bfloat16), mask=_dmask(offs_m, offs_n, M, N))
    tl.store(DGP + tl.program_id(0) * N + offs_n, tl.sum(du * xhat, axis=0))
    du = tl.load(p, mask=_dmask(offs_m, offs_n, M, N), other=0.0).to(tl.float32)
    rstd = tl.load(RSTD + offs_m, mask=offs_m < M, other=0.0)
    dx = (du - xhat * (c2 / N)[:, None]) * rstd[:, None]
    tl.store(p, dx.to(tl.bfloat16), mask=_dmask(offs_m, offs_n, M, N))


@triton.jit
def _second_pass(DX, X, RSTD, offs_m, M, m2, N: tl.constexpr, BN: tl.constexpr):
    rstd = tl.load(RSTD + offs_m, mask=offs_m < M, other=0.0)
    for n in range(0, N // BN):
        offs_n = n * BN + tl.arange(0, BN)
        p = DX + offs_m[:, None] * N + offs_n[None, :]
        du = tl.load(p, mask=_dmask(offs_m, offs_n, M, N), other=0.0).to(tl.float32)
        xhat = _xhat(X, RSTD, RSTD, offs_m, offs_n, M, N, N, False)
        tl.store(p, ((du - xhat * m2[:, None]) * rstd[:, None]).to(tl.bfloat16),
                 mask=_dmask(offs_m, offs_n, M, N))


@triton.jit
def negative_row_max(DY, W, X, RSTD, DX, DGP, M, R, N: tl.constexpr, BM: tl.constexpr,
                     BN: tl.constexpr, BR: tl.constexpr):
    # the row statistic is a running max (a clipping bound), not a sum over the row's tiles
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    c2 = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, N // BN):
        offs_n = n * BN + tl.arange(0, BN)
        du = _du_tile(DY, W, offs_m, offs_n, M, R, R, N, N, BM, BN, BR, True)
        c2 = tl.maximum(c2, tl.max(tl.abs(du), axis=1))
        tl.store(DX + offs_m[:, None] * N + offs_n[None, :], du.to(tl.bfloat16),
                 mask=_dmask(offs_m, offs_n, M, N))
    _second_pass(DX, X, RSTD, offs_m, M, c2 / N, N, BN)


@triton.jit
def negative_row_sum_stored(DY, W, X, RSTD, DX, DGP, M, R, N: tl.constexpr, BM: tl.constexpr,
                            BN: tl.constexpr, BR: tl.constexpr):
    # the row sum is stored between the loops: in a cluster it would be one CTA's partial only
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    c2 = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, N // BN):
        offs_n = n * BN + tl.arange(0, BN)
        du = _du_tile(DY, W, offs_m, offs_n, M, R, R, N, N, BM, BN, BR, True)
        c2 += tl.sum(du * _xhat(X, RSTD, RSTD, offs_m, offs_n, M, N, N, False), axis=1)
        tl.store(DX + offs_m[:, None] * N + offs_n[None, :], du.to(tl.bfloat16),
                 mask=_dmask(offs_m, offs_n, M, N))
    tl.store(DGP + offs_m, c2, mask=offs_m < M)
    _second_pass(DX, X, RSTD, offs_m, M, c2 / N, N, BN)


EPI_HEAD = """// epilogue-norm on the naive norm-backward kernel (kernels/backward.py): the dX GEMM's output
// row (du) is reduced (sum du*g*xhat; LayerNorm also sum du*g), stored, reloaded and finished as
// dx; with the row in one tile the store + reload go away. Positive cases first, then bail-outs.
// Inputs: TTIR from test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --epilogue-norm %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
"""

EPI_CASES = [
    ("rms_dx_one_tile", norm_backward_naive, SIG, dict(RMS, N=64, BLOCK_N=64),
     """// RMSNorm dX, one tile holds the row: dx from the fp32 accumulator, one store to DX (the dg
// partial's store stays, before it).
// CHECK-LABEL: tt.func public @rms_dx_one_tile
// CHECK: %[[DOT:.+]] = scf.for
// CHECK: %[[DU:.+]] = arith.select %{{.+}}, %[[DOT]], %{{.+}} : tensor<64x64xi1>, tensor<64x64xf32>
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.store
// the second pass loads x again (for xhat) but not du: one [64, 64] bf16 load, then dx from DU
// CHECK: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: arith.mulf %[[DU]], %{{.+}} : tensor<64x64xf32>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store"""),
    ("ln_dx_silu_regrouped", norm_backward_naive, SIG, dict(LN_ACT, N=32, BLOCK_N=32),
     """// The regrouped post-norm LayerNorm backward: du = (dY W) * SiLU'(n), two row sums, a residual
// gradient; one tile: du never goes to memory.
// CHECK-LABEL: tt.func public @ln_dx_silu_regrouped
// CHECK: scf.for
// CHECK: math.exp
// CHECK-COUNT-2: tt.store %{{.+}} : tensor<32x!tt.ptr<f32>>
// CHECK-NOT: tt.store
// CHECK: tt.load %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store"""),
    ("rms_dx_xn_one_tile", norm_backward_naive, SIG, dict(RMS, N=64, BLOCK_N=64, HAS_XN=True),
     """// The pre-norm op's dX also writes the norm's output n (for dW = dY^T n): n's store comes
// before du's, like the dg partial's, so the row is still normalized in registers; three
// stores remain (dg partial, n, dx) and nothing is reloaded.
// CHECK-LABEL: tt.func public @rms_dx_xn_one_tile
// CHECK: scf.for
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store"""),
    ("dg_after_store", dg_after_store, NEG, dict(N=64, BM=64, BN=64, BR=32),
     """// A column partial stored between du's store and its reload: another argument (distinct
// arguments do not alias, as for loads), left in place; du is forwarded as without it.
// CHECK-LABEL: tt.func public @dg_after_store
// CHECK: tt.store %{{.+}} : tensor<64x!tt.ptr<f32>>
// CHECK-NOT: tt.load %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK: tt.store %{{.+}} : tensor<64x64x!tt.ptr<bf16>>
// CHECK-NOT: tt.store
// REMARK: applied: output row normalized in registers before the single store"""),
]

CR_HEAD = """// cluster-reduce on the naive norm-backward kernel (kernels/backward.py): the row sums of the
// norm backward (sum du*g*xhat; LayerNorm also sum du*g) are sums over the row's tiles, so the
// tiles go to the CTAs of a cluster and the partial sums meet in DSMEM, as in forward.
// Positive cases first, then bail-outs. Inputs: test/lit/inputs/backward_kernels.py.
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce,epilogue-norm' %s 2>/dev/null | FileCheck %s --check-prefix=PIPE
"""

CR_CASES = [
    ("rms_dx_four_tiles", norm_backward_naive, SIG, dict(RMS, N=128, BLOCK_N=32),
     """// RMSNorm dX, a row of 4 tiles -> a 4-CTA cluster; one statistic (sum du*g*xhat) exchanged.
// CHECK-LABEL: tt.func public @rms_dx_four_tiles
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: %[[RANK:.+]] = arith.remsi %{{.+}}, %[[C:.+]] : i32
// CHECK: tt.dot
// CHECK: %[[PART:.+]] = arith.addf %{{.+}} : tensor<64xf32>
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}} %{{.+}}, %[[PART]] :
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster{{.*}}" {{.*}} -> tensor<64xf32>
// CHECK: arith.divf %[[TOT]]
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; 1 row statistic exchanged
// PIPE-LABEL: tt.func public @rms_dx_four_tiles
// PIPE-COUNT-1: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE: tt.return"""),
    ("ln_dx_silu_two_tiles", norm_backward_naive, SIG, dict(LN_ACT, N=64, BLOCK_N=32),
     """// The regrouped post-norm LayerNorm backward over 2 tiles: sum du*g and sum du*g*xhat in one exchange.
// CHECK-LABEL: tt.func public @ln_dx_silu_two_tiles
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+256], $3;
// CHECK: %[[TOT:.+]]:2 = tt.elementwise_inline_asm {{.*}} -> tensor<64xf32>, tensor<64xf32>
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 2 row statistics
// PIPE-LABEL: tt.func public @ln_dx_silu_two_tiles
// PIPE-COUNT-1: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE: tt.return"""),
    ("ln_dx_xn_two_tiles", norm_backward_naive, SIG,
     dict(RMS, IS_LN=True, HAS_B=True, N=64, BLOCK_N=32, HAS_XN=True),
     """// The pre-norm LayerNorm dX writing n = xhat g + beta over 2 tiles: n's store is per tile,
// in the loop over the row's tiles, so each CTA of the cluster writes its own tile of n.
// CHECK-LABEL: tt.func public @ln_dx_xn_two_tiles
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: %[[TOT:.+]]:2 = tt.elementwise_inline_asm {{.*}} -> tensor<64xf32>, tensor<64xf32>
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 2 row statistics
// PIPE-LABEL: tt.func public @ln_dx_xn_two_tiles
// PIPE-COUNT-2: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// PIPE: tt.return"""),
    ("negative_row_max", negative_row_max, NEG, dict(N=128, BM=64, BN=32, BR=32),
     """// Bail out: the row statistic is a max, not a sum over tiles.
// CHECK-LABEL: tt.func public @negative_row_max
// CHECK-NOT: normfuse.cluster_dims
// CHECK-NOT: barrier.cluster
// REMARK: missed: row statistic {{.+}} is not a sum over tiles (%s + x)
// PIPE-LABEL: tt.func public @negative_row_max
// PIPE-COUNT-2: tt.store %{{.+}} : tensor<64x32x!tt.ptr<bf16>>"""),
    ("negative_row_sum_stored", negative_row_sum_stored, NEG, dict(N=128, BM=64, BN=32, BR=32),
     """// Bail out: the row sum is stored between the loops (one CTA would store only its partial).
// CHECK-LABEL: tt.func public @negative_row_sum_stored
// CHECK-NOT: normfuse.cluster_dims
// REMARK: missed: 'tt.store' with side effects between the two loops over N tiles
// PIPE-LABEL: tt.func public @negative_row_sum_stored
// PIPE-NOT: barrier.cluster"""),
]

@triton.jit
def negative_side_read_back(DY, W, X, RSTD, DX, DGP, M, R, N: tl.constexpr, BM: tl.constexpr,
                            BN: tl.constexpr, BR: tl.constexpr):
    # the side output (the dg partial, here a [BM, BN] tile of n in DGP) is read back by the
    # normalizing loop: the template stores side outputs per tile, in no order the reload sees
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    c2 = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, N // BN):
        offs_n = n * BN + tl.arange(0, BN)
        du = _du_tile(DY, W, offs_m, offs_n, M, R, R, N, N, BM, BN, BR, True)
        xhat = _xhat(X, RSTD, RSTD, offs_m, offs_n, M, N, N, False)
        tl.store(DGP + offs_m[:, None] * N + offs_n[None, :], xhat, mask=_dmask(offs_m, offs_n, M, N))
        c2 += tl.sum(du * xhat, axis=1)
        tl.store(DX + offs_m[:, None] * N + offs_n[None, :], du.to(tl.bfloat16),
                 mask=_dmask(offs_m, offs_n, M, N))
    rstd = tl.load(RSTD + offs_m, mask=offs_m < M, other=0.0)
    for n in range(0, N // BN):
        offs_n = n * BN + tl.arange(0, BN)
        p = DX + offs_m[:, None] * N + offs_n[None, :]
        du = tl.load(p, mask=_dmask(offs_m, offs_n, M, N), other=0.0).to(tl.float32)
        xhat = tl.load(DGP + offs_m[:, None] * N + offs_n[None, :], mask=_dmask(offs_m, offs_n, M, N),
                       other=0.0)
        tl.store(p, ((du - xhat * (c2 / N)[:, None]) * rstd[:, None]).to(tl.bfloat16),
                 mask=_dmask(offs_m, offs_n, M, N))


@triton.jit
def negative_dres_in_first_pass(DY, W, X, RSTD, DX, DGP, M, R, DRES, N: tl.constexpr,
                                BM: tl.constexpr, BN: tl.constexpr, BR: tl.constexpr):
    # a second [BM, BN] tile (DRES) read by the first pass, into du before the row sums and the
    # dg partials: only x comes by TMA; a tile the normalizing loop alone reads is a pointer load
    pid = tl.program_id(0)
    offs_m = pid * BM + tl.arange(0, BM)
    c2 = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, N // BN):
        offs_n = n * BN + tl.arange(0, BN)
        du = _du_tile(DY, W, offs_m, offs_n, M, R, R, N, N, BM, BN, BR, True)
        du += tl.load(DRES + offs_m[:, None] * N + offs_n[None, :], mask=_dmask(offs_m, offs_n, M, N),
                      other=0.0).to(tl.float32)
        xhat = _xhat(X, RSTD, RSTD, offs_m, offs_n, M, N, N, False)
        tl.store(DGP + pid * N + offs_n, tl.sum(du * xhat, axis=0))
        c2 += tl.sum(du * xhat, axis=1)
        tl.store(DX + offs_m[:, None] * N + offs_n[None, :], du.to(tl.bfloat16),
                 mask=_dmask(offs_m, offs_n, M, N))
    _second_pass(DX, X, RSTD, offs_m, M, c2 / N, N, BN)


HWS_HEAD = """// hopper-ws{post-norm=true} on the naive norm-backward kernel (kernels/backward.py) as the
// pre-norm ops' training dX launches it: the dX GEMM, the norm backward's two passes over the row
// (the row sums exchanged between the row's N tiles), and the first pass's side outputs: n (a
// [BM, BN] tile at the output tile's place: a second TMA store) and the dg (dbeta) column
// partials (1-D stores per tile). x, read in both passes, comes by TMA; a residual gradient
// (the regrouped post-norm block's form, with SiLU'), read by the normalizing loop alone, is a
// pointer load in FIN. Positive cases first, then bail-outs. Inputs: TTIR from test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{post-norm=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=DEFAULT

// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(1), persistent, B [K, N]; no statistics; {{.*}}the input tile (read in both passes over the row) loaded by TMA into the output's staging tile during the k-loop; post-norm: the row's 2 N tiles on 2 CTAs of one wave, 1 partial row sum(s) exchanged through global memory (stamped words), the tile held across the exchange in the output's type (as the naive kernel reloads it) and normalized in the epilogue; side outputs of the row's first pass: a second output tile ({{.*}}) stored by TMA through the staging tile before the exchange; 1 column vector store(s) per tile
// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(2), {{.*}}; 2 column vector store(s) per tile
// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(1), {{.*}}post-norm: the row in one N tile (1 row sum(s), no exchange)
// REMARK: applied: lowered to the warp-specialized template: 128x128x64 s3 coop w8 rows-exchanged(2), {{.*}}the input tile (read in both passes over the row) loaded by TMA into the output's staging tile during the k-loop; 1 tile(s) read by the normalizing loop alone (a residual gradient added to dx) loaded with pointers in FIN; {{.*}}side outputs of the row's first pass: 2 column vector store(s) per tile
// REMARK: missed: a side output of the GEMM's loop is read back by the kernel; read side outputs in a later kernel
// REMARK: missed: side outputs of the row's first pass (a norm backward's) are lowered with the input tile read by TMA in both passes; here 3 tiles of other matrices
// DEFAULT: missed: a post-norm whose row spans 2 N tiles (two passes over the row); not lowered by default
// DEFAULT: missed: a post-norm whose row spans 2 N tiles
// DEFAULT: missed: a post-norm whose row spans 1 N tiles
// DEFAULT: missed: a post-norm whose row spans 2 N tiles
// DEFAULT: missed: a side output of the GEMM's loop is read back by the kernel
"""

# the op's coop tile: 128 x 128 x 64, 8 warps
DX_OP = dict(RMS, BLOCK_M=128, BLOCK_R=64, HAS_XN=True, EVEN_R=False)

HWS_CASES = [
    ("rms_dx_xn_two_tiles", norm_backward_naive, SIG, dict(DX_OP, N=256, BLOCK_N=128),
     """// RMSNorm dX, a row of 2 N tiles: the template with five descriptors (dY, W, dx, x, n), per
// tile the dg partial stored from registers, n by TMA, the stamped word of the row sum, dx by
// TMA; the loader reads x by TMA next to the ring's tiles.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-3: !tt.tensordesc<tensor<128x128xbf16
// CHECK: ttg.warp_specialize
// CHECK: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: st.relaxed.gpu.global.b64
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0
// CHECK-COUNT-3: ttng.async_tma_copy_global_to_local"""),
    ("ln_dx_xn_two_tiles", norm_backward_naive, SIG,
     dict(DX_OP, IS_LN=True, HAS_B=True, N=256, BLOCK_N=128),
     """// LayerNorm dX: c1 and c2 exchanged, the dg and dbeta partials, n = xhat g + beta.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK-COUNT-2: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>"""),
    ("rms_dx_xn_one_tile", norm_backward_naive, SIG, dict(DX_OP, N=120, BLOCK_N=128),
     """// RMSNorm dX, the row in one N tile: Triton folded the one-trip loops (du stored, reloaded
// and stored over in one block); the two passes with T = 1: no stamped words, no gather.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>
// CHECK: partition0"""),
    ("ln_dx_act_dres_two_tiles", norm_backward_naive, SIG,
     dict(DX_OP, IS_LN=True, HAS_B=True, ACT=1, HAS_DRES=True, HAS_XN=False, N=256, BLOCK_N=128),
     """// The regrouped post-norm block's LayerNorm backward: SiLU' of n = xhat g + beta on du, and
// a residual gradient added to dx: four descriptors (dY, W, dx, x; no n), the dg and dbeta
// partials, the two stamped row sums, then FIN's pointer load of the residual gradient's
// [128, 128] tile before dx leaves by TMA.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-2: !tt.tensordesc<tensor<128x128xbf16
// CHECK-NOT: !tt.tensordesc<tensor<128x128xbf16
// CHECK: ttg.warp_specialize
// CHECK-COUNT-2: tt.store %{{.+}} : tensor<128x!tt.ptr<f32>
// CHECK: st.relaxed.gpu.global.b64
// CHECK: st.relaxed.gpu.global.b64
// CHECK: tt.load %{{.+}} : tensor<128x128x!tt.ptr<bf16>
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0"""),
    ("negative_side_read_back", negative_side_read_back, NEG, dict(N=256, BM=128, BN=128, BR=64),
     """// Bail out: a side output read back by the normalizing loop.
// CHECK-LABEL: tt.func public @negative_side_read_back
// CHECK-NOT: ttg.warp_specialize"""),
    ("negative_dres_in_first_pass", negative_dres_in_first_pass, NEG2,
     dict(N=256, BM=128, BN=128, BR=64),
     """// Bail out: a residual gradient read by the first pass (into du before the row sums and
// the partials) is a second [BM, BN] tile besides x there: only x comes by TMA.
// CHECK-LABEL: tt.func public @negative_dres_in_first_pass
// CHECK-NOT: ttg.warp_specialize"""),
]


# the rowdot plan's dX kernel (kernels/backward.py: the dX GEMM with an elementwise epilogue
# reading x, the precomputed row sums and the statistics; one store)
ROWDOT = {"DY": "*bf16", "W": "*bf16", "S1": "*fp32", "S2": "*fp32", "X": "*bf16", "RSTD": "*fp32",
          "MEAN": "*fp32", "G": "*bf16", "B": "*bf16", "DX": "*bf16", "DGP": "*fp32",
          "DBP": "*fp32", "XN": "*bf16", "M": "i32", "R": "i32", "stride_dym": "i32",
          "stride_wr": "i32", "stride_xm": "i32", "stride_dxm": "i32", "stride_xnm": "i32",
          "N": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_R": "constexpr",
          "IS_LN": "constexpr", "HAS_G": "constexpr", "HAS_B": "constexpr", "HAS_DG": "constexpr",
          "EVEN_R": "constexpr", "HAS_XN": "constexpr", "ROW_COEFS": "constexpr"}
ROWDOT_RMS = dict(N=2048, BLOCK_M=128, BLOCK_N=256, BLOCK_R=64, IS_LN=False, HAS_G=False,
                  HAS_B=False, HAS_DG=False, EVEN_R=True, HAS_XN=False, ROW_COEFS=True)

EPT_HEAD = """// hopper-ws{epilogue-tma=true} on the rowdot plan's dX kernel (kernels/backward.py, as
// ops.training.rowdot_backward launches it: g folded into W, 128 x 256 tiles): the epilogue's
// [BM, BN] tile of x, at the output tile's rows and columns, comes by TMA into the output's
// staging tile during the k-loop (a fourth descriptor; the loader issues it), instead of a
// pointer load in the hook. Without the option, and for a tile TMA cannot stage (another element
// type than the output's), x stays a pointer load. With staging-late the consumer hands the
// staging tile back inside the next tile's k-loop; where nothing is staged a note says why not.
// Inputs: TTIR from test/lit/inputs/backward_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{epilogue-tma=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=DEFAULT
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{epilogue-tma=true,staging-late=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=LATE

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [K, N]; no statistics; A straight from shared memory; epilogue translated from the IR ({{[0-9]+}} expression nodes in the hooks); the epilogue's tile of a second matrix loaded by TMA into the output's staging tile during the k-loop
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, {{.*}}; the epilogue's tile of a second matrix loaded by TMA into the output's staging tile during the k-loop
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// DEFAULT: applied: {{.*}}expression nodes in the hooks){{$}}
// LATE: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 staging-late, persistent{{.*}}staging tile during the k-loop{{$}}
// LATE: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 staging-late, persistent{{.*}}staging tile during the k-loop{{$}}
// LATE: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent{{.*}}staging-late not applied: no tile of a second matrix comes by TMA into the staging tile"""

EPT_CASES = [
    ("rowdot_rms_folded", norm_backward_rowdot_naive, ROWDOT, ROWDOT_RMS,
     """// RMSNorm, g folded: a descriptor for x besides dY, W and dx (the residual's parameter of
// the template); the loader's TMA of x into the staging tile, no pointer load of it.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-SAME: !tt.tensordesc<tensor<128x256xbf16{{.*}}: !tt.tensordesc<tensor<128x256xbf16
// CHECK: ttg.warp_specialize
// CHECK-NOT: tt.load %{{.+}} : tensor<128x256x!tt.ptr<bf16>
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: partition0"""),
    ("rowdot_ln_g", norm_backward_rowdot_naive, ROWDOT,
     dict(ROWDOT_RMS, IS_LN=True, HAS_G=True, HAS_B=True),
     """// LayerNorm with g in the epilogue: the same staging of x.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK-NOT: tt.load %{{.+}} : tensor<128x256x!tt.ptr<bf16>
// CHECK: partition0"""),
    ("rowdot_rms_fp32_x", norm_backward_rowdot_naive, dict(ROWDOT, X="*fp32"), ROWDOT_RMS,
     """// Near miss: x in fp32, the output bf16 (the tile is staged in the output's buffer): x stays
// a pointer load of the epilogue (and the remark says no staging).
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// CHECK: tt.load %{{.+}} : tensor<128x256x!tt.ptr<f32>"""),
]


def outputs() -> dict:
    return {"epilogue-norm-backward.mlir": litgen.lit_text(EPI_HEAD, EPI_CASES),
            "cluster-reduce-backward.mlir": litgen.lit_text(CR_HEAD, CR_CASES),
            "hopper-ws-backward.mlir": litgen.lit_text(HWS_HEAD, HWS_CASES),
            "hopper-ws-epilogue-tma.mlir": litgen.lit_text(EPT_HEAD, EPT_CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
