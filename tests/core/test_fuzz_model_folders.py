"""Fuzzing model folders (hypothesis, #27): the tiny model's configs (model, sentence-transformers,
modules, pooling, tokenizer) with random values swapped in or keys dropped. Loading and encoding
raise only calibsim's own errors, or give finite vectors of the model's dimension."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.errors import CalibsimError
from tests.core.test_fuzz_files import FUZZ, _paths, json_values
from tests.tiny_models import write_tiny_model

CONFIGS = ("config.json", "sentence_bert_config.json", "modules.json", "1_Pooling/config.json",
           "tokenizer_config.json", "special_tokens_map.json")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@st.composite
def edits(draw):
    """(config file, path inside it, new value or None to drop the key), one to two of them."""
    return [(draw(st.sampled_from(CONFIGS)), draw(st.integers(0, 10**6)), draw(st.none() | json_values))
            for _ in range(draw(st.integers(1, 2)))]


def _edit(folder, name, pick, value) -> None:
    path = folder / name
    d = json.loads(path.read_text())
    paths = _paths(d)
    if not paths:
        return
    *parents, last = paths[pick % len(paths)]
    node = d
    for key in parents:
        node = node[key]
    if value is None and isinstance(node, dict):
        del node[last]
    else:
        node[last] = value
    path.write_text(json.dumps(d))


@FUZZ
@given(changes=edits())
@example(changes=[("special_tokens_map.json", 0, {})])      # a tokenizer without its [UNK] token
def test_mutated_model_folders_are_refused_or_encode_finite_vectors(tiny, tmp_path_factory, changes):
    folder = tmp_path_factory.mktemp("fuzzed") / "model"
    shutil.copytree(tiny, folder)
    for name, pick, value in changes:
        _edit(folder, name, pick, value)
    try:
        embedder = load_model(str(folder), engine="torch", device="cpu")
        vectors = encode_texts(embedder, ["A cat sits on the mat.", "Ein Hund läuft im Park, " * 20]).embeddings
    except CalibsimError:
        return
    assert vectors.shape[0] == 2 and vectors.shape[1] == embedder.dimension
    assert np.isfinite(vectors).all()
