"""Fit a human calibration: score a labelled pairs file, fit the monotone map, cross-validate it."""

from __future__ import annotations

from calibsim_gui.core.analysis.pairs import score_column, score_pairs
from calibsim_gui.core.calibration.human import (
    HumanCalibrator,
    HumanFit,
    cross_validate_human,
    load_human_pairs,
)
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.provenance import file_digest


def fit_human_calibration(path, embedder, profile, *, scale=(0.0, 5.0), metric: str = "cosine",
                          geometry: str = "none", cache=None, batch_size: int = 64, progress=None,
                          should_stop=None, memory_budget: int | None = None, **columns) -> HumanFit:
    """Score the labelled pairs in `path` with `embedder`, fit the isotonic map and check it.

    The check is a 5-fold cross-validation split by sentence (no sentence in both fit and check).
    `columns` (text_a, text_b, label, encoding) are passed to `load_human_pairs`; reading and
    scoring are checked against `memory_budget` (bytes; None: the default budget).
    """
    pairs = load_human_pairs(path, scale=scale, memory_budget=memory_budget, **columns)
    scored = score_pairs(pairs.table, embedder, profile, metrics=[metric], geometry=geometry, cache=cache,
                         batch_size=batch_size, progress=progress, memory_budget=memory_budget,
                         should_stop=should_stop)
    raw = scored.frame[score_column(metric, "raw", geometry)].to_numpy(dtype=float)[pairs.rows]
    similarity = METRICS[metric].as_similarity(raw)
    calibrator = HumanCalibrator(scale=scale, metric=metric, geometry=geometry,
                                 model=embedder.fingerprint.id).fit(similarity, pairs.human)
    validation = cross_validate_human(similarity, pairs.human, pairs.texts_a, pairs.texts_b,
                                      scale=scale).to_dict()
    source = {"file": str(pairs.table.path), "sha256": file_digest(pairs.table.path),
              "pairs": int(len(pairs.rows)), "notes": list(pairs.notes)}
    return HumanFit(calibrator, validation, source)
