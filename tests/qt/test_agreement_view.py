"""AgreementView and the human-score choice: calibrated vs human scores on 0-1, linked to the table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPointF, Qt

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.analysis.distributions import (
    SPEARMAN_NOTE, agreement, guess_scale, label_candidates, label_rows)
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.qt.views.agreement_view import AgreementView
from calibsim_gui.qt.views.results.results_view import ResultsView
from calibsim_gui.qt.session.state import AppState
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture
def scored(profile, tmp_path):
    """Pairs whose human scores are in a column named `rating` (not recognised on loading)."""
    texts = random_sentences(40, seed=3)
    pairs = [(a, b if i % 2 else a) for i, (a, b) in enumerate(zip(texts[::2], texts[1::2]))]
    rating = [1 if i % 2 else 10 for i in range(len(pairs))]
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": [a for a, _ in pairs], "sentence2": [b for _, b in pairs],
                  "rating": rating, "id": [f"p{i}" for i in range(len(pairs))]}).to_csv(path, index=False)
    table = load_pairs(path)
    assert table.label is None                        # `rating` is not a known label name
    return table, score_pairs(table, FakeEmbedder(), profile)


@pytest.fixture
def views(qtbot, profile, scored):
    table, results = scored
    state = AppState()
    state.set_profile(profile, "test")
    state.set_input(table)
    state.set_results(results)
    table_view, agreement_view = ResultsView(state), AgreementView(state)
    for widget in (table_view, agreement_view):
        qtbot.addWidget(widget)
    yield state, table_view, agreement_view
    for widget in (table_view, agreement_view):
        widget.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def test_core_agreement_is_the_error_on_the_0_1_scale():
    result = agreement(["0", "5", "2.5", ""], [0.1, 0.7, 0.5, 0.3], (0, 5), "score")
    assert np.allclose(result.human[:3], [0, 1, 0.5]) and np.isnan(result.human[3])
    assert np.allclose(result.disagreement[:3], [0.1, 0.3, 0.0])
    assert result.n == 3
    assert result.mae == pytest.approx(0.4 / 3)
    assert result.rmse == pytest.approx(np.sqrt(0.1 / 3))
    assert result.spearman_x100 == pytest.approx(100.0)
    assert guess_scale([0.5, 3.2, 4.9]) == (0.0, 5.0) and guess_scale([1, 7]) == (0.0, 7.0)
    assert guess_scale([-2.5, 2]) == (-3.0, 5.0)
    frame = pd.DataFrame({"s1": ["a", "b"], "s2": ["c", "d"], "rating": ["1", "2"], "name": ["x", "3"],
                          "cosine_raw": [0.1, 0.2], "disagreement": [0.0, 0.1]})
    assert label_candidates(frame) == ["rating"]
    assert label_rows([0, 5, 30, 8], [10, 10, 10, 10]) == [0, 1, 0, 2]


def test_any_numeric_column_can_be_chosen_as_human_scores(views):
    state, table_view, view = views
    assert view.stack.currentWidget() is view.hint              # nothing chosen yet: the hint
    assert table_view.label_bar.isVisibleTo(table_view)
    combo = table_view.label_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["(none)", "rating"]
    assert "disagreement" not in table_view.model.column_names

    combo.setCurrentIndex(combo.findData("rating"))
    assert state.label_column == "rating" and state.label_scale == (0.0, 10.0)
    assert (table_view.scale_low.value(), table_view.scale_high.value()) == (0.0, 10.0)
    assert view.stack.currentIndex() == 1
    frame = state.results.frame
    human = frame["rating"].astype(float).to_numpy() / 10
    expected = np.abs(frame["cosine_calibrated"].to_numpy() - human)
    column = table_view.model.column_of("disagreement")
    shown = [table_view.model.index(r, column).data(Qt.ItemDataRole.UserRole)
             for r in range(table_view.model.rowCount())]
    assert np.allclose(shown, expected)
    texts = [table_view.model.index(r, column).data() for r in range(table_view.model.rowCount())]
    assert texts == [f"{v:.3f}" for v in expected[[table_view.model.frame_row(r) for r in range(len(texts))]]]
    assert f"MAE {np.mean(expected):.3f}" in view.summary.text()
    assert f"RMSE {np.sqrt(np.mean(expected ** 2)):.3f}" in view.summary.text()
    assert "MAE" in table_view.summary.text() and "Agreement tab" in table_view.summary.text()
    assert view.note.text() == SPEARMAN_NOTE and "by construction" in SPEARMAN_NOTE
    x, y = view.points.getData()
    assert np.allclose(np.sort(x), np.sort(human)) and np.allclose(np.sort(y), np.sort(frame["cosine_calibrated"]))

    # another scale: the agreement is derived again, nothing is rescored
    table_view.scale_high.setValue(20)
    table_view.scale_high.editingFinished.emit()
    assert state.label_scale == (0.0, 20.0) and state.results.frame is frame
    assert np.allclose(view.result.human, human / 2)

    # sorting by disagreement puts the worst pair first
    table_view.table.sortByColumn(table_view.model.column_of("disagreement"), Qt.SortOrder.DescendingOrder)
    worst = table_view.model.frame_row(0)
    assert view.result.disagreement[worst] == pytest.approx(np.nanmax(view.result.disagreement))
    combo.setCurrentIndex(combo.findData(""))
    assert state.label_column == "" and view.stack.currentWidget() is view.hint
    assert "disagreement" not in table_view.model.column_names


def test_selection_is_linked_between_table_and_scatter(views, qtbot):
    state, table_view, view = views
    state.set_labels("rating", (0, 10))
    table_view.table.selectRow(3)
    row = table_view.model.frame_row(3)
    assert state.selected_row == row
    assert view.selected_point() == pytest.approx((view.result.human[row], view.result.calibrated[row]))
    assert f"row {row + 1}:" in view.hover.text() and "disagreement" in view.hover.text()

    # clicking a point selects its row in the table
    view.resize(700, 600)
    view.show()
    qtbot.waitExposed(view, timeout=120_000)
    target = 6
    spot = view.points.pointsAt(QPointF(view.result.human[target], view.result.calibrated[target]))
    view._clicked(view.points, spot, None)
    assert state.selected_row in [int(p.data()) for p in spot] and target in [int(p.data()) for p in spot]
    selected = table_view.table.selectionModel().selectedRows()
    assert [table_view.model.frame_row(i.row()) for i in selected] == [state.selected_row]
    view._hovered(view.points, spot, None)
    assert view.hover.text().startswith(f"row {int(spot[0].data()) + 1}:")


def test_new_results_clear_the_pair_read_from_the_old_ones(views, scored):
    from calibsim_gui.qt.views.agreement_view import HOVER_HINT

    state, _table_view, view = views
    state.set_labels("rating", (0, 10))
    state.select_row(3)
    assert view.hover.text().startswith("row 4:")
    state.set_results(scored[1])                       # rescored: no row is selected any more
    assert view.hover.text() == HOVER_HINT and view.selected_point() is None


def test_loaded_label_is_used_without_choosing(qtbot, profile, tmp_path):
    texts = random_sentences(20, seed=5)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts[:10], "sentence2": texts[10:], "score": np.linspace(0, 5, 10)}
                 ).to_csv(path, index=False)
    table = load_pairs(path)
    state = AppState()
    state.set_profile(profile, "test")
    state.set_input(table)
    state.set_results(score_pairs(table, FakeEmbedder(), profile))
    view = AgreementView(state)
    qtbot.addWidget(view)
    assert view.result is not None and view.result.label == "score" and view.result.scale == (0.0, 5.0)
    assert view.result.n == 10
    view.resize(800, 600)
    view.grab().save(str(tmp_path / "agreement.png"))
    state.set_results(None)
    assert view.stack.currentWidget() is view.hint


def test_scatter_has_a_small_menu_instead_of_pyqtgraphs(views):
    _, _, view = views
    assert not view.plot.vb.menuEnabled()
    assert [a.text() for a in view.plot_menu.build().actions()] == ["Reset view", "Export image…"]


def test_many_labelled_pairs_are_one_image_where_their_scores_are_and_a_click_selects(views, qtbot, monkeypatch):
    """100,000 separate points held the window ~0.3 s: past `MANY_POINTS` (here 10, as if it were
    100,000) the pairs are one image, drawn where their scores are; a click selects a pair's row."""
    import pyqtgraph as pg
    from PySide6.QtCore import QPoint

    from calibsim_gui.qt.views import agreement_view

    monkeypatch.setattr(agreement_view, "MANY_POINTS", 10)
    state, table_view, view = views
    state.set_labels("rating", (0, 10))
    result, rows = view.result, view._rows
    assert len(rows) == 20 and len(view.points.data) == 0
    np.testing.assert_array_equal(view.cloud.coords, np.column_stack([result.human[rows], result.calibrated[rows]]))
    view.resize(700, 600)
    view.show()
    qtbot.waitExposed(view, timeout=120_000)
    view.canvas.grab()
    assert view.cloud.drawn().all()

    odd = rows[rows % 2 == 1]                          # different texts: rated 1, calibrated apart
    gaps = np.abs(result.calibrated[odd][:, None] - result.calibrated[odd][None, :]) + np.eye(len(odd))
    target = int(odd[np.argmax(gaps.min(axis=1))])     # the one farthest from the others
    spot = view.canvas.mapFromScene(view.plot.vb.mapViewToScene(
        pg.Point(result.human[target], result.calibrated[target])))
    qtbot.mouseClick(view.canvas.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(spot.x(), spot.y()))
    assert state.selected_row == target
    assert [table_view.model.frame_row(i.row()) for i in table_view.table.selectionModel().selectedRows()] == [target]
    assert view.hover.text().startswith(f"row {target + 1}:")


def test_the_human_scores_are_read_once_for_every_view_that_shows_their_agreement(views, scored, monkeypatch):
    """Results, its summary and Agreement each show the agreement: the human-score column is read
    from its text once per results (35 ms each time for 100,000 pairs), not once per view."""
    from dataclasses import replace

    from calibsim_gui.core.analysis import distributions
    from calibsim_gui.qt.session import human_scores

    state, _table_view, view = views
    reads, read = [], distributions.label_values

    def counted(column):
        if not isinstance(column, np.ndarray):           # the frame's column, read from its text
            reads.append(column.name)
        return read(column)

    for module in (distributions, human_scores):
        monkeypatch.setattr(module, "label_values", counted)
    state.set_labels("rating", (0, 10))
    assert reads == ["rating"] and view.result is not None and view.result.n == 20
    assert "labelled pairs" in view.summary.text()
    state.set_results(replace(scored[1], frame=scored[1].frame.copy()))
    assert reads == ["rating", "rating"]                 # new results: read again
