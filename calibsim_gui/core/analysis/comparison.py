"""Model comparison: the same pairs scored by two or more models, side by side.

Raw scores of different models live on different scales (one model's "unrelated" is another's
"related"); calibrated scores should agree. `compare_models` puts the scores next to each other
and measures the mean absolute difference between models for raw and each calibrated form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Mapping

import numpy as np
import pandas as pd

from calibsim_gui.core.analysis.pairs import ScoredPairs, score_column, split_score_column
from calibsim_gui.core.calibration.profile_builder import default_profile, with_anchors
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.references.anchors import builtin_anchors

COMPARABLE_UNITS = {
    "raw": (1.0, "the metric's own units"),
    "calibrated": (1.0, "0-1 human scale"),
    "anchor_minmax": (1.0, "0-1 between the lowest and highest anchor level"),
    "bg_minmax": (1.0, "0-1 between the least and most similar background pair"),
    "bg_percentile": (0.01, "percentile / 100"),
    "bg_zscore": (1.0, "background standard deviations"),
    "bg_surprise": (1.0, "-log10 probability"),
    "query_zscore": (1.0, "standard deviations of each text's own background scores"),
    "human": (1.0, "0-1 human scale"),
}
"""Form -> (factor that puts its differences on the stated unit, that unit)."""


@dataclass
class ModelComparison:
    """Scores of several models on the same pairs.

    Attributes
    ----------
    frame : DataFrame
        The input columns, then ``<score column> [<model>]`` for each form and model.
    differences : dict
        form -> {"unit", "mean_abs_diff" (mean over model pairs), "by_pair" {"A vs B": value}}.
    """

    frame: pd.DataFrame
    differences: dict
    metric: str
    geometry: str
    models: list[str]
    notes: list[str] = field(default_factory=list)


def _input_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if split_score_column(c) is None and not str(c).endswith("_norm")]


def _ladder_content(anchors) -> tuple:
    d = anchors.to_dict()
    return repr(d["levels"]), repr(d["pairs"])


def comparison_reference(embedder, anchors=None, **options):
    """The reference `embedder` is compared with: its built-in reference, refitted on `anchors`
    (an `AnchorSet`, e.g. the user's edited ladder) when that is not the built-in ladder.

    Anchors are texts: each model encodes them itself, so every model is calibrated against the
    same references. `options` go to `default_profile` / `with_anchors` (cache, should_stop, ...).
    """
    profile = default_profile(embedder, **options)
    if anchors is not None and _ladder_content(anchors) != _ladder_content(builtin_anchors()):
        profile = with_anchors(profile, embedder, anchors, **options)
    return profile


def compare_models(results: Mapping[str, ScoredPairs], *, metric: str = "cosine",
                   geometry: str = "none", ladders: Mapping | None = None) -> ModelComparison:
    """Side-by-side scores and mean absolute differences between models.

    Parameters
    ----------
    results : mapping model name -> ScoredPairs of the *same* pairs file, one per model
        (each scored with that model's own profile).
    metric, geometry : which scores to compare.
    ladders : mapping model name -> AnchorSet each model was calibrated with, optional: a
        note says whether they share one ladder (calibrated scores are comparable only then).
    """
    if len(results) < 2:
        raise InputError("a comparison needs the same pairs scored by at least two models.")
    models = list(results)
    frames = [results[m].frame for m in models]
    inputs = _input_columns(frames[0])
    if any(_input_columns(f) != inputs or not f[inputs].equals(frames[0][inputs]) for f in frames[1:]):
        raise InputError("the models scored different pairs; compare results of the same pairs file.")
    forms = [form for form in COMPARABLE_UNITS
             if all(score_column(metric, form, geometry) in f.columns for f in frames)]
    if not forms:
        raise InputError(f"no {metric} scores under geometry {geometry!r} in every result.",
                         fix="score every model with the same metric and geometry")
    columns = {c: frames[0][c] for c in inputs}
    differences = {}
    for form in forms:
        name = score_column(metric, form, geometry)
        for model, frame in zip(models, frames):
            columns[f"{name} [{model}]"] = frame[name]
        factor, unit = COMPARABLE_UNITS[form]
        by_pair = {f"{a} vs {b}": float(np.nanmean(np.abs(results[a].frame[name] - results[b].frame[name]))
                                         * factor)
                   for a, b in combinations(models, 2)}
        differences[form] = {"unit": unit, "mean_abs_diff": float(np.mean(list(by_pair.values()))),
                             "by_pair": by_pair}
    notes = []
    if ladders:
        contents = {_ladder_content(ladder) for ladder in ladders.values()}
        if len(contents) > 1:
            notes.append("the models were calibrated with different anchor ladders, so their calibrated "
                         "scores are not on the same references; use one ladder for every model "
                         "(`calibsim compare --anchors FILE`)")
        else:
            ladder = next(iter(ladders.values()))
            notes.append(f"every model is calibrated with the same anchor ladder ({ladder.name}: "
                         f"{len(ladder.pairs)} pairs in {len(ladder.levels)} levels), each encoding its texts")
    if metric not in ("cosine", "angular"):
        notes.append(f"raw {metric} scores depend on each model's vector lengths; their difference "
                     "says little — compare the calibrated forms")
    return ModelComparison(pd.DataFrame(columns), differences, metric, geometry, models, notes)
