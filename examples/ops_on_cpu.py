"""The fused ops and modules on CPU tensors: the same functions with reference math, trainable.

    PYTHONPATH=python python3 examples/ops_on_cpu.py

On a Hopper GPU with bf16/fp16 tensors the same calls run the fused kernels; anywhere else they
compute the same function in plain torch (fp32 inside) and warn once with FallbackWarning.
"""
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from normfuse.nn import LinearRMSNorm, RMSNormLinear
from normfuse.ops import FallbackWarning, linear_rmsnorm, rmsnorm_linear

torch.manual_seed(0)
T, K, N = 32, 64, 96
x = torch.randn(2, T, K, requires_grad=True)
g = (1 + 0.1 * torch.randn(K)).requires_grad_()
w = (torch.randn(N, K) / K ** 0.5).requires_grad_()

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", FallbackWarning)
    y = rmsnorm_linear(x, g, w, eps=1e-6)                    # y = rmsnorm(x) g @ w^T
print("fallback:", [str(c.message) for c in caught if c.category is FallbackWarning][0][:90], "...")

# the same function and the same gradients as plain torch
ref = F.linear(F.rms_norm(x, (K,), g, 1e-6), w)
dy = torch.randn_like(y)
grads = torch.autograd.grad(y, (x, g, w), dy)
grads_ref = torch.autograd.grad(ref, (x, g, w), dy)
print(f"rmsnorm_linear: max |y - torch| = {(y - ref).abs().max().item():.1e}; gradients of x, g, W "
      f"within {max((a - b).abs().max().item() for a, b in zip(grads, grads_ref)):.1e}")

# siblings reading one norm (q/k/v) as one call, Gemma's (1 + g) scale through offset
wq, wk, wv = (torch.randn(n, K) / K ** 0.5 for n in (64, 16, 16))
qkv = rmsnorm_linear(x, g, [wq, wk, wv], offset=1.0)
q = qkv[..., :64]
print("siblings: qkv", tuple(qkv.shape), "q matches:",
      torch.allclose(q, F.linear(F.rms_norm(x, (K,), 1 + g, 1e-6), wq), atol=1e-5))

# post-norm with a residual: z = rmsnorm(x @ w2^T + r) g2
w2, g2, r = torch.randn(K, K) / K ** 0.5, 1 + 0.1 * torch.randn(K), torch.randn(2, T, K)
z = linear_rmsnorm(x, w2, g2, eps=1e-6, residual=r)
print("linear_rmsnorm matches:", torch.allclose(z, F.rms_norm(x @ w2.T + r, (K,), g2, 1e-6), atol=1e-5))

# modules: built from a torch pair, same parameters, and they train
norm, lin = nn.RMSNorm(K, eps=1e-6), nn.Linear(K, N, bias=False)
fused = RMSNormLinear.from_modules(norm, lin)
post = LinearRMSNorm.from_modules(nn.Linear(K, K, bias=False), nn.RMSNorm(K, eps=1e-6))
loss = fused(post(x)).square().mean()
loss.backward()
params = list(fused.parameters()) + list(post.parameters())
print("modules: RMSNormLinear matches its torch pair:",
      torch.allclose(fused(x), lin(norm(x)), atol=1e-5),
      f"| every parameter has a gradient: {all(p.grad is not None for p in params)}")

# FlashNormAttention (jagged rows, no projections): out = RMSNorm(attend(LN(x)) + LN(x)) + x
from normfuse.nn import FlashNormAttention  # noqa: E402
from normfuse.reference_attention import flash_norm_attention_ref  # noqa: E402
H, D, L = 2, 16, 8
lens = [5, 0, 11]
xa = torch.randn(sum(lens), H, D, requires_grad=True)
ka, va = torch.randn(len(lens), L, H, D) / D ** 0.5, torch.randn(len(lens), L, H, D)
offs = torch.tensor([0, 5, 5, 16])
attn = FlashNormAttention(H, D, activation="softmax", ln_affine=True, rms_affine=True)
out = attn(xa, ka, va, offs)
out.square().mean().backward()
print("FlashNormAttention matches its definition:",
      torch.allclose(out, flash_norm_attention_ref(xa, ka, va, offs, activation="softmax",
                                                   dtype=torch.float32), atol=1e-5),
      f"| x and the norms' weights have gradients: "
      f"{all(t.grad is not None for t in (xa, attn.ln_weight, attn.rms_weight))}")
