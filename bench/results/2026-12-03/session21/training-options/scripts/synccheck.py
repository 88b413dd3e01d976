"""Does a pre-norm training step synchronize the host? sync debug mode 'error' around steps."""
import time, torch, normfuse.ops as ops
M, K, N = 262144, 512, 512
g = torch.Generator(device="cuda").manual_seed(0)
r = lambda *s, sc=1.0, sh=0.0: (torch.randn(*s, generator=g, device="cuda") * sc + sh).to(torch.bfloat16)
x, nw, w = r(M, K).requires_grad_(), r(K, sc=0.1, sh=1.0).requires_grad_(), r(N, K, sc=K ** -0.5).requires_grad_()
dy = r(M, N)
def step():
    for t in (x, nw, w): t.grad = None
    ops.rmsnorm_linear(x, nw, w).backward(dy)
for _ in range(3): step()
torch.cuda.synchronize()
torch.cuda.set_sync_debug_mode("error")
try:
    step(); print("no host sync in a step")
except RuntimeError as e:
    import traceback; traceback.print_exc()
torch.cuda.set_sync_debug_mode(0)
torch.cuda.synchronize()
# host time per phase: forward call, backward call (no sync), then the device
for _ in range(3):
    for t in (x, nw, w): t.grad = None
    t0 = time.perf_counter(); y = ops.rmsnorm_linear(x, nw, w); t1 = time.perf_counter()
    y.backward(dy); t2 = time.perf_counter(); torch.cuda.synchronize(); t3 = time.perf_counter()
    print(f"host fwd {1e3*(t1-t0):.3f} ms, bwd {1e3*(t2-t1):.3f} ms, wait {1e3*(t3-t2):.3f} ms")
# a torch op's host cost on this machine, for scale
a = torch.empty(1, device="cuda")
t0 = time.perf_counter()
for _ in range(1000): a.add_(1)
t1 = time.perf_counter(); torch.cuda.synchronize()
print(f"torch add_ launch: {1e3*(t1-t0):.3f} us")
