"""A damaged embedding cache is never trusted: `calibsim score` after cached vectors were
damaged writes the very bytes a `--no-cache` run writes, and warns that it re-encoded them."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from calibsim_gui.core.embedding.cache import cache_key, default_cache_dir, entry_checksum, text_digest
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture(autouse=True)
def fake_model(monkeypatch):
    monkeypatch.setattr(common, "load_model", lambda args: FakeEmbedder())


def flip_bytes(digest, dim, blob, norm, key):
    data = bytearray(blob)
    data[5] ^= 0x5A
    data[-3] ^= 0x21
    return dim, bytes(data), norm, None                      # the checksum is kept: it no longer fits


def nan_with_a_fitting_checksum(digest, dim, blob, norm, key):
    vector = np.frombuffer(blob, dtype=np.float32).copy()
    vector[2] = np.nan
    return dim, vector.tobytes(), norm, entry_checksum(key, digest, dim, vector.tobytes(), norm)


def truncated(digest, dim, blob, norm, key):
    return dim, blob[:-6], norm, None


@pytest.mark.parametrize("damage, kind", [(flip_bytes, "checksum"), (nan_with_a_fitting_checksum, "not finite"),
                                          (truncated, "dimension")])
def test_damaged_cached_vectors_are_re_encoded_and_the_numbers_equal_a_no_cache_run(tmp_path, capsys,
                                                                                    damage, kind):
    texts = random_sentences(40, seed=8)
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"sentence1": texts[:20], "sentence2": texts[20:]}).to_csv(pairs, index=False)
    clean, cached, after = (tmp_path / f"{name}.csv" for name in ("clean", "cached", "after"))
    assert cli.main(["score", str(pairs), "--out", str(clean), "--no-cache", "--quiet"]) == 0
    assert cli.main(["score", str(pairs), "--out", str(cached), "--quiet"]) == 0
    assert cached.read_bytes() == clean.read_bytes()

    key = cache_key(FakeEmbedder())
    with sqlite3.connect(default_cache_dir() / "embeddings.sqlite") as conn:
        for text in texts[::3]:                                  # 14 of the 40 texts
            digest = text_digest(text)
            dim, blob, norm = conn.execute("SELECT dim, vector, norm FROM embeddings WHERE model = ? AND "
                                           "digest = ?", (key, digest)).fetchone()
            dim, blob, norm, checksum = damage(digest, dim, blob, norm, key)
            conn.execute("UPDATE embeddings SET dim = ?, vector = ?, norm = ?"
                         + (", checksum = ?" if checksum else "") + " WHERE model = ? AND digest = ?",
                         (dim, blob, norm, *([checksum] if checksum else []), key, digest))
    conn.close()
    capsys.readouterr()

    assert cli.main(["score", str(pairs), "--out", str(after), "--quiet"]) == 0
    assert after.read_bytes() == clean.read_bytes()
    err = capsys.readouterr().err
    assert f"calibsim: warning: The embedding cache {default_cache_dir() / 'embeddings.sqlite'} held 14 " \
           f"damaged vectors (checks failed: 14 {kind})" in err and "encoded again" in err, err
    assert "Traceback" not in err
    assert cli.main(["score", str(pairs), "--out", str(after), "--quiet", "--force"]) == 0
    assert "damaged" not in capsys.readouterr().err              # re-encoded entries are sound again
