"""How fast the unfused forward's norms can be at the attention grid's shapes: torch.compile
dynamic=True (what bench_attention uses, compiled once for every cell), dynamic=False (per
shape), eager, Liger's LayerNorm / RMSNorm."""
import json, sys, torch
import torch.nn.functional as F
from triton.testing import do_bench
torch._dynamo.config.automatic_dynamic_shapes = False
torch._dynamo.config.cache_size_limit = 64
b = lambda f: float(do_bench(f, warmup=10, rep=50, return_mode="median"))
shapes = [(394693, 256), (379087, 384), (367137, 512), (1109723, 512)]
res = []
lnd = torch.compile(lambda x2: F.layer_norm(x2, x2.shape[-1:], eps=1e-5), dynamic=True)
postd = torch.compile(lambda o2, l2, x2: F.rms_norm(o2 + l2, o2.shape[-1:], eps=1e-5) + x2, dynamic=True)
try:
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction
except Exception as e:
    LigerLayerNormFunction = None; print("liger", e)
for order in (0, 1):
  for T, W in (shapes if order == 0 else shapes[::-1]):
    x = torch.randn(T, W, device="cuda", dtype=torch.bfloat16)
    o = torch.randn_like(x); l = torch.randn_like(x)
    w = torch.ones(W, device="cuda", dtype=torch.bfloat16); bb = torch.zeros_like(w)
    lns = torch.compile(lambda x2: F.layer_norm(x2, x2.shape[-1:], eps=1e-5), dynamic=False)
    posts = torch.compile(lambda o2, l2, x2: F.rms_norm(o2 + l2, o2.shape[-1:], eps=1e-5) + x2, dynamic=False)
    r = dict(order=order, T=T, W=W, ln_dyn=b(lambda: lnd(x)), ln_static=b(lambda: lns(x)),
             ln_eager=b(lambda: F.layer_norm(x, (W,), eps=1e-5)),
             post_dyn=b(lambda: postd(o, l, x)), post_static=b(lambda: posts(o, l, x)))
    if LigerLayerNormFunction is not None:
        try:
            r["ln_liger"] = b(lambda: LigerLayerNormFunction.apply(x, w, bb, 1e-5))
        except Exception as e:
            r["ln_liger_err"] = str(e)[:200]
    r["ln_GBps_static"] = 2 * 2 * T * W / r["ln_static"] / 1e6
    print(json.dumps(r), flush=True)
    res.append(r)
json.dump(res, open(sys.argv[1], "w"), indent=1)
