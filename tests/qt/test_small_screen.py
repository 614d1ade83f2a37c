"""At 1024×700, a small laptop's screen: the Anchors and Space tabs stay readable and the status
bar (progress, Cancel) stays in the window."""

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter

from calibsim_gui.qt.anchor_models import TEXT_A, TEXT_B
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
