"""A document set by its neighbours: exact like brute force, approximate with measured recall,
pairs and duplicate groups calibrated like pairs, inside the memory budget, never N x N."""

from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest

from calibsim_gui.core.analysis.neighbours import DocumentNeighbours, document_neighbours, vector_neighbours
from calibsim_gui.core.calibration.calibrators import AgreementBand
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.geometry.knn import ApproximateIndex, IndexSettings, recall_at_k, top_hits
from calibsim_gui.core.geometry.metrics import METRICS, Rows
from calibsim_gui.core.io.inputs import Document, DocumentSet
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(2000, seed=5), ProfileSettings(n_pairs=1000))


def documents(texts, prefix="d"):
    return DocumentSet(tuple(Document(f"{prefix}{i}", t, None) for i, t in enumerate(texts)), (), 0, 0, ())


def brute_force(vectors, metric, k):
    full = METRICS[metric].as_similarity(METRICS[metric].matrix(vectors, vectors))
    np.fill_diagonal(full, -np.inf)
    return np.argsort(-full, axis=1, kind="stable")[:, :k], full


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "manhattan"])
def test_exact_neighbours_leave_each_text_out_and_equal_brute_force_in_every_block(metric):
    vectors = np.random.default_rng(0).standard_normal((300, 8))
    hits, raw, lowest, highest = top_hits(vectors, vectors, metric, 7, exclude=np.arange(300),
                                          block_bytes=40 * 300 * 11)          # 11 rows a block
    expected, full = brute_force(vectors, metric, 7)
    np.testing.assert_array_equal(hits, expected)
    np.testing.assert_allclose(METRICS[metric].as_similarity(raw), np.take_along_axis(full, expected, 1))
    np.testing.assert_allclose(highest, full.max(axis=1))
    np.fill_diagonal(full, np.inf)
    np.testing.assert_allclose(lowest, full.min(axis=1), rtol=1e-6)



@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_a_corpus_kept_between_typed_queries_finds_what_the_array_finds(metric):
    """The map keeps its corpus's unit vectors between typed queries: same hits, same scores."""
    vectors = np.random.default_rng(2).standard_normal((500, 8))
    kept = Rows(vectors)
    unit = kept.unit
    for query in np.random.default_rng(3).standard_normal((4, 1, 8)):
        hits, raw, lowest, highest = top_hits(query, kept, metric, 5)
        expected = top_hits(query, vectors, metric, 5)
        np.testing.assert_array_equal(hits, expected[0])
        np.testing.assert_array_equal(raw, expected[1])
        np.testing.assert_allclose([lowest, highest], [expected[2], expected[3]])
    assert kept.unit is unit                                        # computed once, not per query

def test_document_neighbours_are_the_brute_force_neighbours_with_calibrated_scores(profile):
    texts = random_sentences(120, seed=3)
    embedder = FakeEmbedder()
    result = document_neighbours(documents(texts), embedder, profile, k=5, method="exact")
    assert isinstance(result, DocumentNeighbours) and result.vectors.shape == (120, 48)
    expected, full = brute_force(embedder.encode_batch(texts).astype(np.float64), "cosine", 5)
    np.testing.assert_array_equal(result.hits, expected)
    frame = result.neighbours
    assert list(frame.columns[:6]) == ["doc_id", "document", "rank", "neighbour_id", "neighbour",
                                       "cosine_raw"]
    assert {f"cosine_{form}" for form in profile.forms()} <= set(frame.columns)
    assert len(frame) == 600 and list(frame["rank"][:5]) == [1, 2, 3, 4, 5]
    assert (frame["doc_id"] != frame["neighbour_id"]).all()
    assert list(frame["neighbour_id"][:5]) == [f"d{i}" for i in expected[0]]
    np.testing.assert_allclose(frame["cosine_raw"][:5], full[0, expected[0]], rtol=1e-5)
    np.testing.assert_allclose(frame["cosine_calibrated"],
                               profile.calibrate("cosine", frame["cosine_raw"].to_numpy())["calibrated"])
    assert result.provenance["neighbours"]["method"] == "exact"
    assert result.provenance["neighbours"]["k"] == 5 and result.provenance["documents"]["count"] == 120
    again = vector_neighbours(result.vectors, result.ids, result.texts, profile, k=5)     # vectors at hand
    np.testing.assert_array_equal(again.hits, result.hits)
    assert again.neighbours.equals(result.neighbours) and again.pairs.equals(result.pairs)


def test_near_duplicates_come_first_and_form_groups_above_the_threshold(profile):
    texts = random_sentences(60, seed=11)
    base = texts[0].split()
    texts += [" ".join(base + ["again"]), " ".join(base + ["again", "once"]), texts[5] + " too"]
    result = document_neighbours(documents(texts), FakeEmbedder(), profile, k=3,
                                 duplicate_threshold=0.7, method="exact")
    pairs = result.pairs
    assert pairs["cosine_calibrated"].is_monotonic_decreasing
    assert not pairs.duplicated(["doc_id", "neighbour_id"]).any()
    assert set(map(frozenset, zip(pairs["doc_id"], pairs["neighbour_id"]))).__len__() == len(pairs)
    top = [{a, b} for a, b in zip(pairs["doc_id"][:4], pairs["neighbour_id"][:4])]
    assert all(pair <= {"d0", "d60", "d61"} or pair == {"d5", "d62"} for pair in top)
    groups = result.groups
    assert list(groups.columns) == ["group", "size", "doc_id", "document"]
    first = groups[groups["group"] == 1]
    assert set(first["doc_id"]) == {"d0", "d60", "d61"} and (first["size"] == 3).all()
    assert set(groups[groups["group"] == 2]["doc_id"]) == {"d5", "d62"}
    above = result.pairs[result.pairs["cosine_calibrated"] >= 0.7]
    assert set(above["doc_id"]) | set(above["neighbour_id"]) == set(groups["doc_id"])
    none = document_neighbours(documents(texts), FakeEmbedder(), profile, k=3,
                               duplicate_threshold=None, max_pairs=4)
    assert none.groups.empty and len(none.pairs) == 4
    assert any("4 most similar" in note for note in none.notes)


def test_the_agreement_band_columns_come_with_a_profile_that_has_a_band(profile):
    rng = np.random.default_rng(1)
    c = rng.uniform(0, 1, 4000)
    band = AgreementBand().fit(c, np.clip(c + rng.normal(0, 0.1, 4000), 0, 1), source={"name": "fake"},
                               model="m")
    banded = dataclasses.replace(profile, metrics={
        name: dataclasses.replace(ref, band=band) for name, ref in profile.metrics.items()})
    result = document_neighbours(documents(random_sentences(30, seed=2)), FakeEmbedder(), banded, k=2)
    for table in (result.neighbours, result.pairs):
        assert {"cosine_calibrated_band80_lo", "cosine_calibrated_band95_hi"} <= set(table.columns)
        assert (table["cosine_calibrated_band80_lo"] <= table["cosine_calibrated_band80_hi"]).all()


def clustered(n, dim=32, centres=60, seed=0):
    rng = np.random.default_rng(seed)
    middle = rng.standard_normal((centres, dim)) * 3
    return (middle[rng.integers(0, centres, n)] + rng.standard_normal((n, dim))).astype(np.float32)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_the_approximate_index_finds_95_percent_of_the_exact_neighbours(metric):
    vectors = clustered(4000)
    own = np.arange(len(vectors))
    exact, _, _, _ = top_hits(vectors, vectors, metric, 10, exclude=own)
    found, raw = ApproximateIndex(vectors, metric).search(vectors, 10, exclude=own)
    assert not (found == own[:, None]).any()
    assert recall_at_k(found, exact) >= 0.95
    assert np.isfinite(raw[found >= 0]).all()
    np.testing.assert_allclose(raw[:, 0], METRICS[metric].pairs(vectors.astype(np.float64),
                                                                 vectors[found[:, 0]].astype(np.float64)))


def test_a_larger_index_is_built_with_more_candidates_and_searches_at_least_four_per_neighbour():
    sizes = (10_000, 250_000, 1_000_000)
    built = [IndexSettings.for_size(n).build_candidates for n in sizes]
    assert built[0] == built[1] < built[2]
    assert IndexSettings.for_size(10_000, k=100).search_candidates >= 400


def test_the_approximate_method_is_recorded_with_its_index(profile):
    texts = random_sentences(3000, seed=8)
    result = document_neighbours(documents(texts), FakeEmbedder(), profile, k=4, method="approximate")
    index = result.provenance["neighbours"]
    assert index["method"] == "approximate" and index["kind"] == "faiss IndexHNSWFlat"
    assert index["search_candidates"] >= 4 * 4
    assert any("approximate index" in note for note in result.notes)
    assert (result.hits != np.arange(3000)[:, None]).all() and len(result.neighbours) == 12_000


def test_without_faiss_large_sets_are_exact_and_the_approximate_method_says_what_to_install(monkeypatch):
    """The desktop bundle leaves faiss out: neighbours are then exact, never refused for it."""
    from calibsim_gui.core.geometry import knn

    assert knn.choose_method("auto", 1_000_000, 1_000_000, "cosine") == "approximate"
    monkeypatch.setattr(knn, "index_available", lambda: False)
    assert knn.choose_method("auto", 1_000_000, 1_000_000, "cosine") == "exact"
    with pytest.raises(InputError, match="needs faiss") as refused:
        knn.choose_method("approximate", 10, 1_000, "cosine")
    assert "pip install faiss-cpu" in refused.value.fix


def test_a_set_over_the_memory_budget_is_refused_before_encoding(profile):
    embedder = FakeEmbedder()
    with pytest.raises(InputError, match="memory budget") as refused:
        document_neighbours(documents(random_sentences(20, seed=1)), embedder, profile,
                            memory_budget=100_000)
    assert "--k" in refused.value.fix and embedder.calls == 0
    with pytest.raises(InputError, match="k must be at least 1"):
        document_neighbours(documents(random_sentences(20, seed=1)), embedder, profile, k=0)
    with pytest.raises(InputError, match="unknown method"):
        document_neighbours(documents(random_sentences(20, seed=1)), embedder, profile, method="fast")
    with pytest.raises(InputError, match="approximate index ranks by"):
        document_neighbours(documents(random_sentences(20, seed=1)), embedder, profile,
                            metric="manhattan", method="approximate")
    with pytest.raises(Cancelled):
        document_neighbours(documents(random_sentences(20, seed=1)), embedder, profile,
                            should_stop=lambda: True)


def test_the_budget_sizes_the_blocks(profile):
    budget = 300_000_000
    result = document_neighbours(documents(random_sentences(50, seed=1)), FakeEmbedder(), profile,
                                 k=3, memory_budget=budget, method="exact")
    assert result.provenance["neighbours"]["block_bytes"] < budget - 200_000_000


def test_neighbours_of_10000_vectors_never_hold_the_n_by_n_matrix():
    vectors = np.random.default_rng(0).standard_normal((10_000, 16)).astype(np.float32)
    tracemalloc.start()
    try:
        hits, _, _, _ = top_hits(vectors, vectors, "cosine", 10, exclude=np.arange(10_000),
                                 block_bytes=40_000_000, ranges=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert hits.shape == (10_000, 10) and not (hits == np.arange(10_000)[:, None]).any()
    assert peak < 45_000_000          # the 10,000 x 10,000 float32 matrix alone is 400 MB


def test_the_memory_estimate_covers_what_the_tables_hold_and_a_million_texts_fit_6_gb(profile):
    from calibsim_gui.core.analysis.neighbours import neighbours_run_bytes, plan_neighbours
    from calibsim_gui.core.io.memory import WORKING_BYTES

    n, dim = 20_000, 16
    vectors = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    ids = [f"d{i}" for i in range(n)]
    vector_neighbours(vectors[:100], ids[:100], ids[:100], profile, k=10, method="approximate")   # imports
    tracemalloc.start()
    try:
        vector_neighbours(vectors, ids, ids, profile, k=10, method="approximate")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    n_scores = 1 + len(profile.forms()) + (4 if profile.references()["cosine"].band is not None else 0)
    estimate = neighbours_run_bytes(n, dim, 10, n_scores, method="approximate") - WORKING_BYTES
    assert peak <= estimate
    assert plan_neighbours(1_000_000, 384, profile, method="approximate", memory_budget=6 * 10**9)[0] == "approximate"
