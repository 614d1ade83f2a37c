import numpy as np
import pytest

from calibsim_gui.core.geometry.hubness import (
    csls_matrix, csls_pairs, hubness, k_occurrence, neighbourhood_similarity, norm_view)

S = np.sqrt(0.5)
BACKGROUND = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
X, Y, Z = np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([S, S])


def test_neighbourhood_similarity_by_hand():
    # cosines to the background: x (1, 0, -1), y (0, 1, 0), z (.71, .71, -.71); mean of the top 2
    r = neighbourhood_similarity(np.array([X, Y, Z]), BACKGROUND, k=2, block_rows=2)
    np.testing.assert_allclose(r, [0.5, 0.5, S])
    # a background smaller than k is used whole
    np.testing.assert_allclose(neighbourhood_similarity(np.array([X]), BACKGROUND, k=10), [0.0])


def test_csls_by_hand_for_pairs_and_matrices():
    r = neighbourhood_similarity(np.array([X, Y, Z]), BACKGROUND, k=2)
    cos = np.array([[1, 0, S], [0, 1, S], [S, S, 1]])
    matrix = csls_matrix(cos, r, r)
    assert matrix[0, 1] == pytest.approx(2 * 0 - 0.5 - 0.5)          # x, y
    assert matrix[0, 2] == pytest.approx(2 * S - 0.5 - S)            # x, z
    np.testing.assert_allclose(matrix, matrix.T)
    np.testing.assert_allclose(csls_pairs(cos[0, [1, 2]], r[[0, 0]], r[[1, 2]]), matrix[0, [1, 2]])


def test_csls_demotes_a_hub_that_is_close_to_everything():
    rng = np.random.default_rng(0)
    centre = rng.normal(size=20)
    background = centre + rng.normal(size=(500, 20))
    hub = centre / np.linalg.norm(centre)                  # near every background text
    target = rng.normal(size=20)
    target /= np.linalg.norm(target)
    query = target + 1.2 * hub
    cos_hub, cos_target = (np.array([hub, target]) @ query) / np.linalg.norm(query)
    assert cos_hub > cos_target                            # raw cosine ranks the hub first
    r = neighbourhood_similarity(np.array([query, hub, target]), background)
    csls_hub, csls_target = csls_pairs([cos_hub, cos_target], r[[0, 0]], r[[1, 2]])
    assert csls_target > csls_hub                          # CSLS ranks the target first


def test_k_occurrence_by_hand_and_a_planted_hub():
    angles = np.radians([0, 10, 25, 90])
    points = np.c_[np.cos(angles), np.sin(angles)]
    # nearest neighbours: 0 -> 1, 1 -> 0, 2 -> 1, 3 -> 2
    np.testing.assert_array_equal(k_occurrence(points, k=1, block_rows=3), [1, 2, 1, 0])
    rng = np.random.default_rng(1)
    u = np.eye(50)[0]
    cloud = u + 0.8 * rng.normal(size=(300, 50)) / np.sqrt(50)
    counts = k_occurrence(np.vstack([cloud, u]), k=10)
    assert counts.sum() == 301 * 10
    assert counts[-1] == 300                                  # everybody's neighbour
    assert hubness(np.vstack([cloud, u]), k=10) > hubness(cloud, k=10) + 3


def test_norm_view_puts_dot_and_lengths_side_by_side():
    view = norm_view(np.array([[3.0, 4.0]]), np.array([[0.0, 2.0]]))
    assert (view["dot"][0], view["norm_a"][0], view["norm_b"][0]) == (8.0, 5.0, 2.0)
    assert view["cosine"][0] == pytest.approx(0.8)
    assert view["dot"][0] == pytest.approx(view["norm_a"][0] * view["norm_b"][0] * view["cosine"][0])
