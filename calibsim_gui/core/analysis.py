"""Analyses: score a pair list or a document set against a reference profile."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from calibsim_gui.core.encoding import EncodingResult, encode_texts
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.metrics import METRICS, get_metrics, matrix_blocks, pair_scores
from calibsim_gui.core.profile import FORM_DESCRIPTIONS, ReferenceProfile
from calibsim_gui.core.provenance import library_versions

SATURATION_QUANTILE = 0.99


@dataclass
class ScoredPairs:
    """Input rows with raw and calibrated scores, provenance and plain-language notes."""

    frame: pd.DataFrame
    provenance: dict
    notes: list[str] = field(default_factory=list)


@dataclass
class DocumentMatrix:
    """N x N scores of one metric for a document set, raw and in each calibrated form."""

    ids: list[str]
    metric: str
    matrices: dict[str, np.ndarray]       # form ("raw", "calibrated", ...) -> float32 (n, n)
    provenance: dict
    notes: list[str] = field(default_factory=list)


def query_zscores(metric: str, emb_a: np.ndarray, emb_b: np.ndarray, raw: np.ndarray,
                  reference: np.ndarray, *, block_rows: int = 2048) -> np.ndarray:
    """Pair score as a z-score against each text's own scores with background texts.

    For a pair (a, b) the score is compared with the scores of a with every reference text and
    of b with every reference text; the result is the mean of the two z-scores. It says how
    unusual b is *for a* (and a for b): a local, per-query scale, computed in row blocks.
    """
    metric_ = METRICS[metric]
    reference = reference.astype(np.float64)
    sim = metric_.as_similarity(raw)
    out = np.zeros(len(sim))
    for emb in (emb_a, emb_b):
        for start in range(0, len(emb), block_rows):
            rows = slice(start, start + block_rows)
            scores = metric_.as_similarity(metric_.matrix(emb[rows].astype(np.float64), reference))
            with np.errstate(divide="ignore", invalid="ignore"):
                out[rows] += (sim[rows] - scores.mean(axis=1)) / scores.std(axis=1) / 2
    return out


def _base_provenance(embedder, profile: ReferenceProfile, encoding) -> dict:
    return {
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": {**embedder.fingerprint.to_dict(), "device": embedder.device,
                  "max_seq_length": embedder.max_seq_length},
        "references": {
            "profile": profile.provenance.get("name", "unnamed profile"),
            "profile_provenance": profile.provenance,
            "anchors": profile.anchors.name,
            "anchor_pairs": len(profile.anchors.pairs),
            "background_pairs": profile.background_pairs,
        },
        "encoding": {"distinct_texts": encoding.n_unique, "from_cache": encoding.n_cached,
                     "truncated": encoding.n_truncated},
        "columns": {form: FORM_DESCRIPTIONS[form] for form in ("raw",) + profile.forms()},
        "versions": library_versions(),
    }


@dataclass(frozen=True)
class PairChunk:
    """Raw scores of the pairs scored so far, yielded while a pair list is being scored.

    Attributes
    ----------
    done, total : int
        Pairs scored so far / pairs to score.
    rows : ndarray of int
        Row positions (in the input table) of the pairs in this chunk.
    raw : dict metric -> ndarray of shape (len(rows),)
        Their raw scores, in each metric's orientation.
    """

    done: int
    total: int
    rows: np.ndarray
    raw: dict


def iter_score_pairs(table, embedder, profile: ReferenceProfile, *, metrics=None, cache=None,
                     batch_size: int = 64, chunk_pairs: int = 512, should_stop=None):
    """Score `table` (a `PairTable`) chunk by chunk; see `score_pairs` for the output.

    Yields a `PairChunk` after each chunk of pairs (for live plots and progress) and returns the
    `ScoredPairs`. Each distinct text is encoded once even when it recurs in later chunks.

    Raises
    ------
    Cancelled
        When `should_stop()` returns True (checked before every batch).
    """
    profile.check_model(embedder.fingerprint)
    metrics = [m.name for m in get_metrics(metrics)]
    frame = table.frame
    scored = np.ones(len(frame), dtype=bool)
    scored[list(table.empty_rows)] = False
    rows = np.flatnonzero(scored)
    texts_a = frame[table.text_a].to_numpy()
    texts_b = frame[table.text_b].to_numpy()
    known: dict[str, np.ndarray] = {}
    emb_a = np.zeros((len(rows), embedder.dimension), dtype=np.float32)
    emb_b = np.zeros_like(emb_a)
    raw = {name: np.zeros(len(rows)) for name in metrics}
    n_cached = n_truncated = 0
    for start in range(0, len(rows), chunk_pairs):
        chunk = slice(start, start + chunk_pairs)
        chunk_rows = rows[chunk]
        new = list(dict.fromkeys(t for t in np.concatenate([texts_a[chunk_rows], texts_b[chunk_rows]])
                                 if t not in known))
        result = encode_texts(embedder, new, batch_size=batch_size, cache=cache,
                              should_stop=should_stop)
        known.update(zip(new, result.embeddings))
        n_cached += result.n_cached
        n_truncated += result.n_truncated
        emb_a[chunk] = [known[t] for t in texts_a[chunk_rows]]
        emb_b[chunk] = [known[t] for t in texts_b[chunk_rows]]
        chunk_raw = pair_scores(emb_a[chunk], emb_b[chunk], metrics)
        for name in metrics:
            raw[name][chunk] = chunk_raw[name]
        yield PairChunk(min(start + chunk_pairs, len(rows)), len(rows), chunk_rows, chunk_raw)
    encoding = EncodingResult(np.empty((0, embedder.dimension)), len(known), n_cached, n_truncated)
    return _assemble(table, scored, embedder, profile, encoding, emb_a, emb_b, raw)


def score_pairs(table, embedder, profile: ReferenceProfile, *, metrics=None, cache=None,
                batch_size: int = 64, progress=None, should_stop=None) -> ScoredPairs:
    """Score every pair of `table` (a `PairTable`) with every metric and calibration.

    Output columns are the input columns unchanged plus ``<metric>_<form>`` for each metric and
    form ("raw", then the profile's calibrated forms, then "query_zscore" when the profile has a
    background sample). Rows with an empty text keep NaN scores.
    `progress(done, total, message)` is called after each chunk of pairs.
    """
    steps = iter_score_pairs(table, embedder, profile, metrics=metrics, cache=cache,
                             batch_size=batch_size, should_stop=should_stop)
    while True:
        try:
            chunk = next(steps)
        except StopIteration as end:
            return end.value
        if progress is not None:
            progress(chunk.done, chunk.total, f"scored {chunk.done} of {chunk.total} pairs")


def _assemble(table, scored, embedder, profile, encoding, emb_a, emb_b, raw) -> ScoredPairs:
    """Calibrate the raw scores and put table, columns, provenance and notes together."""
    frame = table.frame
    columns: dict[str, np.ndarray] = {}
    provenance = _base_provenance(embedder, profile, encoding)
    provenance["pairs"] = {"file": str(table.path), "rows": len(frame), "scored": int(scored.sum())}
    notes = list(table.notes) + profile.warnings()
    if encoding.n_truncated:
        notes.append(f"{encoding.n_truncated} texts are longer than the model's max length "
                     f"({embedder.max_seq_length} tokens); only their beginning was scored")

    def full(values):
        out = np.full(len(frame), np.nan)
        out[scored] = values
        return out

    saturation = {}
    for name, values in raw.items():
        columns[f"{name}_raw"] = full(values)
        for form, calibrated in profile.calibrate(name, values).items():
            columns[f"{name}_{form}"] = full(calibrated)
        if profile.query_reference is not None:
            columns[f"{name}_query_zscore"] = full(
                query_zscores(name, emb_a, emb_b, values, profile.query_reference))
        if profile.has_background and len(values):
            cut = profile.metrics[name].background.quantile(SATURATION_QUANTILE)
            share = float((METRICS[name].as_similarity(values) > cut).mean())
            saturation[name] = {"share_beyond_p99": share,
                                "percentile_halfwidth": profile.metrics[name]
                                .calibrators["bg_percentile"].halfwidth_}
    if saturation:
        provenance["background_saturation"] = saturation
        worst = max(saturation.items(), key=lambda kv: kv[1]["share_beyond_p99"])
        if worst[1]["share_beyond_p99"] > 0.05:
            notes.append(
                f"{worst[1]['share_beyond_p99']:.0%} of pairs score above the background's 99th "
                f"percentile ({worst[0]}); the plain percentile cannot separate them — use "
                "<metric>_calibrated or <metric>_bg_surprise to rank them")
    if table.label is not None:
        provenance["agreement"] = _agreement(frame[table.label], columns)
    provenance["notes"] = notes
    import pandas as pd

    out = pd.concat([frame.reset_index(drop=True), pd.DataFrame(columns)], axis=1)
    return ScoredPairs(out, provenance, notes)


def _agreement(labels: pd.Series, columns: dict[str, np.ndarray]) -> dict:
    """Spearman correlation (x100) of every score column with the human labels."""
    import pandas as pd
    from scipy.stats import spearmanr

    y = pd.to_numeric(labels, errors="coerce").to_numpy()
    out = {}
    for name, values in columns.items():
        ok = np.isfinite(y) & np.isfinite(values)
        if ok.sum() > 2:
            rho = spearmanr(values[ok], y[ok]).statistic
            out[name] = round(float(rho) * 100 * (1 if _higher_is_similar(name) else -1), 3)
    return {"label": labels.name, "spearman_x100": out}


def _higher_is_similar(column: str) -> bool:
    metric, _, form = column.partition("_")
    return form != "raw" or METRICS[metric].higher_is_similar


def score_matrix(documents, embedder, profile: ReferenceProfile, *, metric: str = "cosine",
                 forms=("calibrated",), cache=None, batch_size: int = 64, block_rows: int = 1024,
                 progress=None, should_stop=None) -> DocumentMatrix:
    """All-pairs scores of a `DocumentSet`, computed in row blocks (bounded memory).

    Returns float32 matrices for "raw" and each requested form.
    """
    profile.check_model(embedder.fingerprint)
    metric_ = get_metrics([metric])[0]
    unknown = set(forms) - set(profile.forms())
    if unknown:
        raise InputError(f"this profile has no {sorted(unknown)} calibration.",
                         fix=f"choose --form from {', '.join(profile.forms())}")
    encoding = encode_texts(embedder, documents.texts, batch_size=batch_size, cache=cache,
                            progress=progress, should_stop=should_stop)
    emb = encoding.embeddings
    n = len(emb)
    matrices = {form: np.empty((n, n), dtype=np.float32) for form in ("raw",) + tuple(forms)}
    calibrators = profile.metrics[metric].calibrators
    for start, block in matrix_blocks(emb, metric_, block_rows=block_rows):
        rows = slice(start, start + len(block))
        matrices["raw"][rows] = block
        sim = metric_.as_similarity(block)
        for form in forms:
            matrices[form][rows] = calibrators[form].transform(sim)
    provenance = _base_provenance(embedder, profile, encoding)
    provenance["documents"] = {"files": [str(f) for f in documents.files], "count": n,
                               "empty_dropped": documents.n_empty,
                               "duplicates_dropped": documents.n_duplicates}
    provenance["metric"] = metric
    notes = list(documents.notes) + profile.warnings()
    provenance["notes"] = notes
    return DocumentMatrix(documents.ids, metric, matrices, provenance, notes)
