"""Score distributions against the references, the calibrated map and the document heatmap
(pyqtgraph).

Plot items are created once; new data only calls ``setData``. Pair scores arriving during a run
are drawn at most ~10 times a second.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QItemSelectionModel, Qt, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.distributions import (
    LEVEL_COLORS,
    CalibratedMap,
    anchor_medians,
    background_items,
    calibrate_form,
    calibrated_map,
    histograms,
    label_rows,
    similarity_label,
)
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.matrix_order import colour_range, short_document_label, similarity_order
from calibsim_gui.core.analysis.pairs import PairChunk, ScoredPairs, score_column
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.qt.plot_menu import PlotMenu
from calibsim_gui.qt.state import form_label, pair_row

REDRAW_MS = 100                       # at most ~10 redraws a second while pairs stream in
MAX_TICKED_DOCUMENTS = 40
MAX_CLUSTERED_DOCUMENTS = 3000        # clustering more on the GUI thread would take seconds
BACKGROUND_COLOR = QColor(76, 120, 168)
USER_COLOR = QColor(245, 133, 24)
SELECTED_COLOR = QColor(214, 39, 40)
ANCHOR_PEN = pg.mkPen(QColor(128, 128, 128), width=1.2, style=Qt.PenStyle.DashLine)
SELECTED_PEN = pg.mkPen(SELECTED_COLOR, width=2.5)
HOVER_PIXELS = 8                      # the calibrated map names an anchor pair this close to the mouse
LEGEND_CHARS = 24                     # level labels in the map's legend are cut to this length
LABEL_TOP, LABEL_STEP = 0.96, 0.07    # anchor labels: height of the first row, step between rows
BRUSH_COLOR = QColor(214, 39, 40, 40)


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


def style_plot(plot: pg.PlotItem, palette: QPalette) -> None:
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


DISTRIBUTIONS_HINT = "Hover over a plot to read its values; right-click for its menu"


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
        self.range_button = QToolButton(checkable=True)
        self.range_button.setText("Filter table by range")
        self.range_button.setToolTip("Brush a range of scores on the right-hand plot (drag its "
                                     "edges): the Results table shows only those pairs. Click "
                                     "again to show every pair")
        self.range_button.toggled.connect(self._range_toggled)
        self.hover = QLabel(DISTRIBUTIONS_HINT, textFormat=Qt.TextFormat.PlainText)
        self.hover.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

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
        bar.addWidget(self.range_button)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.canvas, 1)
        layout.addWidget(self.hover)
        layout.addWidget(self.ladder)
        for panel in (self.raw_panel, self.cal_panel):
            panel.region.sigRegionChangeFinished.connect(lambda _, p=panel: self._region_moved(p))
        self.canvas.scene().sigMouseMoved.connect(self._mouse_moved)
        self.plot_menu = PlotMenu(self, self.canvas, [p.plot for p in (self.raw_panel, self.cal_panel)],
                                  image_name="distributions.png",
                                  reset=lambda plot: self.reset_view(self._panel_of(plot)),
                                  extra=lambda menu, plot: self._range_actions(menu, self._panel_of(plot)))

        state.profile_changed.connect(self._profile_changed)
        state.view_changed.connect(self._sync_combos)
        state.results_changed.connect(self._results_changed)
        state.selection_changed.connect(self._update_selected)
        state.range_changed.connect(self._range_changed)
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
            self.form_combo.addItem(form_label(form), form)
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
        self.hover.setText(DISTRIBUTIONS_HINT)        # counts read during the run are gone
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
        self.raw_panel.column = self._table_column(metric, "raw")
        self.cal_panel.column = None if form is None else self._table_column(metric, form)
        self._range_changed()
        self._update_selected()
        self._update_summary(len(user))
        shortened = [(short_label(label), label) for label, _ in anchors]
        self.ladder.setText("Anchor levels: " + " · ".join(
            label if short == label else f"{short} = {label.split(' - ', 1)[-1]}"
            for short, label in shortened) if anchors else "")

    def _table_column(self, metric: str, form: str) -> str | None:
        """The Results column of `metric`'s `form`, which a range brushed on its panel filters
        (a document set's pairs: named under its geometry fix; None: a form it lacks)."""
        results = self.state.results
        if isinstance(results, DocumentMatrix):
            return score_column(metric, form, results.geometry) \
                if results.metric == metric and form in results.matrices else None
        return f"{metric}_{form}"

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
        documents = self.state.selected_documents()
        if isinstance(results, ScoredPairs) and row is not None and f"{metric}_raw" in results.frame:
            raw = float(results.frame[f"{metric}_raw"].iloc[row])
            if form is not None:
                column = f"{metric}_{form}"
                cal = (float(results.frame[column].iloc[row]) if column in results.frame
                       else float(self._calibrate(metric, form, np.array([raw]))[0]))
        elif documents is not None and results.metric == metric:
            raw = float(results.matrices["raw"][documents])
            if form is not None:
                cal = (float(results.matrices[form][documents]) if form in results.matrices
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

    # ------------------------------------------------------------------ interaction

    def _panel_at(self, pos) -> _HistogramPanel | None:
        return next((panel for panel in (self.raw_panel, self.cal_panel)
                     if panel.plot.vb.sceneBoundingRect().contains(pos)), None)

    def _mouse_moved(self, pos) -> None:
        panel = self._panel_at(pos)
        if panel is not None:
            text = panel.hover_text(panel.plot.vb.mapSceneToView(pos).x())
            if text:
                self.hover.setText(text)

    def _panel_of(self, plot) -> _HistogramPanel:
        return self.raw_panel if plot is self.raw_panel.plot else self.cal_panel

    def context_menu(self, panel: _HistogramPanel) -> QMenu:
        """The right-click menu of `panel` (in place of pyqtgraph's developer menu)."""
        return self.plot_menu.build(panel.plot)

    def _range_actions(self, menu: QMenu, panel: _HistogramPanel) -> None:
        if panel.region.isVisible():
            menu.addAction("Show every pair (remove the range filter)",
                           lambda: self.state.set_score_range(None))
        elif panel.column is not None and isinstance(self.state.results, (ScoredPairs, DocumentMatrix)):
            menu.addAction("Filter the table to a range of these scores",
                           lambda: self.brush(panel, *panel.default_region()))

    def reset_view(self, panel: _HistogramPanel) -> None:
        panel.plot.enableAutoRange(axis=pg.ViewBox.YAxis)
        panel.fit_counts()
        if panel._range is not None:
            panel.plot.setXRange(*panel._range, padding=0.02)

    def export_image(self, path) -> bool:
        """Save both plots with their legend as a PNG."""
        return self.plot_menu.export_image(path)

    def brush(self, panel: _HistogramPanel, low: float, high: float) -> None:
        """Show the range brush on `panel` and filter the table to [low, high] of its column."""
        other = self.cal_panel if panel is self.raw_panel else self.raw_panel
        other.region.hide()
        panel.show_region(low, high)
        self.state.set_score_range((panel.column, low, high))

    def _region_moved(self, panel: _HistogramPanel) -> None:
        if panel.region.isVisible() and panel.column is not None:
            low, high = panel.region.getRegion()
            self.state.set_score_range((panel.column, low, high))

    def _range_toggled(self, on: bool) -> None:
        if on and self.state.score_range is None:
            panel = self.cal_panel if self.cal_panel.column is not None else self.raw_panel
            if panel.column is None:                     # no column of these scores to filter
                self._range_changed()
                return
            self.brush(panel, *panel.default_region())
        elif not on:
            self.state.set_score_range(None)

    def _range_changed(self) -> None:
        """Follow `state.score_range`: one brush on the panel drawing its column, or none."""
        value = self.state.score_range
        for panel in (self.raw_panel, self.cal_panel):
            if value is not None and panel.column == value[0]:
                if panel.region.getRegion() != (value[1], value[2]) or not panel.region.isVisible():
                    panel.show_region(value[1], value[2])
            else:
                panel.region.hide()
        self.range_button.blockSignals(True)
        self.range_button.setChecked(value is not None)
        self.range_button.setText("✕ Remove range filter" if value is not None else "Filter table by range")
        self.range_button.blockSignals(False)

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
            "brush": next(((panel.column, *panel.region.getRegion()) for panel in
                           (self.raw_panel, self.cal_panel) if panel.region.isVisible()), None),
        }


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


class HeatmapView(QWidget):
    """A document set's N x N scores as an image with a colour bar, in input or clustered order,
    beside a resizable table of the documents; hovering names both documents and the score.

    The colour range is taken from the off-diagonal scores: the diagonal (each document with
    itself) is drawn but would only stretch the scale.
    """

    ORDERS = (("clustered", "clustered (similar documents together)"), ("input", "input order"))

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self.order = np.zeros(0, dtype=int)            # shown row/column i is document order[i]
        self._orders: dict[str, np.ndarray] = {}
        self.labels: list[str] = []
        self.form_combo = QComboBox()
        self.form_combo.setToolTip("Show raw scores or a calibrated form")
        self.form_combo.currentIndexChanged.connect(self._show_form)
        self.order_combo = QComboBox()
        for value, text in self.ORDERS:
            self.order_combo.addItem(text, value)
        self.order_combo.setToolTip("Order of the documents: hierarchical clustering (average "
                                    "linkage of the raw scores) or as they were read")
        self.order_combo.currentIndexChanged.connect(self._show_form)
        for combo in (self.form_combo, self.order_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.hover = QLabel("Hover over a cell to see the pair and its score")
        self.hover.setTextFormat(Qt.TextFormat.PlainText)
        self.hover.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hover.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

        self.canvas = pg.GraphicsLayoutWidget()
        self.plot = self.canvas.addPlot()
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.setLabel("bottom", "document b")
        self.plot.setLabel("left", "document a")
        self.plot_menu = PlotMenu(self, self.canvas, [self.plot], image_name="heatmap.png")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.cell = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        self.cell.setZValue(10)
        self.cell.hide()
        self.plot.addItem(self.cell)
        self.mark = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)     # the selected pair, both cells
        self.mark_twin = pg.QtWidgets.QGraphicsRectItem(0, 0, 1, 1)
        for mark in (self.mark, self.mark_twin):
            mark.setZValue(9)
            mark.setPen(pg.mkPen(SELECTED_COLOR, width=2.5))
            mark.hide()
            self.plot.addItem(mark)
        self.tip = pg.TextItem(anchor=(0, 1), fill=pg.mkBrush(255, 255, 255, 225),
                               border=pg.mkPen(90, 90, 90), color=(20, 20, 20))
        self.tip.setZValue(11)
        self.tip.hide()
        self.plot.addItem(self.tip, ignoreBounds=True)
        self.colorbar = pg.ColorBarItem(colorMap="viridis", interactive=False, width=18)
        self.colorbar.axis.enableAutoSIPrefix(False)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.canvas.scene().sigMouseMoved.connect(self._mouse_moved)
        self.canvas.scene().sigMouseClicked.connect(self._mouse_clicked)

        self.documents = QTableWidget(0, 3)
        self.documents.setHorizontalHeaderLabels(["#", "Document", "Text"])
        self.documents.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.documents.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.documents.setWordWrap(False)
        self.documents.verticalHeader().hide()
        self.documents.verticalHeader().setDefaultSectionSize(20)
        header = self.documents.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.documents.setToolTip("The documents in the order drawn (row/column numbers of the map). "
                                  "Select one to select its pair with its most similar document, "
                                  "or two (Ctrl+click) to select their pair, in every view")
        self.documents.itemSelectionChanged.connect(self._document_selected)

        self.hint = QLabel("Drop a folder or several text files onto the window to compare "
                           "documents: every pair's score appears here as a heatmap.")
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setWordWrap(True)
        self.hint.setEnabled(False)
        page = QWidget()
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Show:"))
        bar.addWidget(self.form_combo)
        bar.addWidget(QLabel("Order:"))
        bar.addWidget(self.order_combo)
        bar.addSpacing(12)
        bar.addWidget(self.hover, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.canvas)
        self.splitter.addWidget(self.documents)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([700, 300])
        inner = QVBoxLayout(page)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(bar)
        inner.addWidget(self.splitter, 1)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.hint)
        self.stack.addWidget(page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

        state.results_changed.connect(self.rebuild)
        state.selection_changed.connect(self._show_selected)
        self._apply_palette()
        self.rebuild()

    @property
    def results(self) -> DocumentMatrix | None:
        results = self.state.results
        return results if isinstance(results, DocumentMatrix) else None

    def rebuild(self) -> None:
        results = self.results
        self.stack.setCurrentIndex(0 if results is None else 1)
        self._orders = {}
        self.labels = []
        if results is not None:
            texts = results.texts if len(results.texts) == len(results.ids) else [None] * len(results.ids)
            self.labels = [short_document_label(i, t) for i, t in zip(results.ids, texts)]
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
        too_many = results is not None and len(results.ids) > MAX_CLUSTERED_DOCUMENTS
        clustered = self.order_combo.model().item(self.order_combo.findData("clustered"))
        clustered.setEnabled(not too_many)
        clustered.setToolTip(f"Only for up to {MAX_CLUSTERED_DOCUMENTS:,} documents" if too_many else "")
        self.order_combo.blockSignals(True)
        if too_many:
            self.order_combo.setCurrentIndex(self.order_combo.findData("input"))
        self.order_combo.blockSignals(False)
        self._show_form()

    def set_order(self, order: str) -> None:
        """Show the documents in "input" or "clustered" order."""
        self.order_combo.setCurrentIndex(max(0, self.order_combo.findData(order)))

    def _document_order(self, results: DocumentMatrix) -> np.ndarray:
        kind = self.order_combo.currentData()
        if kind not in self._orders:
            n = len(results.ids)
            if kind == "clustered":
                self._orders[kind] = similarity_order(results.matrices, METRICS[results.metric].higher_is_similar)
            else:
                self._orders[kind] = np.arange(n)
        return self._orders[kind]

    def _set_ticks(self) -> None:
        n = len(self.order)
        left = self.plot.getAxis("left")
        if not n or n > MAX_TICKED_DOCUMENTS:
            left.setTicks(None)
            left.setWidth(None)
            self.plot.getAxis("bottom").setTicks(None)
            return
        ticks = [(i + 0.5, f"{k + 1}  {self.labels[k]}") for i, k in enumerate(self.order)]
        left.setTicks([ticks])
        # sized now: widening on a later repaint would leave the locked-aspect map cut off
        widest = max(self.fontMetrics().horizontalAdvance(text) for _, text in ticks)
        left.setWidth(widest + 40)
        self.plot.getAxis("bottom").setTicks([[(i + 0.5, str(k + 1)) for i, k in enumerate(self.order)]])

    def _fill_documents(self) -> None:
        results = self.results
        self.documents.setRowCount(0 if results is None else len(self.order))
        if results is None:
            return
        texts = results.texts if len(results.texts) == len(results.ids) else [""] * len(results.ids)
        for row, k in enumerate(self.order):
            number = QTableWidgetItem(str(k + 1))
            number.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            text = texts[k][:300]
            for column, item in enumerate((number, QTableWidgetItem(results.ids[k]),
                                           QTableWidgetItem(text))):
                item.setToolTip(texts[k][:1000] or results.ids[k])
                self.documents.setItem(row, column, item)
        self.documents.resizeColumnToContents(0)
        self.documents.setColumnWidth(1, min(180, max(80, self.documents.sizeHintForColumn(1) + 8)))

    def _show_form(self) -> None:
        results, form = self.results, self.form_combo.currentData()
        self.cell.hide()
        self.tip.hide()
        if results is None or form is None:
            self._matrix = np.zeros((0, 0), dtype=np.float32)
            self.order = np.zeros(0, dtype=int)
            self.image.clear()
            self._set_ticks()
            self._fill_documents()
            return
        previous = self.order
        self.order = self._document_order(results)
        matrix = results.matrices[form]
        self._matrix = matrix[np.ix_(self.order, self.order)]
        n = len(self._matrix)
        lo, hi = colour_range(self._matrix, form)
        cmap = pg.colormap.get("viridis")
        if form == "raw" and not METRICS[results.metric].higher_is_similar:
            cmap = cmap.getSubset(1.0, -1.0)  # distances: bright still means similar
        self.colorbar.setColorMap(cmap)
        self.image.setImage(self._matrix, autoLevels=False)
        self.colorbar.setLevels((lo, hi))
        orientation = METRICS[results.metric].orientation if form == "raw" else "higher = more similar"
        self.colorbar.axis.setLabel(f"{self.form_combo.currentText()} ({orientation})")
        self.plot.setTitle(f"{n} documents · {results.metric}")
        self.colorbar.setToolTip(f"Colours span the off-diagonal scores ({lo:.4g} to {hi:.4g}); "
                                 "the diagonal (each document with itself) is drawn at the top "
                                 "colour but left out of the range")
        if not np.array_equal(previous, self.order) or self.documents.rowCount() != n:
            self._set_ticks()
            self._fill_documents()
        self.plot.autoRange(padding=0)
        self._show_selected()

    def _cell_at(self, pos) -> tuple[int, int] | None:
        """The shown (row, column) under scene position `pos`, or None."""
        n = len(self._matrix)
        if not n or not self.plot.vb.sceneBoundingRect().contains(pos):
            return None
        point = self.plot.vb.mapSceneToView(pos)
        i, j = int(np.floor(point.y())), int(np.floor(point.x()))
        return (i, j) if 0 <= i < n and 0 <= j < n else None

    def _mouse_clicked(self, event) -> None:
        cell = self._cell_at(event.scenePos())
        if event.button() == Qt.MouseButton.LeftButton and cell is not None:
            self.select_cell(*cell)

    def select_cell(self, i: int, j: int) -> None:
        """Select the pair of the cell at shown row `i`, column `j` in every view (the diagonal,
        a document with itself, is no pair)."""
        a, b = int(self.order[i]), int(self.order[j])
        if a != b:
            self.state.select_row(pair_row(len(self.order), a, b))

    def _show_selected(self) -> None:
        """Outline the selected pair's two cells (a × b and b × a) and, when it was selected
        elsewhere, select its two documents in the table."""
        pair = self.state.selected_documents() if len(self._matrix) else None
        for mark in (self.mark, self.mark_twin):
            mark.setVisible(pair is not None)
        if pair is None:
            return
        where = np.argsort(self.order)                   # document -> shown position
        i, j = int(where[pair[0]]), int(where[pair[1]])
        self.mark.setRect(j, i, 1, 1)
        self.mark_twin.setRect(i, j, 1, 1)
        if self._table_documents() not in (set(pair), {pair[0]}, {pair[1]}):
            self.documents.blockSignals(True)            # shown, not chosen here again
            self.documents.clearSelection()
            for row in (i, j):
                self.documents.selectionModel().select(
                    self.documents.model().index(row, 0), QItemSelectionModel.SelectionFlag.Select
                    | QItemSelectionModel.SelectionFlag.Rows)
            self.documents.blockSignals(False)
            self.documents.scrollToItem(self.documents.item(i, 0))

    def _mouse_moved(self, pos) -> None:
        cell = self._cell_at(pos)
        if cell is not None:
            self.show_hover(*cell)
        else:
            self.tip.hide()
            self.cell.hide()

    def show_hover(self, i: int, j: int) -> None:
        """Name the cell at shown row `i`, column `j` above the map and beside the cell."""
        self.hover.setText(self.hover_text(i, j))
        a, b = self.order[i], self.order[j]
        self.tip.setText(f"{a + 1}  {self.labels[a]}\n{b + 1}  {self.labels[b]}\n"
                         f"{self.form_combo.currentText()}: {self._matrix[i, j]:.4g}")
        n = len(self._matrix)
        self.tip.setAnchor((1 if j > n / 2 else 0, 0 if i < n / 2 else 1))
        self.tip.setPos(j + (0 if j > n / 2 else 1), i + (1 if i < n / 2 else 0))
        self.cell.setRect(j, i, 1, 1)
        self.tip.show()
        self.cell.show()

    def hover_text(self, i: int, j: int) -> str:
        """The hover line for shown row `i`, column `j`: "doc a × doc b: value (form)"."""
        a, b = self.order[i], self.order[j]
        return (f"{a + 1} {self.labels[a]} × {b + 1} {self.labels[b]}: "
                f"{self._matrix[i, j]:.4g} ({self.form_combo.currentText()})")

    def _table_documents(self) -> set[int]:
        """The documents selected in the table."""
        return {int(self.order[index.row()]) for index in self.documents.selectedIndexes()
                if index.row() < len(self.order)}

    def _document_selected(self) -> None:
        """Documents chosen in the table: two select their pair in every view; one (or the last
        of more) selects its pair with its most similar document; its row is outlined here."""
        current = self.documents.currentRow()
        chosen = self._table_documents()
        if not chosen or not len(self._matrix):
            return
        a = int(self.order[current]) if 0 <= current < len(self.order) and int(self.order[current]) in chosen \
            else min(chosen)
        others = chosen - {a}
        self.cell.setRect(0, int(np.argsort(self.order)[a]), len(self._matrix), 1)
        self.cell.show()
        row = self.state.document_pair_row(a, others.pop() if len(others) == 1 else None)
        if row is not None:
            self.state.select_row(row)

    def _apply_palette(self) -> None:
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        style_plot(self.plot, self.palette())
        text = self.palette().color(QPalette.ColorRole.Text)
        self.colorbar.axis.setPen(pg.mkPen(text))
        self.colorbar.axis.setTextPen(pg.mkPen(text))
        self.cell.setPen(pg.mkPen(text, width=2))

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)

    def shown_matrix(self) -> np.ndarray:
        """The matrix currently drawn, rows and columns in the shown order (empty when there is
        no document set)."""
        return self._matrix
