"""Phases of one ``calibsim score`` process: wall and CPU before, during and after encoding.

Runs ``main.py <arguments>`` in this process and prints, on exit, the wall seconds and the CPU
seconds (user + sys of the whole process, every thread) from start to the first encoding step,
of the encoding (tokenizer, ONNX Runtime session and its runs) and from its end to exit (query
scales, languages, calibration, output). On a shared machine the encoding's CPU swings by a
second between identical runs (ONNX Runtime's threads spin while they wait): compare the
phases, not whole processes.

    .venv/bin/python benchmarks/score_phases.py score PAIRS --no-cache --quiet --out OUT.csv --force
"""

from __future__ import annotations

import atexit
import os
import resource
import sys
import time
from pathlib import Path

STARTED = time.perf_counter()
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def now() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), usage.ru_utime + usage.ru_stime


def main() -> int:
    from calibsim_gui.cli import main as calibsim
    from calibsim_gui.core.analysis import pairs

    marks = {"start": (STARTED, 0.0)}
    encode = pairs.iter_encode

    def timed(*args, **kwargs):
        marks.setdefault("encoding starts", now())
        result = yield from encode(*args, **kwargs)
        marks.setdefault("encoding ends", now())
        return result

    def report() -> None:
        marks["exit"] = now()
        names = list(marks)
        print(f"load {os.getloadavg()[0]:.1f} | " + "; ".join(
            f"{names[i]} -> {names[i + 1]}: wall {marks[names[i + 1]][0] - marks[names[i]][0]:.2f} s, "
            f"CPU {marks[names[i + 1]][1] - marks[names[i]][1]:.2f} s" for i in range(len(names) - 1)),
            file=sys.stderr)

    pairs.iter_encode = timed
    atexit.register(report)
    sys.argv = ["main.py", *sys.argv[1:]]
    return calibsim()


if __name__ == "__main__":
    raise SystemExit(main())
