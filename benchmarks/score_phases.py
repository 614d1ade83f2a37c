"""Phases of one ``calibsim score --no-cache`` process: wall and CPU before, during and after encoding.

Each run is a fresh process that scores the STS-B test pairs (``--quick``: 20 pairs) with the
built-in model, float32, no cache (the ONNX graph as `make install` prepares it), and records the wall seconds and the CPU seconds (user + sys
of the whole process, every thread) from start to the first encoding step, of the encoding
(tokenizer, ONNX Runtime session and its runs) and from its end to exit (query scales,
languages, calibration, output). On a shared machine the encoding's CPU swings by a second
between identical runs (ONNX Runtime's threads spin while they wait): compare the phases, not
whole processes. Medians over ``--runs``.

    .venv/bin/python benchmarks/score_phases.py [--quick] [--runs N]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import tempfile
import time
from itertools import pairwise
from pathlib import Path

STARTED = time.perf_counter()

import common  # after STARTED: the start is timed before any import

PHASES = ("start -> encoding starts", "encoding starts -> encoding ends", "encoding ends -> exit")


def now() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), usage.ru_utime + usage.ru_stime


def child(case: dict) -> None:
    """One ``calibsim score`` in this process, its encoding marked; answers the phases."""
    from calibsim_gui.cli import main as calibsim
    from calibsim_gui.core.analysis import pairs

    marks = {"start": (STARTED, 0.0)}
    encode = pairs.iter_encode

    def timed(*args, **kwargs):
        marks.setdefault("encoding starts", now())
        result = yield from encode(*args, **kwargs)
        marks.setdefault("encoding ends", now())
        return result

    pairs.iter_encode = timed
    code = calibsim(["score", case["pairs"], "--no-cache", "--quiet", "--force", "--precision", "float32",
                     "--out", case["out"]])
    marks["exit"] = now()
    names = list(marks)
    common.child_answer({"exit_code": code, "load_1m": os.getloadavg()[0], "phases": {
        f"{a} -> {b}": {"wall_s": marks[b][0] - marks[a][0], "cpu_s": marks[b][1] - marks[a][1]}
        for a, b in pairwise(names)}})


def main() -> None:
    args = common.arguments(__doc__, quick_help="20 pairs, one run", extend=lambda parser: parser.add_argument(
        "--runs", type=int, default=3, help="fresh processes to take the medians of"))
    if args.child:
        child(json.loads(args.child))
        return
    import pandas as pd

    work = Path(tempfile.mkdtemp(prefix="calibsim-bench-"))
    pairs_path = common.stsb_path("test")
    if args.quick:
        pairs_path = work / "stsb.csv"
        pd.read_csv(common.stsb_path("test")).head(20).to_csv(pairs_path, index=False)
    graphs = {"CALIBSIM_ONNX_DIR": common.prepared_graphs()}          # as `make install` leaves them
    runs = []
    for _ in range(1 if args.quick else args.runs):
        answer = common.run_child("score_phases.py", {"pairs": str(pairs_path), "out": str(work / "out.csv")},
                                  env=graphs)
        if answer["exit_code"] != 0:
            raise SystemExit(f"calibsim score exited with {answer['exit_code']}")
        runs.append(answer)
    rows = [{"phase": phase,
             "wall_s": round(statistics.median(r["phases"][phase]["wall_s"] for r in runs), 3),
             "cpu_s": round(statistics.median(r["phases"][phase]["cpu_s"] for r in runs), 3)}
            for phase in PHASES]
    common.print_table(rows)
    loads = [r["load_1m"] for r in runs]
    print(f"medians of {len(runs)} runs; load average (1 min) {min(loads):.1f}-{max(loads):.1f} on "
          f"{os.cpu_count()} cores")
    common.save("score_phases", args, {"pairs": str(pairs_path.name), "runs": runs, "phases": rows})


if __name__ == "__main__":
    main()
