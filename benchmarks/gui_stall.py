"""Longest GUI event-loop stall while the app encodes 10,000 sentences and builds a background.

A 5 ms QTimer ticks on the GUI thread while the real main window (built-in model, CPU) scores
5,000 AG News sentence pairs (10,000 distinct texts, empty embedding cache) and then builds a
background profile from 10,000 other AG News sentences. The gaps between ticks are recorded;
the longest gap is the longest time the window could not respond.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/gui_stall.py [--quick]

Writes benchmarks/results/gui_stall.json (or gui_stall_quick.json with --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"


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


def sentences(n: int, offset: int) -> list[str]:
    import pandas as pd

    frame = pd.concat([pd.read_csv(DATA / "agnews" / name, dtype=str, keep_default_na=False)
                       for name in ("test.csv", "train.csv")])
    texts = list(dict.fromkeys(t.replace("\\", " ") for t in frame["title"].tolist() + frame["description"].tolist()))
    return texts[offset:offset + n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 sentences each (to check the script)")
    args = parser.parse_args()
    n = 1000 if args.quick else 10_000
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["CALIBSIM_CACHE_DIR"] = tempfile.mkdtemp(prefix="calibsim-bench-cache-")
    os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="calibsim-bench-config-")

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from calibsim_gui.core.inputs import load_documents
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
    texts = sentences(n, 0)
    import pandas as pd

    pd.DataFrame({"sentence1": texts[0::2], "sentence2": texts[1::2]}).to_csv(work / "pairs.csv", index=False)
    (work / "background.txt").write_text("\n".join(sentences(n, n)), encoding="utf-8")

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
    window.build_background(documents, 20_000, 0)
    wait_for(window.state.profile_changed)
    build = {"sentences": len(documents.texts), "seconds": round(time.perf_counter() - started, 2),
             **recorder.stop()}
    print("background build:", build, flush=True)

    window.close()
    result = {"benchmark": "gui_stall", "quick": args.quick, "python": platform.python_version(),
              "machine": platform.machine(), "cpus": os.cpu_count(),
              "encode_pairs_file": encode, "background_build": build}
    out = HERE / "results" / ("gui_stall_quick.json" if args.quick else "gui_stall.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
