"""Search: each query against a corpus, its best hits ranked with raw and calibrated scores.

Queries and documents are encoded once each (the query prompt on the query side only, the
document prompt on the corpus side), then the query x corpus scores are computed in row blocks
of bounded size, keeping each query's top hits and its min/max over the whole corpus.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from calibsim_gui.core.analysis.pairs import run_provenance
from calibsim_gui.core.calibration.query_scale import reference_stats
from calibsim_gui.core.embedding.encoding import EncodingResult, encode_texts
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import Cancelled, InputError
from calibsim_gui.core.geometry.metrics import get_metrics
from calibsim_gui.core.io.memory import WORKING_BYTES, check_budget

if TYPE_CHECKING:
    import pandas as pd

BLOCK_BYTES = 64_000_000      # one block of the query x corpus score matrix, float32
QUERY_ZSCORE = ("standard deviations above the query's mean similarity to the profile's background "
                "texts, (s - mean_q) / sd_q, query side only (higher = more similar)")
LOCAL_MINMAX = ("0 = this query's least similar document of the corpus, 1 = its most similar; local "
                "to one query and one corpus, NOT comparable across them (higher = more similar)")


@dataclass
class SearchHits:
    """Ranked hits: one row per (query, hit), best first within each query."""

    frame: pd.DataFrame
    provenance: dict
    notes: list[str] = field(default_factory=list)



def search_run_bytes(n_queries: int, n_docs: int, dim: int, top_k: int) -> int:
    """Peak estimate for a search: float32 vectors of corpus and queries with their
    geometry-fixed float64 copies, one block of the score matrix, and the hits table.

    A block's rows are sized for float32 scores but the scores are float64 (2 x BLOCK_BYTES), and
    the ranking holds about five arrays of that size at once (scores, their negation, the
    partition's indices and its copies): measured 9.5 x BLOCK_BYTES over 20,000 documents
    (benchmarks/search_scale.py)."""
    vectors = (n_queries + n_docs) * dim * (4 + 8)
    return int(vectors + 10 * BLOCK_BYTES + n_queries * top_k * 8 * 16 + WORKING_BYTES)

def top_hits(queries: np.ndarray, corpus: np.ndarray, metric: str, k: int, *, progress=None,
             should_stop=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each query's `k` most similar corpus rows.

    Parameters
    ----------
    queries : ndarray of shape (n_queries, dim)
    corpus : ndarray of shape (n_docs, dim)

    Returns
    -------
    hits : ndarray of int of shape (n_queries, min(k, n_docs)), best first (ties: lower row first)
    raw : ndarray of shape like `hits`, the metric's raw scores of those hits
    lowest, highest : ndarray of shape (n_queries,), each query's least and most similar score
        over the whole corpus, in the "higher = more similar" view
    """
    metric_ = get_metrics([metric])[0]
    k = min(k, len(corpus))
    rows = max(1, BLOCK_BYTES // (4 * max(len(corpus), 1)))
    hits = np.empty((len(queries), k), dtype=np.int64)
    raw = np.empty((len(queries), k))
    lowest, highest = np.empty(len(queries)), np.empty(len(queries))
    for start in range(0, len(queries), rows):
        if should_stop is not None and should_stop():
            raise Cancelled(f"search stopped after {start} of {len(queries)} queries")
        block = slice(start, start + rows)
        scores = metric_.matrix(queries[block], corpus)
        similarity = metric_.as_similarity(scores)
        best = np.argpartition(-similarity, k - 1, axis=1)[:, :k] if k < len(corpus) else \
            np.broadcast_to(np.arange(len(corpus)), (len(similarity), len(corpus)))
        order = np.lexsort((best, -np.take_along_axis(similarity, best, axis=1)), axis=1)
        hits[block] = np.take_along_axis(best, order, axis=1)
        raw[block] = np.take_along_axis(scores, hits[block], axis=1)
        lowest[block], highest[block] = similarity.min(axis=1), similarity.max(axis=1)
        if progress is not None:
            done = min(start + rows, len(queries))
            progress(done, len(queries), f"searched {done} of {len(queries)} queries")
    return hits, raw, lowest, highest


def search(queries, corpus, embedder, profile, *, metric: str = "cosine", top_k: int = 10,
           geometry: str = "none", cache=None, batch_size: int = 64, progress=None,
           should_stop=None, memory_budget: int | None = None) -> SearchHits:
    """Rank the documents of `corpus` for every query of `queries` (both `DocumentSet`s).

    Columns: ``query_id, query, rank, doc_id, document``, then ``<metric>_raw``, each calibrated
    form of the profile, ``<metric>_query_zscore`` (the score's z-score among the query's own
    scores against the profile's background texts: ``(s - mean_q) / sd_q``, query side only;
    needs a background sample) and ``<metric>_local_minmax`` (0 = this query's least similar
    document of the corpus, 1 = its most similar: local to one query, not comparable across
    queries or corpora).
    """
    import pandas as pd

    if top_k < 1:
        raise InputError(f"top-k must be at least 1, not {top_k}.", fix="ask for 1 or more hits")
    profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
    references = profile.references(geometry)
    if metric not in references:
        raise InputError(f"geometry {geometry!r} has references only for {', '.join(references)}.",
                         fix=f"choose --metric {next(iter(references))}")
    n_q, n_docs = len(queries.texts), len(corpus.texts)
    k = min(top_k, n_docs)
    check_budget(search_run_bytes(n_q, n_docs, embedder.dimension, k), memory_budget,
                 what=f"searching {n_docs:,} documents for {n_q:,} queries",
                 fix="search fewer queries or a smaller corpus at a time, or lower --top-k")

    def stage(name, share, offset):
        if progress is None:
            return None
        return lambda done, total, message: progress(offset + share * done / max(total, 1), 1.0,
                                                     f"{name}: {message}")

    docs = encode_texts(embedder, corpus.texts, batch_size=batch_size, cache=cache,
                        progress=stage("corpus", 0.7, 0.0), should_stop=should_stop,
                        prompt=str(getattr(embedder, "document_prompt", "") or ""))
    asked = encode_texts(embedder, queries.texts, batch_size=batch_size, cache=cache,
                         progress=stage("queries", 0.1, 0.7), should_stop=should_stop,
                         prompt=str(getattr(embedder, "query_prompt", "") or ""))
    doc_vectors = profile.transformed(docs.embeddings, geometry)
    query_vectors = profile.transformed(asked.embeddings, geometry)
    hits, raw, lowest, highest = top_hits(query_vectors, doc_vectors, metric, k,
                                          progress=stage("ranking", 0.2, 0.8),
                                          should_stop=should_stop)
    metric_ = get_metrics([metric])[0]
    similarity = metric_.as_similarity(raw)
    columns = {f"{metric}_raw": raw.ravel()}
    for form, values in profile.calibrate(metric, raw.ravel(), geometry).items():
        columns[f"{metric}_{form}"] = values
    if profile.query_reference is not None:
        mean, sd = reference_stats(metric, query_vectors,
                                   profile.transformed(profile.query_reference, geometry))
        with np.errstate(divide="ignore", invalid="ignore"):
            columns[f"{metric}_query_zscore"] = ((similarity - mean[:, None]) / sd[:, None]).ravel()
    span = highest - lowest
    with np.errstate(divide="ignore", invalid="ignore"):
        local = np.where(span[:, None] > 0, (similarity - lowest[:, None]) / span[:, None], 1.0)
    columns[f"{metric}_local_minmax"] = local.ravel()
    query_rows = np.repeat(np.arange(n_q), k)
    frame = pd.DataFrame({
        "query_id": np.asarray(queries.ids, dtype=object)[query_rows],
        "query": np.asarray(queries.texts, dtype=object)[query_rows],
        "rank": np.tile(np.arange(1, k + 1), n_q),
        "doc_id": np.asarray(corpus.ids, dtype=object)[hits.ravel()],
        "document": np.asarray(corpus.texts, dtype=object)[hits.ravel()],
        **columns,
    })
    notes = list(queries.notes) + list(corpus.notes)
    truncated = docs.n_truncated + asked.n_truncated
    if truncated:
        notes.append(f"{truncated} texts are longer than the model's max length "
                     f"({embedder.max_seq_length} tokens); only their beginning was scored")
    notes.append(f"{metric}_local_minmax is local to each query: {LOCAL_MINMAX.split('; ')[1]}")
    encoding = EncodingResult(np.empty((0, embedder.dimension)), docs.n_unique + asked.n_unique,
                              docs.n_cached + asked.n_cached, truncated)
    provenance = run_provenance(embedder, profile, encoding, (geometry,))
    provenance["columns"]["local_minmax"] = LOCAL_MINMAX
    if f"{metric}_query_zscore" in columns:
        provenance["columns"]["query_zscore"] = QUERY_ZSCORE
    provenance["search"] = {"metric": metric, "geometry": geometry, "top_k": k,
                            "queries": {"files": [str(f) for f in queries.files], "count": n_q},
                            "corpus": {"files": [str(f) for f in corpus.files], "count": n_docs}}
    provenance["notes"] = notes
    return SearchHits(frame, provenance, notes)
