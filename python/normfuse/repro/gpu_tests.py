"""Run the gpu-marked tests in parallel pytest processes on one GPU machine.

    python3 scripts/gpu_tests.py [-j 8] [--marker gpu] [-k EXPR] [--timeout 540] [PATHS...]
    PYTHONPATH=python python3 -m normfuse.repro.gpu_tests ...         (the same)

The one place where normfuse runs pytest in child processes: `scripts/gpu_tests.py` is this
module's command line, and the benchmarks that start with their gpu-marked tests
(normfuse.repro.bench_training, bench_attention, bench_attention_bwd) call `run`.

Most of the GPU tests' time is compiling kernels (through the passes, the lowering, ptxas), one
after the other in one process; the GPU itself is mostly idle. This collects the selected tests
(`pytest --collect-only -m MARKER [-k EXPR]`, PATHS default test/python) and runs J workers at
once, each `pytest -q -m MARKER [-k EXPR] PATHS` with this file as a plugin that keeps every J-th
selected test from its shard on (the collection order is the same in every process) and hands
the worker's cached GPU memory back after each test (`torch.cuda.empty_cache`: the workers share
one GPU's memory). The workers share one Triton cache, fresh for the run
(`NORMFUSE_TRITON_CACHE`, which conftest.py takes as pytest-xdist's workers take theirs): the
shards are dealt round-robin, so a kernel that several tests of one function compile is compiled
by the first worker to get there, not once per worker. Each worker's slowest test phases (pytest
--durations) are kept, the slowest of all in the summary (`slowest`). Correctness tests only:
nothing here is timed.
Prints each worker's counts and every failure with its 'E ' lines (also in the summary,
`failure_details`), then the totals; the exit status is 0 when no test failed or errored (and
something ran), 1 otherwise. Workers still running after --timeout seconds are killed and
reported: each worker appends every test's outcome to worker_<i>.results as it goes, so the
counts and failures of a worker killed (or crashed) before pytest's summary, and the tests of
its shard it never reached (`not_reached`, printed and in the summary: the ids to run again),
are known. Workers are reported as they finish, and `gpu_tests.json` in the log
directory (`--log-dir DIR`, which keeps the workers' logs there too: worker_<i>.log) holds the
counts so far, rewritten after each one: a run stopped from outside leaves what finished.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLUGIN = "normfuse.repro.gpu_tests"  # what each worker loads with -p
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


# ---------------------------------------------------------------------------------------------
# The plugin side (loaded in each worker with -p normfuse.repro.gpu_tests): keep this worker's shard
# ---------------------------------------------------------------------------------------------

try:
    import pytest

    @pytest.hookimpl(trylast=True)  # after -m/-k deselection: shards of the selected tests
    def pytest_collection_modifyitems(config, items):
        shard = os.environ.get("NORMFUSE_SHARD")
        if not shard:
            return
        i, n = (int(v) for v in shard.split("/"))
        keep = [it for k, it in enumerate(items) if k % n == i]
        drop = [it for k, it in enumerate(items) if k % n != i]
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(item, nextitem):
        """A worker hands its cached GPU memory back after each test: the workers share one
        GPU, and memory one of them keeps cached (torch's allocator frees nothing to the
        driver by itself) is memory the others cannot get. Sized on the H200's 141 GB, -j 14
        ran on an H100's 80 GB in session 37, where one test failed without a log."""
        if not os.environ.get("NORMFUSE_SHARD"):
            return
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()

    def pytest_runtest_logreport(report):
        """Each test's outcome, as it is known, appended to the worker's results file
        (`NORMFUSE_SHARD_RESULTS`): a worker killed at the timeout leaves which of its tests
        passed, failed or were skipped, so the runner can name the ones it never reached."""
        path = os.environ.get("NORMFUSE_SHARD_RESULTS")
        if not path:
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = "error" if report.when == "setup" and report.failed else report.outcome
        elif report.when == "teardown" and report.failed:
            outcome = "error"
        else:
            return
        with open(path, "a") as f:
            f.write(f"{outcome}\t{report.nodeid}\n")
except ImportError:  # pragma: no cover - the runner itself needs only the standard library
    pass


# ---------------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------------

def collect(paths: list[str], marker: str, env: dict, keyword: str = "") -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    cmd += (["-m", marker] if marker else []) + (["-k", keyword] if keyword else []) + paths
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    ids = [line.strip() for line in p.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if p.returncode not in (0, 5):  # 5: nothing collected
        raise SystemExit(f"gpu_tests: collection failed (exit {p.returncode}):\n{p.stdout[-3000:]}"
                         f"{p.stderr[-3000:]}")
    return ids


def counts(text: str) -> dict:
    """pytest's final counts from its output (the last summary line that has any)."""
    found: dict = {}
    for line in text.splitlines():
        c = {k.rstrip("s") if k.startswith("error") else k: int(v) for v, k in _COUNT.findall(line)}
        if c and ("passed" in line or "failed" in line or "skipped" in line or "error" in line):
            found = c
    return found


def shard_results(path: str) -> list:
    """[(outcome, test id)] from a worker's results file (the plugin's
    `pytest_runtest_logreport`), in the order they were reported; [] if there is none."""
    try:
        with open(path) as f:
            return [tuple(line.rstrip("\n").split("\t", 1)) for line in f if "\t" in line]
    except FileNotFoundError:
        return []


def default_jobs() -> int:
    """Workers at once: half the cores, 1 to 8."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def run(paths: list[str], jobs: int, marker: str, timeout: float, log=print, keyword: str = "",
        log_dir: str | None = None) -> dict:
    """Collect, shard over `jobs` workers, wait at most `timeout` s. Returns {"workers", "totals",
    "failures", "ok", "seconds"} (JSON-able); the workers' logs go to `log_dir` (default: a
    temporary directory)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "python")] +
                                        [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    ids = collect(paths, marker, env, keyword)
    if not ids:
        log(f"gpu_tests: no test selected by -m {marker!r}{f' -k {keyword!r}' if keyword else ''} "
            f"in {' '.join(paths)}")
        return {"workers": [], "totals": {}, "failures": [], "ok": False, "seconds": 0.0}
    jobs = max(1, min(jobs, len(ids)))
    tmp = log_dir or tempfile.mkdtemp(prefix="normfuse_gpu_tests_")
    os.makedirs(tmp, exist_ok=True)
    # (not under the log directory: the GPU machine returns what lies there)
    cache = tempfile.mkdtemp(prefix="normfuse_gpu_tests_triton_")
    env = dict(env, NORMFUSE_TRITON_CACHE=cache)
    procs = []
    try:
        t0 = time.time()
        for i in range(jobs):
            out = open(os.path.join(tmp, f"worker_{i}.log"), "w")
            cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
                   f"--durations={DURATIONS}", "--durations-min=0.5",
                   "-p", PLUGIN] + (["-m", marker] if marker else []) \
                + (["-k", keyword] if keyword else []) + paths
            results = os.path.join(tmp, f"worker_{i}.results")
            if os.path.exists(results):  # (a log directory used before)
                os.remove(results)
            procs.append((i, subprocess.Popen(cmd, cwd=REPO, env=dict(
                env, NORMFUSE_SHARD=f"{i}/{jobs}", NORMFUSE_SHARD_RESULTS=results),
                stdout=out, stderr=subprocess.STDOUT), out, len(ids[i::jobs])))
        workers, failures, totals, slowest, details, not_reached = [], [], {}, [], {}, []
        pending = list(procs)
        # each worker reported as it finishes (not in index order), and the summary so far written
        # after each one, so that a run stopped from outside still leaves what finished
        while pending:
            done = [w for w in pending if w[1].poll() is not None]
            if not done and time.time() - t0 < timeout:
                time.sleep(0.2)
                continue
            if not done:  # out of time: the rest are killed and reported
                done = list(pending)
            for w in done:
                pending.remove(w)
                i, p, out, n = w
                if p.poll() is None:
                    p.kill()
                    p.wait()
                    rc = "killed"
                else:
                    rc = p.returncode
                out.close()
                with open(out.name) as f:
                    text = f.read()
                c = counts(text)
                c.pop("deselected", None)  # the other workers' shards and the unmarked tests
                fails = [line for line in text.splitlines() if line.startswith(("FAILED", "ERROR"))]
                missed = []
                cut = rc == "killed" or (rc not in (0, 5) and not c)
                if cut:  # killed or crashed, no summary line: the counts from its results file,
                    # and the tests of its shard it never reported (the one running, the rest)
                    got = shard_results(os.path.join(tmp, f"worker_{i}.results"))
                    c = {}
                    for outcome, _ in got:
                        c[outcome] = c.get(outcome, 0) + 1
                    fails = [f"{'ERROR' if o == 'error' else 'FAILED'} {t} (before the worker "
                             f"stopped)" for o, t in got if o in ("failed", "error")]
                    seen = {t for _, t in got}
                    missed = [t for t in ids[i::jobs] if t not in seen]
                    not_reached += missed
                for k, v in c.items():
                    totals[k] = totals.get(k, 0) + v
                failures += fails
                details.update(failure_details(text))
                slowest = sorted(slowest + durations(text), key=lambda d: -d[0])[:SLOWEST]
                workers.append({"worker": i, "tests": n, "rc": rc, "counts": c,
                                "seconds": round(time.time() - t0, 1),
                                **({"not_reached": len(missed)} if cut else {})})
                log(f"worker {i}: {n} tests, rc={rc}, {c}"
                    + (f", {len(missed)} not reached" if cut else ""))
                if rc not in (0, 5) and not fails:  # crashed or killed: show its end
                    log(text[-2000:])
                _write_summary(tmp, len(ids), jobs, workers, totals, failures, len(pending),
                               slowest, details, not_reached)
        workers.sort(key=lambda w: w["worker"])
        ok = (not failures and totals.get("failed", 0) == 0 and totals.get("error", 0) == 0
              and all(w["rc"] in (0, 5) for w in workers))
        for line in failures:
            log(line)
        for test, lines in details.items():  # (what failed, where the logs may not come back)
            log(f"--- {test}\n" + "\n".join(f"    {l}" for l in lines))
        if slowest:
            log("slowest: " + "; ".join(f"{sec:.1f} s {what} {test}" for sec, what, test in
                                        slowest[:5]))
        if not_reached:
            log(f"not reached (a worker killed at the timeout or crashed; {len(not_reached)}, also "
                f"in {SUMMARY}'s not_reached):\n  " + "\n  ".join(not_reached))
        log(f"gpu_tests: {len(ids)} tests in {jobs} workers, {round(time.time() - t0, 1)} s: {totals}"
            f"{'' if ok else ' -- FAILED'}")
        return {"workers": workers, "totals": totals, "failures": failures, "ok": ok,
                "seconds": round(time.time() - t0, 1), "slowest": slowest,
                "failure_details": details, "not_reached": not_reached}
    finally:  # (the run's cache, and any worker left running by an exception)
        for _, p, _, _ in procs:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(cache, ignore_errors=True)


SUMMARY = "gpu_tests.json"  # in the log directory, rewritten as each worker finishes
# each worker's slowest test phases (pytest --durations), and how many of all the workers' the
# summary keeps: where a GPU suite's device minutes go (compiles, mostly), to choose what to trim
DURATIONS = 15
SLOWEST = 40
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s (call|setup|teardown)\s+(.+?)\s*$")


def durations(text: str) -> list:
    """[(seconds, phase, test id)] from pytest's --durations report in a worker's output."""
    out = []
    for line in text.splitlines():
        m = _DURATION.match(line)
        if m:
            out.append((float(m.group(1)), m.group(2), m.group(3)))
    return out


_SECTION = re.compile(r"^_{3,} (\S.*?) _{3,}$")
_LOCATION = re.compile(r"^\S+\.py:\d+: \w")
DETAIL_LINES, DETAIL_CHARS = 12, 300


def failure_details(text: str) -> dict:
    """{test: [lines]} from a worker's pytest output: for each failure or error section, its
    'E ' lines (the exception and the assertion's values, at most DETAIL_LINES of at most
    DETAIL_CHARS characters) and the line that says where it was raised. The summary and the
    printed report carry them, so a failure can be read where the workers' logs do not come back."""
    out: dict = {}
    test = None
    for line in text.splitlines():
        if line.startswith("=" * 8):  # a session section (FAILURES, warnings, durations) ends one
            test = None
            continue
        m = _SECTION.match(line)
        if m:
            name = m.group(1)
            # (pytest's own separators: "short test summary info", "warnings summary", ...)
            test = name if not name.endswith(("summary", "summary info")) else None
            continue
        if test is None:
            continue
        kept = out.setdefault(test, [])
        if (line.startswith("E ") and len(kept) < DETAIL_LINES) or _LOCATION.match(line):
            kept.append(line[:DETAIL_CHARS].rstrip())
    return {t: lines for t, lines in out.items() if lines}


def _write_summary(log_dir, n_tests, jobs, workers, totals, failures, running,
                   slowest=(), details=None, not_reached=()) -> None:
    with open(os.path.join(log_dir, SUMMARY), "w") as f:
        json.dump({"tests": n_tests, "jobs": jobs, "running": running, "totals": totals,
                   "failures": failures, "failure_details": details or {}, "workers": workers,
                   "slowest": [list(d) for d in slowest], "not_reached": list(not_reached)},
                  f, indent=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=["test/python"])
    ap.add_argument("-j", "--jobs", type=int, default=default_jobs())
    ap.add_argument("--marker", default="gpu", help="pytest -m expression ('' for all tests)")
    ap.add_argument("-k", dest="keyword", default="", help="pytest -k expression (test names)")
    ap.add_argument("--timeout", type=float, default=540.0)
    ap.add_argument("--log-dir", help="keep the workers' logs here (default: a temporary directory)")
    a = ap.parse_args(argv)
    return 0 if run(a.paths, a.jobs, a.marker, a.timeout, keyword=a.keyword,
                    log_dir=a.log_dir)["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
