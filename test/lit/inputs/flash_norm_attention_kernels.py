"""Writes test/lit/residual-acc.mlir, test/lit/cluster-reduce-prologue.mlir and
test/lit/cluster-reduce-merge.mlir (FlashNormAttention, issue 12): TTIR of the naive attention kernel and of small kernels with hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/flash_norm_attention_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

from normfuse.kernels.attention import flash_norm_attention_naive
import litgen

FNA = {"X": "*bf16", "K": "*bf16", "V": "*bf16", "OFFS": "*i32", "BLOCKS": "*i32", "LNW": "*bf16",
       "LNB": "*bf16", "RMSW": "*bf16", "OUT": "*bf16", "MEAN": "*fp32", "RSTD": "*fp32",
       "RRMS": "*fp32", "nbatch": "i32", "qk_scale": "fp32", "eps": "fp32", "rms_eps": "fp32",
       "H": "constexpr", "HKV": "constexpr", "D": "constexpr", "L": "constexpr",
       "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "ACT": "constexpr", "LOG_B": "constexpr"}


def fna(H, L, BN, act=0, **flags):
    # (the kernel's defaulted constexprs given: ASTSource does not fill defaults in)
    flags = dict(dict(HAS_LNW=False, HAS_LNB=False, HAS_RMSW=False, KV_TMA=False,
                      ROW_TABLE=False, ROWS=0, LN_MMA=False, STATS_AHEAD=False), **flags)
    return dict(H=H, HKV=H, D=16, L=L, BLOCK_M=16, BLOCK_N=BN, ACT=act, LOG_B=3, **flags)


# -- residual-acc --------------------------------------------------------------------------------

@triton.jit
def _mm(A, B, R, Y, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        MODE: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    r = tl.load(R + offs_m[:, None] * BN + offs_n[None, :]).to(tl.float32)
    if MODE == 4:  # the accumulator starts at one
        acc = tl.full([BM, BN], 1.0, dtype=tl.float32)
    else:
        acc = tl.zeros([BM, BN], dtype=tl.float32)
    l_i = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + offs_m[:, None] * K + k + offs_k[None, :])
        b = tl.load(B + (k + offs_k[:, None]) * BN + offs_n[None, :])
        if MODE == 2:  # rescaled in the loop (the shape of online softmax)
            acc = acc * 0.5
        if MODE == 3 or MODE == 5:
            l_i += tl.sum(a.to(tl.float32), axis=1)
        acc = tl.dot(a, b, acc)
    if MODE == 1:  # the residual is loaded after the loop
        r = tl.load(Y + offs_m[:, None] * BN + offs_n[None, :]).to(tl.float32)
    if MODE == 3:  # acc / l, then the residual
        acc = acc / l_i[:, None]
    if MODE == 5:  # acc * (1 / l) (the inference kernel's softmax normalization)
        acc = acc * (1.0 / l_i)[:, None]
    tl.store(Y + offs_m[:, None] * BN + offs_n[None, :], (acc + r).to(tl.bfloat16))


MM = {"A": "*bf16", "B": "*bf16", "R": "*bf16", "Y": "*bf16", "K": "constexpr", "BM": "constexpr",
      "BN": "constexpr", "BK": "constexpr", "MODE": "constexpr"}


def mm(mode):
    return dict(K=64, BM=16, BN=16, BK=16, MODE=mode)


RA_HEAD = """// residual-acc: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/flash_norm_attention_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --residual-acc %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
"""

RA_CASES = [
    ("residual_loop", _mm, MM, mm(0), """// A residual loaded before the K loop and added after it starts the accumulator instead.
// CHECK-LABEL: tt.func public @residual_loop
// CHECK: %[[R:.+]] = arith.extf %{{.+}} : tensor<16x16xbf16> to tensor<16x16xf32>
// CHECK: %[[ACC:.+]] = scf.for %{{.+}} iter_args(%[[C:.+]] = %[[R]]) -> (tensor<16x16xf32>)
// CHECK: tt.dot %{{.+}}, %{{.+}}, %[[C]]
// CHECK-NOT: arith.addf
// CHECK: arith.truncf %[[ACC]]
// REMARK: applied: residual added into the initial value of the accumulator carried by the loop over K tiles"""),
    ("fna_gdpa_kv_loop", flash_norm_attention_naive, FNA, fna(1, 64, 32), """// FlashNormAttention, GDPA with two KV tiles: LN(x) (the inner residual) starts P V.
// CHECK-LABEL: tt.func public @fna_gdpa_kv_loop
// CHECK: arith.truncf %[[Q:[^ ]+]] : tensor<16x16xf32> to tensor<16x16xbf16>
// CHECK-NEXT: scf.for %{{.+}} iter_args(%[[C:.+]] = %[[Q]]) -> (tensor<16x16xf32>)
// CHECK: tt.dot %{{.+}}, %{{.+}}, %[[C]]
// REMARK: applied: residual added into the initial value of the accumulator carried by the loop over K tiles"""),
    ("negative_residual_after_loop", _mm, MM, mm(1), """// The residual is loaded after the loop: it cannot start the accumulator.
// CHECK-LABEL: tt.func public @negative_residual_after_loop
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %cst{{.*}}) -> (tensor<16x16xf32>)
// CHECK: arith.addf
// REMARK: missed: the residual is not defined before the accumulator starts"""),
    ("negative_rescaled", _mm, MM, mm(2), """// The accumulator is rescaled in the loop: not a plain sum of products.
// CHECK-LABEL: tt.func public @negative_rescaled
// CHECK: scf.for
// CHECK: arith.addf
// REMARK: missed: the accumulator is read in the loop by 'arith.mulf'"""),
    ("negative_divided", _mm, MM, mm(3), """// acc / l + r (online softmax's normalization): the residual cannot start the accumulator.
// CHECK-LABEL: tt.func public @negative_divided
// CHECK: arith.divf
// CHECK: arith.addf
// REMARK: missed: the product is transformed ('arith.divf')"""),
    ("negative_multiplied", _mm, MM, mm(5), """// acc * (1 / l) + r: the same, with the reciprocal.
// CHECK-LABEL: tt.func public @negative_multiplied
// CHECK: arith.mulf
// CHECK: arith.addf
// REMARK: missed: the product is transformed ('arith.mulf')"""),
    ("negative_nonzero_start", _mm, MM, mm(4), """// The accumulator starts at one.
// CHECK-LABEL: tt.func public @negative_nonzero_start
// CHECK: arith.addf
// REMARK: missed: the loop's accumulator does not start at zero"""),
]


# -- cluster-reduce: prologue statistics ---------------------------------------------------------

@triton.jit
def _prologue_rows(pid, X, W, Y, S, eps, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                   PRO: tl.constexpr, MODE: tl.constexpr):
    rows = pid * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    s = tl.zeros([BM], dtype=tl.float32)
    for t in range(PRO):
        x = tl.load(X + rows[:, None] * N + t * BN + cols[None, :]).to(tl.float32)
        if MODE == 1:
            s = tl.maximum(s, tl.max(x, axis=1))
        else:
            s += tl.sum(x, axis=1)
        if MODE == 2:
            tl.store(S + rows, s)
    ss = _gemm_tiles(X, W, Y, rows, cols, s / N, N, BM, BN)
    _normalize_tiles(Y, rows, cols, 1.0 / tl.sqrt(ss / N + eps), N, BN)


@triton.jit
def _gemm_tiles(X, W, Y, rows, cols, shift, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """The GEMM loop over a row block's N tiles: each tile less the rows' shift stored to Y; the
    sum of its squares per row returned."""
    ss = tl.zeros([BM], dtype=tl.float32)
    for t in range(N // BN):
        a = tl.load(X + rows[:, None] * N + t * BN + cols[None, :])
        acc = tl.dot(a, tl.load(W + cols[:, None] * BN + cols[None, :])) - shift[:, None]
        ss += tl.sum(acc * acc, axis=1)
        tl.store(Y + rows[:, None] * N + t * BN + cols[None, :], acc.to(tl.bfloat16))
    return ss


@triton.jit
def _normalize_tiles(Y, rows, cols, r, N: tl.constexpr, BN: tl.constexpr):
    """The normalizing loop: each tile of the row block reloaded from Y, scaled by r, stored."""
    for t in range(N // BN):
        p = Y + rows[:, None] * N + t * BN + cols[None, :]
        tl.store(p, (tl.load(p).to(tl.float32) * r[:, None]).to(tl.bfloat16))


@triton.jit
def _prologue(X, W, Y, S, eps, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
              PRO: tl.constexpr, MODE: tl.constexpr, BLOCKS: tl.constexpr = 0):
    if BLOCKS > 0:  # persistent: the programs walk BLOCKS row blocks
        for pid in tl.range(tl.program_id(0), BLOCKS, tl.num_programs(0)):
            _prologue_rows(pid, X, W, Y, S, eps, N, BM, BN, PRO, MODE)
    else:
        _prologue_rows(tl.program_id(0), X, W, Y, S, eps, N, BM, BN, PRO, MODE)


PRO = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "S": "*fp32", "eps": "fp32", "N": "constexpr",
       "BM": "constexpr", "BN": "constexpr", "PRO": "constexpr", "MODE": "constexpr",
       "BLOCKS": "constexpr"}


def pro(trips, mode, blocks=0):
    return dict(N=32, BM=16, BN=16, PRO=trips, MODE=mode, BLOCKS=blocks)


CP_HEAD = """// cluster-reduce, prologue row statistics (FlashNormAttention's LayerNorm over the heads): a loop
// before the GEMM loop that only sums per-row values over the same tiles is dealt to the CTAs
// too, and its sums are exchanged over DSMEM in one round before the GEMM loop. One chunk per
// case, positive cases first, then the bail-outs (negative_*: the prologue stays whole in every
// CTA, which is correct, while the epilogue split still applies).
// Inputs: TTIR from test/lit/inputs/flash_norm_attention_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{cluster-size=2}' %s 2>/dev/null | FileCheck %s --check-prefix=TWO
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{exchange=global}' %s 2>/dev/null | FileCheck %s --check-prefix=GLOBAL
// RUN: normfuse-opt --split-input-file --pass-pipeline=cluster-reduce,epilogue-norm,residual-acc %s 2>/dev/null | FileCheck %s --check-prefix=PIPE
"""

CP_CASES = [
    ("fna_two_heads", flash_norm_attention_naive, FNA, fna(2, 32, 32), """// Two heads -> a 2-CTA cluster, one head each. The LayerNorm's two sums (16 rows: slots at 0
// and 64 bytes) are exchanged before the attention, the RMSNorm's (slot at 128) after it.
// CHECK-LABEL: tt.func public @fna_two_heads
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 192 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK-NOT: scf.for
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: %[[LN:.+]]:2 = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+64]
// CHECK: arith.mulf %[[LN]]#0
// CHECK: tt.dot
// CHECK: tt.dot
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+128], $2;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+128]
// CHECK: barrier.cluster.arrive.release; mov
// CHECK: barrier.cluster.wait.acquire; mov
// CHECK-NEXT: tt.return
// REMARK: applied: 2 prologue row statistics (a sum over the same 2 tiles before the GEMM loop) split over the cluster too
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 1 row statistic exchanged through distributed shared memory (192 B per CTA)
// GLOBAL-LABEL: tt.func public @fna_two_heads
// GLOBAL: st.global.f32 [%nfa+0], $3; st.global.f32 [%nfa+64], $4;
// GLOBAL: st.global.f32 [%nfa+128], $3;
// Then epilogue-norm: the attention output is normalized in registers, one store of a head's
// output tile (and the three statistics' stores).
// PIPE-LABEL: tt.func public @fna_two_heads
// PIPE: tt.dot
// PIPE: tt.dot
// PIPE-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+128]
// PIPE: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: tt.return"""),
    ("prologue_persistent", _prologue, PRO, pro(2, 0, blocks=4), """// Persistent: both exchanges run once per row block, in the slot set of the block's parity
// (2 statistics x 16 rows x 4 B = 128 B per set, two sets).
// CHECK-LABEL: tt.func public @prologue_persistent
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: scf.for
// CHECK: arith.andi %{{.+}}, %c1_i32
// CHECK: st.shared.f32 [%nfa+0], $2;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.dot
// CHECK: st.shared.f32 [%nfa+64], $2;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: tt.return
// REMARK: applied: 1 prologue row statistic (a sum over the same 2 tiles before the GEMM loop)"""),
    ("fna_four_heads", flash_norm_attention_naive, FNA, dict(fna(4, 32, 32), ACT=4), """// Four heads (softmax). With cluster-size=2 each CTA sums two heads of the prologue, stepping 2.
// CHECK-LABEL: tt.func public @fna_four_heads
// CHECK-SAME: normfuse.cluster_dims = 4
// TWO-LABEL: tt.func public @fna_four_heads
// TWO-SAME: normfuse.cluster_dims = 2
// TWO: %[[RANK:.+]] = arith.remsi
// TWO: scf.for %{{.+}} = %[[RANK]] to %c4_i32 step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<16xf32>, tensor<16xf32>)
// TWO: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// TWO: scf.for %{{.+}} = %[[RANK]] to %c4_i32 step
// TWO: tt.dot
// REMARK: applied: 2 prologue row statistics (a sum over the same 4 tiles"""),
    ("negative_prologue_store", _prologue, PRO, pro(2, 2), """// A store in the prologue loop: it stays whole (every CTA sums all tiles); the epilogue splits.
// CHECK-LABEL: tt.func public @negative_prologue_store
// CHECK-SAME: normfuse.cluster_dims = 2
// CHECK: scf.for %{{.+}} = %c0_i32 to %c2_i32 step %c1_i32 iter_args
// CHECK: tt.store
// REMARK: missed: prologue row statistics not split: 'tt.store' with side effects in the loop
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster"""),
    ("negative_prologue_trips", _prologue, PRO, pro(3, 0), """// The prologue runs three trips, the GEMM loop two: not the same tiles.
// CHECK-LABEL: tt.func public @negative_prologue_trips
// CHECK: scf.for %{{.+}} = %c0_i32 to %c3_i32 step %c1_i32 iter_args
// REMARK: missed: prologue row statistics not split: its 3 trips differ from the GEMM loop's 2"""),
    ("negative_prologue_max", _prologue, PRO, pro(2, 1), """// A running max, not a sum: it does not split over the CTAs' partial sums.
// CHECK-LABEL: tt.func public @negative_prologue_max
// CHECK: scf.for %{{.+}} = %c0_i32 to %c2_i32 step %c1_i32 iter_args
// REMARK: missed: prologue row statistics not split: row statistic %{{.+}} is not a sum over tiles"""),
]


# -- cluster-reduce{merge=true}: one exchange a row block -----------------------------------------


@triton.jit
def _ahead(X, W, Y, eps, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
           BLOCKS: tl.constexpr, CENTRED: tl.constexpr):
    """A software-pipelined walk in small: the first row block's sums before the walk, each trip
    the next block's between the GEMM loop and the normalizing loop, carried to the next trip.
    CENTRED: a second loop before the walk sums (x - mean)^2, the mean from the first's sums."""
    cols = tl.arange(0, BN)
    first = tl.program_id(0)
    step = tl.num_programs(0)
    rows = first * BM + tl.arange(0, BM)
    s = tl.zeros([BM], dtype=tl.float32)
    for t in range(N // BN):
        s += tl.sum(tl.load(X + rows[:, None] * N + t * BN + cols[None, :]).to(tl.float32), axis=1)
    if CENTRED:
        m = s / N
        q = tl.zeros([BM], dtype=tl.float32)
        for t in range(N // BN):
            xc = tl.load(X + rows[:, None] * N + t * BN + cols[None, :]).to(tl.float32) - m[:, None]
            q += tl.sum(xc * xc, axis=1)
        s = q
    for blk in tl.range(first, BLOCKS, step):
        rows = blk * BM + tl.arange(0, BM)
        ss = _gemm_tiles(X, W, Y, rows, cols, s / N, N, BM, BN)
        nxt = (blk + step) * BM + tl.arange(0, BM)
        live = nxt < BLOCKS * BM
        sn = tl.zeros([BM], dtype=tl.float32)
        for t in range(N // BN):
            sn += tl.sum(tl.load(X + nxt[:, None] * N + t * BN + cols[None, :], mask=live[:, None],
                                 other=0.0).to(tl.float32), axis=1)
        _normalize_tiles(Y, rows, cols, 1.0 / tl.sqrt(ss / N + eps), N, BN)
        s = sn


AHEAD = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "eps": "fp32", "N": "constexpr",
         "BM": "constexpr", "BN": "constexpr", "BLOCKS": "constexpr", "CENTRED": "constexpr"}

CM_HEAD = """// cluster-reduce{merge=true}: one cluster exchange a row block in FlashNormAttention's walk. The
// kernel's STATS_AHEAD walk sums row block i + 1's LayerNorm statistics between block i's
// attention (the GEMM loop) and its normalizing loop, and carries them to the next trip; merge
// deals that loop like the GEMM loop and exchanges its partials with the GEMM loop's in one
// exchange (after it), and the loop before the walk (the first block's) in one exchange before
// it (slot set 1, row block -1's). One chunk per case, positive cases first, then the bail-outs.
// Inputs: TTIR from test/lit/inputs/flash_norm_attention_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{merge=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --cluster-reduce %s 2>&1 >/dev/null | FileCheck %s --check-prefix=NOMERGE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{merge=true,gather=once,early-loads=true},epilogue-norm' %s 2>/dev/null | FileCheck %s --check-prefix=PIPE
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce{merge=true},epilogue-norm,reuse-loads{across-dots=true,across-trips=values}' %s 2>%t.carry | FileCheck %s --check-prefix=CARRY
// RUN: FileCheck %s --check-prefix=CARRY-REMARK < %t.carry
"""

CM_CASES = [
    ("fna_ahead_two_heads", flash_norm_attention_naive, FNA,
     fna(2, 32, 32, ROWS=32, STATS_AHEAD=True), """// Two heads walking 32 rows in 16-row blocks. Three statistics a slot set (the RMSNorm's sum
// and the next block's two LayerNorm sums: 3 x 16 rows x 4 B = 192 B), two sets (384 B). The
// first block's LayerNorm sums exchange before the walk, in set 1 (rows + 48 words); in the walk
// one exchange a row block, after the attention's dots, carries all three (slots 0, 64, 128);
// the walk yields the next block's totals. The barrier after the walk keeps the slots alive.
// CHECK-LABEL: tt.func public @fna_ahead_two_heads
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 384 : i32
// CHECK: %[[RANK:.+]] = arith.remsi
// CHECK: %[[SET1:.+]] = arith.addi %{{.+}}, %cst{{.*}} : tensor<16xi32>
// CHECK-NEXT: tt.elementwise_inline_asm "{{.*}}sub.u32 %nfa, %nfa, 384;{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3; mov{{.*}}%[[SET1]]
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: %[[PRE:.+]]:2 = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}%[[SET1]]
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %[[PRE]]#0, %{{.+}} = %[[PRE]]#1) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
// CHECK-NOT: barrier.cluster
// CHECK: tt.dot
// CHECK-NOT: barrier.cluster
// CHECK: tt.dot
// CHECK-NOT: barrier.cluster
// CHECK: arith.andi %{{.+}}, %c1_i32
// CHECK: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3; st.shared.f32 [%nfa+128], $4;
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: %[[TOT:.+]]:3 = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 1;{{.*}}[%nfp+128]
// CHECK-NOT: barrier.cluster
// CHECK: scf.yield %{{.+}}, %[[TOT]]#1, %[[TOT]]#2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NEXT: tt.return
// REMARK: applied: merge: 2 row statistics of 1 loop between the GEMM loop and the normalizing loop (sums over the same tiles: the next row block's in a software-pipelined walk) exchanged with the GEMM loop's 1 in one exchange; 2 of the loop before the walk exchanged once before it
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster; 1 row statistic exchanged through distributed shared memory (384 B per CTA)
// Without merge the walk's carried statistics are refused: the IR stays as it is.
// NOMERGE: missed: the loop over row blocks carries values across row blocks (merge=true takes a walk that carries its next row block's statistics)
// With the default pipeline's options: the exchange's barrier split (early-loads), the totals
// gathered once, and epilogue-norm forwarding z in registers across the next block's sums.
// PIPE-LABEL: tt.func public @fna_ahead_two_heads
// PIPE: scf.for
// PIPE: tt.dot
// PIPE: tt.dot
// PIPE-NOT: barrier.cluster.wait
// PIPE: barrier.cluster.arrive.release; mov
// PIPE-NOT: barrier.cluster.arrive
// PIPE: barrier.cluster.wait.acquire; mov
// PIPE-NOT: barrier.cluster
// PIPE: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE-NOT: tt.store %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// PIPE: scf.yield"""),
    ("fna_carry_two_heads", flash_norm_attention_naive, FNA,
     fna(2, 32, 32, ROWS=32, STATS_AHEAD=2, LN_MMA=True), """// The carry form (STATS_AHEAD = 2, the LayerNorm in the MMA layout): after merge, the walk's
// trip loads the next block's x tile for its sums and converts it (`_in_mma`: a dot of zeros
// onto it); the next trip loaded and converted the same tile again for q and the residuals.
// reuse-loads{across-trips=values} carries the converted tile (fp32) instead: its start is the
// first block's conversion before the walk, the trip yields the next block's, and the walk's
// body has one load of x's tile and one conversion.
// CARRY-LABEL: tt.func public @fna_carry_two_heads
// CARRY: %[[X0:.+]] = tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: %[[C0:.+]] = tt.dot %cst{{.*}}, %cst{{.*}}, %{{.+}} : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
// CARRY: scf.for %{{.+}} iter_args(%{{.+}}, %{{.+}}, %{{.+}}, %[[ARG:.+]] = %[[C0]]) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>)
// CARRY-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: math.fma %[[ARG]],
// CARRY: tt.dot
// CARRY: tt.dot
// CARRY: %[[XN:.+]] = tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: %[[CN:.+]] = tt.dot %cst{{.*}}, %cst{{.*}}, %{{.+}} : tensor<16x16xbf16> * tensor<16x16xbf16> -> tensor<16x16xf32>
// CARRY-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<bf16>>
// CARRY: scf.yield %{{.+}}, %{{.+}}, %{{.+}}, %[[CN]] :
// CARRY-REMARK: applied: across-trips: 1 value (of {{.+}}) takes what the previous trip of the loop computed from the same addresses"""),
    ("ahead_small", _ahead, AHEAD, dict(N=32, BM=16, BN=16, BLOCKS=4, CENTRED=0),
     """// The walk in small (one sum a row, carried): one exchange a row block, the next block's sum
// with the GEMM loop's in slots 0 and 64; the first block's before the walk, in set 1.
// CHECK-LABEL: tt.func public @ahead_small
// CHECK-SAME: normfuse.cluster_dims = 2 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: st.shared.f32 [%nfa+0], $2; mov
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: scf.for
// CHECK: tt.dot
// CHECK-NOT: barrier.cluster
// CHECK: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// CHECK-NEXT: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NOT: barrier.cluster
// CHECK: scf.yield
// REMARK: applied: merge: 1 row statistic of 1 loop between the GEMM loop and the normalizing loop (sums over the same tiles: the next row block's in a software-pipelined walk) exchanged with the GEMM loop's 1 in one exchange; 1 of the loop before the walk exchanged once before it"""),
    ("negative_merge_flat", flash_norm_attention_naive, FNA, fna(2, 32, 32, STATS_AHEAD=True),
     """// One row block a program (no walk: STATS_AHEAD has nothing to pipeline): merge finds no
// statistics loop after the GEMM loop and the two exchanges are built as without it.
// CHECK-LABEL: tt.func public @negative_merge_flat
// CHECK-SAME: normfuse.cluster_smem = 192 : i32
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.dot
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// REMARK: missed: merge: no statistics loop (sums over the same tiles) between the GEMM loop and the normalizing loop
// REMARK: applied: 2 prologue row statistics"""),
    ("negative_merge_centred_pre", _ahead, AHEAD, dict(N=32, BM=16, BN=16, BLOCKS=4, CENTRED=1),
     """// Two statistics loops before the walk, the second centred on the mean of the first's sums (a
// two-pass variance). Their one exchange, after the last of them, would leave the mean reading
// partial sums: merge refuses, every statistics loop stays whole, and the walk keeps the GEMM
// loop's exchange alone (one barrier pair a row block, none before the walk).
// CHECK-LABEL: tt.func public @negative_merge_centred_pre
// CHECK-SAME: normfuse.cluster_smem = 128 : i32
// CHECK-NOT: barrier.cluster
// CHECK: arith.divf
// CHECK-NOT: barrier.cluster
// CHECK: tt.dot
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK-NOT: barrier.cluster
// CHECK: scf.yield
// REMARK: missed: merge: 'arith.divf' reads the row sums of a statistics loop before the walk before their exchange (one, after the last such loop) would total them; the statistics loops before the walk, and those after the GEMM loop, are left whole
// REMARK-NOT: applied: merge:
// REMARK: applied: row of 2 N tiles split over a 2-CTA cluster"""),
]


def outputs() -> dict:
    return {"residual-acc.mlir": litgen.lit_text(RA_HEAD, RA_CASES),
            "cluster-reduce-prologue.mlir": litgen.lit_text(CP_HEAD, CP_CASES),
            "cluster-reduce-merge.mlir": litgen.lit_text(CM_HEAD, CM_CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
