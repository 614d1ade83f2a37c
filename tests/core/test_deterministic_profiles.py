"""The same input, seed and engine give a byte-identical profile (issue 30 item 3): the quantile
sketches compact deterministically, merges included, and read the sketches DataSketches wrote."""

from __future__ import annotations

import numpy as np
import pytest

from calibsim_gui.core.calibration.kll import KllSketch
from calibsim_gui.core.calibration.profile import ReferenceProfile, merge_profiles
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.calibration.sketch import KLL_K, ScoreSketch
from tests.fakes import FakeEmbedder, random_sentences

PAIRS = 6000                     # past the sketch's exact size (KLL_K), so compactions happen


def _build(texts, path, seed=3):
    profile = build_profile(FakeEmbedder(), texts, ProfileSettings(n_pairs=PAIRS, seed=seed, name="corpus"))
    return profile.save(path).read_bytes()


def test_a_profile_built_twice_has_the_same_bytes(tmp_path):
    texts = random_sentences(400, seed=5)
    first, second = _build(texts, tmp_path / "a.calibsim-profile"), _build(texts, tmp_path / "b.calibsim-profile")
    profile = ReferenceProfile.load(tmp_path / "a.calibsim-profile")
    assert "created" not in profile.provenance       # a clock would make the bytes differ
    assert profile.metrics["cosine"].background.rank_error() > 0           # compacted, not exact
    assert profile.geometries["center"].metrics["cosine"].background.n == PAIRS
    assert first == second


def test_merging_the_same_profiles_twice_gives_the_same_bytes(tmp_path):
    texts = random_sentences(600, seed=6)
    paths = [tmp_path / f"p{i}.calibsim-profile" for i in range(2)]
    for i, path in enumerate(paths):
        _build(texts[i::2], path, seed=i)
    parts = [ReferenceProfile.load(path) for path in paths]
    merged = [merge_profiles(*parts).save(tmp_path / f"m{i}.calibsim-profile").read_bytes() for i in range(2)]
    assert merged[0] == merged[1]
    background = ReferenceProfile.load(tmp_path / "m0.calibsim-profile").metrics["cosine"].background
    assert background.n == 2 * PAIRS


def test_chunked_updates_and_merges_repeat_exactly_and_stay_within_the_rank_error():
    values = np.random.default_rng(0).normal(size=120_000)

    def chunked() -> ScoreSketch:
        parts = [ScoreSketch.of(chunk) for chunk in np.array_split(values, 7)]
        whole = ScoreSketch()
        for part in parts:
            whole.merge(part)
        return whole

    a, b = chunked(), chunked()
    assert a.to_dict() == b.to_dict()
    for q in np.linspace(0.01, 0.99, 25):
        assert abs(np.mean(values < a.quantile(q)) - q) <= a.rank_error()


@pytest.mark.parametrize("n", [1, 7, 2000, 2001, 60_000])
def test_sketches_written_by_datasketches_read_with_the_same_quantiles_and_back(n):
    from datasketches import kll_doubles_sketch

    native = kll_doubles_sketch(KLL_K)
    native.update(np.random.default_rng(n).normal(size=n))
    ours = KllSketch.deserialize(native.serialize())
    ranks = np.linspace(0, 1, 41)
    assert [ours.quantile(q) for q in ranks] == [native.get_quantile(q) for q in ranks]
    ours.update(np.random.default_rng(n + 1).normal(size=n))              # then written by us
    back = kll_doubles_sketch.deserialize(ours.serialize())
    assert (back.n, back.num_retained) == (2 * n, ours.num_retained)
    assert [back.get_quantile(q) for q in ranks] == [ours.quantile(q) for q in ranks]
