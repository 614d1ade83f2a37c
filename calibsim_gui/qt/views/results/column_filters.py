"""Per-column filters of the Results table and the chips that show every active limit.

A `ColumnFilter` keeps a numeric column's rows within a range or a text column's rows that
contain a text. `FilterChips` shows one removable chip per limit on the rows (column filters,
the range brushed on Distributions, the texts chosen on the Map) and a "Clear all" chip; each
chip is a button, so Tab reaches it and Space or Delete removes it. `ColumnFilterDialog` asks
for one column's filter (from the header's menu or the "Filter column…" button).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QToolButton,
    QWidget,
)


@dataclass(frozen=True)
class ColumnFilter:
    """Rows whose `column` lies in [low, high] (numeric; None: no bound) or contains `text`."""

    column: str
    low: float | None = None
    high: float | None = None
    text: str = ""

    def label(self, title: str) -> str:
        """The chip's words: "cosine · calibrated ≥ 0.8", "sentence1 contains “cat”"."""
        if self.text:
            return f"{title} contains “{self.text}”"
        if self.low is not None and self.high is not None:
            return f"{title} from {self.low:.4g} to {self.high:.4g}"
        return f"{title} ≥ {self.low:.4g}" if self.low is not None else f"{title} ≤ {self.high:.4g}"

    def mask(self, model) -> np.ndarray | None:
        """Per row of `model` (a `ResultsTableModel`): does it pass? None when the column is gone."""
        column = model.column_of(self.column)
        if column < 0:
            return None
        if bool(self.text) == model.is_numeric(column):
            return None                                 # a column of another kind than asked
        if self.text:
            return model.column_contains(column, self.text)
        numbers = model.numbers(column)
        keep = np.isfinite(numbers)
        if self.low is not None:
            keep &= numbers >= self.low
        if self.high is not None:
            keep &= numbers <= self.high
        return keep

    def to_json(self) -> dict:
        return {"column": self.column, "low": self.low, "high": self.high, "text": self.text}

    @classmethod
    def from_json(cls, value) -> ColumnFilter | None:
        """A filter from `to_json`'s dict, or None when it is not one."""
        if not isinstance(value, dict) or not isinstance(value.get("column"), str):
            return None
        bounds = [value.get(end) for end in ("low", "high")]
        bounds = [float(b) if isinstance(b, (int, float)) and math.isfinite(b) else None for b in bounds]
        text = value.get("text") if isinstance(value.get("text"), str) else ""
        if not text and bounds == [None, None]:
            return None
        return cls(value["column"], *bounds, text)


class Chip(QToolButton):
    """A removable chip: a click, Space, Enter, Delete or Backspace removes it."""

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace, Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.click()
            return
        super().keyPressEvent(event)


class FilterChips(QWidget):
    """One "✕ label" button per limit on the rows, and "Clear all" when there are several.

    `removed` gives the key of the chip clicked (or activated with Space, Enter or Delete);
    `cleared` says "Clear all" was.
    """

    removed = Signal(object)
    cleared = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.chips: list[Chip] = []
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.addStretch(1)
        self.clear_all = self._button("✕ Clear all filters", "Show every row again")
        self.clear_all.clicked.connect(self.cleared)
        self._layout.insertWidget(0, self.clear_all)
        self.hide()

    def _button(self, text: str, tip: str) -> Chip:
        button = Chip(self)
        button.setText(text)
        button.setToolTip(tip)
        button.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        return button

    def set_chips(self, chips: list[tuple[object, str, str]]) -> None:
        """Show `chips`: (key, label, tooltip) each."""
        for chip in self.chips:
            chip.deleteLater()
        self.chips = []
        for position, (key, label, tip) in enumerate(chips):
            chip = self._button(f"✕ {label}", tip + " — click (or press Delete) to remove this filter")
            chip.setAccessibleName(f"Remove filter: {label}")
            chip.clicked.connect(lambda _=False, k=key: self.removed.emit(k))
            self._layout.insertWidget(position, chip)
            self.chips.append(chip)
        self.clear_all.setVisible(len(chips) > 1)
        self.setVisible(bool(chips))

    def labels(self) -> list[str]:
        """The chips' texts without the ✕ (for people reading tests)."""
        return [chip.text().removeprefix("✕ ") for chip in self.chips]


class ColumnFilterDialog(QDialog):
    """Choose a column and its filter: a range for numbers, a text it contains for texts."""

    def __init__(self, columns: list[tuple[str, str, bool]], *, column: str | None = None,
                 current: ColumnFilter | None = None, limits=None, parent: QWidget | None = None):
        """`columns`: (name, title, numeric) each; `limits(name)` gives a numeric column's (min, max)."""
        super().__init__(parent)
        self.setWindowTitle("Filter a column")
        self._columns, self._limits = columns, limits
        self.column_combo = QComboBox()
        for name, title, numeric in columns:
            self.column_combo.addItem(title.replace("\n", " · "), (name, numeric))
        self.low, self.high = QDoubleSpinBox(), QDoubleSpinBox()
        for spin in (self.low, self.high):
            spin.setRange(-1e12, 1e12)
            spin.setDecimals(4)
        self.text = QLineEdit(placeholderText="text the column contains (any case)")
        form = QFormLayout(self)
        form.addRow("&Column:", self.column_combo)
        form.addRow("&From:", self.low)
        form.addRow("&To:", self.high)
        form.addRow("&Contains:", self.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.column_combo.currentIndexChanged.connect(self._column_chosen)
        names = [name for name, _, _ in columns]
        wanted = current.column if current is not None else column
        self.column_combo.setCurrentIndex(names.index(wanted) if wanted in names else 0)
        self._column_chosen()
        if current is not None:
            self.text.setText(current.text)
            for spin, value in ((self.low, current.low), (self.high, current.high)):
                if value is not None:
                    spin.setValue(value)

    def _column_chosen(self) -> None:
        data = self.column_combo.currentData()
        numeric = bool(data and data[1])
        for widget in (self.low, self.high):
            widget.setEnabled(numeric)
        self.text.setEnabled(not numeric)
        if numeric and self._limits is not None:
            low, high = self._limits(data[0])
            self.low.setValue(low)
            self.high.setValue(high)
        (self.low if numeric else self.text).setFocus()

    def chosen(self) -> ColumnFilter | None:
        """The filter asked for (None: no column, or an empty text)."""
        data = self.column_combo.currentData()
        if data is None:
            return None
        name, numeric = data
        if numeric:
            low, high = sorted((self.low.value(), self.high.value()))
            return ColumnFilter(name, low, high)
        text = self.text.text().strip()
        return ColumnFilter(name, text=text) if text else None
