"""Summarize Nsight Compute's source page (SASS with per-instruction warp-state samples) of one
kernel: the instructions with the most samples and their main stall reasons, the k-loop's
wgmma / ldmatrix / barrier / wait instructions in program order (where ptxas put the statistics
relative to the wgmma issue), and the samples per region between two marker instructions.

    ncu --set full --import-source yes --nvtx --nvtx-include "profile/" -o prof \
        python3 bench/ncu_backbone.py 262144x512x512
    ncu -i prof.ncu-rep --nvtx-include "profile/262144x512x512:fused" --page source --csv \
        --print-source sass > fused.csv
    python3 bench/ncu_source.py fused.csv [backbone.csv ...] [--top 25]

(session 14: `bench/results/2026-12-02/session14/ncu-source/`, gzipped CSVs are read too). Runs
anywhere (no GPU, no torch): it only reads the CSV.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io

KEY = ("HGMMA", "LDSM", "WARPGROUP.DEPBAR", "WARPGROUP.ARRIVE", "BAR.SYNC", "SYNCS.ARRIVE",
       "SYNCS.PHASECHK")


def load(path: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of an `ncu --page source --csv` export (plain or .gz)."""
    raw = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    with raw as f:
        rows = list(csv.reader(io.StringIO(f.read())))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    return rows[start], rows[start + 1:]


def summary(path: str, top: int = 25) -> str:
    hdr, rows = load(path)
    col = {name: hdr.index(name) for name in hdr}
    samples = col["Warp Stall Sampling (All Samples)"]
    executed = col["Instructions Executed"]
    stalls = [c for c in hdr if c.startswith("stall_") and "Not Issued" not in c]

    def n(r, i):
        try:
            return int(float(r[i] or 0))
        except ValueError:
            return 0

    total = sum(n(r, samples) for r in rows)
    out = [f"# {path}", f"{len(rows)} instructions, {total} warp-state samples, "
           f"{sum(n(r, executed) for r in rows)} instructions executed", "",
           f"## top {top} by samples", "",
           "| # | samples | executed | instruction | main stalls |", "|---:|---:|---:|---|---|"]
    for k in sorted(range(len(rows)), key=lambda k: -n(rows[k], samples))[:top]:
        r = rows[k]
        st = sorted(((n(r, col[c]), c[6:]) for c in stalls), reverse=True)[:2]
        out.append(f"| {k} | {n(r, samples)} | {n(r, executed)} | `{r[1].strip()[:60]}` | "
                   + ", ".join(f"{name} {v}" for v, name in st if v) + " |")
    # the hottest loop: the instructions executed most often (per k-step), in program order
    most = max(n(r, executed) for r in rows)
    loop = [k for k, r in enumerate(rows) if n(r, executed) == most]
    out += ["", f"## the instructions executed most often ({most} times: the k-loop), in order", "",
            "| # | samples | instruction |", "|---:|---:|---|"]
    for k in loop:
        text = rows[k][1].strip()
        if any(text.lstrip("@!P0123456789UPT ").startswith(key) or f" {key}" in text for key in KEY):
            out.append(f"| {k} | {n(rows[k], samples)} | `{text[:70]}` |")
    if loop:
        inside = sum(n(rows[k], samples) for k in range(loop[0], loop[-1] + 1))
        out += ["", f"samples from the k-loop's first to its last instruction: {inside} "
                f"({100.0 * inside / max(total, 1):.1f} %)"]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args(argv)
    print("\n\n".join(summary(p, a.top) for p in a.csv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
