"""How long work reports progress and hears Cancel: the callbacks every long core function takes.

A function stops by raising `calibsim_gui.core.errors.Cancelled` when `ShouldStop` returns True.
"""

from __future__ import annotations

from typing import Callable

Progress = Callable[[int, int, str], None]
"""``progress(done, total, message)``."""
ShouldStop = Callable[[], bool]
"""``should_stop()``: True once the user asked to cancel."""


def progress_stage(progress: Progress | None, name: str, share: float, offset: float) -> Progress | None:
    """A stage's own progress callback that reports into `progress` as the share
    ``[offset, offset + share]`` of one whole (``total`` 1.0), its messages prefixed with `name`."""
    if progress is None:
        return None
    return lambda done, total, message: progress(offset + share * done / max(total, 1), 1.0,
                                                 f"{name}: {message}")
