"""`calibsim search` and `calibsim threshold`, in-process, with the fake embedder."""

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
def corpus(tmp_path):
    texts = random_sentences(120, seed=5)
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(texts) + "\n")
    queries = tmp_path / "queries.csv"
    pd.DataFrame({"id": [1, 2, 3], "question": [texts[7], texts[42], "nothing like the corpus"]}) \
        .to_csv(queries, index=False)
    return queries, docs, texts


def test_search_finds_each_query_first_and_writes_every_hit(corpus, tmp_path, capsys):
    queries, docs, texts = corpus
    out = tmp_path / "hits.csv"
    assert cli.main(["search", str(queries), "--query-column", "question", "--corpus", str(docs),
                     "--top-k", "4", "--out", str(out), "-q", "--method", "approximate"]) == 0
    frame = pd.read_csv(out)
    assert len(frame) == 3 * 4
    assert list(frame.columns[:5]) == ["query_id", "query", "rank", "doc_id", "document"]
    assert {"cosine_raw", "cosine_calibrated", "cosine_local_minmax"} <= set(frame.columns)
    first = frame[frame["rank"] == 1].set_index("query")
    assert first.loc[texts[7], "document"] == texts[7]               # a query in the corpus: the top
    assert first.loc[texts[42], "cosine_calibrated"] > 0.999
    assert (frame.groupby("query")["cosine_raw"].apply(lambda s: s.is_monotonic_decreasing)).all()
    assert (first["cosine_local_minmax"] == 1).all()                   # local: the top is always 1
    sidecar = json.loads((tmp_path / "hits.csv.provenance.json").read_text())
    assert sidecar["search"]["top_k"] == 4 and sidecar["search"]["corpus"]["count"] == 120
    assert sidecar["search"]["method"] == "approximate" and sidecar["search"]["kind"] == "faiss IndexHNSWFlat"


def test_search_without_out_prints_the_top_hits(corpus, capsys):
    queries, docs, texts = corpus
    assert cli.main(["search", str(docs), "--corpus", str(docs), "--top-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "120 queries against 120 documents, top 2 by cosine" in out
    assert "... and 110 more queries" in out
    assert "local to each query" in out and "--out" in out


@pytest.mark.parametrize("suffix", [".html", ".json", ".xlsx"])
def test_search_report_says_how_to_read_the_local_min_max(corpus, tmp_path, suffix):
    queries, docs, _ = corpus
    out = tmp_path / f"hits{suffix}"
    assert cli.main(["search", str(queries), "--query-column", "question", "--corpus", str(docs),
                     "--out", str(out), "-q"]) == 0
    if suffix == ".html":
        text = out.read_text()
        assert "NOT comparable across queries" in text and "cosine_local_minmax" in text
        assert "calibsim search queries.csv --corpus docs.txt" in text
    elif suffix == ".json":
        body = json.loads(out.read_text())
        assert body["format"] == "calibsim-search" and len(body["rows"]) == 30
        assert "NOT comparable" in body["columns"]["cosine_local_minmax"]
    else:
        assert len(pd.read_excel(out, sheet_name="results")) == 30


def test_search_never_writes_over_an_input_and_keeps_existing_files(corpus, tmp_path, capsys):
    queries, docs, _ = corpus
    before = docs.read_bytes()
    assert cli.main(["search", str(queries), "--corpus", str(docs), "--out", str(queries), "--force",
                     "-q"]) == 2
    assert "input" in capsys.readouterr().err
    assert docs.read_bytes() == before
    out = tmp_path / "keep.csv"
    out.write_text("keep me")
    assert cli.main(["search", str(docs), "--corpus", str(docs), "--out", str(out), "-q"]) == 2
    assert "--force" in capsys.readouterr().err and out.read_text() == "keep me"


def test_search_over_the_memory_budget_is_refused_before_the_model(corpus, capsys, monkeypatch):
    queries, docs, _ = corpus
    monkeypatch.setattr(common, "load_model", lambda args: pytest.fail("the model was loaded"))
    assert cli.main(["search", str(docs), "--corpus", str(docs), "--memory-budget", "1K", "-q"]) == 2
    assert "memory budget" in capsys.readouterr().err


def test_search_refuses_a_bad_top_k_when_parsing(corpus, capsys):
    queries, docs, _ = corpus
    with pytest.raises(SystemExit):
        cli.main(["search", str(docs), "--corpus", str(docs), "--top-k", "0"])
    assert "--top-k" in capsys.readouterr().err


def test_threshold_finds_raw_and_calibrated_cuts(labelled_pairs, tmp_path, capsys):
    out = tmp_path / "threshold.json"
    assert cli.main(["threshold", str(labelled_pairs), "--target-precision", "0.9", "--out", str(out),
                     "-q"]) == 0
    printed = capsys.readouterr().out
    assert "150 labelled pairs; 'score' >= 4 counts as the same meaning (75 pairs" in printed
    assert "cosine_raw" in printed and "cosine_calibrated" in printed
    assert "carries across models" in printed
    body = json.loads(out.read_text())
    assert body["format"] == "calibsim-threshold" and body["input"]["same_at"] == 4
    for form in ("raw", "calibrated"):
        found = body["thresholds"][form]
        assert found["precision"] >= 0.9 and found["recall"] == 1.0       # separable pairs
        low, high = found["interval"]
        assert low <= found["threshold"] <= high
        curve = found["curve"]
        assert len(curve["thresholds"]) == len(curve["precision"]) == len(curve["recall"]) > 1
    assert body["thresholds"]["raw"]["rule"] == "score >= threshold"


def test_threshold_takes_a_zero_one_label_column_and_other_criteria(labelled_pairs, tmp_path, capsys):
    frame = pd.read_csv(labelled_pairs)
    frame["same"] = (frame.pop("score") > 2).astype(int)
    path = tmp_path / "binary.csv"
    frame.to_csv(path, index=False)
    assert cli.main(["threshold", str(path), "--label", "same", "--best-f1", "-q"]) == 0
    assert "'same' >= 1 counts as the same meaning (75 pairs" in capsys.readouterr().out
    assert cli.main(["threshold", str(path), "--label", "same", "--target-recall", "0.5",
                     "--metric", "euclidean", "-q"]) == 0
    printed = capsys.readouterr().out
    assert "euclidean_raw" in printed and "<= " in printed               # a distance: below the cut


def test_threshold_refuses_labels_of_one_kind_and_bad_targets(labelled_pairs, tmp_path, capsys):
    assert cli.main(["threshold", str(labelled_pairs), "--same-at", "6", "-q"]) == 2
    assert "both kinds" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["threshold", str(labelled_pairs), "--target-precision", "90"])
    assert "fraction" in capsys.readouterr().err
    out = tmp_path / "t.csv"
    assert cli.main(["threshold", str(labelled_pairs), "--out", str(out), "-q"]) == 2
    assert ".json" in capsys.readouterr().err
    assert not out.exists()


def test_same_meaning_default_cut():
    from calibsim_gui.core.analysis.thresholds import same_meaning

    same, cut = same_meaning([0, 1, 1, 0])
    assert cut == 1 and same.tolist() == [False, True, True, False]
    same, cut = same_meaning(np.array([0.5, 4.2, 3.9]), scale=(0, 5))
    assert cut == 4 and same.tolist() == [False, True, False]
    assert same_meaning([1, 2, 3], scale=(1, 3))[1] == pytest.approx(2.6)
