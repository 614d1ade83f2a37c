"""What the Map draws besides its points: the ViewBox that draws a rectangle or a lasso, and the
density image shown under a crowded map."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal

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
        self.outline = pg.PlotCurveItem(pen=pg.mkPen((230, 120, 20), width=1.5, style=Qt.PenStyle.DashLine))
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
