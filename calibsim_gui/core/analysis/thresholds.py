"""Score thresholds from labelled pairs: "above which score do pairs mean the same?"

A threshold is chosen on a precision-recall curve (highest recall at a target precision,
highest precision at a target recall, or the best F1), with a bootstrap interval: labelled
pairs are resampled and the threshold chosen again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from calibsim_gui.core.analysis.pairs import score_column
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.metrics import METRICS

CRITERIA = ("precision", "recall", "f1")


@dataclass(frozen=True)
class PRCurve:
    """Precision and recall of "score >= threshold" at every distinct score, highest first.

    Attributes
    ----------
    thresholds, precision, recall, f1 : ndarray of shape (n_cuts,)
    """

    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray

    def to_dict(self) -> dict:
        return {name: getattr(self, name).tolist() for name in ("thresholds", "precision", "recall", "f1")}


def pr_curve(scores, same) -> PRCurve:
    """The curve of "score >= t" predicting `same`; a cut never splits tied scores.

    Parameters
    ----------
    scores : array-like of shape (n_pairs,), "higher = more similar", finite
    same : array-like of bool of shape (n_pairs,)
    """
    scores = np.asarray(scores, dtype=np.float64)
    same = np.asarray(same, dtype=bool)
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], same[order]
    ends = np.append(s[1:] < s[:-1], True)
    true_pos = np.cumsum(y)[ends]
    called = np.arange(1, len(s) + 1)[ends]
    precision = true_pos / called
    recall = true_pos / max(int(y.sum()), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.nan_to_num(2 * precision * recall / (precision + recall))
    return PRCurve(s[ends], precision, recall, f1)


def _pick(curve: PRCurve, criterion: str, target: float) -> int | None:
    """Index of the chosen cut, or None when the target cannot be reached."""
    if criterion == "f1":
        return int(np.argmax(curve.f1))
    if criterion == "precision":
        reaching = np.flatnonzero(curve.precision >= target)
        return int(reaching[-1]) if len(reaching) else None        # lowest cut: most recall
    reaching = np.flatnonzero(curve.recall >= target)
    return int(reaching[0]) if len(reaching) else None             # highest cut: most precision


@dataclass(frozen=True)
class Threshold:
    """A chosen cut "score >= threshold means the same", its quality and its uncertainty."""

    threshold: float
    precision: float
    recall: float
    f1: float
    criterion: str
    target: float | None
    interval: tuple[float, float]
    confidence: float
    n_pairs: int
    n_same: int
    n_boot: int
    unreachable: int          # bootstrap resamples in which the target could not be reached

    def to_dict(self) -> dict:
        return asdict(self)


def find_threshold(scores, same, *, criterion: str = "precision", target: float | None = 0.9,
                   confidence: float = 0.95, n_boot: int = 1000, seed: int = 0) -> Threshold:
    """Choose a threshold on `scores` for the labels `same` (see `pr_curve`).

    criterion "precision": the lowest threshold whose precision reaches `target` (the most
    recall at that precision); "recall": the highest threshold whose recall reaches `target`;
    "f1": the threshold of the best F1 (`target` unused). Pairs with a NaN score are left out.
    """
    if criterion not in CRITERIA:
        raise InputError(f"unknown criterion {criterion!r}.", fix=f"choose from {', '.join(CRITERIA)}")
    if criterion != "f1" and not (target is not None and 0 < target <= 1):
        raise InputError(f"the target {criterion} must be above 0 and at most 1, not {target}.",
                         fix="write it as a fraction, e.g. 0.9 for 90 %")
    scores = np.asarray(scores, dtype=np.float64)
    same = np.asarray(same, dtype=bool)
    ok = np.isfinite(scores)
    scores, same = scores[ok], same[ok]
    if same.all() or not same.any():
        raise InputError("the labels need pairs of both kinds (same meaning and not).",
                         fix="label some pairs of each kind, or move the cut between them")
    curve = pr_curve(scores, same)
    chosen = _pick(curve, criterion, target)
    if chosen is None:
        raise InputError(f"no score threshold reaches a {criterion} of {target:.0%} on these pairs.",
                         fix=f"choose a lower target {criterion}")
    rng = np.random.default_rng(seed)
    boot = []
    for rows in rng.integers(0, len(scores), size=(n_boot, len(scores))):
        resampled = pr_curve(scores[rows], same[rows])
        pick = _pick(resampled, criterion, target) if same[rows].any() else None
        boot.append(np.nan if pick is None else resampled.thresholds[pick])
    found = np.asarray(boot)[np.isfinite(boot)]
    tail = (1 - confidence) / 2 * 100
    interval = (tuple(float(v) for v in np.percentile(found, [tail, 100 - tail])) if len(found)
                else (np.nan, np.nan))
    return Threshold(float(curve.thresholds[chosen]), float(curve.precision[chosen]),
                     float(curve.recall[chosen]), float(curve.f1[chosen]), criterion,
                     None if criterion == "f1" else float(target), interval, confidence,
                     len(scores), int(same.sum()), n_boot, int(n_boot - len(found)))


def same_meaning(labels, *, scale=(0.0, 5.0), same_at: float | None = None) -> tuple[np.ndarray, float]:
    """Which labelled pairs count as "the same meaning": label >= `same_at`.

    `same_at` defaults to 1 for a 0/1 label column, else to the upper fifth of `scale`
    (4 on 0-5). Returns the boolean labels of shape (n_pairs,) and the cut used.
    """
    labels = np.asarray(labels, dtype=np.float64)
    if same_at is None:
        binary = len(labels) and np.isin(labels[np.isfinite(labels)], (0.0, 1.0)).all()
        same_at = 1.0 if binary else scale[0] + 0.8 * (scale[1] - scale[0])
    return labels >= same_at, float(same_at)


def threshold_in_raw_units(threshold: Threshold, higher_is_similar: bool) -> dict:
    """`threshold.to_dict()` in a raw metric's own units: for a distance (found on its negated,
    "higher = more similar" view) the cut reads "distance <= threshold"."""
    out = threshold.to_dict()
    out["rule"] = "score >= threshold" if higher_is_similar else "distance <= threshold"
    if not higher_is_similar:
        out["threshold"] = -out["threshold"]
        out["interval"] = tuple(sorted(-v for v in out["interval"]))
    return out


def score_thresholds(frame, rows, same, metric: str, geometry: str = "none", *, criterion: str = "precision",
                     target: float | None = 0.9) -> dict[str, dict]:
    """The threshold of the raw and the calibrated column of `metric` under `geometry` in a scored
    `frame` (`score_pairs`), on its `rows` labelled `same`: ``{"raw": {...}, "calibrated": {...}}``,
    each `Threshold.to_dict()` (raw: in the metric's units, `threshold_in_raw_units`) with the
    ``column``, the ``rule`` and the precision-recall ``curve``."""
    found = {}
    for form in ("raw", "calibrated"):
        column = score_column(metric, form, geometry)
        values = frame[column].to_numpy(dtype=float)[rows]
        similarity = METRICS[metric].as_similarity(values) if form == "raw" else values
        threshold = find_threshold(similarity, same, criterion=criterion, target=target)
        numbers = (threshold_in_raw_units(threshold, METRICS[metric].higher_is_similar) if form == "raw"
                   else {**threshold.to_dict(), "rule": "score >= threshold"})
        finite = np.isfinite(similarity)
        found[form] = {"column": column, **numbers, "curve": pr_curve(similarity[finite], same[finite]).to_dict()}
    return found
