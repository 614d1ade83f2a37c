"""Score distributions against the references, the calibrated map and the document heatmap
(pyqtgraph).

Plot items are created once; new data only calls ``setData``. Pair scores arriving during a run
are drawn at most ~10 times a second.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
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

from calibsim_gui.core.analysis import DocumentMatrix, PairChunk, ScoredPairs
from calibsim_gui.core.distributions import (
    LEVEL_COLORS,
    CalibratedMap,
    anchor_medians,
    background_items,
    calibrate_form,
    calibrated_map,
    histograms,
    similarity_label,
)
from calibsim_gui.core.metrics import METRICS
from calibsim_gui.core.profile import FORM_DESCRIPTIONS

REDRAW_MS = 100                       # at most ~10 redraws a second while pairs stream in
MAX_TICKED_DOCUMENTS = 40
FIXED_LEVELS = {"calibrated": (0.0, 1.0), "anchor_minmax": (0.0, 1.0), "bg_minmax": (0.0, 1.0),
                "bg_percentile": (0.0, 100.0)}      # bounded forms keep one colour scale everywhere
BACKGROUND_COLOR = QColor(76, 120, 168)
USER_COLOR = QColor(245, 133, 24)
SELECTED_COLOR = QColor(214, 39, 40)
ANCHOR_PEN = pg.mkPen(QColor(128, 128, 128), width=1.2, style=Qt.PenStyle.DashLine)
SELECTED_PEN = pg.mkPen(SELECTED_COLOR, width=2.5)
HOVER_PIXELS = 8                      # the calibrated map names an anchor pair this close to the mouse
LEGEND_CHARS = 24                     # level labels in the map's legend are cut to this length


def short_label(label: str) -> str:
    """The part of an anchor level's label drawn on its line ("3 - roughly ..." -> "3")."""
    head = label.split(" - ", 1)[0]
    return head if len(head) <= 14 else head[:13] + "…"


def metric_combo(tooltip: str) -> QComboBox:
    """A combo of every metric (data: its name), each item explained in its tooltip."""
    combo = QComboBox(toolTip=tooltip)
    for name, metric in METRICS.items():
        combo.addItem(name, name)
        combo.setItemData(combo.count() - 1, f"{metric.description}; {metric.orientation}",
                          Qt.ItemDataRole.ToolTipRole)
    return combo


def _style_plot(plot: pg.PlotItem, palette: QPalette) -> None:
    text = palette.color(QPalette.ColorRole.Text)
    for side in ("left", "bottom", "right"):
        axis = plot.getAxis(side)
        axis.setPen(pg.mkPen(text))
        axis.setTextPen(pg.mkPen(text))
        axis.enableAutoSIPrefix(False)
    plot.titleLabel.setAttr("color", text.name())
    plot.titleLabel.setText(plot.titleLabel.text)


class _OverlayBox(pg.ViewBox):
    """The right axis' view box: drawn over the plot, leaves zoom, pan and menu to the plot."""

    def mouseDragEvent(self, ev, axis=None):
        ev.ignore()

    def mouseClickEvent(self, ev):
        ev.ignore()

    def wheelEvent(self, ev, axis=None):
        ev.ignore()


class _HistogramPanel:
    """One plot: background density (filled, left axis), your pairs' counts (outline, right
    axis), anchor levels and the selected pair as vertical lines."""

    def __init__(self, plot: pg.PlotItem):
        self.plot = plot
        plot.showGrid(x=True, y=False, alpha=0.15)
        plot.setLabel("left", "density of random background pairs")
        plot.setLabel("right", "your pairs (count)")
        self.counts_box = _OverlayBox(enableMenu=False)
        self.counts_box.setZValue(plot.zValue() + 1)
        plot.scene().addItem(self.counts_box)
        plot.getAxis("right").linkToView(self.counts_box)
        self.counts_box.setXLink(plot)
        plot.vb.sigResized.connect(self._sync_boxes)

        fill = QColor(BACKGROUND_COLOR)
        fill.setAlpha(110)
        self.background = pg.PlotDataItem(stepMode="center", fillLevel=0, brush=fill,
                                          pen=pg.mkPen(BACKGROUND_COLOR, width=1))
        plot.addItem(self.background)
        self.user = pg.PlotDataItem(stepMode="center", pen=pg.mkPen(USER_COLOR, width=2.5))
        self.counts_box.addItem(self.user)
        self.selected = pg.InfiniteLine(angle=90, pen=SELECTED_PEN,
                                        label="selected", labelOpts={
                                            "position": 0.72, "color": SELECTED_COLOR,
                                            "anchors": [(0, 0.5), (0, 0.5)]})
        self.selected.setZValue(20)
        self.selected.hide()
        plot.addItem(self.selected, ignoreBounds=True)
        self.anchor_lines: list[pg.InfiniteLine] = []
        self.shown = {"user": (np.zeros(0), np.zeros(0)), "background": (np.zeros(0), np.zeros(0))}
        self.anchors: list[tuple[str, float]] = []
        self._range = None

    def _sync_boxes(self) -> None:
        self.counts_box.setGeometry(self.plot.vb.sceneBoundingRect())
        self.counts_box.linkedViewChanged(self.plot.vb, self.counts_box.XAxis)

    def set_style(self, palette: QPalette) -> None:
        _style_plot(self.plot, palette)
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
                line.label.setPosition(0.96 - 0.06 * (i % 3))
                line.setToolTip(f"anchor level {anchors[i][0]}")
                self._label_side(line)
                line.show()
            else:
                line.hide()

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
        self.counts_box.enableAutoRange(axis=pg.ViewBox.YAxis)

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
        self.selected.show()

    def selected_value(self) -> float | None:
        return float(self.selected.value()) if self.selected.isVisible() else None


class DistributionPlot(QWidget):
    """Raw and calibrated score distributions: your pairs against the background and anchors.

    Left: raw scores of the current metric; right: the current calibrated form. Metric and form
    are chosen with the combos (they set `state.set_view`).
    """

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self._partial: dict[str, list[np.ndarray]] = {}
        self._sketch_cache: dict[str, object] = {}     # per profile: background items, anchor medians
        self._stale = False                             # changed while hidden: redraw when shown
        self._timer = QTimer(self, singleShot=True, interval=REDRAW_MS)   # throttles live updates
        self._timer.timeout.connect(self.redraw)
        self._soon = QTimer(self, singleShot=True, interval=0)   # one redraw per burst of changes
        self._soon.timeout.connect(self.redraw)

        self.metric_combo = metric_combo("Similarity metric shown in the plots")
        self.form_combo = QComboBox()
        self.form_combo.setToolTip("Calibrated form shown on the right")
        self.metric_combo.currentIndexChanged.connect(
            lambda: self.state.set_view(metric=self.metric_combo.currentData()))
        self.form_combo.currentIndexChanged.connect(self._form_chosen)
        self.summary = QLabel()
        self.summary.setWordWrap(True)

        self.canvas = pg.GraphicsLayoutWidget()
        self.raw_panel = _HistogramPanel(self.canvas.addPlot(row=0, col=0))
        self.cal_panel = _HistogramPanel(self.canvas.addPlot(row=0, col=1))
        self.legend = pg.LegendItem(colCount=4)
        self.canvas.addItem(self.legend, row=1, col=0, colspan=2)
        for item, name in ((self.raw_panel.background, "random background pairs (density, left axis)"),
                           (self.raw_panel.user, "your pairs (count, right axis)"),
                           (pg.PlotDataItem(pen=ANCHOR_PEN), "anchor level medians"),
                           (pg.PlotDataItem(pen=SELECTED_PEN), "selected pair")):
            self.legend.addItem(item, name)
        self.ladder = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Metric:"))
        bar.addWidget(self.metric_combo)
        bar.addSpacing(12)
        bar.addWidget(QLabel("Calibration:"))
        bar.addWidget(self.form_combo)
        bar.addSpacing(12)
        bar.addWidget(self.summary, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.canvas, 1)
        layout.addWidget(self.ladder)

        state.profile_changed.connect(self._profile_changed)
        state.view_changed.connect(self._sync_combos)
        state.results_changed.connect(self._results_changed)
        state.selection_changed.connect(self._update_selected)
        self._apply_palette()
        self._profile_changed()

    # ------------------------------------------------------------------ live data

    def add_partial(self, chunk: PairChunk) -> None:
        """Add a chunk of freshly scored pairs (every metric); redraws are coalesced."""
        for metric, values in chunk.raw.items():
            self._partial.setdefault(metric, []).append(np.asarray(values, dtype=float))
        if not self._timer.isActive():
            self._timer.start()

    def reset(self) -> None:
        """Forget the pairs of a previous run (a new run starts)."""
        self._partial.clear()
        self._timer.stop()
        self._soon.start()

    # ------------------------------------------------------------------ state

    def _profile_changed(self) -> None:
        self._sketch_cache.clear()
        forms = self.state.forms()
        self.form_combo.blockSignals(True)
        self.form_combo.clear()
        for form in forms:
            self.form_combo.addItem(form, form)
            self.form_combo.setItemData(self.form_combo.count() - 1, FORM_DESCRIPTIONS[form],
                                        Qt.ItemDataRole.ToolTipRole)
        self.form_combo.blockSignals(False)
        self.form_combo.setEnabled(bool(forms))
        self._sync_combos()

    def _form_chosen(self) -> None:
        form = self.form_combo.currentData()
        if form is not None and form != self.state.form:
            self.state.set_view(form=form)

    def _sync_combos(self) -> None:
        for combo, value in ((self.metric_combo, self.state.metric), (self.form_combo, self.state.form)):
            combo.blockSignals(True)
            combo.setCurrentIndex(max(0, combo.findData(value)))
            combo.blockSignals(False)
        self._soon.start()

    def _results_changed(self) -> None:
        self._partial.clear()
        self._timer.stop()
        self._soon.start()

    def _form(self) -> str | None:
        profile = self.state.profile
        if profile is None or self.state.metric not in profile.metrics:
            return None
        available = list(profile.metrics[self.state.metric].calibrators)
        return self.state.form if self.state.form in available else available[0]

    # ------------------------------------------------------------------ data

    def _user_raw(self, metric: str) -> np.ndarray:
        results = self.state.results
        if isinstance(results, ScoredPairs) and f"{metric}_raw" in results.frame:
            values = results.frame[f"{metric}_raw"].to_numpy(dtype=float)
        elif isinstance(results, DocumentMatrix) and results.metric == metric:
            raw = results.matrices["raw"]
            values = raw[np.triu_indices(len(raw), k=1)].astype(float)
        elif self._partial.get(metric):
            values = np.concatenate(self._partial[metric])
        else:
            return np.zeros(0)
        return values[np.isfinite(values)]

    def _calibrate(self, metric: str, form: str, raw) -> np.ndarray:
        """`raw` scores of `metric` in calibrated `form` (only that form is computed)."""
        return calibrate_form(self.state.profile, metric, form, raw)

    def _background(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """Background scores in the metric's raw orientation, with weights (empty if none)."""
        if metric not in self._sketch_cache:          # cleared when the profile changes
            self._sketch_cache[metric] = background_items(self.state.profile, metric)
        return self._sketch_cache[metric]

    def _anchor_medians(self, metric: str) -> list[tuple[str, float]]:
        """(level label, median raw score) for every anchor level with pairs."""
        key = f"anchors:{metric}"
        if key not in self._sketch_cache:
            self._sketch_cache[key] = anchor_medians(self.state.profile, metric)
        return self._sketch_cache[key]

    # ------------------------------------------------------------------ drawing

    def redraw(self) -> None:
        """Redraw now if the plots are on screen, else when they are next shown: while a run
        delivers results, a hidden tab costs the GUI thread nothing."""
        self._timer.stop()
        self._soon.stop()
        if not self.isVisible():
            self._stale = True
            return
        self._draw()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self._draw()

    def _draw(self) -> None:
        """Recompute both panels' histograms and lines for the current metric and form."""
        self._stale = False
        metric, form = self.state.metric, self._form()
        orientation = METRICS[metric].orientation
        user = self._user_raw(metric)
        bg_values, bg_weights = self._background(metric)
        anchors = self._anchor_medians(metric)
        self.raw_panel.plot.setTitle(f"raw {metric}")
        self.raw_panel.plot.setLabel("bottom", f"raw {metric} ({orientation})")
        self._draw_panel(self.raw_panel, user, bg_values, bg_weights, anchors)
        if form is None:
            self.cal_panel.plot.setTitle("no calibration (no reference profile)")
            self._draw_panel(self.cal_panel, np.zeros(0), np.zeros(0), np.zeros(0), [])
        else:
            self.cal_panel.plot.setTitle(form)
            self.cal_panel.plot.setLabel("bottom", f"{metric} {form} (higher = more similar)")
            cal_anchors = [(label, float(self._calibrate(metric, form, np.array([value]))[0]))
                           for label, value in anchors]
            self._draw_panel(self.cal_panel, self._user_calibrated(metric, form, user),
                             self._calibrate(metric, form, bg_values), bg_weights, cal_anchors)
        self._update_selected()
        self._update_summary(len(user))
        shortened = [(short_label(label), label) for label, _ in anchors]
        self.ladder.setText("Anchor levels: " + " · ".join(
            label if short == label else f"{short} = {label.split(' - ', 1)[-1]}"
            for short, label in shortened) if anchors else "")

    def _user_calibrated(self, metric: str, form: str, user_raw: np.ndarray) -> np.ndarray:
        results = self.state.results
        if isinstance(results, ScoredPairs) and f"{metric}_{form}" in results.frame:
            values = results.frame[f"{metric}_{form}"].to_numpy(dtype=float)
            return values[np.isfinite(values)]
        return self._calibrate(metric, form, user_raw)

    def _draw_panel(self, panel: _HistogramPanel, user, bg_values, bg_weights, anchors) -> None:
        panel.set_histograms(*histograms(user, bg_values, bg_weights, anchors))
        panel.set_anchors(anchors, self.palette())

    def _update_selected(self) -> None:
        results, row = self.state.results, self.state.selected_row
        metric, form = self.state.metric, self._form()
        raw = cal = None
        if isinstance(results, ScoredPairs) and row is not None and f"{metric}_raw" in results.frame:
            raw = float(results.frame[f"{metric}_raw"].iloc[row])
            if form is not None:
                column = f"{metric}_{form}"
                cal = (float(results.frame[column].iloc[row]) if column in results.frame
                       else float(self._calibrate(metric, form, np.array([raw]))[0]))
        self.raw_panel.set_selected(raw)
        self.cal_panel.set_selected(cal)

    def _update_summary(self, n_user: int) -> None:
        profile = self.state.profile
        running = not isinstance(self.state.results, (ScoredPairs, DocumentMatrix)) and n_user
        parts = [f"{n_user:,} {'pairs scored so far' if running else 'of your pairs'}"]
        if profile is not None and profile.has_background:
            parts.append(f"background: {profile.background_pairs:,} random pairs")
        elif profile is not None:
            parts.append("no background: build one in the Background tab to see random pairs")
        self.summary.setText(" · ".join(parts) if n_user or self.state.profile else
                             "Drop a pairs file onto the window to see its scores here")

    # ------------------------------------------------------------------ look

    def _apply_palette(self) -> None:
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        for panel in (self.raw_panel, self.cal_panel):
            panel.set_style(self.palette())
        self.legend.setLabelTextColor(self.palette().color(QPalette.ColorRole.Text))
        for _, label in self.legend.items:
            label.setText(label.text)              # re-render in the new colour

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)

    # ------------------------------------------------------------------ tests

    def plot_data(self) -> dict:
        """The arrays currently drawn (x = bin edges, y = density or counts) and line positions."""
        if self._soon.isActive() or self._timer.isActive() or self._stale:
            self._timer.stop()               # a change is waiting, or the plots are hidden
            self._soon.stop()
            self._draw()
        return {
            "raw_user": self.raw_panel.shown["user"],
            "raw_background": self.raw_panel.shown["background"],
            "cal_user": self.cal_panel.shown["user"],
            "cal_background": self.cal_panel.shown["background"],
            "anchor_lines": list(self.raw_panel.anchors),
            "cal_anchor_lines": list(self.cal_panel.anchors),
            "selected": self.raw_panel.selected_value(),
            "cal_selected": self.cal_panel.selected_value(),
        }


class CalibratedMapPlot(QWidget):
    """The default calibrated scale of `state.metric`: score (x, "higher = more similar") to
    calibrated value (y), with its 95 % band, the anchor pairs at their levels' targets (coloured
    by level) and the two ends of the scale. Hovering shows the values under the mouse."""

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
        self.lo, self.hi = pg.PlotDataItem(), pg.PlotDataItem()
        self.band = pg.FillBetweenItem(self.lo, self.hi)
        self.curve = pg.PlotDataItem()
        self.points = pg.ScatterPlotItem(size=8, pen=pg.mkPen("w", width=0.6))
        self.ends = pg.ScatterPlotItem(symbol="d", size=12)
        self.unrelated_label = pg.TextItem("typical unrelated pair", anchor=(0, 0))
        self.identical_label = pg.TextItem("identical", anchor=(1, 1))
        for item in (self.band, self.curve, self.points, self.ends, self.unrelated_label,
                     self.identical_label):
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
            for item in (self.lo, self.hi, self.curve, self.points, self.ends):
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
        self.ends.setData([data.unrelated, data.identical], [0.0, 1.0])
        self.unrelated_label.setPos(data.unrelated, -0.02)
        self.identical_label.setPos(data.identical, 1.02)
        for item in (self.band, self.unrelated_label, self.identical_label):
            item.show()
        self.legend.addItem(self.curve, "calibrated map")
        self.legend.addItem(self._band_sample, "95 % interval")
        for i, (label, _, _) in enumerate(data.levels):
            short = label if len(label) <= LEGEND_CHARS else label[:LEGEND_CHARS - 1] + "…"
            self.legend.addItem(self._samples[i % len(self._samples)], short)
        self._apply_legend_color()
        self.plot.setLabel("bottom", similarity_label(metric))
        self.plot.setRange(xRange=(data.x[0], data.x[-1]), yRange=(-0.12, 1.12), padding=0)
        self.hover.setText("Hover over the plot to read the map")

    def hover_text(self, x: float, y: float) -> str:
        """What the mouse at view position (`x`, `y`) points at: an anchor pair within
        `HOVER_PIXELS`, else the map at score `x` with its 95 % interval."""
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
        return f"{metric} {x:.4g} → calibrated {value:.3f} (95 % interval {lo:.3f}–{hi:.3f})"

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
        _style_plot(self.plot, self.palette())
        text = self.palette().color(QPalette.ColorRole.Text)
        shade = QColor(text)
        shade.setAlpha(45)
        self.band.setBrush(pg.mkBrush(shade))
        self._band_sample.setBrush(pg.mkBrush(shade))
        self.curve.setPen(pg.mkPen(text, width=2))
        self.ends.setBrush(pg.mkBrush(text))
        self.ends.setPen(pg.mkPen(text))
        for label in (self.unrelated_label, self.identical_label):
            label.setColor(text)
        self._apply_legend_color()

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)


class HeatmapView(QWidget):
    """A document set's N x N scores as an image with a colour bar; hover shows the pair."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self.form_combo = QComboBox()
        self.form_combo.setToolTip("Show raw scores or a calibrated form")
        self.form_combo.currentIndexChanged.connect(self._show_form)
        self.hover = QLabel("Hover over a cell to see the pair and its score")
        self.hover.setTextFormat(Qt.TextFormat.PlainText)

        self.canvas = pg.GraphicsLayoutWidget()
        self.plot = self.canvas.addPlot()
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.setLabel("bottom", "document b")
        self.plot.setLabel("left", "document a")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.colorbar = pg.ColorBarItem(colorMap="viridis", interactive=False, width=18)
        self.colorbar.axis.enableAutoSIPrefix(False)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.canvas.scene().sigMouseMoved.connect(self._mouse_moved)

        self.hint = QLabel("Drop a folder or several text files onto the window to compare "
                           "documents: every pair's score appears here as a heatmap.")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setWordWrap(True)
        self.hint.setEnabled(False)
        page = QWidget()
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Show:"))
        bar.addWidget(self.form_combo)
        bar.addSpacing(12)
        bar.addWidget(self.hover, 1)
        inner = QVBoxLayout(page)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(bar)
        inner.addWidget(self.canvas, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.hint)
        self.stack.addWidget(page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

        state.results_changed.connect(self.rebuild)
        self._apply_palette()
        self.rebuild()

    @property
    def results(self) -> DocumentMatrix | None:
        results = self.state.results
        return results if isinstance(results, DocumentMatrix) else None

    def rebuild(self) -> None:
        results = self.results
        self.stack.setCurrentIndex(0 if results is None else 1)
        self.form_combo.blockSignals(True)
        self.form_combo.clear()
        if results is not None:
            for form in results.matrices:
                label = f"raw {results.metric}" if form == "raw" else form
                self.form_combo.addItem(label, form)
                self.form_combo.setItemData(self.form_combo.count() - 1, FORM_DESCRIPTIONS.get(form, form),
                                            Qt.ItemDataRole.ToolTipRole)
            calibrated = [i for i in range(self.form_combo.count()) if self.form_combo.itemData(i) != "raw"]
            self.form_combo.setCurrentIndex(calibrated[0] if calibrated else 0)
        self.form_combo.blockSignals(False)
        self._set_ticks(results)
        self._show_form()

    def _set_ticks(self, results: DocumentMatrix | None) -> None:
        if results is None or len(results.ids) > MAX_TICKED_DOCUMENTS:
            self.plot.getAxis("left").setTicks(None)
            self.plot.getAxis("bottom").setTicks(None)
            return
        short = [name if len(name) <= 22 else "…" + name[-21:] for name in results.ids]
        self.plot.getAxis("left").setTicks([[(i + 0.5, f"{i + 1}  {s}") for i, s in enumerate(short)]])
        self.plot.getAxis("bottom").setTicks([[(i + 0.5, str(i + 1)) for i in range(len(short))]])

    def _show_form(self) -> None:
        results, form = self.results, self.form_combo.currentData()
        if results is None or form is None:
            self._matrix = np.zeros((0, 0), dtype=np.float32)
            self.image.clear()
            return
        self._matrix = results.matrices[form]
        n = len(self._matrix)
        lo, hi = FIXED_LEVELS.get(form) or self._data_levels()
        cmap = pg.colormap.get("viridis")
        if form == "raw" and not METRICS[results.metric].higher_is_similar:
            cmap = cmap.getSubset(1.0, -1.0)  # distances: bright still means similar
        self.colorbar.setColorMap(cmap)
        self.image.setImage(self._matrix, autoLevels=False)
        self.colorbar.setLevels((lo, hi))
        orientation = METRICS[results.metric].orientation if form == "raw" else "higher = more similar"
        self.colorbar.axis.setLabel(f"{self.form_combo.currentText()} ({orientation})")
        self.plot.setTitle(f"{n} documents · {results.metric}")
        self.plot.autoRange(padding=0)

    def _data_levels(self) -> tuple[float, float]:
        """Colour range of the off-diagonal scores (the diagonal would only stretch it)."""
        n = len(self._matrix)
        off = self._matrix[~np.eye(n, dtype=bool)] if n > 1 else self._matrix.ravel()
        off = off[np.isfinite(off)]
        lo, hi = (float(off.min()), float(off.max())) if len(off) else (0.0, 1.0)
        return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)

    def _mouse_moved(self, pos) -> None:
        n = len(self._matrix)
        if not n or not self.plot.vb.sceneBoundingRect().contains(pos):
            return
        point = self.plot.vb.mapSceneToView(pos)
        i, j = int(np.floor(point.y())), int(np.floor(point.x()))
        if 0 <= i < n and 0 <= j < n:
            self.hover.setText(self.hover_text(i, j))

    def hover_text(self, i: int, j: int) -> str:
        """The hover line for row `i`, column `j`: "doc a × doc b: value (form)"."""
        ids = self.results.ids
        return f"{ids[i]} × {ids[j]}: {self._matrix[i, j]:.4g} ({self.form_combo.currentText()})"

    def _apply_palette(self) -> None:
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        _style_plot(self.plot, self.palette())
        text = self.palette().color(QPalette.ColorRole.Text)
        self.colorbar.axis.setPen(pg.mkPen(text))
        self.colorbar.axis.setTextPen(pg.mkPen(text))

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)

    def shown_matrix(self) -> np.ndarray:
        """The matrix currently drawn (empty when there is no document set)."""
        return self._matrix
