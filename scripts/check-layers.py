#!/usr/bin/env python3
"""Checks every #include "..." of the library and its clients against braid's dependency rule (docs/ARCHITECTURE.md).

The rule, as arrows from a layer to the layers it builds on (a layer may include whatever its arrows reach):
  base at the bottom (with the public types of include/braid); transport on base; bootstrap on transport; topology on
  base; tuning on topology; cuda on base; algorithms on transport, patterns, cuda and tuning; core on bootstrap,
  tuning and algorithms; capi (the C ABI) on core. The clients (tools/, bench/, python/, mpi/, nccl/) build on the
  public API only: include/braid and their own folders.

An include is resolved as the compiler would: the including file's folder first, then the client's own root, then
include/, then src/. Includes that break the rule today are listed in KNOWN, each with the number of files that make
it: the check fails on any other, and on a KNOWN entry that no longer occurs as often (lower its count or drop it),
so the list only shrinks.

Usage: scripts/check-layers.py [--root DIR] [--no-known]   exit 0: clean; 1: a rule broken (each named); 2: usage.
"""
import argparse
import collections
import os
import re
import sys

# The arrows, exactly as the rule states them; reach() closes them transitively.
ARROWS = {
    "braid": [],
    "base": ["braid"],
    "transport": ["base"],
    "bootstrap": ["transport"],
    "topology": ["base"],
    "tuning": ["topology"],
    "cuda": ["base"],
    "algorithms": ["transport", "cuda", "tuning"],
    "core": ["bootstrap", "tuning", "algorithms"],
    "capi": ["core"],
}
CLIENTS = ["tools", "bench", "python", "mpi", "nccl"]

# (including layer or client, included layer) -> files that make such an include today. Each is a departure from
# the rule to be removed; the counts only go down.
KNOWN = {
    ("tools", "base"): 16,      # settings, logging, string helpers: for a public introspection header
    ("tools", "topology"): 5,   # braid detect/doctor/env/explain read the machine through src/topology
    ("tools", "tuning"): 2,     # braid model and explain reach the cost model and the selectors
    ("bench", "base"): 2,       # braid-bench-device and the CPU reduction bench: settings and types
    ("bench", "topology"): 1,   # braid-bench-device describes the GPUs in its meta
    ("bench", "cuda"): 1,       # the empty kernel the device bench times launches against
    ("bench", "algorithms"): 1,  # the CPU reduction bench times braid's kernels directly
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")


def reach(layer, seen=None):
    seen = set() if seen is None else seen
    for below in ARROWS[layer]:
        if below not in seen:
            seen.add(below)
            reach(below, seen)
    return seen


def layer_of(root, path):
    """The layer or client a file belongs to: src/<layer>/..., include/braid/..., or a client's top folder."""
    parts = os.path.relpath(path, root).split(os.sep)
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] == "include":
        return "braid"
    return parts[0] if parts[0] in CLIENTS else None


def resolve(root, including, name):
    """Which layer an include names, or None for the including client's own files and headers outside braid."""
    own = layer_of(root, including)
    if os.path.exists(os.path.join(os.path.dirname(including), name)):
        return None if own in CLIENTS else layer_of(root, os.path.join(os.path.dirname(including), name))
    if own in CLIENTS and os.path.exists(os.path.join(root, own, name)):
        return None
    if os.path.exists(os.path.join(root, "include", name)):
        return "braid"
    if os.path.exists(os.path.join(root, "src", name)):
        return name.split("/")[0]
    return None  # a system or third-party header, or one a build generates


def scan(root):
    """(including layer, included layer) -> the files that include across that edge against the rule."""
    broken = collections.defaultdict(set)
    for top in ["src", "include"] + CLIENTS:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d not in ("build", "results", "__pycache__") and not d.endswith(".egg-info")]
            for f in files:
                if not f.endswith(SOURCES):
                    continue
                path = os.path.join(folder, f)
                mine = layer_of(root, path)
                if mine is None:
                    continue
                allowed = {"braid"} if mine in CLIENTS else reach(mine) | {mine}
                with open(path, encoding="utf-8", errors="replace") as text:
                    for name in INCLUDE.findall(text.read()):
                        theirs = resolve(root, path, name)
                        if theirs is not None and theirs not in allowed:
                            broken[(mine, theirs)].add(os.path.relpath(path, root))
    return broken


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--no-known", action="store_true", help="allow none of KNOWN's departures (a tree made to test)")
    args = parser.parse_args(argv)
    known_edges = {} if args.no_known else KNOWN
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "src")):
        print(f"check-layers: {root} has no src/", file=sys.stderr)
        return 2
    broken = scan(root)
    failures = []
    for edge, files in sorted(broken.items()):
        known = known_edges.get(edge, 0)
        if len(files) > known:
            failures.append(f"{edge[0]} includes {edge[1]} in {len(files)} file(s) (the rule allows {known}): "
                            + ", ".join(sorted(files)))
    for edge, known in sorted(known_edges.items()):
        found = len(broken.get(edge, ()))
        if found < known:
            failures.append(f"{edge[0]} includes {edge[1]} in {found} file(s) now, fewer than the {known} KNOWN "
                            "lists: lower its count in scripts/check-layers.py")
    for line in failures:
        print(f"check-layers: {line}")
    if failures:
        return 1
    departures = sum(len(f) for f in broken.values())
    print(f"check-layers: every include follows the rule, but for {departures} known departure(s) in "
          f"{len(broken)} edge(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
