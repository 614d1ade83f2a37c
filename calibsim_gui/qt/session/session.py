"""The session's live work: the embedding cache, the model, its references, the input and its scoring.

`Session` starts the runs that change `AppState` and takes their results; saving and re-creating
the session as a project is `projects.Projects`'s part.
"""

from __future__ import annotations

import gc
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import iter_score_pairs
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import (
    add_agreement_bands,
    build_profile,
    default_profile,
    keep_agreement_bands,
    with_anchors,
)
from calibsim_gui.core.embedding import models  # a module: a load_model replaced there is the one used
from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io import inputs  # a module: a load_pairs replaced there is the one used
from calibsim_gui.core.io.inputs import ColumnsNotFound, DocumentSet, PairTable, load_documents
from calibsim_gui.core.io.text_cleaning import CLEANED_NOTE
from calibsim_gui.core.resources import resource_path
from calibsim_gui.qt.session.document_sets import NeighbourPairs, document_refusal, score_documents
from calibsim_gui.qt.session.input_dialogs import ColumnMappingDialog, DocumentModeDialog
from calibsim_gui.qt.widgets.messages import EMPTY_HINT, for_the_app, plural

PAIR_SUFFIXES = {".csv", ".tsv", ".tab", ".jsonl", ".ndjson"}


def load_and_warm_up(info_or_spec, device, precision, prompts=None, engine="auto", trust_folder_graph=False, *,
                     progress, should_stop):
    """Load a model and pay its first-call costs now, off the GUI thread.

    The first encode (torch start-up) and the first imports of scipy's statistics hold the
    interpreter lock for 100-200 ms; doing them here keeps later runs from stalling the window.
    """
    import scipy.spatial.distance  # noqa: F401
    import scipy.stats  # noqa: F401

    embedder = models.load_model(info_or_spec, device=device, precision=precision, prompts=prompts, engine=engine,
                                 trust_folder_graph=trust_folder_graph)
    embedder.encode_batch(["calibsim warms up the model"])
    return embedder


def import_input_views() -> None:
    """Import the modules of the views a read input opens (Results, Distributions; with them
    pyqtgraph, about half a second): done by the reading worker, so the window, which builds
    those views next, does not pause for the import (#29)."""
    from calibsim_gui.qt.views.distributions import distribution_plot  # noqa: F401
    from calibsim_gui.qt.views.results import results_view  # noqa: F401


def read_pairs_or_columns(path, options, budget, *, progress, should_stop):
    """`load_pairs`, or the `ColumnsNotFound` problem itself so the window can ask the user."""
    import_input_views()
    try:
        return inputs.load_pairs(path, memory_budget=budget, **options)
    except ColumnsNotFound as problem:
        return problem


def read_document_files(paths, options, budget, *, progress, should_stop):
    """`load_documents` of `paths`, after `import_input_views`."""
    import_input_views()
    return load_documents(paths, memory_budget=budget, **options)


class Session(QObject):
    """Loads models, prepares references, reads inputs and scores them, in the window's runners."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.state = window.state
        self.input_spec: dict | None = None           # how the current input was read
        self.profile_path: str | None = None          # a profile opened from a file
        self.built_from: dict | None = None           # files, pairs, seed of a background built here
        self.incoming_input: dict | None = None       # input_spec of the file being read
        self.incoming_source = (None, None)           # profile_path, built_from of coming references
        self.anchor_edits = None                      # a project's unapplied anchor edits (a dict)
        self.awaiting_profile = False                 # a project's references are on their way
        self.pending_labels = None                    # a project's label column and scale, for its input
        self.pending_bands = None                     # a project's human agreement bands, for its references
        self.scoring_name = ""                        # the file being scored, for the Results placeholder
        self.score_failure = ""                       # why the input on screen could not be scored
        self.scored_chunks: list = []                 # the running score's chunks, for the live histogram
        self._cache = None
        self._cache_failed = False                    # the cache folder is unusable: go on without
        self._cache_warnings_shown = 0                # how many of the cache's warnings were shown

    # ------------------------------------------------------------------ cache

    @property
    def cache(self):
        """The embedding cache, or None when its folder is unusable (said once; scoring goes on)."""
        if self._cache is None and not self._cache_failed:
            try:
                self._cache = EmbeddingCache()
            except CalibsimError as exc:
                self._cache_failed = True
                self.window.show_error("Embedding cache unavailable",
                                       f"{exc}\n\ncalibsim goes on without a cache: texts are encoded every time.")
        return self._cache

    def cache_off(self) -> bool:
        """True when texts are encoded every time (the cache failed or turned itself off)."""
        return self._cache_failed or (self._cache is not None and self._cache.off)

    def show_cache_warnings(self) -> None:
        """Show what the cache reported since last time (e.g. it turned itself off on a full disk)."""
        if self._cache is None:
            return
        new = self._cache.warnings[self._cache_warnings_shown:]
        self._cache_warnings_shown += len(new)
        if new:
            self.window.show_error("Embedding cache", "\n\n".join(new))

    def close_cache(self) -> None:
        if self._cache is not None:
            self._cache.close()

    # ------------------------------------------------------------------ model & references

    def builtin_requested(self) -> None:
        """Background tab ▸ Use built-in reference: it replaces an edited anchor ladder, so ask."""
        if self.anchor_edits_may_go("using the built-in reference (it replaces your anchor ladder with "
                                    "the built-in one)"):
            self.use_builtin_reference()

    def profile_requested(self, path: str) -> None:
        """Background tab ▸ Open profile: its ladder replaces an edited one, so ask."""
        if self.anchor_edits_may_go(f"opening {Path(path).name} (its anchor ladder replaces yours)"):
            self.open_profile(path)

    def anchor_edits_may_go(self, action: str) -> bool:
        """True when there are no anchor edits (applied or not) or the user lets `action` drop them."""
        edited = self.window.anchors.pending_edits() is not None or "edited anchors" in self.state.profile_label
        return not edited or self.window.confirm_discard(action, ["your anchor edits"])

    def model_requested(self, info_or_spec, device: str = "auto") -> None:
        """Model tab ▸ Load: a human calibration belongs to one model, so ask before loading another
        (another engine or precision of the same model keeps it)."""
        current = self.state.model_info
        same = current is not None and str(getattr(info_or_spec, "path", info_or_spec)) == str(current.path)
        if self.state.human is not None and not same and not self.window.human.saved():
            if not self.window.confirm_discard("loading another model (the human calibration fits this "
                                               "model only)", ["the human calibration"]):
                return
        self.load_model(info_or_spec, device)

    def load_model(self, info_or_spec, device: str = "auto") -> None:
        manager = self.window.models
        self.state.device = device
        self.window.model_runner.start(load_and_warm_up, info_or_spec, device, manager.precision(),
                                       manager.prompts_for(info_or_spec), manager.engine(),
                                       manager.trust_folder_graph())

    def model_loaded(self, embedder) -> None:
        # torch and transformers leave ~10^6 long-lived objects; a full garbage collection over
        # them paused the window for up to 270 ms during runs. Exempt what exists now.
        gc.freeze()
        self.window.score_runner.cancel()          # its results are the previous model's
        previous = (self.state.profile, self.state.profile_label, self.profile_path, self.built_from)
        self.state.set_model(embedder, embedder.info)
        self.profile_path = None
        if self.window.projects.pending_project is not None or not self.keep_references(embedder, *previous):
            self.use_builtin_reference()
        self.window.projects.continue_project()

    def keep_references(self, embedder, profile, label: str, path, built_from) -> bool:
        """Keep references that are not the built-in ones (an opened or built profile, edited
        anchors) when the model loaded is the same model: another engine or precision of it.
        Otherwise say why they go, and return False (the built-in ones are used)."""
        if profile is None or label == "built-in":
            return False
        try:
            profile.check_model(embedder.fingerprint, source=f"the reference “{label}”",
                                prompt=str(getattr(embedder, "prompt", "") or ""))
        except CalibsimError as exc:
            self.window.show_message(QMessageBox.Icon.Information, "References replaced",
                                     f"The built-in reference replaces “{label}”, which does not fit "
                                     f"the model now loaded.", for_the_app(str(exc)))
            return False
        self.start_references(lambda progress, should_stop: (profile, label), path=path, built_from=built_from)
        return True

    def use_builtin_reference(self) -> None:
        embedder = self.state.embedder
        if embedder is None:
            return
        cache = self.cache                       # opened here, on the GUI thread
        self.start_references(
            lambda progress, should_stop: (default_profile(embedder, cache=cache,
                                                           should_stop=should_stop), "built-in"))

    def open_profile(self, path: str) -> None:
        embedder = self.state.embedder

        def task(progress, should_stop):
            profile = ReferenceProfile.load(path)
            if embedder is not None:
                profile.check_model(embedder.fingerprint, source=path,
                                    prompt=str(getattr(embedder, "prompt", "") or ""))
            return profile, Path(path).name

        self.start_references(task, path=path)

    def apply_anchors(self, anchors) -> None:
        state = self.state
        if state.profile is None or state.embedder is None:
            return
        profile, embedder, label, cache = state.profile, state.embedder, state.profile_label, self.cache
        self.start_references(
            lambda progress, should_stop: (with_anchors(profile, embedder, anchors, cache=cache,
                                                         should_stop=should_stop),
                                            label.split(" + ")[0] + " + edited anchors"),
            path=self.profile_path, built_from=self.built_from)

    def build_background(self, documents, pairs: int, seed: int) -> None:
        embedder = self.state.embedder
        if embedder is None:
            self.window.show_error("No model", "Load a model before building a background.")
            return
        anchors = self.window.anchors.anchor_set()
        clean_html = any(note.startswith(CLEANED_NOTE) for note in documents.notes)   # "Clean them before building"
        built_from = {"files": [str(f) for f in documents.files], "pairs": pairs, "seed": seed,
                      "options": {**self.window.background.read_options(), "clean_html": clean_html}}
        cache, budget, previous = self.cache, self.window.memory_budget(), self.state.profile

        def task(progress, should_stop):
            profile = build_profile(embedder, documents.texts, anchors=anchors, n_pairs=pairs,
                                    seed=seed, sources=documents.files, cache=cache,
                                    text_columns=documents.text_columns, clean_html=clean_html,
                                    progress=progress, should_stop=should_stop, memory_budget=budget,
                                    name=f"background of {plural(len(documents.files), 'file')}")
            # the calibrated scale does not depend on the background: its human band still holds
            return keep_agreement_bands(profile, previous), f"built from {len(documents.files)} file(s)"

        self.start_references(task, built_from=built_from)

    def run_sources(self) -> dict:
        """The files and choices the current results were made with, as `RunSources`'s fields, for a
        report's Reproduce commands: the profile file opened, the human calibration, the input's
        columns. A dict: the export worker makes the `RunSources` (the reports package it lives in
        loads pandas and more, which the window does not wait for)."""
        table, spec, info = self.state.input, self.input_spec or {}, self.state.model_info
        columns = {key: getattr(table, key, None) for key in ("text_a", "text_b", "label")}
        return dict(profile_file=self.profile_path, human=self.state.human,
                    columns={k: v for k, v in columns.items() if v},
                    encoding=(spec.get("options") or {}).get("encoding"),
                    model=str(info.path) if info is not None and info.source != "built-in" else None)

    def start_references(self, task, *, path: str | None = None, built_from: dict | None = None) -> None:
        """Prepare references in the profile worker; `path` and `built_from` count once they arrive."""
        self.incoming_source = (path, built_from)
        self.window.profile_runner.start(task)

    def profile_ready(self, result) -> None:
        profile, label = result
        if self.awaiting_profile and self.pending_bands is not None:
            profile = add_agreement_bands(profile, *self.pending_bands)     # made again without them
        self.profile_path, self.built_from = self.incoming_source
        self.state.set_profile(profile, label)
        if self.window.projects.take_step("anchors"):
            return                          # the project's anchors come next, then the scoring
        self.references_settled()

    def references_settled(self, failure: str = "") -> None:
        """New references are in, or were refused and those in use stay (with their source):
        show a project's unapplied anchor edits, then score."""
        if (failure and self.state.profile is None and self.state.embedder is not None
                and self.incoming_source != (None, None)):
            self.use_builtin_reference()     # none in use (a new model): the built-in ones, then go on
            return
        self.awaiting_profile, self.pending_bands = False, None
        edits, self.anchor_edits = self.anchor_edits, None
        if edits is not None:
            self.window.anchors.restore_edits(edits)
        self.rescore()

    # ------------------------------------------------------------------ inputs & scoring

    def choose_inputs(self) -> None:
        settings = self.window.settings
        paths, _ = QFileDialog.getOpenFileNames(
            self.window, "Open input", settings.value("inputs/last_dir", ""),
            "Pairs or documents (*.csv *.tsv *.tab *.jsonl *.ndjson *.txt *.md);;All files (*)")
        if paths:
            settings.setValue("inputs/last_dir", str(Path(paths[0]).parent))
            self.open_inputs(paths)

    def choose_background(self) -> None:
        background = self.window.background
        self.window.tabs.setCurrentWidget(background)
        paths, _ = QFileDialog.getOpenFileNames(
            self.window, "Add background corpus", self.window.settings.value("background/last_dir", ""),
            "Text corpora (*.txt *.md *.csv *.tsv *.jsonl);;All files (*)")
        if paths:
            background.add_paths(paths)

    def open_demo(self) -> None:
        """Help ▸ Open the demo: score the 30 demo sentence pairs."""
        self.open_inputs([resource_path("demo", "pairs.csv")])

    def open_files(self, paths) -> None:
        """Files given on the command line (or by a file manager): a project, or inputs to score."""
        paths = [str(p) for p in paths]
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            self.window.show_error("File not found", "These files do not exist:\n" + "\n".join(missing))
            paths = [p for p in paths if p not in missing]
        projects = [p for p in paths if p.endswith(".calibsim")]
        if projects:
            self.window.open_project(projects[0])
        elif paths:
            self.open_inputs(paths)

    def open_inputs(self, paths, *, per_file: bool | None = None, options: dict | None = None) -> None:
        """Read dropped or chosen files: one pairs table, or text files as a document set.

        `per_file` None asks the user (one document per line or per file) for text files.
        """
        paths = [str(p) for p in paths]
        if len(paths) == 1 and Path(paths[0]).suffix.lower() in PAIR_SUFFIXES:
            self.read_pairs(paths[0], options or {})
            return
        if per_file is None:
            try:
                layout = inputs.text_layout(paths)
            except CalibsimError:
                layout = None                     # reading the files says what is wrong
            dialog = DocumentModeDialog(self.window) if layout is None else DocumentModeDialog(
                self.window, lines=layout.lines, files=layout.files, per_file=layout.per_file,
                median_lines=layout.median_lines)
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return
            per_file = dialog.per_file()
        self.read_documents(paths, {**(options or {}), "per_file": per_file})

    def read_pairs(self, path: str, options: dict) -> None:
        self.incoming_input = {"paths": [path], "kind": "pairs", "options": options}
        self.window.input_runner.start(read_pairs_or_columns, path, options, self.window.memory_budget())
        self.update_results_hint()

    def read_documents(self, paths: list[str], options: dict) -> None:
        self.incoming_input = {"paths": paths, "kind": "documents", "options": options}
        budget = self.window.memory_budget()
        self.window.input_runner.start(read_document_files, paths, options, budget)

    def input_read(self, value) -> None:
        if isinstance(value, ColumnsNotFound):
            self.ask_columns(value)
            return
        if getattr(value, "document_column", None) and not self.incoming_input["options"].get("text_a"):
            self.ask_reading(value)              # pairs or a document set? the current work stays till then
            return
        state = self.state
        if isinstance(value, DocumentSet) and (refusal := document_refusal(
                value, state.embedder, state.profile, state.metric, self.scoring_geometry(),
                self.window.memory_budget())):
            kept = "\n\nThe results on screen stay as they were." if self.state.results is not None else ""
            self.window.show_error("Cannot score the documents", refusal + kept)
            return                                       # the input and results on screen stay
        self.input_spec = self.incoming_input           # only an accepted input is the session's
        self.state.set_input(value)
        labels, self.pending_labels = self.pending_labels, None
        if labels is not None and hasattr(self.state, "set_labels") and labels[0] in value.frame.columns:
            self.state.set_labels(*labels)             # a project's label column and scale
        self.window.tabs.setCurrentWidget(self.window.results)
        self.rescore()

    def input_failed(self, message: str) -> None:
        self.window.show_error("Cannot read the input", message)

    def ask_columns(self, problem) -> None:
        """Let the user say which columns hold the texts when they could not be recognised."""
        dialog = ColumnMappingDialog(problem.path, problem.columns, None, self.window, preview=problem.preview)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.read_pairs(str(problem.path), dialog.mapping())
        else:
            self.window.show_error("Cannot read the input", str(problem))

    def ask_reading(self, table) -> None:
        """A table that reads as pairs or as a document set (AG News: label, title, description):
        ask which, and from which columns; Cancel keeps the current work."""
        dialog = ColumnMappingDialog(table.path, list(table.frame.columns),
                                     {"text_a": table.text_a, "text_b": table.text_b, "label": table.label},
                                     self.window, preview=table.frame.head(5), documents=table.document_column)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            self.window.status_label.setText(f"{Path(table.path).name} was not opened; the current work stays.")
            return
        encoding = self.incoming_input["options"].get("encoding")
        if dialog.documents_column() is not None:
            self.read_documents([str(table.path)], {"column": dialog.documents_column(), "per_file": False,
                                                    **({"encoding": encoding} if encoding else {})})
        else:
            self.read_pairs(str(table.path), {**dialog.mapping(), **({"encoding": encoding} if encoding else {})})

    def rescore(self) -> None:
        """Score the current input with the current model and references (cancels a running score)."""
        state, window = self.state, self.window
        if state.input is None or state.embedder is None or state.profile is None:
            return
        if window.profile_runner.running or self.awaiting_profile:
            return                     # new references are on their way; they rescore when ready
        table, embedder, profile, cache = state.input, state.embedder, state.profile, self.cache
        budget = window.memory_budget()
        self.scored_chunks = []
        self.score_failure = ""
        if (distributions := window.panels.view("distributions", build=False)) is not None:
            distributions.reset()
        geometry = self.scoring_geometry()
        if isinstance(table, PairTable):
            human = [state.human.calibrator] if state.human is not None else []
            geometries = tuple(dict.fromkeys(["none", geometry] + [h.geometry for h in human]))
            long_texts = window.long_text_options()
            # about 100 steps (progress, time left, the growing histogram), 16 to 256 pairs each
            chunk = int(min(256, max(16, len(table.frame) // 100)))
            self.scoring_name = Path(table.path).name
            window.score_runner.start(lambda progress, should_stop: iter_score_pairs(
                table, embedder, profile, geometry=geometries, human=human, cache=cache,
                should_stop=should_stop, chunk_pairs=chunk, memory_budget=budget, **long_texts))
        else:
            files = getattr(table, "files", None) or []
            self.scoring_name = (Path(files[0]).name if len(files) == 1
                                 else plural(len(files), "document file") if files else "the documents")
            window.score_runner.start(score_documents, table, embedder, profile, metric=state.metric,
                                      geometry=geometry, cache=cache, budget=budget)

    def scoring_geometry(self) -> str:
        """The geometry fix scores are computed under: the one chosen, when the references have it."""
        state = self.state
        return state.geometry if state.profile is not None and state.geometry in state.profile.geometry_names() \
            else "none"

    def view_changed(self) -> None:
        """A document set's results hold one metric: compute them again when another is chosen."""
        results = self.state.results
        if isinstance(results, (DocumentMatrix, NeighbourPairs)) and results.metric != self.state.metric:
            self.rescore()

    def scored_chunk(self, chunk) -> None:
        """A chunk of the running score: kept for the live histogram, drawn if its tab is built."""
        self.scored_chunks.append(chunk)
        if (distributions := self.window.panels.view("distributions", build=False)) is not None:
            distributions.add_partial(chunk)
        self.window.task_status.show_progress_of(
            self.window.score_runner, chunk.done, chunk.total,
            f"Scored {chunk.done:,} of {plural(chunk.total, 'pair')}…", chunk.work)

    def scored(self, results) -> None:
        self.scored_chunks = []
        self.state.set_results(results)

    def score_failed(self, message: str) -> None:
        """Scoring stopped with `message` (shown by the task status): the placeholder says why."""
        self.score_failure = for_the_app(message.partition("\n\nTraceback")[0])
        self.update_results_hint()

    def update_results_hint(self, _busy: bool = False) -> None:
        """The Results placeholder says what happens: scoring a file, or what to drop (a view not
        built yet is told when it is built)."""
        window = self.window
        hint = getattr(window.panels.view("results", build=False), "hint", None)
        if hint is None:
            return
        if window.score_runner.running and self.scoring_name:
            hint.setText(f"Scoring {self.scoring_name}…")
        elif window.input_runner.running and self.incoming_input:
            hint.setText(f"Reading {Path(self.incoming_input['paths'][0]).name}…")
        elif self.state.input is not None and self.state.results is None and self.score_failure:
            hint.setText(f"{self.scoring_name or 'The input'} could not be scored: {self.score_failure}")
        elif self.state.input is not None and self.state.results is None:
            hint.setText(f"{self.scoring_name or 'The input'} is not scored yet: it is scored as soon as "
                         "the model and references are ready.")
        else:
            hint.setText(EMPTY_HINT)
