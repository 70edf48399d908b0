#!/usr/bin/env python3
"""Merges results files of one run (each written by braid bench, a peer's driver, braid-bench-device or
bench/torch_bench.py) into one, as bench/results/ keeps them: every row, and one meta with every field the schema
asks (bench/results/README.md, checked by scripts/bench_meta.py before anything is written).

    scripts/merge-results.py OUT.json [--command CMD] [--link TEXT] [--meta KEY=VALUE]...
                             [--variant TAG] IN.json [IN.json...] [--variant TAG IN.json...]...

Rows: each input's, tagged "variant": TAG when a --variant TAG came before the input (up to the next --variant;
--variant '' ends the tagging); a row that already has a variant gets "TAG, its own". Inputs named as
scripts/gpu-check.sh names braid-bench-device's files (nvlink-<coll>-<dtype>-<tag>-<date>.json) get <tag>.

Meta: the first input's (the command, commit, machine and date of what ran first), with
  command          CMD, else the inputs' commands joined by " ; " in order;
  source_commands  every input's command, in order (always: what the rows came from);
  source_commits   each input's commit, where they differ;
  source_binds     each input's bind, where they differ (the merged meta then has no bind);
  source_cpus      each input's cpus, where they differ (the merged meta then has no cpus);
  date             the earliest input's (when the run started);
  machine.link     TEXT, then each input's own link, named for its rows' implementations ("braid: shared memory");
  peers            the inputs' peer versions, of the peers whose rows the file holds;
then --meta KEY=VALUE (VALUE read as JSON where it is JSON, else as text) over all of that.
"""
import copy
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_meta  # noqa: E402


def parse(argv):
    out, command, link, extra, inputs = None, None, None, {}, []
    variant = None
    args = iter(argv)
    for a in args:
        try:
            if a == "--meta":
                key, _, value = next(args).partition("=")
                try:
                    extra[key] = json.loads(value)
                except ValueError:
                    extra[key] = value
            elif a == "--command":
                command = next(args)
            elif a == "--link":
                link = next(args)
            elif a == "--variant":
                variant = next(args) or None
            elif a.startswith("--"):
                sys.exit(f"merge-results: unknown option {a}\n{__doc__}")
            elif out is None:
                out = a
            else:
                inputs.append((a, variant))
        except StopIteration:
            sys.exit(f"merge-results: {a} needs a value\n{__doc__}")
    if out is None or not inputs:
        sys.exit(__doc__)
    return out, command, link, extra, inputs


def main(argv):
    out, command, link, extra, inputs = parse(argv)
    metas, rows = [], []
    for path, variant in inputs:
        with open(path) as f:
            data = json.load(f)
        meta = data.get("meta", {})
        metas.append((path, meta, {bench_meta.peer_of(r.get("impl", "")) for r in data.get("results", [])}))
        match = re.search(r"nvlink-[a-z]+-[a-z0-9]+-(.+)-\d{4}-\d{2}-\d{2}\.json$", path)
        tag = variant or (match.group(1) if match else None)
        for row in data.get("results", []):
            if tag:
                row["variant"] = f"{tag}, {row['variant']}" if row.get("variant") else tag
            rows.append(row)

    merged = copy.deepcopy(metas[0][1])
    commands = [m.get("command", f"(no command in {p})") for p, m, _ in metas]
    merged["command"] = command or " ; ".join(c for i, c in enumerate(commands) if i == 0 or c != commands[i - 1])
    merged["source_commands"] = commands
    # Placements that differ between the inputs, asked (bind) or got (cpus), are listed per input, as commits are; the
    # first's is not everyone's.
    for key, listed in (("bind", "source_binds"), ("cpus", "source_cpus")):
        values = [m.get(key) for _, m, _ in metas]
        if len({json.dumps(v, sort_keys=True) for v in values}) > 1:
            merged.pop(key, None)
            merged[listed] = values
    commits = {m.get("commit") for _, m, _ in metas}
    if len(commits) > 1:
        merged["source_commits"] = [m.get("commit", "(none)") for _, m, _ in metas]
    dates = [m["date"] for _, m, _ in metas if isinstance(m.get("date"), str)]
    try:
        merged["date"] = min(dates, key=bench_meta.parse_date)
    except ValueError:
        pass  # a date that does not parse: the check below names it

    links = []
    for _, m, impls in metas:
        own = m.get("machine", {}).get("link") if isinstance(m.get("machine"), dict) else None
        if own:
            entry = f"{'+'.join(sorted(impls)) or 'rows'}: {own}"
            if entry not in links:
                links.append(entry)
    if isinstance(merged.get("machine"), dict):
        if link or len(links) > 1:
            merged["machine"]["link"] = "; ".join(([link] if link else []) + links)

    present = {bench_meta.peer_of(r.get("impl", "")) for r in rows}
    peers = {}
    for _, m, _ in metas:
        for peer, version in (m.get("peers") or {}).items():
            if peer in present or peer == "torch":
                peers.setdefault(peer, version)
    merged["peers"] = peers
    for key in ("impl", "library"):  # a driver's own labels, not the merged file's
        if len(metas) > 1:
            merged.pop(key, None)
    merged.update(extra)

    doc = {"meta": merged, "results": rows}
    problems = bench_meta.check(doc)
    if problems:
        sys.exit("merge-results: " + out + " would lack provenance (bench/results/README.md):\n  " +
                 "\n  ".join(problems) + "\n  (--meta KEY=VALUE supplies a field the inputs do not have)")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{out}: {len(rows)} rows from {len(inputs)} files")


if __name__ == "__main__":
    main(sys.argv[1:])
