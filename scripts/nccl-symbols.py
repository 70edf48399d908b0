#!/usr/bin/env python3
"""Whether libbraid_nccl exports NCCL's API: every function nccl.h declares (and its pncclX alias), and with
--importer every nccl* symbol a program or library built against NCCL imports (e.g. torch's libtorch_cuda.so).

Usage: scripts/nccl-symbols.py --header NCCL_H --library LIBBRAID_NCCL [--importer LIB ...]
Prints what is missing and exits 1 when anything is; nothing is counted in advance.
"""
import argparse
import re
import subprocess
import sys


def declared(header):
    """Names of the functions `header` declares (ncclX, not the pncclX profiling aliases)."""
    text = open(header, encoding="utf-8").read()
    names = re.findall(r"^\s*(?:ncclResult_t|const\s+char\s*\*|void)\s*\*?\s*(nccl[A-Za-z0-9_]*)\s*\(", text, re.M)
    return sorted(set(names))


def symbols(library, undefined):
    """Dynamic symbols of `library`: those it defines, or (undefined) those it imports."""
    flag = "--undefined-only" if undefined else "--defined-only"
    out = subprocess.run(["nm", "-D", flag, library], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.split()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--header", required=True)
    parser.add_argument("--library", required=True)
    parser.add_argument("--importer", action="append", default=[])
    args = parser.parse_args()
    exported = symbols(args.library, undefined=False)
    wanted = declared(args.header)
    if not wanted:
        print(f"{args.header}: no nccl function declarations found", file=sys.stderr)
        return 1
    missing = [n for n in wanted if n not in exported] + [f"p{n}" for n in wanted if f"p{n}" not in exported]
    for importer in args.importer:
        imported = sorted(s for s in symbols(importer, undefined=True) if s.startswith("nccl"))
        missing += [f"{n} (imported by {importer})" for n in imported if n not in exported]
    print(f"{args.library}: {len(wanted)} functions of {args.header} and their pnccl aliases"
          + "".join(f", the nccl* imports of {i}" for i in args.importer))
    for name in missing:
        print(f"  missing: {name}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
