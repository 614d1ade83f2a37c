"""Degenerate but legal inputs get answers, not crashes: a handful of documents to diagnose,
anchors whose ends score the same, pairs that all compare a text with itself."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from calibsim_gui.core.geometry.diagnostics import diagnose
from calibsim_gui.core.geometry.hubness import hubness
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())


def test_diagnose_of_six_documents_says_hubness_needs_more_and_writes_json_without_nan(tmp_path, capsys):
    texts = random_sentences(6, seed=9)
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, text in enumerate(texts):
        (folder / f"d{i}.txt").write_text(text)
    out = tmp_path / "diagnostics.json"
    assert cli.main(["diagnose", str(folder), "--per-file", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr()
    assert "note: not enough documents for hubness (needs ≥ k+1 = 11, has 6)" in printed.out
    assert "nan" not in printed.out and "Traceback" not in printed.err
    raw = json.loads(out.read_text())["geometries"]["none"]
    assert raw["hubness"] is None and raw["notes"] == ["not enough documents for hubness (needs ≥ k+1 = 11, has 6)"]


def test_diagnose_of_two_documents_is_refused_naming_the_input(tmp_path, capsys):
    folder = tmp_path / "two"
    folder.mkdir()
    for i, text in enumerate(random_sentences(2, seed=10)):
        (folder / f"d{i}.txt").write_text(text)
    assert cli.main(["diagnose", str(folder), "--per-file", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{folder}: 2 document(s) are too few to diagnose; at least 3" in err and "Traceback" not in err


def test_hubness_of_k_plus_one_texts_is_zero_not_nan():
    points = np.random.default_rng(0).standard_normal((11, 8))
    assert hubness(points, k=10) == 0.0                  # everybody is everybody's neighbour: no hub
    report = diagnose(points)
    assert report["hubness"] == 0.0 and report["notes"] == []


def test_anchors_whose_ends_score_the_same_are_refused_naming_the_levels(tmp_path, capsys):
    ladder = tmp_path / "flat.json"
    ladder.write_text(json.dumps({
        "levels": [{"name": "unrelated", "target": 0.1}, {"name": "middle", "target": 0.5},
                   {"name": "same", "target": 0.9}],
        "pairs": [{"level": "unrelated", "text_a": "The cat sleeps.", "text_b": "The cat sleeps."},
                  {"level": "middle", "text_a": "Rain today.", "text_b": "Markets fell."},
                  {"level": "same", "text_a": "Markets fell today.", "text_b": "Markets fell today."}]}))
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": ["A cat."], "sentence2": ["A dog."]}).to_csv(pairs, index=False)
    assert cli.main(["score", str(pairs), "--anchors", str(ladder), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"calibsim: error: {ladder}: ") and "Traceback" not in err
    assert "lowest level “unrelated” scores 1" in err and "highest level “same” 1" in err
    assert "Fix: give “same” pairs more alike" in err


def test_pairs_that_all_compare_a_text_with_itself_are_scored_with_a_note(tmp_path, capsys):
    texts = random_sentences(10, seed=11)
    pairs, out = tmp_path / "same.csv", tmp_path / "scored.csv"
    pd.DataFrame({"sentence1": texts, "sentence2": texts}).to_csv(pairs, index=False)
    assert cli.main(["score", str(pairs), "--out", str(out)]) == 0
    assert "note: all 10 pairs compare a text with itself" in capsys.readouterr().out
    assert (pd.read_csv(out)["cosine_calibrated"] > 0.99).all()
    notes = json.loads((tmp_path / "scored.csv.provenance.json").read_text())["notes"]
    assert any("compare a text with itself" in note for note in notes)


@pytest.mark.parametrize("label", [2.5, 0.0])
def test_human_fit_on_constant_labels_is_refused_naming_the_file(tmp_path, capsys, label):
    """#43: it reported "mean absolute error 0.000" with no warning, and every cosine_human was then 0.40."""
    texts = random_sentences(800, seed=13)
    pairs, out = tmp_path / "constant.csv", tmp_path / "fit.calibsim-human"
    pd.DataFrame({"score": [label] * 400, "sentence1": texts[:400], "sentence2": texts[400:]}).to_csv(pairs, index=False)
    assert cli.main(["human", "fit", str(pairs), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"calibsim: error: {pairs}: all 400 labelled pairs have the same human score {label:g}")
    assert "Fix: label pairs across the scale" in err and not out.exists()


def test_human_fit_on_nearly_one_label_is_warned(tmp_path, capsys):
    texts = random_sentences(800, seed=14)
    labels = [5.0 if i % 50 else 0.0 for i in range(400)]            # 98 % score 5
    pairs, out = tmp_path / "mostly.csv", tmp_path / "fit.calibsim-human"
    pd.DataFrame({"score": labels, "sentence1": texts[:400], "sentence2": texts[400:]}).to_csv(pairs, index=False)
    assert cli.main(["human", "fit", str(pairs), "--out", str(out), "--quiet"]) == 0
    assert "warning: 98% of the labelled pairs have the same human score 5: the map is nearly flat" in \
        capsys.readouterr().out


def test_one_background_pair_is_refused_naming_pairs_before_anything_is_encoded(tmp_path, capsys, monkeypatch):
    """#43: `--pairs 1` on 400 sentences said the corpus "needs at least three distinct sentences"."""
    background = tmp_path / "news.txt"
    sentences = random_sentences(400, seed=12)
    background.write_text("\n".join(sentences) + "\n")
    fake = FakeEmbedder()
    monkeypatch.setattr(common, "load_model", lambda args: fake)
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1",
                     "--out", str(tmp_path / "p.calibsim-profile"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "1 background pair cannot make a background: at least 2 are needed (400 distinct sentences" in err
    assert "Fix: ask for more --pairs" in err and "three distinct" not in err
    assert not set(sentences) & {text for batch in fake.batches for text in batch}


def test_a_pairs_file_whose_cells_are_all_empty_says_so(tmp_path, capsys):
    """#43: it was blamed on unrecognised columns."""
    pairs = tmp_path / "empty-cells.csv"
    pairs.write_text("sentence1,sentence2\n,\n , \n,\n")
    assert cli.main(["score", str(pairs), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{pairs}: holds no text: every cell of its 3 rows is empty" in err and "recognised" not in err
