"""The Map tab: every text of the current input as a point of a 2-D map (PCA or t-SNE of its embeddings).

Points are coloured by a chosen column (clusters named by their typical words among them),
name their text on hover, and can be chosen with a rectangle or a lasso: the Results table then
shows only the pairs that touch them. A clicked point, or a text typed in the search box
(Ctrl+K), lists its nearest texts with raw and calibrated scores. Encoding (through the cache),
projecting and clustering run in `TaskRunner`s, stage by stage (`map_stages`); what the points
are coloured by is `map_colours`; a crowded map is drawn as one cached image over its density
(`map_items`), so panning it costs a blit whatever the number of points. The choosers above the
plot are `map_controls`.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from calibsim_gui.core.analysis.clusters import MAX_CLUSTERS
from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.projection import map_input, nearest, points_in_polygon
from calibsim_gui.qt.session.document_sets import NeighbourPairs
from calibsim_gui.qt.views.map.map_colours import (
    CATEGORY_COLOURS,
    CHOSEN_COLOUR,
    cluster_column,
    colour_groups,
    point_columns,
    publish_clusters,
)
from calibsim_gui.qt.views.map.map_controls import PROJECTIONS, MapControls
from calibsim_gui.qt.views.map.map_items import (
    ClusterLabels,
    DensityImage,
    SelectionViewBox,
)
from calibsim_gui.qt.views.map.map_stages import (
    describe_map,
    encode_query,
    map_stages,
    shorten,
)
from calibsim_gui.qt.views.map.nearest_panel import NearestPanel
from calibsim_gui.qt.views.map.shown_marks import ShownMarks
from calibsim_gui.qt.widgets.messages import plural
from calibsim_gui.qt.widgets.plot_menu import PlotMenu
from calibsim_gui.qt.widgets.point_cloud import MANY_POINTS, PointCloud, translucent
from calibsim_gui.qt.widgets.workers import TaskRunner
from calibsim_gui.session.selection import pairs_among

NEIGHBOURS = 10


class MapView(QWidget):
    """A scatter of the input's texts with colour, hover, selection, neighbours and type-in search.

    The map is computed when the tab is shown after the input or model changed (results with the
    same input and model only recolour it). `chosen` holds the selected points; for pairs,
    `state.chosen_rows` then limits the Results table to the pairs touching them.
    """

    neighbours_listed = Signal()

    def __init__(self, state, *, cache=lambda: None, parent=None):
        super().__init__(parent)
        self.setObjectName("map")
        self.state = state
        self._cache = cache
        self.text_map = None
        self.clusters = None                # the texts' clusters (None until clustered)
        self.columns: dict[str, np.ndarray] = {}
        self.chosen = np.zeros(0, dtype=np.int64)
        self.neighbours: list[tuple[int, float, float]] = []
        self.source: int | None = None       # the clicked point whose neighbours are listed
        self._key = None                    # (input, model) the map was computed for (the objects)
        self._query = ""                    # the typed text being encoded
        self._colour = ""                   # the colour column the user chose (kept across runs)
        self._method = "PCA"                # the projection the user chose
        self._k = 0                         # the number of clusters the user chose (0: chosen at the elbow)
        self._replacing = False             # True while a new run replaces the running one
        self._stale = True
        self.runner = TaskRunner("mapping the texts", self)
        self.runner.finished.connect(self._mapped)
        self.runner.partial.connect(self._mapped)            # PCA first, then clusters, then t-SNE
        self.runner.failed.connect(self._failed)
        self.runner.progress.connect(self._progress)
        self.runner.cancelled.connect(self._cancelled)
        self.query_runner = TaskRunner("finding texts like the typed one", self)
        self.query_runner.finished.connect(self._query_encoded)
        self.query_runner.failed.connect(
            lambda message: self.neighbour_title.setText(message.partition("\n\nTraceback")[0]))

        self.controls = MapControls()
        c = self.controls
        self.summary, self.again_button, self.legend = c.summary, c.again_button, c.legend
        self.colour_combo, self.projection_combo, self.cluster_combo = (
            c.colour_combo, c.projection_combo, c.cluster_combo)
        self.mode_combo, self.segments_box, self.names_box, self.clear_button = (
            c.mode_combo, c.segments_box, c.names_box, c.clear_button)
        self.colour_combo.currentIndexChanged.connect(self.recolour)
        self.colour_combo.activated.connect(self._colour_chosen)
        self.projection_combo.activated.connect(self._projection_chosen)
        self.cluster_combo.activated.connect(self._clusters_chosen)
        self.segments_box.toggled.connect(self._draw_segments)
        self.clear_button.clicked.connect(lambda: self.choose(np.zeros(0, dtype=np.int64)))
        self.again_button.clicked.connect(self.refresh)
        self.nearest = NearestPanel()
        self.query_edit, self.neighbour_title = self.nearest.query_edit, self.nearest.title
        self.neighbour_table = self.nearest.table
        self.query_edit.returnPressed.connect(self.find_like)
        self.neighbour_table.currentCellChanged.connect(self._neighbour_chosen)

        self.view_box = SelectionViewBox()
        self.view_box.shape_drawn.connect(self.choose_inside)
        self.mode_combo.currentTextChanged.connect(self._set_mode)
        self.plot_widget = pg.PlotWidget(viewBox=self.view_box)
        self.plot = self.plot_widget.getPlotItem()
        self.plot.setLabel("bottom", "first principal direction")
        self.plot.setLabel("left", "second principal direction")
        self.plot_menu = PlotMenu(self, self.plot_widget, [self.plot], image_name="map.png")
        self.segments = pg.PlotCurveItem(connect="pairs", pen=pg.mkPen(120, 120, 120, 90))
        self.segments.setVisible(False)
        self.density = DensityImage()
        self.plot.addItem(self.density)
        self.layers: list[pg.ScatterPlotItem] = []      # a few points: one scatter per colour
        self.cloud = PointCloud(tip=self.hover_text)    # many points: one image
        self.cloud.clicked.connect(self.show_neighbours)
        self.cloud.setZValue(-1)                        # under the rings and marks
        self.plot.addItem(self.cloud)
        self.marks = pg.ScatterPlotItem(size=13, brush=None, pen=pg.mkPen(CHOSEN_COLOUR, width=2))
        self.picked = pg.ScatterPlotItem(size=16, brush=None, pen=pg.mkPen((220, 30, 30), width=2.5),
                                         symbol="s")
        self.origin = pg.ScatterPlotItem(size=18, brush=pg.mkBrush(220, 30, 30), pen=None, symbol="star")
        self.current = pg.ScatterPlotItem(size=20, brush=None, pen=pg.mkPen((30, 140, 230), width=3),
                                          symbol="d")
        for item in (self.segments, self.marks, self.picked, self.origin, self.current):
            self.plot.addItem(item)
        self.shown_marks = ShownMarks(self)            # the pairs every filter leaves (#42)
        self.cluster_names = ClusterLabels(self.plot)
        self.names_box.toggled.connect(self.cluster_names.set_shown)

        splitter = QSplitter()
        splitter.addWidget(self.plot_widget)
        splitter.addWidget(self.nearest)
        splitter.setSizes([600, 400])

        layout = QVBoxLayout(self)
        layout.addWidget(self.controls)
        layout.addWidget(splitter, 1)
        state.results_changed.connect(self._results_changed)
        state.range_changed.connect(self._range_changed)
        state.selection_changed.connect(self._selection_changed)
        state.view_changed.connect(self._fill_columns)          # another metric: its scores
        state.labels_changed.connect(self._fill_columns)        # another human-score column
        self._apply_palette()

    def _apply_palette(self) -> None:
        """Plot colours follow the window's palette (light or dark), the cluster names too."""
        self.plot_widget.setBackground(self.palette().color(QPalette.ColorRole.Base))
        text = self.palette().color(QPalette.ColorRole.Text)
        for side in ("left", "bottom"):
            self.plot.getAxis(side).setPen(pg.mkPen(text))
            self.plot.getAxis(side).setTextPen(pg.mkPen(text))
            self.plot.getAxis(side).enableAutoSIPrefix(False)
        if hasattr(self, "cluster_names"):
            self._show_cluster_names()

    def changeEvent(self, event) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)

    # ------------------------------------------------------------------ runs

    def _results_changed(self) -> None:
        """New results: recolour the same texts, or map new ones (the input or the model changed)."""
        state = self.state
        same = self._key is not None and self._key[0] is state.input and self._key[1] is state.embedder
        if same and (self.text_map is not None or self.runner.running):
            self._fill_columns()                 # same texts, same model: new colours only
            return
        self._stale = True
        self.runner.cancel()
        if self.isVisible():
            self.refresh()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._stale and not self.runner.running:
            self.refresh()

    def drawn(self) -> bool:
        """True when the map shows the current input (nothing left to compute)."""
        return self.text_map is not None and not self._stale and not self.runner.running

    def refresh(self) -> None:
        """Encode and project the current input's texts in the worker, once the input is scored
        (its vectors are then in the cache: nothing is encoded twice)."""
        state = self.state
        self.again_button.hide()
        if state.input is None or state.embedder is None:
            self._clear("Open pairs or documents: each of their texts becomes a point here.")
            return
        if state.results is None:
            self._clear("The map is drawn once the input is scored.")
            return
        self._stale = False
        self._key = (state.input, state.embedder)
        table, embedder, cache = state.input, state.embedder, self._cache()
        self.summary.setText("Mapping the texts…")
        self._start(lambda progress, should_stop: map_input(
            table, embedder, cache=cache, progress=progress, should_stop=should_stop), None, None)

    def _start(self, make, text_map, clusters) -> None:
        """Run `map_stages` with the chosen projection and number of clusters; a run in progress
        is replaced (not cancelled: nothing says so)."""
        self._replacing = True
        try:
            self.runner.start(map_stages, make, text_map, self._method, self._k or None, clusters)
        finally:
            self._replacing = False

    def _projection_chosen(self, index: int) -> None:
        self._method = self.projection_combo.itemData(index)
        self._recompute(keep_clusters=True)

    def _clusters_chosen(self, index: int) -> None:
        self._k = self.cluster_combo.itemData(index)
        self._recompute(keep_clusters=False)

    def _recompute(self, *, keep_clusters: bool) -> None:
        """Project or cluster the drawn texts again (the user chose another projection or number);
        while the texts are still being mapped, map them again with the new choice."""
        if self.text_map is None or self._stale:
            if self.runner.running or self._stale and self.isVisible():
                self.refresh()
            return
        clusters = self.clusters if keep_clusters else None
        self.summary.setText(f"{self.describe()} · {'clustering' if clusters is None else 'projecting'}…")
        self._start(None, self.text_map, clusters)

    def _cancelled(self) -> None:
        if self._replacing:
            return
        if self.text_map is not None and not self._stale:      # a new projection or clustering stopped
            self._sync_controls(to_drawn=True)
            self.summary.setText(f"{self.describe()} · the last change was cancelled")
            return
        self._stale, self._key = True, None
        self.summary.setText("Mapping was cancelled: the map is not drawn.")
        self.again_button.show()

    def _progress(self, done: int, total: int, message: str) -> None:
        shown = f"{self.describe()} · " if self.text_map is not None else "Mapping the texts: "
        self.summary.setText(f"{shown}{message}…")

    def _failed(self, message: str) -> None:
        self.summary.setText(message.partition("\n\nTraceback")[0])
        self.again_button.show()
        if self.text_map is not None:
            self._sync_controls(to_drawn=True)

    def _clear(self, text: str) -> None:
        self.text_map, self.clusters, self._key, self.columns = None, None, None, {}
        self.density.clear()
        publish_clusters(self.state, self.text_map, self.clusters)
        self.neighbours, self.source = [], None
        self.neighbour_table.setRowCount(0)
        self.cloud.clear()
        for layer in self.layers:
            layer.clear()
        self.segments.setData([], [])
        self.chosen = np.zeros(0, dtype=np.int64)
        self._show_marks()
        self._show_cluster_names()
        self.summary.setText(text)

    def _mapped(self, result) -> None:
        """Draw a stage of the map: new texts start afresh; the same texts keep their selection."""
        text_map, self.clusters = result
        new = self.text_map is None or text_map.texts is not self.text_map.texts
        moved = new or text_map.projection is not self.text_map.projection
        self.text_map = text_map
        coords = text_map.projection.coords
        pairs = coords[text_map.segments.ravel()] if len(text_map.segments) else np.zeros((0, 2))
        self.segments.setData(pairs[:, 0], pairs[:, 1])
        self.segments_box.setEnabled(len(text_map.segments) > 0)
        if len(text_map) > MANY_POINTS:
            self.density.show_density(coords, self.palette().color(QPalette.ColorRole.Text))
        else:
            self.density.clear()
        if new:
            self.chosen = np.zeros(0, dtype=np.int64)
            self.neighbours, self.source = [], None
            self.neighbour_table.setRowCount(0)
            self._mark_current([])
        self._fill_columns()
        self._show_marks()
        self.shown_marks.redraw()
        self._show_cluster_names()
        self._selection_changed()
        self._sync_controls()
        method = text_map.projection.method
        names = ("first principal direction", "second principal direction") if method == "PCA" \
            else ("t-SNE 1", "t-SNE 2")
        self.plot.setLabel("bottom", names[0])
        self.plot.setLabel("left", names[1])
        self.summary.setText(self.describe() + (" · clustering…" if self.clusters is None else ""))
        if moved:
            self.plot.autoRange()

    def _show_cluster_names(self) -> None:
        palette = self.palette()
        self.cluster_names.show(self.text_map.projection.coords if self.text_map is not None else np.zeros((0, 2)),
                                self.clusters, palette.color(QPalette.ColorRole.Text),
                                palette.color(QPalette.ColorRole.Base))

    def describe(self) -> str:
        """What the map shows: its texts, projection and clusters."""
        return describe_map(self.text_map, self.clusters, MANY_POINTS)

    def _sync_controls(self, *, to_drawn: bool = False) -> None:
        """The projection and cluster choosers show what is chosen (`to_drawn`: what is drawn, the
        choices that did not come to be are dropped)."""
        if to_drawn:
            self._method = self.text_map.projection.method
            if self.clusters is not None:
                self._k = 0 if self.clusters.chosen else len(self.clusters.sizes)
        self.projection_combo.setCurrentIndex(max(0, self.projection_combo.findData(self._method)))
        self.cluster_combo.setCurrentIndex(max(0, self.cluster_combo.findData(self._k)))

    # ------------------------------------------------------------------ colours

    def _fill_columns(self) -> None:
        if self.text_map is None:
            return
        self.columns = point_columns(self.text_map, self.state)
        if self.clusters is not None and len(self.clusters.labels) == len(self.text_map):
            self.columns[cluster_column(self.columns)] = self.clusters.column()
        publish_clusters(self.state, self.text_map, self.clusters)
        self.colour_combo.blockSignals(True)
        self.colour_combo.clear()
        self.colour_combo.addItems(list(self.columns))
        self.colour_combo.setCurrentIndex(max(0, self.colour_combo.findText(self._colour)))
        self.colour_combo.blockSignals(False)
        self.recolour()

    def _colour_chosen(self, index: int) -> None:
        self._colour = self.colour_combo.itemText(index)     # kept while results come and go

    def recolour(self) -> None:
        """Draw every point in the colour of its value of the chosen column."""
        if self.text_map is None:
            return
        many = len(self.text_map) > MANY_POINTS
        name = self.colour_combo.currentText()
        if name in self.columns:
            groups, colours, legend = colour_groups(self.columns[name])
            self.legend.setText(f"<b>{name}</b>: {legend}")
        else:
            groups, colours = np.zeros(len(self.text_map), dtype=np.int64), CATEGORY_COLOURS[:1]
            self.legend.setText("")
        if many:
            self.cloud.set_points(self.text_map.projection.coords, groups,
                                  [translucent(QColor(colour).getRgb()) for colour in colours])
            colours = []                                 # no scatter layers
        else:
            self.cloud.clear()
        while len(self.layers) < len(colours):
            layer = pg.ScatterPlotItem(pen=None, hoverable=True, tip=self.hover_text, hoverSize=11)
            layer.sigClicked.connect(self._clicked)
            layer.setZValue(-1)                          # under the rings and marks
            self.plot.addItem(layer)
            self.layers.append(layer)
        coords = self.text_map.projection.coords
        for layer, (group, colour) in zip(self.layers, enumerate(colours)):
            points = np.flatnonzero(groups == group)
            colour = QColor(colour)
            colour.setAlpha(min(230, colour.alpha()))
            layer.setData(pos=coords[points], data=points, size=7, brush=pg.mkBrush(colour))
        for layer in self.layers[len(colours):]:
            layer.clear()

    def point_colours(self) -> np.ndarray:
        """Each point's colour as drawn (``#rrggbb``), in point order."""
        if len(self.cloud.coords):
            return self.cloud.point_colours()
        out = np.full(len(self.text_map) if self.text_map is not None else 0, "", dtype=object)
        for layer in self.layers:
            if len(layer.data):
                out[layer.data["data"].astype(np.int64)] = layer.opts["brush"].color().name()
        return out

    def _draw_segments(self, shown: bool) -> None:
        self.segments.setVisible(shown)

    # ------------------------------------------------------------------ view state

    def view_state(self) -> dict:
        """The map's choices (JSON-safe): projection, colour column, segments, number of clusters."""
        return {"projection": self._method, "colour": self._colour or self.colour_combo.currentText(),
                "segments": self.segments_box.isChecked(), "clusters": int(self._k)}

    def restore_view_state(self, state: dict) -> None:
        """Take back choices from `view_state` (unknown keys and values ignored, missing ones kept);
        a drawn map is projected or clustered again when they differ."""
        method = state.get("projection", self._method)
        k = state.get("clusters", self._k)
        method = method if method in PROJECTIONS else self._method
        k = k if isinstance(k, int) and not isinstance(k, bool) and (k == 0 or 2 <= k <= MAX_CLUSTERS) else self._k
        if isinstance(state.get("segments"), bool):
            self.segments_box.setChecked(state["segments"])
        if isinstance(state.get("colour"), str):
            self._colour = state["colour"]
            if self.colour_combo.findText(self._colour) >= 0:
                self.colour_combo.setCurrentText(self._colour)
        changed_k, changed_method = k != self._k, method != self._method
        self._method, self._k = method, k
        self._sync_controls()
        if changed_k or changed_method:
            self._recompute(keep_clusters=not changed_k)

    # ------------------------------------------------------------------ hover, click, selection

    def hover_text(self, x=None, y=None, data=None) -> str:
        """A point's id and text (cut to `HOVER_CHARS`), and its value of the colour column."""
        text_map = self.text_map
        if text_map is None or data is None:
            return ""
        point = int(data)
        text = shorten(text_map.texts[point])
        name = self.colour_combo.currentText()
        value = self.columns[name][point] if name in self.columns else None
        shown = "" if value is None else (f"\n{name}: {value:.3g}" if isinstance(value, float) else f"\n{name}: {value}")
        return f"{text_map.ids[point]}: {text}{shown}"

    def _set_mode(self, mode: str) -> None:
        self.view_box.mode = mode
        self.view_box.setMouseEnabled(x=True, y=True)

    def choose_inside(self, polygon) -> None:
        """Choose the points inside a drawn rectangle or lasso."""
        if self.text_map is not None:
            self.choose(np.flatnonzero(points_in_polygon(self.text_map.projection.coords, polygon)))

    def choose(self, points) -> None:
        """Choose these points: ringed here; the Results table shows only the pairs touching them
        (a document set: the pairs between two chosen documents; scored by neighbours: the listed
        pairs of a chosen document)."""
        self.chosen = np.asarray(points, dtype=np.int64)
        self._show_marks()
        self.clear_button.setEnabled(len(self.chosen) > 0)
        text_map, results = self.text_map, self.state.results
        documents = isinstance(results, DocumentMatrix) and len(results.ids) == len(text_map or ())
        listed = isinstance(results, NeighbourPairs)
        if text_map is None or not (len(text_map.segments) or documents or listed):
            return
        if len(self.chosen) and listed:
            rows = results.rows_touching(np.asarray(text_map.ids, dtype=object)[self.chosen])
            self.state.set_chosen_rows(rows, f"the {plural(len(rows), 'listed pair')} of "
                                             f"{plural(len(self.chosen), 'document')} chosen on the Map")
        elif len(self.chosen) and documents:            # a point is a document: the pairs between them
            rows = pairs_among(len(results.ids), self.chosen)
            self.state.set_chosen_rows(rows, f"the {plural(len(rows), 'pair')} between "
                                             f"{plural(len(self.chosen), 'document')} chosen on the Map")
        elif len(self.chosen):
            rows = text_map.rows_touching(self.chosen)
            self.state.set_chosen_rows(rows, f"the {plural(len(rows), 'pair')} of "
                                             f"{plural(len(self.chosen), 'text')} chosen on the Map")
        elif self.state.chosen_rows is not None:
            self.state.set_chosen_rows(None)

    def _range_changed(self) -> None:
        if self.state.chosen_rows is None and len(self.chosen):
            self.chosen = np.zeros(0, dtype=np.int64)      # cleared from the Results tab
            self._show_marks()
            self.clear_button.setEnabled(False)

    def _show_marks(self) -> None:
        coords = None if self.text_map is None else self.text_map.projection.coords
        self.marks.setData(pos=np.zeros((0, 2)) if coords is None else coords[self.chosen])
        hits = [p for p, _, _ in self.neighbours]
        self.picked.setData(pos=np.zeros((0, 2)) if coords is None or not hits else coords[hits])
        source = [] if coords is None or self.source is None else [self.source]
        self.origin.setData(pos=np.zeros((0, 2)) if not source else coords[source])

    def _mark_current(self, points) -> None:
        coords = None if self.text_map is None else self.text_map.projection.coords
        points = np.asarray(points, dtype=np.int64)
        self.current.setData(pos=np.zeros((0, 2)) if coords is None or not len(points) else coords[points])

    def _selection_changed(self) -> None:
        """The pair selected in Results (or elsewhere): its two texts are marked with diamonds."""
        text_map, row = self.text_map, self.state.selected_row
        documents = self.state.selected_documents()          # a document set: its pair's documents
        if text_map is not None and documents is not None and not len(text_map.segments):
            self._mark_current(list(documents))
            return
        if text_map is None or row is None or not len(text_map.segments):
            return
        found = np.flatnonzero(text_map.rows == row)
        self._mark_current(text_map.segments[found[0]] if len(found) else [])

    def _neighbour_chosen(self, row: int, *_previous) -> None:
        """A listed text chosen: marked here; for pairs, its first pair is selected in Results."""
        if self.text_map is None or not 0 <= row < len(self.neighbours):
            return
        point = self.neighbours[row][0]
        self._mark_current([point])
        rows = self.text_map.rows_touching([point])
        if len(rows):
            self.state.select_row(int(rows[0]))

    def _clicked(self, _item, points, _event=None) -> None:
        if len(points):
            self.show_neighbours(int(points[0].data()))

    # ------------------------------------------------------------------ neighbours & typed search

    def _metric(self) -> str:
        profile = self.state.profile
        return self.state.metric if profile is not None and self.state.metric in profile.references() \
            else "cosine"

    def show_neighbours(self, point: int) -> None:
        """List the nearest texts of a point (itself left out), best first."""
        text_map = self.text_map
        if text_map is None or self.state.profile is None:
            return
        found = nearest(text_map, text_map.vectors[point], self.state.profile, metric=self._metric(),
                        k=NEIGHBOURS, exclude=point)
        self.source = point
        self._list(found, f"Nearest to {text_map.ids[point]}: {shorten(text_map.texts[point], 90)}")

    def find_like(self) -> None:
        """Encode the typed text (in the worker, cache first), then list its nearest texts."""
        text = self.query_edit.text().strip()
        state = self.state
        if not text or self.text_map is None or state.embedder is None:
            return
        embedder, cache = state.embedder, self._cache()
        self._query = text
        self.neighbour_title.setText(f"Finding texts like “{text}”…")
        self.query_runner.start(lambda progress, should_stop: encode_query(
            embedder, text, cache, progress=progress, should_stop=should_stop))

    def _query_encoded(self, vector) -> None:
        if self.text_map is None or self.state.profile is None:
            return
        found = nearest(self.text_map, vector, self.state.profile, metric=self._metric(), k=NEIGHBOURS)
        self.source = None
        self._list(found, f"Nearest to the typed text “{shorten(self._query, 90)}”")

    def _list(self, found, title: str) -> None:
        self.neighbours = found
        metric = self._metric()
        texts, ids = self.text_map.texts, self.text_map.ids
        self.nearest.show_rows(f"{title}\n({metric}: raw, and calibrated 0–1)",
                               [(texts[point], ids[point], raw, calibrated) for point, raw, calibrated in found])
        self._show_marks()
        self.neighbours_listed.emit()

    def focus_query(self) -> None:
        """Ctrl+K: put the cursor in the search box."""
        self.query_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.query_edit.selectAll()
