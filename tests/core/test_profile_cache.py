"""A checked profile's parse is kept in the cache (issue 29): the same numbers from it, a damaged
or foreign entry ignored and written again, the profile's identity unchanged."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from calibsim_gui.core.calibration import profile_cache
from calibsim_gui.core.calibration.profile import DIGEST_KEY, ReferenceProfile, content_digest
from calibsim_gui.core.calibration.profile_builder import builtin_profile_path
from calibsim_gui.core.errors import ProfileError

BUILTIN_DIGEST = "9a099cb01a05ae2073a7cccffe9d3445cecdfc26b9a41e6e040b461bd43c1d4a"
"""The built-in profile's content_sha256 (rebuilt in #40 with a human band measured per source):
loading it through the cache must not move its identity."""


@pytest.fixture(scope="module")
def builtin():
    path = builtin_profile_path("all-MiniLM-L6-v2")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def calibrated(profile: ReferenceProfile) -> dict:
    """Every calibrated form of every metric and geometry on a grid of raw scores."""
    raw = np.linspace(-1.5, 3.0, 301)
    return {(g, m, form): values for g in profile.geometry_names() for m in profile.references(g)
            for form, values in profile.calibrate(m, raw, g).items()}


def assert_same(a: ReferenceProfile, b: ReferenceProfile) -> None:
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    left, right = calibrated(a), calibrated(b)
    assert left.keys() == right.keys()
    assert all(np.array_equal(left[k], right[k]) for k in left)


def test_builtin_profile_keeps_its_digest_and_loads_the_same_from_the_cache(builtin):
    path, key = builtin
    document = json.loads(path.read_text())
    assert document[DIGEST_KEY] == BUILTIN_DIGEST == content_digest(document)
    first = ReferenceProfile.load(path)                    # parsed, checked, then kept
    assert profile_cache.entry_path(key).is_file()
    assert profile_cache.load(key) == document
    assert_same(first, ReferenceProfile.load(path))        # from the cache
    assert_same(first, ReferenceProfile.from_dict(document))


def _rewrite_entry(key: str, **changes) -> None:
    path = profile_cache.entry_path(key)
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    arrays.update(changes)
    with open(path, "wb") as out:
        np.savez(out, **arrays)


@pytest.mark.parametrize("damage", ["number", "checksum", "garbage", "version"])
def test_a_damaged_or_foreign_entry_is_ignored_and_written_again(builtin, damage, monkeypatch):
    path, key = builtin
    fresh = ReferenceProfile.load(path)
    entry = profile_cache.entry_path(key)
    if damage == "number":                 # a number changed, its checksum kept
        with np.load(entry) as data:
            floats = data["floats"].copy()
        floats[len(floats) // 2] += 0.25
        _rewrite_entry(key, floats=floats)
    elif damage == "checksum":
        _rewrite_entry(key, checksum=np.zeros(32, dtype=np.uint8))
    elif damage == "garbage":
        entry.write_bytes(b"PK\x03\x04 not a zip")
    else:                                  # written by another calibsim version
        monkeypatch.setattr(profile_cache, "TAG", "calibsim 0.0.1 checked profile 1")
    assert profile_cache.load(key) is None
    assert_same(fresh, ReferenceProfile.load(path))
    assert profile_cache.load(key) == json.loads(path.read_text())      # rebuilt


def test_a_tampered_profile_file_is_checked_again_not_taken_from_the_cache(builtin, tmp_path):
    path, _ = builtin
    copy = tmp_path / "copy.calibsim-profile"
    shutil.copyfile(path, copy)
    ReferenceProfile.load(copy)
    document = json.loads(copy.read_text())
    document["metrics"]["cosine"]["anchor_scores"][0] += 0.5           # the checksum no longer matches
    copy.write_text(json.dumps(document))
    with pytest.raises(ProfileError, match="modified or damaged after it was saved"):
        ReferenceProfile.load(copy)


def test_profiles_load_where_the_cache_cannot_be_written(builtin, tmp_path, monkeypatch):
    path, key = builtin
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be")
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(blocker))
    profile = ReferenceProfile.load(path)
    assert profile.fingerprint.name == "all-MiniLM-L6-v2" and profile_cache.load(key) is None


def test_a_document_holding_the_placeholder_key_is_not_cached(builtin, tmp_path):
    path, _ = builtin
    document = json.loads(path.read_text())
    document["provenance"]["\0"] = ["f", 0, 3]             # would read as a moved list
    document[DIGEST_KEY] = content_digest(document)
    odd = tmp_path / "odd.calibsim-profile"
    odd.write_text(json.dumps(document))
    key = hashlib.sha256(odd.read_bytes()).hexdigest()
    assert ReferenceProfile.load(odd).provenance["\0"] == ["f", 0, 3]
    assert not profile_cache.entry_path(key).exists()
