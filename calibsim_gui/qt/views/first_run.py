"""The Welcome tab: what calibsim does and how to start (shown at start and by Help ▸ Getting started)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

GETTING_STARTED = """
<h2>calibsim: is a similarity score high, and relative to what?</h2>
<p>A raw cosine of 0.75 is "very high" for one model and "average" for another. calibsim
puts every score on a scale you can read: 0 = a typical pair of unrelated sentences,
1 = identical text, checked against a ladder of reference pairs (the <i>anchors</i>) and,
if you build one, a <i>background</i> of random pairs from your own texts.</p>
<ol>
<li><b>Open a pairs file</b> (CSV, TSV or JSONL with two text columns, e.g.
<tt>sentence1,sentence2</tt>; a column of human scores is used when present), or
<b>drop it onto the window</b>. Text files (one document per line or per file) give a
similarity heatmap instead.</li>
<li>Read the <b>Results</b> tab: the raw score next to the calibrated one. Select a row to see
it on the <b>Distributions</b> plot.</li>
<li>Optional: edit the reference pairs on the <b>Anchors</b> tab, build a background from your
corpus on the <b>Background</b> tab, or fit a map to human scores (File ▸ Fit human
calibration).</li>
<li>Save the set-up as a project (Ctrl+S) or export a report (Ctrl+E).</li>
</ol>
<p>Not sure where to start? <b>Open the demo</b>: four dozen sentence pairs, scored in a few seconds.</p>
"""

SHORTCUTS = (
    ("Ctrl+O", "Open a pairs file or documents"),
    ("Ctrl+Shift+O", "Open a project"),
    ("Ctrl+S / Ctrl+Shift+S", "Save the project / save it as"),
    ("Ctrl+E", "Export a report"),
    ("Ctrl+Tab / Ctrl+Shift+Tab", "Next / previous tab"),
    ("Ctrl+1 … Ctrl+8, Ctrl+9", "Go to tab 1 … 8, to the last tab"),
    ("Ctrl+F", "Filter the results table (Results tab)"),
    ("Ctrl+Shift+A", "Show every row: clear the Map's lasso, a brushed range and the table's filters"),
    ("Ctrl+K", "Find texts like a typed one (Text map tab)"),
    ("Esc", "Clear the text field being typed in; otherwise stop the task of this tab "
            "(the Cancel button in the status bar stops any task)"),
    ("Ctrl+Shift+H", "Fit a human calibration"),
    ("Ctrl+Shift+M", "Compare with another model"),
    ("Ctrl+Shift+T", "Find a threshold"),
    ("Ctrl+Shift+D", "Dark palette"),
    ("Ctrl+Q", "Quit (asks first when there is unsaved work)"),
)


def shortcuts_html() -> str:
    rows = "".join(f"<tr><td><b>{keys}</b></td><td>&nbsp;&nbsp;{what}</td></tr>" for keys, what in SHORTCUTS)
    return f"<table>{rows}</table>"


class FirstRunView(QWidget):
    """What to do first, with buttons: open a file, open the demo, open a project."""

    open_file_requested = Signal()
    open_demo_requested = Signal()
    open_project_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.text = QLabel(GETTING_STARTED, wordWrap=True, textFormat=Qt.TextFormat.RichText)
        self.text.setMaximumWidth(760)
        self.open_file_button = QPushButton("Open a pairs file…")
        self.open_file_button.setToolTip("CSV, TSV or JSONL of text pairs, or text documents (Ctrl+O)")
        self.demo_button = QPushButton("Open the demo")
        self.demo_button.setToolTip("Score the 30 demo sentence pairs that come with calibsim")
        self.project_button = QPushButton("Open a project…")
        self.project_button.setToolTip("A .calibsim project saved earlier (Ctrl+Shift+O)")
        self.open_file_button.clicked.connect(self.open_file_requested)
        self.demo_button.clicked.connect(self.open_demo_requested)
        self.project_button.clicked.connect(self.open_project_requested)
        self.open_file_button.setDefault(True)
        buttons = QHBoxLayout()
        for button in (self.open_file_button, self.demo_button, self.project_button):
            button.setMinimumHeight(34)
            buttons.addWidget(button)
        buttons.addStretch(1)
        column = QVBoxLayout()
        column.addStretch(1)
        column.addWidget(self.text)
        column.addSpacing(12)
        column.addLayout(buttons)
        column.addStretch(2)
        outer = QHBoxLayout(self)
        outer.addStretch(1)
        outer.addLayout(column, 4)
        outer.addStretch(1)
