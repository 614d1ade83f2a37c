"""Model comparison: the same pairs scored by two models, raw and calibrated, side by side.

`ComparisonView` is the Compare tab: it stays, is linked to the selection (a clicked point selects
its row; the selected and chosen rows are marked) and is saved in projects (`view_state`). With a
single model `ComparisonDialog` is not a dead end: it says how to get a second model and offers to
pick a model folder (`model_chosen`).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.comparison import ModelComparison
from calibsim_gui.core.analysis.distributions import guess_scale, label_values
from calibsim_gui.core.errors import InputError
from calibsim_gui.qt.session.human_scores import chosen_label
from calibsim_gui.qt.session.state import form_label
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.plots import POINT_COLOR, SELECTED_COLOR, style_plot
from calibsim_gui.qt.widgets.point_cloud import MANY_POINTS, PointCloud, translucent
from calibsim_gui.qt.widgets.results_model import ResultsTableModel

SCATTER_FORMS = ("raw", "calibrated")
CHOSEN_COLOR = QColor(245, 133, 24)
CLOUD_COLOURS = [translucent(POINT_COLOR.getRgb()), CHOSEN_COLOR.getRgb()]   # many points; the chosen on top
MAX_TEXT_WIDTH = 300              # pixels: a column of long texts is cut, the scores beside it are not
SIZED_ROWS = 100                  # rows whose cells set the columns' widths (Qt asks 1,000, one Python call each)
EMPTY_HINT = ("No comparison yet. A comparison scores the pairs shown in Results with a second model, "
              "calibrated against the same anchor ladder, and shows here where the two models agree "
              "and where they differ — raw and calibrated, and against the file's human scores.")
HOVER_HINT = "Hover over a point to see its pair; click it to select the row in Results"


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


def header_of(comparison: ModelComparison, form: str, model: str) -> str:
    """'MiniLM · calibrated', 'mpnet · raw', 'e5 · background percentile'."""
    return f"{comparison.labels[model]} · {form if form in SCATTER_FORMS else form_label(form)}"


def apart(values, *, least: int = 3, most: int = 6) -> list[str]:
    """`values` with the fewest decimals (from `least` to `most`) that show different numbers as
    different: 0.0600 and 0.0603, not 0.060 twice."""
    values = [float("nan") if v is None else float(v) for v in values]
    for digits in range(least, most + 1):
        shown = [f"{v:.{digits}f}" for v in values]
        if all(shown[i] != shown[j] for i in range(len(values)) for j in range(i) if values[i] != values[j]):
            break
    return shown


def why_calibrated_differs(comparison: ModelComparison) -> str:
    """Plain words for a comparison whose calibrated difference exceeds the raw one."""
    raw, cal = apart([comparison.differences[f]["mean_abs_diff"] for f in ("raw", "calibrated")])
    spans = []
    for model in comparison.models:
        levels = (comparison.scales.get(model) or {}).get("levels") or []
        if len(levels) >= 2:
            spans.append(f"{comparison.labels[model]} {levels[-1]['median'] - levels[0]['median']:.3f}")
    text = (f"The models differ more on the calibrated scale (mean difference {cal}) than on raw "
            f"scores ({raw}). Each model's raw scores are read against its own reference scale, "
            "the anchor levels' median scores below: where one model's levels lie closer together, the "
            "same raw gap covers more of the 0–1 scale, so the calibrated scores move apart even when "
            "both models rank the pairs alike.")
    if spans:
        text += " Raw distance from the lowest to the highest level: " + ", ".join(spans) + "."
    return text


class ComparisonTableModel(ResultsTableModel):
    """The side-by-side table, headed "MiniLM · calibrated"; the full model id is in the tooltip."""

    def __init__(self, comparison: ModelComparison, parent=None):
        names, self.tips = {}, {}
        for form in comparison.differences:
            for model in comparison.models:
                title = header_of(comparison, form, model)
                names[comparison.column(form, model)] = title
                self.tips[title] = f"{model}: {form_label(form)} ({comparison.metric})"
        super().__init__(comparison.frame.rename(columns=names), parent)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if (orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.ToolTipRole
                and self.column_names[section] in self.tips):
            return self.tips[self.column_names[section]]
        return super().headerData(section, orientation, role)


class ComparisonView(QWidget):
    """The Compare tab: differences, agreement with human scores, the reference scales when the
    calibrated difference exceeds the raw one, linked scatter plots and the side-by-side table."""

    compare_requested = Signal()

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.setObjectName("compare")
        self.state = state
        self.comparison: ModelComparison | None = None
        self._rows: dict[str, np.ndarray] = {}          # frame row of every drawn point, per form
        self._stale = False                             # shown while hidden: drawn when shown (`_draw`)
        self._steps: list = []                          # what `_draw` has left to draw
        self._step_timer = QTimer(self, singleShot=True, interval=0)
        self._step_timer.timeout.connect(self._draw_step)
        self._xy: dict[str, tuple[np.ndarray, np.ndarray]] = {}

        self.hint = QLabel(EMPTY_HINT, wordWrap=True, alignment=Qt.AlignmentFlag.AlignCenter)
        self.compare_button = QPushButton("Compare with a model…")
        self.compare_button.clicked.connect(self.compare_requested)
        empty = QWidget()
        empty_layout = QVBoxLayout(empty)
        empty_layout.addStretch(1)
        empty_layout.addWidget(self.hint)
        empty_layout.addWidget(self.compare_button, 0, Qt.AlignmentFlag.AlignHCenter)
        empty_layout.addStretch(1)

        self.summary = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.agreement = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.explanation = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.scales = QTableWidget()
        self.scales.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.scales.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.scales.setSizeAdjustPolicy(QTableWidget.SizeAdjustPolicy.AdjustToContents)
        self.scales.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.why = QGroupBox("Why the calibrated scores differ more: the two reference scales (raw scores)")
        why_layout = QHBoxLayout(self.why)
        why_layout.addWidget(self.explanation, 1)
        why_layout.addWidget(self.scales)
        self.rerun_button = QPushButton("Compare with another model…")
        self.rerun_button.clicked.connect(self.compare_requested)

        self.canvas = pg.GraphicsLayoutWidget()
        self.plots, self.diagonals, self.scatters, self.selected, self.chosen = {}, {}, {}, {}, {}
        self.clouds: dict[str, PointCloud] = {}          # a form's points beyond `MANY_POINTS`: one image
        self.plot_menu: PlotMenu | None = None
        QTimer.singleShot(0, self, self._add_plots)     # in a turn of its own: the tab shows first (#44)
        self.hover = QLabel(HOVER_HINT, textFormat=Qt.TextFormat.PlainText)
        self.hover.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.table = QTableView()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setResizeContentsPrecision(SIZED_ROWS)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.canvas)
        split.addWidget(self.table)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setMinimumHeight(8 * (self.fontMetrics().height() + 8))     # the header and ~7 pairs

        page = QWidget()
        inner = QVBoxLayout(page)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addWidget(self.summary)
        inner.addWidget(self.agreement)
        inner.addWidget(self.why)
        inner.addWidget(split, 1)
        inner.addWidget(self.hover)
        inner.addWidget(self.rerun_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.stack = QStackedWidget()
        self.stack.addWidget(empty)
        self.stack.addWidget(page)
        QVBoxLayout(self).addWidget(self.stack)

        state.selection_changed.connect(self._show_selected)
        state.range_changed.connect(self._show_chosen)
        state.labels_changed.connect(self._show_agreement)
        state.results_changed.connect(self._show_agreement)
        state.input_changed.connect(lambda: self.show_comparison(None))     # another file's pairs
        self._apply_palette()

    # ------------------------------------------------------------------ showing

    def _add_plots(self) -> None:
        """The two scatter plots (raw, calibrated), made once: a turn after the tab, or when a
        comparison is shown first."""
        if self.plots:
            return
        dash = pg.mkPen(QColor(128, 128, 128), width=1, style=Qt.PenStyle.DashLine)
        for form in SCATTER_FORMS:
            plot = self.canvas.addPlot(enableMenu=False)      # PlotMenu is its menu: no ViewBoxMenu to build
            plot.showGrid(x=True, y=True, alpha=0.15)
            self.plots[form] = plot
            self.diagonals[form] = plot.plot([], [], pen=dash)
            points = pg.ScatterPlotItem(size=7, pen=None, brush=pg.mkBrush(POINT_COLOR),
                                        hoverable=True, hoverSize=11, tip=None)
            chosen = pg.ScatterPlotItem(size=8, pen=None, brush=pg.mkBrush(CHOSEN_COLOR))
            selected = pg.ScatterPlotItem(size=16, pen=pg.mkPen(SELECTED_COLOR, width=2.5), brush=None)
            chosen.setZValue(5)
            selected.setZValue(10)
            for item in (points, chosen, selected):
                plot.addItem(item)
            points.sigClicked.connect(self._clicked)
            points.sigHovered.connect(self._hovered)
            cloud = PointCloud()
            cloud.clicked.connect(lambda point, form=form: self._select_row(int(self._rows[form][point])))
            cloud.hovered.connect(lambda point, form=form: self._hover_row(int(self._rows[form][point])))
            plot.addItem(cloud)
            self.scatters[form], self.chosen[form], self.selected[form] = points, chosen, selected
            self.clouds[form] = cloud
        self.plot_menu = PlotMenu(self, self.canvas, list(self.plots.values()), image_name="comparison.png")
        self._apply_palette()

    def show_comparison(self, comparison: ModelComparison | None, problem: str = "") -> None:
        """Show `comparison` (None: the empty state, saying `problem` when there is one)."""
        self.comparison = comparison
        if comparison is None:
            self.hint.setText(f"{problem}\n\n{EMPTY_HINT}" if problem else EMPTY_HINT)
            self.stack.setCurrentIndex(0)
            for items in (self.scatters, self.chosen, self.selected):
                for item in items.values():
                    item.setData([], [])
            for cloud in self.clouds.values():
                cloud.clear()
            self.table.setModel(None)
            return
        self._add_plots()
        first, second = comparison.models[:2]
        lines = [(f"<b>{comparison.labels[first]}</b> vs <b>{comparison.labels[second]}</b> on "
                  f"{len(comparison.frame):,} pairs — <b>{comparison.metric}</b>: mean absolute difference "
                  "between the models (lower = the models agree)")]
        shown = apart([diff["mean_abs_diff"] for diff in comparison.differences.values()])
        for (form, diff), value in zip(comparison.differences.items(), shown):
            lines.append(f"{form_label(form)}: <b>{value}</b> ({diff['unit']})")
        lines += [f"<b style=\"color:#b35900\">Warning: {note}</b>" if "different anchor ladders" in note
                  else f"<i>{note}</i>" for note in comparison.notes]
        self.summary.setText("<br>".join(lines))
        self.summary.setToolTip("\n".join(f"{comparison.labels[m]}: {m}" for m in comparison.models))
        self._show_scales()
        self._place_points()
        self.table.setModel(ComparisonTableModel(comparison, self.table))
        self.stack.setCurrentIndex(1)
        self._show_agreement()
        self._show_chosen()
        self._show_selected()
        self._stale = True
        if self.isVisible():
            self._draw()

    def _place_points(self) -> None:
        """Each form's two score columns (`_xy`) and the rows both models scored (`_rows`)."""
        comparison = self.comparison
        self._rows, self._xy = {}, {}
        for form in self.plots:
            columns = [comparison.column(form, m) for m in comparison.models[:2]]
            if all(c in comparison.frame for c in columns):
                x, y = (comparison.frame[c].to_numpy(dtype=float) for c in columns)
                self._rows[form], self._xy[form] = np.flatnonzero(np.isfinite(x) & np.isfinite(y)), (x, y)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self._draw()

    def _draw(self) -> None:
        """Draw the scatters and fit the table's columns, once the tab is shown, a step per turn
        of the event loop (`_draw_step`): for 10,000 pairs the whole took ~80 ms of the GUI thread
        at once (#44)."""
        self._stale = False
        if self.comparison is None:
            return
        self._steps = [*self.plots, None]                # each form's scatter, then the columns
        self._step_timer.start()

    @property
    def drawing(self) -> bool:
        """Steps of the draw are still to come."""
        return bool(self._steps)

    def _draw_step(self) -> None:
        if not self._steps or self.comparison is None:
            self._steps = []
            return
        form = self._steps.pop(0)
        if form is None:
            self._fit_columns()
        else:
            self._draw_form(form)
        if self._steps:
            self._step_timer.start()

    def _draw_form(self, form: str) -> None:
        comparison, plot = self.comparison, self.plots[form]
        if form not in self._xy:
            self.scatters[form].setData([], [])
            return
        first, second = comparison.models[:2]
        rows, (x, y) = self._rows[form], self._xy[form]
        if self._crowded(form):          # 100,000 separate points held the window ~350 ms (#44)
            self.scatters[form].setData([], [])
            self._draw_cloud(form)
        else:
            self.clouds[form].clear()
            self.scatters[form].setData(x=x[rows], y=y[rows], data=rows)
        plot.setTitle(f"{comparison.metric} {form}")
        plot.setLabel("bottom", header_of(comparison, form, first))
        plot.setLabel("left", header_of(comparison, form, second))
        plot.getAxis("bottom").setToolTip(first)
        plot.getAxis("left").setToolTip(second)
        if len(rows):
            lo, hi = float(min(x[rows].min(), y[rows].min())), float(max(x[rows].max(), y[rows].max()))
            self.diagonals[form].setData([lo, hi], [lo, hi])
        style_plot(plot, self.palette())

    def _crowded(self, form: str) -> bool:
        """The form has more points than separate points can draw: they are one image."""
        return len(self._rows.get(form, ())) > MANY_POINTS

    def _draw_cloud(self, form: str) -> None:
        """Draw the form's points as one image, the chosen rows on top in their colour."""
        rows, (x, y) = self._rows[form], self._xy[form]
        chosen = self.state.chosen_rows
        groups = np.isin(rows, chosen[0]).astype(np.int64) if chosen is not None else np.zeros(len(rows), np.int64)
        self.clouds[form].set_points(np.column_stack([x[rows], y[rows]]), groups, CLOUD_COLOURS)

    def _fit_columns(self) -> None:
        self.table.resizeColumnsToContents()
        for column in range(self.table.model().columnCount()):         # texts leave room for the scores
            self.table.setColumnWidth(column, min(self.table.columnWidth(column), MAX_TEXT_WIDTH))

    def _show_scales(self) -> None:
        """The reference scales side by side, with why they matter, when calibrated > raw."""
        comparison = self.comparison
        self.why.setVisible(comparison.calibrated_exceeds_raw)
        if not comparison.calibrated_exceeds_raw:
            return
        self.explanation.setText(why_calibrated_differs(comparison))
        models = comparison.models
        scales = [comparison.scales.get(m) or {} for m in models]
        rows = [(f"{lv['level']} (target {lv['target']:.2f}): median", i, "level")
                for i, lv in enumerate(next((s["levels"] for s in scales if s.get("levels")), []))]
        rows += [(f"background {p}", p, "background") for p in
                 next((list(s["background"]) for s in scales if s.get("background")), [])]
        self.scales.setRowCount(len(rows))
        self.scales.setColumnCount(len(models))
        self.scales.setHorizontalHeaderLabels([f"{comparison.labels[m]} · raw" for m in models])
        self.scales.setVerticalHeaderLabels([name for name, _, _ in rows])
        for r, (_, key, kind) in enumerate(rows):
            for c, scale in enumerate(scales):
                if kind == "level":
                    levels = scale.get("levels") or []
                    value = levels[key]["median"] if key < len(levels) else None
                else:
                    value = (scale.get("background") or {}).get(key)
                item = QTableWidgetItem("—" if value is None else f"{value:.3f}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if kind == "background" and value is None:
                    item.setToolTip("this model's reference has no background sample (anchors only)")
                self.scales.setItem(r, c, item)

    def _show_agreement(self) -> None:
        """Each model's agreement with the human-score column chosen in Results, if any."""
        comparison = self.comparison
        label = chosen_label(self.state) if comparison is not None else None
        if label is None or label not in comparison.frame:
            self.agreement.setText("No human scores in this file to compare the models with (choose a "
                                   "human-score column above the Results table)." if comparison else "")
            return
        scale = self.state.label_scale or guess_scale(label_values(comparison.frame[label]))
        found = comparison.agreements(label, scale)
        parts = [f"{comparison.labels[m]} Spearman ×100 {a.spearman_x100:.1f}, MAE {a.mae:.3f}"
                 for m, a in found.items()]
        n = max((a.n for a in found.values()), default=0)
        self.agreement.setText(f"Agreement with the file's human scores ({label} on {scale[0]:g}–{scale[1]:g}, "
                               f"{n:,} labelled pairs; calibrated score vs human score rescaled to 0–1): "
                               + " · ".join(parts))

    # ------------------------------------------------------------------ the selection

    def _clicked(self, _item, points, _event) -> None:
        if len(points):
            self._select_row(int(points[0].data()))

    def _select_row(self, row: int) -> None:
        results = self.state.results
        if results is not None and row < len(results.frame):
            self.state.select_row(row)

    def _hovered(self, _item, points, _event) -> None:
        if len(points):
            self._hover_row(int(points[0].data()))

    def _hover_row(self, row: int) -> None:
        if self.comparison is not None:
            self.hover.setText(self.point_text(row))

    def point_text(self, row: int) -> str:
        """The hover line of frame row `row`: its two texts and both models' scores."""
        comparison = self.comparison
        frame = comparison.frame
        names = [getattr(self.state.input, side, None) for side in ("text_a", "text_b")]
        names = names if all(n in frame for n in names) else list(frame.columns[:2])
        texts = [str(frame[c].iloc[row]) for c in names]
        scores = [f"{header_of(comparison, form, m)} {frame[comparison.column(form, m)].iloc[row]:.3f}"
                  for form in self._xy for m in comparison.models[:2]]
        return f"row {row + 1}: “{texts[0]}” × “{texts[1]}” · " + " · ".join(scores)

    def _show_selected(self) -> None:
        row = self.state.selected_row
        for form, item in self.selected.items():
            x, y = self._xy.get(form, (np.zeros(0), np.zeros(0)))
            if row is None or row >= len(x) or not (np.isfinite(x[row]) and np.isfinite(y[row])):
                item.setData([], [])
            else:
                item.setData([x[row]], [y[row]])
        if self.comparison is not None and row is not None and row < len(self.comparison.frame):
            self.hover.setText(self.point_text(row))

    def _show_chosen(self) -> None:
        chosen = self.state.chosen_rows
        for form, item in self.chosen.items():
            if self._crowded(form):
                item.setData([], [])
                if len(self.clouds[form].coords):        # drawn: redrawn with the chosen on top
                    self._draw_cloud(form)
                continue
            x, y = self._xy.get(form, (np.zeros(0), np.zeros(0)))
            rows = np.zeros(0, dtype=np.int64) if chosen is None else chosen[0][chosen[0] < len(x)]
            rows = rows[np.isfinite(x[rows]) & np.isfinite(y[rows])] if len(rows) else rows
            item.setData(x[rows], y[rows])

    def selected_points(self) -> dict[str, tuple[float, float]]:
        """form -> the ringed point (the selected row), where one is drawn."""
        return {form: (float(x[0]), float(y[0])) for form, item in self.selected.items()
                for x, y in [item.getData()] if len(x)}

    def point_position(self, form: str, row: int):
        """Where frame row `row`'s point lies on the `form` plot, in the scene's coordinates."""
        x, y = self._xy[form]
        return self.plots[form].vb.mapViewToScene(pg.Point(float(x[row]), float(y[row])))

    # ------------------------------------------------------------------ view state (projects)

    def view_state(self) -> dict:
        """The comparison itself (JSON-safe), so that a project keeps it."""
        return self.view_state_later()()

    def view_state_later(self):
        """`view_state` of the comparison shown now, as a function to call on another thread (~0.4 s
        for 100,000 pairs; a comparison does not change once made)."""
        comparison = self.comparison
        return lambda: {"comparison": comparison.to_dict()} if comparison is not None else {}

    def restore_view_state(self, state: dict) -> None:
        """Show the saved comparison; a damaged one is refused with a message in the tab."""
        saved = state.get("comparison") if isinstance(state, dict) else None
        if saved is None:
            return
        try:
            comparison = ModelComparison.from_dict(saved)
        except InputError as exc:
            self.show_comparison(None, problem=f"The comparison saved in this project was not shown: {exc}")
            return
        results = self.state.results
        if results is not None and len(results.frame) != len(comparison.frame):
            self.show_comparison(None, problem=(
                f"The comparison saved in this project was not shown: it holds {len(comparison.frame):,} "
                f"pairs and the results {len(results.frame):,}, so the pairs file changed since. Fix: "
                "compare the models again."))
            return
        self.show_comparison(comparison)

    # ------------------------------------------------------------------ palette

    def _apply_palette(self) -> None:
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        for plot in self.plots.values():
            style_plot(plot, self.palette())

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)


class ComparisonDialog(QDialog):
    """With one model only (`model` names it): how to add a second model; emits
    `model_chosen(folder)` when one is picked."""

    model_chosen = Signal(str)

    def __init__(self, parent=None, *, model: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Compare with another model")
        self.resize(640, 360)
        self.summary = QLabel(ONE_MODEL_HELP.format(model=model or "the current model"))
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
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
