"""Diagnostics of an embedding space: why raw cosines crowd together, and what a fix changes.

Pure functions on an embedding matrix of shape (n_texts, dim). `diagnose` gathers them into
one JSON-able dict; `diagnose_geometries` runs it for the raw embeddings and each geometry fix.
"""

from __future__ import annotations

import math

import numpy as np

from calibsim_gui.core.background import random_pairs
from calibsim_gui.core.encoding import Progress, ShouldStop
from calibsim_gui.core.errors import Cancelled
from calibsim_gui.core.geometry import GEOMETRIES, GeometryTransform, apply_geometry
from calibsim_gui.core.hubness import hubness
from calibsim_gui.core.metrics import METRICS

DIAGNOSTICS = {
    "mean_random_cosine": "mean cosine of random pairs of different texts (0 for an isotropic "
                          "space; high = every pair looks similar)",
    "isoscore": "IsoScore: how evenly the variance spreads over all dimensions (0 = one "
                "direction, 1 = all equally; Rudman et al. 2022)",
    "effective_rank": "effective rank: exp of the entropy of the normalised singular values "
                      "(Roy & Vetterli 2007), on the embeddings as they are",
    "top_pc_share": "share of the variance along the first principal direction",
    "top10_pc_share": "share of the variance along the first 10 principal directions",
    "norm": "vector lengths (mean, sd, min, median, max)",
    "hubness": "skewness of the 10-occurrence distribution (> 1: some texts are everybody's "
               "nearest neighbour)",
    "silhouette": "silhouette score of the documents' labels, cosine distance (-1..1; higher = "
                  "labels better separated)",
}


def _matrix(embeddings) -> np.ndarray:
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"diagnostics need at least two embeddings (n_texts, dim), got {x.shape}")
    return x


def variance_spectrum(embeddings) -> np.ndarray:
    """Variances along the principal directions (covariance eigenvalues), descending, shape (dim,)."""
    x = _matrix(embeddings)
    centred = x - x.mean(axis=0)
    return np.clip(np.linalg.eigvalsh(centred.T @ centred / len(x))[::-1], 0.0, None)


def mean_random_cosine(embeddings, *, n_pairs: int = 10_000, seed: int = 0) -> float:
    """Mean cosine of `n_pairs` seeded random pairs of different texts (i != j)."""
    x = _matrix(embeddings)
    first, second = random_pairs(len(x), n_pairs, seed=seed)
    return float(METRICS["cosine"].pairs(x[first], x[second]).mean())


def isoscore(embeddings) -> float:
    """IsoScore (Rudman et al. 2022) in [0, 1].

    1. reorient the points along their principal directions (PCA); 2. take the variance vector
    (length n = dim); 3. scale it to norm sqrt(n); 4. isotropy defect
    ``delta = ||v - 1|| / sqrt(2 (n - sqrt n))``; 5. fraction of dimensions used
    ``phi = (n - delta^2 (n - sqrt n))^2 / n^2``; 6. ``(n phi - 1) / (n - 1)``.
    Equal variance on k of the n dimensions gives exactly (k - 1) / (n - 1).
    """
    variances = variance_spectrum(embeddings)
    n = len(variances)
    if n < 2 or not variances.any():
        raise ValueError("IsoScore needs at least two dimensions and points that vary")
    scaled = math.sqrt(n) * variances / np.linalg.norm(variances)
    defect = np.linalg.norm(scaled - 1) / math.sqrt(2 * (n - math.sqrt(n)))
    phi = (n - defect ** 2 * (n - math.sqrt(n))) ** 2 / n ** 2
    return float((n * phi - 1) / (n - 1))


def effective_rank(embeddings) -> float:
    """exp(entropy) of the singular values normalised to sum 1 (Roy & Vetterli 2007).

    Computed on the embeddings as they are (not centred), so a direction that every text
    shares counts as the one dimension it is.
    """
    x = _matrix(embeddings)
    singular = np.sqrt(np.clip(np.linalg.eigvalsh(x.T @ x), 0.0, None))
    p = singular[singular > 0] / singular.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def principal_shares(embeddings, k: int = 10) -> np.ndarray:
    """Share of the total variance along each of the first `k` principal directions, shape (k,)."""
    variances = variance_spectrum(embeddings)
    return variances[:k] / variances.sum()


def norm_stats(embeddings) -> dict[str, float]:
    """Mean, sd, min, median and max of the vector lengths."""
    norms = np.linalg.norm(_matrix(embeddings), axis=1)
    return {"mean": float(norms.mean()), "sd": float(norms.std()), "min": float(norms.min()),
            "median": float(np.median(norms)), "max": float(norms.max())}


def silhouette(embeddings, labels) -> float | None:
    """Silhouette score of `labels` with cosine distance; None with fewer than two labels."""
    from sklearn.metrics import silhouette_score

    labels = np.asarray(labels)
    if not 2 <= len(np.unique(labels)) < len(labels):
        return None
    return float(silhouette_score(_matrix(embeddings), labels, metric="cosine"))


def diagnose(embeddings, *, labels=None, seed: int = 0, n_pairs: int = 10_000, k: int = 10,
             max_points: int = 5000) -> dict:
    """Every diagnostic of one embedding matrix, as a JSON-able dict (keys as in `DIAGNOSTICS`).

    Hubness and silhouette cost O(n^2); they use a seeded sample of at most `max_points`
    texts (recorded as ``"sampled"``). `labels` (one per text) enable the silhouette score.
    """
    x = _matrix(embeddings)
    if labels is not None and len(labels) != len(x):
        raise ValueError(f"{len(labels)} labels for {len(x)} embeddings")
    sample = np.arange(len(x))
    if len(x) > max_points:
        sample = np.sort(np.random.default_rng(seed).choice(len(x), max_points, replace=False))
    shares = principal_shares(x, k=10)
    out = {
        "texts": len(x), "dimension": x.shape[1], "sampled": len(sample), "seed": seed,
        "mean_random_cosine": mean_random_cosine(x, n_pairs=n_pairs, seed=seed),
        "isoscore": isoscore(x),
        "effective_rank": effective_rank(x),
        "top_pc_share": float(shares[0]),
        "top10_pc_share": float(shares.sum()),
        "norm": norm_stats(x),
        "hubness": hubness(x[sample], k=min(k, len(sample) - 1)),
        "silhouette": None,
    }
    if labels is not None:
        out["silhouette"] = silhouette(x[sample], np.asarray(labels)[sample])
    return out


def diagnose_geometries(embeddings, transforms: dict[str, GeometryTransform | None], *,
                        labels=None, progress: Progress | None = None,
                        should_stop: ShouldStop | None = None, **options) -> dict[str, dict]:
    """`diagnose` of `embeddings` under each fitted geometry transform (None = raw).

    Parameters
    ----------
    transforms : dict geometry name -> fitted transform, e.g. ``profile`` transforms or
        ``fit_geometries(background)`` plus ``{"none": None}``; fit them on background texts.
    options : passed to `diagnose` (seed, n_pairs, k, max_points).

    Returns
    -------
    dict geometry name -> diagnostics dict, with its ``"label"`` added.
    """
    out = {}
    for done, (name, transform) in enumerate(transforms.items()):
        if should_stop is not None and should_stop():
            raise Cancelled(f"diagnostics stopped after {done} of {len(transforms)} geometries")
        moved = apply_geometry(transform, embeddings)
        out[name] = {"label": GEOMETRIES[name].label, **diagnose(moved, labels=labels, **options)}
        if progress is not None:
            progress(done + 1, len(transforms), f"diagnosed {GEOMETRIES[name].label} embeddings")
    return out
