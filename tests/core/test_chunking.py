"""Long texts (issue 17): truncated pairs are flagged, and chunking scores them whole."""

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.embedding.chunking import (
    aggregate_pair_scores, check_long_texts, chunk_spans, chunk_window, split_texts)
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.inputs import load_pairs
from calibsim_gui.core.geometry.metrics import pair_scores
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.reports import build_report, write_report
from tests.fakes import FakeEmbedder, random_sentences

_TOPICS = ["river", "harbour", "market", "winter", "engine", "garden", "letter", "bridge", "music",
           "forest", "village", "station", "doctor", "teacher", "storm", "island", "mountain"]


def long_document(n_words: int, seed: int = 0) -> str:
    """Ordinary-looking prose of about `n_words` words (sentences of 8-14 words)."""
    rng = np.random.default_rng(seed)
    words, sentences = 0, []
    while words < n_words:
        k = int(rng.integers(8, 15))
        picked = [str(w) for w in rng.choice(_TOPICS, size=k)]
        sentences.append(" ".join(["The"] + picked[1:]) + ".")
        words += k
    return " ".join(sentences)


BODY = long_document(380, seed=17)
DOC_A = BODY + " In the end the court found the accused guilty of every charge."
DOC_B = BODY + " In the end the jury acquitted her because the evidence was thin."


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(3000, seed=5), ProfileSettings(n_pairs=1500))


def _pairs(tmp_path, rows, name="pairs.csv"):
    path = tmp_path / name
    pd.DataFrame(rows, columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    return load_pairs(path)


def test_the_387_word_pair_is_near_identical_when_truncated_and_flagged(tmp_path, profile):
    assert 380 <= len(DOC_A.split()) <= 400
    table = _pairs(tmp_path, [(DOC_A, DOC_B), ("A cat sat.", "A dog ran.")])
    scored = score_pairs(table, FakeEmbedder(), profile, metrics=["cosine"])
    frame = scored.frame
    assert frame.loc[0, "cosine_raw"] > 0.9999                         # the model saw the same start
    assert list(frame["truncated"]) == ["both", ""]
    assert list(frame.columns[:3]) == ["sentence1", "sentence2", "truncated"]
    assert "truncated" in scored.provenance["columns"]
    assert scored.provenance["long_texts"]["pairs_truncated"] == 1
    assert any("1 pairs have a truncated text (column truncated)" in n for n in scored.notes)


@pytest.mark.parametrize("aggregate", ["mean", "match", None])
def test_chunking_scores_the_387_word_pair_below_identical(tmp_path, profile, aggregate):
    table = _pairs(tmp_path, [(DOC_A, DOC_B), (DOC_A, DOC_A)])
    options = {} if aggregate is None else {"chunk_aggregate": aggregate}
    scored = score_pairs(table, FakeEmbedder(), profile, metrics=["cosine"], long_texts="chunk", **options)
    aggregate = aggregate or "match"                                   # the default
    frame = scored.frame
    assert "truncated" not in frame.columns                            # every chunk fits
    assert frame.loc[0, "cosine_raw"] < 0.999
    assert frame.loc[0, "cosine_calibrated"] < frame.loc[1, "cosine_calibrated"] or aggregate == "mean"
    if aggregate == "match":
        assert frame.loc[1, "cosine_raw"] == pytest.approx(1.0, abs=1e-6)   # identical stays identical
    long = scored.provenance["long_texts"]
    assert long["mode"] == "chunk" and long["aggregate"] == aggregate and long["texts_chunked"] == 2
    assert "aggregated raw score" in long["note"]


def test_chunk_max_finds_the_shared_passage(tmp_path, profile):
    table = _pairs(tmp_path, [(DOC_A, DOC_B)])
    frame = score_pairs(table, FakeEmbedder(), profile, metrics=["cosine", "euclidean"],
                        long_texts="chunk", chunk_aggregate="max").frame
    assert frame.loc[0, "cosine_raw"] == pytest.approx(1.0, abs=1e-6)   # identical opening chunks
    assert frame.loc[0, "euclidean_raw"] == pytest.approx(0.0, abs=1e-3)  # max = nearest for distances


def test_chunks_are_substrings_covering_the_text_with_the_requested_overlap():
    embedder = FakeEmbedder(max_seq_length=40)
    window = chunk_window(embedder)
    assert window == 38                                                # 40 less [CLS] and [SEP]
    [pieces] = split_texts(embedder, [DOC_A], overlap=5)
    spans = embedder.token_spans([DOC_A])[0]
    assert len(pieces) > 1
    cursor, words = 0, [DOC_A[s:e] for s, e in spans]
    starts = []
    for piece in pieces:
        at = DOC_A.index(piece, cursor)                                # a real substring, in order
        starts.append(at)
        cursor = at + 1
        assert embedder.token_counts([piece])[0] <= embedder.max_seq_length
    chunk_words = [embedder.token_spans([p])[0] for p in pieces]
    assert sum(len(c) for c in chunk_words) - 5 * (len(pieces) - 1) >= len(words)
    tokens = [[p[s:e] for s, e in spans_] for p, spans_ in zip(pieces, chunk_words)]
    for left, right in zip(tokens, tokens[1:]):                        # neighbours share 5 tokens
        assert left[-5:] == right[:5] and left[-6:] != right[:6]
    assert starts[0] == spans[0, 0] and starts[-1] + len(pieces[-1]) == spans[-1, 1]   # first to last token
    covered = np.zeros(len(DOC_A), dtype=bool)
    for at, piece in zip(starts, pieces):
        covered[at:at + len(piece)] = True
    assert all(covered[s:e].all() for s, e in spans)


def test_chunk_spans_cover_every_token_once_at_least():
    spans = np.array([(i * 3, i * 3 + 2) for i in range(25)])
    chunks = chunk_spans(spans, window=10, overlap=3)
    assert chunks[0] == (0, spans[9, 1]) and chunks[-1][1] == spans[-1, 1]
    assert chunk_spans(spans[:4], window=10, overlap=3) == [(0, spans[3, 1])]
    with pytest.raises(InputError, match="not smaller than the model's window"):
        chunk_spans(spans, window=10, overlap=10)


def test_short_texts_score_exactly_as_before(tmp_path, profile):
    table = _pairs(tmp_path, [("The cat sat on the mat.", "A cat sits on a mat."),
                              ("Stocks fell sharply today.", "The recipe needs two eggs.")])
    before = score_pairs(table, FakeEmbedder(), profile)
    for aggregate in ("max", "mean", "match"):
        after = score_pairs(table, FakeEmbedder(), profile, long_texts="chunk", chunk_aggregate=aggregate)
        pd.testing.assert_frame_equal(before.frame, after.frame)
    assert "truncated" not in before.frame.columns
    assert before.provenance["long_texts"]["pairs_truncated"] == 0


def test_short_pairs_beside_long_ones_keep_their_scores(tmp_path, profile):
    short = [("The cat sat on the mat.", "A cat sits on a mat.")]
    alone = score_pairs(_pairs(tmp_path, short), FakeEmbedder(), profile, metrics=["cosine"]).frame
    mixed = score_pairs(_pairs(tmp_path, short + [(DOC_A, DOC_B)], "mixed.csv"), FakeEmbedder(),
                        profile, metrics=["cosine"], long_texts="chunk", chunk_aggregate="match").frame
    assert mixed.loc[0, "cosine_raw"] == alone.loc[0, "cosine_raw"]


def test_chunk_aggregates_of_one_chunk_equal_plain_pair_scores():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 8)), rng.standard_normal((5, 8))
    plain = pair_scores(a, b, ["cosine", "euclidean"])
    for aggregate in ("max", "mean", "match"):
        got = aggregate_pair_scores(list(a[:, None]), list(b[:, None]), ["cosine", "euclidean"], aggregate)
        for name in plain:
            np.testing.assert_array_equal(got[name], plain[name])


def test_chunks_go_through_the_cache(tmp_path):
    from calibsim_gui.core.embedding.cache import EmbeddingCache

    from calibsim_gui.core.embedding.chunking import encode_chunked

    embedder, cache = FakeEmbedder(), EmbeddingCache(tmp_path / "cache.sqlite")
    first = encode_chunked(embedder, [DOC_A, "short"], cache=cache)
    again = encode_chunked(embedder, [DOC_A, "short"], cache=cache)
    assert again.encoding.n_cached == again.encoding.n_unique == first.encoding.n_unique
    np.testing.assert_array_equal(first.encoding.embeddings, again.encoding.embeddings)
    assert set(first.chunks) == {0} and first.n_chunks == len(first.chunks[0])


@pytest.mark.parametrize("bad", [dict(long_texts="split"), dict(aggregate="median"),
                                 dict(overlap=-1), dict(overlap=2.5), dict(overlap=True)])
def test_bad_long_text_options_are_refused(bad):
    options = {"long_texts": "chunk", "aggregate": "max", "overlap": 32, **bad}
    with pytest.raises(InputError):
        check_long_texts(options["long_texts"], options["aggregate"], options["overlap"])


def test_encoding_marks_which_rows_are_truncated():
    embedder = FakeEmbedder(max_seq_length=12)
    result = encode_texts(embedder, ["short text", DOC_A, "short text", DOC_B])
    assert list(result.truncated) == [False, True, False, True]
    assert result.n_truncated == 2


def _document(n_words: int, seed: int) -> str:
    return long_document(n_words, seed)


def test_a_2000_token_pair_is_chunked_on_request_and_flagged_when_truncated(tmp_path, profile):
    doc_a, doc_b = _document(2000, 1), _document(2000, 2)
    assert FakeEmbedder().token_counts([doc_a])[0] >= 2000
    table = _pairs(tmp_path, [(doc_a, doc_b), ("A cat sat.", "A cat sat.")])
    chunked = score_pairs(table, FakeEmbedder(), profile, metrics=["cosine"], long_texts="chunk",
                          chunk_aggregate="mean", chunk_overlap=8)
    assert chunked.provenance["long_texts"]["chunks"] >= 2 * 2000 // 38
    assert "truncated" not in chunked.frame.columns

    truncated = score_pairs(table, FakeEmbedder(), profile, metrics=["cosine"])
    assert list(truncated.frame["truncated"]) == ["both", ""]
    csv = write_report(build_report(truncated, profile, metric="cosine"), tmp_path / "out.csv")
    assert list(pd.read_csv(csv, keep_default_na=False)["truncated"]) == ["both", ""]
    xlsx = write_report(build_report(truncated, profile, metric="cosine"), tmp_path / "out.xlsx")
    assert list(pd.read_excel(xlsx, keep_default_na=False)["truncated"]) == ["both", ""]
    report = build_report(truncated, profile, metric="cosine")
    assert any(label == "Truncated pairs" and "1 pairs have a truncated text (column truncated)" in value
               for label, value in report.summary())
    assert "truncated" in report.results_table()[0].columns
    html = write_report(report, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "1 pairs have a truncated text" in html

    chunk_report = build_report(chunked, profile, metric="cosine")
    [command] = [c for c in chunk_report.reproduce() if c.startswith("calibsim score")]
    assert "--long-texts chunk --chunk-aggregate mean --chunk-overlap 8" in command
    assert any(label == "Long texts" for label, _ in chunk_report.summary())


@pytest.mark.slow
def test_real_model_flags_truncation_and_chunks_score_the_whole_text(tmp_path, real_embedder):
    from calibsim_gui.core.calibration.profile_builder import default_profile

    profile = default_profile(real_embedder)
    assert real_embedder.token_counts([DOC_A])[0] > real_embedder.max_seq_length
    table = _pairs(tmp_path, [(DOC_A, DOC_B), ("A man is playing a guitar.", "A man plays the guitar.")])
    truncated = score_pairs(table, real_embedder, profile, metrics=["cosine"]).frame
    assert truncated.loc[0, "cosine_calibrated"] > 0.99 and list(truncated["truncated"]) == ["both", ""]

    chunked = score_pairs(table, real_embedder, profile, metrics=["cosine"], long_texts="chunk",
                          chunk_aggregate="match").frame
    assert "truncated" not in chunked.columns
    assert chunked.loc[0, "cosine_raw"] < truncated.loc[0, "cosine_raw"] - 1e-3
    assert chunked.loc[0, "cosine_calibrated"] < truncated.loc[0, "cosine_calibrated"]
    assert chunked.loc[1, "cosine_raw"] == pytest.approx(truncated.loc[1, "cosine_raw"], abs=1e-6)

    [pieces] = split_texts(real_embedder, [DOC_A], overlap=32)
    assert len(pieces) >= 2 and all(piece in DOC_A for piece in pieces)
    assert (real_embedder.token_counts(pieces) <= real_embedder.max_seq_length).all()
    assert DOC_A.startswith(pieces[0]) and DOC_A.endswith(pieces[-1])


@pytest.mark.parametrize("aggregate", ["max", "mean", "match"])
def test_a_pair_of_two_long_texts_is_scored_in_bounded_memory_with_the_same_scores(aggregate):
    """Issue 30: one pair of two 200 KB texts took 2.2 GB (every chunk pair gathered at once)."""
    import tracemalloc

    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((n, 48)).astype(np.float32) for n in (700, 650))   # 455,000 chunk pairs
    tracemalloc.start()
    scores = aggregate_pair_scores([a], [b], ["cosine", "manhattan"], aggregate)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 40e6                                   # gathered whole: 455,000 x 48 x 12 B = 262 MB
    for name in ("cosine", "manhattan"):
        full = pair_scores(np.repeat(a, len(b), axis=0), np.tile(b, (len(a), 1)), [name])[name]
        similarity = -full.reshape(len(a), len(b)) if name == "manhattan" else full.reshape(len(a), len(b))
        expected = {"max": similarity.max(), "mean": similarity.mean(),
                    "match": (similarity.max(axis=1).mean() + similarity.max(axis=0).mean()) / 2}[aggregate]
        assert scores[name][0] == pytest.approx(expected * (-1 if name == "manhattan" else 1), rel=1e-9)


def test_chunks_over_the_memory_budget_are_refused_before_anything_is_encoded(tmp_path, profile):
    """(#43: counted from the part of the text the model reads, before the text is tokenised whole.)"""
    table = _pairs(tmp_path, [(long_document(100_000, seed=4), "A cat sat.")], name="long.csv")
    embedder = FakeEmbedder()
    with pytest.raises(InputError, match=r"long\.csv.*cuts 1 long text into (about )?[\d,]+ chunks of up to 38 "
                                         r"tokens \(37 shared.*more than the memory budget of 300.0 MB.*"
                                         r"--long-texts truncate"):
        score_pairs(table, embedder, profile, metrics=["cosine"], long_texts="chunk", chunk_overlap=37,
                    memory_budget=300_000_000)
    assert embedder.calls == 0


def test_a_long_text_to_chunk_is_refused_before_it_is_tokenised_whole(tmp_path, profile):
    """#43: counting chunks tokenised every long text whole (an 8 M-word text: 4.9 GB, killed at
    300 s); the chunks are now guessed from the part the model reads, and the whole text is
    tokenised only when they fit the budget."""
    table = _pairs(tmp_path, [(long_document(100_000, seed=4), "A cat sat.")], name="long.csv")

    class NoWholeSpans(FakeEmbedder):
        def token_spans(self, texts):
            raise AssertionError("tokenised whole")

    with pytest.raises(InputError, match=r"cuts 1 long text into about [\d,]+ chunks"):
        score_pairs(table, NoWholeSpans(), profile, metrics=["cosine"], long_texts="chunk", chunk_overlap=37,
                    memory_budget=300_000_000)
