"""Random background pairs: the reference for "how similar are two unrelated texts?"."""

from __future__ import annotations

import numpy as np

DEFAULT_PAIRS = 20_000


def random_pairs(n_texts: int, n_pairs: int = DEFAULT_PAIRS, *, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Indices of `n_pairs` random pairs of distinct texts, drawn with `seed`.

    Each round shuffles all texts and pairs neighbours, so within a round the pairs are disjoint
    (no text is used twice); further rounds are drawn only when the corpus has fewer than
    ``2 * n_pairs`` texts, and a pair is never repeated. Returns fewer pairs only when the corpus
    cannot supply them (``n_texts * (n_texts - 1) / 2``).

    Returns
    -------
    first, second : ndarray of shape (n_pairs,), int64
    """
    if n_texts < 2:
        raise ValueError("a background needs at least two distinct texts")
    n_pairs = int(min(n_pairs, n_texts * (n_texts - 1) // 2))
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, int]] = set()
    first, second = [], []
    while len(first) < n_pairs:
        order = rng.permutation(n_texts)
        for i, j in zip(order[0::2], order[1::2]):
            key = (min(i, j), max(i, j))
            if key not in seen:
                seen.add(key)
                first.append(i)
                second.append(j)
                if len(first) == n_pairs:
                    break
    return np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
