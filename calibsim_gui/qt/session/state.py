"""The app's shared state: what is loaded and chosen, with a signal for every change.

Widgets read from `AppState` and subscribe to its signals; they change it only through its
setters. Heavy work (loading, encoding, building) happens in `TaskRunner`s, never here.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QObject, Signal

from calibsim_gui.core.geometry.metrics import METRICS

# What people read for a calibrated form; the ids ("anchor_minmax") stay the data of combos
# and the column names of tables and files.
COMPARED_FORMS = ("calibrated", "human")
FORM_LABELS = {
    "raw": "raw score", "calibrated": "calibrated (0-1)",
    "calibrated_lo": "reference uncertainty, low", "calibrated_hi": "reference uncertainty, high",
    "calibrated_band80_lo": "80 % of people, low", "calibrated_band80_hi": "80 % of people, high",
    "calibrated_band95_lo": "95 % of people, low", "calibrated_band95_hi": "95 % of people, high",
    "anchor_minmax": "min-max over anchors",
    "bg_minmax": "min-max over background", "bg_percentile": "background percentile",
    "bg_zscore": "background z-score", "bg_surprise": "background surprise",
    "query_zscore": "z-score per query", "human": "expected human similarity",
}


def form_label(form: str) -> str:
    """'bg_percentile' -> 'background percentile' (an unknown id is shown as it is)."""
    return FORM_LABELS.get(form, form.replace("_", " "))


def pair_row(n: int, a, b):
    """The number of the pair of documents `a` and `b` (any order, a != b) of a set of `n`, as
    ``np.triu_indices(n, k=1)`` lists the pairs (the document-set Results rows); arrays of
    documents give an array of numbers."""
    a, b = np.minimum(a, b), np.maximum(a, b)
    row = a * n - a * (a + 1) // 2 + (b - a - 1)
    return int(row) if np.ndim(row) == 0 else row


def pairs_among(n: int, documents) -> np.ndarray:
    """The numbers (`pair_row`, ascending) of every pair of two of `documents` in a set of `n`."""
    chosen = np.unique(np.asarray(documents, dtype=np.int64))
    a, b = np.triu_indices(len(chosen), k=1)
    return np.sort(pair_row(n, chosen[a], chosen[b]))


def document_pair(n: int, row: int) -> tuple[int, int]:
    """The documents (a, b), a < b, of pair number `row` of a set of `n` (inverse of `pair_row`)."""
    starts = np.arange(n) * n - np.arange(n) * (np.arange(n) + 1) // 2
    a = int(np.searchsorted(starts, row, side="right")) - 1
    return a, int(row - starts[a] + a + 1)


class AppState(QObject):
    """Current model, reference profile, input, results and view choices.

    Attributes
    ----------
    embedder : SentenceTransformerEmbedder or None
        The loaded model (None while the first model loads).
    model_info : ModelInfo or None
    device : str
        The device the user asked for ("auto", "cpu", "cuda", "mps").
    profile : ReferenceProfile or None
        The references in use: anchors + (optionally) background.
    profile_label : str
        Where the profile came from, for people ("built-in", a file name, "built from 3 files").
    input : PairTable or DocumentSet or None
    results : ScoredPairs or DocumentMatrix or None
        Results of the current input with the current model and profile.
    metric : str
        Metric shown in plots and heatmap ("cosine" ...).
    form : str
        Calibrated form shown next to raw ("calibrated", "bg_percentile" ...).
    geometry : str
        Geometry fix the input is also scored under ("none" = raw embeddings only).
    human : HumanFit or None
        A human calibration of the current model; adds ``<metric>_human`` to the results.
    selected_row : int or None
        The selected pair, highlighted in every view: a row of `results.frame` for pairs, or for
        a document set the pair's number in `np.triu_indices(n, k=1)` order (see `pair_row`).
    label_column, label_scale : str or None, (low, high) or None
        The input column read as human scores and its scale, chosen in the results view
        (None: the column the input was loaded with, on a guessed scale).
    compared_form : str
        The form compared with the human scores (Agreement tab, ``disagreement``): "calibrated",
        or "human" once a human calibration is fitted.
    score_range : (column, low, high) or None
        A range of one score column brushed on a histogram: the table shows only those rows.
    chosen_rows : (ndarray of rows, description) or None
        Rows of `results.frame` chosen on another view (the texts selected on the Map): the
        table shows only those rows; `range_changed` says when it changes too.
    shown_rows : ndarray or None
        The rows every filter together leaves (the brushed range, the Map's choice, the table's
        text and column filters), published by the Results table for the other views to mark;
        None: every row. `shown_rows_changed` says when it changes; `clear_filters` shows every
        row again (one action, the filters of every view).
    row_columns : dict of str to ndarray
        Columns of one value per row of `results.frame` that another view adds to the table (the
        Map's ``cluster``); `row_columns_changed` says when they change.
    """

    model_changed = Signal()
    profile_changed = Signal()
    input_changed = Signal()
    results_changed = Signal()
    view_changed = Signal()              # metric or form changed
    selection_changed = Signal()
    geometry_changed = Signal()
    human_changed = Signal()
    labels_changed = Signal()            # human-score column or scale chosen
    range_changed = Signal()             # a score range brushed (or cleared)
    row_columns_changed = Signal()       # columns added to the results by another view
    shown_rows_changed = Signal()        # the rows every filter leaves changed
    filters_cleared = Signal()           # every view drops its filters (`clear_filters`)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.embedder = None
        self.model_info = None
        self.device = "auto"
        self.profile = None
        self.profile_label = ""
        self.input = None
        self.results = None
        self.metric = "cosine"
        self.form = "calibrated"
        self.geometry = "none"
        self.human = None
        self.selected_row = None
        self.label_column = None
        self.label_scale = None
        self.compared_form = "calibrated"
        self.score_range = None
        self.chosen_rows = None
        self.shown_rows = None
        self.row_columns: dict = {}

    def set_model(self, embedder, info) -> None:
        """A new model invalidates the profile and results (they belong to one model); a human
        calibration stays when the model is the same (another engine or precision of it)."""
        self.embedder, self.model_info = embedder, info
        self.profile, self.profile_label = None, ""
        if self.human is not None and self.human.calibrator.model != embedder.fingerprint.id:
            self.human = None                 # fitted on another model's scores
        self.results = None
        self.model_changed.emit()
        self.profile_changed.emit()
        self.results_changed.emit()

    def set_profile(self, profile, label: str) -> None:
        self.profile, self.profile_label = profile, label
        self.results = None
        self.profile_changed.emit()
        self.results_changed.emit()

    def set_input(self, value) -> None:
        self.input = value
        self.results = None
        self.selected_row = None
        self.label_column = self.label_scale = self.score_range = None     # another file's columns
        filtered = self.shown_rows is not None
        self.chosen_rows = self.shown_rows = None
        self.row_columns = {}
        self.input_changed.emit()
        self.results_changed.emit()
        if filtered:
            self.shown_rows_changed.emit()

    def set_results(self, results) -> None:
        self.results = results
        self.selected_row = None
        filtered = self.shown_rows is not None
        self.score_range = self.chosen_rows = self.shown_rows = None
        self.row_columns = {}                 # the view that added them adds them again
        self.results_changed.emit()
        if filtered:
            self.shown_rows_changed.emit()

    def set_view(self, *, metric: str | None = None, form: str | None = None) -> None:
        if metric is not None:
            if metric not in METRICS:
                raise ValueError(f"unknown metric {metric!r}")
            self.metric = metric
        if form is not None:
            self.form = form
        self.view_changed.emit()

    def set_geometry(self, geometry: str) -> None:
        """Score under another geometry fix too: the results of the old choice are dropped."""
        if geometry != self.geometry:
            self.geometry = geometry
            self.results = None
            self.geometry_changed.emit()
            self.results_changed.emit()

    def set_human(self, fit) -> None:
        """Use a human calibration (None: stop using it); results are computed again."""
        self.human = fit
        self.results = None
        self.human_changed.emit()
        self.results_changed.emit()

    def select_row(self, row: int | None) -> None:
        if row != self.selected_row:
            self.selected_row = row
            self.selection_changed.emit()

    def selected_documents(self) -> tuple[int, int] | None:
        """For a document set, the two documents of the selected pair (None: none, or pairs)."""
        from calibsim_gui.core.analysis.matrices import DocumentMatrix

        if self.selected_row is None or not isinstance(self.results, DocumentMatrix):
            return None
        return document_pair(len(self.results.ids), self.selected_row)

    def pair_with_texts(self, text: str, other: str | None = None) -> int | None:
        """The selectable pair holding `text` (a `selected_row` value), or None when no pair does.

        Pairs: the first row with `text` on either side, preferring one with `other` on the other
        side. A document set: `text`'s document paired with `other`'s when that is in the set too,
        else with its most similar document.
        """
        from calibsim_gui.core.analysis.matrices import DocumentMatrix

        results, table = self.results, self.input
        if isinstance(results, DocumentMatrix):
            where = {t: i for i, t in enumerate(results.texts)}
            return self.document_pair_row(where[text], where.get(other)) if text in where else None
        if results is None or not hasattr(table, "text_a") or table.text_a not in results.frame:
            return None
        first, second = (results.frame[side].astype(str).to_numpy() for side in (table.text_a, table.text_b))
        rows = np.flatnonzero((first == text) | (second == text))
        both = rows[(first[rows] == other) | (second[rows] == other)] if other is not None else rows[:0]
        return int(both[0]) if len(both) else int(rows[0]) if len(rows) else None

    def rows_with_texts(self, texts) -> np.ndarray:
        """The results rows (ascending) of the pairs holding any of `texts`: for a document set,
        the pairs between two of those documents."""
        from calibsim_gui.core.analysis.matrices import DocumentMatrix

        results, table, texts = self.results, self.input, set(texts)
        if isinstance(results, DocumentMatrix):
            return pairs_among(len(results.ids), [i for i, t in enumerate(results.texts) if t in texts])
        if results is None or not hasattr(table, "text_a") or table.text_a not in results.frame:
            return np.zeros(0, dtype=np.int64)
        hit = np.zeros(len(results.frame), dtype=bool)
        for side in (table.text_a, table.text_b):
            hit |= results.frame[side].astype(str).isin(texts).to_numpy()
        return np.flatnonzero(hit)

    def document_pair_row(self, a: int, b: int | None = None) -> int | None:
        """A document set's pair of documents `a` and `b` (a `selected_row` value); `b` None or
        `a`: `a` with its most similar document. None when the results are no document set of
        two or more documents."""
        from calibsim_gui.core.analysis.matrices import DocumentMatrix

        results = self.results
        if not isinstance(results, DocumentMatrix) or len(results.ids) < 2:
            return None
        if b is None or b == a:
            similarity = METRICS[results.metric].as_similarity(results.matrices["raw"][a].astype(float))
            similarity[a] = -np.inf
            b = int(np.argmax(similarity))
        return pair_row(len(results.ids), a, b)

    def set_compared_form(self, form: str) -> None:
        """Compare human scores with ``<metric>_<form>``: "calibrated" or "human" (the fitted map)."""
        if form not in COMPARED_FORMS:
            raise ValueError(f"unknown compared form {form!r}")
        self.compared_form = form
        self.labels_changed.emit()

    def set_labels(self, column: str | None, scale=None) -> None:
        """Read `column` as human scores on `scale` (low, high); nothing is scored again."""
        self.label_column, self.label_scale = column, None if scale is None else tuple(scale)
        self.labels_changed.emit()

    def set_score_range(self, value) -> None:
        """Show only rows whose `column` lies in [low, high]; None shows every row."""
        value = None if value is None else (str(value[0]), float(value[1]), float(value[2]))
        if value != self.score_range:
            self.score_range = value
            self.range_changed.emit()

    def set_chosen_rows(self, rows, description: str = "") -> None:
        """Show only these rows of the results (None: every row); `description` says where they
        were chosen ("12 texts chosen on the Map")."""
        self.chosen_rows = None if rows is None else (np.unique(np.asarray(rows, dtype=np.int64)),
                                                      str(description))
        self.range_changed.emit()

    def set_shown_rows(self, rows) -> None:
        """The rows left by every filter (None: all), for the views that mark them."""
        rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        same = (rows is None and self.shown_rows is None) or (
            rows is not None and self.shown_rows is not None and np.array_equal(rows, self.shown_rows))
        if not same:
            self.shown_rows = rows
            self.shown_rows_changed.emit()

    def clear_filters(self) -> None:
        """Show every row: the brushed range, the Map's choice and each view's own filters go."""
        self.score_range = self.chosen_rows = None
        self.filters_cleared.emit()
        self.range_changed.emit()

    def set_row_columns(self, columns: dict) -> None:
        """Add these columns (name: one value per results row) to the results table ({}: none)."""
        self.row_columns = dict(columns)
        self.row_columns_changed.emit()

    def forms(self) -> tuple[str, ...]:
        """Calibrated forms available with the current profile."""
        return self.profile.forms() if self.profile is not None else ()
