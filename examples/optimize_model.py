"""normfuse.optimize on a transformers model: find every norm next to a GEMM and fuse it.

    PYTHONPATH=python python3 examples/optimize_model.py

A tiny Llama with random weights (a real checkpoint works the same way). On a CPU the fused
modules compute with the ops' reference path, so the outputs match the original model; on an
H200 with a bf16 model they run the fused kernels.
"""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import normfuse

torch.manual_seed(0)
config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2)
model = LlamaForCausalLM(config).eval()
ids = torch.randint(0, config.vocab_size, (1, 8))
with torch.no_grad():
    before = model(ids).logits
keys = sorted(model.state_dict())

model, report = normfuse.optimize(model, report=True)   # example inputs derived for transformers
print(report)                                            # what was fused, what was refused and why

with torch.no_grad():
    after = model(ids).logits
print(f"fused {len(report.matches)} norms, refused {len(report.refusals)}; "
      f"max |logits - original| = {(after - before).abs().max().item():.1e}")
print("state_dict keys unchanged:", sorted(model.state_dict()) == keys)
