"""Writes test/lit/hoist-loads.mlir: TTIR of small loops with hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/hoist_loads_kernels.py [--check]
"""
import sys

import triton
import triton.language as tl

import litgen


@triton.jit
def _walk(K, X, Y, lo, hi, n, MODE: tl.constexpr):
    """A program walking rows lo..hi of X in steps of 16 and adding a vector of K to each:
    MODE 0 the obvious kernel (K loaded in every trip), 1 K's address moves with the trip,
    2 K read without a mask, 3 the vector read from Y, which the loop also writes."""
    offs = tl.arange(0, 16)
    for r in range(lo, hi, 16):
        if MODE == 1:
            k = tl.load(K + r + offs, mask=offs < n, other=0.0)
        elif MODE == 2:
            k = tl.load(K + offs)
        elif MODE == 3:
            k = tl.load(Y + offs, mask=offs < n, other=0.0)
        else:
            k = tl.load(K + offs, mask=offs < n, other=0.0)
        x = tl.load(X + r * 16 + offs[:, None] * 16 + offs[None, :])
        tl.store(Y + r * 16 + offs[:, None] * 16 + offs[None, :], x + k[None, :])


SIG = {"K": "*fp32", "X": "*fp32", "Y": "*fp32", "lo": "i32", "hi": "i32", "n": "i32",
       "MODE": "constexpr"}

HEAD = """// hoist-loads: one chunk per case, positive cases first, then the bail-outs (negative_*).
// Inputs: TTIR from test/lit/inputs/hoist_loads_kernels.py (locations stripped).
// RUN: normfuse-opt --split-input-file --hoist-loads %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
"""

CASES = [
    ("walk", _walk, SIG, dict(MODE=0), """// K's vector, loaded in every trip from memory the kernel never writes, is loaded once before
// the loop, its mask joined with the loop's trip condition (a loop of no trips reads nothing).
// CHECK-LABEL: tt.func public @walk
// CHECK: %[[RUNS:.+]] = arith.cmpi slt, %arg3, %arg4 : i32
// CHECK: %[[SPLAT:.+]] = tt.splat %[[RUNS]] : i1 -> tensor<16xi1>
// CHECK: %[[MASK:.+]] = arith.andi %{{.+}}, %[[SPLAT]] : tensor<16xi1>
// CHECK: %[[K:.+]] = tt.load %{{.+}}, %[[MASK]], %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK: scf.for
// CHECK-NOT: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// CHECK: tt.expand_dims %[[K]]
// REMARK: applied: 1 loop-invariant load (of arg0) hoisted out of their loop, masked by its trip condition"""),
    ("negative_moves", _walk, SIG, dict(MODE=1), """// K's address depends on the trip: it stays.
// CHECK-LABEL: tt.func public @negative_moves
// CHECK: scf.for
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load hoisted: its address or mask changes from trip to trip"""),
    ("negative_unmasked", _walk, SIG, dict(MODE=2), """// No mask to join the trip condition with: it stays.
// CHECK-LABEL: tt.func public @negative_unmasked
// CHECK: scf.for
// CHECK: tt.load %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load hoisted: a load without a mask and other"""),
    ("negative_written", _walk, SIG, dict(MODE=3), """// The vector is read from Y, which the loop stores to: a later trip may read what an earlier
// one wrote, so it stays.
// CHECK-LABEL: tt.func public @negative_written
// CHECK: scf.for
// CHECK: tt.load %{{.+}}, %{{.+}}, %{{.+}} : tensor<16x!tt.ptr<f32>>
// REMARK: missed: no load hoisted: the kernel writes the memory of"""),
]


def outputs() -> dict:
    return {"hoist-loads.mlir": litgen.lit_text(HEAD, CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
