"""The cluster form a post-norm kernel (or a norm-backward kernel) launches with, chosen so that
the driver can launch it, and launch failures in the op's terms.

The rule, for a row of T = cdiv(N, BLOCK_N) tiles (`choose_cluster_form`):

1. T == 1: one CTA holds the row (epilogue-norm); no cluster.
2. T >= 2: the size cluster-reduce picks by default (auto, max-cluster 16): C = T when T <= 16
   (one tile per CTA, kept in registers), else the fewest tiles per CTA, cdiv(T, 16), on
   C = cdiv(T, cdiv(T, 16)) CTAs (deferred: the tiles stored and re-read from L2).
3. The driver is asked whether at least one cluster of C CTAs with the compiled kernel's shared
   memory fits on the device (`normfuse.device.cluster_occupancy`: cuOccupancyMaxActiveClusters,
   once per compiled kernel and device). If none fits, the next smaller size auto picks
   (`cluster_candidates`: max-cluster C-1, C-2, ..., 2, distinct sizes, largest first: more tiles
   per CTA each time) is compiled and asked in turn.
4. When no size fits: no cluster at all, the unfused kernel (one CTA per row block walks all T
   tiles, stores them and re-reads them to normalize: correct for any N, slower).

Asking the driver is what lets the sizes 9-15 launch at all (Triton's launcher allows
non-portable sizes only at 16; the query allows them on the function: measured on the H200,
see `normfuse.device.cluster_occupancy`). On the H200 every size 2-16 fits, so step 2's size is
the one launched; steps 3-4 serve devices with smaller GPCs or SM partitions (MIG, green
contexts), where a large cluster can have no room. The global-scratch exchange is no way out:
it uses the same clusters (its cluster barrier) and saves only the exchange's few hundred bytes
of shared memory.

The choice is made only for the op's default pipeline: a pipeline given by the caller is
launched as given, and a failure says why.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..passes.cluster_reduce import HW_MAX, cluster_candidates

__all__ = ["ClusterForm", "choose_cluster_form", "describe_form"]


@dataclass(frozen=True)
class ClusterForm:
    """`tiles` N tiles per row; `ctas` CTAs per cluster (1: no cluster); `unclustered`: the
    row's tiles in one CTA of the unfused kernel (step 4), not epilogue-norm's one tile."""
    tiles: int
    ctas: int = 1
    unclustered: bool = False

    @property
    def per_cta(self) -> int:
        """Tiles each CTA handles (the most, when they do not divide evenly)."""
        return -(-self.tiles // self.ctas)

    @property
    def kind(self) -> str:
        if self.ctas == 1:
            return "unclustered" if self.unclustered else "one-cta"
        return "cluster" if self.per_cta == 1 else "deferred"

    def cluster_option(self) -> int | None:
        """The max-cluster option that makes cluster-reduce pick this size (None: the size it
        picks by default, or no cluster)."""
        if self.ctas == 1:
            return None
        first = cluster_candidates(self.tiles)
        return None if first and first[0] == self.ctas else self.ctas


def choose_cluster_form(tiles: int, fits: Callable[[int], bool],
                        max_cluster: int = HW_MAX) -> ClusterForm:
    """The rule above: `fits(C)` says whether the driver fits a cluster of C CTAs of the kernel
    compiled for that size (asked lazily: only until one fits)."""
    if tiles <= 1:
        return ClusterForm(max(tiles, 1))
    for c in cluster_candidates(tiles, max_cluster):
        if fits(c):
            return ClusterForm(tiles, c)
    return ClusterForm(tiles, 1, unclustered=True)


def describe_form(N: int, block_n: int | None, ctas: int, persistent: bool, grid: int,
                  lowered: bool = False) -> str:
    """'12-CTA clusters, 2 tiles of 256 columns per CTA (deferred), not persistent, grid 3'."""
    if lowered:
        return f"the warp-specialized (lowered) kernel, grid {grid}"
    parts = []
    if block_n:
        tiles = -(-N // block_n)
        per = -(-tiles // max(ctas, 1))
        if ctas > 1:
            parts.append(f"{ctas}-CTA clusters")
            parts.append(f"{per} tile{'s' if per > 1 else ''} of {block_n} columns per CTA"
                         + (" (deferred)" if per > 1 else ""))
        else:
            parts.append("one CTA per row block, " + (f"{tiles} tiles of {block_n} columns"
                                                      if tiles > 1 else f"one {block_n}-column tile"))
    elif ctas > 1:
        parts.append(f"{ctas}-CTA clusters")
    parts.append("persistent" if persistent else "not persistent")
    parts.append(f"grid {grid}")
    return ", ".join(parts)
