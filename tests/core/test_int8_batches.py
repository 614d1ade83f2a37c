"""int8 vectors do not depend on the batch (#29): dynamic quantisation scales activations per
graph run, so the ONNX engine runs each int8 text alone; a text's vector is the same whatever is
encoded with it, and vectors cached by the batched recipe are never reused."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer

from calibsim_gui.core.embedding.cache import EmbeddingCache, cache_key
from calibsim_gui.core.embedding.encoding import encode_texts
from calibsim_gui.core.embedding.models import load_model
from calibsim_gui.core.embedding.onnx_engine import INT8_RECIPE, OnnxEmbedder
from calibsim_gui.core.embedding.onnx_export import quantize_int8
from tests.conftest import DATA
from tests.tiny_models import write_tiny_model

TEXT = "A man is playing a guitar."
OTHERS = ["ok", "数据中心的冷却系统需要定期维护。",
          "The committee postponed its decision until the auditors had reviewed every account. " * 3,
          "Zwei Hunde rennen über eine Wiese.", "!!!", "A woman slices an onion on a wooden board."]


@pytest.fixture(scope="module")
def tiny_int8(tmp_path_factory):
    """The tiny model on the ONNX engine in int8 (exported and quantised once)."""
    return load_model(str(write_tiny_model(tmp_path_factory.mktemp("tiny") / "model")), device="cpu",
                      engine="onnx", precision="int8")


def test_an_int8_vector_is_the_same_alone_and_among_any_other_texts(tiny_int8):
    assert tiny_int8.precision == "int8" and tiny_int8.graph.name.startswith(f"model-int8-{INT8_RECIPE}-")
    alone = tiny_int8.encode_batch([TEXT])[0]
    for batch in ([TEXT, *OTHERS], [*OTHERS[::-1], TEXT], [OTHERS[2], TEXT, OTHERS[0]] * 5):
        vectors = tiny_int8.encode_batch(batch)
        np.testing.assert_allclose(vectors[batch.index(TEXT)], alone, atol=1e-6)
        np.testing.assert_allclose(vectors[batch.index(OTHERS[2])], tiny_int8.encode_batch([OTHERS[2]])[0],
                                   atol=1e-6)
    np.testing.assert_allclose(tiny_int8.encode_batch([*OTHERS, TEXT], prompt="query: ")[-1],
                               tiny_int8.encode_batch([TEXT], prompt="query: ")[0], atol=1e-6)


def _loud_graph(path, embedder: OnnxEmbedder, loud: str):
    """input_ids -> embedding rows + bias -> MatMul, the rows of `loud`'s tokens 100 times the others':
    a batch holding `loud` gets a 100 times coarser activation scale."""
    rng = np.random.default_rng(29)
    table = rng.normal(size=(30522, 16)).astype(np.float32)
    table[Tokenizer.from_file(str(embedder.stack.tokenizer_dir / "tokenizer.json")).encode(loud).ids] *= 100
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["rows"]),
             helper.make_node("Add", ["rows", "bias"], ["hidden"]),        # an activation, not a weight
             helper.make_node("MatMul", ["hidden", "w"], ["token_embeddings"])]
    graph = helper.make_graph(
        nodes, "loud", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"])],
        [helper.make_tensor_value_info("token_embeddings", TensorProto.FLOAT, ["b", "t", 16])],
        [numpy_helper.from_array(table, "emb"), numpy_helper.from_array(rng.normal(size=16).astype(np.float32), "bias"),
         numpy_helper.from_array(rng.normal(size=(16, 16)).astype(np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def test_a_loud_neighbour_moves_a_batched_int8_vector_but_not_the_engines(tiny_int8, tmp_path):
    loud = OTHERS[1]
    int8 = quantize_int8(_loud_graph(tmp_path / "loud.onnx", tiny_int8, loud), tmp_path / "loud-int8.onnx")
    mine = OnnxEmbedder(int8, tiny_int8.info, tiny_int8.fingerprint, stack=tiny_int8.stack, precision="int8")
    np.testing.assert_allclose(mine.encode_batch([TEXT, loud])[0], mine.encode_batch([TEXT])[0], atol=1e-6)
    # the same int8 graph run on the whole batch at once (as the engine runs float32): TEXT moves
    batched = OnnxEmbedder(int8, tiny_int8.info, tiny_int8.fingerprint, stack=tiny_int8.stack)
    assert np.abs(batched.encode_batch([TEXT, loud])[0] - batched.encode_batch([TEXT])[0]).max() > 0.01


def test_vectors_of_the_batched_recipe_are_never_taken_from_the_cache(tiny_int8, tmp_path):
    assert tiny_int8.quantisation == INT8_RECIPE != "w7pc"
    stale = SimpleNamespace(fingerprint=tiny_int8.fingerprint, engine="onnx", precision="int8",
                            quantisation="w7pc")              # the same model, the batched recipe
    assert cache_key(stale, "") != cache_key(tiny_int8, "")
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        cache.store(cache_key(stale, ""), [TEXT], np.ones((1, tiny_int8.dimension), dtype=np.float32))
        result = encode_texts(tiny_int8, [TEXT], cache=cache, prompt="")
        assert result.n_cached == 0
        np.testing.assert_allclose(result.embeddings[0], tiny_int8.encode_batch([TEXT])[0], atol=1e-6)
        assert cache.count(cache_key(tiny_int8, "")) == 1


@pytest.mark.slow
def test_built_in_int8_vectors_and_cosines_do_not_depend_on_the_batch():
    path = DATA / "stsb" / "test.csv"
    if not path.exists():
        pytest.fail(f"{path} is missing: the tests need ../shared/data beside the checkout")
    frame = pd.read_csv(path).head(64)
    int8 = load_model(None, engine="onnx", precision="int8")
    texts = list(frame["sentence1"]) + list(frame["sentence2"])
    together = int8.encode_batch(texts)
    alone = np.concatenate([int8.encode_batch([t]) for t in texts[:8] + texts[64:72]])
    np.testing.assert_allclose(together[list(range(8)) + list(range(64, 72))], alone, atol=1e-5)
    cosines = np.sum(together[:64] * together[64:], axis=1)
    np.testing.assert_allclose(np.sum(alone[:8] * alone[8:], axis=1), cosines[:8], atol=1e-5)
