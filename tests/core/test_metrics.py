import numpy as np
import pytest

from calibsim_gui.core.errors import InputError
from calibsim_gui.core.metrics import METRICS, get_metrics, matrix_blocks, pair_scores


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
    from calibsim_gui.core import metrics

    a, b = vectors
    whole = pair_scores(a, b)
    monkeypatch.setattr(metrics, "PAIR_BLOCK", 3)
    blocked = pair_scores(a, b)
    for name in METRICS:
        np.testing.assert_allclose(blocked[name], whole[name], rtol=1e-12)
        assert blocked[name].dtype == np.float64 and blocked[name].shape == (7,)
