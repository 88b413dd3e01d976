"""CPU, fp64 truth: the pre-norm backward's row sums taken from dY and the forward's output y
instead of from the dX GEMM's output (issue 21's exchange-free dX epilogue), against eager's.

    python3 bench/dx_rowdot_numerics.py

For y = (xhat g + beta) W^T + b, the dX GEMM gives dn = dY W and the norm backward needs, per row,
c1 = mean_k(dn_k g_k xhat_k) (and for LayerNorm c2 = mean_k(dn_k g_k)). Since n = xhat g + beta:

    sum_k dn_k g_k xhat_k = sum_k dn_k (n_k - beta_k) = sum_j dY_j (y_j - b_j - (W beta)_j)
    sum_k dn_k g_k        = sum_j dY_j (W g)_j

so both come from the row of dY (which the dX GEMM streams through its main loop anyway) and
the row of y: no reduction over the dX GEMM's output, no exchange between the tiles of a row;
the epilogue is dx = rstd (dn g - c2 - xhat c1), elementwise. Printed: the relative error of dx
against fp64 for (eager: the row sums from the bf16-rounded dn; identity: from bf16 dY and y,
dn rounded; fused: the identity with dn unrounded, as a GEMM epilogue would read it), with
bf16 inputs, for RMSNorm and LayerNorm at a few model shapes.
"""
from __future__ import annotations

import torch


def errors(M: int, K: int, N: int, ln: bool, seed: int = 1) -> tuple[float, float, float]:
    gen = torch.Generator().manual_seed(seed)
    f64 = torch.float64

    def r(*s, scale=1.0):
        return torch.randn(*s, generator=gen, dtype=f64) * scale
    x, g, W, b, dY = r(M, K), 1 + r(K, scale=0.1), r(N, K, scale=K ** -0.5), r(N, scale=0.1), \
        r(M, N)
    beta = r(K, scale=0.1) if ln else torch.zeros(K, dtype=f64)
    eps = 1e-6

    def norm(t):
        tc = t - t.mean(-1, keepdim=True) if ln else t
        rstd = (tc.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
        return tc * rstd, rstd
    xr = x.clone().requires_grad_(True)
    xh, _ = norm(xr)
    ((((xh * g + beta) @ W.T + b)) * dY).sum().backward()
    truth = xr.grad

    def bf(t):
        return t.bfloat16().double()
    xb, gb, betab, Wb, bb, dYb = map(bf, (x, g, beta, W, b, dY))
    xh, rstd = norm(xb)
    n = bf(xh * gb + betab)
    y = bf(n @ Wb.T + bb)            # the forward's output as saved
    dn = bf(dYb @ Wb)                # the dX GEMM's output, rounded
    dxh = dn * gb

    def dx(d, c1, c2):
        return bf(rstd * (d - c2 - xh * c1)) if ln else bf(rstd * (d - xh * c1))
    eager = dx(dxh, (dxh * xh).mean(-1, keepdim=True), dxh.mean(-1, keepdim=True))
    c1 = (dYb * (y - bb - Wb @ betab)).sum(-1, keepdim=True) / K
    c2 = (dYb @ (Wb @ gb)).unsqueeze(-1) / K
    ident = dx(dxh, c1, c2)
    fused = dx((dYb @ Wb) * gb, c1, c2)

    def e(a):
        return ((a - truth).norm() / truth.norm()).item()
    return e(eager), e(ident), e(fused)


def main() -> int:
    print("norm  M x K x N           eager     identity  identity, dn unrounded")
    for ln in (False, True):
        for M, K, N in ((512, 1024, 1024), (256, 2048, 5632), (512, 768, 2304)):
            ea, idn, fu = errors(M, K, N, ln)
            print(f"{'LN ' if ln else 'RMS'}   {M:4d} x {K:4d} x {N:4d}   {ea:.2e}  {idn:.2e}  {fu:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
