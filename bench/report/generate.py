#!/usr/bin/env python3
"""Writes docs/BENCHMARKS.md from bench/report/BENCHMARKS.md.in and the runs under bench/results.

The template is Markdown with {{ expression }} where a figure or a table goes; each expression is Python over the
runs (R['name'] is bench/results/name.json) and the helpers of tables.py and bars.py. Prose may hold no figure of
its own: a number with a unit of time, bandwidth or ratio outside {{ }} (and outside code blocks and lines that
start with '> Prediction', which record what was expected before a run) stops the generation.

Usage: bench/report/generate.py [--check]   (--check: fail, with a diff, when docs/BENCHMARKS.md is not current)
"""
import difflib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bars  # noqa: E402
import tables  # noqa: E402
from results import ReportError, load_runs, size_text  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEMPLATE = os.path.join(ROOT, "bench", "report", "BENCHMARKS.md.in")
OUTPUT = os.path.join(ROOT, "docs", "BENCHMARKS.md")
RESULTS = os.path.join(ROOT, "bench", "results")

# A measured figure: 1.23x, 95%, 12.5 us, 3 ms, 1.2 GB/s (sizes such as 64 MiB and rates such as 10 Gbit/s are the
# setup, not results, and may be written).
FIGURE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?\s*(?:x|%|us|ms|GB/s)(?![\w/])")
EXPR = re.compile(r"\{\{(.*?)\}\}", re.S)


def lint(template):
    errors, fenced = [], False
    for n, line in enumerate(template.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("> Prediction"):
            continue
        bare = EXPR.sub("", line)
        for m in FIGURE.finditer(bare):
            errors.append(f"BENCHMARKS.md.in:{n}: '{m.group(0)}' is a figure typed into prose: compute it with {{{{ }}}}")
    return errors


def meta_block(run):
    """Where a run's rows come from: command, commit, machine, date, peers, as its meta says."""
    m = run.meta
    mach = m["machine"]
    gpus = ", ".join(f"{mach['gpus'].count(g)}x {g}" for g in dict.fromkeys(mach["gpus"])) or "no GPU"
    commit = m["commit"]
    if str(commit).endswith("-dirty"):
        files = m["dirty_files"]
        if isinstance(files, list) and len(files) > 4:
            files = files[:3] + [f"and {len(files) - 3} more in the run's meta.dirty_files"]
        commit += f" (differing: {', '.join(files) if isinstance(files, list) else files})"
    peers = ", ".join(f"{k} {v}" for k, v in sorted(m["peers"].items())) or "none"
    lines = [f"- Run: `{run.file}`, {m['date']}, commit {commit}",
             f"- Machine: {mach['cpu']}, {mach['cores']} cores, {gpus}; {mach['link']}",
             f"- Peers: {peers}"]
    bind = m.get("bind")
    if bind:
        words = {"core": "a core a rank", "block": "a block of CPUs a rank", "numa": "a NUMA node a rank", "none": "floating",
                 "launcher": "by the launcher"}
        if isinstance(bind, dict):
            lines.append("- Placement: " + ", ".join(f"{k} {words.get(v, v)}" for k, v in sorted(bind.items())))
        else:
            lines.append(f"- Placement: every library {words.get(bind, bind)}")
    if m.get("knobs"):
        lines.append("- Knobs set: " + ", ".join(f"`{k}={v}`" for k, v in sorted(m["knobs"].items())))
    if m.get("recovered"):
        lines.append(f"- Provenance recovered after the run: {m['recovered']}")
    # The tree's list of differing files is in the meta; the command shows where it was given, not the list again.
    command = re.sub(r"BRAID_SOURCE_DIRTY_FILES=('[^']*'|\S+)", "BRAID_SOURCE_DIRTY_FILES=...", m["command"])
    lines += ["", "```", command.replace(" ; ", "\n"), "```"]
    return "\n".join(lines)


def render(runs):
    with open(TEMPLATE) as f:
        template = f.read()
    errors = lint(template)
    if errors:
        raise ReportError("\n".join(errors))
    namespace = {name: getattr(tables, name) for name in dir(tables) if not name.startswith("_")}
    namespace.update(R=runs, meta_block=meta_block, CLASS_FLOOR=bars.CLASS_FLOOR, bars_table=lambda: bars.bars_table(runs), size_text=size_text)
    used = set()

    class Tracking(dict):
        def __getitem__(self, key):
            if key not in runs:
                raise ReportError(f"the template asks for bench/results/{key}.json, which does not exist")
            used.add(key)
            return runs[key]

    namespace["R"] = Tracking()

    def let(**names):
        """{{ let(nv='nvlink-2xh200-2026-11-30') }}: later expressions may say nv for that run; renders nothing."""
        for key, name in names.items():
            namespace[key] = namespace["R"][name]
        return ""

    namespace["let"] = let

    def evaluate(m):
        line = template.count("\n", 0, m.start()) + 1
        try:
            return str(eval(m.group(1).strip(), namespace))
        except ReportError as e:
            raise ReportError(f"BENCHMARKS.md.in:{line}: {e}")
        except Exception as e:  # an error of the template itself: say where
            raise ReportError(f"BENCHMARKS.md.in:{line}: {{{{{m.group(1).strip()}}}}}: {type(e).__name__}: {e}")

    body = EXPR.sub(evaluate, template)
    unused = sorted(set(runs) - used)
    if unused:
        raise ReportError("runs the document does not show (show them or remove them): " + ", ".join(unused))
    head = ("<!-- Generated by bench/report/generate.py from bench/report/BENCHMARKS.md.in and bench/results/*.json."
            " Edit those, then run the script. -->\n")
    return head + body


def main(argv):
    check = "--check" in argv
    try:
        text = render(load_runs(RESULTS))
    except ReportError as e:
        print(f"generate.py: {e}", file=sys.stderr)
        return 2
    if check:
        with open(OUTPUT) as f:
            current = f.read()
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), "docs/BENCHMARKS.md (committed)",
                                        "docs/BENCHMARKS.md (from bench/results)", lineterm="", n=1)
            print("\n".join(list(diff)[:80]), file=sys.stderr)
            print("generate.py: docs/BENCHMARKS.md is not what bench/results gives: run bench/report/generate.py",
                  file=sys.stderr)
            return 1
        print("docs/BENCHMARKS.md matches bench/results")
        return 0
    with open(OUTPUT, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUTPUT, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
