"""A small, mutable SSA view of Triton's printed MLIR (TTIR/TTGIR custom form).

Triton 3.6's Python bindings can parse, print, verify and run passes on a module, but they
cannot erase, move or clone a single operation, nor list the users of a value. normfuse
therefore rewrites the *printed* module: Triton prints it (always in its own custom form), this
module parses that text into ops, blocks and regions whose operands are real `Value` objects
(resolved with MLIR's scoping rules), the passes edit that structure, and the result is printed
and handed back to Triton, which parses and verifies it (`normfuse.ir.bridge`).

An op keeps its own text as *segments*: literal strings interleaved with `Value` references, so
renaming or replacing a value never touches text by hand. Every op and value is owned by exactly
one block; the printer renders names from the values, never from stale strings.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

# An SSA name as MLIR prints it, with an optional result-group index (%x#1).
_NAME = r"%[A-Za-z0-9_.$\-]+"
_USE_RE = re.compile(rf"({_NAME})(#\d+)?")
_RESULTS_RE = re.compile(rf"^\s*((?:{_NAME}(?::\d+)?)(?:\s*,\s*{_NAME}(?::\d+)?)*)\s*=\s*(?!=)")
_OPNAME_RE = re.compile(r'^\s*(?:"([^"]+)"|([A-Za-z_][\w$.]*))')
_LABEL_RE = re.compile(r"^\s*\^[\w.$\-]+")
_LOC_RE = re.compile(r"loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)\s*$")


class IRError(Exception):
    """The text is not Triton-printed MLIR that this view understands, or an edit is invalid."""


class Value:
    """An SSA value: an op result or a block argument."""

    __slots__ = ("name", "type", "owner", "index", "block", "gidx")

    def __init__(self, name: str, type: str = "", owner: "Op | None" = None, index: int = 0,
                 block: "Block | None" = None, gidx: int | None = None):
        self.name = name  # the result group's name ("%x" for %x:3) or the block argument's name
        self.type = type
        self.owner = owner  # defining op (results) or None (block arguments)
        self.index = index  # result number of the op, or argument number of the block
        self.block = block  # owning block (block arguments)
        self.gidx = index if gidx is None else gidx  # position inside the result group

    @property
    def is_block_arg(self) -> bool:
        return self.owner is None

    def ref(self) -> str:
        """How a use of this value is printed: %x, or %x#i for a member of a group %x:n."""
        if self.owner is not None and _group_size(self.owner, self.name) > 1:
            return f"{self.name}#{self.gidx}"
        return self.name

    def __repr__(self) -> str:
        return f"<Value {self.ref()} : {self.type}>"


class Block:
    __slots__ = ("label", "args", "arg_suffixes", "ops", "parent")

    def __init__(self, parent: "Region | None" = None):
        self.label: str | None = None  # e.g. "^bb0"; None for an entry block printed without label
        self.args: list[Value] = []
        self.arg_suffixes: list[str] = []  # text after "%name" in the label (": f32 loc(...)")
        self.ops: list[Op] = []
        self.parent = parent

    @property
    def parent_op(self) -> "Op | None":
        return self.parent.parent if self.parent is not None else None

    @property
    def terminator(self) -> "Op":
        return self.ops[-1]

    def index_of(self, op: "Op") -> int:
        for i, o in enumerate(self.ops):
            if o is op:
                return i
        raise IRError(f"{op.name} is not in this block")


class Region:
    __slots__ = ("blocks", "parent", "open_text", "opener")

    def __init__(self, parent: "Op"):
        self.blocks: list[Block] = []
        self.parent = parent
        self.open_text = ""  # text that closes the previous region and opens this one ("} else {")
        # a region introduced on its own line by a keyword (`case 2 {`, `default {`,
        # `partition0(%a: i32) num_warps(4) {`): that line's segments, without the brace
        self.opener: list | None = None


@dataclass
class Op:
    """One operation. `head` and `tail` are segment lists (str | Value)."""

    name: str
    results: list[Value] = field(default_factory=list)
    head: list = field(default_factory=list)  # text after "results = " up to the region opening
    regions: list[Region] = field(default_factory=list)
    tail: list = field(default_factory=list)  # text after the last region closes
    block: Block | None = None

    # -- structure ---------------------------------------------------------------------------
    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other) -> bool:
        return self is other

    def _own_defs(self) -> set[int]:
        return set(id(a) for r in self.regions[:1] for b in r.blocks[:1] for a in b.args)

    @property
    def operands(self) -> list[Value]:
        """Values used by this op's own text (not by ops nested in its regions)."""
        defs = self._own_defs()
        return [s for s in itertools.chain(self.head, self.tail)
                if isinstance(s, Value) and id(s) not in defs]

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise IRError(f"{self.name} has {len(self.results)} results")
        return self.results[0]

    @property
    def parent_op(self) -> "Op | None":
        return self.block.parent_op if self.block is not None else None

    def body(self, region: int = 0) -> Block:
        return self.regions[region].blocks[0]

    def walk(self) -> Iterator["Op"]:
        """Pre-order walk of this op and all ops nested in it."""
        yield self
        for r in self.regions:
            for b in r.blocks:
                for o in list(b.ops):
                    yield from o.walk()

    def is_ancestor_of(self, other: "Op") -> bool:
        o = other
        while o is not None:
            if o is self:
                return True
            o = o.parent_op
        return False

    @property
    def text(self) -> str:
        """The op's own text (head + tail) with operands rendered; regions elided."""
        return _render(self.head) + (" {...}" if self.regions else "") + _render(self.tail)

    @property
    def loc(self) -> str:
        """The trailing `loc(...)` of the op, or `loc(unknown)`."""
        m = _LOC_RE.search(_render(self.tail if self.regions else self.head).rstrip())
        return m.group(0).strip() if m else "loc(unknown)"

    def attr(self, key: str) -> str | None:
        """The printed value of attribute `key` of this op (`"1 : i32"`), or None; typed access
        is `normfuse.ir.ops.attr`."""
        from .syntax import read_attrs
        a = read_attrs(self.text).get(key)
        return a.text if a is not None else None

    def __repr__(self) -> str:
        res = ", ".join(r.ref() for r in self.results)
        return f"<Op {res + ' = ' if res else ''}{self.name}>"


def _group_size(op: "Op", name: str) -> int:
    return sum(1 for r in op.results if r.name == name)


def _result_groups(op: "Op") -> list[tuple[str, int]]:
    groups: list[tuple[str, int]] = []
    for r in op.results:
        if groups and groups[-1][0] == r.name:
            groups[-1] = (r.name, groups[-1][1] + 1)
        else:
            groups.append((r.name, 1))
    return groups


def _render(segs: Iterable) -> str:
    return "".join(s.ref() if isinstance(s, Value) else s for s in segs)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

class _Scope:
    def __init__(self, parent: "_Scope | None"):
        self.parent = parent
        self.names: dict[str, Value] = {}

    def lookup(self, name: str) -> Value | None:
        s = self
        while s is not None:
            v = s.names.get(name)
            if v is not None:
                return v
            s = s.parent
        return None


def _split_results(line: str) -> tuple[list[tuple[str, int]], str]:
    m = _RESULTS_RE.match(line)
    if not m:
        return [], line.strip()
    groups = []
    for part in m.group(1).split(","):
        part = part.strip()
        if ":" in part:
            name, n = part.split(":")
            groups.append((name, int(n)))
        else:
            groups.append((part, 1))
    return groups, line[m.end():].strip()


def _segments(text: str, scope: _Scope, defs: dict[str, Value] | None = None,
              lineno: int = 0) -> list:
    """Split `text` into literal strings and Values. Names in `defs` are definitions."""
    segs: list = []
    pos = 0
    strings = _string_spans(text)
    for m in _USE_RE.finditer(text):
        if _inside(m.start(), strings):  # e.g. "%r" in an inline-asm string
            continue
        name, grp = m.group(1), m.group(2)
        if defs is not None and name in defs and not grp:
            v = defs[name]
        else:
            key = name + (grp or "")
            v = scope.lookup(key)
            if v is None:
                raise IRError(f"line {lineno}: use of undefined value {key}")
        if m.start() > pos:
            segs.append(text[pos:m.start()])
        segs.append(v)
        pos = m.end()
    if pos < len(text):
        segs.append(text[pos:])
    return segs


_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')


def _string_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of the string literals in `text`."""
    return [(m.start(), m.end()) for m in _STRING_RE.finditer(text)] if '"' in text else []


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


# Block arguments defined in a region op's head: "%k = " (scf.for iv and iter_args) or
# "%X: " (function arguments, no space before the colon).
# A line that opens a further region of the preceding op by a keyword (MLIR prints the regions of
# scf.index_switch and ttg.warp_specialize this way).
_KEYWORD_REGION_RE = re.compile(r"^\s*(?:case\s+-?\d+|default|partition\d+)\b")

_HEAD_DEF_RE = re.compile(rf"({_NAME})(?:\s*=(?!=)|:(?=\s))")


class Module:
    """A parsed module: text before/after the top-level op (location aliases) and its ops."""

    def __init__(self, text: str):
        self.prefix: list[str] = []
        self.suffix: list[str] = []
        self.ops: list[Op] = []
        self._fresh = itertools.count()
        self._parse(text)

    # -- parsing -------------------------------------------------------------------------------
    def _parse(self, text: str, outer: "_Scope | None" = None) -> None:
        lines = text.splitlines()
        top = Block(None)
        self._top = top
        stack: list[tuple[Op, Region, Block, _Scope]] = []  # open regions
        scope = _Scope(outer)
        seen_op = False
        i = 0
        while i < len(lines):
            raw = lines[i]
            lineno = i + 1
            i += 1
            s = raw.strip()
            if not s:
                continue
            if not stack and (s.startswith("#") or s.startswith("!")) and "=" in s:
                (self.suffix if seen_op else self.prefix).append(raw)
                continue
            if s.startswith("}"):
                if not stack:
                    raise IRError(f"line {lineno}: unbalanced '}}'")
                op, region, block, rscope = stack.pop()
                rest = s[1:]
                if rest.rstrip().endswith("{"):  # next region of the same op
                    nregion = Region(op)
                    nregion.open_text = rest.rstrip()[:-1]
                    op.regions.append(nregion)
                    nblock = Block(nregion)
                    nregion.blocks.append(nblock)
                    nscope = _Scope(rscope.parent)
                    stack.append((op, nregion, nblock, nscope))
                else:
                    op.tail = _segments(rest, rscope.parent, lineno=lineno)
                continue
            if _LABEL_RE.match(s):
                if not stack:
                    raise IRError(f"line {lineno}: block label outside a region")
                op, region, block, rscope = stack[-1]
                if block.ops or block.label is not None or block.args:
                    block = Block(region)
                    region.blocks.append(block)
                    stack[-1] = (op, region, block, rscope)
                self._parse_label(s, block, rscope, lineno)
                continue
            if _KEYWORD_REGION_RE.match(s) and s.endswith("{"):
                # a further region of the op before it (scf.index_switch, ttg.warp_specialize)
                parent_block = stack[-1][2] if stack else top
                if not parent_block.ops:
                    raise IRError(f"line {lineno}: region keyword without an operation: {s[:80]!r}")
                op = parent_block.ops[-1]
                if not op.regions:  # MLIR ends the op's own line with a space here
                    op.head.append(" ")
                cur_scope = stack[-1][3] if stack else scope
                region = Region(op)
                op.regions.append(region)
                block = Block(region)
                region.blocks.append(block)
                rscope = _Scope(cur_scope)
                text = s[:-1]
                defs = {}
                strings = _string_spans(text)
                for dm in _HEAD_DEF_RE.finditer(text):
                    if _inside(dm.start(), strings):
                        continue
                    v = Value(dm.group(1), block=block, index=len(block.args))
                    defs[dm.group(1)] = v
                    block.args.append(v)
                    block.arg_suffixes.append("")
                    rscope.names[dm.group(1)] = v
                region.opener = _segments(text, cur_scope, defs, lineno)
                stack.append((op, region, block, rscope))
                continue
            # an operation
            groups, body = _split_results(raw)
            m = _OPNAME_RE.match(body)
            if not m:
                raise IRError(f"line {lineno}: cannot read an operation in {s[:80]!r}")
            name = m.group(1) or m.group(2)
            op = Op(name=name)
            cur_scope = stack[-1][3] if stack else scope
            for gname, n in groups:
                for k in range(n):
                    op.results.append(Value(gname, owner=op, index=len(op.results), gidx=k))
            opens = body.rstrip().endswith("{")
            parent_block = stack[-1][2] if stack else top
            if opens:
                head_text = body.rstrip()[:-1]
                region = Region(op)
                op.regions.append(region)
                block = Block(region)
                region.blocks.append(block)
                rscope = _Scope(cur_scope)
                defs: dict[str, Value] = {}
                strings = _string_spans(head_text)
                for dm in _HEAD_DEF_RE.finditer(head_text):
                    if _inside(dm.start(), strings):
                        continue
                    v = Value(dm.group(1), block=block, index=len(block.args))
                    defs[dm.group(1)] = v
                    block.args.append(v)
                    block.arg_suffixes.append("")
                    rscope.names[dm.group(1)] = v
                op.head = _segments(head_text, cur_scope, defs, lineno)
                stack.append((op, region, block, rscope))
            else:
                op.head = _segments(body, cur_scope, lineno=lineno)
            op.block = parent_block
            parent_block.ops.append(op)
            seen_op = True
            self._bind_results(op, cur_scope)
        if stack:
            raise IRError("unterminated region at end of input")
        self.ops = top.ops

    def _parse_label(self, s: str, block: Block, rscope: _Scope, lineno: int) -> None:
        m = re.match(r"^\s*(\^[\w.$\-]+)\s*(?:\((.*)\))?\s*:\s*$", s)
        if not m:
            raise IRError(f"line {lineno}: cannot read block label {s!r}")
        block.label = m.group(1)
        args = m.group(2) or ""
        for part in _split_top_level(args):
            am = re.match(rf"^\s*({_NAME})(.*)$", part, re.S)
            if not am:
                raise IRError(f"line {lineno}: cannot read block argument {part!r}")
            v = Value(am.group(1), block=block, index=len(block.args))
            t = re.match(r"\s*:\s*([^ ]+(?:<[^>]*>)?)", am.group(2))
            v.type = t.group(1) if t else ""
            block.args.append(v)
            block.arg_suffixes.append(am.group(2))
            rscope.names[am.group(1)] = v

    @staticmethod
    def _bind_results(op: Op, scope: _Scope) -> None:
        for r in op.results:
            scope.names[r.ref()] = r

    # -- printing ------------------------------------------------------------------------------
    def print(self) -> str:
        out = list(self.prefix)
        for op in self.ops:
            self._print_op(op, 0, out)
        out.extend(self.suffix)
        return "\n".join(out) + "\n"

    __str__ = print

    def _print_op(self, op: Op, depth: int, out: list[str]) -> None:
        ind = "  " * depth
        res = ""
        if op.results:
            res = ", ".join(n if c == 1 else f"{n}:{c}" for n, c in _result_groups(op)) + " = "
        if not op.regions:
            out.append(f"{ind}{res}{_render(op.head)}")
            return
        if op.regions[0].opener is not None:  # regions introduced by keywords, one per line
            out.append(f"{ind}{res}{_render(op.head)}")
            for region in op.regions:
                out.append(f"{ind}{_render(region.opener)}{{")
                for block in region.blocks:
                    self._print_block(block, depth, out)
                out.append(f"{ind}}}")
            out[-1] += _render(op.tail)
            return
        out.append(f"{ind}{res}{_render(op.head)}{{")
        for ri, region in enumerate(op.regions):
            if ri > 0:
                out.append(f"{ind}}}{region.open_text}{{")
            for block in region.blocks:
                self._print_block(block, depth, out)
        out.append(f"{ind}}}{_render(op.tail)}")

    def _print_block(self, block: Block, depth: int, out: list[str]) -> None:
        ind = "  " * depth
        if block.label is not None:
            args = ", ".join(a.name + sfx for a, sfx in zip(block.args, block.arg_suffixes))
            out.append(f"{ind}{block.label}({args}):" if block.args else f"{ind}{block.label}:")
        for o in block.ops:
            self._print_op(o, depth + 1, out)

    # -- queries -------------------------------------------------------------------------------
    def walk(self) -> Iterator[Op]:
        for op in list(self.ops):
            yield from op.walk()

    def functions(self) -> list[Op]:
        return [o for o in self.walk() if o.name == "tt.func"]

    def users(self, value: Value) -> list[Op]:
        """Ops whose own text uses `value` (ops nested in a user's regions are listed themselves)."""
        return [o for o in self.walk() if any(s is value for s in o.operands)]

    def user_index(self) -> dict[int, list[Op]]:
        """id(value) -> users, for many queries at once."""
        idx: dict[int, list[Op]] = {}
        for o in self.walk():
            for s in o.operands:
                if isinstance(s, Value):
                    lst = idx.setdefault(id(s), [])
                    if not lst or lst[-1] is not o:
                        lst.append(o)
        return idx

    # -- editing -------------------------------------------------------------------------------
    def fresh_name(self, hint: str = "nf") -> str:
        hint = re.sub(r"[^A-Za-z0-9_]", "_", hint.lstrip("%")) or "v"
        if not hint[0].isalpha():  # MLIR: a name that starts with a digit must be all digits
            hint = "v" + hint
        return f"%{hint}_nf{next(self._fresh)}"

    def replace_all_uses(self, old: Value, new: Value, *, where: Callable[[Op], bool] | None = None) -> int:
        n = 0
        for o in self.walk():
            if where is not None and not where(o):
                continue
            own = o._own_defs()
            for segs in (o.head, o.tail):
                for k, s in enumerate(segs):
                    if s is old and id(s) not in own:
                        segs[k] = new
                        n += 1
        return n

    def rename_fresh(self, op: Op) -> None:
        """Give `op`'s results and everything defined inside it fresh names (before moving ops
        into a scope where their names could clash)."""
        for o in op.walk():
            fresh: dict[str, str] = {}
            for r in o.results:
                if r.name not in fresh:
                    fresh[r.name] = self.fresh_name(_hint(r))
                r.name = fresh[r.name]
            for region in o.regions:
                for block in region.blocks:
                    for a in block.args:
                        a.name = self.fresh_name(_hint(a))

    def erase(self, op: Op) -> None:
        """Erase `op` (and what is nested in it). Its results must be unused outside it."""
        inside = set(id(o) for o in op.walk())
        for r in op.results:
            for u in self.users(r):
                if id(u) not in inside:
                    raise IRError(f"cannot erase {op!r}: {r.ref()} is still used by {u!r}")
        op.block.ops.remove(op)
        op.block = None

    def detach(self, op: Op) -> Op:
        op.block.ops.remove(op)
        op.block = None
        return op

    def insert(self, op: Op, *, before: Op | None = None, after: Op | None = None,
               at_end: Block | None = None) -> Op:
        if op.block is not None:
            self.detach(op)
        if before is not None:
            blk = before.block
            blk.ops.insert(blk.index_of(before), op)
        elif after is not None:
            blk = after.block
            blk.ops.insert(blk.index_of(after) + 1, op)
        elif at_end is not None:
            blk = at_end
            blk.ops.append(op)
        else:
            raise IRError("insert needs a position")
        op.block = blk
        return op

    def build(self, template: str, *args: Value, types: Iterable[str] = (), hint: str = "nf") -> Op:
        """Make a new (unattached) op from one line of text.

        `template` is the op text after "%r = ", with `$0`, `$1`, ... standing for `args`, e.g.
        ``build("arith.mulf $0, $1 : tensor<128xf32> loc(#loc3)", x, y, types=["tensor<128xf32>"])``.
        Multi-line templates (ops with regions) may define their own block arguments as `%name`;
        they are renamed fresh.
        """
        types = list(types)
        scope = _Scope(None)
        placeholders = {}
        for k, a in enumerate(args):
            ph = f"%__arg{k}"
            placeholders[ph] = a
            scope.names[ph] = a
        text = re.sub(r"\$(\d+)", lambda m: f"%__arg{m.group(1)}", template)
        # rename template-local definitions so they stay unique in the module
        local = set(re.findall(rf"({_NAME})(?=:\s)", text)) | set(
            re.findall(rf"^\s*({_NAME})\s*=", text, re.M))
        for name in sorted(local, key=len, reverse=True):
            if name.startswith("%__arg"):
                continue
            text = re.sub(re.escape(name) + r"(?![\w.$\-])", self.fresh_name(hint), text)
        if len(types) == 0:
            line = text
        elif len(types) == 1:
            line = f"{self.fresh_name(hint)} = {text}"
        else:
            line = f"{self.fresh_name(hint)}:{len(types)} = {text}"
        sub = Module.__new__(Module)
        sub.prefix, sub.suffix, sub.ops, sub._fresh = [], [], [], self._fresh
        sub._parse(line, scope)
        if len(sub.ops) != 1:
            raise IRError(f"template must make exactly one op: {template!r}")
        op = sub.ops[0]
        op.block = None
        for r, t in zip(op.results, types):
            r.type = t
        return op

    def clone(self, op: Op, mapping: dict[int, Value]) -> Op:
        """Deep-copy `op`; operands found in `mapping` (id(old) -> new) are remapped.

        Results and nested block arguments get fresh names and are added to `mapping`.
        """
        new = Op(name=op.name)
        fresh: dict[str, str] = {}  # one new name per result group
        for r in op.results:
            if r.name not in fresh:
                fresh[r.name] = self.fresh_name(_hint(r))
            nv = Value(fresh[r.name], r.type, new, r.index, gidx=r.gidx)
            new.results.append(nv)
            mapping[id(r)] = nv
        for region in op.regions:
            nr = Region(new)
            nr.open_text = region.open_text
            new.regions.append(nr)
            for block in region.blocks:
                nb = Block(nr)
                nb.label = block.label
                nb.arg_suffixes = list(block.arg_suffixes)
                for a in block.args:
                    na = Value(self.fresh_name(_hint(a)), a.type, None, a.index, nb)
                    nb.args.append(na)
                    mapping[id(a)] = na
                nr.blocks.append(nb)
        new.head = [mapping.get(id(s), s) if isinstance(s, Value) else s for s in op.head]
        for region, nr in zip(op.regions, new.regions):
            if region.opener is not None:
                nr.opener = [mapping.get(id(s), s) if isinstance(s, Value) else s for s in region.opener]
        for region, nr in zip(op.regions, new.regions):
            for block, nb in zip(region.blocks, nr.blocks):
                for o in block.ops:
                    c = self.clone(o, mapping)
                    c.block = nb
                    nb.ops.append(c)
        new.tail = [mapping.get(id(s), s) if isinstance(s, Value) else s for s in op.tail]
        return new


def _hint(v: Value) -> str:
    base = v.name.lstrip("%").split("_nf")[0]
    return re.sub(r"[^A-Za-z0-9_]", "_", base) or "v"


def _split_top_level(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    element: str
    encoding: str | None = None

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        enc = f", {self.encoding}" if self.encoding else ""
        return f"tensor<{dims}x{self.element}{enc}>" if dims else f"tensor<{self.element}{enc}>"

    def with_shape(self, shape: Iterable[int]) -> "TensorType":
        return TensorType(tuple(shape), self.element, self.encoding)

    def with_element(self, element: str) -> "TensorType":
        return TensorType(self.shape, element, self.encoding)


def parse_type(t: str) -> TensorType | str:
    """`tensor<128x64xbf16, #blocked>` -> TensorType((128, 64), 'bf16', '#blocked'); scalars as str."""
    t = t.strip()
    if not t.startswith("tensor<"):
        return t
    inner = t[len("tensor<"):-1]
    parts = _split_top_level(inner)
    body = parts[0].strip()
    enc = parts[1].strip() if len(parts) > 1 else None
    dims = []
    while True:
        m = re.match(r"^(\d+)x", body)
        if not m:
            break
        dims.append(int(m.group(1)))
        body = body[m.end():]
    return TensorType(tuple(dims), body, enc)
