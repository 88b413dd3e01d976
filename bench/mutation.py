"""Mutation testing of the CPU suite: plant one small semantic bug in a pass or in the lowering,
run the tests, see whether any fails. Not part of CI (minutes per mutant and suite on 2 cores).

    python3 bench/mutation.py                      # every mutant, the whole CPU suite
    python3 bench/mutation.py --only M2 M9         # some of them
    python3 bench/mutation.py --group lowering     # the lowering's mutants (L1-L8: issue 24's)
    python3 bench/mutation.py --check              # only check that every pattern occurs once
    python3 bench/mutation.py --group lowering --tests test/python/test_lowered_numerics.py
                                                   # a part of the suite (what a part catches,
                                                   # the whole suite catches)
    python3 bench/mutation.py --without-interpreter  # also run the suite minus the interpreter's
                                                     # tests, for comparison
    python3 bench/mutation.py --out bench/results/mutation/lowering.json
    PYTEST_ADDOPTS="-n 2" python3 bench/mutation.py --group fna --own-tests
                                                   # FlashNormAttention's code (F1-F17), each
                                                   # mutant against the tests of its code

Each mutant is (file, pattern, replacement): an exact text replacement in one file of a copy of
this checkout (the pattern must occur once: `--check` lists the mutants whose pattern moved, as
after a refactoring). Every mutant still compiles (Triton parses and verifies its IR; the
lowering's mutants compile for sm_90). M1-M4 are the four that survived the suite in issue 14's
measurement (the issue names them, not their code); L1-L8 are the eight lowering bugs of issue
24 (all eight survived the CPU suite before the TTGIR interpreter), L9-L14 more of the lowering's
synchronization and tile order, L15-L18 the post-norm lowering's (L16 is stale: the post-norm
template now loads through the GEMM's code, which L12 mutates). F1-F17 (group fna, 2026-12-05)
the code written for FlashNormAttention since: cluster-reduce's merge and gather=once,
cluster-reduce-chain, reuse-loads, epilogue-norm, residual-acc, hoist-loads, prefetch-loads, the
forward and backward kernels and the ops' row-block table and launch order; each names the
tests of its code (`--own-tests`). pytest-xdist: PYTEST_ADDOPTS="-n 2" (the runs pass the
environment on).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the passes (re-planted after the IR facade refactor, 2026-12-01: lazy-prenorm is a package,
# the cluster PTX lives in the IR layer)
LPF = "python/normfuse/passes/lazy_prenorm/fusion.py"      # the fused loop's rewrite
LPR = "python/normfuse/passes/lazy_prenorm/row_block.py"   # statistics once per row block
CR = "python/normfuse/passes/cluster_reduce.py"
CPTX = "python/normfuse/ir/cluster_ptx.py"                 # the DSMEM exchange's PTX
# the code since (2026-12-05: group fna): the other passes, FlashNormAttention's kernels and host
CRC = "python/normfuse/passes/cluster_reduce_chain.py"
RL = "python/normfuse/passes/reuse_loads.py"
EN = "python/normfuse/passes/epilogue_norm.py"
RA = "python/normfuse/passes/residual_acc.py"
HL = "python/normfuse/passes/hoist_loads.py"
PL = "python/normfuse/passes/prefetch_loads.py"
ATT = "python/normfuse/kernels/attention.py"
ATB = "python/normfuse/kernels/attention_bwd.py"
COM = "python/normfuse/ops/common.py"
# the lowering (hopper-ws): where each piece lives on this branch
WS = "python/normfuse/lowering/ws_gemm.py"        # the Gluon template
CG = "python/normfuse/lowering/codegen.py"        # the hooks' translation
LL = "python/normfuse/lowering/launch.py"         # the host side: descriptors, derived arguments
INTERPRETER_TESTS = ("test/python/test_interpreter.py",
                     "test/python/passes/test_lazy_prenorm_numerics.py",
                     "test/python/passes/test_cluster_reduce.py",
                     "test/python/test_lowered_numerics.py")


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    old: str
    new: str
    what: str
    group: str = "passes"
    # the test files (or node ids) that exercise the mutated code: what `--own-tests` runs it
    # against (empty: --tests, or the whole suite)
    tests: tuple = ()


MUTANTS = [
    Mutant("M1", LPF, 'if s.kind == "weight":', 'if s.kind == "weight" and False:',
           "lazy-prenorm: LayerNorm's correction uses colsum(W) instead of colsum(g*W) when g "
           "stays in the loop"),
    Mutant("M2", CPTX, '''    for r in range(ctas):
        body += f"mapa.shared::cluster.u32''', '''    for r in range(1, ctas):
        body += f"mapa.shared::cluster.u32''',
           "cluster-reduce: every CTA leaves rank 0's partials out of the row totals"),
    Mutant("M3", CPTX, 'f"ld.shared::cluster.f32 %nfv, [%nfp+{4 * rows * (first + s)}]; ',
           'f"ld.shared::cluster.f32 %nfv, [%nfp+{4 * rows * (first + 0)}]; ',
           "cluster-reduce: LayerNorm's sum of squares read from the sum's slot"),
    Mutant("M4", CR, 'c = b.constant(ctas, "i32", hint="c_ctas")',
           'c = b.constant(ctas - 1, "i32", hint="c_ctas")',
           "cluster-reduce: the rank / row-block split (and the program count) use C - 1 instead "
           "of the cluster size"),
    Mutant("M5", LPF, '''        loop.set_init(p.acc_index, before_loop.zeros(acc_out.type, hint="acc0"))
''', "",
           "lazy-prenorm: a non-zero accumulator init is not zeroed before the loop (it is added "
           "after scaling as well: counted twice, once scaled)"),
    Mutant("M6", LPF, "out.subf(mean, shift)", "out.subf(shift, mean)",
           "lazy-prenorm: LayerNorm's correction uses (shift - mean) instead of (mean - shift)"),
    Mutant("M7", LPF, '''    val = out.mulf(val, rb)
    if bsum is not None:
        val = out.addf(val, out.row_broadcast(bsum, [bm, bn], axis=0))
''', '''    if bsum is not None:
        val = out.addf(val, out.row_broadcast(bsum, [bm, bn], axis=0))
    val = out.mulf(val, rb)
''', "lazy-prenorm: LayerNorm's beta @ W term is added before the row scale instead of after"),
    Mutant("M8", LPF, "fin = after.addf(st.loop.inits[i], after.reduce_sum(r, 1))",
           "fin = after.addf(*[after.reduce_sum(r, 1)] * 2)",
           "lazy-prenorm{stats-accumulate=tile}: the reduced sum of squares is counted twice "
           "(added to itself instead of to the statistic's initial value)"),
    Mutant("M9", CR, 'parity = b.andi(it, b.constant(1, "i32", hint="c1"), hint="rb_parity")',
           'parity = b.andi(it, b.constant(0, "i32", hint="c1"), hint="rb_parity")',
           "cluster-reduce, persistent: the exchange slot set's parity is always 0 (a race: a CTA "
           "overwrites its slot while a peer may still read the previous row block's)"),
    Mutant("M10", CR, "f2.set_bounds(first2, f2.bounds[1], stride2)",
           "f2.set_bounds(f2.bounds[0], f2.bounds[1], stride2)",
           "cluster-reduce, deferred: the normalizing loop starts at tile 0 instead of the CTA's "
           "rank (CTAs normalize rank 0's tiles, their own stay unnormalized)"),
    Mutant("M11", CR, "WAIT if outer is None else BARRIER",
           'f"{MARK} mov.u32 $0, 0;" if outer is None else BARRIER',
           "cluster-reduce: no barrier wait before the exit (a CTA may leave while a peer still "
           "reads its shared memory)"),
    Mutant("M12", LPR, "nloop.set_yields(nloop.yields + list(ifop.results[:n]), module, loc=loop.op)",
           "nloop.set_yields(nloop.yields + list(args), module, loc=loop.op)",
           "lazy-prenorm, once per row block: the later N tiles get the carried row vectors' "
           "initial zeros instead of the first tile's statistics"),
]

_L = "lowering"
MUTANTS += [
    # issue 24's eight
    Mutant("L1", CG, 'return self._emit(f"({a} {sym} {b})",',
           'return self._emit(f"({b} - {a})" if op == "sub" else f"({a} {sym} {b})",',
           "hooks: a flipped subtraction (b - a) in the translated subtractions", _L),
    Mutant("L2", LL, "        if scale is not None:\n            K = w.shape[k_axis]",
           "        if scale is not None and False:\n            K = w.shape[k_axis]",
           "host: LayerNorm's derived column sum taken of W instead of diag(g) W", _L),
    # (re-planted 2026-12-05: the statistics now accumulate in q0 / q1, lane partials)
    Mutant("L3", WS, "                if WITH_STATS:\n"
                     "                    q0, q1 = hooks.STATS(af, c0, q0, q1, kk, pid_m, eargs)\n"
                     "            acc = warpgroup_mma_wait(1, deps=(acc,))",
           "                if WITH_STATS:\n"
           "                    if kk < k_tiles - 1:\n"
           "                        q0, q1 = hooks.STATS(af, c0, q0, q1, kk, pid_m, eargs)\n"
           "            acc = warpgroup_mma_wait(1, deps=(acc,))",
           "template: the statistics leave out the last K tile (A from shared memory)", _L),
    # (re-planted 2026-12-05: the persistent consumer calls EPI through _epi)
    Mutant("L4", WS, "            out = _epi(hooks, acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),\n"
                     "                       gl.convert_layout(c0, row_c), pid_m, pid_n, eargs, ev)",
           "            out = _epi(hooks, acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),\n"
           "                       gl.convert_layout(c0, row_c), pid_m, pid_m, eargs, ev)",
           "template: the epilogue gets the M program id for the N one (column vectors of the "
           "wrong tile)", _L),
    Mutant("L5", WS, '"=f,l,l,r", [ptrs.to(gl.int64), w, epoch],',
           '"=f,l,l,r", [ptrs.to(gl.int64), w, epoch - 1],',
           "template, shared statistics: the epoch off by one (a word of the previous launch is "
           "taken)", _L),
    Mutant("L6", LL, "(stride, 1), d.block))",
           "(self.operands[0][2][0] if self.operands else stride, 1), d.block))",
           "host: the TMA descriptors of B and the output built with A's row stride", _L),
    Mutant("L7", WS, "    n = gl.cdiv(tiles - gl.program_id(0), gl.num_programs(0))",
           "    n = (tiles - gl.program_id(0)) // gl.num_programs(0)",
           "template: the persistent work count rounded down (a CTA skips its last tile)", _L),
    Mutant("L8", WS, "def noop_stats(af, c0, st0, st1, kk, pid_m, eargs):",
           "def noop_stats(af, c0, st1, st0, kk, pid_m, eargs):",
           "hooks: two bindings swapped (the statistics hook's st0 and st1, as its declaration "
           "gives the generated hooks their signature)", _L),
    # more of the template's synchronization and tile order
    Mutant("L9", WS, "        mbarrier.wait(ring.ready.index(s), (pos // STAGES) & 1)",
           "        mbarrier.wait(ring.ready.index(s), ((pos // STAGES) & 1) ^ 1)",
           "template: the consumer waits for the wrong phase of a ring slot (reads it before its "
           "TMA load landed)", _L),
    # (re-planted 2026-12-05: the release is the not-RELEASE_EARLY one of two)
    Mutant("L10", WS, "            if not EARLY:\n"
                      "                mbarrier.arrive(ring.empty.index((pos + STAGES - 1) % STAGES), pred=kk > 0)",
           "            if not EARLY:\n"
           "                mbarrier.arrive(ring.empty.index(s), pred=kk > 0)",
           "template: the consumer releases the slot its wgmma is still reading (not the "
           "previous one)", _L),
    Mutant("L11", WS, "    fence_async_shared()\n    tma.async_copy_shared_to_global(",
           "    tma.async_copy_shared_to_global(",
           "template: no proxy fence between the output tile's shared store and its TMA store", _L),
    Mutant("L12", WS, "\n        bar = ring.ready.index(s)\n"
                      "        mbarrier.expect(bar, ring.a_desc.block_type.nbytes + ring.b_desc.block_type.nbytes)",
           "\n        bar = ring.ready.index(s)\n"
           "        mbarrier.expect(bar, ring.a_desc.block_type.nbytes)",
           "template: the ring barrier expects A's bytes only (a phase may complete before B "
           "lands)", _L),
    Mutant("L13", WS, "            acc = warpgroup_mma_wait(1, deps=(acc,))",
           "            acc = warpgroup_mma_wait(2, deps=(acc,))",
           "template: two wgmma groups left in flight while the previous slot is released", _L),
    Mutant("L14", WS, "    return first_m + (t % group) % size_m, (t % group) // size_m",
           "    return first_m + (t % group) // size_m, (t % group) % size_m",
           "template: the grouped tile order's M and N swapped (tiles computed twice or never)", _L),
    # the post-norm lowering (hopper-ws{post-norm=true}, the ops' default post-norm form)
    Mutant("L15", WS, "            y = hooks.EPI(acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),\n"
                      "                          gl.convert_layout(c0, row_c), pid_m, pid_n, eargs)",
           "            y = hooks.EPI(acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),\n"
           "                          gl.convert_layout(c0, row_c), pid_m, pid_m, eargs)",
           "post-norm template: the epilogue gets the M program id for the N one (bias and norm "
           "weights of the wrong columns)", _L),
    # (stale since the post-norm template loads through the GEMM's _load_steps: L12's pattern is
    # now the same code; kept for the record, `--check` lists it)
    Mutant("L16", WS, "\n            bar = ring.ready.index(s)\n"
                      "            mbarrier.expect(bar, ring.a_desc.block_type.nbytes + ring.b_desc.block_type.nbytes)",
           "\n            bar = ring.ready.index(s)\n"
           "            mbarrier.expect(bar, ring.a_desc.block_type.nbytes)",
           "post-norm template: the ring barrier expects A's bytes only", _L),
    # (re-planted 2026-12-05: the publishing moved into _publish_rows)
    Mutant("L17", WS, "        _publish(mine + T * Mp, p1, epoch)",
           "        _publish(mine + Mp, p1, epoch)",
           "post-norm template: LayerNorm's second row sum published over the next tile's "
           "first (stamped words at the wrong offset)", _L),
    Mutant("L18", WS, "    return j * G + pid % G, pid // G",
           "    return j * G + pid // G, pid % G",
           "post-norm template: the whole-rows order's row block and N tile swapped", _L),
]


# FlashNormAttention and the passes written for it since M1-M12 (2026-12-05): cluster-reduce's
# merge and gather=once, cluster-reduce-chain, reuse-loads, epilogue-norm, residual-acc,
# hoist-loads, prefetch-loads, the kernels and the ops' host code. Each with the test files that
# exercise its code (`--own-tests`).
_F = "fna"
_FNA = "test/python/test_flash_norm_attention.py"
_FNAB = "test/python/test_flash_norm_attention_bwd.py"
_LIT = "test/python/test_lit.py"
_PT = "test/python/passes/"
_CR_T = (_FNA, _LIT, _PT + "test_cluster_reduce.py")
_CRC_T = (_FNAB, _LIT, _PT + "test_cluster_reduce_chain.py")
MUTANTS += [
    Mutant("F1", CR, "                partials = list(partials) + list(fm.yields)\n",
           "                partials = list(partials)\n",
           "cluster-reduce{merge}, one tile per CTA: the mid loop's partials (the next row "
           "block's LayerNorm sums) are left out of the merged exchange (each CTA keeps the sums "
           "of its own head only)", _F, _CR_T),
    Mutant("F2", CR, 'off = x.constant(parity * nbytes // 4, "i32", hint="slot_words")',
           'off = x.constant(0 * nbytes // 4, "i32", hint="slot_words")',
           "cluster-reduce{merge}: the pre exchange (row block -1's) takes slot set 0, the walk's "
           "first trip's, instead of set 1 (a CTA may write trip 0's partials while a peer still "
           "reads the pre exchange's)", _F, _CR_T),
    Mutant("F3", CR, "nslots = max(npro + nstats + nmid, npre)",
           "nslots = max(npro + nstats, npre)",
           "cluster-reduce{merge}: the slot count leaves out the mid loops' statistics (the "
           "region is too small; gather=once's totals overwrite the mid partials a peer may "
           "still read)", _F, _CR_T),
    Mutant("F4", CR, "rasm, rcons = read_local_asm(n, rows, slot_bytes, nslots + first)",
           "rasm, rcons = read_local_asm(n, rows, slot_bytes, first)",
           "cluster-reduce{gather=once}: the read after the CTA barrier takes this CTA's own "
           "partials instead of the totals", _F, _CR_T),
    Mutant("F5", CR, '                x.inline_asm(CTA_BARRIER, "=r,r", [rank], ["i32"], '
                     'hint=hint + "cta_sync")\n', "",
           "cluster-reduce{gather=once}: no CTA barrier (bar.sync) between the totals' store "
           "into the CTA's slots and their read (a warp may read a total another warp has not "
           "stored yet)", _F, _CR_T),
    Mutant("F6", CRC, "            if e % nsets:\n", "            if e % nsets and False:\n",
           "cluster-reduce-chain: every exchange uses slot set 0 (exchange e + 1 writes the "
           "slots a peer may still read for exchange e)", _F, _CRC_T),
    Mutant("F7", CRC, "writers.get(id(st.root)) != 1", "writers.get(id(st.root), 0) < 1",
           "cluster-reduce-chain: a reload forwarded from a store whose memory other stores of "
           "the kernel also write (the reload may read a later store's tile, not the forwarded "
           "one)", _F, _CRC_T),
    Mutant("F8", RL, "for x, y in ((la.ptr, lb.ptr), (la.mask, lb.mask), (la.other, lb.other)):",
           "for x, y in ((la.ptr, lb.ptr), (la.other, lb.other)):",
           "reuse-loads: two loads of the same addresses merged whatever their masks (the later "
           "load's masked-off lanes take the earlier load's values, or the reverse)", _F,
           (_PT + "test_reuse_loads.py", _LIT, _FNA)),
    Mutant("F9", RL, "loop.set_yields(list(loop.yields) + [ahead], module)",
           "loop.set_yields(list(loop.yields) + [later], module)",
           "reuse-loads{across-trips}: the loop carries this trip's value (the twin being "
           "replaced) instead of the next trip's, so every trip takes the first trip's value",
           _F, (_PT + "test_reuse_loads.py", _LIT, _FNA)),
    Mutant("F10", EN, "return base is not None and root is not None and base is not root",
           "return base is not None and root is not None",
           "epilogue-norm: a store to the output's own memory between the unnormalized store "
           "and the final one counts as a side output (the tile is forwarded past it)", _F,
           (_PT + "test_epilogue_norm.py", _LIT, _PT + "test_cluster_reduce.py", _FNA)),
    Mutant("F11", RA, "    if not is_zero_constant(init):\n", "    if False:\n",
           "residual-acc: a loop accumulator that starts at a non-zero value is started at the "
           "residual instead (its own start is lost)", _F,
           (_PT + "test_residual_acc.py", _LIT, _FNA)),
    Mutant("F12", HL, "        if ld.root is None or id(ld.root) in written:\n",
           "        if ld.root is None:\n",
           "hoist-loads: an invariant load of memory the kernel writes is hoisted out of its "
           "loop (later trips see the value from before the loop's stores)", _F,
           (_PT + "test_hoist_loads.py", _LIT, _FNA)),
    Mutant("F13", PL, "        if ld.root is None or id(ld.root) in written:\n",
           "        if ld.root is None:\n",
           "prefetch-loads: an accumulator-only tile load of memory the kernel writes is given "
           "tt.latency (Triton's pipeliner prefetches it a trip early, before the trip's store)",
           _F, (_PT + "test_prefetch_loads.py", _LIT, _FNA)),
    Mutant("F14", ATT, "nshift, ns1, ns2 = _ln_sums(X, row0 + BLOCK_M, end, H, D, BLOCK_M, LN_MMA)",
           "nshift, ns1, ns2 = _ln_sums(X, row0, end, H, D, BLOCK_M, LN_MMA)",
           "FlashNormAttention forward, STATS_AHEAD walk: the sums carried to the next row "
           "block are this block's (the next block's LayerNorm statistics are wrong)", _F,
           (_FNA,)),
    Mutant("F15", COM, "torch.argsort(lengths, descending=True, stable=True)",
           "torch.argsort(lengths, descending=False, stable=True)",
           "longest_first: the kvq programs' launch order sorts the sequences shortest first",
           _F, (_FNAB, _FNA)),
    Mutant("F16", COM, "    end = off[b + 1]\n", "    end = off[b + 1] - 1\n",
           "row_block_table: each block's end of sequence one row early (a sequence's last row "
           "is never computed)", _F,
           (_FNAB, _FNA)),
    Mutant("F17", ATB, "b = tl.load(ORDER + pid // HKV)", "b = tl.load(ORDER + (pid + 1) // HKV)",
           "FlashNormAttention backward, kvq kernel: the launch-order entry of the next "
           "program (ORDER off by one: a batch and kv head done twice, another never)", _F,
           (_FNAB, _FNA)),
]


def _copy_checkout(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split("\n")
    for f in files:
        if not f or f.startswith("bench/results/"):
            continue
        src = REPO / f
        if src.is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)


def _apply(root: Path, m: Mutant) -> None:
    path = root / m.file
    text = path.read_text()
    n = text.count(m.old)
    if n != 1:
        raise SystemExit(f"{m.id}: the snippet occurs {n} times in {m.file}")
    path.write_text(text.replace(m.old, m.new))


def _pytest(root: Path, ignore: tuple = (), tests: tuple = (), first: bool = False) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider",
           *(("-x",) if first else ()), *(tests or ("test/python",))]
    for f in ignore:
        cmd += ["--ignore", f]
    env = dict(os.environ, PYTHONPATH=str(root / "python"))
    t = time.time()
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env,
                       stdin=subprocess.DEVNULL)
    failed = sorted(set(re.findall(r"^FAILED (\S+)", r.stdout, re.M)))
    tail = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
    return {"rc": r.returncode, "failed": failed, "summary": tail, "seconds": round(time.time() - t, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="mutant ids (default: all)")
    ap.add_argument("--group", choices=("passes", "lowering", "fna"),
                    help="only this group's mutants")
    ap.add_argument("--check", action="store_true",
                    help="only check that each chosen mutant's pattern occurs once")
    ap.add_argument("--tests", nargs="*", default=(),
                    help="test files to run instead of the whole CPU suite (test/python)")
    ap.add_argument("--own-tests", action="store_true",
                    help="run each mutant against its own test files (Mutant.tests: those that "
                         "exercise its code; --tests where it lists none); the baseline runs "
                         "their union once")
    ap.add_argument("--first-failure", action="store_true",
                    help="stop a mutant's run at its first failing test (pytest -x): a quicker "
                         "score, fewer tests listed per mutant")
    ap.add_argument("--without-interpreter", action="store_true",
                    help="also run the suite without the interpreter's test files")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if (not args.only or m.id in args.only)
              and (args.group is None or m.group == args.group)]
    if args.check:
        stale = 0
        for m in chosen:
            path = REPO / m.file
            n = path.read_text().count(m.old) if path.exists() else 0
            stale += n != 1
            print(f"{m.id:4} {'ok' if n == 1 else f'STALE ({n} occurrences)':24} {m.file}")
        print(f"{len(chosen) - stale}/{len(chosen)} patterns apply")
        return 1 if stale else 0
    tests = tuple(args.tests)
    own = {m.id: (m.tests or tests) if args.own_tests else tests for m in chosen}
    if args.own_tests:  # the baseline: every mutant's tests, once
        tests = tuple(dict.fromkeys(t for m in chosen for t in own[m.id]))
    runs = {"full": ()}
    if args.without_interpreter:
        runs["without_interpreter"] = INTERPRETER_TESTS

    def suite(root: Path, first: bool = False, only: tuple = None) -> dict:
        return {k: _pytest(root, ignore, tests if only is None else only, first)
                for k, ignore in runs.items()}

    # the unmutated checkout first: a test that fails there (the machine, not the mutant) does
    # not count as catching anything. (The copies' directory names must not contain "normfuse":
    # test_compile_without_passes looks for that word in PTX, which embeds source paths.)
    with tempfile.TemporaryDirectory(prefix="mut-baseline-") as d:
        _copy_checkout(Path(d))
        baseline = suite(Path(d))
    for k, r in baseline.items():
        print(f"baseline ({k}): {r['summary']}", flush=True)

    def caught_by(run: dict, base: dict) -> list:
        new = [f for f in run["failed"] if f not in base["failed"]]
        if not new and run["rc"] not in (0, 1) and base["rc"] == 0:  # collection error, crash
            new = [f"pytest exit status {run['rc']}: {run['summary']}"]
        return new

    results = []
    for m in chosen:
        with tempfile.TemporaryDirectory(prefix=f"mut-{m.id}-") as d:
            root = Path(d)
            _copy_checkout(root)
            _apply(root, m)
            row = {"id": m.id, "file": m.file, "what": m.what}
            if args.own_tests:
                row["tests"] = list(own[m.id]) or ["test/python"]
            for k, r in suite(root, args.first_failure, own[m.id]).items():
                r["caught_by"] = caught_by(r, baseline[k])
                row[k] = r
            row["caught"] = bool(row["full"]["caught_by"])
            if args.without_interpreter:
                row["caught_without_interpreter"] = bool(row["without_interpreter"]["caught_by"])
        results.append(row)
        extra = ""
        if args.without_interpreter:
            extra = f"; without the interpreter tests: {'caught' if row['caught_without_interpreter'] else 'SURVIVED'}"
        print(f"{m.id}: {'caught' if row['caught'] else 'SURVIVED'} ({len(row['full']['caught_by'])} "
              f"tests fail, {row['full']['seconds']} s){extra} - {m.what}", flush=True)
        for k in runs:
            for f in row[k]["caught_by"][:4]:
                print(f"    [{k}] {f}", flush=True)
    caught = sum(r["caught"] for r in results)
    print(f"mutation score: {caught}/{len(results)} caught")
    if args.without_interpreter:
        print(f"without the interpreter tests: {sum(r['caught_without_interpreter'] for r in results)}"
              f"/{len(results)} caught")
    if args.out:
        Path(args.out).write_text(json.dumps({"tests": list(tests) or ["test/python"],
                                              "baseline": baseline, "mutants": results,
                                              "caught": caught, "total": len(results)},
                                             indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
