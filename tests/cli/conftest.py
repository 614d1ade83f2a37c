"""Fixtures of the CLI tests that check what is refused before any model loads."""

import pandas as pd
import pytest

from calibsim_gui.cli import common
from tests.fakes import FakeEmbedder, random_sentences


@pytest.fixture
def loads(monkeypatch):
    """The fake model; each load is counted (checks that must come before any load assert none)."""
    loaded = []
    monkeypatch.setattr(common, "load_model", lambda args: loaded.append(args) or FakeEmbedder())
    return loaded


@pytest.fixture
def files(tmp_path):
    """`pairs.csv` (20 scored pairs) and `news.txt` (100 texts, one per line) in `tmp_path`."""
    texts = random_sentences(140, seed=5)
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"score": [0.0, 5.0] * 10, "sentence1": texts[:20], "sentence2": texts[20:40]}).to_csv(
        pairs, index=False)
    background = tmp_path / "news.txt"
    background.write_text("\n".join(texts[40:]) + "\n")
    return pairs, background
