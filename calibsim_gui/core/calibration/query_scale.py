"""Each text's own scale: how it scores against reference texts, for query z-scores.

A query z-score compares a pair's score with the scores of each of its texts against a sample
of background texts. Only each distinct text's mean and standard deviation over that sample are
needed, so they are computed once per distinct text: in closed form for the metrics that are a
dot product (cosine, dot), and in row blocks on all cores for the others (all of a block's
metrics from one cosine matrix); with an embedding cache they are kept beside the text's
vector, so re-scoring a text costs nothing.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from calibsim_gui.core.geometry.metrics import METRICS, MatrixParts, Metric, Rows


def _bilinear_stats(metric: Metric, vectors: np.ndarray, reference: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd of ``x . r`` over the reference rows r: ``x . mean(r)`` and ``sqrt(x' C x)``."""
    x = metric.bilinear_map(np.asarray(vectors, dtype=np.float64))
    r = metric.bilinear_map(np.asarray(reference, dtype=np.float64))
    centred = r - r.mean(axis=0)
    covariance = centred.T @ centred / len(r)
    variance = np.einsum("ij,ij->i", x @ covariance, x)
    return x @ r.mean(axis=0), np.sqrt(np.maximum(variance, 0.0))


def _row_stats(scores: np.ndarray, higher_is_similar: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each row's mean and standard deviation in the "higher = more similar" view: the bits of
    ``as_similarity(scores).mean(axis=1)`` and ``.std(axis=1)`` (the steps of numpy's std), with
    one sum for both and no negated copy (negating flips a sum's sign exactly)."""
    centre = scores.sum(axis=1, keepdims=True) / scores.shape[1]
    deviations = scores - centre          # not in place: `scores` may be a `MatrixParts` matrix
    np.multiply(deviations, deviations, out=deviations)
    std = np.sqrt(deviations.sum(axis=1) / scores.shape[1])
    return (centre[:, 0] if higher_is_similar else -centre[:, 0]), std


def _matrix_stats(metrics: list[Metric], vectors: np.ndarray, reference: np.ndarray,
                  block_rows: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """`reference_stats` of metrics without a closed form, from their full matrices: in row
    blocks on all cores, each block's metrics from one `MatrixParts` (one cosine matrix for
    all). Blocks are balanced over the cores and hold a multiple of 4 rows where they can
    (BLAS kernels take rows 4 at a time: a row's scores do not depend on the blocking)."""
    n = len(vectors)
    out = [(np.empty(n), np.empty(n)) for _ in metrics]
    reference = Rows(np.asarray(reference, dtype=np.float64)).computed()    # before the threads share it
    workers = os.cpu_count() or 1
    blocks = -(-max(n, 1) // block_rows)
    blocks = -(-blocks // workers) * workers
    size = min(block_rows, 4 * -(-n // (4 * blocks))) or 1

    def block(start: int) -> None:
        rows = slice(start, start + size)
        parts = MatrixParts(np.asarray(vectors[rows], dtype=np.float64), reference)
        for (mean, std), metric in zip(out, metrics):
            mean[rows], std[rows] = _row_stats(metric.from_parts(parts), metric.higher_is_similar)

    # numpy and scipy release the GIL inside the matrix work, so threads use every core
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(block, range(0, n, size)))
    return out


def reference_stats_table(metrics, vectors: np.ndarray, reference: np.ndarray, *,
                          block_rows: int = 1024) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`reference_stats` of each of `metrics`: metric -> (mean, std)."""
    chosen = [METRICS[m] for m in metrics]
    out = {m.name: _bilinear_stats(m, vectors, reference) for m in chosen if m.bilinear_map is not None}
    others = [m for m in chosen if m.bilinear_map is None]
    if others:
        out.update(zip((m.name for m in others), _matrix_stats(others, vectors, reference, block_rows)))
    return {m: out[m] for m in metrics}


def reference_stats(metric: str, vectors: np.ndarray, reference: np.ndarray, *,
                    block_rows: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each vector's similarities to every reference vector.

    Parameters
    ----------
    vectors : ndarray of shape (n, dim)
    reference : ndarray of shape (m, dim)

    Returns
    -------
    mean, std : ndarray of shape (n,), float64, in the "higher = more similar" view.
    """
    return reference_stats_table([metric], vectors, reference, block_rows=block_rows)[metric]


def text_scales(metrics, vectors: np.ndarray, reference: np.ndarray, *, texts=None, cache=None,
                model_key: str = "") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """`reference_stats` of every metric, per row of `vectors` (rounded to float32).

    With an `EmbeddingCache`, the texts of the rows (`texts`, in row order) and the model's
    cache key, the scales are looked up first and the missing ones stored; they are keyed by
    the metrics and a digest of `reference`, so another reference or geometry never reuses them.
    Cached or not, the values are the same: both are rounded to float32.
    """
    metrics = list(metrics)
    reference = np.asarray(reference, dtype=np.float64)
    table = np.empty((len(vectors), 2 * len(metrics)), dtype=np.float32)
    missing = np.arange(len(vectors))
    if cache is not None and texts is not None:
        texts = list(texts)
        digest = hashlib.sha256(reference.tobytes()).hexdigest()[:32]
        key = f"{model_key}|query-scale|{','.join(metrics)}|{digest}"
        found = cache.lookup(key, texts, dimension=2 * len(metrics))
        is_found = np.array([text in found for text in texts], dtype=bool)
        if is_found.any():
            table[is_found] = [found[text] for text, hit in zip(texts, is_found) if hit]
        missing = np.flatnonzero(~is_found)
    if len(missing):
        stats = reference_stats_table(metrics, vectors[missing], reference)
        for k, metric in enumerate(metrics):
            table[missing, 2 * k], table[missing, 2 * k + 1] = stats[metric]
        if cache is not None and texts is not None:
            cache.store(key, [texts[i] for i in missing], table[missing])
    table = table.astype(np.float64)
    return {metric: (table[:, 2 * k], table[:, 2 * k + 1]) for k, metric in enumerate(metrics)}


def pair_zscores(similarity: np.ndarray, scales: tuple[np.ndarray, np.ndarray], first: np.ndarray,
                 second: np.ndarray) -> np.ndarray:
    """Mean of the pair's z-scores on its two texts' scales (`text_scales` of one metric)."""
    mean, std = scales
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((similarity - mean[first]) / std[first] + (similarity - mean[second]) / std[second]) / 2


def query_zscores(metric: str, vectors: np.ndarray, first: np.ndarray, second: np.ndarray,
                  raw: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Pair score as a z-score against each text's own scores with the reference texts.

    For a pair (a, b) the score is compared with the scores of a with every reference text and
    of b with every reference text; the result is the mean of the two z-scores. It says how
    unusual b is *for a* (and a for b): a local, per-query scale.

    Parameters
    ----------
    vectors : ndarray of shape (n_texts, dim)
        Embeddings of the distinct texts.
    first, second : ndarray of shape (n_pairs,), int
        Rows of `vectors` holding each pair's texts.
    raw : ndarray of shape (n_pairs,)
        The pairs' scores in the metric's own orientation.
    """
    scales = text_scales([metric], vectors, reference)[metric]
    return pair_zscores(METRICS[metric].as_similarity(raw), scales, first, second)
