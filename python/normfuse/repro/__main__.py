"""`PYTHONPATH=python python3 -m normfuse.repro [--out DIR] [--quick] [--no-bench] [--detail]`

(a) Anywhere (a CPU is enough): compile the naive RMSNorm and LayerNorm prologue kernels ahead
    of time for cuda:90 through the default pipeline (lazy-prenorm, then the hopper-ws lowering
    to the warp-specialized template) and report, per kernel, the passes' remarks, the loops
    before and after lazy-prenorm (scf.for in 'ttir' vs 'normfuse'), whether the kernel was
    lowered (ttg.warp_specialize in the TTGIR), whether the PTX has wgmma, and the shared memory,
    warps and stages from the metadata. Then the naive post-norm kernels (y = norm(x @ W^T))
    through cluster-reduce,epilogue-norm at three row lengths: one CTA per row, a thread-block
    cluster, and the deferred form; with the cluster size and shared memory from the launch
    metadata and the DSMEM instructions in the PTX.
(b) On a Hopper GPU: rel_err vs fp64 of the fused and the naive kernel on a few ragged shapes
    (pre-norm and post-norm).
(c) On a Hopper GPU: the speed summary (normfuse.repro.summary): every op against cuBLAS, the best
    standalone norm and the lowered GEMM backbone on the issues' grid, hidden % per cell;
    writes summary.json, summary.md and hidden.png to bench/results/<date>/summary and
    bench/results/latest (or --out). `--detail` adds the older detailed benchmarks.
    Then FlashNormAttention's forward on the blog's attention shapes (bench_attention), and the
    backward benchmarks (normfuse.repro.extra: bench_training for the four ops and the
    post-norm MLP block, bench_attention_bwd for FlashNormAttention), their records
    appended to the same summary.json (`--no-attention`, `--no-training`, `--budget S`).
    Then the model benchmark (normfuse.repro.models, issue 19) on one small model
    (llama-small) into <out>/models (`--no-models` skips it).
    Without a GPU, a line says that (b) and (c) were skipped and why; the exit status is then 0.

`--models [NAMES]` runs only the model benchmark (default: llama, qwen2, gpt2, bert; stock,
torch.compile, Liger, normfuse and their compositions, prefill and train step), writing
models.json, models.md and models.png to bench/results/<date>/models (copied to
bench/results/latest) or --out (`--train-plan fused`: also the train step with
normfuse.optimize(train="fused"), the fused training ops); `--model-shapes` only the
model-shape kernel sweep (normfuse.repro.model_shapes: the fused ops on the models' GEMM shapes
against cuBLAS) into bench/results/<date>/model_shapes (or --out). Both together run both.

Exit status 1 only when a numerics check on the GPU fails.
"""
from __future__ import annotations

import argparse
import sys

import torch

from .. import reference as ref
from ..kernels.configs import select_config
from ..ops import prenorm_linear as ops
from ..passes import PassError

PASSES = "default"  # every fusion pass, then hopper-ws (pipeline.DEFAULT_PIPELINE)
AOT_SHAPE = {"M": 262144, "K": 2048, "N": 2048}
KERNELS = (("rms", "RMSNorm prologue, g in the loop", {"has_g": True}),
           ("rms", "RMSNorm prologue, g folded into W", {"has_g": False}),
           ("ln", "LayerNorm prologue, g and beta in the loop", {"has_g": True, "has_b": True}),
           ("ln", "LayerNorm prologue, g folded into W, beta into the output bias",
            {"has_g": False, "has_b": False}))
NUMERICS_SHAPES = ((1, 64, 64), (127, 300, 200), (1000, 1000, 520), (4096, 512, 1024),
                   (333, 2048, 4096))


def _add_resources(row: dict, ck) -> None:
    """ptxas's registers and spill bytes per thread into `row` (or why they are missing)."""
    try:
        row.update(ck.resources())
    except (RuntimeError, OSError) as e:
        row["resources_error"] = str(e)


def _loops(text: str) -> int:
    return text.count("scf.for ")


def compile_report(log=print) -> list[dict]:
    """Part (a): AOT compile through the pipeline, summarise before/after."""
    rows = []
    log(f"== (a) AOT compile for cuda:90, pipeline {PASSES}, "
        f"M={AOT_SHAPE['M']} K={AOT_SHAPE['K']} N={AOT_SHAPE['N']} bf16 ==")
    for kind, title, flags in KERNELS:
        cfg = select_config(AOT_SHAPE["M"], AOT_SHAPE["N"], AOT_SHAPE["K"], torch.bfloat16)
        row = {"kernel": title, "config": str(cfg)}
        log(f"\n-- {title} ({ops.kernel_for(kind).__name__}, {flags}, config {cfg})")
        try:
            ck = ops.aot_compile(kind, dtype=torch.bfloat16, passes=PASSES, **AOT_SHAPE, **flags)
        except (PassError, ImportError) as e:
            row["pass_error"] = f"{type(e).__name__}: {e}"
            log(f"   pass unavailable or failed: {row['pass_error']}")
            log("   compiling without the pass for comparison")
            ck = ops.aot_compile(kind, dtype=torch.bfloat16, passes=(), **AOT_SHAPE, **flags)
        asm = ck.asm
        after = asm.get("normfuse", asm["ttir"])
        row.update(remarks=list(ck.remarks), applied=ck.applied, lowered=ck.lowered is not None,
                   warp_specialized="ttg.warp_specialize" in asm["ttgir"],
                   loops_before=_loops(asm["ttir"]), loops_after=_loops(after),
                   loads_before=asm["ttir"].count("tt.load"), loads_after=after.count("tt.load"),
                   wgmma="wgmma" in asm["ptx"], shared=ck.metadata.shared,
                   num_warps=ck.metadata.num_warps, num_stages=ck.metadata.num_stages,
                   persistent="tt.flatten" in asm["ttir"])
        for r in row["remarks"] or ["(no remark)"]:
            log(f"   {r}")
        log(f"   IR changed by the pipeline: {'yes' if row['applied'] else 'no (unchanged)'}; "
            f"lowered to the warp-specialized template: {'yes' if row['lowered'] else 'no'}"
            + (" (ttg.warp_specialize in the TTGIR; 'gluon' in asm holds the generated hooks)"
               if row["warp_specialized"] else ""))
        log(f"   scf.for loops: {row['loops_before']} -> {row['loops_after']} "
            f"({'persistent: one program per SM walking the tiles' if row['persistent'] else 'one program per tile'}); "
            f"tt.load ops: {row['loads_before']} -> {row['loads_after']}")
        _add_resources(row, ck)
        log(f"   wgmma in PTX: {'yes' if row['wgmma'] else 'no'}; shared memory {row['shared']} B; "
            f"num_warps {row['num_warps']}; num_stages {row['num_stages']}; "
            f"ptxas: {row.get('registers', '?')} registers, {row.get('spill_stores', '?')} B spill stores")
        rows.append(row)
    return rows


POST_AOT = (("rms", 256, "RMSNorm epilogue, N=256: one CTA holds the row (persistent)"),
            ("ln", 2048, "LayerNorm epilogue, N=2048: 8-CTA clusters walking the row blocks, DSMEM exchange"),
            ("rms", 8192, "RMSNorm epilogue, N=8192: 16-CTA clusters, 2 tiles per CTA (deferred, persistent)"))
POST_NUMERICS = ((1, 64, 64), (127, 300, 200), (1000, 512, 1000), (333, 1024, 2048), (256, 512, 8192))


def post_compile_report(log=print) -> list[dict]:
    """Part (a), post-norm: AOT compile through cluster-reduce,epilogue-norm."""
    from ..ops import postnorm_linear as post
    rows = []
    log(f"\n== (a) AOT compile for cuda:90, pipeline {','.join(post.DEFAULT_POSTNORM_PASSES)}, "
        "M=262144 K=1024 bf16 ==")
    for kind, N, title in POST_AOT:
        log(f"\n-- {title}")
        row = {"kernel": title}
        try:
            ck = post.aot_compile_postnorm(kind, M=262144, N=N, K=1024)
        except (PassError, ImportError) as e:
            row["pass_error"] = f"{type(e).__name__}: {e}"
            log(f"   pass failed: {row['pass_error']}")
            rows.append(row)
            continue
        asm, md = ck.asm, ck.metadata
        ptx = asm["ptx"]
        row.update(remarks=list(ck.remarks), num_ctas=md.num_ctas, shared=md.shared,
                   stores_before=asm["ttir"].count("tt.store"),
                   stores_after=asm["normfuse"].count("tt.store"),
                   barrier_cluster=ptx.count("barrier.cluster."), mapa=ptx.count("mapa.shared::cluster"),
                   wgmma="wgmma" in ptx)
        _add_resources(row, ck)
        for r in row["remarks"]:
            log(f"   {r}")
        log(f"   ptxas: {row.get('registers', '?')} registers, {row.get('spill_stores', '?')} B spill stores")
        log(f"   cluster: {row['num_ctas']} CTAs; shared memory {row['shared']} B; tt.store ops: "
            f"{row['stores_before']} -> {row['stores_after']}; PTX: {row['barrier_cluster']} "
            f"barrier.cluster, {row['mapa']} mapa, wgmma {'yes' if row['wgmma'] else 'no'}")
        rows.append(row)
    rows += post_lowered_compile_report(log)
    return rows


POST_LOWERED_AOT = (("rms", 8192, 256, 1024, False, False),
                    ("ln", 8192, 2048, 1024, False, False),
                    ("ln", 8192, 1024, 4096, True, True))   # BERT's output block


def post_lowered_compile_report(log=print) -> list[dict]:
    """Part (a), post-norm as the ops run it by default: the lowered form (epilogue-norm, then
    hopper-ws{post-norm=true}, coop) at T = 8192."""
    from ..ops import postnorm_linear as post
    rows = []
    switch = post.LOWERED_POSTNORM.get("rms") or "auto"
    log(f"\n== (a) the ops' default post-norm form: AOT compile for cuda:90, the lowered form "
        f"({switch}: epilogue-norm, hopper-ws{{post-norm=true}}) ==")
    for kind, M, N, K, bias, res in POST_LOWERED_AOT:
        sched, cfg = post.lowered_postnorm_choice(M, N, K, switch)
        passes = post.lowered_postnorm_passes(sched)
        title = (f"{'RMSNorm' if kind == 'rms' else 'LayerNorm'} after the GEMM, M={M} K={K} N={N}"
                 + (", bias + residual" if bias or res else ""))
        log(f"\n-- {title}")
        row = {"kernel": title, "form": "lowered"}
        try:
            ck = post.aot_compile_postnorm(kind, M=M, N=N, K=K, has_bias=bias, has_res=res,
                                           passes=passes, config=cfg)
        except (PassError, ImportError) as e:
            row["pass_error"] = f"{type(e).__name__}: {e}"
            log(f"   pass failed: {row['pass_error']}")
            rows.append(row)
            continue
        row.update(remarks=list(ck.remarks), lowered=ck.lowered is not None,
                   warp_specialized="ttg.warp_specialize" in ck.asm["ttgir"],
                   wgmma="wgmma" in ck.asm["ptx"])
        _add_resources(row, ck)
        for r in row["remarks"]:
            log(f"   {r}")
        log(f"   lowered to the warp-specialized template: {'yes' if row['lowered'] else 'no'}; "
            f"wgmma {'yes' if row['wgmma'] else 'no'}; ptxas: {row.get('registers', '?')} "
            f"registers, {row.get('spill_stores', '?')} B spill stores")
        rows.append(row)
    return rows


def post_numerics_check(log=print) -> bool:
    """Part (b1), post-norm: the op (default pipeline) vs the naive kernel vs fp64."""
    from ..ops import postnorm_linear as post
    from .bench_post import _oracle
    log("\n== (b) post-norm numerics: rel_err vs fp64 (outputs poisoned with NaN) ==")
    log(f"{'norm':5s} {'M':>5s} {'K':>5s} {'N':>5s} {'CTAs':>4s} {'naive':>10s} {'fused':>10s}  ok")
    all_ok = True
    torch.manual_seed(0)
    for norm in ("rms", "ln"):
        eps = 1e-6 if norm == "rms" else 1e-5
        for (M, K, N) in POST_NUMERICS:
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            w = (torch.randn(N, K, device="cuda") / K ** 0.5).bfloat16()
            g = (1 + 0.1 * torch.randn(N, device="cuda")).bfloat16()
            b = (0.1 * torch.randn(N, device="cuda")).bfloat16()
            oracle = _oracle(norm, x, w, g, b, eps)
            errs, ctas = {}, 1
            for name, passes in (("naive", ()), ("fused", post.DEFAULT_POSTNORM_PASSES)):
                plan = (post.prepare_linear_rmsnorm(x, w, g, eps, passes=passes) if norm == "rms"
                        else post.prepare_linear_layernorm(x, w, g, b, eps, passes=passes))
                plan.out.fill_(float("nan"))
                y = plan()
                torch.cuda.synchronize()
                errs[name] = ref.rel_err(y, oracle) if not torch.isnan(y).any() else float("inf")
                if name == "fused":
                    ctas = plan.compile().metadata.num_ctas
            ok = errs["fused"] <= 1.5 * errs["naive"] + 1e-6
            all_ok &= ok
            log(f"{norm:5s} {M:5d} {K:5d} {N:5d} {ctas:4d} {errs['naive']:10.2e} {errs['fused']:10.2e}"
                f"  {'yes' if ok else 'NO'}")
    return all_ok


def numerics_check(log=print) -> bool:
    """Part (b1): fused vs naive vs fp64 on ragged shapes; True when every fused result passes."""
    from .bench import _gate
    log("\n== (b) numerics: rel_err vs fp64 (outputs poisoned with NaN) ==")
    log(f"{'norm':5s} {'M':>5s} {'K':>5s} {'N':>5s} {'naive':>10s} {'fused':>10s} "
        f"{'folded':>10s}  ok")
    all_ok = True
    torch.manual_seed(0)
    for norm in ("rms", "ln"):
        eps = 1e-6 if norm == "rms" else 1e-5
        for (M, K, N) in NUMERICS_SHAPES:
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            g = (1 + 0.1 * torch.randn(K, device="cuda")).bfloat16()
            b = (0.1 * torch.randn(K, device="cuda")).bfloat16()
            w = (torch.randn(N, K, device="cuda") / K ** 0.5).bfloat16()
            if norm == "rms":
                oracle = ref.rmsnorm_linear_ref(x, g, w, eps)
                wf = ref.fold_norm_weight(w, g)
                runs = {"naive": lambda p: ops.prepare_rmsnorm_linear(x, g, w, eps, passes=p),
                        "fused": lambda p: ops.prepare_rmsnorm_linear(x, g, w, eps, passes=p),
                        "folded": lambda p: ops.prepare_rmsnorm_linear(x, None, wf, eps,
                                                                       folded=True, passes=p)}
            else:
                oracle = ref.layernorm_linear_ref(x, g, b, w, eps)
                runs = {"naive": lambda p: ops.prepare_layernorm_linear(x, g, b, w, eps, passes=p),
                        "fused": lambda p: ops.prepare_layernorm_linear(x, g, b, w, eps, passes=p)}
            errs, ok = {}, True
            for name, make in runs.items():
                try:
                    plan = make(() if name == "naive" else PASSES)
                    plan.out.fill_(float("nan"))
                    y = plan()
                    torch.cuda.synchronize()
                    errs[name] = ref.rel_err(y, oracle)
                    if name != "naive" and not _gate(errs[name], True, True, errs["naive"]):
                        ok = False
                except (PassError, ImportError) as e:
                    errs[name] = None
                    log(f"   {norm} {name}: pass unavailable: {type(e).__name__}: {e}")
                    ok = False
            all_ok &= ok
            f = lambda v: f"{v:10.2e}" if v is not None else f"{'-':>10s}"  # noqa: E731
            log(f"{norm:5s} {M:5d} {K:5d} {N:5d} {f(errs.get('naive'))} {f(errs.get('fused'))} "
                f"{f(errs.get('folded')) if norm == 'rms' else ' ' * 10}  {'yes' if ok else 'NO'}")
    return all_ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m normfuse.repro",
                                description="AOT compile report; numerics and the speed summary "
                                            "when a Hopper GPU is present")
    p.add_argument("--out", help="where the speed summary goes (default "
                                 "bench/results/<date>/summary, copied to bench/results/latest)")
    p.add_argument("--norm", choices=("rms", "ln", "both"), default="rms",
                   help="norm(s) for --detail's benchmarks (default rms)")
    p.add_argument("--no-bench", action="store_true", help="skip the speed summary")
    p.add_argument("--quick", action="store_true", help="the summary on three cells only")
    p.add_argument("--no-attention", action="store_true", help="skip the FlashNormAttention forward")
    p.add_argument("--no-training", action="store_true",
                   help="skip the backward benchmarks (training ops, block, attention backward)")
    p.add_argument("--budget", type=float, default=150.0,
                   help="seconds for each of the attention and backward benchmarks (default 150)")
    p.add_argument("--warm-procs", type=int, default=None,
                   help="compile every benchmark's kernels and graphs first, in this many processes "
                        "at once (normfuse.repro.warm; default: half the cores less one, at most "
                        "one per cell; 0: no warm-up)")
    p.add_argument("--warm-timeout", type=float, default=300.0,
                   help="seconds for the warm-up (what is left compiles in the timing runs)")
    p.add_argument("--detail", action="store_true",
                   help="also run the detailed pre-/post-norm benchmarks (bench.py, bench_post.py)")
    p.add_argument("--models", nargs="?", const="main", metavar="NAMES",
                   help="only the model benchmark (normfuse.repro.models): comma-separated model "
                        "names (default: llama,qwen2,gpt2,bert)")
    p.add_argument("--train-plan", choices=("composed", "fused"), default="composed",
                   help="with --models: 'fused' also measures the train step of the normfuse "
                        "configurations with optimize(train='fused') (default: only optimize's "
                        "default plan, 'composed')")
    p.add_argument("--model-shapes", action="store_true",
                   help="only the model-shape kernel sweep (normfuse.repro.model_shapes)")
    p.add_argument("--no-models", action="store_true",
                   help="skip the small model benchmark of the default run")
    args = p.parse_args(argv)

    if args.models or args.model_shapes:
        return model_benchmarks(args)
    compile_report()
    post_compile_report()
    from .bench import QUICK_GRID, hopper_status, run_and_report
    ok, why = hopper_status()
    if not ok:
        print(f"\nnumerics and speed skipped: {why}")
        return 0
    print(f"\nGPU: {why}")
    numerics_ok = numerics_check()
    numerics_ok &= post_numerics_check()
    if args.no_bench:
        return 0 if numerics_ok else 1
    import datetime as _dt
    import os
    import shutil
    from . import summary
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    out = args.out or os.path.join(repo, "bench", "results", _dt.date.today().isoformat(), "summary")
    from . import bench_attention, extra, models, warm
    jobs = summary.warm_jobs(list(summary.OPS), summary.summary_cells(args.quick))
    if not args.no_attention:
        jobs += bench_attention.warm_jobs(args.quick)
    if not args.no_training:
        jobs += extra.warm_jobs(args.quick)
    if not args.no_models:
        jobs += models.warm_jobs(models.QUICK_MODELS)
    procs = warm.default_procs(len(jobs)) if args.warm_procs is None else args.warm_procs
    if procs > 0:
        print(f"\n== warm-up: {len(jobs)} cells compiled in {procs} processes at once ==")
        warm.configure_torch()
        warm.parallel(jobs, procs, args.warm_timeout)
    print("\n== (c) speed summary: every op vs cuBLAS and the best standalone norm ==")
    summary.main(["--out", out] + (["--quick"] if args.quick else []))
    if not args.no_attention:
        # FlashNormAttention forward (issue 12): appended to summary.json
        bench_attention.append_to_summary(out, args.quick, budget=args.budget)
    if not args.no_training:
        # training (issue 10) and the attention backward (issue 12)
        print("\n== (c') backward: the four ops, the post-norm MLP block, FlashNormAttention ==")
        extra.run_all(out, args.quick, budget=args.budget)
    if not args.no_models:
        # issue 19: one small model here; `--models` runs the four
        print("\n== (c'') model benchmark: " + ", ".join(models.QUICK_MODELS) + " ==")
        models.bench(list(models.QUICK_MODELS), os.path.join(out, "models"), warm_procs=0)
    if not args.out and not args.quick:
        latest = os.path.join(repo, "bench", "results", "latest")
        os.makedirs(latest, exist_ok=True)
        for f, to in (("summary.json", None), ("summary.md", None), ("hidden.png", None),
                      ("attention.md", None), ("attention_saved.png", None),
                      ("training/summary.md", "training.md"),
                      ("attention_backward/attention_bwd.md", "attention_backward.md")):
            if os.path.exists(os.path.join(out, f)):
                shutil.copy(os.path.join(out, f), os.path.join(latest, to or f))
        print(f"summary written to {out} and {latest}")
    if args.detail:
        print(f"\n== (d) detailed pre-norm benchmark: {QUICK_GRID} ==")
        run_and_report(("rms", "ln") if args.norm == "both" else (args.norm,), QUICK_GRID, out)
        from .bench_post import main as post_main
        print("\n== (d) post-norm quick benchmark ==")
        post_main(["--quick", "--norm", args.norm, "--out", out])
    if not numerics_ok:
        print("numerics check FAILED (see above)")
    return 0 if numerics_ok else 1


def model_benchmarks(args) -> int:
    """`--models` / `--model-shapes`: those benchmarks only (see the module doc)."""
    import datetime as _dt
    import os
    import shutil
    from .bench import hopper_status
    ok, why = hopper_status()
    if not ok:
        print(f"model benchmarks skipped: {why}")
        return 0
    print(f"GPU: {why}")
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    day = os.path.join(repo, "bench", "results", _dt.date.today().isoformat())
    latest = os.path.join(repo, "bench", "results", "latest")
    if args.models:
        from . import models
        names = list(models.MAIN_MODELS) if args.models == "main" else args.models.split(",")
        out = args.out or os.path.join(day, "models")
        models.bench(names, out, warm_procs=args.warm_procs,
                     warm_timeout=min(args.warm_timeout, 240.0), train_plan=args.train_plan)
        if not args.out and names == list(models.MAIN_MODELS):
            os.makedirs(latest, exist_ok=True)
            for f in ("models.json", "models.md", "models.png"):
                if os.path.exists(os.path.join(out, f)):
                    shutil.copy(os.path.join(out, f), os.path.join(latest, f))
    if args.model_shapes:
        from . import model_shapes
        out = args.out or os.path.join(day, "model_shapes")
        model_shapes.bench(out, warm_procs=args.warm_procs,
                           warm_timeout=min(args.warm_timeout, 150.0))
        if not args.out:
            os.makedirs(latest, exist_ok=True)
            for f in ("model_shapes.json", "model_shapes.md"):
                if os.path.exists(os.path.join(out, f)):
                    shutil.copy(os.path.join(out, f), os.path.join(latest, f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
