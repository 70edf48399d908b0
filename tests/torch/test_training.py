"""DDP on CPU through backend "braid" matches a Gloo-trained copy, and failures surface as Python errors
instead of hangs: a timeout names the wait, a killed rank becomes PeerLost in the others."""

import datetime
import os
import time

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from conftest import run_ranks


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def ddp_matches_gloo(rank, size, gloo):
    models = {}
    for name, group in (("braid", None), ("gloo", gloo)):
        model = DDP(make_model(), process_group=group, bucket_cap_mb=0.01)  # several buckets
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(rank)
        for _ in range(5):
            x = torch.randn(16, 32, generator=g)
            y = torch.randn(16, 8, generator=g)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        models[name] = model.module
    for (n, a), (_, b) in zip(models["braid"].named_parameters(), models["gloo"].named_parameters()):
        # Two ranks: both libraries add the same two gradients, so the sums agree to the bit; allow for rounding
        # anyway, as averaging order may differ.
        assert torch.allclose(a, b, rtol=1e-6, atol=1e-7), f"{n}: braid and gloo training diverged"


def test_ddp_on_cpu_matches_gloo():
    run_ranks(ddp_matches_gloo, size=2)


def silent_peer_times_out(rank, size, gloo):
    if rank == 1:
        time.sleep(8)  # never joins the all_reduce below
        return
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="Timeout"):
        dist.all_reduce(torch.ones(4))
    took = time.monotonic() - start
    assert took < 7, f"the timeout (3 s) took {took:.1f} s to surface"
    os._exit(0)  # the group is broken: leave without the collective shutdown


def test_a_silent_peer_times_out_with_the_process_group_timeout():
    run_ranks(silent_peer_times_out, size=2, timeout_s=3, expect_exit={0: 0})


def killed_peer_is_lost(rank, size, gloo):
    dist.all_reduce(torch.ones(4))
    if rank == 1:
        os._exit(0)  # gone without a word, mid-job
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="PeerLost"):
        for _ in range(1000):
            dist.all_reduce(torch.ones(1 << 16))
    assert time.monotonic() - start < 10
    os._exit(0)


def test_a_killed_rank_raises_peer_lost_in_the_others():
    run_ranks(killed_peer_is_lost, size=2, timeout_s=60, expect_exit={0: 0, 1: 0})
