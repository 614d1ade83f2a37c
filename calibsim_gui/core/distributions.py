"""What the distribution plots show, as plain arrays: shared by the app's plots and the reports."""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.metrics import METRICS

MAX_BINS = 60
MIN_BINS = 24


def histogram_edges(n_user: int, *groups) -> np.ndarray:
    """Equal bins spanning every finite value of `groups`; fewer bins for few user pairs."""
    values = np.concatenate([np.asarray(g, dtype=float).ravel() for g in groups] + [np.zeros(0)])
    values = values[np.isfinite(values)]
    bins = int(np.clip(2 * np.sqrt(n_user), MIN_BINS, MAX_BINS)) if n_user else MAX_BINS
    if not len(values):
        return np.linspace(0.0, 1.0, bins + 1)
    lo, hi = float(values.min()), float(values.max())
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, bins + 1)


def background_items(profile, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The background sketch's items as raw scores (the metric's orientation), with weights.

    Sketches store the "higher = more similar" view; `as_similarity` is its own inverse.
    Empty arrays when the profile has no background for `metric`.
    """
    sketch = profile.metrics[metric].background if profile and metric in profile.metrics else None
    if sketch is None or sketch.n == 0:
        return np.zeros(0), np.zeros(0)
    items, weights = sketch.weighted_items()
    return METRICS[metric].as_similarity(items), weights


def anchor_medians(profile, metric: str) -> list[tuple[str, float]]:
    """(level label, median raw score) per anchor level that has pairs."""
    if profile is None or metric not in profile.metrics:
        return []
    scores = profile.metrics[metric].anchor_scores
    levels = np.array([pair.level for pair in profile.anchors.pairs])
    return [(level.label, float(METRICS[metric].as_similarity(np.median(scores[levels == level.name]))))
            for level in profile.anchors.levels if (levels == level.name).any()]


def calibrate_form(profile, metric: str, form: str, raw) -> np.ndarray:
    """`raw` scores of `metric` in one calibrated `form` (only that form is computed)."""
    raw = np.asarray(raw, dtype=float)
    calibrator = profile.metrics[metric].calibrators[form]
    return calibrator.transform(METRICS[metric].as_similarity(raw)) if len(raw) else np.zeros(0)


def histograms(user, bg_values, bg_weights, anchors) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edges, background density, user counts) on bins that also span the anchor lines."""
    user = np.asarray(user, dtype=float)
    user = user[np.isfinite(user)]
    edges = histogram_edges(len(user), user, bg_values, [value for _, value in anchors])
    density = (np.histogram(bg_values, edges, weights=bg_weights, density=True)[0]
               if len(bg_values) else np.zeros(0))
    counts = np.histogram(user, edges)[0].astype(float)
    return edges, density, counts
