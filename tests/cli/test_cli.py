"""The command line, in-process, with the fake embedder standing in for the model."""

import json

import pandas as pd
import pytest

from calibsim_gui import cli
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setattr(cli, "_load_model", lambda args: FakeEmbedder())


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": ["A cat sleeps.", "Markets fell.", "Same text."],
                  "sentence2": ["A cat is sleeping.", "I like soup.", "Same text."],
                  "score": ["4.5", "0", "5"]}).to_csv(path, index=False)
    return path


@pytest.fixture
def background(tmp_path):
    path = tmp_path / "news.txt"
    path.write_text("\n".join(random_sentences(2500, seed=2)) + "\n\n")
    return path


def test_score_writes_table_and_provenance_sidecar(pairs, tmp_path, capsys):
    out = tmp_path / "scored.csv"
    assert cli.main(["score", str(pairs), "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert list(frame.columns[:3]) == ["sentence1", "sentence2", "score"]
    assert {"cosine_raw", "cosine_calibrated", "euclidean_anchor_minmax"} <= set(frame.columns)
    assert frame.loc[2, "cosine_calibrated"] == pytest.approx(1.0)
    sidecar = json.loads((tmp_path / "scored.csv.provenance.json").read_text())
    assert sidecar["model"]["name"] == "fake-bow"
    assert "agreement with human scores" in capsys.readouterr().out


def test_score_refuses_to_overwrite_without_force(pairs, tmp_path, capsys):
    out = tmp_path / "scored.csv"
    out.write_text("keep me")
    assert cli.main(["score", str(pairs), "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert cli.main(["score", str(pairs), "--out", str(out), "--force"]) == 0
    assert out.read_text() != "keep me"


def test_score_never_writes_over_its_input(pairs, capsys):
    before = pairs.read_bytes()
    assert cli.main(["score", str(pairs), "--out", str(pairs), "--force"]) == 2
    assert "input" in capsys.readouterr().err
    assert pairs.read_bytes() == before


def test_score_json_holds_rows_and_provenance(pairs, tmp_path):
    out = tmp_path / "scored.json"
    assert cli.main(["score", str(pairs), "--out", str(out), "--quiet"]) == 0
    data = json.loads(out.read_text())
    assert data["format"] == "calibsim-scores" and data["schema_version"] == 1
    assert len(data["rows"]) == 3 and "cosine_calibrated" in data["rows"][0]
    assert data["provenance"]["model"]["name"] == "fake-bow"


def test_profile_build_show_and_score_with_it(pairs, background, tmp_path, capsys):
    profile = tmp_path / "my.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1200",
                     "--out", str(profile)]) == 0
    err = capsys.readouterr().err
    assert "dropped 1 empty line" in err or "empty" in err
    assert cli.main(["profile", "show", str(profile)]) == 0
    assert "background pairs: 1200" in capsys.readouterr().out
    out = tmp_path / "scored.csv"
    assert cli.main(["score", str(pairs), "--profile", str(profile), "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert frame["cosine_bg_percentile"].between(0, 100).all()
    assert frame.loc[2, "cosine_bg_percentile"] == 100


def test_profile_merge_adds_up_background_pairs(background, tmp_path, capsys):
    lines = background.read_text().split("\n")
    halves = []
    for i, part in enumerate((lines[:1200], lines[1200:])):
        src = tmp_path / f"part{i}.txt"
        src.write_text("\n".join(part))
        out = tmp_path / f"part{i}.calibsim-profile"
        assert cli.main(["profile", "build", "--background", str(src), "--pairs", "500",
                         "--seed", str(i), "--out", str(out), "-q"]) == 0
        halves.append(str(out))
    merged = tmp_path / "merged.calibsim-profile"
    assert cli.main(["profile", "merge", *halves, "--out", str(merged)]) == 0
    assert "1000 background pairs" in capsys.readouterr().out


def test_matrix_writes_a_square_table(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("A cat on a mat.\nStock markets rallied.\n")
    (docs / "b.md").write_text("A dog on a log.\n")
    out = tmp_path / "m.csv"
    assert cli.main(["matrix", str(docs), "--out", str(out), "-q"]) == 0
    frame = pd.read_csv(out, index_col=0)
    assert frame.shape == (3, 3)
    assert list(frame.index) == list(frame.columns) == ["a.txt:1", "a.txt:2", "b.md:1"]
    assert frame.iloc[0, 0] == pytest.approx(1.0)


def test_unreadable_encoding_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "latin.csv"
    path.write_bytes("sentence1,sentence2\ncaf\xe9,th\xe9\n".encode("cp1252"))
    assert cli.main(["score", str(path), "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err
    assert "latin.csv" in err and "--encoding" in err
    assert cli.main(["score", str(path), "--encoding", "cp1252", "--out", str(tmp_path / "o.csv")]) == 0


def test_quiet_prints_no_progress(pairs, tmp_path, capsys):
    assert cli.main(["score", str(pairs), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_models_lists_the_built_in_model(capsys):
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    assert "all-MiniLM-L6-v2" in out and "built-in" in out


def test_unknown_metric_or_form_names_the_choices(pairs, tmp_path, capsys):
    assert cli.main(["score", str(pairs), "--metrics", "cosine,cosinus", "-q"]) == 2
    assert "cosinus" in capsys.readouterr().err
    assert cli.main(["matrix", str(pairs), "--column", "sentence1", "--form", "bg_percentile",
                     "--out", str(tmp_path / "m.csv"), "-q"]) == 2
    assert "choose --form from calibrated" in capsys.readouterr().err
