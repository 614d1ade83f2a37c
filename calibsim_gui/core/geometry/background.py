"""Random background pairs: the reference for "how similar are two unrelated texts?".

Two ways to draw them, sharing one pairing rule (`_neighbour_pairs`):

- `random_pairs` shuffles row indices with a seeded generator (diagnostics of an embedding
  matrix);
- `key_pairs` orders texts by a seeded 64-bit key of their *text* (`text_keys`), so the pairs,
  and the query-reference sample (`query_sample`), depend only on the corpus and the seed, never
  on the order of the files or on how a cluster split them into blocks. Profiles are built
  with these, on one machine and on a cluster alike.
"""

from __future__ import annotations

import hashlib
from itertools import count
from typing import Iterable

import numpy as np

DEFAULT_PAIRS = 20_000
QUERY_REFERENCE_SIZE = 1000

PAIR_SCHEME = ("each distinct text keyed by a seeded 64-bit hash of its text (blake2b); pairs are "
               "neighbours in key order, from the smallest key; further rounds (keys re-mixed) "
               "only when the corpus has fewer than 2 x pairs texts; no text twice within a "
               "round, no pair twice; independent of file order and of how the corpus is split")
QUERY_SCHEME = (f"the {QUERY_REFERENCE_SIZE} texts with the smallest query key (the text key "
                "re-mixed), in that order")

_GOLDEN = 0x9E3779B97F4A7C15
_QUERY_SALT = np.uint64(0xD1B54A32D192ED03)


def _neighbour_pairs(orders: Iterable[np.ndarray], n_texts: int, n_pairs: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Pair neighbours (0-1, 2-3, ...) of successive orderings of ``range(n_texts)``.

    Each ordering is one round (no text twice); a pair already drawn is skipped; stops at
    `n_pairs` or at every possible pair.
    """
    if n_texts < 2:
        raise ValueError("a background needs at least two distinct texts")
    n_pairs = int(min(n_pairs, n_texts * (n_texts - 1) // 2))
    seen: set[tuple[int, int]] = set()
    first, second = [], []
    for order in orders:
        if len(first) == n_pairs:
            break
        for i, j in zip(order[0::2].tolist(), order[1::2].tolist()):
            key = (min(i, j), max(i, j))
            if key not in seen:
                seen.add(key)
                first.append(i)
                second.append(j)
                if len(first) == n_pairs:
                    break
    return np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)


def random_pairs(n_texts: int, n_pairs: int = DEFAULT_PAIRS, *, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Indices of `n_pairs` random pairs of distinct rows, drawn with `seed`.

    Each round shuffles all rows and pairs neighbours, so within a round the pairs are disjoint;
    further rounds are drawn only when there are fewer than ``2 * n_pairs`` rows, and a pair is
    never repeated. Returns fewer pairs only when the rows cannot supply them
    (``n_texts * (n_texts - 1) / 2``).

    Returns
    -------
    first, second : ndarray of shape (n_pairs,), int64
    """
    rng = np.random.default_rng(seed)
    return _neighbour_pairs((rng.permutation(n_texts) for _ in count()), n_texts, n_pairs)


def text_keys(texts: Iterable[str], seed: int = 0) -> np.ndarray:
    """A seeded 64-bit key of each text (blake2b of its UTF-8 bytes, keyed with `seed`).

    Equal texts get equal keys, so the key also identifies a text when a corpus is deduplicated
    across machines (distinct texts collide with probability about n^2 / 2^65).

    Returns
    -------
    ndarray of shape (n_texts,), uint64
    """
    salt = str(int(seed)).encode("ascii")
    digests = b"".join(hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=8,
                                       key=salt).digest() for t in texts)
    return np.frombuffer(digests, dtype="<u8").astype(np.uint64)


def _mix(keys: np.ndarray, salt: np.uint64) -> np.ndarray:
    """splitmix64's finaliser of ``keys ^ salt``: a bijection of uint64, so keys stay distinct."""
    z = np.asarray(keys, dtype=np.uint64) ^ salt
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def round_keys(keys: np.ndarray, round_: int) -> np.ndarray:
    """Keys ordering texts in pairing round `round_` (round 0: the text keys themselves)."""
    keys = np.asarray(keys, dtype=np.uint64)
    return keys if round_ == 0 else _mix(keys, np.uint64(_GOLDEN * round_ % 2**64))


def query_keys(keys: np.ndarray) -> np.ndarray:
    """Keys ordering texts for the query-reference sample."""
    return _mix(keys, _QUERY_SALT)


def key_pairs(keys: np.ndarray, n_pairs: int = DEFAULT_PAIRS) -> tuple[np.ndarray, np.ndarray]:
    """Indices of `n_pairs` background pairs of distinct texts with these `text_keys`.

    Round r orders the texts by `round_keys` and pairs neighbours from the smallest key. With
    at least ``2 * n_pairs`` texts only round 0 is used and only the ``2 * n_pairs`` smallest
    keys take part (see `pair_key_limit`), so any subset holding those texts gives the same pairs.

    Returns
    -------
    first, second : ndarray of shape (n_pairs,), int64 (fewer if the texts cannot supply them)
    """
    keys = np.asarray(keys, dtype=np.uint64)
    orders = (np.argsort(round_keys(keys, r), kind="stable") for r in count())
    return _neighbour_pairs(orders, len(keys), n_pairs)


def pair_key_limit(keys: np.ndarray, n_pairs: int = DEFAULT_PAIRS) -> int:
    """Largest text key `key_pairs` can use: texts with larger keys never enter a pair.

    `keys` may be any superset of the ``2 * n_pairs`` smallest distinct keys of the corpus that
    holds every key when the corpus has fewer texts than that.
    """
    keys = np.unique(np.asarray(keys, dtype=np.uint64))
    return int(keys[min(2 * n_pairs, len(keys)) - 1])


def query_sample(keys: np.ndarray, size: int = QUERY_REFERENCE_SIZE) -> np.ndarray:
    """Indices of the `size` texts with the smallest `query_keys`, in that order.

    Returns
    -------
    ndarray of shape (min(size, n_texts),), int64
    """
    order = np.argsort(query_keys(keys), kind="stable")
    return order[:size].astype(np.int64)


def query_key_limit(keys: np.ndarray, size: int = QUERY_REFERENCE_SIZE) -> int:
    """Largest query key of the query-reference sample (`keys`: as for `pair_key_limit`)."""
    chosen = np.unique(query_keys(np.unique(np.asarray(keys, dtype=np.uint64))))
    return int(chosen[min(size, len(chosen)) - 1])
