"""The line above the Results table: how many rows it shows, how many were scored, the agreement
with the input's human scores, and the notes that change how to read them (of the rows every
filter leaves)."""

from __future__ import annotations

import numpy as np

from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.qt.session.human_scores import current_agreement
from calibsim_gui.qt.widgets.results_model import TRUNCATED_MARK


def results_summary(state, shown_rows: int) -> str:
    """The summary of `state`'s results, `shown_rows` of them in the table."""
    results = state.results
    if not isinstance(results, ScoredPairs):
        n = 0 if results is None else len(results.ids) * (len(results.ids) - 1) // 2
        shown = "" if results is None or shown_rows == n else \
            f" · {shown_rows:,} shown"
        return ("" if results is None else
                f"{len(results.ids):,} documents · all {n:,} pairs ({results.metric}){shown}; "
                "sort by any column; the Heatmap tab draws them as a map")
    frame, metric, rows = results.frame, state.metric, state.shown_rows
    parts = [f"{len(frame):,} rows"]
    if rows is not None:                # the numbers that follow are of the rows shown
        parts[0] = f"{len(rows):,} of {len(frame):,} rows shown"
    raw = f"{metric}_raw"
    if raw in frame:
        values = frame[raw].to_numpy(dtype=float)
        parts.append(f"{int(np.isfinite(values if rows is None else values[rows]).sum()):,} scored")
    agreement = current_agreement(state, rows)
    if agreement is not None and agreement.n:
        low, high = agreement.scale
        parts.append(f"vs {agreement.label} ({low:g}–{high:g} → 0–1): MAE {agreement.mae:.3f}, "
                     f"RMSE {agreement.rmse:.3f}, Spearman ×100 {agreement.spearman_x100:.1f} "
                     "(the same for raw and calibrated; see the Agreement tab)")
    saturation = results.provenance.get("background_saturation", {}).get(metric)
    if saturation:
        parts.append(f"{saturation['share_beyond_p99']:.1%} above the background's 99th percentile")
    truncated = results.provenance.get("long_texts", {}).get("pairs_truncated", 0)
    if truncated:
        parts.append(f"{TRUNCATED_MARK} {truncated:,} pairs with a truncated text")
    return " · ".join(parts)
