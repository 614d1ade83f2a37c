"""Hubness-aware and norm-aware scores.

In high-dimensional spaces some points ("hubs") are the nearest neighbour of many others, so
they look similar to everything. CSLS (Conneau et al. 2018) corrects a cosine by how similar
each text is to its own neighbourhood in a background corpus:

    csls(x, y) = 2 cos(x, y) - r(x) - r(y),  r(x) = mean cosine of x to its k nearest background texts.

k-occurrence (Radovanović et al. 2010) counts how often each point is among the k nearest
neighbours of the others; its skewness measures hubness.
"""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.geometry.metrics import METRICS

CSLS_NEIGHBOURS = 10


def _cosines(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return METRICS["cosine"].matrix(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64))


def neighbourhood_similarity(x, background, *, k: int = CSLS_NEIGHBOURS,
                             block_rows: int = 1024) -> np.ndarray:
    """r(x): mean cosine of each row of `x` to its `k` nearest rows of `background`.

    Parameters
    ----------
    x : ndarray of shape (n, dim)
    background : ndarray of shape (m, dim); all of it is used when m < k

    Returns
    -------
    ndarray of shape (n,), float64
    """
    k = min(k, len(background))
    out = np.empty(len(x))
    for start in range(0, len(x), block_rows):
        block = _cosines(x[start:start + block_rows], background)
        out[start:start + block_rows] = np.partition(block, -k, axis=1)[:, -k:].mean(axis=1)
    return out


def csls_matrix(cosines, r_rows, r_columns) -> np.ndarray:
    """CSLS of a block of cosines: ``2 cos[i, j] - r_rows[i] - r_columns[j]``."""
    return 2 * np.asarray(cosines) - np.asarray(r_rows)[:, None] - np.asarray(r_columns)[None, :]


def csls_pairs(cosines, r_a, r_b) -> np.ndarray:
    """CSLS of row-aligned pairs: ``2 cos[i] - r_a[i] - r_b[i]``."""
    return 2 * np.asarray(cosines) - np.asarray(r_a) - np.asarray(r_b)


def k_occurrence(embeddings, *, k: int = 10, block_rows: int = 1024) -> np.ndarray:
    """How often each text is among the `k` nearest (cosine) neighbours of the other texts.

    Returns
    -------
    ndarray of shape (n,), int64; it sums to ``n * k``.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    n = len(x)
    if not 0 < k < n:
        raise ValueError(f"k-occurrence needs 0 < k < number of texts ({n}), got k={k}")
    counts = np.zeros(n, dtype=np.int64)
    for start in range(0, n, block_rows):
        block = _cosines(x[start:start + block_rows], x)
        block[np.arange(len(block)), np.arange(start, start + len(block))] = -np.inf   # not itself
        neighbours = np.argpartition(block, -k, axis=1)[:, -k:]
        counts += np.bincount(neighbours.ravel(), minlength=n)
    return counts


def hubness(embeddings, *, k: int = 10) -> float:
    """Skewness of the k-occurrence distribution (0 = no hubs; large positive = strong hubs).

    Needs more than `k` texts (ValueError otherwise). When every text is among the k nearest of
    equally many others (e.g. k + 1 texts), no text is a hub: 0, not the NaN of a zero spread.
    """
    from scipy.stats import skew

    counts = k_occurrence(embeddings, k=k)
    return 0.0 if counts.min() == counts.max() else float(skew(counts))


def norm_view(emb_a, emb_b) -> dict[str, np.ndarray]:
    """Dot product, both vector norms and cosine of row-aligned pairs, side by side.

    For models that do not normalise their embeddings: the dot product mixes length and
    direction (``dot = norm_a * norm_b * cosine``), cosine keeps direction only.
    """
    a, b = np.asarray(emb_a, dtype=np.float64), np.asarray(emb_b, dtype=np.float64)
    return {"dot": np.einsum("ij,ij->i", a, b), "norm_a": np.linalg.norm(a, axis=1),
            "norm_b": np.linalg.norm(b, axis=1), "cosine": METRICS["cosine"].pairs(a, b)}
