"""CPU, no GPU: FlashNormAttention's fused forward compiled for sm_90 as the op compiles it
(its default passes and LayerNorm layout, bench_attention's shapes: bf16, D = 128, 64 x 4 warps,
the default walk ROWS = 512, BLOCK_N = 128), its SASS instructions in the row-block walk's loop
body (the outermost backward branch) and over the whole kernel, and ptxas's spill bytes.

    PYTHONPATH=python python3 bench/fna_sass.py [--cells softmax:2:128,softmax:4:128,...]
                                                 [--save] [--weights] [--mma | --loads | --both]
                                                 [--by-line N] [--dump DIR] [--json FILE]
                                                 [--ahead | --ahead-both | --carry |
                                                  --ahead-all]

A cell is ACT:H:L (L the KV length, a constexpr: 128 is one KV tile, the benchmark's shape;
1000 walks eight). `--save`: the training forward (g and lse stored). `--weights`: with the
LayerNorm's weight and bias and the RMSNorm's weight. The LayerNorm's layout follows the op
(`prepare_flash_norm_attention(ln_mma=None)`: the MMA layout, `MMA_FNA_PASSES`, without weights,
the loads' layout with them); `--mma` / `--loads` force one; `--both`: the two, one line each.
`--by-line N`: the N source lines of the naive kernel (kernels/attention.py and what it
inlines) with the most instructions in the loop body (nvdisasm's line table), to see which part
of the algorithm the body's instructions come from. `--dump DIR`: the TTGIR, PTX and SASS of
each cell there (to diff two kernel revisions). The loop body's count is per row block and head
(each CTA of the cluster holds one head). Default cells: softmax H 2 / 4 and gelu_tanh H 2 at
L = 128, then the same at L = 1000.
`--ahead`: the walk with one cluster exchange a row block (the kernel's STATS_AHEAD,
`cluster-reduce{merge=true}`: `prepare_flash_norm_attention(stats_ahead=True)`); `--ahead-both`:
the default and that, one line each. Each line also gives the cluster barriers: `cgabar` the
SASS barrier.cluster arrive / wait instructions in the walk's body (UCGABAR_ARV / _WAIT), `ptx`
the barrier.cluster.arrive / wait instructions in the whole kernel's PTX.
`--carry`: that walk in its carry form (`stats_ahead="carry"`: `reuse-loads{across-trips=true}`
too, the next block's x tile loaded once, for its sums, and carried to the next trip);
`--ahead-all`: the default, --ahead and --carry, one line each. "The default" here is the
two-exchange walk (`stats_ahead=False`); since session 40 the op's inference kernel without
norm weights is the carry form (`DEFAULT_STATS_AHEAD`): `--carry` compiles that.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import warnings

import torch

CELLS = ("softmax:2:128", "softmax:4:128", "gelu_tanh:2:128",
         "softmax:2:1000", "softmax:4:1000", "gelu_tanh:2:1000")
B, D = 768, 128


def _tool(name):
    import triton
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def _args(act, H, L, save, weights=False):
    """prepare_flash_norm_attention's runtime arguments and constexprs for the cell (the
    tensors only give types and alignment)."""
    from normfuse.kernels.attention import ACT_CODES
    from normfuse.ops.flash_norm_attention import ROWS_PER_PROGRAM, _config
    from normfuse.reference_attention import default_qk_scale
    T = 1024
    x = torch.empty(T, H, D, dtype=torch.bfloat16)
    k = torch.empty(B, L, H, D, dtype=torch.bfloat16)
    stat = [torch.empty(T, dtype=torch.float32) for _ in range(3)]
    dummy = x.new_empty(1)
    w = x.new_empty(H * D) if weights else dummy
    saved = (torch.empty_like(x), torch.empty(T, H)) if save else ()
    runtime = (x, k, torch.empty_like(k), torch.zeros(B + 1, dtype=torch.int32),
               torch.zeros(3 * 64, dtype=torch.int32), w, w, w, torch.empty_like(x),
               *stat, *saved, B, default_qk_scale(act, D), 1e-5, 1e-5)
    cfg = _config(D, L)
    consts = dict(H=H, HKV=H, D=D, L=L, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                  ACT=ACT_CODES[act], LOG_B=max(1, B.bit_length()), HAS_LNW=weights,
                  HAS_LNB=weights, HAS_RMSW=weights, ROWS=ROWS_PER_PROGRAM)
    return runtime, consts, dict(num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


_INS = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


_LINE = re.compile(r'^\s*//## File "([^"]+)", line (\d+)')


def sass(cubin: bytes, tmp: str, lines: dict | None = None) -> list:
    """[(address, text)] of the kernel's instructions (nvdisasm). `lines`: filled with
    {address: "file:line"} from the line table (nvdisasm -g; the innermost inlined location)."""
    path = os.path.join(tmp, "kernel.cubin")
    with open(path, "wb") as f:
        f.write(cubin)
    flags = ["-c", "-g"] if lines is not None else ["-c"]
    out = subprocess.run([_tool("nvdisasm"), *flags, path], capture_output=True, text=True,
                         check=True).stdout
    labels, pending, res, where = {}, [], [], None
    for s in out.splitlines():
        m = _LINE.match(s)
        if m:
            where = f"{os.path.basename(m.group(1))}:{m.group(2)}"
            continue
        m = re.match(r"^\s*(\.L_x_\d+):", s)
        if m:
            pending.append(m.group(1))
            continue
        m = _INS.match(s)
        if m:
            a = int(m.group(1), 16)
            for p in pending:
                labels[p] = a
            pending = []
            res.append((a, m.group(2)))
            if lines is not None and where:
                lines[a] = where
    return [(a, re.sub(r"`\((\.L_x_\d+)\)", lambda m: hex(labels[m.group(1)]), t)) for a, t in res]


def source_text(where: str) -> str:
    """The stripped source line of "file:line" under python/normfuse/kernels ('' if not found)."""
    import linecache  # (each file read once, whatever the number of lines asked)
    name, line = where.rsplit(":", 1)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "normfuse",
                        "kernels", name)
    return linecache.getline(path, int(line)).strip()


def loops(ins) -> list:
    """[(first, last) address] of each backward branch's loop."""
    out = []
    for a, t in ins:
        m = re.search(r"\bBRA\b.*?0x([0-9a-f]+)", t)
        if m and int(m.group(1), 16) < a:
            out.append((int(m.group(1), 16), a))
    return out


def loop_body(ins):
    """The instructions of the outermost backward branch's loop (the row-block walk)."""
    best = max(loops(ins), key=lambda lp: lp[1] - lp[0], default=None)
    return [(a, t) for a, t in ins if best[0] <= a <= best[1]] if best else []


def opcode(t):
    t = re.sub(r"^@!?U?P[T0-9]\s+", "", t)
    return t.split()[0] if t else ""


def measure(act, H, L, save=False, dump=None, weights=False, mma=None, by_line=0, ahead=False):
    """One cell's record. `mma`: the LayerNorm in the MMA layout (True), the loads' (False), or
    as the op picks it (None: `_resolve_ln_mma`)."""
    import tempfile
    import normfuse
    from normfuse.kernels.attention import (flash_norm_attention_naive,
                                            flash_norm_attention_save_naive)
    from normfuse.ops.flash_norm_attention import (DEFAULT_FNA_PASSES, MMA_FNA_PASSES,
                                                   _resolve_ln_mma, with_carry, with_merge)
    rt, cs, op = _args(act, H, L, save, weights)
    if mma is None:
        w = torch.empty(1) if weights else None
        mma, _ = _resolve_ln_mma("fna_sass", None, DEFAULT_FNA_PASSES, w, w, w)
    if mma:
        cs["LN_MMA"] = True
    passes = MMA_FNA_PASSES if mma else DEFAULT_FNA_PASSES
    if ahead:  # (True, or "carry")
        cs["STATS_AHEAD"] = 2 if ahead == "carry" else True
        passes = with_carry(passes) if ahead == "carry" else with_merge(passes)
    fn = flash_norm_attention_save_naive if save else flash_norm_attention_naive
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck = normfuse.compile(fn, args=rt, constexprs=cs, passes=passes, target="cuda:90", **op)
    asm = ck.kernel.asm
    with tempfile.TemporaryDirectory() as tmp:
        where = {} if by_line else None
        ins = sass(asm["cubin"], tmp, where)
        ptx = os.path.join(tmp, "k.ptx")
        with open(ptx, "w") as f:
            f.write(asm["ptx"])
        v = subprocess.run([_tool("ptxas"), "-arch=sm_90a", "-v", ptx, "-o",
                            os.path.join(tmp, "v.cubin")], capture_output=True, text=True)
        v = v.stdout + v.stderr
    body = loop_body(ins)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", v)
    regs = re.search(r"Used (\d+) registers", v)
    ops = {}
    for _, t in body:
        o = opcode(t).split(".")[0]
        ops[o] = ops.get(o, 0) + 1
    cell = f"{act}:{H}:{L}" + (":save" if save else "") + (":w" if weights else "")
    cgabar = {k: sum(1 for _, t in body if opcode(t).startswith(k))
              for k in ("UCGABAR_ARV", "UCGABAR_WAIT")}
    ptx_bar = {k: len(re.findall(rf"\bbarrier\.cluster\.{k}\b", asm["ptx"]))
               for k in ("arrive", "wait")}
    rec = dict(cell=cell + (":mma" if mma else ":loads") + (":carry" if ahead == "carry" else
                                                        ":ahead" if ahead else ""),
               body=len(body), kernel=len(ins), cgabar_body=cgabar, ptx_cluster_barriers=ptx_bar,
               spill_stores=int(spill.group(1)), spill_loads=int(spill.group(2)),
               regs=int(regs.group(1)), body_ops=dict(sorted(ops.items(), key=lambda kv: -kv[1])))
    if by_line:
        per = {}
        for a, _ in body:
            k = where.get(a, "?")
            per[k] = per.get(k, 0) + 1
        rec["body_by_line"] = sorted(per.items(), key=lambda kv: -kv[1])[:by_line]
    if dump:
        d = os.path.join(dump, rec["cell"].replace(":", "_"))
        os.makedirs(d, exist_ok=True)
        for key, ext in (("ttgir", "ttgir"), ("ptx", "ptx")):
            with open(os.path.join(d, f"kernel.{ext}"), "w") as f:
                f.write(asm[key])
        with open(os.path.join(d, "kernel.sass"), "w") as f:
            f.write("\n".join(f"{a:05x} {t}" for a, t in ins) + "\n")
        with open(os.path.join(d, "body.sass"), "w") as f:
            f.write("\n".join(f"{a:05x} {t}" for a, t in body) + "\n")
    return rec


def measure_core(act, H, L, rows=512):
    """The unfused pipeline's attention core at the cell (bench_attention's
    `attention_core_kv_resident`, K and V loaded once per program, `rows` rows a program in
    64-row steps, 4 warps, 2 stages: the fastest core on the H200): its row-step loop body."""
    import tempfile
    import normfuse
    from normfuse.kernels.attention import ACT_CODES
    from normfuse.reference_attention import default_qk_scale
    from normfuse.repro.bench_attention import attention_core_kv_resident
    q = torch.empty(1024, H, D, dtype=torch.bfloat16)
    kv = torch.empty(B, L, H, D, dtype=torch.bfloat16)
    rt = (q, kv, torch.empty_like(kv), torch.empty_like(q), torch.zeros(3 * 64, dtype=torch.int32),
          default_qk_scale(act, D))
    consts = dict(H=H, HKV=H, D=D, L=L, BLOCK_M=64, ROWS=rows, ACT=ACT_CODES[act])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ck = normfuse.compile(attention_core_kv_resident, args=rt, constexprs=consts, passes="",
                              target="cuda:90", num_warps=4, num_stages=2)
    with tempfile.TemporaryDirectory() as tmp:
        ins = sass(ck.kernel.asm["cubin"], tmp)
    return dict(cell=f"core:{act}:{H}:{L}", body=len(loop_body(ins)), kernel=len(ins))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--save", action="store_true", help="the training forward (g, lse stored)")
    ap.add_argument("--weights", action="store_true", help="LN weight and bias, RMS weight")
    ap.add_argument("--mma", action="store_true", help="the LayerNorm in the MMA layout "
                    "(LN_MMA, MMA_FNA_PASSES), whatever the op would pick")
    ap.add_argument("--loads", action="store_true", help="the LayerNorm in the loads' layout "
                    "(DEFAULT_FNA_PASSES), whatever the op would pick")
    ap.add_argument("--both", action="store_true", help="the loads' and the MMA layout")
    ap.add_argument("--by-line", type=int, default=0, metavar="N",
                    help="the N source lines with the most loop-body instructions")
    ap.add_argument("--core", action="store_true",
                    help="also the unfused pipeline's attention core at each cell (the "
                         "KV-resident core bench_attention times) and fused / core")
    ap.add_argument("--ahead", action="store_true", help="one cluster exchange a row block "
                    "(STATS_AHEAD, cluster-reduce{merge=true})")
    ap.add_argument("--ahead-both", action="store_true", help="the default and --ahead")
    ap.add_argument("--carry", action="store_true", help="the --ahead walk with the next "
                    "block's x tile carried to the next trip (stats_ahead='carry')")
    ap.add_argument("--ahead-all", action="store_true", help="the default, --ahead and --carry")
    ap.add_argument("--dump", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    recs = []
    for cell in a.cells.split(","):
        act, H, L = cell.split(":")
        forced = True if a.mma else False if a.loads else None
        aheads = ((False, True, "carry") if a.ahead_all else (False, True) if a.ahead_both
                  else ("carry",) if a.carry else (a.ahead,))
        for mma, ahead in [(m, h) for m in ((False, True) if a.both else (forced,)) for h in aheads]:
            r = measure(act, int(H), int(L), a.save, a.dump, a.weights, mma, a.by_line, ahead)
            recs.append(r)
            top = ", ".join(f"{k} {n}" for k, n in list(r["body_ops"].items())[:8])
            cb, pb = r["cgabar_body"], r["ptx_cluster_barriers"]
            print(f"{r['cell']:32s} body {r['body']:5d}  kernel {r['kernel']:5d}  spills "
                  f"{r['spill_stores']}/{r['spill_loads']} B  regs {r['regs']}  cgabar "
                  f"{cb['UCGABAR_ARV']}/{cb['UCGABAR_WAIT']} ptx {pb['arrive']}/{pb['wait']}"
                  f"  | {top}", flush=True)
            for where, n in r.get("body_by_line", []):
                print(f"    {n:5d}  {where:24s} {source_text(where)[:90]}", flush=True)
        if a.core:
            c = measure_core(act, int(H), int(L))
            c["fused_over_core"] = {r["cell"]: round(r["body"] / c["body"], 3)
                                    for r in recs if r["cell"].startswith(f"{act}:{H}:{L}")}
            recs.append(c)
            print(f"{c['cell']:26s} body {c['body']:5d}  kernel {c['kernel']:5d}  | fused / core "
                  + ", ".join(f"{k} {v}" for k, v in c["fused_over_core"].items()), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(recs, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
