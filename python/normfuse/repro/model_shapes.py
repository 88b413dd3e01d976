"""The model-shape kernel sweep (issue 19, item 5): the fused ops on the GEMM shapes of the model
benchmark's models against cuBLAS's GEMM alone.

    PYTHONPATH=python python3 -m normfuse.repro --model-shapes [--out DIR]
    PYTHONPATH=python python3 -m normfuse.repro.model_shapes --out DIR [--warm-procs P] [--t 8192]
                                                             [--form pre|post]
                                                             [--shapes models|post-grid|bert-blocks]
                                                             [--options "NAME,NAME"]

Shapes (`shapes()`), derived from normfuse.repro.models.SPECS: every GEMM that reads a norm's
output, with siblings that read the same norm concatenated along N (what the ops' list-of-weights
form computes in one launch):

    Llama   qkv  K 2048, N (16 + 2 * 4) * 128 = 3072;  gate/up  K 2048, N 2 * 5632 = 11264
    Qwen2   qkv  K 1536, N (12 + 2 * 2) * 128 = 2048 (bias);  gate/up  K 1536, N 2 * 8960 = 17920
    GPT-2   c_attn  K 1280, N 3840 (LayerNorm, bias);  c_fc  K 1280, N 5120 (LayerNorm, bias)
    BERT    post-norm: LayerNorm(x W^T + bias + residual): attention output K 1024, N 1024;
            output K 4096, N 1024

plus each gate alone (N 5632, 8960: where gate and up run as two GEMMs, e.g. under Liger's SwiGLU)
and the issue's other N that are not powers of two: K 1280 N 2560 (LayerNorm), K 2048 N 6144,
K 4096 N 11008; each at T = 4096, 8192 and 16384 rows, bf16.

Per cell:

    cublas_ms      F.linear's GEMM alone (torch.matmul / torch.addmm into a preallocated output:
                   cuBLAS), the bias included where the model has one
    norm_ms        the best standalone norm: min(eager, torch.compile(dynamic=False)) of
                   F.rms_norm / F.layer_norm over [T, K] (post-norm: of layer_norm(y + residual)
                   over [T, N]); both recorded
    unfused_ms     cublas_ms + norm_ms
    block_compiled_ms  post-norm only: torch.compile(dynamic=False) of the whole unfused block,
                   norm(F.linear(x, W, bias) + residual) (issue 20's baseline for BERT-style
                   blocks: Inductor may fuse the residual add and the norm into the GEMM's
                   epilogue or one kernel after it)
    options        the op under each option of `PRE_OPTIONS` / `POST_OPTIONS` (tile config and the
                   hopper-ws or cluster-reduce options that exist: schedule coop | coop2 |
                   pingpong, release-early (off in the named options but the last),
                   stages, stats-share; block_n, exchange; the lowered
                   post-norm, coop | pingpong): ms, ok, err, lowered, ran_lowered
    best           the fastest option whose output passed the check; best_over_cublas is the
                   issue's ratio (goal <= 1.03)

Check before timing, per option: outputs poisoned with NaN, then every element written; the rows
of a sample (the first and the last 512) within 1.5x the naive kernel's error against the fp64
oracle (+1e-6); the whole output within 3x that error of the naive kernel's whole output (a tile
computed wrongly anywhere fails). An option that fails is recorded with ok = false and not timed.
Times: cuBLAS, the compiled block and every option that passed its check are timed in ROUNDS
rounds (`--rounds`, default 3), round-robin, each a `triton.testing.do_bench` median (warmup 10
ms, rep REP_MS = 40 ms); the record keeps each one's rounds and their median (the standalone
norms: one do_bench each, rep 60 ms). Writes DIR/model_shapes.json
and DIR/model_shapes.md. Every kernel and compiled norm is compiled first in child processes
(`normfuse.repro.warm`, one per option and one per T for the norms).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass

__all__ = ["Shape", "Option", "shapes", "PRE_OPTIONS", "POST_OPTIONS", "T_VALUES", "run",
           "table", "best_option", "option_summary", "warm_jobs", "warm_one", "bench", "main"]

T_VALUES = (4096, 8192, 16384)
SAMPLE_ROWS = 512
EPS = {"rms": 1e-6, "ln": 1e-5}


@dataclass(frozen=True)
class Shape:
    model: str
    site: str
    form: str        # "pre": norm(x) @ W^T (+ bias); "post": norm(x @ W^T + bias + residual)
    kind: str        # "rms" | "ln"
    K: int
    N: int
    bias: bool
    residual: bool = False

    @property
    def label(self) -> str:
        return f"{self.model} {self.site}"


# `--shapes post-grid` (issue 20: where the lowered post-norm's ping-pong 128x128 tiles beat its
# coop 128x256 ones): BERT-style blocks, LayerNorm(x W^T + bias + residual), over these K and N
# instead of the models' shapes. Set through the environment so that the warm-up children sweep
# the same shapes and options.
POST_GRID_K = (512, 768, 1024, 2048, 4096)
POST_GRID_N = (768, 1024, 2048)
SHAPES_ENV, OPTIONS_ENV = "NORMFUSE_MODEL_SHAPES", "NORMFUSE_MODEL_SHAPES_OPTIONS"
SHAPE_SETS = ("models", "post-grid", "bert-blocks")
# `--shapes bert-blocks` (issue 20's goal: BERT-style blocks, K, N in {1024, 4096} with bias and
# residual, T = 8192-32768, faster than torch.compile's dense + bias + residual + LayerNorm)
BERT_BLOCKS_KN = (1024, 4096)


def post_grid(ks=POST_GRID_K, ns=POST_GRID_N, model="grid") -> list[Shape]:
    return [Shape(model, f"K {k} N {n}", "post", "ln", k, n, True, True) for k in ks for n in ns]


def shapes() -> list[Shape]:
    """The sweep's (K, N): from the benchmark models (see the module doc), without repeats, or
    the post-norm grid where the environment asks for it (`--shapes post-grid`)."""
    which = os.environ.get(SHAPES_ENV, "models")
    if which == "post-grid":
        return post_grid()
    if which == "bert-blocks":
        return post_grid(BERT_BLOCKS_KN, BERT_BLOCKS_KN, "bert-block")
    from .models import MAIN_MODELS, SPECS
    out: list[Shape] = []
    for name in MAIN_MODELS:
        s = SPECS[name]
        d = s.dims
        if s.family in ("llama", "qwen2"):
            h, heads, kv, inter = (d["hidden_size"], d["num_attention_heads"],
                                   d["num_key_value_heads"], d["intermediate_size"])
            hd = h // heads
            qkv_bias = s.family == "qwen2"
            out += [Shape(name, "qkv", "pre", "rms", h, (heads + 2 * kv) * hd, qkv_bias),
                    Shape(name, "gate/up", "pre", "rms", h, 2 * inter, False),
                    Shape(name, "gate", "pre", "rms", h, inter, False),
                    # each sibling alone: what runs when their outputs must be contiguous
                    # (normfuse + Liger: Liger's RoPE copies a packed output's column slices)
                    Shape(name, "q", "pre", "rms", h, heads * hd, qkv_bias),
                    Shape(name, "k/v", "pre", "rms", h, kv * hd, qkv_bias)]
        elif s.family == "gpt2":
            h = d["n_embd"]
            out += [Shape(name, "c_attn", "pre", "ln", h, 3 * h, True),
                    Shape(name, "c_fc", "pre", "ln", h, 4 * h, True)]
        elif s.family == "bert":
            h, inter = d["hidden_size"], d["intermediate_size"]
            out += [Shape(name, "attention.output", "post", "ln", h, h, True, True),
                    Shape(name, "output", "post", "ln", inter, h, True, True)]
    out += [Shape("extra", "N 2560", "pre", "ln", 1280, 2560, True),
            Shape("extra", "N 6144", "pre", "rms", 2048, 6144, False),
            Shape("extra", "N 11008", "pre", "rms", 4096, 11008, False),
            # issue 20's wide post-norm cells (K = N = 4096 / 8192, its goal at M = 8192)
            Shape("extra", "post 4096", "post", "rms", 4096, 4096, False),
            Shape("extra", "post 4096", "post", "ln", 4096, 4096, False),
            Shape("extra", "post 8192", "post", "rms", 8192, 8192, False),
            Shape("extra", "post 8192", "post", "ln", 8192, 8192, False)]
    seen, uniq = set(), []
    for s in out:
        key = (s.form, s.kind, s.K, s.N, s.bias, s.residual)
        if key not in seen:
            seen.add(key)
            uniq.append(s)
    return uniq


@dataclass(frozen=True)
class Option:
    """One way to run the op: a tile config (None: the op's table) and the pipeline
    ('default': the op's own choice)."""
    name: str
    config: tuple | None      # GemmConfig / PostNormConfig fields
    passes: str | tuple

    def make_config(self, form: str):
        if self.config is None:
            return None
        from ..kernels.configs import GemmConfig, PostNormConfig
        return (GemmConfig if form == "pre" else PostNormConfig)(*self.config)


def _ws(opts: str = "") -> str:
    """The default pipeline with hopper-ws{opts}."""
    from ..pipeline import DEFAULT_PIPELINE
    return ",".join(DEFAULT_PIPELINE[:-1]) + ",hopper-ws" + ("{" + opts + "}" if opts else "")


_C256 = (128, 256, 64, 8, 8, 3, True)    # the table's tile for N >= 512 (persistent)
_C128 = (128, 128, 64, 8, 8, 3, False)   # the standard Hopper tile
_C128K128 = (128, 128, 128, 8, 8, 3, False)
PRE_OPTIONS = (
    Option("default", None, "default"),
    # (release-early, on by default since session 15, is off in these options as they were
    # measured, but the coop2 one named so)
    Option("128x256 coop", _C256, "ws:schedule=coop,release-early=false"),
    Option("128x256 coop stats-share", _C256, "ws:schedule=coop,stats-share=true,release-early=false"),
    # coop's tiles with each warpgroup in its own partition on half of the rows, and with the
    # statistics after the wait the previous ring slot released before them (2026-12-02: both
    # faster than coop on the blog cells, bench/results/2026-12-02/session15)
    Option("128x256 coop2", _C256, "ws:schedule=coop2,release-early=false"),
    Option("128x256 coop2 release-early", _C256, "ws:schedule=coop2,release-early=true"),
    # coop2 with the statistics shared per row block (release-early where they are late, as the
    # default; 2026-12-03, session16/power-c2s: 1.6-2.2 % faster than the default at 8 N tiles
    # per row in steady state on the blog cells, 3 % slower at 4)
    Option("128x256 coop2 stats-share", _C256, "ws:schedule=coop2,stats-share=true"),
    Option("128x128 coop", _C128, "ws:schedule=coop,release-early=false"),
    Option("128x128 coop stats-share", _C128, "ws:schedule=coop,stats-share=true,release-early=false"),
    Option("128x128 coop stages=4", _C128, "ws:schedule=coop,stages=4,release-early=false"),
    Option("128x128 pingpong", _C128, "ws:schedule=pingpong,release-early=false"),
    # 128-wide k-steps (stages as shared memory allows: 2): the template's consumer k-step has
    # two bar.syncs over both warpgroups and a slot release whatever the tile (SASS, sm_90), so
    # 128x128x64 pays them per half the MMA work of 128x256x64; these halve the k-steps
    Option("128x128x128 coop", _C128K128, "ws:schedule=coop,release-early=false"),
    Option("128x128x128 pingpong", _C128K128, "ws:schedule=pingpong,release-early=false"),
)
POST_OPTIONS = (
    Option("default", None, "default"),
    Option("128x128 tiles", (128, 128, 64, 8, 3, False), "default"),
    Option("exchange=global", None, "post:exchange=global"),
    Option("64x256 tiles", (64, 256, 64, 8, 3, False), "default"),
    # hopper-ws{post-norm=true} (the lowered form, not the default yet): coop 128x256 and
    # ping-pong 64x256, the tiles its spelling picks (postnorm_linear.lowered_postnorm_config),
    # and ping-pong at 128x128 (less L2 traffic per FLOP than 64x256, twice the N tiles)
    Option("lowered coop", None, "post:lowered=coop"),
    Option("lowered pingpong", None, "post:lowered=pingpong"),
    Option("lowered pingpong 128x128", (128, 128, 64, 4, 3, False), "post:lowered=pingpong"),
    # what the ops launch by default: the schedule and tiles lowered_postnorm_choice picks
    Option("lowered auto", None, "post:lowered=auto"),
)


def _passes(opt: Option, form: str):
    """(passes for the op, extra keyword arguments)."""
    from ..ops.postnorm_linear import (DEFAULT_POSTNORM_PASSES, lowered_postnorm_passes,
                                       postnorm_passes)
    p = opt.passes
    if p == "default":
        return ("default" if form == "pre" else DEFAULT_POSTNORM_PASSES), {}
    if p.startswith("ws:"):
        return _ws(p[3:]), {}
    if p.startswith("post:exchange="):
        return postnorm_passes(exchange=p.split("=", 1)[1]), {}
    if p == "post:lowered=auto":  # (resolved per shape in _prepare)
        return lowered_postnorm_passes("coop"), {}
    if p.startswith("post:lowered="):
        return lowered_postnorm_passes(p.split("=", 1)[1]), {}
    raise ValueError(f"unknown option passes {p!r}")


def options_for(form: str) -> tuple:
    return PRE_OPTIONS if form == "pre" else POST_OPTIONS


def selected(opt: Option) -> bool:
    """Whether `--options` (the environment's comma-separated option names) keeps `opt`."""
    names = os.environ.get(OPTIONS_ENV, "").strip()
    return not names or opt.name in {n.strip() for n in names.split(",")}


# ---------------------------------------------------------------------------------------------
# One cell
# ---------------------------------------------------------------------------------------------

def _bench(fn, rep: int = 60) -> float:
    from triton.testing import do_bench
    return float(do_bench(fn, warmup=10, rep=rep, return_mode="median"))


# cuBLAS and the options that passed their check are timed in ROUNDS rounds, round-robin (each
# round a do_bench of every one of them in turn, REP_MS each), and each gets the median of its
# rounds: on the H200 one cell's identical kernel measured 0.312-0.340 ms in two runs'
# columns (Qwen2's gate, 2026-12-01 / 12-02) and cuBLAS 0.294-0.308, so a single do_bench per
# option compared options and runs through the machine's drift.
ROUNDS = 3
REP_MS = 40


def time_round_robin(fns: dict, rounds: int | None = None, bench=None) -> dict:
    """{name: [ms of each round]}: every callable of `fns` timed once per round, in their order,
    `rounds` times (default ROUNDS; `bench(fn)` -> ms, default do_bench with REP_MS)."""
    rounds = ROUNDS if rounds is None else rounds
    bench = bench or (lambda fn: _bench(fn, REP_MS))
    out = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            out[name].append(bench(fn))
    return out


def _rel32(out, ref) -> float:
    """||out - ref||_F / ||ref||_F in fp32 (whole outputs: fp64 copies would take GBs)."""
    import torch
    a, b = out.float(), ref.float()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b))


def _tensors(shape: Shape, T: int, device="cuda"):
    import torch
    gen = torch.Generator(device=device).manual_seed(shape.K * 31 + shape.N)
    bf = torch.bfloat16
    r = lambda *s: torch.randn(*s, device=device, generator=gen)  # noqa: E731
    vec = shape.K if shape.form == "pre" else shape.N
    t = {"x": r(T, shape.K).to(bf),
         "w": (r(shape.N, shape.K) / shape.K ** 0.5).to(bf),
         "g": (1 + 0.1 * r(vec)).to(bf),
         "b": (0.1 * r(vec)).to(bf) if shape.kind == "ln" else None,
         "bias": (0.02 * r(shape.N)).to(bf) if shape.bias else None,
         "res": r(T, shape.N).to(bf) if shape.residual else None}
    return t


def _prepare(shape: Shape, t: dict, opt: Option | None):
    """The op's prepared launch under `opt` (None: the naive kernel, passes=())."""
    from ..ops import postnorm_linear as post
    from ..ops import prenorm_linear as pre
    eps = EPS[shape.kind]
    if opt is None:
        passes, kw, cfg = (), {}, None
    else:
        passes, kw = _passes(opt, shape.form)
        cfg = opt.make_config(shape.form)
        if opt.passes == "post:lowered=auto":  # the ops' default: schedule and tiles per shape
            sched, cfg = post.lowered_postnorm_choice(t["x"].shape[0], shape.N, shape.K)
            passes = post.lowered_postnorm_passes(sched)
    if shape.form == "pre":
        if shape.kind == "rms":
            return pre.prepare_rmsnorm_linear(t["x"], t["g"], t["w"], eps, t["bias"], config=cfg,
                                              passes=passes, **kw)
        return pre.prepare_layernorm_linear(t["x"], t["g"], t["b"], t["w"], eps, t["bias"],
                                            config=cfg, passes=passes, **kw)
    if shape.kind == "rms":
        return post.prepare_linear_rmsnorm(t["x"], t["w"], t["g"], eps, t["bias"], t["res"],
                                           config=cfg, passes=passes, **kw)
    return post.prepare_linear_layernorm(t["x"], t["w"], t["g"], t["b"], eps, t["bias"], t["res"],
                                         config=cfg, passes=passes, **kw)


def _oracle(shape: Shape, t: dict, rows):
    from .. import reference as ref
    eps = EPS[shape.kind]
    x = t["x"][rows]
    if shape.form == "pre":
        if shape.kind == "rms":
            return ref.rmsnorm_linear_ref(x, t["g"], t["w"], eps, t["bias"])
        return ref.layernorm_linear_ref(x, t["g"], t["b"], t["w"], eps, t["bias"])
    return ref.linear_norm_ref(x, t["w"], t["g"], t["b"], eps, t["bias"],
                               t["res"][rows] if t["res"] is not None else None)


def _norm_fns(shape: Shape, t: dict, compiled: dict):
    """(eager, compiled) standalone norms of the cell; `compiled` caches torch.compile objects."""
    import torch
    import torch.nn.functional as F
    eps = EPS[shape.kind]
    if shape.form == "pre":
        if shape.kind == "rms":
            f = lambda x, g, b: F.rms_norm(x, x.shape[-1:], g, eps)  # noqa: E731
        else:
            f = lambda x, g, b: F.layer_norm(x, x.shape[-1:], g, b, eps)  # noqa: E731
        args = (t["x"], t["g"], t["b"])
    else:
        y = torch.empty(t["x"].shape[0], shape.N, device=t["x"].device, dtype=t["x"].dtype).normal_()
        r = t["res"] if t["res"] is not None else torch.zeros_like(y)
        if shape.kind == "rms":
            f = lambda y, r, g, b: F.rms_norm(y + r, y.shape[-1:], g, eps)  # noqa: E731
        else:
            f = lambda y, r, g, b: F.layer_norm(y + r, y.shape[-1:], g, b, eps)  # noqa: E731
        args = (y, r, t["g"], t["b"])
    key = (shape.form, shape.kind)
    if key not in compiled:
        compiled[key] = torch.compile(f, dynamic=False)
    c = compiled[key]
    return (lambda: f(*args)), (lambda: c(*args))


def _block_fn(shape: Shape, t: dict, compiled: dict):
    """Post-norm: the whole unfused block under torch.compile(dynamic=False)."""
    import torch
    import torch.nn.functional as F
    eps, N = EPS[shape.kind], shape.N
    has_res = t["res"] is not None

    def block(x, w, bias, r, g, b):
        h = F.linear(x, w, bias)
        if has_res:
            h = h + r
        if shape.kind == "rms":
            return F.rms_norm(h, (N,), g, eps)
        return F.layer_norm(h, (N,), g, b, eps)
    key = ("block", shape.kind, shape.K, N, shape.bias, has_res)
    if key not in compiled:
        compiled[key] = torch.compile(block, dynamic=False)
    c = compiled[key]
    args = (t["x"], t["w"], t["bias"], t["res"], t["g"], t["b"])
    return lambda: c(*args)


def _cublas_fn(t: dict):
    import torch
    x, w, bias = t["x"], t["w"], t["bias"]
    y = torch.empty(x.shape[0], w.shape[0], device=x.device, dtype=x.dtype)
    wt = w.t()
    if bias is None:
        return lambda: torch.matmul(x, wt, out=y)
    return lambda: torch.addmm(bias, x, wt, out=y)


def cell(shape: Shape, T: int, compiled_norms: dict, options=None, log=print) -> dict:
    """One (shape, T): cuBLAS, the standalone norms, the naive kernel, every option."""
    import statistics

    import torch
    from .. import reference as ref
    t = _tensors(shape, T)
    rec = {**asdict(shape), "T": T, "options": [], "rounds": ROUNDS}
    cublas = _cublas_fn(t)
    eager, comp = _norm_fns(shape, t, compiled_norms)
    rec["norm_eager_ms"] = _bench(eager)
    rec["norm_compiled_ms"] = _bench(comp)
    rec["norm_ms"] = min(rec["norm_eager_ms"], rec["norm_compiled_ms"])
    timed = {"cuBLAS": cublas}  # (the options that pass their check join, kept until timed)
    if shape.form == "post":
        try:
            block = _block_fn(shape, t, compiled_norms)
            block()  # (compiled here, not in a timed round)
            timed["compiled block"] = block
        except Exception as e:  # noqa: BLE001 - the baseline's failure is a record
            rec["block_compiled_error"] = f"{type(e).__name__}: {e}"[:300]
    rows = torch.cat([torch.arange(0, SAMPLE_ROWS), torch.arange(T - SAMPLE_ROWS, T)]).to(t["x"].device)
    y_naive = _prepare(shape, t, None)().reshape(T, shape.N).clone()
    oracle = _oracle(shape, t, rows)
    naive_err = ref.rel_err(y_naive[rows], oracle)
    rec["naive_err"] = naive_err
    for opt in options or [o for o in options_for(shape.form) if selected(o)]:
        o = {"option": opt.name}
        try:
            p = _prepare(shape, t, opt)
            p.out.fill_(float("nan"))
            y = p().reshape(T, shape.N)
            torch.cuda.synchronize()
            ck = p.compile()
            o["lowered"] = getattr(ck, "lowered", None) is not None
            # the lowered kernel launched (not refused at launch: a fallback to the unlowered one)
            o["ran_lowered"] = o["lowered"] and ck.lowered.why_not(p.runtime_args) is None
            o["remarks"] = [str(r)[:300] for r in getattr(ck, "remarks", [])][:6]
            o["written"] = not bool(torch.isnan(y).any())
            o["err"] = ref.rel_err(y[rows], oracle)
            o["vs_naive"] = _rel32(y, y_naive)
            o["ok"] = bool(o["written"] and math.isfinite(o["err"])
                           and o["err"] <= 1.5 * naive_err + 1e-6
                           and o["vs_naive"] <= 3 * naive_err + 1e-6)
            if o["ok"]:
                timed[opt.name] = p.launch
            del y, p
        except Exception as e:  # noqa: BLE001 - an option that fails is a record
            o.update(ok=False, error=f"{type(e).__name__}: {e}"[:400])
            o["traceback"] = traceback.format_exc()[-1500:]
        rec["options"].append(o)
    rounds = time_round_robin(timed)
    timed.clear()
    rec["cublas_ms"] = statistics.median(rounds["cuBLAS"])
    rec["cublas_rounds_ms"] = rounds["cuBLAS"]
    rec["unfused_ms"] = rec["cublas_ms"] + rec["norm_ms"]
    if "compiled block" in rounds:
        rec["block_compiled_ms"] = statistics.median(rounds["compiled block"])
    for o in rec["options"]:
        if o["option"] in rounds:
            o["ms"] = statistics.median(rounds[o["option"]])
            o["rounds_ms"] = rounds[o["option"]]
            o["over_cublas"] = o["ms"] / rec["cublas_ms"]
    b = best_option(rec)
    rec["best"] = b["option"] if b else None
    rec["best_ms"] = b["ms"] if b else None
    rec["best_over_cublas"] = b["over_cublas"] if b else None
    d = next((o for o in rec["options"] if o["option"] == "default"), None)
    rec["default_over_cublas"] = d.get("over_cublas") if d else None
    log(f"{shape.label:22s} {shape.form:4s} {shape.kind:3s} T {T:5d} K {shape.K:5d} N "
        f"{shape.N:5d}: cuBLAS {rec['cublas_ms']:.3f} norm {rec['norm_ms']:.3f} default "
        f"{_f(d.get('ms') if d else None)} best {_f(rec['best_ms'])} ({rec['best']}) "
        f"best/cuBLAS {_f(rec['best_over_cublas'])}")
    del t
    torch.cuda.empty_cache()
    return rec


def best_option(rec: dict) -> dict | None:
    """The fastest option that passed the check (None when none did)."""
    ok = [o for o in rec["options"] if o.get("ok") and o.get("ms") is not None]
    return min(ok, key=lambda o: o["ms"]) if ok else None


def _f(v, fmt=".3f") -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


# ---------------------------------------------------------------------------------------------
# The sweep, its table and warm-up
# ---------------------------------------------------------------------------------------------

def run(Ts=T_VALUES, shape_list=None, log=print, on_shape=None) -> list[dict]:
    """Every cell; `on_shape(records)` after each shape's cells (partial files)."""
    records = []
    compiled: dict = {}
    for shape in shape_list or shapes():
        for T in Ts:
            try:
                records.append(cell(shape, T, compiled, log=log))
            except Exception as e:  # noqa: BLE001
                records.append({**asdict(shape), "T": T, "error": f"{type(e).__name__}: {e}"[:400],
                                "traceback": traceback.format_exc()[-1500:], "options": []})
                log(f"{shape.label} T {T}: ERROR {type(e).__name__}: {e}")
        if on_shape is not None:
            on_shape(records)
    return records


def table(records) -> str:
    """model_shapes.md: one row per cell; the option columns give fused ms / cuBLAS ms."""
    names = list(dict.fromkeys(o["option"] for r in records for o in r.get("options", [])))
    pre = [n for n in names if any(o["option"] == n for r in records if r.get("form") == "pre"
                                   for o in r["options"])]
    lines = []
    for form, title in (("pre", "Pre-norm: norm(x) @ W^T (+ bias)"),
                        ("post", "Post-norm: norm(x @ W^T + bias + residual)")):
        rs = [r for r in records if r.get("form") == form]
        if not rs:
            continue
        opts = pre if form == "pre" else [n for n in names if any(
            o["option"] == n for r in rs for o in r["options"])]
        lines.append(f"\n## {title}\n")
        lines.append("fused / cuBLAS per option ('x': failed the check, '-': not run); goal: best "
                     "<= 1.03\n")
        blk = form == "post"
        lines.append("| shape | norm | T | K | N | cuBLAS ms | norm ms | (cuBLAS + norm) / cuBLAS | "
                     + ("compiled block / cuBLAS | " if blk else "")
                     + " | ".join(opts) + " | best | best / cuBLAS | <= 1.03 |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if blk else "")
                     + "---:|" * len(opts) + "---|---:|---|")
        for r in rs:
            if "error" in r:
                lines.append(f"| {r['model']} {r['site']} | {r['kind']} | {r['T']} | {r['K']} | "
                             f"{r['N']} | error: {r['error'][:100]} |")
                continue
            cells = []
            for n in opts:
                o = next((o for o in r["options"] if o["option"] == n), None)
                if o is None:
                    cells.append("-")
                elif not o.get("ok"):
                    cells.append("x")
                else:
                    cells.append(_f(o.get("over_cublas")))
            b = r.get("best_over_cublas")
            lines.append(f"| {r['model']} {r['site']} | {r['kind']}{' +bias' if r['bias'] else ''}"
                         f"{' +res' if r.get('residual') else ''} | {r['T']} | {r['K']} | {r['N']} | "
                         f"{_f(r.get('cublas_ms'))} | {_f(r.get('norm_ms'))} | "
                         f"{_f(r['unfused_ms'] / r['cublas_ms'] if r.get('cublas_ms') else None)} | "
                         + (f"{_f(r['block_compiled_ms'] / r['cublas_ms'] if r.get('block_compiled_ms') and r.get('cublas_ms') else None)} | " if blk else "")
                         + " | ".join(cells) + f" | {r.get('best') or '-'} | {_f(b)} | "
                         f"{'-' if b is None else ('yes' if b <= 1.03 else 'NO')} |")
    summ = option_summary(records)
    if summ:
        lines.append("\n## Options over all cells\n")
        lines.append("geo. mean of fused / cuBLAS over the cells where the option passed; best: "
                     "cells where it was the fastest correct option; <= 1.03: cells within the "
                     "goal\n")
        lines.append("| form | option | cells passed | geo. mean / cuBLAS | best in | <= 1.03 in |")
        lines.append("|---|---|---:|---:|---:|---:|")
        for o in summ:
            lines.append(f"| {o['form']} | {o['option']} | {o['passed']} / {o['cells']} | "
                         f"{_f(o['geomean_over_cublas'])} | {o['best_in']} | {o['within_goal']} |")
    fails = [(r, o) for r in records for o in r.get("options", []) if not o.get("ok", True)]
    if fails:
        lines.append("\n## Options that failed the check\n")
        for r, o in fails[:40]:
            why = o.get("error") or (f"written {o.get('written')}, err {_f(o.get('err'), '.2e')}, "
                                     f"vs naive {_f(o.get('vs_naive'), '.2e')} (naive err "
                                     f"{_f(r.get('naive_err'), '.2e')})")
            lines.append(f"- {r['model']} {r['site']} T {r['T']}: {o['option']}: {why}")
    return "\n".join(lines).lstrip("\n") + "\n"


def option_summary(records) -> list[dict]:
    """Per form and option: cells run and passed, the geometric mean of fused / cuBLAS over the
    passed cells, the cells where it was the best option and where it met the 1.03 goal."""
    out = []
    for form in ("pre", "post"):
        rs = [r for r in records if r.get("form") == form and r.get("options")]
        names = list(dict.fromkeys(o["option"] for r in rs for o in r["options"]))
        for n in names:
            os_ = [o for r in rs for o in r["options"] if o["option"] == n]
            ratios = [o["over_cublas"] for o in os_ if o.get("ok") and o.get("over_cublas")]
            out.append({"form": form, "option": n, "cells": len(os_), "passed": len(ratios),
                        "geomean_over_cublas": (math.exp(sum(map(math.log, ratios)) / len(ratios))
                                                if ratios else None),
                        "best_in": sum(1 for r in rs if r.get("best") == n),
                        "within_goal": sum(1 for x in ratios if x <= 1.03)})
    return out


def warm_jobs(Ts=T_VALUES, form: str | None = None) -> list:
    """One child per option of each form (its kernels for every shape at the smallest T: the
    kernels do not specialise on T), one per T for the compiled standalone norms; `form`: only
    that form's options."""
    from .warm import child_argv
    n_pre, n_post = len(PRE_OPTIONS), len(POST_OPTIONS)
    jobs = [(f"model_shapes option {i}", child_argv("model_shapes", (i,)))
            for i, o in enumerate(PRE_OPTIONS + POST_OPTIONS)
            if form in (None, "pre" if i < n_pre else "post") and selected(o)]
    jobs += [(f"model_shapes norms T {T}",
              child_argv("model_shapes", (n_pre + n_post + T_VALUES.index(T),)))
             for T in Ts if T in T_VALUES]  # (another T's norms compile in the timing process)
    return jobs


def warm_one(index: int, quick: bool = False) -> None:
    """Warm-up child `index` (see warm_jobs)."""
    n_pre, n_post = len(PRE_OPTIONS), len(POST_OPTIONS)
    compiled: dict = {}
    if index < n_pre + n_post:
        form = "pre" if index < n_pre else "post"
        opt = (PRE_OPTIONS + POST_OPTIONS)[index]
        for s in shapes():
            if s.form != form:
                continue
            t = _tensors(s, min(T_VALUES))
            try:
                if index in (0, n_pre):  # the naive kernel once, with the default option
                    _prepare(s, t, None)()
                _prepare(s, t, opt)()
            except Exception:  # noqa: BLE001 - the timing process records the failure
                pass
        return
    T = T_VALUES[index - n_pre - n_post]
    import torch
    for s in shapes():
        t = _tensors(s, T)
        _norm_fns(s, t, compiled)[1]()
        torch.cuda.synchronize()


def main(argv=None) -> int:
    global ROUNDS
    ap = argparse.ArgumentParser(prog="python -m normfuse.repro.model_shapes",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--t", default=",".join(map(str, T_VALUES)), help="rows, comma-separated")
    ap.add_argument("--warm-procs", type=int, default=None,
                    help="warm-up children at once (default: the cores less two)")
    ap.add_argument("--warm-timeout", type=float, default=150.0)
    ap.add_argument("--form", choices=("pre", "post"), default=None,
                    help="only the pre-norm or only the post-norm shapes (and their options)")
    ap.add_argument("--shapes", choices=SHAPE_SETS, default="models",
                    help="models: the benchmark models' GEMMs (default); post-grid: BERT-style "
                         f"post-norm blocks over K in {POST_GRID_K}, N in {POST_GRID_N}; "
                         f"bert-blocks: K, N in {BERT_BLOCKS_KN} (issue 20's goal cells)")
    ap.add_argument("--options", default="",
                    help="comma-separated option names to run (default: all of the form's)")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help="timing rounds, round-robin over cuBLAS and the options (median kept)")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    ROUNDS = args.rounds
    known = {o.name for o in PRE_OPTIONS + POST_OPTIONS}
    unknown = [n for n in args.options.split(",") if n.strip() and n.strip() not in known]
    if unknown:
        ap.error(f"unknown option(s) {unknown}; known: {', '.join(sorted(known))}")
    os.environ[SHAPES_ENV] = args.shapes  # (read by shapes() here and in the warm-up children)
    os.environ[OPTIONS_ENV] = args.options
    return bench(args.out, tuple(int(v) for v in args.t.split(",")), args.warm_procs,
                 args.warm_timeout, form=args.form)


def bench(out: str, Ts=T_VALUES, warm_procs=None, warm_timeout=150.0, log=print,
          form: str | None = None) -> int:
    import torch
    import triton
    if not torch.cuda.is_available():
        log("model_shapes: no CUDA GPU: nothing to measure")
        return 0
    from . import warm
    warm.configure_torch()
    t0 = time.time()
    jobs = warm_jobs(Ts, form)
    from .models import warm_procs_default
    procs = warm_procs_default(len(jobs)) if warm_procs is None else warm_procs
    res = warm.parallel(jobs, procs, warm_timeout, log=log) if procs > 0 else None

    def write(records):
        data = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                "triton": triton.__version__, "dtype": "bf16", "T": list(Ts),
                "options": {"pre": [asdict(o) for o in PRE_OPTIONS],
                            "post": [asdict(o) for o in POST_OPTIONS]},
                "warm_up": res, "seconds": round(time.time() - t0, 1),
                "option_summary": option_summary(records), "records": records}
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "model_shapes.json"), "w") as f:
            json.dump(data, f, indent=1, default=str)
        md = (f"# Model-shape sweep ({data['gpu']}, {data['date'][:10]}, torch {data['torch']}, "
              f"triton {data['triton']}, bf16)\n\n" + table(records))
        with open(os.path.join(out, "model_shapes.md"), "w") as f:
            f.write(md)
        return data, md

    records = run(Ts, [s for s in shapes() if form in (None, s.form)], log=log, on_shape=write)
    data, md = write(records)
    log(md)
    log(f"model_shapes: {len(records)} cells in {data['seconds']} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
