"""The evaluation page: an `Evaluation` drawn as a self-contained HTML page with a reliability diagram
(matplotlib, imported when drawn)."""

from __future__ import annotations

import base64
import html
import io
from typing import Mapping, Sequence, TYPE_CHECKING

import numpy as np

from calibsim_gui import __version__
from calibsim_gui.core.analysis.evaluation import BAND_LABELS, HOLE, TENTHS, Evaluation
from calibsim_gui.core.analysis.pairs import split_score_column

if TYPE_CHECKING:
    import pandas as pd  # heavy: imported where a table is made


def _number(value, spec: str) -> str:
    return "n/a" if value is None or not np.isfinite(value) else format(value, spec)


def tenth_name(edge: float) -> str:
    """``0.9`` -> ``"0.9-1.0"``."""
    return f"{edge:.1f}-{edge + 1 / TENTHS:.1f}"


def readable_forms(frame: pd.DataFrame) -> pd.DataFrame:
    """`Evaluation.forms` of one model as the strings a table shows, indexed by score column."""
    import pandas as pd

    worst = [("n/a" if not np.isfinite(edge) else
              f"{f'{ratio:.3f}x' if np.isfinite(ratio) else 'inf'}{', a hole,' * (ratio < HOLE)} in {tenth_name(edge)}")
             for edge, ratio in zip(frame["worst_tenth"], frame["worst_tenth_ratio"])]
    return pd.DataFrame({"MAE": [_number(v, ".3f") for v in frame["mae"]],
                         "bias": [_number(v, "+.3f") for v in frame["bias"]],
                         "top ties": [f"{v:.1%}" for v in frame["top_ties"]],
                         "Spearman": [_number(v, ".2f") for v in frame["spearman_x100"]],
                         "mean": [_number(v, ".3f") for v in frame["mean"]],
                         "worst tenth": worst}, index=frame.index)


def _html_table(header: Sequence[str], rows) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"


def reliability_png(evaluation: Evaluation) -> bytes | None:
    """The reliability diagram of `evaluation` as PNG, or None without a calibrated column.

    One panel per calibrated (or human) column, one line per model: the mean score of the pairs
    in each tenth against their mean human score, with the diagonal of a perfect calibration.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    columns = list(dict.fromkeys(c for by_column in evaluation.tenths.values() for c in by_column
                                 if split_score_column(c)[1] in ("calibrated", "human")))
    if not columns:
        return None
    ncols = min(len(columns), 3)
    nrows = -(-len(columns) // ncols)
    fig = Figure(figsize=(4.4 * ncols, 4.2 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = list(fig.subplots(nrows, ncols, squeeze=False).flat)
    for ax, column in zip(axes, columns):
        ax.plot([0, 1], [0, 1], linestyle="--", color="#808080", linewidth=1, label="diagonal: score = human score")
        for model, by_column in evaluation.tenths.items():
            if column in by_column:
                points = by_column[column].dropna()
                ax.plot(points["mean_score"], points["mean_human"], marker="o", markersize=4, label=model)
        ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), title=column, xlabel="score (mean of each tenth)",
               ylabel="mean human score (0-1)")
        ax.legend(fontsize=7, loc="upper left")
    for ax in axes[len(columns):]:
        ax.set_visible(False)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=110, metadata={"Software": None})
    return png.getvalue()


def evaluation_html(files: Sequence[tuple[str, Evaluation]], *, models: Mapping[str, str] | None = None) -> str:
    """The evaluations of several pairs files as one self-contained HTML page (no network).

    Parameters
    ----------
    files : sequence of (file name, Evaluation)
    models : mapping model -> description, or None
        A line shown under each model's name (e.g. its references).

    Returns
    -------
    str
        Per file: the forms table of each model, the tenths against the human tenths, band
        coverage, the differences between models and the reliability diagram (embedded PNG).
    """
    models = models or {}
    edges = [i / TENTHS for i in range(TENTHS)]
    parts = []
    for name, evaluation in files:
        low, high = evaluation.scale
        parts.append(f"<h2>{html.escape(str(name))}</h2>\n<p>{evaluation.n_pairs:,} labelled pairs; human "
                     f"scores in '{html.escape(evaluation.label)}' on {low:g}-{high:g}, rescaled to 0-1 "
                     f"(mean {evaluation.label_mean:.3f}).</p>")
        for model, frame in evaluation.forms.items():
            shown = readable_forms(frame)
            parts.append(f"<h3>{html.escape(model)}</h3>"
                         + (f"<p>{html.escape(models[model])}</p>" if model in models else "")
                         + _html_table(["column", *shown.columns], [[c, *r] for c, r in zip(shown.index, shown.values)]))
            tenth_rows = [["human scores", *(f"{v:.1%}" for v in evaluation.label_tenths)]]
            tenth_rows += [[c, *(f"{v:.1%}" for v in t["share"])] for c, t in evaluation.tenths[model].items()]
            parts.append("<p>Share of pairs in each tenth of the 0-1 scale:</p>"
                         + _html_table(["column", *map(tenth_name, edges)], tenth_rows))
            coverage = [[c, BAND_LABELS.get(band, band), _number(n["coverage"], ".1%"), _number(n["mean_width"], ".3f")]
                        for c, bands in evaluation.coverage.get(model, {}).items() for band, n in bands.items()]
            if coverage:
                parts.append("<p>Share of the human scores inside each band around the calibrated score:</p>"
                             + _html_table(["column", "band", "coverage", "mean width"], coverage))
        if evaluation.differences:
            parts.append("<h3>Mean |difference| between models (forms on a 0-1 scale)</h3>" + _html_table(
                ["column", "mean", "by pair"],
                [[c, f"{d['mean_abs_diff']:.3f}", ", ".join(f"{k} {v:.3f}" for k, v in d["by_pair"].items())]
                 for c, d in evaluation.differences.items()]))
        png = reliability_png(evaluation)
        if png is not None:
            parts.append(f'<h3>Reliability diagram</h3>\n<img alt="reliability diagram of {html.escape(str(name))}" '
                         f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">\n'
                         "<p>Pairs binned by the tenth of their calibrated score: the mean score of each tenth "
                         "against its mean human score. On the diagonal, a calibrated score reads as the "
                         "expected human score.</p>")
    style = ("body{font-family:sans-serif;max-width:75em;margin:1em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;"
             "text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>calibsim evaluation</title>"
            f"<style>{style}</style></head>\n<body>\n<h1>calibsim evaluation</h1>\n"
            "<p>MAE and bias against the human scores rescaled to 0-1 (n/a: the form has no 0-1 scale); top ties: "
            "pairs sharing the highest score as shown (3 decimals); worst tenth: the tenth of the 0-1 scale holding "
            "the least of people's share of pairs (the form's share / people's share; under 1/3 is a hole).</p>\n"
            + "\n".join(parts) + f"\n<p>calibsim {html.escape(__version__)}</p>\n</body>\n</html>\n")
