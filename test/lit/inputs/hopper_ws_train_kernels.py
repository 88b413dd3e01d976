"""Writes test/lit/hopper-ws-train.mlir: hopper-ws{post-norm=true} on the post-norm training
forward (kernels/postnorm_gemm.py's train kernels: the naive post-norm that also stores h, the
tile before the norm, for the backward), 128 x 256 tiles, with hand-written CHECKs.

    PYTHONPATH=python python3 test/lit/inputs/hopper_ws_train_kernels.py [--check]
"""
import sys

from normfuse.kernels.postnorm_gemm import (linear_layernorm_train_naive,
                                            linear_rmsnorm_train_naive)
import litgen


def _sig(ln: bool) -> dict:
    names = ["X", "W", "BIAS", "RES", "G"] + (["B"] if ln else []) + ["Y", "H", "RSTD"] + (
        ["MEAN"] if ln else [])
    sig = {n: "*bf16" for n in names}
    sig["RSTD"] = "*fp32"
    if ln:
        sig["MEAN"] = "*fp32"
    sig.update({n: "i32" for n in ("M", "K", "stride_xm", "stride_wn", "stride_rm", "stride_ym")})
    sig["eps"] = "fp32"
    sig.update({n: "constexpr" for n in ("N", "BLOCK_M", "BLOCK_N", "BLOCK_K", "EVEN_K",
                                         "HAS_BIAS", "HAS_RES", "USE_TMA", "PERSISTENT",
                                         "SAVE_STATS")})
    return sig


HEAD = """// hopper-ws{post-norm=true} on the post-norm training forward (kernels/postnorm_gemm.py's
// *_train_naive): the naive post-norm's two passes over the row whose first pass also stores h,
// the tile before the norm, to a second matrix (rule 9). Without its row statistics
// (SAVE_STATS=False: the backward computes them from h) h becomes the template's second output
// tile, stored by TMA through the staging tile before the exchange; with them (rstd / mean
// stored after the normalizing loop) the kernel is refused. Positive cases first, then bail-outs.
// Inputs: test/lit/inputs/hopper_ws_train_kernels.py.
// RUN: normfuse-opt --split-input-file --pass-pipeline='hopper-ws{post-norm=true}' %s 2>%t.remark | FileCheck %s
// RUN: FileCheck %s --check-prefix=REMARK < %t.remark
"""
TILES = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, EVEN_K=True, USE_TMA=False, PERSISTENT=False)
CASES = [
    ("rms_train_residual", linear_rmsnorm_train_naive, _sig(False),
     dict(TILES, N=1024, HAS_BIAS=True, HAS_RES=True, SAVE_STATS=False),
     """// RMSNorm with bias and residual, a row of 4 N tiles: five descriptors (x, W, z, the residual
// and h), h's TMA store before the stamped word of the row sum, z's after the exchange.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK-COUNT-3: !tt.tensordesc<tensor<128x256xbf16
// CHECK: ttg.warp_specialize
// CHECK: ttng.async_tma_copy_local_to_global
// CHECK: st.relaxed.gpu.global.b64
// CHECK: ttng.async_tma_copy_local_to_global
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 rows-exchanged(1), persistent, B [N, K]; {{.*}}the residual tile loaded by TMA into the output's staging tile during the k-loop; post-norm: the row's 4 N tiles on 4 CTAs of one wave, 1 partial row sum(s) exchanged through global memory (stamped words), the tile normalized in fp32 in the epilogue; side outputs of the row's first pass: a second output tile ({{.*}}) stored by TMA through the staging tile before the exchange"""),
    ("ln_train", linear_layernorm_train_naive, _sig(True),
     dict(TILES, N=1024, HAS_BIAS=False, HAS_RES=False, SAVE_STATS=False),
     """// LayerNorm without bias or residual: two row sums exchanged, h as the second output.
// CHECK-LABEL: tt.func public @ws_gemm_kernel
// CHECK: ttg.warp_specialize
// REMARK: [hopper-ws] applied: lowered to the warp-specialized template: 128x256x64 s3 coop w8 rows-exchanged(2), {{.*}}2 partial row sum(s) exchanged {{.*}}side outputs of the row's first pass: a second output tile ({{.*}}) stored by TMA"""),
    ("negative_rms_train_stats", linear_rmsnorm_train_naive, _sig(False),
     dict(TILES, N=1024, HAS_BIAS=True, HAS_RES=False, SAVE_STATS=True),
     """// Bail out: rstd stored after the normalizing loop (SAVE_STATS=True): a second store outside
// the GEMM's loop; the kernel is left as it was.
// CHECK-LABEL: tt.func public @negative_rms_train_stats
// CHECK-NOT: ttg.warp_specialize
// REMARK: [hopper-ws] missed: 2 stores outside the GEMM's loop over the row's N tiles; the normalizing loop stores the output once per tile"""),
]


def outputs() -> dict:
    return {"hopper-ws-train.mlir": litgen.lit_text(HEAD, CASES)}


if __name__ == "__main__":
    sys.exit(litgen.main(outputs))
