"""Weight digests remembered in the user cache by stat data: reused while a file is unchanged,
never once its bytes change (even with its mtime put back), and a damaged store is ignored."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from calibsim_gui.core.embedding import file_digests
from calibsim_gui.core.embedding.cache_folder import default_cache_dir
from calibsim_gui.core.embedding.model_folders import fingerprint_folder


@pytest.fixture
def model(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 8}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 4)
    return folder


@pytest.fixture
def hashed_later(monkeypatch):
    """Digests are taken 10 s after the files were written, so they are remembered (a file that
    changed within `RACY_SECONDS` of its hash is not)."""
    now = time.time
    monkeypatch.setattr(file_digests.time, "time", lambda: now() + 10)


persisted = pytest.mark.skipif(not file_digests.PERSISTED, reason="Windows: ctime is the creation time, "
                               "digests are remembered for the process only")


def _new_cache(monkeypatch, tmp_path, name: str, store_from=None):
    """Point the cache at a new folder (a new process's view), holding a copy of `store_from`."""
    folder = tmp_path / name
    folder.mkdir()
    if store_from is not None:
        shutil.copy(store_from / file_digests.STORE_NAME, folder / file_digests.STORE_NAME)
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(folder))
    return folder


def _refuse_hashing(monkeypatch):
    def refuse(path):
        raise AssertionError(f"{path} was read again")
    monkeypatch.setattr(file_digests, "hash_file", refuse)


@persisted
def test_an_unchanged_folder_is_fingerprinted_again_without_reading_its_files(model, tmp_path, monkeypatch,
                                                                             hashed_later):
    first = fingerprint_folder(model)
    store = default_cache_dir()
    _new_cache(monkeypatch, tmp_path, "next-run", store_from=store)
    _refuse_hashing(monkeypatch)
    assert fingerprint_folder(model) == first
    _new_cache(monkeypatch, tmp_path, "empty")          # without the store the files are read
    with pytest.raises(AssertionError, match="was read again"):
        fingerprint_folder(model)


@persisted
def test_weights_rewritten_with_their_mtime_put_back_change_the_fingerprint(model, tmp_path, monkeypatch,
                                                                           hashed_later):
    """git's racy-clean case: same size, same mtime, other bytes. The ctime still moves."""
    weights = model / "model.safetensors"
    before = fingerprint_folder(model)
    store = default_cache_dir()
    old = os.stat(weights)
    weights.write_bytes(bytes(reversed(range(256))) * 4)                    # same size
    os.utime(weights, ns=(old.st_atime_ns, old.st_mtime_ns))
    while os.stat(weights).st_ctime_ns == old.st_ctime_ns:   # the file clock ticks every few ms
        os.utime(weights, ns=(old.st_atime_ns, old.st_mtime_ns))
    assert os.stat(weights).st_mtime_ns == old.st_mtime_ns and os.stat(weights).st_size == old.st_size
    _new_cache(monkeypatch, tmp_path, "next-run", store_from=store)
    after = fingerprint_folder(model)
    assert after.digest != before.digest
    _new_cache(monkeypatch, tmp_path, "no-store")
    assert fingerprint_folder(model) == after                # the digest of the bytes now there


@persisted
@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "bad-digest", "bad-stat"])
def test_a_damaged_digest_store_is_ignored_and_written_again(model, tmp_path, monkeypatch, hashed_later,
                                                           damage):
    truth = fingerprint_folder(model)
    store = default_cache_dir() / file_digests.STORE_NAME
    text = store.read_text(encoding="utf-8")
    data = json.loads(text)
    first = next(iter(data["files"]))
    if damage == "garbage":
        store.write_bytes(os.urandom(300) + b"\0")
    elif damage == "truncated":
        store.write_text(text[: len(text) // 2], encoding="utf-8")
    elif damage == "foreign":
        store.write_text(json.dumps({**data, "tag": "another program"}), encoding="utf-8")
    elif damage == "bad-digest":
        data["files"][first][1] = "not a digest"
        store.write_text(json.dumps(data), encoding="utf-8")
    else:
        data["files"][first][0] = ["inode", 1, 2, 3, 4]
        store.write_text(json.dumps(data), encoding="utf-8")
    cache = _new_cache(monkeypatch, tmp_path, "next-run")
    shutil.copy(store, cache / file_digests.STORE_NAME)
    assert fingerprint_folder(model) == truth
    _new_cache(monkeypatch, tmp_path, "after", store_from=cache)     # the rewritten store serves
    _refuse_hashing(monkeypatch)
    assert fingerprint_folder(model) == truth


def test_a_file_changed_moments_ago_is_not_remembered(model):
    """A file written within `RACY_SECONDS` could change again within its timestamps' granularity."""
    fingerprint_folder(model)
    store = default_cache_dir() / file_digests.STORE_NAME
    assert not store.exists()


def test_fingerprints_work_where_the_store_cannot_be_written(model, tmp_path, monkeypatch, hashed_later):
    truth = fingerprint_folder(model)
    blocker = tmp_path / "a file"
    blocker.write_text("in the way")
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(blocker / "cache"))
    assert fingerprint_folder(model) == truth
