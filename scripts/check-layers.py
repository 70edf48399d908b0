#!/usr/bin/env python3
"""Checks every #include "..." of the library and its clients against braid's dependency rule (docs/ARCHITECTURE.md).

The rule is src/layers.txt: each layer (a folder of src/) with the layers it builds on; a layer may include whatever
its arrows reach, and the public headers of include/braid. A sealed folder (one transport's implementation) is for
its own layer and the layers its line names only. The build gives each layer an include root of just those
folders, so a library include against the rule fails to compile; this check names it before a build and covers the
clients too. The clients (tools/, bench/, python/, mpi/, nccl/) build on the public API only: include/braid and their
own folders, and the folders of other clients that CLIENT_ARROWS names (the peers' drivers in bench/ share the
options, rows and timed loops of braid bench, tools/bench, through tools/CMakeLists.txt's braid_bench_common).

An include is resolved as the compiler would: the including file's folder first, then the client's own root (its
folder, or the repository's root for a name that starts with the client's folder), then the other clients' folders,
then include/, then src/. The check fails on every include against the rule, each named with the files that make
it.

Usage: scripts/check-layers.py [--root DIR]   exit 0: clean; 1: a rule broken (each named); 2: usage.
"""
import argparse
import collections
import os
import re
import sys

RULE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "layers.txt")


def read_rule(path=RULE):
    """src/layers.txt, the rule's one statement (the build reads it too): the arrows, with the public headers of
    include/braid ("braid") beneath every layer (reach() closes them transitively); and the sealed folders, each with
    the layers that may include it besides its own."""
    arrows, sealed = {"braid": []}, {}
    with open(path, encoding="utf-8") as text:
        for line in text:
            line = line.split("#", 1)[0].strip()
            if line.startswith("sealed "):
                folder, _, users = line[len("sealed "):].partition(":")
                folder = folder.strip()
                sealed[folder] = {folder.split("/")[0]} | set(users.split())
            elif line:
                layer, _, below = line.partition(":")
                arrows[layer.strip()] = ["braid"] + below.split()
    return arrows, sealed


ARROWS, SEALED = read_rule()
CLIENTS = ["tools", "bench", "python", "mpi", "nccl"]
# Folders of other clients a client may include, as "client/folder" (what resolve() names such an include).
CLIENT_ARROWS = {"bench": {"tools/bench"}}

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
    if own in CLIENTS and (os.path.exists(os.path.join(root, own, name))
                           or (name.split("/")[0] == own and os.path.exists(os.path.join(root, name)))):
        return None
    for other in CLIENTS if own in CLIENTS else []:
        if other != own and os.path.exists(os.path.join(root, other, name)):
            return f"{other}/{name.split('/')[0]}" if "/" in name else other
    if name.startswith(("src/", "include/")) and os.path.exists(os.path.join(root, name)):
        return "braid" if name.startswith("include/") else name.split("/")[1]  # through the project's root
    if os.path.exists(os.path.join(root, "include", name)):
        return "braid"
    if os.path.exists(os.path.join(root, "src", name)):
        return name.split("/")[0]
    return None  # a system or third-party header, or one a build generates


def sealed_folder(root, including, name):
    """The sealed folder of src/ (layers.txt) that an include names a file in, or None."""
    for candidate in (os.path.join(os.path.dirname(including), name), os.path.join(root, "src", name)):
        if os.path.exists(candidate):
            inside = os.path.relpath(os.path.realpath(candidate), os.path.realpath(os.path.join(root, "src")))
            return next((f for f in SEALED if inside.startswith(f + os.sep)), None)
    return None


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
                if mine is None or (mine not in CLIENTS and mine not in ARROWS):
                    continue  # outside braid, or a folder of src/ the rule does not name (refused in main)
                allowed = {"braid"} | CLIENT_ARROWS.get(mine, set()) if mine in CLIENTS else reach(mine) | {mine}
                with open(path, encoding="utf-8", errors="replace") as text:
                    for name in INCLUDE.findall(text.read()):
                        theirs = resolve(root, path, name)
                        if theirs is not None and theirs not in allowed:
                            broken[(mine, theirs)].add(os.path.relpath(path, root))
                        inside = sealed_folder(root, path, name)
                        if inside is not None and mine not in SEALED[inside]:
                            broken[(mine, inside)].add(os.path.relpath(path, root))
    return broken


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "src")):
        print(f"check-layers: {root} has no src/", file=sys.stderr)
        return 2
    broken = scan(root)
    failures = [f"src/{d} is a folder of src/ but no layer of src/layers.txt: the build would leave it out"
                for d in sorted(os.listdir(os.path.join(root, "src")))
                if os.path.isdir(os.path.join(root, "src", d)) and d not in ARROWS]
    for edge, files in sorted(broken.items()):
        failures.append(f"{edge[0]} includes {edge[1]} in {len(files)} file(s), against the rule: "
                        + ", ".join(sorted(files)))
    for line in failures:
        print(f"check-layers: {line}")
    if failures:
        return 1
    print("check-layers: every include follows the rule")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
