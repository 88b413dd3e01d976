"""H200: Inductor's generated code of a model benchmark configuration, for comparing two of them
kernel by kernel (session 17: Inductor's GELU after normfuse's fused c_fc GEMM took 0.352 ms per
GPT-2 prefill against 0.209 after cuBLAS's, same shape and computation).

    PYTHONPATH=python python3 bench/compiled_code.py --out DIR [--model gpt2]
        [--configs stock+compile,normfuse+compile] [--profile-range]

For each configuration of `normfuse.repro.models` (built as the benchmark builds it, prefill,
no grad) the wrapper and kernels Inductor generated (`<config>.py`) and a summary line: buffers
Inductor assumed unaligned (fallback outputs it could not prove 16-byte aligned), alignment
asserts, and per generated Triton kernel its name and the pointer arguments it was specialized
as 16-byte divisible (its triton_meta's signature and configs), written to `kernels.json`.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def kernels_of(code: str) -> list[dict]:
    """[{name, signature, configs}] for every `def triton_...(` in `code`: its triton_meta's
    signature and its 'configs' entry (the arguments specialized as 16-byte divisible), as
    Inductor wrote them."""
    out = []
    for m in re.finditer(r"def (triton_\w+)\(", code):
        head = code[max(0, m.start() - 4000):m.start()]
        i = head.rfind("triton_meta=")
        meta = head[i:] if i >= 0 else ""
        sig = re.search(r"'signature': \{([^}]*)\}", meta)
        cfg = re.search(r"'configs': (\[.*?\])\}", meta, re.S)
        out.append({"name": m.group(1), "signature": sig.group(1) if sig else "",
                    "configs": cfg.group(1)[:400] if cfg else ""})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="gpt2")
    ap.add_argument("--configs", default="stock+compile,normfuse+compile")
    ap.add_argument("--profile-range", action="store_true",
                    help="after the dump, two more forwards, then one inside the NVTX range "
                         "profile/<config> (for ncu --nvtx --nvtx-include 'profile/')")
    a = ap.parse_args(argv)
    import torch
    from torch._inductor.utils import run_and_get_code

    from normfuse.repro import models as M
    os.makedirs(a.out, exist_ok=True)
    spec = M.SPECS[a.model]
    sd, ids, _ = M.make_state(spec, "cuda", torch.bfloat16)
    report = {}
    for name in a.configs.split(","):
        cfg = M._config(name)
        m = M.build_configuration(spec, cfg, sd, "cuda", torch.bfloat16, {}).eval()
        f = M.compile_for(m, cfg)
        with torch.no_grad():
            _, codes = run_and_get_code(lambda: M._forward(f, ids))
        code = "\n".join(codes)
        with open(os.path.join(a.out, name.replace("+", "-") + ".py"), "w") as fh:
            fh.write(code)
        report[name] = {"unaligned": code.count("is assumed to be not aligned"),
                        "alignment_asserts": code.count("assert_alignment("),
                        "kernels": kernels_of(code)}
        print(name, {k: v for k, v in report[name].items() if k != "kernels"},
              [k["name"] for k in report[name]["kernels"]], flush=True)
        if a.profile_range:
            with torch.no_grad():
                for _ in range(2):
                    M._forward(f, ids)
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_push("profile")
                torch.cuda.nvtx.range_push(name)
                M._forward(f, ids)
                torch.cuda.nvtx.range_pop()
                torch.cuda.nvtx.range_pop()
                torch.cuda.synchronize()
        del f, m
        torch._dynamo.reset()
    with open(os.path.join(a.out, "kernels.json"), "w") as fh:
        json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
