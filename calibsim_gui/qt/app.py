"""The desktop application's entry point (a placeholder window until the GUI issue lands)."""

from __future__ import annotations

import sys

from PySide6 import QtCore, QtWidgets

from calibsim_gui import __version__


class MainWindow(QtWidgets.QMainWindow):
    """calibsim's main window."""

    def __init__(self):
        super().__init__()
        self.setWindowTitle(f"calibsim {__version__}")
        label = QtWidgets.QLabel(
            "<h2>calibsim</h2><p>Calibrated similarity for text embeddings.</p>"
            "<p>The desktop views are on their way. Meanwhile the command line does the work:<br>"
            "<code>calibsim score pairs.csv --out scored.csv</code><br>"
            "<code>calibsim profile build --background corpus.txt --out my.calibsim-profile</code><br>"
            "<code>calibsim matrix docs/ --out matrix.csv</code></p>")
        label.setTextFormat(QtCore.Qt.TextFormat.RichText)
        label.setMargin(24)
        self.setCentralWidget(label)
        self.resize(640, 360)


def run_app(argv=None) -> int:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(argv or sys.argv)
    app.setApplicationName("calibsim")
    window = MainWindow()
    window.show()
    return app.exec()
