"""Tables of docs/BENCHMARKS.md, each built from the rows of one run, and the figures prose quotes. Ratios are
taken between rows of one run only; a table that sets two runs side by side says so in its header."""
import math
import re
import statistics

from results import ReportError, parse_size, size_text

PEER_NAMES = {"braid": "braid", "gloo": "Gloo", "mpi": "Open MPI", "nccl": "NCCL", "braid+graph": "braid graph",
              "nccl+graph": "NCCL graph"}


# ---- numbers -------------------------------------------------------------------------------------------------

def gbs(value):
    return f"{value:.1f}" if value >= 100 else f"{value:.2f}"


def us(value):
    return f"{value:.2f}"


def x(value):
    return f"{value:.2g}x" if value < 0.095 else f"{value:.2f}x"


def pct(value):
    return f"{value * 100:.0f}%"


def span(values, fmt=x):
    """'1.04-1.12x': the range of a list of figures, in the format given."""
    lo, hi = fmt(min(values)), fmt(max(values))
    if lo == hi:
        return lo
    suffix = "x" if fmt is x else ("%" if fmt is pct else "")
    return f"{lo[:-len(suffix)] if suffix else lo}-{hi}"


def median(values):
    return statistics.median(list(values))


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(header, rows, align=None):
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


# ---- figures of one run --------------------------------------------------------------------------------------

def busbw(run, impl, size, **kw):
    return run.row(impl, size, **kw)["busbw_gbs"]


def time(run, impl, size, **kw):
    return run.row(impl, size, **kw)["time_us"]


def speedup(run, size, peer, impl="braid", **kw):
    """Peer's time over braid's: above 1, braid is faster (busbw ratio for the same bytes)."""
    return time(run, peer, size, **kw) / time(run, impl, size, **kw)


def time_ratio(run, size, peer, impl="braid", **kw):
    """braid's time over the peer's: below 1, braid is faster."""
    return time(run, impl, size, **kw) / time(run, peer, size, **kw)


def sizes_between(run, lo, hi, impl="braid", **kw):
    lo, hi = parse_size(lo), parse_size(hi)
    found = [s for s in run.sizes(impl=impl, **kw) if lo <= s <= hi]
    if not found:
        raise ReportError(f"{run.file}: no {impl} rows between {size_text(lo)} and {size_text(hi)} ({kw})")
    return found


# ---- a shaped link (the namespace bed) -----------------------------------------------------------------------

def _rate_bits(text):
    m = re.search(r"(\d+)(g|m)bit", text)
    return int(m.group(1)) * (10**9 if m.group(2) == "g" else 10**6) if m else None


def link_gbs(run, variant=None):
    """The shaped rate of the run's links in GB/s, from the file's name (or a variant that names its own)."""
    bits = _rate_bits(variant or "") or _rate_bits(run.name)
    if bits is None:
        raise ReportError(f"{run.file}: no shaped rate (like 10gbit) in its name")
    rails = re.search(r"(\d+)rails", run.name)  # several links per host, each shaped to the rate
    return bits / 8e9 * (int(rails.group(1)) if rails else 1)


def _iters(run):
    m = re.search(r"(?:^|\s)-n\s+(\d+)", run.meta["command"])
    return int(m.group(1)) if m else 20


def trusted(run, row):
    """False where tc's token bucket can have carried the figure: netns-bed.sh gives each link a burst of 4 ms at
    the rate, refilled while a loop waits at its barrier, so a loop that moves fewer than 20 bursts over a link (or a
    row above the link's rate) measures the bucket as much as the rate."""
    rate = link_gbs(run, row.get("variant"))
    wire = 0.5 if (row["impl"] == "braid" and "bf16" in (row.get("variant") or run.name)) else 1.0
    per_call = row["busbw_gbs"] * row["time_us"] * 1e3 * wire  # bytes over each link per call
    burst = max(rate * 1e9 / 250, 65536)  # bytes: 4 ms of traffic at the rate, at least 64 KiB
    calls = row.get("iterations") or _iters(run)  # rows record their loops' calls where the bench chose them
    return row["busbw_gbs"] * wire <= rate and burst <= 0.05 * calls * per_call


def shaped_untrusted_sizes(run, impls, variant=None):
    out = set()
    for r in run.rows:
        if r["impl"] in impls and (variant is None or r.get("variant") == variant) and not trusted(run, r):
            out.add(r["bytes"])
    return sorted(out)


# ---- tables --------------------------------------------------------------------------------------------------

def compare(run, collectives, sizes, peers, small_max="8", dtype=None):
    """Collectives x sizes against peers: time at the small sizes (ratio of times, below 1 braid is faster),
    busbw above (ratio of busbw, above 1 braid is faster)."""
    small = parse_size(small_max)
    header = ["collective", "size", "braid"] + [PEER_NAMES[p] for p in peers] + [f"vs {PEER_NAMES[p]}" for p in peers]
    rows = []
    for coll in collectives:
        for size in sizes:
            nbytes = parse_size(size)
            kw = dict(collective=coll, dtype=dtype)
            cells = [coll, size_text(nbytes)]
            if nbytes <= small:
                cells += [f"{us(time(run, i, nbytes, **kw))} us" for i in ["braid"] + peers]
                cells += [f"time {x(time_ratio(run, nbytes, p, **kw))}" for p in peers]
            else:
                cells += [f"{gbs(busbw(run, i, nbytes, **kw))} GB/s" for i in ["braid"] + peers]
                cells += [x(busbw(run, "braid", nbytes, **kw) / busbw(run, p, nbytes, **kw)) for p in peers]
            rows.append(cells)
    return table(header, rows, ["---", "---"] + ["---:"] * (len(header) - 2))


def sweep(run, peer, sizes=None, collective="allreduce", dtype=None, variant=None, graph=False, lower_is_better=False,
          algorithm=False):
    """One collective across sizes: times, busbw and the ratio (speedup = peer time / braid time, or with
    lower_is_better braid time / peer time), the CUDA-graph rows where the run has them, and with algorithm what
    braid's selector chose for each size."""
    kw = dict(collective=collective, dtype=dtype, variant=variant)
    sizes = [parse_size(s) for s in sizes] if sizes else run.sizes(**kw)
    name = PEER_NAMES[peer]
    ratio_name = f"braid / {name} time" if lower_is_better else "speedup"
    header = ["size", "braid us", f"{name} us", "braid busbw", f"{name} busbw", ratio_name]
    if graph:
        header += ["braid graph us", f"{name} graph us", "graph speedup"]
    if algorithm:
        header += ["braid ran"]
    rows = []
    for s in sizes:
        b, p = run.row("braid", s, **kw), run.row(peer, s, **kw)
        ratio = b["time_us"] / p["time_us"] if lower_is_better else p["time_us"] / b["time_us"]
        cells = [size_text(s), us(b["time_us"]), us(p["time_us"]), gbs(b["busbw_gbs"]), gbs(p["busbw_gbs"]), x(ratio)]
        if graph:
            if run.has("braid+graph", s, **kw):
                bg, pg = run.row("braid+graph", s, **kw), run.row(peer + "+graph", s, **kw)
                cells += [us(bg["time_us"]), us(pg["time_us"]), x(pg["time_us"] / bg["time_us"])]
            else:
                cells += ["", "", ""]
        if algorithm:
            cells.append(f"`{b['algorithm']}`")
        rows.append(cells)
    return table(header, rows)


def targets(label_runs, peer="mpi", floor=0.95, bulk_peer="gloo", bulk_from="1M"):
    """Runs of one collective at several rank counts against bars: per run, braid's busbw over `peer`'s as a
    geometric mean over every size and at the worst size, the sizes below `floor`, and braid over `bulk_peer` at
    and above `bulk_from` (the worst such size; no such column where bulk_peer is None). Each ratio is within one
    run."""
    name = PEER_NAMES[peer]
    header = ["ranks", f"geomean vs {name}", f"worst vs {name}", f"sizes below {floor:.2f}x"]
    if bulk_peer:
        header.append(f"worst vs {PEER_NAMES[bulk_peer]}, >= {size_text(parse_size(bulk_from))}")
    rows = []
    for label, run in label_runs:
        sizes = run.sizes()
        ratio = {s: time(run, peer, s) / time(run, "braid", s) for s in sizes}
        worst = min(sizes, key=ratio.get)
        low = [size_text(s) for s in sizes if ratio[s] < floor]
        row = [label, x(geomean(ratio.values())), f"{x(ratio[worst])} at {size_text(worst)}", ", ".join(low) or "none"]
        if bulk_peer:
            bulk = [s for s in sizes if s >= parse_size(bulk_from)]
            bulk_ratio = {s: time(run, bulk_peer, s) / time(run, "braid", s) for s in bulk}
            bulk_worst = min(bulk, key=bulk_ratio.get)
            row.append(f"{x(bulk_ratio[bulk_worst])} at {size_text(bulk_worst)}")
        rows.append(row)
    return table(header, rows, ["---"] + ["---:"] * (len(header) - 1))


def setting_sweep(rows, base, settings, impl="braid"):
    """One library's runs under several settings of a knob, the settings run in turn, pass after pass (rows:
    [(label, {setting: [run of each pass]})]): per setting, the base setting's time over its own, as a geometric
    mean over every size of every pass (above 1x: faster than the base), with the range of the passes' own means.
    The ratios pair rows of runs made one after the other, each pair within one pass; the header says so."""
    header = ["ranks"] + [f"{s}: time at {base} / time at {s}, runs in turn (range of passes)" for s in settings]
    out = []
    for label, runs in rows:
        cells = [label]
        for s in settings:
            if len(runs[base]) != len(runs[s]):
                raise ReportError(f"{label}: {len(runs[base])} passes at {base} but {len(runs[s])} at {s}")
            per_pass = [geomean(time(b, impl, size) / time(r, impl, size) for size in b.sizes(impl=impl))
                        for b, r in zip(runs[base], runs[s])]
            cells.append(f"{x(geomean(per_pass))} ({span(per_pass)})")
        out.append(cells)
    return table(header, out)


def setting_by_size(label_runs, base, setting, sizes=None, impl="braid"):
    """A knob's two settings run in turn, pass after pass (label_runs: [(label, {setting: [run of each pass]})], a
    label a rank count), size by size: the median over the passes of the base setting's time over the other's, each
    ratio within one pass (above 1x: the setting is faster), and the range of the passes; a column per label."""
    header = ["size"] + [f"{label}: time at {base} / time at {setting}, median of passes (range)"
                         for label, _ in label_runs]
    for label, runs in label_runs:
        if len(runs[base]) != len(runs[setting]):
            raise ReportError(f"{label}: {len(runs[base])} passes at {base} but {len(runs[setting])} at {setting}")
    first = label_runs[0][1][base][0]
    rows = []
    for s in [parse_size(s) for s in sizes] if sizes else first.sizes(impl=impl):
        cells = [size_text(s)]
        for _, runs in label_runs:
            ratios = [time(b, impl, s) / time(r, impl, s) for b, r in zip(runs[base], runs[setting])]
            cells.append(f"{x(median(ratios))} ({span(ratios)})")
        rows.append(cells)
    return table(header, rows)


def ddp_step_row(run, impl, variant=""):
    """The one ddp_step row of bench/ddp_step.py's run for a backend and its knobs (variant)."""
    found = [r for r in run.select(collective="ddp_step") if r["impl"] == impl and (r.get("variant") or "") == variant]
    if len(found) != 1:
        raise ReportError(f"{run.file}: {len(found)} ddp_step rows for {impl} {variant!r} (want exactly one)")
    if found[0].get("wrong", 0) != 0:
        raise ReportError(f"{run.file}: {impl} {variant}: {found[0]['wrong']} parameters differ")
    return found[0]


def ddp_pass_ratios(run, setting, base):
    """Pass by pass, the median step of `setting` over that of `base` (each (impl, variant)), the two having run in
    the same pass."""
    a, b = ddp_step_row(run, *setting), ddp_step_row(run, *base)
    return [p / q for p, q in zip(a["passes_ms"], b["passes_ms"])]


def ddp_steps(label_runs, base=("gloo", "")):
    """bench/ddp_step.py's files (label_runs: [(label, run)]), a row per backend and setting: the median step, each
    pass's median, and the step over the base's (impl, variant) pass by pass, the runs of a pass having run next to
    each other, as the median of the passes (their range)."""
    impl, variant = base
    header = ["run", "backend, knobs", "median step (ms)", "each pass (ms)",
              f"step / {PEER_NAMES.get(impl, impl)}{' ' + variant if variant else ''}'s, median of passes (range)"]
    rows = []
    for label, run in label_runs:
        ref = ddp_step_row(run, impl, variant)
        for r in run.select(collective="ddp_step"):
            ddp_step_row(run, r["impl"], r.get("variant") or "")  # one row each, every replica alike
            if len(r["passes_ms"]) != len(ref["passes_ms"]):
                raise ReportError(f"{run.file}: unequal passes between {r['impl']} and {impl}")
            ratios = [a / b for a, b in zip(r["passes_ms"], ref["passes_ms"])]
            setting = r["impl"] + (f", {r['variant']}" if r.get("variant") else "")
            rows.append([label, setting, f"{r['time_us'] / 1e3:.1f}", ", ".join(f"{v:.1f}" for v in r["passes_ms"]),
                         "-" if r is ref else f"{x(median(ratios))} ({span(ratios)})"])
    return table(header, rows, align=["---", "---"] + ["---:"] * 3)


def in_turn(label_runs, sizes, peer="mpi", impl="braid", collective="allreduce"):
    """Builds (or settings) run in turn, pass after pass, each run with the peer beside it (label_runs: [(label,
    [run of each pass])]): per size and label, the median over the passes of impl's time, and of its time over the
    peer's in the same run. The medians compare across runs; only the ratios to the peer are each run's own. The text
    above the table names the runs."""
    name = PEER_NAMES[peer]
    passes = {len(runs) for _, runs in label_runs}
    if len(passes) != 1:
        raise ReportError(f"in_turn: unequal passes {sorted(passes)} across {[label for label, _ in label_runs]}")
    header = ["size"]
    for label, runs in label_runs:
        header += [f"{label}: us, median of {len(runs)}", f"{label}: time / {name}, median"]
    rows = []
    for s in sizes:
        cells = [size_text(parse_size(s))]
        for _, runs in label_runs:
            cells.append(us(median(time(r, impl, s, collective=collective) for r in runs)))
            cells.append(x(median(time(r, impl, s, collective=collective) / time(r, peer, s, collective=collective)
                                  for r in runs)))
        rows.append(cells)
    return table(header, rows)


def gains_in_turn(pairs, sizes, impl="braid", collective="allreduce"):
    """Per pass of two builds run in turn (pairs: [(before run, after run)]), the geometric mean over `sizes` of the
    before run's time over the after run's (above 1x: after is faster)."""
    return [geomean(time(b, impl, s, collective=collective) / time(a, impl, s, collective=collective) for s in sizes)
            for b, a in pairs]


def pass_pairs(pairs, control, changed, impl="braid", collective="allreduce"):
    """Two builds run in turn, pass after pass (pairs: [(before run, after run)]): per pass, before's time over
    after's as a geometric mean over the `control` sizes (which the change leaves alone: their ratio is how far the
    two runs drifted apart) and over the `changed` sizes, and the second over the first (the change's gain with that
    drift taken out). A last row gives each column's median."""
    drift = gains_in_turn(pairs, control, impl, collective)
    gain = gains_in_turn(pairs, changed, impl, collective)
    net = [g / d for g, d in zip(gain, drift)]
    span_of = lambda sizes: f"{size_text(parse_size(sizes[0]))} to {size_text(parse_size(sizes[-1]))}"
    header = ["pass", f"before / after, {span_of(control)}", f"before / after, {span_of(changed)}", "the second / the first"]
    rows = [[str(i + 1), x(d), x(g), x(n)] for i, (d, g, n) in enumerate(zip(drift, gain, net))]
    rows.append(["median", x(median(drift)), x(median(gain)), x(median(net))])
    return table(header, rows)


def switches(label_runs, sizes, impl="braid"):
    """One implementation's time per call beside the involuntary context switches per call of its busiest rank, run
    by run (a comparison across runs: the text above the table names them): a slow row with switches had a rank off
    its core."""
    header = ["size"] + [f"{label}: us (switches)" for label, _ in label_runs]
    rows = []
    for s in sizes:
        cells = [size_text(parse_size(s))]
        for _, run in label_runs:
            r = run.row(impl, s)
            if "involuntary_switches_per_call" not in r:
                raise ReportError(f"{run.name}: {impl} at {s} has no involuntary_switches_per_call")
            cells.append(f"{us(r['time_us'])} ({r['involuntary_switches_per_call']:.2f})")
        rows.append(cells)
    return table(header, rows)


def variants(run, columns, sizes=None, ratios=(), metric="busbw", impl="braid", collective="allreduce", dtype=None):
    """One implementation's variants side by side (columns: [(label, variant)]), with ratios between them
    (ratios: [(label, numerator variant, denominator variant)], of busbw)."""
    sizes = [parse_size(s) for s in sizes] if sizes else run.sizes(impl=impl, variant=columns[0][1])
    unit = "GB/s" if metric == "busbw" else "us"
    header = ["size"] + [f"{label} ({unit})" for label, _ in columns] + [label for label, _, _ in ratios]
    rows = []
    for s in sizes:
        get = lambda v, i=impl: run.row(i, s, collective=collective, dtype=dtype, variant=v)
        cells = [size_text(s)]
        for _, v in columns:
            r = get(v)
            cells.append(gbs(r["busbw_gbs"]) if metric == "busbw" else us(r["time_us"]))
        for _, a, b in ratios:
            cells.append(x(get(a)["busbw_gbs"] / get(b)["busbw_gbs"]))
        rows.append(cells)
    return table(header, rows)


def bed(run, peers=("gloo", "mpi"), sizes=None, variant=None, peer_variant=None, link=True):
    """A namespace-bed run: busbw of braid and the peers on the shaped link, braid against each, and braid against
    the link's rate. A cell the token bucket can have carried is marked (*) and no ratio is claimed from it."""
    rate = link_gbs(run, variant)
    peers = [p for p in peers if run.select(impl=p, variant=peer_variant)]
    sizes = [parse_size(s) for s in sizes] if sizes else run.sizes(variant=variant)
    header = ["size", "braid"] + [PEER_NAMES[p] for p in peers] + [f"braid / {PEER_NAMES[p]}" for p in peers]
    header += ["braid / link"] if link else []
    rows = []
    for s in sizes:
        b = run.row("braid", s, variant=variant)
        ps = [run.row(p, s, variant=peer_variant) for p in peers]
        mark = lambda r: gbs(r["busbw_gbs"]) + ("" if trusted(run, r) else " (*)")
        cells = [size_text(s), mark(b)] + [mark(p) for p in ps]
        for p in ps:
            ok = trusted(run, b) and trusted(run, p)
            cells.append(x(b["busbw_gbs"] / p["busbw_gbs"]) if ok else "-")
        wire = 0.5 if "bf16" in (variant or run.name) else 1.0
        if link:
            cells.append(pct(b["busbw_gbs"] * wire / rate) if trusted(run, b) else "-")
        rows.append(cells)
    return table(header, rows)


def across(label_runs, sizes, impl="braid", metric="busbw", variant_of=None):
    """Figures of one implementation from several runs side by side: a comparison across runs, which the header
    says; no ratio is drawn from it."""
    header = ["size"] + [f"{label}: {run.name}" for label, run in label_runs]
    rows = []
    for s in sizes:
        cells = [size_text(parse_size(s))]
        for label, run in label_runs:
            v = (variant_of or {}).get(run.name)
            r = run.row(impl, s, variant=v)
            cells.append(gbs(r["busbw_gbs"]) if metric == "busbw" else us(r["time_us"]))
        rows.append(cells)
    return table(header, rows)


def rounds(run, impl, size, columns):
    """Rounds of a run that alternates settings (columns: [(label, variant)]): each round's time per call, then the
    medians over rounds and their difference from the first column."""
    import statistics

    per = {v: {r["round"]: r["time_us"] for r in run.select(impl, size, variant=v)} for _, v in columns}
    rounds_seen = sorted(set().union(*[set(p) for p in per.values()]))
    header = ["round"] + [f"{label} (us per call)" for label, _ in columns]
    rows = [[str(n)] + [us(per[v][n]) if n in per[v] else "" for _, v in columns] for n in rounds_seen]
    medians = [statistics.median(per[v].values()) for _, v in columns]
    rows.append(["median"] + [us(m) for m in medians])
    rows.append(["added"] + [""] + [f"{m - medians[0]:+.2f}" for m in medians[1:]])
    return table(header, rows)


def shared_gpu(run, sizes):
    """Ranks sharing one GPU (scripts/onegpu-bench.sh): time per call of 2 processes and of 2 threads, rank 0's
    device-to-device copy of the same bytes in the same run, and each path's bandwidth over the copy's."""
    header = ["size", "processes (us)", "threads (us)", "copy (us)", "processes / copy", "threads / copy"]
    rows = []
    for s in sizes:
        p = run.row("braid", s, variant="processes")
        t = run.row("braid+threads", s, variant="threads")
        c = run.row("memcpy", s, variant="processes")
        rows.append([size_text(parse_size(s)), us(p["time_us"]), us(t["time_us"]), us(c["time_us"]),
                     x(p["algbw_gbs"] / c["algbw_gbs"]), x(t["algbw_gbs"] / c["algbw_gbs"])])
    return table(header, rows)


def mean_issue(run, impl, variant=None):
    """The mean over every size of `impl`'s host time to issue one call (issue_us)."""
    rows = run.select(impl=impl, variant=variant)
    if not rows:
        raise ValueError(f"{run.file}: no {impl} rows (variant={variant})")
    return sum(r["issue_us"] for r in rows) / len(rows)


def issue_cost(run, sizes, impl="braid", variant=None):
    """The host's time to issue one call against an empty kernel's launch timed in the same run."""
    header = ["size", "issue (us)", "empty launch (us)", "issue / launch"]
    rows = []
    for s in sizes:
        r = run.row(impl, s, variant=variant)
        rows.append([size_text(parse_size(s)), us(r["issue_us"]), us(r["empty_launch_us"]),
                     x(r["issue_us"] / r["empty_launch_us"])])
    return table(header, rows)
