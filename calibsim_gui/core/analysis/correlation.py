"""Spearman's rank correlation, without importing scipy.stats (about 1 s, most of a small run)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def spearman(a, b) -> float:
    """Spearman's rho of two equal-length arrays: the Pearson correlation of their ranks, ties
    given their average rank (as `scipy.stats.spearmanr`); NaN when either side is constant."""
    ranks_a = pd.Series(np.asarray(a, dtype=float)).rank().to_numpy()
    ranks_b = pd.Series(np.asarray(b, dtype=float)).rank().to_numpy()
    if len(ranks_a) < 2 or np.ptp(ranks_a) == 0 or np.ptp(ranks_b) == 0:
        return float("nan")
    return float(np.corrcoef(ranks_a, ranks_b)[0, 1])
