"""Evaluate the inline PTX of `tt.elementwise_inline_asm` ops, vectorized over the tensor.

Registers hold numpy arrays with the op's (broadcast) operand shape, so one evaluation stands for
every thread that runs the asm on its elements. What is supported is what normfuse's own
`cluster-reduce` emits, plus the arithmetic around it:

- `{ }` scopes, `.reg` declarations, `/* */` and `//` comments, operands `$n` (outputs first, as
  the constraint string lists them: `=r`, `=l`, `=f`, `=d`, `=h`; inputs `r`, `l`, `f`, `d`, `h`),
  immediates (decimal, `0x..`, `0fXXXXXXXX`, `0dXXXXXXXXXXXXXXXX`);
- integer `mov add sub mul.lo mul.wide mad.lo shl shr and or xor cvt` on 16/32/64 bits, float
  `mov add sub mul fma div neg abs min max` (f32/f64; `div.approx` as a times the reciprocal of b,
  the reciprocal a zero of b's sign where |b| > 2^126, as the PTX ISA defines it),
  `tanh.approx.f32` (tanh shrunk toward zero by the PTX ISA's relative error bound,
  `TANH_APPROX_REL_ERR`, +-1 at +-inf: the bound's size, not the GPU's bits);
- special registers `%cluster_ctarank %cluster_nctarank %ctaid.x/y/z %nctaid.x/y/z
  %clusterid.x %nclusterid.x %cluster_ctaid.x %cluster_nctaid.x %dynamic_smem_size
  %total_smem_size`, the symbol `global_smem` (start of the CTA's dynamic shared memory) and
  normfuse's `NFSCRATCHBYTES` token (a CTA's global-scratch slice size, which normfuse's
  make_llir wrapper substitutes on the real compile path);
- `mapa.shared::cluster`, `ld`/`st` on `.shared`, `.shared::cta`, `.shared::cluster` and `.global`
  (cache qualifiers `.cg .ca .cs .lu .cv .volatile .relaxed.* .acquire.*` accepted), scalar types
  only (no `.v2/.v4`);
- `barrier.cluster.arrive[.release|.relaxed][.aligned]`, `barrier.cluster.wait[.acquire][.aligned]`
  and the CTA barrier `bar.sync` (a no-op: a CTA's elements run as one logical thread) (only in
  an asm whose operands are scalars: an elementwise asm runs once per element a thread holds, so
  a barrier there would arrive several times), `fence.*` (no-op: the interpreter runs one access
  at a time);
- control flow: labels (`NAME:`), predicate registers set by `setp.<cmp>.<type>` (eq ne lt le gt
  ge, lo ls hi hs), guards `@%p` / `@!%p`, and `bra`. The elements run as lanes with their own
  program counters; the lanes at the lowest one step together (min-PC reconvergence). A taken
  backward branch after a load is a polling loop: the asm yields `("spin", where, poll)` there
  (`poll` names this run of the asm's loop), so that
  the interpreter's scheduler can run the CTA (or warp group) that is to write what the loop waits
  for, and can tell a loop that waits forever (a hang on the GPU) from one that ends;
- `mov.b64 %d, {%lo, %hi}` and `mov.b64 {%lo, %hi}, %d` (pack and unpack two 32-bit halves).

Anything else (`%tid`, vector loads, ...) raises `InterpreterError` naming the instruction. Shared-memory addresses: a CTA's window starts at `SMEM_BASE`; `mapa` maps an
address of the own window to rank r's copy at `CLUSTER_BASE + r * 2**24 + address`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .memory import InterpreterError

# tanh.approx.f32's largest relative error as the PTX ISA bounds it (2^-11; MUFU.TANH measured
# 1.113e-5 over every fp32 input on sm_75, N. Juffa on NVIDIA's developer forum, 2021: the ISA's
# bound is the one a kernel may rely on)
TANH_APPROX_REL_ERR = 2.0 ** -11

SMEM_BASE = 0x400
CLUSTER_BASE = 1 << 30
RANK_SHIFT = 24
SCRATCH_TOKEN = "NFSCRATCHBYTES"

_TYPES = {"u8": (np.uint8, "i"), "s8": (np.int8, "i"), "b8": (np.uint8, "i"),
          "u16": (np.uint16, "i"), "s16": (np.int16, "i"), "b16": (np.uint16, "i"),
          "u32": (np.uint32, "i"), "s32": (np.int32, "i"), "b32": (np.uint32, "i"),
          "u64": (np.uint64, "i"), "s64": (np.int64, "i"), "b64": (np.uint64, "i"),
          "f32": (np.float32, "f"), "f64": (np.float64, "f")}
_CONSTRAINT = {"r": np.uint32, "l": np.uint64, "f": np.float32, "d": np.float64, "h": np.uint16}
_SPACES = ("shared::cluster", "shared::cta", "shared", "global")
_LDST_QUALIFIERS = {"cg", "ca", "cs", "lu", "cv", "volatile", "relaxed", "acquire", "release",
                    "weak", "cta", "cluster", "gpu", "sys", "nc"}


@dataclass
class Instr:
    text: str
    opcode: str
    mods: list
    operands: list
    guard: tuple | None = None  # (predicate register, negated) of `@%p` / `@!%p`
    label: str | None = None    # a label that names this instruction's position


def decode_mlir_string(s: str) -> str:
    """An MLIR string literal's body (`\\0A`, `\\22`, `\\\\` escapes) -> text."""
    out, i = [], 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt in "\\\"":
                out.append(nxt)
                i += 2
                continue
            if nxt in "nt":
                out.append("\n" if nxt == "n" else "\t")
                i += 2
                continue
            if re.match(r"[0-9A-Fa-f]{2}", s[i + 1:i + 3]):
                out.append(chr(int(s[i + 1:i + 3], 16)))
                i += 3
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse(asm: str) -> list[Instr]:
    text = re.sub(r"/\*.*?\*/", " ", asm, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # a register pair `{%lo, %hi}` (an operand) is not a scope: keep its braces
    text = re.sub(r"\{(\s*[%$][\w$]+\s*(?:,\s*[%$][\w$]+\s*)+)\}", "\x01\\1\x02", text)
    text = text.replace("{", ";").replace("}", ";").replace("\x01", "{").replace("\x02", "}")
    out = []
    pending_labels: list[str] = []
    for stmt in text.split(";"):
        s = stmt.strip()
        while True:  # labels: `NAME: instr` (or a label alone before the next statement)
            lm = re.match(r"([A-Za-z_$][\w$]*)\s*:(?!:)\s*(.*)$", s, re.S)
            if not lm:
                break
            pending_labels.append(lm.group(1))
            s = lm.group(2).strip()
        if not s or s.startswith(".reg") or s.startswith(".pred"):
            continue
        guard = None
        gm = re.match(r"@(!?)\s*(%[\w$]+)\s+(.*)$", s, re.S)
        if gm:
            guard = (gm.group(2), gm.group(1) == "!")
            s = gm.group(3).strip()
        m = re.match(r"([A-Za-z_][\w.:]*)\s*(.*)$", s, re.S)
        if not m:
            raise InterpreterError(f"inline asm: cannot read '{s}'")
        opcode, rest = m.group(1), m.group(2)
        parts = opcode.split(".")
        ops = [o.strip() for o in _split_operands(rest)] if rest.strip() else []
        ins = Instr(stmt.strip(), parts[0], parts[1:], ops, guard)
        for lab in pending_labels:
            out.append(Instr(f"{lab}:", "label", [], [], None, lab))
        pending_labels = []
        out.append(ins)
    for lab in pending_labels:  # a label at the very end
        out.append(Instr(f"{lab}:", "label", [], [], None, lab))
    return out


def _split_operands(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += ch in "[{"
        depth -= ch in "]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _as(value, t) -> np.ndarray:
    """Reinterpret or convert a register value to numpy type `t` (bits when the widths agree
    and the kinds differ; integer wrap-around otherwise)."""
    v = np.asarray(value)
    t = np.dtype(t)
    if v.dtype == t:
        return v
    if v.dtype.kind == "f" and t.kind in "iu":
        if v.dtype.itemsize == t.itemsize:
            return v.view(t)
        bits = v.view(np.uint32 if v.dtype.itemsize == 4 else np.uint64)
        return _as(bits, t)
    if v.dtype.kind in "iub" and t.kind == "f":
        if v.dtype.itemsize == t.itemsize:
            return np.ascontiguousarray(v).view(t)
        return _as(v, np.uint32 if t.itemsize == 4 else np.uint64).view(t)
    return v.astype(np.int64 if v.dtype.kind != "u" else np.uint64).astype(t)


class AsmRunner:
    """Runs one parsed asm for one op; `ctx` is the CTA (see interpreter.CTA)."""

    def __init__(self, instrs: list[Instr], where: str):
        self.instrs = instrs
        self.where = where
        self.has_wait = any(i.opcode == "barrier" and "wait" in i.mods for i in instrs)
        self.has_barrier = any(i.opcode in ("barrier", "bar") for i in instrs)
        self.labels = {i.label: k for k, i in enumerate(instrs) if i.label is not None}
        if len(self.labels) != sum(i.label is not None for i in instrs):
            raise InterpreterError(f"{where}: inline asm defines a label twice")
        self.divergent = any(i.guard is not None or i.opcode == "bra" for i in instrs)
        for i in instrs:
            if i.opcode == "bra" and (len(i.operands) != 1 or i.operands[0] not in self.labels):
                raise InterpreterError(f"{where}: inline asm: '{i.text}' branches to no label "
                                       "of the asm")

    def err(self, ins: Instr | None, msg: str) -> InterpreterError:
        at = f" in '{ins.text}'" if ins is not None else ""
        return InterpreterError(f"{self.where}: inline asm{at}: {msg}")

    def run(self, ctx, outs: list[str], ins_vals: list[np.ndarray], ins_kinds: list[str], shape):
        """Generator: yields at cluster-barrier waits; returns the output register values."""
        regs: dict[str, np.ndarray] = {}
        nout = len(outs)
        for k, (v, c) in enumerate(zip(ins_vals, ins_kinds)):
            regs[f"${nout + k}"] = _as(np.broadcast_to(v, shape), _CONSTRAINT[c])
        if self.has_barrier and shape != ():
            raise self.err(None, "a barrier in an elementwise asm over a tensor "
                           f"{list(shape)}: every thread would run it once per element it holds")
        if not self.divergent:
            for ins in self.instrs:
                if ins.opcode != "label":
                    yield from self._step(ctx, ins, regs, shape)
        else:
            yield from self._run_lanes(ctx, regs, shape)
        res = []
        for k in range(nout):
            if f"${k}" not in regs:
                raise self.err(None, f"output ${k} is never written")
            res.append(np.broadcast_to(regs[f"${k}"], shape))
        return res

    def _run_lanes(self, ctx, regs, shape):
        """Every element a lane with its own program counter; the lanes at the lowest counter
        run the instruction together (masked: guards and lanes elsewhere keep their registers)."""
        n = len(self.instrs)
        pc = np.zeros(shape, dtype=np.int64)
        polled, rounds = False, 0
        poll = object()  # this run of the asm: its polling loop, told from the next one's
        while True:
            live = pc < n
            if not live.any():
                return
            cur = int(pc[live].min())
            active = pc == cur
            ins = self.instrs[cur]
            mask = active
            if ins.guard is not None:
                reg, neg = ins.guard
                if reg not in regs:
                    raise self.err(ins, f"predicate {reg} is read before it is written")
                p = np.broadcast_to(regs[reg].astype(bool), shape)
                mask = active & (~p if neg else p)
            if ins.opcode == "bra":
                target = self.labels[ins.operands[0]]
                pc = np.where(mask, target, np.where(active, cur + 1, pc))
                if target <= cur and np.any(mask):
                    if polled:
                        # a polling loop: let whoever is to write what it waits for run first
                        yield ("spin", self.where, poll)
                        polled = False
                    else:
                        rounds += 1
                        if rounds > 1_000_000:
                            raise self.err(ins, "a loop that loads nothing ran a million rounds")
                continue
            if ins.opcode == "ld":
                polled = True
            if ins.opcode != "label" and np.any(mask):
                yield from self._step(ctx, ins, regs, shape, None if mask.all() else mask)
            pc = np.where(active, cur + 1, pc)

    # -- operands ------------------------------------------------------------------------------
    def _read(self, ctx, ins, regs, tok: str, t, shape):
        tok = tok.strip()
        if tok in regs:
            return _as(regs[tok], t)
        if tok.startswith("%"):
            sp = self._special(ctx, tok)
            if sp is not None:
                return _as(np.array(sp, dtype=np.int64), t)
            raise self.err(ins, f"register {tok} is read before it is written")
        if tok.startswith("$"):
            raise self.err(ins, f"operand {tok} does not exist")
        if tok == "global_smem":
            return _as(np.array(SMEM_BASE, dtype=np.int64), t)
        if tok == SCRATCH_TOKEN:
            return _as(np.array(ctx.scratch_bytes, dtype=np.int64), t)
        m = re.fullmatch(r"0([fF])([0-9A-Fa-f]{8})|0([dD])([0-9A-Fa-f]{16})", tok)
        if m:
            if m.group(1):
                return _as(np.array(int(m.group(2), 16), dtype=np.uint32).view(np.float32), t)
            return _as(np.array(int(m.group(4), 16), dtype=np.uint64).view(np.float64), t)
        try:
            n = int(tok, 0)
        except ValueError:
            try:
                return np.array(float(tok), dtype=t)
            except ValueError:
                raise self.err(ins, f"cannot read operand '{tok}'") from None
        return _as(np.array(n, dtype=np.int64), t)

    def _special(self, ctx, tok: str):
        table = {"%cluster_ctarank": ctx.rank, "%cluster_nctarank": ctx.cluster_size,
                 "%ctaid.x": ctx.pid[0], "%ctaid.y": ctx.pid[1], "%ctaid.z": ctx.pid[2],
                 "%nctaid.x": ctx.nprog[0], "%nctaid.y": ctx.nprog[1], "%nctaid.z": ctx.nprog[2],
                 "%clusterid.x": ctx.pid[0] // ctx.cluster_size,
                 "%nclusterid.x": ctx.nprog[0] // ctx.cluster_size,
                 "%cluster_ctaid.x": ctx.rank, "%cluster_nctaid.x": ctx.cluster_size,
                 "%cluster_ctaid.y": 0, "%cluster_ctaid.z": 0,
                 "%dynamic_smem_size": ctx.smem_size, "%total_smem_size": ctx.smem_size}
        return table.get(tok)

    def _write(self, regs, tok: str, value, t, mask=None):
        tok = tok.strip()
        v = np.asarray(value).astype(t, copy=False)
        if mask is not None:
            old = regs.get(tok)
            old = np.zeros(np.shape(mask), dtype=t) if old is None else _as(old, t)
            v = np.where(mask, v, old)
        regs[tok] = v

    def _addr(self, ctx, ins, regs, tok: str, shape):
        m = re.fullmatch(r"\[\s*([^\]+\-]+?)\s*(?:([+-])\s*([^\]]+?))?\s*\]", tok.strip())
        if not m:
            raise self.err(ins, f"cannot read address '{tok}'")
        base = self._read(ctx, ins, regs, m.group(1), np.uint64, shape).astype(np.int64)
        if m.group(2):
            off = int(m.group(3), 0)
            base = base + (off if m.group(2) == "+" else -off)
        return np.broadcast_to(base, shape)

    # -- instructions --------------------------------------------------------------------------
    def _step(self, ctx, ins: Instr, regs, shape, mask=None):
        op, mods = ins.opcode, ins.mods
        types = [m for m in mods if m in _TYPES]
        rd = lambda k, t: self._read(ctx, ins, regs, ins.operands[k], t, shape)  # noqa: E731
        wr = lambda v, t: self._write(regs, ins.operands[0], v, t, mask)  # noqa: E731
        if mask is not None and op == "barrier":
            raise self.err(ins, "a guarded or divergent barrier is not supported")
        if op == "bar" and mods[:1] == ["sync"]:
            return  # a CTA barrier: the interpreter runs a CTA's elements as one logical thread
        if op == "barrier" and mods[:1] == ["cluster"]:
            kind = mods[1] if len(mods) > 1 else ""
            if kind == "arrive":
                ctx.arrive()
            elif kind == "wait":
                yield from ctx.wait(self.where)
            else:
                raise self.err(ins, "expected barrier.cluster.arrive or barrier.cluster.wait")
            return
        if op == "fence":
            return
        if op in ("ld", "st"):
            self._ldst(ctx, ins, regs, shape, mask)
            return
        if op == "setp":
            self._setp(ctx, ins, regs, shape, mask)
            return
        if op == "mov" and types and types[-1] == "b64" and "{" in "".join(ins.operands):
            self._mov_pack(ctx, ins, regs, shape, mask)
            return
        if op == "mapa":
            if "shared::cluster" not in mods:
                raise self.err(ins, "only mapa.shared::cluster is supported")
            a = rd(1, np.uint64).astype(np.int64)
            r = rd(2, np.uint64).astype(np.int64)
            if (r < 0).any() or (r >= ctx.cluster_size).any():
                raise self.err(ins, f"rank {int(np.max(r))} is outside the {ctx.cluster_size}-CTA cluster")
            if (a >= (1 << RANK_SHIFT)).any():
                raise self.err(ins, "mapa of an address that is not in the CTA's shared window")
            t = _TYPES[types[-1]][0] if types else np.uint32
            wr(CLUSTER_BASE + (r << RANK_SHIFT) + a, t)
            return
        if not types:
            raise self.err(ins, f"instruction '{op}' is not supported")
        t, kind = _TYPES[types[-1]]
        if op == "mov":
            wr(rd(1, t), t)
        elif op == "cvt":
            dst, src = (_TYPES[types[0]][0], _TYPES[types[-1]][0]) if len(types) == 2 else (t, t)
            v = rd(1, src)
            v = v.astype(np.float64).astype(dst) if np.dtype(dst).kind == "f" else \
                v.astype(np.int64 if np.dtype(src).kind != "u" else np.uint64).astype(dst)
            wr(v, dst)
        elif op in ("add", "sub", "min", "max", "and", "or", "xor", "div"):
            a, b = rd(1, t), rd(2, t)
            f = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
                 "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}.get(op)
            if op == "div":
                if kind != "f":
                    raise self.err(ins, "integer div is not supported")
                f = np.divide
                if "approx" in mods:  # a * (1 / b), 1 / b a signed 0 for |b| past 2^126
                    f = lambda a, b: a * np.where(  # noqa: E731
                        np.abs(b) > 2.0 ** 126, np.copysign(0.0, b), 1 / b).astype(b.dtype)
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                wr(f(a, b), t)
        elif op == "tanh":
            if "approx" not in mods or kind != "f" or t is not np.float32:
                raise self.err(ins, "only tanh.approx.f32 is supported")
            # the ISA's error bound taken in full, toward zero (|tanh| shrunk by
            # TANH_APPROX_REL_ERR), on every finite input, saturated ones included (the ISA
            # promises +-1 only at +-inf): the side where 1 + tanh(u) (GELU, SiLU) loses the
            # most. One-sided and deterministic: a bound on the error's size, not the GPU's bits.
            a = rd(1, t).astype(np.float64)
            v = np.where(np.isinf(a), np.sign(a), np.tanh(a) * (1.0 - TANH_APPROX_REL_ERR))
            wr(v.astype(t), t)
        elif op in ("neg", "abs", "not"):
            a = rd(1, t)
            wr({"neg": np.negative, "abs": np.abs,
                                                "not": np.invert}[op](a), t)
        elif op == "mul":
            if kind == "f":
                wr(rd(1, t) * rd(2, t), t)
            elif "wide" in mods:
                wt = {np.uint32: np.uint64, np.int32: np.int64, np.uint16: np.uint32,
                      np.int16: np.int32}[t]
                wr(rd(1, t).astype(wt) * rd(2, t).astype(wt), wt)
            elif "lo" in mods:
                wr(rd(1, t) * rd(2, t), t)
            else:
                raise self.err(ins, "integer mul needs .lo or .wide")
        elif op in ("mad", "fma"):
            if kind == "f":
                v = (rd(1, t).astype(np.float64) * rd(2, t) + rd(3, t)).astype(t)
                wr(v, t)
            elif "lo" in mods:
                wr(rd(1, t) * rd(2, t) + rd(3, t), t)
            elif "wide" in mods:
                wt = {np.uint32: np.uint64, np.int32: np.int64}[t]
                wr(rd(1, t).astype(wt) * rd(2, t).astype(wt)
                            + rd(3, wt), wt)
            else:
                raise self.err(ins, "integer mad needs .lo or .wide")
        elif op in ("shl", "shr"):
            a = rd(1, t)
            n = rd(2, np.uint32).astype(np.uint64)
            bits = np.dtype(t).itemsize * 8
            if (n >= bits).any():
                raise self.err(ins, f"shift by {int(np.max(n))} of a {bits}-bit value")
            v = np.left_shift(a, n.astype(a.dtype)) if op == "shl" else np.right_shift(a, n.astype(a.dtype))
            wr(v, t)
        else:
            raise self.err(ins, f"instruction '{ins.opcode}.{'.'.join(mods)}' is not supported")

    _CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
            "hi": np.greater, "hs": np.greater_equal}

    def _setp(self, ctx, ins: Instr, regs, shape, mask):
        cmp = next((m for m in ins.mods if m in self._CMP), None)
        types = [m for m in ins.mods if m in _TYPES]
        if cmp is None or len(types) != 1 or len(ins.operands) != 3 or "|" in ins.operands[0]:
            raise self.err(ins, "expected setp.<cmp>.<type> %p, a, b")
        t = _TYPES[types[0]][0]
        a = self._read(ctx, ins, regs, ins.operands[1], t, shape)
        b = self._read(ctx, ins, regs, ins.operands[2], t, shape)
        self._write(regs, ins.operands[0], self._CMP[cmp](a, b), np.bool_, mask)

    def _mov_pack(self, ctx, ins: Instr, regs, shape, mask):
        """mov.b64 %d, {%lo, %hi} | mov.b64 {%lo, %hi}, %d."""
        dst, src = ins.operands
        halves = lambda tok: [x.strip() for x in tok.strip()[1:-1].split(",")]  # noqa: E731
        if src.strip().startswith("{"):
            lo, hi = (self._read(ctx, ins, regs, x, np.uint32, shape).astype(np.uint64)
                      for x in halves(src))
            self._write(regs, dst, lo | (hi << np.uint64(32)), np.uint64, mask)
        elif dst.strip().startswith("{"):
            v = self._read(ctx, ins, regs, src, np.uint64, shape)
            lo, hi = halves(dst)
            self._write(regs, lo, (v & np.uint64(0xFFFFFFFF)).astype(np.uint32), np.uint32, mask)
            self._write(regs, hi, (v >> np.uint64(32)).astype(np.uint32), np.uint32, mask)
        else:
            raise self.err(ins, "expected mov.b64 with a {lo, hi} pair")

    def _ldst(self, ctx, ins: Instr, regs, shape, mask=None):
        mods = [m for m in ins.mods]
        space = next((m for m in mods if m in _SPACES), None)
        types = [m for m in mods if m in _TYPES]
        rest = [m for m in mods if m not in _SPACES and m not in _TYPES and m not in _LDST_QUALIFIERS]
        if rest or len(types) != 1:
            raise self.err(ins, f"'{ins.opcode}.{'.'.join(mods)}' is not supported "
                           "(scalar ld/st on .shared, .shared::cta, .shared::cluster or .global)")
        if space is None:
            raise self.err(ins, "generic addressing is not supported: name the state space")
        elem = {"f32": "f32", "f64": "f64", "u32": "i32", "s32": "i32", "b32": "i32",
                "u64": "i64", "s64": "i64", "b64": "i64", "u16": "i16", "s16": "i16",
                "b16": "i16", "u8": "i8", "s8": "i8", "b8": "i8"}[types[0]]
        t = _TYPES[types[0]][0]
        what = f"{self.where}: '{ins.text}'"
        if ins.opcode == "ld":
            addr = self._addr(ctx, ins, regs, ins.operands[1], shape)
            v = ctx.mem_load(space, addr, elem, what, mask)
            self._write(regs, ins.operands[0], _as(v, t), t, mask)
        else:
            addr = self._addr(ctx, ins, regs, ins.operands[0], shape)
            v = self._read(ctx, ins, regs, ins.operands[1], t, shape)
            ctx.mem_store(space, addr, np.broadcast_to(v, shape), elem, what, mask)
