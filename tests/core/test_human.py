import json

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.errors import InputError, NotFittedError
from calibsim_gui.core.calibration.human import (
    HumanCalibrator, cross_validate_human, load_human_pairs, reliability_curve, sentence_groups)


def labelled(n: int, seed: int = 0):
    """Scores crowded into 0.4-0.9 whose human meaning (0-5) is a bent function of them."""
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0.4, 0.9, n)
    human = np.clip(5 * ((scores - 0.4) / 0.5) ** 2 + rng.normal(0, 0.4, n), 0, 5)
    sentences = [f"sentence number {i}" for i in range(n)]
    # each sentence is shared by two pairs, chaining pairs into groups of a few
    texts_a = [sentences[i] for i in range(n)]
    texts_b = [sentences[(i + 1) % n] if i % 4 else sentences[i - 1] for i in range(n)]
    return scores, human, texts_a, texts_b


def test_isotonic_map_is_monotone_bounded_and_on_the_declared_scale():
    scores, human, _, _ = labelled(500)
    cal = HumanCalibrator(scale=(0, 5)).fit(scores, human)
    grid = np.linspace(0, 1, 201)
    out = cal.transform(grid)
    assert (np.diff(out) >= 0).all() and out.min() >= 0 and out.max() <= 1
    assert out[0] == cal.transform([0.4])[0] and out[-1] == cal.transform([0.9])[0]   # clipped ends
    np.testing.assert_allclose(cal.transform_to_scale(grid), 5 * out)
    assert cal.warnings_ == [] and cal.n_pairs_ == 500
    assert np.isnan(cal.transform([np.nan])[0])


def test_isotonic_map_corrects_a_bent_scale_where_raw_scores_do_not():
    scores, human, _, _ = labelled(2000)
    cal = HumanCalibrator().fit(scores[:1000], human[:1000])
    truth = human[1000:] / 5
    assert np.abs(cal.transform(scores[1000:]) - truth).mean() < 0.5 * np.abs(scores[1000:] - truth).mean()


def test_too_few_pairs_are_refused_and_few_pairs_warned():
    scores, human, _, _ = labelled(400)
    with pytest.raises(InputError, match="only 99 labelled pairs"):
        HumanCalibrator().fit(scores[:99], human[:99])
    assert "only 150 labelled pairs" in HumanCalibrator().fit(scores[:150], human[:150]).warnings_[0]


def test_scores_outside_the_declared_scale_are_refused():
    scores, human, _, _ = labelled(200)
    with pytest.raises(InputError, match="outside the declared scale 0-1"):
        HumanCalibrator(scale=(0, 1)).fit(scores, human)


def test_calibrator_round_trips_through_json():
    scores, human, _, _ = labelled(300)
    with pytest.raises(NotFittedError):
        HumanCalibrator().transform([0.5])
    cal = HumanCalibrator(scale=(1, 5), metric="cosine", geometry="whiten", model="m@1").fit(
        scores, np.clip(human, 1, 5))
    loaded = HumanCalibrator.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert (loaded.scale, loaded.geometry, loaded.model) == ((1.0, 5.0), "whiten", "m@1")
    np.testing.assert_array_equal(loaded.transform(scores), cal.transform(scores))


def test_sentence_groups_join_pairs_that_share_a_sentence():
    a = ["The cat.", "A dog", "the  CAT.", "Fish"]
    b = ["A bird", "Trees", "Cars", "Trees"]
    groups = sentence_groups(a, b)
    assert groups[0] == groups[2]          # same sentence up to case and spaces
    assert groups[1] == groups[3]          # both with "Trees"
    assert groups[0] != groups[1]


def test_cross_validation_never_checks_a_sentence_it_was_fitted_on():
    scores, human, texts_a, texts_b = labelled(600, seed=1)
    check = cross_validate_human(scores, human, texts_a, texts_b, n_splits=5)
    a, b = np.asarray(texts_a), np.asarray(texts_b)
    for fold in range(5):
        inside = check.folds == fold
        assert set(a[inside]) | set(b[inside]) and not (
            (set(a[inside]) | set(b[inside])) & (set(a[~inside]) | set(b[~inside])))
    assert check.mae == pytest.approx(np.abs(check.predicted - human / 5).mean())
    assert check.mae < np.abs(np.clip(scores, 0, 1) - human / 5).mean()
    assert sum(check.reliability["count"]) == 600
    json.dumps(check.to_dict())


def test_reliability_curve_by_hand():
    curve = reliability_curve([0.05, 0.15, 0.12, 0.95, 1.0], [0.0, 0.2, 0.4, 1.0, 0.8], n_bins=10)
    assert curve["count"] == [1, 2, 2]
    np.testing.assert_allclose(curve["bin_low"], [0.0, 0.1, 0.9])
    np.testing.assert_allclose(curve["mean_predicted"], [0.05, 0.135, 0.975])
    np.testing.assert_allclose(curve["mean_observed"], [0.0, 0.3, 0.9])


def test_load_human_pairs_reads_scores_and_checks_the_scale(tmp_path):
    path = tmp_path / "h.csv"
    pd.DataFrame({"score": ["4.5", "", "1.0", "3"], "sentence1": ["a b", "c d", "", "g h"],
                  "sentence2": ["a c", "c e", "f", "g i"]}).to_csv(path, index=False)
    pairs = load_human_pairs(path, scale=(0, 5))
    np.testing.assert_array_equal(pairs.rows, [0, 3])       # no score / empty text left out
    np.testing.assert_array_equal(pairs.human, [4.5, 3.0])
    assert list(pairs.texts_a) == ["a b", "g h"]
    with pytest.raises(InputError, match="pair 1 has human score 4.5, outside"):
        load_human_pairs(path, scale=(0, 1))
    bare = tmp_path / "bare.csv"
    pd.DataFrame({"sentence1": ["a"], "sentence2": ["b"]}).to_csv(bare, index=False)
    with pytest.raises(InputError, match="no column of human scores"):
        load_human_pairs(bare)
