"""The self-contained HTML report: one file, figures embedded, no network."""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING

from calibsim_gui import __version__
from calibsim_gui.core.reports.content import readable
from calibsim_gui.core.resources import resource_path

if TYPE_CHECKING:
    import pandas as pd  # heavy: imported where a table is made

TEMPLATE = ("report", "report.html.j2")


def html_table(frame: pd.DataFrame, *, numeric=()) -> str:
    """`frame` (already readable strings) as an escaped HTML table; `numeric` columns right-aligned."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = "".join(f'<td class="num">{html.escape(v)}</td>' if c in numeric
                        else f"<td>{html.escape(v)}</td>" for c, v in zip(frame.columns, row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>"


def _numeric(frame: pd.DataFrame) -> set:
    import pandas as pd

    return {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}


def _table(frame: pd.DataFrame) -> str:
    from markupsafe import Markup

    return Markup(html_table(readable(frame), numeric=_numeric(frame)))


def render_html(report) -> str:
    """The report as one HTML document (figures as embedded PNG)."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(resource_path(TEMPLATE[0])),
                             autoescape=True, keep_trailing_newline=True)
    table, note = report.results_table()
    agreement = report.agreement_table()
    evaluation, evaluation_note = report.evaluation_table() or (None, None)
    space = report.space_table()
    figures = [{"title": f.title, "caption": f.caption,
                "png_base64": base64.b64encode(f.png).decode("ascii")} for f in report.figures]
    return env.get_template(TEMPLATE[1]).render(
        title=report.title, version=__version__, summary=report.summary(), notes=report.notes(),
        agreement=None if agreement is None else _table(agreement),
        evaluation=None if evaluation is None else _table(evaluation), evaluation_note=evaluation_note,
        metric=report.metric, anchors=_table(report.anchors_table()),
        table=_table(table), table_note=note, figures=figures,
        how_to_read=report.how_to_read(), reproduce=report.reproduce(),
        reproduce_note=report.reproduce_note(), provenance_rows=report.provenance_rows(),
        space=None if space is None else _table(space),
        space_texts=None if report.space is None else report.space.texts)
