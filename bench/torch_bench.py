#!/usr/bin/env python3
"""dist.all_reduce through torch.distributed: backend "braid" against a peer backend in the same processes (Gloo on
CPU tensors, NCCL on CUDA tensors), one process per rank, with the issue's method: per size, warm-up calls, then
--reps loops of -n back-to-back blocking calls timed on the host (for CUDA tensors the loop ends with a device
synchronisation), the slowest rank's time per call, the median loop. Sizes alternate between the backends so
that drift hits both alike. Every result is checked exactly afterwards (integer-valued inputs).

    python bench/torch_bench.py --device cpu -b 1K -e 16M -f 4 --json out.json          # braid vs gloo
    python bench/torch_bench.py --device cuda -b 8 -e 1G -f 4 --json out.json           # braid vs nccl

Rows are written as braid's bench JSON (impl, collective, dtype, bytes, time_us, algbw_gbs, busbw_gbs, wrong, ...),
under the meta of bench/results/README.md (scripts/bench_meta.py): this command line, the commit of this source
tree (git, or BRAID_COMMIT / BRAID_SOURCE_COMMIT where the tree has no usable git), the start time, the machine,
and the versions of torch and of the peer backend.
"""

import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import bench_meta  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}


def parse_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)


def sizes(args, elem):
    out, b = [], args.min_bytes
    while b <= args.max_bytes:
        n = max(b // elem, 1)
        out.append(n)
        b *= args.factor
    return out


def time_loops(args, t, group, sync, host_group):
    for _ in range(args.warmup):
        dist.all_reduce(t, group=group)
    sync()
    loops = []
    for _ in range(args.reps):
        dist.barrier(group=host_group)
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(t, group=group)
        sync()
        per_call = torch.tensor([(time.perf_counter() - start) / args.iters], dtype=torch.float64)
        dist.all_reduce(per_call, op=dist.ReduceOp.MAX, group=host_group)
        loops.append(per_call.item())
    return statistics.median(loops)


def wrong_elements(t, group, rank, size, sync):
    # Integer-valued inputs below 2^8: exact in every dtype, whatever the fold order.
    n = t.numel()
    base = (torch.arange(n, device="cpu") % 7).to(t.dtype)
    t.copy_((base + rank).to(t.device))
    dist.all_reduce(t, group=group)
    sync()
    want = base * size + sum(range(size))
    return int((t.cpu() != want).sum().item())


def rank_main(rank, size, port, args, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import braid_torch  # noqa: F401  (registers backend "braid")

    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("braid", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=300))
    peer = "nccl" if cuda else "gloo"
    peer_group = dist.new_group(backend=peer)
    host_group = dist.new_group(backend="gloo")  # for barriers and the timing reductions
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dtype = DTYPES[args.dtype]
    elem = torch.tensor([], dtype=dtype).element_size()
    rows = []
    factor = 2 * (size - 1) / size
    for count in sizes(args, elem):
        t = torch.zeros(count, dtype=dtype, device=device)
        for impl, group in (("braid", None), (peer, peer_group)):
            seconds = time_loops(args, t, group, sync, host_group)
            wrong = wrong_elements(t, group, rank, size, sync)
            total = torch.tensor([wrong], dtype=torch.int64)
            dist.all_reduce(total, group=host_group)
            nbytes = count * elem
            rows.append(
                dict(
                    impl=impl, collective="allreduce", dtype=args.dtype, redop="sum", bytes=nbytes, count=count,
                    ranks=size, root=-1, mem=args.device, time_us=seconds * 1e6, algbw_gbs=nbytes / seconds / 1e9,
                    busbw_gbs=nbytes / seconds / 1e9 * factor, wrong=int(total.item()),
                )
            )
            if rank == 0:
                r = rows[-1]
                print(f"{impl:>6} {nbytes:>12} B {r['time_us']:10.2f} us {r['busbw_gbs']:8.2f} GB/s wrong {r['wrong']}",
                      flush=True)
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def peer_versions(device):
    """torch's version, and the peer backend's as this torch carries it."""
    peers = {"torch": torch.__version__}
    if device == "cuda":
        v = torch.cuda.nccl.version()
        peers["nccl"] = "NCCL " + (".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)) + \
            f" (torch {torch.__version__}'s)"
    else:
        peers["gloo"] = f"Gloo built into torch {torch.__version__}"
    return peers


def link_of(args):
    """What joined the ranks: one host; the GPUs' own link for CUDA tensors; each backend's path."""
    braid = os.environ.get("BRAID_TRANSPORT") or "its own choice (shared memory on one host)"
    if args.device == "cuda":
        gpus = torch.cuda.device_count()
        return (f"{args.nranks} ranks on one host, {bench_meta.gpu_link(args.nranks, gpus)}; braid backend: CUDA "
                f"tensors by its own choice of path, host side {braid}; nccl backend: its own choice")
    return f"{args.nranks} ranks on one host; braid backend: {braid}; gloo backend: TCP over loopback"


def commit_of_tree():
    """BRAID_COMMIT (the commit a copied tree came from) when set, else what bench_meta finds (git, or
    BRAID_SOURCE_COMMIT)."""
    if os.environ.get("BRAID_COMMIT"):
        return os.environ["BRAID_COMMIT"], bench_meta._split_paths(os.environ.get("BRAID_SOURCE_DIRTY_FILES", ""))
    return bench_meta.source_commit()


def main():
    started = bench_meta.iso_now()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("-d", "--dtype", choices=sorted(DTYPES), default="float32")
    p.add_argument("-b", "--min-bytes", type=parse_bytes, default=parse_bytes("8"))
    p.add_argument("-e", "--max-bytes", type=parse_bytes, default=parse_bytes("16M"))
    p.add_argument("-f", "--factor", type=int, default=4)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--json", default="")
    args = p.parse_args()
    if args.device == "cuda" and torch.cuda.device_count() < 1:
        sys.exit("torch_bench: --device cuda but torch sees no GPU")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(rank_main, args=(args.nranks, port, args, queue), nprocs=args.nranks, start_method="spawn")
    rows = queue.get()
    bad = [r for r in rows if r["wrong"] != 0]
    if args.json:
        # This process never touched CUDA through torch (the ranks are spawned): asking the driver here is safe.
        meta = bench_meta.meta(bench_meta.shell_command(sys.argv), link_of(args), peer_versions(args.device),
                               date=started, commit=commit_of_tree())
        meta.update(
            impl="braid+" + ("nccl" if args.device == "cuda" else "gloo"), mem=args.device, torch=torch.__version__,
            method="dist.all_reduce, host-timed loops of blocking calls (CUDA: then synchronize); "
            f"{args.warmup} warm-up calls, median of {args.reps} loops of {args.iters}, slowest rank; checked exactly",
        )
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows}, f, indent=1, sort_keys=True)
            f.write("\n")
    if bad:
        sys.exit(f"torch_bench: wrong results in {len(bad)} rows")


if __name__ == "__main__":
    main()
