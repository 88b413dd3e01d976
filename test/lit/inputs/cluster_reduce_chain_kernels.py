"""Writes test/lit/cluster-reduce-chain.mlir: TTIR of small chains of loops over heads (and the
FlashNormAttention backward's rows kernel) with hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/cluster_reduce_chain_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

from normfuse.kernels.attention_bwd import fna_bwd_rows_naive
import litgen

BM, D = 16, 16


@triton.jit
def _tile(P, rows, h, H: tl.constexpr, D: tl.constexpr):
    return P + (rows[:, None] * H + h) * D + tl.arange(0, D)[None, :]


@triton.jit
def chain_three_loops(X, Z, G, Y, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    # RMS over heads, then a LayerNorm of the result over heads: three loops, two exchanges
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        tl.store(_tile(Z, rows, h, H, D), x)
        ss += tl.sum(x * x, 1)
    r = 1.0 / tl.sqrt(ss / (H * D) + 1e-5)
    s1 = tl.zeros([BM], dtype=tl.float32)
    s2 = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        y = tl.load(_tile(Z, rows, h, H, D)) * r[:, None] + 1.0
        tl.store(_tile(G, rows, h, H, D), y)
        s1 += tl.sum(y, 1)
        s2 += tl.sum(y * y, 1)
    mean = s1 / (H * D)
    rstd = 1.0 / tl.sqrt(s2 / (H * D) - mean * mean + 1e-5)
    for h in range(0, H):
        y = tl.load(_tile(G, rows, h, H, D))
        tl.store(_tile(Y, rows, h, H, D), ((y - mean[:, None]) * rstd[:, None]).to(tl.bfloat16))


@triton.jit
def chain_two_loops(X, Z, Y, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    # one exchange: an RMSNorm over heads, the loops spelled over offsets h * D
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        tl.store(_tile(Z, rows, h, H, D), x)
        ss += tl.sum(x * x, 1)
    r = 1.0 / tl.sqrt(ss / (H * D) + 1e-5)
    for h in range(0, H):
        y = tl.load(_tile(Z, rows, h, H, D)) * r[:, None]
        tl.store(_tile(Y, rows, h, H, D), y.to(tl.bfloat16))


@triton.jit
def chain_conditional_store(X, Z, Y, FLAG, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    # the stored tile is written only when FLAG != 0: split, but the reload is not forwarded
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        if FLAG != 0:
            tl.store(_tile(Z, rows, h, H, D), x * 2.0)
        ss += tl.sum(x * x, 1)
    r = 1.0 / tl.sqrt(ss / (H * D) + 1e-5)
    for h in range(0, H):
        y = tl.load(_tile(Z, rows, h, H, D)) * r[:, None]
        tl.store(_tile(Y, rows, h, H, D), y.to(tl.bfloat16))


@triton.jit
def negative_other_head(X, Z, Y, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        tl.store(_tile(Z, rows, h, H, D), x)
        ss += tl.sum(x * x, 1)
    r = 1.0 / tl.sqrt(ss / (H * D) + 1e-5)
    for h in range(0, H):
        # reads the next head's tile: stored by another CTA once the heads are dealt
        y = tl.load(_tile(Z, rows, (h + 1) % H, H, D)) * r[:, None]
        tl.store(_tile(Y, rows, h, H, D), y.to(tl.bfloat16))


@triton.jit
def negative_store_outside(X, Z, Y, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    tl.store(Y + rows * 0, tl.zeros([BM], dtype=tl.bfloat16))  # would run in every CTA
    ss = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        tl.store(_tile(Z, rows, h, H, D), x)
        ss += tl.sum(x * x, 1)
    r = 1.0 / tl.sqrt(ss / (H * D) + 1e-5)
    for h in range(0, H):
        y = tl.load(_tile(Z, rows, h, H, D)) * r[:, None]
        tl.store(_tile(Y, rows, h, H, D), y.to(tl.bfloat16))


@triton.jit
def negative_max_stat(X, Z, Y, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    mx = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        tl.store(_tile(Z, rows, h, H, D), x)
        mx = tl.maximum(mx, tl.max(tl.abs(x), 1))  # not a sum: the partials do not add up
    for h in range(0, H):
        y = tl.load(_tile(Z, rows, h, H, D)) / mx[:, None]
        tl.store(_tile(Y, rows, h, H, D), y.to(tl.bfloat16))


@triton.jit
def negative_different_trips(X, Z, Y, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        tl.store(_tile(Z, rows, h, H, D), x)
        ss += tl.sum(x * x, 1)
    r = 1.0 / tl.sqrt(ss / (H * D) + 1e-5)
    for h in range(0, H - 1):  # one head fewer
        y = tl.load(_tile(Z, rows, h, H, D)) * r[:, None]
        tl.store(_tile(Y, rows, h, H, D), y.to(tl.bfloat16))


@triton.jit
def negative_last_carries(X, Z, Y, H: tl.constexpr, BM: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    ss = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        x = tl.load(_tile(X, rows, h, H, D)).to(tl.float32)
        tl.store(_tile(Z, rows, h, H, D), x)
        ss += tl.sum(x * x, 1)
    r = 1.0 / tl.sqrt(ss / (H * D) + 1e-5)
    t = tl.zeros([BM], dtype=tl.float32)
    for h in range(0, H):
        y = tl.load(_tile(Z, rows, h, H, D)) * r[:, None]
        t += tl.sum(y, 1)
    tl.store(Y + rows, t.to(tl.bfloat16))


SMALL = {"X": "*bf16", "Z": "*fp32", "Y": "*bf16", "H": "constexpr", "BM": "constexpr",
         "D": "constexpr"}
THREE = {"X": "*bf16", "Z": "*fp32", "G": "*fp32", "Y": "*bf16", "H": "constexpr",
         "BM": "constexpr", "D": "constexpr"}
ROWS = {"X": "*bf16", "DOUT": "*bf16", "K": "*bf16", "V": "*bf16", "MEAN": "*fp32", "RSTD": "*fp32",
        "RRMS": "*fp32", "LNW": "*bf16", "LNB": "*bf16", "RMSW": "*bf16", "ROWS": "*i32",
        "Z": "*fp32", "DZ": "*bf16", "DLNQ": "*fp32", "STAT": "*fp32", "DX": "*bf16",
        "DW_PART": "*fp32", "L": "i32", "stride_kb": "i32", "stride_kl": "i32", "qk_scale": "fp32",
        "H": "constexpr", "HKV": "constexpr", "D": "constexpr", "ACT": "constexpr",
        "BLOCK_M": "constexpr", "BLOCK_L": "constexpr", "HAS_LNW": "constexpr",
        "HAS_LNB": "constexpr", "HAS_RMSW": "constexpr"}

HEAD = """\
// cluster-reduce-chain: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/cluster_reduce_chain_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --cluster-reduce-chain %s >%t 2>%t.remark
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=FWD < %t
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{forward-reloads=false}' %s 2>/dev/null | FileCheck %s --check-prefix=NOFWD
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{cluster-size=2}' %s 2>/dev/null | FileCheck %s --check-prefix=TWO
// RUN: not normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{cluster-size=17}' %s 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{scratch=arg11:arg13}' %s >%t.scratch 2>%t.scratch-remark
// RUN: FileCheck %s --check-prefix=SCRATCH < %t.scratch
// RUN: FileCheck %s --check-prefix=SCRATCH-REMARK < %t.scratch-remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='cluster-reduce-chain{scratch=arg12:arg99}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=NOSCRATCH

// BADOPT: option cluster-reduce-chain{cluster-size} must be in 2..16, got 17
"""

CASES = [
    ("chain_three_loops", chain_three_loops, THREE, dict(H=4, BM=BM, D=D), """\
// Three loops over 4 heads -> a 4-CTA cluster, one head per CTA; two exchanges (1 sum, then 2)
// in alternating slot sets (2 x 128 B), an arrive after the last reads, the wait before the return.
// CHECK-LABEL: tt.func public @chain_three_loops
// CHECK-SAME: normfuse.cluster_dims = 4 : i32, normfuse.cluster_smem = 256 : i32
// CHECK: %[[PID:.+]] = tt.get_program_id x
// CHECK: %[[RANK:.+]] = arith.remsi %[[PID]], %[[C:.+]] : i32
// CHECK: %[[BLK:.+]] = arith.divsi %[[PID]], %[[C]] : i32
// CHECK-NOT: scf.for
// CHECK: %[[P1:.+]] = arith.addf %{{.+}} : tensor<16xf32>
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2;{{.*}}" {{.*}} %[[ROWS:.+]], %[[P1]] :
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: %[[T1:.+]] = tt.elementwise_inline_asm "{{.*}}mapa.shared::cluster.u32 %nfp, %nfa, 3;{{.*}}" {{.*}} %[[ROWS]] : tensor<16xi32> -> tensor<16xf32>
// CHECK: arith.divf %[[T1]]
// CHECK: %[[SET1:.+]] = arith.addi %{{.+}}, %{{.+}} : tensor<16xi32>
// CHECK: tt.elementwise_inline_asm "{{.*}}st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;{{.*}}" {{.*}} %[[SET1]], %{{.+}}, %{{.+}} :
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.elementwise_inline_asm "{{.*}}mapa{{.*}}" {{.*}} %[[SET1]] : tensor<16xi32> -> tensor<16xf32>, tensor<16xf32>
// CHECK: barrier.cluster.arrive.release; mov
// CHECK: tt.store
// CHECK: barrier.cluster.wait.acquire; mov
// CHECK-NEXT: tt.return
// REMARK: remark: [cluster-reduce-chain] applied: chain of 3 loops of 4 trips split over a 4-CTA cluster, one trip per CTA (the loops inlined, 2 reloads of this CTA's own stores forwarded through registers); 2 exchanges of 1, 2 row sum(s) through distributed shared memory (256 B per CTA, 2 slot sets)
// The reloads of Z and G read what this CTA stored: forwarded, only the load of X is left.
// FWD-LABEL: tt.func public @chain_three_loops
// FWD: tt.load
// FWD-NOT: tt.load
// FWD: tt.return
// NOFWD-LABEL: tt.func public @chain_three_loops
// NOFWD-COUNT-3: tt.load
// NOFWD-NOT: tt.load
// NOFWD: tt.return
// TWO-LABEL: tt.func public @chain_three_loops
// TWO-SAME: normfuse.cluster_dims = 2 : i32
// TWO: scf.for %{{.+}} = %[[RANK:.+]] to %{{.+}} step %[[C2:.+]] iter_args
// TWO: scf.for %{{.+}} = %[[RANK]] to %{{.+}} step %[[C2]] iter_args
// TWO: scf.for %{{.+}} = %[[RANK]] to %{{.+}} step %[[C2]]  : i32
"""),
    ("chain_two_loops", chain_two_loops, SMALL, dict(H=3, BM=BM, D=D), """\
// Two loops over 3 heads -> a 3-CTA cluster, one exchange, one slot set.
// CHECK-LABEL: tt.func public @chain_two_loops
// CHECK-SAME: normfuse.cluster_dims = 3 : i32, normfuse.cluster_smem = 64 : i32
// CHECK-NOT: scf.for
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 2;
// CHECK-NOT: mapa.shared::cluster.u32 %nfp, %nfa, 3;
// REMARK: remark: [cluster-reduce-chain] applied: chain of 2 loops of 3 trips split over a 3-CTA cluster, one trip per CTA (the loops inlined, 1 reload of this CTA's own stores forwarded through registers); 1 exchanges of 1 row sum(s) through distributed shared memory (64 B per CTA, 1 slot set)
// TWO-LABEL: tt.func public @chain_two_loops
// TWO-SAME: normfuse.cluster_dims = 2 : i32
"""),
    ("fna_bwd_rows", fna_bwd_rows_naive, ROWS,
     dict(H=2, HKV=1, D=16, ACT=0, BLOCK_M=16, BLOCK_L=16, HAS_LNW=True, HAS_LNB=True, HAS_RMSW=True),
     """\
// The FlashNormAttention backward's rows kernel (H = 2): RMS backward sum, then the two LN
// backward sums, exchanged over a 2-CTA cluster; the attention backward's dots stay per CTA.
// CHECK-LABEL: tt.func public @fna_bwd_rows
// CHECK-SAME: normfuse.cluster_dims = 2 : i32
// CHECK-NOT: scf.for %{{.+}} = %c0_i32 to %c2_i32
// CHECK: tt.dot
// CHECK: st.shared.f32 [%nfa+0], $2;
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 1;
// CHECK: tt.dot
// CHECK: st.shared.f32 [%nfa+0], $2; st.shared.f32 [%nfa+64], $3;
// CHECK: mapa.shared::cluster.u32 %nfp, %nfa, 1;
// CHECK: barrier.cluster.arrive.release; mov
// CHECK: tt.store
// CHECK: barrier.cluster.wait.acquire; mov
// REMARK: remark: [cluster-reduce-chain] applied: chain of 3 loops of 2 trips split over a 2-CTA cluster
// With z (arg11, Z) and dlnq (arg13, DLNQ) declared scratch (the op allocates them for this
// kernel alone; TTIR without locations names its parameters by position), their stores go once
// every reload is forwarded: no fp32 [16, 16] tile store is left, dz's bf16 one (arg12, which
// the dK / dV kernel reads) stays.
// SCRATCH-LABEL: tt.func public @fna_bwd_rows
// SCRATCH-NOT: tt.store {{.*}} : tensor<16x16x!tt.ptr<f32>>
// SCRATCH: tt.store {{.*}} : tensor<16x16x!tt.ptr<bf16>>
// SCRATCH-NOT: tt.store {{.*}} : tensor<16x16x!tt.ptr<f32>>
// SCRATCH: tt.return
// SCRATCH-REMARK: remark: [cluster-reduce-chain] applied: chain of 3 loops of 2 trips split over a 2-CTA cluster, {{.*}}; the stores to scratch arg11, arg13 erased (every reload forwarded)
// A parameter the kernel never reloads is its caller's (dz), and a name that is no parameter is
// said so; both keep their stores.
// NOSCRATCH: remark: [cluster-reduce-chain] applied: chain of 3 loops of 2 trips split over a 2-CTA cluster, {{.*}}; scratch kept: 'arg12' (the kernel never reloads it: what it stores is its caller's); 'arg99' is not a pointer parameter of the kernel
"""),
    ("chain_conditional_store", chain_conditional_store, dict(SMALL, FLAG="i32"),
     dict(H=2, BM=BM, D=D), """\
// The store of loop 1 runs under an scf.if: the heads are split, the reload stays a load.
// CHECK-LABEL: tt.func public @chain_conditional_store
// CHECK-SAME: normfuse.cluster_dims = 2 : i32
// CHECK: scf.if
// CHECK: tt.store
// CHECK: barrier.cluster.arrive.release; barrier.cluster.wait.acquire;
// CHECK: tt.load
// REMARK: remark: [cluster-reduce-chain] applied: chain of 2 loops of 2 trips split over a 2-CTA cluster, one trip per CTA (the loops inlined); 1 exchanges
"""),
    ("negative_other_head", negative_other_head, SMALL, dict(H=4, BM=BM, D=D), """\
// Loop 2 reads the next head's tile, which another CTA stores once the heads are dealt: bail out.
// CHECK-LABEL: tt.func public @negative_other_head
// CHECK-NOT: normfuse.cluster_dims
// CHECK-NOT: inline_asm
// REMARK: remark: [cluster-reduce-chain] missed: loop 2 of the chain reads memory loop 1 stores at addresses not proven to be the ones the same trip stored (another CTA's)
"""),
    ("negative_store_outside", negative_store_outside, SMALL, dict(H=4, BM=BM, D=D), """\
// A store before the loops would run in every CTA of the cluster: bail out.
// CHECK-LABEL: tt.func public @negative_store_outside
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: 'tt.store' with side effects outside the chain's loops (it would run in every CTA)
"""),
    ("negative_max_stat", negative_max_stat, SMALL, dict(H=4, BM=BM, D=D), """\
// A running max is not a sum: partials over CTAs cannot be added: bail out.
// CHECK-LABEL: tt.func public @negative_max_stat
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: row sum {{.+}} is not a sum over trips (%s + x)
"""),
    ("negative_different_trips", negative_different_trips, SMALL, dict(H=4, BM=BM, D=D), """\
// The second loop runs one head fewer: no chain of equal loops: bail out.
// CHECK-LABEL: tt.func public @negative_different_trips
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: no two loops with the same constant bounds
"""),
    ("negative_last_carries", negative_last_carries, SMALL, dict(H=4, BM=BM, D=D), """\
// The last loop carries a value across heads: nothing would exchange it: bail out.
// CHECK-LABEL: tt.func public @negative_last_carries
// CHECK-NOT: normfuse.cluster_dims
// REMARK: remark: [cluster-reduce-chain] missed: the last loop of the chain carries values across trips
"""),
]


def outputs() -> dict:
    return {"cluster-reduce-chain.mlir": litgen.lit_text(HEAD, CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
