#!/usr/bin/env python3
"""The training step of examples/ddp_train.py (a small transformer under DistributedDataParallel) under several
backends and settings in one sitting: the time a step takes where communication is part of it, not a collective
timed alone.

    python bench/ddp_step.py --device cpu --nranks 2 --run gloo --run braid:BRAID_SHM_THREADS=1 --run braid \\
        --passes 2 --json out.json

Each --run is BACKEND[:KNOB=VALUE,...]: its ranks are fresh processes (spawned, one per rank) with those variables
set, so that a knob a communicator reads at creation applies. The runs go in the order given, then in the opposite
order for a second pass, and so on, so that a drift of the machine over the minutes shows as a spread between the
passes rather than as a difference between runs. Every rank builds the same model from the same seed and trains on
its own synthetic tokens, so every run trains the same model on the same data.

A step is forward, backward (DDP's gradient allreduces overlap it) and the optimizer's step; its time is the slowest
rank's (CUDA: after a device synchronisation). A row is one run: the median step over the timed steps of every pass.
Checked: after the last step every rank holds the same parameters bit for bit (compared through a separate Gloo
group, not the backend under test: `wrong` counts the parameters that differ), and every run's last loss agrees with
the first run's to 1e-3 relative (different reduction orders round differently). The bench exits non-zero when a
check fails, after writing the file.

Rows are written under the meta of bench/results/README.md (scripts/bench_meta.py), with impl the backend, variant
the knobs, collective "ddp_step", bytes the gradient bytes a step reduces and time_us the median step.
"""

import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import time
from queue import Empty

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "examples"))
import bench_meta  # noqa: E402

LOSS_TOLERANCE = 1e-3


def parse_run(text):
    """"braid:BRAID_SHM_THREADS=1,BRAID_SPIN_US=0" -> ("braid", {"BRAID_SHM_THREADS": "1", ...})."""
    backend, _, rest = text.partition(":")
    knobs = {}
    for item in filter(None, rest.split(",")):
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise argparse.ArgumentTypeError(f"--run {text}: '{item}' is not NAME=VALUE")
        knobs[name] = value
    if backend not in ("braid", "gloo", "nccl"):
        raise argparse.ArgumentTypeError(f"--run {text}: backend '{backend}' is not braid, gloo or nccl")
    return backend, knobs


def variant_of(knobs):
    return ",".join(f"{k}={v}" for k, v in sorted(knobs.items()))


def parameter_bits(model):
    """Every parameter's bits as integers (float32 as int32), so that comparing them compares the bits: -0.0 against
    0.0 differs, a NaN equals itself."""
    views = []
    for p in model.parameters():
        flat = p.detach().cpu().contiguous().reshape(-1)
        views.append(flat.view({8: torch.int64, 4: torch.int32, 2: torch.int16}[flat.element_size()]).to(torch.int64))
    return torch.cat(views)


def rank_main(rank, size, port, args, backend, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if backend == "braid":
        import braid_torch  # noqa: F401  (registers backend "braid")
    from tiny_lm import TinyLM
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(args.torch_threads)
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group(backend, rank=rank, world_size=size, timeout=datetime.timedelta(seconds=300))
    # Timing and the checks go through Gloo, apart from the backend under test.
    side = dist.new_group(backend="gloo")
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    torch.manual_seed(0)
    model = TinyLM(args.vocab, args.dim, args.layers, 4, args.context).to(device)
    ddp = DDP(model, device_ids=[device.index] if cuda else None)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1234 + rank)
    steps_ms, losses = [], []
    for step in range(args.warmup + args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch, args.context + 1), generator=data).to(device)
        dist.barrier(group=side)
        began = time.perf_counter()
        logits = ddp(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if cuda:
            torch.cuda.synchronize()
        took = torch.tensor([time.perf_counter() - began], dtype=torch.float64)
        dist.all_reduce(took, op=dist.ReduceOp.MAX, group=side)
        mean = torch.tensor([loss.item()], dtype=torch.float64)
        dist.all_reduce(mean, group=side)
        if step >= args.warmup:
            steps_ms.append(took.item() * 1e3)
            losses.append(mean.item() / size)
    params = parameter_bits(model)
    high, low = params.clone(), params.clone()
    dist.all_reduce(high, op=dist.ReduceOp.MAX, group=side)
    dist.all_reduce(low, op=dist.ReduceOp.MIN, group=side)
    wrong = int((high != low).sum().item())
    if rank == 0:
        grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
        queue.put(dict(steps_ms=steps_ms, losses=losses, wrong=wrong, grad_bytes=grad_bytes,
                       params=int(params.numel())))
    dist.destroy_process_group()


def run_once(args, backend, knobs):
    """One run's ranks, fresh processes with `knobs` in their environment: (rank 0's report or None, what went
    wrong or ""). The report is taken while the ranks run (a large one would fill the pipe before they could end);
    a rank that fails, or a run past --run-timeout, ends the run without a report; a rank that fails after the report
    came (a backend's teardown) is said, beside the report."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    saved = {k: os.environ.get(k) for k in knobs}
    os.environ.update(knobs)
    try:
        queue = mp.get_context("spawn").Queue()
        ranks = mp.start_processes(rank_main, args=(args.nranks, port, args, backend, queue), nprocs=args.nranks,
                                   start_method="spawn", join=False)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    deadline = time.monotonic() + args.run_timeout
    report, failure = None, ""
    while report is None and not failure:
        try:
            report = queue.get(timeout=1.0)
        except Empty:
            try:
                if ranks.join(timeout=0):
                    failure = "every rank ended without a report"
            except Exception as e:  # a rank raised or died: ProcessRaisedException, ProcessExitedException
                failure = f"a rank failed: {e}"
            if not failure and time.monotonic() > deadline:
                failure = f"no report within --run-timeout {args.run_timeout} s"
    try:
        while not ranks.join(timeout=max(deadline - time.monotonic(), 1.0)):
            if time.monotonic() > deadline:
                failure = failure or f"the ranks did not end within --run-timeout {args.run_timeout} s"
                break
    except Exception as e:
        failure = failure or f"a rank failed as the run ended: {e}"
    for p in ranks.processes:
        if p.is_alive():
            p.kill()
    return report, failure


def peer_versions(runs, device):
    peers = {"torch": torch.__version__}
    backends = {b for b, _ in runs}
    if "gloo" in backends:
        peers["gloo"] = f"Gloo built into torch {torch.__version__}"
    if "nccl" in backends:
        v = torch.cuda.nccl.version()
        peers["nccl"] = "NCCL " + (".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)) + \
            f" (torch {torch.__version__}'s)"
    return peers


def main():
    started = bench_meta.iso_now()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--run", type=parse_run, action="append", required=True,
                   help="BACKEND[:KNOB=VALUE,...], once per run (braid, gloo, nccl)")
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--steps", type=int, default=15, help="timed steps a pass")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    p.add_argument("--torch-threads", type=int, default=0,
                   help="torch's intra-op threads a rank (0: the usable CPUs divided among the ranks)")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--dim", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--run-timeout", type=float, default=600, help="seconds one run's ranks may take")
    p.add_argument("--json", default="")
    args = p.parse_args()
    for flag in ("passes", "steps", "nranks"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag} must be at least 1")
    if args.warmup < 0:
        p.error("--warmup must be at least 0")
    if args.torch_threads <= 0:
        args.torch_threads = max(bench_meta.usable_cores() // args.nranks, 1)
    if args.device == "cuda" and torch.cuda.device_count() < args.nranks:
        sys.exit(f"ddp_step: --device cuda with {args.nranks} ranks but torch sees {torch.cuda.device_count()} GPUs "
                 "(NCCL takes one GPU a rank)")
    if len({(b, variant_of(k)) for b, k in args.run}) != len(args.run):
        sys.exit("ddp_step: a --run is given twice")

    reports = {i: [] for i in range(len(args.run))}
    problems, teardowns = [], {}
    for n in range(args.passes):
        order = list(range(len(args.run)))
        if n % 2 == 1:
            order.reverse()
        for i in order:
            backend, knobs = args.run[i]
            r, failure = run_once(args, backend, knobs)
            name = f"{backend} {variant_of(knobs)}".strip()
            if r is None:
                problems.append(f"{name}, pass {n + 1}: {failure}")
                print(f"pass {n + 1} {backend:>5} {variant_of(knobs) or '-':<28} FAILED: {failure}", flush=True)
                continue
            if failure:
                # Gloo's process group sometimes aborts as its process exits, after every step ran: the peer's
                # teardown, not its training. braid's own teardown gets no such allowance.
                teardowns.setdefault(i, []).append(f"pass {n + 1}: {failure}")
                if backend == "braid":
                    problems.append(f"{name}, pass {n + 1}: {failure}")
            reports[i].append(r)
            print(f"pass {n + 1} {backend:>5} {variant_of(knobs) or '-':<28} median step "
                  f"{statistics.median(r['steps_ms']):8.2f} ms  last loss {r['losses'][-1]:.4f}  wrong {r['wrong']}"
                  + (f"  ({failure})" if failure else ""), flush=True)

    rows = []
    done = [i for i in range(len(args.run)) if len(reports[i]) == args.passes]
    first_loss = reports[done[0]][0]["losses"][-1] if done else 0.0
    for i in done:
        backend, knobs = args.run[i]
        steps = [s for r in reports[i] for s in r["steps_ms"]]
        last_losses = [r["losses"][-1] for r in reports[i]]
        wrong = sum(r["wrong"] for r in reports[i])
        grad_bytes = reports[i][0]["grad_bytes"]
        median_ms = statistics.median(steps)
        rows.append(dict(
            impl=backend, variant=variant_of(knobs), collective="ddp_step", dtype="float32", redop="sum", root=-1,
            mem=args.device, ranks=args.nranks, bytes=grad_bytes, count=reports[i][0]["params"],
            time_us=median_ms * 1e3, algbw_gbs=grad_bytes / (median_ms * 1e-3) / 1e9, busbw_gbs=-1, wrong=wrong,
            passes_ms=[statistics.median(r["steps_ms"]) for r in reports[i]], steps_ms=steps, last_loss=last_losses,
        ))
        if i in teardowns:
            rows[-1]["teardown"] = teardowns[i]
        if wrong:
            problems.append(f"{backend} {variant_of(knobs)}: {wrong} parameters differ between ranks")
        for loss in last_losses:
            if abs(loss - first_loss) > LOSS_TOLERANCE * abs(first_loss):
                problems.append(f"{backend} {variant_of(knobs)}: last loss {loss} against the first run's {first_loss}")
    if args.json and rows:
        ranks_on = f"{args.nranks} ranks on one host"
        link = (f"{ranks_on}, {bench_meta.gpu_link(args.nranks, torch.cuda.device_count())}" if args.device == "cuda"
                else f"{ranks_on}; braid: its own choice (shared memory); gloo: TCP over loopback")
        meta = bench_meta.meta(bench_meta.shell_command(sys.argv), link, peer_versions(args.run, args.device),
                               date=started)
        meta.update(
            torch=torch.__version__, mem=args.device, torch_threads=args.torch_threads,
            model=dict(dim=args.dim, layers=args.layers, vocab=args.vocab, context=args.context, batch=args.batch,
                       params=rows[0]["count"]),
            method=f"DDP training steps of examples/tiny_lm.py's model (AdamW): {args.warmup} untimed, then "
            f"{args.steps} timed a pass, {args.passes} passes in alternating orders, fresh processes a run; a step's "
            "time is the slowest rank's, a row's the median of its steps; replicas compared bit for bit through Gloo; "
            f"{args.torch_threads} torch intra-op threads a rank, beside any threads the backend runs",
        )
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": rows}, f, indent=1, sort_keys=True)
            f.write("\n")
    if problems:
        sys.exit("ddp_step: " + "; ".join(problems))


if __name__ == "__main__":
    main()
