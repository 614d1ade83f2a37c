"""sha256 of files, remembered by their stat data in memory and in the user cache folder.

Hashing a model's weights costs ~0.1 s on every run (90 MB for the built-in model). As git's
index does, a digest is trusted again while the file's stat data is unchanged: its real path,
device, inode, size, mtime and ctime (ns). Rewriting a file's bytes changes its ctime even when
its mtime is put back (``os.utime``), so the file is hashed again. A digest taken within
`RACY_SECONDS` of the file's last change is not remembered (a change within the timestamps'
granularity could keep them): such a file is hashed on every run until it has been quiet.

The digests live in `STORE_NAME` in the cache folder, written atomically; a damaged or
unreadable store is ignored (files are hashed again) and one that cannot be written is left
as it is, never an error. On Windows, where ``st_ctime`` is the creation time (a rewrite keeps
it), digests are remembered for the process only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import time
from pathlib import Path

from calibsim_gui.core.embedding.cache_folder import default_cache_dir
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io.atomic import atomic_path

STORE_NAME = "file-digests.json"
RACY_SECONDS = 2.0
"""A digest is remembered only for a file whose mtime and ctime are this much older than the hash."""
MAX_FILES = 4096
"""Files the store remembers; the ones hashed longest ago are forgotten first."""
PERSISTED = os.name != "nt"
"""Whether digests are kept in the store (ctime is the last change of the file's inode)."""
_TAG = "calibsim file digests 1"
_SHA256 = re.compile(r"[0-9a-f]{64}")

_lock = threading.Lock()
_stores: dict[Path, dict[str, tuple[list[int], str]]] = {}
"""Each store read so far (by its path): real path -> (stat data, sha256)."""


def hash_file(path) -> str:
    """The sha256 of `path`'s bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path) -> str:
    """The sha256 of `path`'s bytes (see `file_sha256s`)."""
    return file_sha256s([path])[0]


def file_sha256s(paths) -> list[str]:
    """The sha256 of each file of `paths`, taken from the store while its stat data is the
    one recorded with it, else hashed (and remembered unless it changed too recently).

    Raises
    ------
    OSError
        When a file cannot be read.
    """
    store = default_cache_dir() / STORE_NAME
    with _lock:
        known = _stores.get(store)
        if known is None:
            known = _stores[store] = _read(store)
    digests, new = [], {}
    for path in paths:
        real = os.path.realpath(path)
        st = os.stat(real)
        stat = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
        entry = known.get(real)
        if entry is not None and entry[0] == stat:
            digests.append(entry[1])
            continue
        digest = hash_file(real)
        digests.append(digest)
        if time.time() - max(st.st_mtime_ns, st.st_ctime_ns) / 1e9 > RACY_SECONDS:
            new[real] = (stat, digest)
    if new:
        _remember(store, known, new)
    return digests


def _read(store: Path) -> dict[str, tuple[list[int], str]]:
    """The well-formed entries of `store`; none when it is absent, damaged or of another kind."""
    if not PERSISTED:
        return {}
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) and data.get("tag") == _TAG else None
    if not isinstance(files, dict):
        return {}
    return {real: (entry[0], entry[1]) for real, entry in files.items()
            if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
            and len(entry[0]) == 5 and all(type(n) is int for n in entry[0])
            and isinstance(entry[1], str) and _SHA256.fullmatch(entry[1])}


def _remember(store: Path, known: dict, new: dict) -> None:
    """Add `new` to `known` and write them with the entries other processes stored meanwhile."""
    with _lock:
        merged = {**_read(store), **known}
        for real, entry in new.items():
            merged.pop(real, None)
            merged[real] = entry               # the newest last: the oldest are dropped first
        merged = dict(list(merged.items())[-MAX_FILES:])
        known.clear()
        known.update(merged)
        if not PERSISTED:
            return
        text = json.dumps({"tag": _TAG, "files": {real: list(entry) for real, entry in merged.items()}})
        with contextlib.suppress(OSError, CalibsimError):     # a read-only cache: hash each time
            store.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(store) as tmp:
                tmp.write_text(text, encoding="utf-8")
