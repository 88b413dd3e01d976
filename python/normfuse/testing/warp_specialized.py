"""Run warp-specialized TTGIR (what `hopper-ws` emits) on the CPU, checking its synchronization.

`run_ir` hands a module here when it is TTGIR: the lowered kernel that the pre-norm ops launch
(Gluon's `ttg.warp_specialize`, TMA, mbarriers, wgmma), as Triton prints it after the Gluon front
end. The numbers it computes are those of the kernel's own ops, so a wrong hook, a wrong tile
coordinate, a wrong descriptor or a wrong work count changes the output; how it synchronizes is
checked on every access, so a wrong barrier phase, a slot released too early or a missing fence
raises `RaceError` even when this run's interleaving happened to read the right bytes.

Execution model
---------------
Every CTA of the launch runs at once (a persistent grid: 2-3 programs in the tests), and every
partition of its `ttg.warp_specialize` (the default region and each `partitionN`) is an *agent*:
a coroutine with its own vector clock. A seeded scheduler (`seed=`) picks, at every
synchronization point, one of the runnable agents or one of the async operations in flight
(TMA loads) at random and runs it to its next synchronization point: the same seed gives the same
interleaving, other seeds other ones. A CTA may wait for another CTA's memory (the shared
statistics' stamped words): a polling loop in inline asm yields to the scheduler on each round,
and a launch in which every agent waits or polls in vain raises `InterpreterError` (a hang on the
GPU), naming what each one waits for.

- `ttg.local_alloc`: per-CTA shared memory (`memory.SharedAlloc`), with `ttg.memdesc_index`,
  `ttg.memdesc_trans`, `ttg.memdesc_subslice` views; `ttg.local_load` / `ttg.local_store` read
  and write it through the generic proxy; `ttg.convert_layout` is the identity (values are whole
  arrays, layouts do not matter to them).
- mbarriers (`ttng.init_barrier`, `ttng.barrier_expect` = arrive.expect_tx, `ttng.arrive_barrier`,
  `ttng.wait_barrier`): a pending arrival count and a transaction byte count per phase; a phase
  completes when both reach zero; `wait_barrier(parity P)` passes once the current phase's parity
  is not P (as `mbarrier.try_wait.parity`: a fresh barrier passes a wait for parity 1). An arrive
  releases (the phase collects the arriving agent's vector clock), a passing wait acquires every
  completed phase. More arrivals than the count in one phase raises.
- `ttng.async_tma_copy_global_to_local`: reads the descriptor's box now (out-of-bounds elements
  are zero, or NaN with `padding = nan`), and becomes an operation in flight: the shared-memory
  destination counts as written from the issue on, the bytes land and the barrier's transaction
  count drops by the box's bytes when the scheduler completes it. `..._local_to_global`: writes
  the box's in-bounds part to global memory (clipped), its shared source stays in flight until
  `ttng.async_tma_store_wait` retires it. The descriptor (base, shape, strides) is the host's, as
  the GPU's TMA unit reads it from the CUtensorMap; the kernel's block shape is its type's.
- `ttng.warp_group_dot`: fp32 products of the operands' values (shared-memory views or a register
  tile for A), accumulated in fp32 (numpy's summation order); the shared operands stay in flight
  until a `ttng.warp_group_dot_wait` with fewer pending groups retires the group, and its result
  may be used only as the next wgmma's accumulator until then (any other use raises).
- `ttng.fence_async_shared`: orders the agent's earlier generic-proxy writes before async-proxy
  reads that happen after it.

The race check (per element of shared memory, `memory.check_shared_*`) reports: a read of a slot
whose TMA load is still in flight or whose writer is not ordered before it (a consumer that reads
before the barrier phase completed), a write (TMA or generic) of elements that another agent read
without being ordered after that read, or that a wgmma / TMA store may still read (a producer that
overwrites a slot still being read), generic writes read by the async proxy without a fence, and
a CTA that exits with async operations in flight. Global memory is not race-checked (the pre-norm
kernels communicate between CTAs only through the shared statistics' single-copy-atomic words:
a word of another launch is visible in the numbers, see `numerics.check_lowered_numerics`).

Not modelled: clusters (`CLUSTER > 1`, the post-norm exchange through distributed shared memory:
hopper-ws does not emit it by default), register-level timing, the warps inside an agent (an agent
is one logical thread), setmaxnreg.
"""
from __future__ import annotations

import re

import numpy as np

from .interpreter import (TRITON_SMEM, TensorDesc, _BlockCode, _Compiler, _desc_addresses,
                          _run_block, _scalar, _ty, _where)
from .memory import (Buffer, InterpreterError, RaceError, SharedAlloc, Space, check_shared_read,
                     check_shared_write, elem_bytes, is_ptr, matmul_f32, one_thread, pointee,
                     record_shared_read, record_shared_write, to_runtime)

GLOBAL_BASE = 1 << 32
_ALIGN = 4096
_TERMINATORS = ("ttg.warp_yield", "ttg.warp_return")


# ---------------------------------------------------------------------------------------------
# Values: shared-memory views, mbarriers, in-flight wgmma results
# ---------------------------------------------------------------------------------------------

_MEMDESC = re.compile(r"!ttg\.memdesc<((?:\d+x)*)([a-z0-9]+)")


def _memdesc_type(t: str) -> tuple[tuple, str]:
    m = _MEMDESC.search(t)
    if not m:
        raise InterpreterError(f"cannot read the shared-memory type '{t[:80]}'")
    dims = tuple(int(x) for x in m.group(1).split("x") if x)
    return dims, m.group(2)


class MemDesc:
    """A view of a shared allocation: `offset` + sum(i_d * strides[d]) for i in `shape`."""

    __slots__ = ("alloc", "offset", "shape", "strides", "label")

    def __init__(self, alloc: SharedAlloc, offset: int, shape: tuple, strides: tuple, label: str):
        self.alloc, self.offset, self.shape, self.strides, self.label = alloc, offset, shape, strides, label

    @property
    def idx(self) -> np.ndarray:
        return self.alloc.index(self.offset, self.shape, self.strides)

    def read(self) -> np.ndarray:
        return self.alloc.data[self.idx]


class MBarrier:
    """The state of one mbarrier (see the module docstring)."""

    __slots__ = ("count", "pending", "tx", "phase", "acc_vc", "done_vc", "label")

    def __init__(self, count: int, n_agents: int, label: str):
        self.count = count
        self.pending = count
        self.tx = 0
        self.phase = 0  # completed phases
        self.acc_vc = np.zeros(n_agents, dtype=np.int64)
        self.done_vc = np.zeros(n_agents, dtype=np.int64)
        self.label = label

    def passed(self, parity: int) -> bool:
        return (self.phase & 1) != parity

    def _complete_if_done(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            np.maximum(self.done_vc, self.acc_vc, out=self.done_vc)
            self.acc_vc[:] = 0
            self.pending = self.count

    def arrive(self, vc: np.ndarray, count: int, what: str, who: str) -> None:
        np.maximum(self.acc_vc, vc, out=self.acc_vc)
        self.pending -= count
        if self.pending < 0:
            raise InterpreterError(f"{what}: {who} arrives on {self.label} more often than its "
                                   f"count ({self.count}) in one phase (phase {self.phase})")
        self._complete_if_done()

    def expect(self, nbytes: int) -> None:
        self.tx += nbytes

    def complete_tx(self, nbytes: int, vc: np.ndarray) -> None:
        np.maximum(self.acc_vc, vc, out=self.acc_vc)
        self.tx -= nbytes
        self._complete_if_done()


class _InFlight:
    """The accumulator of a wgmma that no warp_group_dot_wait has retired yet."""

    __slots__ = ("value", "group")

    def __init__(self, value, group):
        self.value, self.group = value, group

    def __array__(self, *a, **k):
        raise InterpreterError("the result of an async wgmma (ttng.warp_group_dot) is used before "
                               "a ttng.warp_group_dot_wait retired it (only the next wgmma may take "
                               "it as its accumulator)")


class _Group:
    """An async operation group of an agent: the shared views it reads until it is retired."""

    __slots__ = ("reads", "retired", "what")

    def __init__(self, reads, what):
        self.reads, self.retired, self.what = reads, False, what


# ---------------------------------------------------------------------------------------------
# Agents (one per partition of a CTA) and CTAs
# ---------------------------------------------------------------------------------------------

class _CTA:
    def __init__(self, rt, index: int, pid: tuple):
        self.rt = rt
        self.index = index
        self.pid = pid
        self.allocs: list[SharedAlloc] = []
        self.agents: list[Agent] = []
        self.exited = False


class Agent:
    """A warp group of a CTA (the default partition or a worker partition): what the ops see as
    `cta` (program id, launch, global memory for inline asm) plus its vector clock and its async
    operations in flight."""

    def __init__(self, rt, cta: _CTA, local: int, name: str):
        self.runtime = rt
        self.ctaobj = cta
        self.local = local
        self.gid = cta.index * rt.per_cta + local
        self.name = name
        self.vc = np.zeros(rt.n_agents, dtype=np.int64)
        self.vc[self.gid] = 1
        self.fences: list[int] = []
        self.wgmma: list[_Group] = []
        self.bulk: list[_Group] = []
        # what the TTIR ops and the asm evaluator read of a CTA
        self.pid = cta.pid
        self.nprog = rt.nprog
        self.launch = rt
        self.cta = cta.index
        self.cluster_size = 1
        self.rank = 0
        self.smem_size = TRITON_SMEM
        self.scratch_base = 0
        self.scratch_bytes = 0
        self.gen = None
        self.state = None  # the pending request: None (runnable), ("block", cond, why), ("spin", ...)
        self.spun_at = -1
        self.spun_twice = False
        self.spun_poll = None  # the polling loop (one run of an asm) of the last spin
        self.done = False

    @property
    def clock(self) -> int:
        return int(self.vc[self.gid])

    def tick(self) -> None:
        self.vc[self.gid] += 1

    def acquire(self, vc: np.ndarray) -> None:
        np.maximum(self.vc, vc, out=self.vc)

    def fence(self) -> None:
        self.fences.append(self.clock)
        self.tick()

    # -- the asm evaluator's memory ------------------------------------------------------------
    def mem_load(self, space: str, addr, elem: str, what: str, mask=None):
        if space != "global":
            raise InterpreterError(f"{what}: inline asm on shared memory is not supported in a "
                                   "warp-specialized kernel")
        return self.runtime.glob.load(addr, mask, elem, actor=self, what=what)

    def mem_store(self, space: str, addr, value, elem: str, what: str, mask=None):
        if space != "global":
            raise InterpreterError(f"{what}: inline asm on shared memory is not supported in a "
                                   "warp-specialized kernel")
        self.runtime.glob.store(addr, value, mask, elem, actor=self, what=what)
        self.runtime.progress += 1

    def arrive(self):
        raise InterpreterError("barrier.cluster in a warp-specialized kernel: clusters are not "
                               "modelled by the TTGIR interpreter")

    wait = arrive


class _TmaLoad:
    """A TMA load in flight: lands in `dst` and completes `nbytes` on `bar` when run."""

    __slots__ = ("agent", "dst", "values", "bar", "nbytes", "vc", "where")

    def __init__(self, agent, dst, values, bar, nbytes, vc, where):
        self.agent, self.dst, self.values, self.bar = agent, dst, values, bar
        self.nbytes, self.vc, self.where = nbytes, vc, where

    def complete(self) -> None:
        idx = self.dst.idx
        self.dst.alloc.data[idx] = self.values
        self.dst.alloc.inflight_w[idx.reshape(-1)] -= 1
        self.bar.complete_tx(self.nbytes, self.vc)


# ---------------------------------------------------------------------------------------------
# The launch and its scheduler
# ---------------------------------------------------------------------------------------------

class _Runtime:
    def __init__(self, nprog: tuple, per_cta: int, seed: int):
        self.nprog = nprog
        total = nprog[0] * nprog[1] * nprog[2]
        self.per_cta = per_cta
        self.n_agents = total * per_cta
        self.glob = Space("global")
        self.rng = np.random.default_rng(seed)
        self.agents: list[Agent] = []
        self.ctas: list[_CTA] = []
        self.events: list[_TmaLoad] = []
        self.progress = 0
        self.steps = 0
        self.spins = 0
        self._next = GLOBAL_BASE
        self._names: dict[int, str] = {}

    def place(self, nbytes: int) -> int:
        base = self._next
        self._next += -(-max(nbytes, 1) // _ALIGN) * _ALIGN + _ALIGN
        return base

    def agent_name(self, gid: int) -> str:
        return self._names.get(gid, f"agent {gid}")

    def spawn(self, cta: _CTA, local: int, name: str, make_gen, parent: Agent | None) -> Agent:
        a = Agent(self, cta, local, name)
        if parent is not None:
            a.acquire(parent.vc)
        self._names[a.gid] = a.name
        cta.agents.append(a)
        self.agents.append(a)
        a.gen = make_gen(a)
        return a

    def fences_of(self, gid: int) -> np.ndarray:
        for a in self.agents:
            if a.gid == gid:
                return np.asarray(a.fences, dtype=np.int64)
        return np.zeros(0, dtype=np.int64)

    # -- scheduling ----------------------------------------------------------------------------
    def run(self) -> None:
        rng = self.rng
        while True:
            live = [a for a in self.agents if not a.done]
            if not live:
                break
            cands = []
            spinners = 0
            for a in live:
                st = a.state
                if st is None:
                    cands.append(a)
                elif st[0] == "block":
                    if st[1]():
                        cands.append(a)
                elif st[0] == "spin":
                    cands.append(a)
                    # a polling loop yields after its reload, before it checks what it read: an
                    # agent waits in vain only once it has polled twice in the same loop with
                    # nothing written since (the first of the two reloads may have read the
                    # awaited value; the first reload of the next loop, e.g. a second statistic's
                    # words right after the first's, has checked nothing yet)
                    spinners += a.spun_at == self.progress and a.spun_twice
            cands.extend(self.events)
            if not cands:
                raise InterpreterError("deadlock: every warp group waits and nothing is in flight: "
                                       + "; ".join(self._blocked(live)))
            if spinners == len(cands):
                raise InterpreterError("hang: every runnable warp group polls memory that nothing "
                                       "will write: " + "; ".join(self._blocked(live)))
            pick = cands[int(rng.integers(len(cands)))]
            self.steps += 1
            if isinstance(pick, _TmaLoad):
                self.events.remove(pick)
                pick.complete()
                self.progress += 1
                continue
            try:
                req = next(pick.gen)
            except StopIteration:
                pick.done = True
                pick.state = None
                self.progress += 1
                self._finished(pick)
                continue
            if req[0] == "spin":
                pick.state = req
                poll = req[2] if len(req) > 2 else None
                pick.spun_twice = pick.spun_at == self.progress and pick.spun_poll is poll
                pick.spun_at, pick.spun_poll = self.progress, poll
                self.spins += 1
                continue
            if req[0] == "wait":
                raise InterpreterError("barrier.cluster in a warp-specialized kernel: clusters are "
                                       "not modelled by the TTGIR interpreter")
            pick.state = None if req[0] == "yield" else req
            self.progress += 1
        if self.events:
            raise InterpreterError(f"{self.events[0].where}: the launch ends with a TMA load in flight")

    def _blocked(self, live) -> list[str]:
        out = []
        for a in live:
            st = a.state
            if st is None:
                continue
            why = st[2]() if st[0] == "block" else f"polls memory ({st[1]})"
            out.append(f"{a.name} {why}")
        return out

    def _finished(self, a: Agent) -> None:
        for g in a.wgmma:
            if not g.retired:
                raise RaceError(f"{a.name} ends with a wgmma in flight ({g.what}): no "
                                "warp_group_dot_wait retired it")
        for g in a.bulk:
            if not g.retired:
                raise RaceError(f"{a.name} ends with a TMA store still reading shared memory "
                                f"({g.what}): no async_tma_store_wait retired it")
        if a.local == 0:  # the CTA exits
            cta = a.ctaobj
            pending = [e for e in self.events if e.agent.ctaobj is cta]
            if pending:
                raise RaceError(f"{pending[0].where}: CTA {cta.index} exits while a TMA load into "
                                "its shared memory is in flight (nothing waited for it)")
            cta.exited = True


# ---------------------------------------------------------------------------------------------
# The ops of warp-specialized TTGIR
# ---------------------------------------------------------------------------------------------

def _ints_after(op) -> list[int]:
    """Integer literals of the op's head (before the ':' of the types)."""
    head = op.text.split(" : ")[0]
    head = re.sub(r"\{[^{}]*\}", "", head)  # attribute dicts
    head = re.sub(r"%[\w.$#\-]+", "", head)
    return [int(x) for x in re.findall(r"(?<![\w.])-?\d+(?![\w.])", head)]


def _pendings(op) -> int:
    m = re.search(r"pendings\s*=\s*(\d+)", op.text)
    if not m:
        raise InterpreterError(f"{_where(op)}: cannot read its pendings")
    return int(m.group(1))


class _WSCompiler(_Compiler):
    """`_Compiler` plus the TritonGPU / TritonNvidiaGPU ops of a warp-specialized kernel."""

    def __init__(self, module, rt: _Runtime):
        super().__init__(module)
        self.rt = rt

    def block(self, block) -> _BlockCode:
        steps, term = [], None
        for op in block.ops:
            if op.name in ("scf.yield", "tt.return", "tt.reduce.return", "tt.scan.return",
                           "scf.condition") + _TERMINATORS:
                term = op
                break
            steps.append(self.op(op))
        code = _BlockCode(list(block.args), steps, term)
        if term is not None:
            vals = term.operands
            code.term_vals = vals[1:] if term.name == "scf.condition" else vals
        return code

    # -- layouts, shared memory -----------------------------------------------------------------
    def _op_ttg_convert_layout(self, op):
        a, out = op.operands[0], op.results[0]

        def run(agent, env):
            env[out] = env[a]
        return run, False

    def _op_ttg_local_alloc(self, op):
        out = op.results[0]
        shape, elem = _memdesc_type(out.type)
        init = op.operands[0] if op.operands else None
        name = out.name.lstrip("%")
        rt = self.rt
        where = _where(op)

        def run(agent, env):
            cta = agent.ctaobj
            alloc = SharedAlloc(f"{name} (CTA {cta.index})", shape, elem, cta.index * rt.per_cta,
                                rt.per_cta, cta.index)
            cta.allocs.append(alloc)
            strides = tuple(int(np.prod(shape[d + 1:])) for d in range(len(shape)))
            md = MemDesc(alloc, 0, shape, strides, name)
            if init is not None:
                check_shared_write(alloc, md.idx, agent, what=where)
                alloc.data[md.idx] = to_runtime(np.asarray(env[init]), elem)
                record_shared_write(alloc, md.idx, agent, proxy="generic")
            env[out] = md
        return run, False

    def _op_ttg_local_dealloc(self, op):
        return (lambda agent, env: None), False

    def _op_ttg_memdesc_index(self, op):
        src, i = op.operands[:2]
        out = op.results[0]

        def run(agent, env):
            m = env[src]
            k = int(env[i])
            if not 0 <= k < m.shape[0]:
                raise InterpreterError(f"{_where(op)}: index {k} of {m.label} (size {m.shape[0]})")
            env[out] = MemDesc(m.alloc, m.offset + k * m.strides[0], m.shape[1:], m.strides[1:],
                               f"{m.label}[{k}]")
        return run, False

    def _op_ttg_memdesc_trans(self, op):
        src, out = op.operands[0], op.results[0]
        order = [int(x) for x in re.search(r"order\s*=\s*array<i32:\s*([\d,\s]+)>", op.text).group(1).split(",")]

        def run(agent, env):
            m = env[src]
            env[out] = MemDesc(m.alloc, m.offset, tuple(m.shape[d] for d in order),
                               tuple(m.strides[d] for d in order), f"{m.label}.T")
        return run, False

    def _op_ttg_memdesc_subslice(self, op):
        src, out = op.operands[0], op.results[0]
        m_off = re.search(r"\[([\d,\s]+)\]", op.text.split(" : ")[0])
        offs = [int(x) for x in m_off.group(1).split(",")]
        shape, _ = _memdesc_type(out.type)

        def run(agent, env):
            m = env[src]
            if len(offs) != len(m.shape) or any(o + n > s for o, n, s in zip(offs, shape, m.shape)):
                raise InterpreterError(f"{_where(op)}: subslice {offs} x {list(shape)} leaves "
                                       f"{m.label} {list(m.shape)}")
            off = m.offset + sum(o * s for o, s in zip(offs, m.strides))
            env[out] = MemDesc(m.alloc, off, shape, m.strides, f"{m.label}[{offs}]")
        return run, False

    def _op_ttg_local_load(self, op):
        src = op.operands[0]
        put = self._finish(op)
        where = _where(op)

        def run(agent, env):
            m = env[src]
            check_shared_read(m.alloc, m.idx, agent, proxy="generic", what=where)
            record_shared_read(m.alloc, m.idx, agent)
            put(env, m.read())
        return run, False

    def _op_ttg_local_store(self, op):
        val, dst = op.operands[:2]
        where = _where(op)

        def run(agent, env):
            m = env[dst]
            check_shared_write(m.alloc, m.idx, agent, what=where)
            v = np.broadcast_to(np.asarray(env[val]), m.shape)
            m.alloc.data[m.idx] = to_runtime(v, m.alloc.elem)
            record_shared_write(m.alloc, m.idx, agent, proxy="generic")
        return run, False

    # -- mbarriers -----------------------------------------------------------------------------
    @staticmethod
    def _barrier(m: MemDesc, where: str) -> MBarrier:
        if m.alloc.elem != "i64" or int(np.prod(m.shape)) != 1:
            raise InterpreterError(f"{where}: {m.label} is not an mbarrier (one i64)")
        bar = m.alloc.barriers.get(m.offset)
        if bar is None:
            raise InterpreterError(f"{where}: mbarrier {m.label} of {m.alloc.name} is used before "
                                   "ttng.init_barrier")
        return bar

    def _op_ttng_init_barrier(self, op):
        b = op.operands[0]
        ints = _ints_after(op)
        count = ints[-1] if ints else 1
        rt = self.rt
        where = _where(op)

        def run(agent, env):
            m = env[b]
            if m.alloc.elem != "i64":
                raise InterpreterError(f"{where}: {m.label} is not an i64 mbarrier")
            m.alloc.barriers[m.offset] = MBarrier(count, rt.n_agents, f"mbarrier {m.label}")
        return run, False

    def _op_ttng_inval_barrier(self, op):
        return (lambda agent, env: None), False

    def _op_ttng_barrier_expect(self, op):
        b = op.operands[0]
        pred = op.operands[1] if len(op.operands) > 1 else None
        nbytes = _ints_after(op)[-1]
        where = _where(op)

        def run(agent, env):
            if pred is not None and not bool(env[pred]):
                return
            bar = self._barrier(env[b], where)
            bar.expect(nbytes)
            bar.arrive(agent.vc, 1, where, agent.name)
            agent.tick()
            yield ("yield",)
        return run, True

    def _op_ttng_arrive_barrier(self, op):
        b = op.operands[0]
        pred = op.operands[1] if len(op.operands) > 1 else None
        ints = _ints_after(op)
        count = ints[-1] if ints else 1
        where = _where(op)

        def run(agent, env):
            if pred is not None and not bool(env[pred]):
                return
            bar = self._barrier(env[b], where)
            bar.arrive(agent.vc, count, where, agent.name)
            agent.tick()
            yield ("yield",)
        return run, True

    def _op_ttng_wait_barrier(self, op):
        b, ph = op.operands[:2]
        pred = op.operands[2] if len(op.operands) > 2 and op.operands[2].type == "i1" else None
        where = _where(op)

        def run(agent, env):
            if pred is not None and not bool(env[pred]):
                return
            bar = self._barrier(env[b], where)
            parity = int(env[ph]) & 1
            yield ("yield",)
            if not bar.passed(parity):
                yield ("block", lambda: bar.passed(parity),
                       lambda: f"waits at {where} for phase parity {parity} of {bar.label} "
                               f"({bar.phase} phases completed, {bar.pending} arrivals and "
                               f"{bar.tx} bytes pending)")
            agent.acquire(bar.done_vc)
        return run, True

    # -- TMA -----------------------------------------------------------------------------------
    def _op_ttng_async_tma_copy_global_to_local(self, op):
        ops_ = op.operands
        desc, coords, dst, bar_v, pred = ops_[0], ops_[1:-3], ops_[-3], ops_[-2], ops_[-1]
        where = _where(op)
        rt = self.rt

        def run(agent, env):
            if not bool(env[pred]):
                return
            d = env[desc]
            m = env[dst]
            if tuple(m.shape) != tuple(d.block):
                raise InterpreterError(f"{where}: the TMA box {list(d.block)} does not match the "
                                       f"destination {m.label} {list(m.shape)}")
            addr, inb = _desc_addresses(d, [int(env[c]) for c in coords])
            v = rt.glob.load(addr, inb, d.elem, actor=agent, what=where)
            v = np.where(inb, v, np.nan if d.nan_padding else 0)
            bar = self._barrier(env[bar_v], where)
            check_shared_write(m.alloc, m.idx, agent, what=where)
            record_shared_write(m.alloc, m.idx, agent, proxy="async")
            m.alloc.inflight_w[m.idx.reshape(-1)] += 1
            nbytes = int(np.prod(d.block)) * elem_bytes(d.elem)
            rt.events.append(_TmaLoad(agent, m, to_runtime(v, m.alloc.elem), bar, nbytes,
                                      agent.vc.copy(), where))
            yield ("yield",)
        return run, True

    def _op_ttng_async_tma_copy_local_to_global(self, op):
        ops_ = op.operands
        desc, coords, src = ops_[0], ops_[1:-1], ops_[-1]
        where = _where(op)
        rt = self.rt

        def run(agent, env):
            d = env[desc]
            m = env[src]
            if tuple(m.shape) != tuple(d.block):
                raise InterpreterError(f"{where}: the TMA box {list(d.block)} does not match the "
                                       f"source {m.label} {list(m.shape)}")
            check_shared_read(m.alloc, m.idx, agent, proxy="async", what=where,
                              fences=rt.fences_of)
            addr, inb = _desc_addresses(d, [int(env[c]) for c in coords])
            rt.glob.store(addr, m.read(), inb, d.elem, actor=agent, what=where)
            m.alloc.inflight_r[m.idx.reshape(-1)] += 1
            agent.bulk.append(_Group([m], f"TMA store from {m.label} at {where}"))
            yield ("yield",)
        return run, True

    def _op_ttng_async_tma_store_wait(self, op):
        n = _pendings(op)

        def run(agent, env):
            _retire(agent, agent.bulk, n)
        return run, False

    def _op_ttng_fence_async_shared(self, op):
        return (lambda agent, env: agent.fence()), False

    # -- wgmma ---------------------------------------------------------------------------------
    def _op_ttng_warp_group_dot(self, op):
        ops_ = op.operands
        a, b, c = ops_[:3]
        use_c = ops_[3] if len(ops_) > 3 and ops_[3].type == "i1" else None
        is_async = "isAsync = true" in op.text
        put = self._finish(op)
        out = op.results[0]
        rt = self.rt
        where = _where(op)

        def run(agent, env):
            reads = []

            def operand(v):
                x = env[v]
                if isinstance(x, MemDesc):
                    check_shared_read(x.alloc, x.idx, agent, proxy="async", what=where,
                                      fences=rt.fences_of)
                    reads.append(x)
                    return x.read()
                return np.asarray(x)
            x = operand(a)
            y = operand(b)
            acc = env[c]
            if isinstance(acc, _InFlight):
                if acc.group not in agent.wgmma:
                    raise InterpreterError(f"{where}: the accumulator is another warp group's "
                                           "wgmma in flight")
                acc = acc.value
            r = matmul_f32(x, y)
            if use_c is None or bool(env[use_c]):
                r = r + np.asarray(acc, np.float32)
            for m in reads:
                m.alloc.inflight_r[m.idx.reshape(-1)] += 1
            g = _Group(reads, f"wgmma at {where}")
            agent.wgmma.append(g)
            put(env, r)
            if is_async:
                env[out] = _InFlight(env[out], g)
            else:
                _retire(agent, agent.wgmma, 0)
            yield ("yield",)
        return run, True

    def _op_ttng_warp_group_dot_wait(self, op):
        n = _pendings(op)
        ins, outs = op.operands, op.results

        def run(agent, env):
            _retire(agent, agent.wgmma, n)
            for v, r in zip(ins, outs):
                x = env[v]
                if isinstance(x, _InFlight) and x.group.retired:
                    x = x.value
                env[r] = x
        return run, False

    # -- warp specialization -------------------------------------------------------------------
    def _op_ttg_warp_specialize(self, op):
        default = self.block(op.regions[0].blocks[0])
        parts = []
        for k, r in enumerate(op.regions[1:]):
            blk = r.blocks[0]
            for arg, v in zip(blk.args, op.operands):
                if not arg.type:
                    arg.type = v.type
            parts.append(self.block(blk))
        operands = op.operands
        rt = self.rt
        where = _where(op)

        def run(agent, env):
            vals = [env[v] for v in operands]
            cta = agent.ctaobj
            kids = []
            for k, code in enumerate(parts):
                def make(a, code=code):
                    return _run_block(code, a, dict(zip(code.args, vals)))
                kids.append(rt.spawn(cta, k + 1, f"CTA {cta.index} partition{k}", make, agent))
            agent.tick()
            yield ("yield",)
            yield from _run_block(default, agent, env)
            if not all(k.done for k in kids):
                yield ("block", lambda: all(k.done for k in kids),
                       lambda: f"waits at the end of {where} for its partitions")
            for k in kids:
                agent.acquire(k.vc)
        return run, True


def _retire(agent: Agent, groups: list, keep: int) -> None:
    """Retire all but the `keep` most recent groups: their shared reads are done now."""
    live = [g for g in groups if not g.retired]
    for g in live[:max(len(live) - keep, 0)]:
        g.retired = True
        for m in g.reads:
            idx = m.idx
            m.alloc.inflight_r[idx.reshape(-1)] -= 1
            record_shared_read(m.alloc, idx, agent)
    groups[:] = [g for g in groups if not g.retired]


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------

_TORCH_ELEM = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
               "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "i8",
               "bool": "i1"}


class _Memory:
    """Host memory of the arguments: each tensor's whole storage (or array's base) is one buffer,
    so views (a descriptor over a strided slice) address the same bytes as on the GPU."""

    def __init__(self, rt: _Runtime):
        self.rt = rt
        self.by_base: dict[int, tuple[int, int]] = {}

    def address(self, t, name: str) -> tuple[int, str]:
        """(device address of t's first element, element type) of a CPU tensor or numpy array."""
        if hasattr(t, "untyped_storage"):
            import torch
            if t.device.type != "cpu":
                raise InterpreterError(f"argument {name}: the interpreter takes CPU tensors, got {t.device}")
            st = t.untyped_storage()
            host = st.data_ptr()
            nbytes = st.nbytes()
            kind = str(t.dtype).replace("torch.", "")
            if host not in self.by_base:
                raw = torch.empty(0, dtype=torch.uint8).set_(st).numpy() if nbytes else np.zeros(0, np.uint8)
                self._add(host, nbytes, raw, name, kind)
            return self.by_base[host][0] + (t.data_ptr() - host), _TORCH_ELEM.get(kind, kind)
        if isinstance(t, np.ndarray):
            root = t
            while isinstance(root.base, np.ndarray):
                root = root.base
            if not root.flags["C_CONTIGUOUS"] or not root.flags["WRITEABLE"]:
                raise InterpreterError(f"argument {name}: its base array must be C-contiguous and "
                                       "writeable")
            host = root.__array_interface__["data"][0]
            if host not in self.by_base:
                self._add(host, root.nbytes, root.reshape(-1).view(np.uint8), name, root.dtype.name)
            off = t.__array_interface__["data"][0] - host
            return self.by_base[host][0] + off, _TORCH_ELEM.get(t.dtype.name, t.dtype.name)
        raise InterpreterError(f"argument {name}: expected a CPU tensor or a numpy array, got "
                               f"{type(t).__name__}")

    def _add(self, host: int, nbytes: int, raw: np.ndarray, name: str, kind: str) -> None:
        for h, (_, n) in self.by_base.items():
            if h < host + nbytes and host < h + n:
                raise InterpreterError(f"argument {name} overlaps another argument's memory")
        base = self.rt.place(nbytes)
        self.rt.glob.add(Buffer(f"argument {name}", base, raw, holds=kind))
        self.by_base[host] = (base, nbytes)


def _elem_ok(kind: str, elem: str) -> bool:
    return kind == elem or (elem == "bf16" and kind in ("bfloat16", "i16", "uint16")) or \
        (elem == "i8" and kind in ("i1", "uint8"))


def _descriptor(mem: _Memory, name: str, d, ptype: str) -> TensorDesc:
    from .interpreter import _block_of
    block, elem = _block_of(ptype)
    for attr in ("base", "shape", "strides"):
        if not hasattr(d, attr):
            raise InterpreterError(f"argument {name}: a tensor descriptor (base, shape, strides, "
                                   f"block or block_shape) is expected, got {type(d).__name__}")
    addr, kind = mem.address(d.base, name + ".base")
    if not _elem_ok(kind, elem):
        raise InterpreterError(f"argument {name}: the kernel's descriptor holds {elem}, its base "
                               f"tensor {kind}")
    shape, strides = tuple(int(x) for x in d.shape), tuple(int(x) for x in d.strides)
    if len(shape) != len(block) or len(strides) != len(block):
        raise InterpreterError(f"argument {name}: a rank-{len(shape)} descriptor for a rank-"
                               f"{len(block)} block")
    hb = getattr(d, "block_shape", None) or getattr(d, "block", None)
    if hb is not None and tuple(int(x) for x in hb) != tuple(block):
        raise InterpreterError(f"argument {name}: the host descriptor's block {list(hb)} differs "
                               f"from the kernel's {list(block)}")
    esize = elem_bytes(elem)
    if addr % 16:
        raise InterpreterError(f"argument {name}: TMA needs a 16-byte aligned base address")
    if strides[-1] != 1 or any((s * esize) % 16 for s in strides[:-1]):
        raise InterpreterError(f"argument {name}: TMA needs unit stride in the last dimension and "
                               f"16-byte multiples elsewhere (strides {list(strides)})")
    if any(n <= 0 for n in shape):
        raise InterpreterError(f"argument {name}: TMA needs a positive shape, got {list(shape)}")
    return TensorDesc(addr, shape, strides, tuple(block), elem,
                      getattr(d, "padding", "zero") == "nan")


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------

class RunInfo:
    """What a TTGIR run did: `agents` (warp groups that ran), `steps` (scheduler decisions),
    `spins` (rounds of polling loops: a CTA that read another CTA's words before they were
    written), `seed`."""

    def __init__(self, agents: int, steps: int, spins: int, seed: int):
        self.agents, self.steps, self.spins, self.seed = agents, steps, spins, seed

    def __repr__(self) -> str:
        return (f"RunInfo(agents={self.agents}, steps={self.steps}, spins={self.spins}, "
                f"seed={self.seed})")


def run_ttgir(module, func, args, grid: tuple, *, seed: int = 0) -> RunInfo:
    """Run the warp-specialized kernel `func` of `module` (see the module docstring)."""
    n_parts = max([len(o.regions) - 1 for o in func.walk() if o.name == "ttg.warp_specialize"],
                  default=0)
    rt = _Runtime(grid, 1 + n_parts, seed)
    comp = _WSCompiler(module, rt)
    code = comp.function(_Compiler._fname(func))
    params = code.args
    if len(args) != len(params):
        raise InterpreterError(f"the kernel takes {len(params)} arguments "
                               f"({', '.join(p.name.lstrip('%') for p in params)}), got {len(args)}")
    mem = _Memory(rt)
    env0 = {}
    used = None  # (ids of the values some op of the kernel reads: computed when first needed)
    for p, a in zip(params, args):
        name = p.name.lstrip("%")
        t = p.type
        if t.startswith("!tt.tensordesc"):
            env0[p] = _descriptor(mem, name, a, t)
            continue
        if is_ptr(t):
            if a is None:
                env0[p] = np.array(0, np.int64)
                continue
            # (as on the GPU a pointer is an address, and the host passes placeholders for the
            # pointers a kernel instance never reads: only a pointer the kernel reads must hold
            # its element type, else the kernel and its arguments disagree)
            addr, kind = mem.address(a, name)
            elem = pointee(_ty(t)[1])
            if not _elem_ok(kind, elem):
                if used is None:
                    used = {id(v) for o in func.walk() for v in o.operands}
                if id(p) in used:
                    raise InterpreterError(
                        f"argument {name}: the kernel reads it as {elem}, the host passed a "
                        f"{kind} tensor of shape {tuple(getattr(a, 'shape', ()))}: the compiled "
                        "kernel and its arguments disagree (a kernel compiled for another "
                        "variant, or arguments bound for another plan)")
            env0[p] = np.array(addr, np.int64)
            continue
        env0[p] = _scalar(name, a, t)
    total = grid[0] * grid[1] * grid[2]
    for c in range(total):
        pid = (c % grid[0], (c // grid[0]) % grid[1], c // (grid[0] * grid[1]))
        cta = _CTA(rt, c, pid)
        rt.ctas.append(cta)
        rt.spawn(cta, 0, f"CTA {c} default", lambda a: _run_block(code, a, dict(env0)), None)
    with np.errstate(all="ignore"), one_thread():
        rt.run()
    return RunInfo(len(rt.agents), rt.steps, rt.spins, seed)
