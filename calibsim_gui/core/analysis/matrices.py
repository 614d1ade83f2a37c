"""Score a document set: the N x N matrix of one metric, raw and in each calibrated form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass

from calibsim_gui.core.analysis.pairs import run_provenance
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS, ReferenceProfile
from calibsim_gui.core.embedding.devices import embedder_precision
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.languages import run_languages
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.hubness import CSLS_NEIGHBOURS, csls_matrix, neighbourhood_similarity
from calibsim_gui.core.geometry.metrics import get_metrics, matrix_blocks
from calibsim_gui.core.io.memory import check_budget, matrix_run_bytes


@dataclass
class DocumentMatrix:
    """N x N scores of one metric for a document set, raw and in each calibrated form,
    under one geometry ("none" = the model's own embeddings)."""

    ids: list[str]
    metric: str
    matrices: dict[str, np.ndarray]       # form ("raw", "calibrated", ...) -> float32 (n, n)
    provenance: dict
    notes: list[str] = field(default_factory=list)
    geometry: str = "none"
    texts: list[str] = field(default_factory=list)      # the documents' texts, in the order of ids


LOCAL_MINMAX_ROWS = ("per row: 0 = this document's least similar other document of the set, 1 = "
                     "its most similar (the diagonal, a document with itself, left out of both); "
                     "local to one document and one set, NOT comparable across rows or sets, and "
                     "the matrix is not symmetric (higher = more similar)")


def local_minmax_rows(similarity: np.ndarray, first_row: int = 0) -> np.ndarray:
    """Per-row min-max of a block of "higher = more similar" scores against the whole set.

    Row r of `similarity` is document ``first_row + r``; its own column is left out of the row's
    minimum and maximum (its value is still mapped, and usually lands above 1). A row whose other
    scores are all equal maps to 1.
    """
    sim = np.asarray(similarity, dtype=np.float64)
    rows = np.arange(len(sim))
    others = sim.copy()
    own = first_row + rows
    inside = own < sim.shape[1]
    if sim.shape[1] < 2:
        return np.ones_like(sim)
    others[rows[inside], own[inside]] = np.nan
    low, high = np.nanmin(others, axis=1), np.nanmax(others, axis=1)
    span = (high - low)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > 0, (sim - low[:, None]) / span, 1.0)


def score_matrix(documents, embedder, profile: ReferenceProfile, *, metric: str = "cosine",
                 forms=("calibrated",), geometry: str = "none", cache=None, batch_size: int | None = None,
                 block_rows: int = 1024, progress=None, memory_budget: int | None = None,
                 should_stop=None) -> DocumentMatrix:
    """All-pairs scores of a `DocumentSet`, computed in row blocks (bounded memory).

    Returns float32 matrices for "raw" and each requested form, under `geometry` (one name;
    the embeddings are transformed and calibrated against the background under that fix).
    The form "local_minmax" is each row's own min-max (`local_minmax_rows`: 0 = the document's
    least similar other document, 1 = its most similar; local, not comparable across rows).
    The form "csls" (cosine only, needs the profile's background sample) is the hubness-corrected
    cosine of `calibsim_gui.core.geometry.hubness`, each text's neighbourhood taken among the
    background sample under the same geometry. A run whose matrices would not fit in
    `memory_budget` (bytes; None: the default budget) raises InputError before any work.
    """
    profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
    metric_ = get_metrics([metric])[0]
    references = profile.references(geometry)
    if metric not in references:
        where = "this profile" if geometry == "none" else f"geometry fix {geometry!r}"
        rebuild = (f", or build a profile with `calibsim profile build --metrics {metric}` (and a "
                   "background)" if geometry == "none" else "")
        raise InputError(f"{where} has references only for {', '.join(references)}, not {metric}.",
                         fix=f"choose --metric {next(iter(references))}{rebuild}")
    offered = profile.forms() + ("local_minmax",)
    if metric == "cosine" and profile.query_reference is not None:
        offered += ("csls",)
    unknown = set(forms) - set(offered)
    if unknown:
        raise InputError(f"this profile has no {sorted(unknown)} calibration for {metric}.",
                         fix=f"choose --form from {', '.join(offered)}")
    n_docs = len(documents.texts)
    check_budget(matrix_run_bytes(n_docs, embedder.dimension, 1 + len(forms)), memory_budget,
                 what=f"the {n_docs:,} x {n_docs:,} matrix", fix="score fewer documents at a time")
    encoding = encode_texts(embedder, documents.texts, batch_size=batch_size, cache=cache,
                            progress=progress, should_stop=should_stop)
    emb = profile.transformed(encoding.embeddings, geometry)
    n = len(emb)
    matrices = {form: np.empty((n, n), dtype=np.float32) for form in ("raw",) + tuple(forms)}
    calibrators = references[metric].calibrators
    provenance = run_provenance(embedder, profile, encoding, (geometry,))
    if "local_minmax" in forms:
        provenance["columns"]["local_minmax"] = LOCAL_MINMAX_ROWS
    if "csls" in forms:
        background = profile.transformed(profile.query_reference, geometry)
        neighbourhood = neighbourhood_similarity(emb, background)
        provenance["csls"] = {"neighbours": CSLS_NEIGHBOURS, "background_texts": len(background)}
        provenance["columns"]["csls"] = FORM_DESCRIPTIONS["csls"]
    for start, block in matrix_blocks(emb, metric_, block_rows=block_rows):
        rows = slice(start, start + len(block))
        matrices["raw"][rows] = block
        sim = metric_.as_similarity(block)
        for form in forms:
            if form == "local_minmax":
                matrices[form][rows] = local_minmax_rows(sim, start)
            else:
                matrices[form][rows] = (csls_matrix(block, neighbourhood[rows], neighbourhood)
                                        if form == "csls" else calibrators[form].transform(sim))
    provenance["documents"] = {"files": [str(f) for f in documents.files], "count": n,
                               "empty_dropped": documents.n_empty,
                               "duplicates_dropped": documents.n_duplicates}
    provenance["metric"] = metric
    notes = list(documents.notes) + profile.warnings(precision=embedder_precision(embedder))
    provenance["languages"], language_notes = run_languages(
        documents.texts, profile.provenance,
        model_folder=getattr(getattr(embedder, "info", None), "path", None))
    notes += language_notes
    provenance["notes"] = notes
    return DocumentMatrix(documents.ids, metric, matrices, provenance, notes, geometry,
                          documents.texts)
