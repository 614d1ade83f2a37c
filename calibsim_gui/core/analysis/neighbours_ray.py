"""Exact neighbours of a set too large for one machine: block against block on a Ray cluster.

The vectors go into Ray's object store once, a block of rows per object; each task ranks one block
of query rows against a stripe of the blocks, fetched one at a time (`knn.top_hits`, each row's
own column left out), and returns the stripe's top-k with float64 raw scores; the driver merges
the stripes of each query block in a fixed order and keeps the best k. A worker holds two blocks
at a time, whatever the set's size. A pair's score does not depend on the block it was scored in, so the result
equals `top_hits` on one machine, hit for hit (docs/scaling.md: the cost per 10 M texts).
"""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.calibration.cluster import import_ray
from calibsim_gui.core.errors import Cancelled
from calibsim_gui.core.geometry.knn import best_first, neighbour_count, top_hits
from calibsim_gui.core.geometry.metrics import get_metrics

RAY_BLOCK_ROWS = 20_000          # rows of each side of a task's block (20,000 x 20,000 scores)


def _block_against_blocks(queries, first_row: int, corpus_refs: list, corpus_rows: list[int],
                          metric: str, k: int):
    """One task: a block of query rows (the set's rows from `first_row`) ranked against corpus
    blocks fetched one at a time from the object store (`corpus_refs`, starting at `corpus_rows`),
    each row's own column left out; the blocks' best `k` merged in their order. Hits are rows of
    the whole set (-1: none)."""
    import ray

    rows = np.arange(first_row, first_row + len(queries))
    best = None
    for ref, start in zip(corpus_refs, corpus_rows):
        corpus = ray.get(ref)
        own = rows - start
        inside = (own >= 0) & (own < len(corpus))
        hits, raw, _, _ = top_hits(queries, corpus, metric, k, exclude=np.where(inside, own, -1)
                                   if inside.any() else None, ranges=False)
        block = (np.where(hits >= 0, hits + start, -1), raw)
        best = block if best is None else merge_hits(best, block, metric, k)
    return best


def merge_hits(best: tuple[np.ndarray, np.ndarray], block: tuple[np.ndarray, np.ndarray], metric: str,
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best `k` of two ranked hit lists of the same queries (ties: lower row first)."""
    return best_first(np.concatenate([best[0], block[0]], axis=1),
                      np.concatenate([best[1], block[1]], axis=1), get_metrics([metric])[0], k)


def ray_neighbours(vectors: np.ndarray, metric: str, k: int, *, block_rows: int = RAY_BLOCK_ROWS,
                   stripes: int = 1, progress=None, should_stop=None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `k` nearest other rows of `vectors`, exactly, on the Ray instance this process
    is connected to (`ray.init` first). Returns (hits, raw) as `knn.top_hits` does.

    Each block of `block_rows` rows is an object of its own; a task ranks one block against a
    stripe of the blocks (`stripes` per query block: more tasks, more results to merge here)."""
    ray = import_ray()
    n = len(vectors)
    k = neighbour_count(k, n, True)
    starts = list(range(0, n, block_rows))
    refs = [ray.put(np.ascontiguousarray(vectors[start:start + block_rows])) for start in starts]
    task = ray.remote(_block_against_blocks)
    per_stripe = -(-len(starts) // max(1, min(stripes, len(starts))))
    hits, raw = np.empty((n, k), dtype=np.int64), np.empty((n, k))
    pending = {}
    for number, (ref, start) in enumerate(zip(refs, starts)):
        pending[number] = [task.remote(ref, start, refs[s:s + per_stripe], starts[s:s + per_stripe], metric, k)
                           for s in range(0, len(starts), per_stripe)]
    for number, start in enumerate(starts):
        if should_stop is not None and should_stop():
            for ref in (r for tasks in pending.values() for r in tasks):
                ray.cancel(ref)
            raise Cancelled(f"stopped after {start:,} of {n:,} rows")
        best = ray.get(pending[number][0])
        for ref in pending.pop(number)[1:]:      # merged in stripe order, whatever finishes first
            best = merge_hits(best, ray.get(ref), metric, k)
        rows = slice(start, start + block_rows)
        hits[rows], raw[rows] = best
        if progress is not None:
            progress(number + 1, len(starts), f"ranked {min(start + block_rows, n):,} of {n:,} rows on Ray")
    return hits, raw
