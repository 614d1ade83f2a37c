"""The Results table's text columns kept in view while the score columns scroll sideways."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QTableView


class FrozenTexts(QTableView):
    """The text columns drawn over the left of `table` while it scrolls sideways (Qt's "frozen
    column" pattern): same model and selection, its own hidden score columns."""

    def __init__(self, table: QTableView):
        super().__init__(table)
        self.table = table
        self.setModel(table.model())
        self.setSelectionModel(table.selectionModel())
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.verticalHeader().hide()
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.setAlternatingRowColors(True)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(table.verticalHeader().defaultSectionSize())
        self.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignCenter)
        self.horizontalHeader().setSectionsClickable(True)
        self.horizontalHeader().sectionClicked.connect(self._sort)
        self.setFrameShape(QTableView.Shape.NoFrame)
        table.viewport().stackUnder(self)
        self.verticalScrollBar().valueChanged.connect(table.verticalScrollBar().setValue)
        table.verticalScrollBar().valueChanged.connect(self.verticalScrollBar().setValue)
        self.hide()

    def _sort(self, column: int) -> None:
        header = self.table.horizontalHeader()
        order = (Qt.SortOrder.DescendingOrder if header.sortIndicatorSection() == column
                 and header.sortIndicatorOrder() == Qt.SortOrder.AscendingOrder else Qt.SortOrder.AscendingOrder)
        self.table.sortByColumn(column, order)

    def follow(self, texts: list[int]) -> None:
        """Show only `texts`, as wide as in the table, over the table's left edge."""
        table, header = self.table, self.table.horizontalHeader()
        width = 0
        for column in range(self.model().columnCount()):
            shown = column in texts and not table.isColumnHidden(column)
            self.setColumnHidden(column, not shown)
            if shown:
                self.setColumnWidth(column, header.sectionSize(column))
                self.horizontalHeader().moveSection(self.horizontalHeader().visualIndex(column),
                                                    header.visualIndex(column))
                width += header.sectionSize(column)
        self.horizontalHeader().setFixedHeight(header.height())
        frame = table.frameWidth()
        self.setGeometry(table.verticalHeader().width() + frame, frame, width,
                         table.viewport().height() + header.height())
        self.verticalScrollBar().setValue(table.verticalScrollBar().value())
