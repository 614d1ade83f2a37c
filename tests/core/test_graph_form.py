"""The form an exported ONNX graph is stored in: each weight once, float32 results unchanged."""

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from calibsim_gui.core.embedding.onnx_export import deduplicate_initializers


def _graph_with_a_repeated_weight(path, weight):
    """y = x @ W1 + x @ W2 + If(cond: x @ W3 else x), where W1, W2 and W3 hold the same numbers."""
    then = helper.make_graph([helper.make_node("MatMul", ["x", "w3"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    otherwise = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                                  [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"]), helper.make_node("MatMul", ["x", "w2"], ["b"]),
             helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("If", ["cond"], ["c"], then_branch=then, else_branch=otherwise),
             helper.make_node("Add", ["s", "c"], ["y"])]
    inits = [numpy_helper.from_array(weight, name) for name in ("w1", "w2", "w3")]
    inits.append(numpy_helper.from_array(np.array(True), "cond"))
    model = helper.make_model(
        helper.make_graph(nodes, "repeated", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits),
        opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))


def _run(path, x):
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_a_repeated_weight_is_stored_once_and_the_results_are_unchanged(tmp_path):
    weight = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    graph = tmp_path / "model.onnx"
    _graph_with_a_repeated_weight(graph, weight)
    before, size = _run(graph, x), graph.stat().st_size
    assert deduplicate_initializers(graph) == 2 * weight.nbytes
    names = [t.name for t in onnx.load(str(graph)).graph.initializer]
    assert names == ["w1", "cond"]
    assert graph.stat().st_size <= size - 2 * weight.nbytes
    np.testing.assert_array_equal(_run(graph, x), before)
    assert deduplicate_initializers(graph) == 0        # nothing left to merge: the file is not rewritten


@pytest.mark.slow
def test_the_built_in_graph_holds_its_weights_once_in_float32():
    """The graph the bundle ships is as small as the model's float32 weights (no copies)."""
    from calibsim_gui.core.embedding.model_folders import resolve_model
    from calibsim_gui.core.embedding.models import load_model
    from calibsim_gui.core.embedding.torch_engine import load_torch_model

    graph = load_model(None, engine="onnx").graph
    weights = [numpy_helper.to_array(t) for t in onnx.load(str(graph)).graph.initializer]
    stored = sum(w.nbytes for w in weights if w.dtype == np.float32)
    torch_model = load_torch_model(resolve_model(None), device="cpu")._model      # sentence-transformers
    # every weight the graph computes with (the pooler's output is not used), once, in float32
    used = sum(p.numel() for name, p in torch_model.named_parameters() if ".pooler." not in name) * 4
    assert 0 <= stored - used <= 1024          # and a few scalar constants
    assert {w.dtype for w in weights} <= {np.dtype(np.float32), np.dtype(np.int64), np.dtype(bool)}
