"""A 2-D map of the texts of an input: their embeddings projected by PCA (or t-SNE), and what a map needs.

The texts of a pair list (both sides, each distinct text once) or of a document set are
encoded through the cache (`encode_texts`), and their embeddings projected on their two
principal directions. PCA is exact, deterministic and instant at 50,000 texts (one d x d
covariance), and needs no library beyond numpy: it is the first view. t-SNE (scikit-learn,
already a dependency: 0 MB more in the bundle) keeps neighbourhoods rather than variance, on a
sample of at most `TSNE_SAMPLE` texts. The map also answers the questions its view
asks: which points lie inside a drawn shape, which pairs touch them, and a point's (or a typed
query's) nearest texts with raw and calibrated scores.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from calibsim_gui.core.geometry.knn import top_hits
from calibsim_gui.core.geometry.metrics import Rows
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.errors import Cancelled, InputError

TSNE_SAMPLE = 2000          # t-SNE runs on at most this many texts; the others are placed by their neighbours
TSNE_DIMS = 50              # t-SNE reads the texts' first principal components, not all dimensions
PLACE_NEIGHBOURS = 5


@dataclass(frozen=True)
class Projection:
    """Points on a 2-D map.

    Attributes
    ----------
    coords : ndarray of shape (n_points, 2), float32
    explained : ndarray of shape (2,)
        PCA: share of the total variance along each of the two directions (0 to 1); t-SNE: zeros.
    method : str
        "PCA" or "t-SNE".
    """

    coords: np.ndarray
    explained: np.ndarray
    method: str = "PCA"


def principal_components(vectors, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """`vectors` (n, d) on their `keep` directions of largest variance: ``(coords, explained)``.

    Centred, then the eigenvectors of the d x d covariance (one float32 pass over the data;
    `benchmarks/map_projection.py` measures it at 5,000 and 50,000 texts). Each direction's sign
    is fixed so that its largest loading is positive: the same input always draws the same
    picture. Fewer points or directions than `keep` give zeros where a direction is missing.
    """
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array, not of shape {x.shape}")
    n, dim = x.shape
    coords = np.zeros((n, keep), dtype=np.float32)
    explained = np.zeros(keep)
    if n < 2 or dim == 0:
        return coords, explained
    x = x - x.mean(axis=0, dtype=np.float64).astype(np.float32)
    covariance = (x.T @ x).astype(np.float64) / (n - 1)       # float32 product: half the time and memory
    values, directions = np.linalg.eigh(covariance)            # ascending
    found = min(keep, dim)
    values, directions = values[::-1][:found], directions[:, ::-1][:, :found]
    largest = np.abs(directions).argmax(axis=0)
    directions = directions * np.sign(directions[largest, np.arange(found)])
    coords[:, :found] = x @ directions.astype(np.float32)
    total = float(np.trace(covariance))
    if total > 0:
        explained[:found] = np.clip(values, 0, None) / total
    return coords, explained


def pca_2d(vectors) -> Projection:
    """Project `vectors` (n, d) on their two directions of largest variance (`principal_components`)."""
    return Projection(*principal_components(vectors, 2))


def one_thread(function):
    """`function` with numpy's and scikit-learn's thread pools held to one thread while it runs:
    the map's worker leaves the other cores to the window, and on a busy machine many threads
    waiting for each other are several times slower than one."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return function(*args, **kwargs)
    return run


@one_thread
def tsne_2d(vectors, *, sample: int = TSNE_SAMPLE, seed: int = 0, progress=None,
            should_stop=None) -> Projection:
    """A t-SNE map (scikit-learn, Barnes-Hut) of `vectors`: neighbours stay together.

    t-SNE runs on the first `TSNE_DIMS` principal components of at most `sample` texts (drawn at
    random with `seed`); every other text is placed at the mean position of its
    `PLACE_NEIGHBOURS` nearest sampled texts. Fewer than 5 texts give the PCA map.

    Raises
    ------
    Cancelled
        When `should_stop()` returned True between stages (reducing, t-SNE, placing).
    """
    from sklearn.manifold import TSNE

    say = progress or (lambda done, total, message: None)
    x = np.asarray(vectors, dtype=np.float32)
    n = len(x)
    if n < 5:
        return pca_2d(x)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    reduced, _ = principal_components(x / np.where(norms > 0, norms, 1), min(TSNE_DIMS, x.shape[1]))
    stop_if_asked(should_stop)
    chosen = np.sort(np.random.default_rng(seed).choice(n, min(n, sample), replace=False))
    say(1, 3, f"t-SNE of {len(chosen):,} texts")
    tsne = TSNE(perplexity=min(30.0, (len(chosen) - 1) / 3), init="pca", random_state=seed, max_iter=500)
    coords = np.zeros((n, 2), dtype=np.float32)
    coords[chosen] = tsne.fit_transform(reduced[chosen])
    stop_if_asked(should_stop)
    rest = np.setdiff1d(np.arange(n), chosen)
    say(2, 3, f"placing {len(rest):,} other texts by their neighbours")
    anchors = reduced[chosen]
    squared = (anchors ** 2).sum(axis=1)
    for start in range(0, len(rest), 2000):
        part = rest[start:start + 2000]
        distances = squared[None, :] - 2 * reduced[part] @ anchors.T
        near = np.argpartition(distances, PLACE_NEIGHBOURS - 1, axis=1)[:, :PLACE_NEIGHBOURS]
        coords[part] = coords[chosen[near]].mean(axis=1)
        stop_if_asked(should_stop)
    return Projection(coords, np.zeros(2), "t-SNE")


def stop_if_asked(should_stop) -> None:
    """Raise `Cancelled` when `should_stop` (None: never) returns True."""
    if should_stop is not None and should_stop():
        raise Cancelled("stopped")


def points_in_polygon(coords, polygon) -> np.ndarray:
    """Per point of `coords` (n, 2): is it inside `polygon` (m, 2 vertices, closed implicitly)?

    Even-odd rule, one vectorised pass per edge (a lasso of a few hundred vertices over 50,000
    points is a few milliseconds). A rectangle is a polygon of 4 vertices.
    """
    points = np.asarray(coords, dtype=np.float64).reshape(-1, 2)
    shape = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    inside = np.zeros(len(points), dtype=bool)
    if len(shape) < 3:
        return inside
    x, y = points[:, 0], points[:, 1]
    for (x1, y1), (x2, y2) in zip(shape, np.roll(shape, -1, axis=0)):
        if y1 == y2:
            continue
        crosses = (y1 > y) != (y2 > y)
        at = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= crosses & (x < at)
    return inside


@dataclass
class TextMap:
    """The texts of an input as points: their vectors, 2-D positions and the pairs between them.

    Attributes
    ----------
    texts : list of str
        One per point, each distinct.
    ids : list of str
        What a person calls each point: a document id, or the first pair row (1-based) and side
        (A or B) a pair text comes from.
    vectors : ndarray of shape (n_points, dim), float32
    projection : Projection
    segments : ndarray of int of shape (n_pairs, 2)
        For pairs: the two points of each scored pair (empty for a document set).
    rows : ndarray of int of shape (n_pairs,)
        The input table row of each segment.
    sources : list of str
        Per point, the file a document came from ("" for pair texts).
    """

    texts: list
    ids: list
    vectors: np.ndarray
    projection: Projection
    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    sources: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    @functools.cached_property
    def searched(self) -> Rows:
        """The vectors as `nearest` searches them, their unit vectors computed once and kept (at
        1 M texts, normalising them again took 93 % of a typed query's time)."""
        return Rows(self.vectors)

    def rows_touching(self, points) -> np.ndarray:
        """Input rows (ascending) of the pairs with at least one text among `points` (a mask or indices)."""
        chosen = np.zeros(len(self), dtype=bool)
        chosen[np.asarray(points)] = True
        touching = chosen[self.segments].any(axis=1) if len(self.segments) else np.zeros(0, dtype=bool)
        return np.unique(self.rows[touching])

    def per_point(self, values) -> np.ndarray:
        """Mean of a per-pair value (aligned with `rows`) over the pairs touching each point (NaN: none)."""
        values = np.asarray(values, dtype=np.float64)
        ends = self.segments.ravel()
        both = np.repeat(values, 2)
        known = ~np.isnan(both)
        total = np.bincount(ends[known], weights=both[known], minlength=len(self))
        count = np.bincount(ends[known], minlength=len(self))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def pair_texts(table) -> tuple[list, list, np.ndarray, np.ndarray]:
    """The distinct texts of a `PairTable`'s scored rows (both sides), their ids, each pair's two
    points and its row: ``(texts, ids, segments, rows)``."""
    frame = table.frame
    scored = np.ones(len(frame), dtype=bool)
    scored[list(table.empty_rows)] = False
    rows = np.flatnonzero(scored)
    sides = np.stack([frame[table.text_a].to_numpy()[rows], frame[table.text_b].to_numpy()[rows]], axis=1)
    index: dict = {}
    ids = []
    for row, pair in zip(rows, sides):
        for side, text in zip("AB", pair):
            if text not in index:
                index[text] = len(index)
                ids.append(f"row {row + 1} {side}")
    segments = np.array([[index[a], index[b]] for a, b in sides], dtype=np.int64).reshape(-1, 2)
    return list(index), ids, segments, rows


def map_input(table, embedder, *, cache=None, progress=None, should_stop=None) -> TextMap:
    """Encode and project the texts of a `PairTable` (both sides) or a `DocumentSet` (each document).

    Texts already in `cache` are not encoded again (a scored input's usually are all there).

    Raises
    ------
    InputError
        When the input holds fewer than 2 distinct texts (nothing to draw).
    Cancelled
        When `should_stop()` returned True while encoding.
    """
    if hasattr(table, "text_a"):
        texts, ids, segments, rows = pair_texts(table)
        sources = [""] * len(texts)
    else:
        texts, ids = list(table.texts), list(table.ids)
        segments, rows = np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
        sources = [str(getattr(d.source, "name", d.source)) for d in table.documents]
    if len(texts) < 2:
        raise InputError(f"the input holds {len(texts)} distinct text(s): a map needs at least 2.",
                         fix="open a file with more texts")
    encoding = encode_texts(embedder, texts, cache=cache, progress=progress, should_stop=should_stop)
    vectors = np.asarray(encoding.embeddings, dtype=np.float32)
    if progress is not None:
        progress(len(texts), len(texts), f"projecting {len(texts):,} texts")
    text_map = TextMap(texts, ids, vectors, pca_2d(vectors), segments, rows, sources)
    text_map.searched.unit           # here in the worker, not on the first click of the window
    return text_map


def nearest(text_map: TextMap, vector, profile, *, metric: str = "cosine", k: int = 10,
            exclude: int | None = None) -> list[tuple[int, float, float]]:
    """The `k` points nearest to `vector` (a point's own vector, or a typed query's), best first,
    each as ``(point, raw score, calibrated score)``; `exclude` (the point itself) is left out.

    Scored with `metric` on the model's own embeddings, calibrated with `profile`'s references.
    """
    wanted = k + (exclude is not None)
    hits, raw, _, _ = top_hits(np.asarray(vector, dtype=np.float32).reshape(1, -1), text_map.searched,
                               metric, wanted)
    keep = hits[0] != exclude
    points, raw = hits[0][keep][:k], raw[0][keep][:k]
    calibrated = profile.calibrate(metric, raw)["calibrated"] if len(raw) else raw
    return [(int(p), float(r), float(c)) for p, r, c in zip(points, raw, calibrated)]
