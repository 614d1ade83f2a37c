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
from calibsim_gui.core.metrics import METRICS, get_metrics, pair_scores
from calibsim_gui.core.profile import MetricReference, ReferenceProfile
from calibsim_gui.core.provenance import file_digest, library_versions
from calibsim_gui.core.resources import resource_path
from calibsim_gui.core.sketch import ScoreSketch

QUERY_REFERENCE_SIZE = 1000


def _anchor_scores(embedder, anchors: AnchorSet, metrics, **encode_options) -> dict[str, np.ndarray]:
    texts = [p.text_a for p in anchors.pairs] + [p.text_b for p in anchors.pairs]
    emb = encode_texts(embedder, texts, **encode_options).embeddings
    a, b = np.split(emb, 2)
    raw = pair_scores(a, b, metrics)
    return {name: METRICS[name].as_similarity(values) for name, values in raw.items()}


def build_profile(embedder, background_texts=None, *, anchors: AnchorSet | None = None,
                  n_pairs: int = DEFAULT_PAIRS, seed: int = 0, metrics=None, sources=(),
                  name: str | None = None, cache=None, batch_size: int = 64, progress=None,
                  should_stop=None) -> ReferenceProfile:
    """Encode anchors (and a background corpus) and fit every calibrator.

    Parameters
    ----------
    background_texts : list of str or None
        Distinct background sentences; None builds an anchors-only profile.
    anchors : AnchorSet, default the built-in STS ladder
    n_pairs : int
        Random disjoint background pairs to draw (fewer if the corpus is small).
    sources : paths of the background files, recorded with their digests in the provenance.
    progress, should_stop : see `encode_texts`.
    """
    anchors = anchors or builtin_anchors()
    metrics = [m.name for m in get_metrics(metrics)]
    options = dict(cache=cache, batch_size=batch_size, should_stop=should_stop)
    anchor_scores = _anchor_scores(embedder, anchors, metrics, **options)
    references = {m: MetricReference(anchor_scores[m]) for m in metrics}
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
        raw = pair_scores(encoding.embeddings[first], encoding.embeddings[second], metrics)
        for m in metrics:
            references[m].background = ScoreSketch.of(METRICS[m].as_similarity(raw[m]))
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
        if len(first) < MIN_BACKGROUND_PAIRS:
            provenance["warning"] = (f"only {len(first)} background pairs (< {MIN_BACKGROUND_PAIRS}); "
                                     "percentiles are coarse")
    for ref in references.values():
        ref.fit(anchors)
    return ReferenceProfile(embedder.fingerprint, int(embedder.dimension), anchors, references,
                            query_reference, provenance)


def with_anchors(profile: ReferenceProfile, embedder, anchors: AnchorSet, *, metrics=None,
                 **encode_options) -> ReferenceProfile:
    """A copy of `profile` whose ladder is refitted on `anchors` (backgrounds unchanged).

    `encode_options` go to `encode_texts` (cache, batch_size, should_stop).
    """
    profile.check_model(embedder.fingerprint)
    names = list(profile.metrics) if metrics is None else metrics
    scores = _anchor_scores(embedder, anchors, names, **encode_options)
    references = {name: MetricReference(scores[name], profile.metrics[name].background).fit(anchors)
                  for name in names}
    provenance = {**profile.provenance, "anchors": {"name": anchors.name, "pairs": len(anchors.pairs)}}
    return ReferenceProfile(profile.fingerprint, profile.dimension, anchors, references,
                            profile.query_reference, provenance)


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
