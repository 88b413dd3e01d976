"""The benchmarks' parallel warm-up (normfuse.repro.warm) on the CPU: the process pool, the
children's command lines, and the settings the children and the timing process must share."""
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

from normfuse.repro import warm, warm_child  # noqa: E402


def _py(code):
    return [sys.executable, "-c", code]


@pytest.mark.slow  # (8 s of child processes)
def test_parallel_runs_reports_and_kills():
    jobs = [("ok", _py("print('fine')")),
            ("fails", _py("import sys; print('boom'); sys.exit(3)")),
            ("hangs", _py("import time; time.sleep(60)"))]
    res = warm.parallel(jobs, 3, timeout=8.0, log=lambda m: None)
    by = {j["label"]: j for j in res["jobs"]}
    assert by["ok"]["rc"] == 0 and "log_tail" not in by["ok"]
    assert by["fails"]["rc"] == 3 and "boom" in by["fails"]["log_tail"]
    assert by["hangs"]["rc"] == "killed"
    assert res["not_started"] == [] and res["procs"] == 3
    assert res["seconds"] < 30


def test_parallel_keeps_to_procs_and_reports_what_never_started():
    jobs = [(f"j{i}", _py("import time; time.sleep(3)")) for i in range(3)]
    res = warm.parallel(jobs, 1, timeout=2.0, log=lambda m: None)
    # one at a time: the first is killed at the timeout, the other two never start
    assert [j["label"] for j in res["jobs"]] == ["j0"] and res["jobs"][0]["rc"] == "killed"
    assert res["not_started"] == ["j1", "j2"]


def test_default_procs(monkeypatch):
    monkeypatch.setattr(warm.os, "cpu_count", lambda: 2)
    assert warm.default_procs(50) == 0  # this machine and CI: no warm-up
    monkeypatch.setattr(warm.os, "cpu_count", lambda: 16)
    assert warm.default_procs(50) == 7 and warm.default_procs(3) == 3


def test_once_and_patch_do_bench(monkeypatch):
    import triton.testing
    calls = []
    # a positive time: the children compute ratios of their timings (0 ms divided by zero)
    assert warm.once(lambda: calls.append(1)) == warm.PLACEHOLDER_MS > 0 and calls == [1]
    # Triton's autotuner asks for quantiles and compares them with [inf] * 3 (a config that
    # does not fit): a list of as many
    assert warm.once(lambda: None, quantiles=(0.5, 0.2, 0.8)) == [warm.PLACEHOLDER_MS] * 3
    monkeypatch.setattr(triton.testing, "do_bench", triton.testing.do_bench)  # restored after
    warm.patch_do_bench()
    assert triton.testing.do_bench(lambda: calls.append(2), warmup=5, rep=9) == warm.PLACEHOLDER_MS
    assert calls == [1, 2]


def test_parallel_logs_why_a_child_failed(tmp_path):
    """A failed warm-up child's rc comes with the last line of its log (its exception)."""
    lines = []
    code = "raise ZeroDivisionError('float division by zero')"
    res = warm.parallel([("bad", [sys.executable, "-c", code]),
                         ("good", [sys.executable, "-c", "pass"])], 2, 60, log=lines.append)
    rcs = {j["label"]: j["rc"] for j in res["jobs"]}
    assert rcs == {"bad": 1, "good": 0}
    assert "bad rc=1" in lines[0] and "[ZeroDivisionError: float division by zero]" in lines[0]
    assert "good rc=0 (" in lines[0] and "good rc=0 ([" not in lines[0]


def test_parallel_runs_an_out_of_memory_child_again_alone(tmp_path):
    """A child that ran out of GPU memory is started once more after the others have ended, by
    itself; one that fails otherwise is not. The stand-in child fails with torch's OOM message
    while another child's marker file exists (the GPU shared), and succeeds alone."""
    busy = tmp_path / "busy"
    hog = ("import pathlib, time; p = pathlib.Path(%r); p.touch(); time.sleep(1.5); p.unlink()"
           % str(busy))
    oom = ("import pathlib, sys, time; time.sleep(0.3)\n"
           "if pathlib.Path(%r).exists():\n"
           "    print('torch.OutOfMemoryError: CUDA out of memory.'); sys.exit(1)" % str(busy))
    lines = []
    res = warm.parallel([("hog", _py(hog)), ("big", _py(oom)), ("bad", _py("raise SystemExit(2)"))],
                        3, 60, log=lines.append)
    jobs = [(j["label"], j["rc"], bool(j.get("retried")), bool(j.get("alone")))
            for j in res["jobs"]]
    assert ("big", 1, True, False) in jobs and ("big", 0, False, True) in jobs, jobs
    assert ("bad", 2, False, False) in jobs and ("hog", 0, False, False) in jobs, jobs
    assert len(jobs) == 4 and jobs[-1][0] == "big" and res["not_started"] == []
    assert "big rc=1" in lines[0] and "; run again alone" in lines[0]
    assert "big (alone) rc=0" in lines[0]


def test_last_line_skips_torchs_cuda_error_hints():
    log = ("Traceback (most recent call last):\n  ...\ntorch.AcceleratorError: CUDA error: an illegal "
           "memory access was encountered\nCUDA kernel errors might be asynchronously reported at "
           "some other API call, so the stacktrace below might be incorrect.\nFor debugging "
           "consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable "
           "device-side assertions.\n\n")
    assert warm._last_line(log).startswith("torch.AcceleratorError: CUDA error: an illegal")
    assert warm._last_line("Compile with `TORCH_USE_CUDA_DSA` x") == "Compile with `TORCH_USE_CUDA_DSA` x"


def test_configure_torch(monkeypatch):
    import torch._dynamo
    import torch._inductor.config as ic
    monkeypatch.setattr(torch._dynamo.config, "automatic_dynamic_shapes", True)
    monkeypatch.setattr(ic, "autotune_local_cache", True)
    warm.configure_torch()
    assert torch._dynamo.config.automatic_dynamic_shapes is False
    assert ic.autotune_local_cache is False and ic.fx_graph_cache is True


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_every_benchmark_job_is_a_valid_child(monkeypatch, quick):
    """The reproduction command's job list (summary, attention forward, training, attention
    backward): one job per cell of each benchmark, and every command line is one the child
    accepts, with a cell of the right kind."""
    from normfuse.repro import bench_attention, extra, summary
    jobs = (summary.warm_jobs(list(summary.OPS), summary.summary_cells(quick))
            + bench_attention.warm_jobs(quick) + extra.warm_jobs(quick))
    seen = []
    monkeypatch.setattr(warm_child, "_child", lambda *a: seen.append(a))
    for label, argv in jobs:
        assert argv[:3] == [sys.executable, "-m", "normfuse.repro.warm_child"], argv
        assert warm_child.main(argv[3:]) == 0
    targets = [s[0] for s in seen]
    from normfuse.repro import bench_attention_bwd as ab
    from normfuse.repro import bench_training as gb
    n_train = len(gb.QUICK) if quick else len(gb.BLOG)
    assert targets.count("summary") == len(summary.summary_cells(quick))
    assert targets.count("attention") == len(bench_attention.cells(quick))
    assert targets.count("training") == n_train
    assert targets.count("attention_bwd") == len(ab.bench_shapes(quick))
    for target, cell, ops, q, sweep, *_ in seen:
        parts = cell.split(",")
        if target in ("summary", "training"):
            assert len(parts) == 3 and all(p.isdigit() for p in parts)
        else:
            assert len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit()
        if target in ("attention", "attention_bwd"):
            assert q == quick
    # the training sweep runs once per K, in the first cell with that K
    sweeps = [cell for t, cell, _, _, sw, *_ in seen if t == "training" and sw]
    assert sorted(int(c.split(",")[1]) for c in sweeps) == sorted({c[1] for c in (
        gb.QUICK if quick else gb.BLOG)})


def test_repro_help_mentions_the_warm_up(capsys):
    from normfuse.repro.__main__ import main
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "--warm-procs" in out and "--warm-timeout" in out


def test_extra_runs_the_backward_benchmarks_as_modules(monkeypatch, tmp_path):
    """The reproduction command's backward benchmarks are package modules run with `-m` (nothing
    is loaded from bench/ by path): the child's command line, and what it reads back from the
    records file the module writes (here: the training benchmark run in-process without a GPU,
    which records why it skipped)."""
    import importlib
    import subprocess

    from normfuse.repro import bench_training, extra
    for module, _, _, _ in extra.SCRIPTS.values():
        assert callable(importlib.import_module(module).main), module
    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"] = cmd
        assert bench_training.main(cmd[3:]) == 0  # the child's own argv, here in-process
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr(extra.subprocess, "run", fake_run)
    monkeypatch.setattr("normfuse.repro.bench.hopper_status", lambda: (False, "no GPU (test)"))
    recs = extra.run_script("training", str(tmp_path), True, 5.0, log=lambda m: None)
    assert seen["cmd"][:3] == [sys.executable, "-m", "normfuse.repro.bench_training"]
    assert "--quick" in seen["cmd"] and seen["cmd"][seen["cmd"].index("--part") + 1] == "bench"
    assert len(recs) == 1 and recs[0]["op"] == "backward"
    assert recs[0]["skipped"] == "no Hopper GPU: no GPU (test)"
    assert (tmp_path / "training" / "summary.md").exists()


def test_ab_revisions_alternates_the_two_packages_and_compares_ratios(tmp_path):
    """bench/ab_revisions.py (loaded by path): the base revision's python/ exported by git
    archive, processes alternating base / new with each side's PYTHONPATH, the comparison of
    their ratios to cuBLAS per cell and variant (a stand-in timing script that reports 1.10x on
    the base package and 1.00x on the working tree's)."""
    import importlib.util
    import json
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    if subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    spec = importlib.util.spec_from_file_location("ab_revisions", repo / "bench" / "ab_revisions.py")
    ab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab)
    script = tmp_path / "fake_ab_order.py"
    script.write_text(
        "import json, os, sys\n"
        "out = sys.argv[sys.argv.index('--out') + 1]\n"
        "first = os.environ['PYTHONPATH'].split(os.pathsep)[0]\n"
        "base = 'base-src' in first\n"
        "assert os.path.exists(os.path.join(first, 'normfuse', '__init__.py'))\n"
        "ms = {'cublas': 2.0, 'rms@hopper-ws': 2.2 if base else 2.0}\n"
        "json.dump({'rows': [{'M': 8, 'K': 16, 'N': 32, 'ms': ms}], 'args': sys.argv[1:]},\n"
        "          open(os.path.join(out, 'ab_order.json'), 'w'))\n")
    out = tmp_path / "ab"
    assert ab.main(["--base", "HEAD", "--out", str(out), "--pairs", "2", "--script", str(script),
                    "--", "--cells", "blog"]) == 0
    data = json.loads((out / "ab_revisions.json").read_text())
    (row,) = data["rows"]
    assert (row["base"], row["new"]) == (pytest.approx(1.1), pytest.approx(1.0))
    assert row["change"] == pytest.approx(1 / 1.1)
    assert sorted(p.name for p in out.iterdir() if p.name[-1].isdigit()) == ["base0", "base1",
                                                                             "new0", "new1"]
    assert json.loads((out / "new1" / "ab_order.json").read_text())["args"][-2:] == ["--cells", "blog"]
    assert "| geometric mean | rms@hopper-ws | | | 0.909 |" in (out / "ab_revisions.md").read_text()


def test_ncu_source_summary_of_session14s_fused_kernel():
    """bench/ncu_source.py on the committed ncu export of the fused pre-norm kernel (session 14,
    before stats-late): the k-loop's instructions in program order show the four wgmma of a
    k-step with the statistics' four ldmatrix all issued before the second (one even before the
    first)."""
    import importlib.util
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("ncu_source", repo / "bench" / "ncu_source.py")
    ns = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ns)
    text = ns.summary(str(repo / "bench/results/2026-12-02/session14/ncu-source/src_fused.csv.gz"), 5)
    loop = text.split("the k-loop), in order")[1]
    order = [line.split("`")[1].split()[0] for line in loop.splitlines() if line.startswith("| ")
             and "`" in line]
    hgmma = [i for i, w in enumerate(order) if w.startswith("HGMMA")]
    ldsm = [i for i, w in enumerate(order) if w.startswith("LDSM")]
    assert len(hgmma) == 4 and len(ldsm) == 4
    assert max(ldsm) < hgmma[1] and min(ldsm) < hgmma[0] < max(ldsm)
    assert "24225 warp-state samples" in text


def test_attention_bwd_lean_reaches_the_warm_children(monkeypatch):
    """bench_attention_bwd --lean: each warm-up child runs its cell with lean=True too (the same
    kernels compiled as the timing process then times), and without it no lean argument."""
    from normfuse.repro import bench_attention_bwd as ab
    seen = []
    monkeypatch.setattr(ab, "bench_shape", lambda *a, **kw: seen.append(kw) or [])
    assert warm_child.main(["--target", "attention_bwd", "--cell", "2,1024,gelu_tanh",
                            "--lean"]) == 0
    assert warm_child.main(["--target", "attention_bwd", "--cell", "2,1024,gelu_tanh"]) == 0
    assert seen == [{"kernels": False, "lean": True}, {"kernels": False}]
    argv = warm.child_argv("attention_bwd", (2, 1024, "gelu_tanh"), "--lean")
    assert argv[-1] == "--lean" and warm_child.main(argv[3:]) == 0 and seen[-1]["lean"] is True


def test_attention_backward_report_lists_each_backwards_kernels(monkeypatch, tmp_path):
    """bench_attention_bwd's report: per shape, the fused and the unfused backward's kernels
    (issue 22's first step), from the records (the timing itself needs the GPU: stubbed)."""
    from normfuse.repro import bench_attention_bwd as ab
    rec = {"op": "flash_norm_attention.backward", "activation": "softmax", "H": 4,
           "max_seqlen": 1024, "fused_ms": 8.0, "unfused_eager_ms": 4.2,
           "fused_kernels": [["_dkdv_kernel", 5.1, 1], ["_rows_kernel", 2.9, 2]],
           "unfused_eager_kernels": [["flash_bwd", 2.0, 1]]}
    seen = []
    monkeypatch.setattr(ab, "bench_shapes", lambda quick: [(4, 1024, "softmax")])
    monkeypatch.setattr(ab, "bench_shape", lambda *a, **kw: seen.append(kw) or [dict(rec)])
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick"]) == 0
    md = (tmp_path / "attention_bwd.md").read_text()
    assert "fused backward's kernels, softmax H=4 max=1024" in md
    assert "- `_dkdv_kernel` 5.100 x1" in md and "- `flash_bwd` 2.000 x1" in md
    assert seen == [{"kernels": True, "rows_tiles": [], "kv_tiles": [], "kvq_tiles": [],
                     "budget": ab.BUDGET_S}]
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick", "--no-kernels"]) == 0
    assert seen[-1] == {"kernels": False, "rows_tiles": [], "kv_tiles": [], "kvq_tiles": [],
                        "budget": ab.BUDGET_S}
    # the tile lists reach the shapes, and their timings the report, fastest first
    rec["kv_tiles_ms"] = {"32x32:4:2": 5.4, "32x64:4:3": 5.1}
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick", "--kv-tiles",
                    "32x32:4:2,32x64:4:3"]) == 0
    assert seen[-1]["kv_tiles"] == [(32, 32, 4, 2), (32, 64, 4, 3)]
    rec["kvq_tiles_ms"] = {"16:8:2": 3.9, "32:8:3": 3.7}
    rec["fused_saved_kvq_kernels"] = [["fna_bwd_kvq_naive", 2.5, 1]]
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick", "--kv-tiles",
                    "32x32:4:2,32x64:4:3", "--kvq-tiles", "16:8:2,32:8:3"]) == 0
    assert seen[-1]["kvq_tiles"] == [(16, 8, 2, False, False), (32, 8, 3, False, False)]
    assert "batch" not in seen[-1] and "lean" not in seen[-1]  # (unless asked)
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick", "--lean"]) == 0
    assert seen[-1]["lean"] is True
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick", "--batch", "64"]) == 0
    assert seen[-1]["batch"] == 64
    md = (tmp_path / "attention_bwd.md").read_text()
    assert ("kvq plan by its kvq kernel's tile (BLOCK_M:warps:stages), softmax H=4 max=1024: "
            "32:8:3 3.700 ms, 16:8:2 3.900 ms") in md
    assert "fused_saved_kvq backward's kernels" in md and "`fna_bwd_kvq_naive` 2.500 x1" in md
    assert ("default backward (saved g) by dK/dV kernel tile (BLOCK_MxBLOCK_L:warps:stages), "
            "softmax H=4 max=1024: 32x64:4:3 5.100 ms, 32x32:4:2 5.400 ms") in md


def test_attention_backward_train_step_fields():
    """Forward + backward saved: the fused training forward and saved-g backward against the
    faster unfused pipeline's forward + backward; absent quantities give no figure."""
    from normfuse.repro.bench_attention_bwd import train_step_fields
    rec = dict(fwd_saving_ms=1.0, fused_saved_ms=3.0, unfused_eager_fwd_ms=2.0,
               unfused_eager_ms=4.0, unfused_compiled_fwd_ms=1.5, unfused_compiled_ms=3.5)
    got = train_step_fields(rec)
    assert got["train_fused_ms"] == 4.0 and got["train_unfused_best_ms"] == 5.0
    assert abs(got["train_saved_pct_vs_padded_unfused"] - 20.0) < 1e-9
    rec.pop("unfused_compiled_ms")  # (compiled skipped for time: no saved % against eager alone)
    got = train_step_fields(rec)
    assert got["train_unfused_best_ms"] == 6.0 and "train_saved_pct_vs_padded_unfused" not in got
    assert train_step_fields({"fwd_saving_ms": 1.0}) == {}
    # the dynamic-shape compile is a candidate too (past 2^31 elements the static one is slow)
    rec = dict(fwd_saving_ms=1.0, fused_saved_ms=3.0, unfused_eager_fwd_ms=2.0,
               unfused_eager_ms=4.0, unfused_compiled_fwd_ms=3.0, unfused_compiled_ms=5.0,
               unfused_dynamic_fwd_ms=1.0, unfused_dynamic_ms=4.0)
    got = train_step_fields(rec)
    assert got["train_unfused_best_ms"] == 5.0 and got["train_unfused_best"] == "dynamic"
    assert abs(got["train_saved_pct_vs_padded_unfused"] - 20.0) < 1e-9
    assert "train_fused_kvq_ms" not in got
    # the kvq plan's backward beside it
    got = train_step_fields(dict(rec, fused_saved_kvq_ms=2.5))
    assert got["train_fused_kvq_ms"] == 3.5
    assert abs(got["train_saved_kvq_pct_vs_padded_unfused"] - 30.0) < 1e-9


def test_summary_times_a_cells_quantities_in_turns(monkeypatch):
    """summary._timed: every quantity timed once per round, in turns (a drifting clock hits
    all of them alike), the median of the rounds kept."""
    from normfuse.repro import summary
    calls, times = [], {"a": iter([3.0, 9.0, 4.0]), "b": iter([1.0, 2.0, 8.0])}
    monkeypatch.setattr(summary, "_bench", lambda f: f())

    def fn(k):
        return lambda: calls.append(k) or next(times[k])
    assert summary._timed({"a": fn("a"), "b": fn("b")}, 3) == {"a": 4.0, "b": 2.0}
    assert calls == ["a", "b"] * 3
    assert summary.ROUNDS == 3


def test_summary_post_norm_schedule_fields_from_the_rounds():
    """The post-norm ops' per-schedule times come from the cell's timed rounds: each schedule's
    ms, hidden %, and ratios to the backbone and cuBLAS of the same rounds."""
    from normfuse.repro import summary
    f = summary._post_lowered_times({"coop": 1.2, "pingpong": 1.5}, cublas=1.0, norm=0.5,
                                    backbone=1.1)
    assert f["lowered_coop_ms"] == 1.2 and f["lowered_pingpong_ms"] == 1.5
    assert f["lowered_coop_hidden_pct"] == pytest.approx(60.0)
    assert f["lowered_pingpong_over_backbone"] == pytest.approx(1.5 / 1.1)
    assert f["lowered_coop_over_cublas"] == pytest.approx(1.2)
    assert summary._post_lowered_times({}, 1.0, 0.5, 1.1) == {}


def test_summary_cells_filter():
    """`summary --cells` keeps the named cells in the summary's order and refuses others by name."""
    from normfuse.repro import summary
    assert summary.summary_cells(False, "8192x4096x4096, 262144x2048x1024") == [
        (262144, 2048, 1024), (8192, 4096, 4096)]
    assert summary.summary_cells(False) == summary.CELLS
    with pytest.raises(SystemExit, match="not a summary cell"):
        summary.summary_cells(False, "100x200x300")
    with pytest.raises(SystemExit, match="takes MxKxN"):
        summary.summary_cells(False, "262144x2048")


def test_attention_bwd_kvq_tiles_are_checked_before_timed():
    """bench_attention_bwd's kvq tiles: timed only when two calls agree bitwise and are close to
    the default tile's gradients (a tile with a pipeliner race must not win)."""
    import torch
    from normfuse.repro import bench_attention_bwd as ab
    ref = (torch.ones(4), None, torch.full((3,), 2.0))
    bench = lambda fn, warmup, rep: 1.5  # noqa: E731
    assert ab._checked_tile(lambda: (torch.ones(4), None, torch.full((3,), 2.0)), ref, bench) == 1.5
    calls = iter([(torch.ones(4), None, ref[2]), (torch.ones(4) * 1.0001, None, ref[2])])
    with pytest.raises(ValueError, match="gradient 0 not repeatable bitwise"):
        ab._checked_tile(lambda: next(calls), ref, bench)
    with pytest.raises(ValueError, match="gradient 2 is 5.00e-01 from the default tile's"):
        ab._checked_tile(lambda: (torch.ones(4), None, torch.full((3,), 3.0)), ref, bench)


def test_attention_bwd_tile_lists():
    # bench_attention_bwd --rows-tiles / --kv-tiles: BLOCK_MxBLOCK_L:warps:stages, and a bad
    # entry named with the expected form
    from normfuse.repro import bench_attention_bwd as ab
    assert ab.parse_tiles("64x64:8:2, 128x32:4:1,") == [(64, 64, 8, 2), (128, 32, 4, 1)]
    assert ab.parse_tiles("") == []
    with pytest.raises(ValueError, match=r"tile '64x64:8': expected BLOCK_MxBLOCK_L:warps:stages"):
        ab.parse_tiles("32x32:4:2,64x64:8")
    assert ab.parse_kvq_tiles("16:8:2, 32:8:3:t,32:8:3:tp,16:8:2:p") == [
        (16, 8, 2, False, False), (32, 8, 3, True, False), (32, 8, 3, True, True),
        (16, 8, 2, False, True)]
    for bad in ("16x128:8:2", "16:8:2:x", "16:8", "16:8:2:", "16:8:2:tq"):
        with pytest.raises(ValueError, match=rf"kvq tile '{bad}': expected BLOCK_M:warps:stages"):
            ab.parse_kvq_tiles(bad)


def test_attention_configs_and_cells(monkeypatch):
    """bench_attention --configs / --cells: parsed, bad entries named with the expected form, and
    `run` times the default configurations, then the extra ones, over the chosen cells only."""
    from normfuse.repro import bench_attention as ba
    assert ba.parse_configs("64x8, 128x8:flat,") == ((64, 8), (128, 8, "flat"))
    assert ba.parse_cells("4:1000:softmax,2:3000:gelu_tanh") == [(4, 1000, "softmax"),
                                                                  (2, 3000, "gelu_tanh")]
    with pytest.raises(ValueError, match=r"config '64:8': expected BLOCK_MxWARPS"):
        ba.parse_configs("64:8")
    with pytest.raises(ValueError, match=r"unknown variant 'fast' \(one of ahead, ahead_save, carry, carry_save, each, flat"):
        ba.parse_configs("64x4:fast")
    with pytest.raises(ValueError, match=r"cell '4:1000:relu': expected H:max_len:activation"):
        ba.parse_cells("4:1000:relu")
    seen = []
    monkeypatch.setattr(ba, "_cell", lambda H, m, act, configs: seen.append((H, m, act, configs))
                        or dict(H=H, max_len=m, activation=act))
    monkeypatch.setattr(ba.torch.cuda, "empty_cache", lambda: None)
    ba.run(False, 100.0, {}, log=lambda s: None, extra_configs=((128, 8), (64, 4, "flat")),
           only_cells=[(4, 1000, "softmax")])
    assert [c[:3] for c in seen] == [(4, 1000, "softmax")]
    assert seen[0][3] == ba.configs(False) + ((128, 8),)  # the duplicate not timed twice
    # --affine reaches the cells
    kws = []
    monkeypatch.setattr(ba, "_cell", lambda H, m, act, configs, **kw: kws.append(kw)
                        or dict(H=H, max_len=m, activation=act))
    ba.run(True, 100.0, {}, log=lambda s: None, only_cells=[(2, 1000, "gelu_tanh")], affine=True)
    assert kws == [{"affine": True}]


def test_attention_command_line_takes_the_compile_settings(monkeypatch, tmp_path):
    """bench_attention's command line sets torch.compile up as the main job and the warm-up
    children do (warm.configure_torch: a graph per shape) before its cells: with Dynamo's
    default recompile limit the static compile per shape fell back to eager at the grid's
    eighth shape."""
    import torch._dynamo
    from normfuse.repro import bench_attention as ba
    names = [n for n in ("recompile_limit", "cache_size_limit")
             if hasattr(torch._dynamo.config, n)]
    for n in names:
        monkeypatch.setattr(torch._dynamo.config, n, 8)
    monkeypatch.setattr(torch._dynamo.config, "automatic_dynamic_shapes", True)
    # (the rest of what configure_torch sets, restored after the test as it was)
    import torch._inductor.config as ic
    for mod, n in ((torch._dynamo.config, "accumulated_cache_size_limit"),
                   (torch._dynamo.config, "accumulated_recompile_limit"),
                   (ic, "fx_graph_cache"), (ic, "autotune_local_cache")):
        if hasattr(mod, n):
            monkeypatch.setattr(mod, n, getattr(mod, n))
    seen = {}

    def fake_run(*a, **k):
        seen.update({n: getattr(torch._dynamo.config, n) for n in names},
                    dynamic=torch._dynamo.config.automatic_dynamic_shapes)
        return []
    monkeypatch.setattr(ba, "run", fake_run)
    monkeypatch.setattr(ba, "plot", lambda *a: None)
    assert ba.main(["--no-tests", "--out", str(tmp_path)]) == 0
    assert names and all(seen[n] >= 64 for n in names) and seen["dynamic"] is False, seen


def test_attention_mma_variant():
    """bench_attention's "loads" (the LayerNorm in the loads' layout, the default before the MMA
    layout's and still with weights) is timed in the full run, "mma" (`ln_mma` with
    MMA_FNA_PASSES) and the training forward's variants by --configs; a variant that may round
    differently (another layout or pass list) is held to ROUNDING_TOL of the default's output,
    the default's own launches ("flat", "walk256") to its bits."""
    import torch
    from normfuse.ops.flash_norm_attention import MMA_FNA_PASSES
    from normfuse.repro import bench_attention as ba
    assert (64, 4, "loads") in ba.configs(False) and ba.configs(True) == ((64, 4),)
    assert ba.VARIANTS["mma"] == dict(ln_mma=True, passes=MMA_FNA_PASSES)
    assert ba.VARIANTS["loads"] == dict(ln_mma=False)
    assert ba.VARIANTS["mma_save"] == dict(ba.VARIANTS["mma"], save=True)
    assert ba.VARIANTS["loads_save"] == dict(ba.VARIANTS["loads"], save=True)
    assert ba.VARIANTS["ahead"] == dict(stats_ahead=True)
    assert ba.VARIANTS["ahead_save"] == dict(ba.VARIANTS["ahead"], save=True)
    assert ba.VARIANTS["carry_save"] == dict(ba.VARIANTS["carry"], save=True)
    assert ba.VARIANTS["twoexch"] == dict(stats_ahead=False)
    assert ba.ROUNDED_VARIANTS == set(ba.VARIANTS) - {"flat", "walk256"}
    assert ba.parse_configs("64x4:save,64x4:mma_save") == ((64, 4, "save"), (64, 4, "mma_save"))
    ref = torch.randn(64, 2, 16, generator=torch.Generator().manual_seed(0)).bfloat16()
    ulp = ref.clone()
    ulp.view(torch.int16)[0, 0, 0] += 1  # one bf16 ulp in one element
    assert ba.variant_matches(None, ref.clone(), ref) == (True, None)
    assert ba.variant_matches("flat", ulp, ref) == (False, None)
    same, d = ba.variant_matches("mma", ulp, ref)
    assert same and 0 < d < ba.ROUNDING_TOL
    assert not ba.variant_matches("mma", ref * 1.01, ref)[0]
    nan = ref.clone()
    nan[1, 1, 1] = float("nan")
    assert not ba.variant_matches("mma_save", nan, ref)[0]


def test_attention_unfused_norms_take_the_fastest(monkeypatch):
    """bench_attention's unfused baseline: each norm the fastest candidate (every one recorded,
    the winner named); Liger's LayerNorm a candidate only where it imports."""
    import torch
    import torch.nn.functional as F
    from normfuse.repro import bench_attention as ba
    times = iter([0.5, 0.7, 0.9, 0.2, 0.3, 0.4, 0.6])  # the order _norm_times times them in
    calls = []
    monkeypatch.setattr(ba, "_bench", lambda fn: calls.append(fn()) or next(times))
    eager_ln = lambda a: F.layer_norm(a, a.shape[-1:])  # noqa: E731
    eager_post = lambda o, l, a: F.rms_norm(o + l, o.shape[-1:]) + a  # noqa: E731
    monkeypatch.setattr(ba, "_compiled_norms", lambda shape=None, affine=False: (eager_ln, eager_post))
    monkeypatch.setitem(sys.modules, "liger_kernel.ops.layer_norm", None)  # not importable
    x = torch.randn(4, 8)
    rec = ba._norm_times(x, torch.randn(4, 8), eager_ln(x), eager_ln, eager_post)
    assert rec["ln_dynamic_ms"] == 0.5 and rec["ln_eager_ms"] == 0.7 and rec["ln_static_ms"] == 0.4
    assert (rec["ln_best"], rec["ln_ms"]) == ("static", 0.4)
    assert (rec["post_best"], rec["post_ms"]) == ("dynamic", 0.2) and rec["post_static_ms"] == 0.9
    assert "ln_liger_ms" not in rec and len(calls) == 6
    # --affine: every candidate runs with the weights
    times = iter([0.5, 0.7, 0.9, 0.2, 0.3, 0.4])
    calls.clear()
    aff_ln = lambda a, w, b: F.layer_norm(a, a.shape[-1:], w, b)  # noqa: E731
    aff_post = lambda o, l, a, w: F.rms_norm(o + l, o.shape[-1:], w, eps=1e-5) + a  # noqa: E731
    monkeypatch.setattr(ba, "_compiled_norms", lambda shape=None, affine=False:
                        (aff_ln, aff_post) if affine else (eager_ln, eager_post))
    w, b, rw = torch.randn(8), torch.randn(8), torch.randn(8)
    o = torch.randn(4, 8)
    ln = aff_ln(x, w, b)
    ba._norm_times(x, o, ln, aff_ln, aff_post, (w, b, rw))
    want_ln, want_post = aff_ln(x, w, b), aff_post(o, ln, x, rw)
    assert [torch.allclose(c, want_ln) for c in calls] == [True, True, False, False, False, True]
    assert all(torch.allclose(c, want_post) for c in calls[2:5])


def test_attention_bwd_budget_reaches_every_shape(monkeypatch, tmp_path):
    """bench_attention_bwd --budget: each shape is benchmarked under the given budget (its
    compiled baseline is timed while 60 % of it is left), not the module's default."""
    from normfuse.repro import bench_attention_bwd as ab
    seen = []

    def shape(H, max_len, act, t0, quick, **kw):
        seen.append(kw["budget"])
        return [{"op": "flash_norm_attention.backward", "H": H, "max_seqlen": max_len,
                 "activation": act}]
    monkeypatch.setattr(ab, "bench_shape", shape)
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick", "--budget", "987"]) == 0
    assert seen and all(b == 987 for b in seen), seen
    assert len(seen) == len(ab.bench_shapes(True))
    # --cells: only those (the grid split over calls), in the given order; a bad one refused
    got = []
    monkeypatch.setattr(ab, "bench_shape", lambda H, m, a, *r, **kw: got.append((H, m, a)) or [
        {"op": "flash_norm_attention.backward", "H": H, "max_seqlen": m, "activation": a}])
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--cells",
                    "4:10000:gelu_tanh,2:3072:softmax"]) == 0
    assert got == [(4, 10000, "gelu_tanh"), (2, 3072, "softmax")]
    with pytest.raises(SystemExit):
        ab.main(["--out", str(tmp_path), "--no-tests", "--cells", "4:10000:tanh"])


@pytest.mark.parametrize("act", ["softmax", pytest.param("gelu_tanh", marks=pytest.mark.slow)])
def test_attention_core_kernels_agree_on_the_cpu(act):
    """bench_attention's attention cores (the row-block one, by the table and by the search, and
    the K / V-resident one) compute attend(q) per sequence and head: against torch in
    fp32 through the interpreter, jagged lengths (empty, short, several row blocks)."""
    import math

    import torch
    from normfuse.kernels.attention import ACT_CODES
    from normfuse.ops.common import row_block_table
    from normfuse.reference_attention import default_qk_scale
    from normfuse.repro.bench_attention import attention_core, attention_core_kv_resident
    from normfuse.testing import check_pass_numerics
    g = torch.Generator().manual_seed(3)
    lens, H, D, L, BM = [5, 0, 1, 19, 40], 2, 16, 16, 16
    B, T = len(lens), sum(lens)
    q = torch.randn(T, H, D, generator=g).to(torch.bfloat16)
    k = (torch.randn(B, L, H, D, generator=g) / math.sqrt(D)).to(torch.bfloat16)
    v = torch.randn(B, L, H, D, generator=g).to(torch.bfloat16)
    offs = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32)
    scale = default_qk_scale(act, D)
    ref = torch.zeros(T, H, D)
    for b in range(B):
        s0, s1 = int(offs[b]), int(offs[b + 1])
        for h in range(H):
            s = q[s0:s1, h].float() @ k[b, :, h].float().T
            p = torch.softmax(s * scale, -1) if act == "softmax" else \
                torch.nn.functional.gelu(s, approximate="tanh") * scale
            ref[s0:s1, h] = p @ v[b, :, h].float()
    nb = [-(-n // BM) for n in lens]
    blocks = torch.tensor([0] + torch.tensor(nb).cumsum(0).tolist(), dtype=torch.int32)
    consts = dict(H=H, HKV=H, D=D, L=L, BLOCK_M=BM, BLOCK_N=L, ACT=ACT_CODES[act],
                  LOG_B=max(1, B.bit_length()))
    outs = {}
    for name, fn, args, c, grid in (
            ("search", attention_core, [q, k, v, None, offs, blocks, B, scale],
             dict(consts, ROW_TABLE=False), (sum(nb), H)),
            ("table", attention_core, [q, k, v, None, offs, row_block_table(offs, BM), B, scale],
             dict(consts, ROW_TABLE=True), (sum(nb), H)),
            ("kv_resident", attention_core_kv_resident,
             [q, k, v, None, row_block_table(offs, 2 * BM), scale],
             dict(H=H, HKV=H, D=D, L=L, BLOCK_M=BM, ROWS=2 * BM, ACT=ACT_CODES[act]),
             (row_block_table(offs, 2 * BM).shape[0], H))):
        args[3] = torch.full((T, H, D), float("nan")).to(torch.bfloat16)
        res = check_pass_numerics(fn, args, constexprs=c, grid=grid, passes=(), num_warps=4)
        outs[name] = res.before["O"].float()
        err = (outs[name] - ref).norm() / ref.norm()
        assert err < 1e-2, (name, float(err))
    assert torch.equal(outs["search"], outs["table"])


def test_train_options_ab_on_the_cpu(monkeypatch):
    """bench/train_options_ab.py's mechanics on CPU tensors (the ops' reference path, a counting
    timer): every switch value timed each round in turn, the module constant restored after,
    ratios to the first value, the gradients compared across values; bad arguments refused."""
    import importlib.util
    import warnings
    from pathlib import Path
    from normfuse.ops import training
    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("train_options_ab",
                                                  repo / "bench" / "train_options_ab.py")
    ab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab)
    seen = []

    def timer(fn):
        fn()
        seen.append((training.PRENORM_STATS_IN_BWD, training.POSTNORM_MLP_BWD_PLAN))
        return float(len(seen))
    before = (training.PRENORM_STATS_IN_BWD, training.POSTNORM_MLP_BWD_PLAN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the fallback's warning)
        recs = ab.run(["stats", "block"], [(16, 32, 48)], 2, False, timer=timer, device="cpu")
    assert (training.PRENORM_STATS_IN_BWD, training.POSTNORM_MLP_BWD_PLAN) == before
    assert [(r["switch"], r["op"]) for r in recs] == [
        ("stats", "rmsnorm_linear"), ("stats", "layernorm_linear"), ("block", "postnorm_mlp")]
    for r in recs:
        assert "error" not in r, r
        assert set(r["ms"]) == {repr(v) for v in ab.SWITCHES[r["switch"]][1]}
        assert all(len(t) == 2 for t in r["rounds_ms"].values())
        assert r["max_rel_grad_diff"] == 0.0  # (the reference path ignores the switches)
        first = r["ms"][repr(ab.SWITCHES[r["switch"]][1][0])]
        assert all(abs(r["ratio_to_first"][k] - v / first) < 1e-12 for k, v in r["ms"].items())
    # the values alternate within each round
    assert [s[0] for s in seen[:4]] == [False, True, False, True]
    assert [s[1] for s in seen[-2:]] == ["regrouped", "composed"]
    assert "| stats | rmsnorm_linear | 16x32x48 |" in ab.markdown(recs)
    assert ab.parse_cells("quick") == ab.QUICK and ab.parse_cells("8x16x32") == [(8, 16, 32)]
    with pytest.raises(ValueError, match="expected MxKxN"):
        ab.parse_cells("8x16")
    with pytest.raises(ValueError, match="unknown switch"):
        ab.parse_switches("stats,nope")


def test_training_benchmark_cells_and_ops_options(tmp_path, capsys):
    """bench_training --cells / --ops: the cells and ops to time (a rerun of a grid's misses);
    malformed values are refused with the expected form, and the ops loop takes only those asked
    for, in the grid's order (a spent budget records each as skipped without running it)."""
    from normfuse.repro import bench_training as gb
    assert gb.parse_cells("262144x512x1024, 8192x2048X512") == [(262144, 512, 1024),
                                                                 (8192, 2048, 512)]
    assert gb.parse_ops("postnorm_mlp,layernorm_linear") == ("layernorm_linear", "postnorm_mlp")
    for bad, what in ((["--cells", "262144x512"], "is not MxKxN"),
                      (["--cells", "1x0x4"], "is not MxKxN"),
                      (["--ops", "layernorm_linear,gelu_linear"], "gelu_linear: choose from"),
                      (["--rounds", "0"], "--rounds must be at least 1"),
                      (["--pairs", "-1"], "--pairs must be 0 or more")):
        with pytest.raises(SystemExit):
            gb.main(["--part", "bench", "--out", str(tmp_path)] + bad)
        assert what in capsys.readouterr().err
    recs = gb.bench_cells([(64, 32, 48), (64, 48, 32)], str(tmp_path), -1.0, {"gpu": "cpu"},
                          device="cpu", ops=gb.parse_ops("layernorm_linear,linear_rmsnorm"))
    assert [(r["op"], r["K"]) for r in recs] == [
        ("layernorm_linear.backward", 32), ("linear_rmsnorm.backward", 32),
        ("layernorm_linear.backward", 48), ("linear_rmsnorm.backward", 48)]
    assert all("time budget" in r["skipped"] for r in recs)


def _probe_cluster_reduce(variant: str) -> str:
    """cluster-reduce's output on test/lit/cluster-reduce.mlir after bench/exchange_probe.py's
    patch for `variant` (in a child: the patch rebinds the passes' module state)."""
    import os
    import subprocess
    repo = Path(__file__).resolve().parents[2]
    code = ("import sys; sys.path.insert(0, 'bench'); import exchange_probe as p; "
            f"p.patch({variant!r}); from normfuse import cli; "
            "sys.exit(cli.main(['--split-input-file', '--cluster-reduce', "
            "'test/lit/cluster-reduce.mlir']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(repo / "python")}, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


@pytest.mark.parametrize("variant, arrive", [("release", "barrier.cluster.arrive.release"),
                                             ("relaxed", "barrier.cluster.arrive.relaxed"),
                                             ("cta", "fence.acq_rel.cta")])
def test_exchange_probe_swaps_the_exchange_arrive_in_the_pass_output(variant, arrive):
    """bench/exchange_probe.py (session 28's fence-cost bound, loaded by path in a child, since it
    rebinds the passes' module constants): cluster-reduce, run after its patch, emits the
    variant's arrive and no other; the release variant leaves the product's strings alone."""
    arrives = set(re.findall(r"barrier\.cluster\.arrive\.\w+|fence\.acq_rel\.\w+",
                             _probe_cluster_reduce(variant)))
    assert arrive in arrives
    others = {"release": {"barrier.cluster.arrive.release"},
              "relaxed": {"barrier.cluster.arrive.relaxed"},
              "cta": {"fence.acq_rel.cta", "barrier.cluster.arrive.relaxed"}}[variant]
    assert arrives == others, arrives


def test_exchange_probe_nowait_keeps_only_the_barrier_before_the_return():
    """exchange_probe's `nowait` bound (session 36): the exchanges' cluster barriers become
    no-ops and only what the pass builds outside them stays (the arrive after the last reads
    and the wait before the return), so the output has fewer arrives than the product's, each
    still matched by a wait (no CTA exits while a peer may write its slots)."""
    release, nowait = _probe_cluster_reduce("release"), _probe_cluster_reduce("nowait")
    funcs = nowait.count("tt.return")
    arrives = nowait.count("barrier.cluster.arrive")
    assert 0 < arrives <= funcs
    assert arrives == nowait.count("barrier.cluster.wait")
    assert arrives < release.count("barrier.cluster.arrive")


def test_attention_bwd_bench_backward_repeats_a_compiled_backward(monkeypatch):
    """bench_attention_bwd's `bench_backward` times the backward of one graph again and again:
    a compiled function that donates its saved buffers to the backward (torch 2.11's
    dynamic-shape compile on the H200) refuses that, so the dynamic baseline compiles with
    `donate=False`, and then repeats."""
    import torch
    import torch.nn.functional as F
    import triton.testing
    from normfuse.repro import bench_attention_bwd as ab
    calls = []

    def fake_do_bench(fn, warmup, rep):  # (the timing loop: the backward three times)
        for _ in range(3):
            fn()
            calls.append(1)
        return 1.0
    monkeypatch.setattr(triton.testing, "do_bench", fake_do_bench)

    def f(x, w):
        return F.layer_norm(x, (x.shape[1],)) @ w
    torch._dynamo.reset()
    comp = torch.compile(f, dynamic=True, backend="aot_eager")
    x, w = torch.randn(64, 32), torch.randn(32, 16)
    assert ab.bench_backward(comp, (x, w), torch.randn(64, 16), donate=False) == 1.0
    assert len(calls) == 3
    torch._dynamo.reset()


@pytest.mark.parametrize("act", ["softmax", "gelu_tanh"])
def test_attention_bwd_core_against_the_alternatives(act, monkeypatch, tmp_path):
    """bench_attention_bwd --core: the kvq kernel's time (from the plan's kernels, stubbed: the
    op needs the GPU) against the attention backwards a user could run on the same inputs; on
    the CPU the alternatives run for real (their gradients checked here), CUDA-only ones are
    recorded as errors, and the ratio is to the fastest."""
    import torch
    from normfuse.repro import bench_attention_bwd as ab
    rows = [["fna_bwd_rows_pre_naive", 0.3, 1], ["fna_bwd_kvq_naive", 1.2, 1],
            ["fna_bwd_rows_post_naive", 0.2, 1]]
    monkeypatch.setattr(ab, "kvq_plan_kernels", lambda *a, **kw: rows)
    ran = []

    def timer(fn, inputs, dout):  # the gradients of each alternative, against autograd's own
        leaves = [t.detach().float().requires_grad_() for t in inputs]
        ref = torch.autograd.grad(ab.gdpa_core(*leaves, 0.5) if act != "softmax" else
                                  torch.nn.functional.scaled_dot_product_attention(
                                      *leaves, scale=0.5), leaves, dout.float())
        assert all(r.abs().sum() > 0 for r in ref)
        leaves = [t.detach().requires_grad_() for t in inputs]
        got = torch.autograd.grad(fn(*leaves), leaves, dout)
        assert all(g.shape == r.shape for g, r in zip(got, ref))
        ran.append(fn)
        return 2.0 + len(ran)
    monkeypatch.setattr("normfuse.reference_attention.default_qk_scale", lambda a, d: 0.5)
    rec = ab.bench_core(2, 9, act, batch=3, device="cpu", timer=timer,
                        compile_backend="aot_eager", L=16, D=16)
    assert rec["core_bwd_ms"] == 1.2 and rec["core_bwd_plan_ms"] == pytest.approx(1.7)
    alts = rec["core_alternatives_ms"]
    if act == "softmax":
        assert set(alts) | set(rec["core_alternative_errors"]) == {
            "sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "flash_varlen"}
        assert "CUDA only" in rec["core_alternative_errors"]["flash_varlen"]
        # rows_pre computes softmax's delta, as FlashAttention's preprocessing does: counted
        assert rec["core_bwd_pre_ms"] == pytest.approx(1.5)
    else:
        assert alts == {"gdpa_eager": 3.0, "gdpa_compiled": 4.0}
        assert "core_bwd_pre_ms" not in rec
        # Meta's GDPA: recorded as an error on the CPU (not installed, or its import asks for a
        # CUDA device; where it does import, its kernels refuse CPU tensors)
        assert "gdpa_tritonbench" in rec["core_alternative_errors"]
    best = min(alts, key=alts.get)
    # no device timer on the CPU: the ratio is against the wall-clock medians, and says so
    assert rec["core_basis"] == "wall" and "core_alternatives_device_ms" not in rec
    assert rec["core_best_alternative"] == best
    assert rec["core_bwd_vs_best"] == pytest.approx(1.2 / alts[best])
    # with one: device time against device time, the best by device time (not by wall-clock)
    dev_ms = iter([9.0, 1.0, 5.0, 7.0])  # (the second alternative to run is fastest on the device)
    ran.clear()
    rec_d = ab.bench_core(2, 9, act, batch=3, device="cpu", timer=timer,
                          compile_backend="aot_eager", L=16, D=16,
                          device_timer=lambda fn: (fn(), next(dev_ms))[1])
    dev = rec_d["core_alternatives_device_ms"]
    assert set(dev) == set(rec_d["core_alternatives_ms"]) and rec_d["core_basis"] == "device"
    dbest = min(dev, key=dev.get)
    assert rec_d["core_best_alternative"] == dbest and rec_d["core_best_ms"] == dev[dbest]
    assert rec_d["core_bwd_vs_best"] == pytest.approx(1.2 / dev[dbest])
    if len(dev) > 1:  # the best by device time, not by wall-clock (the first ran is the fastest)
        assert dev[dbest] == 1.0 and dbest != min(rec_d["core_alternatives_ms"],
                                                  key=rec_d["core_alternatives_ms"].get)
    if act == "softmax":
        assert rec_d["core_bwd_pre_vs_best"] == pytest.approx(1.5 / dev[dbest])
    with pytest.raises(ValueError, match="expected one fna_bwd_kvq\\* kernel"):
        ab.core_of_kernels(rows[:1])
    with pytest.raises(ValueError, match="expected one fna_bwd_rows_pre\\* kernel"):
        ab.core_fields(rows[1:], {"a": 1.0}, {}, with_pre=True)
    # --core-only: one record per shape with the core's columns and its alternatives listed
    monkeypatch.setattr(ab, "bench_shapes", lambda quick: [(2, 9, act)])
    monkeypatch.setattr(ab, "bench_core", lambda *a, **kw: dict(rec))
    monkeypatch.setattr(ab, "bench_shape", lambda *a, **kw: pytest.fail("not with --core-only"))
    assert ab.main(["--out", str(tmp_path), "--no-tests", "--quick", "--core-only"]) == 0
    md = (tmp_path / "attention_bwd.md").read_text()
    assert ("| core_bwd_ms | core_bwd_plan_ms | core_bwd_pre_ms | core_basis | "
            "core_best_alternative |") in md
    assert (f"backward core, {act} H=2 max=9: kvq kernel 1.200 ms; alternatives (wall ms / "
            f"device ms) {best} {alts[best]:.3f} / -") in md


def test_parallel_keeps_the_estimates_within_the_memory_budget(tmp_path):
    """With a memory budget, a job starts only while its estimate fits beside the running ones'
    (a later one that fits goes first); a job alone always starts; each child's reported peak
    (`PEAK_MARK`) lands in its record. The stand-in big children fail if another big one runs
    beside them (a marker file each)."""
    def big(name):
        return ("import pathlib, sys, time; d = pathlib.Path(%r); me = d / %r\n"
                "others = [p for p in d.glob('big*') if p != me]\n"
                "if others: print('torch.OutOfMemoryError: beside', others); sys.exit(1)\n"
                "me.touch(); time.sleep(1.5); me.unlink(); print('%s 123')"
                % (str(tmp_path), name, warm.PEAK_MARK))
    small = "import pathlib; print(sorted(p.name for p in pathlib.Path(%r).glob('big*')))" % str(
        tmp_path)
    jobs = [("big1", _py(big("big1")), 8), ("big2", _py(big("big2")), 8),
            ("small", _py(small), 1), ("huge", _py("pass"), 50)]
    res = warm.parallel(jobs, 4, 60, log=lambda m: None, mem_budget=10)
    order = [j["label"] for j in res["jobs"]]
    by = {j["label"]: j for j in res["jobs"]}
    assert all(j["rc"] == 0 and not j.get("retried") for j in res["jobs"]), res["jobs"]
    # small ran beside big1 and ended first; big2 and huge (over the budget: alone) after big1
    assert order.index("small") < order.index("big1") < order.index("big2"), order
    assert by["big1"]["peak_gb"] == round(123 / 2**30, 2) and by["big1"]["est_gb"] == 0.0
    assert "peak_gb" not in by["small"] and res["mem_budget_gb"] == 0.0
    assert res["not_started"] == [] and order[-1] == "huge"


def test_attention_bwd_cell_bytes_order_the_warmup():
    """The backward cells' estimates grow with H and the max length (the warm-up starts the
    largest first); on one H200's 85 % the grid's max-length 1024 and 3072 cells fit at once,
    the six at 10000 (which ran out of memory beside them in session 33) do not."""
    from normfuse.repro import bench_attention_bwd as ab
    assert ab.cell_bytes(4, 10000) > ab.cell_bytes(2, 10000) > ab.cell_bytes(4, 3072)
    budget = 0.85 * 141e9
    grid = ab.bench_shapes(False)
    assert sum(ab.cell_bytes(H, m) for H, m, _ in grid if m < 10000) < budget
    assert sum(ab.cell_bytes(H, m) for H, m, _ in grid if m == 10000) > budget


def _fake_tritonbench_gdpa(monkeypatch, wrong=False):
    """tritonbench's GDPA module stood in by a torch one with its call signature (jagged q by
    query offsets, jagged keys / values by key offsets, int32 offsets, `activation`, `qk_scale`):
    the tanh GELU of the scores times the scale times v, per sequence; `wrong`: its output halved
    (an adapter that misreads the offsets looks like that)."""
    import sys
    import types
    import torch
    from normfuse.reference_attention import activation_fn
    calls = []

    def gdpa(q, k, v, qoff, koff, max_q, max_kv, qk_scale=None, activation="raw"):
        # (int32 offsets, as tritonbench's operator passes them; the keys dense, B * max_kv
        # rows, as its dense-KV path checks)
        assert activation == "fast_gelu" and qoff.dtype == koff.dtype == torch.int32
        assert (koff.numel() - 1) * max_kv == k.shape[0] == v.shape[0]
        assert int((qoff[1:] - qoff[:-1]).max()) <= max_q and int((koff[1:] - koff[:-1]).max()) <= max_kv
        calls.append((tuple(q.shape), tuple(k.shape), int(max_q), int(max_kv), qk_scale))
        outs = []
        for b in range(qoff.numel() - 1):
            qs, ks, vs = (t[int(o[b]):int(o[b + 1])].float() for t, o in
                          ((q, qoff), (k, koff), (v, koff)))
            p = activation_fn("gelu_tanh")(torch.einsum("nhd,lhd->hnl", qs, ks)) * qk_scale
            outs.append(torch.einsum("hnl,lhd->nhd", p, vs))
        out = torch.cat(outs).to(q.dtype)
        return out * 0.5 if wrong else out
    names = ["tritonbench", "tritonbench.operators", "tritonbench.operators.gdpa",
             "tritonbench.operators.gdpa.gdpa"]
    for n in names:
        monkeypatch.setitem(sys.modules, n, types.ModuleType(n))
    sys.modules[names[-1]].generalized_dot_product_attention = gdpa
    return calls


@pytest.mark.parametrize("wrong", [False, True])
def test_tritonbench_gdpa_adapter(wrong, monkeypatch):
    """external_gdpa: our dense [B, L, Hkv, D] keys as tritonbench's jagged ones, the call with
    int32 offsets and "fast_gelu", the output against the reference GDPA; in the backward core's
    alternatives it is timed once its dQ matches the eager GDPA's (a wrong result is recorded as
    an error, not timed)."""
    import torch
    from normfuse.repro import bench_attention_bwd as ab
    from normfuse.repro import external_gdpa as eg
    calls = _fake_tritonbench_gdpa(monkeypatch, wrong)
    fn, why = eg.load()
    assert fn is not None and why is None
    x, k, v, off, dout, lens = ab.make_inputs(3, 16, 2, 2, 16, 9, device="cpu")
    kj, vj, koff = eg.jagged_kv(k, v)
    assert kj.shape == (48, 2, 16) and koff.tolist() == [0, 16, 32, 48]
    assert koff.dtype == torch.int32
    # past int32's reach: refused before the launch
    big = torch.zeros(1, 1, 1).expand(2 ** 24, 1, 128)  # (no memory: a zero-stride view)
    with pytest.raises(ValueError, match="int32"):
        eg.gdpa_fn(fn, off, 16, 9, "gelu_tanh", 0.5)(big, kj, vj)
    assert torch.equal(kj[16:32], k[1])
    out = eg.gdpa_fn(fn, off, 16, 9, "gelu_tanh", 0.5)(x, kj, vj)
    bidx, tidx = ab.padded_index(off, lens, x.device)
    qp = ab.padded_heads(x, bidx, tidx, 3, 9).float()
    kt, vt = ab.heads_kv(k, v, 2)
    ref = ab.gdpa_core(qp, kt.float(), vt.float(), 0.5).transpose(1, 2)[bidx, tidx]
    err = float((out.float() - ref).norm() / ref.norm())
    assert (err > 0.4) if wrong else (err < 1e-2), err
    with pytest.raises(ValueError, match="no 'softmax'"):
        eg.gdpa_fn(fn, off, 16, 9, "softmax", 0.5)
    times, dev, errors = ab.attention_bwd_alternatives(
        x, k, v, off, lens, dout, 9, "gelu_tanh", 0.5, timer=lambda fn, inputs, d: 7.0,
        compile_backend="aot_eager")
    if wrong:
        assert "gdpa_tritonbench" not in times
        assert "dQ" in errors["gdpa_tritonbench"] and "from the padded eager GDPA" in errors[
            "gdpa_tritonbench"]
    else:
        assert times["gdpa_tritonbench"] == 7.0 and "gdpa_tritonbench" not in errors
    assert calls and calls[0][2:] == (9, 16, 0.5)


@pytest.mark.parametrize("act, Hkv", [("gelu_tanh", 2), ("softmax", 2), ("softmax", 1)])
def test_unfused_jagged_is_the_padded_pipeline(act, Hkv, monkeypatch):
    """bench_attention_bwd's jagged unfused baseline (the blog's: norms on the jagged rows, the
    attention jagged: torch's nested jagged SDPA for softmax, Meta's GDPA for GELU, here its
    stand-in module) computes what the padded torch pipeline does, forward and gradients (an
    empty sequence among them; GQA), and the saved % takes it among the unfused pipelines."""
    import torch
    from normfuse.repro import bench_attention_bwd as ab
    _fake_tritonbench_gdpa(monkeypatch)
    x, k, v, off, dout, lens = ab.make_inputs(4, 16, 2, Hkv, 16, 9, device="cpu")
    x, k, v, dout = (t.float() for t in (x, k, v, dout))
    lens[1] = 0  # (an empty sequence: the offsets rebuilt)
    off = torch.cat([torch.zeros(1, dtype=off.dtype), lens.cumsum(0).to(off.dtype)])
    x = x[:int(off[-1])].contiguous()
    dout = dout[:int(off[-1])].contiguous()
    bidx, tidx = ab.padded_index(off, lens, x.device)
    attend, why = ab.jagged_attention(act, off, 16, 9, 0.5)
    assert why is None
    if act == "softmax":  # (the empty sequence dropped: the nested queries may take the fused
        # kernels, which torch refuses to a nested tensor with a zero-length sequence)
        assert attend.min_seqlen >= 1
    ln_fn, post_fn = ab.jagged_norms(lambda f: f)
    leaves = [t.detach().requires_grad_() for t in (x, k, v)]
    got = ab.unfused_jagged(*leaves, attend, ln_fn, post_fn)
    ggot = torch.autograd.grad(got, leaves, dout.reshape(got.shape))
    leaves2 = [t.detach().requires_grad_() for t in (x, k, v)]
    want = ab.unfused(*leaves2, bidx, tidx, 9, act, 0.5)
    gwant = torch.autograd.grad(want, leaves2, dout.reshape(want.shape))
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
    for a, b in zip(ggot, gwant):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5)
    rec = {"fwd_saving_ms": 1.0, "fused_saved_ms": 2.0, "unfused_eager_fwd_ms": 3.0,
           "unfused_eager_ms": 6.0, "unfused_compiled_fwd_ms": 2.0, "unfused_compiled_ms": 4.0,
           "unfused_jagged_fwd_ms": 1.5, "unfused_jagged_ms": 2.5}
    out = ab.train_step_fields(rec)
    assert out["train_unfused_best"] == "jagged" and out["train_unfused_best_ms"] == 4.0
    assert out["train_saved_pct_vs_padded_unfused"] == pytest.approx(25.0)
    # no jagged attention for the other GDPA activations
    assert ab.jagged_attention("silu", off, 16, 9, 0.5)[0] is None


def test_dx_lowered_rowdot_variants_name_their_config_and_passes():
    """bench/dx_lowered.py's rowdot variants: the plan's own (None, None); a tile and schedule;
    options after `+` (epi-prefetch in the pass, terms as ROW_COEFS off) with or without a tile;
    a malformed or unknown one stops with the grammar named."""
    import importlib.util
    from pathlib import Path
    from normfuse.ops.training import ROWDOT_CONFIG
    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("dx_lowered", repo / "bench" / "dx_lowered.py")
    dx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dx)
    assert dx._rowdot_form("rowdot") == (None, None)
    cfg, passes = dx._rowdot_form("rowdot@pingpong:128x128:4")
    assert (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_stages"], cfg["ROW_COEFS"]) == (128, 128, 4,
                                                                                     True)
    assert passes == ("hopper-ws{epilogue-tma=true,schedule=pingpong}",)
    cfg, passes = dx._rowdot_form("rowdot+epi-prefetch+terms")
    assert cfg == dict(ROWDOT_CONFIG, ROW_COEFS=False)
    assert passes == ("hopper-ws{epilogue-tma=true,schedule=coop,epi-prefetch=true}",)
    cfg, passes = dx._rowdot_form("rowdot@coop:128x256:4+staging-late+epi-prefetch")
    assert cfg["num_stages"] == 4 and cfg["ROW_COEFS"]
    assert passes == ("hopper-ws{epilogue-tma=true,schedule=coop,epi-prefetch=true,"
                      "staging-late=true}",)
    for bad, said in (("rowdot+fast", "unknown option"), ("rowdot@pingpong:128", "expected"),
                      ("rowdot@warp:128x128:3", "not coop or pingpong")):
        with pytest.raises(SystemExit, match=said):
            dx._rowdot_form(bad)
