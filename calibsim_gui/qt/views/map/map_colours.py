"""What the Text map's points are coloured by: per-point columns of the results, and colour groups.

`point_columns` turns the current results into one value per point (a text of several pairs
takes the mean over its pairs); `colour_groups` sorts the points into a few colours (a numeric
scale in steps, or one colour per category), each drawn as one scatter layer by `MapView`.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor

from calibsim_gui.core.analysis.matrices import DocumentMatrix
from calibsim_gui.core.analysis.pairs import ScoredPairs, split_score_column
from calibsim_gui.qt.session.document_sets import NeighbourPairs

CATEGORY_COLOURS = [QColor(c) for c in ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2",
                                        "#eeca3b", "#ff9da6", "#9d755d", "#bab0ac",
                                        "#1f3c88", "#8cd17d")]
MAX_CATEGORIES = len(CATEGORY_COLOURS)
CHOSEN_COLOUR = QColor("#ff00ff")     # the map's chosen points and lasso: a magenta no colour above is near
MISSING = QColor(150, 150, 150, 120)
SHADES = 16                 # steps of a numeric colour scale: one scatter layer each (pyqtgraph's fast path)
SIDE = "side of the pair"
CLUSTER = "cluster"


def point_columns(text_map, state) -> dict[str, np.ndarray]:
    """What the points can be coloured by: per point, numbers (float) or categories (object).

    Pairs: the shown metric's calibrated and raw scores and every other input column, each the
    mean over the pairs a text belongs to (a category: its first pair's), and the side (A, B or
    both). Documents: the source file and each document's best calibrated match in the set (scored
    by neighbours: its nearest neighbour's).
    """
    import pandas as pd

    results, table = state.results, state.input
    columns: dict[str, np.ndarray] = {}
    if len(text_map.segments):
        ends = text_map.segments.ravel()
        sides = np.full(len(text_map), "", dtype=object)
        for side, points in zip("AB", text_map.segments.T):
            sides[points] = np.where(np.isin(sides[points], ("", side)), side, "both")
        if isinstance(results, ScoredPairs):
            frame = results.frame.iloc[text_map.rows]
            label = state.label_column or getattr(table, "label", None)
            wanted = [f"{state.metric}_calibrated", f"{state.metric}_raw"] + ([label] if label else [])
            wanted += [c for c in frame.columns if c not in (table.text_a, table.text_b)
                       and split_score_column(c) is None and not str(c).startswith("text_")]
            for name in dict.fromkeys(c for c in wanted if c in frame.columns):
                numbers = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
                if np.isfinite(numbers).any():
                    columns[str(name)] = text_map.per_point(numbers)
                elif frame[name].nunique() <= MAX_CATEGORIES:        # a category: its first pair's
                    values = pd.Series(np.repeat(frame[name].astype(str).to_numpy(), 2)).groupby(ends).first()
                    columns[str(name)] = values.reindex(range(len(text_map)), fill_value="").to_numpy(dtype=object)
        columns[SIDE] = sides
    else:
        if len(set(text_map.sources)) > 1:
            columns["source file"] = np.asarray(text_map.sources, dtype=object)
        if isinstance(results, DocumentMatrix) and "calibrated" in results.matrices \
                and len(results.ids) == len(text_map):
            scores = results.matrices["calibrated"].astype(float)
            np.fill_diagonal(scores, np.nan)
            columns["best match (calibrated)"] = np.nanmax(scores, axis=1)
        elif isinstance(results, NeighbourPairs):
            columns["best match (calibrated)"] = results.best_matches(text_map.ids)
    return columns


def colour_groups(values: np.ndarray) -> tuple[np.ndarray, list, str]:
    """Points grouped by colour for `values` (numbers: viridis in `SHADES` steps from low to high;
    categories: one colour each, the most frequent first: clusters in their order): per point its group, each group's colour (the last group is
    "no value"), and a legend line that says what the colours mean."""
    if values.dtype != object:
        known = np.isfinite(values)
        lookup = pg.colormap.get("viridis").getLookupTable(nPts=SHADES)
        colours = [QColor(*rgb) for rgb in lookup] + [MISSING]
        groups = np.full(len(values), SHADES, dtype=np.int64)
        if not known.any():
            return groups, colours, "no values"
        low, high = float(values[known].min()), float(values[known].max())
        scaled = (values[known] - low) / (high - low) if high > low else np.zeros(int(known.sum()))
        groups[known] = np.round(scaled * (SHADES - 1)).astype(np.int64)
        return groups, colours, f"dark purple = {low:.3g} … yellow = {high:.3g}; grey = no value"
    text = values.astype(str)
    names, counts = np.unique(text, return_counts=True)
    shown = [n for n in names[np.argsort(-counts, kind="stable")] if n][:MAX_CATEGORIES]
    groups = np.full(len(values), len(shown), dtype=np.int64)
    for group, name in enumerate(shown):
        groups[text == name] = group
    legend = " &nbsp; ".join(f"<span style='color:{CATEGORY_COLOURS[i].name()}'>●</span> {name}"
                       for i, name in enumerate(shown))
    other = "; grey = other" if len(names) > len(shown) else ""
    return groups, CATEGORY_COLOURS[:len(shown)] + [MISSING], legend + other


def pair_clusters(text_map, clusters, n_rows: int) -> np.ndarray:
    """Per results row (of `n_rows`) the cluster of its pair's texts: one name when both are in
    the same cluster, "A's / B's" when not, "" for a row not on the map (an empty side)."""
    names = clusters.column()
    first, second = names[text_map.segments[:, 0]], names[text_map.segments[:, 1]]
    out = np.full(n_rows, "", dtype=object)
    out[text_map.rows] = np.where(first == second, first, first + " / " + second)
    return out


def cluster_column(taken) -> str:
    """The clusters' column name: "cluster", or "map cluster" where the input has a "cluster"."""
    return CLUSTER if CLUSTER not in taken else f"map {CLUSTER}"


def publish_clusters(state, text_map, clusters) -> None:
    """Pairs: each results row's cluster(s) become a column of the Results table (`state.row_columns`)."""
    frame = getattr(state.results, "frame", None)
    if clusters is None or text_map is None or not len(text_map.segments) or frame is None:
        if state.row_columns:
            state.set_row_columns({})
        return
    name, values = cluster_column(frame.columns), pair_clusters(text_map, clusters, len(frame))
    if list(state.row_columns) != [name] or not np.array_equal(state.row_columns[name], values):
        state.set_row_columns({name: values})          # only when they changed: the table reloads
