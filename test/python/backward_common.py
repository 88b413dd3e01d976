"""Shared pieces of the training tests (test_backward_kernels.py, test_backward_ops.py,
test_backward_training.py): fp64 references of the norm backward, the interpreted stand-ins of
the ops' launchers (`interpreted`, `cpu_training` fixtures: the same TTIR the GPU would run,
through the passes, run by normfuse's interpreter), and the GPU tests' gradient helpers."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("numpy", reason="normfuse.testing needs numpy")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import normfuse  # noqa: E402
from normfuse.kernels.backward import dw_norm_naive, norm_backward_naive, row_stats  # noqa: E402
from normfuse.kernels.postnorm_gemm import (linear_layernorm_train_naive,  # noqa: E402
                                            linear_rmsnorm_train_naive)
from normfuse.reference import linear_norm_ref, rel_err  # noqa: E402
from normfuse.testing import check_pass_numerics  # noqa: E402
from normfuse.testing.interpreter import cluster_dims, run_ir  # noqa: E402
from normfuse.testing.numerics import launch_signature  # noqa: E402
from normfuse.ops.prenorm_linear import _ensure_allocator as _REAL_ENSURE_ALLOCATOR  # noqa: E402

EPS = 1e-5
REF_TOL = 1.5e-2  # bf16 kernels (interpreted) vs fp64, Frobenius


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _stats64(x, is_ln):
    x = x.double()
    if is_ln:
        mean = x.mean(1)
        rstd = torch.rsqrt(((x - mean[:, None]) ** 2).mean(1) + EPS)
    else:
        mean = torch.zeros(x.shape[0], dtype=torch.float64)
        rstd = torch.rsqrt((x * x).mean(1) + EPS)
    return rstd, mean


def _norm_bwd_ref(du, x, g, beta, is_ln, act):
    """fp64: dx, dg, dbeta of n = norm(x) g + beta, given du = dL/d(act(n)) (act: SiLU or none)."""
    x = x.double().requires_grad_(True)
    gg = g.double().requires_grad_(True)
    bb = beta.double().requires_grad_(True) if beta is not None else None
    if is_ln:
        n = F.layer_norm(x, (x.shape[1],), gg, bb, EPS)
    else:
        n = x * torch.rsqrt((x * x).mean(1, keepdim=True) + EPS) * gg
    out = F.silu(n) if act else n
    out.backward(du.double())
    return x.grad, gg.grad, (bb.grad if bb is not None else None)


# ---------------------------------------------------------------------------------------------
# The dX-with-norm-backward kernel: naive vs fused (the passes) vs fp64
# ---------------------------------------------------------------------------------------------

M, R = 70, 40  # ragged: 3 row blocks of 32 (the last 6 rows), R over 3 tiles of 16 (ragged)
# (N = 96 and 128 with BLOCK_N = 32: 3 and 4 tiles; N = 64 in one tile)


def _dx_case(N, is_ln, act, gemm, dres, seed=0, mean=3.0, r=R):
    R = r
    gen = _gen(seed)
    dy = torch.randn(M, R if gemm else N, generator=gen).bfloat16()
    w = (torch.randn(R, N, generator=gen) * 0.2).bfloat16()
    x = (torch.randn(M, N, generator=gen) + mean).bfloat16()  # rows with |mean| >> std for LN
    rstd, mu = _stats64(x, is_ln)
    g = (0.5 + torch.rand(N, generator=gen)).bfloat16()
    b = torch.randn(N, generator=gen).bfloat16()
    r = torch.randn(M, N, generator=gen).bfloat16()
    nb = -(-M // 32)
    args = [dy, w, x, rstd.float(), mu.float(), g, b, r, torch.full((M, N), float("nan")).bfloat16(),
            torch.full((nb, N), float("nan")), torch.full((nb, N), float("nan")),
            torch.full((M, N), float("nan")).bfloat16(), M, R, dy.shape[1], N, N, N, N, N]
    du = (dy.double() @ w.double()) if gemm else dy.double()
    dx, dg, db = _norm_bwd_ref(du, x, g, b if (act and is_ln) else None, is_ln, act)
    if dres:
        dx = dx + r.double()
    if not is_ln or not act:
        db = du.sum(0) if not act else db
    xn = (x.double() - mu[:, None]) * rstd[:, None] * g.double()
    if is_ln:
        xn = xn + b.double()
    return args, (dx, dg, db, xn)


# ---------------------------------------------------------------------------------------------
# The backward custom ops, end to end on the CPU with their launches interpreted
# ---------------------------------------------------------------------------------------------

class _Interpreted:
    """Stands in for a `normfuse.jit` launcher: compile for sm_90 through the same passes, run the
    TTIR in the interpreter (CPU tensors, written in place). Records the remarks in `log`, and
    each launch as (kernel name, grid, constexprs) in `launches` when given."""

    def __init__(self, fn, passes, log, launches=None):
        self.fn, self.passes, self.log, self.launches = fn, passes, log, launches

    def warmup(self, *args, **kwargs):
        return None  # (the occupancy query it serves is replaced in `interpreted`)

    def __getitem__(self, grid):
        def launch(*args, num_warps=4, num_stages=3, **consts):
            fn = self.fn
            for p in fn.params:
                if p.is_constexpr and p.name not in consts and p.has_default:
                    consts[p.name] = p.default
            sig, attrs = launch_signature(fn, args, consts)
            ck = normfuse.compile(fn, signature=sig, constexprs=consts, attrs=attrs,
                                  passes=self.passes, num_warps=num_warps, num_stages=num_stages)
            ir = ck.asm.get("normfuse", ck.asm["ttir"])
            self.log.extend(str(r) for r in ck.remarks)
            if self.launches is not None:
                self.launches.append((fn.__name__, tuple(grid), dict(consts)))
            _need_allocator_like_triton(ir)
            # a compiled kernel's own text: parsed without the crash preflight (`trusted`)
            run_ir(ir, list(args), grid, num_ctas=cluster_dims(ir, trusted=True), trusted=True)
        return launch


_SCRATCH_LAUNCHES: list = []  # the IR of every interpreted launch that needed global scratch


def _need_allocator_like_triton(ir: str) -> None:
    """What Triton's launcher does for a kernel with global scratch (device-side TMA descriptors,
    cluster-reduce{exchange=global}): take the allocator of the *calling* context (a ContextVar)
    and raise if there is none. The interpreter itself needs no allocator, so without this the
    CPU path could not see a launch that would fail on the GPU for lack of one."""
    if "tt.make_tensor_descriptor" not in ir and "global_scratch" not in ir:
        return
    _SCRATCH_LAUNCHES.append(ir)
    from triton.runtime import _allocation
    if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
        _allocation.NullAllocator()(0, 0, None)  # raises Triton's own RuntimeError


@pytest.fixture
def interpreted(monkeypatch):
    from normfuse.ops import inference, training
    from normfuse.kernels import backward
    log: list[str] = []
    # the ops run their fused path for CPU bf16 tensors (not the reference path)
    monkeypatch.setattr(inference, "fused_unavailable", lambda device: None)
    monkeypatch.setattr(training, "_launcher",
                        lambda name, passes="default": _Interpreted(getattr(backward, name),
                                                                    passes, log))
    monkeypatch.setattr(training, "_sms", lambda device: 4)
    # the no-GEMM norm backward (NOGEMM_NORM_BWD "persistent"): the standalone norm's kernel
    from normfuse.kernels import norm as norm_kernels
    from normfuse.ops import norm as norm_ops
    monkeypatch.setattr(norm_ops, "_launcher",
                        lambda name: _Interpreted(getattr(norm_kernels, name), (), log))
    monkeypatch.setattr(norm_ops, "sm_count", lambda device: 2)
    monkeypatch.setattr(norm_ops, "programs_per_sm", lambda compiled: 2)
    monkeypatch.setattr(norm_ops, "_PER_SM", {})
    monkeypatch.setattr("normfuse.ops.prenorm_linear._ensure_allocator", lambda: None)
    monkeypatch.setattr(training, "select_backward_config",
                        lambda N, gemm=True: dict(BLOCK_M=32, BLOCK_N=32, BLOCK_R=16, num_warps=4, num_stages=2))
    monkeypatch.setattr(training, "DW_CONFIG",
                        dict(BLOCK_N=32, BLOCK_K=32, BLOCK_M=32, num_warps=4, num_stages=2))
    return log


def _errs(got, ref64, eager):
    return rel_err(got, ref64), rel_err(eager, ref64)


def _check(name, got, ref, eager):
    e, e_eager = _errs(got, ref, eager)
    # within 1.5x eager PyTorch's error in the same dtype (bf16 on the CPU here)
    assert e <= 1.5 * e_eager + 1e-4, f"{name}: {e:.3e} vs eager {e_eager:.3e}"


def mlp_reference(x, w1, g1, beta1, b1, w2, g2, beta2, b2, eps, is_ln):
    """The block in plain torch: norm2(silu(norm1(x W1^T + b1)) W2^T + b2 + x)."""
    def norm(h, g, b):
        return (F.layer_norm(h, (h.shape[-1],), g, b, eps) if is_ln else
                F.rms_norm(h, (h.shape[-1],), g, eps))
    a = F.silu(norm(F.linear(x, w1, b1), g1, beta1))
    return norm(F.linear(a, w2, b2) + x, g2, beta2)


def _mlp_params(gen, D, H, is_ln, dtype=torch.bfloat16, device="cpu"):
    def r(*s, scale=1.0, shift=0.0):
        return (torch.randn(*s, generator=gen) * scale + shift).to(device=device, dtype=dtype)
    return dict(w1=r(H, D, scale=D ** -0.5), g1=r(H, scale=0.2, shift=1.0),
                beta1=r(H, scale=0.1) if is_ln else None, b1=r(H, scale=0.1),
                w2=r(D, H, scale=H ** -0.5), g2=r(D, scale=0.2, shift=1.0),
                beta2=r(D, scale=0.1) if is_ln else None, b2=r(D, scale=0.1))


# ---------------------------------------------------------------------------------------------
# GPU: gradients of every input vs fp64, within 1.5x eager's error in the same dtype
# ---------------------------------------------------------------------------------------------

def _grads(fn, tensors, dy):
    """Gradients of fn(*tensors) . dy w.r.t. every tensor (None entries skipped)."""
    ts = [t.detach().clone().requires_grad_(True) if t is not None else None for t in tensors]
    out = fn(*ts)
    out.backward(dy.to(out.dtype))
    return out.detach(), [t.grad if t is not None else None for t in ts]


def _compare_grads(names, got, ref, eager, what):
    for n, a, r, e in zip(names, got, ref, eager):
        if r is None:
            assert a is None, f"{what}: {n} got a gradient"
            continue
        assert a is not None, f"{what}: no gradient for {n}"
        assert torch.isfinite(a).all(), f"{what}: non-finite gradient for {n}"
        err, err_e = rel_err(a, r), rel_err(e, r)
        assert err <= 1.5 * err_e + 1e-4, f"{what}: d{n} error {err:.3e} vs eager {err_e:.3e}"


def _dev(*shape, dtype, gen, scale=1.0, shift=0.0):
    return (torch.randn(*shape, generator=gen, device="cuda") * scale + shift).to(dtype)


BF, HF = torch.bfloat16, torch.float16
# ragged shapes in both dtypes, one large one (16-CTA clusters in backward) in bf16
PRE_CASES = [((1000, 520, 300), BF), ((1000, 520, 300), HF), ((77, 64, 96), HF),
             ((4096, 1024, 2048), BF)]
POST_CASES = [((1000, 300, 520), BF), ((1000, 300, 520), HF), ((77, 96, 64), HF),
              ((4096, 2048, 1024), BF)]


def _case_id(c):
    return "x".join(map(str, c[0])) + ("-bf16" if c[1] is BF else "-fp16")


def _sgd_losses(m, ref, x, target, *, lr: float, steps: int):
    """The MSE losses of `steps` SGD steps of PostNormMLP `m` (its fused forward) and of `ref`
    (the same weights, its eager `reference` forward): (ours, eager)."""
    losses = []
    for mod, fwd in ((m, m.forward), (ref, ref.reference)):
        opt = torch.optim.SGD(mod.parameters(), lr=lr)
        ls = []
        for _ in range(steps):
            opt.zero_grad()
            loss = F.mse_loss(fwd(x).float(), target.float())
            loss.backward()
            opt.step()
            ls.append(loss.item())
        losses.append(ls)
    return losses[0], losses[1]


def _check_from_modules(a, b, x0, r):
    """`from_modules(a, b)` against the torch modules: the output, then the gradients of x and of
    the Linear weight for the loss sum(y * r). A random projection r, not sum(y^2): that of a
    unit-gain norm's output is N * ms / (ms + eps), nearly constant, and its gradient is rounding
    noise on both sides."""
    from torch import nn
    from normfuse.nn import from_modules
    fused = from_modules(a, b)
    x = x0.clone().requires_grad_(True)
    xr = x0.clone().requires_grad_(True)
    y = fused(x)
    yr = b(a(xr))
    assert rel_err(y, yr) < 1e-2
    (y.float() * r).sum().backward()
    (yr.float() * r).sum().backward()
    assert rel_err(x.grad, xr.grad) < 2e-2
    assert rel_err(fused.weight.grad, (b if isinstance(b, nn.Linear) else a).weight.grad) < 2e-2


# ---------------------------------------------------------------------------------------------
# The whole training path on the CPU: the ops' forward and backward under torch.autograd, every
# launch (the fused forward kernels too) compiled for sm_90 through the passes and interpreted
# ---------------------------------------------------------------------------------------------

class _FakeCK:
    """normfuse's CompiledKernel as the ops launch it: `launch(grid, full, runtime_args)` and,
    through `.kernel[grid](*full)`, Triton's launcher (every argument, constexprs included)."""
    lowered = None

    def __init__(self, ir, n_runtime, pipeline="", remarks=()):
        self.ir, self.n_runtime, self.pipeline = ir, n_runtime, pipeline
        self.remarks = list(remarks)  # the passes' remarks of this compile

    def launch(self, grid, full, runtime_args=()):
        _need_allocator_like_triton(self.ir)
        run_ir(self.ir, list(runtime_args), tuple(grid),
               num_ctas=cluster_dims(self.ir, trusted=True), trusted=True)

    @property
    def kernel(self):
        ck = self

        class _Triton:
            name = "interpreted"
            metadata = SimpleNamespace(num_ctas=cluster_dims(ck.ir, trusted=True), shared=0)
            function = id(ck)

            def _init_handles(self):
                # no module to load; the driver's answer to normfuse.device's occupancy query
                # for a cluster kernel: clusters fit (7 at once)
                from normfuse import device
                if self.metadata.num_ctas > 1:
                    device._OCCUPANCY.setdefault((self.function, 0, self.metadata.num_ctas), 7)

            def __getitem__(self, grid):
                return lambda *full: ck.launch(grid, full, full[:ck.n_runtime])
        return _Triton()


class _FakeJIT(_Interpreted):
    """A `normfuse.jit` launcher (warmup + [grid]) whose kernels run in the interpreter."""

    def warmup(self, *args, num_warps=4, num_stages=3, **consts):
        holder = {}
        real_run = run_ir
        import normfuse.testing.interpreter as interp  # noqa: F401
        # compile exactly as _Interpreted does, but keep the IR instead of running it
        def keep(ir, a, g, num_ctas=1, trusted=False):
            return holder.setdefault("ir", ir)
        globals()["run_ir"] = keep
        before = len(self.log)
        try:
            self[(1,)](*args, num_warps=num_warps, num_stages=num_stages, **consts)
        finally:
            globals()["run_ir"] = real_run
        return _FakeCK(holder["ir"], len(args), str(self.passes), self.log[before:])


@pytest.fixture
def cpu_training(monkeypatch, interpreted):
    """The training path with CUDA-only pieces replaced: launches interpreted, 4 'SMs', no device
    check (everything else of the ops' validation runs)."""
    from normfuse.kernels import postnorm_gemm
    from normfuse.ops import inference, postnorm_linear as post, prenorm_linear as pre, training
    log = interpreted
    monkeypatch.setattr(pre, "get_launcher", lambda kind, passes="default": _FakeJIT(
        pre._kernel(kind), passes, log))
    monkeypatch.setattr(post, "get_postnorm_launcher", lambda kind, passes=None: _FakeJIT(
        post._kernel(kind), passes, log))
    monkeypatch.setattr(training, "_post_train_launcher", lambda name, passes=None: _FakeJIT(
        getattr(postnorm_gemm, name), passes or post.DEFAULT_POSTNORM_PASSES, log))
    monkeypatch.setattr(pre, "sm_count", lambda device: 4)
    monkeypatch.setattr(post, "sm_count", lambda device: 4)
    monkeypatch.setattr(training, "sm_count", lambda device: 4)
    monkeypatch.setattr(pre, "_check_hopper", lambda op, device: None)
    monkeypatch.setattr(post, "check_hopper", lambda op, device: None)
    from normfuse import device
    monkeypatch.setattr(device, "_OCCUPANCY", {})  # (the interpreted kernels' stand-in handles)
    # the training forward's launch plans are kept per geometry: none made under another test's
    # launchers or patched configs
    training._clear_train_plans()
    # the public functions take CPU bf16 tensors for the fused path
    return log


def _train_case(fn, eager, tensors, dout):
    got_out, got = _grads(fn, tensors, dout)
    ref_out, ref = _grads(eager, [t.double() if t is not None else None for t in tensors], dout)
    e_out, eag = _grads(eager, tensors, dout)
    return (got_out, ref_out, e_out), got, ref, eag


# ---------------------------------------------------------------------------------------------
# Triton's allocator is per thread (a ContextVar); autograd runs a CUDA backward on a worker thread
# ---------------------------------------------------------------------------------------------

def _in_fresh_context(fn):
    """Run fn in an empty contextvars context: Triton's allocator unset, whatever ran before."""
    import contextvars
    return contextvars.Context().run(fn)


# ---------------------------------------------------------------------------------------------
# Every N: the norm-backward kernel's cluster form is one the driver launches (issue 20)
# ---------------------------------------------------------------------------------------------

class _ClusterLauncher:
    """A stand-in `normfuse.jit` launcher of the norm-backward kernel: clustered as
    cluster-reduce would (auto, max-cluster from the pipeline); a launch of a size the stubbed
    driver does not fit fails as normfuse.device.ensure_cluster_launch does."""

    def __init__(self, passes, tiles, fits, launched):
        self.passes, self.tiles, self.fits, self.launched = passes, tiles, fits, launched

    def ctas(self):
        import re
        from normfuse.passes.cluster_reduce import cluster_ctas
        if not self.passes:
            return 1
        m = re.search(r"max-cluster=(\d+)", self.passes)
        return cluster_ctas("auto", int(m.group(1)) if m else 16, self.tiles, "")

    def warmup(self, *args, **meta):
        from types import SimpleNamespace
        md = SimpleNamespace(num_ctas=self.ctas(), shared=70000)
        return SimpleNamespace(kernel=SimpleNamespace(metadata=md, function=self.ctas()))

    def __getitem__(self, grid):
        from normfuse.device import LaunchFailure

        def run(*args, **meta):
            c = self.ctas()
            if c > 1 and not self.fits(c):
                raise LaunchFailure("kernel norm_backward_naive", f"the driver fits no cluster of {c} CTAs",
                                    num_ctas=c, fits_none=True)
            self.launched.append((self.passes, c, grid))
        return run


# N for the GPU sweep of the norm-backward kernel with the dX GEMM (128-column tiles): one per
# cluster size 2..16 (one tile per CTA), deferred forms (17 -> 9 CTAs of 2, 24 -> 12 of 2,
# 33 -> 11 of 3, 64 -> 16 of 4), ragged widths
BWD_SWEEP_N = [128 * t for t in range(2, 17)] + [2176, 3072, 4160, 8192, 1000, 1864, 3080]
