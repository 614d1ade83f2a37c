"""Geometry fixes: transforms of the embedding space, fitted on a background corpus.

Raw sentence embeddings crowd into a narrow cone (every pair scores well above 0), so a few
common directions dominate their cosines. Each fix here is fitted on *background* embeddings
(never on the pairs being scored) and then applied to any embedding:

- `MeanCentering` subtracts the background mean;
- `Whitening` (Su et al. 2021) maps the background to identity covariance, then L2-normalises;
- `AllButTheTop` (Mu & Viswanath 2018) centres and removes the top principal directions;
- `SoftCosineSpace` maps embeddings so that their cosine is soft cosine (Sidorov et al. 2014)
  with a feature similarity S built from the background's correlations.

scikit-learn habits: settings in ``__init__``, ``fit(embeddings)`` returns ``self``, learned
state in attributes ending in ``_``, ``transform(embeddings)`` is pure, ``to_dict``/``from_dict``
save arrays as base64 float32 (no pickle). Every fix depends on the background only through its
first two moments, so ``fit_moments(n, total, cross)`` fits it from sums that add up across
machines (`embedding_moments` of each block, summed); ``fit(embeddings)`` is exactly that.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np

from calibsim_gui.core.errors import InputError, NotFittedError


def encode_array(array: np.ndarray) -> dict:
    """A float32 array as JSON: dtype, shape and base64 little-endian bytes."""
    array = np.asarray(array, dtype="<f4")
    return {"dtype": "float32", "shape": list(array.shape),
            "data": base64.b64encode(array.tobytes()).decode("ascii")}


def decode_array(d: dict) -> np.ndarray:
    """Inverse of `encode_array`; raises ValueError on a wrong shape or NaN/Inf."""
    data = np.frombuffer(base64.b64decode(d["data"]), dtype="<f4")
    array = data.reshape([int(v) for v in d["shape"]]).astype(np.float32)
    if not np.isfinite(array).all():
        raise ValueError("a stored array holds NaN or Inf")
    return array


def _as_embeddings(embeddings) -> np.ndarray:
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"embeddings must be a 2-d array (n_texts, dim), got shape {x.shape}")
    return x


def embedding_moments(embeddings) -> tuple[int, np.ndarray, np.ndarray]:
    """Count, sum and sum of outer products of embeddings, in float64.

    Moments of parts of a corpus add up to the moments of the whole.

    Returns
    -------
    n : int
    total : ndarray of shape (dim,)
    cross : ndarray of shape (dim, dim)
        ``X^T X``.
    """
    x = _as_embeddings(embeddings)
    if not np.isfinite(x).all():
        raise ValueError("background embeddings hold NaN or Inf")
    return len(x), x.sum(axis=0), x.T @ x


def _mean_and_covariance(n, total, cross) -> tuple[np.ndarray, np.ndarray]:
    """Background mean and (biased) covariance from `embedding_moments`."""
    total = np.asarray(total, dtype=np.float64)
    cross = np.asarray(cross, dtype=np.float64)
    if total.ndim != 1 or cross.shape != (len(total), len(total)):
        raise ValueError(f"moments do not fit together: sum {total.shape}, cross-products {cross.shape}")
    if n < 2:
        raise ValueError("a geometry fix needs at least two background embeddings")
    if not (np.isfinite(total).all() and np.isfinite(cross).all()):
        raise ValueError("background embeddings hold NaN or Inf")
    mean = total / n
    covariance = cross / n - np.outer(mean, mean)
    return mean, (covariance + covariance.T) / 2


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def _principal_axes(covariance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors (columns) of a covariance matrix."""
    values, vectors = np.linalg.eigh(covariance)
    return np.clip(values[::-1], 0.0, None), vectors[:, ::-1]


class GeometryTransform:
    """Shared plumbing: fitted-state check, dimension check, (de)serialisation."""

    _settings: tuple[str, ...] = ()   # __init__ keywords
    _arrays: tuple[str, ...] = ()     # learned ndarrays (stored as float32)
    _state: tuple[str, ...] = ()      # other learned attributes (JSON values)

    def _check_fitted(self) -> None:
        if any(not hasattr(self, name) for name in self._arrays + self._state):
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit() first")

    @property
    def dimension(self) -> int:
        """Input dimension the transform was fitted for."""
        self._check_fitted()
        return len(self.mean_)

    def _check_input(self, embeddings) -> np.ndarray:
        self._check_fitted()
        x = _as_embeddings(embeddings)
        if x.shape[1] != self.dimension:
            raise ValueError(f"{type(self).__name__} was fitted on {self.dimension}-d embeddings, "
                             f"got {x.shape[1]}-d")
        return x

    def validate(self) -> None:
        """Raise ValueError unless the learned state is usable (run on every loaded transform)."""

    def fit(self, embeddings) -> "GeometryTransform":
        """Fit on background embeddings of shape (n_texts, dim)."""
        return self.fit_moments(*embedding_moments(embeddings))

    def fit_moments(self, n: int, total, cross) -> "GeometryTransform":
        """Fit from `embedding_moments` of the background (summed over its parts)."""
        raise NotImplementedError

    def get_params(self) -> dict:
        """The settings given to ``__init__``."""
        return {k: getattr(self, k) for k in self._settings}

    def to_dict(self) -> dict:
        self._check_fitted()
        out = {"type": type(self).__name__, **self.get_params()}
        out.update({k: getattr(self, k) for k in self._state})
        out.update({k: encode_array(getattr(self, k)) for k in self._arrays})
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "GeometryTransform":
        kind = TRANSFORMS.get(d.get("type"))
        if kind is None:
            raise ValueError(f"unknown geometry transform {d.get('type')!r}")
        obj = kind(**{k: d[k] for k in kind._settings})
        for name in kind._state:
            setattr(obj, name, d[name])
        for name in kind._arrays:
            setattr(obj, name, decode_array(d[name]))
        obj.validate()
        return obj


class MeanCentering(GeometryTransform):
    """Subtract the background's mean embedding.

    Attributes
    ----------
    mean_ : ndarray of shape (dim,), float32
    """

    _arrays = ("mean_",)

    def fit_moments(self, n: int, total, cross) -> "MeanCentering":
        mean, _ = _mean_and_covariance(n, total, cross)
        self.mean_ = mean.astype(np.float32)
        return self

    def transform(self, embeddings) -> np.ndarray:
        """Centred embeddings, float32 of the input's shape."""
        return (self._check_input(embeddings) - self.mean_).astype(np.float32)


class Whitening(GeometryTransform):
    """Whitening (Su et al. 2021): ``x -> (x - mu) W``, then L2-normalised.

    With the background covariance ``Sigma = U Lambda U^T``, ``W = U Lambda^(-1/2)``, so the
    background gets identity covariance; keeping the first `n_components` columns of ``W``
    also reduces the dimension. Directions in which the background does not vary (eigenvalue
    below ``rtol`` times the largest) are dropped rather than blown up. Some models never use
    a few directions (all-MiniLM-L6-v2 spans 381 of its 384); a background with fewer texts
    than dimensions always leaves some out, and ``warning_`` then says so.

    Parameters
    ----------
    n_components : int or None
        Dimensions kept (the top ones); None keeps every direction the background spans.
    rtol : float
        Relative eigenvalue floor below which a direction counts as empty.

    Attributes
    ----------
    mean_ : ndarray of shape (dim,), float32
    matrix_ : ndarray of shape (dim, n_components_), float32
        ``W`` (columns in order of decreasing background variance).
    warning_ : str or None
    """

    _settings = ("n_components", "rtol")
    _arrays = ("mean_", "matrix_")
    _state = ("warning_",)

    def __init__(self, *, n_components: int | None = None, rtol: float = 1e-5):
        self.n_components = n_components
        self.rtol = rtol

    @property
    def n_components_(self) -> int:
        self._check_fitted()
        return self.matrix_.shape[1]

    def fit_moments(self, n: int, total, cross) -> "Whitening":
        mean, covariance = _mean_and_covariance(n, total, cross)
        dim = len(mean)
        values, vectors = _principal_axes(covariance)
        spanned = int((values > self.rtol * values[0]).sum()) if values[0] > 0 else 0
        if spanned == 0:
            raise ValueError("the background embeddings do not vary; whitening is undefined")
        wanted = dim if self.n_components is None else int(self.n_components)
        if wanted < 1:
            raise ValueError("n_components must be at least 1")
        keep = min(wanted, spanned)
        self.warning_ = None
        if keep < wanted and n <= dim:
            self.warning_ = (f"the background has only {n} texts for {dim} dimensions; "
                             f"whitening keeps the {keep} directions they span and ignores the "
                             "rest — use a larger background corpus")
        self.mean_ = mean.astype(np.float32)
        self.matrix_ = (vectors[:, :keep] / np.sqrt(values[:keep])).astype(np.float32)
        return self

    def transform(self, embeddings) -> np.ndarray:
        """Whitened, unit-length embeddings, float32 of shape (n_texts, n_components_)."""
        x = self._check_input(embeddings)
        return _unit((x - self.mean_) @ self.matrix_.astype(np.float64)).astype(np.float32)


class AllButTheTop(GeometryTransform):
    """All-but-the-top (Mu & Viswanath 2018): centre, then remove the top principal directions.

    ``x -> v - sum_i (u_i . v) u_i`` with ``v = x - mu`` (the *centred* vector is projected) and
    ``u_1..u_D`` the top principal directions of the centred background.

    Parameters
    ----------
    n_directions : int or None
        D; None means ``max(1, round(dim / 100))`` as the paper suggests.

    Attributes
    ----------
    mean_ : ndarray of shape (dim,), float32
    components_ : ndarray of shape (D, dim), float32
        Unit directions removed, by decreasing background variance.
    """

    _settings = ("n_directions",)
    _arrays = ("mean_", "components_")

    def __init__(self, *, n_directions: int | None = None):
        self.n_directions = n_directions

    def fit_moments(self, n: int, total, cross) -> "AllButTheTop":
        mean, covariance = _mean_and_covariance(n, total, cross)
        dim = len(mean)
        d = max(1, round(dim / 100)) if self.n_directions is None else int(self.n_directions)
        if not 1 <= d < dim:
            raise ValueError(f"n_directions must be between 1 and {dim - 1}")
        _, vectors = _principal_axes(covariance)
        self.mean_ = mean.astype(np.float32)
        self.components_ = vectors[:, :d].T.astype(np.float32)
        return self

    def transform(self, embeddings) -> np.ndarray:
        """Embeddings without the top directions, float32 of the input's shape."""
        v = self._check_input(embeddings) - self.mean_
        u = self.components_.astype(np.float64)
        return (v - (v @ u.T) @ u).astype(np.float32)


def feature_correlation(covariance) -> np.ndarray:
    """Correlation matrix of the embedding dimensions from their covariance, shape (dim, dim).

    Unit diagonal and positive semi-definite; a dimension that does not vary is correlated with
    nothing (its row and column are 0 except the diagonal 1).
    """
    covariance = np.asarray(covariance, dtype=np.float64)
    sd = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    scale = np.where(sd > 0, 1.0 / np.where(sd > 0, sd, 1.0), 0.0)
    correlation = covariance * np.outer(scale, scale)
    np.fill_diagonal(correlation, 1.0)
    return (correlation + correlation.T) / 2


class SoftCosineSpace(GeometryTransform):
    """The space where cosine is soft cosine ``x'Sy / (sqrt(x'Sx) sqrt(y'Sy))`` (Sidorov et al. 2014).

    S is the feature similarity of the embedding dimensions: the background's correlation
    matrix ``R = V Lambda V^T`` (`feature_correlation`) in a k-factor form that is stored compactly,
    ``S = F^T F + diag(u^2)`` with ``F = Lambda_k^(1/2) V_k^T`` (the top k eigenpairs) and
    ``u_i^2 = 1 - (F^T F)_ii``: positive semi-definite, unit diagonal, equal to R along its top k
    directions (k = dim gives R itself). The map ``x -> (F x, u * x)`` of length k + dim turns
    ``x'Sy`` into a dot product, so cosine after it is soft cosine; no centering.

    Parameters
    ----------
    n_factors : int or None
        k; None means ``min(64, dim)``.

    Attributes
    ----------
    factors_ : ndarray of shape (k, dim), float32
        F.
    uniqueness_ : ndarray of shape (dim,), float32
        u (the square root of what the k factors leave of each unit diagonal entry).
    """

    _settings = ("n_factors",)
    _arrays = ("factors_", "uniqueness_")
    DEFAULT_FACTORS = 64
    DIAGONAL_TOLERANCE = 1e-3       # float32 storage of F and u

    def __init__(self, *, n_factors: int | None = None):
        self.n_factors = n_factors

    @property
    def dimension(self) -> int:
        self._check_fitted()
        return self.factors_.shape[1]

    def fit_moments(self, n: int, total, cross) -> "SoftCosineSpace":
        _, covariance = _mean_and_covariance(n, total, cross)
        dim = len(covariance)
        k = min(self.DEFAULT_FACTORS, dim) if self.n_factors is None else int(self.n_factors)
        if not 1 <= k <= dim:
            raise ValueError(f"n_factors must be between 1 and {dim}")
        values, vectors = _principal_axes(feature_correlation(covariance))
        factors = vectors[:, :k].T * np.sqrt(values[:k])[:, None]
        self.factors_ = factors.astype(np.float32)
        self.uniqueness_ = np.sqrt(np.clip(1.0 - (factors ** 2).sum(axis=0), 0.0, None)).astype(np.float32)
        return self

    def similarity(self) -> np.ndarray:
        """S, shape (dim, dim)."""
        f = self.factors_.astype(np.float64)
        return f.T @ f + np.diag(self.uniqueness_.astype(np.float64) ** 2)

    def validate(self) -> None:
        f, u = self.factors_, self.uniqueness_
        if f.ndim != 2 or not 1 <= len(f) <= f.shape[1] or u.shape != (f.shape[1],) or (u < 0).any():
            raise ValueError("soft cosine's feature similarity has factors and uniqueness of "
                             "shapes that do not fit together")
        diagonal = (f.astype(np.float64) ** 2).sum(axis=0) + u.astype(np.float64) ** 2
        if np.abs(diagonal - 1).max() > self.DIAGONAL_TOLERANCE:
            raise ValueError("soft cosine's feature similarity S does not have a unit diagonal")

    def transform(self, embeddings) -> np.ndarray:
        """Mapped embeddings, float32 of shape (n_texts, k + dim); their cosine is soft cosine."""
        x = self._check_input(embeddings)
        return np.hstack([x @ self.factors_.T.astype(np.float64),
                          x * self.uniqueness_.astype(np.float64)]).astype(np.float32)


TRANSFORMS = {c.__name__: c for c in (MeanCentering, Whitening, AllButTheTop, SoftCosineSpace)}


@dataclass(frozen=True)
class Geometry:
    """One choice of embedding geometry, as offered to users.

    Attributes
    ----------
    name : str
        Key used in profiles, APIs and column suffixes (``cosine_calibrated@whiten``).
    label : str
        Short name for menus and plot legends.
    description : str
        One line for tooltips and reports.
    transform : GeometryTransform subclass, or None for the model's own embeddings
    """

    name: str
    label: str
    description: str
    transform: type[GeometryTransform] | None

    def make(self) -> GeometryTransform | None:
        """A new, unfitted transform with default settings (None for "none")."""
        return None if self.transform is None else self.transform()


GEOMETRIES: dict[str, Geometry] = {g.name: g for g in (
    Geometry("none", "raw", "the model's own embeddings, unchanged", None),
    Geometry("center", "mean-centred",
             "the background's mean embedding subtracted (removes the direction all texts share)",
             MeanCentering),
    Geometry("whiten", "whitened",
             "centred, rotated and rescaled so the background has identity covariance, then "
             "L2-normalised (Su et al. 2021)", Whitening),
    Geometry("abtt", "all-but-the-top",
             "centred, then the background's top principal directions removed (about dim/100 of "
             "them; Mu & Viswanath 2018)", AllButTheTop),
    Geometry("soft", "soft-cosine space",
             "mapped so that cosine becomes soft cosine x'Sy/sqrt(x'Sx y'Sy), S = the background's "
             "feature correlations in k-factor form, k = 64 by default (Sidorov et al. 2014)", SoftCosineSpace),
)}
FIXES = tuple(name for name in GEOMETRIES if name != "none")


def get_geometries(names) -> list[Geometry]:
    """The geometries called `names` (a name or a sequence); unknown names raise InputError."""
    names = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in names if n not in GEOMETRIES]
    if unknown:
        raise InputError(f"unknown geometry fix(es) {unknown}.",
                         fix=f"choose from {', '.join(GEOMETRIES)}")
    return [GEOMETRIES[n] for n in names]


def fit_geometries(background, names=FIXES, settings=None) -> dict[str, GeometryTransform | None]:
    """Each named geometry fitted on `background` embeddings (None for "none")."""
    return fit_geometries_from_moments(embedding_moments(background), names, settings)


def geometry_settings(*, abtt_directions: int | None = None, whiten_dim: int | None = None,
                      soft_factors: int | None = None) -> dict:
    """Settings for `fit_geometries` from the user's choices (None keeps a fix's default):
    ABTT's number of removed directions D, whitening's kept dimension k and the number of
    factors of soft cosine's S."""
    out = {}
    if soft_factors is not None:
        out["soft"] = {"n_factors": int(soft_factors)}
    if abtt_directions is not None:
        out["abtt"] = {"n_directions": int(abtt_directions)}
    if whiten_dim is not None:
        out["whiten"] = {"n_components": int(whiten_dim)}
    return out


def fit_geometries_from_moments(moments, names=FIXES, settings=None
                                ) -> dict[str, GeometryTransform | None]:
    """Each named geometry fitted from `embedding_moments` ``(n, total, cross)`` (None for "none").

    `settings` maps a geometry name to keyword settings of its transform, e.g.
    ``{"abtt": {"n_directions": 3}, "whiten": {"n_components": 128}}`` (see `geometry_settings`).
    """
    settings = settings or {}
    unknown = sorted(set(settings) - set(FIXES))
    if unknown:
        raise InputError(f"settings for unknown geometry fix(es) {unknown}.",
                         fix=f"choose from {', '.join(FIXES)}")
    fitted = {}
    for geometry in get_geometries(names):
        if geometry.transform is None:
            fitted[geometry.name] = None
            continue
        transform = geometry.transform(**settings.get(geometry.name, {}))
        try:
            fitted[geometry.name] = transform.fit_moments(*moments)
        except ValueError as exc:
            if geometry.name not in settings:
                raise
            raise InputError(f"geometry fix {geometry.name}: {exc}.",
                             fix="choose a setting within that range") from None
    return fitted


def apply_geometry(transform: GeometryTransform | None, embeddings) -> np.ndarray:
    """`embeddings` under a fitted transform; unchanged when `transform` is None."""
    return np.asarray(embeddings) if transform is None else transform.transform(embeddings)
