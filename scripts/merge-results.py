#!/usr/bin/env python3
"""Merges the JSON files braid-bench-device wrote (one per collective, dtype and variant) into one results file,
as bench/results/ keeps them: one "meta" (taken from the first file, plus --meta KEY=VALUE pairs) and every row,
each tagged with the variant its file was named for (nvlink-<coll>-<dtype>[-<tag>]-<date>.json).

Usage: scripts/merge-results.py OUT.json IN.json... [--meta KEY=VALUE]...
"""
import json
import re
import sys


def main(argv):
    extra = {}
    paths = []
    args = iter(argv)
    for a in args:
        if a == "--meta":
            key, _, value = next(args).partition("=")
            extra[key] = value
        else:
            paths.append(a)
    if len(paths) < 2:
        sys.exit(__doc__)
    out, inputs = paths[0], paths[1:]
    meta, rows = None, []
    for path in inputs:
        with open(path) as f:
            data = json.load(f)
        meta = meta or dict(data.get("meta", {}))
        match = re.search(r"nvlink-[a-z]+-[a-z0-9]+-(.+)-\d{4}-\d{2}-\d{2}\.json$", path)
        for row in data.get("results", []):
            if match:
                row["variant"] = match.group(1)
            rows.append(row)
    meta.update(extra)
    with open(out, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{out}: {len(rows)} rows from {len(inputs)} files")


if __name__ == "__main__":
    main(sys.argv[1:])
