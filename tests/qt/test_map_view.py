"""The Text map tab: one point per text, colours, hover, rectangle and lasso choosing the Results
rows, a clicked point's neighbours and a typed search (#28 Map tab, type-in search)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from calibsim_gui.qt.views.map.map_colours import SIDE
from tests.qt.conftest import drop


@pytest.fixture
def mapped(window, qtbot, pairs_csv, monkeypatch):
    """The window with the 30 test pairs scored and mapped on the Text map tab (every mouse move
    reaches the map: pyqtgraph drops moves that come faster than a hand moves)."""
    monkeypatch.setitem(pg.CONFIG_OPTIONS, "mouseRateLimit", 0)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    window.tabs.setCurrentWidget(window.map)
    qtbot.waitUntil(window.map.drawn, timeout=120_000)          # projected and clustered
    return window


def widget_point(view, x: float, y: float):
    """Where the map point (x, y) is drawn, in the plot widget's viewport."""
    return view.plot_widget.mapFromScene(view.view_box.mapViewToScene(QPointF(x, y)))


def mouse(widget, kind, pos, buttons) -> None:
    button = Qt.MouseButton.LeftButton
    event = QMouseEvent(kind, QPointF(pos), widget.mapToGlobal(QPointF(pos)), button, buttons,
                        Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget, event)


def drag(view, corners) -> None:
    """Press at the first map point, move through the others, release at the last."""
    viewport = view.plot_widget.viewport()
    points = [widget_point(view, x, y) for x, y in corners]
    held = Qt.MouseButton.LeftButton
    mouse(viewport, QEvent.Type.MouseButtonPress, points[0], held)
    for point in points[1:]:
        mouse(viewport, QEvent.Type.MouseMove, point, held)
    mouse(viewport, QEvent.Type.MouseButtonRelease, points[-1], Qt.MouseButton.NoButton)


def test_the_map_shows_one_point_per_distinct_text(mapped):
    view, frame = mapped.map, mapped.state.results.frame
    distinct = set(frame["sentence1"]) | set(frame["sentence2"])
    assert sum(len(layer.data) for layer in view.layers) == len(distinct) == 30
    assert set(view.text_map.texts) == distinct
    assert "30 distinct texts" in view.summary.text() and "variance" in view.summary.text()
    # hovering names the text with its id and its value of the colour column
    tip = view.hover_text(data=0)
    assert tip.startswith("row 1 A: " + view.text_map.texts[0][:20]) and "cosine_calibrated:" in tip


def test_choosing_another_colour_column_recolours_the_points(mapped):
    view = mapped.map
    names = [view.colour_combo.itemText(i) for i in range(view.colour_combo.count())]
    assert names[:3] == ["cosine_calibrated", "cosine_raw", "score"] and SIDE in names
    view.colour_combo.setCurrentText("cosine_raw")
    before = view.point_colours().tolist()
    assert len(set(before)) > 5                                # a gradient over the raw scores
    assert "cosine_raw" in view.legend.text() and "yellow" in view.legend.text()
    view.colour_combo.setCurrentText(SIDE)                     # every text is on both sides here
    after = view.point_colours().tolist()
    assert after != before and len(set(after)) == 1
    assert "both" in view.legend.text()


def test_a_rectangle_drawn_on_the_map_filters_results_to_the_pairs_touching_it(mapped, qtbot):
    view, results = mapped.map, mapped.results
    coords = view.text_map.projection.coords
    x0, x1 = np.quantile(coords[:, 0], [0.0, 0.5])
    y0, y1 = coords[:, 1].min(), coords[:, 1].max()
    view.mode_combo.setCurrentText("Rectangle")
    drag(view, [(x0 - 1e-3, y0 - 1e-3), ((x0 + x1) / 2, y1 / 2), (x1 + 1e-3, y1 + 1e-3)])
    inside = {view.text_map.texts[i] for i in view.chosen}
    assert inside == {t for t, (x, _) in zip(view.text_map.texts, coords) if x <= x1 + 1e-3}
    assert 10 <= len(inside) < 30
    frame = mapped.state.results.frame
    touching = frame.index[frame["sentence1"].isin(inside) | frame["sentence2"].isin(inside)]
    shown = [results.model.frame_row(r) for r in range(results.model.rowCount())]
    assert sorted(shown) == sorted(touching) and len(shown) < 30
    assert results.chips.isVisibleTo(results) and "chosen on the Map" in results.chips.labels()[0]
    results.chips.chips[0].click()                             # show all rows: the map's choice goes
    assert results.model.rowCount() == 30 and len(view.chosen) == 0


def test_a_lasso_chooses_the_points_inside_its_path(mapped):
    view = mapped.map
    coords = view.text_map.projection.coords
    centre = coords.mean(axis=0)
    radius = np.percentile(np.linalg.norm(coords - centre, axis=1), 40)
    circle = [tuple(centre + radius * np.array([np.cos(a), np.sin(a)])) for a in np.linspace(0, 2 * np.pi, 40)]
    view.mode_combo.setCurrentText("Lasso")
    drag(view, circle)
    expected = np.flatnonzero(np.linalg.norm(coords - centre, axis=1) < radius * 0.98)
    assert set(expected) <= set(view.chosen.tolist()) and len(view.chosen) < 30
    rows = mapped.state.chosen_rows[0]
    assert mapped.results.model.rowCount() == len(rows) > 0


def test_clicking_a_point_lists_its_nearest_texts_best_first(mapped, qtbot):
    view = mapped.map
    coords = view.text_map.projection.coords
    point = int(np.argmax(coords[:, 0]))                       # an outer point: no other on top of it
    with qtbot.waitSignal(view.neighbours_listed, timeout=120_000):
        QTest.mouseClick(view.plot_widget.viewport(), Qt.MouseButton.LeftButton,
                         pos=widget_point(view, *coords[point]))
    table = view.neighbour_table
    assert table.rowCount() == 10
    raws = [float(table.item(r, 2).text()) for r in range(10)]
    calibrated = [float(table.item(r, 3).text()) for r in range(10)]
    assert raws == sorted(raws, reverse=True) and calibrated == sorted(calibrated, reverse=True)
    assert view.text_map.texts[point] not in [table.item(r, 0).text() for r in range(10)]
    assert view.text_map.ids[point] in view.neighbour_title.text()
    assert len(view.picked.data) == 10                        # the neighbours are ringed on the map


def test_a_typed_text_finds_its_nearest_texts_with_ids_and_scores(mapped, qtbot):
    view = mapped.map
    frame = mapped.state.results.frame
    typed = frame["sentence1"].iloc[4]
    qtbot.keyClick(mapped, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    assert mapped.tabs.currentWidget() is view and view.query_edit.hasFocus()
    view.query_edit.setText(typed)
    with qtbot.waitSignal(view.neighbours_listed, timeout=120_000):
        qtbot.keyClick(view.query_edit, Qt.Key.Key_Return)
    table = view.neighbour_table
    assert table.item(0, 0).text() == typed and table.item(0, 1).text() == "row 5 A"
    assert float(table.item(0, 2).text()) == pytest.approx(1.0, abs=1e-3)
    assert float(table.item(0, 3).text()) > 0.9
    assert "typed text" in view.neighbour_title.text()


def test_pairs_drawn_as_segments_and_a_picture_of_the_map(mapped, tmp_path):
    view = mapped.map
    view.segments_box.setChecked(True)
    coords = view.text_map.projection.coords
    view.choose(np.flatnonzero(coords[:, 0] > np.median(coords[:, 0])))
    view.show_neighbours(0)
    assert view.segments.isVisible() and len(view.segments.xData) == 2 * 30
    first = view.text_map.segments[0]
    assert view.segments.xData[:2].tolist() == coords[first, 0].tolist()
    image = mapped.grab()                                  # what the user sees (looked at while building)
    assert image.save(str(tmp_path / "map.png")) and image.width() > 500


def test_a_document_set_is_mapped_with_its_files(window, qtbot, tmp_path):
    for name, words in (("animals.txt", "cat dog horse"), ("tools.txt", "hammer saw drill")):
        (tmp_path / name).write_text("\n".join(f"{w} number {i}" for w in words.split() for i in range(3)))
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs([tmp_path / "animals.txt", tmp_path / "tools.txt"], per_file=False)
    window.tabs.setCurrentWidget(window.map)
    qtbot.waitUntil(window.map.drawn, timeout=120_000)
    view = window.map
    assert len(view.text_map) == 18 and not view.segments_box.isEnabled()
    assert [view.colour_combo.itemText(i) for i in range(view.colour_combo.count())] == \
        ["source file", "best match (calibrated)", "cluster"]
    assert "animals.txt" in view.legend.text() and "tools.txt" in view.legend.text()
    colours = view.point_colours()
    assert len(set(colours[:9])) == len(set(colours[9:])) == 1 and colours[0] != colours[9]
    assert pd.Series(view.columns["source file"]).value_counts().tolist() == [9, 9]


def test_a_listed_text_selects_its_pair_in_results_and_is_marked(mapped):
    view, results = mapped.map, mapped.results
    view.show_neighbours(3)
    point = view.neighbours[2][0]
    view.neighbour_table.setCurrentCell(2, 0)
    row = mapped.state.selected_row
    frame = mapped.state.results.frame
    assert view.text_map.texts[point] in (frame["sentence1"].iloc[row], frame["sentence2"].iloc[row])
    assert results.model.frame_row(results.table.currentIndex().row()) == row
    marked = {tuple(p) for p in np.asarray([(s.pos().x(), s.pos().y()) for s in view.current.points()])}
    assert tuple(view.text_map.projection.coords[point].astype(float)) in marked and len(marked) == 2


def test_cancelling_the_map_says_so_and_draws_it_again_on_request(window, qtbot, pairs_csv):
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [pairs_csv])
    view = window.map
    window.tabs.setCurrentWidget(view)                   # the map starts in its worker
    assert view.runner.running
    window.escape()                                      # Esc: the status bar's Cancel
    assert not view.runner.running and view.text_map is None
    assert "cancelled" in view.summary.text() and view.again_button.isVisibleTo(view)
    view.again_button.click()
    qtbot.waitUntil(view.drawn, timeout=120_000)
    assert len(view.text_map) == 30 and not view.again_button.isVisibleTo(view)


def test_the_chosen_colour_column_stays_when_the_pairs_are_scored_again(mapped, qtbot):
    view = mapped.map
    view.colour_combo.activated.emit(view.colour_combo.findText("cosine_raw"))
    view.colour_combo.setCurrentText("cosine_raw")
    with qtbot.waitSignal(mapped.results_shown, timeout=120_000):
        mapped.session.rescore()
    assert view.colour_combo.currentText() == "cosine_raw" and "cosine_raw" in view.legend.text()
    assert len(view.text_map) == 30                      # the same texts: recoloured, not mapped again


def test_a_large_map_is_one_image_that_panning_moves_without_drawing_it_again(qtbot, monkeypatch):
    from calibsim_gui.core.analysis.projection import TextMap, pca_2d
    from calibsim_gui.qt.session.state import AppState
    from calibsim_gui.qt.views.map.map_view import MANY_POINTS, MapView

    n = MANY_POINTS + 1500
    vectors = np.random.default_rng(0).standard_normal((n, 16)).astype(np.float32)
    text_map = TextMap([f"text {i}" for i in range(n)], [f"d{i}" for i in range(n)], vectors,
                       pca_2d(vectors), sources=[f"file{i % 3}.txt" for i in range(n)])
    view = MapView(AppState())
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    view._mapped((text_map, None))
    assert not any(len(layer.data) for layer in view.layers)     # no per-point items
    assert len(view.cloud.coords) == n
    colours = view.point_colours()
    assert all(len(set(colours[i::3])) == 1 for i in range(3)) and len(set(colours)) == 3
    density = view.density.density()                         # a crowded map: its density shaded under it
    assert density.shape == (160, 160) and density.max() == 200 and (density == 0).any()
    assert "density" in view.summary.text()
    view.plot_widget.grab()
    assert view.cloud.renders == 1                            # drawn: one image rendered

    def at_rest() -> bool:
        """Laid out at its final size (a shown widget is laid out over a few turns of the event
        loop): drawing the map again renders nothing, and no sharpening is pending."""
        renders = view.cloud.renders
        view.plot_widget.grab()
        return view.cloud.renders == renders and view.plot.layout.isActivated() and not view.cloud.sharpen.isActive()

    qtbot.waitUntil(at_rest, timeout=120_000)
    picture = view.plot_widget.grab().toImage()
    renders = view.cloud.renders                              # counted from the map at rest
    # a point of the crowded map is hovered and clicked like a few-point map's
    point = int(np.argmax(text_map.projection.coords[:, 0]))     # an outer point: none on top of it
    monkeypatch.setitem(pg.CONFIG_OPTIONS, "mouseRateLimit", 0)
    mouse(view.plot_widget.viewport(), QEvent.Type.MouseMove, widget_point(view, *text_map.projection.coords[point]),
          Qt.MouseButton.NoButton)
    assert view.cloud.toolTip().startswith(f"d{point}: text {point}")
    with qtbot.waitSignal(view.cloud.clicked, check_params_cb=lambda clicked: clicked == point, timeout=120_000):
        QTest.mouseClick(view.plot_widget.viewport(), Qt.MouseButton.LeftButton,
                         pos=widget_point(view, *text_map.projection.coords[point]))
    view.view_box.translateBy(x=0.1 * np.ptp(text_map.projection.coords[:, 0]))
    moved = view.plot_widget.grab().toImage()
    assert moved != picture and view.cloud.renders == renders      # panned: the same image, moved
    view.view_box.scaleBy((0.5, 0.5))                         # zoomed in twice: stretched at once,
    view.plot_widget.grab()
    assert view.cloud.renders == renders
    qtbot.waitUntil(lambda: view.plot_widget.grab() and view.cloud.renders == renders + 1, timeout=120_000)
    view.view_box.scaleBy((4, 4))                             # then sharp; zoomed out: drawn at once
    view.plot_widget.grab()
    assert view.cloud.renders == renders + 2


TOPICS = {"animals": "cat dog horse cow sheep", "tools": "hammer drill wrench chisel pliers",
          "weather": "rain snow wind storm cloud"}


@pytest.fixture
def topics_mapped(window, qtbot, tmp_path):
    """Three files of 12 one-line documents on one topic each (4 of its 5 words and a filler)."""
    rng = np.random.default_rng(0)
    paths = []
    for topic, words in TOPICS.items():
        lines = {" ".join([*rng.choice(words.split(), 4, replace=False), rng.choice(["the", "we", "some"])])
                 for _ in range(200)}
        paths.append(tmp_path / f"{topic}.txt")
        paths[-1].write_text("\n".join(sorted(lines)[:12]))
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        window.open_inputs(paths, per_file=False)
    window.tabs.setCurrentWidget(window.map)
    qtbot.waitUntil(window.map.drawn, timeout=120_000)
    return window.map


def test_documents_chosen_on_the_map_limit_results_to_the_pairs_between_them(topics_mapped):
    view = topics_mapped
    window = view.window()
    sources = np.asarray(view.columns["source file"])
    one_topic = np.flatnonzero(sources == sources[0])
    view.choose(one_topic)                                     # as a lasso around one file's documents
    results = window.results
    assert results.model.rowCount() == len(one_topic) * (len(one_topic) - 1) // 2 == 66
    chosen_texts = {view.text_map.texts[i] for i in one_topic}
    texts = results.model.column_names.index("text a"), results.model.column_names.index("text b")
    for row in range(results.model.rowCount()):
        pair = {results.model.index(row, column).data() for column in texts}
        assert pair <= chosen_texts                            # both documents were chosen
    assert "66 pairs between 12 documents chosen on the Map" in results.chips.labels()[0]
    results.chips.chips[0].click()                             # cleared: every pair again
    assert results.model.rowCount() == 36 * 35 // 2 and len(view.chosen) == 0


def test_three_topics_make_three_clusters_coloured_and_named_by_their_words(topics_mapped):
    view = topics_mapped
    assert "3 clusters (number chosen at the elbow)" in view.summary.text()
    view.colour_combo.setCurrentText("cluster")
    legend, colours = view.legend.text(), view.point_colours()
    for topic, words in TOPICS.items():
        members = [i for i, source in enumerate(view.text_map.sources) if source == f"{topic}.txt"]
        assert len(set(colours[members])) == 1                 # one colour per topic file
        name = view.columns["cluster"][members[0]]
        assert set(name.partition(": ")[2].split(", ")) <= set(words.split()) and name in legend
    assert len(set(colours)) == 3
    assert "cluster: 2: " in view.hover_text(data=int(np.flatnonzero(view.clusters.labels == 1)[0]))


def test_the_cluster_column_reaches_results_and_follows_the_chosen_number(mapped, qtbot):
    view, results = mapped.map, mapped.results
    names = results.model.column_names
    assert "cluster" in names
    column = results.model.column_of("cluster")
    frame = mapped.state.results.frame
    clusters = view.columns["cluster"]
    for row in (0, 7):
        a, b = (view.text_map.texts.index(frame[side].iloc[row]) for side in ("sentence1", "sentence2"))
        expected = clusters[a] if clusters[a] == clusters[b] else f"{clusters[a]} / {clusters[b]}"
        shown = results.model.data(results.model.index(row, column))
        assert shown == expected and shown.startswith(f"{view.clusters.labels[a] + 1}: ")
    view.cluster_combo.setCurrentIndex(view.cluster_combo.findData(5))
    view.cluster_combo.activated.emit(view.cluster_combo.currentIndex())
    qtbot.waitUntil(view.drawn, timeout=120_000)
    assert len(view.clusters.sizes) == 5 and "number chosen by you" in view.summary.text()
    values = {results.model.data(results.model.index(r, results.model.column_of("cluster")))
              for r in range(30)}
    assert {v.split(":")[0] for v in values if "/" not in v} <= {"1", "2", "3", "4", "5"}


def test_cancelling_a_new_clustering_keeps_the_drawn_map(mapped):
    view = mapped.map
    before = view.clusters
    view.cluster_combo.setCurrentIndex(view.cluster_combo.findData(7))
    view.cluster_combo.activated.emit(view.cluster_combo.currentIndex())
    assert view.runner.running and "clustering" in view.summary.text()
    mapped.escape()                                           # Esc: the status bar's Cancel
    assert not view.runner.running and view.clusters is before and len(view.text_map) == 30
    assert "cancelled" in view.summary.text() and view.cluster_combo.currentData() == 0   # back to auto


def test_view_state_round_trip_with_t_sne(mapped, qtbot):
    from calibsim_gui.qt.views.map.map_view import MapView

    view = mapped.map
    assert view.view_state() == {"projection": "PCA", "colour": "cosine_calibrated", "segments": False,
                                 "clusters": 0}
    wanted = {"projection": "t-SNE", "colour": "cosine_raw", "segments": True, "clusters": 4}
    view.restore_view_state({**wanted, "unknown": [1, 2]})
    qtbot.waitUntil(view.drawn, timeout=60_000)
    assert view.view_state() == wanted
    assert view.text_map.projection.method == "t-SNE" and len(view.clusters.sizes) == 4
    assert view.colour_combo.currentText() == "cosine_raw" and view.segments.isVisible()
    assert "t-SNE" in view.summary.text() and view.plot.getAxis("bottom").labelText == "t-SNE 1"
    view.restore_view_state({"projection": "UMAP", "clusters": "many", "segments": "yes"})  # kept
    assert view.view_state() == wanted and not view.runner.running
    other = MapView(mapped.state)                             # a fresh view takes the same choices
    qtbot.addWidget(other)
    other.restore_view_state(wanted)
    assert other.view_state() == wanted and other.projection_combo.currentData() == "t-SNE"
    assert other.cluster_combo.currentText() == "4" and other.segments_box.isChecked()


def test_an_input_with_its_own_cluster_column_keeps_it_and_gets_a_map_cluster(window, qtbot, tmp_path):
    from tests.fakes import random_sentences

    texts = random_sentences(12, seed=8)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts[:6], "sentence2": texts[6:], "cluster": list("xyxyxy")}).to_csv(path, index=False)
    with qtbot.waitSignal(window.results_shown, timeout=120_000):
        drop(window, [path])
    window.tabs.setCurrentWidget(window.map)
    qtbot.waitUntil(window.map.drawn, timeout=120_000)
    model = window.results.model
    assert "cluster" in model.column_names and "map cluster" in model.column_names
    assert [model.data(model.index(r, model.column_of("cluster"))) for r in range(6)] == list("xyxyxy")
    assert all(model.data(model.index(r, model.column_of("map cluster")))[0].isdigit() for r in range(6))
    assert "map cluster" in [window.map.colour_combo.itemText(i) for i in range(window.map.colour_combo.count())]
