"""Crash safety: the current project is autosaved shortly after every change.

The file lives in the user's state folder and is removed when the app closes normally, so
finding it at start-up means the last session ended without closing (a crash, a kill, a power
cut); the window then offers to restore it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from PySide6.QtCore import QObject, QTimer

from calibsim_gui.core.errors import CalibsimError

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
    ``view_state_changed`` signal) change."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.path = autosave_path()
        self._last = None
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(AUTOSAVE_DELAY_MS)
        self.timer.timeout.connect(self.save_now)
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

    def save_now(self) -> None:
        """Write the project now if it holds anything worth restoring (an input, anchor edits,
        a human calibration)."""
        self.timer.stop()
        project = self.window.current_project()
        if not project.inputs and "anchor_edits" not in project.settings and project.human is None:
            return
        project.settings["saved_as"] = self.window.project_path
        text = json.dumps(project.to_dict(self.path.parent.resolve()), sort_keys=True)
        if text != self._last:
            try:
                project.save(self.path)
            except (OSError, CalibsimError) as exc:      # e.g. a full disk: say so, keep working
                self.window.status_label.setText(f"Autosave failed ({exc}); save the project "
                                                 "(File ▸ Save project) to keep this session.")
                return
            self._last = text

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
        """The session ended normally (or the user declined to restore): forget the autosave."""
        self.timer.stop()
        self._last = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
