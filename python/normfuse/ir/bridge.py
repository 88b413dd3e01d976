"""The one place where normfuse touches `triton._C`: parse, print, verify, clean up, type.

Triton parses and verifies every module normfuse produces; nothing reaches a later stage that
Triton's own parser and verifier did not accept.

Text that Triton did not print itself (a user's input, a pass's output) may make Triton's parser
crash with a signal (`guard`). Outside a supervised child such text is parsed in a forked child
first (`_preflight`); Triton's own print of a module it verified is `trusted` and skips that.
"""
from __future__ import annotations

import contextlib
import functools
import os
import tempfile

from . import guard
from .core import IRError, Module, Op

_DIALECT_TARGET = ("cuda", 90, 32)


def _libtriton():
    from triton._C.libtriton import ir, passes  # noqa: WPS433 (the only import site)
    return ir, passes


@functools.lru_cache(maxsize=None)
def _backend():
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    return make_backend(GPUTarget(*_DIALECT_TARGET))


def new_context():
    """A Triton MLIR context with the Triton, TritonGPU and NVIDIA dialects loaded."""
    ir, _ = _libtriton()
    ctx = ir.context()
    ir.load_dialects(ctx)
    _backend().load_dialects(ctx)
    return ctx


@contextlib.contextmanager
def _captured_stderr():
    """Collect what MLIR's C++ diagnostics handler writes to fd 2."""
    box = {"text": ""}
    try:
        fd = os.dup(2)
    except OSError:  # no real fd 2 (embedded interpreters): let diagnostics through
        yield box
        return
    # a named file inside a guarded child, so that the parent can read it after a crash
    with guard.diagnostics_file() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            os.dup2(fd, 2)
            os.close(fd)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")


def parse_triton(text: str, context=None, *, source_name: str = "input.mlir", trusted: bool = False):
    """Parse MLIR text (custom or generic form) into a Triton module; raise IRError with the
    parser's diagnostics on failure (`guard.TritonCrash` when Triton's parser crashed on it).
    Returns (module, context). `trusted`: the text is Triton's own print of a verified module."""
    if not trusted:
        _preflight(text, source_name)
    return _parse(text, context, source_name)


# Each preflight costs a fork plus a second parse: 19 ms for the 97-line lit input, 24 ms for the
# 1539-line one (in-process parses: 2 and 6 ms) in a process that has torch loaded, measured on
# the 2-core CI machine; normfuse.compile pays one per pass that changed the IR (Triton's own
# print and the final hand-back are trusted): 25-32 ms of a 0.6-1.3 s pre-norm compile. normfuse-opt runs all
# its work in one supervised child instead (`guard.supervised()`): one fork per run, no second
# parse.
_PREFLIGHT_TIMEOUT_S = guard.DEFAULT_TIMEOUT_S


def _preflight(text: str, source_name: str, clean: bool = False) -> None:
    """Parse (and clean up) `text` in a forked child first, so that a Triton crash on it raises
    TritonCrash here instead of killing this process. Text the child rejects is rejected here
    with the child's diagnostics, never parsed in this process: Triton's known crashes corrupt
    the heap on the error path, and a corrupted heap does not always crash at once."""
    if guard.supervised():
        return
    for attempt in (0, 1):
        try:
            error = guard.run_in_child(_probe, text, source_name, clean,
                                       timeout=_PREFLIGHT_TIMEOUT_S, relay_stderr=False)
            break
        except guard.ChildUnavailable as e:
            if not e.forked:  # no fork on this system: the parse runs in this process
                return
            # a child that sat idle (stuck on a lock another thread held at the fork, or
            # Triton's crash on this text waiting instead of aborting): once more in a fresh
            # child (a lock held at one fork is rarely held at the next). Twice idle: the text
            # is not parsed here (a crash on it would take this process down; seen on a loaded
            # CI machine, 2026-12-04). A child that hung while computing raised TritonCrash.
            if attempt:
                raise guard.TritonCrash(
                    f"two children parsing it sat idle for {_PREFLIGHT_TIMEOUT_S:g} s each",
                    [f"parsing {source_name}"], "", hung=True) from None
    if error is not None:
        raise IRError(error)


def _probe(text: str, source_name: str, clean: bool) -> str | None:
    try:
        mod, ctx = _parse(text, None, source_name)
        if clean:
            cleanup(mod, ctx)
    except IRError as e:
        return str(e)
    return None


def _parse(text: str, context, source_name: str):
    ir, _ = _libtriton()
    ctx = context or new_context()
    with tempfile.TemporaryDirectory(prefix="normfuse-") as d:
        path = os.path.join(d, os.path.basename(source_name) or "input.mlir")
        with open(path, "w") as f:
            f.write(text)
        rename = {path: source_name}
        with guard.section(f"parsing {source_name}", rename), _captured_stderr() as diag:
            try:
                mod = ir.parse_mlir_module(path, ctx)
            except RuntimeError:
                mod = None
        if mod is None:
            msg = diag["text"].replace(path, source_name).strip() or "MLIR parse failed"
            raise IRError(msg)
        mod.context = ctx
        mod.normfuse_tmp_prefix = d + os.sep
        with guard.section(f"verifying {source_name}", rename), _captured_stderr() as diag:
            ok = mod.verify()
        if not ok:
            raise IRError("verification failed:\n" + diag["text"].replace(path, source_name).strip())
    return mod, ctx


def cleanup(module, context) -> None:
    """Canonicalize + CSE + symbol DCE, in place (what removes the dead ops a rewrite leaves)."""
    ir, passes = _libtriton()
    pm = ir.pass_manager(context)
    passes.common.add_canonicalizer(pm)
    passes.common.add_cse(pm)
    passes.common.add_symbol_dce(pm)
    with guard.section("running Triton's cleanup (canonicalize, CSE, symbol DCE)"), \
            _captured_stderr() as diag:
        try:
            pm.run(module, "normfuse-cleanup")
        except RuntimeError as e:
            raise IRError(f"cleanup failed: {e}\n{diag['text']}") from None


def _type_strings(tmodule) -> list[tuple[str, list[str]]]:
    """(op name, result types) for every op, in MLIR's post-order walk."""
    out = []

    def visit(op):
        out.append((op.get_name(), [str(op.get_result(i).get_type()) for i in range(op.get_num_results())]))

    tmodule.walk(visit)
    return out


def _post_order(ops) -> list[Op]:
    out: list[Op] = []
    for op in ops:
        for r in op.regions:
            for b in r.blocks:
                out.extend(_post_order(b.ops))
        out.append(op)
    return out


def _read_type(text: str) -> str:
    """The first type in `text` (after a ':'), balanced over <...>."""
    t = text.lstrip().lstrip(":").lstrip()
    depth, end = 0, len(t)
    for i, ch in enumerate(t):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and ch in " ,){":
            end = i
            break
    return t[:end]


def _canon(name: str) -> str:
    return name[len("builtin."):] if name.startswith("builtin.") else name


def _annotate(view: Module, tmodule) -> None:
    """Give every value of `view` its type, read from Triton's module and the op text."""
    tops = _type_strings(tmodule)
    mine = _post_order(view.ops)
    # Align the two walks. MLIR elides an `scf.yield` without operands when printing (a loop
    # without results): Triton's walk has it, the printed text does not.
    # Likewise `ttg.warp_specialize.partitions`, the op that holds the worker partitions' regions
    # (printed as `partition0(...) {...}` of the warp_specialize op, not as an op of its own).
    pairs, j = [], 0
    for op in mine:
        while j < len(tops) and _canon(tops[j][0]) != _canon(op.name) and (
                (tops[j][0] == "scf.yield" and not tops[j][1])
                or tops[j][0] == "ttg.warp_specialize.partitions"):
            j += 1
        if j >= len(tops) or _canon(tops[j][0]) != _canon(op.name):
            raise IRError("internal: normfuse's view of the module disagrees with Triton's at "
                          f"'{op.name}' ({len(mine)} vs {len(tops)} ops)")
        pairs.append((op, tops[j][1]))
        j += 1
    if any(name != "scf.yield" for name, _ in tops[j:]):
        raise IRError("internal: Triton's module has ops that normfuse's view lacks")
    for op, types in pairs:
        if len(types) != len(op.results):
            raise IRError(f"internal: {op.name} has {len(types)} results, view has {len(op.results)}")
        for v, t in zip(op.results, types):
            v.type = t
    for op in view.walk():
        if not op.regions:
            continue
        entry = op.regions[0].blocks[0] if op.regions[0].blocks else None
        if entry is None or entry.label is not None or not entry.args:
            continue
        if op.name == "scf.for":
            iv_type = _read_type(_tail_after_last_colon(op))
            entry.args[0].type = iv_type
            for a, r in zip(entry.args[1:], op.results):
                a.type = r.type
        else:  # function-like: "%X: type"
            segs = op.head
            for k, s in enumerate(segs):
                if s in entry.args and k + 1 < len(segs) and isinstance(segs[k + 1], str):
                    s.type = _read_type(segs[k + 1])


def _tail_after_last_colon(op: Op) -> str:
    from .core import _render
    head = _render(op.head).rstrip()
    return head[head.rindex(":"):]


def load(text: str, *, source_name: str = "input.mlir", context=None, trusted: bool = False) -> Module:
    """Parse and verify `text` with Triton, then build normfuse's editable, typed view of it.
    `trusted`: `text` is Triton's own print of a module it verified (no crash preflight)."""
    tmod, ctx = parse_triton(text, context, source_name=source_name, trusted=trusted)
    view = Module(module_text(tmod))
    _annotate(view, tmod)
    view.context = ctx
    return view


def finish(view: Module, *, clean: bool = True, source_name: str = "normfuse-output.mlir",
           trusted: bool = False):
    """Hand an edited view back to Triton: parse + verify (+ cleanup). Returns the Triton module.
    `trusted`: the view is unedited since Triton printed it (`reload`), no crash preflight."""
    text = view.print()
    if not trusted:
        _preflight(text, source_name, clean)
    tmod, ctx = _parse(text, getattr(view, "context", None), source_name)
    if clean:
        cleanup(tmod, ctx)
    return tmod


def reload(view: Module, *, clean: bool = True) -> Module:
    """finish() and parse the result into a fresh typed view."""
    tmod = finish(view, clean=clean)
    new = Module(module_text(tmod))
    _annotate(new, tmod)
    new.context = getattr(view, "context", None)
    return new


def print_without_locations(text: str, *, source_name: str = "input.mlir") -> str:
    """Triton's print of `text` (Triton-printed, verified IR) without debug locations (no `#loc`
    lines, no `loc(...)`): what mlir-opt prints unless asked for -mlir-print-debuginfo."""
    tmod, _ = parse_triton(text, source_name=source_name, trusted=True)
    with guard.section(f"printing {source_name}"):
        return tmod.str_nodebug()


def module_text(tmodule) -> str:
    """Print a module; locations MLIR gave ops parsed from a temporary file lose its directory."""
    with guard.section("printing the module"):
        text = str(tmodule)
    prefix = getattr(tmodule, "normfuse_tmp_prefix", None)
    return text.replace(prefix, "") if prefix else text
