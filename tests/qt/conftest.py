"""Shared for the Qt tests: private settings, a main window on the fake model, dropping files."""

import threading
import traceback

import numpy as np
import pandas as pd
import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QMimeData, QObject, QPointF, QThreadPool, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication

from calibsim_gui.core.embedding import models
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.qt.shell.main_window import MainWindow
from calibsim_gui.qt.session.state import AppState
from calibsim_gui.qt.widgets.workers import wait_for_workers
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(autouse=True)
def _private_settings(isolated_settings):
    """Every test here keeps its QSettings in a temporary folder."""


WORKERS_END_MS = 60_000           # a bound for a stopped worker's last step, not a pace
REFERENCES_MS = 240_000           # building references: ~10 s alone, over 60 s on a busy machine
HOLD_S = 120                      # a held step waits at most this long (a bound, not a pace)


class Gate:
    """Holds a run at a known point, whatever the machine's load: called at each step, the
    first `free` steps pass, later ones wait until `release()`."""

    def __init__(self, free=0):
        self.free, self.steps, self._open = free, 0, threading.Event()

    def __call__(self):
        self.steps += 1
        if self.steps > self.free:
            self._open.wait(HOLD_S)

    @property
    def holding(self) -> bool:
        return self.steps > self.free and not self._open.is_set()

    def release(self):
        self._open.set()


class SingleShots:
    """Stands in for `QTimer.singleShot(ms, callable)` without a context object (one that outlives
    whatever the callable touches): each becomes a timer the fixture below can see and stop."""

    original = QTimer.singleShot

    def __init__(self):
        self.timers: list[tuple[QTimer, str]] = []

    def __call__(self, msec, *args):
        functor = args[-1] if args else None
        if len(args) == 1 and callable(functor) and not isinstance(getattr(functor, "__self__", None), QObject):
            timer = QTimer(singleShot=True, interval=msec)
            timer.timeout.connect(functor)
            timer.start()
            self.timers.append((timer, "".join(traceback.format_stack(limit=4)[:-1])))
            return None
        return self.original(msec, *args)

    def pending(self) -> list[str]:
        return [f"QTimer.singleShot without a context object, created at\n{where}"
                for timer, where in self.timers if timer.isActive()]


def _address(obj) -> int:
    return shiboken6.getCppPointer(obj)[0]


def _active_timers(owners) -> list[str]:
    """Active timers parented (at any depth) to `owners`, which outlive the test."""
    return [f"QTimer{' ' + t.objectName() if t.objectName() else ''} (every {t.interval()} ms) of "
            f"{type(t.parent()).__name__} under {type(owner).__name__}"
            for owner in owners for t in owner.findChildren(QTimer) if t.isActive()]


@pytest.fixture(autouse=True)
def no_timer_or_worker_left(qtbot, monkeypatch):
    """A test fails when it leaves a worker thread running (after a bounded wait for its last
    step), or a timer that would fire after it ended: one on a top-level widget or the
    application that outlive the test, or a `QTimer.singleShot` bound to nothing."""
    app = QApplication.instance()
    before = {_address(w) for w in app.topLevelWidgets()} | {_address(o) for o in app.children()}
    shots = SingleShots()
    monkeypatch.setattr(QTimer, "singleShot", shots)
    yield shots
    pool, problems = QThreadPool.globalInstance(), []
    try:
        qtbot.waitUntil(lambda: pool.activeThreadCount() == 0, timeout=WORKERS_END_MS)
    except qtbot.TimeoutError:
        problems.append(f"{pool.activeThreadCount()} worker thread(s) still running "
                        f"{WORKERS_END_MS // 1000} s after the test")
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)   # windows closed and deleted
    owners = [o for o in [*app.topLevelWidgets(), *app.children()]
              if shiboken6.isValid(o) and _address(o) not in before]
    problems += _active_timers(owners) + shots.pending()
    for timer, _ in shots.timers:
        timer.stop()
    if problems:
        pytest.fail("left running after the test:\n" + "\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def profile():
    """References of the fake model: built-in ladder and a 3,000-sentence background."""
    return build_profile(FakeEmbedder(), random_sentences(3000), ProfileSettings(n_pairs=1500))


@pytest.fixture
def state(profile):
    """Widget state holding `profile` (no model, no input)."""
    state = AppState()
    state.set_profile(profile, "test")
    return state


@pytest.fixture
def window(qtbot, monkeypatch):
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder())
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitUntil(lambda: w.state.profile is not None, timeout=REFERENCES_MS)
    yield w
    w.close()
    assert wait_for_workers(WORKERS_END_MS)
    w.deleteLater()              # free the window now, not at interpreter exit
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


@pytest.fixture
def pairs_csv(tmp_path):
    texts = random_sentences(30, seed=4)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts, "sentence2": texts[::-1], "score": np.linspace(0, 5, 30)}).to_csv(path, index=False)
    return path


@pytest.fixture
def good_results(window, qtbot, pairs_csv):
    """Drop a good pairs file and check it is scored: the window still works."""
    def check():
        window._last_error = None
        with qtbot.waitSignal(window.results_shown, timeout=120_000):
            drop(window, [pairs_csv])
        assert window.state.input.path == pairs_csv
        assert len(window.state.results.frame) == 30
        assert window.state.results.frame["cosine_calibrated"].notna().all()
        assert window._last_error is None
    return check


def shown_error(window, qtbot, timeout=120_000) -> str:
    """The text of the (non-modal) error box the window shows next."""
    qtbot.waitUntil(lambda: window._last_error is not None, timeout=timeout)
    assert window._last_error.isVisible() and not window._last_error.isModal()
    return window._last_error.text()


def drop(widget, paths):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    widget.dropEvent(event)


def build_background(window, qtbot, tmp_path, *, sentences, pairs, seed):
    """Add a random corpus on the Background tab and build a profile from it."""
    corpus = tmp_path / "bg.txt"
    corpus.write_text("\n".join(random_sentences(sentences, seed=8)))
    window.background.add_paths([corpus])
    qtbot.waitUntil(lambda: window.background.documents() is not None, timeout=120_000)
    with qtbot.waitSignal(window.state.profile_changed, timeout=REFERENCES_MS):
        window.build_background(window.background.documents(), pairs, seed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A test of the window fails when anything printed a Python traceback on stderr (a worker
    or slot that failed without telling the user), even if its assertions passed."""
    report = yield
    if report.when == "call" and report.passed and "Traceback (most recent call last)" in report.capstderr:
        report.outcome = "failed"
        report.longrepr = f"a traceback was printed on stderr:\n{report.capstderr}"
    return report
