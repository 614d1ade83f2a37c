"""What the distribution plots show, as plain arrays: shared by the app's plots and the reports."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibsim_gui.core.metrics import METRICS

MAX_BINS = 60
MIN_BINS = 24
MAP_POINTS = 200        # grid points of the calibrated map's curve
MAP_MARGIN = 0.06       # the map's score axis reaches this share of its span beyond the references
LEVEL_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#17becf", "#bcbd22", "#7f7f7f")    # anchor levels in the app's map and the report's


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


@dataclass(frozen=True)
class CalibratedMap:
    """The default calibrated scale of one metric (`ReferenceCurveCalibrator`) as arrays.

    Scores are the metric's "higher = more similar" view (distances negated).

    Attributes
    ----------
    x : ndarray of shape (MAP_POINTS,)
        Scores from below the lowest reference to beyond the highest.
    y, lo, hi : ndarray of shape (MAP_POINTS,)
        The calibrated value of `x` and its 95 % interval.
    unrelated, identical : float
        The scores mapped to 0 (a typical pair of unrelated sentences) and 1 (identical text).
    scores, targets : ndarray of shape (n_pairs,)
        Each anchor pair's score and its level's target.
    levels : list of (label, target, ndarray of pair indices)
        The anchor levels that have pairs, in ladder order.
    """

    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    unrelated: float
    identical: float
    scores: np.ndarray
    targets: np.ndarray
    levels: list[tuple[str, float, np.ndarray]]


def similarity_label(metric: str) -> str:
    """Axis title of a metric's "higher = more similar" view: raw cosine, negated distances."""
    if METRICS[metric].higher_is_similar:
        return f"raw {metric} (higher = more similar)"
    return f"−{metric}: raw distance negated (higher = more similar)"


def calibrated_map(profile, metric: str, geometry: str = "none") -> CalibratedMap:
    """What the "Calibrated map" shows for `metric` under `geometry`: the fitted curve with its
    band, the two ends of the scale and the anchor pairs at their levels' targets."""
    reference = profile.references(geometry)[metric]
    curve = reference.calibrators["calibrated"]
    scores = reference.anchor_scores
    low, high = min(scores.min(), curve.unrelated_), max(scores.max(), curve.identical_)
    margin = MAP_MARGIN * (high - low)
    x = np.linspace(low - margin, high + margin, MAP_POINTS)
    levels = np.array([pair.level for pair in profile.anchors.pairs])
    targets = profile.anchors.targets
    return CalibratedMap(
        x, curve.transform(x), *curve.interval(x), curve.unrelated_, curve.identical_, scores,
        np.array([targets[name] for name in levels]),
        [(level.label, level.target, np.flatnonzero(levels == level.name))
         for level in profile.anchors.levels if (levels == level.name).any()])
