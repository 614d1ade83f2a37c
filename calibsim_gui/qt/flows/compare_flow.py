"""File ▸ Compare with another model (shown on the Compare tab) and File ▸ Find a threshold.

The comparison's modules (pandas, the plots) load when the Compare tab or a dialog first needs
them, not with the window.
"""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QInputDialog

from calibsim_gui.core.analysis.pairs import ScoredPairs, Scorer
from calibsim_gui.core.embedding import models  # a module: a load_model replaced there is the one used
from calibsim_gui.core.io.inputs import PairTable
from calibsim_gui.qt.widgets.messages import format_seconds, plural
from calibsim_gui.qt.widgets.workers import TaskRunner, free_dropped_objects, keep_unfrozen

STEPS = 3         # load the model, prepare its references, score the pairs
LOAD_TICK_S = 1.0  # while a model loads (it reports nothing), the step's line is renewed this often


def while_loading(load, spec: str, report):
    """`load(spec)`, calling `report(seconds so far)` every `LOAD_TICK_S` meanwhile."""
    done, started = threading.Event(), time.monotonic()

    def tick() -> None:
        while not done.wait(LOAD_TICK_S):
            report(time.monotonic() - started)

    ticker = threading.Thread(target=tick, name="comparison model load", daemon=True)
    ticker.start()
    try:
        return load(spec)
    finally:
        done.set()
        ticker.join()


def comparison_task(spec: str, load, *, table, mine: ScoredPairs, mine_model, mine_profile, metric: str,
                    cache=None, memory_budget=None, progress, should_stop):
    """Score `table` with model `spec` (loaded by `load(spec)`) against its own reference refitted
    on `mine_profile`'s anchor ladder, and compare with `mine` (scored by `mine_model`).

    Every step reports counts from its first update: the texts and pairs to come while the model
    loads, then the reference texts encoded, then the pairs scored.
    """
    import pandas as pd

    from calibsim_gui.core.analysis.comparison import (
        compare_models,
        comparison_reference,
        reference_scale,
        short_model_names,
    )

    frame, ladder = table.frame, mine_profile.anchors
    n_texts = len(pd.unique(pd.concat([frame[table.text_a], frame[table.text_b]]).astype(str)))
    n_pairs = len(frame)
    name = short_model_names([mine_model.fingerprint.id, spec])[spec]
    coming = (f"then its {plural(len(ladder.pairs), 'anchor pair')} and {n_texts:,} texts of "
              f"{plural(n_pairs, 'pair')} to encode")
    progress(0, n_pairs, f"Loading {name} (step 1 of {STEPS}); {coming}…")
    other = while_loading(load, spec, lambda seconds: progress(
        0, n_pairs, f"Loading {name} (step 1 of {STEPS}), {format_seconds(seconds)} so far; {coming}…"))
    name = short_model_names([mine_model.fingerprint.id, other.fingerprint.id])[other.fingerprint.id]

    def preparing(done: int, total: int, _message: str = "") -> None:
        progress(done, total, f"Preparing {name}'s references (step 2 of {STEPS}): "
                              + (f"encoding {total:,} texts" if done == 0 else f"encoded {done:,} / {total:,} texts"))

    profile = comparison_reference(other, ladder, cache=cache, should_stop=should_stop, progress=preparing)
    chunk = int(min(256, max(16, n_pairs // 100)))
    steps = Scorer(other, profile, metrics=[metric], cache=cache, chunk_pairs=chunk,
                   memory_budget=memory_budget).iter_score(table, should_stop)
    progress(0, n_pairs, f"Scoring {plural(n_pairs, 'pair')} with {name} (step 3 of {STEPS}): "
                         f"encoding {n_texts:,} texts…")
    while True:
        try:
            part = next(steps)
        except StopIteration as end:
            theirs = end.value
            break
        progress(part.done, part.total, f"Scoring with {name} (step 3 of {STEPS}): "
                                        f"{part.done:,} / {part.total:,} pairs scored")
    mine_only = ScoredPairs(mine.frame[[c for c in mine.frame.columns if "@" not in c]], mine.provenance)
    ids = mine_model.fingerprint.id, other.fingerprint.id
    return compare_models({ids[0]: mine_only, ids[1]: theirs}, metric=metric,
                          ladders={ids[0]: ladder, ids[1]: profile.anchors},
                          scales={ids[0]: reference_scale(mine_profile, metric),
                                  ids[1]: reference_scale(profile, metric)})


class CompareFlow(QObject):
    """Scores the current pairs with another model in its own runner and shows the result on the
    Compare tab; shows the threshold dialog. Its dialogs are parented to `parent` (the window)."""

    def __init__(self, state, *, models, session, preferences, view, tabs, show_error, parent):
        super().__init__(parent)
        self.state, self.models, self.session, self.preferences = state, models, session, preferences
        self._view, self.tabs, self.show_error = view, tabs, show_error
        self.runner = TaskRunner("scoring with the other model", self)
        self.runner.finished.connect(self.compared)
        self.runner.failed.connect(self.ended)
        self.runner.cancelled.connect(self.ended)
        self.frozen_at = None                  # `keep_unfrozen`'s answer while a comparison runs
        self.comparison_dialog = None          # the one-model help
        self.threshold_dialog = None

    @property
    def view(self):
        """The Compare tab (built when first shown or asked for)."""
        return self._view()

    def build_view(self):
        from calibsim_gui.qt.views.comparison_view import ComparisonView

        view = ComparisonView(self.state)
        view.compare_requested.connect(self.choose_model)
        return view

    def choose_model(self) -> None:
        window = self.parent()
        if not isinstance(self.state.results, ScoredPairs) or not isinstance(self.state.input, PairTable):
            self.show_error("Nothing to compare", "Score a pairs file first; then compare another model on it.")
            return
        listed = self.models.table_model.models          # as listed on the Model tab
        current = self.state.model_info
        names = [str(m.path) if m.source == "local" else m.name for m in listed
                 if current is None or m.path != current.path]
        if not names:                   # one model: say how to add another (comparison_view)
            from calibsim_gui.qt.views.comparison_view import ComparisonDialog

            self.comparison_dialog = ComparisonDialog(window, model=current.name if current else "")
            self.comparison_dialog.model_chosen.connect(self.compare_with)
            self.comparison_dialog.show()
            return
        other = "Another folder…"
        choice, ok = QInputDialog.getItem(window, "Compare with another model",
                                          "Score the same pairs with:", names + [other], 0, False)
        if not ok:
            return
        if choice == other:
            choice = QFileDialog.getExistingDirectory(window, "A sentence-transformers model folder")
            if not choice:
                return
        self.compare_with(choice)

    def compare_with(self, spec: str) -> None:
        """Score the current pairs with model `spec` (its own reference, refitted on the current
        anchor ladder) and compare, in a worker; the Compare tab shows the progress's home."""
        state = self.state
        if not isinstance(state.results, ScoredPairs) or not isinstance(state.input, PairTable):
            self.show_error("Nothing to compare", "Score a pairs file first; then compare another model on it.")
            return
        device, precision, engine = state.device, self.models.precision(), self.models.engine()
        options = {"table": state.input, "mine": state.results, "mine_model": state.embedder,
                   "mine_profile": state.profile, "metric": state.metric, "cache": self.session.cache,
                   "memory_budget": self.preferences.memory_budget()}
        frozen_at = keep_unfrozen()           # before the worker can make anything
        self.runner.start(comparison_task, spec, lambda spec: models.load_model(
            spec, device=device, precision=precision, engine=engine, prepare_graph="background"), **options)
        self.frozen_at = frozen_at            # (a comparison still running was ended by the start)
        self.tabs.setCurrentWidget(self.view)

    def compared(self, comparison) -> None:
        """A new comparison replaces the one shown."""
        self.ended()
        self.view.show_comparison(comparison)
        self.tabs.setCurrentWidget(self.view)

    def ended(self, _message: str = "") -> None:
        """The comparison's worker dropped the second model: have its memory freed now (models
        are held in reference cycles), not at the next model switch."""
        if self.frozen_at is not None:
            free_dropped_objects(self.frozen_at)
            self.frozen_at = None

    def show_threshold(self) -> None:
        """The Threshold dialog for scored pairs with a label column (non-modal)."""
        from calibsim_gui.qt.views.threshold_view import ThresholdDialog, labelled_columns

        if labelled_columns(self.state.results, self.state.metric) is None:
            self.show_error("No labelled pairs", "Score a pairs file with a column of human scores "
                                                 "or 0/1 labels first (e.g. score,sentence1,sentence2).")
            return
        self.threshold_dialog = ThresholdDialog(self.state.results, self.state.metric, self.parent())
        self.threshold_dialog.show()
