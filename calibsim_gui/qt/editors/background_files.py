"""The Background tab's file dialogs: corpus files and folders to add, profiles to open and save,
and the folder profiles are saved in by default."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from PySide6.QtWidgets import QFileDialog

from calibsim_gui.core.calibration.profile import SUFFIX

CORPUS_FILTER = "Text corpora (*.txt *.md *.csv *.tsv *.tab *.jsonl *.ndjson);;All files (*)"


def ask_corpus_files(parent, start: str) -> list[str]:
    return QFileDialog.getOpenFileNames(parent, "Add background files", start, CORPUS_FILTER)[0]


def ask_corpus_folder(parent, start: str) -> str:
    return QFileDialog.getExistingDirectory(parent, "Add a folder of .txt/.md files", start)


def ask_profile_to_open(parent, start: str) -> str:
    return QFileDialog.getOpenFileName(parent, "Open reference profile", start,
                                       f"calibsim profiles (*{SUFFIX});;All files (*)")[0]


def profiles_folder() -> str:
    """Where profiles are saved unless the user chose a folder before: ``profiles/`` in the
    app's data folder (override: ``CALIBSIM_DATA_DIR``), never an input's folder."""
    folder = Path(os.environ.get("CALIBSIM_DATA_DIR") or platformdirs.user_data_dir("calibsim", appauthor=False))
    try:
        (folder / "profiles").mkdir(parents=True, exist_ok=True)
    except OSError:
        return str(Path.home())
    return str(folder / "profiles")


def ask_profile_to_save(parent, start: str) -> str:
    """A save path ending in the profile suffix; the dialog itself confirms overwriting."""
    dialog = QFileDialog(parent, "Save reference profile", start, f"calibsim profiles (*{SUFFIX})")
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.setDefaultSuffix(SUFFIX.lstrip("."))
    return dialog.selectedFiles()[0] if dialog.exec() else ""
