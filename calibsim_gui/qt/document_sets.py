"""How the window scores a document set: what it needs, and whether it fits the memory budget.

A set is checked when it has been read, before it replaces the input on screen: a set that
cannot be scored inside the budget is refused with why and what to do, and the results already
shown stay (#39, #42).
"""

from __future__ import annotations

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.memory import check_budget, matrix_run_bytes
from calibsim_gui.qt.messages import failure_message


def document_refusal(documents, embedder, budget: int) -> str | None:
    """Why `documents` cannot be scored inside `budget` (bytes), worded for the window, or None
    when they can (or when no model is loaded yet: scoring checks again)."""
    if embedder is None:
        return None
    n = len(documents.documents)
    try:
        check_budget(matrix_run_bytes(n, embedder.dimension, 2), budget,
                     what=f"the {n:,} x {n:,} matrix", fix="score fewer documents at a time")
    except InputError as exc:
        return failure_message(exc)
    return None
