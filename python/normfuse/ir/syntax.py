"""Lexical rules of MLIR's printed form that the IR layer needs beyond `core`'s line parser:
where an op's attributes are, and how to read and write them.

An op's own text (head and tail, see `core.Op`) holds attributes in three shapes:

- attribute dictionaries, `{axis = 1 : i32}` or `attributes {noinline = false}`;
- properties of the generic form, `<{axis = 1 : i32}>` (`"tt.reduce"(%x) <{axis = 1 : i32}> (...)`);
- keywords of a custom assembly format, `cacheModifier = cg` (tt.load).

Only entries at the top level of the op's text count: `{tt.divisibility = 16 : i32}` on a
function argument sits inside the argument list and belongs to the argument. The scanner tracks
(), [], <>, {} and string literals, and reads `->` as an arrow, not a closing bracket, so values
such as `array<i32: 0, 1>`, `"=r,r"` or `dense<1.0> : tensor<4xf32>` are read whole (a regex that
stops at ',' or '>' does not).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_OPEN = {"(": ")", "[": "]", "<": ">", "{": "}"}
_CLOSE = set(_OPEN.values())
_KEY_RE = re.compile(r'("(?:[^"\\]|\\.)*"|[A-Za-z_][\w.$\-]*)\s*(=)?\s*')
_KEYWORD_RE = re.compile(r"([A-Za-z_][\w.$]*)\s*=\s*(?![=\s]*[%{(<])")


@dataclass(frozen=True)
class Attr:
    """A printed attribute value: `3 : i32`, `cg`, `true`, `"=r,r"`, `array<i32: 0, 1>`."""

    text: str

    @property
    def int(self) -> int | None:
        """`3 : i32` or `3` -> 3; anything else -> None."""
        m = re.fullmatch(r"\s*(-?\d+)\s*(?::\s*[a-z]\d+\s*)?", self.text)
        return int(m.group(1)) if m else None

    @property
    def bool(self) -> bool | None:
        t = self.text.strip()
        return True if t == "true" else False if t == "false" else None

    @property
    def str(self) -> str | None:
        """The contents of a string attribute, unescaped; None for other kinds."""
        t = self.text.strip()
        if len(t) < 2 or t[0] != '"' or t[-1] != '"':
            return None
        return re.sub(r"\\(.)", r"\1", t[1:-1])

    def __str__(self) -> str:
        return self.text


def int_attr(value: int, width: int = 32) -> str:
    return f"{int(value)} : i{width}"


def str_attr(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bool_attr(value: bool) -> str:
    return "true" if value else "false"


# ---------------------------------------------------------------------------------------------
# Scanning
# ---------------------------------------------------------------------------------------------

def _string_end(text: str, i: int) -> int:
    """Index past the string literal that starts at text[i] == '"'."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return j + 1
        j += 1
    return len(text)


def _matching(text: str, i: int) -> int:
    """Index past the bracket group opened at text[i]."""
    stack = [_OPEN[text[i]]]
    j = i + 1
    while j < len(text) and stack:
        ch = text[j]
        if ch == '"':
            j = _string_end(text, j)
            continue
        if ch == "-" and text.startswith("->", j):
            j += 2
            continue
        if ch in _OPEN:
            stack.append(_OPEN[ch])
        elif ch in _CLOSE:
            if ch == stack[-1]:
                stack.pop()
        j += 1
    return j


def top_level_mask(text: str) -> list[bool]:
    """For each character, whether it is at bracket depth 0 and outside string literals.
    Unbalanced closers (the tail of a generic op starts with ')') are ignored."""
    mask = [False] * len(text)
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = _string_end(text, i)
            i = j
            continue
        if ch == "-" and text.startswith("->", i):
            if depth == 0:
                mask[i] = mask[i + 1] = True
            i += 2
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
            i += 1
            continue
        if depth == 0:
            mask[i] = True
        i += 1
    return mask


@dataclass(frozen=True)
class Span:
    """Where an attribute group or entry sits in an op's text: [start, end)."""

    kind: str  # "dict" ({...}), "props" (<{...}>), "keyword" (key = value)
    start: int
    end: int


def groups(text: str) -> list[Span]:
    """The attribute dictionaries, property dictionaries and keyword attributes at the top level
    of `text`, in order."""
    out: list[Span] = []
    depth = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if ch == "-" and text.startswith("->", i):
            i += 2
            continue
        if depth == 0 and ch == "<" and text.startswith("<{", i):
            j = _matching(text, i)
            out.append(Span("props", i, j))
            i = j
            continue
        if depth == 0 and ch == "{":
            j = _matching(text, i)
            out.append(Span("dict", i, j))
            i = j
            continue
        if depth == 0 and (ch.isalpha() or ch == "_") and (i == 0 or text[i - 1] in " \t,"):
            m = _KEYWORD_RE.match(text, i)
            if m:
                v = re.match(r"[^\s{},:]+", text[m.end():])
                if v:
                    out.append(Span("keyword", i, m.end() + v.end()))
                    i = m.end() + v.end()
                    continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        i += 1
    return out


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` characters outside brackets and strings."""
    mask = top_level_mask(text)
    parts, start = [], 0
    for i, ch in enumerate(text):
        if ch == sep and mask[i]:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def dict_entries(inner: str) -> list[tuple[str, str | None, int, int]]:
    """Entries of a dictionary's inside: (key, value text or None for a unit attribute,
    start, end) with offsets into `inner`."""
    out = []
    mask = top_level_mask(inner)
    start = 0
    cuts = [i for i, ch in enumerate(inner) if ch == "," and mask[i]] + [len(inner)]
    for cut in cuts:
        part = inner[start:cut]
        lead = len(part) - len(part.lstrip())
        body = part.strip()
        if body:
            m = _KEY_RE.match(body)
            if m:
                key = m.group(1)
                if key.startswith('"'):
                    key = Attr(key).str or key
                value = body[m.end():].strip() if m.group(2) else None
                out.append((key, value, start + lead, start + lead + len(body)))
        start = cut + 1
    return out


def read_attrs(text: str) -> dict[str, Attr]:
    """Every attribute at the top level of an op's text (dictionaries, properties, keywords)."""
    out: dict[str, Attr] = {}
    for g in groups(text):
        if g.kind == "keyword":
            key, _, value = text[g.start:g.end].partition("=")
            out[key.strip()] = Attr(value.strip())
            continue
        open_len = 2 if g.kind == "props" else 1
        inner = text[g.start + open_len:g.end - open_len]
        for key, value, _, _ in dict_entries(inner):
            out[key] = Attr(value if value is not None else "unit")
    return out


def set_attr_text(text: str, key: str, value: str, *, where: str = "before-colon") -> str | None:
    """`text` with attribute `key` set to `value`: replaced in place where it is, else added to
    the first attribute dictionary, else (where="before-colon") a new dictionary put before the
    first top-level ' : ' (the custom form's `attr-dict : type`), or (where="end") appended
    before a trailing location. Returns None when there is no place for it."""
    for g in groups(text):
        if g.kind == "keyword":
            k, eq, _ = text[g.start:g.end].partition("=")
            if k.strip() == key:
                return text[:g.start] + f"{key} = {value}" + text[g.end:]
            continue
        open_len = 2 if g.kind == "props" else 1
        inner = text[g.start + open_len:g.end - open_len]
        for k, _, s, e in dict_entries(inner):
            if k == key:
                a = g.start + open_len + s
                return text[:a] + f"{key} = {value}" + text[g.start + open_len + e:]
    for g in groups(text):
        if g.kind == "dict":
            inner = text[g.start + 1:g.end - 1]
            sep = ", " if inner.strip() else ""
            return text[:g.end - 1].rstrip() + f"{sep}{key} = {value}" + text[g.end - 1:]
    entry = f"{{{key} = {value}}}"
    if where == "before-colon":
        cut = type_colon(text)
        if cut is None:
            return None
        return text[:cut].rstrip() + f" {entry} " + text[cut:]
    if where == "end":
        loc = location_start(text)
        head = text[:loc].rstrip()
        return head + f" {entry}" + (" " + text[loc:].lstrip() if loc < len(text) else "")
    return None


def insert_keyword(text: str, key: str, value: str) -> str | None:
    """Set keyword attribute `key = value` of a custom format (tt.load's `cacheModifier = cg`):
    replaced where it is, else put before the attribute dictionary or the type colon."""
    for g in groups(text):
        if g.kind == "keyword" and text[g.start:g.end].partition("=")[0].strip() == key:
            return text[:g.start] + f"{key} = {value}" + text[g.end:]
    cut = type_colon(text)
    for g in groups(text):
        if g.kind == "dict" and (cut is None or g.start < cut):
            cut = g.start
            break
    if cut is None:
        return None
    return text[:cut].rstrip() + f" {key} = {value} " + text[cut:].lstrip()


def type_colon(text: str) -> int | None:
    """Index of the first ' : ' at the top level (the start of the custom form's type list)."""
    mask = top_level_mask(text)
    for i, ch in enumerate(text):
        if ch == ":" and mask[i] and (i == 0 or text[i - 1] == " ") and (
                i + 1 == len(text) or text[i + 1] == " "):
            return i
    return None


_LOC_RE = re.compile(r"loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\s*$")


def location_start(text: str) -> int:
    """Index where a trailing `loc(...)` starts (len(text) when there is none)."""
    m = _LOC_RE.search(text.rstrip())
    return m.start() if m else len(text)


def first_string(text: str) -> str | None:
    """The contents of the first string literal in `text`, unescaped (an inline asm's body)."""
    i = text.find('"')
    if i < 0:
        return None
    return Attr(text[i:_string_end(text, i)]).str
