"""The persistent norm backward (`kernels/norm.py` `norm_bwd`) under other tiles, per form: the
training ops run it in forms that hold more in registers than the plain one the config table
was measured with (session 24: the pre-norm LayerNorm form's 158 registers a thread at N = 512
and 1024 leave one 8-warp CTA per SM where the others get two).

    PYTHONPATH=python python3 bench/norm_bwd_tiles.py --out DIR [--forms pre,post,act,plain]
        [--norms rms,ln] [--ns 512,1024,2048] [--m 262144]

Forms (as `ops.training` and `ops.norm` launch it, bf16, scale g, LayerNorm with beta):
  pre    the pre-norm ops' backward: statistics from x (STATS), n written too (HAS_XN)
  post   the post-norm ops' / the block's norm2: statistics from h (STATS)
  act    the block's norm1: STATS and SiLU' of n first (ACT = 1)
  plain  the standalone norm op: rstd (mean) loaded
Tiles: `norm_config(N)`'s (ROWS, num_warps, STAGES) and others (--tiles: "ROWSxWARPSxSTAGES,...",
ROWS as a multiple of the default's: "d", "d/2", "d/4", "2d"). Per (form, norm, N, tile): ms
(do_bench median, L2 flushed), GB/s over the bytes it must move, the CTAs per SM the grid got.
Each tile's outputs are compared with the first tile's (dx and n: max abs difference, which
is bf16 rounding where the row sums' order follows the warp layout). Writes
norm_bwd_tiles.json and .md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

FORMS = ("pre", "post", "act", "plain")
DEFAULT_TILES = "dx8x3,d/2x8x3,d/2x4x3,d/4x4x3,dx4x3,d/2x8x2,d/2x8x4"


def _rows(spec: str, default: int) -> int:
    if spec == "d":
        return default
    if spec.startswith("d/"):
        return max(1, default // int(spec[2:]))
    if spec.endswith("d"):
        return default * int(spec[:-1])
    return int(spec)


def parse_tiles(text: str, N: int) -> list[dict]:
    from normfuse.ops.norm import norm_config
    base = norm_config(N)
    out = []
    for t in text.split(","):
        r, w, s = t.split("x")
        tile = dict(ROWS=_rows(r, base["ROWS"]), num_warps=int(w), STAGES=int(s))
        if tile not in out:
            out.append(tile)
    return out


def moved_bytes(form: str, is_ln: bool, M: int, N: int) -> int:
    """The bytes the form must move (bf16 rows, fp32 statistics)."""
    rows = 3 * M * N * 2  # dy, x read; dx written
    if form == "pre":
        rows += M * N * 2  # n
    if form == "plain":
        rows += M * 4 * (2 if is_ln else 1)
    return rows


def run_case(form: str, is_ln: bool, M: int, N: int, tiles: list[dict], bench) -> list[dict]:
    import torch
    from normfuse.ops import norm as norm_ops
    torch.manual_seed(0)
    dev = "cuda"
    x = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
    dy = torch.randn(M, N, device=dev, dtype=torch.bfloat16)
    g = (torch.rand(N, device=dev) + 0.5).to(torch.bfloat16)
    beta = (torch.randn(N, device=dev) * 0.1).to(torch.bfloat16) if is_ln else None
    eps = 1e-5
    rstd = mean = torch.empty(0, device=dev)
    if form == "plain":
        _, rstd, mean = torch.ops.normfuse.norm_fwd(x, g, beta, eps, 0.0, is_ln)
    xn = torch.empty_like(x) if form == "pre" else None

    def call():
        return norm_ops._kernel_backward(
            dy, x, g, rstd, mean, 0.0, is_ln, True, is_ln, xn_out=xn,
            beta=beta if form in ("pre", "act") else None,
            eps=None if form == "plain" else eps, act=1 if form == "act" else 0)

    recs, ref = [], None
    for tile in tiles:
        rec = dict(form=form, norm="ln" if is_ln else "rms", M=M, N=N, tile=tile)
        norm_ops.NORM_CONFIG_CHOICE[N] = dict(tile)
        norm_ops._PER_SM.clear()
        try:
            out = call()
            torch.cuda.synchronize()
            got = [out[0]] + ([xn.clone()] if xn is not None else [])
            if ref is None:
                ref = got
            rec["max_abs_dx"] = float((got[0].float() - ref[0].float()).abs().max())
            if xn is not None:
                rec["max_abs_n"] = float((got[1].float() - ref[1].float()).abs().max())
            rec["ms"] = bench(call)
            rec["GBps"] = round(moved_bytes(form, is_ln, M, N) / rec["ms"] / 1e6)
            rec["ctas_per_sm"] = next(iter(norm_ops._PER_SM.values()), None)
        except Exception as e:  # noqa: BLE001 (a tile that does not build is a result)
            rec["error"] = f"{type(e).__name__}: {e}"[:300]
        print(f"[norm_bwd_tiles] {rec['form']} {rec['norm']} N={N} {tile}: "
              f"{rec.get('ms', rec.get('error'))} ms, {rec.get('GBps')} GB/s, "
              f"{rec.get('ctas_per_sm')} CTAs/SM", flush=True)
        recs.append(rec)
    norm_ops.NORM_CONFIG_CHOICE.pop(N, None)
    norm_ops._PER_SM.clear()
    return recs


def markdown(recs: list[dict]) -> str:
    lines = ["| form | norm | N | ROWS x warps x stages | CTAs/SM | ms | GB/s | x default |",
             "|---|---|---:|---|---:|---:|---:|---:|"]
    base = {}
    for r in recs:
        key = (r["form"], r["norm"], r["N"])
        if key not in base and "ms" in r:
            base[key] = r["ms"]
        t = r["tile"]
        ms = r.get("ms")
        rel = f"{ms / base[key]:.3f}" if ms is not None and key in base else ""
        lines.append(f"| {r['form']} | {r['norm']} | {r['N']} | {t['ROWS']} x {t['num_warps']} x "
                     f"{t['STAGES']} | {r.get('ctas_per_sm', '')} | "
                     f"{'%.4f' % ms if ms is not None else r.get('error', '')} | "
                     f"{r.get('GBps', '')} | {rel} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--norms", default="rms,ln")
    ap.add_argument("--ns", default="512,1024,2048")
    ap.add_argument("--m", type=int, default=262144)
    ap.add_argument("--tiles", default=DEFAULT_TILES,
                    help="ROWSxWARPSxSTAGES,... (ROWS: d, d/2, d/4, 2d or a number); the first "
                         "is the baseline of the 'x default' column")
    args = ap.parse_args(argv)
    import torch
    import triton
    import normfuse.ops  # noqa: F401 (registers the ops)
    if not torch.cuda.is_available():
        print("norm_bwd_tiles: needs a CUDA GPU (sm_90)", file=sys.stderr)
        return 2

    def bench(fn):
        return float(triton.testing.do_bench(fn, warmup=10, rep=60, return_mode="median"))

    os.makedirs(args.out, exist_ok=True)
    recs = []
    for N in [int(n) for n in args.ns.split(",")]:
        tiles = parse_tiles(args.tiles, N)
        for form in args.forms.split(","):
            if form not in FORMS:
                ap.error(f"unknown form {form!r}; expected some of {','.join(FORMS)}")
            for norm in args.norms.split(","):
                recs += run_case(form, norm == "ln", args.m, N, tiles, bench)
                with open(os.path.join(args.out, "norm_bwd_tiles.json"), "w") as f:
                    json.dump(dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                                   triton=triton.__version__, records=recs), f, indent=1)
        torch.cuda.empty_cache()
    md = markdown(recs)
    with open(os.path.join(args.out, "norm_bwd_tiles.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
