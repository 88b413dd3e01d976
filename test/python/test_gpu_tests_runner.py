"""scripts/gpu_tests.py (normfuse.repro.gpu_tests: the parallel runner of the gpu-marked tests)
on the CPU, on a small synthetic test directory: it collects, splits, runs, and reports failures
and totals."""
import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def runner():
    spec = importlib.util.spec_from_file_location("gpu_tests", REPO / "scripts" / "gpu_tests.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _marked_suite(tmp_path, **files) -> Path:
    """A test directory under tmp_path/suite that registers the `gpu` marker, with `files`
    (name without .py -> source)."""
    d = tmp_path / "suite"
    d.mkdir()
    (d / "conftest.py").write_text(
        "def pytest_configure(config):\n"
        "    config.addinivalue_line('markers', 'gpu: test marker')\n")
    for name, text in files.items():
        (d / f"{name}.py").write_text(text)
    return d


def _suite(tmp_path, failing: bool):
    d = _marked_suite(tmp_path)
    (d / "test_a.py").write_text(
        "import pytest\n"
        "@pytest.mark.gpu\n"
        "@pytest.mark.parametrize('i', range(5), ids=lambda i: f'n{i}x')\n"
        "def test_p(i):\n"
        "    import os, time\n"
        "    time.sleep(0.6 if i == 2 else 0)\n"
        "    with open(os.path.join(os.path.dirname(__file__), f'cache_{i}'), 'w') as f:\n"
        "        f.write(os.environ['NORMFUSE_TRITON_CACHE'])\n"
        f"    assert {'i != 3' if failing else 'True'}\n"
        "def test_not_gpu():\n"
        "    assert False\n")
    (d / "test_b.py").write_text(
        "import pytest\n"
        "@pytest.mark.gpu\n"
        "def test_skip():\n"
        "    pytest.skip('no')\n")
    return str(d)


def test_runner_splits_and_passes(runner, tmp_path):
    logs = []
    res = runner.run([_suite(tmp_path, False)], 3, "gpu", 120, log=logs.append,
                     log_dir=str(tmp_path / "logs"))
    assert res["ok"], logs
    assert res["totals"] == {"passed": 5, "skipped": 1}
    assert len(res["workers"]) == 3 and sum(w["tests"] for w in res["workers"]) == 6
    assert [w["worker"] for w in res["workers"]] == [0, 1, 2]  # (reported as they finished)
    summary = json.loads((tmp_path / "logs" / "gpu_tests.json").read_text())
    assert (summary["running"], summary["totals"], summary["tests"]) == (0, res["totals"], 6)
    assert res["not_reached"] == summary["not_reached"] == []
    # each worker's results file: every test's outcome, as pytest reported it
    got = sorted(o for i in range(3) for o, _ in runner.shard_results(
        str(tmp_path / "logs" / f"worker_{i}.results")))
    assert got == ["passed"] * 5 + ["skipped"]
    # one Triton cache for the run's workers (removed after it), and the slowest test named
    caches = {(tmp_path / "suite" / f"cache_{i}").read_text() for i in range(5)}
    assert len(caches) == 1 and not Path(caches.pop()).exists()
    # (the test's id is relative to pytest's rootdir, which depends on where the suite runs)
    sec, phase, test = summary["slowest"][0]
    assert (phase, test.endswith("test_a.py::test_p[n2x]"), sec >= 0.6) == ("call", True, True), \
        summary["slowest"]
    assert res["slowest"][0][2] == test


def test_runner_names_what_a_killed_worker_did_not_reach(runner, tmp_path):
    """A worker still running at the timeout is killed; its results file says what it did
    (counts, a failure before the kill), and the tests of its shard it never reported, the one
    it was running included, are listed as not reached, in order."""
    d = _marked_suite(tmp_path, test_h=(
        "import pytest, time\n"
        "pytestmark = pytest.mark.gpu\n"
        "def test_a0():\n    pass\n"
        "def test_a1():\n    assert 1 == 2\n"
        "def test_a2():\n    time.sleep(300)\n"
        "def test_a3():\n    pass\n"))
    logs = []
    res = runner.run([str(d)], 1, "gpu", 6, log=logs.append, log_dir=str(tmp_path / "logs"))
    assert not res["ok"]
    (w,) = res["workers"]
    assert w["rc"] == "killed"
    names = [t.rsplit("::", 1)[1] for t in res["not_reached"]]
    # (a machine too loaded to start pytest in 6 s reaches fewer: then more are listed)
    assert names[-2:] == ["test_a2", "test_a3"] and names == ["test_a0", "test_a1", "test_a2",
                                                              "test_a3"][-len(names):]
    assert w["not_reached"] == len(names) and sum(w["counts"].values()) == 4 - len(names)
    if len(names) == 2:
        assert w["counts"] == {"passed": 1, "failed": 1} == res["totals"]
        assert len(res["failures"]) == 1 and "test_a1" in res["failures"][0]
    summary = json.loads((tmp_path / "logs" / "gpu_tests.json").read_text())
    assert summary["not_reached"] == res["not_reached"]
    assert any("not reached (a worker killed" in line and "test_a3" in line for line in logs), logs


def test_runner_names_what_a_crashed_worker_did_not_reach(runner, tmp_path):
    """A worker whose process dies mid-test (no pytest summary: a CUDA fault's abort, an OOM
    kill) is counted from its results file like a killed one."""
    d = _marked_suite(tmp_path, test_c=(
        "import os, pytest\n"
        "pytestmark = pytest.mark.gpu\n"
        "def test_b0():\n    pass\n"
        "def test_b1():\n    os._exit(3)\n"
        "def test_b2():\n    pass\n"))
    res = runner.run([str(d)], 1, "gpu", 120, log=lambda m: None, log_dir=str(tmp_path / "logs"))
    (w,) = res["workers"]
    assert not res["ok"] and w["rc"] == 3 and w["counts"] == {"passed": 1} == res["totals"]
    assert [t.rsplit("::", 1)[1] for t in res["not_reached"]] == ["test_b1", "test_b2"]


@pytest.mark.slow  # (5 s of subprocesses; the split-and-pass test runs by default)
def test_runner_reports_a_failure(runner, tmp_path):
    logs = []
    res = runner.run([_suite(tmp_path, True)], 2, "gpu", 120, log=logs.append,
                     log_dir=str(tmp_path / "logs"))
    assert not res["ok"]
    assert res["totals"]["failed"] == 1 and res["totals"]["passed"] == 4
    assert any("test_p[n3x]" in f for f in res["failures"]), res["failures"]
    # the assertion's values come back in the summary and the report, not only in the logs
    (test, lines), = res["failure_details"].items()
    assert test == "test_p[n3x]" and any("assert 3 != 3" in l for l in lines), lines
    assert any(l.endswith("AssertionError") and "test_a.py:" in l for l in lines), lines
    assert any("assert 3 != 3" in l for l in logs), logs
    assert "FAILED" in logs[-1]
    # the workers' logs stay where the caller asked (the benchmarks keep them next to records)
    kept = sorted(p.name for p in (tmp_path / "logs").iterdir() if p.suffix == ".log")
    assert kept == ["worker_0.log", "worker_1.log"]
    summary = json.loads((tmp_path / "logs" / "gpu_tests.json").read_text())
    assert summary["running"] == 0 and summary["totals"] == res["totals"]
    assert sorted(w["worker"] for w in summary["workers"]) == [0, 1] and summary["failures"]
    assert summary["failure_details"] == res["failure_details"]
    assert any("test_p[n3x]" in (tmp_path / "logs" / k).read_text() for k in kept)
    assert isinstance(res["seconds"], float)


def test_runner_with_nothing_selected(runner, tmp_path):
    res = runner.run([_suite(tmp_path, False)], 2, "not gpu and not slow and nothing", 60,
                     log=lambda m: None)
    assert not res["ok"] and res["workers"] == []


@pytest.mark.slow  # (a third runner process; the split and the failure report stay in the default run)
def test_runner_keyword_selects_by_name(runner, tmp_path):
    """-k narrows the selection in the collection and in every worker alike. (-k also matches
    the names of the directories above a test, pytest's tmp_path included: a bare `not 3` failed
    under /tmp/pytest-of-root/pytest-385; the ids are words no tmp path holds.)"""
    logs = []
    res = runner.run([_suite(tmp_path, True)], 1, "gpu", 120, log=logs.append, keyword="test_p and not n3x")
    assert res["ok"], logs  # test_p[n3x] fails: deselected in the worker too
    assert res["totals"] == {"passed": 4} and res["workers"][0]["tests"] == 4


def test_failure_details_keeps_each_failures_E_lines(runner):
    """Each failure section's 'E ' lines and where it was raised, capped; pytest's own sections
    (captured output, warnings, the short summary) are not failures."""
    text = "\n".join([
        "..F.", "=================================== FAILURES ===================================",
        "________________________ test_x[rms-7936] ________________________",
        "    def test_x(): ...", ">       assert e <= 1.5 * e0, (N, e, e0)",
        "E       AssertionError: (7936, 0.5, 0.003)", "E       assert 0.5 <= (1.5 * 0.003)",
        "test/python/test_postnorm.py:807: AssertionError",
        "----------------------------- Captured stderr call -----------------------------",
        "E this stderr line is still the test's",
        "__________________________________ test_y ___________________________________",
        "E       RuntimeError: CUDA error: an illegal memory access was encountered",
        "x.py:3: RuntimeError",
        "=============================== warnings summary ===============================",
        "E not a failure", "python/normfuse/compiler.py:651: SpillWarning: spills",
        "=========================== short test summary info ============================",
        "FAILED test/python/test_postnorm.py::test_x[rms-7936] - AssertionError: (7936, ...)",
    ] + ["________ test_z ________"] + [f"E line {i}" for i in range(40)])
    got = runner.failure_details(text)
    assert got["test_x[rms-7936]"] == [
        "E       AssertionError: (7936, 0.5, 0.003)", "E       assert 0.5 <= (1.5 * 0.003)",
        "test/python/test_postnorm.py:807: AssertionError", "E this stderr line is still the test's"]
    assert got["test_y"] == ["E       RuntimeError: CUDA error: an illegal memory access was "
                             "encountered", "x.py:3: RuntimeError"]
    assert len(got["test_z"]) == runner.DETAIL_LINES and set(got) == {"test_x[rms-7936]",
                                                                       "test_y", "test_z"}
    assert runner.failure_details("....\n===== 4 passed in 1.0s =====") == {}
