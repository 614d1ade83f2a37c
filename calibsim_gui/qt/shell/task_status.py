"""The status bar over the window's `TaskRunner`s: the line of text, progress and time left,
Cancel (a menu when several tasks run) and Esc, which stops the current tab's task."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QToolButton,
)

from calibsim_gui.core.embedding.devices import embedder_precision
from calibsim_gui.qt.widgets.messages import format_seconds

ALERT_AFTER_S = 5.0              # a run this long that ends while the window is inactive alerts


class TaskStatus(QObject):
    """Shows what the window's `runners` do in its status bar and stops them when asked."""

    def __init__(self, window, runners: list):
        super().__init__(window)
        self.window = window
        self.runners = runners
        self.done_note = ""                          # "Scoring done in 3.2 s", shown in the idle message
        bar = window.statusBar()
        self.status_label = QLabel("Starting…")
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(260)
        self.progress.setTextVisible(True)
        self.progress.hide()
        # one running task: Cancel stops it; several: Cancel opens a menu of them (and "all")
        self.cancel_button = QToolButton()
        self.cancel_button.setText("Cancel")
        self.cancel_button.hide()
        self.cancel_button.clicked.connect(self.cancel_clicked)
        self.cancel_menu = QMenu(self.cancel_button)
        self.memory_label = QLabel()
        self.memory_label.setToolTip("Runs that would need more memory are refused before they "
                                     "start (Settings ▸ Memory budget)")
        bar.addWidget(self.status_label, 1)
        bar.addPermanentWidget(self.memory_label)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel_button)

    def watch(self, runners=None) -> None:
        """Follow the progress and outcome of `runners` (default: every runner; connect before the
        slots that say more)."""
        for runner in self.runners if runners is None else runners:
            runner.finished.connect(self.task_done)
            runner.busy.connect(self.update_busy)
            runner.progress.connect(self.show_progress)
            if runner is not self.window.input_runner:
                runner.failed.connect(self.run_failed)

    def running_tasks(self) -> list:
        return [r for r in self.runners if r.running]

    def update_busy(self, busy: bool = False) -> None:
        window = self.window
        running = self.running_tasks()
        if busy:
            self.done_note = ""
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
        window.models.set_busy(window.model_runner.running)
        window.background.set_busy(window.profile_runner.running)
        if running:
            self.progress.setRange(0, 0)
            self.progress.setFormat("%p%")
            self.status_label.setText(f"{running[0].name.capitalize()}…")
        else:
            self.status_label.setText(self.idle_message())
        window.session.show_cache_warnings()

    def task_done(self, _result=None) -> None:
        """Say how long a run took; alert the desktop when a long one ends in the background."""
        runner = self.sender()
        if runner is None or runner.duration < 0.5:
            return
        self.done_note = f"{runner.name.capitalize()} done in {format_seconds(runner.duration)}"
        self.status_label.setText(self.done_note if self.running_tasks() else self.idle_message())
        if runner.duration >= ALERT_AFTER_S and not self.window.isActiveWindow():
            self.window.notify_done(self.done_note)

    def cancel_clicked(self) -> None:
        running = self.running_tasks()
        if len(running) == 1:
            running[0].cancel()
            self.status_label.setText(f"Stopped {running[0].name}.")

    def view_runners(self, widget=None) -> list:
        """The runners whose work the tab `widget` (default: the current tab) shows."""
        window = self.window
        widget = widget if widget is not None else window.tabs.currentWidget()
        scoring = [window.score_runner, window.input_runner]
        own = [getattr(widget, name, None) for name in ("runner", "query_runner", "export_runner")]
        per_view = {        # by the tab's name: a tab not built yet is not shown, so runs nothing
            "model": [window.model_runner],
            "anchors": [window.profile_runner],
            "background": [window.profile_runner] + own,
            "results": scoring + [window.human_runner, window.compare_runner, window.export_runner],
            "distributions": scoring, "heatmap": scoring, "agreement": scoring,
            "space": own, "search": own, "map": own,
            "compare": [window.compare_runner],
        }
        return [r for r in per_view.get(widget.objectName() if widget is not None else "", []) if r is not None]

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
            menu = QMenu(self.window)
            for runner in running:
                menu.addAction(f"Stop {runner.name}", runner.cancel)
            menu.addAction("Stop all of them", lambda: [r.cancel() for r in running])
            self.escape_menu = menu
            menu.popup(self.cancel_button.mapToGlobal(self.cancel_button.rect().topLeft()))
        elif self.running_tasks():
            self.status_label.setText("Nothing runs on this tab; the Cancel button in the status bar "
                                      "stops the other tasks.")

    def idle_message(self) -> str:
        state = self.window.state
        if state.embedder is None:
            return "No model loaded."
        embedder = state.embedder
        parts = [f"Model {embedder.fingerprint.name} on {embedder.device} in {embedder_precision(embedder)}"]
        if state.profile is not None:
            parts.append(f"reference: {state.profile_label}")
        if self.window.session.cache_off():
            parts.append("no embedding cache (texts are encoded every time)")
        if state.input is None:
            parts.append("drop a pairs file or documents onto the window")
        if self.done_note:
            parts.insert(0, self.done_note)
        return " · ".join(parts)

    def show_progress(self, done: int, total: int, message: str, work: float | None = None) -> None:
        """Progress of the sending runner; `work` (0 to 1), when given, is the share of the work
        done, which the bar and the time left follow instead of ``done / total``."""
        self.show_progress_of(self.sender(), done, total, message, work)

    def show_progress_of(self, runner, done: int, total: int, message: str, work: float | None = None) -> None:
        """`show_progress` for `runner`'s run."""
        if work is not None:
            done, total = round(1000 * work), 1000
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            left = runner.time_left(done, total) if hasattr(runner, "time_left") else None
            self.progress.setFormat("%p%" + (f" · {format_seconds(left)} left" if left is not None else ""))
        if message:
            self.status_label.setText(message)

    def run_failed(self, message: str) -> None:
        runner = self.sender()
        self.window.show_error(f"{getattr(runner, 'name', 'task').capitalize()} failed", message)

    def cancel_all(self) -> None:
        for runner in self.runners:
            runner.cancel()
        self.status_label.setText("Cancelled.")
