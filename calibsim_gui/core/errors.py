"""Errors the core raises for users to read."""

from __future__ import annotations

import errno
import traceback
from pathlib import Path


class CalibsimError(Exception):
    """Base class of every error calibsim reports to a user (never a bug)."""


class InputError(CalibsimError):
    """A file the user handed us cannot be used.

    The message names the file (and the line when known) and says how to fix it.
    """

    def __init__(self, message: str, *, path=None, line: int | None = None, fix: str | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        text = where + message
        if fix:
            text += f" Fix: {fix}"
        super().__init__(text)
        self.path = path
        self.line = line
        self.fix = fix


class ModelError(CalibsimError):
    """A model cannot be found, is unsafe to load, or failed to load."""


class ProfileError(CalibsimError):
    """A reference profile is invalid or does not fit the model in use."""


class NotFittedError(CalibsimError, ValueError):
    """A calibrator was used before `fit` was called."""


class Cancelled(CalibsimError):
    """The user stopped a long run (raised when `should_stop()` returns True)."""


class WriteError(InputError, OSError):
    """The system refused to write an output file (disk full, no permission, read-only, ...).

    Also an `OSError`, so code that guards a write with ``except OSError`` still catches it.
    """


# errno -> what the user can do about it (any other OSError: check the file and the disk)
_OS_FIXES = {
    errno.ENOENT: "check the path",
    errno.EACCES: "give yourself permission to read or write it, or use another folder",
    errno.EPERM: "give yourself permission to read or write it, or use another folder",
    errno.ENOSPC: "free some disk space, or write to another drive",
    errno.EROFS: "write to a folder on a writable drive",
    errno.EISDIR: "name a file, not a folder",
    errno.ENOTDIR: "check the path: one of its folders is a file",
    errno.EMFILE: "close other programs, or raise the limit of open files (ulimit -n)",
    errno.EIO: "check the drive (it may be failing or disconnected), then run again",
}
MEMORY_FIX = ("use a smaller input or fewer pairs, lower the memory budget (--memory-budget) so that "
              "calibsim refuses such runs up front, or free memory (close other programs, or raise "
              "the limit: ulimit -v or the container's memory limit)")


def explain(exc: BaseException, *, files=()) -> str | None:
    """One paragraph for a failure a user can fix, naming the file and the fix; None for a bug.

    Known failures: any `CalibsimError`, `OSError` (the file it names), `MemoryError`, an
    onnxruntime error and a ValueError from fitting a calibrator on degenerate references (the
    command's input `files`, when given, are named).
    """
    inputs = ", ".join(str(f) for f in files)
    where = f" (working on {inputs})" if inputs else ""
    if isinstance(exc, CalibsimError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return f"ran out of memory{' while working on ' + inputs if inputs else ''}. Fix: {MEMORY_FIX}."
    if isinstance(exc, OSError):
        name = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None) or inputs
        reason = exc.strerror or str(exc) or type(exc).__name__
        fix = _OS_FIXES.get(exc.errno, "check the file and the drive it is on, then run again")
        return f"{name + ': ' if name else ''}{reason}. Fix: {fix}."
    first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if type(exc).__module__.startswith("onnxruntime"):
        return (f"The ONNX engine failed{where}: {first_line}. Fix: run with --engine torch, or check "
                "the model folder (its tokenizer, config and onnx/ graph) or use another model.")
    if isinstance(exc, ValueError) and _raised_in(exc, "calibration/calibrators.py"):
        return (f"The references cannot be fitted{where}: {first_line}. Fix: give the reference more "
                "background sentences or pairs (--pairs), or anchors whose levels score apart.")
    return None


def _raised_in(exc: BaseException, path_end: str) -> bool:
    """Whether a frame of `exc`'s traceback runs code of a file whose path ends with `path_end`."""
    return any(Path(frame.filename).as_posix().endswith(path_end)
               for frame in traceback.extract_tb(exc.__traceback__))
