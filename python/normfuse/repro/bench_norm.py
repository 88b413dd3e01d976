"""GPU measurements of the standalone norm op pair (normfuse.ops.rms_norm / layer_norm, issue 21
item 3) against torch.compile, eager torch and transformers' LlamaRMSNorm.

    PYTHONPATH=python python3 -m normfuse.repro.bench_norm --out $OUT [--kinds rms,ln]
                                                           [--shapes 262144x1024,...] [--sweep]

Shapes (bf16): M = 262144 rows x N in {512, 1024, 2048} (the backward-sweep shapes of
docs/NOTES.md) and T = 8192 x N in {2048, 4096} (a model's hidden size). Per (kind, shape):
  - ours: `fwd` (no grad), `bwd` (the normfuse::norm_bwd op alone on saved statistics),
    `fwd_bwd` (the forward under autograd, then torch.autograd.grad of x and the weight (and
    bias) for a fixed dy);
  - old_bwd: the no-GEMM norm backward of the fused ops (`ops.training.norm_backward`, w=None,
    tiling "row": [M / 8, N] fp32 partials), what issue 21 item 3 measured at 0.74 ms;
  - compiled: torch.compile (inductor, static shapes, dynamo reset per shape) of F.rms_norm /
    F.layer_norm, `fwd_train` (its forward graph under grad mode) and `fwd_bwd`; eager: the same
    uncompiled, also `fwd` (no grad); llama (rms only): transformers' LlamaRMSNorm eager; liger
    (rms only, when liger_kernel imports): LigerRMSNorm;
  - `bwd` of the others = fwd_bwd - their forward under grad mode (`fwd_train`), an estimate.
Each time: triton.testing.do_bench median (L2 flushed), ms; GB/s counts the unavoidable
traffic (fwd: x read, y written; bwd: dy, x read, dx written; fwd_bwd: both). Errors: ours and
compiled against fp32 math on the same inputs (relative Frobenius), and ours bitwise repeated.
`--sweep`: the backward at M = 262144 (rms) under other tiles (ROWS x2, warps 16, STAGES 1/2/3),
to choose `normfuse.ops.norm.NORM_CONFIG_CHOICE` / the table. Writes norm.json and norm.md
under --out. About 40 s on the H200 (torch.compile's compilations most of it); --sweep adds
about 30 s.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import traceback

SHAPES = [(262144, 512), (262144, 1024), (262144, 2048), (8192, 2048), (8192, 4096)]
EPS = 1e-6


def _bench(fn) -> float:
    import triton
    return float(triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median"))


def _rel(a, b) -> float:
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def _inputs(kind, M, N):
    import torch
    g = torch.Generator(device="cuda").manual_seed(M + N)
    x = torch.randn(M, N, device="cuda", generator=g).bfloat16()
    w = (1 + 0.1 * torch.randn(N, device="cuda", generator=g)).bfloat16()
    b = (0.1 * torch.randn(N, device="cuda", generator=g)).bfloat16() if kind == "ln" else None
    dy = torch.randn(M, N, device="cuda", generator=g).bfloat16()
    return x, w, b, dy


def _eager_fn(kind, N):
    import torch.nn.functional as F
    if kind == "rms":
        return lambda x, w, b: F.rms_norm(x, (N,), w, EPS)
    return lambda x, w, b: F.layer_norm(x, (N,), w, b, EPS)


def _ours_fn(kind):
    import normfuse
    if kind == "rms":
        return lambda x, w, b: normfuse.ops.rms_norm(x, w, EPS)
    return lambda x, w, b: normfuse.ops.layer_norm(x, w, b, EPS)


def _fwd_bwd(fn, x, w, b, dy):
    """A closure: forward under autograd, then the gradients of x, w (, b) for dy."""
    import torch
    xs = x.detach().requires_grad_(True)
    ws = w.detach().requires_grad_(True)
    bs = b.detach().requires_grad_(True) if b is not None else None
    leaves = [t for t in (xs, ws, bs) if t is not None]

    def run():
        y = fn(xs, ws, bs)
        return torch.autograd.grad(y, leaves, dy)

    def fwd_train():
        return fn(xs, ws, bs)
    return run, fwd_train


def _no_grad(fn, x, w, b):
    import torch

    def run():
        with torch.no_grad():
            return fn(x, w, b)
    return run


def _gbs(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def bench_shape(kind: str, M: int, N: int, log) -> dict:
    import torch
    from normfuse.ops import norm as norm_ops
    from normfuse.ops.training import norm_backward as old_norm_backward
    is_ln = kind == "ln"
    x, w, b, dy = _inputs(kind, M, N)
    row = {"kind": kind, "M": M, "N": N, "dtype": "bf16", "ms": {}, "GBps": {}, "err": {}}
    mn2 = M * N * 2
    nbytes = {"fwd": 2 * mn2, "bwd": 3 * mn2, "fwd_bwd": 5 * mn2}

    def guard(name, f):
        try:
            f()
        except Exception as e:  # noqa: BLE001 - recorded, the rest goes on
            row.setdefault("errors", {})[name] = f"{type(e).__name__}: {e}"[:400]
            log(f"  {name}: {type(e).__name__}: {e}")
            traceback.print_exc()

    # ours
    ours = _ours_fn(kind)

    def do_ours():
        row["ms"]["ours.fwd"] = _bench(_no_grad(ours, x, w, b))
        run, _ = _fwd_bwd(ours, x, w, b, dy)
        row["ms"]["ours.fwd_bwd"] = _bench(run)
        y, rstd, mean = torch.ops.normfuse.norm_fwd(x, w, b, EPS, 0.0, is_ln)
        bwd = lambda: torch.ops.normfuse.norm_bwd(dy, x, w, rstd, mean, 0.0, is_ln, True,  # noqa: E731
                                                  is_ln)
        row["ms"]["ours.bwd"] = _bench(bwd)
        row["config"] = norm_ops.norm_config(N)  # the forward's tile
        row["bwd_config"] = norm_ops.norm_config(N, "plain", is_ln)  # the op's backward's
        row["bwd_programs_per_sm"] = next((v for k, v in norm_ops._PER_SM.items()
                                           if dict(k[4]).get("N") == N), None)
        # errors against fp32 math on the same inputs; the backward repeated bitwise
        ref = _eager_fn(kind, N)
        xs, ws = x.float().requires_grad_(True), w.float().requires_grad_(True)
        bs = b.float().requires_grad_(True) if b is not None else None
        yr = ref(xs, ws, bs)
        grads_r = torch.autograd.grad(yr, [t for t in (xs, ws, bs) if t is not None], dy.float())
        grads = run()
        row["err"]["ours.y"] = _rel(y, yr)
        for name, a, r in zip(("dx", "dw", "db"), grads, grads_r):
            row["err"][f"ours.{name}"] = _rel(a, r)
        again = run()
        row["bitwise_repeatable"] = all(torch.equal(a, c) for a, c in zip(grads, again))
        del xs, ws, bs, yr, grads_r, grads, again

    guard("ours", do_ours)

    def do_old():
        _, rstd, mean = torch.ops.normfuse.norm_fwd(x, w, b, EPS, 0.0, is_ln)
        row["ms"]["old_bwd"] = _bench(lambda: old_norm_backward(
            dy, None, x, rstd, mean, w, b, None, is_ln=is_ln))

    guard("old_bwd", do_old)

    torch._dynamo.reset()  # one shape per compilation: no recompile limit, no dynamic shapes
    impls = {"compiled": torch.compile(_eager_fn(kind, N), dynamic=False),
             "eager": _eager_fn(kind, N)}
    if kind == "rms":  # the RMSNorm modules models run: transformers' eager one and Liger's
        for name, module, cls in (("llama", "transformers.models.llama.modeling_llama",
                                   "LlamaRMSNorm"),
                                  ("liger", "liger_kernel.transformers.rms_norm", "LigerRMSNorm")):
            try:
                mod = getattr(importlib.import_module(module), cls)(N, eps=EPS).cuda().bfloat16()
                impls[name] = lambda x_, w_, b_, mod=mod: torch.func.functional_call(
                    mod, {"weight": w_}, (x_,))
            except Exception as e:  # noqa: BLE001
                row.setdefault("errors", {})[name] = str(e)[:200]
    for name, fn in impls.items():
        def do(name=name, fn=fn):
            if name != "compiled":  # (compiled: one compilation, the training graphs)
                row["ms"][f"{name}.fwd"] = _bench(_no_grad(fn, x, w, b))
            run, fwd_train = _fwd_bwd(fn, x, w, b, dy)
            row["ms"][f"{name}.fwd_bwd"] = _bench(run)
            row["ms"][f"{name}.fwd_train"] = _bench(fwd_train)
            row["ms"][f"{name}.bwd"] = row["ms"][f"{name}.fwd_bwd"] - row["ms"][f"{name}.fwd_train"]
            if name == "compiled":
                grads = run()
                xs, ws = x.float().requires_grad_(True), w.float().requires_grad_(True)
                bs = b.float().requires_grad_(True) if b is not None else None
                yr = _eager_fn(kind, N)(xs, ws, bs)
                grads_r = torch.autograd.grad(yr, [t for t in (xs, ws, bs) if t is not None],
                                              dy.float())
                for n_, a, r in zip(("dx", "dw", "db"), grads, grads_r):
                    row["err"][f"compiled.{n_}"] = _rel(a, r)
        guard(name, do)
    for k, v in row["ms"].items():
        part = k.rsplit(".", 1)[-1] if "." in k else "bwd"
        if part in nbytes and v > 0:
            row["GBps"][k] = round(_gbs(nbytes[part], v))
    c = row["ms"]
    if "ours.fwd_bwd" in c and "compiled.fwd_bwd" in c:
        row["ours_over_compiled_fwd_bwd"] = c["ours.fwd_bwd"] / c["compiled.fwd_bwd"]
    if "ours.bwd" in c and "compiled.bwd" in c:
        row["ours_over_compiled_bwd"] = c["ours.bwd"] / c["compiled.bwd"]
    return row


SWEEP = [dict(), dict(STAGES=1), dict(STAGES=2), dict(ROWS_X=2), dict(ROWS_X=2, STAGES=2),
         dict(num_warps=16), dict(num_warps=4, ROWS_X=0.5)]


def sweep(M: int, Ns, log) -> list:
    """The backward alone (rms, bf16) under the tiles in SWEEP (ROWS_X: the default rows x)."""
    import torch
    from normfuse.ops import norm as norm_ops
    out = []
    for N in Ns:
        x, w, _, dy = _inputs("rms", M, N)
        _, rstd, mean = torch.ops.normfuse.norm_fwd(x, w, None, EPS, 0.0, False)
        base = norm_ops.norm_config(N)
        for s in SWEEP:
            over = {k: v for k, v in s.items() if k != "ROWS_X"}
            if "ROWS_X" in s:
                over["ROWS"] = max(1, int(base["ROWS"] * s["ROWS_X"]))
            rec = {"M": M, "N": N, "override": over}
            norm_ops.NORM_CONFIG_CHOICE[N] = over
            norm_ops._PER_SM.clear()
            try:
                rec["ms"] = _bench(lambda: torch.ops.normfuse.norm_bwd(
                    dy, x, w, rstd, mean, 0.0, False, True, False))
                rec["GBps"] = round(_gbs(3 * M * N * 2, rec["ms"]))
                rec["config"] = norm_ops.norm_config(N)
                rec["programs_per_sm"] = next(iter(norm_ops._PER_SM.values()), None)
            except Exception as e:  # noqa: BLE001
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
            log(f"  sweep N={N} {over}: {rec.get('ms', rec.get('error'))}")
            out.append(rec)
        norm_ops.NORM_CONFIG_CHOICE.pop(N, None)
        norm_ops._PER_SM.clear()
        x = dy = rstd = mean = None  # (freed before the next N)
        torch.cuda.empty_cache()
    return out


def format_markdown(result) -> str:
    lines = [f"# Standalone norm vs torch.compile ({result['env'].get('gpu', '?')}, torch "
             f"{result['env']['torch']}, triton {result['env']['triton']})", "",
             "ms (do_bench median, L2 flushed); bwd of compiled / eager / llama / liger = fwd_bwd "
             "- forward under grad mode (an estimate); ours.bwd: the backward op alone; compiled "
             "fwd: its forward under grad mode.", "",
             "| kind | M x N | ours fwd | ours bwd | ours fwd+bwd | compiled fwd | compiled "
             "bwd | compiled fwd+bwd | eager fwd+bwd | llama fwd+bwd | liger fwd+bwd | old bwd "
             "| ours/compiled fwd+bwd | ours bwd GB/s |",
             "|---|---|" + "---|" * 12]

    def f(v):
        return "-" if v is None else f"{v:.3f}"
    for r in result["rows"]:
        c = r["ms"]
        ratio = r.get("ours_over_compiled_fwd_bwd")
        lines.append(
            f"| {r['kind']} | {r['M']} x {r['N']} | {f(c.get('ours.fwd'))} | {f(c.get('ours.bwd'))}"
            f" | {f(c.get('ours.fwd_bwd'))} | {f(c.get('compiled.fwd_train'))} | "
            f"{f(c.get('compiled.bwd'))} | {f(c.get('compiled.fwd_bwd'))} | "
            f"{f(c.get('eager.fwd_bwd'))} | {f(c.get('llama.fwd_bwd'))} | "
            f"{f(c.get('liger.fwd_bwd'))} | {f(c.get('old_bwd'))} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} | {r['GBps'].get('ours.bwd', '-')} |")
    lines += ["", "Errors vs fp32 math (relative Frobenius), repeatability:", ""]
    for r in result["rows"]:
        errs = ", ".join(f"{k} {v:.1e}" for k, v in r["err"].items())
        lines.append(f"- {r['kind']} {r['M']} x {r['N']}: {errs}; bitwise repeatable: "
                     f"{r.get('bitwise_repeatable')}; config {r.get('config')}, backward CTAs "
                     f"per SM {r.get('bwd_programs_per_sm')}"
                     + (f"; errors: {r['errors']}" if r.get("errors") else ""))
    if result.get("sweep"):
        lines += ["", "## Backward tiles (rms)", "", "| M x N | override | ms | GB/s | config | "
                  "CTAs/SM |", "|---|---|---|---|---|---|"]
        for s in result["sweep"]:
            lines.append(f"| {s['M']} x {s['N']} | {s['override']} | {f(s.get('ms'))} | "
                         f"{s.get('GBps', s.get('error', '-'))} | {s.get('config')} | "
                         f"{s.get('programs_per_sm')} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m normfuse.repro.bench_norm",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--out", required=True, help="directory for norm.json and norm.md")
    p.add_argument("--kinds", default="rms,ln", help="rms, ln or both (default rms,ln)")
    p.add_argument("--shapes", default=None,
                   help="MxN,... (default: " + ",".join(f"{m}x{n}" for m, n in SHAPES) + ")")
    p.add_argument("--sweep", action="store_true",
                   help="also time the backward (rms, M = 262144) under other tiles")
    a = p.parse_args(argv)
    import torch
    import triton
    if not torch.cuda.is_available():
        print("bench_norm: needs a CUDA GPU", file=sys.stderr)
        return 2
    shapes = SHAPES if a.shapes is None else [tuple(int(v) for v in s.split("x"))
                                              for s in a.shapes.split(",")]
    os.makedirs(a.out, exist_ok=True)

    def log(msg):
        print(msg, flush=True)
    result = {"env": {"torch": torch.__version__, "triton": triton.__version__,
                      "gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d")},
              "rows": []}
    t0 = time.time()
    for kind in a.kinds.split(","):
        for M, N in shapes:
            log(f"{kind} {M} x {N}")
            result["rows"].append(bench_shape(kind, M, N, log))
            torch.cuda.empty_cache()
            log(f"  {json.dumps(result['rows'][-1]['ms'])}")
    if a.sweep:
        result["sweep"] = sweep(262144, [n for m, n in shapes if m == 262144] or [1024], log)
    result["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(a.out, "norm.json"), "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    md = format_markdown(result)
    with open(os.path.join(a.out, "norm.md"), "w") as fh:
        fh.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
