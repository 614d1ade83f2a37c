"""One histogram panel of the Distributions view (pyqtgraph): the background's density, the
user's pairs, the anchor medians, the selected pair, the rows every filter leaves and a brushed
range, each plot item created once and updated with ``setData``."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette

from calibsim_gui.core.analysis.distributions import label_rows
from calibsim_gui.qt.widgets.plots import SELECTED_COLOR, SHOWN_COLOR, short_label, style_plot

BACKGROUND_COLOR = QColor(76, 120, 168)
USER_COLOR = QColor(245, 133, 24)
ANCHOR_PEN = pg.mkPen(QColor(128, 128, 128), width=1.2, style=Qt.PenStyle.DashLine)
SELECTED_PEN = pg.mkPen(SELECTED_COLOR, width=2.5)
LABEL_TOP, LABEL_STEP = 0.96, 0.07    # anchor labels: height of the first row, step between rows
BRUSH_COLOR = QColor(214, 39, 40, 40)


class OverlayBox(pg.ViewBox):
    """The right axis' view box: drawn over the plot, leaves zoom, pan and menu to the plot."""

    def mouseDragEvent(self, ev, axis=None):
        ev.ignore()

    def mouseClickEvent(self, ev):
        ev.ignore()

    def wheelEvent(self, ev, axis=None):
        ev.ignore()


class HistogramPanel:
    """One plot: background density (filled, left axis), your pairs' counts (outline, right
    axis), anchor levels and the selected pair as vertical lines."""

    def __init__(self, plot: pg.PlotItem):
        self.plot = plot
        plot.showGrid(x=True, y=False, alpha=0.15)
        plot.setLabel("left", "density of random background pairs")
        plot.setLabel("right", "your pairs (count)")
        self.counts_box = OverlayBox(enableMenu=False)
        self.counts_box.setZValue(plot.zValue() + 1)
        plot.scene().addItem(self.counts_box)
        plot.getAxis("right").linkToView(self.counts_box)
        self.counts_box.setXLink(plot)
        self.counts_box.setLimits(yMin=0)          # counts: a bin of 3 pairs never sinks below the axis
        plot.vb.setLimits(yMin=0)                  # density too, so both axes' 0 is the bottom line
        plot.vb.sigResized.connect(self._sync_boxes)

        fill = QColor(BACKGROUND_COLOR)
        fill.setAlpha(110)
        self.background = pg.PlotDataItem(stepMode="center", fillLevel=0, brush=fill,
                                          pen=pg.mkPen(BACKGROUND_COLOR, width=1))
        plot.addItem(self.background)
        self.user = pg.PlotDataItem(stepMode="center", pen=pg.mkPen(USER_COLOR, width=2.5))
        self.counts_box.addItem(self.user)
        shown = QColor(SHOWN_COLOR)
        shown.setAlpha(90)
        self.kept = pg.PlotDataItem(stepMode="center", fillLevel=0, brush=shown, pen=pg.mkPen(SHOWN_COLOR, width=1.5))
        self.counts_box.addItem(self.kept)               # the pairs left by the filters (Results, Map)
        self.selected = pg.InfiniteLine(angle=90, pen=SELECTED_PEN,
                                        label="selected {value:.4g}", labelOpts={
                                            "position": 0.72, "color": SELECTED_COLOR,
                                            "anchors": [(0, 0.5), (0, 0.5)]})
        self.selected.setZValue(20)
        self.selected.hide()
        plot.addItem(self.selected, ignoreBounds=True)
        self.region = pg.LinearRegionItem(brush=pg.mkBrush(BRUSH_COLOR), pen=pg.mkPen(SELECTED_COLOR))
        self.region.setZValue(15)
        self.region.hide()
        plot.addItem(self.region, ignoreBounds=True)
        self.anchor_lines: list[pg.InfiniteLine] = []
        self.shown = {"user": (np.zeros(0), np.zeros(0)), "background": (np.zeros(0), np.zeros(0))}
        self.anchors: list[tuple[str, float]] = []
        self.column: str | None = None        # the results column drawn as "your pairs"
        self._range = None
        plot.vb.sigResized.connect(self.place_labels)
        plot.vb.sigXRangeChanged.connect(self.place_labels)

    def _sync_boxes(self) -> None:
        self.counts_box.setGeometry(self.plot.vb.sceneBoundingRect())
        self.counts_box.linkedViewChanged(self.plot.vb, self.counts_box.XAxis)

    def set_style(self, palette: QPalette) -> None:
        style_plot(self.plot, palette)
        text = palette.color(QPalette.ColorRole.Text)
        for line in self.anchor_lines:
            line.label.setColor(text)

    def set_anchors(self, anchors: list[tuple[str, float]], palette: QPalette) -> None:
        """Vertical labelled lines at `anchors` ((label, value) pairs); lines are reused."""
        self.anchors = anchors
        while len(self.anchor_lines) < len(anchors):
            line = pg.InfiniteLine(angle=90, pen=ANCHOR_PEN, label="",
                                   labelOpts={"anchors": [(0, 0.5), (0, 0.5)]})
            line.setZValue(10)
            self.plot.addItem(line, ignoreBounds=True)
            self.anchor_lines.append(line)
        text = palette.color(QPalette.ColorRole.Text)
        for i, line in enumerate(self.anchor_lines):
            if i < len(anchors) and np.isfinite(anchors[i][1]):
                line.setValue(anchors[i][1])
                line.label.setFormat(short_label(anchors[i][0]))
                line.label.setColor(text)
                line.setToolTip(f"anchor level {anchors[i][0]}")
                self._label_side(line)
                line.show()
            else:
                line.hide()
        self.place_labels()

    def place_labels(self, *_) -> None:
        """Stack the anchor labels in rows so that no two overlap at the current zoom."""
        lines = [line for line in self.anchor_lines if line.isVisible()]
        if not lines:
            return
        pixel = self.plot.vb.viewPixelSize()[0] or 1.0
        widths = [line.label.boundingRect().width() + 4 for line in lines]
        starts = [line.value() / pixel - (width if line.label.anchors[0][0] == 1 else 0)
                  for line, width in zip(lines, widths)]
        height = max(line.label.boundingRect().height() for line in lines) + 2
        step = max(LABEL_STEP, height / max(self.plot.vb.height(), 1.0))      # one label apart
        for line, row in zip(lines, label_rows(starts, widths)):
            line.label.setPosition(max(0.05, LABEL_TOP - step * row))

    def label_boxes(self) -> list:
        """Scene rectangles of the shown anchor labels (for tests: they must not overlap)."""
        return [line.label.sceneBoundingRect() for line in self.anchor_lines if line.isVisible()]

    def hover_text(self, x: float) -> str:
        """What lies under score `x`: its bin, the background density and your pairs' count."""
        edges, counts = self.shown["user"]
        if len(edges) < 2 or not edges[0] <= x <= edges[-1]:
            return ""
        i = int(np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2))
        density = self.shown["background"][1]
        parts = [f"{self.plot.titleLabel.text} {x:.4g}: bin {edges[i]:.4g}–{edges[i + 1]:.4g}",
                 f"your pairs {int(counts[i])}"]
        if len(density):
            parts.append(f"background density {density[i]:.3g}")
        near = [label for label, value in self.anchors if np.isfinite(value)
                and abs(value - x) <= 3 * (self.plot.vb.viewPixelSize()[0] or 0)]
        if near:
            parts.append("anchor level " + ", ".join(near))
        return " · ".join(parts)

    def show_region(self, low: float, high: float) -> None:
        self.region.blockSignals(True)
        self.region.setRegion((low, high))
        self.region.blockSignals(False)
        self.region.show()

    def default_region(self) -> tuple[float, float]:
        """The middle fifth of the bins: a starting range to drag."""
        lo, hi = self._range or (0.0, 1.0)
        return lo + 0.4 * (hi - lo), lo + 0.6 * (hi - lo)

    def set_histograms(self, edges: np.ndarray, density: np.ndarray, counts: np.ndarray) -> None:
        if len(density):
            self.background.setData(edges, density)
        else:
            self.background.clear()
        self.user.setData(edges, counts)
        self.shown = {"background": (edges, density), "user": (edges, counts)}
        span = (float(edges[0]), float(edges[-1]))
        if span != self._range:
            self._range = span
            self.plot.setXRange(*span, padding=0.02)
        self.fit_counts()

    def set_kept(self, values) -> None:
        """Count `values` (the rows shown, None: no filter) in the bins drawn."""
        edges = self.shown["user"][0]
        counts = None if values is None or len(edges) < 2 else np.histogram(values[np.isfinite(values)], edges)[0]
        if counts is None:
            self.kept.clear()
        else:
            self.kept.setData(edges, counts)
        self.shown["kept"] = (edges, counts)

    def fit_counts(self) -> None:
        """The count axis from 0 to just above the fullest bin (set now, not at the next paint)."""
        counts = self.shown["user"][1]
        self.counts_box.setYRange(0, 1.05 * max(1.0, float(np.max(counts, initial=0))), padding=0)

    def _label_side(self, line: pg.InfiniteLine) -> None:
        """Put a line's label on its left near the plot's right edge, else on its right."""
        lo, hi = self._range or (0.0, 1.0)
        side = (1, 0.5) if line.value() > lo + 0.85 * (hi - lo) else (0, 0.5)
        line.label.anchors = [side, side]
        line.label.updatePosition()

    def set_selected(self, value: float | None) -> None:
        if value is None or not np.isfinite(value):
            self.selected.hide()
            return
        self.selected.setValue(value)
        self._label_side(self.selected)
        self.selected.label.valueChanged()
        self.selected.show()

    def selected_value(self) -> float | None:
        return float(self.selected.value()) if self.selected.isVisible() else None
