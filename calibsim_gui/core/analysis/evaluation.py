"""Evaluation on labelled pairs: how well each output form matches human judgements.

Every score column is compared with the human scores rescaled to 0-1: the mean absolute error
and bias (for forms on a 0-1 scale), the share of pairs tied at the column's top, the Spearman
correlation, and how the pairs spread over the tenths of the 0-1 scale against the human spread
(with the mean human score per tenth: a reliability diagram). Bands around calibrated scores
(``<metric>_calibrated_lo``/``_hi`` and the human agreement bands) get their measured coverage
of the human scores. With several models, the mean absolute difference between the models' 0-1
scores says whether a form puts different models on one scale.
`calibsim_gui.core.reports.evaluation_page` draws it all as a self-contained page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Mapping

import numpy as np

from calibsim_gui.core.analysis.pairs import ScoredPairs, split_score_column
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.metrics import METRICS

if TYPE_CHECKING:
    import pandas as pd  # heavy: imported where a table is made

EVALUATION_COLUMNS = ("mae", "top_ties", "spearman_x100", "mean", "bias", "worst_tenth", "worst_tenth_ratio")
TENTHS = 10
HOLE = 1 / 3
"""A tenth holding less than this share of people's share of pairs (`worst_tenth`) is a hole."""
SHOWN_DECIMALS = 3          # scores as printed and shown: ties are counted on these
BANDS = {"reference_uncertainty_95": "", "human_band_80": "_band80", "human_band_95": "_band95"}
"""Bands around ``<metric>_calibrated[@geometry]``: name -> infix of their ``_lo``/``_hi`` columns."""
BAND_LABELS = {"reference_uncertainty_95": "reference uncertainty 95%",
               "human_band_80": "human band 80%", "human_band_95": "human band 95%"}


def is_band_end(column: str) -> bool:
    """True for the end of a band around a score (``..._lo`` / ``..._hi``, before any ``@geometry``):
    such columns are not forms of their own."""
    return str(column).partition("@")[0].endswith(("_lo", "_hi"))


def band_columns(column: str, columns) -> dict[str, tuple[str, str]]:
    """The bands around score column `column` found among `columns`: name (`BANDS`) -> (lo, hi)."""
    base, at, geometry = str(column).partition("@")
    found = {}
    for band, infix in BANDS.items():
        lo, hi = (f"{base}{infix}_{end}{at}{geometry}" for end in ("lo", "hi"))
        if lo in columns and hi in columns:
            found[band] = (lo, hi)
    return found


def band_coverage(target, lo, hi) -> dict:
    """Share of `target` within [`lo`, `hi`] and the band's mean width, over pairs with both ends.

    Parameters
    ----------
    target, lo, hi : array-like of shape (n_pairs,)
        Human scores on 0-1 and the band's ends on the same scale.

    Returns
    -------
    dict with ``coverage`` and ``mean_width`` (NaN without a pair) and ``pairs``
    """
    target, lo, hi = (np.asarray(v, dtype=np.float64) for v in (target, lo, hi))
    ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(target)
    if not ok.any():
        return {"coverage": np.nan, "mean_width": np.nan, "pairs": 0}
    inside = (lo[ok] <= target[ok]) & (target[ok] <= hi[ok])
    return {"coverage": float(inside.mean()), "mean_width": float((hi[ok] - lo[ok]).mean()),
            "pairs": int(ok.sum())}


def unit_scores(column: str, values) -> np.ndarray | None:
    """Scores of `column` (``<metric>_<form>[@<geometry>]``) on a 0-1 scale, or None.

    calibrated and human are on 0-1 already; raw cosine and the min-max forms are clipped to
    [0, 1]; the percentile is divided by 100. Other raw metrics, z-scores and surprise have no
    0-1 scale: None.
    """
    metric, form, _ = split_score_column(column)
    values = np.asarray(values, dtype=np.float64)
    if form in ("calibrated", "human"):
        return values
    if form in ("anchor_minmax", "bg_minmax") or (form, metric) == ("raw", "cosine"):
        return np.clip(values, 0.0, 1.0)
    if form == "bg_percentile":
        return values / 100
    return None


def top_ties(column: str, values) -> float:
    """Share of pairs tied at the most similar score as the user reads it, or 0 when a single
    pair is at the top.

    Scores are compared as shown: a form with a 0-1 scale (`unit_scores`) clipped to [0, 1],
    any other in its own units in the more-similar direction, rounded to `SHOWN_DECIMALS`.
    """
    metric, form, _ = split_score_column(column)
    shown = unit_scores(column, values)
    if shown is None:
        shown = METRICS[metric].as_similarity(values) if form == "raw" else np.asarray(values, dtype=np.float64)
    else:
        shown = np.clip(shown, 0.0, 1.0)
    shown = np.round(shown, SHOWN_DECIMALS)
    at_top = int((shown == shown.max()).sum())
    return at_top / len(shown) if at_top > 1 else 0.0


def tenth_of(values) -> np.ndarray:
    """Tenth of the 0-1 scale (0-9) of each value; values outside [0, 1] go to the end tenths."""
    scaled = np.round(np.asarray(values, dtype=np.float64) * TENTHS, 9)   # 0.3 * 10 stays in tenth 3
    return np.clip(np.floor(scaled), 0, TENTHS - 1).astype(int)


def tenth_shares(values) -> np.ndarray:
    """Share of `values` (on 0-1) in each tenth of the scale, ndarray of shape (10,) summing to 1."""
    return np.bincount(tenth_of(values), minlength=TENTHS) / len(values)


def reliability(scores, target) -> pd.DataFrame:
    """Pairs binned by the tenth of their 0-1 score: the share of pairs, their mean score and
    their mean human score (NaN for an empty tenth), as a reliability diagram reads them.

    Parameters
    ----------
    scores, target : array-like of shape (n_pairs,)
        Scores and human scores, both on 0-1.

    Returns
    -------
    DataFrame indexed by the tenth's lower edge (0.0 ... 0.9), columns ``share``,
    ``mean_score``, ``mean_human``
    """
    import pandas as pd

    scores, target = np.asarray(scores, dtype=np.float64), np.asarray(target, dtype=np.float64)
    tenth = tenth_of(scores)
    counts = np.bincount(tenth, minlength=TENTHS)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = np.bincount(tenth, scores, minlength=TENTHS) / counts
        mean_human = np.bincount(tenth, target, minlength=TENTHS) / counts
    return pd.DataFrame({"share": counts / len(scores), "mean_score": mean_score, "mean_human": mean_human},
                        index=pd.Index(np.arange(TENTHS) / TENTHS, name="tenth"))


def worst_tenth(shares, human_shares, n_pairs: int) -> tuple[float, float]:
    """The tenth of the scale that holds the least of its human share: the "hole" a reader
    would notice (only tenths where people put at least one pair in a hundred count).

    Returns
    -------
    (lower edge of the tenth, share / human share); (nan, nan) when no tenth counts
    """
    shares, human_shares = np.asarray(shares, dtype=np.float64), np.asarray(human_shares, dtype=np.float64)
    counted = human_shares >= max(0.01, 1 / max(n_pairs, 1))
    if not counted.any():
        return np.nan, np.nan
    ratios = np.where(counted, shares / np.where(counted, human_shares, 1), np.inf)
    i = int(np.argmin(ratios))
    return i / TENTHS, float(ratios[i])


def _json_number(value):
    return None if value is None or not np.isfinite(value) else float(value)


@dataclass(frozen=True)
class Evaluation:
    """Score columns of one or more models checked against the human scores of one pairs file.

    Attributes
    ----------
    label : str
        Column of the human scores.
    scale : (low, high)
        Their scale, mapped to 0-1.
    n_pairs : int
        Pairs with a human score and every score column.
    label_mean : float
        Mean human score on 0-1.
    forms : dict model -> DataFrame
        One row per score column (index; band ends are not forms), columns `EVALUATION_COLUMNS`:
        mean absolute error against the 0-1 human scores, share of pairs tied at the top as
        shown (`top_ties`), Spearman x100, mean (0-1 where `mae` is given, else in the form's own
        units), bias (mean - `label_mean`), and the tenth of the 0-1 scale holding the least of
        its human share (`worst_tenth`, its lower edge) with that ratio (`worst_tenth_ratio`).
        NaN where a number does not apply.
    differences : dict column -> {"mean_abs_diff", "by_pair" {"A vs B": value}}
        Mean absolute difference between models of each 0-1 column; empty for one model.
    label_tenths : ndarray of shape (10,)
        Share of the human scores in each tenth of the 0-1 scale.
    tenths : dict model -> {column -> DataFrame}
        `reliability` of each 0-1 column: share, mean score and mean human score per tenth.
    coverage : dict model -> {calibrated column -> {band -> {"coverage", "mean_width", "pairs"}}}
        Share of the human scores within each band around the column (`BANDS`) that was scored.
    """

    label: str
    scale: tuple[float, float]
    n_pairs: int
    label_mean: float
    forms: dict[str, pd.DataFrame]
    differences: dict
    label_tenths: np.ndarray = field(default_factory=lambda: np.full(TENTHS, np.nan))
    tenths: dict[str, dict[str, pd.DataFrame]] = field(default_factory=dict)
    coverage: dict[str, dict[str, dict]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-able numbers (NaN and inf as None)."""
        forms = {model: {column: {k: _json_number(v) for k, v in row.items()}
                         for column, row in frame.to_dict("index").items()}
                 for model, frame in self.forms.items()}
        tenths = {model: {column: {k: [_json_number(v) for v in frame[k]] for k in frame.columns}
                          for column, frame in by_column.items()}
                  for model, by_column in self.tenths.items()}
        coverage = {model: {column: {band: {k: _json_number(v) for k, v in numbers.items()}
                                     for band, numbers in bands.items()}
                            for column, bands in by_column.items()}
                    for model, by_column in self.coverage.items()}
        return {"label": self.label, "scale": list(self.scale), "pairs": self.n_pairs,
                "label_mean": self.label_mean, "forms": forms, "differences": self.differences,
                "tenths_lower_edges": [i / TENTHS for i in range(TENTHS)],
                "label_tenths": [_json_number(v) for v in self.label_tenths], "tenths": tenths,
                "coverage": coverage}


def _labels(scored: ScoredPairs) -> tuple[str, np.ndarray]:
    import pandas as pd

    agreement = scored.provenance.get("agreement")
    if not agreement:
        raise InputError("the scored pairs have no human scores to evaluate against.",
                         fix="name the column of human scores with --label-column")
    label = agreement["label"]
    return label, pd.to_numeric(scored.frame[label], errors="coerce").to_numpy(dtype=np.float64)


def evaluate(results: Mapping[str, ScoredPairs], *, scale=None) -> Evaluation:
    """Check every score column of each model against the human scores of the pairs.

    Parameters
    ----------
    results : mapping model name -> ScoredPairs
        The same labelled pairs scored by each model (see `analysis.score_pairs`; the table
        needs a human-score column, so that the provenance holds its agreement). Columns ending
        in ``_lo``/``_hi`` are the ends of bands (`BANDS`): their coverage is measured.
    scale : (low, high) or None
        The scale the human scores were given on (e.g. (0, 5) for STS); None: their observed range.

    Returns
    -------
    Evaluation
    """
    import pandas as pd

    if not results:
        raise InputError("nothing to evaluate: no scored pairs.")
    models = list(results)
    label, y = _labels(results[models[0]])
    for model in models[1:]:
        other_label, other_y = _labels(results[model])
        if other_label != label or not np.array_equal(y, other_y, equal_nan=True):
            raise InputError("the models scored different labelled pairs; evaluate results of one pairs file.")
    columns = {model: [c for c in scored.frame.columns if split_score_column(c) and not is_band_end(c)]
               for model, scored in results.items()}
    usable = np.isfinite(y)
    for model, scored in results.items():
        usable &= np.isfinite(scored.frame[columns[model]].to_numpy(dtype=np.float64)).all(axis=1)
    if usable.sum() < 2:
        raise InputError(f"only {int(usable.sum())} pairs have a human score and scores.",
                         fix="evaluate a file with more labelled pairs")
    low, high = (float(y[usable].min()), float(y[usable].max())) if scale is None else map(float, scale)
    if not high > low:
        raise InputError(f"the human scale {low:g}-{high:g} is not a range.",
                         fix="give the lowest and the highest possible score, e.g. --scale 0,5")
    target = (y[usable] - low) / (high - low)
    label_tenths = tenth_shares(target)
    forms, unit, tenths, coverage = {}, {}, {}, {}
    for model, scored in results.items():
        spearman = scored.provenance["agreement"]["spearman_x100"]
        rows, tenths[model], coverage[model] = {}, {}, {}
        for column in columns[model]:
            values = scored.frame[column].to_numpy(dtype=np.float64)[usable]
            unit[model, column] = on_unit = unit_scores(column, values)
            mean = float(np.mean(values if on_unit is None else on_unit))
            edge = ratio = np.nan
            if on_unit is not None:
                tenths[model][column] = reliability(on_unit, target)
                edge, ratio = worst_tenth(tenths[model][column]["share"], label_tenths, len(target))
            rows[column] = {
                "mae": np.nan if on_unit is None else float(np.abs(on_unit - target).mean()),
                "top_ties": top_ties(column, values), "spearman_x100": spearman.get(column, np.nan),
                "mean": mean, "bias": np.nan if on_unit is None else mean - float(target.mean()),
                "worst_tenth": edge, "worst_tenth_ratio": ratio}
            if split_score_column(column)[1] == "calibrated":
                bands = {band: band_coverage(target, *(scored.frame[end].to_numpy(dtype=np.float64)[usable]
                                                       for end in ends))
                         for band, ends in band_columns(column, scored.frame.columns).items()}
                if bands:
                    coverage[model][column] = bands
        forms[model] = pd.DataFrame.from_dict(rows, orient="index", columns=list(EVALUATION_COLUMNS))
    differences = {}
    for column in columns[models[0]]:
        if len(models) < 2 or any(unit.get((model, column)) is None for model in models):
            continue
        by_pair = {f"{a} vs {b}": float(np.abs(unit[a, column] - unit[b, column]).mean())
                   for a, b in combinations(models, 2)}
        differences[column] = {"mean_abs_diff": float(np.mean(list(by_pair.values()))), "by_pair": by_pair}
    return Evaluation(str(label), (low, high), int(usable.sum()), float(target.mean()), forms, differences,
                      label_tenths, tenths, coverage)
