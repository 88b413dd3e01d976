import warnings, json, re, normfuse
from normfuse.kernels.attention import flash_norm_attention_naive as k, ACT_CODES
from normfuse import device
rows = []
for bm, nw in ((64, 4), (64, 8), (32, 4), (128, 8)):
  for gather in ("each", "once"):
    passes = (f"cluster-reduce{{gather={gather}}}", "epilogue-norm", "residual-acc")
    for H in (2, 3, 4):
      for act in ("gelu_tanh", "softmax"):
        sig = dict(X="*bf16", K="*bf16", V="*bf16", OFFS="*i32", BLOCKS="*i32", LNW="*bf16", LNB="*bf16", RMSW="*bf16",
                   OUT="*bf16", MEAN="*fp32", RSTD="*fp32", RRMS="*fp32", nbatch="i32", qk_scale="fp32", eps="fp32", rms_eps="fp32")
        consts = dict(H=H, HKV=H, D=128, L=128, BLOCK_M=bm, BLOCK_N=128, ACT=ACT_CODES[act], LOG_B=10, HAS_LNW=False, HAS_LNB=False, HAS_RMSW=False)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ck = normfuse.compile(k, signature=sig, constexprs=consts, target="cuda:90", passes=passes, num_warps=nw, num_stages=2)
        sp = [str(x.message) for x in w if "spill" in str(x.message)]
        m = re.search(r"(\d+) bytes of spill stores and (\d+) bytes of spill loads per thread at (\d+) registers", sp[0]) if sp else None
        st, ld, regs = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, None)
        ttgir = ck.asm["ttgir"]
        rows.append(dict(block_m=bm, num_warps=nw, gather=gather, H=H, activation=act, spill_store_B=st, spill_load_B=ld,
                         registers=regs, shared_B=ck.metadata.shared, cluster_ctas=ck.metadata.num_ctas,
                         dsmem_loads_in_ttgir=ttgir.count("ld.shared::cluster")))
        print(rows[-1], flush=True)
json.dump(rows, open("bench/results/2026-12-03/session19/fna-fwd-ptxas/fna_fwd_ptxas.json", "w"), indent=1)
md = ["| BLOCK_M | warps | gather | H | activation | spills st / ld B | shared B | DSMEM loads (TTGIR text) |", "|---:|---:|---|---:|---|---|---:|---:|"]
for r in rows:
    md.append(f"| {r['block_m']} | {r['num_warps']} | {r['gather']} | {r['H']} | {r['activation']} | {r['spill_store_B']} / {r['spill_load_B']} | {r['shared_B']} | {r['dsmem_loads_in_ttgir']} |")
open("bench/results/2026-12-03/session19/fna-fwd-ptxas/fna_fwd_ptxas.md", "w").write(
  "# FlashNormAttention forward: ptxas spills per tile and gather (CPU, sm_90, D = L = 128, BLOCK_N 128, 2 stages, default passes with cluster-reduce{gather=...})\n\n" + "\n".join(md) + "\n")
