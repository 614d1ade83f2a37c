"""The Text map's controls above the plot: the line that says what it shows (with Draw the map),
the colour, projection and cluster choosers, the mouse mode, segments, cluster names, Clear
selection, and the colour legend. `MapView` connects them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.analysis.clusters import MAX_CLUSTERS
from calibsim_gui.qt.views.map.map_items import MODES

PROJECTIONS = {"PCA": "PCA (instant)", "t-SNE": "t-SNE (slower: a sample of up to 2,000 texts)"}


class MapControls(QWidget):
    """Three rows of controls (the Map fits half a 1024-pixel window) and the legend under them."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.summary = QLabel("Open pairs or documents: each of their texts becomes a point here.")
        self.summary.setWordWrap(True)
        self.colour_combo = QComboBox()
        self.colour_combo.setToolTip("Colour the points by this column (a text in several pairs: "
                                     "the mean over its pairs)")
        self.mode_combo = QComboBox()
        self.mode_combo.addItems(MODES)
        self.mode_combo.setToolTip("Drag with the left button to pan, or to choose the points inside "
                                   "a rectangle or a lasso (the Results tab then shows their pairs)")
        self.projection_combo = QComboBox()
        for method, title in PROJECTIONS.items():
            self.projection_combo.addItem(title, method)
        self.projection_combo.setToolTip("PCA keeps the two directions of largest variance, at once; "
                                         "t-SNE keeps each text's neighbours close (it takes longer)")
        self.cluster_combo = QComboBox()
        self.cluster_combo.addItem("auto", 0)
        for k in range(2, MAX_CLUSTERS + 1):
            self.cluster_combo.addItem(str(k), k)
        self.cluster_combo.setToolTip("How many clusters the texts are grouped in (auto: where more "
                                      "clusters stop gathering the texts much closer); each is named by "
                                      "its typical words")
        self.segments_box = QCheckBox("Draw pairs as segments")
        self.segments_box.setToolTip("A line between the two texts of every pair")
        self.names_box = QCheckBox("Cluster names", checked=True)
        self.names_box.setToolTip("Each cluster's most typical words, drawn at its centre")
        self.clear_button = QPushButton("Clear selection")
        self.clear_button.setEnabled(False)
        self.again_button = QPushButton("Draw the map")
        self.again_button.setToolTip("Encode (from the cache) and project the texts again")
        self.again_button.hide()
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)

        bar = QHBoxLayout()
        for label, combo in (("Colour by:", self.colour_combo), ("Projection:", self.projection_combo),
                             ("Clusters:", self.cluster_combo)):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(8)
            bar.addWidget(QLabel(label))
            bar.addWidget(combo, 1)
        tools = QHBoxLayout()
        tools.addWidget(QLabel("Mouse:"))
        tools.addWidget(self.mode_combo)
        tools.addWidget(self.segments_box)
        tools.addWidget(self.names_box)
        tools.addWidget(self.clear_button)
        tools.addStretch(1)
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.again_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(bar)
        layout.addLayout(tools)
        layout.addWidget(self.legend)
