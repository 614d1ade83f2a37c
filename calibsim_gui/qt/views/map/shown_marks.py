"""The Map's marks of the rows every filter leaves (`state.shown_rows`: a range brushed on the
Distributions tab, the Results table's filters, the Map's own choice): the texts of those pairs,
or for a document set the documents of those pairs."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.qt.widgets.plots import SHOWN_COLOR


class ShownMarks:
    """A ring on every point of `view` (a `MapView`) that a shown row touches; none without a filter."""

    def __init__(self, view):
        self.view = view
        self.item = pg.ScatterPlotItem(size=11, brush=None, pen=pg.mkPen(SHOWN_COLOR, width=1.5), symbol="s")
        view.plot.addItem(self.item)
        view.state.shown_rows_changed.connect(self.redraw)

    def points(self) -> np.ndarray:
        """The map's points touched by the shown rows (empty: no filter, or no map)."""
        rows, text_map, results = self.view.state.shown_rows, self.view.text_map, self.view.state.results
        if rows is None or text_map is None:
            return np.zeros(0, dtype=np.int64)
        if isinstance(results, DocumentMatrix) and len(results.ids) == len(text_map):
            first, second = np.triu_indices(len(results.ids), k=1)
            rows = rows[rows < len(first)]
            return np.unique(np.concatenate([first[rows], second[rows]]))
        if not len(text_map.segments):
            return np.zeros(0, dtype=np.int64)
        return np.unique(text_map.segments[np.isin(text_map.rows, rows)])

    def redraw(self) -> None:
        points, text_map = self.points(), self.view.text_map
        self.item.setData(pos=np.zeros((0, 2)) if not len(points) else text_map.projection.coords[points])
