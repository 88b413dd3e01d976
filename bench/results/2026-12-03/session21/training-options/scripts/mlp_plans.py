"""The block's backward plans (regrouped vs composed): fwd+bwd and the norm1 part, H200."""
import json, os, sys, torch
from triton.testing import do_bench
from normfuse.ops import postnorm_mlp
from normfuse.ops import training as tr
out = {}
for (M, D, H) in [(262144, 1024, 1024), (262144, 512, 2048), (262144, 2048, 512)]:
    for ln in (False,):
        g = torch.Generator(device="cuda").manual_seed(0)
        r = lambda *s, sc=1.0, sh=0.0: (torch.randn(*s, generator=g, device="cuda") * sc + sh).to(torch.bfloat16)
        x = r(M, D).requires_grad_()
        ps = [r(H, D, sc=D ** -0.5), r(H, sc=0.1, sh=1.0), r(H, sc=0.1) if ln else None, None,
              r(D, H, sc=H ** -0.5), r(D, sc=0.1, sh=1.0), r(D, sc=0.1) if ln else None, None]
        ps = [p.requires_grad_() if p is not None else None for p in ps]
        dy = r(M, D)
        leaves = [x] + [p for p in ps if p is not None]
        res = {}
        grads = {}
        for plan in ("regrouped", "composed"):
            tr.POSTNORM_MLP_BWD_PLAN = plan
            def step():
                for t in leaves: t.grad = None
                postnorm_mlp(x, *ps, 1e-5, layernorm=ln).backward(dy)
            step(); torch.cuda.synchronize()
            grads[plan] = [t.grad.float().clone() for t in leaves]
            res[plan] = do_bench(step, warmup=5, rep=40, return_mode="median")
        diff = max(float((a - b).norm() / b.norm().clamp_min(1e-30)) for a, b in zip(grads["composed"], grads["regrouped"]))
        key = f"{'ln' if ln else 'rms'} {M}x{D}x{H}"
        out[key] = dict(res, composed_over_regrouped=res["composed"] / res["regrouped"], max_rel_grad_diff=diff)
        print(key, json.dumps(out[key]), flush=True)
        del x, ps, leaves, grads
        torch.cuda.empty_cache()
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "mlp_plans.json"), "w"), indent=1)
