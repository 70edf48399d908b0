"""mpi4py + CuPy through the interposer: every call it takes, on GPU arrays, gives the same bytes as the same call
on NumPy arrays (which pass through to the stock MPI). Run under mpirun with LD_PRELOAD=libbraid_mpi.so; without
the interposer the stock MPI (no CUDA support) crashes on the first GPU array. Exits 77 (skipped) without mpi4py,
CuPy or a GPU."""

import sys

import numpy as np

try:
    import cupy as cp
    from mpi4py import MPI
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: {e}")
    sys.exit(77)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
try:
    gpus = cp.cuda.runtime.getDeviceCount()
except cp.cuda.runtime.CUDARuntimeError:
    gpus = 0
if gpus == 0:
    print("skipped: no GPU")
    sys.exit(77)
cp.cuda.Device(rank % gpus).use()

checked = []
failed = []


def exact(n, dtype, salt, who=None):
    """Small integers: every order of summing them gives the same bits, so host and device must agree exactly."""
    rng = np.random.default_rng((rank if who is None else who) * 7919 + salt)
    return rng.integers(-8, 9, size=n).astype(dtype)


def compare(name, want, got_device):
    cp.cuda.Device().synchronize()
    got = cp.asnumpy(got_device)
    checked.append(name)
    if want.shape != got.shape or want.tobytes() != got.tobytes():
        bad = int(np.count_nonzero(want != got)) if want.shape == got.shape else -1
        failed.append(f"{name}: {bad} of {want.size} elements differ")


def both(name, make, run):
    """make() gives NumPy inputs; run(xp_arrays) calls MPI on them. Host first, then the same on the GPU."""
    host = make()
    dev = [cp.asarray(a) for a in host]
    cp.cuda.Device().synchronize()  # CUDA-aware MPI reads the buffers now: the copies must be done
    run(host)
    run(dev)
    compare(name, host[-1], dev[-1])


n = 100_003  # odd: no kernel's vector width divides it
for dtype, mpitype in [(np.float32, MPI.FLOAT), (np.float64, MPI.DOUBLE), (np.int32, MPI.INT), (np.int64, MPI.INT64_T)]:
    for opname, op in (("sum", MPI.SUM), ("max", MPI.MAX), ("min", MPI.MIN)):
        tag = f"{np.dtype(dtype).name} {opname}"
        both(f"Allreduce {tag}", lambda: [exact(n, dtype, 1), np.zeros(n, dtype)],
             lambda a: comm.Allreduce([a[0], mpitype], [a[1], mpitype], op=op))
        both(f"Allreduce in place {tag}", lambda: [exact(n, dtype, 2)],
             lambda a: comm.Allreduce(MPI.IN_PLACE, [a[0], mpitype], op=op))
for bits in (8, 4096, 1 << 22):  # small, mid and large (bytes / 4 floats)
    m = bits // 4
    both(f"Allreduce sum {bits} B", lambda: [exact(m, np.float32, 3), np.zeros(m, np.float32)],
         lambda a: comm.Allreduce(a[0], a[1], op=MPI.SUM))

both("Reduce to 1", lambda: [exact(n, np.float32, 4), np.zeros(n, np.float32)],
     lambda a: comm.Reduce(a[0], a[1], op=MPI.SUM, root=size - 1))
both("Bcast from 0", lambda: [exact(n, np.float64, 5, who=0) if rank == 0 else np.zeros(n, np.float64)],
     lambda a: comm.Bcast(a[0], root=0))
both("Allgather", lambda: [exact(n, np.int32, 6), np.zeros(n * size, np.int32)],
     lambda a: comm.Allgather(a[0], a[1]))
counts = [1000 + 17 * r for r in range(size)]
displs = [sum(counts[:r]) + 3 * r for r in range(size)]
both("Allgatherv", lambda: [exact(counts[rank], np.float32, 7), np.zeros(displs[-1] + counts[-1], np.float32)],
     lambda a: comm.Allgatherv(a[0], [a[1], counts, displs, MPI.FLOAT]))
both("Reduce_scatter_block", lambda: [exact(n * size, np.float32, 8), np.zeros(n, np.float32)],
     lambda a: comm.Reduce_scatter_block(a[0], a[1], op=MPI.SUM))
both("Reduce_scatter", lambda: [exact(sum(counts), np.int64, 9), np.zeros(counts[rank], np.int64)],
     lambda a: comm.Reduce_scatter(a[0], a[1], recvcounts=counts, op=MPI.SUM))
both("Alltoall", lambda: [exact(n * size, np.float32, 10), np.zeros(n * size, np.float32)],
     lambda a: comm.Alltoall(a[0], a[1]))
sc = [10 + 7 * ((rank + p) % size) for p in range(size)]  # what this rank sends to p
rc = [10 + 7 * ((p + rank) % size) for p in range(size)]  # what p sends to this rank
sd = [sum(sc[:p]) for p in range(size)]
rd = [sum(rc[:p]) + p for p in range(size)]
both("Alltoallv", lambda: [exact(sum(sc), np.float64, 11), np.zeros(rd[-1] + rc[-1], np.float64)],
     lambda a: comm.Alltoallv([a[0], sc, sd, MPI.DOUBLE], [a[1], rc, rd, MPI.DOUBLE]))
both("Gather to 0", lambda: [exact(n, np.float32, 12), np.zeros(n * size, np.float32)],
     lambda a: comm.Gather(a[0], a[1], root=0))
both("Gatherv to 1", lambda: [exact(counts[rank], np.int32, 13), np.zeros(displs[-1] + counts[-1], np.int32)],
     lambda a: comm.Gatherv(a[0], [a[1], counts, displs, MPI.INT], root=1 % size))
both("Scatter from 0", lambda: [exact(n * size, np.float32, 14, who=0), np.zeros(n, np.float32)],
     lambda a: comm.Scatter(a[0], a[1], root=0))
both("Scatterv from 0", lambda: [exact(displs[-1] + counts[-1], np.float32, 15, who=0), np.zeros(counts[rank], np.float32)],
     lambda a: comm.Scatterv([a[0], counts, displs, MPI.FLOAT], a[1], root=0))


def nonblocking(a):
    reqs = [comm.Iallreduce(a[0], a[1], op=MPI.SUM), comm.Ibcast(a[2], root=0)]
    MPI.Request.Waitall(reqs)


both("Iallreduce + Ibcast, Waitall",
     lambda: [exact(n, np.float32, 16), np.zeros(n, np.float32), exact(n, np.float32, 17, who=0)],
     nonblocking)


def iallgather_test(a):
    req = comm.Iallgather(a[0], a[1])
    while not req.Test():
        pass


both("Iallgather, Test", lambda: [exact(n, np.int32, 18), np.zeros(n * size, np.int32)], iallgather_test)

# Point to point around a ring.
nxt, prv = (rank + 1) % size, (rank - 1) % size


def sendrecv(a):
    comm.Sendrecv(a[0], dest=nxt, sendtag=5, recvbuf=a[1], source=prv, recvtag=5)


both("Sendrecv ring", lambda: [exact(n, np.float32, 19), np.zeros(n, np.float32)], sendrecv)


def isend_irecv(a):
    reqs = [comm.Irecv(a[1], source=prv, tag=6), comm.Isend(a[0], dest=nxt, tag=6)]
    MPI.Request.Waitall(reqs)


both("Isend/Irecv ring", lambda: [exact(n, np.float64, 20), np.zeros(n, np.float64)], isend_irecv)


def send_recv(a):
    if rank % 2 == 0:
        comm.Send(a[0], dest=nxt, tag=7)
        comm.Recv(a[1], source=prv, tag=7)
    else:
        comm.Recv(a[1], source=prv, tag=7)
        comm.Send(a[0], dest=nxt, tag=7)


both("Send/Recv ring", lambda: [exact(n, np.int64, 21), np.zeros(n, np.int64)], send_recv)

everyone = comm.allgather(failed)
if rank == 0:
    bad = [f"rank {r}: {f}" for r, fs in enumerate(everyone) for f in fs]
    print(f"mpi4py + CuPy: {len(checked)} calls on GPU arrays, {len(bad)} differ from the host run ({size} ranks)")
    for line in bad[:20]:
        print(line)
sys.exit(1 if any(everyone) else 0)
