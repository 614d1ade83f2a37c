"""The Export dialog: where, in which format, featuring which metric and form, figures or not."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.output import REPORT_FORMATS, figure_paths


class ExportDialog(QDialog):
    """Choose the report file and its options; confirms before replacing existing files.

    After `exec()` returns Accepted, `options()` holds what `write_report` needs.
    """

    def __init__(self, *, default_path: str, metrics, forms, metric: str, form: str,
                 figures: bool = False, parent: QWidget | None = None):
        super().__init__(parent)
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
        self.form_combo.addItems(list(forms))
        self.form_combo.setCurrentText(form)
        self.form_combo.setToolTip("The calibration drawn next to raw scores in the figures")
        self.figures_check = QCheckBox("Also save the figures as PNG and SVG beside the report")
        self.figures_check.setChecked(figures)

        form_layout = QFormLayout()
        form_layout.addRow("Format", self.format_combo)
        form_layout.addRow("File", path_row)
        form_layout.addRow("Featured metric", self.metric_combo)
        form_layout.addRow("Calibration in figures", self.form_combo)
        form_layout.addRow("", self.figures_check)
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

    def path(self) -> Path:
        return Path(self.path_edit.text().strip()).expanduser()

    def _format_chosen(self) -> None:
        text = self.path_edit.text().strip()
        if text:
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

    def existing_files(self) -> list[Path]:
        """Files the export would replace."""
        path = self.path()
        candidates = [path] + (figure_paths(path) if self.figures_check.isChecked() else [])
        return [p for p in candidates if p.exists()]

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
        existing = self.existing_files()
        if existing and not self.confirm_replace(existing):
            return
        self.replace_confirmed = bool(existing)
        super().accept()

    def options(self) -> dict:
        return {"path": str(self.path()), "metric": self.metric_combo.currentText(),
                "form": self.form_combo.currentText(), "figures": self.figures_check.isChecked(),
                "force": self.replace_confirmed}
