"""Tiny models for the normfuse.optimize tests: transformers families (hidden 64, 2 layers) and
hand-written blocks with one norm spelled in each usual way."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

H = 64       # hidden size of every tiny model
VOCAB = 128


def tiny_family(name: str, seed: int = 0, hidden: int = H, layers: int = 2) -> nn.Module:
    """A transformers model of family `name` (2 layers unless told), norm weights randomized
    (so that g, Gemma's (1 + w) and LayerNorm's beta all matter), fp32, eval mode."""
    import transformers as T
    torch.manual_seed(seed)
    common = dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                  num_attention_heads=4, vocab_size=VOCAB)
    if name == "llama":
        m = T.LlamaForCausalLM(T.LlamaConfig(num_key_value_heads=2, **common))
    elif name == "qwen2":
        m = T.Qwen2ForCausalLM(T.Qwen2Config(num_key_value_heads=2, **common))
    elif name == "gemma":
        m = T.GemmaForCausalLM(T.GemmaConfig(num_key_value_heads=2, head_dim=hidden // 4, **common))
    elif name == "gemma2":
        m = T.Gemma2ForCausalLM(T.Gemma2Config(num_key_value_heads=2, head_dim=hidden // 4, **common))
    elif name == "qwen3":  # q_norm / k_norm per head (over head_dim): refused
        m = T.Qwen3ForCausalLM(T.Qwen3Config(num_key_value_heads=2, head_dim=hidden // 4, **common))
    elif name == "olmo2":  # q_norm / k_norm over the projections' whole width, post-norms
        m = T.Olmo2ForCausalLM(T.Olmo2Config(num_key_value_heads=2, pad_token_id=0, bos_token_id=0,
                                             eos_token_id=0, **common))
    elif name == "gpt2":
        m = T.GPT2LMHeadModel(T.GPT2Config(n_embd=hidden, n_layer=layers, n_head=4, vocab_size=VOCAB,
                                           n_positions=64, bos_token_id=0, eos_token_id=0))
    elif name == "bert":
        m = T.BertModel(T.BertConfig(**common))
    else:
        raise ValueError(name)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if p.dim() == 1 and ("norm" in n.lower() or ".ln_" in n):
                p.add_(torch.randn(p.shape, generator=g) * 0.3)
    return m.eval()


def no_dropout(m: nn.Module) -> nn.Module:
    """Every dropout off (modules, float attributes and config fields named *dropout*), so that
    training-mode outputs are deterministic."""
    for mod in m.modules():
        if isinstance(mod, nn.Dropout):
            mod.p = 0.0
        for k, v in list(vars(mod).items()):
            if "dropout" in k and isinstance(v, float):
                setattr(mod, k, 0.0)
    cfg = getattr(m, "config", None)
    for k in (dir(cfg) if cfg is not None else ()):
        if "dropout" in k and isinstance(getattr(cfg, k, None), float):
            setattr(cfg, k, 0.0)
    return m


def logits(out) -> torch.Tensor:
    return out["logits"] if "logits" in out else out["last_hidden_state"]


# ---------------------------------------------------------------------------------------------
# Norm spellings (each computes y over the last dim of x; K = H)
# ---------------------------------------------------------------------------------------------

class FRMS(nn.Module):
    """F.rms_norm."""

    def __init__(self, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))
        self.eps = eps

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


class ManualRMS(nn.Module):
    """x * rsqrt(mean(x^2) + eps) * w, in the input dtype."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(H))
        self.eps = eps

    def forward(self, x):
        return self.scale * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class UpcastRMS(nn.Module):
    """fp32 upcast, then the cast back before the weight (LlamaRMSNorm's order)."""

    def __init__(self, eps=1e-6):
        super().__init__()
        self.g = nn.Parameter(torch.ones(H))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.square().sum(-1, keepdim=True) / h.shape[-1] + self.eps)
        return self.g * h.to(dt)


class GemmaStyle(nn.Module):
    """(1 + w), the weight upcast too, the cast back last."""

    def __init__(self, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(H))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * (1.0 + self.weight.float())).type_as(x)


class ManualLN(nn.Module):
    """(x - mu) / sqrt(mean((x - mu)^2) + eps) * w + b."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.w = nn.Parameter(torch.ones(H))
        self.b = nn.Parameter(torch.zeros(H))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + self.eps) * self.w + self.b


class VarMeanLN(nn.Module):
    """torch.var_mean(correction=0), rsqrt."""

    def __init__(self, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))
        self.bias = nn.Parameter(torch.zeros(H))
        self.eps = eps

    def forward(self, x):
        var, mu = torch.var_mean(x, -1, keepdim=True, correction=0)
        return (x - mu) * torch.rsqrt(var + self.eps) * self.weight + self.bias


class NoAffineRMS(nn.Module):
    """No weight at all."""

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class EpsOutside(nn.Module):
    """x / (sqrt(mean(x^2)) + eps): not the kernels' function."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))

    def forward(self, x):
        return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 1e-6) * self.weight


SPELLINGS = {
    # name: (factory, kind, eps, weight, offset, bias)
    "F.rms_norm": (FRMS, "rms", 1e-6, "weight", 0.0, None),
    "nn.RMSNorm": (lambda: nn.RMSNorm(H, eps=1e-5), "rms", 1e-5, "weight", 0.0, None),
    "manual rsqrt": (ManualRMS, "rms", 1e-5, "scale", 0.0, None),
    "fp32 upcast, sum/K": (UpcastRMS, "rms", 1e-6, "g", 0.0, None),
    "Gemma (1 + w)": (GemmaStyle, "rms", 1e-6, "weight", 1.0, None),
    "nn.LayerNorm": (lambda: nn.LayerNorm(H, eps=1e-5), "ln", 1e-5, "weight", 0.0, "bias"),
    "LayerNorm manual": (ManualLN, "ln", 1e-5, "w", 0.0, "b"),
    "LayerNorm var_mean": (VarMeanLN, "ln", 1e-5, "weight", 0.0, "bias"),
    "no affine": (NoAffineRMS, "rms", 1e-6, None, 0.0, None),
    "LayerNorm no affine": (lambda: nn.LayerNorm(H, elementwise_affine=False), "ln", 1e-5, None,
                            0.0, None),
}


def randomize(module: nn.Module, seed: int = 0) -> nn.Module:
    """Random parameters: vectors around 1 (norm scales, biases), matrices ~ 1/sqrt(K)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            r = torch.randn(p.shape, generator=g)
            p.copy_(1.0 + 0.5 * r if p.dim() == 1 else r / p.shape[-1] ** 0.5)
    return module


# ---------------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------------

class QKVBlock(nn.Module):
    """Pre-norm attention-like block: norm -> q, k, v (k/v narrower, v without bias) -> a
    non-linear mix -> o, plus the residual of the norm's input."""

    def __init__(self, norm: nn.Module):
        super().__init__()
        self.norm = norm
        self.q = nn.Linear(H, H)
        self.k = nn.Linear(H, H // 2)
        self.v = nn.Linear(H, H // 2, bias=False)
        self.o = nn.Linear(H, H)

    def forward(self, x):
        h = self.norm(x)
        q, k, v = self.q(h), self.k(h), self.v(h)
        lead = h.shape[:-1]
        a = torch.tanh(q) * torch.cat([k, v], -1).sigmoid()
        return x + self.o(a.reshape(*lead, -1))


class Stack(nn.Module):
    """Two QKVBlocks and a final norm -> head read through a row view (the last token)."""

    def __init__(self, make_norm):
        super().__init__()
        self.blocks = nn.ModuleList([QKVBlock(make_norm()) for _ in range(2)])
        self.final = make_norm()
        self.head = nn.Linear(H, 32, bias=False)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(self.final(x)[:, -3:])


class ResidualUse(nn.Module):
    """The norm's output also feeds a residual add: the norm must stay."""

    def __init__(self):
        super().__init__()
        self.norm = nn.RMSNorm(H, eps=1e-6)
        self.up = nn.Linear(H, H)

    def forward(self, x):
        h = self.norm(x)
        return h + self.up(h)


class PerHeadNorm(nn.Module):
    """Qwen3's q_norm: an RMSNorm over each head's slice of a GEMM's output."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(H, H)
        self.norm = nn.RMSNorm(H // 4, eps=1e-6)

    def forward(self, x):
        return self.norm(self.q(x).view(*x.shape[:-1], 4, H // 4)).flatten(-2)


class RowViewNorm(nn.Module):
    """A norm over a row view of a GEMM's output (its rows flattened), not the output itself."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(H, H)
        self.norm = nn.RMSNorm(H, eps=1e-6)

    def forward(self, x):
        return self.norm(self.q(x).reshape(-1, H))


class EpsOutsideBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = EpsOutside()
        self.proj = nn.Linear(H, H)

    def forward(self, x):
        return self.proj(self.norm(x))


class SharedLinear(nn.Module):
    """One linear reads the norm's output and, separately, the raw input."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(H)
        self.proj = nn.Linear(H, H)

    def forward(self, x):
        return self.proj(self.norm(x)) + self.proj(x)


class PostNorm(nn.Module):
    """BERT's output block: LayerNorm(dropout(dense(h)) + residual)."""

    def __init__(self, rms: bool = False, p: float = 0.1):
        super().__init__()
        self.dense = nn.Linear(2 * H, H)
        self.dropout = nn.Dropout(p)
        self.norm = GemmaStyle() if rms else nn.LayerNorm(H, eps=1e-6)

    def forward(self, h, residual):
        return self.norm(self.dropout(self.dense(h)) + residual)


class PostNormBias(nn.Module):
    """norm(linear(h) + bias + residual) with the bias a separate parameter."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(2 * H, H, bias=False)
        self.bias = nn.Parameter(torch.zeros(H))
        self.norm = nn.LayerNorm(H)

    def forward(self, h, residual):
        return self.norm(residual + (self.dense(h) + self.bias))


class PostNormStack(nn.Module):
    def __init__(self, rms: bool = False):
        super().__init__()
        self.up = nn.Linear(H, 2 * H)
        self.out = PostNorm(rms)
        self.out2 = PostNormBias()

    def forward(self, x):
        y = self.out(torch.relu(self.up(x)), x)
        return self.out2(torch.relu(self.up(y)), y)


class Conv1DPair(nn.Module):
    """GPT-2 style: one norm read by two transformers Conv1D (weight [in, out])."""

    def __init__(self):
        super().__init__()
        from transformers.pytorch_utils import Conv1D
        self.ln = nn.LayerNorm(H)
        self.a = Conv1D(2 * H, H)
        self.b = Conv1D(H, H)

    def forward(self, x):
        h = self.ln(x)
        return torch.cat([torch.relu(self.a(h)), self.b(h)], -1)


class MatmulLinear(nn.Linear):
    """Its own forward, the same function as nn.Linear's (Falcon's FalconLinear)."""

    def forward(self, x):
        return x @ self.weight.T + self.bias


class ScaledLinear(nn.Linear):
    """Its own forward, not a plain linear."""

    def forward(self, x):
        return super().forward(x) * 2.0


class SubclassConsumers(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1 = nn.RMSNorm(H, eps=1e-6)
        self.a = MatmulLinear(H, H)
        self.n2 = nn.RMSNorm(H, eps=1e-6)
        self.b = ScaledLinear(H, H)

    def forward(self, x):
        return self.b(self.n2(self.a(self.n1(x))))


class PostBlock(nn.Module):
    """x -> LayerNorm(dense(relu(up(x))) + x), dropout p = 0 (fused in training too)."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(H, 2 * H)
        self.out = PostNorm(p=0.0)

    def forward(self, x):
        return self.out(torch.relu(self.up(x)), x)


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.o = nn.Linear(2 * H, H)

    def forward(self, h):
        return self.o(torch.relu(h))


class SandwichBlock(nn.Module):
    """Gemma2's post-attention norm: x + norm(inner(up(x))), the GEMM inside the child."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(H, 2 * H)
        self.inner = Inner()
        self.norm = GemmaStyle()

    def forward(self, x):
        return x + self.norm(self.inner(self.up(x)))


class Mixed(nn.Module):
    """A pre-norm block (q/k/v as one GEMM), a post-norm block, a sandwich-norm block and a
    head behind a final norm."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([QKVBlock(ManualRMS()), PostBlock(), SandwichBlock()])
        self.final = GemmaStyle()
        self.head = nn.Linear(H, 32, bias=False)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(self.final(x)[:, -3:])


class NoNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(H, H)
        self.b = nn.Linear(H, H)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class _ContiguousRope(torch.autograd.Function):
    """Stands in for Liger's RoPE: transposes q back to [B, T, H, D] and makes it contiguous
    (a no-op on a GEMM's own output, a copy on a column slice of a wider one)."""

    @staticmethod
    def forward(ctx, q):
        q = q.transpose(1, 2).contiguous()
        return q * 2.0

    @staticmethod
    def backward(ctx, g):
        return (g * 2.0).transpose(1, 2)


class ContiguousQKV(nn.Module):
    """norm -> q, k, v; q goes through a contiguous-making function (Liger's RoPE pattern)."""

    def __init__(self, norm: nn.Module):
        super().__init__()
        self.norm = norm
        self.q = nn.Linear(H, H)
        self.k = nn.Linear(H, H)
        self.v = nn.Linear(H, H)

    def forward(self, x):
        h = self.norm(x)
        B, T = x.shape[:2]
        q = self.q(h).view(B, T, 2, H // 2).transpose(1, 2)
        q = _ContiguousRope.apply(q).reshape(B, T, H)
        return x + torch.tanh(q) * self.k(h) + self.v(h)
