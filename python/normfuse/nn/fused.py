"""The modules and forwards that `normfuse.optimize` puts in place of a recognized norm and its
GEMM neighbours. They keep the original modules' parameters (the same Parameter objects, under
the same names), so state_dict keys and load_state_dict stay those of the original model.

Pre-norm (a norm whose output feeds only GEMMs):

    norm -> {linear_1 .. linear_n}    becomes    FusedNorm -> {FusedLinear_1 .. FusedLinear_n}

  FusedNorm holds the norm's parameters, each FusedLinear its linear's `weight`/`bias` and plain
  (unregistered) references to the FusedNorm and its siblings. Two forms, chosen by the same
  predicate in the norm and in every consumer (`FusedNorm.wants_grad`):
  - per-consumer (training: grad mode on and an input or parameter requiring grad; and always
    when the group has one consumer or its consumers read the norm's output through row views):
    FusedNorm returns x unchanged, each FusedLinear computes
    `ops.rmsnorm_linear(x, g, W_i, eps, b_i, offset=...)` (or layernorm_linear) on what it reads.
    Since the norm works row by row, norm(x)[rows] = norm(x[rows]), so row views in between
    (x[:, -1:], reshape keeping the last dim) commute with it.
  - packed (inference, n > 1 consumers each reading the norm's output directly, once):
    FusedNorm computes Y = op(x, g, [W_1..W_n], eps, [b_1..b_n]) ([..., sum N_i], one GEMM) and
    each FusedLinear returns its column slice Y[..., a_i:b_i] (a view). The sibling weights are
    re-packed into one buffer (`param.data = buf[a:b]`) so that the op reads them as one [sum N_i,
    K] matrix without a copy; after `.to()` / `_apply` the group is re-packed once all siblings
    agree on dtype and device. The ops stay correct when the weights are not adjacent (after
    deepcopy, or FSDP's sharded parameters): they concatenate, cached per weight version.
  Training (the same predicate true) follows the group's training plan (`train_plan`, set by
  `optimize(train=...)` / `optimize.set_train_plan`):
  - "composed" (the default): FusedNorm computes the norm as the ORIGINAL module does and each
    FusedLinear runs a plain GEMM as its original module does (cuBLAS: `F.linear(n, W_i, b_i)`,
    a Conv1D's addmm on its [K, N] weight; `_GemmModule.plain_gemm`). The norm: in eager on an
    sm_90 GPU, for bf16 / fp16 x and parameters of x's dtype outside autocast, a module whose
    forward upcasts to fp32 (or torch's nn.LayerNorm / nn.RMSNorm), the standalone norm op
    (`ops.rms_norm` / `ops.layer_norm`: one forward kernel, one persistent backward kernel,
    instead of eager's half dozen kernels each way; `composed_norm`); otherwise (CPU, under
    torch.compile, where Inductor fuses the norm with the residual add) the original module's
    forward itself (kept, unregistered, reading its parameters from FusedNorm's own parameter
    dict: the stock model's numerics). Every consumer runs its own GEMM; with `COMPOSED_PACK`
    (NORMFUSE_COMPOSED_PACK=1) a packed group (sum N_i != K) under torch.compile instead returns
    one GEMM over `torch.cat` of the sibling weights (and biases) and the consumers slice it
    (measured slower on the H200: the weights' cat every step and the slices' backward cost more
    than the wider GEMM saves; in eager autograd would build a zero-filled full-width gradient
    per slice, so eager never packs in training). Rationale: at model shapes the fused training
    forward saves only the write of n while its backward writes n again for dW = dY^T n (the
    ops' default backward plan, "cublas": cuBLAS's dX GEMM, then the norm backward; the dX
    kernels with the norm backward in their epilogue run 1.06-1.27x cuBLAS's dX GEMM alone), so
    the original norm (which Inductor fuses with the residual add and its backward) and cuBLAS
    GEMMs train faster: Llama's 4-layer step 23.5 ms composed, 24.6 ms fused, 23.7 ms stock
    under torch.compile (H100, session 43; docs/NOTES.md).
  - "fused": in eager, a group of 2+ consumers runs one fused training op over the siblings'
    weights (`FUSED_TRAIN_SPLIT`): FusedNorm computes Y = op(x, g, [W_1..W_n], ...), splits it
    by columns with torch.split (whose backward writes dY once, a cat of the consumers'
    gradients, where column slices would each build a zero-filled full-width gradient) and hands
    each consumer its part as the split form does (FusedNorm returns x; `take_split`); the norm's
    backward runs once per group (its plan: the ops' PRENORM_BWD_PLAN). A single consumer,
    torch.compile, hooks or FUSED_TRAIN_SPLIT off: FusedNorm returns x and each FusedLinear runs
    the fused training op on what it reads (the norm's statistics and backward once per
    consumer).

Post-norm, the GEMM in a child module and its output going straight to the norm (Gemma2's
o_proj -> post_attention_layernorm): the linear becomes a DeferredLinear (returns its input) and
the norm a NormAfterLinear (runs ops.linear_rmsnorm / linear_layernorm on that input). Composed
training: the DeferredLinear runs its GEMM and the NormAfterLinear the norm as FusedNorm does
(`composed_norm`).

Post-norm (`norm(dropout(linear(h)) [+ bias] + residual)` inside one module's forward): that
module's forward is replaced (postnorm_rewrite.PostNormForward) by its FX graph with the pattern
replaced by a call of `fused_post_norm` (`ops.linear_layernorm` / `ops.linear_rmsnorm`); in
composed training the module's original forward runs.

Siblings of a norm output that must exist (its other users need it: BERT's query / key / value
read the previous layer's post-norm output, which is also the residual): the GEMMs become
SiblingLinear members of one SiblingGEMMs group, their weights packed side by side; in eager
inference the first member runs one GEMM over the concatenated weights and the others take
their column views of its output (one cuBLAS call instead of three; measured neutral on BERT's
host-bound eager prefill on the H200, session 7: the host time saved by two fewer launches is
within the noise). In eager training too, over torch.cat of the weights (SiblingGEMMs.train_packed:
fewer launches per step). torch.compile and FX tracing run each member's own GEMM.
"""
from __future__ import annotations

import os

import torch
from torch import nn
from torch.nn.modules import module as _torch_module

import weakref

from ..ops.common import adjacent, cat_biases, joined_view, register_clear, register_weights

__all__ = ["FusedNorm", "FusedLinear", "DeferredLinear", "NormAfterLinear", "fused_post_norm",
           "composed_norm", "StandaloneNorm",
           "is_conv1d", "gemm_weight", "TRAIN_PLANS", "check_train_plan"]

_SIMPLE = (int, float, bool, str, type(None))

# How an optimized model trains (grad mode on and something requiring grad); inference is fused
# either way. See the module docstring.
TRAIN_PLANS = ("composed", "fused")

# Composed training under torch.compile: each consumer its own GEMM, as eager (False, the
# default), or one GEMM over the packed siblings' concatenated weights (NORMFUSE_COMPOSED_PACK=1).
# Measured on the H200 (2026-12-02, bench/train_ab.py, 7 interleaved rounds, train step): packed
# 1.036x / 1.019x stock+compile's time for Qwen2 / Llama, unpacked 0.998x / 0.990x; the weights'
# cat in every forward and the gradient's slice_scatters cost more than one wider GEMM saves.
COMPOSED_PACK = os.environ.get("NORMFUSE_COMPOSED_PACK", "0").strip() not in ("0", "")

# Siblings whose outputs their users make contiguous (Liger's RoPE and SwiGLU call
# `.contiguous()` on q / k and on gate / up): in eager inference one GEMM whose output tiles land
# in one contiguous tensor per member (`ops.rmsnorm_linear_split`) instead of each member's own
# fused GEMM. optimize's default for `split_siblings`: on (NORMFUSE_SPLIT_SIBLINGS=0 turns it
# off). Measured on the H200 (2026-12-02, bench/results/2026-12-02/session12/): per group at
# T = 8192 the split launch 0.080-0.644 ms against 0.109-0.691 ms for a fused GEMM per member
# (Llama / Qwen2 q/k/v and gate/up); Liger-composed prefill, CUDA graph, Llama 6.921 vs 7.044 ms,
# Qwen2 6.645 vs 6.866 ms. A group optimize marked split keeps running split.
SPLIT_SIBLINGS = os.environ.get("NORMFUSE_SPLIT_SIBLINGS", "1").strip() not in ("0", "")

# The "fused" training plan on a group of 2+ consumers, in eager: one fused training op over the
# siblings' weights (concatenated, differentiably), its output split by columns (torch.split:
# one autograd node whose backward writes dY once, a cat of the consumers' gradients) and handed
# to the consumers as the split form hands its outputs (`take_split`), instead of each
# consumer's own op: the norm's backward runs once per group, not once per consumer (Llama's
# q / k / v: three persistent norm backwards and three dX sums -> one). Measured neutral: Llama
# 24.48 ms with it against 24.55 one op per consumer (H200, session 26), 24.58 (H100, session
# 43) against the composed plan's 23.48; NORMFUSE_FUSED_TRAIN_SPLIT=0 keeps one op per consumer.
FUSED_TRAIN_SPLIT = os.environ.get("NORMFUSE_FUSED_TRAIN_SPLIT", "1").strip() not in ("0", "")


def check_train_plan(plan) -> str:
    if plan not in TRAIN_PLANS:
        raise ValueError(f"normfuse.optimize: unknown training plan {plan!r}; expected one of "
                         f"{', '.join(repr(p) for p in TRAIN_PLANS)} ('composed': the original "
                         f"norm and cuBLAS GEMMs in training, 'fused': the fused training ops)")
    return plan


def is_conv1d(m: nn.Module) -> bool:
    """transformers' Conv1D (GPT-2): y = x @ weight + bias with weight stored [in, out]."""
    t = type(m)
    return (t.__name__ == "Conv1D" and t.__module__.startswith("transformers")
            and isinstance(getattr(m, "weight", None), torch.Tensor) and m.weight.dim() == 2)


def gemm_weight(m: nn.Module) -> torch.Tensor:
    """The [N, K] weight of an nn.Linear or (a strided view, no copy) of a Conv1D."""
    w = _param(m, "weight")
    return w.t() if is_conv1d(m) else w


def _adopt(new: nn.Module, old: nn.Module) -> None:
    """Give `new` the parameters and buffers of `old` (same objects, same names) and its simple
    public attributes (eps, in_features, nf, ...)."""
    for name, p in old._parameters.items():
        new.register_parameter(name, p)
    for name, b in old._buffers.items():
        new.register_buffer(name, b, persistent=name not in old._non_persistent_buffers_set)
    for name, v in old.__dict__.items():
        simple = isinstance(v, _SIMPLE) or (
            isinstance(v, tuple) and all(isinstance(e, _SIMPLE) for e in v))
        if not name.startswith("_") and name != "training" and simple:
            object.__setattr__(new, name, v)
    new.training = old.training
    _known(new)


def _known(module: nn.Module) -> None:
    """Tell the ops where `module`'s parameters live now (after `.to()`, a repack): a compiled
    graph's aliases of them are then recognized (normfuse.ops.common.alias_owner)."""
    register_weights(*module._parameters.values())


def _keep_original(new: nn.Module, old: nn.Module) -> None:
    """Keep `old` on `new` (unregistered: no state_dict keys, not in named_modules) for the
    composed training plan, which runs old's own forward. `new` takes old's parameter and buffer
    dicts themselves (the same dict objects), so whatever later replaces a parameter of `new`
    (load_state_dict(assign=True), FSDP2's sharded / unsharded parameters, .to() with parameter
    swapping) is what old's forward reads; deepcopy and pickling keep the sharing."""
    object.__setattr__(new, "_parameters", old._parameters)
    object.__setattr__(new, "_buffers", old._buffers)
    object.__setattr__(new, "_non_persistent_buffers_set", old._non_persistent_buffers_set)
    object.__setattr__(new, "_original", old)


def _train_original(new: nn.Module, mode: bool) -> None:
    orig = new.__dict__.get("_original")
    if orig is not None:
        orig.train(mode)


def _wants_grad(x: torch.Tensor, *modules: nn.Module) -> bool:
    if not torch.is_grad_enabled():
        return False
    return x.requires_grad or any(p.requires_grad for m in modules for p in m.parameters())


def _param(m: nn.Module, name: str):
    """`m.<name>`, read from `m._parameters` where it is registered there (through
    `nn.Module.__getattr__` a parameter costs ~1 us of host time per read); anything else (a
    parametrization's property, a plain attribute, a buffer) as an attribute."""
    p = m._parameters
    return p[name] if name in p else getattr(m, name)


_OPS = None  # normfuse.ops, imported on first use (an import statement costs ~0.5 us per call)


def _ops():
    global _OPS
    if _OPS is None:
        from .. import ops
        _OPS = ops
    return _OPS


def _split_op(spec, x, g, beta, weights, biases, kn: bool = False) -> list:
    """The fused pre-norm op over sibling weights, each output its own contiguous tensor."""
    ops = _OPS or _ops()
    if g is None and spec.kind == "rms":
        g = x.new_ones(x.shape[-1])
    if spec.kind == "rms":
        return ops.rmsnorm_linear_split(x, g, weights, spec.eps, biases, offset=spec.offset,
                                        weight_kn=kn)
    return ops.layernorm_linear_split(x, g, beta, weights, spec.eps, biases, offset=spec.offset,
                                      weight_kn=kn)


def _op(spec, x, g, beta, weight, bias, kn: bool = False):
    """The fused pre-norm op; kn: the weights are Conv1D's [K, N] parameters (weight_kn)."""
    ops = _OPS or _ops()
    if g is None and spec.kind == "rms":  # a norm without scale: the ops take g = 1
        g = x.new_ones(x.shape[-1])
    if spec.kind == "rms":
        return ops.rmsnorm_linear(x, g, weight, spec.eps, bias, offset=spec.offset, weight_kn=kn)
    return ops.layernorm_linear(x, g, beta, weight, spec.eps, bias, offset=spec.offset,
                                weight_kn=kn)


# Parameter tensor types the standalone norm op takes in composed training (not a DTensor or
# another subclass: those keep the original module)
_PLAIN = (torch.Tensor, nn.Parameter)
_OP_DTYPES = (torch.bfloat16, torch.float16)


# torch's own nn.LayerNorm / nn.RMSNorm run one native kernel each way with little host time;
# the standalone norm op's eager training call (an autograd.Function) costs more host time and
# wins only where the GPU time dominates. Measured on the H200 (2026-12-01, session 5's norm
# bench, fwd + bwd, ms): LayerNorm 8192 x 2048 native 0.116 vs the op 0.246, 8192 x 4096 0.182
# vs 0.498 (the op host-bound), 262144 x 512 0.953 vs 0.367, 262144 x 1024 1.432 vs 0.695;
# RMSNorm 8192 x 2048 0.101 vs 0.312, 262144 x 1024 1.105 vs 0.669. A BERT train step (9
# nn.LayerNorms of 8192 x 1024, host-bound) took 2.3 ms more host time on the op. So torch's
# modules take the op from NATIVE_NORM_MIN_ELEMENTS elements of x up: 2^26, between the measured
# cells where native wins (<= 2^25) and where the op wins (>= 2^27); not measured in between.
NATIVE_NORM_MIN_ELEMENTS = 1 << 26


def composed_norm(spec, original, x: torch.Tensor, g, beta, module=None) -> torch.Tensor:
    """The norm's output in composed training: the standalone norm op where it computes what
    the original module does with fewer kernels, else `original(x)` (see the module docstring).

    The op is taken when: not under torch.compile; x a CUDA tensor of bf16 / fp16 that the op's
    kernels run for (sm_90, N <= ops.norm.MAX_N); no autocast on x's device (autocast runs
    F.layer_norm in fp32 and returns fp32); the parameters plain tensors of x's dtype (a
    LlamaRMSNorm with fp32 weights returns fp32); the module upcasts to fp32 for its statistics
    (`spec.upcast`: transformers' eager norms, ~6 kernels each way), or is torch's nn.LayerNorm /
    nn.RMSNorm (fp32 inside, one native kernel each way) and x has at least
    NATIVE_NORM_MIN_ELEMENTS elements: then the op's fp32 math with one rounding of the output
    is the module's up to the module's own intermediate roundings (LlamaRMSNorm rounds xhat to
    x's dtype before the scale)."""
    if (torch.compiler.is_compiling() or x.dtype not in _OP_DTYPES
            or torch.is_autocast_enabled(x.device.type) or x.shape[-1] != spec.features):
        return original(x)
    if isinstance(original if module is None else module, (nn.LayerNorm, nn.RMSNorm)):
        # (torch's own modules by class first: nn.RMSNorm's decomposition upcasts, so its spec
        # says upcast, yet it runs one native kernel each way)
        if x.numel() < NATIVE_NORM_MIN_ELEMENTS:
            return original(x)
    elif not spec.upcast:
        return original(x)
    for p in (g, beta):
        if p is not None and (type(p) not in _PLAIN or p.dtype != x.dtype):
            return original(x)
    ops = _OPS or _ops()
    if ops.norm.norm_unavailable(x) is not None:
        return original(x)
    if spec.kind == "rms":
        return ops.rms_norm(x, g, spec.eps, offset=spec.offset)
    return ops.layer_norm(x, g, beta, spec.eps, offset=spec.offset)


class StandaloneNorm:
    """Installed as `module.forward` (an instance attribute) by optimize on a recognized norm
    that no GEMM takes (no GEMM reads it or feeds it, or its output has other users: Llama's
    final norm, BERT's embedding LayerNorm): the norm as `composed_norm` computes it, i.e. the
    standalone norm op (one kernel forward, one persistent kernel backward) in eager on an sm_90
    GPU for 16-bit activations and parameters, the module's own forward everywhere else (CPU,
    under torch.compile, fp32, autocast). The module keeps its parameters and state_dict keys."""

    def __init__(self, module: nn.Module, spec):
        self.module, self.spec = module, spec

    def original(self, x):
        return type(self.module).forward(self.module, x)

    def __call__(self, *args, **kwargs):
        m, s = self.module, self.spec
        if kwargs or len(args) != 1 or not isinstance(args[0], torch.Tensor):
            return type(m).forward(m, *args, **kwargs)
        g = _param(m, s.weight) if s.weight is not None else None
        beta = _param(m, s.bias) if s.bias is not None else None
        return composed_norm(s, self.original, args[0], g, beta, module=m)


class FusedNorm(nn.Module):
    """A recognized norm whose output feeds only GEMMs (see the module docstring).

    `spec`: the NormSpec (kind, eps, weight/bias parameter names, offset); `source`: the original
    class name. Parameters and buffers are the original module's (its own dicts: the original
    module is kept, unregistered, for the composed training plan). `train_plan`: "composed" or
    "fused" (`optimize(train=...)`, `optimize.set_train_plan`); inference is fused either way."""

    train_plan = "composed"

    def __init__(self, original: nn.Module, spec, path: str = ""):
        super().__init__()
        _adopt(self, original)
        _keep_original(self, original)
        self.spec = spec
        self.source = type(original).__name__
        self.path = path
        self.packed = False
        # the split form (SPLIT_SIBLINGS): in eager inference one GEMM into one contiguous output
        # per consumer, handed to the consumers called next with the same x (`_pending`: x, its
        # version, the outputs, which consumers are still to take theirs)
        self.split = False
        object.__setattr__(self, "_consumers", ())
        object.__setattr__(self, "_pending", None)

    def __getstate__(self):  # (pickling and deepcopy: a split call's leftover outputs stay)
        state = super().__getstate__()
        if state.get("_pending") is not None:
            state = dict(state, _pending=None)
        return state

    # -- the group --
    @property
    def consumers(self) -> tuple:
        return self._consumers

    @property
    def total_features(self) -> int:
        """sum N_i: the width of the packed output."""
        return sum(c.cols[1] - c.cols[0] for c in self._consumers)

    def norm_params(self):
        s = self.spec
        g = _param(self, s.weight) if s.weight is not None else None
        beta = _param(self, s.bias) if s.bias is not None else None
        return g, beta

    def wants_grad(self, x: torch.Tensor) -> bool:
        """The training predicate, the same in the norm and in its consumers: grad mode on and
        x or a parameter of the group requiring grad."""
        if not torch.is_grad_enabled():
            return False
        if x.requires_grad:
            return True
        for p in self.parameters():
            if p.requires_grad:
                return True
        for c in self._consumers:
            for p in c.parameters():
                if p.requires_grad:
                    return True
        return False

    def hooked(self) -> bool:
        """Forward hooks on the norm or a consumer (a user's: activation capture, calibration, a
        pre-hook changing the input): the group then runs as the model wrote it, the norm's
        output normalized and each consumer's own GEMM ("normalized"), so every hook sees and
        changes what it would in the stock model."""
        return _any_hooked((self, *self._consumers))

    def _packed_now(self, grad: bool) -> bool:
        """Does the norm return the packed output Y (one GEMM over the siblings) now? In
        inference when the group is packed; in composed training when it is packed, torch.compile
        is tracing and Y's width sum N_i differs from K (so that a consumer outside the traced
        frame, after a graph break, still tells Y from n by its width). Never while hooked."""
        if not self.packed or self.hooked():
            return False
        if not grad:
            return True
        return (COMPOSED_PACK and self.train_plan == "composed"
                and self.spec.features != self.total_features and torch.compiler.is_compiling())

    def output_form(self, x: torch.Tensor) -> str:
        """What a consumer reading x (this norm's output, maybe through a row view) got:
        "packed" (Y: it takes its columns), "normalized" (n, composed training: it runs its
        GEMM) or "input" (x: it runs the fused op). A packed Y is told by its width where K and
        sum N_i differ (robust to a grad mode switched between the norm and the consumer), else
        by the norm's predicate."""
        grad = self.wants_grad(x)
        if self.packed:
            K, total = self.spec.features, self.total_features
            if (x.shape[-1] == total) if K != total else self._packed_now(grad):
                return "packed"
        return "normalized" if (grad and self.train_plan == "composed") or self.hooked() \
            else "input"

    def _split_now(self, x, grad: bool) -> bool:
        """Does this call run the split form? Eager inference of a split group on a tensor with a
        version counter (the consumers check it), not under torch.compile or FX tracing."""
        return (self.split and not grad and isinstance(x, torch.Tensor)
                and not torch.compiler.is_compiling() and not x.is_inference()
                and not self.hooked())

    def _train_split_now(self, x) -> bool:
        """Does this training call run the fused plan's split form (FUSED_TRAIN_SPLIT)? The
        fused plan, 2+ consumers, eager and untraced (under torch.compile each consumer keeps
        its own op), a plain tensor with a version counter, no hooks."""
        return (FUSED_TRAIN_SPLIT and self.train_plan == "fused" and len(self._consumers) > 1
                and not torch.compiler.is_compiling() and type(x) in _PLAIN
                and not x.is_inference() and not self.hooked())

    def _hand_out(self, x, outs) -> torch.Tensor:
        """Keep `outs` (one per consumer, in order) for the consumers called next with this x
        (`take_split`); returns x, which they receive."""
        object.__setattr__(self, "_pending", (x, x._version, outs, {
            id(c): i for i, c in enumerate(self._consumers)}))
        return x

    def take_split(self, x, consumer) -> torch.Tensor | None:
        """The consumer's output of the split form when this norm's last call made it for this
        very x (identity and version), once per consumer; else None (it runs its own op)."""
        p = self._pending
        if p is None or p[0] is not x or p[1] != x._version:
            return None
        i = p[3].get(consumer)
        if i is None:
            return None
        del p[3][consumer]
        if not p[3]:
            object.__setattr__(self, "_pending", None)
        return p[2][i]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        grad = self.wants_grad(x)
        if self._pending is not None:  # (a previous call's outputs some consumer did not take)
            object.__setattr__(self, "_pending", None)
        if self._split_now(x, grad):
            outs = _split_op(self.spec, x, *self.norm_params(), *self._sibling_weights())
            return self._hand_out(x, outs)
        if grad and self._train_split_now(x):
            # one fused training op over the siblings, split by columns for the consumers
            ws, bs, kn = self._sibling_weights()
            y = _op(self.spec, x, *self.norm_params(), ws, bs, kn)
            outs = torch.split(y, [w.shape[1] if kn else w.shape[0] for w in ws], dim=-1)
            return self._hand_out(x, outs)
        if (grad and self.train_plan == "composed") or self.hooked():
            n = composed_norm(self.spec, self._original, x, *self.norm_params())
            if not self._packed_now(grad):
                return n  # each consumer runs its GEMM on n
            # under torch.compile: one GEMM over the concatenated sibling weights
            ws = [c.gemm_weight() for c in self._consumers]
            return torch.nn.functional.linear(n, torch.cat(ws),
                                              cat_biases(ws, [c.bias for c in self._consumers]))
        if not self._packed_now(grad):
            return x  # each consumer normalizes what it reads
        return _op(self.spec, x, *self.norm_params(), *self._sibling_weights())

    def _sibling_weights(self) -> tuple:
        """(the consumers' weights, their biases or None, kn) as the sibling ops take them:
        Conv1D consumers' [K, N] parameters as they are (weight_kn: the op keys its launch-ready
        call by them; a `weight.t()` per call is a new view to key by geometry)."""
        cs = self._consumers
        kn = all(c.transposed for c in cs)
        ws = [_param(c, "weight") if kn else c.gemm_weight() for c in cs]
        bs = [_param(c, "bias") for c in cs]
        return ws, None if all(b is None for b in bs) else bs, kn

    def train(self, mode: bool = True):
        super().train(mode)
        _train_original(self, mode)
        return self

    # -- weight packing --
    def repack(self) -> bool:
        """Put the consumers' weights side by side in one buffer (each parameter's data a view
        of it) when they agree on type, dtype, device and requires_grad; True when packed."""
        if len(self._consumers) < 2 or not (self.packed or self.split):
            return False
        return pack_side_by_side(self._consumers)

    def _apply(self, fn, recurse=True):
        out = super()._apply(fn, recurse)
        self.repack()
        _known(self)
        return out

    def extra_repr(self) -> str:
        names = ", ".join(c.path.rsplit(".", 1)[-1] or c.path for c in self._consumers)
        form = ("one GEMM" if self.packed else
                "one GEMM, an output per consumer" if self.split else
                "per consumer")
        return f"{self.source}: {self.spec.describe()}; feeds [{names}] ({form})"


def pack_side_by_side(members) -> bool:
    """Put the GEMM modules' weights side by side in one buffer (each parameter's data a view of
    it: nn.Linear's [N_i, K] as row blocks, Conv1D's [K, N_i] as column blocks) when they agree
    on kind, type, dtype, device and requires_grad, so that their [N_i, K] GEMM weights are one
    [sum N_i, K] view (`ops.common.adjacent` / `joined_view`); True when they are."""
    ws = [c.weight for c in members]
    conv = members[0].transposed
    if any(c.transposed != conv for c in members):
        return False
    w0 = ws[0]
    if any(type(w.data) is not torch.Tensor or w.dtype != w0.dtype or w.device != w0.device
           or w.requires_grad != w0.requires_grad for w in ws):
        return False
    if adjacent([c.gemm_weight() for c in members]):
        return True
    if any(w.is_inference() for w in ws):
        return False  # parameters made under inference_mode: leave them as they are
    # (out of inference_mode: a buffer made inside it could never take part in training)
    with torch.inference_mode(False), torch.no_grad():
        dim = 1 if conv else 0  # Conv1D [K, sum N]: column blocks
        buf = torch.cat([w.data for w in ws], dim=dim)
        a = 0
        for w in ws:
            n = w.shape[dim]
            w.data = buf[:, a:a + n] if conv else buf[a:a + n]
            a += n
    for c in members:  # (their new addresses)
        _known(c)
    return True


class _GemmModule(nn.Module):
    """What the modules standing in for a GEMM module share: the original nn.Linear's or
    transformers' Conv1D's `weight` and `bias` (adopted), whether the weight is stored [K, N]
    (`transposed`: Conv1D), the original class name and the module's path."""

    def __init__(self, original: nn.Module, path: str = ""):
        super().__init__()
        _adopt(self, original)
        self.transposed = is_conv1d(original)
        self.source = type(original).__name__
        self.path = path

    def gemm_weight(self) -> torch.Tensor:
        """The [N, K] weight (a Conv1D's through a transposed view)."""
        w = _param(self, "weight")
        return w.t() if self.transposed else w

    def plain_gemm(self, x: torch.Tensor) -> torch.Tensor:
        """x W^T + b on cuBLAS as the original module computes it: nn.Linear's F.linear, and
        Conv1D's addmm on its [K, N] weight as stored (F.linear through the transposed view
        records two transposes more per consumer and takes linear's matmul path instead of
        Conv1D's addmm: not the stock model's step)."""
        w, b = _param(self, "weight"), _param(self, "bias")
        if not self.transposed:
            return torch.nn.functional.linear(x, w, b)
        x2 = x.reshape(-1, x.shape[-1])
        y = torch.addmm(b, x2, w) if b is not None else torch.mm(x2, w)
        return y.view(*x.shape[:-1], w.shape[1])


class FusedLinear(_GemmModule):
    """A GEMM reading a FusedNorm's output: nn.Linear (weight [N, K]) or transformers' Conv1D
    (weight [K, N], read through a transposed view). Keeps the original `weight` and `bias`."""

    def __init__(self, original: nn.Module, norm: FusedNorm, path: str = ""):
        super().__init__(original, path)
        self.cols = (0, 0)
        object.__setattr__(self, "_norm", norm)

    @property
    def norm(self) -> FusedNorm:
        return self._norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = self._norm
        if norm._pending is not None:
            y = norm.take_split(x, id(self))
            if y is not None:
                return y
        form = norm.output_form(x)
        if form == "packed":
            a, b = self.cols
            return x[..., a:b]
        if form == "normalized":  # composed training: x is the original norm's output
            return self.plain_gemm(x)
        g, beta = norm.norm_params()
        if self.transposed:  # (weight_kn: see FusedNorm.forward)
            return _op(norm.spec, x, g, beta, _param(self, "weight"), _param(self, "bias"), True)
        return _op(norm.spec, x, g, beta, self.gemm_weight(), _param(self, "bias"))

    def _apply(self, fn, recurse=True):
        out = super()._apply(fn, recurse)
        self._norm.repack()  # (registers the siblings it moves)
        _known(self)
        return out

    def extra_repr(self) -> str:
        w = self.gemm_weight()
        return (f"{self.source}: in={w.shape[1]}, out={w.shape[0]}, bias={self.bias is not None}; "
                f"normalized by {self._norm.path or 'the norm'}")


# ---------------------------------------------------------------------------------------------
# Post-norm
# ---------------------------------------------------------------------------------------------

class DeferredLinear(_GemmModule):
    """A GEMM whose output only reaches a norm, called in another module's forward (Gemma2's
    o_proj inside the attention, its post-attention norm in the layer): it hands on its input
    and the norm (a NormAfterLinear) runs the GEMM with the norm in its epilogue. Keeps the
    original `weight` and `bias`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = self._norm
        if norm.train_plan == "composed" and _wants_grad(x, self, norm):
            return self.plain_gemm(x)
        return x

    def _apply(self, fn, recurse=True):
        out = super()._apply(fn, recurse)
        _known(self)
        return out

    def extra_repr(self) -> str:
        w = self.gemm_weight()
        return (f"{self.source}: in={w.shape[1]}, out={w.shape[0]}, bias={self.bias is not None}; "
                f"runs in the norm after it")


class NormAfterLinear(nn.Module):
    """The norm after a DeferredLinear: z = norm(x W^T + b) through ops.linear_rmsnorm /
    linear_layernorm, x the GEMM's input. Keeps the norm's parameters and buffers (and the
    original module, as FusedNorm does). `train_plan` "composed": in training the
    DeferredLinear runs its GEMM and this the original norm; "fused": the fused training op."""

    train_plan = "composed"

    def __init__(self, original: nn.Module, spec, linear: DeferredLinear, path: str = ""):
        super().__init__()
        _adopt(self, original)
        _keep_original(self, original)
        self.spec = spec
        self.source = type(original).__name__
        self.path = path
        object.__setattr__(self, "_linear", linear)
        object.__setattr__(linear, "_norm", self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s, lin = self.spec, self._linear
        if self.train_plan == "composed" and _wants_grad(x, self, lin):  # the GEMM ran already
            g = _param(self, s.weight) if s.weight is not None else None
            beta = _param(self, s.bias) if s.bias is not None else None
            return composed_norm(s, self._original, x, g, beta)
        return fused_post_norm(x, None, lin, self, None, s.kind, s.eps, s.offset, s.weight, s.bias)

    def train(self, mode: bool = True):
        super().train(mode)
        _train_original(self, mode)
        return self

    def extra_repr(self) -> str:
        return f"{self.source}: {self.spec.describe()}; after {self._linear.path}"


_CHECKED: "weakref.WeakKeyDictionary[nn.Module, bool]" = weakref.WeakKeyDictionary()


def is_gemm_module(m: nn.Module) -> bool:
    """nn.Linear, an nn.Linear subclass whose own forward computes F.linear(x, weight, bias)
    (checked once per module with random parameters: Falcon's FalconLinear passes, a LoRA layer
    adding B(A(x)) does not), or transformers' Conv1D."""
    if is_conv1d(m):
        return True
    if not isinstance(m, nn.Linear) or m.weight is None or m.weight.dim() != 2:
        return False
    if type(m).forward is nn.Linear.forward:
        return True
    if m not in _CHECKED:
        _CHECKED[m] = _computes_linear(m)
    return _CHECKED[m]


def _computes_linear(m: nn.Linear) -> bool:
    from torch.func import functional_call
    g = torch.Generator().manual_seed(0)
    params = {n: torch.randn(p.shape, generator=g) for n, p in m.named_parameters()}
    x = torch.randn(3, m.weight.shape[1], generator=g)
    try:
        with torch.no_grad():
            y = functional_call(m, params, (x,))
    except Exception:  # noqa: BLE001 - whatever its forward needs, it is not a plain linear
        return False
    ref = torch.nn.functional.linear(x, params["weight"], params.get("bias"))
    return (isinstance(y, torch.Tensor) and y.shape == ref.shape
            and torch.allclose(y, ref, rtol=1e-4, atol=1e-4))


def fused_post_norm(x: torch.Tensor, residual: torch.Tensor | None, linear: nn.Module,
                    norm: nn.Module, extra_bias: torch.Tensor | None, kind: str, eps: float,
                    offset: float, weight: str | None, bias: str | None) -> torch.Tensor:
    """norm(x W^T + b + residual) through `ops.linear_rmsnorm` / `ops.linear_layernorm`; the
    modules are the original ones (their parameters read at call time, from `_parameters` where
    registered: `_param`). The modules themselves compute it (`_post_by_modules`) where the
    fused op would not be what they compute now: hooks on them (registered after optimize), a
    linear replaced by a module that is no plain GEMM (a LoRA wrapper), a residual that only
    broadcasts to the output."""
    deferred = isinstance(linear, DeferredLinear)
    if not deferred and (_hooked(linear) or _hooked(norm) or not is_gemm_module(linear)):
        return _post_by_modules(x, residual, linear, norm, extra_bias)
    ops = _OPS or _ops()
    W = linear.gemm_weight() if deferred else gemm_weight(linear)
    if residual is not None and residual.shape != (*x.shape[:-1], W.shape[0]) and not deferred:
        return _post_by_modules(x, residual, linear, norm, extra_bias)
    b = _param(linear, "bias") if extra_bias is None else extra_bias
    # the post-norm ops take the affine parameters always: ones / zeros where the norm has none
    g = _param(norm, weight) if weight is not None else x.new_ones(W.shape[0])
    if kind == "rms":
        return ops.linear_rmsnorm(x, W, g, eps, b, residual, offset=offset)
    beta = _param(norm, bias) if bias is not None else x.new_zeros(W.shape[0])
    return ops.linear_layernorm(x, W, g, beta, eps, b, residual, offset=offset)


def _hooked(m: nn.Module) -> bool:
    """Whether calling `m` runs forward hooks (its own or global ones) other than optimize's
    probe's (marked `_normfuse_probe`: the probe watches the model as the user runs it)."""
    return _any_hooked((m,))


def _any_hooked(ms) -> bool:
    """Whether calling any of the modules `ms` runs forward hooks (see `_hooked`); the global
    hooks are looked at once (this runs on every call of a sibling group's first member)."""
    if _user_hooks(_torch_module._global_forward_hooks) or _user_hooks(
            _torch_module._global_forward_pre_hooks):
        return True
    for m in ms:
        if (m._forward_hooks and _user_hooks(m._forward_hooks)) or (
                m._forward_pre_hooks and _user_hooks(m._forward_pre_hooks)):
            return True
    return False


def _user_hooks(hooks) -> bool:
    """Whether the hook dict holds a hook other than optimize's probe's."""
    if hooks:
        for h in hooks.values():
            if not getattr(h, "_normfuse_probe", False):
                return True
    return False


def _post_by_modules(x, residual, linear, norm, extra_bias):
    """fused_post_norm's function by the modules themselves (their hooks run)."""
    y = linear(x)
    if extra_bias is not None:
        y = y + extra_bias
    if residual is not None:
        y = y + residual
    return norm(y)


# ---------------------------------------------------------------------------------------------
# GEMMs reading one norm's output that must exist anyway (siblings)
# ---------------------------------------------------------------------------------------------

class SiblingGEMMs:
    """GEMM modules (members, in the order the model calls them) that each read one norm's
    whole output, where that output must exist for another user anyway: BERT's query / key /
    value after the previous layer's post-norm, whose output is also the residual. In eager
    inference (no grad) the first member's call runs one GEMM over the members' concatenated
    weights (packed side by side at optimize: `pack_side_by_side`, so the [sum N_i, K] weight
    is a view) and keeps the output; a member called next with the same tensor (identity and
    version) returns its column slice (a view), the last one releases it. Anything else (grad
    mode with a parameter or the input requiring grad, torch.compile or FX tracing, another
    input, another call order, an input made under torch.inference_mode, which has no version
    counter to check) runs the member's own GEMM, as the model wrote it.

    Eager training (`train_packed`, on by default; NORMFUSE_SIBLINGS_TRAIN=0 turns it off): the
    first member's call runs one GEMM too, over `torch.cat` of the members' weights (and
    biases), and splits the output (`Tensor.split`: one backward node, which concatenates the
    members' output gradients in one kernel; the cat's backward hands each parameter its rows,
    no kernel). Per group and step: forward the two concatenations and one GEMM instead of one
    GEMM per member; backward one concatenation, one dX GEMM, one dW GEMM and one bias sum
    instead of three kernels per member, and one addition of input gradients instead of one
    per member. BERT's eager training step is host-bound, so the launches saved are its time
    (measured on the CPU machine, where each op's dispatch is the cost: the same as a GEMM per
    member; an autograd Function joining the packed weights without a copy cost more in Python
    than it saved). Plain tensor parameters only (not FSDP's DTensors), no hook on a member.

    What a user sees differently: the members' outputs are column views of one [..., sum N_i]
    tensor (strides, not values); a model that needs them contiguous still gets correct results
    (`.contiguous()` copies) and optimize's check runs the example through the packed form."""

    __slots__ = ("members", "norm_path", "pending", "joined_key", "joined", "sizes",
                 "__weakref__")
    # the packed inference form on (False: every member its own GEMM; NORMFUSE_SIBLINGS=0)
    enabled = os.environ.get("NORMFUSE_SIBLINGS", "1").strip() != "0"
    # the packed form in eager training (NORMFUSE_SIBLINGS_TRAIN=0: every member its own GEMM)
    train_packed = os.environ.get("NORMFUSE_SIBLINGS_TRAIN", "1").strip() != "0"

    def __init__(self, norm_path: str):
        self.norm_path = norm_path
        self.members = ()
        self.sizes = None  # the members' output widths, in order (first packed call)
        self.pending = None  # (x, x._version, the members' outputs, members still to take theirs)
        self.joined_key = None
        self.joined = None
        _GROUPS.add(self)

    def forget(self) -> None:
        """Drop the joined weight and bias (normfuse.ops.clear_caches(): after writes through
        `param.data`, which the parameters' versions do not count)."""
        self.joined_key = self.joined = None

    def weight_and_bias(self):
        """([sum N_i, K] weight, [sum N_i] bias or None): a view of the packed weights (else
        their concatenation), the biases concatenated; kept while the parameters (the very
        tensors, held with the entry, their versions and addresses) stay as they were. None
        where a member's weight is no registered parameter (a parametrization computes it):
        each member then runs its own GEMM."""
        ms = self.members
        ps = [m._parameters for m in ms]
        if any(p.get("weight") is None for p in ps):
            return None
        srcs = tuple(p["weight"] for p in ps) + tuple(p.get("bias") for p in ps)
        key = tuple(None if t is None else (t._version, t.data_ptr()) for t in srcs)
        held = self.joined_key
        # (identity checked against the tensors the entry holds: an id or an address of a freed
        # tensor is reused by the next allocation, e.g. functional_call's fresh weights)
        if held is not None and held[0] == key and all(a is b for a, b in zip(held[1], srcs)):
            return self.joined
        ws = [m.gemm_weight() for m in ms]
        w = joined_view(ws) if adjacent(ws) else torch.cat(ws)
        self.joined_key, self.joined = (key, srcs), (w, cat_biases(ws, [p.get("bias") for p in ps]))
        return self.joined

    def train_weight_and_bias(self):
        """(the members' weights concatenated [sum N_i, K], their biases concatenated or None)
        for the training form: torch.cat, whose backward hands each parameter its rows of the
        joined gradients as views (no kernel). None where a member's weight or bias is no
        plain registered tensor (a parametrization, FSDP's DTensor) or the members' dtypes or
        devices differ: each member then runs its own GEMM."""
        ws, bs = [], []
        for m in self.members:
            p = m._parameters
            w, b = p.get("weight"), p.get("bias")
            if type(w) not in _PLAIN or (ws and (w.dtype != ws[0].dtype
                                                  or w.device != ws[0].device)):
                return None  # (a cat would promote dtypes the members' own GEMMs keep apart)
            if b is not None and (type(b) not in _PLAIN or b.dtype != w.dtype):
                return None
            ws.append(w.t() if m.transposed else w)
            bs.append(b)
        return torch.cat(ws), cat_biases(ws, bs)

    def __getstate__(self):  # (pickling and deepcopy: nothing transient)
        return {"members": self.members, "norm_path": self.norm_path}

    def __setstate__(self, state):
        self.members, self.norm_path = state["members"], state["norm_path"]
        self.pending = self.joined_key = self.joined = self.sizes = None
        _GROUPS.add(self)


# every SiblingGEMMs alive, for clear_caches()
_GROUPS: "weakref.WeakSet[SiblingGEMMs]" = weakref.WeakSet()
register_clear(lambda: [g.forget() for g in list(_GROUPS)])


class SiblingLinear(_GemmModule):
    """A member of a SiblingGEMMs group: an nn.Linear or transformers' Conv1D with its original
    `weight` and `bias` (see SiblingGEMMs)."""

    def __init__(self, original: nn.Module, group: SiblingGEMMs, path: str = ""):
        super().__init__(original, path)
        self.cols = (0, 0)
        object.__setattr__(self, "_group", group)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling() or not isinstance(x, torch.Tensor):  # (an FX proxy)
            return torch.nn.functional.linear(x, self.gemm_weight(), self.bias)
        grp = self._group
        ms = grp.members
        if self is ms[0]:
            grp.pending = None
            # (an inference tensor has no version counter: an in-place change between the
            # members could not be seen, so under torch.inference_mode each runs its own GEMM)
            # (a member with hooks runs as the model wrote it: hooks see each member's own call)
            wb = None
            if not x.is_inference() and len(ms) > 1 and not _any_hooked(ms):
                if not _wants_grad(x, *ms):
                    wb = grp.weight_and_bias() if SiblingGEMMs.enabled else None
                elif SiblingGEMMs.train_packed:
                    wb = grp.train_weight_and_bias()
            if wb is not None:
                sizes = grp.sizes
                if sizes is None or len(sizes) != len(ms):
                    sizes = grp.sizes = [m.cols[1] - m.cols[0] for m in ms]
                outs = torch.nn.functional.linear(x, *wb).split(sizes, dim=-1)
                grp.pending = (x, x._version, outs, len(ms) - 1)
                return outs[0]
        else:
            p = grp.pending
            if p is not None and p[0] is x and p[1] == x._version:
                left = p[3] - 1
                grp.pending = None if left == 0 else (p[0], p[1], p[2], left)
                return p[2][ms.index(self)]
        return torch.nn.functional.linear(x, self.gemm_weight(), _param(self, "bias"))

    def _apply(self, fn, recurse=True):
        out = super()._apply(fn, recurse)
        ms = self._group.members
        if len(ms) > 1:  # (packs once the members agree on dtype and device again)
            pack_side_by_side(ms)
        _known(self)
        return out

    def extra_repr(self) -> str:
        w = self.gemm_weight()
        names = ", ".join(m.path.rsplit(".", 1)[-1] or m.path for m in self._group.members)
        return (f"{self.source}: in={w.shape[1]}, out={w.shape[0]}, bias={self.bias is not None}; "
                f"one GEMM with [{names}] over {self._group.norm_path}'s output (inference, eager "
                f"training)")
