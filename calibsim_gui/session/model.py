"""`SessionModel`: a session's state and rules as plain Python, with an `Event` for every change.

What is loaded and chosen (model, references and where they came from, input, results, human
calibration, geometry fix, labels, filters, selection) and the rules that tie them together:
a new model drops the references that do not fit it and says why; new references, a new input,
another geometry fix or human calibration make the scores stale; a project's anchors, labels and
human bands wait for its references and input. The app (`qt.state.AppState`), the command line
and the Python API drive this one object; heavy work runs outside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.project import (
    ProjectInput,
    bands_of,
    human_fit_from_dict,
)
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import add_agreement_bands
from calibsim_gui.core.errors import CalibsimError, InputError
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import GEOMETRIES, get_geometries
from calibsim_gui.core.io.output import dump_json
from calibsim_gui.session import references
from calibsim_gui.session.events import Event
from calibsim_gui.session.selection import document_pair, pair_row, pairs_among

COMPARED_FORMS = ("calibrated", "human")

EVENTS = ("model_changed", "profile_changed", "input_changed", "results_changed", "view_changed",
          "selection_changed", "geometry_changed", "human_changed", "labels_changed", "range_changed",
          "row_columns_changed", "shown_rows_changed", "filters_cleared")
"""The events of `SessionModel` without arguments (the app's `AppState` has a signal of each name)."""

FIELDS = ("embedder", "model_info", "device", "profile", "profile_label", "profile_path", "built_from",
          "input", "input_spec", "results", "metric", "form", "geometry", "human", "selected_row",
          "label_column", "label_scale", "compared_form", "score_range", "chosen_rows", "shown_rows",
          "row_columns", "awaiting_references", "anchor_edits", "pending_labels", "pending_bands")
"""The state of a `SessionModel` (the app's `AppState` reads and writes these)."""


GEOMETRY_FIX_IT = ("build references with a background, on which the geometry fixes are fitted: "
                   "`calibsim profile build --background FILES` (or the app's Background tab), and score "
                   "with them")


def check_geometries(profile, fixes, source: str = "the references") -> None:
    """Refuse (InputError, naming the fix and how to get it) a geometry fix that `profile` cannot
    apply: the one rule of the app, the command line and the API (#41)."""
    fixes = [fixes] if isinstance(fixes, str) else list(fixes)
    get_geometries(fixes)                               # an unknown name is refused as before
    have = profile.geometry_names()
    for name in fixes:
        if name not in have:
            held = f"they have {', '.join(have[1:])} only" if len(have) > 1 else "they have no background"
            raise InputError(f"{source} cannot apply the geometry fix {name!r} ({held}).", fix=GEOMETRY_FIX_IT)


def scoring_geometries(fixes=(), human=()) -> tuple[str, ...]:
    """The geometry fixes a pair list is scored under: none (raw), each chosen fix, and each
    human calibration's (each once)."""
    fixes = [fixes] if isinstance(fixes, str) else list(fixes)
    return tuple(dict.fromkeys(["none", *fixes, *(h.geometry for h in human)]))


class SessionModel:
    """Current model, references, input, results and choices, and the rules between them.

    Attributes
    ----------
    embedder : embedder or None
        The loaded model (None while the first model loads).
    model_info : ModelInfo or None
    device : str
        The device the user asked for ("auto", "cpu", "cuda", "mps").
    profile : ReferenceProfile or None
        The references in use: anchors + (optionally) background.
    profile_label : str
        Where the profile came from, for people ("built-in", a file name, "built from 3 files").
    profile_path, built_from : str or None, dict or None
        The profile file the references were opened from; the files, pairs, seed and options of
        a background built here.
    input : PairTable or DocumentSet or None
    input_spec : dict or None
        How the input was read: ``{"paths", "kind", "options"}``.
    results : ScoredPairs or DocumentMatrix or None
        Results of the current input with the current model and profile.
    metric, form : str
        Metric and calibrated form shown ("cosine", "calibrated" ...).
    geometry : str
        Geometry fix the input is also scored under ("none" = raw embeddings only).
    human : HumanFit or None
        A human calibration of the current model; adds ``<metric>_human`` to the results.
    selected_row : int or None
        The selected pair: a row of `results.frame` for pairs, or for a document set the pair's
        number in `np.triu_indices(n, k=1)` order (see `pair_row`).
    label_column, label_scale : str or None, (low, high) or None
        The input column read as human scores and its scale (None: the column the input was
        loaded with, on a guessed scale).
    compared_form : str
        The form compared with the human scores: "calibrated", or "human" once one is fitted.
    score_range : (column, low, high) or None
        A range of one score column brushed on a histogram.
    chosen_rows : (ndarray of rows, description) or None
        Rows of `results.frame` chosen on another view (the texts selected on the Map).
    shown_rows : ndarray or None
        The rows every filter together leaves (None: every row).
    row_columns : dict of str to ndarray
        Columns of one value per results row another view adds to the table (the Map's ``cluster``).
    awaiting_references, anchor_edits, pending_labels, pending_bands
        A project being re-created: its references are on their way; its unapplied anchor edits
        (a dict), label column and scale, and human agreement bands wait for them.

    Events
    ------
    One per name in `EVENTS`, and
    references_replaced(message, details) : references dropped because they do not fit the new model;
    left_out(title, message) : a part of a project, or a chosen geometry fix, that could not be used;
    scores_stale(reason) : the results were dropped (or a project's references, which its input
        waited for, are in); the input is to be scored again: the app's one trigger for scoring
        after a change.
    """

    def __init__(self):
        for name in EVENTS + ("references_replaced", "left_out", "scores_stale"):
            setattr(self, name, Event())
        self.embedder = self.model_info = None
        self.device = "auto"
        self.profile, self.profile_label = None, ""
        self.profile_path = self.built_from = None
        self.input = self.input_spec = self.results = None
        self.metric, self.form, self.geometry = "cosine", "calibrated", "none"
        self.human = self.selected_row = None
        self.label_column = self.label_scale = None
        self.compared_form = "calibrated"
        self.score_range = self.chosen_rows = self.shown_rows = None
        self.row_columns: dict = {}
        self.awaiting_references = False
        self.anchor_edits = self.pending_labels = self.pending_bands = None

    def _stale(self, reason: str) -> None:
        """The results (set to None already) are dropped: say so, and why."""
        self.results_changed.emit()
        self.scores_stale.emit(reason)

    # ------------------------------------------------------------------ model & references

    def set_model(self, embedder, info=None, *, keep_references: bool = True):
        """Use `embedder`: the references and results belong to one model, so they go; a human
        calibration stays when the model is the same (another engine or precision of it).

        Returns the `References` to make next: those in use when they are not the built-in ones
        and fit the new model (`keep_references`), else None (make the built-in ones); references
        that do not fit are said by `references_replaced`.
        """
        previous = self.profile, self.profile_label, self.profile_path, self.built_from
        self.embedder, self.model_info = embedder, info if info is not None else getattr(embedder, "info", None)
        self.profile, self.profile_label, self.profile_path = None, "", None
        self.results = None
        if self.human is not None and self.human.calibrator.model != embedder.fingerprint.id:
            self.human = None                 # fitted on another model's scores
        self.model_changed.emit()
        self.profile_changed.emit()
        self._stale("another model")
        return self.references_kept(*previous) if keep_references else None

    def references_kept(self, profile, label: str, path, built_from):
        """`references.kept` of references that are not the built-in ones when they fit the model;
        otherwise None, saying why by `references_replaced`."""
        if profile is None or label == references.BUILTIN:
            return None
        try:
            references.check_fits(profile, self.embedder, source=f"the reference “{label}”")
        except CalibsimError as exc:
            self.references_replaced.emit(f"The built-in reference replaces “{label}”, which does not fit "
                                          "the model now loaded.", str(exc))
            return None
        return references.kept(profile, label, path, built_from)

    def set_references(self, profile, made) -> None:
        """References `made` (a `References`) arrived: they and their source are the session's; a
        project's human bands go back on them."""
        if self.awaiting_references and self.pending_bands is not None:
            profile = add_agreement_bands(profile, *self.pending_bands)     # made again without them
        self.profile_path, self.built_from = made.path, made.built_from
        self.set_profile(profile, made.label)

    def use_references(self, profile=None, *, anchors=None, cache=None, batch_size: int | None = None):
        """Open and use the references a command or API call names (`references.chosen`: `profile`,
        a path or a `ReferenceProfile`, default the built-in ones, refitted on `anchors`)."""
        made = references.chosen(self.embedder, profile, anchors=anchors, cache=cache, batch_size=batch_size)
        path = None if profile is None or isinstance(profile, ReferenceProfile) else str(profile)
        label = references.BUILTIN if profile is None else Path(path).name if path else "given profile"
        label += " + edited anchors" if anchors is not None else ""
        self.set_references(made, references.kept(made, label, path, None))
        return made

    def falls_back(self, refused) -> bool:
        """True when references `refused` (failed) leave none in use for a loaded model: the
        built-in ones are made then (never when the built-in ones themselves failed)."""
        return (self.profile is None and self.embedder is not None and refused is not None
                and (refused.path, refused.built_from) != (None, None))

    def settle(self):
        """The references are in (or refused): a project's wait ends, and its input (if any) is to
        be scored (`scores_stale`); returns its unapplied anchor edits (a dict or None) for the
        anchor editor."""
        waited = self.awaiting_references
        self.awaiting_references, self.pending_bands = False, None
        edits, self.anchor_edits = self.anchor_edits, None
        if waited:
            self.scores_stale.emit("the project's references")
        return edits

    def set_profile(self, profile, label: str) -> None:
        """Use references `profile`; a chosen geometry fix they cannot apply goes, said by `left_out`."""
        self.profile, self.profile_label = profile, label
        self.results = None
        dropped = self.geometry if profile is not None and self.geometry not in profile.geometry_names() else None
        if dropped:
            self.geometry = "none"
        self.profile_changed.emit()
        if dropped:
            self.geometry_changed.emit()
            self.left_out.emit("Geometry fix not applied",
                               f"The references “{label}” cannot apply the geometry fix {dropped!r}: the "
                               f"scores are computed without it. To use it, {GEOMETRY_FIX_IT}.")
        self._stale(f"references {label}" if label else "no references")

    # ------------------------------------------------------------------ projects

    def start_project(self, project) -> str:
        """Take what of `project` waits for its references and input (anchor edits, label column,
        human bands) and its human calibration (left out, said by `left_out`, when fitted on
        another model). Returns how its references are made: "profile" (its file), "rebuild"
        (its background), "anchors" (the built-in ones, then its anchors) or "builtin"."""
        self.anchor_edits = project.settings.get("anchor_edits")
        if "label_column" in project.settings:
            self.pending_labels = (project.settings["label_column"], project.settings.get("label_scale"))
        self.pending_bands = bands_of(project.bands) if project.bands else None
        self.awaiting_references = True
        if project.human is not None:
            fit = human_fit_from_dict(project.human)
            if self.embedder is not None and fit.calibrator.model not in (None, self.embedder.fingerprint.id):
                self.left_out.emit("Human calibration left out",
                                   f"The project's human calibration was fitted on {fit.calibrator.model}; "
                                   f"the model in use is {self.embedder.fingerprint.id}. Fit one for this "
                                   "model (File ▸ Fit human calibration).")
            else:
                self.human = fit                  # no event: the references that come next rescore
        if project.profile:
            return "profile"
        if project.background_files:
            return "rebuild"
        return "anchors" if project.anchors is not None else "builtin"

    def saved_inputs(self) -> list:
        """The input as a project keeps it: its files and the options they were read with."""
        spec, table = self.input_spec, self.input
        if not spec:
            return []
        options = dict(spec["options"])
        if spec["kind"] == "pairs" and getattr(table, "text_a", None):
            # the columns in use, also when they were recognised: the project reads the same ones
            options.setdefault("text_a", table.text_a)
            options.setdefault("text_b", table.text_b)
            if table.label is not None:
                options.setdefault("label", table.label)
        return [ProjectInput(path, spec["kind"], dict(options)) for path in spec["paths"]]

    def saved_labels(self) -> dict:
        """The chosen column of human scores and its scale, as a project keeps them (empty: none chosen)."""
        labels = {}
        if self.label_column is not None:
            labels["label_column"] = self.label_column
            if self.label_scale is not None:
                labels["label_scale"] = [float(v) for v in self.label_scale]
        return labels

    def saved_human(self) -> dict | None:
        """The human calibration as plain JSON values (the validation holds numpy numbers)."""
        fit = self.human
        if fit is None:
            return None
        return json.loads(dump_json({"calibrator": fit.calibrator.to_dict(),
                                     "validation": fit.validation, "source": fit.source}))

    def saved_bands(self) -> dict:
        """The human agreement bands of references made here (built or built-in), which a reopened
        project puts back on the references it makes again (empty: none, or a profile file's)."""
        profile = self.profile
        if profile is None or self.profile_path:
            return {}
        bands = {name: ref.band.to_dict() for name, ref in profile.metrics.items() if ref.band is not None}
        return json.loads(dump_json({"metrics": bands, "provenance": profile.provenance.get("human_band")})) \
            if bands else {}

    # ------------------------------------------------------------------ input & scoring

    def accept_input(self, value, spec: dict) -> None:
        """Use the input `value`, read as `spec` says; a project's label column applies to it."""
        self.input_spec = spec
        self.set_input(value)
        labels, self.pending_labels = self.pending_labels, None
        if labels is not None and labels[0] in value.frame.columns:
            self.set_labels(*labels)

    def set_input(self, value) -> None:
        self.input = value
        self.results = None
        self.selected_row = None
        self.label_column = self.label_scale = self.score_range = None     # another file's columns
        filtered = self.shown_rows is not None
        self.chosen_rows = self.shown_rows = None
        self.row_columns = {}
        self.input_changed.emit()
        self._stale("a new input")
        if filtered:
            self.shown_rows_changed.emit()

    def ready_to_score(self) -> bool:
        """An input, a model and references, and no project references on their way."""
        return (self.input is not None and self.embedder is not None and self.profile is not None
                and not self.awaiting_references)

    def geometry_fixes(self) -> dict[str, bool]:
        """Every geometry fix ("none" first) and whether the references in use can apply it."""
        have = self.profile.geometry_names() if self.profile is not None else ("none",)
        return {name: name in have for name in GEOMETRIES}

    def check_geometry(self, fixes) -> None:
        """Refuse (InputError) a geometry fix the references in use cannot apply (`check_geometries`)."""
        if self.profile is not None:
            check_geometries(self.profile, fixes, source=f"the references “{self.profile_label}”")

    def scoring_geometry(self) -> str:
        """The geometry fix scores are computed under: the one chosen (a project's, until its
        references arrive and keep it or say it goes, may be one the references in use lack)."""
        return self.geometry if self.profile is not None and self.geometry in self.profile.geometry_names() \
            else "none"

    def pair_scoring(self) -> tuple[tuple[str, ...], list]:
        """The geometry fixes and human calibrators a pair list is scored with (`Scorer`'s
        `geometry` and `human`)."""
        human = [self.human.calibrator] if self.human is not None else []
        return scoring_geometries(self.scoring_geometry(), human), human

    def run_sources(self) -> dict:
        """The files and choices the current results were made with, as `RunSources`'s fields, for
        a report's Reproduce commands: the profile file opened, the human calibration, the input's
        columns and encoding. A dict: the app's export worker makes the `RunSources` (the reports
        package it lives in loads pandas and more, which the window does not wait for)."""
        table, spec, info = self.input, self.input_spec or {}, self.model_info
        columns = {key: getattr(table, key, None) for key in ("text_a", "text_b", "label")}
        return dict(profile_file=self.profile_path, human=self.human,
                    columns={k: v for k, v in columns.items() if v},
                    encoding=(spec.get("options") or {}).get("encoding"),
                    model=str(info.path) if info is not None and info.source != "built-in" else None)

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
        """Score under another geometry fix too: the results of the old choice are dropped. One the
        references cannot apply is refused (InputError, `check_geometry`)."""
        self.check_geometry(geometry)
        if geometry != self.geometry:
            self.geometry = geometry
            self.results = None
            self.geometry_changed.emit()
            self._stale(f"geometry fix {geometry}")

    def set_human(self, fit) -> None:
        """Use a human calibration (None: stop using it); results are computed again."""
        self.human = fit
        self.results = None
        self.human_changed.emit()
        self._stale("a human calibration" if fit is not None else "no human calibration")

    def forms(self) -> tuple[str, ...]:
        """Calibrated forms available with the current profile."""
        return self.profile.forms() if self.profile is not None else ()

    # ------------------------------------------------------------------ labels, filters, selection

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

    def select_row(self, row: int | None) -> None:
        if row != self.selected_row:
            self.selected_row = row
            self.selection_changed.emit()

    def selected_documents(self) -> tuple[int, int] | None:
        """For a document set, the two documents of the selected pair (None: none, or pairs)."""
        if self.selected_row is None or not isinstance(self.results, DocumentMatrix):
            return None
        return document_pair(len(self.results.ids), self.selected_row)

    def pair_with_texts(self, text: str, other: str | None = None) -> int | None:
        """The selectable pair holding `text` (a `selected_row` value), or None when no pair does.

        Pairs: the first row with `text` on either side, preferring one with `other` on the other
        side. A document set: `text`'s document paired with `other`'s when that is in the set too,
        else with its most similar document.
        """
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
        results = self.results
        if not isinstance(results, DocumentMatrix) or len(results.ids) < 2:
            return None
        if b is None or b == a:
            similarity = METRICS[results.metric].as_similarity(results.matrices["raw"][a].astype(float))
            similarity[a] = -np.inf
            b = int(np.argmax(similarity))
        return pair_row(len(results.ids), a, b)
