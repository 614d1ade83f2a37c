"""A small deterministic embedder for fast core tests (bag of hashed words)."""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import numpy as np

from calibsim_gui.core.embedding.model_folders import ModelFingerprint, ModelInfo
from calibsim_gui.core.embedding.prompts import PromptedEmbedder, PromptSettings

_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=200_000)
def _word_vector(word: str, dimension: int) -> np.ndarray:
    """A word's fixed random vector (seeded by its digest), shared by every fake of one dimension."""
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    vector.flags.writeable = False
    return vector


class FakeEmbedder(PromptedEmbedder):
    """Texts sharing words get similar vectors; no torch, no files, fully deterministic.

    Every word maps to a fixed random vector (seeded by its digest); a text is the normalised sum
    of its words' vectors plus a shared offset, so unrelated texts still score a little above 0,
    as real models do. ``max_seq_length`` counts words + 2 special tokens. A prompt is put before
    each text, as sentence-transformers does; `prompts` sets the embedder's prompts (none by default).
    ``calls`` counts `encode_batch` calls and ``batches`` records the texts of each.
    """

    def __init__(self, dimension: int = 48, max_seq_length: int = 40, name: str = "fake-bow",
                 prompts: PromptSettings | None = None):
        self.prompts = prompts or PromptSettings()
        self.dimension = dimension
        self.max_seq_length = max_seq_length
        self.device = "cpu"
        self.fingerprint = ModelFingerprint(name, hashlib.sha256(name.encode()).hexdigest())
        self.info = ModelInfo(name=name, path=Path(name), source="test", dimension=dimension,
                              max_seq_length=max_seq_length, size_bytes=0, safe_weights=True,
                              needs_remote_code=False)
        self.calls = 0
        self.batches: list[list[str]] = []
        self._words: dict[str, np.ndarray] = {}
        self._offset = self._word("<common>") * 0.6

    def _word(self, word: str) -> np.ndarray:
        if word not in self._words:
            self._words[word] = _word_vector(word, self.dimension)
        return self._words[word]

    def encode_batch(self, texts, prompt: str = ""):
        self.calls += 1
        self.batches.append(list(texts))
        out = np.zeros((len(texts), self.dimension))
        for row, text in enumerate(texts):
            text = prompt + text
            words = _WORD.findall(text.lower())[: self.max_seq_length - 2] or ["<empty>"]
            vec = sum(self._word(w) for w in words) / np.sqrt(len(words)) + self._offset
            out[row] = vec / np.linalg.norm(vec)
        return out.astype(np.float32)

    def token_counts(self, texts):
        return np.array([len(_WORD.findall(t)) + 2 for t in texts], dtype=np.int64)

    def token_spans(self, texts):
        """Character span of every word (the fake's tokens), special tokens left out."""
        return [np.array([m.span() for m in _WORD.finditer(t)], dtype=np.int64).reshape(-1, 2)
                for t in texts]


def random_sentences(n: int, *, seed: int = 0, vocabulary: int = 3000) -> list[str]:
    """`n` distinct random sentences of 5-15 made-up words: a background corpus for tests."""
    rng = np.random.default_rng(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        words = rng.integers(0, vocabulary, size=rng.integers(5, 16))
        out[" ".join(f"w{i}" for i in words)] = None
    return list(out)
