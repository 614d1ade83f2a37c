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


class ProgressBar:
    """A `Progress` callback drawn as a tqdm bar (`tqdm.auto`: a widget in a notebook, text on
    stderr in a terminal); nothing with `quiet`. `close()` ends the bar."""

    def __init__(self, quiet: bool = False, desc: str = "encoding"):
        self.quiet, self.desc, self.bar = quiet, desc, None

    def __call__(self, done: int, total: int, message: str) -> None:
        if self.quiet or total == 0:
            return
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=done, desc=self.desc)
            return
        if total != self.bar.total:             # the next stage of the run
            self.bar.reset(total=total)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
