"""The command line, in-process, with the fake embedder standing in for the model."""

import json

import numpy as np
import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())


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
    assert frame.loc[2, "cosine_calibrated"] > 0.999                 # identical: the top
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


def test_score_json_holds_rows_calibrators_and_provenance(pairs, tmp_path):
    out = tmp_path / "scored.json"
    assert cli.main(["score", str(pairs), "--out", str(out), "--quiet"]) == 0
    data = json.loads(out.read_text())
    assert data["format"] == "calibsim-scores" and data["schema_version"] == 2
    assert len(data["rows"]) == 3 and "cosine_calibrated" in data["rows"][0]
    assert data["provenance"]["model"]["name"] == "fake-bow"
    assert data["calibrators"]["cosine"]["calibrated"]["type"] == "ReferenceScaleCalibrator"


@pytest.mark.parametrize("suffix", [".html", ".pdf", ".xlsx"])
def test_score_writes_reports_and_figures_by_extension(pairs, tmp_path, suffix, capsys):
    out = tmp_path / f"report{suffix}"
    assert cli.main(["score", str(pairs), "--out", str(out), "--figures", "--quiet"]) == 0
    assert out.stat().st_size > 1000
    assert (tmp_path / "report-distribution.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (tmp_path / "report-distribution.svg").read_text()
    # a second run refuses to replace the figures without --force, before scoring anything
    out2 = tmp_path / "report.json"
    assert cli.main(["score", str(pairs), "--out", str(out2), "--figures"]) == 2
    assert "report-distribution" in capsys.readouterr().err and not out2.exists()


def test_unknown_output_format_is_refused_with_the_formats(pairs, tmp_path, capsys):
    assert cli.main(["score", str(pairs), "--out", str(tmp_path / "scores.docx")]) == 2
    err = capsys.readouterr().err
    assert ".html" in err and ".xlsx" in err


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


def test_profile_build_cluster_options_need_the_ray_engine(background, tmp_path, capsys):
    out = tmp_path / "p.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--address", "auto",
                     "--out", str(out), "-q"]) == 2
    assert "--engine ray" in capsys.readouterr().err and not out.exists()
    assert cli.main(["profile", "build", "--engine", "ray", "--out", str(out), "-q"]) == 2
    assert "--background" in capsys.readouterr().err and not out.exists()


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
    twice = tmp_path / "twice.calibsim-profile"
    assert cli.main(["profile", "merge", halves[0], halves[0], "--out", str(twice)]) == 2
    assert "count the same background pairs twice" in capsys.readouterr().err and not twice.exists()


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
    assert frame.iloc[0, 0] > 0.999                               # a text with itself: the top


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
    with pytest.raises(SystemExit) as refused:            # when the line is parsed (tests/cli/test_mistyped_names.py)
        cli.main(["score", str(pairs), "--metrics", "cosine,cosinus", "-q"])
    assert refused.value.code == 2 and "unknown metric(s) ['cosinus']" in capsys.readouterr().err
    assert cli.main(["matrix", str(pairs), "--column", "sentence1", "--form", "bg_percentile",
                     "--out", str(tmp_path / "m.csv"), "-q"]) == 2
    assert "choose --form from calibrated" in capsys.readouterr().err


def test_diagnose_shows_raw_and_each_geometry_fix(background, tmp_path, capsys):
    profile = tmp_path / "bg.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1000",
                     "--out", str(profile), "-q"]) == 0
    capsys.readouterr()
    assert cli.main(["diagnose", "--profile", str(profile), "-q"]) == 0
    out = capsys.readouterr().out
    assert "IsoScore" in out and "whitened" in out and "all-but-the-top" in out
    docs = tmp_path / "a.txt"
    docs.write_text("\n".join(random_sentences(60, seed=9)))
    other = tmp_path / "b.txt"
    other.write_text("\n".join(random_sentences(60, seed=10, vocabulary=50)))
    result = tmp_path / "diag.json"
    assert cli.main(["diagnose", str(docs), str(other), "--labels-from-files", "--profile", str(profile),
                     "--out", str(result), "-q"]) == 0
    data = json.loads(result.read_text())
    assert set(data["geometries"]) == {"none", "center", "whiten", "abtt", "soft"}
    assert data["geometries"]["none"]["silhouette"] is not None
    assert data["geometries"]["none"]["texts"] == 120


def test_diagnose_without_a_background_says_how_to_get_one(capsys):
    assert cli.main(["diagnose", "-q"]) == 2
    assert "background" in capsys.readouterr().err


def test_human_fit_then_score_with_it(labelled_pairs, pairs, tmp_path, capsys):
    cal = tmp_path / "stsb"
    assert cli.main(["human", "fit", str(labelled_pairs), "--scale", "0,5", "--out", str(cal), "-q"]) == 0
    out = capsys.readouterr().out
    assert "cross-validated" in out and "by sentence" in out and "warning: only 150 labelled pairs" in out
    saved = tmp_path / "stsb.calibsim-human"
    assert json.loads(saved.read_text())["calibrator"]["type"] == "HumanCalibrator"
    scored = tmp_path / "scored.csv"
    assert cli.main(["score", str(pairs), "--human", str(saved), "--out", str(scored), "-q"]) == 0
    human = pd.read_csv(scored)["cosine_human"]
    assert human.between(0, 1).all() and human[2] == pytest.approx(1.0)     # "Same text." twice


def test_human_fit_refuses_a_wrong_scale_and_too_few_pairs(labelled_pairs, pairs, tmp_path, capsys):
    assert cli.main(["human", "fit", str(labelled_pairs), "--scale", "0,1", "--out", str(tmp_path / "a"), "-q"]) == 2
    assert "outside the declared scale" in capsys.readouterr().err
    assert cli.main(["human", "fit", str(pairs), "--out", str(tmp_path / "b"), "-q"]) == 2
    assert "at least 100" in capsys.readouterr().err


def test_score_under_a_geometry_fix_adds_its_columns(pairs, background, tmp_path):
    profile = tmp_path / "bg.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1000",
                     "--out", str(profile), "-q"]) == 0
    out = tmp_path / "scored.csv"
    assert cli.main(["score", str(pairs), "--profile", str(profile), "--geometry", "whiten",
                     "--out", str(out), "-q"]) == 0
    frame = pd.read_csv(out)
    assert {"cosine_raw", "cosine_raw@whiten", "cosine_bg_percentile@whiten"} <= set(frame.columns)
    assert frame.loc[2, "cosine_calibrated@whiten"] > 0.999


def test_compare_two_models_side_by_side(pairs, tmp_path, monkeypatch, capsys):
    other = FakeEmbedder(dimension=32, name="fake-small")
    monkeypatch.setattr(common, "load_model", lambda args: other if args.model == "small" else FakeEmbedder())
    out = tmp_path / "comparison.csv"
    assert cli.main(["compare", str(pairs), "--model", "builtin", "--model", "small", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mean absolute difference" in text and "calibrated" in text
    frame = pd.read_csv(out)
    assert any("fake-small" in c for c in frame.columns) and any("fake-bow" in c for c in frame.columns)


def test_norms_and_csls_views(pairs, background, tmp_path):
    out = tmp_path / "scored.csv"
    assert cli.main(["score", str(pairs), "--norms", "--metrics", "dot", "--out", str(out), "-q"]) == 0
    frame = pd.read_csv(out)
    assert {"sentence1_norm", "sentence2_norm", "dot_raw"} <= set(frame.columns)
    assert frame["sentence1_norm"].gt(0).all()
    profile = tmp_path / "bg.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1000",
                     "--out", str(profile), "-q"]) == 0
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(random_sentences(20, seed=3)))
    matrix = tmp_path / "csls.json"
    assert cli.main(["matrix", str(docs), "--profile", str(profile), "--form", "csls", "--out", str(matrix),
                     "-q"]) == 0
    assert "csls" in json.loads(matrix.read_text())["matrices"]


def test_memory_budget_refuses_a_run_that_would_not_fit_and_says_how_much(pairs, tmp_path, capsys,
                                                                        monkeypatch):
    out = tmp_path / "o.csv"
    assert cli.main(["score", str(pairs), "--out", str(out), "--memory-budget", "1M"]) == 2
    err = capsys.readouterr().err
    assert "pairs.csv: reading 1 file of 116 B needs about" in err       # refused before reading
    assert "more than the memory budget of 1.0 MB" in err
    assert not out.exists()
    monkeypatch.setenv("CALIBSIM_MEMORY_BUDGET", "2M")
    assert cli.main(["matrix", str(pairs), "--column", "sentence1", "--out", str(out)]) == 2
    assert "budget of 2.0 MB" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["score", str(pairs), "--memory-budget", "plenty"])
    assert "write it like 4G" in capsys.readouterr().err
    assert cli.main(["score", str(pairs), "--out", str(out), "--memory-budget", "4G", "-q"]) == 0


def test_score_long_texts_are_flagged_or_chunked_and_recorded(tmp_path, capsys):
    from tests.core.test_chunking import DOC_A, DOC_B, long_document

    path = tmp_path / "long.csv"
    doc_c, doc_d = long_document(2000, 1), long_document(2000, 2)
    pd.DataFrame({"sentence1": [DOC_A, doc_c, "A cat sleeps."],
                  "sentence2": [DOC_B, doc_d, "A cat sleeps."]}).to_csv(path, index=False)
    out = tmp_path / "truncated.csv"
    assert cli.main(["score", str(path), "--out", str(out)]) == 0
    assert "2 pairs have a truncated text (column truncated)" in capsys.readouterr().out
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame["truncated"]) == ["both", "both", ""]
    assert frame.loc[0, "cosine_calibrated"] > 0.999                   # the issue: reads as identical
    sidecar = json.loads((tmp_path / "truncated.csv.provenance.json").read_text())
    assert "truncated" in sidecar["columns"] and sidecar["long_texts"]["mode"] == "truncate"

    chunked = tmp_path / "chunked.csv"
    assert cli.main(["score", str(path), "--long-texts", "chunk", "--chunk-overlap", "4",
                     "--out", str(chunked), "--quiet"]) == 0
    frame = pd.read_csv(chunked, keep_default_na=False)
    assert "truncated" not in frame.columns and frame.loc[0, "cosine_raw"] < 0.999
    assert frame.loc[2, "cosine_calibrated"] > 0.999                   # short pairs as before
    long = json.loads((tmp_path / "chunked.csv.provenance.json").read_text())["long_texts"]
    assert (long["mode"], long["aggregate"], long["overlap"]) == ("chunk", "match", 4)

    report = tmp_path / "report.html"
    assert cli.main(["score", str(path), "--long-texts", "chunk", "--chunk-aggregate", "max",
                     "--out", str(report), "--quiet"]) == 0
    assert "--long-texts chunk --chunk-aggregate max --chunk-overlap 32" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize("options", [["--long-texts", "split"], ["--chunk-aggregate", "median"],
                                     ["--chunk-overlap", "-1"]])
def test_score_refuses_bad_long_text_options(pairs, options, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["score", str(pairs), *options])
    assert stop.value.code == 2


def test_matrix_csv_holds_the_requested_form_under_its_own_label(background, tmp_path):
    profile = tmp_path / "bg.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1000",
                     "--out", str(profile), "-q"]) == 0
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(random_sentences(12, seed=3)))
    matrix_json, matrix_csv = tmp_path / "m.json", tmp_path / "m.csv"
    for out in (matrix_json, matrix_csv):
        assert cli.main(["matrix", str(docs), "--profile", str(profile), "--form", "csls",
                         "--out", str(out), "-q"]) == 0
    expected = json.loads(matrix_json.read_text())["matrices"]
    frame = pd.read_csv(matrix_csv, index_col=0)
    assert frame.index.name == "cosine_csls"                  # not cosine_raw
    assert frame.to_numpy() == pytest.approx(pd.DataFrame(expected["csls"]).to_numpy(), abs=1e-5)
    assert not frame.to_numpy() == pytest.approx(pd.DataFrame(expected["raw"]).to_numpy(), abs=1e-3)
    assert json.loads((tmp_path / "m.csv.provenance.json").read_text())["form"] == "csls"


# --- issue 19: metrics and geometry settings at build time, cluster diagnostics in diagnose ---

def test_profile_build_chooses_metrics_and_geometry_settings(pairs, background, tmp_path, capsys):
    from calibsim_gui.core.calibration.profile import ReferenceProfile

    path = tmp_path / "set.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "800",
                     "--metrics", "cosine,wrd", "--abtt-directions", "2", "--whiten-dim", "8",
                     "--soft-factors", "5", "--out", str(path), "-q"]) == 0
    profile = ReferenceProfile.load(path)
    assert list(profile.metrics) == ["cosine", "wrd"]
    assert profile.transform("abtt").components_.shape[0] == 2
    assert profile.transform("whiten").n_components_ == 8
    assert profile.transform("soft").factors_.shape[0] == 5
    fixes = profile.provenance["geometries"]["fixes"]
    assert fixes["abtt"]["settings"] == {"n_directions": 2}
    assert fixes["whiten"]["settings"]["n_components"] == 8
    out = tmp_path / "s.csv"
    capsys.readouterr()
    assert cli.main(["score", str(pairs), "--profile", str(path), "--metrics", "wrd,scaled90",
                     "--out", str(out)]) == 0
    columns = pd.read_csv(out).columns
    assert "wrd_bg_percentile" in columns and not any(c.startswith("scaled90") for c in columns)
    assert "calibsim profile build --metrics scaled90" in capsys.readouterr().out
    assert cli.main(["profile", "build", "--abtt-directions", "2", "--out",
                     str(tmp_path / "none.calibsim-profile"), "-q"]) == 2
    assert "background" in capsys.readouterr().err


def test_diagnose_with_labels_shows_cluster_structure_beside_isotropy(background, tmp_path, capsys):
    profile = tmp_path / "bg.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "800",
                     "--metrics", "cosine", "--out", str(profile), "-q"]) == 0
    docs, other = tmp_path / "a.txt", tmp_path / "b.txt"
    docs.write_text("\n".join(random_sentences(40, seed=9)))
    other.write_text("\n".join(random_sentences(40, seed=10, vocabulary=50)))
    capsys.readouterr()
    assert cli.main(["diagnose", str(docs), str(other), "--labels-from-files", "--profile", str(profile),
                     "-q"]) == 0
    out = capsys.readouterr().out
    for row in ("IsoScore", "silhouette of labels (euclidean)", "Calinski-Harabasz", "Davies-Bouldin",
                "Dunn index", "classifier accuracy"):
        assert row in out


def test_compare_with_one_ladder_for_every_model_and_a_profile_per_model(pairs, background, tmp_path,
                                                                          monkeypatch, capsys):
    from calibsim_gui.core.references.anchors import builtin_anchors

    other = FakeEmbedder(dimension=32, name="fake-small")
    monkeypatch.setattr(common, "load_model", lambda args: other if args.model == "small" else FakeEmbedder())
    ladder = builtin_anchors().to_dict()
    ladder["pairs"] = ladder["pairs"][::2]
    anchors = tmp_path / "ladder.json"
    anchors.write_text(json.dumps(ladder))
    out = tmp_path / "same.csv"
    assert cli.main(["compare", str(pairs), "--model", "builtin", "--model", "small",
                     "--anchors", str(anchors), "--out", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    assert "same anchor ladder" in text and f"{len(ladder['pairs'])} pairs" in text
    with_ladder = pd.read_csv(out)
    # each model's calibrated scores equal `calibsim score --anchors` with that model
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())
    single = tmp_path / "single.csv"
    assert cli.main(["score", str(pairs), "--anchors", str(anchors), "--metrics", "cosine",
                     "--out", str(single), "-q"]) == 0
    column = next(c for c in with_ladder.columns if c.startswith("cosine_calibrated [fake-bow"))
    assert with_ladder[column].to_numpy() == pytest.approx(pd.read_csv(single)["cosine_calibrated"], abs=1e-6)

    monkeypatch.setattr(common, "load_model", lambda args: other if args.model == "small" else FakeEmbedder())
    profile = tmp_path / "bg.calibsim-profile"
    assert cli.main(["profile", "build", "--background", str(background), "--pairs", "1000",
                     "--anchors", str(anchors), "--out", str(profile), "-q"]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(pairs), "--model", "builtin", "--model", "small",
                     "--profile", str(profile), "--profile", "builtin", "-q"]) == 0
    assert "different anchor ladders" in capsys.readouterr().out            # said, not silent
    assert cli.main(["compare", str(pairs), "--model", "builtin", "--model", "small",
                     "--profile", str(profile)]) == 2
    assert "1 --profile for 2 --model" in capsys.readouterr().err


def _labelled_pairs(path, n_per_level=60, seed=0):
    """Pairs sharing 0-100 % of their 12 made-up words, scored 0-5 by the share (people's stand-in)."""
    rng = np.random.default_rng(seed)
    rows = []
    for share in (0.0, 0.25, 0.5, 0.75, 0.9, 1.0):
        for _ in range(n_per_level):
            words = [f"w{i}" for i in rng.integers(0, 5000, 12)]
            kept = round(share * 12)
            other = words[:kept] + [f"w{i}" for i in rng.integers(5000, 9000, 12 - kept)]
            rows.append((round(5 * share, 2), " ".join(words), " ".join(other)))
    pd.DataFrame(rows, columns=["score", "sentence1", "sentence2"]).to_csv(path, index=False)
    return path


def test_profile_build_measures_the_human_band_that_score_interval_adds(pairs, tmp_path, capsys):
    labelled = _labelled_pairs(tmp_path / "labelled.csv")
    profile = tmp_path / "banded.calibsim-profile"
    assert cli.main(["profile", "build", "--band-pairs", str(labelled), "--band-scale", "0,5",
                     "--out", str(profile), "-q"]) == 0
    assert cli.main(["profile", "show", str(profile)]) == 0
    assert "human agreement band: 80%, 95% of people's scores, measured on 360 labelled pairs (labelled.csv)" \
        in capsys.readouterr().out
    out = tmp_path / "scored.csv"
    assert cli.main(["score", str(pairs), "--profile", str(profile), "--interval", "--out", str(out), "-q"]) == 0
    frame = pd.read_csv(out).dropna(subset=["cosine_calibrated"])
    for rate in (80, 95):
        lo, hi = frame[f"cosine_calibrated_band{rate}_lo"], frame[f"cosine_calibrated_band{rate}_hi"]
        assert ((0 <= lo) & (lo <= hi) & (hi <= 1)).all()
    assert ((frame["cosine_calibrated_band95_hi"] - frame["cosine_calibrated_band95_lo"])
            >= (frame["cosine_calibrated_band80_hi"] - frame["cosine_calibrated_band80_lo"]) - 1e-12).all()
    sidecar = json.loads((tmp_path / "scored.csv.provenance.json").read_text())
    assert sidecar["human_band"]["source"]["files"][0]["name"] == "labelled.csv"


def test_a_labelled_file_too_narrow_for_a_band_is_refused_with_the_fix(tmp_path, capsys):
    labelled = _labelled_pairs(tmp_path / "few.csv", n_per_level=5)
    out = tmp_path / "p.calibsim-profile"
    assert cli.main(["profile", "build", "--band-pairs", str(labelled), "--out", str(out), "-q"]) == 2
    assert "cannot measure the human agreement band" in capsys.readouterr().err and not out.exists()


def test_models_torch_device_without_prepare_is_refused_with_the_fix(capsys):
    assert cli.main(["models", "--torch-device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "--torch-device" in err and "calibsim models --prepare --torch-device cuda" in err


@pytest.mark.slow
def test_models_prepare_readies_the_fast_engine_once(monkeypatch, capsys):
    """`make install` runs `models --prepare`: afterwards a score loads the graph, never exports it,
    and finds the built-in reference and the language detector ready in the cache folder."""
    from calibsim_gui.core.embedding.cache_folder import default_cache_dir
    from calibsim_gui.core.embedding import models
    from calibsim_gui.core.embedding.model_folders import resolve_model

    assert cli.main(["models", "--prepare"]) == 0
    out = capsys.readouterr().out
    assert "all-MiniLM-L6-v2: fast engine ready" in out
    cache = default_cache_dir()
    assert [len(list(cache.glob(pattern))) for pattern in
            ("profiles/*.npz", "langid/*.arrays", "checked/model-folder-*.json", "checked/onnx-graph-*.json")
            ] == [1, 1, 1, 1]

    def no_export(*args, **kwargs):
        raise AssertionError("the graph was exported again")

    monkeypatch.setattr(models, "export_graph", no_export)
    embedder = models.load_onnx_model(resolve_model(None))
    assert embedder.engine == "onnx" and embedder.graph.is_file() and str(embedder.graph) in out
