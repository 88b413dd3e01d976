"""FlashNormAttention backward on the GPU (issue 12): the gpu-marked tests, then timings.

    PYTHONPATH=python python3 -m normfuse.repro.bench_attention_bwd --out $OUT [--quick]
        [--no-tests] [--budget 200] [--warm-procs P] [--batch 768] [--cells H:MAX:ACT,...]
        [--core | --core-only] [--lean]

(`python -m normfuse.repro` runs it with --no-tests in a child: normfuse.repro.extra.)

1. The gpu-marked tests of test/python/test_flash_norm_attention_bwd.py (normfuse.repro.gpu_tests;
   counts and failures go to the JSON, the logs to $OUT/tests/).
2. Timings on the blog's shapes (bf16, B = 768 (`--batch`), L = 128, D = 128, H in {2, 3, 4},
   jagged Q with lengths uniform in [0, max] (average sparsity 0.5), max in {1024, 3072, 10000} (the longest
   last: cells past the time budget are recorded as skipped; `--budget` raises it); GDPA gelu_tanh and
   softmax; no affines, as the blog): `triton.testing.do_bench` medians of
   - fused: `flash_norm_attention_bwd` (rows kernel through its default pipeline, dK/dV kernel)
     called as the autograd backward calls it (`check_offsets=False`: no host read, the forward's
     host copy of the offsets found), and the naive rows kernel (passes=()) for what the pass
     buys;
   - fused with the forward's saved g and lse (`fused_saved_ms`: the training forward run with
     save=True, whose time is `fwd_saving_ms` against `fwd_ms` without saving), and the same
     with offsets never read on the host (`fused_saved_bound_ms`: the upper-bound grid),
     and with the rows kernel through each pipeline compared for the default
     (`default_bwd_passes(activation)`, whose column repeats `fused_saved_ms` rather than timing
     it again): `cluster-reduce-chain` alone (`fused_saved_chain_ms`),
     with its loads moved into the exchanges' waits (`fused_saved_early_ms`:
     `cluster-reduce-chain{early-loads=true}`, the softmax default), and then with a block's
     repeated loads of the same addresses merged (`fused_saved_early_reuse_ms`: `reuse-loads`,
     the default of the other activations; across-dots changes nothing there: an scf loop lies
     between x's loads);
   - unfused: autograd backward of the pipeline a user writes in torch: LayerNorm and RMSNorm over
     the jagged [T, H*D] rows (torch.nn.functional), attention on Q padded to [B, max, H, D]
     (softmax: `scaled_dot_product_attention`, its best backend; GDPA: batched matmuls), eager,
     torch.compile'd for the shape (`unfused_compiled_*`) and torch.compile'd with dynamic shapes
     (`unfused_dynamic_*`: one compile per activation; past 2^31 elements Inductor's static
     kernels slow down, as the forward benchmark found for its norms), the compiled ones only
     while the time budget lasts; and the blog's own baseline, compiled norms on the jagged rows
     and a jagged attention, no padding (`unfused_jagged_*`, `unfused_jagged`: softmax by torch's
     nested jagged SDPA, FlashAttention's varlen kernels; GELU by Meta's Triton GDPA where
     tritonbench imports, `external_gdpa`; its output checked against the padded pipeline's
     first); `unfused_best_ms` is the fastest;
   - norms only: the compiled backward of LayerNorm + RMSNorm + residuals alone (the cost the
     fusion can hide);
   - forward + backward (`train_*`): the fused training forward and backward against each
     unfused pipeline's training forward (`unfused_*_fwd_ms`, the graph recorded) and backward,
     the saved % against the fastest one (no saved % where the compiled one was skipped).
   - the kvq plan (`fused_saved_kvq_ms`, `plan="kvq"`: rows_pre, kvq, rows_post, the attention's
     products once per head and row block instead of the split plan's 7; dz and dlnq between
     the kernels in bf16, and in fp32 as `fused_saved_kvq_f32_ms`; rows_pre without
     reuse-loads as `fused_saved_kvq_noreuse_ms`; the default has the LayerNorm's row sums
     taken by rows_post from the stored dlnq, `BwdConfig.kvq_sums_in_post`, and the kvq
     programs longest sequence first, `BwdConfig.kvq_longest_first`: each alone as
     `fused_saved_kvq_post_ms` / `fused_saved_kvq_lpt_ms`, neither (the kvq kernel's own sums
     in batch order, the default until session 39) as `fused_saved_kvq_own_ms`),
     `train_fused_kvq_ms` and
     `train_saved_kvq_pct_vs_padded_unfused` with it (every other fused column is the split
     plan's, named explicitly whatever DEFAULT_PLAN is);
   - tiles (`--rows-tiles`, `--kv-tiles`, `--kvq-tiles`): the default backward (saved g) with
     each given tile of one kernel, the other at its default (`rows_tiles_ms` / `kv_tiles_ms`:
     {tile: ms}), and the kvq plan with each tile of its middle kernel (`kvq_tiles_ms`; a tile
     whose gradients are not repeatable bitwise or not within 2e-2 of the default tile's is
     recorded as an error, not timed);
   - the backward core (`--core`, or `--core-only` for nothing else; issue 22's "attention
     backward within 1.2x of the best available"): the kvq kernel's device time (one profiled
     call: dK, dV and dQ with the LayerNorm's per-head partials, more than the attention alone;
     `core_bwd_ms`) against the attention's backward alone as a user could run it
     (`core_alternatives_ms`; softmax: SDPA's flash / efficient / cuDNN backends on padded
     queries, FlashAttention-2's jagged backward `flash_varlen` on the same rows; GDPA: eager
     and compiled on padded queries), `core_bwd_vs_best` against the fastest, device time
     against device time (`core_alternatives_device_ms`: every kernel of the alternative's
     backward call, its preprocessing included); for softmax also `core_bwd_pre_vs_best`, the
     kvq kernel plus rows_pre (which computes softmax's delta as FlashAttention's
     preprocessing does, and the LayerNorm backward's first half: an upper bound on ours);
   - kernels (`--kernels`, on by default): where each backward's device time goes, one call
     under torch.profiler (`*_kernels`: [kernel, device ms, launches], largest first) for the
     fused backward and the unfused eager one (issue 22: the first step is to find where the
     fused backward's time goes against the unfused backward's kernels).
   The padded attention does up to 2x the useful work at sparsity 0.5, so "saved %" against it
   overstates what the fusion buys; the blog's baseline (a jagged GDPA backward kernel + compiled
   norms) has no public Hopper kernel here, so `norms_ms` is reported to compare against too.
`--warm-procs P` first compiles every shape in P child processes at once (`normfuse.repro.warm`).
Every piece is guarded: a failure is recorded and the rest runs. Writes
`$OUT/attention_bwd.json` (records with op = "flash_norm_attention.backward") and
`$OUT/attention_bwd.md`.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F

from . import external_gdpa, gpu_tests
from ..reference import rel_err
from .warm import REPO

BUDGET_S = 200  # the whole script stays under ~4 minutes


def run_gpu_tests(out_dir: str, timeout: float = 150.0) -> dict:
    """The gpu-marked tests of test_flash_norm_attention_bwd.py: counts, failures, a summary line."""
    res = gpu_tests.run([os.path.join(REPO, "test", "python", "test_flash_norm_attention_bwd.py")],
                        gpu_tests.default_jobs(), "gpu", timeout,
                        log_dir=os.path.join(out_dir, "tests"), log=lambda m: None)
    return {"ok": res["ok"], "seconds": res["seconds"], "counts": res["totals"],
            "failures": res["failures"],
            "summary": ", ".join(f"{v} {k}" for k, v in res["totals"].items()) or "nothing ran"}


def make_inputs(B, L, H, Hkv, D, max_len, seed=0, device="cuda"):
    g = torch.Generator(device="cpu").manual_seed(seed)
    lens = torch.randint(0, max_len + 1, (B,), generator=g)
    off = torch.zeros(B + 1, dtype=torch.int32)
    off[1:] = lens.cumsum(0)
    T = int(off[-1])
    dev = device
    x = torch.randn(T, H, D, device=dev, dtype=torch.bfloat16)
    k = (torch.randn(B, L, Hkv, D, device=dev) * (0.5 / D ** 0.25)).to(torch.bfloat16)
    v = torch.randn(B, L, Hkv, D, device=dev, dtype=torch.bfloat16)
    dout = torch.randn(T, H, D, device=dev, dtype=torch.bfloat16)
    return x, k, v, off.to(dev), dout, lens


def padded_index(off, lens, device):
    B = lens.numel()
    b = torch.repeat_interleave(torch.arange(B), lens)
    t = torch.arange(int(lens.sum())) - torch.repeat_interleave(off[:-1].cpu().long(), lens)
    return b.to(device), t.to(device)


def padded_heads(t, bidx, tidx, B, max_len):
    """Jagged [T, H, D] rows padded to [B, H, max_len, D] (zeros past each sequence's end)."""
    T, H, D = t.shape
    return t.new_zeros(B, max_len, H, D).index_put((bidx, tidx), t).transpose(1, 2)


def heads_kv(k, v, H):
    """K and V [B, L, Hkv, D] as [B, H, L, D], each kv head repeated for its H / Hkv query heads."""
    G = H // k.shape[2]
    kk = k.repeat_interleave(G, dim=2) if G > 1 else k
    vv = v.repeat_interleave(G, dim=2) if G > 1 else v
    return kk.transpose(1, 2), vv.transpose(1, 2)


def gdpa_core(q, k, v, scale):
    """GDPA's attention ([B, H, M, D] queries, [B, H, L, D] keys / values): gelu(q k^T) scale v."""
    return (F.gelu(q @ k.transpose(-1, -2), approximate="tanh") * scale) @ v


def unfused(x, k, v, bidx, tidx, max_len, activation, scale, eps=1e-5):
    """The torch pipeline: jagged norms, attention on padded Q."""
    T, H, D = x.shape
    N = H * D
    xf = x.reshape(T, N)
    ln = F.layer_norm(xf, (N,), eps=eps)
    qt = padded_heads(ln.reshape(T, H, D), bidx, tidx, k.shape[0], max_len)
    kt, vt = heads_kv(k, v, H)
    if activation == "softmax":
        o = F.scaled_dot_product_attention(qt, kt, vt, scale=scale)
    else:
        o = gdpa_core(qt, kt, vt, scale)
    g = o.transpose(1, 2)[bidx, tidx].reshape(T, N)
    z = g + ln
    y = F.rms_norm(z, (N,), eps=eps)
    return y + xf


def unfused_jagged(x, k, v, attend, ln_fn, post_fn):
    """The blog's unfused baseline: the norms on the jagged rows (`ln_fn`: LayerNorm [T, N];
    `post_fn(g, ln, xf)`: RMSNorm(g + ln) + xf; torch.compile'd by the caller) and the attention
    jagged too, `attend(q [T, H, D], k, v [B, L, Hkv, D]) -> [T, H, D]` (`jagged_attention`),
    no padded queries."""
    T, H, D = x.shape
    xf = x.reshape(T, H * D)
    ln = ln_fn(xf)
    g = attend(ln.reshape(T, H, D), k, v).reshape(T, H * D)
    return post_fn(g, ln, xf)


def jagged_attention(activation, off, L, max_len, scale):
    """(attend, None) for `unfused_jagged`: softmax by torch's nested jagged SDPA (on the GPU
    FlashAttention's varlen kernels, forward and backward), GDPA by Meta's jagged Triton GDPA
    (`external_gdpa`); or (None, why) where there is none (tritonbench not importable, an
    activation it does not compute)."""
    if activation == "softmax":
        from .bench_attention import jagged_sdpa
        return jagged_sdpa(off, L, max_len, scale), None
    if activation not in external_gdpa.ACTIVATION:
        return None, f"no jagged {activation} attention at hand"
    fn, why = external_gdpa.load()
    if fn is None:
        return None, why
    gd = external_gdpa.gdpa_fn(fn, off, L, max_len, activation, scale)

    def gdpa(q, k, v):
        B, _, Hkv, D = k.shape
        return gd(q, k.reshape(B * L, Hkv, D), v.reshape(B * L, Hkv, D))
    return gdpa, None


def jagged_norms(compile_fn=None):
    """(ln_fn, post_fn) for `unfused_jagged`, each through `compile_fn` (default
    torch.compile(dynamic=False): a compile per shape, as the padded pipeline's)."""
    compile_fn = compile_fn or functools.partial(torch.compile, dynamic=False)

    def ln_fn(xf, eps=1e-5):
        return F.layer_norm(xf, (xf.shape[1],), eps=eps)

    def post_fn(g, ln, xf, eps=1e-5):
        return F.rms_norm(g + ln, (xf.shape[1],), eps=eps) + xf
    return compile_fn(ln_fn), compile_fn(post_fn)


@functools.cache
def _dynamic_unfused():
    """`unfused` under torch.compile(dynamic=True), compiled once per process (its guards
    specialize on the activation and the scale; the shapes stay symbolic)."""
    return torch.compile(unfused, dynamic=True)


def norms_only(xf, g, eps=1e-5):
    N = xf.shape[1]
    ln = F.layer_norm(xf, (N,), eps=eps)
    return F.rms_norm(g + ln, (N,), eps=eps) + xf


def bench_backward(fn, inputs, dout, donate: bool = True):
    """Median ms of the backward alone: one forward with a graph kept, the backward timed.
    `donate=False`: a compiled `fn` compiled (at its first call, here) without donating its saved
    buffers to the backward, which otherwise refuses the repeated backward over one graph
    (torch 2.11's dynamic-shape compile: "compiled with non-empty donated buffers")."""
    import contextlib
    from triton.testing import do_bench
    import torch._functorch.config as functorch_config
    ctx = contextlib.nullcontext() if donate else functorch_config.patch(donated_buffer=False)
    with ctx:
        leaves = [t.detach().requires_grad_() for t in inputs]
        out = fn(*leaves)
        return do_bench(lambda: torch.autograd.grad(out, leaves, dout, retain_graph=True),
                        warmup=5, rep=30)


def bench_forward(fn, inputs):
    """Median ms of the forward as training runs it (inputs that require grad: the graph is
    recorded, the tensors the backward needs saved)."""
    from triton.testing import do_bench
    leaves = [t.detach().requires_grad_() for t in inputs]
    return do_bench(lambda: fn(*leaves), warmup=5, rep=30)


def train_step_fields(rec: dict) -> dict:
    """Forward + backward: the fused training forward (`fwd_saving_ms`) and the backward with its
    saved g against each unfused pipeline's training forward and backward; the saved % against
    the faster unfused one (what the issue's "forward + backward saved" asks)."""
    out = {}
    if "fwd_saving_ms" in rec and "fused_saved_ms" in rec:
        out["train_fused_ms"] = rec["fwd_saving_ms"] + rec["fused_saved_ms"]
    if "fwd_saving_ms" in rec and "fused_saved_kvq_ms" in rec:
        out["train_fused_kvq_ms"] = rec["fwd_saving_ms"] + rec["fused_saved_kvq_ms"]
    unf = {m: rec[f"unfused_{m}_fwd_ms"] + rec[f"unfused_{m}_ms"]
           for m in ("eager", "compiled", "dynamic", "jagged")
           if f"unfused_{m}_fwd_ms" in rec and f"unfused_{m}_ms" in rec}
    if unf:
        best = min(unf, key=unf.get)
        out["train_unfused_best"], out["train_unfused_best_ms"] = best, unf[best]
        # (a saved % only against eager and compiled both: the compiled one, skipped when the
        # budget runs out, is usually the faster, and eager alone overstates the saving 2-5x)
        if ("train_fused_ms" in out and "unfused_eager_ms" in rec
                and "unfused_compiled_ms" in rec):
            out["train_saved_pct_vs_padded_unfused"] = 100.0 * (1 - out["train_fused_ms"]
                                                                 / unf[best])
            if "train_fused_kvq_ms" in out:
                out["train_saved_kvq_pct_vs_padded_unfused"] = 100.0 * (
                    1 - out["train_fused_kvq_ms"] / unf[best])
    return out


def backward_kernels(fn, inputs, dout, top: int = 10) -> list:
    """The kernels of one backward call (the graph of one forward kept), largest first:
    [kernel, device ms, launches] for the `top` largest, then "(others)"."""
    from .bench_ops import _device_kernels
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = fn(*leaves)
    return _device_kernels(lambda: torch.autograd.grad(out, leaves, dout, retain_graph=True), top)


def _checked_tile(fn, ref, bench) -> float:
    """`bench(fn)`'s time once fn's gradients are repeatable bitwise (two calls) and within 2e-2
    (relative Frobenius) of `ref`'s; a ValueError naming the gradient otherwise."""
    a, b = fn(), fn()
    for i, (x, y, r) in enumerate(zip(a, b, ref)):
        if x is None:
            continue
        if not torch.equal(x, y):
            raise ValueError(f"gradient {i} not repeatable bitwise")
        d = float((x.float() - r.float()).norm() / r.float().norm().clamp_min(1e-30))
        if not d <= 2e-2:
            raise ValueError(f"gradient {i} is {d:.2e} from the default tile's")
    return bench(fn, warmup=5, rep=30)


def parse_kvq_tiles(spec: str) -> list[tuple[int, int, int, bool, bool]]:
    """"16:8:2,16:8:2:t,32:8:3:tp" -> [(BLOCK_M, warps, stages, dq_t, sums_in_post), ...] of
    the kvq plan's middle kernel (flags after the stages: "t" dQ computed transposed,
    `BwdConfig.kvq_dq_t`; "p" the LayerNorm's row sums taken by rows_post,
    `BwdConfig.kvq_sums_in_post`)."""
    out = []
    for item in filter(None, (t.strip() for t in (spec or "").split(","))):
        parts = item.split(":")
        flags = parts[3] if len(parts) == 4 else ""
        try:
            if len(parts) not in (3, 4) or (len(parts) == 4 and (not flags or set(flags) - set("tp"))):
                raise ValueError
            bm, w, st = (int(n) for n in parts[:3])
        except ValueError:
            raise ValueError(f"kvq tile '{item}': expected BLOCK_M:warps:stages[:FLAGS] (FLAGS "
                             f"of t, p), e.g. 16:8:2, 16:8:2:t or 32:8:3:tp") from None
        out.append((bm, w, st, "t" in flags, "p" in flags))
    return out


def parse_tiles(spec: str) -> list[tuple[int, int, int, int]]:
    """"64x64:8:2,128x64:8:1" -> [(BLOCK_M, BLOCK_L, warps, stages), ...]."""
    out = []
    for item in filter(None, (t.strip() for t in (spec or "").split(","))):
        try:
            tile, w, st = item.split(":")
            bm, bl = tile.split("x")
            out.append((int(bm), int(bl), int(w), int(st)))
        except ValueError:
            raise ValueError(f"tile '{item}': expected BLOCK_MxBLOCK_L:warps:stages, e.g. "
                             f"64x64:8:2") from None
    return out


def bench_shape(H, max_len, activation, t_start, quick, kernels: bool = True,
                rows_tiles=(), kv_tiles=(), kvq_tiles=(),
                budget: float = BUDGET_S, batch: int = 768, lean: bool = False) -> list[dict]:
    """One shape's records; the compiled unfused baseline (a compile per shape) only while less
    than 60 % of `budget` (the script's --budget, seconds since `t_start`) is spent. `lean`
    (--lean): only what the report's verdicts use (the plans at their defaults, the forward,
    the unfused pipelines): none of the A/B columns of earlier defaults (the rows kernel's other
    pipelines, the upper-bound grid, the kvq plan in fp32, by option or without reuse-loads, the
    naive kernel), each a compile and a timing per cell."""
    from triton.testing import do_bench
    from normfuse.ops.flash_norm_attention_bwd import (DEFAULT_BWD_PASSES, KVQ_MAX_L, PRE_PASSES,
                                                       BwdConfig,
                                                       default_bwd_passes,
                                                       flash_norm_attention_bwd)
    from normfuse.reference_attention import default_qk_scale
    B, L, D = batch, 128, 128
    Hkv = H
    x, k, v, off, dout, lens = make_inputs(B, L, H, Hkv, D, max_len)
    T = x.shape[0]
    scale = default_qk_scale(activation, D)
    base = {"op": "flash_norm_attention.backward", "B": B, "L": L, "D": D, "H": H, "Hkv": Hkv,
            "max_seqlen": max_len, "T": T, "activation": activation, "dtype": "bf16",
            "affine": False, "sparsity": round(1 - T / (B * max_len), 3)}
    rec = dict(base)
    # the statistics the forward saves (float32 [T]); `out` is not read by the backward
    xf = x.float().reshape(T, -1)
    mean = xf.mean(1)
    rstd = torch.rsqrt(xf.var(1, unbiased=False) + 1e-5)
    rrms = torch.rsqrt(xf.square().mean(1) + 1e-5)  # a statistic of the right scale (timing only)
    bidx, tidx = padded_index(off, lens, "cuda")
    errors = {}

    def guard(name, f):
        try:
            rec[name] = f()
        except Exception as e:  # noqa: BLE001
            errors[name] = "".join(traceback.format_exception_only(type(e), e)).strip()[-800:]

    args = (dout, x, k, v, off, x, mean, rstd, rrms)
    # as the autograd backward calls it: the offsets were read on the host by the forward (once
    # per tensor: `host_offsets`), the backward reads nothing (no sync) and finds their copy
    from normfuse.ops.common import host_offsets
    host_offsets(off)
    # (the split plan named: plan="default" is whatever DEFAULT_PLAN says, and these columns
    # are the split plan's)
    kw = dict(activation=activation, qk_scale=scale, check_offsets=False, plan="split")
    guard("fused_ms", lambda: do_bench(lambda: flash_norm_attention_bwd(*args, **kw), warmup=5, rep=30))
    # the training forward's saved g and lse (flash_norm_attention_fwd(save=True)): the rows
    # kernel reads them instead of recomputing the attention; the forward with and without saving
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    fkw = dict(activation=activation, qk_scale=scale, check_offsets=False)
    guard("fwd_ms", lambda: do_bench(prepare_flash_norm_attention(x, k, v, off, **fkw).launch,
                                     warmup=5, rep=30))
    ps = prepare_flash_norm_attention(x, k, v, off, save=True, **fkw)
    guard("fwd_saving_ms", lambda: do_bench(ps.launch, warmup=5, rep=30))
    ps.launch()
    sargs = (dout, x, k, v, off, ps.out, ps.mean, ps.rstd, ps.rrms)
    skw = dict(kw, g=ps.g, lse=ps.lse)
    guard("fused_saved_ms", lambda: do_bench(lambda: flash_norm_attention_bwd(*sargs, **skw),
                                             warmup=5, rep=30))
    # the rows kernel's pipelines beside the default (`default_bwd_passes`): `cluster-reduce-chain`
    # alone (session 28's default), with `early-loads` alone and with `reuse-loads` after it
    # (H200, 2026-12-04, all 18 cells: reuse-loads without early-loads 0.97-0.99x the chain alone
    # for GELU, 0.99-1.01x for softmax; no longer timed). The one that is the activation's
    # default takes fused_saved_ms rather than being timed again.
    default = default_bwd_passes(activation)
    for name, passes in () if lean else (
            ("fused_saved_chain_ms", ("cluster-reduce-chain{scratch=Z:DLNQ}",)),
            ("fused_saved_early_ms", DEFAULT_BWD_PASSES),
            ("fused_saved_early_reuse_ms", DEFAULT_BWD_PASSES + ("reuse-loads",))):
        if passes == default and "fused_saved_ms" in rec:
            rec[name] = rec["fused_saved_ms"]
            continue
        guard(name, lambda passes=passes: do_bench(lambda: flash_norm_attention_bwd(
            *sargs, passes=passes, **skw), warmup=5, rep=30))
    # offsets the forward never read (e.g. under torch.compile): the rows kernel's grid the
    # upper bound cdiv(T, BLOCK_M) + B, the extra programs idle
    off2 = off.clone()
    if not lean:
        guard("fused_saved_bound_ms", lambda: do_bench(
            lambda: flash_norm_attention_bwd(*sargs[:4], off2, *sargs[5:], **skw), warmup=5,
            rep=30))
    # the kvq plan (rows_pre, kvq, rows_post: the attention's products once, all keys in one
    # tile): dlnq between its kernels in x's dtype (its default) and in fp32; its middle
    # kernel's tiles (`--kvq-tiles`, "BLOCK_M:warps:stages": ms)
    qkw = dict(skw, plan="kvq")
    if L <= KVQ_MAX_L:
        guard("fused_saved_kvq_ms", lambda: do_bench(lambda: flash_norm_attention_bwd(
            *sargs, **qkw), warmup=5, rep=30))
        if not lean:
            guard("fused_saved_kvq_f32_ms", lambda: do_bench(lambda: flash_norm_attention_bwd(
                *sargs, dlnq_dtype=torch.float32, **qkw), warmup=5, rep=30))
        # the default's two options one at a time: the LayerNorm's row sums taken by
        # rows_post from the stored dlnq (kvq_sums_in_post), the kvq programs longest sequence
        # first (kvq_longest_first), and neither
        options = (("fused_saved_kvq_post_ms", dict(kvq_sums_in_post=True,
                                                    kvq_longest_first=False)),
                   ("fused_saved_kvq_lpt_ms", dict(kvq_sums_in_post=False,
                                                   kvq_longest_first=True)),
                   ("fused_saved_kvq_own_ms", dict(kvq_sums_in_post=False,
                                                   kvq_longest_first=False)))
        for col, opts in () if lean else options:
            guard(col, lambda opts=opts: do_bench(lambda: flash_norm_attention_bwd(
                *sargs, config=BwdConfig(**opts), **qkw), warmup=5, rep=30))
        # rows_pre without reuse-loads (the split plan's rows kernel drops it for softmax)
        if not lean:
            guard("fused_saved_kvq_noreuse_ms", lambda: do_bench(lambda: flash_norm_attention_bwd(
                *sargs, passes=PRE_PASSES[:1], **qkw), warmup=5, rep=30))
        ref = []  # (the default tile's gradients, computed by the first tile's guarded call)

        def kvq_ref():
            if not ref:
                ref.append(flash_norm_attention_bwd(*sargs, **qkw))
            return ref[0]
        for bm, w, st, dqt, post in kvq_tiles:
            flags = ("t" if dqt else "") + ("p" if post else "")
            key = "%d:%d:%d" % (bm, w, st) + (f":{flags}" if flags else "")
            tcfg = BwdConfig(kvq_block_m=bm, kvq_num_warps=w, kvq_num_stages=st, kvq_dq_t=dqt,
                             kvq_sums_in_post=post)
            # (timed only if repeatable bitwise and within 2e-2 of the default tile's output: a
            # tile with a pipeliner race must not be the one chosen)
            guard(f"kvq_tiles_ms[{key}]", lambda tcfg=tcfg: _checked_tile(
                lambda: flash_norm_attention_bwd(*sargs, config=tcfg, **qkw), kvq_ref(), do_bench))
            if f"kvq_tiles_ms[{key}]" in rec:
                rec.setdefault("kvq_tiles_ms", {})[key] = rec.pop(f"kvq_tiles_ms[{key}]")
    # tile sweeps of the default (saved g) backward, one kernel's tiles at a time, the other
    # kernel at its default: {"BMxBL:warps:stages": ms}
    for name, tiles, fields in (("rows_tiles_ms", rows_tiles,
                                 ("block_m", "block_l", "num_warps", "num_stages")),
                                ("kv_tiles_ms", kv_tiles,
                                 ("kv_block_m", "kv_block_l", "kv_num_warps", "kv_num_stages"))):
        for tile in tiles:
            key = "%dx%d:%d:%d" % tile
            tcfg = BwdConfig(**dict(zip(fields, tile)))
            guard(f"{name}[{key}]", lambda tcfg=tcfg: do_bench(
                lambda: flash_norm_attention_bwd(*sargs, config=tcfg, **skw), warmup=5, rep=30))
            if f"{name}[{key}]" in rec:
                rec.setdefault(name, {})[key] = rec.pop(f"{name}[{key}]")
    if not (quick or lean):
        guard("naive_ms", lambda: do_bench(lambda: flash_norm_attention_bwd(*args, passes=(), **kw),
                                           warmup=5, rep=30))
    guard("unfused_eager_fwd_ms", lambda: bench_forward(
        lambda a, b_, c: unfused(a, b_, c, bidx, tidx, max_len, activation, scale), (x, k, v)))
    guard("unfused_eager_ms", lambda: bench_backward(
        lambda a, b_, c: unfused(a, b_, c, bidx, tidx, max_len, activation, scale), (x, k, v),
        dout.reshape(T, -1)))
    if kernels:
        from .bench_ops import _device_kernels
        guard("fused_kernels", lambda: _device_kernels(
            lambda: flash_norm_attention_bwd(*args, **kw), top=10))
        guard("fused_saved_kernels", lambda: _device_kernels(
            lambda: flash_norm_attention_bwd(*sargs, **skw), top=10))
        if L <= KVQ_MAX_L:
            guard("fused_saved_kvq_kernels", lambda: _device_kernels(
                lambda: flash_norm_attention_bwd(*sargs, **qkw), top=10))
        guard("unfused_eager_kernels", lambda: backward_kernels(
            lambda a, b_, c: unfused(a, b_, c, bidx, tidx, max_len, activation, scale),
            (x, k, v), dout.reshape(T, -1)))
    g = torch.randn(T, H * D, device="cuda", dtype=torch.bfloat16)
    guard("norms_compiled_ms", lambda: bench_backward(torch.compile(norms_only, dynamic=False),
                                                      (x.reshape(T, -1), g), dout.reshape(T, -1)))
    if time.time() - t_start < budget * 0.6:
        comp = torch.compile(lambda a, b_, c: unfused(a, b_, c, bidx, tidx, max_len, activation, scale),
                             dynamic=False)
        guard("unfused_compiled_ms", lambda: bench_backward(comp, (x, k, v), dout.reshape(T, -1)))
        guard("unfused_compiled_fwd_ms", lambda: bench_forward(comp, (x, k, v)))
    else:
        errors["unfused_compiled_ms"] = "skipped: time budget"
    if time.time() - t_start < budget * 0.7:
        dyn = _dynamic_unfused()
        args = (bidx, tidx, max_len, activation, scale)
        # (the dynamic compile's backward donates its saved buffers and then refuses the
        # timing loop's repeated backward over one graph: every cell failed so on torch 2.11,
        # H200, 2026-12-05; compiled without the donation, the same kernels)
        guard("unfused_dynamic_ms", lambda: bench_backward(
            lambda a, b_, c: dyn(a, b_, c, *args), (x, k, v), dout.reshape(T, -1),
            donate=False))
        guard("unfused_dynamic_fwd_ms", lambda: bench_forward(
            lambda a, b_, c: dyn(a, b_, c, *args), (x, k, v)))
    else:
        errors["unfused_dynamic_ms"] = "skipped: time budget"
    # the blog's own unfused baseline: compiled norms on the jagged rows and a jagged attention
    # (softmax: torch's nested jagged SDPA; GELU: Meta's GDPA where tritonbench imports), no
    # padding, its output checked against the padded eager pipeline's first
    attend, why = jagged_attention(activation, off, L, max_len, scale)
    if attend is None:
        errors["unfused_jagged_ms"] = why
    elif time.time() - t_start < budget * 0.75:
        ln_fn, post_fn = jagged_norms()

        def jag(a, b_, c):
            return unfused_jagged(a, b_, c, attend, ln_fn, post_fn)

        def checked_backward():
            want = unfused(x, k, v, bidx, tidx, max_len, activation, scale).float()
            err = rel_err(jag(x, k, v), want)
            rec["unfused_jagged_err"] = err
            if err > 2e-2:
                raise ValueError(f"unfused_jagged: output {err:.2e} from the padded pipeline's")
            return bench_backward(jag, (x, k, v), dout.reshape(T, -1))
        guard("unfused_jagged_ms", checked_backward)
        if "unfused_jagged_ms" in rec:
            guard("unfused_jagged_fwd_ms", lambda: bench_forward(jag, (x, k, v)))
    else:
        errors["unfused_jagged_ms"] = "skipped: time budget"
    fused = min([rec[k_] for k_ in ("fused_ms", "fused_saved_ms") if k_ in rec], default=None)
    unf = [rec[k_] for k_ in ("unfused_eager_ms", "unfused_compiled_ms", "unfused_dynamic_ms",
                              "unfused_jagged_ms") if k_ in rec]
    if fused is not None and unf:
        rec["best_fused_ms"] = fused
        rec["unfused_best_ms"] = min(unf)
        # (against eager alone it would overstate: see train_step_fields)
        if "unfused_eager_ms" in rec and "unfused_compiled_ms" in rec:
            rec["saved_pct_vs_padded_unfused"] = 100.0 * (1 - fused / min(unf))
    rec.update(train_step_fields(rec))
    if errors:
        rec["errors"] = errors
    return [rec]


KVQ_KERNEL = "fna_bwd_kvq"  # (the kvq plan's middle kernel's name prefix: the attention's backward)
PRE_KERNEL = "fna_bwd_rows_pre"  # (its first kernel: the norms' backward's first half, softmax's delta)


def core_of_kernels(rows) -> dict:
    """From the kvq plan's kernels ([[name, device ms, launches], ...]): `core_bwd_ms`, the
    kernel that runs the attention's backward (dK, dV and dQ, with the LayerNorm backward's
    per-head row partials: more than the attention alone), and `core_bwd_plan_ms`, all of the
    plan's kernels (rows_pre and rows_post: the norms' backwards)."""
    core = [ms for name, ms, _ in rows if name.startswith(KVQ_KERNEL)]
    if len(core) != 1:
        raise ValueError(f"expected one {KVQ_KERNEL}* kernel among the kvq plan's kernels, got "
                         f"{[r[0] for r in rows]}")
    return {"core_bwd_ms": core[0], "core_bwd_plan_ms": sum(r[1] for r in rows)}


def backward_device_ms(fn, inputs, dout, device_timer) -> float:
    """The device time of `fn`'s backward alone (one forward with its graph kept; every kernel
    of one backward call, summed by `device_timer`, e.g. bench_ops._device_ms)."""
    leaves = [t.detach().requires_grad_() for t in inputs]
    out = fn(*leaves)
    return device_timer(lambda: torch.autograd.grad(out, leaves, dout, retain_graph=True))


def attention_bwd_alternatives(x, k, v, off, lens, dout, max_len, activation, scale, *,
                               timer=None, compile_backend="inductor",
                               device_timer=None) -> tuple[dict, dict, dict]:
    """The attention's backward alone as a user could run it instead of the fused kernel, for the
    same queries ([T, H, D] jagged: x stands in for LayerNorm(x)), keys and values ([B, L, Hkv,
    D]) and output gradient ([T, H, D]): ({name: ms}, {name: error}).

    softmax: `sdpa_<backend>` (flash, efficient, cudnn: SDPA's backward on queries padded to
    [B, H, max_len, D], which does up to 2x the useful work at sparsity 0.5) and `flash_varlen`
    (FlashAttention-2's jagged backward through `aten._flash_attention_backward`, cumulative
    query / key offsets: the same rows as the fused kernel). GDPA: `gdpa_eager` and
    `gdpa_compiled` (torch.compile for the shape) on padded queries, and Meta's public Triton GDPA (`gdpa_tritonbench`, `external_gdpa`: its
    jagged backward where tritonbench imports, its dQ checked against the eager one first). Each
    is the backward alone (`timer(fn, inputs, dout)`, by default
    `bench_backward`: one forward, its graph kept): ({name: ms}, {name: device ms}, {name:
    error}). The device ms (`device_timer`, fn -> ms of GPU work; on CUDA by default
    bench_ops._device_ms) sums every kernel of one backward call, its preprocessing (FlashAttention's
    delta = rowsum(dO * O), dQ's conversion from fp32) included: what the fused plan's kernels are
    compared with, device time against device time."""
    timer = timer or bench_backward
    if device_timer is None and x.device.type == "cuda":
        from .bench_ops import _device_ms as device_timer
    T, H, D = x.shape
    B, L, Hkv, _ = k.shape
    dev = x.device
    bidx, tidx = padded_index(off, lens, dev)
    qp, dp = (padded_heads(t, bidx, tidx, B, max_len) for t in (x, dout))
    kt, vt = heads_kv(k, v, H)
    times, device, errors = {}, {}, {}

    def guard(name, f):
        try:
            ms, dev_ms = f()
            times[name] = float(ms)
            if dev_ms is not None:
                device[name] = float(dev_ms)
        except Exception as e:  # noqa: BLE001 - recorded: a backend that does not take the shape
            errors[name] = "".join(traceback.format_exception_only(type(e), e)).strip()[-400:]

    def both(fn, inputs):
        """(wall ms, device ms or None) of fn's backward on `inputs` against dp."""
        ms = timer(fn, inputs, dp)
        return ms, (backward_device_ms(fn, inputs, dp, device_timer) if device_timer else None)
    if activation == "softmax":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION),
                         ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            def run(be=be):
                with sdpa_kernel([be]):  # (the forward picks the backend its backward runs)
                    return both(lambda a, b_, c: F.scaled_dot_product_attention(
                        a, b_, c, scale=scale), (qp, kt, vt))
            guard("sdpa_" + name, run)

        def varlen():
            from triton.testing import do_bench
            cq = off.to(torch.int32)
            ck = external_gdpa.key_offsets(B, L, dev)
            kp, vp = k.reshape(B * L, Hkv, D), v.reshape(B * L, Hkv, D)
            mq = int(lens.max()) if B else 0
            out, lse, rng, unused, _ = torch.ops.aten._flash_attention_forward(
                x, kp, vp, cq, ck, mq, L, 0.0, False, False, scale=scale)

            def bwd():
                return torch.ops.aten._flash_attention_backward(
                    dout, x, kp, vp, out, lse, cq, ck, mq, L, 0.0, False, rng, unused,
                    scale=scale)
            # (its dQ against the padded SDPA's: the offsets and lengths were read as meant)
            qd = qp.detach().requires_grad_()
            ref = torch.autograd.grad(F.scaled_dot_product_attention(qd, kt, vt, scale=scale),
                                      qd, dp)[0].transpose(1, 2)[bidx, tidx].float()
            err = rel_err(bwd()[0], ref)
            if err > 2e-2:
                raise ValueError(f"flash_varlen: dQ {err:.2e} from the padded SDPA's")
            return do_bench(bwd, warmup=5, rep=30), device_timer(bwd) if device_timer else None
        if dev.type == "cuda":
            guard("flash_varlen", varlen)
        else:
            errors["flash_varlen"] = "RuntimeError: flash_varlen: CUDA only"
    else:
        core = functools.partial(gdpa_core, scale=scale)
        guard("gdpa_eager", lambda: both(core, (qp, kt, vt)))
        comp = torch.compile(core, dynamic=False, backend=compile_backend)
        guard("gdpa_compiled", lambda: both(comp, (qp, kt, vt)))
        if activation in external_gdpa.ACTIVATION:
            fn, why = external_gdpa.load()
            if fn is None:
                errors["gdpa_tritonbench"] = why
            else:
                def tritonbench():
                    kj, vj, _ = external_gdpa.jagged_kv(k, v)
                    call = external_gdpa.gdpa_fn(fn, off, L, max(int(max_len), 1), activation,
                                                 scale)
                    # (its dQ against the padded eager GDPA's on the first few sequences, in
                    # fp32: the offsets were read as meant; the whole padded batch in fp32 is
                    # ~8 tensors of 15.7 GB at H 4, max length 10000)
                    nb = min(B, 8)
                    rows = int(off[nb])
                    qd = qp[:nb].detach().float().requires_grad_()
                    sel = bidx < nb
                    ref = torch.autograd.grad(
                        gdpa_core(qd, kt[:nb].float(), vt[:nb].float(), scale), qd,
                        dp[:nb].float())[0].transpose(1, 2)[bidx[sel], tidx[sel]]
                    xq = x.detach().requires_grad_()
                    got = torch.autograd.grad(call(xq, kj, vj), xq, dout)[0][:rows].float()
                    err = rel_err(got, ref)
                    if err > 2e-2:
                        raise ValueError(f"gdpa_tritonbench: dQ {err:.2e} from the padded eager GDPA's")
                    ms = timer(call, (x, kj, vj), dout)
                    return ms, (backward_device_ms(call, (x, kj, vj), dout, device_timer)
                                if device_timer else None)
                guard("gdpa_tritonbench", tritonbench)
    return times, device, errors


def core_fields(kernels_rows, times: dict, errors: dict, device: dict | None = None, *,
                with_pre: bool = False) -> dict:
    """The record's core fields: ours (`core_of_kernels`), each alternative's wall-clock ms
    (`core_alternatives_ms`) and device ms (`core_alternatives_device_ms`, every kernel of its
    backward call), the best (`core_best_alternative`, `core_best_ms`) and the ratio
    `core_bwd_vs_best` (issue 22's goal: <= 1.2). The ratio is device time against device time
    where the alternatives' device times were measured (`core_basis` "device"), else against
    their wall-clock medians ("wall", which include launch gaps: it leans our way).
    `with_pre` (softmax): `core_bwd_pre_ms` adds the rows_pre kernel, which computes softmax's
    delta = rowsum(dz * g) as FlashAttention's preprocessing does (and the LayerNorm backward's
    first half besides: an upper bound on ours), and `core_bwd_pre_vs_best` with it."""
    out = core_of_kernels(kernels_rows)
    out["core_alternatives_ms"] = dict(times)
    device = {n: ms for n, ms in (device or {}).items() if n in times}
    if device:
        out["core_alternatives_device_ms"] = dict(device)
    if errors:
        out["core_alternative_errors"] = dict(errors)
    if with_pre:
        pre = [ms for name, ms, _ in kernels_rows if name.startswith(PRE_KERNEL)]
        if len(pre) != 1:
            raise ValueError(f"expected one {PRE_KERNEL}* kernel among the kvq plan's kernels, "
                             f"got {[r[0] for r in kernels_rows]}")
        out["core_bwd_pre_ms"] = out["core_bwd_ms"] + pre[0]
    basis = device if device else times
    if basis:
        best = min(basis, key=basis.get)
        out.update(core_basis="device" if device else "wall", core_best_alternative=best,
                   core_best_ms=basis[best], core_bwd_vs_best=out["core_bwd_ms"] / basis[best])
        if with_pre:
            out["core_bwd_pre_vs_best"] = out["core_bwd_pre_ms"] / basis[best]
    return out


def kvq_plan_kernels(x, k, v, off, dout, activation, scale, kernel_lister=None) -> list:
    """The kvq plan's kernels for one backward (g and lse saved by the training forward), one
    call under the profiler: [[name, device ms, launches], ...] (CUDA only)."""
    from normfuse.ops.common import host_offsets
    from normfuse.ops.flash_norm_attention import prepare_flash_norm_attention
    from normfuse.ops.flash_norm_attention_bwd import flash_norm_attention_bwd
    if kernel_lister is None:
        from .bench_ops import _device_kernels
        kernel_lister = functools.partial(_device_kernels, top=10)
    fkw = dict(activation=activation, qk_scale=scale, check_offsets=False)
    host_offsets(off)
    ps = prepare_flash_norm_attention(x, k, v, off, save=True, **fkw)
    ps.launch()
    sargs = (dout, x, k, v, off, ps.out, ps.mean, ps.rstd, ps.rrms)
    return kernel_lister(lambda: flash_norm_attention_bwd(*sargs, g=ps.g, lse=ps.lse, plan="kvq",
                                                          **fkw))


def bench_core(H, max_len, activation, batch: int = 768, *, device="cuda", timer=None,
               compile_backend="inductor", L=128, D=128, kvq_rows=None,
               device_timer=None) -> dict:
    """One cell's backward core (issue 22: the attention backward within 1.2x of the best
    available one): `kvq_plan_kernels` and `attention_bwd_alternatives` on the same inputs.
    `kvq_rows`: the kvq plan's kernels already profiled on these inputs (bench_shape's
    `fused_saved_kvq_kernels`: make_inputs is seeded), not profiled again."""
    from normfuse.reference_attention import default_qk_scale
    x, k, v, off, dout, lens = make_inputs(batch, L, H, H, D, max_len, device=device)
    scale = default_qk_scale(activation, D)
    rows = kvq_rows or kvq_plan_kernels(x, k, v, off, dout, activation, scale)
    times, dev, errors = attention_bwd_alternatives(x, k, v, off, lens, dout, max_len,
                                                    activation, scale, timer=timer,
                                                    compile_backend=compile_backend,
                                                    device_timer=device_timer)
    return dict(core_fields(rows, times, errors, dev, with_pre=activation == "softmax"),
                core_kernels=rows)


def cell_bytes(H: int, max_len: int, batch: int = 768, L: int = 128, D: int = 128) -> int:
    """A warm-up child's estimated peak GPU bytes for one cell: ten bytes per element of a
    padded [batch, H, max_len, max(D, L)] tensor (the unfused pipelines' padded queries, scores
    and their gradients dominate; the jagged fused ones take about half of one). An estimate, set
    so that session 33's warm-up (12 children, the five max-length-10000 cells out of memory
    beside the others on the H200's 141 GB) would have kept them apart; the children report
    their peaks (`peak_gb` in the warm-up's record) to set it by."""
    return 10 * batch * H * max_len * max(D, L)


def bench_shapes(quick: bool) -> list:
    """(H, max_seqlen, activation) of the benchmark."""
    return ([(2, 1024, "gelu_tanh"), (4, 1024, "softmax")] if quick else
            [(h, m, a) for m in (1024, 3072, 10000) for a in ("gelu_tanh", "softmax")
             for h in (2, 3, 4)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(REPO, "build", "gpu_attention_bwd")))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-tests", action="store_true", help="skip the gpu-marked tests")
    ap.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for the whole script")
    ap.add_argument("--warm-procs", type=int, default=0,
                    help="compile every shape first in this many processes at once (0: none)")
    ap.add_argument("--warm-timeout", type=float, default=150.0)
    ap.add_argument("--no-kernels", action="store_true",
                    help="skip the per-kernel breakdown of the fused and unfused backward")
    ap.add_argument("--rows-tiles", default="",
                    help="also time the default backward with these rows-kernel tiles, "
                         "BLOCK_MxBLOCK_L:warps:stages comma-separated (e.g. 64x64:8:2,128x64:8:1; "
                         "bench/fna_bwd_tiles.py lists which compile without spills)")
    ap.add_argument("--kv-tiles", default="",
                    help="likewise for the dK/dV kernel's tiles (e.g. 32x32:4:2,32x64:4:3)")
    ap.add_argument("--kvq-tiles", default="",
                    help="also time the kvq plan with these tiles of its middle kernel, "
                         "BLOCK_M:warps:stages[:FLAGS] comma-separated, FLAGS 't' for dQ "
                         "transposed, 'p' for the LayerNorm's row sums in rows_post (e.g. "
                         "16:8:1,16:8:2:t,32:8:3:tp, the last the default's; "
                         "`bench/fna_bwd_tiles.py --kernels kvq` lists the spills)")
    ap.add_argument("--cells", default="",
                    help="only these cells, H:max_len:activation comma-separated (e.g. "
                         "2:10000:softmax,4:10000:gelu_tanh): the grid split over several calls, "
                         "each with the time for its compiled baselines")
    ap.add_argument("--core", action="store_true",
                    help="also measure each cell's backward core (`bench_core`: the kvq kernel "
                         "against SDPA's backends and FlashAttention's jagged backward, or GDPA's "
                         "eager and compiled backward)")
    ap.add_argument("--core-only", action="store_true",
                    help="only the backward core per cell (no plans, no unfused pipelines)")
    ap.add_argument("--lean", action="store_true",
                    help="only the columns the verdicts use (the plans at their defaults, the "
                         "forward, the unfused pipelines, --core's): no A/B columns of earlier "
                         "defaults, each a compile and a timing per cell (the whole grid in "
                         "fewer GPU seconds)")
    ap.add_argument("--batch", type=int, default=768,
                    help="sequences per cell (the blog's 768; the kvq plan runs batch x kv heads "
                         "programs, so a small batch is where it may lose: "
                         "ops.flash_norm_attention_bwd.KVQ_MIN_PROGRAMS)")
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error(f"--batch must be >= 1, got {args.batch}")
    try:
        rows_tiles, kv_tiles = parse_tiles(args.rows_tiles), parse_tiles(args.kv_tiles)
        kvq_tiles = parse_kvq_tiles(args.kvq_tiles)
        from .bench_attention import parse_cells
        only = parse_cells(args.cells)
    except ValueError as e:
        ap.error(str(e))
    budget = args.budget
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    result = {"script": "normfuse.repro.bench_attention_bwd", "quick": args.quick}
    try:
        from .bench import environment
        result["env"] = environment()
    except Exception as e:  # noqa: BLE001
        result["env_error"] = repr(e)
    result["pytest"] = {"skipped": "--no-tests"} if args.no_tests else run_gpu_tests(args.out)
    print("pytest:", result["pytest"].get("summary") or result["pytest"], flush=True)
    shapes = only or bench_shapes(args.quick)
    from .warm import child_argv, configure_torch, gpu_mem_budget, parallel
    configure_torch()  # the same settings as the warm-up children's, warm-up or not
    if args.warm_procs > 0:
        # the largest first (they start early; the small ones fill in beside them), each with
        # its estimated peak, within 85 % of the GPU's memory
        jobs = sorted(((f"attention_bwd H{H} {m} {a}",
                        child_argv("attention_bwd", (H, m, a), *(["--quick"] if args.quick else []),
                                   *(["--lean"] if args.lean else [])),
                        cell_bytes(H, m)) for H, m, a in shapes), key=lambda j: -j[2])
        result["warmup"] = parallel(jobs, args.warm_procs, args.warm_timeout,
                                    mem_budget=gpu_mem_budget())
    records = []
    for H, max_len, act in shapes:
        if time.time() - t0 > budget:
            records.append({"op": "flash_norm_attention.backward", "H": H, "max_seqlen": max_len,
                            "activation": act, "errors": {"all": "skipped: time budget"}})
            continue
        bkw = {"batch": args.batch} if args.batch != 768 else {}
        lkw = {"lean": True} if args.lean else {}
        try:
            recs = [{"op": "flash_norm_attention.backward", "H": H, "max_seqlen": max_len,
                     "activation": act, "B": args.batch}] if args.core_only else bench_shape(
                H, max_len, act, t0, args.quick, kernels=not args.no_kernels,
                rows_tiles=rows_tiles, kv_tiles=kv_tiles, kvq_tiles=kvq_tiles, budget=budget,
                **bkw, **lkw)
        except Exception as e:  # noqa: BLE001
            recs = [{"op": "flash_norm_attention.backward", "H": H, "max_seqlen": max_len,
                     "activation": act, "errors": {"shape": repr(e)[-800:]}}]
        if args.core or args.core_only:
            torch.cuda.empty_cache()
            try:
                recs[-1].update(bench_core(
                    H, max_len, act, kvq_rows=recs[-1].get("fused_saved_kvq_kernels"), **bkw))
            except Exception as e:  # noqa: BLE001
                recs[-1].setdefault("errors", {})["core"] = repr(e)[-800:]
        records += recs
        print(json.dumps(recs[-1]), flush=True)
        torch.cuda.empty_cache()
    result["records"] = records
    result["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(args.out, "attention_bwd.json"), "w") as f:
        json.dump(result, f, indent=1)
    cols = ["activation", "H", "max_seqlen", "T", "fused_ms", "fused_saved_ms",
            "fused_saved_bound_ms", "fused_saved_chain_ms", "fused_saved_early_ms",
            "fused_saved_early_reuse_ms", "fused_saved_kvq_ms", "fused_saved_kvq_f32_ms",
            "fused_saved_kvq_post_ms", "fused_saved_kvq_lpt_ms", "fused_saved_kvq_own_ms",
            "fused_saved_kvq_noreuse_ms", "fwd_ms", "fwd_saving_ms", "naive_ms",
            "unfused_eager_ms", "unfused_compiled_ms", "unfused_dynamic_ms", "unfused_jagged_ms",
            "norms_compiled_ms", "saved_pct_vs_padded_unfused", "train_fused_ms",
            "train_unfused_best_ms", "train_saved_pct_vs_padded_unfused",
            "train_fused_kvq_ms", "train_saved_kvq_pct_vs_padded_unfused", "core_bwd_ms",
            "core_bwd_plan_ms", "core_bwd_pre_ms", "core_basis", "core_best_alternative",
            "core_best_ms", "core_bwd_vs_best", "core_bwd_pre_vs_best"]
    if args.core_only:
        cols = ["activation", "H", "max_seqlen"] + cols[-8:]
    lines = [f"# FlashNormAttention backward (bf16, B={args.batch}, L=128, D=128, no affines)", "",
             f"pytest -m gpu: {result['pytest'].get('summary', result['pytest'])}", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in records:
        lines.append("| " + " | ".join(
            (f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c, ""))) for c in cols) + " |")
    for r in records:
        for which, what in (
                ("rows_tiles_ms", "default backward (saved g) by rows kernel tile "
                                  "(BLOCK_MxBLOCK_L:warps:stages)"),
                ("kv_tiles_ms", "default backward (saved g) by dK/dV kernel tile "
                                "(BLOCK_MxBLOCK_L:warps:stages)"),
                ("kvq_tiles_ms", "kvq plan by its kvq kernel's tile (BLOCK_M:warps:stages)")):
            if r.get(which):
                lines += ["", f"{what}, {r.get('activation')} H={r.get('H')} "
                          f"max={r.get('max_seqlen')}: " + ", ".join(
                              f"{t} {ms:.3f} ms" for t, ms in sorted(r[which].items(),
                                                                     key=lambda kv: kv[1]))]
    for r in records:
        if r.get("core_alternatives_ms"):
            lines += ["", f"backward core, {r.get('activation')} H={r.get('H')} "
                      f"max={r.get('max_seqlen')}: kvq kernel {r['core_bwd_ms']:.3f} ms; "
                      "alternatives (wall ms / device ms) " + ", ".join(
                          f"{n} {ms:.3f} / " + (f"{r['core_alternatives_device_ms'][n]:.3f}"
                                                if n in r.get("core_alternatives_device_ms", {})
                                                else "-")
                          for n, ms in sorted(r["core_alternatives_ms"].items(),
                                              key=lambda kv: kv[1]))]
        for which in ("fused_kernels", "fused_saved_kernels", "fused_saved_kvq_kernels",
                      "unfused_eager_kernels", "core_kernels"):
            if r.get(which):
                lines += ["", f"{which[:-8]} backward's kernels, {r.get('activation')} H={r.get('H')} "
                          f"max={r.get('max_seqlen')} (one call, device ms, launches):", ""]
                lines += [f"- `{name[:70]}` {ms:.3f} x{n}" for name, ms, n in r[which]]
    errs = [(r.get("activation"), r.get("H"), r.get("max_seqlen"), r["errors"]) for r in records if r.get("errors")]
    if errs:
        lines += ["", "Errors:"] + [f"- {e}" for e in errs]
    with open(os.path.join(args.out, "attention_bwd.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
