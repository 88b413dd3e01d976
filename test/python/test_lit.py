"""Runs every test/lit/*.mlir: through lit when it is installed, and always through a small
built-in runner that executes the `// RUN:` lines in bash with lit's substitutions (the GPU
machine has no lit; with lit installed, the built-in runner's pass over the files other than
normfuse-opt.mlir is marked `slow`: lit checks them)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

LIT_DIR = Path(__file__).resolve().parents[1] / "lit"
LIT_FILES = sorted(LIT_DIR.glob("*.mlir"))

sys.path.insert(0, str(LIT_DIR))
import normfuse_lit  # noqa: E402

try:
    import lit.main  # noqa: F401
    HAVE_LIT = True
except ImportError:
    HAVE_LIT = False

# lit's `not`: succeed when the command fails (without crashing); `not --crash`: when it crashes.
_PRELUDE = """\
set -o pipefail
not() {
  local crash=0
  if [ "${1-}" = "--crash" ]; then crash=1; shift; fi
  "$@"; local rc=$?
  if [ $crash = 1 ]; then [ $rc -ge 128 ]; else [ $rc -ne 0 ] && [ $rc -lt 128 ]; fi
}
"""


def run_lines(text: str) -> list[str]:
    """The RUN commands of a lit file, continuation lines ('\\' at the end) joined."""
    out, pending = [], ""
    for line in text.splitlines():
        m = re.search(r"\bRUN:(.*)$", line)
        if not m:
            continue
        part = m.group(1).rstrip()
        if part.endswith("\\"):
            pending += part[:-1] + " "
            continue
        out.append((pending + part).strip())
        pending = ""
    if pending:
        raise ValueError("RUN line continuation at end of file")
    return out


def expand(command: str, path: Path, tmp: Path) -> str:
    """lit's order: the config's substitutions, then %s %S %p %t %T (%% is a literal %)."""
    for pattern, replacement in normfuse_lit.substitutions():
        command = re.sub(pattern, lambda _m: replacement, command)
    table = {"%s": str(path), "%S": str(path.parent), "%p": str(path.parent),
             "%t": str(tmp / (path.name + ".tmp")), "%T": str(tmp)}
    command = command.replace("%%", "\0")
    command = re.sub(r"%[sSptT]", lambda m: shlex.quote(table[m.group(0)]), command)
    return command.replace("\0", "%")


def run_builtin(path: Path, tmp: Path) -> list[str]:
    """Run each RUN line in bash; return a description of each one that failed."""
    if normfuse_lit.filecheck_command() is None:
        pytest.fail("no FileCheck found (triton's bundled one, `filecheck`, or a system one)")
    failures = []
    commands = run_lines(path.read_text())
    if not commands:
        return [f"{path.name}: no RUN lines"]
    for command in commands:
        script = _PRELUDE + expand(command, path, tmp)
        r = subprocess.run(["bash", "-c", script], cwd=tmp, capture_output=True, text=True,
                           timeout=600, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            failures.append(f"RUN: {command}\n(exit {r.returncode})\n{r.stdout[-4000:]}"
                            f"{r.stderr[-4000:]}")
    return failures


def test_lit_files_exist():
    assert LIT_DIR / "normfuse-opt.mlir" in LIT_FILES


# Where lit runs the files too, the built-in runner's pass over them is `slow` (lit checks their
# lines) except over normfuse-opt.mlir: the runner is kept honest on one real file and by
# test_builtin_runner_detects_failure; without lit (the GPU machine) it runs every file.
_BUILTIN_SLOW = {p.name for p in LIT_FILES} - {"normfuse-opt.mlir"} if HAVE_LIT else set()


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name in _BUILTIN_SLOW
                                  else p for p in LIT_FILES], ids=lambda p: p.name)
def test_lit_builtin_runner(path, tmp_path):
    failures = run_builtin(path, tmp_path)
    assert not failures, "\n\n".join(failures)


@pytest.mark.skipif(not HAVE_LIT, reason="lit is not installed (the built-in runner ran instead)")
@pytest.mark.parametrize("path", LIT_FILES, ids=lambda p: p.name)
def test_lit(path, tmp_path):
    # lit 18+ has no `python -m lit`; its console script is `lit.main:main`.
    cmd = [sys.executable, "-c", "import sys; from lit.main import main; sys.argv[0] = 'lit'; main()",
           "-v", str(path)]
    env = dict(os.environ, NORMFUSE_LIT_OUT=str(tmp_path))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-8000:] + r.stderr[-4000:]
    assert f"PASS: normfuse :: {path.name}" in r.stdout, r.stdout


# ---------------------------------------------------------------------------------------------
# The built-in runner itself: it must fail when a RUN line fails
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("body, ok", [
    pytest.param("// RUN: true\n// RUN: not false\n", True, id="not"),
    pytest.param("// RUN: echo hello | FileCheck %s\n// CHECK: hello\n", True, id="filecheck"),
    pytest.param("// RUN: echo %% | FileCheck %s --check-prefix=PCT\n// PCT: %\n", True,
                 id="percent"),
    pytest.param("// RUN: echo one \\\n// RUN:   two | FileCheck %s\n// CHECK: one two\n", True,
                 id="continuation"),
    pytest.param("// RUN: not true\n", False, id="not-fails"),
    pytest.param("// RUN: false | true\n", False, id="pipefail"),  # as in lit
    pytest.param("// RUN: echo hello | FileCheck %s\n// CHECK: goodbye\n", False,
                 id="filecheck-fails"),
    pytest.param("// RUN: not normfuse-opt --pass-pipeline=no-such-pass %s\n", True,
                 id="tool-substituted"),
    pytest.param("// no run lines\n", False, id="no-run-lines"),
])
def test_builtin_runner_detects_failure(tmp_path, body, ok):
    src = tmp_path / "case.mlir"
    src.write_text(body)
    failures = run_builtin(src, tmp_path)
    assert (not failures) == ok, failures


def test_substitutions_leave_paths_alone(tmp_path):
    path = tmp_path / "normfuse-opt.mlir"
    cmd = expand("normfuse-opt %s | FileCheck %s --check-prefix=X", path, tmp_path)
    assert cmd.count(normfuse_lit.TOOL) == 1
    assert cmd.count(str(path)) == 2
    assert cmd.split()[0] == sys.executable


# ---------------------------------------------------------------------------------------------
# select-chunks: the chunks a RUN line's checks read, each on its own lines
# ---------------------------------------------------------------------------------------------

_THREE = "".join(f"""{'// -----' + chr(10) if k else '// RUN: true' + chr(10)}
// case {k}
module {{
  tt.func public @{name}(%a: f32) -> f32 {{
    %b = {op} %a, %a : f32
    tt.return %b : f32
  }}
}}
""" for k, (name, op) in enumerate([("one", "arith.addf"), ("two", "arith.mulf"),
                                    ("three", "arith.bogus")]))


def test_select_chunks_keeps_each_chunk_on_its_lines():
    import select_chunks
    lines = _THREE.splitlines()
    for names, keep, kept in [(["one", "three"], True, {0, 2}), (["three"], True, {2}),
                              (["two"], False, {0, 2}), (["one"], False, {1, 2})]:
        out = select_chunks.select(_THREE, names, keep).splitlines()
        assert len(out) == len(lines)
        spans = select_chunks.chunks(lines)
        for k, (a, b) in enumerate(spans):
            assert out[a:b] == (lines[a:b] if k in kept else [""] * (b - a))
        assert sum(line == "// -----" for line in out) == len(kept) - 1
        assert all(out[spans[k][0] - 1] == "// -----" for k in sorted(kept)[1:])
    with pytest.raises(select_chunks.UsageError, match="no chunk holds @four"):
        select_chunks.select(_THREE, ["one", "four"])
    with pytest.raises(select_chunks.UsageError, match="no chunk left"):
        select_chunks.select(_THREE, ["one", "two", "three"], keep=False)


def test_select_chunks_into_normfuse_opt(tmp_path):
    """normfuse-opt on the chunks select-chunks keeps: the kept chunks' output, and an error at
    the line where it is on the whole file; an unknown name fails the RUN line."""
    src = tmp_path / "three.mlir"
    src.write_text(_THREE)
    run = lambda cmd: subprocess.run(["bash", "-c", "set -o pipefail; " + expand(cmd, src, tmp_path)],
                                     capture_output=True, text=True)
    whole = run("normfuse-opt --split-input-file %s")
    part = run("select-chunks --except two %s | normfuse-opt --split-input-file -")
    assert whole.returncode == part.returncode == 1
    assert whole.stderr.replace(str(src), "<stdin>") == part.stderr
    assert '(chunk at line 20)' in part.stderr and '"<stdin>":24:10' in part.stderr, part.stderr
    ok = run("select-chunks one,two %s | normfuse-opt --split-input-file -")
    assert ok.returncode == 0 and ok.stdout.count("tt.func") == 2 and "arith.mulf" in ok.stdout
    bad = run("select-chunks one,four %s | normfuse-opt --split-input-file -")
    assert bad.returncode == 2 and "no chunk holds @four" in bad.stderr


_SELECTED = re.compile(r"^select-chunks\s+(?:--except\s+)?\S+\s+%s\s*\|\s*(normfuse-opt\s.*?)\s-(\s.*)$")
_FC_ENTRY = re.compile(r"^\S+:(\d+):\d+: remark: ([A-Z0-9-]+): (expected string found in input|"
                       r"excluded string not found in input)")
_FC_NOTE = re.compile(r"^<stdin>:(\d+):\d+: note: (?:found here|scanning from here)")


def _filecheck_reads(log: str, text: str) -> list:
    """What FileCheck -vv says each directive read: the line a positive one matched, the lines a
    CHECK-NOT scanned (to the next positive directive's match, or the end); remarks' file names
    left out (the line and column kept)."""
    lines = [re.sub(r"^(?:\S+?\.mlir|<stdin>):(?=\d+:\d+: )", "", x) for x in text.splitlines()]
    found = []
    log_lines = log.splitlines()
    for i, entry in enumerate(log_lines):
        m = _FC_ENTRY.match(entry)
        note = next((n for n in map(_FC_NOTE.match, log_lines[i + 1:i + 6]) if n), None)
        if m and note:
            found.append((int(m.group(1)), m.group(2), "excluded" in m.group(3), int(note.group(1))))
    matches = sorted((c, at) for c, _, neg, at in found if not neg)
    out = []
    for check, name, neg, at in found:
        end = min([a for c, a in matches if c > check], default=len(lines)) if neg else at
        out.append((check, name, tuple(lines[at - 1:end])))
    return sorted(out)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in LIT_FILES if "select-chunks" in p.read_text()],
                         ids=lambda p: p.name)
def test_selected_chunks_are_read_as_in_the_whole_file(path, tmp_path):
    """Each RUN line that pipes select-chunks into normfuse-opt, run as it is and again on the
    whole file: every FileCheck directive of it matches the same line (text, line and column of
    a remark) and every CHECK-NOT scans the same lines in both; the RUN lines that read its
    %t files too. Run after editing a file's checks or selections (`-m slow`): a chunk left out
    must be one no check of its RUN line reads."""
    fc = shlex.join(normfuse_lit.filecheck_command())
    reads = {}
    for variant in ("whole", "selected"):
        tmp = tmp_path / variant
        tmp.mkdir()
        for n, command in enumerate(run_lines(path.read_text())):
            m = _SELECTED.match(command)
            if m and variant == "whole":
                command = f"{m.group(1)} %s{m.group(2)}"
            # FileCheck through a function that keeps its input and its -vv account
            script = _PRELUDE + f"""
k=0
filecheck() {{ k=$((k+1)); cat > {tmp}/in.{n}.$k; {fc} "$@" -vv --dump-input=never \\
  < {tmp}/in.{n}.$k 2> {tmp}/log.{n}.$k; }}
""" + expand(command, path, tmp).replace(fc, "filecheck")
            r = subprocess.run(["bash", "-c", script], cwd=tmp, capture_output=True, text=True,
                               timeout=600, stdin=subprocess.DEVNULL)
            assert r.returncode == 0, f"{variant}: RUN: {command}\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
        reads[variant] = {log.name: _filecheck_reads(log.read_text(), (tmp / ("in" + log.name[3:])).read_text())
                          for log in tmp.glob("log.*")}
    assert reads["whole"] and all(reads["whole"].values())
    for name, whole in reads["whole"].items():
        assert reads["selected"][name] == whole, f"RUN line {name.split('.')[1]} reads differently"


# ---------------------------------------------------------------------------------------------
# Layout of the pass tests: one `// -----` chunk per case, an intent first, bail-outs last
# ---------------------------------------------------------------------------------------------

PASS_LIT_FILES = [p for p in LIT_FILES if p.name != "normfuse-opt.mlir"]
_DIRECTIVE = re.compile(r"^//\s*[A-Z][A-Z0-9-]*(-[A-Z]+)?:")


@pytest.mark.parametrize("path", PASS_LIT_FILES, ids=lambda p: p.name)
def test_lit_chunks_have_an_intent_and_bail_outs_come_last(path):
    text = path.read_text()
    assert all("--split-input-file" in r for r in run_lines(text) if "normfuse-opt" in r)
    chunks = re.split(r"^// -----$", text, flags=re.M)
    names = []
    for k, chunk in enumerate(chunks):
        funcs = re.findall(r"^\s*tt\.func public @(\w+)\(", chunk, flags=re.M)
        assert len(funcs) == 1, f"chunk {k}: {funcs}"
        names.append(funcs[0])
        if k == 0:  # after the file's header (RUN lines, option checks): from the blank line
            head, _, case = chunk[:chunk.index("CHECK-LABEL")].rpartition("\n\n")
            chunk = case + chunk[chunk.index("CHECK-LABEL"):]
        lines = [l for l in chunk.splitlines() if l.startswith("//")]
        assert lines and not _DIRECTIVE.match(lines[0]), f"chunk {k} (@{funcs[0]}) has no intent comment"
    neg = [n.startswith("negative_") for n in names]
    assert neg == sorted(neg), f"bail-out cases must come last: {names}"


# ---------------------------------------------------------------------------------------------
# The generators: each pass test's lit file is what its generator writes today
# ---------------------------------------------------------------------------------------------

LIT_INPUTS = LIT_DIR / "inputs"
HAND_WRITTEN = {"normfuse-opt.mlir"}  # the driver's own checks: no kernels in it


def test_lit_generators_reproduce_the_files():
    """Every test/lit/inputs/*.py with an `outputs()` (litgen.py's command line) makes its lit
    files byte for byte, and every lit file but the driver's has one generator: a kernel change
    that alters its TTIR, or a CHECK edited in a .mlir and not in its generator, fails here with
    the diff and the command that rewrites the file. (TTIR from Triton's front end only: about
    6 s for all of them on the CPU.)"""
    import importlib
    if str(LIT_INPUTS) not in sys.path:
        sys.path.insert(0, str(LIT_INPUTS))
    import litgen
    generators = sorted(p.stem for p in LIT_INPUTS.glob("*.py") if "\ndef outputs(" in p.read_text())
    written: dict[str, str] = {}
    failures = []
    for gen in generators:
        texts = importlib.import_module(gen).outputs()
        for name in texts:
            assert name not in written, f"{name}: written by {written[name]}.py and {gen}.py"
            written[name] = gen
        for name, diff in litgen.stale(texts).items():
            failures.append(f"test/lit/{name} is not what test/lit/inputs/{gen}.py writes "
                            f"(`PYTHONPATH=python python3 test/lit/inputs/{gen}.py` rewrites it, "
                            f"--check shows the diff):\n{litgen.short(diff, 30)}")
    assert set(written) == {p.name for p in LIT_FILES} - HAND_WRITTEN, (
        f"lit files without a generator: {sorted({p.name for p in LIT_FILES} - HAND_WRITTEN - set(written))}")
    assert not failures, "\n\n".join(failures)
