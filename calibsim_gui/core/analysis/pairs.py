"""Analyses: score a pair list or a document set against a reference profile."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from calibsim_gui.core.cache import cache_key
from calibsim_gui.core.chunking import (CALIBRATION_NOTE, CHUNK_AGGREGATE_DESCRIPTIONS, DEFAULT_CHUNK_AGGREGATE, DEFAULT_CHUNK_OVERLAP,
                                        DEFAULT_LONG_TEXTS, TRUNCATED_COLUMN, aggregate_pair_scores,
                                        check_long_texts, chunk_window, combine_chunks, split_texts)
from calibsim_gui.core.encoding import EncodingResult, encode_texts, iter_encode
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.geometry import GEOMETRIES, get_geometries
from calibsim_gui.core.hubness import CSLS_NEIGHBOURS, csls_matrix, neighbourhood_similarity
from calibsim_gui.core.languages import pair_languages, run_languages
from calibsim_gui.core.memory import check_budget, matrix_run_bytes, pair_run_bytes
from calibsim_gui.core.models import embedder_engine, embedder_precision, embedder_prompt
from calibsim_gui.core.metrics import METRICS, get_metrics, matrix_blocks, pair_scores
from calibsim_gui.core.profile import FORM_DESCRIPTIONS, ReferenceProfile
from calibsim_gui.core.profile_builder import add_language_ends
from calibsim_gui.core.provenance import library_versions
from calibsim_gui.core.query_scale import pair_zscores, text_scales

SATURATION_QUANTILE = 0.99
INTERVAL_SAMPLE = 2000          # pairs whose calibrated intervals summarise a run's uncertainty
UNIT_NORM_TOLERANCE = 1e-3


def score_column(metric: str, form: str, geometry: str = "none") -> str:
    """Output column name: ``<metric>_<form>``, plus ``@<geometry>`` under a geometry fix."""
    return f"{metric}_{form}" + ("" if geometry == "none" else f"@{geometry}")


def split_score_column(name: str) -> tuple[str, str, str] | None:
    """``"cosine_calibrated@whiten"`` -> ``("cosine", "calibrated", "whiten")``; None for a
    column that is not a score column."""
    base, _, geometry = str(name).partition("@")
    metric, _, form = base.partition("_")
    geometry = geometry or "none"
    if metric in METRICS and form in FORM_DESCRIPTIONS and geometry in GEOMETRIES:
        return metric, form, geometry
    return None


@dataclass
class ScoredPairs:
    """Input rows with raw and calibrated scores, provenance and plain-language notes."""

    frame: pd.DataFrame
    provenance: dict
    notes: list[str] = field(default_factory=list)


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


def agreement_band_columns(band, calibrated) -> dict[str, np.ndarray]:
    """``calibrated_band80_lo`` ... ``calibrated_band95_hi`` from an `AgreementBand` (none without one)."""
    if band is None:
        return {}
    out = {}
    for rate in band.rates:
        lo, hi = band.band(calibrated, rate)
        out[f"calibrated_band{round(rate * 100)}_lo"], out[f"calibrated_band{round(rate * 100)}_hi"] = lo, hi
    return out


def prompt_provenance(embedder) -> dict:
    """The prompts a run encoded with: ``prompt`` (scored texts, anchors, background), its folder
    name, and the query and document prompts used by search."""
    prompts = getattr(embedder, "prompts", None)
    return {"prompt": embedder_prompt(embedder), "prompt_name": getattr(prompts, "name", None),
            "query_prompt": str(getattr(embedder, "query_prompt", "") or ""),
            "document_prompt": str(getattr(embedder, "document_prompt", "") or "")}


def run_provenance(embedder, profile: ReferenceProfile, encoding, geometries=("none",)) -> dict:
    """What every run records: when, which model in which precision, which references, the
    encoding counts, the column meanings and the geometry fixes."""
    return {
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": {**embedder.fingerprint.to_dict(), "device": embedder.device,
                  "engine": embedder_engine(embedder), "precision": embedder_precision(embedder),
                  "precision_note": getattr(embedder, "precision_note", embedder_precision(embedder)),
                  "max_seq_length": embedder.max_seq_length, **prompt_provenance(embedder)},
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
        "geometry": {name: {"description": GEOMETRIES[name].description,
                            **({} if name == "none" else
                               profile.provenance.get("geometries", {}).get("fixes", {}).get(name, {}))}
                     for name in geometries},
        "versions": library_versions(),
    }


def _plan(profile: ReferenceProfile, geometry, metrics) -> tuple[dict[str, list[str]], list[str]]:
    """Metrics to score under each requested geometry, and notes on metrics left out.

    Each geometry gets the requested metrics (all by default) that the profile has references
    for under it; geometry fixes usually cover cosine only.
    """
    names = list(dict.fromkeys([geometry] if isinstance(geometry, str) else geometry))
    if not names:
        raise InputError("no geometry chosen.", fix=f"choose from {', '.join(GEOMETRIES)}")
    get_geometries(names)
    wanted = [m.name for m in get_metrics(metrics)]
    plan, notes = {}, []
    for name in names:
        available = profile.references(name)
        chosen = [m for m in wanted if m in available]
        missing = [m for m in wanted if m not in chosen]
        rebuild = ("" if name != "none" else
                   f"; a profile built with `calibsim profile build --metrics {','.join(missing)}` "
                   "(and a background) has them")
        if not chosen:
            raise InputError(f"under geometry {name!r} the profile has references only for "
                             f"{', '.join(available)}, not for {', '.join(missing)}.",
                             fix=f"score only those metrics, e.g. --metrics {next(iter(available))}"
                                 f"{rebuild}")
        if missing and metrics is not None:
            notes.append(f"{', '.join(missing)}: no references under geometry {name!r}, so not "
                         f"scored under it{rebuild}")
        plan[name] = chosen
    return plan, notes


def _check_human(human, plan: dict[str, list[str]], embedder) -> None:
    for calibrator in human:
        if calibrator.model != embedder.fingerprint.id:
            fitted = "names no model" if calibrator.model is None else f"was fitted with model {calibrator.model}"
            raise ProfileError(f"the human calibration {fitted}, but the model in use is "
                               f"{embedder.fingerprint.id}; fit one for this model with `calibsim human fit`.")
        if calibrator.metric not in plan.get(calibrator.geometry, ()):
            raise InputError(f"the human calibration maps {calibrator.metric} scores under geometry "
                             f"{calibrator.geometry!r}, which this run does not compute.",
                             fix=f"score {calibrator.metric} with geometry {calibrator.geometry!r} too")


@dataclass(frozen=True)
class PairChunk:
    """Raw scores of the pairs scored so far, yielded while a pair list is being scored.

    Attributes
    ----------
    done, total : int
        Pairs scored so far / pairs to score.
    rows : ndarray of int
        Row positions (in the input table) of the pairs in this chunk, ascending. Chunks come
        in the order the pairs' texts are encoded (fewest tokens first), not in file order;
        together they hold every scored pair once.
    raw : dict metric -> ndarray of shape (len(rows),)
        Their raw scores, in each metric's orientation, under `geometry` (the first requested).
    geometry : str
    work : float
        Share of the run's encoding work done, 0 to 1 (`EncodingStep.work`): what time left
        is estimated from, since pairs of short texts are ready first.
    """

    done: int
    total: int
    rows: np.ndarray
    raw: dict
    geometry: str = "none"
    work: float = 1.0


def iter_score_pairs(table, embedder, profile: ReferenceProfile, *, metrics=None, geometry="none",
                     human=(), norms: bool = False, interval: bool = False, cache=None,
                     batch_size: int = 64, chunk_pairs: int = 512, memory_budget: int | None = None,
                     long_texts: str = DEFAULT_LONG_TEXTS, chunk_aggregate: str = DEFAULT_CHUNK_AGGREGATE,
                     chunk_overlap: int = DEFAULT_CHUNK_OVERLAP, should_stop=None):
    """Score `table` (a `PairTable`), yielding partial scores; see `score_pairs` for the output.

    The distinct texts of the whole run are encoded together, each once, in batches of similar
    token counts (`calibsim_gui.core.encoding.iter_encode`: little padding). Whenever
    `chunk_pairs` more pairs have both texts encoded (and once at the end), their raw scores are
    yielded as a `PairChunk` (for live plots and progress); the return value is the `ScoredPairs`.

    Raises
    ------
    Cancelled
        When `should_stop()` returns True (checked before every batch).
    InputError
        Before any work, when the run's memory estimate exceeds `memory_budget` (bytes; None:
        `calibsim_gui.core.memory.default_budget()`).
    """
    import pandas as pd

    if chunk_pairs < 1:
        raise ValueError(f"chunk_pairs must be at least 1, not {chunk_pairs}")
    profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
    check_long_texts(long_texts, chunk_aggregate, chunk_overlap)
    plan, plan_notes = _plan(profile, geometry, metrics)
    _check_human(human, plan, embedder)
    frame = table.frame
    scored = np.ones(len(frame), dtype=bool)
    scored[list(table.empty_rows)] = False
    rows = np.flatnonzero(scored)
    texts_a = frame[table.text_a].to_numpy()[rows]
    texts_b = frame[table.text_b].to_numpy()[rows]
    distinct = pd.unique(np.concatenate([texts_a, texts_b]))
    n_texts = len(distinct)
    per_metric = 1 + len(profile.forms()) + (profile.query_reference is not None)
    n_columns = (per_metric + 6 * interval) * sum(map(len, plan.values())) + len(human) + 2 * norms
    check_budget(pair_run_bytes(len(rows), n_texts, embedder.dimension, n_columns, len(plan)),
                 memory_budget, what=f"scoring {len(rows):,} pairs ({n_texts:,} distinct texts)",
                 fix="split the pairs file into parts or choose fewer metrics")
    index = {t: i for i, t in enumerate(distinct)}
    first = np.fromiter((index[t] for t in texts_a), dtype=np.int64, count=len(rows))
    second = np.fromiter((index[t] for t in texts_b), dtype=np.int64, count=len(rows))
    chunked = long_texts == "chunk"
    # the pieces the model reads: each distinct text, or (--long-texts chunk) each of its chunks
    pieces = split_texts(embedder, distinct, overlap=chunk_overlap) if chunked else None
    sizes = (np.fromiter(map(len, pieces), dtype=np.int64, count=n_texts) if chunked
             else np.ones(n_texts, dtype=np.int64))
    starts = np.cumsum(sizes) - sizes              # each text's first piece among all pieces
    steps = iter_encode(embedder, [p for text_pieces in pieces for p in text_pieces] if chunked else distinct,
                        batch_size=batch_size, cache=cache, should_stop=should_stop)
    step = next(steps)                             # the plan: after which batch each piece is ready
    piece_rows, piece_vectors = step.rows, step.table
    text_ready = (np.maximum.reduceat(step.ready_after[piece_rows], starts) if n_texts
                  else np.zeros(0, dtype=np.int64))
    pair_ready = np.maximum(text_ready[first], text_ready[second])
    order = np.argsort(pair_ready, kind="stable")  # pairs in the order their texts become ready
    ready_by = pair_ready[order]
    raw = {(g, m): np.zeros(len(rows)) for g, names in plan.items() for m in names}
    primary = next(iter(plan))

    def vectors_of(texts) -> list[np.ndarray]:
        return [piece_vectors[piece_rows[starts[i]:starts[i] + sizes[i]]] for i in texts]

    def score(chosen) -> dict:
        """Raw scores of the pairs at positions `chosen`, kept in `raw`; those under `primary`."""
        a, b = first[chosen], second[chosen]
        split = chunked and bool((sizes[a] > 1).any() or (sizes[b] > 1).any())
        out = {}
        for g, names in plan.items():
            if split:       # a pair with a chunked text scores the aggregate over its chunk pairs
                scores = aggregate_pair_scores(vectors_of(a), vectors_of(b), names, chunk_aggregate,
                                               transform=lambda x, g=g: profile.transformed(x, g))
            else:
                scores = pair_scores(profile.transformed(piece_vectors[piece_rows[starts[a]]], g),
                                     profile.transformed(piece_vectors[piece_rows[starts[b]]], g), names)
            for name in names:
                raw[g, name][chosen] = scores[name]
            out[g] = scores
        return out[primary]

    emitted = 0
    while True:
        ready = int(np.searchsorted(ready_by, step.batch, side="right"))
        while emitted < ready and (ready - emitted >= chunk_pairs or ready == len(rows)):
            chosen = np.sort(order[emitted:emitted + chunk_pairs])
            scores = score(chosen)
            emitted += len(chosen)
            yield PairChunk(emitted, len(rows), rows[chosen], scores, primary, step.work)
        try:
            step = next(steps)
        except StopIteration as end:
            result = end.value
            break
    combined = combine_chunks(pieces, result) if chunked else None
    encoded = combined.encoding if chunked else result
    chunks = combined.chunks if chunked else {}
    encoding = EncodingResult(np.empty((0, embedder.dimension)), n_texts, encoded.n_cached,
                              encoded.n_truncated, encoded.truncated)
    long = {"mode": long_texts, "aggregate": chunk_aggregate, "overlap": chunk_overlap,
            "texts_chunked": len(chunks), "chunks": combined.n_chunks if chunked else 0}
    return _assemble(table, scored, embedder, profile, encoding, (list(distinct), encoded.embeddings),
                     first, second, raw, plan, plan_notes, human, norms, interval, cache, long)


def score_pairs(table, embedder, profile: ReferenceProfile, *, metrics=None, geometry="none",
                human=(), norms: bool = False, interval: bool = False, cache=None,
                batch_size: int = 64, progress=None, memory_budget: int | None = None,
                long_texts: str = DEFAULT_LONG_TEXTS, chunk_aggregate: str = DEFAULT_CHUNK_AGGREGATE,
                chunk_overlap: int = DEFAULT_CHUNK_OVERLAP, should_stop=None) -> ScoredPairs:
    """Score every pair of `table` (a `PairTable`) with every metric and calibration.

    Output columns are the input columns unchanged plus ``<metric>_<form>`` for each metric and
    form ("raw", then the profile's calibrated forms, then "query_zscore" when the profile has a
    background sample). Rows with an empty text keep NaN scores.
    `progress(done, total, message)` is called after each chunk of scored pairs.

    Parameters
    ----------
    geometry : str or sequence of str, default "none"
        Geometry fix(es) to score under ("none", "center", "whiten", "abtt"; see
        `ReferenceProfile.geometry_names`). Columns under a fix are named
        ``<metric>_<form>@<geometry>`` (see `score_column`) and are calibrated against the
        background under the same fix; fixes cover the metrics the profile was built for
        (cosine by default). Several geometries give all their columns in one run.
    human : sequence of HumanCalibrator
        Each adds ``<metric>_human[@<geometry>]``: expected human similarity in [0, 1].
    norms : bool
        Add ``<text column>_norm`` for both texts (vector lengths, before any geometry fix).
    interval : bool
        Add ``<metric>_calibrated_lo`` and ``_hi``, the reference uncertainty (95 %) of each
        calibrated score (its typical width is in the provenance, ``calibrated_interval``, either
        way), and where the profile has a human agreement band ``_band80_lo`` ... ``_band95_hi``.
    memory_budget : int or None
        Bytes the run may hold at once; see `iter_score_pairs`.
    long_texts : {"truncate", "chunk"}, default "truncate"
        Texts past the model's max length: "truncate" scores their beginning and adds a
        ``truncated`` column ("a", "b", "both" or empty) when any pair has one; "chunk" splits
        them into windows of the model's length sharing `chunk_overlap` tokens and scores such a
        pair by the `chunk_aggregate` ("max", "mean" or "match") of its chunk-pair scores,
        calibrated as any raw score. See `calibsim_gui.core.chunking`.
    """
    steps = iter_score_pairs(table, embedder, profile, metrics=metrics, geometry=geometry,
                             human=human, norms=norms, interval=interval, cache=cache,
                             batch_size=batch_size, memory_budget=memory_budget, long_texts=long_texts,
                             chunk_aggregate=chunk_aggregate, chunk_overlap=chunk_overlap,
                             should_stop=should_stop)
    while True:
        try:
            chunk = next(steps)
        except StopIteration as end:
            return end.value
        if progress is not None:
            progress(chunk.done, chunk.total, f"scored {chunk.done} of {chunk.total} pairs")


def _assemble(table, scored, embedder, profile, encoding, distinct, first, second, raw, plan,
              plan_notes, human, norms, interval, cache, long=None) -> ScoredPairs:
    """Calibrate the raw scores and put table, columns, provenance and notes together.

    `distinct` is ``(texts, vectors)`` of the distinct texts; pair i is rows ``first[i]`` and
    ``second[i]``. The texts' query scales are kept in `cache` (if any) beside their vectors.
    """
    texts, vectors = distinct
    frame = table.frame
    columns: dict[str, np.ndarray] = {}
    provenance = run_provenance(embedder, profile, encoding, tuple(plan))
    provenance["pairs"] = {"file": str(table.path), "rows": len(frame), "scored": int(scored.sum())}
    notes = list(table.notes) + plan_notes + profile.warnings(precision=embedder_precision(embedder))
    provenance["languages"], language_notes = run_languages(          # core/languages.py
        texts, profile.provenance, model_folder=getattr(getattr(embedder, "info", None), "path", None),
        pairs=(first, second, np.flatnonzero(scored)))
    notes += language_notes
    languages = pair_languages(texts, first, second)
    add_language_ends(profile, embedder, sorted(set(languages.tolist())), cache=cache)
    used = {code: int(n) for code, n in zip(*np.unique(languages[languages != ""], return_counts=True))
            if code in profile.provenance["scale"]["languages"]}
    long = long or {"mode": DEFAULT_LONG_TEXTS, "aggregate": DEFAULT_CHUNK_AGGREGATE,
                    "overlap": DEFAULT_CHUNK_OVERLAP, "texts_chunked": 0, "chunks": 0}
    truncated = _truncated_marks(encoding.truncated, first, second)
    long["pairs_truncated"] = int((truncated != "").sum())
    provenance["long_texts"] = {**long, "note": CALIBRATION_NOTE if long["mode"] == "chunk" else
                                "texts past the model's max length are scored by their beginning"}
    if long["mode"] == "chunk":
        long["window"] = provenance["long_texts"]["window"] = chunk_window(embedder)
    if long["texts_chunked"]:
        notes.append(f"{long['texts_chunked']} texts are longer than the model's max length "
                     f"({embedder.max_seq_length} tokens): each was split into chunks of up to "
                     f"{long['window']} tokens ({long['overlap']} shared by neighbours, "
                     f"{long['chunks']} chunks in all); their pairs score "
                     f"{CHUNK_AGGREGATE_DESCRIPTIONS[long['aggregate']]} ({long['aggregate']}); "
                     f"{CALIBRATION_NOTE}")
    if encoding.n_truncated:
        pairs = long["pairs_truncated"]
        notes.append(f"{encoding.n_truncated} texts are longer than the model's max length "
                     f"({embedder.max_seq_length} tokens); only their beginning was scored"
                     + (f": {pairs} pairs have a truncated text (column {TRUNCATED_COLUMN}); "
                        "score them whole with --long-texts chunk (app: Settings > Long texts)"
                        if pairs else ""))
    lengths = np.linalg.norm(vectors, axis=1)
    if len(lengths) and np.abs(lengths - 1).max() > UNIT_NORM_TOLERANCE:
        notes.append(f"the model does not normalise its embeddings (lengths {lengths.min():.3g} to "
                     f"{lengths.max():.3g}): dot and euclidean mix length with direction, cosine "
                     "and angular do not")

    def full(values):
        out = np.full(len(frame), np.nan)
        out[scored] = values
        return out

    saturation, intervals = {}, {}
    for g, names in plan.items():
        references = profile.references(g)
        reference = None
        if profile.query_reference is not None:
            reference = profile.transformed(profile.query_reference, g)
            # a chunked text's scale comes from its mean chunk vector: kept apart in the cache
            chunked = (f"|chunked-{long['window']}-{long['overlap']}" if long["texts_chunked"] else "")
            scales = text_scales(names, profile.transformed(vectors, g), reference, texts=texts,
                                 cache=cache, model_key=cache_key(embedder) + chunked)
        for name in names:
            values = raw[g, name]
            columns[score_column(name, "raw", g)] = full(values)
            forms = profile.calibrate(name, values, g, languages=languages)
            for form, calibrated in forms.items():
                columns[score_column(name, form, g)] = full(calibrated)
            similarity, curve = METRICS[name].as_similarity(values), references[name].calibrators["calibrated"]
            if interval:
                for form, end in zip(("calibrated_lo", "calibrated_hi"), curve.interval(similarity, language=languages)):
                    columns[score_column(name, form, g)] = full(end)
                for form, end in agreement_band_columns(references[name].band, forms["calibrated"]).items():
                    columns[score_column(name, form, g)] = full(end)
            sample = similarity[np.linspace(0, len(similarity) - 1, min(len(similarity), INTERVAL_SAMPLE)).astype(int)]
            widths = np.subtract(*curve.interval(sample)[::-1])
            intervals[name if g == "none" else f"{name}@{g}"] = {
                "median_width": float(np.median(widths)) if len(widths) else None,
                "p90_width": float(np.quantile(widths, 0.9)) if len(widths) else None}
            if reference is not None:
                columns[score_column(name, "query_zscore", g)] = full(
                    pair_zscores(METRICS[name].as_similarity(values), scales[name], first, second))
            if profile.has_background and len(values):
                cut = references[name].background.quantile(SATURATION_QUANTILE)
                share = float((METRICS[name].as_similarity(values) > cut).mean())
                saturation[name if g == "none" else f"{name}@{g}"] = {
                    "share_beyond_p99": share,
                    "percentile_halfwidth": references[name].calibrators["bg_percentile"].halfwidth_}
    for calibrator in human:
        values = METRICS[calibrator.metric].as_similarity(raw[calibrator.geometry, calibrator.metric])
        columns[score_column(calibrator.metric, "human", calibrator.geometry)] = full(
            calibrator.transform(values))
        provenance["columns"]["human"] = FORM_DESCRIPTIONS["human"]
        provenance.setdefault("human", []).append({
            "metric": calibrator.metric, "geometry": calibrator.geometry, "scale": calibrator.scale,
            "model": calibrator.model, "pairs": calibrator.n_pairs_, "warnings": calibrator.warnings_})
        notes += calibrator.warnings_
    provenance["calibrated_interval"] = {"what": "reference uncertainty: the calibrated score's spread when "
                                         "the reference sentences are resampled", "confidence": 0.95,
                                         "per_metric": intervals}
    provenance["reference_languages"] = {"en": int(scored.sum()) - sum(used.values()), **used}
    bands = {name: ref.band.to_dict() for name, ref in profile.metrics.items() if ref.band is not None}
    if bands:
        provenance["human_band"] = {"source": next(iter(bands.values()))["source_"],
                                    "rates": next(iter(bands.values()))["rates"], "metrics": sorted(bands)}
    if interval:
        provenance["columns"].update({f: FORM_DESCRIPTIONS[f] for f in ("calibrated_lo", "calibrated_hi")})
        if bands:
            provenance["columns"].update({f: FORM_DESCRIPTIONS[f] for f in FORM_DESCRIPTIONS
                                          if f.startswith("calibrated_band")})
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
    if norms:
        columns[f"{table.text_a}_norm"] = full(lengths[first])
        columns[f"{table.text_b}_norm"] = full(lengths[second])
    import pandas as pd

    flags = {}
    if long["pairs_truncated"]:
        marks = np.full(len(frame), "", dtype=object)
        marks[scored] = truncated
        name = TRUNCATED_COLUMN
        while name in frame.columns:
            name = f"calibsim_{name}"
        flags[name] = marks
        provenance["columns"][name] = (
            f"which text of the pair is longer than the model's max length ({embedder.max_seq_length} "
            f"tokens), so only its beginning was scored: a ({table.text_a}), b ({table.text_b}), both, "
            "or empty when neither")
    parts = [frame.reset_index(drop=True)] + ([pd.DataFrame(flags)] if flags else []) + [pd.DataFrame(columns)]
    out = pd.concat(parts, axis=1)
    return ScoredPairs(out, provenance, notes)


def _truncated_marks(too_long, first, second) -> np.ndarray:
    """Per scored pair: "a", "b", "both" or "" — which of its texts the model saw only the start of."""
    if too_long is None or not len(too_long):
        return np.full(len(first), "", dtype=object)
    a, b = too_long[first], too_long[second]
    return np.where(a & b, "both", np.where(a, "a", np.where(b, "b", ""))).astype(object)


def _agreement(labels: pd.Series, columns: dict[str, np.ndarray]) -> dict:
    """Spearman correlation (x100) of every score column with the human labels."""
    import pandas as pd
    from scipy.stats import spearmanr

    y = pd.to_numeric(labels, errors="coerce").to_numpy()
    out = {}
    for name, values in columns.items():
        ok = np.isfinite(y) & np.isfinite(values)
        if ok.sum() > 2 and np.ptp(values[ok]) > 0 and np.ptp(y[ok]) > 0:     # else: undefined
            rho = spearmanr(values[ok], y[ok]).statistic
            out[name] = round(float(rho) * 100 * (1 if _higher_is_similar(name) else -1), 3)
    return {"label": labels.name, "spearman_x100": out}


def _higher_is_similar(column: str) -> bool:
    metric, form, _ = split_score_column(column)
    return form != "raw" or METRICS[metric].higher_is_similar


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
                 forms=("calibrated",), geometry: str = "none", cache=None, batch_size: int = 64,
                 block_rows: int = 1024, progress=None, memory_budget: int | None = None,
                 should_stop=None) -> DocumentMatrix:
    """All-pairs scores of a `DocumentSet`, computed in row blocks (bounded memory).

    Returns float32 matrices for "raw" and each requested form, under `geometry` (one name;
    the embeddings are transformed and calibrated against the background under that fix).
    The form "local_minmax" is each row's own min-max (`local_minmax_rows`: 0 = the document's
    least similar other document, 1 = its most similar; local, not comparable across rows).
    The form "csls" (cosine only, needs the profile's background sample) is the hubness-corrected
    cosine of `calibsim_gui.core.hubness`, each text's neighbourhood taken among the
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
