"""Whether two loops compute the same values trip by trip, whatever spelling each uses.

Users write the two loops of a pre-norm (statistics, then GEMM) independently: one may step over
offsets (`for k0 in range(0, K, BK)`), the other over tile indices (`for k in range(0, cdiv(K,
BK))` with `k * BK`); one may advance a pointer (`p += BK`), the other recompute it; one may write
`a + (b + c)`, the other `(a + b) + c`. A structural comparison of the two loops' ops sees
different computations. Here every value is put in a canonical form, in terms of one shared
*trip index* t (the iteration count since the loop started):

- integers (and pointer offsets) become polynomials with integer coefficients: `addi`, `subi`,
  `muli`, constants, splats and broadcasts are normalized, so any association and any order of
  the terms give the same form (exact in the integers' wrap-around arithmetic too; a width
  conversion is opaque, so `ext(a + b)` and `ext(a) + ext(b)` stay apart);
- a loop's induction variable is `lb + t * step`; a loop-carried value that grows by a
  loop-invariant amount each trip (`p += BK`, a block pointer's offset) is `init + t * amount`;
- `tt.addptr` chains are a base pointer plus one offset polynomial;
- tensors keep the placement of each term (which dimension `tt.make_range` or an outer tensor
  varies along, after `tt.expand_dims` and `tt.broadcast`);
- everything else (loads, comparisons, divisions, floating-point arithmetic, ...) is an opaque
  term keyed by the op and the canonical forms of its operands (commutative operands sorted).
  Floating-point arithmetic is never reassociated: only its operand order is normalized where
  IEEE arithmetic commutes.

Two values have equal forms only if they are equal in every trip (given the same trip index in
both loops). `same_trips` checks that both loops run the same number of trips.
"""
from __future__ import annotations

from typing import Any

from .core import Op, Value
from .ops import (ADDPTR, BROADCAST, CONSTANT, EXPAND_DIMS, LOADS, MAKE_RANGE, SPLAT, ConstantOp,
                  ExpandDimsOp, ForOp, TensorType, attrs, type_of)

_COMMUTATIVE = {"arith.addf", "arith.mulf", "arith.andi", "arith.ori", "arith.xori", "arith.maxnumf",
                "arith.minnumf", "arith.maximumf", "arith.minimumf", "arith.maxsi", "arith.minsi",
                "arith.maxui", "arith.minui"}

TRIP = ("trip",)


def _key(x) -> str:
    return repr(x)


class Poly:
    """sum of coeff * product(atoms); an atom is (key, placement). Immutable, hashable."""

    __slots__ = ("terms", "_h")

    def __init__(self, terms: dict):
        self.terms = tuple(sorted(((m, c) for m, c in terms.items() if c != 0), key=_key))
        self._h = hash(self.terms)

    @staticmethod
    def const(c: int) -> "Poly":
        return Poly({(): c})

    @staticmethod
    def atom(key, placement=()) -> "Poly":
        return Poly({((key, tuple(placement)),): 1})

    def __add__(self, o: "Poly") -> "Poly":
        d = dict(self.terms)
        for m, c in o.terms:
            d[m] = d.get(m, 0) + c
        return Poly(d)

    def scale(self, k: int) -> "Poly":
        return Poly({m: c * k for m, c in self.terms})

    def __mul__(self, o: "Poly") -> "Poly":
        d: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in o.terms:
                m = tuple(sorted(m1 + m2, key=_key))
                d[m] = d.get(m, 0) + c1 * c2
        return Poly(d)

    def map_placement(self, fn) -> "Poly":
        return Poly({tuple(sorted(((k, fn(p)) for k, p in m), key=_key)): c for m, c in self.terms})

    def constant(self) -> int | None:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def __eq__(self, o) -> bool:
        return isinstance(o, Poly) and self.terms == o.terms

    def __hash__(self) -> int:
        return self._h

    def __repr__(self) -> str:
        return f"Poly{self.terms}"


class Forms:
    """Canonical forms of the values of loops `a` and `b`, trip index shared (see the module
    docstring). `form(v)` is a hashable value; equal forms mean equal values in every trip."""

    def __init__(self, a: ForOp, b: ForOp):
        self.loops = (a, b)
        self._cache: dict[int, Any] = {}
        self._busy: set[int] = set()

    # -- public --------------------------------------------------------------------------------
    def equal(self, x: Value, y: Value) -> bool:
        return x.type == y.type and self.form(x) == self.form(y)

    def trips(self, loop: ForOp):
        """The loop's trip count as a form: cdiv(ub - lb, step)."""
        lb, ub, step = (self.form(v) for v in loop.bounds)
        span = _as_poly(ub) + _as_poly(lb).scale(-1)
        s = _as_poly(step).constant()
        if s == 1:
            return span
        if s is not None and s > 0:
            # what `tl.cdiv(x, s)` is in TTIR: (x + s - 1) / s
            return Poly.atom(_opaque("arith.divsi", loop.bounds[1].type,
                                     [span + Poly.const(s - 1), Poly.const(s)], "", 0))
        return Poly.atom(("cdiv", (span, _as_poly(step))))

    def same_trips(self) -> bool:
        a, b = self.loops
        return self.trips(a) == self.trips(b)

    def table(self, loop: ForOp) -> dict:
        """form -> the first value of `loop`'s body (or its iv/iter_args) with that form."""
        out: dict = {}
        for v in [loop.iv] + list(loop.iter_args) + [r for o in loop.body.ops for r in o.results]:
            f = self.form(v)
            out.setdefault((v.type, f), v)
        return out

    # -- forms ---------------------------------------------------------------------------------
    def form(self, v: Value):
        key = id(v)
        got = self._cache.get(key)
        if got is not None:
            return got
        if key in self._busy:  # a cycle through loop-carried values: opaque
            return ("cycle", id(v))
        self._busy.add(key)
        try:
            f = self._form(v)
        finally:
            self._busy.discard(key)
        self._cache[key] = f
        return f

    def _form(self, v: Value):
        t = type_of(v)
        shape = t.shape if isinstance(t, TensorType) else ()
        if v.owner is None:
            return self._block_arg(v, shape)
        op = v.owner
        name = op.name
        if name == CONSTANT:
            c = ConstantOp(op)
            iv = c.int_value
            if iv is None and isinstance(t, TensorType) and t.element.startswith("i"):
                lit = c.splat_literal
                iv = int(lit) if lit.lstrip("-").isdigit() else None
            if iv is not None:
                return Poly.const(iv)
            return ("const", v.type, c.literal)
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            x, y = (self.form(o) for o in op.operands)
            if isinstance(x, Poly) and isinstance(y, Poly):
                return x + y if name == "arith.addi" else x + y.scale(-1) if name == "arith.subi" else x * y
        if name == SPLAT:
            return self.form(op.operands[0])
        if name == BROADCAST:  # the placement of every term stays; opaque keys carry their type
            return self.form(op.operands[0])
        if name == EXPAND_DIMS:
            axis = ExpandDimsOp(op).axis
            inner = self.form(op.operands[0])
            shift = lambda p: tuple(d + 1 if d >= axis else d for d in p)  # noqa: E731
            if isinstance(inner, Poly):
                return inner.map_placement(shift)
            if isinstance(inner, tuple) and inner and inner[0] == "ptr":
                return ("ptr", inner[1], inner[2].map_placement(shift))
            return ("expand", axis, inner)
        if name == MAKE_RANGE:
            a = attrs(op)
            start, end = a["start"].int, a["end"].int
            return Poly.atom(("range", end - start), (0,)) + Poly.const(start)
        if name == ADDPTR:
            p, off = (self.form(o) for o in op.operands)
            if isinstance(off, Poly):
                if isinstance(p, tuple) and p and p[0] == "ptr":
                    return ("ptr", p[1], p[2] + off)
                return ("ptr", p, off)
        # opaque: keyed by the op and its operands' forms, placed over the result's dimensions
        operands = [self.form(o) for o in op.operands]
        if name in _COMMUTATIVE:
            operands.sort(key=_key)
        key = _opaque(name, v.type, operands, "" if name in _PLAIN else _signature(op), v.index)
        if name in LOADS:
            key = key + ("load",)
        if isinstance(t, TensorType) and t.element.startswith(("i", "!tt.ptr")) and not t.element.startswith("i1"):
            return Poly.atom(key, tuple(range(len(shape))))
        if not isinstance(t, TensorType) and v.type.startswith("i") and v.type != "i1":
            return Poly.atom(key)
        return key

    def _block_arg(self, v: Value, shape):
        for which, loop in enumerate(self.loops):
            if v is loop.iv:
                lb, _, step = (self.form(x) for x in loop.bounds)
                if isinstance(lb, Poly) and isinstance(step, Poly):
                    return lb + Poly.atom(TRIP) * step
                return ("iv", which)
            if v in loop.iter_args:
                i = loop.iter_args.index(v)
                rec = self._recurrence(loop, i)
                if rec is not None:
                    return rec
                return ("iter", which, i)
        # an argument of the function or of an enclosing loop: the same value in both loops
        return Poly.atom(("arg", id(v)), tuple(range(len(shape)))) if _integral(v) else ("arg", id(v))

    def _recurrence(self, loop: ForOp, i: int):
        """init + t * amount when the iter_arg grows by a loop-invariant amount each trip."""
        arg, y = loop.iter_args[i], loop.yields[i] if loop.yield_op is not None else None
        if y is None or y.owner is None or y.owner.name not in ("arith.addi", ADDPTR):
            return None
        ops = y.owner.operands
        if ops[0] is not arg:
            if y.owner.name == ADDPTR or ops[1] is not arg:
                return None
            ops = [ops[1], ops[0]]
        amount = self.form(ops[1])
        if not isinstance(amount, Poly) or _varying(amount):
            return None
        init = self.form(loop.inits[i])
        step = Poly.atom(TRIP) * amount
        if isinstance(init, Poly):
            return init + step
        if isinstance(init, tuple) and init and init[0] == "ptr":
            return ("ptr", init[1], init[2] + step)
        return ("ptr", init, step)


def _opaque(name: str, type: str, operands, signature: str, index: int) -> tuple:
    return (name, type, tuple(operands), signature, index)


# ops whose printed form carries no attribute: the name and the operands say everything
_PLAIN = {"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.divsi", "arith.divui",
          "arith.remsi", "arith.remui", "arith.andi", "arith.ori", "arith.xori", "arith.maxsi",
          "arith.minsi", "arith.maxui", "arith.minui", "arith.maxnumf", "arith.minnumf",
          "arith.extf", "arith.truncf", "arith.sitofp", "arith.negf", "math.sqrt", "math.rsqrt"}


def _varying(f) -> bool:
    """Whether a form depends on the trip or on a loop-carried value that is not a recurrence."""
    if isinstance(f, Poly):
        return any(_varying(k) for m, _ in f.terms for k, _ in m)
    if isinstance(f, tuple):
        if f == TRIP or (f and f[0] in ("iter", "iv", "cycle")):
            return True
        return any(_varying(x) for x in f)
    return False


def _as_poly(f) -> Poly:
    return f if isinstance(f, Poly) else Poly.atom(("opaque", f))


def _integral(v: Value) -> bool:
    t = type_of(v)
    e = t.element if isinstance(t, TensorType) else t
    return e.startswith("i") and e != "i1"


def _signature(op: Op) -> str:
    from .match import op_signature
    return op_signature(op)


__all__ = ["Forms", "Poly", "TRIP"]
