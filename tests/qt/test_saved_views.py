"""Each tab's view choices travel with the project (#28): the Compare tab's comparison, the Results
filters and sort, the Map's projection settings, as a user saves and reopens them."""

import json

from PySide6.QtCore import Qt

from calibsim_gui.core.embedding import models
from calibsim_gui.qt.views.results.column_filters import ColumnFilter
from tests.fakes import FakeEmbedder
from tests.qt.test_layout import close, new_window


def test_a_reopened_project_shows_its_comparison_filters_and_map_settings(
        window, qtbot, monkeypatch, pairs_csv, tmp_path):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder(dimension=32,
                                                                                            name="fake-small"))
    with qtbot.waitSignal(window.compare_runner.finished, timeout=120_000):
        window.compare.compare_with("small")
    compared = window.compare.view.comparison
    window.results.set_column_filter(ColumnFilter("sentence1", text="a"))
    window.results.table.sortByColumn(window.results.model.column_names.index("cosine_calibrated"),
                                      Qt.SortOrder.AscendingOrder)
    shown_rows = window.results.model.rowCount()
    window.map.segments_box.setChecked(True)
    path = tmp_path / "two-models.calibsim"
    assert window.write_project(str(path))
    views = json.loads(path.read_text())["views"]
    assert {"compare", "results", "map"} <= set(views)

    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: FakeEmbedder())
    second = new_window(qtbot, autosave=False)
    with qtbot.waitSignal(second.projects.views_restored, timeout=120_000):  # one tab per turn (#44)
        second.open_project(str(path))
    again = second.compare.view.comparison
    assert again.models == compared.models and again.differences == compared.differences
    assert second.compare.view.stack.currentIndex() == 1                     # the comparison, not the hint
    assert second.results.chips.labels() == ["sentence1 contains “a”"]
    assert second.results.model.rowCount() == shown_rows < len(second.state.results.frame)
    assert second.results.view_state()["sort"] == {"column": "cosine_calibrated", "descending": False}
    assert second.map.segments_box.isChecked()
    close(second)


def test_views_restored_one_tab_at_a_time_are_kept_by_a_save_before_their_turn(window, qtbot):
    """A reopened project's view choices are restored one tab per turn of the event loop (#44):
    a project saved before a tab's turn still holds that tab's choices, and the tab, not built
    until then, shows them once all are restored."""
    projects = window.projects
    assert "map" in window.panels.waiting                   # not built yet
    project = projects.current_project()
    project.views = {"map": {"segments": True, "clusters": 5}}
    projects.pending_views = project
    projects.restore_views()
    assert projects.view_states()["map"] == {"segments": True, "clusters": 5}     # before its turn
    with qtbot.waitSignal(projects.views_restored, timeout=10_000):
        pass
    assert window.map.segments_box.isChecked() and window.map.view_state()["clusters"] == 5
    assert projects.view_states()["map"]["segments"] is True
