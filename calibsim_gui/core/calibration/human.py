"""Human-judgement calibration: a monotone map from a metric's score to expected human similarity.

Fitted by isotonic regression on labelled pairs (STS-style scores on a declared scale such as
0-5), checked by cross-validation split *by sentence* (no sentence is in both the fitted and the
checked pairs), with a reliability diagram. A threshold helper picks the score at which pairs
can be called "same meaning" with a chosen precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibsim_gui.core.calibration.calibrators import Calibrator, is_finite_vector
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import GEOMETRIES
from calibsim_gui.core.io.atomic import write_text_atomic
from calibsim_gui.core.io.files import NUMBER_LIMIT, number_out_of_range, read_user_json
from calibsim_gui.core.io.inputs import PairTable, load_pairs
from calibsim_gui.core.io.output import dump_json

MIN_HUMAN_PAIRS = 100
"""Fewer labelled pairs are refused: the map would follow their noise."""
FEW_HUMAN_PAIRS = 300
"""Fewer labelled pairs fit, with a warning."""


def _check_scale(scale) -> tuple[float, float]:
    low, high = (float(v) for v in scale)
    if not (np.isfinite([low, high]).all() and high > low):
        raise InputError(f"the declared human scale {low:g}-{high:g} is not a range.",
                         fix="give the lowest and the highest possible score, e.g. --scale 0,5")
    return low, high


def _isotonic(scores: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thresholds (x, y) of the increasing isotonic fit of `targets` (in [0, 1]) on `scores`."""
    from sklearn.isotonic import IsotonicRegression

    fit = IsotonicRegression(increasing=True, out_of_bounds="clip", y_min=0.0, y_max=1.0)
    fit.fit(scores, targets)
    return fit.X_thresholds_.astype(np.float64), fit.y_thresholds_.astype(np.float64)


class HumanCalibrator(Calibrator):
    """Isotonic map from a metric score to expected human similarity in [0, 1].

    Parameters
    ----------
    scale : (low, high)
        The declared scale of the human scores (e.g. (0, 5) for STS); it maps to [0, 1].
    metric, geometry : str
        Which score the map was fitted on (``<metric>_raw`` under ``geometry``); recorded so
        that it is applied to the same score.
    model : str or None
        Fingerprint id of the model whose scores were used (it is refused for another model).

    Attributes
    ----------
    x_, y_ : ndarray of shape (n_thresholds,)
        The fitted step function's thresholds: scores ("higher = more similar") and expected
        human similarity in [0, 1]; linear in between, constant beyond the ends.
    n_pairs_ : int
    warnings_ : list of str
    """

    _settings = ("scale", "metric", "geometry", "model")
    _state = ("x_", "y_", "n_pairs_", "warnings_")
    _arrays = ("x_", "y_")

    def __init__(self, *, scale=(0.0, 5.0), metric: str = "cosine", geometry: str = "none",
                 model: str | None = None):
        self.scale = tuple(float(v) for v in scale)
        self.metric = metric
        self.geometry = geometry
        self.model = model

    def fit(self, scores, human) -> "HumanCalibrator":
        """Fit on labelled pairs.

        Parameters
        ----------
        scores : array-like of shape (n_pairs,), "higher = more similar"
        human : array-like of shape (n_pairs,), human scores on `scale`

        Raises
        ------
        InputError
            Fewer than `MIN_HUMAN_PAIRS` usable pairs, or human scores outside the scale.
        """
        scores, targets = self._targets(scores, human)
        if len(scores) < MIN_HUMAN_PAIRS:
            raise InputError(f"only {len(scores)} labelled pairs; a human calibration needs at "
                             f"least {MIN_HUMAN_PAIRS} (a few hundred for a stable map).",
                             fix="label more pairs")
        low, high = _check_scale(self.scale)
        self.warnings_ = label_warnings(low + targets * (high - low), refuse_from=None)
        if len(scores) < FEW_HUMAN_PAIRS:
            self.warnings_.append(f"only {len(scores)} labelled pairs (< {FEW_HUMAN_PAIRS}); the "
                                  "map is coarse and its steps follow individual pairs")
        self.x_, self.y_ = _isotonic(scores, targets)
        self.n_pairs_ = len(scores)
        return self

    def _targets(self, scores, human) -> tuple[np.ndarray, np.ndarray]:
        """Finite (score, human on [0, 1]) pairs; human scores outside the scale are refused."""
        scores, human = np.asarray(scores, dtype=np.float64), np.asarray(human, dtype=np.float64)
        if scores.shape != human.shape or scores.ndim != 1:
            raise ValueError(f"scores {scores.shape} and human scores {human.shape} must be 1-d "
                             "and of equal length")
        low, high = _check_scale(self.scale)
        ok = np.isfinite(scores) & np.isfinite(human)
        outside = np.flatnonzero(ok & ((human < low) | (human > high)))
        if len(outside):
            raise InputError(f"human score {human[outside[0]]:g} of pair {outside[0] + 1} is outside "
                             f"the declared scale {low:g}-{high:g}.",
                             fix="declare the scale the pairs were labelled on")
        return scores[ok], (human[ok] - low) / (high - low)

    def transform(self, scores) -> np.ndarray:
        """Expected human similarity in [0, 1] of `scores` ("higher = more similar"); NaN kept."""
        self._check_fitted()
        s = np.asarray(scores, dtype=np.float64)
        return np.where(np.isnan(s), np.nan, np.interp(s, self.x_, self.y_))

    def transform_to_scale(self, scores) -> np.ndarray:
        """Expected human score on the declared scale (e.g. 0-5)."""
        low, high = self.scale
        return low + (high - low) * self.transform(scores)

    @classmethod
    def from_dict(cls, d: dict) -> "HumanCalibrator":
        if d.get("type") != cls.__name__:
            raise ValueError(f"not a human calibration (type {d.get('type')!r})")
        obj = cls(**{k: d[k] for k in cls._settings})
        obj.x_, obj.y_ = (np.asarray(d[k], dtype=np.float64) for k in cls._arrays)
        obj.n_pairs_, obj.warnings_ = d["n_pairs_"], d["warnings_"]
        obj._validate()
        return obj

    def _validate(self) -> None:
        """Raise ValueError unless the loaded map could have come from `fit` for a named model:
        finite, non-decreasing thresholds mapping into [0, 1], a real scale, metric and geometry."""
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError('it names no model ("model" is missing or null), so it cannot be '
                             "matched to the model in use")
        if not (isinstance(self.metric, str) and self.metric in METRICS
                and isinstance(self.geometry, str) and self.geometry in GEOMETRIES):
            raise ValueError(f"unknown metric {self.metric!r} or geometry {self.geometry!r}")
        if len(self.scale) != 2 or not (np.isfinite(self.scale).all() and self.scale[1] > self.scale[0]):
            raise ValueError(f"the scale {self.scale} is not a range")
        if type(self.n_pairs_) is not int or self.n_pairs_ < MIN_HUMAN_PAIRS or not (
                isinstance(self.warnings_, list) and all(isinstance(w, str) for w in self.warnings_)):
            raise ValueError(f"it must be fitted on at least {MIN_HUMAN_PAIRS} pairs and list its warnings")
        x, y = self.x_, self.y_
        if not (is_finite_vector(x) and is_finite_vector(y) and len(x) == len(y)
                and np.all(np.diff(x) >= 0) and np.all(np.diff(y) >= 0) and y[0] >= 0 and y[-1] <= 1):
            raise ValueError("its thresholds must be finite and increasing, mapping scores into 0-1")


def _sentence_key(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def sentence_groups(texts_a, texts_b) -> np.ndarray:
    """Group of each pair: connected components of the graph of sentences linked by pairs.

    Two pairs sharing a sentence (compared ignoring case and whitespace), directly or through
    other pairs, get the same group, so a split by group never puts a sentence on both sides.

    Returns
    -------
    ndarray of shape (n_pairs,), int
    """
    import pandas as pd
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    keys = [_sentence_key(t) for t in texts_a] + [_sentence_key(t) for t in texts_b]
    codes, uniques = pd.factorize(pd.Series(keys))
    n = len(keys) // 2
    graph = coo_matrix((np.ones(n), (codes[:n], codes[n:])), shape=(len(uniques), len(uniques)))
    _, component = connected_components(graph, directed=False)
    return component[codes[:n]]


def reliability_curve(predicted, observed, *, n_bins: int = 10) -> dict[str, list]:
    """Reliability diagram data: mean observed vs mean predicted in equal-width bins of [0, 1].

    Empty bins are left out. Returns lists ``bin_low``, ``bin_high``, ``count``,
    ``mean_predicted``, ``mean_observed`` (JSON-able).
    """
    import pandas as pd  # heavy: imported when a calibration is fitted, not with the window

    predicted, observed = np.asarray(predicted, dtype=float), np.asarray(observed, dtype=float)
    edges = np.round(np.linspace(0.0, 1.0, n_bins + 1), 12)
    index = np.clip(np.searchsorted(edges, predicted, side="right") - 1, 0, n_bins - 1)
    bins = pd.DataFrame({"p": predicted, "o": observed}).groupby(index).agg(
        count=("p", "size"), mean_predicted=("p", "mean"), mean_observed=("o", "mean"))
    return {"bin_low": edges[bins.index].tolist(), "bin_high": edges[bins.index + 1].tolist(),
            **{column: bins[column].tolist() for column in bins}}


@dataclass(frozen=True)
class HumanValidation:
    """Cross-validated error of a human calibration, split by sentence.

    Attributes
    ----------
    mae, rmse : float
        Out-of-fold mean absolute / root mean squared error on the [0, 1] scale.
    mae_folds : list of float
    predicted, observed : ndarray of shape (n_pairs,)
        Out-of-fold expected human similarity and the human scores, both on [0, 1].
    folds : ndarray of int of shape (n_pairs,)
        The fold in which each pair was checked.
    n_groups, largest_group : int
        Sentence groups (see `sentence_groups`) and the pairs in the largest one.
    reliability : dict
        `reliability_curve` of the out-of-fold predictions.
    """

    mae: float
    rmse: float
    mae_folds: list[float]
    predicted: np.ndarray
    observed: np.ndarray
    folds: np.ndarray
    n_splits: int
    n_groups: int
    largest_group: int
    reliability: dict

    def to_dict(self) -> dict:
        """JSON-able summary (without the per-pair arrays)."""
        return {"mae": self.mae, "rmse": self.rmse, "mae_folds": self.mae_folds,
                "n_pairs": len(self.predicted), "n_splits": self.n_splits,
                "n_groups": self.n_groups, "largest_group": self.largest_group,
                "split": "by sentence (pairs sharing a sentence stay on one side)",
                "reliability": self.reliability}


def cross_validate_human(scores, human, texts_a, texts_b, *, scale=(0.0, 5.0), n_splits: int = 5,
                         n_bins: int = 10) -> HumanValidation:
    """Out-of-fold error of the isotonic map, folds split by sentence (sklearn `GroupKFold`).

    Parameters
    ----------
    scores, human : array-like of shape (n_pairs,)
        Metric scores ("higher = more similar") and human scores on `scale`.
    texts_a, texts_b : sequences of str of shape (n_pairs,)
        The pairs' sentences; they define the groups.
    """
    from sklearn.model_selection import GroupKFold

    checker = HumanCalibrator(scale=scale)
    scores, human = np.asarray(scores, dtype=np.float64), np.asarray(human, dtype=np.float64)
    ok = np.isfinite(scores) & np.isfinite(human)
    scores, targets = checker._targets(scores[ok], human[ok])
    if len(scores) < MIN_HUMAN_PAIRS:
        raise InputError(f"only {len(scores)} labelled pairs; checking a human calibration needs "
                         f"at least {MIN_HUMAN_PAIRS}.", fix="label more pairs")
    groups = sentence_groups(np.asarray(texts_a)[ok], np.asarray(texts_b)[ok])
    n_groups = len(np.unique(groups))
    if n_groups < n_splits:
        raise InputError(f"the labelled pairs form only {n_groups} groups of pairs sharing "
                         f"sentences; {n_splits}-fold checking needs at least {n_splits}.",
                         fix="label pairs of more different sentences")
    predicted, folds = np.empty(len(scores)), np.empty(len(scores), dtype=int)
    for fold, (fit_rows, check_rows) in enumerate(GroupKFold(n_splits=n_splits).split(scores, targets, groups)):
        x, y = _isotonic(scores[fit_rows], targets[fit_rows])
        predicted[check_rows], folds[check_rows] = np.interp(scores[check_rows], x, y), fold
    error = np.abs(predicted - targets)
    return HumanValidation(float(error.mean()), float(np.sqrt((error ** 2).mean())),
                           [float(error[folds == f].mean()) for f in range(n_splits)],
                           predicted, targets, folds, n_splits, n_groups,
                           int(np.bincount(groups).max()), reliability_curve(predicted, targets, n_bins=n_bins))


@dataclass(frozen=True)
class HumanPairs:
    """Labelled pairs read from a file: the table (to score with `score_pairs`) and the
    human scores of its usable rows.

    Attributes
    ----------
    table : PairTable
    rows : ndarray of int
        Rows of ``table.frame`` with two texts and a human score.
    human : ndarray of shape (len(rows),)
        Their human scores, on `scale`.
    scale : (low, high)
    notes : tuple of str
    """

    table: PairTable
    rows: np.ndarray
    human: np.ndarray
    scale: tuple[float, float]
    notes: tuple[str, ...]

    @property
    def texts_a(self) -> np.ndarray:
        return self.table.frame[self.table.text_a].to_numpy()[self.rows]

    @property
    def texts_b(self) -> np.ndarray:
        return self.table.frame[self.table.text_b].to_numpy()[self.rows]


def load_human_pairs(path, *, scale=(0.0, 5.0), text_a: str | None = None,
                     text_b: str | None = None, label: str | None = None,
                     encoding: str | None = None, memory_budget: int | None = None) -> HumanPairs:
    """Read labelled pairs, e.g. a CSV ``score,sentence1,sentence2`` with scores on `scale`.

    Columns are found as by `load_pairs`; the human-score column is required. Pairs with an
    empty text or no score are left out (and counted in the notes); a score outside the
    declared scale is refused with its pair number. `memory_budget` is as for `load_pairs`.
    """
    _check_scale(scale)
    table = load_pairs(path, text_a=text_a, text_b=text_b, label=label, encoding=encoding,
                       memory_budget=memory_budget)
    return human_pairs(table, scale=scale)


def human_pairs(table: PairTable, *, scale=(0.0, 5.0)) -> HumanPairs:
    """The labelled pairs of `table` (see `load_human_pairs`)."""
    low, high = _check_scale(scale)
    if table.label is None:
        raise InputError("has no column of human scores.", path=table.path,
                         fix="add a numeric column named score (or name it with --label).")
    import pandas as pd

    human = pd.to_numeric(table.frame[table.label], errors="coerce").to_numpy(dtype=float)
    usable = np.isfinite(human)
    usable[list(table.empty_rows)] = False
    outside = np.flatnonzero(usable & ((human < low) | (human > high)))
    if len(outside):
        raise InputError(f"pair {outside[0] + 1} has human score {human[outside[0]]:g}, outside the "
                         f"declared scale {low:g}-{high:g}.", path=table.path,
                         fix="declare the scale the pairs were labelled on, e.g. --scale 0,5 or --scale 1,5")
    rows = np.flatnonzero(usable)
    label_warnings(human[rows], refuse_from=table.path)
    notes = table.notes + (f"{len(rows)} labelled pairs on the scale {low:g}-{high:g}",)
    return HumanPairs(table, rows, human[rows], (low, high), notes)


MOSTLY_ONE_LABEL = 0.95
"""Share of pairs with one human score above which a fitted map is warned to be nearly flat."""


def label_warnings(human, *, refuse_from) -> list[str]:
    """Warnings about the spread of the `human` scores of labelled pairs: one score for all is
    refused (InputError naming `refuse_from`, the pairs file, if any): the map would give every
    pair that score and its cross-validated error would be 0; one score for nearly all is warned.
    """
    values, counts = np.unique(np.asarray(human, dtype=np.float64), return_counts=True)
    if len(values) == 1:
        raise InputError(f"all {counts[0]:,} labelled pairs have the same human score {values[0]:g}, so a map "
                         "fitted to them gives every pair that score (its error of 0 would mean nothing).",
                         path=refuse_from, fix="label pairs across the scale, from unrelated to identical "
                         "(or check that --label names the column of human scores)")
    share = counts.max() / counts.sum() if len(values) else 0.0
    if share >= MOSTLY_ONE_LABEL:
        return [f"{share:.0%} of the labelled pairs have the same human score {values[counts.argmax()]:g}: the "
                "map is nearly flat and its error says little; label more pairs across the scale"]
    return []


HUMAN_FORMAT = "calibsim-human-calibration"
HUMAN_SUFFIX = ".calibsim-human"


@dataclass
class HumanFit:
    """A fitted human calibration with its cross-validated check and where it came from."""

    calibrator: HumanCalibrator
    validation: dict          # HumanValidation.to_dict(): cross-validated error, reliability
    source: dict

    def save(self, path) -> Path:
        """Write one JSON file (atomically): calibrator, validation, source file and digest."""
        path = Path(path)
        write_text_atomic(path, dump_json({"format": HUMAN_FORMAT, "schema_version": 1,
                                           "calibrator": self.calibrator.to_dict(),
                                           "validation": self.validation,
                                           "source": self.source}))
        return path

    @classmethod
    def load(cls, path) -> "HumanFit":
        """Read and check a saved human calibration; a damaged or foreign file raises InputError."""
        path = Path(path)
        refit = "fit it again with `calibsim human fit` (or File ▸ Fit human calibration)"
        data = read_user_json(path, what="human calibration", fix=refit)
        huge = number_out_of_range(data)
        if huge:
            raise InputError(f"a number is beyond ±{NUMBER_LIMIT:g}, out of any sane range, at {huge}.",
                             path=path, fix=refit)
        try:
            if not isinstance(data, dict) or data.get("format") != HUMAN_FORMAT:
                raise ValueError("not a calibsim human calibration")
            calibrator = HumanCalibrator.from_dict(data["calibrator"])
            validation, source = data["validation"], data.get("source", {})
            if not (isinstance(validation, dict) and isinstance(source, dict)):
                raise ValueError("its validation or source is not a JSON object")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            detail = str(exc) if type(exc) is ValueError else repr(exc)
            raise InputError(f"not a usable human calibration ({detail}).", path=path, fix=refit) from None
        return cls(calibrator, validation, source)
