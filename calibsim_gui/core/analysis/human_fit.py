"""Fit a human calibration: score a labelled pairs file, fit the monotone map, cross-validate it."""

from __future__ import annotations

from calibsim_gui.core.analysis.pairs import score_column, score_pairs
from calibsim_gui.core.calibration.human import (
    HumanCalibrator,
    HumanFit,
    HumanPairs,
    cross_validate_human,
    load_human_pairs,
)
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.provenance import file_digest


def fit_human_calibration(path, embedder, profile, *, scale=(0.0, 5.0), metric: str = "cosine",
                          geometry: str = "none", cache=None, batch_size: int | None = None, progress=None,
                          should_stop=None, memory_budget: int | None = None, **columns) -> HumanFit:
    """Score the labelled pairs in `path` with `embedder`, fit the isotonic map and check it
    (`fit_human_pairs`).

    `columns` (text_a, text_b, label, encoding) are passed to `load_human_pairs`; reading and
    scoring are checked against `memory_budget` (bytes; None: the default budget).
    """
    pairs = load_human_pairs(path, scale=scale, memory_budget=memory_budget, **columns)
    return fit_human_pairs(pairs, embedder, profile, metric=metric, geometry=geometry, cache=cache,
                           batch_size=batch_size, progress=progress, should_stop=should_stop,
                           memory_budget=memory_budget,
                           source={"file": str(pairs.table.path), "sha256": file_digest(pairs.table.path)})


def fit_human_pairs(pairs: HumanPairs, embedder, profile, *, source: dict, metric: str = "cosine",
                    geometry: str = "none", cache=None, batch_size: int | None = None, progress=None,
                    should_stop=None, memory_budget: int | None = None) -> HumanFit:
    """Score labelled `pairs` with `embedder`, fit the isotonic map and check it.

    The check is a 5-fold cross-validation split by sentence (no sentence in both fit and check).
    `source` names where the pairs came from (``{"file", "sha256"}``); their count and notes are added.
    """
    scored = score_pairs(pairs.table, embedder, profile, metrics=[metric], geometry=geometry, cache=cache,
                         batch_size=batch_size, progress=progress, memory_budget=memory_budget,
                         should_stop=should_stop)
    raw = scored.frame[score_column(metric, "raw", geometry)].to_numpy(dtype=float)[pairs.rows]
    similarity = METRICS[metric].as_similarity(raw)
    calibrator = HumanCalibrator(scale=pairs.scale, metric=metric, geometry=geometry,
                                 model=embedder.fingerprint.id).fit(similarity, pairs.human)
    validation = cross_validate_human(similarity, pairs.human, pairs.texts_a, pairs.texts_b,
                                      scale=pairs.scale).to_dict()
    return HumanFit(calibrator, validation, {**source, "pairs": int(len(pairs.rows)), "notes": list(pairs.notes)})
