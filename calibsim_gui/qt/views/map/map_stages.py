"""What the Map's worker computes, in stages, and the line that says what the map shows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from calibsim_gui.core.analysis.clusters import cluster_texts
from calibsim_gui.core.analysis.projection import pca_2d, tsne_2d
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.qt.widgets.messages import plural

HOVER_CHARS = 160


def shorten(text: str, chars: int = HOVER_CHARS) -> str:
    """`text` cut to `chars` characters (with an ellipsis when cut)."""
    return text if len(text) <= chars else text[:chars - 1] + "…"


def encode_query(embedder, text: str, cache, *, progress, should_stop) -> np.ndarray:
    """A typed text's vector, encoded like the map's texts (same prompt, through the cache)."""
    return encode_texts(embedder, [text], cache=cache, should_stop=should_stop).embeddings[0]


def map_stages(make, text_map, method: str, k: int | None, clusters, *, progress, should_stop):
    """The map's worker, in stages: each stage's ``(text_map, clusters)`` is drawn as it comes.

    `make(progress, should_stop)` encodes and projects the texts by PCA (the instant first view)
    when `text_map` is None; then the texts are clustered (into `k`, None: chosen) unless
    `clusters` are given, and projected by `method` ("PCA" or "t-SNE") unless they already are.
    """
    if text_map is None:
        text_map = make(progress, should_stop)
        yield text_map, clusters
    if clusters is None:
        clusters = cluster_texts(text_map.texts, text_map.vectors, k, progress=progress, should_stop=should_stop)
        if method != text_map.projection.method:
            yield text_map, clusters
    if method != text_map.projection.method:
        projection = pca_2d(text_map.vectors) if method == "PCA" else tsne_2d(
            text_map.vectors, progress=progress, should_stop=should_stop)
        text_map = replace(text_map, projection=projection)
    return text_map, clusters


def describe_map(text_map, clusters, many: int) -> str:
    """What the map shows: its texts, its projection, its clusters (`many`: beyond this many
    points they are drawn over a density shade)."""
    if text_map is None:
        return ""
    projection = text_map.projection
    parts = [plural(len(text_map), "distinct text")]
    if projection.method == "PCA":
        first, second = projection.explained
        parts.append(f"PCA: the two directions shown hold {first:.0%} and {second:.0%} of the "
                     "variance".replace("%", " %"))
    else:
        parts.append("t-SNE: near points are texts with near vectors; distances between groups mean little")
    if clusters is not None:
        how = "number chosen at the elbow" if clusters.chosen else "number chosen by you"
        parts.append(f"{plural(len(clusters.sizes), 'cluster')} ({how})")
    if len(text_map) > many:
        parts.append("drawn small and translucent over a shade of their density")
    return " · ".join(parts)
