"""Words the window shows: the core's messages worded for the window, counts and durations.

The core's messages name command-line flags (they serve the CLI too); in the window they name
the choices the app offers instead.
"""

from __future__ import annotations

import re
import traceback

from calibsim_gui.core.errors import explain

BACKGROUND_FIXES = {
    "--encoding": "In this window: choose the encoding under Encoding; the files are read again.",
    "--column": "In this window: choose or type the column's name under Text column.",
}
EMPTY_HINT = "Drop a pairs file (CSV/TSV/JSONL) or documents onto the window"     # Results, nothing in it
SEARCH_FIXES = {
    "--metric": "In this window: choose another metric in the Metric list of the Distributions tab.",
    "--top-k": "In this window: lower Top k.",
}

# Most specific first; a flag not listed here is left as it is.
APP_WORDING = (
    (r"fit it again with `calibsim human fit` \(or (File ▸ Fit human calibration)\)", r"fit it again (\1)"),
    (r"e\.g\. --scale 0,5 or --scale 1,5", "e.g. 0,5 or 1,5 when the app asks for the scale"),
    (r"e\.g\. --scale 0,5", "e.g. 0,5"),
    (r" \(or name it with --label\)", " (or pick it when the columns are asked for)"),
    (r"--label-column", "the column of human scores"),
    (r"pass a column of numbers to --label, or leave --label out",
     "pick a column of numbers as human scores, or none"),
    (r"(pick|name) the (two )?text columns with --text-a COL --text-b COL",
     r"\1 the \2text columns in the dialog that asks for them"),
    (r"name two different columns with --text-a COL --text-b COL", "pick two different text columns"),
    (r"name the column that holds the texts with --column COL", "pick the column that holds the texts"),
    (r"--memory-budget, (Settings ▸ )", r"\1"),
    (r"(raise|lower) the memory budget \(--memory-budget\)", r"\1 the memory budget (Settings ▸ Memory budget)"),
    (r"run with --engine torch", "choose the torch engine on the Model tab"),
    (r"background sentences or pairs \(--pairs\)", "background sentences or pairs"),
    (r"use e\.g\. --chunk-overlap (\d+)", r"set Settings ▸ Long texts ▸ Chunk overlap to e.g. \1"),
    (r"use --chunk-overlap below", "set Settings ▸ Long texts ▸ Chunk overlap below"),
    (r"fewer pairs \(--pairs\)", "fewer background pairs"),
    (r"a multilingual model \(--model FOLDER\)", "a multilingual model (Model tab)"),
    (r"or add --force to replace it", "or choose to replace it"),
    (r"choose --metric (\w+)", r"choose the metric \1"),
    (r"choose --form from", "choose a calibrated form from"),
    (r"use --precision (\w+) \(or rebuild", r"choose Precision \1 on the Model tab (or rebuild"),
)


def with_window_fixes(message: str, fixes: dict[str, str]) -> str:
    """`message` followed by the window's way to make each choice it names as a flag."""
    return " ".join([message, *(hint for flag, hint in fixes.items() if flag in message)])


def for_the_app(message: str) -> str:
    """A core message worded for the window: command-line flags become menus and dialogs."""
    for pattern, replacement in APP_WORDING:
        message = re.sub(pattern, replacement, message)
    return message


def failure_message(exc: BaseException) -> str:
    """What the window says about a failed task, by the command line's rule: a failure the user
    can fix (`explain`) is its message; any other is "Unexpected error", its traceback after a
    blank line (`MainWindow.show_error` puts it under Show Details)."""
    known = explain(exc)
    if known is not None:
        return known
    return (f"Unexpected error: {type(exc).__name__}: {exc}\n\n"
            + "".join(traceback.format_exception(exc, limit=6)))


def plural(n: int, word: str, words: str | None = None) -> str:
    """'1 pair', '2 pairs', '1,024 pairs'."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def format_seconds(seconds: float) -> str:
    """'0.4 s', '12 s', '3 min 05 s'."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"
