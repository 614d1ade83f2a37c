"""The results table: scored pairs (or a document set's most similar pairs), sortable and filterable.

`ResultsTableModel` serves a pandas frame to a `QTableView` without a widget per cell: values are
formatted only when a visible cell asks for them, and sorting and filtering are numpy operations
over whole columns, so a 100,000-row table stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
from PySide6.QtCore import QAbstractTableModel, QEvent, QItemSelectionModel, QModelIndex, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QStackedWidget,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.distributions import DISAGREEMENT_COLUMN, guess_scale, label_values
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import ScoredPairs, score_column, split_score_column
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS
from calibsim_gui.core.embedding.chunking import TRUNCATED_COLUMN
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import GEOMETRIES
from calibsim_gui.qt.agreement_view import candidates_of, chosen_label, current_agreement
from calibsim_gui.qt.messages import for_the_app

SORT_ROLE = Qt.ItemDataRole.UserRole
EMPTY_HINT = "Drop a pairs file (CSV/TSV/JSONL) or documents onto the window"
TOP_PAIRS = 10
COLUMN_SETS = ("focus", "metric", "all")       # raw + chosen form / all forms of metric / all
TRUNCATED_MARK = "✂"
TRUNCATED_TIPS = {
    "a": "The first text is longer than the model's max length: only its beginning was scored",
    "b": "The second text is longer than the model's max length: only its beginning was scored",
    "both": "Both texts are longer than the model's max length: only their beginnings were scored",
}
TRUNCATED_FIX = " (Settings ▸ Long texts ▸ Split into chunks scores them whole)"
TEXT_MIN_WIDTH = 200            # below this a text column stops stretching and the table scrolls
NO_LABEL = "(none)"


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
    """Decimals that give a column's typical value 4 significant digits (percentiles: 1; the
    disagreement, whose typical size varies from 0.05 to 0.2 between runs: always 3)."""
    if form == "bg_percentile":
        return 1
    if form == DISAGREEMENT_COLUMN:
        return DISAGREEMENT_DECIMALS
    sample = values[:: max(1, len(values) // 2000)]        # a typical value needs no full scan
    finite = np.abs(sample[np.isfinite(sample)])
    typical = float(np.median(finite)) if len(finite) else 0.0
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
        self.beginResetModel()
        self.frame = frame
        self._columns = [] if frame is None else [str(c) for c in frame.columns]
        self._numbers, self._texts, self._decimals = [], [], []
        if frame is not None:
            import pandas as pd
        for name in [] if frame is None else frame.columns:
            column = frame[name]
            parts = split_score_column(name)
            is_text = parts is None and not pd.api.types.is_numeric_dtype(column)
            numbers = _as_numbers(column) if is_text else column.to_numpy(dtype=np.float64)
            self._numbers.append(numbers)
            self._texts.append(column.astype(str).to_numpy() if is_text else None)
            self._decimals.append(None if numbers is None else _decimals(
                numbers, parts[1] if parts else name if name == DISAGREEMENT_COLUMN else None))
        self._flags = self._columns.index(TRUNCATED_COLUMN) if TRUNCATED_COLUMN in self._columns else -1
        self._intervals = {column: tip for column, name in enumerate(self._columns)
                           if (tip := self._interval_source(name, profile)) is not None}
        self._lowered: dict[int, pd.Series] = {}
        self._order = np.arange(0 if frame is None else len(frame))      # frame rows in sort order
        self._keep = None                             # filter mask over frame rows (None: all)
        self._rows = self._order                      # frame rows shown, in order
        self._text, self._range, self._chosen = "", None, None
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
            uncertainty = lambda row: (self._numbers[lo][row], self._numbers[hi][row])  # noqa: E731
        elif raw >= 0 and metric in references:
            curve, similarity = references[metric].calibrators["calibrated"], METRICS[metric].as_similarity
            uncertainty = lambda row: tuple(float(end[0]) for end in  # noqa: E731
                                            curve.interval([similarity(self._numbers[raw][row])]))
        else:
            return None

        def tip(row) -> str:
            text = f"reference uncertainty (95 %) {uncertainty(row)[0]:.2f}–{uncertainty(row)[1]:.2f}"
            if band is not None:
                people = [float(end[0]) for end in band.band([self._numbers[value][row]], band.rates[0])]
                text = (f"people would rate such a pair between {people[0]:.2f} and {people[1]:.2f}, "
                        f"{band.rates[0]:.0%} of the time; ".replace("%", " %") + text)
            return text
        return tip

    # ------------------------------------------------------------------ queries

    @property
    def column_names(self) -> list[str]:
        return list(self._columns)

    def is_numeric(self, column: int) -> bool:
        return self._numbers[column] is not None

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
        import pandas as pd

        if column not in self._lowered:
            self._lowered[column] = pd.Series(self._texts[column]).str.lower()
        return self._lowered[column]

    def contains(self, text: str) -> np.ndarray:
        """Per frame row: does any text column contain `text` (case-insensitive)?"""
        hit = np.zeros(len(self._order), dtype=bool)
        for column in self.text_columns():
            hit |= self._lower(column).str.contains(text.lower(), regex=False).to_numpy()
        return hit

    # ------------------------------------------------------------------ sort & filter

    def set_filter(self, text: str) -> None:
        """Show only rows whose text columns contain `text` (all rows when empty)."""
        self._text = text
        self._refilter()

    def set_range(self, value, rows=None) -> None:
        """Show only rows whose column `value[0]` lies in [`value[1]`, `value[2]`] (None: all)
        and, unless `rows` is None, that are among these frame rows (chosen on the Map)."""
        self._range = value
        self._chosen = None if rows is None else np.asarray(rows, dtype=np.int64)
        self._refilter()

    def _refilter(self) -> None:
        self.beginResetModel()
        keep = self.contains(self._text) if self._text else None
        if self._chosen is not None:
            chosen = np.zeros(len(self._order), dtype=bool)
            chosen[self._chosen[self._chosen < len(chosen)]] = True
            keep = chosen if keep is None else keep & chosen
        column = -1 if self._range is None else self.column_of(self._range[0])
        if column >= 0 and self.is_numeric(column):
            numbers, (_, low, high) = self._numbers[column], self._range
            inside = (numbers >= low) & (numbers <= high)
            keep = inside if keep is None else keep & inside
        self._keep = keep
        self._rows = self._order if self._keep is None else self._order[self._keep[self._order]]
        self.endResetModel()

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        """Reorder rows by `column` (stable; empty numbers last in both directions)."""
        if not 0 <= column < len(self._columns):
            return
        self.layoutAboutToBeChanged.emit()
        old = self._rows
        descending = order == Qt.SortOrder.DescendingOrder
        numbers = self._numbers[column]
        if numbers is not None:
            self._order = np.argsort(-numbers if descending else numbers, kind="stable")
        else:
            self._order = np.argsort(self._lower(column).to_numpy(), kind="stable")
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


def top_document_pairs(results: DocumentMatrix, form: str) -> pd.DataFrame:
    """The `TOP_PAIRS` most similar pairs of distinct documents: doc a, doc b, raw, `form`."""
    import pandas as pd

    raw = results.matrices["raw"]
    key = results.matrices[form] if form != "raw" else METRICS[results.metric].as_similarity(raw)
    rows, cols = np.triu_indices(len(raw), k=1)
    values = key[rows, cols]
    k = min(TOP_PAIRS, len(values))
    best = np.argpartition(-values, k - 1)[:k] if k else np.zeros(0, dtype=np.int64)
    best = best[np.argsort(-values[best], kind="stable")]
    a, b = rows[best], cols[best]
    ids = np.asarray(results.ids, dtype=object)
    metric, geometry = results.metric, results.geometry
    columns = {"doc a": ids[a], "doc b": ids[b], score_column(metric, "raw", geometry): raw[a, b].astype(float)}
    if form != "raw":
        columns[score_column(metric, form, geometry)] = results.matrices[form][a, b].astype(float)
    return pd.DataFrame(columns)


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


class ResultsView(QWidget):
    """Scored pairs in a sortable, filterable table with a summary line and the run's notes.

    The two texts come first and stretch to the window; score columns follow, sized to their
    headers. With human scores (any numeric input column, chosen above the table with its
    scale) a ``disagreement`` column |calibrated − human on 0-1| is added, without rescoring.
    Selecting a row selects it in `state` (plots highlight it); a selection made elsewhere
    selects the row here. A range brushed on a histogram (`state.score_range`) or texts chosen
    on the Map (`state.chosen_rows`) filter the rows until cleared. Ctrl+F focuses the filter.
    """

    def __init__(self, state, parent=None):
        super().__init__(parent)
        self.state = state
        self.model = ResultsTableModel(parent=self)

        self.filter_edit = QLineEdit(placeholderText="Filter rows by text (Ctrl+F)")
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.setToolTip("Show only rows whose text columns contain this (any case)")
        self._filter_timer = QTimer(self, singleShot=True, interval=150)
        self._filter_timer.timeout.connect(self._apply_filter)
        self.filter_edit.textChanged.connect(self._filter_timer.start)
        QShortcut(QKeySequence.StandardKey.Find, self, activated=self._focus_filter)
        self.columns_combo = QComboBox()
        self.columns_combo.setToolTip("Which score columns to show")
        self.columns_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.columns_combo.currentIndexChanged.connect(self._apply_column_set)
        self.label_combo = QComboBox()
        self.label_combo.setToolTip("The input column that holds human similarity scores (any "
                                    "numeric column): compared with the calibrated scores on 0–1")
        self.label_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.scale_low, self.scale_high = QDoubleSpinBox(), QDoubleSpinBox()
        for spin, end in ((self.scale_low, "lowest"), (self.scale_high, "highest")):
            spin.setRange(-1e6, 1e6)
            spin.setDecimals(2)
            spin.setToolTip(f"The {end} possible human score: the scale is rescaled to 0–1")
            spin.editingFinished.connect(self._labels_chosen)
        self.label_combo.currentIndexChanged.connect(self._label_column_chosen)
        self.label_bar = QWidget()
        labels = QHBoxLayout(self.label_bar)
        labels.setContentsMargins(0, 0, 0, 0)
        labels.addWidget(QLabel("Human scores:"))
        labels.addWidget(self.label_combo)
        labels.addWidget(QLabel("on the scale"))
        labels.addWidget(self.scale_low)
        labels.addWidget(QLabel("to"))
        labels.addWidget(self.scale_high)
        labels.addStretch(1)
        self.range_button = QToolButton(autoRaise=True)
        self.range_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.range_button.setToolTip("Rows are limited to a range brushed on the Distributions "
                                     "tab or to texts chosen on the Map: click to show every row again")
        self.range_button.clicked.connect(self._show_all_rows)
        self.range_button.hide()
        self.summary = QLabel(textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse,
                              wordWrap=True)
        self.notes_button = QToolButton(checkable=True, autoRaise=True)
        self.notes_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.notes_button.setToolTip("Show or hide the notes about this run")
        self.notes_button.toggled.connect(self._toggle_notes)
        self.notes = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.setContentsMargins(18, 0, 0, 4)

        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignCenter)
        self.table.selectionModel().currentRowChanged.connect(self._row_chosen)
        self.table.viewport().installEventFilter(self)
        self.frozen = FrozenTexts(self.table)
        self.table.horizontalHeader().sectionResized.connect(self._text_resized)
        self.detail = QLabel(wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setToolTip("The selected pair's full texts")
        self.hint = QLabel(EMPTY_HINT, alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.hint.setEnabled(False)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.hint)
        self.stack.addWidget(self.table)

        bar = QHBoxLayout()
        bar.addWidget(self.filter_edit, 1)
        bar.addWidget(QLabel("Columns:"))
        bar.addWidget(self.columns_combo)
        notes_bar = QHBoxLayout()
        notes_bar.addWidget(self.notes_button)
        notes_bar.addWidget(self.range_button)
        notes_bar.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.label_bar)
        layout.addWidget(self.summary)
        layout.addLayout(notes_bar)
        layout.addWidget(self.notes)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.detail)

        state.results_changed.connect(self.rebuild)
        state.row_columns_changed.connect(lambda: self._load_frame(keep_sort=True))
        state.view_changed.connect(self._view_changed)
        state.selection_changed.connect(self._select_from_state)
        state.labels_changed.connect(self._labels_changed)
        state.range_changed.connect(self._apply_range)
        self.rebuild()

    # ------------------------------------------------------------------ building

    @property
    def showing_documents(self) -> bool:
        return isinstance(self.state.results, DocumentMatrix)

    def rebuild(self) -> None:
        """Show `state.results` (pairs, a document set's top pairs, or the empty hint)."""
        self._load_frame(keep_sort=False)
        self._fill_labels()
        self._show_notes(self.state.results.notes if self.state.results is not None else [])
        self.stack.setCurrentWidget(self.table if self.model.frame is not None else self.hint)

    def _frame(self):
        """The frame to show: the results' rows, plus the disagreement with the chosen labels."""
        results = self.state.results
        if isinstance(results, ScoredPairs):
            agreement = current_agreement(self.state)
            added = {name: values for name, values in self.state.row_columns.items()
                     if name not in results.frame and len(values) == len(results.frame)}    # the Map's cluster
            if agreement is not None:
                added[DISAGREEMENT_COLUMN] = agreement.disagreement
            return results.frame.assign(**added) if added else results.frame
        if isinstance(results, DocumentMatrix):
            return top_document_pairs(results, self._document_form(results))
        return None

    def _load_frame(self, keep_sort: bool) -> None:
        header = self.table.horizontalHeader()
        sorted_by = self.model.column_names[header.sortIndicatorSection()] \
            if keep_sort and 0 <= header.sortIndicatorSection() < self.model.columnCount() else None
        order = header.sortIndicatorOrder()
        self.model.set_frame(self._frame(), self.state.profile)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        if sorted_by is not None and self.model.column_of(sorted_by) >= 0:
            self.table.sortByColumn(self.model.column_of(sorted_by), order)
        self.model._text = self.filter_edit.text().strip()
        self._fill_column_sets()                      # also orders and sizes the columns
        self._apply_range()                           # filters; updates the summary and selection

    def _document_form(self, results: DocumentMatrix) -> str:
        forms = [f for f in results.matrices if f != "raw"]
        return self.state.form if self.state.form in forms else (forms[0] if forms else "raw")

    def _order_columns(self) -> None:
        """Texts first, then the human scores, the score columns (the shown metric's raw and form
        first), the disagreement, the rest: scrolling right to other scores is seldom needed."""
        header, names = self.table.horizontalHeader(), self.model.column_names
        label = chosen_label(self.state)
        focus = {score_column(self.state.metric, form, self.state.geometry if self.state.geometry else "none")
                 for form in ("raw", self.state.form)} | {score_column(self.state.metric, form)
                                                           for form in ("raw", self.state.form)}

        def rank(column: int) -> tuple[int, int, int]:
            name = names[column]
            if not self.model.is_numeric(column) and name != TRUNCATED_COLUMN \
                    and split_score_column(name) is None:
                group = 0
            elif name == label:
                group = 1
            elif split_score_column(name) is not None:
                group = 2
            elif name == DISAGREEMENT_COLUMN:
                group = 3
            else:
                group = 4
            return group, 0 if name in focus else 1, column

        for visual, column in enumerate(sorted(range(len(names)), key=rank)):
            header.moveSection(header.visualIndex(column), visual)

    def text_columns(self) -> list[int]:
        """Columns that hold texts (they stretch to the window)."""
        return [c for c, name in enumerate(self.model.column_names)
                if not self.model.is_numeric(c) and name != TRUNCATED_COLUMN]

    def _size_columns(self) -> None:
        """Score columns as wide as their headers; the texts share the rest of the width (or
        keep `TEXT_MIN_WIDTH` each and the table scrolls)."""
        header = self.table.horizontalHeader()
        metrics, names = self.fontMetrics(), self.model.column_names
        texts = self.text_columns()
        fixed = 0
        for column in range(self.model.columnCount()):
            if column in texts:
                continue
            title = max(metrics.horizontalAdvance(line) for line in column_title(names[column]).split("\n"))
            width = max(title + 24, 72)
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(column, width)
            fixed += 0 if self.table.isColumnHidden(column) else width
        header.setStretchLastSection(False)
        room = self.table.viewport().width() - fixed
        shown = [c for c in texts if not self.table.isColumnHidden(c)]
        stretch = bool(shown) and room / len(shown) >= TEXT_MIN_WIDTH
        for column in texts:
            if stretch:
                header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
            else:
                header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
                header.resizeSection(column, max(TEXT_MIN_WIDTH, 260 if len(shown) <= 2 else TEXT_MIN_WIDTH))
        # too many columns for the width: the texts stay in place while the scores scroll
        frozen = bool(shown) and not stretch and self.model.rowCount() > 0
        if frozen:
            self.frozen.follow(shown)
        self.frozen.setVisible(frozen)

    def _text_resized(self, column: int, _old: int, _new: int) -> None:
        if self.frozen.isVisible() and column in self.text_columns():
            self.frozen.follow([c for c in self.text_columns() if not self.table.isColumnHidden(c)])

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize and watched is self.table.viewport():
            self._size_columns()                      # the texts' share follows the width
        return super().eventFilter(watched, event)

    def _fill_column_sets(self) -> None:
        metric, form = self.state.metric, self.state.form
        human = "" if self.state.human is None else " + human"
        labels = {"focus": f"Raw + {form}{human} ({metric})", "metric": f"{metric}, all forms",
                  "all": "All columns"}
        wanted = self.columns_combo.currentData() or "focus"
        self.columns_combo.blockSignals(True)
        self.columns_combo.clear()
        for key in COLUMN_SETS:
            self.columns_combo.addItem(labels[key], key)
        self.columns_combo.setCurrentIndex(COLUMN_SETS.index(wanted))
        self.columns_combo.blockSignals(False)
        self.columns_combo.setEnabled(not self.showing_documents)
        self._apply_column_set()

    def _apply_column_set(self) -> None:
        chosen = self.columns_combo.currentData()
        metric, form = self.state.metric, self.state.form
        for column, name in enumerate(self.model.column_names):
            parts = split_score_column(name)
            show = (parts is None or chosen == "all" or self.showing_documents
                    or (parts[0] == metric and (chosen == "metric" or parts[1] in ("raw", form, "human"))))
            self.table.setColumnHidden(column, not show)
        self._order_columns()
        self._size_columns()

    def _view_changed(self) -> None:
        if self.showing_documents:
            self.rebuild()
            return
        if DISAGREEMENT_COLUMN in self.model.column_names or current_agreement(self.state) is not None:
            self._load_frame(keep_sort=True)              # the disagreement follows the metric
            return
        self._fill_column_sets()
        self._update_summary()

    # ------------------------------------------------------------------ human scores

    def _fill_labels(self) -> None:
        """The label combo: every numeric input column (none when the results have none)."""
        results = self.state.results
        candidates = candidates_of(results) if isinstance(results, ScoredPairs) else []
        self.label_combo.blockSignals(True)
        self.label_combo.clear()
        self.label_combo.addItem(NO_LABEL, "")
        for name in candidates:
            self.label_combo.addItem(name, name)
        self.label_combo.setCurrentIndex(max(0, self.label_combo.findData(chosen_label(self.state) or "")))
        self.label_combo.blockSignals(False)
        self.label_bar.setVisible(bool(candidates))
        self._show_scale()

    def _show_scale(self) -> None:
        agreement = current_agreement(self.state)
        for spin, value in zip((self.scale_low, self.scale_high),
                               agreement.scale if agreement is not None else (0.0, 5.0)):
            spin.blockSignals(True)
            spin.setValue(value)
            spin.blockSignals(False)
            spin.setEnabled(agreement is not None)

    def _label_column_chosen(self) -> None:
        column = self.label_combo.currentData() or ""
        scale = (guess_scale(label_values(self.state.results.frame[column]))
                 if column and isinstance(self.state.results, ScoredPairs) else None)
        self.state.set_labels(column, scale)

    def _labels_chosen(self) -> None:
        low, high = self.scale_low.value(), self.scale_high.value()
        if high <= low:
            self._show_scale()                       # not a range: keep the previous scale
            return
        self.state.set_labels(self.label_combo.currentData() or "", (low, high))

    def _labels_changed(self) -> None:
        self._load_frame(keep_sort=True)
        self.label_combo.blockSignals(True)
        self.label_combo.setCurrentIndex(max(0, self.label_combo.findData(chosen_label(self.state) or "")))
        self.label_combo.blockSignals(False)
        self._show_scale()

    # ------------------------------------------------------------------ summary & notes

    def _update_summary(self) -> None:
        results = self.state.results
        if not isinstance(results, ScoredPairs):
            self.summary.setText("" if results is None else
                                 f"{len(results.ids)} documents · the {TOP_PAIRS} most similar pairs "
                                 f"({results.metric}); the Heatmap tab shows every pair")
            return
        frame, metric = results.frame, self.state.metric
        parts = [f"{len(frame):,} rows"]
        shown = self.model.rowCount()
        if shown != len(frame):
            parts[0] = f"{shown:,} of {len(frame):,} rows shown"
        raw = f"{metric}_raw"
        if raw in frame:
            parts.append(f"{int(np.isfinite(frame[raw].to_numpy(dtype=float)).sum()):,} scored")
        agreement = current_agreement(self.state)
        if agreement is not None and agreement.n:
            low, high = agreement.scale
            parts.append(f"vs {agreement.label} ({low:g}–{high:g} → 0–1): MAE {agreement.mae:.3f}, "
                         f"RMSE {agreement.rmse:.3f}, Spearman ×100 {agreement.spearman_x100:.1f} "
                         "(the same for raw and calibrated; see the Agreement tab)")
        saturation = results.provenance.get("background_saturation", {}).get(metric)
        if saturation:
            parts.append(f"{saturation['share_beyond_p99']:.1%} above the background's 99th percentile")
        truncated = results.provenance.get("long_texts", {}).get("pairs_truncated", 0)
        if truncated:
            parts.append(f"{TRUNCATED_MARK} {truncated:,} pairs with a truncated text")
        self.summary.setText(" · ".join(parts))

    def _show_notes(self, notes) -> None:
        self.notes.setText("\n".join(f"• {for_the_app(note)}" for note in notes))
        self.notes_button.setText(f"Notes ({len(notes)})")
        self.notes_button.setVisible(bool(notes))
        self._toggle_notes(self.notes_button.isChecked())

    def _toggle_notes(self, shown: bool) -> None:
        self.notes_button.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.notes.setVisible(shown and self.notes_button.isVisibleTo(self))

    # ------------------------------------------------------------------ filter & selection

    def _focus_filter(self) -> None:
        self.filter_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter_edit.selectAll()

    def _apply_filter(self) -> None:
        text = self.filter_edit.text().strip()
        self.model.set_filter(text)
        self._update_summary()
        self._select_from_state()

    def _apply_range(self) -> None:
        value, chosen = self.state.score_range, self.state.chosen_rows
        self.model.set_range(value, None if chosen is None or self.showing_documents else chosen[0])
        limits = [] if chosen is None else [chosen[1] or f"{len(chosen[0]):,} chosen rows"]
        if value is not None:
            column, low, high = value
            title = column_title(column).replace("\n", " · ")
            limits.insert(0, f"{title} from {low:.3g} to {high:.3g}")
        self.range_button.setText(f"✕ Only {' and '.join(limits)} — show all rows")
        self.range_button.setVisible(bool(limits))
        self._update_summary()
        self._select_from_state()

    def _show_all_rows(self) -> None:
        self.state.set_score_range(None)
        if self.state.chosen_rows is not None:
            self.state.set_chosen_rows(None)

    def _row_chosen(self, current: QModelIndex, _previous=None) -> None:
        if self.showing_documents or not current.isValid():
            return
        self.state.select_row(self.model.frame_row(current.row()))

    def _show_detail(self, row: int | None) -> None:
        results = self.state.results
        names = [getattr(self.state.input, side, None) for side in ("text_a", "text_b")]
        if row is None or not isinstance(results, ScoredPairs) or not all(n in results.frame for n in names):
            self.detail.clear()
            self.detail.hide()
            return
        frame = results.frame
        hidden = "  (hidden by the filter)" if self.model.model_row(row) < 0 else ""
        self.detail.setText(f"Row {row + 1}{hidden} · A: {frame[names[0]].iloc[row]}\n"
                            f"B: {frame[names[1]].iloc[row]}")
        self.detail.show()

    def _select_from_state(self) -> None:
        row = self.state.selected_row
        selection = self.table.selectionModel()
        shown = -1 if row is None or self.showing_documents else self.model.model_row(row)
        self._show_detail(None if self.showing_documents else row)
        if shown < 0:                                # nothing selected, or filtered out
            selection.clearSelection()
            return
        index = self.model.index(shown, 0)
        if selection.currentIndex().row() != index.row():
            selection.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                      | QItemSelectionModel.SelectionFlag.Rows)
            self.table.scrollTo(index)
