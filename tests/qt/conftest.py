"""Shared for the Qt tests: private settings, a main window on the fake model, dropping files."""

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from calibsim_gui.core.embedding import models
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.qt.main_window import MainWindow
from calibsim_gui.qt.state import AppState
from calibsim_gui.qt.workers import wait_for_workers
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(autouse=True)
def _private_settings(isolated_settings):
    """Every test here keeps its QSettings in a temporary folder."""


@pytest.fixture(scope="module")
def profile():
    """References of the fake model: built-in ladder and a 3,000-sentence background."""
    return build_profile(FakeEmbedder(), random_sentences(3000), n_pairs=1500)


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
    qtbot.waitUntil(lambda: w.state.profile is not None, timeout=20_000)
    yield w
    w.close()
    assert wait_for_workers(10_000)
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
        with qtbot.waitSignal(window.results_shown, timeout=20_000):
            drop(window, [pairs_csv])
        assert window.state.input.path == pairs_csv
        assert len(window.state.results.frame) == 30
        assert window.state.results.frame["cosine_calibrated"].notna().all()
        assert window._last_error is None
    return check


def shown_error(window, qtbot, timeout=10_000) -> str:
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
    qtbot.waitUntil(lambda: window.background.documents() is not None, timeout=10_000)
    with qtbot.waitSignal(window.state.profile_changed, timeout=20_000):
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
