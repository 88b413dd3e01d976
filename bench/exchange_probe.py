"""H200 upper-bound probe (issue 22): what the cluster exchange's GPU-scope fence costs
FlashNormAttention's fused forward. `barrier.cluster.arrive.release` compiles to
MEMBAR.ALL.GPU + ERRBAR (ptxas, sm_90a), which waits for the thread's earlier global stores.
This probe swaps the exchange's arrive (cluster-reduce, cluster-reduce-chain) for

  release   the product's (arrive.release; wait.acquire);
  relaxed   arrive.relaxed, no fence: NOT a correct exchange (no release of the partials), the
            bound on what any fence-free exchange (the push design in NOTES) could gain;
  cta       fence.acq_rel.cta + arrive.relaxed (MEMBAR.ALL.CTA): not a cluster-scope release
            in the PTX model either;

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


def patch(variant: str) -> None:
    arrive = VARIANTS[variant]
    if arrive is None:
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
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="release")
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
        runs = cell_launches(cell)
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
