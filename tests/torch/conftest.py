"""Runs a test body on N ranks as processes (torch.multiprocessing), each with a braid process group and a Gloo
one over the same store, so every result can be compared with Gloo's on the same inputs."""

import os
import socket
import time
import traceback

import pytest
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank, size, port, body, errors, timeout_s):
    import datetime

    import torch.distributed as dist

    import braid_torch  # noqa: F401  (registers the backend)

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    try:
        dist.init_process_group(
            backend="braid", rank=rank, world_size=size, timeout=datetime.timedelta(seconds=timeout_s)
        )
        gloo = dist.new_group(backend="gloo")
        body(rank, size, gloo)
        dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - every failure goes back to the test
        errors[rank] = traceback.format_exc()
        os._exit(1)


def run_ranks(body, size=2, timeout_s=60):
    """Runs body(rank, size, gloo_group) on `size` processes; fails the test with every rank's traceback."""
    manager = mp.Manager()
    errors = manager.dict()
    ctx = mp.start_processes(
        _rank_main, args=(size, free_port(), body, errors, timeout_s), nprocs=size, join=False, start_method="spawn"
    )
    # Bounded: every op has timeout_s, so ranks still running long after it are hung, and the test says so.
    deadline = time.monotonic() + 4 * timeout_s + 120
    try:
        while not ctx.join(timeout=5):
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    if p.is_alive():
                        p.kill()
                pytest.fail(f"ranks still running {4 * timeout_s + 120} s after they started (a hang)")
    except mp.ProcessExitedException:
        pass
    if errors:
        pytest.fail("\n".join(f"rank {r}:\n{e}" for r, e in sorted(errors.items())))
