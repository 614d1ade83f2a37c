"""Memory: bounded working memory, and a budget checked before a run starts."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from calibsim_gui.core.analysis.matrices import score_matrix
from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.core.io.memory import (
    BUDGET_ENV, WORKING_BYTES, default_budget, file_read_bytes, format_size, pair_run_bytes, parse_size, physical_memory, profile_build_bytes)
from calibsim_gui.core.geometry.metrics import PAIR_BLOCK, pair_scores
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from tests.fakes import FakeEmbedder, random_sentences


def working_memory(n_pairs: int, dim: int = 48) -> int:
    """Peak bytes `pair_scores` allocates beyond the score arrays it returns."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n_pairs, dim)).astype(np.float32) for _ in range(2))
    tracemalloc.start()
    try:
        out = pair_scores(a, b)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - sum(v.nbytes for v in out.values())


def test_working_memory_of_pair_scores_does_not_grow_with_the_number_of_pairs():
    small, large = working_memory(2 * PAIR_BLOCK), working_memory(25 * PAIR_BLOCK)
    assert large <= small * 1.1 + 1_000_000
    assert large < 8 * PAIR_BLOCK * 48 * 8            # a few float64 blocks, not the 25x larger inputs


@pytest.fixture(scope="module")
def small_profile():
    return build_profile(FakeEmbedder(), random_sentences(400, seed=3), ProfileSettings(n_pairs=300))


def pairs_table(tmp_path, n: int):
    texts = random_sentences(2 * n, seed=11)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts[:n], "sentence2": texts[n:]}).to_csv(path, index=False)
    return load_pairs(path)


def test_sizes_are_read_and_written_the_way_people_write_them():
    assert parse_size("1.5GB") == 1_500_000_000
    assert parse_size("512 m") == 512_000_000
    assert parse_size("4096") == 4096
    assert format_size(parse_size("12G")) == "12.0 GB"
    with pytest.raises(InputError, match="not a memory size"):
        parse_size("lots")


def test_the_budget_is_half_the_memory_unless_the_user_sets_it(monkeypatch):
    monkeypatch.delenv(BUDGET_ENV, raising=False)
    assert default_budget() == pytest.approx(physical_memory() / 2, rel=0.01)
    monkeypatch.setenv(BUDGET_ENV, "3G")
    assert default_budget() == 3_000_000_000


def test_a_pair_run_over_the_budget_is_refused_before_encoding(tmp_path, small_profile):
    table = pairs_table(tmp_path, 50)
    embedder = FakeEmbedder()
    with pytest.raises(InputError, match=r"scoring 50 pairs \(100 distinct texts\) needs about") as err:
        score_pairs(table, embedder, small_profile, memory_budget=10_000_000)
    assert "--memory-budget" in err.value.fix
    assert embedder.calls == 0
    assert len(score_pairs(table, embedder, small_profile, memory_budget=None).frame) == 50


def test_a_matrix_over_the_budget_is_refused(tmp_path, small_profile):
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(random_sentences(30, seed=2)), encoding="utf-8")
    with pytest.raises(InputError, match="the 30 x 30 matrix needs about"):
        score_matrix(load_documents([docs]), FakeEmbedder(), small_profile, memory_budget=1000)


def test_the_pair_estimate_covers_what_scoring_really_holds(tmp_path):
    """The estimate bounds the traced peak from above, and not wildly: the budget is honest."""
    embedder = FakeEmbedder(dimension=256)
    profile = build_profile(embedder, random_sentences(400, seed=3), ProfileSettings(n_pairs=300))
    table = pairs_table(tmp_path, 4000)
    tracemalloc.start()
    try:
        scored = score_pairs(table, embedder, profile)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    columns = [c for c in scored.frame.columns if c not in table.frame.columns]
    estimate = pair_run_bytes(4000, 8000, embedder.dimension, len(columns))
    assert (estimate - WORKING_BYTES) / 3 < peak < estimate


def test_a_background_over_the_budget_is_refused_before_encoding():
    embedder = FakeEmbedder()
    with pytest.raises(InputError, match="a background of 500 sentences and 20,000 pairs needs about") as err:
        build_profile(embedder, random_sentences(500, seed=3), memory_budget=1000)
    assert "--engine ray" in err.value.fix
    assert embedder.calls == 0


def traced_peak(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_read_estimate_covers_what_reading_a_file_holds(tmp_path):
    """Checked from the file's size before reading, and not wildly above what reading holds."""
    texts = random_sentences(12000, seed=5)
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts[:6000], "sentence2": texts[6000:]}).to_csv(path, index=False)
    load_pairs(path)                                        # pandas' lazy imports are not the file
    size = path.stat().st_size
    peak = traced_peak(lambda: load_pairs(path))
    assert size * 2 < peak < file_read_bytes(size) - WORKING_BYTES


def test_background_pairs_are_in_the_build_estimate_and_it_covers_the_build():
    """`--pairs 2000000` once held 7 GB under a 1G budget: the pairs are counted now."""
    embedder, texts = FakeEmbedder(dimension=128), random_sentences(1500, seed=4)
    with pytest.raises(InputError, match="a background of 1,500 sentences and 1,000,000 pairs"):
        build_profile(embedder, texts, ProfileSettings(n_pairs=1_000_000), memory_budget=1_000_000_000)
    assert embedder.calls == 0
    peak = traced_peak(lambda: build_profile(embedder, texts, ProfileSettings(n_pairs=40_000)))
    estimate = profile_build_bytes(1500, 128, 40_000)
    assert (estimate - WORKING_BYTES) / 4 < peak < estimate


def test_a_build_asked_for_no_pairs_is_refused():
    with pytest.raises(InputError, match="-5 background pairs cannot be drawn"):
        build_profile(FakeEmbedder(), random_sentences(50, seed=4), ProfileSettings(n_pairs=-5))
