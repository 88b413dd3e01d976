"""Pre-norm training step with the statistics deferred to the backward (PRENORM_STATS_IN_BWD) vs row_stats in the forward."""
import json, os, torch
from triton.testing import do_bench
import normfuse.ops as ops
from normfuse.ops import training as tr
out = {}
for (M, K, N) in [(262144, 512, 512), (262144, 1024, 1024), (262144, 2048, 2048), (8192, 2048, 5632)]:
    for ln in (False, True):
        g = torch.Generator(device="cuda").manual_seed(0)
        r = lambda *s, sc=1.0, sh=0.0: (torch.randn(*s, generator=g, device="cuda") * sc + sh).to(torch.bfloat16)
        x = r(M, K, sh=2.0 if ln else 0.0).requires_grad_()
        nw = r(K, sc=0.1, sh=1.0).requires_grad_()
        nb = r(K, sc=0.1).requires_grad_() if ln else None
        w = r(N, K, sc=K ** -0.5).requires_grad_()
        dy = r(M, N)
        leaves = [t for t in (x, nw, nb, w) if t is not None]
        f = (lambda: ops.layernorm_linear(x, nw, nb, w)) if ln else (lambda: ops.rmsnorm_linear(x, nw, w))
        res, grads = {}, {}
        for defer in (False, True, False, True):
            tr.PRENORM_STATS_IN_BWD = defer
            def step():
                for t in leaves: t.grad = None
                f().backward(dy)
            step(); torch.cuda.synchronize()
            grads[defer] = [t.grad.float().clone() for t in leaves]
            res.setdefault(str(defer), []).append(do_bench(step, warmup=5, rep=40, return_mode="median"))
        diff = max(float((a - b).norm() / b.norm().clamp_min(1e-30)) for a, b in zip(grads[True], grads[False]))
        key = f"{'ln' if ln else 'rms'} {M}x{K}x{N}"
        t0, t1 = min(res["False"]), min(res["True"])
        out[key] = dict(saved_ms=res["False"], deferred_ms=res["True"], deferred_over_saved=t1 / t0, max_rel_grad_diff=diff)
        print(key, json.dumps(out[key]), flush=True)
        del x, w, nw, nb, leaves, grads
        torch.cuda.empty_cache()
json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "stats_ab.json"), "w"), indent=1)
