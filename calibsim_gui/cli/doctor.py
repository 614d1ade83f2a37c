"""`calibsim doctor`: is this installation able to run?"""

from __future__ import annotations

import json

from calibsim_gui import __version__
from calibsim_gui.core.doctor import exit_code, run_checks


def add_parser(sub) -> None:
    p = sub.add_parser("doctor", help="print versions, device, engine, precision, cache, memory budget and "
                                      "whether the window can open; exit 1 if the command line "
                                      "cannot work",
                       epilog="exit status: 0 when the headless commands work (warnings, such as no "
                              "display for the window, allowed); 1 when a problem would stop them")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args) -> int:
    checks = run_checks()
    code = exit_code(checks)
    if args.json:
        print(json.dumps({"calibsim": __version__, "exit_code": code,
                          "checks": {c.name: {"status": c.status, "summary": c.summary, "fix": c.fix,
                                              **c.data} for c in checks}}, indent=2))
        return code
    for c in checks:
        mark = "" if c.status == "ok" else f"{c.status.upper()}: "
        print(f"{c.name + ':':<11}{mark}{c.summary}" + (f"\n{'':<11}fix: {c.fix}" if c.fix else ""))
    counts = {s: sum(c.status == s for c in checks) for s in ("problem", "warning")}
    verdict = "PROBLEMS: the command line fails until they are fixed" if code else "ok: the command line works"
    print(f"\n{verdict} ({counts['problem']} problem(s), {counts['warning']} warning(s); exit {code})")
    return code
