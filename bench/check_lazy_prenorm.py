"""GPU check of the lazy-prenorm pass: numerics (vs fp64 and vs the naive kernel, run twice) at the
num_stages the kernels really run with, the pipeliner-race reproduction (stats-source=tile), and a
few timings. Usage on the H200: PYTHONPATH=python python3 bench/check_lazy_prenorm.py --out DIR
"""
import argparse
import datetime
import json
import os

import torch
import triton

import normfuse
from normfuse.kernels.prenorm_gemm import layernorm_gemm_naive, rmsnorm_gemm_naive

BM, BN, BK, GM = 128, 128, 64, 8
CFG = {"BM": BM, "BN": BN}


def ref(x, g, b, w, eps, kind):
    x64 = x.double()
    if kind == "ln":
        mu = x64.mean(-1, keepdim=True)
        var = ((x64 - mu) ** 2).mean(-1, keepdim=True)
        h = (x64 - mu) / torch.sqrt(var + eps)
        h = h * g.double() + (b.double() if b is not None else 0)
    else:
        h = x64 * torch.rsqrt((x64 * x64).mean(-1, keepdim=True) + eps)
        h = h * g.double() if g is not None else h
    return h @ w.double().t()


def rel(out, r):
    return ((out.double() - r).norm() / r.norm()).item()


LAUNCHERS = {}


def launcher(kind, passes):
    key = (kind, passes)
    if key not in LAUNCHERS:
        fn = rmsnorm_gemm_naive if kind != "ln" else layernorm_gemm_naive
        LAUNCHERS[key] = normfuse.jit(fn, passes=passes)
    return LAUNCHERS[key]


def run(kind, passes, x, g, b, w, eps, stages, y=None):
    M, K = x.shape
    N = w.shape[0]
    y = torch.full((M, N), float("nan"), device=x.device, dtype=x.dtype) if y is None else y
    bm, bn = CFG["BM"], CFG["BN"]
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    common = dict(EVEN_K=K % BK == 0, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=BK, GROUP_M=GM, num_warps=8,
                  num_stages=stages)
    L = launcher(kind, passes)
    if kind == "ln":
        L[grid](x, g if g is not None else x, b if b is not None else x, w, y, x, M, N, K, x.stride(0),
                w.stride(0), y.stride(0), eps, HAS_G=g is not None, HAS_B=b is not None, HAS_BIAS=False, **common)
    else:
        L[grid](x, g if g is not None else x, w, y, x, M, N, K, x.stride(0), w.stride(0), y.stride(0), eps,
                HAS_G=g is not None, HAS_BIAS=False, **common)
    return y


def numerics(out):
    rows = []
    torch.manual_seed(0)
    variants = [("rms", "g"), ("rms", "folded"), ("ln", "g+b")]
    pipelines = {"naive": (), "lazy": ("lazy-prenorm",), "lazy-tile": ("lazy-prenorm{stats-source=tile}",),
                 "lazy-noshift": ("lazy-prenorm{shift=false}",)}
    for (M, N, K) in [(4096, 1024, 1024), (1000, 520, 300), (333, 2048, 4096), (8192, 4096, 4096)]:
        for kind, form in variants:
            for mean in ([0.0, 50.0] if kind == "ln" else [0.0]):
                x = (torch.randn(M, K, device="cuda") + mean).to(torch.bfloat16)
                w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
                g = (1 + 0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
                b = (0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16) if kind == "ln" else None
                gg = None if form == "folded" else g
                wk = (w.float() * g.float()[None, :]).to(torch.bfloat16) if form == "folded" else w
                r = ref(x, g, b, w, 1e-6, kind)
                for stages in (3, 4):
                    for pname, passes in pipelines.items():
                        if pname == "lazy-noshift" and kind != "ln":
                            continue
                        if pname == "lazy-tile" and kind == "ln":
                            continue
                        y1 = run(kind, passes, x, gg, b, wk, 1e-6, stages)
                        y2 = run(kind, passes, x, gg, b, wk, 1e-6, stages)
                        torch.cuda.synchronize()
                        row = dict(M=M, N=N, K=K, kind=kind, form=form, mean=mean, stages=stages, pipeline=pname,
                                   err=rel(y1, r), err2=rel(y2, r), nan=bool(torch.isnan(y1).any()),
                                   same=bool(torch.equal(y1, y2)))
                        rows.append(row)
                        print(json.dumps(row), flush=True)
    return rows


def timings():
    rows = []
    bench = lambda f: triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")  # noqa
    for (M, N, K) in [(262144, 512, 512), (262144, 1024, 1024), (262144, 2048, 2048), (8192, 4096, 4096)]:
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
        g = (1 + 0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        t = {}
        t["cublas"] = bench(lambda: torch.nn.functional.linear(x, w))
        t["eager_norm"] = bench(lambda: torch.nn.functional.rms_norm(x, (K,), g, 1e-6))
        cn = torch.compile(lambda a: torch.nn.functional.rms_norm(a, (K,), g, 1e-6))
        t["compiled_norm"] = bench(lambda: cn(x))
        for stages in (3, 4):
            t[f"naive_s{stages}"] = bench(lambda: run("rms", (), x, g, None, w, 1e-6, stages, y))
            t[f"lazy_g_s{stages}"] = bench(lambda: run("rms", ("lazy-prenorm",), x, g, None, w, 1e-6, stages, y))
            t[f"lazy_folded_s{stages}"] = bench(lambda: run("rms", ("lazy-prenorm",), x, None, None, w, 1e-6, stages, y))
        tn = min(t["eager_norm"], t["compiled_norm"])
        best = min(v for k, v in t.items() if k.startswith("lazy"))
        row = dict(M=M, N=N, K=K, **{k: round(v, 4) for k, v in t.items()},
                   hidden_pct=round(100 * (t["cublas"] + tn - best) / tn, 1),
                   fused_over_cublas=round(best / t["cublas"], 3))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def races():
    """Run-to-run differences (a race) per config, for the naive kernel and the pass's output."""
    rows = []
    torch.manual_seed(1)
    M, N, K = 4096, 2048, 2048
    x = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
    g = (1 + 0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
    b = (0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
    wf = (w.float() * g.float()[None, :]).to(torch.bfloat16)
    for bn, stages in ((128, 3), (256, 3), (256, 4)):
        CFG["BN"] = bn
        for kind, gg, bb, ww in (("rms", g, None, w), ("rms", None, None, wf), ("ln", g, b, w), ("ln", None, None, wf)):
            for pname, passes in (("naive", ()), ("lazy", ("lazy-prenorm",))):
                outs = [run(kind, passes, x, gg, bb, ww, 1e-6, stages).clone() for _ in range(5)]
                torch.cuda.synchronize()
                distinct = len({o.double().sum().item() for o in outs})
                same = all(torch.equal(outs[0], o) for o in outs[1:])
                row = dict(BN=bn, stages=stages, kind=kind, g_in_loop=gg is not None, pipeline=pname,
                           bitwise_same=same, distinct_sums=distinct)
                rows.append(row)
                print("RACE", json.dumps(row), flush=True)
    CFG["BN"] = BN
    return rows


def stats_sources():
    """What the statistics cost: folded RMSNorm through the op, per stats-source and config, next
    to the same Triton GEMM without a norm."""
    from normfuse import ops
    from normfuse.kernels.configs import GemmConfig
    bench = lambda f: triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")  # noqa
    rows = []
    for (M, N, K) in [(262144, 1024, 1024), (262144, 2048, 2048)]:
        xs = [torch.randn(M, K, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
        g = (1 + 0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
        r = ref(xs[0][:4096], g, None, w, 1e-6, "rms")
        for cfg in (GemmConfig(128, 256, 64, 8, 8, 3), GemmConfig(128, 256, 64, 8, 8, 4),
                    GemmConfig(128, 128, 64, 8, 8, 4), GemmConfig(256, 128, 64, 8, 8, 3)):
            row = dict(M=M, N=N, K=K, config=str(cfg))
            plain = ops.prepare_plain_linear(xs[0], w, config=cfg)
            row["triton_gemm_ms"] = bench(plain.launch)
            for src in ("tile", "reload", "reload-volatile"):
                spec = (f"lazy-prenorm{{stats-source={src}}}",)
                try:
                    p = ops.prepare_rmsnorm_linear(xs[0], g, w, 1e-6, config=cfg, passes=spec)
                    p.out.fill_(float("nan"))
                    y = p().clone()
                    y2 = p()
                    row[src + "_err"] = rel(y[:4096], r)
                    row[src + "_repeatable"] = bool(torch.equal(y, y2))
                    row[src + "_ms"] = bench(p.launch)
                except Exception as e:  # noqa: BLE001
                    row[src + "_error"] = f"{type(e).__name__}: {e}"[:200]
            rows.append(row)
            print("STATS", json.dumps(row), flush=True)
    return rows


def accumulate():
    """stats-accumulate=row vs tile for the op's default path (g folded, pointer loads)."""
    from normfuse import ops
    bench = lambda f: triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")  # noqa
    rows = []
    for (M, N, K) in [(262144, 512, 512), (262144, 1024, 1024), (262144, 2048, 2048), (8192, 4096, 4096)]:
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(torch.bfloat16)
        g = (1 + 0.1 * torch.randn(K, device="cuda")).to(torch.bfloat16)
        r = ref(x[:4096], g, None, w, 1e-6, "rms")
        row = dict(M=M, N=N, K=K, cublas_ms=bench(lambda: torch.nn.functional.linear(x, w)))
        row["triton_gemm_ms"] = bench(ops.prepare_plain_linear(x, w).launch)
        for acc in ("row", "tile"):
            p = ops.prepare_rmsnorm_linear(x, g, w, 1e-6, passes=(f"lazy-prenorm{{stats-accumulate={acc}}}",))
            p.out.fill_(float("nan"))
            y = p().clone()
            row[acc + "_err"] = rel(y[:4096], r)
            row[acc + "_repeatable"] = bool(torch.equal(y, p()))
            row[acc + "_nan"] = bool(torch.isnan(y).any())
            row[acc + "_ms"] = bench(p.launch)
        rows.append(row)
        print("ACC", json.dumps(row), flush=True)
    return rows


def _dump(path, rows):
    meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, triton=triton.__version__,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat())
    with open(path, "w") as f:
        json.dump(dict(meta, rows=rows), f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--races-only", action="store_true")
    ap.add_argument("--stats-only", action="store_true")
    ap.add_argument("--accumulate-only", action="store_true")
    a = ap.parse_args()
    experiments = {"accumulate_only": ("stats_accumulate.json", accumulate),
                   "stats_only": ("stats_sources.json", stats_sources),
                   "races_only": ("races.json", races)}
    for flag, (name, fn) in experiments.items():
        if getattr(a, flag):
            _dump(os.path.join(a.out, name), fn())
            return
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(), gpu=torch.cuda.get_device_name(),
                torch=torch.__version__, triton=triton.__version__)
    res = dict(meta=meta, numerics=numerics(a.out))
    if not a.skip_timing:
        res["timing"] = timings()
    with open(os.path.join(a.out, "check_lazy_prenorm.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
