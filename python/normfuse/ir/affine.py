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
both loops), provided every op they are computed from is determined by its operands: an opaque
term names an op by its name, attributes and operands, not by its identity or its regions, so
`tl.sum(c)` and `tl.max(c)` (two `tt.reduce` of c) have one form, as have two loads of one
address before and after a store to it. A pass that rewrites on equal forms checks
`undetermined` (no op with regions or effects, no load of memory the kernel writes, among the
ops behind the compared values). `same_trips` checks that both loops run the same number of
trips.

`Forms(..., widen=True)` reads a sign or zero extension of an integer (`arith.extsi`/`extui`,
what Triton's block pointers compute their i64 offsets with) as the value itself: sound where the
index arithmetic does not wrap, which is what a reader of tile addresses (hopper-ws, whose TMA
coordinates are exact) assumes anyway. The default keeps extensions opaque (the loop comparisons
of the fusion passes must hold in the wrapping arithmetic).
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
    """Canonical forms of the values of the given loops (usually two, or one), trip index shared
    (see the module docstring). `form(v)` is a hashable value; equal forms mean equal values in
    every trip where `undetermined` finds nothing behind them (an op with regions or effects, a
    load of written memory, share the form of a twin with another value)."""

    def __init__(self, *loops: ForOp, widen: bool = False):
        self.loops = tuple(loops)
        self.widen = widen
        self._cache: dict[int, Any] = {}
        self._busy: set[int] = set()
        self._args: dict[int, Value] = {}  # id -> the block argument of an ("arg", id) atom

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
        if self.widen and name in ("arith.extsi", "arith.extui"):
            inner = self.form(op.operands[0])
            if isinstance(inner, Poly):
                return inner
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
        self._args[id(v)] = v
        return Poly.atom(("arg", id(v)), tuple(range(len(shape)))) if _integral(v) else ("arg", id(v))

    def argument(self, key) -> Value | None:
        """The block argument behind an ("arg", id) key (or form of a pointer argument)."""
        return self._args.get(key[1]) if isinstance(key, tuple) and key[:1] == ("arg",) else None

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


def memory_written(func: Op) -> set | None:
    """What `undetermined` takes as `written` for function `func`: the ids of the kernel
    arguments its stores write (`ops.written_roots`), or None when some write of the kernel could
    reach any memory (`ops.unknown_writer`: a store not traced to an argument, an atomic, a call,
    foreign inline asm)."""
    from .ops import unknown_writer, written_roots
    return None if unknown_writer(func) else written_roots(func)


def undetermined(values, written: set | None, loops=()) -> str | None:
    """Why values may differ although their forms are equal, in a remark's words; None when equal
    forms of `values` mean equal values.

    A form names an op by its name, attributes and operands' forms, not by its identity or its
    regions: two `tt.reduce` of one tensor with different combiners (`tl.sum(c)`, `tl.max(c)`)
    have one form, so have two loads of one address before and after a store to it, or two
    atomics. Equal forms are trusted only when every op that `values` (Values, or Ops: their
    operands and results) are computed from, transitively up to block arguments, is pure without
    regions, or a pointer load (not volatile, not through a descriptor) of memory the kernel never
    writes: `written` holds the ids of the kernel arguments it writes (`memory_written`; None:
    any memory may be written, so no load qualifies). Through the induction variables and
    iter_args of `loops` (the `Forms`' loops: their forms are read from the loops' bounds, inits
    and yields) too."""
    from .effects import is_pure
    from .ops import LOADS, LoadOp, root_names
    todo: list = []
    for x in values:
        if isinstance(x, Op):
            todo += [v for v in x.operands if isinstance(v, Value)] + list(x.results)
        elif isinstance(x, Value):
            todo.append(x)
    seen: set = set()
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        d = x.owner
        if d is None:
            for loop in loops:
                if x is loop.iv:
                    todo += list(loop.bounds)
                elif any(x is a for a in loop.iter_args):
                    i = next(k for k, a in enumerate(loop.iter_args) if a is x)
                    todo += [loop.inits[i]] + ([loop.yields[i]] if loop.yield_op is not None else [])
            continue
        if d.name in LOADS and not LoadOp(d).is_descriptor and not LoadOp(d).is_volatile:
            root = LoadOp(d).root
            if written is None:
                return (f"a value computed from a load ({', '.join(root_names([d]))}) while the "
                        "kernel may write any memory (loads before and after a write are not "
                        "told apart)")
            if root is None or id(root) in written:
                return (f"a value computed from memory the kernel writes "
                        f"({', '.join(root_names([d]))}: loads of it before and after a store "
                        "are not told apart)")
        elif d.regions:
            return (f"a value computed from '{d.name}' (its regions are not compared: two of "
                    "them with equal operands may differ)")
        elif not is_pure(d):
            return f"a value computed from '{d.name}' (an op with effects)"
        todo += [v for v in d.operands if isinstance(v, Value)]
    return None


def subst_trip(f, repl: "Poly"):
    """The form `f` with the trip index replaced by `repl` (a form of the trip: `Poly.atom(TRIP)
    + Poly.const(1)` is the next trip's value, `Poly.const(0)` the first trip's), inside opaque
    terms too. None when `f` depends on the trip in a way the substitution cannot follow (a
    loop-carried value that is not a recurrence, an induction variable whose bounds are not
    integer forms, a cycle)."""
    if isinstance(f, Poly):
        out = Poly({})
        for m, c in f.terms:
            term = Poly.const(c)
            for key, placement in m:
                if key == TRIP:
                    term = term * repl
                    continue
                k = subst_trip(key, repl)
                if k is None:
                    return None
                term = term * Poly.atom(k, placement)
            out = out + term
        return out
    if isinstance(f, tuple):
        if f and f[0] in ("iter", "iv", "cycle"):
            return None
        out = []
        for x in f:
            y = subst_trip(x, repl)
            if y is None and x is not None:
                return None
            out.append(y)
        return tuple(out)
    return f


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




# ---------------------------------------------------------------------------------------------
# Reading tile addresses (what hopper-ws matches on)
# ---------------------------------------------------------------------------------------------
#
# A tile load's offset is a form over the tile's dimensions: a position atom ("range", n) placed
# on dimension d is the element's index along d; TRIP counts the k-steps; atoms without a
# placement are scalars (kernel parameters, tile coordinates, opaque scalar arithmetic). So
# `X + (pid_m * 128 + arange(128))[:, None] % M * stride + arange(64)[None, :] + 64 * k` is
# {rem(128 pid_m + r0, M) stride, r1, 64 TRIP}, however the user spelled it; `split_dims` reads
# off each dimension's stride and index.

class NotAffine(Exception):
    """A value the address reading cannot put in the form it needs; the message says why."""


REM = ("arith.remsi", "arith.remui")


def dims_of(mono) -> set:
    """The tile dimensions a monomial varies along."""
    return {d for _, placement in mono for d in placement}


def is_scalar(p: Poly) -> bool:
    """A form that is the same for every element and every trip (a launch-time scalar)."""
    return not any(placement or key == TRIP for m, _ in p.terms for key, placement in m)


def position(p: Poly, dim: int) -> int:
    """The coefficient of the position along `dim` (a make_range placed there) in `p`."""
    return sum(c for m, c in p.terms
               if len(m) == 1 and m[0][1] == (dim,) and isinstance(m[0][0], tuple)
               and m[0][0][:1] == ("range",))


def trip(p: Poly) -> int:
    """The coefficient of the trip counter in `p`."""
    return sum(c for m, c in p.terms if m == ((TRIP, ()),))


def without(p: Poly, dim: int) -> Poly:
    """`p` without its position term along `dim` and its trip term."""
    return Poly({m: c for m, c in p.terms
                 if m != ((TRIP, ()),) and not (len(m) == 1 and m[0][1] == (dim,)
                                               and isinstance(m[0][0], tuple)
                                               and m[0][0][:1] == ("range",))})


def drop_trip(p: Poly) -> Poly:
    """`p` at the first trip (every term with the trip counter dropped)."""
    return Poly({m: c for m, c in p.terms if not any(k == TRIP for k, _ in m)})


def divide(p: Poly, k: int) -> Poly | None:
    """p / k when k divides every coefficient, else None."""
    if k == 0 or any(c % k for _, c in p.terms):
        return None
    return Poly({m: c // k for m, c in p.terms})


def swap_dims(p: Poly) -> Poly:
    """`p` with tile dimensions 0 and 1 exchanged (the opaque atoms keep their inner forms, which
    `DimIndex` reads through the atom's own placement)."""
    return p.map_placement(lambda pl: tuple(1 - d for d in pl))


class DimIndex:
    """Index along one tile dimension, `[inner] % modulus` or `inner`, and its stride."""

    def __init__(self, stride: Poly, index: Poly):
        self.stride = stride
        self.index = index
        self.inner, self.modulus = index, None
        if len(index.terms) == 1:
            (m, c), = index.terms
            if c == 1 and len(m) == 1:
                key, placement = m[0]
                if isinstance(key, tuple) and key[:1] and key[0] in REM and len(placement) == 1:
                    a, b = key[2]
                    if isinstance(a, Poly) and isinstance(b, Poly):
                        # the operands' forms are placed over the 1-D operand: put them where
                        # the remainder sits in the tile
                        self.inner = a.map_placement(lambda pl: placement if pl else pl)
                        self.modulus = b

    def parts(self, dim: int) -> tuple[int, int, Poly]:
        """(coefficient of the position along `dim`, of the trip counter, the rest)."""
        return position(self.inner, dim), trip(self.inner), without(self.inner, dim)


def split_dims(offset: Poly, rank: int) -> list[DimIndex]:
    """Write `offset` as sum_d stride_d * index_d: every monomial that varies along dimension d
    goes to d, its stride the common factor of those monomials (a scalar atom, a constant or 1);
    monomials that vary along no dimension go to the dimension whose (non-unit) stride divides
    them, else to the unit-stride dimension."""
    groups: dict[int, dict] = {d: {} for d in range(rank)}
    scalars: dict = {}
    for m, c in offset.terms:
        ds = dims_of(m)
        if len(ds) > 1:
            raise NotAffine("an address mixes two tile dimensions in one term")
        if ds:
            d = ds.pop()
            if d >= rank:
                raise NotAffine("an address varies along a dimension the tile does not have")
            groups[d][m] = c
        else:
            scalars[m] = c
    if any(not g for g in groups.values()):
        raise NotAffine("an address does not move along every tile dimension")
    strides = {d: _common_factor(groups[d]) for d in range(rank)}
    for m, c in scalars.items():
        for d in sorted(range(rank), key=lambda d: (strides[d] == Poly.const(1), d)):
            if _divide_mono(m, c, strides[d]) is not None:
                groups[d][m] = groups[d].get(m, 0) + c
                break
        else:
            raise NotAffine("an address has a term that belongs to no tile dimension")
    out = []
    for d in range(rank):
        idx = Poly({})
        for m, c in groups[d].items():
            q = _divide_mono(m, c, strides[d])
            if q is None:
                raise NotAffine("an address's stride does not divide all of its terms")
            idx = idx + q
        out.append(DimIndex(strides[d], idx))
    return out


def _common_factor(group: dict) -> Poly:
    """The stride of a dimension: a scalar atom that divides every monomial; else the gcd of the
    coefficients (a constant row length); 1 when there is none."""
    common = None
    for m in group:
        atoms = {a for a in m if not a[1] and a[0] != TRIP}
        common = atoms if common is None else common & atoms
    if common:
        return Poly({(sorted(common, key=_key)[0],): 1})
    import math
    g = 0
    for c in group.values():
        g = math.gcd(g, abs(c))
    return Poly.const(g if g > 1 else 1)


def _divide_mono(m: tuple, c: int, s: Poly) -> Poly | None:
    (sm, sc), = s.terms
    atoms = list(m)
    for a in sm:
        if a not in atoms:
            return None
        atoms.remove(a)
    if c % sc:
        return None
    return Poly({tuple(sorted(atoms, key=_key)): c // sc})


def conditions(forms: Forms, mask: Value) -> list[Poly]:
    """A boolean mask as a conjunction of conditions `D < 0` (forms D over the mask's dims)."""
    from .query import cmp_predicate
    op = mask.owner
    if op is None:
        raise NotAffine("a mask is a function argument")
    if op.name == BROADCAST:
        return conditions(forms, op.operands[0])
    if op.name == EXPAND_DIMS:
        axis = ExpandDimsOp(op).axis
        shift = lambda p: tuple(d + 1 if d >= axis else d for d in p)  # noqa: E731
        return [d.map_placement(shift) for d in conditions(forms, op.operands[0])]
    if op.name == "arith.andi":
        return conditions(forms, op.operands[0]) + conditions(forms, op.operands[1])
    if op.name == CONSTANT:
        c = ConstantOp(op)
        if c.splat_literal == "true":
            return []
        raise NotAffine("a mask is a constant that is not all true")
    if op.name == "arith.cmpi":
        pred = cmp_predicate(op)
        a, b = (forms.form(x) for x in op.operands)
        if not isinstance(a, Poly) or not isinstance(b, Poly):
            raise NotAffine("a mask compares values that are not integer forms")
        one = Poly.const(1)
        if pred in ("slt", "ult"):
            return [a + b.scale(-1)]
        if pred in ("sgt", "ugt"):
            return [b + a.scale(-1)]
        if pred in ("sle", "ule"):
            return [a + b.scale(-1) + one.scale(-1)]
        if pred in ("sge", "uge"):
            return [b + a.scale(-1) + one.scale(-1)]
        raise NotAffine(f"a mask compares with '{pred}'")
    raise NotAffine(f"a mask is computed by '{op.name}'")


__all__ = ["Forms", "Poly", "TRIP", "NotAffine", "DimIndex", "split_dims", "conditions",
           "undetermined", "memory_written", "dims_of", "is_scalar", "position", "trip", "without", "drop_trip", "divide",
           "swap_dims", "subst_trip"]
