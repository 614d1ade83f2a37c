"""A float32 batch runs on the ONNX engine in one part per core, each on one thread and without
the padding none of its texts needs, rather than as one run on all cores (#29): the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.embedding.onnx_engine import OnnxEmbedder
from tests.tiny_models import write_tiny_model

SHORT, LONG = "ok", "The committee postponed its decision until the auditors had reviewed every account."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_model(str(write_tiny_model(tmp_path_factory.mktemp("tiny") / "model")), device="cpu", engine="onnx")


def _embedder(tiny, threads: int) -> OnnxEmbedder:
    return OnnxEmbedder(tiny.graph, tiny.info, tiny.fingerprint, stack=tiny.stack, threads=threads)


def test_a_float32_batch_runs_in_one_part_per_core_and_gives_the_same_vectors(tiny, monkeypatch):
    texts = [SHORT] * 10 + [LONG] * 10                      # sorted by length, as the engine's batches are
    whole = _embedder(tiny, threads=1).encode_batch(texts)  # one core: the batch in one run
    two = _embedder(tiny, threads=2)
    shapes, run = [], two.token_embeddings
    monkeypatch.setattr(two, "token_embeddings", lambda arrays: shapes.append(arrays["input_ids"].shape) or run(arrays))
    np.testing.assert_allclose(two.encode_batch(texts), whole, atol=1e-6)
    assert sorted(shapes) == [(10, 3), (10, int(two.token_counts([LONG])[0]))]
    for prompt in ("query: ", ""):                          # parts of fewer than 8 texts are not split off
        shapes.clear()
        np.testing.assert_allclose(two.encode_batch(texts[8:14], prompt=prompt),
                                   _embedder(tiny, threads=1).encode_batch(texts[8:14], prompt=prompt), atol=1e-6)
        assert len(shapes) == 1
