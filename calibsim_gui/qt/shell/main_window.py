"""calibsim's main window: the wiring of its tabs, runners, status bar, menus, session and flows.

The window holds the parts and connects them; what each part does lives in its own module:
`task_status` (status bar, Cancel, Esc), `actions` (menus and shortcuts), `preferences`
(Settings menu), `session` (model, references, inputs, scoring), `projects` (save, open,
restore, unsaved work), `panels` (tabs side by side), `window_title`, `human_flow`,
`export_flow` and `compare_flow`.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QSettings, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMainWindow, QMessageBox, QTabWidget, QWidget

from calibsim_gui.core.embedding.graph_preparation import stop_preparations
from calibsim_gui.qt.editors.anchor_editor import AnchorEditor
from calibsim_gui.qt.editors.background_loader import BackgroundLoader
from calibsim_gui.qt.editors.model_manager import ModelManager
from calibsim_gui.qt.flows.compare_flow import CompareFlow
from calibsim_gui.qt.flows.export_flow import ExportFlow
from calibsim_gui.qt.flows.human_flow import HumanFlow
from calibsim_gui.qt.session.preferences import Preferences
from calibsim_gui.qt.session.projects import Projects
from calibsim_gui.qt.session.session import Session
from calibsim_gui.qt.session.state import AppState
from calibsim_gui.qt.shell.actions import WindowMenus
from calibsim_gui.qt.shell.autosave import Autosaver
from calibsim_gui.qt.shell.panels import Panels
from calibsim_gui.qt.shell.tab_views import (TABS, BuiltOnUse, import_input_views, import_qt_modules_of_plots,
                                             waiting_views)
from calibsim_gui.qt.shell.task_status import TaskStatus
from calibsim_gui.qt.shell.window_title import WindowTitle
from calibsim_gui.qt.views.first_run import FirstRunView
from calibsim_gui.qt.widgets import palettes
from calibsim_gui.qt.widgets.messages import for_the_app
from calibsim_gui.qt.widgets.workers import wait_for_workers

MIN_FIRST_SIZE = (1024, 700)     # a first launch opens at 80 % of the screen, at least this


class MainWindow(QMainWindow):
    """Panels in tabs over one `AppState`; every long action runs in a `TaskRunner`.

    The tabs not shown at start are built when first shown or asked for: `view(name)`, or the
    attribute of that name (`window.map`), gives the built view."""

    results_shown = Signal()          # emitted when a run's final results reach the views
    ask_before_discarding = True      # ask Save / Discard / Cancel before work is dropped (tests turn it off)
    results, distributions, agreement, heatmap = BuiltOnUse(), BuiltOnUse(), BuiltOnUse(), BuiltOnUse()
    map, space, search = BuiltOnUse(), BuiltOnUse(), BuiltOnUse()

    def __init__(self, *, load_default_model: bool = True, autosave: bool = True):
        super().__init__()
        self.setAcceptDrops(True)
        self.settings = QSettings("calibsim", "calibsim")
        self.state = AppState(self)
        self._last_error: QMessageBox | None = None   # the latest error box (not modal)
        self.preferences = Preferences(self)
        self._build_tabs()
        import_qt_modules_of_plots()              # before any worker imports pyqtgraph
        self.session = Session(self.state, models=self.models, anchors=self.anchors, background=self.background,
                               panels=self.panels, preferences=self.preferences, settings=self.settings,
                               show_error=self.show_error, show_message=self.show_message,
                               preload=import_input_views, parent=self)
        self.model_runner, self.profile_runner, self.input_runner, self.score_runner = self.session.runners()
        self.runners = self.session.runners()                 # and the flows' own runners
        self.projects = Projects(self)
        self.human = HumanFlow(self.state, session=self.session, preferences=self.preferences,
                               projects=self.projects, show_error=self.show_error,
                               show_message=self.show_message, parent=self)
        self.session.link(projects=self.projects, human=self.human)
        self.human_runner = self.human.runner
        self.exports = ExportFlow(self.state, settings=self.settings, scoring=lambda: self.score_runner.running,
                                  show_error=self.show_error, parent=self)
        self.export_runner = self.exports.runner
        self.compare = CompareFlow(self.state, models=self.models, session=self.session,
                                   preferences=self.preferences, view=lambda: self.view("compare"),
                                   tabs=self.tabs, show_error=self.show_error, parent=self)
        self.compare_runner = self.compare.runner
        self.runners += [self.export_runner, self.human_runner, self.compare_runner]
        self.task_status = TaskStatus(self, self.runners)
        self.status_label = self.task_status.status_label
        self.progress = self.task_status.progress
        self.cancel_button = self.task_status.cancel_button
        self.memory_label = self.task_status.memory_label
        self.menus = WindowMenus(self)
        self.panels.build_menu(self.menus.view_menu)
        self.title = WindowTitle(self)
        self._connect()
        self._restore_settings()
        self.autosaver = Autosaver(self) if autosave else None     # off for demos and self-tests
        self._build_timers(load_default_model=load_default_model, autosave=autosave)

    # ------------------------------------------------------------------ set-up

    def _build_tabs(self) -> None:
        memory_budget = self.preferences.memory_budget
        self.models = ModelManager(self.state)
        self.anchors = AnchorEditor(self.state)
        self.background = BackgroundLoader(self.state, memory_budget=memory_budget)
        self.welcome = FirstRunView()
        built = {"welcome": self.welcome, "model": self.models, "anchors": self.anchors,
                 "background": self.background}
        self.tabs = QTabWidget()
        for name, title in TABS:                        # the others wait, each an empty page
            widget = built.get(name) or QWidget()
            widget.setObjectName(name)
            self.tabs.addTab(widget, title)
        self.tabs.setCurrentWidget(self.welcome)       # the first view says what to do
        self.panels = Panels(self, self.tabs, waiting_views(self))
        self.panels.built.connect(self._view_built)
        self.setCentralWidget(self.panels.splitter)

    def view(self, name: str):
        """The tab `name` (an objectName, e.g. "map"), built now if it was waiting to be shown."""
        return self.panels.view(name)

    def watch_runners(self, *runners) -> None:
        """Show the runners of a view built after the window in the status bar; the views' runners
        are listed (in the Cancel menu) in the order of their tabs, whichever was built first."""
        place = {name: i for i, (name, _) in enumerate(TABS)}
        self.runners += runners
        self.runners.sort(key=lambda runner: place.get(runner.parent().objectName(), -1))
        self.task_status.watch(runners)

    def _view_built(self, view) -> None:
        """A tab built late: the window's own slot for new results goes last again (as when every
        view was built first), so a project's view choices are restored after the views redrew."""
        self.state.results_changed.disconnect(self._results_changed)
        self.state.results_changed.connect(self._results_changed)
        if view.objectName() == "results":
            self.session.update_results_hint()      # scoring may have begun before it was built
        if view.objectName() == "distributions" and self.score_runner.running:
            for chunk in self.session.scored_chunks:  # the live histogram so far
                view.add_partial(chunk)

    def _build_timers(self, *, load_default_model: bool, autosave: bool) -> None:
        """The window's own timers: start-up steps and the Space tab's refresh."""
        def single_shot(interval: int, slot) -> QTimer:
            timer = QTimer(self, singleShot=True, interval=interval)
            timer.timeout.connect(slot)
            return timer

        self.space_timer = single_shot(0, self._refresh_space)
        if load_default_model:
            single_shot(0, self._load_default_model).start()
        if autosave:
            single_shot(0, self.projects.offer_restore).start()

    def _connect(self) -> None:
        session, projects, state = self.session, self.projects, self.state
        self.welcome.open_file_requested.connect(session.choose_inputs)
        self.welcome.open_demo_requested.connect(session.open_demo)
        self.welcome.open_project_requested.connect(projects.choose)
        self.task_status.watch()                              # first: later slots may say more
        self.input_runner.failed.connect(session.input_failed)
        self.input_runner.failed.connect(projects.restore_views)      # no results will come
        self.profile_runner.failed.connect(session.references_settled)
        self.background.runner.finished.connect(projects.background_read)
        self.background.runner.failed.connect(projects.background_read)      # rebuilt from none: says so
        self.model_runner.finished.connect(session.model_loaded)
        self.profile_runner.finished.connect(session.profile_ready)
        self.input_runner.finished.connect(session.input_read)
        self.score_runner.partial.connect(session.scored_chunk)
        self.score_runner.finished.connect(session.scored)
        self.score_runner.failed.connect(session.score_failed)
        self.export_runner.finished.connect(self.exports.exported)
        self.exports.status.connect(self.status_label.setText)
        self.human.status.connect(self.status_label.setText)
        session.status.connect(self.status_label.setText)
        session.scoring_progress.connect(
            lambda done, total, message, work: self.task_status.show_progress_of(self.score_runner, done, total,
                                                                               message, work))
        self.human.savable.connect(lambda: self.menus.save_human_action.setEnabled(True))
        self.models.load_requested.connect(session.model_requested)
        self.anchors.anchors_applied.connect(session.apply_anchors)
        self.background.build_requested.connect(session.build_background)
        self.background.profile_open_requested.connect(session.profile_requested)
        self.background.builtin_requested.connect(session.builtin_requested)
        state.results_changed.connect(self._results_changed)
        state.input_changed.connect(session.update_results_hint)
        self.score_runner.busy.connect(session.update_results_hint)
        state.view_changed.connect(session.view_changed)
        state.scores_stale.connect(session.rescore)         # the one trigger after a change that affects scores

    def _load_default_model(self) -> None:
        self.session.load_model(None, "auto")

    def _results_changed(self) -> None:
        if self.state.results is not None:
            self.projects.results_changed()
            self.task_status.update_busy()
            self.results_shown.emit()
            space = self.panels.view("space", build=False)
            if getattr(space, "_stale", False) and not space.runner.running:
                self.space_timer.start()     # ready before the Space tab is opened

    def _refresh_space(self) -> None:
        space = self.panels.view("space", build=False)
        if getattr(space, "_stale", False) and not space.runner.running:
            space.refresh()

    # ------------------------------------------------------------------ messages

    def show_message(self, icon, title: str, text: str, details: str = "") -> QMessageBox:
        """A non-modal message box (kept as the latest error box) with optional Show Details."""
        box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText(details)
        box.setModal(False)
        box.show()
        self._last_error = box
        return box

    def show_error(self, title: str, message: str) -> None:
        """A non-modal warning (a worker's traceback goes under Show Details) and the status line."""
        message, _, details = message.partition("\n\nTraceback")
        message = for_the_app(message)
        self.status_label.setText(message.splitlines()[0])
        self.show_message(QMessageBox.Icon.Warning, title, message, "Traceback" + details if details else "")

    def notify_done(self, text: str) -> None:
        """A long run ended while the user was elsewhere: flash the task-bar entry."""
        QApplication.alert(self)
        self.title.note(text)

    # ------------------------------------------------------------------ the parts' entry points
    # The window's own API (for the app, the autosave, scripts and tests); its parts do the work.

    @property
    def cache(self):
        return self.session.cache

    @property
    def input_spec(self) -> dict | None:
        return self.state.input_spec

    @input_spec.setter
    def input_spec(self, value: dict | None) -> None:
        self.state.input_spec = value

    @property
    def profile_path(self) -> str | None:
        return self.state.profile_path

    @property
    def project_path(self) -> str | None:
        return self.projects.path

    @property
    def _restore_box(self) -> QMessageBox | None:
        return self.projects.restore_box

    @property
    def long_text_actions(self):
        return self.menus.long_text_actions

    def open_inputs(self, paths, *, per_file: bool | None = None, options: dict | None = None) -> None:
        self.session.open_inputs(paths, per_file=per_file, options=options)

    def open_files(self, paths) -> None:
        self.session.open_files(paths)

    def load_model(self, info_or_spec, device: str = "auto") -> None:
        self.session.load_model(info_or_spec, device)

    def use_builtin_reference(self) -> None:
        self.session.use_builtin_reference()

    def open_profile(self, path: str) -> None:
        self.session.open_profile(path)

    def apply_anchors(self, anchors) -> None:
        self.session.apply_anchors(anchors)

    def build_background(self, documents, pairs: int, seed: int) -> None:
        self.session.build_background(documents, pairs, seed)

    def current_project(self, *, later: bool = False):
        return self.projects.current_project(later=later)

    def unsaved_work(self) -> list[str]:
        return self.projects.unsaved_work()

    def ask_unsaved(self, action: str, what: list[str]) -> str:
        return self.projects.ask_unsaved(action, what)

    def confirm_discard(self, action: str, what: list[str] | None = None) -> bool:
        return self.projects.confirm_discard(action, what)

    def open_project(self, path: str) -> None:
        self.projects.open(path)

    def write_project(self, path: str) -> bool:
        return self.projects.write(path)

    def memory_budget(self) -> int:
        return self.preferences.memory_budget()

    def set_memory_budget(self, n_bytes: int | None) -> None:
        self.preferences.set_memory_budget(n_bytes)

    def long_text_options(self) -> dict:
        return self.preferences.long_text_options()

    def set_long_texts(self, choice: str) -> None:
        self.preferences.set_long_texts(choice)

    def step_tab(self, step: int) -> None:
        self.menus.step_tab(step)

    def escape(self) -> None:
        self.task_status.escape()

    # ------------------------------------------------------------------ window

    def _restore_settings(self) -> None:
        geometry = self.settings.value("window/geometry")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(*self.first_size())
        self.preferences.show_memory_budget()
        self.panels.restore_settings(self.settings)       # the tabs side by side, the current tab
        dark = self.settings.value("view/dark", False, type=bool)
        self.menus.dark_action.setChecked(dark)
        palettes.apply(QApplication.instance(), dark)

    def fit_to_screen(self) -> None:
        """Keep the whole window, frame and status bar (progress, Cancel) included, on its screen:
        a geometry saved on a larger screen is shrunk and moved inside the available area."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        room = screen.availableGeometry()
        frame = self.frameGeometry()
        extra_w, extra_h = frame.width() - self.width(), frame.height() - self.height()
        width, height = min(self.width(), room.width() - extra_w), min(self.height(), room.height() - extra_h)
        if (width, height) != (self.width(), self.height()):
            self.resize(width, height)                  # not below the window's minimum size
        frame = self.frameGeometry()
        x = max(room.left(), min(frame.x(), room.right() + 1 - frame.width()))
        y = max(room.top(), min(frame.y(), room.bottom() + 1 - frame.height()))
        if (x, y) != (frame.x(), frame.y()):
            self.move(x, y)

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

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not event.spontaneous():
            self.fit_to_screen()                 # the frame is known once shown

    def closeEvent(self, event) -> None:
        """Ask about unsaved work; then stop every run and wait for its thread before closing.

        The autosave is removed only once the user chose (saved, discarded, or there was
        nothing unsaved): a cancelled or failed quit keeps it.
        """
        if self.autosaver is not None:
            if not self.confirm_discard("quitting"):
                event.ignore()
                return
        self.task_status.cancel_all()
        wait_for_workers(15_000)
        stop_preparations()
        if self.autosaver is not None:
            self.autosaver.discard()
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.panels.remember(self.settings)
        self.title.note_timer.stop()
        self.session.close_cache()
        gc.unfreeze()              # let the interpreter collect everything at exit
        super().closeEvent(event)
