"""The Search tab: each query's best documents in a corpus, raw and calibrated.

Queries are files or folders (chosen or dropped) or a typed query; the corpus is files or
folders, or else the current input's texts. The search runs `core.search.search` in a
`TaskRunner` with progress and Cancel, and the hits fill a table that the Export dialog writes
as any report (`session.exports.export_report`, in the app's child process). Choosing a hit selects
it in `AppState` (Results row, Map points) when its texts are in the current input.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.qt.session.exports import (
    ExportDialog,
    export_figures,
    export_report,
    exported_message,
    remember_export,
    report_path,
)
from calibsim_gui.qt.widgets.child_process import child_process
from calibsim_gui.qt.widgets.messages import SEARCH_FIXES, plural, with_window_fixes
from calibsim_gui.qt.widgets.workers import TaskRunner

TEXT_FILTER = "Texts (*.txt *.md *.csv *.tsv *.jsonl);;All files (*)"
SHOWN = ("query", "rank", "doc_id", "document", "raw", "calibrated", "query_zscore", "local_minmax")
TEXT_KEYS = ("query", "doc_id", "document")
TYPED_ID = "typed query"
HEADERS = {"query": "Query", "rank": "Rank", "doc_id": "Document id", "document": "Document", "raw": "Raw",
           "calibrated": "Calibrated", "query_zscore": "Query z", "local_minmax": "Local min-max"}
TIPS = {"raw": "the model's own score", "calibrated": "0 = a typical unrelated pair, 1 = identical "
        "text (anchor ladder); comparable across queries and models",
        "query_zscore": "standard deviations above this query's mean similarity to background texts",
        "local_minmax": "0 = this query's least similar document here, 1 = its most similar: local "
                        "to one query, NOT comparable across queries or corpora"}


def run_search(query_paths, corpus_paths, embedder, profile, *, top_k: int, metric: str,
               geometry: str, cache, memory_budget, progress, should_stop, query_text: str = "",
               corpus=None):
    """Read queries (or take the typed `query_text`) and the corpus (or take `corpus`, a
    `DocumentSet`), then `search` (in a worker); progress in thousandths."""
    from calibsim_gui.core.analysis.search import search
    from calibsim_gui.core.io.inputs import Document, DocumentSet, load_documents

    progress(0, 1000, "reading queries and corpus")
    queries = (DocumentSet((Document(TYPED_ID, query_text, Path(TYPED_ID)),), (), 0, 0, ()) if query_text
               else load_documents(query_paths, memory_budget=memory_budget))
    corpus = corpus if corpus is not None else load_documents(corpus_paths, memory_budget=memory_budget)

    def thousandths(done, total, message):
        progress(int(1000 * done / total) if total else 0, 1000, message)

    return search(queries, corpus, embedder, profile, metric=metric, top_k=top_k, geometry=geometry,
                  cache=cache, progress=thousandths, should_stop=should_stop,
                  memory_budget=memory_budget)


class PathList(QListWidget):
    """Files and folders, added by buttons or dropped from a file manager."""

    changed = Signal()

    def __init__(self, placeholder: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DropOnly)
        self.setToolTip(placeholder)
        self.setMaximumHeight(90)

    def paths(self) -> list[str]:
        return [self.item(i).text() for i in range(self.count())]

    def add_paths(self, paths) -> None:
        known = set(self.paths())
        for path in map(str, paths):
            if path not in known:
                self.addItem(path)
                known.add(path)
        self.changed.emit()

    def clear_paths(self) -> None:
        self.clear()
        self.changed.emit()

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dragMoveEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        self.add_paths(url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile())
        event.acceptProposedAction()


class HitsModel(QAbstractTableModel):
    """The hits frame's readable columns (query, rank, document and the metric's scores)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.frame, self.columns = None, []

    def set_hits(self, frame, metric: str) -> None:
        self.beginResetModel()
        self.frame = frame
        self.columns = [(key, key if key in ("rank", *TEXT_KEYS) else f"{metric}_{key}")
                        for key in SHOWN]
        self.columns = [(k, c) for k, c in self.columns if frame is not None and c in frame.columns]
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if self.frame is None or parent.isValid() else len(self.frame)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        key, column = self.columns[index.column()]
        value = self.frame[column].iat[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            if key == "query" and index.row() and self.frame[column].iat[index.row() - 1] == value:
                return ""                             # said once, on the query's first hit
            if key in TEXT_KEYS:
                return str(value)
            if key == "rank":
                return str(int(value))
            return (f"{value:+.2f}" if key == "query_zscore" else
                    f"{value:.4f}" if key == "raw" else f"{value:.3f}")
        if role == Qt.ItemDataRole.ToolTipRole and key in TEXT_KEYS:
            return str(value)
        if role == Qt.ItemDataRole.TextAlignmentRole and key not in TEXT_KEYS:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        key = self.columns[section][0]
        if role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[key]
        if role == Qt.ItemDataRole.ToolTipRole:
            return TIPS.get(key)
        return None


class SearchView(QWidget):
    """Pick queries and a corpus, search for the top-k hits of each query, read and export them.

    `settings` (the window's QSettings) keep the Export dialog's choices as File ▸ Export keeps
    them; `run_sources()` (`Session.run_sources`) names the profile file and model folder in use,
    which an exported report names as File ▸ Export's does."""

    def __init__(self, state, *, settings, run_sources, cache=lambda: None, memory_budget=lambda: None,
                 parent=None):
        super().__init__(parent)
        self.setObjectName("search")
        self.state = state
        self.settings, self._run_sources = settings, run_sources
        self._cache, self._budget = cache, memory_budget
        self.hits = None
        self.hits_profile = self.hits_sources = None
        self.runner = TaskRunner("searching", self)
        self.export_runner = TaskRunner("exporting search results", self)

        self.queries = PathList("Query files or folders: .txt/.md one query per line, CSV/JSONL "
                                "(drop them here)")
        self.corpus = PathList("Corpus files or folders: .txt/.md one document per line, CSV/JSONL "
                               "(drop them here)")
        inputs = QGridLayout()
        for row, (title, paths) in enumerate((("Queries", self.queries), ("Corpus", self.corpus))):
            box = QGroupBox(title)
            layout = QHBoxLayout(box)
            layout.addWidget(paths, 1)
            buttons = QVBoxLayout()
            for text, slot in (("Add files…", lambda _=False, p=paths: self._choose_files(p)),
                               ("Add folder…", lambda _=False, p=paths: self._choose_folder(p)),
                               ("Clear", paths.clear_paths)):
                button = QPushButton(text)
                button.clicked.connect(slot)
                buttons.addWidget(button)
            layout.addLayout(buttons)
            inputs.addWidget(box, 0, row)
            paths.changed.connect(self._update_buttons)

        self.query_edit = QLineEdit(placeholderText="…or type a query and press Enter")
        self.query_edit.setClearButtonEnabled(True)
        self.query_edit.setToolTip("Search for this text in place of the query files; without corpus "
                                   "files it is ranked against the current input's texts")
        self.query_edit.textChanged.connect(self._update_buttons)
        self.query_edit.returnPressed.connect(self.start_search)
        self.top_k = QSpinBox(minimum=1, maximum=1000, value=10)
        self.top_k.setToolTip("hits kept per query")
        self.search_button = QPushButton("Search")
        self.search_button.clicked.connect(self.start_search)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.show_button = QPushButton("Show in every view")
        self.show_button.setToolTip("Limit Results, Distributions and the Map to the input's pairs that "
                                    "hold a hit (View ▸ Show every row clears it)")
        self.show_button.clicked.connect(self.show_hits)
        self.export_button = QPushButton("Export…")
        self.export_button.setToolTip("Write the hits as an HTML/PDF report, XLSX, JSON or CSV")
        self.export_button.clicked.connect(self.export)
        self.progress = QProgressBar(maximum=1000)
        self.progress.setTextVisible(False)
        self.message = QLabel()
        self.message.setWordWrap(True)
        controls = QHBoxLayout()
        controls.addWidget(self.query_edit, 2)
        controls.addWidget(QLabel("Top k:"))
        controls.addWidget(self.top_k)
        controls.addWidget(self.search_button)
        controls.addWidget(self.cancel_button)
        controls.addWidget(self.progress, 1)
        controls.addWidget(self.show_button)
        controls.addWidget(self.export_button)

        self.model = HitsModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        self.table.selectionModel().currentRowChanged.connect(self._hit_chosen)
        self.note = QLabel("Local min-max is local to each query (its best hit is always 1): compare "
                           "hits across queries with the calibrated score or the query z-score.")
        self.note.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.addLayout(inputs)
        layout.addLayout(controls)
        layout.addWidget(self.message)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.note)

        self.runner.progress.connect(self._progress)
        self.runner.finished.connect(self._searched)
        self.runner.failed.connect(self._failed)
        self.runner.cancelled.connect(lambda: self._done("Search cancelled."))
        self.runner.busy.connect(self._update_buttons)
        self.export_runner.finished.connect(lambda written: self.message.setText(exported_message(written)))
        self.export_runner.failed.connect(self._failed)
        self.export_runner.busy.connect(self._update_buttons)
        state.model_changed.connect(self._update_buttons)
        state.profile_changed.connect(self._update_buttons)
        state.input_changed.connect(self._update_buttons)
        state.results_changed.connect(self._update_buttons)
        self._update_buttons()

    # ------------------------------------------------------------------ inputs

    def _choose_files(self, paths: PathList) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Choose files", "", TEXT_FILTER)
        paths.add_paths(files)

    def _choose_folder(self, paths: PathList) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose a folder")
        if folder:
            paths.add_paths([folder])

    def set_inputs(self, queries, corpus) -> None:
        self.queries.clear()
        self.corpus.clear()
        self.queries.add_paths(queries)
        self.corpus.add_paths(corpus)

    def _ready(self) -> bool:
        return (self.state.embedder is not None and self.state.profile is not None
                and (self.queries.count() > 0 or bool(self.query_edit.text().strip()))
                and (self.corpus.count() > 0 or self._input_corpus() is not None))

    def _input_corpus(self):
        """The current input's texts as a corpus (pairs: both sides, ids "row 3 A"), or None."""
        from calibsim_gui.core.analysis.projection import pair_texts
        from calibsim_gui.core.io.inputs import Document, DocumentSet

        table = self.state.input
        if table is None:
            return None
        if not hasattr(table, "text_a"):
            return table
        texts, ids, _, _ = pair_texts(table)
        source = Path(str(getattr(table, "path", "input")))
        return DocumentSet(tuple(Document(i, t, source) for i, t in zip(ids, texts)), (source,), 0, 0, ())

    def _update_buttons(self, _=None) -> None:
        running = self.runner.running
        self.search_button.setEnabled(self._ready() and not running)
        self.cancel_button.setEnabled(running)
        self.export_button.setEnabled(self.hits is not None and not self.export_runner.running)
        self.show_button.setEnabled(self.hits is not None and self.state.results is not None)
        hints = ("Load a model and its references, then add queries and a corpus.",
                 "Add query and corpus files or folders (or drop them), then Search.")
        if not running and self.hits is None and self.message.text() in ("", *hints):
            self.message.setText(hints[self.state.embedder is not None and self.state.profile is not None])

    # ------------------------------------------------------------------ search

    def start_search(self) -> None:
        if not self._ready():
            return
        state = self.state
        self.progress.setValue(0)
        self.message.setText("Searching…")
        typed = self.query_edit.text().strip()
        self.runner.start(run_search, self.queries.paths(), self.corpus.paths(), state.embedder,
                          state.profile, top_k=self.top_k.value(), metric=state.metric,
                          geometry=state.geometry, cache=self._cache(), memory_budget=self._budget(),
                          query_text=typed,
                          corpus=None if self.corpus.count() else self._input_corpus())
        self._update_buttons()

    def _progress(self, done: int, total: int, message: str) -> None:
        self.progress.setValue(int(1000 * done / total) if total else 0)
        if message:
            self.message.setText(message)

    def _searched(self, hits) -> None:
        self.hits, self.hits_profile = hits, self.state.profile
        # the search reads its own files: the input's columns, encoding and human calibration are not its sources
        self.hits_sources = {k: v for k, v in self._run_sources().items() if k in ("profile_file", "model")}
        search = hits.provenance["search"]
        self.model.set_hits(hits.frame, search["metric"])
        header = self.table.horizontalHeader()
        for column in range(self.model.columnCount()):
            mode = (QHeaderView.ResizeMode.Stretch if self.model.columns[column][0] in ("query", "document")
                    else QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(column, mode)
        self.progress.setValue(1000)
        self._done(f"{search['queries']['count']:,} queries against {search['corpus']['count']:,} "
                   f"documents: top {search['top_k']} by {search['metric']}"
                   + ("" if search["geometry"] == "none" else f" under {search['geometry']}") + ".")

    def _failed(self, message: str) -> None:
        self._done(with_window_fixes(message.partition("\n\nTraceback")[0], SEARCH_FIXES))

    def _done(self, text: str) -> None:
        self.message.setText(text)
        self._update_buttons()

    # ------------------------------------------------------------------ selection

    def _hit_chosen(self, current, _previous=None) -> None:
        """A hit chosen: its pair is selected everywhere when its texts are in the current input."""
        if not current.isValid() or self.hits is None:
            return
        frame = self.hits.frame
        row = self.state.pair_with_texts(frame["document"].iat[current.row()], frame["query"].iat[current.row()])
        if row is not None:
            self.state.select_row(row)
        self.message.setText("Selected in Results and on the Map." if row is not None else
                             "This document is not in the current input: nothing to select in Results.")

    def show_hits(self) -> None:
        """Limit every view to the current input's pairs that hold a hit (`state.chosen_rows`)."""
        if self.hits is None:
            return
        rows = self.state.rows_with_texts(self.hits.frame["document"].astype(str))
        if len(rows):
            self.state.set_chosen_rows(rows, f"the {plural(len(rows), 'pair')} holding a search hit")
        self.message.setText(f"Every view shows the {plural(len(rows), 'pair')} holding a hit." if len(rows) else
                             "None of the hits is in the current input: nothing to show.")

    # ------------------------------------------------------------------ remembered view

    def view_state(self) -> dict:
        """The search set-up a project keeps: query files or typed query, corpus, k."""
        return {"queries": self.queries.paths(), "corpus": self.corpus.paths(),
                "query_text": self.query_edit.text(), "top_k": self.top_k.value()}

    def restore_view_state(self, state: dict) -> None:
        """Set up the search of `view_state` (unknown keys ignored, missing ones kept)."""
        if not isinstance(state, dict):
            return
        for key, paths in (("queries", self.queries), ("corpus", self.corpus)):
            value = state.get(key)
            if isinstance(value, list) and all(isinstance(p, str) for p in value):
                paths.clear()
                paths.add_paths(value)
        if isinstance(state.get("query_text"), str):
            self.query_edit.setText(state["query_text"])
        if isinstance(state.get("top_k"), int) and not isinstance(state["top_k"], bool):
            self.top_k.setValue(state["top_k"])

    # ------------------------------------------------------------------ export

    def export(self) -> None:
        if self.hits is None:
            return
        metric = self.hits.provenance["search"]["metric"]
        stem = Path(self.queries.paths()[0]).stem if self.queries.count() else "search"
        dialog = ExportDialog(default_path=report_path(self.settings, f"{stem}-search"), metrics=[metric],
                              forms=["calibrated"], metric=metric, form="calibrated",
                              figures=export_figures(self.settings), parent=self,
                              anchors=self.hits_profile.anchors)
        child_process().warm_up()            # the child imports matplotlib while the user chooses
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.start_export(**dialog.options())

    def start_export(self, *, path: str, metric: str, form: str, figures: bool, force: bool) -> None:
        """Write the hits as File ▸ Export writes results: drawn and written in the app's child
        process, with progress and Cancel in the status bar; the choices are kept for the next export."""
        remember_export(self.settings, path, figures)
        self.export_runner.start(export_report, self.hits, self.hits_profile, path=path, metric=metric,
                                 form=form, figures=figures, force=force, sources=self.hits_sources)
