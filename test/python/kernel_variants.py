"""The naive pre-norm and post-norm kernels in the many equivalent ways users write them.

`PRENORM` and `POSTNORM` list variants (a `Variant`: a name and a choice on each axis); `source()`
writes one `@triton.jit` kernel for a variant, `load()` imports it (Triton needs the source in a
file), `compile_variant()` compiles it ahead of time for sm_90 through normfuse's passes and
`run_variant()` launches it on a GPU.

Axes (pre-norm, `Y = norm(X) @ W`):
- form      tile (one program per output tile) | rowblock (one program per row block walking
            the N tiles: statistics once) | rowblock_offsets (the same over column offsets) |
            rowblock_static (the N tiles unrolled by tl.static_range) | persistent (programs walk
            the tiles with tl.range)
- loop      tiles (`range(0, cdiv(K, BK))`, offset k * BK) | offsets (`range(0, K, BK)`) |
            tl_range | ptr_inc (pointers made once, advanced by BK each trip)
- memory    mask (ragged shapes) | nomask (divisible shapes) | block_ptr | desc (tensor
            descriptors)
- w         nk (W [N, K], x @ W^T, nn.Linear) | kn (W [K, N], x @ W)
- stats     RMSNorm: rsqrt (`rsqrt(ss / K + eps)`) | inv_sqrt (`1 / sqrt(...)`) | eps_out
            (`1 / (sqrt(ss / K) + eps)`) | div (`x / sqrt(...)`: divide by the RMS) | meansq (the
            mean of squares accumulated as `sum(x * x) / K`); LayerNorm: rsqrt | inv_sqrt
- g         loop (norm weight applied to the tile) | folded (already folded into W)
- stats_loop, spelling: the statistics loop written unlike the GEMM loop (another loop style,
            another spelling of the same address): the two loops must still be recognized as
            reading the same tiles
- dtype     bf16 | fp16
- strides   "" (strides from the sizes: K, N) | runtime (every stride a kernel argument, as
            Triton's tutorials write it; a launch passes 1 for the contiguous dimensions, which
            Triton's launcher and `specialization()` make constants)
- ydesc     the output stored through a tensor descriptor

Post-norm (`Y = norm(X @ W)`, the row of N outputs normalized; N a constexpr): form (rowblock |
persistent | single: one tile holds the row), nloop (tiles | offsets | tl_range), kloop (tiles |
offsets | tl_range | static: K a constexpr, the k-loop unrolled), memory (mask | nomask |
block_ptr | desc, for X and W), w, stats (RMSNorm: inv_sqrt | rsqrt | meansq | eps_out;
LayerNorm: inv_sqrt | rsqrt), dtype; loop2 (the normalizing loop spelled unlike the first),
ydesc (Y stored and reloaded through a tensor descriptor).

`x ** 2` is not among the spellings: Triton 3.6 tensors have no `**` operator.

A variant with `expect="missed:<reason>"` is one the passes must refuse (the reason is a piece of
the remark); every other variant must be rewritten.

`LOWERING` adds pre-norm spellings for the lowering's matrix (hopper-ws, test_variants_lowered):
they are compiled only to the fused TTIR (`fused_ttir`: Triton's front end and the fusion passes,
no LLVM), except a numerics sample. `WS_REFUSED` names the legal variants hopper-ws refuses and
why.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass

BM, BN, BK = 64, 64, 32


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str  # "pre" | "post"
    norm: str = "rms"  # rms | ln
    form: str = "tile"
    loop: str = "tiles"  # pre: the k-loops; post: the loops over N tiles
    kloop: str = "tiles"  # post: the k-loop of each tile
    memory: str = "mask"
    w: str = "nk"
    stats: str = "rsqrt"
    g: str = "loop"
    dtype: str = "bf16"
    stats_loop: str = ""  # pre: the statistics loop's own style when it differs from `loop`
    spelling: str = ""  # pre: "split": the statistics loop writes the tile's address another way
    loop2: str = ""  # post: the normalizing loop's own style when it differs from `loop`
    ydesc: bool = False  # Y stored (post: and reloaded) through a tensor descriptor
    strides: str = ""  # pre: "runtime": every stride a kernel argument (1 at launch where contiguous)
    defect: str = ""  # makes the kernel one the passes must refuse (see DEFECTS)
    expect: str = "applied"
    gpu: bool = False  # in the GPU numerics sample

    @property
    def n_constexpr(self) -> bool:
        return self.kind == "post" or self.form == "rowblock_static"

    @property
    def k_constexpr(self) -> bool:
        return self.kind == "post" and self.kloop == "static"


def _v(name, kind, **kw) -> Variant:
    return Variant(name=name, kind=kind, **kw)


# ---------------------------------------------------------------------------------------------
# The matrix: each variant changes one or two axes of a base spelling
# ---------------------------------------------------------------------------------------------

_PRE_BASE = dict(norm="rms", form="tile", loop="tiles", memory="mask", w="nk", stats="rsqrt", g="loop")
_PRE = [
    ("rms_base", {}, True),
    ("rms_offsets", dict(loop="offsets"), True),
    ("rms_tl_range", dict(loop="tl_range"), False),
    ("rms_ptr_inc", dict(loop="ptr_inc"), False),
    ("rms_nomask", dict(memory="nomask"), False),
    ("rms_block_ptr", dict(memory="block_ptr"), False),
    ("rms_desc", dict(memory="desc"), True),
    ("rms_kn", dict(w="kn"), False),
    ("rms_desc_kn", dict(memory="desc", w="kn"), False),
    ("rms_inv_sqrt", dict(stats="inv_sqrt"), False),
    ("rms_eps_out", dict(stats="eps_out"), False),
    ("rms_div", dict(stats="div"), True),
    ("rms_meansq", dict(stats="meansq"), False),
    ("rms_folded", dict(g="folded"), False),
    ("rms_fp16", dict(dtype="fp16"), False),
    ("rms_rowblock", dict(form="rowblock"), True),
    ("rms_rowblock_static", dict(form="rowblock_static"), True),
    ("rms_rowblock_offsets", dict(form="rowblock_offsets", loop="offsets"), False),
    ("rms_persistent", dict(form="persistent"), True),
    ("rms_persistent_offsets_kn", dict(form="persistent", loop="offsets", w="kn"), False),
    ("rms_rowblock_desc", dict(form="rowblock", memory="desc"), False),
    ("rms_offsets_div_fp16", dict(loop="offsets", stats="div", dtype="fp16"), False),
    ("ln_base", dict(norm="ln"), True),
    ("ln_offsets", dict(norm="ln", loop="offsets"), False),
    ("ln_inv_sqrt", dict(norm="ln", stats="inv_sqrt"), False),
    ("ln_folded", dict(norm="ln", g="folded"), False),
    ("ln_kn", dict(norm="ln", w="kn"), False),
    ("ln_desc", dict(norm="ln", memory="desc"), False),
    ("ln_block_ptr_kn", dict(norm="ln", memory="block_ptr", w="kn"), False),
    ("ln_fp16_ptr_inc", dict(norm="ln", dtype="fp16", loop="ptr_inc"), False),
    ("ln_rowblock", dict(norm="ln", form="rowblock"), True),
    ("ln_persistent_nomask", dict(norm="ln", form="persistent", memory="nomask"), False),
    # the two loops written differently (the pass proves they read the same tiles trip by trip)
    ("rms_mixed_offsets_vs_tiles", dict(stats_loop="offsets"), True),
    ("rms_mixed_ptr_inc_vs_tiles", dict(stats_loop="ptr_inc"), False),
    ("rms_mixed_tl_range_vs_offsets", dict(stats_loop="tl_range", loop="offsets"), False),
    ("rms_mixed_address_spelling", dict(spelling="split"), False),
    ("ln_mixed_ptr_inc_vs_offsets", dict(norm="ln", stats_loop="ptr_inc", loop="offsets"), True),
    ("rms_mixed_desc_offsets_vs_tiles", dict(memory="desc", stats_loop="offsets"), False),
]
_PRE_BAD = [
    ("bad_scale_varies_with_k", dict(defect="scale_in_loop"), "computed inside the k-loop"),
    ("bad_stats_skip_last_tile", dict(defect="stats_short"), "different iteration space"),
    ("bad_scale_per_element", dict(defect="per_element"), "does not use a row or column broadcast"),
    ("bad_stats_other_tensor", dict(defect="stats_other"), "reads a different tile"),
    ("bad_write_between_loops", dict(defect="write_between"), "writes memory between the statistics loop"),
    ("bad_stats_other_stride", dict(defect="stats_stride", stats_loop="offsets"), "reads a different tile"),
]

_POST_BASE = dict(norm="rms", form="rowblock", loop="tiles", kloop="tiles", memory="mask", w="nk",
                  stats="inv_sqrt")
_POST = [
    ("post_rms_base", {}, True),
    ("post_rms_offsets", dict(loop="offsets"), True),
    ("post_rms_tl_range", dict(loop="tl_range"), False),
    ("post_rms_k_offsets", dict(kloop="offsets"), False),
    ("post_rms_k_static", dict(kloop="static"), True),
    ("post_rms_k_tl_range", dict(kloop="tl_range"), False),
    ("post_rms_nomask", dict(memory="nomask"), False),
    ("post_rms_block_ptr", dict(memory="block_ptr"), False),
    ("post_rms_desc", dict(memory="desc"), False),
    ("post_rms_kn", dict(w="kn"), False),
    ("post_rms_rsqrt", dict(stats="rsqrt"), False),
    ("post_rms_meansq", dict(stats="meansq"), False),
    ("post_rms_eps_out", dict(stats="eps_out"), False),
    ("post_rms_fp16", dict(dtype="fp16"), False),
    ("post_rms_persistent", dict(form="persistent"), True),
    ("post_rms_persistent_offsets", dict(form="persistent", loop="offsets"), False),
    ("post_rms_single_tile", dict(form="single"), True),
    ("post_rms_offsets_static_kn", dict(loop="offsets", kloop="static", w="kn"), False),
    ("post_ln_base", dict(norm="ln"), False),
    ("post_ln_offsets", dict(norm="ln", loop="offsets"), True),
    ("post_ln_rsqrt_desc", dict(norm="ln", stats="rsqrt", memory="desc"), False),
    ("post_ln_fp16_kn", dict(norm="ln", dtype="fp16", w="kn"), False),
    ("post_ln_persistent", dict(norm="ln", form="persistent"), False),
    ("post_ln_single_tile", dict(norm="ln", form="single"), False),
    ("post_rms_mixed_tiles_vs_offsets", dict(loop2="offsets"), True),
    ("post_ln_mixed_offsets_vs_tl_range", dict(norm="ln", loop="offsets", loop2="tl_range"), False),
    ("post_rms_y_desc", dict(ydesc=True, memory="desc"), True),
    ("post_rms_y_desc_persistent", dict(ydesc=True, memory="desc", form="persistent"), False),
]
_POST_BAD = [
    ("bad_post_max_over_tiles", dict(defect="max_stat"), "is not a sum over tiles"),
    ("bad_post_store_between", dict(defect="store_between"), "with side effects between the two loops"),
    ("bad_post_tiles_in_other_order", dict(defect="reversed", loop2="offsets"),
     "not proven to be the tiles the GEMM loop stored in the same trip"),
]

PRENORM = ([_v(n, "pre", **{**_PRE_BASE, **kw}, gpu=gpu) for n, kw, gpu in _PRE]
           + [_v(n, "pre", **{**_PRE_BASE, **kw}, expect=f"missed:{why}") for n, kw, why in _PRE_BAD])

# More pre-norm spellings, for the lowering (hopper-ws) matrix (issue 23): every stride a
# runtime argument (the launch passes 1 for the contiguous dimensions, which Triton's launcher
# makes constants), block pointers, descriptors (the output too), tl.range, unmasked divisible
# shapes, the row walk (statistics carried across the N tiles) in its forms, both layouts of W,
# fp16. lazy-prenorm fuses each (test_variants_lowered checks it); they are compiled only to the
# fused TTIR on the CPU, except the numerics sample.
_RT = dict(strides="runtime")
_LOWERING = [
    ("rms_strides", dict(_RT), True),
    ("rms_strides_kn", dict(_RT, w="kn"), True),  # issue 23's kernel
    ("ln_strides_kn_fp16", dict(_RT, norm="ln", w="kn", dtype="fp16"), False),
    ("rms_strides_persistent_tl_range", dict(_RT, form="persistent", loop="tl_range"), False),
    ("rms_strides_rowblock_kn", dict(_RT, form="rowblock", w="kn"), True),
    ("ln_strides_rowblock_offsets", dict(_RT, norm="ln", form="rowblock_offsets", loop="offsets"), False),
    ("rms_strides_ptr_inc_kn", dict(_RT, loop="ptr_inc", w="kn"), False),
    ("rms_strides_block_ptr", dict(_RT, memory="block_ptr"), True),
    ("ln_strides_block_ptr_kn_folded", dict(_RT, norm="ln", memory="block_ptr", w="kn", g="folded"), False),
    ("rms_strides_desc_kn", dict(_RT, memory="desc", w="kn"), False),
    ("rms_strides_nomask_persistent", dict(_RT, memory="nomask", form="persistent"), False),
    ("rms_block_ptr_kn_fp16", dict(memory="block_ptr", w="kn", dtype="fp16"), False),
    ("rms_block_ptr_persistent", dict(memory="block_ptr", form="persistent"), False),
    ("rms_block_ptr_rowblock", dict(memory="block_ptr", form="rowblock"), True),
    ("ln_block_ptr_tl_range_folded", dict(norm="ln", memory="block_ptr", loop="tl_range", g="folded"), False),
    ("rms_desc_persistent_tl_range", dict(memory="desc", form="persistent", loop="tl_range"), False),
    ("ln_desc_rowblock_kn", dict(norm="ln", memory="desc", form="rowblock", w="kn"), False),
    ("rms_desc_ydesc", dict(memory="desc", ydesc=True), True),
    ("ln_desc_ydesc_kn_persistent", dict(norm="ln", memory="desc", ydesc=True, w="kn", form="persistent"), False),
    ("ln_tl_range_kn", dict(norm="ln", loop="tl_range", w="kn"), False),
    ("rms_tl_range_rowblock", dict(loop="tl_range", form="rowblock"), False),
    ("rms_nomask_persistent_kn", dict(memory="nomask", form="persistent", w="kn"), False),
    ("ln_nomask_tl_range_persistent_fp16", dict(norm="ln", memory="nomask", loop="tl_range",
                                                form="persistent", dtype="fp16"), False),
    ("rms_nomask_rowblock_offsets", dict(memory="nomask", form="rowblock_offsets", loop="offsets"), False),
    ("rms_rowblock_kn_fp16", dict(form="rowblock", w="kn", dtype="fp16"), False),
    ("ln_rowblock_folded", dict(norm="ln", form="rowblock", g="folded"), False),
    ("rms_rowblock_static_kn", dict(form="rowblock_static", w="kn"), False),
    ("ln_rowblock_static_desc", dict(norm="ln", form="rowblock_static", memory="desc"), False),
    ("rms_rowblock_ptr_inc", dict(form="rowblock", loop="ptr_inc"), False),
    ("ln_fp16_desc_kn", dict(norm="ln", dtype="fp16", memory="desc", w="kn"), False),
]
LOWERING = [_v(n, "pre", **{**_PRE_BASE, **kw}, gpu=gpu) for n, kw, gpu in _LOWERING]

# The legal pre-norm variants hopper-ws does not lower, with the reason its remark gives (an
# unmasked kernel whose grid alone says how many rows it covers: M is in no mask and no loop).
WS_REFUSED = {
    "rms_nomask": "the output's M cannot be told",
    "rms_nomask_rowblock_offsets": "the output's M cannot be told",
}
POSTNORM = ([_v(n, "post", **{**_POST_BASE, **kw}, gpu=gpu) for n, kw, gpu in _POST]
            + [_v(n, "post", **{**_POST_BASE, **kw}, expect=f"missed:{why}") for n, kw, why in _POST_BAD])
VARIANTS = PRENORM + POSTNORM


# ---------------------------------------------------------------------------------------------
# Source
# ---------------------------------------------------------------------------------------------

class _Code:
    def __init__(self):
        self.lines: list[str] = []
        self.depth = 1

    def __call__(self, *lines: str) -> "_Code":
        for line in lines:
            self.lines.append("    " * self.depth + line)
        return self

    def block(self, header: str):
        self(header)
        return _Indent(self)


class _Indent:
    def __init__(self, code):
        self.code = code

    def __enter__(self):
        self.code.depth += 1

    def __exit__(self, *exc):
        self.code.depth -= 1


def _loop(c: _Code, style: str, var: str, count: str, step: str) -> _Indent:
    """A loop over `count` tiles of `step` elements; `{var}_off` is the offset in the loop."""
    if style == "offsets":
        return c.block(f"for {var}_off in range(0, {count}, {step}):")
    head = {"tiles": "range", "ptr_inc": "range", "tl_range": "tl.range", "static": "tl.static_range"}[style]
    ind = c.block(f"for {var} in {head}(0, tl.cdiv({count}, {step})):" if style != "static"
                  else f"for {var} in tl.static_range(0, {count} // {step}):")
    c.depth += 1
    c(f"{var}_off = {var} * {step}")
    c.depth -= 1
    return ind


def _kmask(v: Variant, rows: str, cols: str) -> str:
    return f"({rows} < M) & ({cols} < K)"


def _times(x: str, stride: str) -> str:
    return x if stride == "1" else f"{x} * {stride}"


def _sx(v: Variant) -> tuple[str, str]:
    """X's strides (along M, along K) as the kernel spells them."""
    return ("stride_xm", "stride_xk") if v.strides == "runtime" else ("K", "1")


def _sw(v: Variant) -> tuple[str, str]:
    """W's strides (along N, along K)."""
    if v.strides == "runtime":
        return "stride_wn", "stride_wk"
    return ("K", "1") if v.w == "nk" else ("1", "N")


def _sy(v: Variant) -> tuple[str, str]:
    return ("stride_ym", "stride_yn") if v.strides == "runtime" else ("N", "1")


def _w_address(v: Variant, ks: str) -> str:
    """The offset of W's [BK, BN] tile at k indices `ks` (a 1-D expression)."""
    sn, sk = _sw(v)
    n, k = _times("offs_n[None, :]", sn), _times(f"{ks}[:, None]", sk)
    return f"{n} + {k}" if v.w == "nk" else f"{k} + {n}"


def _a_load(v: Variant, c: _Code, loop_style: str) -> str:
    """Code that loads the A tile [BM, BK] at k offset `k_off` (as f32)."""
    m = v.memory
    if m == "desc":
        return "xd.load([pid_m * BM, k_off]).to(tl.float32)"
    if m == "block_ptr":
        return "tl.load(pa, boundary_check=(0, 1), padding_option=\"zero\").to(tl.float32)"
    if loop_style == "ptr_inc":
        mask = "" if m == "nomask" else f", mask={_kmask(v, 'offs_m[:, None]', '(k_off + offs_k)[None, :]')}, other=0.0"
        return f"tl.load(pa{mask}).to(tl.float32)"
    ptr = f"X + {_times('offs_m[:, None]', _sx(v)[0])} + {_times('(k_off + offs_k)[None, :]', _sx(v)[1])}"
    if m == "nomask":
        return f"tl.load({ptr}).to(tl.float32)"
    return f"tl.load({ptr}, mask={_kmask(v, 'offs_m[:, None]', '(k_off + offs_k)[None, :]')}, other=0.0).to(tl.float32)"


def _a_setup(v: Variant, c: _Code, loop_style: str) -> None:
    if v.memory == "block_ptr":
        c(f"pa = tl.make_block_ptr(X, shape=(M, K), strides=({', '.join(_sx(v))}), offsets=(pid_m * BM, 0), "
          "block_shape=(BM, BK), order=(1, 0))")
    elif loop_style == "ptr_inc":
        c(f"pa = X + {_times('offs_m[:, None]', _sx(v)[0])} + {_times('offs_k[None, :]', _sx(v)[1])}")


def _a_advance(v: Variant, c: _Code, loop_style: str) -> None:
    if v.memory == "block_ptr":
        c("pa = tl.advance(pa, (0, BK))")
    elif loop_style == "ptr_inc":
        c(f"pa += {_times('BK', _sx(v)[1])}")


def _b_setup(v: Variant, c: _Code, loop_style: str) -> None:
    if v.memory == "block_ptr":
        sn, sk = _sw(v)
        order = "(0, 1)" if v.w == "nk" else "(1, 0)"
        c(f"pb = tl.make_block_ptr(W, shape=(K, N), strides=({sk}, {sn}), offsets=(0, pid_n * BN), "
          f"block_shape=(BK, BN), order={order})")
    elif loop_style == "ptr_inc":
        c(f"pb = W + {_w_address(v, 'offs_k')}")


def _b_load(v: Variant, loop_style: str) -> str:
    m = v.memory
    if m == "desc":
        return "wd.load([pid_n * BN, k_off]).T" if v.w == "nk" else "wd.load([k_off, pid_n * BN])"
    if m == "block_ptr":
        return "tl.load(pb, boundary_check=(0, 1), padding_option=\"zero\")"
    mask = f"(offs_n[None, :] < N) & ((k_off + offs_k)[:, None] < K)"
    if loop_style == "ptr_inc":
        ptr = "pb"
    else:
        ptr = f"W + {_w_address(v, '(k_off + offs_k)')}"
    if m == "nomask":
        return f"tl.load({ptr})"
    return f"tl.load({ptr}, mask={mask}, other=0.0)"


def _b_advance(v: Variant, c: _Code, loop_style: str) -> None:
    if v.memory == "block_ptr":
        c("pb = tl.advance(pb, (BK, 0))")
    elif loop_style == "ptr_inc":
        c(f"pb += {_times('BK', _sw(v)[1])}")


def _descriptors(v: Variant, c: _Code) -> None:
    if v.memory != "desc":
        return
    c(f"xd = tl.make_tensor_descriptor(X, shape=[M, K], strides=[{', '.join(_sx(v))}], block_shape=[BM, BK])")
    sn, sk = _sw(v)
    if v.w == "nk":
        c(f"wd = tl.make_tensor_descriptor(W, shape=[N, K], strides=[{sn}, {sk}], block_shape=[BN, BK])")
    else:
        c(f"wd = tl.make_tensor_descriptor(W, shape=[K, N], strides=[{sk}, {sn}], block_shape=[BK, BN])")


def _pre_stats(v: Variant, c: _Code) -> None:
    """The statistics loop and what it derives: rstd (and mean), or rms for stats=div."""
    c("offs_m = pid_m * BM + tl.arange(0, BM)", "offs_k = tl.arange(0, BK)")
    stats = ["s1", "s2"] if v.norm == "ln" else ["ss"]
    for s in stats:
        c(f"{s} = tl.zeros([BM], dtype=tl.float32)")
    style = v.stats_loop or v.loop
    other = "G" if v.defect == "stats_other" else "X"
    _a_setup(v, c, style)
    count = "K - BK" if v.defect == "stats_short" else "K"
    with _loop(c, style, "k", count, "BK"):
        load = _a_load(v, c, style)
        if v.spelling == "split":  # the scalar offset added on its own, the mask's terms swapped
            load = load.replace("X + offs_m[:, None] * K + (k_off + offs_k)[None, :]",
                                "X + (offs_m[:, None] * K + k_off) + offs_k[None, :]")
            load = load.replace("((k_off + offs_k)[None, :] < K)", "(offs_k[None, :] + k_off < K)")
        if other != "X":
            load = load.replace("X + ", f"{other} + ", 1)
        if v.defect == "stats_stride":  # the columns of a tile two apart: not the GEMM's tile
            load = load.replace("(k_off + offs_k)", "(k_off + 2 * offs_k)")
        c(f"x = {load}")
        if v.norm == "ln":
            c("s1 += tl.sum(x, axis=1)", "s2 += tl.sum(x * x, axis=1)")
        elif v.stats == "meansq":
            c("ss += tl.sum(x * x, axis=1) / K")
        else:
            c("ss += tl.sum(x * x, axis=1)")
        _a_advance(v, c, style)
    if v.defect == "write_between":  # the GEMM loop's reads of X come after it
        c("tl.store(X + offs_m[:, None] * K + offs_k[None, :], tl.zeros([BM, BK], dtype=X.dtype.element_ty), "
          "mask=offs_m[:, None] < M)")
    if v.norm == "ln":
        c("mean = s1 / K", "var = s2 / K - mean * mean")
        c("rstd = tl.rsqrt(var + eps)" if v.stats == "rsqrt" else "rstd = 1.0 / tl.sqrt(var + eps)")
    elif v.stats == "rsqrt":
        c("rstd = tl.rsqrt(ss / K + eps)")
    elif v.stats == "inv_sqrt":
        c("rstd = 1.0 / tl.sqrt(ss / K + eps)")
    elif v.stats == "eps_out":
        c("rstd = 1.0 / (tl.sqrt(ss / K) + eps)")
    elif v.stats == "div":
        c("rms = tl.sqrt(ss / K + eps)")
    elif v.stats == "meansq":
        c("rstd = tl.rsqrt(ss + eps)")


def _pre_gemm(v: Variant, c: _Code) -> None:
    style = v.loop
    c("offs_n = pid_n * BN + tl.arange(0, BN)", "acc = tl.zeros([BM, BN], dtype=tl.float32)")
    _a_setup(v, c, style)
    _b_setup(v, c, style)
    with _loop(c, style, "k", "K", "BK"):
        c(f"x = {_a_load(v, c, style)}")
        kmask = "" if v.memory == "nomask" else ", mask=(k_off + offs_k) < K, other=0.0"
        if v.g == "loop":
            c(f"g = tl.load(G + k_off + offs_k{kmask}).to(tl.float32)")
            if v.norm == "ln":
                c(f"b = tl.load(B + k_off + offs_k{kmask}).to(tl.float32)")
        if v.defect == "scale_in_loop":
            scaled = "x * tl.rsqrt(tl.sum(x * x, axis=1) / BK + eps)[:, None]"
        elif v.defect == "per_element":
            scaled = "x * tl.rsqrt(x * x + eps)"
        elif v.norm == "ln":
            scaled = "(x - mean[:, None]) * rstd[:, None]"
        elif v.stats == "div":
            scaled = "x / rms[:, None]"
        else:
            scaled = "x * rstd[:, None]"
        if v.g == "loop":
            scaled = f"{scaled} * g[None, :]"
            if v.norm == "ln":
                scaled = f"{scaled} + b[None, :]"
        c(f"a = ({scaled}).to(X.dtype.element_ty)")
        c(f"acc = tl.dot(a, {_b_load(v, style)}, acc)")
        _a_advance(v, c, style)
        _b_advance(v, c, style)
    ymask = "" if v.memory == "nomask" else ", mask=(offs_m[:, None] < M) & (offs_n[None, :] < N)"
    if v.ydesc:
        c("yd.store([pid_m * BM, pid_n * BN], acc.to(Y.dtype.element_ty))")
    else:
        sm, sn = _sy(v)
        c(f"tl.store(Y + {_times('offs_m[:, None]', sm)} + {_times('offs_n[None, :]', sn)}, "
          f"acc.to(Y.dtype.element_ty){ymask})")


def _prenorm(v: Variant) -> str:
    n = "N: tl.constexpr" if v.n_constexpr else "N"
    c = _Code()
    _descriptors(v, c)
    if v.ydesc:
        c(f"yd = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[{', '.join(_sy(v))}], "
          "block_shape=[BM, BN])")
    if v.form == "tile":
        c("pid = tl.program_id(0)", "num_n = tl.cdiv(N, BN)", "pid_m = pid // num_n", "pid_n = pid % num_n")
        _pre_stats(v, c)
        _pre_gemm(v, c)
    elif v.form == "persistent":
        c("num_n = tl.cdiv(N, BN)")
        with c.block("for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * num_n, tl.num_programs(0)):"):
            c("pid_m = tile // num_n", "pid_n = tile % num_n")
            _pre_stats(v, c)
            _pre_gemm(v, c)
    else:
        c("pid_m = tl.program_id(0)")
        _pre_stats(v, c)
        head = ("for pid_n in tl.static_range(0, N // BN):" if v.form == "rowblock_static"
                else "for n_off in range(0, N, BN):" if v.form == "rowblock_offsets"
                else "for pid_n in range(0, tl.cdiv(N, BN)):")
        with c.block(head):
            if v.form == "rowblock_offsets":
                c("pid_n = n_off // BN")
            _pre_gemm(v, c)
    strides = "stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn, " \
        if v.strides == "runtime" else ""
    return (f"@triton.jit\ndef {v.name}(X, G, B, W, Y, M, {n}, K, {strides}eps, BM: tl.constexpr, "
            f"BN: tl.constexpr, BK: tl.constexpr):\n" + "\n".join(c.lines) + "\n")


def _post_tile(v: Variant, c: _Code) -> None:
    """acc = X[rows] @ W[:, n tile] (the GEMM of one output tile)."""
    c("acc = tl.zeros([BM, BN], dtype=tl.float32)")
    style = v.kloop
    _a_setup(v, c, style)
    _b_setup(v, c, style)
    with _loop(c, style, "k", "K", "BK"):
        x = _a_load(v, c, style).replace(".to(tl.float32)", "")
        c(f"acc = tl.dot({x}, {_b_load(v, style)}, acc)")
        _a_advance(v, c, style)
        _b_advance(v, c, style)


def _postnorm(v: Variant) -> str:
    k = "K: tl.constexpr" if v.k_constexpr else "K"
    c = _Code()
    _descriptors(v, c)
    if v.ydesc:
        c("yd = tl.make_tensor_descriptor(Y, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])")
    ymask = "" if v.memory == "nomask" else ", mask=(offs_m[:, None] < M) & (offs_n[None, :] < N)"
    vmask = "" if v.memory == "nomask" else ", mask=offs_n < N, other=0.0"

    def rows():
        c("offs_m = pid_m * BM + tl.arange(0, BM)", "offs_k = tl.arange(0, BK)")
        stats = ["s1", "s2"] if v.norm == "ln" else ["mx"] if v.defect == "max_stat" else ["ss"]
        for s in stats:
            c(f"{s} = tl.zeros([BM], dtype=tl.float32)")
        with _loop(c, v.loop, "n", "N", "BN"):
            if v.defect == "reversed":  # the GEMM loop walks the tiles backwards
                c("n_off = N - BN - n_off")
            c("offs_n = n_off + tl.arange(0, BN)", "pid_n = n_off // BN")
            _post_tile(v, c)
            if v.norm == "ln":
                c("s1 += tl.sum(acc, axis=1)", "s2 += tl.sum(acc * acc, axis=1)")
            elif v.defect == "max_stat":
                c("mx = tl.maximum(mx, tl.max(tl.abs(acc), axis=1))")
            elif v.stats == "meansq":
                c("ss += tl.sum(acc * acc, axis=1) / N")
            else:
                c("ss += tl.sum(acc * acc, axis=1)")
            if v.ydesc:
                c("yd.store([pid_m * BM, n_off], acc.to(Y.dtype.element_ty))")
            else:
                c(f"tl.store(Y + offs_m[:, None] * N + offs_n[None, :], acc.to(Y.dtype.element_ty){ymask})")
        if v.defect == "store_between":
            c("tl.store(B + offs_m, ss, mask=offs_m < M)")
        if v.norm == "ln":
            c("mean = s1 / N", "var = s2 / N - mean * mean")
            c("rstd = tl.rsqrt(var + eps)" if v.stats == "rsqrt" else "rstd = 1.0 / tl.sqrt(var + eps)")
        elif v.defect == "max_stat":
            c("rstd = 1.0 / (mx + eps)")
        elif v.stats == "rsqrt":
            c("rstd = tl.rsqrt(ss / N + eps)")
        elif v.stats == "meansq":
            c("rstd = 1.0 / tl.sqrt(ss + eps)")
        elif v.stats == "eps_out":
            c("rstd = 1.0 / (tl.sqrt(ss / N) + eps)")
        else:
            c("rstd = 1.0 / tl.sqrt(ss / N + eps)")
        with _loop(c, v.loop2 or v.loop, "n", "N", "BN"):
            c("offs_n = n_off + tl.arange(0, BN)")
            if v.ydesc:
                c("y = yd.load([pid_m * BM, n_off]).to(tl.float32)")
            else:
                c(f"y = tl.load(Y + offs_m[:, None] * N + offs_n[None, :]{ymask}"
                  f"{', other=0.0' if ymask else ''}).to(tl.float32)")
            c(f"g = tl.load(G + offs_n{vmask}).to(tl.float32)")
            if v.norm == "ln":
                c(f"b = tl.load(B + offs_n{vmask}).to(tl.float32)")
                c("out = (y - mean[:, None]) * rstd[:, None] * g[None, :] + b[None, :]")
            else:
                c("out = y * rstd[:, None] * g[None, :]")
            if v.ydesc:
                c("yd.store([pid_m * BM, n_off], out.to(Y.dtype.element_ty))")
            else:
                c(f"tl.store(Y + offs_m[:, None] * N + offs_n[None, :], out.to(Y.dtype.element_ty){ymask})")

    if v.form == "persistent":
        with c.block("for pid_m in tl.range(tl.program_id(0), tl.cdiv(M, BM), tl.num_programs(0)):"):
            rows()
    else:
        c("pid_m = tl.program_id(0)")
        rows()
    return (f"@triton.jit\ndef {v.name}(X, W, G, B, Y, M, N: tl.constexpr, {k}, eps, BM: tl.constexpr, "
            f"BN: tl.constexpr, BK: tl.constexpr):\n" + "\n".join(c.lines) + "\n")


def source(v: Variant) -> str:
    """The kernel's Python source (a module: imports and one @triton.jit function)."""
    body = _prenorm(v) if v.kind == "pre" else _postnorm(v)
    return f"import triton\nimport triton.language as tl\n\n\n{body}"


_DIR = os.path.join(tempfile.gettempdir(), f"normfuse-variants-{os.getuid()}")


def load(v: Variant, src: str | None = None):
    """Import the variant's kernel (written once to a file named after its source's hash);
    `src`: another source for it (a test's edit of `source(v)`)."""
    src = source(v) if src is None else src
    digest = hashlib.sha256(src.encode()).hexdigest()[:12]
    os.makedirs(_DIR, exist_ok=True)
    path = os.path.join(_DIR, f"{v.name}_{digest}.py")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    modname = f"normfuse_variant_{v.name}_{digest}"
    mod = sys.modules.get(modname)
    if mod is None:
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
    return getattr(mod, v.name)


# ---------------------------------------------------------------------------------------------
# Shapes, compilation, launch
# ---------------------------------------------------------------------------------------------

def shape(v: Variant) -> tuple[int, int, int]:
    """(M, N, K) of the test problem: ragged where the kernel masks, divisible where it does not
    (and 16-byte aligned rows for descriptors)."""
    even = v.memory in ("nomask",) or v.n_constexpr or v.k_constexpr
    if v.kind == "post":
        n = BN if v.form == "single" else 2 * BN
        k = 4 * BK if v.k_constexpr or v.memory == "nomask" else 4 * BK + (8 if v.memory == "desc" else 3)
        m = 4 * BM if v.memory == "nomask" else 4 * BM - 5
        return m, n, k
    if v.form == "rowblock_static":
        return 4 * BM - 5, 2 * BN, 5 * BK + 8
    if even:
        return 4 * BM, 2 * BN, 4 * BK
    if v.memory == "desc":  # descriptors need 16-byte aligned rows: K and N multiples of 8
        return 4 * BM - 5, 2 * BN - 8, 5 * BK + 8
    return 4 * BM - 5, 2 * BN - 3, 5 * BK + 3


PASSES = {"pre": ("lazy-prenorm",), "post": ("cluster-reduce", "epilogue-norm")}


def runtime_args(v: Variant, t: dict, m: int, n: int, k: int, eps: float = 1e-5) -> list:
    """The runtime arguments of a launch of the variant on tensors `t` (X, G, B, W, Y) of an
    (m, n, k) problem, in the kernel's order (runtime strides read off the tensors)."""
    names = ("X", "G", "B", "W", "Y") if v.kind == "pre" else ("X", "W", "G", "B", "Y")
    args = [t[a] for a in names] + [m] + ([] if v.n_constexpr else [n]) + ([] if v.k_constexpr else [k])
    if v.strides == "runtime":
        x, w, y = t["X"], t["W"], t["Y"]
        along_n, along_k = (w.stride(0), w.stride(1)) if v.w == "nk" else (w.stride(1), w.stride(0))
        args += [x.stride(0), x.stride(1), along_n, along_k, y.stride(0), y.stride(1)]
    return args + [eps]


def specialization(v: Variant, fn=None) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) the variant is compiled with: as normfuse.jit specializes a
    launch at the variant's shape (pointers 16-byte aligned; runtime strides equal to 1 become
    constants, as Triton's launcher makes them)."""
    fn = load(v) if fn is None else fn
    m, n, k = shape(v)
    consts = {"BM": BM, "BN": BN, "BK": BK}
    if v.n_constexpr:
        consts["N"] = n
    if v.k_constexpr:
        consts["K"] = k
    if v.strides == "runtime":
        import torch
        from normfuse.compiler import specialize
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[v.dtype]
        t = {"X": torch.empty(m, k, dtype=dt), "G": torch.empty(k, dtype=dt),
             "B": torch.empty(k, dtype=dt), "Y": torch.empty(m, n, dtype=dt),
             "W": torch.empty((n, k) if v.w == "nk" else (k, n), dtype=dt)}
        sig, consts, attrs, _, _ = specialize(fn, runtime_args(v, t, m, n, k), consts)
        return sig, consts, attrs
    dt = "*" + v.dtype
    sig = {"X": dt, "G": dt, "B": dt, "W": dt, "Y": dt, "M": "i32", "N": "i32", "K": "i32",
           "eps": "fp32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    if v.n_constexpr:
        sig["N"] = "constexpr"
    if v.k_constexpr:
        sig["K"] = "constexpr"
    names = list(fn.arg_names)
    sig = {a: sig[a] for a in names}
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in ("X", "G", "B", "W", "Y")}
    return sig, consts, attrs


_COMPILED: dict = {}  # (variant, passes) -> CompiledKernel, for the tests of one session


def compile_variant(v: Variant, passes=None):
    """Compile the variant for sm_90 (no GPU needed), specialized like normfuse.jit would (once
    per session and pipeline)."""
    import normfuse
    passes = PASSES[v.kind] if passes is None else passes
    key = (v, passes if isinstance(passes, str) else tuple(passes))
    if key not in _COMPILED:
        sig, consts, attrs = specialization(v)
        _COMPILED[key] = normfuse.compile(load(v), signature=sig, constexprs=consts, attrs=attrs,
                                          target="cuda:90", passes=passes, num_warps=4, num_stages=3)
    return _COMPILED[key]


def fused(v: Variant):
    """(fused TTIR, remarks) of the variant under its fusion passes: from its compilation when
    this session has compiled it (test_variants does), else `fused_ttir`."""
    ck = _COMPILED.get((v, tuple(PASSES[v.kind])))
    if ck is not None:
        return ck.asm.get("normfuse", ck.asm["ttir"]), list(ck.remarks)
    return fused_ttir(v)


def fused_ttir(v: Variant, passes=None, *, specialized=None, source=None):
    """(TTIR after the fusion passes, their remarks) without compiling further: Triton's
    front end and its 'ttir' stage, then normfuse's pipeline on the text (what normfuse.compile
    hands to the lowering, at a fraction of the cost of a full compilation). `specialized`:
    (signature, constexprs, attrs) instead of `specialization(v)`; `source`: the kernel's source
    instead of `source(v)`."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from normfuse.ir import bridge
    from normfuse.passes import CompileContext
    from normfuse.pipeline import parse_pipeline, run_on_view
    fn = load(v, source)
    sig, consts, attrs = specialized or specialization(v, fn)
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    src = ASTSource(fn, sig, constexprs=consts, attrs=attrs)
    options = backend.parse_options({"num_warps": 4, "num_stages": 3})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    mod = src.make_ir(target, options, backend.get_codegen_implementation(options),
                      backend.get_module_map(), context)
    stages: dict = {}
    backend.add_stages(stages, options, src.language)
    ttir = stages["ttir"](mod, {"target": target, **options.__dict__})
    # Triton's own print of a module it verified: trusted, as normfuse.compile's stage takes it
    view = bridge.load(str(ttir), source_name=f"{v.name}.ttir", trusted=True)
    remarks, _ = run_on_view(view, parse_pipeline(PASSES[v.kind] if passes is None else passes),
                             CompileContext(num_stages=3, num_warps=4, arch=90))
    return view.print(), [str(r) for r in remarks]


def run_variant(v: Variant, tensors: dict, passes=None, dims=None, compiled: list | None = None):
    """Launch the variant on the current GPU (normfuse.jit) on `tensors` (X, G, B, W, Y) of the
    problem `dims` (default: `shape(v)`); fills Y. `compiled`: gets the CompiledKernel."""
    import torch
    import triton
    import normfuse
    fn = load(v)
    m, n, k = dims or shape(v)
    if v.memory == "desc" or v.ydesc:
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    kernel = normfuse.jit(fn, passes=PASSES[v.kind] if passes is None else passes)
    blocks_m, blocks_n = triton.cdiv(m, BM), triton.cdiv(n, BN)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if v.kind == "pre":
        grid = {"tile": blocks_m * blocks_n, "persistent": min(sms, blocks_m * blocks_n)}.get(v.form, blocks_m)
    else:
        grid = min(sms // 2, blocks_m) if v.form == "persistent" else blocks_m
    consts = {"BM": BM, "BN": BN, "BK": BK}
    if v.n_constexpr:
        consts["N"] = n
    if v.k_constexpr:
        consts["K"] = k
    args = runtime_args(v, tensors, m, n, k)
    kernel[(grid,)](*args, **consts, num_warps=4, num_stages=3)
    if compiled is not None:
        compiled.append(kernel.warmup(*args, **consts, num_warps=4, num_stages=3))
    return tensors["Y"]


def inputs(v: Variant, seed: int = 0, dims=None):
    """Random inputs for the variant's problem (`dims`, default `shape(v)`; W laid out as the
    variant reads it)."""
    import torch
    m, n, k = dims or shape(v)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[v.dtype]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    r = lambda *s: torch.randn(*s, device="cuda", generator=gen, dtype=torch.float32)  # noqa: E731
    x = (r(m, k) * 2 + 0.5).to(dt)
    wk = k if v.kind == "pre" else k
    w = (r(n, wk) / wk ** 0.5).to(dt)
    w_store = w if v.w == "nk" else w.t().contiguous()
    vec = n if v.kind == "post" else k
    g = (1 + 0.1 * r(vec)).to(dt)
    b = (0.1 * r(vec)).to(dt)
    if v.kind == "post" and v.defect == "store_between":
        b = torch.empty(m, device="cuda", dtype=torch.float32)
    y = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    return {"X": x, "W": w_store, "G": g, "B": b, "Y": y, "w_nk": w}


def reference(v: Variant, t: dict):
    """fp64 result of the variant's computation."""
    import torch
    x, w, g, b = t["X"].double(), t["w_nk"].double(), t["G"].double(), t["B"].double()
    eps = 1e-5
    k = x.shape[1]

    def norm(z, dim_len, gamma, beta):
        if v.norm == "ln":
            mu = z.mean(1, keepdim=True)
            var = (z * z).mean(1, keepdim=True) - mu * mu
            return (z - mu) / torch.sqrt(var + eps) * gamma + beta
        ms = (z * z).mean(1, keepdim=True)
        if v.stats == "eps_out":
            return z / (torch.sqrt(ms) + eps) * gamma
        return z / torch.sqrt(ms + eps) * gamma

    if v.kind == "pre":
        gamma = g if v.g == "loop" else torch.ones_like(g)
        beta = b if v.g == "loop" else torch.zeros_like(b)
        return norm(x, k, gamma, beta) @ w.t()
    return norm(x @ w.t(), w.shape[0], g, b)


__all__ = ["Variant", "PRENORM", "POSTNORM", "VARIANTS", "LOWERING", "WS_REFUSED", "source", "load",
           "shape", "runtime_args", "specialization", "compile_variant", "fused", "fused_ttir",
           "run_variant", "inputs", "reference"]


# Every axis value of the matrix, for the default (CI) suite: the fewest variants, chosen greedily,
# in which each (kind, axis, value) occurs at least once (every defect and expected outcome
# included); the others run with `-m slow`. 40 of 75 on 2026-12-01.
COVER_AXES = ("kind", "norm", "form", "loop", "kloop", "memory", "w", "stats", "g", "dtype",
              "stats_loop", "spelling", "loop2", "ydesc", "strides", "defect", "expect")


def covering(variants) -> set:
    """The names of a small subset of `variants` covering every (kind, axis, value) of them."""
    def pairs(v):
        return {(v.kind, a, getattr(v, a)) for a in COVER_AXES}
    left = set().union(*(pairs(v) for v in variants))
    chosen = set()
    while left:
        best = max(variants, key=lambda v: len(pairs(v) & left))
        chosen.add(best.name)
        left -= pairs(best)
    return chosen
