"""Every pair of a document set as table columns, without a Python object per pair.

A set of 2,000 documents has about 2 million pairs: the Results table reads them through
`IndexedTexts` (a document's name or text, looked up by the pair's document number when a cell
is drawn) and one float array per score column, gathered from the N x N matrices at once.
Pairs are numbered as ``np.triu_indices(n, k=1)`` lists them (`session.selection.pair_row`).
"""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import score_column


class IndexedTexts:
    """A text column stored as distinct `values` and, per row, the number of its value
    (`index`; None: row i holds value i)."""

    def __init__(self, values, index: np.ndarray | None = None):
        self.values = np.asarray(values, dtype=object)
        self.index = index

    def __len__(self) -> int:
        return len(self.values) if self.index is None else len(self.index)

    def __getitem__(self, row) -> str:
        return self.values[row if self.index is None else self.index[row]]

    def per_row(self, per_value: np.ndarray) -> np.ndarray:
        """A value-wise array (a mask, a rank) spread to the rows."""
        return per_value if self.index is None else per_value[self.index]


def document_pair_columns(results: DocumentMatrix, form: str) -> dict[str, object]:
    """Columns of every pair of distinct documents: "doc a", "doc b", "text a", "text b" (when the
    texts are known) as `IndexedTexts`, then the raw scores and `form`'s as float arrays."""
    n = len(results.ids)
    a, b = (side.astype(np.int32) for side in np.triu_indices(n, k=1))
    columns: dict[str, object] = {"doc a": IndexedTexts(results.ids, a), "doc b": IndexedTexts(results.ids, b)}
    if len(results.texts) == n:
        columns["text a"] = IndexedTexts(results.texts, a)
        columns["text b"] = IndexedTexts(results.texts, b)
    metric, geometry = results.metric, results.geometry
    for shown in ("raw",) if form == "raw" else ("raw", form):
        columns[score_column(metric, shown, geometry)] = np.asarray(results.matrices[shown][a, b], dtype=np.float32)
    return columns
