"""Where calibsim keeps what it can rebuild: the user cache folder (embeddings, checked
profiles, file digests, the language model's copy, exported graphs)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def default_cache_dir() -> Path:
    """``$CALIBSIM_CACHE_DIR`` if set, else the platform's user cache folder for calibsim."""
    env = os.environ.get("CALIBSIM_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("calibsim", appauthor=False))


def folder_problem(folder) -> str | None:
    """Why `folder` cannot be a cache folder calibsim writes into (it is a file, or cannot be
    created or written to), or None. A missing folder is created (as its first write would)."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        return f"{folder} is a file, not a folder"
    except OSError as exc:
        return f"{folder} cannot be created ({exc.strerror or exc})"
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} cannot be written to"
    return None
