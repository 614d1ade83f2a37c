"""Clusters of the map's texts named by their typical words, and the t-SNE map (#28 Map tab)."""

from __future__ import annotations

import numpy as np
import pytest

from calibsim_gui.core.analysis.clusters import choose_k, cluster_texts, tokens, typical_words
from calibsim_gui.core.analysis.projection import tsne_2d
from calibsim_gui.core.errors import Cancelled
from tests.fakes import FakeEmbedder

TOPICS = {"animals": ["cat", "dog", "horse", "cow", "sheep"],
          "tools": ["hammer", "drill", "wrench", "chisel", "pliers"],
          "weather": ["rain", "snow", "wind", "storm", "cloud"]}
FILLER = ["the", "a", "today", "some", "we", "often"]


def topic_corpus(per_topic: int = 20, seed: int = 0) -> tuple[list[str], list[str]]:
    """Sentences of 3 topics (4 of its 5 words in some order, and a filler word), and each one's topic."""
    rng = np.random.default_rng(seed)
    texts, topics = [], []
    for topic, words in TOPICS.items():
        while sum(t == topic for t in topics) < per_topic:
            text = " ".join([*rng.choice(words, 4, replace=False), *rng.choice(FILLER, 1)])
            if text not in texts:
                texts.append(text)
                topics.append(topic)
    return texts, topics


def test_three_obvious_topics_give_three_clusters_named_by_their_words():
    texts, topics = topic_corpus()
    vectors = FakeEmbedder().encode_batch(texts)
    clusters = cluster_texts(texts, vectors)
    assert clusters.chosen and len(clusters.words) == 3 and clusters.sizes.tolist() == [20, 20, 20]
    for cluster, words in enumerate(clusters.words):
        members = {t for t, label in zip(topics, clusters.labels) if label == cluster}
        assert len(members) == 1                                 # one topic per cluster
        assert len(words) == 3 and set(words) <= set(TOPICS[members.pop()])
    column = clusters.column()
    assert column[0] == clusters.names[clusters.labels[0]] and column[0].startswith(f"{clusters.labels[0] + 1}: ")


def test_asked_for_k_the_clusters_are_that_many_largest_first():
    texts, _ = topic_corpus()
    clusters = cluster_texts(texts, FakeEmbedder().encode_batch(texts), k=5)
    assert not clusters.chosen and len(clusters.names) == 5 and clusters.sizes.sum() == 60
    assert clusters.sizes.tolist() == sorted(clusters.sizes.tolist(), reverse=True)
    assert sorted(set(clusters.labels.tolist())) == list(range(5))


def test_words_of_unspaced_scripts_and_tiny_clusters():
    assert tokens("The cat sat: 42 кошки!") == ["cat", "sat", "кошки"]
    assert tokens("我喜欢猫") == ["我喜", "喜欢", "欢猫"] and tokens("猫") == ["猫"]
    texts = ["我喜欢猫", "我喜欢狗", "天气很好", "hammer drill", "", "!!!"]
    words = typical_words(texts, [0, 0, 1, 2, 3, 3], 4)
    assert {"我喜", "喜欢"} <= set(words[0]) and "天气" in words[1] and set(words[2]) == {"hammer", "drill"}
    assert words[3] == []                                         # no word at all: named by number only
    assert typical_words(["", "?"], [0, 1], 2) == [[], []]


def test_one_or_two_texts_make_one_cluster():
    clusters = cluster_texts(["solo text", "other text"], np.eye(2, 4, dtype=np.float32))
    assert clusters.labels.tolist() == [0, 0] and clusters.names[0].startswith("1: ")


def test_cancel_stops_clustering_and_t_sne():
    texts, _ = topic_corpus()
    vectors = FakeEmbedder().encode_batch(texts)
    with pytest.raises(Cancelled):
        cluster_texts(texts, vectors, should_stop=lambda: True)
    with pytest.raises(Cancelled):
        tsne_2d(vectors, should_stop=lambda: True)


def test_t_sne_on_a_sample_keeps_topics_apart_and_places_the_other_texts():
    texts, topics = topic_corpus()
    vectors = FakeEmbedder().encode_batch(texts)
    projection = tsne_2d(vectors, sample=40)
    coords = projection.coords
    assert projection.method == "t-SNE" and coords.shape == (60, 2) and np.isfinite(coords).all()
    distances = np.linalg.norm(coords[:, None] - coords[None], axis=2)
    np.fill_diagonal(distances, np.inf)
    same = [topics[i] == topics[int(np.argmin(row))] for i, row in enumerate(distances)]
    assert np.mean(same) > 0.9                                   # each text's nearest is of its topic
    assert len({tuple(c) for c in coords.round(4)}) > 40          # placed texts are not all on one spot


def test_the_number_of_clusters_is_at_the_elbow_of_their_spread():
    """Four topics of unequal size with much spread inside each (as AG News' sentence vectors):
    the elbow finds four, where silhouette on AG News picked 8 or 3 (#42)."""
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((4, 50)) * 2.2
    sizes = (700, 500, 450, 350)
    points = np.vstack([c + rng.standard_normal((size, 50)) for c, size in zip(centres, sizes)])
    assert choose_k(points.astype(np.float32)) == 4
    assert choose_k(points[:1200].astype(np.float32)) == 2          # the first two topics only


@pytest.mark.slow
def test_ag_news_four_topics_make_four_clusters(real_embedder):
    """2,000 AG News descriptions (world, sports, business, sci/tech) with the built-in model: the
    elbow gives 4 clusters; silhouette gave 12 (and 8, 8, 11 on three samples of 4,000) (#42)."""
    import pandas as pd

    from calibsim_gui.core.embedding.encoding import encode_texts
    from tests.conftest import DATA

    frame = pd.read_csv(DATA / "agnews" / "train.csv").drop_duplicates("description").head(2000)
    texts = frame["description"].astype(str).tolist()
    clusters = cluster_texts(texts, encode_texts(real_embedder, texts).embeddings)
    assert clusters.chosen and len(clusters.sizes) == 4
