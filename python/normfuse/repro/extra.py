"""The training and FlashNormAttention-backward benchmarks inside `python -m normfuse.repro`.

`normfuse.repro.bench_training` (forward + backward of the four ops and the post-norm MLP block
against eager and torch.compile, with the blog's "norm backward latency hidden %") and
`normfuse.repro.bench_attention_bwd` (the FlashNormAttention backward against the unfused torch
pipeline). The reproduction command runs each in a child process with a time budget (a GPU
fault or a hang in one does not take the others down), reads the records it wrote and appends
them to summary.json: op = "<op>.backward" and "flash_norm_attention.backward".
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from .warm import REPO

# module, its arguments, the file it writes (relative to its --out), how to get the records
SCRIPTS = {
    "training": ("normfuse.repro.bench_training", ["--part", "bench"], "summary.json", lambda d: d),
    "attention_backward": ("normfuse.repro.bench_attention_bwd", ["--no-tests"], "attention_bwd.json",
                           lambda d: d.get("records", [])),
}


def run_script(name: str, out_dir: str, quick: bool, budget: float, log=print) -> list[dict]:
    """Run one benchmark module in a child; return its records ([] with a logged reason when it
    failed or wrote nothing). No warm-up of its own: the reproduction command compiles every
    benchmark's cells first (`warm_jobs`)."""
    script, extra, fname, pick = SCRIPTS[name]
    sub = os.path.join(out_dir, name)
    os.makedirs(sub, exist_ok=True)
    cmd = [sys.executable, "-m", script, "--out", sub, "--budget", str(budget)] + extra
    if quick:
        cmd.append("--quick")
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    try:
        p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=budget + 120)
        with open(os.path.join(sub, "log.txt"), "w") as f:
            f.write(p.stdout + p.stderr)
    except subprocess.TimeoutExpired:
        log(f"{name}: {script} ran past {budget + 120:.0f} s: records it wrote so far are used")
    path = os.path.join(sub, fname)
    if not os.path.exists(path):
        log(f"{name}: {script} wrote no {fname} (see {sub}/log.txt)")
        return []
    with open(path) as f:
        return [r for r in pick(json.load(f)) if isinstance(r, dict)]


def append_records(summary_path: str, records: list[dict], op_suffix: str) -> None:
    """Replace the records whose op ends with `op_suffix` in summary.json by `records`."""
    data = {"records": []}
    if os.path.exists(summary_path):
        with open(summary_path) as f:
            data = json.load(f)
    keep = [r for r in data.get("records", []) if not str(r.get("op", "")).endswith(op_suffix)]
    data["records"] = keep + records
    with open(summary_path, "w") as f:
        json.dump(data, f, indent=1)


def run_all(out_dir: str, quick: bool, budget: float = 90.0, log=print) -> None:
    """Training and attention-backward records into out_dir/summary.json."""
    summary = os.path.join(out_dir, "summary.json")
    train = [r for r in run_script("training", out_dir, quick, budget, log)
             if str(r.get("op", "")).endswith(".backward")]
    append_records(summary, train, ".backward")
    att = run_script("attention_backward", out_dir, quick, budget, log)
    # the training records end in ".backward" too: keep them, replace only the attention ones
    data = json.load(open(summary)) if os.path.exists(summary) else {"records": []}
    data["records"] = [r for r in data["records"] if r.get("op") != "flash_norm_attention.backward"] + att
    with open(summary, "w") as f:
        json.dump(data, f, indent=1)
    log(f"training: {len(train)} record(s); attention backward: {len(att)} record(s) -> {summary}")


def warm_jobs(quick: bool) -> list:
    """The warm-up children of both benchmarks (normfuse.repro.warm), for a warm-up of everything."""
    from . import bench_attention_bwd as ab
    from . import bench_training as gb
    from .warm import child_argv
    cells = gb.QUICK if quick else gb.QUICK + [c for c in gb.BLOG if c not in gb.QUICK]
    return gb.warm_jobs(cells) + [
        ("attention_bwd H%d %d %s" % s, child_argv("attention_bwd", s, *(["--quick"] if quick else [])))
        for s in ab.bench_shapes(quick)]
