"""The session's live work: the embedding cache, the model, its references, the input and its scoring.

`Session` starts the runs that change `AppState` and takes their results; which references apply,
what a project restores and what is scored with what are the session model's rules
(`session.SessionModel`); saving and re-creating the session as a project is `projects.Projects`'s part.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import Scorer
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
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
from calibsim_gui.qt.widgets.workers import TaskRunner, free_dropped_objects, freeze_alive
from calibsim_gui.session import references

PAIR_SUFFIXES = {".csv", ".tsv", ".tab", ".jsonl", ".ndjson"}


def load_and_warm_up(info_or_spec, device, precision, prompts=None, engine="auto", trust_folder_graph=False, *,
                     progress, should_stop):
    """Load a model and pay its first-call costs now, off the GUI thread.

    The first encode (torch start-up) and the first imports of scipy's statistics hold the
    interpreter lock for 100-200 ms; doing them here keeps later runs from stalling the window.
    A torch graph not prepared yet is prepared in a child process (`graph_preparation`): its
    tracing would hold the lock for as long again.
    The model is held in a list emptied on return, never in a local: this frame can outlive the
    call (kept by a garbage cycle of an import made in it, e.g. torch.fx's `wrap`), and would keep
    a replaced model alive (#44).
    """
    import scipy.spatial.distance  # noqa: F401
    import scipy.stats  # noqa: F401

    loaded = [models.load_model(info_or_spec, device=device, precision=precision, prompts=prompts, engine=engine,
                                trust_folder_graph=trust_folder_graph, prepare_graph="background")]
    loaded[0].encode_batch(["calibsim warms up the model"])
    return loaded.pop()


def read_pairs_or_columns(path, options, budget, preload, *, progress, should_stop):
    """`load_pairs`, or the `ColumnsNotFound` problem itself so the window can ask the user;
    `preload()` first (`Session`'s)."""
    preload()
    try:
        return inputs.load_pairs(path, memory_budget=budget, **options)
    except ColumnsNotFound as problem:
        return problem


@dataclass(frozen=True)
class DroppedTexts:
    """Text files to read once the user says how (one document per line or per file); `layout`
    is their `inputs.text_layout`, None when reading them will say what is wrong."""

    paths: list[str]
    options: dict
    layout: inputs.TextLayout | None


def measure_text_files(paths, options, *, progress, should_stop) -> DroppedTexts:
    """`DroppedTexts` of `paths`: the layout counts their lines, so it runs in the reading worker."""
    try:
        return DroppedTexts(paths, options, inputs.text_layout(paths))
    except CalibsimError:
        return DroppedTexts(paths, options, None)


def read_document_files(paths, options, budget, preload, *, progress, should_stop):
    """`load_documents` of `paths`, after `preload()` (`Session`'s)."""
    preload()
    return load_documents(paths, memory_budget=budget, **options)


class Session(QObject):
    """Loads models, prepares references, reads inputs and scores them, in its own runners.

    It gets the parts it works with, not the window: the editors it reads (`models`, `anchors`,
    `background`), the tabs (`panels`), `preferences` (memory budget, long texts), `settings` (the
    folders last used) and the window's `show_error` and `show_message`; `link` gives it the
    project and human-calibration flows, which are made after it (they use it too). Its dialogs
    are parented to `parent` (the window). `status` carries a line for the status bar and
    `scoring_progress(done, total, message, work)` the running score's progress.

    `preload()` runs in the reading worker before an input is read: the shell imports there the
    modules of the views the input opens, so the window does not pause for them (#29)."""

    status = Signal(str)
    scoring_progress = Signal(int, int, str, object)

    def __init__(self, state, *, models, anchors, background, panels, preferences, settings, show_error,
                 show_message, preload, parent):
        super().__init__(parent)
        self.state = state
        self.session_model = state.session_model       # the session's state and rules
        self.models, self.anchors, self.background, self.panels = models, anchors, background, panels
        self.preferences, self.settings = preferences, settings
        self.show_error, self.show_message = show_error, show_message
        self.preload = preload
        self.projects = self.human = None               # `link`
        self.model_runner = TaskRunner("loading model", self)
        self.profile_runner = TaskRunner("preparing references", self)
        self.input_runner = TaskRunner("reading input", self)
        self.score_runner = TaskRunner("scoring", self)
        self.incoming_input: dict | None = None       # input_spec of the file being read
        self.incoming = None                          # the `References` being made
        self.scoring_name = ""                        # the file being scored, for the Results placeholder
        self.score_failure = ""                       # why the input on screen could not be scored
        self.scored_chunks: list = []                 # the running score's chunks, for the live histogram
        self._loading = None                          # what the model runner loads (`load_model`)
        self._cache = None
        self._cache_failed = False                    # the cache folder is unusable: go on without
        self._cache_warnings_shown = 0                # how many of the cache's warnings were shown
        self.session_model.references_replaced.connect(self.references_replaced)
        self.session_model.left_out.connect(show_error)

    def link(self, *, projects, human) -> None:
        """The project flow (a project waiting for its references, Save / Discard) and the human
        calibration's (saved or not), made after the session."""
        self.projects, self.human = projects, human

    def runners(self) -> list:
        return [self.model_runner, self.profile_runner, self.input_runner, self.score_runner]

    # ------------------------------------------------------------------ cache

    @property
    def cache(self):
        """The embedding cache, or None when its folder is unusable (said once; scoring goes on)."""
        if self._cache is None and not self._cache_failed:
            try:
                self._cache = EmbeddingCache()
            except CalibsimError as exc:
                self._cache_failed = True
                self.show_error("Embedding cache unavailable",
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
            self.show_error("Embedding cache", "\n\n".join(new))

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
        edited = self.anchors.pending_edits() is not None or "edited anchors" in self.state.profile_label
        return not edited or self.projects.confirm_discard(action, ["your anchor edits"])

    def model_requested(self, info_or_spec, device: str = "auto") -> None:
        """Model tab ▸ Load: a human calibration belongs to one model, so ask before loading another
        (another engine or precision of the same model keeps it)."""
        current = self.state.model_info
        same = current is not None and str(getattr(info_or_spec, "path", info_or_spec)) == str(current.path)
        if self.state.human is not None and not same and not self.human.saved():
            if not self.projects.confirm_discard("loading another model (the human calibration fits this "
                                               "model only)", ["the human calibration"]):
                return
        self.load_model(info_or_spec, device)

    def load_model(self, info_or_spec, device: str = "auto") -> None:
        """Load a model in the model runner, unless the same load is on its way: a project opened
        as the app starts wants the model the start is loading, and both loads ran side by side
        (two threads importing torch, two graphs loaded, the first's result thrown away, #44)."""
        manager = self.models
        self.state.device = device
        request = (info_or_spec, device, manager.precision(), manager.prompts_for(info_or_spec),
                   manager.engine(), manager.trust_folder_graph())
        if self.model_runner.running and request == self._loading:
            return
        self._loading = request
        self.model_runner.start(load_and_warm_up, *request)

    def model_loaded(self, embedder) -> None:
        self.score_runner.cancel()          # its results are the previous model's
        replaced = self.state.embedder
        kept = self.session_model.set_model(embedder, embedder.info,
                                            keep_references=self.projects.pending_project is None)
        # torch and transformers leave ~10^6 long-lived objects; a full garbage collection over
        # them paused the window for up to 270 ms during runs: what exists now is frozen, after
        # the replaced model (held in cycles, perhaps frozen at an earlier load) is freed; an
        # ONNX model has no cycles, so the full pass is paid only if it is still alive next tick
        if replaced is not None:
            free_dropped_objects(dropped=weakref.ref(replaced))
            del replaced
        else:
            freeze_alive()
        if kept is not None:
            self.start_references(kept)
        else:
            self.use_builtin_reference()
        self.projects.continue_project()

    def references_replaced(self, message: str, details: str) -> None:
        self.show_message(QMessageBox.Icon.Information, "References replaced", message,
                                 for_the_app(details))

    def use_builtin_reference(self) -> None:
        if self.state.embedder is not None:
            # the cache is opened here, on the GUI thread
            self.start_references(references.builtin(self.state.embedder, cache=self.cache))

    def open_profile(self, path: str) -> None:
        self.start_references(references.profile_file(path, self.state.embedder))

    def apply_anchors(self, anchors) -> None:
        state = self.state
        if state.profile is None or state.embedder is None:
            return
        self.start_references(references.anchored(state.profile, state.profile_label, state.embedder, anchors,
                                                  cache=self.cache, path=state.profile_path,
                                                  built_from=state.built_from))

    def build_background(self, documents, pairs: int, seed: int) -> None:
        embedder = self.state.embedder
        if embedder is None:
            self.show_error("No model", "Load a model before building a background.")
            return
        clean_html = any(note.startswith(CLEANED_NOTE) for note in documents.notes)   # "Clean them before building"
        built_from = {"files": [str(f) for f in documents.files], "pairs": pairs, "seed": seed,
                      "options": {**self.background.read_options(), "clean_html": clean_html}}
        settings = ProfileSettings(anchors=self.anchors.anchor_set(), n_pairs=pairs, seed=seed,
                                   clean_html=clean_html,
                                   name=f"background of {plural(len(documents.files), 'file')}")
        self.start_references(references.background(
            embedder, documents, settings, built_from=built_from, previous=self.state.profile, cache=self.cache,
            memory_budget=self.preferences.memory_budget()))

    def start_references(self, made) -> None:
        """Make references (`References`) in the profile worker; they count once they arrive."""
        self.incoming = made
        self.profile_runner.start(made.make)

    def profile_ready(self, profile) -> None:
        self.session_model.set_references(profile, self.incoming)
        if self.projects.take_step("anchors"):
            return                          # the project's anchors come next, then the scoring
        self.references_settled()

    def references_settled(self, failure: str = "") -> None:
        """New references are in (their `scores_stale` scored the input), or were refused and
        those in use stay (with their source): show a project's unapplied anchor edits; an input
        that waited for the refused ones is scored with those in use."""
        if failure and self.session_model.falls_back(self.incoming):
            self.use_builtin_reference()     # none in use (a new model): the built-in ones, then go on
            return
        edits = self.session_model.settle()
        if edits is not None:
            self.anchors.restore_edits(edits)
        if failure and self.state.results is None and not self.score_runner.running:
            self.rescore()

    # ------------------------------------------------------------------ inputs & scoring

    def choose_inputs(self) -> None:
        settings = self.settings
        paths, _ = QFileDialog.getOpenFileNames(
            self.parent(), "Open input", settings.value("inputs/last_dir", ""),
            "Pairs or documents (*.csv *.tsv *.tab *.jsonl *.ndjson *.txt *.md);;All files (*)")
        if paths:
            settings.setValue("inputs/last_dir", str(Path(paths[0]).parent))
            self.open_inputs(paths)

    def choose_background(self) -> None:
        background = self.background
        self.panels.tabs.setCurrentWidget(background)
        paths, _ = QFileDialog.getOpenFileNames(
            self.parent(), "Add background corpus", self.settings.value("background/last_dir", ""),
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
            self.show_error("File not found", "These files do not exist:\n" + "\n".join(missing))
            paths = [p for p in paths if p not in missing]
        projects = [p for p in paths if p.endswith(".calibsim")]
        if projects:
            self.projects.open(projects[0])
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
        if per_file is None:                     # the worker counts their lines, then the user says
            self.incoming_input = {"paths": paths, "kind": "documents", "options": options or {}}
            self.input_runner.start(measure_text_files, paths, options or {})
            self.update_results_hint()
            return
        self.read_documents(paths, {**(options or {}), "per_file": per_file})

    def ask_document_mode(self, dropped: DroppedTexts) -> None:
        """One document per line or per file? Then read the text files so."""
        layout = dropped.layout
        dialog = DocumentModeDialog(self.parent()) if layout is None else DocumentModeDialog(
            self.parent(), lines=layout.lines, files=layout.files, per_file=layout.per_file,
            median_lines=layout.median_lines)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.read_documents(dropped.paths, {**dropped.options, "per_file": dialog.per_file()})

    def read_pairs(self, path: str, options: dict) -> None:
        self.incoming_input = {"paths": [path], "kind": "pairs", "options": options}
        self.input_runner.start(read_pairs_or_columns, path, options, self.preferences.memory_budget(),
                                       self.preload)
        self.update_results_hint()

    def read_documents(self, paths: list[str], options: dict) -> None:
        self.incoming_input = {"paths": paths, "kind": "documents", "options": options}
        budget = self.preferences.memory_budget()
        self.input_runner.start(read_document_files, paths, options, budget, self.preload)

    def input_read(self, value) -> None:
        if isinstance(value, DroppedTexts):
            self.ask_document_mode(value)
            return
        if isinstance(value, ColumnsNotFound):
            self.ask_columns(value)
            return
        if getattr(value, "document_column", None) and not self.incoming_input["options"].get("text_a"):
            self.ask_reading(value)              # pairs or a document set? the current work stays till then
            return
        state = self.state
        if isinstance(value, DocumentSet) and (refusal := document_refusal(
                value, state.embedder, state.profile, state.metric, self.session_model.scoring_geometry(),
                self.preferences.memory_budget())):
            kept = "\n\nThe results on screen stay as they were." if self.state.results is not None else ""
            self.show_error("Cannot score the documents", refusal + kept)
            return                                       # the input and results on screen stay
        self.session_model.accept_input(value, self.incoming_input)   # scored on its `scores_stale`
        self.panels.tabs.setCurrentWidget(self.panels.view("results"))

    def input_failed(self, message: str) -> None:
        self.show_error("Cannot read the input", message)

    def ask_columns(self, problem) -> None:
        """Let the user say which columns hold the texts when they could not be recognised."""
        dialog = ColumnMappingDialog(problem.path, problem.columns, None, self.parent(), preview=problem.preview)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.read_pairs(str(problem.path), dialog.mapping())
        else:
            self.show_error("Cannot read the input", str(problem))

    def ask_reading(self, table) -> None:
        """A table that reads as pairs or as a document set (AG News: label, title, description):
        ask which, and from which columns; Cancel keeps the current work."""
        dialog = ColumnMappingDialog(table.path, list(table.frame.columns),
                                     {"text_a": table.text_a, "text_b": table.text_b, "label": table.label},
                                     self.parent(), preview=table.frame.head(5), documents=table.document_column)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            self.status.emit(f"{Path(table.path).name} was not opened; the current work stays.")
            return
        encoding = self.incoming_input["options"].get("encoding")
        if dialog.documents_column() is not None:
            self.read_documents([str(table.path)], {"column": dialog.documents_column(), "per_file": False,
                                                    **({"encoding": encoding} if encoding else {})})
        else:
            self.read_pairs(str(table.path), {**dialog.mapping(), **({"encoding": encoding} if encoding else {})})

    def rescore(self, _reason: str = "") -> None:
        """Score the current input with the current model and references (cancels a running score):
        on the session model's `scores_stale`, and when the metric or the long-text choice changes."""
        state = self.state
        if not self.session_model.ready_to_score() or self.profile_runner.running:
            return                     # new references are on their way; they rescore when ready
        table, embedder, profile, cache = state.input, state.embedder, state.profile, self.cache
        budget = self.preferences.memory_budget()
        self.scored_chunks = []
        self.score_failure = ""
        if (distributions := self.panels.view("distributions", build=False)) is not None:
            distributions.reset()
        if isinstance(table, PairTable):
            geometries, human = self.session_model.pair_scoring()
            long_texts = self.preferences.long_text_options()
            # about 100 steps (progress, time left, the growing histogram), 16 to 256 pairs each
            chunk = int(min(256, max(16, len(table.frame) // 100)))
            self.scoring_name = Path(table.path).name
            self.score_runner.start(lambda progress, should_stop: Scorer(
                embedder, profile, geometry=geometries, human=human, cache=cache,
                chunk_pairs=chunk, memory_budget=budget, **long_texts).iter_score(table, should_stop))
        else:
            files = getattr(table, "files", None) or []
            self.scoring_name = (Path(files[0]).name if len(files) == 1
                                 else plural(len(files), "document file") if files else "the documents")
            self.score_runner.start(score_documents, table, embedder, profile, metric=state.metric,
                                      geometry=self.session_model.scoring_geometry(), cache=cache, budget=budget)

    def view_changed(self) -> None:
        """A document set's results hold one metric: compute them again when another is chosen."""
        results = self.state.results
        if isinstance(results, (DocumentMatrix, NeighbourPairs)) and results.metric != self.state.metric:
            self.rescore()

    def scored_chunk(self, chunk) -> None:
        """A chunk of the running score: kept for the live histogram, drawn if its tab is built."""
        self.scored_chunks.append(chunk)
        if (distributions := self.panels.view("distributions", build=False)) is not None:
            distributions.add_partial(chunk)
        self.scoring_progress.emit(chunk.done, chunk.total,
                                   f"Scored {chunk.done:,} of {plural(chunk.total, 'pair')}…", chunk.work)

    def scored(self, results) -> None:
        self.scored_chunks = []
        self.state.set_results(results)

    def score_failed(self, message: str) -> None:
        """Scoring stopped with `message` (shown by the task status): the placeholder says why."""
        self.score_failure = for_the_app(message.partition("\n\nTraceback")[0])
        self.update_results_hint()

    def update_results_hint(self, _busy: bool = False) -> None:
        """The Results placeholder says what happens: scoring a file (under which geometry fix), or
        what to drop (a view not built yet is told when it is built)."""
        hint = getattr(self.panels.view("results", build=False), "hint", None)
        if hint is None:
            return
        if self.score_runner.running and self.scoring_name:
            fix = self.session_model.scoring_geometry()
            under = f" under the geometry fix {fix}" if fix != "none" else ""
            hint.setText(f"Scoring {self.scoring_name}{under}…")
        elif self.input_runner.running and self.incoming_input:
            hint.setText(f"Reading {Path(self.incoming_input['paths'][0]).name}…")
        elif self.state.input is not None and self.state.results is None and self.score_failure:
            hint.setText(f"{self.scoring_name or 'The input'} could not be scored: {self.score_failure}")
        elif self.state.input is not None and self.state.results is None:
            hint.setText(f"{self.scoring_name or 'The input'} is not scored yet: it is scored as soon as "
                         "the model and references are ready.")
        else:
            hint.setText(EMPTY_HINT)
