"""Model comparison: the same pairs scored by two or more models, side by side.

Raw scores of different models live on different scales (one model's "unrelated" is another's
"related"); calibrated scores should agree. `compare_models` puts the scores next to each other
and measures the mean absolute difference between models for raw and each calibrated form.
Each model's reference scale (`reference_scale`) travels with the comparison: it explains why
calibrated scores can differ more than raw ones. `ModelComparison.to_dict` / `from_dict` keep a
comparison in a project (JSON, checked on load).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd

from calibsim_gui.core.analysis.distributions import Agreement, agreement
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
    labels: dict = field(default_factory=dict)
    """model -> short name for people ("MiniLM"); `short_model_names` when not given."""
    scales: dict = field(default_factory=dict)
    """model -> its `reference_scale` (where known)."""

    def __post_init__(self):
        self.labels = {**short_model_names(self.models), **self.labels}

    def column(self, form: str, model: str) -> str:
        """The frame column of `model`'s scores in `form` ("cosine_raw [<model>]")."""
        return f"{score_column(self.metric, form, self.geometry)} [{model}]"

    @property
    def calibrated_exceeds_raw(self) -> bool:
        """The models differ more on the calibrated scale than on raw scores."""
        mean = {form: self.differences.get(form, {}).get("mean_abs_diff") for form in ("raw", "calibrated")}
        return all(v is not None and math.isfinite(v) for v in mean.values()) \
            and mean["calibrated"] > mean["raw"]

    def agreements(self, label: str, scale) -> dict[str, Agreement]:
        """Each model's calibrated scores against the human scores in input column `label`, on
        `scale` (low, high); empty when the frame has no such column."""
        if label not in self.frame or not all(self.column("calibrated", m) in self.frame for m in self.models):
            return {}
        return {m: agreement(self.frame[label], self.frame[self.column("calibrated", m)].to_numpy(dtype=float),
                             scale, label) for m in self.models}

    def to_dict(self) -> dict:
        """JSON-safe: missing and non-finite numbers are null."""
        return {"schema": COMPARISON_SCHEMA, "metric": self.metric, "geometry": self.geometry,
                "models": list(self.models), "labels": dict(self.labels), "notes": list(self.notes),
                "differences": _json_safe(self.differences), "scales": _json_safe(self.scales),
                "columns": [_column_dict(name, self.frame[name]) for name in self.frame.columns]}

    @classmethod
    def from_dict(cls, d) -> ModelComparison:
        """The comparison saved by `to_dict`; InputError naming what is wrong when it is damaged."""
        try:
            return _comparison_from_dict(d)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problem = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InputError(f"the saved model comparison is damaged ({problem}).",
                             fix="run the comparison again (File ▸ Compare with another model…)") from None


COMPARISON_SCHEMA = 1
BACKGROUND_PERCENTILES = (5, 25, 50, 75, 95)
_SIZE_WORDS = re.compile(r"^(all|paraphrase|sentence|transformers|multilingual|multi|v\d+(\.\d+)*|[lh]\d+|"
                         r"\d+[mbk]?|base|large|small|tiny|medium|xs|xl|xxl|en|cos|dot|uncased|cased)$",
                         re.IGNORECASE)


def short_model_names(models) -> dict[str, str]:
    """model id ("all-MiniLM-L6-v2@c4…", a path, "org/name") -> a short name for people: its name
    from the first word that says which model it is ("MiniLM", "mpnet", "e5"), with as many
    words after it as keep the names apart ("MiniLM-L6", "MiniLM-L12"); else the whole name,
    and the digest where two models share that."""
    names = {m: re.split(r"[\\/]", str(m).split("@")[0].rstrip("/\\"))[-1] or str(m) for m in models}
    words = {}
    for model, name in names.items():
        split = [w for w in re.split(r"[-_\s]+", name) if w]
        first = next((i for i, w in enumerate(split) if not _SIZE_WORDS.match(w)), 0)
        words[model] = split[first:] or [name]
    for n in range(1, max(map(len, words.values()), default=1) + 1):
        chosen = {m: "-".join(w[:n]) for m, w in words.items()}
        if len({c.lower() for c in chosen.values()}) == len(chosen):
            return chosen
    if len({n.lower() for n in names.values()}) == len(names):
        return names
    return {m: f"{names[m]}@{str(m).partition('@')[2][:6]}" for m in models}


def reference_scale(profile, metric: str) -> dict:
    """Where `profile`'s reference scale lies in `metric`'s raw scores (higher = more similar):
    the median of each anchor level, lowest target first, and the background's percentiles
    (None for an anchors-only profile)."""
    reference = profile.references("none")[metric]
    filed = np.array([p.level for p in profile.anchors.pairs])
    levels = [{"level": lv.label or lv.name, "target": float(lv.target),
               "median": float(np.median(reference.anchor_scores[filed == lv.name]))}
              for lv in sorted(profile.anchors.levels, key=lambda lv: lv.target) if (filed == lv.name).any()]
    bg = reference.background
    background = None if bg is None else {f"p{q}": float(bg.quantile(q / 100)) for q in BACKGROUND_PERCENTILES}
    return {"levels": levels, "background": background}


def _json_safe(value):
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def _column_dict(name, column: pd.Series) -> dict:
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        values = column.to_numpy(dtype=float)
        return {"name": str(name), "kind": "number",
                "values": [float(v) if math.isfinite(v) else None for v in values]}
    return {"name": str(name), "kind": "text", "values": [None if pd.isna(v) else str(v) for v in column]}


def _number(value, what: str, *, missing: bool = False) -> float:
    """`value` as a finite float (None allowed when `missing`, as NaN)."""
    if value is None and missing:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} is {value!r}, not a finite number")
    return float(value)


def _text(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} is {value!r}, not text")
    return value


def _comparison_from_dict(d) -> ModelComparison:
    if not isinstance(d, dict) or d.get("schema") != COMPARISON_SCHEMA:
        raise ValueError(f"not a comparison of schema {COMPARISON_SCHEMA}")
    metric, geometry = _text(d["metric"], "the metric"), _text(d["geometry"], "the geometry")
    models = [_text(m, "a model") for m in d["models"]]
    if len(models) < 2 or len(set(models)) != len(models):
        raise ValueError("it needs two or more different models")
    columns, lengths = {}, set()
    for entry in d["columns"]:
        name, kind, values = _text(entry["name"], "a column name"), entry["kind"], list(entry["values"])
        if kind == "number":
            columns[name] = np.array([_number(v, f"a value of {name}", missing=True) for v in values])
        elif kind == "text":
            columns[name] = [None if v is None else _text(v, f"a value of {name}") for v in values]
        else:
            raise ValueError(f"column {name} is of kind {kind!r}")
        lengths.add(len(values))
    if len(lengths) > 1:
        raise ValueError(f"its columns have different lengths ({sorted(lengths)})")
    differences = {}
    for form, diff in dict(d["differences"]).items():
        differences[form] = {"unit": _text(diff["unit"], "a unit"),
                             "mean_abs_diff": _number(diff["mean_abs_diff"], f"the {form} difference", missing=True),
                             "by_pair": {_text(k, "a model pair"): _number(v, f"the {form} difference", missing=True)
                                         for k, v in dict(diff["by_pair"]).items()}}
        missing = [c for m in models if (c := f"{score_column(metric, form, geometry)} [{m}]") not in columns]
        if missing:
            raise ValueError(f"the {missing[0]} scores are missing")
    if not differences:
        raise ValueError("it holds no differences")
    scales = {}
    for model, scale in dict(d.get("scales") or {}).items():
        levels = [{"level": _text(lv["level"], "a level"), "target": _number(lv["target"], "a level's target"),
                   "median": _number(lv["median"], "a level's median")} for lv in scale["levels"]]
        bg = scale.get("background")
        scales[_text(model, "a model")] = {"levels": levels, "background": None if bg is None else {
            _text(k, "a percentile"): _number(v, "a background percentile") for k, v in dict(bg).items()}}
    labels = {m: _text(v, "a model's name") for m, v in dict(d.get("labels") or {}).items() if m in models}
    notes = [_text(n, "a note") for n in d.get("notes", [])]
    return ModelComparison(pd.DataFrame(columns), differences, metric, geometry, models, notes, labels, scales)


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
                   geometry: str = "none", ladders: Mapping | None = None,
                   scales: Mapping | None = None) -> ModelComparison:
    """Side-by-side scores and mean absolute differences between models.

    Parameters
    ----------
    results : mapping model name -> ScoredPairs of the *same* pairs file, one per model
        (each scored with that model's own profile).
    metric, geometry : which scores to compare.
    ladders : mapping model name -> AnchorSet each model was calibrated with, optional: a
        note says whether they share one ladder (calibrated scores are comparable only then).
    scales : mapping model name -> its `reference_scale`, optional (kept with the comparison).
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
    return ModelComparison(pd.DataFrame(columns), differences, metric, geometry, models, notes,
                           scales=dict(scales or {}))
