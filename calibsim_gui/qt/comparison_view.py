"""Model comparison: the same pairs scored by two models, raw and calibrated, side by side.

With a single model the dialog is not a dead end: it says how to get a second model and offers
to pick a model folder (`model_chosen`).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
)

from calibsim_gui.core.analysis.pairs import score_column
from calibsim_gui.qt.plot_menu import PlotMenu
from calibsim_gui.qt.results_view import ResultsTableModel

SCATTER_FORMS = ("raw", "calibrated")


ONE_MODEL_HELP = (
    "<p>A comparison scores the same pairs with a second model, calibrated against the same anchor "
    "ladder, and shows where the models agree.</p>"
    "<p><b>Only one model is available: {model}.</b> To add another:</p><ol>"
    "<li>Get a sentence-transformers model folder (for example, on a machine with internet access: "
    "<code>SentenceTransformer(\"intfloat/multilingual-e5-small\").save(\"e5-small\")</code>, "
    "then copy the folder here), or a model already in your Hugging Face cache.</li>"
    "<li>Click <b>Choose a model folder…</b> below: the same pairs are scored with it and "
    "compared. (Added on the <b>Model</b> tab with <b>Add folder…</b>, it is listed under "
    "<b>File → Compare with another model…</b> next time.)</li></ol>"
    "<p>On the command line: <code>calibsim compare PAIRS --model builtin --model FOLDER "
    "[--anchors LADDER.json]</code>.</p>")


class ComparisonDialog(QDialog):
    """Mean absolute differences per form, scatter plots of model A vs B, the side-by-side table.

    With `comparison` None (one model only: `model` names it) the dialog explains how to add a
    second model and emits `model_chosen(folder)` when one is picked.
    """

    model_chosen = Signal(str)

    def __init__(self, comparison, parent=None, *, model: str = ""):
        super().__init__(parent)
        self.comparison = comparison
        if comparison is None:
            self._one_model(model)
            return
        first, second = comparison.models[:2]
        self.setWindowTitle(f"{first} vs {second}")
        self.resize(1000, 720)
        lines = [f"<b>{comparison.metric}</b>: mean absolute difference between the models "
                 "(same pairs; lower = the models agree)"]
        for form, diff in comparison.differences.items():
            lines.append(f"{form}: <b>{diff['mean_abs_diff']:.3f}</b> ({diff['unit']})")
        lines += [f"<b style=\"color:#b35900\">Warning: {note}</b>" if "different anchor ladders" in note
                  else f"<i>{note}</i>" for note in comparison.notes]
        self.summary = QLabel("<br>".join(lines))
        self.canvas = pg.GraphicsLayoutWidget()
        self.scatters, plots = {}, []
        for form in SCATTER_FORMS:
            column = score_column(comparison.metric, form, comparison.geometry)
            a, b = (comparison.frame.get(f"{column} [{m}]") for m in (first, second))
            if a is None or b is None:
                continue
            plot = self.canvas.addPlot(title=f"{comparison.metric} {form}")
            plots.append(plot)
            plot.setLabel("bottom", first)
            plot.setLabel("left", second)
            x, y = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
            ok = np.isfinite(x) & np.isfinite(y)
            self.scatters[form] = plot.plot(x[ok], y[ok], pen=None, symbol="o", symbolSize=5,
                                            symbolBrush=(245, 133, 24, 150))
            if ok.any():
                lo, hi = float(min(x[ok].min(), y[ok].min())), float(max(x[ok].max(), y[ok].max()))
                plot.plot([lo, hi], [lo, hi], pen=pg.mkPen((128, 128, 128), style=pg.QtCore.Qt.PenStyle.DashLine))
        self.plot_menu = PlotMenu(self, self.canvas, plots, image_name="comparison.png")
        self.table = QTableView()
        self.table.setModel(ResultsTableModel(comparison.frame))
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        split = QSplitter(pg.QtCore.Qt.Orientation.Vertical)
        split.addWidget(self.canvas)
        split.addWidget(self.table)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addWidget(buttons)

    def _one_model(self, model: str) -> None:
        self.setWindowTitle("Compare with another model")
        self.resize(640, 360)
        self.summary = QLabel(ONE_MODEL_HELP.format(model=model or "the current model"))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(pg.QtCore.Qt.TextFormat.RichText)
        self.summary.setAlignment(pg.QtCore.Qt.AlignmentFlag.AlignTop | pg.QtCore.Qt.AlignmentFlag.AlignLeft)
        self.scatters, self.table, self.canvas = {}, None, None
        self.choose_button = QPushButton("Choose a model folder…")
        self.choose_button.setDefault(True)
        self.choose_button.clicked.connect(self.choose_folder)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.choose_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary, 1)
        layout.addWidget(buttons)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A sentence-transformers model folder")
        if folder:
            self.model_chosen.emit(folder)
            self.accept()
