"""Integer index expressions of TTIR, evaluated symbolically (what `hopper-ws` matches on).

A tile load's address is `base + offset`, the offset a polynomial over *atoms*:

    ("r", d)        position along tensor dimension d (tt.make_range through expand_dims)
    ("kk",)         the k-loop's trip counter (0, 1, ...): the loop's iv and its pointer
                    increments are rewritten in terms of it
    ("v", id)       an opaque integer SSA value (a function argument, a program id, pid_m, ...)
    ("rem", p, q)   p mod q and ("div", p, q) p / q, for p, q polynomials (kept opaque)

so `(pid_m * 128 + arange(128))[:, None] % M * stride + arange(64)[None, :] + 64 * k` evaluates to
{(rem(128·pid_m + r0, M), stride): 1, (r1,): 1, (kk,): 64}, whatever order the user wrote it in
(tile indices or offsets, one addptr or several, the stride applied before or after the sum).
`split_dims` then reads off, per dimension, the index expression and its stride.
"""
from __future__ import annotations

from collections import defaultdict

from ..ir.core import Value
from ..ir.match import ForLoop
from ..ir.ops import ExpandDimsOp, shape_of as shape
from ..ir.query import cmp_predicate, constant_value, make_range_bounds

Poly = dict  # frozenset-able: {monomial (sorted tuple of atoms): coefficient}


class NotAffine(Exception):
    pass


def _mono_key(atoms) -> tuple:
    return tuple(sorted(atoms, key=repr))


def padd(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + sign * c
        if out[m] == 0:
            del out[m]
    return out


def pmul(a: Poly, b: Poly) -> Poly:
    out: dict = {}
    for m1, c1 in a.items():
        for m2, c2 in b.items():
            m = _mono_key(m1 + m2)
            out[m] = out.get(m, 0) + c1 * c2
            if out[m] == 0:
                del out[m]
    return out


def const(c: int) -> Poly:
    return {(): c} if c else {}


def frozen(p: Poly) -> tuple:
    return tuple(sorted(p.items(), key=repr))


def atoms_of(p: Poly) -> set:
    return {a for m in p for a in m}


def dims_of_atom(a) -> set:
    if a[0] == "r":
        return {a[1]}
    if a[0] in ("rem", "div"):
        return {d for part in (a[1], a[2]) for m, _ in part for x in m for d in dims_of_atom(x)}
    return set()


def has_kk(p: Poly) -> bool:
    def rec(a):
        if a == ("kk",):
            return True
        if a[0] in ("rem", "div"):
            return any(rec(x) for part in (a[1], a[2]) for m, _ in part for x in m)
        return False
    return any(rec(a) for m in p for a in m)


def shift_dims(p: Poly, axis: int) -> Poly:
    """The polynomial of a tensor after tt.expand_dims(axis): dims >= axis move up by one."""
    def sh(a):
        if a[0] == "r":
            return ("r", a[1] + 1) if a[1] >= axis else a
        if a[0] in ("rem", "div"):
            return (a[0], frozen(shift_dims(dict(a[1]), axis)), frozen(shift_dims(dict(a[2]), axis)))
        return a
    return {_mono_key(tuple(sh(a) for a in m)): c for m, c in p.items()}


class Evaluator:
    """Evaluates integer values and pointer values of one k-loop (`loop`, may be None)."""

    def __init__(self, loop: ForLoop | None):
        self.loop = loop
        self.values: dict[int, Value] = {}  # atom id -> Value
        self._memo: dict[int, Poly] = {}
        self._pmemo: dict[int, tuple] = {}

    def opaque(self, v: Value) -> Poly:
        self.values[id(v)] = v
        return {(("v", id(v)),): 1}

    def value_of(self, atom) -> Value | None:
        return self.values.get(atom[1]) if atom[0] == "v" else None

    # -- integers ---------------------------------------------------------------------------
    def ev(self, v: Value) -> Poly:
        key = id(v)
        if key not in self._memo:
            self._memo[key] = self._ev(v)
        return self._memo[key]

    def _ev(self, v: Value) -> Poly:
        loop = self.loop
        if loop is not None and v is loop.iv:
            lb, _, step = loop.bounds
            s = self.ev(step)
            if atoms_of(s):
                raise NotAffine("the k-loop's step is not a constant")
            return padd(self.ev(lb), pmul({(("kk",),): 1}, s))
        op = v.owner
        if op is None:
            return self.opaque(v)
        name = op.name
        if name == "arith.constant":
            cv = constant_value(op)
            if cv is None or not isinstance(cv[0], int) or isinstance(cv[0], bool):
                return self.opaque(v)
            return const(cv[0])
        if name in ("tt.splat", "tt.broadcast", "arith.extsi", "arith.extui", "arith.trunci",
                    "arith.index_cast"):
            return self.ev(op.operands[0])
        if name == "tt.expand_dims":
            return shift_dims(self.ev(op.operands[0]), ExpandDimsOp(op).axis)
        if name == "tt.make_range":
            start, _ = make_range_bounds(op)
            return padd({(("r", 0),): 1}, const(start))
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            a, b = self.ev(op.operands[0]), self.ev(op.operands[1])
            if not shape(v) and not self._keeps(a, b, name):
                # scalar arithmetic on tile coordinates (grouped orderings, ...) stays one atom:
                # `pid_m = first_m + (t % group) % size` is the row block, whatever it is made of
                return self.opaque(v)
            if name == "arith.muli":
                return pmul(a, b)
            return padd(a, b, -1 if name == "arith.subi" else 1)
        if name in ("arith.remsi", "arith.remui", "arith.divsi", "arith.divui"):
            a, b = self.ev(op.operands[0]), self.ev(op.operands[1])
            kind = "rem" if "rem" in name else "div"
            if not atoms_of(a) and not atoms_of(b) and b.get((), 0):
                x, y = a.get((), 0), b[()]
                return const(x % y if kind == "rem" else x // y)
            if not shape(v) and not has_kk(a):
                return self.opaque(v)  # a scalar: a tile coordinate or a count, one atom
            return {((kind, frozen(a), frozen(b)),): 1}
        return self.opaque(v)

    # -- pointers ---------------------------------------------------------------------------
    def evp(self, v: Value) -> tuple[Value, Poly]:
        """(pointer argument, element offset polynomial) of a pointer (tensor) value."""
        key = id(v)
        if key not in self._pmemo:
            self._pmemo[key] = self._evp(v)
        return self._pmemo[key]

    def _evp(self, v: Value) -> tuple[Value, Poly]:
        loop = self.loop
        if loop is not None and v in loop.iter_args:
            i = loop.iter_args.index(v)
            base, init = self.evp(loop.inits[i])
            y = loop.yields[i]
            if y.owner is None or y.owner.name != "tt.addptr" or y.owner.operands[0] is not v:
                raise NotAffine("a loop-carried pointer is not advanced by a tt.addptr of itself")
            inc = self.ev(y.owner.operands[1])
            if has_kk(inc) or any(a[0] == "v" and self._in_loop(a) for a in atoms_of(inc)):
                raise NotAffine("a loop-carried pointer's increment changes with k")
            return base, padd(init, pmul({(("kk",),): 1}, inc))
        op = v.owner
        if op is None:
            return v, {}
        if op.name == "tt.splat":
            return self.evp(op.operands[0])
        if op.name == "tt.broadcast":
            return self.evp(op.operands[0])
        if op.name == "tt.expand_dims":
            base, p = self.evp(op.operands[0])
            return base, shift_dims(p, ExpandDimsOp(op).axis)
        if op.name == "tt.addptr":
            base, p = self.evp(op.operands[0])
            return base, padd(p, self.ev(op.operands[1]))
        raise NotAffine(f"a pointer is computed by '{op.name}'")

    @staticmethod
    def _keeps(a: Poly, b: Poly, name: str) -> bool:
        """Whether scalar arithmetic is expanded: by a constant, or involving the k counter."""
        if not atoms_of(a) or not atoms_of(b):
            return True
        return name != "arith.muli" and (has_kk(a) or has_kk(b))

    def _in_loop(self, atom) -> bool:
        v = self.value_of(atom)
        return v is not None and self.loop is not None and self.loop.contains(v)

    # -- masks ------------------------------------------------------------------------------
    def conditions(self, m: Value) -> list[Poly]:
        """A boolean mask as a conjunction of `D < 0` conditions (polynomials D over the mask's
        own dims)."""
        op = m.owner
        if op is None:
            raise NotAffine("a mask is a function argument")
        if op.name == "tt.broadcast":
            return self.conditions(op.operands[0])
        if op.name == "tt.expand_dims":
            axis = ExpandDimsOp(op).axis
            return [shift_dims(d, axis) for d in self.conditions(op.operands[0])]
        if op.name == "arith.andi":
            return self.conditions(op.operands[0]) + self.conditions(op.operands[1])
        if op.name == "arith.constant":
            cv = constant_value(op)
            if cv is not None and cv[0] is True:
                return []
            raise NotAffine("a mask is a constant that is not all true")
        if op.name == "arith.cmpi":
            pred = cmp_predicate(op)
            a, b = self.ev(op.operands[0]), self.ev(op.operands[1])
            if pred in ("slt", "ult"):
                return [padd(a, b, -1)]
            if pred in ("sgt", "ugt"):
                return [padd(b, a, -1)]
            if pred in ("sle", "ule"):
                return [padd(padd(a, b, -1), const(-1))]
            if pred in ("sge", "uge"):
                return [padd(padd(b, a, -1), const(-1))]
            raise NotAffine(f"a mask compares with '{pred}'")
        raise NotAffine(f"a mask is computed by '{op.name}'")


# ---------------------------------------------------------------------------------------------
# Reading a tile address
# ---------------------------------------------------------------------------------------------

class DimIndex:
    """Index along one tile dimension: `wrap(tile * size + r + step * kk + offset)`, with stride."""

    def __init__(self, stride: Poly, index: Poly):
        self.stride = stride
        self.index = index
        inner = index
        self.modulus = None
        if len(index) == 1:
            (m, c), = index.items()
            if c == 1 and len(m) == 1 and m[0][0] == "rem":
                inner = dict(m[0][1])
                self.modulus = dict(m[0][2])
        self.inner = inner

    def parts(self, dim: int):
        """(coefficient of the position r_dim, coefficient of kk, the tile scalar poly)."""
        r = self.inner.get((("r", dim),), 0)
        kk = self.inner.get((("kk",),), 0)
        rest = {m: c for m, c in self.inner.items() if m not in ((("r", dim),), (("kk",),))}
        return r, kk, rest


def split_dims(offset: Poly, rank: int) -> list[DimIndex]:
    """Write `offset` as sum_d stride_d * index_d: every monomial that involves dimension d goes to
    d; its stride is the common factor of those monomials (a function argument, a constant or 1);
    monomials with no dimension go to the dimension whose (non-unit) stride divides them, else to
    the unit-stride dimension."""
    groups: dict[int, Poly] = defaultdict(dict)
    scalars: Poly = {}
    for m, c in offset.items():
        dims = set().union(*(dims_of_atom(a) for a in m)) if m else set()
        if len(dims) > 1:
            raise NotAffine("an address mixes two tile dimensions in one term")
        if dims:
            groups[dims.pop()][m] = c
        else:
            scalars[m] = c
    if set(groups) != set(range(rank)):
        raise NotAffine("an address does not move along every tile dimension")
    strides = {d: _common_factor(groups[d]) for d in range(rank)}
    for m, c in scalars.items():
        placed = False
        for d in sorted(range(rank), key=lambda d: (strides[d] == {(): 1}, d)):
            q = _divide(m, c, strides[d])
            if q is not None:
                groups[d] = padd(groups[d], {m: c})
                placed = True
                break
        if not placed:
            raise NotAffine("an address has a term that belongs to no tile dimension")
    out = []
    for d in range(rank):
        idx = {}
        for m, c in groups[d].items():
            q = _divide(m, c, strides[d])
            if q is None:
                raise NotAffine("an address's stride does not divide all of its terms")
            idx = padd(idx, q)
        out.append(DimIndex(strides[d], idx))
    return out


def _common_factor(p: Poly) -> Poly:
    """The stride: an atom (or constant) that divides every monomial; 1 when there is none."""
    monos = list(p.items())
    common = None
    for m, _ in monos:
        atoms = [a for a in m if a[0] == "v"]
        s = set(atoms)
        common = s if common is None else common & s
    if common:
        a = sorted(common, key=repr)[0]
        return {(a,): 1}
    coefs = [abs(c) for _, c in monos]
    import math
    g = 0
    for c in coefs:
        g = math.gcd(g, c)
    # a constant stride (a constexpr row length) divides every term of the dimension
    return const(g) if g > 1 else const(1)


def _divide(m: tuple, c: int, s: Poly) -> Poly | None:
    (sm, sc), = s.items()
    atoms = list(m)
    for a in sm:
        if a in atoms:
            atoms.remove(a)
        else:
            return None
    if c % sc:
        return None
    return {_mono_key(atoms): c // sc}


def tile_shape(v: Value) -> tuple[int, ...]:
    return shape(v)
