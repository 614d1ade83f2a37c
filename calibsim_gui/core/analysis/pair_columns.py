"""A scored pair list's parts, one concern each: column names, the calibrated columns of a metric,
interval widths, background saturation, human columns, band provenance, long-text and content
notes, unreadable texts, flag columns and agreement with labels (`pairs.Scorer` joins them)."""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.analysis.correlation import spearman
from calibsim_gui.core.calibration.profile import FORM_DESCRIPTIONS, ReferenceProfile
from calibsim_gui.core.embedding.chunking import (
    CALIBRATION_NOTE,
    CHUNK_AGGREGATE_DESCRIPTIONS,
    TRUNCATED_COLUMN,
    chunk_window,
)
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.embedding.readability import UNREADABLE_COLUMN, UNREADABLE_NOTE, side_marks, unreadable_texts
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.geometry.transforms import GEOMETRIES

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


def run_key(metric: str, geometry: str) -> str:
    """``cosine`` or ``cosine@whiten``: a metric's key in a run's provenance."""
    return metric if geometry == "none" else f"{metric}@{geometry}"


def agreement_band_columns(band, calibrated) -> dict[str, np.ndarray]:
    """``calibrated_band80_lo`` ... ``calibrated_band95_hi`` from an `AgreementBand` (none without one)."""
    if band is None:
        return {}
    out = {}
    for rate in band.rates:
        lo, hi = band.band(calibrated, rate)
        out[f"calibrated_band{round(rate * 100)}_lo"], out[f"calibrated_band{round(rate * 100)}_hi"] = lo, hi
    return out


def metric_columns(profile: ReferenceProfile, geometry: str, metric: str, raw, languages,
                   interval: bool) -> dict[str, np.ndarray]:
    """One metric's columns over the scored pairs: raw, each calibrated form and, with
    `interval`, the calibrated score's interval and agreement band."""
    columns = {score_column(metric, "raw", geometry): raw}
    forms = profile.calibrate(metric, raw, geometry, languages=languages)
    columns.update({score_column(metric, form, geometry): values for form, values in forms.items()})
    if interval:
        reference = profile.references(geometry)[metric]
        curve = reference.calibrators["calibrated"]
        ends = curve.interval(METRICS[metric].as_similarity(raw), language=languages)
        bands = agreement_band_columns(reference.band, forms["calibrated"])
        for form, values in [*zip(("calibrated_lo", "calibrated_hi"), ends), *bands.items()]:
            columns[score_column(metric, form, geometry)] = values
    return columns


def interval_width(profile: ReferenceProfile, geometry: str, metric: str, raw) -> dict:
    """Median and 90th percentile width of the calibrated score's interval over (a sample of) the pairs."""
    similarity = METRICS[metric].as_similarity(raw)
    curve = profile.references(geometry)[metric].calibrators["calibrated"]
    sample = similarity[np.linspace(0, len(similarity) - 1, min(len(similarity), INTERVAL_SAMPLE)).astype(int)]
    widths = np.subtract(*curve.interval(sample)[::-1])
    return {"median_width": float(np.median(widths)) if len(widths) else None,
            "p90_width": float(np.quantile(widths, 0.9)) if len(widths) else None}


def saturation(profile: ReferenceProfile, geometry: str, metric: str, raw) -> dict | None:
    """Share of the pairs beyond the background's 99th percentile (None without a background)."""
    if not (profile.has_background and len(raw)):
        return None
    reference = profile.references(geometry)[metric]
    cut = reference.background.quantile(SATURATION_QUANTILE)
    return {"share_beyond_p99": float((METRICS[metric].as_similarity(raw) > cut).mean()),
            "percentile_halfwidth": reference.calibrators["bg_percentile"].halfwidth_}


def saturation_notes(saturated: dict) -> list[str]:
    """A note when over 5 % of the pairs score beyond the background's 99th percentile."""
    if not saturated:
        return []
    worst, share = max(((k, v["share_beyond_p99"]) for k, v in saturated.items()), key=lambda kv: kv[1])
    if share <= 0.05:
        return []
    name, _, g = worst.partition("@")
    return [f"{name}{f' after {g}' if g else ''}: {share:.1%} of pairs score above the background's "
            f"99th percentile of {name}, so {score_column(name, 'bg_percentile', g or 'none')} cannot "
            f"separate them; rank them with {score_column(name, 'calibrated', g or 'none')} or "
            f"{score_column(name, 'bg_surprise', g or 'none')}"]


def human_columns(human, raw: dict) -> tuple[dict[str, np.ndarray], list[dict], list[str]]:
    """``<metric>_human`` of each calibrator over the scored pairs, their provenance records and warnings."""
    columns, records, notes = {}, [], []
    for calibrator in human:
        values = METRICS[calibrator.metric].as_similarity(raw[calibrator.geometry, calibrator.metric])
        columns[score_column(calibrator.metric, "human", calibrator.geometry)] = calibrator.transform(values)
        records.append({"metric": calibrator.metric, "geometry": calibrator.geometry, "scale": calibrator.scale,
                        "model": calibrator.model, "pairs": calibrator.n_pairs_, "warnings": calibrator.warnings_})
        notes += calibrator.warnings_
    return columns, records, notes


def band_provenance(profile: ReferenceProfile, interval: bool) -> tuple[dict | None, dict, list[str]]:
    """The profile's human agreement band (``human_band``, None without one), the interval and
    band columns' descriptions, and a note when intervals were asked for without a band."""
    bands = {name: ref.band.to_dict() for name, ref in profile.metrics.items() if ref.band is not None}
    record = notes = None
    if bands:
        first = next(iter(bands.values()))
        record = {"source": first["source_"], "rates": first["rates"], "metrics": sorted(bands)}
    elif interval:
        notes = ["no human agreement band: this model's reference was not measured against labelled pairs, "
                 "so the interval columns hold only the reference uncertainty, which says nothing about how "
                 "people would rate a pair; `calibsim profile build --band-pairs FILE` measures a band"]
    forms = ()
    if interval:
        forms = ("calibrated_lo", "calibrated_hi") + tuple(f for f in FORM_DESCRIPTIONS
                                                           if bands and f.startswith("calibrated_band"))
    return record, {f: FORM_DESCRIPTIONS[f] for f in forms}, notes or []


def long_text_record(embedder, encoding, long: dict, pairs_truncated: int) -> tuple[dict, list[str]]:
    """How texts past the model's max length were handled (`long`: mode, aggregate, overlap,
    texts and chunks), and the notes saying so."""
    chunked = long["mode"] == "chunk"
    record = {**long, "pairs_truncated": pairs_truncated,
              "note": CALIBRATION_NOTE if chunked else "texts past the model's max length are scored by their beginning"}
    if chunked:
        record["window"] = chunk_window(embedder)
    prompt = embedder_prompt(embedder)
    max_length = (f"the model's max length ({embedder.max_seq_length} tokens"
                  + (f", the prompt {prompt!r} before each text included)" if prompt else ")"))
    notes = []
    if long["texts_chunked"]:
        notes.append(f"{long['texts_chunked']} texts are longer than {max_length}: each was split into "
                     f"chunks of up to {record['window']} tokens ({long['overlap']} shared by neighbours, "
                     f"{long['chunks']} chunks in all); their pairs score "
                     f"{CHUNK_AGGREGATE_DESCRIPTIONS[long['aggregate']]} ({long['aggregate']}); "
                     f"{CALIBRATION_NOTE}")
    if encoding.n_truncated and chunked:      # chunked, yet a chunk was still cut
        notes.append(f"{encoding.n_truncated} texts have a chunk that the model read as longer than "
                     f"{max_length} (read alone, its words split into more tokens), so the end of that "
                     f"chunk was not scored (column {TRUNCATED_COLUMN})")
    elif encoding.n_truncated:
        notes.append(f"{encoding.n_truncated} texts are longer than {max_length}; only their beginning "
                     "was scored"
                     + (f": {pairs_truncated} pairs have a truncated text (column {TRUNCATED_COLUMN}); "
                        "score them whole with --long-texts chunk (app: Settings > Long texts)"
                        if pairs_truncated else ""))
    return record, notes


def content_notes(first: np.ndarray, second: np.ndarray, lengths: np.ndarray) -> list[str]:
    """Notes on what was scored: every pair a text with itself; a model whose vectors (of
    `lengths`) are not unit length. `first`, `second`: the scored pairs' texts."""
    notes = []
    if len(first) and (first == second).all():
        notes.append(f"all {len(first)} pairs compare a text with itself, so each scores as "
                     "identical texts do (the top of every scale); if that is not meant, check that "
                     "the two text columns are not the same texts")
    if len(lengths) and np.abs(lengths - 1).max() > UNIT_NORM_TOLERANCE:
        notes.append(f"the model does not normalise its embeddings (lengths {lengths.min():.3g} to "
                     f"{lengths.max():.3g}): dot and euclidean mix length with direction, cosine "
                     "and angular do not")
    return notes


def blank_unreadable(embedder, texts, first, second, scored: np.ndarray,
                     columns: dict[str, np.ndarray]) -> tuple[np.ndarray, dict | None, list[str]]:
    """Blank, in place, every calibrated column of the pairs with a text the model cannot read
    (the raw score stays); returns each pair's unreadable side, the record and the note."""
    unreadable = unreadable_texts(embedder, texts)
    unread = side_marks(unreadable, first, second)
    blank = np.flatnonzero(scored)[unread != ""]
    for name in columns:
        if split_score_column(name)[1] != "raw":
            columns[name][blank] = np.nan
    record = None if unreadable is None else {"texts": int(unreadable.sum()), "pairs": len(blank),
                                              "why": UNREADABLE_NOTE}
    notes = [] if not len(blank) else [
        f"{int(unreadable.sum())} texts have {UNREADABLE_NOTE}, so the model cannot read them and scores "
        f"any two alike: their {len(blank)} pairs get no calibrated score, only the raw one "
        f"(column {UNREADABLE_COLUMN})"]
    return unread, record, notes


def flag_columns(table, embedder, scored: np.ndarray, truncated, unread) -> tuple[dict, dict[str, str]]:
    """The ``truncated`` and ``unreadable`` columns (where any pair has a mark; renamed
    ``calibsim_...`` past an input column of that name) and their descriptions."""
    flags, descriptions = {}, {}
    for name, marks, what in (
            (TRUNCATED_COLUMN, truncated, f"is longer than the model's max length ({embedder.max_seq_length} "
                                          "tokens), so only its beginning was scored"),
            (UNREADABLE_COLUMN, unread, f"has {UNREADABLE_NOTE}, so the pair has no calibrated score")):
        if not (marks != "").any():
            continue
        flags[name] = np.full(len(table.frame), "", dtype=object)
        flags[name][scored] = marks
        while name in table.frame.columns:
            flags[f"calibsim_{name}"] = flags.pop(name)
            name = f"calibsim_{name}"
        descriptions[name] = (f"which text of the pair {what}: a ({table.text_a}), b "
                              f"({table.text_b}), both, or empty when neither")
    return flags, descriptions


def agreement(label: str, values, columns: dict[str, np.ndarray]) -> dict:
    """Spearman correlation (x100) of every score column with the human scores `values` of
    column `label`: a pandas Series, or a `ColumnTable`'s list of plain decimals and empty cells
    (`light_tables` reads no other), which `float` reads as pandas does."""
    if isinstance(values, list):
        y = np.array([float(v) if v else np.nan for v in values])
    else:
        import pandas as pd

        y = pd.to_numeric(values, errors="coerce").to_numpy()
    out = {}
    for name, scores in columns.items():
        ok = np.isfinite(y) & np.isfinite(scores)
        if ok.sum() > 2 and np.ptp(scores[ok]) > 0 and np.ptp(y[ok]) > 0:     # else: undefined
            rho = spearman(scores[ok], y[ok])
            out[name] = round(float(rho) * 100 * (1 if _higher_is_similar(name) else -1), 3)
    return {"label": label, "spearman_x100": out}


def _higher_is_similar(column: str) -> bool:
    metric, form, _ = split_score_column(column)
    return form != "raw" or METRICS[metric].higher_is_similar
