"""Compile every lowered (hopper-ws) kernel configuration the ops and tests produce, on the CPU,
and write each one's PTX (debug info stripped) to a directory, to diff two versions of the code.

    PYTHONPATH=python python3 tools/lowered_ptx.py OUT_DIR [--only SUBSTRING] [--list]
    python3 tools/lowered_ptx.py --compare BEFORE_DIR AFTER_DIR

What it compiles (ahead of time for sm_90, no GPU):
- the pre-norm ops' kernels (`ops.aot_compile`): RMSNorm and LayerNorm with g (and beta) folded
  into the weight or applied in the k-loop (the ops then use bulk tensor copies, as
  `_prepare` decides), and the plain GEMM; under the default pipeline, with the statistics shared
  per row block (`hopper-ws{stats-share=true}`, on coop and on coop2) and with the ping-pong schedule; at shapes with
  N != K that pick each tile config of `kernels/configs.py` that the template takes;
- the GEMM kernels the hopper-ws tests and lit inputs write by hand (2-D grid, offsets, a bias);
- the post-norm ops' lowered kernels (`post_configs`) and the training dX kernel under
  hopper-ws{post-norm=true} (`dx_configs`: the pre-norm ops' form, and the post-norm block's
  with SiLU' and a residual gradient).

A configuration that does not lower is recorded as `NAME.missed` (its remark), so a change in
what lowers shows in the diff too. Each file is the PTX with `.loc`/`.file` lines and the DWARF
sections removed (they carry line numbers of the Python source). `index.txt` lists every
configuration with a digest of its PTX and the kernel's register count (ptxas -v).

`--compare` reads two such directories and says per configuration: identical; identical once
virtual registers are renumbered in order of appearance (`%r12` -> `%r3`: what removing an
unused value does to the rest); or different, with the instructions (registers and parameter
numbers normalized) one side has more of than the other, and the number of `.param` lines.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

# (M, K, N): N != K everywhere; tile configs: 128x256 persistent, 128x128 (N < 512 and M <= 1024)
SHAPES = [(262144, 1024, 2048), (8192, 2048, 1536), (262144, 512, 384), (1000, 1032, 520)]

PIPELINES = {
    "default": "default",
    "share": "lazy-prenorm,hopper-ws{stats-share=true}",
    "coop2-share": "lazy-prenorm,hopper-ws{schedule=coop2,stats-share=true}",
    "pingpong": "lazy-prenorm,hopper-ws{schedule=pingpong}",
}


def strip_debug(ptx: str) -> str:
    """PTX without line info: `.loc`/`.file` directives, `@"..."` debug labels and the DWARF
    sections."""
    out, skip = [], False
    for line in ptx.splitlines():
        s = line.strip()
        if s.startswith(".section") and ".debug" in s:
            skip = True
            continue
        if skip:
            if s == "}":
                skip = False
            continue
        if s.startswith((".loc", ".file")) or s.startswith("$L__func_begin") or s.startswith("$L__func_end"):
            continue
        if s.startswith("$L__tmp"):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


_REG = re.compile(r"%(rd|r|p|f|fd|h|hh|rs|b)(\d+)")


def normalize(ptx: str) -> str:
    """`ptx` with virtual registers renumbered by first appearance per class, the register
    declarations dropped (their counts follow), and labels renumbered likewise."""
    seen: dict = {}

    def reg(m):
        key = (m.group(1), m.group(2))
        if key not in seen:
            seen[key] = sum(1 for k in seen if k[0] == m.group(1))
        return f"%{m.group(1)}{seen[key]}"
    labels: dict = {}

    def lab(m):
        labels.setdefault(m.group(0), len(labels))
        return f"$L__N{labels[m.group(0)]}"
    out = []
    for line in ptx.splitlines():
        if line.strip().startswith(".reg "):
            continue
        line = _REG.sub(reg, line)
        line = re.sub(r"\$L__\w+", lab, line)
        out.append(line)
    return "\n".join(out)


def _instructions(ptx: str):
    from collections import Counter
    c = Counter()
    for line in normalize(ptx).splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".", "{", "}", "$L")) or s.endswith(":"):
            continue
        s = re.sub(r"_param_\d+", "_param_N", s)  # a parameter removed renumbers the later ones
        c[re.sub(r"%\w+\d+", "%x", s)] += 1
    return c


def compare(before: str, after: str) -> int:
    names = sorted({f for f in os.listdir(before) if f.endswith((".ptx", ".missed"))}
                   | {f for f in os.listdir(after) if f.endswith((".ptx", ".missed"))})
    stems = sorted({n.rsplit(".", 1)[0] for n in names})
    counts: dict = {}
    for stem in stems:
        a = _read(before, stem)
        b = _read(after, stem)
        if a == b:
            verdict = "identical" + (" (missed on both)" if a and a[0] == "missed" else "")
        elif a is None or b is None or a[0] != b[0]:
            verdict = f"{a[0] if a else 'absent'} -> {b[0] if b else 'absent'}"
        elif a[0] == "missed":
            verdict = f"missed on both, the reason now: {b[1].strip()}"
        elif normalize(a[1]) == normalize(b[1]):
            verdict = "identical up to register numbering"
        else:
            ia, ib = _instructions(a[1]), _instructions(b[1])
            gone, new = ia - ib, ib - ia
            pa = [x for x in a[1].splitlines() if ".param" in x]
            pb = [x for x in b[1].splitlines() if ".param" in x]
            verdict = (f"differs: {sum(gone.values())} instructions fewer, {sum(new.values())} more; "
                       f".param lines {len(pa)} -> {len(pb)}")
            for ins, n in sorted(gone.items()):
                verdict += f"\n    - {n} x {ins}"
            for ins, n in sorted(new.items()):
                verdict += f"\n    + {n} x {ins}"
        counts[verdict.split(":")[0].split(" (")[0]] = counts.get(verdict.split(":")[0].split(" (")[0], 0) + 1
        print(f"{stem}: {verdict}")
    print("summary:", ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


def _read(d: str, stem: str):
    for ext, kind in ((".ptx", "ptx"), (".missed", "missed")):
        p = os.path.join(d, stem + ext)
        if os.path.exists(p):
            with open(p) as f:
                return kind, f.read()
    return None


def op_configs():
    """(name, thunk) for the ops' kernels."""
    from normfuse.ops import prenorm_linear as ops
    for M, K, N in SHAPES:
        for kind, fold in (("gemm", True), ("rms", True), ("rms", False), ("ln", True), ("ln", False)):
            for pname, spec in PIPELINES.items():
                if kind == "gemm" and pname.endswith("share"):
                    continue
                if pname.endswith("share") and not fold:
                    continue  # with g in the loop stats-share does not apply: the default's kernel
                passes = spec if kind != "gemm" or pname == "default" else spec.replace("lazy-prenorm,", "")
                if kind == "gemm" and pname == "default":
                    passes = "hopper-ws"
                flags = {} if kind == "gemm" else {"has_g": not fold}
                if kind == "ln":
                    flags["has_b"] = not fold
                name = f"{kind}{'' if kind == 'gemm' else ('-fold' if fold else '-g')}-{pname}-M{M}-K{K}-N{N}"

                def thunk(kind=kind, M=M, K=K, N=N, passes=passes, flags=flags, fold=fold):
                    return ops.aot_compile(kind, M=M, N=N, K=K, passes=passes, tma=not fold, **flags)
                yield name, thunk
                if not fold and pname == "default" and (M, K, N) == SHAPES[0]:
                    # g in the loop with pointer loads (tma=False): one program per tile
                    def ptr(kind=kind, M=M, K=K, N=N, passes=passes, flags=flags):
                        return ops.aot_compile(kind, M=M, N=N, K=K, passes=passes, tma=False, **flags)
                    yield name.replace("-g-", "-g-ptr-"), ptr


def post_configs():
    """(name, thunk) for the post-norm ops' lowered kernels (`postnorm_linear.
    lowered_postnorm_passes`): RMSNorm and LayerNorm, coop and ping-pong, bias and residual (the
    residual by TMA) or neither, rows of 4 N tiles and of 3 (ragged), a one-tile row."""
    from normfuse.ops import postnorm_linear as post
    for kind in ("rms", "ln"):
        for sched, N, extra in (("coop", 1024, True), ("pingpong", 1024, True), ("coop", 520, False),
                                ("coop", 200, True)):
            name = f"post-{kind}-{sched}-N{N}{'-bias-res' if extra else ''}"

            def thunk(kind=kind, sched=sched, N=N, extra=extra):
                M, K = 8192, 1024
                return post.aot_compile_postnorm(
                    kind, M=M, N=N, K=K, has_bias=extra, has_res=extra,
                    config=post.lowered_postnorm_config(M, N, K, sched),
                    passes=post.lowered_postnorm_passes(sched))
            yield name, thunk


def _dx_thunk(kind, sched, bm, bn, M, R, N, *, act=0, dres=False, xn=True):
    """A thunk compiling `norm_backward_naive` (the dX GEMM, g, the dg (dbeta) partials; n stored
    when `xn`; SiLU' when act=1; a residual gradient when `dres`) under
    hopper-ws{post-norm=true} with schedule `sched` at tile bm x bn, for M x R x N."""
    def thunk():
        import torch
        import normfuse
        from normfuse.kernels import backward
        from normfuse.ops.prenorm_linear import _Spec
        b, f = _Spec(torch.bfloat16), _Spec(torch.float32)
        args = (b, b, b, f, f, b, b, b, b, f, f, b, M, R, R, N, N, N if dres else 0, N,
                N if xn else 0)
        consts = dict(N=N, BLOCK_M=bm, BLOCK_N=bn, BLOCK_R=64, IS_LN=kind == "ln",
                      HAS_GEMM=True, HAS_G=True, HAS_B=kind == "ln", ACT=act, HAS_DRES=dres,
                      HAS_DG=True, EVEN_R=R % 64 == 0, HAS_XN=xn,
                      num_warps=8 if sched == "coop" else 4, num_stages=3)
        passes = "hopper-ws{post-norm=true" + (
            ",schedule=pingpong" if sched == "pingpong" else "") + "}"
        sig, cs, attrs, options, _ = normfuse.compiler.specialize(
            backward.norm_backward_naive, args, consts)
        return normfuse.compile(backward.norm_backward_naive, signature=sig, constexprs=cs,
                                attrs=attrs, passes=passes, **options)
    return thunk


def dx_configs():
    """(name, thunk) for the training dX kernel (`kernels/backward.py:norm_backward_naive` with
    the dX GEMM, g, the dg (dbeta) partials and n stored, as the pre-norm ops launch it) under
    hopper-ws{post-norm=true}: RMSNorm and LayerNorm, coop 128 x 128 and 128 x 256, ping-pong
    64 x 128, at the blog's M = 262144, K = N = 1024 and the model shape T = 8192, K = N = 2048.
    Spelled here in full (not through the ops' switch) so that older code compiles it too."""
    for kind in ("rms", "ln"):
        for sched, bm, bn in (("coop", 128, 128), ("pingpong", 64, 128), ("coop", 128, 256)):
            for M, R, N in ((262144, 1024, 1024), (8192, 2048, 2048)):
                yield (f"dx-{kind}-{sched}-{bm}x{bn}-M{M}-R{R}-N{N}",
                       _dx_thunk(kind, sched, bm, bn, M, R, N))
    # the regrouped post-norm block's form (ops.training._mlp_bwd_impl: SiLU' between the norm
    # and the GEMM, no n stored) without and with a residual gradient (DRES, pointer loads in FIN)
    for kind in ("rms", "ln"):
        for sched, bm in (("coop", 128), ("pingpong", 64)):
            for dres in (False, True):
                M, R, N = 8192, 2048, 2048
                yield (f"dx-block-{kind}-{sched}-{bm}x128-act1{'-dres' if dres else ''}"
                       f"-M{M}-R{R}-N{N}",
                       _dx_thunk(kind, sched, bm, 128, M, R, N, act=1, dres=dres, xn=False))


# The tests' plain GEMM over offsets (test_hopper_ws.py's `_GEMM` with its plain store); the
# lit inputs' rms_fused and gemm_bias are imported from test/lit/inputs/hopper_ws_kernels.py.
_HAND = '''
import triton
import triton.language as tl


@triton.jit
def gemm_offsets(X, W, Y, M, N, K, sx, sw, sy, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(X + rm[:, None] * sx + (k0 + rk)[None, :], mask=(k0 + rk)[None, :] < K, other=0.0)
        b = tl.load(W + rn[None, :] * sw + (k0 + rk)[:, None], mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(Y + rm[:, None] * sy + rn[None, :], acc.to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))
'''


def hand_configs(tmpdir):
    """(name, thunk) for the hand-written GEMM kernels of the tests and lit inputs."""
    import importlib.util
    path = os.path.join(tmpdir, "nf_lowered_ptx_kernels.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(_HAND))
    spec = importlib.util.spec_from_file_location("nf_lowered_ptx_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    lit_inputs = os.path.join(HERE, "..", "test", "lit", "inputs")
    if lit_inputs not in sys.path:
        sys.path.insert(0, lit_inputs)
    import hopper_ws_kernels as lit
    base = {"X": "*bf16", "W": "*bf16", "Y": "*bf16", "M": "i32", "N": "i32", "K": "i32",
            "sx": "i32", "sw": "i32", "sy": "i32", "BM": "constexpr", "BN": "constexpr",
            "BK": "constexpr"}
    consts = {"BM": 128, "BN": 256, "BK": 64}
    cases = [("gemm_offsets", base), ("rms_fused", dict(base, eps="fp32")),
             ("gemm_bias", dict(base, BIAS="*bf16"))]
    for fname, sig in cases:
        fn = getattr(mod if fname == "gemm_offsets" else lit, fname)
        sig = {p: sig[p] for p in fn.arg_names}
        for pname in ("default", "pingpong"):
            passes = "hopper-ws" if pname == "default" else "hopper-ws{schedule=pingpong}"

            def thunk(fn=fn, sig=sig, passes=passes):
                import normfuse
                # pointers and the row strides 16-byte aligned, as the ops launch them
                attrs = {(fn.arg_names.index(p),): [["tt.divisibility", 16]]
                         for p in ("X", "W", "Y", "sx", "sw", "sy")}
                return normfuse.compile(fn, signature=sig, constexprs=consts, attrs=attrs,
                                        passes=passes, num_warps=8, num_stages=3)
            yield f"hand-{fname}-{pname}", thunk


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="+", help="output directory (or, with --compare, two directories)")
    ap.add_argument("--compare", action="store_true", help="compare two output directories")
    ap.add_argument("--only", default=None, help="configurations whose name contains this")
    ap.add_argument("--list", action="store_true", help="print the configuration names only")
    ap.add_argument("--no-resources", action="store_true", help="skip ptxas -v (registers)")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.out)
    args.out = args.out[0]
    import tempfile
    import warnings
    warnings.simplefilter("ignore")
    os.makedirs(args.out, exist_ok=True)
    index = []
    with tempfile.TemporaryDirectory() as tmp:
        configs = list(op_configs()) + list(hand_configs(tmp)) + list(post_configs()) + \
            list(dx_configs())
        for name, thunk in configs:
            if args.only and args.only not in name:
                continue
            if args.list:
                print(name)
                continue
            ck = thunk()
            if ck.lowered is None:
                why = [r for r in ck.remarks if "[hopper-ws]" in r]
                text = (why[-1] if why else "no hopper-ws remark") + "\n"
                text = re.sub(r"^\S+:\d+:\d+: ", "", text)
                with open(os.path.join(args.out, name + ".missed"), "w") as f:
                    f.write(text)
                index.append(f"{name}\tmissed")
                print(f"{name}: missed", flush=True)
                continue
            ptx = strip_debug(ck.asm["ptx"])
            with open(os.path.join(args.out, name + ".ptx"), "w") as f:
                f.write(ptx)
            regs = "" if args.no_resources else f"\tregs={ck.resources()['registers']}"
            digest = hashlib.sha256(ptx.encode()).hexdigest()[:16]
            index.append(f"{name}\t{digest}{regs}")
            print(f"{name}: {digest}{regs}", flush=True)
    if not args.list:
        with open(os.path.join(args.out, "index.txt"), "w") as f:
            f.write("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
