"""Model comparison: the same pairs scored by two models, raw and calibrated, side by side."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableView,
    QVBoxLayout,
)

from calibsim_gui.core.analysis import score_column
from calibsim_gui.qt.results_view import ResultsTableModel

SCATTER_FORMS = ("raw", "calibrated")


class ComparisonDialog(QDialog):
    """Mean absolute differences per form, scatter plots of model A vs B, the side-by-side table."""

    def __init__(self, comparison, parent=None):
        super().__init__(parent)
        self.comparison = comparison
        first, second = comparison.models[:2]
        self.setWindowTitle(f"{first} vs {second}")
        self.resize(1000, 720)
        lines = [f"<b>{comparison.metric}</b>: mean absolute difference between the models "
                 "(same pairs; lower = the models agree)"]
        for form, diff in comparison.differences.items():
            lines.append(f"{form}: <b>{diff['mean_abs_diff']:.3f}</b> ({diff['unit']})")
        lines += [f"<i>{note}</i>" for note in comparison.notes]
        self.summary = QLabel("<br>".join(lines))
        self.canvas = pg.GraphicsLayoutWidget()
        self.scatters = {}
        for form in SCATTER_FORMS:
            column = score_column(comparison.metric, form, comparison.geometry)
            a, b = (comparison.frame.get(f"{column} [{m}]") for m in (first, second))
            if a is None or b is None:
                continue
            plot = self.canvas.addPlot(title=f"{comparison.metric} {form}")
            plot.setLabel("bottom", first)
            plot.setLabel("left", second)
            x, y = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
            ok = np.isfinite(x) & np.isfinite(y)
            self.scatters[form] = plot.plot(x[ok], y[ok], pen=None, symbol="o", symbolSize=5,
                                            symbolBrush=(245, 133, 24, 150))
            if ok.any():
                lo, hi = float(min(x[ok].min(), y[ok].min())), float(max(x[ok].max(), y[ok].max()))
                plot.plot([lo, hi], [lo, hi], pen=pg.mkPen((128, 128, 128), style=pg.QtCore.Qt.PenStyle.DashLine))
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
