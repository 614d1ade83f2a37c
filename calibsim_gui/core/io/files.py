"""Reading files users hand us: regular files only, size-checked before a byte is read.

Every reader of user files (inputs, profiles, human calibrations, projects, anchors) goes
through `read_user_bytes` or `read_user_json`, so a FIFO never blocks, a device never streams
forever, and a file too large for its kind is refused from its size alone.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from calibsim_gui.core.errors import InputError

MAX_JSON_BYTES = 64 * 1024**2      # profiles are ~1-5 MB, projects and calibrations far less
NUMBER_LIMIT = 1e100               # no count, score or statistic calibsim saves comes near it


def check_regular_file(path, *, what: str = "file") -> os.stat_result:
    """`os.stat` of `path`, refusing folders, FIFOs, sockets and devices with a message."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such file.", path=path, fix=f"check the path of the {what}.") from None
    except OSError as error:
        raise InputError(f"cannot be read ({error.strerror}).", path=path) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError("is a folder, not a file.", path=path, fix="name a file inside it.")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(info.st_mode)
                else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        raise InputError(f"is {kind}, not a regular file; calibsim reads only saved files.",
                         path=path, fix="save the data to a file first and give that file.")
    return info


_SPLIT_FIX = "split it into smaller files or use a sample of it."


def check_file_size(path, *, limit: int, what: str = "file", fix: str = _SPLIT_FIX) -> int:
    """Size of the regular file `path` (see `check_regular_file`), refused when over `limit`."""
    size = check_regular_file(path, what=what).st_size
    if size > limit:
        raise InputError(f"is {size / 1024**2:,.0f} MiB; {what}s up to "
                         f"{limit / 1024**2:,.0f} MiB are accepted.", path=path, fix=fix)
    return size


def read_user_bytes(path, *, limit: int, what: str = "file", fix: str = _SPLIT_FIX) -> bytes:
    """All bytes of the regular file `path`, refused before reading when over `limit` bytes."""
    path = Path(path)
    check_file_size(path, limit=limit, what=what, fix=fix)
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO after the check, open() does not wait.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InputError("is not a regular file.", path=path,
                                 fix="save the data to a file first and give that file.")
            # read(n) allocates n bytes up front: ask for the file's size, not the limit.
            data = handle.read(min(info.st_size, limit) + 1)
            if len(data) > info.st_size:             # it grew since: read on, up to the limit
                data += handle.read(limit + 1 - len(data))
    except OSError as error:
        raise InputError(f"cannot be read ({error.strerror}).", path=path) from None
    if len(data) > limit:
        raise InputError(f"grew past {limit / 1024**2:,.0f} MiB while it was read.", path=path, fix=fix)
    return data


def number_out_of_range(document, *, limit: float = NUMBER_LIMIT, where: str = "") -> str | None:
    """Where in a parsed JSON `document` the first number beyond ±`limit` is (e.g. ``metrics ›
    cosine › identical``, with the number's first digits), or None when every number is within it.

    JSON allows integers of any length (``1`` and 400 zeros): they parse, then overflow the
    first time they meet a float.
    """
    if isinstance(document, dict):
        items = document.items()
    elif isinstance(document, list):
        if all(type(value) in (int, float) for value in document) and max(map(abs, document), default=0) <= limit:
            return None                    # a list of numbers (most of a profile): one look at its largest
        items = enumerate(document)
    else:
        if type(document) in (int, float) and abs(document) > limit:
            digits = str(document)
            return f"{where or 'the document'} ({digits[:12]}{'…' if len(digits) > 12 else ''})"
        return None
    for key, value in items:
        found = number_out_of_range(value, limit=limit, where=f"{where} › {key}" if where else str(key))
        if found:
            return found
    return None


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is too large")
    return value


def _reject_constant(name: str):
    raise ValueError(f"{name} is not allowed")


def parse_json(text: str):
    """`json.loads` refusing NaN, Infinity and numbers that overflow to infinity (``1e999``)."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


def read_user_json(path, *, what: str, fix: str, limit: int = MAX_JSON_BYTES):
    """The parsed JSON of `path`; anything unreadable raises InputError naming `what` and `fix`."""
    return parse_user_json(read_user_bytes(path, limit=limit, what=what, fix=fix), path, what=what, fix=fix)


def parse_user_json(data: bytes, path, *, what: str, fix: str):
    """The parsed JSON of `data`, the bytes of `path`; anything unreadable raises InputError."""
    try:
        return parse_json(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"not a readable {what} ({exc}).", path=path, fix=fix) from None
