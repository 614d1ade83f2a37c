import numpy as np
import pytest

from calibsim_gui.core.calibrators import (
    Calibrator,
    MinMaxCalibrator,
    PercentileCalibrator,
    ReferenceCurveCalibrator,
    TailSurpriseCalibrator,
    ZScoreCalibrator,
)
from calibsim_gui.core.errors import NotFittedError
from calibsim_gui.core.sketch import ScoreSketch

TARGETS = {"unrelated": 0.1, "related": 0.5, "paraphrase": 0.9, "identical": 1.0}


def curve_fit(scores_by_level, unrelated=0.0, identical=1.0, **settings):
    scores = [s for level in scores_by_level for s in scores_by_level[level]]
    levels = [level for level in scores_by_level for _ in scores_by_level[level]]
    n = settings.get("n_resamples", 200)
    ends = np.full(1 + n, unrelated) if np.ndim(unrelated) == 0 else unrelated
    return ReferenceCurveCalibrator(**settings).fit(scores, levels, TARGETS, unrelated=ends,
                                                    identical=identical)


@pytest.fixture
def curve():
    """A ladder whose targets follow t ** 2 exactly (t = the score here)."""
    return curve_fit({"unrelated": [0.3, 0.316, 0.33], "related": [0.69, 0.707, 0.72],
                      "paraphrase": [0.94, 0.949, 0.96], "identical": [1.0, 1.0]})


def test_curve_sends_unrelated_to_zero_identical_to_one_and_fits_the_ladder(curve):
    assert curve.gamma_ == pytest.approx(2.0, rel=0.02)
    np.testing.assert_allclose(curve.transform([0.5, 0.8]), [0.25, 0.64], rtol=0.03)
    assert curve.transform([0.0])[0] < 0.011 and curve.transform([1.0])[0] > 0.999


def test_curve_is_strictly_monotone_smooth_and_inside_0_1(curve):
    s = np.linspace(-1, 1.5, 5001)
    out = curve.transform(s)
    assert (np.diff(out) > 0).all() and out.min() > 0 and out.max() < 1
    assert np.abs(np.diff(out)).max() < 0.002          # no cliffs: at most 0.002 per 0.0005 step


def test_curve_uses_every_pair_not_one_median_per_level():
    base = {"unrelated": [0.3, 0.32], "related": [0.7, 0.71], "paraphrase": [0.95], "identical": [1.0]}
    low_tail = {**base, "related": [0.7, 0.71, 0.705, 0.2, 0.2]}    # same level median, 0.7
    assert curve_fit(low_tail).gamma_ < curve_fit(base).gamma_ - 0.3


def test_interval_widens_with_noisy_anchors_and_covers_the_estimate():
    rng = np.random.default_rng(0)
    tight = curve_fit({level: list(np.sqrt(t) + rng.normal(0, 0.005, 16)) for level, t in TARGETS.items()})
    noisy = curve_fit({level: list(np.sqrt(t) + rng.normal(0, 0.08, 16)) for level, t in TARGETS.items()})
    s = np.linspace(0.2, 0.9, 8)
    for cal in (tight, noisy):
        lo, hi = cal.interval(s)
        assert (lo <= cal.transform(s) + 1e-12).all() and (cal.transform(s) <= hi + 1e-12).all()
    assert (np.subtract(*noisy.interval(s)[::-1]) > np.subtract(*tight.interval(s)[::-1])).all()


def test_curve_reports_levels_out_of_order_and_refuses_an_inverted_scale():
    cal = curve_fit({"unrelated": [0.1], "related": [0.7], "paraphrase": [0.6], "identical": [1.0]})
    assert cal.violations_ == ["paraphrase scores below related"]
    with pytest.raises(ValueError, match="identical texts"):
        curve_fit({"unrelated": [0.1], "identical": [1.0]}, unrelated=0.9, identical=0.5)


def test_a_hand_edited_curve_is_refused_on_load(curve):
    saved = curve.to_dict()
    assert Calibrator.from_dict(saved).transform([0.5]) == curve.transform([0.5])
    for damage in ({"gamma_": -1.0}, {"identical_": -5.0}, {"unrelated_resampled_": [0.0]}):
        with pytest.raises(ValueError):
            Calibrator.from_dict({**saved, **damage})


def test_unfitted_calibrator_raises_clear_error():
    with pytest.raises(NotFittedError, match="fit"):
        ReferenceCurveCalibrator().transform([0.5])


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


def test_every_calibrator_round_trips_through_dict(curve):
    bg = ScoreSketch.of(np.random.default_rng(4).normal(size=5000))
    fitted = [curve, MinMaxCalibrator().fit(-1, 1), ZScoreCalibrator().fit(bg),
              PercentileCalibrator(confidence=0.9).fit(bg), TailSurpriseCalibrator().fit(bg)]
    s = np.linspace(-4, 6, 101)
    for cal in fitted:
        copy = Calibrator.from_dict(cal.to_dict())
        assert type(copy) is type(cal)
        np.testing.assert_allclose(copy.transform(s), cal.transform(s))
    assert Calibrator.from_dict(fitted[3].to_dict()).confidence == 0.9
