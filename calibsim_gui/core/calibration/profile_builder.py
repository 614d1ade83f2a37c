"""Building reference profiles from a background corpus and an anchor ladder.

`build_profile` builds one on this machine; `calibsim_gui.core.calibration.cluster` computes the background
part on a Ray cluster. Both draw the same pairs (`background.key_pairs`), fit the geometry fixes
from the background's moments and hand a `BackgroundStatistics` to `assemble_profile`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from calibsim_gui.core.calibration.calibrators import (
    HUMAN_SHIFT,
    MIN_BACKGROUND_PAIRS,
    AgreementBand,
)
from calibsim_gui.core.calibration.profile import (
    UPGRADABLE_SCHEMAS,
    GeometryReference,
    MetricReference,
    ReferenceProfile,
)
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.calibration.sketch import ScoreSketch
from calibsim_gui.core.embedding.devices import embedder_engine, embedder_precision
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.languages import summarise_texts
from calibsim_gui.core.embedding.model_folders import ModelFingerprint
from calibsim_gui.core.embedding.prompts import embedder_prompt
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.geometry.background import (
    PAIR_SCHEME,
    QUERY_SCHEME,
    key_pairs,
    query_sample,
    text_keys,
)
from calibsim_gui.core.geometry.metrics import METRICS, pair_scores
from calibsim_gui.core.geometry.transforms import (
    GEOMETRIES,
    GeometryTransform,
    apply_geometry,
    decode_array,
    embedding_moments,
    fit_geometries_from_moments,
)
from calibsim_gui.core.io.inputs import DocumentSet
from calibsim_gui.core.io.memory import check_budget, profile_build_bytes
from calibsim_gui.core.io.output import dump_json
from calibsim_gui.core.provenance import file_digest, library_versions
from calibsim_gui.core.references.anchors import AnchorSet, builtin_anchors
from calibsim_gui.core.references.reference_scale import (
    N_RESAMPLES,
    REFERENCE_LANGUAGES,
    identical_score,
    reference_file,
    reference_sentences,
    unrelated_medians,
)
from calibsim_gui.core.resources import resource_path


@dataclass
class BackgroundStatistics:
    """What a profile keeps of a background corpus, however and wherever it was computed.

    Attributes
    ----------
    sentences : int
        Distinct background sentences.
    pairs : int
        Background pairs scored.
    truncated : int
        Sentences longer than the model's max sequence length.
    transforms : dict of str to GeometryTransform
        Geometry fixes fitted on every background sentence.
    sketches : dict of str to dict of str to ScoreSketch
        Geometry ("none" or a fix) -> metric -> distribution of the pairs' similarities.
    query_reference : ndarray of shape (k, dim), float32
        Embeddings of the `background.query_sample` texts.
    provenance : dict
        Top-level provenance entries naming how it was computed (``{"engine": "local"}``, ...).
    languages : dict or None
        `languages.summarise_texts` of the sentences (None: not detected).
    """

    sentences: int
    pairs: int
    truncated: int
    transforms: dict[str, GeometryTransform]
    sketches: dict[str, dict[str, ScoreSketch]]
    query_reference: np.ndarray
    provenance: dict = field(default_factory=lambda: {"engine": "local"})
    languages: dict | None = None


def is_builtin_ladder(anchors: AnchorSet) -> bool:
    """True when `anchors` holds exactly the built-in ladder's levels and pairs (whatever its name)."""
    def content(ladder):
        d = ladder.to_dict()
        return d["levels"], d["pairs"]

    return content(anchors) == content(builtin_anchors())


def anchors_provenance(anchors: AnchorSet) -> dict:
    """What a profile records of its ladder: its name, size, sha256 (of its JSON) and whether it is
    the built-in one; an edited ladder keeps the built-in name, so it is named as edited."""
    builtin = is_builtin_ladder(anchors)
    digest = hashlib.sha256(dump_json(anchors.to_dict()).encode("utf-8")).hexdigest()
    return {"name": anchors.name if builtin else f"{anchors.name}, edited (not the built-in ladder)",
            "builtin": builtin, "levels": len(anchors.levels), "pairs": len(anchors.pairs),
            "sha256": digest}


def _anchor_embeddings(embedder, anchors: AnchorSet, **encode_options) -> list[np.ndarray]:
    """Embeddings of the anchor pairs' first texts and of their second texts."""
    texts = [p.text_a for p in anchors.pairs] + [p.text_b for p in anchors.pairs]
    return np.split(encode_texts(embedder, texts, **encode_options).embeddings, 2)


LANGUAGE_RESAMPLES, LANGUAGE_RESAMPLED_PAIRS = 50, 5000
"""Resamples of another language's unrelated end, and the pairs they are taken over (fewer than
English's: a run may measure several languages on the fly)."""


def encode_references(embedder, settings: ProfileSettings, **encode_options
                      ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """What a profile of `settings` encodes besides its background: the anchor pairs' first and
    second texts, and calibsim's reference sentences per language (`reference_embeddings`)."""
    anchor_a, anchor_b = _anchor_embeddings(embedder, settings.anchors or builtin_anchors(), **encode_options)
    return anchor_a, anchor_b, reference_embeddings(embedder, ("en", *settings.languages), **encode_options)


def reference_embeddings(embedder, languages=("en",), **encode_options) -> dict[str, np.ndarray]:
    """Embeddings of calibsim's reference sentences in each of `languages` ("en" or codes of
    `REFERENCE_LANGUAGES`)."""
    return {code: encode_texts(embedder, reference_sentences(code), **encode_options).embeddings
            for code in languages}


def _language_ends(reference: dict[str, np.ndarray], metric: str, identical: float) -> dict[str, np.ndarray]:
    """The unrelated end of `metric` in each non-English language of `reference`.

    A language whose unrelated pairs outscore the (English) anchor texts with themselves, as dot
    products of longer vectors can, is left out: its pairs keep the English end rather than an
    inverted scale."""
    ends = {code: unrelated_medians(x, metric, n_resamples=LANGUAGE_RESAMPLES,
                                    resampled_pairs=LANGUAGE_RESAMPLED_PAIRS)
            for code, x in reference.items() if code != "en"}
    return {code: v for code, v in ends.items() if identical > v.max()}


def _language_provenance(reference: dict[str, np.ndarray]) -> dict:
    return {code: {"sentences": len(x), "sha256": file_digest(reference_file(code))}
            for code, x in reference.items() if code != "en"}


def with_language_ends(profile: ReferenceProfile, embedder, languages, **encode_options) -> ReferenceProfile:
    """A new profile: `profile` with the unrelated end of each of `languages` (codes of
    `REFERENCE_LANGUAGES`; others are ignored) that it has not measured yet, for every metric of
    the model's own embeddings, and their calibrated scales refitted. `profile` is never changed
    (it is returned itself when it has every end already).

    `encode_options` go to `encode_texts` (the sentences are cached like any text).
    """
    scale = profile.provenance.get("scale", {})
    measured = scale.get("languages", {})
    missing = [code for code in dict.fromkeys(languages) if code in REFERENCE_LANGUAGES and code not in measured]
    if not missing and "languages" in scale:
        return profile
    metrics, ends = profile.metrics, {}
    if missing:
        profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
        reference = reference_embeddings(embedder, missing, **encode_options)
        metrics = {name: _with_ends(ref, _language_ends(reference, name, ref.identical), profile.anchors)
                   for name, ref in profile.metrics.items()}
        ends = _language_provenance(reference)
    provenance = {**profile.provenance, "scale": {**scale, "languages": {**measured, **ends}}}
    return replace(profile, metrics=metrics, provenance=provenance)


def _with_ends(ref: MetricReference, ends: dict[str, np.ndarray], anchors: AnchorSet) -> MetricReference:
    """A copy of `ref` with more languages' unrelated `ends` and its calibrated scale refitted."""
    out = replace(ref, calibrators=dict(ref.calibrators), unrelated_by_language={**ref.unrelated_by_language, **ends})
    out.refit_scale(anchors)
    return out


def _metric_references(a, b, reference: dict[str, np.ndarray], metrics, transform=None,
                       backgrounds=None) -> dict[str, MetricReference]:
    """Unfitted references of `metrics` under `transform`: anchor pair scores (`a`, `b`), the
    scale's ends (`reference` sentence embeddings per language, anchor texts with themselves),
    backgrounds."""
    a, b = apply_geometry(transform, a), apply_geometry(transform, b)
    reference = {code: apply_geometry(transform, x) for code, x in reference.items()}
    scores, texts = _similarities(a, b, metrics), np.concatenate([a, b])
    out = {}
    for m in metrics:
        identical = identical_score(texts, m)
        # the fixes are fitted on the (English) background: under them, the English end
        out[m] = MetricReference(scores[m], unrelated_medians(reference["en"], m), identical,
                                 None if backgrounds is None else backgrounds[m],
                                 unrelated_by_language={} if transform is not None else
                                 _language_ends(reference, m, identical))
    return out


def _scale_provenance(reference: dict[str, np.ndarray]) -> dict:
    return {"unrelated": f"median of all pairs of calibsim's {len(reference['en'])} reference sentences, "
                         "in the language of the pair where calibsim has sentences in it",
            "identical": "a text with itself", "resamples": N_RESAMPLES,
            "human_shift": {"value": HUMAN_SHIFT, "fitted_on": "STS-B train+dev and SICK-R train+dev "
                            "(all-MiniLM-L6-v2), each source weighted equally"},
            "sentences_sha256": file_digest(reference_file()),
            "languages": _language_provenance(reference)}


def _similarities(a: np.ndarray, b: np.ndarray, metrics, pairs=None) -> dict[str, np.ndarray]:
    """Pair scores of row-aligned embeddings (or of `pairs` of rows: see `pair_scores`),
    "higher = more similar"."""
    return {name: METRICS[name].as_similarity(values)
            for name, values in pair_scores(a, b, metrics, pairs).items()}


def pair_sketches(embeddings: np.ndarray, first, second, metrics, transforms: dict[str, GeometryTransform],
                  fixed_metrics) -> dict[str, dict[str, ScoreSketch]]:
    """Sketches of background pairs: `metrics` on the embeddings, `fixed_metrics` under each fix.

    Pair i is rows ``first[i]`` and ``second[i]`` of `embeddings` (n_texts, dim). Each fix
    transforms each row the pairs use once, not once per pair (200,000 pairs of 42,817 sentences:
    a tenth of the rows). Sketches of chunks of the pairs merge (`ScoreSketch.merge`) into the
    sketches of all of them.
    """
    first, second = np.asarray(first), np.asarray(second)
    used, inverse = np.unique(np.concatenate([first, second]), return_inverse=True)
    rows, pairs = embeddings[used], (inverse[:len(first)], inverse[len(first):])
    sketches = {"none": {m: ScoreSketch.of(v) for m, v in _similarities(rows, rows, metrics, pairs).items()}}
    for fix, transform in transforms.items():
        fixed = transform.transform(rows)
        scores = _similarities(fixed, fixed, fixed_metrics, pairs)
        sketches[fix] = {m: ScoreSketch.of(v) for m, v in scores.items()}
    return sketches


def build_profile(embedder, background=None, settings: ProfileSettings | None = None, *, cache=None,
                  batch_size: int | None = None, progress=None, should_stop=None,
                  memory_budget: int | None = None) -> ReferenceProfile:
    """Encode anchors (and a background corpus) and fit every calibrator.

    Parameters
    ----------
    background : DocumentSet, list of str or None
        Background sentences (duplicates are used once); None builds an anchors-only profile
        (no geometry fixes). A `DocumentSet`'s files (full path, name, sha256) and the column
        read from each table file are recorded in the provenance.
    settings : ProfileSettings or None
        What to build (None: the defaults).
    progress, should_stop : see `encode_texts`.
    memory_budget : int or None
        Bytes the build may hold (None: the default budget); a larger background raises
        InputError before anything is encoded.
    """
    settings = settings or ProfileSettings()
    n_pairs, seed, metrics = settings.n_pairs, settings.seed, list(settings.metrics)
    documents = background if isinstance(background, DocumentSet) else None
    background_texts = documents.texts if documents is not None else background
    options = dict(cache=cache, batch_size=batch_size, should_stop=should_stop)
    statistics = encoded = None
    if background_texts is not None:
        texts = list(dict.fromkeys(background_texts))
        pairs = min(n_pairs, len(texts) * (len(texts) - 1) // 2)
        check_budget(profile_build_bytes(len(texts), embedder.dimension, pairs), memory_budget,
                     what=f"a background of {len(texts):,} sentences and {pairs:,} pairs",
                     fix="use a sample of the corpus or fewer pairs (--pairs), or build on several "
                         "machines with --engine ray")
        keys = text_keys(texts, seed)
        first, second = key_pairs(keys, n_pairs)
        if len(texts) < 3:
            raise ProfileError("the background corpus needs at least three distinct sentences.")
        if len(first) < 2:      # before anything is encoded
            raise InputError(f"{n_pairs:,} background pair{'s' * (n_pairs != 1)} cannot make a background: at least "
                             f"2 are needed ({len(texts):,} distinct sentences are there to draw them from).",
                             fix="ask for more --pairs (the default is 20,000; the upper tail is fitted on the "
                                 "top 5 %, at least 20 pairs)")
        # every text is encoded before the CPU's work on the pairs: no pause between encodings
        encoded = encode_references(embedder, settings, progress=progress, **options)
        encoding = encode_texts(embedder, texts, progress=progress, **options)
        emb = encoding.embeddings
        transforms = fit_geometries_from_moments(embedding_moments(emb), settings.fixes, settings.geometry_settings)
        statistics = BackgroundStatistics(
            len(texts), len(first), encoding.n_truncated, transforms,
            pair_sketches(emb, first, second, metrics, transforms, settings.fixed_metrics),
            emb[query_sample(keys)], languages=summarise_texts(texts))
    sources = documents.files if documents is not None else ()
    profile = assemble_profile(embedder, statistics, settings,
                               files=[{"name": Path(s).name, "path": str(Path(s).resolve()),
                                       "sha256": file_digest(s)} for s in sources],
                               encoded=encoded, progress=progress, **options)
    if "background" in profile.provenance:
        profile.provenance["background"]["clean_html"] = bool(settings.clean_html)
        if documents is not None and documents.text_columns:        # which column of each table file
            profile.provenance["background"]["text_columns"] = {
                str(file): str(column) for file, column, *_ in documents.text_columns}
    return profile


def assemble_profile(embedder, background: BackgroundStatistics | None, settings: ProfileSettings, *,
                     files=(), encoded=None, **encode_options) -> ReferenceProfile:
    """A profile from background statistics and the anchors with its provenance.

    `background` was computed with `settings`; `files` are the background sources as
    ``{"name", "sha256"}`` (or ``{"path"}``) entries; `encoded` is `encode_references` of
    `settings` if already encoded (None: encoded here, `encode_options` going to `encode_texts`).
    """
    anchors, metrics = settings.anchors or builtin_anchors(), list(settings.metrics)
    fixed_metrics, seed = settings.fixed_metrics, settings.seed
    anchor_a, anchor_b, reference = encoded or encode_references(embedder, settings, **encode_options)
    references = _metric_references(anchor_a, anchor_b, reference, metrics,
                                    backgrounds=background and background.sketches["none"])
    provenance = {
        "name": settings.name or "anchors only",
        **(background.provenance if background else {"engine": "local"}),
        "model": {**embedder.fingerprint.to_dict(), "engine": embedder_engine(embedder),
                  "precision": embedder_precision(embedder), **_prompt_provenance(embedder)},
        "anchors": anchors_provenance(anchors),
        "scale": _scale_provenance(reference),
        "versions": library_versions(),
    }
    geometry_references = {}
    query_reference = None
    if background is not None:
        for fix, transform in background.transforms.items():
            fixed = _metric_references(anchor_a, anchor_b, reference, fixed_metrics, transform,
                                       background.sketches[fix])
            geometry_references[fix] = GeometryReference(
                transform, {m: ref.fit(anchors) for m, ref in fixed.items()})
        query_reference = background.query_reference
        provenance["background"] = {
            "files": list(files), "sentences": background.sentences, "pairs": background.pairs,
            "seed": seed, "truncated": background.truncated,
            "pair_scheme": PAIR_SCHEME, "query_reference": QUERY_SCHEME,
        }
        if background.languages is not None:
            provenance["background"]["languages"] = background.languages
        if geometry_references:
            provenance["geometries"] = {
                "fitted_on_sentences": background.sentences, "metrics": fixed_metrics,
                "fixes": {fix: {"description": GEOMETRIES[fix].description,
                                "settings": ref.transform.get_params(),
                                "warning": getattr(ref.transform, "warning_", None)}
                          for fix, ref in geometry_references.items()},
            }
        if background.pairs < MIN_BACKGROUND_PAIRS:
            provenance["warning"] = (f"only {background.pairs} background pairs (< "
                                     f"{MIN_BACKGROUND_PAIRS}); percentiles are coarse")
    for ref in references.values():
        ref.fit(anchors)
    return ReferenceProfile(embedder.fingerprint, int(embedder.dimension), anchors, references,
                            query_reference, provenance, geometry_references)


def with_anchors(profile: ReferenceProfile, embedder, anchors: AnchorSet, *, metrics=None,
                 **encode_options) -> ReferenceProfile:
    """A copy of `profile` whose ladder is refitted on `anchors` (backgrounds unchanged).

    `encode_options` go to `encode_texts` (cache, batch_size, should_stop).
    """
    profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
    names = list(profile.metrics) if metrics is None else metrics
    a, b = _anchor_embeddings(embedder, anchors, **encode_options)

    def refit(old: dict[str, MetricReference], transform) -> dict[str, MetricReference]:
        kept = [name for name in names if name in old]
        a_t, b_t = apply_geometry(transform, a), apply_geometry(transform, b)
        scores, texts = _similarities(a_t, b_t, kept), np.concatenate([a_t, b_t])
        return {name: MetricReference(scores[name], old[name].unrelated, identical_score(texts, name),
                                      old[name].background, unrelated_by_language=old[name].unrelated_by_language,
                                      band=old[name].band).fit(anchors) for name in kept}

    geometries = {fix: GeometryReference(ref.transform, refit(ref.metrics, ref.transform))
                  for fix, ref in profile.geometries.items()}
    provenance = {**profile.provenance, "anchors": anchors_provenance(anchors)}
    return ReferenceProfile(profile.fingerprint, profile.dimension, anchors,
                            refit(profile.metrics, None), profile.query_reference, provenance,
                            {fix: ref for fix, ref in geometries.items() if ref.metrics})


def add_agreement_bands(profile: ReferenceProfile, bands: dict, provenance: dict | None = None) -> ReferenceProfile:
    """`profile` (just made, changed in place) with `bands` ({metric: AgreementBand} measured with
    its model) on the metrics that have none; `provenance` is the bands' ``human_band`` record."""
    added = False
    for name, band in bands.items():
        ref = profile.metrics.get(name)
        if ref is not None and ref.band is None and band.model_ == profile.fingerprint.id:
            ref.band, added = band, True
    if added and provenance:
        profile.provenance["human_band"] = provenance
    return profile


def keep_agreement_bands(profile: ReferenceProfile, previous: ReferenceProfile | None) -> ReferenceProfile:
    """`profile` (just made) with `previous`'s human agreement bands on each metric whose calibrated
    scale is the same in both: a band says where people's scores fall around a calibrated score,
    so it holds as long as that scale does (a background built with the built-in model keeps the
    built-in band)."""
    if previous is None or previous.fingerprint != profile.fingerprint:
        return profile
    same = {name: old.band for name, old in previous.metrics.items()
            if old.band is not None and name in profile.metrics
            and profile.metrics[name].calibrators["calibrated"].to_dict() == old.calibrators["calibrated"].to_dict()}
    return add_agreement_bands(profile, same, previous.provenance.get("human_band"))


def upgrade_profile(d: dict, embedder, **encode_options) -> ReferenceProfile:
    """A current profile from a calibsim 0.1 or 0.2 (schema 1 or 2) profile's JSON `d`.

    Backgrounds, geometry fixes and the query sample are kept; the ends of the calibrated scale
    are measured with `embedder` (the anchors and reference sentences are encoded) and every
    calibrator is refitted. `encode_options` go to `encode_texts`.
    """
    version = d.get("schema_version") if isinstance(d, dict) else None
    if type(version) is not int or version not in UPGRADABLE_SCHEMAS:
        raise ProfileError("only profiles made by calibsim 0.1 or 0.2 (schema version 1 or 2) need upgrading.")
    try:
        fingerprint = ModelFingerprint.from_dict(d["model"])
        anchors = AnchorSet.from_dict(d["anchors"])

        def sketches(metrics: dict) -> dict:
            return {n: None if m.get("background") is None else ScoreSketch.from_dict(m["background"])
                    for n, m in metrics.items()}

        parts = {"none": (None, sketches(d["metrics"]))}
        parts.update({name: (GeometryTransform.from_dict(g["transform"]), sketches(g["metrics"]))
                      for name, g in d.get("geometries", {}).items()})
        query = None if d.get("query_reference") is None else decode_array(d["query_reference"])
        dimension, old_provenance = int(d["model"]["dimension"]), d.get("provenance", {})
        if not isinstance(old_provenance, dict):
            raise ValueError("the provenance is not a JSON object")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProfileError(f"the profile is damaged or hand-edited ({exc!r}); rebuild it with "
                           "`calibsim profile build`.") from None
    if fingerprint.digest != embedder.fingerprint.digest:
        raise ProfileError(f"the profile was built with model {fingerprint.id}; upgrade it with that "
                           "model (--model).")
    a, b = _anchor_embeddings(embedder, anchors, **encode_options)
    reference = reference_embeddings(embedder, **encode_options)
    fitted = {name: {m: ref.fit(anchors) for m, ref in
                     _metric_references(a, b, reference, list(bgs), transform, bgs).items()}
              for name, (transform, bgs) in parts.items()}
    provenance = {**old_provenance, "scale": _scale_provenance(reference),
                  "model": {**fingerprint.to_dict(), "engine": embedder_engine(embedder),
                            "precision": embedder_precision(embedder), **_prompt_provenance(embedder)},
                  "upgraded": {
        "from_schema": d["schema_version"], "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": library_versions()}}
    profile = ReferenceProfile(fingerprint, dimension, anchors, fitted.pop("none"), query, provenance,
                               {name: GeometryReference(parts[name][0], refs) for name, refs in fitted.items()})
    return ReferenceProfile.from_dict(profile.to_dict())        # the loader's checks, once


def _prompt_provenance(embedder) -> dict:
    """The prompt the references were encoded with (`ReferenceProfile.prompt`) and its name."""
    prompts = getattr(embedder, "prompts", None)
    return {"prompt": embedder_prompt(embedder), "prompt_name": getattr(prompts, "name", None)}


def builtin_profile_path(model_name: str) -> Path:
    return resource_path("profiles", f"{model_name}.calibsim-profile")


def default_profile(embedder, **options) -> ReferenceProfile:
    """The built-in reference for `embedder`.

    The built-in model has a shipped background profile; any other model gets the built-in
    anchor ladder, encoded with it (anchors only, no background).
    """
    path = builtin_profile_path(embedder.fingerprint.name)
    if path.exists():
        profile = ReferenceProfile.load(path)
        if profile.fingerprint.digest == embedder.fingerprint.digest \
                and profile.prompt == embedder_prompt(embedder):
            return profile
    return build_profile(embedder, None, **options)


def fit_agreement_bands(profile: ReferenceProfile, embedder, texts_a, texts_b, human, *,
                        source: dict, groups=None, **encode_options) -> ReferenceProfile:
    """`profile` with a human agreement band on every metric's calibrated scale (geometry
    "none"), measured on labelled pairs that the scale was not fitted on.

    Parameters
    ----------
    texts_a, texts_b : sequence of str of shape (n_pairs,)
    human : array-like of shape (n_pairs,)
        People's scores of the pairs, rescaled to 0-1.
    groups : array-like of shape (n_pairs,) or None
        Each pair's source: the band is measured per source and holds on each (`AgreementBand.fit`).
    source : dict
        Names the labelled files (``{"files": [{"name", "sha256"}], ...}``); recorded in each band
        and in the provenance (``human_band``).
    encode_options : go to `encode_texts`.
    """
    profile.check_model(embedder.fingerprint, prompt=embedder_prompt(embedder))
    a, b = (encode_texts(embedder, list(texts), **encode_options).embeddings for texts in (texts_a, texts_b))
    human = np.asarray(human, dtype=np.float64)
    source = {**source, "pairs": len(human)}
    similarities = _similarities(a, b, list(profile.metrics))
    try:
        for name, ref in profile.metrics.items():
            calibrated = ref.calibrators["calibrated"].transform(similarities[name])
            ref.band = AgreementBand().fit(calibrated, human, source=source, model=embedder.fingerprint.id,
                                           groups=groups)
    except ValueError as exc:
        raise InputError(f"the labelled pairs cannot measure the human agreement band: {exc}.",
                         fix="give at least a few hundred labelled pairs spread over the whole scale") from None
    profile.provenance["human_band"] = {
        **source, "rates": AgreementBand().rates, "method": "split conformal: residual quantiles of "
        "people's 0-1 scores around the calibrated score, per quarter of the calibrated scale"
        + ("; measured per source, the widest kept" if groups is not None else "")}
    return profile
