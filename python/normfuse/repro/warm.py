"""Parallel warm-up for the benchmarks: compile every kernel and graph first, in child processes.

On the H200 most of a benchmark's wall time is compilation (Triton kernels through normfuse's
passes and lowering, torch.compile's graphs for the baselines), one after the other in the timing
process. The caches that make a second compilation cheap live on disk and are shared by the
processes of one machine: Triton's kernel cache, normfuse's generated lowering hooks, and
Inductor's FX-graph and kernel caches. So the benchmarks first run each cell once in child
processes, several at a time, with `triton.testing.do_bench` replaced by a single call; the timing
process then finds everything compiled and spends its time measuring. Measured on the H200
(2026-11-30, `normfuse.repro.bench_training --warm-procs 9`): all 45 training records compiled in 41 s,
then timed in about 100 s, where one cell had taken 40 s before.

Two things keep the warm-up from changing what is measured:
- the same torch.compile settings in the children and the timing process (`configure_torch`), so
  that the timing process looks up the very graphs the children compiled;
- Inductor's local autotuning cache is off in both: its kernel choices are made by the timing
  process on an idle GPU, not taken from children that ran at the same time as others.

Children run with one Inductor compile thread each (TORCHINDUCTOR_COMPILE_THREADS=1); children
still running after the timeout are killed, and the timing process compiles what they did not.
A child that ran out of GPU memory (its log names `OOM_MARKS`: the largest cells'
inputs do not fit twelve at a time, e.g. FlashNormAttention's backward at max length 10000,
H200 2026-12-04) runs once more, alone, after the others. A benchmark that knows its cells'
sizes gives each job an estimate of its peak GPU bytes and `parallel` a memory budget
(`gpu_mem_budget`): the large cells then start apart instead of failing together (session 33's
five retries never started within the warm-up's time). The children print their peak
allocation (`PEAK_MARK`), which the warm-up's record keeps beside the estimate.

    python -m normfuse.repro.warm_child --target summary --cell 262144,1024,1024 [--ops a,b]
    python -m normfuse.repro.warm_child --target attention --cell 2,1000,gelu_tanh [--quick]
    python -m normfuse.repro.warm_child --target attention_bwd --cell 2,1024,gelu_tanh [--quick]
    python -m normfuse.repro.warm_child --target training --cell 262144,1024,1024 [--sweep]
    python -m normfuse.repro.warm_child --target models --cell llama,normfuse+compile,train
    python -m normfuse.repro.warm_child --target model_shapes --cell <option index> [--quick]

are the children's command lines (each runs one cell once and exits; `warm_child` stands above the
benchmarks it runs, this module below them); `parallel` starts them.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

__all__ = ["configure_torch", "once", "patch_do_bench", "parallel", "default_procs", "child_argv",
           "gpu_mem_budget", "OOM_MARKS", "PEAK_MARK"]

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def configure_torch() -> None:
    """torch.compile settings shared by the warm-up children and the timing process: static
    shapes kept static (no automatic dynamic shapes after a recompilation), room for one graph per
    shape, Inductor's FX-graph cache on and its local autotuning cache off."""
    import torch
    import torch._dynamo
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 256)
    torch._dynamo.config.automatic_dynamic_shapes = False
    try:
        import torch._inductor.config as ic
        ic.fx_graph_cache = True
        ic.autotune_local_cache = False
    except Exception:  # noqa: BLE001 - an Inductor without these settings: nothing to share
        pass


# What `once` reports. Not 0: the children go on to compute their records' ratios (fused /
# cuBLAS, hidden %), and a zero time made every summary, attention and attention-backward child
# end in a ZeroDivisionError after its compiles (rc=1 in every warm-up up to session 28, which hid
# any real failure among them). The children's records are thrown away.
PLACEHOLDER_MS = 1.0


def once(fn, *args, quantiles=None, **kwargs):
    """`do_bench`'s stand-in in the children: call fn once, wait for the GPU, report
    PLACEHOLDER_MS (one per quantile where `quantiles` are asked for, as do_bench does: Triton's
    autotuner asks for three and compares them with its [inf] * 3 for a config that does not
    fit)."""
    fn()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001
        pass
    return [PLACEHOLDER_MS] * len(quantiles) if quantiles else PLACEHOLDER_MS


# lines torch appends after a CUDA error's message (the message is the line to show)
_HINTS = ("CUDA kernel errors might be asynchronously reported",
          "For debugging consider passing CUDA_LAUNCH_BLOCKING", "Compile with `TORCH_USE_CUDA_DSA`")


def _last_line(text: str) -> str:
    """The last non-empty line of a failed child's log (its exception, usually), torch's hints
    after a CUDA error skipped."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    while len(lines) > 1 and lines[-1].startswith(_HINTS):
        lines.pop()
    return lines[-1][:160] if lines else ""


def patch_do_bench() -> None:
    """Replace triton.testing.do_bench by `once` (the benchmarks import it at call time)."""
    import triton.testing
    triton.testing.do_bench = once


def default_procs(n_jobs: int) -> int:
    """How many children at once: one per job, at most half the cores less one (0: no warm-up
    on a small machine, e.g. 2 cores)."""
    return max(0, min(n_jobs, (os.cpu_count() or 2) // 2 - 1))


def child_argv(target: str, cell, *extra: str) -> list[str]:
    """The command line of one warm-up child (see the module docstring)."""
    return [sys.executable, "-m", "normfuse.repro.warm_child", "--target", target, "--cell",
            ",".join(str(c) for c in cell), *extra]


def _peak_bytes(text: str) -> int | None:
    """The peak GPU allocation a child reported (`PEAK_MARK` N), if it did."""
    for line in reversed(text.splitlines()):
        if line.startswith(PEAK_MARK):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def gpu_mem_budget(fraction: float = 0.85) -> float | None:
    """`fraction` of the GPU's memory (bytes) for `parallel`'s `mem_budget`; None without CUDA."""
    try:
        import torch
        if torch.cuda.is_available():
            return fraction * torch.cuda.get_device_properties(0).total_memory
    except Exception:  # noqa: BLE001
        pass
    return None


# how a child's log says it ran out of GPU memory: torch's exception, or the CUDA error text
# when an allocation inside a library call failed
OOM_MARKS = ("OutOfMemoryError", "CUDA error: out of memory")


PEAK_MARK = "normfuse-warm-peak-gpu-bytes"  # what warm_child prints last: its peak allocation


def parallel(jobs: list, procs: int, timeout: float, log=print,
             mem_budget: float | None = None) -> dict:
    """Run `jobs` ([(label, argv), ...]) in up to `procs` child processes at once; kill what still
    runs after `timeout` seconds. A child whose log names one of `OOM_MARKS` runs once more, alone,
    once nothing else runs (its first attempt stays in "jobs" with "retried": True).
    A job may carry its estimated peak GPU bytes, (label, argv, nbytes): with `mem_budget`
    (bytes) a job starts only while the estimates of the running ones and its own fit in it (or
    nothing runs), a later job that fits going first, so that the largest cells do not start
    beside each other and run out of memory (FlashNormAttention's backward at max length 10000,
    twelve at once on the H200, 2026-12-05: five out of memory, their retries never started in
    the 150 s). Returns {"seconds", "procs", ("mem_budget_gb"), "jobs": [{label, rc, s,
    (est_gb), (peak_gb: what the child reported, `PEAK_MARK`), (log_tail), (retried), (alone)}],
    "not_started": [labels]}; the children's logs stay in a temporary directory (the GPU
    machine returns few files), their tails are kept for the children that failed."""
    t0 = time.time()
    todo = [(j[0], j[1], j[2] if len(j) > 2 else 0) for j in jobs]
    alone = []  # (label, argv) to run again by themselves
    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(REPO, "python")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    wdir = tempfile.mkdtemp(prefix="normfuse_warm_")
    running, done = [], []
    n_started = 0

    def start(label, argv, nbytes, by_itself):
        nonlocal n_started
        logf = open(os.path.join(wdir, "job_%d.log" % n_started), "w")
        n_started += 1
        p = subprocess.Popen(argv, cwd=REPO, env=env, stdout=logf, stderr=subprocess.STDOUT)
        running.append((label, argv, p, time.time(), logf, by_itself, nbytes))

    def next_fitting():
        """The index in todo of the first job whose estimate fits beside the running ones."""
        if mem_budget is None or not running:
            return 0
        used = sum(r[6] for r in running)
        for i, job in enumerate(todo):
            if used + job[2] <= mem_budget:
                return i
        return None

    while (todo or running or alone) and time.time() - t0 < timeout:
        while todo and len(running) < max(1, procs):
            i = next_fitting()
            if i is None:
                break
            start(*todo.pop(i), False)
        if not todo and not running and alone:
            start(*alone.pop(0), True)
        time.sleep(0.2)
        for item in list(running):
            label, argv, p, ts, logf, by_itself, nbytes = item
            if p.poll() is not None:
                running.remove(item)
                logf.close()
                job = {"label": label, "rc": p.returncode, "s": round(time.time() - ts, 1)}
                if nbytes:
                    job["est_gb"] = round(nbytes / 2**30, 1)
                if by_itself:
                    job["alone"] = True
                with open(logf.name) as f:
                    text = f.read()
                peak = _peak_bytes(text)
                if peak is not None:
                    job["peak_gb"] = round(peak / 2**30, 2)
                if p.returncode:
                    job["log_tail"] = text[-1500:]
                    if not by_itself and any(m in job["log_tail"] for m in OOM_MARKS):
                        job["retried"] = True
                        alone.append((label, argv, nbytes))
                done.append(job)
    for label, argv, p, ts, logf, by_itself, _ in running:
        p.kill()
        p.wait()
        logf.close()
        done.append({"label": label, "rc": "killed", "s": round(time.time() - ts, 1)})
    res = {"seconds": round(time.time() - t0, 1), "procs": procs, "jobs": done,
           "not_started": [j[0] for j in todo + alone]}
    if mem_budget is not None:
        res["mem_budget_gb"] = round(mem_budget / 2**30, 1)
    log(f"[warm] {res['seconds']} s in {procs} processes: " + ", ".join(
        f"{j['label']}{' (alone)' if j.get('alone') else ''} rc={j['rc']} ({j['s']} s)"
        + (f" [{_last_line(j['log_tail'])}]" if j.get("log_tail") else "")
        + ("; run again alone" if j.get("retried") else "") for j in done)
        + (f"; not started: {res['not_started']}" if res["not_started"] else ""))
    return res
