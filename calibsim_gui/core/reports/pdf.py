"""The paginated PDF report (reportlab, no browser): same content as the HTML report.

Text is set in DejaVu Sans (shipped with matplotlib), which covers Latin, Greek and Cyrillic
scripts; long tables continue on the next page under a repeated header row.
"""

from __future__ import annotations

import io
from pathlib import Path
from xml.sax.saxutils import escape

import pandas as pd

from calibsim_gui import __version__
from calibsim_gui.core.reports.content import readable

FONT, FONT_BOLD, FONT_MONO = "DejaVuSans", "DejaVuSans-Bold", "DejaVuSansMono"
TEXT_COLUMN_SHARE = 2.2        # a text column is this many times wider than a number column


def _register_fonts() -> None:
    import matplotlib
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    if FONT in pdfmetrics.getRegisteredFontNames():
        return
    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    for name in (FONT, FONT_BOLD, FONT_MONO):
        pdfmetrics.registerFont(TTFont(name, str(folder / f"{name}.ttf")))
    pdfmetrics.registerFontFamily(FONT, normal=FONT, bold=FONT_BOLD, italic=FONT, boldItalic=FONT_BOLD)


def _styles():
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet

    base = getSampleStyleSheet()
    styles = {name: ParagraphStyle(name, parent=base[parent], fontName=font)
              for name, parent, font in (("title", "Title", FONT_BOLD), ("h2", "Heading2", FONT_BOLD),
                                         ("h3", "Heading3", FONT_BOLD), ("body", "BodyText", FONT))}
    styles["small"] = ParagraphStyle("small", parent=styles["body"], fontSize=7, leading=8.4)
    styles["cell"] = ParagraphStyle("cell", parent=styles["body"], fontSize=7.5, leading=9)
    styles["caption"] = ParagraphStyle("caption", parent=styles["body"], fontSize=8, leading=10,
                                       textColor="#57606a")
    styles["code"] = ParagraphStyle("code", parent=base["Code"], fontName=FONT_MONO, fontSize=7.5,
                                    leading=9.5)
    return styles


def _table(frame: pd.DataFrame, styles, width: float, *, small: bool = False, shares=None, prefix=""):
    """A long table whose header row repeats on every page; text columns get more room.

    `prefix` is left out of the header labels (e.g. the featured metric, named above the table).
    """
    from reportlab.lib import colors
    from reportlab.platypus import LongTable, Paragraph, TableStyle

    numeric = {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}
    text = readable(frame)
    style = styles["small" if small else "cell"]
    header = [Paragraph(f"<b>{escape(str(c).removeprefix(prefix).replace('_', ' '))}</b>", style)
              for c in text.columns]
    rows = [[Paragraph(escape(v), style) for v in row] for row in text.itertuples(index=False)]
    shares = shares or [1.0 if c in numeric else TEXT_COLUMN_SHARE for c in text.columns]
    widths = [width * s / sum(shares) for s in shares]
    table = LongTable([header] + rows, colWidths=widths, repeatRows=1)
    table.setStyle(TableStyle([
        ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#d0d7de")),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#f3f5f7")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        *[("ALIGN", (i, 1), (i, -1), "RIGHT") for i, c in enumerate(text.columns) if c in numeric],
    ]))
    return table


def render_pdf(report, path, *, progress=None, check=None) -> None:
    """Write the report as a PDF to `path` (a temporary file: the caller renames it).

    `check()` is called after every laid-out element and may raise to stop.
    """
    from reportlab.lib.pagesizes import A4, landscape
    from reportlab.lib.units import cm
    from reportlab.platypus import (
        Image,
        KeepTogether,
        Paragraph,
        Preformatted,
        SimpleDocTemplate,
        Spacer,
    )

    _register_fonts()
    styles = _styles()
    page = landscape(A4)
    margin = 1.5 * cm
    width = page[0] - 2 * margin
    story = [Paragraph(escape(report.title), styles["title"]),
             Paragraph(f"Embedding similarity scores calibrated against explicit references with calibsim "
                       f"{__version__}. Every calibrated column is “higher = more similar”.", styles["body"]),
             Paragraph("Summary", styles["h2"])]
    summary = pd.DataFrame(report.summary(), columns=["item", "value"])
    story.append(_table(summary, styles, width, shares=[1, 4]))
    for note in report.notes():
        story.append(Paragraph("• " + escape(note), styles["body"]))
    agreement = report.agreement_table()
    if agreement is not None:
        story += [Paragraph("Agreement with the human scores (Spearman × 100)", styles["h3"]),
                  _table(agreement, styles, width)]
    evaluation = report.evaluation_table()
    if evaluation is not None:
        story.append(KeepTogether([
            Paragraph(f"Evaluation against the human scores ({escape(report.metric)})", styles["h3"]),
            Paragraph(escape(evaluation[1]), styles["body"]), _table(evaluation[0], styles, width)]))
    story += [Paragraph(f"Anchor levels ({escape(report.metric)})", styles["h3"]),
              _table(report.anchors_table(), styles, width)]
    table, note = report.results_table()
    story += [Paragraph("Results", styles["h2"]),
              Paragraph(escape(note) + f" Score columns are {escape(report.metric)} scores.", styles["body"]),
              _table(table, styles, width, small=True, prefix=f"{report.metric}_"),
              Paragraph("Figures", styles["h2"])]
    if progress:
        progress(1, 3, "drawing figures")
    for figure in report.figures:
        image = Image(io.BytesIO(figure.png))
        scale = min(width / image.drawWidth, (page[1] - 2 * margin - 2 * cm) / image.drawHeight)
        image.drawWidth, image.drawHeight = image.drawWidth * scale, image.drawHeight * scale
        story.append(KeepTogether([image, Paragraph(escape(figure.caption), styles["caption"])]))
    space = report.space_table()
    if space is not None:
        story += [Paragraph("The embedding space", styles["h2"]),
                  Paragraph(f"How this model's embeddings fill the space, measured on {report.space.texts:,} "
                            "background texts, raw and under each geometry fix (fitted on the background, "
                            "never on your pairs). A high mean cosine of random pairs and much variance "
                            "along few directions mean raw cosines crowd together.", styles["body"]),
                  _table(space, styles, width, shares=[2] + [1] * (len(space.columns) - 1))]
    story.append(Paragraph("How to read these numbers", styles["h2"]))
    for form, text in report.how_to_read():
        story += [Paragraph(f"<b>{escape(report.metric)}_{escape(form)}</b>", styles["body"]),
                  Paragraph(escape(text), styles["body"])]
    story += [Paragraph("Reproduce", styles["h2"]),
              Paragraph(f"With the same input files (check their sha256 in the summary), calibsim "
                        f"{__version__} and the same model fingerprint, these commands re-create every "
                        "number in this report:", styles["body"]),
              Spacer(1, 4), Preformatted("\n".join(report.reproduce()), styles["code"], maxLineLength=150)]

    def footer(canvas, doc):
        canvas.saveState()
        canvas.setFont(FONT, 7.5)
        canvas.setFillColor("#57606a")
        canvas.drawString(margin, margin / 2, report.title)
        canvas.drawRightString(page[0] - margin, margin / 2, f"page {doc.page}")
        canvas.restoreState()

    if progress:
        progress(2, 3, "laying out pages")
    doc = SimpleDocTemplate(str(path), pagesize=page, leftMargin=margin, rightMargin=margin,
                            topMargin=margin, bottomMargin=margin, title=report.title,
                            author="calibsim", creator=f"calibsim {__version__}")
    if check is not None:
        doc.afterFlowable = lambda _flowable: check()
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
