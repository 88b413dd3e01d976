"""residual-acc: start a GEMM accumulator at the residual that is added to its result.

Algebra
-------
A residual added to a product, ``z = r + sum_k A_k B_k``, is the product accumulated onto ``r``:
``acc = r; acc += A_k B_k (k = 0, 1, ...)``. The tensor cores then add the residual (wgmma with
`use_acc` on an accumulator initialised from registers), and the separate addition (and its
register copy of the product) goes away. Only the floating-point order changes: r enters the
fp32 sum first instead of last. In FlashNormAttention this is the inner residual,
``z = P V + LN(x)`` (the blog's "offload the ln_q addition to TensorCore").

Before (a loop over K/V tiles; the one-tile form ``tt.dot %a, %b, %zero`` is handled the same way,
though Triton's canonicalizer usually folds it already)::

    %acc = scf.for ... iter_args(%c = %zero) { ... scf.yield (tt.dot %p, %v, %c) }
    %z = arith.addf %acc, %r

After::

    %acc = scf.for ... iter_args(%c = %r) { ... scf.yield (tt.dot %p, %v, %c) }
    // %z is %acc

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. One operand of an `arith.addf` is a `tt.dot` result whose accumulator is a zero constant, or
   an scf.for result whose loop-carried value starts at a zero constant and is only the
   accumulator operand of one `tt.dot` whose result is what the loop yields for it (so the loop
   computes exactly ``0 + sum_k A_k B_k``; an accumulator rescaled inside the loop, as online
   softmax does, is not a plain sum).
2. The product has no other user than the addition (its value without the residual is not needed).
3. The other operand (the residual) has the accumulator's type and is defined before the dot or
   the loop (it dominates the accumulator's start).
A product transformed between the loop and the addition (softmax's ``acc / l``, or
``acc * (1 / l)``) is reported as a miss, since ``(r + s) / l != r + s / l``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Module, Op, Value
from ..ir.ops import ADDF, DIVF, DOT, FOR, MULF, ForOp, is_zero_constant
from . import Pass, PassRun


@dataclass(frozen=True)
class ResidualAcc(Pass):
    """Fold a residual added to a GEMM's result into the accumulator's initial value."""

    name = "residual-acc"
    summary = "start a GEMM accumulator at the residual added to its result (the tensor cores add it)"

    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        found = False
        for func in module.functions():
            for op in list(func.walk()):
                if op.name != ADDF or op.block is None or len(op.operands) != 2:
                    continue
                for k in (0, 1):
                    prod, res = op.operands[k], op.operands[1 - k]
                    src = prod.owner
                    if src is None:
                        continue
                    form = _FORMS.get(src.name)
                    if form is not None:
                        check, start, what = form
                        why = check(module, op, src, prod, res)
                        if why is _NOT_A_PRODUCT:
                            continue
                        found = True
                        if why:
                            run.missed(why, op)
                            continue
                        start(module, src, prod, res)
                        _drop_add(module, op, prod)
                        run.applied(what, src)
                        break
                    via = _transformed_product(module, prod)
                    if via is not None:
                        found = True
                        run.missed(f"the product is transformed ('{via}') between its loop and the "
                                   "residual's addition (online softmax's acc / l): the residual "
                                   "cannot start the accumulator", op)
        if not found:
            run.missed("no residual added to a GEMM's accumulator (a one-tile tt.dot that already "
                       "starts at one, as Triton's canonicalizer folds it, needs nothing)")


_NOT_A_PRODUCT = "not a product"


def _start_dot(module: Module, dot: Op, prod: Value, res: Value) -> None:
    """The one-tile tt.dot accumulates onto the residual instead of its zero."""
    module.replace_all_uses(dot.operands[2], res, where=lambda o, d=dot: o is d)


def _start_loop(module: Module, loop: Op, prod: Value, res: Value) -> None:
    """The loop's accumulator starts at the residual instead of zero."""
    ForOp(loop).set_init(prod.index, res)


def _check_dot(module: Module, add: Op, dot: Op, prod: Value, res: Value):
    if any(u is not add for u in module.users(prod)):
        return _NOT_A_PRODUCT  # a product used for more than one sum (S = q K^T in an activation)
    if len(dot.operands) < 3 or not is_zero_constant(dot.operands[2]):
        return "the dot already accumulates onto a non-zero value"
    return _common(module, add, dot, prod, res)


def _check_loop(module: Module, add: Op, loop: Op, prod: Value, res: Value):
    f = ForOp(loop)
    i = prod.index
    if i >= len(f.iter_args):
        return _NOT_A_PRODUCT
    carried, init, yielded = f.iter_args[i], f.inits[i], f.yields[i]
    y = yielded.owner
    if y is None or y.name != DOT or len(y.operands) < 3:
        return _NOT_A_PRODUCT
    users = [o for o in loop.walk() if any(v is carried for v in o.operands)]
    if y.operands[2] is not carried:
        if users and any(u is not f.yield_op for u in users):
            return (f"the accumulator is read in the loop by '{users[0].name}' (rescaled, as online "
                    "softmax does): it is not a plain sum of products")
        return _NOT_A_PRODUCT
    if not is_zero_constant(init):
        return "the loop's accumulator does not start at zero"
    if any(u is not y for u in users):
        other = next(u for u in users if u is not y)
        return (f"the accumulator is read in the loop by '{other.name}' (rescaled, as online "
                "softmax does): it is not a plain sum of products")
    if any(u is not f.yield_op for u in module.users(yielded)):
        return "the dot's result is used in the loop besides being carried"
    if any(u is not add for u in module.users(prod)):
        return _NOT_A_PRODUCT
    return _common(module, add, loop, prod, res)


def _common(module: Module, add: Op, start: Op, prod: Value, res: Value) -> str | None:
    if any(u is not add for u in module.users(prod)):
        return "the product without the residual is used elsewhere too"
    if res.type != prod.type:
        return f"the residual's type {res.type} differs from the accumulator's {prod.type}"
    if not _defined_before(res, start):
        return "the residual is not defined before the accumulator starts"
    return None


def _defined_before(v: Value, op: Op) -> bool:
    """Whether `v` is available at `op`: a block argument of a block enclosing it, or defined by
    an op that precedes `op` (or the op enclosing it) in an enclosing block."""
    anc, blk = op, op.block
    while blk is not None:
        if v.owner is None and v.block is blk:
            return True
        if v.owner is not None and v.owner.block is blk:
            return blk.index_of(v.owner) < blk.index_of(anc)
        anc = blk.parent_op
        blk = anc.block if anc is not None else None
    return False


def _transformed_product(module: Module, v: Value) -> str | None:
    """'arith.divf' ('arith.mulf') when `v` is a loop-carried dot accumulator divided
    (multiplied) by something (online softmax's acc / l, or acc * (1 / l)) and used only there,
    else None."""
    o = v.owner
    if o is None or o.name not in (DIVF, MULF) or not o.operands:
        return None
    # (the dividend; either factor)
    x = next((a for a in (o.operands[:1] if o.name == DIVF else o.operands)
              if a.owner is not None and a.owner.name == FOR), None)
    if x is not None and len(module.users(x)) == 1:
        f = ForOp(x.owner)
        if x.index < len(f.yields):
            y = f.yields[x.index].owner
            if y is not None and y.name == DOT:
                return o.name
    return None


def _drop_add(module: Module, add: Op, prod: Value) -> None:
    module.replace_all_uses(add.results[0], prod)
    module.erase(add)


# where the product comes from -> (legality check, rewrite, remark)
_FORMS = {
    DOT: (_check_dot, _start_dot, "residual added into the accumulator's initial value (tt.dot "
                                  "starts at it; no separate addition)"),
    FOR: (_check_loop, _start_loop, "residual added into the initial value of the accumulator "
                                    "carried by the loop over K tiles (acc = residual; acc += A B "
                                    "per tile)"),
}
