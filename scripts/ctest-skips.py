#!/usr/bin/env python3
"""Names the ctest tests that were skipped, and why, from ctest's JUnit report (ctest --output-junit FILE).

ctest counts a skipped test (SKIP_RETURN_CODE) with those that did not fail, and its log records it as passed, so
a suite can look green while whole families of tests never ran. One line per family (a test's name up to its first
"_", or a GoogleTest case's suite) and reason, the reason being the last "SKIP: ..." line the tests printed (or
GoogleTest's skip message), e.g.

  netns: 8 tests skipped: cannot create network namespaces (not root)

or "ctest: no test skipped". Usage: scripts/ctest-skips.py JUNIT_XML"""

import sys
import xml.etree.ElementTree as ET


def skips(path):
    """{(family, reason): [test names]} in the report's order."""
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        skipped = case.find("skipped")
        if skipped is None:
            continue
        output = case.findtext("system-out") or ""
        lines = output.splitlines()
        said = [line[len("SKIP:") :].strip() for line in lines if line.startswith("SKIP:")]
        # GoogleTest's GTEST_SKIP() prints "file:line: Skipped" and then the test's message on the next line.
        said += [lines[i + 1].strip() for i, line in enumerate(lines[:-1]) if line.endswith(": Skipped")]
        reason = said[-1] if said else f"no reason printed ({skipped.get('message', 'skipped')})"
        name = case.get("name", "?").split(" ")[0]
        # A GoogleTest case ("Prefix/Suite.Test/param") counts under its suite; a plain ctest test under its name
        # up to the first "_".
        family = name.split(".")[0].split("/")[-1] if "." in name else name.split("_")[0]
        found.setdefault((family, reason), []).append(name)
    return found


def main(argv):
    if len(argv) != 2:
        print(__doc__.rsplit("Usage: ", 1)[1], file=sys.stderr)
        return 2
    found = skips(argv[1])
    if not found:
        print("ctest: no test skipped")
    for (family, reason), names in found.items():
        print(f"{family}: {len(names)} test{'s' if len(names) > 1 else ''} skipped: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
