"""ptxas spills of the FlashNormAttention forward (CPU, sm_90, D = L = 128, BLOCK_N 128, 2 stages)
with cluster-reduce{gather=once} (the default) against gather=once + early-loads, per tile.
    PYTHONPATH=python python3 bench/results/2026-12-03/session20/fna-fwd-ptxas/fna_fwd_ptxas.py"""
import json, os, re, warnings
import normfuse
from normfuse.kernels.attention import flash_norm_attention_naive as k, ACT_CODES
HERE = os.path.dirname(os.path.abspath(__file__))
SIG = dict(X="*bf16", K="*bf16", V="*bf16", OFFS="*i32", BLOCKS="*i32", LNW="*bf16", LNB="*bf16",
           RMSW="*bf16", OUT="*bf16", MEAN="*fp32", RSTD="*fp32", RRMS="*fp32", nbatch="i32",
           qk_scale="fp32", eps="fp32", rms_eps="fp32")
rows = []
for bm, nw in ((64, 4), (64, 8), (128, 8)):
    for early in (False, True):
        passes = ("cluster-reduce{gather=once" + (",early-loads=true}" if early else "}"),
                  "epilogue-norm", "residual-acc")
        for H in (2, 3, 4):
            for act in ("gelu_tanh", "softmax"):
                consts = dict(H=H, HKV=H, D=128, L=128, BLOCK_M=bm, BLOCK_N=128, ACT=ACT_CODES[act],
                              LOG_B=10, HAS_LNW=True, HAS_LNB=True, HAS_RMSW=True)
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    ck = normfuse.compile(k, signature=SIG, constexprs=consts, target="cuda:90",
                                          passes=passes, num_warps=nw, num_stages=2)
                sp = [str(x.message) for x in w if "spill" in str(x.message)]
                m = re.search(r"(\d+) bytes of spill stores and (\d+) bytes of spill loads per "
                              r"thread at (\d+) registers", sp[0]) if sp else None
                st, ld = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
                rows.append(dict(block_m=bm, num_warps=nw, early_loads=early, H=H, activation=act,
                                 spill_store_B=st, spill_load_B=ld, shared_B=ck.metadata.shared,
                                 moved=[r for r in ck.remarks if "early-loads" in r]))
                print(rows[-1], flush=True)
json.dump(rows, open(os.path.join(HERE, "fna_fwd_ptxas.json"), "w"), indent=1)
md = ["| BLOCK_M x warps | H | activation | spills st / ld B, gather=once | + early-loads | shared B |",
      "|---|---:|---|---|---|---:|"]
for r in rows:
    if r["early_loads"]:
        continue
    e = next(x for x in rows if x["early_loads"] and all(x[c] == r[c] for c in ("block_m", "num_warps", "H", "activation")))
    md.append(f"| {r['block_m']} x {r['num_warps']} | {r['H']} | {r['activation']} | "
              f"{r['spill_store_B']} / {r['spill_load_B']} | {e['spill_store_B']} / {e['spill_load_B']} | {r['shared_B']} |")
open(os.path.join(HERE, "fna_fwd_ptxas.md"), "w").write(
    "# FlashNormAttention forward: ptxas spills with and without early-loads (CPU, sm_90, D = L = 128, "
    "BLOCK_N 128, 2 stages, affine LayerNorm and RMSNorm weights)\n\n" + "\n".join(md) + "\n")
