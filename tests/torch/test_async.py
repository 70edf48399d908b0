"""Ops on CPU tensors run on braid's progress thread: async_op=True returns before the peers arrive, the
Work and its future complete with the result once they do, and what an op writes into non-contiguous or list
outputs is in place when wait() returns or the future's callbacks run."""

import time

import torch
import torch.distributed as dist

from conftest import run_ranks


def returns_before_the_peer_arrives(rank, size, gloo):
    t = torch.full((1000,), float(rank + 1))
    if rank == 1:
        time.sleep(1.0)
    start = time.monotonic()
    work = dist.all_reduce(t, async_op=True)
    issued = time.monotonic() - start
    if rank == 0:
        assert issued < 0.5, f"all_reduce(async_op=True) took {issued:.2f} s to return"
        assert not work.is_completed(), "completed before rank 1 joined"
    seen = []
    chained = work.get_future().then(lambda fut: seen.append(fut.value()[0][0].item()) or fut.value()[0] * 2)
    assert work.wait()
    assert work.is_completed() and work.is_success()
    assert torch.equal(t, torch.full((1000,), 3.0))
    assert torch.equal(chained.wait(), torch.full((1000,), 6.0))
    assert seen == [3.0]


def test_async_op_returns_before_the_peer_arrives():
    run_ranks(returns_before_the_peer_arrives)


def many_ops_in_flight(rank, size, gloo):
    # DDP's pattern: many buckets in flight, waited for afterwards; plus non-contiguous and list outputs.
    tensors = [torch.arange(i * 10, i * 10 + 257, dtype=torch.float64) * (rank + 1) for i in range(20)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    strided = torch.zeros(64, 2)[:, 0]  # non-contiguous
    strided.fill_(rank + 1)
    works.append(dist.all_reduce(strided, op=dist.ReduceOp.MAX, async_op=True))
    gathered = [torch.empty(5, dtype=torch.int32) for _ in range(size)]
    works.append(dist.all_gather(gathered, torch.full((5,), rank, dtype=torch.int32), async_op=True))
    out = torch.empty(3 * size)
    works.append(dist.all_gather_into_tensor(out, torch.full((3,), float(rank)), async_op=True))
    for w in works:
        w.wait()
    total = sum(range(1, size + 1))
    for i, t in enumerate(tensors):
        assert torch.equal(t, torch.arange(i * 10, i * 10 + 257, dtype=torch.float64) * total), f"bucket {i}"
    assert torch.equal(strided, torch.full((64,), float(size)))
    for r in range(size):
        assert torch.equal(gathered[r], torch.full((5,), r, dtype=torch.int32))
    assert torch.equal(out, torch.arange(size).repeat_interleave(3).float())


def test_many_async_ops_in_flight_complete_in_order():
    run_ranks(many_ops_in_flight, size=3)


def failed_async_op_raises_from_wait_and_future(rank, size, gloo):
    t = torch.ones(4)
    if rank == 0:
        # Rank 1 never joins this all_reduce: its timeout ends it.
        work = dist.all_reduce(t, async_op=True)
        try:
            work.wait()
            raise AssertionError("wait() returned for an op whose peer never came")
        except RuntimeError as e:
            assert "Timeout" in str(e), str(e)
        assert work.is_completed() and not work.is_success()
    dist.barrier(group=gloo)


def test_failed_async_op_raises_from_wait():
    run_ranks(failed_async_op_raises_from_wait_and_future, timeout_s=3)


def batched_point_to_point(rank, size, gloo):
    # Every rank posts its send before its receive, with messages far larger than any transport buffer: blocking
    # sends would all wait for receivers that never come. batch_isend_irecv coalesces them into one braid group.
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    n = 4 << 20
    out = torch.full((n,), float(rank))
    got = torch.empty(n)
    strided = torch.empty(2 * 1000)[::2]  # non-contiguous receive
    ops = [
        dist.P2POp(dist.isend, out, nxt),
        dist.P2POp(dist.isend, torch.arange(1000, dtype=torch.float32) + rank, prv),
        dist.P2POp(dist.irecv, got, prv),
        dist.P2POp(dist.irecv, strided, nxt),
    ]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    assert torch.equal(got, torch.full((n,), float(prv)))
    assert torch.equal(strided, torch.arange(1000, dtype=torch.float32) + nxt)
    # Collectives in a coalescing region (the fast path: one allreduce_coalesced), then sequence numbers agree.
    ts = [torch.full((k + 1,), float(rank)) for k in range(4)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for t in ts:
            dist.all_reduce(t)
    cm.wait()
    for k, t in enumerate(ts):
        assert torch.equal(t, torch.full((k + 1,), float(sum(range(size))))), f"coalesced all_reduce {k}"
    seq = torch.tensor([dist.group.WORLD._get_backend(torch.device("cpu"))._get_sequence_number_for_group()])
    seqs = [torch.empty_like(seq) for _ in range(size)]
    dist.all_gather(seqs, seq, group=gloo)
    assert all(torch.equal(s, seqs[0]) for s in seqs) and seqs[0].item() > 0, f"sequence numbers {seqs}"


def test_batch_isend_irecv_of_large_messages_does_not_deadlock():
    run_ranks(batched_point_to_point, size=3, timeout_s=60)


def isend_returns_before_the_receiver_arrives(rank, size, gloo):
    # isend of a message far larger than any transport buffer returns at once (braid's progress thread moves it);
    # the receiver posts its receive a second later.
    n = 4 << 20
    if rank == 0:
        start = time.monotonic()
        work = dist.isend(torch.full((n,), 7.0), 1)
        issued = time.monotonic() - start
        assert issued < 0.5, f"isend of 16 MiB took {issued:.2f} s to return"
        assert not work.is_completed(), "the send completed before its receive was posted"
        work.wait()
    else:
        time.sleep(1.0)
        got = torch.empty(n)
        dist.recv(got, 0)
        assert torch.equal(got, torch.full((n,), 7.0))


def test_isend_returns_before_the_receiver_arrives():
    run_ranks(isend_returns_before_the_receiver_arrives)


def crossed_isend_then_recv(rank, size, gloo):
    # Both ranks isend a large tensor and then recv the other's, un-batched: Gloo's pattern. The recv joins the
    # send running on braid's progress thread; in issue order each send would wait for a recv queued behind it.
    n = 4 << 20
    peer = 1 - rank
    work = dist.isend(torch.full((n,), float(rank + 1)), peer)
    got = torch.empty(n)
    dist.recv(got, peer)
    work.wait()
    assert torch.equal(got, torch.full((n,), float(peer + 1)))
    # And a recv posted before a send that the peer answers only after its own send: each completes on its own.
    answer = torch.empty(1000)
    reply = dist.irecv(answer, peer, tag=1)
    dist.send(torch.full((1000,), float(rank)), peer, tag=0)
    first = torch.empty(1000)
    dist.recv(first, peer, tag=0)
    dist.send(first + 10, peer, tag=1)
    reply.wait()
    assert torch.equal(answer, torch.full((1000,), float(rank + 10)))


def test_crossed_isend_then_recv_completes():
    run_ranks(crossed_isend_then_recv, timeout_s=20)
