"""A small transformer language model trained with DDP over braid, on synthetic tokens.

    torchrun --nproc-per-node 2 examples/ddp_train.py            # CPU, or one GPU per rank when there are GPUs
    braid run -n 2 -- python examples/ddp_train.py --steps 20
    mpirun -np 2 python examples/ddp_train.py                     # Open MPI (braid reads OMPI_COMM_WORLD_*)

--backend gloo (or nccl) trains the same model with another backend, for comparison: with the same seed the losses
agree step by step (to float rounding).
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import braid_torch  # noqa: F401  (registers backend "braid")


class TinyLM(nn.Module):
    def __init__(self, vocab, dim, layers, heads, context):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(context, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        mask = torch.triu(torch.full((context, context), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        n = tokens.shape[1]
        return self.head(self.blocks(x, mask=self.mask[:n, :n], is_causal=True))


def env_int(*names, default):
    for name in names:
        if name in os.environ:
            return int(os.environ[name])
    return default


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="braid")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=1024)
    args = p.parse_args()

    # torchrun and braid run set RANK/WORLD_SIZE/LOCAL_RANK; under mpirun, Open MPI's names.
    rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", default=0)
    world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", default=1)
    local = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", default=0)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29600")
    dist.init_process_group(backend=args.backend, rank=rank, world_size=world)

    device = torch.device("cuda", local) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = TinyLM(args.vocab, args.dim, args.layers, 4, args.context).to(device)
    ddp = DDP(model, device_ids=[local] if device.type == "cuda" else None)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1234 + rank)  # each rank its own shard of the synthetic corpus

    for step in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch, args.context + 1), generator=data).to(device)
        start = time.perf_counter()
        logits = ddp(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        took = time.perf_counter() - start
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        if rank == 0:
            print(f"step {step:3d}  loss {mean.item():.4f}  {took * 1e3:7.1f} ms  ({args.backend}, {device})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
