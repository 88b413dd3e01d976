"""The inline PTX normfuse writes for data that crosses CTAs, in one place: the thread-block
cluster exchange of cluster-reduce (and cluster-reduce-chain), and the stamped 64-bit words
through which the lowered template shares row statistics between CTAs.

Cluster exchange (`write_asm` / `read_asm`, DSMEM; `write_global_asm` / `read_global_asm`,
Triton's per-CTA global scratch): each CTA writes its partial sums for its rows into its own
slots, the cluster crosses `BARRIER` (arrive.release + wait.acquire), and every CTA adds all C
ranks' partials in rank order, so every CTA holds bitwise the same totals. The DSMEM slots sit
past Triton's shared-memory allocation (`global_smem + %dynamic_smem_size - nbytes`; the launch
adds `nbytes` of dynamic shared memory); the global slots are one scratch slice of S bytes per
CTA, S known only after Triton's allocation (`SCRATCH_TOKEN` in the asm, replaced in make_llir).
Every string starts with `MARK`, which `normfuse.ir.effects` reads as normfuse-private memory.

Stamped words (`store_stamped`, `load_word`, `stamped_value`): a 64-bit store of (f32 value,
epoch) is single-copy atomic, so a reader that sees the stamp sees the value written with it; a
reader takes a value only when its stamp is the launch's epoch, reloading until it is.

`normfuse.testing.ptx` interprets these strings on the CPU.
"""
from __future__ import annotations

from .effects import NORMFUSE_ASM_MARK

__all__ = ["MARK", "write_asm", "read_asm", "reduce_store_asm", "read_local_asm",
           "write_global_asm", "read_global_asm", "SCRATCH_TOKEN", "BARRIER", "CTA_BARRIER", "ARRIVE",
           "WAIT", "store_stamped", "load_word", "stamped_value"]

MARK = NORMFUSE_ASM_MARK + "cluster-reduce */"  # normfuse-private memory (ir.effects)


def _base(nbytes: int) -> str:
    """PTX that leaves the address of this row's first exchange slot in %nfa."""
    return ("mov.u32 %nfa, global_smem; mov.u32 %nfq, %dynamic_smem_size; add.u32 %nfa, %nfa, %nfq; "
            f"sub.u32 %nfa, %nfa, {nbytes}; mad.lo.u32 %nfa, $ROW, 4, %nfa; ")


def write_asm(nstats: int, rows: int, nbytes: int, first: int = 0) -> tuple[str, str]:
    """st.shared of this CTA's partials: operands (row, partial_0, ...) -> dummy i32. `first`:
    the index of the first statistic's slot (a prologue exchange and the epilogue's share the
    slots: the prologue's come first)."""
    row = "$1"
    body = _base(nbytes).replace("$ROW", row)
    for s in range(nstats):
        body += f"st.shared.f32 [%nfa+{4 * rows * (first + s)}], ${2 + s}; "
    asm = f"{MARK} {{ .reg .b32 %nfa, %nfq; {body}mov.u32 $0, 0; }}"
    return asm, "=r,r" + ",f" * nstats


def _peer_sums(acc: list[str], rows: int, ctas: int, first: int) -> str:
    """PTX that sums all CTAs' partials of the statistics from slot `first` on, in rank order,
    into the registers `acc` (one per statistic; %nfa: this row's first slot)."""
    body = "".join(f"mov.f32 {a}, 0f00000000; " for a in acc)
    for r in range(ctas):
        body += f"mapa.shared::cluster.u32 %nfp, %nfa, {r}; "
        for s, a in enumerate(acc):
            body += f"ld.shared::cluster.f32 %nfv, [%nfp+{4 * rows * (first + s)}]; add.f32 {a}, {a}, %nfv; "
    return body


def read_asm(nstats: int, rows: int, nbytes: int, ctas: int, first: int = 0) -> tuple[str, str]:
    """Sum of all CTAs' partials in rank order: operand (row) -> totals."""
    row = f"${nstats}"
    body = _base(nbytes).replace("$ROW", row)
    body += _peer_sums([f"${s}" for s in range(nstats)], rows, ctas, first)
    asm = f"{MARK} {{ .reg .b32 %nfa, %nfq, %nfp; .reg .f32 %nfv; {body}}}"
    return asm, ",".join(["=f"] * nstats) + ",r"


def reduce_store_asm(nstats: int, rows: int, nbytes: int, ctas: int, first: int,
                     total_first: int) -> tuple[str, str]:
    """`read_asm`'s sums stored into this CTA's own total slots (from `total_first` on) instead
    of returned: operand (row) -> dummy i32. With `read_local_asm` after a CTA barrier
    (`CTA_BARRIER`), the peers' partials are read once per row, however many layouts the totals'
    users want (an elementwise asm whose results are used is copied into each)."""
    row = "$1"
    body = _base(nbytes).replace("$ROW", row)
    acc = [f"%nft{s}" for s in range(nstats)]
    body += _peer_sums(acc, rows, ctas, first)
    for s in range(nstats):
        body += f"st.shared.f32 [%nfa+{4 * rows * (total_first + s)}], {acc[s]}; "
    asm = (f"{MARK} {{ .reg .b32 %nfa, %nfq, %nfp; .reg .f32 %nfv, {', '.join(acc)}; "
           f"{body}mov.u32 $0, 0; }}")
    return asm, "=r,r"


def read_local_asm(nstats: int, rows: int, nbytes: int, total_first: int) -> tuple[str, str]:
    """The totals `reduce_store_asm` stored, from this CTA's own slots: operand (row) -> totals."""
    row = f"${nstats}"
    body = _base(nbytes).replace("$ROW", row)
    for s in range(nstats):
        body += f"ld.shared.f32 ${s}, [%nfa+{4 * rows * (total_first + s)}]; "
    asm = f"{MARK} {{ .reg .b32 %nfa, %nfq; {body}}}"
    return asm, ",".join(["=f"] * nstats) + ",r"


# exchange=global: the slots live in Triton's per-CTA global scratch (one slice of S bytes per
# CTA, at base + ctaid * S). S is known only after Triton's allocation pass, so the asm carries
# this token, which normfuse's make_llir wrapper replaces by metadata["global_scratch_size"].
SCRATCH_TOKEN = "NFSCRATCHBYTES"


def write_global_asm(nstats: int, rows: int, first: int = 0) -> tuple[str, str]:
    """st.global of this CTA's partials into its own scratch slice: operands (row, slice address
    as i64, partial_0, ...) -> dummy i32."""
    body = "cvt.u64.u32 %nfo, $1; shl.b64 %nfo, %nfo, 2; add.u64 %nfa, $2, %nfo; "
    for s in range(nstats):
        body += f"st.global.f32 [%nfa+{4 * rows * (first + s)}], ${3 + s}; "
    asm = f"{MARK} {{ .reg .b64 %nfa, %nfo; {body}mov.u32 $0, 0; }}"
    return asm, "=r,r,l" + ",f" * nstats


def read_global_asm(nstats: int, rows: int, ctas: int, first: int = 0) -> tuple[str, str]:
    """Sum of all CTAs' partials in rank order, read from the peers' scratch slices (L2, `.cg`:
    the L1 of this SM is not coherent with the peers' writes): operands (row, own slice address
    as i64) -> totals. The cluster's rank-0 slice is this slice minus %cluster_ctarank * S."""
    row, ptr = f"${nstats}", f"${nstats + 1}"
    body = (f"cvt.u64.u32 %nfo, {row}; shl.b64 %nfo, %nfo, 2; add.u64 %nfa, {ptr}, %nfo; "
            f"mov.u32 %nfr, %cluster_ctarank; mul.wide.u32 %nfo, %nfr, {SCRATCH_TOKEN}; "
            "sub.u64 %nfa, %nfa, %nfo; ")
    body += "".join(f"mov.f32 ${s}, 0f00000000; " for s in range(nstats))
    for r in range(ctas):
        if r:
            body += f"add.u64 %nfa, %nfa, {SCRATCH_TOKEN}; "
        for s in range(nstats):
            body += f"ld.global.cg.f32 %nfv, [%nfa+{4 * rows * (first + s)}]; add.f32 ${s}, ${s}, %nfv; "
    asm = f"{MARK} {{ .reg .b64 %nfa, %nfo; .reg .b32 %nfr; .reg .f32 %nfv; {body}}}"
    return asm, ",".join(["=f"] * nstats) + ",r,l"


BARRIER = f"{MARK} barrier.cluster.arrive.release; barrier.cluster.wait.acquire; mov.u32 $0, 0;"
CTA_BARRIER = f"{MARK} bar.sync 0; mov.u32 $0, 0;"  # the CTA's threads (a scalar asm: once each)
ARRIVE = f"{MARK} barrier.cluster.arrive.release; mov.u32 $0, 0;"
WAIT = f"{MARK} barrier.cluster.wait.acquire; mov.u32 $0, 0;"


# ---------------------------------------------------------------------------------------------
# Stamped words in global memory (the lowered template's shared statistics)
# ---------------------------------------------------------------------------------------------

def store_stamped() -> str:
    """One 64-bit word at address $1: the f32 $2 in the low half, the stamp $3 in the high half
    (relaxed, GPU scope: the word is single-copy atomic, so a reader that sees the stamp sees the
    value written with it; no fence, no flag). Operands "=r,l,f,r"."""
    return ("{ .reg .b64 %nfw; mov.b64 %nfw, {$2, $3}; st.relaxed.gpu.global.b64 [$1], %nfw; "
            "mov.u32 $0, 0; }")


def load_word() -> str:
    """The 64-bit word at address $1 (relaxed, GPU scope). Operands "=l,l"."""
    return "ld.relaxed.gpu.global.b64 $0, [$1];"


def stamped_value() -> str:
    """The f32 of word $2 if its stamp is >= $3, else of the word at $1 once it is (reloaded).
    Operands "=f,l,l,r"."""
    return ("{ .reg .pred %nfp; .reg .b32 %nflo, %nfhi; .reg .b64 %nfw; mov.b64 %nfw, $2; "
            "NF_CHECK: mov.b64 {%nflo, %nfhi}, %nfw; setp.lt.u32 %nfp, %nfhi, $3; "
            "@!%nfp bra NF_DONE; ld.relaxed.gpu.global.b64 %nfw, [$1]; bra NF_CHECK; "
            "NF_DONE: mov.b32 $0, %nflo; }")
