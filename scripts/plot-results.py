#!/usr/bin/env python3
"""Plots a device results file (bench/results/nvlink-*.json, as scripts/merge-results.py writes it): per collective
and dtype, braid's and NCCL's bus bandwidth against the message size (log-log), and below it NCCL's time over
braid's (above 1: braid is faster), with the CUDA-graph rows where the file has them. Needs matplotlib.

Usage: scripts/plot-results.py RESULTS.json OUT.png
"""
import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    with open(argv[0]) as f:
        data = json.load(f)
    series = defaultdict(lambda: defaultdict(dict))  # (collective, dtype) -> impl -> bytes -> row
    for row in data["results"]:
        series[(row["collective"], row["dtype"])][row["impl"]][row["bytes"]] = row
    panels = sorted(series)
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 7), squeeze=False, sharex="col")
    for col, key in enumerate(panels):
        impls = series[key]
        top, bottom = axes[0][col], axes[1][col]
        for impl in sorted(impls):
            sizes = sorted(impls[impl])
            top.plot(sizes, [max(impls[impl][b]["busbw_gbs"], 1e-3) for b in sizes], marker="o", ms=3,
                     linestyle="--" if "graph" in impl else "-", label=impl)
        for braid, nccl in (("braid", "nccl"), ("braid+graph", "nccl+graph")):
            if braid in impls and nccl in impls:
                sizes = sorted(set(impls[braid]) & set(impls[nccl]))
                bottom.plot(sizes, [impls[nccl][b]["time_us"] / impls[braid][b]["time_us"] for b in sizes],
                            marker="o", ms=3, linestyle="--" if "graph" in braid else "-", label=f"{nccl} / {braid}")
        top.set_title(f"{key[0]} {key[1]}")
        top.set_xscale("log", base=2)
        top.set_yscale("log")
        top.set_ylabel("busbw (GB/s)")
        top.grid(True, which="both", alpha=0.3)
        top.legend(fontsize=7)
        bottom.axhline(1.0, color="grey", linewidth=0.8)
        bottom.set_xscale("log", base=2)
        bottom.set_xlabel("message size (bytes)")
        bottom.set_ylabel("NCCL time / braid time")
        bottom.grid(True, which="both", alpha=0.3)
        bottom.legend(fontsize=7)
    meta = data.get("meta", {})
    mach = meta.get("machine", {})
    if isinstance(mach, dict):  # bench/results/README.md: {cpu, cores, gpus, link}
        mach = ", ".join([f"{mach.get('cpu', '?')} ({mach.get('cores', '?')} cores)"] + mach.get("gpus", []))
    fig.suptitle(f"{mach}  {meta.get('date', '')}  commit {meta.get('commit', '?')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(argv[1], dpi=110)
    print(f"{argv[1]}: {len(panels)} panels")


if __name__ == "__main__":
    main(sys.argv[1:])
