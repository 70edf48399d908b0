"""The process group's lifecycle: abort() ends a pending op at once with Aborted (where its peer would
never come), and after shutdown() (what destroy_process_group calls) an op fails with an error naming it."""

import time

import braid_torch
import torch
import torch.distributed as dist

from conftest import run_ranks


def backend_of_world():
    return dist.group.WORLD._get_backend(torch.device("cpu"))


# Backend.abort() and shutdown() reach braid's from torch 2.7 on; braid_torch's functions on every version.
def abort_world():
    backend = backend_of_world()
    backend.abort() if hasattr(backend, "abort") else braid_torch.abort()


def shut_down_world():
    backend = backend_of_world()
    backend.shutdown() if hasattr(backend, "shutdown") else braid_torch.shutdown()


def abort_ends_a_pending_op(rank, size, gloo):
    if rank == 0:
        t = torch.ones(8)
        work = dist.all_reduce(t, async_op=True)  # rank 1 never joins
        time.sleep(0.3)
        assert not work.is_completed()
        start = time.monotonic()
        abort_world()
        try:
            work.wait()
            raise AssertionError("wait() returned for an aborted op")
        except RuntimeError as e:
            assert "Aborted" in str(e) or "aborted" in str(e), str(e)
        assert time.monotonic() - start < 5, "abort took more than 5 s to end the op"
    dist.barrier(group=gloo)


def test_abort_ends_a_pending_op():
    run_ranks(abort_ends_a_pending_op, timeout_s=60)


def ops_after_shutdown_fail_by_name(rank, size, gloo):
    t = torch.ones(4)
    dist.all_reduce(t)
    shut_down_world()
    try:
        dist.all_reduce(t)
        raise AssertionError("all_reduce after shutdown() succeeded")
    except RuntimeError as e:
        assert "shut down" in str(e), str(e)
    dist.barrier(group=gloo)


def test_ops_after_shutdown_fail_by_name():
    run_ranks(ops_after_shutdown_fail_by_name)
