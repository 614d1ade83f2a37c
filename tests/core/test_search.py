"""Search: each query against a corpus, ranked like a brute-force sort, calibrated like pairs."""

from __future__ import annotations

import numpy as np
import pytest

from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.io.inputs import Document, DocumentSet
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.analysis.search import search
from calibsim_gui.core.geometry import knn
from calibsim_gui.core.geometry.knn import top_hits
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(2000, seed=5), ProfileSettings(n_pairs=1000))


def documents(texts, prefix="d"):
    docs = tuple(Document(f"{prefix}{i}", t, None) for i, t in enumerate(texts))
    return DocumentSet(docs, (), 0, 0, ())


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_top_hits_match_a_full_sort_in_every_block(metric):
    rng = np.random.default_rng(0)
    queries, corpus = rng.standard_normal((37, 8)), rng.standard_normal((300, 8))
    hits, raw, lowest, highest = top_hits(queries, corpus, metric, 7,
                                          block_bytes=knn.SCORE_BYTES * 300 * 5)   # 5 queries a block
    from calibsim_gui.core.geometry.metrics import METRICS

    full = METRICS[metric].as_similarity(METRICS[metric].matrix(queries, corpus))
    expected = np.argsort(-full, axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(hits, expected)
    np.testing.assert_allclose(METRICS[metric].as_similarity(raw),
                               np.take_along_axis(full, expected, axis=1))
    np.testing.assert_allclose(lowest, full.min(axis=1))
    np.testing.assert_allclose(highest, full.max(axis=1))


def test_each_query_finds_its_own_sentence_first_with_calibrated_and_local_scores(profile):
    corpus_texts = random_sentences(400, seed=9)
    queries = documents(corpus_texts[:5], "q")
    hits = search(queries, documents(corpus_texts), FakeEmbedder(), profile, top_k=3)
    frame = hits.frame
    assert len(frame) == 15 and list(frame["rank"][:3]) == [1, 2, 3]
    first = frame[frame["rank"] == 1]
    assert list(first["doc_id"]) == ["d0", "d1", "d2", "d3", "d4"]
    assert (first["cosine_calibrated"] > 0.99).all() and (first["cosine_local_minmax"] == 1).all()
    assert frame["cosine_calibrated"].between(0, 1).all()
    assert (frame.groupby("query_id")["cosine_raw"].apply(lambda s: s.is_monotonic_decreasing)).all()
    assert np.isfinite(frame["cosine_query_zscore"]).all()
    assert "NOT comparable" in hits.provenance["columns"]["local_minmax"]


def test_query_zscore_is_the_query_side_z_against_background_texts(profile):
    embedder = FakeEmbedder()
    corpus_texts = random_sentences(50, seed=3)
    hits = search(documents(["w1 w2 w3"], "q"), documents(corpus_texts), embedder, profile, top_k=50)
    q = embedder.encode_batch(["w1 w2 w3"])[0].astype(np.float64)
    background = profile.query_reference.astype(np.float64)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    sims = unit(background) @ unit(q)
    top = hits.frame.iloc[0]
    assert top["cosine_query_zscore"] == pytest.approx((top["cosine_raw"] - sims.mean()) / sims.std(),
                                                       rel=1e-4)


def test_bad_top_k_and_cancel_are_refused(profile):
    docs = documents(random_sentences(20, seed=1))
    with pytest.raises(InputError, match="top-k must be at least 1"):
        search(docs, docs, FakeEmbedder(), profile, top_k=0)
    with pytest.raises(Cancelled):
        search(docs, docs, FakeEmbedder(), profile, should_stop=lambda: True)


def test_a_search_over_the_memory_budget_is_refused_before_encoding(profile):
    embedder = FakeEmbedder()
    docs = documents(random_sentences(20, seed=1))
    with pytest.raises(InputError, match="memory budget"):
        search(docs, docs, embedder, profile, memory_budget=1000)
    assert embedder.calls == 0


def test_an_approximate_search_finds_what_the_exact_one_finds_and_says_so(profile):
    corpus_texts = random_sentences(600, seed=9)
    queries, corpus = documents(corpus_texts[:20], "q"), documents(corpus_texts)
    exact = search(queries, corpus, FakeEmbedder(), profile, top_k=3, method="exact")
    approximate = search(queries, corpus, FakeEmbedder(), profile, top_k=3, method="approximate")
    assert approximate.provenance["search"]["method"] == "approximate"
    assert exact.provenance["search"]["method"] == "exact"
    first = approximate.frame[approximate.frame["rank"] == 1]
    assert list(first["doc_id"]) == [f"d{i}" for i in range(20)]          # each query is in the corpus
    assert (first["cosine_local_minmax"] == 1).all()
