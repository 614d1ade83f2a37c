"""The window as a shell people trust: scoped Esc, unsaved-work prompts, feedback on long work,
first launch, shortcuts and mnemonics, files from the command line (issue 18: 2, 3, 8, 9, 15)."""

from __future__ import annotations

import re
import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from calibsim_gui import cli
from calibsim_gui.core.resources import resource_path
from calibsim_gui.qt.session import projects
from calibsim_gui.qt.shell import actions
from calibsim_gui.qt.shell.main_window import MainWindow
from calibsim_gui.qt.widgets.messages import format_seconds, plural
from calibsim_gui.qt.widgets.workers import wait_for_workers
from tests.qt.conftest import REFERENCES_MS, WORKERS_END_MS, Gate, drop
from tests.qt.test_interruptions import SlowEmbedder, many_pairs


def block_until_stopped(progress, should_stop):
    """A task that runs until it is cancelled."""
    from calibsim_gui.core.errors import Cancelled

    event = threading.Event()
    while not should_stop():
        event.wait(0.01)
    raise Cancelled("stopped")


# ------------------------------------------------------------------ 2. Esc is scoped


def test_esc_in_the_results_filter_clears_it_and_cancels_nothing(window, qtbot):
    window.profile_runner.start(block_until_stopped)           # a long build "on another tab"
    window.tabs.setCurrentWidget(window.results)
    window.activateWindow()
    edit = window.results.filter_edit
    edit.setFocus()
    edit.setText("cat")
    qtbot.waitUntil(lambda: QApplication.focusWidget() is edit, timeout=120_000)
    qtbot.keyClick(edit, Qt.Key.Key_Escape)                   # the real key, through the shortcut
    assert edit.text() == "" and window.profile_runner.running
    window.escape()                            # empty field, no task of the Results tab: nothing stops
    assert window.profile_runner.running and "Cancel button" in window.status_label.text()
    window.tabs.setCurrentWidget(window.background)
    with qtbot.waitSignal(window.profile_runner.cancelled, timeout=120_000):
        window.escape()                        # on its own tab, Esc stops it
    assert wait_for_workers(WORKERS_END_MS)


def test_esc_stops_only_the_current_tabs_task_and_the_cancel_button_offers_each(window, qtbot):
    window.search.runner.start(block_until_stopped)
    window.space.runner.start(block_until_stopped)
    qtbot.waitUntil(lambda: window.cancel_button.isVisible(), timeout=120_000)
    actions = [a.text() for a in window.cancel_button.menu().actions() if a.text()]
    assert actions == [f"Stop {window.space.runner.name}", f"Stop {window.search.runner.name}", "Stop all"]
    window.tabs.setCurrentWidget(window.space)
    window.setFocus()
    window.escape()
    assert not window.space.runner.running and window.search.runner.running
    assert window.cancel_button.menu() is None and window.cancel_button.text() == "Cancel"
    window.cancel_button.click()               # one task left: the button stops it
    assert not window.search.runner.running
    assert wait_for_workers(WORKERS_END_MS)


# ------------------------------------------------------------------ 3. work is not lost without asking


@pytest.fixture
def asking(window, monkeypatch):
    """Turn the question on and answer it with `answers` (records what was asked)."""
    monkeypatch.setattr(MainWindow, "ask_before_discarding", True)
    asked, answers = [], []

    def ask(action, what):
        asked.append((action, what))
        return answers.pop(0) if answers else "discard"      # the fixture's own close at the end

    monkeypatch.setattr(window, "ask_unsaved", ask)
    return asked, answers


def test_quitting_with_unsaved_work_asks_and_keeps_the_autosave_until_the_user_chose(
        window, qtbot, pairs_csv, asking):
    asked, answers = asking
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    window.autosaver.save_now()
    assert window.autosaver.path.exists()
    answers.append("cancel")
    assert not window.close()                                   # Cancel: the window stays
    assert window.isVisible() and window.autosaver.path.exists()
    assert "quitting" in asked[0][0] and "the input pairs.csv" in asked[0][1]
    answers.append("discard")
    assert window.close()
    assert not window.autosaver.path.exists()


def test_a_saved_or_reopened_project_has_nothing_unsaved_until_edited(window, qtbot, pairs_csv, asking, tmp_path):
    asked, _ = asking
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    assert window.write_project(str(tmp_path / "study.calibsim"))
    assert window.unsaved_work() == []
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_project(str(tmp_path / "study.calibsim"))        # re-opened: still nothing unsaved
    assert window.unsaved_work() == []
    window.anchors.model.setData(window.anchors.model.index(0, 1), "an edit after saving")
    assert window.unsaved_work() == ["the input pairs.csv", "your anchor edits"]
    assert asked == []
    assert window.close() and len(asked) == 1              # the edit was asked about ("discard")


def test_save_in_the_question_saves_the_project_then_quits(window, qtbot, pairs_csv, asking, tmp_path,
                                                            monkeypatch):
    _, answers = asking
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    answers.append("save")
    monkeypatch.setattr(projects.QFileDialog, "getSaveFileName",
                        lambda *a, **k: (str(tmp_path / "kept"), ""))
    assert window.close()
    assert (tmp_path / "kept.calibsim").exists()


def test_built_in_reference_over_edited_anchors_asks_first(window, qtbot, asking):
    asked, answers = asking
    assert window.anchors.model.setData(window.anchors.model.index(0, 1), "a wholly new anchor text")
    assert window.anchors.pending_edits() is not None
    answers.append("cancel")
    window.background.builtin_requested.emit()
    assert asked and "built-in reference" in asked[0][0] and not window.profile_runner.running
    assert window.anchors.pending_edits() is not None          # the edits are still there
    answers.append("discard")
    with qtbot.waitSignal(window.state.profile_changed, timeout=120_000):
        window.background.builtin_requested.emit()


def test_opening_a_profile_over_edited_anchors_asks_first(window, qtbot, asking, profile, tmp_path):
    asked, answers = asking
    path = tmp_path / "news.calibsim-profile"
    profile.save(path)
    assert window.anchors.model.setData(window.anchors.model.index(0, 1), "a wholly new anchor text")
    answers.append("cancel")
    window.background.profile_open_requested.emit(str(path))
    assert asked and "opening news.calibsim-profile" in asked[0][0] and not window.profile_runner.running
    assert window.anchors.pending_edits() is not None          # the edits are still there
    answers.append("discard")
    with qtbot.waitSignal(window.profile_runner.finished, timeout=REFERENCES_MS):
        window.background.profile_open_requested.emit(str(path))
    assert window.state.profile_label == path.name


def test_opening_another_file_asks_nothing_and_keeps_the_human_calibration(window, qtbot, pairs_csv, asking,
                                                                          tmp_path):
    """Results are re-created from the files; anchors and a human fit survive a new input."""
    asked, _ = asking
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    other = many_pairs(tmp_path / "other.csv", n=40)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [other])
    assert asked == [] and len(window.state.results.frame) == 40


def test_a_project_keeps_the_human_calibration_and_the_columns(window, qtbot, tmp_path, pairs_csv):
    import numpy as np
    import pandas as pd

    from tests.fakes import random_sentences

    texts = random_sentences(240, seed=5)
    labelled = tmp_path / "labelled.csv"
    pd.DataFrame({"sentence1": texts[:120], "sentence2": texts[120:],
                  "score": np.linspace(0, 5, 120)}).to_csv(labelled, index=False)
    with qtbot.waitSignal(window.human_runner.finished, timeout=120_000):
        window.human.fit(str(labelled), "0,5")
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    if hasattr(window.state, "set_labels"):
        window.state.set_labels("score", (0.0, 5.0))
    path = tmp_path / "study.calibsim"
    assert window.write_project(str(path))
    window.state.set_human(None)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_project(str(path))
    assert window.state.human is not None
    assert "cosine_human" in window.state.results.frame.columns
    saved = window.current_project().inputs[0].options
    assert (saved["text_a"], saved["text_b"], saved["label"]) == ("sentence1", "sentence2", "score")
    if hasattr(window.state, "set_labels"):
        assert window.state.label_column == "score" and window.state.label_scale == (0.0, 5.0)


# ------------------------------------------------------------------ 8. feedback on long work


def test_scoring_shows_the_file_time_left_and_a_done_message(window, qtbot, tmp_path, monkeypatch):
    gate = Gate(free=3)                                  # held after three batches, however fast
    window.state.embedder = SlowEmbedder(gate=gate)
    monkeypatch.setattr(window, "isActiveWindow", lambda: False)
    alerts, steps, bars = [], [], []
    monkeypatch.setattr(window, "notify_done", alerts.append)
    window.score_runner.partial.connect(lambda chunk: (steps.append(chunk.done),     # after the bar's update
                                                       bars.append(window.progress.format())))
    drop(window, [many_pairs(tmp_path / "many.csv", n=1200)])
    qtbot.waitUntil(lambda: gate.holding, timeout=120_000)
    assert window.results.hint.text() == "Scoring many.csv…"
    window.score_runner.started_at -= 12                  # 12 s in: the pace so far tells the rest
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        gate.release()
    assert any(re.fullmatch(r"%p% · .+ left", bar) for bar in bars)
    assert len(steps) >= 10                               # fine steps: ~100 per run, not 256 pairs each
    assert re.match(r"Scoring done in ([\d.]+ s|\d+ min \d+ s)", window.status_label.text())
    assert alerts and alerts[-1].startswith("Scoring done in")          # 12 s or more, window inactive


def test_a_distributions_tab_opened_during_a_run_shows_the_pairs_scored_so_far(window, qtbot, tmp_path):
    """The Distributions view is built when its tab is first opened (building it at every run's
    start paused the window): opened mid-run, its live histogram holds every pair scored so far,
    and it grows with the run."""
    gate = Gate(free=30)                                # held once the first pairs are scored
    window.state.embedder = SlowEmbedder(gate=gate)
    drop(window, [many_pairs(tmp_path / "many.csv", n=1200)])
    qtbot.waitUntil(lambda: bool(gate.holding and window.session.scored_chunks), timeout=120_000)
    assert window.panels.view("distributions", build=False) is None        # not built by the run
    so_far = sum(len(chunk.rows) for chunk in window.session.scored_chunks)
    window.tabs.setCurrentWidget(window.distributions)
    qtbot.waitUntil(lambda: window.distributions.plot_data()["raw_user"][1].sum() == so_far, timeout=120_000)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        gate.release()
    assert window.distributions.plot_data()["raw_user"][1].sum() == 1200


def test_the_space_tab_is_computed_after_scoring_without_being_opened(window, qtbot, pairs_csv):
    window.space._stale = True
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    qtbot.waitUntil(lambda: not window.space._stale, timeout=120_000)
    assert not window.space.isVisible()


def test_time_left_and_plurals_read_well():
    assert plural(1, "pair") == "1 pair" and plural(2048, "pair") == "2,048 pairs"
    assert format_seconds(3.14) == "3.1 s" and format_seconds(125) == "2 min 05 s"


# ------------------------------------------------------------------ 9. first launch


def test_first_launch_is_large_on_a_view_that_says_what_to_do(window):
    assert window.state.input is None and window.tabs.currentWidget() is window.welcome
    assert window.tabs.widget(0) is window.welcome
    expected = window.first_size()
    assert window.width() >= min(expected[0], 1024) and window.height() >= min(expected[1], 600)
    assert "Open the demo" in window.welcome.demo_button.text()
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    assert [a.text() for a in help_menu.actions() if a.text()] == [
        "&Getting started", "&Keyboard shortcuts", "Open the &demo", "&About calibsim"]
    window.welcome.grab()
    window.resize(1024, 700)
    window.tabs.setCurrentWidget(window.welcome)
    window.grab()                              # drawn at the smallest first size (a failure prints a traceback)


def test_the_demo_button_scores_the_demo(window, qtbot):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.welcome.demo_button.click()
    assert window.state.input.path == resource_path("demo", "pairs.csv")
    assert window.tabs.currentWidget() is window.results


def test_a_first_launch_takes_80_percent_of_the_screen_at_least_1024_by_700(window, monkeypatch):
    from PySide6.QtCore import QRect

    class Screen:
        def __init__(self, w, h):
            self.rect = QRect(0, 0, w, h)

        def availableGeometry(self):
            return self.rect

    for (w, h), size in (((1920, 1080), (1536, 864)), ((1280, 800), (1024, 700)),
                         ((900, 650), (900, 650))):          # a screen below the minimum: all of it
        monkeypatch.setattr(window, "screen", lambda w=w, h=h: Screen(w, h))
        assert window.first_size() == size


def test_the_window_geometry_is_remembered(window, qtbot, monkeypatch):
    window.close()
    saved = window.settings.value("window/geometry")
    assert saved is not None
    restored = []
    monkeypatch.setattr(MainWindow, "restoreGeometry", lambda self, data: restored.append(bytes(data)) or True)
    monkeypatch.setattr(MainWindow, "first_size", lambda self: pytest.fail("not a first launch"))
    again = MainWindow(load_default_model=False, autosave=False)
    qtbot.addWidget(again)
    assert restored == [bytes(saved)]
    again.close()


# ------------------------------------------------------------------ 15. shortcuts, mnemonics, files


def test_ctrl_tab_and_ctrl_number_switch_tabs(window, qtbot):
    window.tabs.setCurrentIndex(0)
    window.step_tab(1)
    assert window.tabs.currentIndex() == 1
    window.step_tab(-1)
    window.step_tab(-1)
    assert window.tabs.currentIndex() == window.tabs.count() - 1
    keys = {s.key().toString() for s in window.findChildren(actions.QShortcut)}
    assert {"Ctrl+Tab", "Ctrl+Shift+Tab", "Ctrl+1", "Ctrl+9", "Esc"} <= keys
    shortcut = next(s for s in window.findChildren(actions.QShortcut)
                    if s.key().toString() == "Ctrl+3")
    shortcut.activated.emit()
    assert window.tabs.currentIndex() == 2


def test_mnemonics_of_tabs_and_menus_are_unique(window):
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    titles += [a.text() for a in window.menuBar().actions()]
    letters = [re.search(r"&(\w)", t)[1].lower() for t in titles]
    assert len(letters) == len(set(letters)), titles
    assert window.tabs.tabText(window.tabs.indexOf(window.heatmap)) == "H&eatmap"


def test_files_on_the_command_line_open_in_the_app(monkeypatch, tmp_path, pairs_csv):
    opened = []
    import calibsim_gui.qt.shell.app as app_module

    monkeypatch.setattr(app_module, "run_app", lambda **kw: opened.append(kw) or 0)
    assert cli.main([str(pairs_csv)]) == 0
    assert opened[-1]["files"] == [str(pairs_csv)] and opened[-1]["screenshot_dir"] is None
    assert cli._app_files(["score", str(pairs_csv), "--out", "x.csv"], {"score"}) == \
        ([], ["score", str(pairs_csv), "--out", "x.csv"])
    assert cli._app_files(["--", "odd name"], {"score"}) == (["odd name"], [])
    with pytest.raises(SystemExit):
        cli.main(["scroe"])                     # a mistyped command is still an error, not a file


def test_open_files_scores_a_pairs_file(window, qtbot, pairs_csv, tmp_path):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_files([pairs_csv, tmp_path / "missing.csv"])
    assert window.state.input.path == pairs_csv
    assert "missing.csv" in window._last_error.text()


def test_a_geometry_saved_on_a_larger_screen_is_restored_inside_this_one(qtbot):
    big = MainWindow(load_default_model=False, autosave=False)
    qtbot.addWidget(big)
    room = big.screen().availableGeometry()
    big.setGeometry(room.x() + 300, room.y() + 200, room.width() + 900, room.height() + 700)
    big.settings.setValue("window/geometry", big.saveGeometry())        # as saved on a 4K screen
    again = MainWindow(load_default_model=False, autosave=False)
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again, timeout=120_000)
    frame, status = again.frameGeometry(), again.statusBar()
    assert room.top() <= frame.top() and frame.bottom() <= room.bottom()      # the status bar is on screen
    assert room.top() <= status.mapToGlobal(status.rect().bottomLeft()).y() <= room.bottom()
    assert frame.left() >= room.left() and (frame.right() <= room.right()    # as wide as the screen
                                            or again.width() == again.minimumSizeHint().width())
