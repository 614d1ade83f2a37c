"""What the Map draws besides its points: the ViewBox that draws a rectangle or a lasso, the
density image shown under a crowded map and the clusters' labels (a crowded map's points are a
`calibsim_gui.qt.widgets.point_cloud.PointCloud`)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont

from calibsim_gui.qt.views.map.map_colours import CATEGORY_COLOURS, CHOSEN_COLOUR

MODES = ("Pan and zoom", "Rectangle", "Lasso")
DENSITY_BINS = 160


class SelectionViewBox(pg.ViewBox):
    """A ViewBox that, in rectangle or lasso mode, draws a shape with the left button and emits
    its vertices (view coordinates) when the drag ends; otherwise it pans and zooms."""

    shape_drawn = Signal(object)          # ndarray of shape (n_vertices, 2)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mode = MODES[0]
        self._path: list = []
        self.outline = pg.PlotCurveItem(pen=pg.mkPen(CHOSEN_COLOUR, width=1.5, style=Qt.PenStyle.DashLine))
        self.outline.setZValue(10)
        self.addItem(self.outline, ignoreBounds=True)

    def mouseDragEvent(self, ev, axis=None) -> None:
        if self.mode == MODES[0] or ev.button() != Qt.MouseButton.LeftButton:
            super().mouseDragEvent(ev, axis)
            return
        ev.accept()
        here = self.mapSceneToView(ev.scenePos())
        if ev.isStart():
            start = self.mapSceneToView(ev.buttonDownScenePos())
            self._path = [(start.x(), start.y())]
        self._path.append((here.x(), here.y()))
        shape = self.drawn_shape()
        closed = np.vstack([shape, shape[:1]])
        self.outline.setData(closed[:, 0], closed[:, 1])
        if ev.isFinish():
            self.outline.setData([], [])
            self.shape_drawn.emit(shape)

    def drawn_shape(self) -> np.ndarray:
        """The drawn shape: the rectangle spanned by the drag, or the lasso's path."""
        path = np.asarray(self._path, dtype=float)
        if self.mode == "Rectangle":
            (x0, y0), (x1, y1) = path[0], path[-1]
            return np.array([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        return path


class DensityImage(pg.ImageItem):
    """A 2-D histogram of the points, drawn under them: the more points in a cell, the darker
    (log of the count), so crowded regions show where translucent points pile up."""

    def __init__(self):
        super().__init__(axisOrder="col-major")
        self.setZValue(-2)                           # under the points

    def show_density(self, coords, colour) -> None:
        """Shade the cells of `coords` (n, 2) in `colour` (a QColor); no points: nothing."""
        coords = np.asarray(coords, dtype=float).reshape(-1, 2)
        if not len(coords):
            self.clear()
            return
        counts, x_edges, y_edges = np.histogram2d(coords[:, 0], coords[:, 1], bins=DENSITY_BINS)
        image = np.zeros(counts.shape + (4,), dtype=np.uint8)
        image[..., :3] = colour.red(), colour.green(), colour.blue()
        image[..., 3] = (200 * np.log1p(counts) / max(np.log1p(counts.max()), 1e-9)).astype(np.uint8)
        self.setImage(image, autoLevels=False, levels=(0, 255))
        self.setRect(QRectF(x_edges[0], y_edges[0], x_edges[-1] - x_edges[0], y_edges[-1] - y_edges[0]))

    def density(self) -> np.ndarray:
        """The shade of each cell (0: no point), for tests and pictures."""
        return np.zeros((0, 0)) if self.image is None else self.image[..., 3]


class ClusterLabels:
    """Each cluster's name (its most typical words) drawn on the map at the cluster's centre (the
    median of its points), framed in its colour: one `pg.TextItem` per cluster, made once, then
    renamed and moved as clusters and projections change."""

    def __init__(self, plot):
        self.plot = plot
        self.items: list[pg.TextItem] = []
        self.count = 0                              # how many of `items` name a cluster now
        self.shown = True

    def show(self, coords, clusters, text: QColor, fill: QColor) -> None:
        """Name `clusters` (None: none) at their centres in `coords` (n, 2), in `text` on `fill`."""
        count = self.count = 0 if clusters is None or len(clusters.labels) != len(coords) else len(clusters.sizes)
        font = QFont()
        font.setBold(True)
        while len(self.items) < count:
            item = pg.TextItem(anchor=(0.5, 0.5))
            item.setFont(font)
            item.setZValue(12)                      # above the points and the marks
            self.plot.addItem(item, ignoreBounds=True)
            self.items.append(item)
        background = QColor(fill)
        background.setAlpha(210)
        for cluster, item in enumerate(self.items):
            item.setVisible(self.shown and cluster < count)
            if cluster >= count:
                continue
            inside = coords[clusters.labels == cluster]
            x, y = np.median(inside, axis=0) if len(inside) else (0.0, 0.0)
            item.setText(clusters.names[cluster], color=text)
            item.fill = pg.mkBrush(background)
            item.border = pg.mkPen(CATEGORY_COLOURS[cluster % len(CATEGORY_COLOURS)], width=2)
            item.setPos(float(x), float(y))

    def set_shown(self, shown: bool) -> None:
        self.shown = shown
        for cluster, item in enumerate(self.items):
            item.setVisible(shown and cluster < self.count)

    def labels(self) -> list[tuple[str, float, float]]:
        """The names shown and where: (text, x, y) per visible label."""
        return [(item.toPlainText(), item.pos().x(), item.pos().y()) for item in self.items if item.isVisible()]
