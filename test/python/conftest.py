"""Shared pytest setup: the `gpu` marker, an isolated Triton cache, a small kernel compiled
ahead of time for sm_90 (works on a CPU-only machine), and test-only passes."""
from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# A Triton child that hangs (heap corruption sometimes loops instead of aborting) is killed after
# this many seconds of silence; the default (120 s) is for users, tests need less. The children
# the tests start parse a few hundred lines (well under a second, even on a loaded 2-core
# machine); each hang costs this much of CI's time (test_guard's two crash tests took 20 s each
# in a full run on 2026-12-02, when both hung, and 12 s each until their crash was made
# deterministic, test_guard.CRASHES_TRITON), so 12 s.
os.environ.setdefault("NORMFUSE_GUARD_TIMEOUT_S", "12")

REPO = Path(__file__).resolve().parents[2]
# Tests run from a checkout without installing normfuse (scripts/test.sh sets PYTHONPATH too).
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

GPU_SKIP_REASON = "needs an NVIDIA Hopper (sm_90) GPU"


# ---------------------------------------------------------------------------------------------
# The gpu marker
# ---------------------------------------------------------------------------------------------

def _have_hopper() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available()) and torch.cuda.get_device_capability()[0] == 9
    except Exception:  # noqa: BLE001 - no CUDA build, no driver, ...: no GPU
        return False


def pytest_addoption(parser):
    group = parser.getgroup("normfuse")
    group.addoption("--fuzz-count", type=int, default=None,
                    help="mutations per lit input in test_fuzz.py (default: $NORMFUSE_FUZZ_COUNT, "
                         "else 4; those that load also run through every pipeline)")
    group.addoption("--fuzz-seed", type=int, default=None,
                    help="seed of test_fuzz.py's mutations (default: $NORMFUSE_FUZZ_SEED, else 0)")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs an NVIDIA Hopper GPU")
    config.addinivalue_line("markers", "slow: a heavy CPU sweep, left out of the default run "
                            "(`pytest -m slow` runs them; see README, Tests)")
    config.addinivalue_line("markers", "postnorm_plan: run with the post-norm ops' own plan choice "
                            "(other tests pin the fused kernels: NORMFUSE_POSTNORM_PLAN=fused)")
    # pytest-xdist 3.7+ hands out the files of --dist loadfile by their number of tests unless
    # told not to (--no-loadscope-reorder): keep the heavy-first order (_HEAVY_FIRST)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.fixture(autouse=True)
def _postnorm_kernels(request, monkeypatch):
    """The post-norm ops run the lowered form by default, or compose cuBLAS and torch's norm
    below POSTNORM_FUSED_MIN_ROWS rows with it off (normfuse.ops.inference.postnorm_plan); the
    tests exist to check the cluster pipeline's kernels at small shapes, so they pin that plan
    (switch off, NORMFUSE_POSTNORM_PLAN=fused) unless marked `postnorm_plan`; the lowered form's
    tests set the switch themselves."""
    if request.node.get_closest_marker("postnorm_plan") is None:
        from normfuse.ops import postnorm_linear as post
        monkeypatch.setenv("NORMFUSE_POSTNORM_PLAN", "fused")
        if any(post.LOWERED_POSTNORM.values()):
            monkeypatch.setitem(post.LOWERED_POSTNORM, "rms", None)
            monkeypatch.setitem(post.LOWERED_POSTNORM, "ln", None)


def pytest_report_header(config):
    import torch
    gpu = "Hopper GPU present" if _have_hopper() else "no Hopper GPU: gpu tests skipped"
    return f"normfuse: triton {triton.__version__}, torch {torch.__version__}, {gpu}"


def pytest_collection_modifyitems(config, items):
    # `slow` tests run only when the -m expression names them (-m slow, -m "slow or not slow")
    if "slow" not in (config.getoption("markexpr", "") or ""):
        slow = [item for item in items if item.get_closest_marker("slow") is not None]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if item.get_closest_marker("slow") is None]
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not _have_hopper():
        skip = pytest.mark.skip(reason=GPU_SKIP_REASON)
        for item in gpu_items:
            item.add_marker(skip)
    # the heaviest files first: pytest-xdist's --dist loadfile hands out files in this order, so
    # a long file started last cannot leave one core working alone at the end (stable sort: the
    # order within a file, and of the other files, is kept)
    rank = {name: i for i, name in enumerate(_HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(_rel_file(item), len(rank)))


# Wall seconds per file with 2 workers on 2 cores (2026-12-04, the ci-speed branch's run: 895 s
# in all), heaviest first
_HEAVY_FIRST = ("test_lowered_numerics.py", "test_lit.py", "passes/test_hopper_ws.py",
                "test_backward_training.py", "test_backward_kernels.py", "test_lowered_postnorm.py",
                "test_flash_norm_attention.py", "test_flash_norm_attention_bwd.py",
                "test_lowered_backward.py", "test_norm_op.py", "test_variants.py", "test_postnorm.py",
                "passes/test_cluster_reduce.py", "test_fuzz.py", "test_variants_lowered.py",
                "test_lowered_launch.py", "test_optimize.py", "test_models_bench.py",
                "test_examples.py", "passes/test_lazy_prenorm_numerics.py", "test_ir.py",
                "test_setup.py", "test_backward_ops.py", "test_ops.py", "test_ops_host.py",
                "test_optimize_train.py", "test_guard.py", "test_inductor_pass.py", "test_cli.py",
                "passes/test_cluster_reduce_chain.py", "test_opcheck.py",
                "test_gpu_tests_runner.py", "passes/test_reuse_loads.py", "test_interpreter.py",
                "test_repro.py")


def _rel_file(item) -> str:
    path = Path(str(item.fspath))
    try:
        return path.relative_to(Path(__file__).parent).as_posix()
    except ValueError:
        return path.name


# ---------------------------------------------------------------------------------------------
# Python's cyclic garbage collector
# ---------------------------------------------------------------------------------------------

# A full collection walks every object the process holds (torch's, Triton's, the test modules',
# what the tests keep cached: about a million in a worker of the whole suite), dozens of times a
# run, and writes to each one (after each of the guard's forks, normfuse.ir.guard, a page fault
# for each page written that the process shared with the child). What exists when collection
# ends, and when a test file ends (its module fixtures gone), is collected once and frozen
# (gc.freeze: left out of later collections), so later collections walk only what the file
# being run made. A frozen object is still freed by its reference count when released; only a
# reference cycle through frozen objects is never collected. (The model benchmark unfreezes
# when its rounds end: the end of its file freezes again.)

def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()


# ---------------------------------------------------------------------------------------------
# Paths, Triton cache
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def normfuse_opt(repo_root) -> list[str]:
    """The command that runs this checkout's normfuse-opt."""
    return [sys.executable, str(repo_root / "tools" / "normfuse-opt")]


@pytest.fixture(scope="session", autouse=True)
def _isolated_triton_cache(tmp_path_factory):
    """A fresh Triton cache per run, so no test passes on a binary from an earlier run. Under
    pytest-xdist the workers of one run share it (the run's base directory, above each worker's
    own), so a kernel two workers' files compile is compiled once; Triton writes its cache
    entries atomically. scripts/gpu_tests.py's workers share the one it made for the run
    (`NORMFUSE_TRITON_CACHE`)."""
    old = os.environ.get("TRITON_CACHE_DIR")
    if os.environ.get("NORMFUSE_TRITON_CACHE"):
        os.environ["TRITON_CACHE_DIR"] = os.environ["NORMFUSE_TRITON_CACHE"]
    elif os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "triton-cache-shared"
        shared.mkdir(exist_ok=True)
        os.environ["TRITON_CACHE_DIR"] = str(shared)
    else:
        os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    yield
    if old is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = old


# ---------------------------------------------------------------------------------------------
# A small kernel: the statistics half of RMSNorm (a k-loop of loads, a square-sum, a row reduce)
# ---------------------------------------------------------------------------------------------

@triton.jit
def row_rstd_kernel(X, R, M, N, stride, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, N, BLOCK_N):
        mask = (rows[:, None] < M) & (k + cols[None, :] < N)
        x = tl.load(X + rows[:, None] * stride + k + cols[None, :], mask=mask, other=0.0)
        x = x.to(tl.float32)
        acc += x * x
    ss = tl.sum(acc, axis=1)
    tl.store(R + rows, tl.rsqrt(ss / N + eps), mask=rows < M)


@dataclass(frozen=True)
class KernelSpec:
    fn: object
    signature: dict
    constexprs: dict
    BLOCK_M: int
    BLOCK_N: int


ROW_RSTD = KernelSpec(
    fn=row_rstd_kernel,
    signature={"X": "*bf16", "R": "*fp32", "M": "i32", "N": "i32", "stride": "i32",
               "eps": "fp32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"},
    constexprs={"BLOCK_M": 16, "BLOCK_N": 64},
    BLOCK_M=16,
    BLOCK_N=64,
)


@pytest.fixture(scope="session")
def row_rstd() -> KernelSpec:
    return ROW_RSTD


@pytest.fixture(scope="session")
def compiled_row_rstd(row_rstd, _isolated_triton_cache):
    """Triton's own AOT compilation for sm_90 (no normfuse involved)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(row_rstd.fn, row_rstd.signature, constexprs=row_rstd.constexprs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32))


@pytest.fixture(scope="session")
def ttir(compiled_row_rstd) -> str:
    return compiled_row_rstd.asm["ttir"]


@pytest.fixture(scope="session")
def ttgir(compiled_row_rstd) -> str:
    return compiled_row_rstd.asm["ttgir"]


@pytest.fixture(scope="session")
def triton_print():
    """How Triton itself prints `text` after parsing it: the reference for round trips.
    `debuginfo=False`: without locations, what normfuse-opt prints by default."""
    from normfuse.ir import bridge

    def render(text: str, debuginfo: bool = True) -> str:
        module, _ = bridge.parse_triton(text)
        return str(module) if debuginfo else module.str_nodebug()
    return render


# ---------------------------------------------------------------------------------------------
# Test-only passes (test/python/fakepasses.py), registered by name for one test
# ---------------------------------------------------------------------------------------------

FAKE_PASSES = {
    "test-noop": "fakepasses:Noop",
    "test-mul-to-add": "fakepasses:MulToAdd",
    "test-break": "fakepasses:Break",
    "test-crash-triton": "fakepasses:CrashTriton",
    "test-raise": "fakepasses:Raise",
}


@pytest.fixture
def fake_passes(monkeypatch):
    """Registers the test passes (the registry maps names to 'module:Class')."""
    from normfuse import passes

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    for name, target in FAKE_PASSES.items():
        monkeypatch.setitem(passes._REGISTRY, name, target)
    return sorted(FAKE_PASSES)
