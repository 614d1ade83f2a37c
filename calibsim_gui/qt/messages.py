"""Where a window takes the choices that the core's error messages name as command-line flags."""

from __future__ import annotations

BACKGROUND_FIXES = {
    "--encoding": "In this window: choose the encoding under Encoding; the files are read again.",
    "--column": "In this window: choose or type the column's name under Text column.",
}
SEARCH_FIXES = {
    "--metric": "In this window: choose another metric in the Metric list of the Distributions tab.",
    "--top-k": "In this window: lower Top k.",
}


def with_window_fixes(message: str, fixes: dict[str, str]) -> str:
    """`message` followed by the window's way to make each choice it names as a flag."""
    return " ".join([message, *(hint for flag, hint in fixes.items() if flag in message)])
