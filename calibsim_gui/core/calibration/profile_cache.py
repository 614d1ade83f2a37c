"""Checked profile documents kept in the user cache, so a profile file is parsed and checked once.

Reading a profile's JSON, checking its numbers and content digest and checking the meaning of
every reference takes ~0.5 s of CPU for the built-in profile, on every run. A profile file
never changes under its sha256, so once a document has passed every check its parse is stored
as ``profiles/<file sha256>.npz`` in the cache folder (`default_cache_dir`): the JSON document
with each list of plain floats or ints moved into two flat arrays. An entry holds a sha256 of
everything in it and of the calibsim version that checked it; an entry that fails that checksum,
or was written by another version, is ignored (and replaced by the next full load). Restoring
gives back a document equal to the parsed JSON, so a profile from the cache is the same profile.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np

from calibsim_gui import __version__
from calibsim_gui.core.embedding.cache import default_cache_dir
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io.atomic import atomic_path

TAG = f"calibsim {__version__} checked profile 2"
"""Names the version (and round of checks: 2 added `profile_values`, #43) whose checks an entry
passed: a newer calibsim checks its profiles again."""
_MARK = "\0"
"""Key of a placeholder for a moved list (``{"\\0": [kind, start, stop]}``); documents holding a
key that starts with it are not cached."""
_INT64 = (-(2**63), 2**63 - 1)


def entry_path(file_sha256: str) -> Path:
    """Where the checked document of the profile file with `file_sha256` is kept."""
    return default_cache_dir() / "profiles" / f"{file_sha256}.npz"


def _checksum(file_sha256: str, skeleton: bytes, floats: np.ndarray, ints: np.ndarray) -> bytes:
    h = hashlib.sha256()
    for part in (TAG.encode(), file_sha256.encode(), skeleton, floats.tobytes(), ints.tobytes()):
        h.update(len(part).to_bytes(8, "little") + part)
    return h.digest()


def _split(value, floats: list, ints: list):
    """`value` with each non-empty list of plain floats (or of ints within int64) replaced by a
    placeholder naming its slice of `floats` (`ints`)."""
    if isinstance(value, dict):
        if any(isinstance(key, str) and key.startswith(_MARK) for key in value):
            raise ValueError("the document holds a placeholder key")
        return {key: _split(item, floats, ints) for key, item in value.items()}
    if not isinstance(value, list):
        return value
    if value and all(type(item) is float for item in value):
        floats.extend(value)
        return {_MARK: ["f", len(floats) - len(value), len(floats)]}
    if value and all(type(item) is int and _INT64[0] <= item <= _INT64[1] for item in value):
        ints.extend(value)
        return {_MARK: ["i", len(ints) - len(value), len(ints)]}
    return [_split(item, floats, ints) for item in value]


def _join(value, floats: list, ints: list):
    """The inverse of `_split`, from `floats` and `ints` as Python lists."""
    if isinstance(value, dict):
        place = value.get(_MARK)
        if place is not None:
            kind, start, stop = place
            return (floats if kind == "f" else ints)[start:stop]
        return {key: _join(item, floats, ints) for key, item in value.items()}
    if isinstance(value, list):
        return [_join(item, floats, ints) for item in value]
    return value


def store(file_sha256: str, document: dict) -> None:
    """Keep `document`, the checked parse of the profile file with `file_sha256`. Quietly does
    nothing where the cache cannot be written or the document cannot be split."""
    floats: list[float] = []
    ints: list[int] = []
    try:
        skeleton = json.dumps(_split(document, floats, ints), allow_nan=False).encode("utf-8")
    except (ValueError, TypeError):
        return
    floats_array, ints_array = np.array(floats, dtype=np.float64), np.array(ints, dtype=np.int64)
    checksum = np.frombuffer(_checksum(file_sha256, skeleton, floats_array, ints_array), dtype=np.uint8)
    target = entry_path(file_sha256)
    with contextlib.suppress(OSError, CalibsimError):      # a read-only cache: check each time
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as tmp, open(tmp, "wb") as out:
            np.savez(out, skeleton=np.frombuffer(skeleton, dtype=np.uint8), floats=floats_array,
                     ints=ints_array, checksum=checksum)


def load(file_sha256: str) -> dict | None:
    """The checked document stored for the profile file with `file_sha256`, or None when there is
    none, or it is damaged or from another calibsim version (`TAG`)."""
    try:
        with np.load(entry_path(file_sha256), allow_pickle=False) as data:
            skeleton, floats, ints = data["skeleton"].tobytes(), data["floats"], data["ints"]
            stored = data["checksum"].tobytes()
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if (floats.dtype != np.float64 or ints.dtype != np.int64
            or stored != _checksum(file_sha256, skeleton, floats, ints)):
        return None
    try:
        return _join(json.loads(skeleton), floats.tolist(), ints.tolist())
    except (ValueError, TypeError, KeyError, IndexError):
        return None
