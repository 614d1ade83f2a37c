"""File ▸ Compare with another model and File ▸ Find a threshold: dialogs over the scored pairs."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QInputDialog

from calibsim_gui.core.analysis.comparison import compare_models, comparison_reference
from calibsim_gui.core.analysis.pairs import ScoredPairs, score_pairs
from calibsim_gui.core.embedding import models  # a module: a load_model replaced there is the one used
from calibsim_gui.qt.comparison_view import ComparisonDialog
from calibsim_gui.qt.threshold_view import ThresholdDialog, labelled_columns


class CompareFlow(QObject):
    """Scores the current pairs with another model in the compare runner; shows the threshold dialog."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.comparison_dialog = None
        self.threshold_dialog = None

    def choose_model(self) -> None:
        window = self.window
        if not isinstance(self.state.results, ScoredPairs):
            window.show_error("Nothing to compare", "Score a pairs file first; then compare another model on it.")
            return
        listed = window.models.table_model.models          # as listed on the Model tab
        current = self.state.model_info
        names = [str(m.path) if m.source == "local" else m.name for m in listed
                 if current is None or m.path != current.path]
        if not names:                   # one model: say how to add another (comparison_view)
            self.comparison_dialog = ComparisonDialog(None, window, model=current.name if current else "")
            self.comparison_dialog.model_chosen.connect(window.compare_with)
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
        window.compare_with(choice)

    def compare_with(self, spec: str) -> None:
        """Score the current pairs with model `spec` (its own reference, refitted on the current
        anchor ladder) and compare, in a worker."""
        state, window = self.state, self.window
        table, mine, embedder, cache = state.input, state.results, state.embedder, window.cache
        metric, device = state.metric, state.device
        precision, engine = window.models.precision(), window.models.engine()
        budget = window.memory_budget()
        mine_only_none = mine.frame[[c for c in mine.frame.columns if "@" not in c]]
        ladder = state.profile.anchors          # the same ladder for every model (each encodes it)

        def task(progress, should_stop):
            other = models.load_model(spec, device=device, precision=precision, engine=engine)
            profile = comparison_reference(other, ladder, cache=cache, should_stop=should_stop)
            theirs = score_pairs(table, other, profile, metrics=[metric], cache=cache, progress=progress,
                                 should_stop=should_stop, memory_budget=budget)
            return compare_models({embedder.fingerprint.id: ScoredPairs(mine_only_none, mine.provenance),
                                   other.fingerprint.id: theirs}, metric=metric,
                                  ladders={embedder.fingerprint.id: ladder,
                                           other.fingerprint.id: profile.anchors})

        window.compare_runner.start(task)

    def compared(self, comparison) -> None:
        self.comparison_dialog = ComparisonDialog(comparison, self.window)
        self.comparison_dialog.show()

    def show_threshold(self) -> None:
        """The Threshold dialog for scored pairs with a label column (non-modal)."""
        if labelled_columns(self.state.results, self.state.metric) is None:
            self.window.show_error("No labelled pairs", "Score a pairs file with a column of human scores "
                                                        "or 0/1 labels first (e.g. score,sentence1,sentence2).")
            return
        self.threshold_dialog = ThresholdDialog(self.state.results, self.state.metric, self.window)
        self.threshold_dialog.show()
