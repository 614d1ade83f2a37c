"""ONNX graphs that passed the ONNX engine's load checks, remembered by their bytes' sha256.

Opening an ONNX Runtime session on the built-in model's 90 MB graph costs ~0.3 s of CPU, and a
run whose texts are all in the embedding cache never encodes. A graph whose content passed the
checks once (inputs, outputs, a finite probe vector) is recorded with the width of its token
embeddings, as ``onnx-checked/<sha256>.json`` in the cache folder; a later load of the
same bytes opens its session on first encode, where the same checks run again. An entry written
by another calibsim version, or one that cannot be read, counts as absent (the graph is checked
at load as before); one that cannot be written is left out.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from calibsim_gui import __version__
from calibsim_gui.core.embedding.cache_folder import default_cache_dir
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io.atomic import atomic_path

TAG = f"calibsim {__version__} checked onnx graph 1"


def entry_path(graph_sha256: str) -> Path:
    return default_cache_dir() / "onnx-checked" / f"{graph_sha256}.json"


def checked_width(graph_sha256: str) -> int | None:
    """The token-embedding width recorded for the graph with `graph_sha256`, or None when it was
    not checked by this calibsim version."""
    try:
        entry = json.loads(entry_path(graph_sha256).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(entry, dict) and entry.get("tag") == TAG and entry.get("sha256") == graph_sha256):
        return None
    width = entry.get("width")
    return width if type(width) is int and width > 0 else None


def remember(graph_sha256: str, width: int) -> None:
    """Record that the graph with `graph_sha256` passed the load checks, its token embeddings
    `width` wide."""
    target = entry_path(graph_sha256)
    text = json.dumps({"tag": TAG, "sha256": graph_sha256, "width": int(width)})
    with contextlib.suppress(OSError, CalibsimError):      # a read-only cache: checked at each load
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as tmp:
            tmp.write_text(text, encoding="utf-8")
