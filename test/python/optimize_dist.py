"""Train an optimized model under DDP and under FSDP2's fully_shard on 2 gloo processes (CPU)
for a few SGD steps (`run(tmpdir)`, spawned from test_optimize.py; the parameters are saved by
rank 0), and the same steps on the stock model in one process (`reference()`)."""
from __future__ import annotations

import copy
import os
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import optimize_models as om

WORLD = 2
STEPS = 3


def _batch(step: int, rank: int) -> torch.Tensor:
    return torch.randn(2, 5, om.H, generator=torch.Generator().manual_seed(100 * step + rank))


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return om.randomize(om.Mixed())


def _proj() -> torch.Tensor:
    return torch.randn(2, 3, 32, generator=torch.Generator().manual_seed(9))


def _train(rank: int, wrap: str) -> dict[str, torch.Tensor]:
    import normfuse
    model, rep = normfuse.optimize(_model(), (_batch(0, 0),), report=True)
    assert [m.side for m in rep.matches] == ["pre", "post", "post", "pre"], str(rep)
    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model)
        params = lambda: {n[len("module."):]: p.detach() for n, p in model.named_parameters()}  # noqa: E731
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (WORLD,))
        for b in model.blocks:
            fully_shard(b, mesh=mesh)
        fully_shard(model, mesh=mesh)
        params = lambda: {n: p.full_tensor().detach() for n, p in model.named_parameters()}  # noqa: E731
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    R = _proj()
    for step in range(STEPS):
        (model(_batch(step, rank)) * R).sum().backward()
        opt.step()
        opt.zero_grad()
    return params()


def _worker(rank: int, tmp: str) -> None:
    # (a file store, not a TCP port: a port found free and released before the workers bind it
    # can be taken in between; gloo's own connections take ports the OS hands out)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp, "store"),
                            rank=rank, world_size=WORLD)
    warnings.simplefilter("ignore")
    try:
        for wrap in ("ddp", "fsdp2"):
            got = _train(rank, wrap)
            if rank == 0:
                torch.save(got, os.path.join(tmp, f"{wrap}.pt"))
            dist.barrier()
    finally:
        dist.destroy_process_group()


def run(tmp: str) -> None:
    """Both trainings, 2 spawned processes; rank 0 writes TMP/ddp.pt and TMP/fsdp2.pt (TMP a
    fresh directory: it also holds the processes' rendezvous file)."""
    mp.spawn(_worker, args=(tmp,), nprocs=WORLD, join=True)


def reference() -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(parameters after the steps, parameters before) of the stock model in one process, the
    loss the mean of the ranks' losses (what DDP's and FSDP's gradient averaging computes)."""
    ref = _model()
    start = {n: p.detach().clone() for n, p in ref.named_parameters()}
    opt = torch.optim.SGD(ref.parameters(), lr=0.05)
    R = _proj()
    for step in range(STEPS):
        sum((ref(_batch(step, r)) * R).sum() for r in range(WORLD)).div(WORLD).backward()
        opt.step()
        opt.zero_grad()
    return {n: p.detach() for n, p in ref.named_parameters()}, start
