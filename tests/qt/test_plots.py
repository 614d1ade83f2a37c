"""DistributionPlot and HeatmapView: what the plots draw for scored pairs and document sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPointF

from calibsim_gui.core.analysis import PairChunk, score_matrix, score_pairs
from calibsim_gui.core.inputs import load_documents, load_pairs
from calibsim_gui.core.profile_builder import build_profile
from calibsim_gui.qt.plots import DistributionPlot, HeatmapView
from calibsim_gui.qt.state import AppState
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(3000), n_pairs=1500)


@pytest.fixture
def scored(profile, tmp_path):
    texts = random_sentences(60, seed=7)
    pairs = [(a, b if i % 3 else a.split()[0] + " " + a.split()[1] + " w1 w2")
             for i, (a, b) in enumerate(zip(texts[::2], texts[1::2]))]
    path = tmp_path / "pairs.csv"
    pd.DataFrame(pairs, columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    return score_pairs(load_pairs(path), FakeEmbedder(), profile)


@pytest.fixture
def state(profile):
    state = AppState()
    state.set_profile(profile, "test")
    return state


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
    qtbot.waitUntil(lambda: total() == 20)
    plot.add_partial(chunk(30))
    qtbot.waitUntil(lambda: total() == 50)
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
    assert np.array_equal(view.shown_matrix(), matrix.matrices["calibrated"])
    assert np.array_equal(view.image.image, matrix.matrices["calibrated"])
    view.form_combo.setCurrentIndex(view.form_combo.findData("raw"))
    assert np.array_equal(view.image.image, matrix.matrices["raw"])
    assert not np.array_equal(matrix.matrices["raw"], matrix.matrices["calibrated"])
    assert view.colorbar.levels() == pytest.approx(_off_diagonal_range(matrix.matrices["raw"]))
    ticks = view.plot.getAxis("left")._tickLevels[0]
    assert ticks[0][1].endswith(matrix.ids[0]) and len(ticks) == 5

    view.resize(800, 600)
    view.show()
    qtbot.waitExposed(view)
    view._mouse_moved(view.plot.vb.mapViewToScene(QPointF(1.5, 0.5)))   # column 1, row 0
    assert view.hover.text() == (f"{matrix.ids[0]} × {matrix.ids[1]}: "
                                 f"{matrix.matrices['raw'][0, 1]:.4g} (raw cosine)")
    view.form_combo.setCurrentIndex(view.form_combo.findData("calibrated"))
    assert view.colorbar.levels() == pytest.approx((0.0, 1.0))        # one scale for every data set
    state.set_results(None)
    assert view.shown_matrix().shape == (0, 0) and view.stack.currentIndex() == 0


def test_distribution_plot_shows_a_document_sets_pairs(plot, state, matrix):
    state.set_results(matrix)
    assert plot.plot_data()["raw_user"][1].sum() == 5 * 4 / 2
