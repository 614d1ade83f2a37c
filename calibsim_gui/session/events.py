"""`Event`: a change a session model announces, to any number of plain callables."""

from __future__ import annotations


class Event:
    """Callbacks called, in the order connected, each time the event is emitted.

    A tiny stand-in for a signal: the session model stays plain Python, and the app connects a
    Qt signal's ``emit`` to it (`qt.state.AppState`).
    """

    __slots__ = ("_callbacks",)

    def __init__(self):
        self._callbacks: list = []

    def connect(self, callback) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args) -> None:
        for callback in list(self._callbacks):
            callback(*args)
