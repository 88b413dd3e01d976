"""H200 upper-bound probe (issue 22): what the cluster exchange's GPU-scope fence costs
FlashNormAttention's fused forward. `barrier.cluster.arrive.release` compiles to
MEMBAR.ALL.GPU + ERRBAR (ptxas, sm_90a), which waits for the thread's earlier global stores.
This probe swaps the exchange's arrive (cluster-reduce, cluster-reduce-chain) for

  release   the product's (arrive.release; wait.acquire);
  relaxed   arrive.relaxed, no fence: NOT a correct exchange (no release of the partials), the
            bound on what any fence-free exchange (the push design in NOTES) could gain;
  cta       fence.acq_rel.cta + arrive.relaxed (MEMBAR.ALL.CTA): not a cluster-scope release
            in the PTX model either;
  nowait    no cluster barrier in the exchanges (each reads whatever its peers' slots hold),
            only the pass's own before the return, which keeps a CTA's shared memory alive
            while peers may still write it: NOT a correct program, the bound on what the
            exchanges' waits cost (barrier latency and the skew between a cluster's CTAs, which
            grows with the cluster: the suspect for H = 3 / 4's higher cost per head);
  nowait-pro / nowait-main   the same for one exchange a row block only: the LayerNorm
            statistics' (cluster-reduce's prologue exchange) or the RMSNorm's (after the
            attention); either bounds what one exchange a row block instead of two would save;

  ahead     a product variant, not a bound: one exchange a row block
            (`prepare_flash_norm_attention(stats_ahead=True)`: the STATS_AHEAD walk through
            `cluster-reduce{merge=true}`), a correct program whose output should equal
            release's (same arithmetic; on the GPU a layout may reorder a row sum: a rounding);
  carry     the same walk in its carry form (`stats_ahead="carry"`: the next block's x tile,
            converted for its sums, carried to the next trip instead of loaded again);

and prints the fused kernel's do_bench median per cell, and its output's largest difference
from the "release" run (saved by that run under --out), as a smoke check only.

    PYTHONPATH=python python3 bench/exchange_probe.py --variant relaxed --out DIR softmax:4:3000
Not a product path: the variants other than "release" are not correct programs.

Measured (H200, 2026-12-04, session 28; bench/results/2026-12-04/session28/exchange-probe):
the same time with and without the fence (softmax H = 4 max 3000: 2.5921 / 2.5953 / 2.5948 ms
for release / relaxed / cta; GELU 2.8672 / 2.8700 / 2.8679), and wrong outputs without it.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, HERE)

VARIANTS = {"release": None,
            "relaxed": "barrier.cluster.arrive.relaxed;",
            "cta": "fence.acq_rel.cta; barrier.cluster.arrive.relaxed;"}
# the no-wait variants: the exchanges whose barriers each drops
NOWAIT = {"nowait": ("pro", "main"), "nowait-pro": ("pro",), "nowait-main": ("main",)}
# product variants: keywords of prepare_flash_norm_attention (own constexprs: own cache entries)
PREPARE = {"ahead": {"stats_ahead": True}, "carry": {"stats_ahead": "carry"}}
SYNC_HINTS = ("cluster_sync", "cluster_arrive", "cluster_wait")


def patch_nowait(drop=("pro", "main")) -> None:
    """The cluster barriers of the exchanges named in `drop` ("pro": cluster-reduce's prologue
    exchange, the LayerNorm statistics; "main": the one after the GEMM loop, the RMSNorm's)
    become no-ops. What the pass builds outside the exchanges stays: the arrive after the last
    reads and the wait before the return (one row block a program), or the whole barrier
    before the return (the persistent walk), so no CTA exits while a peer may still write its
    slots and every arrive keeps its wait."""
    from normfuse.ir import cluster_ptx, ops
    from normfuse.passes import cluster_reduce
    noop = f"{cluster_ptx.MARK} mov.u32 $0, 0;"
    orig = ops.Builder.inline_asm
    orig_exchange = cluster_reduce.ClusterReduce._exchange
    inside: list = []  # the exchange being built: "pro" or "main"

    def exchange(self, *args, hint="", **kw):
        inside.append("pro" if hint.startswith("pro") else "main")
        try:
            return orig_exchange(self, *args, hint=hint, **kw)
        finally:
            inside.pop()

    def inline_asm(self, asm, constraints, args, result_types, **kw):
        if kw.get("hint") in SYNC_HINTS and inside and inside[-1] in drop:
            asm = noop
        return orig(self, asm, constraints, args, result_types, **kw)
    ops.Builder.inline_asm = inline_asm
    cluster_reduce.ClusterReduce._exchange = exchange


def patch(variant: str) -> None:
    arrive = VARIANTS.get(variant)
    if variant == "release" or variant in PREPARE:
        return
    # Triton's cache keys normfuse's passes by their source files, not by this runtime patch: a
    # variant compiled into the release run's cache would time the release kernel
    os.environ["TRITON_CACHE_DIR"] = os.path.join(
        os.environ.get("TMPDIR", "/tmp"), f"normfuse-exchange-probe-{variant}")
    if variant in NOWAIT:
        patch_nowait(NOWAIT[variant])
        return
    from normfuse.ir import cluster_ptx
    from normfuse.passes import cluster_reduce, cluster_reduce_chain
    mark = cluster_ptx.MARK
    new_arrive = f"{mark} {arrive} mov.u32 $0, 0;"
    new_barrier = f"{mark} {arrive} barrier.cluster.wait.acquire; mov.u32 $0, 0;"
    for m in (cluster_ptx, cluster_reduce, cluster_reduce_chain):
        if hasattr(m, "ARRIVE"):
            m.ARRIVE = new_arrive
        if hasattr(m, "BARRIER"):
            m.BARRIER = new_barrier


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", choices=sorted({**VARIANTS, **NOWAIT, **PREPARE}),
                    default="release")
    ap.add_argument("--out", required=True)
    ap.add_argument("cells", nargs="+")
    a = ap.parse_args(argv)
    patch(a.variant)
    import torch
    import triton.testing
    from ncu_fna import cell_launches
    os.makedirs(a.out, exist_ok=True)
    res = {}
    for cell in a.cells:
        # (the barrier variants patch the two-exchange walk: stats_ahead=False, not the default)
        runs = cell_launches(cell, **PREPARE.get(a.variant, {"stats_ahead": False}))
        fused = runs["fused"]
        out = fused()[0]
        torch.cuda.synchronize()
        ref_path = os.path.join(a.out, cell.replace(":", "_") + ".pt")
        if a.variant == "release":
            torch.save(out.cpu(), ref_path)
            diff = 0.0
        else:
            ref = torch.load(ref_path)
            diff = (out.float().cpu() - ref.float()).abs().max().item()
        ms = triton.testing.do_bench(fused, warmup=50, rep=400)
        core = triton.testing.do_bench(runs["core"], warmup=50, rep=400)
        res[cell] = {"fused_ms": ms, "core_ms": core, "max_diff_vs_release": diff}
        print(f"[probe] {a.variant} {cell}: fused {ms:.4f} ms, core {core:.4f} ms, "
              f"max |diff| vs release {diff:.3g}", flush=True)
    with open(os.path.join(a.out, f"{a.variant}.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
