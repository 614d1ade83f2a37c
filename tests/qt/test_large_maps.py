"""Maps of more than `MANY_POINTS` texts (drawn as one image): points drawn where they were
computed, at every stage (#39)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from calibsim_gui.core.analysis import projection
from calibsim_gui.core.analysis.clusters import cluster_texts
from calibsim_gui.core.analysis.projection import TextMap, pca_2d
from calibsim_gui.qt.session.state import AppState
from calibsim_gui.qt.views.map import map_stages
from calibsim_gui.qt.views.map.map_colours import CATEGORY_COLOURS, CHOSEN_COLOUR
from calibsim_gui.qt.views.map.map_view import MANY_POINTS, MapView
from calibsim_gui.qt.widgets import point_cloud

TOPICS = ("apple pear plum", "boat ship sail", "rain snow wind")


@pytest.fixture
def large_view(qtbot):
    """A Map of MANY_POINTS + 1,500 texts in three blobs, drawn by PCA and clustered."""
    n = MANY_POINTS + 1500
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((3, 16)) * 0.5
    vectors = (centres[np.arange(n) % 3] + 0.2 * rng.standard_normal((n, 16))).astype(np.float32)
    texts = [f"{TOPICS[i % 3]} {i}" for i in range(n)]
    text_map = TextMap(texts, [f"d{i}" for i in range(n)], vectors, pca_2d(vectors), sources=["a.txt"] * n)
    view = MapView(AppState())
    qtbot.addWidget(view)
    view.resize(900, 650)
    view.show()
    view._mapped((text_map, cluster_texts(texts, vectors, 3)))
    view._stale = False                           # as when `refresh` mapped the current input
    return view


def test_a_t_sne_map_of_many_texts_is_drawn_where_it_was_computed(large_view, qtbot, monkeypatch):
    view = large_view
    view.plot_widget.grab()                                  # the PCA map, drawn
    assert view.cloud.drawn().all()
    # a real t-SNE, on a small sample so that the test is quick; the rest placed by neighbours
    monkeypatch.setattr(map_stages, "tsne_2d", functools.partial(projection.tsne_2d, sample=300))
    with qtbot.waitSignal(view.runner.finished, timeout=60_000):
        view.projection_combo.setCurrentIndex(view.projection_combo.findData("t-SNE"))
        view._projection_chosen(view.projection_combo.currentIndex())
    coords = view.text_map.projection.coords
    assert view.text_map.projection.method == "t-SNE"
    assert np.ptp(coords) > 4 * np.ptp(pca_2d(view.text_map.vectors).coords)     # another scale
    view.plot_widget.grab()
    np.testing.assert_array_equal(view.cloud.coords, coords)
    assert view.cloud.drawn().all()                           # every point where t-SNE put it
    assert view.view_box.viewRect().contains(view.cloud.boundingRect())
    # the density shade spans the same points
    left, top, width, height = view.density.mapRectToParent(view.density.boundingRect()).getRect()
    assert np.allclose([left, top, left + width, top + height],
                       [*coords.min(axis=0), *coords.max(axis=0)], atol=1e-3)
    for name, x, y in view.cluster_names.labels():            # the names moved with their clusters
        cluster = int(name.split(":")[0]) - 1
        assert np.allclose((x, y), np.median(coords[view.clusters.labels == cluster], axis=0))


def test_clusters_are_named_on_the_map_and_chosen_points_in_a_colour_no_cluster_has(large_view):
    view = large_view
    names = view.cluster_names.labels()
    assert sorted(name for name, _, _ in names) == sorted(view.clusters.names)
    words = {frozenset(name.split(": ")[1].split(", ")) for name, _, _ in names}
    assert words == {frozenset(t.split()) for t in TOPICS}
    coords = view.text_map.projection.coords
    for name, x, y in names:                                  # each at its cluster's centre
        cluster = int(name.split(":")[0]) - 1
        assert np.allclose((x, y), np.median(coords[view.clusters.labels == cluster], axis=0))
    view.names_box.setChecked(False)
    assert view.cluster_names.labels() == []
    view.names_box.setChecked(True)
    # chosen points are ringed in a colour far from every cluster colour (orange was cluster 2's)
    view.choose(np.flatnonzero(view.clusters.labels == 1)[:50])
    ring = view.marks.opts["pen"].color()
    assert ring == CHOSEN_COLOUR == view.view_box.outline.opts["pen"].color()
    rgb = np.array(ring.getRgb()[:3])
    assert min(np.linalg.norm(rgb - np.array(c.getRgb()[:3])) for c in CATEGORY_COLOURS) > 120
    view.colour_combo.setCurrentText("cluster")
    view.grab().save("/tmp/appdocs/map_names.png")


def test_a_very_large_map_is_rendered_again_in_a_worker_while_the_old_image_stays(large_view, qtbot, monkeypatch):
    view = large_view
    monkeypatch.setattr(point_cloud, "RENDER_IN_WORKER", 1000)      # as if the 6,500 points were millions
    view.plot_widget.grab()                                      # the first image: at once
    renders, first = view.cloud.renders, view.cloud._image
    with qtbot.waitSignal(view.cloud.renderer.finished, timeout=60_000):
        view.view_box.scaleBy((3, 3))                            # zoomed out: the old image is drawn,
        view.plot_widget.grab()                                  # the new one rendered in the worker
        assert view.cloud.renders == renders and view.cloud._image is first
    view.plot_widget.grab()
    assert view.cloud.renders == renders + 1 and view.cloud.drawn().all()
    with qtbot.waitSignal(view.cloud.renderer.finished, timeout=60_000):
        view.view_box.scaleBy((0.5, 0.5))                        # zoomed in: stretched, sharp at rest
        view.plot_widget.grab()
    assert view.cloud.renders == renders + 2
