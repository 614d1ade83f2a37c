"""Agreement with human scores: calibrated score against the human score rescaled to 0-1.

The human-score column and its scale are chosen above the results table (`state.set_labels`);
everything here is derived from the scored frame, nothing is scored again.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.distributions import SPEARMAN_NOTE, Agreement
from calibsim_gui.qt.session.human_scores import calibrated_column, current_agreement
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.plots import POINT_COLOR, SELECTED_COLOR, style_plot
from calibsim_gui.qt.widgets.point_cloud import MANY_POINTS, PointCloud, translucent
from calibsim_gui.session.model import COMPARED_FORMS

NO_LABELS_HINT = ("No human scores to compare with. Load a pairs file with a numeric column of "
                  "human judgements (e.g. score, rating) and choose it above the results table.")


def agreement_summary(result: Agreement) -> str:
    low, high = result.scale
    return (f"{result.n:,} labelled pairs · {result.label} on {low:g}–{high:g}, rescaled to 0–1 · "
            f"MAE {result.mae:.3f} · RMSE {result.rmse:.3f} · Spearman ×100 {result.spearman_x100:.1f}")


HOVER_HINT = "Hover over a point to see its pair; click it to select the row"
CLOUD_COLOURS = [translucent(POINT_COLOR.getRgb())]     # more than `MANY_POINTS` pairs


class AgreementView(QWidget):
    """A scatter of human scores (0-1, x) against calibrated scores (y) with the diagonal, the
    errors on the 0-1 scale and why Spearman cannot tell raw from calibrated. Hovering a point
    names the pair; clicking it selects the row; the selected row is ringed."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.result: Agreement | None = None
        self._rows = np.zeros(0, dtype=np.int64)       # frame row of every drawn point
        self.summary = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.note = QLabel(SPEARMAN_NOTE, wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.hover = QLabel(HOVER_HINT,
                            textFormat=Qt.TextFormat.PlainText)
        self.hover.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

        self.canvas = pg.GraphicsLayoutWidget()
        self.plot = self.canvas.addPlot()
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot.setLabel("bottom", "human score, rescaled to 0–1")
        self.plot.setAspectLocked(False)
        self.diagonal = pg.PlotDataItem([0, 1], [0, 1], pen=pg.mkPen(QColor(128, 128, 128), width=1,
                                                                       style=Qt.PenStyle.DashLine))
        self.points = pg.ScatterPlotItem(size=7, pen=None, brush=pg.mkBrush(POINT_COLOR),
                                         hoverable=True, hoverSize=11, tip=None)
        self.selected = pg.ScatterPlotItem(size=16, pen=pg.mkPen(SELECTED_COLOR, width=2.5),
                                           brush=None)
        self.selected.setZValue(10)
        self.cloud = PointCloud()                      # more than `MANY_POINTS` pairs: one image
        for item in (self.diagonal, self.points, self.cloud, self.selected):
            self.plot.addItem(item)
        self.points.sigHovered.connect(self._hovered)
        self.points.sigClicked.connect(self._clicked)
        self.cloud.hovered.connect(lambda point: self._hover_row(int(self._rows[point])))
        self.cloud.clicked.connect(lambda point: self.state.select_row(int(self._rows[point])))
        self.plot_menu = PlotMenu(self, self.canvas, [self.plot], image_name="agreement.png",
                                  reset=lambda plot: plot.setRange(xRange=(-0.05, 1.05),
                                                                   yRange=(-0.05, 1.05), padding=0))

        self.form_combo = QComboBox()
        self.form_combo.addItem("calibrated score", "calibrated")
        self.form_combo.addItem("human calibration (fitted)", "human")
        self.form_combo.setToolTip("The score compared with people's: calibsim's calibrated score, or "
                                   "the human calibration fitted on labelled pairs (File ▸ Fit human "
                                   "calibration); the disagreement column follows")
        self.form_combo.currentIndexChanged.connect(
            lambda: self.state.set_compared_form(self.form_combo.currentData()))
        choice = QHBoxLayout()
        choice.addWidget(QLabel("Compare people with the"))
        choice.addWidget(self.form_combo)
        choice.addStretch(1)

        self.hint = QLabel(NO_LABELS_HINT, alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.hint.setEnabled(False)
        page = QWidget()
        inner = QVBoxLayout(page)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(choice)
        inner.addWidget(self.summary)
        inner.addWidget(self.note)
        inner.addWidget(self.canvas, 1)
        inner.addWidget(self.hover)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.hint)
        self.stack.addWidget(page)
        layout = QVBoxLayout(self)
        layout.addWidget(self.stack)

        for signal in (state.results_changed, state.labels_changed, state.view_changed):
            signal.connect(self.refresh)
        state.selection_changed.connect(self._show_selected)
        self._apply_palette()
        self.refresh()

    def refresh(self) -> None:
        """Recompute the agreement for the chosen labels and metric (no rescoring)."""
        self.result = result = current_agreement(self.state)
        self.hover.setText(HOVER_HINT)            # a pair read from the previous results is gone
        if result is None:
            self.points.setData([], [])
            self.cloud.clear()
            self._rows = np.zeros(0, dtype=np.int64)
            self.stack.setCurrentWidget(self.hint)
            self._show_selected()
            return
        self._show_form_choice()
        ok = np.isfinite(result.human) & np.isfinite(result.calibrated)
        self._rows = np.flatnonzero(ok)
        if len(self._rows) > MANY_POINTS:              # 100,000 separate points held the window ~0.3 s
            self.points.setData([], [])
            self.cloud.set_points(np.column_stack([result.human[ok], result.calibrated[ok]]),
                                  np.zeros(len(self._rows), dtype=np.int64), CLOUD_COLOURS)
        else:
            self.cloud.clear()
            self.points.setData(x=result.human[ok], y=result.calibrated[ok], data=self._rows)
        self.plot.setLabel("left", f"{calibrated_column(self.state)} (0–1)")
        self.plot.setRange(xRange=(-0.05, 1.05), yRange=(-0.05, 1.05), padding=0)
        self.summary.setText(agreement_summary(result))
        self.stack.setCurrentIndex(1)
        self._show_selected()

    def _show_form_choice(self) -> None:
        """The human calibration can be chosen once its column exists; the choice shown is the one used."""
        column = calibrated_column(self.state) or ""
        fitted = f"{self.state.metric}_human" in self.state.results.frame
        model = self.form_combo.model()
        model.item(1).setEnabled(fitted)
        self.form_combo.blockSignals(True)
        self.form_combo.setCurrentIndex(1 if column.endswith("_human") else 0)
        self.form_combo.blockSignals(False)

    def point_text(self, row: int) -> str:
        """The hover line for frame row `row`: the two texts and both scores."""
        frame, result = self.state.results.frame, self.result
        names = [getattr(self.state.input, side, None) for side in ("text_a", "text_b")]
        names = names if all(n in frame for n in names) else list(frame.columns[:2])
        texts = [str(frame[c].iloc[row]) for c in names]
        low, high = result.scale
        label = result.human[row] * (high - low) + low
        return (f"row {row + 1}: “{texts[0]}” × “{texts[1]}” · {result.label} {label:g} "
                f"(→ {result.human[row]:.2f}) · {self.form_combo.currentText().split(' (')[0]} "
                f"{result.calibrated[row]:.3f} · "
                f"disagreement {result.disagreement[row]:.3f}")

    def _hovered(self, _item, points, _event) -> None:
        if len(points):
            self._hover_row(int(points[0].data()))

    def _hover_row(self, row: int) -> None:
        if self.result is not None:
            self.hover.setText(self.point_text(row))

    def _clicked(self, _item, points, _event) -> None:
        if len(points):
            self.state.select_row(int(points[0].data()))

    def _show_selected(self) -> None:
        row, result = self.state.selected_row, self.result
        if result is None or row is None or row >= len(result.human) \
                or not np.isfinite(result.disagreement[row]):
            self.selected.setData([], [])
            return
        self.selected.setData([result.human[row]], [result.calibrated[row]])
        self.hover.setText(self.point_text(row))

    def selected_point(self) -> tuple[float, float] | None:
        x, y = self.selected.getData()
        return (float(x[0]), float(y[0])) if len(x) else None

    def view_state(self) -> dict:
        """The view choice a project keeps: the score compared with people's."""
        return {"compared": self.state.compared_form}

    def restore_view_state(self, state: dict) -> None:
        """Compare with the score `state` names (unknown or missing: the current choice stays)."""
        form = state.get("compared")
        if form in COMPARED_FORMS and form != self.state.compared_form:
            self.state.set_compared_form(form)

    def _apply_palette(self) -> None:
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        style_plot(self.plot, self.palette())

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)
