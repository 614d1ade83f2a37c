"""Reading a document set's N x N matrix: a clustered order of its documents, the colour range
that shows it, and short labels (the app's heatmap and the report's use the same)."""

from __future__ import annotations

import numpy as np

LABEL_WORDS = 5                  # words of a document's text in its short label
LABEL_CHARS = 34                 # a short label is cut to this many characters
OPTIMAL_ORDER_MAX = 400          # optimal leaf ordering is O(n^3): only for small sets
FORM_BOUNDS = {"calibrated": (0.0, 1.0), "anchor_minmax": (0.0, 1.0), "bg_minmax": (0.0, 1.0),
               "bg_percentile": (0.0, 100.0)}      # bounded forms keep their colour range inside these


def cluster_order(similarity: np.ndarray, *, method: str = "average") -> np.ndarray:
    """The order of the leaves of a hierarchical clustering of the documents.

    Parameters
    ----------
    similarity : ndarray of shape (n, n)
        Scores oriented "higher = more similar" (negate a distance first).
    method : str
        scipy's linkage method ("average" suits similarities).

    Returns
    -------
    ndarray of shape (n,)
        A permutation of ``range(n)`` that puts similar documents next to each other.
    """
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    sim = np.asarray(similarity, dtype=np.float64)
    n = len(sim)
    if n < 3:
        return np.arange(n)
    finite = np.isfinite(sim)
    sim = np.where(finite, sim, np.min(sim[finite]) if finite.any() else 0.0)
    distance = sim.max() - (sim + sim.T) / 2
    np.fill_diagonal(distance, 0.0)
    condensed = squareform(np.clip(distance, 0.0, None), checks=False)
    tree = linkage(condensed, method=method)
    if n <= OPTIMAL_ORDER_MAX:
        tree = optimal_leaf_ordering(tree, condensed)
    return leaves_list(tree)


def similarity_order(matrices: dict, higher_is_similar: bool) -> np.ndarray:
    """`cluster_order` of a document matrix's raw scores, oriented "higher = more similar"."""
    raw = np.asarray(matrices["raw"], dtype=np.float64)
    return cluster_order(raw if higher_is_similar else -raw)


def colour_range(matrix: np.ndarray, form: str) -> tuple[float, float]:
    """The range of the off-diagonal scores (each document with itself would only stretch it),
    kept inside the form's bounds (`FORM_BOUNDS`) for bounded forms."""
    matrix = np.asarray(matrix, dtype=np.float64)
    bounds = FORM_BOUNDS.get(form)
    n = len(matrix)
    off = matrix[~np.eye(n, dtype=bool)] if n > 1 else matrix.ravel()
    off = off[np.isfinite(off)]
    lo, hi = (float(off.min()), float(off.max())) if len(off) else (bounds or (0.0, 1.0))
    if bounds is not None:
        lo, hi = max(lo, bounds[0]), min(hi, bounds[1])
    return (lo, hi) if hi > lo else (lo - 0.5, hi + 0.5)


def short_document_label(doc_id: str, text: str | None = None) -> str:
    """"id · first words": the id without its folders, then the text's first words, cut short."""
    name = doc_id.replace("\\", "/").rsplit("/", 1)[-1]
    if text:
        words = text.split()
        head = " ".join(words[:LABEL_WORDS]) + ("…" if len(words) > LABEL_WORDS else "")
        label = f"{name} · {head}"
    else:
        label = name
    return label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…"
