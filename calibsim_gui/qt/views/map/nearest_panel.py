"""The Text map's side panel: a box to type a text, and the nearest texts of a clicked point or of
the typed text, with raw and calibrated scores."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)


class NearestPanel(QWidget):
    """`query_edit` (Enter asks for texts like it), `title` and `table` (one row per nearest text)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.query_edit = QLineEdit(placeholderText="Find texts like… (Ctrl+K, Enter)")
        self.query_edit.setClearButtonEnabled(True)
        self.query_edit.setToolTip("Type a text: its nearest texts of the input are listed, with raw "
                                   "and calibrated scores, and ringed on the map")
        self.title = QLabel("Click a point, or type a text above, to list its nearest texts.")
        self.title.setWordWrap(True)
        self.title.setMinimumHeight(3 * self.fontMetrics().lineSpacing() + 4)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["Text", "Id", "Raw", "Calibrated"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.query_edit)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)

    def show_rows(self, title: str, rows) -> None:
        """List `rows` of (text, id, raw, calibrated) under `title`."""
        self.title.setText(title)
        self.table.setRowCount(len(rows))
        for row, (text, doc_id, raw, calibrated) in enumerate(rows):
            for column, value in enumerate((text, doc_id, f"{raw:.3f}", f"{calibrated:.3f}")):
                item = QTableWidgetItem(value)
                if column == 0:
                    item.setToolTip(value)
                if column >= 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, column, item)
