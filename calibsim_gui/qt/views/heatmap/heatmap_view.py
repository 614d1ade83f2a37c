"""The document heatmap (pyqtgraph) and its table of documents, ordered by input or by clusters."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QItemSelectionModel, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.matrix_order import colour_range, short_document_label, similarity_order
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.qt.session.document_sets import NeighbourPairs
from calibsim_gui.qt.views.heatmap.neighbour_view import NeighbourList
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.plots import SELECTED_COLOR, style_plot
from calibsim_gui.session.selection import pair_row

MAX_TICKED_DOCUMENTS = 40
MAX_CLUSTERED_DOCUMENTS = 3000        # clustering more on the GUI thread would take seconds


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
        self.neighbour_list = NeighbourList(state)      # a set too large for a heatmap
        self.stack.addWidget(self.neighbour_list)
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
        if isinstance(self.state.results, NeighbourPairs):
            self.stack.setCurrentWidget(self.neighbour_list)
            self.neighbour_list.show_results(self.state.results)
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
        elsewhere, select its two documents in the table (a set scored by neighbours: list the
        neighbours of the pair's first document)."""
        if isinstance(self.state.results, NeighbourPairs):
            self.neighbour_list.show_results(self.state.results)
            return
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
