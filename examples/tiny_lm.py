"""What the training examples share: a small causal transformer language model on synthetic tokens, how a rank
finds its place under torchrun, braid run and mpirun, and the training loop (ddp_train.py and fsdp_train.py differ
only in how they wrap the model)."""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab, dim, layers, heads, context):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(context, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
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


def parse_args(doc):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="braid")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocab", type=int, default=1024)
    return p.parse_args()


def start(args):
    """Joins the process group; returns (rank, world size, local rank, device, the model on it)."""
    # torchrun and braid run set RANK/WORLD_SIZE/LOCAL_RANK; under mpirun, Open MPI's names.
    rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", default=0)
    world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", default=1)
    local = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", default=0)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29600")
    dist.init_process_group(backend=args.backend, rank=rank, world_size=world)
    # One GPU per local rank, or CPU for every rank where there are fewer GPUs than local ranks.
    local_world = env_int("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", default=world)
    on_gpus = torch.cuda.is_available() and torch.cuda.device_count() >= local_world
    device = torch.device("cuda", local) if on_gpus else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    torch.manual_seed(0)
    model = TinyLM(args.vocab, args.dim, args.layers, 4, args.context).to(device)
    return rank, world, local, device, model


def train(model, args, rank, device, label):
    """Trains on synthetic tokens (each rank its own shard), printing the mean loss and step time on rank 0."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1234 + rank)
    for step in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch, args.context + 1), generator=data).to(device)
        began = time.perf_counter()
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        took = time.perf_counter() - began
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # a sum, not ReduceOp.AVG: Gloo, the CPU peer, takes AVG only from torch 2.7 on
        mean /= dist.get_world_size()
        if rank == 0:
            print(f"step {step:3d}  loss {mean.item():.4f}  {took * 1e3:7.1f} ms  ({label}, {device})", flush=True)
    dist.destroy_process_group()
