import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.pairs import score_column, score_pairs, split_score_column
from calibsim_gui.core.errors import InputError, ProfileError
from calibsim_gui.core.geometry.hubness import neighbourhood_similarity
from calibsim_gui.core.calibration.human import HumanCalibrator
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.core.geometry.metrics import METRICS
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def profile():
    return build_profile(FakeEmbedder(), random_sentences(3000, seed=5), ProfileSettings(n_pairs=1500))


@pytest.fixture
def pairs_file(tmp_path):
    frame = pd.DataFrame({
        "id": ["p1", "p2", "p3", "p4", "p5"],
        "score": ["5.0", "0.0", "2.5", "1.0", "4.0"],
        "sentence1": ["The cat sat on the mat.", "Stocks fell sharply today.", "A man plays guitar.",
                      "", "Rain is expected tomorrow."],
        "sentence2": ["The cat sat on the mat.", "The recipe needs two eggs.", "A man plays the piano.",
                      "Empty partner.", "Tomorrow, heavy rain is expected in the north."],
    })
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    return path


def test_scored_table_keeps_input_columns_and_adds_every_metric_and_form(pairs_file, profile):
    table = load_pairs(pairs_file)
    scored = score_pairs(table, FakeEmbedder(), profile)
    frame = scored.frame
    assert list(frame.columns[:4]) == ["id", "score", "sentence1", "sentence2"]
    pd.testing.assert_frame_equal(frame[table.frame.columns], table.frame)
    for metric in METRICS:
        for form in ("raw", "calibrated", "anchor_minmax", "bg_minmax", "bg_percentile",
                     "bg_zscore", "bg_surprise", "query_zscore"):
            assert f"{metric}_{form}" in frame.columns
    assert frame.loc[3, "cosine_raw"] != frame.loc[3, "cosine_raw"]      # empty text -> NaN
    assert any("empty" in note for note in scored.notes)


def test_identical_texts_score_the_top_of_every_calibrated_scale(pairs_file, profile):
    frame = score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile).frame
    assert frame.loc[0, "cosine_calibrated"] > 0.999                    # identical: the top
    assert frame.loc[0, "cosine_bg_percentile"] == 100.0
    for metric in METRICS:
        # query_zscore is local to each text by design, so it is not on a global scale
        for form in ("calibrated", "anchor_minmax", "bg_minmax", "bg_percentile", "bg_zscore",
                     "bg_surprise"):
            column = frame[f"{metric}_{form}"]
            assert column[0] >= column.max() - 1e-9, f"{metric}_{form}"


def test_percentiles_stay_within_0_and_100_on_any_input(tmp_path, profile):
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "w1", "w2", "w3", "news", "of", "the"]
    rows = [(" ".join(rng.choice(words, 4)), " ".join(rng.choice(words, 6))) for _ in range(300)]
    path = tmp_path / "many.csv"
    pd.DataFrame(rows, columns=["text1", "text2"]).to_csv(path, index=False)
    frame = score_pairs(load_pairs(path), FakeEmbedder(), profile).frame
    values = frame[[f"{m}_bg_percentile" for m in METRICS]].to_numpy()
    assert values.min() >= 0 and values.max() <= 100


def test_provenance_names_model_references_and_agreement(pairs_file, profile):
    scored = score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile)
    prov = scored.provenance
    assert prov["model"]["id"].startswith("fake-bow@")
    assert prov["references"]["background_pairs"] == 1500
    assert prov["encoding"]["distinct_texts"] == 7      # identical pair shares one text; empty row skipped
    assert set(prov["background_saturation"]) == set(METRICS)
    assert prov["agreement"]["label"] == "score"
    assert "cosine_calibrated" in prov["agreement"]["spearman_x100"]


def test_matrix_is_symmetric_with_identity_on_the_diagonal(tmp_path, profile):
    docs_path = tmp_path / "docs.txt"
    docs_path.write_text("A cat on a mat.\nA dog on a log.\nStock markets rallied.\n\nA cat on a mat.\n")
    docs = load_documents(docs_path)
    result = score_matrix(docs, FakeEmbedder(), profile, forms=("calibrated", "bg_percentile"))
    assert result.ids == ["docs.txt:1", "docs.txt:2", "docs.txt:3"]
    for form, matrix in result.matrices.items():
        assert matrix.shape == (3, 3)
        np.testing.assert_allclose(matrix, matrix.T, atol=1e-6)
    np.testing.assert_allclose(np.diag(result.matrices["calibrated"]), 1.0, atol=1e-3)   # identical: the top (0.9995)
    assert result.matrices["calibrated"][0, 1] > result.matrices["calibrated"][0, 2]


def test_matrix_blocks_agree_with_a_single_block(tmp_path, profile):
    path = tmp_path / "d.txt"
    path.write_text("\n".join(random_sentences(50, seed=9)))
    docs = load_documents(path)
    small = score_matrix(docs, FakeEmbedder(), profile, block_rows=7)
    whole = score_matrix(docs, FakeEmbedder(), profile, block_rows=1000)
    np.testing.assert_allclose(small.matrices["calibrated"], whole.matrices["calibrated"])


def test_query_zscore_is_the_mean_of_both_texts_z_scores_against_the_reference():
    from calibsim_gui.core.calibration.query_scale import query_zscores, reference_stats

    rng = np.random.default_rng(0)
    vectors, reference = rng.normal(size=(6, 8)), rng.normal(size=(30, 8))
    first, second = np.array([0, 1, 2, 3, 0]), np.array([4, 5, 5, 1, 1])     # texts recur
    for name, metric in METRICS.items():
        raw = metric.pairs(vectors[first], vectors[second])
        expected = []
        for x, y, score in zip(vectors[first], vectors[second], metric.as_similarity(raw)):
            own = [metric.as_similarity(metric.pairs(np.tile(v, (30, 1)), reference)) for v in (x, y)]
            expected.append(np.mean([(score - s.mean()) / s.std() for s in own]))
        np.testing.assert_allclose(query_zscores(name, vectors, first, second, raw, reference),
                                   expected, rtol=1e-5, err_msg=name)
        np.testing.assert_allclose(reference_stats(name, vectors, reference, block_rows=2),
                                   reference_stats(name, vectors, reference), err_msg=name)


def test_query_scales_of_all_metrics_at_once_equal_each_metric_alone():
    from calibsim_gui.core.calibration.query_scale import reference_stats, reference_stats_table

    rng = np.random.default_rng(1)
    vectors, reference = rng.normal(size=(23, 8)), rng.normal(size=(40, 8))
    together = reference_stats_table(list(METRICS), vectors, reference, block_rows=5)   # blocks of 4 rows
    for name in METRICS:
        np.testing.assert_allclose(together[name], reference_stats(name, vectors, reference), rtol=1e-12,
                                   err_msg=name)


def test_query_scales_of_matrix_metrics_are_the_exact_mean_and_spread_of_their_scores():
    """Re-scoring a file gives the same bytes: each text's scale is bit for bit the mean and
    standard deviation of its "higher = more similar" scores against the reference."""
    from calibsim_gui.core.calibration.query_scale import reference_stats_table

    rng = np.random.default_rng(2)
    vectors, reference = rng.normal(size=(37, 16)), rng.normal(size=(50, 16))
    table = reference_stats_table(list(METRICS), vectors, reference)
    for name, metric in METRICS.items():
        if metric.bilinear_map is None:                     # the others have a closed form
            scores = metric.as_similarity(metric.matrix(vectors, reference))
            np.testing.assert_array_equal(table[name][0], scores.mean(axis=1), err_msg=name)
            np.testing.assert_array_equal(table[name][1], scores.std(axis=1), err_msg=name)


def test_an_error_while_the_texts_scales_are_computed_beside_the_run_fails_the_run(
        pairs_file, profile, monkeypatch):
    from calibsim_gui.core.analysis import pairs

    def no_room(*args, **kwargs):
        raise MemoryError("no room for the texts' scales")

    monkeypatch.setattr(pairs, "text_scales", no_room)
    with pytest.raises(MemoryError, match="no room for the texts' scales"):
        score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile)


def drain(steps):
    """The `PairChunk`s a scoring generator yields, and what it returns."""
    chunks = []
    while True:
        try:
            chunks.append(next(steps))
        except StopIteration as end:
            return chunks, end.value


def test_chunked_scoring_yields_partial_scores_and_encodes_each_text_once(tmp_path, profile):
    from calibsim_gui.core.analysis.pairs import Scorer

    path = tmp_path / "p.csv"
    texts = random_sentences(40, seed=3)
    pd.DataFrame({"a": texts * 3, "b": texts[::-1] * 3}).to_csv(path, index=False)
    table = load_pairs(path, text_a="a", text_b="b")
    embedder = FakeEmbedder()
    chunks, result = drain(Scorer(embedder, profile, chunk_pairs=25, metrics=["cosine"]).iter_score(table))
    assert [c.done for c in chunks] == [25, 50, 75, 100, 120] and {c.total for c in chunks} == {120}
    assert sorted(np.concatenate([c.rows for c in chunks])) == list(range(120))
    streamed = np.full(120, np.nan)
    for c in chunks:
        streamed[c.rows] = c.raw["cosine"]
    np.testing.assert_array_equal(streamed, result.frame["cosine_raw"])
    assert result.provenance["encoding"]["distinct_texts"] == 40
    assert embedder.calls == 1          # the 40 distinct texts of the whole run in one batch


@pytest.fixture
def varied_pairs(tmp_path):
    """300 pairs (one with an empty text) of 1- to 30-word texts, texts recurring across pairs."""
    rng = np.random.default_rng(8)
    texts = [" ".join(f"w{i}" for i in rng.integers(0, 500, size=n)) for n in rng.integers(1, 31, 200)]
    frame = pd.DataFrame({"sentence1": rng.choice(texts, 300), "sentence2": rng.choice(texts, 300)})
    frame.loc[7, "sentence2"] = ""
    path = tmp_path / "varied.csv"
    frame.to_csv(path, index=False)
    return load_pairs(path)


def test_the_whole_run_is_encoded_in_token_order_and_partial_chunks_make_up_the_result(
        varied_pairs, profile):
    from calibsim_gui.core.analysis.pairs import Scorer

    embedder = FakeEmbedder()
    chunks, result = drain(Scorer(embedder, profile, batch_size=16, chunk_pairs=20,
                                  geometry=("none", "whiten")).iter_score(varied_pairs))
    frame = varied_pairs.frame
    distinct = set(frame["sentence1"].drop(7)) | set(frame["sentence2"].drop(7))
    counts = [list(embedder.token_counts(b)) for b in embedder.batches]
    assert sorted(sum(embedder.batches, [])) == sorted(distinct)       # each text once, whole run
    assert [n for c in counts for n in c] == sorted(n for c in counts for n in c)
    assert all(len(c) == 16 for c in counts[:-1])
    # progress: monotone, every chunk but the last 20 pairs, reaching the total
    done = [c.done for c in chunks]
    assert done == list(range(20, 299, 20)) + [299] and {c.total for c in chunks} == {299}
    # each chunk carries the share of the encoding work (padded tokens) done, for time left
    padded = np.cumsum([len(c) * max(c) for c in counts]) / sum(len(c) * max(c) for c in counts)
    work = [c.work for c in chunks]
    assert work == sorted(work) and work[-1] == 1.0
    assert all(np.isclose(padded, w).any() for w in work)
    rows = np.concatenate([c.rows for c in chunks])
    assert len(rows) == len(set(rows)) == 299 and 7 not in rows      # every scored pair once
    for metric in ("cosine", "euclidean"):
        streamed = np.full(len(frame), np.nan)
        for c in chunks:
            streamed[c.rows] = c.raw[metric]
        np.testing.assert_array_equal(streamed, result.frame[f"{metric}_raw"])
    # the pairs of short texts come first: their texts were encoded first
    tokens = np.maximum(embedder.token_counts(list(frame["sentence1"])), embedder.token_counts(list(frame["sentence2"])))
    assert tokens[chunks[0].rows].max() <= tokens[chunks[-1].rows].min()
    # the same numbers as encoding every text on its own
    a = embedder.encode_batch(list(frame["sentence1"].drop(7)))
    b = embedder.encode_batch(list(frame["sentence2"].drop(7)))
    for metric in ("cosine", "euclidean", "dot"):
        np.testing.assert_allclose(result.frame[f"{metric}_raw"].drop(7), METRICS[metric].pairs(a, b),
                                   atol=1e-6, err_msg=metric)
    moved = [profile.transformed(x, "whiten") for x in (a, b)]
    np.testing.assert_allclose(result.frame["cosine_raw@whiten"].drop(7), METRICS["cosine"].pairs(*moved),
                               atol=1e-6)


def test_long_texts_chunked_stream_every_pair_once_and_match_scoring_them_alone(tmp_path, profile):
    from calibsim_gui.core.analysis.pairs import Scorer

    short = random_sentences(30, seed=6)
    long = [" ".join(f"v{i}" for i in range(n, n + 90)) for n in range(4)]    # past the fake's 40
    rows = [(short[i], long[i % 4] if i % 3 == 0 else short[-1 - i]) for i in range(30)]
    path = tmp_path / "long.csv"
    pd.DataFrame(rows, columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    table = load_pairs(path)
    embedder = FakeEmbedder()
    chunks, result = drain(Scorer(embedder, profile, metrics=["cosine"], chunk_pairs=4, long_texts="chunk",
                                  batch_size=8).iter_score(table))
    assert [c.done for c in chunks] == [4, 8, 12, 16, 20, 24, 28, 30]
    streamed = np.full(30, np.nan)
    for c in chunks:
        streamed[c.rows] = c.raw["cosine"]
    np.testing.assert_array_equal(streamed, result.frame["cosine_raw"])
    encoded = sum(embedder.batches, [])
    assert len(encoded) == len(set(encoded)) and result.provenance["long_texts"]["texts_chunked"] == 4
    for i in (0, 1, 3):                             # a pair as if it were the only one
        alone = score_pairs(load_pairs(_one_pair(tmp_path, *rows[i])), FakeEmbedder(), profile,
                            metrics=["cosine"], long_texts="chunk").frame
        assert alone.loc[0, "cosine_raw"] == pytest.approx(streamed[i], abs=1e-6)


def _one_pair(tmp_path, a, b):
    path = tmp_path / "one.csv"
    pd.DataFrame([(a, b)], columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    return path


def test_cancel_mid_run_raises_and_keeps_the_encoded_batches_in_the_cache(varied_pairs, profile, tmp_path):
    from calibsim_gui.core.analysis.pairs import Scorer
    from calibsim_gui.core.embedding.cache import EmbeddingCache
    from calibsim_gui.core.errors import Cancelled

    cache = EmbeddingCache(tmp_path / "c.sqlite")
    embedder = FakeEmbedder()
    steps = Scorer(embedder, profile, batch_size=16, chunk_pairs=10, cache=cache).iter_score(
        varied_pairs, should_stop=lambda: embedder.calls >= 3)
    with pytest.raises(Cancelled, match="after 48 of"):
        drain(steps)
    assert cache.count() == 48
    again = FakeEmbedder()
    chunks, result = drain(Scorer(again, profile, batch_size=16, cache=cache).iter_score(varied_pairs))
    assert result.provenance["encoding"]["from_cache"] == 48
    assert len(sum(again.batches, [])) == result.provenance["encoding"]["distinct_texts"] - 48


def test_a_run_over_the_memory_budget_is_refused_before_any_work(varied_pairs, profile):
    from calibsim_gui.core.analysis.pairs import Scorer

    embedder = FakeEmbedder()
    embedder.token_counts = lambda texts: pytest.fail("tokenized before the budget check")
    with pytest.raises(InputError, match="299 pairs"):
        next(Scorer(embedder, profile, memory_budget=10_000).iter_score(varied_pairs))
    assert embedder.calls == 0


@pytest.mark.slow
def test_token_batches_of_the_whole_run_score_as_character_sorted_chunks_did(
        real_embedder, stsb_test_path, tmp_path):
    """The batching before issue 20 (each 512-pair chunk's new texts by character length, batches
    of 64) and the new one (the whole run's texts by token count) give the same raw scores."""
    from calibsim_gui.core.calibration.profile import ReferenceProfile
    from calibsim_gui.core.calibration.profile_builder import builtin_profile_path

    path = tmp_path / "stsb300.csv"
    pd.read_csv(stsb_test_path).head(300).to_csv(path, index=False)
    table = load_pairs(path)
    profile = ReferenceProfile.load(builtin_profile_path("all-MiniLM-L6-v2"))
    frame = score_pairs(table, real_embedder, profile).frame
    a, b = (table.frame[c].tolist() for c in (table.text_a, table.text_b))
    old = sorted(dict.fromkeys(a + b), key=len)          # 300 pairs: one chunk of the old loop
    vectors = dict(zip(old, np.concatenate([real_embedder.encode_batch(old[i:i + 64])
                                            for i in range(0, len(old), 64)])))
    for metric in ("cosine", "euclidean", "dot"):
        expected = METRICS[metric].pairs(np.stack([vectors[t] for t in a]), np.stack([vectors[t] for t in b]))
        np.testing.assert_allclose(frame[f"{metric}_raw"], expected, atol=1e-6, err_msg=metric)


def test_several_geometries_in_one_run_get_suffixed_columns(pairs_file, profile):
    plain = score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile).frame
    both = score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile, geometry=("none", "whiten"))
    frame = both.frame
    pd.testing.assert_frame_equal(frame[plain.columns], plain)          # "none" columns unchanged
    for form in ("raw", "calibrated", "bg_percentile", "bg_surprise", "query_zscore"):
        assert score_column("cosine", form, "whiten") == f"cosine_{form}@whiten" in frame.columns
    assert not any(c.startswith("euclidean") and "@" in c for c in frame.columns)
    assert split_score_column("cosine_bg_percentile@whiten") == ("cosine", "bg_percentile", "whiten")
    assert split_score_column("sentence1") is None
    assert list(both.provenance["geometry"]) == ["none", "whiten"]
    assert "cosine@whiten" in both.provenance["background_saturation"]
    assert "cosine_raw@whiten" in both.provenance["agreement"]["spearman_x100"]
    # identical texts stay at the top under the fix; an unrelated pair falls to the middle
    assert frame.loc[0, "cosine_calibrated@whiten"] > 0.999
    assert frame.loc[1, "cosine_raw@whiten"] < frame.loc[1, "cosine_raw"]


def test_geometry_scores_equal_scoring_the_transformed_embeddings(pairs_file, profile):
    table = load_pairs(pairs_file)
    frame = score_pairs(table, FakeEmbedder(), profile, geometry="abtt").frame
    assert "cosine_raw" not in frame and "cosine_raw@abtt" in frame
    emb = FakeEmbedder().encode_batch(list(table.frame["sentence1"][[0, 1, 2, 4]]) +
                                      list(table.frame["sentence2"][[0, 1, 2, 4]]))
    moved = profile.transformed(emb, "abtt")
    expected = METRICS["cosine"].pairs(moved[:4].astype(float), moved[4:].astype(float))
    np.testing.assert_allclose(frame["cosine_raw@abtt"].to_numpy()[[0, 1, 2, 4]], expected, rtol=1e-6)


def test_unknown_or_missing_geometry_is_refused_with_a_fix(pairs_file, profile):
    with pytest.raises(InputError, match="unknown geometry"):
        score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile, geometry="sphere")
    with pytest.raises(InputError, match="under geometry 'whiten' the profile has references only for cosine"):
        score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile, geometry="whiten", metrics=["dot"])
    scored = score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile, geometry=("none", "whiten"),
                         metrics=["cosine", "dot"])
    assert "dot_raw" in scored.frame and "dot_raw@whiten" not in scored.frame
    assert any("dot: no references under geometry 'whiten'" in note for note in scored.notes)


def test_human_calibration_and_norms_become_columns(pairs_file, profile):
    rng = np.random.default_rng(0)
    scores = rng.uniform(-0.2, 1, 300)
    human = HumanCalibrator(geometry="whiten", model=FakeEmbedder().fingerprint.id).fit(
        scores, 5 * np.clip(scores, 0, 1))
    table = load_pairs(pairs_file)
    scored = score_pairs(table, FakeEmbedder(), profile, geometry=("none", "whiten"), human=[human],
                         norms=True)
    frame = scored.frame
    np.testing.assert_allclose(frame["cosine_human@whiten"], human.transform(frame["cosine_raw@whiten"]))
    assert scored.provenance["human"][0]["pairs"] == 300
    np.testing.assert_allclose(frame["sentence1_norm"].dropna(), 1, atol=1e-5)    # the fake normalises
    with pytest.raises(InputError, match="does not compute"):
        score_pairs(table, FakeEmbedder(), profile, human=[human])
    other = HumanCalibrator(model="another@1").fit(scores, 5 * np.clip(scores, 0, 1))
    with pytest.raises(ProfileError, match="another@1"):
        score_pairs(table, FakeEmbedder(), profile, human=[other])


def test_matrix_under_a_geometry_fix_and_with_csls(tmp_path, profile):
    path = tmp_path / "d.txt"
    path.write_text("\n".join(random_sentences(30, seed=4)))
    docs = load_documents(path)
    result = score_matrix(docs, FakeEmbedder(), profile, forms=("calibrated", "csls"), geometry="whiten",
                          block_rows=7)
    assert result.geometry == "whiten" and list(result.provenance["geometry"]) == ["whiten"]
    emb = profile.transformed(FakeEmbedder().encode_batch(docs.texts), "whiten")
    cos = METRICS["cosine"].matrix(emb.astype(float), emb.astype(float))
    np.testing.assert_allclose(result.matrices["raw"], cos, atol=1e-6)
    r = neighbourhood_similarity(emb, profile.transformed(profile.query_reference, "whiten"))
    np.testing.assert_allclose(result.matrices["csls"], 2 * cos - r[:, None] - r[None, :], atol=1e-5)
    with pytest.raises(InputError, match="csls"):
        score_matrix(docs, FakeEmbedder(), profile, metric="dot", forms=("csls",))


def test_query_scales_are_kept_in_the_cache_and_rescoring_gives_identical_scores(
        tmp_path, pairs_file, profile, monkeypatch):
    from calibsim_gui.core.calibration import query_scale
    from calibsim_gui.core.embedding.cache import EmbeddingCache

    table = load_pairs(pairs_file)
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        cold = score_pairs(table, FakeEmbedder(), profile, cache=cache).frame
        computed = []
        monkeypatch.setattr(query_scale, "reference_stats_table",
                            lambda *args, **kw: computed.append(args[0]) or (_ for _ in ()).throw(
                                AssertionError("scales were computed again")))
        warm = score_pairs(table, FakeEmbedder(), profile, cache=cache).frame
        pd.testing.assert_frame_equal(cold, warm)
        other = build_profile(FakeEmbedder(), random_sentences(500, seed=9), ProfileSettings(n_pairs=300))
        with pytest.raises(AssertionError, match="computed again"):
            score_pairs(table, FakeEmbedder(), other, cache=cache)     # another reference


# --- issue 19: the norm-aware metrics are calibrated like any metric ---

@pytest.mark.parametrize("metric", ["scaled90", "scaled50", "wrd"])
def test_norm_aware_metrics_are_calibrated_with_identical_texts_on_top(pairs_file, profile, metric):
    frame = score_pairs(load_pairs(pairs_file), FakeEmbedder(), profile, metrics=[metric]).frame
    raw = frame[f"{metric}_raw"].to_numpy(dtype=float)
    expected = METRICS[metric].pairs(*(FakeEmbedder().encode_batch(list(frame[c])) for c in ("sentence1", "sentence2")))
    ok = np.isfinite(raw)
    np.testing.assert_allclose(raw[ok], expected[ok], atol=1e-6)
    percentile = frame[f"{metric}_bg_percentile"].to_numpy(dtype=float)
    assert np.nanmin(percentile) >= 0 and np.nanmax(percentile) <= 100
    # the fake model's vectors have unit length, so WRD is the angle and identical texts (row 0)
    # score best in every calibrated form
    for form in ("calibrated", "bg_percentile", "bg_zscore", "anchor_minmax"):
        values = frame[f"{metric}_{form}"].to_numpy(dtype=float)
        assert values[0] == np.nanmax(values), form
    assert frame[f"{metric}_calibrated"].iloc[0] == pytest.approx(1.0, abs=1e-3)   # float32 vectors


def test_a_profile_without_the_new_metrics_says_how_to_get_them(pairs_file):
    cosine_only = build_profile(FakeEmbedder(), random_sentences(400, seed=6),
                                ProfileSettings(n_pairs=300, metrics=["cosine"], geometries=()))
    scored = score_pairs(load_pairs(pairs_file), FakeEmbedder(), cosine_only, metrics=["cosine", "wrd"])
    assert any("wrd" in n and "calibsim profile build --metrics wrd" in n for n in scored.notes)
    with pytest.raises(InputError, match="not for scaled90") as error:
        score_pairs(load_pairs(pairs_file), FakeEmbedder(), cosine_only, metrics=["scaled90"])
    assert "--metrics scaled90" in error.value.fix


def test_local_minmax_rows_by_hand_and_in_the_document_matrix(tmp_path, profile):
    from calibsim_gui.core.analysis.matrices import local_minmax_rows

    sim = np.array([[1.0, 0.2, 0.6, 0.4],
                    [0.2, 1.0, 0.5, 0.5]])
    expected = np.array([[(1 - .2) / .4, 0.0, 1.0, 0.5],
                         [0.0, (1 - .2) / .3, 1.0, 1.0]])
    np.testing.assert_allclose(local_minmax_rows(sim), expected)
    # a block starting at row 2 leaves out columns 2 and 3
    np.testing.assert_allclose(local_minmax_rows(sim, 2), [[1.0, 0.0, 0.5, 0.25], [0.0, 1.0, 0.375, 0.375]])
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(random_sentences(9, seed=4)))
    result = score_matrix(load_documents([docs]), FakeEmbedder(), profile,
                          forms=("local_minmax",), block_rows=4)
    local, raw = result.matrices["local_minmax"], result.matrices["raw"].astype(float)
    for i in range(len(raw)):
        others = np.delete(raw[i], i)
        np.testing.assert_allclose(np.delete(local[i], i),
                                   (others - others.min()) / (others.max() - others.min()), atol=1e-6)
    assert "NOT comparable" in result.provenance["columns"]["local_minmax"]


def test_saturation_note_names_the_metric_and_the_columns_it_means(tmp_path, profile):
    texts = random_sentences(40, seed=21)
    path = tmp_path / "same.csv"
    pd.DataFrame({"sentence1": texts, "sentence2": texts}).to_csv(path, index=False)   # all identical
    scored = score_pairs(load_pairs(path), FakeEmbedder(), profile, metrics=["cosine", "manhattan"])
    note = next(n for n in scored.notes if "99th percentile" in n)
    assert note.startswith("cosine: 100.0% of pairs score above the background's 99th percentile of cosine")
    assert "cosine_bg_percentile cannot separate them; rank them with cosine_calibrated or cosine_bg_surprise" in note
    assert not any("<metric>" in n for n in scored.notes)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "Int64", "Float64", "double[pyarrow]",
                                   "int64[pyarrow]", "object", "string", "bool"])
def test_human_scores_read_from_numbers_equal_those_read_from_their_text(dtype):
    """A column of numbers is read as it is, not through its text: the values are the same,
    empty cells and cells that are not numbers are NaN."""
    from calibsim_gui.core.analysis.distributions import label_values

    numbers = [0.0, 4.25, 1e-7, 5.0, 3.0, None] if dtype not in ("bool",) else [True, False]
    if "int" in dtype.lower():
        numbers = [0, 4, 5, 3, None] if dtype[0] in "I" or "pyarrow" in dtype else [0, 4, 5, 3]
    column = pd.Series(numbers, dtype=dtype)
    through_text = pd.to_numeric(column.astype(str).str.strip().replace("", np.nan),
                                 errors="coerce").to_numpy(dtype=float)
    got = label_values(column)
    np.testing.assert_array_equal(got, through_text)
    assert got.dtype == np.float64
    if dtype in ("float64", "Float64", "double[pyarrow]", "Int64"):
        assert np.isnan(got[-1]) and got[1] == numbers[1]
