"""The naive post-norm kernels' signatures, shared by the post-norm lit generators
(cluster_reduce_kernels.py, epilogue_norm_kernels.py, hopper_ws_row_lag_kernels.py); the TTIR and
the lit file writer are litgen.py's."""

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
