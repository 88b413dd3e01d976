"""normfuse-opt: tools/normfuse-opt run as a subprocess (what users and lit run), plus in-process
main() with test passes in the registry (pass flags, ordering, remarks, pass errors)."""
from __future__ import annotations

import subprocess

import pytest

from normfuse import cli


def run(cmd, *args, stdin: str | None = None, cwd=None):
    return subprocess.run([*cmd, *map(str, args)], input=stdin, capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def registered_names() -> list[str]:
    loadable, broken = cli.registered_passes()
    return sorted({**loadable, **broken})


@pytest.fixture
def ttir_file(tmp_path, ttir):
    path = tmp_path / "kernel.ttir"
    path.write_text(ttir)
    return path


# ---------------------------------------------------------------------------------------------
# Subprocess: the tool as users run it
# ---------------------------------------------------------------------------------------------

def test_help(normfuse_opt):
    r = run(normfuse_opt, "--help")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("usage: normfuse-opt")
    for flag in ("--pass-pipeline", "--list-passes", "-o OUT", "--print-remarks", "--no-remarks",
                 "--split-input-file", "--version", "INPUT", "--mlir-print-debuginfo"):
        assert flag in out
    for name in registered_names():
        assert f"--{name}" in out
    assert "examples:" in out and "normfuse-opt --" in out.split("examples:")[1]


def test_version(normfuse_opt):
    import triton

    r = run(normfuse_opt, "--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"normfuse-opt 0.1.0 (triton {triton.__version__})"


def test_list_passes(normfuse_opt):
    r = run(normfuse_opt, "--list-passes")
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    listed = [line.split()[0] for line in lines if line.split()[0] != "options:"]
    assert listed == registered_names()
    # each pass's options with their defaults, under it
    text = r.stdout
    assert "stats-source=auto" in text and "stage-reloads=auto" in text and "num-stages=0" in text
    assert "exchange=dsmem" in text


def test_unknown_pass_lists_known_ones(normfuse_opt, ttir_file):
    r = run(normfuse_opt, "--pass-pipeline=no-such-pass", ttir_file)
    assert r.returncode == 1
    assert r.stdout == ""
    err = r.stderr.strip()
    assert err.startswith("normfuse-opt: error: ")
    assert "unknown pass 'no-such-pass'" in err and "known passes:" in err
    for name in registered_names():
        assert name in err
    assert "Traceback" not in err and "\n\n" not in err


def test_unknown_pass_fails_before_reading_stdin(normfuse_opt):
    # would hang (and time out) if the driver read stdin first
    proc = subprocess.Popen([*normfuse_opt, "--pass-pipeline=no-such-pass"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1 and "unknown pass" in err


def test_unknown_flag_names_the_pass_flags(normfuse_opt, ttir_file):
    r = run(normfuse_opt, "--no-such-flag", ttir_file)
    assert r.returncode == 1
    assert "normfuse-opt: error: unrecognized arguments: --no-such-flag" in r.stderr
    for name in registered_names():
        assert f"--{name}" in r.stderr


def test_bad_pass_option(normfuse_opt, ttir_file):
    r = run(normfuse_opt, "--pass-pipeline=x{opt}", ttir_file)
    assert r.returncode == 1
    assert r.stderr.startswith("normfuse-opt: error: --pass-pipeline: option 'opt'")


def test_garbage_input(normfuse_opt, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("this is not IR\n")
    r = run(normfuse_opt, bad)
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr.startswith(f"normfuse-opt: error: {bad} cannot be loaded as Triton IR")
    assert f'loc("{bad}":1:1): error: custom op \'this\' is unknown' in r.stderr
    assert "Traceback" not in r.stderr


def test_invalid_ir_from_stdin(normfuse_opt):
    r = run(normfuse_opt, "-", stdin="tt.func @f() -> f32 {\n  tt.return\n}\n")
    assert r.returncode == 1
    assert "normfuse-opt: error: <stdin> cannot be loaded as Triton IR" in r.stderr
    assert 'loc("<stdin>":2:3): error:' in r.stderr


def test_missing_file(normfuse_opt, tmp_path):
    r = run(normfuse_opt, tmp_path / "nope.ttir")
    assert r.returncode == 1
    assert r.stderr.strip() == (f"normfuse-opt: error: cannot read input file "
                                f"'{tmp_path / 'nope.ttir'}': No such file or directory")


@pytest.mark.parametrize("stage", ["ttir", "ttgir"])
def test_no_pass_output_is_triton_print(normfuse_opt, tmp_path, compiled_row_rstd, triton_print,
                                        stage):
    text = compiled_row_rstd.asm[stage]
    assert "#loc" in text and "loc(" in text  # Triton's own print carries locations
    path = tmp_path / f"kernel.{stage}"
    path.write_text(text)
    for extra in ([], ["--pass-pipeline="]):
        r = run(normfuse_opt, *extra, path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == triton_print(text, debuginfo=False)
        assert "loc(" not in r.stdout and "#loc" not in r.stdout
        assert r.stderr == ""


@pytest.mark.parametrize("flag", ["--mlir-print-debuginfo", "--print-debuginfo"])
def test_debuginfo_flag_keeps_locations(normfuse_opt, ttir_file, ttir, triton_print, flag):
    r = run(normfuse_opt, flag, ttir_file)
    assert r.returncode == 0, r.stderr
    assert r.stdout == triton_print(ttir)
    assert "#loc" in r.stdout and "conftest.py" in r.stdout


def test_locations_off_by_default_after_a_pass(normfuse_opt, repo_root):
    # the lit input of lazy-prenorm, rewritten: new ops carry locations too, none is printed
    lit = repo_root / "test" / "lit" / "lazy-prenorm.mlir"
    r = run(normfuse_opt, "--lazy-prenorm", lit)
    assert r.returncode == 0, r.stderr
    assert "loc(" not in r.stdout and "scf.for" in r.stdout
    # remarks still point at the input's lines
    assert "lazy-prenorm.mlir:" in r.stderr and "remark: [lazy-prenorm] applied" in r.stderr
    kept = run(normfuse_opt, "--lazy-prenorm", "--mlir-print-debuginfo", lit)
    assert kept.returncode == 0 and kept.stdout.count("#loc") > 100


def test_output_file(normfuse_opt, ttir_file, tmp_path, ttir, triton_print):
    out = tmp_path / "out.ttir"
    r = run(normfuse_opt, ttir_file, "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert out.read_text() == triton_print(ttir, debuginfo=False)


def test_output_file_not_written_on_error(normfuse_opt, tmp_path):
    out = tmp_path / "out.ttir"
    r = run(normfuse_opt, "-", "-o", out, stdin="garbage\n")
    assert r.returncode == 1
    assert not out.exists()


@pytest.mark.parametrize("args", [["-"], []], ids=["dash", "default"])
def test_stdin(normfuse_opt, ttir, triton_print, args):
    r = run(normfuse_opt, *args, stdin=ttir)
    assert r.returncode == 0, r.stderr
    assert r.stdout == triton_print(ttir, debuginfo=False)


def test_split_input_file(normfuse_opt, tmp_path, ttir, triton_print):
    path = tmp_path / "two.mlir"
    path.write_text(ttir + "// -----\n" + ttir)
    r = run(normfuse_opt, "--split-input-file", path)
    assert r.returncode == 0, r.stderr
    one = triton_print(ttir, debuginfo=False)
    assert r.stdout == one + "// -----\n" + one
    # without the flag the separator is a comment, and the two functions clash
    r = run(normfuse_opt, path)
    assert r.returncode == 1 and "redefinition" in r.stderr


def test_split_input_file_reports_lines_of_the_whole_file(normfuse_opt, tmp_path, ttir):
    path = tmp_path / "two.mlir"
    path.write_text(ttir + "// -----\nnot IR\n")
    line = ttir.count("\n") + 2
    r = run(normfuse_opt, "--split-input-file", path)
    assert r.returncode == 1
    assert f"(chunk at line {line})" in r.stderr
    assert f'loc("{path}":{line}:1)' in r.stderr
    assert r.stdout == ""


def test_split_input_marker():
    text = "a\n// -----\nb\n  //  -----  \nc\n// ------ not a marker\n"
    assert cli.split_input(text) == [(0, "a\n"), (2, "b\n"), (4, "c\n// ------ not a marker\n")]


# ---------------------------------------------------------------------------------------------
# In process, with test passes in the registry
# ---------------------------------------------------------------------------------------------

def test_pass_flags_come_from_the_registry(fake_passes, capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--test-noop" in out and "does nothing and says so (test pass)" in out
    assert "--test-mul-to-add" in out
    assert cli.main(["--list-passes"]) == 0
    listed = capsys.readouterr().out
    assert "test-mul-to-add" in listed and "rewrites every arith.mulf" in listed


def test_flags_and_pipelines_run_in_command_line_order(fake_passes, ttir_file, capsys):
    rc = cli.main(["--test-noop", "--pass-pipeline=test-mul-to-add,test-noop{count=2}",
                   "--test-noop", str(ttir_file)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    remarks = err.splitlines()
    assert [line.split("remark: ")[1].split(":")[0] for line in remarks] == [
        "[test-noop] missed", "[test-mul-to-add] applied", "[test-noop] missed",
        "[test-noop] missed"]
    assert "count=2" in remarks[2] and "count=1" in remarks[3]
    assert "arith.mulf" not in out and "tt.func public @row_rstd_kernel" in out


def test_no_remarks(fake_passes, ttir_file, capsys):
    assert cli.main(["--test-noop", "--no-remarks", str(ttir_file)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "tt.func" in out
    assert cli.main(["--test-noop", "--no-remarks", "--print-remarks", str(ttir_file)]) == 0
    assert "remark: [test-noop] missed" in capsys.readouterr().err


def test_pass_producing_invalid_ir(fake_passes, ttir_file, capsys):
    assert cli.main(["--test-break", str(ttir_file)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"normfuse-opt: error: {ttir_file}: pass 'test-break' produced invalid IR")


@pytest.mark.parametrize("spec, message", [
    ("test-noop{count=x}", "expects an integer, got 'x'"),
    ("test-noop{nope=1}", "has no option 'nope'"),
])
def test_bad_option_in_process(fake_passes, ttir_file, capsys, spec, message):
    assert cli.main([f"--pass-pipeline={spec}", str(ttir_file)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("normfuse-opt: error: --pass-pipeline: ") and message in err


def test_a_broken_pass_does_not_break_the_driver(fake_passes, monkeypatch, ttir_file, capsys):
    from normfuse import passes

    monkeypatch.setitem(passes._REGISTRY, "test-broken", "no_such_module_for_normfuse:Pass")
    assert cli.main(["--list-passes"]) == 0
    listed = capsys.readouterr().out
    assert "test-noop" in listed
    assert "test-broken" in listed and "cannot be loaded" in listed
    assert cli.main(["--test-noop", str(ttir_file)]) == 0
    capsys.readouterr()
    assert cli.main(["--test-broken", str(ttir_file)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("normfuse-opt: error: --test-broken: ") and "cannot be loaded" in err
    assert "no_such_module_for_normfuse" in err


def test_main_returns_exit_codes_instead_of_exiting(capsys):
    assert cli.main(["--version"]) == 0
    assert cli.main(["--no-such-flag"]) == 1
    assert cli.main(["-o"]) == 1  # -o needs a value
    capsys.readouterr()


def test_input_that_is_not_utf8(normfuse_opt, tmp_path):
    """Bytes that are not UTF-8, from a file or from stdin: one line naming the input, exit
    status 1 (stdin once raised a UnicodeDecodeError traceback, or under another locale
    reported an internal error)."""
    bad = b"\xff\xfe module {}\n"
    path = tmp_path / "latin.mlir"
    path.write_bytes(bad)
    r = subprocess.run([*normfuse_opt, "--epilogue-norm", str(path)], capture_output=True,
                       timeout=120)
    assert r.returncode == 1 and b"is not UTF-8 text" in r.stderr, r.stderr
    r = subprocess.run([*normfuse_opt, "--epilogue-norm", "-"], input=bad, capture_output=True,
                       timeout=120)
    assert r.returncode == 1 and b"<stdin> is not UTF-8 text" in r.stderr, r.stderr
    assert b"Traceback" not in r.stderr and b"internal error" not in r.stderr
