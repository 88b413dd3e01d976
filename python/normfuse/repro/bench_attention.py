"""FlashNormAttention forward benchmark (issue 12): the blog's shapes, the fused op against the
unfused pipeline and the attention core against the best baseline.

    PYTHONPATH=python python3 -m normfuse.repro.bench_attention --out $OUT [--quick] [--no-tests]
        [--budget 150] [--configs 64x8,128x8:flat] [--cells 4:1000:softmax,4:3000:gelu_tanh]
        [--default-only] [--affine]

(`--configs`: more fused-kernel tiles and launch variants to time beside the default, BLOCK_M x
warps[:variant]; `--cells`: only these cells, H:max_len:activation; `--default-only`: not the
launch variants; `--affine`: the cells with the norms' weights, in the fused op and the unfused
pipeline alike, as `FlashNormAttention.from_modules` of an nn.LayerNorm gets them.)

`python -m normfuse.repro` runs the cells (`append_to_summary`: records appended to summary.json,
op = "flash_norm_attention.forward"); the command line above also runs the gpu-marked tests of
test/python/test_flash_norm_attention.py first (normfuse.repro.gpu_tests; a failure does not stop
the benchmark) and writes $OUT/gpu_attention.json, gpu_attention.md and, with matplotlib,
saved_pct.png.

Cells: bf16, B = 768, KV length L = 128 (dense per batch), D = 128, Q jagged with lengths uniform
in [0, max_len] (average sparsity 0.5), max_len in {1000, 3000, 10000}, H in {2, 3, 4},
activation gelu_tanh (GDPA) and softmax; `--quick`: H = 2, max_len 1000 and 3000. Per cell:

  fused_ms      normfuse.ops.flash_norm_attention's kernel (default passes, default walk:
                `rows_per_program` in `rows_per_program`; prepared launch); the full run also
                times the launch variants `VARIANTS` (each program walking 256 rows, one row
                block a program, session 20's and the earlier default pipelines, the LayerNorm
                in the loads' layout) in `fused_ms_by_config`, the best in `fused_best_ms`; a
                variant whose output is not the default's (bitwise, or within `ROUNDING_TOL`
                for those that round differently: `variant_matches`) is named in
                `variants_differing` and its time left out; the differences of those that round
                differently in `variants_rel_diff`. The training forward's variants (`save`,
                `mma_save`, `loads_save`: `--configs 64x4:save,64x4:loads_save`) go to
                `fused_saving_ms_by_config`, not ranked with the inference forward's
  fused_call_ms the whole `flash_norm_attention_fwd` call (validation, the row-block table, the
                launch; the offsets' host copy and the table cached as across a model's layers)
  naive_ms      the naive kernel without the passes (the oracle), for reference
  unfused_ms    ln_ms + core_ms + post_ms: LayerNorm, the attention core (below) on LN(x),
                RMSNorm(o + ln) + x, each norm the fastest of torch.compile static (compiled
                for the cell's shape), dynamic (one compile for every cell: the baseline up
                to session 29, ~3x slower at these narrow rows), eager, and for LayerNorm
                Liger's kernel (`_norm_times`; every candidate recorded, `ln_best` /
                `post_best` name the fastest)
  saved_pct     (unfused_ms - fused_ms) / unfused_ms * 100   (the issue's "% of total time saved")
  core_ms       the attention core alone, no norms: the fastest of the plain jagged Triton
                kernels written here and, for GELU, Meta's (`core_best` names it): `core_block_ms`, one program per
                (row block, head), its rows from the row-block table (`core_search_ms`: by the
                binary search); `core_kv_resident_{rows}_ms`, K and V loaded once per program
                of up to `rows` rows (`attention_core_kv_resident`, L <= 128), with its error
                against the row-block core's output; GDPA or FA2-style softmax; for GELU also
                Meta's public Triton GDPA (`core_tritonbench_gdpa_ms`, `external_gdpa`: where
                tritonbench imports, its output checked against the row-block core's first,
                `core_tritonbench_gdpa_err`; else `core_tritonbench_gdpa_error` says why)
  sdpa_ms       softmax only: torch SDPA, the best of its flash / efficient / cudnn backends on
                padded [B, H, max_len, D] queries (padding doubles their work at sparsity 0.5)
                and of nested jagged SDPA on the rows themselves (`jagged`: FlashAttention's
                varlen kernels, `jagged_sdpa`; its output checked against the core's first)
  core_vs_best  core_ms / best baseline (sdpa_ms for softmax; for GDPA the best of this
                script's cores (`core_ours_ms`) / Meta's GDPA where it was timed, else 1.0: the
                core kernel is the baseline itself; `baseline` says which)
  err           fused vs the unfused pipeline's output (relative Frobenius), a sanity check

Times: triton.testing.do_bench medians. Every cell is caught separately (errors recorded).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

import torch
import triton
import triton.language as tl

from . import external_gdpa
from ..kernels.attention import ACT_CODES, _activation, _locate, attend
from ..ops.flash_norm_attention import DEFAULT_FNA_PASSES, MMA_FNA_PASSES

@triton.jit
def attention_core(Q, K, V, O, OFFS, BLOCKS, nbatch, qk_scale, H: tl.constexpr, HKV: tl.constexpr,
                   D: tl.constexpr, L: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   ACT: tl.constexpr, LOG_B: tl.constexpr, ROW_TABLE: tl.constexpr = False):
    """Benchmark reference: o_h = attend(q_h, K_h, V_h) for jagged q [T, H, D], one program per
    (row block, head); ROW_TABLE as in the fused kernel (BLOCKS the row-block table)."""
    N: tl.constexpr = H * D
    b, row0, end = _locate(BLOCKS, OFFS, nbatch, BLOCK_M, LOG_B, ROW_TABLE)
    h = tl.program_id(1)
    rows = row0 + tl.arange(0, BLOCK_M)
    rmask = rows < end
    offs_d = tl.arange(0, D)
    ptr = rows.to(tl.int64)[:, None] * N + h * D + offs_d[None, :]
    q = tl.load(Q + ptr, mask=rmask[:, None], other=0.0)
    kvh = b.to(tl.int64) * (L * HKV * D) + (h // (H // HKV)) * D
    acc, _ = attend(q, K, V, kvh, qk_scale, HKV, D, L, BLOCK_M, BLOCK_N, ACT)
    tl.store(O + ptr, acc.to(O.dtype.element_ty), mask=rmask[:, None])


@triton.jit
def attention_core_kv_resident(Q, K, V, O, CHUNKS, qk_scale, H: tl.constexpr, HKV: tl.constexpr,
                               D: tl.constexpr, L: tl.constexpr, BLOCK_M: tl.constexpr,
                               ROWS: tl.constexpr, ACT: tl.constexpr):
    """Benchmark baseline (the unfused pipeline's core where it is the fastest; H200,
    2026-12-03: 0.68-0.83x SDPA's best backend on the padded queries): `attention_core` with the head's K and V
    loaded once per program (L <= 128 keys, one tile), the program walking up to ROWS rows of
    one sequence in BLOCK_M-row steps (CHUNKS: `row_block_table(offsets, ROWS)`, (batch, first
    row, end) per program), so the next step's queries can load while this one computes, where
    `attention_core` loads K and V again for every BLOCK_M rows."""
    N: tl.constexpr = H * D
    pid = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.load(CHUNKS + pid * 3)
    start = tl.load(CHUNKS + pid * 3 + 1)
    stop = tl.minimum(tl.load(CHUNKS + pid * 3 + 2), start + ROWS)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, L)
    kv = (b.to(tl.int64) * (L * HKV * D) + (h // (H // HKV)) * D + offs_n[:, None] * (HKV * D)
          + offs_d[None, :])
    k = tl.load(K + kv)
    v = tl.load(V + kv)
    for r0 in range(start, stop, BLOCK_M):
        rows = r0 + tl.arange(0, BLOCK_M)
        rmask = rows < stop
        ptr = rows.to(tl.int64)[:, None] * N + h * D + offs_d[None, :]
        q = tl.load(Q + ptr, mask=rmask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k))
        if ACT == 4:
            s = s * (qk_scale * 1.4426950408889634)
            m = tl.max(s, axis=1)
            p = tl.exp2(s - m[:, None])
            acc = tl.dot(p.to(V.dtype.element_ty), v) / tl.sum(p, axis=1)[:, None]
        else:
            p = _activation(s, ACT, qk_scale)
            acc = tl.dot(p.to(V.dtype.element_ty), v)
        tl.store(O + ptr, acc.to(O.dtype.element_ty), mask=rmask[:, None])


# rows per program of the KV-resident experiment (4 and 8 row blocks of 64)
KV_RESIDENT_ROWS = (256, 512)


_NORMS = {}


def _compiled_norms(shape=None, affine=False):
    """torch.compile'd LayerNorm and RMSNorm(o + ln) + x: static, compiled for `shape` ([T, N])
    and kept per shape (None: one dynamic-shape pair for every cell, which the benchmark used up
    to session 29 and still times as `ln_dynamic_ms` / `post_dynamic_ms`: on the H200 its kernels
    run at ~1.2-1.6 TB/s against ~4.1 for the static ones at these narrow rows, N = 256-512;
    LayerNorm 0.327 against 0.100 ms at 394693 x 256, 2026-12-04)."""
    key = (None if shape is None else tuple(shape), affine)
    if key not in _NORMS:
        import torch.nn.functional as F
        dyn = shape is None
        if affine:  # (the weights as arguments: ln_w, ln_b, rms_w)
            ln = torch.compile(lambda x2, w, b: F.layer_norm(x2, x2.shape[-1:], w, b, eps=1e-5),
                               dynamic=dyn)
            post = torch.compile(lambda o2, l2, x2, w: F.rms_norm(o2 + l2, o2.shape[-1:], w,
                                                                  eps=1e-5) + x2, dynamic=dyn)
        else:
            ln = torch.compile(lambda x2: F.layer_norm(x2, x2.shape[-1:], eps=1e-5), dynamic=dyn)
            post = torch.compile(lambda o2, l2, x2: F.rms_norm(o2 + l2, o2.shape[-1:],
                                                               eps=1e-5) + x2, dynamic=dyn)
        _NORMS[key] = (ln, post)
    return _NORMS[key]


def _norm_times(x2, o2, ln, ln_fn, post_fn, weights=None) -> dict:
    """The unfused pipeline's norms, each the fastest of what a user could run: LayerNorm by
    torch.compile static (`ln_static_ms`) and dynamic (`ln_dynamic_ms`), eager (`ln_eager_ms`)
    and Liger's kernel where liger-kernel is installed (`ln_liger_ms`; unit weight and zero bias
    without `weights`);
    RMSNorm(o + ln) + x by torch.compile static, dynamic and eager. `ln_ms` / `post_ms`: the
    minima, `ln_best` / `post_best`: which. (At these narrow rows the dynamic kernels run ~3x
    slower than the static ones, H200, 2026-12-04. Session 30 read the max-length-10000 H 3 / 4
    cells as the static compile being slow past 2^31 elements; those were eager's times, the
    static compile having hit Dynamo's recompile limit: `main` now sets the limits first.)
    `weights`: (LayerNorm weight, bias, RMSNorm weight), the affine pipeline (`ln_fn` /
    `post_fn` take them as arguments, as `_compiled_norms(..., affine=True)` compiles them)."""
    import torch.nn.functional as F
    W = x2.shape[-1]
    lw, lb, rw = weights if weights is not None else (None, None, None)
    la, pa = ((lw, lb), (rw,)) if weights is not None else ((), ())
    ln_dyn, post_dyn = _compiled_norms(affine=weights is not None)
    rec = {"ln_dynamic_ms": _bench(lambda: ln_dyn(x2, *la)),
           "ln_eager_ms": _bench(lambda: F.layer_norm(x2, (W,), lw, lb, eps=1e-5)),
           "post_static_ms": _bench(lambda: post_fn(o2, ln, x2, *pa)),
           "post_dynamic_ms": _bench(lambda: post_dyn(o2, ln, x2, *pa)),
           "post_eager_ms": _bench(lambda: F.rms_norm(o2 + ln, (W,), rw, eps=1e-5) + x2)}
    rec["ln_static_ms"] = _bench(lambda: ln_fn(x2, *la))
    try:
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    except Exception:  # noqa: BLE001 - not installed (or not importable): not a candidate
        LigerLayerNormFunction = None
    if LigerLayerNormFunction is not None:
        w = torch.ones(W, device=x2.device, dtype=x2.dtype) if lw is None else lw
        b = torch.zeros_like(w) if lb is None else lb
        try:
            with torch.no_grad():
                rec["ln_liger_ms"] = _bench(lambda: LigerLayerNormFunction.apply(x2, w, b, 1e-5))
        except Exception as e:  # noqa: BLE001 - recorded, not a candidate
            rec["ln_liger_error"] = f"{type(e).__name__}: {e}"[:300]
    for part in ("ln", "post"):
        cand = {k[len(part) + 1:-3]: v for k, v in rec.items()
                if k.startswith(part + "_") and k.endswith("_ms")}
        rec[f"{part}_best"] = min(cand, key=cand.get)
        rec[f"{part}_ms"] = cand[rec[f"{part}_best"]]
    return rec


def jagged_sdpa(off, L: int, max_len: int, scale: float):
    """q [T, H, D] (rows by `off`), k / v [B, L, Hkv, D] -> softmax attention per sequence
    [T, H, D] by torch's nested jagged SDPA: FlashAttention's varlen kernels on the GPU (forward
    and backward, through autograd), no padded queries; GQA by repeating the kv heads.
    torch sends a nested tensor with an empty sequence to its math path (a host sync per
    sequence, no fused kernel), so the empty sequences are dropped: their offsets here, once
    (one host read of the offsets, outside any timing), their keys and values in each call (an
    index_select, as a user with empty sequences would have to). `call.min_seqlen` is the
    minimum length the nested queries declare (>= 1: the fused kernels' condition)."""
    import torch.nn.functional as F
    offs = off.to(torch.int64)
    lens = (offs[1:] - offs[:-1]).cpu()
    keep = torch.nonzero(lens > 0).flatten()
    drop = keep.numel() != lens.numel()
    keep_dev = keep.to(off.device)
    offs_kept = torch.cat([offs[:1], offs[1:][keep_dev]])
    min_len = int(lens[keep].min()) if keep.numel() else 1
    koff = external_gdpa.key_offsets(keep.numel(), L, off.device, torch.int64)

    def sdpa(q, k, v):
        if keep.numel() == 0:
            return q * 0
        if drop:
            k, v = k.index_select(0, keep_dev), v.index_select(0, keep_dev)
        B, _, Hkv, D = k.shape
        H = q.shape[1]
        if Hkv != H:
            k, v = (t.repeat_interleave(H // Hkv, dim=2) for t in (k, v))
        nj = torch.nested.nested_tensor_from_jagged
        qn = nj(q, offs_kept, min_seqlen=min_len, max_seqlen=max(int(max_len), 1))
        kn, vn = (nj(t.reshape(B * L, H, D), koff, min_seqlen=L, max_seqlen=L) for t in (k, v))
        o = F.scaled_dot_product_attention(qn.transpose(1, 2), kn.transpose(1, 2),
                                           vn.transpose(1, 2), scale=scale)
        return o.transpose(1, 2).values()
    sdpa.min_seqlen = min_len
    return sdpa


def _checked_bench(call, ref, tol: float = 2e-2) -> tuple[float, float | None]:
    """(call()'s output error against `ref`, its time, or None where the error is past `tol`): a
    baseline is timed only once it computes what the core computes."""
    from ..reference import rel_err
    err = rel_err(call(), ref)
    return err, (_bench(call) if err < tol else None)


def _bench(fn):
    from triton.testing import do_bench
    return float(do_bench(fn, warmup=10, rep=50, return_mode="median"))


def _lengths(B, max_len, gen):
    return torch.randint(0, max_len + 1, (B,), generator=gen)


def _cell(H, max_len, act, *, B=768, L=128, D=128, seed=0, configs=((64, 4),), affine=False):
    import torch.nn.functional as F
    from ..ops.common import host_offsets, row_block_table
    from ..ops.flash_norm_attention import flash_norm_attention_fwd, prepare_flash_norm_attention
    from ..reference_attention import default_qk_scale
    dev = "cuda"
    gen = torch.Generator().manual_seed(seed + 7 * H + max_len)
    lens = _lengths(B, max_len, gen)
    offs = torch.zeros(B + 1, dtype=torch.int32)
    offs[1:] = torch.cumsum(lens, 0)
    T, N = int(offs[-1]), H * D
    x = torch.randn(T, H, D, device=dev, dtype=torch.bfloat16)
    k = (torch.randn(B, L, H, D, device=dev) / D ** 0.5).to(torch.bfloat16)
    v = torch.randn(B, L, H, D, device=dev, dtype=torch.bfloat16)
    offs = offs.to(dev)
    scale = default_qk_scale(act, D)
    rec = dict(op="flash_norm_attention.forward", B=B, L=L, D=D, H=H, max_len=max_len, T=T,
               activation=act, dtype="bfloat16", sparsity=round(1 - T / (B * max_len), 3))
    # affine: LayerNorm weight and bias and RMSNorm weight, as `FlashNormAttention.from_modules`
    # of an nn.LayerNorm gets them (the blog's cells have none)
    wkw, weights = {}, None
    if affine:
        wgen = torch.Generator().manual_seed(seed + 1)
        weights = tuple((base + 0.1 * torch.randn(N, generator=wgen)).to(dev, torch.bfloat16)
                        for base in (1.0, 0.0, 1.0))
        wkw = dict(ln_weight=weights[0], ln_bias=weights[1], rms_weight=weights[2])
        rec["affine"] = True

    # fused (the op's kernel) and naive, per config; the op's default config is the first
    fused, saving = {}, {}
    for cfg in configs:
        bm, nw = cfg[:2]
        variant = cfg[2] if len(cfg) > 2 else None
        kw = dict(VARIANTS[variant]) if variant else {}
        p = prepare_flash_norm_attention(x, k, v, offs, activation=act, block_m=bm, num_warps=nw,
                                         **wkw, **kw)
        p.launch()
        name = f"{bm}x{nw}" + (f":{variant}" if variant else "")
        times = saving if kw.get("save") else fused  # (the training forward: not ranked)
        times[name] = _bench(p.launch)
        if cfg == configs[0]:
            out_fused = p.out.clone()
            rec["remarks"] = [r for r in p.compile().remarks if "applied" in r][:6]
            rec["num_ctas"] = int(p.compile().metadata.num_ctas)
            rec["rows_per_program"] = int(p.constexprs.get("ROWS", 0))
        elif (bm, nw) == tuple(configs[0][:2]):
            # a launch variant of the default tile computes the same bits (the GPU tests'
            # test_gpu_launch_variants_same_bits), or within ROUNDING_TOL where it rounds
            # differently: one that does not is recorded, not ranked
            same, diff = variant_matches(variant, p.out, out_fused)
            if diff is not None:
                rec.setdefault("variants_rel_diff", {})[name] = diff
            if not same:
                rec.setdefault("variants_differing", []).append(name)
                times.pop(name)
    # the whole op call as a user makes it (validation, the row-block table, the launch; the
    # offsets' host copy and the table are cached per tensor, as across a model's layers)
    host_offsets(offs)
    rec["fused_call_ms"] = _bench(lambda: flash_norm_attention_fwd(x, k, v, offs, activation=act,
                                                                   **wkw))
    rec["fused_ms_by_config"] = fused
    if saving:
        rec["fused_saving_ms_by_config"] = saving
    rec["fused_ms"] = fused[f"{configs[0][0]}x{configs[0][1]}"]
    rec["fused_best_config"] = min(fused, key=fused.get)
    rec["fused_best_ms"] = min(fused.values())
    pn = prepare_flash_norm_attention(x, k, v, offs, activation=act, passes=(), **wkw)
    rec["naive_ms"] = _bench(pn.launch)

    # unfused: compiled LN -> core kernel -> compiled RMSNorm(o + ln) + x
    ln_fn, post_fn = _compiled_norms((T, N), affine)
    la, pa = (weights[:2], weights[2:]) if affine else ((), ())
    x2 = x.view(T, N)
    ln = ln_fn(x2, *la)
    o = torch.empty_like(x)
    bm = 64
    nblk = torch.div(lens + bm - 1, bm, rounding_mode="floor")
    blocks = torch.zeros(B + 1, dtype=torch.int32)
    blocks[1:] = torch.cumsum(nblk, 0)
    blocks = blocks.to(dev)
    grid = (int(nblk.sum()), H)  # the exact row-block count (the fused op's grid is exact too)

    table = row_block_table(offs, bm)  # (exact: the same grid)

    def core(q, search=False):
        attention_core[grid](q, k, v, o, offs, blocks if search else table, B, scale, H=H, HKV=H,
                             D=D, L=L, BLOCK_M=bm, BLOCK_N=128, ACT=ACT_CODES[act],
                             LOG_B=max(1, B.bit_length()), ROW_TABLE=not search, num_warps=4,
                             num_stages=2)
        return o
    core(ln.view(T, H, D), search=True)
    core(ln.view(T, H, D))
    out_unfused = post_fn(o.view(T, N), ln, x2, *pa)
    cores = {"block": _bench(lambda: core(ln.view(T, H, D)))}
    rec["core_search_ms"] = _bench(lambda: core(ln.view(T, H, D), search=True))
    # K and V loaded once per program of up to `rows` rows (one KV tile: L <= 128)
    if L <= 128 and L & (L - 1) == 0:
        o_ref = o.clone()
        for rows in KV_RESIDENT_ROWS:
            chunks = row_block_table(offs, rows)

            def core_kv(q, chunks=chunks, rows=rows):
                attention_core_kv_resident[(chunks.shape[0], H)](
                    q, k, v, o, chunks, scale, H=H, HKV=H, D=D, L=L, BLOCK_M=bm, ROWS=rows,
                    ACT=ACT_CODES[act], num_warps=4, num_stages=2)
            o.zero_()
            core_kv(ln.view(T, H, D))
            rec[f"core_kv_resident_{rows}_err"] = float(
                (o.float() - o_ref.float()).norm() / o_ref.float().norm().clamp_min(1e-30))
            cores[f"kv_resident_{rows}"] = _bench(lambda: core_kv(ln.view(T, H, D)))
        o.copy_(o_ref)
    # Meta's public Triton GDPA (tritonbench), where it imports: the same function on the same
    # LN(x), checked against the row-block core's output before it is timed
    if act in external_gdpa.ACTIVATION:
        fn, why = external_gdpa.load()
        if fn is None:
            rec["core_tritonbench_gdpa_error"] = why
        else:
            try:
                kj, vj, _ = external_gdpa.jagged_kv(k, v)
                gd = external_gdpa.gdpa_fn(fn, offs, L, max_len, act, scale)
                err, ms = _checked_bench(lambda: gd(ln.view(T, H, D), kj, vj), o)
                rec["core_tritonbench_gdpa_err"] = err
                if ms is not None:
                    cores["tritonbench_gdpa"] = ms
                else:
                    rec["core_tritonbench_gdpa_error"] = f"output {err:.2e} from the core's: not timed"
            except Exception as e:  # noqa: BLE001 - recorded
                rec["core_tritonbench_gdpa_error"] = repr(e)[-400:]
    rec["core_block_ms"] = cores["block"]
    for name, t in cores.items():
        if name != "block":
            rec[f"core_{name}_ms"] = t
    rec["core_best"] = min(cores, key=cores.get)
    rec["core_ms"] = cores[rec["core_best"]]
    rec.update(_norm_times(x2, o.view(T, N), ln, ln_fn, post_fn, weights))
    rec["unfused_ms"] = rec["ln_ms"] + rec["core_ms"] + rec["post_ms"]
    rec["saved_pct"] = (rec["unfused_ms"] - rec["fused_ms"]) / rec["unfused_ms"] * 100
    rec["saved_pct_best_config"] = (rec["unfused_ms"] - rec["fused_best_ms"]) / rec["unfused_ms"] * 100
    d = ((out_fused.float().reshape(T, N) - out_unfused.float().reshape(T, N)).norm()
         / out_unfused.float().norm())
    rec["err_vs_unfused"] = float(d)

    if act == "softmax":
        # SDPA on padded queries [B, H, max_len, D], keys [B, H, L, D]
        from torch.nn.attention import SDPBackend, sdpa_kernel
        qp = torch.zeros(B, H, max_len, D, device=dev, dtype=torch.bfloat16)
        kp, vp = k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous()
        best = {}
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                         ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel([be]):
                    F.scaled_dot_product_attention(qp, kp, vp, scale=scale)
                    best[name] = _bench(lambda: F.scaled_dot_product_attention(qp, kp, vp, scale=scale))
            except Exception as e:  # noqa: BLE001 - a backend that does not take these inputs
                best[name] = f"error: {type(e).__name__}: {str(e)[:120]}"
        # and on the rows themselves (nested jagged: FlashAttention's varlen kernels), its output
        # checked against the row-block core's first
        try:
            js = jagged_sdpa(offs, L, max_len, scale)
            err, ms = _checked_bench(lambda: js(ln.view(T, H, D), k, v), o)
            rec["sdpa_jagged_err"] = err
            best["jagged"] = ms if ms is not None else f"error: output {err:.2e} from the core's"
        except Exception as e:  # noqa: BLE001 - recorded
            best["jagged"] = f"error: {type(e).__name__}: {str(e)[:120]}"
        rec["sdpa_ms_by_backend"] = best
        ok = {n: t for n, t in best.items() if isinstance(t, float)}
        if ok:
            rec["sdpa_ms"] = min(ok.values())
            rec["core_vs_best"] = rec["core_ms"] / rec["sdpa_ms"]
            bname = min(ok, key=ok.get)
            rec["baseline"] = ("torch SDPA on the jagged rows (nested jagged, FlashAttention varlen)"
                               if bname == "jagged" else "torch SDPA (padded), best backend " + bname)
            # the unfused pipeline with the faster of the two attention cores
            rec["unfused_best_ms"] = rec["ln_ms"] + min(rec["core_ms"], rec["sdpa_ms"]) + rec["post_ms"]
            rec["saved_pct_vs_best_unfused"] = ((rec["unfused_best_ms"] - rec["fused_ms"])
                                                / rec["unfused_best_ms"] * 100)
        else:
            rec["core_vs_best"] = float("nan")
        del qp
    elif "core_tritonbench_gdpa_ms" in rec:
        rec["baseline"] = "Meta's Triton GDPA (tritonbench)"
        ours = min(t for n, t in cores.items() if n != "tritonbench_gdpa")
        rec["core_ours_ms"] = ours
        rec["core_vs_best"] = ours / rec["core_tritonbench_gdpa_ms"]
    else:
        rec["baseline"] = "the Triton GDPA core kernel of this script (no other GDPA on this machine)"
        rec["core_vs_best"] = 1.0
    return rec


def cells(quick: bool) -> list:
    if quick:
        return [(2, m, act) for m in (1000, 3000) for act in ("gelu_tanh", "softmax")]
    return [(h, m, act) for m in (1000, 3000, 10000) for h in (2, 3, 4)
            for act in ("gelu_tanh", "softmax")]


# launch variants timed beside the op's default (`VARIANTS[name]`: prepare_flash_norm_attention's
# keywords): "walk256", each program walking 256 rows (the default walks `ROWS_PER_PROGRAM`);
# "flat", one row block a program with the default passes and row table; "noreuse", session 28's
# default (the default passes without reuse-loads: x loaded three times per row block); "once",
# session 20's default (gather-once alone, the binary search, no walk); "each", the per-use
# gather before it.
# (Measured slower on the H200 and no longer timed, 2026-12-03: 64 x 8 warps, 32 x 4, K and V by
# TMA (`kv_tma`) 1.37-1.88x session 20's default; 128 x 8 warps 1.04-1.16x, two heads per CTA
# (`cluster-reduce{cluster-size=2}`) 1.37-1.83x, the L2 exchange (`exchange=global`) 1.13-1.16x;
# walking at 32 x 4 and 64 x 8 warps 1.04-1.36x. 2026-12-04: reuse-loads without across-dots
# (the residual's reload kept) 1.04-1.14x the default with it.)
# "mma": the LayerNorm in the MMA layout (`ln_mma=True`, `MMA_FNA_PASSES`), the default without
# norm weights since 2026-12-05 (`DEFAULT_LN_MMA`: H200, all 18 cells, 0.93-0.98x the loads'
# layout's time); "loads": the LayerNorm in the loads' layout (`ln_mma=False`, the default before
# and still with weights, `--affine`). The variants with their own pass list ("noreuse", "once",
# "each") compute the LayerNorm in the loads' layout too. Not in the full run, `--configs` only:
# the training forward ("save", the op's kernel under autograd, with the default's layout;
# "mma_save" and "loads_save" with either), timed into `fused_saving_ms_by_config`. "ahead" /
# "ahead_save" (`--configs` only): one cluster exchange a row block (`stats_ahead=True`: the
# STATS_AHEAD walk through `cluster-reduce{merge=true}`; the interpreter's bits are the
# default's, compared within ROUNDING_TOL here in case a layout reorders a row sum on the GPU).
# "carry" / "carry_save" (`--configs` only): that walk's carry form (`stats_ahead="carry"`: the
# next block's x, converted for its sums, carried to the next trip by reuse-loads{across-trips=
# values}; same bits as the default in the interpreter; the inference default since session 40).
# "twoexch" (`--configs` only): the walk with two exchanges a row block and no carry
# (`stats_ahead=False`), the inference default before session 40.
_ONCE = ("cluster-reduce{gather=once}", "epilogue-norm", "residual-acc")
_NOREUSE = tuple(p for p in DEFAULT_FNA_PASSES if not p.startswith("reuse-loads"))
_MMA = dict(ln_mma=True, passes=MMA_FNA_PASSES)
VARIANTS = {"noreuse": dict(passes=_NOREUSE),
            "walk256": dict(rows_per_program=256),
            "flat": dict(rows_per_program=0),
            "once": dict(passes=_ONCE, rows_per_program=0, row_table=False),
            "each": dict(passes=("cluster-reduce",) + _ONCE[1:], rows_per_program=0,
                         row_table=False),
            "mma": _MMA,
            "loads": dict(ln_mma=False),
            "save": dict(save=True),
            "mma_save": dict(_MMA, save=True),
            "loads_save": dict(ln_mma=False, save=True),
            "ahead": dict(stats_ahead=True),
            "ahead_save": dict(stats_ahead=True, save=True),
            "carry": dict(stats_ahead="carry"),
            "carry_save": dict(stats_ahead="carry", save=True),
            "twoexch": dict(stats_ahead=False)}
# variants that may round differently from the default: the MMA layout reduces the LayerNorm's
# row sums in another order than the loads' layout (whichever of the two the default is: it
# depends on the weights), the training forward divides softmax's output by l (the inference
# kernel multiplies by 1 / l). Their output is compared with the default's within ROUNDING_TOL
# (relative Frobenius norm), not bit for bit; "walk256" and "flat" (the default's layout and
# passes) bit for bit.
ROUNDED_VARIANTS = frozenset(VARIANTS) - {"walk256", "flat"}
ROUNDING_TOL = 1e-3


def variant_matches(variant, out, ref) -> tuple:
    """(whether a launch variant's output `out` matches the default's `ref`, the relative
    difference for a variant of `ROUNDED_VARIANTS`, else None): bitwise, or within
    ROUNDING_TOL."""
    if variant not in ROUNDED_VARIANTS:
        return torch.equal(out, ref), None
    from ..reference import rel_err
    d = rel_err(out, ref)
    return d <= ROUNDING_TOL, d  # (NaN: no)


def configs(quick: bool) -> tuple:
    """(BLOCK_M, num_warps[, variant]) of the fused kernel; the first is the op's default."""
    return ((64, 4),) if quick else (
        (64, 4), (64, 4, "noreuse"), (64, 4, "walk256"), (64, 4, "flat"),
        (64, 4, "once"), (64, 4, "each"), (64, 4, "loads"))


def parse_configs(text: str) -> tuple:
    """--configs "64x8,128x8:flat" -> ((64, 8), (128, 8, "flat")): BLOCK_MxWARPS[:variant]."""
    out = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        tile, _, variant = item.partition(":")
        try:
            bm, nw = (int(n) for n in tile.split("x"))
        except ValueError:
            raise ValueError(f"config '{item}': expected BLOCK_MxWARPS[:variant], e.g. 64x8 or "
                             f"128x8:flat") from None
        if variant and variant not in VARIANTS:
            raise ValueError(f"config '{item}': unknown variant '{variant}' (one of "
                             f"{', '.join(sorted(VARIANTS))})")
        out.append((bm, nw, variant) if variant else (bm, nw))
    return tuple(out)


def parse_cells(text: str) -> list:
    """--cells "4:1000:softmax,4:3000:gelu_tanh" -> [(4, 1000, "softmax"), ...]."""
    out = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        parts = item.split(":")
        if len(parts) != 3 or parts[2] not in ("gelu_tanh", "softmax"):
            raise ValueError(f"cell '{item}': expected H:max_len:activation (gelu_tanh or "
                             f"softmax), e.g. 4:1000:softmax")
        out.append((int(parts[0]), int(parts[1]), parts[2]))
    return out


def run(quick: bool, budget: float, meta: dict, on_record=None, log=print, extra_configs=(),
        only_cells=None, default_only=False, affine=False) -> list:
    """Every cell (errors recorded, cells past `budget` seconds recorded as skipped);
    `extra_configs` timed after `configs(quick)` (`default_only`: after the default alone),
    `only_cells` instead of `cells(quick)`; `affine`: with the norms' weights (`_cell`)."""
    records = []
    t0 = time.time()
    base = configs(quick)[:1] if default_only else configs(quick)
    cfgs = base + tuple(c for c in extra_configs if c not in base)
    for H, m, act in (only_cells or cells(quick)):
        if time.time() - t0 > budget:
            records.append(dict(op="flash_norm_attention.forward", H=H, max_len=m, activation=act,
                                error="skipped: time budget"))
            continue
        try:
            r = _cell(H, m, act, configs=cfgs, **({"affine": True} if affine else {}))
        except Exception as e:  # noqa: BLE001 - record and go on
            r = dict(op="flash_norm_attention.forward", H=H, max_len=m, activation=act,
                     error=f"{type(e).__name__}: {e}", trace=traceback.format_exc()[-2000:])
        r.update(meta)
        records.append(r)
        log(json.dumps({k: r.get(k) for k in ("H", "max_len", "activation", "fused_ms", "unfused_ms",
                                               "saved_pct", "core_vs_best", "error")}))
        if on_record is not None:
            on_record(records)
        torch.cuda.empty_cache()
    return records


def table(records) -> str:
    md = ["| act | H | max_len | T | fused ms | best cfg ms (cfg) | unfused ms (ln+core+post) | "
          "saved % | core ms | SDPA ms | core/best | err |", "|" + "---|" * 12]
    for r in records:
        if "error" in r:
            md.append(f"| {r.get('activation')} | {r.get('H')} | {r.get('max_len')} | error: {r['error'][:80]} |")
            continue
        md.append(f"| {r['activation']} | {r['H']} | {r['max_len']} | {r['T']} | {r['fused_ms']:.3f} | "
                  f"{r['fused_best_ms']:.3f} ({r.get('fused_best_config', '')}) | {r['unfused_ms']:.3f} ({r['ln_ms']:.3f}+{r['core_ms']:.3f}+"
                  f"{r['post_ms']:.3f}) | {r['saved_pct']:.1f} | {r['core_ms']:.3f} | "
                  f"{r.get('sdpa_ms', float('nan')):.3f} | {r['core_vs_best']:.2f} | {r['err_vs_unfused']:.1e} |")
    return "\n".join(md)


def plot(records, path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ok = [r for r in records if "saved_pct" in r]
    fig, ax = plt.subplots(figsize=(9, 4))
    labels = [f"{r['activation'][:4]} H{r['H']} {r['max_len']}" for r in ok]
    ax.bar(range(len(ok)), [r["saved_pct"] for r in ok])
    ax.axhline(35, color="r", ls="--", label="goal: 35 % saved")
    ax.set_xticks(range(len(ok)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("% of unfused forward time saved")
    ax.set_title("FlashNormAttention forward, bf16, B = 768, L = 128, D = 128")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def warm_jobs(quick: bool) -> list:
    """The warm-up children of `run` (normfuse.repro.warm --target attention): one per cell."""
    from .warm import child_argv
    return [("attention H%d %d %s" % c, child_argv("attention", c, *(["--quick"] if quick else [])))
            for c in cells(quick)]


def append_to_summary(out_dir: str, quick: bool, budget: float = 150.0) -> None:
    """Run the cells and append their records to out_dir/summary.json (made by
    normfuse.repro.summary), plus attention_saved.png and attention.md. The reproduction
    command compiles the cells first (`warm_jobs`)."""
    if not torch.cuda.is_available():
        print("flash_norm_attention: no GPU: nothing to measure")
        return
    from .warm import configure_torch
    configure_torch()  # the settings the warm-up children used
    import datetime as _dt
    meta = {"gpu": torch.cuda.get_device_name(), "date": _dt.date.today().isoformat(),
            "torch": torch.__version__, "triton": triton.__version__}
    records = run(quick, budget, meta)
    path = os.path.join(out_dir, "summary.json")
    data = {"records": []}
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    data["records"] = [r for r in data.get("records", []) if r.get("op") != "flash_norm_attention.forward"]
    data["records"] += records
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(out_dir, "attention.md"), "w") as f:
        f.write("# FlashNormAttention forward\n\n" + table(records) + "\n")
    plot(records, os.path.join(out_dir, "attention_saved.png"))
    print(table(records))


def main(argv=None) -> int:
    """The command line of the module docstring."""
    from . import gpu_tests
    from .warm import REPO, configure_torch
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/results/gpu_attention"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-tests", action="store_true", help="skip the gpu-marked tests")
    ap.add_argument("--budget", type=float, default=150.0, help="seconds for the benchmark cells")
    ap.add_argument("--configs", default="", help="more fused-kernel configurations to time, "
                    "BLOCK_MxWARPS[:variant] comma-separated (e.g. 64x8,128x8:flat)")
    ap.add_argument("--cells", default="", help="only these cells, H:max_len:activation "
                    "comma-separated (e.g. 4:1000:softmax)")
    ap.add_argument("--default-only", action="store_true", help="time the default "
                    "configuration alone (and --configs), not the launch variants")
    ap.add_argument("--affine", action="store_true", help="with a LayerNorm weight and bias "
                    "and an RMSNorm weight (what from_modules of an nn.LayerNorm gets), in the "
                    "fused op and the unfused pipeline alike")
    a = ap.parse_args(argv)
    try:
        extra, only = parse_configs(a.configs), parse_cells(a.cells) or None
    except ValueError as e:
        ap.error(str(e))
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    # the settings of the main job's run (append_to_summary) and of the warm-up children: room
    # for one graph per shape. Without it the static compile per shape reached Dynamo's default
    # recompile limit (8) at the eighth of the grid's nine shapes and ran eagerly from there:
    # every command-line grid from session 30 to 41 took max length 10000, H 3 and 4, against
    # Liger's LayerNorm and the dynamic compile's post-norm instead of the static compile's.
    configure_torch()
    import datetime as _dt
    meta = {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
            "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "torch": torch.__version__, "triton": triton.__version__}
    result = {"meta": meta, "records": []}
    path = os.path.join(a.out, "gpu_attention.json")
    if not a.no_tests:
        res = gpu_tests.run([os.path.join(REPO, "test", "python", "test_flash_norm_attention.py")],
                            gpu_tests.default_jobs(), "gpu", 120,
                            log_dir=os.path.join(a.out, "tests"), log=lambda m: None)
        result["tests"] = {"ok": res["ok"], "counts": res["totals"], "failures": res["failures"][:40],
                           "seconds": res["seconds"]}

    def save(records):  # after every cell: a run cut short still leaves its records
        result["records"] = records
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    save(run(a.quick, a.budget, meta, on_record=save, log=lambda s: print(s, flush=True),
             extra_configs=extra, only_cells=only, default_only=a.default_only,
             affine=a.affine))
    md = [f"# FlashNormAttention forward{' (affine norms)' if a.affine else ''} ({meta['gpu']}, "
          f"torch {meta['torch']}, triton {meta['triton']})", ""]
    if "tests" in result:
        md += [f"pytest -m gpu: {result['tests']['counts']}, ok={result['tests']['ok']}", ""]
    md.append(table(result["records"]))
    with open(os.path.join(a.out, "gpu_attention.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    try:
        plot(result["records"], os.path.join(a.out, "saved_pct.png"))
    except Exception as e:  # noqa: BLE001
        print(f"no plot: {e}")
    print("\n".join(md))
    print(f"total {time.time() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
