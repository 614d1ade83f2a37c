"""At 1024×700, a small laptop's screen: the Anchors and Space tabs stay readable and the status
bar (progress, Cancel) stays in the window."""

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter

from calibsim_gui.qt.editors.anchor_models import TEXT_A, TEXT_B
from tests.qt.conftest import build_background

SMALL = (1024, 700)


def shown_text(table, row, column) -> str:
    """What a cell shows: its text elided to the column's width (less the cell's margins)."""
    text = table.model().index(row, column).data()
    width = table.horizontalHeader().sectionSize(column) - 8
    return table.fontMetrics().elidedText(text, Qt.TextElideMode.ElideRight, width)


def axis_labels(axis) -> list:
    """The tick labels an axis draws, as (rectangle, text)."""
    image = QImage(16, 16, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _, text in texts if text]


def test_at_1024x700_anchor_texts_can_be_read_and_the_status_bar_is_in_the_window(window, qtbot):
    window.resize(*SMALL)
    window.tabs.setCurrentWidget(window.anchors)
    table = window.anchors.table
    qtbot.waitUntil(lambda: window.size().toTuple() == SMALL and table.isVisible(), timeout=120_000)
    for row in range(3):
        for column in (TEXT_A, TEXT_B):
            text = table.model().index(row, column).data()
            assert shown_text(table, row, column)[:25] == text[:25], "the text's first words show"
    assert table.horizontalScrollBar().maximum() > 0             # the score columns scroll instead
    status = window.statusBar()
    assert status.isVisible() and window.rect().contains(status.geometry())
    window.grab().save("/tmp/anchors_1024x700.png")


def test_at_1024x700_the_space_tabs_log_axis_labels_do_not_run_into_each_other(window, qtbot, tmp_path):
    build_background(window, qtbot, tmp_path, sentences=1500, pairs=1000, seed=3)
    window.resize(*SMALL)
    window.tabs.setCurrentWidget(window.space)
    qtbot.waitUntil(lambda: window.space.space is not None and not window.space.runner.running,
                    timeout=120_000)
    plot = window.space.spectrum_plot
    plot.setYRange(math.log10(0.004), math.log10(0.2), padding=0)   # a real model's spectrum: < 2 decades
    axis = plot.getAxis("left")
    qtbot.waitUntil(lambda: {"0.01", "0.1"} <= {text for _, text in axis_labels(axis)}, timeout=120_000)
    labels = axis_labels(axis)
    overlapping = [(a, b) for i, (a, _) in enumerate(labels) for b, _ in labels[i + 1:] if a.intersects(b)]
    assert overlapping == [], f"labels overlap: {[t for _, t in labels]}"
    window.grab().save("/tmp/space_1024x700.png")


def test_at_1024x700_every_tab_fits_and_cancel_stays_in_the_window_during_a_run(window, qtbot, tmp_path,
                                                                                 monkeypatch):
    import pandas as pd
    from PySide6.QtCore import QEvent, QPoint, QRect
    from PySide6.QtWidgets import QApplication

    from tests.fakes import FakeEmbedder, random_sentences
    from tests.qt.conftest import Gate

    slow, gate = FakeEmbedder(), Gate(free=1)                   # held in its second batch
    original = slow.encode_batch
    monkeypatch.setattr(slow, "encode_batch", lambda texts, prompt="": (gate(), original(texts, prompt))[1])
    window.state.embedder = slow
    texts = random_sentences(2000, seed=11)
    path = tmp_path / "many.csv"
    pd.DataFrame({"text1": texts, "text2": texts[::-1]}).to_csv(path, index=False)
    window.open_inputs([path])
    qtbot.waitUntil(lambda: gate.holding, timeout=120_000)
    models = window.models          # the device choices say why CUDA or MPS cannot be used, at length
    qtbot.waitUntil(lambda: models._devices_checked and not models.devices.running, timeout=120_000)
    try:
        for index in range(window.tabs.count()):
            window.tabs.setCurrentIndex(index)
            QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)    # the tab's own minimum size counts
            window.resize(*SMALL)
            qtbot.waitUntil(lambda: window.size().toTuple() == SMALL, timeout=10_000)   # not wider: it fits
            for part in (window.cancel_button, window.progress, window.statusBar()):
                assert part.isVisible(), window.tabs.tabText(index)
                assert window.rect().contains(QRect(part.mapTo(window, QPoint(0, 0)), part.size())), \
                    f"{type(part).__name__} leaves the window on tab {window.tabs.tabText(index)}"
        window.tabs.setCurrentWidget(window.models)
        window.grab().save("/tmp/model_1024x700.png")
    finally:
        window.cancel_button.click()
        gate.release()
