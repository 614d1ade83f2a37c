"""Evaluation on labelled pairs: how well each output form matches human judgements.

Every score column is compared with the human scores rescaled to 0-1: the mean absolute error
(for forms on a 0-1 scale), the share of pairs tied at the column's top, the Spearman correlation
and the bias of the mean. With several models, the mean absolute difference between the models'
0-1 scores says whether a form puts different models on one scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Mapping

import numpy as np
import pandas as pd

from calibsim_gui.core.analysis import ScoredPairs, split_score_column
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.metrics import METRICS

EVALUATION_COLUMNS = ("mae", "top_ties", "spearman_x100", "mean", "bias")


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
    """Share of `values` equal to the most similar one, or 0 when a single value is at the top."""
    metric, form, _ = split_score_column(column)
    values = METRICS[metric].as_similarity(values) if form == "raw" else np.asarray(values)
    at_top = int((values == values.max()).sum())
    return at_top / len(values) if at_top > 1 else 0.0


@dataclass(frozen=True)
class Evaluation:
    """Score columns of one or more models checked against the same human scores.

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
        One row per score column (index), columns `EVALUATION_COLUMNS`: mean absolute error
        against the 0-1 human scores, share of pairs tied at the top, Spearman x100, mean
        (0-1 where `mae` is given, else in the form's own units) and bias (mean - `label_mean`).
        NaN where a number does not apply.
    differences : dict column -> {"mean_abs_diff", "by_pair" {"A vs B": value}}
        Mean absolute difference between models of each 0-1 column; empty for one model.
    """

    label: str
    scale: tuple[float, float]
    n_pairs: int
    label_mean: float
    forms: dict[str, pd.DataFrame]
    differences: dict

    def to_dict(self) -> dict:
        """JSON-able numbers (NaN as None)."""
        forms = {model: {column: {k: None if pd.isna(v) else float(v) for k, v in row.items()}
                         for column, row in frame.to_dict("index").items()}
                 for model, frame in self.forms.items()}
        return {"label": self.label, "scale": list(self.scale), "pairs": self.n_pairs,
                "label_mean": self.label_mean, "forms": forms, "differences": self.differences}


def _labels(scored: ScoredPairs) -> tuple[str, np.ndarray]:
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
        needs a human-score column, so that the provenance holds its agreement).
    scale : (low, high) or None
        The scale the human scores were given on (e.g. (0, 5) for STS); None: their observed range.

    Returns
    -------
    Evaluation
    """
    if not results:
        raise InputError("nothing to evaluate: no scored pairs.")
    models = list(results)
    label, y = _labels(results[models[0]])
    for model in models[1:]:
        other_label, other_y = _labels(results[model])
        if other_label != label or not np.array_equal(y, other_y, equal_nan=True):
            raise InputError("the models scored different labelled pairs; evaluate results of one pairs file.")
    columns = {model: [c for c in scored.frame.columns if split_score_column(c)]
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
    forms, unit = {}, {}
    for model, scored in results.items():
        spearman = scored.provenance["agreement"]["spearman_x100"]
        rows = {}
        for column in columns[model]:
            values = scored.frame[column].to_numpy(dtype=np.float64)[usable]
            unit[model, column] = on_unit = unit_scores(column, values)
            mean = float(np.mean(values if on_unit is None else on_unit))
            rows[column] = {
                "mae": np.nan if on_unit is None else float(np.abs(on_unit - target).mean()),
                "top_ties": top_ties(column, values), "spearman_x100": spearman.get(column, np.nan),
                "mean": mean, "bias": np.nan if on_unit is None else mean - float(target.mean())}
        forms[model] = pd.DataFrame.from_dict(rows, orient="index", columns=list(EVALUATION_COLUMNS))
    differences = {}
    for column in columns[models[0]]:
        if len(models) < 2 or any(unit.get((model, column)) is None for model in models):
            continue
        by_pair = {f"{a} vs {b}": float(np.abs(unit[a, column] - unit[b, column]).mean())
                   for a, b in combinations(models, 2)}
        differences[column] = {"mean_abs_diff": float(np.mean(list(by_pair.values()))), "by_pair": by_pair}
    return Evaluation(str(label), (low, high), int(usable.sum()), float(target.mean()), forms, differences)
