"""Questions asked while reading inputs: which columns hold the pairs, what a document is."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QRadioButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.io.inputs import MANY_LINES

NO_LABEL = "(none)"
ROLES = {"text_a": "first text", "text_b": "second text", "label": "human score"}


class _PreviewModel(QAbstractTableModel):
    """The first rows of a frame; headers name the role a column was given."""

    def __init__(self, frame, parent=None):
        super().__init__(parent)
        self._frame = frame
        self.roles: dict[str, str] = {}

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._frame)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._frame.columns)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return str(self._frame.iat[index.row(), index.column()])
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Vertical:
            return str(section + 1)
        name = str(self._frame.columns[section])
        return f"{name}\n[{self.roles[name]}]" if name in self.roles else name

    def set_roles(self, roles: dict[str, str]) -> None:
        self.roles = roles
        if self.columnCount():
            self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, self.columnCount() - 1)


class ColumnMappingDialog(QDialog):
    """Pick the two text columns and the optional human-score column of a pairs file; with
    `documents` (a table that reads as well as a document set from that column), first whether
    it holds pairs or a document set.

    `mapping()` returns ``{"text_a": str, "text_b": str, "label": str | None}`` (the keyword
    arguments of `load_pairs`); `documents_column()` the column chosen for a document set (None:
    pairs were chosen). OK stays disabled while the choice cannot work.
    """

    def __init__(self, path, columns: list[str], guess: dict | None = None,
                 parent: QWidget | None = None, *, preview=None, documents: str | None = None):
        super().__init__(parent)
        guess = guess or {}
        columns = [str(c) for c in columns]
        name = Path(path).name
        self.setWindowTitle(f"Columns of {name}")
        intro = QLabel(f"Which columns of <b>{name}</b> hold the two texts to compare, "
                       "and which one (if any) holds human similarity scores?" if documents is None else
                       f"<b>{name}</b> can be read two ways. Does each row hold a pair of texts to "
                       "compare, or is one column a set of documents to compare with each other?")
        intro.setWordWrap(True)
        self.as_pairs = QRadioButton("&Pairs: compare two columns, row by row")
        self.as_documents = QRadioButton("A &document set: every text of one column with every other")
        self.document_combo = QComboBox()
        self.document_combo.addItems(columns)
        self._choose(self.document_combo, documents, 0)
        self.document_combo.setToolTip("The column whose texts are the documents")
        self.as_pairs.setChecked(True)

        self.text_a, self.text_b, self.label = QComboBox(), QComboBox(), QComboBox()
        self.text_a.addItems(columns)
        self.text_b.addItems(columns)
        self.label.addItems([NO_LABEL, *columns])
        self._choose(self.text_a, guess.get("text_a"), 0)
        self._choose(self.text_b, guess.get("text_b"), min(1, len(columns) - 1))
        self._choose(self.label, guess.get("label") or NO_LABEL, 0)
        self.text_a.setToolTip("Column holding the first text of each pair")
        self.text_b.setToolTip("Column holding the second text of each pair")
        self.label.setToolTip("Numeric human similarity scores (e.g. STS 0-5); optional")
        form = QFormLayout()
        form.addRow("&First text:", self.text_a)
        form.addRow("&Second text:", self.text_b)
        form.addRow("&Human score:", self.label)

        self.problem = QLabel()
        self.problem.setStyleSheet("color:#b3261e;")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        if documents is not None:
            modes = QButtonGroup(self)
            for button in (self.as_pairs, self.as_documents):
                modes.addButton(button)
                button.toggled.connect(self._check)
            layout.addWidget(self.as_pairs)
            form.setContentsMargins(24, 0, 0, 0)
        layout.addLayout(form)
        if documents is not None:
            layout.addWidget(self.as_documents)
            column = QFormLayout()
            column.setContentsMargins(24, 0, 0, 0)
            column.addRow("&Text column:", self.document_combo)
            layout.addLayout(column)
            self.document_combo.currentIndexChanged.connect(self._check)
        self.preview_model = None
        if preview is not None:
            self.preview_model = _PreviewModel(preview.head(5), self)
            table = QTableView()
            table.setModel(self.preview_model)
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.setWordWrap(False)
            table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 8)
            table.horizontalHeader().setStretchLastSection(True)
            table.resizeColumnsToContents()
            for column in range(self.preview_model.columnCount()):
                table.setColumnWidth(column, min(table.columnWidth(column) + 12, 280))
            table.setToolTip("The first rows of the file")
            layout.addWidget(QLabel("First rows:"))
            layout.addWidget(table, 1)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        for combo in (self.text_a, self.text_b, self.label):
            combo.currentIndexChanged.connect(self._check)
        self._check()
        self.resize(720, (380 if preview is not None else 200) + (60 if documents is not None else 0))

    @staticmethod
    def _choose(combo: QComboBox, name, fallback: int) -> None:
        index = combo.findText(str(name)) if name is not None else -1
        combo.setCurrentIndex(index if index >= 0 else fallback)

    def mapping(self) -> dict:
        label = self.label.currentText()
        return {"text_a": self.text_a.currentText(), "text_b": self.text_b.currentText(),
                "label": None if label == NO_LABEL else label}

    def documents_column(self) -> str | None:
        """The column read as a document set, or None when the rows are pairs."""
        return self.document_combo.currentText() if self.as_documents.isChecked() else None

    def _check(self) -> None:
        chosen, documents = self.mapping(), self.documents_column()
        for combo in (self.text_a, self.text_b, self.label):
            combo.setEnabled(documents is None)
        self.document_combo.setEnabled(self.as_documents.isChecked())
        problem = ""
        if documents is not None:
            if self.preview_model is not None:
                self.preview_model.set_roles({documents: "documents"})
            self.problem.hide()
            self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(True)
            return
        if chosen["text_a"] == chosen["text_b"]:
            problem = "Pick two different columns for the two texts."
        elif chosen["label"] in (chosen["text_a"], chosen["text_b"]):
            problem = "The human score cannot be one of the text columns."
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problem)
        if self.preview_model is not None:
            self.preview_model.set_roles({c: ROLES[k] for k, c in reversed(chosen.items()) if c})


class DocumentModeDialog(QDialog):
    """Ask whether plain-text files hold one document per line or one per file.

    With `median_lines` (the files' median non-blank line count) it says why the default was
    chosen: several files of at most `MANY_LINES` lines read as one document per file.
    """

    def __init__(self, parent: QWidget | None = None, *, lines: int | None = None,
                 files: int | None = None, per_file: bool = False, median_lines: float | None = None):
        super().__init__(parent)
        self.setWindowTitle("What is a document?")
        intro = QLabel("How should the plain-text files be split into documents?")
        intro.setWordWrap(True)
        self.per_line_button = QRadioButton("One document per &line" + _count(lines, "line"))
        self.per_file_button = QRadioButton("One document per &file" + _count(files, "file"))
        self.per_line_button.setToolTip("Each non-empty line is compared with every other line")
        self.per_file_button.setToolTip("Each file's whole text is one document")
        self.why = QLabel(_why(files, median_lines))
        self.why.setWordWrap(True)
        self.why.setVisible(bool(self.why.text()))
        group = QButtonGroup(self)
        group.addButton(self.per_line_button)
        group.addButton(self.per_file_button)
        (self.per_file_button if per_file else self.per_line_button).setChecked(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (intro, self.per_line_button, self.per_file_button, self.why, buttons):
            layout.addWidget(widget)
        self.setMinimumWidth(380)

    def per_file(self) -> bool:
        return self.per_file_button.isChecked()


def _why(files: int | None, median_lines: float | None) -> str:
    """Why the default reading was chosen, in words ("" without counts)."""
    if files is None or median_lines is None:
        return ""
    if files <= 1:
        return "One file: each of its lines is taken as a document."
    kind = "many lines" if median_lines > MANY_LINES else "few lines"
    default = "one document per line" if median_lines > MANY_LINES else "one document per file"
    word = "line" if median_lines == 1 else "lines"
    return (f"The files hold a median of {median_lines:g} non-blank {word} each: {kind}, so {default} "
            f"is chosen. Files of at most {MANY_LINES} lines are read as one document each.")


def _count(n: int | None, word: str) -> str:
    return "" if n is None else f" ({n:,} {word}{'' if n == 1 else 's'})"
