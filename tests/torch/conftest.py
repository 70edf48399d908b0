"""Runs a test body on N ranks as processes (torch.multiprocessing), each with a braid process group and a Gloo
one over the same store, so every result can be compared with Gloo's on the same inputs.

A rank passes when its body returns and it leaves with exit code 0. Anything else fails the test, naming the rank
and how it ended: a Python exception (with its traceback), an exit code, a signal (a crash inside braid's native
code writes nothing, so the exit status is all there is), or an exit before the body returned. A test whose body
ends a rank on purpose declares it with expect_exit={rank: how}; that rank must then end exactly so."""

import multiprocessing.connection
import os
import signal
import socket
import time
import traceback

import pytest
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank, size, port, body, errors, finished, timeout_s):
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
    # Exit code 0 alone cannot tell a finished rank from one that left early (os._exit(0), a library's exit(0)).
    finished[rank] = True


def _exit_status(how):
    """expect_exit's value as a multiprocessing exit code: a signal.Signals is a signal (negative), an int an exit
    code (0 included: a rank that leaves before its body returns)."""
    if isinstance(how, signal.Signals):
        return -how.value
    if isinstance(how, int) and not isinstance(how, bool) and 0 <= how <= 255:
        return how
    raise ValueError(f"expect_exit: {how!r} is neither a signal.Signals nor an exit code 0..255")


def _describe(status):
    if status is None:
        return "still running"
    if status < 0:
        try:
            return f"signal {signal.Signals(-status).name}"
        except ValueError:
            return f"signal {-status}"
    return f"exit code {status}"


def _verdict(rank, status, finished, errors, expected):
    """None when the rank ended as it should, else what went wrong."""
    if rank in errors:
        return f"raised ({_describe(status)}):\n{errors[rank]}"
    if expected is None:
        if status == 0 and finished:
            return None
        if status == 0:
            return "exited with exit code 0 before its body returned (not declared in expect_exit)"
        return f"ended by {_describe(status)} (not declared in expect_exit)"
    if status == expected and not finished:
        return None
    if finished:
        return f"returned normally, but expect_exit declares that it ends by {_describe(expected)}"
    return f"ended by {_describe(status)}, but expect_exit declares {_describe(expected)}"


def _stop(processes):
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()


def run_ranks(body, size=2, timeout_s=60, expect_exit=None):
    """Runs body(rank, size, gloo_group) on `size` processes and fails the test unless every rank ended as it should.

    expect_exit: {rank: how} for ranks the body ends on purpose, how being a signal.Signals (signal.SIGSEGV) or an
    exit code (an int; 0 for os._exit(0) before the body returns). Such a rank must end exactly that way; every
    other rank must return from body and exit 0. The first rank to end otherwise fails the test at once, and the
    ranks still running are stopped (their ends are not judged)."""
    expected = {r: _exit_status(how) for r, how in (expect_exit or {}).items()}
    bad = set(expected) - set(range(size))
    if bad:
        raise ValueError(f"expect_exit names ranks {sorted(bad)} of a {size}-rank run")
    manager = mp.Manager()
    try:
        errors = manager.dict()
        finished = manager.dict()
        ctx = mp.start_processes(
            _rank_main,
            args=(size, free_port(), body, errors, finished, timeout_s),
            nprocs=size,
            join=False,
            start_method="spawn",
        )
        processes = ctx.processes
        running = {p.sentinel: rank for rank, p in enumerate(processes)}
        failures = {}
        # Bounded: every op has timeout_s, so ranks still running long after it are hung, and the test says so.
        limit = 4 * timeout_s + 120
        deadline = time.monotonic() + limit
        while running and not failures:
            left = deadline - time.monotonic()
            if left <= 0:
                hung = sorted(running.values())
                _stop(processes)
                pytest.fail(f"ranks {hung} still running {limit} s after they started (a hang)")
            for sentinel in multiprocessing.connection.wait(list(running), timeout=min(left, 5)):
                rank = running.pop(sentinel)
                processes[rank].join()
                why = _verdict(rank, processes[rank].exitcode, rank in finished, errors, expected.get(rank))
                if why is not None:
                    failures[rank] = why
        if failures:
            # Ranks that ended by themselves meanwhile are judged too (a crash seen a moment after its peer's
            # reaction to it must still be named); only those still running are stopped unjudged.
            for sentinel, rank in list(running.items()):
                if processes[rank].exitcode is not None:
                    del running[sentinel]
                    why = _verdict(rank, processes[rank].exitcode, rank in finished, errors, expected.get(rank))
                    if why is not None:
                        failures[rank] = why
            stopped = sorted(running.values())
            _stop(processes)
            # A rank stopped here may have raised first (a peer's failure reached it): its traceback is shown too.
            for rank in stopped:
                if rank in errors:
                    failures[rank] = f"raised:\n{errors[rank]}"
            lines = [f"rank {rank} {why}" for rank, why in sorted(failures.items())]
            if stopped:
                lines.append(f"(ranks {stopped} were still running and were stopped)")
            pytest.fail("\n".join(lines))
    finally:
        manager.shutdown()
