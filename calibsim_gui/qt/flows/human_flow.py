"""File ▸ Fit / Open / Save human calibration: a map from the model's scores to what people say."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox

from calibsim_gui.core.analysis.distributions import guess_scale, label_values
from calibsim_gui.core.analysis.human_fit import fit_human_calibration
from calibsim_gui.core.calibration.human import HUMAN_SUFFIX, HumanFit
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.qt.session.human_scores import chosen_label
from calibsim_gui.qt.widgets.messages import plural

SCALE_PRESETS = ((0, 5), (1, 5), (0, 1), (0, 100), (1, 7), (0, 10))
"""The scales people's similarity scores usually come on (STS 0-5, SICK 1-5, ...)."""


class HumanFlow(QObject):
    """Fits a human calibration in the window's human runner, opens and saves one."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.file_fit = None             # the human calibration last saved to / opened from a file

    def saved(self) -> bool:
        """True when the human calibration in use is kept in a file or a saved project."""
        return self.state.human is not None and (
            self.file_fit is self.state.human or not self.window.unsaved_work())

    def choose_pairs(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Pairs scored by people", "",
                                              "Pairs (*.csv *.tsv *.jsonl);;All files (*)")
        if not path:
            return
        scale, ok = QInputDialog.getItem(self.window, "Scale of the human scores",
                                         "The scale the pairs were scored on (pick one, or type low,high):",
                                         self.scale_choices(), 0, True)
        if ok:
            self.window.fit_human(path, scale)

    def scale_choices(self) -> list[str]:
        """The usual scales, the one guessed from the human scores in view (if any) first."""
        choices = [f"{low:g}–{high:g}" for low, high in SCALE_PRESETS]
        label = chosen_label(self.state)
        if label is not None:
            guessed = "{:g}–{:g}".format(*guess_scale(label_values(self.state.results.frame[label])))
            choices = [guessed] + [c for c in choices if c != guessed]
        return choices

    def fit(self, path: str, scale_text: str, metric: str = "cosine") -> None:
        """Fit a human calibration of the current model on `path` (labelled pairs) in a worker."""
        state, window = self.state, self.window
        try:
            low, high = (float(v) for v in scale_text.replace("–", ",").split(","))
        except ValueError:
            window.show_error("Scale not understood", f"{scale_text!r}: write the scale as low,high, e.g. 0,5.")
            return
        if state.embedder is None or state.profile is None:
            window.show_error("No model", "Load a model before fitting a human calibration.")
            return
        embedder, profile, cache, budget = state.embedder, state.profile, window.cache, window.memory_budget()
        window.human_runner.start(lambda progress, should_stop: fit_human_calibration(
            path, embedder, profile, scale=(low, high), metric=metric, cache=cache, progress=progress,
            should_stop=should_stop, memory_budget=budget))

    def fitted(self, fit) -> None:
        self.state.set_human(fit)
        self.window.menus.save_human_action.setEnabled(True)
        v = fit.validation
        text = (f"Fitted on {plural(fit.source['pairs'], 'pair')} of {Path(fit.source['file']).name}. "
                f"Cross-validated error (split by sentence): {v['mae']:.3f} on the 0-1 scale. "
                f"Results now have a {fit.calibrator.metric}_human column.")
        for warning in fit.calibrator.warnings_:
            text += f"\nWarning: {warning}"
        self.window.status_label.setText(text.splitlines()[0])
        self.window.show_message(QMessageBox.Icon.Information, "Human calibration", text)

    def choose_file(self) -> None:
        window = self.window
        path, _ = QFileDialog.getOpenFileName(window, "Open human calibration", "",
                                              f"Human calibrations (*{HUMAN_SUFFIX})")
        if not path:
            return
        try:
            fit = HumanFit.load(path)
        except CalibsimError as exc:
            window.show_error("Cannot open the human calibration", str(exc))
            return
        embedder = self.state.embedder
        if embedder is not None and fit.calibrator.model not in (None, embedder.fingerprint.id):
            window.show_error("Another model's calibration",
                              f"{path} was fitted on scores of {fit.calibrator.model}; the model in use is "
                              f"{embedder.fingerprint.id}. Fit one for this model (File ▸ Fit human calibration).")
            return
        self.state.set_human(fit)
        self.file_fit = fit                       # kept in a file: loading another model loses nothing
        window.menus.save_human_action.setEnabled(True)

    def save(self) -> None:
        if self.state.human is None:
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Save human calibration", f"human{HUMAN_SUFFIX}",
                                              f"Human calibrations (*{HUMAN_SUFFIX})")
        if path:
            self.state.human.save(path if path.endswith(HUMAN_SUFFIX) else path + HUMAN_SUFFIX)
            self.file_fit = self.state.human
            self.window.status_label.setText(f"Saved the human calibration to {path}")
