"""torch.distributed through backend "braid": every collective on CPU tensors, compared with Gloo's results
on the same inputs in the same processes; non-contiguous tensors; dtypes braid refuses are named."""

import pytest
import torch
import torch.distributed as dist

from conftest import run_ranks

DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.bfloat16, torch.float16, torch.uint8]


def inputs(rank, n, dtype, salt=0):
    g = torch.Generator().manual_seed(1000 * salt + rank)
    # Small integers: every sum, product, min and max is exact in every dtype, so braid and Gloo must agree bit
    # for bit whatever their reduction order.
    return torch.randint(0, 4, (n,), generator=g).to(dtype)


def same(a, b, what):
    assert a.dtype == b.dtype and torch.equal(a, b), f"{what}: braid {a.tolist()[:8]}... vs gloo {b.tolist()[:8]}..."


def every_collective(rank, size, gloo):
    for dtype in DTYPES:
        for n in (1, 7, 1000, 65537):
            tag = f"{dtype} n={n}"
            ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN]
            if dtype != torch.uint8:
                ops.append(dist.ReduceOp.PRODUCT)
            for op in ops:
                x = inputs(rank, n, dtype, 1)
                a, b = x.clone(), x.clone()
                dist.all_reduce(a, op=op)
                dist.all_reduce(b, op=op, group=gloo)
                same(a, b, f"all_reduce {op} {tag}")
            # broadcast from the last rank
            a, b = inputs(rank, n, dtype, 2), inputs(rank, n, dtype, 2)
            dist.broadcast(a, src=size - 1)
            dist.broadcast(b, src=size - 1, group=gloo)
            same(a, b, f"broadcast {tag}")
            # reduce to rank 0
            a, b = inputs(rank, n, dtype, 3), inputs(rank, n, dtype, 3)
            dist.reduce(a, dst=0)
            dist.reduce(b, dst=0, group=gloo)
            if rank == 0:
                same(a, b, f"reduce {tag}")
            # all_gather (list) and all_gather_into_tensor
            x = inputs(rank, n, dtype, 4)
            la = [torch.empty_like(x) for _ in range(size)]
            lb = [torch.empty_like(x) for _ in range(size)]
            dist.all_gather(la, x)
            dist.all_gather(lb, x, group=gloo)
            for r in range(size):
                same(la[r], lb[r], f"all_gather {tag} block {r}")
            flat = torch.empty(n * size, dtype=dtype)
            dist.all_gather_into_tensor(flat, x)
            same(flat, torch.cat(lb), f"all_gather_into_tensor {tag}")
            # reduce_scatter_tensor and reduce_scatter (list); Gloo lacks them on CPU: compare with all_reduce
            big = inputs(rank, n * size, dtype, 5)
            out = torch.empty(n, dtype=dtype)
            dist.reduce_scatter_tensor(out, big)
            ref = big.clone()
            dist.all_reduce(ref, group=gloo)
            same(out, ref[rank * n : (rank + 1) * n], f"reduce_scatter_tensor {tag}")
            out2 = torch.empty(n, dtype=dtype)
            dist.reduce_scatter(out2, list(big.chunk(size)))
            same(out2, ref[rank * n : (rank + 1) * n], f"reduce_scatter {tag}")
            # all_to_all_single, even and uneven splits
            x = inputs(rank, n * size, dtype, 6)
            a, b = torch.empty_like(x), torch.empty_like(x)
            dist.all_to_all_single(a, x)
            dist.all_to_all_single(b, x, group=gloo)
            same(a, b, f"all_to_all_single {tag}")
            # gather and scatter to/from rank 0
            x = inputs(rank, n, dtype, 7)
            ga = [torch.empty_like(x) for _ in range(size)] if rank == 0 else None
            gb = [torch.empty_like(x) for _ in range(size)] if rank == 0 else None
            dist.gather(x, ga, dst=0)
            dist.gather(x, gb, dst=0, group=gloo)
            if rank == 0:
                for r in range(size):
                    same(ga[r], gb[r], f"gather {tag} block {r}")
            parts = [inputs(r, n, dtype, 8) for r in range(size)] if rank == 0 else None
            sa, sb = torch.empty(n, dtype=dtype), torch.empty(n, dtype=dtype)
            dist.scatter(sa, parts, src=0)
            dist.scatter(sb, parts, src=0, group=gloo)
            same(sa, sb, f"scatter {tag}")
    dist.barrier()


@pytest.mark.parametrize("size", [2, 3])
def test_every_collective_matches_gloo(size):
    run_ranks(every_collective, size=size)


def uneven_all_to_all_and_p2p(rank, size, gloo):
    # Rank r sends r + 1 rows to every peer.
    in_splits = [rank + 1] * size
    out_splits = [r + 1 for r in range(size)]
    x = torch.arange(sum(in_splits) * 3, dtype=torch.float32).reshape(-1, 3) + 100 * rank
    a = torch.empty(sum(out_splits), 3)
    b = torch.empty(sum(out_splits), 3)
    dist.all_to_all_single(a, x, out_splits, in_splits)
    dist.all_to_all_single(b, x, out_splits, in_splits, group=gloo)
    same(a, b, "uneven all_to_all_single")
    # all_to_all on lists of different sizes
    ins = [torch.full((rank + r + 1,), float(rank)) for r in range(size)]
    outs = [torch.empty(r + rank + 1) for r in range(size)]
    dist.all_to_all(outs, ins)
    for r in range(size):
        same(outs[r], torch.full((r + rank + 1,), float(r)), f"all_to_all from {r}")
    # send/recv around a ring, and batch_isend_irecv both ways at once
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    out = torch.full((5,), float(rank))
    got = torch.empty(5)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, out, nxt), dist.P2POp(dist.irecv, got, prv)])
    for req in reqs:
        req.wait()
    same(got, torch.full((5,), float(prv)), "batch_isend_irecv")
    if rank == 0:
        dist.send(torch.tensor([42.0]), dst=1)
    elif rank == 1:
        t = torch.empty(1)
        dist.recv(t, src=0)
        same(t, torch.tensor([42.0]), "send/recv")


def test_uneven_all_to_all_and_point_to_point():
    run_ranks(uneven_all_to_all_and_p2p, size=3)


def receives_from_any_source(rank, size, gloo):
    # Every other rank sends rank 0 two tensors that say who sent them; rank 0 takes them from any source, as
    # Gloo's recv_anysource does, blocking and async, and each sender's two arrive in order.
    if rank != 0:
        for k in range(2):
            dist.send(torch.full((6,), float(10 * rank + k)), dst=0, tag=4)
    else:
        seen = {r: 0 for r in range(1, size)}
        for i in range(2 * (size - 1)):
            t = torch.empty(6)
            if i % 2 == 0:
                src = dist.recv(t, tag=4)
            else:
                work = dist.irecv(t, tag=4)
                work.wait()
                src = work._source_rank()
            assert src in seen, f"receive {i} named rank {src}"
            same(t, torch.full((6,), float(10 * src + seen[src])), f"message {seen[src]} of rank {src}")
            seen[src] += 1
        assert all(n == 2 for n in seen.values()), seen
    dist.barrier()


def test_receives_from_any_source_name_their_sender():
    run_ranks(receives_from_any_source, size=3)


def collectives_beside_point_to_point(rank, size, gloo):
    # Each rank posts irecv, then all_reduce and barrier, then the send its peer's irecv waits for: the collectives do
    # not wait for the pending receive, as on Gloo, and a rank that reached the barrier first still gets its message.
    peer = 1 - rank
    got = torch.empty(1000)
    work = dist.irecv(got, src=peer, tag=9)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    dist.barrier()
    dist.send(torch.full((1000,), float(rank)), dst=peer, tag=9)
    work.wait()
    same(t, torch.tensor([3.0]), "all_reduce beside a pending irecv")
    same(got, torch.full((1000,), float(peer)), "the message sent after the collectives")


def test_collectives_do_not_wait_for_pending_point_to_point():
    run_ranks(collectives_beside_point_to_point, size=2)


def refused_layouts(rank, size, gloo):
    # Each layout torch's own backends refuse is refused before anything moves; the bytes around the tensors stay
    # as they were (a split past a tensor's end used to read or write outside it).
    backing = torch.full((16,), -1.0)
    out = backing[:4]
    x = torch.arange(4.0) + 10 * rank
    cases = [
        ("output split sizes add up to more", lambda: dist.all_to_all_single(out, x, [4, 4], [2, 2])),
        ("input split sizes add up to more", lambda: dist.all_to_all_single(out, x[:2], [2, 2], [2, 2])),
        ("1 input split sizes for 2 ranks", lambda: dist.all_to_all_single(out, x, [2, 2], [4])),
        ("split size -1 for rank 0 is negative", lambda: dist.all_to_all_single(out, x, [2, 2], [-1, 5])),
        ("add up to 3, not the 4 rows", lambda: dist.all_to_all_single(out, x, [1, 2], [2, 2])),
        ("3 rows do not divide evenly over 2 ranks",
         lambda: dist.all_to_all_single(torch.empty(3, 2), torch.arange(6.0).reshape(3, 2))),
        ("no dimension to split", lambda: dist.all_to_all_single(torch.zeros(()), torch.zeros(()))),
        ("allgather_into_tensor: the output is Double and the input Float",
         lambda: dist.all_gather_into_tensor(torch.empty(4, dtype=torch.float64), x[:2])),
        ("reduce_scatter_tensor: the output is Double and the input Float",
         lambda: dist.reduce_scatter_tensor(torch.empty(2, dtype=torch.float64), x)),
    ]
    for message, call in cases:
        with pytest.raises(RuntimeError, match=message):
            call()
    same(backing, torch.full((16,), -1.0), "the bytes around a refused all_to_all_single's output")
    # The communicator still works after the refusals.
    a = torch.empty(4)
    dist.all_to_all_single(a, x, [2, 2], [2, 2])
    same(a, torch.tensor([0.0, 1.0, 10.0, 11.0]) + 2 * rank, "all_to_all_single after refusals")


def test_splits_and_types_that_do_not_fit_the_tensors_are_refused():
    run_ranks(refused_layouts, size=2)


def split_groups(rank, size, gloo):
    # split_group keeps each split's order: global rank 2 is rank 0 of the first split.
    first = dist.split_group(split_ranks=[[2, 0], [1]])
    assert first is not None
    expected_rank = {0: 1, 1: 0, 2: 0}[rank]
    assert dist.get_rank(first) == expected_rank, f"rank {rank} is {dist.get_rank(first)} in its split"
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t, group=first)
    same(t, torch.tensor([4.0 if rank in (0, 2) else 2.0]), "all_reduce in a split")
    b = torch.tensor([float(rank)])
    dist.broadcast(b, group_src=0, group=first)
    same(b, torch.tensor([2.0 if rank in (0, 2) else 1.0]), "broadcast from a split's rank 0")
    # A rank in no split gets no group, and the others' group works beside the parent.
    second = dist.split_group(split_ranks=[[0, 1]])
    if rank == 2:
        assert second is None or second == dist.GroupMember.NON_GROUP_MEMBER
    else:
        u = torch.tensor([float(rank + 1)])
        dist.all_reduce(u, group=second)
        same(u, torch.tensor([3.0]), "all_reduce in a split of two")
    w = torch.tensor([1.0])
    dist.all_reduce(w)
    same(w, torch.tensor([float(size)]), "all_reduce on the parent after its splits")


@pytest.mark.skipif(tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) < (2, 15),
                    reason="braid's split_group builds against torch 2.15 and later")
def test_split_group_gives_each_split_a_braid_group_in_its_order():
    run_ranks(split_groups, size=3)


def special_cases(rank, size, gloo):
    # Non-contiguous: a transposed view is reduced in place.
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) + rank
    view = base.t()
    assert not view.is_contiguous()
    dist.all_reduce(view)
    same(base, (torch.arange(12, dtype=torch.float32).reshape(3, 4) * size + sum(range(size))), "non-contiguous")
    # AVG and PREMUL_SUM
    x = torch.full((4,), float(rank + 1))
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    same(x, torch.full((4,), sum(range(1, size + 1)) / size), "avg")
    y = torch.full((4,), 1.0)
    dist.all_reduce(y, op=dist._make_nccl_premul_sum(2.0))
    same(y, torch.full((4,), 2.0 * size), "premul_sum")
    # async_op: the work completes and its future holds the result
    z = torch.ones(8)
    work = dist.all_reduce(z, async_op=True)
    work.wait()
    same(work.get_future().wait()[0], torch.full((8,), float(size)), "future")
    # float8: moved as bytes, reduced in float32 and rounded once (small integers: exact)
    b = torch.full((5,), float(rank + 2)).to(torch.float8_e5m2)
    dist.broadcast(b, src=1)
    same(b.float(), torch.full((5,), 3.0), "broadcast float8_e5m2")
    f = torch.full((7,), float(rank + 1)).to(torch.float8_e4m3fn)
    dist.all_reduce(f)
    same(f.float(), torch.full((7,), float(sum(range(1, size + 1)))), "all_reduce float8_e4m3fn")
    # a dtype braid does not carry is named
    with pytest.raises(RuntimeError, match="Float8_e4m3fnuz are not supported"):
        dist.broadcast(torch.ones(2).to(torch.float8_e4m3fnuz), src=0)
    dist.barrier()


def test_non_contiguous_avg_premul_async_and_refused_dtypes():
    run_ranks(special_cases, size=2)
