"""H200: A/B of two revisions of normfuse's Python package (a template or pass change against the
commit before it), processes alternating, with a timing script that writes `ab_order.json`
(`bench/ab_order.py`, the default).

    PYTHONPATH=python python3 bench/ab_revisions.py --base HEAD~1 --out DIR [--pairs 2] \
        [--script bench/ab_order.py] -- --cells blog --rounds 2 --ops rms,ln --specs 'hopper-ws'

The base revision's `python/` is exported with `git archive` into DIR/base-src; the working
tree's `python/` is the other side. Pairs of processes run base, new, base, new, ... (each its
own compile cache keys: the kernels differ where the code does), each writing to
DIR/<side><i>/. At the end, per cell and variant, the mean over the pairs of each side's ratio
to cuBLAS (measured in the same process) and the change: a kernel change is judged by ratios
to cuBLAS measured next to it, not by absolute times from different processes. Not run in CI
(`test_repro.py` checks the comparison on made-up files).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys


def export(base: str, dest: str, repo: str) -> str:
    """`git archive` of `base`'s python/ into dest; returns dest/python."""
    os.makedirs(dest, exist_ok=True)
    archive = subprocess.run(["git", "-C", repo, "archive", base, "python"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return os.path.join(dest, "python")


def ratios(path: str) -> dict:
    """{(M, K, N, variant): time / cuBLAS} of one ab_order.json."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    out = {}
    for r in rows:
        cb = r["ms"]["cublas"]
        for k, v in r["ms"].items():
            if k != "cublas":
                out[(r["M"], r["K"], r["N"], k)] = v / cb
    return out


def compare(out: str, pairs: int) -> list[dict]:
    """Per (cell, variant): mean ratio to cuBLAS of each side over the pairs, and new / base."""
    sides = {s: [ratios(os.path.join(out, f"{s}{i}", "ab_order.json")) for i in range(pairs)
                 if os.path.exists(os.path.join(out, f"{s}{i}", "ab_order.json"))]
             for s in ("base", "new")}
    if not sides["base"] or not sides["new"]:
        return []
    keys = sorted(set.intersection(*(set(r) for r in sides["base"] + sides["new"])))
    rows = []
    for key in keys:
        b = statistics.mean(r[key] for r in sides["base"])
        n = statistics.mean(r[key] for r in sides["new"])
        rows.append({"M": key[0], "K": key[1], "N": key[2], "variant": key[3], "base": b, "new": n,
                     "change": n / b})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| M x K x N | variant | base / cuBLAS | new / cuBLAS | new / base |",
             "|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['M']}x{r['K']}x{r['N']} | {r['variant']} | {r['base']:.3f} | "
                     f"{r['new']:.3f} | {r['change']:.3f} |")
    by = {}
    for r in rows:
        by.setdefault(r["variant"], []).append(r["change"])
    for v, c in sorted(by.items()):
        lines.append(f"| geometric mean | {v} | | | {math.exp(statistics.mean(map(math.log, c))):.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rest = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the revision to compare against (git)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--script", default=os.path.join("bench", "ab_order.py"))
    a = ap.parse_args(argv)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base_py = export(a.base, os.path.join(a.out, "base-src"), repo)
    new_py = os.path.join(repo, "python")
    for i in range(a.pairs):
        for side, py in (("base", base_py), ("new", new_py)):
            d = os.path.join(a.out, f"{side}{i}")
            os.makedirs(d, exist_ok=True)
            # this side's package first; other entries (e.g. wheels' site dirs) kept, the
            # working tree's python/ dropped from the base side
            keep = [q for q in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                    if q and os.path.abspath(q) != new_py]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([py] + keep))
            print(f"== {side} {i}", flush=True)
            with open(os.path.join(d, "log.txt"), "w") as log:
                subprocess.run([sys.executable, os.path.join(repo, a.script), "--out", d, *rest],
                               env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    rows = compare(a.out, a.pairs)
    with open(os.path.join(a.out, "ab_revisions.json"), "w") as f:
        json.dump({"base": a.base, "pairs": a.pairs, "args": rest, "rows": rows}, f, indent=1)
    text = table(rows) if rows else "no comparison: a side wrote no ab_order.json (see the logs)"
    with open(os.path.join(a.out, "ab_revisions.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
