"""Reports in every format, read back: what a reader of the file would see."""

import io
import json
import os
import re

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.calibrators import Calibrator
from calibsim_gui.core.errors import CalibsimError, InputError
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.reports import build_report, space_cache, write_figures, write_report
from calibsim_gui.core.reports.content import format_number
from tests.fakes import FakeEmbedder, random_sentences

N_PAIRS = 160


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(2500, seed=3), ProfileSettings(n_pairs=1500, seed=4))


@pytest.fixture(scope="module")
def pairs_path(tmp_path_factory):
    rng = np.random.default_rng(1)
    a = random_sentences(N_PAIRS, seed=11)
    b = [s if i % 7 == 0 else t for i, (s, t) in enumerate(zip(a, random_sentences(N_PAIRS, seed=12)))]
    path = tmp_path_factory.mktemp("in") / "pairs.csv"
    pd.DataFrame({"score": rng.uniform(0, 5, N_PAIRS).round(1), "sentence1": a, "sentence2": b,
                  }).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def report(pairs_path, profile):
    scored = score_pairs(load_pairs(pairs_path), FakeEmbedder(), profile)
    return build_report(scored, profile)


def test_csv_reads_back_equal_to_the_results(report, tmp_path):
    out = write_report(report, tmp_path / "r.csv")
    texts = {"score": str, "sentence1": str, "sentence2": str}       # input columns stay as read
    pd.testing.assert_frame_equal(pd.read_csv(out, dtype=texts), report.result.frame,
                                  check_dtype=False, rtol=1e-9)
    assert json.loads((tmp_path / "r.csv.provenance.json").read_text())["model"]["name"] == "fake-bow"


def test_json_holds_rows_and_calibrators_that_reproduce_every_column(report, tmp_path):
    data = json.loads(write_report(report, tmp_path / "r.json").read_text())
    rows = pd.DataFrame(data["rows"])
    pd.testing.assert_frame_equal(rows, report.result.frame, check_dtype=False)
    raw = rows["euclidean_raw"].to_numpy()
    for form in ("calibrated", "bg_percentile", "bg_zscore", "bg_surprise"):
        calibrator = Calibrator.from_dict(data["calibrators"]["euclidean"][form])
        np.testing.assert_allclose(calibrator.transform(METRICS["euclidean"].as_similarity(raw)),
                                   rows[f"euclidean_{form}"], rtol=1e-12)
    assert data["columns"]["cosine_bg_percentile"].startswith("percent of random")
    assert len(data["anchors"]["scores"]["cosine"]) == len(data["anchors"]["pairs"])
    assert data["provenance"]["input_sha256"]


def test_xlsx_has_results_at_full_precision_and_provenance(report, tmp_path):
    out = write_report(report, tmp_path / "r.xlsx")
    sheets = pd.read_excel(out, sheet_name=None, dtype={"sentence1": str, "sentence2": str})
    assert list(sheets)[:2] == ["results", "provenance"]
    expected = report.result.frame.assign(score=pd.to_numeric(report.result.frame["score"]))
    pd.testing.assert_frame_equal(sheets["results"], expected, check_dtype=False, rtol=1e-12)
    provenance = dict(zip(sheets["provenance"]["key"], sheets["provenance"]["value"]))
    assert provenance["provenance.model.digest"] == report.provenance["model"]["digest"]
    assert any(key.startswith("reproduce") for key in provenance)
    assert set(sheets["calibrators"]["metric"]) == set(METRICS)


def test_xlsx_keeps_numbers_as_numbers_and_ids_with_leading_zeros_as_text(profile, tmp_path):
    path = tmp_path / "scored.csv"
    pd.DataFrame({"id": ["007", "010"], "score": ["4.5", ""], "sentence1": ["a cat", "12"],
                  "sentence2": ["a dog", "a bird"]}).to_csv(path, index=False)
    report = build_report(score_pairs(load_pairs(path), FakeEmbedder(), profile), profile)
    from openpyxl import load_workbook

    sheet = load_workbook(write_report(report, tmp_path / "r.xlsx"))["results"]
    header = [cell.value for cell in sheet[1]]
    score, ident, first = (sheet.cell(2, header.index(name) + 1) for name in ("score", "id", "sentence1"))
    assert (score.value, score.data_type) == (4.5, "n")            # was the text "4.5"
    assert sheet.cell(3, header.index("score") + 1).value is None   # a missing score stays empty
    assert (ident.value, ident.data_type) == ("007", "s") and first.data_type == "s"


def test_xlsx_keeps_formula_like_texts_as_text(profile, tmp_path):
    path = tmp_path / "evil.csv"
    pd.DataFrame({"sentence1": ["=HYPERLINK(\"http://x\",\"y\")", "fine"],
                  "sentence2": ["=1+1", "also fine"]}).to_csv(path, index=False)
    report = build_report(score_pairs(load_pairs(path), FakeEmbedder(), profile), profile)
    from openpyxl import load_workbook

    sheet = load_workbook(write_report(report, tmp_path / "r.xlsx"))["results"]
    assert sheet["A2"].value == "=HYPERLINK(\"http://x\",\"y\")" and sheet["A2"].data_type == "s"
    assert sheet["B2"].data_type == "s"


def test_html_is_self_contained_and_shows_summary_table_and_figures(report, tmp_path):
    text = write_report(report, tmp_path / "r.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text), "no network resources"
    assert "@import" not in text and "url(" not in text
    # what the numbers mean comes first; the file hashes in an appendix, the full table last
    assert text.index('id="summary"') < text.index('id="how-to-read"') < text.index('id="figures"') \
        < text.index('id="reproduce"') < text.index('id="provenance"') < text.index('id="results"')
    assert '<div class="scroll">' in text and "overflow: auto" in text     # wide tables scroll
    summary_html = text[text.index('id="summary"'):text.index('id="how-to-read"')]
    assert "sha256" not in summary_html
    assert "sha256" in text[text.index('id="provenance"'):text.index('id="results"')]
    assert report.provenance["model"]["digest"] in text
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', text)) == 3   # distributions, map, PR
    tables = pd.read_html(io.StringIO(text))
    results = next(t for t in tables if "sentence1" in t.columns)
    assert len(results) == N_PAIRS
    assert list(results["sentence1"]) == list(report.result.frame["sentence1"])
    assert all(re.fullmatch(r"\d{1,3}\.\d %", v) for v in results["cosine_bg_percentile"])
    assert "euclidean_raw" not in results.columns       # readable tables feature one metric
    first = report.result.frame.loc[0, "cosine_calibrated"]
    assert results.loc[0, "cosine_calibrated"] == pytest.approx(first, abs=5e-4)
    relative = os.path.relpath(report.input_files[0], tmp_path)     # how to reproduce it, from the report's folder
    assert f"calibsim score {relative} " in text and relative.endswith("pairs.csv") and relative != "pairs.csv"


def test_html_escapes_the_users_text(profile, tmp_path):
    path = tmp_path / "tags.csv"
    pd.DataFrame({"sentence1": ["<script>alert(1)</script>", "a & b"],
                  "sentence2": ["<b>bold</b>", "c"]}).to_csv(path, index=False)
    report = build_report(score_pairs(load_pairs(path), FakeEmbedder(), profile), profile)
    text = write_report(report, tmp_path / "r.html").read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_pdf_text_pages_and_first_page_render(report, tmp_path):
    pdfium = pytest.importorskip("pypdfium2")
    out = write_report(report, tmp_path / "r.pdf")
    pdf = pdfium.PdfDocument(str(out))
    pages = [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    everything = " ".join(pages)
    assert len(pdf) >= 4
    assert "calibsim report: pairs.csv" in pages[0] and "Summary" in pages[0]
    assert report.provenance["model"]["digest"] in everything.replace("\r\n", "")
    table_pages = [i for i, page in enumerate(pages) if "sentence1" in page]
    assert len(table_pages) >= 2, "the results table continues, with its header, on the next page"
    last = report.result.frame["sentence1"].iloc[-1]
    assert last.split()[0] in pages[table_pages[-1]]
    assert all(f"page {i + 1}" in page for i, page in enumerate(pages))
    assert "How to read these numbers" in everything and "Reproduce" in everything
    image = np.asarray(pdf[0].render(scale=1).to_pil().convert("L"))
    assert image.shape[1] > image.shape[0] and image.std() > 10      # landscape, not blank
    pdf.close()


def test_existing_file_is_kept_without_force_and_replaced_with_it(report, tmp_path):
    out = tmp_path / "r.html"
    out.write_text("keep me")
    with pytest.raises(InputError, match="exists"):
        write_report(report, out)
    assert out.read_text() == "keep me"
    write_report(report, out, force=True)
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_a_failing_write_leaves_no_file_and_says_why(report, tmp_path, monkeypatch):
    from calibsim_gui.core.reports import pdf

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pdf, "render_pdf", broken)
    with pytest.raises(CalibsimError, match="No space left"):
        write_report(report, tmp_path / "r.pdf")
    assert list(tmp_path.iterdir()) == []


def test_figures_alone_as_png_and_svg(report, tmp_path):
    written = write_figures(report, tmp_path / "r.html")
    assert sorted(p.name for p in written) == ["r-calibrated-map.png", "r-calibrated-map.svg",
                                               "r-distribution.png", "r-distribution.svg",
                                               "r-precision-recall.png", "r-precision-recall.svg"]
    assert (tmp_path / "r-distribution.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import xml.etree.ElementTree as ET

    assert ET.parse(tmp_path / "r-distribution.svg").getroot().tag.endswith("svg")
    with pytest.raises(InputError, match="exists"):
        write_figures(report, tmp_path / "r.html")


def test_document_matrix_report_has_heatmap_and_top_pairs(profile, tmp_path):
    docs_path = tmp_path / "docs.txt"
    docs_path.write_text("\n".join(random_sentences(30, seed=8)))
    result = score_matrix(load_documents([docs_path]), FakeEmbedder(), profile, forms=("calibrated",))
    report = build_report(result, profile)
    text = write_report(report, tmp_path / "m.html").read_text()
    assert len(re.findall(r"data:image/png;base64,", text)) == 3          # heatmap, distribution, map
    top = next(t for t in pd.read_html(io.StringIO(text)) if "document_a" in t.columns)
    values = top["cosine_calibrated"].astype(float).to_numpy()
    assert len(top) == 30 * 29 // 2 or len(top) == 50
    assert np.all(np.diff(values) <= 1e-3), "most similar pairs first"
    square = pd.read_csv(write_report(report, tmp_path / "m.csv"), index_col=0)
    np.testing.assert_allclose(square.to_numpy(), result.matrices["calibrated"], rtol=1e-5)
    data = json.loads(write_report(report, tmp_path / "m.json").read_text())
    assert data["format"] == "calibsim-matrix" and data["ids"] == result.ids


def test_report_heatmap_is_the_apps_clustered_order_and_off_diagonal_colours(profile, tmp_path):
    from calibsim_gui.core.reports.figures import heatmap_data

    pets = ["a cat sat on the mat", "the cat sat on a mat", "a small cat sat on the mat"]
    money = ["stock markets fell sharply", "the stock market fell sharply today", "markets fell as stocks sank"]
    path = tmp_path / "mixed.txt"
    path.write_text("\n".join([pets[0], money[0], pets[1], money[1], pets[2], money[2]]))
    result = score_matrix(load_documents([path]), FakeEmbedder(), profile, forms=("calibrated",))
    form, ids, matrix, (low, high) = heatmap_data(build_report(result, profile))
    topics = ["pets" if result.texts[result.ids.index(i)] in pets else "money" for i in ids]
    assert topics in (["pets"] * 3 + ["money"] * 3, ["money"] * 3 + ["pets"] * 3)   # not input order
    off = matrix[~np.eye(6, dtype=bool)]
    assert form == "calibrated" and (low, high) == (max(off.min(), 0.0), min(off.max(), 1.0))
    assert high < 1.0 - 1e-6 or off.max() >= 1.0                        # the diagonal's 1 is left out


def test_document_matrix_reports_list_local_minmax_labelled_as_local(profile, tmp_path):
    from calibsim_gui.core.analysis.matrices import local_minmax_rows

    docs_path = tmp_path / "docs.txt"
    docs_path.write_text("\n".join(random_sentences(12, seed=8)))
    result = score_matrix(load_documents([docs_path]), FakeEmbedder(), profile, forms=("calibrated",))
    report = build_report(result, profile)
    sim = result.matrices["raw"].astype(float)
    expected = np.empty_like(sim)                             # by hand: each row's others' min and max
    for r in range(len(sim)):
        others = np.delete(sim[r], r)
        expected[r] = (sim[r] - others.min()) / (others.max() - others.min())
    np.testing.assert_allclose(report.matrices["local_minmax"], expected, atol=1e-5)
    np.testing.assert_allclose(local_minmax_rows(sim), expected, atol=1e-12)
    text = write_report(report, tmp_path / "m.html").read_text()
    assert "LOCAL min-max" in text and "NOT comparable across documents, sets or reports" in text
    top = next(t for t in pd.read_html(io.StringIO(text)) if "document_a" in t.columns)
    assert "cosine_local_minmax" in top.columns
    sheets = pd.read_excel(write_report(report, tmp_path / "m.xlsx"), sheet_name=None, index_col=0)
    np.testing.assert_allclose(sheets["cosine_local_minmax"].to_numpy(), expected, atol=1e-5)
    data = json.loads(write_report(report, tmp_path / "m.json").read_text())
    assert "NOT comparable" in data["columns"]["local_minmax"]
    np.testing.assert_allclose(data["matrices"]["local_minmax"], expected, atol=1e-5)


@pytest.mark.parametrize(("value", "form", "text"), [
    (97.345, "bg_percentile", "97.3 %"), (2.4149, "bg_zscore", "+2.41"), (-0.5, "query_zscore", "-0.50"),
    (0.912345, "raw", "0.9123"), (0.91234, "calibrated", "0.912"), (float("nan"), "raw", "–"),
    (3, None, "3"), (2.5, None, "2.5"), ("text", None, "text"),
    (-1.2e-09, "raw", "0.0000"), (-0.0004, "calibrated", "0.000"), (1e-05, "bg_zscore", "0.00"),
])
def test_numbers_are_formatted_for_reading(value, form, text):
    assert format_number(value, form) == text


def test_a_number_column_that_is_not_a_score_reads_at_one_precision():
    from calibsim_gui.core.reports.content import readable

    frame = pd.DataFrame({"score": ["2.5", "1.714", "3", ""], "pair_id": [7, 12, 3, 4],
                          "ratio": [0.1 + 0.2, 1e-07, 2.0, 3.0], "cosine_calibrated": [0.5, 0.25, 0.1, 1.0]})
    shown = readable(frame)
    assert list(shown["score"]) == ["2.500", "1.714", "3.000", "–"]          # labels as written, aligned
    assert list(shown["pair_id"]) == ["7", "12", "3", "4"]
    assert list(shown["ratio"]) == ["0.3", "1e-07", "2", "3"]                # computed: as before
    assert list(shown["cosine_calibrated"]) == ["0.500", "0.250", "0.100", "1.000"]


def test_stopping_a_pdf_export_midway_leaves_no_file(report, tmp_path):
    from calibsim_gui.core.errors import Cancelled

    calls = []

    def stop_after_a_few():
        calls.append(1)
        return len(calls) > 5

    with pytest.raises(Cancelled):
        write_report(report, tmp_path / "r.pdf", should_stop=stop_after_a_few)
    assert list(tmp_path.iterdir()) == [] and len(calls) == 6


def test_reports_describe_the_space_raw_and_under_each_geometry_fix(report, tmp_path):
    text = write_report(report, tmp_path / "r.html").read_text()
    assert 'id="space"' in text
    space = next(t for t in pd.read_html(io.StringIO(text)) if "measure" in t.columns)
    assert {"raw", "whitened", "mean-centred", "all-but-the-top"} <= set(space.columns)
    assert "IsoScore (0-1, 1 = isotropic)" in set(space["measure"])
    data = json.loads(write_report(report, tmp_path / "r.json").read_text())
    assert set(data["diagnostics"]) == {"none", "center", "whiten", "abtt", "soft"}


def test_reports_of_one_profile_diagnose_its_background_once(report, profile, monkeypatch):
    computed = []
    real = space_cache.profile_space
    monkeypatch.setattr(space_cache, "_SPACES", type(space_cache._SPACES)())
    monkeypatch.setattr(space_cache, "profile_space", lambda p: computed.append(p) or real(p))
    first = build_report(report.result, profile).space
    second = build_report(report.result, profile).space
    assert len(computed) == 1 and second is first
    other = build_profile(FakeEmbedder(), random_sentences(600, seed=5), ProfileSettings(n_pairs=300, seed=6))
    assert build_report(report.result, other).space.diagnostics != first.diagnostics
    assert len(computed) == 2


def test_reports_show_the_calibrated_map_and_the_typical_interval_width(report, tmp_path):
    text = write_report(report, tmp_path / "r.html").read_text()
    figure = text[text.index('<img alt="cosine: calibrated map"'):]
    caption = figure[figure.index("<figcaption>"):figure.index("</figcaption>")]
    assert f"the {len(report.profile.anchors.pairs)} anchor pairs" in caption
    shift = report.profile.metrics["cosine"].calibrators["calibrated"].shift
    assert f"lowered by {shift:.3f}" in caption
    reading = text[text.index('id="how-to-read"'):]
    reading = reading[reading.index("<dt>cosine_calibrated</dt>"):]
    reading = reading[:reading.index("</dd>")]
    assert "the straight line from a typical pair of unrelated sentences" in reading
    width = report.provenance["calibrated_interval"]["per_metric"]["cosine"]
    median, p90 = (f"{w:.3f}" if w >= 0.0005 else "below 0.001"
                   for w in (width["median_width"], width["p90_width"]))
    assert f"Its reference uncertainty (95 %, the reference sentences resampled) is typically {median} wide" in reading

    pdfium = pytest.importorskip("pypdfium2")
    pdf = pdfium.PdfDocument(str(write_report(report, tmp_path / "r.pdf")))
    everything = " ".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))
    pdf.close()
    assert "How a cosine score (x) becomes cosine_calibrated (y)" in everything       # the map's caption
    assert f"{p90} or less" in everything


HOSTILE_TEXTS = [" ".join(f"word{i}" for i in range(2000)),          # one 2,000-word cell
                 "القطة تنام على الأريكة", "החתול ישן על הספה", "猫在沙发上睡觉", "고양이가 잔다",
                 "a cat 😺 sleeps", "mixed: the word שלום means peace"]


def test_pdf_renders_long_cells_and_every_script_with_a_note_on_what_it_cannot_show(profile, tmp_path):
    pdfium = pytest.importorskip("pypdfium2")
    path = tmp_path / "hostile.csv"
    pd.DataFrame({"sentence1": HOSTILE_TEXTS, "sentence2": HOSTILE_TEXTS[::-1]}).to_csv(path, index=False)
    report = build_report(score_pairs(load_pairs(path), FakeEmbedder(), profile), profile)
    pdf = pdfium.PdfDocument(str(write_report(report, tmp_path / "r.pdf")))
    text = " ".join(pdf[i].get_textpage().get_text_range() for i in range(len(pdf)))
    pdf.close()
    flat = " ".join(text.split())
    assert "cannot show (CJK, HANGUL" in flat and "The HTML report shows them" in flat
    assert "cut with “…” to fit a table cell" in flat and "word1999" not in flat
    assert "ספה" in flat or "הספ" in flat[::-1] or "הפס" in flat       # Hebrew is there, in some order
    assert "word0 word1" in flat


def test_labelled_pairs_get_a_precision_recall_figure_and_unlabelled_none(report, profile, tmp_path):
    figure = next(f for f in report.figures if f.name == "precision-recall")
    assert "'score' is at least 4" in figure.caption and figure.png[:4] == b"\x89PNG"
    unlabelled = tmp_path / "plain.csv"
    pd.read_csv(report.input_files[0]).drop(columns="score").to_csv(unlabelled, index=False)
    plain = build_report(score_pairs(load_pairs(unlabelled), FakeEmbedder(), profile), profile)
    assert [f.name for f in plain.figures] == ["distribution", "calibrated-map"]


def test_search_report_reads_the_local_min_max_as_local(profile, tmp_path):
    from calibsim_gui.core.io.inputs import load_documents
    from calibsim_gui.core.analysis.search import search

    texts = random_sentences(60, seed=13)
    (tmp_path / "q.txt").write_text("\n".join(texts[:4]))
    (tmp_path / "docs.txt").write_text("\n".join(texts))
    hits = search(load_documents(tmp_path / "q.txt"), load_documents(tmp_path / "docs.txt"),
                  FakeEmbedder(), profile, top_k=3)
    search_report = build_report(hits, profile)
    assert search_report.kind == "search" and search_report.metrics == ["cosine"]
    summary = dict(search_report.summary())
    assert summary["Queries"] == "4 from 1 file(s)" and summary["Corpus"] == "60 documents from 1 file(s)"
    table, note = search_report.results_table()
    assert list(table.columns[:3]) == ["query", "rank", "document"] and len(table) == 12
    assert "cosine_local_minmax" in table.columns and "cosine_query_zscore" in table.columns
    readings = dict(search_report.how_to_read())
    assert "NOT comparable" in readings["local_minmax"] and "query" in readings["query_zscore"]
    assert search_report.reproduce()[-1].startswith(f"calibsim search {tmp_path / 'q.txt'} --corpus ")
    search_report.path = tmp_path / "hits.html"          # written beside its inputs: relative names
    assert search_report.reproduce()[-1].startswith("calibsim search q.txt --corpus docs.txt")
    assert [f.name for f in search_report.figures] == ["distribution", "calibrated-map"]
    for suffix in (".csv", ".xlsx", ".pdf"):
        assert write_report(search_report, tmp_path / f"hits{suffix}").stat().st_size > 0
    assert len(pd.read_csv(tmp_path / "hits.csv")) == 12


def test_pdf_opens_with_what_the_numbers_mean_and_ends_with_the_full_table(report, tmp_path):
    pdfium = pytest.importorskip("pypdfium2")
    out = write_report(report, tmp_path / "order.pdf")
    pdf = pdfium.PdfDocument(str(out))
    pages = [pdf[i].get_textpage().get_text_range().replace("\r\n", "\n") for i in range(len(pdf))]
    pdf.close()
    first = pages[0]
    assert "Summary" in first and "How to read these numbers" in first and "sha256" not in first
    figures = next(i for i, page in enumerate(pages) if "Key figures" in page)
    table = next(i for i, page in enumerate(pages) if "Results (the full table)" in page)
    provenance = next(i for i, page in enumerate(pages) if "Provenance" in page)
    assert figures <= 1 < table and provenance <= table
    assert all("Results (the full table)" not in page and "Key figures" not in page
               for page in pages[table + 1:])


def test_pdf_headers_wrap_between_words_or_are_abbreviated_with_a_legend():
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.pdfbase.pdfmetrics import stringWidth

    from calibsim_gui.core.reports.pdf import (
        ABBREVIATIONS,
        CELL_PADDING,
        FONT_BOLD,
        _column_widths,
        _register_fonts,
        abbreviate,
        header_label,
    )

    _register_fonts()
    style = ParagraphStyle("h", fontSize=7)
    assert header_label("cosine_bg_percentile@whiten", "cosine_") == "bg percentile @whiten"
    labels = ["text", "raw", "calibrated", "bg percentile", "anchor minmax"]
    widths = _column_widths(labels, [2.2, 1, 1, 1, 1], 300, style)
    for label, w in zip(labels, widths):             # every header word fits its column
        assert max(stringWidth(x, FONT_BOLD, 7) for x in label.split()) + CELL_PADDING <= w + 1e-6
    assert sum(widths) == pytest.approx(300)
    assert abbreviate("bg percentile @whiten") == f"bg {ABBREVIATIONS['percentile']} @wh."


def test_xlsx_sheets_keep_their_header_in_view_with_a_filter(report, tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.load_workbook(write_report(report, tmp_path / "frozen.xlsx"))
    results = book["results"]
    assert results.freeze_panes == "A2"
    assert results.auto_filter.ref == results.dimensions


def test_an_edited_ladder_is_named_written_beside_the_report_and_reproduced(pairs_path, profile, tmp_path):
    from calibsim_gui.core.references.anchors import AnchorSet
    from calibsim_gui.core.calibration.profile_builder import with_anchors

    ladder = profile.anchors
    edited = with_anchors(profile, FakeEmbedder(),
                          AnchorSet(ladder.name, ladder.levels, ladder.pairs[::2]))
    report = build_report(score_pairs(load_pairs(pairs_path), FakeEmbedder(), edited), edited)
    assert report.custom_anchors
    build, score = report.reproduce()          # a profile of its own: built with the edited ladder
    assert build.startswith("calibsim profile build") and "--anchors report-anchors.json" in build
    out = write_report(report, tmp_path / "edited.html")
    written = tmp_path / "edited-anchors.json"
    assert AnchorSet.from_dict(json.loads(written.read_text())) == edited.anchors
    text = out.read_text()
    assert "--anchors edited-anchors.json" in text and "edited-anchors.json" in report.reproduce_note()
    summary = dict(report.summary())
    assert "edited" in summary["Anchors"] and f"{len(edited.anchors.pairs)} pairs" in summary["Anchors"]
    plain = build_report(report.result, profile)
    assert not plain.custom_anchors and "built in" in dict(plain.summary())["Anchors"]


def test_builtin_ladder_writes_no_anchor_file_and_bfloat16_is_reproduced(report, tmp_path):
    write_report(report, tmp_path / "plain.json")
    assert not (tmp_path / "plain-anchors.json").exists()
    assert "--anchors" not in " ".join(report.reproduce())
    model = report.provenance["model"]
    saved = dict(model)
    try:
        model.update(precision="bfloat16", precision_note="bfloat16 (auto: this CPU runs it natively)")
        assert "--precision bfloat16" in report.reproduce()[-1]
        assert dict(report.summary())["Precision"] == "bfloat16 (auto: this CPU runs it natively)"
    finally:
        model.clear()
        model.update(saved)


def test_background_and_input_are_told_apart_and_the_text_column_is_recorded(tmp_path):
    background = tmp_path / "test.csv"
    texts = random_sentences(300, seed=5)
    pd.DataFrame({"id": range(300), "body": texts}).to_csv(background, index=False)
    docs = load_documents(background, column="body")
    profile = build_profile(FakeEmbedder(), docs, ProfileSettings(n_pairs=200))
    assert profile.provenance["background"]["text_columns"] == {"test.csv": "body"}
    inputs = tmp_path / "in"
    inputs.mkdir()
    pairs = inputs / "test.csv"
    pd.DataFrame({"sentence1": texts[:5], "sentence2": texts[5:10]}).to_csv(pairs, index=False)
    report = build_report(score_pairs(load_pairs(pairs), FakeEmbedder(), profile), profile)
    summary = dict(report.summary())
    assert str(pairs) in summary["Input (the pairs scored)"]
    background_row = summary["Background (reference corpus, not your input)"]
    assert "test.csv" in background_row and "'body'" in background_row
    appendix = dict(report.provenance_rows())
    assert "Background file (test.csv)" in appendix and "Input file (test.csv)" in appendix


def test_a_document_set_report_reproduces_its_form_and_keeps_hashes_out_of_the_summary(profile, tmp_path):
    texts = random_sentences(30, seed=9)
    for i, text in enumerate(texts):
        (tmp_path / f"doc{i:02d}.txt").write_text(text)
    docs = load_documents(sorted(tmp_path.glob("doc*.txt")), per_file=True)
    report = build_report(score_matrix(docs, FakeEmbedder(), profile, forms=("csls",)), profile, form="csls")
    assert report.form == "csls" and report.calibration_form == "calibrated"
    command = report.reproduce()[-1]
    assert "--per-file" in command and "--form csls" in command
    summary = report.summary()
    assert not any("sha256" in f"{label} {value}" for label, value in summary)
    assert sum(label.startswith("Input file") for label, _ in report.provenance_rows()) == 30
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.load_workbook(write_report(report, tmp_path / "m.xlsx"))
    assert book["cosine_csls"].freeze_panes == "B2" and book["provenance"].freeze_panes == "A2"
    assert write_report(report, tmp_path / "m.html").stat().st_size > 0       # anchors table, figures
