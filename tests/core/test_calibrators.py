import numpy as np
import pytest

from calibsim_gui.core.calibrators import (
    Calibrator,
    LadderCalibrator,
    MinMaxCalibrator,
    PercentileCalibrator,
    TailSurpriseCalibrator,
    ZScoreCalibrator,
)
from calibsim_gui.core.errors import NotFittedError
from calibsim_gui.core.sketch import ScoreSketch

TARGETS = {"unrelated": 0.1, "related": 0.5, "paraphrase": 0.9, "identical": 1.0}


def ladder_fit(scores_by_level):
    scores = [s for level in scores_by_level for s in scores_by_level[level]]
    levels = [level for level in scores_by_level for _ in scores_by_level[level]]
    return LadderCalibrator().fit(scores, levels, TARGETS)


@pytest.fixture
def ladder():
    return ladder_fit({"unrelated": [0.0, 0.1, 0.2], "related": [0.4, 0.5, 0.6],
                       "paraphrase": [0.8, 0.85, 0.9], "identical": [1.0, 1.0]})


def test_ladder_passes_through_level_medians(ladder):
    np.testing.assert_allclose(ladder.transform([0.1, 0.5, 0.85]), [0.1, 0.5, 0.9], atol=1e-9)
    assert ladder.transform([1.0])[0] == 1.0                  # identical reaches the top
    np.testing.assert_allclose(ladder.transform([0.3]), [0.3], atol=1e-9)   # linear in between


def test_ladder_is_strictly_monotone_without_ties_at_either_end(ladder):
    s = np.linspace(-1, 0.999, 2001)
    out = ladder.transform(s)
    assert (np.diff(out) > 0).all()
    assert out.min() > 0 and out.max() <= 1


def test_ladder_pools_levels_out_of_order_and_reports_them():
    cal = ladder_fit({"unrelated": [0.1], "related": [0.7], "paraphrase": [0.6], "identical": [1.0]})
    assert cal.violations_ == ["paraphrase scores below related"]
    out = cal.transform(np.linspace(0, 1, 101))
    assert (np.diff(out) >= 0).all()


def test_unfitted_calibrator_raises_clear_error():
    with pytest.raises(NotFittedError, match="fit"):
        LadderCalibrator().transform([0.5])


def test_minmax_and_zscore_known_values():
    np.testing.assert_allclose(MinMaxCalibrator().fit(0.2, 0.7).transform([0.2, 0.45, 0.7, 0.95]),
                               [0, 0.5, 1, 1.5])
    bg = ScoreSketch.of([1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(ZScoreCalibrator().fit(bg).transform([3.0, 3.0 + np.std([1, 2, 3, 4, 5], ddof=1)]),
                               [0, 1])


def test_percentile_is_empirical_with_ties_and_bounded():
    bg = ScoreSketch.of(np.arange(100, dtype=float))        # 0..99
    cal = PercentileCalibrator().fit(bg)
    np.testing.assert_allclose(cal.transform([49.5, 10.0, -5.0, 1e9]), [50.0, 10.5, 0.0, 100.0])
    random_scores = np.random.default_rng(1).normal(50, 200, 10_000)
    out = cal.transform(random_scores)
    assert out.min() >= 0 and out.max() <= 100
    assert np.isnan(cal.transform([np.nan]))[0]


def test_percentile_interval_shrinks_with_background_size():
    small = PercentileCalibrator().fit(ScoreSketch.of(np.random.default_rng(0).random(500)))
    large = PercentileCalibrator().fit(ScoreSketch.of(np.random.default_rng(0).random(50_000)))
    assert 5 < small.halfwidth_ < 7          # DKW: sqrt(ln(40)/1000) = 6.07 points
    assert large.halfwidth_ < 1


def test_surprise_orders_scores_beyond_the_background_sample():
    values = np.random.default_rng(2).normal(0.1, 0.1, 20_000)
    cal = TailSurpriseCalibrator().fit(ScoreSketch.of(values))
    s = np.linspace(-0.5, 1.0, 3001)          # far beyond the largest background score (~0.5)
    out = cal.transform(s)
    assert np.isfinite(out).all()
    assert (np.diff(out) > 0).all()
    # in the body it is -log10 of the empirical survival function
    for score in (0.1, 0.25):
        assert out[np.searchsorted(s, score)] == pytest.approx(-np.log10(np.mean(values >= score)), abs=0.03)


def test_every_calibrator_round_trips_through_dict(ladder):
    bg = ScoreSketch.of(np.random.default_rng(4).normal(size=5000))
    fitted = [ladder, MinMaxCalibrator().fit(-1, 1), ZScoreCalibrator().fit(bg),
              PercentileCalibrator(confidence=0.9).fit(bg), TailSurpriseCalibrator().fit(bg)]
    s = np.linspace(-4, 6, 101)
    for cal in fitted:
        copy = Calibrator.from_dict(cal.to_dict())
        assert type(copy) is type(cal)
        np.testing.assert_allclose(copy.transform(s), cal.transform(s))
    assert Calibrator.from_dict(fitted[3].to_dict()).confidence == 0.9
