"""select-chunks: some of a lit file's `// -----` chunks, for a RUN line whose checks read only them.

    select-chunks NAME[,NAME...] FILE            # the chunks of these functions
    select-chunks --except NAME[,NAME...] FILE   # every chunk but these

prints FILE with the chunks chosen by the name of their function (`tt.func ... @NAME(`), in FILE's
order, each on the lines it has in FILE: the lines of the other chunks, and their `// -----`
lines, are left blank. A RUN line pipes them into normfuse-opt, which then lowers only what its
checks read, and reports what it reports on the whole file, at the same lines
(`<stdin>:LINE:COL`; an error's "(chunk at line N)" too, but for the first chunk kept, which
starts the input):

    // RUN: select-chunks a,b %s | normfuse-opt --split-input-file --pass-pipeline=p - | FileCheck ...

The checks see the same output of each chunk that is kept; leave out only chunks in which no
check of that RUN line matches and which no CHECK-NOT of it scans (one between two matches
scans the output between them; a CHECK-NOT after the last match, to the end).

Exit status 2 (usage) when a NAME names no chunk, or a chunk has no function or one of a name
another chunk has. lit (lit.cfg.py) and test_lit.py's runner substitute `select-chunks` with this
script (normfuse_lit.substitutions).
"""
from __future__ import annotations

import re
import sys

# normfuse-opt's chunk separator (normfuse/cli.py, _SPLIT_RE), kept in step by hand: this script
# runs without importing normfuse
_SPLIT = re.compile(r"\s*//\s*-----\s*")
_FUNC = re.compile(r"^\s*tt\.func\s+(?:public\s+|private\s+)?@([\w$.-]+)\(", re.M)


class UsageError(Exception):
    pass


def chunks(lines: list[str]) -> list[tuple[int, int]]:
    """[(first line, end line)] of each chunk (0-based, end exclusive: the separator's line)."""
    out, start = [], 0
    for i, line in enumerate(lines):
        if _SPLIT.fullmatch(line.rstrip("\r\n")):
            out.append((start, i))
            start = i + 1
    out.append((start, len(lines)))
    return out


def select(text: str, names: list[str], keep: bool = True) -> str:
    """`text` with only the chunks of the functions `names` (all but them: `keep` False), each on
    its own lines."""
    lines = text.splitlines(keepends=True)
    spans = chunks(lines)
    owner: dict[str, int] = {}
    for k, (a, b) in enumerate(spans):
        funcs = _FUNC.findall("".join(lines[a:b]))
        if len(funcs) != 1:
            raise UsageError(f"chunk {k} (line {a + 1}) has {len(funcs)} functions: {funcs}")
        if funcs[0] in owner:
            raise UsageError(f"@{funcs[0]} is in chunks {owner[funcs[0]]} and {k}")
        owner[funcs[0]] = k
    missing = [n for n in names if n not in owner]
    if missing:
        raise UsageError(f"no chunk holds @{', @'.join(missing)} (there are: {', '.join(owner)})")
    chosen = {owner[n] for n in names}
    kept = sorted(chosen if keep else set(range(len(spans))) - chosen)
    if not kept:
        raise UsageError("no chunk left")
    out = ["\n"] * len(lines)
    for k in kept:
        a, b = spans[k]
        out[a:b] = lines[a:b]
        if k != kept[0]:
            out[a - 1] = lines[a - 1]  # its separator: the chunk starts on its line
    return "".join(out)


def main(argv: list[str]) -> int:
    keep = True
    if argv[:1] == ["--except"]:
        keep, argv = False, argv[1:]
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    names, path = [n.lstrip("@") for n in argv[0].split(",") if n], argv[1]
    try:
        with open(path, encoding="utf-8") as f:
            sys.stdout.write(select(f.read(), names, keep))
    except (OSError, UsageError) as e:
        print(f"select-chunks: {path}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
