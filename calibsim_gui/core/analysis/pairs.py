"""Score a pair list against a reference profile: raw scores, every calibrated form, notes and provenance."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

from calibsim_gui.core.analysis.pair_columns import (
    agreement,
    agreement_band_columns,
    band_provenance,
    blank_unreadable,
    content_notes,
    flag_columns,
    human_columns,
    interval_width,
    long_text_record,
    metric_columns,
    run_key,
    saturation,
    saturation_notes,
    score_column,
    split_score_column,
)
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS, ReferenceProfile
from calibsim_gui.core.calibration.profile_builder import with_language_ends
from calibsim_gui.core.calibration.query_scale import pair_zscores, text_scales
from calibsim_gui.core.embedding.cache import cache_key
from calibsim_gui.core.embedding.chunking import (
    DEFAULT_CHUNK_AGGREGATE,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_LONG_TEXTS,
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
from calibsim_gui.core.embedding.readability import side_marks
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.geometry.metrics import METRICS, get_metrics, pair_scores, preload_matrix_libraries
from calibsim_gui.core.geometry.transforms import GEOMETRIES, get_geometries
from calibsim_gui.core.io.csv_writer import ColumnTable
from calibsim_gui.core.io.memory import check_budget, pair_run_bytes
from calibsim_gui.core.provenance import library_versions

__all__ = ["PairChunk", "ScoredPairs", "Scorer", "agreement_band_columns", "prompt_provenance", "run_provenance",
           "score_column", "score_pairs", "split_score_column"]


@dataclass
class ScoredPairs:
    """Input rows with raw and calibrated scores, provenance and plain-language notes."""

    frame: pd.DataFrame | ColumnTable          # a ColumnTable for a file read by `light_pair_table`
    provenance: dict
    notes: list[str] = field(default_factory=list)


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


class Scorer:
    """Scores pair tables against a reference profile, scikit-learn style: settings here, checked
    at once; `score` and `iter_score` run them; what a run learns ends in ``_``.

    A run never changes `profile`: the unrelated ends it measures for the pairs' languages go to
    a new profile, `profile_`, which a caller keeps (or not) explicitly.

    Parameters
    ----------
    embedder
        The model.
    profile : ReferenceProfile
        Its references (`profile.check_model` must accept the model and its prompt).
    metrics : sequence of str or None
        Metrics to score; None: every metric the profile has references for.
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
    cache : EmbeddingCache or None
        Where texts' vectors (and query scales) are kept between runs.
    batch_size : int, optional
        Texts per model call (default: `calibsim_gui.core.embedding.encoding.default_batch_size`,
        64 on a CPU, 256 on a GPU).
    chunk_pairs : int, default 512
        Pairs per `PairChunk` that `iter_score` yields.
    memory_budget : int or None
        Bytes a run may hold at once (None: `calibsim_gui.core.io.memory.default_budget()`).
    long_texts : {"truncate", "chunk"}, default "truncate"
        Texts past the model's max length: "truncate" scores their beginning and adds a
        ``truncated`` column ("a", "b", "both" or empty) when any pair has one; "chunk" splits
        them into windows of the model's length sharing `chunk_overlap` tokens and scores such a
        pair by the `chunk_aggregate` ("max", "mean" or "match") of its chunk-pair scores,
        calibrated as any raw score. See `calibsim_gui.core.embedding.chunking`.

    Attributes
    ----------
    plan_ : dict geometry -> list of str
        The metrics scored under each geometry: those requested that the profile has references for.
    profile_ : ReferenceProfile
        After a run: `profile` with the language ends the run measured (`profile` itself when
        it had them all).

    Raises
    ------
    InputError, ProfileError
        Settings this model and profile cannot score.
    """

    def __init__(self, embedder, profile: ReferenceProfile, *, metrics=None, geometry="none", human=(),
                 norms: bool = False, interval: bool = False, cache=None, batch_size: int | None = None,
                 chunk_pairs: int = 512, memory_budget: int | None = None, long_texts: str = DEFAULT_LONG_TEXTS,
                 chunk_aggregate: str = DEFAULT_CHUNK_AGGREGATE, chunk_overlap: int = DEFAULT_CHUNK_OVERLAP):
        if chunk_pairs < 1:
            raise ValueError(f"chunk_pairs must be at least 1, not {chunk_pairs}")
        profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
        check_long_texts(long_texts, chunk_aggregate, chunk_overlap)
        self.embedder, self.profile, self.metrics, self.geometry = embedder, profile, metrics, geometry
        self.human, self.norms, self.interval, self.cache = list(human), norms, interval, cache
        self.batch_size, self.chunk_pairs, self.memory_budget = batch_size, chunk_pairs, memory_budget
        self.long_texts, self.chunk_aggregate, self.chunk_overlap = long_texts, chunk_aggregate, chunk_overlap
        self.plan_, self._plan_notes = _plan(profile, geometry, metrics)
        _check_human(self.human, self.plan_, embedder)

    def score(self, table, should_stop=None, progress=None) -> ScoredPairs:
        """Score every pair of `table` (a `PairTable`) with every metric and calibration.

        Output columns are the input columns unchanged plus ``<metric>_<form>`` for each metric
        and form ("raw", then the profile's calibrated forms, then "query_zscore" when the profile
        has a background sample). Rows with an empty text keep NaN scores.
        `progress(done, total, message)` is called after each chunk of scored pairs.
        """
        steps = self.iter_score(table, should_stop)
        while True:
            try:
                chunk = next(steps)
            except StopIteration as end:
                return end.value
            if progress is not None:
                progress(chunk.done, chunk.total, f"scored {chunk.done} of {chunk.total} pairs")

    def iter_score(self, table, should_stop=None):
        """Score `table` (a `PairTable`), yielding partial scores; see `score` for the output.

        The distinct texts of the whole run are encoded together, each once, in batches of similar
        token counts (`calibsim_gui.core.embedding.encoding.iter_encode`: little padding). Whenever
        `chunk_pairs` more pairs have both texts encoded (and once at the end), their raw scores are
        yielded as a `PairChunk` (for live plots and progress); the return value is the `ScoredPairs`.

        Raises
        ------
        Cancelled
            When `should_stop()` returns True (checked before every batch).
        InputError
            Before any work, when the run's memory estimate exceeds `memory_budget`.
        """
        embedder, profile, plan = self.embedder, self.profile, self.plan_
        scored, distinct, first, second = _pair_texts(table)
        rows, n_texts = np.flatnonzero(scored), len(distinct)
        run_bytes = self._check_memory(len(rows), n_texts)
        chunked = self.long_texts == "chunk"
        # the pieces the model reads: each distinct text, or (--long-texts chunk) each of its chunks
        pieces = split_texts(embedder, distinct, overlap=self.chunk_overlap, memory_budget=self.memory_budget,
                             run_bytes=run_bytes, path=table.path) if chunked else None
        sizes = (np.fromiter(map(len, pieces), dtype=np.int64, count=n_texts) if chunked
                 else np.ones(n_texts, dtype=np.int64))
        starts = np.cumsum(sizes) - sizes              # each text's first piece among all pieces
        steps = iter_encode(embedder, [p for text_pieces in pieces for p in text_pieces] if chunked else distinct,
                            batch_size=self.batch_size, cache=self.cache, should_stop=should_stop,
                            memory_budget=self.memory_budget, run_bytes=run_bytes, path=table.path)
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
                    scores = aggregate_pair_scores(vectors_of(a), vectors_of(b), names, self.chunk_aggregate,
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
            while emitted < ready and (ready - emitted >= self.chunk_pairs or ready == len(rows)):
                chosen = np.sort(order[emitted:emitted + self.chunk_pairs])
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
        encoding, vectors, long = self._encoding(pieces, result, n_texts)
        return self._assemble(table, scored, encoding, list(distinct), vectors, first, second, raw, long)

    def _check_memory(self, n_pairs: int, n_texts: int) -> int:
        """The run's memory estimate (bytes), refused (InputError) past `memory_budget`."""
        per_metric = 1 + len(self.profile.forms()) + (self.profile.query_reference is not None)
        n_columns = ((per_metric + 6 * self.interval) * sum(map(len, self.plan_.values()))
                     + len(self.human) + 2 * self.norms)
        run_bytes = pair_run_bytes(n_pairs, n_texts, self.embedder.dimension, n_columns, len(self.plan_))
        check_budget(run_bytes, self.memory_budget, what=f"scoring {n_pairs:,} pairs ({n_texts:,} distinct texts)",
                     fix="split the pairs file into parts or choose fewer metrics")
        return run_bytes

    def _encoding(self, pieces, result, n_texts: int) -> tuple[EncodingResult, np.ndarray, dict]:
        """The run's encoding counts, each distinct text's vector, and how long texts were handled."""
        chunked = pieces is not None
        combined = combine_chunks(pieces, result) if chunked else None
        encoded = combined.encoding if chunked else result
        encoding = EncodingResult(np.empty((0, self.embedder.dimension)), n_texts, encoded.n_cached,
                                  encoded.n_truncated, encoded.truncated)
        long = {"mode": self.long_texts, "aggregate": self.chunk_aggregate, "overlap": self.chunk_overlap,
                "texts_chunked": len(combined.chunks) if chunked else 0,
                "chunks": combined.n_chunks if chunked else 0}
        return encoding, encoded.embeddings, long

    def _assemble(self, table, scored, encoding, texts, vectors, first, second, raw, long) -> ScoredPairs:
        """Calibrate the raw scores (with the ends of the pairs' languages, measured into
        `profile_`) and put table, columns, provenance and notes together."""
        embedder, profile, cache = self.embedder, self.profile, self.cache
        notes = list(table.notes) + self._plan_notes + profile.warnings(precision=embedder_precision(embedder))
        # a chunked text's scale comes from its mean chunk vector: kept apart in the cache
        scales_key = cache_key(embedder) + (f"|chunked-{chunk_window(embedder)}-{long['overlap']}"
                                            if long["texts_chunked"] else "")
        scales = _text_scales_in_background(self.plan_, profile, vectors, texts, cache, scales_key)
        language_record, language_notes = run_languages(          # core/embedding/languages.py
            texts, profile.provenance, model_folder=getattr(getattr(embedder, "info", None), "path", None),
            pairs=(first, second, np.flatnonzero(scored)))
        languages, language_record["assigned"] = pair_languages(texts, first, second)
        notes += language_notes + assigned_note(language_record["assigned"])
        self.profile_ = with_language_ends(profile, embedder, sorted(set(languages.tolist())), cache=cache)
        provenance = run_provenance(embedder, self.profile_, encoding, tuple(self.plan_))
        provenance["pairs"] = {"file": str(table.path), "rows": len(table.frame), "scored": int(scored.sum())}
        provenance["languages"] = language_record
        truncated = side_marks(encoding.truncated, first, second)
        provenance["long_texts"], long_notes = long_text_record(embedder, encoding, long, int((truncated != "").sum()))
        lengths = np.linalg.norm(vectors, axis=1)
        notes += long_notes + content_notes(first, second, lengths)

        def full(values):
            out = np.full(len(table.frame), np.nan)
            out[scored] = values
            return out

        columns, intervals, saturated = self._score_columns(raw, languages, scales, first, second)
        human, records, human_notes = human_columns(self.human, raw)
        columns = {name: full(values) for name, values in {**columns, **human}.items()}
        if records:
            provenance["columns"]["human"] = FORM_DESCRIPTIONS["human"]
            provenance["human"] = records
        notes += human_notes
        provenance.update(self._summary(scored, languages, intervals))
        band, band_columns, band_notes = band_provenance(self.profile_, self.interval)
        if band is not None:
            provenance["human_band"] = band
        provenance["columns"].update(band_columns)
        notes += band_notes
        if saturated:
            provenance["background_saturation"] = saturated
        notes += saturation_notes(saturated)
        unread, provenance["unreadable"], unread_notes = blank_unreadable(embedder, texts, first, second, scored,
                                                                          columns)
        notes += unread_notes
        if table.label is not None:
            provenance["agreement"] = agreement(table.label, table.frame[table.label], columns)
        provenance["notes"] = notes
        if self.norms:
            columns[f"{table.text_a}_norm"] = full(lengths[first])
            columns[f"{table.text_b}_norm"] = full(lengths[second])
        flags, descriptions = flag_columns(table, embedder, scored, truncated, unread)
        provenance["columns"].update(descriptions)
        return ScoredPairs(_joined(table.frame, flags, columns), provenance, notes)

    def _score_columns(self, raw, languages, scales, first, second) -> tuple[dict, dict, dict]:
        """Every metric's columns over the scored pairs (raw, calibrated, intervals, query
        z-scores), its interval widths and its background saturation, by `run_key`."""
        columns, intervals, saturated = {}, {}, {}
        for g, names in self.plan_.items():
            for name in names:
                values = raw[g, name]
                columns.update(metric_columns(self.profile_, g, name, values, languages, self.interval))
                intervals[run_key(name, g)] = interval_width(self.profile_, g, name, values)
                if g in scales:
                    columns[score_column(name, "query_zscore", g)] = pair_zscores(
                        METRICS[name].as_similarity(values), scales[g].result()[name], first, second)
                if (share := saturation(self.profile_, g, name, values)) is not None:
                    saturated[run_key(name, g)] = share
        return columns, intervals, saturated

    def _summary(self, scored, languages, intervals) -> dict:
        """The run's interval widths and the pairs calibrated with each language's end."""
        used = {code: int(n) for code, n in zip(*np.unique(languages[languages != ""], return_counts=True))
                if code in self.profile_.provenance["scale"]["languages"]}
        return {"calibrated_interval": {"what": "reference uncertainty: the calibrated score's spread when "
                                        "the reference sentences are resampled", "confidence": 0.95,
                                        "per_metric": intervals},
                "reference_languages": {"en": int(scored.sum()) - sum(used.values()), **used}}


def _pair_texts(table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which rows of `table` are scored (no empty text), the distinct texts of their pairs, and
    each scored pair's two texts as positions among them."""
    frame = table.frame
    scored = np.ones(len(frame), dtype=bool)
    scored[list(table.empty_rows)] = False
    rows = np.flatnonzero(scored)
    texts_a = np.asarray(frame[table.text_a], dtype=object)[rows]
    texts_b = np.asarray(frame[table.text_b], dtype=object)[rows]
    distinct = np.array(list(dict.fromkeys(np.concatenate([texts_a, texts_b]).tolist())), dtype=object)
    index = {t: i for i, t in enumerate(distinct)}
    first = np.fromiter((index[t] for t in texts_a), dtype=np.int64, count=len(rows))
    second = np.fromiter((index[t] for t in texts_b), dtype=np.int64, count=len(rows))
    return scored, distinct, first, second


def _joined(frame, flags: dict, columns: dict) -> pd.DataFrame | ColumnTable:
    """The input rows, then the flag columns, then the score columns (a `ColumnTable` of one)."""
    if isinstance(frame, ColumnTable):
        return ColumnTable(frame.items + list(flags.items()) + list(columns.items()))
    import pandas as pd

    parts = [frame.reset_index(drop=True)] + ([pd.DataFrame(flags)] if flags else []) + [pd.DataFrame(columns)]
    return pd.concat(parts, axis=1)


def score_pairs(table, embedder, profile: ReferenceProfile, *, progress=None, should_stop=None,
                **settings) -> ScoredPairs:
    """Score every pair of `table` in one call: ``Scorer(embedder, profile, **settings).score(table)``."""
    return Scorer(embedder, profile, **settings).score(table, should_stop, progress)


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
