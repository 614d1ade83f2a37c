"""Errors the core raises for users to read."""

from __future__ import annotations


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
