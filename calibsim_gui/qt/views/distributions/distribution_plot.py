"""Score distributions against the references (pyqtgraph): raw and calibrated histograms with the
background, the anchor medians, the selected pair and a brushed range.

Plot items are created once; new data only calls ``setData``. Pair scores arriving during a run
are drawn at most ~10 times a second.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.distributions import (
    anchor_medians,
    background_items,
    calibrate_form,
    histograms,
)
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import PairChunk, ScoredPairs, score_column
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.qt.session.state import form_label
from calibsim_gui.qt.views.distributions.histogram_panel import ANCHOR_PEN, SELECTED_PEN, HistogramPanel
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.plots import (
    metric_combo,
    short_label,
)

REDRAW_MS = 100                       # at most ~10 redraws a second while pairs stream in


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
        self.raw_panel = HistogramPanel(self.canvas.addPlot(row=0, col=0))
        self.cal_panel = HistogramPanel(self.canvas.addPlot(row=0, col=1))
        self.legend = pg.LegendItem(colCount=5)
        self.canvas.addItem(self.legend, row=1, col=0, colspan=2)
        for item, name in ((self.raw_panel.background, "random background pairs (density, left axis)"),
                           (self.raw_panel.user, "your pairs (count, right axis)"),
                           (pg.PlotDataItem(pen=ANCHOR_PEN), "anchor level medians"),
                           (pg.PlotDataItem(pen=SELECTED_PEN), "selected pair"),
                           (self.raw_panel.kept, "pairs shown in Results (filtered)")):
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
        state.shown_rows_changed.connect(self._draw_kept)
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
        self._draw_kept()
        self._range_changed()
        self._update_selected()
        self._update_summary(len(user))
        shortened = [(short_label(label), label) for label, _ in anchors]
        self.ladder.setText("Anchor levels: " + " · ".join(
            label if short == label else f"{short} = {label.split(' - ', 1)[-1]}"
            for short, label in shortened) if anchors else "")

    def _draw_kept(self) -> None:
        """Mark the pairs every filter leaves (`state.shown_rows`) in both panels."""
        rows, metric = self.state.shown_rows, self.state.metric
        for panel, form in ((self.raw_panel, "raw"), (self.cal_panel, self._form())):
            values = None if rows is None or form is None else self._row_values(metric, form)
            panel.set_kept(None if values is None else values[rows[rows < len(values)]])

    def _row_values(self, metric: str, form: str) -> np.ndarray | None:
        """`metric`'s scores in `form` ("raw" or a calibrated form), one per Results row."""
        results = self.state.results
        if isinstance(results, ScoredPairs) and f"{metric}_raw" in results.frame:
            frame = results.frame
            if f"{metric}_{form}" in frame:
                return frame[f"{metric}_{form}"].to_numpy(dtype=float)
            return self._calibrate(metric, form, frame[f"{metric}_raw"].to_numpy(dtype=float))
        if isinstance(results, DocumentMatrix) and results.metric == metric:
            matrix = results.matrices.get(form, results.matrices["raw"])
            values = matrix[np.triu_indices(len(matrix), k=1)].astype(float)
            return values if form in results.matrices else self._calibrate(metric, form, values)
        return None

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

    def _draw_panel(self, panel: HistogramPanel, user, bg_values, bg_weights, anchors) -> None:
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

    def _panel_at(self, pos) -> HistogramPanel | None:
        return next((panel for panel in (self.raw_panel, self.cal_panel)
                     if panel.plot.vb.sceneBoundingRect().contains(pos)), None)

    def _mouse_moved(self, pos) -> None:
        panel = self._panel_at(pos)
        if panel is not None:
            text = panel.hover_text(panel.plot.vb.mapSceneToView(pos).x())
            if text:
                self.hover.setText(text)

    def _panel_of(self, plot) -> HistogramPanel:
        return self.raw_panel if plot is self.raw_panel.plot else self.cal_panel

    def context_menu(self, panel: HistogramPanel) -> QMenu:
        """The right-click menu of `panel` (in place of pyqtgraph's developer menu)."""
        return self.plot_menu.build(panel.plot)

    def _range_actions(self, menu: QMenu, panel: HistogramPanel) -> None:
        if panel.region.isVisible():
            menu.addAction("Show every pair (remove the range filter)",
                           lambda: self.state.set_score_range(None))
        elif panel.column is not None and isinstance(self.state.results, (ScoredPairs, DocumentMatrix)):
            menu.addAction("Filter the table to a range of these scores",
                           lambda: self.brush(panel, *panel.default_region()))

    def reset_view(self, panel: HistogramPanel) -> None:
        panel.plot.enableAutoRange(axis=pg.ViewBox.YAxis)
        panel.fit_counts()
        if panel._range is not None:
            panel.plot.setXRange(*panel._range, padding=0.02)

    def export_image(self, path) -> bool:
        """Save both plots with their legend as a PNG."""
        return self.plot_menu.export_image(path)

    def brush(self, panel: HistogramPanel, low: float, high: float) -> None:
        """Show the range brush on `panel` and filter the table to [low, high] of its column."""
        other = self.cal_panel if panel is self.raw_panel else self.raw_panel
        other.region.hide()
        panel.show_region(low, high)
        self.state.set_score_range((panel.column, low, high))

    def _region_moved(self, panel: HistogramPanel) -> None:
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
            "raw_kept": self.raw_panel.shown.get("kept", (None, None))[1],
            "cal_kept": self.cal_panel.shown.get("kept", (None, None))[1],
            "brush": next(((panel.column, *panel.region.getRegion()) for panel in
                           (self.raw_panel, self.cal_panel) if panel.region.isVisible()), None),
        }
