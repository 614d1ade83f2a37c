"""Everything that imports PySide6 or pyqtgraph lives in this package."""
