"""Pairs of a document set by number: the rows the Results table, the heatmap and the Map share."""

from __future__ import annotations

import numpy as np


def pair_row(n: int, a, b):
    """The number of the pair of documents `a` and `b` (any order, a != b) of a set of `n`, as
    ``np.triu_indices(n, k=1)`` lists the pairs (the document-set Results rows); arrays of
    documents give an array of numbers."""
    a, b = np.minimum(a, b), np.maximum(a, b)
    row = a * n - a * (a + 1) // 2 + (b - a - 1)
    return int(row) if np.ndim(row) == 0 else row


def pairs_among(n: int, documents) -> np.ndarray:
    """The numbers (`pair_row`, ascending) of every pair of two of `documents` in a set of `n`."""
    chosen = np.unique(np.asarray(documents, dtype=np.int64))
    a, b = np.triu_indices(len(chosen), k=1)
    return np.sort(pair_row(n, chosen[a], chosen[b]))


def document_pair(n: int, row: int) -> tuple[int, int]:
    """The documents (a, b), a < b, of pair number `row` of a set of `n` (inverse of `pair_row`)."""
    starts = np.arange(n) * n - np.arange(n) * (np.arange(n) + 1) // 2
    a = int(np.searchsorted(starts, row, side="right")) - 1
    return a, int(row - starts[a] + a + 1)
