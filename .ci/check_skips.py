"""CI's check that the suite ran every test it claims: reads the JUnit XML of a pytest run and
fails when a test was skipped (or xfailed) for a reason not in ALLOWED, or when a test named on
the command line did not pass. Prints the skips and the named tests, so CI's output shows them.

    python .ci/check_skips.py REPORT.xml [NODE_ID ...]
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ElementTree

# Skip reasons CI accepts: each says why the skip is right on CI's machine, not a missing install.
ALLOWED = {
    # CI runs as root, whom chmod cannot lock out of a folder; tests/core fakes the refusal instead
    "chmod cannot lock root out (the core test fakes it)",
    # the test of the message for a missing CUDA device needs a machine without one
    "this machine has a CUDA device",
}


def junit_name(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's JUnit XML gives the test `node_id` (path.py::Class::test[id])."""
    address, bracket, params = node_id.partition("[")
    names = address.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    return ".".join(names[:-1]), names[-1] + bracket + params


def outcomes(report: str) -> dict[tuple[str, str], tuple[str, str]]:
    """Each test of the report as (classname, name) -> (outcome, reason)."""
    found = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        outcome, reason = "passed", ""
        for child in case:
            if child.tag in ("skipped", "failure", "error"):
                outcome, reason = child.tag, child.get("message", "")
                break
        found[(case.get("classname", ""), case.get("name", ""))] = (outcome, reason)
    return found


def check(report: str, must_run: list[str]) -> list[str]:
    """What is wrong with the run in `report` (nothing: an empty list); prints what it saw."""
    found = outcomes(report)
    problems = [] if found else [f"{report} has no test"]
    skipped = {test: reason for test, (outcome, reason) in found.items() if outcome == "skipped"}
    print(f"skip check: {len(found):,} tests, {len(skipped)} skipped")
    for (classname, name), reason in sorted(skipped.items()):
        allowed = reason in ALLOWED
        print(f"  {'allowed' if allowed else 'NOT ALLOWED'}: {classname}::{name}: {reason}")
        if not allowed:
            problems.append(f"{classname}::{name} was skipped: {reason} (not on .ci/check_skips.py's ALLOWED)")
    for node_id in must_run:
        outcome, reason = found.get(junit_name(node_id), ("not run", ""))
        print(f"  must run: {node_id}: {outcome}")
        if outcome != "passed":
            problems.append(f"{node_id} must run and pass in CI, but was {outcome}{': ' + reason if reason else ''}")
    return problems


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(argv[0], argv[1:])
    for problem in problems:
        print(f"skip check failed: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
