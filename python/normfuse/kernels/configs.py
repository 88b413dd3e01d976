"""Tile configurations for the pre-norm GEMM kernels (naive, fused, and the plain GEMM baseline).

The numbers are INITIAL, TO BE TUNED ON THE H200: they are the usual Hopper starting points
for a non-persistent Triton GEMM (128x128x64, GROUP_M=8, 8 warps, 3 stages; 128x256x64 when N is
large; smaller tiles when M is small so that enough CTAs fill the 132 SMs), not measurements.
`python -m normfuse.repro.bench --autotune` times `CANDIDATES` per shape; when it finds better ones,
change the table here and say where the numbers came from (date, GPU, bench/results file).

`select_config` reads one explicit threshold table, first match wins, so what a shape gets can
be read off the table without running anything.

Caution (docs/design.md, the pipeliner race, measured 2026-11-29): the Lazy Pre-Norm loop (one A tile feeding both the
wgmma and the row statistics) is miscompiled by Triton 3.6's pipeliner at num_stages >= 3 unless
the pass emits the fix. Any config used for the fused kernel must be checked element by element
against the naive kernel at the num_stages it runs with; the bench's numerics section and its
autotune gate do that.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

__all__ = ["GemmConfig", "select_config", "CANDIDATES", "DEFAULT", "TABLE", "PostNormConfig",
           "select_postnorm_config"]


class _CompileOptions:
    """What both config kinds share: Triton's compile options and a dict form."""

    def options(self) -> dict:
        """Triton compile options."""
        return {"num_warps": self.num_warps, "num_stages": self.num_stages}

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GemmConfig(_CompileOptions):
    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int
    persistent: bool = False  # one program per SM walking the tiles (see select_config)

    def constexprs(self) -> dict:
        """The kernels' tile constexprs (EVEN_K, USE_TMA and NUM_PROGRAMS are decided per launch
        by the caller)."""
        return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "BLOCK_K": self.block_k,
                "GROUP_M": self.group_m}

    def __str__(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
                f"w{self.num_warps} s{self.num_stages}" + (" persistent" if self.persistent else ""))


DEFAULT = GemmConfig(128, 128, 64, 8, 8, 3)

# (M at most, N at least, config): the first row whose conditions hold wins.
#   M <= 64:    decode-like; a 64-row tile wastes least, 4 warps (one warpgroup) suffice.
#   M <= 1024:  too few 128-row blocks to fill 132 SMs with 128x256 tiles: 128x128, and
#               64x128 when N < 256 too, so that the grid still has some CTAs to spread.
#   N >= 512:   128x256 tiles halve the re-reads of A and the per-N-tile statistics work of the
#               lazy form; 8 warps = two warpgroups of 64x256 wgmma. Measured on the H200
#               (2026-11-29, bench/results/stats_sources_*.json, M=262144, K=N=1024, g folded):
#               fused 1.355 ms at 128x256 s3 vs 1.777 ms at 128x128 s4; plain GEMM 1.106 vs 1.242.
#               Persistent (one program per SM walking the tiles, flattened tile loop) where the
#               op's rule allows it (ops/prenorm_linear._persistent_form: RMSNorm with g folded
#               and the plain GEMM), measured 7-14 % faster there (bench/results/2026-11-29/
#               persistent/); the op falls back to one program per tile below 132 tiles.
#   otherwise:  128x128x64, the standard Hopper tile.
TABLE: tuple[tuple[float, int, GemmConfig], ...] = (
    (64, 0, GemmConfig(64, 64, 64, 8, 4, 4)),
    (1024, 256, GemmConfig(128, 128, 64, 8, 8, 3)),
    (1024, 0, GemmConfig(64, 128, 64, 8, 4, 3)),
    (math.inf, 512, GemmConfig(128, 256, 64, 8, 8, 3, persistent=True)),
    (math.inf, 0, DEFAULT),
)


def select_config(M: int, N: int, K: int, dtype=None) -> GemmConfig:
    """The table's config for an [M, K] x [K, N] problem (`dtype` is bf16 or fp16; both 2-byte
    types share one table, and K only decides EVEN_K, which the caller sets)."""
    for max_m, min_n, cfg in TABLE:
        if M <= max_m and N >= min_n:
            return cfg
    return DEFAULT  # unreachable: the last row matches everything


# What `--autotune` tries per shape. Shared memory per stage is (BM + BN) * BK * 2 bytes; all
# of these fit in the H200's 227 KB at the stage counts given. The num_stages=2 entries are there
# because of the pipeliner race noted above: if the fused kernel is only correct at 2 stages,
# the autotune still has something correct to pick.
CANDIDATES: tuple[GemmConfig, ...] = (
    GemmConfig(128, 128, 64, 8, 8, 3),
    GemmConfig(128, 128, 64, 8, 8, 4),
    GemmConfig(128, 256, 64, 8, 8, 3),
    GemmConfig(128, 256, 64, 8, 8, 4),
    GemmConfig(256, 128, 64, 8, 8, 3),
    GemmConfig(128, 128, 128, 8, 8, 3),
    GemmConfig(128, 64, 64, 8, 4, 4),
    GemmConfig(64, 256, 64, 8, 4, 3),
    GemmConfig(128, 128, 64, 8, 8, 2),
    GemmConfig(128, 256, 64, 8, 8, 2),
)


# ---------------------------------------------------------------------------------------------
# Post-norm (epilogue) GEMM: y = norm(x @ W^T) over rows of length N
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PostNormConfig(_CompileOptions):
    """Tile config of the post-norm kernels (kernels/postnorm_gemm.py). The row's N tiles
    (cdiv(N, block_n)) decide the form the passes produce: one tile -> epilogue-norm in one CTA;
    2..16 tiles -> one tile per CTA of a cluster; more -> several tiles per CTA (deferred)."""
    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int
    persistent: bool = False  # programs (clusters) walk the row blocks; see select_postnorm_config

    def constexprs(self) -> dict:
        return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "BLOCK_K": self.block_k}

    def __str__(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k} w{self.num_warps} s{self.num_stages}"
                + (" persistent" if self.persistent else ""))


def select_postnorm_config(M: int, N: int, K: int, dtype=None) -> PostNormConfig:
    """Initial choices (not tuned):
    - N <= 256: the whole row in one CTA, BLOCK_N = next power of two >= N (at least 64), 128-row
      tiles; a 128x256 fp32 accumulator is 128 registers per thread over 8 warps, the most a CTA
      can hold next to the epilogue's temporaries (N = 512 in one CTA would need 64-row tiles).
    - N > 256: 128x256 tiles, one per CTA of a cluster of cdiv(N, 256) CTAs (cluster-reduce), 16
      at most; longer rows give each CTA several tiles.
    64-row tiles when M is small (M <= 64), so that a few rows do not pay for 128.
    Persistent (as many programs, or clusters, as fit on the GPU at once, each walking row blocks)
    when there are at least 4 row blocks per SM (M >= 4 * 132 * 128)."""
    bm = 64 if M <= 64 else 128
    persistent = M >= PERSISTENT_MIN_ROW_BLOCKS * bm
    if N <= 256:
        bn = max(64, 1 << (max(N, 1) - 1).bit_length())
        return PostNormConfig(bm, bn, 64, 8 if bn * bm >= 128 * 256 else 4, 3, persistent)
    return PostNormConfig(bm, 256, 64, 8, 3, persistent)


PERSISTENT_MIN_ROW_BLOCKS = 4 * 132
