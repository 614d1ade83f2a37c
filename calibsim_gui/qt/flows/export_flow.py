"""File ▸ Export report: ask where and how, then write the report in the flow's own runner.

The dialog, the remembered choices and the writing (`export_report`, in the app's child process)
are shared with the Search tab's export (`qt/session/exports.py`). They, and the reports' modules
(pandas, the writers), load with the first export, not with the window.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.qt.session.document_sets import NeighbourPairs
from calibsim_gui.qt.widgets.child_process import child_process
from calibsim_gui.qt.widgets.workers import TaskRunner


class ExportFlow(QObject):
    """The Export dialog over the current results, then the report written in its own runner;
    remembers the format, folder and figures (in `settings`). `scoring()` says whether the results
    are being scored; the dialog is parented to `parent` (the window)."""

    status = Signal(str)                 # a line for the status bar

    def __init__(self, state, *, settings, scoring, show_error, parent):
        super().__init__(parent)
        self.state, self.settings, self.scoring, self.show_error = state, settings, scoring, show_error
        self.runner = TaskRunner("exporting report", self)   # the window connects `exported`

    def ask(self) -> None:
        """Ask where and how (Export dialog), then write the report in a worker."""
        from calibsim_gui.qt.session.exports import ExportDialog, export_figures

        results, profile, state = self.state.results, self.state.profile, self.state
        if not self.has_results():
            return
        metrics = ([results.metric] if isinstance(results, DocumentMatrix) else
                   [m for m in METRICS if f"{m}_raw" in results.frame.columns])
        dialog = ExportDialog(default_path=self.default_path(), metrics=metrics,
                              forms=state.forms(), metric=state.metric, form=state.form,
                              figures=export_figures(self.settings), parent=self.parent(),
                              anchors=profile.anchors)
        child_process().warm_up()            # the child imports matplotlib while the user chooses
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.start(**dialog.options())

    def default_path(self) -> str:
        """``<input>-report.<last format>`` in the last export folder, else in Documents: never
        in an input's folder unless the user chose it."""
        from calibsim_gui.core.reports.neighbour_tables import NEIGHBOUR_FORMATS
        from calibsim_gui.qt.session.exports import report_path

        spec = self.state.input_spec
        path = report_path(self.settings, f"{Path(spec['paths'][0]).stem}-report" if spec else "calibsim-report")
        if isinstance(self.state.results, NeighbourPairs) and Path(path).suffix not in NEIGHBOUR_FORMATS:
            return str(Path(path).with_suffix(".xlsx"))        # neighbours are tables: no HTML or PDF
        return path

    def has_results(self) -> bool:
        """Whether there are results to export; if not, say why and what to do."""
        if self.state.results is not None and self.state.profile is not None:
            return True
        self.show_error("Nothing to export", (
            "The results are being scored; export them once scoring has finished."
            if self.scoring() else "Score a pairs file or a document set first."))
        return False

    def start(self, *, path: str, metric: str, form: str, figures: bool, force: bool) -> None:
        """Write the current results to `path` (format by extension) in the export worker; results
        being scored again while the dialog was open are not written (`has_results`)."""
        if not self.has_results():
            return
        from calibsim_gui.qt.session.exports import export_report, remember_export

        remember_export(self.settings, path, figures)
        self.runner.start(export_report, self.state.results, self.state.profile, path=path, metric=metric,
                          form=form, figures=figures, force=force, sources=self.state.run_sources())

    def exported(self, written) -> None:
        """Say what was written; connected after the status bar's own slot, which it overrides."""
        from calibsim_gui.qt.session.exports import exported_message

        self.status.emit(exported_message(written))
