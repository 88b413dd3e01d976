"""Writes test/lit/cluster-reduce.mlir: TTIR of small post-norm kernels with hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/cluster_reduce_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

from normfuse.kernels.postnorm_gemm import linear_layernorm_naive, linear_rmsnorm_naive
import litgen
from postnorm_common import LN, PERS, POST


@triton.jit
def _tile(X, W, offs_m, n, BM: tl.constexpr, BN: tl.constexpr, K: tl.constexpr):
    offs_n = n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, K)
    return tl.dot(tl.load(X + offs_m[:, None] * K + offs_k[None, :]),
                  tl.load(W + offs_n[None, :] * K + offs_k[:, None]))


@triton.jit
def _normalize(Y, offs_m, scale, N: tl.constexpr, BN: tl.constexpr):
    for n in range(0, N // BN):
        p = Y + offs_m[:, None] * N + n * BN + tl.arange(0, BN)[None, :]
        tl.store(p, (tl.load(p).to(tl.float32) * scale[:, None]).to(tl.bfloat16))


@triton.jit
def rms_offsets(X, W, Y, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, K: tl.constexpr):
    # the loops over N step over column offsets (range(0, N, BN)), not tile indices
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for n0 in range(0, N, BN):
        acc = _tile(X, W, offs_m, n0 // BN, BM, BN, K)
        ss += tl.sum(acc * acc, axis=1)
        tl.store(Y + offs_m[:, None] * N + n0 + tl.arange(0, BN)[None, :], acc.to(tl.bfloat16))
    rstd = 1.0 / tl.sqrt(ss / N)
    for n0 in range(0, N, BN):
        p = Y + offs_m[:, None] * N + n0 + tl.arange(0, BN)[None, :]
        tl.store(p, (tl.load(p).to(tl.float32) * rstd[:, None]).to(tl.bfloat16))


@triton.jit
def negative_max_over_tiles(X, W, Y, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                            K: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    mx = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, N // BN):
        acc = _tile(X, W, offs_m, n, BM, BN, K)
        mx = tl.maximum(mx, tl.max(tl.abs(acc), axis=1))  # not a sum: partials do not add up
        tl.store(Y + offs_m[:, None] * N + n * BN + tl.arange(0, BN)[None, :], acc.to(tl.bfloat16))
    _normalize(Y, offs_m, 1.0 / mx, N, BN)


@triton.jit
def negative_nonzero_init(X, W, Y, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                          K: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.full([BM], 1.0, dtype=tl.float32)  # every CTA would add the 1.0 again
    for n in range(0, N // BN):
        acc = _tile(X, W, offs_m, n, BM, BN, K)
        ss += tl.sum(acc * acc, axis=1)
        tl.store(Y + offs_m[:, None] * N + n * BN + tl.arange(0, BN)[None, :], acc.to(tl.bfloat16))
    _normalize(Y, offs_m, 1.0 / tl.sqrt(ss / N), N, BN)


@triton.jit
def negative_outer_carried(X, W, Y, Z, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                           K: tl.constexpr):
    # persistent, but the loop over row blocks carries a value from one row block to the next
    total = tl.zeros([BM], dtype=tl.float32)
    for rb in range(tl.program_id(0), 64, tl.num_programs(0)):
        offs_m = rb * BM + tl.arange(0, BM)
        ss = tl.zeros([BM], dtype=tl.float32)
        for n in range(0, N // BN):
            acc = _tile(X, W, offs_m, n, BM, BN, K)
            ss += tl.sum(acc * acc, axis=1)
            tl.store(Y + offs_m[:, None] * N + n * BN + tl.arange(0, BN)[None, :], acc.to(tl.bfloat16))
        _normalize(Y, offs_m, 1.0 / tl.sqrt(ss / N), N, BN)
        total += ss
    tl.store(Z + tl.arange(0, BM), total)


@triton.jit
def negative_store_between(X, W, Y, Z, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                           K: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for n in range(0, N // BN):
        acc = _tile(X, W, offs_m, n, BM, BN, K)
        ss += tl.sum(acc * acc, axis=1)
        tl.store(Y + offs_m[:, None] * N + n * BN + tl.arange(0, BN)[None, :], acc.to(tl.bfloat16))
    tl.store(Z + offs_m, ss)  # writes a partial sum that is only complete after the exchange
    _normalize(Y, offs_m, 1.0 / tl.sqrt(ss / N), N, BN)


FLAGS = dict(EVEN_K=True, HAS_BIAS=False, HAS_RES=False)
NEG = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "N": "constexpr", "BM": "constexpr", "BN": "constexpr",
       "K": "constexpr"}
NEGZ = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "Z": "*fp32", "N": "constexpr", "BM": "constexpr",
        "BN": "constexpr", "K": "constexpr"}
NEG_C = dict(N=128, BM=64, BN=32, K=32)

CASES = [
    ("rms_four_tiles", linear_rmsnorm_naive, POST, dict(N=128, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **FLAGS),
     """// 4 tiles -> a 4-CTA cluster, one tile per CTA: the loops over N are gone.
// CHECK-LABEL: tt.func public @rms_four_tiles
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK: %[[BLK:.+]] = arith.divsi %[[PID]], %[[C]] : i32
// CHECK: arith.muli %[[BLK]], %{{.+}} : i32
// CHECK: arith.muli %[[RANK]], %{{.+}} : i32
// CHECK: tt.dot
// CHECK: %[[PART:.+]] = arith.addf %{{.+}} : tensor<64xf32>
// CHECK: tt.store
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}}pure = false} %[[ROWS:.+]], %[[PART]] :
// CHECK: tt.elementwise_inline_asm "{{.*}}barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 3;{{.*}}" {{.*}} %[[ROWS]] : tensor<64xi32> -> tensor<64xf32>
// CHECK: tt.elementwise_inline_asm "{{.*}}barrier.cluster.arrive.release; mov
// CHECK: arith.divf %[[TOT]]
// CHECK-NOT: scf.for %{{.+}} = %c0_i32 to %c4_i32
// CHECK: tt.store
// CHECK: tt.elementwise_inline_asm "{{.*}}barrier.cluster.wait.acquire; mov
// CHECK-NEXT: tt.return
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; 1 row statistic exchanged through distributed shared memory (256 B per CTA), one cluster barrier per row block; one tile per CTA
// With cluster-size=2 each CTA takes two tiles (stride 2).
// TWO-LABEL: tt.func public @rms_four_tiles
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// TWO: scf.for %{{.+}} = %{{.+}} to %c4_i32 step %{{.+}} iter_args
// Then epilogue-norm applies per CTA: one store left where a CTA holds one tile.
// PIPE-LABEL: tt.func public @rms_four_tiles
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return
// exchange=global: the partials go through this CTA's global scratch slice (no extra shared
// memory); the read walks the cluster's slices from rank 0's, S bytes apart (S, the scratch slice
// size, is filled in after Triton's allocation: NFSCRATCHBYTES in the TTIR).
// GLOBAL-LABEL: tt.func public @rms_four_tiles
// GLOBAL-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 0 : i32, normfuse.scratch_size_token = "NFSCRATCHBYTES"
// GLOBAL: %[[PID:.+]] = tt.get_program_id x
// GLOBAL: %[[S:.+]] = ttg.global_scratch_alloc {alignment = 16 : i32, nbytes = 256 : i32} : !tt.ptr<i8>
// GLOBAL: %[[A:.+]] = tt.ptr_to_int %[[S]] : !tt.ptr<i8> -> i64
// GLOBAL: %[[AS:.+]] = tt.splat %[[A]] : i64 -> tensor<64xi64>
// GLOBAL: tt.elementwise_inline_asm "{{.*}}st.global.f32 [%nfa+0], $3;{{.*}}" {{.*}} %{{.+}}, %[[AS]], %{{.+}} :
// GLOBAL: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// GLOBAL: tt.elementwise_inline_asm "{{.*}}mov.u32 %nfr, %cluster_ctarank; mul.wide.u32 %nfo, %nfr, NFSCRATCHBYTES;{{.*}}ld.global.cg.f32{{.*}}add.u64 %nfa, %nfa, NFSCRATCHBYTES;{{.*}}" {{.*}} %[[AS]] :
// GLOBAL-NOT: mapa
// gather=once: after the cluster barrier one asm per row sums the 4 ranks' partials into this
// CTA's own total slot (past the partials': the region doubles, 512 B), a CTA barrier, then the
// totals' read is a local load (what Triton copies into each layout its users want).
// ONCE-LABEL: tt.func public @rms_four_tiles
// ONCE-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 512 : i32
// ONCE: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}} %[[ROWS:.+]], %{{.+}} :
// ONCE: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// ONCE: tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 3;{{.*}}st.shared.f32 [%nfa+256], %nft0; mov.u32 $0, 0; }" {{.*}} %[[ROWS]] : tensor<64xi32> -> tensor<64xi32>
// ONCE-NEXT: tt.elementwise_inline_asm "{{.*}}bar.sync 0; mov.u32 $0, 0;"
// ONCE-NEXT: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}ld.shared.f32 $0, [%nfa+256]; }" {{.*}} %[[ROWS]] : tensor<64xi32> -> tensor<64xf32>
// ONCE-NOT: ld.shared::cluster
// ONCE: arith.divf %[[TOT]]

// early-loads: the barrier in its two halves; the load of G (arg4, never stored) moved between
// them with its address; the reload of the tile stored to Y stays after the read of the totals.
// EARLY-LABEL: tt.func public @rms_four_tiles
// EARLY: st.shared.f32 [%nfa+0], $2;
// EARLY-NEXT: "{{.*}}barrier.cluster.arrive.release; mov.u32 $0, 0;"
// EARLY: %[[G:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<32x!tt.ptr<bf16>>
// EARLY-NEXT: "{{.*}}barrier.cluster.wait.acquire; mov.u32 $0, 0;"
// EARLY-NEXT: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}ld.shared::cluster.f32
// EARLY: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<64x32x!tt.ptr<bf16>>
// EARLY-NOT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// EARLY: tt.return"""),
    ("ln_two_stats", linear_layernorm_naive, LN, dict(N=64, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **FLAGS),
     """// LayerNorm: sum and sum of squares in one exchange (two slots per row).
// CHECK-LABEL: tt.func public @ln_two_stats
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+256], $3;
// CHECK: %[[TOT:.+]]:2 = tt.elementwise_inline_asm {{.*}} -> tensor<64xf32>, tensor<64xf32>
// CHECK: arith.divf %[[TOT]]#0
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 2 row statistics
// TWO-LABEL: tt.func public @ln_two_stats
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// TWO-NOT: scf.for %{{.+}} = %{{.+}} to %c2_i32
// PIPE-LABEL: tt.func public @ln_two_stats
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return"""),
    ("rms_deferred", linear_rmsnorm_naive, POST, dict(N=1024, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **FLAGS),
     """// 32 tiles > 16 CTAs: each CTA of a 16-CTA cluster loops over its 2 tiles (stride 16).
// CHECK-LABEL: tt.func public @rms_deferred
// CHECK-SAME: normfuse.cluster_dims = 16 : i32
// CHECK: %[[RANK:.+]] = arith.remsi %{{.+}}, %[[C:.+]] : i32
// CHECK: scf.for %{{.+}} = %[[RANK]] to %c32_i32 step %[[C]] iter_args
// CHECK: tt.store
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: scf.for %{{.+}} = %[[RANK]] to %c32_i32 step %[[C]]
// CHECK: tt.load
// CHECK: tt.store
// REMARK: applied: row of 32 N tiles split over a 16-CTA cluster (non-portable size); 1 row statistic {{.*}}; deferred: the row is longer than one cluster, so each CTA handles up to 2 tiles
// TWO-LABEL: tt.func public @rms_deferred
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// PIPE-LABEL: tt.func public @rms_deferred
// PIPE-COUNT-2: tt.store"""),
    ("rms_persistent", linear_rmsnorm_naive, PERS,
     dict(N=128, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, USE_TMA=False, PERSISTENT=True, **FLAGS),
     """// Persistent (the programs walk the row blocks): one exchange per row block, one barrier before exit.
// Program id and count are divided by C; the two slot sets alternate with the row block's parity.
// CHECK-LABEL: tt.func public @rms_persistent
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 512 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK: %[[BLK:.+]] = arith.divsi %[[PID]], %[[C]] : i32
// CHECK: %[[NP:.+]] = tt.get_num_programs x
// CHECK: %[[NCL:.+]] = arith.divsi %[[NP]], %[[C]] : i32
// CHECK: scf.for %[[RB:.+]] = %[[BLK]] to %{{.+}} step %[[NCL]] : i32 {
// CHECK: tt.dot
// CHECK: %[[OFF:.+]] = arith.subi %[[RB]], %[[BLK]] : i32
// CHECK: %[[IT:.+]] = arith.divsi %[[OFF]], %[[NCL]] : i32
// CHECK: %[[PAR:.+]] = arith.andi %[[IT]], %{{.+}} : i32
// CHECK: %[[WOFF:.+]] = arith.muli %[[PAR]], %{{.+}} : i32
// CHECK: %[[SPL:.+]] = tt.splat %[[WOFF]]
// CHECK: %[[IDX:.+]] = arith.addi %{{.+}}, %[[SPL]] : tensor<64xi32>
// CHECK: tt.elementwise_inline_asm "{{.*}}sub.u32 %nfa, %nfa, 512;{{.*}}st.shared.f32 {{.*}}" {{.*}} %[[IDX]],
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: %[[TOT:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster{{.*}}" {{.*}} %[[IDX]] :
// CHECK-NOT: barrier.cluster
// CHECK: arith.divf %[[TOT]]
// CHECK: tt.store
// CHECK-NOT: barrier.cluster
// CHECK: }
// CHECK-NEXT: tt.elementwise_inline_asm "{{.*}}barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: tt.return
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; {{.*}} (512 B per CTA), {{.*}}; persistent: the clusters walk the row blocks, two exchange slot sets alternate
// PIPE-LABEL: tt.func public @rms_persistent
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return"""),
    ("rms_offsets", rms_offsets, NEG, NEG_C,
     """// Loops over column offsets (range(0, N, BN)): CTA r takes the columns r * BN, stepping C * BN.
// CHECK-LABEL: tt.func public @rms_offsets
// CHECK-SAME: normfuse.cluster_dims = 4 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %{{.+}} : i32
// CHECK: %[[COL:.+]] = arith.muli %[[RANK]], %c32_i32 : i32
// CHECK-NOT: scf.for
// CHECK: tt.dot
// CHECK: tt.splat %[[COL]]
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire
// CHECK: tt.return
// REMARK: applied: row of 4 N tiles split over a 4-CTA cluster; 1 row statistic
// With cluster-size=2 each CTA walks its two tiles: from rank * BN, stepping 2 * BN.
// TWO-LABEL: tt.func public @rms_offsets
// TWO: %[[COL:.+]] = arith.muli %{{.+}}, %c32_i32 : i32
// TWO: scf.for %{{.+}} = %[[COL]] to %c128_i32 step %c64_i32 iter_args
// PIPE-LABEL: tt.func public @rms_offsets
// PIPE-COUNT-1: tt.store
// PIPE-NOT: tt.store
// PIPE: tt.return"""),
    ("negative_one_tile", linear_rmsnorm_naive, POST, dict(N=32, BLOCK_M=64, BLOCK_N=32, BLOCK_K=32, **FLAGS),
     """// Bail out: the row is one tile (epilogue-norm's case).
// CHECK-LABEL: tt.func public @negative_one_tile
// CHECK-NOT: normfuse.cluster_dims
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: no loop over N tiles around the GEMM: the row is one tile (epilogue-norm's case)"""),
    ("negative_max_over_tiles", negative_max_over_tiles, NEG, NEG_C,
     """// Bail out: the statistic is a max over tiles, not a sum.
// CHECK-LABEL: tt.func public @negative_max_over_tiles
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: row statistic {{.+}} is not a sum over tiles"""),
    ("negative_nonzero_init", negative_nonzero_init, NEG, NEG_C,
     """// Bail out: the sum starts at 1.0, which every CTA would add.
// CHECK-LABEL: tt.func public @negative_nonzero_init
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: row statistic {{.+}} does not start at zero"""),
    ("negative_outer_carried", negative_outer_carried, NEGZ, NEG_C,
     """// Bail out: the loop over row blocks carries a value across row blocks.
// CHECK-LABEL: tt.func public @negative_outer_carried
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: the loop over row blocks carries values across row blocks"""),
    ("negative_store_between", negative_store_between, NEGZ, NEG_C,
     """// Bail out: a store of the partial statistic between the loops.
// CHECK-LABEL: tt.func public @negative_store_between
// CHECK-NOT: inline_asm
// CHECK: tt.return
// REMARK: missed: 'tt.store' with side effects between the two loops over N tiles"""),
]

HEAD = """// cluster-reduce: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/cluster_reduce_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{cluster-size=2}' %s 2>/dev/null | FileCheck %s --check-prefix=TWO
// RUN: normfuse-opt --split-input-file --pass-pipeline=cluster-reduce,epilogue-norm %s 2>/dev/null | FileCheck %s --check-prefix=PIPE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{exchange=global}' %s 2>/dev/null | FileCheck %s --check-prefix=GLOBAL
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{cluster-size=32}' %s 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{exchange=l2}' %s 2>&1 | FileCheck %s --check-prefix=BADEXCH
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{gather=once}' %s 2>/dev/null | FileCheck %s --check-prefix=ONCE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{early-loads=true}' %s 2>%t.early | FileCheck %s --check-prefix=EARLY
// RUN: FileCheck %s --check-prefix=EARLYREMARK < %t.early
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{early-loads=true,exchange=global}' %s 2>&1 | FileCheck %s --check-prefix=BADEARLY

// BADOPT: option cluster-reduce{cluster-size} must be in 2..16, got 32
// BADEXCH: option cluster-reduce{exchange} must be dsmem or global, got 'l2'
// BADEARLY: option cluster-reduce{early-loads} needs exchange=dsmem
// EARLYREMARK: applied: early-loads: 1 load (of arg4) independent of the exchange issued between the cluster barrier's arrive and wait
// EARLYREMARK: applied: early-loads: 2 loads (of arg4, arg5) independent of the exchange
// EARLYREMARK: missed: early-loads: no load after an exchange is independent of it
// EARLYREMARK: applied: early-loads: 1 load (of arg4) independent of the exchange
// EARLYREMARK: missed: early-loads: no load after an exchange is independent of it
"""


def outputs() -> dict:
    return {"cluster-reduce.mlir": litgen.lit_text(HEAD, CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
