"""The one adapter between the core's long work and Qt: runs tasks off the GUI thread.

A task is a core function called as ``task(progress=..., should_stop=...)``; it may return a
value or be a generator whose yields are partial results. `TaskRunner` runs one task at a time
on the global `QThreadPool`: starting a task cancels the one before, and every signal carries
the run's generation so results of a cancelled run are dropped, never shown. (A plain
`QRunnable` suffices here: the runner has its own signals and stop flag, and superqt's import
alone cost 0.3 s of start-up.)
"""

from __future__ import annotations

import gc
import inspect
import itertools
import sys
import time

from PySide6.QtCore import QCoreApplication, QObject, QRunnable, QThreadPool, QTimer, Signal, Slot

from calibsim_gui.core.errors import Cancelled
from calibsim_gui.qt.widgets.messages import failure_message

_gui_thread_collector = None
_freezes = 0                     # freezes and thaws so far (`freeze_alive`): cheap to compare, unlike
                                 # gc.get_freeze_count, which walks every frozen object (~50 ms)
FREEZE_AFTER_MODULES = 100       # new modules imported (a library) before the objects alive are frozen
SWITCH_INTERVAL_S = 0.001        # a thread waiting for the interpreter lock asks for it after this (Python: 5 ms)


class GuiThreadCollector:
    """Python's cycle collector, turned off and run instead by a GUI-thread timer, generation by
    generation when the counts pass the usual thresholds (as pyqtgraph's `GarbageCollector` does,
    without importing pyqtgraph at start-up). The timer lasts as long as the process.

    Once `FREEZE_AFTER_MODULES` new modules were imported, the objects alive are frozen
    (`gc.freeze`) before collecting: a library's modules, classes and functions live as long as the
    process, and a full collection that scanned them held the GUI thread for 0.4 s of CPU once torch
    was imported (800,000 objects; 1.3 s of wall under load). What was alive then and later becomes
    a garbage cycle (a replaced model: torch modules hold cycles) stays until `thaw` is called: the
    next tick then runs a full collection over everything and freezes what survives it. A dropped
    object given to `free_dropped_objects` as a weak reference costs that pass only when it is still
    alive at the next tick (freed by reference counting, it needs none: #44)."""

    def __init__(self, interval_s: float = 1.0):
        self.threshold = gc.get_threshold()
        self.modules = len(sys.modules)
        self.thawed = False
        self.collect_all = False             # a full collection of the objects not frozen is due
        self.held = 0                        # workers' objects to be dropped (`keep_unfrozen`)
        self.dropped: list = []              # weak references to dropped objects that may need a thaw
        self.timer = QTimer(QCoreApplication.instance())     # the application's, as long as the process
        self.timer.timeout.connect(self.check)
        gc.disable()
        self.timer.start(int(interval_s * 1000))

    def check(self) -> None:
        if self.dropped:                     # thaw only for what reference counting did not free
            survivors = any(ref() is not None for ref in self.dropped)
            self.dropped = []
            if survivors:
                self.thaw()
        if self.thawed:                      # a dropped model's cycles freed, the rest frozen again
            self.thawed = False
            gc.collect()
            freeze_alive()
            self.modules = len(sys.modules)
            return
        if self.held:                        # objects to drop soon: nothing frozen, no full pass
            self.collect(generations=2)
            return
        if self.collect_all:                 # dropped objects made since the last freeze: not frozen
            self.collect_all = False
            gc.collect()
        if len(sys.modules) - self.modules >= FREEZE_AFTER_MODULES:
            self.modules = len(sys.modules)
            freeze_alive()
        self.collect(generations=3)

    def collect(self, generations: int) -> None:
        """Collect the youngest of `generations` whose counts passed their thresholds."""
        counts = gc.get_count()
        for generation in range(generations):
            if counts[generation] <= self.threshold[generation]:
                break
            gc.collect(generation)

    def thaw(self) -> None:
        """Something large that was alive at a freeze was dropped: unfreeze, so the next tick's full
        collection frees its cycles (one pass over every object) before freezing again."""
        global _freezes
        gc.unfreeze()
        _freezes += 1
        self.thawed = True


def freeze_alive() -> None:
    """`gc.freeze()`, counted (see `keep_unfrozen`)."""
    global _freezes
    gc.freeze()
    _freezes += 1


def keep_unfrozen() -> int:
    """A worker is about to make objects that it drops when done (a comparison's second model):
    until `free_dropped_objects` is given what this returns, the collector freezes nothing (nor
    runs full collections, which would then pass over a newly imported library), so that those
    objects are freed without the full pass over every object that a thaw costs (~0.4 s of CPU
    once torch is imported: 1.7-2.5 s of wall under load, #44)."""
    if _gui_thread_collector is not None:
        _gui_thread_collector.held += 1
    return _freezes


def free_dropped_objects(frozen_at: int | None = None, dropped=None) -> None:
    """A model (or other large cyclic object) was dropped: have it freed, frozen or not
    (`GuiThreadCollector.thaw`); without the GUI-thread collector, Python's own collector does.

    `frozen_at`: what `keep_unfrozen` returned before the objects were made; when nothing was
    frozen since, the next tick's full collection skips the frozen objects. `dropped`: a weak
    reference to the dropped object; the thaw waits for the next tick and happens only if it is
    still alive then (an ONNX model, without cycles, is freed as its last reference goes)."""
    collector = _gui_thread_collector
    if dropped is not None and collector is not None:
        collector.dropped.append(dropped)
        return
    if frozen_at is not None and collector is not None:
        collector.held = max(0, collector.held - 1)
    if frozen_at is not None and _freezes == frozen_at:
        if collector is not None:
            collector.collect_all = True
    elif collector is not None:
        collector.thaw()
    else:
        gc.unfreeze()


def hand_the_lock_over_often() -> None:
    """Have a worker running Python hand the interpreter lock to a waiting GUI thread after 1 ms,
    not Python's 5 ms. Qt takes the lock anew for each Python method it calls (a table's reset asks
    its model some hundred times), and each call waited up to the whole interval: a 2-5 ms reset
    took 0.36-0.76 s beside one busy Python thread, 0.08-0.22 s at 1 ms. Two threads that both
    run Python lose 1-4 % to the extra hand-overs (`benchmarks/lock_handover.py`, #44)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def collect_garbage_on_gui_thread() -> None:
    """Run Python's cycle collector only from a GUI-thread timer (once per process).

    Left automatic, it runs in whichever thread happens to allocate, often a busy worker, and
    may destroy Qt objects there: Qt then crashes or hangs.
    """
    global _gui_thread_collector
    if _gui_thread_collector is None:
        _gui_thread_collector = GuiThreadCollector()


class TaskRunner(QObject):
    """Runs one named task at a time; emits its progress, partial results and outcome.

    Signals (all delivered on the GUI thread, only for the current run):
    ``progress(done, total, message)``, ``partial(value)``, ``finished(value)``,
    ``failed(message)``, ``cancelled()``, ``busy(bool)``.
    """

    progress = Signal(int, int, str)
    partial = Signal(object)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    busy = Signal(bool)

    _from_worker = Signal(int, str, object)      # generation, kind, payload (queued to GUI thread)

    def __init__(self, name: str = "task", parent: QObject | None = None):
        super().__init__(parent)
        self.name = name
        self._generation = itertools.count(1)
        self._current = 0                 # generation of the running task; 0 when idle
        self._stop = {"stop": False}      # the running task's stop flag
        self.started_at = 0.0             # time.monotonic() when the current (or last) run started
        self.duration = 0.0               # seconds the last run that ended took
        self._step = (0.0, 0, 0)          # the current step of the run: (started at, total, done then)
        self._done = 0                    # the count the run reported last
        self._from_worker.connect(self._deliver)
        collect_garbage_on_gui_thread()
        hand_the_lock_over_often()

    @property
    def running(self) -> bool:
        return self._current != 0

    def start(self, task, *args, **kwargs) -> int:
        """Run ``task(*args, progress=..., should_stop=..., **kwargs)``; returns the generation."""
        self.cancel()
        generation = self._current = next(self._generation)
        emit = self._from_worker.emit
        state = {"stop": False}

        def progress(done: int, total: int, message: str = "") -> None:
            emit(generation, "progress", (done, total, message))

        def run():
            nonlocal task, args, kwargs
            result = None
            try:
                result = task(*args, progress=progress, should_stop=lambda: state["stop"], **kwargs)
                if inspect.isgenerator(result):
                    while True:
                        if state["stop"]:
                            raise Cancelled("stopped")
                        try:
                            emit(generation, "partial", next(result))
                        except StopIteration as end:
                            result = end.value
                            break
                emit(generation, "finished", result)
            except Cancelled:
                emit(generation, "cancelled", None)
            except Exception as exc:     # a message, or a bug's traceback: never a lost thread
                emit(generation, "failed", failure_message(exc))
            finally:
                # a finished task keeps nothing: this frame can outlive the run (a library's import
                # in the task kept it in a garbage cycle, then frozen: the model it held stayed, #44)
                del task, args, kwargs, result

        self._stop = state
        self.started_at = time.monotonic()
        self._step, self._done = (self.started_at, 0, 0), 0
        self.busy.emit(True)
        QThreadPool.globalInstance().start(QRunnable.create(run))
        return generation

    def elapsed(self) -> float:
        """Seconds since the running task started (0 when idle)."""
        return time.monotonic() - self.started_at if self.running else 0.0

    def time_left(self, done: int, total: int) -> float | None:
        """Seconds left by the pace of the current step (a run of several steps, each reporting
        its own counts, starts a step whenever the total changes or the count goes back), or
        None while it cannot be told yet."""
        started, step_total, done_then = self._step
        if step_total != total:                       # counts not delivered as progress
            started, done_then = self.started_at, 0
        elapsed = time.monotonic() - started if self.running else 0.0
        if not self.running or total <= 0 or done <= done_then or done >= total or elapsed < 1.0:
            return None
        return elapsed * (total - done) / (done - done_then)

    def cancel(self) -> None:
        """Ask the running task to stop; its later signals are dropped."""
        if self.running:
            self._stop["stop"] = True
            self._current = 0
            self.busy.emit(False)
            self.cancelled.emit()

    @Slot(int, str, object)
    def _deliver(self, generation: int, kind: str, payload) -> None:
        if generation != self._current:
            return                                   # a stale run: never shown
        if kind == "progress":
            done, total, _ = payload
            if total != self._step[1] or done < self._done:
                self._step = (time.monotonic(), total, done)
            self._done = done
            self.progress.emit(*payload)
            return
        if kind == "partial":
            self.partial.emit(payload)
            return
        self._current = 0
        self.duration = time.monotonic() - self.started_at
        self.busy.emit(False)
        {"finished": self.finished, "failed": self.failed, "cancelled": self.cancelled}[kind].emit(
            *(() if kind == "cancelled" else (payload,)))


def wait_for_workers(msecs: int = 10_000) -> bool:
    """Wait for every running task thread to end (e.g. when the app closes)."""
    return QThreadPool.globalInstance().waitForDone(msecs)
