"""DistributionPlot and HeatmapView: what the plots draw for scored pairs and document sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPointF

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.pairs import PairChunk, score_pairs
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.qt.editors.calibrated_map_plot import CalibratedMapPlot
from calibsim_gui.qt.views.distributions.distribution_plot import DistributionPlot
from calibsim_gui.qt.views.heatmap.heatmap_view import HeatmapView
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture
def scored(profile, tmp_path):
    texts = random_sentences(60, seed=7)
    pairs = [(a, b if i % 3 else a.split()[0] + " " + a.split()[1] + " w1 w2")
             for i, (a, b) in enumerate(zip(texts[::2], texts[1::2]))]
    path = tmp_path / "pairs.csv"
    pd.DataFrame(pairs, columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    return score_pairs(load_pairs(path), FakeEmbedder(), profile)


@pytest.fixture
def plot(qtbot, state):
    widget = DistributionPlot(state)
    qtbot.addWidget(widget)
    yield widget
    widget.deleteLater()             # pytest keeps fixture values: free the widget (and profile) now
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def area(xy):
    edges, y = xy
    return float(np.sum(y * np.diff(edges)))


def test_background_is_a_density_and_anchor_lines_sit_at_level_medians(plot, profile):
    data = plot.plot_data()
    assert area(data["raw_background"]) == pytest.approx(1.0, rel=1e-6)
    assert area(data["cal_background"]) == pytest.approx(1.0, rel=1e-6)
    scores = profile.metrics["cosine"].anchor_scores
    levels = np.array([p.level for p in profile.anchors.pairs])
    expected = [(lv.label, float(np.median(scores[levels == lv.name]))) for lv in profile.anchors.levels]
    assert [label for label, _ in data["anchor_lines"]] == [label for label, _ in expected]
    assert np.allclose([v for _, v in data["anchor_lines"]], [v for _, v in expected])
    calibrated = profile.calibrate("cosine", [v for _, v in expected])["calibrated"]
    assert np.allclose([v for _, v in data["cal_anchor_lines"]], calibrated)


def test_final_results_fill_the_user_histograms(plot, state, scored):
    assert plot.plot_data()["raw_user"][1].sum() == 0
    state.set_results(scored)
    data = plot.plot_data()
    assert data["raw_user"][1].sum() == len(scored.frame)
    assert data["cal_user"][1].sum() == len(scored.frame)
    edges = data["raw_user"][0]
    assert edges[0] <= scored.frame["cosine_raw"].min() and edges[-1] >= scored.frame["cosine_raw"].max()


def test_partial_chunks_accumulate_and_reset_clears(plot, qtbot):
    rng = np.random.default_rng(1)

    def chunk(n):
        return PairChunk(n, 100, np.arange(n), {"cosine": rng.uniform(0, 1, n),
                                                 "euclidean": rng.uniform(0, 2, n)})

    def total(key="raw_user"):
        return plot.plot_data()[key][1].sum()

    plot.add_partial(chunk(20))
    qtbot.waitUntil(lambda: total() == 20, timeout=120_000)
    plot.add_partial(chunk(30))
    qtbot.waitUntil(lambda: total() == 50, timeout=120_000)
    assert total("cal_user") == 50
    plot.state.set_view(metric="euclidean")                    # every metric was kept
    assert total() == 50 and plot.plot_data()["raw_user"][0][-1] > 1.0
    plot.reset()
    assert total() == 0


def test_selected_row_draws_a_line_at_its_scores(plot, state, scored):
    state.set_results(scored)
    assert plot.plot_data()["selected"] is None
    state.select_row(4)
    data = plot.plot_data()
    assert data["selected"] == pytest.approx(scored.frame["cosine_raw"][4])
    assert data["cal_selected"] == pytest.approx(scored.frame["cosine_calibrated"][4])
    state.select_row(None)
    assert plot.plot_data()["selected"] is None


def test_metric_and_form_combos_switch_the_plots(plot, state, scored):
    state.set_results(scored)
    state.select_row(0)
    plot.metric_combo.setCurrentIndex(plot.metric_combo.findData("euclidean"))
    assert state.metric == "euclidean"
    data = plot.plot_data()
    distances = scored.frame["euclidean_raw"]
    assert data["raw_user"][0][0] <= distances.min() and data["raw_user"][0][-1] >= distances.max()
    assert data["selected"] == pytest.approx(distances[0])
    assert plot.raw_panel.plot.titleLabel.text == "raw euclidean"

    plot.form_combo.setCurrentIndex(plot.form_combo.findData("bg_percentile"))
    assert state.form == "bg_percentile"
    edges = plot.plot_data()["cal_background"][0]
    assert edges[0] == pytest.approx(0, abs=1) and edges[-1] == pytest.approx(100, abs=1)
    state.set_view(metric="cosine")                            # from elsewhere: combos follow
    assert plot.metric_combo.currentData() == "cosine"


@pytest.fixture
def matrix(profile, tmp_path):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(["the cat sat", "a cat sat", "w1 w2 w3", "w1 w2 w4", "w9 w8"]))
    return score_matrix(load_documents(docs), FakeEmbedder(), profile)


def _off_diagonal_range(m):
    off = m[~np.eye(len(m), dtype=bool)]
    return off.min(), off.max()


def test_heatmap_shows_the_matrix_and_switches_forms(qtbot, state, matrix):
    view = HeatmapView(state)
    qtbot.addWidget(view)
    assert view.shown_matrix().shape == (0, 0) and view.stack.currentIndex() == 0
    state.set_results(matrix)
    assert view.stack.currentIndex() == 1
    view.set_order("input")                                # clustered by default: see test_heatmap
    assert np.array_equal(view.shown_matrix(), matrix.matrices["calibrated"])
    assert np.array_equal(view.image.image, matrix.matrices["calibrated"])
    view.form_combo.setCurrentIndex(view.form_combo.findData("raw"))
    assert np.array_equal(view.image.image, matrix.matrices["raw"])
    assert not np.array_equal(matrix.matrices["raw"], matrix.matrices["calibrated"])
    assert view.colorbar.levels() == pytest.approx(_off_diagonal_range(matrix.matrices["raw"]))
    ticks = view.plot.getAxis("left")._tickLevels[0]
    assert ticks[0][1] == "1  docs.txt:1 · the cat sat" and len(ticks) == 5

    view.resize(800, 600)
    view.show()
    qtbot.waitExposed(view, timeout=120_000)
    view._mouse_moved(view.plot.vb.mapViewToScene(QPointF(1.5, 0.5)))   # column 1, row 0
    assert view.hover.text() == ("1 docs.txt:1 · the cat sat × 2 docs.txt:2 · a cat sat: "
                                 f"{matrix.matrices['raw'][0, 1]:.4g} (raw cosine)")
    view.form_combo.setCurrentIndex(view.form_combo.findData("calibrated"))
    lo, hi = _off_diagonal_range(matrix.matrices["calibrated"])     # the diagonal is left out
    assert view.colorbar.levels() == pytest.approx((max(lo, 0.0), min(hi, 1.0)))
    state.set_results(None)
    assert view.shown_matrix().shape == (0, 0) and view.stack.currentIndex() == 0


def test_distribution_plot_shows_a_document_sets_pairs(plot, state, matrix):
    state.set_results(matrix)
    assert plot.plot_data()["raw_user"][1].sum() == 5 * 4 / 2


def _shown(qtbot, widget, width=1000, height=560):
    widget.resize(width, height)
    widget.show()
    qtbot.waitExposed(widget, timeout=120_000)
    widget.plot_data()


def test_hover_reads_the_bin_under_the_mouse(plot, state, scored, qtbot):
    state.set_results(scored)
    _shown(qtbot, plot)
    edges, counts = plot.plot_data()["raw_user"]
    busiest = int(np.argmax(counts))
    x = (edges[busiest] + edges[busiest + 1]) / 2
    text = plot.raw_panel.hover_text(x)
    assert f"your pairs {int(counts[busiest])}" in text and "background density" in text
    assert text.startswith(f"raw cosine {x:.4g}: bin {edges[busiest]:.4g}")
    plot._mouse_moved(plot.raw_panel.plot.vb.mapViewToScene(QPointF(x, 0.1)))
    assert plot.hover.text() == text
    assert plot.raw_panel.hover_text(edges[-1] + 10) == ""


def test_count_axes_start_at_zero_so_small_bins_are_drawn(plot, state, scored, qtbot):
    state.set_results(scored)
    _shown(qtbot, plot)
    for panel in (plot.raw_panel, plot.cal_panel):
        bottom, top = panel.counts_box.viewRange()[1]
        assert bottom == 0 and top >= panel.shown["user"][1].max()
        panel.counts_box.setYRange(-5, 3, padding=0)                  # a zoom cannot go below 0 either
        assert panel.counts_box.viewRange()[1][0] == 0


def test_new_results_clear_the_counts_read_from_the_old_ones(plot, state, scored, qtbot):
    from calibsim_gui.qt.views.distributions.distribution_plot import DISTRIBUTIONS_HINT

    state.set_results(scored)
    _shown(qtbot, plot)
    edges, _counts = plot.plot_data()["raw_user"]
    plot._mouse_moved(plot.raw_panel.plot.vb.mapViewToScene(QPointF((edges[0] + edges[1]) / 2, 0.1)))
    assert "your pairs" in plot.hover.text()
    state.set_results(scored)
    assert plot.hover.text() == DISTRIBUTIONS_HINT


def test_selected_marker_is_labelled_with_its_value(plot, state, scored):
    state.set_results(scored)
    state.select_row(4)
    plot.plot_data()
    assert plot.raw_panel.selected.label.toPlainText() == f"selected {scored.frame['cosine_raw'][4]:.4g}"
    assert plot.cal_panel.selected.label.toPlainText() == \
        f"selected {scored.frame['cosine_calibrated'][4]:.4g}"


def test_brushing_a_range_filters_the_table_and_can_be_removed(plot, state, scored):
    state.set_results(scored)
    plot.plot_data()
    plot.range_button.click()                                    # a brush on the calibrated plot
    column, low, high = state.score_range
    assert column == "cosine_calibrated" and low < high
    assert plot.cal_panel.region.isVisible() and not plot.raw_panel.region.isVisible()
    plot.cal_panel.region.setRegion((0.2, 0.6))                  # dragging it
    plot.cal_panel.region.sigRegionChangeFinished.emit(plot.cal_panel.region)
    assert state.score_range == pytest.approx(("cosine_calibrated", 0.2, 0.6)) or \
        state.score_range[1:] == pytest.approx((0.2, 0.6))
    assert plot.plot_data()["brush"][0] == "cosine_calibrated"
    state.set_score_range(None)                                  # e.g. from the table's chip
    assert not plot.cal_panel.region.isVisible() and not plot.range_button.isChecked()
    plot.brush(plot.raw_panel, 0.1, 0.3)
    assert state.score_range == ("cosine_raw", 0.1, 0.3) and plot.range_button.isChecked()
    plot.range_button.click()
    assert state.score_range is None and not plot.raw_panel.region.isVisible()


def test_small_context_menu_replaces_pyqtgraphs(plot, state, scored, tmp_path):
    state.set_results(scored)
    plot.plot_data()
    for panel in (plot.raw_panel, plot.cal_panel):
        assert not panel.plot.vb.menuEnabled()
    menu = plot.context_menu(plot.cal_panel)
    texts = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert texts == ["Reset view", "Filter the table to a range of these scores", "Export image…"]
    menu.actions()[1].trigger()
    assert state.score_range[0] == "cosine_calibrated"
    texts = [a.text() for a in plot.context_menu(plot.cal_panel).actions()]
    assert "Show every pair (remove the range filter)" in texts
    plot.cal_panel.plot.setXRange(5, 6)
    plot.reset_view(plot.cal_panel)
    assert plot.cal_panel.plot.vb.viewRange()[0][0] < 1
    assert plot.export_image(tmp_path / "plots.png") and (tmp_path / "plots.png").stat().st_size > 5000


def test_anchor_labels_do_not_overlap(plot, state, scored, qtbot):
    state.set_results(scored)
    for width in (1400, 700):
        _shown(qtbot, plot, width)
        for panel in (plot.raw_panel, plot.cal_panel):
            panel.place_labels()
            boxes = panel.label_boxes()
            assert len(boxes) == len(plot.plot_data()["anchor_lines"])
            for i, a in enumerate(boxes):
                for b in boxes[i + 1:]:
                    assert not a.intersects(b), (width, a, b)


def test_every_plot_has_the_small_menu_not_pyqtgraphs(qtbot, state, matrix, tmp_path):
    """Heatmap, calibrated map and Space plots: right-click gives Reset view and Export image…,
    never pyqtgraph's developer menu."""
    from calibsim_gui.qt.views.space_view import SpaceView

    state.set_results(matrix)
    views = [HeatmapView(state), CalibratedMapPlot(state), SpaceView(state)]
    for view in views:
        qtbot.addWidget(view)
        menu = view.plot_menu
        assert all(not plot.vb.menuEnabled() for plot in menu.plots)
        assert [a.text() for a in menu.build().actions() if not a.isSeparator()] == ["Reset view", "Export image…"]
        view.resize(600, 400)
        assert menu.export_image(tmp_path / "plot.png") and (tmp_path / "plot.png").stat().st_size > 1000
    heatmap = views[0]
    heatmap.plot.setRange(xRange=(100, 200), yRange=(100, 200))
    heatmap.plot_menu.build().actions()[0].trigger()          # Reset view
    assert heatmap.plot.vb.viewRange()[0][0] < 1
