"""A stand-in widget that makes its content the first time it is shown (or asked for), so that a
costly part of a view (a plot, and pyqtgraph with it) waits until someone looks at it."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget


class BuiltWhenShown(QWidget):
    """Holds the widget `make()` returns, made when this is first shown or `content()` is called;
    `built` is emitted with it then.

    `make` should not hold the widget that owns this one (a method of it, a lambda using it):
    that cycle would leave the owner to Python's cycle collector, which empties it before Qt is
    done with it. Connect to `built` instead."""

    built = Signal(QWidget)

    def __init__(self, make, parent=None):
        super().__init__(parent)
        self._make, self._content = make, None
        QVBoxLayout(self).setContentsMargins(0, 0, 0, 0)

    def is_built(self) -> bool:
        return self._content is not None

    def content(self) -> QWidget:
        if self._content is None:
            self._content = self._make()
            self.layout().addWidget(self._content)
            if self.isVisible():
                self._content.show()            # now, not at the next turn of the event loop
            self.built.emit(self._content)
        return self._content

    def showEvent(self, event) -> None:
        self.content()
        super().showEvent(event)
