"""The int8 graph (#29): `quantize_int8` gives the same bytes for the same float32 graph, with
weights in 7 bits (no u8 x s8 saturation on CPUs without VNNI) and numbers near float32's. Its
cache key (per recipe) is tested in test_onnx_engine.py."""

from __future__ import annotations

import numpy as np
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from calibsim_gui.core.embedding.onnx_export import quantize_int8

RNG = np.random.default_rng(29)
EMBEDDING = RNG.normal(size=(50, 64)).astype(np.float32)
WEIGHT = RNG.normal(size=(64, 64)).astype(np.float32)


def _float_graph(path):
    """input_ids -> rows of `EMBEDDING` -> MatMul `WEIGHT`: a transformer's quantisable parts."""
    nodes = [helper.make_node("Gather", ["emb", "input_ids"], ["rows"]),
             helper.make_node("MatMul", ["rows", "w"], ["token_embeddings"])]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "t"])],
        [helper.make_tensor_value_info("token_embeddings", TensorProto.FLOAT, ["b", "t", 64])],
        [numpy_helper.from_array(EMBEDDING, "emb"), numpy_helper.from_array(WEIGHT, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
    return path


def _run(path, ids):
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"input_ids": ids})[0]


def test_int8_graph_is_the_same_bytes_each_time_with_7_bit_weights_near_float32(tmp_path):
    source = _float_graph(tmp_path / "model.onnx")
    first, second = quantize_int8(source, tmp_path / "a.onnx"), quantize_int8(source, tmp_path / "b.onnx")
    assert first.read_bytes() == second.read_bytes()
    import onnx

    quantised = [numpy_helper.to_array(t) for t in onnx.load(str(first)).graph.initializer
                 if t.data_type == TensorProto.INT8 and t.dims == [64, 64]]
    assert len(quantised) == 1 and np.abs(quantised[0].astype(int)).max() == 64     # 7 bits, not 127
    ids = RNG.integers(0, 50, size=(3, 7))
    exact, int8 = _run(source, ids), _run(first, ids)
    assert np.abs(int8 - exact).max() <= 0.05 * np.abs(exact).max()
    np.testing.assert_array_equal(_run(first, ids), int8)

