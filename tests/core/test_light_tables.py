"""Small CSV/TSV pair files read and written without pandas (`light_tables`) give the same table,
notes and output bytes as the pandas path; every file it cannot read provably the same goes there."""

import csv
import json

import numpy as np
import pytest

from calibsim_gui.core.analysis.pairs import Scorer
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.io.csv_writer import ColumnTable
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.io.light_tables import LIGHT_MAX_BYTES, light_pair_table
from calibsim_gui.core.io.output import write_scored_pairs
from tests.fakes import FakeEmbedder

TRICKY = [
    ["sentence1", "sentence2", "id"],
    ["a \"quoted\" text, with a comma", "line one\nline two", "1"],
    ["Ünïcödé — 日本語 🙂", "=HYPERLINK(\"x\")", "2"],
    ["", "an empty partner", "3"],
    ["+1 555", "-minus", "4"],
    ["same", "same", "5"],
    ["same", "same", "6"],
    ["  padded  ", "@mention\tand tab", "7"],
]


@pytest.fixture(scope="module")
def fake_model():
    embedder = FakeEmbedder()
    return embedder, build_profile(embedder, None)


def _write(path, rows, sep=","):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, delimiter=sep, lineterminator="\n").writerows(rows)
    return path


def _stsb(tmp_path, stsb_test_path, n=120, scores=False):
    with open(stsb_test_path, newline="", encoding="utf-8") as f:
        rows = [row[0 if scores else 1:] for row in csv.reader(f)][:n + 1]      # (score,) sentence1, sentence2
    return _write(tmp_path / "stsb.csv", rows)


def _both(path, **reading):
    light = light_pair_table(path, **reading)
    assert light is not None and isinstance(light.frame, ColumnTable)
    return light, load_pairs(path, **reading)


def _outputs(tmp_path, model, tables, keep_formulas=False, **settings):
    embedder, profile = model
    written = []
    for name, table in zip(("light", "pandas"), tables):
        scored = Scorer(embedder, profile, **settings).score(table)
        out = write_scored_pairs(scored, tmp_path / f"{name}.csv", keep_formulas=keep_formulas)
        provenance = json.loads((tmp_path / f"{name}.csv.provenance.json").read_text(encoding="utf-8"))
        provenance.pop("created")
        written.append((out.read_bytes(), provenance, scored.notes))
    return written


@pytest.mark.parametrize("scores", [False, True])
@pytest.mark.parametrize("settings", [{}, {"interval": True}, {"norms": True},
                                      {"interval": True, "norms": True, "metrics": ["cosine"]}])
def test_stsb_pairs_scored_on_the_light_path_are_written_byte_for_byte_as_on_the_pandas_path(
        tmp_path, stsb_test_path, fake_model, settings, scores):
    tables = _both(_stsb(tmp_path, stsb_test_path, scores=scores))
    (light, light_prov, light_notes), (heavy, heavy_prov, heavy_notes) = _outputs(tmp_path, fake_model, tables,
                                                                                  **settings)
    assert light == heavy and light.count(b"\n") == 121
    assert light_prov == heavy_prov and light_notes == heavy_notes
    assert ("agreement" in light_prov) == scores and tables[0].label == ("score" if scores else None)


@pytest.mark.parametrize("reading", [{}, {"label": "Gold"}])
def test_plain_decimal_human_scores_are_read_and_agree_as_on_the_pandas_path(tmp_path, fake_model, reading):
    scores = ["1", "2.50", "+.5", "-3.", "", "123456789012345", "0.00000000000001", "4.75", "-0", "17"]
    rows = [["sentence1", "sentence2", "Gold"]] + [[f"text {i}", f"other {i % 3}", v] for i, v in enumerate(scores)]
    light, heavy = _both(_write(tmp_path / "gold.csv", rows), **reading)
    assert (light.label, light.notes) == (heavy.label, heavy.notes) == ("Gold", heavy.notes)
    assert "1 pair without a human score" in light.notes
    (a, a_prov, a_notes), (b, b_prov, b_notes) = _outputs(tmp_path, fake_model, (light, heavy))
    assert a == b and a_prov == b_prov and a_notes == b_notes and a_prov["agreement"]["spearman_x100"]


def test_plain_decimals_of_up_to_15_digits_read_as_pandas_reads_them():
    import pandas as pd

    rng = np.random.default_rng(7)
    cells = []
    for _ in range(3000):
        digits = "".join(map(str, rng.integers(0, 10, rng.integers(1, 16))))
        dot = int(rng.integers(0, len(digits) + 1))
        cells.append(rng.choice(["", "+", "-"]) + digits[:dot] + "." + digits[dot:] if rng.random() < 0.8
                     else digits)
    parsed = pd.to_numeric(pd.Series(cells, dtype="str"), errors="coerce").to_numpy(dtype=float)
    assert np.array_equal(parsed, [float(c) for c in cells])


@pytest.mark.parametrize("sep, suffix", [(",", ".csv"), ("\t", ".tsv")])
@pytest.mark.parametrize("keep_formulas", [False, True])
def test_quoted_multiline_unicode_and_formula_cells_read_and_write_as_with_pandas(tmp_path, fake_model, sep,
                                                                                 suffix, keep_formulas):
    light, heavy = _both(_write(tmp_path / f"tricky{suffix}", TRICKY, sep))
    assert light.frame.columns == list(heavy.frame.columns)
    for column in heavy.frame.columns:
        assert light.frame[column] == heavy.frame[column].tolist()
    assert (light.text_a, light.text_b, light.label, light.empty_rows, light.notes, light.document_column) == (
        heavy.text_a, heavy.text_b, heavy.label, heavy.empty_rows, heavy.notes, heavy.document_column)
    (a, a_prov, _), (b, b_prov, _) = _outputs(tmp_path, fake_model, (light, heavy), keep_formulas, norms=True)
    assert a == b and a_prov == b_prov
    assert (b"'=HYPERLINK" in a) != keep_formulas


def test_named_text_columns_are_taken_as_the_pandas_path_takes_them(tmp_path):
    path = _write(tmp_path / "named.csv", [["left", "id", "right"], ["a text", "1", "another"], ["x", "2", "y"]])
    light, heavy = _both(path, text_a="RIGHT", text_b="left")
    assert (light.text_a, light.text_b, light.notes) == (heavy.text_a, heavy.text_b, heavy.notes) == (
        "right", "left", heavy.notes)


@pytest.mark.parametrize("text, reading", [
    ("sentence1,sentence2,score\na,b, 1\n", {}),                          # human scores pandas may read
    ("sentence1,sentence2,score\na,b,1e3\n", {}),                         # other than a plain decimal
    ("sentence1,sentence2,score\na,b,1234567890123456\n", {}),            # past 15 digits
    ("sentence1,sentence2,score\na,b,high\nc,d,1\n", {}),                # not numeric: a note
    ("sentence1,sentence2,score\na,b,\nc,d,\n", {}),                     # no score at all: a note
    ("sentence1,sentence2,gold\na,b,1\n", {"label": "nope"}),           # a label column missing
    ('"sentence1","sentence2"\n"a","b"\n', {}),                           # quoted beyond need
    ("sentence1,sentence2\na,b\n\nc,d\n", {}),                            # a blank line
    ("sentence1,sentence2\na,b,c\n", {}),                                 # a row longer than the header
    ("sentence1,sentence2\na\n", {}),                                     # a short row
    ("sentence1,sentence2\n\"a,b\n", {}),                                 # a quote never closed
    ("one,two\n1_000,a\n2,b\n", {}),                                      # a number pandas may not read
    ("one,two\n12345678901234567890,a\n2,b\n", {}),                       # nor this one, alike
    ("sentence1,sentence2\n\u00a0,b\nc,d\n", {}),                           # a space Arrow may not strip
    ("x,x\na,b\n", {}),                                                   # a repeated column name
    ("sentence1,sentence2\n", {}),                                        # no data rows
    ("sentence1,sentence2\na,b\n", {"text_a": "sentence1"}),              # one text column named
    ("sentence1,sentence2\na,b\n", {"text_a": "nope", "text_b": "sentence2"}),  # a column missing
    ("sentence1,sentence2\na,b\n", {"label": "sentence2"}),
    ("sentence1,sentence2\n,\n", {}),                                     # no text at all
])
def test_files_not_provably_read_the_same_go_to_the_pandas_path(tmp_path, text, reading):
    path = tmp_path / "pairs.csv"
    path.write_text(text, encoding="utf-8")
    assert light_pair_table(path, **reading) is None


def test_large_and_json_lines_files_go_to_the_pandas_path(tmp_path):
    big = tmp_path / "big.csv"
    big.write_text("sentence1,sentence2\n" + "a text,another text\n" * (LIGHT_MAX_BYTES // 20 + 1), encoding="utf-8")
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text('{"sentence1": "a", "sentence2": "b"}\n', encoding="utf-8")
    assert light_pair_table(big) is None and light_pair_table(jsonl) is None


def test_a_scored_light_table_keeps_input_columns_flags_and_scores_in_order(tmp_path, fake_model):
    embedder, profile = fake_model
    table = light_pair_table(_write(tmp_path / "p.csv", TRICKY))
    frame = Scorer(embedder, profile, metrics=["cosine"]).score(table).frame
    assert frame.columns[:3] == ["sentence1", "sentence2", "id"] and frame.columns[3] == "cosine_raw"
    assert np.isnan(frame["cosine_raw"][2]) and len(frame) == len(TRICKY) - 1
