"""Recompute the summary's hidden % against the faster *static-shape* torch.compile norm.

The 2026-11-30 summary run (bench/results/2026-11-30/summary/) compiled the standalone norms with
`torch.compile(dynamic=True)`, which is 1.0-1.7x slower than the static-shape compile the earlier
benchmarks used; its `norm_ms` (min of eager and that compile) therefore overstates hidden %. The
GPU time to re-run was spent, so this script takes the static-shape `compiled_norm` times measured
on the same machine type and software the day before (bench/results/2026-11-29/final-4, same
shapes, same do_bench settings) and recomputes hidden % = (cuBLAS + norm - fused) / norm with
norm = min(eager, dynamic compile, static compile). Cross-run: flagged as such in the output.
(`normfuse.repro.summary` now compiles per shape, so the next run needs no correction.)

    python3 bench/recompute_hidden.py bench/results/2026-11-30/summary
"""
import json
import os
import sys


def static_norms(root):
    """{(norm, M, D): compiled_norm_ms} from the 2026-11-29 final-4 benchmarks (D = the normalized
    row length: K for pre-norm files, N for post-norm files)."""
    out = {}
    for f, norm, dim in (("prenorm_rms", "rms", "K"), ("prenorm_ln", "ln", "K"),
                         ("postnorm_rms_both", "rms", "N"), ("postnorm_ln_both", "ln", "N")):
        with open(os.path.join(root, f + ".json")) as fh:
            for c in json.load(fh)["cells"]:
                ms = c["ms"].get("compiled_norm")
                if ms:
                    key = (norm, c["M"], c[dim])
                    out[key] = min(ms, out.get(key, ms))
    return out


def main(summary_dir):
    here = os.path.dirname(os.path.abspath(__file__))
    ref = static_norms(os.path.join(here, "results", "2026-11-29", "final-4"))
    with open(os.path.join(summary_dir, "summary.json")) as fh:
        data = json.load(fh)
    rows = []
    for r in data["records"]:
        norm = "rms" if "rms" in r["op"] else "ln"
        dim = r["K"] if r["op"] in ("rmsnorm_linear", "layernorm_linear") else r["N"]
        static = ref.get((norm, r["M"], dim))
        best = min(r["norm_ms"], static) if static else r["norm_ms"]
        rr = dict(r, norm_static_compiled_ms=static, norm_best_ms=best,
                  hidden_pct_best_norm=(r["cublas_ms"] + best - r["fused_ms"]) / best * 100)
        rows.append(rr)
    out = dict(data, records=rows, note=("hidden_pct_best_norm uses the faster of this run's norms "
                                         "and the static-shape torch.compile norm of "
                                         "bench/results/2026-11-29/final-4 (cross-run)"))
    with open(os.path.join(summary_dir, "summary_best_norm.json"), "w") as fh:
        json.dump(out, fh, indent=1)
    lines = [f"# Hidden % against the best standalone norm ({data['gpu']}, {data['date']})", "",
             "cuBLAS, fused and backbone times from the 2026-11-30 run; the norm is the faster of that "
             "run's eager / dynamic-shape torch.compile norm and the static-shape torch.compile norm "
             "measured 2026-11-29 (final-4, same GPU type and software). Cross-run: see "
             "bench/recompute_hidden.py.", "",
             "| op | M | K | N | cuBLAS ms | best norm ms | fused ms | fused/cuBLAS | fused/backbone | "
             "hidden % (best norm) | hidden % (this run's norm) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['M']} | {r['K']} | {r['N']} | {r['cublas_ms']:.3f} | "
                     f"{r['norm_best_ms']:.3f} | {r['fused_ms']:.3f} | {r['fused_over_cublas']:.3f} | "
                     f"{r['fused_over_backbone']:.3f} | {r['hidden_pct_best_norm']:.0f} | "
                     f"{r['hidden_pct']:.0f} |")
    with open(os.path.join(summary_dir, "summary_best_norm.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/2026-11-30/summary")
