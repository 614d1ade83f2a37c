"""GUI: launch to window shown (cold and warm), and the longest event-loop stall during long runs.

Launch: a fresh ``python`` process runs what ``calibsim`` runs (``run_app``) and reports at the
first event-loop turn after the main window is shown, with whether torch was imported by then;
the time is measured from spawning the process. Cold: the files that launch reads (modules and
shared libraries, as a first launch reports them) are evicted from the page cache first
(``posix_fadvise(DONTNEED)``; pages that other running processes map stay cached, so this
is the best cold case this machine allows without root). Warm: later launches.

Stalls: a 5 ms QTimer ticks on the GUI thread while the real main window (built-in model, CPU)
scores 5,000 AG News sentence pairs (10,000 distinct texts, empty embedding cache) and then
builds a background profile from 10,000 other AG News sentences. The longest gap between ticks
is the longest time the window could not respond. Targets: window < 2 s with torch not yet
imported; no stall > 100 ms.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/gui_stall.py [--quick]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

WINDOW_TARGET_S = 2.0
STALL_TARGET_MS = 100.0

# What `calibsim` runs, plus a report at the first event-loop turn after the window is shown.
LAUNCH = r"""
import json, os, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

app = QApplication(sys.argv[:1])

def shown():
    modules = list(sys.modules.values())
    files = {getattr(m, attr, None) for m in modules for attr in ("__file__", "__cached__")}
    with open("/proc/self/maps") as maps:
        files |= {line.split(None, 5)[-1].strip() for line in maps if "/" in line}
    print(json.dumps({"torch_imported": "torch" in sys.modules,
                      "files": sorted(f for f in files if f and os.path.isfile(f))}), flush=True)
    os._exit(0)

QTimer.singleShot(0, shown)
from calibsim_gui.qt.app import run_app
run_app()
"""


def launch(env: dict) -> tuple[float, dict]:
    """Seconds from spawning the app to its window shown, and what it reported."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=common.REPO)
    line = proc.stdout.readline()
    seconds = time.perf_counter() - started
    proc.wait()
    if not line:
        raise RuntimeError("the app exited before showing its window")
    return seconds, json.loads(line)


def evict(files) -> float:
    """Drop `files` from the page cache; MB they hold."""
    total = 0
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            total += os.fstat(fd).st_size
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return total / 1e6


def launch_times(warm_runs: int) -> dict:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
           "XDG_CONFIG_HOME": tempfile.mkdtemp(prefix="calibsim-bench-config-")}
    _, first = launch(env)                                 # learns which files a launch reads
    evicted_mb = evict(first["files"])
    cold_s, cold = launch(env)
    warm = [launch(env) for _ in range(warm_runs)]
    warm_s = sorted(s for s, _ in warm)
    torch_imported = cold["torch_imported"] or any(r["torch_imported"] for _, r in warm)
    return {"cold_s": round(cold_s, 3), "warm_s": [round(s, 3) for s in warm_s],
            "warm_median_s": round(warm_s[len(warm_s) // 2], 3), "files_evicted": len(first["files"]),
            "evicted_mb": round(evicted_mb, 1), "torch_imported_before_window": torch_imported}


class TickRecorder:
    """Records the gaps between ticks of a fast GUI-thread timer."""

    def __init__(self, interval_ms: int = 5):
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self.last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(now - self.last)
        self.last = now

    def start(self) -> None:
        self.gaps.clear()
        self.last = time.perf_counter()
        self.timer.start()

    def stop(self) -> dict:
        self.timer.stop()
        gaps = sorted(self.gaps)
        return {"ticks": len(gaps), "longest_gap_ms": round(1000 * gaps[-1], 1),
                "p99_gap_ms": round(1000 * gaps[int(0.99 * (len(gaps) - 1))], 1),
                "gaps_over_100ms": sum(g > 0.1 for g in gaps)}


def stalls(n: int, pairs: int) -> dict:
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="calibsim-bench-config-")
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from calibsim_gui.core.io.inputs import load_documents
    from calibsim_gui.qt.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("calibsim-benchmark")
    window = MainWindow()
    window.show()

    def wait_for(signal, timeout_s=3600):
        loop = QEventLoop()
        signal.connect(loop.quit)
        QTimer.singleShot(timeout_s * 1000, loop.quit)
        loop.exec()
        signal.disconnect(loop.quit)

    while window.state.profile is None:           # the model loads, then its reference
        wait_for(window.state.profile_changed)
    work = Path(tempfile.mkdtemp(prefix="calibsim-bench-"))
    texts = common.agnews_texts(n)
    common.write_pairs_csv(zip(texts[0::2], texts[1::2]), work / "pairs.csv")
    (work / "background.txt").write_text("\n".join(common.agnews_texts(n, offset=n)), encoding="utf-8")

    recorder = TickRecorder()
    recorder.start()
    started = time.perf_counter()
    window.open_inputs([work / "pairs.csv"])
    wait_for(window.results_shown)
    encode = {"texts": len(texts), "seconds": round(time.perf_counter() - started, 2), **recorder.stop()}
    print("encode:", encode, flush=True)

    documents = load_documents(work / "background.txt")
    recorder.start()
    started = time.perf_counter()
    window.build_background(documents, pairs, 0)
    wait_for(window.state.profile_changed)
    build = {"sentences": len(documents.texts), "seconds": round(time.perf_counter() - started, 2),
             **recorder.stop()}
    print("background build:", build, flush=True)
    window.ask_before_discarding = False        # a scripted session: nobody to answer Save / Discard
    window.close()
    return {"encode_pairs_file": encode, "background_build": build}


def main() -> None:
    args = common.arguments(__doc__, quick_help="50 sentences each, 1,000 background pairs, one warm launch")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    times = launch_times(1 if args.quick else 5)           # before this process maps Qt itself
    common.print_table([{"launch": "cold", "seconds": times["cold_s"]},
                        {"launch": "warm (median)", "seconds": times["warm_median_s"]}])
    print(f"torch imported before the window was shown: {times['torch_imported_before_window']}")
    runs = stalls(*((50, 1000) if args.quick else (10_000, 20_000)))
    worst = max(r["longest_gap_ms"] for r in runs.values())
    met = {"window_under_2s": max(times["cold_s"], times["warm_median_s"]) < WINDOW_TARGET_S
           and not times["torch_imported_before_window"], "no_stall_over_100ms": worst <= STALL_TARGET_MS}
    print(f"targets: {met}")
    common.save("gui_stall", args, {"launch": times, **runs, "targets_met": met})


if __name__ == "__main__":
    main()
