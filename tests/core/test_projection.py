"""The text map's core: PCA, shapes drawn on it, pairs touching points, nearest texts (#28)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.projection import map_input, nearest, pca_2d, points_in_polygon
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.io.inputs import Document, DocumentSet, load_pairs
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(1000, seed=5), ProfileSettings(n_pairs=600))


def planted(n=400, dim=30, seed=0):
    """Points on a 2-D plane (spread 5 and 2) turned into `dim` dimensions, plus a little noise."""
    rng = np.random.default_rng(seed)
    plane = rng.standard_normal((n, 2)) * [5.0, 2.0]
    basis, _ = np.linalg.qr(rng.standard_normal((dim, 2)))
    return plane @ basis.T + 0.05 * rng.standard_normal((n, dim)) + 3.0, plane


def test_two_directions_recover_a_planted_plane():
    vectors, plane = planted()
    projection = pca_2d(vectors)
    assert projection.coords.shape == (400, 2) and projection.coords.dtype == np.float32
    assert projection.explained.sum() > 0.99 and projection.explained[0] > projection.explained[1]
    # the map is the plane up to each axis's sign: distances between points are kept
    for axis in range(2):
        assert abs(np.corrcoef(projection.coords[:, axis], plane[:, axis])[0, 1]) > 0.999


def test_the_same_points_draw_the_same_map_whatever_their_sign_or_order():
    vectors, _ = planted(seed=1)
    first = pca_2d(vectors).coords
    np.testing.assert_allclose(pca_2d(vectors.copy()).coords, first)
    order = np.random.default_rng(2).permutation(len(vectors))
    np.testing.assert_allclose(pca_2d(vectors[order]).coords, first[order], atol=1e-4)


def test_too_few_points_or_directions_give_zeros_not_errors():
    assert pca_2d(np.ones((1, 5))).coords.tolist() == [[0.0, 0.0]]
    line = pca_2d(np.arange(6.0).reshape(6, 1))
    assert line.coords[:, 1].tolist() == [0.0] * 6 and line.explained.tolist() == [1.0, 0.0]


def test_points_inside_a_rectangle_and_a_lasso():
    grid = np.array([(x, y) for x in range(5) for y in range(5)], dtype=float)
    rectangle = [(0.5, 0.5), (2.5, 0.5), (2.5, 3.5), (0.5, 3.5)]
    inside = points_in_polygon(grid, rectangle)
    assert {tuple(p) for p in grid[inside]} == {(x, y) for x in (1, 2) for y in (1, 2, 3)}
    triangle = [(-0.5, -0.5), (4.5, -0.5), (-0.5, 4.5)]           # the corner x + y <= 3
    assert {tuple(p) for p in grid[points_in_polygon(grid, triangle)]} == \
        {(x, y) for x in range(5) for y in range(5) if x + y <= 3}
    assert not points_in_polygon(grid, [(0, 0), (1, 1)]).any()     # a stroke, not a shape


@pytest.fixture
def pair_table(tmp_path):
    texts = random_sentences(6, seed=3)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": [texts[0], texts[1], texts[2], "", texts[0]],
                  "sentence2": [texts[1], texts[3], texts[4], texts[5], texts[4]],
                  "score": [1, 2, 3, 4, 5]}).to_csv(path, index=False)
    return load_pairs(path), texts


def test_a_pair_list_maps_each_distinct_text_once_with_its_pairs(pair_table):
    table, texts = pair_table
    text_map = map_input(table, FakeEmbedder())
    # row 4 has an empty side: not scored, not drawn; texts[0] and texts[1] appear twice
    assert text_map.texts == [texts[0], texts[1], texts[3], texts[2], texts[4]]
    assert text_map.ids == ["row 1 A", "row 1 B", "row 2 B", "row 3 A", "row 3 B"]
    assert text_map.rows.tolist() == [0, 1, 2, 4]
    assert text_map.segments.tolist() == [[0, 1], [1, 2], [3, 4], [0, 4]]
    assert text_map.rows_touching([1]).tolist() == [0, 1]
    assert text_map.rows_touching([3, 4]).tolist() == [2, 4]
    means = text_map.per_point([1.0, 2.0, 3.0, 5.0])
    assert means.tolist() == [3.0, 1.5, 2.0, 3.0, 4.0]
    assert text_map.vectors.shape == (5, FakeEmbedder().dimension)


def test_a_document_set_maps_each_document_and_names_its_file(tmp_path):
    docs = tuple(Document(f"d{i}", text, tmp_path / f"f{i % 2}.txt")
                 for i, text in enumerate(random_sentences(5, seed=9)))
    text_map = map_input(DocumentSet(docs, (), 0, 0, ()), FakeEmbedder())
    assert text_map.ids == ["d0", "d1", "d2", "d3", "d4"]
    assert text_map.sources == ["f0.txt", "f1.txt", "f0.txt", "f1.txt", "f0.txt"]
    assert len(text_map.segments) == 0


def test_one_text_is_no_map_and_a_stopped_run_says_so(pair_table):
    one = DocumentSet((Document("d0", "alone", None),), (), 0, 0, ())
    with pytest.raises(InputError, match="at least 2"):
        map_input(one, FakeEmbedder())
    with pytest.raises(Cancelled):
        map_input(pair_table[0], FakeEmbedder(), should_stop=lambda: True)


def test_nearest_texts_are_ranked_and_calibrated_like_pairs(pair_table, profile):
    table, texts = pair_table
    embedder = FakeEmbedder()
    text_map = map_input(table, embedder)
    found = nearest(text_map, text_map.vectors[0], profile, k=3, exclude=0)
    assert [p for p, _, _ in found] != [] and 0 not in [p for p, _, _ in found]
    raws = [raw for _, raw, _ in found]
    assert raws == sorted(raws, reverse=True) and len(found) == 3
    cosines = text_map.vectors[[p for p, _, _ in found]] @ text_map.vectors[0]
    np.testing.assert_allclose(raws, cosines, atol=1e-5)
    expected = profile.calibrate("cosine", np.array(raws))["calibrated"]
    np.testing.assert_allclose([c for _, _, c in found], expected)
    # a typed text that is one of the map's texts finds itself first, with a raw cosine of 1
    typed = embedder.encode_batch([texts[2]])[0]
    point, raw, calibrated = nearest(text_map, typed, profile, k=1)[0]
    assert text_map.texts[point] == texts[2] and raw == pytest.approx(1.0, abs=1e-5)
    assert calibrated > 0.9
