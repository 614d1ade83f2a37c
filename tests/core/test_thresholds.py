"""Thresholds from labelled pairs: the precision-recall curve and the cut each criterion picks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import precision_recall_curve

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.analysis.thresholds import find_threshold, pr_curve


def test_the_curve_matches_scikit_learn_with_ties():
    rng = np.random.default_rng(0)
    scores = np.round(rng.uniform(0, 1, 500), 2)                  # many ties
    same = rng.uniform(0, 1, 500) < scores
    curve = pr_curve(scores, same)
    precision, recall, thresholds = precision_recall_curve(same, scores)
    by_cut = dict(zip(thresholds, zip(precision[:-1], recall[:-1])))
    for t, p, r in zip(curve.thresholds, curve.precision, curve.recall):
        assert by_cut[t] == pytest.approx((p, r))


def test_each_criterion_picks_its_cut_by_hand():
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    same = np.array([1, 1, 0, 1, 0], dtype=bool)
    loose = find_threshold(scores, same, target=0.75, n_boot=100)
    assert (loose.threshold, loose.precision, loose.recall) == (0.6, 0.75, 1.0)
    strict = find_threshold(scores, same, target=0.9, n_boot=100)
    assert (strict.threshold, strict.recall) == (0.8, pytest.approx(2 / 3))
    recall = find_threshold(scores, same, criterion="recall", target=0.6, n_boot=100)
    assert (recall.threshold, recall.precision) == (0.8, 1.0)
    best = find_threshold(scores, same, criterion="f1", n_boot=100)
    assert best.threshold == 0.6 and best.f1 == pytest.approx(2 * 0.75 / 1.75) and best.target is None
    assert find_threshold([0.9, 0.8, 0.8], [1, 1, 0], target=0.9, n_boot=50).threshold == 0.9


def test_unreachable_targets_and_one_kind_of_label_are_refused():
    with pytest.raises(InputError, match="both kinds"):
        find_threshold([0.1, 0.2], [True, True])
    with pytest.raises(InputError, match="no score threshold reaches a precision of 100%"):
        find_threshold([0.9, 0.8], [False, True], target=1.0)
    with pytest.raises(InputError, match="above 0 and at most 1"):
        find_threshold([0.9, 0.8], [False, True], target=90)


def test_the_interval_covers_the_estimate_and_is_json():
    rng = np.random.default_rng(3)
    scores = rng.uniform(0, 1, 1000)
    same = rng.uniform(0, 1, 1000) < scores ** 2
    found = find_threshold(scores, same, target=0.8, n_boot=300)
    low, high = found.interval
    assert low <= found.threshold <= high and high - low < 0.3
    assert found.precision >= 0.8
    json.dumps(found.to_dict())
