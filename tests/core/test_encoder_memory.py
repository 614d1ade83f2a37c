"""The memory budget counts the encoder's working memory (#43): 100 pairs of ~300-word texts
peaked at 2.06 GB under --memory-budget 300M (0.61 GB with --batch-size 8), the encoder's
activations and attention scores uncounted. Refused before anything is encoded, naming the batch
size that fits."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from calibsim_gui import cli
from calibsim_gui.cli import common
from calibsim_gui.core.embedding.encoder_memory import encoder_shape
from calibsim_gui.core.embedding.encoding import iter_encode
from calibsim_gui.core.errors import InputError
from calibsim_gui.core.io.memory import encoder_bytes
from tests.fakes import FakeEmbedder, random_sentences

MINILM = {"num_hidden_layers": 6, "hidden_size": 384, "intermediate_size": 1536, "num_attention_heads": 12,
          "vocab_size": 30522, "max_position_embeddings": 512}


def minilm_shaped(tmp_path) -> FakeEmbedder:
    """The fake model with the built-in model's config.json (6 layers of width 384) and max length."""
    folder = tmp_path / "minilm-shaped"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(MINILM))
    fake = FakeEmbedder(max_seq_length=256)
    fake.info = fake.info.__class__(**{**fake.info.__dict__, "path": Path(folder)})
    return fake


def long_texts(n: int, words: int = 300) -> list[str]:
    sentences = random_sentences(n * words // 8, seed=3)
    return [" ".join(sentences[i * words // 8:(i + 1) * words // 8]) for i in range(n)]


def test_the_estimate_reads_the_models_shape_and_counts_about_what_was_measured(tmp_path):
    shape = encoder_shape(minilm_shaped(tmp_path))
    assert shape["layers"] == 6 and shape["width"] == 384 and 85e6 < shape["weights"] < 95e6
    per_text = (encoder_bytes(64, 256, **shape) - shape["weights"]) / 64
    assert 20e6 < per_text < 40e6             # measured: ~26 MB a 256-token text (ONNX Runtime)
    assert encoder_shape(FakeEmbedder()) is None            # no config: nothing to count


def test_batches_over_the_budget_are_refused_before_any_text_is_encoded(tmp_path):
    fake = minilm_shaped(tmp_path)
    with pytest.raises(InputError) as error:
        next(iter_encode(fake, long_texts(100), batch_size=64, memory_budget=1_000_000_000, run_bytes=200_000_000))
    message = str(error.value)
    assert "encoding in batches of up to 64 texts of up to 256 tokens with fake-bow (6 layers of width 384" in message
    assert "memory budget of 1.0 GB" in message and "--batch-size 16 needs about" in message
    assert fake.calls == 0
    step = next(iter_encode(fake, long_texts(100), batch_size=16, memory_budget=1_000_000_000,
                            run_bytes=200_000_000))
    assert step.total == 100


def test_score_under_a_small_budget_is_refused_naming_what_to_change(tmp_path, monkeypatch, capsys):
    fake = minilm_shaped(tmp_path)
    monkeypatch.setattr(common, "load_model", lambda args: fake)
    texts = long_texts(200)
    pairs = tmp_path / "long.csv"
    pd.DataFrame({"sentence1": texts[:100], "sentence2": texts[100:]}).to_csv(pairs, index=False)
    assert cli.main(["score", str(pairs), "--memory-budget", "300M", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"calibsim: error: {pairs}: encoding in batches of up to 64 texts of up to 256 tokens")
    assert "more than the memory budget of 300.0 MB" in err and "Fix: give shorter texts" in err
    assert not set(texts) & {text for batch in fake.batches for text in batch}     # (the anchors were)
    assert cli.main(["score", str(pairs), "--memory-budget", "1G", "--batch-size", "8", "--quiet",
                     "--out", str(tmp_path / "scored.csv")]) == 0
