import numpy as np

from calibsim_gui.core.calibration.profile_builder import _similarities, pair_sketches
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.calibration.sketch import ScoreSketch
from calibsim_gui.core.geometry.background import random_pairs
from calibsim_gui.core.geometry.transforms import embedding_moments, fit_geometries_from_moments


def test_background_sketches_transform_each_shared_sentence_once_and_keep_every_pairs_score():
    """Sentences recur across many background pairs: each fix transforms a sentence once, and the
    sketches are those of transforming both sides of every pair."""
    settings = ProfileSettings()
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((600, 48)).astype(np.float32)
    transforms = fit_geometries_from_moments(embedding_moments(emb), settings.fixes, settings.geometry_settings)
    first, second = random_pairs(600, 3000, seed=5)
    seen = []
    for transform in transforms.values():
        original = transform.transform
        transform.transform = lambda x, original=original: seen.append(len(x)) or original(x)
    sketches = pair_sketches(emb, first, second, ["cosine", "euclidean"], transforms, ["cosine"])
    assert seen == [len(set(first) | set(second))] * len(transforms)
    a, b = emb[first], emb[second]
    expected = {"none": _similarities(a, b, ["cosine", "euclidean"])}
    for fix, transform in transforms.items():
        expected[fix] = _similarities(transform.transform(a), transform.transform(b), ["cosine"])
    assert set(sketches) == {"none", *transforms}
    for fix, scores in expected.items():
        for metric, values in scores.items():
            want, got = ScoreSketch.of(values), sketches[fix][metric]
            assert got.n == want.n == len(first)
            q = np.linspace(0, 1, 41)
            np.testing.assert_allclose([got.quantile(x) for x in q], [want.quantile(x) for x in q],
                                       rtol=1e-6, atol=1e-6, err_msg=f"{fix} {metric}")
            np.testing.assert_allclose(got.std, want.std, rtol=1e-6)
