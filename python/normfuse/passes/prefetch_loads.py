"""prefetch-loads: let Triton pipeline a loop's tile loads that reach a dot only as its accumulator.

Why
---
Triton 3.6's pipeliner (AssignLatencies) gives a latency only to the loads it finds walking back
from a `tt.dot`'s A and B operands, and it skips every accumulator operand on the way (through
an earlier dot too). A tile load whose values reach the loop's dots only through accumulators
stays a synchronous register load in every trip, where the same load feeding an A operand would
be prefetched a trip ahead through cp.async buffers. What this is for: FlashNormAttention's
forward passes its x tile through a K = 16 product of zeros (`kernels/attention.py`, `_in_mma`)
so that Triton computes the LayerNorm in the MMA accumulator's layout; x then reaches the
attention's dots only as an accumulator, and without this pass the walk over row blocks loads
each block's x when it starts instead of one block ahead.

What
----
For every `scf.for` with no loop nested in it whose body holds such a load (a tile, rank >= 2,
directly in the body, reaching a dot of the body, but none of the body's dots through an A or B
operand): that load and every tile load of the body that Triton would pipeline by itself (those
reaching a dot's A or B operand) get `tt.latency = S - 1` (S = the loop's `tt.num_stages`, else
the compilation's num_stages). Triton's AssignLatencies then takes the loop's latencies as given
(it skips its own assignment for a loop where an op carries one), and LowerLoops streams each
tagged tile through S - 1 cp.async buffers read by local_loads in the layouts their users want.
S - 1 is what Triton's default assigns to a load one level from a dot, so the loads it pipelined
already are pipelined as before.

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
Only attributes change: the program computes the same values. Left alone:
1. a loop that carries `tt.latency` already (the user's or another pass's), has a loop nested in
   it (Triton pipelines innermost loops only), or runs with S < 2 or an unknown S;
2. a loop with a 1-D load that reaches an A or B operand with unit stride (Triton may pipeline
   it by itself; the pass tags tiles only, and tagging would take that from it), or whose
   stride is not readable; loop-invariant ones (FlashNormAttention's LayerNorm weight and bias
   rows) do not count: Triton's LICM takes them out of the loop before it pipelines;
3. the accumulator-only tile's memory is written by the kernel (a prefetch reads it a trip
   early), or its pointer does not trace to a kernel argument, or the kernel writes memory
   through something else than a traced store (an atomic, a call, foreign inline asm).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module, Op
from ..ir.affine import Forms, NotAffine, position
from ..ir.core import TensorType
from ..ir.effects import pure_operand_slice
from ..ir.ops import (DOT, FOR, LATENCY, LOADS, WHILE, ForOp, LoadOp, attr, root_names, set_attr,
                      type_of, unknown_writer, written_roots)
from . import Pass, PassRun

_LOOPS = (FOR, WHILE)


@dataclass(frozen=True)
class PrefetchLoads(Pass):
    """Pipeline a loop's tile loads that reach its dots only as accumulators (tt.latency)."""

    name = "prefetch-loads"
    summary = ("let Triton prefetch a loop's tile loads that reach its dots only as accumulators "
               "(FlashNormAttention's x tile, anchored in the MMA layout)")

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        for func in module.functions():
            loops = [o for o in func.walk() if o.name == FOR
                     and not any(x.name in _LOOPS for x in o.walk() if x is not o)]
            if not loops:
                run.missed("no innermost scf.for loop", func)
                continue
            writer = unknown_writer(func)
            written = written_roots(func)
            for lp in loops:
                tagged, why = _tag(ForOp(lp), run.context.num_stages, writer, written)
                if tagged:
                    lat = attr(tagged[0], LATENCY).int
                    run.applied(f"{len(tagged)} tile load{'s' if len(tagged) > 1 else ''} (of "
                                f"{', '.join(root_names(tagged))}) given tt.latency = {lat}: "
                                "Triton's pipeliner prefetches them a trip ahead, also those "
                                "that reach the loop's dots only as accumulators", lp)
                else:
                    run.missed(f"no load tagged: {why}", lp)


def _rank(v) -> int:
    t = type_of(v)
    return len(t.shape) if isinstance(t, TensorType) else 0


def _tag(loop: ForOp, num_stages: int | None, writer: str | None, written: set):
    """Tag what the rules allow in `loop`; (loads tagged, why none was)."""
    body = loop.body
    top = list(body.ops)
    if any(attr(o, LATENCY) is not None for o in loop.op.walk()):
        return [], "the loop carries tt.latency already"
    in_body = {id(o) for o in top}
    dots = [o for o in top if o.name == DOT]
    if not dots:
        return [], "no tt.dot directly in the loop body"

    def loads_reaching(start_ops, through_acc: bool) -> set:
        """ids of the body's loads that the given ops' operands reach, walking defining ops of
        the body (through a dot's accumulator only if `through_acc`), as Triton's
        AssignLatencies walks them (it never walks through accumulators)."""
        found, seen = set(), set()
        stack = list(start_ops)
        while stack:
            o, operands = stack.pop()
            for v in operands:
                d = v.owner
                if d is None or id(d) not in in_body or id(d) in seen:
                    continue
                seen.add(id(d))
                if d.name in LOADS:
                    found.add(id(d))
                ops = d.operands if (d.name != DOT or through_acc) else d.operands[:2]
                stack.append((d, ops))
        return found

    ab = loads_reaching([(d, d.operands[:2]) for d in dots], through_acc=False)
    anywhere = loads_reaching([(d, d.operands) for d in dots], through_acc=True)
    by_id = {id(o): o for o in top}
    acc_only = [by_id[i] for i in anywhere - ab if _rank(by_id[i].results[0]) >= 2]
    if not acc_only:
        return [], "no tile load reaches the loop's dots only as an accumulator"
    stages = loop.num_stages or num_stages
    if not stages:
        return [], ("num_stages unknown (the loop has no tt.num_stages; outside normfuse.compile "
                    "the compilation's is not known)")
    if stages < 2:
        return [], f"num_stages = {stages}: nothing to pipeline"
    forms = None
    inside = {id(x) for x in loop.op.walk()}
    block_args = {id(a) for a in body.args}
    for i in ab:
        o = by_id[i]
        if _rank(o.results[0]) != 1:
            continue
        if pure_operand_slice(o, body, inside, block_args) is not None:
            continue  # loop-invariant (a weight row): Triton's LICM takes it out of the loop
        forms = forms or Forms(loop, widen=True)
        try:
            f = forms.form(LoadOp(o).ptr)
            stride = position(f[2], 0) if isinstance(f, tuple) and len(f) == 3 else None
        except (NotAffine, TypeError, ValueError):
            stride = None
        if stride is None or stride == 1:
            return [], ("a 1-D load reaching a dot's A or B operand "
                        + ("with unit stride" if stride == 1 else "of unreadable stride")
                        + " (Triton may pipeline it by itself; tagging the loop would stop that)")
    for o in acc_only:
        ld = LoadOp(o)
        if ld.is_descriptor or ld.is_volatile:
            return [], "an accumulator-only tile load is a descriptor or volatile load"
        if writer:
            return [], writer
        if ld.root is None or id(ld.root) in written:
            return [], ("an accumulator-only tile load's pointer does not trace to a kernel "
                        "argument" if ld.root is None else
                        f"the kernel writes the memory of {ld.root.name.lstrip('%')} (a prefetch "
                        "reads it a trip early)")
    tagged = [o for o in top if id(o) in ab and _rank(o.results[0]) >= 2] + acc_only
    tagged.sort(key=body.index_of)
    for o in tagged:
        set_attr(o, LATENCY, stages - 1)
    return tagged, None
