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
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.knn import BLOCK_BYTES, ApproximateIndex, choose_method, index_bytes, top_hits
from calibsim_gui.core.geometry.metrics import get_metrics
from calibsim_gui.core.io.memory import WORKING_BYTES, check_budget
from calibsim_gui.core.progress import progress_stage

if TYPE_CHECKING:
    import pandas as pd

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



def search_run_bytes(n_queries: int, n_docs: int, dim: int, top_k: int, method: str = "exact") -> int:
    """Peak estimate for a search: float32 vectors of corpus and queries with their
    geometry-fixed float64 copies, one block of the score matrix (`knn.BLOCK_BYTES`, its
    temporaries included: measured 9.5 x 64 MB over 20,000 documents, benchmarks/search_scale.py),
    the approximate index where there is one, and the hits table."""
    vectors = (n_queries + n_docs) * dim * (4 + 8)
    index = index_bytes(n_docs, dim) if method == "approximate" else 0
    return int(vectors + BLOCK_BYTES + index + n_queries * top_k * 8 * 16 + WORKING_BYTES)


def search(queries, corpus, embedder, profile, *, metric: str = "cosine", top_k: int = 10,
           geometry: str = "none", cache=None, batch_size: int | None = None, progress=None,
           should_stop=None, memory_budget: int | None = None, method: str = "auto") -> SearchHits:
    """Rank the documents of `corpus` for every query of `queries` (both `DocumentSet`s).

    Columns: ``query_id, query, rank, doc_id, document``, then ``<metric>_raw``, each calibrated
    form of the profile, ``<metric>_query_zscore`` (the score's z-score among the query's own
    scores against the profile's background texts: ``(s - mean_q) / sd_q``, query side only;
    needs a background sample) and ``<metric>_local_minmax`` (0 = this query's least similar
    document of the corpus, 1 = its most similar: local to one query, not comparable across
    queries or corpora). `method`: how hits are found (`calibsim_gui.core.geometry.knn`): "exact"
    row blocks, an "approximate" index, or "auto" (approximate only where exact blocks are slow).
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
    chosen = choose_method(method, n_q, n_docs, metric)
    check_budget(search_run_bytes(n_q, n_docs, embedder.dimension, k, chosen), memory_budget,
                 what=f"searching {n_docs:,} documents for {n_q:,} queries",
                 fix="search fewer queries or a smaller corpus at a time, or lower --top-k")

    docs = encode_texts(embedder, corpus.texts, batch_size=batch_size, cache=cache,
                        progress=progress_stage(progress, "corpus", 0.7, 0.0), should_stop=should_stop,
                        prompt=str(getattr(embedder, "document_prompt", "") or ""))
    asked = encode_texts(embedder, queries.texts, batch_size=batch_size, cache=cache,
                         progress=progress_stage(progress, "queries", 0.1, 0.7), should_stop=should_stop,
                         prompt=str(getattr(embedder, "query_prompt", "") or ""))
    doc_vectors = profile.transformed(docs.embeddings, geometry)
    query_vectors = profile.transformed(asked.embeddings, geometry)
    ranking = progress_stage(progress, "ranking", 0.2, 0.8)
    if chosen == "exact":
        hits, raw, lowest, highest = top_hits(query_vectors, doc_vectors, metric, k,
                                              progress=ranking, should_stop=should_stop)
        index = {"method": "exact"}
    else:
        built = ApproximateIndex(doc_vectors, metric, should_stop=should_stop)
        hits, raw = built.search(query_vectors, k, progress=ranking, should_stop=should_stop)
        # each query's lowest and (float64, as its hits') highest score over the whole corpus
        _, _, lowest, highest = top_hits(query_vectors, doc_vectors, metric, 1, should_stop=should_stop)
        index = {"method": "approximate", **built.settings.to_dict()}
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
    found = hits.ravel() >= 0                     # an approximate index may find fewer than k
    query_rows = np.repeat(np.arange(n_q), k)[found]
    frame = pd.DataFrame({
        "query_id": np.asarray(queries.ids, dtype=object)[query_rows],
        "query": np.asarray(queries.texts, dtype=object)[query_rows],
        "rank": np.tile(np.arange(1, k + 1), n_q)[found],
        "doc_id": np.asarray(corpus.ids, dtype=object)[hits.ravel()[found]],
        "document": np.asarray(corpus.texts, dtype=object)[hits.ravel()[found]],
        **{name: values[found] for name, values in columns.items()},
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
    provenance["search"] = {"metric": metric, "geometry": geometry, "top_k": k, **index,
                            "queries": {"files": [str(f) for f in queries.files], "count": n_q},
                            "corpus": {"files": [str(f) for f in corpus.files], "count": n_docs}}
    provenance["notes"] = notes
    return SearchHits(frame, provenance, notes)
