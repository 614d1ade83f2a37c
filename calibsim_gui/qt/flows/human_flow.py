"""File ▸ Fit / Open / Save human calibration: a map from the model's scores to what people say."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from calibsim_gui.core.analysis.distributions import guess_scale
from calibsim_gui.core.analysis.human_fit import fit_human_calibration
from calibsim_gui.core.calibration.human import HUMAN_SUFFIX, HumanFit
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.qt.session.human_scores import chosen_label, labels_of
from calibsim_gui.qt.widgets.messages import plural
from calibsim_gui.qt.widgets.workers import TaskRunner

SCALE_PRESETS = ((0, 5), (1, 5), (0, 1), (0, 100), (1, 7), (0, 10))
"""The scales people's similarity scores usually come on (STS 0-5, SICK 1-5, ...)."""


class HumanFlow(QObject):
    """Fits a human calibration in its own runner, opens and saves one. Its dialogs are parented
    to `parent` (the window)."""

    status = Signal(str)                 # a line for the status bar
    savable = Signal()                   # a human calibration is in use: File ▸ Save can save it

    def __init__(self, state, *, session, preferences, projects, show_error, show_message, parent):
        super().__init__(parent)
        self.state, self.session, self.preferences, self.projects = state, session, preferences, projects
        self.show_error, self.show_message = show_error, show_message
        self.runner = TaskRunner("fitting the human calibration", self)
        self.runner.finished.connect(self.fitted)
        self.file_fit = None             # the human calibration last saved to / opened from a file

    def saved(self) -> bool:
        """True when the human calibration in use is kept in a file or a saved project."""
        return self.state.human is not None and (
            self.file_fit is self.state.human or not self.projects.unsaved_work())

    def choose_pairs(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.parent(), "Pairs scored by people", "",
                                              "Pairs (*.csv *.tsv *.jsonl);;All files (*)")
        if not path:
            return
        scale, ok = QInputDialog.getItem(self.parent(), "Scale of the human scores",
                                         "The scale the pairs were scored on (pick one, or type low,high):",
                                         self.scale_choices(), 0, True)
        if ok:
            self.fit(path, scale)

    def scale_choices(self) -> list[str]:
        """The usual scales, the one guessed from the human scores in view (if any) first."""
        choices = [f"{low:g}–{high:g}" for low, high in SCALE_PRESETS]
        label = chosen_label(self.state)
        if label is not None:
            guessed = "{:g}–{:g}".format(*guess_scale(labels_of(self.state.results, label)))
            choices = [guessed] + [c for c in choices if c != guessed]
        return choices

    def fit(self, path: str, scale_text: str, metric: str = "cosine") -> None:
        """Fit a human calibration of the current model on `path` (labelled pairs) in a worker."""
        state = self.state
        try:
            low, high = (float(v) for v in scale_text.replace("–", ",").split(","))
        except ValueError:
            self.show_error("Scale not understood", f"{scale_text!r}: write the scale as low,high, e.g. 0,5.")
            return
        if state.embedder is None or state.profile is None:
            self.show_error("No model", "Load a model before fitting a human calibration.")
            return
        embedder, profile = state.embedder, state.profile
        cache, budget = self.session.cache, self.preferences.memory_budget()
        self.runner.start(lambda progress, should_stop: fit_human_calibration(
            path, embedder, profile, scale=(low, high), metric=metric, cache=cache, progress=progress,
            should_stop=should_stop, memory_budget=budget))

    def fitted(self, fit) -> None:
        self.state.set_human(fit)
        self.savable.emit()
        v = fit.validation
        text = (f"Fitted on {plural(fit.source['pairs'], 'pair')} of {Path(fit.source['file']).name}. "
                f"Cross-validated error (split by sentence): {v['mae']:.3f} on the 0-1 scale. "
                f"Results now have a {fit.calibrator.metric}_human column.")
        for warning in fit.calibrator.warnings_:
            text += f"\nWarning: {warning}"
        self.status.emit(text.splitlines()[0])
        self.show_message(QMessageBox.Icon.Information, "Human calibration", text)

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.parent(), "Open human calibration", "",
                                              f"Human calibrations (*{HUMAN_SUFFIX})")
        if not path:
            return
        try:
            fit = HumanFit.load(path)
        except CalibsimError as exc:
            self.show_error("Cannot open the human calibration", str(exc))
            return
        embedder = self.state.embedder
        if embedder is not None and fit.calibrator.model not in (None, embedder.fingerprint.id):
            self.show_error("Another model's calibration",
                              f"{path} was fitted on scores of {fit.calibrator.model}; the model in use is "
                              f"{embedder.fingerprint.id}. Fit one for this model (File ▸ Fit human calibration).")
            return
        self.state.set_human(fit)
        self.file_fit = fit                       # kept in a file: loading another model loses nothing
        self.savable.emit()

    def save(self) -> None:
        if self.state.human is None:
            return
        path, _ = QFileDialog.getSaveFileName(self.parent(), "Save human calibration", f"human{HUMAN_SUFFIX}",
                                              f"Human calibrations (*{HUMAN_SUFFIX})")
        if path:
            self.state.human.save(path if path.endswith(HUMAN_SUFFIX) else path + HUMAN_SUFFIX)
            self.file_fit = self.state.human
            self.status.emit(f"Saved the human calibration to {path}")
