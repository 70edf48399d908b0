"""One rank of the tests of braid's libnccl.so.2 under PyTorch's own NCCL backend: `python nccl_ranks.py SCENARIO`
with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and LD_PRELOAD set by tests/torch/test_nccl_library.py. Nothing
here imports braid: the program is what a user of backend="nccl" writes. Exit status 0 when the scenario passed;
an assertion names what differed."""

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
SIZE = int(os.environ["WORLD_SIZE"])
GPU = RANK % torch.cuda.device_count()  # one GPU serves every rank on a one-GPU machine
DEV = torch.device("cuda", GPU)


def init(timeout_s=60):
    torch.cuda.set_device(GPU)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=timeout_s))
    return dist.new_group(backend="gloo")


def same(a, b, what):
    assert torch.equal(a.cpu(), b), f"rank {RANK}: {what}: nccl {a.cpu()[:8].tolist()} gloo {b[:8].tolist()}"


def collectives():
    """Every collective on CUDA tensors against Gloo's on CPU copies of the same inputs. Inputs are small integers,
    so every sum is exact in every type and the two must agree bit for bit."""
    gloo = init()
    g = torch.Generator().manual_seed(100 + RANK)
    types = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8,
             torch.int8)
    ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
           "product": dist.ReduceOp.PRODUCT}
    for dtype in types:
        for numel in (1, 7, 4099, 1 << 18):
            low, high = (0, 4) if dtype == torch.uint8 else (-3, 4)
            base = torch.randint(low, high, (numel,), generator=g).to(dtype)
            for name, op in ops.items():
                if name == "product" and numel > 7:
                    continue  # products of many ranks' values stay exact only while they are few
                a, b = base.clone().to(DEV), base.clone()
                dist.all_reduce(a, op=op)
                dist.all_reduce(b, op=op, group=gloo)
                same(a, b, f"all_reduce {dtype} {numel} {name}")
            a, b = base.clone().to(DEV), base.clone()
            dist.broadcast(a, src=SIZE - 1)
            dist.broadcast(b, src=SIZE - 1, group=gloo)
            same(a, b, f"broadcast {dtype} {numel}")
            a, b = base.clone().to(DEV), base.clone()
            dist.reduce(a, dst=0)
            dist.reduce(b, dst=0, group=gloo)
            if RANK == 0:
                same(a, b, f"reduce {dtype} {numel}")
            out_a = torch.empty(numel * SIZE, dtype=dtype, device=DEV)
            out_b = torch.empty(numel * SIZE, dtype=dtype)
            dist.all_gather_into_tensor(out_a, base.to(DEV))
            dist.all_gather_into_tensor(out_b, base, group=gloo)
            same(out_a, out_b, f"all_gather_into_tensor {dtype} {numel}")
            parts = [torch.empty(numel, dtype=dtype, device=DEV) for _ in range(SIZE)]
            dist.all_gather(parts, base.to(DEV))
            same(torch.cat(parts), out_b, f"all_gather {dtype} {numel}")
            big = torch.randint(low, high, (numel * SIZE,), generator=g).to(dtype)
            if dtype != torch.bfloat16:  # Gloo has no bfloat16 reduce-scatter
                rs_a = torch.empty(numel, dtype=dtype, device=DEV)
                rs_b = torch.empty(numel, dtype=dtype)
                dist.reduce_scatter_tensor(rs_a, big.to(DEV))
                dist.reduce_scatter_tensor(rs_b, big, group=gloo)
                same(rs_a, rs_b, f"reduce_scatter_tensor {dtype} {numel}")
            o_a = torch.empty_like(big, device=DEV)
            o_b = torch.empty_like(big)
            dist.all_to_all_single(o_a, big.to(DEV))
            dist.all_to_all_single(o_b, big, group=gloo)
            same(o_a, o_b, f"all_to_all_single {dtype} {numel}")
    # AVG and PREMUL_SUM are NCCL's own (Gloo has neither): the expected values are computed here.
    x = torch.full((4099,), float(2 * (RANK + 1)), device=DEV)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    want = sum(2.0 * (r + 1) for r in range(SIZE)) / SIZE
    assert torch.equal(x.cpu(), torch.full((4099,), want)), f"avg: {x[:4].tolist()}, want {want}"
    y = torch.full((1031,), float(RANK + 1), device=DEV)
    premul = dist._make_nccl_premul_sum(0.5)
    dist.all_reduce(y, op=premul)
    want = 0.5 * sum(r + 1 for r in range(SIZE))
    assert torch.equal(y.cpu(), torch.full((1031,), want)), f"premul_sum: {y[:4].tolist()}, want {want}"
    # float8 (NCCL 2.24+ on sm_90): reduced in float32 and rounded once, exact for these small integers; gathered as
    # bytes.
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        f = torch.full((1031,), float(RANK + 1), device=DEV).to(dtype)
        dist.all_reduce(f)
        want = float(sum(r + 1 for r in range(SIZE)))
        assert torch.equal(f.float().cpu(), torch.full((1031,), want)), f"all_reduce {dtype}: {f[:4].float().tolist()}"
        out = torch.empty(1031 * SIZE, dtype=dtype, device=DEV)
        dist.all_gather_into_tensor(out, torch.full((1031,), float(RANK), device=DEV).to(dtype))
        want = torch.arange(SIZE, dtype=torch.float32).repeat_interleave(1031)
        assert torch.equal(out.float().cpu(), want), f"all_gather_into_tensor {dtype}"
    # Point to point: a ring of batched isend/irecv (one NCCL group), then gather and scatter, which torch builds
    # from them.
    send = torch.arange(513, dtype=torch.int64, device=DEV) + 1000 * RANK
    recv = torch.empty_like(send)
    ops_ = [dist.P2POp(dist.isend, send, (RANK + 1) % SIZE), dist.P2POp(dist.irecv, recv, (RANK - 1) % SIZE)]
    for work in dist.batch_isend_irecv(ops_):
        work.wait()
    left = (RANK - 1) % SIZE
    assert torch.equal(recv.cpu(), torch.arange(513, dtype=torch.int64) + 1000 * left), "send/recv ring"
    mine = torch.full((64,), RANK, dtype=torch.int32, device=DEV)
    got = [torch.empty_like(mine) for _ in range(SIZE)] if RANK == 0 else None
    dist.gather(mine, got, dst=0)
    if RANK == 0:
        for r, t in enumerate(got):
            assert torch.equal(t.cpu(), torch.full((64,), r, dtype=torch.int32)), f"gather block {r}"
    piece = torch.empty(64, dtype=torch.int32, device=DEV)
    blocks = [torch.full((64,), 7 * r, dtype=torch.int32, device=DEV) for r in range(SIZE)] if RANK == 0 else None
    dist.scatter(piece, blocks, src=0)
    assert torch.equal(piece.cpu(), torch.full((64,), 7 * RANK, dtype=torch.int32)), "scatter"
    # A subgroup (ncclCommSplit where torch splits, a fresh communicator otherwise) and a barrier.
    sub = dist.new_group(ranks=list(range(SIZE)))
    z = torch.ones(99, device=DEV)
    dist.all_reduce(z, group=sub)
    assert torch.equal(z.cpu(), torch.full((99,), float(SIZE))), "all_reduce on a new group"
    dist.barrier()
    dist.destroy_process_group()


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))


def ddp():
    """DDP over NCCL's API on GPUs trains the weights DDP over Gloo trains on CPU (within matmul rounding)."""
    gloo = init()
    models = {}
    for name, group, device in (("nccl", None, DEV), ("gloo", gloo, torch.device("cpu"))):
        module = make_model().to(device)
        model = DDP(module, device_ids=[GPU] if device.type == "cuda" else None, process_group=group,
                    bucket_cap_mb=0.01)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(RANK)
        for _ in range(5):
            x = torch.randn(16, 32, generator=g).to(device)
            y = torch.randn(16, 8, generator=g).to(device)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        models[name] = model.module
    for (n, a), (_, b) in zip(models["nccl"].named_parameters(), models["gloo"].named_parameters()):
        assert torch.allclose(a.cpu(), b, rtol=1e-4, atol=1e-5), f"{n}: DDP over NCCL's API diverged from Gloo"
    dist.destroy_process_group()


def killed_rank():
    """The last rank kills itself between collectives; the others keep calling all_reduce and must end (an
    exception, or torch's error handling taking the process down) within seconds. Each survivor prints the time
    it saw the error; the test reads the rank's end from outside."""
    init()
    x = torch.ones(1 << 16, device=DEV)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    if RANK == SIZE - 1:
        print(f"killing myself at {time.time():.3f}", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.5)
    start = time.time()
    try:
        while time.time() - start < 120:
            dist.all_reduce(x)
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - the error is what this scenario waits for
        print(f"collective failed at {time.time():.3f}: {e}", flush=True)
        sys.exit(3)
    print("all_reduce kept succeeding for 120 s after a peer died", flush=True)
    sys.exit(1)


def timeout():
    """Rank 0 calls an all_reduce that the others never join: the process group's timeout (3 s) must end it, by
    the watchdog aborting the communicator, well before the others come back."""
    init(timeout_s=3)
    x = torch.ones(1024, device=DEV)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    if RANK != 0:
        time.sleep(30)
        os._exit(0)
    print(f"calling the lonely all_reduce at {time.time():.3f}", flush=True)
    try:
        dist.all_reduce(x)
        torch.cuda.synchronize()
        time.sleep(20)  # the watchdog ends the process meanwhile, or the next call raises
        dist.all_reduce(x)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        print(f"collective failed at {time.time():.3f}: {e}", flush=True)
        sys.exit(3)
    print("the lonely all_reduce was never ended", flush=True)
    sys.exit(1)


if __name__ == "__main__":
    {"collectives": collectives, "ddp": ddp, "killed_rank": killed_rank, "timeout": timeout}[sys.argv[1]]()
