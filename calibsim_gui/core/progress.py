"""How long work reports progress and hears Cancel: the callbacks every long core function takes.

A function stops by raising `calibsim_gui.core.errors.Cancelled` when `ShouldStop` returns True.
"""

from __future__ import annotations

from typing import Callable

Progress = Callable[[int, int, str], None]
"""``progress(done, total, message)``."""
ShouldStop = Callable[[], bool]
"""``should_stop()``: True once the user asked to cancel."""
