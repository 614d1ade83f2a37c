"""The Threshold dialog: on labelled pairs, the precision-recall curves of the raw and the
calibrated scores and the thresholds that reach a target precision.

The curves come from `core.thresholds.pr_curve` (drawn once per dialog: items created once,
then `setData`); the thresholds and their bootstrap intervals from `find_threshold`, in a
`TaskRunner` so that the dialog never stalls.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
)

from calibsim_gui.core.analysis.thresholds import (
    find_threshold,
    pr_curve,
    same_meaning,
    threshold_in_raw_units,
)
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.workers import TaskRunner

RAW_COLOR = QColor(76, 120, 168)
CALIBRATED_COLOR = QColor(245, 133, 24)
N_BOOT = 500


def labelled_columns(results, metric: str):
    """(label column, raw column, calibrated column) of scored pairs with human labels, or None."""
    agreement = (getattr(results, "provenance", None) or {}).get("agreement")
    frame = getattr(results, "frame", None)
    if not agreement or frame is None:
        return None
    columns = (agreement["label"], f"{metric}_raw", f"{metric}_calibrated")
    return columns if all(c in frame.columns for c in columns) else None


def thresholds_task(raw, calibrated, same, *, higher_is_similar, target, progress, should_stop):
    """Both thresholds at `target` precision, with bootstrap intervals (in a worker)."""
    out = {}
    for form, scores in (("raw", raw), ("calibrated", calibrated)):
        if should_stop():
            from calibsim_gui.core.errors import Cancelled

            raise Cancelled("stopped")
        found = find_threshold(scores, same, criterion="precision", target=target, n_boot=N_BOOT)
        out[form] = (threshold_in_raw_units(found, higher_is_similar) if form == "raw"
                     else found.to_dict())
        progress(len(out), 2, f"threshold on the {form} scores")
    return out


class ThresholdDialog(QDialog):
    """Precision-recall curves of raw and calibrated scores against the labels, and the
    thresholds at a target precision (spin box)."""

    def __init__(self, results, metric: str, parent=None):
        super().__init__(parent)
        label, raw_column, cal_column = labelled_columns(results, metric)
        frame = results.frame
        labels = np.asarray(pd_numeric(frame[label]), dtype=float)
        raw = frame[raw_column].to_numpy(dtype=float)
        cal = frame[cal_column].to_numpy(dtype=float)
        ok = np.isfinite(labels) & np.isfinite(raw) & np.isfinite(cal)
        self.metric_name, self.label = metric, label
        self.labels, self.higher = labels[ok], METRICS[metric].higher_is_similar
        self.raw = METRICS[metric].as_similarity(raw[ok])
        self.cal = cal[ok]
        self.runner = TaskRunner("finding thresholds", self)
        self.setWindowTitle(f"Threshold: {metric} on '{label}'")
        self.resize(760, 560)

        low, high = float(np.min(self.labels)), float(np.max(self.labels))
        _, default = same_meaning(self.labels, scale=(low, high))
        self.same_at = QDoubleSpinBox(minimum=low, maximum=high, singleStep=0.25, decimals=2, value=default)
        self.same_at.setToolTip(f"labels at or above this count as the same meaning (default: 1 for 0/1 "
                                f"labels, else the upper fifth of the labels' range {low:g}-{high:g})")
        self.target = QDoubleSpinBox(minimum=0.05, maximum=1.0, singleStep=0.01, decimals=2, value=0.9)
        self.target.setToolTip("the threshold kept is the lowest one whose precision reaches this: "
                               "the most recall at that precision")
        self.canvas = pg.PlotWidget()
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        plot = self.canvas.getPlotItem()
        plot.setLabel("bottom", "recall")
        plot.setLabel("left", "precision")
        plot.setXRange(0, 1)
        plot.setYRange(0, 1.02)
        plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot_menu = PlotMenu(self, self.canvas, [plot], image_name="precision-recall.png",
                                  reset=lambda plot: plot.setRange(xRange=(0, 1), yRange=(0, 1.02)))
        plot.addLegend(offset=(-10, -10))
        self.raw_curve = plot.plot([], [], pen=pg.mkPen(RAW_COLOR, width=2), name=f"{metric}_raw")
        dashed = Qt.PenStyle.DashLine
        self.cal_curve = plot.plot([], [], pen=pg.mkPen(CALIBRATED_COLOR, width=2, style=dashed),
                                   name=f"{metric}_calibrated")
        self.raw_point = pg.ScatterPlotItem(size=11, brush=RAW_COLOR, pen=pg.mkPen("w"))
        self.cal_point = pg.ScatterPlotItem(size=11, brush=CALIBRATED_COLOR, pen=pg.mkPen("w"), symbol="d")
        self.target_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(QColor(128, 128, 128), width=1,
                                                                 style=dashed))
        for item in (self.target_line, self.raw_point, self.cal_point):
            plot.addItem(item)
        text = self.palette().color(QPalette.ColorRole.Text)
        for side in ("left", "bottom"):
            plot.getAxis(side).setPen(pg.mkPen(text))
            plot.getAxis(side).setTextPen(pg.mkPen(text))

        self.counts = QLabel()
        self.raw_text, self.cal_text = QLabel(), QLabel()
        for widget in (self.counts, self.raw_text, self.cal_text):
            widget.setWordWrap(True)
        self.explain = QLabel("The calibrated threshold is on the 0-1 calibrated scale (0 = a typical "
                              "unrelated pair, 1 = identical text), which carries across models; the "
                              "raw threshold belongs to this model alone.")
        self.explain.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Same meaning at label ≥", self.same_at)
        form.addRow("Target precision", self.target)
        top = QHBoxLayout()
        top.addLayout(form)
        top.addWidget(self.counts, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.canvas, 1)
        layout.addWidget(self.raw_text)
        layout.addWidget(self.cal_text)
        layout.addWidget(self.explain)
        layout.addWidget(buttons)

        self.runner.finished.connect(self._show_thresholds)
        self.runner.failed.connect(self._failed)
        self.same_at.valueChanged.connect(self.update_curves)
        self.target.valueChanged.connect(self.update_thresholds)
        self.update_curves()

    @property
    def same(self) -> np.ndarray:
        return self.labels >= self.same_at.value()

    def update_curves(self) -> None:
        same = self.same
        self.counts.setText(f"{len(same):,} labelled pairs; '{self.label}' ≥ {self.same_at.value():g}: "
                            f"{int(same.sum()):,} the same meaning, {int((~same).sum()):,} not")
        if same.all() or not same.any():
            for curve in (self.raw_curve, self.cal_curve):
                curve.setData([], [])
            self._failed("the labels need pairs of both kinds: move the cut (same meaning at label ≥)")
            return
        for curve, scores in ((self.raw_curve, self.raw), (self.cal_curve, self.cal)):
            found = pr_curve(scores, same)
            curve.setData(np.r_[0.0, found.recall], np.r_[1.0, found.precision])
        self.update_thresholds()

    def update_thresholds(self) -> None:
        same = self.same
        if same.all() or not same.any():
            return
        self.target_line.setValue(self.target.value())
        for text in (self.raw_text, self.cal_text):
            text.setText("Finding the threshold…")
        self.runner.start(thresholds_task, self.raw, self.cal, same, higher_is_similar=self.higher,
                          target=self.target.value())

    def _show_thresholds(self, found) -> None:
        self.found = found
        for form, text, point in (("raw", self.raw_text, self.raw_point),
                                  ("calibrated", self.cal_text, self.cal_point)):
            r = found[form]
            low, high = r["interval"]
            op = "≤" if r.get("rule", "").startswith("distance") else "≥"
            text.setText(f"<b>{self.metric_name}_{form} {op} {r['threshold']:.4f}</b> (95 % interval "
                         f"{low:.4f}–{high:.4f}): precision {r['precision']:.3f}, recall "
                         f"{r['recall']:.3f}, F1 {r['f1']:.3f}")
            point.setData([r["recall"]], [r["precision"]])

    def _failed(self, message: str) -> None:
        self.found = None
        for point in (self.raw_point, self.cal_point):
            point.setData([], [])
        self.raw_text.setText(message.partition("\n\nTraceback")[0])
        self.cal_text.setText("")

    def done(self, result: int) -> None:
        self.runner.cancel()
        super().done(result)


def pd_numeric(series):
    import pandas as pd

    return pd.to_numeric(series, errors="coerce")
