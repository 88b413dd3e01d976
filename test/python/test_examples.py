"""Every script of examples/ runs on the CPU, as a user runs it (a child process from the
repository root), and prints what its docstring promises."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TIMEOUT_S = 240  # about 5-10 s each on an idle 2-core machine; the margin is for a loaded one


def _run(cmd: list[str]) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "python")] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert p.returncode == 0, f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def test_every_example_is_tested_and_listed():
    scripts = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".py", ".sh"))
    assert len(scripts) >= 3
    untested = [s for s in scripts if f"test_{s.rsplit('.', 1)[0]}" not in globals()]
    assert untested == [], "an example without its test here"
    listed = (EXAMPLES / "README.md").read_text()
    assert all(f"`{s}`" in listed for s in scripts), scripts


def test_every_bench_script_is_listed():
    """bench/README.md's table names every bench/*.py (seven were missing until session 33)."""
    scripts = sorted(p.name for p in (REPO / "bench").glob("*.py"))
    assert len(scripts) >= 10
    listed = (REPO / "bench" / "README.md").read_text()
    assert [s for s in scripts if f"| `{s}` |" not in listed] == []


def test_optimize_model():
    pytest.importorskip("transformers")
    out = _run([sys.executable, "examples/optimize_model.py"])
    # the report's table: each of the 2 layers' two norms with its consumers, and the final norm
    assert re.search(r"4 norms fused \(4 pre-norm, 0 post-norm, 10 GEMMs\), 1 refused", out), out
    assert re.search(r"model\.layers\.0\.input_layernorm .*self_attn\.q_proj, self_attn\.k_proj, "
                     r"self_attn\.v_proj", out), out
    m = re.search(r"fused 4 norms, refused 1; max \|logits - original\| = (\S+)", out)
    assert m and float(m.group(1)) < 1e-4, out
    assert "state_dict keys unchanged: True" in out


def test_ops_on_cpu():
    out = _run([sys.executable, "examples/ops_on_cpu.py"])
    assert re.search(r"fallback: normfuse\.rmsnorm_linear: the inputs are on cpu", out), out
    m = re.search(r"max \|y - torch\| = (\S+); gradients of x, g, W within (\S+)", out)
    assert m and float(m.group(1)) < 1e-5 and float(m.group(2)) < 1e-5, out
    assert "siblings: qkv (2, 32, 96) q matches: True" in out
    assert "linear_rmsnorm matches: True" in out
    assert "matches its torch pair: True | every parameter has a gradient: True" in out
    assert ("FlashNormAttention matches its definition: True | x and the norms' weights have "
            "gradients: True") in out


def test_compile_kernel(tmp_path):
    ttir = tmp_path / "kernel.ttir"
    out = _run([sys.executable, "examples/compile_kernel.py", "--ttir", str(ttir)])
    assert re.search(r"^\[lazy-prenorm\] applied: RMSNorm row scale sunk", out, re.M), out
    assert re.search(r"^\[hopper-ws\] applied: lowered to the warp-specialized template", out, re.M), out
    assert "k-loops: 2 before the passes, 1 after" in out
    assert ("lowered by hopper-ws: True | warp-specialized TTGIR: True | wgmma in the PTX: True"
            in out), out
    # on an H200 it also launches through normfuse.jit and compares with torch
    m = re.search(r"on the GPU: relative error vs fp32 torch (\S+)", out)
    assert (m and float(m.group(1)) < 2e-2) or "no Hopper GPU: launching skipped" in out, out
    # the TTIR it wrote is the naive kernel, as normfuse-opt takes it (docs/guide.md)
    text = ttir.read_text()
    assert "tt.func public @rmsnorm_matmul" in text and text.count("scf.for ") == 2


def test_normfuse_opt():
    out = _run(["bash", "examples/normfuse_opt.sh"])
    assert re.search(r"^\[lazy-prenorm\] applied", out, re.M), out
    assert "scf.for loops: 2 before, 1 after" in out
    assert re.search(r"^\[hopper-ws\] applied: lowered", out, re.M), out
    m = re.search(r"warp-specialized kernels in the output: (\d+)", out)
    assert m and int(m.group(1)) >= 2, out
    for name in ("lazy-prenorm", "cluster-reduce", "epilogue-norm", "hopper-ws", "residual-acc"):
        assert re.search(rf"^  {name} ", out, re.M), name
