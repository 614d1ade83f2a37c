"""Score a pair list against a reference profile: raw scores, every calibrated form, notes and provenance."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from calibsim_gui.core.analysis.correlation import spearman
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS, ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import add_language_ends
from calibsim_gui.core.calibration.query_scale import pair_zscores, text_scales
from calibsim_gui.core.embedding.cache import cache_key
from calibsim_gui.core.embedding.chunking import (
    CALIBRATION_NOTE,
    CHUNK_AGGREGATE_DESCRIPTIONS,
    DEFAULT_CHUNK_AGGREGATE,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_LONG_TEXTS,
    TRUNCATED_COLUMN,
    aggregate_pair_scores,
    check_long_texts,
    chunk_window,
    combine_chunks,
    split_texts,
)
from calibsim_gui.core.embedding.devices import embedder_engine, embedder_precision
from calibsim_gui.core.embedding.encoding import EncodingResult, iter_encode
from calibsim_gui.core.embedding.languages import assigned_note, pair_languages, run_languages
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.embedding.readability import UNREADABLE_COLUMN, UNREADABLE_NOTE, side_marks, unreadable_texts
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.geometry.metrics import METRICS, get_metrics, pair_scores, preload_matrix_libraries
from calibsim_gui.core.geometry.transforms import GEOMETRIES, get_geometries
from calibsim_gui.core.io.memory import check_budget, pair_run_bytes
from calibsim_gui.core.provenance import library_versions

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
    token counts (`calibsim_gui.core.embedding.encoding.iter_encode`: little padding). Whenever
    `chunk_pairs` more pairs have both texts encoded (and once at the end), their raw scores are
    yielded as a `PairChunk` (for live plots and progress); the return value is the `ScoredPairs`.

    Raises
    ------
    Cancelled
        When `should_stop()` returns True (checked before every batch).
    InputError
        Before any work, when the run's memory estimate exceeds `memory_budget` (bytes; None:
        `calibsim_gui.core.io.memory.default_budget()`).
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
    run_bytes = pair_run_bytes(len(rows), n_texts, embedder.dimension, n_columns, len(plan))
    check_budget(run_bytes, memory_budget, what=f"scoring {len(rows):,} pairs ({n_texts:,} distinct texts)",
                 fix="split the pairs file into parts or choose fewer metrics")
    index = {t: i for i, t in enumerate(distinct)}
    first = np.fromiter((index[t] for t in texts_a), dtype=np.int64, count=len(rows))
    second = np.fromiter((index[t] for t in texts_b), dtype=np.int64, count=len(rows))
    chunked = long_texts == "chunk"
    # the pieces the model reads: each distinct text, or (--long-texts chunk) each of its chunks
    pieces = split_texts(embedder, distinct, overlap=chunk_overlap, memory_budget=memory_budget,
                         run_bytes=run_bytes, path=table.path) if chunked else None
    sizes = (np.fromiter(map(len, pieces), dtype=np.int64, count=n_texts) if chunked
             else np.ones(n_texts, dtype=np.int64))
    starts = np.cumsum(sizes) - sizes              # each text's first piece among all pieces
    steps = iter_encode(embedder, [p for text_pieces in pieces for p in text_pieces] if chunked else distinct,
                        batch_size=batch_size, cache=cache, should_stop=should_stop, memory_budget=memory_budget,
                        run_bytes=run_bytes, path=table.path)
    step = next(steps)                             # the plan: after which batch each piece is ready
    # new texts' scales are computed at the end (`_assemble`): what they need is imported once the
    # first batch is encoded (ONNX Runtime's session, opened for it, loses to an import beside it)
    scaled = {m for names in plan.values() for m in names} if profile.query_reference is not None else ()
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
        if step.batch == 1:
            preload_matrix_libraries(scaled)
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
        calibrated as any raw score. See `calibsim_gui.core.embedding.chunking`.
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
    long = long or {"mode": DEFAULT_LONG_TEXTS, "aggregate": DEFAULT_CHUNK_AGGREGATE,
                    "overlap": DEFAULT_CHUNK_OVERLAP, "texts_chunked": 0, "chunks": 0}
    window = chunk_window(embedder) if long["mode"] == "chunk" else None
    # a chunked text's scale comes from its mean chunk vector: kept apart in the cache
    scales_key = cache_key(embedder) + (f"|chunked-{window}-{long['overlap']}" if long["texts_chunked"] else "")
    scales = _text_scales_in_background(plan, profile, vectors, texts, cache, scales_key)
    provenance["languages"], language_notes = run_languages(          # core/embedding/languages.py
        texts, profile.provenance, model_folder=getattr(getattr(embedder, "info", None), "path", None),
        pairs=(first, second, np.flatnonzero(scored)))
    notes += language_notes
    languages, provenance["languages"]["assigned"] = pair_languages(texts, first, second)
    notes += assigned_note(provenance["languages"]["assigned"])
    add_language_ends(profile, embedder, sorted(set(languages.tolist())), cache=cache)
    used = {code: int(n) for code, n in zip(*np.unique(languages[languages != ""], return_counts=True))
            if code in profile.provenance["scale"]["languages"]}
    truncated = side_marks(encoding.truncated, first, second)
    long["pairs_truncated"] = int((truncated != "").sum())
    provenance["long_texts"] = {**long, "note": CALIBRATION_NOTE if long["mode"] == "chunk" else
                                "texts past the model's max length are scored by their beginning"}
    if long["mode"] == "chunk":
        long["window"] = provenance["long_texts"]["window"] = window
    prompt = embedder_prompt(embedder)
    max_length = (f"the model's max length ({embedder.max_seq_length} tokens"
                  + (f", the prompt {prompt!r} before each text included)" if prompt else ")"))
    if long["texts_chunked"]:
        notes.append(f"{long['texts_chunked']} texts are longer than {max_length}: each was split into "
                     f"chunks of up to {long['window']} tokens ({long['overlap']} shared by neighbours, "
                     f"{long['chunks']} chunks in all); their pairs score "
                     f"{CHUNK_AGGREGATE_DESCRIPTIONS[long['aggregate']]} ({long['aggregate']}); "
                     f"{CALIBRATION_NOTE}")
    if encoding.n_truncated and long["mode"] == "chunk":      # chunked, yet a chunk was still cut
        notes.append(f"{encoding.n_truncated} texts have a chunk that the model read as longer than "
                     f"{max_length} (read alone, its words split into more tokens), so the end of that "
                     f"chunk was not scored (column {TRUNCATED_COLUMN})")
    elif encoding.n_truncated:
        pairs = long["pairs_truncated"]
        notes.append(f"{encoding.n_truncated} texts are longer than {max_length}; only their beginning "
                     "was scored"
                     + (f": {pairs} pairs have a truncated text (column {TRUNCATED_COLUMN}); "
                        "score them whole with --long-texts chunk (app: Settings > Long texts)"
                        if pairs else ""))
    if len(first) and (first == second).all():           # first, second: the scored pairs' texts
        notes.append(f"all {len(first)} pairs compare a text with itself, so each scores as "
                     "identical texts do (the top of every scale); if that is not meant, check that "
                     "the two text columns are not the same texts")
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
            if g in scales:
                columns[score_column(name, "query_zscore", g)] = full(
                    pair_zscores(METRICS[name].as_similarity(values), scales[g].result()[name], first, second))
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
    elif interval:
        notes.append("no human agreement band: this model's reference was not measured against labelled pairs, "
                     "so the interval columns hold only the reference uncertainty, which says nothing about how "
                     "people would rate a pair; `calibsim profile build --band-pairs FILE` measures a band")
    if interval:
        provenance["columns"].update({f: FORM_DESCRIPTIONS[f] for f in ("calibrated_lo", "calibrated_hi")})
        if bands:
            provenance["columns"].update({f: FORM_DESCRIPTIONS[f] for f in FORM_DESCRIPTIONS
                                          if f.startswith("calibrated_band")})
    if saturation:
        provenance["background_saturation"] = saturation
        worst, share = max(((k, v["share_beyond_p99"]) for k, v in saturation.items()), key=lambda kv: kv[1])
        if share > 0.05:
            name, _, g = worst.partition("@")
            notes.append(
                f"{name}{f' after {g}' if g else ''}: {share:.1%} of pairs score above the background's "
                f"99th percentile of {name}, so {score_column(name, 'bg_percentile', g or 'none')} cannot "
                f"separate them; rank them with {score_column(name, 'calibrated', g or 'none')} or "
                f"{score_column(name, 'bg_surprise', g or 'none')}")
    unreadable = unreadable_texts(embedder, texts)
    unread = side_marks(unreadable, first, second)
    blank = np.flatnonzero(scored)[unread != ""]
    for name in columns:            # unreadable: the raw score stays, nothing calibrated
        if split_score_column(name)[1] != "raw":
            columns[name][blank] = np.nan
    provenance["unreadable"] = None if unreadable is None else {
        "texts": int(unreadable.sum()), "pairs": len(blank), "why": UNREADABLE_NOTE}
    if len(blank):
        notes.append(f"{int(unreadable.sum())} texts have {UNREADABLE_NOTE}, so the model cannot read them "
                     f"and scores any two alike: their {len(blank)} pairs get no calibrated score, only the "
                     f"raw one (column {UNREADABLE_COLUMN})")
    if table.label is not None:
        provenance["agreement"] = _agreement(frame[table.label], columns)
    provenance["notes"] = notes
    if norms:
        columns[f"{table.text_a}_norm"] = full(lengths[first])
        columns[f"{table.text_b}_norm"] = full(lengths[second])
    import pandas as pd

    flags = {}
    for name, marks, what in (
            (TRUNCATED_COLUMN, truncated, f"is longer than the model's max length ({embedder.max_seq_length} "
                                          "tokens), so only its beginning was scored"),
            (UNREADABLE_COLUMN, unread, f"has {UNREADABLE_NOTE}, so the pair has no calibrated score")):
        if not (marks != "").any():
            continue
        flags[name] = np.full(len(frame), "", dtype=object)
        flags[name][scored] = marks
        while name in frame.columns:
            flags[f"calibsim_{name}"] = flags.pop(name)
            name = f"calibsim_{name}"
        provenance["columns"][name] = (f"which text of the pair {what}: a ({table.text_a}), b "
                                       f"({table.text_b}), both, or empty when neither")
    parts = [frame.reset_index(drop=True)] + ([pd.DataFrame(flags)] if flags else []) + [pd.DataFrame(columns)]
    out = pd.concat(parts, axis=1)
    return ScoredPairs(out, provenance, notes)


def _text_scales_in_background(plan, profile, vectors, texts, cache, model_key) -> dict:
    """`text_scales` of the texts' `vectors` under each geometry of `plan` (none without a query
    reference), computed in a background thread while the caller goes on (numpy and scipy
    release the GIL in the matrix work: language detection runs meanwhile); geometry -> Future."""
    if profile.query_reference is None:
        return {}

    def scales(g: str, names: list[str]) -> dict:
        return text_scales(names, profile.transformed(vectors, g), profile.transformed(profile.query_reference, g),
                           texts=texts, cache=cache, model_key=model_key)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="calibsim-scales")
    try:
        return {g: pool.submit(scales, g, names) for g, names in plan.items()}
    finally:
        pool.shutdown(wait=False)          # the thread ends when its work is done


def _agreement(labels: pd.Series, columns: dict[str, np.ndarray]) -> dict:
    """Spearman correlation (x100) of every score column with the human labels."""
    import pandas as pd

    y = pd.to_numeric(labels, errors="coerce").to_numpy()
    out = {}
    for name, values in columns.items():
        ok = np.isfinite(y) & np.isfinite(values)
        if ok.sum() > 2 and np.ptp(values[ok]) > 0 and np.ptp(y[ok]) > 0:     # else: undefined
            rho = spearman(values[ok], y[ok])
            out[name] = round(float(rho) * 100 * (1 if _higher_is_similar(name) else -1), 3)
    return {"label": labels.name, "spearman_x100": out}


def _higher_is_similar(column: str) -> bool:
    metric, form, _ = split_score_column(column)
    return form != "raw" or METRICS[metric].higher_is_similar
