"""Work that holds the interpreter lock for long stretches runs in a child process.

Drawing a report's figures (matplotlib), rendering it, and the eigen-decompositions of the Space
diagnosis (numpy's LAPACK calls keep the lock for their whole call) starved the GUI thread when
they ran in a worker thread: pauses of seconds on a busy machine. One long-lived child
(`ProcessPoolExecutor`, one worker, *spawned*: a threaded Qt process is never forked) runs them
instead; a worker thread of `workers.TaskRunner` waits for it, so the task contract stays the
same. The child's progress comes back through a queue; a stop request is a run number that the
child's ``should_stop()`` compares with its own; its errors (a `WriteError` naming the file and
the fix) are raised here unchanged. The child ends with the app, even when the app is killed or
crashes. This module imports no Qt: the child imports it.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import multiprocessing
import multiprocessing.connection
import os
import queue
import threading
from concurrent.futures.process import BrokenProcessPool

from calibsim_gui.core.errors import CalibsimError

POLL_S = 0.05                    # how often the waiting thread relays progress and stop requests
END_MARK_WAIT_S = 5.0            # the longest wait for a run's last reports once it has ended
_channels = None                 # in the child: (progress queue, stop number)


def _attach(progress_queue, stop_number) -> None:
    global _channels
    _channels = (progress_queue, stop_number)
    threading.Thread(target=_end_with_parent, name="ends with the app", daemon=True).start()


def _end_with_parent() -> None:
    """Exit once the app has ended: the executor's queues have both ends open in the child, so
    without this a killed or crashed app would leave the child waiting for work forever."""
    multiprocessing.connection.wait([multiprocessing.parent_process().sentinel])
    os._exit(0)


def _warm_up() -> None:
    """The child's slow first imports, paid before the first task needs them."""
    import matplotlib.figure  # noqa: F401

    import calibsim_gui.core.geometry.space
    import calibsim_gui.core.reports  # noqa: F401


def _run(number: int, function, args: tuple, kwargs: dict):
    progress_queue, stop_number = _channels
    try:
        return function(*args, **kwargs,
                        progress=lambda done, total, message="": progress_queue.put((number, done, total, message)),
                        should_stop=lambda: stop_number.value >= number)
    finally:
        progress_queue.put((number, None, None, None))          # the end mark: no report follows


class ChildProcess:
    """The app's child process for such work, started on first use; one task at a time."""

    def __init__(self):
        self._context = multiprocessing.get_context("spawn")
        self._queue = self._context.Queue()
        self._stop = self._context.Value("q", 0)
        self._numbers = itertools.count(1)
        self._listeners: dict[int, object] = {}      # run number -> its progress callback
        self._lock = threading.Lock()
        self._relay_lock = threading.Lock()
        self._ended: set[int] = set()                # runs whose end mark came (till their thread sees it)
        self._pool = None

    def _executor(self):
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ProcessPoolExecutor(
                    1, mp_context=self._context, initializer=_attach, initargs=(self._queue, self._stop))
                self._pool.submit(_warm_up)
            return self._pool

    def warm_up(self) -> None:
        """Start the child now (it imports what reports need), e.g. when the Export dialog opens."""
        self._executor()

    def run(self, function, *args, progress, should_stop, **kwargs):
        """``function(*args, progress=..., should_stop=..., **kwargs)`` in the child; blocks the
        calling worker thread until it returns (its value) or raises (the same error here), after
        passing on every progress report it made.

        `function` is a module-level function of the core (the child imports its module)."""
        number = next(self._numbers)
        self._listeners[number] = progress
        try:
            self._pass_on_stop(number, should_stop)          # a run stopped already stops at once
            future = self._executor().submit(_run, number, function, args, kwargs)
            while not future.done():
                concurrent.futures.wait([future], timeout=POLL_S)
                self._relay()
                self._pass_on_stop(number, should_stop)
            if not isinstance(future.exception(), BrokenProcessPool):
                self._relay(until=number)
            return future.result()
        except BrokenProcessPool as exc:
            with self._lock:
                self._pool = None                    # the next task starts a new child
            raise CalibsimError(f"the helper process ended unexpectedly ({exc}); nothing was written. "
                                "Fix: try again; if it happens again, free some memory first.") from None
        finally:
            self._listeners.pop(number, None)

    def _pass_on_stop(self, number: int, should_stop) -> None:
        if should_stop():
            with self._stop.get_lock():
                self._stop.value = max(self._stop.value, number)

    def _relay(self, until: int | None = None) -> None:
        """Hand the child's progress reports to their runs (a finished run's are dropped); with
        `until`, wait for that run's last report (its end mark, sent after it)."""
        with self._relay_lock:
            while until is None or until not in self._ended:
                try:
                    number, done, total, message = (self._queue.get_nowait() if until is None
                                                    else self._queue.get(timeout=END_MARK_WAIT_S))
                except queue.Empty:
                    return
                if done is None:
                    self._ended.add(number)
                elif (listener := self._listeners.get(number)) is not None:
                    listener(done, total, message)
            self._ended.discard(until)


_process: ChildProcess | None = None
_process_lock = threading.Lock()


def child_process() -> ChildProcess:
    """The app's child process (created on first use)."""
    global _process
    with _process_lock:
        if _process is None:
            _process = ChildProcess()
        return _process


def run_in_child(function, *args, progress, should_stop, **kwargs):
    """A `TaskRunner` task that runs `function` in the app's child process (see `ChildProcess.run`)."""
    return child_process().run(function, *args, progress=progress, should_stop=should_stop, **kwargs)
