"""cluster-reduce-chain: deal a chain of loops over heads to a cluster, one DSMEM exchange per loop.

`cluster-reduce` splits one pair of loops (a loop that reduces row statistics over N tiles, and
one loop that uses them). A norm backward around attention has a chain: the FlashNormAttention
backward's rows kernel (`normfuse.kernels.attention_bwd`) loops over the H heads of a row block
three times, each loop reducing per-row sums over the heads that the next loop needs (the RMS
backward's sum_N(dout * w * z), then the LayerNorm backward's sum_N(g * a) and sum_N(g * a * xhat)
in one exchange). This pass is the generalization to k >= 2 loops; it lives in its own file so
that `cluster-reduce` stays as it is (the asm of the exchange is shared, imported from there).

Algebra
-------
As in `cluster-reduce`: a sum over the trips of a loop splits over any partition of the trips;
with the T trips dealt to the C CTAs of one cluster (CTA r takes r, r + C, ...), each CTA reduces
its own trips, writes its partials into its shared memory, crosses a cluster barrier and adds all
C partials in rank order 0..C-1 (bitwise the same totals in every CTA). Loops without carried
values need nothing: each CTA runs its own trips.

IR
--
Before (three loops over heads h = 0..H-1, constant bounds)::

    %c = scf.for %h ... iter_args(%s = %zero) { ... tt.store %Z[h] ... scf.yield %s + x }
    %cz = f(%c)
    %c1, %c2 = scf.for %h ... iter_args(...) { ... tt.load %Z[h] ... tt.store %G[h] ... }
    scf.for %h ... { ... tt.load %G[h] ... tt.store %DX[h] }

After (C = T: one head per CTA, the loops inlined with %h = rank)::

    %rank = %pid mod C ; %blk = %pid div C          // %blk replaces every other use of %pid
    ... loop 1's body at %h = %rank ... ; st.shared (set 0) ; barrier ; %c = sum_r ld.shared::cluster
    ... loop 2's body at %h = %rank ... ; st.shared (set 1) ; barrier ; %c1, %c2 = sum_r ...
    arrive
    ... loop 3's body at %h = %rank ...
    wait ; tt.return

Exchange e uses slot set e mod 2. A CTA writes set e mod 2 again only at exchange e + 2, after
crossing barrier e + 1, at which every peer arrived after its reads of exchange e (release
semantics); so a set is never written while a peer reads it. After the last reads an `arrive`,
before the return the matching `wait`: no CTA exits while a peer may still read its slots.

Legality (a failure leaves the IR unchanged with a "missed" remark)
------------------------------------------------------------------
1. TTIR, one `tt.get_program_id x`, not already clustered; every use of it (and of
   `tt.get_num_programs x`) is divided by C.
2. A chain: k >= 2 consecutive `scf.for` ops in the function body (other ops may sit between
   them, none with side effects) with the same constant bounds and T >= 2 trips. Every loop but
   the last carries only per-row f32 sums (start at zero, updated `%s + x`), at least one, all of
   the same row count; the last carries nothing.
3. No op with side effects in the function outside the chain's loops (it would run in every CTA).
4. A loop that loads from memory an earlier loop of the chain stores to reads, trip by trip, only
   addresses that earlier loop stored in the same trip (`normfuse.ir.affine`; equal forms only
   where `affine.undetermined` finds nothing behind them: two tt.reduce of one tensor, two loads
   of one address around a store, have one form): the CTA that reads a tile is the one that
   wrote it.
5. Not the persistent form (the chain inside a loop over row blocks): reported, not handled.
6. C (option or auto: C = T when T <= max-cluster) within 2..16 and <= T.

Forwarding (option forward-reloads, default true)
-------------------------------------------------
When every CTA runs one trip (the loops inlined), a load in loop j of a tile loop i stored in the
same trip (legality 4, address and mask proven equal) reads what this CTA has just written::

    tt.store %p, %v, %m  ...  %r = tt.load %p', %m', %other   ->   %r = arith.select %m, %v, %other

(masked-off lanes keep the load's `other`). Only when the store sits directly in its loop's body
(it runs in every trip, not under an scf.if), the stored and loaded types are equal, the load has
an `other` (or no mask) and is not volatile, and the memory is stored by that one store in the
whole function (no other store, atomic or call to it; stores to other base pointers are
taken not to alias it, as `epilogue-norm` does). The store stays: the kernel's caller may read it,
unless the caller says it does not: a pointer parameter named in option `scratch` is memory only
the kernel reads (the op allocates it for the kernel alone), so once every load of it in the
function was forwarded, its stores are dead and are erased (the FlashNormAttention backward's
fp32 z and dlnq tiles: 4 bytes per element and head written for nothing otherwise). A scratch
parameter still loaded somewhere keeps its stores, and the remark says which.

Options
-------
cluster-size = auto | 2..16    auto: C = T when T <= max-cluster, else the fewest trips per CTA
max-cluster = 2..16            the largest cluster auto picks (8: portable)
forward-reloads = true | false forward same-CTA reloads through registers (above)
scratch = NAME[:NAME...]       pointer parameters only the kernel reads: their stores are erased
                               when every load of them was forwarded (above); default none. Names
                               as the kernel's source spells them (Triton's TTIR carries them in
                               its locations); TTIR without locations (the lit files) names them
                               arg0, arg1, ... by position. A scratch parameter must not alias
                               another argument (the op allocates it for the kernel alone)
early-loads = false | true     as in cluster-reduce: each exchange's barrier as its arrive and
                               wait, the loads after it that do not depend on it (of memory no
                               store of the kernel writes, after the forwarding and the scratch
                               erasure) moved between them. Not timed on the GPU yet
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..ir import Module, Op
from ..ir import effects
from ..ir.affine import Forms, undetermined
from ..ir.effects import has_side_effects
from ..ir.ops import (ADDF, FOR, GET_NUM_PROGRAMS, GET_PROGRAM_ID, LOADS, RETURN, STORES, Builder, ForOp,
                      FuncOp, LoadOp, ProgramIdOp, StoreOp, is_zero_constant, tensor, type_of)
from ..launch import ClusterSize, ExtraSharedMemory
from ..ir.query import func_params, is_pointer
from . import Pass, PassError, PassRun
from ..ir.cluster_ptx import ARRIVE, BARRIER, WAIT, read_asm, write_asm
from .cluster_reduce import (HW_MAX, PORTABLE_MAX, _same_tiles, _trips, cluster_ctas, early_loads,
                             parse_cluster_size)


@dataclass(frozen=True)
class ClusterReduceChain(Pass):
    """Deal a chain of loops over heads (or N tiles) to a thread-block cluster, exchanging each
    loop's row sums through distributed shared memory before the next loop.

    Options: `cluster_size` ("auto" or 2..16), `max_cluster` (the largest cluster "auto" picks),
    `forward_reloads` (same-CTA reloads through registers), `scratch` (parameters only the kernel
    reads: their stores erased once every reload was forwarded), `early_loads` (loads that do not
    depend on an exchange issued between its barrier's arrive and wait).
    Not handled: the persistent form, loops with different trip counts, loops that read another
    trip's stores, side effects outside the loops."""

    name = "cluster-reduce-chain"
    summary = ("split a chain of loops over heads over a thread-block cluster; exchange each "
               "loop's row sums through distributed shared memory")
    cluster_size: Literal["auto"] | int = "auto"
    max_cluster: int = PORTABLE_MAX
    forward_reloads: bool = True
    scratch: str = ""
    early_loads: bool = False

    def __post_init__(self):
        if not 2 <= int(self.max_cluster) <= HW_MAX:
            raise PassError(f"option cluster-reduce-chain{{max-cluster}} must be in 2..{HW_MAX}, "
                            f"got {self.max_cluster}")
        object.__setattr__(self, "cluster_size", parse_cluster_size(self.name, self.cluster_size))

    # -- analysis ------------------------------------------------------------------------------
    def apply(self, module: Module, run: PassRun) -> None:
        if run.refuses_ttgir(module):
            return
        for func in module.functions():
            res = self._analyse(func)
            if isinstance(res, str):
                run.missed(res, func)
                continue
            chain, pid, pairs = res
            self._rewrite(module, run, func, chain, pid, pairs)

    def _analyse(self, func: Op):
        if FuncOp(func).attr(ClusterSize.attr) is not None:
            return "already split over a cluster"
        ops = list(func.walk())
        pids = [o for o in ops if o.name == GET_PROGRAM_ID and ProgramIdOp(o).axis == "x"]
        top = func.body()
        loops = [o for o in top.ops if o.name == FOR]
        if any(o.name == FOR for l in loops for o in l.regions[0].blocks[0].ops) and len(loops) == 1:
            return ("the loops sit in one outer loop (the persistent form over row blocks), "
                    "which this pass does not handle")
        if len(loops) < 2:
            return "no chain of loops in the function body (at least two are needed)"
        if len(pids) != 1:
            return f"expected one tt.get_program_id x (the row block), found {len(pids)}"
        bounds = [ForOp(l).constant_bounds() for l in loops]
        # the chain: the longest run of consecutive loops with the same constant bounds
        best: list[int] = []
        run_: list[int] = []
        for i, b in enumerate(bounds):
            if None in b:
                run_ = []
                continue
            run_ = run_ + [i] if run_ and bounds[run_[-1]] == b else [i]
            if len(run_) > len(best):
                best = list(run_)
        if len(best) < 2:
            return ("no two loops with the same constant bounds (the loops over heads need a "
                    "constexpr trip count)")
        chain = [loops[i] for i in best]
        lb, ub, step = bounds[best[0]]
        if step <= 0:
            return f"the loops do not count up (step {step})"
        trips = _trips(lb, ub, step)
        if trips < 2:
            return "the loops run one trip: nothing to split"
        first, last = top.index_of(chain[0]), top.index_of(chain[-1])
        inside = {id(o) for l in chain for o in l.walk()}
        for o in top.ops[first:last + 1]:
            if o.name == FOR and o not in chain:
                return "a loop with other bounds sits between the loops of the chain"
        rows = None
        for i, l in enumerate(chain):
            f = ForOp(l)
            if i == len(chain) - 1:
                if f.iter_args:
                    return "the last loop of the chain carries values across trips"
                continue
            if not f.iter_args:
                return f"loop {i + 1} of the chain accumulates no row sums"
            for a, init, y in zip(f.iter_args, f.inits, f.yields):
                t = type_of(a)
                if isinstance(t, str) or len(t.shape) != 1 or t.element != "f32":
                    return f"loop-carried value {a.ref()} is not a per-row f32 vector ({a.type})"
                if rows is not None and t.shape[0] != rows:
                    return f"row sums of different lengths ({rows} and {t.shape[0]})"
                rows = t.shape[0]
                if not is_zero_constant(init):
                    return f"row sum {a.ref()} does not start at zero"
                o = y.owner
                if o is None or o.name != ADDF or sum(1 for v in o.operands if v is a) != 1:
                    return f"row sum {a.ref()} is not a sum over trips (%s + x)"
        for o in ops:
            if id(o) in inside or o is func or o.name == RETURN:
                continue
            if has_side_effects(o):
                return f"'{o.name}' with side effects outside the chain's loops (it would run in every CTA)"
        # a loop that reads an earlier loop's stores must read what the same trip stored
        for j, lj in enumerate(chain):
            for i in range(j):
                li = chain[i]
                roots = {id(StoreOp(s).root) for s in li.walk() if s.name in STORES} - {id(None)}
                reads = [x for x in lj.walk() if x.name in LOADS and id(LoadOp(x).root) in roots]
                if reads and not _same_tiles(ForOp(li), ForOp(lj)):
                    return (f"loop {j + 1} of the chain reads memory loop {i + 1} stores at addresses "
                            "not proven to be the ones the same trip stored (another CTA's)")
        ctas = self._ctas(trips)
        if isinstance(ctas, str):
            return ctas
        pairs = _forwardable(chain, ops) if self.forward_reloads and ctas == trips else []
        return chain, pids[0], pairs

    def _ctas(self, trips: int) -> int | str:
        return cluster_ctas(self.cluster_size, self.max_cluster, trips, f"the loops' {trips} trips")

    # -- rewriting -----------------------------------------------------------------------------
    def _rewrite(self, module: Module, run: PassRun, func: Op, chain: list[Op], pid_op: Op,
                 pairs: list[tuple[Op, Op]]) -> None:
        lb, ub, step = ForOp(chain[0]).constant_bounds()
        trips = _trips(lb, ub, step)
        ctas = self._ctas(trips)
        where = chain[0]
        pid = pid_op.result
        b = Builder(module, pid_op, after=pid_op)
        c = b.constant(ctas, "i32", hint="c_ctas")
        rank = b.remsi(pid, c, hint="cta_rank")
        blk = b.divsi(pid, c, hint="row_block")
        made = (rank.owner, blk.owner)
        module.replace_all_uses(pid, blk, where=lambda o: o not in made)
        first, stride = rank, c
        if (lb, step) != (0, 1):
            if step != 1:
                first = b.muli(rank, b.constant(step, "i32", hint="h_step"), hint="h_first")
            if lb != 0:
                first = b.addi(first, b.constant(lb, "i32", hint="h_lb"), hint="h_first")
            stride = b.constant(step * ctas, "i32", hint="h_stride")
        for np_op in [o for o in func.walk() if o.name == GET_NUM_PROGRAMS and ProgramIdOp(o).axis == "x"]:
            cnt = Builder(module, np_op, after=np_op).divsi(np_op.result, c, hint="num_clusters")
            module.replace_all_uses(np_op.result, cnt, where=lambda o, c=cnt.owner: o is not c)

        nstats = [len(ForOp(l).iter_args) for l in chain[:-1]]
        rows = type_of(ForOp(chain[0]).iter_args[0]).shape[0]
        set_bytes = -(-(4 * rows * max(nstats)) // 16) * 16
        nsets = 2 if len(nstats) > 1 else 1
        slot_bytes = nsets * set_bytes
        vt, it = tensor([rows], "f32"), tensor([rows], "i32")
        waits: list = []  # early-loads: each exchange's wait
        for e, l in enumerate(chain):
            f = ForOp(l)
            last = e == len(chain) - 1
            if ctas == trips:
                partials = f.yields
                marker = Builder(module, l, after=l).constant(0, "i32").owner
                f.inline(module, first)
                after = marker
            else:
                f.set_bounds(first, f.bounds[1], stride)
                partials = list(f.op.results)
                after = f.op
            if last:
                if ctas == trips:
                    module.erase(marker)
                break
            users_before = {id(p): list(module.users(p)) for p in partials}
            x = Builder(module, f.op.loc if ctas != trips else where.loc, after=after)
            idx = x.make_range(0, rows, hint="rows")
            if e % nsets:
                off = x.constant(set_bytes // 4, "i32", hint="slot_words")
                idx = x.addi(idx, x.splat(off, [rows], hint="slot_offs"), hint="slot_rows")
            wasm, wcons = write_asm(nstats[e], rows, slot_bytes)
            wr = x.inline_asm(wasm, wcons, [idx] + list(partials), [it], hint="xchg_put")
            if self.early_loads:
                x.inline_asm(ARRIVE, "=r,r", [rank], ["i32"], hint="cluster_arrive")
                waits.append(x.inline_asm(WAIT, "=r,r", [rank], ["i32"], hint="cluster_wait"))
            else:
                x.inline_asm(BARRIER, "=r,r", [rank], ["i32"], hint="cluster_sync")
            rasm, rcons = read_asm(nstats[e], rows, slot_bytes, ctas)
            rd = x.inline_asm(rasm, rcons, [idx], [vt] * nstats[e], hint="row_stat")
            if e == len(chain) - 2:  # done reading the peers' slots (the wait is before the return)
                x.inline_asm(ARRIVE, "=r,r", [rank], ["i32"], hint="cluster_arrive")
            new_ops = {id(wr), id(rd)}
            for p, total in zip(partials, rd.results):
                olds = users_before[id(p)]
                module.replace_all_uses(p, total, where=lambda o, ok=olds: o in ok and id(o) not in new_ops)
            if ctas == trips:
                module.erase(marker)
        ret = func.body().terminator
        Builder(module, ret, before=ret).inline_asm(WAIT, "=r,r", [rank], ["i32"], hint="cluster_wait")
        fwd_roots = {id(StoreOp(st).root) for _, st in pairs}
        for load, store in pairs:  # the loops are inlined: the store now precedes the load
            ld, st = LoadOp(load), StoreOp(store)
            val = st.value
            if ld.mask is not None:
                val = Builder(module, load, before=load).select(ld.mask, val, ld.other, hint="fwd")
            module.replace_all_uses(load.results[0], val)
            module.erase(load)
        dropped, kept = self._drop_scratch(module, func, fwd_roots)
        run.require(func, ClusterSize(ctas), ExtraSharedMemory(slot_bytes))
        per = -(-trips // ctas)
        how = ("one trip per CTA (the loops inlined" + (f", {len(pairs)} reload"
               f"{'s' if len(pairs) != 1 else ''} of this CTA's own stores forwarded through "
               "registers)" if pairs else ")") if per == 1 else
               f"up to {per} trips per CTA (the loops kept, stepping by {ctas})")
        note = ""
        if dropped:
            note += (f"; the stores to scratch {', '.join(dropped)} erased (every reload "
                     "forwarded)")
        if kept:
            note += "; scratch kept: " + "; ".join(kept)
        run.applied(f"chain of {len(chain)} loops of {trips} trips split over a {ctas}-CTA cluster"
                    f"{' (non-portable size)' if ctas > PORTABLE_MAX else ''}, {how}; "
                    f"{len(nstats)} exchanges of {', '.join(map(str, nstats))} row sum(s) through "
                    f"distributed shared memory ({slot_bytes} B per CTA, {nsets} slot set"
                    f"{'s' if nsets > 1 else ''}){note}", where)
        if self.early_loads:  # (after the forwarding and the erasure: fewer stores, fewer loads)
            early_loads(module, run, func, waits, where)

    def _drop_scratch(self, module: Module, func: Op, fwd_roots: set) -> tuple[list, list]:
        """Erase the stores to the `scratch` parameters whose reloads were all forwarded
        (`fwd_roots`: the roots of the forwarded stores) and that no load reads any more; (names
        dropped, reasons kept). Kept whenever a reader could be unknown: a load whose pointer
        has no parameter root, or an op other than a load that reads the kernel's memory (an
        atomic, a call, inline asm not marked normfuse's own); and a parameter that the kernel
        never reloaded (what it stores there is what its caller reads)."""
        names = [n for n in self.scratch.split(":") if n]
        if not names:
            return [], []
        params = {p.name: p for p in func_params(func)}
        ops = list(func.walk())
        unknown = next((o.name for o in ops if not o.regions and o.name not in LOADS + STORES
                        and any(e.kind == effects.READ and e.resource == effects.MEMORY
                                for e in effects.effects(o))), None)
        loads, stores = {}, {}  # parameter root -> its loads / stores
        for o in ops:
            if o.name in LOADS:
                loads.setdefault(id(LoadOp(o).root), []).append(o)
            elif o.name in STORES:
                stores.setdefault(id(StoreOp(o).root), []).append(o)
        if unknown is None and id(None) in loads:
            unknown = "a load without a parameter root"
        dropped, kept = [], []
        for n in names:
            p = params.get(n)
            key = id(p.value) if p is not None else None
            if p is None or not is_pointer(p.value):
                kept.append(f"'{n}' is not a pointer parameter of the kernel")
            elif key not in loads and key not in stores:
                continue  # (this kernel does not use it: nothing to drop)
            elif key not in fwd_roots:
                kept.append(f"'{n}' (" + (
                    "its reloads not forwarded: several trips per CTA, or forward-reloads=false"
                    if key in loads and not fwd_roots else "its reloads not forwarded"
                    if key in loads else
                    "the kernel never reloads it: what it stores is its caller's") + ")")
            elif unknown is not None:
                kept.append(f"'{n}' ({unknown} may read it)")
            elif key in loads:
                kept.append(f"'{n}' is still loaded")
            else:  # (a forwarded store's root: it has stores)
                for o in stores[key]:
                    module.erase(o)
                dropped.append(n)
        return dropped, kept


def _forwardable(chain: list[Op], ops: list[Op]) -> list[tuple[Op, Op]]:
    """(load, store) pairs: a load in a later loop of the chain that reads, trip by trip, exactly
    the address and mask one store of an earlier loop wrote, where that store is the only write
    to its memory in the function (see the module docstring)."""
    writers: dict[int, int] = {}
    for o in ops:
        if o.name in STORES:
            r = StoreOp(o).root
            if r is None:
                return []  # a store through a pointer not traced to one parameter (one carried
                # through a loop, say): it may write the forwarded memory
            writers[id(r)] = writers.get(id(r), 0) + 1
        elif not o.regions and any(e.kind == effects.WRITE for e in effects.effects(o)):
            return []  # an atomic, call or asm that writes: which memory is unknown
    pairs = []
    for j, lj in enumerate(chain):
        for li in chain[:j]:
            forms = None
            # a store directly in the loop body runs in every trip (not one under an scf.if)
            body = ForOp(li).body
            stores = [x for x in body.ops if x.name in STORES and not StoreOp(x).is_descriptor]
            for x in lj.walk():
                if x.name not in LOADS:
                    continue
                ld = LoadOp(x)
                if ld.is_descriptor or ld.is_volatile or (ld.mask is not None and ld.other is None):
                    continue
                for s in stores:
                    st = StoreOp(s)
                    if st.root is None or st.root is not ld.root or writers.get(id(st.root)) != 1:
                        continue
                    if st.value.type != x.results[0].type or (st.mask is None) != (ld.mask is None):
                        continue
                    if forms is None:
                        forms = Forms(ForOp(li), ForOp(lj))
                    if forms.equal(st.ptr, ld.ptr) and (st.mask is None or forms.equal(st.mask, ld.mask)) \
                            and undetermined([v for v in (st.ptr, st.mask, ld.ptr, ld.mask) if v is not None],
                                             set(writers), forms.loops) is None:
                        # (equal forms are the same addresses only where nothing undetermined is
                        # behind them: two tt.reduce of one tensor, two loads around a store,
                        # have one form; legality 4's `_same_tiles` asks the same)
                        pairs.append((x, s))
                        break
    return pairs
