"""The human scores the session compares with: which column holds them, which 0-1 column they are
compared to, and how well the two agree, all derived from `state`. Shared by the Results,
Agreement and Compare tabs and the human calibration flow."""

from __future__ import annotations

import weakref

from calibsim_gui.core.analysis.distributions import (
    Agreement,
    agreement,
    guess_scale,
    label_candidates,
    label_values,
)
from calibsim_gui.core.analysis.pairs import ScoredPairs

_candidates: dict = {"frame": lambda: None, "value": []}
_labels: dict = {"frame": lambda: None, "values": {}}


def candidates_of(results: ScoredPairs) -> list[str]:
    """`label_candidates` of the results' frame, remembered for the latest frame."""
    if _candidates["frame"]() is not results.frame:
        _candidates["value"] = label_candidates(results.frame, results.provenance)
        _candidates["frame"] = weakref.ref(results.frame)
    return list(_candidates["value"])


def labels_of(results: ScoredPairs, label: str):
    """`label_values` of the results' `label` column, remembered for the latest frame: every view
    that shows the agreement asks, and a column read as text took 35 ms per 100,000 pairs."""
    if _labels["frame"]() is not results.frame:
        _labels.update(frame=weakref.ref(results.frame), values={})
    if label not in _labels["values"]:
        _labels["values"][label] = label_values(results.frame[label])
    return _labels["values"][label]


def chosen_label(state) -> str | None:
    """The human-score column in use: the user's choice, else the one the input was loaded with
    ("" chosen: none)."""
    results = state.results
    if not isinstance(results, ScoredPairs):
        return None
    candidates = candidates_of(results)
    if state.label_column is not None:
        return state.label_column if state.label_column in candidates else None
    loaded = (results.provenance.get("agreement") or {}).get("label")
    return loaded if loaded in candidates else None


def calibrated_column(state) -> str | None:
    """The 0-1 column compared with human scores: ``<metric>_<compared form>`` (calibrated, or
    human once fitted), else ``<metric>_calibrated``."""
    results = state.results
    if not isinstance(results, ScoredPairs):
        return None
    for column in (f"{state.metric}_{state.compared_form}", f"{state.metric}_calibrated"):
        if column in results.frame:
            return column
    return None


def current_agreement(state, rows=None) -> Agreement | None:
    """Agreement of the current results (`rows` of them: None, all) with the chosen human scores
    (None without labels); the scale is guessed from every row."""
    label, column = chosen_label(state), calibrated_column(state)
    if label is None or column is None:
        return None
    frame, labels = state.results.frame, labels_of(state.results, label)
    scale = state.label_scale or guess_scale(labels)
    if rows is not None:
        frame, labels = frame.iloc[rows], labels[rows]
    return agreement(labels, frame[column].to_numpy(dtype=float), scale, label)
