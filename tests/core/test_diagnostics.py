import json
import math

import numpy as np
import pytest

from calibsim_gui.core.geometry.diagnostics import (
    DIAGNOSTICS, diagnose, diagnose_geometries, effective_rank, isoscore, mean_random_cosine, norm_stats, principal_shares)
from calibsim_gui.core.errors import Cancelled
from calibsim_gui.core.geometry.transforms import apply_geometry, fit_geometries

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
    assert list(report) == ["none", "center", "whiten", "abtt", "soft"] and seen[-1] == (5, 5)
    assert report["none"]["mean_random_cosine"] > 0.8
    for fix in ("center", "whiten", "abtt"):
        assert abs(report[fix]["mean_random_cosine"]) < 0.05, fix
    assert report["whiten"]["isoscore"] > 0.9 > report["none"]["isoscore"]
    assert report["none"]["label"] == "raw"
    with pytest.raises(Cancelled):
        diagnose_geometries(texts, transforms, should_stop=lambda: True)


# --- issue 19: cluster-structure diagnostics, against independent computations ---

from scipy.spatial.distance import cdist  # noqa: E402

from calibsim_gui.core.geometry.diagnostics import (
    ISOSCORE_STAR_ZETA, LABEL_DIAGNOSTICS, calinski_harabasz, classifier_accuracy, davies_bouldin, dunn_index, isoscore_star, silhouette_euclidean)

# two groups on a line: A at 0, 1; B at 4, 6 (hand-computed below)
LINE = np.array([[0.0], [1.0], [4.0], [6.0]])
LINE_LABELS = np.array(["a", "a", "b", "b"])


def test_dunn_index_by_hand():
    # closest points of different groups: 1 and 4 (3); widest group: B (6 - 4 = 2)
    assert dunn_index(LINE, LINE_LABELS) == pytest.approx(3 / 2)
    square = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0], [10.0, 0.0], [10.0, 2.0]])
    # separation min(3, 7) = 3; diameters 1, 1, 2
    assert dunn_index(square, [0, 0, 1, 1, 2, 2]) == pytest.approx(3 / 2)
    assert dunn_index(LINE, ["a"] * 4) is None


def test_silhouette_euclidean_matches_the_definition_by_hand():
    d = cdist(LINE, LINE)
    expected = []
    for i, label in enumerate(LINE_LABELS):
        same = (LINE_LABELS == label) & (np.arange(4) != i)
        a, b = d[i, same].mean(), d[i, LINE_LABELS != label].mean()
        expected.append((b - a) / max(a, b))
    assert silhouette_euclidean(LINE, LINE_LABELS) == pytest.approx(np.mean(expected), abs=1e-12)


def test_calinski_harabasz_and_davies_bouldin_by_hand():
    centre = LINE.mean()                          # 2.75; group means 0.5 and 5
    between = 2 * (0.5 - centre) ** 2 + 2 * (5 - centre) ** 2
    within = 0.25 + 0.25 + 1 + 1
    assert calinski_harabasz(LINE, LINE_LABELS) == pytest.approx(between / within * (4 - 2) / (2 - 1))
    # mean distances to the centroid: 0.5 and 1; centroids 4.5 apart
    assert davies_bouldin(LINE, LINE_LABELS) == pytest.approx((0.5 + 1) / 4.5)


def test_classifier_tells_separated_groups_apart_and_not_mixed_ones():
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(size=(40, 5)) + 5, rng.normal(size=(40, 5)) - 5])
    labels = np.repeat(["x", "y"], 40)
    apart = classifier_accuracy(x, labels)
    assert apart == {"accuracy": 1.0, "chance": 0.5, "folds": 5}
    mixed = classifier_accuracy(rng.normal(size=(80, 5)), labels)
    assert 0.2 < mixed["accuracy"] < 0.8
    assert classifier_accuracy(x[:3], ["x", "x", "y"]) is None       # one text in a group


def test_isoscore_star_shrinks_towards_the_reference_covariance():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 6)) * [3, 1, 1, 1, 1, 1]
    assert isoscore_star(x) == pytest.approx(isoscore(x), abs=1e-12)   # zeta = 0: IsoScore
    c0 = np.eye(6)
    assert isoscore_star(x, reference_covariance=c0, zeta=1.0) == pytest.approx(1.0)
    # by hand: shrunk covariance eigenvalues through IsoScore's steps 3-6
    centred = x - x.mean(axis=0)
    shrunk = 0.7 * centred.T @ centred / (len(x) - 1) + 0.3 * c0
    points = np.linalg.cholesky(shrunk).T * np.sqrt(2)             # +-rows have that covariance
    expected = isoscore(np.vstack([points, -points]) * np.sqrt(len(points)) / np.sqrt(2))
    assert isoscore_star(x, reference_covariance=c0, zeta=0.3) == pytest.approx(expected, abs=1e-9)
    with pytest.raises(ValueError):
        isoscore_star(x, zeta=0.3)


def test_diagnose_reports_every_cluster_diagnostic_with_labels():
    rng = np.random.default_rng(3)
    points = np.vstack([rng.normal(size=(50, 8)) + 3, rng.normal(size=(50, 8)) - 3])
    labels = np.repeat([0, 1], 50)
    report = diagnose(points, labels=labels)
    assert all(report[key] is not None for key in LABEL_DIAGNOSTICS)
    assert report["classifier_accuracy"] == 1.0 and report["classifier_chance"] == 0.5
    assert report["dunn"] == pytest.approx(dunn_index(points, labels))
    assert all(diagnose(points)[key] is None for key in LABEL_DIAGNOSTICS)
    json.dumps(report)


@pytest.mark.filterwarnings("ignore:__array_wrap__:DeprecationWarning")    # the package adds C0 to a tensor
def test_isoscore_and_isoscore_star_match_the_isoscore_package():
    from IsoScore import IsoScore as package       # the authors' reference (the test extra's isoscore)

    rng = np.random.default_rng(6)
    x = rng.normal(size=(120, 7)) * [4, 2, 1, 1, 0.5, 0.5, 0.1]
    c0 = np.cov(rng.normal(size=(5000, 7)) * [3, 2, 1, 1, 1, 1, 1], rowvar=False)
    assert isoscore(x) == pytest.approx(float(package.IsoScore(x)), abs=1e-6)
    for zeta in (0.0, 0.2, 0.75):
        expected = float(package.IsoScore_star(x, c0, zeta))
        assert isoscore_star(x, reference_covariance=c0, zeta=zeta) == pytest.approx(expected, abs=1e-6)


def test_isoscore_star_row_by_hand_and_against_the_function():
    # IsoScore's steps 3-6 reduce to (PR - 1)/(n - 1), PR = (sum v)^2 / sum v^2 (participation
    # ratio): points +-1 on the first axis have unbiased covariance diag(2, 0); with C0 = I and
    # zeta = 0.5 the shrunk covariance is diag(1.5, 0.5), PR = 4 / 2.5 = 1.6, IsoScore* = 0.6
    x = np.array([[-1.0, 0.0], [1.0, 0.0]])
    assert isoscore_star(x, reference_covariance=np.eye(2), zeta=0.5) == pytest.approx(0.6, abs=1e-12)
    rng = np.random.default_rng(8)
    points = rng.normal(size=(40, 5)) * [3, 2, 1, 1, 0.2]
    background = rng.normal(size=(2000, 5))
    report = diagnose(points, reference=background)
    c0 = np.cov(background.T)                                  # unbiased, numpy's own
    shrunk = np.linalg.eigvalsh((1 - ISOSCORE_STAR_ZETA) * np.cov(points.T) + ISOSCORE_STAR_ZETA * c0)
    ratio = shrunk.sum() ** 2 / (shrunk ** 2).sum()
    assert report["isoscore_star"] == pytest.approx((ratio - 1) / (5 - 1), abs=1e-9)
    assert report["isoscore_star"] > report["isoscore"]        # shrunk towards an isotropic C0
    assert diagnose(points)["isoscore_star"] is None           # no background, no C0
    variances = np.linalg.eigvalsh(np.cov(points.T))            # zeta -> 0: IsoScore, same formula
    assert report["isoscore"] == pytest.approx(
        (variances.sum() ** 2 / (variances ** 2).sum() - 1) / 4, abs=1e-9)


def test_isoscore_star_is_diagnosed_under_each_fix_against_the_moved_background():
    rng = np.random.default_rng(9)
    background = rng.normal(size=(1500, 6)) * np.linspace(3, 0.5, 6) + 2.0
    texts = background[:60]
    transforms = {"none": None, **fit_geometries(background)}
    report = diagnose_geometries(texts, transforms, reference=background)
    for name, transform in transforms.items():
        moved = apply_geometry(transform, background)
        expected = isoscore_star(apply_geometry(transform, texts), zeta=ISOSCORE_STAR_ZETA,
                                 reference_covariance=np.cov(moved, rowvar=False))
        assert report[name]["isoscore_star"] == pytest.approx(expected, abs=1e-9), name
