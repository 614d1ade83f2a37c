"""Property-based tests (hypothesis): loaders on arbitrary bytes, calibrators on arbitrary scores."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from calibsim_gui.core.references.anchors import load_anchors
from calibsim_gui.core.calibration.calibrators import (
    Calibrator, MinMaxCalibrator, ReferenceScaleCalibrator, PercentileCalibrator, TailSurpriseCalibrator, ZScoreCalibrator)
from calibsim_gui.core.errors import CalibsimError
from calibsim_gui.core.io.inputs import load_documents, load_pairs
from calibsim_gui.core.io.tables import read_text_file
from calibsim_gui.core.calibration.profile import ReferenceProfile
from calibsim_gui.core.analysis.project import Project
from calibsim_gui.core.calibration.sketch import ScoreSketch

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- loaders

# Bytes that look like tables and JSON often enough to reach the parsers, not only the
# binary/encoding checks: separators, quotes, braces, line ends, a NUL, a non-ASCII letter.
TABLE_CHARS = list('ab1.,;\t"\'\n\r {}[]:\\\x00é') + ["sentence1", "sentence2", "score", '"text"']
table_like = st.lists(st.sampled_from(TABLE_CHARS), max_size=40).map(lambda parts: "".join(parts).encode())
file_bytes = st.one_of(st.binary(max_size=300), table_like)
SUFFIXES = [".csv", ".tsv", ".jsonl", ".txt"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def _only_our_errors(call):
    """Run `call`; return its result, or None if it raised one of calibsim's own errors."""
    try:
        return call()
    except CalibsimError as error:
        assert str(error), "an error without a message"
        return None


@SETTINGS
@given(data=file_bytes, suffix=st.sampled_from(SUFFIXES))
def test_loaders_raise_only_calibsim_errors_on_arbitrary_bytes(folder, data, suffix):
    path = folder / f"input{suffix}"
    path.write_bytes(data)

    text = _only_our_errors(lambda: read_text_file(path))
    if text is not None:
        assert "\r" not in text and not text.startswith("\ufeff")

    table = _only_our_errors(lambda: load_pairs(path))
    if table is not None:
        assert table.text_a != table.text_b
        assert len(table.empty_rows) < len(table.frame)
        assert all(0 <= row < len(table.frame) for row in table.empty_rows)

    documents = _only_our_errors(lambda: load_documents(path))
    if documents is not None:
        texts = documents.texts
        assert texts and all(t and t == t.strip() for t in texts)
        assert len(set(texts)) == len(texts)


@SETTINGS
@given(data=file_bytes, suffix=st.sampled_from([".json", ".csv", ".calibsim"]))
def test_anchor_and_project_readers_raise_only_calibsim_errors(folder, data, suffix):
    path = folder / f"saved{suffix}"
    path.write_bytes(data)
    reader = Project.load if suffix == ".calibsim" else load_anchors
    _only_our_errors(lambda: reader(path))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["path", "kind", "options", "files", "pairs", "seed", "metric", "form", "levels", "name",
         "target", "level", "text_a", "text_b", "per_file", "encoding"]), inner, max_size=5),
    max_leaves=15)
project_keys = st.sampled_from(["model", "device", "anchors", "profile", "background", "inputs",
                                "settings"])


@SETTINGS
@given(fields=st.dictionaries(project_keys, json_values, max_size=5))
def test_hand_edited_projects_raise_only_calibsim_errors(folder, fields):
    path = folder / "edited.calibsim"
    path.write_text(json.dumps({"format": "calibsim-project", "schema_version": 1, **fields}))
    _only_our_errors(lambda: Project.load(path))


@SETTINGS
@given(data=file_bytes)
def test_profile_reader_raises_only_calibsim_errors(folder, data):
    path = folder / "saved.calibsim-profile"
    path.write_bytes(data)
    _only_our_errors(lambda: ReferenceProfile.load(path))


def test_profile_reader_refuses_deeply_nested_json(folder):
    path = folder / "deep.calibsim-profile"
    path.write_text("[" * 100_000 + "]" * 100_000)
    _only_our_errors(lambda: ReferenceProfile.load(path))


# --------------------------------------------------------------------------- calibrators


@st.composite
def backgrounds(draw):
    """Background scores of a random shape: many pairs, ties from rounding, a heavy tail or not."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(200, 5000))
    shape = draw(st.sampled_from(["normal", "skewed", "two-humps", "heavy-tail"]))
    values = {"normal": lambda: rng.normal(0.1, 0.1, n),
              "skewed": lambda: rng.beta(2, 8, n) * 1.6 - 0.6,
              "two-humps": lambda: np.concatenate([rng.normal(-0.2, 0.05, n // 2),
                                                   rng.normal(0.4, 0.05, n - n // 2)]),
              "heavy-tail": lambda: rng.standard_t(2, n) * 0.05}[shape]()
    decimals = draw(st.sampled_from([None, 1, 2, 3]))
    if decimals is not None:
        values = np.round(values, decimals)
    assume(values.std() > 0)
    return ScoreSketch.of(values)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
# Calibrated scores are similarities: cosines and dot products, distances negated. The monotone
# properties are checked well beyond that range; the overflow of e.g. (1e308 - -1e308) is not.
wide = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
score_lists = st.lists(wide, min_size=1, max_size=60)


@st.composite
def ladders(draw):
    n_levels = draw(st.integers(2, 6))
    targets = sorted(draw(st.lists(st.integers(0, 100), min_size=n_levels, max_size=n_levels,
                                   unique=True)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    centres = np.sort(rng.uniform(-1, 1, n_levels)) if draw(st.booleans()) else rng.uniform(-1, 1, n_levels)
    levels, scores = [], []
    for i, centre in enumerate(centres):
        k = draw(st.integers(1, 5))
        levels += [f"level{i}"] * k
        scores += list(centre + rng.normal(0, 0.05, k))
    unrelated = rng.uniform(-1, 0.5, 21)
    try:
        return ReferenceScaleCalibrator(n_resamples=20).fit(
            scores, levels, {f"level{i}": t / 100 for i, t in enumerate(targets)},
            unrelated=unrelated, identical=float(max(scores)) + draw(st.floats(0, 1)))
    except ValueError:              # documented: identical texts must score above unrelated ones
        assume(False)


@st.composite
def fitted(draw):
    kind = draw(st.sampled_from(["ladder", "minmax", "zscore", "percentile", "surprise"]))
    if kind == "ladder":
        return draw(ladders())
    if kind == "minmax":
        low = draw(st.floats(-10, 10))
        return MinMaxCalibrator().fit(low, low + draw(st.floats(1e-3, 10)))
    background = draw(backgrounds())
    return {"zscore": ZScoreCalibrator, "percentile": PercentileCalibrator,
            "surprise": TailSurpriseCalibrator}[kind]().fit(background)


@SETTINGS
@given(calibrator=fitted(), scores=score_lists)
def test_every_calibrator_is_non_decreasing(calibrator, scores):
    s = np.sort(np.asarray(scores))
    out = calibrator.transform(s)
    assert out.shape == s.shape
    assert not np.isnan(out).any()
    assert np.all(np.diff(out) >= 0), f"{type(calibrator).__name__} decreases: {s} -> {out}"


@SETTINGS
@given(calibrator=fitted(), scores=st.lists(st.floats(allow_nan=True), min_size=1, max_size=30))
def test_nan_in_gives_nan_out_and_nothing_else_becomes_nan(calibrator, scores):
    s = np.asarray(scores)
    with np.errstate(all="ignore"):       # infinities may overflow a linear map: not the point
        out = calibrator.transform(s)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(s))


@SETTINGS
@given(background=backgrounds(), scores=st.lists(st.floats(allow_nan=False), min_size=1, max_size=60))
def test_percentiles_stay_within_0_and_100_on_any_score(background, scores):
    with np.errstate(over="ignore"):            # 1e308 overflows the search grid's cell index
        out = PercentileCalibrator().fit(background).transform(scores)
    assert np.all((out >= 0) & (out <= 100))


@SETTINGS
@given(background=backgrounds())
def test_percentiles_reach_0_below_and_100_above_the_background(background):
    percentile = PercentileCalibrator().fit(background)
    low, high = percentile.transform([background.min - 1, background.max + 1])
    assert (low, high) == (0.0, 100.0)
    assert 0 < percentile.halfwidth_ < 100


@SETTINGS
@given(calibrator=fitted(), scores=score_lists)
def test_to_dict_and_back_through_json_gives_identical_transforms(calibrator, scores):
    saved = json.loads(json.dumps(calibrator.to_dict(), allow_nan=False))
    restored = Calibrator.from_dict(saved)
    assert type(restored) is type(calibrator)
    np.testing.assert_array_equal(restored.transform(scores), calibrator.transform(scores))


# --------------------------------------------------------------------------- sketch


@SETTINGS
@given(background=backgrounds(), split=st.floats(0.05, 0.95))
def test_sketch_of_two_halves_has_the_moments_and_tail_of_the_whole(background, split):
    values = np.sort(background.top)                       # exact values when n <= TOP_KEEP
    assume(background.n == len(values))
    rng = np.random.default_rng(0)
    values = rng.permutation(values)
    k = int(split * len(values))
    merged = ScoreSketch.of(values[:k])
    merged.merge(ScoreSketch.of(values[k:]))
    assert merged.n == background.n
    assert math.isclose(merged.mean, background.mean, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(merged.std, background.std, rel_tol=1e-7, abs_tol=1e-12)
    np.testing.assert_array_equal(merged.top, background.top)
    restored = ScoreSketch.from_dict(json.loads(json.dumps(merged.to_dict())))
    qs = np.linspace(0, 1, 11)
    assert [restored.quantile(q) for q in qs] == [merged.quantile(q) for q in qs]
    assert np.all(np.diff([restored.quantile(q) for q in qs]) >= 0)
