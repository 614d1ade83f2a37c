"""Building reference profiles from a background corpus and an anchor ladder."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np

from calibsim_gui.core.anchors import AnchorSet, builtin_anchors
from calibsim_gui.core.background import DEFAULT_PAIRS, random_pairs
from calibsim_gui.core.calibrators import MIN_BACKGROUND_PAIRS
from calibsim_gui.core.encoding import encode_texts
from calibsim_gui.core.errors import ProfileError
from calibsim_gui.core.geometry import FIXES, GEOMETRIES, apply_geometry, get_geometries
from calibsim_gui.core.metrics import METRICS, get_metrics, pair_scores
from calibsim_gui.core.profile import GeometryReference, MetricReference, ReferenceProfile
from calibsim_gui.core.provenance import file_digest, library_versions
from calibsim_gui.core.resources import resource_path
from calibsim_gui.core.sketch import ScoreSketch

QUERY_REFERENCE_SIZE = 1000
GEOMETRY_METRICS = ("cosine",)
"""Metrics that get references under each geometry fix: cosine, the similarity the fixes were
designed for (angular, and dot/euclidean of whitened unit vectors, only re-express it)."""


def _anchor_embeddings(embedder, anchors: AnchorSet, **encode_options) -> list[np.ndarray]:
    """Embeddings of the anchor pairs' first texts and of their second texts."""
    texts = [p.text_a for p in anchors.pairs] + [p.text_b for p in anchors.pairs]
    return np.split(encode_texts(embedder, texts, **encode_options).embeddings, 2)


def _similarities(a: np.ndarray, b: np.ndarray, metrics) -> dict[str, np.ndarray]:
    """Pair scores of row-aligned embeddings, "higher = more similar"."""
    return {name: METRICS[name].as_similarity(values) for name, values in pair_scores(a, b, metrics).items()}


def build_profile(embedder, background_texts=None, *, anchors: AnchorSet | None = None,
                  n_pairs: int = DEFAULT_PAIRS, seed: int = 0, metrics=None,
                  geometries=FIXES, geometry_metrics=GEOMETRY_METRICS, sources=(),
                  name: str | None = None, cache=None, batch_size: int = 64, progress=None,
                  should_stop=None) -> ReferenceProfile:
    """Encode anchors (and a background corpus) and fit every calibrator.

    Parameters
    ----------
    background_texts : list of str or None
        Distinct background sentences; None builds an anchors-only profile (no geometry fixes).
    anchors : AnchorSet, default the built-in STS ladder
    n_pairs : int
        Random disjoint background pairs to draw (fewer if the corpus is small).
    geometries : names of geometry fixes to fit on the background texts ("center", "whiten",
        "abtt"); for each, `geometry_metrics` (those of `metrics`) get references computed on
        transformed embeddings with the same background pairs.
    sources : paths of the background files, recorded with their digests in the provenance.
    progress, should_stop : see `encode_texts`.
    """
    anchors = anchors or builtin_anchors()
    metrics = [m.name for m in get_metrics(metrics)]
    fixes = [g.name for g in get_geometries(geometries) if g.name != "none"]
    fixed_metrics = [m for m in metrics if m in geometry_metrics]
    options = dict(cache=cache, batch_size=batch_size, should_stop=should_stop)
    anchor_a, anchor_b = _anchor_embeddings(embedder, anchors, **options)
    anchor_scores = _similarities(anchor_a, anchor_b, metrics)
    references = {m: MetricReference(anchor_scores[m]) for m in metrics}
    geometry_references = {}
    provenance = {
        "name": name or "anchors only",
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "engine": "local",
        "model": embedder.fingerprint.to_dict(),
        "anchors": {"name": anchors.name, "pairs": len(anchors.pairs)},
        "versions": library_versions(),
    }
    query_reference = None
    if background_texts is not None:
        texts = list(dict.fromkeys(background_texts))
        encoding = encode_texts(embedder, texts, progress=progress, **options)
        first, second = random_pairs(len(texts), n_pairs, seed=seed)
        if len(first) < 2:
            raise ProfileError("the background corpus needs at least three distinct sentences.")
        emb = encoding.embeddings
        for m, values in _similarities(emb[first], emb[second], metrics).items():
            references[m].background = ScoreSketch.of(values)
        for fix in fixes if fixed_metrics else ():
            transform = GEOMETRIES[fix].make().fit(emb)
            moved = transform.transform(emb)
            scores = _similarities(transform.transform(anchor_a), transform.transform(anchor_b),
                                   fixed_metrics)
            background = _similarities(moved[first], moved[second], fixed_metrics)
            geometry_references[fix] = GeometryReference(transform, {
                m: MetricReference(scores[m], ScoreSketch.of(background[m])).fit(anchors)
                for m in fixed_metrics})
        rng = np.random.default_rng(seed)
        sample = rng.choice(len(texts), size=min(QUERY_REFERENCE_SIZE, len(texts)), replace=False)
        query_reference = encoding.embeddings[np.sort(sample)]
        provenance.update({
            "background": {
                "files": [{"name": Path(s).name, "sha256": file_digest(s)} for s in sources],
                "sentences": len(texts), "pairs": len(first), "seed": seed,
                "truncated": encoding.n_truncated,
                "pair_scheme": "rounds of seeded random permutations; neighbours paired; "
                               "no text twice within a round, no pair twice",
            },
        })
        if geometry_references:
            provenance["geometries"] = {
                "fitted_on_sentences": len(texts), "metrics": fixed_metrics,
                "fixes": {fix: {"description": GEOMETRIES[fix].description,
                                "settings": ref.transform.get_params(),
                                "warning": getattr(ref.transform, "warning_", None)}
                          for fix, ref in geometry_references.items()},
            }
        if len(first) < MIN_BACKGROUND_PAIRS:
            provenance["warning"] = (f"only {len(first)} background pairs (< {MIN_BACKGROUND_PAIRS}); "
                                     "percentiles are coarse")
    for ref in references.values():
        ref.fit(anchors)
    return ReferenceProfile(embedder.fingerprint, int(embedder.dimension), anchors, references,
                            query_reference, provenance, geometry_references)


def with_anchors(profile: ReferenceProfile, embedder, anchors: AnchorSet, *, metrics=None,
                 **encode_options) -> ReferenceProfile:
    """A copy of `profile` whose ladder is refitted on `anchors` (backgrounds unchanged).

    `encode_options` go to `encode_texts` (cache, batch_size, should_stop).
    """
    profile.check_model(embedder.fingerprint)
    names = list(profile.metrics) if metrics is None else metrics
    a, b = _anchor_embeddings(embedder, anchors, **encode_options)

    def refit(old: dict[str, MetricReference], transform) -> dict[str, MetricReference]:
        kept = [name for name in names if name in old]
        scores = _similarities(apply_geometry(transform, a), apply_geometry(transform, b), kept)
        return {name: MetricReference(scores[name], old[name].background).fit(anchors) for name in kept}

    geometries = {fix: GeometryReference(ref.transform, refit(ref.metrics, ref.transform))
                  for fix, ref in profile.geometries.items()}
    provenance = {**profile.provenance, "anchors": {"name": anchors.name, "pairs": len(anchors.pairs)}}
    return ReferenceProfile(profile.fingerprint, profile.dimension, anchors,
                            refit(profile.metrics, None), profile.query_reference, provenance,
                            {fix: ref for fix, ref in geometries.items() if ref.metrics})


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
        if profile.fingerprint.digest == embedder.fingerprint.digest:
            return profile
    return build_profile(embedder, None, **options)
