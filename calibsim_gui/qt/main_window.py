"""calibsim's main window: the panels, the menus, the status bar and the runs that feed them."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialog,
    QFileDialog,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QTabWidget,
    QToolButton,
)

from calibsim_gui import __version__
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.embedding.devices import embedder_precision
from calibsim_gui.qt import palettes
from calibsim_gui.qt.agreement_view import AgreementView
from calibsim_gui.qt.anchor_editor import AnchorEditor
from calibsim_gui.qt.autosave import Autosaver
from calibsim_gui.qt.background_loader import BackgroundLoader
from calibsim_gui.qt.export_dialog import ExportDialog
from calibsim_gui.qt.first_run import FirstRunView, shortcuts_html
from calibsim_gui.qt.input_dialogs import ColumnMappingDialog, DocumentModeDialog
from calibsim_gui.qt.model_manager import ModelManager
from calibsim_gui.qt.plots import DistributionPlot, HeatmapView
from calibsim_gui.qt.results_view import ResultsView
from calibsim_gui.qt.search_view import SearchView
from calibsim_gui.qt.space_view import SpaceView
from calibsim_gui.qt.state import AppState
from calibsim_gui.qt.workers import TaskRunner, wait_for_workers

PAIR_SUFFIXES = {".csv", ".tsv", ".tab", ".jsonl", ".ndjson"}
MAX_RECENT = 8
MEMORY_BUDGET_KEY = "memory/budget_bytes"     # 0 or absent: the default budget
LONG_TEXTS_KEY = "scoring/long_texts"          # "truncate" (default), "chunk:match", "chunk:max", "chunk:mean"
CHUNK_OVERLAP_KEY = "scoring/chunk_overlap"    # tokens shared by neighbouring chunks
LONG_TEXT_CHOICES = (
    ("truncate", "&Truncate: score the beginning, mark the pair",
     "The model sees only its first tokens (256 for the built-in model); the pair is marked in "
     "the 'truncated' column"),
    ("chunk:match", "Split into chunks, score each chunk's best &match, averaged both ways",
     "Encode every chunk of a long text; identical texts score as identical and a changed passage "
     "lowers the score"),
    ("chunk:max", "Split into chunks, score the &best chunk pair (max)",
     "Encode every chunk of a long text; the pair scores its most similar chunk pair"),
    ("chunk:mean", "Split into chunks, score the &mean over chunk pairs",
     "Encode every chunk of a long text; the pair scores the mean over its chunk pairs"),
)


MIN_FIRST_SIZE = (1024, 700)     # a first launch opens at 80 % of the screen, at least this
ALERT_AFTER_S = 5.0              # a run this long that ends while the window is inactive alerts


# The core's messages name command-line flags (they serve the CLI too); in the window they name
# what the app offers instead. Most specific first; a flag not listed here is left as it is.
APP_WORDING = (
    (r"fit it again with `calibsim human fit` \(or (File ▸ Fit human calibration)\)", r"fit it again (\1)"),
    (r"e\.g\. --scale 0,5 or --scale 1,5", "e.g. 0,5 or 1,5 when the app asks for the scale"),
    (r"e\.g\. --scale 0,5", "e.g. 0,5"),
    (r" \(or name it with --label\)", " (or pick it when the columns are asked for)"),
    (r"--label-column", "the column of human scores"),
    (r"pass a column of numbers to --label, or leave --label out",
     "pick a column of numbers as human scores, or none"),
    (r"(pick|name) the (two )?text columns with --text-a COL --text-b COL",
     r"\1 the \2text columns in the dialog that asks for them"),
    (r"name two different columns with --text-a COL --text-b COL", "pick two different text columns"),
    (r"name the column that holds the texts with --column COL", "pick the column that holds the texts"),
    (r"--memory-budget, (Settings ▸ )", r"\1"),
    (r"raise the memory budget \(--memory-budget\)", "raise the memory budget (Settings ▸ Memory budget)"),
    (r"use e\.g\. --chunk-overlap (\d+)", r"set Settings ▸ Long texts ▸ Chunk overlap to e.g. \1"),
    (r"use --chunk-overlap below", "set Settings ▸ Long texts ▸ Chunk overlap below"),
    (r"fewer pairs \(--pairs\)", "fewer background pairs"),
    (r"a multilingual model \(--model FOLDER\)", "a multilingual model (Model tab)"),
    (r"or add --force to replace it", "or choose to replace it"),
    (r"choose --metric (\w+)", r"choose the metric \1"),
    (r"choose --form from", "choose a calibrated form from"),
)


def for_the_app(message: str) -> str:
    """A core message worded for the window: command-line flags become menus and dialogs."""
    import re

    for pattern, replacement in APP_WORDING:
        message = re.sub(pattern, replacement, message)
    return message


def plural(n: int, word: str, words: str | None = None) -> str:
    """'1 pair', '2 pairs', '1,024 pairs'."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def format_seconds(seconds: float) -> str:
    """'0.4 s', '12 s', '3 min 05 s'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def _load_and_warm_up(info_or_spec, device, precision, prompts=None, engine="auto", *, progress, should_stop):
    """Load a model and pay its first-call costs now, off the GUI thread.

    The first encode (torch start-up) and the first imports of scipy's statistics hold the
    interpreter lock for 100-200 ms; doing them here keeps later runs from stalling the window.
    """
    import scipy.spatial.distance  # noqa: F401
    import scipy.stats  # noqa: F401

    from calibsim_gui.core.embedding.models import load_model

    embedder = load_model(info_or_spec, device=device, precision=precision, prompts=prompts, engine=engine)
    embedder.encode_batch(["calibsim warms up the model"])
    return embedder


def _export_report(results, profile, *, path, metric, form, figures, force, progress, should_stop):
    """Build the report and write it (plus its figures when asked); returns the files written."""
    from calibsim_gui.core.reports import build_report, write_figures, write_report

    report = build_report(results, profile, metric=metric, form=form)
    written = [write_report(report, path, force=force, inputs=report.input_files, progress=progress,
                            should_stop=should_stop)]
    if figures:
        written += write_figures(report, path, force=force)
    return written


def _read_pairs_or_columns(path, options, budget, *, progress, should_stop):
    """`load_pairs`, or the `ColumnsNotFound` problem itself so the window can ask the user."""
    from calibsim_gui.core.io.inputs import ColumnsNotFound, load_pairs

    try:
        return load_pairs(path, memory_budget=budget, **options)
    except ColumnsNotFound as problem:
        return problem


class MainWindow(QMainWindow):
    """Panels in tabs over one `AppState`; every long action runs in a `TaskRunner`."""

    results_shown = Signal()          # emitted when a run's final results reach the views
    ask_before_discarding = True      # ask Save / Discard / Cancel before work is dropped (tests turn it off)

    def __init__(self, *, load_default_model: bool = True, autosave: bool = True):
        super().__init__()
        self.setWindowTitle(f"calibsim {__version__}")
        self.setAcceptDrops(True)
        self.settings = QSettings("calibsim", "calibsim")
        self.state = AppState(self)
        self.project_path: str | None = None
        self.input_spec: dict | None = None           # how the current input was read
        self.profile_path: str | None = None          # a profile opened from a file
        self._incoming_input: dict | None = None      # input_spec of the file being read
        self._incoming_source = (None, None)          # profile_path, built_from of coming references
        self._anchor_edits = None                     # a project's unapplied anchor edits (a dict)
        self._awaiting_profile = False                # a project's references are on their way
        self._pending_project = None                  # a project waiting for its model
        self._project_step = None                     # ("rebuild" | "anchors", project) waiting for a run
        self.built_from: dict | None = None           # files, pairs, seed of a background built here
        self._cache = None
        self._cache_failed = False                    # the cache folder is unusable: go on without
        self._cache_warnings_shown = 0                # how many of the cache's warnings were shown
        self._last_error: QMessageBox | None = None   # the latest error box (not modal)
        self._saved_snapshot: str | None = None       # what the saved/opened project holds (see unsaved_work)
        self._resnapshot = False                      # take the snapshot again once a project is re-created
        self._pending_labels = None                   # a project's label column and scale, for its input
        self._done_note = ""                          # "Scoring done in 3.2 s", shown in the idle message
        self._scoring_name = ""                       # the file being scored, for the Results placeholder
        self._human_file = None                       # the human calibration last saved to / opened from a file

        self.model_runner = TaskRunner("loading model", self)
        self.profile_runner = TaskRunner("preparing references", self)
        self.input_runner = TaskRunner("reading input", self)
        self.score_runner = TaskRunner("scoring", self)
        self.export_runner = TaskRunner("exporting report", self)
        self.human_runner = TaskRunner("fitting the human calibration", self)
        self.compare_runner = TaskRunner("scoring with the other model", self)
        self.runners = [self.model_runner, self.profile_runner, self.input_runner, self.score_runner,
                        self.export_runner, self.human_runner, self.compare_runner]

        self.models = ModelManager(self.state)
        self.anchors = AnchorEditor(self.state)
        self.background = BackgroundLoader(self.state, memory_budget=self.memory_budget)
        self.results = ResultsView(self.state)
        self.distributions = DistributionPlot(self.state)
        self.agreement = AgreementView(self.state)
        self.heatmap = HeatmapView(self.state)
        self.space = SpaceView(self.state)
        self.runners.append(self.space.runner)
        self.search = SearchView(self.state, cache=lambda: self.cache, memory_budget=self.memory_budget)
        self.runners += [self.search.runner, self.search.export_runner]
        self.welcome = FirstRunView()
        self.welcome.open_file_requested.connect(self.choose_inputs)
        self.welcome.open_demo_requested.connect(self.open_demo)
        self.welcome.open_project_requested.connect(self.choose_project)
        self.tabs = QTabWidget()
        # mnemonics are unique across tabs and menus (Alt+H is Help; Heatmap is Alt+E)
        for widget, title in ((self.welcome, "&Welcome"), (self.models, "&Model"),
                              (self.anchors, "&Anchors"),
                              (self.background, "&Background"), (self.results, "&Results"),
                              (self.distributions, "&Distributions"), (self.agreement, "Agreeme&nt"),
                              (self.heatmap, "H&eatmap"),
                              (self.space, "S&pace"), (self.search, "Sear&ch")):
            self.tabs.addTab(widget, title)
        self.tabs.setCurrentWidget(self.welcome)       # the first view says what to do
        self.setCentralWidget(self.tabs)
        self._build_shortcuts()
        self._build_status_bar()
        self._build_menus()
        self._connect()
        self._restore_settings()
        self.autosaver = Autosaver(self) if autosave else None     # off for demos and self-tests
        self._restore_box: QMessageBox | None = None
        if load_default_model:
            QTimer.singleShot(0, self._load_default_model)
        if autosave:
            QTimer.singleShot(0, self._offer_restore)

    # ------------------------------------------------------------------ set-up

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.status_label = QLabel("Starting…")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(260)
        self.progress.setTextVisible(True)
        self.progress.hide()
        # one running task: Cancel stops it; several: Cancel opens a menu of them (and "all")
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.hide()
        self.cancel_button.clicked.connect(self._cancel_clicked)
        self.cancel_menu = QMenu(self.cancel_button)
        self.memory_label = QLabel()
        self.memory_label.setToolTip("Runs that would need more memory are refused before they "
                                     "start (Settings ▸ Memory budget)")
        bar.addWidget(self.status_label, 1)
        bar.addPermanentWidget(self.memory_label)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel_button)

    def _build_shortcuts(self) -> None:
        """Esc (scoped, see `escape`), Ctrl+Tab / Ctrl+Shift+Tab and Ctrl+1..9 for the tabs."""
        def shortcut(keys, slot):
            item = QShortcut(QKeySequence(keys), self)
            item.setContext(Qt.ShortcutContext.WindowShortcut)
            item.activated.connect(slot)
            return item

        self.escape_shortcut = shortcut(Qt.Key.Key_Escape, self.escape)
        shortcut("Ctrl+Tab", lambda: self.step_tab(1))
        shortcut("Ctrl+Shift+Tab", lambda: self.step_tab(-1))
        shortcut("Ctrl+Backtab", lambda: self.step_tab(-1))        # how some platforms send it
        shortcut("Ctrl+PgDown", lambda: self.step_tab(1))
        shortcut("Ctrl+PgUp", lambda: self.step_tab(-1))
        for n in range(1, 9):
            shortcut(f"Ctrl+{n}", lambda n=n: self.tabs.setCurrentIndex(min(n, self.tabs.count()) - 1))
        shortcut("Ctrl+9", lambda: self.tabs.setCurrentIndex(self.tabs.count() - 1))   # the last, as in browsers

    def step_tab(self, step: int) -> None:
        self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % self.tabs.count())

    def _action(self, menu, text, slot, shortcut=None, tip=None) -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        file = self.menuBar().addMenu("&File")
        self._action(file, "&Open input…", self.choose_inputs, QKeySequence.StandardKey.Open,
                     "Open a pairs file (CSV/TSV/JSONL) or text documents")
        self._action(file, "Add &background…", self.choose_background, "Ctrl+Shift+B",
                     "Add background corpus files")
        file.addSeparator()
        self._action(file, "Open &project…", self.choose_project, "Ctrl+Shift+O")
        self.recent_menu = file.addMenu("&Recent projects")
        self._action(file, "&Save project", self.save_project, QKeySequence.StandardKey.Save)
        self._action(file, "Save project &as…", self.save_project_as, "Ctrl+Shift+S")
        file.addSeparator()
        self._action(file, "&Export report…", self.export_report, "Ctrl+E",
                     "Write the results as an HTML/PDF report, XLSX, JSON or CSV")
        file.addSeparator()
        self._action(file, "Fit &human calibration…", self.choose_human_pairs, "Ctrl+Shift+H",
                     "Fit a map from scores to expected human similarity on pairs people scored")
        self._action(file, "Open human cali&bration…", self.choose_human_file)
        self.save_human_action = self._action(file, "Save human calibration…", self.save_human)
        self.save_human_action.setEnabled(False)
        self._action(file, "&Compare with another model…", self.choose_comparison_model, "Ctrl+Shift+M",
                     "Score the same pairs with another model: raw scores disagree, calibrated agree?")
        self._action(file, "Find a &threshold…", self.show_threshold, "Ctrl+Shift+T",
                     "On labelled pairs: the score above which pairs mean the same, raw and calibrated")
        file.addSeparator()
        self._action(file, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        view = self.menuBar().addMenu("&View")
        self.dark_action = self._action(view, "&Dark palette", self.toggle_palette, "Ctrl+Shift+D")
        self.dark_action.setCheckable(True)
        settings = self.menuBar().addMenu("&Settings")
        self._action(settings, "&Memory budget…", self.choose_memory_budget, None,
                     "The most memory one run may hold; larger runs are refused before they start")
        long_menu = settings.addMenu("&Long texts")
        long_menu.setToolTipsVisible(True)
        self.long_text_actions = QActionGroup(self)
        chosen = self.long_text_setting()
        for key, text, tip in LONG_TEXT_CHOICES:
            action = self._action(long_menu, text, lambda _=False, key=key: self.set_long_texts(key),
                                  None, tip)
            action.setCheckable(True)
            action.setChecked(key == chosen)
            action.setData(key)
            self.long_text_actions.addAction(action)
        long_menu.addSeparator()
        self._action(long_menu, "Chunk &overlap…", self.choose_chunk_overlap, None,
                     "Tokens shared by neighbouring chunks of a long text")
        help_ = self.menuBar().addMenu("&Help")
        self._action(help_, "&Getting started", self.show_getting_started, QKeySequence.StandardKey.HelpContents,
                     "What calibsim does and how to start")
        self._action(help_, "&Keyboard shortcuts", self.show_shortcuts)
        self._action(help_, "Open the &demo", self.open_demo, None, "Score the demo sentence pairs")
        help_.addSeparator()
        self._action(help_, "&About calibsim", self.about)
        self._refresh_recent()

    def _connect(self) -> None:
        for runner in self.runners:
            runner.finished.connect(self._task_done)         # first: later slots may say more
            runner.busy.connect(self._update_busy)
            runner.progress.connect(self._show_progress)
            if runner is not self.input_runner:
                runner.failed.connect(self._run_failed)
        self.input_runner.failed.connect(self._input_failed)
        self.profile_runner.failed.connect(self._references_settled)
        self.background.runner.finished.connect(self._background_read)
        self.model_runner.finished.connect(self._model_loaded)
        self.profile_runner.finished.connect(self._profile_ready)
        self.input_runner.finished.connect(self._input_read)
        self.score_runner.partial.connect(self._scored_chunk)
        self.score_runner.finished.connect(self._scored)
        self.export_runner.finished.connect(self._exported)
        self.human_runner.finished.connect(self._human_fitted)
        self.compare_runner.finished.connect(self._compared)
        self.state.human_changed.connect(self.rescore)
        self.models.load_requested.connect(self._model_requested)
        self.anchors.anchors_applied.connect(self.apply_anchors)
        self.background.build_requested.connect(self.build_background)
        self.background.profile_open_requested.connect(self.open_profile)
        self.background.builtin_requested.connect(self._builtin_requested)
        self.state.results_changed.connect(self._results_changed)
        self.state.input_changed.connect(self._update_results_hint)
        self.score_runner.busy.connect(self._update_results_hint)
        self.state.view_changed.connect(self._view_changed)
        self.space.geometry_chosen.connect(self.state.set_geometry)
        self.state.geometry_changed.connect(self.rescore)

    # ------------------------------------------------------------------ status

    def running_tasks(self) -> list:
        return [r for r in self.runners if r.running]

    def _update_busy(self, busy: bool = False) -> None:
        running = self.running_tasks()
        if busy:
            self._done_note = ""
        self.progress.setVisible(bool(running))
        self.cancel_button.setVisible(bool(running))
        self.cancel_menu.clear()
        if len(running) > 1:
            self.cancel_button.setText("Cancel ▾")
            self.cancel_button.setToolTip("Choose the task to stop: " + ", ".join(r.name for r in running))
            for runner in running:
                self.cancel_menu.addAction(f"Stop {runner.name}", runner.cancel)
            self.cancel_menu.addSeparator()
            self.cancel_menu.addAction("Stop all", self.cancel_all)
            self.cancel_button.setMenu(self.cancel_menu)
            self.cancel_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        else:
            self.cancel_button.setMenu(None)
            self.cancel_button.setText("Cancel")
            self.cancel_button.setPopupMode(QToolButton.ToolButtonPopupMode.DelayedPopup)
            if running:
                self.cancel_button.setToolTip(f"Stop {running[0].name} (Esc on its tab)")
        self.models.set_busy(self.model_runner.running)
        self.background.set_busy(self.profile_runner.running)
        if running:
            self.progress.setRange(0, 0)
            self.progress.setFormat("%p%")
            self.status_label.setText(f"{running[0].name.capitalize()}…")
        else:
            self.status_label.setText(self._idle_message())
        self._show_cache_warnings()

    def _task_done(self, _result=None) -> None:
        """Say how long a run took; alert the desktop when a long one ends in the background."""
        runner = self.sender()
        if runner is None or runner.duration < 0.5:
            return
        self._done_note = f"{runner.name.capitalize()} done in {format_seconds(runner.duration)}"
        self.status_label.setText(self._done_note if self.running_tasks() else self._idle_message())
        if runner.duration >= ALERT_AFTER_S and not self.isActiveWindow():
            self.notify_done(self._done_note)

    def notify_done(self, text: str) -> None:
        """A long run ended while the user was elsewhere: flash the task-bar entry."""
        QApplication.alert(self)
        self.setWindowTitle(f"calibsim {__version__} — {text}")
        QTimer.singleShot(10_000, lambda: self.setWindowTitle(f"calibsim {__version__}"))

    def _cancel_clicked(self) -> None:
        running = self.running_tasks()
        if len(running) == 1:
            running[0].cancel()
            self.status_label.setText(f"Stopped {running[0].name}.")

    def view_runners(self, widget=None) -> list:
        """The runners whose work the tab `widget` (default: the current tab) shows."""
        widget = widget if widget is not None else self.tabs.currentWidget()
        scoring = [self.score_runner, self.input_runner]
        per_view = {
            self.models: [self.model_runner],
            self.anchors: [self.profile_runner],
            self.background: [self.profile_runner, getattr(self.background, "runner", None)],
            self.results: scoring + [self.human_runner, self.compare_runner, self.export_runner],
            self.distributions: scoring, self.heatmap: scoring, getattr(self, "agreement", None): scoring,
            self.space: [self.space.runner],
            self.search: [self.search.runner, self.search.export_runner],
        }
        return [r for r in per_view.get(widget, []) if r is not None]

    def escape(self) -> None:
        """Esc: clear the text field being typed in; else stop the current tab's task.

        Several tasks on this tab: ask which (the Cancel menu). Tasks of other tabs go on.
        """
        focus = QApplication.focusWidget()
        if (isinstance(focus, QLineEdit) and not focus.isReadOnly()
                and not isinstance(focus.parentWidget(), (QAbstractSpinBox, QComboBox))):
            parent = focus.parentWidget()
            if parent is not None and isinstance(parent.parentWidget(), QAbstractItemView):
                # a table cell being edited: let its delegate revert the edit as Esc does
                QApplication.sendEvent(focus, QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_Escape,
                                                        Qt.KeyboardModifier.NoModifier))
                return
            if focus.text():
                focus.clear()
                return
        running = [r for r in self.view_runners() if r.running]
        if len(running) == 1:
            running[0].cancel()
            self.status_label.setText(f"Stopped {running[0].name}.")
        elif len(running) > 1:
            menu = QMenu(self)
            for runner in running:
                menu.addAction(f"Stop {runner.name}", runner.cancel)
            menu.addAction("Stop all of them", lambda: [r.cancel() for r in running])
            self._escape_menu = menu
            menu.popup(self.cancel_button.mapToGlobal(self.cancel_button.rect().topLeft()))
        elif self.running_tasks():
            self.status_label.setText("Nothing runs on this tab; the Cancel button in the status bar "
                                      "stops the other tasks.")

    def _idle_message(self) -> str:
        state = self.state
        if state.embedder is None:
            return "No model loaded."
        embedder = state.embedder
        parts = [f"Model {embedder.fingerprint.name} on {embedder.device} in {embedder_precision(embedder)}"]
        if state.profile is not None:
            parts.append(f"reference: {state.profile_label}")
        if self._cache_failed or (self._cache is not None and self._cache.off):
            parts.append("no embedding cache (texts are encoded every time)")
        if state.input is None:
            parts.append("drop a pairs file or documents onto the window")
        if self._done_note:
            parts.insert(0, self._done_note)
        return " · ".join(parts)

    def _show_progress(self, done: int, total: int, message: str, work: float | None = None) -> None:
        """Progress of the sending runner; `work` (0 to 1), when given, is the share of the work
        done, which the bar and the time left follow instead of ``done / total``."""
        runner = self.sender()
        if work is not None:
            done, total = round(1000 * work), 1000
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            left = runner.time_left(done, total) if hasattr(runner, "time_left") else None
            self.progress.setFormat("%p%" + (f" · {format_seconds(left)} left" if left is not None else ""))
        if message:
            self.status_label.setText(message)

    def _run_failed(self, message: str) -> None:
        runner = self.sender()
        self.show_error(f"{getattr(runner, 'name', 'task').capitalize()} failed", message)

    def show_error(self, title: str, message: str) -> None:
        """A non-modal warning (a worker's traceback goes under Show Details) and the status line."""
        message, _, details = message.partition("\n\nTraceback")
        message = for_the_app(message)
        self.status_label.setText(message.splitlines()[0])
        box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText("Traceback" + details)
        box.setModal(False)
        box.show()
        self._last_error = box

    def cancel_all(self) -> None:
        for runner in self.runners:
            runner.cancel()
        self.status_label.setText("Cancelled.")

    # ------------------------------------------------------------------ unsaved work

    def _snapshot(self, project) -> str:
        """The parts of a project that are the user's work (not view choices) as one string."""
        data = project.to_dict()
        settings = data.pop("settings", {})
        keep = {k: settings[k] for k in ("anchor_edits", "label_column", "label_scale") if k in settings}
        return json.dumps({**data, "settings": keep}, sort_keys=True, default=str)

    def unsaved_work(self) -> list[str]:
        """What this session holds that no saved project keeps, in words (empty: nothing)."""
        project = self.current_project()
        if self._saved_snapshot is not None and self._snapshot(project) == self._saved_snapshot:
            return []
        what = []
        if project.inputs:
            what.append("the input " + ", ".join(Path(i.path).name for i in project.inputs))
        if "anchor_edits" in project.settings or project.anchors is not None:
            what.append("your anchor edits")
        if project.human is not None:
            what.append("the human calibration")
        if project.background_files:
            what.append("the background built from your files")
        return what

    def ask_unsaved(self, action: str, what: list[str]) -> str:
        """Save / Discard / Cancel before `action`; returns "save", "discard" or "cancel"."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Unsaved changes",
                          f"This session has unsaved work: {', '.join(what)}.\n\n"
                          f"Save it as a project before {action}?",
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self)
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save",
                QMessageBox.StandardButton.Discard: "discard"}.get(answer, "cancel")

    def confirm_discard(self, action: str, what: list[str] | None = None) -> bool:
        """True when `action` may go on: nothing unsaved, the user saved, or chose to discard."""
        if not self.ask_before_discarding:
            return True
        if what is None:
            try:
                what = self.unsaved_work()
            except Exception:           # never let a bug in the check keep the window from closing
                what = []
        if not what:
            return True
        answer = self.ask_unsaved(action, what)
        if answer == "save":
            return self.save_project()
        return answer == "discard"

    def _builtin_requested(self) -> None:
        """Background tab ▸ Use built-in reference: it replaces an edited anchor ladder, so ask."""
        edited = self.anchors.pending_edits() is not None or "edited anchors" in self.state.profile_label
        if edited and not self.confirm_discard("using the built-in reference (it replaces your anchor "
                                               "ladder with the built-in one)", ["your anchor edits"]):
            return
        self.use_builtin_reference()

    def _model_requested(self, info_or_spec, device: str = "auto") -> None:
        """Model tab ▸ Load: a human calibration belongs to one model, so ask before dropping it."""
        if self.state.human is not None and not self._human_saved():
            if not self.confirm_discard("loading another model (the human calibration fits this "
                                        "model only)", ["the human calibration"]):
                return
        self.load_model(info_or_spec, device)

    def _human_saved(self) -> bool:
        return self.state.human is not None and (
            getattr(self, "_human_file", None) is self.state.human or not self.unsaved_work())

    # ------------------------------------------------------------------ model & references

    @property
    def cache(self):
        """The embedding cache, or None when its folder is unusable (said once; scoring goes on)."""
        if self._cache is None and not self._cache_failed:
            from calibsim_gui.core.embedding.cache import EmbeddingCache
            from calibsim_gui.core.errors import CalibsimError

            try:
                self._cache = EmbeddingCache()
            except CalibsimError as exc:
                self._cache_failed = True
                self.show_error("Embedding cache unavailable",
                                f"{exc}\n\ncalibsim goes on without a cache: texts are encoded every time.")
        return self._cache

    def _show_cache_warnings(self) -> None:
        """Show what the cache reported since last time (e.g. it turned itself off on a full disk)."""
        if self._cache is None:
            return
        new = self._cache.warnings[self._cache_warnings_shown:]
        self._cache_warnings_shown += len(new)
        if new:
            self.show_error("Embedding cache", "\n\n".join(new))

    def _load_default_model(self) -> None:
        self.load_model(None, "auto")

    def load_model(self, info_or_spec, device: str = "auto") -> None:
        self.state.device = device
        self.model_runner.start(_load_and_warm_up, info_or_spec, device, self.models.precision(),
                                self.models.prompts_for(info_or_spec), self.models.engine())

    def _model_loaded(self, embedder) -> None:
        # torch and transformers leave ~10^6 long-lived objects; a full garbage collection over
        # them paused the window for up to 270 ms during runs. Exempt what exists now.
        gc.freeze()
        self.score_runner.cancel()                 # its results are the previous model's
        self.state.set_model(embedder, embedder.info)
        self.profile_path = None
        self.use_builtin_reference()
        self._continue_project()

    def use_builtin_reference(self) -> None:
        from calibsim_gui.core.calibration.profile_builder import default_profile

        embedder = self.state.embedder
        if embedder is None:
            return
        cache = self.cache                       # opened here, on the GUI thread
        self._start_references(
            lambda progress, should_stop: (default_profile(embedder, cache=cache,
                                                           should_stop=should_stop), "built-in"))

    def open_profile(self, path: str) -> None:
        from calibsim_gui.core.calibration.profile import ReferenceProfile

        embedder = self.state.embedder

        def task(progress, should_stop):
            profile = ReferenceProfile.load(path)
            if embedder is not None:
                profile.check_model(embedder.fingerprint, source=path,
                                    prompt=str(getattr(embedder, "prompt", "") or ""))
            return profile, Path(path).name

        self._start_references(task, path=path)

    def apply_anchors(self, anchors) -> None:
        from calibsim_gui.core.calibration.profile_builder import with_anchors

        state = self.state
        if state.profile is None or state.embedder is None:
            return
        profile, embedder, label, cache = state.profile, state.embedder, state.profile_label, self.cache
        self._start_references(
            lambda progress, should_stop: (with_anchors(profile, embedder, anchors, cache=cache,
                                                         should_stop=should_stop),
                                            label.split(" + ")[0] + " + edited anchors"),
            path=self.profile_path, built_from=self.built_from)

    def build_background(self, documents, pairs: int, seed: int) -> None:
        from calibsim_gui.core.calibration.profile_builder import build_profile

        embedder = self.state.embedder
        if embedder is None:
            self.show_error("No model", "Load a model before building a background.")
            return
        anchors = self.anchors.anchor_set()
        built_from = {"files": [str(f) for f in documents.files], "pairs": pairs, "seed": seed}
        cache, budget = self.cache, self.memory_budget()

        def task(progress, should_stop):
            profile = build_profile(embedder, documents.texts, anchors=anchors, n_pairs=pairs,
                                    seed=seed, sources=documents.files, cache=cache,
                                    text_columns=documents.text_columns,
                                    progress=progress, should_stop=should_stop, memory_budget=budget,
                                    name=f"background of {len(documents.files)} files")
            return profile, f"built from {len(documents.files)} file(s)"

        self._start_references(task, built_from=built_from)

    def _start_references(self, task, *, path: str | None = None, built_from: dict | None = None) -> None:
        """Prepare references in the profile worker; `path` and `built_from` count once they arrive."""
        self._incoming_source = (path, built_from)
        self.profile_runner.start(task)

    def _profile_ready(self, result) -> None:
        profile, label = result
        self.profile_path, self.built_from = self._incoming_source
        self.state.set_profile(profile, label)
        if self._take_project_step("anchors"):
            return                          # the project's anchors come next, then the scoring
        self._references_settled()

    def _references_settled(self, failure: str = "") -> None:
        """New references are in, or were refused and those in use stay (with their source):
        show a project's unapplied anchor edits, then score."""
        if (failure and self.state.profile is None and self.state.embedder is not None
                and self._incoming_source != (None, None)):
            self.use_builtin_reference()     # none in use (a new model): the built-in ones, then go on
            return
        self._awaiting_profile = False
        edits, self._anchor_edits = self._anchor_edits, None
        if edits is not None:
            self.anchors.restore_edits(edits)
        self.rescore()

    # ------------------------------------------------------------------ inputs & scoring

    def choose_inputs(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Open input", self.settings.value("inputs/last_dir", ""),
            "Pairs or documents (*.csv *.tsv *.tab *.jsonl *.ndjson *.txt *.md);;All files (*)")
        if paths:
            self.settings.setValue("inputs/last_dir", str(Path(paths[0]).parent))
            self.open_inputs(paths)

    def choose_background(self) -> None:
        self.tabs.setCurrentWidget(self.background)
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Add background corpus", self.settings.value("background/last_dir", ""),
            "Text corpora (*.txt *.md *.csv *.tsv *.jsonl);;All files (*)")
        if paths:
            self.background.add_paths(paths)

    def open_inputs(self, paths, *, per_file: bool | None = None, options: dict | None = None) -> None:
        """Read dropped or chosen files: one pairs table, or text files as a document set.

        `per_file` None asks the user (one document per line or per file) for text files.
        """
        paths = [str(p) for p in paths]
        if len(paths) == 1 and Path(paths[0]).suffix.lower() in PAIR_SUFFIXES:
            self._read_pairs(paths[0], options or {})
            return
        if per_file is None:
            dialog = DocumentModeDialog(self)
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return
            per_file = dialog.per_file()
        self._read_documents(paths, {**(options or {}), "per_file": per_file})

    def _read_pairs(self, path: str, options: dict) -> None:
        self._incoming_input = {"paths": [path], "kind": "pairs", "options": options}
        self.input_runner.start(_read_pairs_or_columns, path, options, self.memory_budget())
        self._update_results_hint()

    def _read_documents(self, paths: list[str], options: dict) -> None:
        from calibsim_gui.core.io.inputs import load_documents

        self._incoming_input = {"paths": paths, "kind": "documents", "options": options}
        budget = self.memory_budget()
        self.input_runner.start(lambda progress, should_stop: load_documents(
            paths, memory_budget=budget, **options))

    def _input_read(self, value) -> None:
        from calibsim_gui.core.io.inputs import ColumnsNotFound

        if isinstance(value, ColumnsNotFound):
            self.ask_columns(value)
            return
        self.input_spec = self._incoming_input          # only an accepted input is the session's
        self.state.set_input(value)
        labels, self._pending_labels = self._pending_labels, None
        if labels is not None and hasattr(self.state, "set_labels") and labels[0] in value.frame.columns:
            self.state.set_labels(*labels)             # a project's label column and scale
        self.tabs.setCurrentWidget(self.results)
        self.rescore()

    def _input_failed(self, message: str) -> None:
        self.show_error("Cannot read the input", message)

    def ask_columns(self, problem) -> None:
        """Let the user say which columns hold the texts when they could not be recognised."""
        dialog = ColumnMappingDialog(problem.path, problem.columns, None, self, preview=problem.preview)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self._read_pairs(str(problem.path), dialog.mapping())
        else:
            self.show_error("Cannot read the input", str(problem))

    def rescore(self) -> None:
        """Score the current input with the current model and references (cancels a running score)."""
        from calibsim_gui.core.analysis.matrices import score_matrix
        from calibsim_gui.core.analysis.pairs import iter_score_pairs
        from calibsim_gui.core.io.inputs import PairTable

        state = self.state
        if state.input is None or state.embedder is None or state.profile is None:
            return
        if self.profile_runner.running or self._awaiting_profile:
            return                     # new references are on their way; they rescore when ready
        inputs, embedder, profile, cache = state.input, state.embedder, state.profile, self.cache
        budget = self.memory_budget()
        self.distributions.reset()
        geometry = state.geometry if state.geometry in profile.geometry_names() else "none"
        if isinstance(inputs, PairTable):
            human = [state.human.calibrator] if state.human is not None else []
            geometries = tuple(dict.fromkeys(["none", geometry] + [h.geometry for h in human]))
            long_texts = self.long_text_options()
            # about 100 steps (progress, time left, the growing histogram), 16 to 256 pairs each
            chunk = int(min(256, max(16, len(inputs.frame) // 100)))
            self._scoring_name = Path(inputs.path).name
            self.score_runner.start(lambda progress, should_stop: iter_score_pairs(
                inputs, embedder, profile, geometry=geometries, human=human, cache=cache,
                should_stop=should_stop, chunk_pairs=chunk, memory_budget=budget, **long_texts))
        else:
            files = getattr(inputs, "files", None) or []
            self._scoring_name = (Path(files[0]).name if len(files) == 1
                                  else plural(len(files), "document file") if files else "the documents")
            self.score_runner.start(lambda progress, should_stop: score_matrix(
                inputs, embedder, profile, metric=state.metric, forms=("calibrated",), geometry=geometry,
                cache=cache, progress=progress, should_stop=should_stop, memory_budget=budget))

    def _view_changed(self) -> None:
        """A document matrix holds one metric: compute it again when another is chosen."""
        results = self.state.results
        if isinstance(results, DocumentMatrix) and results.metric != self.state.metric:
            self.rescore()

    def _scored_chunk(self, chunk) -> None:
        self.distributions.add_partial(chunk)
        self._show_progress(chunk.done, chunk.total,
                            f"Scored {chunk.done:,} of {plural(chunk.total, 'pair')}…", chunk.work)

    def _scored(self, results) -> None:
        self.state.set_results(results)

    def _results_changed(self) -> None:
        if self.state.results is not None:
            if self._resnapshot and self._pending_project is None and not self.profile_runner.running:
                self._resnapshot = False
                self._saved_snapshot = self._snapshot(self.current_project())
            self._update_busy()
            self.results_shown.emit()
            if getattr(self.space, "_stale", False) and not self.space.runner.running:
                QTimer.singleShot(0, self._refresh_space)     # ready before the Space tab is opened

    def _refresh_space(self) -> None:
        if getattr(self.space, "_stale", False) and not self.space.runner.running:
            self.space.refresh()

    def _update_results_hint(self, _busy: bool = False) -> None:
        """The Results placeholder says what happens: scoring a file, or what to drop."""
        from calibsim_gui.qt.results_view import EMPTY_HINT

        hint = getattr(self.results, "hint", None)
        if hint is None:
            return
        if self.score_runner.running and self._scoring_name:
            hint.setText(f"Scoring {self._scoring_name}…")
        elif self.input_runner.running and self._incoming_input:
            hint.setText(f"Reading {Path(self._incoming_input['paths'][0]).name}…")
        elif self.state.input is not None and self.state.results is None:
            hint.setText(f"{self._scoring_name or 'The input'} is not scored yet: it is scored as soon as "
                         "the model and references are ready.")
        else:
            hint.setText(EMPTY_HINT)

    def export_report(self) -> None:
        """Ask where and how (Export dialog), then write the report in a worker."""
        results, profile = self.state.results, self.state.profile
        if results is None or profile is None:
            self.show_error("Nothing to export", "Score a pairs file or a document set first.")
            return
        metrics = ([results.metric] if isinstance(results, DocumentMatrix) else
                   [m for m in METRICS if f"{m}_raw" in results.frame.columns])
        dialog = ExportDialog(default_path=self._default_export_path(), metrics=metrics,
                              forms=self.state.forms(), metric=self.state.metric, form=self.state.form,
                              figures=self.settings.value("export/figures", False, type=bool), parent=self,
                              anchors=profile.anchors)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.start_export(**dialog.options())

    def _default_export_path(self) -> str:
        suffix = self.settings.value("export/format", ".html")
        folder = self.settings.value("export/folder", "")
        stem = "calibsim-report"
        if self.input_spec:
            first = Path(self.input_spec["paths"][0])
            stem, folder = f"{first.stem}-report", folder or str(first.parent)
        return str(Path(folder or Path.home()) / f"{stem}{suffix}")

    def start_export(self, *, path: str, metric: str, form: str, figures: bool, force: bool) -> None:
        """Write the current results to `path` (format by extension) in the export worker."""
        self.settings.setValue("export/format", Path(path).suffix.lower())
        self.settings.setValue("export/folder", str(Path(path).parent))
        self.settings.setValue("export/figures", figures)
        self.export_runner.start(_export_report, self.state.results, self.state.profile, path=path,
                                 metric=metric, form=form, figures=figures, force=force)

    def _exported(self, written) -> None:
        extra = f" and {len(written) - 1} figure files" if len(written) > 1 else ""
        self.status_label.setText(f"Exported {written[0]}{extra}")

    def show_threshold(self) -> None:
        """The Threshold dialog for scored pairs with a label column (non-modal)."""
        from calibsim_gui.qt.threshold_view import ThresholdDialog, labelled_columns

        if labelled_columns(self.state.results, self.state.metric) is None:
            self.show_error("No labelled pairs", "Score a pairs file with a column of human scores "
                                                 "or 0/1 labels first (e.g. score,sentence1,sentence2).")
            return
        self.threshold_dialog = ThresholdDialog(self.state.results, self.state.metric, self)
        self.threshold_dialog.show()

    # ------------------------------------------------------------------ human calibration

    def choose_human_pairs(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        path, _ = QFileDialog.getOpenFileName(self, "Pairs scored by people", "",
                                              "Pairs (*.csv *.tsv *.jsonl);;All files (*)")
        if not path:
            return
        scale, ok = QInputDialog.getText(self, "Scale of the human scores",
                                         "The scale the pairs were scored on (low,high):", text="0,5")
        if ok:
            self.fit_human(path, scale)

    def fit_human(self, path: str, scale_text: str, metric: str = "cosine") -> None:
        """Fit a human calibration of the current model on `path` (labelled pairs) in a worker."""
        from calibsim_gui.core.analysis.human_fit import fit_human_calibration

        state = self.state
        try:
            low, high = (float(v) for v in scale_text.split(","))
        except ValueError:
            self.show_error("Scale not understood", f"{scale_text!r}: write the scale as low,high, e.g. 0,5.")
            return
        if state.embedder is None or state.profile is None:
            self.show_error("No model", "Load a model before fitting a human calibration.")
            return
        embedder, profile, cache, budget = state.embedder, state.profile, self.cache, self.memory_budget()
        self.human_runner.start(lambda progress, should_stop: fit_human_calibration(
            path, embedder, profile, scale=(low, high), metric=metric, cache=cache, progress=progress,
            should_stop=should_stop, memory_budget=budget))

    def _human_fitted(self, fit) -> None:
        self.state.set_human(fit)
        self.save_human_action.setEnabled(True)
        v = fit.validation
        text = (f"Fitted on {plural(fit.source['pairs'], 'pair')} of {Path(fit.source['file']).name}. "
                f"Cross-validated error (split by sentence): {v['mae']:.3f} on the 0-1 scale. "
                f"Results now have a {fit.calibrator.metric}_human column.")
        for warning in fit.calibrator.warnings_:
            text += f"\nWarning: {warning}"
        self.status_label.setText(text.splitlines()[0])
        box = QMessageBox(QMessageBox.Icon.Information, "Human calibration", text,
                          QMessageBox.StandardButton.Ok, self)
        box.setModal(False)
        box.show()
        self._last_error = box

    def choose_human_file(self) -> None:
        from calibsim_gui.core.errors import CalibsimError
        from calibsim_gui.core.calibration.human import HUMAN_SUFFIX, HumanFit

        path, _ = QFileDialog.getOpenFileName(self, "Open human calibration", "",
                                              f"Human calibrations (*{HUMAN_SUFFIX})")
        if not path:
            return
        try:
            fit = HumanFit.load(path)
        except CalibsimError as exc:
            self.show_error("Cannot open the human calibration", str(exc))
            return
        embedder = self.state.embedder
        if embedder is not None and fit.calibrator.model not in (None, embedder.fingerprint.id):
            self.show_error("Another model's calibration",
                            f"{path} was fitted on scores of {fit.calibrator.model}; the model in use is "
                            f"{embedder.fingerprint.id}. Fit one for this model (File ▸ Fit human calibration).")
            return
        self.state.set_human(fit)
        self._human_file = fit                    # kept in a file: loading another model loses nothing
        self.save_human_action.setEnabled(True)

    def save_human(self) -> None:
        from calibsim_gui.core.calibration.human import HUMAN_SUFFIX

        if self.state.human is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save human calibration", f"human{HUMAN_SUFFIX}",
                                              f"Human calibrations (*{HUMAN_SUFFIX})")
        if path:
            self.state.human.save(path if path.endswith(HUMAN_SUFFIX) else path + HUMAN_SUFFIX)
            self._human_file = self.state.human
            self.status_label.setText(f"Saved the human calibration to {path}")

    # ------------------------------------------------------------------ model comparison

    def choose_comparison_model(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        if not isinstance(self.state.results, ScoredPairs):
            self.show_error("Nothing to compare", "Score a pairs file first; then compare another model on it.")
            return
        models = self.models.table_model.models          # as listed on the Model tab
        current = self.state.model_info
        names = [str(m.path) if m.source == "local" else m.name for m in models
                 if current is None or m.path != current.path]
        if not names:                   # one model: say how to add another (comparison_view)
            from calibsim_gui.qt.comparison_view import ComparisonDialog

            self.comparison_dialog = ComparisonDialog(None, self, model=current.name if current else "")
            self.comparison_dialog.model_chosen.connect(self.compare_with)
            self.comparison_dialog.show()
            return
        other = "Another folder…"
        choice, ok = QInputDialog.getItem(self, "Compare with another model",
                                          "Score the same pairs with:", names + [other], 0, False)
        if not ok:
            return
        if choice == other:
            choice = QFileDialog.getExistingDirectory(self, "A sentence-transformers model folder")
            if not choice:
                return
        self.compare_with(choice)

    def compare_with(self, spec: str) -> None:
        """Score the current pairs with model `spec` (its own reference, refitted on the current
        anchor ladder) and compare, in a worker."""
        from calibsim_gui.core.analysis.pairs import score_pairs
        from calibsim_gui.core.analysis.comparison import compare_models, comparison_reference
        from calibsim_gui.core.embedding.models import load_model

        state = self.state
        table, mine, embedder, cache = state.input, state.results, state.embedder, self.cache
        metric, device, precision, engine = state.metric, state.device, self.models.precision(), self.models.engine()
        budget = self.memory_budget()
        mine_only_none = mine.frame[[c for c in mine.frame.columns if "@" not in c]]
        ladder = state.profile.anchors          # the same ladder for every model (each encodes it)

        def task(progress, should_stop):
            other = load_model(spec, device=device, precision=precision, engine=engine)
            profile = comparison_reference(other, ladder, cache=cache, should_stop=should_stop)
            theirs = score_pairs(table, other, profile, metrics=[metric], cache=cache, progress=progress,
                                 should_stop=should_stop, memory_budget=budget)
            return compare_models({embedder.fingerprint.id: ScoredPairs(mine_only_none, mine.provenance),
                                   other.fingerprint.id: theirs}, metric=metric,
                                  ladders={embedder.fingerprint.id: ladder,
                                           other.fingerprint.id: profile.anchors})

        self.compare_runner.start(task)

    def _compared(self, comparison) -> None:
        from calibsim_gui.qt.comparison_view import ComparisonDialog

        self.comparison_dialog = ComparisonDialog(comparison, self)
        self.comparison_dialog.show()

    # ------------------------------------------------------------------ projects

    def current_project(self):
        from calibsim_gui.core.references.anchors import builtin_anchors
        from calibsim_gui.core.analysis.project import Project, ProjectInput

        state = self.state
        anchors = state.profile.anchors if state.profile is not None else self.anchors.anchor_set()
        edits = self.anchors.pending_edits()
        model = None
        if state.model_info is not None and state.model_info.source != "built-in":
            model = str(state.model_info.path)
        built = self.built_from or {"files": [], "pairs": self.background.pairs(),
                                    "seed": self.background.seed()}
        inputs = []
        if self.input_spec:
            options = dict(self.input_spec["options"])
            table = state.input
            if self.input_spec["kind"] == "pairs" and getattr(table, "text_a", None):
                # the columns in use, also when they were recognised: the project reads the same ones
                options.setdefault("text_a", table.text_a)
                options.setdefault("text_b", table.text_b)
                if table.label is not None:
                    options.setdefault("label", table.label)
            for path in self.input_spec["paths"]:
                inputs.append(ProjectInput(path, self.input_spec["kind"], dict(options)))
        labels = {}
        if getattr(state, "label_column", None) is not None:
            labels["label_column"] = state.label_column
            if getattr(state, "label_scale", None) is not None:
                labels["label_scale"] = [float(v) for v in state.label_scale]
        human = None
        if state.human is not None:
            from calibsim_gui.core.io.output import dump_json

            fit = state.human           # as plain JSON values (the validation holds numpy numbers)
            human = json.loads(dump_json({"calibrator": fit.calibrator.to_dict(),
                                          "validation": fit.validation, "source": fit.source}))
        return Project(model=model, device=state.device,
                       anchors=None if anchors == builtin_anchors() else anchors,
                       profile=self.profile_path, background_files=built["files"],
                       background_pairs=built["pairs"], background_seed=built["seed"],
                       inputs=inputs, human=human,
                       settings={"metric": state.metric, "form": state.form, "geometry": state.geometry,
                                 **labels, **({"anchor_edits": edits.to_dict()} if edits else {})})

    def save_project(self) -> bool:
        """Save to the project's file (asks for one the first time); True once saved."""
        if self.project_path is None:
            return self.save_project_as()
        return self.write_project(self.project_path)

    def save_project_as(self) -> bool:
        path, _ = QFileDialog.getSaveFileName(self, "Save project", self.project_path or "study.calibsim",
                                              "calibsim projects (*.calibsim)")
        if path:
            return self.write_project(path if path.endswith(".calibsim") else path + ".calibsim")
        return False

    def write_project(self, path: str) -> bool:
        from calibsim_gui.core.errors import CalibsimError

        project = self.current_project()
        try:
            project.save(path)
        except (OSError, CalibsimError) as exc:
            self.show_error("Project not saved", f"{path}: {exc}")
            return False
        self._saved_snapshot = self._snapshot(project)
        self.project_path = path
        self._remember_recent(path)
        self.status_label.setText(f"Saved project {path}")
        return True

    def choose_project(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", "", "calibsim projects (*.calibsim)")
        if path:
            self.open_project(path)

    def open_project(self, path: str) -> None:
        """Restore a saved project: model, anchors, references, inputs and view choices."""
        from calibsim_gui.core.errors import CalibsimError
        from calibsim_gui.core.analysis.project import Project

        try:
            project = Project.load(path)
        except CalibsimError as exc:
            self.show_error("Cannot open project", str(exc))
            return
        for missing in project.missing_files():
            found, _ = QFileDialog.getOpenFileName(self, f"Locate moved file {Path(missing).name}",
                                                   str(Path(path).parent))
            if found:
                project.relocate(missing, found)
        still_missing = project.missing_files()
        if still_missing:
            self.show_error("Some project files were not found",
                            "These files were not found and were left out:\n"
                            + "\n".join(str(p) for p in still_missing)
                            + "\n\nOpen the project again to locate them, or add them with File ▸ Open input.")
        self._remember_recent(path)
        self._start_project(project, path)

    def _start_project(self, project, path: str | None, *, from_file: bool = True) -> None:
        """Re-create `project` (saved at `path`, if anywhere): view, background, model, then the rest.

        `from_file` False: a restored autosave, unsaved work even when it was once saved at `path`.
        """
        self.project_path = path
        self._pending_project = project
        self._saved_snapshot = self._snapshot(project) if from_file and path else None
        # once re-created, the session is the project as the app holds it (e.g. columns now named)
        self._resnapshot = bool(from_file and path)
        self.state.set_view(metric=project.settings.get("metric", "cosine"),
                            form=project.settings.get("form", "calibrated"))
        self.state.geometry = project.settings.get("geometry", "none")     # used by the next scoring
        self.background.set_options(project.background_pairs, project.background_seed)
        if project.background_files:
            self.background.clear()
            self.background.add_paths([f for f in project.background_files if Path(f).exists()])
        wanted = project.model
        current = self.state.model_info
        if (wanted is None and current is not None and current.source == "built-in") or \
                (wanted is not None and current is not None and str(current.path) == wanted):
            self._continue_project()
        else:
            self.load_model(wanted, project.device)      # _model_loaded continues the project

    def _offer_restore(self) -> None:
        """A previous session ended without closing: offer its autosaved project (non-modal)."""
        project = self.autosaver.pending()
        if project is None:
            return
        names = ", ".join([Path(i.path).name for i in project.inputs]
                          + (["unapplied anchor edits"] if "anchor_edits" in project.settings else []))
        box = QMessageBox(QMessageBox.Icon.Question, "Restore the last session?",
                          f"calibsim did not close normally last time. Restore that session ({names})?",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setModal(False)
        box.finished.connect(self._restore_answered)
        box.show()
        self._restore_box = box

    def _restore_answered(self, answer: int) -> None:
        project = self.autosaver.pending()
        self._restore_box = None
        if answer == QMessageBox.StandardButton.Yes and project is not None:
            self._start_project(project, project.settings.get("saved_as"), from_file=False)
            self.status_label.setText("Restored the last session.")
        else:
            self.autosaver.discard()

    def _continue_project(self) -> None:
        """Second half of `open_project`, once its model is loaded: references, then inputs.

        Steps that wait for a run to end are kept in ``_project_step`` and taken by the slots
        that receive that run's result (no temporary signal connections).
        """
        project, self._pending_project = self._pending_project, None
        if project is None:
            return
        if project.anchors is not None:
            self.anchors.set_anchor_set(project.anchors)
        self._anchor_edits = project.settings.get("anchor_edits")
        if "label_column" in project.settings:
            self._pending_labels = (project.settings["label_column"], project.settings.get("label_scale"))
        self._restore_human(project)
        self._awaiting_profile = True
        self.score_runner.cancel()      # a run with the old references must not be shown
        if project.profile:
            self.open_profile(project.profile)
        elif project.background_files:
            # the background was built, not saved: build it again (same files, pairs and seed)
            self._project_step = ("rebuild", project)
            if not self.background.runner.running:
                self._background_read()
        else:
            # the built-in reference, with the project's anchors (if any) applied when it is ready
            self._project_step = ("anchors", project) if project.anchors is not None else None
            self.use_builtin_reference()
        usable = [i for i in project.inputs if Path(i.path).exists()]
        if usable:
            first = usable[0]
            options = dict(first.options)
            if first.kind == "pairs":
                self._read_pairs(first.path, options)
            else:
                per_file = bool(options.pop("per_file", False))
                self._read_documents([i.path for i in usable], {**options, "per_file": per_file})

    def _restore_human(self, project) -> None:
        """Use the project's human calibration when it was fitted on the model now loaded."""
        from calibsim_gui.core.analysis.project import human_fit_from_dict

        if project.human is None:
            return
        fit = human_fit_from_dict(project.human)
        embedder = self.state.embedder
        if embedder is not None and fit.calibrator.model not in (None, embedder.fingerprint.id):
            self.show_error("Human calibration left out",
                            f"The project's human calibration was fitted on {fit.calibrator.model}; the "
                            f"model in use is {embedder.fingerprint.id}. Fit one for this model "
                            "(File ▸ Fit human calibration).")
            return
        self.state.human = fit                  # no signal: the references that come next rescore
        self.save_human_action.setEnabled(True)

    def _take_project_step(self, kind: str) -> bool:
        """Run the waiting project step if it is of `kind`; True if one ran."""
        step = self._project_step
        if step is None or step[0] != kind:
            return False
        self._project_step = None
        project = step[1]
        if kind == "anchors":
            self.apply_anchors(project.anchors)
            return True
        documents = self.background.documents()
        if documents is None:
            self._references_settled()
            self.show_error("Background not rebuilt", "The project's background files could not "
                            "be read; see the Background tab.")
            return True
        self.build_background(documents, project.background_pairs, project.background_seed)
        return True

    def _background_read(self, _documents=None) -> None:
        self._take_project_step("rebuild")

    def _open_recent(self) -> None:
        self.open_project(self.sender().data())

    def _remember_recent(self, path: str) -> None:
        recent = [p for p in self._recent() if p != path]
        self.settings.setValue("projects/recent", [path] + recent[: MAX_RECENT - 1])
        self._refresh_recent()

    def _recent(self) -> list[str]:
        value = self.settings.value("projects/recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def _refresh_recent(self) -> None:
        self.recent_menu.clear()
        for path in self._recent():
            action = self.recent_menu.addAction(path)
            action.setData(path)
            action.triggered.connect(self._open_recent)
        self.recent_menu.setEnabled(bool(self._recent()))

    # ------------------------------------------------------------------ window

    def toggle_palette(self) -> None:
        dark = self.dark_action.isChecked()
        palettes.apply(QApplication.instance(), dark)
        self.settings.setValue("view/dark", dark)

    def memory_budget(self) -> int:
        """Bytes one run may hold: the user's setting, else the default budget."""
        from calibsim_gui.core.io.memory import default_budget

        return int(self.settings.value(MEMORY_BUDGET_KEY, 0, type=int)) or default_budget()

    def set_memory_budget(self, n_bytes: int | None) -> None:
        """Remember the budget (None: back to the default) and show it in the status bar."""
        self.settings.setValue(MEMORY_BUDGET_KEY, int(n_bytes or 0))
        self._show_memory_budget()

    def _show_memory_budget(self) -> None:
        from calibsim_gui.core.io.memory import format_size

        chosen = self.settings.value(MEMORY_BUDGET_KEY, 0, type=int)
        self.memory_label.setText(f"Memory budget {format_size(self.memory_budget())}"
                                  + ("" if chosen else " (default)"))

    def choose_memory_budget(self) -> None:
        from calibsim_gui.core.io.memory import format_size, physical_memory

        total = physical_memory()
        gigabytes, ok = QInputDialog.getDouble(
            self, "Memory budget",
            f"Most memory one run may hold, in GB (this computer has {format_size(total)}).\n"
            "0 restores the default, half of it.",
            self.settings.value(MEMORY_BUDGET_KEY, 0, type=int) / 1e9, 0.0, total / 1e9, 1)
        if ok:
            self.set_memory_budget(int(gigabytes * 1e9) or None)

    def long_text_setting(self) -> str:
        """The remembered long-text choice: "truncate", "chunk:match", "chunk:max" or "chunk:mean"."""
        value = str(self.settings.value(LONG_TEXTS_KEY, "truncate"))
        return value if value in {key for key, _, _ in LONG_TEXT_CHOICES} else "truncate"

    def long_text_options(self) -> dict:
        """Keyword options of `iter_score_pairs` for texts past the model's max length."""
        from calibsim_gui.core.embedding.chunking import DEFAULT_CHUNK_OVERLAP, MAX_CHUNK_OVERLAP

        mode, _, aggregate = self.long_text_setting().partition(":")
        overlap = self.settings.value(CHUNK_OVERLAP_KEY, DEFAULT_CHUNK_OVERLAP, type=int)
        return {"long_texts": mode, "chunk_aggregate": aggregate or "match",
                "chunk_overlap": int(min(max(overlap, 0), MAX_CHUNK_OVERLAP))}

    def set_long_texts(self, choice: str) -> None:
        """Remember how long texts are scored and score the input again."""
        if choice not in {key for key, _, _ in LONG_TEXT_CHOICES}:
            raise ValueError(f"unknown long-text choice {choice!r}")
        changed = choice != self.long_text_setting()
        self.settings.setValue(LONG_TEXTS_KEY, choice)
        for action in self.long_text_actions.actions():
            action.setChecked(action.data() == choice)
        if changed:
            self.rescore()

    def choose_chunk_overlap(self) -> None:
        from calibsim_gui.core.embedding.chunking import MAX_CHUNK_OVERLAP

        overlap, ok = QInputDialog.getInt(
            self, "Chunk overlap", "Tokens shared by neighbouring chunks of a long text\n"
            "(used when long texts are split into chunks):",
            self.long_text_options()["chunk_overlap"], 0, MAX_CHUNK_OVERLAP)
        if ok:
            self.settings.setValue(CHUNK_OVERLAP_KEY, overlap)
            if self.long_text_options()["long_texts"] == "chunk":
                self.rescore()

    def open_demo(self) -> None:
        """Help ▸ Open the demo: score the 30 demo sentence pairs."""
        from calibsim_gui.core.resources import resource_path

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
            self.open_project(projects[0])
        elif paths:
            self.open_inputs(paths)

    def show_getting_started(self) -> None:
        self.tabs.setCurrentWidget(self.welcome)

    def show_shortcuts(self) -> None:
        box = QMessageBox(QMessageBox.Icon.Information, "Keyboard shortcuts", shortcuts_html(),
                          QMessageBox.StandardButton.Ok, self)
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setModal(False)
        box.show()
        self.shortcuts_box = box

    def about(self) -> None:
        QMessageBox.about(self, "About calibsim",
                          f"<b>calibsim {__version__}</b><p>Calibrated, globally interpretable "
                          "similarity scores for text embeddings.</p>")

    def _restore_settings(self) -> None:
        geometry = self.settings.value("window/geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(*self.first_size())
        self._show_memory_budget()
        dark = self.settings.value("view/dark", False, type=bool)
        self.dark_action.setChecked(dark)
        palettes.apply(QApplication.instance(), dark)

    def first_size(self) -> tuple[int, int]:
        """80 % of the screen, at least 1024×700 (but never more than the screen holds)."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return MIN_FIRST_SIZE
        room = screen.availableGeometry()
        return tuple(min(max(int(0.8 * have), least), have)
                     for have, least in ((room.width(), MIN_FIRST_SIZE[0]), (room.height(), MIN_FIRST_SIZE[1])))

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_inputs(paths)

    def closeEvent(self, event) -> None:
        """Ask about unsaved work; then stop every run and wait for its thread before closing.

        The autosave is removed only once the user chose (saved, discarded, or there was
        nothing unsaved): a cancelled or failed quit keeps it.
        """
        if self.autosaver is not None:
            if not self.confirm_discard("quitting"):
                event.ignore()
                return
        self.cancel_all()
        wait_for_workers(15_000)
        if self.autosaver is not None:
            self.autosaver.discard()
        self.settings.setValue("window/geometry", self.saveGeometry())
        if self._cache is not None:
            self._cache.close()
        gc.unfreeze()              # let the interpreter collect everything at exit
        super().closeEvent(event)
