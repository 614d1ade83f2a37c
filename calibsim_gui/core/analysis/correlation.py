"""Spearman's rank correlation in numpy alone: scipy.stats (about 1 s) and pandas (about 0.6 s,
and imported by the window through this module) stay out of a small run and of start-up."""

from __future__ import annotations

import numpy as np


def average_ranks(values) -> np.ndarray:
    """1-based ranks of `values`, ties given their average rank and NaN left NaN (as
    ``pandas.Series.rank()`` and ``scipy.stats.rankdata``; the others are ranked among themselves)."""
    x = np.asarray(values, dtype=float).reshape(-1)
    order = np.argsort(x, kind="mergesort")          # NaN sort last
    ordered = x[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(x)]
    ranks = np.empty(len(x))
    ranks[order] = np.repeat((starts + ends + 1) / 2, ends - starts)
    ranks[np.isnan(x)] = np.nan
    return ranks


def spearman(a, b) -> float:
    """Spearman's rho of two equal-length arrays: the Pearson correlation of their ranks, ties
    given their average rank (as `scipy.stats.spearmanr`); NaN when either side is constant."""
    ranks_a, ranks_b = average_ranks(a), average_ranks(b)
    if len(ranks_a) < 2 or np.ptp(ranks_a) == 0 or np.ptp(ranks_b) == 0:
        return float("nan")
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])
