"""Seeded mutation fuzzing of normfuse-opt: every lit input, mutated, through the driver alone,
and each mutation that loads through every pass and the default pipelines too, run as users run
the tool (a subprocess). The contract under test: whatever the input, normfuse-opt exits 0 with
IR on stdout, or 1 with `normfuse-opt: error: ...` on stderr and nothing on stdout; never a
signal, a Python traceback, another exit status or a hang. (A mutation that does not load fails
before any pass runs, the same way under every pipeline: `through_pipelines`.)

Used by test_fuzz.py (a small fixed count in CI, more with --fuzz-count / NORMFUSE_FUZZ_COUNT) and
as a script that prints the figures the README reports:

    python test/python/fuzz_ir.py --count 50 --seed 0 [--jobs 2] [--save DIR]
"""
from __future__ import annotations

import argparse
import difflib
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIT_INPUTS = sorted((REPO / "test" / "lit").glob("*.mlir"))
TOOL = REPO / "tools" / "normfuse-opt"
TIMEOUT_S = 120

# Every registered pass alone, the driver alone (parse, verify, print), and the default pipelines
# of normfuse.compile (lazy-prenorm, also listed alone) and of the post-norm ops.
PIPELINES = {
    "none": [],
    "lazy-prenorm": ["--lazy-prenorm"],
    "epilogue-norm": ["--epilogue-norm"],
    "cluster-reduce": ["--cluster-reduce"],
    "cluster-reduce-chain": ["--cluster-reduce-chain"],
    "hopper-ws": ["--hopper-ws"],
    "residual-acc": ["--residual-acc"],
    "hoist-loads": ["--hoist-loads"],
    "reuse-loads": ["--reuse-loads"],
    "prefetch-loads": ["--prefetch-loads"],
    "post-norm default": ["--pass-pipeline=cluster-reduce,epilogue-norm"],
    "default": ["--pass-pipeline=default"],
}


def check_pipelines_cover_the_registry() -> None:
    sys.path.insert(0, str(REPO / "python"))
    from normfuse.compiler import DEFAULT_PASSES
    from normfuse.passes import pass_names

    singles = {k for k, v in PIPELINES.items() if len(v) == 1 and v[0] == f"--{k}"}
    missing = set(pass_names()) - singles
    assert not missing, f"fuzz_ir.PIPELINES lacks passes {sorted(missing)}"
    assert DEFAULT_PASSES == "default", "update fuzz_ir.PIPELINES: compile's default"


# ---------------------------------------------------------------------------------------------
# Mutations: each takes (rng, lines of IR) and returns (description, new lines) or None
# ---------------------------------------------------------------------------------------------

_VALUE = re.compile(r"%[A-Za-z0-9_.$\-]+")
_NUMBER = re.compile(r"(?<![\w%#.])-?\d+(?![\w.])")
_TYPE_SWAPS = [("f32", "f16"), ("bf16", "f32"), ("i32", "i64"), ("i1", "i32"), ("f16", "bf16")]


def _ir_lines(lines: list[str]) -> list[int]:
    """Indices of lines that hold IR (not blank, not a comment)."""
    return [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("//")]


def delete_line(rng, lines):
    i = rng.choice(_ir_lines(lines))
    return f"line {i + 1} deleted", lines[:i] + lines[i + 1:]


def duplicate_line(rng, lines):
    i = rng.choice(_ir_lines(lines))
    return f"line {i + 1} duplicated", lines[:i + 1] + [lines[i]] + lines[i + 1:]


def swap_lines(rng, lines):
    ir = _ir_lines(lines)
    i = rng.choice(ir)
    j = rng.choice([k for k in ir if abs(k - i) <= 8 and k != i] or ir)
    out = list(lines)
    out[i], out[j] = out[j], out[i]
    return f"lines {i + 1} and {j + 1} swapped", out


def swap_tokens(rng, lines):
    i = rng.choice(_ir_lines(lines))
    toks = lines[i].split(" ")
    idx = [k for k, t in enumerate(toks) if t]
    if len(idx) < 2:
        return None
    a, b = rng.sample(idx, 2)
    toks[a], toks[b] = toks[b], toks[a]
    return f"line {i + 1}: tokens {a} and {b} swapped", lines[:i] + [" ".join(toks)] + lines[i + 1:]


def change_number(rng, lines):
    cands = [(i, m) for i in _ir_lines(lines) for m in _NUMBER.finditer(lines[i])]
    if not cands:
        return None
    i, m = rng.choice(cands)
    old = int(m.group(0))
    new = rng.choice([0, 1, -1, 2, 3, 4, 7, old + 1, old - 1, old * 2, 1 << 20, 2**31, -2**31])
    if new == old:
        new = old + 1
    line = lines[i][:m.start()] + str(new) + lines[i][m.end():]
    return f"line {i + 1}: number {old} -> {new}", lines[:i] + [line] + lines[i + 1:]


def truncate(rng, lines):
    text = "".join(lines)
    cut = rng.randrange(1, max(2, len(text)))
    return f"truncated after {cut} of {len(text)} characters", text[:cut].splitlines(keepends=True)


def rename_value(rng, lines):
    cands = [(i, m) for i in _ir_lines(lines) for m in _VALUE.finditer(lines[i])]
    if len(cands) < 2:
        return None
    i, m = rng.choice(cands)
    names = sorted({c[1].group(0) for c in cands if c[1].group(0) != m.group(0)})
    new = rng.choice(names + ["%undefined_value"])
    line = lines[i][:m.start()] + new + lines[i][m.end():]
    return f"line {i + 1}: {m.group(0)} -> {new}", lines[:i] + [line] + lines[i + 1:]


def swap_type(rng, lines):
    pairs = [(i, a, b) for i in _ir_lines(lines) for a, b in _TYPE_SWAPS + [(b, a) for a, b in _TYPE_SWAPS]
             if re.search(rf"\b{a}\b", lines[i])]
    if not pairs:
        return None
    i, a, b = rng.choice(pairs)
    hits = list(re.finditer(rf"\b{a}\b", lines[i]))
    m = rng.choice(hits)
    line = lines[i][:m.start()] + b + lines[i][m.end():]
    return f"line {i + 1}: type {a} -> {b}", lines[:i] + [line] + lines[i + 1:]


MUTATIONS = [delete_line, duplicate_line, swap_lines, swap_tokens, change_number, truncate,
             rename_value, swap_type]


@dataclass
class Case:
    input: Path
    pipeline: str
    index: int
    seed: int
    mutation: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.input.name}|{self.pipeline}|seed={self.seed}|#{self.index}"

    def command(self, path: str) -> list[str]:
        return [sys.executable, str(TOOL), *PIPELINES[self.pipeline], path]


def mutate(text: str, rng: random.Random, steps: int = 1) -> tuple[str, str]:
    """Apply `steps` random mutations; (description, mutated text)."""
    lines = text.splitlines(keepends=True)
    done = []
    for _ in range(100 * steps):
        if len(done) == steps:
            break
        mutation = rng.choice(MUTATIONS)
        out = mutation(rng, lines) if (_ir_lines(lines) or mutation is truncate) else None
        if out is None:
            continue
        desc, lines = out
        done.append(desc)
    return "; ".join(done), "".join(lines)


def make_cases(count: int, seed: int, inputs=None) -> list[Case]:
    """`count` mutations of every input, each for the driver alone (pipeline "none": load, that
    is parse and verify, then print); mutation k of an input depends only on (seed, input name,
    k), so a failing case is reproduced by its id alone (its pipeline is part of the id)."""
    cases = []
    for path in inputs or LIT_INPUTS:
        text = path.read_text()
        for k in range(count):
            rng = random.Random(f"{seed}:{path.name}:{k}")
            desc, mutated = mutate(text, rng, steps=rng.choice([1, 1, 1, 2, 3]))
            cases.append(Case(path, "none", k, seed, desc, mutated))
    return cases


def through_pipelines(first: list["Result"], pipelines=None) -> list[Case]:
    """The second stage: every mutation the driver alone loaded (IR, exit 0) again through each
    other pipeline. normfuse-opt loads the input (parse, verify, the typed view) before any pass
    runs, so a mutation that fails to load fails the same way under every pipeline: running it
    through the passes would repeat the first stage's answer."""
    names = [n for n in (pipelines or PIPELINES) if n != "none"]
    return [Case(r.case.input, name, r.case.index, r.case.seed, r.case.mutation, r.case.text)
            for r in first if r.outcome == "success" for name in names]


def run_fuzz(count: int, seed: int, jobs: int | None = None, pipelines=None) -> list["Result"]:
    """Both stages: `count` mutations of every input through the driver alone, then those that
    load through every other pipeline."""
    first = run_cases(make_cases(count, seed), jobs)
    return first + run_cases(through_pipelines(first, pipelines), jobs)


# ---------------------------------------------------------------------------------------------
# Running and judging
# ---------------------------------------------------------------------------------------------

OUTCOMES = ("success", "clean error", "Triton crash caught", "internal error", "crash")


@dataclass
class Result:
    case: Case
    outcome: str
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def failed(self) -> bool:
        return self.outcome in ("crash", "internal error")


def classify(returncode: int | None, stdout: str, stderr: str) -> str:
    if returncode is None:
        return "crash"  # timed out
    if "Traceback (most recent call last)" in stderr:
        return "crash"
    if returncode == 0:
        if stdout.lstrip().startswith(("module", "#")) and "normfuse-opt: error" not in stderr:
            return "success"
        return "crash"
    if returncode == 1 and stdout == "" and stderr.startswith("normfuse-opt: error: "):
        if "Triton crashed (" in stderr:
            return "Triton crash caught"
        if "(internal error:" in stderr or ": internal error in normfuse (" in stderr:
            return "internal error"  # a bug in normfuse, reported cleanly
        return "clean error"
    return "crash"  # a signal (negative status), or another exit status


def run_case(case: Case, workdir: str) -> Result:
    path = os.path.join(workdir, f"{case.input.stem}-{abs(hash(case.id)) % 10**8}.mlir")
    with open(path, "w") as f:
        f.write(case.text)
    try:
        r = subprocess.run(case.command(path), capture_output=True, text=True, timeout=TIMEOUT_S,
                           stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONFAULTHANDLER": ""})
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, "", f"(no answer within {TIMEOUT_S} s)\n{e.stderr or ''}"
    finally:
        os.unlink(path)
    return Result(case, classify(rc, out, err), rc, out, err)


def run_cases(cases: list[Case], jobs: int | None = None) -> list[Result]:
    jobs = jobs or max(1, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="normfuse-fuzz-") as d, ThreadPoolExecutor(jobs) as ex:
        return list(ex.map(lambda c: run_case(c, d), cases))


def figures(results: list[Result]) -> dict[str, int]:
    counts = Counter(r.outcome for r in results)
    return {"inputs tried": len(results), **{k: counts.get(k, 0) for k in OUTCOMES}}


def describe_failure(r: Result) -> str:
    """Everything needed to reproduce a failure, the mutated input included."""
    c = r.case
    diff = "".join(difflib.unified_diff(c.input.read_text().splitlines(keepends=True),
                                        c.text.splitlines(keepends=True),
                                        fromfile=str(c.input.relative_to(REPO)),
                                        tofile="mutated", n=1))
    status = "timeout" if r.returncode is None else f"exit status {r.returncode}"
    return (f"case {c.id}: {r.outcome} ({status})\n"
            f"mutation: {c.mutation}\n"
            f"command: {' '.join(c.command('MUTATED.mlir'))}\n"
            f"--- stderr (last 3000 characters) ---\n{r.stderr[-3000:]}\n"
            f"--- diff against the lit input ---\n{diff}\n"
            f"--- mutated input ---\n{c.text}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="mutation-fuzz normfuse-opt over the lit inputs")
    p.add_argument("--count", type=int, default=20, help="mutations per lit input")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--save", metavar="DIR", help="write each failing case's report to DIR")
    args = p.parse_args(argv)
    check_pipelines_cover_the_registry()
    results = run_fuzz(args.count, args.seed, args.jobs)
    loaded = sum(r.case.pipeline == "none" and r.outcome == "success" for r in results)
    print(f"{len(LIT_INPUTS)} lit inputs x {args.count} mutations, seed {args.seed}: "
          f"{loaded} loaded, each through {len(PIPELINES) - 1} more pipelines")
    for k, v in figures(results).items():
        print(f"  {k:22s} {v}")
    by = Counter((r.case.pipeline, r.outcome) for r in results)
    for name in PIPELINES:
        if any(by[(name, o)] for o in OUTCOMES):
            print(f"  {name:22s} " + ", ".join(f"{o}: {by[(name, o)]}" for o in OUTCOMES if by[(name, o)]))
    failures = [r for r in results if r.failed]
    for r in failures:
        text = describe_failure(r)
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            name = re.sub(r"[^\w.-]+", "_", r.case.id) + ".txt"
            Path(args.save, name).write_text(text)
        print("\n" + text.split("--- diff")[0])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
