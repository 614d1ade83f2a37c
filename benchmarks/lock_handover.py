"""How long the GUI thread waits for the interpreter lock beside a worker running Python, by
switch interval (`sys.setswitchinterval`; the app sets `workers.SWITCH_INTERVAL_S`).

A shown table's model reset (8 x 6 cells, columns fitted to their contents: Qt calls the model's
Python `data` a few hundred times, each taking the lock anew) is timed alone and beside one thread
that runs a Python loop; the cost of the interval is two threads that both run Python, timed
together. Each interval runs in a fresh process.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/lock_handover.py
"""

from __future__ import annotations

import sys
import threading
import time

import common

INTERVALS_MS = (5.0, 1.0, 0.5)
RESETS = 5


def reset_times(interval_s: float, resets: int) -> dict:
    """Milliseconds per table reset, alone and beside a busy Python thread, at `interval_s`."""
    from PySide6.QtCore import QAbstractTableModel, Qt
    from PySide6.QtWidgets import QApplication, QHeaderView, QTableView

    sys.setswitchinterval(interval_s)
    app = QApplication.instance() or QApplication(sys.argv[:1])

    class Cells(QAbstractTableModel):
        def rowCount(self, parent=None):
            return 8

        def columnCount(self, parent=None):
            return 6

        def data(self, index, role=Qt.ItemDataRole.DisplayRole):
            return f"{index.row()}, {index.column()}" if role == Qt.ItemDataRole.DisplayRole else None

    table, model = QTableView(), Cells()
    table.setModel(model)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.show()

    def reset_ms() -> float:
        started = time.perf_counter()
        for _ in range(resets):
            model.beginResetModel()
            model.endResetModel()
            app.processEvents()
        return round(1000 * (time.perf_counter() - started) / resets, 1)

    reset_ms()                                          # first layout and font caches
    alone = reset_ms()
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    busy = threading.Thread(target=spin)
    busy.start()
    time.sleep(0.05)
    beside = reset_ms()
    stop.set()
    busy.join()
    return {"reset_alone_ms": alone, "reset_beside_busy_python_ms": beside}


def contended_s(interval_s: float, steps: int) -> float:
    """Seconds for two threads that each add `steps` numbers in Python, at `interval_s`."""
    sys.setswitchinterval(interval_s)

    def work():
        total = 0
        for i in range(steps):
            total += i

    threads = [threading.Thread(target=work) for _ in range(2)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return round(time.perf_counter() - started, 3)


def main() -> None:
    import json

    args = common.arguments(__doc__, quick_help="one reset each, shorter loops")
    if args.child:
        case = json.loads(args.child)
        resets, steps = (1, 1_000_000) if case["quick"] else (RESETS, 20_000_000)
        common.child_answer({**reset_times(case["interval_s"], resets),
                             "two_python_threads_s": contended_s(case["interval_s"], steps)})
        return
    from calibsim_gui.qt.widgets.workers import SWITCH_INTERVAL_S

    runs = []
    for interval_ms in INTERVALS_MS:
        run = common.run_child("lock_handover.py", {"interval_s": interval_ms / 1000, "quick": args.quick},
                               env={"QT_QPA_PLATFORM": "offscreen"})
        runs.append({"interval_ms": interval_ms, **run})
    python_default = runs[0]["two_python_threads_s"]
    for run in runs:
        run["two_python_threads_vs_5ms"] = round(run["two_python_threads_s"] / python_default, 3)
    common.print_table(runs)
    common.save("lock_handover", args, {"runs": runs, "app_interval_ms": 1000 * SWITCH_INTERVAL_S})


if __name__ == "__main__":
    main()
