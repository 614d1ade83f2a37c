"""`calibsim neighbours`, in-process, with the fake embedder; `calibsim matrix` points to it."""

import json

import pandas as pd
import pytest

from calibsim_gui import cli
from tests.fakes import random_sentences


pytestmark = pytest.mark.usefixtures("loads")           # the fake model (tests/cli/conftest.py)


@pytest.fixture
def docs(tmp_path):
    texts = random_sentences(80, seed=4)
    texts += [texts[3] + " again", texts[3] + " again today", texts[10] + " too"]
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(texts) + "\n")
    return path, texts


def test_neighbours_writes_the_neighbours_pairs_and_groups_tables(docs, tmp_path, capsys):
    path, texts = docs
    out, pairs, groups = tmp_path / "n.csv", tmp_path / "p.tsv", tmp_path / "g.csv"
    assert cli.main(["neighbours", str(path), "--k", "3", "--duplicates-above", "0.7", "--out", str(out),
                     "--pairs-out", str(pairs), "--groups-out", str(groups)]) == 0
    printed = capsys.readouterr().out
    assert "83 documents, 3 nearest each by cosine (exact)" in printed and f"wrote {out}" in printed
    frame = pd.read_csv(out)
    assert list(frame.columns[:6]) == ["doc_id", "document", "rank", "neighbour_id", "neighbour", "cosine_raw"]
    assert len(frame) == 83 * 3 and "cosine_calibrated" in frame.columns
    assert (frame["doc_id"] != frame["neighbour_id"]).all()
    top = pd.read_csv(pairs, sep="\t")
    assert top["cosine_calibrated"].is_monotonic_decreasing
    assert {top["document"][0], top["neighbour"][0]} <= {texts[3], texts[80], texts[81], texts[10], texts[82]}
    members = pd.read_csv(groups)
    assert list(members.columns) == ["group", "size", "doc_id", "document"]
    assert set(members["document"]) >= {texts[3], texts[80], texts[81]}
    sidecar = json.loads((tmp_path / "g.csv.provenance.json").read_text())
    assert sidecar["table"] == "groups" and sidecar["neighbours"]["duplicate_threshold"] == 0.7


@pytest.mark.parametrize("suffix", [".json", ".xlsx"])
def test_a_json_or_xlsx_output_holds_every_table(docs, tmp_path, suffix):
    path, _ = docs
    out = tmp_path / f"n{suffix}"
    assert cli.main(["neighbours", str(path), "--k", "2", "--out", str(out), "-q"]) == 0
    if suffix == ".json":
        body = json.loads(out.read_text())
        assert body["format"] == "calibsim-neighbours" and len(body["neighbours"]) == 83 * 2
        assert {"pairs", "groups"} <= set(body) and body["provenance"]["neighbours"]["k"] == 2
        assert "higher = more similar" in body["columns"]["neighbours"]["cosine_calibrated"]
    else:
        sheets = pd.read_excel(out, sheet_name=None)
        assert list(sheets) == ["neighbours", "pairs", "groups", "provenance"]
        assert len(sheets["neighbours"]) == 83 * 2


def test_outputs_are_refused_before_any_work(docs, tmp_path, loads):
    path, _ = docs
    existing = tmp_path / "n.csv"
    existing.write_text("keep")
    assert cli.main(["neighbours", str(path), "--out", str(existing)]) != 0
    assert cli.main(["neighbours", str(path), "--out", str(tmp_path / "n.html")]) != 0
    assert cli.main(["neighbours", str(path), "--out", str(tmp_path / "a.csv"),
                     "--pairs-out", str(tmp_path / "a.csv")]) != 0
    assert cli.main(["neighbours", str(path), "--out", str(path), "--force"]) != 0
    assert loads == [] and existing.read_text() == "keep"
    assert cli.main(["neighbours", str(path), "--out", str(existing), "--force", "-q"]) == 0
    assert len(pd.read_csv(existing)) == 83 * 10


def test_a_set_over_the_budget_is_refused_with_what_to_change(docs, capsys):
    path, _ = docs
    assert cli.main(["neighbours", str(path), "--memory-budget", "202M"]) != 0
    err = capsys.readouterr().err
    assert "memory budget" in err and "--k" in err


def test_a_matrix_over_the_budget_points_to_calibsim_neighbours(tmp_path, capsys):
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(random_sentences(2000, seed=1)) + "\n")
    assert cli.main(["matrix", str(path), "--out", str(tmp_path / "m.csv"), "--memory-budget", "210M"]) != 0
    assert "calibsim neighbours" in capsys.readouterr().err
