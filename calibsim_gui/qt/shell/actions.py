"""The window's menus and keyboard shortcuts, the recent projects and the Help and View actions."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QMessageBox

from calibsim_gui import __version__
from calibsim_gui.qt.session.preferences import LONG_TEXT_CHOICES
from calibsim_gui.qt.views.first_run import shortcuts_html
from calibsim_gui.qt.widgets import palettes

MAX_RECENT = 8


class WindowMenus(QObject):
    """Builds the menu bar and the shortcuts of `window`; their actions call the window's parts."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.settings = window.settings
        self.build_shortcuts()
        self.build_menus()

    def build_shortcuts(self) -> None:
        """Esc (scoped, see `TaskStatus.escape`), Ctrl+Tab / Ctrl+Shift+Tab and Ctrl+1..9 for the tabs,
        Ctrl+K for a typed search."""
        window, tabs = self.window, self.window.tabs

        def shortcut(keys, slot):
            item = QShortcut(QKeySequence(keys), window)
            item.setContext(Qt.ShortcutContext.WindowShortcut)
            item.activated.connect(slot)
            return item

        self.escape_shortcut = shortcut(Qt.Key.Key_Escape, window.task_status.escape)
        shortcut("Ctrl+Tab", lambda: self.step_tab(1))
        shortcut("Ctrl+Shift+Tab", lambda: self.step_tab(-1))
        shortcut("Ctrl+Backtab", lambda: self.step_tab(-1))        # how some platforms send it
        shortcut("Ctrl+PgDown", lambda: self.step_tab(1))
        shortcut("Ctrl+PgUp", lambda: self.step_tab(-1))
        for n in range(1, 9):
            shortcut(f"Ctrl+{n}", lambda n=n: tabs.setCurrentIndex(min(n, tabs.count()) - 1))
        shortcut("Ctrl+9", lambda: tabs.setCurrentIndex(tabs.count() - 1))   # the last, as in browsers
        shortcut("Ctrl+K", self.find_texts)

    def find_texts(self) -> None:
        """Ctrl+K: the Text map's search box, ready for a typed text."""
        self.window.tabs.setCurrentWidget(self.window.map)
        self.window.map.focus_query()

    def step_tab(self, step: int) -> None:
        tabs = self.window.tabs
        tabs.setCurrentIndex((tabs.currentIndex() + step) % tabs.count())

    def action(self, menu, text, slot, shortcut=None, tip=None) -> QAction:
        action = QAction(text, self.window)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def build_menus(self) -> None:
        bar = self.window.menuBar()
        self.build_file_menu(bar.addMenu("&File"))
        view = self.view_menu = bar.addMenu("&View")
        self.dark_action = self.action(view, "&Dark palette", self.toggle_palette, "Ctrl+Shift+D")
        self.dark_action.setCheckable(True)
        self.show_all_action = self.action(
            view, "Show &every row (clear filters)", self.window.state.clear_filters, "Ctrl+Shift+A",
            "Drop every filter and choice at once: the Map's lasso, the Distributions range, the "
            "table's text and column filters")
        self.build_settings_menu(bar.addMenu("&Settings"))
        self.build_help_menu(bar.addMenu("&Help"))
        self.refresh_recent()

    def build_file_menu(self, file) -> None:
        window, action = self.window, self.action
        action(file, "&Open input…", window.session.choose_inputs, QKeySequence.StandardKey.Open,
               "Open a pairs file (CSV/TSV/JSONL) or text documents")
        action(file, "Add &background…", window.session.choose_background, "Ctrl+Shift+B",
               "Add background corpus files")
        file.addSeparator()
        action(file, "Open &project…", window.projects.choose, "Ctrl+Shift+O")
        self.recent_menu = file.addMenu("&Recent projects")
        action(file, "&Save project", window.projects.save, QKeySequence.StandardKey.Save)
        action(file, "Save project &as…", window.projects.save_as, "Ctrl+Shift+S")
        file.addSeparator()
        action(file, "&Export report…", window.exports.ask, "Ctrl+E",
               "Write the results as an HTML/PDF report, XLSX, JSON or CSV")
        file.addSeparator()
        action(file, "Fit &human calibration…", window.human.choose_pairs, "Ctrl+Shift+H",
               "Fit a map from scores to expected human similarity on pairs people scored")
        action(file, "Open human cali&bration…", window.human.choose_file)
        self.save_human_action = action(file, "Save human calibration…", window.human.save)
        self.save_human_action.setEnabled(False)
        action(file, "&Compare with another model…", window.compare.choose_model, "Ctrl+Shift+M",
               "Score the same pairs with another model: raw scores disagree, calibrated agree?")
        action(file, "Find a &threshold…", window.compare.show_threshold, "Ctrl+Shift+T",
               "On labelled pairs: the score above which pairs mean the same, raw and calibrated")
        file.addSeparator()
        action(file, "&Quit", window.close, QKeySequence.StandardKey.Quit)

    def build_settings_menu(self, settings) -> None:
        preferences = self.window.preferences
        self.action(settings, "&Memory budget…", preferences.choose_memory_budget, None,
                    "The most memory one run may hold; larger runs are refused before they start")
        long_menu = settings.addMenu("&Long texts")
        long_menu.setToolTipsVisible(True)
        self.long_text_actions = QActionGroup(self.window)
        chosen = preferences.long_text_setting()
        for key, text, tip in LONG_TEXT_CHOICES:
            action = self.action(long_menu, text, lambda _=False, key=key: preferences.set_long_texts(key),
                                 None, tip)
            action.setCheckable(True)
            action.setChecked(key == chosen)
            action.setData(key)
            self.long_text_actions.addAction(action)
        long_menu.addSeparator()
        self.action(long_menu, "Chunk &overlap…", preferences.choose_chunk_overlap, None,
                    "Tokens shared by neighbouring chunks of a long text")

    def build_help_menu(self, help_) -> None:
        window = self.window
        self.action(help_, "&Getting started", self.show_getting_started, QKeySequence.StandardKey.HelpContents,
                    "What calibsim does and how to start")
        self.action(help_, "&Keyboard shortcuts", self.show_shortcuts)
        self.action(help_, "Open the &demo", window.session.open_demo, None, "Score the demo sentence pairs")
        help_.addSeparator()
        self.action(help_, "&About calibsim", self.about)

    # ------------------------------------------------------------------ recent projects

    def open_recent(self) -> None:
        self.window.open_project(self.sender().data())

    def remember_recent(self, path: str) -> None:
        recent = [p for p in self.recent() if p != path]
        self.settings.setValue("projects/recent", [path] + recent[: MAX_RECENT - 1])
        self.refresh_recent()

    def recent(self) -> list[str]:
        value = self.settings.value("projects/recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def refresh_recent(self) -> None:
        self.recent_menu.clear()
        for path in self.recent():
            action = self.recent_menu.addAction(path)
            action.setData(path)
            action.triggered.connect(self.open_recent)
        self.recent_menu.setEnabled(bool(self.recent()))

    # ------------------------------------------------------------------ view & help

    def toggle_palette(self) -> None:
        dark = self.dark_action.isChecked()
        palettes.apply(QApplication.instance(), dark)
        self.settings.setValue("view/dark", dark)

    def show_getting_started(self) -> None:
        self.window.tabs.setCurrentWidget(self.window.welcome)

    def show_shortcuts(self) -> None:
        box = QMessageBox(QMessageBox.Icon.Information, "Keyboard shortcuts", shortcuts_html(),
                          QMessageBox.StandardButton.Ok, self.window)
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setModal(False)
        box.show()
        self.shortcuts_box = box

    def about(self) -> None:
        QMessageBox.about(self.window, "About calibsim",
                          f"<b>calibsim {__version__}</b><p>Calibrated, globally interpretable "
                          "similarity scores for text embeddings.</p>")
