import numpy as np

from calibsim_gui.core.calibration.sketch import ScoreSketch


def test_merged_halves_equal_the_whole():
    values = np.random.default_rng(0).normal(0.2, 0.1, 30_000)
    whole = ScoreSketch.of(values)
    left, right = ScoreSketch.of(values[:12_345]), ScoreSketch.of(values[12_345:])
    left.merge(right)
    assert left.n == whole.n == 30_000
    np.testing.assert_allclose([left.mean, left.std, left.min, left.max],
                               [values.mean(), values.std(ddof=1), values.min(), values.max()])
    np.testing.assert_array_equal(left.top, whole.top)
    tolerance = 2 * left.rank_error()
    for q in (0.01, 0.5, 0.99):
        assert abs(np.mean(values <= left.quantile(q)) - q) <= tolerance


def test_round_trip_keeps_every_statistic():
    sketch = ScoreSketch.of(np.linspace(-1, 1, 5001))
    copy = ScoreSketch.from_dict(sketch.to_dict())
    assert (copy.n, copy.mean, copy.m2, copy.min, copy.max) == (sketch.n, sketch.mean, sketch.m2, sketch.min, sketch.max)
    assert copy.quantile(0.25) == sketch.quantile(0.25)
    np.testing.assert_array_equal(copy.top, sketch.top)
