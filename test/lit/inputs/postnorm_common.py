"""Shared by the post-norm lit generators (cluster_reduce_kernels.py, epilogue_norm_kernels.py):
TTIR of a kernel for sm_90 with locations stripped, the lit file writer (one `// -----` chunk per
case), and the naive post-norm kernels' signatures."""
import os
import re

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def ttir(fn, sig, consts):
    ck = triton.compile(ASTSource(fn, sig, constexprs=consts), target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": 4})
    body = [l for l in ck.asm["ttir"].splitlines() if not l.startswith("#loc")]
    body = [re.sub(r" loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)", "", l) for l in body]
    return "\n".join(body[1:-1])


def write_lit(name: str, head: str, cases) -> None:
    """Write test/lit/<name>: `head` (RUN lines, checks of options that fail before reading the
    input), then one `// -----` chunk per (name, fn, signature, constexprs, checks) case: its
    CHECK lines (for every prefix; a one-line intent comment first) and a module holding the
    kernel renamed to the case's name."""
    out = [head.rstrip("\n")]
    for k, (case, fn, sig, consts, checks) in enumerate(cases):
        text = ttir(fn, sig, consts)
        text = re.sub(r"tt\.func public @\w+\(", f"tt.func public @{case}(", text, count=1)
        out += (["", "// -----"] if k else []) + ["", checks, "", "module {", text, "}"]
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", name), "w") as f:
        f.write("\n".join(out) + "\n")


# kernels/postnorm_gemm.py: linear_rmsnorm_naive (POST) and linear_layernorm_naive (LN)
POST = {"X": "*bf16", "W": "*bf16", "BIAS": "*bf16", "RES": "*bf16", "G": "*bf16", "Y": "*bf16",
        "M": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_rm": "i32",
        "stride_ym": "i32", "eps": "fp32", "N": "constexpr", "BLOCK_M": "constexpr",
        "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "EVEN_K": "constexpr", "HAS_BIAS": "constexpr",
        "HAS_RES": "constexpr"}
LN = dict(POST, B="*bf16")
LN = {k: LN[k] for k in ["X", "W", "BIAS", "RES", "G", "B", "Y", "M", "K", "stride_xm", "stride_wn",
                         "stride_rm", "stride_ym", "eps", "N", "BLOCK_M", "BLOCK_N", "BLOCK_K",
                         "EVEN_K", "HAS_BIAS", "HAS_RES"]}
# the persistent form (PERSISTENT follows USE_TMA in the signature)
PERS = dict(POST, USE_TMA="constexpr", PERSISTENT="constexpr")
