"""reuse-loads: one load for what a block loads twice from memory the kernel never writes.

Algebra
-------
Two loads of the same addresses under the same mask and `other` return the same values when
nothing writes that memory while the kernel runs, so the later load's users can take the
earlier load's result::

    %a = tt.load %p, %m, %o                      %a = tt.load %p, %m, %o
    ... (no write to %p's memory) ...     ->     ...
    %b = tt.load %q, %m2, %o2   (q == p, ...)    ... uses of %a where %b was used ...
    ... uses of %b ...

"The same addresses" is decided on canonical forms (`normfuse.ir.affine.Forms`), not on the
spelling: `xrow[:, None] + h * D + offs[None, :]` and `xrow[:, None] + (h * D + offs)[None, :]`
are one address tensor. What this is for: FlashNormAttention's forward reads its head's x tile in
the LayerNorm statistics' loop and again in the attention's loop (and once more for the outer
residual); once cluster-reduce has dealt one head to each CTA and inlined both loops, the two
loads sit in one block with equal addresses. Triton keeps every `tt.load` (a load is not pure
for its CSE), so without this pass the tile comes from L2 twice and is converted twice.

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. Both are pointer `tt.load`s (not descriptor loads, not volatile) directly in the same block,
   the earlier one first, with the same result type and the same cache and eviction modifiers.
2. Their pointer, mask and `other` have equal canonical forms (both without a mask, or both
   with one; the same for `other`). A form names an op by its name, attributes and operands'
   forms, not by its identity or its regions (two `tt.reduce`s of one tensor, a sum and a max,
   have one form; so have two loads of one address before and after a store to it), so equal
   forms mean equal values only when every op the compared values are computed from, up to the
   kernel's arguments, is pure without regions or a load of memory the kernel never writes
   (`affine.undetermined`).
3. No op of the kernel writes the loads' memory: every store's pointer traces to a kernel
   argument (`memory_root`) other than the loads', and no other op writes memory the kernel can
   see (an atomic, a call, inline asm that is not normfuse's own); kernel arguments are taken
   not to alias one another, as the other passes do.
4. Register pressure: no `tt.dot` and no control flow (an `scf` loop or branch) between them. The
   earlier load's tile stays live until the later load's users; across an attention's or a
   GEMM's dots it would take registers the dots need (FlashNormAttention's residual reload
   after the attention is left alone, with a remark).

Across the trips of a loop (option across-trips)
-----------------------------------------------
A load in a loop's trip t + 1 may read what another load of the same loop read in trip t: in
FlashNormAttention's STATS_AHEAD walk, trip t loads row block t + 1's x tile for its LayerNorm
sums (`_ln_sums` of the next block, after cluster-reduce one head's tile a CTA), and trip t + 1
loads it again for q. The later trip then takes the earlier trip's value, carried by the loop::

    %p = tt.load %a(lb)                              %p = tt.load %a(lb)
    scf.for %i = lb to ub step s iter_args(...) {    scf.for %i ... iter_args(..., %c = %p) {
      %b = tt.load %a(%i)                    ->        ... uses of %c where %b was used ...
      ... uses of %b ...                               %n = tt.load %a(%i + s)
      %n = tt.load %a(%i + s)                          scf.yield ..., %n
      scf.yield ...                                  }
    }

Legality, beyond rules 1 (both loads directly in the loop's body) and 3 (memory the kernel never
writes): the later trip's load %b at trip t + 1 has the pointer, mask and `other` of %n at trip
t (`Forms` of the loop: the induction variable is lb + t s, and %b's forms with t -> t + 1 equal
%n's: `subst_trip`; a form that depends on a loop-carried value other than a recurrence is
refused; every op they are computed from is as rule 2 asks, the loop's bounds and recurrences'
starts included), and the first trip's value comes from a load %p in the loop's block before it
whose forms are %b's at t = 0, its ops as rule 2 asks too (in FlashNormAttention, the walk's
first block's LayerNorm sums before the walk; without one the load stays, with a remark). Both loads read the same addresses under
the same mask from memory nothing writes while the kernel runs, so %n's value in trip t is %b's
in trip t + 1, whatever the trip count (none: %p is unused). Rule 4 does not apply: the tile is
live across the loop's back edge (from %n to the end of the trip, and from the start of the next
to %b's last use), which is the register cost this option asks for; `cluster-reduce`'s early
loads and Triton's pipeliner see one load (%n) instead of two.

With across-trips=values the same holds of any value computed from such loads by pure ops (its
forms, keyed by the loads' address forms, say that it is the same computation of the same
data): the latest such value in the body that has a twin one trip earlier is carried (the
ops left without users are erased), then the next, until none is left. FlashNormAttention's
carry form (STATS_AHEAD = 2, LN_MMA) has one: x as the LayerNorm sums convert it to the MMA
layout, `_in_mma(x.to(fp32))`, whose twin before the walk is the first block's; carrying that
fp32 tile (64 registers a thread at 64 x 128, 4 warps) rather than the bf16 load keeps it in the
layout its users want: the loaded tile, carried, stayed in the load's layout in Triton's layout
pass and was converted in every trip (sm_90 body softmax H 2: 1709 instructions and 4 B of
spills, against 1666 without the carry and 1439 with the converted tile carried). A value that
does not depend on a load (the loop's own arithmetic) is never carried.

Options
-------
across-dots = false        true: also merge loads with `tt.dot`s between them (rule 4's register
                           pressure, to measure: where Triton's pipeliner has the earlier load in
                           shared memory, the later use may read it there)
across-trips = false       true: also carry a load's value to the next trip of its loop where
                           that trip loads the same addresses again (above); values: a value
                           computed from such loads (above). FlashNormAttention's carry form:
                           `prepare_flash_norm_attention(stats_ahead="carry")` (values).
"""
from __future__ import annotations

from dataclasses import dataclass

from typing import Literal

from ..ir import Module, Op
from ..ir.affine import TRIP, Forms, NotAffine, Poly, subst_trip, undetermined
from ..ir.ops import DOT, FOR, LOADS, ForOp, LoadOp, root_names, unknown_writer, written_roots
from ..ir.effects import is_pure
from . import Pass, PassRun

_ATTRS = ("cacheModifier", "evictionPolicy")  # (volatile loads are not candidates)


@dataclass(frozen=True)
class ReuseLoads(Pass):
    """Reuse an earlier load of the same addresses (memory the kernel never writes)."""

    name = "reuse-loads"
    summary = ("load once what a block loads twice from memory the kernel never writes (x in "
               "FlashNormAttention's statistics and attention loops; across-trips: what the "
               "previous trip of a loop loaded)")

    across_dots: bool = False
    across_trips: bool | Literal["values"] = False

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        for func in module.functions():
            loads = [o for o in func.walk() if o.name in LOADS]
            if len(loads) < 2:
                run.missed("fewer than two loads in the function", func)
                continue
            why = unknown_writer(func)
            if why:
                run.missed(f"no load reused: {why}", func)
                continue
            written = written_roots(func)
            pairs, why_not = _pairs(func, loads, written, self.across_dots)
            if not pairs:
                run.missed(f"no load reused: {why_not or 'no two loads of the same addresses'}",
                           func)
            else:
                for keep, drop in pairs:  # analysis done: now rewrite
                    module.replace_all_uses(drop.results[0], keep.results[0])
                    module.erase(drop)
                n = len(pairs)
                run.applied(f"{n} load{'s' if n > 1 else ''} (of {', '.join(root_names([d for _, d in pairs]))}) "
                            f"reuse{'' if n > 1 else 's'} an earlier load of the same addresses in "
                            "the same block (memory the kernel never writes)", pairs[0][1])
                if why_not:
                    run.missed(f"a load of the same addresses kept: {why_not}", func)
            if self.across_trips:
                _carry_across_trips(module, func, written, run,
                                    self.across_trips == "values")


def _signature(o: Op) -> tuple:
    return tuple((a, o.attr(a).text if o.attr(a) is not None else None) for a in _ATTRS)


def _pairs(func: Op, loads: list[Op], written: set,
           across_dots: bool = False) -> tuple[list[tuple[Op, Op]], str | None]:
    """(earlier load, later load) pairs to merge, and why the first other same-address pair
    stayed (None when none did)."""
    forms = Forms()
    pairs, dropped, why_not = [], set(), None
    cands = []
    for o in loads:
        ld = LoadOp(o)
        if not ld.is_descriptor and not ld.is_volatile:
            cands.append(o)
    for j, later in enumerate(cands):
        for earlier in cands[:j]:
            if id(earlier) in dropped or earlier.block is not later.block:
                continue
            if not _same_load(forms, earlier, later):
                continue
            root = LoadOp(later).root
            if root is None or id(root) in written:
                why_not = why_not or ("a load whose pointer does not trace to a kernel argument"
                                      if root is None else
                                      f"the kernel writes the memory of {root.name.lstrip('%')}")
                continue
            blocker = next((o for o in _between(earlier, later)
                            if (o.name == DOT and not across_dots)
                            or (o.regions and o.name.startswith("scf."))), None)
            if blocker is not None:
                why_not = why_not or (f"'{blocker.name}' between two loads of "
                                      f"{', '.join(root_names([later]))} (the tile would stay "
                                      "live across it)")
                continue
            why = undetermined([earlier, later], written)
            if why:
                why_not = why_not or why
                continue
            pairs.append((earlier, later))
            dropped.add(id(later))
            break
    return pairs, why_not


def _same_load(forms: Forms, a: Op, b: Op) -> bool:
    la, lb = LoadOp(a), LoadOp(b)
    if a.results[0].type != b.results[0].type or _signature(a) != _signature(b):
        return False
    try:
        for x, y in ((la.ptr, lb.ptr), (la.mask, lb.mask), (la.other, lb.other)):
            if (x is None) != (y is None):
                return False
            if x is not None and not forms.equal(x, y):
                return False
    except NotAffine:
        return False
    return True


def _between(a: Op, b: Op) -> list[Op]:
    block = a.block
    i, j = block.index_of(a), block.index_of(b)
    return list(block.ops[i + 1:j])


def _candidate(o: Op) -> bool:
    if o.name not in LOADS:
        return False
    ld = LoadOp(o)
    return not ld.is_descriptor and not ld.is_volatile


def _load_forms(forms: Forms, o: Op) -> tuple | None:
    """(pointer, mask, other) forms of a pointer load; None when one is not readable."""
    ld = LoadOp(o)
    try:
        return tuple(None if x is None else forms.form(x) for x in (ld.ptr, ld.mask, ld.other))
    except NotAffine:
        return None


def _at(fs: tuple, repl: Poly) -> tuple | None:
    out = []
    for f in fs:
        if f is None:
            out.append(None)
            continue
        g = subst_trip(f, repl)
        if g is None:
            return None
        out.append(g)
    return tuple(out)


def _carry_across_trips(module: Module, func: Op, written: set, run: PassRun,
                        values: bool = False) -> None:
    """Option across-trips (module docstring): a load (`values`: a value computed from loads
    by pure ops) in trip t + 1 takes the value its twin in the same loop had in trip t, carried
    as an iter_arg (trip 0's from its twin before the loop)."""
    done, names, why_not = [], [], None
    for loop_op in [o for o in func.walk() if o.name == FOR]:
        while True:  # one carry at a time, the loop's forms read afresh after each
            found, why = _one_carry(ForOp(loop_op), written, values)
            why_not = why_not or why
            if found is None:
                break
            later, ahead, init, roots, twins = found
            loop = ForOp(loop_op)
            names += roots
            args, _ = loop.add_iter_args(module, [init], [later.type], hint="carried")
            loop.set_yields(list(loop.yields) + [ahead], module)  # (elided: built)
            for v in twins:  # (this trip's copies of the value too)
                module.replace_all_uses(v, args[0])
            _erase_dead(module, loop, written)
            done.append(loop_op)
    if done:
        n = len(done)
        what = "value" if values else "load"
        run.applied(f"across-trips: {n} {what}{'s' if n > 1 else ''} (of {', '.join(sorted(set(names)))}) "
                    f"take{'' if n > 1 else 's'} what the previous trip of the loop computed "
                    "from the same addresses (carried as an iter_arg; the first trip's from "
                    "its twin before the loop; memory the kernel never writes)", done[0])
    else:
        run.missed("across-trips: nothing carried: "
                   f"{why_not or 'no load reads what another read in the previous trip'}", func)


def _slice_ok(v, block, written: set) -> list | None:
    """The loads that `v` is computed from in `block` when every op of its slice there is pure
    or a pointer load from memory the kernel never writes (else None)."""
    loads, seen, todo = [], set(), [v]
    while todo:
        x = todo.pop()
        d = x.owner
        if d is None or d.block is not block or id(d) in seen:
            continue
        seen.add(id(d))
        if _candidate(d):
            root = LoadOp(d).root
            if root is None or id(root) in written:
                return None
            loads.append(d)
        elif d.regions or not is_pure(d):
            return None
        todo += [u for u in d.operands]
    return loads


def _one_carry(loop: ForOp, written: set, values: bool):
    """((later value, its twin of the previous trip, its twin before the loop, memory roots),
    or None; why a candidate was refused, or None). The latest candidate in the body first."""
    body_ops = list(loop.body.ops)
    if values:
        vals = [r for o in body_ops if _candidate(o) or (not o.regions and is_pure(o))
                for r in o.results]
    else:
        vals = [o.results[0] for o in body_ops if _candidate(o)]
    if not vals:
        return None, None
    forms = Forms(loop)
    block = loop.op.block
    before = [r for o in block.ops[:block.index_of(loop.op)]
              if _candidate(o) or (values and not o.regions and is_pure(o)) for r in o.results]
    nxt, first = Poly.atom(TRIP) + Poly.const(1), Poly.const(0)
    why_not = None

    def form(v):
        try:
            return forms.form(v)
        except NotAffine:
            return None

    table = {}
    for v in vals:
        table.setdefault((v.type, form(v)), v)
    for later in reversed(vals):
        fl = form(later)
        shifted = subst_trip(fl, nxt) if fl is not None else None
        if shifted is None:
            continue
        ahead = table.get((later.type, shifted))
        if ahead is None or ahead is later:
            continue
        loads = _slice_ok(later, loop.body, written)
        if not loads:  # (a value of loads only: the loop's own arithmetic is not carried)
            if loads is None:
                why_not = why_not or "a value computed from memory the kernel writes"
            continue
        if _slice_ok(ahead, loop.body, written) is None:
            continue
        at0 = subst_trip(fl, first)
        init = next((v for v in before if v.type == later.type and form(v) == at0), None)
        if init is None:
            why_not = why_not or (f"no twin of a value of {', '.join(root_names(loads))} "
                                  "before its loop (the carried value's start)")
            continue
        why = undetermined([later.owner, ahead.owner, init.owner], written, (loop,))
        if why:
            why_not = why_not or why
            continue
        twins = [v for v in vals if v.type == later.type and form(v) == fl]
        return (later, ahead, init, root_names(loads), twins), why_not
    return None, why_not


def _erase_dead(module: Module, loop: ForOp, written: set) -> None:
    """Erase the loop body's pure ops and loads (of memory nothing writes) left without users."""
    while True:
        users = module.user_index()
        dead = [o for o in loop.body.ops if o.results and not o.regions
                and (is_pure(o) or _candidate(o))
                and not any(users.get(id(r)) for r in o.results)]
        if not dead:
            return
        for o in dead:
            module.erase(o)


def _same_kind(a: Op, b: Op) -> bool:
    return a.results[0].type == b.results[0].type and _signature(a) == _signature(b)
