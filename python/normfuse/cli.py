"""normfuse-opt: run normfuse passes over Triton IR text, the way `triton-opt` runs Triton's.

    normfuse-opt [--<pass> ...] [--pass-pipeline='a,b{opt=v}'] [-o OUT] [INPUT | -]

The input is Triton 3.6 TTIR or TTGIR (custom or generic form). Triton parses and verifies it,
the passes run in command-line order (each `--<pass>` flag and each `--pass-pipeline` adds to the
one pipeline), and the result, verified again, is printed the way Triton prints it, without debug
locations unless --mlir-print-debuginfo is given (like mlir-opt). A pass that does not match
leaves the IR as Triton prints it and says why in a remark; that is not an error. Remarks go to
stderr, one per line.

Bad input of any kind ends with `normfuse-opt: error: ...` and exit status 1. Triton's parser can
crash on malformed IR (a signal, see docs/NOTES.md), so the IR work runs in a forked child
(`normfuse.ir.guard`); a crash there is reported as an error that names the signal, what Triton
was doing and what it printed before dying.

Pass flags come from the registry (`normfuse.passes.available_passes`), so a new pass gets its
flag without touching this file. `main()` is reusable: it takes argv and returns the exit status.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Sequence

PROG = "normfuse-opt"
SPLIT_MARKER = "// -----"
_SPLIT_RE = re.compile(r"\s*//\s*-----\s*")

_EPILOG = """\
input:
  Triton 3.6 TTIR or TTGIR text, e.g. what `triton.compile(...).asm["ttir"]` holds or a
  hand-written module; '-' (the default) reads stdin.

exit status:
  0  the input parsed and verified, and every pass ran (also when no pass matched: the IR is
     then printed as Triton prints it and the passes' remarks say why)
  1  unreadable or invalid input (also input that crashes Triton's parser: that runs in a child
     process and is reported as an error), unknown pass, bad pass option, bad command line, a
     pass that produced IR Triton rejects, or a pass that failed on the input

examples:
  normfuse-opt --lazy-prenorm naive.ttir -o fused.ttir
  normfuse-opt --pass-pipeline='lazy-prenorm,PASS{option=value}' - < naive.ttir
  normfuse-opt --pass-pipeline='cluster-reduce{cluster-size=4},epilogue-norm' postnorm.ttir
  normfuse-opt --split-input-file test/lit/normfuse-opt.mlir | FileCheck test/lit/normfuse-opt.mlir
  normfuse-opt --list-passes
"""


class CLIError(Exception):
    """A user-facing failure; main() prints it as `normfuse-opt: error: ...` and returns 1."""


class _Parser(argparse.ArgumentParser):
    """argparse, but command-line errors exit with 1 like every other error of the tool."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        self.exit(1, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _AppendToPipeline(argparse.Action):
    """Appends (flag, spec) to `dest`, so pass flags and --pass-pipeline keep their order."""

    def __init__(self, option_strings, dest, spec: str | None = None, **kwargs):
        if spec is not None:
            kwargs["nargs"] = 0
        super().__init__(option_strings, dest, **kwargs)
        self.spec = spec

    def __call__(self, parser, namespace, values, option_string=None):
        items = list(getattr(namespace, self.dest, None) or [])
        items.append((option_string, self.spec if self.spec is not None else values))
        setattr(namespace, self.dest, items)


# ---------------------------------------------------------------------------------------------
# The pass registry, as the command line sees it
# ---------------------------------------------------------------------------------------------

def registered_passes() -> tuple[dict[str, str], dict[str, str]]:
    """(name -> summary of every loadable pass, name -> why it cannot be loaded).

    A pass whose module fails to import (being written, or broken) must not take the other
    passes, --help or --list-passes down with it; it still gets its flag, which then fails
    with the import error.
    """
    from . import passes

    try:
        return dict(passes.available_passes()), {}
    except Exception:  # noqa: BLE001 - one pass failed to import; look at them one by one
        pass
    ok: dict[str, str] = {}
    broken: dict[str, str] = {}
    for name in passes.pass_names():
        try:
            ok[name] = passes.create_pass(name).summary
        except Exception as e:  # noqa: BLE001
            broken[name] = f"{type(e).__name__}: {e}"
    return ok, broken


def _version() -> str:
    from importlib import metadata

    from . import __version__
    try:
        triton_version = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton_version = "not installed"
    return f"{PROG} {__version__} (triton {triton_version})"


def build_parser(loadable: dict[str, str], broken: dict[str, str]) -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Run normfuse passes on Triton IR (TTIR/TTGIR) and print the result.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument("input", nargs="?", default="-", metavar="INPUT",
                   help="input file, or '-' for stdin (default: -)")
    p.add_argument("-o", dest="output", default="-", metavar="OUT",
                   help="write the output IR to OUT instead of stdout; not written on error")
    p.add_argument("--pass-pipeline", dest="pipeline", action=_AppendToPipeline, metavar="SPEC",
                   help="comma-separated passes with options, e.g. 'a,b{opt=v,flag=true}'; "
                        "may be repeated and mixed with pass flags, in command-line order")
    p.add_argument("--list-passes", action="store_true",
                   help="print the registered passes with their summaries and exit")
    p.add_argument("--print-remarks", dest="remarks", action="store_true", default=True,
                   help="print the passes' remarks on stderr, one per line (default)")
    p.add_argument("--no-remarks", dest="remarks", action="store_false",
                   help="do not print remarks")
    p.add_argument("--mlir-print-debuginfo", "--print-debuginfo", dest="debuginfo",
                   action="store_true",
                   help="keep debug locations in the output ('#loc' lines and 'loc(...)' "
                        "suffixes); by default they are left out, as mlir-opt does")
    p.add_argument("--split-input-file", "-split-input-file", action="store_true",
                   help=f"treat each '{SPLIT_MARKER}'-separated chunk of the input as its own "
                        f"module; the outputs are joined by '{SPLIT_MARKER}' lines")
    p.add_argument("--version", action="version", version=_version())

    group = p.add_argument_group(
        "passes", "  each flag appends its pass to the pipeline, in command-line order;\n"
                  "  for pass options use --pass-pipeline='name{opt=v}'")
    for name in sorted({**loadable, **broken}):
        summary = loadable.get(name) or f"(cannot be loaded: {broken[name]})"
        try:
            group.add_argument(f"--{name}", dest="pipeline", action=_AppendToPipeline,
                               spec=name, help=summary)
        except argparse.ArgumentError:
            pass  # the name collides with a driver option: reachable through --pass-pipeline
    p.set_defaults(pipeline=[])
    return p


def _parse_passes(items: Sequence[tuple[str, str]]) -> list:
    """[(flag, spec)] -> pass objects; every problem becomes a CLIError."""
    from .passes import PassError
    from .pipeline import parse_pipeline

    out = []
    for flag, spec in items:
        try:
            out.extend(parse_pipeline(spec))
        except PassError as e:
            raise CLIError(f"{flag}: {e}") from None
        except Exception as e:  # noqa: BLE001 - a registered pass whose module does not import
            raise CLIError(f"{flag}: cannot load pass from '{spec}': {type(e).__name__}: {e}") \
                from None
    return out


# ---------------------------------------------------------------------------------------------
# Input, output
# ---------------------------------------------------------------------------------------------

def _read_input(path: str) -> tuple[str, str]:
    """(text, source name for diagnostics)."""
    if path == "-":
        try:  # (the bytes, decoded strictly: the locale's decoder lets bad bytes through)
            return sys.stdin.buffer.read().decode("utf-8"), "<stdin>"
        except UnicodeDecodeError:
            raise CLIError("<stdin> is not UTF-8 text") from None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except UnicodeDecodeError:
        raise CLIError(f"input file '{path}' is not UTF-8 text") from None
    except OSError as e:
        raise CLIError(f"cannot read input file '{path}': {e.strerror or e}") from None


def _write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise CLIError(f"cannot write output file '{path}': {e.strerror or e}") from None


def split_input(text: str) -> list[tuple[int, str]]:
    """Chunks separated by `// -----` lines, as (0-based line of the chunk's start, text)."""
    chunks, start, cur = [], 0, []
    for i, line in enumerate(text.splitlines(keepends=True)):
        if _SPLIT_RE.fullmatch(line.rstrip("\r\n")):
            chunks.append((start, "".join(cur)))
            start, cur = i + 1, []
        else:
            cur.append(line)
    chunks.append((start, "".join(cur)))
    return chunks


def _one_paragraph(message: str) -> str:
    return "\n".join(line for line in str(message).splitlines() if line.strip())


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------

def _run(argv: Sequence[str] | None) -> int:
    loadable, broken = registered_passes()
    parser = build_parser(loadable, broken)
    args, extra = parser.parse_known_args(argv)
    if extra:
        unknown = " ".join(extra)
        hint = ""
        if any(e.startswith("--") for e in extra):
            known = ", ".join(f"--{n}" for n in sorted({**loadable, **broken})) or "none"
            hint = f"; pass flags: {known}"
        parser.error(f"unrecognized arguments: {unknown}{hint}")

    if args.list_passes:
        if not loadable and not broken:
            print("(no passes registered)")
        width = max((len(n) for n in {**loadable, **broken}), default=0)
        from .passes import pass_options
        for name in sorted({**loadable, **broken}):
            summary = loadable.get(name) or f"(cannot be loaded: {broken[name]})"
            print(f"  {name.ljust(width)}  {summary}")
            opts = pass_options(name) if name in loadable else {}
            if opts:
                print(f"  {''.ljust(width)}    options: " + ", ".join(
                    f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in opts.items()))
        return 0

    _parse_passes(args.pipeline)  # fail on a bad pipeline before waiting for stdin
    text, source = _read_input(args.input)
    chunks = split_input(text) if args.split_input_file else [(0, text)]
    results = _process_guarded(chunks, args.pipeline, source, args.debuginfo)

    outputs: list[str] = []
    failed = 0
    for kind, payload, remarks in results:
        if kind == "error":
            failed += 1
            _error(payload)
            continue
        if args.remarks:
            for r in remarks:
                print(r, file=sys.stderr)
        outputs.append(payload)
    if failed:
        return 1
    sep = f"{SPLIT_MARKER}\n"
    _write_output(args.output, sep.join(outputs))
    return 0


def _where(source: str, chunks: list[tuple[int, str]], i: int) -> str:
    return source if len(chunks) == 1 else f"{source} (chunk at line {chunks[i][0] + 1})"


def _process(chunks, start: int, items, source: str, debuginfo: bool, emit=None) -> None:
    """Parse, transform and print chunks[start:]; each outcome goes to `emit` (by default to the
    parent, `guard.send`) as (chunk index, ("ok", text, remarks) or ("error", message, []))."""
    from .ir import IRError, guard
    from .passes import PassError
    from .pipeline import _describe_exception, run_pipeline

    emit = emit or guard.send

    for i in range(start, len(chunks)):
        first_line, chunk = chunks[i]
        where = _where(source, chunks, i)
        # Padding keeps MLIR's line numbers those of the original file.
        padded = "\n" * first_line + chunk
        try:
            # Fresh pass objects per chunk: no state leaks from one module into the next.
            result = run_pipeline(padded, _parse_passes(items), source_name=source,
                                  debuginfo=debuginfo)
        except guard.TritonCrash as e:  # (in a nested child: as `_process_guarded` reports it)
            emit((i, ("error", f"{where}: {_one_paragraph(e)}", [])))
            continue
        except IRError as e:
            emit((i, ("error", f"{where} cannot be loaded as Triton IR:\n{_one_paragraph(e)}", [])))
            continue
        except PassError as e:  # (a pass's output that crashed Triton: the crash, as above)
            emit((i, ("error", f"{where}: {_one_paragraph(getattr(e, 'crash', None) or e)}", [])))
            continue
        except Exception as e:  # noqa: BLE001 - a bug in normfuse met on this input: still an answer
            emit((i, ("error", f"{where}: internal error in normfuse ({_describe_exception(e)}); "
                               "please report it with the input", [])))
            continue
        emit((i, ("ok", result.text, [str(r) for r in result.remarks])))


def _process_guarded(chunks, items, source: str, debuginfo: bool) -> list[tuple[str, str, list]]:
    """Every chunk's outcome, in order. Triton runs in a forked child (normfuse.ir.guard): a
    signal inside Triton (a crash on malformed IR) ends that chunk with an error naming the
    signal and what Triton was doing, and a new child goes on with the next chunk. One fork per
    run (about 2 ms; the child imports Triton as the driver did before), so the happy path pays
    no second parse."""
    from .ir import guard

    results: dict[int, tuple] = {}
    start = 0
    while start < len(chunks):
        try:
            guard.run_in_child(_process, chunks, start, items, source, debuginfo,
                               on_message=lambda m: results.__setitem__(m[0], m[1]),
                               timeout=guard.DEFAULT_TIMEOUT_S)
            break
        except guard.TritonCrash as e:
            i = max(results, default=start - 1) + 1  # the chunk in flight
            if i >= len(chunks):  # every chunk answered before the child died
                break
            results[i] = ("error", f"{_where(source, chunks, i)}: {_one_paragraph(e)}", [])
            start = i + 1
        except guard.ChildUnavailable:  # no fork: do the rest in this process
            _process(chunks, start, items, source, debuginfo,
                     emit=lambda m: results.__setitem__(m[0], m[1]))
            break
    return [results[i] for i in range(len(chunks))]


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """The `normfuse-opt` entry point; returns the exit status (see --help)."""
    try:
        return _run(argv)
    except CLIError as e:
        _error(_one_paragraph(e))
        return 1
    except SystemExit as e:  # argparse: --help, --version, command-line errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `normfuse-opt x | head`: stop quietly, like other filters
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail
        return 1


if __name__ == "__main__":
    sys.exit(main())
