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

Each mutant is (file, pattern, replacement): an exact text replacement in one file of a copy of
this checkout (the pattern must occur once: `--check` lists the mutants whose pattern moved, as
after a refactoring). Every mutant still compiles (Triton parses and verifies its IR; the
lowering's mutants compile for sm_90). M1-M4 are the four that survived the suite in issue 14's
measurement (the issue names them, not their code); L1-L8 are the eight lowering bugs of issue
24 (all eight survived the CPU suite before the TTGIR interpreter), L9-L14 more of the lowering's
synchronization and tile order, L15-L18 the post-norm lowering's.
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
    Mutant("L3", WS, "                if WITH_STATS:\n"
                     "                    st0, st1 = hooks.STATS(af, c0, st0, st1, kk, pid_m, eargs)\n"
                     "            acc = warpgroup_mma_wait(1, deps=(acc,))",
           "                if WITH_STATS:\n"
           "                    if kk < k_tiles - 1:\n"
           "                        st0, st1 = hooks.STATS(af, c0, st0, st1, kk, pid_m, eargs)\n"
           "            acc = warpgroup_mma_wait(1, deps=(acc,))",
           "template: the statistics leave out the last K tile (A from shared memory)", _L),
    Mutant("L4", WS, "        out = hooks.EPI(acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),\n"
                     "                        gl.convert_layout(c0, row_c), pid_m, pid_n, eargs)",
           "        out = hooks.EPI(acc, gl.convert_layout(st0, row_c), gl.convert_layout(st1, row_c),\n"
           "                        gl.convert_layout(c0, row_c), pid_m, pid_m, eargs)",
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
    Mutant("L10", WS, "mbarrier.arrive(ring.empty.index((pos + STAGES - 1) % STAGES), pred=kk > 0)",
           "mbarrier.arrive(ring.empty.index(s), pred=kk > 0)",
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
    Mutant("L16", WS, "\n            bar = ring.ready.index(s)\n"
                      "            mbarrier.expect(bar, ring.a_desc.block_type.nbytes + ring.b_desc.block_type.nbytes)",
           "\n            bar = ring.ready.index(s)\n"
           "            mbarrier.expect(bar, ring.a_desc.block_type.nbytes)",
           "post-norm template: the ring barrier expects A's bytes only", _L),
    Mutant("L17", WS, "                _publish(mine + T * Mp, p1, epoch)",
           "                _publish(mine + Mp, p1, epoch)",
           "post-norm template: LayerNorm's second row sum published over the next tile's "
           "first (stamped words at the wrong offset)", _L),
    Mutant("L18", WS, "    return j * G + pid % G, pid // G",
           "    return j * G + pid // G, pid % G",
           "post-norm template: the whole-rows order's row block and N tile swapped", _L),
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
    ap.add_argument("--group", choices=("passes", "lowering"), help="only this group's mutants")
    ap.add_argument("--check", action="store_true",
                    help="only check that each chosen mutant's pattern occurs once")
    ap.add_argument("--tests", nargs="*", default=(),
                    help="test files to run instead of the whole CPU suite (test/python)")
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
    runs = {"full": ()}
    if args.without_interpreter:
        runs["without_interpreter"] = INTERPRETER_TESTS

    def suite(root: Path, first: bool = False) -> dict:
        return {k: _pytest(root, ignore, tests, first) for k, ignore in runs.items()}

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
            for k, r in suite(root, args.first_failure).items():
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
