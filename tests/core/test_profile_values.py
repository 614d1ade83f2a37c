"""Hand-edited profiles re-sealed with a new checksum are checked for plausibility (#43): values
that still moved numbers (a negated query reference moved query_zscore by 0.77, a tail shape of
1e6 moved bg_surprise by 3.95) are refused on load, merge and upgrade, naming the field and the fix;
a schema version that is not a number, or newer than this calibsim's, says so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from calibsim_gui.core.calibration.profile import DIGEST_KEY, ReferenceProfile, content_digest, merge_profiles
from calibsim_gui.core.calibration.profile_builder import build_profile, builtin_profile_path, upgrade_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.errors import ProfileError
from calibsim_gui.core.geometry.transforms import decode_array, encode_array
from tests.core.test_profile import _as_old_schema
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(scope="module")
def builtin_document():
    return json.loads(builtin_profile_path("all-MiniLM-L6-v2").read_text(encoding="utf-8"))


def _negated_query_reference(d):
    d["query_reference"] = encode_array(-decode_array(d["query_reference"]))


def _tail(d, **values):
    d["metrics"]["cosine"]["calibrators"]["bg_surprise"].update(values)


def _resealed(d, tmp_path, name="edited"):
    d[DIGEST_KEY] = content_digest(d)
    path = tmp_path / f"{name}.calibsim-profile"
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize("edit, field", [
    (_negated_query_reference, "query reference"),
    (lambda d: _tail(d, xi_=1e6), "bg_surprise tail fit (shape xi_ 1e+06"),
    (lambda d: _tail(d, sigma_=d["metrics"]["cosine"]["calibrators"]["bg_surprise"]["sigma_"] * 10), "sigma_"),
    (lambda d: d["metrics"]["euclidean"].update(orientation="higher = more similar"), "euclidean: its orientation"),
    (lambda d: d["geometries"]["center"]["metrics"]["cosine"].update(orientation="lower = more similar"),
     "cosine: its orientation"),
], ids=["negated query reference", "tail shape 1e6", "tail scale x10", "orientation", "orientation in a fix"])
def test_a_resealed_implausible_profile_is_refused_naming_the_field(builtin_document, tmp_path, edit, field):
    d = json.loads(json.dumps(builtin_document))
    edit(d)
    path = _resealed(d, tmp_path)
    with pytest.raises(ProfileError) as caught:
        ReferenceProfile.load(path)
    message = str(caught.value)
    assert field in message and str(path) in message and "Fix: rebuild it" in message


@pytest.mark.parametrize("change", [{"mean": 0.5}, {"m2": 25}, {"m2": 1 / 25}], ids=["mean", "spread x5", "spread / 5"])
def test_moments_that_disagree_with_the_quantiles_are_refused_even_with_calibrators_refitted(
        builtin_document, tmp_path, change):
    """The bg_zscore form refitted on the edited moments passes the "fitted on its own
    references" check; the moments must also agree with the background's quantile sketch."""
    profile = ReferenceProfile.from_dict(json.loads(json.dumps(builtin_document)))
    reference = profile.metrics["cosine"]
    if "mean" in change:
        reference.background.mean = change["mean"]
    else:
        reference.background.m2 *= change["m2"]
    reference.fit(profile.anchors)
    with pytest.raises(ProfileError, match="the background's mean .* disagree with its quantile sketch"):
        ReferenceProfile.load(_resealed(profile.to_dict(), tmp_path))


def test_the_built_in_profile_is_plausible(builtin_document, tmp_path):
    ReferenceProfile.load(_resealed(json.loads(json.dumps(builtin_document)), tmp_path))


@pytest.mark.parametrize("version, words, not_words", [
    (True, "its schema_version is True, not a whole number", "0.True"),
    (3.0, "its schema_version is 3.0, not a whole number", "0.3"),
    (4, "made by a newer calibsim (profile schema version 4; this calibsim reads version 3). Fix: upgrade calibsim",
     "rebuild"),
])
def test_a_schema_version_that_is_not_a_number_or_newer_says_so(builtin_document, tmp_path, version, words, not_words):
    d = json.loads(json.dumps(builtin_document))
    d["schema_version"] = version
    with pytest.raises(ProfileError) as caught:
        ReferenceProfile.load(_resealed(d, tmp_path))
    assert words in str(caught.value) and not_words not in str(caught.value)


def test_an_implausible_part_is_refused_before_a_merge(builtin_document, tmp_path):
    """`profile merge` loads each part (the CLI's `ReferenceProfile.load`), so a tampered part
    never reaches `merge_profiles`."""
    d = json.loads(json.dumps(builtin_document))
    _tail(d, xi_=1e6)
    good = ReferenceProfile.from_dict(json.loads(json.dumps(builtin_document)))
    with pytest.raises(ProfileError, match="tail fit"):
        merge_profiles(good, ReferenceProfile.load(_resealed(d, tmp_path)))


def test_an_old_profile_with_a_negated_query_reference_is_refused_by_upgrade():
    profile = build_profile(FakeEmbedder(), random_sentences(600, seed=4),
                            ProfileSettings(n_pairs=800, seed=1, geometries=("center",)))
    old = _as_old_schema(profile, 2)
    upgrade_profile(json.loads(json.dumps(old)), FakeEmbedder())          # untouched: upgrades
    _negated_query_reference(old)
    with pytest.raises(ProfileError, match="query reference .* points away from the background mean"):
        upgrade_profile(old, FakeEmbedder())
    old["schema_version"] = True                                        # True == 1, but not a version
    with pytest.raises(ProfileError, match="only profiles made by calibsim 0.1 or 0.2"):
        upgrade_profile(old, FakeEmbedder())
