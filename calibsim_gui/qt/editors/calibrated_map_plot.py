"""The calibrated map (pyqtgraph): the calibration curve from raw to calibrated score, with the
anchor pairs and an edited ladder's preview.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.distributions import (
    LEVEL_COLORS,
    CalibratedMap,
    calibrated_map,
    similarity_label,
)
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.plots import SELECTED_COLOR, metric_combo, style_plot

HOVER_PIXELS = 8                      # the calibrated map names an anchor pair this close to the mouse
LEGEND_CHARS = 24                     # level labels in the map's legend are cut to this length


class CalibratedMapPlot(QWidget):
    """The default calibrated scale of `state.metric`: score (x, "higher = more similar") to
    calibrated value (y), with its band (where people's scores fall, or the reference
    uncertainty), the anchor pairs at their levels' targets (coloured by level) and the two ends of
    the scale. Hovering shows the values under the mouse.

    `set_preview` adds an edited ladder that is not applied yet: its pairs (those already scored)
    as hollow circles at their new targets (the ladder checks the scale; it does not shape it)."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.data: CalibratedMap | None = None
        self.metric_combo = metric_combo("Metric whose calibrated scale is drawn")
        self.metric_combo.currentIndexChanged.connect(
            lambda: self.state.set_view(metric=self.metric_combo.currentData()))
        self.hover = QLabel(textFormat=Qt.TextFormat.PlainText)
        self.hover.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hover.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # long texts: cut

        self.canvas = pg.GraphicsLayoutWidget()
        self.plot = self.canvas.addPlot()
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.plot.setLabel("left", "calibrated")
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot_menu = PlotMenu(self, self.canvas, [self.plot], image_name="calibrated-map.png")
        self.lo, self.hi = pg.PlotDataItem(), pg.PlotDataItem()
        self.band = pg.FillBetweenItem(self.lo, self.hi)
        self.curve = pg.PlotDataItem()
        self.points = pg.ScatterPlotItem(size=8, pen=pg.mkPen("w", width=0.6))
        self.ends = pg.ScatterPlotItem(symbol="d", size=12)
        self.preview_points = pg.ScatterPlotItem(size=11, brush=None)
        self._preview = None                       # (AnchorSet, scores) of an unapplied edit
        self.unrelated_label = pg.TextItem("typical unrelated pair", anchor=(0, 0))
        self.identical_label = pg.TextItem("identical", anchor=(1, 1))
        for item in (self.band, self.curve, self.points, self.ends, self.unrelated_label,
                     self.identical_label, self.preview_points):
            self.plot.addItem(item)
        self._brushes = [pg.mkBrush(color) for color in LEVEL_COLORS]
        self._samples = [pg.ScatterPlotItem(size=8, brush=brush, pen=None) for brush in self._brushes]
        self._band_sample = pg.ScatterPlotItem(symbol="s", size=14, pen=None)   # the legend's band
        self.legend = pg.LegendItem(labelTextSize="8pt", verSpacing=-5)
        self.canvas.addItem(self.legend, row=0, col=1)
        self.legend.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.canvas.ci.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop)
        self.canvas.scene().sigMouseMoved.connect(self._mouse_moved)

        bar = QHBoxLayout()
        bar.addWidget(QLabel("<b>Calibrated map</b> of"))
        bar.addWidget(self.metric_combo)
        bar.addSpacing(8)
        bar.addWidget(self.hover, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.canvas, 1)

        state.profile_changed.connect(self.refresh)
        state.view_changed.connect(self.refresh)
        self._apply_palette()
        self.refresh()

    def refresh(self) -> None:
        """Draw the current profile's map for `state.metric` (empty without references)."""
        profile, metric = self.state.profile, self.state.metric
        self.metric_combo.blockSignals(True)
        self.metric_combo.setCurrentIndex(max(0, self.metric_combo.findData(metric)))
        self.metric_combo.blockSignals(False)
        self.data = data = (calibrated_map(profile, metric)
                            if profile is not None and metric in profile.metrics else None)
        self.legend.clear()
        if data is None:
            for item in (self.lo, self.hi, self.curve, self.points, self.ends, self.preview_points):
                item.setData([], [])
            self.band.hide()
            self.unrelated_label.hide()
            self.identical_label.hide()
            self.hover.setText("No reference profile yet: load a model" if profile is None
                               else f"This profile has no {metric} references")
            return
        self.lo.setData(data.x, data.lo)
        self.hi.setData(data.x, data.hi)
        self.curve.setData(data.x, data.y)
        brushes = np.empty(len(data.scores), dtype=object)
        for i, (_, _, pairs) in enumerate(data.levels):
            brushes[pairs] = self._brushes[i % len(self._brushes)]
        self.points.setData(x=data.scores, y=data.targets, brush=list(brushes))
        ends_y = np.interp([data.unrelated, data.identical], data.x, data.y)
        self.ends.setData([data.unrelated, data.identical], ends_y)
        self.unrelated_label.setPos(data.unrelated, ends_y[0] - 0.02)
        self.identical_label.setPos(data.identical, ends_y[1] + 0.02)
        for item in (self.band, self.unrelated_label, self.identical_label):
            item.show()
        self.legend.addItem(self.curve, "calibrated map")
        self.legend.addItem(self._band_sample, data.band_label)
        for i, (label, _, _) in enumerate(data.levels):
            short = label if len(label) <= LEGEND_CHARS else label[:LEGEND_CHARS - 1] + "…"
            self.legend.addItem(self._samples[i % len(self._samples)], short)
        self._apply_legend_color()
        self.plot.setLabel("bottom", similarity_label(metric))
        self.plot.setRange(xRange=(data.x[0], data.x[-1]), yRange=(-0.12, 1.12), padding=0)
        self.hover.setText("Hover over the plot to read the map")
        self._draw_preview()

    def set_preview(self, anchors=None, scores=None) -> None:
        """Preview the edited ladder `anchors` (None: no preview) whose pairs score `scores`
        ("higher = more similar", NaN where not scored yet) on the current map."""
        self._preview = None if anchors is None else (anchors, np.asarray(scores, dtype=float))
        self._draw_preview()

    def _draw_preview(self) -> None:
        data = self.data
        self.legend.removeItem(self.preview_points)           # (no-op when it is not listed)
        if self._preview is None or data is None:
            self.preview_points.setData([], [])
            return
        anchors, scores = self._preview
        targets = anchors.targets
        levels = np.array([p.level for p in anchors.pairs], dtype=str)
        known = np.isfinite(scores) & np.isin(levels, list(targets))
        y = np.array([targets.get(level, np.nan) for level in levels], dtype=float)
        self.preview_points.setData(scores[known], y[known])
        self.legend.addItem(self.preview_points, "edited pairs (not applied)")
        self._apply_legend_color()

    def hover_text(self, x: float, y: float) -> str:
        """What the mouse at view position (`x`, `y`) points at: an anchor pair within
        `HOVER_PIXELS`, else the map at score `x` with its band."""
        data, metric = self.data, self.state.metric
        if data is None:
            return ""
        width, height = self.plot.vb.viewPixelSize()
        distance = np.hypot((data.scores - x) / width, (data.targets - y) / height)
        nearest = int(np.argmin(distance))
        if distance[nearest] <= HOVER_PIXELS:
            label = next(label for label, _, pairs in data.levels if nearest in pairs)
            score = data.scores[nearest]
            return (f"anchor pair {nearest + 1} ({label}, target {data.targets[nearest]:.3g}): "
                    f"{metric} {score:.4g} → calibrated {np.interp(score, data.x, data.y):.3f}")
        value, lo, hi = (np.interp(x, data.x, values) for values in (data.y, data.lo, data.hi))
        return f"{metric} {x:.4g} → calibrated {value:.3f} ({data.band_label}: {lo:.3f}–{hi:.3f})"

    def _mouse_moved(self, pos) -> None:
        if self.data is not None and self.plot.vb.sceneBoundingRect().contains(pos):
            point = self.plot.vb.mapSceneToView(pos)
            self.hover.setText(self.hover_text(point.x(), point.y()))

    def _apply_legend_color(self) -> None:
        self.legend.setLabelTextColor(self.palette().color(QPalette.ColorRole.Text))
        for _, label in self.legend.items:
            label.setText(label.text)              # re-render in the palette's colour

    def _apply_palette(self) -> None:
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        style_plot(self.plot, self.palette())
        text = self.palette().color(QPalette.ColorRole.Text)
        shade = QColor(text)
        shade.setAlpha(45)
        self.band.setBrush(pg.mkBrush(shade))
        self._band_sample.setBrush(pg.mkBrush(shade))
        self.curve.setPen(pg.mkPen(text, width=2))
        self.preview_points.setPen(pg.mkPen(SELECTED_COLOR, width=1.5))
        self.ends.setBrush(pg.mkBrush(text))
        self.ends.setPen(pg.mkPen(text))
        for label in (self.unrelated_label, self.identical_label):
            label.setColor(text)
        self._apply_legend_color()

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)
