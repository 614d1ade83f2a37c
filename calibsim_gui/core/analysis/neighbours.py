"""A document set by its neighbours: each text's top-k most similar texts, the most similar pairs
across the set (near-duplicates) and duplicate groups, never an N x N matrix.

The texts are encoded once; their neighbours come from `calibsim_gui.core.geometry.knn` (exact row
blocks, or an approximate index for large sets) inside the memory budget, and every score is
calibrated as `score_matrix` and `score_pairs` calibrate theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from calibsim_gui.core.analysis.pairs import agreement_band_columns, run_provenance, score_column
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS, ReferenceProfile
from calibsim_gui.core.embedding.devices import embedder_precision
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.languages import run_languages
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.knn import (
    BLOCK_BYTES,
    MIN_BLOCK_BYTES,
    ApproximateIndex,
    choose_method,
    index_bytes,
    top_hits,
)
from calibsim_gui.core.geometry.metrics import get_metrics
from calibsim_gui.core.io.memory import WORKING_BYTES, check_budget, default_budget
from calibsim_gui.core.progress import progress_stage

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_K = 10
DEFAULT_DUPLICATE_THRESHOLD = 0.9       # calibrated score at and above which two texts are duplicates
MAX_PAIRS = 10_000                      # most similar pairs kept in `pairs` (None: every pair of the graph)
ROW_BYTES = 8                           # bytes per cell of the output tables (numbers, text references)
TEXT_CELLS = 5                          # doc_id, document, rank, neighbour_id, neighbour
# per edge of the neighbour graph while its tables are built: its hits and raw scores (16), the
# big table's arguments (~50), the calibrated forms' temporaries (~110: the percentile form's
# interpolation) and what the pairs and groups keep (~40); measured, tracemalloc, at 30 k texts
EDGE_TEMP_BYTES = 216


@dataclass
class DocumentNeighbours:
    """A document set's neighbours, most similar pairs and duplicate groups.

    Attributes
    ----------
    ids, texts : list of str
        The documents, in the order of `vectors`' rows.
    vectors : ndarray of shape (n_docs, dim)
        The embeddings (under `geometry`), for a map.
    hits : ndarray of int of shape (n_docs, k)
        Each document's neighbours' rows, best first (-1: none found).
    neighbours : DataFrame
        ``doc_id, document, rank, neighbour_id, neighbour, <metric>_raw``, each calibrated form
        of the profile and, where it has one, the human agreement band.
    pairs : DataFrame
        ``doc_id, document, neighbour_id, neighbour`` and the same score columns: distinct
        unordered pairs of the neighbour graph, most similar first.
    groups : DataFrame
        ``group, size, doc_id, document``: one row per member of each duplicate group (connected
        texts whose calibrated score is at or above the threshold), largest group first.
    """

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray
    hits: np.ndarray
    neighbours: pd.DataFrame
    pairs: pd.DataFrame
    groups: pd.DataFrame
    provenance: dict
    notes: list[str] = field(default_factory=list)
    metric: str = "cosine"
    geometry: str = "none"


def neighbours_run_bytes(n_docs: int, dim: int, k: int, n_scores: int, *, method: str = "exact",
                         geometry: str = "none", max_pairs: int | None = MAX_PAIRS) -> int:
    """Peak estimate of `document_neighbours` without its score blocks: the vectors held once
    (float32, and the float64 copy a geometry fix makes), then the larger of its two phases:
    finding the hits (the approximate index) and building the tables from them (per edge of the
    n·k graph: the neighbours table's `TEXT_CELLS` and `n_scores` score cells and `EDGE_TEMP_BYTES`
    while it is built; then the listed pairs and the groups)."""
    vectors = n_docs * dim * (4 + (8 if geometry != "none" else 0))
    edges = n_docs * k
    n_pairs = edges if max_pairs is None else min(edges, max_pairs)
    find = index_bytes(n_docs, dim) + edges * 16 if method == "approximate" else 0
    build = edges * (ROW_BYTES * (TEXT_CELLS + n_scores) + EDGE_TEMP_BYTES) \
        + (n_pairs + n_docs) * ROW_BYTES * (TEXT_CELLS + n_scores)
    return int(vectors + max(find, build) + WORKING_BYTES)


def block_budget(fixed: int, memory_budget: int | None) -> int:
    """Bytes left for one block of scores: the budget less the run's `fixed` bytes, at most
    `BLOCK_BYTES` (and at least `MIN_BLOCK_BYTES`, which the budget check then refuses)."""
    budget = default_budget() if memory_budget is None else memory_budget
    return int(min(BLOCK_BYTES, max(MIN_BLOCK_BYTES, budget - fixed)))


def _score_columns(profile, metric, geometry, raw) -> dict[str, np.ndarray]:
    """``<metric>_raw``, each calibrated form and the agreement band of `raw` scores."""
    columns = {score_column(metric, "raw", geometry): raw}
    forms = profile.calibrate(metric, raw, geometry)
    for form, values in forms.items():
        columns[score_column(metric, form, geometry)] = values
    band = profile.references(geometry)[metric].band
    for form, values in agreement_band_columns(band, forms["calibrated"]).items():
        columns[score_column(metric, form, geometry)] = values
    return columns


def distinct_pairs(hits: np.ndarray, raw: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The unordered pairs (first < second) of the neighbour graph `hits`, each once, most similar
    first (ties: lower rows first). Returns (first, second, raw)."""
    rows = np.repeat(np.arange(len(hits)), hits.shape[1])
    cols, scores = hits.ravel(), raw.ravel()
    found = cols >= 0
    first, second = np.minimum(rows, cols)[found], np.maximum(rows, cols)[found]
    scores = scores[found]
    key = first.astype(np.int64) * max(len(hits), 1) + second
    key, at = np.unique(key, return_index=True)
    first, second, scores = first[at], second[at], scores[at]
    order = np.lexsort((second, first, -get_metrics([metric])[0].as_similarity(scores)))
    return first[order], second[order], scores[order]


def duplicate_groups(first: np.ndarray, second: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """Connected components of the pairs (`first`, `second`): (member rows, group number of each),
    groups numbered 1, 2, ... largest first (ties: lowest first member), members in row order."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if len(first) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    graph = coo_matrix((np.ones(len(first), dtype=np.int8), (first, second)), shape=(n_docs, n_docs))
    _, labels = connected_components(graph, directed=False)
    members = np.unique(np.concatenate([first, second]))
    labels = labels[members]
    sizes = np.bincount(labels)
    starts = np.full(len(sizes), n_docs)
    np.minimum.at(starts, labels, members)
    used = np.unique(labels)
    ranked = used[np.lexsort((starts[used], -sizes[used]))]
    number = np.empty(len(sizes), dtype=np.int64)
    number[ranked] = np.arange(1, len(ranked) + 1)
    order = np.lexsort((members, number[labels]))
    return members[order], number[labels][order]


def plan_neighbours(n_docs: int, dim: int, profile: ReferenceProfile, *, k: int = DEFAULT_K,
                    metric: str = "cosine", geometry: str = "none", method: str = "auto",
                    max_pairs: int | None = MAX_PAIRS, memory_budget: int | None = None
                    ) -> tuple[str, int, int]:
    """Check a neighbours run before any work: its options, and its memory against the budget.
    Returns (method, k, block bytes): "exact" or "approximate", `k` less where the set is
    smaller, and the bytes of one score block (0 for the approximate index)."""
    if k < 1:
        raise InputError(f"k must be at least 1, not {k}.", fix="ask for 1 or more neighbours")
    references = profile.references(geometry)
    if metric not in references:
        raise InputError(f"geometry {geometry!r} has references only for {', '.join(references)}, "
                         f"not {metric}.", fix=f"choose --metric {next(iter(references))}")
    if n_docs < 2:
        raise InputError(f"a document set needs at least 2 documents for neighbours, not {n_docs}.",
                         fix="add documents (one per line, or --per-file)")
    chosen = choose_method(method, n_docs, n_docs, metric)
    k = min(k, n_docs - 1)
    n_scores = 1 + len(profile.forms()) + (4 if references[metric].band is not None else 0)
    fixed = neighbours_run_bytes(n_docs, dim, k, n_scores, method=chosen, geometry=geometry,
                                 max_pairs=max_pairs)
    block = block_budget(fixed, memory_budget) if chosen == "exact" else 0
    check_budget(fixed + block, memory_budget,
                 what=f"the {k} nearest neighbours of {n_docs:,} documents ({chosen})",
                 fix="lower --k, keep fewer pairs (--max-pairs)"
                     + (", use --method approximate" if chosen == "exact" else "")
                     + " or split the set")
    return chosen, k, block


def vector_neighbours(vectors: np.ndarray, ids, texts, profile: ReferenceProfile, *, k: int = DEFAULT_K,
                      metric: str = "cosine", geometry: str = "none",
                      duplicate_threshold: float | None = DEFAULT_DUPLICATE_THRESHOLD,
                      max_pairs: int | None = MAX_PAIRS, method: str = "auto",
                      memory_budget: int | None = None, progress=None, should_stop=None
                      ) -> DocumentNeighbours:
    """`document_neighbours` of texts already encoded: `vectors` (under `geometry`, one row per
    id and text), e.g. the vectors of a map. Its provenance holds ``neighbours`` only."""
    import pandas as pd

    n_docs = len(vectors)
    chosen, k, block = plan_neighbours(n_docs, vectors.shape[1], profile, k=k, metric=metric,
                                       geometry=geometry, method=method, max_pairs=max_pairs,
                                       memory_budget=memory_budget)
    rows = np.arange(n_docs)
    if chosen == "exact":
        hits, raw, _, _ = top_hits(vectors, vectors, metric, k, exclude=rows, block_bytes=block,
                                   ranges=False, progress=progress, should_stop=should_stop)
        index = {"method": "exact", "block_bytes": block}
    else:
        built = ApproximateIndex(vectors, metric, should_stop=should_stop)
        hits, raw = built.search(vectors, k, exclude=rows, progress=progress, should_stop=should_stop)
        index = {"method": "approximate", **built.settings.to_dict()}
        del built
    found = (hits >= 0).ravel()
    id_array, text_array = np.asarray(ids, dtype=object), np.asarray(texts, dtype=object)

    def table(first, second, scores, **extra):
        return pd.DataFrame({"doc_id": id_array[first], "document": text_array[first], **extra,
                             "neighbour_id": id_array[second], "neighbour": text_array[second],
                             **_score_columns(profile, metric, geometry, scores)}, copy=False)

    first, second, pair_raw = distinct_pairs(hits, raw, metric)     # its temporaries before the big table
    groups = pd.DataFrame({"group": pd.Series(dtype=np.int64), "size": pd.Series(dtype=np.int64),
                           "doc_id": pd.Series(dtype=object), "document": pd.Series(dtype=object)})
    if duplicate_threshold is not None:
        close = profile.calibrate(metric, pair_raw, geometry)["calibrated"] >= duplicate_threshold
        members, numbers = duplicate_groups(first[close], second[close], n_docs)
        groups = pd.DataFrame({"group": numbers, "size": np.bincount(numbers)[numbers],
                               "doc_id": id_array[members], "document": text_array[members]})
    keep = slice(None) if max_pairs is None else slice(0, max_pairs)
    pairs = table(first[keep], second[keep], pair_raw[keep])
    graph_pairs = len(first)
    del first, second, pair_raw
    found = slice(None) if found.all() else found          # views of the graph, not copies
    neighbours = table(np.repeat(rows, k)[found], hits.ravel()[found], raw.ravel()[found],
                       rank=np.tile(np.arange(1, k + 1), n_docs)[found])
    notes = []
    if chosen == "approximate":
        notes.append("neighbours were found with an approximate index (faiss HNSW, "
                     f"{index['search_candidates']} candidates per text): a few true neighbours may "
                     "be missing (recall@10 in benchmarks/README.md); use the exact method for every one")
    if max_pairs is not None and graph_pairs > max_pairs:
        notes.append(f"the {max_pairs:,} most similar of {graph_pairs:,} neighbour pairs are listed")
    provenance = {"neighbours": {
        "k": k, "metric": metric, "geometry": geometry, **index,
        "graph_pairs": graph_pairs, "pairs_kept": len(pairs),
        "duplicate_threshold": duplicate_threshold,
        "duplicate_column": score_column(metric, "calibrated", geometry)
        if duplicate_threshold is not None else None,
        "duplicate_groups": int(groups["group"].max()) if len(groups) else 0,
        "duplicate_texts": len(groups)}}
    return DocumentNeighbours(list(ids), list(texts), vectors, hits, neighbours, pairs, groups,
                              provenance, notes, metric, geometry)


def document_neighbours(documents, embedder, profile: ReferenceProfile, *, k: int = DEFAULT_K,
                        metric: str = "cosine", geometry: str = "none",
                        duplicate_threshold: float | None = DEFAULT_DUPLICATE_THRESHOLD,
                        max_pairs: int | None = MAX_PAIRS, cache=None, batch_size: int | None = None,
                        progress=None, should_stop=None, memory_budget: int | None = None,
                        method: str = "auto") -> DocumentNeighbours:
    """Each document's `k` nearest other documents of a `DocumentSet`, the set's most similar
    pairs and its duplicate groups, in blocks inside `memory_budget` (bytes; None: the default).

    `method`: "exact" (row blocks of the score matrix), "approximate" (a faiss HNSW graph
    index; cosine, angular, dot and euclidean) or "auto" (exact while that is fast enough,
    `calibsim_gui.core.geometry.knn.choose_method`). Pairs are the distinct unordered pairs of the
    neighbour graph, at most `max_pairs` (None: all); groups join texts whose calibrated score
    is at least `duplicate_threshold` (None: no groups). A run that would not fit raises
    InputError before any text is encoded.
    """
    profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
    texts, ids = documents.texts, documents.ids
    options = {"k": k, "metric": metric, "geometry": geometry, "method": method,
               "max_pairs": max_pairs, "memory_budget": memory_budget}
    plan_neighbours(len(texts), embedder.dimension, profile, **options)
    encoding = encode_texts(embedder, texts, batch_size=batch_size, cache=cache,
                            progress=progress_stage(progress, "encoding", 0.7, 0.0),
                            should_stop=should_stop)
    result = vector_neighbours(profile.transformed(encoding.embeddings, geometry), ids, texts, profile,
                               duplicate_threshold=duplicate_threshold, **options,
                               progress=progress_stage(progress, "neighbours", 0.3, 0.7),
                               should_stop=should_stop)
    provenance = run_provenance(embedder, profile, encoding, (geometry,))
    provenance["documents"] = {"files": [str(f) for f in documents.files], "count": len(texts),
                               "empty_dropped": documents.n_empty,
                               "duplicates_dropped": documents.n_duplicates}
    provenance["metric"] = metric
    provenance.update(result.provenance)
    if profile.references(geometry)[metric].band is not None:
        provenance["columns"].update({f: FORM_DESCRIPTIONS[f] for f in FORM_DESCRIPTIONS
                                      if f.startswith("calibrated_band")})
    notes = list(documents.notes) + profile.warnings(precision=embedder_precision(embedder))
    if encoding.n_truncated:
        notes.append(f"{encoding.n_truncated} texts are longer than the model's max length "
                     f"({embedder.max_seq_length} tokens); only their beginning was scored")
    notes += result.notes
    provenance["languages"], language_notes = run_languages(
        texts, profile.provenance, model_folder=getattr(getattr(embedder, "info", None), "path", None))
    notes += language_notes
    provenance["notes"] = notes
    result.provenance, result.notes = provenance, notes
    return result
