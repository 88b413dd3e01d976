"""Memory for the TTIR interpreter: flat address spaces, exact bf16, and a race check.

Addresses are plain integers, as on the GPU: every pointer argument becomes a buffer at its own
base address in one global space (4 KiB apart, with unmapped gaps between them), so pointer
arithmetic, `tt.ptr_to_int` and inline PTX that computes addresses all work on the same numbers,
and an access that leaves its buffer lands in a gap and raises `InterpreterError`. Each CTA's
shared memory is a buffer in a second space (the cluster's distributed shared memory window).

Values of type bf16 are held as float32 arrays whose values are exactly representable in bf16;
every op that produces bf16 rounds to nearest even (`round_bf16`), loads and stores move the
16-bit patterns. No ml_dtypes needed (an ml_dtypes bfloat16 array is accepted as an argument).

Race check (`Shadow`): a buffer can be *tracked*: for every byte it remembers the last writer
(CTA and its cluster-barrier arrive count at the write) and, per reader, the arrive count at its
last read. Two accesses of different CTAs, one a write, are ordered only through the cluster
barrier: access A by CTA x after x's a-th arrive is ordered before access B by CTA y iff y has
completed at least a + 1 cluster-barrier waits (and x and y are in one cluster). An unordered
pair raises `RaceError`, whatever order the interpreter happened to run them in, so a wrong
double-buffer parity or a missing barrier shows. Tracked: the CTAs' shared memory and the global
scratch (what normfuse's exchange uses); user buffers are not tracked.
"""
from __future__ import annotations

import numpy as np


class InterpreterError(Exception):
    """The IR cannot be run: an unsupported op, an out-of-bounds access, a bad argument, ..."""


class RaceError(InterpreterError):
    """Two CTAs access the same bytes, one of them writing, with no cluster barrier between."""


# ---------------------------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------------------------

# MLIR element type -> numpy dtype of the interpreter's values (bf16 lives in float32)
_RUNTIME = {"f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64,
            "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
            "index": np.int64}
# ... and of its bytes in memory (i1 is a byte, bf16 its 16-bit pattern, pointers 64-bit)
_STORAGE = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64,
            "i1": np.int8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}
FLOATS = ("f16", "bf16", "f32", "f64")


def is_ptr(elem: str) -> bool:
    return elem.startswith("!tt.ptr<")


def pointee(elem: str) -> str:
    """`!tt.ptr<bf16>` -> `bf16` (`!tt.ptr<bf16, 1>` too)."""
    inner = elem[len("!tt.ptr<"):-1]
    depth = 0
    for i, ch in enumerate(inner):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            return inner[:i].strip()
    return inner.strip()


def runtime_dtype(elem: str):
    if is_ptr(elem):
        return np.int64
    try:
        return _RUNTIME[elem]
    except KeyError:
        raise InterpreterError(f"element type '{elem}' is not supported by the interpreter") from None


def storage_dtype(elem: str):
    if is_ptr(elem):
        return np.int64
    try:
        return _STORAGE[elem]
    except KeyError:
        raise InterpreterError(f"element type '{elem}' is not supported by the interpreter") from None


def elem_bytes(elem: str) -> int:
    return np.dtype(storage_dtype(elem)).itemsize


def round_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bf16 (ties to even), returned as float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = r.view(np.float32)
    nan = np.isnan(x)
    if nan.any():
        out = np.where(nan, np.float32(np.nan), out)
    return out.reshape(x.shape)


def bf16_bits(x) -> np.ndarray:
    """The 16-bit patterns of float32 values (rounded to bf16 first)."""
    r = round_bf16(x)
    return (r.view(np.uint32) >> 16).astype(np.uint16)


def bf16_from_bits(bits) -> np.ndarray:
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)


def round_tf32(x) -> np.ndarray:
    """float32 rounded to tf32 (10 mantissa bits; to nearest, ties away, as cvt.rna.tf32.f32)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + 0x1000) & 0xFFFFE000).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), r, x).astype(np.float32)


def matmul_f32(x, y) -> np.ndarray:
    """x @ y in float32 (a tile's dot), through torch's CPU kernel on one thread when torch is
    there: numpy's OpenBLAS wakes its thread pool for every small product, which costs up to tens
    of milliseconds each on a loaded machine (see `one_thread`)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.ascontiguousarray(y, dtype=np.float32)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency of normfuse
        return np.matmul(x, y)
    return (torch.from_numpy(x) @ torch.from_numpy(y)).numpy()


class one_thread:
    """Context: torch's intra-op threads set to 1 (restored after). An interpreted kernel does
    many small products one after another; a thread pool only adds wake-ups."""

    def __enter__(self):
        try:
            import torch
        except ImportError:  # pragma: no cover
            self.torch = None
            return self
        self.torch = torch
        self.prev = torch.get_num_threads()
        if self.prev != 1:
            torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        if self.torch is not None and self.prev != 1:
            self.torch.set_num_threads(self.prev)
        return False


def to_runtime(value, elem: str) -> np.ndarray:
    """Convert an array to the interpreter's representation of `elem` (rounding bf16)."""
    if elem == "bf16":
        return round_bf16(value)
    return np.asarray(value).astype(runtime_dtype(elem), copy=False)


def from_storage(raw: np.ndarray, elem: str) -> np.ndarray:
    if elem == "bf16":
        return bf16_from_bits(raw)
    if elem == "i1":
        return raw != 0
    return raw.astype(runtime_dtype(elem), copy=False)


def to_storage(value: np.ndarray, elem: str) -> np.ndarray:
    if elem == "bf16":
        return bf16_bits(value)
    return np.asarray(value).astype(storage_dtype(elem))


# ---------------------------------------------------------------------------------------------
# Buffers and address spaces
# ---------------------------------------------------------------------------------------------

class Shadow:
    """Who wrote and read each byte of a tracked buffer (see the module docstring)."""

    def __init__(self, nbytes: int):
        self.w_cta = np.full(nbytes, -1, dtype=np.int64)
        self.w_epoch = np.zeros(nbytes, dtype=np.int64)
        self.readers: dict[int, np.ndarray] = {}  # cta -> arrive count at its last read (-1: none)


class Buffer:
    def __init__(self, name: str, base: int, data: np.ndarray, *, tracked: bool = False,
                 owner=None, holds: str | None = None):
        self.name = name
        self.base = base
        self.data = data  # 1-D uint8 view of the memory
        self.nbytes = data.size
        self.holds = holds  # the element type the host's tensor had (a diagnostic), if known
        self.shadow = Shadow(self.nbytes) if tracked else None
        self.owner = owner  # the CTA whose shared memory this is (None: global)
        self._views: dict = {}

    def typed(self, dtype) -> np.ndarray:
        v = self._views.get(dtype)
        if v is None:
            size = np.dtype(dtype).itemsize
            v = self.data[: (self.nbytes // size) * size].view(dtype)
            self._views[dtype] = v
        return v


class Space:
    """An address space: buffers at base addresses; lookups are vectorized."""

    def __init__(self, name: str):
        self.name = name
        self.buffers: list[Buffer] = []
        self._bases = np.zeros(0, dtype=np.int64)

    def add(self, buf: Buffer) -> Buffer:
        self.buffers.append(buf)
        self.buffers.sort(key=lambda b: b.base)
        self._bases = np.array([b.base for b in self.buffers], dtype=np.int64)
        return buf

    def _locate(self, addr: np.ndarray, size: int, what: str):
        """Split the (valid) addresses by buffer: [(buffer, positions, element offsets)]."""
        if not self.buffers:
            raise InterpreterError(f"{what}: no memory in the {self.name} space")
        if addr.size > 1:  # the usual case, one buffer: no unique() over every lane
            lo, hi = int(addr.min()), int(addr.max())
            k = int(np.searchsorted(self._bases, lo, side="right")) - 1
            if k >= 0 and (k + 1 == len(self._bases) or hi < self._bases[k + 1]):
                idx = None
                uniq = [k]
            else:
                idx = np.searchsorted(self._bases, addr, side="right") - 1
                uniq = np.unique(idx)
        else:
            idx = np.searchsorted(self._bases, addr, side="right") - 1
            uniq = np.unique(idx)
        groups = []
        for k in uniq:
            pos = None if len(uniq) == 1 else np.nonzero(idx == k)[0]
            a = addr if pos is None else addr[pos]
            if k < 0:
                raise InterpreterError(f"{what}: address {int(a[0]):#x} is outside every buffer of "
                                       f"the {self.name} space ({self.describe(int(a[0]))})")
            buf = self.buffers[k]
            off = a - buf.base
            out = (off + size > buf.nbytes)
            if out.any():
                bad = int(a[out][0])
                held = (f"; the host passed {buf.holds} there, the kernel reads {size}-byte "
                        "elements" if buf.holds else "")
                raise InterpreterError(f"{what}: address {bad:#x} is outside every buffer of the "
                                       f"{self.name} space ({self.describe(bad)}{held})")
            if (off % size).any():
                bad = int(a[(off % size) != 0][0])
                raise InterpreterError(f"{what}: address {bad:#x} is not aligned to {size} bytes "
                                       f"({self.describe(bad)})")
            groups.append((buf, pos, off))
        return groups

    def describe(self, addr: int) -> str:
        near = [b for b in self.buffers if b.base <= addr]
        if not near:
            return "below the first buffer"
        b = near[-1]
        return f"{addr - b.base:+d} bytes from the start of '{b.name}', which has {b.nbytes} bytes"

    def load(self, addr, mask, elem: str, actor=None, what: str = "load") -> np.ndarray:
        """Values of type `elem` at byte addresses `addr` (lanes where mask is False: None)."""
        addr = np.asarray(addr, dtype=np.int64)
        st = storage_dtype(elem)
        size = np.dtype(st).itemsize
        out = np.zeros(addr.shape, dtype=st)
        flat_addr = addr.reshape(-1)
        flat_out = out.reshape(-1)
        lanes = np.arange(flat_addr.size) if mask is None else np.nonzero(
            np.broadcast_to(mask, addr.shape).reshape(-1))[0]
        if lanes.size:
            a = flat_addr[lanes]
            for buf, pos, off in self._locate(a, size, what):
                sel = lanes if pos is None else lanes[pos]
                if buf.shadow is not None:
                    _check_access(buf, off, size, actor, write=False, what=what)
                flat_out[sel] = buf.typed(st)[off // size]
        return from_storage(out, elem)

    def store(self, addr, value, mask, elem: str, actor=None, what: str = "store") -> None:
        addr = np.asarray(addr, dtype=np.int64)
        st = storage_dtype(elem)
        size = np.dtype(st).itemsize
        raw = np.broadcast_to(to_storage(value, elem), addr.shape).reshape(-1)
        flat_addr = addr.reshape(-1)
        lanes = np.arange(flat_addr.size) if mask is None else np.nonzero(
            np.broadcast_to(mask, addr.shape).reshape(-1))[0]
        if not lanes.size:
            return
        a = flat_addr[lanes]
        for buf, pos, off in self._locate(a, size, what):
            sel = lanes if pos is None else lanes[pos]
            if buf.shadow is not None:
                _check_access(buf, off, size, actor, write=True, what=what)
            buf.typed(st)[off // size] = raw[sel]


# ---------------------------------------------------------------------------------------------
# The race check
# ---------------------------------------------------------------------------------------------

def _ordered(prev_cta: np.ndarray, prev_epoch: np.ndarray, actor) -> np.ndarray:
    """Whether accesses of CTAs `prev_cta` (after their `prev_epoch`-th arrive) are ordered before
    the current access of `actor` (same CTA, or same cluster and enough completed waits)."""
    same = prev_cta == actor.cta
    in_cluster = (prev_cta // actor.cluster_size) == (actor.cta // actor.cluster_size)
    return same | (in_cluster & (actor.waited >= prev_epoch + 1))


def _check_access(buf: Buffer, off: np.ndarray, size: int, actor, *, write: bool, what: str) -> None:
    if actor is None:
        raise InterpreterError(f"{what}: '{buf.name}' is only reachable from a running CTA")
    sh = buf.shadow
    b = (off[:, None] + np.arange(size)[None, :]).reshape(-1)
    if buf.owner is not None and buf.owner.exited:
        raise RaceError(f"{what}: CTA {actor.cta} accesses the shared memory of CTA "
                        f"{buf.owner.cta}, which has already exited")
    w_cta, w_ep = sh.w_cta[b], sh.w_epoch[b]
    if not write:
        unwritten = w_cta < 0
        if unwritten.any():
            raise InterpreterError(f"{what}: CTA {actor.cta} reads {buf.name} at byte "
                                   f"{int(b[unwritten][0])}, which no CTA has written")
    bad = (w_cta >= 0) & ~_ordered(w_cta, w_ep, actor)
    if bad.any():
        k = np.nonzero(bad)[0][0]
        raise RaceError(f"{what}: CTA {actor.cta} {'writes' if write else 'reads'} {buf.name} at "
                        f"byte {int(b[k])}, written by CTA {int(w_cta[k])} after its "
                        f"{int(w_ep[k])}-th cluster-barrier arrive, with no barrier wait between "
                        f"(CTA {actor.cta} has completed {actor.waited} waits)")
    if write:
        for r, ep in sh.readers.items():
            if r == actor.cta:
                continue
            e = ep[b]
            seen = e >= 0
            bad = seen & ~_ordered(np.full(e.shape, r), e, actor)
            if bad.any():
                k = np.nonzero(bad)[0][0]
                raise RaceError(f"{what}: CTA {actor.cta} overwrites {buf.name} at byte {int(b[k])} "
                                f"that CTA {r} read after its {int(e[k])}-th cluster-barrier arrive, "
                                f"with no barrier wait between (CTA {actor.cta} has completed "
                                f"{actor.waited} waits): a peer may still be reading it")
        sh.w_cta[b] = actor.cta
        sh.w_epoch[b] = actor.arrived
    else:
        ep = sh.readers.get(actor.cta)
        if ep is None:
            ep = sh.readers[actor.cta] = np.full(buf.nbytes, -1, dtype=np.int64)
        ep[b] = np.maximum(ep[b], actor.arrived)


def check_exit(buf: Buffer, owner) -> None:
    """A CTA exits: every peer access to its shared memory must be ordered before (the memory
    is gone, or reused by the next CTA on that SM)."""
    sh = buf.shadow
    for r, ep in sh.readers.items():
        if r == owner.cta:
            continue
        e = int(ep.max())
        if e >= 0 and owner.waited < e + 1:
            raise RaceError(f"CTA {owner.cta} exits after {owner.waited} cluster-barrier waits while "
                            f"CTA {r} reads its shared memory after its {e}-th arrive: the reads "
                            "may still be in flight (a wait before the exit is missing)")
    peers = (sh.w_cta >= 0) & (sh.w_cta != owner.cta)
    if peers.any():
        e = int(sh.w_epoch[peers].max())
        if owner.waited < e + 1:
            raise RaceError(f"CTA {owner.cta} exits while a peer's write to its shared memory "
                            "is not ordered before the exit")


# ---------------------------------------------------------------------------------------------
# Shared memory of warp-specialized kernels: mbarrier happens-before, async proxies
# ---------------------------------------------------------------------------------------------

class SharedAlloc:
    """One `ttg.local_alloc` of one CTA, with its race shadow (see `warp_specialized`).

    Values live in the interpreter's runtime representation (bf16 as rounded float32), flat, one
    entry per element; views (`ttg.memdesc_*`) are index arrays into it. Per element the shadow
    keeps: the last writer (an agent: a warp group of a CTA) and its clock at the write, whether
    that write came through the async proxy (TMA), the clock of each agent's last read, and how
    many async operations are in flight on it (a TMA load that will write it, a wgmma or TMA store
    that may still read it). An access is race-free when every conflicting earlier access is
    ordered before it by happens-before: the accessing agent's vector clock has seen the other
    agent's clock at that access (through an mbarrier phase it waited for, or the fork/join of
    `ttg.warp_specialize`), and no async operation on the same element is still in flight.
    Shared memory written through the generic proxy (`ttg.local_store`) and then read by the
    async proxy (TMA store, wgmma) also needs a `fence.proxy.async` (`ttng.fence_async_shared`)
    by the writer after the write, ordered before the read."""

    def __init__(self, name: str, shape: tuple, elem: str, gid0: int, n_local: int, cta: int):
        n = int(np.prod(shape)) if shape else 1
        self.name = name
        self.shape = tuple(shape)
        self.elem = elem
        self.cta = cta
        self.gid0 = gid0  # global id of the CTA's first agent (readers are indexed locally)
        self.data = np.zeros(n, dtype=runtime_dtype(elem))
        self.w_agent = np.full(n, -1, dtype=np.int32)
        self.w_clk = np.zeros(n, dtype=np.int64)
        self.w_async = np.zeros(n, dtype=bool)
        self.r_clk = np.full((n_local, n), -1, dtype=np.int64)
        self.inflight_w = np.zeros(n, dtype=np.int16)
        self.inflight_r = np.zeros(n, dtype=np.int16)
        self.barriers: dict[int, object] = {}
        self.views: dict[tuple, np.ndarray] = {}

    def index(self, offset: int, shape: tuple, strides: tuple) -> np.ndarray:
        """Flat element indices of the view (offset, shape, strides), cached."""
        key = (offset, shape, strides)
        idx = self.views.get(key)
        if idx is None:
            idx = np.full(shape, offset, dtype=np.int64)
            for d, (n, st) in enumerate(zip(shape, strides)):
                sh = [1] * len(shape)
                sh[d] = n
                idx = idx + (np.arange(n, dtype=np.int64) * st).reshape(sh)
            if idx.size and (idx.min() < 0 or idx.max() >= self.data.size):
                raise InterpreterError(f"a view of {self.name} leaves its {self.data.size} elements")
            self.views[key] = idx
        return idx


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.reshape(-1))[0])


def check_shared_read(alloc: SharedAlloc, idx: np.ndarray, agent, *, proxy: str, what: str,
                      fences=None) -> None:
    """A read of elements `idx` of `alloc` by `agent` (`proxy`: 'generic' or 'async')."""
    flat = idx.reshape(-1)
    if alloc.inflight_w[flat].any():
        k = flat[_first_bad(alloc.inflight_w[flat] > 0)]
        raise RaceError(f"{what}: {agent.name} reads {alloc.name} (element {int(k)}) while a TMA "
                        "load into it is still in flight (its mbarrier phase has not completed: "
                        "a wait is missing or waits for the wrong phase)")
    w = alloc.w_agent[flat]
    if (w < 0).any():
        k = flat[_first_bad(w < 0)]
        raise RaceError(f"{what}: {agent.name} reads {alloc.name} (element {int(k)}), which nothing "
                        "has written yet (a read before its producer's write: a missing wait, or a "
                        "wait for the wrong phase)")
    seen = agent.vc[w] >= alloc.w_clk[flat]
    if not seen.all():
        j = _first_bad(~seen)
        raise RaceError(f"{what}: {agent.name} reads {alloc.name} (element {int(flat[j])}) written "
                        f"by {agent.runtime.agent_name(int(w[j]))} with no happens-before between "
                        "(no mbarrier phase orders the write before the read)")
    if proxy == "async":
        generic = ~alloc.w_async[flat]
        if generic.any():
            wg, cg = w[generic], alloc.w_clk[flat][generic]
            ok = np.zeros(wg.shape, dtype=bool)
            for a in np.unique(wg):
                f = fences(int(a))  # sorted fence clocks of agent a
                sel = wg == a
                if len(f):
                    pos = np.searchsorted(f, cg[sel], side="left")
                    has = pos < len(f)
                    fc = np.where(has, f[np.minimum(pos, len(f) - 1)], 0)
                    ok[sel] = has & (agent.vc[a] >= fc)
            if not ok.all():
                j = _first_bad(~ok)
                raise RaceError(f"{what}: the async proxy (TMA/wgmma) issued by {agent.name} reads "
                                f"{alloc.name} (element {int(flat[generic][j])}) written through the "
                                f"generic proxy by {agent.runtime.agent_name(int(wg[j]))} without a "
                                "fence.proxy.async (fence_async_shared) between the write and the "
                                "read")


def record_shared_read(alloc: SharedAlloc, idx: np.ndarray, agent) -> None:
    flat = idx.reshape(-1)
    row = alloc.r_clk[agent.gid - alloc.gid0]
    row[flat] = agent.clock


def check_shared_write(alloc: SharedAlloc, idx: np.ndarray, agent, *, what: str) -> None:
    """A write of elements `idx` by `agent` (generic store, or a TMA load at its issue)."""
    flat = idx.reshape(-1)
    if alloc.inflight_w[flat].any():
        k = flat[_first_bad(alloc.inflight_w[flat] > 0)]
        raise RaceError(f"{what}: {agent.name} writes {alloc.name} (element {int(k)}) while a TMA "
                        "load into it is still in flight")
    if alloc.inflight_r[flat].any():
        k = flat[_first_bad(alloc.inflight_r[flat] > 0)]
        raise RaceError(f"{what}: {agent.name} overwrites {alloc.name} (element {int(k)}) while an "
                        "async read of it (a wgmma not yet retired by warp_group_dot_wait, or a TMA "
                        "store not yet retired by async_tma_store_wait) may still be running")
    w = alloc.w_agent[flat]
    bad = (w >= 0) & (agent.vc[np.maximum(w, 0)] < alloc.w_clk[flat])
    if bad.any():
        j = _first_bad(bad)
        raise RaceError(f"{what}: {agent.name} writes {alloc.name} (element {int(flat[j])}) that "
                        f"{agent.runtime.agent_name(int(w[j]))} wrote, with no happens-before "
                        "between the two writes")
    for r in range(alloc.r_clk.shape[0]):
        g = alloc.gid0 + r
        if g == agent.gid:
            continue
        rc = alloc.r_clk[r][flat]
        bad = (rc >= 0) & (agent.vc[g] < rc)
        if bad.any():
            j = _first_bad(bad)
            raise RaceError(f"{what}: {agent.name} overwrites {alloc.name} (element {int(flat[j])}) "
                            f"that {agent.runtime.agent_name(g)} read, with no happens-before "
                            "between (the slot is written while it may still be read: its "
                            "release/acquire on the mbarriers is missing or for the wrong phase)")


def record_shared_write(alloc: SharedAlloc, idx: np.ndarray, agent, *, proxy: str) -> None:
    flat = idx.reshape(-1)
    alloc.w_agent[flat] = agent.gid
    alloc.w_clk[flat] = agent.clock
    alloc.w_async[flat] = proxy == "async"
