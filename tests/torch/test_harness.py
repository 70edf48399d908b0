"""The rank harness (conftest.run_ranks) itself: a rank that crashes, exits non-zero or leaves before its body
returns fails the test, naming the rank and the signal or exit code, unless expect_exit declares exactly that end;
a declared end that does not come fails too. Without this, a crash inside braid's native code (which writes no
Python error) would pass as long as no other rank complained."""

import os
import resource
import signal
import time

import pytest
import torch
import torch.distributed as dist

from conftest import run_ranks


def crash(sig):
    # A deliberate crash leaves no core file behind.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.kill(os.getpid(), sig)


def rank1_segfaults(rank, size, gloo):
    if rank == 1:
        crash(signal.SIGSEGV)
    time.sleep(120)  # rank 0 would wait far longer than the harness may take to stop it


def rank1_exits_3(rank, size, gloo):
    if rank == 1:
        os._exit(3)
    time.sleep(120)


def rank1_leaves_with_0(rank, size, gloo):
    if rank == 1:
        os._exit(0)
    time.sleep(120)


def rank0_raises(rank, size, gloo):
    if rank == 0:
        raise AssertionError("a failed check on rank 0")
    time.sleep(120)


def everyone_returns(rank, size, gloo):
    t = torch.ones(4)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((4,), float(size)))


def rank1_segfaults_after_an_op(rank, size, gloo, survivor_exit=0):
    dist.all_reduce(torch.ones(4))
    if rank == 1:
        crash(signal.SIGSEGV)
    with pytest.raises(RuntimeError, match="PeerLost"):
        for _ in range(1000):
            dist.all_reduce(torch.ones(1 << 16))
    os._exit(survivor_exit)  # the group is broken: leave without the collective shutdown


def rank1_segfaults_and_rank0_exits_5(rank, size, gloo):
    rank1_segfaults_after_an_op(rank, size, gloo, survivor_exit=5)


def fails_with(body, match, **kwargs):
    start = time.monotonic()
    with pytest.raises(pytest.fail.Exception, match=match) as caught:
        run_ranks(body, **kwargs)
    return str(caught.value), time.monotonic() - start


@pytest.mark.parametrize(
    "body, rank, message",
    [
        (rank1_segfaults, 1, r"rank 1 ended by signal SIGSEGV \(not declared in expect_exit\)"),
        (rank1_exits_3, 1, r"rank 1 ended by exit code 3 \(not declared in expect_exit\)"),
        (rank1_leaves_with_0, 1, r"rank 1 exited with exit code 0 before its body returned"),
        (rank0_raises, 0, r"rank 0 raised \(exit code 1\):\n(.|\n)*AssertionError: a failed check on rank 0"),
    ],
)
def test_an_undeclared_end_fails_naming_the_rank_and_how(body, rank, message):
    text, took = fails_with(body, message, timeout_s=60)
    # The peer sleeping in its body is stopped at once, not waited for (nor judged: it did nothing wrong).
    assert f"(ranks [{1 - rank}] were still running and were stopped)" in text, text
    assert took < 60, f"the harness took {took:.0f} s to fail: it waited for the sleeping peer"


def test_a_declared_crash_passes():
    run_ranks(rank1_segfaults_after_an_op, expect_exit={0: 0, 1: signal.SIGSEGV})


def test_a_crash_other_than_the_declared_one_fails():
    fails_with(
        rank1_segfaults_after_an_op,
        r"rank 1 ended by signal SIGSEGV, but expect_exit declares signal SIGABRT",
        expect_exit={0: 0, 1: signal.SIGABRT},
    )


def test_a_declared_end_that_does_not_come_fails():
    fails_with(everyone_returns, r"rank 1 returned normally, but expect_exit declares", expect_exit={1: signal.SIGSEGV})


def test_another_rank_still_fails_beside_a_declared_crash():
    text, _ = fails_with(
        rank1_segfaults_and_rank0_exits_5,
        r"rank 0 ended by exit code 5 \(not declared in expect_exit\)",
        expect_exit={1: signal.SIGSEGV},
    )
    assert "rank 1" not in text, text  # rank 1 ended as declared


def test_a_declaration_must_name_a_rank_and_an_end():
    with pytest.raises(ValueError, match="ranks \\[2\\]"):
        run_ranks(everyone_returns, size=2, expect_exit={2: 0})
    with pytest.raises(ValueError, match="neither a signal.Signals nor an exit code"):
        run_ranks(everyone_returns, size=2, expect_exit={1: "SIGSEGV"})
