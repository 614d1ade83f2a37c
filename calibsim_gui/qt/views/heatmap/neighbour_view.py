"""The Heatmap tab's page for a document set too large for a heatmap: what was done instead, the
nearest texts of the document selected in Results, with raw and calibrated scores, and a heatmap
of the texts of the pairs Results shows (those chosen on the Map, or the most similar) (#39)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.pairs import split_score_column
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.qt.session.document_sets import NeighbourPairs
from calibsim_gui.qt.widgets.messages import plural

SHOWN_COLUMNS = ("rank", "neighbour_id", "neighbour")
SELECTION_TEXTS = 300             # the most texts drawn in the selection's heatmap


def selection_documents(results: NeighbourPairs, rows) -> np.ndarray:
    """The documents (rows of `results.neighbours`) of the listed pairs `rows` (None: every pair),
    in order of first appearance, whole pairs only, at most `SELECTION_TEXTS`."""
    frame = results.frame if rows is None else results.frame.iloc[np.asarray(rows, dtype=np.int64)]
    index = results.document_index
    seen: dict[int, None] = {}
    head = frame.head(SELECTION_TEXTS)
    for a, b in zip(head["doc_id"].tolist(), head["neighbour_id"].tolist()):
        if len(seen) + (index[a] not in seen) + (index[b] not in seen) > SELECTION_TEXTS:
            break
        seen.update({index[a]: None, index[b]: None})
    return np.fromiter(seen, dtype=np.int64, count=len(seen))


def selection_matrix(results: NeighbourPairs, profile, documents) -> np.ndarray:
    """The calibrated scores of `documents` against each other (float32, n x n)."""
    found = results.neighbours
    vectors = found.vectors[documents]
    raw = METRICS[found.metric].matrix(vectors, vectors)
    calibrated = profile.calibrate(found.metric, raw.ravel(), found.geometry)["calibrated"]
    return calibrated.reshape(raw.shape).astype(np.float32)


class NeighbourList(QWidget):
    """Says why there is no heatmap, and lists the chosen document's nearest texts."""

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.explanation = QLabel()
        self.explanation.setWordWrap(True)
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.table = QTableWidget(0, 0)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.selection_title = QLabel()
        self.selection_title.setWordWrap(True)
        self.selection = pg.PlotWidget()
        self.selection.invertY(True)
        self.selection.setAspectLocked(True)
        self.image = pg.ImageItem(axisOrder="row-major")
        self.selection.addItem(self.image)
        self.colorbar = pg.ColorBarItem(colorMap="viridis", interactive=False, width=14, values=(0, 1))
        self.colorbar.setImageItem(self.image, insert_in=self.selection.getPlotItem())
        self.documents = np.zeros(0, dtype=np.int64)       # the heatmap's rows: rows of the set
        nearest = QVBoxLayout()
        nearest.addWidget(self.title)
        nearest.addWidget(self.table, 1)
        heatmap = QVBoxLayout()
        heatmap.addWidget(self.selection_title)
        heatmap.addWidget(self.selection, 1)
        both = QHBoxLayout()
        both.addLayout(nearest, 3)
        both.addLayout(heatmap, 2)
        layout = QVBoxLayout(self)
        layout.addWidget(self.explanation)
        layout.addLayout(both, 1)
        state.shown_rows_changed.connect(self.show_selection)

    def show_results(self, results: NeighbourPairs) -> None:
        """Say what `results` hold, then list the selected pair's first document's neighbours
        (no pair selected: the first pair's)."""
        found = results.neighbours
        k = found.hits.shape[1] if found.hits.ndim == 2 else 0
        method = found.provenance.get("neighbours", {}).get("method", "exact")
        self.explanation.setText(
            f"The heatmap is kept for document sets whose every pair fits the memory budget (up to "
            f"{results.heatmap_limit:,} documents now). These {plural(len(found.ids), 'document')} were "
            f"scored by their {k} nearest neighbours ({method}): Results lists the "
            f"{plural(len(results.frame), 'most similar pair')} (near-duplicates first, with their duplicate "
            "group), the Map shows every text, and below are the nearest texts of the document "
            "selected in Results (or clicked on the Map).")
        row = self.state.selected_row if self.state.selected_row is not None else 0
        if len(results.frame):
            self.show_document(results, str(results.frame["doc_id"].iloc[min(row, len(results.frame) - 1)]))
        self.show_selection()

    def show_selection(self) -> None:
        """Draw the calibrated heatmap of the texts of the pairs Results shows (chosen on the Map,
        or filtered there; none: the most similar pairs), as many as fit `SELECTION_TEXTS`."""
        results, profile = self.state.results, self.state.profile
        if not isinstance(results, NeighbourPairs) or profile is None:
            return
        shown = self.state.shown_rows
        self.documents = selection_documents(results, shown)
        if len(self.documents):
            self.image.setImage(selection_matrix(results, profile, self.documents), levels=(0, 1))
        else:                                              # every pair filtered out
            self.image.clear()
        which = ("the most similar pairs. Choose texts on the Map (lasso) to see theirs" if shown is None
                 else f"the {plural(len(shown), 'pair')} Results shows, chosen on the Map or filtered")
        cap = f" (the first pairs' first: at most {SELECTION_TEXTS})" if len(self.documents) >= SELECTION_TEXTS else ""
        self.selection_title.setText(
            f"Heatmap (calibrated) of {plural(len(self.documents), 'text')}{cap}: those of {which}.")

    def show_document(self, results: NeighbourPairs, doc_id: str) -> None:
        """List the nearest texts of the document `doc_id`, best first."""
        rows = results.neighbours_of(doc_id)
        text = rows["document"].iloc[0] if len(rows) else ""
        self.title.setText(f"Nearest texts to {doc_id}: {text[:200]}")
        names = [c for c in rows.columns if c in SHOWN_COLUMNS or split_score_column(c) is not None]
        self.table.setColumnCount(len(names))
        self.table.setHorizontalHeaderLabels(names)
        self.table.setRowCount(len(rows))
        for column, name in enumerate(names):
            numeric = split_score_column(name) is not None
            for row, value in enumerate(rows[name].tolist()):
                item = QTableWidgetItem(f"{value:.3f}" if numeric else str(value))
                if numeric:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                else:
                    item.setToolTip(str(value)[:1000])
                self.table.setItem(row, column, item)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        if "neighbour" in names:
            header.setSectionResizeMode(names.index("neighbour"), QHeaderView.ResizeMode.Stretch)
