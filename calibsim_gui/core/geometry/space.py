"""The embedding space of a reference profile, raw and under each geometry fix.

What the app's Space tab and `calibsim diagnose` show: diagnostics of the profile's background
sample, the cosines of random pairs of it (how crowded raw cosines are), and the variance
spectrum, for the raw embeddings and every geometry fix the profile holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.background import random_pairs
from calibsim_gui.core.geometry.diagnostics import diagnose_geometries, variance_spectrum
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import apply_geometry

RANDOM_PAIRS = 5000
SPECTRUM_COMPONENTS = 50


@dataclass
class SpaceReport:
    """Per geometry name: diagnostics dict, random-pair cosines, variance shares (descending)."""

    diagnostics: dict[str, dict]
    random_cosines: dict[str, np.ndarray]
    spectra: dict[str, np.ndarray]
    texts: int


def profile_space(profile, embeddings=None, *, labels=None, seed: int = 0, progress=None,
                  should_stop=None) -> SpaceReport:
    """Diagnose `embeddings` (default: the profile's background sample) raw and under each fix.

    The fixes are the ones fitted on the profile's background, never on `embeddings`; the
    background sample is IsoScore*'s reference covariance.
    """
    if embeddings is None:
        embeddings = profile.query_reference
    if embeddings is None or len(embeddings) < 3:
        raise InputError("this reference profile has no background sample to diagnose.",
                         fix="build a background in the Background tab (or `calibsim profile build "
                             "--background ...`), or pass documents to diagnose")
    transforms = {name: profile.transform(name) for name in profile.geometry_names()}
    diagnostics = diagnose_geometries(embeddings, transforms, labels=labels,
                                      reference=profile.query_reference, seed=seed,
                                      progress=progress, should_stop=should_stop)
    first, second = random_pairs(len(embeddings), RANDOM_PAIRS, seed=seed)
    cosines, spectra = {}, {}
    for name, transform in transforms.items():
        moved = apply_geometry(transform, embeddings).astype(np.float64)
        cosines[name] = METRICS["cosine"].pairs(moved[first], moved[second])
        variances = variance_spectrum(moved)
        spectra[name] = variances[:SPECTRUM_COMPONENTS] / variances.sum()
    return SpaceReport(diagnostics, cosines, spectra, len(embeddings))


def _format(fmt: str, value: float) -> str:
    text = fmt.format(value)
    return text.lstrip("-") if float(text.rstrip("%")) == 0 else text      # no "-0.000"


def diagnostics_table(space: SpaceReport) -> list[tuple[str, dict[str, str]]]:
    """(row label, geometry -> formatted value) rows for tables in the app and the CLI."""
    rows = [("mean cosine of random pairs", "mean_random_cosine", "{:.3f}"),
            ("IsoScore (0-1, 1 = isotropic)", "isoscore", "{:.3f}"),
            ("IsoScore* (shrunk to background)", "isoscore_star", "{:.3f}"),
            ("effective rank", "effective_rank", "{:.1f}"),
            ("variance on top direction", "top_pc_share", "{:.1%}"),
            ("variance on top 10 directions", "top10_pc_share", "{:.1%}"),
            ("hubness (k-occurrence skew)", "hubness", "{:.2f}"),
            ("silhouette of labels (cosine)", "silhouette", "{:.3f}"),
            ("silhouette of labels (euclidean)", "silhouette_euclidean", "{:.3f}"),
            ("Calinski-Harabasz (higher = apart)", "calinski_harabasz", "{:.1f}"),
            ("Davies-Bouldin (lower = apart)", "davies_bouldin", "{:.3f}"),
            ("Dunn index (higher = apart)", "dunn", "{:.4f}"),
            ("classifier accuracy (5-fold)", "classifier_accuracy", "{:.1%}"),
            ("classifier chance level", "classifier_chance", "{:.1%}")]
    out = []
    for label, key, fmt in rows:
        values = {g: d.get(key) for g, d in space.diagnostics.items()}
        if all(v is None for v in values.values()):
            continue
        out.append((label, {g: "–" if v is None else _format(fmt, v) for g, v in values.items()}))
    out.append(("vector length (mean ± sd)", {g: f"{d['norm']['mean']:.3f} ± {d['norm']['sd']:.3f}"
                                              for g, d in space.diagnostics.items()}))
    return out
