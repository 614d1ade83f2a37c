"""The Background panel: gather a corpus, preview its sentences, build and save a profile.

Files are read off the GUI thread (`TaskRunner`); a file that cannot be read leaves the previous
corpus in place and says why. Building the profile itself is the main window's run: this panel
only asks for it (`build_requested`) and shows the profile in use.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QSettings, QStringListModel, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from calibsim_gui.core.calibration.calibrators import MIN_BACKGROUND_PAIRS
from calibsim_gui.core.calibration.profile import SUFFIX
from calibsim_gui.core.embedding.languages import describe as describe_languages
from calibsim_gui.core.embedding.languages import profile_languages
from calibsim_gui.qt.editors.background_files import (
    ask_corpus_files,
    ask_corpus_folder,
    ask_profile_to_open,
    ask_profile_to_save,
    profiles_folder,
)
from calibsim_gui.qt.widgets.messages import BACKGROUND_FIXES, with_window_fixes
from calibsim_gui.qt.widgets.workers import TaskRunner

PREVIEW_ROWS = 500
DEFAULT_PAIRS, MIN_PAIRS, MAX_PAIRS = 20_000, 100, 10_000_000
ENCODINGS = (("auto (UTF-8)", None), ("cp1252 (Windows)", "cp1252"), ("latin-1", "latin-1"),
             ("UTF-16", "utf-16"))
_MESSAGE_STYLE = {
    "error": "background:#fdecea; color:#8a1c1c; border:1px solid #e9a9a4;",
    "info": "background:#e8f1fd; color:#123c6e; border:1px solid #a9c6ec;",
    "warning": "background:#fff3cd; color:#5c4400; border:1px solid #e0c56e;",
}


class BackgroundLoader(QWidget):
    """Background corpus → preview → build request; plus the summary of the profile in use.

    Signals: ``build_requested(DocumentSet, pairs, seed)``, ``profile_open_requested(path)``,
    ``builtin_requested()``. `runner` reads the files (tests wait on its ``finished``).
    """

    build_requested = Signal(object, int, int)
    profile_open_requested = Signal(str)
    builtin_requested = Signal()

    def __init__(self, state, parent: QWidget | None = None, *, memory_budget=None):
        super().__init__(parent)
        self.state = state
        self.memory_budget = memory_budget    # () -> bytes a read may hold; None: the default budget
        self.settings = QSettings("calibsim", "calibsim")
        self.runner = TaskRunner("reading background files", self)
        self._paths: list[Path] = []          # the corpus shown (read without error)
        self._requested: list[Path] = []      # what is being read, or failed to read last
        self._documents = None
        self._building = False
        self.setAcceptDrops(True)
        self._build_ui()
        self.runner.finished.connect(self._loaded)
        self.runner.failed.connect(self._load_failed)
        self.runner.busy.connect(self._loading)
        state.model_changed.connect(self._update)
        state.profile_changed.connect(self._show_profile)
        self._show_corpus()
        self._show_profile()

    # ------------------------------------------------------------------ layout

    def _build_ui(self) -> None:
        icon = self.style().standardIcon
        self.add_files_button = self._button(
            "Add &files…", "Add .txt/.md files (one sentence a line) or .csv/.jsonl files",
            self._choose_files)
        self.add_folder_button = self._button(
            "Add fol&der…", "Add every .txt/.md file in a folder (and its subfolders)",
            self._choose_folder)
        self.remove_button = self._button("&Remove", "Remove the selected files from the corpus "
                                          "(Delete)", self.remove_selected)
        self.clear_button = self._button("C&lear", "Remove every file from the corpus", self.clear)
        self.add_files_button.setIcon(icon(QStyle.StandardPixmap.SP_FileIcon))
        self.add_folder_button.setIcon(icon(QStyle.StandardPixmap.SP_DirIcon))

        self.file_list = QListWidget()
        self.file_list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.file_list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.file_list.setToolTip("Drop files or folders here")
        self.file_list.itemSelectionChanged.connect(self._update)
        QShortcut(QKeySequence.StandardKey.Delete, self.file_list, self.remove_selected,
                  context=Qt.ShortcutContext.WidgetShortcut)

        self.encoding = QComboBox()
        for text, value in ENCODINGS:
            self.encoding.addItem(text, value)
        self.encoding.setToolTip("Encoding of the files; UTF-8 unless they came from Excel or "
                                 "older Windows programs")
        self.encoding.currentIndexChanged.connect(self._reread)
        self.column = QComboBox()
        self.column.setEditable(True)
        self.column.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.column.lineEdit().setPlaceholderText("auto")
        self.column.setToolTip("Column that holds the texts in .csv/.jsonl files: after reading, "
                               "the file's text columns are listed here (found by name when "
                               "left empty)")
        self.column.lineEdit().editingFinished.connect(self._column_edited)
        self.column.activated.connect(self._column_edited)
        self._column_used = ""
        options = QHBoxLayout()
        for text, field, stretch in (("&Encoding:", self.encoding, 0),
                                     ("Text &column:", self.column, 1)):
            label = QLabel(text)
            label.setBuddy(field)
            options.addWidget(label)
            options.addWidget(field, stretch)

        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(10)
        self.progress_label = QLabel()
        self.cancel_button = self._button("Cancel", "Stop reading the files; the previous corpus "
                                          "stays", self._cancel_loading)
        loading = QHBoxLayout()
        loading.addWidget(self.progress_label)
        loading.addWidget(self.progress, 1)
        loading.addWidget(self.cancel_button)
        self._loading_row = QWidget()
        self._loading_row.setLayout(loading)
        self._loading_row.hide()
        loading.setContentsMargins(0, 0, 0, 0)

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)

        self.html_warning = QLabel()
        self.html_warning.setWordWrap(True)
        self.html_warning.setTextFormat(Qt.TextFormat.PlainText)
        self.html_warning.setStyleSheet(f"QLabel {{ {_MESSAGE_STYLE['warning']} padding:6px; }}")
        self.clean_html = QCheckBox("&Clean them before building (decode entities, remove tags)")
        self.clean_html.setToolTip("Decode entities such as &lt; &#39; quot; and remove tags "
                                   "such as <b>; texts left empty or duplicated are dropped")
        self.clean_html.toggled.connect(self._clean_toggled)
        self._html_row = QWidget()
        html_box = QVBoxLayout(self._html_row)
        html_box.setContentsMargins(0, 0, 0, 0)
        html_box.addWidget(self.html_warning)
        html_box.addWidget(self.clean_html)
        self._html_row.hide()
        self._read_documents = self._cleaned = self._leftovers = None

        self.counts = QLabel()
        self.counts.setWordWrap(True)
        self.preview_model = QStringListModel(self)
        self.preview = QListView()
        self.preview.setModel(self.preview_model)
        self.preview.setUniformItemSizes(True)
        self.preview.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.preview.setAlternatingRowColors(True)
        self.preview.setToolTip(f"The sentences the background is drawn from "
                                f"(first {PREVIEW_ROWS})")

        buttons = QHBoxLayout()
        for button in (self.add_files_button, self.add_folder_button, self.remove_button,
                       self.clear_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        corpus = QGroupBox("Background corpus — drop files or folders here")
        column = QVBoxLayout(corpus)
        column.addLayout(buttons)
        column.addWidget(self.file_list, 1)
        column.addLayout(options)
        column.addWidget(self._loading_row)
        column.addWidget(self.message)
        column.addWidget(self._html_row)
        column.addWidget(self.counts)
        column.addWidget(self.preview, 4)

        self.pairs_spin = QSpinBox()
        self.pairs_spin.setRange(MIN_PAIRS, MAX_PAIRS)
        self.pairs_spin.setSingleStep(1000)
        self.pairs_spin.setGroupSeparatorShown(True)
        self.pairs_spin.setValue(int(self.settings.value("background/pairs", DEFAULT_PAIRS)))
        self.pairs_spin.setToolTip("Random sentence pairs whose scores form the background "
                                   "distribution")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(0, 2**31 - 1)
        self.seed_spin.setValue(int(self.settings.value("background/seed", 0)))
        self.seed_spin.setToolTip("Seed of the random pairing; the same seed gives the same pairs")
        self.pairs_spin.valueChanged.connect(self._options_changed)
        self.seed_spin.valueChanged.connect(self._options_changed)
        self.pairs_note = QLabel()
        self.pairs_note.setWordWrap(True)
        self.build_button = self._button("&Build profile", "Encode the corpus with the current "
                                         "model and build a reference profile", self._build)
        build = QGroupBox("Build")
        form = QFormLayout(build)
        form.addRow("&Pairs:", self.pairs_spin)
        form.addRow("&Seed:", self.seed_spin)
        form.addRow(self.pairs_note)
        form.addRow(self.build_button)

        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.save_button = self._button(
            "Sa&ve profile…", f"Save the profile in use as a {SUFFIX} file", self.save_profile)
        self.open_button = self._button("&Open profile…", "Use a saved reference profile",
                                        self._open_profile)
        self.builtin_button = self._button("Use b&uilt-in reference", "Go back to the reference "
                                           "shipped with calibsim", self.builtin_requested.emit)
        in_use = QGroupBox("Profile in use")
        profile_box = QVBoxLayout(in_use)
        scroll = QScrollArea()
        scroll.setWidget(self.summary)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        profile_box.addWidget(scroll, 1)
        for button in (self.save_button, self.open_button, self.builtin_button):
            profile_box.addWidget(button)

        right = QWidget()
        side = QVBoxLayout(right)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(build)
        side.addWidget(in_use, 1)
        splitter = QSplitter()
        splitter.addWidget(corpus)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([600, 400])
        splitter.setChildrenCollapsible(False)
        QVBoxLayout(self).addWidget(splitter)

    def _button(self, text: str, tip: str, slot) -> QPushButton:
        button = QPushButton(text)
        button.setToolTip(tip)
        button.clicked.connect(slot)
        return button

    # ------------------------------------------------------------------ public API

    def documents(self):
        """The `DocumentSet` read from the corpus shown, or None."""
        return self._documents

    def files(self) -> list[str]:
        """The files and folders of the corpus shown, as given."""
        return [str(p) for p in self._paths]

    def pairs(self) -> int:
        return self.pairs_spin.value()

    def seed(self) -> int:
        return self.seed_spin.value()

    def set_options(self, pairs: int, seed: int) -> None:
        self.pairs_spin.setValue(pairs)
        self.seed_spin.setValue(seed)

    def read_options(self) -> dict:
        """How the corpus is read: its encoding and text column (None: the usual ones) and
        whether its HTML is cleaned before building; a project keeps them."""
        return {"encoding": self.encoding.currentData(), "column": self.column.currentText().strip() or None,
                "clean_html": self.clean_html.isChecked()}

    def html_leftovers(self):
        """The HTML leftovers found in the corpus read (falsy: none)."""
        return self._leftovers

    def set_read_options(self, *, encoding=None, column=None, clean_html: bool = False) -> None:
        """Read the next corpus as `read_options` says (a reopened project's choices)."""
        self.encoding.blockSignals(True)
        self.encoding.setCurrentIndex(max(0, self.encoding.findData(encoding)))
        self.encoding.blockSignals(False)
        self.column.setCurrentText(column or "")
        self._column_used = column or ""
        self.clean_html.setChecked(bool(clean_html))

    def set_busy(self, busy: bool) -> None:
        """Disable Build while the main window builds a profile."""
        self._building = busy
        self._update()

    def add_paths(self, paths) -> None:
        """Add files or folders to the corpus and read it again (as a drop does)."""
        base = self._requested if self.runner.running else self._paths
        new = [Path(p) for p in paths]
        if new:
            self._remember_dir(new[0] if new[0].is_dir() else new[0].parent)
        self._read(base + [p for p in dict.fromkeys(new) if p not in base])

    def remove_selected(self) -> None:
        rows = {index.row() for index in self.file_list.selectedIndexes()}
        if rows:
            self._read([p for row, p in enumerate(self._paths) if row not in rows])

    def clear(self) -> None:
        self._read([])

    def save_profile(self) -> None:
        profile = self.state.profile
        if profile is None or not profile.has_background:
            return
        folder = self.settings.value("profiles/last_dir", "") or profiles_folder()
        start = Path(folder, f"{Path(profile.fingerprint.name).name}-background{SUFFIX}")
        path = ask_profile_to_save(self, str(start))
        if not path:
            return
        try:
            profile.save(path)
        except OSError as exc:
            self._say("error", f"Could not save the profile to {path}: {exc.strerror or exc}.")
            return
        self.settings.setValue("profiles/last_dir", str(Path(path).parent))
        self._say("info", f"Saved the profile to {path}.")

    # ------------------------------------------------------------------ drag and drop

    def dragEnterEvent(self, event) -> None:
        if any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.add_paths(paths)

    # ------------------------------------------------------------------ reading

    def _read(self, paths: list[Path]) -> None:
        self._requested = paths
        if not paths:
            self.runner.cancel()
            self._paths, self._documents = [], None
            self._read_documents = self._cleaned = self._leftovers = None
            self._say(None)
            self._show_corpus()
            return
        encoding, column = self.encoding.currentData(), self.column.currentText().strip() or None
        what = "file or folder" if len(paths) == 1 else "files and folders"
        self.progress_label.setText(f"Reading {len(paths)} {what}…")
        from calibsim_gui.core.io.inputs import load_documents

        budget = self.memory_budget() if self.memory_budget else None
        self.runner.start(lambda progress, should_stop: _read_corpus(
            load_documents(paths, column=column, encoding=encoding, memory_budget=budget)))

    def _reread(self) -> None:
        if self._requested or self._paths:
            self._read(self._requested or self._paths)

    def _column_edited(self, *_) -> None:
        if self.column.currentText().strip() != self._column_used:
            self._column_used = self.column.currentText().strip()
            self._reread()

    def choose_column(self, name: str) -> None:
        """Read the corpus again from the text column `name` ("" : found by name)."""
        self.column.setCurrentText(name)
        self._column_edited()

    def _loaded(self, result) -> None:
        documents, self._leftovers, self._cleaned = result
        self._paths, self._read_documents = self._requested, documents
        self._documents = self._cleaned if self.clean_html.isChecked() and self._cleaned else documents
        extra = [n for n in documents.notes[1:] if not n.startswith("dropped ")]
        text = "; ".join(extra)
        self._say("info" if extra else None, text[:1].upper() + text[1:] + ".")
        self._show_columns(documents)
        self._show_html_warning()
        self._show_corpus()

    def _show_columns(self, documents) -> None:
        """List the tables' text columns in the combo and show which one was read."""
        tables = getattr(documents, "text_columns", ())
        typed = self.column.currentText()
        names = list(dict.fromkeys(c for _, _, candidates in tables for c in candidates))
        used = list(dict.fromkeys(u for _, u, _ in tables))
        self.column.blockSignals(True)
        self.column.clear()
        self.column.addItems(names)
        self.column.setCurrentText(typed)
        self.column.blockSignals(False)
        self.column.lineEdit().setPlaceholderText(f"auto: {', '.join(used)}" if used else "auto")

    def _show_html_warning(self) -> None:
        leftovers = self._leftovers
        self._html_row.setVisible(bool(leftovers))
        if leftovers:
            self.html_warning.setText(
                f"⚠ {leftovers.describe()}. Markup embedded as text makes unrelated sentences "
                "look alike, so the background would be biased.")

    def _clean_toggled(self, checked: bool) -> None:
        if self._read_documents is not None:
            self._documents = self._cleaned if checked and self._cleaned else self._read_documents
            self._show_corpus()

    def _load_failed(self, message: str) -> None:
        self._say("error", with_window_fixes(message, BACKGROUND_FIXES) +
                  ("\nThe previous corpus is still in use." if self._paths else ""))
        self._show_corpus()

    def _cancel_loading(self) -> None:
        self.runner.cancel()
        self._requested = self._paths
        self._say("info", "Reading stopped; the previous corpus is still in use.")

    def _loading(self, _busy: bool) -> None:
        self._loading_row.setVisible(self.runner.running)
        self._update()

    # ------------------------------------------------------------------ showing

    def _say(self, kind: str | None, text: str = "") -> None:
        """Show an error or a note above the preview (None hides it)."""
        self.message.setVisible(kind is not None)
        self.message.setText(text)
        self.message.setStyleSheet(f"QLabel {{ {_MESSAGE_STYLE.get(kind, '')} padding:6px; }}")

    def _show_corpus(self) -> None:
        self.file_list.clear()
        icon = self.style().standardIcon
        for path in self._paths:
            kind = "SP_DirIcon" if path.is_dir() else "SP_FileIcon"
            item = QListWidgetItem(icon(getattr(QStyle.StandardPixmap, kind)), str(path))
            item.setToolTip(str(path))
            self.file_list.addItem(item)
        docs = self._documents
        if docs is None:
            self.counts.setText("No corpus yet. Add plain-text files with one sentence a line, "
                                "a folder of them, or a .csv/.jsonl file with a text column.")
            self.preview_model.setStringList([])
        else:
            n = len(docs.documents)
            shown = f"first {PREVIEW_ROWS:,} of {n:,}" if n > PREVIEW_ROWS else f"all {n:,}"
            self.counts.setText(
                f"{_count(n, 'sentence')} from {_count(len(docs.files), 'file')} · "
                f"{_count(docs.n_empty, 'empty line')} dropped · "
                f"{_count(docs.n_duplicates, 'duplicate')} dropped · preview: {shown}")
            self.counts.setToolTip("\n".join(docs.notes))
            self.preview_model.setStringList(docs.texts[:PREVIEW_ROWS])
        self._update()

    def _pairs_note(self) -> str:
        docs = self._documents
        if docs is None:
            return "Add a corpus to build a background."
        n, wanted = len(docs.documents), self.pairs_spin.value()
        if n < 3:
            return "A background needs at least three distinct sentences."
        possible = n * (n - 1) // 2
        usable = min(wanted, possible)
        notes = []
        if possible < wanted:
            notes.append(f"{n:,} sentences give only {possible:,} distinct pairs.")
        if usable < MIN_BACKGROUND_PAIRS:
            notes.append(f"Fewer than {MIN_BACKGROUND_PAIRS:,} pairs: percentiles will be coarse.")
        elif 2 * usable > n:
            notes.append(f"Each sentence is used in about {2 * usable / n:.0f} pairs; more "
                         "sentences give more independent pairs.")
        return " ".join(notes) or f"{usable:,} pairs, no sentence used twice."

    def _update(self) -> None:
        loading = self.runner.running
        self.remove_button.setEnabled(bool(self.file_list.selectedItems()) and not loading)
        self.clear_button.setEnabled(bool(self._paths) and not loading)
        docs = self._documents
        reason = ("Reading files…" if loading else
                  "A profile is being built…" if self._building else
                  "Add a corpus first" if docs is None else
                  "The corpus needs three distinct sentences" if len(docs.documents) < 3 else
                  "Load a model first" if self.state.embedder is None else "")
        self.build_button.setEnabled(not reason)
        self.build_button.setToolTip(reason or "Encode the corpus with the current model and "
                                     "build a reference profile")
        self.pairs_note.setText(self._pairs_note())
        profile = self.state.profile
        self.save_button.setEnabled(profile is not None and profile.has_background)

    def _show_profile(self) -> None:
        profile = self.state.profile
        self._update()
        if profile is None:
            self.summary.setText("<i>No reference profile yet: load a model, or open a saved "
                                 "profile.</i>")
            return
        backgrounds = _backgrounds(profile.provenance)
        files = [f.get("name", "?") for bg in backgrounds for f in bg.get("files", [])]
        shown = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
        rows = [("Model", profile.fingerprint.id),
                ("Anchors", f"{profile.anchors.name} ({len(profile.anchors.pairs)} pairs)"),
                ("Background pairs", f"{profile.background_pairs:,}" if profile.has_background
                 else "none (anchors only)")]
        if backgrounds:
            rows += [("Sentences", f"{sum(bg.get('sentences', 0) for bg in backgrounds):,}"),
                     ("Seed", ", ".join(str(bg.get("seed", "?")) for bg in backgrounds)),
                     ("Files", shown or "not recorded"),
                     ("Languages", describe_languages(profile_languages(profile.provenance)))]
        table = "".join(f"<tr><td style='padding-right:10px'>{k}</td>"
                        f"<td>{html.escape(str(v))}</td></tr>" for k, v in rows)
        warnings = "".join(f"<li>{html.escape(w)}</li>" for w in profile.warnings())
        self.summary.setText(
            f"<b>{html.escape(self.state.profile_label or 'unnamed profile')}</b>"
            f"<table>{table}</table>"
            + (f"<p style='color:#b05a00'><b>Caveats</b></p><ul style='margin-left:-20px'>"
               f"{warnings}</ul>" if warnings else ""))

    # ------------------------------------------------------------------ buttons and settings

    def _choose_files(self) -> None:
        paths = ask_corpus_files(self, self._last_dir())
        if paths:
            self.add_paths(paths)

    def _choose_folder(self) -> None:
        folder = ask_corpus_folder(self, self._last_dir())
        if folder:
            self.add_paths([folder])

    def _open_profile(self) -> None:
        path = ask_profile_to_open(self, self._last_dir())
        if path:
            self._remember_dir(Path(path).parent)
            self.profile_open_requested.emit(path)

    def _build(self) -> None:
        if self.build_button.isEnabled():
            self.build_requested.emit(self._documents, self.pairs_spin.value(),
                                      self.seed_spin.value())

    def _options_changed(self) -> None:
        self.settings.setValue("background/pairs", self.pairs_spin.value())
        self.settings.setValue("background/seed", self.seed_spin.value())
        self.pairs_note.setText(self._pairs_note())

    def _last_dir(self) -> str:
        return str(self.settings.value("background/last_dir", "") or Path.home())

    def _remember_dir(self, folder: Path) -> None:
        self.settings.setValue("background/last_dir", str(folder))


def _read_corpus(documents):
    """In the worker: the documents read, their HTML leftovers and (if any) a cleaned copy."""
    from calibsim_gui.core.io.text_cleaning import clean_documents, find_html_leftovers

    leftovers = find_html_leftovers(documents.texts)
    return documents, leftovers, clean_documents(documents) if leftovers else None


def _count(n: int, word: str) -> str:
    return f"<b>{n:,}</b> {word}{'' if n == 1 else 's'}"


def _backgrounds(provenance: dict) -> list[dict]:
    """The background records of a profile's provenance (several for a merged profile)."""
    if "background" in provenance:
        return [provenance["background"]]
    return [bg for part in provenance.get("merged_from", []) for bg in _backgrounds(part)]
