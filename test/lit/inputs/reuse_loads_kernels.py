"""Writes test/lit/reuse-loads.mlir: TTIR of small kernels that load a tile twice, with
hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/reuse_loads_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

import litgen


@triton.jit
def _twice(X, W, Y, S, n, MODE: tl.constexpr):
    """A row block's statistics from X's tile, then the tile scaled and stored: the obvious kernel
    loads the tile twice, spelling its address two ways (MODE 0). MODE 1: the second load has
    another mask; 2: a GEMM between the two loads; 3: the statistics are stored into X, so the
    second load may read them; 4: the second load reads W."""
    rows = tl.program_id(0) * 16 + tl.arange(0, 16)
    cols = tl.arange(0, 16)
    rmask = rows < n
    a = tl.load(X + rows[:, None] * 16 + cols[None, :], mask=rmask[:, None], other=0.0)
    s = tl.sum(a * a, axis=1)
    if MODE == 3:
        tl.store(X + rows * 16, s, mask=rmask)
    if MODE == 2:
        w = tl.load(W + cols[:, None] * 16 + cols[None, :])
        s = s + tl.sum(tl.dot(a, w), axis=1)
    ptrs = X + (rows * 16)[:, None] + cols[None, :]
    if MODE == 1:
        b = tl.load(ptrs, mask=rmask[:, None] & (cols[None, :] < 8), other=0.0)
    elif MODE == 4:
        b = tl.load(W + (rows * 16)[:, None] + cols[None, :], mask=rmask[:, None], other=0.0)
    else:
        b = tl.load(ptrs, mask=rmask[:, None], other=0.0)
    tl.store(Y + rows[:, None] * 16 + cols[None, :], b * s[:, None], mask=rmask[:, None])
    tl.store(S + rows, s, mask=rmask)


SIG = {"X": "*fp32", "W": "*fp32", "Y": "*fp32", "S": "*fp32", "n": "i32", "MODE": "constexpr"}


@triton.jit
def _walk(X, Y, n, MODE: tl.constexpr):
    """A walk over 16-row blocks, software-pipelined as FlashNormAttention's STATS_AHEAD walk:
    each trip scales its block's tile by the row sums the previous trip took from it, and loads
    the next block's tile for its sums. MODE 0: the first block's tile is loaded before the
    walk (the carry's start); 1: it is not (its sums start at zero); 2: the walk stores into X,
    so a trip's load may read what the previous trip stored."""
    r0 = tl.arange(0, 16)
    cols = tl.arange(0, 16)
    if MODE == 1:
        s = tl.zeros([16], dtype=tl.float32)
    else:
        a0 = tl.load(X + r0[:, None] * 16 + cols[None, :], mask=(r0 < n)[:, None], other=0.0)
        s = tl.sum(a0, axis=1)
    for rb in range(0, n, 16):
        rows = rb + r0
        a = tl.load(X + rows[:, None] * 16 + cols[None, :], mask=(rows < n)[:, None], other=0.0)
        tl.store(Y + rows[:, None] * 16 + cols[None, :], a * s[:, None], mask=(rows < n)[:, None])
        nxt = rows + 16
        b = tl.load(X + nxt[:, None] * 16 + cols[None, :], mask=(nxt < n)[:, None], other=0.0)
        s = tl.sum(b, axis=1)
        if MODE == 2:
            tl.store(X + rows * 16, s, mask=rows < n)


WALK_SIG = {"X": "*fp32", "Y": "*fp32", "n": "i32", "MODE": "constexpr"}


@triton.jit
def _stream(X, Y, n):
    """The walk without loop-carried values (its scf.yield elided in the TTIR): each trip adds
    its block's tile and the next block's; the first block's tile is loaded before the walk."""
    r0 = tl.arange(0, 16)
    cols = tl.arange(0, 16)
    a0 = tl.load(X + r0[:, None] * 16 + cols[None, :], mask=(r0 < n)[:, None], other=0.0)
    tl.store(Y + 4096 + cols, tl.sum(a0, axis=0))
    for rb in range(0, n, 16):
        rows = rb + r0
        a = tl.load(X + rows[:, None] * 16 + cols[None, :], mask=(rows < n)[:, None], other=0.0)
        nxt = rows + 16
        b = tl.load(X + nxt[:, None] * 16 + cols[None, :], mask=(nxt < n)[:, None], other=0.0)
        tl.store(Y + rows[:, None] * 16 + cols[None, :], a + b, mask=(rows < n)[:, None])


STREAM_SIG = {"X": "*fp32", "Y": "*fp32", "n": "i32"}


@triton.jit
def _walk_twin(X, Y, N, MODE: tl.constexpr):
    """The walk's rows bounded by m, its first block's tile loaded before it under a bound that
    has m's form but not its value. MODE 0: m = sum(c), the first block's bound max(c) (two
    tt.reduce of c: one form, the combiners are in their regions); 1: m loaded from N, the
    first block's bound loaded from N again after the kernel stored 0 there (two loads of one
    address: one form)."""
    r0 = tl.arange(0, 16)
    cols = tl.arange(0, 16)
    c = tl.load(X + 2048 + cols)
    if MODE == 0:
        m = tl.sum(c, axis=0)
        m0 = tl.max(c, axis=0)
    else:
        m = tl.load(N)
        tl.store(N, 0)
        m0 = tl.load(N)
    a0 = tl.load(X + r0[:, None] * 16 + cols[None, :], mask=(r0 < m0)[:, None], other=0.0)
    tl.store(Y + 4096 + r0[:, None] * 16 + cols[None, :], a0)
    acc = tl.zeros([16, 16], dtype=tl.float32)
    for rb in range(0, 64, 16):
        rows = rb + r0
        a = tl.load(X + rows[:, None] * 16 + cols[None, :], mask=(rows < m)[:, None], other=0.0)
        nxt = rows + 16
        b = tl.load(X + nxt[:, None] * 16 + cols[None, :], mask=(nxt < m)[:, None], other=0.0)
        acc += 2.0 * a - b
    tl.store(Y + r0[:, None] * 16 + cols[None, :], acc)


WALK_TWIN_SIG = {"X": "*fp32", "Y": "*fp32", "N": "*i32", "MODE": "constexpr"}


@triton.jit
def _bounds(X, Y):
    """One block loads X's first 16 values twice, masked by cols < sum(c) and by cols < max(c):
    the two masks have one form (two tt.reduce of c), not one value."""
    cols = tl.arange(0, 16)
    c = tl.load(X + 16 + cols)
    a = tl.load(X + cols, mask=cols < tl.sum(c, axis=0), other=0.0)
    b = tl.load(X + cols, mask=cols < tl.max(c, axis=0), other=0.0)
    tl.store(Y + cols, 2.0 * a + b)


BOUNDS_SIG = {"X": "*fp32", "Y": "*fp32"}

HEAD = """// reuse-loads: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/reuse_loads_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --reuse-loads %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --pass-pipeline='reuse-loads{across-dots=true}' %s 2>&1 >/dev/null | FileCheck %s --check-prefix=ACROSS
// RUN: normfuse-opt --split-input-file --pass-pipeline='reuse-loads{across-trips=true}' %s 2>%t.trips | FileCheck %s --check-prefix=TRIPS
// RUN: FileCheck %s --check-prefix=TRIPS-REMARK < %t.trips
"""

ONE_LOAD = """// CHECK: %[[A:.+]] = tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.reduce
// CHECK-NOT: tt.load %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: arith.mulf %[[A]], %{{.+}} : tensor<16x16xf32>
// CHECK-NEXT: tt.store"""

TWO_LOADS = """// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x16x!tt.ptr<f32>>"""

CASES = [
    ("twice", _twice, SIG, dict(MODE=0), f"""// The tile's second load (its address spelled (X + rows * 16) + cols, the first
// X + (rows * 16 + cols)) reads what the first read: its users take the first load's value.
// CHECK-LABEL: tt.func public @twice
{ONE_LOAD}
// REMARK: applied: 1 load (of arg0) reuses an earlier load of the same addresses in the same block"""),
    ("walk", _walk, WALK_SIG, dict(MODE=0), """// The walk loads each block's tile twice, as the next block's in one trip and as its own in
// the next. Without across-trips both loads stay in the loop; with it the loop carries the
// next block's tile (started from the load before the loop), and its trip loads it once.
// CHECK-LABEL: tt.func public @walk
// CHECK: scf.for
// CHECK-COUNT-2: tt.load
// CHECK: scf.yield
// TRIPS-LABEL: tt.func public @walk
// TRIPS: %[[FIRST:.+]] = tt.load
// TRIPS: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[CUR:.+]] = %[[FIRST]])
// TRIPS: arith.mulf %[[CUR]]
// TRIPS: %[[NEXT:.+]] = tt.load
// TRIPS-NOT: tt.load
// TRIPS: scf.yield %{{.+}}, %[[NEXT]]
// REMARK: missed: no load reused: no two loads of the same addresses
// TRIPS-REMARK: applied: across-trips: 1 load (of arg0) takes what the previous trip of the loop computed from the same addresses"""),
    ("stream", _stream, STREAM_SIG, {}, """// The walk carries nothing, so its TTIR elides the loop's scf.yield: across-trips builds
// one for the carried tile (it raised an internal error).
// CHECK-LABEL: tt.func public @stream
// TRIPS-LABEL: tt.func public @stream
// TRIPS: %[[FIRST:.+]] = tt.load
// TRIPS: %{{.+}} = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[CUR:.+]] = %[[FIRST]]) -> (tensor<16x16xf32>)
// TRIPS: %[[NEXT:.+]] = tt.load
// TRIPS-NOT: tt.load
// TRIPS: arith.addf %[[CUR]], %[[NEXT]]
// TRIPS: scf.yield %[[NEXT]] : tensor<16x16xf32>
// REMARK: missed: no load reused: no two loads of the same addresses
// TRIPS-REMARK: applied: across-trips: 1 load (of arg0) takes what the previous trip of the loop computed from the same addresses"""),
    ("negative_mask", _twice, SIG, dict(MODE=1), f"""// Another mask: other elements read, both loads stay.
// CHECK-LABEL: tt.func public @negative_mask
{TWO_LOADS}
// REMARK: missed: no load reused: no two loads of the same addresses"""),
    ("negative_dot", _twice, SIG, dict(MODE=2), f"""// A dot between them: the tile would stay live across it, both loads stay.
// CHECK-LABEL: tt.func public @negative_dot
{TWO_LOADS}
// REMARK: missed: no load reused: 'tt.dot' between two loads of arg0 (the tile would stay live across it)
// With across-dots=true the dot does not stop it; the other cases answer as without the
// option (the remarks of all twelve chunks, in order):
// ACROSS: applied: 1 load (of arg0) reuses an earlier load
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: applied: 1 load (of arg0) reuses an earlier load
// ACROSS-NEXT: missed: no load reused: the kernel writes the memory of arg0
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: no two loads of the same addresses
// ACROSS-NEXT: missed: no load reused: the kernel writes the memory of arg2
// ACROSS-NEXT: missed: no load reused: a value computed from 'tt.reduce'"""),
    ("negative_written", _twice, SIG, dict(MODE=3), f"""// The kernel stores into X between the loads: the second may read what was stored.
// CHECK-LABEL: tt.func public @negative_written
{TWO_LOADS}
// REMARK: missed: no load reused: the kernel writes the memory of arg0"""),
    ("negative_other_tensor", _twice, SIG, dict(MODE=4), f"""// The second load reads W at the same offsets: other memory.
// CHECK-LABEL: tt.func public @negative_other_tensor
{TWO_LOADS}
// REMARK: missed: no load reused: no two loads of the same addresses"""),
    ("negative_walk_no_start", _walk, WALK_SIG, dict(MODE=1), """// No load of the first block's tile before the walk: nothing to start the carry from.
// CHECK-LABEL: tt.func public @negative_walk_no_start
// TRIPS-LABEL: tt.func public @negative_walk_no_start
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: no twin of a value of arg0 before its loop"""),
    ("negative_walk_written", _walk, WALK_SIG, dict(MODE=2), """// The walk stores into X: the next trip's load may read what this trip stored.
// CHECK-LABEL: tt.func public @negative_walk_written
// TRIPS-LABEL: tt.func public @negative_walk_written
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: a value computed from memory the kernel writes"""),
    ("negative_walk_twin_reduce", _walk_twin, WALK_TWIN_SIG, dict(MODE=0), """// The first block's tile before the walk is masked by max(c), the walk's by sum(c): one form
// (a tt.reduce's combiner is in its region), two values. Not the carry's start.
// CHECK-LABEL: tt.func public @negative_walk_twin_reduce
// TRIPS-LABEL: tt.func public @negative_walk_twin_reduce
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: a value computed from 'tt.reduce' (its regions are not compared"""),
    ("negative_walk_twin_written", _walk_twin, WALK_TWIN_SIG, dict(MODE=1), """// The first block's tile before the walk is masked by a bound loaded from N after the kernel
// stored to N, the walk's by one loaded before: one form, two values. Not the carry's start.
// CHECK-LABEL: tt.func public @negative_walk_twin_written
// TRIPS-LABEL: tt.func public @negative_walk_twin_written
// TRIPS: scf.for
// TRIPS-COUNT-2: tt.load
// TRIPS-REMARK: missed: across-trips: nothing carried: a value computed from memory the kernel writes (arg2"""),
    ("negative_bounds_reduce", _bounds, BOUNDS_SIG, {}, """// Two loads of X's first values masked by cols < sum(c) and cols < max(c): one form, two
// masks. Both loads stay.
// CHECK-LABEL: tt.func public @negative_bounds_reduce
// CHECK-COUNT-2: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load reused: a value computed from 'tt.reduce' (its regions are not compared"""),
]


def outputs() -> dict:
    return {"reuse-loads.mlir": litgen.lit_text(HEAD, CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
