"""One selection shared by every view (#28): a heatmap cell, a Results row, a Distributions marker
and a Search hit select the same pair."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QItemSelectionModel, QPointF, Qt

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.pairs import score_column
from calibsim_gui.core.io.inputs import load_documents
from calibsim_gui.qt.views.distributions.distribution_plot import DistributionPlot
from calibsim_gui.qt.views.heatmap.heatmap_view import HeatmapView
from calibsim_gui.qt.views.results.results_view import ResultsView
from calibsim_gui.session.selection import document_pair, pair_row
from tests.fakes import FakeEmbedder

TEXTS = ["w1 w2 w3 w4 cat", "w7 w8 w9 dog", "w1 w2 w3 w4 mat", "w7 w8 w9 fog", "w1 w2 w3 w5 hat",
         "w7 w8 w6 log"]


@pytest.fixture
def matrix(profile, tmp_path):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(TEXTS))
    return score_matrix(load_documents(docs), FakeEmbedder(), profile)


def test_pair_numbers_follow_the_upper_triangle():
    n = 7
    rows, cols = np.triu_indices(n, k=1)
    assert [pair_row(n, a, b) for a, b in zip(rows, cols)] == list(range(len(rows)))
    assert [document_pair(n, k) for k in range(len(rows))] == list(zip(rows.tolist(), cols.tolist()))
    assert pair_row(n, 5, 2) == pair_row(n, 2, 5)


def click_cell(qtbot, heatmap, i, j):
    """A left click in the middle of the heatmap's shown cell (row i, column j)."""
    scene = heatmap.plot.vb.mapViewToScene(QPointF(j + 0.5, i + 0.5))
    qtbot.mouseClick(heatmap.canvas.viewport(), Qt.MouseButton.LeftButton,
                     pos=heatmap.canvas.mapFromScene(scene))


def test_a_heatmap_click_selects_the_pair_in_results_and_distributions(qtbot, state, matrix):
    heatmap, results, plots = HeatmapView(state), ResultsView(state), DistributionPlot(state)
    for widget in (heatmap, results, plots):
        qtbot.addWidget(widget)
    heatmap.resize(900, 700)
    heatmap.show()
    qtbot.waitExposed(heatmap, timeout=120_000)
    state.set_results(matrix)
    heatmap.plot.autoRange(padding=0)
    qtbot.waitUntil(lambda: heatmap.plot.vb.sceneBoundingRect().width() > 100, timeout=120_000)   # laid out
    i, j = 1, 4
    a, b = sorted((int(heatmap.order[i]), int(heatmap.order[j])))
    click_cell(qtbot, heatmap, i, j)
    assert state.selected_documents() == (a, b)
    current = results.table.currentIndex()                          # its row in Results
    model = results.model
    assert current.isValid()
    assert {model.index(current.row(), model.column_of(c)).data() for c in ("text a", "text b")} == \
        {TEXTS[a], TEXTS[b]}
    assert TEXTS[a] in results.detail.text() and TEXTS[b] in results.detail.text()
    drawn = plots.plot_data()                                       # the marker in Distributions
    assert drawn["selected"] == pytest.approx(float(matrix.matrices["raw"][a, b]), abs=1e-6)
    assert drawn["cal_selected"] == pytest.approx(float(matrix.matrices["calibrated"][a, b]), abs=1e-6)
    assert heatmap.mark.isVisible() and heatmap.mark.rect().x() in (i, j)   # both cells outlined
    click_cell(qtbot, heatmap, 2, 2)                                # the diagonal is no pair
    assert state.selected_documents() == (a, b)
    results.table.selectRow(model.rowCount() - 1)                   # and back: Results -> heatmap
    c, d = state.selected_documents()
    where = list(np.argsort(heatmap.order))
    assert {heatmap.mark.rect().x(), heatmap.mark.rect().y()} == {where[c], where[d]}


def open_documents_with_map(window, qtbot, tmp_path):
    """TEXTS opened as a document set, its text map drawn."""
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(TEXTS))
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([docs], per_file=False)
    window.tabs.setCurrentWidget(window.map)
    qtbot.waitUntil(lambda: window.map.text_map is not None, timeout=120_000)


def test_a_heatmap_pair_is_marked_on_the_map(window, qtbot, tmp_path):
    open_documents_with_map(window, qtbot, tmp_path)
    heatmap = window.heatmap
    window.tabs.setCurrentWidget(heatmap)
    heatmap.select_cell(0, 3)
    a, b = window.state.selected_documents()
    assert {a, b} == {int(heatmap.order[0]), int(heatmap.order[3])}
    coords = window.map.text_map.projection.coords
    marked = window.map.current.getData()
    assert sorted(zip(*marked)) == sorted(map(tuple, coords[[a, b]].tolist()))
    assert {window.map.text_map.texts[a], window.map.text_map.texts[b]} == {TEXTS[a], TEXTS[b]}


def test_a_hit_text_finds_its_document_pair(state, matrix):
    state.set_results(matrix)
    row = state.pair_with_texts(TEXTS[2], TEXTS[4])                 # both texts in the set
    assert document_pair(len(TEXTS), row) == (2, 4)
    alone = state.pair_with_texts(TEXTS[1])                         # with its most similar document
    raw = matrix.matrices["raw"][1].astype(float)
    raw[1] = -np.inf
    assert set(document_pair(len(TEXTS), alone)) == {1, int(np.argmax(raw))}
    assert state.pair_with_texts("not in the set") is None


def test_a_heatmap_table_row_selects_its_pair_in_results_and_on_the_map(window, qtbot, tmp_path):
    open_documents_with_map(window, qtbot, tmp_path)
    heatmap, state = window.heatmap, window.state
    window.tabs.setCurrentWidget(heatmap)
    table = heatmap.documents
    table.selectRow(1)                                              # one document: with its nearest
    a = int(heatmap.order[1])
    raw = state.results.matrices["raw"][a].astype(float)
    raw[a] = -np.inf
    assert state.selected_documents() == tuple(sorted((a, int(np.argmax(raw)))))
    assert {index.row() for index in table.selectedIndexes()} == {1}     # the user's choice stays
    table.setCurrentCell(4, 0, QItemSelectionModel.SelectionFlag.Select
                         | QItemSelectionModel.SelectionFlag.Rows)    # Ctrl+click a second one
    b = int(heatmap.order[4])
    assert state.selected_documents() == tuple(sorted((a, b)))
    results = window.results                                        # its row in Results
    current = results.table.currentIndex()
    model = results.model
    assert {model.index(current.row(), model.column_of(c)).data() for c in ("text a", "text b")} == \
        {TEXTS[a], TEXTS[b]}
    marked = window.map.current.getData()                           # its two points on the Map
    coords = window.map.text_map.projection.coords
    assert sorted(zip(*marked)) == sorted(map(tuple, coords[[a, b]].tolist()))
    where = list(np.argsort(heatmap.order))
    assert {heatmap.mark.rect().x(), heatmap.mark.rect().y()} == {where[a], where[b]}
    heatmap.select_cell(0, 5)                                       # and back: a cell -> the table
    c, d = int(heatmap.order[0]), int(heatmap.order[5])
    assert {int(heatmap.order[index.row()]) for index in table.selectedIndexes()} == {c, d}


@pytest.mark.parametrize("geometry", ["none", "center"])
def test_brushing_distributions_filters_the_document_pairs_in_results(qtbot, state, profile, tmp_path, geometry):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(TEXTS))
    matrix = score_matrix(load_documents(docs), FakeEmbedder(), profile, geometry=geometry)
    state.set_geometry(geometry)
    results, plots = ResultsView(state), DistributionPlot(state)
    for widget in (results, plots):
        qtbot.addWidget(widget)
    state.set_results(matrix)
    plots.plot_data()
    model = results.model
    assert model.rowCount() == 15                                   # every pair of the 6 documents
    menu = plots.context_menu(plots.cal_panel)                      # right-click the calibrated plot
    [brush] = [a for a in menu.actions() if a.text() == "Filter the table to a range of these scores"]
    brush.trigger()
    calibrated = matrix.matrices["calibrated"][np.triu_indices(6, k=1)]
    low, high = np.sort(calibrated)[[3, 9]]
    plots.cal_panel.region.setRegion((float(low), float(high)))     # dragged to span 7 pairs
    plots.cal_panel.region.sigRegionChangeFinished.emit(plots.cal_panel.region)
    column = model.column_of(score_column("cosine", "calibrated", geometry))
    shown = [float(model.index(r, column).data()) for r in range(model.rowCount())]
    assert model.rowCount() == int(((calibrated >= low) & (calibrated <= high)).sum()) == 7
    assert all(low - 1e-3 <= value <= high + 1e-3 for value in shown)
    assert "from" in results.chips.labels()[0]                       # its chip says so
    plots.range_button.click()                                      # removed: every pair again
    assert model.rowCount() == 15 and not results.chips.labels()


def test_a_map_lasso_filters_results_marks_distributions_and_the_summary_and_a_brush_marks_the_map(
        window, qtbot, pairs_csv):
    from calibsim_gui.qt.session.human_scores import current_agreement

    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([pairs_csv])
    state, results, plots, view = window.state, window.results, window.distributions, window.map
    window.tabs.setCurrentWidget(view)
    qtbot.waitUntil(view.drawn, timeout=120_000)
    coords = view.text_map.projection.coords
    middle = float(np.median(coords[:, 0]))
    low, high = coords.min(axis=0) - 1, coords.max(axis=0) + 1
    view.choose_inside(np.array([[low[0], low[1]], [middle, low[1]], [middle, high[1]],   # a lasso
                                 [low[0], high[1]]]))
    rows = view.text_map.rows_touching(np.flatnonzero(coords[:, 0] <= middle))
    assert 0 < len(rows) < 30
    assert results.model.rowCount() == len(rows)                                 # Results filtered
    np.testing.assert_array_equal(state.shown_rows, rows)
    drawn = plots.plot_data()                                                    # Distributions marked
    assert drawn["cal_kept"].sum() == drawn["raw_kept"].sum() == len(rows)
    summary = results.summary.text()                                             # the summary follows
    assert summary.startswith(f"{len(rows)} of 30 rows shown")
    assert f"MAE {current_agreement(state, rows).mae:.3f}" in summary
    assert current_agreement(state, rows).mae != pytest.approx(current_agreement(state).mae)

    window.menus.show_all_action.trigger()                                       # one action clears it
    assert results.model.rowCount() == 30 and state.shown_rows is None and not len(view.chosen)
    assert plots.plot_data()["cal_kept"] is None and not len(view.shown_marks.points())

    calibrated = state.results.frame["cosine_calibrated"].to_numpy(dtype=float)
    low_score, high_score = np.sort(calibrated)[[5, 14]]
    plots.brush(plots.cal_panel, float(low_score), float(high_score))           # a Distributions brush
    brushed = np.flatnonzero((calibrated >= low_score) & (calibrated <= high_score))
    np.testing.assert_array_equal(state.shown_rows, brushed)
    marked = view.shown_marks.points()                                           # highlights the map
    texts = view.text_map.segments[np.isin(view.text_map.rows, brushed)]
    np.testing.assert_array_equal(marked, np.unique(texts))
    assert len(view.shown_marks.item.data) == len(marked)


def test_search_hits_are_shown_in_every_view(window, qtbot, good_results):
    good_results()                                                  # 30 scored pairs are the input
    view, state = window.search, window.state
    frame = state.results.frame
    window.tabs.setCurrentWidget(view)
    view.query_edit.setText(frame["sentence1"].iloc[7])            # ranked against the input's texts
    with qtbot.waitSignal(view.runner.finished, timeout=120_000):
        view.start_search()
    assert view.show_button.isEnabled()
    view.show_button.click()
    hits = set(view.hits.frame["document"])
    rows = np.flatnonzero(frame["sentence1"].isin(hits).to_numpy() | frame["sentence2"].isin(hits).to_numpy())
    np.testing.assert_array_equal(state.shown_rows, rows)
    assert window.results.model.rowCount() == len(rows) < 30
    assert "search hit" in window.results.chips.labels()[0]
    assert window.distributions.plot_data()["raw_kept"].sum() == len(rows)
