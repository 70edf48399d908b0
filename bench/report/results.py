"""The committed benchmark runs: one file under bench/results is one run (its rows measured by one command on one
machine), loaded with its provenance checked. Everything docs/BENCHMARKS.md shows is looked up here."""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "scripts"))
import bench_meta  # noqa: E402  (scripts/bench_meta.py: the meta check every bench tool applies)

SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20, "G": 1 << 30, "GiB": 1 << 30}


class ReportError(Exception):
    """A results file or a lookup that the document cannot be generated from; the message names the file."""


def parse_size(size):
    """8, '8', '64K', '16 MiB', '1G' -> bytes."""
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(size))
    if not m or m.group(2) not in SIZE_UNITS:
        raise ReportError(f"'{size}' is not a size (8, 64K, 16M, 1G)")
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def size_text(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def _check_meta(name, meta, rows):
    """The provenance every run must carry (bench/results/README.md), by the one check the bench tools share; a
    missing field stops the document."""
    problems = bench_meta.check({"meta": meta, "results": rows})
    if problems:
        raise ReportError(f"{name}: " + "; ".join(problems) + " (bench/results/README.md)")
    if re.search(r"session", name, re.I):
        raise ReportError(f"{name}: results are named for what ran and where, not for when work was done")


class Run:
    """One results file: its meta and its rows, with lookups that fail loudly instead of guessing."""

    def __init__(self, name, meta, rows):
        self.name, self.meta, self.rows = name, meta, rows

    @property
    def file(self):
        return f"bench/results/{self.name}.json"

    def select(self, impl=None, size=None, collective=None, dtype=None, variant=None, redop=None):
        nbytes = None if size is None else parse_size(size)
        out = []
        for r in self.rows:
            if impl is not None and r["impl"] != impl:
                continue
            if nbytes is not None and r["bytes"] != nbytes:
                continue
            if collective is not None and r["collective"] != collective:
                continue
            if dtype is not None and r["dtype"] != dtype:
                continue
            if variant is not None and (r.get("variant") or "") != variant:
                continue
            if redop is not None and r.get("redop") != redop:
                continue
            out.append(r)
        return out

    def row(self, impl, size, collective="allreduce", dtype=None, variant=None):
        found = self.select(impl, size, collective, dtype, variant)
        if len(found) != 1:
            what = f"{impl} {collective} {size_text(parse_size(size))} dtype={dtype} variant={variant}"
            raise ReportError(f"{self.file}: {len(found)} rows for {what} (want exactly one)")
        if found[0].get("wrong", 0) not in (0, -1):
            raise ReportError(f"{self.file}: the row for {impl} {collective} {size} has {found[0]['wrong']} wrong elements")
        return found[0]

    def sizes(self, impl="braid", **kw):
        return sorted({r["bytes"] for r in self.select(impl=impl, **kw)})

    def has(self, impl, size, **kw):
        return len(self.select(impl, size, **kw)) == 1


def load_runs(results_dir):
    runs = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        name = os.path.basename(path)[: -len(".json")]
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise ReportError(f"{path}: {e}")
        if not isinstance(data, dict) or "meta" not in data or "results" not in data:
            raise ReportError(f"{path}: not a results file ({{meta, results}})")
        _check_meta(name, data["meta"], data["results"])
        runs[name] = Run(name, data["meta"], data["results"])
    # Latest last: by the run's date; runs of one day recorded without a time go before those with one, and ties
    # go by name. Nothing outside the files decides it, so every checkout generates the same document.
    def order(run):
        return (str(run.meta["date"])[:10], str(run.meta["date"]), run.name)

    for i, run in enumerate(sorted(runs.values(), key=order)):
        run.order = i
    return runs
