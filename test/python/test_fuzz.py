"""Seeded mutations of every lit input through every pass and the default pipelines: normfuse-opt
answers each with IR (exit 0) or one `normfuse-opt: error: ...` (exit 1), never a signal, a
traceback or a hang (issue 13). The mutations and the judging are in fuzz_ir.py.

CI runs 4 mutations of each lit input through the driver alone (17 inputs: 68 runs), and the
ones that load through the 11 other pipelines (seed 0: 5 of them, 55 runs); more with
`--fuzz-count=N` (or NORMFUSE_FUZZ_COUNT=N) and another seed with `--fuzz-seed=S`
(NORMFUSE_FUZZ_SEED). A failure prints the case (input, pipeline, seed, mutation, command),
normfuse-opt's stderr, the diff against the lit input and the whole mutated input.
"""
from __future__ import annotations

import os

import pytest

import fuzz_ir


def _option(config, name: str, env: str, default: int) -> int:
    value = config.getoption(name)
    if value is None:
        value = int(os.environ.get(env, default))
    return value


@pytest.fixture(scope="module")
def fuzz_results(request):
    # four mutations per lit input in the default suite, then the ones that load through every
    # pipeline (~100 runs of the tool); more with --fuzz-count / NORMFUSE_FUZZ_COUNT
    count = _option(request.config, "--fuzz-count", "NORMFUSE_FUZZ_COUNT", 4)
    seed = _option(request.config, "--fuzz-seed", "NORMFUSE_FUZZ_SEED", 0)
    return fuzz_ir.run_fuzz(count, seed)


def test_pipelines_cover_every_pass():
    fuzz_ir.check_pipelines_cover_the_registry()


def test_mutations_are_deterministic():
    a = fuzz_ir.make_cases(2, seed=7)
    b = fuzz_ir.make_cases(2, seed=7)
    assert [(c.id, c.mutation, c.text) for c in a] == [(c.id, c.mutation, c.text) for c in b]
    assert len(a) == 2 * len(fuzz_ir.LIT_INPUTS)
    assert {c.pipeline for c in a} == {"none"}
    assert all(c.text != c.input.read_text() for c in a)
    assert [c.text for c in fuzz_ir.make_cases(2, seed=8)] != [c.text for c in a]


def test_only_mutations_that_load_go_through_the_passes():
    """The second stage takes each mutation the driver alone loaded through every other pipeline
    (same text, input, index and seed), and none that failed to load."""
    cases = fuzz_ir.make_cases(1, seed=3)[:3]
    outcomes = ["success", "clean error", "Triton crash caught"]
    first = [fuzz_ir.Result(c, o, 0 if o == "success" else 1, "", "") for c, o in zip(cases, outcomes)]
    second = fuzz_ir.through_pipelines(first)
    assert sorted(c.pipeline for c in second) == sorted(n for n in fuzz_ir.PIPELINES if n != "none")
    assert {(c.input, c.index, c.seed, c.text) for c in second} == {
        (cases[0].input, cases[0].index, cases[0].seed, cases[0].text)}
    assert len({c.id for c in second}) == len(second)


@pytest.mark.parametrize("rc, out, err, outcome", [
    (0, "module {\n}\n", "", "success"),
    (0, "", "", "crash"),  # exit 0 without IR
    (1, "", "normfuse-opt: error: x cannot be loaded as Triton IR:\nloc(...)", "clean error"),
    (1, "", "normfuse-opt: error: x: Triton crashed (SIGSEGV, signal 11) while parsing x",
     "Triton crash caught"),
    (1, "", "normfuse-opt: error: x: pass 'p' failed on this input (internal error: KeyError)",
     "internal error"),
    (1, "", "normfuse-opt: error: x: internal error in normfuse (IndexError at core.py:1)",
     "internal error"),
    (1, "module {", "normfuse-opt: error: x", "crash"),  # IR printed despite an error
    (1, "", "Traceback (most recent call last):\n  ...\nKeyError: 1", "crash"),
    (-11, "", "", "crash"),
    (134, "", "", "crash"),
    (None, "", "(no answer)", "crash"),
])
def test_classify(rc, out, err, outcome):
    assert fuzz_ir.classify(rc, out, err) == outcome


def test_no_mutation_crashes_normfuse_opt(fuzz_results):
    failures = [r for r in fuzz_results if r.failed]
    figures = fuzz_ir.figures(fuzz_results)
    print("fuzz figures:", figures)
    assert not failures, (f"{len(failures)} of {len(fuzz_results)} mutated inputs failed "
                          f"({figures}):\n\n" + "\n\n".join(fuzz_ir.describe_failure(r)
                                                            for r in failures))
    # the mutations reach both answers: errors and IR that loads, which then went through the
    # passes (the second stage)
    assert figures["clean error"] + figures["Triton crash caught"] > 0
    assert any(r.case.pipeline != "none" for r in fuzz_results)
