"""Clusters of the map's texts, each named by its most typical words.

The texts' embeddings (unit length, then their first `CLUSTER_DIMS` principal components) are
grouped by k-means (scikit-learn: `KMeans`, `MiniBatchKMeans` beyond `MINI_BATCH_FROM` texts).
Unless asked for a number, k is the one from 2 to `MAX_CLUSTERS` (fewer for few texts) at the
elbow of the clusters' spread on a sample of the texts (`choose_k`). Each cluster is named by the words whose TF-IDF weight is highest in its
texts compared with the others; scripts written without spaces (Chinese, Japanese, Thai, ...)
count pairs of characters as words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from calibsim_gui.core.analysis.projection import one_thread, principal_components, stop_if_asked

MAX_CLUSTERS = 12
CLUSTER_DIMS = 50
CHOOSE_SAMPLE = 2000            # texts each candidate k is tried on
MINI_BATCH_FROM = 10_000
WORDS_PER_CLUSTER = 3
UNSPACED = re.compile(r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
                      r"\uf900-\ufaff]+")
WORD = re.compile(r"\w\w+")


@dataclass(frozen=True)
class Clusters:
    """Which cluster each text is in, and what each cluster is called.

    Attributes
    ----------
    labels : ndarray of int of shape (n_points,)
        Per text its cluster, 0 the largest.
    words : list of list of str
        Per cluster its most typical words, most typical first (empty when its texts hold none).
    sizes : ndarray of int
        Texts per cluster.
    chosen : bool
        True when k was chosen (`choose_k`), False when it was asked for.
    """

    labels: np.ndarray
    words: list
    sizes: np.ndarray
    chosen: bool

    @property
    def names(self) -> list[str]:
        """Per cluster "3: cat, dog, horse" (numbered from 1; "3: (no words)" when it has none)."""
        return [f"{i + 1}: {', '.join(words) if words else '(no words)'}" for i, words in enumerate(self.words)]

    def column(self) -> np.ndarray:
        """Per text its cluster's name (an object array: a category column of the map)."""
        return np.asarray(self.names, dtype=object)[self.labels]


def tokens(text: str) -> list[str]:
    """The words of `text`, lower-cased, without numbers or English stop words; runs of an unspaced
    script give their pairs of characters (a lone character stays itself)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    text = text.lower()
    out = [w for w in WORD.findall(UNSPACED.sub(" ", text)) if not w.isdigit() and w not in ENGLISH_STOP_WORDS]
    for run in UNSPACED.findall(text):
        out += [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]
    return out


def typical_words(texts, labels, k: int, n_words: int = WORDS_PER_CLUSTER) -> list[list[str]]:
    """Per cluster the `n_words` words weighing most more in its texts than in the others (mean
    TF-IDF), words found in at least 2 of its texts first (a cluster of few shared words is
    named by its texts' own)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(analyzer=tokens, sublinear_tf=True, max_features=50_000)
    try:
        weights = vectorizer.fit_transform(list(texts)).tocsr()
    except ValueError:                                         # no text holds a single word
        return [[] for _ in range(k)]
    vocabulary = vectorizer.get_feature_names_out()
    labels = np.asarray(labels)
    total = np.asarray(weights.sum(axis=0)).ravel()
    present = weights.copy()
    present.data[:] = 1
    out = []
    for cluster in range(k):
        inside = labels == cluster
        size, others = int(inside.sum()), int((~inside).sum())
        mean_in = np.asarray(weights[inside].sum(axis=0)).ravel() / max(size, 1)
        mean_out = (total - mean_in * size) / others if others else np.zeros_like(total)
        shared = np.asarray(present[inside].sum(axis=0)).ravel() >= min(size, 2)
        order = np.lexsort((-(mean_in - mean_out), ~shared))         # shared words first, then by score
        out.append([str(vocabulary[i]) for i in order[mean_in[order] > 0][:n_words]])
    return out


def choose_k(points, *, seed: int = 0, should_stop=None) -> int:
    """The k from 2 to `MAX_CLUSTERS` (and to about the square root of n / 2: clusters of a few
    texts would say little) at the elbow of k-means' within-cluster spread on a sample of `points`:
    the k whose spread, both scaled to 0-1 over k = 1 ... the largest, falls furthest below the
    straight line from the first to the last (Kneedle; Satopää et al. 2011).

    Silhouette, the former rule, was flat on sentence embeddings (0.07-0.09 for every k on AG
    News) and picked 8, or 3, of AG News' 4 topics by noise; the elbow picks 4 or 5 (#42).
    """
    from sklearn.cluster import KMeans

    n = len(points)
    sample = points[np.random.default_rng(seed).choice(n, min(n, CHOOSE_SAMPLE), replace=False)]
    ks = np.arange(1, max(2, min(MAX_CLUSTERS, len(sample) - 1, round(np.sqrt(n / 2)))) + 1)
    spread = []
    for k in ks:
        spread.append(KMeans(int(k), n_init=3, random_state=seed).fit(sample).inertia_)
        stop_if_asked(should_stop)
    spread = np.asarray(spread)
    span = spread[0] - spread[-1]
    if len(ks) < 3 or span <= 0:
        return 2
    gain = (spread[0] - spread) / span - (ks - 1) / (ks[-1] - 1)     # above the straight line
    return int(max(2, ks[int(np.argmax(gain))]))


@one_thread
def cluster_texts(texts, vectors, k: int | None = None, *, seed: int = 0, progress=None,
                  should_stop=None) -> Clusters:
    """Cluster the texts by their `vectors` into `k` clusters (None: `choose_k`), the
    largest first, each named by its `typical_words`.

    Raises
    ------
    Cancelled
        When `should_stop()` returned True between stages (reducing, choosing k, clustering, naming).
    """
    from sklearn.cluster import KMeans, MiniBatchKMeans

    say = progress or (lambda done, total, message: None)
    x = np.asarray(vectors, dtype=np.float32)
    n = len(x)
    if n < 3:
        labels = np.zeros(n, dtype=np.int64)
        return Clusters(labels, typical_words(texts, labels, 1) if n else [[]], np.array([n]), False)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    reduced, _ = principal_components(x / np.where(norms > 0, norms, 1), min(CLUSTER_DIMS, x.shape[1]))
    stop_if_asked(should_stop)
    chosen = k is None
    if chosen:
        say(0, 3, "choosing the number of clusters")
        k = choose_k(reduced, seed=seed, should_stop=should_stop)
    k = int(min(max(k, 1), n))
    say(1, 3, f"grouping {n:,} texts in {k} clusters")
    model = (MiniBatchKMeans(k, batch_size=4096, n_init=3, random_state=seed) if n >= MINI_BATCH_FROM
             else KMeans(k, n_init=3, random_state=seed))
    found = model.fit_predict(reduced)
    stop_if_asked(should_stop)
    sizes = np.bincount(found, minlength=k)
    order = np.argsort(-sizes, kind="stable")                  # cluster 1 is the largest
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k)
    labels = rank[found]
    say(2, 3, "naming the clusters by their typical words")
    words = typical_words(texts, labels, k)
    stop_if_asked(should_stop)
    return Clusters(labels, words, sizes[order], chosen)
