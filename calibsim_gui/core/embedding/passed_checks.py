"""Checks that files passed, remembered by the sha256 of their bytes, so that unchanged files are
not checked again on every run.

Opening an ONNX Runtime session to check the built-in model's 90 MB graph costs ~0.3 s of CPU
(and a run whose texts are all in the embedding cache never encodes); checking a model folder's
tokenizer against its config ~0.07 s. Once files pass, a record names the check (``kind``) and
what it found, as ``checked/<kind>-<sha256>.json`` in the cache folder. A record written by
another calibsim version, or one that cannot be read, counts as absent (the check runs again);
one that cannot be written is left out.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from calibsim_gui import __version__
from calibsim_gui.core.embedding.cache_folder import default_cache_dir
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io.atomic import atomic_path

TAG = f"calibsim {__version__} passed check 1"


def entry_path(kind: str, sha256: str) -> Path:
    return default_cache_dir() / "checked" / f"{kind}-{sha256}.json"


def recorded(kind: str, sha256: str) -> dict | None:
    """What the check `kind` found for the files with digest `sha256`, or None when they did not
    pass it under this calibsim version."""
    try:
        entry = json.loads(entry_path(kind, sha256).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(entry, dict) and entry.get("tag") == TAG and entry.get("sha256") == sha256
            and isinstance(entry.get("found"), dict)):
        return None
    return entry["found"]


def remember(kind: str, sha256: str, found: dict) -> None:
    """Record that the files with digest `sha256` passed the check `kind`, which found `found`."""
    target = entry_path(kind, sha256)
    text = json.dumps({"tag": TAG, "sha256": sha256, "found": found})
    with contextlib.suppress(OSError, CalibsimError):      # a read-only cache: checked on every run
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as tmp:
            tmp.write_text(text, encoding="utf-8")
