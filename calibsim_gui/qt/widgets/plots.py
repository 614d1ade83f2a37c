"""Shared pieces of the plots (pyqtgraph): labels, metric choosers and the palette's style.

The plots themselves: `distribution_plot`, `calibrated_map_plot`, `heatmap_view`.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QComboBox

from calibsim_gui.core.geometry.metrics import METRICS

POINT_COLOR = QColor(76, 120, 168, 170)
SELECTED_COLOR = QColor(214, 39, 40)
SHOWN_COLOR = QColor(150, 40, 170)          # the rows every filter leaves, marked in every view


def short_label(label: str) -> str:
    """The part of an anchor level's label drawn on its line ("3 - roughly ..." -> "3")."""
    head = label.split(" - ", 1)[0]
    return head if len(head) <= 14 else head[:13] + "…"


def metric_combo(tooltip: str) -> QComboBox:
    """A combo of every metric (data: its name), each item explained in its tooltip."""
    combo = QComboBox(toolTip=tooltip)
    for name, metric in METRICS.items():
        combo.addItem(name, name)
        combo.setItemData(combo.count() - 1, f"{metric.description}; {metric.orientation}",
                          Qt.ItemDataRole.ToolTipRole)
    return combo


def style_plot(plot: pg.PlotItem, palette: QPalette) -> None:
    """Axes and title in the palette's text colour, without SI prefixes on the ticks."""
    text = palette.color(QPalette.ColorRole.Text)
    for side in ("left", "bottom", "right"):
        axis = plot.getAxis(side)
        axis.setPen(pg.mkPen(text))
        axis.setTextPen(pg.mkPen(text))
        axis.enableAutoSIPrefix(False)
    plot.titleLabel.setAttr("color", text.name())
    plot.titleLabel.setText(plot.titleLabel.text)
