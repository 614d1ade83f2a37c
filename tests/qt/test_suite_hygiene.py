"""The Qt tests' own guard (tests/qt/conftest.py): what a test leaves running is named."""

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from tests.qt.conftest import _active_timers


def test_a_timer_left_on_a_surviving_window_is_named(qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    timer = QTimer(window, interval=10_000, objectName="title")
    timer.start()
    assert _active_timers([window]) == ["QTimer title (every 10000 ms) of QWidget under QWidget"]
    timer.stop()
    assert _active_timers([window]) == []


def test_a_single_shot_bound_to_nothing_is_caught_with_where_it_was_made(qtbot, no_timer_or_worker_left):
    fired = []
    QTimer.singleShot(0, lambda: fired.append("soon"))
    qtbot.waitUntil(lambda: fired == ["soon"], timeout=120_000)         # it still fires
    assert no_timer_or_worker_left.pending() == []
    QTimer.singleShot(60_000, lambda: fired.append("late"))
    widget = QWidget()
    qtbot.addWidget(widget)
    QTimer.singleShot(60_000, widget, widget.close)                   # bound to a widget: dies with it
    pending = no_timer_or_worker_left.pending()
    assert len(pending) == 1 and "test_suite_hygiene.py" in pending[0]
    for timer, _ in no_timer_or_worker_left.timers:
        timer.stop()
