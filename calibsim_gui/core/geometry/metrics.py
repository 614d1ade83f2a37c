"""Similarity and distance metrics, vectorised for pair lists and blocked full matrices.

Every metric declares its orientation. `as_similarity` gives the "higher = more similar" view
that every calibrator works on (distances are negated).
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from calibsim_gui.core.errors import InputError

PAIR_BLOCK = 8192   # pairs scored at a time: float64 copies of a block stay ~50 MB at dim 384


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


@functools.cache
def _cityblock_kernel() -> Callable:
    """The function scipy's ``cdist(x, y, "cityblock")`` calls (its compiled kernel, loaded alone:
    importing scipy.spatial costs ~0.3 s of CPU, the kernel ~1 ms), or `cdist` itself when the
    kernel is not where this scipy keeps it."""
    spec = importlib.util.find_spec("scipy")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder, "spatial", f"_distance_pybind{suffix}")
            if path.is_file():
                try:
                    loader = importlib.machinery.ExtensionFileLoader("scipy.spatial._distance_pybind", str(path))
                    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                    loader.exec_module(module)
                    return module.cdist_cityblock
                except (ImportError, AttributeError):
                    break
    from scipy.spatial.distance import cdist

    return functools.partial(cdist, metric="cityblock")


def _manhattan_matrix(parts: MatrixParts) -> np.ndarray:
    return _cityblock_kernel()(np.asarray(parts.a.x), np.asarray(parts.b.x))


def preload_matrix_libraries(names) -> None:
    """Start loading, in a background thread, what the full matrices of the metrics `names`
    need (scipy's kernel for manhattan), so that a caller who needs them later, e.g. after
    encoding its texts, does not wait for it."""
    if "manhattan" in names and _cityblock_kernel.cache_info().currsize == 0:
        threading.Thread(target=_cityblock_kernel, name="calibsim-preload", daemon=True).start()


def _once(method):
    """A property computed on first use and kept: `functools.cached_property` without its lock,
    which Python 3.11 shares among all instances (threads scoring separate blocks would wait for
    each other's matrices)."""
    name = method.__name__

    def get(self):
        if name not in self.__dict__:
            self.__dict__[name] = method(self)
        return self.__dict__[name]

    return property(get, doc=method.__doc__)


class Rows:
    """Vectors (rows) and what metrics derive from them, each computed once on first use:
    the unit vectors, the lengths and the squared lengths (`norms`: the lengths if known)."""

    def __init__(self, x: np.ndarray, norms: np.ndarray | None = None):
        self.x = x
        if norms is not None:
            self.__dict__["norms"] = norms

    @_once
    def unit(self) -> np.ndarray:
        norms = self.norms[:, None]          # the lengths `_unit` would compute again
        return self.x / np.where(norms == 0, 1.0, norms)

    @_once
    def norms(self) -> np.ndarray:
        return np.linalg.norm(self.x, axis=1)

    @_once
    def squares(self) -> np.ndarray:
        return (self.x * self.x).sum(axis=1)

    def computed(self) -> Rows:
        """These rows with every derived value computed now (e.g. before threads share them)."""
        for name in ("unit", "norms", "squares"):
            getattr(self, name)
        return self


class MatrixParts:
    """What the full matrices of several metrics of the rows of `x` against those of `y` share
    (the cosines, their angles, the rows' lengths), each computed once on first use, so that
    scoring a block with every metric costs one cosine matrix. `x` and `y` are arrays or
    `Rows` (a `Rows` of a reference kept across blocks computes its unit vectors once)."""

    def __init__(self, x, y):
        self.a = x if isinstance(x, Rows) else Rows(x)
        self.b = y if isinstance(y, Rows) else Rows(y)

    @_once
    def cosine(self) -> np.ndarray:
        return self.a.unit @ self.b.unit.T

    @_once
    def angle(self) -> np.ndarray:
        """The angles in radians."""
        return np.arccos(np.clip(self.cosine, -1.0, 1.0))


class PairParts:
    """What the scores of several metrics of row-aligned pairs share: each side's `Rows` (unit
    vectors, lengths) and the cosines and angles, each computed once on first use, so that scoring
    a block of pairs with every metric costs one pass over each side (it cost twelve)."""

    def __init__(self, a, b):
        self.a = a if isinstance(a, Rows) else Rows(a)
        self.b = b if isinstance(b, Rows) else Rows(b)

    @_once
    def cosine(self) -> np.ndarray:
        return np.einsum("ij,ij->i", self.a.unit, self.b.unit)

    @_once
    def angle(self) -> np.ndarray:
        """The angles in radians."""
        return np.arccos(np.clip(self.cosine, -1.0, 1.0))


def _euclidean_matrix(parts: MatrixParts):
    """Euclidean distances from ``|x|^2 + |y|^2 - 2 x.y`` (a matrix product: ~3x faster than cdist)."""
    a, b = parts.a, parts.b
    squared = a.squares[:, None] + b.squares[None, :] - 2 * (a.x @ b.x.T)
    return np.sqrt(np.maximum(squared, 0.0, out=squared), out=squared)


WRD_LAMBDA = 1.0
"""λ of `wrd`: weight of the angle (radians) against the difference of lengths."""


def _scaled_pairs(alpha):
    def pairs(parts: PairParts):
        return alpha * parts.cosine + (1 - alpha) * (parts.a.norms + parts.b.norms)
    return pairs


def _scaled_matrix(alpha):
    def matrix(parts: MatrixParts):
        norms = parts.a.norms[:, None] + parts.b.norms[None, :]
        return alpha * parts.cosine + (1 - alpha) * norms
    return matrix


def _wrd_pairs(parts: PairParts):
    return parts.a.norms - parts.b.norms + WRD_LAMBDA * parts.angle


def _wrd_matrix(parts: MatrixParts):
    return parts.a.norms[:, None] - parts.b.norms[None, :] + WRD_LAMBDA * parts.angle


def _radial_pairs(parts: PairParts):
    na, nb = parts.a.norms, parts.b.norms
    return np.sqrt((na - nb) ** 2 + na * nb * parts.angle ** 2)


def _radial_matrix(parts: MatrixParts):
    nx, ny = parts.a.norms[:, None], parts.b.norms[None, :]
    return np.sqrt((nx - ny) ** 2 + nx * ny * parts.angle ** 2)


SCALED_ALPHAS = (0.9, 0.5)
"""α of the SCALED_SIM metrics offered, named ``scaled<100·α>`` (``scaled90``, ``scaled50``)."""


@dataclass(frozen=True)
class Metric:
    """One way to compare two embeddings.

    Attributes
    ----------
    name : str
        Column prefix, e.g. ``"cosine"``.
    higher_is_similar : bool
        True for similarities (cosine, dot), False for distances.
    description : str
        One line for users.
    """

    name: str
    higher_is_similar: bool
    description: str
    from_pair_parts: Callable[[PairParts], np.ndarray]
    """The scores of row-aligned pairs from their `PairParts` (see `pairs`)."""
    from_parts: Callable[[MatrixParts], np.ndarray]
    """The full matrix from the `MatrixParts` of its rows (see `matrix`)."""
    bilinear_map: Callable[[np.ndarray], np.ndarray] | None = None
    """For scores that are the dot product of mapped vectors (cosine: unit vectors, dot: the
    vectors themselves): the map. Means and variances over many texts then need no matrix."""

    @property
    def orientation(self) -> str:
        return "higher = more similar" if self.higher_is_similar else "lower = more similar"

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Scores of row-aligned pairs `a`, `b` of shape (n_pairs, dim): shape (n_pairs,)."""
        return self.from_pair_parts(PairParts(a, b))

    def matrix(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Scores of every row of `x` (or `Rows`) against every row of `y`: shape (len(x), len(y))."""
        return self.from_parts(MatrixParts(x, y))

    def as_similarity(self, raw):
        """Raw scores turned "higher = more similar" (distances are negated)."""
        raw = np.asarray(raw, dtype=np.float64)
        return raw if self.higher_is_similar else -raw


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("cosine", True, "cosine of the angle between the embeddings (-1..1)",
               lambda pairs: pairs.cosine, lambda parts: parts.cosine, _unit),
        Metric("dot", True, "dot product of the embeddings (unbounded)",
               lambda pairs: np.einsum("ij,ij->i", pairs.a.x, pairs.b.x), lambda parts: parts.a.x @ parts.b.x.T,
               lambda x: x),
        Metric("euclidean", False, "euclidean distance between the embeddings",
               lambda pairs: np.linalg.norm(pairs.a.x - pairs.b.x, axis=1), _euclidean_matrix),
        Metric("manhattan", False, "manhattan (L1) distance between the embeddings",
               lambda pairs: np.abs(pairs.a.x - pairs.b.x).sum(axis=1),
               _manhattan_matrix),
        Metric("angular", False, "angle between the embeddings as a fraction of pi (0..1)",
               lambda pairs: pairs.angle / np.pi,
               lambda parts: parts.angle / np.pi),
        *(Metric(f"scaled{round(alpha * 100)}", True,
                 f"norm-aware similarity {alpha:g}·cosine + {1 - alpha:g}·(|x| + |y|) "
                 "(SCALED_SIM; unbounded)", _scaled_pairs(alpha), _scaled_matrix(alpha))
          for alpha in SCALED_ALPHAS),
        Metric("wrd", False, f"|x| - |y| + {WRD_LAMBDA:g}·angle in radians (WRD; a distance that is "
                             "not symmetric: x is the first text of a pair, y the second)",
               _wrd_pairs, _wrd_matrix),
        Metric("radial", False, "radially weighted angle sqrt((|x| - |y|)^2 + |x||y|·angle^2): the "
                                "angle in radians weighted by the lengths, plus their difference "
                                "(a symmetric distance; 0 for identical texts)",
               _radial_pairs, _radial_matrix),
    )
}


def get_metrics(names=None) -> list[Metric]:
    """The metrics called `names` (all when None); unknown names raise InputError."""
    if names is None:
        return list(METRICS.values())
    unknown = [n for n in names if n not in METRICS]
    if unknown:
        raise InputError(f"unknown metric(s) {unknown}.",
                         fix=f"choose from {', '.join(METRICS)} (soft cosine is cosine under the "
                             "geometry fix soft: --geometry soft)")
    return [METRICS[n] for n in names]


def pair_scores(a: np.ndarray, b: np.ndarray, metrics=None, pairs=None) -> dict[str, np.ndarray]:
    """Raw scores of row-aligned embeddings, or of the pairs of rows `pairs` names.

    Parameters
    ----------
    a, b : ndarray of shape (n_pairs, dim), or of shape (n_a, dim) and (n_b, dim) with `pairs`
    pairs : (first, second) index arrays or None
        Pair i is ``a[first[i]]`` and ``b[second[i]]``: each row's length is computed once, however
        many pairs share it, and rows are gathered a block at a time. The scores are those of
        ``pair_scores(a[first], b[second])``, bit for bit.

    Returns
    -------
    dict mapping metric name to ndarray of shape (n_pairs,), float64, in the metric's own
    orientation.

    Notes
    -----
    Computed in float64 blocks of `PAIR_BLOCK` pairs, so memory does not grow with `n_pairs`.
    """
    chosen = get_metrics(metrics)
    if pairs is None:
        n_pairs, sides = len(a), [(a, None, None), (b, None, None)]
    else:
        first, second = (np.asarray(index) for index in pairs)
        norms_a = _row_norms(a)
        n_pairs, sides = len(first), [(a, norms_a, first), (b, norms_a if b is a else _row_norms(b), second)]
    out = {m.name: np.empty(n_pairs) for m in chosen}
    for start in range(0, n_pairs, PAIR_BLOCK):
        rows = slice(start, start + PAIR_BLOCK)
        parts = PairParts(*(_block_rows(x, norms, index, rows) for x, norms, index in sides))
        for m in chosen:
            out[m.name][rows] = m.from_pair_parts(parts)
    return out


def _block_rows(x: np.ndarray, norms: np.ndarray | None, index, rows: slice) -> Rows:
    """Rows `rows` of `x`, or rows ``index[rows]`` of `x` with their known `norms`, in float64."""
    if index is None:
        return Rows(np.asarray(x[rows], dtype=np.float64))
    chosen = index[rows]
    return Rows(np.asarray(x[chosen], dtype=np.float64), norms[chosen])


def _row_norms(x: np.ndarray) -> np.ndarray:
    """The float64 lengths of the rows of `x`, as `Rows.norms` computes them, `PAIR_BLOCK` rows at
    a time (no float64 copy of all of `x`)."""
    return np.concatenate([Rows(np.asarray(x[start:start + PAIR_BLOCK], dtype=np.float64)).norms
                           for start in range(0, len(x), PAIR_BLOCK)] or [np.empty(0)])


def matrix_blocks(x: np.ndarray, metric: Metric, *, block_rows: int = 1024
                  ) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, block)`` of the ``x`` vs ``x`` matrix, `block_rows` rows at a time.

    Each block is float64 of shape (rows, n); memory stays bounded by the block size.
    """
    x = np.asarray(x, dtype=np.float64)
    for start in range(0, len(x), block_rows):
        yield start, metric.matrix(x[start:start + block_rows], x)


def soft_cosine(a: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Soft cosine ``u'Sv / (sqrt(u'Su) sqrt(v'Sv))`` of row-aligned pairs (Sidorov et al. 2014).

    The reference formula; calibrated soft cosine is cosine under the geometry fix "soft"
    (`calibsim_gui.core.geometry.transforms.SoftCosineSpace`), whose S a profile stores.

    Parameters
    ----------
    a, b : ndarray of shape (n_pairs, dim)
    s : ndarray of shape (dim, dim), positive semi-definite (e.g. `SoftCosineSpace.similarity`)

    Returns
    -------
    ndarray of shape (n_pairs,), in [-1, 1] (higher = more similar); 0 where a vector has
    ``u'Su = 0``.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    sa, sb = a @ s, b @ s
    cross = np.einsum("ij,ij->i", sa, b)
    norm_a = np.sqrt(np.maximum(np.einsum("ij,ij->i", sa, a), 0.0))
    norm_b = np.sqrt(np.maximum(np.einsum("ij,ij->i", sb, b), 0.0))
    denominator = norm_a * norm_b
    return np.clip(np.divide(cross, denominator, out=np.zeros_like(cross), where=denominator > 0),
                   -1.0, 1.0)
