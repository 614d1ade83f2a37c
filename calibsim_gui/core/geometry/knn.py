"""Top-k neighbours in bounded memory: exact row blocks of the score matrix, or an approximate
graph index (faiss HNSW) for corpora where the exact blocks take too long.

Both ways return each query's hits best first with the metric's raw scores recomputed in float64
for exactly those pairs (`pair_scores`), so a score never depends on the way its hit was found.
`queries` may be rows of `corpus` itself: `exclude` names the corpus row each query must not
find (its own), which is how a document set's neighbours leave each text out of its own list.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import numpy as np

from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.geometry.metrics import Metric, Rows, get_metrics, pair_scores

BLOCK_BYTES = 640_000_000      # what one block of the score matrix holds at once, temporaries included
SCORE_BYTES = 40               # bytes held per score of a block (float64 scores, their negation, indices)
MIN_BLOCK_BYTES = 4_000_000
CHUNK = 64                     # columns whose maximum screens them before the exact top-k
# CPU seconds, measured at 384 dimensions on 2 cores (benchmarks/corpus_scale.py, real sentence
# vectors): exact top-k per query-corpus pair (matrix product and selection), and the graph index
# per text (built, then searched once; at 100 k texts)
EXACT_PAIR_CPU_S = 2.9e-8
INDEX_TEXT_CPU_S = 6e-4
EXACT_CPU_S = 60               # method "auto" stays exact while that takes at most this long
APPROXIMATE_METRICS = ("cosine", "angular", "dot", "euclidean")   # orders faiss can rank by
METHODS = ("auto", "exact", "approximate")
ADD_ROWS = 50_000               # vectors added to an index at a time (a Cancel is heard between)
DENSER_FROM = 250_000           # an index of more texts is built with more candidates (IndexSettings.for_size)
SEARCH_ROWS = 1024              # queries searched at a time: their hits' float64 rescoring is ~70 MB


def block_rows(n_corpus: int, block_bytes: int = BLOCK_BYTES) -> int:
    """Query rows per block so that a block's scores and their temporaries stay in `block_bytes`."""
    return max(1, int(block_bytes) // (SCORE_BYTES * max(n_corpus, 1)))


def neighbour_count(k: int, n_corpus: int, exclude) -> int:
    """`k`, or fewer when the corpus (less each query's own row) has fewer rows."""
    return max(0, min(k, n_corpus - (exclude is not None)))


def _top_columns(similarity: np.ndarray, k: int) -> np.ndarray:
    """Columns of each row's `k` largest values, unordered: the `k` chunks of `CHUNK` columns with
    the largest maxima hold them, so only those chunks are ranked (6x faster than a full
    argpartition at 20,000 columns)."""
    rows, n = similarity.shape
    whole = n // CHUNK * CHUNK
    if k >= n or whole < 4 * k * CHUNK:
        return np.argpartition(-similarity, k - 1, axis=1)[:, :k] if k < n else \
            np.broadcast_to(np.arange(n), (rows, n))
    maxima = similarity[:, :whole].reshape(rows, -1, CHUNK).max(axis=2)
    chunks = np.argpartition(-maxima, k - 1, axis=1)[:, :k]
    columns = (chunks[:, :, None] * CHUNK + np.arange(CHUNK)).reshape(rows, -1)
    if whole < n:
        columns = np.concatenate([columns, np.broadcast_to(np.arange(whole, n), (rows, n - whole))], axis=1)
    candidates = np.take_along_axis(similarity, columns, axis=1)
    best = np.argpartition(-candidates, k - 1, axis=1)[:, :k]
    return np.take_along_axis(columns, best, axis=1)


def rank_hits(queries, corpus, metric: Metric, hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`hits` (corpus rows, -1 for none) of each query re-scored in float64 and sorted best first
    (ties: lower row first; missing hits last). Returns (hits, raw)."""
    n_q, k = hits.shape
    raw = np.full((n_q, k), np.nan)
    found = hits >= 0
    rows, columns = np.nonzero(found)
    raw[rows, columns] = pair_scores(queries[rows], corpus[hits[rows, columns]], [metric.name])[metric.name]
    return best_first(hits, raw, metric)


def best_first(hits: np.ndarray, raw: np.ndarray, metric: Metric, k: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Each row's hits and raw scores sorted best first (ties: lower row first; missing hits,
    -1, last), the first `k` kept (None: all)."""
    found = hits >= 0
    similarity = np.where(found, metric.as_similarity(raw), -np.inf)
    order = np.lexsort((np.where(found, hits, np.iinfo(np.int64).max), -similarity), axis=1)[:, :k]
    return np.take_along_axis(hits, order, axis=1), np.take_along_axis(raw, order, axis=1)


def top_hits(queries: np.ndarray, corpus: np.ndarray, metric: str, k: int, *, exclude=None,
             block_bytes: int = BLOCK_BYTES, ranges: bool = True, progress=None, should_stop=None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each query's `k` most similar corpus rows, exactly, in row blocks of `block_bytes`.

    Parameters
    ----------
    queries : ndarray of shape (n_queries, dim)
    corpus : ndarray of shape (n_docs, dim), or its `Rows`
        A `Rows` kept from one call to the next (a corpus searched by typed queries) has its
        unit vectors computed once, not on every call.
    exclude : ndarray of int of shape (n_queries,), optional
        The corpus row each query must not find (its own row; -1: none).

    Returns
    -------
    hits : ndarray of int of shape (n_queries, neighbour_count(k, n_docs, exclude)), best first
        (ties: lower row first)
    raw : ndarray of shape like `hits`, the metric's raw scores of those hits (float64)
    lowest, highest : ndarray of shape (n_queries,), each query's least and most similar score
        over the whole corpus (its excluded row left out), in the "higher = more similar" view;
        NaN with ``ranges=False`` (a pass over each block saved)
    """
    metric_ = get_metrics([metric])[0]
    reference = corpus if isinstance(corpus, Rows) else Rows(corpus)
    corpus = reference.x
    k = neighbour_count(k, len(corpus), exclude)
    rows = block_rows(len(corpus), block_bytes)
    hits = np.empty((len(queries), k), dtype=np.int64)
    raw = np.empty((len(queries), k))
    lowest, highest = np.full(len(queries), np.nan), np.full(len(queries), np.nan)
    exclude = None if exclude is None else np.asarray(exclude)
    for start in range(0, len(queries), rows):
        if should_stop is not None and should_stop():
            raise Cancelled(f"stopped after {start:,} of {len(queries):,} rows")
        block = slice(start, start + rows)
        scores = metric_.matrix(queries[block], reference)
        similarity = scores if metric_.higher_is_similar else np.negative(scores, out=scores)
        own = np.empty(0, dtype=np.int64) if exclude is None else np.nonzero(exclude[block] >= 0)[0]
        own_column = own if exclude is None else exclude[block][own]
        if ranges:
            similarity[own, own_column] = np.inf
            lowest[block] = similarity.min(axis=1)
        similarity[own, own_column] = -np.inf
        if ranges:
            highest[block] = similarity.max(axis=1)
        del scores
        if k:
            hits[block], raw[block] = rank_hits(queries[block], corpus, metric_,
                                                _top_columns(similarity, k))
            if ranges:
                highest[block] = metric_.as_similarity(raw[block, 0])     # the best, in float64
        del similarity
        if progress is not None:
            done = min(start + rows, len(queries))
            progress(done, len(queries), f"ranked {done:,} of {len(queries):,}")
    return hits, raw, lowest, highest


@dataclass(frozen=True)
class IndexSettings:
    """A graph index's settings (HNSW): `links` per text, the candidate lists kept while the graph
    is built (`build_candidates`) and while it is searched (`search_candidates`)."""

    links: int = 16
    build_candidates: int = 40
    search_candidates: int = 128

    @classmethod
    def for_size(cls, n_corpus: int, k: int = 10) -> "IndexSettings":
        """The settings for an index of `n_corpus` texts: 40 build candidates up to `DENSER_FROM`
        texts, 80 above (a graph's recall falls as it grows), and 128 search candidates, at least
        4·k. Measured (benchmarks/knn_recall.py, 16 links, real sentence vectors and mixes of them,
        1,000 rows against exact): at 100 k, 40 / 128 found 0.989; at 1 M, 40 / 128 0.942 and
        40 / 256 0.957 (build 109 CPU-s, searching every text 643), but 80 / 128 0.992 (build
        169, search 327): a denser graph pays more than a wider search."""
        return cls(build_candidates=80 if n_corpus > DENSER_FROM else 40, search_candidates=max(128, 4 * k))

    def to_dict(self) -> dict:
        return {"kind": "faiss IndexHNSWFlat", "links": self.links,
                "build_candidates": self.build_candidates, "search_candidates": self.search_candidates}


def index_bytes(n_corpus: int, dim: int, settings: IndexSettings = IndexSettings()) -> int:
    """A graph index's own float32 copy of the vectors and its links (2 x `links` on the ground
    level, a few more above), and one block of unit vectors being added."""
    return int(n_corpus * (4 * dim + 4 * 2.2 * settings.links + 16) + ADD_ROWS * dim * 8)


def _faiss_view(vectors, metric: str) -> np.ndarray:
    """Vectors as faiss ranks them for `metric`: unit vectors for cosine and angular, float32."""
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if metric in ("cosine", "angular"):
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        x = x / np.where(norms == 0, 1.0, norms)
    return x


class ApproximateIndex:
    """A faiss HNSW graph over `corpus` for `metric` (one of `APPROXIMATE_METRICS`), built once
    and searched as often as needed (a typed query: a millisecond at 1 M texts).

    The graph is built on all cores, so which near-tie neighbours it finds can differ slightly
    from run to run; the scores of what it finds never do (`rank_hits`).
    """

    def __init__(self, corpus: np.ndarray, metric: str, *, settings: IndexSettings | None = None,
                 progress=None, should_stop=None):
        import faiss

        if metric not in APPROXIMATE_METRICS:
            raise InputError(f"the approximate index ranks by {', '.join(APPROXIMATE_METRICS)}, not {metric}.",
                             fix="use the exact method (--method exact) or another --metric")
        self.metric, self.corpus = metric, corpus
        self.settings = settings or IndexSettings.for_size(len(corpus))
        kind = faiss.METRIC_L2 if metric == "euclidean" else faiss.METRIC_INNER_PRODUCT
        self.index = faiss.IndexHNSWFlat(corpus.shape[1], self.settings.links, kind)
        self.index.hnsw.efConstruction = self.settings.build_candidates
        for start in range(0, len(corpus), ADD_ROWS):
            if should_stop is not None and should_stop():
                raise Cancelled(f"indexing stopped after {start:,} of {len(corpus):,} vectors")
            self.index.add(_faiss_view(corpus[start:start + ADD_ROWS], metric))
            if progress is not None:
                done = min(start + ADD_ROWS, len(corpus))
                progress(done, len(corpus), f"indexed {done:,} of {len(corpus):,}")
        self.index.hnsw.efSearch = self.settings.search_candidates

    def search(self, queries: np.ndarray, k: int, *, exclude=None, progress=None, should_stop=None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Each query's `k` approximate best corpus rows, best first, and their float64 raw scores."""
        k = neighbour_count(k, len(self.corpus), exclude)
        extra = exclude is not None
        hits = np.empty((len(queries), k), dtype=np.int64)
        raw = np.empty((len(queries), k))
        metric_ = get_metrics([self.metric])[0]
        self.index.hnsw.efSearch = max(self.settings.search_candidates, 2 * (k + extra))
        step = SEARCH_ROWS
        for start in range(0, len(queries), step):
            if should_stop is not None and should_stop():
                raise Cancelled(f"stopped after {start:,} of {len(queries):,} rows")
            block = slice(start, start + step)
            _, found = self.index.search(_faiss_view(queries[block], self.metric), k + extra)
            if extra:
                own = found == np.asarray(exclude[block])[:, None]
                own[~own.any(axis=1), -1] = True          # not found itself: drop its last hit
                found = found[~own].reshape(len(found), k)
            hits[block], raw[block] = rank_hits(queries[block], self.corpus, metric_, found)
            if progress is not None:
                done = min(start + step, len(queries))
                progress(done, len(queries), f"searched {done:,} of {len(queries):,}")
        return hits, raw


def choose_method(method: str, n_queries: int, n_corpus: int, metric: str) -> str:
    """"exact" or "approximate" for `method`. "auto" is exact while that takes at most
    `EXACT_CPU_S` or less than building and searching an index (about 45,000 texts for a set's
    neighbours; 100 queries stay exact over millions of texts), or the metric has no index."""
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}.", fix=f"choose from {', '.join(METHODS)}")
    if method == "approximate" and metric not in APPROXIMATE_METRICS:
        raise InputError(f"the approximate index ranks by {', '.join(APPROXIMATE_METRICS)}, not {metric}.",
                         fix="use the exact method or another metric")
    if method == "approximate" and not index_available():
        raise InputError("the approximate index needs faiss, which this installation does not have "
                         "(the desktop bundle leaves it out to stay small).",
                         fix="use the exact method, or `pip install faiss-cpu` in a developer install")
    if method != "auto":
        return method
    exact = n_queries * n_corpus * EXACT_PAIR_CPU_S
    indexed = (n_corpus + n_queries) * INDEX_TEXT_CPU_S / 2
    return ("approximate" if exact > max(EXACT_CPU_S, indexed) and metric in APPROXIMATE_METRICS
            and index_available() else "exact")


def index_available() -> bool:
    """Whether faiss (the approximate index) is installed: the developer install has it; the
    desktop bundle leaves it out (about 66 MB) and computes neighbours exactly."""
    return importlib.util.find_spec("faiss") is not None


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    """Share of the exact top-k rows (-1: none) that `found` also holds, over all queries."""
    hit = sum(len(np.intersect1d(f[f >= 0], e[e >= 0])) for f, e in zip(found, exact))
    total = int((exact >= 0).sum())
    return hit / total if total else 1.0
