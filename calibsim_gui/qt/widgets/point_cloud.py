"""Many points drawn as one image rendered by numpy at the screen's scale (`PointCloud`): what the
Map and Compare draw once a scatter of separate points would hold the window (#39, #44)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QImage

from calibsim_gui.core.analysis.projection import stop_if_asked
from calibsim_gui.qt.widgets.workers import TaskRunner

HOVER_PIXELS = 5                  # a point is hovered or clicked within this many pixels
STAMP = np.array([(dx, dy) for dy in range(-2, 2) for dx in range(-2, 2)    # a 4-pixel disc's
                  if abs(dx + 0.5) + abs(dy + 0.5) < 3], dtype=np.int32)      # pixels (no corners)
SHARPEN_MS = 150                  # a stretched (zoomed-in) image is rendered again after this rest
MAX_STRETCH = 2.0                 # zoomed in more than this: rendered again at once
MAX_COUNT = 64                    # overlaps counted up to this many (alpha is then nearly opaque)
RENDER_IN_WORKER = 200_000        # more points than this: a new image is rendered in a worker
MANY_POINTS = 5000                # more points than this: a scatter is drawn as a `PointCloud`
CROWDED_ALPHA = 110               # the most opaque a crowded scatter's point colour is (overlaps add up)


def translucent(rgba) -> tuple:
    """A colour (RGBA) as a crowded scatter draws it: no more opaque than `CROWDED_ALPHA`."""
    r, g, b, a = rgba
    return r, g, b, min(CROWDED_ALPHA, a)


class PointCloud(pg.GraphicsObject):
    """Many points (a crowded map) drawn as one image rendered by numpy at the screen's scale.

    Panning only moves the cached image (a blit, whatever the number of points); it is rendered
    again when the view leaves the rendered area (the view and half a view around it) or zooms
    out; zoomed in up to twice, the image is stretched, and rendered sharp once the zoom rests
    (`SHARPEN_MS` later). A point is a 4-pixel disc in its colour; where points overlap, the top
    colour (the last colour group) shows with the alpha of all of them. Hovering a point shows
    `tip(point)` and emits `hovered(point)`; clicking one emits `clicked(point)`.
    """

    clicked = Signal(int)
    hovered = Signal(int)

    def __init__(self, tip=None):
        super().__init__()
        self.tip = tip
        self.coords = np.zeros((0, 2))
        self.groups = np.zeros(0, dtype=np.int64)    # each point's colour: an index into `colours`
        self.colours = np.zeros((0, 4), dtype=np.uint8)   # RGBA of each colour group
        self._drawn = np.zeros((0, 2), dtype=np.float32), np.zeros(0, dtype=np.int16)   # by colour group
        self._bounds = QRectF()
        self._image = None                             # (area, scale, QImage, its pixels)
        self.renders = 0                               # how many times the image was rendered
        self.sharpen = QTimer(self, singleShot=True, interval=SHARPEN_MS)
        self.sharpen.timeout.connect(self._sharpen)
        self._blurred = False                          # the image is stretched: render it sharp
        self._pending = (QRectF(), (0.0, 0.0))         # the area and scale the worker renders
        self.renderer = TaskRunner("drawing the map", self)     # many points: rendered in a worker
        self.renderer.finished.connect(self._rendered)
        self.setAcceptHoverEvents(True)

    def set_points(self, coords, groups, colours) -> None:
        """Draw `coords` (n, 2), point i in ``colours[groups[i]]`` (RGBA rows)."""
        self.prepareGeometryChange()
        self.coords = np.asarray(coords, dtype=float).reshape(-1, 2)
        self.groups = np.asarray(groups, dtype=np.int64)
        self.colours = np.asarray(colours, dtype=np.uint8).reshape(-1, 4)
        order = np.argsort(self.groups, kind="stable")                # drawn in this order: the last group on top
        self._drawn = self.coords[order].astype(np.float32), self.groups[order].astype(np.int16)
        if len(self.coords):
            (x0, y0), (x1, y1) = self.coords.min(axis=0), self.coords.max(axis=0)
            self._bounds = QRectF(x0, y0, x1 - x0, y1 - y0)
        else:
            self._bounds = QRectF()
        self._image = None
        self.renderer.cancel()                         # an image of the points before is dropped
        self.update()

    def clear(self) -> None:
        self.set_points(np.zeros((0, 2)), np.zeros(0), np.zeros((0, 4)))

    def point_colours(self) -> np.ndarray:
        """Each point's colour (``#rrggbb``)."""
        names = np.array([f"#{r:02x}{g:02x}{b:02x}" for r, g, b, _ in self.colours], dtype=object)
        return names[self.groups] if len(names) else np.zeros(0, dtype=object)

    def dataBounds(self, axis, frac=1.0, orthoRange=None):
        if not len(self.coords):
            return None, None
        return float(self.coords[:, axis].min()), float(self.coords[:, axis].max())

    def pixelPadding(self) -> float:
        return 2.0

    def boundingRect(self) -> QRectF:
        if not len(self.coords):
            return QRectF()
        pixel = self.pixelSize() if self.getViewBox() is not None else (0, 0)
        return self._bounds.adjusted(-2 * pixel[0], -2 * pixel[1], 2 * pixel[0], 2 * pixel[1])

    def viewTransformChanged(self) -> None:
        super().viewTransformChanged()                 # forgets the cached view rectangle: without it,
        self.prepareGeometryChange()                   # a new projection was drawn where the old view was
        if self.sharpen.isActive():
            self.sharpen.start()                       # still zooming: not at rest yet

    def paint(self, painter, option, widget) -> None:
        """Draw the cached image; render a new one when the view left it, zoomed out, zoomed in
        more than `MAX_STRETCH` or rests after zooming in: at once for up to `RENDER_IN_WORKER`
        points (or the first time), otherwise in `renderer` while the old image stays drawn."""
        if not len(self.coords):
            return
        transform = painter.transform()
        scale = (abs(transform.m11()), abs(transform.m22()))       # pixels per unit (no rotation)
        if min(scale) <= 0:
            return
        pixel = (1 / scale[0], 1 / scale[1])
        data = self._bounds.adjusted(-3 * pixel[0], -3 * pixel[1], 3 * pixel[0], 3 * pixel[1])
        visible = self.viewRect().intersected(data)
        if visible.isEmpty():
            return
        cached = self._image
        stretch = 0.0 if cached is None else min(scale[0] / cached[1][0], scale[1] / cached[1][1])
        # a pan changes the scale in its last digits, and with it the 3-pixel margin of `data`: a view
        # past the image's edge by a sliver of that blank margin needs no new image
        fits = cached is not None and cached[0].adjusted(-pixel[0], -pixel[1], pixel[0], pixel[1]).contains(visible)
        if not fits or self._blurred or not 1 - 1e-6 <= stretch <= MAX_STRETCH:
            view = self.viewRect()
            area = view.adjusted(-view.width() / 2, -view.height() / 2, view.width() / 2,
                                 view.height() / 2).intersected(data)
            self._blurred = False
            if cached is None or len(self.coords) <= RENDER_IN_WORKER:
                cached = self._image = render_points(self._drawn, self.colours, area, scale)
                self.renders += 1
            elif not (self.renderer.running and self._pending[1] == scale and self._pending[0].contains(visible)):
                self._pending = (area, scale)          # (one render at a time: the latest view's)
                self.renderer.start(render_points, self._drawn, self.colours, area, scale)
        elif stretch > 1 + 1e-6 and not self.sharpen.isActive():
            self.sharpen.start()                       # zooming in: stretched now, sharp at rest
        painter.drawImage(cached[0], cached[2])

    def _sharpen(self) -> None:
        self._blurred = True
        self.update()

    def _rendered(self, image) -> None:
        """A worker's image of the current points: drawn from now on."""
        self._image = image
        self.renders += 1
        self.update()

    def drawn(self) -> np.ndarray:
        """Per point: is its pixel lit in the image drawn last (False before the first draw)?
        For tests and pictures: points are drawn where their coordinates are."""
        if self._image is None:
            return np.zeros(len(self.coords), dtype=bool)
        area, scale, _, out = self._image
        pixels = np.floor((self.coords - (area.left(), area.top())) * scale).astype(np.int64)
        inside = ((pixels >= 0) & (pixels < (out.shape[1], out.shape[0]))).all(axis=1)
        lit = np.zeros(len(self.coords), dtype=bool)
        lit[inside] = out[pixels[inside, 1], pixels[inside, 0]] != 0
        return lit

    def point_at(self, pos) -> int | None:
        """The point nearest `pos` (item coordinates) within `HOVER_PIXELS`, or None."""
        if not len(self.coords) or self.getViewBox() is None:
            return None
        pixel = np.array(self.pixelSize(), dtype=float)
        distance = (((self.coords - (pos.x(), pos.y())) / pixel) ** 2).sum(axis=1)
        point = int(np.argmin(distance))
        return point if distance[point] <= HOVER_PIXELS ** 2 else None

    def hoverEvent(self, event) -> None:
        point = None if event.isExit() else self.point_at(event.pos())
        self.setToolTip("" if point is None or self.tip is None else self.tip(data=point))
        if point is not None:
            self.hovered.emit(point)

    def mouseClickEvent(self, event) -> None:
        point = self.point_at(event.pos()) if event.button() == Qt.MouseButton.LeftButton else None
        if point is not None:
            event.accept()
            self.clicked.emit(point)


def render_points(drawn, colours, area: QRectF, scale, *, progress=None, should_stop=None) -> tuple:
    """The points `drawn` (coordinates and colour groups, sorted by group) inside `area` as a
    premultiplied ARGB image at `scale` pixels per unit, ``(area, scale, image, pixels)``; each
    group's colour is a row of `colours` (RGBA). A plain function: `PointCloud` runs it on the GUI
    thread, or for many points in a worker (`should_stop` is checked between stages).


    Each point lights one pixel of a padded grid (its count and its colour group, the last
    group on top); the disc is then stamped by adding the grid shifted by each of `STAMP`'s
    offsets: a dozen passes over the image, whatever the number of points."""
    width, height = max(1, int(np.ceil(area.width() * scale[0]))), max(1, int(np.ceil(area.height() * scale[1])))
    area = QRectF(area.left(), area.top(), width / scale[0], height / scale[1])
    pad = 1 - STAMP.min(axis=0)                                   # a point this far outside still shows
    padded = (height + pad[1] + STAMP[:, 1].max(), width + pad[0] + STAMP[:, 0].max())
    coords, groups = drawn
    origin = np.array([area.left(), area.top()], dtype=np.float32) - (pad - 1) / np.asarray(scale, dtype=np.float32)
    pixels = np.floor((coords - origin) * np.asarray(scale, dtype=np.float32)).astype(np.int32)
    inside = ((pixels >= 0) & (pixels < (padded[1], padded[0]))).all(axis=1)
    cells = pixels[inside, 1].astype(np.int64) * padded[1] + pixels[inside, 0]
    count = np.bincount(cells, minlength=padded[0] * padded[1]).reshape(padded).astype(np.int32)
    top = np.full(padded[0] * padded[1], -1, dtype=np.int16)
    top[cells] = groups[inside]                                   # sorted by group: the last on top
    top = top.reshape(padded)
    stop_if_asked(should_stop)
    stamped = np.zeros((height, width), dtype=np.int32)
    shown = np.full((height, width), -1, dtype=np.int16)
    for dx, dy in STAMP:
        top_row, left = pad[1] - 1 - dy, pad[0] - 1 - dx                # the grid cell that lands on (0, 0)
        rows, columns = slice(top_row, top_row + height), slice(left, left + width)
        stamped += count[rows, columns]
        np.maximum(shown, top[rows, columns], out=shown)
    alpha = 1 - (1 - colours[:, 3:4] / 255.0) ** np.arange(MAX_COUNT + 1)     # (groups, count)
    rgb = (colours[:, None, :3] * alpha[..., None]).astype(np.uint32)       # premultiplied
    argb = ((np.round(255 * alpha).astype(np.uint32) << 24) | (rgb[..., 0] << 16)
            | (rgb[..., 1] << 8) | rgb[..., 2])
    out = np.zeros((height, width), dtype=np.uint32)
    lit = shown >= 0
    out[lit] = argb[shown[lit], np.minimum(stamped[lit], MAX_COUNT)]
    image = QImage(out.data, width, height, 4 * width, QImage.Format.Format_ARGB32_Premultiplied)
    return area, scale, image, out
