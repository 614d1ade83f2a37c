"""`calibsim evaluate`: the fake embedder for the command's plumbing, the real model on STS-B."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from tests.fakes import FakeEmbedder, random_sentences

PUBLISHED_SPEARMAN = 82.03          # MTEB, all-MiniLM-L6-v2, STS-B test, raw cosine


@pytest.fixture
def fake_models(monkeypatch):
    """`--model NAME` loads a fake embedder named NAME (a different model for every name)."""
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder(
        dimension=48 if args.model is None else 32, name=args.model or "fake-bow"))


def rows(out: str) -> dict[str, list[str]]:
    """Printed table rows by score column (the last table wins)."""
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line.startswith("  cosine_")}


def test_evaluate_prints_every_form_and_writes_json(fake_models, labelled_pairs, tmp_path, capsys):
    background, profile, out = tmp_path / "news.txt", tmp_path / "ref.calibsim-profile", tmp_path / "eval.json"
    background.write_text("\n".join(random_sentences(2500, seed=2)))
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1200",
                     "--out", str(profile), "-q"]) == 0
    assert cli.main(["evaluate", str(labelled_pairs), "--profile", str(profile), "--metrics", "cosine",
                     "--out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    table = rows(printed)
    assert {"cosine_raw", "cosine_calibrated", "cosine_bg_percentile", "cosine_bg_zscore"} <= set(table)
    assert table["cosine_bg_zscore"][0] == "n/a" and table["cosine_calibrated"][0] != "n/a"
    data = json.loads(out.read_text())
    assert data["format"] == "calibsim-evaluation" and data["schema_version"] == 2
    (evaluated,) = data["files"]
    assert evaluated["pairs"] == 150 and evaluated["input"]["sha256"]
    assert evaluated["scale"] == [0.0, 5.0] and evaluated["label"] == "score"
    model = "fake-bow@" + FakeEmbedder().fingerprint.digest[:16]
    forms = evaluated["forms"][model]
    assert forms["cosine_bg_zscore"]["mae"] is None
    assert forms["cosine_raw"]["spearman_x100"] == pytest.approx(float(table["cosine_raw"][3]), abs=0.01)
    assert "cosine_calibrated_lo" not in forms and "cosine_calibrated_lo" not in table
    assert sum(evaluated["tenths"][model]["cosine_calibrated"]["share"]) == pytest.approx(1)
    assert sum(evaluated["label_tenths"]) == pytest.approx(1)
    coverage = evaluated["coverage"][model]["cosine_calibrated"]["reference_uncertainty_95"]["coverage"]
    assert 0 <= coverage <= 1 and "reference uncertainty 95%" in printed
    assert data["provenance"][model]["model"]["id"] == model


def test_evaluate_compares_two_models(fake_models, labelled_pairs, capsys):
    assert cli.main(["evaluate", str(labelled_pairs), "--model", "other", "--model", "third",
                     "--metrics", "cosine", "-q"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\nmodel ") == 2
    differences = printed.split("mean |difference| between models")[1]
    assert "cosine_calibrated" in differences and "cosine_bg_zscore" not in differences


def test_evaluate_takes_several_files_each_on_its_own_scale(fake_models, labelled_pairs, tmp_path, capsys):
    frame = pd.read_csv(labelled_pairs)
    sick = tmp_path / "sick.csv"        # other pairs, scored 1-5: a third identical texts (5), the rest 1
    frame.assign(score=np.where(np.arange(len(frame)) % 3 == 0, 5.0, 1.0),
                 sentence2=np.where(np.arange(len(frame)) % 3 == 0, frame["sentence1"],
                                    frame["sentence2"].iloc[::-1].to_numpy())).to_csv(sick, index=False)
    out = tmp_path / "eval.json"
    assert cli.main(["evaluate", str(labelled_pairs), str(sick), "--scale", "0,5", "--scale", "1,5",
                     "--metrics", "cosine", "--out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n=== ") == 2 and printed.count("\nmodel ") == 2
    first, second = json.loads(out.read_text())["files"]
    assert (first["scale"], second["scale"]) == ([0.0, 5.0], [1.0, 5.0])
    assert first["input"]["file"] == str(labelled_pairs) and second["input"]["file"] == str(sick)
    for evaluated, path, (low, high) in ((first, labelled_pairs, (0, 5)), (second, sick, (1, 5))):
        assert evaluated["label_mean"] == pytest.approx(((pd.read_csv(path)["score"] - low) / (high - low)).mean())
        raw = next(iter(evaluated["forms"].values()))["cosine_raw"]
        identical = (pd.read_csv(path)["sentence1"] == pd.read_csv(path)["sentence2"]).mean()
        assert raw["top_ties"] == pytest.approx(identical) and identical > 0
    assert first["label_mean"] != second["label_mean"]
    # a --scale per file, or one for all
    assert cli.main(["evaluate", str(labelled_pairs), str(sick), "--scale", "0,5", "--scale", "1,5",
                     "--scale", "0,1", "-q"]) == 2
    assert "one --scale per file" in capsys.readouterr().err


def test_evaluate_writes_a_self_contained_html_report(fake_models, labelled_pairs, tmp_path, capsys):
    out = tmp_path / "eval.html"
    assert cli.main(["evaluate", str(labelled_pairs), "--model", "a", "--model", "b", "--metrics", "cosine",
                     "--out", str(out), "-q"]) == 0
    page = out.read_text()
    assert 'src="data:image/png;base64,' in page and "Reliability diagram" in page
    assert "cosine_calibrated" in page and "labelled.csv" in page and "a@" in page and "b@" in page
    assert not re.search(r"https?:", re.sub(r"base64,[A-Za-z0-9+/=]+", "", page))
    assert cli.main(["evaluate", str(labelled_pairs), "--out", str(tmp_path / "eval.pdf")]) == 2
    assert ".html" in capsys.readouterr().err


def test_evaluate_refuses_a_profile_for_several_models_and_unlabelled_pairs(fake_models, labelled_pairs,
                                                                             tmp_path, capsys):
    assert cli.main(["evaluate", str(labelled_pairs), "--model", "a", "--model", "b",
                     "--profile", "x.calibsim-profile"]) == 2
    assert "one model" in capsys.readouterr().err
    unlabelled = tmp_path / "unlabelled.csv"
    unlabelled.write_text("sentence1,sentence2\na cat,a dog\n")
    assert cli.main(["evaluate", str(unlabelled)]) == 2
    assert "human scores" in capsys.readouterr().err


def test_evaluate_takes_the_label_column_by_name(fake_models, labelled_pairs, tmp_path, capsys):
    renamed = tmp_path / "renamed.csv"
    renamed.write_text(labelled_pairs.read_text().replace("score,", "grade,", 1))
    assert cli.main(["evaluate", str(renamed), "--label-column", "grade", "--metrics", "cosine", "-q"]) == 0
    assert "human scores in 'grade' on 0-5" in capsys.readouterr().out


@pytest.mark.slow
def test_evaluate_the_builtin_model_on_the_full_stsb_test(stsb_test_path, tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert cli.main(["evaluate", str(stsb_test_path), "--metrics", "cosine", "--device", "cpu",
                     "--out", str(out), "-q"]) == 0
    table = rows(capsys.readouterr().out)
    assert {"cosine_raw", "cosine_calibrated"} <= set(table)
    forms = next(iter(json.loads(out.read_text())["files"][0]["forms"].values()))
    assert forms["cosine_raw"]["spearman_x100"] == pytest.approx(PUBLISHED_SPEARMAN, abs=0.05)
    assert 0 < forms["cosine_calibrated"]["mae"] < 0.5
