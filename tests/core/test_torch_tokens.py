"""The torch engine counts and maps tokens with the Rust tokenizer's batch encoding (which releases
the interpreter lock), giving what the HF tokenizer's call gives; a slow tokenizer keeps that call."""

from __future__ import annotations

import numpy as np
import pytest

from calibsim_gui.core.embedding.model_folders import resolve_model
from calibsim_gui.core.embedding.torch_engine import SentenceTransformerEmbedder, load_torch_model
from calibsim_gui.core.errors import ModelError
from tests.tiny_models import write_tiny_model

TEXTS = ["A cat sits on the mat.", "東京は日本の首都です。", "Привет, мир!", "مرحبا بالعالم", "नमस्ते दुनिया",
         "สวัสดีชาวโลก", "émoji 😀 and\ttabs\nnewlines", "[CLS] a literal [SEP] inside", "", "   ",
         "word " * 700, "Ünïcödé " * 120 + "終わり"]


@pytest.fixture(scope="module")
def tiny_torch(tmp_path_factory):
    folder = write_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    return load_torch_model(resolve_model(str(folder)), device="cpu")       # sentence-transformers


def _hf_counts(tokenizer, texts):
    encoded = tokenizer(texts, truncation=False, padding=False, add_special_tokens=True, verbose=False)
    return [len(ids) for ids in encoded["input_ids"]]


def _hf_spans(tokenizer, texts):
    encoded = tokenizer(texts, truncation=False, padding=False, add_special_tokens=False,
                        return_offsets_mapping=True, verbose=False)
    return [np.asarray(s, dtype=np.int64).reshape(-1, 2) for s in encoded["offset_mapping"]]


@pytest.fixture
def hf_calls(monkeypatch, tiny_torch):
    """The texts each call of the model's HF tokenizer was given."""
    cls = type(tiny_torch._model.tokenizer)
    original, calls = cls.__call__, []

    def recording(self, text, *args, **kwargs):
        calls.append(text)
        return original(self, text, *args, **kwargs)

    monkeypatch.setattr(cls, "__call__", recording)
    return calls


def test_counts_and_spans_equal_the_hf_tokenizers_without_calling_it(tiny_torch, hf_calls):
    tokenizer = tiny_torch._model.tokenizer
    counts, spans = tiny_torch.token_counts(TEXTS), tiny_torch.token_spans(TEXTS)
    assert hf_calls == []                    # the per-text Python of the HF call never ran
    assert counts.dtype == np.int64 and max(counts) > 512
    assert list(counts) == _hf_counts(tokenizer, TEXTS)
    expected = _hf_spans(tokenizer, TEXTS)
    assert len(spans) == len(expected) and all(s.dtype == np.int64 for s in spans)
    for got, want in zip(spans, expected):
        np.testing.assert_array_equal(got, want)
    assert tiny_torch.token_counts([]).shape == (0,) and tiny_torch.token_spans([]) == []


def test_counting_does_not_change_the_models_truncation(tiny_torch):
    """The clone counts beyond max_seq_length; the model still truncates when it encodes."""
    long = "word " * 700
    assert tiny_torch.token_counts([long])[0] == 702
    np.testing.assert_array_equal(tiny_torch.encode_batch([long]), tiny_torch.encode_batch(["word " * 40]))


def test_a_slow_tokenizer_is_counted_by_its_own_call_and_refuses_spans(tiny_torch, hf_calls, monkeypatch):
    tokenizer = tiny_torch._model.tokenizer
    expected = _hf_counts(tokenizer, TEXTS)
    hf_calls.clear()
    monkeypatch.setattr(type(tokenizer), "is_fast", property(lambda self: False))
    slow = SentenceTransformerEmbedder(tiny_torch._model, tiny_torch.info, tiny_torch.fingerprint, "cpu")
    assert list(slow.token_counts(TEXTS)) == expected
    assert hf_calls == [TEXTS]
    with pytest.raises(ModelError, match="cannot map tokens back.*--long-texts truncate"):
        slow.token_spans(TEXTS)
