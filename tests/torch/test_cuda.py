"""Backend "braid" on CUDA tensors: ops are queued on the current stream, after what the caller queued
there and before what it queues next, as NCCL's are; results match Gloo's on CPU copies of the same inputs; DDP on
GPUs trains like DDP over Gloo on CPU. Rank r runs on GPU r % GPUs, so one GPU serves both ranks (as braid allows
and NCCL does not); skipped where there is no GPU (run by scripts/gpu-check.sh torch on the GPU machine)."""

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from conftest import run_ranks

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < 1, reason="needs a CUDA GPU")


def gpu(rank):
    """This rank's GPU: ranks share the GPUs there are, one GPU serving them all on a one-GPU machine."""
    return rank % torch.cuda.device_count()


def stream_order(rank, size, gloo):
    torch.cuda.set_device(gpu(rank))
    n = 1 << 20
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.empty(n, device="cuda")
        torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time before the fill: an op not ordered after it reads junk
        x.fill_(rank + 1)
        dist.all_reduce(x)
        y = x * 2  # queued after the all-reduce on the same stream
    side.synchronize()
    total = sum(range(1, size + 1))
    assert torch.equal(x, torch.full((n,), float(total), device="cuda"))
    assert torch.equal(y, torch.full((n,), 2.0 * total, device="cuda"))
    # async_op=True: the Work completes at once; its future's value is the tensor, ordered on the stream.
    with torch.cuda.stream(side):
        z = torch.full((4096,), float(rank), device="cuda", dtype=torch.bfloat16)
        work = dist.all_reduce(z, op=dist.ReduceOp.MAX, async_op=True)
        work.wait()
        fut = work.get_future()
        out = fut.wait()[0] + 1
    side.synchronize()
    assert torch.equal(out, torch.full((4096,), float(size), device="cuda", dtype=torch.bfloat16))


def mixed_cpu_and_cuda(rank, size, gloo):
    # One process group, CPU and CUDA tensors in turn: each op goes its own way (host path, GPU kernels).
    torch.cuda.set_device(gpu(rank))
    total = float(sum(range(1, size + 1)))
    for i in range(3):
        c = torch.full((1000 + i,), float(rank + 1))
        g = torch.full((1 << 16,), float(rank + 1), device="cuda")
        work = dist.all_reduce(c, async_op=True)
        dist.all_reduce(g)
        work.wait()
        assert torch.equal(c, torch.full_like(c, total)), f"cpu round {i}"
        assert torch.equal(g.cpu(), torch.full((1 << 16,), total)), f"cuda round {i}"


def test_mixed_cpu_and_cuda_ops_in_one_group():
    run_ranks(mixed_cpu_and_cuda)


def test_ops_on_cuda_tensors_follow_the_current_stream():
    run_ranks(stream_order)


def collectives_match_gloo(rank, size, gloo):
    torch.cuda.set_device(gpu(rank))
    dev = torch.device("cuda", gpu(rank))
    g = torch.Generator().manual_seed(100 + rank)
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        for numel in (1, 7, 4099, 1 << 20):
            base = torch.randint(-50, 50, (numel,), generator=g).to(dtype)
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN):
                a, b = base.clone().to(dev), base.clone()
                dist.all_reduce(a, op=op)
                dist.all_reduce(b, op=op, group=gloo)
                assert torch.equal(a.cpu(), b), f"all_reduce {dtype} {numel} {op}"
            a, b = base.clone().to(dev), base.clone()
            dist.broadcast(a, src=1)
            dist.broadcast(b, src=1, group=gloo)
            assert torch.equal(a.cpu(), b), f"broadcast {dtype} {numel}"
            out_a = torch.empty(numel * size, dtype=dtype, device=dev)
            out_b = torch.empty(numel * size, dtype=dtype)
            dist.all_gather_into_tensor(out_a, base.to(dev))
            dist.all_gather_into_tensor(out_b, base, group=gloo)
            assert torch.equal(out_a.cpu(), out_b), f"all_gather_into_tensor {dtype} {numel}"
            if dtype != torch.bfloat16:  # Gloo has no bfloat16 reduce-scatter
                big = torch.randint(-50, 50, (numel * size,), generator=g).to(dtype)
                rs_a = torch.empty(numel, dtype=dtype, device=dev)
                rs_b = torch.empty(numel, dtype=dtype)
                dist.reduce_scatter_tensor(rs_a, big.to(dev))
                dist.reduce_scatter_tensor(rs_b, big, group=gloo)
                assert torch.equal(rs_a.cpu(), rs_b), f"reduce_scatter_tensor {dtype} {numel}"
            a2a = torch.randint(-50, 50, (numel * size,), generator=g).to(dtype)
            o_a = torch.empty_like(a2a, device=dev)
            o_b = torch.empty_like(a2a)
            dist.all_to_all_single(o_a, a2a.to(dev))
            dist.all_to_all_single(o_b, a2a, group=gloo)
            assert torch.equal(o_a.cpu(), o_b), f"all_to_all_single {dtype} {numel}"


def test_collectives_on_cuda_tensors_match_gloo():
    run_ranks(collectives_match_gloo, timeout_s=120)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def ddp_on_gpus(rank, size, gloo):
    torch.cuda.set_device(gpu(rank))
    dev = torch.device("cuda", gpu(rank))
    models = {}
    for name, group, device in (("braid", None, dev), ("gloo", gloo, torch.device("cpu"))):
        module = make_model().to(device)
        model = DDP(module, device_ids=[gpu(rank)] if device.type == "cuda" else None, process_group=group,
                    bucket_cap_mb=0.01)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(rank)
        for _ in range(5):
            x = torch.randn(16, 32, generator=g).to(device)
            y = torch.randn(16, 8, generator=g).to(device)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        models[name] = model.module
    for (n, a), (_, b) in zip(models["braid"].named_parameters(), models["gloo"].named_parameters()):
        # GPU and CPU matmuls round differently: close, not equal.
        assert torch.allclose(a.cpu(), b, rtol=1e-4, atol=1e-5), f"{n}: DDP on GPUs diverged from Gloo on CPU"


def test_ddp_on_gpus_matches_gloo_on_cpu():
    run_ranks(ddp_on_gpus, timeout_s=120)
