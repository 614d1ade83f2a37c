"""Remembered layout (#28): the tabs side by side, the current tab and each tab's view choices are kept
by projects, the autosave and (the layout) across restarts; the title names the project and marks
unsaved work."""

import json

from PySide6.QtWidgets import QMessageBox

from calibsim_gui.core.embedding import models
from calibsim_gui.qt.shell.main_window import MainWindow
from calibsim_gui.qt.widgets.workers import wait_for_workers
from tests.fakes import FakeEmbedder
from tests.qt.conftest import REFERENCES_MS, WORKERS_END_MS


def remembering(widget, state: dict):
    """A test double for a tab with view choices (the protocol of #28): `state` is its choice;
    what it is asked to restore is kept in ``widget.restored``."""
    widget.restored = []
    widget.view_state = lambda: dict(state)
    widget.restore_view_state = widget.restored.append
    return widget


WIDE = (2400, 1000)           # room for two panes whatever the (offscreen) screen's size


def new_window(qtbot, **options) -> MainWindow:
    window = MainWindow(**options)
    qtbot.addWidget(window)
    window.show()
    window.resize(*WIDE)
    if options.get("load_default_model", True):
        qtbot.waitUntil(lambda: window.state.profile is not None, timeout=REFERENCES_MS)
    return window


def close(*windows) -> None:
    for window in windows:
        window.close()
    assert wait_for_workers(WORKERS_END_MS)
    for window in windows:
        window.deleteLater()


def current(window) -> str:
    return window.tabs.currentWidget().objectName()


def test_a_reopened_project_has_its_tab_side_by_side_panes_and_view_choices(
        window, qtbot, monkeypatch, pairs_csv, labelled_pairs, tmp_path):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.human.fit(str(labelled_pairs), "0,5")
    window.agreement.form_combo.setCurrentIndex(1)              # compare people with the fitted map
    window.resize(*WIDE)
    window.panels.pair_actions[0].trigger()                     # View ▸ Side by side ▸ Text map beside Results
    assert window.panels.beside() == ["map"] and window.map.isVisible() and window.results.isVisible()
    window.panels.splitter.setSizes([1600, 700])
    window.tabs.setCurrentWidget(window.distributions)
    remembering(window.search, {"query": "a cat on a mat", "hits": 7})
    path = tmp_path / "study.calibsim"
    assert window.write_project(str(path))
    saved = json.loads(path.read_text())
    assert saved["layout"]["current"] == "distributions" and saved["layout"]["beside"] == ["map"]
    assert saved["views"]["agreement"] == {"compared": "human"}

    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder())
    second = new_window(qtbot, autosave=False)
    remembering(second.search, {})
    assert current(second) == "welcome" and second.panels.beside() == []
    with qtbot.waitSignal(second.projects.views_restored, timeout=120_000):   # one tab per turn (#44)
        second.open_project(str(path))
    assert second.panels.beside() == ["map"] and current(second) == "distributions"
    width, side = second.panels.splitter.sizes()
    assert 2 * side < width                                      # 70 % / 30 %, as saved
    assert second.state.compared_form == "human"
    assert second.agreement.form_combo.currentData() == "human"
    assert second.search.restored == [{"query": "a cat on a mat", "hits": 7}]
    assert second.windowTitle() == "study[*] — calibsim" and not second.isWindowModified()
    assert second.panels.pair_actions[0].isChecked()
    close(second)


def test_a_restored_autosave_keeps_the_layout_and_view_choices(qtbot, monkeypatch, pairs_csv):
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder())
    first = new_window(qtbot)
    with qtbot.waitSignal(first.results_shown, timeout=120_000):
        first.open_inputs([pairs_csv])
    first.panels.pair_actions[1].trigger()                      # Agreement beside Distributions
    remembering(first.search, {"query": "typed"})
    first.tabs.setCurrentWidget(first.heatmap)
    first.autosaver.save_now()                                  # what the timer does ~2 s after a change
    assert json.loads(first.autosaver.path.read_text())["layout"]["current"] == "heatmap"
    assert wait_for_workers(WORKERS_END_MS)                     # the process dies: no closeEvent

    second = new_window(qtbot, load_default_model=False)
    remembering(second.search, {})
    qtbot.waitUntil(lambda: second._restore_box is not None, timeout=120_000)
    with qtbot.waitSignal(second.projects.views_restored, timeout=120_000):
        second._restore_box.button(QMessageBox.StandardButton.Yes).click()
    assert second.panels.beside() == ["agreement"] and current(second) == "heatmap" and second.search.restored == [{"query": "typed"}]
    assert second.state.results is not None and len(second.state.results.frame) == 30
    assert second.windowTitle() == "Untitled[*] — calibsim" and second.isWindowModified()  # never saved
    close(second, first)


def test_the_title_names_the_project_and_marks_unsaved_work_until_saved(window, qtbot, pairs_csv, tmp_path):
    assert window.windowTitle() == "Untitled[*] — calibsim" and not window.isWindowModified()
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    assert window.isWindowModified()
    assert window.write_project(str(tmp_path / "my study.calibsim"))
    assert window.windowTitle() == "my study[*] — calibsim" and not window.isWindowModified()
    window.anchors.model.setData(window.anchors.model.index(0, 1), "an edit after saving")
    assert window.isWindowModified() and window.unsaved_work() == ["the input pairs.csv", "your anchor edits"]
    window.notify_done("scoring done")                          # a long run ended: said for a while
    assert window.windowTitle() == "my study[*] — calibsim — scoring done"
    window.title.note_timer.timeout.emit()                      # the note's time is up
    assert window.windowTitle() == "my study[*] — calibsim"
    window.title.note_timer.stop()


def test_view_choices_alone_are_not_unsaved_work(window, qtbot, pairs_csv, labelled_pairs, tmp_path):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.human.fit(str(labelled_pairs), "0,5")
    path = tmp_path / "study.calibsim"
    assert window.write_project(str(path))
    window.panels.pair_actions[1].trigger()
    window.panels.splitter.setSizes([400, 600])
    window.tabs.setCurrentWidget(window.space)
    window.agreement.form_combo.setCurrentIndex(1)
    window.state.set_view(metric="euclidean")
    assert window.unsaved_work() == [] and not window.isWindowModified()
    window.autosaver.save_now()                                  # the autosave keeps them all the same
    autosaved = json.loads(window.autosaver.path.read_text())
    assert autosaved["layout"]["beside"] == ["agreement"] and autosaved["layout"]["current"] == "space"
    assert autosaved["views"]["agreement"] == {"compared": "human"}


def test_the_layout_is_restored_after_a_restart(qtbot):
    first = new_window(qtbot, load_default_model=False, autosave=False)
    first.panels.pair_actions[1].trigger()                      # Agreement beside Distributions
    first.panels.show_beside("search")                          # and Search in the side pane too
    first.panels.splitter.setSizes([900, 1400])
    first.tabs.setCurrentWidget(first.heatmap)
    close(first)                                                # a normal quit keeps the layout

    second = new_window(qtbot, load_default_model=False, autosave=False)
    assert second.panels.beside() == ["agreement", "search"] and current(second) == "heatmap"
    width, side = second.panels.splitter.sizes()
    assert side > width                                         # 40 % / 60 %, as left
    assert [second.tabs.widget(i).objectName() for i in range(second.tabs.count())] == [
        "welcome", "model", "anchors", "background", "results", "distributions", "heatmap", "map", "space", "compare"]
    second.panels.one_pane()                                    # every tab back in its place
    assert second.panels.beside() == [] and second.panels.side.isHidden()
    assert second.tabs.indexOf(second.search) == second.tabs.indexOf(second.compare.view) - 1   # its own place
    assert not second.panels.pair_actions[1].isChecked()
    close(second)


def test_a_hand_edited_project_with_unusable_view_choices_opens_and_says_what_was_left_out(
        window, qtbot, pairs_csv, tmp_path):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    path = tmp_path / "edited.calibsim"
    assert window.write_project(str(path))
    data = json.loads(path.read_text())
    data["views"] = {"agreement": ["human"], "search": {"query": 5}, "no such tab": {"x": 1}}
    data["layout"] = {"current": 7, "beside": ["map", "no such tab"]}
    path.write_text(json.dumps(data))
    remembering(window.search, {})
    window.search.restore_view_state = lambda state: int("not a number")     # a tab that refuses it
    window._last_error = None
    window.open_project(str(path))
    qtbot.waitUntil(lambda: window._last_error is not None, timeout=120_000)
    text = window._last_error.text()
    assert str(path) in text and "'agreement' tab" in text and "'current'" in text and "'search' tab" in text
    assert "Save the project again" in text
    assert window.panels.beside() == ["map"]                    # what could be used was
    assert window.state.results is not None and len(window.state.results.frame) == 30


def test_a_damaged_remembered_layout_is_ignored(qtbot):
    from PySide6.QtCore import QSettings

    for value in ("{not json", json.dumps({"beside": "map", "current": ["x"], "sizes": [1, 2, 3]}),
                  json.dumps(["map"])):
        QSettings("calibsim", "calibsim").setValue("view/layout", value)
        window = new_window(qtbot, load_default_model=False, autosave=False)
        assert window.panels.beside() == [] and current(window) == "welcome"   # the first start's layout
        close(window)


def test_side_by_side_fits_a_1024_pixel_window(qtbot):
    window = new_window(qtbot, load_default_model=False, autosave=False)
    window.resize(1024, 700)
    window.panels.pair_actions[0].trigger()                     # Text map beside Results
    qtbot.waitUntil(lambda: window.map.isVisible(), timeout=120_000)
    assert window.width() == 1024 and window.results.isVisible()
    assert min(window.panels.splitter.sizes()) >= 400            # neither pane squeezed out
    window.panels.pair_actions[0].trigger()                     # unchecked: back in one pane
    assert window.panels.beside() == [] and window.tabs.indexOf(window.map) == 8
    close(window)


def test_a_tab_added_after_the_window_was_built_is_kept_and_moved_like_the_others(qtbot):
    from PySide6.QtWidgets import QWidget

    window = new_window(qtbot, load_default_model=False, autosave=False)
    later = remembering(QWidget(objectName="later"), {"models": ["a", "b"]})
    window.tabs.addTab(later, "&Later")
    remembering(window.search, {"hits": (1, 2)})                 # not plain JSON: not saved, never a failed save
    window.view("agreement")                  # a tab's choices are saved once it is built (shown or asked for)
    states = window.projects.view_states()
    assert states["later"] == {"models": ["a", "b"]} and states["agreement"] == {"compared": "calibrated"}
    assert "search" not in states
    window.panels.restore({"beside": ["later"], "current": "results"})
    assert window.panels.beside() == ["later"] and current(window) == "results"
    window.panels.one_pane()
    assert window.tabs.indexOf(later) == window.tabs.count() - 1 and window.tabs.tabText(12) == "&Later"
    close(window)
