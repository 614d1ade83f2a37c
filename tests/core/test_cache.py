"""The SQLite embedding cache."""

import sqlite3
import threading
import warnings

import numpy as np
import pytest

from calibsim_gui.core.embedding import cache as cache_module
from calibsim_gui.core.embedding.cache import EmbeddingCache, cache_key, default_cache_dir, text_digest

MODEL_A = "model-a@0123456789abcdef"
MODEL_B = "model-b@fedcba9876543210"


def vectors(n, dim=8, seed=0):
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


@pytest.fixture
def cache(tmp_path):
    with EmbeddingCache(tmp_path / "cache.sqlite") as c:
        yield c


def test_store_then_lookup(cache):
    texts = ["alpha", "beta", "gamma"]
    vecs = vectors(3)
    cache.store(MODEL_A, texts, vecs)
    found = cache.lookup(MODEL_A, ["beta", "missing", "alpha"])
    assert set(found) == {"alpha", "beta"}
    np.testing.assert_array_equal(found["alpha"], vecs[0])
    np.testing.assert_array_equal(found["beta"], vecs[1])
    assert found["alpha"].dtype == np.float32
    assert cache.count(MODEL_A) == 3


def test_store_replaces_and_handles_duplicates(cache):
    cache.store(MODEL_A, ["x"], vectors(1, seed=1))
    cache.store(MODEL_A, ["x"], vectors(1, seed=2))
    assert cache.count() == 1
    np.testing.assert_array_equal(cache.lookup(MODEL_A, ["x", "x"])["x"], vectors(1, seed=2)[0])


def test_models_do_not_see_each_other(cache):
    cache.store(MODEL_A, ["shared text"], vectors(1, seed=1))
    assert cache.lookup(MODEL_B, ["shared text"]) == {}
    cache.store(MODEL_B, ["shared text"], vectors(1, seed=2))
    assert cache.count(MODEL_A) == cache.count(MODEL_B) == 1 and cache.count() == 2
    cache.clear(MODEL_A)
    assert cache.count(MODEL_A) == 0 and cache.count(MODEL_B) == 1
    cache.clear()
    assert cache.count() == 0


def test_survives_close_and_reopen(tmp_path):
    path = tmp_path / "sub" / "dir" / "cache.sqlite"
    vecs = vectors(2, dim=384)
    with EmbeddingCache(path) as c:
        c.store(MODEL_A, ["one", "two"], vecs)
    with EmbeddingCache(path) as c:
        found = c.lookup(MODEL_A, ["one", "two"])
    np.testing.assert_array_equal(np.stack([found["one"], found["two"]]), vecs)


def test_wrong_dimension_is_damage_dropped_with_a_warning(cache):
    # A key names one model (one dimension): a vector of another length was damaged.
    cache.store(MODEL_A, ["a"], vectors(1, dim=8))
    assert set(cache.lookup(MODEL_A, ["a"], dimension=8)) == {"a"}
    with pytest.warns(RuntimeWarning, match=r"1 damaged vector \(checks failed: 1 dimension\)"):
        assert cache.lookup(MODEL_A, ["a"], dimension=16) == {}
    assert cache.count() == 0
    # A row whose bytes do not match its recorded dimension is ignored, not returned half-read.
    cache.store(MODEL_A, ["a"], vectors(1, dim=8))
    cache._conn.execute("UPDATE embeddings SET dim = 9")
    with pytest.warns(RuntimeWarning, match="damaged"):
        assert cache.lookup(MODEL_A, ["a"]) == {}


def test_entries_written_before_checksums_are_not_used_and_not_called_damaged(cache, recwarn):
    cache.store(MODEL_A, ["a"], vectors(1))
    cache._conn.execute("UPDATE embeddings SET checksum = NULL, norm = NULL")
    assert cache.lookup(MODEL_A, ["a"]) == {} and not recwarn.list
    cache.store(MODEL_A, ["a"], vectors(1))
    assert set(cache.lookup(MODEL_A, ["a"])) == {"a"}


def test_a_cache_made_before_checksums_gains_them(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE embeddings (model TEXT NOT NULL, digest BLOB NOT NULL, dim INTEGER "
                     "NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, digest))")
        conn.execute("INSERT INTO embeddings VALUES (?, ?, 8, ?)",
                     (MODEL_A, text_digest("a"), vectors(1).tobytes()))
    conn.close()
    with EmbeddingCache(path) as c:
        assert c.lookup(MODEL_A, ["a"]) == {}              # unchecked: encoded again
        c.store(MODEL_A, ["a"], vectors(1))
        np.testing.assert_array_equal(c.lookup(MODEL_A, ["a"])["a"], vectors(1)[0])


def test_shape_mismatch_is_rejected(cache):
    with pytest.raises(ValueError):
        cache.store(MODEL_A, ["a", "b"], vectors(3))
    assert cache.count() == 0


def test_random_bytes_file_is_moved_aside_and_rebuilt(tmp_path):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(np.random.default_rng(0).bytes(8192))
    with pytest.warns(RuntimeWarning, match="corrupt"):
        c = EmbeddingCache(path)
    with c:
        assert c.count() == 0
        c.store(MODEL_A, ["after"], vectors(1))
        assert set(c.lookup(MODEL_A, ["after"])) == {"after"}
    aside = list(tmp_path.glob("cache.sqlite.corrupt-*"))
    assert [p.name for p in aside if not p.name.endswith(("-wal", "-shm"))]


def test_truncated_file_is_moved_aside_and_rebuilt(tmp_path):
    path = tmp_path / "cache.sqlite"
    with EmbeddingCache(path) as c:
        c.store(MODEL_A, [f"text {i}" for i in range(2000)], vectors(2000, dim=64))
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.warns(RuntimeWarning, match="corrupt"):
        c = EmbeddingCache(path)
    with c:
        assert c.count() == 0
        c.store(MODEL_A, ["x"], vectors(1))
        assert c.count() == 1


def test_a_large_cache_opens_without_reading_it_all_and_damage_met_later_is_moved_aside(tmp_path, monkeypatch):
    """A cache above `FULL_CHECK_UP_TO` is not read whole at open (seconds for a large one, on
    every run); damage a lookup meets is handled as at open: moved aside, an empty cache started."""
    monkeypatch.setattr(cache_module, "FULL_CHECK_UP_TO", 0)
    path = tmp_path / "cache.sqlite"
    texts = [f"text {i}" for i in range(2000)]
    with EmbeddingCache(path) as c:
        c.store(MODEL_A, texts, vectors(2000, dim=64))
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096                     # one page of the table's tree, overwritten
    data[middle:middle + 4096] = np.random.default_rng(1).bytes(4096)
    path.write_bytes(bytes(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # opened without a word: not read whole
        c = EmbeddingCache(path)
    with c:
        with pytest.warns(RuntimeWarning, match="corrupt"):
            assert c.lookup(MODEL_A, texts) == {}       # encoded again
        assert not c.off and c.count() == 0
        c.store(MODEL_A, ["x"], vectors(1))
        assert set(c.lookup(MODEL_A, ["x"])) == {"x"}
    assert [p.name for p in tmp_path.glob("cache.sqlite.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]


def test_lookup_of_many_texts_is_chunked(cache):
    # Behave like SQLite builds with the classic limit of 999 bound variables per query.
    cache._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    texts = [f"sentence number {i}" for i in range(20_000)]
    vecs = vectors(20_000, dim=4)
    cache.store(MODEL_A, texts[::2], vecs[::2])
    found = cache.lookup(MODEL_A, texts)
    assert len(found) == 10_000
    np.testing.assert_array_equal(found["sentence number 19998"], vecs[19998])
    assert "sentence number 19999" not in found


def test_usable_from_another_thread(cache):
    errors = []

    def work():
        try:
            cache.store(MODEL_A, ["threaded"], vectors(1))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert not errors and set(cache.lookup(MODEL_A, ["threaded"])) == {"threaded"}


def test_default_location_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBSIM_CACHE_DIR", str(tmp_path / "cc"))
    assert default_cache_dir() == tmp_path / "cc"
    with EmbeddingCache() as c:
        assert c.path == tmp_path / "cc" / "embeddings.sqlite"
        c.store(MODEL_A, ["t"], vectors(1))
    assert (tmp_path / "cc" / "embeddings.sqlite").is_file()


def test_text_digest():
    assert text_digest("abc") == bytes.fromhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert len(text_digest("\ud800 lone surrogate")) == 32


def test_cache_key_names_the_precision_except_float32(fake_embedder):
    assert cache_key(fake_embedder) == fake_embedder.fingerprint.id     # caches written before stay valid
    fake_embedder.precision = "bfloat16"
    assert cache_key(fake_embedder) == fake_embedder.fingerprint.id + "+bfloat16"


def test_a_cache_that_fills_up_turns_itself_off_with_a_warning_and_encoding_goes_on(tmp_path, fake_embedder):
    from calibsim_gui.core.embedding.encoding import encode_texts

    texts = [f"sentence number {i}" for i in range(200)]
    expected = encode_texts(fake_embedder, texts).embeddings
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache._conn.execute("PRAGMA max_page_count = 3")          # SQLite: "database or disk is full"
    with pytest.warns(RuntimeWarning, match="stopped working.*disk is full"):
        got = encode_texts(fake_embedder, texts, cache=cache, batch_size=16).embeddings
    np.testing.assert_array_equal(got, expected)
    assert cache.off and len(cache.warnings) == 1 and "CALIBSIM_CACHE_DIR" in cache.warnings[0]
    assert cache.lookup("any", texts) == {}
    cache.close()


def test_a_vector_whose_length_is_not_its_recorded_one_is_damage_even_with_a_fitting_checksum(cache):
    from calibsim_gui.core.embedding.cache import entry_checksum

    vector = vectors(1)[0]
    cache.store(MODEL_A, ["a"], vectors(1))
    norm = float(np.linalg.norm(vector.astype(np.float64)))
    blob = (vector * 3).tobytes()                      # three times as long as recorded, checksum forged
    cache._conn.execute("UPDATE embeddings SET vector = ?, norm = ?, checksum = ?",
                        (blob, norm, entry_checksum(MODEL_A, text_digest("a"), 8, blob, norm)))
    with pytest.warns(RuntimeWarning, match=r"1 damaged vector \(checks failed: 1 length\)"):
        assert cache.lookup(MODEL_A, ["a"]) == {}


def test_a_vector_that_is_not_finite_is_not_kept(cache, recwarn):
    bad = vectors(2)
    bad[1, 3] = np.nan
    cache.store(MODEL_A, ["good", "nan"], bad)
    assert set(cache.lookup(MODEL_A, ["good", "nan"])) == {"good"} and cache.count() == 1
    assert not recwarn.list
