"""What the lit config and the pytest fallback runner (test/python/test_lit.py) share: the
tools the RUN lines name and where they come from.

- `normfuse-opt` -> this checkout's tools/normfuse-opt, run by the current Python (no install)
- `select-chunks` -> select_chunks.py here: the `// -----` chunks a RUN line's checks read
- `FileCheck`    -> Triton's bundled FileCheck binary; else the `filecheck` Python package;
                    else a system FileCheck
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOOL = os.path.join(REPO, "tools", "normfuse-opt")
SELECT_CHUNKS = os.path.join(HERE, "select_chunks.py")

# A tool name as a whole word: not part of a path, a file name or a longer flag.
_WORD = r"(?<![\w/.\-]){}(?![\w.\-])"


def filecheck_command() -> list[str] | None:
    spec = importlib.util.find_spec("triton")  # locate the wheel without importing triton
    if spec is not None and spec.submodule_search_locations:
        bundled = os.path.join(list(spec.submodule_search_locations)[0], "FileCheck")
        if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
            return [bundled]
    exe = shutil.which("filecheck")
    if exe:
        return [exe]
    if importlib.util.find_spec("filecheck") is not None:
        return [sys.executable, "-m", "filecheck"]
    exe = shutil.which("FileCheck")
    return [exe] if exe else None


def substitutions() -> list[tuple[str, str]]:
    """(regex, replacement) pairs, applied in order before lit's own %s, %t, ..."""
    subs = [(_WORD.format("normfuse-opt"), shlex.join([sys.executable, TOOL])),
            (_WORD.format("select-chunks"), shlex.join([sys.executable, SELECT_CHUNKS]))]
    fc = filecheck_command()
    if fc is not None:
        subs.append((_WORD.format("FileCheck"), shlex.join(fc)))
    return subs
