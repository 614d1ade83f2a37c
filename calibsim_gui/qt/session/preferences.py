"""The Settings menu's choices, kept in `QSettings`: the memory budget and how long texts are scored."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths
from PySide6.QtWidgets import QInputDialog

from calibsim_gui.core.embedding.chunking import DEFAULT_CHUNK_OVERLAP, MAX_CHUNK_OVERLAP
from calibsim_gui.core.io.memory import default_budget, format_size, physical_memory

MEMORY_BUDGET_KEY = "memory/budget_bytes"     # 0 or absent: the default budget
LONG_TEXTS_KEY = "scoring/long_texts"          # "truncate" (default), "chunk:match", "chunk:max", "chunk:mean"
CHUNK_OVERLAP_KEY = "scoring/chunk_overlap"    # tokens shared by neighbouring chunks
LONG_TEXT_CHOICES = (
    ("truncate", "&Truncate: score the beginning, mark the pair",
     "The model sees only its first tokens (256 for the built-in model); the pair is marked in "
     "the 'truncated' column"),
    ("chunk:match", "Split into chunks, score each chunk's best &match, averaged both ways",
     "Encode every chunk of a long text; identical texts score as identical and a changed passage "
     "lowers the score"),
    ("chunk:max", "Split into chunks, score the &best chunk pair (max)",
     "Encode every chunk of a long text; the pair scores its most similar chunk pair"),
    ("chunk:mean", "Split into chunks, score the &mean over chunk pairs",
     "Encode every chunk of a long text; the pair scores the mean over its chunk pairs"),
)


def user_folder(settings, key: str) -> str:
    """The folder remembered under `key`, else the user's Documents (their home when the system
    names none): never the program's folder or an input's unless the user chose it."""
    documents = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return str(settings.value(key, "") or documents or Path.home())


class Preferences(QObject):
    """Reads and asks for the Settings menu's choices; a new long-text choice scores again."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.settings = window.settings

    def memory_budget(self) -> int:
        """Bytes one run may hold: the user's setting, else the default budget."""
        return int(self.settings.value(MEMORY_BUDGET_KEY, 0, type=int)) or default_budget()

    def set_memory_budget(self, n_bytes: int | None) -> None:
        """Remember the budget (None: back to the default) and show it in the status bar."""
        self.settings.setValue(MEMORY_BUDGET_KEY, int(n_bytes or 0))
        self.show_memory_budget()

    def show_memory_budget(self) -> None:
        chosen = self.settings.value(MEMORY_BUDGET_KEY, 0, type=int)
        self.window.memory_label.setText(f"Memory budget {format_size(self.memory_budget())}"
                                         + ("" if chosen else " (default)"))

    def choose_memory_budget(self) -> None:
        total = physical_memory()
        gigabytes, ok = QInputDialog.getDouble(
            self.window, "Memory budget",
            f"Most memory one run may hold, in GB (this computer has {format_size(total)}).\n"
            "0 restores the default, half of it.",
            self.settings.value(MEMORY_BUDGET_KEY, 0, type=int) / 1e9, 0.0, total / 1e9, 1)
        if ok:
            self.set_memory_budget(int(gigabytes * 1e9) or None)

    def long_text_setting(self) -> str:
        """The remembered long-text choice: "truncate", "chunk:match", "chunk:max" or "chunk:mean"."""
        value = str(self.settings.value(LONG_TEXTS_KEY, "truncate"))
        return value if value in {key for key, _, _ in LONG_TEXT_CHOICES} else "truncate"

    def long_text_options(self) -> dict:
        """Keyword options of `Scorer` for texts past the model's max length."""
        mode, _, aggregate = self.long_text_setting().partition(":")
        overlap = self.settings.value(CHUNK_OVERLAP_KEY, DEFAULT_CHUNK_OVERLAP, type=int)
        return {"long_texts": mode, "chunk_aggregate": aggregate or "match",
                "chunk_overlap": int(min(max(overlap, 0), MAX_CHUNK_OVERLAP))}

    def set_long_texts(self, choice: str, *, rescore: bool = True) -> None:
        """Remember how long texts are scored and score the input again (`rescore` False: the
        caller scores next, as a reopened project does)."""
        if choice not in {key for key, _, _ in LONG_TEXT_CHOICES}:
            raise ValueError(f"unknown long-text choice {choice!r}")
        changed = choice != self.long_text_setting()
        self.settings.setValue(LONG_TEXTS_KEY, choice)
        for action in self.window.long_text_actions.actions():
            action.setChecked(action.data() == choice)
        if changed and rescore:
            self.window.session.rescore()

    def restore_long_texts(self, options: dict) -> None:
        """Score long texts as `long_text_options` gave (a reopened project's choice)."""
        mode = options.get("long_texts", "truncate")
        self.set_long_texts(mode if mode == "truncate" else f"{mode}:{options.get('chunk_aggregate', 'match')}",
                            rescore=False)
        if "chunk_overlap" in options:
            self.settings.setValue(CHUNK_OVERLAP_KEY, int(options["chunk_overlap"]))

    def choose_chunk_overlap(self) -> None:
        overlap, ok = QInputDialog.getInt(
            self.window, "Chunk overlap", "Tokens shared by neighbouring chunks of a long text\n"
            "(used when long texts are split into chunks):",
            self.long_text_options()["chunk_overlap"], 0, MAX_CHUNK_OVERLAP)
        if ok:
            self.settings.setValue(CHUNK_OVERLAP_KEY, overlap)
            if self.long_text_options()["long_texts"] == "chunk":
                self.window.session.rescore()
