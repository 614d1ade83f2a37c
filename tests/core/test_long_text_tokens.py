"""A long text is tokenised only as far as the model reads it (#43): every text used to be
tokenised whole just to count its tokens (a 1 M-word text: 56 s and 0.99 GB; an 8 M-word text
was killed at 300 s holding 4.9 GB), and again when encoded, where the model keeps its first
max-length tokens. Its language and readability were read from the whole text too."""

from __future__ import annotations

import numpy as np
import pytest

from calibsim_gui.core.embedding import languages
from calibsim_gui.core.embedding.encoding import encode_texts, over_limit, seen_parts
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.embedding.readability import unreadable_texts
from tests.fakes import FakeEmbedder, random_sentences
from tests.tiny_models import write_tiny_model


class Watched(FakeEmbedder):
    """The fake model, recording the longest text it tokenised or encoded."""

    longest = 0

    def token_counts(self, texts):
        self.longest = max([self.longest, *map(len, texts)])
        return super().token_counts(texts)

    def encode_batch(self, texts, prompt: str = ""):
        self.longest = max([self.longest, *map(len, texts)])
        return super().encode_batch(texts, prompt)


def _long_text(words: int) -> str:
    sentences = random_sentences(2000, seed=9)
    text = " ".join(sentences)
    return " ".join([text] * (words // len(text.split()) + 1))


def test_a_two_million_word_text_is_read_only_as_far_as_the_model_reads():
    fake = Watched()
    text = _long_text(2_000_000)
    short = "A cat sleeps on the sofa."
    result = encode_texts(fake, [text, short])
    assert fake.longest < 5_000 < len(text)              # 40 tokens x 16 characters, then at a space
    assert result.n_truncated == 1 and list(result.truncated) == [True, False]
    np.testing.assert_array_equal(result.embeddings, FakeEmbedder().encode_batch([text, short]))
    assert list(over_limit(fake, [text, short])) == [True, False]


def test_text_without_a_break_is_read_whole_rather_than_cut_inside_a_word():
    counts, parts = seen_parts(FakeEmbedder(), ["x" * 10_000, "a " * 5_000])
    assert len(parts[0]) == 10_000 and len(parts[1]) < 700 and counts[1] > 40


def test_a_long_text_gives_the_same_vector_with_a_real_tokenizer(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBSIM_ONNX_DIR", str(tmp_path / "graphs"))
    embedder = load_model(str(write_tiny_model(tmp_path / "tiny")), engine="onnx")
    text = _long_text(10_000)
    counts, parts = seen_parts(embedder, [text])
    assert len(parts[0]) < len(text) // 10 and counts[0] > embedder.max_seq_length
    result = encode_texts(embedder, [text])
    np.testing.assert_array_equal(result.embeddings, embedder.encode_batch([text]))
    assert result.n_truncated == 1


@pytest.mark.parametrize("prompt", ["query: "])
def test_a_prompt_counts_in_the_cut(prompt):
    fake = FakeEmbedder()
    text = _long_text(5_000)
    counts, parts = seen_parts(fake, [text], prompt)
    np.testing.assert_array_equal(fake.encode_batch(parts, prompt), fake.encode_batch([text], prompt))


class Identifier:
    """py3langid's identifier, recording the longest text it read."""

    def __init__(self, identifier):
        self.identifier, self.longest = identifier, 0

    def classify(self, text):
        self.longest = max(self.longest, len(text))
        return self.identifier.classify(text)


def test_a_huge_texts_language_and_readability_are_read_from_its_beginning(monkeypatch):
    """Both read the whole text before: 9.8 s of tokenising and 5.5 s of language guessing of a
    2 M-word text, and most of the run's 2 GB."""
    identifier = Identifier(languages._identifier())
    monkeypatch.setattr(languages, "_identifier", lambda: identifier)

    class Reading(Watched):
        def known_token_counts(self, texts):
            self.longest = max([self.longest, *map(len, texts)])
            return np.array([len(t.split()) for t in texts], dtype=np.int64)

    fake, text = Reading(), _long_text(100_000)
    assert list(unreadable_texts(fake, [text, "A cat sleeps."])) == [False, False]
    assert fake.longest < 5_000 < len(text)
    english = "The cat sat on the mat while the dog ran home. " * 20_000
    assert languages.detect_languages([english]) == ["en"]
    assert identifier.longest <= languages.TEXT_CHARACTERS < len(english)
