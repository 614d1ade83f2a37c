"""The Heatmap tab's page for a document set too large for a heatmap: what was done instead, and
the nearest texts of the document selected in Results, with raw and calibrated scores (#39)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.pairs import split_score_column
from calibsim_gui.qt.session.document_sets import NeighbourPairs
from calibsim_gui.qt.widgets.messages import plural

SHOWN_COLUMNS = ("rank", "neighbour_id", "neighbour")


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
        layout = QVBoxLayout(self)
        layout.addWidget(self.explanation)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)

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
