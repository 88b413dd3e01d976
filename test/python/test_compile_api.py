"""normfuse.compile's arguments (issue 11, section 3): example arguments specialized like jit,
constexprs checked and named, sm_90 only with passes, a warning when ptxas spills. CPU only."""
from __future__ import annotations

import warnings

import pytest
import torch
import triton
import triton.language as tl

import normfuse
from normfuse import SpillWarning


@triton.jit
def scale_rows(X, Y, M, N, stride, alpha, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr = 64,
               SQUARE: tl.constexpr = False):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    if SQUARE:
        x = x * x
    tl.store(Y + rows[:, None] * stride + cols[None, :], x * alpha, mask=mask)


@triton.jit
def accumulate(X, Y, K, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K):
        x = tl.load(X + k * BM * BN + rm[:, None] * BN + rn[None, :])
        acc = acc * tl.exp(x) + x
    tl.store(Y + rm[:, None] * BN + rn[None, :], acc)


SIG = {"X": "*bf16", "Y": "*fp32", "M": "i32", "N": "i32", "stride": "i32", "alpha": "fp32",
       "BLOCK_M": "constexpr"}


def _func_head(ck) -> str:
    return next(line for line in ck.asm["ttir"].splitlines() if "tt.func" in line)


def test_example_arguments_are_specialized_like_jit():
    x = torch.empty(64, 256, dtype=torch.bfloat16)
    y = torch.empty(64, 256, dtype=torch.float32)
    ck = normfuse.compile(scale_rows, args=(x, y, 64, 250, 256, 0.5), constexprs={"BLOCK_M": 16},
                          passes=())
    head = _func_head(ck)
    # pointers (aligned by torch) and the integers divisible by 16 carry tt.divisibility; N=250 not
    assert head.count("tt.divisibility = 16") == 4, head
    assert "%N: i32 loc" in head or "%arg3: i32 loc" in head
    assert "!tt.ptr<bf16> {tt.divisibility = 16 : i32}" in head
    # the same specialization as a jit launch derives
    sig, consts, attrs, _, _ = normfuse.compiler.specialize(scale_rows, (x, y, 64, 250, 256, 0.5),
                                                            {"BLOCK_M": 16})
    same = normfuse.compile(scale_rows, signature=sig, constexprs=consts, attrs=attrs, passes=())
    assert same.asm["ttir"] == ck.asm["ttir"]
    # without attrs, Triton assumes nothing
    plain = normfuse.compile(scale_rows, signature=SIG, constexprs={"BLOCK_M": 16}, passes=())
    assert "tt.divisibility" not in _func_head(plain)


def test_example_arguments_may_include_the_constexprs():
    x = torch.empty(64, 256, dtype=torch.bfloat16)
    y = torch.empty(64, 256, dtype=torch.float32)
    ck = normfuse.compile(scale_rows, args=(x, y, 64, 256, 256, 0.5, 16, 32, True), passes=())
    assert "tensor<16x32xf32>" in ck.asm["ttir"] and "arith.mulf" in ck.asm["ttir"]
    with pytest.raises(ValueError, match=r"kernel 'scale_rows': constexpr 'BLOCK_M' is 16 in args "
                                         r"and 32 in constexprs"):
        normfuse.compile(scale_rows, args=(x, y, 64, 256, 256, 0.5, 16, 32, True),
                         constexprs={"BLOCK_M": 32}, passes=())


def test_bad_example_arguments_name_the_argument():
    x = torch.empty(4, dtype=torch.complex64)
    with pytest.raises(TypeError, match=r"kernel 'scale_rows', argument 'X': unsupported tensor "
                                        r"dtype torch.complex64"):
        normfuse.compile(scale_rows, args=(x, x, 1, 1, 1, 1.0), constexprs={"BLOCK_M": 16})
    with pytest.raises(TypeError, match=r"kernel 'scale_rows', argument 'alpha': cannot pass str"):
        normfuse.compile(scale_rows, args=(torch.empty(1), torch.empty(1), 1, 1, 1, "a"),
                         constexprs={"BLOCK_M": 16})
    with pytest.raises(TypeError, match=r"scale_rows takes 6 runtime arguments \(X, Y, M, N, "
                                        r"stride, alpha\), got 2"):
        normfuse.compile(scale_rows, args=(x, x), constexprs={"BLOCK_M": 16})
    with pytest.raises(TypeError, match="either args= or signature="):
        normfuse.compile(scale_rows, args=(x, x), signature=SIG)
    with pytest.raises(TypeError, match=r"give example arguments \(args=...\) or a signature"):
        normfuse.compile(scale_rows)


def test_defaulted_constexprs_take_their_defaults():
    # BLOCK_N and SQUARE are left out of both signature and constexprs
    ck = normfuse.compile(scale_rows, signature=SIG, constexprs={"BLOCK_M": 16}, passes=())
    assert "tensor<16x64xf32>" in ck.asm["ttir"]


def test_missing_constexprs_are_named():
    with pytest.raises(ValueError, match=r"kernel 'scale_rows': constexpr parameters without a "
                                         r"value: BLOCK_M \(give them in constexprs=\)"):
        normfuse.compile(scale_rows, signature=SIG, passes=())
    with pytest.raises(ValueError, match=r"constexpr parameters without a value: BLOCK_M"):
        normfuse.compile(scale_rows, args=(torch.empty(1), torch.empty(1), 1, 1, 1, 1.0))


def test_unknown_and_untyped_parameters_are_named():
    with pytest.raises(ValueError, match=r"kernel 'scale_rows' has no parameter 'BLOCK_K' "
                                         r"\(parameters: X, Y, M, N, stride, alpha, BLOCK_M, "
                                         r"BLOCK_N, SQUARE\)"):
        normfuse.compile(scale_rows, signature=SIG, constexprs={"BLOCK_M": 16, "BLOCK_K": 1})
    sig = {k: v for k, v in SIG.items() if k not in ("M", "alpha")}
    with pytest.raises(ValueError, match=r"parameters without a type in signature: M, alpha"):
        normfuse.compile(scale_rows, signature=sig, constexprs={"BLOCK_M": 16})
    with pytest.raises(ValueError, match=r"parameter 'BLOCK_M' is a tl.constexpr; its signature "
                                         r"entry must be 'constexpr', not 'i32'"):
        normfuse.compile(scale_rows, signature={**SIG, "BLOCK_M": "i32"})


@pytest.mark.parametrize("target", ["cuda:80", "cuda:100", "cuda:89"])
def test_passes_need_sm90(target):
    arch = target.split(":")[1]
    with pytest.raises(ValueError, match=rf"kernel 'scale_rows': normfuse's passes emit sm_90 "
                                         rf"\(Hopper\) code, but target is 'cuda:{arch}'; compile "
                                         rf"with target='cuda:90'"):
        normfuse.compile(scale_rows, signature=SIG, constexprs={"BLOCK_M": 16}, target=target)
    with pytest.raises(ValueError, match=r"target must look like 'cuda:90', got 'sm_90'"):
        normfuse.compile(scale_rows, signature=SIG, constexprs={"BLOCK_M": 16}, target="sm_90")


def test_no_passes_compiles_for_other_targets():
    ck = normfuse.compile(scale_rows, signature=SIG, constexprs={"BLOCK_M": 16}, target="cuda:80",
                          passes=())
    assert ".target sm_80" in ck.asm["ptx"]


def test_spills_warn():
    sig = {"X": "*fp32", "Y": "*fp32", "K": "i32", "BM": "constexpr", "BN": "constexpr"}
    with pytest.warns(SpillWarning, match=r"kernel 'accumulate' spills registers: ptxas reports "
                                          r"\d+ bytes of spill stores and \d+ bytes of spill loads "
                                          r"per thread at 64 registers"):
        ck = normfuse.compile(accumulate, signature=sig, constexprs={"BM": 64, "BN": 64},
                              passes=(), num_warps=1, maxnreg=64)
    assert ck.resources()["spill_stores"] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpillWarning)  # the same kernel with registers to spare
        ck = normfuse.compile(accumulate, signature=sig, constexprs={"BM": 64, "BN": 64},
                              passes=(), num_warps=1)
    assert ck.resources()["spill_stores"] == 0


def test_jit_without_a_gpu_says_so():
    from conftest import _have_hopper
    if _have_hopper():
        pytest.skip("a GPU is present")
    try:
        from triton.runtime.driver import driver
        driver.active.get_current_target()
        pytest.skip("Triton finds a GPU driver")
    except RuntimeError:
        pass
    kernel = normfuse.jit(scale_rows, passes=())
    x = torch.empty(64, 64, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"kernel 'scale_rows': normfuse.jit launches on the "
                                           r"current GPU and Triton finds none .*target='cuda:90'"):
        kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=16)


def test_jit_parses_its_pipeline_and_asks_the_target_once(monkeypatch):
    """A launch must not redo per-kernel work: normfuse.jit parses its pipeline once and looks up
    the current device's target once per device (both used to run on every launch, about 0.1 ms
    of host time each); the compiled kernel is reused for the same specialization."""
    import normfuse.compiler as comp
    from triton.backends.compiler import GPUTarget
    calls = {"parse": 0, "target": 0, "compile": 0, "launch": 0}
    real_parse = comp.parse_pipeline

    def parse(spec):
        calls["parse"] += 1
        return real_parse(spec)

    def target(t, name="kernel", passes=()):
        calls["target"] += 1
        return GPUTarget("cuda", 90, 32)

    class FakeCK:
        lowered = None

        def launch(self, grid, full, runtime_args=()):
            calls["launch"] += 1

    def fake_compile(fn, **kw):
        calls["compile"] += 1
        return FakeCK()

    monkeypatch.setattr(comp, "parse_pipeline", parse)
    monkeypatch.setattr(comp, "_target", target)
    monkeypatch.setattr(comp, "compile", fake_compile)
    monkeypatch.setattr(comp, "launch_needs", lambda ck: [])

    class Dev:  # Triton's driver, as far as the lookup goes
        device = 0

        def get_current_device(self):
            return self.device
    dev = Dev()
    from triton.runtime.driver import driver
    monkeypatch.setattr(type(driver), "active", property(lambda self: dev))
    kernel = normfuse.jit(scale_rows, passes="default")
    x = torch.empty(64, 64, dtype=torch.bfloat16)
    for _ in range(5):
        kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=16)
    assert calls == {"parse": 1, "target": 1, "compile": 1, "launch": 5}
    dev.device = 1  # another device: its own target lookup (an arch per device)
    kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=16)
    assert calls["target"] == 2 and calls["parse"] == 1


def test_jit_fast_path_keys_on_the_specialization(monkeypatch):
    """Repeated launches of one call shape skip the general binding (the fast path) but still
    compile one kernel per specialization: a constexpr, an integer's divisibility by 16, an
    option, a default given by keyword; the fast path passes every parameter's value; a bad
    argument still gets the general path's error."""
    import normfuse.compiler as comp
    from triton.backends.compiler import GPUTarget
    compiled, general, launched = [], [0], []

    class FakeCK:
        lowered = None

        def __init__(self, kw):
            self.kw = kw

        def launch(self, grid, full, runtime_args=()):
            launched.append((self, tuple(full)))

    def fake_compile(fn, **kw):
        compiled.append(kw)
        return FakeCK(kw)
    real_general = comp.JITKernel._compiled_general

    def counted(self, *a):
        general[0] += 1
        return real_general(self, *a)
    monkeypatch.setattr(comp, "_target", lambda t, name="kernel", passes=(): GPUTarget("cuda", 90, 32))
    monkeypatch.setattr(comp, "compile", fake_compile)
    monkeypatch.setattr(comp, "launch_needs", lambda ck: [])
    monkeypatch.setattr(comp.JITKernel, "_compiled_general", counted)

    class Dev:
        def get_current_device(self):
            return 0
    from triton.runtime.driver import driver
    monkeypatch.setattr(type(driver), "active", property(lambda self: Dev()))
    kernel = normfuse.jit(scale_rows, passes=())
    x = torch.empty(64, 64, dtype=torch.bfloat16)
    for _ in range(4):
        kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=16)
    assert len(compiled) == 1 and general[0] == 1
    assert launched[-1][1] == (x, x, 64, 64, 64, 1.0, 16, 64, False)  # defaults filled
    kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=32)          # another constexpr
    kernel[(1,)](x, x, 63, 64, 64, 1.0, BLOCK_M=16)          # M not divisible by 16
    kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=16, num_warps=2)   # an option
    kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=16, SQUARE=True)   # a default given
    assert len(compiled) == 5
    assert compiled[1]["constexprs"]["BLOCK_M"] == 32 and compiled[4]["constexprs"]["SQUARE"]
    n = general[0]
    for _ in range(3):  # each of them again: the fast path, no new kernel
        kernel[(1,)](x, x, 63, 64, 64, 1.0, BLOCK_M=16)
        kernel[(1,)](x, x, 64, 64, 64, 1.0, BLOCK_M=16, SQUARE=True)
    assert len(compiled) == 5 and general[0] == n
    assert launched[-1][0] is launched[-5][0] and launched[-1][1][-1] is True
    with pytest.raises(TypeError, match="cannot pass str"):
        kernel[(1,)](x, x, "64", 64, 64, 1.0, BLOCK_M=16)


def test_jit_loads_a_kernel_per_device():
    """normfuse.jit on two devices of one arch (the stand-in driver switches the current
    device between two identical launches): each device loads its own module and function
    handle, as Triton's own per-device caches do (a handle loaded on device 0 does not launch
    on device 1)."""
    from normfuse.testing.fake_driver import fused_on_cpu
    k = normfuse.jit(scale_rows, passes=())
    x = torch.randn(64, 64).bfloat16()
    y = torch.empty(64, 64)
    with fused_on_cpu() as drv:
        loads = []
        real = drv.utils.load_binary

        def load(name, kernel, shared, device):
            r = real(name, kernel, shared, device)
            loads.append((device, r[1]))
            return r
        drv.utils.load_binary = load
        for dev in (0, 1, 0):
            drv.device = dev
            k[(4,)](x, y, 64, 64, 64, 2.0, BLOCK_M=16)
        assert len(drv.launches) == 3
    assert [d for d, _ in loads] == [0, 1] and loads[0][1] != loads[1][1], loads


def test_bad_pipelines_are_refused_up_front_naming_the_item():
    """normfuse.jit checks its pipeline when it is made (not at the first launch); passes=None is
    no pass, as in compile; a pipeline item that is no name or Pass object (the class instead of
    an instance, a number, bytes) is a PassError naming it; one Pass object is a pipeline."""
    from normfuse.passes import PassError
    from normfuse.passes.hopper_ws import HopperWS
    with pytest.raises(PassError, match="cluster-size"):
        normfuse.jit(scale_rows, passes="cluster-reduce{cluster-size=abc}")
    assert normfuse.jit(scale_rows, passes=None).passes == ()
    with pytest.raises(PassError, match=r"the class HopperWS \(pass an instance: HopperWS\(\)\)"):
        normfuse.jit(scale_rows, passes=[HopperWS])
    with pytest.raises(PassError, match="got a int"):
        normfuse.jit(scale_rows, passes=[42])
    with pytest.raises(PassError, match="got bytes"):
        normfuse.jit(scale_rows, passes=b"hopper-ws")
    assert len(normfuse.jit(scale_rows, passes=HopperWS()).passes) == 1


def test_lowerer_options_share_the_triton_compilation(monkeypatch, tmp_path):
    """Triton's cache is keyed on the passes that run inside its compilation, not on the lowering
    passes that run after it: two kernels that differ only in hopper-ws's options compile the
    fused Triton kernel once. Each comes back with its own Triton CompiledKernel, the stage's
    remarks (replayed from the cached metadata on the hit) and its own lowering, the same as
    when compiled alone."""
    from triton import knobs
    from normfuse.ops import prenorm_linear as ops

    fn = ops.kernel_for("rms")
    seen = []

    def listener(src, metadata, metadata_group, times, cache_hit):
        if getattr(src, "fn", None) is fn:  # (not the lowered Gluon programs)
            seen.append(cache_hit)

    def aot(schedule):
        return ops.aot_compile("rms", M=262144, N=1024, K=512, has_g=False,
                               passes=f"lazy-prenorm,hopper-ws{{schedule={schedule}}}")

    monkeypatch.setattr(knobs.compilation, "listener", listener)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "alone"))
    alone = aot("coop2")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "shared"))
    seen.clear()
    coop, coop2 = aot("coop"), aot("coop2")
    assert seen == [False, True]  # one Triton compilation, then a cache hit
    assert coop.kernel is not coop2.kernel and coop.kernel.asm is not coop2.kernel.asm
    assert coop.remarks is not coop2.remarks
    for ck, schedule in ((coop, "coop"), (coop2, "coop2")):
        assert ck.lowered is not None and ck.lowered.plan.config.schedule == schedule, ck.remarks
        assert any("[lazy-prenorm] applied" in r for r in ck.remarks), ck.remarks
        assert f" {schedule} " in ck.remarks[-1] and "[hopper-ws] applied" in ck.remarks[-1]
        assert "ttg.warp_specialize" in ck.asm["ttgir"]
    assert coop.asm["normfuse"] == coop2.asm["normfuse"]
    assert coop.asm["ptx"] != coop2.asm["ptx"]
    assert coop2.remarks == alone.remarks
    assert coop2.asm["ptx"] == alone.asm["ptx"] and coop2.asm["gluon"] == alone.asm["gluon"]
