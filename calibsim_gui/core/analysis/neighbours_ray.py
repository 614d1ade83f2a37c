"""Exact neighbours of a set too large for one machine: block against block on a Ray cluster.

The vectors go into Ray's object store once; each task ranks one block of query rows against one
block of corpus rows (`knn.top_hits`, each row's own column left out) and returns the block's
top-k with float64 raw scores; the driver merges the blocks of each query block in a fixed order
and keeps the best k. A pair's score does not depend on the block it was scored in, so the result
equals `top_hits` on one machine, hit for hit (docs/scaling.md: the cost per 10 M texts).
"""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.calibration.cluster import import_ray
from calibsim_gui.core.errors import Cancelled
from calibsim_gui.core.geometry.knn import neighbour_count, top_hits
from calibsim_gui.core.geometry.metrics import get_metrics

RAY_BLOCK_ROWS = 20_000          # rows of each side of a task's block (20,000 x 20,000 scores)


def _block_against_block(vectors, queries: slice, corpus: slice, metric: str, k: int):
    """One task: the rows `queries` of `vectors` ranked against its rows `corpus`; each row's own
    column, where it lies in `corpus`, left out. Hits are rows of `vectors` (-1: none)."""
    rows = np.arange(queries.start, min(queries.stop, len(vectors)))
    own = rows - corpus.start
    inside = (own >= 0) & (own < min(corpus.stop, len(vectors)) - corpus.start)
    exclude = np.where(inside, own, -1) if inside.any() else None
    hits, raw, _, _ = top_hits(vectors[queries], vectors[corpus], metric, k, exclude=exclude, ranges=False)
    return np.where(hits >= 0, hits + corpus.start, -1), raw


def merge_hits(best: tuple[np.ndarray, np.ndarray], block: tuple[np.ndarray, np.ndarray], metric: str,
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best `k` of two ranked hit lists of the same queries (ties: lower row first)."""
    hits = np.concatenate([best[0], block[0]], axis=1)
    raw = np.concatenate([best[1], block[1]], axis=1)
    found = hits >= 0
    similarity = np.where(found, get_metrics([metric])[0].as_similarity(raw), -np.inf)
    order = np.lexsort((np.where(found, hits, np.iinfo(np.int64).max), -similarity), axis=1)[:, :k]
    return np.take_along_axis(hits, order, axis=1), np.take_along_axis(raw, order, axis=1)


def ray_neighbours(vectors: np.ndarray, metric: str, k: int, *, block_rows: int = RAY_BLOCK_ROWS,
                   progress=None, should_stop=None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `k` nearest other rows of `vectors`, exactly, on the Ray instance this process
    is connected to (`ray.init` first). Returns (hits, raw) as `knn.top_hits` does."""
    ray = import_ray()
    n = len(vectors)
    k = neighbour_count(k, n, True)
    shared = ray.put(np.ascontiguousarray(vectors))
    task = ray.remote(_block_against_block)
    blocks = [slice(start, start + block_rows) for start in range(0, n, block_rows)]
    hits, raw = np.empty((n, k), dtype=np.int64), np.empty((n, k))
    for number, queries in enumerate(blocks):
        if should_stop is not None and should_stop():
            raise Cancelled(f"stopped after {queries.start:,} of {n:,} rows")
        pending = [task.remote(shared, queries, corpus, metric, k) for corpus in blocks]
        best = ray.get(pending[0])
        for ref in pending[1:]:                  # merged in block order, whatever finishes first
            best = merge_hits(best, ray.get(ref), metric, k)
        hits[queries], raw[queries] = best
        if progress is not None:
            progress(number + 1, len(blocks), f"ranked {min(queries.stop, n):,} of {n:,} rows on Ray")
    return hits, raw
