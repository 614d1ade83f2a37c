"""Reading a document set's N x N matrix: a clustered order of its documents and short labels."""

from __future__ import annotations

import numpy as np

LABEL_WORDS = 5                  # words of a document's text in its short label
LABEL_CHARS = 34                 # a short label is cut to this many characters
OPTIMAL_ORDER_MAX = 400          # optimal leaf ordering is O(n^3): only for small sets


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
