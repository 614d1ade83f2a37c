"""Diagnostics of an embedding space: why raw cosines crowd together, and what a fix changes.

Pure functions on an embedding matrix of shape (n_texts, dim). `diagnose` gathers them into
one JSON-able dict; `diagnose_geometries` runs it for the raw embeddings and each geometry fix.
"""

from __future__ import annotations

import math

import numpy as np

from calibsim_gui.core.errors import Cancelled
from calibsim_gui.core.geometry.background import random_pairs
from calibsim_gui.core.geometry.hubness import hubness
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import GEOMETRIES, GeometryTransform, apply_geometry
from calibsim_gui.core.progress import Progress, ShouldStop

DIAGNOSTICS = {
    "mean_random_cosine": "mean cosine of random pairs of different texts (0 for an isotropic "
                          "space; high = every pair looks similar)",
    "isoscore": "IsoScore: how evenly the variance spreads over all dimensions (0 = one "
                "direction, 1 = all equally; Rudman et al. 2022)",
    "isoscore_star": "IsoScore*: IsoScore of the covariance shrunk towards the background's "
                     "(zeta = 0.2), steadier on small samples (Rudman & Eickhoff 2024)",
    "effective_rank": "effective rank: exp of the entropy of the normalised singular values "
                      "(Roy & Vetterli 2007), on the embeddings as they are",
    "top_pc_share": "share of the variance along the first principal direction",
    "top10_pc_share": "share of the variance along the first 10 principal directions",
    "norm": "vector lengths (mean, sd, min, median, max)",
    "hubness": "skewness of the 10-occurrence distribution (> 1: some texts are everybody's "
               "nearest neighbour)",
    "silhouette": "silhouette score of the documents' labels, cosine distance (-1..1; higher = "
                  "labels better separated)",
    "silhouette_euclidean": "silhouette score of the labels with euclidean distance (-1..1; "
                            "higher = better separated)",
    "calinski_harabasz": "Calinski-Harabasz index of the labels: between- over within-group "
                         "dispersion (higher = better separated)",
    "davies_bouldin": "Davies-Bouldin index of the labels: mean worst ratio of spread to centroid "
                      "distance (lower = better separated)",
    "dunn": "Dunn index of the labels: smallest distance between groups over the largest group "
            "diameter, euclidean (higher = better separated)",
    "classifier_accuracy": "cross-validated accuracy of a logistic regression telling the labels "
                           "apart (5 folds, stratified, seeded)",
    "classifier_chance": "accuracy of always guessing the most common label",
}
LABEL_DIAGNOSTICS = ("silhouette", "silhouette_euclidean", "calinski_harabasz", "davies_bouldin",
                     "dunn", "classifier_accuracy", "classifier_chance")
"""Keys of `diagnose` that need labels (None without them)."""
HUBNESS_NEEDS = "not enough documents for hubness (needs ≥ k+1 = {needs}, has {has})"
CLASSIFIER_FOLDS = 5
ISOSCORE_STAR_ZETA = 0.2
"""Shrinkage ζ of the `isoscore_star` diagnostic towards the background's covariance."""


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
    return _isoscore_of(variance_spectrum(embeddings))


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


def isoscore_star(embeddings, *, reference_covariance=None, zeta: float = 0.0) -> float:
    """IsoScore* (Rudman & Eickhoff, "Stable Anisotropic Regularization", ICLR 2024), in [0, 1].

    IsoScore computed from the eigenvalues of a shrunk covariance
    ``Sigma_zeta = (1 - zeta) Sigma_S + zeta C0``: ``Sigma_S`` is the (unbiased) covariance of
    `embeddings`, ``C0`` = `reference_covariance` a covariance estimated on many more points
    (e.g. the background), which steadies the score on small samples. Steps 3-6 are IsoScore's.
    With ``zeta = 0`` it is `isoscore` of the embeddings (its PCA variances are the eigenvalues).
    """
    x = _matrix(embeddings)
    centred = x - x.mean(axis=0)
    covariance = centred.T @ centred / (len(x) - 1)      # unbiased, as the IsoScore package
    if zeta:
        if reference_covariance is None:
            raise ValueError("IsoScore* with zeta > 0 needs a reference covariance C0")
        c0 = np.asarray(reference_covariance, dtype=np.float64)
        if c0.shape != covariance.shape:
            raise ValueError(f"C0 has shape {c0.shape}, the embeddings' covariance {covariance.shape}")
        if not 0.0 <= zeta <= 1.0:
            raise ValueError("zeta must be between 0 and 1")
        covariance = (1 - zeta) * covariance + zeta * c0
    return _isoscore_of(np.clip(np.linalg.eigvalsh((covariance + covariance.T) / 2), 0.0, None))


def _isoscore_of(variances: np.ndarray) -> float:
    """Steps 3-6 of IsoScore on a variance (eigenvalue) vector."""
    n = len(variances)
    if n < 2 or not variances.any():
        raise ValueError("IsoScore needs at least two dimensions and points that vary")
    scaled = math.sqrt(n) * variances / np.linalg.norm(variances)
    defect = np.linalg.norm(scaled - 1) / math.sqrt(2 * (n - math.sqrt(n)))
    phi = (n - defect ** 2 * (n - math.sqrt(n))) ** 2 / n ** 2
    return float((n * phi - 1) / (n - 1))


def _grouped(embeddings, labels) -> tuple[np.ndarray, np.ndarray] | None:
    """Embeddings and integer labels, or None unless 2 <= groups < texts."""
    labels = np.asarray(labels)
    if not 2 <= len(np.unique(labels)) < len(labels):
        return None
    return _matrix(embeddings), np.unique(labels, return_inverse=True)[1]


def silhouette_euclidean(embeddings, labels) -> float | None:
    """Silhouette score of `labels` with euclidean distance; None with fewer than two labels."""
    from sklearn.metrics import silhouette_score

    grouped = _grouped(embeddings, labels)
    return None if grouped is None else float(silhouette_score(*grouped, metric="euclidean"))


def calinski_harabasz(embeddings, labels) -> float | None:
    """Calinski-Harabasz index (scikit-learn); None with fewer than two labels."""
    from sklearn.metrics import calinski_harabasz_score

    grouped = _grouped(embeddings, labels)
    return None if grouped is None else float(calinski_harabasz_score(*grouped))


def davies_bouldin(embeddings, labels) -> float | None:
    """Davies-Bouldin index (scikit-learn; lower = better separated); None with < 2 labels."""
    from sklearn.metrics import davies_bouldin_score

    grouped = _grouped(embeddings, labels)
    return None if grouped is None else float(davies_bouldin_score(*grouped))


def dunn_index(embeddings, labels) -> float | None:
    """Dunn index: min euclidean distance between points of different groups over the max
    distance between points of one group (Dunn 1974). None with fewer than two labels, inf when
    every group is a single point repeated.
    """
    grouped = _grouped(embeddings, labels)
    if grouped is None:
        return None
    x, groups = grouped
    members = [x[groups == g] for g in range(groups.max() + 1)]
    distance = METRICS["euclidean"].matrix
    diameter = max(float(distance(m, m).max()) for m in members)
    separation = min(float(distance(members[i], members[j]).min())
                     for i in range(len(members)) for j in range(i + 1, len(members)))
    return math.inf if diameter == 0 else separation / diameter


def classifier_accuracy(embeddings, labels, *, seed: int = 0,
                        folds: int = CLASSIFIER_FOLDS) -> dict[str, float] | None:
    """Cross-validated accuracy of a logistic regression separating the labelled groups.

    Stratified `folds`-fold split (fewer when the smallest group is smaller), shuffled with
    `seed`; scikit-learn's ``LogisticRegression(max_iter=2000)`` on the embeddings as given.

    Returns
    -------
    ``{"accuracy": mean fold accuracy, "chance": share of the commonest label, "folds": k}``,
    or None when a group has a single text or there are fewer than two groups.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    grouped = _grouped(embeddings, labels)
    if grouped is None:
        return None
    x, groups = grouped
    counts = np.bincount(groups)
    k = min(folds, int(counts.min()))
    if k < 2:
        return None
    split = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    scores = cross_val_score(LogisticRegression(max_iter=2000), x, groups, cv=split,
                             scoring="accuracy")
    return {"accuracy": float(scores.mean()), "chance": float(counts.max() / counts.sum()), "folds": k}


def diagnose(embeddings, *, labels=None, reference=None, seed: int = 0, n_pairs: int = 10_000,
             k: int = 10, max_points: int = 5000) -> dict:
    """Every diagnostic of one embedding matrix, as a JSON-able dict (keys as in `DIAGNOSTICS`,
    and ``"notes"``: why a diagnostic is None, e.g. hubness of k texts or fewer).

    `reference` (background embeddings in the same space, shape (m, dim)) gives IsoScore* its
    C0, their unbiased covariance, with ζ = `ISOSCORE_STAR_ZETA`; without it IsoScore* is None.
    Hubness and silhouette cost O(n^2); they use a seeded sample of at most `max_points`
    texts (recorded as ``"sampled"``). `labels` (one per text) enable the cluster-structure
    diagnostics (`LABEL_DIAGNOSTICS`: silhouette with cosine and euclidean distance,
    Calinski-Harabasz, Davies-Bouldin, Dunn, and a logistic-regression classifier's accuracy).
    """
    x = _matrix(embeddings)
    if labels is not None and len(labels) != len(x):
        raise ValueError(f"{len(labels)} labels for {len(x)} embeddings")
    sample = np.arange(len(x))
    if len(x) > max_points:
        sample = np.sort(np.random.default_rng(seed).choice(len(x), max_points, replace=False))
    shares = principal_shares(x, k=10)
    enough = len(sample) > k
    out = {
        "texts": len(x), "dimension": x.shape[1], "sampled": len(sample), "seed": seed,
        "mean_random_cosine": mean_random_cosine(x, n_pairs=n_pairs, seed=seed),
        "isoscore": isoscore(x),
        "isoscore_star": None if reference is None else isoscore_star(
            x, reference_covariance=np.cov(_matrix(reference), rowvar=False), zeta=ISOSCORE_STAR_ZETA),
        "effective_rank": effective_rank(x),
        "top_pc_share": float(shares[0]),
        "top10_pc_share": float(shares.sum()),
        "norm": norm_stats(x),
        "hubness": hubness(x[sample], k=k) if enough else None,
        **{key: None for key in LABEL_DIAGNOSTICS},
        "notes": [] if enough else [HUBNESS_NEEDS.format(needs=k + 1, has=len(sample))],
    }
    if labels is not None:
        xs, ls = x[sample], np.asarray(labels)[sample]
        out["silhouette"] = silhouette(xs, ls)
        out["silhouette_euclidean"] = silhouette_euclidean(xs, ls)
        out["calinski_harabasz"] = calinski_harabasz(xs, ls)
        out["davies_bouldin"] = davies_bouldin(xs, ls)
        out["dunn"] = dunn_index(xs, ls)
        classifier = classifier_accuracy(xs, ls, seed=seed)
        if classifier is not None:
            out["classifier_accuracy"] = classifier["accuracy"]
            out["classifier_chance"] = classifier["chance"]
    return out


def diagnose_geometries(embeddings, transforms: dict[str, GeometryTransform | None], *,
                        labels=None, reference=None, progress: Progress | None = None,
                        should_stop: ShouldStop | None = None, **options) -> dict[str, dict]:
    """`diagnose` of `embeddings` under each fitted geometry transform (None = raw).

    Parameters
    ----------
    transforms : dict geometry name -> fitted transform, e.g. ``profile`` transforms or
        ``fit_geometries(background)`` plus ``{"none": None}``; fit them on background texts.
    reference : background embeddings (untransformed) for IsoScore*, moved by each transform.
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
        background = None if reference is None else apply_geometry(transform, reference)
        out[name] = {"label": GEOMETRIES[name].label,
                     **diagnose(moved, labels=labels, reference=background, **options)}
        if progress is not None:
            progress(done + 1, len(transforms), f"diagnosed {GEOMETRIES[name].label} embeddings")
    return out
