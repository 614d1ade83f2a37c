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


def test_average_ranks_equal_pandas_ranks_exactly_ties_and_nan_included():
    import pandas as pd

    from calibsim_gui.core.analysis.correlation import average_ranks

    rng = np.random.default_rng(29)
    for n in (0, 1, 2, 7, 300):
        values = rng.integers(0, 5, n).astype(float)
        values[: n // 3] = rng.normal(size=n // 3)
        if n > 2:
            values[[0, n // 2]] = np.nan
        assert np.array_equal(average_ranks(values), pd.Series(values).rank().to_numpy(), equal_nan=True)


def test_spearman_and_reading_tables_do_not_import_pandas_until_a_table_is_read(tmp_path):
    """pandas costs ~0.6 s: the window imports these modules before it shows."""
    import subprocess
    import sys

    (tmp_path / "pairs.csv").write_text("a,b\nx,y\n")
    code = ("import sys\nfrom calibsim_gui.core.analysis.correlation import spearman\n"
            "from calibsim_gui.core.io.tables import read_table\n"
            "print('pandas' in sys.modules, spearman([1, 2, 3], [1, 3, 2]))\n"
            f"read_table({str(tmp_path / 'pairs.csv')!r})\nprint('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "0.5", "True"]
