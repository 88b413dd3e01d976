"""Keep Triton's native crashes out of normfuse's process.

Triton's parser, verifier and passes are C++; on some malformed IR they do not report an error but
kill the process with a signal. Known case (Triton 3.6, docs/NOTES.md): `tt.expand_dims` with an
`axis` past the operand's rank writes out of bounds while inferring its result type and glibc
aborts ("double free or corruption") or the process segfaults, inside `parse_mlir_module`. A
signal cannot be caught in the process it kills, so the work that may hit one runs in a forked
child, and the parent turns the child's death into a `TritonCrash` (an `IRError`), which drivers
report like any other bad input.

- `run_in_child(fn, *args)` runs `fn` in a fork and returns its result (or re-raises its
  exception); a child killed by a signal raises `TritonCrash` with the signal, what was being done
  (the `section()` labels open at the time) and what Triton printed to stderr before dying.
- `section(label)` names what is being done; under a supervisor the labels reach the parent as
  they change, so a crash report can say "while parsing normfuse-output.mlir (in running pass
  'lazy-prenorm')".
- `send(obj)` streams a result to the parent before the child finishes (one per input chunk), so
  a crash in chunk 3 loses nothing of chunks 1 and 2.
- `diagnostics_file()` is where `bridge` captures Triton's stderr; under a supervisor it is a named
  file the parent reads after a crash.

Fork, not a fresh interpreter: a fork of the driver costs about 2 ms and inherits the imported
Triton, a fresh `python -c` that imports Triton about 150 ms (measured on the CI machine, 2 cores).
"""
from __future__ import annotations

import contextlib
import faulthandler
import os
import pickle
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
import warnings
from typing import Any, Callable

from .core import IRError

_HEADER = struct.Struct("<Q")


class TritonCrash(IRError):
    """Triton's native code died with a signal (or exited without an answer) in a child process."""

    def __init__(self, how: str, where: list[str], diagnostics: str, hung: bool = False):
        self.how = how
        self.where = list(where)
        self.diagnostics = diagnostics
        self.hung = hung
        super().__init__(self._message())

    def __reduce__(self):
        return (type(self), (self.how, self.where, self.diagnostics, self.hung))

    def _message(self) -> str:
        doing = self.where[-1] if self.where else "running Triton"
        doing = doing if doing.startswith("after ") else f"while {doing}"
        context = f" (in {' > '.join(self.where[:-1])})" if len(self.where) > 1 else ""
        what = "hung" if self.hung else "crashed"
        lines = [f"Triton {what} ({self.how}) {doing}{context}; normfuse caught it in a "
                 "child process"]
        diag = self.diagnostics.strip()
        if diag:
            lines.append("Triton's output before the crash:")
            lines.extend(diag.splitlines()[-20:])
        hint = known_bug_hint(diag)
        if hint:
            lines.append(hint)
        return "\n".join(lines)


class ChildUnavailable(RuntimeError):
    """The child could not be started (`forked` False), or it sat idle past the timeout (blocked,
    e.g. on a lock another thread held at the fork: not a Triton failure; `forked` True)."""

    def __init__(self, message: str, forked: bool = True):
        super().__init__(message)
        self.forked = forked

    def __reduce__(self):
        return (type(self), (str(self), self.forked))


# Seconds without a word from the child before it is killed (reset by every message it sends).
# A child that was computing is Triton looping on a corrupted heap (the crash of docs/NOTES.md
# does that at times instead of aborting): `TritonCrash(hung=True)`. "Computing": it used at
# least BUSY_SHARE of the timeout's wall time on the CPU. A child blocked on a lock spends ~0; a
# looping one on a loaded machine gets its share of the cores: on the 2-core CI machine with
# two test workers (torch's intra-op threads among them) that share fell below the 0.5 this
# threshold was, and the looping child was taken for a blocked one (whose text the preflight
# then parsed in the test process, which crashed: 2026-12-02).
BUSY_SHARE = 0.1
DEFAULT_TIMEOUT_S = float(os.environ.get("NORMFUSE_GUARD_TIMEOUT_S", "120"))


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live child (Linux /proc), None when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def known_bug_hint(diagnostics: str) -> str:
    """A pointer to docs/NOTES.md when the diagnostics show a Triton bug written down there."""
    for op in ("tt.expand_dims", "tt.reduce"):
        if f"'{op}' op inferred type" in diagnostics:
            return (f"known Triton 3.6 bug: {op} with an axis out of range writes out of bounds "
                    "while inferring its result type (docs/NOTES.md, 'Triton crashes on "
                    "malformed IR')")
    return ""


# ---------------------------------------------------------------------------------------------
# The child's side
# ---------------------------------------------------------------------------------------------

class _Child:
    def __init__(self, fd: int, directory: str):
        self.fd = fd
        self.dir = directory
        self.stack: list[str] = []
        self.renames: dict[str, str] = {}


_child: _Child | None = None  # set in a supervised child


def supervised() -> bool:
    """True inside `run_in_child`'s child: a crash here is already contained."""
    return _child is not None


def _write(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send(obj) -> None:
    """Stream `obj` to the parent's `on_message` (no-op outside a child)."""
    if _child is not None:
        _write(_child.fd, ("message", obj))


# What this process is doing, outside a child (`section`): a child forked from here reports its
# sections inside these (`_supervise`), so a crash in a nested child names the same context as
# one in the supervised child (normfuse-opt's fallback to this process when the child is
# unavailable).
_stack: list[str] = []


@contextlib.contextmanager
def section(label: str, rename: dict[str, str] | None = None):
    """Name what is being done; `rename` maps temporary paths in Triton's output to the names the
    user knows. Cheap outside a child (a list push)."""
    c = _child
    if c is None:
        _stack.append(label)
        try:
            yield
        finally:
            _stack.pop()
        return
    c.stack.append(label)
    if rename:
        c.renames.update(rename)  # kept: Triton's output may be read after the section
    _write(c.fd, ("where", list(c.stack), dict(c.renames)))
    try:
        yield
    finally:
        c.stack.pop()
        # a crash detected later (a corrupted heap is noticed at some later free) is reported
        # as "after" the last section
        _write(c.fd, ("where", list(c.stack) + [f"after {label}"], dict(c.renames)))


def diagnostics_file():
    """A binary file to point fd 2 at while Triton runs: named (readable after a crash) in a
    child, anonymous otherwise. The caller closes it."""
    if _child is not None:
        return open(os.path.join(_child.dir, "diagnostics"), "w+b")
    return tempfile.TemporaryFile(mode="w+b")


def _child_main(fd: int, directory: str, fn, args) -> None:
    global _child
    _child = _Child(fd, directory)
    code = 0
    # Everything the child writes to fd 2 outside `bridge`'s captures goes to a file the parent
    # reads: heap corruption is often detected only after the parse returned, and glibc's abort
    # message ("double free or corruption") must not reach the user ahead of the error report.
    # glibc writes that message to /dev/tty unless LIBC_FATAL_STDERR_ is set.
    os.environ["LIBC_FATAL_STDERR_"] = "1"
    # the crash is reported by the parent; Python's own dump (pytest enables faulthandler) would
    # show the child's Python stack, which says nothing about the input
    faulthandler.disable()
    with contextlib.suppress(OSError):
        err = os.open(os.path.join(directory, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(err, 2)
        os.close(err)
    try:
        try:
            result = ("return", fn(*args))
        except BaseException as e:  # noqa: BLE001 - every outcome goes back to the parent
            result = ("raise", e)
        try:
            _write(fd, result)
        except Exception as e:  # noqa: BLE001 - an unpicklable result or exception
            what = result[1] if result[0] == "raise" else e
            _write(fd, ("raise", RuntimeError(f"{type(what).__name__}: {what}")))
    except BaseException:  # noqa: BLE001 - the pipe is gone: the parent died
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


# ---------------------------------------------------------------------------------------------
# The parent's side
# ---------------------------------------------------------------------------------------------

def _signal_name(signum: int) -> str:
    try:
        return f"{signal.Signals(signum).name}, signal {signum}"
    except ValueError:
        return f"signal {signum}"


def run_in_child(fn: Callable[..., Any], *args, on_message: Callable[[Any], None] | None = None,
                 timeout: float | None = None, relay_stderr: bool = True):
    """`fn(*args)` in a forked child; returns its result or raises its exception.

    Raises `TritonCrash` when the child dies without answering (a signal, or an exit without a
    result) or spends `timeout` seconds without a message while computing (at least BUSY_SHARE
    of them on the CPU: a hang; it is killed, `hung=True`); `ChildUnavailable` when it cannot
    be forked or sits idle that long (killed too). Only the result (or exception) and `send()`'s messages are pickled. What the
    child wrote to stderr is written to this process's stderr afterwards (`relay_stderr`).
    """
    if _child is not None:  # already contained: no need for a second fork
        return fn(*args)
    directory = tempfile.mkdtemp(prefix="normfuse-guard-")
    try:
        return _supervise(directory, fn, args, on_message, timeout, relay_stderr)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _supervise(directory, fn, args, on_message, timeout, relay_stderr):
    r, w = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # no buffered text may be written twice
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork() in a process with threads (torch starts some). The
            # child runs only Triton's parser/verifier on a fresh MLIR context and leaves with
            # os._exit; a child stuck on a lock another thread held is killed by `timeout`.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError as e:
        os.close(r)
        os.close(w)
        raise ChildUnavailable(f"cannot fork: {e}", forked=False) from None
    if pid == 0:  # pragma: no cover - runs in the child (coverage does not follow forks)
        try:  # whatever happens, the child never returns into the caller's code
            os.close(r)
            _child_main(w, directory, fn, args)
        finally:
            os._exit(1)
    os.close(w)
    outer = list(_stack)  # the sections the child runs in
    where: list[str] = outer
    renames: dict[str, str] = {}
    outcome = None
    deadline = None if timeout is None else time.monotonic() + timeout
    cpu0 = _cpu_seconds(pid) or 0.0
    buf = bytearray()
    try:
        while True:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([r], [], [], left)[0]:
                    cpu = _cpu_seconds(pid)
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    pid = None
                    if cpu is not None and cpu - cpu0 >= BUSY_SHARE * timeout:
                        raise TritonCrash(f"no answer within {timeout:g} s while computing; killed",
                                          where, _read_diagnostics(directory, renames), hung=True)
                    raise ChildUnavailable(f"no answer from the child within {timeout:g} s")
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            if deadline is not None:  # every word from the child resets the clock
                deadline = time.monotonic() + timeout
                cpu0 = _cpu_seconds(pid) or cpu0
            buf += chunk
            while len(buf) >= _HEADER.size:
                (n,) = _HEADER.unpack_from(buf)
                if len(buf) < _HEADER.size + n:
                    break
                msg = pickle.loads(bytes(buf[_HEADER.size:_HEADER.size + n]))
                del buf[:_HEADER.size + n]
                if msg[0] == "where":
                    where, renames = outer + msg[1], msg[2]
                elif msg[0] == "message":
                    if on_message is not None:
                        on_message(msg[1])
                else:
                    outcome = msg
    except BaseException:
        if pid is not None:  # KeyboardInterrupt or a failing on_message: do not leave it running
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        raise
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    if outcome is not None:
        stray = _read(directory, "stderr")
        if stray and relay_stderr:
            sys.stderr.write(stray)
        if outcome[0] == "raise":
            raise outcome[1]
        return outcome[1]
    if os.WIFSIGNALED(status):
        how = _signal_name(os.WTERMSIG(status))
    else:
        how = f"exit status {os.WEXITSTATUS(status)} without an answer"
    raise TritonCrash(how, where, _read_diagnostics(directory, renames))


def _read(directory: str, name: str) -> str:
    try:
        with open(os.path.join(directory, name), "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _read_diagnostics(directory: str, renames: dict[str, str]) -> str:
    """What Triton printed in the capture that was open last, then anything else the child wrote
    to stderr (glibc's abort message when the corruption was detected after that capture)."""
    text = _read(directory, "diagnostics").rstrip("\n")
    stray = _read(directory, "stderr").strip("\n")
    text = "\n".join(t for t in (text, stray) if t)
    for path, name in renames.items():
        text = text.replace(path, name)
    return text
