"""scripts/setup.sh on the machines users meet (issue 11, section 3): torch's NumPy warning is not
a misfit, a missing numpy is installed (or noted), and a failed pip run ends in setup's note, not
in pip's ERROR lines. Modules are hidden with stand-ins that raise ModuleNotFoundError; pip is
replaced by a stand-in that fails as it does offline."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.fixture
def hide(tmp_path):
    """A PYTHONPATH entry under which the named modules fail to import as if not installed."""
    def make(*names):
        d = tmp_path / "hidden"
        for name in names:
            (d / name).mkdir(parents=True, exist_ok=True)
            (d / name / "__init__.py").write_text(
                f"raise ModuleNotFoundError(\"No module named '{name}' (hidden)\", name={name!r})\n")
        return str(d)
    return make


def setup(repo_root, env_extra, python=None):
    env = {**os.environ, **env_extra, "PYTHON": python or sys.executable}
    return subprocess.run(["bash", str(repo_root / "scripts" / "setup.sh")], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # (6 s: a setup run with numpy hidden)
def test_numpy_warning_is_not_a_misfit(repo_root, hide):
    r = setup(repo_root, {"PYTHONPATH": hide("numpy"), "NORMFUSE_OFFLINE": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("setup: triton 3.6") and lines[0].endswith("(nothing to install)")
    assert "installing triton" not in r.stdout and "UserWarning" not in r.stdout + r.stderr
    assert "setup: missing: numpy; trying pip" in lines
    assert "setup: NORMFUSE_OFFLINE=1: not installing numpy" in lines


def test_failed_pip_prints_the_note_not_pip_errors(repo_root, hide, tmp_path):
    fake = tmp_path / "python"
    fake.write_text(f"""#!/usr/bin/env bash
if [ "${{1-}}" = "-m" ] && [ "${{2-}}" = "pip" ]; then
  echo "WARNING: Retrying after connection broken" >&2
  echo "ERROR: Could not find a version that satisfies the requirement lit (from versions: none)" >&2
  echo "ERROR: No matching distribution found for lit" >&2
  exit 1
fi
exec {sys.executable} "$@"
""")
    fake.chmod(0o755)
    r = setup(repo_root, {"PYTHONPATH": hide("lit")}, python=str(fake))
    assert r.returncode == 0, r.stdout + r.stderr  # lit is optional
    assert not [line for line in (r.stdout + r.stderr).splitlines() if "ERROR" in line]
    assert ("setup: pip could not install lit (offline?) (pip: No matching distribution found "
            "for lit)") in r.stdout.splitlines()
    assert "setup: note: no lit: test/python/test_lit.py runs the lit files' RUN lines itself" \
        in r.stdout


def _fake_repo_and_python(tmp_path, missing_dist):
    """A copy of scripts/setup.sh in an empty repo, and a python that reports `missing_dist` as
    not installed, triton and torch as fitting, and logs pip's arguments instead of running pip."""
    from pathlib import Path
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    src = Path(__file__).resolve().parents[2] / "scripts" / "setup.sh"
    (repo / "scripts" / "setup.sh").write_text(src.read_text())
    log = tmp_path / "pip.log"
    fake = tmp_path / "python"
    fake.write_text(f"""#!/usr/bin/env bash
if [ "${{1-}}" = "-" ]; then  # the triton/torch check (a script on stdin): fits
  cat >/dev/null
  echo "ok: triton 3.6.0, torch 2.13.0 (stand-in)"
  exit 0
fi
if [ "${{1-}}" = "-c" ] && [[ "${{2-}}" == *importlib.metadata* ]] && [ "${{3-}}" = "{missing_dist}" ]; then
  exit 1
fi
if [ "${{1-}}" = "-m" ] && [ "${{2-}}" = "pip" ]; then
  echo "$@" >> {log}
  exit 0
fi
exec {sys.executable} "$@"
""")
    fake.chmod(0o755)
    return repo, fake, log


def test_missing_liger_installs_the_brought_wheel(tmp_path):
    """Offline with a wheel in .whl/ (the GPU machine): installed from it, no index, no deps."""
    repo, fake, log = _fake_repo_and_python(tmp_path, "liger-kernel")
    (repo / ".whl").mkdir()
    for v in ("0.8.4", "0.8.5"):
        (repo / ".whl" / f"liger_kernel-{v}-py3-none-any.whl").write_bytes(b"")
    r = setup(repo, {"NORMFUSE_OFFLINE": "1"}, python=str(fake))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "setup: installed liger-kernel from .whl/liger_kernel-0.8.5-py3-none-any.whl" \
        in r.stdout.splitlines()
    assert log.read_text().splitlines() == [
        "-m pip install --disable-pip-version-check --no-deps --no-index "
        ".whl/liger_kernel-0.8.5-py3-none-any.whl"]


def test_missing_liger_without_a_wheel_is_a_note(tmp_path):
    repo, fake, log = _fake_repo_and_python(tmp_path, "liger-kernel")
    r = setup(repo, {"NORMFUSE_OFFLINE": "1"}, python=str(fake))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "setup: NORMFUSE_OFFLINE=1: not installing liger-kernel==0.8.5" in lines
    assert ("setup: note: no liger-kernel (optional: the model benchmark's columns that need it "
            "are skipped)") in lines
    assert not log.exists()
