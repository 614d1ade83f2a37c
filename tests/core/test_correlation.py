"""Spearman's rho computed without scipy.stats gives scipy's numbers, ties included."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from calibsim_gui.core.analysis.correlation import spearman


@pytest.mark.parametrize("seed", range(5))
def test_spearman_equals_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 6, 300).astype(float)          # 0-5 labels: many ties
    scores = human + rng.normal(0, 1.5, 300)
    scores[:40] = np.round(scores[:40])
    assert spearman(scores, human) == pytest.approx(spearmanr(scores, human).statistic, abs=1e-12)


def test_spearman_of_a_constant_side_is_undefined():
    assert np.isnan(spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert spearman([3.0, 2.0, 1.0], [1.0, 2.0, 3.0]) == pytest.approx(-1.0)
