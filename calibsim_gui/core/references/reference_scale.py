"""The two ends of the default calibrated scale, measured on each model's own embeddings.

0 is "a typical pair of unrelated sentences": the median score over all pairs of calibsim's
reference sentences (`resources/reference/sentences.txt`, written for calibsim, many topics).
1 is "identical text": a text's score with itself. Both are the same for every model, so a
calibrated 0.4 means the same thing whichever model produced it.

Unrelated pairs score differently in different languages, so the unrelated end is also measured
on translations of the first 200 reference sentences (`resources/reference/<code>.txt`, written
for calibsim) in each of `REFERENCE_LANGUAGES`; pairs whose texts are both in one of them are
calibrated with that language's end.
"""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.resources import resource_path

N_RESAMPLES = 200
_RESAMPLED_PAIRS = 20_000    # resampled medians are taken over this many of the pairs (speed)


REFERENCE_LANGUAGES = ("ar", "de", "es", "fr", "hi", "it", "ja", "nl", "pl", "pt", "ru", "zh")
"""Languages besides English with reference sentences of their own."""


def reference_file(language: str | None = None):
    """The shipped file of reference sentences: English (None or "en") or one of `REFERENCE_LANGUAGES`."""
    if language in (None, "en"):
        return resource_path("reference", "sentences.txt")
    if language not in REFERENCE_LANGUAGES:
        raise ValueError(f"calibsim has no reference sentences in {language!r}")
    return resource_path("reference", f"{language}.txt")


def reference_sentences(language: str | None = None) -> list[str]:
    """calibsim's built-in reference sentences in `language` (default English), one per line."""
    text = reference_file(language).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip()]


def unrelated_medians(embeddings: np.ndarray, metric: str, *, n_resamples: int = N_RESAMPLES,
                      seed: int = 0, resampled_pairs: int = _RESAMPLED_PAIRS) -> np.ndarray:
    """Median "higher = more similar" score over all pairs of distinct `embeddings` rows, then
    the same median with the rows resampled (with replacement) `n_resamples` times.

    The resampled medians are taken over a fixed random subset of the pairs, which adds a little
    spread of its own: their range errs on the wide side.

    Returns
    -------
    ndarray of shape (1 + n_resamples,)
    """
    m = METRICS[metric]
    x = np.asarray(embeddings, dtype=np.float64)
    first, second = np.triu_indices(len(x), 1)
    scores = m.as_similarity(m.matrix(x, x)[first, second])
    rng = np.random.default_rng(seed)
    subset = np.sort(rng.permutation(len(scores))[:resampled_pairs])
    order = subset[np.argsort(scores[subset], kind="stable")]
    counts = np.stack([np.bincount(rng.integers(0, len(x), len(x)), minlength=len(x))
                       for _ in range(n_resamples)], axis=1).astype(np.float64)   # (sentences, resamples)
    cumulative = np.cumsum(counts[first[order]] * counts[second[order]], axis=0)
    middle = np.argmax(cumulative >= cumulative[-1:] / 2, axis=0)      # weighted medians
    return np.concatenate([[np.median(scores)], scores[order][middle]])


def identical_score(embeddings: np.ndarray, metric: str) -> float:
    """Median "higher = more similar" score of each embedding with itself."""
    m = METRICS[metric]
    x = np.asarray(embeddings, dtype=np.float64)
    return float(np.median(m.as_similarity(m.pairs(x, x))))
