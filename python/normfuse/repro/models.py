"""The model benchmark (issue 19): transformers models with random weights, stock against Liger and
normfuse, prefill and training step, numerics against an fp32 copy.

    PYTHONPATH=python python3 -m normfuse.repro --models [NAMES] [--out DIR]
    PYTHONPATH=python python3 -m normfuse.repro.models [--models NAMES] [--out DIR] [--warm-procs P]
        [--train-plan fused] [--each]

The models are the base models of transformers (`LlamaModel`, `Qwen2Model`, `Olmo2Model`,
`GPT2Model`, `BertModel`: no LM head, so that the decoder or encoder layers take the time), 4
layers each, built from a config with random weights (nothing is downloaded) and about 8192
tokens per call:

    llama        Llama-style, RMSNorm, GQA: hidden 2048, intermediate 5632, 16 heads, 4 KV heads;
                 4 x 2048 tokens
    qwen2        Qwen2-1.5B-like, RMSNorm, GQA with q/k/v bias: hidden 1536, intermediate 8960,
                 12 heads, 2 KV heads; 4 x 2048 tokens
    gpt2         GPT-2-large-like, pre-LN LayerNorm with bias, Conv1D ([in, out] weights): n_embd
                 1280, 20 heads; 8 x 1024 tokens
    bert         BERT-large-like, post-LN (LayerNorm(dense(x) + residual)): hidden 1024,
                 intermediate 4096, 16 heads; 16 x 512 tokens
    olmo2        OLMo2-1B-like, RMSNorm after the GEMMs (q_norm / k_norm over q_proj's / k_proj's
                 output, the post-attention and post-feedforward norms): hidden 2048,
                 intermediate 8192, 16 heads, 16 KV heads; 4 x 2048 tokens (not in the default
                 list: `--models olmo2`)
    llama-small  the quick run's model: Llama-style, hidden 1024, intermediate 2816, 8 heads,
                 2 KV heads; 4 x 1024 tokens

The vocabularies are cut to at most 50257 entries (Qwen2's 151936 would only add embedding
rows). After transformers' initialisation every 1-D parameter is perturbed (norm weights
1 + 0.1 N(0, 1), biases 0.02 N(0, 1)) so that no term of the algebra is trivially one or zero;
the weights then go to bf16 once, and that bf16 state_dict is THE model: every configuration is
built fresh from it, and the fp32 reference is its exact upcast.

Configurations (columns):

    stock                    the transformers model, eager (attention: sdpa)
    stock+compile            torch.compile(model) (Inductor, static shapes)
    liger, liger+compile     liger_kernel's apply_liger_kernel_to_<family>(model=...) (RoPE,
                             RMSNorm, SwiGLU; cross-entropy options off: no LM head), where Liger
                             has one for the family (Llama, Qwen2; not GPT-2 or BERT: "n/a")
    normfuse, normfuse+compile
                             `model, rep = normfuse.optimize(model, report=True)`, then eager or
                             compiled; training plan "composed" (optimize's default: in training
                             the norms as the model computes them (eager: normfuse.ops.rms_norm
                             / layer_norm where they compute the same; compiled: the original
                             modules) and cuBLAS GEMMs, inference fused)
    normfuse+liger(+compile) Liger with its RMSNorm off (rms_norm=False: RoPE and SwiGLU kept),
                             then normfuse.optimize: normfuse fuses the norms, Liger the rest
    stock+graph, liger+graph, normfuse+graph, normfuse+liger+graph
                             prefill only: the eager configuration's forward captured once in a
                             CUDA graph (`graphed`) and replayed per call, as a user whose
                             inference is host-bound would run it (no host time per kernel)
    normfuse:fused-train(+compile)
                             only with `--train-plan fused`, train step only (inference does
                             not depend on the plan): optimize(train="fused"), the fused training
                             ops (their backward as normfuse.ops.training.PRENORM_BWD_PLAN says)
    normfuse+liger:each(+graph)
                             only with `--each`, prefill only: normfuse+liger(+graph) with
                             optimize(split_siblings=False) (the siblings whose outputs Liger
                             makes contiguous as one fused GEMM each, against the default: one
                             GEMM with an output tensor per sibling)

Liger patches transformers' modeling module globally (the RoPE function is a module global read
at every forward, the module classes are replaced for models built later), so the Liger
configurations run inside `liger_scope(family)`, which restores the modeling module's globals on
exit; the stock and normfuse configurations run outside it.

Modes and what is measured, per configuration:

    prefill   last_hidden_state = model(input_ids).last_hidden_state in eval mode under
              torch.no_grad (use_cache off)
    train     one training step in train mode (dropouts are 0): grads set to None, forward, the
              loss sum(h * R) in fp32 with a fixed random R of h's shape (a random projection of
              the last hidden state), backward

    ms         median of triton.testing.do_bench (warmup 25 ms, rep 100 ms prefill, 200 ms
               train) after two warm-up calls (torch.compile's compilation is in the first);
               on a GPU every configuration of a model is built, compiled and checked first, then
               all are timed interleaved call by call (INTERLEAVED_CALLS: each call
               synchronized and timed with the host clock), ms the median and `calls_ms` the
               quartiles (the H200 machine's host speed drifts 2x within a minute and eager
               models are host-bound here); `--burst N` runs N calls back to back per turn
               and records their mean per call (BURST); on a CPU a median of three
               wall-clock calls (meaningless as a speed)
    err        ||h - h32||_F / ||h32||_F of the last hidden state against the fp32 copy of the
               stock model on the same inputs; train: also of the gradients of two parameters of
               layer 0 (the first norm's weight and a GEMM weight fed by a norm)
    err_ratio  err / the stock bf16 model's err in the same mode (train: the largest of the
               hidden state's and the gradients' ratios); the goal is <= 1.1
    graphs, graph_breaks, break_reasons
               compiled configurations: the graphs Dynamo handed to the backend on the first call
               and the graph breaks it logged then (what torch._dynamo.explain reports)
    recompiles compiled configurations: graphs compiled after the first call (the second warm-up
               call, the numerics call and every timed call)

A configuration that cannot run here is recorded with status "skipped" (or "n/a" where Liger has
nothing for the family) and the reason; one that fails with status "error" and the exception.
Writes DIR/models.json (records, environment, the optimize report per model and configuration),
DIR/models.md (ms and ratio to the best stock configuration, numerics, compile counts, goals) and
DIR/models.png (grouped bars: speed-up over the best stock configuration).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as _dt
import functools
import gc
import json
import math
import os
import random
import statistics
import sys
import time
import traceback
from dataclasses import dataclass

__all__ = ["ModelSpec", "Config", "SPECS", "MAIN_MODELS", "QUICK_MODELS", "CONFIGS",
           "FUSED_TRAIN_CONFIGS", "EACH_CONFIGS", "configs_for", "run",
           "run_model", "liger_scope", "liger_support", "CompileCounter", "table", "plot",
           "write", "summarize", "warm_jobs", "warm_one", "bench", "main"]

# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------

# family -> (config class, model class, modeling module, norm kind, extra model kwargs)
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaModel", "transformers.models.llama.modeling_llama", "rms"),
    "qwen2": ("Qwen2Config", "Qwen2Model", "transformers.models.qwen2.modeling_qwen2", "rms"),
    "olmo2": ("Olmo2Config", "Olmo2Model", "transformers.models.olmo2.modeling_olmo2", "rms"),
    "gpt2": ("GPT2Config", "GPT2Model", "transformers.models.gpt2.modeling_gpt2", "ln"),
    "bert": ("BertConfig", "BertModel", "transformers.models.bert.modeling_bert", "ln"),
}


@dataclass(frozen=True)
class ModelSpec:
    """One benchmark model: a transformers family, its config's fields, the input shape, and the
    two layer-0 parameters whose gradients the train step compares (a norm weight, a GEMM weight
    that reads a norm's output)."""
    name: str
    family: str
    dims: dict
    batch: int
    seq: int
    grad_params: tuple

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    @property
    def norm(self) -> str:
        return FAMILIES[self.family][3]

    def config(self):
        """The transformers config (sdpa attention, no dropout, no KV cache)."""
        import transformers
        cls = getattr(transformers, FAMILIES[self.family][0])
        kw = dict(self.dims)
        if self.family in ("llama", "qwen2", "olmo2"):
            kw.update(attention_dropout=0.0, use_cache=False)
            if self.family == "olmo2":  # (its default token ids lie past a cut vocabulary)
                kw.update(pad_token_id=0, bos_token_id=0, eos_token_id=0)
        elif self.family == "gpt2":
            kw.update(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
                      bos_token_id=0, eos_token_id=0)
        else:
            kw.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        cfg = cls(**kw)
        cfg._attn_implementation = "sdpa"
        return cfg

    def build(self, device="cpu"):
        """A freshly initialised model (fp32) on `device`."""
        import torch
        import transformers
        cls = getattr(transformers, FAMILIES[self.family][1])
        kw = {"add_pooling_layer": False} if self.family == "bert" else {}
        with torch.device(device):
            return cls(self.config(), **kw)

    def vocab(self) -> int:
        return int(self.dims["vocab_size"])

    def hidden(self) -> int:
        return int(self.dims.get("hidden_size", self.dims.get("n_embd", 0)))


def _llama(hidden, inter, heads, kv, vocab=32000, layers=4, pos=4096):
    return dict(hidden_size=hidden, intermediate_size=inter, num_attention_heads=heads,
                num_key_value_heads=kv, num_hidden_layers=layers, vocab_size=vocab,
                max_position_embeddings=pos)


_DECODER_GRADS = ("layers.0.input_layernorm.weight", "layers.0.mlp.up_proj.weight")
SPECS = {
    "llama": ModelSpec("llama", "llama", _llama(2048, 5632, 16, 4), 4, 2048, _DECODER_GRADS),
    "qwen2": ModelSpec("qwen2", "qwen2", _llama(1536, 8960, 12, 2), 4, 2048, _DECODER_GRADS),
    "gpt2": ModelSpec("gpt2", "gpt2", dict(n_embd=1280, n_head=20, n_layer=4, n_positions=1024,
                                           vocab_size=50257), 8, 1024,
                      ("h.0.ln_1.weight", "h.0.mlp.c_fc.weight")),
    "bert": ModelSpec("bert", "bert", dict(hidden_size=1024, num_attention_heads=16,
                                           intermediate_size=4096, num_hidden_layers=4,
                                           max_position_embeddings=512, vocab_size=30522), 16, 512,
                      ("encoder.layer.0.attention.output.LayerNorm.weight",
                       "encoder.layer.0.intermediate.dense.weight")),
    "olmo2": ModelSpec("olmo2", "olmo2", _llama(2048, 8192, 16, 16, vocab=50257), 4, 2048,
                       ("layers.0.self_attn.q_norm.weight", "layers.0.self_attn.q_proj.weight")),
    "llama-small": ModelSpec("llama-small", "llama", _llama(1024, 2816, 8, 2), 4, 1024,
                             _DECODER_GRADS),
}
MAIN_MODELS = ("llama", "qwen2", "gpt2", "bert")
QUICK_MODELS = ("llama-small",)


def tiny_spec(family: str) -> ModelSpec:
    """A few-thousand-parameter model of `family` (1 layer, 2 x 16 tokens): the CPU test's."""
    base = next(s for s in SPECS.values() if s.family == family)
    if family in ("llama", "qwen2", "olmo2"):
        dims = _llama(64, 160, 4, 2, vocab=128, layers=1, pos=64)
    elif family == "gpt2":
        dims = dict(n_embd=64, n_head=4, n_layer=1, n_positions=64, vocab_size=128)
    else:
        dims = dict(hidden_size=64, num_attention_heads=4, intermediate_size=256,
                    num_hidden_layers=1, max_position_embeddings=64, vocab_size=128)
    return ModelSpec(f"{family}-tiny", family, dims, 2, 16, base.grad_params)


# ---------------------------------------------------------------------------------------------
# Configurations
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    name: str
    liger: str | None      # None, "full" (Liger's defaults) or "no-norm" (rms_norm=False)
    normfuse: bool
    compiled: bool
    train_plan: str | None = None              # normfuse.optimize(train=...)
    modes: tuple = ("prefill", "train")        # the modes it is measured in
    graph: bool = False                        # the eager prefill captured in a CUDA graph
    inductor_pass: bool = False                # torch.compile with normfuse's Inductor pass
    split: bool | None = None                  # normfuse.optimize(split_siblings=...); None:
                                               # optimize's default

    @property
    def base(self) -> str:
        return self.name.replace("+compile", "")


CONFIGS = (
    Config("stock", None, False, False),
    Config("stock+compile", None, False, True),
    Config("liger", "full", False, False),
    Config("liger+compile", "full", False, True),
    Config("normfuse", None, True, False, "composed"),
    Config("normfuse+compile", None, True, True, "composed"),
    Config("normfuse+liger", "no-norm", True, False, "composed"),
    Config("normfuse+liger+compile", "no-norm", True, True, "composed"),
    # the eager model's prefill captured once in a CUDA graph and replayed (what a user whose
    # inference is host-bound runs: no host time per kernel; prefill only)
    Config("stock+graph", None, False, False, modes=("prefill",), graph=True),
    Config("liger+graph", "full", False, False, modes=("prefill",), graph=True),
    Config("normfuse+graph", None, True, False, "composed", ("prefill",), graph=True),
    Config("normfuse+liger+graph", "no-norm", True, False, "composed", ("prefill",), graph=True),
    # the stock model compiled with normfuse's Inductor pass (no optimize): the norms feeding
    # GEMMs found in the compiled graph (prefill only: the pass leaves training graphs alone)
    Config("normfuse-pass+compile", None, False, True, modes=("prefill",), inductor_pass=True),
)
# `--each`: Liger-composed prefill with optimize(split_siblings=False) (the sibling groups whose
# outputs Liger makes contiguous as one fused GEMM each), to set against normfuse+liger and
# normfuse+liger+graph (the default split form: one GEMM, an output per sibling) in the same run
EACH_CONFIGS = (
    Config("normfuse+liger:each", "no-norm", True, False, "composed", ("prefill",), split=False),
    Config("normfuse+liger:each+graph", "no-norm", True, False, "composed", ("prefill",),
           graph=True, split=False),
)
# `--train-plan fused`: the fused training plan too (train step only: inference is the same)
FUSED_TRAIN_CONFIGS = (
    Config("normfuse:fused-train", None, True, False, "fused", ("train",)),
    Config("normfuse:fused-train+compile", None, True, True, "fused", ("train",)),
)
CONFIG_NAMES = tuple(c.name for c in CONFIGS)
STOCK = ("stock", "stock+compile", "stock+graph")
LIGER = ("liger", "liger+compile", "liger+graph")
NORMFUSE = tuple(c.name for c in CONFIGS + FUSED_TRAIN_CONFIGS + EACH_CONFIGS
                 if c.normfuse or c.inductor_pass)
TRAIN_PLANS = ("composed", "fused")
ERR_GOAL = 1.1


def _config(name: str) -> Config:
    for c in CONFIGS + FUSED_TRAIN_CONFIGS + EACH_CONFIGS:
        if c.name == name:
            return c
    known = CONFIG_NAMES + tuple(c.name for c in FUSED_TRAIN_CONFIGS + EACH_CONFIGS)
    raise ValueError(f"unknown configuration {name!r}; known: {', '.join(known)}")


def configs_for(train_plan: str = "composed", configs=CONFIG_NAMES) -> tuple:
    """The configurations to run: `configs`, plus the fused training plan's two with
    train_plan="fused" (after the normfuse ones)."""
    if train_plan not in TRAIN_PLANS:
        raise ValueError(f"unknown training plan {train_plan!r}; expected one of {TRAIN_PLANS}")
    configs = tuple(configs)
    if train_plan == "fused":
        configs += tuple(c.name for c in FUSED_TRAIN_CONFIGS if c.name not in configs)
    return configs


class Skip(Exception):
    """A configuration that cannot run here; `status` is 'skipped' or 'n/a'."""

    def __init__(self, reason: str, status: str = "skipped"):
        super().__init__(reason)
        self.status = status


def liger_support(family: str):
    """(apply function, None) when the installed liger-kernel patches `family`, else (None, why)."""
    try:
        import liger_kernel
        from liger_kernel.transformers import monkey_patch
    except ImportError as e:
        return None, f"liger-kernel is not installed ({e})"
    fn = getattr(monkey_patch, f"apply_liger_kernel_to_{family}", None)
    if fn is None:
        ver = getattr(liger_kernel, "__version__", None) or _version("liger-kernel")
        return None, f"liger-kernel {ver} has no apply_liger_kernel_to_{family}"
    return fn, None


@contextlib.contextmanager
def liger_scope(family: str):
    """Restore the family's transformers modeling module on exit: Liger's apply functions replace
    module globals (apply_rotary_pos_emb, the RMSNorm and MLP classes) even when given a model
    instance, and those globals are read by every model of the family at each forward. Inside
    the scope the patches are in force (a Liger model must run inside it)."""
    import importlib
    mod = importlib.import_module(FAMILIES[family][2])
    saved = dict(vars(mod))
    try:
        yield _Patches(mod, saved)
    finally:
        now = vars(mod)
        for k in [k for k in now if k not in saved]:
            delattr(mod, k)
        for k, v in saved.items():
            if now.get(k, _MISSING) is not v:
                setattr(mod, k, v)


_MISSING = object()


class _Patches:
    """What Liger's apply function changed in a modeling module (`liger_scope` yields one):
    `taken()` after the apply call, then `reapplied(taken)` puts those globals back in force for
    a later call of the Liger model (and restores the module after it)."""

    def __init__(self, mod, saved):
        self.mod, self.saved = mod, saved

    def taken(self) -> dict:
        return {k: v for k, v in vars(self.mod).items() if self.saved.get(k, _MISSING) is not v}

    @contextlib.contextmanager
    def reapplied(self, patches: dict):
        now = vars(self.mod)
        before = {k: now.get(k, _MISSING) for k in patches}
        for k, v in patches.items():
            setattr(self.mod, k, v)
        try:
            yield
        finally:
            for k, v in before.items():
                if v is _MISSING:
                    delattr(self.mod, k)
                else:
                    setattr(self.mod, k, v)


def apply_liger(model, family: str, mode: str) -> dict:
    """Liger on the model instance ('full': its defaults; 'no-norm': RMSNorm off). Call inside
    liger_scope(family). Returns what was applied."""
    fn, why = liger_support(family)
    if fn is None:
        raise Skip(why, "n/a")
    import inspect
    params = inspect.signature(fn).parameters
    kw = {k: False for k in ("cross_entropy", "fused_linear_cross_entropy") if k in params}
    if mode == "no-norm":
        if "rms_norm" not in params:
            raise Skip(f"{fn.__name__} has no rms_norm option", "n/a")
        kw["rms_norm"] = False
    fn(model=model, **kw)
    return {"apply": fn.__name__, **{k: v for k, v in kw.items()}}


def optimize_fn():
    """normfuse.optimize, or None with the reason when this build has none."""
    import normfuse
    fn = getattr(normfuse, "optimize", None)
    if callable(fn):
        return fn, None
    try:
        import importlib
        mod = importlib.import_module("normfuse.optimize")
        fn = getattr(mod, "optimize", None)
        if callable(fn):
            return fn, None
    except ImportError:
        pass
    return None, "normfuse.optimize is not available in this build"


def _jsonable(x, depth=0):
    """A JSON-safe copy of an optimize report item (dataclasses, tuples, enums, tensors...)."""
    if depth > 6:
        return repr(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _jsonable(getattr(x, f.name), depth + 1) for f in dataclasses.fields(x)}
    if isinstance(x, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)


def report_dict(rep) -> dict:
    """The optimize report as JSON: its matches, refusals and text."""
    return {"matches": _jsonable(list(getattr(rep, "matches", []))),
            "refusals": _jsonable(list(getattr(rep, "refusals", []))),
            "text": str(rep)}


# ---------------------------------------------------------------------------------------------
# Compile counting
# ---------------------------------------------------------------------------------------------

class CompileCounter:
    """A torch.compile backend that counts the graphs Dynamo hands it and passes them on to
    `backend` ('inductor': compile_fx, what backend='inductor' calls; any other registered
    name). `mark()` starts a new phase; `since_mark()` counts graphs and graph breaks since."""

    def __init__(self, backend: str = "inductor", post_pass=None):
        self.backend = backend
        self.post_pass = post_pass  # an Inductor post-grad custom pass (normfuse's), or None
        self.graphs = 0
        self._mark = (0, {})
        # the graphs per mode (`mode`: set by the caller before each call of the compiled
        # model; the two modes' calls interleave, so each mode's recompiles are its own count)
        self.mode = None
        self.by_mode: dict = {}

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        self.by_mode[self.mode] = self.by_mode.get(self.mode, 0) + 1
        if self.backend == "inductor":
            from torch._inductor.compile_fx import compile_fx
            if self.post_pass is not None:  # (caches off: the pass runs, and reports, here)
                import torch._functorch.config as fconfig
                from torch._inductor import config
                with config.patch(post_grad_custom_post_pass=self.post_pass,
                                  fx_graph_cache=False), \
                        fconfig.patch(enable_autograd_cache=False):
                    return compile_fx(gm, example_inputs)
            return compile_fx(gm, example_inputs)
        import torch._dynamo
        return torch._dynamo.lookup_backend(self.backend)(gm, example_inputs)

    @staticmethod
    def _breaks() -> dict:
        from torch._dynamo.utils import counters
        return dict(counters["graph_break"])

    def mark(self) -> None:
        self._mark = (self.graphs, self._breaks())

    def since_mark(self) -> dict:
        before, now = self._mark[1], self._breaks()
        grown = {r: n - before.get(r, 0) for r, n in now.items() if n > before.get(r, 0)}
        return {"graphs": self.graphs - self._mark[0], "graph_breaks": sum(grown.values()),
                "break_reasons": [r.strip().splitlines()[0][:200] for r in grown][:8]}


# ---------------------------------------------------------------------------------------------
# One model
# ---------------------------------------------------------------------------------------------

def _version(dist: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:  # noqa: BLE001
        return None


def perturb_(model, seed: int = 1) -> None:
    """Norm weights 1 + 0.1 N(0,1), biases 0.02 N(0,1) (every 1-D parameter), in place."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() != 1:
                continue
            r = torch.randn(p.shape, generator=gen).to(p.device)
            p.copy_(1 + 0.1 * r if name.endswith("weight") else 0.02 * r)


def to_params_dtype_(model, dtype) -> None:
    """Parameters to `dtype`; buffers (RoPE's inv_freq, position ids) stay as they are, as
    transformers' own loading in a dtype leaves them."""
    for p in model.parameters():
        p.data = p.data.to(dtype)


def make_state(spec: ModelSpec, device, dtype, seed: int = 0):
    """(bf16 state_dict, input_ids, R): the model every configuration is built from, its inputs
    and the loss projection."""
    import torch
    torch.manual_seed(seed)
    model = spec.build(device)
    perturb_(model, seed + 1)
    to_params_dtype_(model, dtype)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    del model
    gen = torch.Generator().manual_seed(seed + 2)
    ids = torch.randint(0, spec.vocab(), (spec.batch, spec.seq), generator=gen).to(device)
    R = torch.randn(spec.batch, spec.seq, spec.hidden(), generator=gen).to(device)
    return sd, ids, R


def fresh(spec: ModelSpec, sd, device, dtype):
    """A new model of `spec` with the parameters of `sd` in `dtype` (fp32: the exact upcast)."""
    model = spec.build(device)
    to_params_dtype_(model, dtype)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    if missing or unexpected:
        raise RuntimeError(f"{spec.name}: state_dict mismatch: missing {missing}, unexpected "
                           f"{unexpected}")
    return model


def _forward(f, ids):
    return f(input_ids=ids).last_hidden_state


def _step(f, ids, R, params):
    for p in params:
        p.grad = None
    h = _forward(f, ids)
    (h.float() * R).sum().backward()
    return h


def reference(spec: ModelSpec, sd, ids, R, device) -> dict:
    """The fp32 copy's last hidden state (eval and train) and the two gradients."""
    import torch
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        model = fresh(spec, sd, device, torch.float32)
        model.eval()
        with torch.no_grad():
            h_eval = _forward(model, ids).detach()
        model.train()
        params = list(model.parameters())
        h_train = _step(model, ids, R, params).detach()
        named = dict(model.named_parameters())
        grads = {n: named[n].grad.detach().clone() for n in spec.grad_params}
        del model, params, named
        return {"prefill": h_eval, "train": h_train, "grads": grads}
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def _rel(a, b) -> float:
    from ..reference import rel_err
    return rel_err(a, b)


def _time(fn, device, rep_ms: int) -> float:
    """Median ms: do_bench on a GPU (warm-up children replace it by one call), else three
    wall-clock calls."""
    if str(device).startswith("cuda"):
        from triton.testing import do_bench
        return float(do_bench(fn, warmup=25, rep=rep_ms, return_mode="median"))
    ts = []
    for _ in range(3):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return sorted(ts)[1]


def _sync(device):
    import torch
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


REP_MS = {"prefill": 100, "train": 200}


def compile_for(model, cfg: Config):
    """torch.compile of `model` as configuration `cfg` compiles it outside the benchmark's
    counting backend (profile_models, bench/host_profile.py): with normfuse's Inductor pass
    for an `inductor_pass` configuration."""
    import torch
    if cfg.inductor_pass:
        from ..nn.inductor_pass import options
        return torch.compile(model, options=options())
    return torch.compile(model)


def build_configuration(spec: ModelSpec, cfg: Config, sd, device, dtype, info: dict):
    """The model of configuration `cfg` (call inside liger_scope when cfg.liger): fresh from
    `sd`, Liger applied, then normfuse.optimize; what was applied goes into `info`."""
    if not str(device).startswith("cuda"):
        if cfg.liger:  # (n/a first: Liger has no patch for the family at all)
            fn, why = liger_support(spec.family)
            if fn is None:
                raise Skip(why, "n/a")
        if cfg.graph:
            raise Skip("CUDA graphs need a CUDA GPU")
        if cfg.liger:
            raise Skip("Liger's kernels are Triton kernels: they need a CUDA GPU")
    if cfg.normfuse:
        opt, why = optimize_fn()
        if opt is None:
            raise Skip(why)
    model = fresh(spec, sd, device, dtype)
    # the compared parameters as built, before any rewrite (see _grad_of)
    info["_refs"] = {n: p for n, p in model.named_parameters() if n in spec.grad_params}
    if cfg.liger:
        info["liger"] = apply_liger(model, spec.family, cfg.liger)
    if cfg.normfuse:
        t0 = time.time()
        kw = {} if cfg.split is None else {"split_siblings": cfg.split}
        model, rep = opt(model, report=True, train=cfg.train_plan, **kw)
        info["optimize"] = report_dict(rep)
        info["optimize_s"] = round(time.time() - t0, 2)
        info["train_plan"] = getattr(rep, "train_plan", cfg.train_plan)
    return model


def _grad_of(name, refs, model):
    """The gradient of parameter `name`: of the Parameter object the fresh model had before
    Liger and normfuse rewrote it (a rewrite may keep it under another path), else of the
    parameter at that path in the rewritten model (None: neither has one)."""
    p = refs.get(name)
    if p is not None and p.grad is not None:
        return p.grad
    q = dict(model.named_parameters()).get(name)
    return q.grad if q is not None else None


def measure(spec: ModelSpec, cfg: Config, sd, ids, R, ref, device, dtype, backend="inductor",
            modes=("prefill", "train"), log=print, warm=False,
            defer: bool = False) -> tuple[list, dict]:
    """Records of configuration `cfg` for each mode, and the build info (optimize report...).
    `warm`: run each mode twice and nothing else (the warm-up children). `defer`: leave the
    timing to the caller: each record keeps its call in "_call", the context it must run in
    (the model's mode, Liger's patches) in "_scope" and a compiled configuration's counter in
    "_counter"; the compiled model is kept (no Dynamo reset; see `time_interleaved`)."""
    import torch
    info: dict = {}
    recs = []
    modes = [m for m in modes if m in cfg.modes]
    defer = defer and not warm
    # Liger's compiled configurations are timed alone, as they are built (their compiled
    # graphs end in graph breaks whose resume functions live in transformers' module globals,
    # and Liger's patches come and go around every call of an interleaving: on the H200
    # (2026-12-01) an interleaved liger+compile call failed with a NameError on its
    # `__compiled_fn_*`); the others compiled so far stay compiled (no Dynamo reset here)
    interleaving = defer
    if defer and cfg.liger and cfg.compiled:
        defer = False
    scope = liger_scope(spec.family) if cfg.liger else contextlib.nullcontext()
    with scope as patches:
        model = build_configuration(spec, cfg, sd, device, dtype, info)
        taken = patches.taken() if patches is not None else None
        refs = info.pop("_refs")
        post_pass = None
        if cfg.inductor_pass:
            from ..nn.inductor_pass import NormfusePass
            post_pass = NormfusePass()
        counter = CompileCounter(backend, post_pass) if cfg.compiled else None
        f = torch.compile(model, backend=counter) if cfg.compiled else model
        params = [p for p in model.parameters() if p.requires_grad]
        for mode in modes:
            rec = {"model": spec.name, "config": cfg.name, "mode": mode, "status": "ok",
                   "compiled": cfg.compiled}
            if cfg.train_plan:
                rec["train_plan"] = cfg.train_plan
            if mode == "prefill":
                model.eval()

                def call():
                    with torch.no_grad():
                        return _forward(f, ids)
                if cfg.graph and not warm:
                    call = graphed(call)
            else:
                model.train()

                def call():
                    return _step(f, ids, R, params)
            if counter is not None:
                call = _in_mode(counter, mode, call)
                counter.mark()
            call()
            _sync(device)
            if counter is not None:
                rec.update(counter.since_mark())
                counter.mark()
                base = counter.by_mode.get(mode, 0)  # this mode's graphs after its first call
            if post_pass is not None and post_pass.reports:  # (empty on a graph-cache hit)
                info["inductor_pass"] = "\n\n".join(str(r) for r in post_pass.reports)
                rec["pass_fused"] = sum(len(r.matched) for r in post_pass.reports)
            call()
            if warm:
                _sync(device)
                continue
            h = call()
            _sync(device)
            rec["err"] = _rel(h, ref[mode])
            if mode == "train":
                rec["grad_errs"] = {}
                for n in spec.grad_params:
                    g = _grad_of(n, refs, model)
                    rec["grad_errs"][n] = _rel(g, ref["grads"][n]) if g is not None else None
            del h
            if defer:
                rec["_call"] = call
                rec["_scope"] = functools.partial(_deferred_scope, model, mode == "train",
                                                  patches, taken)
                if counter is not None:  # recompiles: counted after the interleaved calls
                    rec["_counter"] = (counter, mode, base)
                recs.append(rec)
                log(f"  {spec.name:12s} {cfg.name:24s} {mode:7s} (timed interleaved)  err "
                    f"{rec['err']:.2e}" + (f"  graphs {rec['graphs']} breaks "
                                            f"{rec['graph_breaks']}" if counter else ""))
                continue
            rec["ms"] = _time(call, device, REP_MS[mode])
            if interleaving:
                rec["timed"] = "alone"
            if counter is not None:
                rec["recompiles"] = counter.by_mode.get(mode, 0) - base
            recs.append(rec)
            log(f"  {spec.name:12s} {cfg.name:24s} {mode:7s} {rec['ms']:9.3f} ms  err "
                f"{rec['err']:.2e}" + (f"  graphs {rec['graphs']} breaks {rec['graph_breaks']} "
                                        f"recompiles {rec['recompiles']}" if counter else ""))
        for p in params:
            p.grad = None
        if not defer:  # (deferred calls hold f, model and params)
            del f, model, params, refs
    if cfg.compiled and not defer and not interleaving:  # (else after the interleaved calls)
        import torch._dynamo
        torch._dynamo.reset()
    return recs, info


def _in_mode(counter: CompileCounter, mode: str, call):
    """`call` telling `counter` which mode's graphs it compiles."""
    def run():
        counter.mode = mode
        return call()
    return run


def warm_on_side_stream(fn, n: int = 2) -> None:
    """`fn()` n times on a side stream, then the current stream waits for it: torch's rule
    before capturing `fn` in a CUDA graph (normfuse's kernels are compiled and planned
    outside the capture)."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(n):
            fn()
    torch.cuda.current_stream().wait_stream(s)


def graphed(call, warmups: int = 2):
    """`call` (a prefill forward) captured once in a CUDA graph: a call replays it and returns
    the captured output tensor (overwritten by every replay). Warmed up on a side stream first
    (`warm_on_side_stream`)."""
    import torch
    warm_on_side_stream(call, warmups)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = call()

    def replay():
        g.replay()
        return out
    replay.graph = g
    return replay


@contextlib.contextmanager
def _deferred_scope(model, training: bool, patches, taken):
    """What a deferred call runs in: the model in its mode (train / eval), Liger's patches in
    force for a Liger configuration."""
    model.train(training)
    with patches.reapplied(taken) if taken is not None else contextlib.nullcontext():
        yield


def run_model(spec: ModelSpec, configs=CONFIG_NAMES, device="cuda", backend="inductor",
              modes=("prefill", "train"), log=print,
              interleave: bool | None = None) -> tuple[list, dict]:
    """Every configuration of one model: (records, per-model info). With `interleave` (the
    default on a GPU) the configurations are timed at the end, interleaved call by call
    (`time_interleaved`, INTERLEAVED_CALLS); without (the CPU default) each as it is
    measured."""
    if interleave is None:
        interleave = str(device).startswith("cuda")
    import torch
    dtype = torch.bfloat16
    t0 = time.time()
    sd, ids, R = make_state(spec, device, dtype)
    ref = reference(spec, sd, ids, R, device)
    minfo = {"model": spec.name, "family": spec.family, "dims": spec.dims, "batch": spec.batch,
             "seq": spec.seq, "tokens": spec.tokens, "grad_params": list(spec.grad_params),
             "params": int(sum(v.numel() for k, v in sd.items() if v.is_floating_point())),
             "configs": {}}
    log(f"== {spec.name}: {spec.family}, {spec.tokens} tokens ({spec.batch} x {spec.seq}), "
        f"{minfo['params'] / 1e6:.1f}M parameters ==")
    records = []
    for name in configs:
        cfg = _config(name)
        cmodes = [m for m in modes if m in cfg.modes]
        if not cmodes:
            continue
        try:
            recs, info = measure(spec, cfg, sd, ids, R, ref, device, dtype, backend, cmodes, log,
                                 defer=interleave)
        except Skip as e:
            recs, info = [{"model": spec.name, "config": cfg.name, "mode": m, "status": e.status,
                           "reason": str(e), "compiled": cfg.compiled} for m in cmodes], {}
            log(f"  {spec.name:12s} {cfg.name:24s} {e.status}: {e}")
        except Exception as e:  # noqa: BLE001 - one configuration's failure is a record
            tb = traceback.format_exc()
            recs = [{"model": spec.name, "config": cfg.name, "mode": m, "status": "error",
                     "reason": f"{type(e).__name__}: {e}"[:500], "traceback": tb[-3000:],
                     "compiled": cfg.compiled} for m in cmodes]
            info = {}
            log(f"  {spec.name:12s} {cfg.name:24s} ERROR {type(e).__name__}: {e}")
            if str(device).startswith("cuda"):
                torch.cuda.synchronize()
            if cfg.compiled and not interleave:  # (interleaving: the others stay compiled)
                import torch._dynamo
                torch._dynamo.reset()
        if str(device).startswith("cuda"):
            torch.cuda.empty_cache()
        records.extend(recs)
        if info:
            minfo["configs"][cfg.name] = info
    time_interleaved(records, device, log)
    if interleave and any(r.get("compiled") for r in records):
        import torch._dynamo
        torch._dynamo.reset()
    _ratios(records)
    minfo["seconds"] = round(time.time() - t0, 1)
    return records, minfo


# Configurations are timed call by call, interleaved: on the H200 machine the host's speed
# drifts by up to 2x within a minute and jitters from call to call
# (bench/results/2026-12-01/session5: Llama's stock eager forward 6.5 ms of host time for 60
# forwards, then 3.5 ms; BERT's eager prefill measured 2.6-4.5 ms in five do_bench rounds of the
# same model; GPT-2's compiled normfuse prefill 3.4-4.9 ms in three runs), and the eager models
# (and compiled graphs that call Python ops) are host-bound in a slow phase. So every
# configuration of a model is built, compiled and checked first (compiled ones kept: no Dynamo
# reset until the model is done), then each runs one call in turn, INTERLEAVED_CALLS[mode]
# times (each round in its own seeded order: no configuration always runs after the same
# neighbour), each call synchronized before and after and timed with
# the host clock (its wall time:
# the host's launches and the GPU's work until the last kernel ends); ms is the median,
# `calls_ms` the quartiles. Recompiles of a compiled configuration are counted over those calls.
INTERLEAVED_CALLS = {"prefill": 60, "train": 20}
GC_OFF_IN_CALLS = True  # the garbage collector runs between the rounds only
# Calls per configuration's turn (`--burst`): 1 (the default) times each call alone, between two
# syncs, after another configuration's call; N > 1 runs N calls back to back per turn (a sync
# before the first and after the last) and records their mean: a host-bound configuration is
# then timed as a process that runs only it would run it (its own code and objects warm, the
# host's launches overlapping the GPU's work of the call before). Both are reported as measured;
# the burst form answers whether a host-bound configuration's ratio comes from the interleaving.
BURST = 1


def time_interleaved(records, device, log=print) -> None:
    """Time the records `measure(defer=True)` left untimed, interleaved call by call (see
    INTERLEAVED_CALLS)."""
    pending = [r for r in records if "_call" in r]
    if not pending:
        return
    times = {id(r): [] for r in pending}
    hosts = {id(r): [] for r in pending}
    n = max(INTERLEAVED_CALLS[r["mode"]] for r in pending)
    failed = []
    order = random.Random(0)  # seeded: the same orders every run
    last = None
    was = gc.isenabled()
    # Python's cyclic garbage collector runs between the rounds, not in a timed call: a
    # collection (ms over a model's objects) lands in whichever call crosses the threshold, a
    # configuration at random (GC_OFF_IN_CALLS). What exists before the rounds is collected
    # once and frozen (a full collection over torch's and transformers' objects takes ~0.25 s
    # on the CPU machine; then each round's collection scans only what the calls made)
    gc.collect()
    gc.freeze()
    try:
        for i in range(n):
            gc.collect()
            if GC_OFF_IN_CALLS:
                gc.disable()
            last = _round(i, pending, order, last, times, hosts, failed, device, log)
    finally:
        gc.unfreeze()
        if was:
            gc.enable()
    for r in failed:
        for k in ("_call", "_scope", "_counter"):
            r.pop(k, None)
    for r in pending:
        del r["_call"], r["_scope"]
        counted = r.pop("_counter", None)
        if counted is not None:
            counter, mode, base = counted
            r["recompiles"] = counter.by_mode.get(mode, 0) - base
        ts = sorted(times[id(r)])
        r["ms"] = statistics.median(ts)
        q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [ts[0]] * 3
        r["calls_ms"] = {"n": len(ts), "q1": round(q[0], 4), "median": round(q[1], 4),
                         "q3": round(q[2], 4)}
        # the host's share: a median near ms means the call is host-bound (the GPU waited)
        r["host_ms"] = statistics.median(hosts[id(r)])
        log(f"  {r['model']:12s} {r['config']:24s} {r['mode']:7s} {r['ms']:9.3f} ms  (median of "
            f"{len(ts)} interleaved calls, quartiles {r['calls_ms']['q1']:.3f} - "
            f"{r['calls_ms']['q3']:.3f})" + (f"  recompiles {r['recompiles']}"
                                            if "recompiles" in r else ""))


def _round(i, pending, order, last, times, hosts, failed, device, log):
    """Round i of `time_interleaved`: each pending configuration's call once (BURST calls back
    to back), in a shuffled order (no configuration always runs after the same neighbour), none
    twice in a row across a round's boundary; `times` gets each turn's wall ms, `hosts` its host
    ms (until the last call returned, before the sync), per call. Returns the round's last
    record."""
    burst = max(1, int(BURST))
    turn = list(pending)
    order.shuffle(turn)
    if len(turn) > 1 and turn[0] is last:
        turn[0], turn[1] = turn[1], turn[0]
    if turn:
        last = turn[-1]
    for r in turn:
        if i >= INTERLEAVED_CALLS[r["mode"]]:
            continue
        try:
            with r["_scope"]():
                _sync(device)
                t0 = time.perf_counter()
                for _ in range(burst):
                    r["_call"]()
                t1 = time.perf_counter()
                _sync(device)
        except Exception as e:  # noqa: BLE001 - one configuration's failure is a record
            r.update(status="error", reason=f"interleaved call {i}: {type(e).__name__}: "
                     f"{e}"[:500], traceback=traceback.format_exc()[-3000:])
            log(f"  {r['model']:12s} {r['config']:24s} {r['mode']:7s} ERROR in interleaved "
                f"call {i}: {type(e).__name__}: {e}"[:300])
            pending.remove(r)
            failed.append(r)
            continue
        times[id(r)].append((time.perf_counter() - t0) * 1e3 / burst)
        hosts[id(r)].append((t1 - t0) * 1e3 / burst)
    return last


def _ratios(records) -> None:
    """ratio (ms over the best stock configuration's ms) and err_ratio (over stock's err) per
    record of one model, in place."""
    by = {(r["config"], r["mode"]): r for r in records}
    for r in records:
        if r["status"] != "ok":
            continue
        mode = r["mode"]
        stock_ms = [by[(c, mode)]["ms"] for c in STOCK
                    if (c, mode) in by and by[(c, mode)]["status"] == "ok"]
        if stock_ms:
            r["ratio"] = r["ms"] / min(stock_ms)
        s = by.get(("stock", mode))
        if s is None or s["status"] != "ok":
            continue
        ratios = [_div(r["err"], s["err"])]
        if mode == "train":
            for n, e in (r.get("grad_errs") or {}).items():
                se = (s.get("grad_errs") or {}).get(n)
                ratios.append(_div(e, se) if e is not None else math.inf)
        r["err_ratio"] = max(ratios)


def _div(a, b) -> float:
    if a is None or b is None or not math.isfinite(a):
        return math.inf
    return a / b if b > 0 else (1.0 if a == 0 else math.inf)


# ---------------------------------------------------------------------------------------------
# The run, its summary, table and plot
# ---------------------------------------------------------------------------------------------

def environment(device) -> dict:
    import torch
    import triton
    import normfuse
    env = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "device": str(device), "torch": torch.__version__, "triton": triton.__version__,
           "transformers": _version("transformers"), "liger_kernel": _version("liger-kernel"),
           "normfuse": normfuse.__version__, "python": sys.version.split()[0], "dtype": "bf16"}
    if str(device).startswith("cuda"):
        env["gpu"] = torch.cuda.get_device_name()
    else:
        env["gpu"] = None
        env["note"] = "CPU run: the times are not speeds (the code path only)"
    return env


def run(specs, configs=CONFIG_NAMES, device="cuda", backend="inductor", log=print,
        on_model=None) -> dict:
    """Every model of `specs` (ModelSpec or names) in every configuration: the models.json data.
    `on_model(data)` is called after each model (the benchmark writes its files then, so that a
    run stopped part-way leaves the models it finished)."""
    from .warm import configure_torch
    configure_torch()
    specs = [SPECS[s] if isinstance(s, str) else s for s in specs]
    data = {**environment(device), "backend": backend, "configs": list(configs), "records": [],
            "models": [], "timing": {"interleaved_calls": dict(INTERLEAVED_CALLS),
                                     "gc_off_in_calls": GC_OFF_IN_CALLS, "burst": BURST}}
    for spec in specs:
        recs, minfo = run_model(spec, configs, device, backend, log=log)
        data["records"].extend(recs)
        data["models"].append(minfo)
        data["summary"] = summarize(data["records"])
        if on_model is not None:
            on_model(data)
    data["summary"] = summarize(data["records"])
    return data


def _ok(records, model, config, mode):
    for r in records:
        if (r["model"], r["config"], r["mode"], r["status"]) == (model, config, mode, "ok"):
            return r
    return None


def _breaks_added(records, r) -> int:
    """The graph breaks a compiled normfuse configuration has beyond the same configuration
    without normfuse (normfuse+liger+compile against liger+compile: Liger's own kernels break
    Dynamo's graph; stock+compile otherwise), at least 0; its own count when that one is absent."""
    base = "liger+compile" if "liger" in r["config"] else "stock+compile"
    b = _ok(records, r["model"], base, r["mode"])
    own = r.get("graph_breaks")
    if own is None:
        return 1
    return max(0, own - (b.get("graph_breaks") or 0)) if b is not None else own


def summarize(records) -> list[dict]:
    """Per model and mode: the best stock and the best normfuse configuration, the speed-up, and
    the goals (faster than the best stock; every normfuse configuration's err within ERR_GOAL x
    stock's; 0 recompiles in the compiled normfuse configurations and no graph break added by
    normfuse: `_breaks_added`, since Liger's kernels break the graph with or without normfuse)."""
    out = []
    models = list(dict.fromkeys(r["model"] for r in records))
    for m in models:
        for mode in ("prefill", "train"):
            stock = [r for c in STOCK if (r := _ok(records, m, c, mode))]
            nf = [r for c in NORMFUSE if (r := _ok(records, m, c, mode))]
            lg = [r for c in LIGER if (r := _ok(records, m, c, mode))]
            if not stock and not nf:
                continue
            row = {"model": m, "mode": mode}
            if stock:
                b = min(_same_basis(stock), key=lambda r: r["ms"])
                row.update(best_stock=b["config"], best_stock_ms=b["ms"])
            if nf:
                bn = min(_same_basis(nf), key=lambda r: r["ms"])
                row.update(best_normfuse=bn["config"], best_normfuse_ms=bn["ms"])
            if stock and nf and b.get("timed") == bn.get("timed"):  # (one timing basis)
                row["speedup"] = row["best_stock_ms"] / row["best_normfuse_ms"]
                row["faster"] = row["speedup"] > 1.0
            if lg and nf:
                b = min(_same_basis(lg), key=lambda r: r["ms"])
                if b.get("timed") == bn.get("timed"):  # (one timing basis)
                    row.update(best_liger=b["config"], best_liger_ms=b["ms"],
                               vs_liger=b["ms"] / bn["ms"])
            # normfuse configurations that raised: they fail the goals they would have checked
            failed = [r["config"] for r in records if r["model"] == m and r["mode"] == mode
                      and r["config"] in NORMFUSE and r.get("status") == "error"]
            if failed:
                row["errors"] = failed
            if nf or failed:
                errs = [r.get("err_ratio", math.inf) for r in nf]
                row["worst_err_ratio"] = max(errs) if errs else None
                row["numerics_ok"] = bool(errs) and max(errs) <= ERR_GOAL and not failed
                comp = [r for r in nf if r.get("compiled")]
                comp_failed = [c for c in failed if _config(c).compiled]
                if comp or comp_failed:
                    row["compile_clean"] = not comp_failed and all(
                        _breaks_added(records, r) == 0 and r.get("recompiles") == 0
                        for r in comp)
            out.append(row)
    return out


def _same_basis(recs) -> list:
    """The records timed interleaved, where there are any (Liger's compiled configurations are
    timed alone, by do_bench without a sync per call: their figures are not comparable with the
    interleaved medians), else all."""
    return [r for r in recs if r.get("timed") != "alone"] or list(recs)


def _f(v, fmt):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def table(data) -> str:
    """models.md: per model, one row per configuration (both modes side by side), then the
    goals."""
    recs = data["records"]
    lines = []
    for minfo in data.get("models", []) or [{"model": m} for m in
                                            dict.fromkeys(r["model"] for r in recs)]:
        m = minfo["model"]
        if "family" in minfo:
            lines.append(f"\n## {m} ({minfo['family']}, {minfo['tokens']} tokens = {minfo['batch']} x "
                         f"{minfo['seq']}, {minfo['params'] / 1e6:.1f}M parameters)\n")
        else:
            lines.append(f"\n## {m}\n")
        lines.append("| configuration | prefill ms | vs best stock | err (x stock) | train ms | "
                     "vs best stock | err (x stock) | graphs / breaks / recompiles | note |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
        configs = [c for c in data.get("configs", CONFIG_NAMES)
                   if any(r["model"] == m and r["config"] == c for r in recs)]
        for c in configs:
            cells, comp, notes = [], [], []
            plan = next((r.get("train_plan") for r in recs if (r["model"], r["config"]) == (m, c)
                         and r.get("train_plan")), None)
            if plan:
                notes.append(f"train plan: {plan}")
            fused = next((r.get("pass_fused") for r in recs if (r["model"], r["config"]) == (m, c)
                          and r.get("pass_fused") is not None), None)
            if fused is not None:
                notes.append(f"inductor pass: {fused} norm(s) fused")
            for mode in ("prefill", "train"):
                r = next((r for r in recs if (r["model"], r["config"], r["mode"]) == (m, c, mode)),
                         None)
                if r is None:
                    cells += ["", "", ""]
                    continue
                if r["status"] != "ok":
                    cells += [r["status"], "", ""]
                    note = f"{r['status']}: {r.get('reason', '')}"
                    if note not in notes:
                        notes.append(note)
                    continue
                if r.get("timed") == "alone" and "timed alone" not in notes:
                    notes.append("timed alone")
                err = f"{_f(r.get('err'), '.2e')} ({_f(r.get('err_ratio'), '.2f')})"
                ms = _f(r["ms"], ".3f") + (f" (host {r['host_ms']:.3f})" if "host_ms" in r
                                           else "")
                cells += [ms, _f(r.get("ratio"), ".3f"), err]
                if r.get("compiled"):
                    comp.append(f"{r.get('graphs', '-')} / {r.get('graph_breaks', '-')} / "
                                f"{r.get('recompiles', '-')}")
            note = "; ".join(n.replace("|", "/").replace("\n", " ")[:160] for n in notes)
            lines.append(f"| {c} | " + " | ".join(cells) + f" | {' ; '.join(comp)} | {note} |")
    summ = data.get("summary") or summarize(recs)
    if summ:
        lines.append("\n## Goals\n")
        lines.append("| model | mode | best stock | ms | best normfuse | ms | speed-up | "
                     "faster | worst err ratio (<= 1.1) | 0 breaks added, 0 recompiles | "
                     "best Liger | ms | vs Liger |")
        lines.append("|---|---|---|---:|---|---:|---:|---|---:|---|---|---:|---:|")
        yn = {True: "yes", False: "NO", None: "-"}
        for s in summ:
            lines.append(f"| {s['model']} | {s['mode']} | {s.get('best_stock', '-')} | "
                         f"{_f(s.get('best_stock_ms'), '.3f')} | {s.get('best_normfuse', '-')} | "
                         f"{_f(s.get('best_normfuse_ms'), '.3f')} | {_f(s.get('speedup'), '.3f')} | "
                         f"{yn[s.get('faster')]} | {_f(s.get('worst_err_ratio'), '.2f')} "
                         f"({yn[s.get('numerics_ok')]}) | {yn[s.get('compile_clean')]} | "
                         f"{s.get('best_liger', '-')} | {_f(s.get('best_liger_ms'), '.3f')} | "
                         f"{_f(s.get('vs_liger'), '.3f')} |")
        if any(r.get("timed") == "alone" for r in recs):
            lines.append("\nConfigurations marked 'timed alone' (Liger's compiled ones) were timed "
                         "by do_bench as they were built, without a sync per call; the best-of "
                         "columns compare the interleaved medians only (a speed-up or a Liger "
                         "ratio across the two bases is left out: '-').")
        for s in summ:
            if s.get("errors"):
                lines.append(f"\n{s['model']} {s['mode']}: normfuse configuration(s) that raised "
                             f"(the goals count them as missed): {', '.join(s['errors'])}.")
    reports = [(mi["model"], c, i["optimize"]) for mi in data.get("models", [])
               for c, i in mi.get("configs", {}).items() if "optimize" in i]
    if reports:
        lines.append("\n## normfuse.optimize reports\n")
        for m, c, rep in reports:
            lines.append(f"{m}, {c}: {len(rep['matches'])} match(es), {len(rep['refusals'])} "
                         "refusal(s)\n")
            lines.append("```\n" + rep["text"].strip() + "\n```\n")
    passes = [(mi["model"], c, i["inductor_pass"]) for mi in data.get("models", [])
              for c, i in mi.get("configs", {}).items() if "inductor_pass" in i]
    if passes:
        lines.append("\n## normfuse Inductor pass reports (per compiled graph)\n")
        for m, c, text in passes:
            lines.append(f"{m}, {c}:\n")
            lines.append("```\n" + text.strip() + "\n```\n")
    return "\n".join(lines).lstrip("\n") + "\n"


def plot(data, path: str) -> bool:
    """Grouped bars: per model, each configuration's speed-up over the best stock configuration
    (best stock ms / ms; above 1 is faster), prefill and train side by side. False without
    matplotlib or without a record to draw."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    # (the interleaved medians only: a configuration timed alone, by another method, is not
    # comparable with the best stock figure its ratio divides)
    recs = [r for r in data["records"] if r["status"] == "ok" and r.get("ratio")
            and r.get("timed") != "alone"]
    if not recs:
        return False
    models = list(dict.fromkeys(r["model"] for r in data["records"]))
    configs = [c for c in data.get("configs", CONFIG_NAMES) if any(r["config"] == c for r in recs)]
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 2.2 * len(models) * 2), 4.5), squeeze=False)
    width = 0.8 / max(1, len(configs))
    cmap = plt.get_cmap("tab20" if len(configs) > 10 else "tab10")
    handles = {}
    for ax, mode in zip(axes[0], ("prefill", "train")):
        for j, c in enumerate(configs):
            xs, ys = [], []
            for i, m in enumerate(models):
                r = next((r for r in recs if (r["model"], r["config"], r["mode"]) == (m, c, mode)),
                         None)
                if r is not None:
                    xs.append(i - 0.4 + width * (j + 0.5))
                    ys.append(1.0 / r["ratio"])
            bars = ax.bar(xs, ys, width, label=c, color=cmap(j % cmap.N),
                          hatch="//" if "compile" in c else None, edgecolor="white")
            if xs:
                handles.setdefault(c, bars)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels(models)
        ax.set_title(f"{mode}: speed-up over the best stock configuration")
        ax.set_ylabel("best stock ms / ms")
    # (one legend over both panels: the prefill-only configurations have no bar in train's)
    axes[0][1].legend([handles[c] for c in configs if c in handles],
                      [c for c in configs if c in handles], fontsize=7, loc="lower right")
    where = data.get("gpu") or data.get("device", "")
    fig.suptitle(f"normfuse model benchmark, {where}, {str(data.get('date', ''))[:10]}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write(data, out: str, log=print) -> dict:
    """models.json, models.md, models.png under `out`; returns the paths written."""
    os.makedirs(out, exist_ok=True)
    paths = {"json": os.path.join(out, "models.json"), "md": os.path.join(out, "models.md"),
             "png": os.path.join(out, "models.png")}
    with open(paths["json"], "w") as f:
        json.dump(data, f, indent=1, default=str)
    burst = int((data.get("timing") or {}).get("burst") or 1)
    head = (f"# Model benchmark ({data.get('gpu') or data.get('device')}, {data.get('date', '')[:10]}, "
            f"torch {data.get('torch')}, transformers {data.get('transformers')}, liger-kernel "
            f"{data.get('liger_kernel')}, bf16)\n\n"
            "ms: median per call (interleaved calls, synchronized around each"
            + (f" turn of {burst} calls back to back, per call" if burst > 1 else "") +
            "; host: the "
            "median time until the call returned, before the sync: near ms, the call is "
            "host-bound; the garbage "
            "collector runs between rounds" + ("" if (data.get("timing") or {}).get(
                "gc_off_in_calls") else " and in the calls") + "); vs best stock: ms / "
            "min(stock, stock+compile, stock+graph); err: relative "
            "Frobenius error of the last hidden state against the fp32 copy of the stock model "
            "(train: the largest ratio over the hidden state and two gradients), in brackets "
            "over the stock bf16 model's; compiled configurations: graphs and graph breaks on the "
            "first call, recompiles after it.\n\n")
    with open(paths["md"], "w") as f:
        f.write(head + table(data))
    if not plot(data, paths["png"]):
        del paths["png"]
        log("models: no models.png (matplotlib is not installed, or no record to draw)")
    log("models: wrote " + ", ".join(paths.values()))
    return paths


# ---------------------------------------------------------------------------------------------
# Warm-up children and the command line
# ---------------------------------------------------------------------------------------------

def runnable(spec: ModelSpec, cfg: Config) -> str | None:
    """Why configuration `cfg` cannot run for `spec` on a GPU here (None: it can)."""
    if cfg.liger:
        fn, why = liger_support(spec.family)
        if fn is None:
            return why
    if cfg.normfuse:
        fn, why = optimize_fn()
        if fn is None:
            return why
    return None


def warm_jobs(models, configs=CONFIG_NAMES) -> list:
    """The warm-up children (normfuse.repro.warm --target models): each builds the model with
    random weights and runs a configuration's calls (the first two of each mode) once, so that
    Triton's, normfuse's and Inductor's on-disk caches hold what the timing process compiles.
    One child per compiled configuration and mode (the graphs compile in parallel), one per
    eager configuration that has kernels to compile (Liger's, normfuse's); none for stock eager,
    for a CUDA-graph configuration (its eager twin compiles the same kernels) or for a
    configuration that cannot run here."""
    from .warm import child_argv
    jobs = []
    for m in models:
        spec = SPECS[m]
        for name in configs:
            cfg = _config(name)
            if runnable(spec, cfg) is not None or name == "stock" or cfg.graph:
                continue
            for mode in (cfg.modes if cfg.compiled else ("both",)):
                jobs.append((f"models {m} {name} {mode}", child_argv("models", (m, name, mode))))
    # the longest first: compiled train steps, then compiled prefills, then the eager ones
    order = {"train": 0, "prefill": 1, "both": 2}
    return sorted(jobs, key=lambda j: order[j[0].rsplit(" ", 1)[1]])


def warm_one(model: str, config: str, mode: str = "both", device="cuda",
             backend="inductor") -> None:
    """The warm-up child's work (see warm_jobs)."""
    import torch
    spec = SPECS[model]
    sd, ids, R = make_state(spec, device, torch.bfloat16)
    modes = ("prefill", "train") if mode == "both" else (mode,)
    try:
        measure(spec, _config(config), sd, ids, R, None, device, torch.bfloat16, backend, modes,
                log=lambda *_: None, warm=True)
    except Skip:
        pass


def warm_procs_default(n_jobs: int) -> int:
    """Children at once for the model warm-up: each compiles on one thread, so all cores but
    two (at least none on a 2-core machine)."""
    return max(0, min(n_jobs, (os.cpu_count() or 2) - 2))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m normfuse.repro.models",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MAIN_MODELS),
                    help=f"comma-separated, of {', '.join(SPECS)} (default: {','.join(MAIN_MODELS)})")
    ap.add_argument("--configs", default=",".join(CONFIG_NAMES))
    ap.add_argument("--train-plan", choices=TRAIN_PLANS, default="composed",
                    help="fused: also the normfuse configurations with optimize(train='fused') "
                         "(train step only); default: only optimize's default plan, composed")
    ap.add_argument("--out", required=True)
    ap.add_argument("--warm-procs", type=int, default=None,
                    help="warm-up children at once (default: the cores less two)")
    ap.add_argument("--warm-timeout", type=float, default=240.0)
    ap.add_argument("--plot-only", metavar="MODELS_JSON", help="redraw models.md/png from a json")
    ap.add_argument("--each", action="store_true",
                    help="also " + ", ".join(c.name for c in EACH_CONFIGS) + ": Liger-composed "
                         "prefill with optimize(split_siblings=False), against the default split "
                         "form")
    ap.add_argument("--burst", type=int, default=1,
                    help="calls per configuration's turn, back to back (their mean is recorded; "
                         "default 1: each call alone between two syncs)")
    args = ap.parse_args(argv)
    global BURST
    if args.burst < 1:
        ap.error("--burst must be at least 1")
    BURST = args.burst
    if args.plot_only:
        with open(args.plot_only) as f:
            data = json.load(f)
        data["summary"] = summarize(data["records"])  # (the goals as this version states them)
        write(data, args.out)
        return 0
    configs = args.configs.split(",")
    if args.each:
        configs += [c.name for c in EACH_CONFIGS if c.name not in configs]
    return bench(args.models.split(","), args.out, configs=configs,
                 warm_procs=args.warm_procs, warm_timeout=args.warm_timeout,
                 train_plan=args.train_plan)


def bench(models, out, configs=CONFIG_NAMES, warm_procs=None, warm_timeout=240.0,
          log=print, train_plan: str = "composed") -> int:
    """The GPU benchmark: warm-up children, then every model timed in this process.
    train_plan="fused" adds the fused training plan's configurations (configs_for)."""
    import torch
    configs = configs_for(train_plan, configs)
    for c in configs:
        _config(c)  # an unknown name fails here, before anything runs
    unknown = [m for m in models if m not in SPECS]
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; known: {', '.join(SPECS)}")
    try:
        import transformers  # noqa: F401
    except ImportError as e:
        log(f"models: transformers is not installed ({e}): skipped (scripts/setup.sh installs it)")
        return 0
    if not torch.cuda.is_available():
        log("models: no CUDA GPU: nothing to measure (the CPU test runs the code path)")
        return 0
    from . import warm
    warm.configure_torch()
    jobs = warm_jobs(models, configs)
    procs = warm_procs_default(len(jobs)) if warm_procs is None else warm_procs
    t0 = time.time()
    if procs > 0:
        log(f"models: warm-up, {len(jobs)} children, {procs} at once")
        res = warm.parallel(jobs, procs, warm_timeout, log=log)
    else:
        res = None
    def partial(d):
        d["warm_up"] = res
        d["seconds"] = round(time.time() - t0, 1)
        write(d, out, log=lambda *_: None)

    data = run(models, configs, "cuda", log=log, on_model=partial)
    partial(data)
    log(f"models: {len(models)} model(s) in {data['seconds']} s")
    write(data, out, log=log)
    log(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
