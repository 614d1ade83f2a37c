import threading
import time

from PySide6.QtCore import QCoreApplication

from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.qt.widgets.workers import TaskRunner, wait_for_workers
from tests.qt.conftest import WORKERS_END_MS, Gate


def slow_steps(n, *, progress, should_stop, delay=0.01):
    for i in range(n):
        if should_stop():
            raise Cancelled("stop")
        time.sleep(delay)
        progress(i + 1, n, "step")
        yield i
    return "done"


def test_results_progress_and_partials_arrive_on_the_gui_thread(qtbot):
    runner = TaskRunner()
    seen, threads = [], []
    runner.partial.connect(lambda v: (seen.append(v), threads.append(threading.current_thread())))
    progress = []
    runner.progress.connect(lambda d, t, m: progress.append(d))
    with qtbot.waitSignal(runner.finished, timeout=120_000) as finished:
        runner.start(slow_steps, 5)
    assert finished.args == ["done"]
    assert seen == [0, 1, 2, 3, 4] and progress[-1] == 5
    assert all(t is threading.main_thread() for t in threads)
    assert not runner.running


def test_a_new_run_cancels_the_previous_and_its_results_are_never_delivered(qtbot):
    runner = TaskRunner()
    results = []
    runner.finished.connect(results.append)
    runner.start(lambda progress, should_stop: (time.sleep(0.3), "stale")[1])
    with qtbot.waitSignal(runner.finished, timeout=120_000):
        runner.start(lambda progress, should_stop: "fresh")
    assert wait_for_workers(WORKERS_END_MS)
    QCoreApplication.processEvents()                   # the stale run's result would arrive now
    assert results == ["fresh"]


def test_cancel_stops_a_generator_between_steps(qtbot):
    runner, gate = TaskRunner(), Gate(free=2)                   # held in its third step

    def steps(progress, should_stop):
        for i in range(1000):
            if should_stop():
                raise Cancelled("stop")
            gate()
            yield i

    runner.start(steps)
    qtbot.waitUntil(lambda: gate.holding, timeout=120_000)
    with qtbot.waitSignal(runner.cancelled, timeout=120_000):
        runner.cancel()
    gate.release()
    assert wait_for_workers(WORKERS_END_MS)
    assert gate.steps == 3 and not runner.running                # no step after the one held


def test_user_errors_arrive_as_messages(qtbot):
    runner = TaskRunner()

    def bad(progress, should_stop):
        raise InputError("cannot read this.", path="x.csv", fix="use UTF-8")

    with qtbot.waitSignal(runner.failed, timeout=120_000) as failed:
        runner.start(bad)
    assert failed.args[0] == "x.csv: cannot read this. Fix: use UTF-8"


def test_a_run_knows_its_time_left_and_how_long_it_took(qtbot, monkeypatch):
    from calibsim_gui.qt.widgets import workers

    clock = [100.0]
    monkeypatch.setattr(workers.time, "monotonic", lambda: clock[0])
    runner = TaskRunner()
    gate = {"go": False}

    def task(progress, should_stop):
        while not gate["go"]:
            time.sleep(0.005)
        return "done"

    runner.start(task)
    assert runner.time_left(10, 100) is None          # too early to tell
    clock[0] += 4.0
    assert runner.elapsed() == 4.0
    assert runner.time_left(0, 100) is None and runner.time_left(100, 100) is None
    assert runner.time_left(10, 100) == 36.0            # 4 s for 10 of 100: 36 s for the other 90
    clock[0] += 1.0
    with qtbot.waitSignal(runner.finished, timeout=120_000):
        gate["go"] = True
    assert runner.duration == 5.0 and runner.elapsed() == 0.0
    assert wait_for_workers(WORKERS_END_MS)


def test_time_left_follows_the_pace_of_the_current_step(qtbot, monkeypatch):
    """A run of several steps (load a model, encode its references, score the pairs) reports each
    step's own counts: the time left is the current step's pace, not the whole run's."""
    from calibsim_gui.qt.widgets import workers

    clock = [100.0]
    monkeypatch.setattr(workers.time, "monotonic", lambda: clock[0])
    runner = TaskRunner()
    gate = {"go": False}

    def task(progress, should_stop):
        progress(0, 100, "step 1")
        while not gate["go"]:
            time.sleep(0.005)
        return "done"

    with qtbot.waitSignal(runner.progress, timeout=120_000):
        runner.start(task)
    clock[0] += 30.0                                    # a slow first step (loading the model)
    runner._deliver(runner._current, "progress", (0, 60, "step 2"))     # the next step starts now
    clock[0] += 2.0
    assert runner.time_left(20, 60) == 4.0              # 2 s for 20 of 60 texts: 4 s for 40 more
    runner._deliver(runner._current, "progress", (20, 60, "step 2"))
    clock[0] += 2.0
    assert runner.time_left(40, 60) == 2.0
    runner._deliver(runner._current, "progress", (0, 60, "step 3"))     # the count went back: a new step
    clock[0] += 1.0
    assert runner.time_left(30, 60) == 1.0
    with qtbot.waitSignal(runner.finished, timeout=120_000):
        gate["go"] = True
    assert wait_for_workers(WORKERS_END_MS)


def test_garbage_is_collected_on_the_gui_thread_never_in_a_worker(qtbot):
    """A cycle collected in a worker thread would destroy Qt objects there (crash or hang):
    automatic collection is off while a worker allocates a lot, and the GUI thread's timer
    collects instead."""
    import gc

    from calibsim_gui.qt.widgets import workers

    runner = TaskRunner("allocating")
    assert not gc.isenabled() and workers._gui_thread_collector.timer.isActive()
    destroyed_on_gui_thread = []

    class Cycle:
        def __init__(self):
            self.me = self

        def __del__(self):
            destroyed_on_gui_thread.append(threading.current_thread() is threading.main_thread())

    Cycle()                                            # unreachable at once: garbage
    with qtbot.waitSignal(runner.finished, timeout=120_000):
        runner.start(lambda progress, should_stop: [[i] for i in range(200_000)])
    assert destroyed_on_gui_thread in ([], [True])     # never collected in the worker
    gc.collect()                                       # what the GUI thread's timer does
    assert destroyed_on_gui_thread == [True]


def test_after_a_library_is_imported_later_garbage_cycles_are_still_freed(qtbot, monkeypatch):
    """Once a library was imported, what is alive is frozen (torch's 800,000 objects rescanned by
    every full collection held the GUI thread ~0.4 s each); a cycle dropped later is still freed."""
    import gc
    import sys
    import types
    import weakref

    from calibsim_gui.qt.widgets import workers

    TaskRunner("collecting")
    collector = workers._gui_thread_collector
    for i in range(workers.FREEZE_AFTER_MODULES):            # a library's modules, newly imported
        monkeypatch.setitem(sys.modules, f"calibsim_test_library_{i}", types.ModuleType("m"))
    frozen = gc.get_freeze_count()
    try:
        collector.check()
        assert gc.get_freeze_count() > frozen

        class Node:
            pass

        first, second = Node(), Node()
        first.other, second.other = second, first
        gone = weakref.ref(first)
        del first, second
        monkeypatch.setattr(collector, "threshold", (0, 0, 0))      # every generation is due
        collector.check()
        assert gone() is None
    finally:
        gc.unfreeze()                  # the rest of the session as before


def test_a_comparisons_model_is_not_frozen_while_it_lives_and_is_freed_without_a_thaw(qtbot, monkeypatch):
    """While a worker holds objects it will drop (`keep_unfrozen`: a comparison's second model), a
    library imported meanwhile freezes nothing; once dropped they are freed by a collection of the
    objects not frozen (no thaw: that pass over every object held the window 1.7-2.5 s, #44), and
    the library's objects are frozen then."""
    import gc
    import sys
    import types
    import weakref

    from calibsim_gui.qt.widgets import workers

    TaskRunner("collecting")
    collector = workers._gui_thread_collector
    frozen_at, frozen = workers.keep_unfrozen(), gc.get_freeze_count()

    class Model:
        pass

    model = Model()
    model.itself = model                                       # a cycle, as in a torch model
    gone = weakref.ref(model)
    monkeypatch.setattr(collector, "modules", len(sys.modules))
    for i in range(workers.FREEZE_AFTER_MODULES):            # a library's modules, newly imported
        monkeypatch.setitem(sys.modules, f"calibsim_test_held_{i}", types.ModuleType("m"))
    try:
        collector.check()
        assert gc.get_freeze_count() == frozen                 # nothing frozen while it lives
        del model
        workers.free_dropped_objects(frozen_at)
        assert not collector.thawed
        collector.check()
        assert gone() is None and gc.get_freeze_count() > 0    # freed; the library frozen now
    finally:
        gc.unfreeze()


def test_a_replaced_model_frozen_while_it_was_alive_is_still_freed(qtbot):
    """A model is held in reference cycles (torch modules are); frozen by an earlier freeze and
    then dropped, it is freed at the next tick once the session says so (`free_dropped_objects`)."""
    import gc
    import weakref

    from calibsim_gui.qt.widgets import workers

    TaskRunner("collecting")
    collector = workers._gui_thread_collector

    class Model:
        pass

    model = Model()
    model.itself = model                                       # a cycle, as in a torch model
    gone = weakref.ref(model)
    gc.freeze()
    try:
        del model
        collector.check()
        assert gone() is not None                              # frozen: no collection reaches it
        workers.free_dropped_objects()
        collector.check()
        assert gone() is None
        assert gc.get_freeze_count() > 0                       # what survived is frozen again
    finally:
        gc.unfreeze()


def test_system_failures_arrive_as_the_command_lines_messages_and_bugs_with_their_traceback(qtbot):
    import errno

    runner = TaskRunner()

    def full_disk(progress, should_stop):
        raise OSError(errno.ENOSPC, "No space left on device", "out.xlsx")

    def bug(progress, should_stop):
        raise KeyError("oops")

    with qtbot.waitSignal(runner.failed, timeout=120_000) as failed:
        runner.start(full_disk)
    assert failed.args[0] == "out.xlsx: No space left on device. Fix: free some disk space, or write to another drive."
    with qtbot.waitSignal(runner.failed, timeout=120_000) as failed:
        runner.start(bug)
    message, _, details = failed.args[0].partition("\n\n")
    assert message == "Unexpected error: KeyError: 'oops'" and details.startswith("Traceback")


def test_a_finished_task_keeps_neither_its_arguments_nor_its_result(qtbot):
    """A task's frames can outlive it (an import in it left them in a garbage cycle, which a freeze
    then kept: torch.fx's `wrap` does so); once finished they hold nothing it was given or made,
    so a replaced model is freed as its last reference goes (#44)."""
    import sys
    import weakref

    class Thing:
        pass

    kept_frames = []

    def task(given, *, progress, should_stop):
        kept_frames.append(sys._getframe(1))        # the runner's frame, kept as a garbage cycle would
        return Thing()

    runner = TaskRunner("keeping")
    given = Thing()
    given_ref = weakref.ref(given)
    with qtbot.waitSignal(runner.finished, timeout=120_000) as finished:
        runner.start(task, given)
    made_ref = weakref.ref(finished.args[0])
    del given, finished
    qtbot.waitUntil(lambda: given_ref() is None and made_ref() is None, timeout=WORKERS_END_MS)
    assert kept_frames                                  # the frame lives on; what it held does not


def test_a_dropped_model_freed_by_reference_counting_costs_no_thaw_and_one_still_alive_does(qtbot):
    """`free_dropped_objects(dropped=...)`: a model without cycles (ONNX) is freed when its last
    reference goes, frozen or not, so the next tick does not unfreeze everything for a full
    collection (0.8-1.8 s with torch loaded, #44); one still alive then (held in cycles, as a
    torch model) is freed by that thaw."""
    import gc
    import weakref

    from calibsim_gui.qt.widgets import workers

    TaskRunner("collecting")
    collector = workers._gui_thread_collector

    class Model:
        pass

    plain, cyclic = Model(), Model()
    cyclic.itself = cyclic
    plain_ref, cyclic_ref = weakref.ref(plain), weakref.ref(cyclic)
    gc.freeze()
    try:
        freezes = workers._freezes                         # freezes and thaws so far
        del plain
        workers.free_dropped_objects(dropped=plain_ref)
        collector.check()
        assert plain_ref() is None and workers._freezes == freezes     # no thaw for it
        assert gc.get_freeze_count() > 0
        del cyclic
        workers.free_dropped_objects(dropped=cyclic_ref)
        collector.check()
        assert cyclic_ref() is None                        # thawed and collected
    finally:
        gc.unfreeze()


def test_the_collectors_timer_belongs_to_the_application(qtbot):
    from PySide6.QtCore import QTimer

    from calibsim_gui.qt.widgets import workers

    TaskRunner("collecting")
    timer = workers._gui_thread_collector.timer
    assert isinstance(timer, QTimer) and timer.parent() is QCoreApplication.instance()


def test_a_window_with_workers_has_the_lock_handed_to_the_gui_thread_within_a_millisecond(qtbot):
    """Qt takes the interpreter lock for each Python call it makes; beside a worker running Python
    each call waited up to Python's 5 ms switch interval (a 2-5 ms table reset took 0.4-0.8 s:
    benchmarks/lock_handover.py). The command line, with no window, keeps Python's interval."""
    import subprocess
    import sys

    from calibsim_gui.qt.widgets.workers import SWITCH_INTERVAL_S

    TaskRunner()
    assert sys.getswitchinterval() == SWITCH_INTERVAL_S <= 0.001
    command = "import sys; from calibsim_gui.cli import main; print(sys.getswitchinterval())"
    shown = subprocess.run([sys.executable, "-c", command], capture_output=True, text=True, check=True)
    assert float(shown.stdout) == 0.005
