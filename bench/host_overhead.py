"""Host time of one op call with every kernel launch stubbed out (CPU; no GPU needed).

    PYTHONPATH=python python3 bench/host_overhead.py [--calls 2000] [--json out.json]
    PYTHONPATH=python python3 bench/host_overhead.py --breakdown [pre|post]   (layer by layer)

What a call costs on the host up to Triton's launcher: the public function, the torch.library
op's dispatch, validation, the launch plan (or, before plans, the prepared launch and
`normfuse.jit`'s specialization), the lowered kernel's arguments (views, TMA descriptors,
shared-statistics workspace) and the output allocation. Kernels are compiled for sm_90 once (the
first call); Triton's `CompiledKernel.__getitem__` returns a launcher that does nothing (no
module is loaded: a stand-in function handle, the cluster occupancy answered up front), CPU
tensors stand in for CUDA ones (the device facts are stubbed: an sm_90 GPU with 132 SMs), so the
hopper-ws (lowered) path runs as on the GPU, descriptors included. Not included: Triton's own
launcher (its Python wrapper, the TMA descriptor encoding, the driver call); the output's CPU
allocation stands in for the CUDA caching allocator's (glibc told to keep freed memory).

Cases: rmsnorm_linear and layernorm_linear at the H200 cell T = 8192, K = N = 2048 (the
persistent 128x256 lowered kernel, shared statistics for RMSNorm); Llama's q / k / v as one
rmsnorm_linear_split call and as three rmsnorm_linear calls; linear_rmsnorm; a BERT
block's linear_layernorm ([16, 512, 1024] activations, bias and residual);
RMSNormLinear in eval mode; the post-norm ops' training forward (postnorm_linear_fwd, with a
residual); a training step of rmsnorm_linear (forward + backward at K = N = 512;
its CPU torch ops, the dW matmul and the column sums, are included, so that figure is an upper
bound of the host time). The script runs against older checkouts too (the stubs are applied
where the names exist), which is how NOTES' before/after figures were taken.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


DRIVER = None  # the fake driver of --stub launcher


def _set(mod, name, value):
    if mod is not None and hasattr(mod, name):
        setattr(mod, name, value)


def stub_device(stub: str = "runner") -> None:
    """Make the fused path run on CPU tensors with launches that do nothing. `stub="runner"`:
    Triton's runner (`CompiledKernel.__getitem__`) does nothing; `stub="launcher"`: Triton's
    own launcher runs (its Python: the runner, the scratch allocation, the tensor-descriptor
    wrapper), only the generated C launch function and the tensor-map encoding are stubbed
    (normfuse.testing.fake_driver)."""
    import importlib

    import triton.compiler.compiler as tcc
    import normfuse.compiler as comp

    def opt(name):
        try:
            return importlib.import_module(name)
        except ImportError:
            return None
    pre, post = opt("normfuse.ops.prenorm_linear"), opt("normfuse.ops.postnorm_linear")
    training, common = opt("normfuse.ops.training"), opt("normfuse.ops.common")
    functional, inference = opt("normfuse.ops.functional"), opt("normfuse.ops.inference")
    launch, runtime = opt("normfuse.lowering.launch"), opt("normfuse.lowering.runtime")
    device = opt("normfuse.device")  # where the launch paths read device facts (function-local)
    norm = opt("normfuse.ops.norm")  # the standalone norm's kernels (the cublas plan's backward)

    if stub == "launcher":
        import torch
        import triton
        from normfuse.testing.fake_driver import FakeDriver
        global DRIVER
        DRIVER = FakeDriver(c_launch=lambda *a: None).__enter__()
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))
    else:
        tcc.CompiledKernel.__getitem__ = lambda self, grid: (lambda *a, **k: None)
    if stub == "runner" and device is not None and hasattr(device, "cluster_occupancy"):
        # no module to load: a stand-in function handle, and the driver's cluster occupancy
        # answered up front (what normfuse.device asks once per loaded kernel; the per-call path
        # after it is what is timed)
        def init_handles(self):
            if self.module is None:
                self.module, self.function = "stub", id(self)
                md = self.metadata
                device._OCCUPANCY[(self.function, int(md.shared), int(md.num_ctas or 1))] = 7
        tcc.CompiledKernel._init_handles = init_handles
    real_target = comp._target
    comp._target = lambda t, name="kernel", passes=(): real_target("cuda:90" if t is None else t,
                                                                    name, passes)
    for m in (pre, post, training, common, launch, inference, device, norm):
        _set(m, "sm_count", lambda d: 132)
    _set(training, "_sms", lambda d: 132)
    _set(pre, "_ensure_allocator", lambda: None)
    _set(pre, "_check_hopper", lambda op, d: None)
    _set(post, "check_hopper", lambda op, d: None)
    _set(training, "_check_devices", lambda op, devs: None)
    for m in (functional, training, inference):
        _set(m, "fused_unavailable", lambda d: None)
    if common is not None:
        common._UNAVAILABLE.clear()
        common.fused_unavailable = lambda d: None
    if launch is not None:
        launch.LoweredLaunch.why_not = lambda self, args: None
    if stub == "launcher" and hasattr(device, "cuda_state"):
        # the current CUDA state as torch's C functions answer it (on the GPU each is one C call;
        # the launch paths ask through normfuse.device.cuda_state): the shared statistics'
        # workspace runs as on the GPU, per (device, stream)
        device.cuda_state.capturing = bool  # () -> False, a builtin like the C query
        device.cuda_state.stream = abs  # (index) -> a stream handle
        device.cuda_state.device = int  # () -> 0
    elif runtime is not None:
        import torch
        sbuf = torch.zeros(3 * 8192, dtype=torch.int64)
        runtime.SharedStats.take = classmethod(lambda cls, dev, M, bm, *a, **k: (sbuf, 1))
    if pre is not None and not hasattr(pre, "sm_count") or common is None:
        # older checkouts: the device check sits in _check_inputs
        real_check = pre._check_inputs

        def check(*a, **k):
            try:
                real_check(*a, **k)
            except ValueError as e:
                if "must be CUDA tensors" not in str(e):
                    raise
        pre._check_inputs = check
        _set(post, "_check_inputs", check)


def cases(torch):
    import normfuse.ops as ops
    from normfuse.nn import RMSNormLinear
    gen = torch.Generator().manual_seed(0)

    def r(*s, scale=1.0):
        return (torch.randn(*s, generator=gen) * scale).bfloat16()
    M, K, N = 8192, 2048, 2048
    x, g, b = r(M, K), 1 + r(K, scale=0.1), r(K, scale=0.1)
    w = r(N, K, scale=K ** -0.5)
    gn = 1 + r(N, scale=0.1)
    m = RMSNormLinear(K, N, dtype=torch.bfloat16).eval()
    Mt, Kt, Nt = 64, 512, 512
    xr, gr, wr = (t.clone().requires_grad_(True) for t in (r(Mt, Kt), 1 + r(Kt, scale=0.1),
                                                           r(Nt, Kt, scale=Kt ** -0.5)))
    dy = r(Mt, Nt)

    def step():
        for t in (xr, gr, wr):
            t.grad = None
        ops.rmsnorm_linear(xr, gr, wr).backward(dy)

    def module():  # (measured inside one no_grad, as a model's forward runs)
        return m(x)
    # the post-norm ops' training forward (the custom op autograd calls), T = 8192, K = N = 2048
    post_fwd = getattr(torch.ops.normfuse, "postnorm_linear_fwd", None)
    rt = r(M, N)

    def train_fwd():
        return post_fwd(x, w, gn, None, None, rt, 1e-6, 0.0, False)
    # a BERT block's post-norm: [16, 512, 1024] activations, bias, residual, LayerNorm
    xb, rb = r(16, 512, 1024), r(16, 512, 1024)
    wb, bb = r(1024, 1024, scale=1024 ** -0.5), r(1024, scale=0.1)
    gb, betab = 1 + r(1024, scale=0.1), r(1024, scale=0.1)
    # Llama's q / k / v (2048 / 512 / 512) as one split GEMM and as three fused calls
    qkv = [r(n, K, scale=K ** -0.5) for n in (2048, 512, 512)]
    return {"rmsnorm_linear": lambda: ops.rmsnorm_linear(x, g, w),
            "rmsnorm_linear_split q/k/v (one call)": lambda: ops.rmsnorm_linear_split(x, g, qkv),
            "rmsnorm_linear q, k, v (three calls)": lambda: [ops.rmsnorm_linear(x, g, wi)
                                                             for wi in qkv],
            "layernorm_linear": lambda: ops.layernorm_linear(x, g, b, w),
            "linear_rmsnorm": lambda: ops.linear_rmsnorm(x, w, gn),
            "linear_layernorm 3-D, bias, residual (BERT block)": lambda: ops.linear_layernorm(
                xb, wb, gb, betab, 1e-12, bb, rb),
            "RMSNormLinear eval (no_grad)": module,
            "rmsnorm_linear training step": step,
            **({"linear_rmsnorm training forward (postnorm_linear_fwd)": train_fwd}
               if post_fwd is not None else {})}


def breakdown(torch, calls: int) -> dict:
    """rmsnorm_linear's host time layer by layer (--stub launcher): each layer called directly
    with what the layer above passes it, after a warm-up call; a layer's own time is its figure
    minus the next one's. The torch.library op (the dispatcher, which an eager call skips) is
    timed alongside."""
    import normfuse.ops as ops
    from normfuse.ops import inference
    gen = torch.Generator().manual_seed(0)
    M, K, N = 8192, 2048, 2048
    x = torch.randn(M, K, generator=gen).bfloat16()
    g = (1 + 0.1 * torch.randn(K, generator=gen)).bfloat16()
    w = (torch.randn(N, K, generator=gen) * K ** -0.5).bfloat16()
    ops.rmsnorm_linear(x, g, w)
    call = inference.pre_call(x, g, None, [w], [None], 1e-6)
    plan, low = call.plan, call.plan.lowered
    y = torch.empty(M, N, dtype=x.dtype)
    tensors = (x, *call.pre, y, *call.post)
    args = tensors + plan.tail
    low.run(args)
    d = low._direct
    ea, eb, ec = (m(t) for m, t in zip(low._maps, (x, call.pre[1], y)))
    sbuf, epoch = low._shared(args)
    # (None: the template's r_desc, no residual)
    full = (*ea, *eb, *ec, None, low.M, low.N, low.K, low._params(args), sbuf, epoch, *low.tail)
    pre_op = torch.ops.normfuse.prenorm_linear.default
    layers = {
        "public function (ops.rmsnorm_linear)": lambda: ops.rmsnorm_linear(x, g, w),
        "op implementation (inference.prenorm_linear)": lambda: inference.prenorm_linear(
            x, g, None, [w], [None], 1e-6, 0.0, False, True),
        "launch-ready call (_PreCall: output, plan)": lambda: call(x),
        "LaunchPlan.run": lambda: plan.run(tensors),
        "LoweredPlan.run": lambda: low.run(args),
        "DirectLaunch.launch": lambda: d.launch(*full),
        "C launch (stub)": lambda: d.c_launch(1, 1, 1, 0, 0, 0, 0, None, None, None, None, None,
                                              None, *full),
    }
    out = _layer_times(layers, calls)
    name = "torch.library op (the dispatcher, then the implementation)"
    out[name] = measure(lambda: pre_op(x, g, None, [w], [None], 1e-6, 0.0, False, True), calls)
    print(f"  [not on the eager path] {name}: {out[name]:.2f} us")
    return out


def breakdown_post(torch, calls: int) -> dict:
    """linear_layernorm's host time layer by layer (--stub launcher), a BERT block's call
    ([16, 512, 1024] activations, bias and residual), as `breakdown` does for the pre-norm op."""
    import normfuse.ops as ops
    from normfuse.ops import inference
    gen = torch.Generator().manual_seed(0)
    B, T, K, N = 16, 512, 1024, 1024

    def r(*s, scale=1.0):
        return (torch.randn(*s, generator=gen) * scale).bfloat16()
    x, res, w = r(B, T, K), r(B, T, N), r(N, K, scale=K ** -0.5)
    g, beta, b = 1 + r(N, scale=0.1), r(N, scale=0.1), r(N, scale=0.1)
    ops.linear_layernorm(x, w, g, beta, 1e-5, b, res)
    call = inference.post_call(x, w, g, beta, b, res, 1e-5, 0.0, True)
    plan = call.plan
    tensors = (x, *call.pre, res, *call.mid, x.new_empty(call.view))
    layers = {
        "public function (ops.linear_layernorm)": lambda: ops.linear_layernorm(
            x, w, g, beta, 1e-5, b, res),
        "op implementation (inference.postnorm_linear)": lambda: inference.postnorm_linear(
            x, w, g, beta, b, res, 1e-5, 0.0, True),
        "launch-ready call (_PostCall: output, plan)": lambda: call(x, res),
        "LaunchPlan.run": lambda: plan.run(tensors),
        "LoweredPlan.run": lambda: plan.lowered.run(tensors + plan.tail),
    }
    return _layer_times(layers, calls)


def _layer_times(layers: dict, calls: int) -> dict:
    """Each layer's us per call, printed with its own share (its figure less the next one's)."""
    out = {name: measure(f, calls) for name, f in layers.items()}
    names = list(out)
    for i, name in enumerate(names):
        own = out[name] - (out[names[i + 1]] if i + 1 < len(names) else 0.0)
        print(f"  {name}: {out[name]:.2f} us (own {own:.2f})")
    return out


def measure(f, calls: int, rounds: int = 40) -> float:
    """us per call: the calling thread's CPU time (the machine is shared: wall time counts the
    other processes' time slices), the best of `rounds` rounds of `calls` calls."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(calls):
            f()
        best = min(best, (time.thread_time() - t0) / calls * 1e6)
    return best


def _cached_malloc() -> None:
    """Re-run this script with glibc keeping freed memory (no mmap / munmap per output
    allocation): CPU allocations then cost about what the CUDA caching allocator's do."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(1 << 30),
                   MALLOC_TRIM_THRESHOLD_=str(1 << 31), MALLOC_TOP_PAD_=str(1 << 28))
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def main(argv=None) -> int:
    _cached_malloc()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="calls per round (40 rounds)")
    ap.add_argument("--json", default=None, help="write {case: us per call} here")
    ap.add_argument("--stub", choices=["launcher", "runner"], default="launcher",
                    help="launcher: only Triton's C launch function and the tensor-map encoding "
                    "are stubbed (default); runner: Triton's whole launcher is (older figures)")
    ap.add_argument("--breakdown", nargs="?", const="pre", choices=["pre", "post"],
                    help="layer by layer (with --stub launcher): rmsnorm_linear (pre, the "
                    "default) or a BERT block's linear_layernorm (post)")
    ap.add_argument("--profile", default=None, metavar="CASE",
                    help="cProfile CASE's calls instead of timing every case")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch
    stub_device(args.stub)
    if args.breakdown:
        if args.stub != "launcher":
            ap.error("--breakdown needs --stub launcher")
        if args.breakdown == "post":
            print("linear_layernorm, [16, 512, 1024] x [1024, 1024], bias, residual, us per call "
                  "by layer:")
            out = breakdown_post(torch, args.calls)
        else:
            print("rmsnorm_linear, T=8192, K=N=2048, us per call by layer:")
            out = breakdown(torch, args.calls)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(out, fh, indent=1)
        return 0
    out = {}
    for name, f in cases(torch).items():
        if args.profile is not None and name != args.profile:
            continue
        f()  # compiles
        n = max(1, args.calls // 100) if "training" in name else args.calls
        if args.profile is not None:
            import cProfile
            import pstats
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(n):
                f()
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(25)
            continue
        enc = DRIVER.utils.encoded if DRIVER is not None else 0
        with torch.no_grad() if "no_grad" in name else contextlib.nullcontext():
            out[name] = measure(f, n)
        extra = ""
        if DRIVER is not None:
            extra = (f" ({(DRIVER.utils.encoded - enc) / (40 * n):.2f} tensor maps encoded per "
                     "call)")
        print(f"{name}: {out[name]:.1f} us per call{extra}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
