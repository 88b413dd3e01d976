"""The model benchmark (normfuse.repro.models) and the model-shape sweep (normfuse.repro.model_shapes)
on the CPU: the benchmark's code path on tiny models of each family (times meaningless), the
compile counts against torch._dynamo.explain, Liger's patches kept out of the stock model, and the
table, summary and plot helpers."""
import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

transformers = pytest.importorskip("transformers")

from normfuse.repro import model_shapes as S  # noqa: E402
from normfuse.repro import models as M  # noqa: E402
from normfuse.repro import warm, warm_child  # noqa: E402

FAMILIES = ("llama", "qwen2", "olmo2", "gpt2", "bert")


@pytest.fixture(scope="module", autouse=True)
def _keep_torch_settings():
    """The benchmark sets Dynamo's and Inductor's settings process-wide (warm.configure_torch:
    static shapes, larger caches): put them back for the tests that run after these."""
    import torch._dynamo
    import torch._inductor.config as ic
    names = ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
             "accumulated_recompile_limit", "automatic_dynamic_shapes")
    dyn = {n: getattr(torch._dynamo.config, n) for n in names if hasattr(torch._dynamo.config, n)}
    ind = {n: getattr(ic, n) for n in ("fx_graph_cache", "autotune_local_cache") if hasattr(ic, n)}
    yield
    for n, v in dyn.items():
        setattr(torch._dynamo.config, n, v)
    for n, v in ind.items():
        setattr(ic, n, v)
    torch._dynamo.reset()


def _liger_installed() -> bool:
    # (the skip marks below name it in a string: pytest evaluates that when the test runs, so only
    # the worker that runs this file imports Liger, ~3 s, not every worker collecting it)
    try:
        import liger_kernel.transformers.monkey_patch  # noqa: F401
        return True
    except ImportError:
        return False


EAGER = tuple(c.name for c in M.CONFIGS if not c.compiled)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One CPU run of the benchmark on a tiny model of each family: every configuration on the
    Llama-style model (Dynamo with the 'eager' backend: the compile path without Inductor's C++
    compilation), the eager configurations on the other three (Dynamo's tracing costs seconds a
    graph on this machine; the compile path is the same for every family)."""
    import warnings
    out = tmp_path_factory.mktemp("models")
    logs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # normfuse's FallbackWarning on the CPU
        data = M.run([M.tiny_spec("llama")], device="cpu", backend="eager", log=logs.append)
        rest = M.run([M.tiny_spec(f) for f in FAMILIES[1:]], configs=EAGER, device="cpu",
                     backend="eager", log=logs.append)
    data["records"] += rest["records"]
    data["models"] += rest["models"]
    data["summary"] = M.summarize(data["records"])
    paths = M.write(data, str(out), log=logs.append)
    return data, paths, logs


def _configs(fam):
    return M.CONFIG_NAMES if fam == "llama" else EAGER


def test_cpu_run_records_every_configuration(cpu_run):
    data, _, _ = cpu_run
    recs = data["records"]
    have_opt = M.optimize_fn()[0] is not None
    for fam in FAMILIES:
        name = f"{fam}-tiny"
        for cfg in _configs(fam):
            c = M._config(cfg)
            for mode in ("prefill", "train"):
                r = [r for r in recs if (r["model"], r["config"], r["mode"]) == (name, cfg, mode)]
                if mode not in c.modes:  # (the CUDA-graph configurations: prefill only)
                    assert not r, (name, cfg, mode)
                    continue
                assert len(r) == 1, (name, cfg, mode)
                r = r[0]
                if c.liger:
                    # Liger is Triton-only: never run on the CPU; n/a where it has no family patch
                    if fam in ("gpt2", "bert"):
                        assert r["status"] == "n/a" and f"apply_liger_kernel_to_{fam}" in r["reason"] \
                            or "not installed" in r["reason"]
                    else:
                        assert r["status"] in ("skipped", "n/a") and r["reason"]
                        if _liger_installed():
                            assert "CUDA GPU" in r["reason"]
                    continue
                if c.graph:  # CUDA graphs: a GPU only
                    assert r["status"] == "skipped" and "CUDA graphs" in r["reason"], r
                    continue
                if c.normfuse and not have_opt:
                    assert r["status"] == "skipped" and "normfuse.optimize" in r["reason"]
                    continue
                assert r["status"] == "ok", r
                assert math.isfinite(r["ms"]) and r["ms"] > 0
                # bf16 against the fp32 copy: small but not zero, and near stock's
                assert 0 < r["err"] < 0.05 and math.isfinite(r["err_ratio"])
                assert r["ratio"] > 0
                if mode == "train":
                    assert set(r["grad_errs"]) == set(M.tiny_spec(fam).grad_params)
                    assert all(0 < e < 0.1 for e in r["grad_errs"].values())
                if c.compiled:
                    assert r["graphs"] >= 1 and r["graph_breaks"] >= 0 and r["recompiles"] == 0
                else:
                    assert "graphs" not in r
        stock = [r for r in recs if r["model"] == name and r["config"] == "stock"]
        assert all(r["err_ratio"] == 1.0 for r in stock)
    # the compiled stock model computes the same function (Dynamo 'eager' runs the same ops)
    a, b = (next(r for r in recs if (r["model"], r["config"], r["mode"]) ==
                 ("llama-tiny", c, "prefill")) for c in ("stock", "stock+compile"))
    assert a["err"] == pytest.approx(b["err"], rel=1e-6)


def test_cpu_run_writes_json_md_png(cpu_run):
    data, paths, logs = cpu_run
    with open(paths["json"]) as f:
        back = json.load(f)
    assert back["device"] == "cpu" and back["gpu"] is None and "not speeds" in back["note"]
    assert back["torch"] and back["transformers"] == transformers.__version__
    modes = {c: len(M._config(c).modes) for c in M.CONFIG_NAMES}  # (graphs: prefill only)
    assert len(back["records"]) == sum(modes.values()) + (len(FAMILIES) - 1) * sum(
        modes[c] for c in EAGER)
    assert [m["model"] for m in back["models"]] == [f"{f}-tiny" for f in FAMILIES]
    md = Path(paths["md"]).read_text()
    for fam in FAMILIES:
        assert f"## {fam}-tiny ({fam}, 32 tokens = 2 x 16" in md
    for cfg in M.CONFIG_NAMES:
        rows = [ln for ln in md.splitlines() if ln.startswith(f"| {cfg} |")]
        assert len(rows) == (len(FAMILIES) if cfg in EAGER else 1), cfg
    assert "## Goals" in md and "| llama-tiny | train | " in md
    try:
        import matplotlib  # noqa: F401
        assert Path(paths["png"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        assert "png" not in paths
    if M.optimize_fn()[0] is not None:  # the optimize report per model and configuration
        for m in back["models"]:
            rep = m["configs"]["normfuse"]["optimize"]
            assert set(rep) == {"matches", "refusals", "text"} and rep["matches"]


def test_compile_counter_matches_explain():
    """The graph and graph-break counts the benchmark records are what torch._dynamo.explain
    reports; a new input shape after the mark counts as a recompile."""
    import torch
    import torch._dynamo

    def f(x):
        y = torch.sin(x) * 2
        torch._dynamo.graph_break()
        return torch.cos(y) + 1

    torch._dynamo.reset()
    ex = torch._dynamo.explain(f)(torch.randn(8))
    torch._dynamo.reset()
    warm.configure_torch()
    c = M.CompileCounter("eager")
    g = torch.compile(f, backend=c)
    c.mark()
    g(torch.randn(8))
    first = c.since_mark()
    assert (first["graphs"], first["graph_breaks"]) == (ex.graph_count, ex.graph_break_count) == (2, 1)
    assert len(first["break_reasons"]) == 1
    c.mark()
    g(torch.randn(8))
    assert c.since_mark()["graphs"] == 0
    g(torch.randn(9))  # static shapes: both graphs again
    assert c.since_mark()["graphs"] == 2
    torch._dynamo.reset()


@pytest.mark.skipif("not _liger_installed()", reason="liger-kernel is not installed")
def test_liger_scope_keeps_patches_out_of_the_stock_model():
    from transformers.models.llama import modeling_llama as ml
    spec = M.tiny_spec("llama")
    rope, mlp_cls, norm_cls = ml.apply_rotary_pos_emb, ml.LlamaMLP, ml.LlamaRMSNorm
    with M.liger_scope("llama"):
        model = spec.build("cpu")
        applied = M.apply_liger(model, "llama", "no-norm")
        assert applied["rms_norm"] is False and applied["fused_linear_cross_entropy"] is False
        assert ml.apply_rotary_pos_emb is not rope and ml.LlamaMLP is not mlp_cls
        # RMSNorm off: the norms stay transformers' (normfuse takes them)
        assert ml.LlamaRMSNorm is norm_cls
        assert "forward" in vars(model.layers[0].mlp)  # Liger's SwiGLU bound on the instance
        assert "forward" not in vars(model.layers[0].input_layernorm)
    assert ml.apply_rotary_pos_emb is rope and ml.LlamaMLP is mlp_cls
    stock = spec.build("cpu")
    assert "forward" not in vars(stock.layers[0].mlp) and type(stock.layers[0].mlp) is mlp_cls
    with M.liger_scope("llama"):
        M.apply_liger(spec.build("cpu"), "llama", "full")
        assert ml.LlamaRMSNorm is not norm_cls
    assert ml.LlamaRMSNorm is norm_cls and ml.apply_rotary_pos_emb is rope


def test_liger_support_names_the_missing_family():
    if not _liger_installed():
        assert "not installed" in M.liger_support("llama")[1]
        return
    assert M.liger_support("llama")[0] is not None and M.liger_support("qwen2")[0] is not None
    fn, why = M.liger_support("gpt2")
    assert fn is None and "apply_liger_kernel_to_gpt2" in why
    with pytest.raises(M.Skip) as e:
        M.apply_liger(None, "bert", "full")
    assert e.value.status == "n/a"


def _rec(model, config, mode, ms, err, **kw):
    return {"model": model, "config": config, "mode": mode, "status": "ok", "ms": ms, "err": err,
            "compiled": "compile" in config, **kw}


def test_ratios_summary_and_table():
    recs = [
        _rec("m", "stock", "prefill", 10.0, 1e-3),
        _rec("m", "stock+compile", "prefill", 8.0, 1e-3, graphs=1, graph_breaks=0, recompiles=0),
        _rec("m", "normfuse", "prefill", 7.0, 1.05e-3),
        _rec("m", "normfuse+compile", "prefill", 6.0, 1.2e-3, graphs=2, graph_breaks=1,
             recompiles=0),
        _rec("m", "stock", "train", 20.0, 1e-3, grad_errs={"a": 2e-3, "b": 1e-3}),
        _rec("m", "normfuse", "train", 25.0, 1e-3, grad_errs={"a": 2e-3, "b": 1.5e-3}),
        {"model": "m", "config": "liger", "mode": "prefill", "status": "n/a",
         "reason": "liger-kernel 0.8.5 has no apply_liger_kernel_to_m", "compiled": False},
    ]
    M._ratios(recs)
    by = {(r["config"], r["mode"]): r for r in recs}
    assert by[("normfuse", "prefill")]["ratio"] == pytest.approx(7 / 8)
    assert by[("stock", "prefill")]["ratio"] == pytest.approx(10 / 8)
    assert by[("normfuse+compile", "prefill")]["err_ratio"] == pytest.approx(1.2)
    # train: the largest of the hidden state's and the gradients' ratios
    assert by[("normfuse", "train")]["err_ratio"] == pytest.approx(1.5)
    summ = {s["mode"]: s for s in M.summarize(recs)}
    p, t = summ["prefill"], summ["train"]
    assert (p["best_stock"], p["best_normfuse"]) == ("stock+compile", "normfuse+compile")
    assert p["speedup"] == pytest.approx(8 / 6) and p["faster"] is True
    assert p["numerics_ok"] is False and p["worst_err_ratio"] == pytest.approx(1.2)
    assert p["compile_clean"] is False  # one graph break
    assert t["faster"] is False and "compile_clean" not in t
    md = M.table({"records": recs, "configs": list(M.CONFIG_NAMES)})
    assert "| normfuse+compile | 6.000 | 0.750 | 1.20e-03 (1.20) |" in md
    assert "n/a: liger-kernel 0.8.5 has no apply_liger_kernel_to_m" in md
    assert "| m | prefill | stock+compile | 8.000 | normfuse+compile | 6.000 | 1.333 | yes | " \
           "1.20 (NO) | NO | - | - | - |" in md
    # Liger's best beside normfuse's, on the same timing basis only
    recs += [_rec("m", "liger", "prefill", 6.6, 1e-3),
             _rec("m", "liger+compile", "prefill", 5.0, 1e-3, graphs=5, graph_breaks=4,
                  recompiles=0)]
    recs[-1]["timed"] = "alone"  # do_bench, not interleaved: not compared
    M._ratios(recs)
    p = M.summarize(recs)[0]
    assert (p["best_liger"], p["vs_liger"]) == ("liger", pytest.approx(6.6 / 6.0))
    md = M.table({"records": recs, "configs": list(M.CONFIG_NAMES)})
    assert "| NO | liger | 6.600 | 1.100 |" in md and "timed alone" in md


def test_cuda_graph_configurations_compete_on_both_sides():
    """stock+graph counts as a stock configuration and normfuse+graph as a normfuse one (the
    prefill of a host-bound model: both sides replay a CUDA graph); no train records."""
    recs = [_rec("m", "stock", "prefill", 4.0, 1e-3), _rec("m", "stock+graph", "prefill", 2.0, 1e-3),
            _rec("m", "normfuse", "prefill", 4.1, 1e-3),
            _rec("m", "normfuse+graph", "prefill", 1.8, 1e-3),
            _rec("m", "liger+graph", "prefill", 1.9, 1e-3)]
    M._ratios(recs)
    p = M.summarize(recs)[0]
    assert (p["best_stock"], p["best_normfuse"], p["best_liger"]) == (
        "stock+graph", "normfuse+graph", "liger+graph")
    assert p["speedup"] == pytest.approx(2.0 / 1.8) and p["vs_liger"] == pytest.approx(1.9 / 1.8)
    assert all(M._config(c).modes == ("prefill",) and M._config(c).graph
               for c in M.CONFIG_NAMES if c.endswith("+graph"))
    assert {"stock+graph", "normfuse+graph"} <= set(M.CONFIG_NAMES)
    assert not any(j[0].split()[2].endswith("+graph") for j in M.warm_jobs(["llama-small"]))


def test_breaks_are_counted_beyond_ligers_own():
    """normfuse+liger+compile breaks Dynamo's graph where liger+compile does (Liger's kernels):
    the goal counts only the breaks normfuse adds."""
    def recs(nf_breaks):
        out = [_rec("m", "stock+compile", "prefill", 8.0, 1e-3, graphs=1, graph_breaks=0,
                    recompiles=0),
               _rec("m", "liger+compile", "prefill", 7.0, 1e-3, graphs=5, graph_breaks=4,
                    recompiles=0),
               _rec("m", "normfuse+compile", "prefill", 6.5, 1e-3, graphs=1, graph_breaks=0,
                    recompiles=0),
               _rec("m", "normfuse+liger+compile", "prefill", 6.0, 1e-3, graphs=5,
                    graph_breaks=nf_breaks, recompiles=0)]
        M._ratios(out)
        return M.summarize(out)[0]
    assert recs(4)["compile_clean"] is True
    assert recs(5)["compile_clean"] is False


def test_plot_draws_speedups(tmp_path):
    pytest.importorskip("matplotlib")
    recs = [_rec("a", "stock", "prefill", 2.0, 1e-3), _rec("a", "normfuse", "prefill", 1.0, 1e-3),
            _rec("b", "stock", "train", 3.0, 1e-3)]
    M._ratios(recs)
    assert M.plot({"records": recs, "configs": list(M.CONFIG_NAMES)}, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert not M.plot({"records": [], "configs": []}, str(tmp_path / "q.png"))


def test_specs_are_the_issues_models():
    ll, qw, gp, be = (M.SPECS[m] for m in M.MAIN_MODELS)
    assert (ll.dims["hidden_size"], ll.dims["intermediate_size"], ll.dims["num_attention_heads"],
            ll.dims["num_key_value_heads"]) == (2048, 5632, 16, 4)
    assert (qw.dims["hidden_size"], qw.dims["intermediate_size"], qw.dims["num_key_value_heads"]) \
        == (1536, 8960, 2)
    assert all(s.tokens == 8192 for s in (ll, qw, gp, be))
    cfg = gp.config()
    assert cfg.n_layer == 4 and cfg._attn_implementation == "sdpa" and cfg.resid_pdrop == 0
    assert be.config().num_hidden_layers == 4 and ll.config().use_cache is False


def test_models_warm_jobs_are_valid_children(monkeypatch):
    jobs = M.warm_jobs(M.MAIN_MODELS)
    seen = []
    monkeypatch.setattr(warm_child, "_child", lambda *a: seen.append(a))
    for label, argv in jobs:
        assert argv[:3] == [sys.executable, "-m", "normfuse.repro.warm_child"]
        assert warm_child.main(argv[3:]) == 0
    cells = [s[1].split(",") for s in seen]
    assert all(s[0] == "models" for s in seen)
    assert all(m in M.SPECS and c in M.CONFIG_NAMES and mode in ("prefill", "train", "both")
               for m, c, mode in cells)
    # one child per mode of each compiled configuration, none for stock eager
    assert ["llama", "stock+compile", "train"] in cells and ["bert", "stock+compile", "prefill"] in cells
    assert not any(c == "stock" for _, c, _ in cells)
    assert not any(m in ("gpt2", "bert") and "liger" in c for m, c, _ in cells)


# ---------------------------------------------------------------------------------------------
# The model-shape sweep
# ---------------------------------------------------------------------------------------------

def test_sweep_shapes_come_from_the_models():
    sh = {(s.model, s.site): s for s in S.shapes()}
    assert (sh["llama", "qkv"].K, sh["llama", "qkv"].N) == (2048, (16 + 2 * 4) * 128)
    assert (sh["llama", "gate/up"].N, sh["llama", "gate"].N) == (11264, 5632)
    q = sh["qwen2", "qkv"]
    assert (q.K, q.N, q.bias) == (1536, (12 + 2 * 2) * 128, True)
    assert sh["qwen2", "gate/up"].N == 17920 and sh["qwen2", "gate"].N == 8960
    # the siblings alone (normfuse + Liger runs them so)
    assert (sh["llama", "q"].N, sh["llama", "k/v"].N) == (2048, 512)
    assert (sh["qwen2", "q"].N, sh["qwen2", "k/v"].N, sh["qwen2", "k/v"].bias) == (1536, 256, True)
    assert (sh["gpt2", "c_attn"].kind, sh["gpt2", "c_attn"].N, sh["gpt2", "c_fc"].N) == ("ln", 3840, 5120)
    post = [s for s in S.shapes() if s.form == "post" and s.model == "bert"]
    assert {(s.K, s.N) for s in post} == {(1024, 1024), (4096, 1024)}
    assert all(s.residual and s.bias and s.kind == "ln" for s in post)
    wide = [s for s in S.shapes() if s.form == "post" and s.model == "extra"]  # issue 20's cells
    assert {(s.kind, s.K, s.N) for s in wide} == {(k, n, n) for k in ("rms", "ln")
                                                  for n in (4096, 8192)}
    ns = {s.N for s in S.shapes()}
    assert {2560, 5632, 6144, 8960, 11008} <= ns  # the issue's N that are not powers of two


def test_sweep_options_are_valid_pipelines():
    from normfuse.pipeline import parse_pipeline
    for form in ("pre", "post"):
        opts = S.options_for(form)
        assert opts[0].name == "default" and len({o.name for o in opts}) == len(opts)
        for o in opts:
            passes, kw = S._passes(o, form)
            if passes != "default":
                ps = parse_pipeline(passes)
                assert ps, o
            o.make_config(form)
    hw = [p for o in S.PRE_OPTIONS[1:] for p in parse_pipeline(S._passes(o, "pre")[0])
          if p.name == "hopper-ws"]
    assert {p.schedule for p in hw} == {"coop", "coop2", "pingpong"}
    assert any(p.stats_share for p in hw)
    post = [p for o in S.POST_OPTIONS[1:] for p in parse_pipeline(S._passes(o, "post")[0])
            if p.name == "hopper-ws"]
    assert {p.schedule for p in post} == {"coop", "pingpong"} and all(p.post_norm for p in post)
    assert any(int(p.stages) == 4 for p in hw)


def test_sweep_best_option_and_table():
    rec = {"model": "llama", "site": "qkv", "form": "pre", "kind": "rms", "K": 2048, "N": 3072,
           "bias": False, "residual": False, "T": 8192, "cublas_ms": 1.0, "norm_ms": 0.2,
           "unfused_ms": 1.2, "naive_err": 2e-3, "options": [
               {"option": "default", "ok": True, "ms": 1.05, "over_cublas": 1.05},
               {"option": "128x128 pingpong", "ok": True, "ms": 1.02, "over_cublas": 1.02},
               {"option": "128x256 coop stats-share", "ok": False, "written": False,
                "err": float("nan"), "vs_naive": float("nan")}]}
    b = S.best_option(rec)
    assert b["option"] == "128x128 pingpong"
    rec.update(best=b["option"], best_ms=b["ms"], best_over_cublas=b["over_cublas"])
    md = S.table([rec])
    assert "| llama qkv | rms | 8192 | 2048 | 3072 | 1.000 | 0.200 | 1.200 | 1.050 | 1.020 | x | " \
           "128x128 pingpong | 1.020 | yes |" in md
    assert "llama qkv T 8192: 128x256 coop stats-share: written False" in md
    assert S.best_option({"options": [{"option": "a", "ok": False}]}) is None
    rec2 = dict(rec, T=4096, options=[
        {"option": "default", "ok": True, "ms": 0.99, "over_cublas": 0.99},
        {"option": "128x128 pingpong", "ok": True, "ms": 1.04, "over_cublas": 1.04}])
    rec2.update(best="default")
    summ = {o["option"]: o for o in S.option_summary([rec, rec2])}
    d, pp = summ["default"], summ["128x128 pingpong"]
    assert (d["cells"], d["passed"], d["best_in"], d["within_goal"]) == (2, 2, 1, 1)
    assert d["geomean_over_cublas"] == pytest.approx((1.05 * 0.99) ** 0.5)
    assert (pp["best_in"], pp["within_goal"]) == (1, 1)
    assert summ["128x256 coop stats-share"]["passed"] == 0
    assert "| pre | 128x128 pingpong | 2 / 2 | 1.030 | 1 | 1 |" in S.table([rec, rec2])


def test_sweep_warm_jobs_are_valid_children(monkeypatch):
    jobs = S.warm_jobs()
    seen = []
    monkeypatch.setattr(warm_child, "_child", lambda *a: seen.append(a))
    for label, argv in jobs:
        assert warm_child.main(argv[3:]) == 0
    idx = sorted(int(s[1]) for s in seen)
    assert idx == list(range(len(S.PRE_OPTIONS) + len(S.POST_OPTIONS) + len(S.T_VALUES)))


def test_sweep_times_round_robin():
    """cuBLAS and the options are timed in rounds, each round every one of them in turn (drift
    lands on all of them alike), each keeping its rounds."""
    calls = []

    def bench(fn):
        calls.append(fn())
        return float(len(calls))
    got = S.time_round_robin({"cuBLAS": lambda: "c", "a": lambda: "a", "b": lambda: "b"},
                             rounds=3, bench=bench)
    assert calls == ["c", "a", "b"] * 3
    assert got == {"cuBLAS": [1.0, 4.0, 7.0], "a": [2.0, 5.0, 8.0], "b": [3.0, 6.0, 9.0]}
    with pytest.raises(SystemExit):
        S.main(["--out", "x", "--rounds", "0"])


def test_sweep_post_grid_and_option_filter(monkeypatch):
    """--shapes post-grid / --options reach shapes(), the cells' options and the warm-up
    children through the environment; only the T asked for get a norms child; an unknown option
    name is refused by name."""
    monkeypatch.setenv(S.SHAPES_ENV, "post-grid")
    monkeypatch.setenv(S.OPTIONS_ENV, "lowered coop,lowered pingpong 128x128")
    grid = S.shapes()
    assert len(grid) == len(S.POST_GRID_K) * len(S.POST_GRID_N)
    assert all(s.form == "post" and s.kind == "ln" and s.bias and s.residual for s in grid)
    assert {(s.K, s.N) for s in grid} == {(k, n) for k in S.POST_GRID_K for n in S.POST_GRID_N}
    kept = [o.name for o in S.POST_OPTIONS if S.selected(o)]
    assert kept == ["lowered coop", "lowered pingpong 128x128"]
    jobs = S.warm_jobs(Ts=(8192,), form="post")
    n = len(S.PRE_OPTIONS) + len(S.POST_OPTIONS)
    want = [n - len(S.POST_OPTIONS) + i for i, o in enumerate(S.POST_OPTIONS) if S.selected(o)]
    assert [int(argv[-1]) for _, argv in jobs] == want + [n + S.T_VALUES.index(8192)]
    monkeypatch.setenv(S.SHAPES_ENV, "bert-blocks")
    assert {(s.K, s.N) for s in S.shapes()} == {(1024, 1024), (1024, 4096), (4096, 1024),
                                                 (4096, 4096)}
    monkeypatch.delenv(S.SHAPES_ENV)
    assert S.shapes()[0].model != "grid"
    with pytest.raises(SystemExit):
        S.main(["--out", "x", "--options", "lowered coop,no such option"])


def test_repro_model_flags_without_a_gpu(capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the flags would run the benchmarks")
    from normfuse.repro.__main__ import main
    assert main(["--models"]) == 0 and main(["--model-shapes"]) == 0
    assert main(["--models", "llama", "--train-plan", "fused"]) == 0
    out = capsys.readouterr().out
    assert out.count("model benchmarks skipped: no CUDA GPU") == 3


def test_each_configurations(tmp_path, monkeypatch):
    """`--each` adds the Liger-composed prefill with optimize(split_siblings=False), plain and
    captured (against the default split form); they count as normfuse configurations and build
    with the option; the default configurations pass none (optimize's default)."""
    seen = {}
    monkeypatch.setattr(M, "bench", lambda models, out, **kw: seen.update(kw) or 0)
    assert M.main(["--models", "llama", "--out", str(tmp_path), "--each"]) == 0
    names = [c.name for c in M.EACH_CONFIGS]
    assert seen["configs"][-2:] == names == ["normfuse+liger:each", "normfuse+liger:each+graph"]
    for n in names:
        c = M._config(n)
        assert c.split is False and c.liger == "no-norm" and c.modes == ("prefill",)
        assert n in M.NORMFUSE
    calls = []

    def opt(model, **kw):
        calls.append(kw)
        return model, None
    monkeypatch.setattr(M, "optimize_fn", lambda: (opt, None))
    import torch
    monkeypatch.setattr(M, "fresh", lambda *a: torch.nn.Linear(2, 2))
    monkeypatch.setattr(M, "apply_liger", lambda *a: {})
    monkeypatch.setattr(M, "report_dict", lambda rep: {})
    M.build_configuration(M.SPECS["llama"], M._config(names[0]), {}, "cuda", None, {})
    M.build_configuration(M.SPECS["llama"], M._config("normfuse+liger"), {}, "cuda", None, {})
    assert calls[0]["split_siblings"] is False and "split_siblings" not in calls[1]


def test_fused_train_plan_configurations(tmp_path, monkeypatch):
    """`--train-plan fused` adds normfuse:fused-train(+compile): optimize(train="fused"),
    measured in the train step only (inference does not depend on the plan), warmed in that
    mode only; every normfuse record, the table's notes and the optimize reports say the plan
    (the default configurations: composed)."""
    assert M.configs_for("composed") == M.CONFIG_NAMES
    fused = M.configs_for("fused")
    assert fused == M.CONFIG_NAMES + ("normfuse:fused-train", "normfuse:fused-train+compile")
    with pytest.raises(ValueError, match="unknown training plan"):
        M.configs_for("unfused")
    seen = {}
    monkeypatch.setattr(M, "bench", lambda models, out, **kw: seen.update(kw, models=models) or 0)
    assert M.main(["--models", "llama", "--out", str(tmp_path), "--train-plan", "fused"]) == 0
    assert seen["train_plan"] == "fused" and seen["models"] == ["llama"]
    cells = [label.split()[1:] for label, _ in M.warm_jobs(["llama"], fused)]
    assert ["llama", "normfuse:fused-train+compile", "train"] in cells
    assert ["llama", "normfuse:fused-train", "both"] in cells
    assert ["llama", "normfuse:fused-train+compile", "prefill"] not in cells
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # normfuse's FallbackWarning on the CPU
        data = M.run([M.tiny_spec("llama")], configs=("stock", "normfuse", "normfuse:fused-train"),
                     device="cpu", backend="eager", log=lambda *_: None)
    recs = {(r["config"], r["mode"]): r for r in data["records"]}
    assert set(recs) == {("stock", "prefill"), ("stock", "train"), ("normfuse", "prefill"),
                         ("normfuse", "train"), ("normfuse:fused-train", "train")}
    r = recs[("normfuse:fused-train", "train")]
    assert r["status"] == "ok" and r["train_plan"] == "fused" and math.isfinite(r["err_ratio"])
    assert all(recs[("normfuse", m)]["train_plan"] == "composed" for m in ("prefill", "train"))
    assert "train_plan" not in recs[("stock", "train")]
    infos = data["models"][0]["configs"]
    assert infos["normfuse:fused-train"]["train_plan"] == "fused"
    assert "training plan 'fused'" in infos["normfuse:fused-train"]["optimize"]["text"]
    assert "training plan 'composed'" in infos["normfuse"]["optimize"]["text"]
    assert all(m["train"].startswith("fused: one rmsnorm_linear training op over its")
               for m in infos["normfuse:fused-train"]["optimize"]["matches"])
    md = M.table(data)
    row = next(ln for ln in md.splitlines() if ln.startswith("| normfuse:fused-train |"))
    assert row.startswith("| normfuse:fused-train |  |  |  | ") and "train plan: fused" in row
    assert "train plan: composed" in next(ln for ln in md.splitlines()
                                           if ln.startswith("| normfuse |"))
    summ = {s["mode"]: s for s in data["summary"]}
    assert summ["train"]["best_normfuse"] in ("normfuse", "normfuse:fused-train")


def test_warm_child_runs_a_configuration_once(monkeypatch):
    """The warm-up child's path (warm_one -> measure(warm=True)): builds, compiles and calls the
    model twice per mode, measures nothing."""
    import torch._dynamo
    spec = M.tiny_spec("llama")
    monkeypatch.setitem(M.SPECS, spec.name, spec)
    calls = []
    real = M._forward
    monkeypatch.setattr(M, "_forward", lambda f, ids: calls.append(1) or real(f, ids))
    monkeypatch.setattr(M, "_time", lambda *a: pytest.fail("the warm-up times nothing"))
    M.warm_one(spec.name, "stock+compile", "prefill", device="cpu", backend="eager")
    assert len(calls) == 2
    calls.clear()
    M.warm_one(spec.name, "liger", "both", device="cpu", backend="eager")  # skipped on a CPU
    assert calls == []
    torch._dynamo.reset()


def test_sweep_post_table_has_the_compiled_block():
    """Post-norm rows carry torch.compile's whole block (issue 20's BERT baseline) as a ratio to
    cuBLAS; pre-norm rows have no such column."""
    rec = {"model": "bert", "site": "output", "form": "post", "kind": "ln", "K": 4096, "N": 1024,
           "bias": True, "residual": True, "T": 8192, "cublas_ms": 0.1, "norm_ms": 0.04,
           "unfused_ms": 0.14, "block_compiled_ms": 0.125, "naive_err": 2e-3, "options": [
               {"option": "default", "ok": True, "ms": 0.117, "over_cublas": 1.17}],
           "best": "default", "best_ms": 0.117, "best_over_cublas": 1.17}
    md = S.table([rec])
    assert "compiled block / cuBLAS" in md
    assert "| bert output | ln +bias +res | 8192 | 4096 | 1024 | 0.100 | 0.040 | 1.400 | 1.250 | " \
           "1.170 | default | 1.170 | NO |" in md


def test_eager_configurations_are_timed_interleaved(monkeypatch):
    """run_model(interleave=True): every configuration is built (compiled) and checked first,
    then all are timed call by call in turn; every record gets the median and quartiles of its
    calls and keeps no call, scope or counter (the records go to JSON); the compiled one counts
    no recompile over the interleaved calls."""
    import warnings
    monkeypatch.setattr(M, "INTERLEAVED_CALLS", {"prefill": 5, "train": 3})
    logs = []
    order = []
    real = M._forward
    monkeypatch.setattr(M, "_forward", lambda f, ids: (order.append(id(f)), real(f, ids))[1])
    configs = ("stock", "normfuse", "normfuse+compile")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs, _ = M.run_model(M.tiny_spec("llama"), configs=configs, device="cpu",
                              backend="eager", modes=("prefill",), log=logs.append,
                              interleave=True)
    ok = [r for r in recs if r["status"] == "ok"]
    assert {r["config"] for r in ok} == set(configs)
    for r in ok:
        c = r["calls_ms"]
        assert c["n"] == 5 and c["q1"] <= c["median"] <= c["q3"]
        assert abs(r["ms"] - c["median"]) < 1e-3
        assert "_call" not in r and "_scope" not in r and "_counter" not in r
    comp = next(r for r in ok if r["compiled"])
    assert comp["graphs"] == 1 and comp["graph_breaks"] == 0 and comp["recompiles"] == 0
    json.dumps(recs)
    # the last 15 forwards go round the three models (the compiled one kept compiled)
    tail = order[-15:]
    assert len(set(tail)) == 3 and all(a != b for a, b in zip(tail, tail[1:]))
    # each round in its own order: not always the same neighbours
    assert len({tuple(tail[j:j + 3]) for j in range(0, 15, 3)}) > 1
    # the timing runs after every configuration was built: its lines come last
    timed = [i for i, line in enumerate(logs) if "interleaved calls" in line]
    built = [i for i, line in enumerate(logs) if "(timed interleaved)" in line]
    assert timed and built and min(timed) > max(built)


@pytest.mark.skipif("not _liger_installed()", reason="liger-kernel is not installed")
def test_liger_patches_are_reapplied_for_a_deferred_call():
    """A Liger model timed after its build scope closed runs with Liger's globals back in force,
    and the module is restored after the call."""
    from transformers.models.llama import modeling_llama as ml
    rope = ml.apply_rotary_pos_emb
    with M.liger_scope("llama") as patches:
        M.apply_liger(M.tiny_spec("llama").build("cpu"), "llama", "no-norm")
        taken = patches.taken()
        liger_rope = ml.apply_rotary_pos_emb
    assert "apply_rotary_pos_emb" in taken and ml.apply_rotary_pos_emb is rope
    with patches.reapplied(taken):
        assert ml.apply_rotary_pos_emb is liger_rope
    assert ml.apply_rotary_pos_emb is rope


def test_a_failing_interleaved_call_is_a_record_and_the_others_go_on(monkeypatch):
    """time_interleaved: a configuration whose call raises (on the H200 an interleaved
    liger+compile call once lost its compiled function) becomes an error record with the call
    it failed in; the others are still timed to the end."""
    import contextlib
    monkeypatch.setattr(M, "INTERLEAVED_CALLS", {"prefill": 4, "train": 2})
    calls = {"a": 0, "b": 0}

    def good():
        calls["a"] += 1

    def bad():
        calls["b"] += 1
        if calls["b"] == 2:
            raise NameError("name '__compiled_fn_23' is not defined")

    recs = [{"model": "m", "config": c, "mode": "prefill", "status": "ok", "_call": f,
             "_scope": contextlib.nullcontext} for c, f in (("a", good), ("b", bad))]
    logs = []
    M.time_interleaved(recs, "cpu", logs.append)
    a, b = recs
    assert a["status"] == "ok" and a["calls_ms"]["n"] == 4 and calls["a"] == 4
    assert 0 <= a["host_ms"] <= a["ms"]  # (each call's host time ends before its sync)
    assert f"{a['ms']:.3f} (host {a['host_ms']:.3f})" in M.table({"records": [a],
                                                                   "configs": ["a"]})
    assert b["status"] == "error" and "interleaved call 1: NameError" in b["reason"]
    assert calls["b"] == 2 and "ms" not in b
    assert not any(k in r for r in recs for k in ("_call", "_scope", "_counter"))
    assert any("ERROR in interleaved call 1" in line for line in logs)
    json.dumps(recs)


def test_a_burst_turn_runs_its_calls_back_to_back(monkeypatch):
    """BURST = 3: each configuration's turn runs three calls between two syncs (none of the
    other configuration in between) and records the mean per call (a fake clock: each call of
    'a' takes 1 s, of 'b' 2 s); `--burst 0` is refused."""
    import contextlib
    import types
    monkeypatch.setattr(M, "INTERLEAVED_CALLS", {"prefill": 4, "train": 2})
    monkeypatch.setattr(M, "BURST", 3)
    clock, order = [0.0], []
    monkeypatch.setattr(M, "time", types.SimpleNamespace(perf_counter=lambda: clock[0],
                                                         time=lambda: clock[0]))

    def make(name, seconds):
        def call():
            order.append(name)
            clock[0] += seconds
        return call
    recs = [{"model": "m", "config": c, "mode": "prefill", "status": "ok", "_call": make(c, s),
             "_scope": contextlib.nullcontext} for c, s in (("a", 1.0), ("b", 2.0))]
    M.time_interleaved(recs, "cpu", lambda *_: None)
    assert len(order) == 24 and all(len(set(order[i:i + 3])) == 1 for i in range(0, 24, 3))
    a, b = recs
    assert a["calls_ms"]["n"] == 4 and b["calls_ms"]["n"] == 4
    assert (a["ms"], a["host_ms"], b["ms"], b["host_ms"]) == (1000.0, 1000.0, 2000.0, 2000.0)
    with pytest.raises(SystemExit):
        M.main(["--out", "x", "--burst", "0"])


def test_interleaved_calls_run_without_the_garbage_collector(monkeypatch):
    """time_interleaved collects garbage between its rounds and keeps the collector off in the
    timed calls (a collection lands in a random configuration's call); it is on again after,
    also when a call raised."""
    import contextlib
    import gc
    monkeypatch.setattr(M, "INTERLEAVED_CALLS", {"prefill": 3, "train": 1})
    seen = []

    def call():
        seen.append(gc.isenabled() or not gc.get_freeze_count())

    def bad():
        raise RuntimeError("boom")
    recs = [{"model": "m", "config": c, "mode": "prefill", "status": "ok", "_call": f,
             "_scope": contextlib.nullcontext} for c, f in (("a", call), ("b", bad))]
    assert gc.isenabled()
    M.time_interleaved(recs, "cpu", lambda *_: None)
    # (the heap as it was before the rounds frozen: each round's collection is cheap)
    assert seen == [False] * 3 and gc.isenabled() and gc.get_freeze_count() == 0
    assert recs[1]["status"] == "error"
    monkeypatch.setattr(M, "GC_OFF_IN_CALLS", False)
    seen.clear()
    recs[0].update(_call=call, _scope=contextlib.nullcontext)
    M.time_interleaved(recs[:1], "cpu", lambda *_: None)
    assert seen == [True] * 3

def _prof_event(name, start, end, dev=False, cid=0, note=False, own=0.0):
    """A stand-in for a torch.profiler FunctionEvent, as profile_models reads one: a device
    (kernel) or host event, with a correlation id, a user-annotation flag and own host time."""
    from types import SimpleNamespace as NS

    from torch.autograd import DeviceType
    return NS(name=name, time_range=NS(start=start, end=end), is_user_annotation=note,
              device_type=DeviceType.CUDA if dev else DeviceType.CPU, id=cid,
              self_cpu_time_total=own)


def test_profile_timeline_splits_a_call_into_lead_busy_and_gaps():
    """profile_models' timeline: per synchronized call, the time from the call's start on the
    host to its first kernel, the kernels' union (overlaps counted once) and the gaps between
    them, named by the kernel that ended them."""
    from normfuse.repro import profile_models as P
    ev = _prof_event
    events = [
        # the GPU-side copies of user annotations span the kernels: not kernels, not marks
        ev(P.TIMELINE_MARK, 1, 50, True, note=True),
        ev("Torch-Compiled Region", 2, 50, True, note=True),
        ev(P.TIMELINE_MARK, 0, 40, False), ev("a", 10, 20, True), ev("b", 15, 25, True),
        ev("c", 35, 45, True), ev("d", 45.5, 50, True),
        ev(P.TIMELINE_MARK, 100, 130, False), ev("a", 104, 114, True), ev("c", 120, 130, True),
    ]
    t = P.timeline_gaps(events)
    first, second = t["calls"]
    assert first == {"span_us": 50, "lead_us": 10, "busy_us": 29.5, "idle_us": 10.5,
                     "host_us": 40}
    assert second == {"span_us": 30, "lead_us": 4, "busy_us": 20, "idle_us": 6, "host_us": 30}
    # the 0.5 us gap before d is idle time but below the listing's threshold
    assert t["largest"] == [{"before": "c", "us": 10}]
    assert P.timeline_gaps([ev("a", 0, 1, True)]) == {}


def test_profile_timeline_says_whether_the_host_or_the_launch_held_a_gap():
    """A gap's kernel linked to its launch call (the same correlation id): when the call began
    after the device went idle, how long it ran and when the kernel started after it; the first
    launch's time from the call's start. Ids shared with other host events (aten ops) do not
    count: only the CUDA runtime / driver calls ("cu...")."""
    from normfuse.repro import profile_models as P
    ev = _prof_event
    events = [
        ev(P.TIMELINE_MARK, 0, 300, False),
        ev("cuLaunchKernelEx", 5, 8, False, 7), ev("fold", 12, 16, True, 7),
        # the GEMM's launch call began 4 us after the fold ended and ran 100 us
        ev("aten::empty", 1, 2, False, 9), ev("cuLaunchKernelEx", 20, 120, False, 9),
        ev("gemm", 125, 200, True, 9),
        # a gap whose kernel has no launch call in the profile: listed without the split
        ev("norm_bwd", 210, 220, True, 11),
    ]
    t = P.timeline_gaps(events)
    assert t["first_launch_us"] == 5
    assert t["largest"] == [
        {"before": "gemm", "us": 109, "launch_after_idle_us": 4, "launch_call_us": 100,
         "start_after_call_us": 5},
        {"before": "norm_bwd", "us": 10}]
    assert "ran 100 us" in P.gap_line(t["largest"][0])
    assert P.gap_line(t["largest"][1]).strip() == "10.0 us  before norm_bwd"


def test_profile_launch_calls_by_kernel():
    """profile_models.launch_calls: per kernel name, the median of its launch calls' durations
    and of the time from each call's return to the kernel's start, per call window; kernels
    launched outside the windows or without a launch call in the profile are left out."""
    from normfuse.repro import profile_models as P
    ev = _prof_event
    events = [ev(P.TIMELINE_MARK, 0, 100, False), ev(P.TIMELINE_MARK, 200, 300, False)]
    for base, gemm_call in ((0, 60), (200, 80)):
        events += [ev("cuLaunchKernelEx", base + 1, base + 5, False, base + 1),
                   ev("fold", base + 6, base + 8, True, base + 1),
                   ev("cuLaunchKernelEx", base + 10, base + 10 + gemm_call, False, base + 2),
                   ev("gemm", base + 12 + gemm_call, base + 95, True, base + 2),
                   ev("no_call", base + 96, base + 97, True, base + 3)]
    # launched between the windows (the harness's own work): not counted
    events += [ev("cudaLaunchKernel", 150, 152, False, 999), ev("fill", 153, 154, True, 999)]
    rows = P.launch_calls(events)
    assert rows == [{"name": "gemm", "call_us": 70, "start_after_call_us": 2, "count": 1},
                    {"name": "fold", "call_us": 4, "start_after_call_us": 1, "count": 1}]


def test_profile_host_calls_count_only_inside_the_call_windows():
    """profile_models.host_calls: the host's calls by own time per call window, counting only
    what ran inside a window (the harness's synchronizations between calls are left out, a
    synchronization inside a call is listed), largest first."""
    from normfuse.repro import profile_models as P

    def ev(name, start, end, own, dev=False):
        return _prof_event(name, start, end, dev, own=own)
    events = [
        ev(P.TIMELINE_MARK, 0, 100, 5), ev(P.TIMELINE_MARK, 200, 300, 5),
        ev("cudaLaunchKernel", 10, 14, 4), ev("cudaLaunchKernel", 20, 26, 6),
        ev("cudaStreamSynchronize", 30, 90, 60), ev("cudaLaunchKernel", 210, 214, 4),
        ev("cudaDeviceSynchronize", 100, 200, 100),  # (between the windows: the harness's)
        ev("kernel_a", 20, 40, 0, dev=True),  # (device events are not host calls)
    ]
    rows = P.host_calls(events)
    assert rows == [{"name": "cudaStreamSynchronize", "self_us": 30.0, "count": 0.5},
                    {"name": "cudaLaunchKernel", "self_us": 7.0, "count": 1.5}]
    assert P.host_calls(events, top=1) == rows[:1]
    assert P.host_calls([ev("cudaLaunchKernel", 0, 1, 1)]) == []


def test_profile_helpers_are_the_kinds_their_callers_use():
    """bench_ops' device timer indexes kernels_of's result (a plain function returning
    (ms, events)); profile_one enters configuration_call (a context manager). A decorator on the
    wrong one of the two broke the plans benchmark on the H200 (2026-12-02)."""
    import inspect

    from normfuse.repro import profile_models as P

    assert not inspect.isgeneratorfunction(P.kernels_of)
    assert inspect.isgeneratorfunction(inspect.unwrap(P.configuration_call))
    assert hasattr(P.configuration_call("llama", "stock", "prefill"), "__enter__")


@pytest.mark.parametrize("interleave", [False, True])
def test_recompiles_are_counted_per_mode(monkeypatch, interleave):
    """A compiled configuration's two modes share one Dynamo cache: a recompile forced in the
    prefill's second warm-up call is the prefill's and not the train step's, timed interleaved
    or not (interleaved, the train mode's mark once hid it and a train recompile was charged
    to both)."""
    import warnings
    monkeypatch.setattr(M, "INTERLEAVED_CALLS", {"prefill": 3, "train": 3})
    real = M._forward
    n = [0]

    def fwd(f, ids):
        import torch
        if not torch.is_grad_enabled() and hasattr(f, "_orig_mod"):
            n[0] += 1
            if n[0] == 2:  # the prefill's second warm-up call: another shape, one recompile
                return real(f, ids[:, :-1])
        return real(f, ids)
    monkeypatch.setattr(M, "_forward", fwd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recs, _ = M.run_model(M.tiny_spec("llama"), configs=("stock", "stock+compile"),
                              device="cpu", backend="eager", log=lambda *a: None,
                              interleave=interleave)
    got = {r["mode"]: r["recompiles"] for r in recs if r["compiled"]}
    assert got == {"prefill": 1, "train": 0}, got


def test_goals_compare_one_timing_basis_and_count_errors():
    """summarize: a best normfuse figure timed alone (do_bench) is not set against an
    interleaved stock median (no speed-up, no verdict); a normfuse configuration that raised
    fails the numerics goal and, if compiled, the compile goal."""
    def rec(config, ms, status="ok", timed=None, **kw):
        r = dict(model="m", mode="prefill", config=config, status=status, ms=ms,
                 err_ratio=0.9, compiled="compile" in config, recompiles=0, graph_breaks=0,
                 **kw)
        if timed:
            r["timed"] = timed
        return r
    recs = [rec("stock", 10.0), rec("stock+compile", 8.0),
            rec("normfuse+liger+compile", 7.5, timed="alone"),
            rec("normfuse", None, status="error"), rec("normfuse+compile", None, status="error")]
    (row,) = M.summarize(recs)
    assert row["best_normfuse"] == "normfuse+liger+compile"
    assert "speedup" not in row and "faster" not in row
    assert row["errors"] == ["normfuse", "normfuse+compile"]
    assert row["numerics_ok"] is False and row["compile_clean"] is False
    md = M.table({"records": recs, "summary": [row]})
    assert "normfuse configuration(s) that raised" in md
    recs = [rec("stock", 10.0), rec("stock+compile", 8.0), rec("normfuse", 7.0),
            rec("normfuse+compile", 7.2)]
    (row,) = M.summarize(recs)
    assert row["speedup"] == pytest.approx(8.0 / 7.0) and row["faster"]
    assert row["numerics_ok"] is True and row["compile_clean"] is True and "errors" not in row
