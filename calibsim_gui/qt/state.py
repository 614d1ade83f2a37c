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
        Row of `results.frame` (pairs) selected in the table; highlighted in plots.
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
        self.row_columns: dict = {}

    def set_model(self, embedder, info) -> None:
        """A new model invalidates the profile and results (they belong to one model)."""
        self.embedder, self.model_info = embedder, info
        self.profile, self.profile_label = None, ""
        self.human = None                     # fitted on another model's scores
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
        self.chosen_rows = None
        self.row_columns = {}
        self.input_changed.emit()
        self.results_changed.emit()

    def set_results(self, results) -> None:
        self.results = results
        self.selected_row = None
        self.score_range = self.chosen_rows = None
        self.row_columns = {}                 # the view that added them adds them again
        self.results_changed.emit()

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

    def set_row_columns(self, columns: dict) -> None:
        """Add these columns (name: one value per results row) to the results table ({}: none)."""
        self.row_columns = dict(columns)
        self.row_columns_changed.emit()

    def forms(self) -> tuple[str, ...]:
        """Calibrated forms available with the current profile."""
        return self.profile.forms() if self.profile is not None else ()
