"""Crash safety: the current project is autosaved shortly after every change.

The file lives in the user's state folder and is removed when the app closes normally, so
finding it at start-up means the last session ended without closing (a crash, a kill, a power
cut); the window then offers to restore it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.qt.session.projects import taken_views
from calibsim_gui.qt.widgets.workers import TaskRunner

AUTOSAVE_DELAY_MS = 2000          # a killed session loses at most the last ~2 s of changes


def autosave_path() -> Path:
    """``autosave.calibsim`` in the user's state folder (override: ``CALIBSIM_STATE_DIR``)."""
    folder = os.environ.get("CALIBSIM_STATE_DIR")
    if not folder:
        import platformdirs

        folder = platformdirs.user_state_dir("calibsim", appauthor=False)
    return Path(folder) / "autosave.calibsim"


class Autosaver(QObject):
    """Writes `window.current_project()` (atomically) a moment after the state, the anchor ladder
    being edited, the layout of the tabs or a tab's view choices (its optional
    ``view_state_changed`` signal) change.

    The timer's saves take the project on the GUI thread, its costly view states left for later
    (`LaterState`: a comparison of 100,000 pairs), and take those, serialise and write it in a
    worker (with the pure-Python JSON encoder, which lets the GUI thread run between its chunks),
    one write at a time and never an older project after a newer one; `save_now` writes at once.
    """

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.path = autosave_path()
        self._last = None                   # the text last written
        self._lock = threading.Lock()       # one write (or discard) at a time
        self._numbers = itertools.count(1)  # projects in the order they were taken
        self._written = 0                   # the number of the project last written
        self._epoch = 0                     # a discard makes the writes of earlier projects void
        self.runner = TaskRunner("autosaving", self)
        self.runner.failed.connect(self._failed)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(AUTOSAVE_DELAY_MS)
        self.timer.timeout.connect(self.save_in_background)
        state = window.state
        for signal in (state.model_changed, state.profile_changed, state.input_changed, state.view_changed,
                       state.human_changed, window.anchors.model.ladder_changed, window.panels.changed):
            signal.connect(self.timer.start)
        for widget in window.panels.widgets():
            self.follow(widget)
        window.panels.built.connect(self.follow)          # a tab built when first shown

    def follow(self, widget) -> None:
        """Save again when the tab `widget`'s view choices change."""
        if hasattr(widget, "view_state_changed"):
            widget.view_state_changed.connect(self.timer.start)

    def _project(self):
        """The project to save (taken on the GUI thread), or None when it holds nothing worth
        restoring (no input, anchor edits or human calibration)."""
        project = self.window.current_project(later=True)
        if not project.inputs and "anchor_edits" not in project.settings and project.human is None:
            return None
        project.settings["saved_as"] = self.window.project_path
        return project

    def save_now(self) -> None:
        """Write the project now (on this thread)."""
        self.timer.stop()
        project = self._project()
        if project is not None:
            try:
                self._write(project, next(self._numbers), self._epoch)
            except (OSError, CalibsimError) as exc:
                self._failed(str(exc))

    def save_in_background(self) -> None:
        """Take the project now; serialise and write it in the worker."""
        self.timer.stop()
        project = self._project()
        if project is not None:
            self.runner.start(self._write, project, next(self._numbers), self._epoch)

    def _write(self, project, number: int, epoch: int, **_task) -> None:
        project.views = taken_views(project.views)
        text = "".join(json.JSONEncoder(sort_keys=True).iterencode(project.to_dict(self.path.parent.resolve())))
        with self._lock:
            if epoch != self._epoch or number < self._written or text == self._last:
                return                      # discarded since, a newer project is written, or unchanged
            write_text_atomic(self.path, text)
            self._last, self._written = text, number

    def _failed(self, message: str) -> None:    # e.g. a full disk: say so, keep working
        message = message.split("\n\n")[0]          # a bug's traceback is not for the status line
        self.window.status_label.setText(f"Autosave failed ({message}); save the project "
                                         "(File ▸ Save project) to keep this session.")

    def pending(self):
        """The project a previous session left behind, or None (a damaged one is discarded)."""
        from calibsim_gui.core.analysis.project import Project

        if not self.path.exists():
            return None
        try:
            return Project.load(self.path)
        except CalibsimError:
            self.discard()
            return None

    def discard(self) -> None:
        """The session ended normally (or the user declined to restore): forget the autosave
        (a write still in the worker is dropped)."""
        self.timer.stop()
        with self._lock:
            self._epoch += 1
            self._last = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
