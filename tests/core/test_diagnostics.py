import json
import math

import numpy as np
import pytest

from calibsim_gui.core.diagnostics import (
    DIAGNOSTICS,
    diagnose,
    diagnose_geometries,
    effective_rank,
    isoscore,
    mean_random_cosine,
    norm_stats,
    principal_shares,
)
from calibsim_gui.core.errors import Cancelled
from calibsim_gui.core.geometry import fit_geometries

AXES = np.eye(3)


def test_isoscore_of_a_line_a_plane_and_a_ball():
    line = np.vstack([AXES[:1], -AXES[:1]]) * [[1.0], [2.0]]     # points on one axis of 3-d space
    plane = np.vstack([AXES[:2], -AXES[:2]])
    ball = np.vstack([AXES, -AXES])
    assert isoscore(line) == pytest.approx(0.0, abs=1e-12)
    assert isoscore(plane) == pytest.approx((2 - 1) / (3 - 1))
    assert isoscore(ball) == pytest.approx(1.0)


@pytest.mark.parametrize("k, n", [(1, 10), (3, 10), (7, 10), (10, 10), (5, 50)])
def test_isoscore_of_equal_variance_on_k_of_n_dimensions(k, n):
    rotation = np.linalg.qr(np.random.default_rng(k).normal(size=(n, n)))[0]
    points = np.vstack([np.eye(n)[:k], -np.eye(n)[:k]]) @ rotation     # any orientation
    assert isoscore(points + 4.0) == pytest.approx((k - 1) / (n - 1), abs=1e-9)


def test_isoscore_of_a_sampled_ball_is_near_one_and_of_a_cone_low():
    rng = np.random.default_rng(0)
    assert isoscore(rng.normal(size=(20_000, 8))) > 0.98
    cone = rng.normal(size=(5000, 8)) * [5, 1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1]
    assert isoscore(cone) < 0.2


def test_mean_random_cosine_of_a_shared_offset_and_of_antipodes():
    rng = np.random.default_rng(1)
    crowded = rng.normal(size=(2000, 16)) * 0.1 + np.ones(16)
    assert mean_random_cosine(crowded) > 0.9
    assert abs(mean_random_cosine(rng.normal(size=(2000, 16)))) < 0.02
    # two texts only: their single pair (i != j), never a text with itself
    assert mean_random_cosine(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(-1.0)


def test_effective_rank_counts_equally_used_dimensions():
    assert effective_rank(np.eye(5)) == pytest.approx(5.0)
    assert effective_rank(np.diag([1.0, 1.0, 0.0, 0.0])) == pytest.approx(2.0)
    # singular values 3 and 1: p = (0.75, 0.25), exp(entropy)
    expected = math.exp(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    assert effective_rank(np.diag([3.0, 1.0])) == pytest.approx(expected)


def test_principal_shares_and_norms():
    points = np.vstack([AXES * [3, 1, 0], -AXES * [3, 1, 0]])
    np.testing.assert_allclose(principal_shares(points, k=3), [0.9, 0.1, 0.0], atol=1e-12)
    stats = norm_stats(np.array([[3.0, 4.0], [0.0, 1.0]]))
    assert (stats["min"], stats["max"], stats["mean"]) == (1.0, 5.0, 3.0)


def test_diagnose_is_json_able_and_reports_silhouette_with_labels():
    rng = np.random.default_rng(2)
    labels = np.repeat([0, 1, 2], 200)
    centres = rng.normal(size=(3, 10)) * 5
    points = centres[labels] + rng.normal(size=(600, 10))
    report = diagnose(points, labels=labels, max_points=300)
    json.dumps(report)
    assert set(DIAGNOSTICS) <= set(report)
    assert report["sampled"] == 300 and report["texts"] == 600
    assert report["silhouette"] > 0.5
    assert diagnose(points)["silhouette"] is None


def test_geometry_fixes_undo_a_crowded_space():
    rng = np.random.default_rng(3)
    background = rng.normal(size=(3000, 12)) * np.linspace(3, 0.5, 12) + 4.0
    texts = rng.normal(size=(800, 12)) * np.linspace(3, 0.5, 12) + 4.0
    transforms = {"none": None, **fit_geometries(background)}
    seen = []
    report = diagnose_geometries(texts, transforms, progress=lambda d, t, m: seen.append((d, t)))
    assert list(report) == ["none", "center", "whiten", "abtt"] and seen[-1] == (4, 4)
    assert report["none"]["mean_random_cosine"] > 0.8
    for fix in ("center", "whiten", "abtt"):
        assert abs(report[fix]["mean_random_cosine"]) < 0.05, fix
    assert report["whiten"]["isoscore"] > 0.9 > report["none"]["isoscore"]
    assert report["none"]["label"] == "raw"
    with pytest.raises(Cancelled):
        diagnose_geometries(texts, transforms, should_stop=lambda: True)
