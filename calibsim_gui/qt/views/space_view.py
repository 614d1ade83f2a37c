"""The Space tab: why raw cosines crowd together, and what each geometry fix changes."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.geometry.transforms import GEOMETRIES
from calibsim_gui.qt.widgets.child_process import run_in_child
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.workers import TaskRunner

GEOMETRY_COLORS = {"none": QColor(245, 133, 24), "center": QColor(76, 120, 168),
                   "whiten": QColor(84, 162, 75), "abtt": QColor(178, 121, 162),
                   "soft": QColor(114, 183, 178)}
HISTOGRAM_BINS = 60
CROWDED_COSINE = 0.2      # random pairs averaging above this: a visibly anisotropic space
LEGEND_ALPHA = 210        # the legend's background: curves behind it stay faintly visible


class LogAxis(pg.AxisItem):
    """A log axis that labels only 1, 2 and 5 of each decade, and only decades where a decade is
    short: pyqtgraph labels every minor tick, and 0.06 0.07 0.08 0.09 run into each other on a
    plot 250 px high (a 1024×700 window)."""

    def logTickStrings(self, values, scale, spacing):
        strings = super().logTickStrings(values, scale, spacing)
        low, high = self.range
        length = self.geometry().height() if self.orientation in ("left", "right") else self.geometry().width()
        line = QFontMetrics(self.style.get("tickFont") or QFont()).height()
        kept = (1, 2, 5) if length / max(high - low, 1e-9) >= 4 * line else (1,)
        mantissas = [round(10 ** (v - np.floor(v))) for v in values]
        return [text if (1 if m == 10 else m) in kept else "" for text, m in zip(strings, mantissas)]


def _diagnose_labelled(profile, embedder, paths, *, progress, should_stop):
    """Diagnose documents of several files, each file one label (cluster structure beside isotropy)."""
    from calibsim_gui.core.embedding.encoding import encode_texts
    from calibsim_gui.core.geometry.space import profile_space
    from calibsim_gui.core.io.inputs import load_documents

    docs = load_documents(paths)
    embeddings = encode_texts(embedder, docs.texts, progress=progress, should_stop=should_stop).embeddings
    labels = [str(d.source) for d in docs.documents]
    return profile_space(profile, embeddings, labels=labels, should_stop=should_stop)


class SpaceView(QWidget):
    """Diagnostics of the reference's background sample, raw and under each geometry fix.

    Runs when the tab is first shown after the reference changes. The combo box asks for the
    pairs to be scored under a geometry fix too (`geometry_chosen`).
    """

    geometry_chosen = Signal(str)

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.runner = TaskRunner("diagnosing the space", self)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(self._failed)
        self.space = None
        self._stale = True
        self.summary = QLabel("Load a model to see how its embeddings fill the space.")
        self.summary.setWordWrap(True)
        self.geometry_combo = QComboBox()
        self.geometry_combo.setToolTip("Also score your pairs under this geometry fix (fitted on the "
                                       "background, never on your pairs); its columns end in @name")
        self.geometry_combo.currentIndexChanged.connect(self._geometry_changed)
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setMaximumHeight(260)
        self.canvas = pg.GraphicsLayoutWidget()
        self.cosine_plot = self.canvas.addPlot(title="cosines of random background pairs")
        self.cosine_plot.setLabel("bottom", "cosine")
        self.cosine_plot.setLabel("left", "density")
        self.cosine_legend = self.cosine_plot.addLegend(offset=(-10, 10))
        self.spectrum_plot = self.canvas.addPlot(title="variance along each principal direction",
                                                 axisItems={"left": LogAxis("left")})
        self.spectrum_plot.setLabel("bottom", "principal direction")
        self.spectrum_plot.setLabel("left", "share of variance (log)")
        self.spectrum_plot.setLogMode(y=True)
        self.plot_menu = PlotMenu(self, self.canvas, [self.cosine_plot, self.spectrum_plot],
                                  image_name="space.png")
        self.curves = {}
        for name, geometry in GEOMETRIES.items():
            pen = pg.mkPen(GEOMETRY_COLORS[name], width=2)
            self.curves[name] = (self.cosine_plot.plot(stepMode="center", pen=pen, name=geometry.label),
                                 self.spectrum_plot.plot(pen=pen, symbol="o", symbolSize=4,
                                                         symbolBrush=GEOMETRY_COLORS[name]))
        choose = QHBoxLayout()
        choose.addWidget(QLabel("Also score under:"))
        choose.addWidget(self.geometry_combo)
        choose.addStretch(1)
        self.labelled_button = QPushButton("Diagnose labelled files…")
        self.labelled_button.setToolTip("Diagnose your own documents, one label per file: cluster "
                                        "structure (silhouette, Calinski-Harabasz, Davies-Bouldin, "
                                        "Dunn, a classifier) beside isotropy, raw and under each fix")
        self.labelled_button.clicked.connect(self._choose_labelled_files)
        choose.addWidget(self.labelled_button)
        self._labelled_files = 0
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addLayout(choose)
        layout.addWidget(self.table)
        layout.addWidget(self.canvas, 1)
        state.profile_changed.connect(self._profile_changed)
        state.geometry_changed.connect(self._list_geometries)
        self._list_geometries()                 # a tab built after the references came lists them too
        self._apply_palette()

    # ------------------------------------------------------------------ runs

    def _profile_changed(self) -> None:
        self._stale = True
        self.runner.cancel()
        self._list_geometries()
        if self.isVisible():
            self.refresh()

    def _list_geometries(self) -> None:
        """Every geometry fix in the combo box, those the references cannot apply greyed out and
        saying why; the one chosen current."""
        combo, fixes = self.geometry_combo, self.state.geometry_fixes() if self.state.profile is not None else {}
        combo.blockSignals(True)
        combo.clear()
        for name, available in fixes.items():
            label = "raw only" if name == "none" else GEOMETRIES[name].label
            combo.addItem(label if available else f"{label} (needs a background)", name)
            combo.model().item(combo.count() - 1).setEnabled(available)
            combo.setItemData(combo.count() - 1, GEOMETRIES[name].description if available else
                              "These references have no background to fit this fix on: build one on the "
                              "Background tab to use it.", Qt.ItemDataRole.ToolTipRole)
        combo.setCurrentIndex(max(combo.findData(self.state.geometry), 0))
        combo.blockSignals(False)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale:
            self.refresh()

    def refresh(self) -> None:
        """Diagnose the current reference's background sample in the worker."""
        profile = self.state.profile
        self._stale, self._labelled_files = False, 0
        if profile is None or profile.query_reference is None:
            self.space = None
            self.summary.setText("This reference has no background sample: build a background in the "
                                 "Background tab to see how the embeddings fill the space.")
            self.table.clear()
            for cosine_curve, spectrum_curve in self.curves.values():
                cosine_curve.clear()
                spectrum_curve.clear()
            return
        self.summary.setText("Diagnosing the background sample…")
        from calibsim_gui.core.geometry.space import profile_space  # not needed to show the window

        # in the child process: numpy's eigen-decompositions hold the interpreter lock throughout
        self.runner.start(run_in_child, profile_space, profile)

    def _choose_labelled_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Documents to diagnose, one label per file")
        if paths:
            self.diagnose_files(paths)

    def diagnose_files(self, paths) -> None:
        """Diagnose the documents of `paths` (one label per file) in the worker."""
        profile, embedder = self.state.profile, self.state.embedder
        if profile is None or embedder is None or len(paths) < 2:
            self.summary.setText("Choose at least two files (each file is one label) with a model "
                                 "and reference loaded.")
            return
        self._stale, self._labelled_files = False, len(paths)
        self.summary.setText(f"Diagnosing the documents of {len(paths)} files…")
        self.runner.start(_diagnose_labelled, profile, embedder, list(paths))

    def _failed(self, message: str) -> None:
        self.summary.setText(f"Diagnostics failed: {message.splitlines()[0]}")

    def _geometry_changed(self) -> None:
        name = self.geometry_combo.currentData()
        if name is not None:
            self.geometry_chosen.emit(name)

    # ------------------------------------------------------------------ drawing

    def _show(self, space) -> None:
        self.space = space
        names = list(space.diagnostics)
        from calibsim_gui.core.geometry.space import diagnostics_table

        rows = diagnostics_table(space)
        self.table.clear()
        self.table.setRowCount(len(rows))
        self.table.setColumnCount(len(names))
        self.table.setHorizontalHeaderLabels([GEOMETRIES[n].label for n in names])
        self.table.setVerticalHeaderLabels([label for label, _ in rows])
        for r, (_, values) in enumerate(rows):
            for c, name in enumerate(names):
                self.table.setItem(r, c, QTableWidgetItem(values[name]))
        all_cosines = np.concatenate(list(space.random_cosines.values()))
        edges = np.linspace(all_cosines.min(), all_cosines.max(), HISTOGRAM_BINS + 1)
        for name, (cosine_curve, spectrum_curve) in self.curves.items():
            if name in space.random_cosines:
                density = np.histogram(space.random_cosines[name], edges, density=True)[0]
                cosine_curve.setData(edges, density)
                shares = space.spectra[name]
                spectrum_curve.setData(np.arange(1, len(shares) + 1), np.clip(shares, 1e-8, None))
            else:
                cosine_curve.clear()
                spectrum_curve.clear()
        raw = space.diagnostics["none"]
        crowded = raw["mean_random_cosine"] > CROWDED_COSINE
        verdict = ("so raw cosines crowd together: every pair looks somewhat similar" if crowded else
                   "so this model's raw cosines are already spread around 0")
        what = (f"{space.texts:,} documents of {self._labelled_files} files, one label per file "
                "(cluster rows: how well the labels separate)" if self._labelled_files
                else f"{space.texts:,} background texts")
        self.summary.setText(
            f"{what}. Random pairs average a raw cosine of "
            f"{raw['mean_random_cosine']:.2f} (0 in an isotropic space) and {raw['top_pc_share']:.0%} "
            f"of the variance lies along one direction, {verdict}. Geometry fixes are fitted on the "
            "background, never on your pairs; the centred spectrum equals the raw one.")

    def shown_rows(self) -> dict[str, dict[str, str]]:
        """The table as {row label: {geometry label: text}} (for tests)."""
        out = {}
        for r in range(self.table.rowCount()):
            out[self.table.verticalHeaderItem(r).text()] = {
                self.table.horizontalHeaderItem(c).text(): self.table.item(r, c).text()
                for c in range(self.table.columnCount())}
        return out

    def _apply_palette(self) -> None:
        self.canvas.setBackground(self.palette().color(QPalette.ColorRole.Base))
        text = self.palette().color(QPalette.ColorRole.Text)
        for plot in (self.cosine_plot, self.spectrum_plot):
            for side in ("left", "bottom"):
                plot.getAxis(side).setPen(pg.mkPen(text))
                plot.getAxis(side).setTextPen(pg.mkPen(text))
                plot.getAxis(side).enableAutoSIPrefix(False)
            plot.titleLabel.setAttr("color", text.name())
            plot.titleLabel.setText(plot.titleLabel.text)
        self.cosine_legend.setLabelTextColor(text)
        base = QColor(self.palette().color(QPalette.ColorRole.Base))
        base.setAlpha(LEGEND_ALPHA)
        self.cosine_legend.setBrush(pg.mkBrush(base))          # readable over the curves

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)
