"""The paginated PDF report (reportlab, no browser): same content as the HTML report.

Text is set in DejaVu Sans (shipped with matplotlib), which covers Latin, Greek, Cyrillic,
Arabic and Hebrew; right-to-left text is put in display order (python-bidi) with Arabic letters
joined (arabic-reshaper). Characters the font lacks (CJK, Hangul, Thai, Devanagari, ...) are
named in a note that points to the HTML report. A very long text is cut with "…" to fit a
table cell (the full text is in the HTML, XLSX, JSON and CSV outputs). Long tables continue on
the next page under a repeated header row.
"""

from __future__ import annotations

import functools
import html
import io
import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from calibsim_gui import __version__
from calibsim_gui.core.reports.content import readable

if TYPE_CHECKING:
    import pandas as pd  # heavy: imported where a table is made

FONT, FONT_BOLD, FONT_MONO = "DejaVuSans", "DejaVuSans-Bold", "DejaVuSansMono"
TEXT_COLUMN_SHARE = 2.2        # a text column is this many times wider than a number column
CELL_LINES = 20                # a table cell shows at most about this many lines of text
CELL_PADDING = 12              # points of a cell's width taken by its left and right padding
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")     # Hebrew, Arabic (+ forms)
escape = functools.partial(html.escape, quote=False)
"""&, < and > as entities, as ``xml.sax.saxutils.escape`` (whose import loads urllib, http and
ssl: ~0.05 s of every command that writes a report)."""


class _Texts:
    """Turns user texts into paragraphs the PDF can show, noting characters the font lacks."""

    def __init__(self, styles):
        from reportlab.pdfbase import pdfmetrics

        self.styles = styles
        self.glyphs = set(pdfmetrics.getFont(FONT).face.charToGlyph)
        self.missing: set[str] = set()
        self.clipped = 0

    def para(self, text: str, style: str = "body", *, width: float | None = None, bold: bool = False):
        """`text` as a Paragraph; in a table cell of `width` points, cut to fit."""
        from reportlab.platypus import Paragraph

        style = self.styles[style]
        self.missing.update(c for c in text if ord(c) > 0x7f and ord(c) not in self.glyphs
                            and not unicodedata.category(c).startswith(("Z", "C", "M")))
        if width is not None:
            text = self._clip(text, width, style.fontSize)
        if _RTL.search(text):
            body = "<br/>".join(escape(line) for line in _visual_lines(text, style, width))
        else:
            body = escape(text)
        return Paragraph(f"<b>{body}</b>" if bold else body, style)

    def _clip(self, text: str, width: float, size: float) -> str:
        limit = max(40, int((width - CELL_PADDING) / (0.5 * size)) * CELL_LINES)
        if len(text) <= limit:
            return text
        self.clipped += 1
        return text[:limit].rstrip() + "…"

    def notes(self) -> list[str]:
        """What the PDF could not show as-is, and where to read it in full."""
        notes = []
        if self.missing:
            scripts = sorted({unicodedata.name(c, "OTHER").split()[0] for c in self.missing})
            notes.append(f"Some texts hold characters this PDF's font cannot show ({', '.join(scripts[:6])}"
                         f"{', ...' if len(scripts) > 6 else ''}: {len(self.missing)} distinct); they "
                         "appear as empty boxes here. The HTML report shows them.")
        if self.clipped:
            notes.append(f"{self.clipped} long text(s) are cut with “…” to fit a table cell; the HTML, "
                         "XLSX, JSON and CSV outputs hold them in full.")
        return notes


def _visual_lines(text: str, style, width: float | None) -> list[str]:
    """`text` wrapped to `width` in reading order, each line then put in display order."""
    from arabic_reshaper import reshape
    from bidi import get_display
    from reportlab.lib.utils import simpleSplit

    lines = simpleSplit(text, style.fontName, style.fontSize, width - CELL_PADDING) if width \
        else [text]
    return [get_display(reshape(line)) for line in lines]


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


def _table(frame: pd.DataFrame, texts: _Texts, width: float, *, small: bool = False, shares=None,
           prefix="", legend: list | None = None):
    """A long table whose header row repeats on every page; text columns get more room.

    `prefix` is left out of the header labels (e.g. the featured metric, named above the table).
    Headers wrap between words; where the columns are too many for whole words, the words are
    abbreviated (see `ABBREVIATIONS`) and the abbreviations used are added to `legend`.
    """
    import pandas as pd

    from reportlab.lib import colors
    from reportlab.platypus import LongTable, TableStyle

    numeric = {c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])}
    text = readable(frame)
    style = "small" if small else "cell"
    shares = shares or [1.0 if c in numeric else TEXT_COLUMN_SHARE for c in text.columns]
    labels = [header_label(c, prefix) for c in text.columns]
    if _header_width(labels, texts.styles[style]) > width:
        short = [abbreviate(label) for label in labels]
        if legend is not None:
            used = {w for label in labels for w in label.split()} & set(ABBREVIATIONS)
            legend += [f"{ABBREVIATIONS[w]} = {w}" for w in ABBREVIATIONS if w in used
                       and f"{ABBREVIATIONS[w]} = {w}" not in legend]
        labels = short
    widths = _column_widths(labels, shares, width, texts.styles[style],
                            values=[text[c].head(500) if c in numeric else () for c in text.columns])
    header = [texts.para(label, style, width=w, bold=True) for label, w in zip(labels, widths)]
    rows = [[texts.para(v, style, width=w) for v, w in zip(row, widths)]
            for row in text.itertuples(index=False)]
    table = LongTable([header] + rows, colWidths=widths, repeatRows=1)
    table.setStyle(TableStyle([
        ("GRID", (0, 0), (-1, -1), 0.25, colors.HexColor("#d0d7de")),
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#f3f5f7")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        *[("ALIGN", (i, 1), (i, -1), "RIGHT") for i, c in enumerate(text.columns) if c in numeric],
    ]))
    return table


def header_label(column, prefix: str = "") -> str:
    """A column name as a header that wraps between words: ``_`` and ``@`` become break points
    (``cosine_bg_percentile@whiten`` reads "bg percentile @whiten" under the prefix ``cosine_``)."""
    return str(column).removeprefix(prefix).replace("_", " ").replace("@", " @")


ABBREVIATIONS = {"calibrated": "cal.", "percentile": "pct.", "minmax": "mm", "surprise": "surpr.",
                 "zscore": "z", "anchor": "anch.", "query": "qry", "@whiten": "@wh.",
                 "@center": "@ctr.", "sentence1": "text 1", "sentence2": "text 2"}
"""Header words shortened (with a legend under the table) when a table has many columns."""


def abbreviate(label: str) -> str:
    return " ".join(ABBREVIATIONS.get(word, word) for word in label.split())


def _header_width(labels, style) -> float:
    from reportlab.pdfbase.pdfmetrics import stringWidth

    return sum(max((stringWidth(w, FONT_BOLD, style.fontSize) for w in label.split()), default=0)
               + CELL_PADDING + 1 for label in labels)


def _column_widths(labels, shares, width: float, style, values=None) -> list[float]:
    """Widths in proportion to `shares`, each at least as wide as its header's longest word
    and its widest number (`values`: the readable numbers of each column, () for texts), so
    headers wrap at word boundaries and numbers never wrap, when the page allows it."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    widths = [width * s / sum(shares) for s in shares]
    values = values or [()] * len(labels)
    needed = [max([stringWidth(word, FONT_BOLD, style.fontSize) for word in label.split()]
                  + [stringWidth(str(v), FONT, style.fontSize) for v in column], default=0)
              + CELL_PADDING + 1 for label, column in zip(labels, values)]
    if sum(needed) > width:                 # too many columns: keep the proportions
        return widths
    for _ in range(len(widths)):
        short = [i for i, (w, n) in enumerate(zip(widths, needed)) if w < n]
        if not short:
            break
        extra = sum(needed[i] - widths[i] for i in short)
        for i in short:
            widths[i] = needed[i]
        roomy = [i for i in range(len(widths)) if i not in short and widths[i] > needed[i]]
        spare = sum(widths[i] - needed[i] for i in roomy)
        for i in roomy:                     # taken from the columns with room, in proportion
            widths[i] -= extra * (widths[i] - needed[i]) / spare if spare else 0
    return widths


def render_pdf(report, path, *, progress=None, check=None) -> None:
    """Write the report as a PDF to `path` (a temporary file: the caller renames it).

    `check()` is called after every laid-out element and may raise to stop.
    """
    import pandas as pd
    from reportlab.lib.pagesizes import A4, landscape
    from reportlab.lib.units import cm
    from reportlab.platypus import (
        Image,
        KeepTogether,
        PageBreak,
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
    texts = _Texts(styles)
    figures = report.figures
    if progress:
        progress(1, 3, "drawing figures")

    def image(figure, max_height):
        picture = Image(io.BytesIO(figure.png))
        scale = min(width / picture.drawWidth, max_height / picture.drawHeight)
        picture.drawWidth, picture.drawHeight = picture.drawWidth * scale, picture.drawHeight * scale
        return [picture, texts.para(figure.caption, "caption")]

    # Page 1 answers "what do these numbers mean": summary, how to read them, the key figure.
    story = [texts.para(report.title, "title"),
             Paragraph(f"Embedding similarity scores calibrated against explicit references with calibsim "
                       f"{__version__}. Every calibrated column is “higher = more similar”.", styles["body"]),
             Paragraph("Summary", styles["h2"])]
    summary = pd.DataFrame(report.summary(), columns=["item", "value"])
    story.append(_table(summary, texts, width, small=True, shares=[1, 4]))
    story.append(Paragraph("How to read these numbers", styles["h2"]))
    for form, text in report.how_to_read():
        story.append(Paragraph(f"<b>{escape(report.metric)}_{escape(form)}</b>: {escape(text)}",
                               styles["small"]))
    figure_height = 0.55 * (page[1] - 2 * margin)     # a figure with its caption fits under text
    for i, figure in enumerate(figures):
        heading = [Paragraph("Key figures", styles["h2"])] if i == 0 else []
        story.append(KeepTogether(heading + image(figure, figure_height)))
    story.append(Paragraph("Notes on this run", styles["h3"]))
    notes_at = len(story)           # where notes on what this PDF cannot show go, once known
    for note in report.notes():
        story.append(texts.para("• " + note, "small"))
    agreement = report.agreement_table()
    if agreement is not None:
        story += [Paragraph("Agreement with the human scores (Spearman × 100)", styles["h3"]),
                  _table(agreement, texts, width)]
    evaluation = report.evaluation_table()
    if evaluation is not None:
        story.append(KeepTogether([
            Paragraph(f"Evaluation against the human scores ({escape(report.metric)})", styles["h3"]),
            Paragraph(escape(evaluation[1]), styles["body"]), _table(evaluation[0], texts, width)]))
    story += [Paragraph(f"Anchor levels ({escape(report.metric)})", styles["h3"]),
              _table(report.anchors_table(), texts, width)]
    space = report.space_table()
    if space is not None:
        story += [Paragraph("The embedding space", styles["h2"]),
                  Paragraph(f"How this model's embeddings fill the space, measured on {report.space.texts:,} "
                            "background texts, raw and under each geometry fix (fitted on the background, "
                            "never on your pairs). A high mean cosine of random pairs and much variance "
                            "along few directions mean raw cosines crowd together.", styles["body"]),
                  _table(space, texts, width, shares=[2] + [1] * (len(space.columns) - 1))]
    story += [Paragraph("Reproduce", styles["h2"]),
              Paragraph(escape(report.reproduce_note()), styles["body"]),
              Spacer(1, 4), Preformatted("\n".join(report.reproduce()), styles["code"], maxLineLength=150),
              Paragraph("Provenance", styles["h2"]),
              _table(pd.DataFrame(report.provenance_rows(), columns=["item", "value"]), texts, width,
                     small=True, shares=[1, 4])]
    table, note = report.results_table()
    legend: list[str] = []
    results = _table(table, texts, width, small=True, prefix=f"{report.metric}_", legend=legend)
    story += [PageBreak(), Paragraph("Results (the full table)", styles["h2"]),
              Paragraph(escape(note) + f" Score columns are {escape(report.metric)} scores."
                        + (f" Headers are abbreviated: {escape(', '.join(legend))}." if legend else ""),
                        styles["body"]),
              results]

    def footer(canvas, doc):
        canvas.saveState()
        canvas.setFont(FONT, 7.5)
        canvas.setFillColor("#57606a")
        canvas.drawString(margin, margin / 2, report.title)
        canvas.drawRightString(page[0] - margin, margin / 2, f"page {doc.page}")
        canvas.restoreState()

    story[notes_at:notes_at] = [texts.para("• " + note) for note in texts.notes()]
    if progress:
        progress(2, 3, "laying out pages")
    doc = SimpleDocTemplate(str(path), pagesize=page, leftMargin=margin, rightMargin=margin,
                            topMargin=margin, bottomMargin=margin, title=report.title,
                            author="calibsim", creator=f"calibsim {__version__}")
    if check is not None:
        doc.afterFlowable = lambda _flowable: check()
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
