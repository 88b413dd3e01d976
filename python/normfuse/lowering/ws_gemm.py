"""The warp-specialized Hopper GEMM template that `hopper-ws` lowers fused kernels to (Gluon).

This is not a kernel a user calls: `passes/hopper_ws.py` matches a fused GEMM-shaped TTIR loop
(what lazy-prenorm, epilogue-norm and cluster-reduce leave behind), translates the parts of it
that are not the GEMM itself into four small Gluon functions, and instantiates this template with
them (`lowering/codegen.py`). The template owns the schedule; the hooks own the math:

    PRE(af, pid_m, eargs) -> c0                 row vector from the first A tile (LayerNorm's shift)
    STATS(af, c0, st0, st1, kk, pid_m, eargs)   row statistics accumulated from every A tile
    AFN(af, c0, kk, pid_m, eargs) -> tile       the A operand (g and beta applied in the k-loop)
    EPI(acc, st0, st1, c0, pid_m, pid_n, xj, eargs, CLUSTER, CID, NCONS, WARPS) -> tile
                                                everything after the k-loop (the last four are
                                                constexprs that `cluster_sum` needs)

Schedule (one CTA, persistent: the programs walk the output tiles, or, for a cluster post-norm,
the clusters walk row blocks and the C CTAs of a cluster take the row's C N-tiles):

    loader partition (4 warps, one thread issues)   TMA A[BM, BK] and B tiles into a ring of
                                                    STAGES slots; `ready[s]` (tx bytes),
                                                    waits `empty[s]`
    consumer partition(s) (1 or 2, CONS_WARPS each) wait `ready[s]`; A through registers
                                                    (ldmatrix) when statistics or an A transform
                                                    are needed, else straight from shared memory;
                                                    async wgmma with one group in flight; release
                                                    the previous slot; after the k-loop: EPI,
                                                    bf16/fp16 tile -> shared -> TMA store

With two consumers (`NCONS=2`, "ping-pong") consumer c takes the CTA's tiles c, c + 2, ...: the
ring is shared in tile order and an `order` mbarrier pair makes their main loops take strict
turns on the tensor cores, while the other one runs its epilogue (and, for a cluster post-norm,
waits for its peers' partial sums). The turns are also what keeps the ring's parity waits sound: a
consumer that skipped ahead to its next tile could see a slot two fills behind as ready.

Statistics in the consumer: after issuing the k-step's wgmma (A and B from shared memory), the
consumer warps read the same A slot into registers (`DotOperandLayout(0, mma, k_width=2)`, i.e.
ldmatrix, each warpgroup its own rows) and accumulate the row sums while the tensor cores work;
the slot is released after both. No separate partition, no extra ring coupling (DESIGN.md
measured +14-35 % for a statistics partition on the ring). When the A operand itself is computed
(g or beta applied in the loop), it goes to the wgmma from registers and each k-step's wgmma is
waited for before the next ldmatrix: the loop reuses the same PTX registers for every k-step's
fragment, so a fragment cannot stay in flight across iterations (a first version that kept one
wgmma in flight was not repeatable on the H200).

Shared statistics (`SHARE`, one consumer, no cluster, no A transform): the tiles run in the
order of `_share_tile`, in which a row block's first tile comes at least a wave before its other
tiles. The first tile runs the k-loop with the statistics and stores them (and the shift) as
64-bit words (f32 value, launch epoch) into `sbuf`; the other tiles run the plain k-loop, load
the words before it and, after it, take those stamped with this launch's epoch, reloading the
others until they are (`_consumer_shared`). A 64-bit store is single-copy atomic, so no fence or
flag is needed, and the words are never cleared (each launch has a larger epoch). Waits point only
to earlier positions of the order: no deadlock as long as every CTA of the grid is resident.

Cluster exchange (post-norm rows of C tiles, `CLUSTER = C`): after its k-loop each CTA pushes its
[BM] partial sums into every peer's shared memory (`mapa` + `st.shared::cluster`), each warp then
arrives on every peer's `full[slot]` mbarrier (release, cluster scope); each CTA waits on its own
`full[slot]` (acquire, cluster scope) and adds the C partials in rank order, so every CTA holds
bitwise the same totals; then each warp arrives on every peer's `empty[slot]`, which a CTA waits on
before it writes into that slot again (two slots: row blocks alternate). The region lives past
Triton's shared-memory allocation (`global_smem + %dynamic_smem_size - XBYTES`), sized by the
launch (the kernel's metadata gains XBYTES of dynamic shared memory). Every partition crosses one
`barrier.cluster` at its start (after the mbarriers are initialised) and none exits before its
last `empty` phase completed, so no CTA is written after it left.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)

__all__ = ["ws_gemm_kernel", "exchange_bytes", "cluster_sum", "noop_pre", "noop_stats",
           "noop_afn", "identity_epilogue"]


# ---------------------------------------------------------------------------------------------
# Layouts and the tile schedule
# ---------------------------------------------------------------------------------------------

@gluon.constexpr_function
def mma_layout_for(BM, BN, num_warps, WARPS_N=1):
    """wgmma accumulator layout: warps stacked along M (16 rows each) and, with WARPS_N = 2, two
    warpgroups side by side along N (each a [BM, BN/2] half: half the columns per thread, so
    per-column vectors in the epilogue take half the registers)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps // WARPS_N, WARPS_N],
                                     instr_shape=[16, BN // WARPS_N, 16])


@gluon.jit
def _rows_order(K, ROWS_MAX_K: gl.constexpr):
    """Whether this launch walks the tiles in row-major runs (see `_work_tile`): K <= ROWS_MAX_K.
    Only called when ROWS_MAX_K > 0 (a constexpr of the instance) and there is no cluster."""
    return K <= ROWS_MAX_K


@gluon.jit
def _num_work(M, N, K, BM: gl.constexpr, BN: gl.constexpr, CLUSTER: gl.constexpr,
              ROWS_MAX_K: gl.constexpr):
    """How many (row block, N tile) pairs this CTA owns."""
    num_pid_m = gl.cdiv(M, BM)
    if CLUSTER == 1:
        tiles = num_pid_m * gl.cdiv(N, BN)
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        n = gl.cdiv(tiles - pid, nprog)
        if ROWS_MAX_K > 0:
            if _rows_order(K, ROWS_MAX_K):
                n = tiles // nprog + (pid < tiles % nprog).to(gl.int32)
    else:
        cid = gl.program_id(0) // CLUSTER
        ncl = gl.num_programs(0) // CLUSTER
        n = gl.cdiv(num_pid_m - cid, ncl)
    return gl.maximum(n, 0)


@gluon.jit
def _grouped_tile(t, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    group = GROUP_M * num_pid_n
    first_m = (t // group) * GROUP_M
    size_m = gl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (t % group) % size_m, (t % group) // size_m


@gluon.jit
def _work_tile(j, M, N, K, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr,
               CLUSTER: gl.constexpr, ROWS_MAX_K: gl.constexpr):
    """The j-th (pid_m, pid_n) of this CTA. Without a cluster, either tile pid + j * programs in
    grouped order (GROUP_M row blocks share their B tiles in L2), or, when K <= ROWS_MAX_K, the
    j-th tile of this CTA's contiguous run of tiles in row-major order (the N tiles of a row block
    one after another, so that the row statistics of a row block are computed once per run, not
    once per tile). In a cluster: row block cid + j * clusters, N tile = the CTA's rank."""
    if CLUSTER == 1:
        num_pid_m = gl.cdiv(M, BM)
        num_pid_n = gl.cdiv(N, BN)
        pid = gl.program_id(0)
        nprog = gl.num_programs(0)
        if ROWS_MAX_K > 0:
            if _rows_order(K, ROWS_MAX_K):
                tiles = num_pid_m * num_pid_n
                t = pid * (tiles // nprog) + gl.minimum(pid, tiles % nprog) + j
                pid_m = t // num_pid_n
                pid_n = t % num_pid_n
            else:
                pid_m, pid_n = _grouped_tile(pid + j * nprog, num_pid_m, num_pid_n, GROUP_M)
        else:
            pid_m, pid_n = _grouped_tile(pid + j * nprog, num_pid_m, num_pid_n, GROUP_M)
    else:
        pid_m = gl.program_id(0) // CLUSTER + j * (gl.num_programs(0) // CLUSTER)
        pid_n = gl.program_id(0) % CLUSTER
    return pid_m, pid_n


@gluon.jit
def _share_lead(N, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """Shared statistics: by how many groups of GROUP_M row blocks the first tiles run ahead of
    the rest, so that at least one wave of positions (a tile per program) separates a row block's
    first tile from its other tiles."""
    return gl.cdiv(gl.num_programs(0), GROUP_M * gl.cdiv(N, BN)) + 1


@gluon.jit
def _share_work(M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """How many positions of the shared-statistics order this CTA walks (some are empty)."""
    groups = gl.cdiv(gl.cdiv(M, BM), GROUP_M)
    positions = (_share_lead(N, BN, GROUP_M) + groups * gl.cdiv(N, BN)) * GROUP_M
    return gl.maximum(gl.cdiv(positions - gl.program_id(0), gl.num_programs(0)), 0)


@gluon.jit
def _share_tile(j, M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """The j-th position of this CTA in the shared-statistics order: (pid_m, pid_n, valid).

    Row blocks form groups of G = GROUP_M (the last one padded with empty positions). F(g) is the
    first tiles (N tile 0) of group g's row blocks, O(g) their other tiles, column by column (the
    G row blocks of a column share its B tile, as in the grouped order). Positions run
    F(0) .. F(L-1), then O(0) F(L), O(1) F(L+1), ...: from group L on, a row block's first tile,
    which computes and publishes the statistics, comes L - 1 >= programs / (G x num_pid_n) blocks
    of G x num_pid_n positions, at least a wave, before its other tiles, which wait for them in
    their epilogue (the first L groups' other tiles may share a wave with their first tiles and
    wait up to the statistics' share of one tile, once per launch). A CTA walks positions pid,
    pid + programs, ...; a wait always points to an earlier position. `share_order` is the same
    arithmetic in Python."""
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    lead = _share_lead(N, BN, GROUP_M)
    p = gl.program_id(0) + j * gl.num_programs(0)
    first = lead * GROUP_M
    q = p - first
    blk = GROUP_M * num_pid_n
    b = q // blk
    r = q % blk
    others = GROUP_M * (num_pid_n - 1)
    # prefix: F(p // G); else block b: O(b) (r < others) or F(b + lead)
    g = gl.where(p < first, p // GROUP_M, gl.where(r < others, b, b + lead))
    i = gl.where(p < first, p % GROUP_M, gl.where(r < others, r % GROUP_M, r - others))
    pid_n = gl.where(p < first, 0, gl.where(r < others, 1 + r // GROUP_M, 0))
    pid_m = g * GROUP_M + i
    return pid_m, pid_n, pid_m < num_pid_m


def share_order(num_pid_m: int, num_pid_n: int, programs: int, group_m: int = 8):
    """The shared-statistics order in Python, position by position (None: an empty position):
    `_share_tile`'s arithmetic, for tests and for reading. CTA c walks positions c, c + programs, ..."""
    lead = -(-programs // (group_m * num_pid_n)) + 1
    groups = -(-num_pid_m // group_m)
    first, blk, others = lead * group_m, group_m * num_pid_n, group_m * (num_pid_n - 1)
    out = []
    for p in range((lead + groups * num_pid_n) * group_m):
        if p < first:
            g, i, n = p // group_m, p % group_m, 0
        else:
            b, r = divmod(p - first, blk)
            g, i, n = (b, r % group_m, 1 + r // group_m) if r < others else (b + lead, r - others, 0)
        m = g * group_m + i
        out.append((m, n) if m < num_pid_m else None)
    return out


# ---------------------------------------------------------------------------------------------
# Cluster exchange (inline PTX; the region sits past Triton's shared-memory allocation)
# ---------------------------------------------------------------------------------------------

@gluon.constexpr_function
def exchange_bytes(BM, CLUSTER, NCONS):
    """Shared-memory bytes of the exchange region: per consumer, 2 `full` + 2 `empty` mbarriers
    (32 bytes) and 2 slots x CLUSTER ranks x 2 statistics x BM fp32 partials."""
    if CLUSTER <= 1:
        return 0
    return NCONS * (32 + 2 * CLUSTER * 2 * BM * 4)


@gluon.constexpr_function
def _region(xbytes, coff):
    # %nfb = this consumer's part of the exchange region, past Triton's shared-memory allocation
    return ("mov.u32 %nfb, global_smem; mov.u32 %nft, %dynamic_smem_size; add.u32 %nfb, %nfb, %nft; "
            f"sub.u32 %nfb, %nfb, {xbytes}; add.u32 %nfb, %nfb, {coff}; ")


@gluon.constexpr_function
def _consumer_offset(BM, CLUSTER, CID):
    return CID * (32 + 2 * CLUSTER * 2 * BM * 4)


@gluon.constexpr_function
def _asm_init(XBYTES, COFF, CLUSTER, WARPS):
    # thread 0 initialises full[0..1] and empty[0..1]: each phase completes when every warp of
    # every rank has arrived (predicated, not branched: the other threads do nothing)
    n = CLUSTER * WARPS
    body = _region(XBYTES, COFF)
    for i in range(4):
        body += f"@%nfp mbarrier.init.shared::cta.b64 [%nfb+{8 * i}], {n}; "
    return ("{ .reg .b32 %nfb, %nft; .reg .pred %nfp; mov.u32 %nft, %tid.x; setp.eq.u32 %nfp, %nft, 0; "
            + body + "@%nfp fence.mbarrier_init.release.cluster; mov.u32 $0, 0; }")


@gluon.constexpr_function
def _asm_push(XBYTES, COFF, CLUSTER, BM, STAT):
    # st.shared::cluster of one partial (row $2, value $3) into slot $1, this rank's column, on
    # every rank
    body = _region(XBYTES, COFF)
    body += ("mov.u32 %nfr, %cluster_ctarank; "
             f"mad.lo.u32 %nft, $1, {CLUSTER * 2 * BM * 4}, 32; add.u32 %nfb, %nfb, %nft; "
             f"mad.lo.u32 %nft, %nfr, {2 * BM * 4}, {STAT * BM * 4}; add.u32 %nfb, %nfb, %nft; "
             "mad.lo.u32 %nfb, $2, 4, %nfb; ")
    for q in range(CLUSTER):
        body += f"mapa.shared::cluster.u32 %nfq, %nfb, {q}; st.shared::cluster.f32 [%nfq], $3; "
    return "{ .reg .b32 %nfb, %nft, %nfr, %nfq; " + body + "mov.u32 $0, 0; }"


@gluon.constexpr_function
def _asm_signal(XBYTES, COFF, CLUSTER, EMPTY):
    # one lane per warp (elect.sync, after the warp's lanes are done): arrive (release, cluster
    # scope) on full[$1] (or empty[$1]) of every rank
    body = _region(XBYTES, COFF)
    body += f"mad.lo.u32 %nfb, $1, 8, %nfb; add.u32 %nfb, %nfb, {16 if EMPTY else 0}; "
    body += "elect.sync %nft|%nfe, 0xffffffff; "
    for q in range(CLUSTER):
        body += (f"@%nfe mapa.shared::cluster.u32 %nfq, %nfb, {q}; "
                 "@%nfe mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%nfq]; ")
    return ("{ .reg .b32 %nfb, %nft, %nfq; .reg .pred %nfe; bar.warp.sync 0xffffffff; "
            + body + "mov.u32 $0, 0; }")


@gluon.constexpr_function
def _asm_wait(XBYTES, COFF, EMPTY):
    # wait (acquire, cluster scope) for phase parity $2 of full[$1] (or empty[$1]) of this CTA
    body = _region(XBYTES, COFF)
    body += f"mad.lo.u32 %nfb, $1, 8, %nfb; add.u32 %nfb, %nfb, {16 if EMPTY else 0}; "
    return ("{ .reg .b32 %nfb, %nft; .reg .pred %nfd; " + body
            + "NF_WAIT_LOOP: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %nfd, [%nfb], $2; "
            "@!%nfd bra NF_WAIT_LOOP; mov.u32 $0, 0; }")


@gluon.constexpr_function
def _asm_gather(XBYTES, COFF, CLUSTER, BM, STAT):
    # sum over ranks 0..C-1, in rank order, of slot $1's partials of row $2 (this CTA's memory)
    body = _region(XBYTES, COFF)
    body += (f"mad.lo.u32 %nft, $1, {CLUSTER * 2 * BM * 4}, {32 + STAT * BM * 4}; add.u32 %nfb, %nfb, %nft; "
             "mad.lo.u32 %nfb, $2, 4, %nfb; mov.f32 $0, 0f00000000; ")
    for q in range(CLUSTER):
        body += f"ld.shared.f32 %nfv, [%nfb+{q * 2 * BM * 4}]; add.f32 $0, $0, %nfv; "
    return "{ .reg .b32 %nfb, %nft; .reg .f32 %nfv; " + body + "}"


@gluon.constexpr_function
def _asm_store_stamped():
    # one 64-bit word at address $1: the f32 $2 in the low half, the stamp $3 in the high half
    # (relaxed, GPU scope: the word is single-copy atomic, so a reader that sees the stamp sees
    # the value written with it; no fence, no flag)
    return ("{ .reg .b64 %nfw; mov.b64 %nfw, {$2, $3}; st.relaxed.gpu.global.b64 [$1], %nfw; "
            "mov.u32 $0, 0; }")


@gluon.constexpr_function
def _asm_load_word():
    # the 64-bit word at address $1 (relaxed, GPU scope)
    return "ld.relaxed.gpu.global.b64 $0, [$1];"


@gluon.constexpr_function
def _asm_stamped_value():
    # the f32 of word $2 if its stamp is >= $3, else of the word at $1 once it is (reloaded)
    return ("{ .reg .pred %nfp; .reg .b32 %nflo, %nfhi; .reg .b64 %nfw; mov.b64 %nfw, $2; "
            "NF_CHECK: mov.b64 {%nflo, %nfhi}, %nfw; setp.lt.u32 %nfp, %nfhi, $3; "
            "@!%nfp bra NF_DONE; ld.relaxed.gpu.global.b64 %nfw, [$1]; bra NF_CHECK; "
            "NF_DONE: mov.b32 $0, %nflo; }")


@gluon.jit
def _publish(ptrs, v, epoch):
    # (addresses as integers: inline asm operands are type-checked against each other)
    gl.inline_asm_elementwise(_asm_store_stamped(), "=r,l,f,r", [ptrs.to(gl.int64), v, epoch],
                              gl.int32, is_pure=False, pack=1)


@gluon.jit
def _peek(ptrs):
    return gl.inline_asm_elementwise(_asm_load_word(), "=l,l", [ptrs.to(gl.int64)], gl.int64,
                                     is_pure=False, pack=1)


@gluon.jit
def _stamped(ptrs, w, epoch):
    return gl.inline_asm_elementwise(_asm_stamped_value(), "=f,l,l,r", [ptrs.to(gl.int64), w, epoch],
                                     gl.float32, is_pure=False, pack=1)


@gluon.jit
def _cluster_barrier():
    gl.inline_asm_elementwise("barrier.cluster.arrive.release; barrier.cluster.wait.acquire; mov.u32 $0, 0;",
                              "=r", [], gl.int32, is_pure=False, pack=1)


@gluon.jit
def _xch_wait(xj, EMPTY: gl.constexpr, XBYTES: gl.constexpr, COFF: gl.constexpr):
    slot = xj % 2
    parity = (xj // 2) & 1
    if EMPTY:
        parity = parity ^ 1
    gl.inline_asm_elementwise(_asm_wait(XBYTES, COFF, EMPTY), "=r,r,r", [slot, parity], gl.int32,
                              is_pure=False, pack=1)


@gluon.jit
def cluster_sum(v0, v1, xj, NSTAT: gl.constexpr, CLUSTER: gl.constexpr, CID: gl.constexpr,
                WARPS: gl.constexpr, NCONS: gl.constexpr):
    """All-reduce (sum) of the row vectors v0 (and v1 when NSTAT == 2) over the CTAs of the
    cluster; `xj` counts this consumer's row blocks (it picks the slot and the phase). Every CTA
    returns bitwise the same totals (ranks added in order 0..C-1)."""
    BM: gl.constexpr = v0.shape[0]
    XBYTES: gl.constexpr = exchange_bytes(BM, CLUSTER, NCONS)
    COFF: gl.constexpr = _consumer_offset(BM, CLUSTER, CID)
    slot = xj % 2
    rows = gl.arange(0, BM, layout=v0.type.layout)
    # the slot is free once every rank has read what this CTA wrote there two row blocks ago
    _xch_wait(xj, True, XBYTES, COFF)
    gl.inline_asm_elementwise(_asm_push(XBYTES, COFF, CLUSTER, BM, 0), "=r,r,r,f", [slot, rows, v0],
                              gl.int32, is_pure=False, pack=1)
    if NSTAT == 2:
        gl.inline_asm_elementwise(_asm_push(XBYTES, COFF, CLUSTER, BM, 1), "=r,r,r,f", [slot, rows, v1],
                                  gl.int32, is_pure=False, pack=1)
    gl.inline_asm_elementwise(_asm_signal(XBYTES, COFF, CLUSTER, False), "=r,r", [slot], gl.int32,
                              is_pure=False, pack=1)
    _xch_wait(xj, False, XBYTES, COFF)
    t0 = gl.inline_asm_elementwise(_asm_gather(XBYTES, COFF, CLUSTER, BM, 0), "=f,r,r", [slot, rows],
                                   gl.float32, is_pure=False, pack=1)
    t1 = t0
    if NSTAT == 2:
        t1 = gl.inline_asm_elementwise(_asm_gather(XBYTES, COFF, CLUSTER, BM, 1), "=f,r,r", [slot, rows],
                                       gl.float32, is_pure=False, pack=1)
    # this CTA has read its slot: every rank may write into it again (scalar operands only: the
    # asm must run once per thread, not once per element; side-effecting asm keeps its order)
    gl.inline_asm_elementwise(_asm_signal(XBYTES, COFF, CLUSTER, True), "=r,r", [slot], gl.int32,
                              is_pure=False, pack=1)
    return t0, t1


# ---------------------------------------------------------------------------------------------
# Hooks used when the matched kernel has nothing of that kind
# ---------------------------------------------------------------------------------------------

@gluon.jit
def noop_pre(af, pid_m, eargs):
    return gl.sum(af, axis=1) * 0.0


@gluon.jit
def noop_stats(af, c0, st0, st1, kk, pid_m, eargs):
    return st0, st1


@gluon.jit
def noop_afn(af, c0, kk, pid_m, eargs):
    return af


@gluon.jit
def identity_epilogue(acc, st0, st1, c0, pid_m, pid_n, xj, eargs, CLUSTER: gl.constexpr,
                      CID: gl.constexpr, NCONS: gl.constexpr, WARPS: gl.constexpr):
    return acc


# ---------------------------------------------------------------------------------------------
# Partitions
# ---------------------------------------------------------------------------------------------

@gluon.jit
def _load_tile(a_desc, b_desc, a_bufs, b_bufs, ready, empty, pid_m, pid_n, pos, k_tiles,
               BM: gl.constexpr, BN: gl.constexpr, B_KN: gl.constexpr):
    """The TMA loads of one tile's k-steps into the ring from position `pos`; returns the next."""
    BK: gl.constexpr = a_desc.block_type.shape[1]
    STAGES: gl.constexpr = a_bufs.shape[0]
    for kk in range(k_tiles):
        s = pos % STAGES
        mbarrier.wait(empty.index(s), ((pos // STAGES) & 1) ^ 1)
        bar = ready.index(s)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [pid_m * BM, kk * BK], bar, a_bufs.index(s))
        if B_KN:
            tma.async_copy_global_to_shared(b_desc, [kk * BK, pid_n * BN], bar, b_bufs.index(s))
        else:
            tma.async_copy_global_to_shared(b_desc, [pid_n * BN, kk * BK], bar, b_bufs.index(s))
        pos += 1
    return pos


@gluon.jit
def _store_tile(out, c_desc, c_smem, pid_m, pid_n):
    """The epilogue's output tile -> shared -> TMA store (after the previous tile's store left)."""
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    tma.store_wait(pendings=0)
    c_smem.store(out.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [pid_m * BM, pid_n * BN], c_smem)


@gluon.jit
def _loader(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
            BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr, CLUSTER: gl.constexpr,
            B_KN: gl.constexpr, ROWS_MAX_K: gl.constexpr):
    if CLUSTER > 1:
        _cluster_barrier()
    BK: gl.constexpr = a_desc.block_type.shape[1]
    k_tiles = gl.cdiv(K, BK)
    nw = _num_work(M, N, K, BM, BN, CLUSTER, ROWS_MAX_K)
    pos = 0
    for j in range(nw):
        pid_m, pid_n = _work_tile(j, M, N, K, BM, BN, GROUP_M, CLUSTER, ROWS_MAX_K)
        pos = _load_tile(a_desc, b_desc, a_bufs, b_bufs, ready, empty, pid_m, pid_n, pos, k_tiles,
                         BM, BN, B_KN)
    if CLUSTER > 1:
        _cluster_barrier()


@gluon.jit
def _stats_rows(a_ptr, stride_am, dst0, dst1, row0, M, K, k_tiles, pid_m, eargs,
                STATS: gl.constexpr, RB: gl.constexpr, BK: gl.constexpr, SWARPS: gl.constexpr):
    """Statistics of rows row0 .. row0 + RB - 1 over all k-tiles, stored into dst0/dst1."""
    blk: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [SWARPS, 1], [1, 0])
    rows_l: gl.constexpr = gl.SliceLayout(1, blk)
    cols_l: gl.constexpr = gl.SliceLayout(0, blk)
    r = row0 + gl.arange(0, RB, layout=rows_l)
    cols = gl.arange(0, BK, layout=cols_l)
    rmask = gl.expand_dims(r < M, 1)
    rbase = a_ptr + gl.expand_dims(r.to(gl.int64) * stride_am, 1)
    st0 = gl.zeros([RB], gl.float32, rows_l)
    st1 = gl.zeros([RB], gl.float32, rows_l)
    c0 = gl.zeros([RB], gl.float32, rows_l)
    for kk in range(k_tiles):
        c = kk * BK + cols
        x = gl.load(rbase + gl.expand_dims(c, 0), mask=rmask & gl.expand_dims(c < K, 0), other=0.0)
        st0, st1 = STATS(x.to(gl.float32), c0, st0, st1, kk, pid_m, eargs)
    dst0.store(st0)
    dst1.store(st1)


@gluon.jit
def _stats_part(a_ptr, stride_am, stat_buf, stat_ready, stat_free, M, N, K, eargs,
                STATS: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                GROUP_M: gl.constexpr, ROWS_MAX_K: gl.constexpr, SWARPS: gl.constexpr):
    """The statistics partition (`STATS_PART`): the row statistics of every tile of this CTA,
    read from global memory (L2: the loader's TMA fetches the same lines) with ordinary loads,
    not from the shared ring, so that they cost the wgmma warps neither instructions nor shared
    memory bandwidth. Per tile j: wait `stat_free[j % 2]`, accumulate STATS over the k-tiles
    (in row slices of RB rows, to bound the registers), write the [BM] vectors into
    `stat_buf[j % 2]`, arrive `stat_ready[j % 2]` (the consumer reads them in its epilogue, then
    frees the slot). Rows >= M and columns >= K read 0, as the TMA tiles do."""
    RB: gl.constexpr = 8 * SWARPS * 4  # rows per slice: 4 rows per warp, 8 rows per thread
    k_tiles = gl.cdiv(K, BK)
    nw = _num_work(M, N, K, BM, BN, 1, ROWS_MAX_K)
    for j in range(nw):
        pid_m, pid_n = _work_tile(j, M, N, K, BM, BN, GROUP_M, 1, ROWS_MAX_K)
        slot = j % 2
        mbarrier.wait(stat_free.index(slot), ((j // 2) & 1) ^ 1)
        for h in gl.static_range(BM // RB):
            _stats_rows(a_ptr, stride_am, stat_buf.index(2 * slot).slice(h * RB, RB),
                        stat_buf.index(2 * slot + 1).slice(h * RB, RB), pid_m * BM + h * RB, M, K,
                        k_tiles, pid_m, eargs, STATS, RB, BK, SWARPS)
        mbarrier.arrive(stat_ready.index(slot))


@gluon.jit
def _mainloop(a_bufs, b_bufs, ready, empty, pos0, k_tiles, pid_m, eargs, acc, st0, st1, c0,
              PRE: gl.constexpr, STATS: gl.constexpr, AFN: gl.constexpr,
              HAS_PRE: gl.constexpr, HAS_STATS: gl.constexpr, HAS_AFN: gl.constexpr,
              B_KN: gl.constexpr, a_layout: gl.constexpr, dtype: gl.constexpr):
    """One tile's k-loop over ring positions pos0 .. pos0 + k_tiles - 1: acc += A @ B, the
    statistics (HAS_STATS) and the shift (HAS_PRE) accumulated from the A tiles; returns
    (acc, st0, st1, c0) with the last wgmma finished and every slot released."""
    STAGES: gl.constexpr = a_bufs.shape[0]
    for kk in range(k_tiles):
        pos = pos0 + kk
        s = pos % STAGES
        mbarrier.wait(ready.index(s), (pos // STAGES) & 1)
        if B_KN:
            b_view = b_bufs.index(s)
        else:
            b_view = b_bufs.index(s).permute((1, 0))
        if HAS_AFN:
            # the A operand is computed in registers (g, beta applied): register-operand wgmma,
            # waited for at once. The registers of an in-flight wgmma cannot be protected
            # across loop iterations (the loop reuses the same PTX registers for the next
            # ldmatrix; measured non-repeatable on the H200 with one wgmma left in flight).
            a = a_bufs.index(s).load(a_layout)
            af = a.to(gl.float32)
            if HAS_PRE:
                if kk == 0:
                    c0 = PRE(af, pid_m, eargs)
            if HAS_STATS:
                # before the issue, not while the wgmma runs: nothing may be computed between
                # a register-operand wgmma and its wait (the compiler may reuse the operand's
                # registers for temporaries; measured wrong results on the H200, fp16, when
                # the statistics sat there)
                st0, st1 = STATS(af, c0, st0, st1, kk, pid_m, eargs)
            a_op = AFN(af, c0, kk, pid_m, eargs).to(dtype)
            acc = warpgroup_mma(a_op, b_view, acc, is_async=True)
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(empty.index(s))
        else:
            acc = warpgroup_mma(a_bufs.index(s), b_view, acc, is_async=True)
            if HAS_STATS or HAS_PRE:
                # statistics from a register copy of the same shared tile, read while the
                # wgmma runs (the slot is released only after both)
                af = a_bufs.index(s).load(a_layout).to(gl.float32)
                if HAS_PRE:
                    if kk == 0:
                        c0 = PRE(af, pid_m, eargs)
                if HAS_STATS:
                    st0, st1 = STATS(af, c0, st0, st1, kk, pid_m, eargs)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            # the previous k-step's wgmma has finished reading its slot
            mbarrier.arrive(empty.index((pos + STAGES - 1) % STAGES), pred=kk > 0)
    acc = warpgroup_mma_wait(0, deps=(acc,))
    if not HAS_AFN:
        mbarrier.arrive(empty.index((pos0 + k_tiles + STAGES - 1) % STAGES), pred=k_tiles > 0)
    return acc, st0, st1, c0


@gluon.jit
def _consumer(a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, order, c_smem, M, N, K, eargs,
              stat_buf, stat_ready, stat_free,
              PRE: gl.constexpr, STATS: gl.constexpr, AFN: gl.constexpr, EPI: gl.constexpr,
              HAS_PRE: gl.constexpr, HAS_STATS: gl.constexpr, HAS_AFN: gl.constexpr,
              GROUP_M: gl.constexpr, CLUSTER: gl.constexpr,
              B_KN: gl.constexpr, CID: gl.constexpr, NCONS: gl.constexpr,
              WARPS: gl.constexpr, WARPS_N: gl.constexpr, ROWS_MAX_K: gl.constexpr,
              STATS_PART: gl.constexpr):
    if CLUSTER > 1:
        _cluster_barrier()
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    mma_layout: gl.constexpr = mma_layout_for(BM, BN, WARPS, WARPS_N)
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma_layout, k_width=2)
    row_a: gl.constexpr = gl.SliceLayout(1, a_layout)
    row_c: gl.constexpr = gl.SliceLayout(1, mma_layout)
    # the statistics of a row block are reused by this consumer's next tile when it is in the
    # same row block (row-major runs, `_work_tile`): they depend on the A rows only, and the
    # k-loop without them is the plain GEMM's. Not with an A transform (its k-loop needs the
    # A registers anyway).
    REUSE: gl.constexpr = (HAS_STATS or HAS_PRE) and not HAS_AFN and not STATS_PART
    # with a statistics partition the k-loop is the plain GEMM's
    IN_STATS: gl.constexpr = HAS_STATS and not STATS_PART
    k_tiles = gl.cdiv(K, BK)
    nw = _num_work(M, N, K, BM, BN, CLUSTER, ROWS_MAX_K)
    xj = 0
    prev_m = -1
    st0 = gl.zeros([BM], gl.float32, row_a)
    st1 = gl.zeros([BM], gl.float32, row_a)
    c0 = gl.zeros([BM], gl.float32, row_a)
    for j in range(CID, nw, NCONS):
        pid_m, pid_n = _work_tile(j, M, N, K, BM, BN, GROUP_M, CLUSTER, ROWS_MAX_K)
        pos0 = j * k_tiles
        acc = gl.zeros([BM, BN], gl.float32, mma_layout)
        if NCONS == 2:
            # the two consumers' main loops take strict turns (tile order = ring order), so a
            # consumer never waits on a ring slot more than one fill ahead of the loader
            if CID == 0:
                mbarrier.wait(order.index(0), (xj - 1) & 1, pred=xj > 0)
            else:
                mbarrier.wait(order.index(1), xj & 1)
        if REUSE:
            if pid_m != prev_m:
                acc, st0, st1, c0 = _mainloop(
                    a_bufs, b_bufs, ready, empty, pos0, k_tiles, pid_m, eargs, acc,
                    gl.zeros([BM], gl.float32, row_a), gl.zeros([BM], gl.float32, row_a),
                    gl.zeros([BM], gl.float32, row_a), PRE, STATS, AFN, HAS_PRE, HAS_STATS,
                    HAS_AFN, B_KN, a_layout, dtype)
            else:
                acc, st0, st1, c0 = _mainloop(
                    a_bufs, b_bufs, ready, empty, pos0, k_tiles, pid_m, eargs, acc, st0, st1, c0,
                    PRE, STATS, AFN, False, False, HAS_AFN, B_KN, a_layout, dtype)
        else:
            acc, st0, st1, c0 = _mainloop(
                a_bufs, b_bufs, ready, empty, pos0, k_tiles, pid_m, eargs, acc,
                gl.zeros([BM], gl.float32, row_a), gl.zeros([BM], gl.float32, row_a),
                gl.zeros([BM], gl.float32, row_a), PRE, STATS, AFN, HAS_PRE, IN_STATS,
                HAS_AFN, B_KN, a_layout, dtype)
        prev_m = pid_m
        if NCONS == 2:
            mbarrier.arrive(order.index(1 - CID))
        if STATS_PART:
            slot = xj % 2
            mbarrier.wait(stat_ready.index(slot), (xj // 2) & 1)
            s0 = stat_buf.index(2 * slot).load(row_c)
            s1 = stat_buf.index(2 * slot + 1).load(row_c)
            mbarrier.arrive(stat_free.index(slot))
        else:
            s0 = gl.convert_layout(st0, row_c)
            s1 = gl.convert_layout(st1, row_c)
        out = EPI(acc, s0, s1, gl.convert_layout(c0, row_c), pid_m, pid_n, xj, eargs, CLUSTER,
                  CID, NCONS, WARPS)
        _store_tile(out, c_desc, c_smem, pid_m, pid_n)
        xj += 1
    tma.store_wait(pendings=0)
    if CLUSTER > 1:
        # no CTA leaves while a peer may still signal its `empty` barriers
        XBYTES: gl.constexpr = exchange_bytes(BM, CLUSTER, NCONS)
        COFF: gl.constexpr = _consumer_offset(BM, CLUSTER, CID)
        _xch_wait(xj, True, XBYTES, COFF)
        _xch_wait(xj + 1, True, XBYTES, COFF)
        _cluster_barrier()


@gluon.jit
def _consumer1(a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, order, c_smem, M, N, K, eargs,
               stat_buf, stat_ready, stat_free, PRE: gl.constexpr, STATS: gl.constexpr, AFN: gl.constexpr, EPI: gl.constexpr,
               HAS_PRE: gl.constexpr, HAS_STATS: gl.constexpr, HAS_AFN: gl.constexpr,
               GROUP_M: gl.constexpr, CLUSTER: gl.constexpr,
               B_KN: gl.constexpr, WARPS: gl.constexpr, WARPS_N: gl.constexpr,
               ROWS_MAX_K: gl.constexpr):
    # the second consumer of the ping-pong schedule (a worker partition)
    _consumer(a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, order, c_smem, M, N, K, eargs,
              stat_buf, stat_ready, stat_free,
              PRE, STATS, AFN, EPI, HAS_PRE, HAS_STATS, HAS_AFN, GROUP_M, CLUSTER, B_KN,
              1, 2, WARPS, WARPS_N, ROWS_MAX_K, False)


@gluon.jit
def _loader_shared(a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K,
                   BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr, B_KN: gl.constexpr):
    """The loader in the shared-statistics order (`_share_tile`; empty positions load nothing)."""
    BK: gl.constexpr = a_desc.block_type.shape[1]
    k_tiles = gl.cdiv(K, BK)
    pos = 0
    for j in range(_share_work(M, N, BM, BN, GROUP_M)):
        pid_m, pid_n, valid = _share_tile(j, M, N, BM, BN, GROUP_M)
        if valid:
            pos = _load_tile(a_desc, b_desc, a_bufs, b_bufs, ready, empty, pid_m, pid_n, pos,
                             k_tiles, BM, BN, B_KN)


@gluon.jit
def _consumer_shared(a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, c_smem, M, N, K, eargs,
                     sbuf, epoch,
                     PRE: gl.constexpr, STATS: gl.constexpr, EPI: gl.constexpr,
                     HAS_PRE: gl.constexpr, HAS_STATS: gl.constexpr, GROUP_M: gl.constexpr,
                     B_KN: gl.constexpr, WARPS: gl.constexpr, WARPS_N: gl.constexpr):
    """The consumer with statistics shared per row block (`SHARE`): a row block's first tile runs
    the k-loop with the statistics (as every tile does otherwise) and, before its epilogue, stores
    them and the shift as stamped words sbuf[0 | Mp | 2 Mp + row] = (value, epoch) (64-bit,
    single-copy atomic: no fence or flag); the row block's other tiles read the words before their
    plain k-loop (the latency hides under it) and, before the epilogue, take each value whose
    stamp is the launch's epoch, reloading those that are older (the first tile, a wave ahead,
    has normally written them long before). The statistics are the same numbers (same tile, same
    order) as when every tile computes them: the output is bitwise the same."""
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    mma_layout: gl.constexpr = mma_layout_for(BM, BN, WARPS, WARPS_N)
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma_layout, k_width=2)
    row_a: gl.constexpr = gl.SliceLayout(1, a_layout)
    row_c: gl.constexpr = gl.SliceLayout(1, mma_layout)
    k_tiles = gl.cdiv(K, BK)
    publish = gl.cdiv(N, BN) > 1
    Mp = gl.cdiv(M, BM) * BM
    zero = gl.zeros([BM], gl.float32, row_a)  # where the statistics start
    done = 0
    for j in range(_share_work(M, N, BM, BN, GROUP_M)):
        pid_m, pid_n, valid = _share_tile(j, M, N, BM, BN, GROUP_M)
        if valid:
            acc = gl.zeros([BM, BN], gl.float32, mma_layout)
            p0 = sbuf + pid_m * BM + gl.arange(0, BM, layout=row_c)
            if pid_n == 0:
                acc, st0, st1, c0 = _mainloop(
                    a_bufs, b_bufs, ready, empty, done * k_tiles, k_tiles, pid_m, eargs, acc,
                    zero, zero, zero, PRE, STATS, noop_afn, HAS_PRE, HAS_STATS, False, B_KN,
                    a_layout, dtype)
                s0 = gl.convert_layout(st0, row_c)
                s1 = gl.convert_layout(st1, row_c)
                cc = gl.convert_layout(c0, row_c)
                if publish:
                    _publish(p0, s0, epoch)
                    _publish(p0 + Mp, s1, epoch)
                    _publish(p0 + 2 * Mp, cc, epoch)
            else:
                w0 = _peek(p0)
                w1 = _peek(p0 + Mp)
                w2 = _peek(p0 + 2 * Mp)
                acc, st0, st1, c0 = _mainloop(
                    a_bufs, b_bufs, ready, empty, done * k_tiles, k_tiles, pid_m, eargs, acc,
                    zero, zero, zero, PRE, STATS, noop_afn, False, False, False, B_KN,
                    a_layout, dtype)
                s0 = _stamped(p0, w0, epoch)
                s1 = _stamped(p0 + Mp, w1, epoch)
                cc = _stamped(p0 + 2 * Mp, w2, epoch)
            out = EPI(acc, s0, s1, cc, pid_m, pid_n, done, eargs, 1, 0, 1, WARPS)
            _store_tile(out, c_desc, c_smem, pid_m, pid_n)
            done += 1
    tma.store_wait(pendings=0)


# ---------------------------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------------------------

@gluon.jit
def ws_gemm_kernel(a_desc, b_desc, c_desc, M, N, K, a_ptr, stride_am, eargs, sbuf, epoch,
                   PRE: gl.constexpr, STATS: gl.constexpr, AFN: gl.constexpr, EPI: gl.constexpr,
                   HAS_PRE: gl.constexpr, HAS_STATS: gl.constexpr, HAS_AFN: gl.constexpr,
                   STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                   CLUSTER: gl.constexpr, NCONS: gl.constexpr, B_KN: gl.constexpr,
                   LOADER_WARPS: gl.constexpr, LOADER_REGS: gl.constexpr,
                   CONS_REGS: gl.constexpr, WARPS_N: gl.constexpr, ROWS_MAX_K: gl.constexpr,
                   STATS_PART: gl.constexpr, STATS_WARPS: gl.constexpr, STATS_REGS: gl.constexpr,
                   SHARE: gl.constexpr, num_warps: gl.constexpr):
    """C[M, N] = EPI(A[M, K] @ B (+ statistics of A)) with A, B, C as TMA descriptors; B is [N, K]
    (`B_KN=False`, a Linear weight) or [K, N]. `eargs` is the tuple of runtime values the hooks
    read. `num_warps` is one consumer's warps (4: one warpgroup, 8: two on M). `a_ptr` and
    `stride_am` (A's base and row stride) are read only by a statistics partition
    (`STATS_PART`: one consumer, no cluster, no A transform). `SHARE`: the statistics computed
    once per row block and passed to its other tiles through `sbuf` (global memory, words
    stamped with `epoch`; see `_consumer_shared`; one consumer, no cluster, no A transform)."""
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem0 = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    order = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(order.index(i), count=1)
    stat_buf = gl.allocate_shared_memory(gl.float32, [4, BM],
                                         gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    stat_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    stat_free = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(stat_ready.index(i), count=1)
        mbarrier.init(stat_free.index(i), count=1)
    if CLUSTER > 1:
        for c in gl.static_range(NCONS):
            gl.inline_asm_elementwise(
                _asm_init(exchange_bytes(BM, CLUSTER, NCONS), _consumer_offset(BM, CLUSTER, c), CLUSTER,
                          num_warps), "=r", [], gl.int32, is_pure=False, pack=1)
    if NCONS == 2:
        c_smem1 = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        gl.warp_specialize([
            (_consumer, (a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, order, c_smem0, M, N, K, eargs,
                         stat_buf, stat_ready, stat_free,
                         PRE, STATS, AFN, EPI, HAS_PRE, HAS_STATS, HAS_AFN, GROUP_M, CLUSTER,
                         B_KN, 0, 2, num_warps, WARPS_N, ROWS_MAX_K, False)),
            (_consumer1, (a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, order, c_smem1, M, N, K, eargs,
                          stat_buf, stat_ready, stat_free, PRE, STATS, AFN, EPI, HAS_PRE, HAS_STATS, HAS_AFN, GROUP_M, CLUSTER,
                          B_KN, num_warps, WARPS_N, ROWS_MAX_K)),
            (_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, BM, BN, GROUP_M, CLUSTER,
                       B_KN, ROWS_MAX_K)),
        ], [num_warps, LOADER_WARPS], [CONS_REGS, LOADER_REGS])
    elif SHARE:
        gl.warp_specialize([
            (_consumer_shared, (a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, c_smem0, M, N, K,
                                eargs, sbuf, epoch, PRE, STATS, EPI, HAS_PRE, HAS_STATS,
                                GROUP_M, B_KN, num_warps, WARPS_N)),
            (_loader_shared, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, BM, BN, GROUP_M,
                              B_KN)),
        ], [LOADER_WARPS], [LOADER_REGS])
    elif STATS_PART:
        BK: gl.constexpr = a_desc.block_type.shape[1]
        gl.warp_specialize([
            (_consumer, (a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, order, c_smem0, M, N, K, eargs,
                         stat_buf, stat_ready, stat_free,
                         PRE, STATS, AFN, EPI, HAS_PRE, HAS_STATS, HAS_AFN, GROUP_M, CLUSTER,
                         B_KN, 0, 1, num_warps, WARPS_N, ROWS_MAX_K, True)),
            (_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, BM, BN, GROUP_M, CLUSTER,
                       B_KN, ROWS_MAX_K)),
            (_stats_part, (a_ptr, stride_am, stat_buf, stat_ready, stat_free, M, N, K, eargs, STATS,
                           BM, BN, BK, GROUP_M, ROWS_MAX_K, STATS_WARPS)),
        ], [LOADER_WARPS, STATS_WARPS], [LOADER_REGS, STATS_REGS])
    else:
        gl.warp_specialize([
            (_consumer, (a_desc, b_desc, c_desc, a_bufs, b_bufs, ready, empty, order, c_smem0, M, N, K, eargs,
                         stat_buf, stat_ready, stat_free,
                         PRE, STATS, AFN, EPI, HAS_PRE, HAS_STATS, HAS_AFN, GROUP_M, CLUSTER,
                         B_KN, 0, 1, num_warps, WARPS_N, ROWS_MAX_K, False)),
            (_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, M, N, K, BM, BN, GROUP_M, CLUSTER,
                       B_KN, ROWS_MAX_K)),
        ], [LOADER_WARPS], [LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Helpers the generated hooks call
# ---------------------------------------------------------------------------------------------

@gluon.constexpr_function
def vec_layout(n, num_warps):
    """A coalesced 1-D layout: consecutive elements on consecutive threads."""
    return gl.BlockedLayout([max(1, n // (32 * num_warps))], [32], [num_warps], [0])


@gluon.constexpr_function
def _differs(la, lb):
    return not isinstance(lb, gl.AutoLayout) and la != lb


@gluon.jit
def fit(a, b):
    """`a` in `b`'s layout (when `b` has a concrete one that differs), for 1-D elementwise ops."""
    if _differs(a.type.layout, b.type.layout):
        a = gl.convert_layout(a, b.type.layout)
    return a


@gluon.jit
def colvec(ptr, pid_n, N, acc):
    """A per-column fp32 vector (N entries at `ptr`) for the tile's columns, in the accumulator's
    column layout: loaded coalesced, then converted."""
    BN: gl.constexpr = acc.shape[1]
    offs = pid_n * BN + gl.arange(0, BN, layout=vec_layout(BN, gl.num_warps()))
    v = gl.load(ptr + offs, mask=offs < N, other=0.0)
    return gl.convert_layout(v, gl.SliceLayout(0, acc.type.layout))
