"""PyTorch's own NCCL backend (backend="nccl", no braid import) with braid's libnccl.so.2 preloaded: the collectives
match Gloo's, DDP trains like DDP over Gloo, a killed rank ends every survivor within seconds with braid's message
naming it, and the process group's timeout ends a collective that peers never join. Every rank runs on GPU
rank % GPUs, so a one-GPU machine runs two ranks on one GPU, which the real NCCL refuses.

Needs a CUDA GPU and BRAID_NCCL_PRELOAD (the libnccl.so.2 that nccl/ builds; scripts/nccl-torch-check.sh sets it):
skipped otherwise. The ranks are separate Python processes (tests/torch/nccl_ranks.py) started with LD_PRELOAD,
as `LD_PRELOAD=... torchrun` would start them."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from conftest import free_port

LIBRARY = os.environ.get("BRAID_NCCL_PRELOAD", "")
pytestmark = [
    pytest.mark.skipif(torch.cuda.device_count() < 1, reason="needs a CUDA GPU"),
    pytest.mark.skipif(not os.path.isfile(LIBRARY), reason="BRAID_NCCL_PRELOAD names no libnccl.so.2"),
]
HERE = os.path.dirname(os.path.abspath(__file__))


def start(scenario, size, tmp_path, extra_env=None):
    """Starts `size` ranks of nccl_ranks.py SCENARIO; returns [(process, log path)]."""
    port = free_port()
    ranks = []
    for rank in range(size):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(size), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), LD_PRELOAD=LIBRARY, NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")
        env.update(extra_env or {})
        log = tmp_path / f"{scenario}-rank{rank}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([sys.executable, os.path.join(HERE, "nccl_ranks.py"), scenario], env=env,
                                    stdout=out, stderr=subprocess.STDOUT)
        ranks.append((proc, log))
    return ranks


def finish(ranks, limit_s):
    """Waits for every rank (killing what is left after limit_s); returns [(exit status, log text, end time)]."""
    deadline = time.monotonic() + limit_s
    ends = [None] * len(ranks)
    while any(e is None for e in ends) and time.monotonic() < deadline:
        for i, (proc, _) in enumerate(ranks):
            if ends[i] is None and proc.poll() is not None:
                ends[i] = time.time()
        time.sleep(0.05)
    results = []
    for i, (proc, log) in enumerate(ranks):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        results.append((proc.returncode, log.read_text(), ends[i]))
    return results


def all_pass(scenario, tmp_path, size=2, limit_s=300):
    results = finish(start(scenario, size, tmp_path), limit_s)
    bad = [f"rank {r} ended with {code}:\n{text[-3000:]}" for r, (code, text, _) in enumerate(results) if code != 0]
    assert not bad, "\n".join(bad)


def test_collectives_match_gloo(tmp_path):
    all_pass("collectives", tmp_path)


def test_ddp_trains_like_gloo(tmp_path):
    all_pass("ddp", tmp_path)


def test_ddp_with_three_ranks_on_the_gpus_there_are(tmp_path):
    all_pass("ddp", tmp_path, size=3)


def test_a_killed_rank_ends_every_survivor_within_seconds(tmp_path):
    size = 3
    results = finish(start("killed_rank", size, tmp_path), limit_s=180)
    killed_code, killed_log, killed_at = results[-1]
    assert killed_code == -signal.SIGKILL, f"the last rank should have died by SIGKILL:\n{killed_log[-2000:]}"
    for rank, (code, text, end) in enumerate(results[:-1]):
        # Either the collective raised (exit 3) or torch's async error handling took the process down (a signal
        # or a non-zero exit); never a clean exit, never still running.
        assert code not in (0, 1, None), f"rank {rank} ended with {code}:\n{text[-3000:]}"
        assert end - killed_at < 5, f"rank {rank} ended {end - killed_at:.1f} s after the kill:\n{text[-3000:]}"
        # braid's message names the lost rank; it reaches the log through ncclGetLastError or torch's report.
        assert re.search(rf"PeerLost.*(peer|rank) {size - 1}\b", text, re.S), f"rank {rank}'s log:\n{text[-3000:]}"


def test_the_process_group_timeout_ends_a_collective_nobody_joins(tmp_path):
    # torch's watchdog sleeps 4 x TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC (15 s by default) after a timeout, for the ranks'
    # flight-recorder dumps, before it ends the process: whatever the library, that is a minute added.
    results = finish(start("timeout", 2, tmp_path, {"TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC": "500"}), limit_s=120)
    code, text, end = results[0]
    assert code not in (0, 1, None), f"rank 0 ended with {code}:\n{text[-3000:]}"
    called = re.search(r"calling the lonely all_reduce at ([0-9.]+)", text)
    assert called, text[-3000:]
    waited = end - float(called.group(1))
    # The process group's timeout is 3 s and torch's watchdog checks about every second: it must end well before
    # the 30 s the peer sleeps.
    assert waited < 3 + 7, f"rank 0 ended {waited:.1f} s after its call:\n{text[-3000:]}"
