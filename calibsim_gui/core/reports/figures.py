"""Report figures drawn with matplotlib's object API (no pyplot, no GUI backend).

The distributions show the same arrays as the app's Distributions tab
(`calibsim_gui.core.analysis.distributions`): random background pairs as a density, your pairs as
counts, and the anchor levels as dashed lines; raw on the left, calibrated on the right. The
calibrated map is the Anchors tab's: the fitted curve, its 95 % band and the anchor pairs.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from calibsim_gui.core.analysis.distributions import (
    LEVEL_COLORS,
    anchor_medians,
    background_items,
    calibrate_form,
    calibrated_map,
    histograms,
    similarity_label,
)
from calibsim_gui.core.analysis.matrix_order import colour_range, similarity_order
from calibsim_gui.core.analysis.thresholds import find_threshold, pr_curve, same_meaning
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.geometry.metrics import METRICS

BACKGROUND_COLOR = "#4c78a8"
USER_COLOR = "#f58518"
ANCHOR_COLOR = "#808080"
CURVE_COLOR = "#303030"
PNG_DPI = 150


@dataclass(frozen=True)
class ReportFigure:
    """One figure in both formats, with the caption printed under it."""

    name: str           # file-name friendly: "distribution", "heatmap"
    title: str
    caption: str
    png: bytes
    svg: str


def _render(fig, name: str, title: str, caption: str) -> ReportFigure:
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png", dpi=PNG_DPI)
    fig.savefig(svg, format="svg")
    return ReportFigure(name, title, caption, png.getvalue(), svg.getvalue())


def _panel(ax, user, bg_values, bg_weights, anchors, xlabel: str, title: str):
    """Draw one histogram panel; returns the twin axis holding your pairs' counts."""
    edges, density, counts = histograms(user, bg_values, bg_weights, anchors)
    centers = (edges[:-1] + edges[1:]) / 2
    if len(density):
        ax.fill_between(centers, density, step="mid", color=BACKGROUND_COLOR, alpha=0.45,
                        label="random background pairs (density, left axis)")
    ax.set_ylim(bottom=0)                       # both axes start at zero, side by side
    ax.set_ylabel("density of random background pairs")
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    counts_ax = ax.twinx()
    counts_ax.step(centers, counts, where="mid", color=USER_COLOR, linewidth=1.8,
                   label="your pairs (count, right axis)")
    counts_ax.set_ylabel("your pairs (count)")
    counts_ax.set_ylim(bottom=0)
    top = ax.get_ylim()[1]
    for i, (label, value) in enumerate(anchors):
        if np.isfinite(value):
            ax.axvline(value, color=ANCHOR_COLOR, linestyle="--", linewidth=1)
            ax.text(value, top * (0.97 - 0.07 * (i % 3)), " " + label.split(" - ", 1)[0],
                    color="#404040", fontsize=7, va="top")
    ax.set_xlim(edges[0], edges[-1])
    return counts_ax


def distribution_figure(report) -> ReportFigure:
    """Raw and calibrated distributions of the report's pairs against the references."""
    from matplotlib.figure import Figure

    profile, metric, form = report.profile, report.metric, report.calibration_form
    result = report.result
    if report.kind != "matrix":
        user = result.frame[f"{metric}_raw"].to_numpy(dtype=float)
        column = f"{metric}_{form}"
        user_cal = (result.frame[column].to_numpy(dtype=float) if column in result.frame
                    else calibrate_form(profile, metric, form, user[np.isfinite(user)]))
        what = "your pairs" if report.kind == "pairs" else "your search hits"
    else:
        raw = result.matrices["raw"]
        user = raw[np.triu_indices(len(raw), k=1)].astype(float)
        user_cal = calibrate_form(profile, metric, form, user)
        what = "your document pairs"
    bg_values, bg_weights = background_items(profile, metric)
    anchors = anchor_medians(profile, metric)
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    orientation = METRICS[metric].orientation
    counts_ax = _panel(left, user, bg_values, bg_weights, anchors,
                       f"raw {metric} ({orientation})", f"raw {metric}")
    cal_anchors = [(label, float(calibrate_form(profile, metric, form, [value])[0]))
                   for label, value in anchors]
    _panel(right, user_cal, calibrate_form(profile, metric, form, bg_values), bg_weights,
           cal_anchors, f"{metric} {form} (higher = more similar)", f"{metric} {form}")
    handles = left.get_legend_handles_labels()[0] + counts_ax.get_legend_handles_labels()[0]
    if anchors:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color=ANCHOR_COLOR, linestyle="--", label="anchor levels (median)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    background = (f"{profile.background_pairs:,} random background pairs" if profile.has_background
                  else "no background corpus")
    caption = (f"Distribution of {what}' {metric} scores (orange, counts) against {background} "
               f"(blue, density) and the anchor levels (dashed, labelled by level); raw scores on the "
               f"left, {form} on the right.")
    return _render(fig, "distribution", f"{metric}: raw and {form} distributions", caption)


def heatmap_data(report) -> tuple[str, list[str], np.ndarray, tuple[float, float]]:
    """The heatmap as the app shows it: the featured form, the document ids and the matrix in
    clustered order, and the colour range of the scores between different documents."""
    matrices = report.result.matrices
    form = report.form if report.form in matrices else "raw"
    order = similarity_order(matrices, METRICS[report.metric].higher_is_similar)
    matrix = np.asarray(matrices[form])[np.ix_(order, order)]
    return form, [report.result.ids[i] for i in order], matrix, colour_range(matrix, form)


def heatmap_figure(report) -> ReportFigure:
    """The document matrix in the featured form, as the app's heatmap shows it: documents in
    clustered order, colours spanning the off-diagonal scores, with a colour bar."""
    from matplotlib.figure import Figure

    form, ids, matrix, (low, high) = heatmap_data(report)
    fig = Figure(figsize=(7.5, 6.5), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(matrix, cmap="viridis", vmin=low, vmax=high, interpolation="nearest")
    fig.colorbar(image, ax=ax, label=f"{report.metric} {form}")
    if len(ids) <= 40:
        ax.set_xticks(range(len(ids)), ids, rotation=90, fontsize=6)
        ax.set_yticks(range(len(ids)), ids, fontsize=6)
    ax.set_title(f"{len(ids):,} documents: {report.metric} {form}", fontsize=10)
    caption = (f"Every document against every other, {report.metric} {form}"
               + (" (higher = more similar)" if form != "raw" else f" ({METRICS[report.metric].orientation})")
               + "; similar documents next to each other (clustered order), colours spanning the scores "
                 "between different documents.")
    return _render(fig, "heatmap", f"Document heatmap ({report.metric} {form})", caption)


def calibrated_map_figure(report) -> ReportFigure:
    """The default calibrated scale of the featured metric: line, band, anchor pairs, ends."""
    from matplotlib.figure import Figure

    metric, data = report.metric, calibrated_map(report.profile, report.metric)
    fig = Figure(figsize=(9, 5.6), layout="constrained")
    ax = fig.subplots()
    ax.fill_between(data.x, data.lo, data.hi, color=CURVE_COLOR, alpha=0.18, linewidth=0,
                    label=data.band_label)
    ax.plot(data.x, data.y, color=CURVE_COLOR, linewidth=1.8, label="calibrated map")
    for i, (label, _, pairs) in enumerate(data.levels):
        ax.scatter(data.scores[pairs], data.targets[pairs], s=22, color=LEVEL_COLORS[i % len(LEVEL_COLORS)],
                   edgecolors="white", linewidths=0.5, zorder=3, label=label)
    ends_y = np.interp([data.unrelated, data.identical], data.x, data.y)
    ax.scatter([data.unrelated, data.identical], ends_y, marker="D", s=46, color=CURVE_COLOR, zorder=4)
    ax.annotate("typical unrelated pair", (data.unrelated, ends_y[0]), xytext=(0, -7),
                textcoords="offset points", ha="left", va="top", fontsize=8)
    ax.annotate("identical", (data.identical, ends_y[1]), xytext=(0, 7), textcoords="offset points",
                ha="right", va="bottom", fontsize=8)
    ax.set_xlim(data.x[0], data.x[-1])
    ax.set_ylim(-0.12, 1.12)
    ax.set_xlabel(similarity_label(metric))
    ax.set_ylabel(f"{metric}_calibrated")
    ax.grid(alpha=0.2)
    ax.set_title(f"Calibrated map of {metric}", fontsize=10)
    fig.legend(loc="outside lower center", ncols=3, fontsize=7.5, frameon=False)
    shift = report.profile.metrics[metric].calibrators["calibrated"].shift
    caption = (f"How a {metric} score (x) becomes {metric}_calibrated (y): a straight line from the "
               f"median score of pairs of unrelated reference sentences (0) to identical text (1), "
               f"lowered by {shift:.3f}, the amount by which people rate pairs below that line; the "
               f"{len(data.scores)} anchor pairs are drawn at their levels' targets as a check. "
               f"Shaded: {data.band_label}.")
    return _render(fig, "calibrated-map", f"{metric}: calibrated map", caption)


def precision_recall_figure(report) -> ReportFigure | None:
    """Labelled pairs only: precision against recall of "score >= t" (raw and the featured form)
    predicting "the same meaning" (label in the upper fifth of the labels' range, or 1 of 0/1
    labels; see `core.thresholds.same_meaning`), with the cut at 90 % precision marked. None
    without labels of both kinds."""
    from matplotlib.figure import Figure

    agreement = report.provenance.get("agreement")
    frame = report.result.frame
    metric, form = report.metric, report.calibration_form
    columns = [c for c in (f"{metric}_raw", f"{metric}_{form}") if c in frame]
    if report.kind != "pairs" or not agreement or agreement.get("label") not in frame or not columns:
        return None
    import pandas as pd

    labels = pd.to_numeric(frame[agreement["label"]], errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(labels)
    for column in columns:
        ok &= np.isfinite(frame[column].to_numpy(dtype=float))
    if ok.sum() < 2:
        return None
    same, cut = same_meaning(labels[ok], scale=(labels[ok].min(), labels[ok].max()))
    if same.all() or not same.any():
        return None
    fig = Figure(figsize=(7.5, 5.2), layout="constrained")
    ax = fig.subplots()
    marks = []
    for column, color, style in zip(columns, (BACKGROUND_COLOR, USER_COLOR), ("-", "--")):
        scores = frame[column].to_numpy(dtype=float)[ok]
        if column.endswith("_raw"):
            scores = METRICS[metric].as_similarity(scores)
        curve = pr_curve(scores, same)
        ax.step(np.r_[0.0, curve.recall], np.r_[1.0, curve.precision], where="post", color=color,
                linestyle=style, linewidth=1.8, label=column)
        try:
            found = find_threshold(scores, same, target=0.9, n_boot=0)
        except InputError:
            continue
        value = found.threshold if not column.endswith("_raw") or METRICS[metric].higher_is_similar \
            else -found.threshold
        ax.scatter([found.recall], [found.precision], color=color, zorder=3, s=36)
        marks.append(f"{column} {'<=' if value != found.threshold else '>='} {value:.3f} "
                     f"(recall {found.recall:.2f})")
    ax.axhline(0.9, color=ANCHOR_COLOR, linestyle=":", linewidth=1)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("recall")
    ax.set_ylabel("precision")
    ax.grid(alpha=0.2)
    ax.legend(loc="lower left", fontsize=8, frameon=False)
    ax.set_title(f"Precision-recall: '{agreement['label']}' >= {cut:g} as the same meaning", fontsize=10)
    caption = (f"How well \"score >= threshold\" finds the {int(same.sum()):,} of {len(same):,} labelled "
               f"pairs whose '{agreement['label']}' is at least {cut:g} (the upper fifth of the labels' "
               "range, or 1 for 0/1 labels), raw and " + form + ". Dots: the lowest threshold with 90 % "
               "precision" + (": " + "; ".join(marks) if marks else "") + ". `calibsim threshold` "
               "chooses other targets and adds bootstrap intervals.")
    return _render(fig, "precision-recall", f"{metric}: precision and recall against the labels", caption)


def report_figures(report) -> list[ReportFigure]:
    figures = [distribution_figure(report), calibrated_map_figure(report)]
    if report.kind == "matrix":
        figures.insert(0, heatmap_figure(report))
    pr = precision_recall_figure(report) if report.kind == "pairs" else None
    if pr is not None:
        figures.append(pr)
    return figures
