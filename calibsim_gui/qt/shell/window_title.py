"""The window's title: the project's name, Qt's modified marker while there is unsaved work, and for
a while the note that a long run ended."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QTimer

NOTE_MS = 10_000           # how long the title says that a long run ended


class WindowTitle(QObject):
    """"<project name>[*] — calibsim", kept up to date by the state's signals and the projects'
    `saved_changed` (no timer but the note's, parented here)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.note_timer = QTimer(self, singleShot=True, interval=NOTE_MS)
        self.note_timer.timeout.connect(self.update)
        state = window.state
        for signal in (state.model_changed, state.profile_changed, state.input_changed,
                       state.human_changed, state.labels_changed, window.anchors.model.ladder_changed,
                       window.projects.saved_changed):
            signal.connect(self.update)
        self.update()

    def name(self) -> str:
        path = self.window.projects.path
        return Path(path).stem if path else "Untitled"

    def update(self) -> None:
        """The title for the project as it is now."""
        self.show()

    def show(self, note: str = "") -> None:
        """The title for the project as it is now, with `note` after it if given."""
        window = self.window
        window.setWindowTitle(f"{self.name()}[*] — calibsim" + (f" — {note}" if note else ""))
        window.setWindowModified(bool(window.unsaved_work()))

    def note(self, text: str) -> None:
        """Say in the title, for a while, that a long run ended."""
        self.show(text)
        self.note_timer.start()
