"""The Results table's model: a pandas frame (or every pair of a document set) served to a
`QTableView` without a widget per cell.

Values are formatted only when a visible cell asks for them, and sorting and filtering are numpy
operations over whole columns, so a 100,000-row table, or the 2 million pairs of 2,000
documents, stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

from calibsim_gui.core.analysis.distributions import DISAGREEMENT_COLUMN
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import score_column, split_score_column
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.embedding.chunking import TRUNCATED_COLUMN
from calibsim_gui.core.embedding.readability import UNREADABLE_COLUMN, UNREADABLE_NOTE
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import GEOMETRIES
from calibsim_gui.qt.widgets.document_pairs import IndexedTexts, document_pair_columns

SORT_ROLE = Qt.ItemDataRole.UserRole
TRUNCATED_MARK = "✂"
TRUNCATED_TIPS = {
    "a": "The first text is longer than the model's max length: only its beginning was scored",
    "b": "The second text is longer than the model's max length: only its beginning was scored",
    "both": "Both texts are longer than the model's max length: only their beginnings were scored",
}
TRUNCATED_FIX = " (Settings ▸ Long texts ▸ Split into chunks scores them whole)"
FLAG_COLUMNS = (TRUNCATED_COLUMN, UNREADABLE_COLUMN)     # which text of a pair: a, b, both or empty


def column_title(name: str) -> str:
    """A column's header: score columns read "cosine" over "calibrated" (raw id in the tooltip)."""
    parts = split_score_column(name)
    if name == DISAGREEMENT_COLUMN:
        return "disagreement\n|cal − human|"
    if parts is None:
        return name
    metric, form, geometry = parts
    title = f"{metric}\n{form.replace('_', ' ')}"
    return title if geometry == "none" else f"{title}\n@ {geometry}"


def column_tooltip(name: str) -> str:
    """What a column holds, in words (score columns: form meaning and the metric's orientation)."""
    parts = split_score_column(name)
    if name == DISAGREEMENT_COLUMN:
        return (f"{name}: |calibrated score − human score rescaled to 0–1| for the human-score column "
                "chosen above the table; sort by it to see where the calibration and people disagree")
    if name == TRUNCATED_COLUMN:
        return (f"{name}: which text of the pair (a, b, both) is longer than the model's max length, "
                "so only its beginning was scored" + TRUNCATED_FIX)
    if name == UNREADABLE_COLUMN:
        return (f"{name}: which text of the pair (a, b, both) has {UNREADABLE_NOTE}: the model cannot "
                "read it, so the pair has a raw score but no calibrated one")
    if parts is None:
        return f"{name}: a column of your input"
    metric, form, geometry = parts
    text = f"{name}: {metric}, {form} — {FORM_DESCRIPTIONS[form]}"
    if geometry != "none":
        text += f"; under the geometry fix '{GEOMETRIES[geometry].label}' ({GEOMETRIES[geometry].description})"
    if form == "raw":
        text += f". {METRICS[metric].description}; {METRICS[metric].orientation}"
    return text


DISAGREEMENT_DECIMALS = 3     # as the Agreement tab and the reports show 0-1 scores


def _decimals(values: np.ndarray, form: str | None) -> int:
    """Decimals that give a column's larger values (the 90th percentile of sizes) 4 significant
    digits (percentiles: 1; the disagreement, whose typical size varies from 0.05 to 0.2 between
    runs: always 3). Not the median: most pairs of a document set calibrate to about 0, which
    would ask for 6 decimals on every score."""
    if form == "bg_percentile":
        return 1
    if form == DISAGREEMENT_COLUMN:
        return DISAGREEMENT_DECIMALS
    sample = values[:: max(1, len(values) // 2000)]        # a typical value needs no full scan
    finite = np.abs(sample[np.isfinite(sample)])
    typical = float(np.quantile(finite, 0.9)) if len(finite) else 0.0
    if typical == 0.0:
        return 4
    return int(np.clip(3 - np.floor(np.log10(typical)), 0, 6))


class ResultsTableModel(QAbstractTableModel):
    """A read-only table over a DataFrame, sorted and filtered with numpy.

    Qt's QSortFilterProxyModel would call Python once per row on every sort and filter (about
    half a second at 100,000 rows); here both are one vectorised step over the whole frame.
    ``Qt.UserRole`` returns the raw value (float for numeric columns, text otherwise). Score
    columns, and input columns whose every non-empty value is a number, are numeric:
    right-aligned and sorted numerically; input columns keep their original text on display.
    A ``<metric>_calibrated`` cell's tooltip says where 80 % of people's scores fall for such a
    pair (when the profile has a human agreement band) and the score's reference uncertainty.
    """

    def __init__(self, frame: pd.DataFrame | None = None, parent=None):
        super().__init__(parent)
        self.set_frame(frame)

    def set_frame(self, frame: pd.DataFrame | None, profile=None) -> None:
        """Show `frame` (None: an empty table; pandas is not imported for it, which keeps the
        window's start-up short). `profile`, the references `frame` was calibrated with, gives
        the calibrated cells' intervals where `frame` has no ``_lo``/``_hi`` columns."""
        columns = {}
        if frame is not None:
            import pandas as pd
        for name in [] if frame is None else frame.columns:
            column = frame[name]
            is_text = split_score_column(name) is None and not pd.api.types.is_numeric_dtype(column)
            numbers = _as_numbers(column) if is_text else column.to_numpy(dtype=np.float64)
            columns[str(name)] = (numbers, IndexedTexts(column.astype(str).to_numpy()) if is_text else None)
        self._set_columns(columns, 0 if frame is None else len(frame), profile, frame)

    def set_document_pairs(self, results: DocumentMatrix, form: str) -> None:
        """Show every pair of a document set's documents (rows numbered as `session.selection.pair_row`)."""
        columns = {name: (None, values) if isinstance(values, IndexedTexts) else (values, None)
                   for name, values in document_pair_columns(results, form).items()}
        n = len(results.ids)
        self._set_columns(columns, n * (n - 1) // 2, None)

    def _set_columns(self, columns: dict, rows: int, profile, frame=None) -> None:
        """Show `columns`: name -> (float array or None, `IndexedTexts` or None); an input column
        read as numbers has both."""
        self.beginResetModel()
        self.frame = frame
        self._columns = list(columns)
        self._numbers = [numbers for numbers, _ in columns.values()]
        self._texts = [texts for _, texts in columns.values()]
        self._decimals = []
        for name, numbers in zip(self._columns, self._numbers):
            parts = split_score_column(name)
            self._decimals.append(None if numbers is None else _decimals(
                numbers, parts[1] if parts else name if name == DISAGREEMENT_COLUMN else None))
        self._flags = self._columns.index(TRUNCATED_COLUMN) if TRUNCATED_COLUMN in self._columns else -1
        self._intervals = {column: tip for column, name in enumerate(self._columns)
                           if (tip := self._interval_source(name, profile)) is not None}
        self._lowered: dict[int, pd.Series] = {}
        self._order = np.arange(rows)                 # rows in sort order
        self._keep = None                             # filter mask over rows (None: all)
        self._rows = self._order                      # rows shown, in order
        self._text, self._range, self._chosen, self._filters = "", None, None, []
        self._sorted_by = None                        # (column, order) of the last sort
        self.endResetModel()

    def _interval_source(self, name: str, profile):
        """For a calibrated column, a function of a frame row giving its tooltip's bands: where
        80 % of people's scores fall (the profile's human agreement band, if any) and the 95 %
        reference uncertainty (the ``_lo``/``_hi`` columns, or the profile's resampled lines)."""
        parts = split_score_column(name)
        if parts is None or parts[1] != "calibrated":
            return None
        metric, _, geometry = parts
        lo, hi, raw, value = (self.column_of(score_column(metric, form, geometry))
                              for form in ("calibrated_lo", "calibrated_hi", "raw", "calibrated"))
        references = (profile.references(geometry) if profile is not None
                      and geometry in profile.geometry_names() else {})
        band = references[metric].band if metric in references else None
        if lo >= 0 and hi >= 0:
            uncertainty = lambda row: (self._numbers[lo][row], self._numbers[hi][row])
        elif raw >= 0 and metric in references:
            curve, similarity = references[metric].calibrators["calibrated"], METRICS[metric].as_similarity
            uncertainty = lambda row: tuple(float(end[0]) for end in
                                            curve.interval([similarity(self._numbers[raw][row])]))
        else:
            return None

        def tip(row) -> str:
            text = f"reference uncertainty (95 %) {uncertainty(row)[0]:.2f}–{uncertainty(row)[1]:.2f}"
            if band is not None:
                people = [float(end[0]) for end in band.band([self._numbers[value][row]], band.rates[0])]
                text = (f"people would rate such a pair between {people[0]:.2f} and {people[1]:.2f}, "
                        f"{band.rates[0]:.0%} of the time (measured on {band.measured_on()}); ".replace("%", " %")
                        + text)
            return text
        return tip

    # ------------------------------------------------------------------ queries

    @property
    def column_names(self) -> list[str]:
        return list(self._columns)

    def is_numeric(self, column: int) -> bool:
        return self._numbers[column] is not None

    def numbers(self, column: int) -> np.ndarray:
        """A numeric column's values, one per row (NaN: empty)."""
        return self._numbers[column]

    def text_columns(self) -> list[int]:
        return [c for c in range(len(self._columns)) if not self.is_numeric(c)]

    def frame_row(self, row: int) -> int:
        """Row of `frame` shown at model row `row`."""
        return int(self._rows[row])

    def model_row(self, frame_row: int) -> int:
        """Model row showing `frame_row`, or -1 when it is filtered out."""
        found = np.flatnonzero(self._rows == frame_row)
        return int(found[0]) if len(found) else -1

    def column_of(self, name: str) -> int:
        return self._columns.index(name) if name in self._columns else -1

    def _lower(self, column: int) -> pd.Series:
        """A text column's distinct values, in lower case."""
        import pandas as pd

        if column not in self._lowered:
            self._lowered[column] = pd.Series(self._texts[column].values).str.lower()
        return self._lowered[column]

    def column_contains(self, column: int, text: str) -> np.ndarray:
        """Per row: does text column `column` contain `text` (case-insensitive)?"""
        hit = self._lower(column).str.contains(text.lower(), regex=False).to_numpy(dtype=bool)
        return self._texts[column].per_row(hit)

    def contains(self, text: str) -> np.ndarray:
        """Per row: does any text column contain `text` (case-insensitive)?"""
        hit = np.zeros(len(self._order), dtype=bool)
        for column in self.text_columns():
            hit |= self.column_contains(column, text)
        return hit

    # ------------------------------------------------------------------ sort & filter

    def set_filter(self, text: str) -> None:
        """Show only rows whose text columns contain `text` (all rows when empty)."""
        self._text = text
        self._refilter()

    def set_range(self, value, rows=None, filters=()) -> None:
        """Show only rows whose column `value[0]` lies in [`value[1]`, `value[2]`] (None: all),
        unless `rows` is None that are among these rows (chosen on the Map), and that pass every
        `ColumnFilter` of `filters` (a filter of a missing column passes all)."""
        self._range = value
        self._chosen = None if rows is None else np.asarray(rows, dtype=np.int64)
        self._filters = list(filters)
        self._refilter()

    def _refilter(self) -> None:
        self.beginResetModel()
        masks = [self.contains(self._text)] if self._text else []
        if self._chosen is not None:
            chosen = np.zeros(len(self._order), dtype=bool)
            chosen[self._chosen[self._chosen < len(chosen)]] = True
            masks.append(chosen)
        column = -1 if self._range is None else self.column_of(self._range[0])
        if column >= 0 and self.is_numeric(column):
            numbers, (_, low, high) = self._numbers[column], self._range
            masks.append((numbers >= low) & (numbers <= high))
        masks += [mask for f in self._filters if (mask := f.mask(self)) is not None]
        self._keep = np.logical_and.reduce(masks) if masks else None
        self._rows = self._order if self._keep is None else self._order[self._keep[self._order]]
        self.endResetModel()

    def kept_rows(self) -> np.ndarray | None:
        """The frame rows every filter keeps, ascending (None: every row)."""
        return None if self._keep is None else np.flatnonzero(self._keep)

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        """Reorder rows by `column` (stable; empty numbers last in both directions).

        A repeated request is skipped: `QTableView.sortByColumn` asks twice, and sorting 2 million
        document pairs takes a noticeable moment."""
        if not 0 <= column < len(self._columns) or self._sorted_by == (column, order):
            return
        self._sorted_by = (column, order)
        self.layoutAboutToBeChanged.emit()
        old = self._rows
        descending = order == Qt.SortOrder.DescendingOrder
        numbers = self._numbers[column]
        if numbers is not None:
            self._order = np.argsort(-numbers if descending else numbers, kind="stable")
        else:
            ranks = np.empty(len(self._lower(column)), dtype=np.int64)
            ranks[np.argsort(self._lower(column).to_numpy(), kind="stable")] = np.arange(len(ranks))
            self._order = np.argsort(self._texts[column].per_row(ranks), kind="stable")
            if descending:
                self._order = self._order[::-1]
        self._rows = self._order if self._keep is None else self._order[self._keep[self._order]]
        where = np.empty(len(self._order), dtype=np.int64)
        where[self._rows] = np.arange(len(self._rows))
        persistent = self.persistentIndexList()
        self.changePersistentIndexList(
            persistent, [self.index(int(where[old[i.row()]]), i.column()) for i in persistent])
        self.layoutChanged.emit()

    # ------------------------------------------------------------------ Qt model API

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row, column = self._rows[index.row()], index.column()
        numbers, texts = self._numbers[column], self._texts[column]
        if column == self._flags and role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            mark = texts[row]
            if mark not in TRUNCATED_TIPS:
                return "" if role == Qt.ItemDataRole.DisplayRole else None
            return (f"{TRUNCATED_MARK} {mark}" if role == Qt.ItemDataRole.DisplayRole
                    else TRUNCATED_TIPS[mark] + TRUNCATED_FIX)
        if role == Qt.ItemDataRole.DisplayRole:
            if texts is not None:
                return texts[row]
            value = numbers[row]
            return "" if np.isnan(value) else f"{value:.{self._decimals[column]}f}"
        if role == SORT_ROLE:
            return float(numbers[row]) if numbers is not None else texts[row]
        if role == Qt.ItemDataRole.TextAlignmentRole:
            side = Qt.AlignmentFlag.AlignRight if numbers is not None else Qt.AlignmentFlag.AlignLeft
            return int(side | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and numbers is None:
            return texts[row]
        if role == Qt.ItemDataRole.ToolTipRole and column in self._intervals and np.isfinite(numbers[row]):
            return f"{numbers[row]:.2f}: {self._intervals[column](row)}"
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Vertical:
            # the input's own row number, whatever the sort order
            return str(self._rows[section] + 1) if role == Qt.ItemDataRole.DisplayRole else None
        if role == Qt.ItemDataRole.DisplayRole:
            return column_title(self._columns[section])
        if role == Qt.ItemDataRole.ToolTipRole:
            return column_tooltip(self._columns[section])
        return None


def _as_numbers(column: pd.Series) -> np.ndarray | None:
    """A text column as floats when every non-empty value is a number, else None.

    The first 200 values are checked first, so a column of sentences is rejected at once.
    """
    import pandas as pd

    head = column.head(200).astype(str).str.strip()
    head = head[head != ""]
    if not len(head) or pd.to_numeric(head, errors="coerce").isna().any():
        return None
    text = column.astype(str).str.strip()
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    return numbers if np.isfinite(numbers[(text != "").to_numpy()]).all() else None
