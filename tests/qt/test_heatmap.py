"""HeatmapView as an exploration tool: clustered order, off-diagonal colour range, short labels,
hover text naming both documents, a resizable document table."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QSplitter

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.matrix_order import cluster_order, short_document_label
from calibsim_gui.core.io.inputs import load_documents
from calibsim_gui.qt.views.heatmap.heatmap_view import HeatmapView
from tests.fakes import FakeEmbedder

# two topics, interleaved in the input: clustering must bring each topic together
TEXTS = ["w1 w2 w3 w4 cat", "w7 w8 w9 dog", "w1 w2 w3 w4 mat", "w7 w8 w9 fog", "w1 w2 w3 w5 hat",
         "w7 w8 w6 log", "w1 w2 w3 w4 bat", "w7 w8 w9 bog"]


@pytest.fixture
def matrix(profile, tmp_path):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(TEXTS))
    return score_matrix(load_documents(docs), FakeEmbedder(), profile)


def make_view(qtbot, state):
    view = HeatmapView(state)
    qtbot.addWidget(view)
    return view


def test_cluster_order_puts_similar_documents_together():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(2, 16))
    emb = np.vstack([centres[i % 2] + 0.1 * rng.normal(size=16) for i in range(10)])
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    order = cluster_order(emb @ emb.T)
    assert sorted(order) == list(range(10))
    groups = [i % 2 for i in order]
    assert groups in ([0] * 5 + [1] * 5, [1] * 5 + [0] * 5)
    assert list(cluster_order(np.eye(2))) == [0, 1]
    assert short_document_label("corpus/sub/notes.txt:12", "one two three four five six seven") == \
        "notes.txt:12 · one two three four…"
    assert len(short_document_label("a.txt:1", "x" * 80)) == 34


def test_documents_are_clustered_by_default_and_input_order_is_a_choice(qtbot, state, matrix):
    view = make_view(qtbot, state)
    state.set_results(matrix)
    assert view.order_combo.currentData() == "clustered"
    order = list(view.order)
    topics = ["cat" if t.startswith("w1") else "dog" for t in np.array(TEXTS)[order]]
    assert topics in (["cat"] * 4 + ["dog"] * 4, ["dog"] * 4 + ["cat"] * 4)
    shown = matrix.matrices["calibrated"][np.ix_(order, order)]
    assert np.array_equal(view.shown_matrix(), shown) and np.array_equal(view.image.image, shown)
    ticks = view.plot.getAxis("left")._tickLevels[0]
    assert ticks[0][1] == f"{order[0] + 1}  {short_document_label(matrix.ids[order[0]], TEXTS[order[0]])}"
    assert [view.documents.item(r, 0).text() for r in range(8)] == [str(k + 1) for k in order]
    assert view.documents.item(0, 2).text() == TEXTS[order[0]]

    view.set_order("input")
    assert list(view.order) == list(range(8))
    assert np.array_equal(view.shown_matrix(), matrix.matrices["calibrated"])
    assert view.documents.item(1, 2).text() == TEXTS[1]


def test_colour_range_leaves_the_diagonal_out(qtbot, state, matrix):
    view = make_view(qtbot, state)
    state.set_results(matrix)
    view.form_combo.setCurrentIndex(view.form_combo.findData("raw"))
    raw = matrix.matrices["raw"]
    off = raw[~np.eye(len(raw), dtype=bool)]
    assert view.colorbar.levels() == pytest.approx((off.min(), off.max()))
    assert off.max() < raw.diagonal().min()                    # the diagonal is outside the range


def test_hover_names_both_documents_and_the_score(qtbot, state, matrix):
    view = make_view(qtbot, state)
    state.set_results(matrix)
    view.resize(1100, 600)
    view.show()
    qtbot.waitExposed(view, timeout=120_000)
    assert isinstance(view.documents.parent(), QSplitter)          # the table is resizable
    assert view.documents.height() > 300                          # and fills the height
    view._mouse_moved(view.plot.vb.mapViewToScene(QPointF(5.5, 1.5)))     # column 5, row 1
    a, b = view.order[1], view.order[5]
    label = lambda k: short_document_label(matrix.ids[k], TEXTS[k])   # noqa: E731
    value = matrix.matrices["calibrated"][a, b]
    assert view.hover.text() == f"{a + 1} {label(a)} × {b + 1} {label(b)}: {value:.4g} (calibrated)"
    assert view.tip.isVisible()
    assert view.tip.textItem.toPlainText() == (f"{a + 1}  {label(a)}\n{b + 1}  {label(b)}\n"
                                               f"calibrated: {value:.4g}")
    qtbot.waitUntil(lambda: view.plot.getAxis("left").width() > 120, timeout=120_000)   # widened on a repaint
    view.grab().save("/tmp/heatmap.png")


def test_large_sets_fall_back_to_input_order(qtbot, state, matrix, monkeypatch):
    from calibsim_gui.qt.views.heatmap import heatmap_view

    monkeypatch.setattr(heatmap_view, "MAX_CLUSTERED_DOCUMENTS", 4)
    view = make_view(qtbot, state)
    state.set_results(matrix)
    assert view.order_combo.currentData() == "input" and list(view.order) == list(range(8))
    assert not view.order_combo.model().item(view.order_combo.findData("clustered")).isEnabled()
