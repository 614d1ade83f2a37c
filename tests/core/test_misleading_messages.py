"""Messages name the cause they had (issue 30 item 6): a cache that fails for another reason than
a full disk, texts too long only with the prompt, chunks still cut while chunking."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from calibsim_gui.core.analysis.pairs import score_pairs
from calibsim_gui.core.calibration.profile_builder import build_profile
from calibsim_gui.core.calibration.profile_settings import ProfileSettings
from calibsim_gui.core.embedding.cache import EmbeddingCache
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.prompts import PromptSettings
from calibsim_gui.core.io.inputs import load_pairs
from tests.fakes import FakeEmbedder, random_sentences


def test_a_cache_that_becomes_read_only_is_not_reported_as_a_full_disk(tmp_path, fake_embedder):
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache._conn.execute("PRAGMA query_only = 1")            # SQLite: "attempt to write a readonly database"
    with pytest.warns(RuntimeWarning, match="stopped working.*readonly database"):
        encode_texts(fake_embedder, ["one text", "another text"], cache=cache)
    assert "make the cache file and its folder writable" in cache.warnings[0]
    assert "disk space" not in cache.warnings[0]
    cache.close()


def _pairs(tmp_path, rows):
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows, columns=["sentence1", "sentence2"]).to_csv(path, index=False)
    return load_pairs(path)


def test_a_text_too_long_only_with_the_prompt_is_said_to_be_so(tmp_path):
    embedder = FakeEmbedder(prompts=PromptSettings(symmetric="search query: "))
    profile = build_profile(embedder, random_sentences(300, seed=5), ProfileSettings(n_pairs=500))
    text = " ".join(f"w{i}" for i in range(37))             # 37 words + 2 specials: fits the 40 alone
    scored = score_pairs(_pairs(tmp_path, [(text, "A cat sat.")]), embedder, profile, metrics=["cosine"])
    assert any(re.search(r"1 texts are longer than the model's max length \(40 tokens, the prompt "
                         r"'search query: ' before each text included\); only their beginning", n)
               for n in scored.notes), scored.notes


class HyphenEmbedder(FakeEmbedder):
    """Maps "a-b" to one token in its offsets but counts two: a chunk reads longer than its window."""

    def token_spans(self, texts):
        import numpy as np

        return [np.array([m.span() for m in re.finditer(r"[\w-]+", t)], dtype=np.int64).reshape(-1, 2)
                for t in texts]


def test_while_chunking_a_chunk_still_cut_is_not_answered_with_use_chunking(tmp_path):
    embedder = HyphenEmbedder()
    profile = build_profile(embedder, random_sentences(300, seed=5), ProfileSettings(n_pairs=500))
    text = " ".join(f"a{i}-b{i}" for i in range(60))
    scored = score_pairs(_pairs(tmp_path, [(text, "A cat sat.")]), embedder, profile, metrics=["cosine"],
                         long_texts="chunk")
    notes = " | ".join(scored.notes)
    assert "each was split into chunks" in notes
    assert "have a chunk that the model read as longer than the model's max length" in notes
    assert "--long-texts chunk" not in notes and "only their beginning" not in notes
