"""What the distribution plots show, as plain arrays: shared by the app's plots and the reports."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibsim_gui.core.analysis.correlation import spearman
from calibsim_gui.core.analysis.pairs import split_score_column
from calibsim_gui.core.embedding.chunking import TRUNCATED_COLUMN
from calibsim_gui.core.embedding.readability import UNREADABLE_COLUMN
from calibsim_gui.core.geometry.metrics import METRICS

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
    """The default calibrated scale of one metric (`ReferenceScaleCalibrator`) as arrays.

    Scores are the metric's "higher = more similar" view (distances negated).

    Attributes
    ----------
    x : ndarray of shape (MAP_POINTS,)
        Scores from below the lowest reference to beyond the highest.
    y, lo, hi : ndarray of shape (MAP_POINTS,)
        The calibrated value of `x` and its band: where 80 % of people's scores fall (the human
        agreement band) when the profile has one, else the 95 % reference uncertainty.
    band_label : str
        What the band is, in words.
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
    band_label: str
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
    """What the "Calibrated map" shows for `metric` under `geometry`: the calibrated line with its
    band, the two ends of the scale and the anchor pairs at their levels' targets."""
    reference = profile.references(geometry)[metric]
    curve = reference.calibrators["calibrated"]
    scores = reference.anchor_scores
    low, high = min(scores.min(), curve.unrelated_), max(scores.max(), curve.identical_)
    margin = MAP_MARGIN * (high - low)
    x = np.linspace(low - margin, high + margin, MAP_POINTS)
    levels = np.array([pair.level for pair in profile.anchors.pairs])
    targets = profile.anchors.targets
    y = curve.transform(x)
    if reference.band is not None:
        rate = reference.band.rates[0]
        band, label = reference.band.band(y, rate), f"{rate:.0%} of people's scores".replace("%", " %")
    else:
        band, label = curve.interval(x), "reference uncertainty (95 %)"
    return CalibratedMap(
        x, y, *band, label, curve.unrelated_, curve.identical_, scores,
        np.array([targets[name] for name in levels]),
        [(level.label, level.target, np.flatnonzero(levels == level.name))
         for level in profile.anchors.levels if (levels == level.name).any()])


# --------------------------------------------------------------------------- agreement with labels

DISAGREEMENT_COLUMN = "disagreement"
_NICE_SCALE_TOPS = (1.0, 5.0, 7.0, 10.0, 100.0)


def label_candidates(frame, provenance: dict | None = None) -> list[str]:
    """Input columns of a scored frame that can be read as human scores: every non-empty value
    is a number. Score columns, flags and added norms are left out; the column the input was
    loaded with (``provenance["agreement"]["label"]``) comes first."""
    import pandas as pd

    found = []
    for name in frame.columns:
        name = str(name)
        if (split_score_column(name) is not None or name in (TRUNCATED_COLUMN, UNREADABLE_COLUMN, DISAGREEMENT_COLUMN)
                or name.endswith(("_norm", "_lo", "_hi"))):
            continue
        column = frame[name]
        if pd.api.types.is_numeric_dtype(column):
            values = column.to_numpy(dtype=float)
        else:
            head = column.head(200).astype(str).str.strip()      # sentences are rejected at once
            if pd.to_numeric(head[head != ""], errors="coerce").isna().any():
                continue
            text = column.astype(str).str.strip()
            text = text[text != ""]
            values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
        if len(values) and np.isfinite(values).any() and not np.isnan(values).all() \
                and (pd.api.types.is_numeric_dtype(column) or np.isfinite(values).all()):
            found.append(name)
    loaded = ((provenance or {}).get("agreement") or {}).get("label")
    if loaded in found:
        found.remove(loaded)
        found.insert(0, loaded)
    return found


def label_values(column) -> np.ndarray:
    """A label column as floats (empty cells and cells that are not a number: NaN)."""
    import pandas as pd

    series = pd.Series(column)
    # whole numbers or float64 already: not read again from their text (35 ms for 100,000 pairs,
    # paid by every view that shows the agreement); float32 still is (its text is what was meant)
    if pd.api.types.is_integer_dtype(series.dtype) or (
            pd.api.types.is_float_dtype(series.dtype) and series.dtype.itemsize == 8):
        return series.to_numpy(dtype=float, na_value=np.nan)
    return pd.to_numeric(series.astype(str).str.strip().replace("", np.nan), errors="coerce").to_numpy(dtype=float)


def guess_scale(values) -> tuple[float, float]:
    """The scale human scores were probably given on: 0 (or the floor of a negative minimum) to
    the smallest of 1, 5, 7, 10, 100 that holds the maximum (else the maximum)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return 0.0, 5.0
    low = 0.0 if values.min() >= 0 else float(np.floor(values.min()))
    high = next((top for top in _NICE_SCALE_TOPS if values.max() <= top), float(np.ceil(values.max())))
    return (low, high) if high > low else (low, low + 1.0)


@dataclass(frozen=True)
class Agreement:
    """How well calibrated scores (0-1) match human scores rescaled to 0-1.

    Attributes
    ----------
    human, calibrated, disagreement : ndarray of shape (n_rows,)
        Human score on 0-1 (``(label - low) / (high - low)``), the calibrated score and
        ``|calibrated - human|``; NaN where either is missing.
    n : int
        Rows with both values.
    mae, rmse : float
        Mean absolute and root mean squared error on the 0-1 scale (NaN without rows).
    spearman_x100 : float
        Rank correlation x100; the same for raw and calibrated scores, since any monotone
        calibration keeps the ranks.
    """

    label: str
    scale: tuple[float, float]
    human: np.ndarray
    calibrated: np.ndarray
    disagreement: np.ndarray
    n: int
    mae: float
    rmse: float
    spearman_x100: float


SPEARMAN_NOTE = ("Spearman compares ranks only, and a calibration never changes the order of the "
                 "scores, so raw and calibrated agree by construction. What a calibration adds is "
                 "the 0–1 meaning: the error (MAE, RMSE) between calibrated scores and human scores "
                 "rescaled to 0–1 measures it.")


def agreement(labels, calibrated, scale, label: str = "") -> Agreement:
    """Compare `calibrated` scores with human `labels` given on `scale` (low, high)."""
    low, high = (float(v) for v in scale)
    if not high > low:
        raise ValueError(f"the scale {low:g}-{high:g} is not a range")
    human = (label_values(labels) - low) / (high - low)
    calibrated = np.asarray(calibrated, dtype=float)
    disagreement = np.abs(calibrated - human)
    ok = np.isfinite(disagreement)
    n = int(ok.sum())
    mae = float(disagreement[ok].mean()) if n else float("nan")
    rmse = float(np.sqrt(np.mean(disagreement[ok] ** 2))) if n else float("nan")
    rho = float("nan")
    if n > 2 and np.ptp(human[ok]) > 0 and np.ptp(calibrated[ok]) > 0:
        rho = spearman(calibrated[ok], human[ok]) * 100
    return Agreement(label, (low, high), human, calibrated, disagreement, n, mae, rmse, rho)


def label_rows(positions, widths) -> list[int]:
    """Rows for labels starting at `positions` (pixels) with `widths` so that no two labels in
    one row overlap: each label takes the first row whose last label ends before it starts."""
    order = np.argsort(np.asarray(positions, dtype=float), kind="stable")
    ends: list[float] = []
    rows = [0] * len(order)
    for i in order:
        start, width = float(positions[i]), float(widths[i])
        row = next((r for r, end in enumerate(ends) if end <= start), len(ends))
        if row == len(ends):
            ends.append(0.0)
        ends[row] = start + width
        rows[i] = row
    return rows
