"""Writes test/lit/hopper-ws-stats-mma.mlir: the op's pre-norm kernels after lazy-prenorm (what
hopper-ws sees in the default pipeline), LayerNorm with g and beta folded first (its sum of x
is the A tiles' plain row sum: hopper-ws{stats-mma} gives it to the tensor cores), then two that
keep their statistics in the registers: RMSNorm (no plain row sum) and LayerNorm with g and beta
in the k-loop (the A operand is computed in registers).

    PYTHONPATH=python python3 test/lit/inputs/stats_mma_kernels.py
"""
import os
import re
import warnings

HEADER = """// hopper-ws{stats-mma=true}: a row statistic that is the A tiles' plain row sum (LayerNorm's sum
// of x with g and beta folded) computed by the tensor cores: per k-step an m64n8 wgmma of the A
// tile against the [8, BK] tile e_1 (ones in its first row, filled before the partitions start),
// the waits leaving two groups in flight; the sum of squares stays in the registers, after the
// wait (stats-late). RMSNorm and LayerNorm with g and beta in the loop keep both in the registers
// and the remark says why. Inputs: TTIR from test/lit/inputs/stats_mma_kernels.py (the op's
// kernels after lazy-prenorm, locations stripped).
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{stats-mma=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
// RUN: normfuse-opt --split-input-file --hopper-ws %s 2>&1 >/dev/null | FileCheck %s --check-prefix=DEFAULT

// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 stats-late mma-sum(0), persistent, B [N, K]; 2 row statistic(s) from the A tiles in the MMA warps (each k-step's after the wait for the previous wgmma); statistic 0 (the row sum) by the tensor cores
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 stats-late, persistent, B [N, K]; 1 row statistic(s){{.*}}stats-mma not applied: no statistic is the plain row sum of the A tile
// REMARK: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; 2 row statistic(s){{.*}}stats-mma not applied: the A operand is computed in the k-loop (g or beta not folded)
// DEFAULT: applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8, persistent, B [N, K]; 2 row statistic(s) from the A tiles in the MMA warps; A straight

"""

CHECKS = ["""// LayerNorm, g and beta folded: the ones tile is filled and fenced before the partitions; in the
// k-loop the row-sum wgmma (n = 8) follows the main one (n = 256), the wait leaves 2 in flight.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.local_alloc {{.*}} -> !ttg.memdesc<8x64xbf16
// CHECK: ttg.local_store
// CHECK: ttng.fence_async_shared
// CHECK: ttg.warp_specialize
// CHECK: ttng.warp_group_dot {{.*}} -> tensor<128x256xf32
// CHECK: ttng.warp_group_dot {{.*}} -> tensor<128x8xf32
// CHECK: ttng.warp_group_dot_wait {{.*}}pendings = 2""",
          """// RMSNorm: no plain row sum; no second wgmma.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-NOT: tensor<128x8xf32
// CHECK: ttg.warp_specialize""",
          """// LayerNorm with g and beta in the loop: the register-operand k-loop, no second wgmma.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-NOT: tensor<128x8xf32
// CHECK: ttg.warp_specialize"""]


def main():
    warnings.simplefilter("ignore")
    from normfuse.ops import prenorm_linear as ops
    chunks = []
    for check, (kind, flags) in zip(CHECKS, [("ln", dict(has_g=False, has_b=False)),
                                             ("rms", dict(has_g=False)),
                                             ("ln", dict(has_g=True, has_b=True))]):
        ck = ops.aot_compile(kind, M=262144, N=1024, K=512, passes="lazy-prenorm", **flags)
        text = re.sub(r"\s*loc\((?:[^()]|\([^()]*\))*\)", "", ck.asm["normfuse"])
        text = "\n".join(l for l in text.splitlines() if not l.startswith("#loc"))
        chunks.append(check + "\n" + text)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hopper-ws-stats-mma.mlir")
    with open(path, "w") as f:
        f.write(HEADER + "\n\n// -----\n\n".join(chunks) + "\n")


if __name__ == "__main__":
    main()
