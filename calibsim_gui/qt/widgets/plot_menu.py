"""The right-click menu of calibsim's plots: Reset view and Export image…, in place of
pyqtgraph's developer menu (View All, axis options, Plot Options, its export dialog)."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget


class PlotMenu:
    """Replaces pyqtgraph's menu on `plots` (PlotItems of `canvas`) with a small one.

    `reset(plot)` puts the clicked plot's view back (default: it auto-ranges); `extra(menu,
    plot)` may add the plot's own actions; `image_name` is the file name Export image proposes.
    """

    def __init__(self, owner: QWidget, canvas, plots, *, image_name: str,
                 reset: Callable | None = None, extra: Callable | None = None):
        self.owner, self.canvas, self.plots = owner, canvas, list(plots)
        self.image_name = image_name
        self._reset, self._extra = reset, extra
        self.menu: QMenu | None = None
        for plot in self.plots:
            plot.setMenuEnabled(False)
        canvas.scene().sigMouseClicked.connect(self._clicked)

    def _clicked(self, event) -> None:
        plot = next((plot for plot in self.plots
                     if plot.vb.sceneBoundingRect().contains(event.scenePos())), None)
        if event.button() == Qt.MouseButton.RightButton and plot is not None:
            event.accept()
            self.menu = self.build(plot)
            self.menu.popup(QCursor.pos())

    def build(self, plot=None) -> QMenu:
        """The menu of `plot` (default: the first)."""
        plot = self.plots[0] if plot is None else plot
        menu = QMenu(self.owner)
        menu.addAction("Reset view", lambda: self.reset_view(plot))
        if self._extra is not None:
            self._extra(menu, plot)
            menu.addSeparator()
        menu.addAction("Export image…", self._export_dialog)
        return menu

    def reset_view(self, plot) -> None:
        if self._reset is not None:
            self._reset(plot)
        else:
            plot.autoRange()              # now, then again as the data change
            plot.enableAutoRange()

    def _export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self.owner, "Export image", self.image_name,
                                              "PNG image (*.png)")
        if path:
            self.export_image(path)

    def export_image(self, path) -> bool:
        """Save the plots as drawn now as a PNG."""
        return self.canvas.grab().save(str(path))
