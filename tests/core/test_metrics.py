import numpy as np
import pytest

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.metrics import (
    METRICS,
    MatrixParts,
    Rows,
    get_metrics,
    matrix_blocks,
    pair_scores,
)


@pytest.fixture
def vectors():
    rng = np.random.default_rng(3)
    return rng.standard_normal((7, 5)), rng.standard_normal((7, 5))


def test_pair_scores_match_textbook_definitions(vectors):
    a, b = vectors
    scores = pair_scores(a, b)
    cos = np.array([x @ y / np.linalg.norm(x) / np.linalg.norm(y) for x, y in zip(a, b)])
    np.testing.assert_allclose(scores["cosine"], cos)
    np.testing.assert_allclose(scores["dot"], [x @ y for x, y in zip(a, b)])
    np.testing.assert_allclose(scores["euclidean"], [np.linalg.norm(x - y) for x, y in zip(a, b)])
    np.testing.assert_allclose(scores["manhattan"], [np.abs(x - y).sum() for x, y in zip(a, b)])
    np.testing.assert_allclose(scores["angular"], np.arccos(cos) / np.pi)


def test_matrix_blocks_equal_pairwise_scores(vectors):
    x = np.vstack(vectors)
    for metric in METRICS.values():
        full = np.vstack([block for _, block in matrix_blocks(x, metric, block_rows=4)])
        assert full.shape == (14, 14)
        i, j = np.triu_indices(14, 1)
        np.testing.assert_allclose(full[i, j], metric.pairs(x[i], x[j]), atol=1e-9)


def test_metrics_sharing_one_block_s_parts_give_the_matrices_each_computes_alone(vectors):
    x, y = vectors
    shared = MatrixParts(x, Rows(y).computed())     # one cosine matrix, angle and lengths for all
    for metric in METRICS.values():
        np.testing.assert_array_equal(metric.from_parts(shared), metric.matrix(x, y), err_msg=metric.name)


def test_manhattan_matrix_has_the_bits_of_scipys_cdist_without_importing_scipy_spatial():
    """The query scales' manhattan matrices come from scipy's compiled kernel, loaded alone."""
    import subprocess
    import sys

    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((37, 384)), rng.standard_normal((11, 384)).astype(np.float32)
    for a, b in [(x, x[:9]), (y, y), (x[:5], y)]:
        np.testing.assert_array_equal(METRICS["manhattan"].matrix(a, b), cdist(a, b, "cityblock"))
    code = ("import sys, numpy as np; from calibsim_gui.core.geometry.metrics import METRICS; "
            "m = METRICS['manhattan'].matrix(np.eye(3), np.ones((2, 3))); "
            "print(m.tolist(), any(k.startswith('scipy') for k in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[-1] == "False" and out.startswith("[[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]")


def test_every_metric_declares_orientation_and_similarity_view_ranks_closer_pairs_higher():
    a = np.array([[1.0, 0.0], [1.0, 0.0]])
    b = np.array([[0.9, 0.1], [0.0, 1.0]])      # first pair is the closer one
    raw = pair_scores(a, b)
    for name, metric in METRICS.items():
        sim = metric.as_similarity(raw[name])
        assert sim[0] > sim[1], name
        assert metric.orientation in ("higher = more similar", "lower = more similar")
    assert not METRICS["euclidean"].higher_is_similar and METRICS["cosine"].higher_is_similar


def test_unknown_metric_is_named():
    with pytest.raises(InputError, match="cosinus.*cosine, dot"):
        get_metrics(["cosinus"])


def test_pair_scores_are_the_same_when_computed_in_blocks(vectors, monkeypatch):
    from calibsim_gui.core.geometry import metrics

    a, b = vectors
    whole = pair_scores(a, b)
    monkeypatch.setattr(metrics, "PAIR_BLOCK", 3)
    blocked = pair_scores(a, b)
    for name in METRICS:
        np.testing.assert_allclose(blocked[name], whole[name], rtol=1e-12)
        assert blocked[name].dtype == np.float64 and blocked[name].shape == (7,)



@pytest.mark.parametrize("same_rows", [True, False])
def test_pairs_named_by_index_score_as_the_gathered_pairs_bit_for_bit(monkeypatch, same_rows):
    """A background's sentences recur across its pairs: scoring the pairs by index (each row's
    length computed once, rows gathered a block at a time) gives every metric's scores exactly."""
    from calibsim_gui.core.geometry import metrics

    rng = np.random.default_rng(11)
    a = rng.standard_normal((40, 6)).astype(np.float32)
    b = a if same_rows else rng.standard_normal((30, 6)).astype(np.float32)
    a[5] = 0                                            # a zero vector among them
    first, second = rng.integers(0, len(a), 250), rng.integers(0, len(b), 250)
    monkeypatch.setattr(metrics, "PAIR_BLOCK", 16)      # pairs and row lengths in several blocks
    by_index = pair_scores(a, b, pairs=(first, second))
    gathered = pair_scores(a[first], b[second])
    for name in METRICS:
        np.testing.assert_array_equal(by_index[name], gathered[name], err_msg=name)
        assert by_index[name].shape == (250,)


# --- issue 19: norm-aware similarities and soft cosine, against independent computations ---

from scipy.spatial.distance import cosine as scipy_cosine_distance  # noqa: E402

from calibsim_gui.core.geometry.transforms import SoftCosineSpace, feature_correlation
from calibsim_gui.core.geometry.metrics import WRD_LAMBDA, soft_cosine


def test_scaled_sim_and_wrd_match_scipy_on_fixed_vectors(vectors):
    a, b = vectors
    scores = pair_scores(a, b)
    cos = np.array([1 - scipy_cosine_distance(x, y) for x, y in zip(a, b)])
    norms = np.array([np.sqrt(x @ x) + np.sqrt(y @ y) for x, y in zip(a, b)])
    np.testing.assert_allclose(scores["scaled90"], 0.9 * cos + 0.1 * norms, atol=1e-12)
    np.testing.assert_allclose(scores["scaled50"], 0.5 * cos + 0.5 * norms, atol=1e-12)
    wrd = [np.sqrt(x @ x) - np.sqrt(y @ y) + WRD_LAMBDA * np.arccos(1 - scipy_cosine_distance(x, y))
           for x, y in zip(a, b)]
    np.testing.assert_allclose(scores["wrd"], wrd, atol=1e-12)


def test_norm_aware_metrics_by_hand():
    x, y = np.array([[3.0, 4.0]]), np.array([[0.0, 2.0]])       # |x| = 5, |y| = 2, cos = 0.8
    assert pair_scores(x, y, ["scaled90"])["scaled90"][0] == pytest.approx(0.9 * 0.8 + 0.1 * 7)
    assert pair_scores(x, y, ["scaled50"])["scaled50"][0] == pytest.approx(0.5 * 0.8 + 0.5 * 7)
    angle = np.arccos(0.8)
    assert pair_scores(x, y, ["wrd"])["wrd"][0] == pytest.approx(3 + angle)
    # not symmetric: the first text of a pair is x
    assert pair_scores(y, x, ["wrd"])["wrd"][0] == pytest.approx(-3 + angle)
    assert METRICS["wrd"].orientation == "lower = more similar"
    assert METRICS["scaled90"].orientation == "higher = more similar"


def test_norm_aware_metric_names_split_as_score_columns():
    from calibsim_gui.core.analysis.pairs import score_column, split_score_column

    for name in ("scaled90", "scaled50", "wrd", "radial"):
        assert "_" not in name
        assert split_score_column(score_column(name, "bg_percentile", "whiten")) == (
            name, "bg_percentile", "whiten")


def test_wrd_matrix_rows_are_the_first_text(vectors):
    a, b = vectors
    block = METRICS["wrd"].matrix(a, b)
    np.testing.assert_allclose(np.diag(block), pair_scores(a, b, ["wrd"])["wrd"], atol=1e-12)
    assert not np.allclose(block, METRICS["wrd"].matrix(b, a).T * -1)     # not a mirror image


def test_feature_correlation_is_the_correlation_matrix_and_psd():
    rng = np.random.default_rng(4)
    background = rng.standard_normal((200, 6)) @ rng.standard_normal((6, 6))
    s = feature_correlation(np.cov(background, rowvar=False))
    np.testing.assert_allclose(s, np.corrcoef(background, rowvar=False), atol=1e-12)
    assert np.linalg.eigvalsh(s).min() > -1e-12
    constant = np.column_stack([background[:, :2], np.full(200, 3.0)])
    s = feature_correlation(np.cov(constant, rowvar=False))
    np.testing.assert_allclose(s[2], [0.0, 0.0, 1.0])          # a dimension that never varies


def test_cosine_in_the_soft_space_is_soft_cosine_with_the_stored_s(vectors):
    a, b = vectors
    rng = np.random.default_rng(6)
    background = rng.standard_normal((300, 5)) @ rng.standard_normal((5, 5)) + 2.0
    r = np.corrcoef(background, rowvar=False)
    full = SoftCosineSpace(n_factors=5).fit(background)
    np.testing.assert_allclose(full.similarity(), r, atol=1e-6)         # k = dim: S is R itself
    mapped = pair_scores(full.transform(a), full.transform(b), ["cosine"])["cosine"]
    np.testing.assert_allclose(mapped, soft_cosine(a, b, r), atol=1e-6)
    two = SoftCosineSpace(n_factors=2).fit(background)                  # 2-factor form, by numpy
    values, vectors_ = np.linalg.eigh(r)
    top = vectors_[:, -2:] @ np.diag(values[-2:]) @ vectors_[:, -2:].T
    expected = top + np.diag(1 - np.diag(top))
    np.testing.assert_allclose(two.similarity(), expected, atol=1e-6)
    np.testing.assert_allclose(np.diag(two.similarity()), 1.0, atol=1e-6)
    assert np.linalg.eigvalsh(two.similarity()).min() > -1e-6
    mapped = pair_scores(two.transform(a), two.transform(b), ["cosine"])["cosine"]
    np.testing.assert_allclose(mapped, soft_cosine(a, b, expected), atol=1e-6)
    assert two.transform(a).shape == (7, 2 + 5)


def test_radial_weighted_angle_by_hand_and_against_scipy(vectors):
    x, y = np.array([[3.0, 4.0]]), np.array([[0.0, 2.0]])       # |x| = 5, |y| = 2, cos = 0.8
    expected = np.sqrt(3 ** 2 + 5 * 2 * np.arccos(0.8) ** 2)
    assert pair_scores(x, y, ["radial"])["radial"][0] == pytest.approx(expected)
    assert pair_scores(y, x, ["radial"])["radial"][0] == pytest.approx(expected)    # symmetric
    a, b = vectors
    theta = np.array([np.arccos(1 - scipy_cosine_distance(p, q)) for p, q in zip(a, b)])
    na, nb = np.hypot.reduce(a, axis=1), np.hypot.reduce(b, axis=1)
    np.testing.assert_allclose(pair_scores(a, b, ["radial"])["radial"],
                               np.sqrt((na - nb) ** 2 + na * nb * theta ** 2), atol=1e-12)
    assert METRICS["radial"].orientation == "lower = more similar"
    assert np.allclose(pair_scores(a, a, ["radial"])["radial"], 0.0, atol=1e-6)    # identical: 0
    unit = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
    np.testing.assert_allclose(pair_scores(*unit, ["radial"])["radial"], theta, atol=1e-12)


def test_unknown_soft_cosine_metric_points_to_the_geometry():
    with pytest.raises(InputError, match="--geometry soft"):
        get_metrics(["softcos"])


def test_soft_cosine_matches_the_formula_by_hand_and_reduces_to_cosine(vectors):
    a, b = vectors
    rng = np.random.default_rng(5)
    m = rng.standard_normal((5, 5))
    s = m @ m.T                                                  # positive semi-definite
    expected = [x @ s @ y / np.sqrt(x @ s @ x) / np.sqrt(y @ s @ y) for x, y in zip(a, b)]
    np.testing.assert_allclose(soft_cosine(a, b, s), expected, atol=1e-12)
    np.testing.assert_allclose(soft_cosine(a, b, np.eye(5)), pair_scores(a, b, ["cosine"])["cosine"],
                               atol=1e-12)
    # 2-d by hand: S = [[1, .5], [.5, 1]], u = e1, v = e2 -> .5 / (1 * 1)
    hand = soft_cosine(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]), np.array([[1, .5], [.5, 1]]))
    assert hand[0] == pytest.approx(0.5)
    # equal to cosine after the map x -> S^(1/2) x
    values, vectors_ = np.linalg.eigh(s)
    root = vectors_ @ np.diag(np.sqrt(np.clip(values, 0, None))) @ vectors_.T
    np.testing.assert_allclose(soft_cosine(a, b, s), pair_scores(a @ root, b @ root, ["cosine"])["cosine"],
                               atol=1e-10)
