"""Comparing the scored pairs with another model: a worker scores them, the Compare tab shows both,
linked to the selection and kept in the view state (issue 28, "Compare as a tab")."""

import json
import threading
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QPoint, Qt

from calibsim_gui.core.analysis.comparison import ModelComparison
from calibsim_gui.core.embedding import models
from calibsim_gui.qt.views import comparison_view
from calibsim_gui.qt.views.comparison_view import ComparisonView
from calibsim_gui.qt.widgets.point_cloud import MANY_POINTS
from tests.fakes import FakeEmbedder

OTHER = "fake-small"


@pytest.fixture
def compared(window, qtbot, pairs_csv, monkeypatch):
    """The window with the 30 pairs of `pairs_csv` (a `score` column of human scores) compared
    with a second fake model."""
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    other = FakeEmbedder(dimension=32, name=OTHER)
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: other)
    with qtbot.waitSignal(window.compare_runner.finished, timeout=120_000):
        window.compare.compare_with("small")
    qtbot.waitUntil(lambda: not window.compare.view.drawing, timeout=120_000)     # drawn a step per turn
    return window


def _headers(view) -> list[str]:
    model = view.table.model()
    return [model.headerData(i, Qt.Orientation.Horizontal) for i in range(model.columnCount())]


def test_the_compare_tab_starts_empty_with_a_button_that_asks_for_results_first(window, monkeypatch):
    view = window.compare.view
    assert view.objectName() == "compare" and window.tabs.indexOf(view) >= 0
    assert view.stack.currentIndex() == 0 and view.compare_button.text() == "Compare with a model…"
    shown = []
    monkeypatch.setattr(window.compare, "show_error", lambda title, text: shown.append(text))
    view.compare_button.click()
    assert "Score a pairs file first" in shown[0]


def test_the_tab_shows_readable_headers_differences_and_linked_scatters(compared):
    view = compared.compare.view
    assert compared.tabs.currentWidget() is view and view.stack.currentIndex() == 1
    headers = _headers(view)
    assert {"fake-bow · raw", "fake-bow · calibrated", f"{OTHER} · raw", f"{OTHER} · calibrated"} <= set(headers)
    assert not any("@" in h for h in headers)                   # no fingerprint digests in the headers
    tips = [view.table.model().headerData(i, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
            for i in range(len(headers))]
    other_id = FakeEmbedder(name=OTHER).fingerprint.id
    assert any(tip.startswith(other_id) for tip in tips)         # the full id is in the tooltip
    assert view.plots["calibrated"].getAxis("left").labelText == f"{OTHER} · calibrated"
    assert "raw score" in view.summary.text() and "calibrated (0-1)" in view.summary.text()
    x, _ = view.scatters["raw"].getData()
    assert len(x) == 30 and view.table.model().rowCount() == 30


def test_the_compare_tab_does_not_draw_black_plots_in_the_light_palette(compared):
    from PySide6.QtGui import QPalette

    view = compared.compare.view
    background = view.canvas.backgroundBrush().color()
    assert background == view.palette().color(QPalette.ColorRole.Base)
    assert background.lightness() > 200


def test_agreement_with_the_files_human_scores_is_shown_for_each_model(compared):
    view = compared.compare.view
    text = view.agreement.text()
    assert "score on 0–5" in text and "30 labelled pairs" in text
    assert "fake-bow Spearman ×100" in text and f"{OTHER} Spearman ×100" in text
    found = view.comparison.agreements("score", (0.0, 5.0))
    assert f"MAE {found[view.comparison.models[1]].mae:.3f}" in text
    compared.state.set_labels("")                                # no human-score column chosen
    assert "No human scores" in view.agreement.text()


def test_clicking_a_scatter_point_selects_its_row_in_results(compared, qtbot):
    view, state = compared.compare.view, compared.state
    compared.tabs.setCurrentWidget(view)
    qtbot.waitExposed(view, timeout=120_000)
    qtbot.waitUntil(lambda: not view.drawing, timeout=120_000)
    view.plots["raw"].vb.autoRange(padding=0.1)
    x, y = view._xy["raw"]
    target = int(np.argmax(np.abs(x - np.median(x)) + np.abs(y - np.median(y))))   # an outlying point
    spot = view.canvas.mapFromScene(view.point_position("raw", target))
    qtbot.mouseClick(view.canvas.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(spot.x(), spot.y()))
    row = state.selected_row          # the clicked point's row (pair i and its mirror 29 - i score alike)
    assert row in (target, 29 - target) and (x[row], y[row]) == (x[target], y[target])
    selected = compared.results.table.selectionModel().selectedRows()
    assert [compared.results.model.frame_row(i.row()) for i in selected] == [row]
    assert view.selected_points()["calibrated"] == pytest.approx(
        (view._xy["calibrated"][0][row], view._xy["calibrated"][1][row]))
    assert view.hover.text().startswith(f"row {row + 1}:")
    state.set_chosen_rows([1, 2, 3], "3 texts chosen on the Map")
    assert len(view.chosen["raw"].getData()[0]) == 3             # chosen rows are highlighted


def test_view_state_round_trip_restores_the_comparison(compared, qtbot):
    view = compared.compare.view
    saved = json.loads(json.dumps(view.view_state(), allow_nan=False))     # what a project stores
    fresh = ComparisonView(compared.state)
    qtbot.addWidget(fresh)
    fresh.restore_view_state({"unknown": 1})                     # tolerated, nothing shown
    assert fresh.comparison is None and fresh.view_state() == {}
    fresh.restore_view_state(saved)
    assert fresh.stack.currentIndex() == 1
    assert _headers(fresh) == _headers(view)
    assert fresh.comparison.differences == view.comparison.differences       # JSON keeps floats exactly
    first = view.comparison.column("calibrated", view.comparison.models[1])
    assert fresh.comparison.frame[first].to_numpy() == pytest.approx(view.comparison.frame[first].to_numpy())
    assert fresh.agreement.text() == view.agreement.text()

    shorter = json.loads(json.dumps(saved))                      # a comparison of other pairs
    for column in shorter["comparison"]["columns"]:
        column["values"] = column["values"][:-1]
    fresh.restore_view_state(shorter)
    assert fresh.comparison is None and "holds 29 pairs and the results 30" in fresh.hint.text()

    saved["comparison"]["columns"][3]["values"] = saved["comparison"]["columns"][3]["values"][:-1]
    fresh.restore_view_state(saved)                               # damaged: refused with a message
    assert fresh.comparison is None and fresh.stack.currentIndex() == 0
    assert "damaged" in fresh.hint.text() and "different lengths" in fresh.hint.text()


def test_the_autosave_takes_the_comparison_in_its_worker_and_it_round_trips(compared, qtbot, monkeypatch):
    """Putting a comparison in JSON form (0.4 s for 100,000 pairs) runs in the autosave's worker;
    the window's title (what is unsaved) never takes it."""
    from calibsim_gui.core.analysis.project import Project

    takers, to_dict = [], ModelComparison.to_dict
    monkeypatch.setattr(ModelComparison, "to_dict",
                        lambda self: takers.append(threading.current_thread()) or to_dict(self))
    compared.title.update()
    assert compared.unsaved_work() and takers == []
    path = compared.autosaver.path
    compared.autosaver.save_in_background()            # what the timer does
    qtbot.waitUntil(lambda: path.exists() and '"comparison"' in path.read_text(), timeout=120_000)
    assert takers and threading.main_thread() not in takers
    saved = Project.load(path).views["compare"]
    fresh = ComparisonView(compared.state)
    qtbot.addWidget(fresh)
    fresh.restore_view_state(saved)
    view = compared.compare.view
    assert fresh.stack.currentIndex() == 1 and _headers(fresh) == _headers(view)
    assert fresh.comparison.differences == view.comparison.differences
    pd.testing.assert_frame_equal(fresh.comparison.frame, view.comparison.frame, check_dtype=False)


def test_a_comparison_restored_into_the_hidden_tab_is_drawn_when_the_tab_is_shown(compared, qtbot):
    """Drawing 10,000 pairs' scatters held the GUI thread ~80 ms while a project reopened with the
    Compare tab hidden: they are drawn when the tab is first shown, every pair both models scored."""
    saved = json.loads(json.dumps(compared.compare.view.view_state(), allow_nan=False))
    fresh = ComparisonView(compared.state)
    qtbot.addWidget(fresh)
    fresh.restore_view_state(saved)
    assert fresh.stack.currentIndex() == 1 and len(fresh.table.model().column_names)
    assert all(len(item.data) == 0 for item in fresh.scatters.values())        # hidden: not drawn yet

    fresh.show()
    qtbot.waitUntil(lambda: not fresh.drawing, timeout=120_000)
    comparison = fresh.comparison
    for form, item in fresh.scatters.items():
        x, y = (comparison.frame[comparison.column(form, m)].to_numpy(dtype=float) for m in comparison.models)
        assert len(item.data) == np.sum(np.isfinite(x) & np.isfinite(y)) == 30
        assert fresh.plots[form].titleLabel.text == f"{comparison.metric} {form}"
    widths = [fresh.table.columnWidth(c) for c in range(fresh.table.model().columnCount())]
    assert all(0 < w <= comparison_view.MAX_TEXT_WIDTH for w in widths)


def _constructed(calibrated_diff: float, n: int = 20) -> ModelComparison:
    """Two made-up models, raw mean difference 0.060 and calibrated `calibrated_diff`, `n` pairs."""
    rng = np.random.default_rng(3)
    a, b = "all-MiniLM-L6-v2@c4aa", "all-mpnet-base-v2@91ff"
    frame = pd.DataFrame({"sentence1": [f"a {i}" for i in range(n)], "sentence2": [f"b {i}" for i in range(n)],
                          **{f"cosine_{form} [{m}]": rng.uniform(0, 1, n)
                             for form in ("raw", "calibrated") for m in (a, b)}})
    differences = {"raw": {"unit": "the metric's own units", "mean_abs_diff": 0.060, "by_pair": {}},
                   "calibrated": {"unit": "0-1 human scale", "mean_abs_diff": calibrated_diff, "by_pair": {}}}
    levels = [("unrelated", 0.0), ("topic", 0.4), ("paraphrase", 1.0)]
    scales = {a: {"levels": [{"level": n, "target": t, "median": 0.1 + 0.8 * t} for n, t in levels],
                  "background": {"p5": 0.02, "p50": 0.11, "p95": 0.3}},
              b: {"levels": [{"level": n, "target": t, "median": 0.3 + 0.5 * t} for n, t in levels],
                  "background": None}}
    return ModelComparison(frame, differences, "cosine", "none", [a, b], scales=scales)


def test_a_calibrated_difference_above_the_raw_one_is_explained_by_the_reference_scales(state, qtbot):
    view = ComparisonView(state)
    qtbot.addWidget(view)
    view.show_comparison(_constructed(0.067))
    assert not view.why.isHidden()
    text = view.explanation.text()
    assert "differ more on the calibrated scale (mean difference 0.067) than on raw scores (0.060)" in text
    assert "MiniLM 0.800, mpnet 0.500" in text                    # each model's raw span of its levels
    table = view.scales
    assert [table.horizontalHeaderItem(c).text() for c in range(2)] == ["MiniLM · raw", "mpnet · raw"]
    rows = [table.verticalHeaderItem(r).text() for r in range(table.rowCount())]
    assert rows[0].startswith("unrelated (target 0.00)") and "background p50" in rows
    assert (table.item(1, 0).text(), table.item(1, 1).text()) == ("0.420", "0.500")
    assert table.item(rows.index("background p50"), 1).text() == "—"   # mpnet's reference has no background
    view.show_comparison(_constructed(0.05))
    assert view.why.isHidden()


def test_comparison_progress_reports_counts_from_the_first_update(window, qtbot, pairs_csv):
    from calibsim_gui.qt.flows.compare_flow import comparison_task

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    state, calls, loaded = window.state, [], []

    def load(spec):
        loaded.append(len(calls))
        return FakeEmbedder(dimension=32, name=OTHER)

    comparison = comparison_task("/models/all-mpnet-base-v2", load, table=state.input, mine=state.results,
                                 mine_model=state.embedder, mine_profile=state.profile, metric="cosine",
                                 progress=lambda *a: calls.append(a), should_stop=lambda: False)
    _, total, message = calls[0]
    assert loaded == [1]                                           # the first update comes before the load
    assert total == 30 and message.startswith("Loading mpnet (step 1 of 3)")
    assert "30 texts of 30 pairs" in message       # each text is on both sides once
    preparing = [m for _, t, m in calls if "step 2 of 3" in m]
    assert preparing and all(" texts" in m for m in preparing)
    assert any(f"/ {t:,} texts" in m for d, t, m in calls if "step 2" in m and d)
    assert calls[-1][:2] == (30, 30) and "30 / 30 pairs scored" in calls[-1][2]
    assert set(comparison.scales) == set(comparison.models)


def test_with_one_model_the_comparison_says_how_to_add_another(window, qtbot, pairs_csv, monkeypatch,
                                                                tmp_path):
    from PySide6.QtWidgets import QFileDialog

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    monkeypatch.setattr(window.models.table_model, "models", [])       # nothing else listed
    window.compare.view.compare_button.click()
    dialog = window.compare.comparison_dialog
    qtbot.waitExposed(dialog, timeout=120_000)
    text = dialog.summary.text()
    assert "Only one model is available" in text and "Choose a model folder" in text
    assert "calibsim compare" in text and "--anchors" in text
    folder = tmp_path / "other-model"
    folder.mkdir()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(folder))
    chosen = []
    monkeypatch.setattr(window.compare, "compare_with", lambda spec: chosen.append(spec))
    dialog.model_chosen.disconnect()
    dialog.model_chosen.connect(window.compare.compare_with)
    dialog.choose_button.click()
    assert chosen == [str(folder)] and not dialog.isVisible()


def test_every_model_is_calibrated_with_the_same_edited_ladder(window, qtbot, pairs_csv, monkeypatch):
    from calibsim_gui.core.analysis.comparison import comparison_reference
    from calibsim_gui.core.analysis.pairs import score_pairs
    from calibsim_gui.core.references.anchors import AnchorSet

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    ladder = window.state.profile.anchors
    edited = AnchorSet(ladder.name, ladder.levels, ladder.pairs[::2])
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.apply_anchors(edited)
    assert window.state.profile.anchors == edited
    other = FakeEmbedder(dimension=32, name=OTHER)
    monkeypatch.setattr(models, "load_model", lambda spec, device="auto", **kw: other)
    with qtbot.waitSignal(window.compare_runner.finished, timeout=120_000):
        window.compare.compare_with("small")
    view = window.compare.view
    assert "same anchor ladder" in view.summary.text() and "Warning" not in view.summary.text()
    # the second model's calibrated scores are those of its own reference refitted on the edited ladder
    expected = score_pairs(window.state.input, other, comparison_reference(other, edited),
                           metrics=["cosine"]).frame["cosine_calibrated"]
    shown = view.comparison.frame[view.comparison.column("calibrated", other.fingerprint.id)]
    assert shown.to_numpy() == pytest.approx(expected.to_numpy(), abs=1e-9)


def test_while_the_model_loads_its_step_line_is_renewed_with_the_time_so_far(monkeypatch):
    from calibsim_gui.qt.flows import compare_flow

    monkeypatch.setattr(compare_flow, "LOAD_TICK_S", 0.01)
    reports = []
    enough = threading.Event()

    def report(seconds):
        reports.append(seconds)
        if len(reports) >= 2:
            enough.set()

    def load(spec):
        assert enough.wait(60)                  # a bound, not a pace: the load lasts until two reports
        return spec

    assert compare_flow.while_loading(load, "model", report) == "model"
    assert len(reports) >= 2 and reports == sorted(reports) and reports[0] > 0
    assert not any(t.name == "comparison model load" for t in threading.enumerate())   # no report after it


def test_equal_looking_differences_are_shown_with_the_digits_that_tell_them_apart(state, qtbot):
    view = ComparisonView(state)
    qtbot.addWidget(view)
    view.show_comparison(_constructed(0.0603))
    assert "calibrated scale (mean difference 0.0603) than on raw scores (0.0600)" in view.explanation.text()
    assert "<b>0.0600</b>" in view.summary.text() and "<b>0.0603</b>" in view.summary.text()


def test_the_per_pair_table_shows_many_rows_in_a_1600_by_1000_window(window, qtbot):
    view = window.compare.view
    view.show_comparison(_constructed(0.067))                 # with the reference scales explained
    window.tabs.setCurrentWidget(view)
    window.resize(1600, 1000)
    qtbot.waitUntil(lambda: view.table.viewport().height() >= 6 * view.table.rowHeight(0), timeout=10_000)


def test_while_the_second_model_loads_the_window_answers(window, qtbot, pairs_csv, monkeypatch):
    """The second model loads in the comparison's worker: an event posted to the window while the
    load is still going is handled, and the comparison is shown once the load ends."""
    from PySide6.QtCore import QTimer

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    loading, answered, still_loading = threading.Event(), threading.Event(), []

    def load(spec, device="auto", **kw):
        loading.set()
        answered.wait(120)                         # the load ends only once the window answered
        return FakeEmbedder(dimension=32, name=OTHER)

    def answer() -> None:
        still_loading.append(window.compare_runner.running)
        answered.set()

    monkeypatch.setattr(models, "load_model", load)
    with qtbot.waitSignal(window.compare_runner.finished, timeout=120_000):
        window.compare.compare_with("small")
        qtbot.waitUntil(loading.is_set, timeout=60_000)
        QTimer.singleShot(0, window, answer)
    assert still_loading == [True]
    assert window.compare.view.comparison is not None and window.tabs.currentWidget() is window.compare.view


@pytest.mark.parametrize("frozen", [False, True], ids=["not frozen", "frozen while it loaded"])
def test_the_second_model_is_freed_once_the_comparison_ends(window, qtbot, pairs_csv, monkeypatch, frozen):
    """The second model is held in reference cycles (torch models are) and may be frozen from the
    cycle collector while it lives (the window's model switched meanwhile); once the comparison is
    shown, it is freed (not kept until the next model switch)."""
    import gc
    import weakref

    from calibsim_gui.qt.widgets import workers

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    made = []

    def load(spec, device="auto", **kw):
        model = FakeEmbedder(dimension=32, name=OTHER)
        model.itself = model                                 # a cycle
        made.append(weakref.ref(model))
        if frozen:
            workers.freeze_alive()                           # as a model switch meanwhile does
        return model

    monkeypatch.setattr(models, "load_model", load)
    try:
        with qtbot.waitSignal(window.compare_runner.finished, timeout=120_000):
            window.compare.compare_with("small")
        qtbot.waitUntil(lambda: made[0]() is None, timeout=10_000)
        assert window.compare.view.comparison is not None
    finally:
        gc.unfreeze()


def test_a_comparison_of_many_pairs_is_one_image_of_every_pair_that_a_click_still_selects(state, qtbot):
    """Separate points for 100,000 pairs held the window ~350 ms a plot: past `MANY_POINTS` each
    plot is one image of every pair, drawn where its scores are; a click selects the pair's row
    and the rows chosen elsewhere are drawn in their colour."""
    comparison = _constructed(0.05, n=MANY_POINTS + 500)
    raw = [comparison.column("raw", m) for m in comparison.models]
    comparison.frame.loc[0, raw] = [1.6, -0.6]                        # a pair far from every other
    state.results = SimpleNamespace(frame=comparison.frame)
    view = ComparisonView(state)
    qtbot.addWidget(view)
    view.resize(1000, 800)
    view.show()
    view.show_comparison(comparison)
    qtbot.waitUntil(lambda: not view.drawing, timeout=120_000)
    for form, cloud in view.clouds.items():
        x, y = view._xy[form]
        assert len(view.scatters[form].data) == 0
        np.testing.assert_array_equal(cloud.coords, np.column_stack([x, y]))
    view.canvas.grab()
    assert all(cloud.drawn().all() for cloud in view.clouds.values())

    view.plots["raw"].vb.autoRange(padding=0.1)
    view.canvas.grab()
    spot = view.canvas.mapFromScene(view.point_position("raw", 0))
    qtbot.mouseClick(view.canvas.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(spot.x(), spot.y()))
    assert state.selected_row == 0 and view.hover.text().startswith("row 1:")
    assert view.selected_points()["raw"] == (1.6, -0.6)

    state.set_chosen_rows([1, 2, 3], "3 texts chosen on the Map")
    for form, cloud in view.clouds.items():
        assert np.flatnonzero(cloud.groups).tolist() == [1, 2, 3] and len(view.chosen[form].getData()[0]) == 0
