"""The performance bars the project has set itself, each as written, judged from the latest committed run that
measured it. A bar over a range of sizes is judged by the rule written with it: 'every size' (each measured size
meets it) or 'class' (the geometric mean of the sizes' ratios meets it and no size is worse than 0.85x the bar)."""
import re
import statistics

from results import ReportError, parse_size, size_text
from tables import geomean, link_gbs, pct, span, trusted, x


# A class passes when no size is worse than this fraction of the bar.
CLASS_FLOOR = 0.85


class Check:
    """One comparison a bar makes: braid against `peer` (or the link, or another variant of braid) over a range of
    sizes, for each dtype named."""

    def __init__(self, metric, lo, hi, op, bound, peer=None, collectives=("allreduce",), dtypes=(None,),
                 variant=None, peer_variant=None, impl="braid"):
        self.metric, self.lo, self.hi, self.op, self.bound = metric, parse_size(lo), parse_size(hi), op, bound
        self.peer, self.collectives, self.dtypes = peer, collectives, dtypes
        self.variant, self.peer_variant, self.impl = variant, peer_variant, impl

    def _rows(self, run, impl, variant, **kw):
        """Rows of impl; variant None takes any, a tuple any of the variants it names ("" for an untagged row)."""
        if isinstance(variant, tuple):
            return [r for r in run.select(impl=impl, **kw) if (r.get("variant") or "") in variant]
        return run.select(impl=impl, variant=variant, **kw)

    def ratios(self, run, coll, dtype):
        """size -> ratio for every size in range that the run measured for braid and the other side. On a shaped
        link a size either side of which the token bucket can have carried gives no bandwidth ratio (a time ratio
        stands: the bucket only lets both sides' bursts through faster)."""
        out = {}
        shaped = run.name.startswith("netns-") and self.metric != "time"
        for r in self._rows(run, self.impl, self.variant, collective=coll, dtype=dtype):
            s = r["bytes"]
            if not self.lo <= s <= self.hi:
                continue
            if self.metric == "link":
                if trusted(run, r):
                    wire = 0.5 if "bf16" in (r.get("variant") or "") else 1.0
                    out[s] = r["busbw_gbs"] * wire / link_gbs(run, r.get("variant"))
                continue
            other = self._rows(run, self.peer, self.peer_variant, size=s, collective=coll, dtype=dtype)
            if len(other) != 1:
                continue
            if shaped and not (trusted(run, r) and trusted(run, other[0])):
                continue
            if self.metric == "time":
                out[s] = r["time_us"] / other[0]["time_us"]
            else:
                out[s] = r["busbw_gbs"] / other[0]["busbw_gbs"]
        return out


class Absolute(Check):
    """A figure of braid's own rows against a fixed bound: its time per call in microseconds ("us"), or its host time
    to issue a call over an empty kernel's launch timed in the same run ("issue")."""

    def __init__(self, metric, lo, hi, op, bound, impl="braid", variant=None):
        super().__init__(metric, lo, hi, op, bound, variant=variant, impl=impl)

    def ratios(self, run, coll, dtype):
        out = {}
        for r in self._rows(run, self.impl, self.variant, collective=coll, dtype=dtype):
            if self.lo <= r["bytes"] <= self.hi:
                out[r["bytes"]] = r["time_us"] if self.metric == "us" else r["issue_us"] / r["empty_launch_us"]
        return out


class AddedTime(Check):
    """The time a preloaded library adds to each call: the median over rounds of the run's 'preloaded' rows minus
    the median of its 'absent' rows, at each size in range (microseconds)."""

    def __init__(self, lo, hi, bound, impl="mpi", with_="interposer preloaded", without="interposer absent"):
        super().__init__("added", lo, hi, "<=", bound)
        self.impl, self.with_, self.without = impl, with_, without

    def ratios(self, run, coll, dtype):
        out = {}
        for s in sorted({r["bytes"] for r in run.select(impl=self.impl, collective=coll, dtype=dtype)}):
            if not self.lo <= s <= self.hi:
                continue
            a = [r["time_us"] for r in run.select(self.impl, s, coll, dtype, self.with_)]
            b = [r["time_us"] for r in run.select(self.impl, s, coll, dtype, self.without)]
            if a and b:
                out[s] = statistics.median(a) - statistics.median(b)
        return out


def _ratio(v):
    """A ratio, with more decimals near 1, where a bar can be missed by less than two show."""
    if abs(v - 1) < 0.001:
        return f"{v:.4f}x"
    return f"{v:.3f}x" if abs(v - 1) < 0.01 else x(v)


# How each check's figures are written: a tenth of a percent of a link (a bar can be missed by less than one), a
# signed added time, a time; ratios otherwise.
_FORMATS = {
    "link": lambda v: f"{v * 100:.1f}%",
    "added": lambda v: f"{v:+.2f} us",
    "us": lambda v: f"{v:.1f} us",
}


class Bar:
    def __init__(self, area, text, runs, checks, rule="every size", needs=None, floor=CLASS_FLOOR):
        self.area, self.text, self.runs, self.checks, self.rule, self.needs = area, text, runs, checks, rule, needs
        # Rule "class": how far below the bar (a fraction of it) the worst size may fall.
        self.floor = floor

    def latest_run(self, runs):
        """The most recent run matching the bar's runs pattern that measured every check of it."""
        found = [r for name, r in runs.items() if re.fullmatch(self.runs, name)
                 and all(c.ratios(r, coll, d) for c in self.checks for coll in c.collectives for d in c.dtypes)]
        return max(found, key=lambda r: r.order) if found else None

    def judge(self, runs):
        """(run or None, verdict, what was measured)."""
        run = self.latest_run(runs)
        if run is None:
            return None, "not measured", self.needs or "no committed run measured it"
        met, parts = True, []
        for c in self.checks:
            fmt = _FORMATS.get(c.metric, _ratio)
            for coll in c.collectives:
                for dtype in c.dtypes:
                    ratios = c.ratios(run, coll, dtype)
                    worst_size = max(ratios, key=ratios.get) if c.op == "<=" else min(ratios, key=ratios.get)
                    worst = ratios[worst_size]
                    ok = (lambda v: v <= c.bound) if c.op == "<=" else (lambda v: v >= c.bound)
                    label = " ".join(t for t in (coll if len(c.collectives) > 1 else "", dtype or "") if t)
                    label = (label + " " if label else "")
                    if self.rule == "class":
                        g = geomean(ratios.values())
                        floor = c.bound / self.floor if c.op == "<=" else c.bound * self.floor
                        this_ok = ok(g) and (worst <= floor if c.op == "<=" else worst >= floor)
                        parts.append(f"{label}{fmt(g)} (geomean), worst {fmt(worst)} at {size_text(worst_size)}")
                    else:
                        this_ok = all(ok(v) for v in ratios.values())
                        sizes = sorted(ratios)
                        if len(sizes) == 1:
                            parts.append(f"{label}{fmt(ratios[sizes[0]])}")
                        else:
                            parts.append(f"{label}{span(list(ratios.values()), fmt)} over "
                                         f"{size_text(sizes[0])}..{size_text(sizes[-1])}, worst at "
                                         f"{size_text(worst_size)}")
                    met = met and this_ok
        return run, "met" if met else "missed", "; ".join(parts)


def _host_shm_bars(host, machine):
    """The host allreduce over shared memory on one kind of lent machine's 16 cores (`host`: the tag its files carry),
    one run per rank count: against Open MPI as a class (the geometric mean meets the bar, no size falls below
    0.95x), against Gloo at every size from 1 MiB."""
    bars = []
    for n in (2, 4, 8, 16):
        runs = rf"shm-allreduce-{n}ranks-{host}-.*"
        where = f"CPU, shared memory, {n} ranks, {machine}"
        bars.append(Bar(where, "allreduce busbw 8 B .. 64 MiB: >= 1.0x Open MPI, no size below 0.95x", runs,
                        [Check("busbw", "8", "64M", ">=", 1.0, "mpi")], rule="class", floor=0.95))
        bars.append(Bar(where, "allreduce busbw 1 MiB .. 64 MiB: >= 3x Gloo", runs,
                        [Check("busbw", "1M", "64M", ">=", 3.0, "gloo")]))
    return bars


def _gpu_bars():
    runs_small = r"nvlink-2xh200.*"
    both = ("float32", "bfloat16")
    return [
        Bar("2xH200, NVLink, vs NCCL", "allreduce time at 8 B .. 64 KiB: <= 0.5x NCCL", runs_small,
            [Check("time", "8", "64K", "<=", 0.5, "nccl", dtypes=both)], rule="class"),
        Bar("2xH200, NVLink, vs NCCL", "allreduce busbw at 256 KiB .. 8 MiB: >= 1.5x NCCL", runs_small,
            [Check("busbw", "256K", "8M", ">=", 1.5, "nccl", dtypes=both)], rule="class"),
        Bar("2xH200, NVLink, vs NCCL", "allreduce busbw at 64 MiB .. 1 GiB: >= 1.0x NCCL", runs_small,
            [Check("busbw", "64M", "1G", ">=", 1.0, "nccl", dtypes=both)], rule="class"),
        Bar("2xH200, NVLink, vs NCCL", "allgather and reduce_scatter busbw at 16 MiB .. 1 GiB: >= 1.0x NCCL",
            runs_small, [Check("busbw", "16M", "1G", ">=", 1.0, "nccl", collectives=("allgather", "reducescatter"),
                               dtypes=("float32",))], rule="class"),
    ]


def _shared_gpu_bars():
    """Ranks that share one GPU (scripts/onegpu-bench.sh): processes, threads, the copy beside them."""
    runs = r"onegpu-h200-.*"
    where = "One H200 shared by 2 ranks"
    kernels = "threads, BRAID_CUDA_SHARED_GPU=kernels"
    return [
        Bar(where, "2 processes: allreduce time at 8 B .. 64 KiB: <= 100 us", runs,
            [Absolute("us", "8", "64K", "<=", 100, variant="processes")]),
        Bar(where, "2 threads of one process: allreduce time at 8 B .. 64 KiB: <= 20 us", runs,
            [Absolute("us", "8", "64K", "<=", 20, impl="braid+threads", variant="threads")]),
        Bar(where, "64 MiB allreduce: algbw >= 0.25x a device-to-device cudaMemcpyAsync of 64 MiB, processes and "
            "threads", runs,
            [Check("busbw", "64M", "64M", ">=", 0.25, "memcpy", variant="processes", peer_variant="processes"),
             Check("busbw", "64M", "64M", ">=", 0.25, "memcpy+threads", variant="threads", peer_variant="threads",
                   impl="braid+threads")]),
        Bar(where, "host time to issue an allreduce on braid's kernels: <= 1.5x an empty kernel's launch", runs,
            [Absolute("issue", "8", "64K", "<=", 1.5, impl="braid+threads", variant=kernels)]),
    ]


# braid's rows without compression: untagged, or the run's uncompressed variant.
UNCOMPRESSED = ("", "BRAID_COMPRESS=")

BARS = [
    Bar("CPU, shared memory, 2 ranks, 2-core VM", "allreduce busbw at 16 MiB: >= 3x Gloo and >= 1.0x Open MPI",
        r"cpu-2core-.*", [Check("busbw", "16M", "16M", ">=", 3.0, "gloo"), Check("busbw", "16M", "16M", ">=", 1.0, "mpi")]),
    Bar("CPU, shared memory, 2 ranks, 2-core VM", "allreduce busbw at 64 MiB: >= 3x Gloo and >= 1.5x Open MPI",
        r"cpu-2core-.*", [Check("busbw", "64M", "64M", ">=", 3.0, "gloo"), Check("busbw", "64M", "64M", ">=", 1.5, "mpi")]),
    Bar("CPU, shared memory, 2 ranks, 2-core VM", "allreduce time at 8 bytes: <= 0.3x Gloo and <= 1.0x Open MPI",
        r"cpu-2core-.*", [Check("time", "8", "8", "<=", 0.3, "gloo"), Check("time", "8", "8", "<=", 1.0, "mpi")]),
    Bar("CPU, shared memory, 2 ranks, 2-core VM", "allgather and reduce_scatter busbw at 16 MiB: >= 2x Gloo",
        r"cpu-2core-.*", [Check("busbw", "16M", "16M", ">=", 2.0, "gloo", collectives=("allgather", "reducescatter"))]),
    Bar("CPU, shared memory, 2 ranks, 2-core VM", "allreduce time at 8 bytes: <= 1.0x Open MPI (the small-size runs)",
        r"shm-allreduce-2ranks-small-2core-.*", [Check("time", "8", "8", "<=", 1.0, "mpi")]),
    *_host_shm_bars("h200host", "the H200 machine's host"),
    *_host_shm_bars("h100host", "an H100 machine's host"),
    *_gpu_bars(),
    Bar("PyTorch, 2xH200, vs backend nccl", "dist.all_reduce time <= 0.8x NCCL at 8 B .. 64 KiB", r"torch-cuda-.*",
        [Check("time", "8", "64K", "<=", 0.8, "nccl", dtypes=("float32", "bfloat16"))]),
    Bar("PyTorch, 2xH200, vs backend nccl", "dist.all_reduce busbw >= 1.5x NCCL at 256 KiB .. 8 MiB", r"torch-cuda-.*",
        [Check("busbw", "256K", "8M", ">=", 1.5, "nccl", dtypes=("float32", "bfloat16"))]),
    Bar("PyTorch, 2xH200, vs backend nccl", "dist.all_reduce busbw >= 1.0x NCCL at 64 MiB .. 1 GiB", r"torch-cuda-.*",
        [Check("busbw", "64M", "1G", ">=", 1.0, "nccl", dtypes=("float32", "bfloat16"))]),
    Bar("PyTorch, 2xH200, vs backend nccl", "DDP training step of examples/ddp_train.py where communication matters: "
        "<= 1.0x NCCL", r"ddp-.*", [Check("time", "1", "1G", "<=", 1.0, "nccl")],
        rule="per step", needs="needs two GPUs; no committed run"),
    Bar("PyTorch, CPU tensors, 2 ranks", "dist.all_reduce busbw >= 3x Gloo at 16 MiB", r"torch-cpu-.*",
        [Check("busbw", "16M", "16M", ">=", 3.0, "gloo")]),
    Bar("Across hosts, 2 namespaces at 10 Gbit/s", "allreduce busbw at >= 16 MiB: >= 90% of the link rate",
        r"netns-2x1-10gbit-.*", [Check("link", "16M", "1G", ">=", 0.9, variant=UNCOMPRESSED)]),
    Bar("Across hosts, 2 namespaces at 10 Gbit/s", "allreduce busbw at >= 16 MiB: >= 2x Gloo and >= 1.3x Open MPI "
        "(--mca btl tcp,self)", r"netns-2x1-10gbit-.*",
        [Check("busbw", "16M", "1G", ">=", 2.0, "gloo", variant=UNCOMPRESSED),
         Check("busbw", "16M", "1G", ">=", 1.3, "mpi", variant=UNCOMPRESSED)]),
    Bar("Across hosts, 4 namespaces at 2.5 Gbit/s", "allreduce busbw at >= 16 MiB: >= 85% of the link rate",
        r"netns-4x1-2500mbit-.*", [Check("link", "16M", "1G", ">=", 0.85, variant=UNCOMPRESSED)]),
    Bar("Across hosts, 2 namespaces at 10 Gbit/s", "BRAID_COMPRESS=bf16: >= 1.7x the uncompressed busbw at 64 MiB",
        r"netns-2x1-10gbit-.*", [Check("busbw", "64M", "64M", ">=", 1.7, "braid", variant="BRAID_COMPRESS=bf16",
                                       peer_variant="BRAID_COMPRESS=")]),
    *_shared_gpu_bars(),
    Bar("GPU buffers between hosts, 2 namespaces at 10 Gbit/s, one GPU shared",
        "allreduce busbw at >= 16 MiB: >= 90% of the link rate and >= 1.0x NCCL's socket transport",
        r"netns-device-2x1-10gbit-.*",
        [Check("link", "16M", "1G", ">=", 0.9), Check("busbw", "16M", "1G", ">=", 1.0, "nccl")]),
    Bar("GPU buffers between hosts, 2 namespaces at 10 Gbit/s, one GPU shared",
        "allreduce time at <= 64 KiB: <= 0.5x NCCL's socket transport", r"netns-device-2x1-10gbit-.*",
        [Check("time", "8", "64K", "<=", 0.5, "nccl")]),
    Bar("GPU buffers over TCP, 2 ranks on 2 GPUs", "busbw >= 1.5x NCCL's socket transport at 16 MiB .. 1 GiB",
        r"gpu-tcp-.*", [Check("busbw", "16M", "1G", ">=", 1.5, "nccl")], needs="needs two GPUs (NCCL refuses two ranks "
        "on one GPU); no committed run"),
    Bar("MPI interposer (libbraid_mpi)", "host-buffer calls: added time per call <= 0.1 us against the MPI alone at 8 B",
        r"mpi-interposer-host-.*", [AddedTime("8", "8", 0.1)], rule="median of rounds"),
    Bar("MPI interposer (libbraid_mpi), 2 GPUs", "MPI_Allreduce on device buffers: time <= 1.2x braid's API at 8 B .. "
        "1 GiB and <= 0.5x NCCL at 8 B .. 64 KiB", r"mpi-interposer-device-.*",
        [Check("time", "8", "1G", "<=", 1.2, "braid-api")], needs="needs two GPUs; no committed run"),
]


def bars_table(runs):
    rows = []
    for bar in BARS:
        run, verdict, measured = bar.judge(runs)
        where = f"`{run.name}`" if run else "-"
        rows.append([bar.area, bar.text, bar.rule, f"**{verdict}**", measured, where])
    header = ["where", "bar, as written", "rule", "verdict", "measured", "run"]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
