"""File ▸ Export report: ask where and how, then write the report in the export runner.

`export_report` is also the Search tab's export: every report the window writes is drawn and
written in the app's child process by `reports.write_report_files`.

The reports' modules (pandas, the writers) load with the first export, not with the window.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QDialog

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.errors import Cancelled
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.reports.neighbour_tables import NEIGHBOUR_FORMATS
from calibsim_gui.qt.session.document_sets import NeighbourPairs
from calibsim_gui.qt.widgets.child_process import child_process


def export_report(results, profile, *, path, metric, form, figures, force, progress, should_stop,
                  sources=None):
    """Build the report here (a worker thread), then draw and write it (plus its figures when
    asked) in the app's child process, which never holds the window's interpreter lock; returns
    the files written.

    `sources` (`RunSources`'s fields, `Session.run_sources`) names the profile file, human
    calibration and input columns used."""
    from calibsim_gui.core import reports  # looked up when called, so a replaced function is the one used
    from calibsim_gui.core.reports.reproduce import RunSources

    if isinstance(results, NeighbourPairs):
        return [export_neighbours(results, path, force=force)]
    report = reports.build_report(results, profile, metric=metric, form=form,
                                  sources=RunSources(**sources) if sources is not None else None)
    if should_stop():
        raise Cancelled("export stopped; nothing was written")
    return child_process().run(reports.write_report_files, report, path, figures=figures, force=force,
                               progress=progress, should_stop=should_stop)


def export_neighbours(results: NeighbourPairs, path, *, force: bool):
    """A document set scored by neighbours, as its tables: the most similar pairs as Results shows
    them (raw, calibrated, the band, each pair's duplicate group), then the duplicate groups
    (XLSX and JSON; CSV and TSV hold the pairs)."""
    from calibsim_gui.core.reports.neighbour_tables import write_neighbour_tables  # pandas' writers

    shown = dataclasses.replace(results.neighbours, pairs=results.frame)
    return write_neighbour_tables(shown, path, tables=("pairs", "groups"), force=force)


def exported_message(written) -> str:
    """What the window says once `export_report` wrote `written` (the report first)."""
    extra = f" and {len(written) - 1} figure files" if len(written) > 1 else ""
    return f"Exported {written[0]}{extra}"


class ExportFlow(QObject):
    """The Export dialog over the current results; remembers the format, folder and figures."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.settings = window.settings

    def ask(self) -> None:
        """Ask where and how (Export dialog), then write the report in a worker."""
        from calibsim_gui.qt.flows.export_dialog import ExportDialog, export_figures

        results, profile, state = self.state.results, self.state.profile, self.state
        if not self.has_results():
            return
        metrics = ([results.metric] if isinstance(results, DocumentMatrix) else
                   [m for m in METRICS if f"{m}_raw" in results.frame.columns])
        dialog = ExportDialog(default_path=self.default_path(), metrics=metrics,
                              forms=state.forms(), metric=state.metric, form=state.form,
                              figures=export_figures(self.settings), parent=self.window,
                              anchors=profile.anchors)
        child_process().warm_up()            # the child imports matplotlib while the user chooses
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.window.start_export(**dialog.options())

    def default_path(self) -> str:
        """``<input>-report.<last format>`` in the last export folder, else in Documents: never
        in an input's folder unless the user chose it."""
        from calibsim_gui.qt.flows.export_dialog import report_path

        spec = self.window.input_spec
        path = report_path(self.settings, f"{Path(spec['paths'][0]).stem}-report" if spec else "calibsim-report")
        if isinstance(self.state.results, NeighbourPairs) and Path(path).suffix not in NEIGHBOUR_FORMATS:
            return str(Path(path).with_suffix(".xlsx"))        # neighbours are tables: no HTML or PDF
        return path

    def has_results(self) -> bool:
        """Whether there are results to export; if not, say why and what to do."""
        if self.state.results is not None and self.state.profile is not None:
            return True
        self.window.show_error("Nothing to export", (
            "The results are being scored; export them once scoring has finished."
            if self.window.score_runner.running
            else "Score a pairs file or a document set first."))
        return False

    def start(self, *, path: str, metric: str, form: str, figures: bool, force: bool) -> None:
        """Write the current results to `path` (format by extension) in the export worker; results
        being scored again while the dialog was open are not written (`has_results`)."""
        if not self.has_results():
            return
        from calibsim_gui.qt.flows.export_dialog import remember_export

        remember_export(self.settings, path, figures)
        self.window.export_runner.start(export_report, self.state.results, self.state.profile, path=path,
                                        metric=metric, form=form, figures=figures, force=force,
                                        sources=self.window.state.run_sources())

    def exported(self, written) -> None:
        self.window.status_label.setText(exported_message(written))
