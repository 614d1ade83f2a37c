"""What File ▸ Export and the Search tab's Export share: the Export dialog (where, in which
format, featuring which metric and form, figures or not), the choices it remembers, and the
writing of a report (`export_report`, in the app's child process).

The reports' modules (pandas, the writers) load in the export's worker, not on the GUI thread:
importing this module does not import them (the package takes ~0.3 s, #44).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.calibration.profile_builder import is_builtin_ladder
from calibsim_gui.core.errors import CalibsimError, Cancelled
from calibsim_gui.core.io.output import REPORT_FORMATS, TABLE_SUFFIXES, figure_paths, sidecar_path
from calibsim_gui.core.references.anchors import load_anchors
from calibsim_gui.qt.session.document_sets import NeighbourPairs
from calibsim_gui.qt.session.preferences import user_folder
from calibsim_gui.qt.session.state import form_label
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


def report_folder(settings: QSettings) -> str:
    """Where a report is proposed: the last export folder, else the user's Documents (their home
    when the system names none); never an input's folder unless the user chose it."""
    return user_folder(settings, "export/folder")


def report_path(settings: QSettings, stem: str) -> str:
    """The file an Export dialog proposes: ``<stem><last format>`` in `report_folder`."""
    return str(Path(report_folder(settings)) / f"{stem}{settings.value('export/format', '.html')}")


def export_figures(settings: QSettings) -> bool:
    """Whether the last export also saved its figures (what an Export dialog proposes)."""
    return settings.value("export/figures", False, type=bool)


def remember_export(settings: QSettings, path: str, figures: bool) -> None:
    """Keep an export's format, folder and figures choice for the next Export dialog, in any
    session (File ▸ Export and the Search tab's Export share them)."""
    settings.setValue("export/format", Path(path).suffix.lower())
    settings.setValue("export/folder", str(Path(path).parent))
    settings.setValue("export/figures", figures)


class ExportDialog(QDialog):
    """Choose the report file and its options; confirms before replacing existing files.

    After `exec()` returns Accepted, `options()` holds what `write_report` needs. With `anchors`
    other than the built-in ladder (edited), the dialog says that the ladder is saved beside the
    report as ``<report>-anchors.json`` (which the report's Reproduce commands use) and counts that
    file among those it would replace.
    """

    def __init__(self, *, default_path: str, metrics, forms, metric: str, form: str,
                 figures: bool = False, parent: QWidget | None = None, anchors=None):
        super().__init__(parent)
        self.anchors = anchors
        self.custom_anchors = anchors is not None and not is_builtin_ladder(anchors)
        self.setWindowTitle("Export report")
        self.setMinimumWidth(560)
        self.replace_confirmed = False
        self.format_combo = QComboBox()
        for suffix, label in REPORT_FORMATS.items():
            self.format_combo.addItem(f"{label} ({suffix})", suffix)
        self.format_combo.setToolTip("HTML and PDF are readable reports with figures; XLSX, JSON and "
                                     "CSV keep every number at full precision")
        self.path_edit = QLineEdit(default_path)
        browse = QPushButton("Choose…")
        browse.clicked.connect(self.browse)
        path_row = QHBoxLayout()
        path_row.addWidget(self.path_edit, 1)
        path_row.addWidget(browse)
        self.metric_combo = QComboBox()
        self.metric_combo.addItems(list(metrics))
        self.metric_combo.setCurrentText(metric)
        self.metric_combo.setToolTip("The metric that the readable tables and the figures feature "
                                     "(every metric is in XLSX, JSON and CSV)")
        self.form_combo = QComboBox()
        for name in forms:
            self.form_combo.addItem(form_label(name), name)
        self.form_combo.setCurrentIndex(max(self.form_combo.findData(form), 0))
        self.form_combo.setToolTip("The calibration drawn next to raw scores in the figures")
        self.figures_check = QCheckBox("Also save the figures as PNG and SVG beside the report")
        self.figures_check.setChecked(figures)

        form_layout = QFormLayout()
        form_layout.addRow("Format", self.format_combo)
        form_layout.addRow("File", path_row)
        form_layout.addRow("Featured metric", self.metric_combo)
        form_layout.addRow("Calibration in figures", self.form_combo)
        form_layout.addRow("", self.figures_check)
        self.anchors_note = QLabel()
        self.anchors_note.setWordWrap(True)
        self.anchors_note.setVisible(self.custom_anchors)
        form_layout.addRow("", self.anchors_note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Save).setText("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form_layout)
        layout.addWidget(buttons)

        self._sync_format_from_path()
        self.format_combo.currentIndexChanged.connect(self._format_chosen)
        self.path_edit.textEdited.connect(self._sync_format_from_path)
        self.path_edit.textChanged.connect(self._update_anchors_note)
        self._update_anchors_note()

    def _anchors_file(self) -> Path | None:
        """The edited ladder's file beside the report (None: built-in ladder, or a CSV/TSV table)."""
        path = self.path()
        if not self.custom_anchors or not path.name or path.suffix.lower() in TABLE_SUFFIXES:
            return None            # no file named yet (a folder such as "/" while typing), or a table
        from calibsim_gui.core.reports.reproduce import anchors_path

        return anchors_path(path)

    def _update_anchors_note(self) -> None:
        target = self._anchors_file()
        self.anchors_note.setText(
            "" if target is None else
            f"Your edited anchor ladder is saved beside the report as {target.name}; the report's "
            "Reproduce commands use it (--anchors) to re-create the calibrated numbers.")
        self.anchors_note.setVisible(target is not None)

    def path(self) -> Path:
        return Path(self.path_edit.text().strip()).expanduser()

    def _format_chosen(self) -> None:
        text = self.path_edit.text().strip()
        if Path(text).name:
            self.path_edit.setText(str(Path(text).with_suffix(self.format_combo.currentData())))

    def _sync_format_from_path(self) -> None:
        index = self.format_combo.findData(self.path().suffix.lower())
        if index >= 0 and index != self.format_combo.currentIndex():
            self.format_combo.blockSignals(True)
            self.format_combo.setCurrentIndex(index)
            self.format_combo.blockSignals(False)

    def browse(self) -> None:
        suffix = self.format_combo.currentData()
        filters = ";;".join(f"{label} (*{s})" for s, label in REPORT_FORMATS.items())
        chosen = f"{REPORT_FORMATS[suffix]} (*{suffix})"
        path, _ = QFileDialog.getSaveFileName(
            self, "Export report", str(self.path()), filters, chosen,
            QFileDialog.Option.DontConfirmOverwrite)       # asked once, on Export
        if path:
            self.path_edit.setText(path if Path(path).suffix else path + suffix)
            self._sync_format_from_path()

    def targets(self) -> list[Path]:
        """Every file the export writes: the report and its side files."""
        path = self.path()
        targets = [path] + ([sidecar_path(path)] if path.suffix.lower() in TABLE_SUFFIXES else [])
        targets += figure_paths(path) if self.figures_check.isChecked() else []
        return targets + [p for p in (self._anchors_file(),) if p is not None]

    def existing_files(self) -> list[Path]:
        """Files the export would replace, side files included (all under one question); the
        ladder's file is not asked about when it holds this very ladder (an earlier export's)."""
        return [p for p in self.targets() if p.exists() and not (p == self._anchors_file() and self._same_ladder(p))]

    def _same_ladder(self, path: Path) -> bool:
        try:
            return load_anchors(path) == self.anchors
        except (CalibsimError, OSError):
            return False

    def confirm_replace(self, existing: list[Path]) -> bool:
        names = "\n".join(str(p) for p in existing[:6])
        answer = QMessageBox.question(self, "Replace existing files?",
                                      f"These files exist already and would be replaced:\n{names}")
        return answer == QMessageBox.StandardButton.Yes

    def accept(self) -> None:
        path = self.path()
        if not self.path_edit.text().strip():
            QMessageBox.warning(self, "Export report", "Choose a file to export to.")
            return
        if path.suffix.lower() not in REPORT_FORMATS:
            QMessageBox.warning(self, "Export report",
                                f"{path.name}: calibsim writes {', '.join(REPORT_FORMATS)} files. "
                                "Pick a format or change the file's extension.")
            return
        folder = next((p for p in self.targets() if p.is_dir()), None)
        if folder is not None:
            QMessageBox.warning(self, "Export report",
                                f"{folder} is a folder, and the export writes a file there. "
                                "Choose another file name, or a file inside that folder.")
            return
        existing = self.existing_files()
        if existing and not self.confirm_replace(existing):
            return
        self.replace_confirmed = bool(existing)
        super().accept()

    def options(self) -> dict:
        return {"path": str(self.path()), "metric": self.metric_combo.currentText(),
                "form": self.form_combo.currentData(), "figures": self.figures_check.isChecked(),
                "force": self.replace_confirmed}
