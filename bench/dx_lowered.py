"""H200: the pre-norm training dX kernel lowered by hopper-ws (issue 21 item 1) against cuBLAS's
dX GEMM alone and the ops' current dX kernel (the cluster pipeline).

    PYTHONPATH=python python3 bench/dx_lowered.py [--cells blog|model|262144x1024x1024,...]
        [--norm rms|ln|both] [--variants coop,coop-s4,pingpong,coop256,rowdot,
        rowdot@pingpong:64x256:4,rowdot+epi-prefetch+staging-late,rowdot+terms,backbone,...]
        [--out DIR]
        [--form prenorm|block|block-dres]

A cell M x K x N is the pre-norm op's shape (x [M, K], W [N, K]): its dX GEMM is dY [M, N] @ W
[N, K] -> [M, K], followed by the norm backward over each row of K (the row sums, the rescale,
the dg (dbeta) column partials, n = xhat g (+ beta) stored for dW). Default cells: the blog's
262144 x 1024 x 1024 and the model shape T = 8192, K = N = 2048 (`--cells blog`: the nine blog
cells, K, N in {512, 1024, 2048}). `--form block`: the post-norm block's regrouped kernel
instead (`ops.training._mlp_bwd_impl`: SiLU' of n between the norm and the GEMM, no n stored;
K is the block's hidden H, N its D); `block-dres`: plus a residual gradient added to dx.

Timed (triton.testing.do_bench, median, L2 flushed before each call), each in ms and as a ratio
to cuBLAS's dX GEMM:
- `cublas`: torch.mm(dy, w), the dX GEMM alone (the goal's denominator);
- `cublas+norm`: the "cublas" plan, torch.mm then the norm backward without the GEMM;
- `default`: `training.norm_backward` as the ops run it now (cluster-reduce + epilogue-norm);
- `coop` / `coop-s4` / `pingpong` / `coop256`: the lowered kernel (`training.norm_backward(
  lowered=...)`: coop 128 x 128 (3-stage ring; `-s4`: 4 stages), ping-pong 64 x 128, coop
  128 x 256 (1.0-1.6 KB of ptxas spills: a reference point));
- `rowdot` / `cublas-plan`: a whole pre-norm backward (dx, dg, dbeta, dW) by plan "rowdot"
  (the row sums from dY and y by a separate pass, the dX kernel's epilogue elementwise: no row
  exchange) and by the default plan "cublas"; the json lists each one's kernels (device ms),
  the rowdot dX kernel (`norm_backward_rowdot_naive`) among them, and the markdown a line per
  cell with that kernel's device ms against cuBLAS's dX GEMM's (`dx_kernel_ms`, `mm_ms`).
  `rowdot@SCHED:BMxBN:STAGES` (e.g. `rowdot@pingpong:64x256:4`): the same plan with its dX
  kernel lowered by `hopper-ws{epilogue-tma=true,schedule=SCHED}` at that tile (the plan's
  default is `ROWDOT_PASSES` / `ROWDOT_CONFIG`: coop 128 x 256, 3 stages): ping-pong runs one
  consumer's epilogue under the other's main loop, the cause measured for the coop kernel's
  1.07-1.33x (its epilogue, with x's extra tile, exposed). Options after `+`, with or without
  the tile: `+epi-prefetch` (the epilogue's row vectors loaded before the k-loop),
  `+staging-late` (the staging tile handed back inside the next tile's k-loop: the output
  store's drain leaves the epilogue), `+terms` (the kernel's previous epilogue, the norm
  backward's terms, against the default per-row coefficients: ROWDOT_CONFIG's ROW_COEFS), e.g.
  `rowdot+terms,rowdot+epi-prefetch,rowdot+epi-prefetch+staging-late`;
- `backbone`: the dX GEMM alone through hopper-ws's template (the plain GEMM lowered, no
  epilogue), its device ms against cuBLAS's in the markdown's kernel lines: the floor under
  the rowdot dX kernel, so that its excess splits into main loop and epilogue.
Before timing, each lowered variant is checked: it ran lowered (a RuntimeWarning of the switch's
fallback fails the variant), no NaN over NaN-poisoned outputs, dx / dg / n within 2e-2 (max
abs diff / max abs) of the default kernel, two launches bitwise equal. Goal: lowered <= 1.15x
cublas. Writes dx_lowered.json and dx_lowered.md to --out (default bench/results/dx-lowered).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

BLOG = [(262144, k, n) for k in (512, 1024, 2048) for n in (512, 1024, 2048)]
MODEL = [(8192, 2048, 2048)]
DEFAULT = [(262144, 1024, 1024), (8192, 2048, 2048)]


def _cells(spec: str):
    if spec == "blog":
        return BLOG
    if spec == "model":
        return MODEL
    if spec == "default":
        return DEFAULT
    return [tuple(int(v) for v in c.split("x")) for c in spec.split(",")]


def _case(kind, M, K, N, seed=0):
    import torch
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(M, K, device="cuda", generator=gen) + (1.0 if kind == "ln" else 0.0)).bfloat16()
    dy = torch.randn(M, N, device="cuda", generator=gen).bfloat16()
    w = (torch.randn(N, K, device="cuda", generator=gen) / K ** 0.5).bfloat16()
    g = (0.5 + torch.rand(K, device="cuda", generator=gen)).bfloat16()
    beta = (0.3 * torch.randn(K, device="cuda", generator=gen)).bfloat16() if kind == "ln" else None
    xf = x.float()
    mu = xf.mean(1) if kind == "ln" else torch.zeros(M, device="cuda")
    var = ((xf - mu[:, None]) ** 2).mean(1) if kind == "ln" else (xf * xf).mean(1)
    rstd = torch.rsqrt(var + 1e-5)
    return dy, w, x, rstd, mu, g, beta


def _rel(a, b) -> float:
    a, b = a.float(), b.float()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


ROWDOT_OPTIONS = ("epi-prefetch", "staging-late", "terms")


def _rowdot_form(variant: str):
    """(config, passes) of a `rowdot[@SCHED:BMxBN:STAGES][+OPTION...]` variant; (None, None):
    the plan's. Options: `epi-prefetch` (hopper-ws{epi-prefetch=true}: the epilogue's row
    vectors loaded before the k-loop), `staging-late` (hopper-ws{staging-late=true}: the
    staging tile handed back inside the next tile's k-loop, the output store's drain under it),
    `terms` (the kernel's epilogue as the norm backward's terms, ROW_COEFS off, instead of
    per-row coefficients)."""
    from normfuse.ops import training as tr
    head, *opts = variant.split("+")
    bad = [o for o in opts if o not in ROWDOT_OPTIONS]
    if bad:
        raise SystemExit(f"dx_lowered: variant '{variant}': unknown option(s) {bad}; expected "
                         f"any of {list(ROWDOT_OPTIONS)}")
    if "@" not in head and not opts:
        return None, None
    cfg = dict(tr.ROWDOT_CONFIG)
    sched = "coop"
    if "@" in head:
        try:
            sched, tile, stages = head.split("@", 1)[1].split(":")
            bm, bn = (int(v) for v in tile.split("x"))
            cfg.update(BLOCK_M=bm, BLOCK_N=bn, num_stages=int(stages))
        except ValueError:
            raise SystemExit(f"dx_lowered: variant '{variant}': expected "
                             "rowdot@SCHED:BMxBN:STAGES[+OPTION...] (e.g. "
                             "rowdot@pingpong:64x256:4, rowdot+epi-prefetch)") from None
        if sched not in ("coop", "pingpong"):
            raise SystemExit(f"dx_lowered: variant '{variant}': schedule '{sched}' is not coop "
                             "or pingpong")
    if "terms" in opts:
        cfg["ROW_COEFS"] = False
    extra = "".join(f",{o}=true" for o in ("epi-prefetch", "staging-late") if o in opts)
    return cfg, (f"hopper-ws{{epilogue-tma=true,schedule={sched}{extra}}}",)


def _dx_kernel_ms(kernels: list) -> float | None:
    """The rowdot dX kernel's device ms in a `_device_kernels` listing (Triton names it after
    the naive kernel, the lowered template too)."""
    ms = [r[1] for r in kernels if "rowdot_naive" in r[0] or "ws_gemm" in r[0]]
    return sum(ms) if ms else None


def _rowdot(row, fns, kind, dy, w, x, rstd, mu, g, beta, ref, variant="rowdot"):
    """The "rowdot" plan (ops.training.rowdot_backward): its dX kernel has an elementwise
    epilogue (the row sums come from dY and the forward's output y by a separate pass). Timed:
    `rowdot` the plan's whole backward (dx, dg, dbeta, dW) and `cublas-plan` the default plan's
    (prenorm_backward(plan="cublas")), with each one's kernels (torch.profiler), so that the dX
    kernel alone (`norm_backward_rowdot_naive`) reads against cuBLAS's dX GEMM."""
    import torch
    from normfuse.ops import training as tr
    from normfuse.repro.bench_ops import _device_kernels
    is_ln = kind == "ln"
    xf = x.float()
    n = (xf - mu[:, None]) * rstd[:, None] * g.float()
    if beta is not None:
        n = n + beta.float()
    y = (n @ w.float().t()).to(x.dtype)

    cfg, passes = _rowdot_form(variant)

    def plan(name):
        if name == "rowdot":  # (cfg, passes None: the plan's own, as prenorm_backward runs it)
            return lambda: tr.rowdot_backward(dy, w, y, None, x, rstd, mu, g, beta, is_ln=is_ln,
                                              has_bias=False, config=cfg, passes=passes)
        return lambda: tr.prenorm_backward(dy, x, g, beta, w, rstd, mu, is_ln=is_ln,
                                           has_bias=False, plan=name, y=y, bias=None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback fails the variant
            runs = [plan("rowdot")() for _ in range(2)]
        torch.cuda.synchronize()
        same = all(a is None or torch.equal(a, b) for a, b in zip(runs[0], runs[1]))
        nan = any(t is not None and bool(torch.isnan(t.float()).any()) for t in runs[0])
        diffs = {nm: _rel(a, b) for nm, a, b in zip(("dx", "dg", "dbeta"), runs[0], ref)
                 if a is not None and b is not None}
        ok = same and not nan and max(diffs.values()) < 2e-2
        check = {"bitwise_repeatable": same, "nan": nan, "rel_diff_vs_default": diffs, "ok": ok}
        if ok:
            fns[variant] = plan("rowdot")
            fns["cublas-plan"] = plan("cublas")
            check["kernels"] = {nm: _device_kernels(plan(nm), top=12)
                                for nm in ("rowdot", "cublas")}
            check["kernels"]["mm"] = _device_kernels(lambda: torch.mm(dy, w), top=2)
            check["dx_kernel_ms"] = _dx_kernel_ms(check["kernels"]["rowdot"])
            check["mm_ms"] = sum(r[1] for r in check["kernels"]["mm"])
        row["checks"][variant] = check
    except Exception as e:  # noqa: BLE001 -- reported per variant, the others go on
        row["checks"][variant] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:400]}


def _backbone(row, fns, dy, w):
    """`backbone`: the dX GEMM dy @ w alone through hopper-ws's template (the plain Triton GEMM
    lowered, no epilogue: `prepare_plain_linear(dy, w^T, passes=("hopper-ws",))`, w^T made
    contiguous once, untimed): the floor the rowdot dX kernel's main loop sets, so that its
    excess over cuBLAS splits into the template's main loop and its epilogue."""
    import torch
    from normfuse.ops import prenorm_linear as pre
    from normfuse.repro.bench_ops import _device_kernels
    try:
        wt = w.t().contiguous()
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback fails the variant
            bb = pre.prepare_plain_linear(dy, wt, passes=("hopper-ws",))
            out = bb.launch()
        torch.cuda.synchronize()
        ref = torch.mm(dy, w)
        diff = _rel(out, ref)
        ck = bb.compile()
        lowered = getattr(ck, "lowered", None) is not None  # (else Triton's own GEMM ran)
        ok = lowered and diff < 2e-2 and not bool(torch.isnan(out.float()).any())
        check = {"rel_diff_vs_mm": diff, "lowered": lowered, "ok": ok,
                 "remarks": [r for r in ck.remarks if "[hopper-ws]" in r][:1]}
        if ok:
            fns["backbone"] = bb.launch
            k = _device_kernels(bb.launch, top=2)
            mm = _device_kernels(lambda: torch.mm(dy, w), top=2)
            check["kernels"] = {"backbone": k, "mm": mm}
            check["dx_kernel_ms"] = sum(r[1] for r in k)
            check["mm_ms"] = sum(r[1] for r in mm)
        row["checks"]["backbone"] = check
    except Exception as e:  # noqa: BLE001 -- reported per variant, the others go on
        row["checks"]["backbone"] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:400]}


def run_cell(kind, M, K, N, variants, do_bench, form="prenorm"):
    import torch
    from normfuse.ops import training as tr
    dy, w, x, rstd, mu, g, beta = _case(kind, M, K, N)
    is_ln = kind == "ln"
    block = form.startswith("block")
    act = 1 if block else 0
    dres = (0.02 * torch.randn_like(x)) if form == "block-dres" else None
    xn = None if block else torch.empty_like(x)
    row = {"kind": kind, "M": M, "K": K, "N": N, "form": form, "ms": {}, "checks": {}}

    def default():
        return tr.norm_backward(dy, w, x, rstd, mu, g, beta, dres, is_ln=is_ln, xn_out=xn,
                                act=act, lowered="")

    def cublas_norm():
        dn = torch.mm(dy, w)
        return tr.norm_backward(dn, None, x, rstd, mu, g, beta, dres, is_ln=is_ln, xn_out=xn,
                                act=act, lowered="")

    fns = {"cublas": lambda: torch.mm(dy, w), "cublas+norm": cublas_norm, "default": default}
    ref = [t.clone() if t is not None else None for t in default()] + [
        xn.clone() if xn is not None else None]
    for v in variants:
        if v == "rowdot" or v.startswith(("rowdot@", "rowdot+")):
            _rowdot(row, fns, kind, dy, w, x, rstd, mu, g, beta, ref, v)
            continue
        if v == "backbone":
            _backbone(row, fns, dy, w)
            continue
        sched = "pingpong" if v.startswith("pingpong") else "coop"
        cfg = tr.lowered_dx_config(sched, 256 if v == "coop256" else 128)
        stages = int(v.split("-s")[1]) if "-s" in v else 0

        def lowered(sched=sched, cfg=cfg, stages=stages, out=None):
            tr.LOWERED_DX_STAGES = stages
            try:
                return tr.norm_backward(dy, w, x, rstd, mu, g, beta, dres, is_ln=is_ln,
                                        xn_out=xn if out is None or xn is None else out,
                                        act=act, lowered=sched, config=cfg)
            finally:
                tr.LOWERED_DX_STAGES = 0
        try:
            runs = []
            for _ in range(2):
                out = torch.full_like(x, float("nan"))
                with warnings.catch_warnings():
                    warnings.simplefilter("error", RuntimeWarning)  # a fallback fails the variant
                    dx, dg, db = lowered(out=out)
                runs.append([dx, dg, db, out if xn is not None else None])
            torch.cuda.synchronize()
            same = all(a is None or torch.equal(a, b) for a, b in zip(runs[0], runs[1]))
            nan = any(t is not None and bool(torch.isnan(t.float()).any()) for t in runs[0])
            diffs = {n: _rel(a, b) for n, a, b in zip(("dx", "dg", "dbeta", "n"), runs[0], ref)
                     if a is not None and b is not None}
            ok = same and not nan and max(diffs.values()) < 2e-2
            row["checks"][v] = {"bitwise_repeatable": same, "nan": nan, "rel_diff_vs_default": diffs,
                                "ok": ok}
            if ok:
                fns[v] = lowered
        except Exception as e:  # noqa: BLE001 -- reported per variant, the others go on
            row["checks"][v] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:400]}
    for name, fn in fns.items():
        row["ms"][name] = do_bench(fn)
    base = row["ms"]["cublas"]
    row["ratio"] = {k: v / base for k, v in row["ms"].items()}
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="default")
    ap.add_argument("--norm", default="rms", choices=("rms", "ln", "both"))
    ap.add_argument("--variants", default="coop,coop-s4,pingpong,coop256")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "dx-lowered"))
    ap.add_argument("--form", default="prenorm", choices=("prenorm", "block", "block-dres"))
    args = ap.parse_args(argv)
    import torch
    import triton

    def do_bench(fn):
        return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))

    kinds = ("rms", "ln") if args.norm == "both" else (args.norm,)
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:  # (a malformed variant stops here, before any cell)
        if v.startswith("rowdot"):
            _rowdot_form(v)
    rows = []
    t0 = time.time()
    for kind in kinds:
        for M, K, N in _cells(args.cells):
            row = run_cell(kind, M, K, N, variants, do_bench, args.form)
            rows.append(row)
            print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": triton.__version__, "seconds": time.time() - t0}
    with open(os.path.join(args.out, "dx_lowered.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    names = ["cublas", "cublas+norm", "default"] + variants
    if any(v.startswith("rowdot") for v in variants):
        names.append("cublas-plan")
    lines = [f"# dX kernel lowered by hopper-ws, form {args.form} ({meta['device']}, "
             f"{meta['seconds']:.0f} s)", "",
             "ms (x cuBLAS's dX GEMM); a variant that failed its checks shows its reason below.", "",
             "| norm | M x K x N | " + " | ".join(names) + " |",
             "|---|---|" + "---:|" * len(names)]
    for r in rows:
        cells = []
        for n in names:
            if n in r["ms"]:
                cells.append(f"{r['ms'][n]:.3f} ({r['ratio'][n]:.2f}x)")
            else:
                cells.append("failed")
        lines.append(f"| {r['kind']} | {r['M']} x {r['K']} x {r['N']} | " + " | ".join(cells) + " |")
    lines.append("")
    dxk = [(r, v, c) for r in rows for v, c in r["checks"].items() if c.get("dx_kernel_ms")]
    if dxk:
        lines += ["The rowdot dX kernel (and `backbone`, the template's GEMM alone) against "
                  "cuBLAS's dX GEMM, device ms (torch.profiler):", ""]
        for r, v, c in dxk:
            lines.append(f"- {r['kind']} {r['M']}x{r['K']}x{r['N']} {v}: {c['dx_kernel_ms']:.3f} "
                         f"/ {c['mm_ms']:.3f} = {c['dx_kernel_ms'] / c['mm_ms']:.2f}x")
        lines.append("")
    for r in rows:
        for v, c in r["checks"].items():
            lines.append(f"- {r['kind']} {r['M']}x{r['K']}x{r['N']} {v}: {json.dumps(c)}")
    with open(os.path.join(args.out, "dx_lowered.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
