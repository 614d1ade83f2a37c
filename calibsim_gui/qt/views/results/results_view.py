"""The results view: scored pairs (or every pair of a document set), sortable and filterable,
with column filters shown as chips (the model is `results_model.ResultsTableModel`)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QItemSelectionModel, QModelIndex, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QStackedWidget,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.distributions import DISAGREEMENT_COLUMN, guess_scale
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import (
    ScoredPairs,
    score_column,
    split_score_column,
)
from calibsim_gui.qt.session.human_scores import (
    candidates_of,
    chosen_label,
    current_agreement,
    labels_of,
)
from calibsim_gui.qt.views.results.column_filters import (
    ColumnFilter,
    ColumnFilterDialog,
    FilterChips,
)
from calibsim_gui.qt.views.results.frozen_texts import FrozenTexts
from calibsim_gui.qt.views.results.results_summary import results_summary
from calibsim_gui.qt.widgets.messages import EMPTY_HINT, for_the_app
from calibsim_gui.qt.widgets.results_model import (
    FLAG_COLUMNS,
    ResultsTableModel,
    column_title,
)

COLUMN_SETS = ("focus", "metric", "all")       # raw + chosen form / all forms of metric / all
TEXT_MIN_WIDTH = 200            # below this a text column stops stretching and the table scrolls
NO_LABEL = "(none)"


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
        self.setObjectName("results")
        self.state = state
        self.model = ResultsTableModel(parent=self)
        self._kept_sort = None            # (input, column, order) while its results are made again

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
        self.column_filters: list[ColumnFilter] = []
        self.chips = FilterChips()
        self.chips.removed.connect(self._remove_limit)
        self.chips.cleared.connect(self.clear_filters)
        self.filter_button = QToolButton(text="Filter column…")
        self.filter_button.setToolTip("Keep rows whose score lies in a range or whose text contains "
                                      "a word (Ctrl+Shift+F; also on a column header's right-click menu)")
        self.filter_button.clicked.connect(lambda: self.ask_filter())
        QShortcut(QKeySequence("Ctrl+Shift+F"), self, activated=self._filter_current_column)
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
        self.table.horizontalHeader().setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.horizontalHeader().customContextMenuRequested.connect(self._header_menu)
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
        bar.addWidget(self.filter_button)
        bar.addWidget(QLabel("Columns:"))
        bar.addWidget(self.columns_combo)
        notes_bar = QHBoxLayout()
        notes_bar.addWidget(self.notes_button)
        notes_bar.addWidget(self.chips)
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
        state.filters_cleared.connect(self._filters_cleared)       # before range_changed refilters
        state.range_changed.connect(self._apply_range)
        state.input_changed.connect(self._input_changed)
        self.rebuild()

    # ------------------------------------------------------------------ building

    @property
    def showing_documents(self) -> bool:
        return isinstance(self.state.results, DocumentMatrix)

    def rebuild(self) -> None:
        """Show `state.results` (pairs, a document set's top pairs, or the empty hint); the same
        input scored again (another engine, references) keeps its sort."""
        header, kept = self.table.horizontalHeader(), self._kept_sort
        if self.state.results is None and 0 <= header.sortIndicatorSection() < self.model.columnCount():
            self._kept_sort = (self.state.input, self.model.column_names[header.sortIndicatorSection()],
                               header.sortIndicatorOrder())
        self._load_frame(keep_sort=False)
        if self.state.results is not None:
            self._kept_sort = None
            if kept is not None and kept[0] is self.state.input and self.model.column_of(kept[1]) >= 0:
                self.table.sortByColumn(self.model.column_of(kept[1]), kept[2])
        self._fill_labels()
        self._show_notes(self.state.results.notes if self.state.results is not None else [])
        self.stack.setCurrentWidget(self.table if self.state.results is not None else self.hint)

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
        return None

    def _load_frame(self, keep_sort: bool) -> None:
        header = self.table.horizontalHeader()
        sorted_by = self.model.column_names[header.sortIndicatorSection()] \
            if keep_sort and 0 <= header.sortIndicatorSection() < self.model.columnCount() else None
        order = header.sortIndicatorOrder()
        results = self.state.results
        if isinstance(results, DocumentMatrix):
            form = self._document_form(results)
            self.model.set_document_pairs(results, form)
            if sorted_by is None:               # most similar pairs first
                sorted_by = score_column(results.metric, form, results.geometry)
                order = Qt.SortOrder.DescendingOrder
        else:
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
            if not self.model.is_numeric(column) and name not in FLAG_COLUMNS \
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
                if not self.model.is_numeric(c) and name not in FLAG_COLUMNS]

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

    # ------------------------------------------------------------------ remembered view

    def view_state(self) -> dict:
        """The view choices a project keeps: column set, sort, text filter and column filters."""
        header = self.table.horizontalHeader()
        section = header.sortIndicatorSection()
        sort = self.model.column_names[section] if 0 <= section < self.model.columnCount() else None
        return {"columns": self.columns_combo.currentData() or "focus",
                "sort": None if sort is None else
                {"column": sort, "descending": header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder},
                "text_filter": self.filter_edit.text(),
                "filters": [f.to_json() for f in self.column_filters]}

    def restore_view_state(self, state: dict) -> None:
        """Show the choices of `view_state` (unknown keys are ignored; missing ones keep the
        current choice; a sort or filter of a column these results lack is dropped)."""
        if not isinstance(state, dict):
            return
        if state.get("columns") in COLUMN_SETS:
            self.columns_combo.setCurrentIndex(self.columns_combo.findData(state["columns"]))
        if isinstance(state.get("text_filter"), str):
            self._filter_timer.stop()
            self.filter_edit.blockSignals(True)
            self.filter_edit.setText(state["text_filter"])
            self.filter_edit.blockSignals(False)
            self.model._text = state["text_filter"].strip()
        if isinstance(state.get("filters"), list):
            self.column_filters = [f for value in state["filters"] if (f := ColumnFilter.from_json(value))
                                   is not None and self.model.column_of(f.column) >= 0]
        sort = state.get("sort")
        if isinstance(sort, dict) and self.model.column_of(str(sort.get("column"))) >= 0:
            order = Qt.SortOrder.DescendingOrder if sort.get("descending") else Qt.SortOrder.AscendingOrder
            self.table.sortByColumn(self.model.column_of(sort["column"]), order)
        self._apply_range()

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
        scale = (guess_scale(labels_of(self.state.results, column))
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
        self.summary.setText(results_summary(self.state, self.model.rowCount()))

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
        self._filtered()

    def _apply_range(self) -> None:
        value, chosen = self.state.score_range, self.state.chosen_rows
        self.model.set_range(value, None if chosen is None else chosen[0], self.column_filters)
        chips = [(("column", f.column), f.label(column_title(f.column).replace("\n", " · ")),
                  "Rows are limited by this column's filter") for f in self.column_filters]
        if value is not None:
            column, low, high = value
            title = column_title(column).replace("\n", " · ")
            chips.insert(0, ("range", f"{title} from {low:.3g} to {high:.3g}",
                             "A range brushed on the Distributions tab"))
        if chosen is not None:
            chips.append(("chosen", chosen[1] or f"{len(chosen[0]):,} chosen rows",
                          "Chosen on the Map or from the Search tab's hits"))
        self.chips.set_chips(chips)
        self._filtered()

    def _filtered(self) -> None:
        """The rows shown changed: every view marks them (`state.shown_rows`), the summary counts them."""
        self.state.set_shown_rows(self.model.kept_rows() if self.state.results is not None else None)
        self._update_summary()
        self._select_from_state()

    def _remove_limit(self, key) -> None:
        """A chip was removed: drop its limit (the brushed range and the Map's choice in `state`)."""
        if key == "range":
            self.state.set_score_range(None)
        elif key == "chosen":
            self.state.set_chosen_rows(None)
        else:
            self.column_filters = [f for f in self.column_filters if f.column != key[1]]
            self._apply_range()

    def clear_filters(self) -> None:
        """Every limit at once, in every view: the text filter, column filters, the brushed range
        and the Map's choice (`state.clear_filters`)."""
        self.state.clear_filters()

    def _filters_cleared(self) -> None:
        self.column_filters = []
        self._filter_timer.stop()
        self.filter_edit.blockSignals(True)
        self.filter_edit.clear()
        self.filter_edit.blockSignals(False)
        self.model._text = ""

    def set_column_filter(self, value: ColumnFilter) -> None:
        """Filter `value.column` by `value` (in place of its earlier filter)."""
        self.column_filters = [f for f in self.column_filters if f.column != value.column] + [value]
        self._apply_range()

    def _input_changed(self) -> None:
        self.column_filters = []                       # another input's columns

    def _filterable(self) -> list[tuple[str, str, bool]]:
        return [(name, column_title(name), self.model.is_numeric(c)) for c, name
                in enumerate(self.model.column_names) if not self.table.isColumnHidden(c)
                and name not in FLAG_COLUMNS]

    def _limits(self, name: str) -> tuple[float, float]:
        numbers = self.model.numbers(self.model.column_of(name))
        finite = numbers[np.isfinite(numbers)]
        return (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)

    def ask_filter(self, column: str | None = None) -> None:
        """Ask for a filter of `column` (None: of a column chosen in the dialog)."""
        if not self.model.columnCount():
            return
        current = next((f for f in self.column_filters if f.column == column), None)
        dialog = ColumnFilterDialog(self._filterable(), column=column, current=current, limits=self._limits,
                                    parent=self)
        if dialog.exec() == ColumnFilterDialog.DialogCode.Accepted and (chosen := dialog.chosen()) is not None:
            self.set_column_filter(chosen)

    def _filter_current_column(self) -> None:
        current = self.table.currentIndex()
        self.ask_filter(self.model.column_names[current.column()] if current.isValid() else None)

    def _header_menu(self, pos) -> None:
        column = self.table.horizontalHeader().logicalIndexAt(pos)
        if not 0 <= column < self.model.columnCount():
            return
        name = self.model.column_names[column]
        menu = QMenu(self)
        title = column_title(name).replace("\n", " · ")
        menu.addAction(f"Filter “{title}”…", lambda: self.ask_filter(name))
        if any(f.column == name for f in self.column_filters):
            menu.addAction("Remove this column's filter", lambda: self._remove_limit(("column", name)))
        menu.exec(self.table.horizontalHeader().mapToGlobal(pos))

    def _row_chosen(self, current: QModelIndex, _previous=None) -> None:
        if not current.isValid():
            return
        self.state.select_row(self.model.frame_row(current.row()))

    def _show_detail(self, row: int | None) -> None:
        results = self.state.results
        documents = self.state.selected_documents() if row is not None else None
        if documents is not None:
            hidden = "  (hidden by the filter)" if self.model.model_row(row) < 0 else ""
            self.detail.setText("\n".join(f"{side}: {results.ids[d]}{hidden if side == 'A' else ''} — "
                                          f"{results.texts[d] if len(results.texts) > d else ''}"
                                          for side, d in zip("AB", documents)))
            self.detail.show()
            return
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
        shown = -1 if row is None else self.model.model_row(row)
        self._show_detail(row)
        if shown < 0:                                # nothing selected, or filtered out
            selection.clearSelection()
            return
        index = self.model.index(shown, 0)
        if selection.currentIndex().row() != index.row():
            selection.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                      | QItemSelectionModel.SelectionFlag.Rows)
            self.table.scrollTo(index)
