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
