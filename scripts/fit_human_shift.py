"""Measure HUMAN_SHIFT (calibsim_gui/core/calibration/calibrators.py): how far below the straight line from a
typical unrelated pair (0) to identical text (1) people rate pairs.

For every labelled pair of the training splits of two sources with different annotators (STS-B
train + dev, 0-5; SICK-R train + dev, 1-5), with all-MiniLM-L6-v2: ``t = (cosine - unrelated) /
(identical - unrelated)`` clipped to 0-1, and people's score rescaled to 0-1. The shift is the
median of ``t - human`` with each source weighted equally (the constant that minimises the mean
absolute error over the two sources, neither dominating). No test split is read for the fit.

``--left-out`` then judges the shift by the source left out: for each source, the shift fitted
on the other source's train + dev alone, and the calibrated column's mean absolute error and bias
on the left-out source's test split with no shift, that shift and `HUMAN_SHIFT` (#40).

    .venv/bin/python scripts/fit_human_shift.py [--data ../shared/data] [--left-out]
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.calibration.calibrators import HUMAN_SHIFT
from calibsim_gui.core.calibration.human import load_human_pairs
from calibsim_gui.core.calibration.profile_builder import default_profile
from calibsim_gui.core.geometry.metrics import pair_scores
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.references.reference_scale import reference_sentences, unrelated_medians

SOURCES = {"stsb": (0.0, 5.0), "sick": (1.0, 5.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data")
    parser.add_argument("--left-out", action="store_true", help="also measure each source's shift on the other's test split")
    args = parser.parse_args()
    embedder, cache = load_model(None, device="cpu"), EmbeddingCache()
    unrelated = unrelated_medians(encode_texts(embedder, reference_sentences(), cache=cache).embeddings,
                                  "cosine", n_resamples=1)[0]
    residuals, weights = [], []
    for source, (low, high) in SOURCES.items():
        for split in ("train", "dev"):
            pairs = load_human_pairs(args.data / source / f"{split}.csv", scale=(low, high))
            a, b = (encode_texts(embedder, list(t), cache=cache).embeddings for t in (pairs.texts_a, pairs.texts_b))
            t = np.clip((pair_scores(a, b, ["cosine"])["cosine"] - unrelated) / (1 - unrelated), 0, 1)
            residuals.append(t - (pairs.human - low) / (high - low))
        n = sum(len(r) for r in residuals[-2:])
        weights += [np.full(len(r), 1 / n) for r in residuals[-2:]]
        print(f"{source}: median(line - human) {np.median(np.concatenate(residuals[-2:])):+.4f} over {n:,} pairs")
    r, w = np.concatenate(residuals), np.concatenate(weights)
    order = np.argsort(r)
    cumulative = np.cumsum(w[order])
    print(f"HUMAN_SHIFT = {r[order][np.searchsorted(cumulative, cumulative[-1] / 2)]:.3f}")
    if args.left_out:
        fitted = {s: float(np.median(np.concatenate(residuals[2 * i:2 * i + 2]))) for i, s in enumerate(SOURCES)}
        left_out(embedder, cache, args.data, fitted)


def left_out(embedder, cache, data: Path, fitted: dict[str, float]) -> None:
    """Each source's test split calibrated with no shift, the other source's shift and HUMAN_SHIFT."""
    curve = default_profile(embedder).metrics["cosine"].calibrators["calibrated"]
    for source, (low, high) in SOURCES.items():
        other = next(s for s in SOURCES if s != source)
        pairs = load_human_pairs(data / source / "test.csv", scale=(low, high))
        a, b = (encode_texts(embedder, list(t), cache=cache).embeddings for t in (pairs.texts_a, pairs.texts_b))
        cosine, human = pair_scores(a, b, ["cosine"])["cosine"], (pairs.human - low) / (high - low)
        for name, shift in (("none", 0.0), (f"fitted on {other}", fitted[other]), ("HUMAN_SHIFT", HUMAN_SHIFT)):
            c = copy.copy(curve)
            c.shift = shift
            calibrated = c.transform(cosine)
            print(f"{source} test, shift {shift:+.3f} ({name}): MAE {np.abs(calibrated - human).mean():.4f}, "
                  f"bias {calibrated.mean() - human.mean():+.4f}")


if __name__ == "__main__":
    main()
