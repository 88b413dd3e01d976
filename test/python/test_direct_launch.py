"""Triton's launcher resolved to its C function (normfuse.direct_launch), on the CPU (issue 19
item 3).

Triton's own CudaLauncher runs with only the generated C launch function and the tensor-map
encoding replaced (normfuse.testing.fake_driver: the C function records its argument tuple,
`fill_tma_descriptor` records its inputs). The direct launch must pass exactly the tuple Triton's
launcher passes (the launch metadata and the hooks aside: None while no hook is registered), for
the lowered (Gluon, host TMA descriptors) kernels and a plain Triton kernel with global scratch
and clusters, and the lowered post-norm kernels (hopper-ws{post-norm=true}: the residual's
tensor map in the template's fourth descriptor slot, or its constexpr None without a residual,
and the partial row sums' words); tensor maps are encoded once per address and geometry and
reused otherwise; with a launch hook registered the launch goes through Triton's runner.
"""
from __future__ import annotations

import functools

import pytest
import torch

from normfuse import direct_launch as dl
from normfuse.lowering import runtime as rt
import normfuse.ops as ops
from normfuse.ops import inference
from normfuse.ops import postnorm_linear as post
from normfuse.testing.fake_driver import FakeDriver, FakeTensorMap, same_arguments

M, N, K = 1000, 520, 1032  # N != K, neither a multiple of the tile
# shared statistics (LayerNorm's: RMSNorm's run per tile on coop2) from 8 tiles of N
N_OF = {"rms": N, "ln": N, "ln-shared": 2056}
OUT = {"rms": 3, "ln": 4, "ln-shared": 4}  # the output's position: x, g[, beta], w, y, bias


_same = same_arguments


@pytest.fixture(scope="module")
def lowered():
    """kind -> (the lowered launch the op made, the op's arguments of that launch): RMSNorm
    and LayerNorm (weights folded, LayerNorm with a bias: a derived column sum) at N = 520,
    LayerNorm with shared statistics (N = 2056, 59 row blocks: 4 waves of 132 programs); built
    through the op (kernels compiled by the ops' launchers, shared with test_ops_host)."""
    from normfuse.testing.fake_driver import fused_on_cpu
    out = {}
    gen = torch.Generator().manual_seed(0)
    with fused_on_cpu():
        for kind in ("rms", "ln", "ln-shared"):
            n, m = N_OF[kind], 7512 if kind == "ln-shared" else M
            x = torch.randn(m, K, generator=gen).bfloat16()
            g = (1 + 0.1 * torch.randn(K, generator=gen)).bfloat16()
            w = (torch.randn(n, K, generator=gen) / K ** 0.5).bfloat16()
            if kind.startswith("ln"):
                beta, b = (torch.randn(K, generator=gen) / 10).bfloat16(), torch.randn(n).bfloat16()
                ops.layernorm_linear(x, g, beta, w, 1e-5, b)
                call = inference.pre_call(x, g, beta, [w], [b], 1e-5, is_ln=True)
            else:
                ops.rmsnorm_linear(x, g, w)
                call = inference.pre_call(x, g, None, [w], [None], 1e-6)
            low = call.plan.lowered
            assert low is not None and low.share == (kind == "ln-shared")
            args = (x[:M], *call.pre, torch.empty(M, n).bfloat16(), *call.post,
                    M, *call.plan.tail[1:])
            out[kind] = (low.launch, args)
    return out


def _pre_args(kind, lowered):
    """The op's arguments for `kind` with a new x and output (M rows)."""
    args = list(lowered[kind][1])
    args[0] = torch.randn(M, K).bfloat16()
    args[OUT[kind]] = torch.empty(M, N_OF[kind]).bfloat16()
    return tuple(args)


@pytest.fixture
def shared(monkeypatch):
    """The shared statistics' workspace without a CUDA stream: one buffer, epochs counting up."""
    sbuf = torch.zeros(3 * 1024, dtype=torch.int64)
    epochs = iter(range(1, 10**6))
    monkeypatch.setattr(rt.SharedStats, "take",
                        classmethod(lambda cls, d, m, b, *a, **kw: (sbuf, next(epochs))))
    return sbuf


def _ln_plan(lowered):
    """(the LayerNorm launch's arguments with a new x and output, its plan, the derived column
    sum's slot in the hooks' arguments)."""
    args = _pre_args("ln", lowered)
    plan = lowered["ln"][0].prepare(args, sms=132)
    (slot, _), = plan._derived_slots
    return args, plan, slot


def _tritons(plan, args, drv):
    """What Triton's own launcher passes to the C function for the plan's launch of `args`."""
    runtime = plan.bound(args).args
    plan.launch.kernel[plan.grid](*runtime, *plan.tail)
    return drv.launches[-1]


@pytest.mark.parametrize("kind", ["rms", "ln", "ln-shared"])
def test_direct_launch_passes_what_tritons_launcher_passes(kind, lowered, shared):
    lw = lowered[kind][0]
    base = _pre_args(kind, lowered)
    N = N_OF[kind]
    out = OUT[kind]  # the position of y (x, g[, b], w, y, bias, ...)
    with FakeDriver() as drv:
        plan = lw.prepare(base, sms=132)
        for _ in range(3):  # new activations and outputs every call, one weight
            args = list(base)
            args[0], args[out] = torch.randn(M, K).bfloat16(), torch.empty(M, N).bfloat16()
            args = tuple(args)
            enc = drv.utils.encoded
            plan.run(args)
            direct = drv.launches[-1]
            assert plan._direct is not None  # the direct path ran
            want = _tritons(plan, args, drv)
            assert drv.utils.encoded - enc >= 3  # Triton encodes three maps on every launch
            # the launch metadata and both hooks: None (Triton: a LazyDict and two empty
            # HookChains, which the C function calls for nothing)
            assert direct[10:13] == (None, None, None)
            assert type(want[10]).__name__ == "LazyDict" and not want[11].calls
            # the epoch differs (each launch takes one); everything else is the same
            assert _same(direct[:10], want[:10])
            n = len(direct)
            assert n == len(want)
            # maps (map, 2 sizes, 2 strides) x 3, r_desc and aux_desc (constexpr Nones), M N K,
            # eargs, sbuf
            ep = 13 + 3 * 5 + 2 + 3 + 2
            assert direct[28] is None and want[28] is None
            assert direct[29] is None and want[29] is None
            assert _same(direct[13:ep], want[13:ep]), (direct[13:ep], want[13:ep])
            if plan.share:  # each launch takes an epoch
                assert direct[ep - 1] is shared and direct[ep] == want[ep] - 1
            else:  # no shared statistics: A and 0
                assert direct[ep - 1] is args[0] and direct[ep] == want[ep] == 0
            assert plan.share == (kind == "ln-shared")
            assert _same(direct[ep + 1:], want[ep + 1:])
            # the maps are those of this call's tensors
            x, y = args[0], args[out]
            assert direct[13].inputs[0] == x.data_ptr() and direct[23].inputs[0] == y.data_ptr()


def test_tensor_maps_are_encoded_once_per_address_and_geometry(lowered, shared):
    lw = lowered["rms"][0]
    with FakeDriver() as drv:
        args = _pre_args("rms", lowered)
        plan = lw.prepare(args, sms=132)
        plan.run(args)
        assert drv.utils.encoded == 3
        first = drv.launches[-1]
        plan.run(args)
        assert drv.utils.encoded == 3  # the same tensors: looked up
        again = drv.launches[-1]
        assert all(again[i] is first[i] for i in (13, 18, 23))  # the very map objects
        x2 = torch.randn(M, K).bfloat16()
        plan.run((x2, *args[1:]))
        assert drv.utils.encoded == 4  # only A's address is new
        assert drv.launches[-1][13].inputs[0] == x2.data_ptr()
        assert drv.launches[-1][18] is first[18]
        # the same address in another geometry (fewer rows): another plan, another map
        xs = args[0][:500]
        ys = args[3][:500]
        small = (xs, *args[1:3], ys, args[4], 500, *args[6:])
        plan_small = lw.prepare(small, sms=132)
        plan_small.run(small)
        m = drv.launches[-1][13]
        assert m.inputs[0] == first[13].inputs[0] and m.inputs[5] != first[13].inputs[5]
        assert m.inputs[5] == (500, K) and first[13].inputs[5] == (M, K)


def test_tensor_map_cache_is_bounded_oldest_first():
    made = []

    def make(desc, meta):
        made.append(desc.base.data_ptr())
        return [FakeTensorMap((desc.base.data_ptr(),)), *desc.shape, *desc.strides]
    maps = dl.TensorMaps(make, {"swizzle": 3}, (4, 8), (8, 1), size=3)
    ts = [torch.empty(4, 8) for _ in range(4)]
    for t in ts[:3]:
        maps(t)
    assert maps(ts[0])[0].inputs == (ts[0].data_ptr(),) and len(made) == 3
    assert maps(ts[0])[1:] == (4, 8, 8, 1)
    maps(ts[3])  # the fourth address drops the oldest
    assert len(maps) == 3 and maps.get(ts[0].data_ptr()) is None
    maps(ts[1])
    assert len(made) == 4


def test_a_registered_launch_hook_goes_through_tritons_runner(lowered, shared):
    from triton import knobs
    lw = lowered["rms"][0]
    seen = []
    hook = seen.append
    with FakeDriver() as drv:
        args = _pre_args("rms", lowered)
        plan = lw.prepare(args, sms=132)
        plan.run(args)
        assert drv.launches[-1][11] is None
        knobs.runtime.launch_enter_hook.add(hook)
        try:
            assert dl.hooks_registered()
            plan.run(args)
            got = drv.launches[-1]
            assert got[11] is knobs.runtime.launch_enter_hook  # Triton's own path
            assert type(got[10]).__name__ == "LazyDict"
        finally:
            knobs.runtime.launch_enter_hook.remove(hook)
        assert not dl.hooks_registered()
        plan.run(args)
        assert drv.launches[-1][11] is None


def test_a_stand_in_kernel_is_launched_through_its_runner(lowered):
    """resolve() takes only Triton's CompiledKernel with its CUDA launcher; anything else
    launches through kernel[grid] (as the tests' recording stand-ins do)."""
    class Launcher:
        def __getitem__(self, grid):
            return lambda *a: None
    assert dl.resolve(Launcher(), (1, 1, 1)) is None


def test_plain_triton_kernel_with_scratch_and_clusters(monkeypatch):
    """A kernel without host descriptors (the post-norm kernel: clusters of CTAs, global scratch
    per program): `DirectLaunch(*args)` passes what `kernel[grid](*args)` passes, the scratch
    allocated through the context's allocator at the same size."""
    from triton.runtime import _allocation
    ck = post.aot_compile_postnorm("rms", M=512, N=1024, K=1024)
    k = ck.kernel
    sizes = []

    def alloc(size, align, stream):
        sizes.append((size, align, stream))
        return torch.empty(size, dtype=torch.int8)
    token = _allocation._allocator.set(alloc)
    try:
        with FakeDriver() as drv:
            grid = (8, 1, 1)
            d = dl.resolve(k, grid)
            assert d is not None and d.positions == ()
            x, w = torch.randn(512, 1024).bfloat16(), torch.randn(1024, 1024).bfloat16()
            vec = torch.zeros(1024).bfloat16()
            y = torch.empty(512, 1024).bfloat16()
            # the runtime arguments, then the constexprs (values the C function ignores)
            args = (x, w, vec, vec, vec, y, 512, 1024, 1024, 1024, 1024, 1024, 1e-6, *range(9))
            d(*args)
            mine, my_scratch = drv.launches[-1], sizes[-1]
            k[grid](*args)
            want, their_scratch = drv.launches[-1], sizes[-1]
    finally:
        _allocation._allocator.reset(token)
    assert my_scratch == their_scratch and my_scratch[0] == 8 * 4 * 256
    assert _same(mine[:7], want[:7]) and mine[9] == want[9]
    assert mine[10:13] == (None, None, None)
    assert _same(mine[13:], want[13:])


def test_derived_vectors_under_capture_are_pinned_and_not_remembered(lowered, shared,
                                                                     monkeypatch):
    """LayerNorm's column sum of the weight (a derived argument): remembered per weight
    version eagerly; under capture a remembered vector is pinned for the graph, and one computed
    there (a new weight version) is neither remembered nor cached (it holds nothing until the
    graph replays)."""
    from normfuse.device import cuda_state
    from normfuse.lowering import launch as L
    monkeypatch.setattr(L, "_GRAPH_PINS", {})
    with FakeDriver() as drv:
        args, plan, slot = _ln_plan(lowered)
        plan.run(args)
        v = drv.launches[-1][33][slot]  # the eargs tuple (after r_desc, aux_desc, M, N, K)
        w = args[3]
        torch.testing.assert_close(v, w.float().sum(1), rtol=0, atol=0)
        assert plan._last_derived[slot][4] is v and not L._GRAPH_PINS
        monkeypatch.setattr(cuda_state, "capturing", lambda: True, raising=False)
        plan.run(args)
        assert drv.launches[-1][33][slot] is v and any(t is v for t in L._GRAPH_PINS.values())
        n = len(L._DERIVED_CACHE)
        w.add_(1.0)  # a new version, seen inside the capture
        plan.run(args)
        v2 = drv.launches[-1][33][slot]
        assert v2 is not v and plan._last_derived[slot][4] is v and len(L._DERIVED_CACHE) == n
        monkeypatch.setattr(cuda_state, "capturing", lambda: False, raising=False)
        plan.run(args)
        v3 = drv.launches[-1][33][slot]
        assert plan._last_derived[slot][4] is v3
        torch.testing.assert_close(v3, w.float().sum(1), rtol=0, atol=0)


def test_layernorm_fold_hands_its_column_sums_to_the_launch(lowered, shared, monkeypatch):
    """The wiring end to end on the CPU (FakeDriver): where LayerNorm's fold runs as one
    `fold_columns_dot` launch (forced here; on the GPU: sm_90, 16-bit W), the op's lowered
    launch passes the column-sum vector that kernel wrote, not one it summed itself."""
    import contextlib
    from normfuse.ops import norm as norm_ops, prenorm_linear as pre
    from normfuse.testing.fake_driver import fused_on_cpu
    from normfuse.lowering import launch as L
    monkeypatch.setattr(torch.cuda, "device", lambda d: contextlib.nullcontext())
    monkeypatch.setattr(pre, "_fold_dot_applies", lambda *a: True)
    monkeypatch.setattr(norm_ops, "_CALLS", {})
    made = []
    real = pre.fold_columns_dot

    def spy(*a):
        got = real(*a)
        made.append(got)
        return got
    monkeypatch.setattr(pre, "fold_columns_dot", spy)
    monkeypatch.setattr(L, "_PROVIDED", {})
    gen = torch.Generator().manual_seed(4)
    n = N_OF["ln"]
    x = torch.randn(M, K, generator=gen).bfloat16()
    g = (1 + 0.1 * torch.randn(K, generator=gen)).bfloat16()
    beta = (torch.randn(K, generator=gen) / 10).bfloat16()
    w = (torch.randn(n, K, generator=gen) / K ** 0.5).bfloat16()
    with fused_on_cpu() as drv:
        ops.layernorm_linear(x, g, beta, w, 1e-5)
        (folded, _, sums), = made
        eargs = drv.launches[-1][33]
    assert any(v is sums for v in eargs), "the launch summed the folded weight itself"
    assert L._provided(folded, folded, n, K, K, False) is sums


def test_provided_column_sums_are_taken_for_that_weight_version(lowered, shared, monkeypatch):
    """`provide_column_sums` (the training forward's fold sums the folded W on the way): the
    launch passes the provided vector for exactly that weight tensor at that version, without
    summing it; a new version (an in-place update) is summed again, and the entry goes with
    the tensor."""
    import gc
    from normfuse.lowering import launch as L
    monkeypatch.setattr(L, "_PROVIDED", {})
    with FakeDriver() as drv:
        args, plan, slot = _ln_plan(lowered)
        w = args[3]
        marker = torch.full((w.shape[0],), 7.0)
        L.provide_column_sums(w, marker)
        plan.run(args)
        assert drv.launches[-1][33][slot] is marker
        w.add_(1.0)  # a new version: summed by the launch, not the stale vector
        plan.run(args)
        got = drv.launches[-1][33][slot]
        assert got is not marker
        torch.testing.assert_close(got, w.float().sum(1), rtol=0, atol=0)
        other = w.clone()  # another tensor of the same geometry: nothing provided for it
        assert L._provided(other, other, *w.shape, w.stride(0), False) is None
        assert L._provided(w, w, *w.shape, w.stride(0), True) is None  # (read as [K, N])
    with torch.inference_mode():
        L.provide_column_sums(torch.ones(4, 3), torch.full((4,), 3.0))  # (no version: not kept)
    assert len(L._PROVIDED) == 1
    t = torch.ones(4, 3)
    L.provide_column_sums(t, torch.full((4,), 3.0))
    assert len(L._PROVIDED) == 2
    del t
    gc.collect()
    assert len(L._PROVIDED) == 1  # (the entry left with its tensor)


# ---------------------------------------------------------------------------------------------
# The lowered post-norm kernels: a fourth descriptor slot (the residual) or a constexpr None
# ---------------------------------------------------------------------------------------------

# (kind, N, BLOCK_M, BLOCK_N, K, bias, residual, tma, passes): the specializations
# test_lowered_postnorm.py compiles for its register check (Triton's cache holds them after it)
POST_CASES = {
    "residual": ("ln", 600, 128, 256, 136, True, True, False,
                 "epilogue-norm,hopper-ws{post-norm=true}"),
    "no-residual": ("rms", 520, 64, 256, 128, True, False, True,
                    "epilogue-norm,hopper-ws{post-norm=true,schedule=pingpong}"),
}


@functools.lru_cache(maxsize=None)
def _post_lowered(case):
    """The lowered launch of the naive post-norm kernel (its parameters: the TTIR function's
    arguments, X W BIAS RES G [B] Y M K stride_xm stride_wn stride_rm stride_ym eps)."""
    from normfuse.kernels import postnorm_gemm
    from normfuse.testing import lower_ir, ttir_of
    kind, N, BM, BN, K, bias, res, tma, passes = POST_CASES[case]
    fn = postnorm_gemm.linear_rmsnorm_naive if kind == "rms" else \
        postnorm_gemm.linear_layernorm_naive
    ptrs = ["X", "W", "BIAS", "RES", "G"] + (["B"] if kind == "ln" else []) + ["Y"]
    sig = {n: "*bf16" for n in ptrs}
    sig.update({n: "i32" for n in ("M", "K", "stride_xm", "stride_wn", "stride_rm", "stride_ym")})
    sig["eps"] = "fp32"
    consts = dict(N=N, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=64, EVEN_K=K % 64 == 0, HAS_BIAS=bias,
                  HAS_RES=res, USE_TMA=tma, PERSISTENT=False)
    sig.update({k: "constexpr" for k in consts})
    ttir = ttir_of(fn, sig, consts, num_warps=8 if BM * BN >= 128 * 256 else 4)
    lw, _, remarks = lower_ir(ttir, passes)
    assert lw is not None, remarks
    return lw


def _post_args(case, M, gen):
    kind, N, _, _, K, bias, res, _, _ = POST_CASES[case]
    x = torch.randn(M, K, generator=gen).bfloat16()
    w = (torch.randn(N, K, generator=gen) / K ** 0.5).bfloat16()
    vecs = [torch.randn(N, generator=gen).bfloat16() for _ in range(2 if kind == "ln" else 1)]
    b = torch.randn(N, generator=gen).bfloat16()
    r = torch.randn(M, N, generator=gen).bfloat16()
    y = torch.empty(M, N).bfloat16()
    eps = 1e-6 if kind == "rms" else 1e-5
    return (x, w, b if bias else w, r if res else w, *vecs, y, M, K, K, K, N, N, eps)


@pytest.mark.parametrize("case", sorted(POST_CASES))
def test_direct_launch_of_lowered_postnorm(case, monkeypatch):
    """hopper-ws{post-norm=true}'s template takes a fourth descriptor, r_desc: with a residual
    the direct launch passes its tensor map (encoded once per address, as A's, B's and the
    output's), without one the constexpr None where Triton's launcher passes it. The partial row
    sums take `words_per_row` words per row from the stream's buffer (SharedStats). Everything
    else equals Triton's tuple for the same arguments, epoch and words."""
    from normfuse.lowering.runtime import SharedStats
    monkeypatch.setattr(SharedStats, "_by_stream", None)
    lw = _post_lowered(case)
    kind, N, BM, BN, K, bias, res, _, _ = POST_CASES[case]
    M = 1000
    gen = torch.Generator().manual_seed(1)
    base = _post_args(case, M, gen)
    n_vec = 2 if kind == "ln" else 1
    out, r_pos = 4 + n_vec, 3
    with FakeDriver() as drv:
        plan = lw.prepare(base, sms=132)
        # per row and N tile: sum y^2 (RMSNorm), sum y and sum y^2 (LayerNorm)
        words = (2 if kind == "ln" else 1) * -(-N // BN)
        assert plan.share and plan.words_per_row == words
        assert (plan._res is not None) == res
        n_maps = 4 if res else 3
        kept = []  # every call's tensors stay alive: new addresses each call
        for i in range(3):  # new activations, residuals and outputs every call
            args = list(base)
            args[0], args[out] = torch.randn(M, K, generator=gen).bfloat16(), \
                torch.empty(M, N).bfloat16()
            if res:
                args[r_pos] = torch.randn(M, N, generator=gen).bfloat16()
            args = tuple(args)
            kept.append(args)
            enc = drv.utils.encoded
            plan.run(args)
            direct = drv.launches[-1]
            # the first call encodes every map, later ones all but W's (the same weight)
            assert plan._direct is not None
            assert drv.utils.encoded - enc == (n_maps - 1 if i else n_maps)
            head = 13 + 5 * n_maps
            if not res:
                assert direct[head] is None  # r_desc: the constexpr None
                head += 1
            assert direct[head] is None  # aux_desc (a norm backward's n): the constexpr None
            head += 1
            if res:
                m = direct[13 + 15]
                assert m.inputs[0] == args[r_pos].data_ptr() and m.inputs[5] == (M, N)
                # read into the output's staging tile: the output map's swizzle, type and box
                assert m.inputs[1:5] == direct[13 + 10].inputs[1:5]
            sbuf, epoch = direct[head + 4], direct[head + 5]
            assert direct[head:head + 3] == (M, N, K) and epoch == i + 1
            assert sbuf.dtype == torch.int64 and sbuf.numel() == -(-M // BM) * BM * words
            want_runtime = plan.bound(args, shared=(sbuf, epoch)).args
            assert want_runtime[3] is None if not res else want_runtime[3].base is args[r_pos]
            plan.launch.kernel[plan.grid](*want_runtime, *plan.tail)
            want = drv.launches[-1]
            assert direct[10:13] == (None, None, None)
            assert _same(direct[:10], want[:10])
            assert len(direct) == len(want) and _same(direct[13:], want[13:]), \
                (direct[13:head + 6], want[13:head + 6])
        # a residual seen before: its map from the cache
        enc = drv.utils.encoded
        plan.run(args)
        assert drv.utils.encoded == enc


# ---------------------------------------------------------------------------------------------
# GPU: the direct launch computes what Triton's launcher computes
# ---------------------------------------------------------------------------------------------

def _gpu_cases():
    """(name, f(x) -> y, K) for the ops at sizes that take each launch form: lowered RMSNorm,
    lowered RMSNorm with shared statistics (12 N tiles, 768 tiles: 4+ waves), lowered LayerNorm
    (a derived column sum), the post-norm Triton kernel (no descriptors, global scratch), the
    lowered post-norm with a residual and with a bias only."""
    dev, bf = "cuda", torch.bfloat16
    torch.manual_seed(0)
    K = 2048
    g = (1 + 0.1 * torch.randn(K, device=dev)).to(bf)
    beta = (0.1 * torch.randn(K, device=dev)).to(bf)
    w = (torch.randn(2048, K, device=dev) * K ** -0.5).to(bf)
    w3 = (torch.randn(3072, K, device=dev) * K ** -0.5).to(bf)
    gn = (1 + 0.1 * torch.randn(2048, device=dev)).to(bf)
    r = torch.randn(8192, 2048, device=dev, dtype=bf)
    bn = (0.1 * torch.randn(2048, device=dev)).to(bf)
    return [("rmsnorm_linear", lambda x: ops.rmsnorm_linear(x, g, w)),
            ("rmsnorm_linear shared", lambda x: ops.rmsnorm_linear(x, g, w3)),
            ("layernorm_linear", lambda x: ops.layernorm_linear(x, g, beta, w)),
            ("linear_rmsnorm", lambda x: ops.linear_rmsnorm(x, w, gn, residual=r)),
            # the lowered post-norm (hopper-ws{post-norm=true}): the residual's tensor map in
            # the fourth descriptor slot, and without a residual its constexpr None
            ("linear_rmsnorm lowered residual", lambda x: post.launch_postnorm(
                "linear_rmsnorm", "rms", x, w, gn, None, None, r, 1e-6, lowered="coop")),
            ("linear_rmsnorm lowered bias", lambda x: post.launch_postnorm(
                "linear_rmsnorm", "rms", x, w, gn, None, bn, None, 1e-6, lowered="coop"))]


@pytest.mark.gpu
def test_gpu_direct_launch_matches_tritons_launcher_bitwise():
    """Each op at T = 8192, K = 2048 through the direct launch (new inputs, an input seen
    again: its tensor maps from the cache, a side stream, a CUDA graph replayed with new data)
    equals, bitwise, the same op launched through Triton's runner (taken while a launch hook is
    registered) on the same inputs."""
    from triton import knobs
    xs = [torch.randn(8192, 2048, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    hook = lambda *a: None  # noqa: E731
    with torch.no_grad():
        for name, f in _gpu_cases():
            f(xs[0])  # plans, compiles
            knobs.runtime.launch_enter_hook.add(hook)
            try:
                assert dl.hooks_registered()
                want = [f(x).clone() for x in xs]
            finally:
                knobs.runtime.launch_enter_hook.remove(hook)
            got = [f(x) for x in xs] + [f(xs[0])]
            for i, y in enumerate(got):
                assert torch.equal(y, want[i % 3]), (name, i)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                ys = f(xs[1])
            torch.cuda.current_stream().wait_stream(s)
            assert torch.equal(ys, want[1]), name
            static = xs[2].clone()
            f(static)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = f(static)
            static.copy_(xs[0])
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(out, want[0]), name
            del graph


@pytest.mark.gpu
def test_gpu_ops_take_the_direct_launch_and_reuse_tensor_maps():
    """The ops' launch plans resolve Triton's launcher to its C function on the H200 (Triton
    3.6's CUDA launcher), and a call with tensors at addresses seen before encodes no tensor
    map."""
    from triton.runtime import driver
    from normfuse.ops import prenorm_linear as pre
    utils = driver.active.utils
    real, count = utils.fill_tma_descriptor, [0]

    def counting(*a):
        count[0] += 1
        return real(*a)
    with torch.no_grad():
        for name, f in _gpu_cases():
            x = torch.randn(8192, 2048, device="cuda", dtype=torch.bfloat16)
            f(x)
            f(x)
            utils.fill_tma_descriptor = counting
            try:
                for _ in range(5):
                    f(x)  # the output is freed and reallocated at the same address
            finally:
                utils.fill_tma_descriptor = real
            assert count[0] == 0, (name, count[0])
    lowered = [p.lowered for p in pre._PRE_PLANS.values() if p.lowered is not None]
    assert lowered and all(p._direct is not None for p in lowered)
    post_lowered = [p.lowered for p in post._POST_PLANS.values() if p.lowered is not None]
    assert {p._res is not None for p in post_lowered} == {True, False}  # with and without
    assert all(p._direct is not None for p in post_lowered)
    assert all(isinstance(p.runner, dl.DirectLaunch) for p in post._POST_PLANS.values()
               if p.runner is not None)
