"""A 2-D map of the texts of an input: their embeddings projected by PCA, and what a map needs.

The texts of a pair list (both sides, each distinct text once) or of a document set are
encoded through the cache (`encode_texts`), and their embeddings projected on their two
principal directions. PCA is exact, deterministic and instant at 50,000 texts (one d x d
covariance), and needs no library beyond numpy. The map also answers the questions its view
asks: which points lie inside a drawn shape, which pairs touch them, and a point's (or a typed
query's) nearest texts with raw and calibrated scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibsim_gui.core.analysis.search import top_hits
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.errors import InputError


@dataclass(frozen=True)
class Projection:
    """Points on their two principal directions.

    Attributes
    ----------
    coords : ndarray of shape (n_points, 2), float32
    explained : ndarray of shape (2,)
        Share of the total variance along each of the two directions (0 to 1).
    """

    coords: np.ndarray
    explained: np.ndarray


def pca_2d(vectors) -> Projection:
    """Project `vectors` (n, d) on their two directions of largest variance.

    Centred, then the eigenvectors of the d x d covariance (one float32 pass over the data;
    `benchmarks/map_projection.py` measures it at 5,000 and 50,000 texts). Each direction's sign is fixed so that its largest loading is
    positive: the same input always draws the same picture. Fewer than two points or directions
    give zeros where a direction is missing.
    """
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array, not of shape {x.shape}")
    n, dim = x.shape
    coords = np.zeros((n, 2), dtype=np.float32)
    explained = np.zeros(2)
    if n < 2 or dim == 0:
        return Projection(coords, explained)
    x = x - x.mean(axis=0, dtype=np.float64).astype(np.float32)
    covariance = (x.T @ x).astype(np.float64) / (n - 1)       # float32 product: half the time and memory
    values, directions = np.linalg.eigh(covariance)            # ascending
    keep = min(2, dim)
    values, directions = values[::-1][:keep], directions[:, ::-1][:, :keep]
    largest = np.abs(directions).argmax(axis=0)
    directions = directions * np.sign(directions[largest, np.arange(keep)])
    coords[:, :keep] = x @ directions.astype(np.float32)
    total = float(np.trace(covariance))
    if total > 0:
        explained[:keep] = np.clip(values, 0, None) / total
    return Projection(coords, explained)


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
    return TextMap(texts, ids, vectors, pca_2d(vectors), segments, rows, sources)


def nearest(text_map: TextMap, vector, profile, *, metric: str = "cosine", k: int = 10,
            exclude: int | None = None) -> list[tuple[int, float, float]]:
    """The `k` points nearest to `vector` (a point's own vector, or a typed query's), best first,
    each as ``(point, raw score, calibrated score)``; `exclude` (the point itself) is left out.

    Scored with `metric` on the model's own embeddings, calibrated with `profile`'s references.
    """
    wanted = k + (exclude is not None)
    hits, raw, _, _ = top_hits(np.asarray(vector, dtype=np.float32).reshape(1, -1), text_map.vectors,
                               metric, wanted)
    keep = hits[0] != exclude
    points, raw = hits[0][keep][:k], raw[0][keep][:k]
    calibrated = profile.calibrate(metric, raw)["calibrated"] if len(raw) else raw
    return [(int(p), float(r), float(c)) for p, r, c in zip(points, raw, calibrated)]
