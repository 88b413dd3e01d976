"""GPU measurements of the op layer (issue 19): host time, stream vs CUDA-graph replay, and the
pre-norm backward plans.

    PYTHONPATH=python python3 -m normfuse.repro.bench_ops --out $OUT [--part all|host|plans]
                                                          [--kinds rms[,ln]] [--calls 200]

host (T = 8192, K = N = 2048, bf16, no_grad): for rmsnorm_linear, RMSNormLinear (eval),
layernorm_linear, linear_rmsnorm, and as baselines cuBLAS (F.linear) and eager F.rms_norm +
F.linear:
  - host_us: the host's time to issue one call (perf_counter over --calls calls, no sync inside;
    goal <= 20 us for the normfuse cases);
  - launch_path: 'direct' (normfuse.direct_launch) or 'triton' (Triton's runner);
    tensor_maps_encoded_per_call: Triton's fill_tma_descriptor calls per call (0 once the
    addresses repeat: the maps are cached);
  - stream_ms: per call, --calls calls back to back on the stream (CUDA events): the time a model
    sees, host and GPU together;
  - graph_ms: per call, the same calls captured in one CUDA graph and replayed (no host work);
  - stream_over_graph: stream_ms / graph_ms (goal: <= 1.1; 1.0 means the host keeps up).
plans (T = 8192; (K, N) in (2048, 3072), (2048, 11264), (5632, 2048): Llama-style q/k/v, gate/up,
down shapes), forward + backward (gradients of x, the norm weight and W) of:
  - ours_fused / ours_cublas / ours_rowdot: rmsnorm_linear (layernorm_linear with --kinds ln)
    under each pre-norm backward plan (normfuse.ops.training.PRENORM_BWD_PLANS; "fused" runs dY
    W in the norm-backward kernel, "cublas" runs it on cuBLAS then the norm backward without the
    GEMM, "rowdot" one dX kernel whose row sums come from dY and the saved forward output);
  - compiled: torch.compile (inductor, static shapes) of F.rms_norm + F.linear; eager: the same
    uncompiled; each plan's gradients against the compiled ones (max relative Frobenius error).
Records go to ops.json (a list of dicts, every piece guarded: an error is recorded and the rest
goes on) and ops.md. About 2-3 minutes on the H200 (torch.compile's compilations are most of it).
The host part also times rmsnorm_linear layer by layer (`host_layers`: the public function, the
op's implementation, the launch-ready call, the launch plan, the lowered plan, the direct C
launch; Triton's own launcher of the same kernel, and the torch.library op, for comparison).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

PLAN_SHAPES = [(2048, 3072), (2048, 11264), (5632, 2048)]


def _env() -> dict:
    import torch
    import triton
    env = {"torch": torch.__version__, "triton": triton.__version__,
           "date": time.strftime("%Y-%m-%d")}
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name()
    return env


# ---------------------------------------------------------------------------------------------
# Host time, stream vs graph replay
# ---------------------------------------------------------------------------------------------

def _stream_ms(fn, calls: int) -> tuple[float, float]:
    """(host us per call, stream ms per call) of `calls` back-to-back calls."""
    import torch
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t0) / calls * 1e6
    e1.record()
    torch.cuda.synchronize()
    return host, e0.elapsed_time(e1) / calls


def _graph_ms(fn, calls: int, replays: int = 5) -> float:
    """ms per call of `calls` calls captured in one CUDA graph, replayed."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(replays):
        g.replay()
    e1.record()
    torch.cuda.synchronize()
    del g
    return e0.elapsed_time(e1) / (replays * calls)


class _EncodeCounter:
    """Counts Triton's tensor-map encodings (`fill_tma_descriptor`, which Triton's launcher calls
    through the active driver's utils on every launch with host descriptors) while active."""

    def __init__(self):
        from triton.runtime import driver
        self.utils = driver.active.utils
        self.real = self.utils.fill_tma_descriptor
        self.count = 0

    def __enter__(self):
        def counting(*a):
            self.count += 1
            return self.real(*a)
        self.utils.fill_tma_descriptor = counting
        return self

    def __exit__(self, *exc):
        self.utils.fill_tma_descriptor = self.real


def _launch_path(fn) -> str:
    """Which launch path one call of `fn` takes: 'direct' (normfuse.direct_launch: Triton's C
    launch function called with cached tensor maps) or 'triton' (Triton's runner)."""
    try:
        from normfuse.direct_launch import DirectLaunch
    except ImportError:
        return "triton"
    import triton.compiler.compiler as tcc
    seen = []
    saved = DirectLaunch.launch_on, DirectLaunch.__call__, tcc.CompiledKernel.__getitem__

    def launch_on(self, *a):
        seen.append("direct")
        return saved[0](self, *a)

    def call(self, *a):
        seen.append("direct")
        return saved[1](self, *a)

    def getitem(self, grid):
        seen.append("triton")
        return saved[2](self, grid)
    DirectLaunch.launch_on, DirectLaunch.__call__, tcc.CompiledKernel.__getitem__ = \
        launch_on, call, getitem
    try:
        fn()
    finally:
        DirectLaunch.launch_on, DirectLaunch.__call__, tcc.CompiledKernel.__getitem__ = saved
    return "direct" if "direct" in seen else "triton"


def host_layers(calls: int, M: int = 8192, K: int = 2048, N: int = 2048) -> list[dict]:
    """rmsnorm_linear's host time layer by layer on this host (each layer called directly with
    what the layer above passes it; host us per call over `calls` calls, no sync inside), and
    Triton's own launcher of the same lowered kernel (its runner with TmaArg descriptors: the
    path before normfuse.direct_launch) for comparison."""
    import torch
    import normfuse.ops as ops
    from normfuse.ops import inference
    torch.manual_seed(0)
    bf, dev = torch.bfloat16, "cuda"
    x = torch.randn(M, K, device=dev, dtype=bf)
    g = (1 + 0.1 * torch.randn(K, device=dev)).to(bf)
    w = (torch.randn(N, K, device=dev) * K ** -0.5).to(bf)
    recs = []
    with torch.no_grad():
        ops.rmsnorm_linear(x, g, w)
        call = inference.pre_call(x, g, None, [w], [None], 1e-6)
        if call is None or call.plan.lowered is None:
            return [dict(part="layers", layer="(setup)", error="no lowered launch-ready call")]
        plan, low = call.plan, call.plan.lowered
        y = torch.empty(M, N, device=dev, dtype=bf)
        tensors = (x, *call.pre, y, *call.post)
        args = tensors + plan.tail
        low.run(args)
        d = low._direct
        layers = {
            "public function (ops.rmsnorm_linear)": lambda: ops.rmsnorm_linear(x, g, w),
            "op implementation (inference.prenorm_linear)": lambda: inference.prenorm_linear(
                x, g, None, [w], [None], 1e-6, 0.0, False, True),
            "launch-ready call (output + plan)": lambda: call(x),
            "LaunchPlan.run": lambda: plan.run(tensors),
            "LoweredPlan.run": lambda: low.run(args),
        }
        if d is not None:
            ea, eb, ec = (m(t) for m, t in zip(low._maps, (x, call.pre[1], y)))
            sbuf, epoch = low._shared(args)
            full = (*ea, *eb, *ec, None, None, low.M, low.N, low.K, low._params(args), sbuf,
                    epoch, None, None, None, *low.tail)  # (Nones: r_desc, aux_desc, c1..c3_desc)
            layers["DirectLaunch.launch (C function, cached tensor maps)"] = \
                lambda: d.launch(*full)
        runtime = low._runtime(args, None)
        runner = low.launch.kernel[low.grid]
        layers["[before] Triton's launcher (runner, TmaArg descriptors)"] = \
            lambda: runner(*runtime, *low.tail)
        pre_op = torch.ops.normfuse.prenorm_linear.default
        layers["[not on the eager path] torch.library op"] = lambda: pre_op(
            x, g, None, [w], [None], 1e-6, 0.0, False, True)
        for name, fn in layers.items():
            rec = dict(part="layers", layer=name, M=M, K=K, N=N, calls=calls)
            try:
                fn()
                rec["host_us"], _ = _stream_ms(fn, calls)
            except Exception as e:  # noqa: BLE001 - recorded, the rest goes on
                rec["error"] = f"{type(e).__name__}: {e}"
            print(f"[gpu_ops] layer {name}: {rec.get('host_us', rec.get('error'))}", flush=True)
            recs.append(rec)
    return recs


def host_part(calls: int, M: int = 8192, K: int = 2048, N: int = 2048) -> list[dict]:
    import torch
    import torch.nn.functional as F

    import normfuse.ops as ops
    from normfuse.nn import RMSNormLinear
    torch.manual_seed(0)
    bf, dev = torch.bfloat16, "cuda"
    x = torch.randn(M, K, device=dev, dtype=bf)
    g = (1 + 0.1 * torch.randn(K, device=dev)).to(bf)
    b = (0.1 * torch.randn(K, device=dev)).to(bf)
    w = (torch.randn(N, K, device=dev) * K ** -0.5).to(bf)
    gn = (1 + 0.1 * torch.randn(N, device=dev)).to(bf)
    m = RMSNormLinear(K, N, device=dev, dtype=bf).eval()
    # what a compiled graph calls: the torch.library ops through the dispatcher; a BERT block's
    # post-norm (bias, residual), and a GPT-2 Conv1D's weight [K, N] reinterpreted afresh every
    # call (Inductor's reinterpret_tensor; the weight registered as the fused modules do)
    from torch._C._dynamo.guards import _reinterpret_tensor
    from normfuse.ops.common import register_weights
    bn, bias, res = (0.1 * torch.randn(N, device=dev)).to(bf), torch.zeros(N, device=dev,
                                                                           dtype=bf), x[:, :N]
    res = res.contiguous()
    wkn = w.t().contiguous()  # [K, N], as a Conv1D holds it
    register_weights(wkn)
    post_op = torch.ops.normfuse.postnorm_linear.default
    pre_op = torch.ops.normfuse.prenorm_linear.default
    cases = {"rmsnorm_linear": lambda: ops.rmsnorm_linear(x, g, w),
             "RMSNormLinear eval": lambda: m(x),
             "layernorm_linear": lambda: ops.layernorm_linear(x, g, b, w),
             "linear_rmsnorm": lambda: ops.linear_rmsnorm(x, w, gn),
             "[compiled graph] postnorm_linear op, LN + bias + residual": lambda: post_op(
                 x, w, gn, bn, bias, res, 1e-12, 0.0, True),
             "[compiled graph] prenorm_linear op, LN, Conv1D weight alias": lambda: pre_op(
                 x, g, b, [_reinterpret_tensor(wkn, (N, K), (1, N), 0)], [None], 1e-5, 0.0,
                 True, True),
             "cublas F.linear": lambda: F.linear(x, w),
             "eager rms_norm + linear": lambda: F.linear(F.rms_norm(x, (K,), g, 1e-6), w)}
    recs = []
    with torch.no_grad():
        for name, fn in cases.items():
            rec = dict(part="host", case=name, M=M, K=K, N=N, calls=calls)
            try:
                for _ in range(5):
                    fn()
                _stream_ms(fn, calls)  # warm the stream loop once
                with _EncodeCounter() as enc:
                    rec["host_us"], rec["stream_ms"] = _stream_ms(fn, calls)
                rec["tensor_maps_encoded_per_call"] = enc.count / calls
                rec["launch_path"] = _launch_path(fn) if not name.startswith(("cublas", "eager")) \
                    else "torch"
                rec["graph_ms"] = _graph_ms(fn, min(calls, 50))
                rec["stream_over_graph"] = rec["stream_ms"] / rec["graph_ms"]
            except Exception as e:  # noqa: BLE001 - recorded, the rest goes on
                rec["error"] = f"{type(e).__name__}: {e}"
                rec["trace"] = traceback.format_exc(limit=6)
            print(f"[bench_ops] host {name}: " + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()
                if k in ("host_us", "stream_ms", "graph_ms", "stream_over_graph",
                         "tensor_maps_encoded_per_call", "launch_path", "error")),
                flush=True)
            recs.append(rec)
    return recs


# ---------------------------------------------------------------------------------------------
# The pre-norm backward plans
# ---------------------------------------------------------------------------------------------

def _do_bench(fn) -> float:
    import triton.testing
    return float(triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median"))


def _device_ms(fn, calls: int = 3) -> float:
    """The GPU time of one call: the kernels torch.profiler records (CUDA activity only),
    summed; the median of `calls` profiled calls after one warm-up call. do_bench's figure is
    the host's time when the host is slower than the device (a training op's Python); this is
    what the device did."""
    import statistics

    import torch

    from .profile_models import kernels_of
    fn()
    out = []
    for _ in range(calls):
        torch.cuda.synchronize()
        out.append(kernels_of(fn)[0])
    return statistics.median(out)


def _device_kernels(fn, top: int = 8) -> list:
    """The kernels of one call of `fn` (after a warm-up call), largest first: [name, device ms,
    launches] for the `top` largest, then one "(others)" row with the rest."""
    import torch

    from .profile_models import kernels_of
    fn()
    torch.cuda.synchronize()
    _, evs = kernels_of(fn)
    rows = [[e.key, e.device_time_total / 1e3, e.count] for e in evs if e.device_time_total > 0]
    rest = rows[top:]
    rows = rows[:top]
    if rest:
        rows.append(["(others)", sum(r[1] for r in rest), sum(r[2] for r in rest)])
    return rows


def plans_part(kinds, M: int = 8192, shapes=PLAN_SHAPES, *, device: str = "cuda", timer=None,
               compile_backend: str = "inductor", dtype=None, device_timer=None,
               kernel_lister=None) -> list[dict]:
    """`device`, `timer` (fn -> ms), `compile_backend` and `dtype` let the CPU test run this code
    path (the reference path, aot_eager, a fake timer). `device_timer` (fn -> ms of GPU work;
    default on CUDA: `_device_ms`) gives the *_device_ms fields beside do_bench's;
    `kernel_lister` (fn -> [[kernel, ms, launches], ...]; default on CUDA: `_device_kernels`)
    the *_kernels fields: where each plan's step spends its device time."""
    import torch
    import torch.nn.functional as F

    import normfuse.ops as ops
    from normfuse.ops import training
    from normfuse.reference import rel_err
    bench = timer or _do_bench
    dev_bench = device_timer or (_device_ms if str(device).startswith("cuda") else None)
    lister = kernel_lister or (_device_kernels if str(device).startswith("cuda") else None)
    dt = dtype or torch.bfloat16
    recs = []
    for kind in kinds:
        op = "rmsnorm_linear" if kind == "rms" else "layernorm_linear"
        eps = 1e-6 if kind == "rms" else 1e-5
        for K, N in shapes:
            rec = dict(part="plans", op=op, M=M, K=K, N=N)
            try:
                gen = torch.Generator(device=device).manual_seed(K * 7 + N)
                r = lambda *s, sc=1.0, sh=0.0: (torch.randn(*s, generator=gen, device=device)  # noqa: E731
                                                * sc + sh).to(dt)
                ins = [r(M, K), r(K, sc=0.1, sh=1.0), r(K, sc=0.1) if kind == "ln" else None,
                       r(N, K, sc=K ** -0.5)]
                ins = [t.requires_grad_(True) if t is not None else None for t in ins]
                dy = r(M, N)

                def ours(x, g, b, w):
                    return (ops.layernorm_linear(x, g, b, w, eps) if kind == "ln" else
                            ops.rmsnorm_linear(x, g, w, eps))

                def eager(x, g, b, w):
                    n = (F.layer_norm(x, (K,), g, b, eps) if kind == "ln" else
                         F.rms_norm(x, (K,), g, eps))
                    return F.linear(n, w)
                compiled = torch.compile(eager, backend=compile_backend, dynamic=False)

                def step(fn):
                    def run():
                        for t in ins:
                            if t is not None:
                                t.grad = None
                        fn(*ins).backward(dy)
                    return run

                def grads(fn):
                    step(fn)()
                    return [t.grad.clone() for t in ins if t is not None]
                ref = grads(compiled)
                for plan in training.PRENORM_BWD_PLANS:
                    old = training.PRENORM_BWD_PLAN[op]
                    training.PRENORM_BWD_PLAN[op] = plan
                    try:
                        got = grads(ours)
                        rec[f"grad_rel_err_{plan}_vs_compiled"] = max(
                            rel_err(a, b) for a, b in zip(got, ref))
                        rec[f"ours_{plan}_ms"] = bench(step(ours))
                        if dev_bench is not None:
                            rec[f"ours_{plan}_device_ms"] = dev_bench(step(ours))
                        if lister is not None:
                            rec[f"ours_{plan}_kernels"] = lister(step(ours))
                    finally:
                        training.PRENORM_BWD_PLAN[op] = old
                rec["compiled_ms"] = bench(step(compiled))
                rec["eager_ms"] = bench(step(eager))
                if dev_bench is not None:
                    rec["compiled_device_ms"] = dev_bench(step(compiled))
                    rec["eager_device_ms"] = dev_bench(step(eager))
                if lister is not None:
                    rec["compiled_kernels"] = lister(step(compiled))
                for plan in training.PRENORM_BWD_PLANS:
                    rec[f"ours_{plan}_over_compiled"] = rec[f"ours_{plan}_ms"] / rec["compiled_ms"]
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {e}"
                rec["trace"] = traceback.format_exc(limit=6)
            print(f"[bench_ops] plans {op} {M}x{K}x{N}: " + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in rec.items()
                if k.endswith(("_ms", "_compiled", "error"))), flush=True)
            recs.append(rec)
    return recs


def markdown(recs: list[dict], env: dict) -> str:
    lines = [f"# normfuse op layer on {env.get('gpu', '?')} ({env['date']}, torch {env['torch']}, "
             f"triton {env['triton']})", ""]
    host = [r for r in recs if r["part"] == "host"]
    if host:
        lines += ["## Host time, stream vs CUDA-graph replay (T=8192, K=N=2048, bf16)", "",
                  "Goal (issue 19 item 3): host us/call <= 20, stream/graph <= 1.1.", "",
                  "| case | host us/call | stream ms | graph ms | stream/graph | launch path | "
                  "tensor maps encoded/call |", "|---|---|---|---|---|---|---|"]
        for r in host:
            if "error" in r:
                lines.append(f"| {r['case']} | error: {r['error'][:80]} | | | | | |")
                continue
            lines.append(f"| {r['case']} | {r['host_us']:.1f} | {r['stream_ms']:.4f} | "
                         f"{r['graph_ms']:.4f} | {r['stream_over_graph']:.3f} | "
                         f"{r.get('launch_path', '?')} | "
                         f"{r.get('tensor_maps_encoded_per_call', float('nan')):.2f} |")
        lines.append("")
    layers = [r for r in recs if r["part"] == "layers"]
    if layers:
        lines += ["## rmsnorm_linear host time by layer (us per call, no sync inside)", "",
                  "Each layer called directly with what the layer above passes it; a layer's own "
                  "time is its figure minus the next one's.", "",
                  "| layer | host us/call |", "|---|---|"]
        for r in layers:
            v = f"{r['host_us']:.2f}" if "host_us" in r else f"error: {r.get('error', '')[:80]}"
            lines.append(f"| {r['layer']} | {v} |")
        lines.append("")
    plans = [r for r in recs if r["part"] == "plans"]
    if plans:
        names = [p for p in ("fused", "cublas", "rowdot")
                 if any(f"ours_{p}_ms" in r for r in plans)]
        lines += ["## Pre-norm forward + backward by backward plan (ms, T=8192)", "",
                  "| op | K | N | " + " | ".join(names) + " | torch.compile | eager | "
                  + " | ".join(f"{p}/compiled" for p in names) + " | grad err "
                  + " / ".join(names) + " |",
                  "|" + "---|" * (6 + 2 * len(names))]
        for r in plans:
            if "error" in r:
                lines.append(f"| {r['op']} | {r['K']} | {r['N']} | error: {r['error'][:80]} |"
                             + " |" * (2 + 2 * len(names)))
                continue
            lines.append(
                f"| {r['op']} | {r['K']} | {r['N']} | "
                + " | ".join(f"{r.get(f'ours_{p}_ms', float('nan')):.3f}" for p in names)
                + f" | {r['compiled_ms']:.3f} | {r['eager_ms']:.3f} | "
                + " | ".join(f"{r.get(f'ours_{p}_over_compiled', float('nan')):.2f}"
                             for p in names) + " | "
                + " / ".join(f"{r.get(f'grad_rel_err_{p}_vs_compiled', float('nan')):.1e}"
                             for p in names) + " |")
        dev = [r for r in plans if "eager_device_ms" in r]
        if dev:
            lines += ["", "The table above is do_bench's (no sync per step: the host's time where "
                      "the host is slower). The device's work per step (the kernels of one step, "
                      "torch.profiler, median of 3), ms:", "",
                      "| op | K | N | " + " | ".join(names) + " | torch.compile | eager |",
                      "|" + "---|" * (5 + len(names))]
            for r in dev:
                lines.append(f"| {r['op']} | {r['K']} | {r['N']} | "
                             + " | ".join(f"{r.get(f'ours_{p}_device_ms', float('nan')):.3f}"
                                          for p in names)
                             + f" | {r['compiled_device_ms']:.3f} | {r['eager_device_ms']:.3f} |")
        listed = [r for r in plans if any(k.endswith("_kernels") for k in r)]
        if listed:
            lines += ["", "Kernels of one step per plan (device ms, launches; largest first):", ""]
        for r in listed:
            lines += [f"### {r['op']} {r['M']}x{r['K']}x{r['N']}", ""]
            for p in [*names, "compiled"]:
                ks = r.get(f"ours_{p}_kernels" if p != "compiled" else "compiled_kernels")
                if not ks:
                    continue
                lines.append(f"- {p} ({sum(k[1] for k in ks):.3f} ms): " + "; ".join(
                    f"`{k[0][:60]}` {k[1]:.3f} x{k[2]}" for k in ks))
            lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or ".")
    ap.add_argument("--part", choices=["all", "host", "plans"], default="all")
    ap.add_argument("--kinds", default="rms", help="rms, ln or rms,ln (the plans part)")
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    env = _env()
    recs = []
    if args.part in ("all", "host"):
        recs += host_part(args.calls)
        try:
            recs += host_layers(args.calls)
        except Exception as e:  # noqa: BLE001 - recorded, the rest goes on
            recs.append(dict(part="layers", layer="(setup)", error=f"{type(e).__name__}: {e}"))
    if args.part in ("all", "plans"):
        from .warm import configure_torch
        configure_torch()  # (one static compile per shape: the same settings as the other benches)
        recs += plans_part([k for k in args.kinds.split(",") if k])
    for r in recs:
        r.update(env)
    with open(os.path.join(args.out, "ops.json"), "w") as f:
        json.dump(recs, f, indent=1)
    with open(os.path.join(args.out, "ops.md"), "w") as f:
        f.write(markdown(recs, env))
    print(markdown(recs, env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
