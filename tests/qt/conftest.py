"""Shared for the Qt tests: private settings, a main window on the fake model, dropping files."""

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from calibsim_gui.core import models
from calibsim_gui.qt.main_window import MainWindow
from calibsim_gui.qt.workers import wait_for_workers
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(autouse=True)
def _private_settings(isolated_settings):
    """Every test here keeps its QSettings in a temporary folder."""


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
