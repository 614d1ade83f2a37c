import numpy as np
import pytest

from calibsim_gui.core.calibration.calibrators import (
    Calibrator, MinMaxCalibrator, HUMAN_SHIFT, AgreementBand, PercentileCalibrator, ReferenceScaleCalibrator, TailSurpriseCalibrator, ZScoreCalibrator)
from calibsim_gui.core.errors import NotFittedError
from calibsim_gui.core.calibration.sketch import ScoreSketch

TARGETS = {"unrelated": 0.1, "related": 0.5, "paraphrase": 0.9, "identical": 1.0}


def curve_fit(scores_by_level, unrelated=0.0, identical=1.0, by_language=None, **settings):
    scores = [s for level in scores_by_level for s in scores_by_level[level]]
    levels = [level for level in scores_by_level for _ in scores_by_level[level]]
    n = settings.get("n_resamples", 200)
    ends = np.full(1 + n, unrelated) if np.ndim(unrelated) == 0 else unrelated
    return ReferenceScaleCalibrator(**settings).fit(scores, levels, TARGETS, unrelated=ends,
                                                    identical=identical, unrelated_by_language=by_language)


LADDER = {"unrelated": [0.3, 0.316, 0.33], "related": [0.69, 0.707, 0.72],
          "paraphrase": [0.94, 0.949, 0.96], "identical": [1.0, 1.0]}


@pytest.fixture
def curve():
    return curve_fit(LADDER, unrelated=0.2)


def test_the_scale_is_the_line_from_unrelated_to_identical_lowered_by_peoples_shift(curve):
    t = (np.array([0.4, 0.6, 0.9]) - 0.2) / 0.8
    np.testing.assert_allclose(curve.transform([0.4, 0.6, 0.9]), t - HUMAN_SHIFT)
    assert curve.transform([0.2])[0] < 0.011                          # a typical unrelated pair: 0
    assert curve.transform([0.2 + 0.8 * 0.95])[0] == pytest.approx(0.95 - HUMAN_SHIFT / 2)   # fading
    assert curve.transform([1.0])[0] == pytest.approx(1.0, abs=1e-3)   # identical text: 1


def test_the_ladder_checks_the_scale_but_does_not_bend_it():
    other = {**LADDER, "related": [0.5, 0.52, 0.55]}                 # a different middle level
    s = np.linspace(0, 1, 11)
    np.testing.assert_array_equal(curve_fit(LADDER).transform(s), curve_fit(other).transform(s))


def test_curve_is_strictly_monotone_smooth_and_inside_0_1(curve):
    s = np.linspace(-1, 1.5, 5001)
    out = curve.transform(s)
    assert (np.diff(out) > 0).all() and out.min() > 0 and out.max() < 1
    assert np.abs(np.diff(out)).max() < 0.002          # no cliffs: at most 0.002 per 0.0005 step


def test_a_language_with_its_own_unrelated_end_is_calibrated_from_it():
    french = np.full(201, 0.4)                            # French unrelated pairs score higher
    cal = curve_fit(LADDER, unrelated=0.2, by_language={"fr": french})
    assert cal.languages() == ("fr",)
    assert cal.transform([0.4], language="fr")[0] < 0.011 < cal.transform([0.4])[0]
    assert cal.transform([0.4], language="de")[0] == cal.transform([0.4])[0]   # no end: the main one
    mixed = cal.transform([0.4, 0.4, 0.4], language=["fr", "", "de"])         # one language per score
    np.testing.assert_array_equal(mixed, [cal.transform([0.4], language="fr")[0]] + [cal.transform([0.4])[0]] * 2)
    lo, hi = cal.interval([0.4, 0.4], language=["fr", "en"])
    assert hi[0] < lo[1]


def test_reference_uncertainty_widens_with_spread_out_references_and_covers_the_estimate():
    rng = np.random.default_rng(0)
    tight = curve_fit(LADDER, unrelated=0.2 + rng.normal(0, 0.002, 201))
    loose = curve_fit(LADDER, unrelated=0.2 + rng.normal(0, 0.03, 201))
    s = np.linspace(0.3, 0.9, 7)
    for cal in (tight, loose):
        lo, hi = cal.interval(s)
        assert (lo <= cal.transform(s) + 0.01).all() and (cal.transform(s) <= hi + 0.01).all()
    assert (np.subtract(*loose.interval(s)[::-1]) > np.subtract(*tight.interval(s)[::-1])).all()


def test_curve_reports_levels_out_of_order_and_refuses_an_inverted_scale():
    cal = curve_fit({"unrelated": [0.1], "related": [0.7], "paraphrase": [0.6], "identical": [1.0]})
    assert cal.violations_ == ["paraphrase scores below related"]
    with pytest.raises(ValueError, match="identical texts"):
        curve_fit({"unrelated": [0.1], "identical": [1.0]}, unrelated=0.9, identical=0.5)


def test_a_hand_edited_curve_is_refused_on_load(curve):
    saved = curve.to_dict()
    assert Calibrator.from_dict(saved).transform([0.5]) == curve.transform([0.5])
    for damage in ({"shift": 3.0}, {"identical_": -5.0}, {"unrelated_resampled_": [5.0]},
                   {"unrelated_by_language_": {"fr": ["x"]}}):
        with pytest.raises(ValueError):
            Calibrator.from_dict({**saved, **damage})


def test_unfitted_calibrator_raises_clear_error():
    with pytest.raises(NotFittedError, match="fit"):
        ReferenceScaleCalibrator().transform([0.5])


def test_the_agreement_band_holds_its_rate_of_peoples_scores_on_new_pairs():
    rng = np.random.default_rng(1)
    def people(n):
        c = rng.uniform(0, 1, n)
        return c, np.clip(c + rng.normal(0, 0.05 + 0.15 * c * (1 - c), n), 0, 1)
    band = AgreementBand().fit(*people(4000), source={"name": "fake"}, model="m")
    c, y = people(20000)
    for rate in band.rates:
        lo, hi = band.band(c, rate)
        assert abs(((lo <= y) & (y <= hi)).mean() - rate) < 0.02
    middle, edge = (np.subtract(*band.band([x], 0.8)[::-1])[0] for x in (0.5, 0.05))
    assert middle > edge                                 # wider where people disagree more
    assert Calibrator.from_dict(band.to_dict()).band([0.5], 0.95) == band.band([0.5], 0.95)
    with pytest.raises(ValueError, match="labelled"):
        AgreementBand().fit([0.5] * 50, [0.5] * 50, source={}, model="m")


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


def test_a_band_measured_per_source_holds_on_each_source_whichever_has_more_pairs():
    rng = np.random.default_rng(2)

    def people(n, spread, offset):          # two groups of annotators: one agrees less, and rates higher
        c = rng.uniform(0, 1, n)
        return c, np.clip(c + offset + rng.normal(0, spread, n), 0, 1)

    tight, loose = people(6000, 0.05, 0.0), people(800, 0.15, 0.08)
    c, y = (np.concatenate(v) for v in zip(tight, loose))
    groups = ["tight"] * 6000 + ["loose"] * 800
    pooled = AgreementBand().fit(c, y, source={"name": "both"}, model="m")
    per_source = AgreementBand().fit(c, y, source={"name": "both", "what": "two sources"}, model="m", groups=groups)
    for rate in per_source.rates:
        for group in (people(20000, 0.05, 0.0), people(20000, 0.15, 0.08)):
            lo, hi = per_source.band(group[0], rate)
            assert ((lo <= group[1]) & (group[1] <= hi)).mean() >= rate - 0.02
    lo, hi = pooled.band(loose[0], 0.8)
    assert ((lo <= loose[1]) & (loose[1] <= hi)).mean() < 0.7            # pooled: the larger source wins
    assert per_source.measured_on() == "two sources"
