import sys

from PySide6.QtWidgets import QWidget


def test_qt_calls_do_not_leak_references_to_none(qtbot):
    """PySide6 6.12.0 dropped a reference to None per void call and crashed long sessions."""
    widget = QWidget()
    qtbot.addWidget(widget)
    before = sys.getrefcount(None)
    for _ in range(2000):
        widget.update()
    assert sys.getrefcount(None) - before > -100
