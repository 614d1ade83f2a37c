"""How the window scores a document set: every pair as a heatmap when its N x N matrices fit the
memory budget, else by neighbours (`document_neighbours`: each text's nearest texts and the set's
most similar pairs, never an N x N matrix), and a refusal, before anything on screen is replaced,
when not even that fits (#39, #42).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.neighbours import (
    MAX_PAIRS,
    DocumentNeighbours,
    document_neighbours,
    plan_neighbours,
)
from calibsim_gui.core.analysis.pairs import ScoredPairs, score_column
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.memory import check_budget, matrix_run_bytes
from calibsim_gui.qt.widgets.messages import failure_message

GROUP_COLUMN = "duplicate group"


@dataclass
class NeighbourPairs(ScoredPairs):
    """A document set scored by neighbours, shown as pairs: `frame` holds the set's most similar
    pairs (near-duplicates first) with raw and calibrated scores, the band where there is one,
    and each pair's duplicate group; `neighbours` holds every text's nearest texts."""

    neighbours: DocumentNeighbours | None = None
    heatmap_limit: int = 0            # the most documents whose heatmap fitted the budget

    @property
    def metric(self) -> str:
        return self.neighbours.metric

    @cached_property
    def document_index(self) -> dict[str, int]:
        """Per document id, its row in `neighbours` (ids, vectors)."""
        return {name: row for row, name in enumerate(self.neighbours.ids)}

    @cached_property
    def _table_rows(self) -> dict[str, tuple[int, int]]:
        """Per document id, its rows (start, end) in the neighbours table."""
        ends = np.cumsum((self.neighbours.hits >= 0).sum(axis=1))
        return {name: (int(end - count), int(end)) for name, end, count
                in zip(self.neighbours.ids, ends, (self.neighbours.hits >= 0).sum(axis=1))}

    def best_matches(self, doc_ids) -> np.ndarray:
        """Per id of `doc_ids`, the calibrated score of its nearest neighbour (NaN: none)."""
        table = self.neighbours.neighbours
        first = table[table["rank"] == 1]
        column = score_column(self.metric, "calibrated", self.neighbours.geometry)
        best = dict(zip(first["doc_id"], first[column].astype(float)))
        return np.array([best.get(name, np.nan) for name in doc_ids], dtype=float)

    def rows_touching(self, doc_ids) -> np.ndarray:
        """The rows of `frame` (listed pairs) with one of `doc_ids` on either side."""
        ids = set(doc_ids)
        frame = self.frame
        return np.flatnonzero(frame["doc_id"].isin(ids).to_numpy() | frame["neighbour_id"].isin(ids).to_numpy())

    def neighbours_of(self, doc_id: str):
        """The rows of the neighbours table of the document `doc_id`, best first."""
        start, end = self._table_rows.get(doc_id, (0, 0))
        return self.neighbours.neighbours.iloc[start:end]


def matrix_fits(n_docs: int, dim: int, budget: int) -> bool:
    """True when a heatmap of `n_docs` documents (their raw and calibrated N x N matrices) fits."""
    try:
        check_budget(matrix_run_bytes(n_docs, dim, 2), budget, what="", fix="")
    except InputError:
        return False
    return True


def largest_heatmap(dim: int, budget: int) -> int:
    """The most documents whose heatmap fits `budget` (for the Heatmap tab's message)."""
    low = 2
    while matrix_fits(low * 2, dim, budget) and low < 10**8:
        low *= 2
    high = low * 2 - 1                                     # low fits, low * 2 does not
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if matrix_fits(middle, dim, budget) else (low, middle - 1)
    return low


def document_refusal(documents, embedder, profile, metric: str, geometry: str, budget: int) -> str | None:
    """Why `documents` cannot be scored inside `budget` (bytes) even by neighbours
    (`plan_neighbours`), worded for the window, or None when they can (or when the model or
    references are not there yet: scoring checks again)."""
    if embedder is None or profile is None:
        return None
    n = len(documents.documents)
    if matrix_fits(n, embedder.dimension, budget):
        return None
    try:
        plan_neighbours(n, embedder.dimension, profile, metric=metric, geometry=geometry, memory_budget=budget)
    except InputError as exc:
        return failure_message(exc)
    return None


def score_documents(documents, embedder, profile, *, metric: str, geometry: str, cache, budget: int,
                    progress, should_stop):
    """A `DocumentMatrix` when the set's heatmap fits `budget`, else `NeighbourPairs`."""
    if matrix_fits(len(documents.documents), embedder.dimension, budget):
        return score_matrix(documents, embedder, profile, metric=metric, forms=("calibrated",),
                            geometry=geometry, cache=cache, progress=progress, should_stop=should_stop,
                            memory_budget=budget)
    found = document_neighbours(documents, embedder, profile, metric=metric, geometry=geometry,
                                cache=cache, progress=progress, should_stop=should_stop,
                                memory_budget=budget, max_pairs=MAX_PAIRS)
    return NeighbourPairs(pair_groups(found), found.provenance, found.notes, found,
                          largest_heatmap(embedder.dimension, budget))


def pair_groups(found: DocumentNeighbours):
    """`found.pairs` with each pair's duplicate group ("group 3"; "" for a pair in none)."""
    if not len(found.groups):
        return found.pairs.assign(**{GROUP_COLUMN: ""})
    group_of = dict(zip(found.groups["doc_id"], found.groups["group"]))
    first = found.pairs["doc_id"].map(group_of)
    same = first.notna() & (first == found.pairs["neighbour_id"].map(group_of))
    names = np.where(same, "group " + first.fillna(0).astype(int).astype(str), "")
    return found.pairs.assign(**{GROUP_COLUMN: names})

